#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A hostile tenant on the Ethernet lab: root on node1 (cnuas; its QEMU
# gives its cnuas-vnic mac=, which the switch pins to its port) tries what
# issue 42 found any guest could do on a plain learning bridge, while a
# verified RC transfer (cnuas-xfer, every byte checked) runs between the
# two other guests, node R (Soft-RoCE) -> node0. Each attempt must be
# refused and counted on node1's port:
#   (a) node1 takes node0's MAC (ip link set address) and sends ARP, IP
#       and a raw RoCE v2 frame to R: dropped, drop_mac_not_assigned (its
#       port may use only its own MAC); with its port's MAC list dropped
#       (first-come pinning, as a port whose QEMU gives no mac=) the same
#       frames are drop_mac_spoof. node0's MAC stays on node0's port;
#   (b) a MAC nobody was given: drop_mac_not_assigned, never learned;
#   (c) 2000 frames from 2000 source MACs to fill the FDB: all dropped,
#       the FDB keeps its size, and the unicast transfer between the two
#       others never floods to node1's port (its bytes there stay far
#       below the transfer's);
#   (d) node0's port has classes 5 and 7 strict; node1 floods node0 with
#       DSCP EF (priority 5) and with a VLAN priority tag of PCP 7: under
#       the default trust (none) all of it is class 0, beside the
#       transfer; trusted with max-prio=3 it is capped to class 3 and
#       counted (prio_capped).
# Negative controls, after the transfer: with node1's port security off
# (no pinning, no MAC list, no limit) its frames from new MACs are learned, and with DSCP trusted up to 7 its
# EF flood is class 5: the checks above see what they look for.
# link-layers: eth
# timeout: 300
. "$(dirname "$0")/lib.sh"
need_eth
need_cnuas_nodes 2
[ "$RXE_NODES" -ge 1 ] || skip "needs a Soft-RoCE node for the others' transfer"
X=1 R=$(first_rxe_node)
rdma_prep 0 "$R"
DR=$(rdma_dev "$R")
mac() { lsh -t 30 "$1" "cat /sys/class/net/$(rdma_netdev "$1")/address"; }
M0=$(mac 0) MX=$(mac $X) MR=$(mac "$R") || fail "cannot read the nodes' MACs"
wait_ping $X "$(ip_of 0)" 30 || fail "node$X cannot reach node0"
wait_ping "$R" "$(ip_of 0)" 30 || fail "node$R cannot reach node0"
S=$PR_DIR/snap
mkdir -p "$S"

# snap NAME: the switch's ports (--json show) and FDB (--json fdb).
snap() {
	"$LAB" switch -- --json show >"$S/$1.show" && "$LAB" switch -- --json fdb >"$S/$1.fdb" ||
		fail "cannot read the switch"
}
# q NAME EXPR: a Python expression over sh (the ports by id, each its
# --json show object) and fdb (MAC -> port id) of snapshot NAME.
q() {
	/usr/bin/python3 - "$S/$1" "$2" <<'EOF'
import json, sys
b, expr = sys.argv[1], sys.argv[2]
sh = {p["id"]: p for p in json.load(open(b + ".show"))["ports"]}
fdb = {e["mac"]: e["port"] for e in json.load(open(b + ".fdb"))["fdb"]}
print(eval(expr))
EOF
}
# grew BEFORE AFTER PORT COUNTER: how much COUNTER of PORT grew.
grew() { q "$2" "sh[$3]['counters']['$4'] - $(q "$1" "sh[$3]['counters']['$4']")"; }
# tc BEFORE AFTER PORT: tx_bytes per class of PORT that grew, "c0 ... c7".
tc() {
	q "$2" "' '.join(str(c['tx_bytes']) for c in sh[$3]['classes'])" >"$S/tc.a"
	q "$1" "' '.join(str(c['tx_bytes']) for c in sh[$3]['classes'])" >"$S/tc.b"
	paste -d' ' "$S/tc.b" "$S/tc.a" | awk '{ for (i = 1; i <= 8; i++) printf "%d%s", $(i + 8) - $i, i < 8 ? " " : "\n" }'
}
snap base
P0=$(q base "fdb['$M0']") PX=$(q base "fdb['$MX']") PR=$(q base "fdb['$MR']") ||
	fail "the nodes' MACs are not all in the FDB"
