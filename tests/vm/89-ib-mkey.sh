#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# M_Key protection of an HCA port on the IB lab (tests/run's IB lab),
# with infiniband-diags from node0, where OpenSM runs (restarted without
# periodic sweeps, so that only this test talks to node1's SMA):
#   ibportstate sets node1's M_Key 0xab, protection bits 2 and a lease of
#     3 s; smpquery with -y 0xab reads them back;
#   a PortInfo Get without the key gets no answer (IBA 14.2.4: protection
#     2 hides the port from Gets without the key), M_KeyViolations counts
#     it, and node1's SMA sends Trap 256 (Bad M_Key) to the SM: OpenSM
#     logs it with node1's LID;
#   the lease: with nobody showing the key, the protection bits fall to 0
#     once it runs out, and the same Get is answered;
#   ibportstate with the key clears it all again.
# timeout: 600
# link-layers: ib
. "$(dirname "$0")/lib.sh"
need_ib_sm ibportstate smpquery
P=/sys/class/infiniband/cnuas_0/ports/1
KEY=0xab
LEASE=3
LOG=/tmp/opensm-mkey.log
lid1=$(($(lsh 1 "cat $P/lid")))

restart_sm() { sm_restart $LOG "$@"; }
# field PORTINFO NAME: a field of smpquery's PortInfo dump
field() { echo "$1" | sed -n "s/^$2:\.*\(.*\)$/\1/p"; }
# (5 s per MAD, not libibmad's 1 s: a TCG guest's SMA on a loaded host
# answered too late once, and the lease check below read that as no answer)
pinfo() { lsh -t 60 0 "timeout 40 smpquery -t 5000 -K $* portinfo $lid1 2>&1"; }
cleanup() {
	lsh -t 60 0 "ibportstate -y $KEY -L $lid1 1 mkey 0 mkeyprot 0 mkeylease 0 >/dev/null 2>&1"
	restart_sm
}

# No sweeps but the first: OpenSM would otherwise read node1 without the key.
restart_sm -s 0
sleep 5
wait_for 120 lsh -t 10 1 "grep -q ACTIVE $P/state" || fail "node1 not ACTIVE after the OpenSM restart"
trap cleanup EXIT

out=$(lsh -t 60 0 "ibportstate -L $lid1 1 mkey $KEY mkeyprot 2 mkeylease $LEASE 2>&1") ||
	{ echo "$out"; fail "ibportstate could not set node1's M_Key"; }
pi=$(pinfo -y $KEY) || { echo "$pi"; fail "smpquery -y $KEY portinfo $lid1 failed"; }
mk=$(field "$pi" Mkey) prot=$(field "$pi" ProtectBits) lease=$(field "$pi" MkeyLeasePeriod)
v0=$(field "$pi" MkeyViolations)
[ "$((mk))" = $((KEY)) ] && [ "$prot" = 2 ] && [ "$lease" = $LEASE ] ||
	{ echo "$pi"; fail "node1's PortInfo: M_Key $mk, protection $prot, lease $lease"; }
echo "PASS ibportstate: node1's M_Key $mk, protection bits $prot, lease $lease s (read with the key)"

# Without the key: no answer, a violation, Trap 256.
if pi=$(lsh -t 60 0 "timeout 20 smpquery -y 0 -t 1000 portinfo $lid1 2>&1"); then
	echo "$pi"
	fail "a PortInfo Get without the M_Key was answered at protection 2"
fi
# The lease started at that Get's first violation, which node1 saw before
# smpquery gave up: so it ends at the latest $LEASE s from here. (Counting
# from before the Get left node0 instead once put the next Get inside the
# lease when a loaded host took over a second to start smpquery.)
t0=$(date +%s)
wait_for 30 lsh -t 10 0 "grep -q 'num:256 (Bad M_Key) Producer:1 (Channel Adapter) from LID:$lid1 ' $LOG" || {
	lsh 0 "grep -i 'notice' $LOG | tail -n 4"
	fail "OpenSM logged no Trap 256 (Bad M_Key) from node1 (LID $lid1)"
}
echo "PASS a Get without the M_Key: no answer; OpenSM logged Trap 256 from LID $lid1"

# The lease ran out: protection 0 (a second's margin for node1's clock).
left=$((LEASE + 1 - ($(date +%s) - t0)))
[ $left -le 0 ] || sleep $left
pi=$(pinfo) || { echo "$pi"; fail "no answer without the M_Key after the $LEASE s lease"; }
prot=$(field "$pi" ProtectBits) v1=$(field "$pi" MkeyViolations)
[ "$prot" = 0 ] || { echo "$pi"; fail "protection bits $prot after the lease, want 0"; }
[ "$((v1 - v0))" -ge 1 ] || { echo "$pi"; fail "MkeyViolations $v0 -> $v1"; }
echo "PASS M_Key lease: after $LEASE s the protection bits are 0 and a Get without the key is answered; MkeyViolations $v0 -> $v1"

trap - EXIT
out=$(lsh -t 60 0 "ibportstate -y $KEY -L $lid1 1 mkey 0 mkeyprot 0 mkeylease 0 2>&1") ||
	{ echo "$out"; fail "ibportstate with the key could not clear it"; }
pi=$(pinfo) || { echo "$pi"; fail "smpquery portinfo $lid1 failed"; }
[ "$(($(field "$pi" Mkey)))" = 0 ] || { echo "$pi"; fail "node1's M_Key is not 0 again"; }
restart_sm
echo "PASS M_Key: set, enforced with Trap 256, leased out and cleared with stock infiniband-diags"
