#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Wire compatibility with Linux Soft-RoCE: a cnuas node and an rdma_rxe node
# (stock virtio-net on the switch's dgram port) run ibv_rc_pingpong (with
# data checks), ib_write_bw and rping over RDMA CM on their IPv6 addresses
# (RPING_COUNT pings, -v -V) in both directions.  Default pair: cnuas
# node 0 and the first rxe node; CNUAS_RXE_PAIR="A B" for others.
# timeout: 600
. "$(dirname "$0")/lib.sh"
[ -n "${CNUAS_RXE_PAIR:-}" ] || [ "$RXE_NODES" -ge 1 ] || skip "needs an rxe node (scripts/lab up --rxe-nodes 1)"
[ -n "${CNUAS_RXE_PAIR:-}" ] || need_cnuas_nodes 1
rdma_pair CNUAS_RXE_PAIR "0 $(first_rxe_node)"
rdma_prep "$A" "$B"
note "node$A $DA (GID $GA) <-> node$B $DB (GID $GB), MTU $MTU"

cases=()
pings=${RPING_COUNT:-50}
port=18700
for dir in fwd rev; do
	if [ $dir = fwd ]; then s=$A c=$B gs=$GA gc=$GB; else s=$B c=$A gs=$GB gc=$GA; fi
	ds=$(rdma_dev "$s") dc=$(rdma_dev "$c")
	cases+=("rc_pingpong.$c-$s")
	pair_bg "rc_pingpong.$c-$s" 120 "$s" "$c" "$(listening $port)" \
		"ibv_rc_pingpong -d $ds -g $gs -p $port -c -n 20" \
		"ibv_rc_pingpong -d $dc -g $gc -p $port -c -n 20 $(ip_of "$s")"
	port=$((port + 1))
	cases+=("write_bw.$c-$s")
	pair_bg "write_bw.$c-$s" 180 "$s" "$c" "$(listening $port)" \
		"ib_write_bw -d $ds -x $gs -F -n ${PERF_ITERS:-20} -p $port" \
		"ib_write_bw -d $dc -x $gc -F -n ${PERF_ITERS:-20} -p $port $(ip_of "$s")"
	port=$((port + 1))
	cases+=("rping6.$c-$s")
	pair_bg "rping6.$c-$s" 180 "$s" "$c" "$(cm_listening)" \
		"rping -s -a $(ip6_of "$s") -v -V -C $pings" "rping -c -a $(ip6_of "$s") -v -V -C $pings"
done
pair_wait

bad=()
for c in "${cases[@]}"; do
	if pair_result "$c" || { [[ $c == rping6.* ]] && rping_exit_race; }; then
		case $c in
		rc_*) r=$(grep -h 'iters in' "$PR_CLI") ;;
		rping6.*)
			n=$(grep -c 'ping data: ' "$PR_CLI")
			r=
			[ "$n" = "$pings" ] && ! grep -qi mismatch "$PR_SRV" "$PR_CLI" &&
				r="$pings verified pings over IPv6 GIDs"
			;;
		*)
			r=$(awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ && $5 + 0 > 0 { print; exit }' "$PR_CLI" "$PR_SRV")
			# perftest's TSC calibration fails on a loaded TCG host (see 47).
			[ -n "$r" ] || ! grep -q 'Correlation coefficient' "$PR_CLI" "$PR_SRV" ||
				r="completed; no rate (perftest could not calibrate the TSC under TCG)"
			;;
		esac
		[ -n "$r" ] && { echo "PASS $c: $(echo "$r" | tr -s ' \t' ' ')"; continue; }
		echo "FAIL $c: no result line"
	else
		echo "FAIL $c"
	fi
	pair_show 10
	bad+=("$c")
done
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} of ${#cases[@]} interop runs failed: ${bad[*]}"
echo "$DA on node$A and $DB on node$B interoperate: RC pingpong, ib_write_bw and IPv6 rping both ways"
