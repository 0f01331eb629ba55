#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Traffic classes of cnuas-vswitchd with RoCE (docs/traffic-classes.md),
# every port trusting DSCP (set-qos-trust dscp; the default trusts none).
# 1. Node A (cnuas) writes to node B (cnuas) with ib_write_bw; the switch's
#    per-class counters of B's port must show the bytes in the class the
#    QP asked for: an AH traffic class (--tclass) over IPv4 and IPv6 GIDs,
#    an RDMA CM TOS (-R --tos: rdma_set_option), and a DSCP remapped on
#    A's port (set-qos dscp=).
# 2. A (class 1) and B (class 3) both write to the Soft-RoCE node R, whose
#    receive side is the bottleneck, so both classes wait in the switch:
#    class 3's share of R's port in a window where both run must be about
#    even with equal weights, >= 0.85 with class 3 strict, 0.6..0.95 with
#    weights 1:4; with class 1 lossy it drops (drop_tc_full) and pauses
#    nobody while lossless class 3 drops nothing. Prints the figures.
# TC_SECONDS sets the class-3 run (default 10 s; the window is its half;
# class 1 runs twice as long and 10 s more, as class 3 may take 20 s to
# start on a loaded host: a class-1 run of 20 s once ended before the
# window did, 2026-12-07). About 2 minutes.
# timeout: 400
. "$(dirname "$0")/lib.sh"
need_eth
rdma_pair CNUAS_PAIR "0 1"
if [ "$(node_kind "$A")" != cnuas ] || [ "$(node_kind "$B")" != cnuas ]; then
	skip "needs two cnuas nodes (the switch classes what cnuas_ib marks)"
fi
"$LAB" switch -- show-qos >/dev/null 2>&1 || skip "this switch has no traffic classes (show-qos)"
# The switch trusts no port's marking by default (--qos-trust none): this
# test is the administrator who lets every port's DSCP choose its class,
# and puts the switch's trust back afterwards.
trust0=$("$LAB" switch -- --json show-qos | /usr/bin/python3 -c '
import json, sys
t = json.load(sys.stdin)["trust_all"]
print(t["mode"], "max-prio=%d" % t["max_prio"])') || fail "show-qos has no trust_all"
trap '"$LAB" switch -- set-qos reset >/dev/null 2>&1; "$LAB" switch -- set-qos-trust $trust0 >/dev/null 2>&1' EXIT
"$LAB" switch -- set-qos reset >/dev/null || fail "set-qos reset refused"
"$LAB" switch -- set-qos-trust dscp max-prio=7 >/dev/null || fail "set-qos-trust dscp refused"
rdma_prep "$A" "$B"

# port_of NODE: the node's switch port, by its MAC in the FDB.
port_of() {
	local m
	m=$(lsh -t 30 "$1" "cat /sys/class/net/$(rdma_netdev "$1")/address") || return 1
	"$LAB" switch -- --json fdb | /usr/bin/python3 -c '
import json, sys
m = sys.argv[1]
print([e["port"] for e in json.load(sys.stdin)["fdb"] if e["mac"] == m][0])' "$m"
}
# snap FILE: the switch's show-qos JSON.
snap() { "$LAB" switch -- --json show-qos >"$1" || fail "show-qos failed"; }
# delta BEFORE AFTER PORT KEY: per-class growth of KEY on PORT, "c0 c1 ... c7".
delta() {
	/usr/bin/python3 - "$@" <<'EOF'
import json, sys
b, a, port, key = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3]), sys.argv[4]
pb = [p for p in b["ports"] if p["id"] == port][0]["classes"]
pa = [p for p in a["ports"] if p["id"] == port][0]["classes"]
print(" ".join(str(y[key] - x[key]) for x, y in zip(pb, pa)))
EOF
}
PB=$(port_of "$B") || fail "node$B's port not in the FDB"
PA=$(port_of "$A") || fail "node$A's port not in the FDB"
note "node$A $DA (port $PA) -> node$B $DB (port $PB), MTU $MTU"
S=$PR_DIR/snap
mkdir -p "$S"

