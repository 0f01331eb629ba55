#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Adaptive threaded NAPI (cnuas_net parameter napi_thread): while NAPI
# polls leave frames behind, NAPI runs in its own kernel thread at nice
# -20, so a busy-polling verbs client cannot starve the transport it waits
# for; it goes back to softirq once polls keep up again. ib_read_bw (64
# KiB, the client reads) loads the client's receive path: its polls must
# leave work behind (napi_full_polls), NAPI must switch to the thread
# (napi_thread_switches, sysfs "threaded" seen 1 during the run with the
# thread at nice -20) and back within a second of the end. With
# napi_thread=0 the same run passes and NAPI never leaves softirq.
# timeout: 300
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"

# drv NODE NAME: a cnuas_net driver counter (ethtool -S NAME).
drv() {
	lsh -t 30 "$1" "ethtool -S cnuas0 | awk '\$1 == \"$2:\" { print \$2 }'"
}
param() {
	lsh -t 30 "$B" "echo $1 > /sys/module/cnuas_net/parameters/napi_thread" ||
		fail "node$B: cannot set napi_thread=$1"
}
threaded() { lsh -t 30 "$B" "cat /sys/class/net/cnuas0/threaded"; }
unthreaded() { [ "$(threaded)" = 0 ]; }
[ -n "$(drv "$B" napi_thread_switches)" ] || fail "node$B: no napi_thread_switches counter"
trap 'param 1 >/dev/null 2>&1' EXIT

port=18690
# readbw PARAM: ib_read_bw with napi_thread=PARAM; the client samples
# sysfs "threaded" and the NAPI thread's nice level into /tmp/napi.seen
# (at nice -20 itself, or the load leaves it no CPU).
# perftest times with the TSC, calibrated against gettimeofday; on a
# loaded TCG host that calibration can fail after the run ("Correlation
# coefficient r^2 ... < 0.9", no report, exit 1: see 47). Such a run is
# tried again, at most twice, and says RETRY; any other failure stands.
# Upstream: perftest's get_cpu_mhz() calibration, not fixed as of the
# perftest 4.5 of Debian 12 (no release known to fix it).
readbw() {
	local args="-d cnuas_0 -s 65536 -n 10000 -x 1" try
	param "$1"
	for try in 1 2 3; do
		pair_run "read-bw-napi$1" 120 "$A" "$B" "$(listening $port)" \
			"ib_read_bw $args -p $port" \
			"sh -c 'rm -f /tmp/napi.seen; ib_read_bw $args -p $port $(ip_of "$A") & p=\$!
				renice -n -20 \$\$ >/dev/null
				while kill -0 \$p 2>/dev/null; do
					t=\$(cat /sys/class/net/cnuas0/threaded)
					ni=\$(cut -d\" \" -f19 /proc/\$(pgrep -o napi/cnuas0)/stat 2>/dev/null)
					echo \"\$t \$ni\" >>/tmp/napi.seen; sleep 0.1
				done; wait \$p'" && grep -q 'BW average' "$PR_CLI" && break
		port=$((port + 1))
		if [ "$try" = 3 ] || ! grep -q 'Correlation coefficient' "$PR_CLI"; then
			pair_show 10
			fail "ib_read_bw with napi_thread=$1 failed"
		fi
		echo "# ib_read_bw napi_thread=$1: RETRY $try: perftest 4.5 could not calibrate the TSC (r^2 < 0.9)"
	done
	port=$((port + 1))
	echo "PASS ib_read_bw napi_thread=$1:" \
		"$(grep -A1 'BW average' "$PR_CLI" | tail -1 | awk '{ print $4 " MB/s" }')"
}

f0=$(drv "$B" napi_full_polls)
s0=$(drv "$B" napi_thread_switches)
readbw 1
f1=$(drv "$B" napi_full_polls)
s1=$(drv "$B" napi_thread_switches)
[ "$f1" -gt "$f0" ] || fail "node$B: no NAPI poll left work behind during ib_read_bw"
[ "$s1" -gt "$s0" ] || fail "node$B: $((f1 - f0)) polls left work behind, NAPI never went to its thread"
lsh -t 30 "$B" "grep -q '^1 -20$' /tmp/napi.seen" ||
	fail "node$B: never saw threaded NAPI at nice -20 during the run: $(lsh -t 30 "$B" "sort /tmp/napi.seen | uniq -c" | tr '\n' ' ')"
echo "PASS napi_thread=1: $((f1 - f0)) full polls, $((s1 - s0)) switch(es) to the NAPI thread at nice -20"
wait_for 5 unthreaded ||
	fail "node$B: NAPI still threaded 5 s after the load ended"
echo "PASS back in softirq after the load"

readbw 0
f2=$(drv "$B" napi_full_polls)
s2=$(drv "$B" napi_thread_switches)
[ "$s2" -eq "$s1" ] || fail "node$B: napi_thread=0 yet NAPI went to its thread $((s2 - s1)) time(s)"
lsh -t 30 "$B" "! grep -q '^1' /tmp/napi.seen" || fail "node$B: threaded with napi_thread=0"
[ "$(threaded)" = 0 ] || fail "node$B: threaded after a napi_thread=0 run"
echo "PASS napi_thread=0: $((f2 - f1)) full polls, NAPI stayed in softirq"
