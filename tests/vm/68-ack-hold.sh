#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Held ACKs (cnuas_ib parameter ack_hold): the ACK of a one-packet message
# waits for the QP's next request and leaves behind it, in the same
# doorbell. In ib_send_lat and ib_write_lat ping-pongs (3000 round trips)
# nearly every ACK of both nodes must go that way (hw counter
# ack_with_request), almost none with ack_hold=0 (below); the tools
# pass either way, and their last message, which nothing answers, still
# completes (its ACK waits for a timer tick at most, or for two if the
# first came within 1 ms). A QP that sends no requests holds no ACK
# (oneway below).
# timeout: 300
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"

# hwc NODE NAME: a cnuas_0 hw counter.
hwc() {
	lsh -t 30 "$1" "cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/$2"
}
hold() {
	local n
	for n in "$A" "$B"; do
		lsh -t 30 "$n" "echo $1 > /sys/module/cnuas_ib/parameters/ack_hold" ||
			fail "node$n: cannot set ack_hold=$1"
	done
}
for n in "$A" "$B"; do
	[ -n "$(hwc "$n" ack_with_request 2>/dev/null)" ] || fail "node$n: no ack_with_request counter"
done
trap 'hold 1 >/dev/null 2>&1' EXIT

port=18680
# pingpong TOOL HOLD MIN MAX: run TOOL with ack_hold=HOLD; each node's
# ack_with_request must move by MIN..MAX. A held ACK that waits over 1 ms
# in vain (ack_hold_expired) goes alone: the last message's does, on one
# node, after the run; one more means a peer stalled mid-run, and two in
# a row send the QP's ACKs alone for 100 ms of round trips.
pingpong() {
	local tool=$1 args="-d cnuas_0 -s 2 -n 3000 -x 1" n d extra min tavg try
	local -A c0 e0 dd
	hold "$2"
	# The bound below needs t_avg, so no -F: perftest's calibration of its
	# clock (get_cpu_mhz(): TSC against gettimeofday, r^2 < 0.9 on a loaded
	# TCG host; in Debian 12's 4.5 and upstream alike) can end a run that
	# completed with exit 1 and no report. Such a run is tried again, at
	# most twice, and says RETRY (as 69); any other failure stands.
	for try in 1 2 3; do
		for n in "$A" "$B"; do
			c0[$n]=$(hwc "$n" ack_with_request)
			e0[$n]=$(hwc "$n" ack_hold_expired)
		done
		pair_run "$tool-hold$2" 120 "$A" "$B" "$(listening $port)" \
			"$tool $args -p $port" "$tool $args -p $port $(ip_of "$A")" &&
			grep -q 't_typical' "$PR_CLI" && break
		port=$((port + 1))
		if [ "$try" = 3 ] || ! grep -q 'Correlation coefficient' "$PR_CLI" "$PR_SRV"; then
			pair_show 10
			fail "$tool with ack_hold=$2 failed"
		fi
		echo "# $tool ack_hold=$2: RETRY $try: perftest could not calibrate its clock (r^2 < 0.9)"
	done
	port=$((port + 1))
	tavg=$(grep -A1 t_typical "$PR_CLI" | tail -1 | awk '{ print $6 }')
	extra=-1
	for n in "$A" "$B"; do
		dd[$n]=$(($(hwc "$n" ack_with_request) - c0[$n]))
		extra=$((extra + $(hwc "$n" ack_hold_expired) - e0[$n]))
	done
	[ "$extra" -ge 0 ] || extra=0
	# 100 ms of round trips (each two t_avg) per mid-run stall.
	min=$(awk -v m="$3" -v x="$extra" -v t="$tavg" \
		'BEGIN { m -= x * 100000 / (2 * t); print (m > 0 ? int(m) : 0) }')
	for n in "$A" "$B"; do
		d=${dd[$n]}
		[ "$d" -ge "$min" ] && [ "$d" -le "$4" ] ||
			fail "$tool ack_hold=$2: node$n sent $d ACKs behind a request (want $min..$4; $extra mid-run stalls)"
		echo "PASS $tool ack_hold=$2: node$n +$d ACKs behind a request" \
			"(want $min..$4, $extra mid-run stalls), t_avg $tavg us"
	done
}

# oneway: a QP that only receives holds no ACK. cnuas-rnr -M oneway:
# the server's QP, at RTS, takes 5000 SENDs and sends no request; the
# client sends each after the last one completed. Each ACK that waited
# would stall the client for a timer tick (ack_hold_expired: 9 in this
# run here while holds ignored what the QP sends, one per 100 ms). None
# may wait in vain, and none leaves behind a request.
oneway() {
	local args="-d cnuas_0 -M oneway -n 5000 -T 100 -p $port" e0 w0 de dw
	hold 1
	e0=$(hwc "$A" ack_hold_expired)
	w0=$(hwc "$A" ack_with_request)
	if ! pair_run oneway 120 "$A" "$B" "$(listening $port)" \
		"cnuas-rnr $args" "cnuas-rnr $args $(ip_of "$A")" ||
		! grep -q 'PASS oneway' "$PR_CLI"; then
		pair_show 10
		fail "cnuas-rnr -M oneway failed"
	fi
	port=$((port + 1))
	de=$(($(hwc "$A" ack_hold_expired) - e0))
	dw=$(($(hwc "$A" ack_with_request) - w0))
	[ "$de" = 0 ] ||
		fail "receive-only QP: $de of node$A's ACKs waited for a timer in vain (want none)"
	[ "$dw" = 0 ] ||
		fail "receive-only QP: node$A sent $dw ACKs behind a request, but it sent none"
	echo "PASS receive-only QP: node$A held no ACK of 5000 SENDs (cnuas-rnr -M oneway)"
}

# Each node owes 3000 ACKs; a timer tick sends none alone that waited
# less than 1 ms, so only stalls (counted above) may take many.
pingpong ib_send_lat 1 2950 3000
pingpong ib_write_lat 1 2950 3000
# With ack_hold=0 an ACK never waits, but it still leaves behind a
# request when the application posted that request before the worker
# that owes the ACK ran (both then go in one run): 1 of 3000 in a soak
# run on a loaded host. Up to 1% may; a hold that still worked would
# send nearly all of them that way.
pingpong ib_send_lat 0 0 30
pingpong ib_write_lat 0 0 30
oneway
echo "ping-pong ACKs leave behind the answer; ack_hold=0 sends them alone;" \
	"a QP that sends nothing holds none"
