#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The UC transport between cnuas nodes 0 and 1 (CNUAS_PAIR="A B" for
# others): ibv_uc_pingpong with data checks (polling and -e, one packet
# and 16 KiB messages); cnuas-uc in both directions (SEND, SEND with
# immediate, RDMA WRITE with immediate and RDMA WRITE, every byte checked;
# READ and atomics refused at post time; UC's modify_qp attributes), and
# with a receiver QP that grants no remote write (every WRITE dropped,
# every SEND delivered). Then cnuas-uc while the switch drops 3% and
# reorders 2% of the frames: messages are lost whole, those that complete
# are intact, later ones still arrive, and uc_msg_dropped counts the
# losses. With an rxe node (scripts/lab up --rxe-nodes 1; CNUAS_RXE_PAIR
# "A B" for others) the same cnuas-uc and ibv_uc_pingpong runs go between
# cnuas and Soft-RoCE in both directions.
# timeout: 900
# link-layers: eth
# (not ib: UC is the RC path without ACKs, built by the same code on
# either link layer; the IB switch's drops and reorders are 57[ib])
. "$(dirname "$0")/lib.sh"
rdma_pair CNUAS_PAIR "0 1"
PA=$A PB=$B
rdma_prep "$PA" "$PB"
note "node$PA $DA (GID $GA) <-> node$PB $DB (GID $GB), MTU $MTU"
pmtu=$(roce_mtu "$MTU")

rxe=
if [ -n "${CNUAS_RXE_PAIR:-}" ] || [ "$RXE_NODES" -ge 1 ]; then
	CGA=$GA CGB=$GB CDA=$DA CDB=$DB
	rdma_pair CNUAS_RXE_PAIR "$PA $(first_rxe_node)"
	RA=$A RB=$B
	rdma_prep "$RA" "$RB"
	RGA=$GA RGB=$GB
	rxe=1
	note "interop: node$RA $DA (GID $RGA) <-> node$RB $DB (GID $RGB)"
	GA=$CGA GB=$CGB DA=$CDA DB=$CDB
fi

# counter NODE NAME: a hw counter of the node's cnuas_0.
counter() {
	lsh -t 30 "$1" "cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/$2" | tr -dc 0-9
}

port=18800
cases=()
# case_ NAME SERVER CLIENT GS GC CMD ARGS: CMD with ARGS on both nodes,
# the client towards the server.
case_() {
	local name=$1 s=$2 c=$3 gs=$4 gc=$5 cmd=$6 args=$7
	cases+=("$name")
	pair_bg "$name" 240 "$s" "$c" "$(listening $port)" \
		"$cmd -d $(rdma_dev "$s") -g $gs -p $port $args" \
		"$cmd -d $(rdma_dev "$c") -g $gc -p $port $args $(ip_of "$s")"
	port=$((port + 1))
}
# pairs: "SERVER CLIENT GID_S GID_C" in both directions
pairs=("$PA $PB $GA $GB" "$PB $PA $GB $GA")
[ -z "$rxe" ] || pairs+=("$RA $RB $RGA $RGB" "$RB $RA $RGB $RGA")
for p in "${pairs[@]}"; do
	read -r s c gs gc <<<"$p"
	tag=$c-$s
	case_ "uc_pingpong.$tag" "$s" "$c" "$gs" "$gc" ibv_uc_pingpong "-c -n 20"
	case_ "uc_pingpong-16K-e.$tag" "$s" "$c" "$gs" "$gc" ibv_uc_pingpong "-c -n 10 -s 16384 -m $pmtu -e"
	case_ "cnuas-uc.$tag" "$s" "$c" "$gs" "$gc" cnuas-uc "-n 128 -w 16 -T 200"
done
case_ "cnuas-uc-nowrite.$PB-$PA" "$PA" "$PB" "$GA" "$GB" cnuas-uc "-n 64 -w 16 -W -T 200"
pair_wait

bad=()
for c in "${cases[@]}"; do
	if pair_result "$c"; then
		case $c in
		uc_pingpong*) r=$(grep -h 'iters in' "$PR_CLI") ;;
		*) r=$(grep -h 'received .* PASS' "$PR_SRV") ;;
		esac
		[ -n "$r" ] && { echo "PASS $c: $(echo "$r" | tr -s ' \t' ' ')"; continue; }
		echo "FAIL $c: no result line"
	else
		echo "FAIL $c"
	fi
	pair_show 8
	bad+=("$c")
done
grep -h 'refused' "$PR_DIR/cnuas-uc.$PB-$PA.client" 2>/dev/null | sed 's/^/# /'

# Under loss: whole messages lost, the rest intact, the sequence resumed.
d0=$(counter "$PA" uc_msg_dropped) || fail "node$PA: no uc_msg_dropped counter"
trap '"$LAB" switch -- set-fault clear >/dev/null 2>&1' EXIT
"$LAB" switch -- set-fault drop=3 reorder=2 seed=72 || fail "set-fault refused"
name=cnuas-uc-lossy.$PB-$PA
pair_run "$name" 400 "$PA" "$PB" "$(listening $port)" \
	"cnuas-uc -d $DA -g $GA -p $port -n 512 -w 16 -L -T 380" \
	"cnuas-uc -d $DB -g $GB -p $port -n 512 -w 16 -L -T 380 $(ip_of "$PA")"
rc=$?
inj=$("$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
print(" ".join("%s=%d" % (k, sum(p["counters"]["fault_" + k] for p in s["ports"])) for k in ("drop", "reorder")))')
"$LAB" switch -- set-fault clear >/dev/null || fail "clearing the faults failed"
trap - EXIT
d1=$(counter "$PA" uc_msg_dropped)
note "switch injected: $inj; node$PA uc_msg_dropped $d0 -> $d1"
r=$(grep -h 'received .* PASS' "$PR_SRV")
lost=$(echo "$r" | sed -n 's/.*(\([0-9]*\) lost.*/\1/p')
if [ $rc = 0 ] && [ -n "$r" ] && [ "${lost:-0}" -gt 0 ] && [ "$d1" -gt "$d0" ]; then
	echo "PASS $name: $r"
else
	echo "FAIL $name (exit $rc; lost '${lost:-}', uc_msg_dropped $d0 -> $d1)"
	pair_show 8
	bad+=("$name")
fi

[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} UC runs failed: ${bad[*]}"
echo "UC: pingpong, SEND/WRITE (+imm), no-remote-write and lossy runs passed${rxe:+, and with Soft-RoCE}"
