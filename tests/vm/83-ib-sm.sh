#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Native InfiniBand port management: a guest whose cnuas-vnic runs the IB
# link layer (its own lab in $LAB_DIR-ibsm, `scripts/lab up --nodes 1
# --link-layer ib`, while the group's guests are paused, as tests 77 and
# 78 do) is configured by Debian's own OpenSM running on its port, and
# infiniband-diags read back what cnuas_ib's SMA and PMA answer. OpenSM
# sweeps the port with directed-route SMPs of hop count 0, which ib_core
# hands to the driver's process_mad without the wire; OpenSM 3.3.23 arms
# a CA port only when its neighbour answers at hop 1, so the switch's own
# SMA (cnuas-vswitchd --link-layer ib) is part of what this test needs:
#   - before the SM: port Initializing/LinkUp, LID 0; NodeInfo is a CA
#     with one port, Node/Port/SysImage GUID the EUI-64 of the MAC;
#   - OpenSM assigns a LID and moves the port Init -> Armed -> Active:
#     ibstat and ibv_devinfo show it Active with that LID, the SM LID is
#     the port's own, PortInfo has IsSM (issm held open), 4X width,
#     NeighborMTU 4096 (OpenSM's IPoIB group needs 2048), SM LID;
#   - P_Key table entry 0 is 0xffff, GUIDInfo entry 0 the port GUID,
#     NodeDescription "<host> cnuas_0" as in sysfs node_desc;
#   - sminfo (SMInfo through the driver to OpenSM) finds the master SM;
#   - the PMA: ib_core's sysfs counters (PortCounters through
#     process_mad) count OpenSM's SMPs beyond hop 0; perfquery and its
#     Set (-R) when QP1 reaches the own LID (else noted, not failed);
#   - OpenSM restarted keeps the LID; without OpenSM's issm the port loses
#     IsSM.
# Fails when cnuas-vswitchd has no InfiniBand mode (--link-layer ib).
# timeout: 1200
. "$(dirname "$0")/lib.sh"
# The switch must run in InfiniBand mode: still running after 3 s.
probe=$(mktemp -d)
timeout -k 1 3 "$VSWITCHD" --socket "$probe/s" --ctl "$probe/c" --foreground --link-layer ib >"$probe/log" 2>&1
rc=$?
why=$(head -n 1 "$probe/log")
rm -f "$probe/s" "$probe/c" "$probe/log" && rmdir "$probe"
[ "$rc" = 124 ] || fail "cnuas-vswitchd --link-layer ib exited within 3 s: ${why:-exit $rc}"
# The lab without its OpenSM: this test starts its own, after "before the SM".
CNUAS_LAB_SM=0 side_lab ibsm --nodes 1 --link-layer ib --mtu "$MTU"
echo "PASS IB lab: up in $SIDE_BOOT s (the group's ${#SIDE_PAUSED[@]} guests paused)"

IBSYS=/sys/class/infiniband/cnuas_0
lsh -t 120 0 'modprobe cnuas_ib && modprobe ib_umad && modprobe ib_uverbs' ||
	fail "cannot load cnuas_ib, ib_umad, ib_uverbs"
wait_for 30 lsh -t 10 0 "[ -e $IBSYS/ports/1/state ]" || fail "no $IBSYS"
ll=$(lsh 0 "cat $IBSYS/ports/1/link_layer")
[ "$ll" = InfiniBand ] || fail "link layer $ll, want InfiniBand"

# The EUI-64 of node 0's MAC 52:54:00:c0:00:01 (scripts/lab.d/up.sh).
GUID=0x505400fffec00001

# field OUTPUT NAME: the value after "NAME:" or "NAME....." in diags output.
field() { printf '%s\n' "$1" | sed -n "s/^[[:space:]]*$2[.:]*[[:space:]]*//p" | head -n 1; }

st=$(lx 0 ibstat cnuas_0 1) || fail "ibstat failed"
[ "$(field "$st" State)" = Initializing ] || fail "before the SM: $st"
[ "$(field "$st" 'Physical state')" = LinkUp ] || fail "before the SM: $st"
[ "$(field "$st" 'Base lid')" = 0 ] || fail "before the SM, LID not 0: $st"
echo "PASS before the SM: Initializing, LinkUp, LID 0"

ni=$(lx 0 smpquery -C cnuas_0 -P 1 -D nodeinfo 0) || fail "smpquery nodeinfo failed"
[ "$(field "$ni" NodeType)" = "Channel Adapter" ] || fail "NodeType: $ni"
[ "$(field "$ni" NumPorts)" = 1 ] || fail "NumPorts: $ni"
[ "$(field "$ni" LocalPort)" = 1 ] || fail "LocalPort: $ni"
for g in SystemGuid Guid PortGuid; do
	[ "$(field "$ni" "$g")" = "$GUID" ] || fail "NodeInfo $g is not $GUID (EUI-64 of the MAC): $ni"
