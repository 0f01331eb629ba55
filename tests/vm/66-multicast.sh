#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# RoCEv2 multicast with stock rdmacm-utils' mckey (RDMA CM joins, UD QPs
# attached to the group, ibv_attach_mcast underneath): cnuas node 0 sends
# to a group node 1 joined, and to one that a receiver on node 0 itself
# joined too (an HCA loops multicast back to its own QPs); with rxe nodes
# also cnuas -> rxe, rxe -> cnuas, and one send to two receivers at once
# (cnuas and rxe). Every receiver
# gets every message (the switch is lossless here) and a cnuas receiver's
# mcast_rcvd counter moves by at least as many. RDMA CM refuses IPv6
# multicast on RoCEv2 (ENOTSUPP, rxe alike), so mckey runs IPv4 groups and
# IPv6 is perftest's: ib_send_bw -c UD -g over the IPv6 GIDs (its own MGID
# ff01:0:0:2:c985::, attached with ibv_attach_mcast), node 0 -> node 1.
# Over native IB (its IB cell, CNUAS_VERBS_OVER_IB=1): the joins go to the SA
# (OpenSM answers with an MLID and programs the switch's MFT), mckey's
# groups are on the IPoIB addresses, perftest joins its MGID by umad and
# sends to the MLID; RDMA CM takes IPv6 groups on IB, so mckey runs one
# (ff0e::1:66) too; the switch's PortMulticastXmitPkts (its PMA) moves by
# at least N per remote receiver: it replicated by the MFT, never back
# out of the ingress port (the HCA loops a group back to its own QPs).
# timeout: 600
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth_or_verbs_over_ib
N=${MCAST_MSGS:-50}
for n in 0 1; do
	rdma_dev_up "$n" cnuas_0 rdma_ucm
done
lsh -t 30 0 "command -v mckey" >/dev/null || skip "no mckey in the guest image (rdmacm-utils)"

mcast_rcvd() {
	[ "$(node_kind "$1")" = cnuas ] || { echo 0; return; }
	lsh -t 30 "$1" 'cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/mcast_rcvd'
}

# On IB: the multicast packets the switch sent out of all its ports
# (perfquery of its PMA): it replicates by the MFT OpenSM programmed.
swlid=""
if [ "$LINK_LAYER" = ib ]; then
	# ibswitches passes its own -y (default 0) to ibnetdiscover, over
	# ibdiag.conf's key: it needs the lab's M_Key (scripts/lab.d/ib.sh).
	swlid=$(lsh -t 60 0 "ibswitches -y ${IB_MKEY:-0}" | sed -n 's/.* base port 0 lid \([0-9]*\) .*/\1/p')
	[ -n "$swlid" ] || fail "ibswitches found no switch"
fi
sw_mcast_xmit() {
	[ -n "$swlid" ] || { echo 0; return; }
	lsh -t 60 0 "perfquery -x -a $swlid" | sed -n 's/^PortMulticastXmitPkts:\.*//p'
}

