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
# Then, over Ethernet (st_faults_here), through faults (lib-storage.sh
# st_faults): node 1 serves on, node 0 sends one run of 128 checked messages after another while the switch
# drops and reorders 2% of the frames, node 0's switch port is hung up
# and its cnuas_ib is reloaded. RDS connects again by itself and resends
# what was not acknowledged: every message of every run must come back
# intact and in order (no resend by the program), and only the errors
# each fault explains are logged. RDS's own counters show the reconnects
# and resends the faults cost.
# The server's kernel log, from the start to the end, holds no error;
# from the faults' start on, none but those RDS_SERVER_FAULTS_EXPLAINED
# names (lib-storage.sh st_server_check).
# In the Ethernet lab the Soft-RoCE node then sends 100 checked messages
# to the cnuas server (st_rxe_*), before the faults.
# CNUAS_PAIR="CLIENT SERVER" picks other nodes: with the Ethernet lab's
# Soft-RoCE node on either side ("2 1", "1 2") it passes too.
# On IB node 0 runs OpenSM, so there node 1 is the client, node 0 serves.
# timeout: 420
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-storage.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "$ST_PAIR"
C=$A S=$B
CADDR=$(ip_of "$C") SADDR=$(ip_of "$S")
PORT=4095
COUNT=400

