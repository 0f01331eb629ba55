#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# perftest between two RDMA nodes (default cnuas nodes 0 and 1,
# CNUAS_PAIR="A B" for others), each tool in both directions (client on A
# and server on B, then the reverse): RC ib_send_bw, ib_write_bw,
# ib_read_bw, ib_atomic_bw, ib_send_lat, ib_write_lat, ib_read_lat,
# ib_atomic_lat, and ib_send_bw -c UD.  Both ends must exit 0 and the
# client's result line must show a nonzero bandwidth (or latency).
# Iteration counts are small (PERF_ITERS, default 20): TCG.
# timeout: 900
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"
iters=${PERF_ITERS:-20}
note "node$A $DA (GID $GA) <-> node$B $DB (GID $GB), MTU $MTU, -n $iters"

port=18600
# On IB by LID alone, no GRH: the switch forwards by DLID (46[ib] has
# the GRH cases).
gid_opt() { [ "$LINK_LAYER" = ib ] || echo "-x $1"; }
cases=()
# perf NAME TOOL ARGS: queue TOOL in both directions.
perf() {
	local name=$1 tool=$2 args=$3 s c gs gc ds dc
	for dir in fwd rev; do
		if [ $dir = fwd ]; then s=$B c=$A; else s=$A c=$B; fi
		gs=$([ "$s" = "$A" ] && echo "$GA" || echo "$GB")
		gc=$([ "$c" = "$A" ] && echo "$GA" || echo "$GB")
		ds=$(rdma_dev "$s") dc=$(rdma_dev "$c")
		cases+=("$name.$c-$s")
		pair_bg "$name.$c-$s" 180 "$s" "$c" "$(listening $port)" \
			"$tool -d $ds $(gid_opt "$gs") -F -n $iters -p $port $args" \
			"$tool -d $dc $(gid_opt "$gc") -F -n $iters -p $port $args $(ip_of "$s")"
		port=$((port + 1))
	done
}
perf send_bw ib_send_bw ""
perf write_bw ib_write_bw ""
perf read_bw ib_read_bw ""
perf atomic_bw ib_atomic_bw ""
perf send_bw_ud ib_send_bw "-c UD"
perf send_lat ib_send_lat ""
perf write_lat ib_write_lat ""
perf read_lat ib_read_lat ""
perf atomic_lat ib_atomic_lat ""
pair_wait

# result FILE COLUMN: the COLUMN of the numbers line after perftest's
# "#bytes" header, when it is above zero: the message rate (5th: tiny
# atomics round BW to 0.00 MB/s) for _bw, t_avg (6th) for _lat.
result() {
	awk -v c="$2" '/#bytes/ { hdr = 1; next }
		hdr && $1 ~ /^[0-9]+$/ { if ($c + 0 > 0) print; exit }' "$1"
}
bad=()
for c in "${cases[@]}"; do
	col=5
	case $c in *_lat.*) col=6 ;; esac
	if pair_result "$c"; then
		line=$(result "$PR_CLI" $col)
		[ -n "$line" ] || line=$(result "$PR_SRV" $col)
		if [ -n "$line" ]; then
			echo "PASS $c: $(echo "$line" | tr -s ' \t' ' ')"
			continue
		fi
		# perftest times with the TSC, calibrated against gettimeofday; on
		# a loaded TCG host that fails (r^2 < 0.9) and it reports 0. The
		# run itself completed (both ends exit 0 after every completion).
		if grep -q 'Correlation coefficient' "$PR_CLI" "$PR_SRV"; then
			echo "PASS $c: completed; no rate (perftest could not calibrate the TSC under TCG)"
			continue
		fi
		echo "FAIL $c: no nonzero result in the outputs"
	else
		echo "FAIL $c"
	fi
	pair_show 10
	bad+=("$c")
done
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} of ${#cases[@]} perftest runs failed: ${bad[*]}"
echo "all ${#cases[@]} perftest runs passed between node$A ($DA) and node$B ($DB)"
