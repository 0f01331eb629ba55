#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Killing the switch takes the carrier down on every cnuas guest; restarting
# it brings the carrier back and traffic flows again. On an IB lab (its
# IB cell) the ports go Down/Polling and ib0 loses its carrier; the
# new switch knows no LIDs, so OpenSM has to sweep it and program its LFT
# and MFT before the ports are Active again with their old LIDs and
# IPoIB (ARP by broadcast, then unicast) works.
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
trap '"$LAB" switch-start >/dev/null 2>&1' EXIT
if [ "$LINK_LAYER" = ib ]; then
	P=/sys/class/infiniband/cnuas_0/ports/1
	need_ib_sm ibnetdiscover
	lid0=$(lsh 0 "cat $P/lid") lid1=$(lsh 1 "cat $P/lid")
	down() { lsh -t 20 "$1" "grep -q DOWN $P/state && grep -q Polling $P/phys_state &&
		[ \"\$(cat /sys/class/net/ib0/carrier)\" = 0 ]"; }
	"$LAB" switch-kill || fail "switch-kill failed"
	for n in 0 1; do
		wait_for 15 down "$n" ||
			fail "node$n: $(lsh "$n" "cat $P/state $P/phys_state") 15 s after the switch died"
	done
	echo "both ports Down/Polling, ib0 without carrier"
	"$LAB" switch-start || fail "switch-start failed"
	trap - EXIT
	back() { lsh -t 20 "$1" "grep -q ACTIVE $P/state && [ \"\$(cat $P/lid)\" = $2 ] &&
		[ \"\$(cat /sys/class/net/ib0/carrier)\" = 1 ]"; }
	wait_for 120 back 0 "$lid0" || fail "node0: $(lsh 0 "cat $P/state $P/lid") after the restart, want ACTIVE, LID $lid0"
	wait_for 120 back 1 "$lid1" || fail "node1: $(lsh 1 "cat $P/state $P/lid") after the restart, want ACTIVE, LID $lid1"
	echo "both ports Active again, LIDs $lid0 and $lid1 kept"
	topo=$(lsh -t 60 0 ibnetdiscover) || fail "ibnetdiscover failed"
	[ "$(echo "$topo" | grep -c '^Switch')" = 1 ] && [ "$(echo "$topo" | grep -c '^Ca')" = 2 ] ||
		fail "ibnetdiscover after the restart: $topo"
	lsh 0 'ip neigh flush dev ib0' || fail "node0: cannot flush its neighbours"
	wait_ping 0 "$(ip_of 1)" 30 || fail "node0 cannot reach node1 over IPoIB after the switch restart"
	out=$(lsh -t 60 0 "ping -q -c 50 -i 0.02 -W 5 $(ip_of 1)") || true
	echo "$out" | grep -q ' 0% packet loss' || fail "lossy after switch restart: $out"
	echo "after restart: 1 switch and 2 HCAs swept; IPoIB $(echo "$out" | grep 'packet loss')"
	exit 0
fi
need_eth
carrier_is() { lsh -t 20 "$1" "[ \"\$(cat /sys/class/net/cnuas0/carrier 2>/dev/null)\" = $2 ]"; }

"$LAB" switch-kill || fail "switch-kill failed"
for n in 0 1; do
	wait_for 15 carrier_is "$n" 0 || fail "node$n: carrier still up 15 s after the switch died"
	lsh "$n" 'ip link show cnuas0' | grep -q NO-CARRIER || fail "node$n: ip link does not show NO-CARRIER"
done
echo "carrier down on both nodes"
"$LAB" switch-start || fail "switch-start failed"
trap - EXIT
for n in 0 1; do
	wait_for 20 carrier_is "$n" 1 || fail "node$n: carrier not back 20 s after the switch restarted"
done
echo "carrier up again on both nodes"
wait_ping 0 "$(ip_of 1)" 30 || fail "node0 cannot reach node1 after the switch restart"
out=$(lsh -t 60 0 "ping -q -c 50 -i 0.02 -W 5 $(ip_of 1)") || true
echo "$out" | grep -q ' 0% packet loss' || fail "lossy after switch restart: $out"
echo "after restart: $(echo "$out" | grep 'packet loss')"
if [ $((VIRTIO_NODES + ${RXE_NODES:-0})) -ge 1 ]; then
	wait_ping "$(virtio_node)" "$(ip_of 0)" 30 || fail "virtio node lost after switch restart"
fi
