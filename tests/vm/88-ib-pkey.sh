#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Partitions on the IB lab (tests/run runs it there, after 84):
# OpenSM restarted with a partitions.conf of four partitions beside the
# Default one, then, with stock tools:
#   P_Key tables: each HCA's table (sysfs) holds the P_Keys OpenSM gave
#     it, with the membership it was given, and no other;
#   IPoIB: a child interface of partition 0x8001 on both nodes (the
#     broadcast group OpenSM made for it), IPv4 ping across;
#   full and limited member (0x0002: node0 full, node1 limited): RC
#     ib_write_bw and UD ib_send_bw with --pkey_index pass, so the
#     requester sends the P_Key of its QP's index and the responder
#     checks it against its own (the default P_Key would not match);
#   two limited members (0x0003): every UD datagram is dropped by node1,
#     whose rx_drop_bad_pkey and PortInfo P_KeyViolations (smpquery) count
#     them (IBA 10.9.3), and its SMA sends Trap 257 to the SM: OpenSM logs
#     "Bad P_Key" with the sender's LID and represses it
#     (sma_traps_sent/_repressed);
#   a non-member (0x0004: node0 only): OpenSM turned partition enforcement
#     on at the switch ports of both HCAs (smpquery) with their tables, so
#     the switch drops every datagram on its way out to node1 and counts it
#     in that port's PortXmitConstraintErrors (perfquery); node1 sees none;
#   Q_Key: datagrams with a wrong Q_Key (cnuas-verbsapi ud-modify) are
#     dropped and raise Trap 258, which OpenSM logs;
#   at the end OpenSM restarts without the file; the tables are back to
#     the default P_Key alone.
# Soft-RoCE has no P_Key table to speak of (one entry); this is IB only.
# timeout: 900
# link-layers: ib
. "$(dirname "$0")/lib.sh"
need_ib_sm smpquery ib_send_bw cnuas-verbsapi
P=/sys/class/infiniband/cnuas_0/ports/1
PORT=18515
ITERS=200

guid() { lsh -t 30 "$1" "cat $P/gids/0" | awk -F: '{ printf "0x%s%s%s%s\n", $5, $6, $7, $8 }'; }
g0=$(guid 0) && g1=$(guid 1) || fail "cannot read the port GUIDs"
lid0=$(($(lsh 0 "cat $P/lid"))) lid1=$(($(lsh 1 "cat $P/lid")))
# The P_Keys in a node's table, sorted, without the empty entries.
pkeys() { lsh -t 30 "$1" "cat $P/pkeys/* | grep -vx 0x0000 | sort | tr '\\n' ' '"; }
# index_of NODE PKEY: the table index holding PKEY.
index_of() {
	lsh -t 30 "$1" "cd $P/pkeys && for i in *; do [ \"\$(cat \$i)\" = $2 ] && echo \$i; done | head -n 1"
}
restart_sm() { sm_restart /tmp/opensm-pkey.log "$@"; }
# OpenSM writes the tables on its first heavy sweep: wait for them.
tables_are() { [ "$(pkeys 0)" = "$1" ] && [ "$(pkeys 1)" = "$2" ]; }
want0="0x0003 0x8001 0x8002 0x8004 0xffff "
want1="0x0002 0x0003 0x8001 0xffff "
cleanup() {
	lsh -t 30 0 'echo 0x8001 >/sys/class/net/ib0/delete_child' 2>/dev/null
	lsh -t 30 1 'echo 0x8001 >/sys/class/net/ib0/delete_child' 2>/dev/null
	restart_sm
}
trap cleanup EXIT

lsh -t 30 0 "cat >/tmp/partitions.conf" <<EOF
Default=0x7fff, ipoib : ALL=full ;
ipoib1=0x8001, ipoib : $g0=full, $g1=full ;
fulllim=0x0002 : $g0=full, $g1=limited ;
bothlim=0x0003 : $g0=limited, $g1=limited ;
only0=0x0004 : $g0=full ;
EOF
[ "$(lsh 0 'wc -l </tmp/partitions.conf')" = 5 ] || fail "cannot write node0:/tmp/partitions.conf"
restart_sm -P /tmp/partitions.conf
wait_for 180 tables_are "$want0" "$want1" ||
	fail "P_Key tables: node0 [$(pkeys 0)] node1 [$(pkeys 1)], want [$want0] and [$want1] (node0:/tmp/opensm-pkey.log)"
