#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# rping over RDMA CM between two RDMA nodes (default cnuas nodes 0 and 1,
# CNUAS_PAIR="A B" for others): server on A, client on B, RPING_COUNT
# (default 1000) pings with -v and -V (each side checks the data of every
# RDMA READ/WRITE round); both exit 0 and the client shows every ping.
# timeout: 600
. "$(dirname "$0")/lib.sh"
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"
count=${RPING_COUNT:-1000}
ip=$(ip_of "$A")
note "rping server node$A ($DA, $ip), client node$B ($DB), -C $count"
pair_run rping 500 "$A" "$B" "$(cm_listening)" \
	"rping -s -a $ip -v -V -C $count" "rping -c -a $ip -v -V -C $count"
pair_check "rping node$B -> node$A failed"
got=$(grep -c 'ping data: ' "$PR_CLI")
[ "$got" = "$count" ] || { pair_show; fail "client showed $got pings, want $count"; }
grep -qi mismatch "$PR_SRV" "$PR_CLI" && { pair_show; fail "data mismatch reported"; }
echo "rping: $count verified pings node$B -> node$A ($(tail -n 1 "$PR_CLI"))"