done
[ "$(field "$ni" PartCap)" = 32 ] || fail "PartitionCap: $ni"
[ "$(field "$ni" VendorId)" = 0x001af4 ] || fail "VendorId: $ni"
[ "$(field "$ni" DevId)" = 0x10f0 ] || fail "DeviceId: $ni"
echo "PASS NodeInfo: CA, 1 port, GUIDs $GUID, vendor 0x001af4 device 0x10f0"

# PMA baseline: ib_core's sysfs counters are PortCounters(Extended) read
# through process_mad.
C=$IBSYS/ports/1/counters
pk0=$(lsh 0 "cat $C/port_xmit_packets") || fail "no PMA counters in sysfs"
dw0=$(lsh 0 "cat $C/port_xmit_data")

# OpenSM on the guest's own port, as a daemon with its own log.
start_sm() {
	lsh -t 60 0 'rm -f /tmp/opensm.log; opensm -B -g '"$GUID"' -f /tmp/opensm.log >/dev/null 2>&1' ||
		fail "opensm did not start"
}
stop_sm() {
	lsh -t 60 0 'pkill -x opensm; i=0; while pgrep -x opensm >/dev/null && [ $i -lt 100 ]; do sleep 0.2; i=$((i+1)); done; ! pgrep -x opensm >/dev/null'
}
active() { lsh -t 20 0 "grep -q ACTIVE $IBSYS/ports/1/state"; }
trap 'stop_sm >/dev/null 2>&1; side_lab_down' EXIT
start_sm
wait_for 300 active || {
	lsh 0 "cat $IBSYS/ports/1/state; tail -n 30 /tmp/opensm.log; dmesg | tail -n 20"
	fail "OpenSM did not make the port Active in 300 s"
}
st=$(lx 0 ibstat cnuas_0 1)
lid=$(field "$st" 'Base lid')
smlid=$(field "$st" 'SM lid')
[ "$(field "$st" State)" = Active ] || fail "ibstat: $st"
if [ "$lid" -lt 1 ] || [ "$lid" -gt 49151 ]; then fail "LID $lid is not unicast: $st"; fi
[ "$smlid" = "$lid" ] || fail "SM LID $smlid is not the port's own LID $lid: $st"
[ "$(field "$st" Rate)" -ge 10 ] || fail "rate below 10 Gb/s: $st"
echo "PASS OpenSM: port Active, LID $lid, SM LID $smlid, rate $(field "$st" Rate) Gb/s"

dv=$(lx 0 ibv_devinfo -v -d cnuas_0) || fail "ibv_devinfo failed"
[ "$(field "$dv" state)" = "PORT_ACTIVE (4)" ] || fail "ibv_devinfo state: $dv"
[ "$(field "$dv" port_lid)" = "$lid" ] || fail "ibv_devinfo port_lid: $dv"
[ "$(field "$dv" sm_lid)" = "$lid" ] || fail "ibv_devinfo sm_lid: $dv"
[ "$(field "$dv" link_layer)" = InfiniBand ] || fail "ibv_devinfo link_layer: $dv"
echo "PASS ibv_devinfo: PORT_ACTIVE, port_lid $lid, sm_lid $lid, InfiniBand"

pi=$(lx 0 smpquery -C cnuas_0 -P 1 -D portinfo 0) || fail "smpquery portinfo failed"
[ "$(field "$pi" Lid)" = "$lid" ] || fail "PortInfo Lid: $pi"
[ "$(field "$pi" SMLid)" = "$lid" ] || fail "PortInfo SMLid: $pi"
[ "$(field "$pi" LocalPort)" = 1 ] || fail "PortInfo LocalPort: $pi"
[ "$(field "$pi" LinkState)" = Active ] || fail "PortInfo LinkState: $pi"
[ "$(field "$pi" PhysLinkState)" = LinkUp ] || fail "PortInfo PhysLinkState: $pi"
[ "$(field "$pi" LinkWidthActive)" = 4X ] || fail "PortInfo LinkWidthActive: $pi"
[ "$(field "$pi" NeighborMTU)" = 4096 ] || fail "PortInfo NeighborMTU: $pi"
[ "$(field "$pi" MtuCap)" = 4096 ] || fail "PortInfo MtuCap: $pi"
[ "$(field "$pi" GidPrefix)" = 0xfe80000000000000 ] || fail "PortInfo GidPrefix: $pi"
# CapMask: the hex value, then one capability name a line.
for c in IsSM IsClientRegistrationSupported IsSystemImageGUIDsupported; do
	printf '%s\n' "$pi" | grep -qx "[[:space:]]*$c" || fail "PortInfo CapMask lacks $c: $pi"
