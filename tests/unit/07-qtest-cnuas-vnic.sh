#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# Run the cnuas-vnic QEMU qtest: scripts/build-qemu --check applies the
# patch series to a pristine tree, builds (or reuses) the patched QEMU and
# runs tests/qtest/cnuas-vnic-test against it.
# timeout: 2400
# Exit: 0 pass, 77 skip (the build is impossible here), anything else fail.

set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT

"$REPO/scripts/build-qemu" --check >"$LOG" 2>&1
rc=$?
case $rc in
0)
    grep -E '^(ok|not ok) ' "$LOG"
    echo "PASS: cnuas-vnic qtest"
    exit 0 ;;
3)
    reason=$(grep -m1 'cannot build here' "$LOG" | sed 's/^build-qemu: //')
    echo "SKIP: no-qemu-build: ${reason:-QEMU cannot be built here}"
    exit 77 ;;
*)
    cat "$LOG"
    echo "FAIL: scripts/build-qemu --check exited with $rc"
    exit 1 ;;
esac
