#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Native InfiniBand on one guest: node0 of the vm group's IB lab (an IB
# cell; by hand on an Ethernet lab, a lab of one cnuas node of its own in
# $LAB_DIR-ib while the group's guests are paused, as test 77 does).
# OpenSM in the guest brings the port to ACTIVE with a LID through the
# SMA; then everything runs over that LID with server and client on the
# same guest, so every packet takes the loopback by DLID (no wire):
# ibv_rc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong with -c (the
# receiver checks the data; RC and UD also with a GRH), perftest ib_write_bw and ib_send_bw against
# localhost, UD multicast through an SA-joined group (looped back to the
# attached QP), and saquery (QP1 MADs to the SM at our own LID). The port's
# ICRC error counter must stay 0. A switch without --link-layer or an
# image without OpenSM fails: both are ours.
# timeout: 1500
# link-layers: ib
. "$(dirname "$0")/lib.sh"
if [ "$LINK_LAYER" != ib ]; then
	"$VSWITCHD" --help 2>&1 | grep -q -- '--link-layer' ||
		fail "cnuas-vswitchd has no --link-layer"
	side_lab ib --nodes 1 --link-layer ib --mtu "$MTU"
	echo "PASS IB lab of one: up in $SIDE_BOOT s (the group's ${#SIDE_PAUSED[@]} guests paused)"
fi
n=0
lsh -t 30 $n 'command -v opensm >/dev/null' || fail "the guest image has no opensm"
lsh -t 30 $n 'command -v saquery >/dev/null' || fail "the guest image has no saquery (infiniband-diags)"