done
echo "PASS PortInfo: LID, SMLid, Active/LinkUp, 4X at $(field "$pi" LinkSpeedActive), NeighborMTU 4096, CapMask $(field "$pi" CapMask) with IsSM"

pk=$(lx 0 smpquery -C cnuas_0 -P 1 -D pkeys 0) || fail "smpquery pkeys failed"
printf '%s\n' "$pk" | grep -q '^[[:space:]]*0: 0xffff' || fail "P_Key 0 is not 0xffff: $pk"
gu=$(lx 0 smpquery -C cnuas_0 -P 1 -D GI 0) || fail "smpquery GUIDInfo failed"
printf '%s\n' "$gu" | grep -q "^[[:space:]]*0: $GUID " || fail "GUIDInfo entry 0 is not $GUID: $gu"
nd=$(lx 0 smpquery -C cnuas_0 -P 1 -D nodedesc 0) || fail "smpquery nodedesc failed"
desc=$(lsh 0 "cat $IBSYS/node_desc")
case $desc in *" cnuas_0") ;; *) fail "node_desc '$desc' is not '<host> cnuas_0'" ;; esac
[ "$(field "$nd" 'Node Description')" = "$desc" ] || fail "NodeDescription: $nd, sysfs: $desc"
gid=$(lsh 0 "cat $IBSYS/ports/1/gids/0")
[ "$gid" = fe80:0000:0000:0000:5054:00ff:fec0:0001 ] || fail "GID 0 $gid is not GIDPrefix:PortGUID"
echo "PASS P_Key 0xffff, GUIDInfo $GUID, NodeDescription '$desc', GID 0 $gid"

sm=$(lx 0 sminfo -C cnuas_0 -P 1 -D 0) || fail "sminfo failed"
case $sm in *"sm guid $GUID"*SMINFO_MASTER*) ;; *) fail "sminfo: $sm" ;; esac
echo "PASS sminfo: $sm"

# PMA: OpenSM's sweep beyond hop 0 (the switch) went on the wire.
pk1=$(lsh 0 "cat $C/port_xmit_packets")
dw1=$(lsh 0 "cat $C/port_xmit_data")
[ "$pk1" -gt "$pk0" ] && [ "$dw1" -gt "$dw0" ] ||
	fail "PMA counters did not move: PortXmitPkts $pk0 -> $pk1, PortXmitData $dw0 -> $dw1"
echo "PASS PMA counters move: PortXmitPkts $pk0 -> $pk1, PortXmitData $dw0 -> $dw1 words"
if pq=$(lx -t 60 0 perfquery -C cnuas_0 -P 1 2>&1); then
	[ "$(field "$pq" PortXmitPkts)" -ge "$pk0" ] || fail "perfquery: $pq"
	lx -t 60 0 perfquery -C cnuas_0 -P 1 -R >/dev/null || fail "perfquery -R failed"
	pk2=$(lsh 0 "cat $C/port_xmit_packets")
	[ "$pk2" -lt 50 ] || fail "PortXmitPkts $pk2 after perfquery -R"
	echo "PASS perfquery over QP1: $(field "$pq" PortXmitPkts) packets; -R cleared to $pk2"
else
	note "perfquery needs QP1 to the own LID on the wire: $(printf '%s' "$pq" | tail -n 1)"
fi

# An OpenSM restart keeps the LID; while none runs the port has no IsSM.
stop_sm || fail "opensm did not stop"
pi=$(lx 0 smpquery -C cnuas_0 -P 1 -D portinfo 0)
if printf '%s\n' "$pi" | grep -qx '[[:space:]]*IsSM'; then fail "IsSM still set without OpenSM: $pi"; fi
start_sm
wait_for 120 lsh -t 20 0 "grep -q 'MASTER' /tmp/opensm.log" ||
	{ lsh 0 'tail -n 20 /tmp/opensm.log'; fail "restarted OpenSM did not become master"; }
wait_for 60 active || fail "port not Active after the OpenSM restart"
st=$(lx 0 ibstat cnuas_0 1)
[ "$(field "$st" 'Base lid')" = "$lid" ] || fail "LID changed across an OpenSM restart: $st"
echo "PASS OpenSM restart: LID $lid kept, IsSM cleared while it was down"

[ "$(console_problems)" = 0 ] || fail "kernel problems on the console"
echo "PASS clean console"
