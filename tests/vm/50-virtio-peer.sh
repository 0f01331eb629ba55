#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A stock virtio-net guest (switch dgram port, or with scripts/lab up
# --virtio-netdev stream a -netdev stream connection) pings a cnuas guest.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
need_virtio_node
need_eth
v=$(virtio_node)
wait_ping "$v" "$(ip_of 0)" 30 || fail "virtio node$v cannot reach node0"
out=$(lsh -t 60 "$v" "ping -q -c 50 -i 0.05 -W 5 $(ip_of 0)") || true
echo "node$v (virtio) -> node0: $(echo "$out" | grep 'packet loss')"
echo "$out" | grep -q ' 0% packet loss' || fail "virtio -> cnuas lost packets: $out"
# the frames went through the switch port kind the lab asked for
kind=${VIRTIO_NETDEV:-dgram}
if [ "${SITES:-1}" = 1 ]; then
	rx=$("$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
print(sum(p["counters"]["rx_frames"] for p in json.load(sys.stdin)["ports"] if p["kind"] == sys.argv[1]))' "$kind") ||
		fail "cannot read the switch"
	[ "$rx" -ge 50 ] || fail "the switch's $kind ports received $rx frames (want >= 50)"
	echo "the virtio guests' $kind ports: $rx frames received"
fi