cleanup() {
	lsh -t 30 "$S" "[ ! -s /run/cnuas-vm95.pid ] || kill \$(cat /run/cnuas-vm95.pid) 2>/dev/null
		rm -f /run/cnuas-vm95.pid; true" >/dev/null 2>&1
}
# serve_start COUNT: the server on node S in the background.
serve_start() {
	lsh -t 30 "$S" "setsid cnuas-rds serve $SADDR $PORT $1 >/tmp/cnuas-vm95.log 2>&1 &
	echo \$! >/run/cnuas-vm95.pid
	i=0; until grep -q bound /tmp/cnuas-vm95.log; do
		[ \$i -lt 50 ] && kill -0 \$(cat /run/cnuas-vm95.pid) 2>/dev/null ||
			{ echo 'the server did not bind:'; cat /tmp/cnuas-vm95.log; exit 1; }
		sleep 0.1; i=\$((i + 1)); done" 2>&1
}
storage_begin
# Debian's kernel builds them: one that does not load is a failure.
for n in "$C" "$S"; do
	out=$(lsh -t 60 "$n" "command -v cnuas-rds >/dev/null || { echo 'no cnuas-rds in the image'; exit 1; }
		modprobe -a rds rds_rdma" 2>&1) || fail "node$n: no RDS over RDMA: $out"
done

c0=$(st_counters "$C") s0=$(st_counters "$S")
out=$(serve_start $COUNT) || fail "node$S: $out"

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
echo "PASS RDS over rds_rdma: $COUNT messages, $bytes bytes each way, checked both ways in $((SECONDS - t0)) s"

# Soft-RoCE as the client (Ethernet lab): node X's rxe0 to node S's cnuas_0.
X=$(st_rxe_peer)
if [ -n "$X" ]; then
	t0=$SECONDS
	out=$(lsh -t 60 "$X" "modprobe -a rds rds_rdma" 2>&1) || st_rxe_fail "$X" "$S" "rds_rdma does not load" "$out"
	out=$(serve_start 100) || fail "node$S: $out"
	out=$(lsh -t 120 "$X" "cnuas-rds send $(ip_of "$X") $SADDR $PORT 100" 2>&1) ||
		st_rxe_fail "$X" "$S" "the RDS exchange failed" "$out"
	srv=$(lsh -t 30 "$S" "i=0; while kill -0 \$(cat /run/cnuas-vm95.pid) 2>/dev/null && [ \$i -lt 50 ]; do
			sleep 0.1; i=\$((i + 1)); done; cat /tmp/cnuas-vm95.log" 2>&1)
	grep -q "^served 100 messages" <<<"$srv" || st_rxe_fail "$X" "$S" "the cnuas server did not serve 100 messages" "$srv"
	grep -q "^rds ib connection $(ip_of "$X") -> $SADDR " <<<"$out" ||
		st_rxe_fail "$X" "$S" "no RDS IB connection listed" "$out"
	echo "PASS RDS with Soft-RoCE: node$X (rxe0) sent 100 messages to node$S's cnuas_0, checked both ways in $((SECONDS - t0)) s"
else
	note "no Soft-RoCE step: the lab has no rxe node, or a test node is not cnuas"
fi

# Through faults. The server serves one run after another (COUNT 0); the
# client's loop keeps st_loop_start's files. A run that cannot bind its
# address (no RDMA device has it while cnuas_ib is out: exit 3) says so
# in the kernel log, waits and is counted: only the reload explains it.
# The messages each fault explains on the client:
# - drops: none (RC retransmits under RDS);
# - the port hung up: a work request out of RC retries, or flushed after
#   it, makes RDS drop the connection and connect again
#   (rds_ib_conn_error: "disconnecting and reconnecting");
RDS_WHY_PORT='RDS/IB: (send|recv) completion on <[0-9a-f.:]+,[0-9a-f.:]+,[0-9]+> had status (12 \(transport retry counter exceeded\)|5 \(WR flushed\)), vendor err 0x[0-9a-f]+, disconnecting and reconnecting$'
# - the reload: the same, for the connection rds_ib_remove_one() drops;
#   a connect that resolved to the device being removed finds RDS's data
#   of it gone (rds_ib_setup_qp: -EOPNOTSUPP, -95) and is tried again;
#   runs that found no RDMA device for their address meanwhile.
# shellcheck disable=SC2034 # read by st_faults
ST_WHY_DROPS='^$' ST_WHY_HANGUP=$RDS_WHY_PORT
# shellcheck disable=SC2034 # read by st_faults
ST_WHY_RELOAD="$RDS_WHY_PORT|RDS/IB: rds_ib_setup_qp failed \(-95\)\$|cnuas-rds: bind failed: no RDMA device has $CADDR\$"
rds_loop_start() {
	lsh -t 30 "$C" "rm -f $ST_F.*; echo 0 >$ST_F.passes; echo 0 >$ST_F.nobind
		setsid sh -c 'n=0
			while [ ! -e $ST_F.stop ]; do
				cnuas-rds send $CADDR $SADDR $PORT 128 >>$ST_F.log 2>&1; rc=\$?
				if [ \$rc = 3 ]; then
					echo \$((\$(cat $ST_F.nobind) + 1)) >$ST_F.nobind
					echo \"cnuas-rds: bind failed: no RDMA device has $CADDR\" >/dev/kmsg
					sleep 0.5; continue
				fi
				[ \$rc = 0 ] || { echo fail >$ST_F.rc; exit 1; }
				n=\$((n + 1)); echo \$n >$ST_F.passes
			done; echo ok >$ST_F.rc' >/dev/null 2>&1 &" || fail "node$C: cannot start the RDS loop"
}
# rds_counters NODE: RDS's counters of connections reset, of messages
# queued, and of messages received twice (resent) on NODE, one line.
rds_counters() {
	lsh -t 30 "$1" "cnuas-rds counters | grep -E '^(conn_reset|send_queued|recv_drop_old_seq) '" | paste -sd ' '
}
# The server's messages explained: from the faults' start on, the race of
# both ends connecting again at once after the client's connection went
# (its port hung up, its driver reloaded): the peer refuses one of the
# two (rds_ib_cm_handle_connect: a connect while its own is under way,
# or while it still holds the old connection), RDS drops the refused one
# and keeps the other (seen on the server after the reload
# in the runs of 2026-12-06). No other error in any run, through the
# faults either.
RDS_SERVER_FAULTS_EXPLAINED='^RDS/RDMA: conn <[0-9a-f.:]+, [0-9a-f.:]+> rejected, dropping connection$'
faults=''
if st_faults_here eth; then
	out=$(serve_start 0) || fail "node$S: $out"
	rc0=$(rds_counters "$C")
	st_faults "$C" rds_loop_start ""
	echo "node$C: RDS counters before the faults: $rc0"
	echo "node$C: RDS counters after the faults:  $(rds_counters "$C")"
	echo "node$C: $(lsh -t 20 "$C" "cat $ST_F.nobind") runs found no RDMA device for $CADDR while cnuas_ib was reloaded"
	faults=', and through faults'
fi
storage_end '^$' "$RDS_SERVER_FAULTS_EXPLAINED"
echo "RDS over rds_rdma: $COUNT messages, $bytes bytes each way, checked both ways$faults"
