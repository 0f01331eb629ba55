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
case_() {
	local name=$1 tool=$2 ga=$3 gb=$4 args=$5
	cases+=("$name")
	pair_bg "$name" 120 "$A" "$B" "$(listening $port)" \
		"$tool -d $DA -g $ga -p $port -c $args" \
		"$tool -d $DB -g $gb -p $port -c $args $(ip_of "$A")"
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

bad=()
for c in "${cases[@]}"; do
	if pair_result "$c" && grep -q 'iters in' "$PR_CLI" && grep -q 'iters in' "$PR_SRV"; then
		echo "PASS $c: $(grep -h 'iters in' "$PR_CLI")"
	else
		echo "FAIL $c"
		pair_show 8
		bad+=("$c")
	fi
done
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} of ${#cases[@]} pingpong runs failed: ${bad[*]}"
echo "all ${#cases[@]} pingpong runs passed between node$A ($DA) and node$B ($DB)"
