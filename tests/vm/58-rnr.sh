#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# RNR and a vanished peer between cnuas nodes 0 and 1 (cnuas-rnr): a
# receiver with no buffers ends the sender's SEND in RNR_RETRY_EXC_ERR
# (rnr_retry 2), a destroyed peer QP ends it in RETRY_EXC_ERR (timeout 10,
# retry_cnt 2), and a receiver that destroys its QP right after taking a
# SEND still ACKs it (the sender's SEND succeeds, and on cnuas without a
# retransmission: completer_retry_err stays), also when its own RDMA
# WRITEs fill its TX ring as it goes (busyack: the ACK is not lost
# behind them, its hw counter ack_release_lost stays); fresh QPs work
# afterwards, the guests and the switch too. Over native IB (by hand in an IB lab,
# CNUAS_VERBS_OVER_IB=1) the same, the QPs addressed by LID.
# link-layers: eth
# (not ib: RNR, retry and the last ACK are the transport's timers and
# NAKs, the same code on either link layer (the IB headers are
# exercised by every IB cell))
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth_or_verbs_over_ib
# VERBS_DEV / VERBS_NODES="A B" run it on other devices/nodes (e.g. rxe0 on
# the rxe nodes, to check the test itself)
DEV=${VERBS_DEV:-cnuas_0}
read -r N0 N1 <<<"${VERBS_NODES:-0 1}"
for n in $N0 $N1; do
	rdma_dev_up "$n" "$DEV"
done
wait_ping "$N0" "$(ip_of "$N1")" 30 || fail "node0 cannot reach node1"
# hwc NODE NAME: a hw counter of the device, if it has it.
hwc() {
	lsh -t 30 "$1" "cat /sys/class/infiniband/$DEV/ports/1/hw_counters/$2 2>/dev/null"
}
# retries NODE: the device's retransmission counter.
retries() { hwc "$1" completer_retry_err; }
for mode in rnr vanish lastack busyack; do
	r0=$(retries "$N0")
	l0=$(hwc "$N1" ack_release_lost)
	srv=$(mktemp)
	lsh -t 200 "$N1" "cnuas-rnr -d $DEV -M $mode -T 120" >"$srv" 2>&1 &
	spid=$!
	sleep 1
	out=$(lsh -t 200 "$N0" "cnuas-rnr -d $DEV -M $mode -T 120 $(ip_of "$N1")" 2>&1)
	crc=$?
	wait $spid
	src=$?
	echo "$out"
	sed 's/^/server: /' "$srv"
	rm -f "$srv"
	[ $crc = 0 ] && [ $src = 0 ] || fail "$mode: client rc $crc, server rc $src"
	echo "$out" | grep -q "PASS $mode" || fail "$mode: no PASS line"
	# lastack: the ACK came with the receiver's QP, not for a retransmission.
	if [ "$mode" = lastack ] && [ -n "$r0" ]; then
		r1=$(retries "$N0")
		[ "$r1" = "$r0" ] || fail "lastack: the sender retransmitted $((r1 - r0)) time(s): the receiver's ACK did not leave with its QP"
	fi
	if [ "$mode" = busyack ] && [ -n "$l0" ]; then
		l1=$(hwc "$N1" ack_release_lost)
		[ "$l1" = "$l0" ] || fail "busyack: the receiver lost $((l1 - l0)) owed ACK(s) as its QP went"
	fi
done
wait_ping "$N0" "$(ip_of "$N1")" 30 || fail "node0 cannot reach node1 afterwards"
"$LAB" switch -- show >/dev/null || fail "the switch does not answer"
