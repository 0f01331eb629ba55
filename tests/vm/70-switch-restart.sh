#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Killing the switch takes the carrier down on every cnuas guest; restarting
# it brings the carrier back and traffic flows again.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
trap '"$LAB" switch-start >/dev/null 2>&1' EXIT
carrier_is() { lsh -t 20 "$1" "[ \"\$(cat /sys/class/net/cnuas0/carrier 2>/dev/null)\" = $2 ]"; }

"$LAB" switch-kill || fail "switch-kill failed"
for n in 0 1; do
	wait_for 15 carrier_is "$n" 0 || fail "node$n: carrier still up 15 s after the switch died"
	lsh "$n" 'ip link show cnuas0' | grep -q NO-CARRIER || fail "node$n: ip link does not show NO-CARRIER"
done
echo "carrier down on both nodes"
"$LAB" switch-start || fail "switch-start failed"
trap - EXIT
for n in 0 1; do
	wait_for 20 carrier_is "$n" 1 || fail "node$n: carrier not back 20 s after the switch restarted"
done
echo "carrier up again on both nodes"
wait_ping 0 "$(ip_of 1)" 30 || fail "node0 cannot reach node1 after the switch restart"
out=$(lsh -t 60 0 "ping -q -c 50 -i 0.02 -W 5 $(ip_of 1)") || true
echo "$out" | grep -q ' 0% packet loss' || fail "lossy after switch restart: $out"
echo "after restart: $(echo "$out" | grep 'packet loss')"
if [ $((VIRTIO_NODES + ${RXE_NODES:-0})) -ge 1 ]; then
	wait_ping "$(virtio_node)" "$(ip_of 0)" 30 || fail "virtio node lost after switch restart"
fi
