#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A hostile tenant on the IB lab (tests/run's IB lab; the lab makes
# node0's port the switch's only SM port, scripts/lab.d/ib.sh). Root on
# node1 tries, with stock tools, what issue 42 found any guest could do;
# each attempt must be refused by the switch and counted on node1's port,
# while node0's OpenSM stays the subnet's master and RC traffic between
# the two nodes still moves checked bytes:
#   raw packets across partitions: packets with no BTH (LRH.LNH 0, raw,
#     and 1, IPv6 with no IBA transport), so no P_Key, from a tenant's
#     port to node0's LID and to node1's. The lab's OpenSM enforces
#     partitions on the switch's ports to HCAs (its default,
#     part_enforce both), and the switch lets no raw packet through such
#     a port (docs/ib-switch.md, "Partition enforcement"): every one is
#     dropped and counted in the switch's PortRcvConstraintErrors or
#     PortXmitConstraintErrors (the JSON's rcv_/xmit_constraint_errors),
#     exactly as many as were sent, and neither guest's driver sees one
#     (hw_counters rx_drop_bad_header, where a raw packet that reached it
#     would go, unchanged). The tenant's raw frames come from a port of
#     its own on the switch, as 53's attacker over IB: tests/lab/
#     ib-hostile.py --raw, one more channel adapter that OpenSM sweeps
#     and makes Active. Root in a guest could put such frames on its own
#     port (its driver builds what the device sends), but no stock tool
#     sends raw LRH frames. The same port's ordinary packets (LNH 2, the
#     default P_Key, to a QP no guest has) pass and reach the guests'
#     drivers (rx_drop_unknown_qpn): the drop is for rawness, not for
#     the port;
#   a strict-priority flood (issue 42 item 4: a cap on the priority a
#     guest port may claim): with class 7 of node0's egress strict and
#     every port trusted with its SL up to 3 (set-qos strict=7,
#     set-qos-trust sl max-prio=3), the tenant's port (ib-hostile.py
#     --flood, as above) sends to node0 at SL 7 as fast as the switch
#     takes it while node1 runs ibv_rc_pingpong -c (checked bytes) with
#     node0: the RC run completes while the flood still runs, every
#     flooded packet is capped and counted on the tenant's port
#     (prio_capped) and crosses node0's port in class 3, not in strict
#     class 7. FLOOD_MAX_PRIO=7 (the SL trusted uncapped) makes the
#     step fail: nothing is capped and the flood crosses node0's port in
#     strict class 7. The RC run still completes then, only slower (one
#     host process cannot keep a class busy on a loaded 2-core host: it
#     leaves gaps), so the starvation itself is the host test's
#     (ib_sl_cap_guest_cannot_starve);
#   its own OpenSM at priority 15 (holding the lab's M_Key, as if the
#     tenant had learned it): node0's `sminfo` still names node0's
#     OpenSM as master, node1's port keeps node0 as its SM, and the
#     rogue's SMPs beyond its own HCA are dropped (ib_drop_smp_not_sm);
#   a directed-route SubnSet on the switch (ibportstate disable of both
#     switch ports) and a LID-routed SubnGet of node0's SMA: no answer,
#     both links stay up;
#   a PMA reset of node0's counters (perfquery -R): no answer, counted
#     (ib_drop_pma_not_sm), node0's counters not reset; a PMA Get, which
#     a virtual function may send, is answered;
#   its own port's LID: the lab's OpenSM keyed node1's port (M_Key,
#     protection 2), so a hop-0 Set without the key is refused by node1's
#     own SMA;
#   spoofed sources: node1 gives its own port node0's LID (a hop-0 Set
#     with the lab's M_Key, as a tenant that learned it or a kernel that
#     bypasses its SMA would) and asks the switch's PMA,
#     then a LID nobody has and pings node0 over IPoIB: the packets are
#     dropped at the switch (ib_drop_slid_spoof), nothing answers; with
#     its LID back, the ping goes through;
#   a port grab during node0's migration: node1 takes its link down
#     (unbinds cnuas_net: its device leaves the switch) and connects
#     again (binds) while node0's IB port is handed over to node0's destination QEMU, which
#     the lab holds 6 s before it runs (CNUAS_LAB_HANDOVER_HOLD, a slow
#     destination): the port handed over goes to that QEMU only (the
#     lab's `handover ... pid=`), node1 gets its own port number back,
#     both LIDs stay. Without the pid (the lab's handover run without
#     pid=, as the switch did before it checked), node1's connection took
#     node0's IB port, Active, and node0's destination got a new one.
# A real cloud gets the same by giving a virtual function no SMP rights.
# The lab has two guests (node0 runs OpenSM, node1 is the tenant); the
# raw packets and the flood come from a port of the tenant's own, so the
# RC traffic the flood must not starve runs between two other guests,
# node1 and node0. The flood step adds about 10 s.
# timeout: 900
# link-layers: ib
. "$(dirname "$0")/lib.sh"
need_ib_sm smpquery ibportstate perfquery sminfo ibv_rc_pingpong
P=/sys/class/infiniband/cnuas_0/ports/1
lid0=$(($(lsh 0 "cat $P/lid"))) lid1=$(($(lsh 1 "cat $P/lid")))
[ "$lid0" -gt 0 ] && [ "$lid1" -gt 0 ] || fail "LIDs $lid0/$lid1: the SM has not configured the lab"

