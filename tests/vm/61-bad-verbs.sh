#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Bad verbs arguments on cnuas_0 (cnuas-badverbs, loopback QP pairs): caps
# over the limits, bad state transitions, wrong access flags, zero-length
# MR, bad rkeys, unaligned atomics, CQ resizes below the waiting CQEs, multicast
# attaches of RC QPs and unicast GIDs give
# the errno / completion status of a real HCA, good resizes keep the CQEs,
# the SRQ-limit and QP-access-error async events arrive, the responder
# QP's access flags and max_dest_rd_atomic 0 are enforced;
# the guest keeps working (a transfer to node 1 afterwards). Over native
# IB (by hand in an IB lab, CNUAS_VERBS_OVER_IB=1) the QPs address by LID and the
# multicast attaches take an MGID with a multicast LID, as ib_core wants
# on an IB port (a RoCE port takes ::ffff:239.x.y.z and LID 0).
# link-layers: eth
# (not ib: bad arguments, async events, CQ resize and memory windows are
# checked before or above the link layer; multicast by MLID is 66[ib])
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth_or_verbs_over_ib
# VERBS_DEV / VERBS_NODES="A B" run it on other devices/nodes (e.g. rxe0 on
# the rxe nodes, to check the test itself)
DEV=${VERBS_DEV:-cnuas_0}
read -r N0 N1 <<<"${VERBS_NODES:-0 1}"
for n in "$N0" "$N1"; do
	rdma_dev_up "$n" "$DEV"
done
out=$(lsh -t 300 "$N0" "cnuas-badverbs -d $DEV" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "cnuas-badverbs: $(echo "$out" | grep -c '^FAIL') case(s) failed (rc $rc)"
wait_ping "$N0" "$(ip_of "$N1")" 30 || fail "node0 cannot reach node1 afterwards"
rx=$(mktemp)
lsh -t 300 "$N1" "cnuas-xfer -d $DEV -s 4 -T 240" >"$rx" 2>&1 &
rpid=$!
sleep 1
lsh -t 300 "$N0" "cnuas-xfer -d $DEV -s 4 -T 240 $(ip_of "$N1")" || { cat "$rx"; fail "transfer after the bad verbs failed"; }
wait $rpid || { cat "$rx"; fail "receiver failed"; }
rm -f "$rx"