note "node0 $M0 port $P0, attacker node$X $MX port $PX, node$R $MR port $PR"
[ "$(q base "sh[$PX]['port_security']['pin'] and sh[$PX]['assigned_macs']['macs'] == ['$MX']")" = True ] ||
	fail "node$X's port is not pinned to its one MAC: $(q base "sh[$PX]")"

# send ARGS: node1 sends raw frames (AF_PACKET, as any root can) on its
# cnuas0 (send_on NODE NETDEV ARGS: another's):
#   SRC DST COUNT [TOS [PCP [UDP]]]: COUNT IPv4/UDP frames from MAC SRC
#   ("many": 02:ee:00:xx:xx:xx, a new one each frame) to MAC DST and
#   node0's address, IP TOS TOS, with a VLAN 0 tag of priority PCP if it
#   is not -1, to UDP port UDP (default 9, discard; 4791 is RoCE v2).
#   COUNT -N: one frame a millisecond for N seconds.
SEND='import socket, struct, sys, time
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tos = int(sys.argv[4]) if len(sys.argv) > 4 else 0
pcp = int(sys.argv[5]) if len(sys.argv) > 5 else -1
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[7], 0))
m = lambda a: bytes.fromhex(a.replace(":", ""))
data = bytes(1000)
udp = int(sys.argv[6]) if len(sys.argv) > 6 else 9
ip = struct.pack("!BBHHHBBH4s4s", 0x45, tos, 28 + len(data), 0, 0, 64, 17, 0,
                 socket.inet_aton("198.18.0.2"), socket.inet_aton("198.18.0.1"))
w = sum(struct.unpack("!10H", ip))
w = (w & 0xffff) + (w >> 16)
ip = ip[:10] + struct.pack("!H", ~(w + (w >> 16)) & 0xffff) + ip[12:]
tag = struct.pack("!HH", 0x8100, pcp << 13) if pcp >= 0 else b""
body = tag + b"\x08\x00" + ip + struct.pack("!HHHH", 4791, udp, 8 + len(data), 0) + data
t = time.time()
i = 0
while i < n or (n < 0 and time.time() - t < -n):
    a = m(src) if src != "many" else b"\x02\xee\x00" + i.to_bytes(3, "big")
    try:
        s.send(m(dst) + a + body)
    except OSError:  # the qdisc is full (ENOBUFS): again
        time.sleep(0.001)
        continue
    i += 1
    if n < 0:
        time.sleep(0.001)
print(i)'
send_on() {
	local n=$1 nd=$2 src=$3 dst=$4 count=$5
	lsh -t 120 "$n" "python3 -c '$SEND' $src $dst $count ${6:-0} ${7:--1} ${8:-9} $nd" ||
		fail "node$n could not send raw frames"
}
send() { send_on $X cnuas0 "$@" >/dev/null; }
# as_mac MAC: node1's cnuas0 takes MAC; ARP and IP to node R (no answer
# may come back), one raw RoCE v2 frame to R, then its own MAC again.
as_mac() {
	lsh -t 60 $X "ip link set cnuas0 down && ip link set cnuas0 address $1 && ip link set cnuas0 up &&
		! ping -c 3 -W 1 $(ip_of "$R") >/dev/null" || fail "node$X with MAC $1 reached node$R"
	send "$1" "$MR" 5 0 -1 4791
	lsh -t 60 $X "ip link set cnuas0 down && ip link set cnuas0 address $MX && ip link set cnuas0 up" ||
		fail "node$X could not take its MAC back"
}
restore() {
	"$LAB" switch -- set-port-security --port "$PX" pin=on macs="$L0" mac="$MX" >/dev/null 2>&1
	"$LAB" switch -- set-qos --port "$P0" reset >/dev/null 2>&1
	"$LAB" switch -- set-qos-trust --port "$PX" "${trust0[@]}" >/dev/null 2>&1
	lsh -t 30 $X "ip link set cnuas0 down; ip link set cnuas0 address $MX; ip link set cnuas0 up" >/dev/null 2>&1
}
L0=$(q base "sh[$PX]['port_security']['macs']")
read -ra trust0 <<<"$(q base "'%s max-prio=%d' % (sh[$PX]['trust']['mode'], sh[$PX]['trust']['max_prio'])")"
trap restore EXIT