# lands NAME CLASS ARGS GID_B GID_A: an ib_write_bw A -> B with ARGS on
# both ends, from GID index GID_A to GID_B; at least its 300 x 64 KiB must
# be in CLASS at B's port, and no other class may carry 1% of that.
tport=18900
lands() {
	local name=$1 tc=$2 args=$3 gs=$4 gc=$5 d c ready
	# with -R the server waits on an RDMA CM id, not on a TCP socket
	case $args in -R*) ready=$(cm_listening) ;; *) ready=$(listening $tport) ;; esac
	snap "$S/$name.0"
	pair_run "$name" 120 "$B" "$A" "$ready" \
		"ib_write_bw -d $DB -x $gs -F -n 300 -s 65536 -p $tport $args" \
		"ib_write_bw -d $DA -x $gc -F -n 300 -s 65536 -p $tport $args $(ip_of "$B")"
	tport=$((tport + 1))
	pair_check "$name: ib_write_bw failed"
	snap "$S/$name.1"
	read -ra d <<<"$(delta "$S/$name.0" "$S/$name.1" "$PB" tx_bytes)"
	read -ra c <<<"$(delta "$S/$name.0" "$S/$name.1" "$PA" tx_bytes)"
	note "$name: bytes to node$B per class: ${d[*]}; to node$A (ACKs): ${c[*]}"
	[ "${d[$tc]}" -ge $((300 * 65536)) ] ||
		fail "$name: only ${d[$tc]} bytes in class $tc at node$B's port (want >= $((300 * 65536))): ${d[*]}"
	local i
	for i in 0 1 2 3 4 5 6 7; do
		[ "$i" = "$tc" ] || [ "${d[$i]}" -lt $((d[tc] / 100)) ] ||
			fail "$name: $((d[i])) bytes in class $i, not $tc: ${d[*]}"
	done
	echo "PASS $name: ${d[$tc]} bytes in class $tc at node$B's port (${d[*]})"
}
# AH traffic class 96 = DSCP 24 -> priority 3; IPv6 128 = DSCP 32 -> 4;
# RDMA CM TOS 160 = DSCP 40 -> 5 (the switch's default map: DSCP >> 3).
lands tclass-ipv4 3 "--tclass=96" "$GB" "$GA"
lands tclass-ipv6 4 "--tclass=128" "$GB6" "$GA6"
lands cm-tos 5 "-R --tos=160" "$GB" "$GA"
# a remapped DSCP on the sender's port: DSCP 24 -> priority 6
"$LAB" switch -- set-qos --port "$PA" dscp=24:6 >/dev/null || fail "set-qos dscp refused"
lands tclass-remapped 6 "--tclass=96" "$GB" "$GA"
"$LAB" switch -- set-qos reset >/dev/null

