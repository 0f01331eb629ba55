#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# 1000 pings at 10 ms in each direction over cnuas0, no loss.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
for dir in "0 1" "1 0"; do
	set -- $dir
	wait_ping "$1" "$(ip_of "$2")" 30 || fail "node$1 cannot reach $(ip_of "$2")"
	out=$(lsh -t 180 "$1" "ping -q -c 1000 -i 0.01 -W 5 $(ip_of "$2")") || true
	summary=$(echo "$out" | grep 'packet loss')
	echo "node$1 -> node$2: $summary"
	echo "$summary" | grep -q '^1000 packets transmitted, 1000 received, 0% packet loss' ||
		fail "node$1 -> node$2 lost packets: $out"
done
