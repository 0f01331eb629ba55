#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# RDS over RDMA (rds_rdma) between two guests with our cnuas-rds (Debian
# ships no rds-tools): node 1 serves, node 0 sends 400 messages of 16
# bytes to 64 KiB on a socket pinned to RDS's IB transport, one at a time;
# node 1 checks each (sequence, length, pattern, sum) and echoes it, node 0
# checks the echo. rds_rdma carries them over an RC QP it connects with
# RDMA CM (port 18635), on RoCE and on native IB alike. Proof that it
# went over RDMA: the kernel lists the RDS IB connection between the two
# addresses, and each RDMA device received at least the bytes it was sent
# in 4 KiB packets.
# CNUAS_PAIR="CLIENT SERVER" picks other nodes: with the Ethernet lab's
# Soft-RoCE node on either side ("2 1", "1 2") it passes too.
# timeout: 180
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-storage.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "0 1"
C=$A S=$B
CADDR=$(ip_of "$C") SADDR=$(ip_of "$S")
PORT=4095
COUNT=400

cleanup() {
	lsh -t 30 "$S" "[ ! -s /run/cnuas-vm95.pid ] || kill \$(cat /run/cnuas-vm95.pid) 2>/dev/null
		rm -f /run/cnuas-vm95.pid; true" >/dev/null 2>&1
}
storage_begin
# Debian's kernel builds them: one that does not load is a failure.
for n in "$C" "$S"; do
	out=$(lsh -t 60 "$n" "command -v cnuas-rds >/dev/null || { echo 'no cnuas-rds in the image'; exit 1; }
		modprobe -a rds rds_rdma" 2>&1) || fail "node$n: no RDS over RDMA: $out"
done

c0=$(st_counters "$C") s0=$(st_counters "$S")
out=$(lsh -t 30 "$S" "setsid cnuas-rds serve $SADDR $PORT $COUNT >/tmp/cnuas-vm95.log 2>&1 &
	echo \$! >/run/cnuas-vm95.pid
	i=0; until grep -q bound /tmp/cnuas-vm95.log; do
		[ \$i -lt 50 ] && kill -0 \$(cat /run/cnuas-vm95.pid) 2>/dev/null ||
			{ echo 'the server did not bind:'; cat /tmp/cnuas-vm95.log; exit 1; }
		sleep 0.1; i=\$((i + 1)); done" 2>&1) || fail "node$S: $out"

t0=$SECONDS
out=$(lsh -t 120 "$C" "cnuas-rds send $CADDR $SADDR $PORT $COUNT" 2>&1)
rc=$?
echo "$out"
srv=$(lsh -t 30 "$S" "i=0; while kill -0 \$(cat /run/cnuas-vm95.pid) 2>/dev/null && [ \$i -lt 50 ]; do
		sleep 0.1; i=\$((i + 1)); done; cat /tmp/cnuas-vm95.log" 2>&1)
echo "node$S: $srv"
[ $rc = 0 ] || fail "node$C: the RDS exchange failed (rc $rc)"
grep -q "^served $COUNT messages" <<<"$srv" || fail "node$S: the server did not serve $COUNT messages"
grep -q "^rds ib connection $CADDR -> $SADDR " <<<"$out" ||
	fail "node$C: no RDS IB connection $CADDR -> $SADDR listed"
bytes=$(sed -n 's/.* messages, \([0-9]*\) bytes each way.*/\1/p' <<<"$out")

c1=$(st_counters "$C") s1=$(st_counters "$S")
for d in sent_pkts rcvd_pkts; do
	echo "  $d: node$C +$(st_delta "$c0" "$c1" $d) node$S +$(st_delta "$s0" "$s1" $d)"
done
for n in C S; do
	if [ $n = C ]; then d=$(st_delta "$c0" "$c1" rcvd_pkts); else d=$(st_delta "$s0" "$s1" rcvd_pkts); fi
	[ "$d" -ge $((bytes / 4096)) ] || fail "node${!n} received $d RDMA packets for $bytes bytes"
done
storage_end
echo "RDS over rds_rdma: $COUNT messages, $bytes bytes each way, checked both ways in $((SECONDS - t0)) s"