# ---- a bulk class competing with a favoured one for one port ---------------
# Both cnuas nodes write to the Soft-RoCE node R at once, whose receive
# side is much slower than either sender, so both classes wait in the
# switch's queues for R's port and the switch's scheduler decides who
# gets R: node A's bulk flow in class 1 (TOS 32), node B's in class 3
# (TOS 96). Equal weights share about evenly; with class 3 strict, or
# weighted 1:4, class 3 must get clearly more (generous bounds: TCG).
R=$(first_rxe_node)
[ "$R" -lt $((NODES + VIRTIO_NODES + RXE_NODES)) ] || skip "no Soft-RoCE node to compete for"
rdma_ready "$R"
GR=$(gid_index "$R" 4) || fail "node$R: no RoCE v2 GID"
DR=$(rdma_dev "$R")
PR=$(port_of "$R") || fail "node$R's port not in the FDB"
DUR=${TC_SECONDS:-10}
bw_of() { awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ { print $4; exit }' "$1"; }

# compete NAME QOS...: sets SHARE, class 3's part of the bytes the two
# classes got through R's port, D (bytes per class), DROP and BP (frames
# dropped as drop_tc_full, senders paused, per class). A class-1 flow that
# fails is tolerated where class 1 may starve (strict) or lose frames
# (lossy); it is noted.
compete() {
	local name=$1 j1 j3
	shift
	"$LAB" switch -- set-qos --port "$PR" reset "$@" >/dev/null || fail "set-qos $* refused"
	snap "$S/$name.base"
	# class 1 first, until its bytes flow (under strict priority class 3
	# would starve class 1's TCP setup, in class 0), then class 3
	(pair_run "$name.c1" $((2 * DUR + 100)) "$R" "$A" "$(listening 18950)" \
		"ib_write_bw -d $DR -x $GR -F -D $((2 * DUR + 10)) -s 65536 -p 18950 --tclass=32" \
		"ib_write_bw -d $DA -x $GA -F -D $((2 * DUR + 10)) -s 65536 -p 18950 --tclass=32 $(ip_of "$R")") &
	j1=$!
	wait_for 60 moving "$name" 1 || fail "$name: no class 1 bytes to node$R"
	(pair_run "$name.c3" $((DUR + 90)) "$R" "$B" "$(listening 18951)" \
		"ib_write_bw -d $DR -x $GR -F -D $DUR -s 65536 -p 18951 --tclass=96" \
		"ib_write_bw -d $DB -x $GB -F -D $DUR -s 65536 -p 18951 --tclass=96 $(ip_of "$R")") &
	j3=$!
	wait_for 60 moving "$name" 3 || fail "$name: no class 3 bytes to node$R"
	# both flow: measure a window inside class 3's run
	snap "$S/$name.0"
	sleep $((DUR / 2))
	snap "$S/$name.1"
	# the window counts only if class 1 was still sending at its end
	if ! kill -0 $j1 2>/dev/null; then
		case $name in
		strict | lossy) note "$name: the class 1 flow ended before the window did" ;;
		*) fail "$name: the class 1 flow ended before the window did (raise TC_SECONDS)" ;;
		esac
	fi
	wait $j3 $j1
	pair_result "$name.c3" || { pair_show 15; fail "$name: the class 3 flow failed"; }
	if ! pair_result "$name.c1"; then
		case $name in
		strict | lossy) note "$name: the class 1 flow failed (starved or out of retries):"; pair_show 3 ;;
		*) pair_show 15; fail "$name: the class 1 flow failed" ;;
		esac
	fi
	read -ra D <<<"$(delta "$S/$name.0" "$S/$name.1" "$PR" tx_bytes)"
	read -ra BP <<<"$(delta "$S/$name.base" "$S/$name.1" "$PR" bp_caused)"
	read -ra DROP <<<"$(delta "$S/$name.base" "$S/$name.1" "$PR" drop_tc_full)"
	SHARE=$(/usr/bin/python3 -c 'import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); print("%.2f" % (b / max(a + b, 1)))' "${D[1]}" "${D[3]}")
	note "$name ($*): bytes to node$R per class in $((DUR / 2)) s ${D[*]}; class 3's share $SHARE; ib_write_bw MB/s class 1 $(bw_of "$PR_DIR/$name.c1.client"), class 3 $(bw_of "$PR_DIR/$name.c3.client"); senders paused per class ${BP[*]}; dropped per class ${DROP[*]}"
	[ "${D[3]}" -gt 0 ] || fail "$name: class 3 carried nothing: ${D[*]}"
}
# moving NAME CLASS: CLASS has carried 1 MB to R's port since NAME.base.
moving() {
	local d
	snap "$S/$1.now"
	read -ra d <<<"$(delta "$S/$1.base" "$S/$1.now" "$PR" tx_bytes)"
	[ "${d[$2]}" -ge 1000000 ]
}
# in_range NAME VALUE LOW HIGH
in_range() {
	/usr/bin/python3 -c 'import sys; v, lo, hi = map(float, sys.argv[1:]); sys.exit(not lo <= v <= hi)' "$2" "$3" "$4" ||
		fail "$1: class 3's share $2, want $3..$4"
	echo "PASS $1: class 3's share of node$R's port $2 (bytes per class ${D[*]})"
}
compete equal
in_range equal-weights "$SHARE" 0.25 0.75
share_eq=$SHARE
compete strict strict=3
in_range strict-priority "$SHARE" 0.85 1
[ "${DROP[1]}${DROP[3]}" = 00 ] || fail "strict: lossless classes dropped: ${DROP[*]}"
compete weighted weights=1:1,3:4
in_range weighted-1:4 "$SHARE" 0.6 0.95
/usr/bin/python3 -c 'import sys; sys.exit(not float(sys.argv[2]) >= float(sys.argv[1]) + 0.1)' "$share_eq" "$SHARE" ||
	fail "weights 1:4 gave class 3 $SHARE, equal weights $share_eq"
# class 1 lossy: it drops instead of pausing node A; class 3 loses nothing
compete lossy weights=1:1,3:4 lossless=3
[ "${DROP[1]}" -gt 0 ] || fail "lossy: class 1 dropped nothing (${DROP[*]}): its queue never filled?"
[ "${DROP[3]}" = 0 ] || fail "lossy: lossless class 3 dropped ${DROP[3]} frames"
[ "${BP[1]}" = 0 ] || fail "lossy: class 1 paused its sender ${BP[1]} times"
echo "PASS lossy-class: class 1 dropped ${DROP[1]} frames and paused nobody; class 3 dropped none, paused its sender ${BP[3]} times; class 3's share $SHARE"
"$LAB" switch -- show-qos "$PR"