# The others' transfer, R -> node0, while node1 attacks (40 s at most).
XT=45
(pair_run xfer $((XT + 120)) 0 "$R" "$(listening 18598)" \
	"cnuas-xfer -d cnuas_0 -p 18598 -s 4096 -c 64 -w 8 -T $((XT + 100))" \
	"cnuas-xfer -d $DR -p 18598 -s 4096 -c 64 -w 8 -D $XT -T $((XT + 100)) $(ip_of 0)") &
xfer=$!
snap x0

# (a) node0's MAC.
# as_node0 SNAP COUNTER HOW: node X sends as node0's MAC; COUNTER of its
# port must grow by 5 or more (into GREW) and node0's MAC stay on P0.
as_node0() {
	snap "$1.0"
	as_mac "$M0"
	snap "$1.1"
	GREW=$(grew "$1.0" "$1.1" "$PX" "$2")
	[ "$GREW" -ge 5 ] || fail "(a) node$X $3sending as node0's MAC: $2 grew $GREW"
	[ "$(q "$1.1" "fdb['$M0']")" = "$P0" ] || fail "(a) node0's MAC moved to port $(q "$1.1" "fdb['$M0']")"
}
as_node0 a drop_mac_not_assigned ""
na=$GREW
"$LAB" switch -- set-port-security --port "$PX" mac=none >/dev/null || fail "set-port-security mac=none refused"
wait_ping $X "$(ip_of 0)" 30 || fail "node$X cannot reach node0 with first-come pinning"
as_node0 b drop_mac_spoof "on first-come pinning "
sp=$GREW
"$LAB" switch -- set-port-security --port "$PX" pin=on macs="$L0" mac="$MX" >/dev/null || fail "set-port-security mac=$MX refused"
echo "PASS (a) node$X as node0's MAC (ARP, IP, RoCE v2): $na frames drop_mac_not_assigned; on first-come pinning $sp drop_mac_spoof; node0's MAC stays on port $P0"

# (b) a MAC nobody was given.
snap b0
as_mac 02:00:00:00:ee:01
snap b1
nb=$(grew b0 b1 "$PX" drop_mac_not_assigned)
[ "$nb" -ge 5 ] || fail "(b) node$X from an unassigned MAC: drop_mac_not_assigned grew $nb"
[ "$(q b1 "'02:00:00:00:ee:01' in fdb")" = False ] || fail "(b) the switch learned node$X's unassigned MAC"
echo "PASS (b) node$X from a MAC nobody has: $nb frames drop_mac_not_assigned, not learned"

# (c) 2000 source MACs.
snap c0
send many ff:ff:ff:ff:ff:ff 2000
snap c1
nc=$(grew c0 c1 "$PX" drop_mac_not_assigned)
[ "$nc" -ge 2000 ] || fail "(c) 2000 source MACs: drop_mac_not_assigned grew $nc"
[ "$(q c1 "len(fdb)")" = "$(q c0 "len(fdb)")" ] || fail "(c) the FDB went from $(q c0 "len(fdb)") to $(q c1 "len(fdb)") entries"
[ "$(q c1 "sum(m.startswith('02:ee:00') for m in fdb)")" = 0 ] || fail "(c) the FDB learned node$X's made-up MACs"
echo "PASS (c) node$X from 2000 MACs: $nc frames drop_mac_not_assigned, FDB $(q c1 "len(fdb)") entries as before"

