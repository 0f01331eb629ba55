#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# cnuasgpu lifetimes raced (cnuasgpu-race, tests/lab/gpu): threads and forked
# children of one process race ALLOC, FREE, EXPORT_DMABUF, mmap of the GPU
# file and of the DMA-BUF, touches of those mappings, and close of DMA-BUFs
# and whole GPU files, on the GPU (BAR1) and on the host exporter, with
# panic_on_warn=1. Every failure is a clean errno, no live mapping faults,
# the console stays clean, and all device memory comes back at the end.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
N=${GPU_RACE_NODE:-0}
SECS=${GPU_RACE_SECONDS:-15}
gpu_ready "$N" cnuasgpu-race
problems0=$(console_problems)
restore() { lsh -t 30 "$N" 'sysctl -qw kernel.panic_on_warn=0' >/dev/null 2>&1 || true; }
trap restore EXIT
lsh -t 30 "$N" 'sysctl -qw kernel.panic_on_warn=1' || fail "node$N: cannot set panic_on_warn"
for dev in /dev/cnuasgpu0 /dev/cnuasgpu_host0; do
	out=$(lsh -t $((SECS + 180)) "$N" "cnuasgpu-race -s $SECS -t 4 -S 7 $dev" 2>&1) && rc=0 || rc=$?
	echo "$dev: $out"
	[ $rc != 77 ] || fail "$dev missing on node$N"
	[ $rc = 0 ] || fail "cnuasgpu-race on $dev: rc $rc"
done
restore
trap - EXIT
[ "$(console_problems)" = "$problems0" ] || fail "node$N: kernel problems on the console during the race"
lsh -t 30 "$N" true || fail "node$N does not answer"
echo "both exporters survived ${SECS}s of lifetime races each with panic_on_warn=1"