echo "PASS P_Key tables: node0 [$want0] node1 [$want1]"

# IPoIB on partition 0x8001.
for n in 0 1; do
	lsh -t 60 $n "[ -d /sys/class/net/ib0.8001 ] || echo 0x8001 >/sys/class/net/ib0/create_child
		ip link set ib0.8001 up && ip addr replace 10.81.0.$((n + 1))/24 dev ib0.8001" ||
		fail "node$n: no IPoIB child of partition 0x8001"
done
lsh -t 30 0 'cat /sys/class/net/ib0.8001/pkey' | grep -qx 0x8001 || fail "ib0.8001 is not on P_Key 0x8001"
wait_ping 0 10.81.0.2 90 || fail "no ping over IPoIB partition 0x8001"
pg=$(lsh -t 60 0 'ping -c 5 -W 5 10.81.0.2') || { echo "$pg"; fail "ping on ib0.8001 lost packets"; }
echo "PASS IPoIB partition 0x8001: $(echo "$pg" | grep -m1 'packets transmitted')"

# perf NAME SERVER-INDEX CLIENT-INDEX SECONDS TOOL ARGS: server on node0,
# client on node1, each with its own P_Key index; both exit codes in
# /tmp/NAME.rc on node1.
perf() {
	local name=$1 si=$2 ci=$3 t=$4
	shift 4
	lsh -t 30 0 "timeout $((t + 10)) $* -p $PORT --pkey_index=$si >/tmp/$name.srv 2>&1 & echo \$! >/tmp/$name.pid"
	wait_for 30 lsh -t 10 0 "$(listening $PORT)" || fail "$name: the server does not listen"
	lsh -t $((t + 30)) 1 "timeout $t $* -p $PORT --pkey_index=$ci $(ip_of 0) >/tmp/$name.cli 2>&1; echo \$? >/tmp/$name.rc"
	lsh -t $((t + 30)) 0 "while kill -0 \$(cat /tmp/$name.pid) 2>/dev/null; do sleep 0.2; done"
}
counter() { lsh -t 30 "$1" "cat $P/hw_counters/rx_drop_bad_pkey"; }
violations() { lsh -t 60 0 "smpquery portinfo $lid1" | sed -n 's/^PkeyViolations:\.*\([0-9]*\)$/\1/p'; }

# Full member and limited member talk. perftest runs with -F (as in 47):
# without it, a failed calibration of its clock (TSC against
# gettimeofday, r^2 < 0.9 on a loaded TCG host) ends a run that completed
# with exit 1 and no report; with it the exit status is the run's.
s=$(index_of 0 0x8002) && c=$(index_of 1 0x0002) && [ -n "$s" ] && [ -n "$c" ] ||
	fail "no index of 0x8002 on node0 or 0x0002 on node1"
for tool in "ib_write_bw -d cnuas_0 -F -s 65536 -n 500" "ib_send_bw -d cnuas_0 -F -c UD -n $ITERS"; do
	name=${tool%% *}
	perf "$name" "$s" "$c" 90 "$tool"
	[ "$(lsh 1 "cat /tmp/$name.rc")" = 0 ] || {
		# whole outputs: stderr's lines come before stdout's buffered ones
		lsh 1 "echo \"client exit \$(cat /tmp/$name.rc):\"; cat /tmp/$name.cli"
		lsh 0 "echo 'server:'; cat /tmp/$name.srv"
		fail "$tool between a full member (index $s) and a limited one (index $c) failed"
	}
	echo "PASS full and limited member of 0x0002: $tool: $(lsh 1 "grep -m1 -E '^ *[0-9]+ +[0-9]+ ' /tmp/$name.cli")"
done

# The switch's LID and the switch port node1 is on (ibnetdiscover), for
# smpquery and perfquery.
topo=$(lsh -t 120 0 ibnetdiscover) || fail "ibnetdiscover failed"
swlid=$(echo "$topo" | sed -n 's/^Switch.* base port 0 lid \([0-9]*\) .*/\1/p')
ng1=$(lsh 1 'cat /sys/class/infiniband/cnuas_0/node_guid' | tr -d ':')
swport1=$(echo "$topo" | sed -n "s/^\[\([0-9]*\)\][[:space:]]*\"H-$ng1\".*/\1/p")
[ -n "$swlid" ] && [ -n "$swport1" ] || { echo "$topo"; fail "ibnetdiscover: no switch, or node1 on none of its ports"; }
xmit_constraint() { lsh -t 60 0 "perfquery $swlid $swport1" | sed -n 's/^PortXmitConstraintErrors:\.*\([0-9]*\)$/\1/p'; }

