#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The device's ICRC offload against cnuas_ib's software CRC on the same
# wire: one node reloads cnuas_net with rdma_offload=0, so it computes and
# checks every ICRC itself, while the other leaves them to its device.
# ibv_rc_pingpong must pass both ways with the data checked, no ICRC
# error on either side, the offload counters moving only on the device's
# side, whose 64 KiB payloads leave from the MR's pages (tx_zero_copy);
# then the node goes back to the offload.
#  - Ethernet (feature RDMA_ICRC): node 0 in software; IPv4 and IPv6 GIDs
#    (where the device also writes the UDP checksum).
#  - InfiniBand (feature IB_CRC, its IB cell): node 1 in
#    software (node 0 runs OpenSM), whose cnuas_net then also adds and
#    checks the VCRC while node 0's device does; by LID (local packets)
#    and with a GRH (global ones, whose ICRC masks differ).
# timeout: 600
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth_or_verbs_over_ib
rdma_pair CNUAS_PAIR "0 1"
P=/sys/class/infiniband/cnuas_0/ports/1
if [ "$LINK_LAYER" = ib ]; then
	need_ib_sm
	SW=$B HW=$A
	# IB_CRC is 0x200 in the features the driver took.
	feat='cnuas-vnic 1\.[4-9].*features 0x[23][0-9a-f]{2}' featname="IB_CRC (0x200)"
	lid=$(lsh "$SW" "cat $P/lid")
else
	SW=$A HW=$B
	feat='cnuas-vnic 1\.[1-9].*features 0x[13][0-9a-f]{2}' featname="RDMA_ICRC (0x100)"
fi

# cnt NODE NAME: a hw counter of cnuas_0.
cnt() {
	lsh -t 30 "$1" "cat $P/hw_counters/$2"
}
# reload NODE OFFLOAD(0|1): cnuas_net and cnuas_ib again, with rdma_offload;
# on IB until the SM has the port Active with its LID again.
reload() {
	lsh -t 120 "$1" "rmmod cnuas_ib 2>/dev/null; rmmod cnuas_net &&
		modprobe cnuas_net rdma_offload=$2 && modprobe cnuas_ib" ||
		fail "node$1: reload with rdma_offload=$2 failed"
	if [ "$LINK_LAYER" = ib ]; then
		ib_port_back "$1" "$lid" "after the reload"
		ipoib_reconfigure "$1" || fail "node$1: ib0 did not come back"
	else
		cnuas_reconfigure "$1" || fail "node$1: cnuas0 did not come back"
	fi
}
trap 'reload "$SW" 1 >/dev/null 2>&1' EXIT

rdma_ready "$HW"
[ "$(lsh -t 30 "$HW" 'cat /sys/module/cnuas_net/parameters/rdma_offload')" = Y ] ||
	fail "node$HW: rdma_offload is not on by default"
lsh -t 30 "$HW" "dmesg | grep -E '$feat' >/dev/null" ||
	fail "node$HW: the device did not offer $featname: $(lsh 30 "$HW" 'dmesg | grep features | tail -1')"
reload "$SW" 0
rdma_prep "$SW" "$HW"
note "node$SW software ICRC, node$HW device ICRC; GIDs $GA/$GB, IPv6 $GA6/$GB6"

names=(tx_icrc_offload rx_icrc_offload rx_icrc_errors rcvd_pkts tx_zero_copy)
[ "$LINK_LAYER" = ib ] && names+=(rx_vcrc_errors)
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
		"ibv_rc_pingpong -d cnuas_0 ${gs:+-g $gs} -p $port -c $args" \
		"ibv_rc_pingpong -d cnuas_0 ${gc:+-g $gc} -p $port -c $args $(ip_of "$s")" &&
		grep -q 'iters in' "$PR_CLI"; then
		echo "PASS $name: $(grep -h 'iters in' "$PR_CLI")"
	else
		echo "FAIL $name"
		pair_show 8
		bad+=("$name")
	fi
	port=$((port + 1))
}
if [ "$LINK_LAYER" = ib ]; then
	# Without -g: by LID, local packets.
	run sw-srv-lid "$SW" "$HW" "" "" "-n 20 -s 65536"
	run hw-srv-lid "$HW" "$SW" "" "" "-n 20 -s 65536"
	run sw-srv-grh "$SW" "$HW" "$GA" "$GB" "-n 20 -s 65536"
	run hw-srv-grh "$HW" "$SW" "$GB" "$GA" "-n 20 -s 4096"
