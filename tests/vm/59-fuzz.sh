#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Fuzz: thousands of random and mutated RoCEv2 frames (cnuas-fuzz: bad
# lengths, opcodes, PSNs, QPNs, rkeys, truncated headers, bad ICRCs) at
# cnuas node 0 while an RC transfer with node 1 runs (it must still run
# when the fuzz is over); the fuzzed QPNs include that live QP. No oops,
# the live transfer and a new one after it pass, and node 0's receive
# counters account for the frames. The frames come from the eth0 of a
# virtio/rxe node if the lab has one, else from cnuas0 of node 1.
# FUZZ_COUNT overrides the number (default 5000).
# Over native IB (its IB cell, CNUAS_VERBS_OVER_IB=1) an IB port has no
# Ethernet netdev to send raw frames from: the frames are native IB ones
# (LRH, BTH, ..., ICRC, VCRC; tests/lab/ib-fuzz.py: the RoCE classes but
# the Ethernet/IP envelope ones, plus bad GRHs) from the host, through a
# port of its own on the lab's switch that the subnet manager sweeps and
# makes Active like any HCA's, to node 0's LID; then 50 frames with a bit
# flipped after their VCRC, as on the link into the switch: the switch
# must drop and count every one as a receive error of that port (its PMA
# PortRcvErrors, read by perfquery from node 0).
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth_or_verbs_over_ib
# VERBS_DEV / VERBS_NODES="A B" run it on other devices/nodes (e.g. rxe0 on
# the rxe nodes, to check the test itself)
DEV=${VERBS_DEV:-cnuas_0}
read -r N0 N1 <<<"${VERBS_NODES:-0 1}"
COUNT=${FUZZ_COUNT:-5000}
for n in $N0 $N1; do
	rdma_dev_up "$n" "$DEV"
done
NETDEV=${VERBS_NETDEV:-cnuas0}
# the fuzz source: a virtio/rxe node if there is one, else node 1's cnuas0
src=$N1 ifn=$NETDEV
for n in $(seq "$NODES" $((NODES + VIRTIO_NODES + ${RXE_NODES:-0} - 1))); do
	[ "$n" != "$N0" ] && [ "$n" != "$N1" ] && { src=$n ifn=eth0; break; }
done
wait_ping "$N0" "$(ip_of "$N1")" 30 || fail "node0 cannot reach node1"
[ "$LINK_LAYER" = ib ] || wait_ping "$src" "$(ip_of "$N0")" 30 || fail "node$src cannot reach node0"
problems0=$(console_problems)

# xfer SIZE_MIB EXTRA_ARGS: node1 receives, node0 sends; prints both outputs.
xfer() {
	local rx rc
	rx=$(mktemp)
	lsh -t 600 "$N1" "cnuas-xfer -d $DEV -s $1 -T 500 $2" >"$rx" 2>&1 &
	local rpid=$!
	sleep 1
	lsh -t 600 "$N0" "cnuas-xfer -d $DEV -s $1 -T 500 $2 $(ip_of "$N1")" 2>&1
	rc=$?
	wait $rpid || rc=1
	cat "$rx"
	rm -f "$rx"
	return $rc
}
# hw counters of the device on node 0, one line "name:value name:value ...";
# read until two reads agree on the set of names (guards a short read).
counters0() {
	local a b
	for _ in 1 2 3 4 5; do
		a=$(lsh -t 30 "$N0" "cd /sys/class/infiniband/$DEV/ports/1/hw_counters && grep . * | tr '\\n' ' '")
		b=$(lsh -t 30 "$N0" "cd /sys/class/infiniband/$DEV/ports/1/hw_counters && grep . * | tr '\\n' ' '")
		[ "$(echo "$a" | tr ' ' '\n' | cut -d: -f1)" = "$(echo "$b" | tr ' ' '\n' | cut -d: -f1)" ] && { echo "$b"; return; }
	done
	echo "$b"
}

xfer 8 "" || fail "transfer before the fuzz failed"

# the live QP: a transfer that outlasts the fuzz (LIVE s; the fuzz takes
# 3 s here, its 5000 frames from a guest or the host)
LIVE=${FUZZ_LIVE_SECONDS:-25}
live=$(mktemp)
lsh -t 600 "$N1" "cnuas-xfer -d $DEV -s 100000 -D $LIVE -T 500 -p 18600" >"$live.rx" 2>&1 &
lrx=$!
sleep 1
lsh -t 600 "$N0" "cnuas-xfer -d $DEV -s 100000 -D $LIVE -T 500 -p 18600 $(ip_of "$N1")" >"$live" 2>&1 &
ltx=$!
qpn=
for i in $(seq 60); do
	qpn=$(sed -n 's/.*sender: local qpn \(0x[0-9a-f]*\).*/\1/p' "$live" | head -1)
	[ -n "$qpn" ] && break
	sleep 1
done
[ -n "$qpn" ] || { cat "$live" "$live.rx"; fail "the live transfer did not start"; }
echo "live sender QP on node0: $qpn"

