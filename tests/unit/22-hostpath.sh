#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# The host path benchmark still works: scripts/bench-host for one pair,
# 64 B and 9 KiB frames, half a second a row, must move frames through
# the real switch between two real cnuas-vnic devices with none lost.
# Its figures are not judged here (make bench-host does that).
# timeout: 2400
# Exit: 0 pass, 77 skip (QEMU cannot be built here), anything else fail.

set -u
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

"$REPO/scripts/build-qemu" --print >"$LOG" 2>&1
case $? in
0) ;;
3)
    reason=$(grep -m1 'cannot build here' "$LOG" | sed 's/^build-qemu: //')
    echo "SKIP: no-qemu-build: ${reason:-QEMU cannot be built here}"
    exit 77 ;;
*)
    cat "$LOG"
    echo "FAIL: scripts/build-qemu exited with an error"
    exit 1 ;;
esac

BENCH_HOST_PAIRS=1 BENCH_HOST_SIZES=64,9216 BENCH_HOST_SECONDS=0.5 \
    "$REPO/scripts/bench-host" >"$LOG" 2>&1
rc=$?
rows=$(grep -c '^bench host pairs=1 size=[0-9]* fps=[1-9][0-9]* .* lost=0 bad=0$' "$LOG")
if [ "$rc" != 0 ] || [ "$rows" != 2 ]; then
    cat "$LOG"
    echo "FAIL: bench-host exited with $rc, $rows of 2 rows moved frames without loss"
    exit 1
fi
grep '^bench host pairs=' "$LOG"
echo "PASS: the host path moves frames losslessly through the switch"