else
	run sw-srv-v4 "$SW" "$HW" "$GA" "$GB" "-n 20 -s 65536"
	run hw-srv-v4 "$HW" "$SW" "$GB" "$GA" "-n 20 -s 65536"
	run sw-srv-v6 "$SW" "$HW" "$GA6" "$GB6" "-n 20 -s 65536"
	run hw-srv-v6 "$HW" "$SW" "$GB6" "$GA6" "-n 20 -s 4096"
fi
[ ${#bad[@]} -eq 0 ] || fail "${#bad[@]} runs failed: ${bad[*]}"

declare -A d
for n in "$SW" "$HW"; do
	for c in "${names[@]}"; do
		d[$n.$c]=$(($(cnt "$n" "$c") - before[$n.$c]))
	done
	echo "node$n: tx_icrc_offload +${d[$n.tx_icrc_offload]} rx_icrc_offload +${d[$n.rx_icrc_offload]} rx_icrc_errors +${d[$n.rx_icrc_errors]} rcvd_pkts +${d[$n.rcvd_pkts]} tx_zero_copy +${d[$n.tx_zero_copy]}"
done
[ "${d[$SW.rx_icrc_errors]}" = 0 ] && [ "${d[$HW.rx_icrc_errors]}" = 0 ] ||
	fail "ICRC errors between the software and the device CRC"
[ "${d[$SW.tx_icrc_offload]}" = 0 ] && [ "${d[$SW.rx_icrc_offload]}" = 0 ] ||
	fail "node$SW used the offload with rdma_offload=0"
# 4 x 20 round trips of >= 1 packet each way, plus the ACKs.
[ "${d[$HW.tx_icrc_offload]}" -ge 80 ] || fail "node$HW: only ${d[$HW.tx_icrc_offload]} frames with the device's ICRC"
# Over IB node$HW runs OpenSM: its sweeps' SMPs to its own port loop back
# inside cnuas_ib and never meet the device (a few every 10 s).
slack=0
[ "$LINK_LAYER" = ib ] && slack=30
[ "${d[$HW.rx_icrc_offload]}" -ge $((d[$HW.rcvd_pkts] - slack)) ] ||
	fail "node$HW: ${d[$HW.rcvd_pkts]} packets, only ${d[$HW.rx_icrc_offload]} checked by the device"
[ "${d[$SW.rcvd_pkts]}" -ge 80 ] || fail "node$SW received only ${d[$SW.rcvd_pkts]} packets"
# Zero copy needs the device's ICRC: 3 x 20 messages of 64 KiB from node$HW.
[ "${d[$SW.tx_zero_copy]}" = 0 ] || fail "node$SW sent zero-copy frames with rdma_offload=0"
[ "${d[$HW.tx_zero_copy]}" -ge 60 ] || fail "node$HW: only ${d[$HW.tx_zero_copy]} zero-copy frames"
if [ "$LINK_LAYER" = ib ]; then
	# The software VCRC and the device's agree: no link-layer drop.
	for n in "$SW" "$HW"; do
		[ "${d[$n.rx_vcrc_errors]}" = 0 ] || fail "node$n: ${d[$n.rx_vcrc_errors]} VCRC errors"
	done
fi

trap - EXIT
reload "$SW" 1
if [ "$LINK_LAYER" = ib ]; then
	echo "software and device ICRCs and VCRCs agree both ways, by LID and with a GRH"
else
	echo "software and device ICRCs agree both ways over IPv4 and IPv6"
fi
