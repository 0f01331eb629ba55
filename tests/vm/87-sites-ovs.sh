#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Test 78's two sites with Open vSwitch on one of them, and a -netdev
# stream guest: scripts/lab up --sites 2 --site-bridge linux,ovs
# --virtio-netdev stream. Site 0 is a Linux bridge + VXLAN as in 78; site 1
# is OVS with its userspace datapath (datapath_type=netdev, no kernel
# module) and its own VXLAN, ovsdb-server and ovs-vswitchd running in the
# site's namespace from the lab's folder (the host's Open vSwitch, if any,
# is not touched); so the tunnel is OVS <-> Linux, both ways. The rxe
# node2 (site 0) reaches its switch over QEMU's -netdev stream (the
# switch's --stream port kind). Across the OVS-carried tunnel: ping and
# rping (48) between node0 and node1, Soft-RoCE
# interop (49) between node1 and node2 (stream port -> Linux bridge ->
# VXLAN -> OVS), and a cnuas-xfer with every byte checked. OVS's own
# counters (ovs-ofctl dump-ports on the VXLAN and TAP ports) and its
# datapath flows (tnl_push/tnl_pop) show OVS carried it. Boots its own lab
# in $LAB_DIR-sites-ovs while the group's guests are paused, as 78 does.
# CNUAS_SITES=0 opts out of the test.
# timeout: 1500
. "$(dirname "$0")/lib.sh"
[ "${CNUAS_SITES:-1}" != 0 ] || skip_because opt-out "CNUAS_SITES=0"
need_eth
[ "$(id -u)" = 0 ] || skip_because not-root "needs root (network namespaces, TAP interfaces)"
for c in ovs-vswitchd ovsdb-server ovsdb-tool ovs-vsctl ovs-ofctl ovs-appctl; do
	command -v "$c" >/dev/null || skip_because no-ovs "needs Open vSwitch's $c (Debian's openvswitch-switch; scripts/deps check installs it)"
done
[ -r /usr/share/openvswitch/vswitch.ovsschema ] || skip_because no-ovs "no /usr/share/openvswitch/vswitch.ovsschema"
MIB=${SITES_OVS_XFER_MIB:-16}
side_lab sites-ovs --nodes 2 --rxe-nodes 1 --sites 2 --site-bridge linux,ovs --virtio-netdev stream --mtu "$MTU"
echo "PASS lab of two sites (site 1 Open vSwitch): up in $SIDE_BOOT s (the group's ${#SIDE_PAUSED[@]} guests paused)"
OVS=$LAB_DIR/site1-ovs
ovs-appctl -t "$OVS/ovs-vswitchd.ctl" version | head -n1

# Site 0: node0 (seqpacket), node2 (stream) and its TAP; site 1: node1 and
# its TAP, which is a port of OVS's br-int next to the VXLAN port vx0.
k0=$(site_port_kinds 0) && k1=$(site_port_kinds 1) || fail "cannot read the switches"
[ "$k0" = "seqpacket stream tap" ] || fail "site 0 ports: $k0 (want seqpacket stream tap)"
[ "$k1" = "seqpacket tap" ] || fail "site 1 ports: $k1 (want seqpacket tap)"
dp=$(ovs-appctl -t "$OVS/ovs-vswitchd.ctl" dpif/show) || fail "ovs-vswitchd does not answer"
echo "$dp"
grep -q '^netdev@' <<<"$dp" || fail "OVS is not on its userspace (netdev) datapath"
grep -q 'vx0.*vxlan' <<<"$dp" || fail "OVS has no VXLAN port vx0"
echo "PASS ports: site 0 $k0; site 1 $k1 (OVS br-int: TAP + vx0)"