# count NAME: the switch's counter NAME, summed over its ports (only
# node1's port is a guest's that is no SM's).
count() {
	"$LAB" switch -- --json counters | /usr/bin/python3 -c '
import json, sys
print(sum(p["counters"].get(sys.argv[1], 0) for p in json.load(sys.stdin)["ports"]))' "$1" ||
		fail "cannot read the switch's counters"
}
# master: node0's sminfo, which must name node0's own OpenSM as master.
master() {
	local out
	out=$(lsh -t 60 0 "timeout 30 sminfo 2>&1") || { echo "$out"; return 1; }
	echo "$out" | grep -q "sm lid $lid0 .*SMINFO_MASTER" || { echo "$out"; return 1; }
}
rogue_stop() { lsh -t 30 1 "pkill -x opensm; true" >/dev/null 2>&1; }
[ -n "${IB_MKEY:-}" ] || fail "no IB_MKEY in the lab's lab.env"
lid_back() { lsh -t 30 1 "ibportstate -y $IB_MKEY -D 0 1 lid $lid1 >/dev/null 2>&1"; }
cleanup() {
	rogue_stop
	lid_back
}
trap cleanup EXIT

master || fail "node0's OpenSM is not the master before the test"

# 1. Raw packets from a port of the tenant's own, to both guests' LIDs.
RAW=100
[ -S "$LAB_DIR/switch.sock" ] || fail "no IB switch socket $LAB_DIR/switch.sock"
# constraint: the switch's rcv_ and xmit_constraint_errors, each summed
# over its IB ports (the tenant's port stays listed once it has left).
constraint() {
	"$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
ports = json.load(sys.stdin)["ib"]["ports"]
print(sum(p["rcv_constraint_errors"] for p in ports), sum(p["xmit_constraint_errors"] for p in ports))'
}
# drv N: node N's driver's drops for a bad header and for an unknown QPN.
drv() { lsh -t 30 "$1" "h=\$(cat $P/hw_counters/rx_drop_bad_header) && q=\$(cat $P/hw_counters/rx_drop_unknown_qpn) && echo \$h \$q"; }
c=$(constraint) || fail "cannot read the switch's IB port counters"
read -r rc0 xc0 <<<"$c"
d0=$(drv 0) && d1=$(drv 1) || fail "no rx_drop_bad_header or rx_drop_unknown_qpn in $P/hw_counters"
read -r h00 q00 <<<"$d0"
read -r h10 q10 <<<"$d1"
out=$(timeout -k 5 240 /usr/bin/python3 "$VM_TESTS/../lab/ib-hostile.py" "$LAB_DIR/switch.sock" \
	"$lid0" -L "$lid1" --raw "$RAW" 2>&1) || { echo "$out"; fail "ib-hostile.py --raw failed"; }
