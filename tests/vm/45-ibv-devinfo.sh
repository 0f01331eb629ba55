#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# What libibverbs shows of the RDMA device of two nodes (default cnuas
# nodes 0 and 1, CNUAS_PAIR="A B" for others): ibv_devices lists it (so the
# provider loads); ibv_devinfo -v shows PORT_ACTIVE, link layer Ethernet,
# the active MTU the lab's netdev MTU allows (4096 at the lab's default
# 9000), sane limits, atomics, and the RoCE v2 GIDs of the lab addresses.
# 15-ib-device checks the kernel side (sysfs, rdma link, events, reloads).
# timeout: 300
. "$(dirname "$0")/lib.sh"
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"
want_mtu=$(roce_mtu "$MTU")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# field NAME: the value after "NAME:" in the ibv_devinfo output.
field() { awk -v k="$1:" '$1 == k { print $2; exit }' "$out"; }
# positive NAME...: each field is a number above zero (decimal or hex).
positive() {
	local f v
	for f in "$@"; do
		v=$(field "$f")
		# Text, not arithmetic: 0xffffffffffffffff overflows bash.
		[[ $v =~ ^(0x[0-9a-fA-F]+|[0-9]+)$ ]] && ! [[ $v =~ ^(0x)?0+$ ]] ||
			fail "node$n: $f is '${v:-missing}', want > 0"
	done
}

for n in $A $B; do
	dev=$(rdma_dev "$n")
	lsh -t 60 "$n" "ibv_devinfo -v -d $dev" >"$out" 2>&1 || { cat "$out"; fail "node$n: ibv_devinfo -v -d $dev failed"; }
	grep -q "^hca_id:[[:space:]]*$dev\$" "$out" || { head "$out"; fail "node$n: ibv_devinfo does not show $dev"; }
	[ "$(field phys_port_cnt)" = 1 ] || fail "node$n: phys_port_cnt '$(field phys_port_cnt)', want 1"
	grep -q 'transport:[[:space:]]*InfiniBand (0)' "$out" || fail "node$n: transport is not InfiniBand (RoCE)"
	grep -q 'state:[[:space:]]*PORT_ACTIVE (4)' "$out" || { grep 'state:' "$out"; fail "node$n: port not PORT_ACTIVE"; }
	grep -q 'link_layer:[[:space:]]*Ethernet' "$out" || { grep link_layer "$out"; fail "node$n: link layer not Ethernet"; }
	[ "$(field active_mtu)" = "$want_mtu" ] ||
		fail "node$n: active_mtu $(field active_mtu), want $want_mtu (netdev MTU $MTU)"
	[ "$(field max_mtu)" = 4096 ] || fail "node$n: max_mtu $(field max_mtu), want 4096"
	[ "$(field node_guid)" != 0000:0000:0000:0000 ] || fail "node$n: node_guid is zero"
	positive max_mr_size max_qp max_qp_wr max_sge max_cq max_cqe max_mr max_pd max_qp_rd_atom \
		max_qp_init_rd_atom max_ah max_srq max_srq_wr max_srq_sge max_pkeys gid_tbl_len max_msg_sz
	[ $(($(field max_qp_wr))) -ge 256 ] || fail "node$n: max_qp_wr $(field max_qp_wr) < 256"
	[ $(($(field max_cqe))) -ge 256 ] || fail "node$n: max_cqe $(field max_cqe) < 256"
	grep -q 'atomic_cap:[[:space:]]*ATOMIC_HCA' "$out" || { grep atomic_cap "$out"; fail "node$n: atomic_cap is not ATOMIC_HCA"; }
	grep -q "GID\[ *[0-9]*\]:[[:space:]]*::ffff:$(ip_of "$n"), RoCE v2" "$out" ||
		{ grep GID "$out"; fail "node$n: no RoCE v2 GID ::ffff:$(ip_of "$n")"; }
	grep -q "GID\[ *[0-9]*\]:[[:space:]]*$(ip6_of "$n"), RoCE v2" "$out" ||
		{ grep GID "$out"; fail "node$n: no RoCE v2 GID $(ip6_of "$n")"; }
	echo "node$n $dev: PORT_ACTIVE Ethernet active_mtu $want_mtu max_qp $(field max_qp)" \
		"max_qp_wr $(field max_qp_wr) max_cqe $(field max_cqe) max_mr_size $(field max_mr_size)" \
		"max_srq $(field max_srq) atomics ok, IPv4+IPv6 RoCE v2 GIDs"
done
