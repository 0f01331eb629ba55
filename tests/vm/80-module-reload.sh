#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# rmmod cnuas_net; modprobe cnuas_net on node 0: cnuas0 comes back and
# ping works again. On an IB lab (its IB cell) node 1, as node0
# runs OpenSM: both modules go and come back, the subnet manager makes the
# port Active again with the LID it had (OpenSM's guid2lid), IPoIB's ib0
# comes back and pings node0. As with an HCA, the reload bounces the link
# the switch sees (an IB vNIC is linked only while a driver runs it): the
# switch traps the port's going and coming to OpenSM, which sweeps node1
# out of the SA and back in by itself.
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth_or_verbs_over_ib
if [ "$LINK_LAYER" = ib ]; then
	P=/sys/class/infiniband/cnuas_0/ports/1
	need_ib_sm saquery
	lid=$(lsh 1 "cat $P/lid")
	guid1=$(lsh 1 'cat /sys/class/infiniband/cnuas_0/node_guid' | tr -d ':')
	sa_has() { lsh -t 60 0 "saquery -N" | grep -q "node_guid\.*0x$guid1\$"; }
	sa_has || fail "the SA has no NodeRecord of node1 ($guid1) before the reload"
	traps0=$(sw_field "$(sw_json)" traps_sent) || fail "cannot read the switch"
	trap 'lsh -t 60 1 "modprobe cnuas_net; modprobe cnuas_ib" >/dev/null 2>&1' EXIT
	lsh -t 60 1 'rmmod cnuas_ib && rmmod cnuas_net' || fail "node1: rmmod cnuas_ib cnuas_net failed"
	lsh 1 '! grep -q "^cnuas_\(net\|ib\) " /proc/modules && [ ! -e /sys/class/infiniband/cnuas_0 ] && [ ! -e /sys/class/net/ib0 ]' ||
		fail "node1: cnuas_0 or ib0 still there"
	swept_out() { ! sa_has; }
	wait_for 90 swept_out || fail "the SA still has node1's NodeRecord 90 s after rmmod"
	traps1=$(sw_field "$(sw_json)" traps_sent)
	[ "$traps1" -gt "$traps0" ] || fail "no Trap 128 from the switch for the link going down (traps sent $traps0 -> $traps1)"
	echo "rmmod: the switch's port went down (traps sent $traps0 -> $traps1), OpenSM swept node1 out of the SA"
	lsh -t 60 1 'modprobe cnuas_net && modprobe cnuas_ib' || fail "node1: modprobe failed"
	ib_port_back 1 "$lid" "after the reload"
	trap - EXIT
	ipoib_reconfigure 1 || fail "node1: cannot address ib0"
	wait_ping 1 "$(ip_of 0)" 60 || fail "node1 cannot reach node0 over IPoIB after the reload"
	out=$(lsh -t 60 1 "ping -q -c 50 -i 0.02 -W 5 $(ip_of 0)") || true
	echo "$out" | grep -q ' 0% packet loss' || fail "lossy after reload: $out"
	sa_has || fail "the SA has no NodeRecord of node1 after the reload"
	echo "after reload: port ACTIVE with LID $lid again (no SIGHUP), NodeRecord back, IPoIB $(echo "$out" | grep 'packet loss')"
	exit 0
fi
trap 'lsh -t 30 0 "modprobe cnuas_net" >/dev/null 2>&1; cnuas_reconfigure 0 >/dev/null 2>&1' EXIT
# A cnuas_ib on top (if loaded) has to go first and comes back after.
had_ib=$(lsh 0 'grep -q "^cnuas_ib " /proc/modules && echo 1 || echo 0')
[ "$had_ib" = 1 ] && { lsh 0 'rmmod cnuas_ib' || fail "rmmod cnuas_ib failed"; }
lsh -t 60 0 'rmmod cnuas_net' || fail "rmmod cnuas_net failed"
lsh 0 '! grep -q "^cnuas_net " /proc/modules && [ ! -e /sys/class/net/cnuas0 ]' || fail "cnuas_net still there"
lsh -t 60 0 'modprobe cnuas_net' || fail "modprobe cnuas_net failed"
[ "$had_ib" = 1 ] && { lsh 0 'modprobe cnuas_ib' || fail "modprobe cnuas_ib failed"; }
cnuas_reconfigure 0 || fail "cnuas0 did not come back"
trap - EXIT
wait_ping 0 "$(ip_of 1)" 30 || fail "node0 cannot reach node1 after reload"
out=$(lsh -t 60 0 "ping -q -c 50 -i 0.02 -W 5 $(ip_of 1)") || true
echo "$out" | grep -q ' 0% packet loss' || fail "lossy after reload: $out"
echo "after reload: $(echo "$out" | grep 'packet loss')"
