#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# cnuasgpu through its driver in a `scripts/lab up --gpu` lab, with
# cnuasgpu-test (tests/lab/gpu):
#  1. node 0: allocation, mmap, every bad-argument case of the export
#     ioctl, EBUSY on free with an export, orphans reclaimed (sysfs);
#  2. libcnuaspeermem's device smoke test (its `make check-device`) must
#     pass, not skip: register GPU memory with cnuas_0, EBUSY until dereg;
#  3. CnuasLink: node 0's GPU sends frames of every size up to 64 KiB to
#     node 1's (the lab links node 2k with 2k+1), node 1 receives and
#     compares each, then finds the link empty; a send from an unreadable
#     buffer and a receive into an unwritable one fail with EFAULT and lose
#     no frame, and a receive into pages not yet faulted in works.
# GPU_LINK_FRAMES sets the frame count (default 200).
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
FRAMES=${GPU_LINK_FRAMES:-200}

gpu_ready 0 cnuasgpu-test
gpu_ready 1 cnuasgpu-test
problems0=$(console_problems)

note "allocation and export API on node 0"
lsh -t 300 0 'cnuasgpu-test api 0' || fail "cnuasgpu-test api failed on node 0"

note "libcnuaspeermem's device smoke test (make check-device) on node 0"
rdma_ready 0
out=$(lsh -t 120 0 'cnuaspeermem-test-device' 2>&1)
rc=$?
echo "$out"
# Both devices are there: a skip is a failure here.
[ $rc = 0 ] || fail "cnuaspeermem-test-device exited $rc"

note "CnuasLink: $FRAMES frames node 0 -> node 1"
recv_log=$(mktemp)
trap 'rm -f "$recv_log"' EXIT
lsh -t 600 1 "cnuasgpu-test link-recv 0 $FRAMES" >"$recv_log" 2>&1 &
rpid=$!
lsh -t 600 0 "cnuasgpu-test link-send 0 $FRAMES" 2>&1
src=$?
wait $rpid
rrc=$?
sed 's/^/recv: /' "$recv_log"
[ $src = 0 ] || fail "link-send exited $src"
[ $rrc = 0 ] || fail "link-recv exited $rrc"

problems=$(console_problems)
[ "$problems" = "$problems0" ] || fail "new kernel problems on the consoles: $problems"
echo "cnuasgpu API and $FRAMES CnuasLink frames passed"
