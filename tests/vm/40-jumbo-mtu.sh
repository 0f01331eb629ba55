#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# MTU 9000 on both ends: an unfragmented 8972-byte ping and a TCP transfer
# work.  The lab's MTU ($MTU) is restored afterwards.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
restore() { for n in 0 1; do lsh -t 30 "$n" "ip link set cnuas0 mtu ${MTU:-1500}" >/dev/null 2>&1; done; }
trap restore EXIT
for n in 0 1; do
	lsh "$n" 'ip link set cnuas0 mtu 9000' || fail "node$n: cannot set MTU 9000"
	m=$(lsh "$n" 'cat /sys/class/net/cnuas0/mtu')
	[ "$m" = 9000 ] || fail "node$n: MTU is $m after setting 9000"
done
wait_ping 0 "$(ip_of 1)" 30 || fail "node0 cannot reach node1 at MTU 9000"
out=$(lsh -t 60 0 "ping -c 5 -i 0.2 -W 5 -M do -s 8972 $(ip_of 1)") || fail "8972-byte ping failed: $out"
echo "$out" | grep -q ' 0% packet loss' || fail "8972-byte ping lost packets: $out"
echo "$out" | grep -q '^8980 bytes from' || fail "no 8980-byte replies: $out"
echo "jumbo ping: $(echo "$out" | grep 'packet loss')"
r=$(tcp_transfer 0 1 16 5002) || { echo "$r"; exit 1; }
echo "jumbo TCP node0 -> node1: $r, sha256 match"
