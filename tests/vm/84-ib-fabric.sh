#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A native InfiniBand fabric of two guests: the vm group's IB lab
# (tests/run: two `--link-layer ib` nodes on cnuas-vswitchd in IB mode),
# first of its cells, so it sees the fabric as OpenSM, started in node0
# by scripts/lab up, first swept it through the switch's SMA and both
# HCAs' SMAs; then, all with stock tools:
#   management: both ports Active with distinct LIDs and node0's SM LID;
#     ibnetdiscover sees the switch and both HCAs on the switch ports they
#     are cabled to; smpquery by LID, ibtracert through the switch,
#     ibping; node1's port and the switch's keyed with the lab's M_Key at
#     protection 2 (read with the key node0's diag tools hold), and a Get
#     with M_Key 0 unanswered and counted by the switch;
#   IPoIB: ib0 joins the broadcast group OpenSM made; IPv4 and IPv6 ping
#     and a 64 MiB TCP transfer (sha256 compared);
#   RDMA CM on the IPoIB addresses: rdmacm-utils' ucmatose (RC, IPv4 and
#     IPv6) and udaddy (UD), 4 connections x 100 messages each, and
#     perftest with -R (ib_send_bw, ib_write_bw), each checked by its
#     exit status, its own completion line and node1's PMA
#     unicast_rcv_packets;
#   no ICRC error at either HCA and no bad VCRC or LRH at the switch;
#   last, an OpenSM restart keeps the LIDs.
# The verbs tests' own IB cells run after it in the same lab (46, 47,
# 48, 53, 57, 59, 60, 63, 64, 66, 70, 73, 74, 75, 80, 82, 99; IB only:
# 81, 88, 89, 91), by LID and IPoIB.
# link-layers: ib
# first-in-lab
# timeout: 1200
. "$(dirname "$0")/lib.sh"
[ "$LINK_LAYER" = ib ] || skip "needs the IB lab (tests/run runs it there)"
lsh -t 30 0 'command -v opensm >/dev/null && command -v ibnetdiscover >/dev/null' ||
	fail "the guest image has no opensm or infiniband-diags"
P=/sys/class/infiniband/cnuas_0/ports/1

for n in 0 1; do
	lsh -t 120 $n 'modprobe -a cnuas_ib ib_umad ib_uverbs rdma_ucm ib_ipoib' ||
		fail "node$n: cannot load the RDMA modules"
done
lsh -t 30 0 'pgrep -x opensm >/dev/null || opensm -B -f /tmp/opensm.log >/dev/null 2>&1' ||
	fail "node0: opensm did not start"
active() { lsh -t 30 "$1" "grep -q ACTIVE $P/state && [ \"\$(cat $P/lid)\" != 0x0 ]"; }
for n in 0 1; do
	wait_for 240 active $n || fail "node$n: port $(lsh 0 "cat $P/state") LID $(lsh $n "cat $P/lid")"
done
lid0=$(lsh 0 "cat $P/lid") lid1=$(lsh 1 "cat $P/lid")
sm0=$(lsh 0 "cat $P/sm_lid") sm1=$(lsh 1 "cat $P/sm_lid")
[ "$lid0" != "$lid1" ] || fail "both ports have LID $lid0"
[ "$sm0" = "$lid0" ] && [ "$sm1" = "$lid0" ] ||
	fail "SM LID $sm0/$sm1, want node0's $lid0"
echo "PASS OpenSM: both ports ACTIVE, LIDs $lid0 and $lid1, SM LID $sm0"
# In decimal for the diags.
l0=$((lid0)) l1=$((lid1))

