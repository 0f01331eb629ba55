#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A guest's HCA hot removed and hot added on a native InfiniBand fabric
# (tests/run runs it last but 99 in its two-guest IB lab, with
# CNUAS_VERBS_OVER_IB=1; by hand: `scripts/lab up --link-layer ib --nodes 2`,
# then this script). OpenSM runs on node0; node1's cnuas-vnic goes:
#   QMP device_del nic0 on node1:
#     - node1's cnuas_0 and the PCI function are gone, QEMU let go of nic0;
#     - the switch saw its port go: that IB port is Down/Polling in
#       `cnuas-vsctl show`, its PMA LinkDownedCounter (perfquery of the
#       switch's port from node0) went up by one, and the switch sent the
#       SM a Trap 128 (its PortStateChange; OpenSM clears that bit again
#       as it sweeps, so the trap count is what stays);
#     - the SM swept it out: the switch's PortInfo for that port (smpquery
#       by the switch's LID) is Down, ibnetdiscover lists one HCA, and the
#       SA has no NodeRecord of node1's GUID any more (saquery);
#   QMP device_add of a new cnuas-vnic with the same MAC (so the same
#   GUIDs) into the same root port:
#     - cnuas_net and cnuas_ib bind again (the modules stay loaded), the
#       port goes Active with a LID, and it is node1's old LID: OpenSM
#       keeps a port GUID's LID in its guid2lid table after the port
#       leaves, and gives it back when that GUID comes again;
#     - node1 is on a switch port again (the lowest free one: the one it
#       left, unless a lower one was free), Active, with one more Trap 128;
#     - ibnetdiscover lists both HCAs, the SA has node1's NodeRecord
#       again, with its NodeDescription;
#     - traffic: IPoIB (ib0 addressed again) ping, then ibv_rc_pingpong
#       by LID, 100 x 4 KiB with the data checked (-c), node0 <-> node1;
#   no Oops, BUG or WARNING on a console.
# timeout: 600
# link-layers: ib
. "$(dirname "$0")/lib.sh"
# (by hand: scripts/lab up --link-layer ib --nodes 2)
need_ib_sm ibnetdiscover saquery
P=/sys/class/infiniband/cnuas_0/ports/1
lsh -t 60 0 'pgrep -x opensm >/dev/null || opensm -B -f /tmp/opensm.log >/dev/null 2>&1' ||
	fail "node0: opensm did not start"
active() { lsh -t 30 "$1" "grep -q ACTIVE $P/state && [ \"\$(cat $P/lid)\" != 0x0 ]"; }
for n in 0 1; do
	wait_for 120 active $n || fail "node$n: port not ACTIVE with a LID before the test"