# (d) priority floods at node0, whose classes 5 and 7 are strict.
"$LAB" switch -- set-qos --port "$P0" strict=5,7 >/dev/null || fail "set-qos strict=5,7 refused"
# flood NAME: DSCP EF untagged and PCP 7 tagged, 1000 frames each.
flood() {
	snap "$1.0"
	send "$MX" "$M0" 1000 184
	send "$MX" "$M0" 1000 0 7
	snap "$1.1"
	read -ra D <<<"$(tc "$1.0" "$1.1" "$P0")"
	CAP=$(grew "$1.0" "$1.1" "$PX" prio_capped)
	note "$1: bytes to node0 per class ${D[*]}; prio_capped $CAP"
}
flood none
[ "${D[5]}" = 0 ] && [ "${D[7]}" = 0 ] || fail "(d) trust none: node$X's marked floods reached class 5 or 7: ${D[*]}"
[ "${D[0]}" -ge 2000000 ] || fail "(d) trust none: node$X's floods not in class 0: ${D[*]}"
"$LAB" switch -- set-qos-trust --port "$PX" dscp max-prio=3 >/dev/null || fail "set-qos-trust dscp refused"
flood dscp3
[ "${D[5]}" = 0 ] && [ "$CAP" -ge 1000 ] && [ "${D[3]}" -ge 1000000 ] ||
	fail "(d) trust dscp max-prio=3: EF not capped to class 3 (classes ${D[*]}, prio_capped $CAP)"
"$LAB" switch -- set-qos-trust --port "$PX" pcp max-prio=3 >/dev/null || fail "set-qos-trust pcp refused"
flood pcp3
[ "${D[7]}" = 0 ] && [ "$CAP" -ge 1000 ] && [ "${D[3]}" -ge 1000000 ] ||
	fail "(d) trust pcp max-prio=3: PCP 7 not capped to class 3 (classes ${D[*]}, prio_capped $CAP)"
"$LAB" switch -- set-qos-trust --port "$PX" "${trust0[@]}" >/dev/null || fail "set-qos-trust ${trust0[*]} refused"
echo "PASS (d) node$X's DSCP EF and PCP 7 floods: class 0 under trust none; capped to 3 and counted with max-prio=3"

# The transfer: every byte checked, and none of it flooded to node1.
wait $xfer
pair_result xfer || { pair_show 15; fail "the transfer node$R -> node0 failed during the attacks"; }
snap x1
moved=$(grew x0 x1 "$P0" tx_bytes) toX=$(grew x0 x1 "$PX" tx_bytes)
tail -n 2 "$PR_CLI"
[ "$toX" -lt $((moved / 50)) ] || fail "node$X's port got $toX bytes while node0's got $moved: the transfer flooded"
echo "PASS the transfer node$R -> node0 during the attacks: bytes checked, $moved bytes to node0, $toX to node$X"

# Negative controls: the checks see an attack that gets through.
"$LAB" switch -- set-port-security --port "$PX" mac=none pin=off macs=0 >/dev/null || fail "set-port-security pin=off refused"
send many ff:ff:ff:ff:ff:ff 50
snap n1
learned=$(q n1 "sum(m.startswith('02:ee:00') for m in fdb)")
"$LAB" switch -- set-port-security --port "$PX" pin=on macs="$L0" mac="$MX" >/dev/null || fail "set-port-security mac=$MX refused"
[ "$learned" -ge 50 ] || fail "control: with port security off the switch learned $learned of 50 MACs"
"$LAB" switch -- set-qos-trust --port "$PX" dscp max-prio=7 >/dev/null || fail "set-qos-trust dscp refused"
flood dscp7
[ "${D[5]}" -ge 1000000 ] || fail "control: trust dscp max-prio=7: EF not in class 5: ${D[*]}"
restore
trap - EXIT
snap end
[ "$(q end "sum(m.startswith('02:ee:00') for m in fdb)")" = 0 ] || fail "node$X's learned MACs were not dropped with its MAC list"
echo "PASS controls: port security off learns $learned made-up MACs; DSCP trusted to 7 puts EF in class 5"

