#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A 128 MiB RC transfer (cnuas-xfer: SEND + RDMA WRITE, every byte checked)
# between cnuas nodes 0 and 1 while the switch drops 5%, reorders 5% and
# corrupts 1% of all frames: it arrives intact, and the corrupted frames
# show up in the ICRC-error counter. XFER_MIB overrides the size.
# (32 MiB took 4 min with 1 MiB messages x 8 on a loaded host)
# Over native IB (its IB cell, CNUAS_VERBS_OVER_IB=1) the same by LID; there
# the switch checks every frame's VCRC (per hop) and flips its bit after
# that check and writes a fresh VCRC, as a fault inside the switch: only
# the HCA's end-to-end ICRC can catch it, so the ICRC counters must move
# and the switch's bad-VCRC drops must not. Over IB the switch also
# flips a bit of 1% of the frames on the link out (vcrc=1, after it
# wrote the VCRC): the receiving HCA's link layer (cnuas_net) drops each
# for its bad VCRC, and every one must show in the HCAs' hw_counters
# rx_vcrc_errors and in their PMA PortRcvErrors (with the ICRC errors).
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth_or_verbs_over_ib
# VERBS_DEV / VERBS_NODES="A B" run it on other devices/nodes (e.g. rxe0 on
# the rxe nodes, to check the test itself)
DEV=${VERBS_DEV:-cnuas_0}
read -r N0 N1 <<<"${VERBS_NODES:-0 1}"
MIB=${XFER_MIB:-128}	# thousands of drops and reorders, hundreds of flips: as 256 did
# 64 KiB messages, 4 in flight: under 5% loss the go-back-N retransmissions
# grow with the packets in flight (XFER_ARGS overrides)
XARGS=${XFER_ARGS:--c 64 -w 4}
for n in $N0 $N1; do
	rdma_dev_up "$n" "$DEV"
done
wait_ping "$N0" "$(ip_of "$N1")" 30 || fail "node0 cannot reach node1"

# Sum of the ICRC-error hw counters of the device on a node (not the
# offload counters, which count good frames too).
icrc_errors() {
	lsh -t 30 "$1" "n=0; found=0
		for f in /sys/class/infiniband/$DEV/ports/1/hw_counters/*icrc_err*; do
			[ -f \"\$f\" ] || continue; found=1; n=\$((n + \$(cat \"\$f\")))
		done
		[ \$found = 1 ] || { echo none; exit 0; }; echo \$n"
}
b0=$(icrc_errors "$N0") && b1=$(icrc_errors "$N1") || fail "cannot read hw counters"
[ "$b0" != none ] || fail "$DEV has no ICRC-error counter in ports/1/hw_counters"
# IB: the link layer's VCRC errors and the PMA's PortRcvErrors of a node.
link_errors() {
	lsh -t 30 "$1" "p=/sys/class/infiniband/$DEV/ports/1
		echo \$(cat \$p/hw_counters/rx_vcrc_errors) \$(cat \$p/counters/port_rcv_errors)"
}
faults="drop=5 reorder=5 corrupt=1"
if [ "$LINK_LAYER" = ib ]; then
	faults="$faults vcrc=1"
	read -r v0 r0 <<<"$(link_errors "$N0")" && read -r v1 r1 <<<"$(link_errors "$N1")" &&
		[ -n "$r1" ] || fail "no rx_vcrc_errors in hw_counters or no PMA port_rcv_errors"
fi

# What the switch injected so far (its counters live as long as the ports).
injected() {
	"$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
print(" ".join("%s=%d" % (k, sum(p["counters"].get("fault_" + k, 0) for p in s["ports"])) for k in ("drop", "reorder", "vcrc", "corrupt")))'
}
inj0=$(injected) || fail "cannot read the switch's counters"
trap '"$LAB" switch -- set-fault clear >/dev/null 2>&1' EXIT
"$LAB" switch -- set-fault $faults seed=57 || fail "set-fault refused"
rx=$(mktemp)
lsh -t 1800 "$N1" "cnuas-xfer -d $DEV -s $MIB $XARGS -T 1700" >"$rx" 2>&1 &
rpid=$!
sleep 2
tx=$(lsh -t 1800 "$N0" "cnuas-xfer -d $DEV -s $MIB $XARGS -T 1700 $(ip_of "$N1")" 2>&1)
txrc=$?
wait $rpid
rxrc=$?
inj=$(injected)
vcrc=$("$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
print(sum(p["counters"].get("ib_drop_vcrc", 0) for p in json.load(sys.stdin)["ports"]))')
"$LAB" switch -- set-fault clear >/dev/null || fail "clearing the faults failed"
echo "$tx"
cat "$rx"
rm -f "$rx"
echo "switch injected: $inj"
[ $txrc = 0 ] && [ $rxrc = 0 ] || fail "transfer under faults failed (sender rc $txrc, receiver rc $rxrc)"
a0=$(icrc_errors "$N0") && a1=$(icrc_errors "$N1") || fail "cannot read hw counters"
echo "ICRC errors: node0 $b0 -> $a0, node1 $b1 -> $a1"
corrupt=${inj##*corrupt=}
[ "$corrupt" -gt 0 ] || fail "the switch corrupted no frames"
[ $((a0 - b0 + a1 - b1)) -gt 0 ] || fail "$corrupt corrupted frames, but the ICRC-error counters did not move"
if [ "$LINK_LAYER" = ib ]; then
	[ "$vcrc" = 0 ] || fail "the switch dropped $vcrc frames for a bad VCRC: its corruption must pass the link check"
	echo "IB: $corrupt corrupted frames, $((a0 - b0 + a1 - b1)) ICRC errors at the HCAs, no bad VCRC at the switch"
	# Every frame flipped on a link out of the switch reached an HCA (the
	# fabric is lossless but for the faults) and died at its VCRC check.
	linkflip=${inj##*vcrc=} linkflip0=${inj0##*vcrc=}
	linkflip=$((${linkflip%% *} - ${linkflip0%% *}))
	read -r w0 s0 <<<"$(link_errors "$N0")" && read -r w1 s1 <<<"$(link_errors "$N1")" ||
		fail "cannot read the link counters"
	echo "IB: rx_vcrc_errors node0 $v0 -> $w0, node1 $v1 -> $w1; PortRcvErrors node0 $r0 -> $s0, node1 $r1 -> $s1"
	[ "$linkflip" -gt 0 ] || fail "the switch flipped no frame on a link (vcrc=1)"
	[ $((w0 - v0 + w1 - v1)) = "$linkflip" ] ||
		fail "the switch flipped $linkflip frames on the links out, the HCAs counted $((w0 - v0 + w1 - v1)) VCRC errors"
	[ $((s0 - r0)) -ge $((w0 - v0 + a0 - b0)) ] && [ $((s1 - r1)) -ge $((w1 - v1 + a1 - b1)) ] ||
		fail "PortRcvErrors did not count the VCRC and ICRC errors"
	echo "IB: $linkflip frames flipped on the links, as many VCRC errors at the HCAs, all in PortRcvErrors"
fi
[ "$("$LAB" switch -- --json show | /usr/bin/python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["fault_all"] is None and all(p["fault"] is None for p in s["ports"]))')" = True ] ||
	fail "faults still set after clearing"
