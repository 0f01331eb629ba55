#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# rmmod cnuas_net; modprobe cnuas_net on node 0: cnuas0 comes back and
# ping works again.
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
trap 'lsh -t 30 0 "modprobe cnuas_net" >/dev/null 2>&1; cnuas_reconfigure 0 >/dev/null 2>&1' EXIT
# A cnuas_ib on top (if loaded) has to go first and comes back after.
had_ib=$(lsh 0 'grep -q "^cnuas_ib " /proc/modules && echo 1 || echo 0')
[ "$had_ib" = 1 ] && { lsh 0 'rmmod cnuas_ib' || fail "rmmod cnuas_ib failed"; }
lsh -t 60 0 'rmmod cnuas_net' || fail "rmmod cnuas_net failed"
lsh 0 '! grep -q "^cnuas_net " /proc/modules && [ ! -e /sys/class/net/cnuas0 ]' || fail "cnuas_net still there"
lsh -t 60 0 'modprobe cnuas_net' || fail "modprobe cnuas_net failed"
[ "$had_ib" = 1 ] && { lsh 0 'modprobe cnuas_ib' || fail "modprobe cnuas_ib failed"; }
cnuas_reconfigure 0 || fail "cnuas0 did not come back"
trap - EXIT
wait_ping 0 "$(ip_of 1)" 30 || fail "node0 cannot reach node1 after reload"
out=$(lsh -t 60 0 "ping -q -c 50 -i 0.02 -W 5 $(ip_of 1)") || true
echo "$out" | grep -q ' 0% packet loss' || fail "lossy after reload: $out"
echo "after reload: $(echo "$out" | grep 'packet loss')"
