#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# rping over RDMA CM between two RDMA nodes (default cnuas nodes 0 and 1,
# CNUAS_PAIR="A B" for others): server on A, client on B, RPING_COUNT
# (default 1000, 100 on IB) pings with -v and -V (each side checks the data of every
# RDMA READ/WRITE round); both exit 0 and the client shows every ping.
# Then RPING6_COUNT (default 100) more over the lab's IPv6 addresses, so RDMA
# CM resolves and connects through the RoCE v2 IPv6 GIDs too.
# timeout: 600
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"
# rping_case NAME ADDR COUNT: server on A at ADDR, client on B, verified.
rping_case() {
	local name=$1 ip=$2 count=$3 got
	note "rping $name: server node$A ($DA, $ip), client node$B ($DB), -C $count"
	pair_run "rping-$name" 500 "$A" "$B" "$(cm_listening)" \
		"rping -s -a $ip -v -V -C $count" "rping -c -a $ip -v -V -C $count"
	rping_exit_race || pair_check "rping $name node$B -> node$A failed"
	got=$(grep -c 'ping data: ' "$PR_CLI")
	[ "$got" = "$count" ] || { pair_show; fail "rping $name: client showed $got pings, want $count"; }
	grep -qi mismatch "$PR_SRV" "$PR_CLI" && { pair_show; fail "rping $name: data mismatch reported"; }
	echo "rping $name: $count verified pings node$B -> node$A ($(tail -n 1 "$PR_CLI"))"
}
# On IB 100: RDMA CM's path through the SA and IB CM is the same for
# every ping (the IB lab's cell proves the connection, not the count).
count=1000
[ "$LINK_LAYER" = ib ] && count=100
rping_case ipv4 "$(ip_of "$A")" "${RPING_COUNT:-$count}"
rping_case ipv6 "$(ip6_of "$A")" "${RPING6_COUNT:-100}"