# The topology as OpenSM and ibnetdiscover see it.
topo=$(lsh -t 120 0 'ibnetdiscover 2>&1') || { echo "$topo"; fail "ibnetdiscover failed"; }
sw=$(echo "$topo" | grep -c '^Switch')
ca=$(echo "$topo" | grep -c '^Ca')
[ "$sw" = 1 ] && [ "$ca" = 2 ] || { echo "$topo"; fail "ibnetdiscover: $sw switch(es), $ca CA(s), want 1 and 2"; }
swlid=$(echo "$topo" | sed -n 's/^Switch.* base port 0 lid \([0-9]*\) .*/\1/p')
for n in 0 1; do
	# The switch's line for the port node N is cabled to names its HCA.
	echo "$topo" | grep -qE "^\[[0-9]+\].*\"node$n cnuas_0\" lid $((n == 0 ? l0 : l1)) " ||
		{ echo "$topo"; fail "ibnetdiscover: no switch port with node$n behind it"; }
done
echo "PASS ibnetdiscover: 1 switch (LID $swlid) and 2 HCAs on its ports"

ni=$(lsh -t 60 0 "smpquery nodeinfo $l1") || fail "smpquery nodeinfo $l1 failed"
echo "$ni" | grep -q 'NodeType:.*Channel Adapter' || { echo "$ni"; fail "node1's NodeInfo by LID"; }
ni=$(lsh -t 60 0 "smpquery nodeinfo $swlid") || fail "smpquery nodeinfo $swlid failed"
echo "$ni" | grep -q 'NodeType:.*Switch' || { echo "$ni"; fail "the switch's NodeInfo by LID"; }
tr=$(lsh -t 60 0 "ibtracert $l0 $l1") || fail "ibtracert failed"
echo "$tr" | grep -q 'switch port' && echo "$tr" | grep -q "To ca .*node1 cnuas_0" ||
	{ echo "$tr"; fail "ibtracert does not go node0 -> switch -> node1"; }
echo "PASS smpquery by LID (CA and switch), ibtracert through the switch"

# The lab's OpenSM keys every port it manages (scripts/lab.d/ib.sh): the
# lab's M_Key at protection 2, which node0's diag tools present from
# ibdiag.conf. A Get with another key goes unanswered and is counted.
[ -n "${IB_MKEY:-}" ] || fail "no IB_MKEY in the lab's lab.env"
pfield() { echo "$1" | sed -n "s/^$2:\.*\(.*\)$/\1/p"; }
for l in $l1 $swlid; do
	pi=$(lsh -t 60 0 "smpquery portinfo $l") || fail "smpquery portinfo $l (with the lab's M_Key) failed"
	[ "$(($(pfield "$pi" Mkey)))" = "$((IB_MKEY))" ] && [ "$(pfield "$pi" ProtectBits)" = 2 ] ||
		{ echo "$pi"; fail "LID $l: M_Key $(pfield "$pi" Mkey), protection $(pfield "$pi" ProtectBits); want $IB_MKEY at 2"; }
done
v0=$(pfield "$pi" MkeyViolations)
if pi0=$(lsh -t 60 0 "timeout 20 smpquery -y 0 -t 1000 portinfo $swlid 2>&1"); then
	echo "$pi0"
	fail "the switch answered a PortInfo Get with M_Key 0 at protection 2"
fi
pi=$(lsh -t 60 0 "smpquery portinfo $swlid") || fail "smpquery portinfo $swlid failed"
v1=$(pfield "$pi" MkeyViolations)
[ "$((v1 - v0))" -ge 1 ] || { echo "$pi"; fail "the switch's MkeyViolations $v0 -> $v1"; }
echo "PASS M_Key: node1 and the switch keyed by OpenSM at protection 2; a Get with key 0 went unanswered (switch MkeyViolations $v0 -> $v1)"

lsh -t 30 1 'pgrep -x ibping >/dev/null || { ibping -S >/dev/null 2>&1 & }'
pg=$(lsh -t 60 0 "timeout 40 ibping -c 5 -L $l1") || { echo "$pg"; fail "ibping failed"; }
echo "$pg" | grep -q '5 received' || { echo "$pg"; fail "ibping: not 5 of 5"; }
echo "PASS ibping: $(echo "$pg" | grep received)"

