#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The device's RoCEv2 ICRC offload (cnuas-vnic feature RDMA_ICRC) against
# cnuas_ib's software CRC on the same wire: node 0 reloads cnuas_net with
# rdma_offload=0, so it computes and checks every ICRC itself, while node 1
# leaves both to its device. ibv_rc_pingpong (IPv4 and IPv6 GIDs, where the
# device also writes the UDP checksum) must pass both ways with the data
# checked, no ICRC error on either side, the offload counters moving only on
# node 1; then node 0 goes back to the offload.
# timeout: 600
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "0 1"
SW=$A HW=$B

# cnt NODE NAME: a hw counter of cnuas_0.
cnt() {
	lsh -t 30 "$1" "cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/$2"
}
# reload NODE OFFLOAD(0|1): cnuas_net and cnuas_ib again, with rdma_offload.
reload() {
	lsh -t 120 "$1" "rmmod cnuas_ib 2>/dev/null; rmmod cnuas_net &&
		modprobe cnuas_net rdma_offload=$2 && modprobe cnuas_ib" ||
		fail "node$1: reload with rdma_offload=$2 failed"
	cnuas_reconfigure "$1" || fail "node$1: cnuas0 did not come back"
}
trap 'reload "$SW" 1 >/dev/null 2>&1' EXIT

rdma_ready "$HW"
[ "$(lsh -t 30 "$HW" 'cat /sys/module/cnuas_net/parameters/rdma_offload')" = Y ] ||
	fail "node$HW: rdma_offload is not on by default"
lsh -t 30 "$HW" "dmesg | grep -E 'cnuas-vnic 1\.[1-9].*features 0x1[0-9a-f]{2}' >/dev/null" ||
	fail "node$HW: the device did not offer RDMA_ICRC (0x100): $(lsh 30 "$HW" 'dmesg | grep features | tail -1')"
reload "$SW" 0
rdma_prep "$SW" "$HW"
note "node$SW software ICRC, node$HW device ICRC; GIDs $GA/$GB, IPv6 $GA6/$GB6"

names=(tx_icrc_offload rx_icrc_offload rx_icrc_errors rcvd_pkts)
declare -A before
for n in "$SW" "$HW"; do
	for c in "${names[@]}"; do
		before[$n.$c]=$(cnt "$n" "$c") || fail "node$n: no hw counter $c"
	done
done

port=18600
bad=()
# run NAME SERVER CLIENT GSRV GCLI ARGS
run() {
	local name=$1 s=$2 c=$3 gs=$4 gc=$5 args=$6
	if pair_run "$name" 120 "$s" "$c" "$(listening $port)" \
		"ibv_rc_pingpong -d cnuas_0 -g $gs -p $port -c $args" \
		"ibv_rc_pingpong -d cnuas_0 -g $gc -p $port -c $args $(ip_of "$s")" &&
		grep -q 'iters in' "$PR_CLI"; then
		echo "PASS $name: $(grep -h 'iters in' "$PR_CLI")"
	else
		echo "FAIL $name"
		pair_show 8
		bad+=("$name")
	fi
	port=$((port + 1))
}
run sw-srv-v4 "$SW" "$HW" "$GA" "$GB" "-n 20 -s 65536"
run hw-srv-v4 "$HW" "$SW" "$GB" "$GA" "-n 20 -s 65536"
run sw-srv-v6 "$SW" "$HW" "$GA6" "$GB6" "-n 20 -s 65536"
run hw-srv-v6 "$HW" "$SW" "$GB6" "$GA6" "-n 20 -s 4096"
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} runs failed: ${bad[*]}"

declare -A d
for n in "$SW" "$HW"; do
	for c in "${names[@]}"; do
		d[$n.$c]=$(($(cnt "$n" "$c") - before[$n.$c]))
	done
	echo "node$n: tx_icrc_offload +${d[$n.tx_icrc_offload]} rx_icrc_offload +${d[$n.rx_icrc_offload]} rx_icrc_errors +${d[$n.rx_icrc_errors]} rcvd_pkts +${d[$n.rcvd_pkts]}"
done
[ "${d[$SW.rx_icrc_errors]}" = 0 ] && [ "${d[$HW.rx_icrc_errors]}" = 0 ] ||
	fail "ICRC errors between the software and the device CRC"
[ "${d[$SW.tx_icrc_offload]}" = 0 ] && [ "${d[$SW.rx_icrc_offload]}" = 0 ] ||
	fail "node$SW used the offload with rdma_offload=0"
# 4 x 20 round trips of >= 1 packet each way, plus the ACKs.
[ "${d[$HW.tx_icrc_offload]}" -ge 80 ] || fail "node$HW: only ${d[$HW.tx_icrc_offload]} frames with the device's ICRC"
[ "${d[$HW.rx_icrc_offload]}" -ge "${d[$HW.rcvd_pkts]}" ] ||
	fail "node$HW: ${d[$HW.rcvd_pkts]} packets, only ${d[$HW.rx_icrc_offload]} checked by the device"
[ "${d[$SW.rcvd_pkts]}" -ge 80 ] || fail "node$SW received only ${d[$SW.rcvd_pkts]} packets"

trap - EXIT
reload "$SW" 1
echo "software and device ICRCs agree both ways over IPv4 and IPv6"
