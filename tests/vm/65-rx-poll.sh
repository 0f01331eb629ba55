#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The device's RX poll page (cnuas-vnic 1.3, feature RX_POLL): cnuas_ib
# offers it to every verbs context, the provider maps it read-only and
# reads it whenever a CQ poll finds nothing, so a busy poller's own vCPU
# delivers the frames it waits for. An ib_send_lat ping-pong must make
# both devices count poll reads and frames those reads moved, with the
# page mapped read-only (4 KiB, r--s) in the client; with CNUAS_RX_POLL=0
# the provider leaves it alone and the ping-pong still passes.
# timeout: 300
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"

# hw NODE NAME: a cnuas-vnic counter (ethtool -S hw_NAME).
hw() {
	lsh -t 30 "$1" "ethtool -S cnuas0 | awk '\$1 == \"hw_$2:\" { print \$2 }'"
}
for n in "$A" "$B"; do
	lsh -t 30 "$n" "dmesg | grep -E 'cnuas-vnic 1\.([3-9]|[1-9][0-9]).*features' >/dev/null" ||
		skip "node$n: device older than 1.3 (no RX poll page)"
	[ -n "$(hw "$n" rx_polls)" ] || fail "node$n: no hw_rx_polls counter"
done

port=18650
# pingpong NAME ENV: ib_send_lat between A (server) and B (client); the
# client also saves the uverbs mappings of the tool to /tmp/rx-poll.maps.
pingpong() {
	# -F: a failed clock calibration (see 47) does not fail a run that
	# completed; the counters below are what is checked.
	local env=$2 gid=1 args="-d cnuas_0 -F -s 2 -n 3000"
	if ! pair_run "$1" 120 "$A" "$B" "$(listening $port)" \
		"env $env ib_send_lat $args -x $gid -p $port" \
		"sh -c 'env $env ib_send_lat $args -x $gid -p $port $(ip_of "$A") & p=\$!
			for i in \$(seq 100); do grep -q uverbs /proc/\$p/maps 2>/dev/null && break; sleep 0.05; done
			grep uverbs /proc/\$p/maps >/tmp/rx-poll.maps; wait \$p'" ||
		! grep -q 't_typical' "$PR_CLI"; then
		pair_show 10
		fail "$1: ib_send_lat failed"
	fi
	echo "PASS $1: $(grep -A1 t_typical "$PR_CLI" | tail -1 | awk '{ print "t_typical " $5 " us, t_avg " $6 " us" }')"
	port=$((port + 1))
}

declare -A polls frames
for n in "$A" "$B"; do
	polls[$n]=$(hw "$n" rx_polls) frames[$n]=$(hw "$n" rx_poll_frames)
done
pingpong poll-on CNUAS_RX_POLL=1
maps=$(lsh -t 30 "$B" 'cat /tmp/rx-poll.maps')
ro=0
while read -r range perm _; do
	[ "$perm" = r--s ] && [ $((0x${range#*-} - 0x${range%-*})) = 4096 ] && ro=1
done <<<"$maps"
[ $ro = 1 ] || fail "node$B: no read-only 4 KiB uverbs mapping (the poll page): $maps"
echo "$maps" | grep -q 'rw.s' || fail "node$B: no ring mappings? $maps"
for n in "$A" "$B"; do
	dp=$(($(hw "$n" rx_polls) - polls[$n])) df=$(($(hw "$n" rx_poll_frames) - frames[$n]))
	echo "node$n: +$dp poll reads moved +$df frames"
	# Every one of the 3000 messages each side waits for ends an empty poll.
	[ "$dp" -ge 3000 ] || fail "node$n: only $dp poll reads in 3000 round trips"
	[ "$df" -gt 0 ] || fail "node$n: the poll reads moved no frame"
done

for n in "$A" "$B"; do polls[$n]=$(hw "$n" rx_polls); done
pingpong poll-off CNUAS_RX_POLL=0
for n in "$A" "$B"; do
	dp=$(($(hw "$n" rx_polls) - polls[$n]))
	[ "$dp" = 0 ] || fail "node$n: $dp poll reads with CNUAS_RX_POLL=0"
done
echo "busy pollers deliver through the poll page; CNUAS_RX_POLL=0 turns it off"