before=$(counters0)
sw_before=$("$LAB" switch -- --json show)
fstart=$SECONDS
if [ "$LINK_LAYER" = ib ]; then
	lid0=$(lsh -t 30 "$N0" "cat /sys/class/infiniband/$DEV/ports/1/lid") || fail "no LID of node0"
	fz=$(timeout 600 /usr/bin/python3 "$VM_TESTS/../lab/ib-fuzz.py" "$LAB_DIR/switch.sock" "$lid0" \
		-q "$qpn" -q 1 -n "$COUNT" -S 59 -V 50 2>&1) || fail "ib-fuzz failed: $fz"
	echo "host (a port of its own on the switch): $fz"
else
	mac0=$(lsh -t 30 "$N0" "cat /sys/class/net/$NETDEV/address") || fail "no MAC of node0"
	fz=$(lsh -t 600 "$src" "cnuas-fuzz -i $ifn -M $mac0 -a $(ip_of "$N0") -q $qpn -q 1 -n $COUNT -S 59") ||
		fail "cnuas-fuzz failed: $fz"
	echo "node$src ($ifn): $fz"
fi
kill -0 $ltx 2>/dev/null || { cat "$live"; fail "the live transfer ended before the fuzz did ($((SECONDS - fstart)) s; FUZZ_LIVE_SECONDS=$LIVE)"; }
echo "fuzz sent in $((SECONDS - fstart)) s, the live transfer running all along"
sleep 2
after=$(counters0)
if [ "$LINK_LAYER" = ib ]; then
	# The fuzz's switch port: the IB port whose neighbour had its LID.
	flid=$(printf '%s\n' "$fz" | sed -n 's/.*port Active after .*, LID \([0-9]*\)$/\1/p')
	read -r fport ferr < <(/usr/bin/python3 - "$sw_before" "$("$LAB" switch -- --json show)" "$flid" <<'PY'
import json, sys
b, a, lid = json.loads(sys.argv[1])["ib"], json.loads(sys.argv[2])["ib"], int(sys.argv[3] or 0)
port = [p for p in a["ports"] if p["neighbor_lid"] == lid]
if not port:
    print("none 0")
    sys.exit()
n = port[0]["port"]
old = [p for p in b["ports"] if p["port"] == n]
print(n, port[0]["rcv_errors"] - (old[0]["rcv_errors"] if old else 0))
PY
)
	[ "$fport" != none ] || fail "no switch port with the fuzz's LID '$flid' behind it"
	[ "$ferr" = 50 ] || fail "the switch counted $ferr receive errors on the fuzz's port $fport, sent 50 with a bad VCRC"
	swlid=$("$LAB" switch -- --json show | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["ib"]["lid"])')
	pq=$(lsh -t 60 "$N0" "perfquery $swlid $fport") || fail "perfquery $swlid $fport failed"
	prcv=$(printf '%s\n' "$pq" | sed -n 's/^PortRcvErrors:\.*//p')
	[ "${prcv:-0}" -ge 50 ] || { echo "$pq"; fail "the switch's PMA PortRcvErrors of port $fport is ${prcv:-none}, want >= 50"; }
	echo "switch port $fport (the fuzz's): 50 bad-VCRC frames, +$ferr receive errors, PMA PortRcvErrors $prcv"
fi

wait $ltx
trc=$?
wait $lrx
rrc=$?
cat "$live" "$live.rx"
rm -f "$live" "$live.rx"
[ $trc = 0 ] && [ $rrc = 0 ] || fail "the live transfer failed during the fuzz (sender rc $trc, receiver rc $rrc)"
xfer 8 "-S 9" || fail "transfer after the fuzz failed"

# accounting: fuzz frames node0 dropped or refused, each with a reason
acct=$(/usr/bin/python3 - "$before" "$after" <<'PY'
import sys
b = dict(w.split(":", 1) for w in sys.argv[1].split() if ":" in w)
a = dict(w.split(":", 1) for w in sys.argv[2].split() if ":" in w)
if set(b) - set(a):
    print("counters missing after the fuzz: %s" % sorted(set(b) - set(a)))
d = {k: int(a[k]) - int(b.get(k, 0)) for k in a}
print(" ".join("%s=%d" % (k, d[k]) for k in sorted(d) if d[k]))
# frames refused for a reason (the live transfer adds nothing here: no faults)
# (rx_icrc_offload counts the device's verdicts, good ones too: not a reason)
why = [k for k in d if k.startswith("rx_drop") or k in ("rx_icrc_errors", "out_of_seq_request", "duplicate_request")]
print(sum(d[k] for k in why))
PY
)
echo "node0 counter deltas: $(echo "$acct" | head -1)"
seen=$(echo "$acct" | tail -1)
[ "$seen" -ge $((COUNT / 2)) ] || fail "node0's counters account for only $seen of $COUNT fuzz frames"
[ "$(console_problems)" = "$problems0" ] || fail "kernel problems on a console during the fuzz"