# scripts/lab up gave ib0 the addresses cnuas0 has in an Ethernet lab.
for n in 0 1; do
	lsh -t 30 $n "ip -4 -o addr show dev ib0 | grep -q ' $(ip_of $n)/'" ||
		fail "node$n: ib0 has not $(ip_of $n) (scripts/lab.d/ib.sh)"
done
wait_ping 0 "$(ip_of 1)" 60 || fail "no IPoIB ping node0 -> node1"
lsh -t 60 0 "ping -6 -c 3 -W 5 $(ip6_of 1) >/dev/null" || fail "no IPv6 IPoIB ping"
echo "PASS IPoIB: IPv4 and IPv6 ping over ib0"
echo "PASS IPoIB TCP: $(tcp_transfer 0 1 64 18480)"

bad=()
icrc() { lsh -t 30 "$1" "cat $P/hw_counters/rx_icrc_errors 2>/dev/null || echo 0"; }
i0=$(icrc 0) i1=$(icrc 1)

# More of RDMA CM on the IPoIB addresses, each checked by its exit status,
# its own "all data" line and node1's PMA unicast_rcv_packets (at least
# the messages it had to receive).
pkts() { lsh -t 30 1 "cat $P/counters/unicast_rcv_packets"; }
cm_port=18520
cm() { # cm NAME MIN-PKTS PORT SERVER-CMD CLIENT-CMD: server on node1, client on node0
	# (PORT: the server's RDMA CM port, %P: a fresh one, also in the commands)
	local name=$1 min=$2 b a try tries=1 ok=0 srv cli port
	# Only perftest -R runs again (below); RDMA CM itself has one go.
	case $name in *-R) tries=6 ;; esac
	b=$(pkts)
	for try in $(seq "$tries"); do
		cm_port=$((cm_port + 1))
		port=${3//%P/$cm_port} srv=${4//%P/$cm_port} cli=${5//%P/$cm_port}
		lsh -t 30 1 "{ timeout 150 $srv & echo \$! >/tmp/$name.pid; wait \$!; echo \"exit \$?\"; } >/tmp/$name.srv 2>&1 &"
		# the client once the server listens (a TCG guest may take seconds)
		lsh -t 60 1 "i=0; until rdma res show cm_id 2>/dev/null | grep -qE 'state LISTEN .*:$port( |\$)'; do
			[ \$i -lt 200 ] || exit 1; sleep 0.2; i=\$((i+1)); done" ||
			note "$name: no RDMA CM listener on port $port after 40 s"
		lsh -t 180 0 "timeout 150 $cli >/tmp/$name.cli 2>&1" && { ok=1; break; }
		lsh -t 30 1 "kill \$(cat /tmp/$name.pid) 2>/dev/null"
		# perftest 4.5 -R connects twice, and its server listens for the
		# second connection only after the first one's MTU exchange. A
		# client that gets there first is refused (with -c UD SIDR status
		# 1 "unsupported", else REJ "invalid service ID", reason 8: both
		# sides' CMs as the IBA has them), and its own retry crashes (see
		# below): a fresh pair again. One try in two or three loses the
		# race under TCG, hence six. Upstream: perftest 4.5's -R retry
		# is a use-after-free in librdmacm use, fixed in perftest 26.04
		# (commit 3d9d8d0); with that, drop this loop.
		[ "$try" -lt "$tries" ] &&
			lsh -t 30 0 "grep -qE 'RDMA_CM_EVENT_(UNREACHABLE; error: 1|REJECTED; error: 8)\.' /tmp/$name.cli" || break
		note "$name: RETRY $try for perftest 4.5's -R race (its own retry crashes; fixed in perftest 26.04, commit 3d9d8d0): $(lsh 0 "grep -m1 -o 'RDMA_CM_EVENT_.*' /tmp/$name.cli")"
	done
	if [ $ok = 1 ] &&
		lsh -t 60 1 "i=0; until grep -q '^exit ' /tmp/$name.srv || [ \$i -gt 300 ]; do sleep 0.2; i=\$((i+1)); done
			grep -q '^exit 0' /tmp/$name.srv" &&
		lsh -t 30 0 "grep -qE 'data transfers complete|rdma_cm QPs[[:space:]]*: ON' /tmp/$name.cli"; then
		a=$(pkts)
		if [ $((a - b)) -ge "$min" ]; then
			echo "PASS $name over RDMA CM on IPoIB: node1 unicast_rcv_packets +$((a - b)) (>= $min)$(lsh 0 "grep -m1 -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/$name.cli" | tr -s ' \t' ' ' | sed 's/^ */; /')"
		else
			echo "$name: node1 unicast_rcv_packets +$((a - b)), want >= $min"
			bad+=("$name")
		fi
	else
		lsh 0 "tail -n 5 /tmp/$name.cli"
		lsh 1 "tail -n 5 /tmp/$name.srv"
		bad+=("$name")
	fi
}
# rdmacm-utils: ucmatose (RC, 4 connections x 100 messages each way, on
# IPv4 and IPv6), udaddy (UD, the same).
cm ucmatose 400 %P "ucmatose -b $(ip_of 1) -p %P -c 4 -C 100" "ucmatose -s $(ip_of 1) -p %P -c 4 -C 100"
cm ucmatose6 400 %P "ucmatose -b $(ip6_of 1) -p %P -c 4 -C 100" "ucmatose -s $(ip6_of 1) -p %P -c 4 -C 100"
# (udaddy's port is fixed: 7174)
cm udaddy 400 7174 "udaddy -b $(ip_of 1) -c 4 -C 100" "udaddy -s $(ip_of 1) -c 4 -C 100"
# perftest with -R: its QPs made and connected by RDMA CM (RC SEND and
# WRITE, 300 x 64 KiB). perftest 4.5 -R connects twice, and its server
# listens for the second connection only after the first one's MTU
# exchange. A client that gets there first is refused (REJ "invalid
# service ID", or SIDR status 1 with -c UD, as the IBA wants with no
# listener), and its retry then crashes in librdmacm: a use-after-free
# fixed upstream in perftest 26.04 (commit 3d9d8d0). The RC bandwidth
# tools mostly win that race here; the latency tools and UD (`-c UD`,
# which lost it 6 times of 6 in one run) do not, so they are left out:
# udaddy above covers UD over RDMA CM (SIDR).
for tool in ib_send_bw ib_write_bw; do
	cm "$tool-R" 300 %P "$tool -d cnuas_0 -p %P -n 300 -F -R" "$tool -d cnuas_0 -p %P -n 300 -F -R $(ip_of 1)"
