#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A stateful hostile RC peer (cnuas-hostile). Node 0 is the victim: real
# verbs on cnuas_0, an RC QP per case connected to a QP number the attacker
# only pretends to have. The attacker, on the eth0 of a virtio/rxe node,
# crafts each request raw with the PSN the victim expects and checks the
# answer against the IBA: READ/atomic without the QP's right and an address
# range that wraps 64 bits -> NAK remote access error; WRITE payload longer
# or shorter than its RETH length -> NAK invalid request; zero-length WRITE
# with a bogus rkey -> ACK; a READ through an invalidated window, and a
# duplicate READ replayed after the window was invalidated -> no data, NAK
# remote access error; a duplicate READ with, right behind it, the SEND with
# Invalidate that releases its window (a retransmission that crossed its
# answer, as nvmet's after a migration) -> the replay goes out or ends,
# the SEND is ACKed, no NAK, the QP stays RTS; SEND with Invalidate of another PD's rkey -> NAK invalid request and a failed receive; WRITE with
# immediate and no receive -> RNR NAK, then ACK once a receive is posted.
# The victim reports its completion, async event, QP state and memory.
# Node 0 runs with panic_on_warn=1 meanwhile; its console stays clean and it
# still moves data afterwards.
# Over native IB (its IB cell, CNUAS_VERBS_OVER_IB=1) an IB lab has no
# Ethernet netdev to craft frames on: the attacker is tests/lab/ib-hostile.py
# on the host, one more channel adapter on the lab's IB switch (a port of
# its own that OpenSM sweeps and makes Active, as 59's ib-fuzz.py), with
# the same cases and expectations in native IB frames (LRH, BTH, ...,
# ICRC, VCRC) from its LID to node 0's; the victim's TCP side channel
# reaches it through `scripts/lab exec` and socat in the guest. The victim
# connects each QP to the attacker's LID with no GRH (it gives no GID) and
# must answer LRH only, with good ICRCs and VCRCs. The IBA's answers are
# the same on either link layer, so every expectation is.
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
need_eth_or_verbs_over_ib
# HOSTILE_NODE / VERBS_DEV / VERBS_NETDEV put the victim elsewhere, e.g. on
# Soft-RoCE (lab --nodes 1 --rxe-nodes 2; HOSTILE_NODE=1 VERBS_DEV=rxe0
# VERBS_NETDEV=eth0). Debian 12's rdma_rxe then differs from the IBA, which
# cnuas follows: READ/atomic without the QP's right get NAK invalid request
# instead of remote access error, a SEND with Invalidate of another PD's
# rkey is ACKed (its receive still fails), and no QP error is reported as
# an affiliated async event.
N=${HOSTILE_NODE:-0}
DEV=${VERBS_DEV:-cnuas_0}
NETDEV=${VERBS_NETDEV:-cnuas0}
src=
if [ "$LINK_LAYER" = ib ]; then
	[ "$N" -lt "$NODES" ] || skip "over IB the victim is a cnuas node"
	[ -S "$LAB_DIR/switch.sock" ] || skip "no IB switch socket $LAB_DIR/switch.sock"
else
	for n in $(seq "$NODES" $((NODES + VIRTIO_NODES + RXE_NODES - 1))); do
		[ "$n" != "$N" ] && { src=$n; break; }
	done
	[ -n "$src" ] || skip "needs a virtio or rxe node as the attacker"
fi
rdma_dev_up "$N" "$DEV"
lsh -t 30 "$N" "command -v cnuas-hostile >/dev/null" || skip "the guest image has no cnuas-hostile"
if [ "$LINK_LAYER" = ib ]; then
	lsh -t 30 "$N" "command -v socat >/dev/null" || skip "the guest image has no socat (the side channel's relay)"
	lid=$(lsh -t 30 "$N" "cat /sys/class/infiniband/$DEV/ports/1/lid") && lid=$((lid)) || fail "no LID of node$N"
else
	wait_ping "$src" "$(ip_of "$N")" 30 || fail "node$src cannot reach node$N"
	mac=$(lsh -t 30 "$N" "cat /sys/class/net/$NETDEV/address") || fail "no MAC of node$N"
fi
console=$LAB_DIR/node$N.console.log
before=$(wc -l <"$console")

restore() { lsh -t 30 "$N" 'sysctl -qw kernel.panic_on_warn=0' >/dev/null 2>&1 || true; }
trap restore EXIT
lsh -t 30 "$N" 'sysctl -qw kernel.panic_on_warn=1' || fail "node$N: cannot set panic_on_warn"

vout=$(mktemp)
lsh -t 240 "$N" "cnuas-hostile -d $DEV" >"$vout" 2>&1 &
vpid=$!
sleep 1
if [ "$LINK_LAYER" = ib ]; then
	# the side channel: the victim's TCP port, relayed by socat in the guest
	aout=$(timeout -k 5 240 /usr/bin/python3 "$VM_TESTS/../lab/ib-hostile.py" "$LAB_DIR/switch.sock" "$lid" -- \
		"$LAB" exec "$N" -- socat - TCP:127.0.0.1:18740,retry=300,interval=0.2 2>&1) && arc=0 || arc=$?
	who="the host, a port of its own on the IB switch, to LID $lid"
else
	aout=$(lsh -t 240 "$src" "cnuas-hostile -I eth0 -M $mac $(ip_of "$N")" 2>&1) && arc=0 || arc=$?
	who="node$src eth0"
fi
wait $vpid && vrc=0 || vrc=$?
echo "attacker ($who):"
echo "$aout"
echo "victim (node$N):"
cat "$vout"
rm -f "$vout"
restore
trap - EXIT

for c in read-noright atomic-noright write-long write-short write-zero addr-overflow \
	read-after-inv dup-read-revoked send-inv-foreign write-imm-norecv dup-read-inv; do
	echo "$aout" | grep -q "^CASE $c: PASS" || fail "case $c did not pass"
done
[ "$arc" = 0 ] || fail "the attacker ($who) exited $arc"
[ "$vrc" = 0 ] || fail "cnuas-hostile (victim) exited $vrc"
bad=$(tail -n +"$((before + 1))" "$console" | grep -E 'Oops|BUG:|WARNING:|Kernel panic|general protection fault' || true)
[ -z "$bad" ] || { echo "$bad" | head -20; fail "node$N: kernel problems under the hostile peer"; }
lsh -t 30 "$N" true || fail "node$N does not answer"
# and it still moves data over RDMA
if [ "$NODES" -ge 2 ] && [ "$N" -lt "$NODES" ]; then
	P=$((N == 0 ? 1 : 0))
	rx=$(mktemp)
	lsh -t 300 "$P" "modprobe -q cnuas_ib 2>/dev/null; modprobe -q ib_uverbs 2>/dev/null; cnuas-xfer -d $DEV -s 4 -T 300 -p 18741" >"$rx" 2>&1 &
	rpid=$!
	sleep 1
	tx=$(lsh -t 300 "$N" "cnuas-xfer -d $DEV -s 4 -T 300 -p 18741 $(ip_of "$P")" 2>&1) && trc=0 || trc=$?
	wait $rpid && rrc=0 || rrc=$?
	if [ "$trc" != 0 ] || [ "$rrc" != 0 ]; then
		echo "$tx"
		cat "$rx"
		rm -f "$rx"
		fail "node$N: a transfer after the attack failed"
	fi
	rm -f "$rx"
	echo "node$N: 4 MiB to node$P after the attack: ok"
fi
echo "node$N survived the hostile peer with panic_on_warn=1; console clean"