# A port grab during a neighbour's migration: node1 moves to a new QEMU
# (scripts/lab migrate: its old port goes, handover/del-port, and its
# QEMU-given MAC is pinned to the new port at once) while a verified
# transfer node0 -> node1 runs and node R (a port with first-come
# pinning, no given MACs) sends from node1's MAC every millisecond
# throughout. A tenant cannot reconnect its own cnuas-vnic on Ethernet
# (the link stays up whatever its driver does; QEMU reconnects only when
# the switch's socket breaks), so sending as the moving guest at the
# moment its port changes is what it can do.
pid_port() { q "$1" "[i for i, p in sh.items() if p['peer'].split()[:2] == ['pid', '$2']][0]"; }
snap m0
PXold=$(pid_port m0 "$(cat "$LAB_DIR/node$X.pid")") || fail "no switch port of node$X's QEMU"
rdma_ready $X
XS=15
"$LAB" job $X start hostile-mig -- cnuas-xfer -d cnuas_0 -p 18599 -s 4096 -c 64 -w 8 -T $((XS + 100)) ||
	fail "cannot start the cnuas-xfer receiver on node$X"
lsh -t 30 $X "i=0; until $(listening 18599) || [ \$i -ge 100 ]; do sleep 0.1; i=\$((i+1)); done"
lsh -t $((XS + 120)) 0 "cnuas-xfer -d cnuas_0 -p 18599 -s 4096 -c 64 -w 8 -D $XS -T $((XS + 100)) $(ip_of $X)" >"$S/mig.tx" 2>&1 &
txpid=$!
send_on "$R" eth0 "$MX" ff:ff:ff:ff:ff:ff -$((XS + 5)) >"$S/mig.grab" &
grab=$!
sleep 4
"$LAB" migrate $X >"$S/mig.log" 2>&1 || { cat "$S/mig.log"; fail "scripts/lab migrate $X failed"; }
wait $txpid
txrc=$?
rx=$("$LAB" job $X wait hostile-mig 120)
rxrc=$?
wait $grab || fail "node$R's frames from node$X's MAC: the sender failed"
snap m1
PXnew=$(pid_port m1 "$(cat "$LAB_DIR/node$X.pid")") || fail "no switch port of node$X's new QEMU"
tail -n 2 "$S/mig.tx"
echo "$rx" | tail -n 2
[ $txrc = 0 ] && [ $rxrc = 0 ] || fail "the transfer to node$X across its migration failed (sender rc $txrc, receiver rc $rxrc)"
[ "$PXnew" != "$PXold" ] || fail "node$X's port $PXold did not change in the migration"
[ "$(q m1 "fdb.get('$MX')")" = "$PXnew" ] || fail "node$X's MAC is on port $(q m1 "fdb.get('$MX')"), not its new port $PXnew"
sent=$(cat "$S/mig.grab")
spr=$(grew m0 m1 "$PR" drop_mac_spoof)
[ "$spr" -ge $((sent * 9 / 10)) ] || fail "node$R sent $sent frames as node$X, drop_mac_spoof grew $spr"
echo "PASS node$X migrated (port $PXold -> $PXnew) with node$R sending as its MAC throughout: $spr of $sent frames drop_mac_spoof, the MAC on the new port, the transfer to node$X checked"
