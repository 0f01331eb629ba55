#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# 64 MiB over TCP from node 0 to node 1 arrive intact (sha256).
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
wait_ping 0 "$(ip_of 1)" 30 || fail "node0 cannot reach node1"
r=$(tcp_transfer 0 1 64 5001) || { echo "$r"; exit 1; }
echo "node0 -> node1: $r, sha256 match"