echo "$out"
sleep 1
c=$(constraint) || fail "cannot read the switch's IB port counters"
read -r rc1 xc1 <<<"$c"
d0=$(drv 0) && d1=$(drv 1) || fail "cannot read the guests' hw_counters"
read -r h01 q01 <<<"$d0"
read -r h11 q11 <<<"$d1"
sent=$(echo "$out" | sed -n 's/^ib-hostile: raw: .*: \([0-9]*\) raw .*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
[ "$sent" = $((2 * RAW)) ] || fail "ib-hostile.py sent $sent raw packets, want $((2 * RAW))"
dropped=$((rc1 - rc0 + xc1 - xc0))
[ "$dropped" = "$sent" ] ||
	fail "the switch counted $dropped partition refusals (rcv $rc0 -> $rc1, xmit $xc0 -> $xc1) for $sent raw packets"
[ "$h01" = "$h00" ] && [ "$h11" = "$h10" ] ||
	fail "raw packets reached the guests: rx_drop_bad_header node0 $h00 -> $h01, node1 $h10 -> $h11"
[ $((q01 - q00)) -ge "$RAW" ] && [ $((q11 - q10)) -ge "$RAW" ] ||
	fail "the tenant port's $RAW ordinary packets per node did not all arrive: rx_drop_unknown_qpn node0 $q00 -> $q01, node1 $q10 -> $q11"
echo "PASS raw packets (LNH 0 and 1) from a tenant's port to LIDs $lid0 and $lid1: $sent sent, $dropped dropped and counted at the switch (rcv_constraint_errors +$((rc1 - rc0)), xmit +$((xc1 - xc0))), none reached a guest; its ordinary packets did (rx_drop_unknown_qpn +$((q01 - q00)), +$((q11 - q10)))"

smp0=$(count ib_drop_smp_not_sm) pma0=$(count ib_drop_pma_not_sm) spoof0=$(count ib_drop_slid_spoof)

# 2. A strict-priority flood from a tenant's port while node1 and node0
# run RC. The administrator's settings: class 7 of node0's egress strict,
# every port (the tenant's to come too) trusted with its SL up to
# FLOOD_MAX_PRIO. The lab's settings come back at the end.
FLOOD_MAX_PRIO=${FLOOD_MAX_PRIO:-3}
qos_json() { "$LAB" switch -- --json show-qos; }
trust0=$(qos_json | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)["trust_all"]
print(t["mode"], "max-prio=%d" % t["max_prio"])') || fail "the IB switch has no show-qos trust_all"
# swport VM: the switch port of VM's connection ("-": the one of no VM)
swport() {
	"$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin)["ports"] if (p["vm"] or "-") == sys.argv[1]))' "$1"
}
# qos_of PORT FIELD: prio_capped, or "tx_frames" of classes 0, 3 and 7
qos_of() {
	qos_json | /usr/bin/python3 -c '
import json, sys
p = [p for p in json.load(sys.stdin)["ports"] if p["id"] == int(sys.argv[1])][0]
print(p["prio_capped"] if sys.argv[2] == "prio_capped" else " ".join(str(p["classes"][c][sys.argv[2]]) for c in (0, 3, 7)))' "$1" "$2"
}
sp0=$(swport node0)
[ -n "$sp0" ] || fail "the switch names no port of node0"
flood_pid=
flood_end() {
	[ -z "$flood_pid" ] || { kill "$flood_pid" 2>/dev/null; wait "$flood_pid" 2>/dev/null; }
	flood_pid=
	"$LAB" switch -- set-qos reset >/dev/null 2>&1
	"$LAB" switch -- set-qos-trust $trust0 >/dev/null 2>&1
}
trap 'flood_end; cleanup' EXIT
"$LAB" switch -- set-qos --port "$sp0" strict=7 >/dev/null || fail "set-qos strict=7 refused on node0's port $sp0"
"$LAB" switch -- set-qos-trust sl max-prio="$FLOOD_MAX_PRIO" >/dev/null || fail "set-qos-trust sl refused"
mkdir -p "$PR_DIR" || fail "cannot make $PR_DIR"
tc0=$(qos_of "$sp0" tx_frames) || fail "cannot read show-qos"
fout=$PR_DIR/flood.out
# not under timeout(1), which SIGUSR1 would end: it ends by itself (below)
/usr/bin/python3 "$VM_TESTS/../lab/ib-hostile.py" "$LAB_DIR/switch.sock" "$lid0" \
	--flood 60 --sl 7 --size 4096 >"$fout" 2>&1 &
flood_pid=$!
flooding() { grep -q "^ib-hostile: flood: from" "$fout"; }
wait_for 180 flooding || { cat "$fout"; fail "ib-hostile.py --flood never started flooding"; }
spa=$(swport -)
[ -n "$spa" ] && [ "$spa" = "${spa%% *}" ] || fail "the tenant's flooding port is not the one port of no VM ('$spa')"
sleep 1	# node0's queues fill
# node0's own receive path is full of the flood: each message waits
# behind what its socket and ring hold, so few of them
pair_run flood-rc 40 0 1 "$(listening 18598)" "ibv_rc_pingpong -d cnuas_0 -p 18598 -c -n 50 -s 4096" \
	"ibv_rc_pingpong -d cnuas_0 -p 18598 -c -n 50 -s 4096 $(ip_of 0)"
rc_ok=$PR_CLI_RC
grep -q "^ib-hostile: flood: sent" "$fout" && { cat "$fout"; fail "the flood ended before the RC run did"; }
kill -USR1 "$flood_pid" 2>/dev/null
sent() { grep -q "^ib-hostile: flood: sent" "$fout"; }
wait_for 10 sent || { cat "$fout"; fail "ib-hostile.py --flood did not stop on SIGUSR1"; }
cat "$fout"
[ "$rc_ok" = 0 ] || { pair_show; fail "RC between node1 and node0 starved by the tenant's SL 7 flood (max-prio $FLOOD_MAX_PRIO)"; }
pair_check "ibv_rc_pingpong -c between node1 and node0 during the flood"
grep -q "bytes in" "$PR_CLI" || { pair_show; fail "ibv_rc_pingpong reported no bytes"; }
n=$(sed -n 's/^ib-hostile: flood: sent \([0-9]*\) packets.*/\1/p' "$fout")
sleep 1	# node0's queue drains
cap1=$(qos_of "$spa" prio_capped) && tc1=$(qos_of "$sp0" tx_frames) || fail "cannot read show-qos"
read -r a0 a3 a7 <<<"$tc0"
read -r b0 b3 b7 <<<"$tc1"
flood_end
trap cleanup EXIT
# the port is new, and its SMA's answers are SL 0: only the flood counts
[ "$cap1" = "$n" ] || fail "the tenant's port sent $n packets at SL 7, the switch capped $cap1 (prio_capped)"
[ $((b3 - a3)) -ge $((n / 2)) ] && [ $((b7 - a7)) -lt $((n / 10)) ] ||
	fail "node0's port carried $((b3 - a3)) frames in class 3 and $((b7 - a7)) in strict class 7 for $n flooded at SL 7 capped at $FLOOD_MAX_PRIO"
echo "PASS a tenant's port flooding node0 at SL 7 ($n packets) while RC ran between node1 and node0: all capped to priority $FLOOD_MAX_PRIO and counted (prio_capped), node0's port carried class 3 +$((b3 - a3)), strict class 7 +$((b7 - a7)), class 0 +$((b0 - a0)); ibv_rc_pingpong -c completed with checked bytes during the flood"

# 3. A rogue OpenSM at the highest priority on node1. Without the lab's
# M_Key it would not get past its own port (node1's SMA ignores it); it
# runs with the key, as if the tenant had learned it, so that what is
# under test is the switch, which must stop it anyway.
lsh -t 30 1 "printf 'm_key %s\n' $IB_MKEY >/tmp/rogue-sm.conf &&
	opensm -F /tmp/rogue-sm.conf -B -p 15 -f /tmp/rogue-sm.log >/dev/null 2>&1" || fail "node1: opensm did not start"
sleep 20
smp1=$(count ib_drop_smp_not_sm)
rogue=$(lsh -t 30 1 "grep -cE 'SUBNET UP|Entering MASTER' /tmp/rogue-sm.log; pgrep -x opensm >/dev/null && echo running")
rogue_stop
[ "$smp1" -gt "$smp0" ] || fail "the rogue OpenSM's SMPs were not refused (ib_drop_smp_not_sm $smp0 -> $smp1)"
master || fail "node0's OpenSM is not the master once node1 ran its own at priority 15"
# The rogue may have reprogrammed its own HCA (hop 0 never leaves the
# guest): node0's OpenSM puts it back on its next heavy sweep.
st1=$(lsh 1 "cat $P/state") sm1=$(($(lsh 1 "cat $P/sm_lid"))) l1=$(($(lsh 1 "cat $P/lid")))
if [ "$sm1" != "$lid0" ] || [ "$l1" != "$lid1" ] || [[ $st1 != *ACTIVE* ]]; then
	note "node1's rogue SM changed its own port ($st1, LID $l1, SM LID $sm1); node0's OpenSM re-sweeps it"
	sm_restart /var/log/opensm.log
	ib_port_back 1 "$(printf '0x%x' "$lid1")" "after the rogue SM"
	sm1=$(($(lsh 1 "cat $P/sm_lid")))
	[ "$sm1" = "$lid0" ] || fail "node1's SM LID $sm1 after node0's re-sweep, want $lid0"
fi
echo "PASS a rogue OpenSM at priority 15 on node1: $((smp1 - smp0)) SMPs refused; node0 stays master (rogue log: $(echo $rogue))"

# 4. SMPs aimed at the switch and at node0's SMA.
smp0=$(count ib_drop_smp_not_sm)
for port in 1 2; do
	if out=$(lsh -t 60 1 "timeout 30 ibportstate -D 0,1 $port disable 2>&1"); then
		echo "$out"
		fail "ibportstate from node1 disabled the switch's port $port"
	fi
done
if out=$(lsh -t 60 1 "timeout 30 smpquery nodeinfo $lid0 2>&1"); then
	echo "$out"
	fail "node0's SMA answered a SubnGet from node1"
fi
smp1=$(count ib_drop_smp_not_sm)
[ "$((smp1 - smp0))" -ge 3 ] || fail "ib_drop_smp_not_sm $smp0 -> $smp1 after three refused SMPs"
for n in 0 1; do
	lsh -t 10 $n "grep -q ACTIVE $P/state" || fail "node$n's port is not ACTIVE after node1's ibportstate"
done
wait_ping 1 "$(ip_of 0)" 30 || fail "node1 cannot ping node0 after its SMPs"
echo "PASS node1's DR SubnSet of both switch ports and SubnGet of node0's SMA: no answer, $((smp1 - smp0)) refused, links up"

# 5. PMA: a reset of node0's counters refused, a Get answered.
c0=$(lsh 0 "cat $P/counters/port_rcv_packets")
out=$(lsh -t 60 1 "timeout 30 perfquery $lid0 1 2>&1") || { echo "$out"; fail "node1's PMA Get of node0 was not answered"; }
if out=$(lsh -t 60 1 "timeout 30 perfquery -R $lid0 1 2>&1"); then
	echo "$out"
	fail "node1's PMA reset of node0 was answered"
fi
pma1=$(count ib_drop_pma_not_sm)
c1=$(lsh 0 "cat $P/counters/port_rcv_packets")
[ "$pma1" -gt "$pma0" ] || fail "ib_drop_pma_not_sm $pma0 -> $pma1 after node1's PMA reset"
[ "$c1" -ge "$c0" ] || fail "node0's PortRcvPkts went $c0 -> $c1: node1 reset it"
echo "PASS node1's perfquery -R of node0: refused ($((pma1 - pma0)) counted), node0's counters $c0 -> $c1; its Get is answered"

# 6. Spoofed source LIDs. As node0's LID, node1's packets to node0
# never leave it (its driver loops its own LID back), so it aims at the
# switch's PMA; with a LID nobody has, it pings node0 over IPoIB.
swlid=$(sw_field "$(sw_json)" lid) || fail "cannot read the switch's LID"
spoof() { # spoof LID: node1's own SMA takes LID (hop 0 stays in the guest)
	lsh -t 30 1 "ibportstate -y $IB_MKEY -D 0 1 lid $1 >/dev/null 2>&1" || fail "node1 could not set its own LID $1"
	[ "$(($(lsh 1 "cat $P/lid")))" = "$1" ] || fail "node1's own SMA did not take LID $1"
}
# Without the key its own SMA refuses (the M_Key the lab's OpenSM set).
if lsh -t 30 1 "timeout 20 ibportstate -y 0 -t 1000 -D 0 1 lid $lid0 >/dev/null 2>&1" ||
	[ "$(($(lsh 1 "cat $P/lid")))" != "$lid1" ]; then
	fail "node1 set its own LID without the M_Key (now $(lsh 1 "cat $P/lid"))"
fi
echo "PASS node1's own SMA refused a LID Set without the lab's M_Key"
spoof "$lid0"
if out=$(lsh -t 60 1 "timeout 20 perfquery $swlid 1 2>&1"); then
	echo "$out"
	fail "the switch's PMA answered node1 sending as node0's LID $lid0"
fi
spoof1=$(count ib_drop_slid_spoof)
[ "$spoof1" -gt "$spoof0" ] || fail "ib_drop_slid_spoof $spoof0 -> $spoof1 after node1 sent as node0's LID $lid0"
unused=$((lid0 > lid1 ? lid0 + 40 : lid1 + 40))
spoof "$unused"
if lsh -t 30 1 "ping -c 3 -W 1 $(ip_of 0) >/dev/null 2>&1"; then
	fail "node1 with LID $unused, which the SM never gave it, pinged node0"
fi
spoof2=$(count ib_drop_slid_spoof)
lid_back || fail "node1 could not set its LID back"
[ "$spoof2" -gt "$spoof1" ] || fail "ib_drop_slid_spoof $spoof1 -> $spoof2 after node1 sent as LID $unused"
wait_ping 1 "$(ip_of 0)" 60 || fail "node1 cannot ping node0 with its own LID back"
echo "PASS node1 sending as node0's LID $lid0 and as LID $unused: $((spoof2 - spoof0)) packets dropped at the switch, no answers; with LID $lid1 back it pings"

# 7. A port grab during node0's migration.
ibport() { # ibport VM: the IB port of VM's connection on the switch
	"$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
for p in json.load(sys.stdin)["ports"]:
    w = (p.get("peer") or "").split()
    if p.get("vm") == sys.argv[1] and "ib" in w:
        print(w[w.index("ib") + 1])' "$1"
}
gone1() { [ -z "$(ibport node1)" ]; }
back1() { [ -n "$(ibport node1)" ]; }
handing() { [ "$(sw_field "$(sw_json)" handover_port)" != 0 ]; }
ibp0=$(ibport node0) ibp1=$(ibport node1)
[ -n "$ibp0" ] && [ -n "$ibp1" ] || fail "the switch names no IB port of node0 ('$ibp0') or node1 ('$ibp1')"
hand0=$(sw_field "$(sw_json)" handovers) || fail "cannot read the switch's hand-overs"
bdf=$(cnuas_bdf 1) || fail "node1: no cnuas-vnic PCI function"
lsh -t 30 1 "echo $bdf >/sys/bus/pci/drivers/cnuas_net/unbind" || fail "node1: unbind failed"
wait_for 20 gone1 || fail "node1's device stayed on the switch without its driver"
mkdir -p "$PR_DIR" || fail "cannot make $PR_DIR"
CNUAS_LAB_HANDOVER_HOLD=6 "$LAB" migrate 0 >"$PR_DIR/migrate.log" 2>&1 &
mig=$!
wait_for 300 handing || { cat "$PR_DIR/migrate.log"; fail "the switch never handed node0's IB port over"; }
lsh -t 30 1 "echo $bdf >/sys/bus/pci/drivers/cnuas_net/bind" || fail "node1: bind failed"
wait_for 5 back1 || fail "node1's device did not connect again within 5 s of its bind"
grab=$(ibport node1) during=$(sw_field "$(sw_json)" handover_port)
wait "$mig" || { cat "$PR_DIR/migrate.log"; fail "node0's migration failed"; }
cat "$PR_DIR/migrate.log"
[ "$grab" != "$ibp0" ] || fail "node1 took node0's IB port $ibp0, handed over to node0's destination"
[ "$during" = "$ibp0" ] || fail "node1 connected outside the hand-over of IB port $ibp0 (handover_port $during)"
[ "$grab" = "$ibp1" ] || fail "node1 got IB port $grab, not its own $ibp1"
[ "$(ibport node0)" = "$ibp0" ] || fail "node0's destination QEMU has IB port '$(ibport node0)', not $ibp0"
[ "$(sw_field "$(sw_json)" handovers)" = $((hand0 + 1)) ] || fail "the switch counted no hand-over to node0's destination"
wait_for 60 ib_port_is 0 "$(printf "0x%x" "$lid0")" || fail "node0 is not ACTIVE with LID $lid0 a minute after its migration"
ib_port_back 1 "$(printf "0x%x" "$lid1")" "after its reconnect"
ipoib_reconfigure 1 || fail "node1: ib0 not configured again"
echo "PASS node1 reconnecting while node0's IB port $ibp0 was handed over: node1 got its own port $ibp1, node0's destination port $ibp0, LIDs $lid0 and $lid1 kept"

# Through it all: node0's OpenSM is master and RC moves checked bytes.
master || fail "node0's OpenSM is not the master at the end"
pair_run rc 60 0 1 "$(listening 18597)" "ibv_rc_pingpong -d cnuas_0 -p 18597 -c -n 200 -s 4096" \
	"ibv_rc_pingpong -d cnuas_0 -p 18597 -c -n 200 -s 4096 $(ip_of 0)"
pair_check "ibv_rc_pingpong -c between node0 and node1 after the attacks"
trap - EXIT
echo "PASS a hostile tenant on IB: every attempt refused and counted; OpenSM master; RC with checked bytes passes"