# port_stats PORT: "rx_pkts tx_pkts" of an OVS br-int port
port_stats() {
	ovs-ofctl dump-ports "unix:$OVS/br-int.mgmt" "$1" | tr -d '\n' |
		sed -n 's/.*rx pkts=\([0-9]*\),.*tx pkts=\([0-9]*\),.*/\1 \2/p'
}
tap1=$("$LAB" site 1 -- --json show | /usr/bin/python3 -c '
import json, sys
print([p["peer"] for p in json.load(sys.stdin)["ports"] if p["kind"] == "tap"][0])') ||
	fail "cannot find site 1's TAP"
read -r vrx0 vtx0 <<<"$(port_stats vx0)" && read -r trx0 ttx0 <<<"$(port_stats "$tap1")" &&
	[ -n "$vtx0" ] && [ -n "$ttx0" ] || fail "cannot read OVS port counters"

wait_ping 0 "$(ip_of 1)" 60 || fail "node0 cannot ping node1 across the OVS tunnel"
wait_ping 1 "$(ip_of 2)" 60 || fail "node1 cannot ping node2 (stream port) across the OVS tunnel"
echo "PASS ping across the tunnel (node0 -> node1, node1 -> node2)"

sub() { sites_sub "OVS tunnel" "$@"; }
# Not 46's fourteen pingpongs: the guests send the same frames as over
# 78's Linux tunnel; what OVS must carry is shown by rping, the rxe
# interop and the checked transfer below.
sub 48-rping CNUAS_PAIR="0 1" RPING_COUNT=20
sub 49-rxe-interop CNUAS_RXE_PAIR="1 2" RPING_COUNT=20

rx=$PR_DIR.xfer-rx.out
lsh -t 600 1 "cnuas-xfer -d cnuas_0 -s $MIB -c 64 -w 4 -T 500" >"$rx" 2>&1 &
rpid=$!
sleep 2
tx=$(lsh -t 600 0 "cnuas-xfer -d cnuas_0 -s $MIB -c 64 -w 4 -T 500 $(ip_of 1)" 2>&1)
txrc=$?
wait $rpid
rxrc=$?
flows=$(ovs-appctl -t "$OVS/ovs-vswitchd.ctl" dpctl/dump-flows) || fail "cannot dump OVS's datapath flows"
echo "$tx"
cat "$rx"
[ $txrc = 0 ] && [ $rxrc = 0 ] || fail "transfer across the OVS tunnel failed (sender rc $txrc, receiver rc $rxrc)"
echo "PASS $MIB MiB RC transfer node0 -> node1 across the OVS tunnel, every byte checked"

read -r vrx1 vtx1 <<<"$(port_stats vx0)" && read -r trx1 ttx1 <<<"$(port_stats "$tap1")" ||
	fail "cannot read OVS port counters"
# at most 9000 bytes of payload a packet: the transfer alone is this many
min=$((MIB * 1048576 / 9000))
echo "OVS br-int vx0: rx +$((vrx1 - vrx0)) tx +$((vtx1 - vtx0)) packets; $tap1: rx +$((trx1 - trx0)) tx +$((ttx1 - ttx0))"
[ $((vrx1 - vrx0)) -ge "$min" ] && [ $((ttx1 - ttx0)) -ge "$min" ] ||
	fail "OVS did not carry the transfer (vx0 rx +$((vrx1 - vrx0)), TAP tx +$((ttx1 - ttx0)), want >= $min each)"
[ $((vtx1 - vtx0)) -gt 0 ] && [ $((trx1 - trx0)) -gt 0 ] ||
	fail "nothing went from site 1 into the OVS tunnel (vx0 tx +$((vtx1 - vtx0)), TAP rx +$((trx1 - trx0)))"
grep -q 'tnl_push' <<<"$flows" && grep -q 'tnl_pop' <<<"$flows" ||
	{ echo "$flows"; fail "OVS's datapath has no tnl_push/tnl_pop flows (not its userspace tunnel?)"; }
echo "PASS OVS carried it: its datapath encapsulated (tnl_push) and decapsulated (tnl_pop) the tunnel"

st=$("$LAB" site 0 -- --json show | /usr/bin/python3 -c '
import json, sys
p = [p for p in json.load(sys.stdin)["ports"] if p["kind"] == "stream"][0]["counters"]
print(p["rx_frames"], p["tx_frames"], p["stream_bad_length"])') || fail "cannot read site 0's stream port"
read -r srx stx sbad <<<"$st"
[ "$srx" -gt 0 ] && [ "$stx" -gt 0 ] && [ "$sbad" = 0 ] ||
	fail "site 0's stream port: rx $srx tx $stx bad lengths $sbad"
echo "PASS -netdev stream port of node2: rx $srx tx $stx frames, no framing error"
