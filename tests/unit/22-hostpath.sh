#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# The host path benchmark still works: scripts/bench-host for one pair,
# 64 B and 9 KiB frames, half a second a row, must move frames through
# the real switch between two real cnuas-vnic devices with none lost.
# Its figures are not judged here (make bench-host does that).
# Then a device that gets a new connection while it cannot move frames
# (tests/hostpath/run-migrate, migrate.c): live migration into a QEMU
# started with -incoming (on rings: a migration on sockets is VM test
# 82's in every run), and a
# device whose driver comes up only after frames were sent to it (a
# hot-plugged device; with the RX poll page read before each ping-pong
# frame, and then a ping-pong with a -netdev dgram peer as a Soft-RoCE
# guest's, as in VM test 93): the new connection takes rings while its ring
# fills, and then frames must move both ways with none lost and a
# frame-at-a-time ping-pong must never wait for a kick that got lost.
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

# The sockets, then the shared-memory rings (x-shm-ring, --shm-ring): both
# devices of the pair must really run on rings.
for ring in 0 1; do
    BENCH_HOST_RING=$ring BENCH_HOST_PAIRS=1 BENCH_HOST_SIZES=64,9216 BENCH_HOST_SECONDS=0.5 \
        "$REPO/scripts/bench-host" >"$LOG" 2>&1
    rc=$?
    rows=$(grep -c '^bench host pairs=1 size=[0-9]* fps=[1-9][0-9]* .* lost=0 bad=0$' "$LOG")
    on=$(sed -n 's/^bench host ring_ports=//p' "$LOG")
    if [ "$rc" != 0 ] || [ "$rows" != 2 ] || [ "$on" != $((2 * ring)) ]; then
        cat "$LOG"
        echo "FAIL: bench-host (rings: $ring) exited with $rc, $rows of 2 rows moved frames" \
            "without loss, $on ports on rings"
        exit 1
    fi
    echo "rings: $ring"
    grep '^bench host pairs=' "$LOG"
done
for args in "--shm-ring --migrations 1" "--shm-ring --late-up --rx-poll --dgram-peer"; do
    # shellcheck disable=SC2086 # the words are the options
    "$REPO/tests/hostpath/run-migrate" $args --seconds 0.3 >"$LOG" 2>&1
    rc=$?
    if [ "$rc" != 0 ] || ! grep -q '^migrate: done, 0 checks failed$' "$LOG"; then
        cat "$LOG"
        echo "FAIL: tests/hostpath/run-migrate $args exited with $rc"
        exit 1
    fi
    echo "run-migrate $args:"
    grep -E '^migrate (result|.*pingpong)' "$LOG"
done
echo "PASS: the host path moves frames losslessly through the switch, on sockets and on rings," \
    "also after a migration and on a connection made before the device ran"