# ud_refused WHAT NAME SERVER-PKEY CLIENT-PKEY GONE...: UD ib_send_bw from
# node0's QP of CLIENT-PKEY to node1's of SERVER-PKEY, which must get
# nothing. The server waits for all ITERS datagrams and the client, once
# they are sent, for the server's results: both would sit out their
# timeouts (40 s, 20 s). Once the command GONE... (on the host) says every
# datagram was counted where it is dropped, none can reach the server any
# more: both end then, the server with a status that is not 0 unless it
# had got them all before.
ud_refused() {
	local what=$1 name=$2 si ci rc
	si=$(index_of 1 "$3") && ci=$(index_of 0 "$4") && [ -n "$si" ] && [ -n "$ci" ] ||
		fail "$what: no index of $3 on node1 or $4 on node0"
	shift 4
	lsh -t 90 1 "timeout 40 ib_send_bw -d cnuas_0 -F -c UD -n $ITERS -p $PORT --pkey_index=$si >/tmp/$name.srv 2>&1; echo \$? >/tmp/$name.rc" &
	wait_for 30 lsh -t 10 1 "$(listening $PORT)" || fail "$what: the server does not listen"
	lsh -t 60 0 "timeout 20 ib_send_bw -d cnuas_0 -F -c UD -n $ITERS -p $PORT --pkey_index=$ci $(ip_of 1) >/tmp/$name.cli 2>&1" &
	if wait_for 40 "$@"; then
		lsh -t 30 1 "pkill -x ib_send_bw"
		lsh -t 30 0 "pkill -x ib_send_bw"
	fi
	wait
	rc=$(lsh 1 "cat /tmp/$name.rc")
	[ -n "$rc" ] || fail "$what: the server's exit status is lost"
	[ "$rc" != 0 ] ||
		fail "$what: node1's server received the datagrams of P_Key $4 on its QP of $3"
}

# at_least VALUE CMD...: CMD prints a number >= VALUE.
at_least() {
	local want=$1 v
	shift
	v=$("$@") && [ -n "$v" ] && [ "$v" -ge "$want" ]
}
# Two limited members: node1 drops every datagram.
drops() { # drops WHAT SERVER-PKEY CLIENT-PKEY: the server is node1 here
	local what=$1 d0 v0 d1 v1
	d0=$(counter 1) v0=$(violations)
	ud_refused "$what" "drop$2" "$2" "$3" at_least $((d0 + ITERS)) counter 1
	d1=$(counter 1) v1=$(violations)
	[ $((d1 - d0)) -ge "$ITERS" ] ||
		fail "$what: rx_drop_bad_pkey rose by $((d1 - d0)), want >= $ITERS"
	# PortInfo's counter stops at 0xffff (IBA 14.2.5.6).
	[ $((v1 - v0)) -ge "$ITERS" ] || [ "$v1" = 65535 ] ||
		fail "$what: PkeyViolations $v0 -> $v1, want >= $ITERS more"
	# and told the SM: Trap 257, which OpenSM logs and represses.
	key=$(printf '0x%x' "$3")
	wait_for 30 lsh -t 10 0 "grep -q 'Bad P_Key:$key on SL:[0-9]* from LID1:$lid0 ' /tmp/opensm-pkey.log" || {
		lsh 0 "grep -i -A1 'notice' /tmp/opensm-pkey.log | tail -n 6"
		fail "$what: OpenSM logged no Trap 257 (Bad P_Key $key from LID $lid0)"
	}
	echo "PASS $what: node1 dropped $((d1 - d0)) datagrams of P_Key $3 for its QP of $2, PkeyViolations $v0 -> $v1; its server got none of them"
}
drops "two limited members" 0x0003 0x0003

