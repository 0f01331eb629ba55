#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# RDMA between a Debian 12 and a Debian 13 guest on one switch: the same
# cnuas-ibverbs-provider package in rdma-core 44's and 56's libibverbs,
# the modules built by DKMS for 6.1 and 6.12. ibv_rc_pingpong (the
# receiver checks the data) both ways and at 1 MiB, ibv_ud_pingpong, and
# rping with verification; then the Debian 13 cnuas guest with the
# Soft-RoCE guest.
# timeout: 600
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
[ "$(node_distro 0)" != "$(node_distro 1)" ] ||
	note "nodes 0 and 1 both run $(node_distro 0): not a mixed lab"
note "node0 $(node_distro 0), node1 $(node_distro 1)"
pmtu=$(roce_mtu "$MTU")
guest_pingpong rc-0-1 0 1 "-n 20"
guest_pingpong rc-1-0 1 0 "-n 20"
guest_pingpong rc-1M 0 1 "-n 2 -s 1048576 -m $pmtu"

ga=$(gid_index 1 4) gb=$(gid_index 0 4)
pair_run ud 120 1 0 "$(listening 18516)" \
	"ibv_ud_pingpong -d $(rdma_dev 1) -g $ga -p 18516 -c -n 20" \
	"ibv_ud_pingpong -d $(rdma_dev 0) -g $gb -p 18516 -c -n 20 $(ip_of 1)" &&
	grep -q 'iters in' "$PR_CLI" || { pair_show 8; fail "ibv_ud_pingpong node1 <- node0 failed"; }
echo "PASS ud: $(grep -h 'iters in' "$PR_CLI")"

pair_run rping 120 1 0 "$(cm_listening)" \
	"rping -s -V -C 10 -S 4096 -a $(ip_of 1)" \
	"rping -c -V -C 10 -S 4096 -a $(ip_of 1)" ||
	{ pair_show 8; fail "rping node1 <- node0 failed"; }
echo "PASS rping: 10 verified 4 KiB ping-pongs over RDMA CM"

if [ "$RXE_NODES" -ge 1 ]; then
	r=$(first_rxe_node)
	note "node$r: Soft-RoCE on $(node_distro "$r")"
	guest_pingpong rc-rxe 1 "$r" "-n 20"
fi
echo "RDMA works between $(node_distro 0) and $(node_distro 1) guests"
