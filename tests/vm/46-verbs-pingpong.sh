#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The libibverbs examples between two RDMA nodes (default cnuas nodes 0 and
# 1, CNUAS_PAIR="A B" for others): ibv_rc_pingpong, ibv_ud_pingpong and
# ibv_srq_pingpong with the default and a large size (1 MiB for RC/SRQ at
# path MTU 4096, the path MTU for UD), polling and with -e (CQ events), all
# with -c (the receiver checks the data); RC also over the IPv6 GIDs of the
# lab's fd00:198:18::/64 addresses (polling at the default size, events at
# 1 MiB).  Iteration counts are small: TCG.
# timeout: 600
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"
note "server node$A $DA (GID $GA, IPv6 $GA6), client node$B $DB (GID $GB, IPv6 $GB6), MTU $MTU"

# The largest UD payload and RC path MTU: the lab MTU's RoCE MTU.
pmtu=$(roce_mtu "$MTU")
ud_max=$pmtu

# case NAME TOOL GA GB ARGS: queue one server/client run on its own port.
port=18515
cases=()
declare -A run
# On IB the IPv4 cases go by LID alone, no GRH (GID "-"): the switch
# forwards by DLID; the IPv6 ones carry GID 0's GRH.
[ "$LINK_LAYER" = ib ] && GA=- GB=-
gid_opt() { [ "$1" = - ] || echo "-g $1"; }
# run_case NAME TIMEOUT: NAME's pair as case_ set it up.
run_case() {
	local -a r
	read -r -a r <<<"${run[$1]}"
	pair_bg "$1" "$2" "$A" "$B" "$(listening "${r[0]}")" \
		"${r[1]} -d $DA $(gid_opt "${r[2]}") -p ${r[0]} -c ${r[*]:4}" \
		"${r[1]} -d $DB $(gid_opt "${r[3]}") -p ${r[0]} -c ${r[*]:4} $(ip_of "$A")"
}
case_() {
	cases+=("$1")
	run[$1]="$port $2 $3 $4 $5"
	run_case "$1" 120
	port=$((port + 1))
}
for ev in "" "-e"; do
	case_ "rc$ev" ibv_rc_pingpong "$GA" "$GB" "-n 20 $ev"
	case_ "rc-1M$ev" ibv_rc_pingpong "$GA" "$GB" "-n 2 -s 1048576 -m $pmtu $ev"
	case_ "ud$ev" ibv_ud_pingpong "$GA" "$GB" "-n 20 $ev"
	case_ "ud-$ud_max$ev" ibv_ud_pingpong "$GA" "$GB" "-n 20 -s $ud_max $ev"
	case_ "srq$ev" ibv_srq_pingpong "$GA" "$GB" "-n 4 -q 4 $ev"
	case_ "srq-1M$ev" ibv_srq_pingpong "$GA" "$GB" "-n 2 -q 4 -s 1048576 -m $pmtu $ev"
done
case_ "rc-ipv6" ibv_rc_pingpong "$GA6" "$GB6" "-n 20"
case_ "rc-ipv6-1M-e" ibv_rc_pingpong "$GA6" "$GB6" "-n 2 -s 1048576 -m $pmtu -e"
pair_wait

# passed CASE: both sides of CASE's last run completed every iteration.
passed() { pair_result "$1" && grep -q 'iters in' "$PR_CLI" && grep -q 'iters in' "$PR_SRV"; }

# Across a tunnel (CNUAS_LOSSY_PATH=1, set by test 78) the path is
# not lossless: the tunnel's TAP ports and bridges may drop under the RC
# cases' bursts (OVS's userspace datapath did, when test 87 ran this).
# RC repairs a loss, but two losses end a pingpong in the tool, not in the
# device: UD has no recovery and ibv_ud_pingpong waits forever for a lost
# datagram; and an RC client exits once it has its last message, so a lost
# ACK for that message leaves the server retrying to a destroyed QP
# ("transport retry counter exceeded") after the client passed. Such a
# case runs again, alone, twice at most, and says so; any other failure
# stands. Not a retry around our code: the loss is the lossy path's by
# design (test 78 only), and neither tool can recover from it
# (rdma-core's ibv_ud_pingpong has no timeout; ibv_rc_pingpong's client
# does not wait for its last ACK): no upstream fix to wait for.
lost() {
	case $1 in
	ud*) return 0 ;;
	esac
	[ "$PR_CLI_RC" = 0 ] && grep -q 'iters in' "$PR_CLI" &&
		grep -q 'transport retry counter exceeded' "$PR_SRV"
}
if [ "${CNUAS_LOSSY_PATH:-0}" = 1 ]; then
	for c in "${cases[@]}"; do
		try=1
		while ! passed "$c" && lost "$c" && [ $try -lt 3 ]; do
			try=$((try + 1))
			note "$c: a packet lost on the lossy path (server exit $PR_SRV_RC, client $PR_CLI_RC); try $try alone"
			CNUAS_PAIR_JOBS=1 run_case "$c" 30
		done
	done
fi

bad=()
for c in "${cases[@]}"; do
	if passed "$c"; then
		echo "PASS $c: $(grep -h 'iters in' "$PR_CLI")"
	else
		echo "FAIL $c"
		pair_show 8
		bad+=("$c")
	fi
done
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} of ${#cases[@]} pingpong runs failed: ${bad[*]}"
echo "all ${#cases[@]} pingpong runs passed between node$A ($DA) and node$B ($DB)"