done
[ "$(icrc 0)" = "$i0" ] && [ "$(icrc 1)" = "$i1" ] || bad+=("icrc-errors")

# The switch saw only good link frames.
drops=$("$LAB" switch -- --json counters 2>/dev/null | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
t = {}
def walk(o):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("ib_drop_vcrc", "ib_drop_lrh") and isinstance(v, int):
                t[k] = t.get(k, 0) + v
            else:
                walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(d)
print(" ".join(f"{k}={v}" for k, v in sorted(t.items())) or "none")') ||
	fail "cannot read the switch's counters"
case $drops in *=[1-9]*) bad+=("switch:$drops") ;; esac
echo "switch link-frame drops: $drops"

# An OpenSM restart keeps every LID (OpenSM's guid2lid cache).
sm_restart /tmp/opensm2.log
sleep 10
for n in 0 1; do
	wait_for 120 active $n || fail "node$n not ACTIVE after the OpenSM restart"
done
[ "$(lsh 0 "cat $P/lid")" = "$lid0" ] && [ "$(lsh 1 "cat $P/lid")" = "$lid1" ] ||
	bad+=("lids-after-restart")
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} failed: ${bad[*]}"
echo "PASS OpenSM restart: LIDs $lid0 and $lid1 kept; all IB fabric checks passed"
