#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Debug lines say why (docs/debugging.md): with dynamic debug on for
# cnuas_ib on node 0, frames with a bad ICRC (cnuas-fuzz -C bad-icrc)
# leave "[rx_icrc_errors] drop: ... ICRC ..." lines in dmesg and move the
# rx_icrc_errors hw_counter by as much; a loopback RDMA WRITE with a wrong
# rkey (cnuas-badverbs bad-rkey) leaves the responder's reason (the rkey
# and why its lookup failed), the NAK it sent and the QP's move to ERR.
# With debug off again, more bad frames are counted but print nothing.
# The frames come from the eth0 of a virtio/rxe node if the lab has one,
# else from cnuas0 of node 1.
# timeout: 600
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
DEV=cnuas_0 NETDEV=cnuas0 N0=0 N1=1
COUNT=${DEBUG_FUZZ_COUNT:-40}
rdma_ready "$N0"
src=$N1 ifn=$NETDEV
for n in $(seq "$NODES" $((NODES + VIRTIO_NODES + RXE_NODES - 1))); do
	src=$n ifn=eth0
	break
done
wait_ping "$src" "$(ip_of "$N0")" 30 || fail "node$src cannot reach node0"

# dyndbg FLAGS: "+p" or "-p" for every debug line of cnuas_ib on node 0.
dyndbg() {
	lsh -t 30 "$N0" "c=/sys/kernel/debug/dynamic_debug/control
		[ -w \$c ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
		[ -w \$c ] || c=/proc/dynamic_debug/control
		[ -w \$c ] || { echo 'no dynamic_debug control (CONFIG_DYNAMIC_DEBUG?)'; exit 77; }
		echo 'module cnuas_ib $1' >\$c"
}
trap 'dyndbg -p >/dev/null 2>&1' EXIT
# mark NAME: a line in node 0's kernel log that later reads start after.
mark() { lsh -t 30 "$N0" "echo 'cnuas-test-71: $1' >/dev/kmsg"; }
# since NAME: node 0's kernel log after the mark.
since() { lsh -t 30 "$N0" "dmesg | sed -n '/cnuas-test-71: $1\$/,\$p'"; }
icrc_errors() {
	local v
	v=$(lsh -t 30 "$N0" "cat /sys/class/infiniband/$DEV/ports/1/hw_counters/rx_icrc_errors" | tr -dc 0-9)
	# In $(...): say it on stderr, the caller exits.
	[ -n "$v" ] || { echo "FAIL: node0: cannot read the rx_icrc_errors hw_counter" >&2; return 1; }
	echo "$v"
}
mac0=$(lsh -t 30 "$N0" "cat /sys/class/net/$NETDEV/address") || fail "no MAC of node0"
# fuzz SEED: COUNT frames with a bad ICRC at node 0, payloads small enough
# for the lab's MTU (1500) so that every one is sent.
fuzz() {
	local out
	out=$(lsh -t 120 "$src" "cnuas-fuzz -i $ifn -M $mac0 -a $(ip_of "$N0") -C bad-icrc -m 1024 -n $COUNT -S $1") ||
		fail "cnuas-fuzz failed: $out"
	note "node$src ($ifn): $out"
	sleep 1
}

out=$(dyndbg +p)
rc=$?
[ $rc = 77 ] && skip "node0: $out"
[ $rc = 0 ] || fail "node0: cannot enable dynamic debug for cnuas_ib: $out"

# 1. A drop: the counter moves, the line names it and the reason.
run=$$-$RANDOM
mark "icrc-$run"
c0=$(icrc_errors) || exit 1
fuzz 71
c1=$(icrc_errors) || exit 1
log=$(since "icrc-$run")
lines=$(echo "$log" | grep -cE "$DEV: \[rx_icrc_errors\] drop: QP[0-9]+ PSN [0-9]+: .*ICRC")
note "rx_icrc_errors $c0 -> $c1, $lines debug lines"
echo "$log" | grep -m 3 'rx_icrc_errors'
[ $((c1 - c0)) -ge $((COUNT / 2)) ] ||
	fail "rx_icrc_errors moved by $((c1 - c0)) for $COUNT bad-ICRC frames"
[ "$lines" -ge $((COUNT / 2)) ] ||
	fail "only $lines '[rx_icrc_errors] drop:' lines for $COUNT bad-ICRC frames: $(echo "$log" | tail -n 5)"
[ "$lines" -le $((c1 - c0)) ] ||
	fail "$lines '[rx_icrc_errors] drop:' lines, but the counter moved by only $((c1 - c0))"

# 2. A NAK: the responder's reason, the NAK sent, the requester's side.
mark "rkey-$run"
out=$(lx -t 120 "$N0" cnuas-badverbs -d "$DEV" bad-rkey 2>&1) ||
	fail "cnuas-badverbs bad-rkey: $out"
log=$(since "rkey-$run")
wr="$DEV: QP[0-9]+: WRITE PSN [0-9]+ rkey 0x[0-9a-f]+ va 0x[0-9a-f]+ len 64:"
for re in \
	"$DEV: QP[0-9]+: modify_qp: state RESET -> INIT" \
	"$DEV: QP[0-9]+: RTS: sq_psn [0-9]+, timeout [0-9]+, retry_cnt [0-9]+, rnr_retry [0-9]+" \
	"$wr (no MR or window has this key|key does not match)" \
	"$DEV: QP[0-9]+: NAK remote access error sent for PSN [0-9]+" \
	"$DEV: QP[0-9]+: NAK remote access error received for PSN [0-9]+: the WQE fails with remote access error" \
	"$DEV: QP[0-9]+: state RTS -> ERR by the transport, event QP access error" \
	"$DEV: QP[0-9]+: READ PSN [0-9]+ rkey 0x[0-9a-f]+ va 0x[0-9a-f]+ len 64: " \
	"$wr range outside the MR" \
	"$wr MR lacks the access right"; do
	echo "$log" | grep -m 1 -E "$re" || {
		echo "$log" | grep -F "$DEV:" | tail -n 30
		fail "no debug line matching: $re"
	}
done

# 3. Off again: counted, not printed.
dyndbg -p || fail "node0: cannot disable dynamic debug for cnuas_ib"
mark "off-$run"
c0=$(icrc_errors) || exit 1
fuzz 72
c1=$(icrc_errors) || exit 1
lines=$(since "off-$run" | grep -c 'rx_icrc_errors')
note "debug off: rx_icrc_errors $c0 -> $c1, $lines debug lines"
[ $((c1 - c0)) -ge $((COUNT / 2)) ] || fail "rx_icrc_errors moved by $((c1 - c0)) with debug off"
[ "$lines" = 0 ] || fail "$lines debug lines with dynamic debug off"
