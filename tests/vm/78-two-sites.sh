#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# One fabric on two sites, joined the way docs/multi-host.md joins two
# hosts: each site's switch has a TAP port in a Linux bridge with a VXLAN
# port, in the site's own network namespace, the namespaces sharing an
# underlay (scripts/lab up --sites 2). This test boots its own lab in
# $LAB_DIR-sites (--nodes 2 --rxe-nodes 1 --sites 2: node0 and the rxe
# node2 on site 0, node1 on site 1) while the group's guests are paused,
# as test 77 does. Across the tunnel: ping, ibv_rc_pingpong (46) and rping
# over RDMA CM (48) between node0 and node1, Soft-RoCE interop (49) between
# node1 and node2, then a cnuas-xfer (every byte checked) while the
# underlay drops 2% of the tunnel's packets (nftables in the WAN
# namespace; the host kernel has no netem) and site 1's switch reorders 2%
# of what leaves the tunnel (set-fault on its TAP port): RC repairs it,
# nft counts the drops and cnuas_0's sequence-error counters move. The
# TAP ports of both switches must have carried the traffic.
# CNUAS_SITES=0 opts out of the test.
# timeout: 1800
. "$(dirname "$0")/lib.sh"
[ "${CNUAS_SITES:-1}" != 0 ] || skip_because opt-out "CNUAS_SITES=0"
need_eth
[ "$(id -u)" = 0 ] || skip_because not-root "needs root (network namespaces, TAP interfaces)"
command -v nft >/dev/null || skip_because no-nftables "needs nft (nftables) for the lossy underlay"
MIB=${SITES_XFER_MIB:-64}
side_lab sites --nodes 2 --rxe-nodes 1 --sites 2 --mtu "$MTU"
echo "PASS lab of two sites: up in $SIDE_BOOT s (the group's ${#SIDE_PAUSED[@]} guests paused)"

# Where each port is: site 0 has node0, node2 (dgram) and its TAP; site 1
# node1 and its TAP.
k0=$(site_port_kinds 0) && k1=$(site_port_kinds 1) || fail "cannot read the switches"
[ "$k0" = "dgram seqpacket tap" ] || fail "site 0 ports: $k0 (want dgram seqpacket tap)"
[ "$k1" = "seqpacket tap" ] || fail "site 1 ports: $k1 (want seqpacket tap)"
echo "PASS ports: site 0 $k0; site 1 $k1"

wait_ping 0 "$(ip_of 1)" 60 || fail "node0 cannot ping node1 across the tunnel"
wait_ping 1 "$(ip_of 2)" 60 || fail "node1 cannot ping node2 across the tunnel"
echo "PASS ping across the tunnel (node0 -> node1, node1 -> node2)"

# The stock-tool tests, on this lab's nodes.
sub() { sites_sub tunnel "$@"; }
sub 46-verbs-pingpong CNUAS_PAIR="0 1"
sub 48-rping CNUAS_PAIR="0 1" RPING_COUNT=20
sub 49-rxe-interop CNUAS_RXE_PAIR="1 2" RPING_COUNT=20

# A transfer over a lossy underlay.
seq_errs() { # seq_errs NODE: sequence errors seen by either side of a QP
	lsh -t 30 "$1" 'c=/sys/class/infiniband/cnuas_0/ports/1/hw_counters
		echo $(($(cat $c/rcvd_seq_err) + $(cat $c/out_of_seq_request)))'
}
s0=$(seq_errs 0) && s1=$(seq_errs 1) || fail "cannot read cnuas_0's hw counters"
"$LAB" wan -- nft add table bridge cnuaswan &&
	"$LAB" wan -- nft add chain bridge cnuaswan lossy '{ type filter hook forward priority 0; policy accept; }' &&
	"$LAB" wan -- nft add rule bridge cnuaswan lossy udp dport 4789 numgen random mod 1000 lt 20 counter drop ||
	fail "cannot set up the lossy underlay"
# and site 1's switch reorders 2% of what comes out of the tunnel
tap1=$("$LAB" site 1 -- --json show | /usr/bin/python3 -c '
import json, sys
print([p["id"] for p in json.load(sys.stdin)["ports"] if p["kind"] == "tap"][0])') ||
	fail "cannot find site 1's TAP port"
"$LAB" site 1 -- set-fault --port "$tap1" reorder=2 seed=78 >/dev/null || fail "set-fault refused"
rx=$PR_DIR.xfer-rx.out
lsh -t 900 1 "cnuas-xfer -d cnuas_0 -s $MIB -c 64 -w 4 -T 800" >"$rx" 2>&1 &
rpid=$!
sleep 2
tx=$(lsh -t 900 0 "cnuas-xfer -d cnuas_0 -s $MIB -c 64 -w 4 -T 800 $(ip_of 1)" 2>&1)
txrc=$?
wait $rpid
rxrc=$?
rules=$("$LAB" wan -- nft list ruleset) || fail "cannot read the underlay's rules"
drops=$(sed -n 's/.*counter packets \([0-9]*\).*/\1/p' <<<"$rules")
"$LAB" wan -- nft flush ruleset || fail "cannot clear the lossy underlay"
reordered=$("$LAB" site 1 -- counters "$tap1" | awk '$1 == "fault_reorder" {print $2}')
"$LAB" site 1 -- set-fault --port "$tap1" clear >/dev/null || fail "cannot clear site 1's faults"
echo "$tx"
cat "$rx"
[ $txrc = 0 ] && [ $rxrc = 0 ] || fail "transfer over the lossy underlay failed (sender rc $txrc, receiver rc $rxrc)"
[ "${drops:-0}" -gt 0 ] || fail "the underlay dropped nothing (nft counter '${drops:-}')"
[ "${reordered:-0}" -gt 0 ] || fail "site 1 reordered nothing ('${reordered:-}')"
a0=$(seq_errs 0) && a1=$(seq_errs 1) || fail "cannot read cnuas_0's hw counters"
[ $((a0 - s0 + a1 - s1)) -gt 0 ] || fail "$drops tunnel packets dropped, but no sequence error counted"
echo "PASS $MIB MiB RC transfer, every byte checked, while the underlay dropped $drops tunnel packets and site 1 reordered $reordered (sequence errors: node0 $((a0 - s0)), node1 $((a1 - s1)))"

taps() { "$LAB" site "$1" -- --json show | /usr/bin/python3 -c '
import json, sys
p = [p for p in json.load(sys.stdin)["ports"] if p["kind"] == "tap"][0]["counters"]
print(p["rx_frames"], p["tx_frames"], p["drop_link_down"])'; }
read -r r0 x0 d0 <<<"$(taps 0)" && read -r r1 x1 d1 <<<"$(taps 1)" || fail "cannot read the TAP ports"
[ "$r0" -gt 0 ] && [ "$x0" -gt 0 ] && [ "$r1" -gt 0 ] && [ "$x1" -gt 0 ] ||
	fail "a TAP port carried nothing (site 0 rx $r0 tx $x0, site 1 rx $r1 tx $x1)"
[ "$d0" = 0 ] && [ "$d1" = 0 ] || fail "TAP interfaces refused frames (site 0 $d0, site 1 $d1)"
echo "PASS TAP ports: site 0 rx $r0 tx $x0 frames, site 1 rx $r1 tx $x1, none refused"