# A non-member: the switch drops it (partition enforcement, as OpenSM set
# it up on the switch port of each HCA: the HCA's table, both directions).
pi=$(lsh -t 60 0 "smpquery portinfo $swlid $swport1") || fail "smpquery portinfo $swlid $swport1 failed"
echo "$pi" | grep -q '^PartEnforceInb:\.*1$' && echo "$pi" | grep -q '^PartEnforceOutb:\.*1$' ||
	{ echo "$pi"; fail "OpenSM did not turn partition enforcement on at switch port $swport1"; }
pk=$(lsh -t 60 0 "smpquery pkeys $swlid $swport1") || fail "smpquery pkeys $swlid $swport1 failed"
echo "$pk" | grep -q 0x0002 && echo "$pk" | grep -q 0x8001 && ! echo "$pk" | grep -q 0x8004 ||
	{ echo "$pk"; fail "switch port $swport1's P_Key table is not node1's"; }
d0=$(counter 1) x0=$(xmit_constraint)
# (a counter that would stop at 255 before all are counted: the timeouts)
gone=(false)
[ $((x0 + ITERS)) -ge 255 ] || gone=(at_least $((x0 + ITERS)) xmit_constraint)
ud_refused "a non-member" dropsw 0xffff 0x8004 "${gone[@]}"
d1=$(counter 1) x1=$(xmit_constraint)
# PortXmitConstraintErrors is 8 bits wide: it stops at 255.
[ $((x1 - x0)) -ge "$ITERS" ] || [ "$x1" = 255 ] ||
	fail "a non-member: switch port $swport1's PortXmitConstraintErrors $x0 -> $x1, want >= $ITERS more"
[ "$d1" = "$d0" ] || fail "a non-member: node1 saw $((d1 - d0)) of the datagrams (the switch should have dropped them)"
echo "PASS a non-member: the switch dropped the datagrams of P_Key 0x8004 to node1 (switch $swlid port $swport1 PortXmitConstraintErrors $x0 -> $x1, enforcement in and out, node1's table); node1 saw none"

# Datagrams with a wrong Q_Key (cnuas-verbsapi's ud-modify sends some
# on loopback, node0 to node0): dropped, and Trap 258.
q0=$(lsh 0 "cat $P/hw_counters/rx_drop_bad_qkey")
out=$(lsh -t 180 0 "cnuas-verbsapi -d cnuas_0 ud-modify" 2>&1) ||
	{ echo "$out" | grep -v '^PASS' | tail -n 5; fail "cnuas-verbsapi ud-modify failed"; }
q1=$(lsh 0 "cat $P/hw_counters/rx_drop_bad_qkey")
[ $((q1 - q0)) -ge 1 ] || fail "node0: rx_drop_bad_qkey $q0 -> $q1 after SENDs with a wrong Q_Key"
wait_for 30 lsh -t 10 0 "grep -q 'Bad Q_Key:0x123 on SL:[0-9]* from LID1:$lid0 ' /tmp/opensm-pkey.log" || {
	lsh 0 "grep -i 'num:258\|Q_Key' /tmp/opensm-pkey.log | tail -n 4"
	fail "OpenSM logged no Trap 258 (Bad Q_Key 0x123 from LID $lid0)"
}
echo "PASS Q_Key: node0 dropped $((q1 - q0)) datagrams of a wrong Q_Key; OpenSM logged Trap 258"

# Every trap ended with the SM's TrapRepress (one in flight per number:
# how many of the 200 violations one trap covers depends on how fast the
# SM represses it, so on a loaded host a single trap may cover them all).
tr=$(lsh -t 30 1 "cat $P/hw_counters/sma_traps_sent $P/hw_counters/sma_traps_repressed" | tr '\n' ' ')
read -r sent repressed <<<"$tr"
[ "${sent:-0}" -ge 1 ] && [ "$repressed" = "$sent" ] ||
	fail "node1: sma_traps_sent ${sent:-?}, sma_traps_repressed ${repressed:-?} (want >= 1, all repressed)"
echo "PASS traps: node1 sent $sent, OpenSM repressed $repressed"

trap - EXIT
for n in 0 1; do
	lsh -t 30 $n 'echo 0x8001 >/sys/class/net/ib0/delete_child' || fail "node$n: cannot delete ib0.8001"
done
restart_sm
wait_for 180 tables_are "0xffff " "0xffff " ||
	fail "after OpenSM without partitions: node0 [$(pkeys 0)] node1 [$(pkeys 1)]"
echo "PASS partitions: tables, IPoIB, full/limited, limited/limited and non-member checked; back to the default P_Key"
