#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A stock virtio-net guest (switch dgram port) pings a cnuas guest.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
need_virtio_node
need_eth
v=$(virtio_node)
wait_ping "$v" "$(ip_of 0)" 30 || fail "virtio node$v cannot reach node0"
out=$(lsh -t 60 "$v" "ping -q -c 50 -i 0.05 -W 5 $(ip_of 0)") || true
echo "node$v (virtio) -> node0: $(echo "$out" | grep 'packet loss')"
echo "$out" | grep -q ' 0% packet loss' || fail "virtio -> cnuas lost packets: $out"