# mc GROUP TX RX...: the receivers join GROUP, then TX sends N messages.
mc() {
	local grp=$1 tx=$2 r pids=() out=() before=() i ok=0 ipf=ip_of sw0 sw1 remote=0
	shift 2
	case $grp in *:*) ipf=ip6_of ;; esac
	sw0=$(sw_mcast_xmit) || fail "cannot read the switch's PMA counters"
	for r in "$@"; do
		before+=("$(mcast_rcvd "$r")") || fail "cannot read node$r's counters"
		out+=("$(mktemp)")
		lsh -t 120 "$r" "stdbuf -oL mckey -m $grp -b $($ipf "$r") -C $N" >"${out[-1]}" 2>&1 &
		pids+=($!)
	done
	for i in $(seq 300); do
		ok=0
		for r in "${out[@]}"; do grep -q 'receiving data transfers' "$r" && ok=$((ok + 1)); done
		[ $ok = $# ] && break
		sleep 0.2
	done
	[ $ok = $# ] || { cat "${out[@]}"; fail "$grp: the receivers did not join"; }
	lsh -t 120 "$tx" "mckey -m $grp -b $($ipf "$tx") -s -C $N" || fail "$grp: sender on node$tx failed"
	i=0
	for r in "$@"; do
		wait "${pids[i]}" || { cat "${out[i]}"; fail "$grp: receiver node$r failed"; }
		grep -q 'data transfers complete' "${out[i]}" || { cat "${out[i]}"; fail "$grp: node$r did not get all $N messages"; }
		a=$(mcast_rcvd "$r")
		if [ "$(node_kind "$r")" = cnuas ]; then
			[ $((a - before[i])) -ge "$N" ] || fail "$grp: node$r's mcast_rcvd moved by $((a - before[i])), want >= $N"
		fi
		echo "PASS $grp node$tx -> node$r ($(rdma_dev "$r")): $N messages, mcast_rcvd +$((a - before[i]))"
		rm -f "${out[i]}"
		[ "$r" = "$tx" ] || remote=$((remote + 1))
		i=$((i + 1))
	done
	if [ -n "$swlid" ]; then
		# The switch never sends a packet back out of its ingress port:
		# a receiver on the sender's node gets it by the HCA's loopback.
		sw1=$(sw_mcast_xmit) || fail "cannot read the switch's PMA counters"
		[ $((sw1 - sw0)) -ge $((remote * N)) ] ||
			fail "$grp: the switch sent $((sw1 - sw0)) multicast packets, want >= $((remote * N))"
		echo "PASS $grp: switch (LID $swlid) PortMulticastXmitPkts +$((sw1 - sw0)) for $remote remote receiver(s)"
	fi
}

mc 239.1.66.1 0 1

# The RoCE v2 GID index of node $1's IPv6 address (fd00:198:18::/64).
gid6() {
	lsh -t 30 "$1" 'cd /sys/class/infiniband/cnuas_0/ports/1 && for t in gid_attrs/types/*; do
		i=${t##*/}; [ "$(cat $t 2>/dev/null)" = "RoCE v2" ] || continue
		case $(cat gids/$i) in fd00:0198:0018:*) echo $i; exit 0 ;; esac
	done; exit 1'
}
# On IB the port's one GID (index 0): perftest joins its MGID through the
# SA (MCMemberRecord over umad), OpenSM gives it an MLID and programs the
# switch's MFT; the switch replicates by that MFT.
if [ "$LINK_LAYER" = ib ]; then
	for n in 0 1; do lsh -t 30 "$n" "modprobe -q ib_umad" || fail "node$n: no ib_umad"; done
	x0="" x1="" what="by MLID from the SA"
else
	g0=$(gid6 0) && g1=$(gid6 1) || fail "no IPv6 RoCE v2 GID on the cnuas nodes"
	x0="-x $g0" x1="-x $g1" what="(IPv6)"
fi
b=$(mcast_rcvd 1)
srv=$(mktemp)
# -F: a failed clock calibration (see 47) must not fail a run that completed.
lsh -t 120 1 "ib_send_bw -d cnuas_0 -F -c UD -g $x1 -p 18766 -n $N" >"$srv" 2>&1 &
spid=$!
# On a failure: the server's end, then the client's, then what both
# kernels and node 0's counters say.
cli=''
ud_failed() {
	echo "---- server (node1)"
	tail -n 12 "$srv"
	echo "---- client (node0)"
	echo "$cli" | grep -v -E '^ [A-Z].*: |^-+$' | tail -n 30
	for n in 0 1; do
		echo "---- node$n: dmesg"
		lsh -t 20 "$n" 'dmesg | tail -n 8'
	done
	echo "---- node0: cnuas_0 counters that are not 0"
	lsh -t 20 0 'cd /sys/class/infiniband/cnuas_0/ports/1/hw_counters && grep -H -v "^0$" * | tr "\n" " "'
	echo
	fail "$1"
}
# The client once the server takes perftest's TCP exchange (it joins the
# group before): under TCG a fixed sleep could come too early, and the
# client then failed to connect. One run: no second try.
wait_for 60 lsh -t 10 1 "ss -Hltn 'sport = :18766' | grep -q LISTEN" ||
	ud_failed "node1: ib_send_bw -c UD -g server not listening on TCP 18766 after 60 s"
cli=$(lsh -t 120 0 "ib_send_bw -d cnuas_0 -F -c UD -g $x0 -p 18766 -n $N $(ip_of 1)" 2>&1) ||
	ud_failed "ib_send_bw -c UD -g $what client failed"
wait $spid || ud_failed "ib_send_bw -c UD -g $what server failed"
grep -q 'MGID: 255:01' "$srv" || { cat "$srv"; fail "perftest did not use its IPv6 MGID"; }
rm -f "$srv"
a=$(mcast_rcvd 1)
[ $((a - b)) -ge "$N" ] || fail "perftest's group: node1's mcast_rcvd moved by $((a - b)), want >= $N"
echo "PASS ff01:0:0:2:c985:: $what node0 -> node1: ib_send_bw -c UD -g, mcast_rcvd +$((a - b))"
# RDMA CM refuses IPv6 multicast only on RoCE: over IB mckey joins an IPv6
# group too.
[ "$LINK_LAYER" = ib ] && mc ff0e::1:66 0 1

mc 239.1.66.5 0 0 1
if [ "$RXE_NODES" -ge 1 ]; then
	x=$(first_rxe_node)
	lsh -t 30 "$x" "modprobe -q rdma_ucm" || true
	mc 239.1.66.2 0 "$x"
	mc 239.1.66.3 "$x" 1
	mc 239.1.66.4 0 1 "$x"
else
	note "no rxe node: cnuas <-> rxe multicast not run"
fi