out=$(lsh -t 300 $n '
	modprobe -a cnuas_ib ib_uverbs rdma_ucm ib_umad || exit 1
	p=/sys/class/infiniband/cnuas_0/ports/1
	[ "$(cat $p/link_layer)" = InfiniBand ] || { echo "link layer: $(cat $p/link_layer)"; exit 1; }
	pgrep -x opensm >/dev/null || opensm -B -f /tmp/opensm.log >/dev/null 2>&1
	i=0
	until grep -q ACTIVE $p/state && [ "$(cat $p/lid)" != 0x0 ]; do
		[ $i -lt 480 ] || { echo "port: $(cat $p/state), LID $(cat $p/lid)"; tail -n 20 /tmp/opensm.log; exit 1; }
		sleep 0.5; i=$((i + 1))
	done
	echo "$(cat $p/state) LID $(cat $p/lid) SM LID $(cat $p/sm_lid) after $((i / 2)) s"' 2>&1) ||
	{ echo "$out"; fail "the port did not become ACTIVE with a LID"; }
echo "PASS OpenSM: port $out"

icrc() { lsh -t 30 $n 'cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/rx_icrc_errors 2>/dev/null || echo 0'; }
icrc0=$(icrc)

# run NAME TIMEOUT SERVER CLIENT: both on node 0, the client once the
# server listens on its TCP port; both must succeed.
run() {
	local name=$1 t=$2 srv=$3 cli=$4 res
	res=$(lsh -t $((t + 30)) $n "
		$srv >/tmp/$name.srv 2>&1 & sp=\$!
		i=0; until ss -ltn | grep -q ':$port '; do
			[ \$i -lt 60 ] || break; sleep 0.5; i=\$((i + 1)); done
		timeout $t $cli >/tmp/$name.cli 2>&1; crc=\$?
		timeout 30 sh -c \"while kill -0 \$sp 2>/dev/null; do sleep 0.2; done\"
		wait \$sp; src=\$?
		echo \"rc \$crc \$src\"; tail -n 3 /tmp/$name.cli; tail -n 3 /tmp/$name.srv" 2>&1)
	if [ "$(echo "$res" | head -n 1)" = "rc 0 0" ]; then
		echo "PASS $name: $(echo "$res" | grep -m1 -E 'iters in|[0-9]+ +[0-9.]+ +[0-9.]+' || echo ok)"
	else
		echo "$res"
		bad+=("$name")
	fi
	port=$((port + 1))
}
bad=()
port=18600
run rc 120 "ibv_rc_pingpong -d cnuas_0 -p $port -c -n 20" "ibv_rc_pingpong -d cnuas_0 -p $port -c -n 20 localhost"
run rc-1M 240 "ibv_rc_pingpong -d cnuas_0 -p $port -c -n 2 -s 1048576" "ibv_rc_pingpong -d cnuas_0 -p $port -c -n 2 -s 1048576 localhost"
run rc-e 120 "ibv_rc_pingpong -d cnuas_0 -p $port -c -n 20 -e" "ibv_rc_pingpong -d cnuas_0 -p $port -c -n 20 -e localhost"
run ud 120 "ibv_ud_pingpong -d cnuas_0 -p $port -c -n 20" "ibv_ud_pingpong -d cnuas_0 -p $port -c -n 20 localhost"
run ud-2048 120 "ibv_ud_pingpong -d cnuas_0 -p $port -c -n 20 -s 2048" "ibv_ud_pingpong -d cnuas_0 -p $port -c -n 20 -s 2048 localhost"
# With a GRH (GID index 0: the port GID the SM's GIDPrefix makes)
run rc-grh 120 "ibv_rc_pingpong -d cnuas_0 -p $port -c -n 20 -g 0" "ibv_rc_pingpong -d cnuas_0 -p $port -c -n 20 -g 0 localhost"
run ud-grh 120 "ibv_ud_pingpong -d cnuas_0 -p $port -c -n 20 -g 0" "ibv_ud_pingpong -d cnuas_0 -p $port -c -n 20 -g 0 localhost"
run srq 120 "ibv_srq_pingpong -d cnuas_0 -p $port -c -n 4 -q 4" "ibv_srq_pingpong -d cnuas_0 -p $port -c -n 4 -q 4 localhost"
run write_bw 300 "ib_write_bw -d cnuas_0 -p $port -n 200 -F" "ib_write_bw -d cnuas_0 -p $port -n 200 -F localhost"
run send_bw 300 "ib_send_bw -d cnuas_0 -p $port -n 200 -F" "ib_send_bw -d cnuas_0 -p $port -n 200 -F localhost"

# UD multicast to a group both perftest ends join through the SA: the
# sender's packets loop back to the receiver's attached QP, as on an HCA.
# (On one port both ends are one SA member: the second leave fails, so
# only the receiver's result line and the delivered packets count.)
mc=$(lsh -t 240 $n '
	c=/sys/class/infiniband/cnuas_0/ports/1/hw_counters/mcast_rcvd
	m0=$(cat $c)
	ib_send_bw -d cnuas_0 -p 18690 -c UD -g -n 50 -F >/tmp/mc.srv 2>&1 & sp=$!
	i=0; until ss -ltn | grep -q ":18690 "; do [ $i -lt 60 ] || break; sleep 0.5; i=$((i + 1)); done
	timeout 120 ib_send_bw -d cnuas_0 -p 18690 -c UD -g -n 50 -F localhost >/tmp/mc.cli 2>&1
	wait $sp
	grep -qE "^ *4096 +50 " /tmp/mc.srv && src=0 || src=1
	echo "$src $(($(cat $c) - m0))"' 2>&1)
if [ "${mc%% *}" = 0 ] && [ "${mc##* }" -ge 50 ] 2>/dev/null; then
	echo "PASS multicast: ${mc##* } packets looped back to the attached QP"
else
	echo "multicast: receiver rc and packets: $mc"
	bad+=(multicast)
fi

sa=$(lsh -t 120 $n 'saquery -C cnuas_0 -P 1 2>&1; echo "rc $?"')
if echo "$sa" | grep -q '^rc 0' && echo "$sa" | grep -q 'NodeRecord'; then
	echo "PASS saquery: $(echo "$sa" | grep -c NodeRecord) NodeRecord(s) from the SM at our own LID"
else
	echo "$sa" | tail -n 10
	bad+=(saquery)
fi
icrc1=$(icrc)
[ "$icrc1" = "$icrc0" ] || bad+=("icrc-errors:$icrc0->$icrc1")
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} failed: ${bad[*]}"
echo "all IB loopback runs passed; ICRC errors $icrc1"