done
lid0=$(lsh 0 "cat $P/lid") lid1=$(lsh 1 "cat $P/lid")
guid1=$(lsh 1 'cat /sys/class/infiniband/cnuas_0/node_guid' | tr -d ':')
[ ${#guid1} = 16 ] || fail "node1: node GUID '$guid1'"
before=$(console_problems)

# sw_port_field JSON IBPORT FIELD: a field of one IB port of the switch.
sw_port_field() {
	/usr/bin/python3 -c '
import json, sys
d = json.loads(sys.argv[1])
for p in d["ib"]["ports"]:
    if p["port"] == int(sys.argv[2]):
        print(p[sys.argv[3]])
        break
else:
    print("none")' "$1" "$2" "$3"
}

topo=$(lsh -t 120 0 ibnetdiscover) || fail "ibnetdiscover failed"
swlid=$(echo "$topo" | sed -n 's/^Switch.* base port 0 lid \([0-9]*\) .*/\1/p')
# The switch port node1 is cabled to: the line of the switch naming its GUID.
swport=$(echo "$topo" | sed -n "s/^\[\([0-9]*\)\][[:space:]]*\"H-$guid1\".*/\1/p")
[ -n "$swlid" ] && [ -n "$swport" ] || { echo "$topo"; fail "ibnetdiscover: no switch, or node1 ($guid1) on none of its ports"; }
s0=$(sw_json) || fail "cannot read the switch"
[ "$(sw_port_field "$s0" "$swport" state)" = active ] || fail "switch IB port $swport is not active: $s0"
traps0=$(sw_field "$s0" traps_sent)
field() { printf '%s\n' "$1" | sed -n "s/^[[:space:]]*$2[.:]*[[:space:]]*//p" | head -n 1; }
pq=$(lsh -t 60 0 "perfquery $swlid $swport") || fail "perfquery of the switch's port $swport failed"
down0=$(field "$pq" LinkDownedCounter)
echo "PASS before: node1 (GUID $guid1) LID $((lid1)) on switch (LID $swlid) port $swport, active; LinkDowned $down0, traps sent $traps0"

# ---- hot removal ----
"$LAB" qmp 1 '{"execute": "device_del", "arguments": {"id": "nic0"}}' >/dev/null || fail "device_del refused"
# pciehp waits 5 s after the attention button before it removes the device.
gone() { lsh -t 20 1 '[ ! -e /sys/class/infiniband/cnuas_0 ] && ! grep -l 0x10f0 /sys/bus/pci/devices/*/device >/dev/null 2>&1'; }
wait_for 60 gone || fail "node1: cnuas_0 or the PCI function still there 60 s after device_del"
qdev_gone() { ! "$LAB" qmp 1 '{"execute": "qom-get", "arguments": {"path": "/machine/peripheral/nic0", "property": "type"}}' >/dev/null 2>&1; }
wait_for 20 qdev_gone || fail "QEMU still has nic0 after the guest released it"
echo "PASS device_del: node1's cnuas_0 and PCI function gone"

sw_down() { [ "$(sw_port_field "$(sw_json)" "$swport" state)" = down ]; }
wait_for 10 sw_down || fail "switch IB port $swport not down after the unplug: $(sw_json)"
s1=$(sw_json)
[ "$(sw_port_field "$s1" "$swport" phys)" = polling ] || fail "switch IB port $swport: $s1"
traps1=$(sw_field "$s1" traps_sent)
[ "$traps1" -gt "$traps0" ] || fail "no Trap 128 to the SM for the port going down (traps sent $traps0 -> $traps1)"
pq=$(lsh -t 60 0 "perfquery $swlid $swport") || fail "perfquery of the switch's port $swport failed"
down1=$(field "$pq" LinkDownedCounter)
[ "$down1" = $((down0 + 1)) ] || fail "switch port $swport LinkDownedCounter $down0 -> $down1, want +1"
echo "PASS switch: IB port $swport down/polling (cnuas-vsctl), LinkDownedCounter $down0 -> $down1 (perfquery), traps sent $traps0 -> $traps1"

# The SM sweeps it out (OpenSM resweeps on the trap).
sa_has() { lsh -t 60 0 "saquery -N" | grep -q "node_guid\.*0x$guid1\$"; }
swept_out() { ! sa_has; }
wait_for 90 swept_out || fail "the SA still has node1's NodeRecord 90 s after the unplug"
pi=$(lsh -t 60 0 "smpquery portinfo $swlid $swport") || fail "smpquery portinfo $swlid $swport failed"
[ "$(field "$pi" LinkState)" = Down ] || { echo "$pi"; fail "the switch's PortInfo for port $swport is not Down"; }
topo=$(lsh -t 120 0 ibnetdiscover) || fail "ibnetdiscover failed"
if [ "$(echo "$topo" | grep -c '^Ca')" != 1 ] || echo "$topo" | grep -q "$guid1"; then
	echo "$topo"
	fail "ibnetdiscover still lists node1's HCA, or not one HCA"
fi
echo "PASS OpenSM swept node1 out: no NodeRecord in the SA, switch PortInfo port $swport Down, ibnetdiscover 1 HCA"

# ---- hot add: the same MAC (same GUIDs) into the same root port ----
mac=$(printf '52:54:00:c0:00:%02x' 2)
"$LAB" qmp 1 "{\"execute\": \"device_add\", \"arguments\": {\"driver\": \"cnuas-vnic\", \"id\": \"nic0\", \"bus\": \"rp1\", \"socket_path\": \"$LAB_DIR/switch.sock\", \"mac\": \"$mac\", \"link_layer\": \"ib\"}}" >/dev/null ||
	fail "device_add refused"
wait_for 60 active 1 || fail "node1: no ACTIVE port with a LID 60 s after device_add: $(lsh 1 "cat $P/state $P/lid; dmesg | tail -n 10")"
drv=$(lsh 1 'basename $(readlink /sys/class/infiniband/cnuas_0/device/driver)')
[ "$drv" = cnuas_net ] || fail "node1: the new function is bound to '$drv', not cnuas_net"
nlid1=$(lsh 1 "cat $P/lid")
[ "$(lsh 1 "cat $P/sm_lid")" = "$lid0" ] || fail "node1: SM LID is not node0's $lid0"
# OpenSM's guid2lid table still maps the GUID to its old LID.
[ "$nlid1" = "$lid1" ] || fail "node1 came back with LID $nlid1, not its old $lid1 (OpenSM's guid2lid)"
echo "PASS device_add: cnuas_net and cnuas_ib bound, port ACTIVE, LID $((nlid1)) as before (OpenSM's guid2lid), SM LID $((lid0))"

wait_for 60 sa_has || fail "the SA has no NodeRecord of node1 60 s after it came back"
nr=$(lsh -t 60 0 "saquery -N")
echo "$nr" | grep -q 'NodeDescription\.*node1 cnuas_0$' || { echo "$nr"; fail "SA: no NodeDescription 'node1 cnuas_0'"; }
topo=$(lsh -t 120 0 ibnetdiscover) || fail "ibnetdiscover failed"
nport=$(echo "$topo" | sed -n "s/^\[\([0-9]*\)\][[:space:]]*\"H-$guid1\".*\"node1 cnuas_0\" lid $((lid1)) .*/\1/p")
[ "$(echo "$topo" | grep -c '^Ca')" = 2 ] && [ -n "$nport" ] ||
	{ echo "$topo"; fail "ibnetdiscover: node1 not back on a switch port with LID $((lid1))"; }
[ "$nport" -le "$swport" ] || fail "node1 came back on switch port $nport, above the free port $swport"
s2=$(sw_json)
[ "$(sw_port_field "$s2" "$nport" state)" = active ] || { echo "$s2"; fail "switch IB port $nport not active"; }
traps2=$(sw_field "$s2" traps_sent)
[ "$traps2" -gt "$traps1" ] || fail "no Trap 128 for the port coming up (traps sent $traps1 -> $traps2)"
echo "PASS OpenSM swept node1 in: switch port $nport active, traps sent $traps1 -> $traps2, NodeRecord 'node1 cnuas_0', ibnetdiscover 2 HCAs"

# ---- traffic ----
ipoib_reconfigure 1 || fail "node1: cannot address the new ib0"
wait_ping 0 "$(ip_of 1)" 60 || fail "no IPoIB ping node0 -> node1 after the hot add"
echo "PASS IPoIB: node0 pings node1's new ib0"
rx0=$(lsh 1 "cat $P/counters/unicast_rcv_packets")
pair_run rc_pingpong 120 1 0 "$(listening 18601)" \
	"ibv_rc_pingpong -d cnuas_0 -p 18601 -c -n 100 -s 4096" \
	"ibv_rc_pingpong -d cnuas_0 -p 18601 -c -n 100 -s 4096 $(ip_of 1)"
pair_check "ibv_rc_pingpong node0 -> node1 after the hot add"
grep -q "remote address: LID $(printf '0x%04x' $((lid1)))" "$PR_CLI" || { pair_show; fail "the client did not talk to LID $((lid1))"; }
grep -q '100 iters' "$PR_CLI" && grep -q '100 iters' "$PR_SRV" || { pair_show; fail "not 100 iterations"; }
rx1=$(lsh 1 "cat $P/counters/unicast_rcv_packets")
[ $((rx1 - rx0)) -ge 100 ] || fail "node1's PMA unicast_rcv_packets +$((rx1 - rx0)), want >= 100"
echo "PASS ibv_rc_pingpong by LID: $(grep -m1 'iters in' "$PR_CLI"); node1 unicast_rcv_packets +$((rx1 - rx0))"

sleep 1
[ "$(console_problems)" = "$before" ] || {
	grep -E 'Oops|BUG:|WARNING:' "$LAB_DIR"/node*.console.log | tail -5
	fail "kernel problem on a console"
}
echo "PASS no kernel problem on the consoles"
