#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# timeout: 2400
# Live migration with RDMA in flight: node 1 moves into a fresh QEMU
# (`scripts/lab migrate 1`, same switch) in the middle of
#   1. a verified RC transfer (cnuas-xfer, every byte checked; node 1
#      receives),
#   2. an ib_write_bw run,
#   3. a ping flood (IP through cnuas0), then a TCP transfer, then a
#      TCP stream (seq's lines, checked in order) while its receiver moves,
#   4. a verified RC transfer whose sender (node 0) moves,
#   5. rping (RDMA CM) with its data checked,
# each of which must end without an error completion and without loss;
#   6. MIG_REPEAT (10) migrations of node 1 back to back while it writes
#      memory and node 0 pings it: every one must leave a running guest;
#   7. with cnuasgpus: node 1 fills its GPU memory and registers it as a
#      DMA-BUF MR, moves, and node 0 then READs (compared), WRITEs (checked
#      through the GPU mapping), SENDs and runs atomics on that MR;
#   8. a verified RC transfer, ib_write_bw and rping from a Soft-RoCE
#      guest (node 2, rxe0) to node 1, which moves;
#   9. NVMe over RDMA (nvmet-rdma on node 1, which moves; nvme-rdma on
#      node 0): O_DIRECT writes and reads checksummed, and no I/O error,
#      timeout or reconnect in node 0's kernel log;
#  10. the same while the NVMe host (node 0) moves, and with the
#      Soft-RoCE guest as the host while the target moves;
#  11. ib_write_bw while its client (node 0) moves;
#  12. rping with its data checked while its client (node 0) moves;
#  13. with cnuasgpus: CnuasLink frames sent from node 0's GPU to node 1's
#      and compared while the sender, then the receiver moves.
# Before QEMU patch 0007 about one migration in 20 left the guest with
# stale pages (TCG stores not tracked) and it crashed: step 6 caught that.
# Such a fault is QEMU's, whatever the link layer: with the other steps'
# 16 here and the IB cell's 13, a make check migrates 39 times and shows
# it in more than 8 runs of 10 (20 in a row here cost 330 s of a core's
# time for the same odds).
# The transport lives in guest memory, so the connections move with the
# RAM; frames in the switch's queue to the old port are lost and RC
# retransmission repairs that. The pause: the longest time the peer's
# switch port got nothing from node 1 (host clock, the switch's
# counters), against the downtime QEMU reports. Every workload of steps
# 1 to 5, 8, 11 and 12 must be in flight: frames reach the peer's port
# after the migration ended (the switch's counters, sampled before and
# after it) while the workload still runs (rping must also complete
# pings after it), and only then is it stopped, each the way it ends on
# its own: cnuas-xfer's sender on SIGUSR1 (as at the end of -D),
# ib_write_bw on SIGALRM (its -D timer), ping on SIGINT, the TCP stream
# at the end of its input; rping, which has no clean stop, on SIGINT
# (its client's end is ours, the server must end on the disconnect).
# Each runs MIG_XFER_CAP (240) s at most. Guest jobs (scripts/lab job)
# outlive the migration of their guest.
# In the IB lab (its cell 82[ib], CNUAS_VERBS_OVER_IB=1) steps 1, 4, 5
# and 6 (10 migrations) in that lab, by LID and over IPoIB:
# the new QEMU's port is linked once the device state arrives, and the
# switch reports it to OpenSM, which sweeps it (same LID) in.
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
if [ "$LINK_LAYER" = ib ]; then
	need_ib_sm
	[ "${CNUAS_VERBS_OVER_IB:-0}" = 1 ] || skip "on an IB lab only with CNUAS_VERBS_OVER_IB=1 (tests/run's IB lab)"
else
	need_eth
fi
# Any failure shows what a guest kernel reported (a crash after a migration),
# and each switch port's frames, pauses and, on shared-memory rings, its
# rings (frames waiting, who asked for a kick: docs/debugging.md).
fail() {
	local f
	for f in "$LAB_DIR"/node*.console.log; do
		grep -q -E 'Oops|BUG:|Kernel panic' "$f" 2>/dev/null || continue
		echo "---- $f"
		grep -m1 -A14 -E 'Oops|BUG:|Kernel panic' "$f"
	done
	echo "---- the switch's ports"
	"$LAB" switch -- counters 2>/dev/null |
		grep -E '^port |^  (rx_frames|tx_frames|bp_paused|bp_caused|drop_port_closed|ring)' || true
	echo "FAIL: $*"
	exit 1
}
# Its own lab of two cnuas guests with cnuasgpus (the group's guests are
# paused meanwhile, lib.sh side_lab): a migration that goes wrong takes
# down no guest the later tests need. MIG_GPU=0: without cnuasgpus.
gpu=
[ "${MIG_GPU:-1}" = 1 ] && gpu=--gpu
if [ "$LINK_LAYER" = ib ]; then
	[ "${GPU:-0}" = 1 ] || gpu=
	echo "# in this IB lab of $NODES cnuas guests${gpu:+ with cnuasgpus}"
else
	side_lab migrate --nodes 2 --rxe-nodes 1 --mtu "$MTU" $gpu
	echo "# own lab of 2 cnuas guests${gpu:+ with cnuasgpus} and a Soft-RoCE guest up in ${SIDE_BOOT} s"
fi
N0=0 N1=1
MIB=${MIG_XFER_MIB:-8192}	# at most; the sender runs until stopped
# cnuas-xfer's sender runs until the test stops it (SIGUSR1) once the
# migration is over and frames flowed again, at most XCAP seconds.
XCAP=${MIG_XFER_CAP:-240}
PINGS=1000000	# more than XCAP s of rping: it is stopped
OUT=$LAB_DIR/pair-out/82-migrate
mkdir -p "$OUT"
PROBLEMS0=$(console_problems)
rdma_prep $N0 $N1

# The switch port of a node: a cnuas node's QEMU pid is its port's peer,
# a virtio-net node's port is its QEMU's dgram socket.
port_of() {
	"$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
for p in json.load(sys.stdin)["ports"]:
    if (p["peer"].split()[:2] == ["pid", sys.argv[1]]   # "pid N [vm NAME] [ib PORT]"
            or p["peer"].endswith("/vport%s.qemu" % sys.argv[2])):
        print(p["id"])' "$(cat "$LAB_DIR/node$1.pid")" "$1"
}

# sample PORT FILE: every ~10 ms, host time (ms) and the frames the switch
# delivered to PORT, until killed. It speaks the switch's control
# protocol (userspace/vswitchd/ctl_proto.h) itself: a cnuas-vsctl process
# per sample took a quarter of a host CPU for as long as a step ran.
sample() {
	/usr/bin/python3 - "$1" "$2" "$LAB_DIR/switch.ctl" <<'EOF' &
import json, socket, sys, time
port, out, ctl = sys.argv[1:]
req = ("CNUAS-CTL 1\njson\ncounters\n%s\n" % port).encode()

def tx_frames():
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        s.connect(ctl)
        s.sendall(req)
        s.shutdown(socket.SHUT_WR)
        resp = b""
        while True:
            d = s.recv(65536)
            if not d:
                break
            resp += d
    head, _, body = resp.partition(b"\n")
    if head != b"OK":
        raise ValueError(head)
    return json.loads(body)["ports"][0]["counters"]["tx_frames"]

with open(out, "w") as f:
    while True:
        try:
            f.write("%d %d\n" % (time.time() * 1000, tx_frames()))
            f.flush()
        except (OSError, ValueError, KeyError, IndexError):
            pass
        time.sleep(0.01)
EOF
	SAMPLER=$!
}

# pause FILE T0 T1: the longest time (ms) between two moves of the counter
# that overlaps the migration [T0, T1] (host ms); a stop after the run is
# over does not count.
pause_of() {
	awk -v t0="$2" -v t1="$3" 'NR == 1 { last = $2; since = $1; next }
		$2 != last { if ($1 >= t0 && since <= t1 && $1 - since > max) max = $1 - since
			last = $2; since = $1 }
		END { print max + 0 }' "$1"
}

# On an IB switch a migration must hand the guest's IB port over (no link
# down: no trap, the port Active all along): ib_mark before, ib_moved TAG
# N after N migrations.
ib_mark() { [ "$LINK_LAYER" != ib ] || IB_MARK=$(sw_json) || fail "cannot read the switch"; }
ib_moved() {
	[ "$LINK_LAYER" = ib ] || return 0
	local s h0 h1 t0 t1
	s=$(sw_json) || fail "cannot read the switch"
	h0=$(sw_field "$IB_MARK" handovers) h1=$(sw_field "$s" handovers)
	t0=$(sw_field "$IB_MARK" traps_sent) t1=$(sw_field "$s" traps_sent)
	[ "$h1" = $((h0 + $2)) ] && [ "$t1" = "$t0" ] ||
		fail "$1: the IB port did not move seamlessly (hand-overs $h0 -> $h1 for $2 migrations, the switch's traps $t0 -> $t1)"
	echo "$1: $2 IB port hand-over(s), no trap, no sweep"
}

# sampled FILE: the sampler has a baseline (two samples) in FILE.
sampled() { [ -s "$1" ] && [ "$(wc -l <"$1")" -ge 2 ]; }
# resumed FILE T1: PEER's counter moved after T1 (host ms): the pause
# that overlaps the migration has ended, later samples cannot change it.
resumed() {
	awk -v t1="$2" '$1 <= t1 { last = $2; seen = 1; next }
		seen && $2 != last { found = 1; exit }
		END { exit !found }' "$1"
}
# until_or TENTHS CMD...: CMD until it succeeds, at most TENTHS tenths of a
# second (the fixed wait this replaces); the time is an upper bound only.
until_or() {
	local i n=$1
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# migrate_now TAG [NODE PEER [nopause]]: migrate NODE (default node 1),
# print the downtime and the traffic pause seen by PEER (default node 0;
# not with nopause: traffic that does not cross the switch). RESUMED: 1
# if PEER's port got frames after the migration, within RESUME_WAIT
# tenths of a second (default 30).
migrate_now() {
	local tag=$1 mv=${2:-$N1} peer=${3:-$N0} p= out t0 t1
	RESUMED=0
	[ "${4:-}" = nopause ] || p=$(port_of "$peer")
	SAMPLER=
	if [ "${4:-}" = nopause ]; then
		: >"$OUT/$tag.samples"
	elif [ -n "$p" ]; then
		sample "$p" "$OUT/$tag.samples"
	else
		note "no switch port found for node$peer: its pause is not measured"
		: >"$OUT/$tag.samples"
	fi
	# A baseline before the move, then samples until the traffic resumed
	# (3 s at most, as long as the fixed waits these were).
	if [ -n "$SAMPLER" ]; then until_or 50 sampled "$OUT/$tag.samples"; else sleep 1; fi
	ib_mark
	t0=$(($(date +%s%N) / 1000000))
	out=$("$LAB" migrate "$mv" 2>&1) || { [ -z "$SAMPLER" ] || kill "$SAMPLER"; echo "$out"; fail "$tag: scripts/lab migrate $mv failed"; }
	t1=$(($(date +%s%N) / 1000000))
	if [ -n "$SAMPLER" ]; then
		! until_or "${RESUME_WAIT:-30}" resumed "$OUT/$tag.samples" "$t1" || RESUMED=1
	else
		sleep 3
	fi
	if [ -n "$SAMPLER" ]; then
		kill "$SAMPLER" 2>/dev/null
		wait "$SAMPLER" 2>/dev/null
	fi
	echo "$out" | grep -v '^MIGRATE '
	ib_moved "$tag" 1
	MIG=$(echo "$out" | sed -n 's/^MIGRATE //p')
	[ -n "$MIG" ] || fail "$tag: no migration figures"
	if [ "${4:-}" = nopause ]; then
		echo "$tag: $MIG"
	else
		echo "$tag: $MIG rdma_pause_ms=$(pause_of "$OUT/$tag.samples" "$t0" "$t1") (longest time node$peer received nothing from node$mv)"
	fi
}

ONLY=${MIG_ONLY:-xfer bw ping tcp xfer-sender rping repeat gpu rxe nvme nvme-host bw-client rping-client link bw-rxe rping-rxe nvme-rxe}	# a subset, to debug one part
if [ "$LINK_LAYER" = ib ]; then
	# The IB cell: what hands the IB port over (RC both ways, RDMA CM, 10
	# in a row); the rest is the same code as on Ethernet, which runs
	# every step. No Soft-RoCE over IB.
	ONLY=${MIG_ONLY:-xfer xfer-sender rping repeat}
	o=
	for w in $ONLY; do case $w in rxe | *-rxe) ;; *) o+=" $w" ;; esac; done
	ONLY=$o
fi
# want STEP: whether STEP runs; the log shows when each one starts.
want() {
	[[ " $ONLY " == *" $1 "* ]] || return 1
	echo "# step $1 at $SECONDS s"
}

# xfer_to_moving TAG SENDER PORT SECS: a verified cnuas-xfer from SENDER
# (its own RDMA device) to node 1, which moves in the middle of it. The
# receiver is a job in the guest (scripts/lab job: its agent session ends
# with the old QEMU, the job goes on); its result is read back afterwards.
# job NODE NAME CMD...: start a job; job_wait NODE NAME SECONDS: its
# output, its exit status as ours (255: it never finished).
job() { local n=$1 name=$2; shift 2; "$LAB" job "$n" start "$name" -- "$@"; }
job_wait() { local n=$1; shift; "$LAB" job "$n" wait "$@"; }
# listen_wait NODE READY: wait (10 s at most) for the guest command READY.
listen_wait() {
	lsh -t 30 "$1" "i=0; until $2 || [ \$i -ge 100 ]; do sleep 0.1; i=\$((i+1)); done; $2"
}
xfer_to_moving() {
	local tag=$1 tx=$2 port=$3 txpid txrc rx rxrc
	job $N1 "mig-$tag" cnuas-xfer -d "$DB" -p "$port" -s "$MIB" -c 64 -w 8 -T $((XCAP + 150)) ||
		fail "$tag: cannot start the cnuas-xfer receiver"
	listen_wait $N1 "$(listening "$port")" || note "$tag: the cnuas-xfer receiver does not listen after 10 s"
	lsh -t $((XCAP + 200)) "$tx" "stdbuf -oL cnuas-xfer -d $(rdma_dev "$tx") -p $port -s $MIB -c 64 -w 8 -D $XCAP -T $((XCAP + 150)) $(ip_of $N1)" >"$OUT/$tag.tx" 2>&1 &
	txpid=$!
	wait_for 60 grep -qs 'sender: local qpn' "$OUT/$tag.tx" || { cat "$OUT/$tag.tx"; fail "$tag: cnuas-xfer did not connect"; }
	sleep 1	# mid-transfer; it runs until stopped after the migration
	kill -0 $txpid 2>/dev/null || { cat "$OUT/$tag.tx"; fail "$tag: cnuas-xfer ended before the migration"; }
	RESUME_WAIT=150 migrate_now "$tag" $N1 "$tx"
	xfer_stop "$tag" "$tx" "kill -0 $txpid"
	wait $txpid
	txrc=$?
	rx=$(job_wait $N1 "mig-$tag" 120)
	rxrc=$?
	cat "$OUT/$tag.tx"
	echo "$rx"
	[ $txrc = 0 ] && [ $rxrc = 0 ] || fail "$tag: cnuas-xfer across the migration failed (sender rc $txrc, receiver rc $rxrc)"
}

# in_flight TAG NODE ALIVE-CMD: in flight means in flight: frames
# reached node NODE's switch port after the migration ended (RESUMED,
# from the switch's counters sampled on both sides of it) and the
# workload still runs (ALIVE-CMD).
in_flight() {
	[ "$RESUMED" = 1 ] ||
		fail "$1: no frame reached node$2's switch port within 15 s of the migration's end while the workload ran"
	$3 2>/dev/null || fail "$1: the workload ended before it was stopped ($XCAP s at most)"
}
# xfer_stop TAG SENDER ALIVE-CMD: in flight (ALIVE-CMD: the side that
# stayed still runs), then the sender is stopped (SIGUSR1: it ends as
# after -D, the receiver checks every byte that came).
xfer_stop() {
	in_flight "$@"
	lsh -t 30 "$2" "pkill -USR1 -x cnuas-xfer" || fail "$1: cannot stop cnuas-xfer on node$2"
	echo "$1: frames flowed after the migration; the sender stopped then"
}
# perf_stop NODE GONE-CMD: end ib_write_bw's client on NODE as its -D
# timer does. perftest runs -D on SIGALRM (catch_alarm() in
# perftest_resources.c, 4.5 and later: warm-up, measured window, margin,
# end; the margin is -f, else a quarter of -D, hence -f 2), so one sent
# in the window ends the run with its report 2 s later; one sent in the
# 2 s warm-up only opens the window, hence up to three. Succeeds once
# GONE-CMD does, saying how long it took.
perf_stop() {
	local i k t0=$SECONDS
	for k in 1 2 3; do
		lsh -t 30 "$1" "pkill -ALRM -x ib_write_bw" || return 1
		for i in $(seq 20); do
			$2 2>/dev/null && { echo "# ib_write_bw ended $((SECONDS - t0)) s after the first SIGALRM ($k sent)"; return 0; }
			sleep 0.5
		done
	done
	return 1
}
# gone PID: the local process PID ended.
gone() { ! kill -0 "$1" 2>/dev/null; }
# pings FILE: rping's pings in FILE so far (each line printed after its
# data was compared).
pings() { grep -c 'ping data' "$1"; }
# pinged_after TAG FILE N: rping completes a ping after the migration (N:
# its count when the migration ended), within 30 s.
pinged_after() {
	local i
	for i in $(seq 300); do
		[ "$(pings "$2")" -gt "$3" ] && return 0
		sleep 0.1
	done
	fail "$1: rping completed no ping within 30 s of the migration's end"
}

# 1. cnuas-xfer from node 0: the receiver (node 1) moves.
want xfer && xfer_to_moving xfer $N0 18611

# bw_to_moving TAG CLIENT PORT: ib_write_bw from CLIENT (its own RDMA
# device) while the server (node 1) moves in the middle of the run.
bw_to_moving() {
	local tag=$1 c=$2 port=$3 cdev cgid cpid crc srv src
	cdev=$(rdma_dev "$c") cgid=$(gid_index "$c" 4)
	job $N1 "mig-$tag" timeout $((XCAP + 120)) ib_write_bw -d "$DB" -x "$GB" -D "$XCAP" -f 2 -F -p "$port" --report_gbits ||
		fail "$tag: cannot start the ib_write_bw server"
	listen_wait $N1 "$(listening "$port")" || note "$tag: the ib_write_bw server does not listen after 10 s"
	lsh -t $((XCAP + 180)) "$c" "timeout $((XCAP + 120)) stdbuf -oL ib_write_bw -d $cdev -x $cgid -D $XCAP -f 2 -F -p $port --report_gbits $(ip_of $N1)" >"$OUT/$tag.client" 2>&1 &
	cpid=$!
	wait_for 60 grep -q 'remote address' "$OUT/$tag.client" || { cat "$OUT/$tag.client"; fail "$tag: ib_write_bw did not connect"; }
	sleep 1
	kill -0 $cpid 2>/dev/null || { cat "$OUT/$tag.client"; fail "$tag: ib_write_bw ended before the migration"; }
	RESUME_WAIT=150 migrate_now "$tag" $N1 "$c"
	in_flight "$tag" "$c" "kill -0 $cpid"
	perf_stop "$c" "gone $cpid" || fail "$tag: ib_write_bw on node$c did not end on SIGALRM"
	echo "$tag: frames flowed after the migration; ib_write_bw stopped then"
	wait $cpid
	crc=$?
	srv=$(job_wait $N1 "mig-$tag" 120)
	src=$?
	tail -n 4 "$OUT/$tag.client"
	[ $crc = 0 ] && [ $src = 0 ] || { echo "$srv" | tail -n 8; fail "$tag: ib_write_bw across the migration failed (client rc $crc, server rc $src)"; }
	if grep -qi 'error\|failed' "$OUT/$tag.client" || echo "$srv" | grep -qi 'completion with error\|failed'; then
		fail "$tag: ib_write_bw reported an error"
	fi
}

# 2. ib_write_bw: the server (node 1) moves in the middle of the run.
want bw && bw_to_moving write_bw $N0 18612

# 3. A ping every 20 ms from node 0 while node 1 moves: replies resume, the
# lost ones are counted against the pause.
want ping && {
	lsh -t $((XCAP + 60)) $N0 "ping -q -i 0.02 -w $XCAP -W 1 $(ip_of $N1)" >"$OUT/ping.out" 2>&1 &
	ppid=$!
	sleep 2
	RESUME_WAIT=150 migrate_now ping
	in_flight ping $N0 "kill -0 $ppid"
	lsh -t 30 $N0 "pkill -INT -x ping" || fail "ping: cannot stop ping on node$N0"
	wait $ppid
	tail -n 2 "$OUT/ping.out"
	grep -q ' 0 received' "$OUT/ping.out" && fail "no ping reply across the migration"
	lsh -t 30 $N0 "ping -c 3 -W 2 $(ip_of $N1) >/dev/null" || fail "node$N1 unreachable after the migration"
	tcp_transfer $N0 $N1 8 5201 || fail "TCP after the migration"
}
# 3b. A TCP stream (as in `make demo`) while its receiver (node 1) moves:
# the lines 1, 2, 3 ... of seq(1), checked in order as they arrive (a
# lost, doubled, reordered or changed segment breaks the count); the
# stream ends when seq is stopped, so only its last line may be cut.
TCP_CHECK='{ b += length($0) + 1 }
$0 != NR "" { if (m) bad = 1; m = NR; v = $0 }
END {
	if (m && (m != NR || index(NR "", v) != 1)) bad = 1
	printf "%d lines, %d bytes, %s\n", NR, b, bad ? "NOT in order" : "in order"
	exit bad
}'
want tcp && {
	job $N1 mig-tcp sh -c 'timeout "$1" nc -l 5202 | awk "$2"' sh $((XCAP + 60)) "$TCP_CHECK" ||
		fail "tcp: cannot start the receiver on node$N1"
	listen_wait $N1 "$(listening 5202)" || note "tcp: the receiver does not listen after 10 s"
	lsh -t $((XCAP + 90)) $N0 "s=\$(date +%s%N); seq 1 4000000000 | timeout $((XCAP + 30)) nc -N $(ip_of $N1) 5202 || exit 1; echo ms=\$(((\$(date +%s%N) - s) / 1000000))" >"$OUT/tcp.tx" 2>&1 &
	tpid=$!
	sleep 2
	kill -0 $tpid 2>/dev/null || { cat "$OUT/tcp.tx"; fail "tcp: the stream ended before the migration"; }
	RESUME_WAIT=150 migrate_now tcp
	in_flight tcp $N0 "kill -0 $tpid"
	lsh -t 30 $N0 "pkill -x seq" || fail "tcp: cannot stop seq on node$N0"
	wait $tpid || { cat "$OUT/tcp.tx"; fail "tcp: the sender failed across the migration"; }
	got=$(job_wait $N1 mig-tcp 120) || fail "tcp: the migrated receiver: $got"
	echo "tcp: $got over TCP in $(sed -n 's/^ms=//p' "$OUT/tcp.tx") ms while the receiver moved"
}
# 4. The other side: the sender of a cnuas-xfer (node 0) moves, its
# receiver (node 1) stays.
want xfer-sender && {
	lsh -t $((XCAP + 200)) $N1 "stdbuf -oL cnuas-xfer -d $DB -p 18613 -s $MIB -c 64 -w 8 -T $((XCAP + 150))" >"$OUT/xs.rx" 2>&1 &
	rxpid=$!
	wait_for 30 lsh -t 10 $N1 "$(listening 18613)" || fail "cnuas-xfer receiver not listening"
	job $N0 mig-xs cnuas-xfer -d "$DA" -p 18613 -s "$MIB" -c 64 -w 8 -D "$XCAP" -T $((XCAP + 150)) "$(ip_of $N1)" ||
		fail "cannot start the cnuas-xfer sender"
	wait_for 60 grep -q 'receiver: local qpn' "$OUT/xs.rx" || { cat "$OUT/xs.rx"; fail "cnuas-xfer did not connect"; }
	sleep 1
	RESUME_WAIT=150 migrate_now xfer-sender $N0 $N1
	xfer_stop xfer-sender $N0 "kill -0 $rxpid"
	wait $rxpid
	rxrc=$?
	tx=$(job_wait $N0 mig-xs 120)
	txrc=$?
	echo "$tx"
	cat "$OUT/xs.rx"
	[ $txrc = 0 ] && [ $rxrc = 0 ] || fail "cnuas-xfer with its sender migrated failed (sender rc $txrc, receiver rc $rxrc)"
}

# rping_to_moving TAG CLIENT PORT: rping (RDMA CM, kernel connection
# state in the guest) from CLIENT while its server (node 1) moves: every
# ping's data checked (-V), none may fail, pings complete before and
# after the migration; then the client is stopped (SIGINT) and the
# server must end on the disconnect (rping returns 0 then).
rping_to_moving() {
	local tag=$1 c=$2 port=$3 rpid crc srv src n n0 n1 rs
	job $N1 "mig-$tag" timeout $((XCAP + 60)) rping -s -a "$(ip_of $N1)" -p "$port" -V -C "$PINGS" ||
		fail "$tag: cannot start the rping server"
	listen_wait $N1 "$(cm_listening)" || note "$tag: the rping server does not listen after 10 s"
	lsh -t $((XCAP + 90)) "$c" "timeout $((XCAP + 60)) stdbuf -oL rping -c -a $(ip_of $N1) -p $port -V -v -C $PINGS" >"$OUT/$tag.client" 2>&1 &
	rpid=$!
	rs=$SECONDS
	wait_for 60 grep -q 'ping data' "$OUT/$tag.client" || { cat "$OUT/$tag.client"; fail "$tag: rping did not start"; }
	sleep 1
	n0=$(pings "$OUT/$tag.client")
	RESUME_WAIT=150 migrate_now "$tag" $N1 "$c"
	n1=$(pings "$OUT/$tag.client")
	pinged_after "$tag" "$OUT/$tag.client" "$n1"
	in_flight "$tag" "$c" "kill -0 $rpid"
	lsh -t 30 "$c" "pkill -INT -x rping" || fail "$tag: cannot stop rping on node$c"
	wait $rpid
	crc=$?
	rs=$((SECONDS - rs))
	srv=$(job_wait $N1 "mig-$tag" 60)
	src=$?
	n=$(pings "$OUT/$tag.client")
	echo "$srv" >"$OUT/$tag.server"
	echo "$tag: $n pings with data checked in $rs s ($n0 before the migration, $n1 at its end); client rc $crc (our SIGINT), server rc $src"
	[ $crc = 130 ] || { tail -n 5 "$OUT/$tag.client"; fail "$tag: rping's client ended with $crc, not on the SIGINT that stopped it"; }
	rping_end "$tag" "$src" "$OUT/$tag.server" "$OUT/$tag.client"
}
# rping_end TAG SERVER-RC SERVER-OUT CLIENT-OUT: the server ended on the
# stopped client's disconnect (rc 0, or lib.sh's judges of rping's own
# teardown race, 255 after DISCONNECT, and of a READ the stopped client
# could no longer answer) and nothing reported a mismatch.
rping_end() {
	PR_SRV=$3 PR_CLI=$4 PR_SRV_RC=$2 PR_CLI_RC=0
	if [ "$2" != 0 ]; then
		rping_exit_race || { [ "$2" = 255 ] && rping_killed_midread "$3"; } || {
			tail -n 5 "$3" "$4"
			fail "$1: rping's server failed across the migration (rc $2)"
		}
	fi
	! grep -qi mismatch "$3" "$4" || fail "$1: data mismatch reported"
}

# 5. rping while its server (node 1) moves.
want rping && rping_to_moving rping $N0 18614
# 6. Many migrations in a row, each checked for a crashed guest (its
# console) and a dead one (its agent), while node 1's CPU writes memory
# (user pages, page cache, the kernel's own data) and node 0 pings it.
want repeat && {
	REPEAT=${MIG_REPEAT:-10}
	job $N1 mig-churn sh -c 'while :; do head -c 16000000 /dev/urandom >/dev/shm/mig-churn; done' ||
		fail "cannot start the memory writer on node$N1"
	job $N0 mig-rep ping -q -i 0.05 "$(ip_of $N1)" || fail "cannot start ping on node$N0"
	down=()
	ib_mark
	for i in $(seq "$REPEAT"); do
		out=$("$LAB" migrate $N1 2>&1) || { echo "$out"; fail "repeat: migration $i of $REPEAT failed"; }
		down+=("$(echo "$out" | sed -n 's/^MIGRATE downtime_ms=\([0-9]*\).*/\1/p')")
		grep -q -E 'Oops|BUG:|Kernel panic|stack guard page|general protection fault' "$LAB_DIR/node$N1.console.log" &&
			fail "repeat: node$N1's kernel failed after migration $i of $REPEAT"
		lsh -t 20 $N1 true || fail "repeat: node$N1's agent is gone after migration $i of $REPEAT"
	done
	lsh -t 20 $N0 "pkill -INT -x ping" || fail "repeat: cannot stop ping on node$N0"
	pings=$(job_wait $N0 mig-rep 20 | grep -o '[0-9]* packets transmitted, [0-9]* received')
	"$LAB" job $N1 kill mig-churn || fail "repeat: cannot stop the memory writer on node$N1"
	lsh -t 10 $N1 "rm -f /dev/shm/mig-churn" || true
	ping_ok $N0 "$(ip_of $N1)" || fail "repeat: node$N1 unreachable after $REPEAT migrations"
	echo "repeat: $REPEAT migrations of node$N1, the guest running after each; downtimes (ms): ${down[*]}; ping: $pings"
	ib_moved repeat "$REPEAT"
}

# 7. A DMA-BUF MR on GPU memory registered before the move, used after
# it: the BAR1 memory (RAM) moved with the guest and the MR still maps it.
want gpu && [ -n "$gpu" ] && {
	gpu_ready $N0 cnuas-gpu-rdma
	gpu_ready $N1 cnuas-gpu-rdma
	job $N1 mig-gpu cnuas-gpu-rdma -d "$DB" -p 18615 -s 256 && listen_wait $N1 "$(listening 18615)" ||
		fail "the cnuas-gpu-rdma server on node$N1 is not listening"
	migrate_now gpu
	lsh -t 200 $N0 "cnuas-gpu-rdma -d $DA -p 18615 -s 256 $(ip_of $N1)" >"$OUT/gpu.client" 2>&1
	crc=$?
	srv=$(job_wait $N1 mig-gpu 60)
	src=$?
	cat "$OUT/gpu.client"
	echo "$srv" | sed 's/^/server: /'
	[ $crc = 0 ] && [ $src = 0 ] || fail "GPU memory MR across the migration: client rc $crc, server rc $src"
}

# 8. A Soft-RoCE peer: node 2 (rxe0) sends to node 1, which moves.
want rxe && {
	X=$(first_rxe_node)
	rdma_ready "$X"
	xfer_to_moving xfer-rxe "$X" 18616
}
want bw-rxe && { rdma_ready "$(first_rxe_node)"; bw_to_moving write_bw-rxe "$(first_rxe_node)" 18619; }
want rping-rxe && { rdma_ready "$(first_rxe_node)"; rping_to_moving rping-rxe "$(first_rxe_node)" 18620; }

# 9, 10. NVMe over RDMA (nvmet-rdma on node 1, nvme-rdma on node 0): the
# target moves, then the host, under O_DIRECT I/O from node 0; the data
# must read back intact and the host must not have needed its error
# recovery (no I/O error, timeout or reconnect).
# nvme_across TAG MOVER PEER [HOST]: HOST (default node 0) runs the I/O.
nvme_across() {
	local tag=$1 mv=$2 peer=$3 H=${4:-$N0} dev res rc klog
	# One connect: nvmet_export waited for the port's listener.
	dev=$(lsh -t 120 $H "dmesg -C
		echo 'transport=rdma,traddr=$(ip_of $N1),trsvcid=4420,nqn=$NQN' >/dev/nvme-fabrics ||
			{ echo 'the connect failed:'; dmesg | tail -n 8; exit 1; }
		for i in \$(seq 50); do
			for c in /sys/class/nvme/nvme*; do
				grep -qx $NQN \$c/subsysnqn 2>/dev/null || continue
				for b in /sys/block/\${c##*/}n*; do
					[ -e \$b ] && { echo \${b##*/}; exit 0; }
				done
			done
			sleep 0.2
		done; exit 1") || fail "$tag: node$H: no NVMe namespace from $NQN over RDMA${dev:+: $dev}"
	# Passes of 32 MiB (1 MiB and 4 KiB blocks), each read back and
	# compared, until the migration is over and one more pass is done: a
	# job, /tmp/mig-nvme.log its progress.
	lsh -t 30 $H "rm -f /tmp/mig-nvme.log /tmp/mig-nvme.stop; head -c 32M /dev/urandom >/tmp/mig-nvme.in" ||
		fail "$tag: node$H: cannot make the test data"
	job $H mig-nvme sh -c "$NVME_PASSES" sh "$dev" || fail "$tag: node$H: cannot start the NVMe I/O"
	wait_for 60 lsh -t 10 $H "grep -qs 'pass 1 ok' /tmp/mig-nvme.log" || fail "$tag: node$H: the first NVMe pass did not finish"
	# The driver's reasons (dynamic debug, into the kernel log only) for
	# anything that fails a QP, should the host need its error recovery.
	for n in $H $N1; do
		[ "$(node_kind "$n")" = cnuas ] || continue
		lsh -t 30 "$n" "c=/sys/kernel/debug/dynamic_debug/control
			[ -w \$c ] || mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
			[ -w \$c ] || c=/proc/dynamic_debug/control
			echo 'module cnuas_ib +p' >\$c" >/dev/null 2>&1 || true
	done
	migrate_now "$tag" "$mv" "$peer"
	lsh -t 10 $H "touch /tmp/mig-nvme.stop" || fail "$tag: node$H: cannot stop the NVMe I/O"
	res=$(job_wait $H mig-nvme 120)
	rc=$?
	[ $rc != 255 ] || fail "$tag: node$H: the NVMe I/O never finished: $res"
	echo "$res" | tail -n 3
	klog=$(lsh -t 20 $H "dmesg | grep -i -E 'nvme.*(error|timeout|reconnect|reset|failed)'")
	for n in $H $N1; do
		[ "$(node_kind "$n")" = cnuas ] || continue
		lsh -t 30 "$n" "for c in /sys/kernel/debug/dynamic_debug/control /proc/dynamic_debug/control; do
			[ -w \$c ] && echo 'module cnuas_ib -p' >\$c && break; done" >/dev/null 2>&1 || true
	done
	lsh -t 60 $H "for c in /sys/class/nvme/nvme*; do grep -qx $NQN \$c/subsysnqn 2>/dev/null && echo 1 >\$c/delete_controller; done; true" >/dev/null 2>&1
	[ $rc = 0 ] || fail "$tag: NVMe over RDMA across the migration of node$mv: $(echo "$res" | tail -n 1)"
	[ -z "$klog" ] || {
		echo "$klog"
		for n in $H $N1; do
			echo "---- node$n: $(rdma_dev "$n") counters that are not 0, and its last kernel lines"
			lsh -t 20 $n "cd /sys/class/infiniband/$(rdma_dev "$n")/ports/1/hw_counters && grep -H -v '^0\$' * | tr '\\n' ' '; echo; dmesg | grep -i -E 'cnuas.*(fail|nak|err|invalid|fatal|refus|no longer|malformed)' | tail -n 30; dmesg | tail -n 6"
		done
		fail "$tag: node$H's NVMe host needed its error recovery across the migration of node$mv"
	}
	echo "$tag: $(echo "$res" | grep -c ok) passes of 32 MiB written and read back intact while node$mv moved"
}
# NVME_PASSES DEV (sh -c): the passes on /dev/DEV until /tmp/mig-nvme.stop.
NVME_PASSES='sum=$(sha256sum </tmp/mig-nvme.in); n=0
say() { echo "$*"; echo "$*" >>/tmp/mig-nvme.log; }
while :; do
	n=$((n + 1))
	dd if=/tmp/mig-nvme.in of="/dev/$1" bs=1M oflag=direct 2>/dev/null || { say "pass $n: write failed"; exit 1; }
	dd if=/tmp/mig-nvme.in of="/dev/$1" bs=4k count=1024 oflag=direct conv=notrunc 2>/dev/null ||
		{ say "pass $n: 4k write failed"; exit 1; }
	got=$(dd if="/dev/$1" bs=1M count=32 iflag=direct 2>/dev/null | sha256sum)
	[ "$got" = "$sum" ] || { say "pass $n: read back another checksum"; exit 1; }
	say "pass $n ok"
	[ ! -e /tmp/mig-nvme.stop ] || exit 0
done'
if want nvme || want nvme-host || want nvme-rxe; then
	NQN=nqn.2026-12.org.cnuas:vm82 IMG=/tmp/mig-nvme.img
	lsh -t 60 $N1 "modprobe -a nvmet nvmet-rdma" || skip "no nvmet-rdma in the guest kernel"
	lsh -t 60 $N0 "modprobe nvme-rdma" || skip "no nvme-rdma in the guest kernel"
	nvmet_export $N1 $NQN $IMG 82
	want nvme && nvme_across nvme $N1 $N0
	want nvme-host && nvme_across nvme-host $N0 $N1
	# a Soft-RoCE host (node 2, rxe0) while the target moves
	want nvme-rxe && {
		X=$(first_rxe_node)
		lsh -t 60 "$X" "modprobe nvme-rdma" || fail "node$X: no nvme-rdma"
		nvme_across nvme-rxe $N1 "$X" "$X"
	}
fi

# 11. ib_write_bw: the client (node 0) moves, the server stays.
want bw-client && {
	lsh -t $((XCAP + 180)) $N1 "timeout $((XCAP + 120)) stdbuf -oL ib_write_bw -d $DB -x $GB -D $XCAP -f 2 -F -p 18617 --report_gbits" >"$OUT/bwc.server" 2>&1 &
	spid=$!
	wait_for 30 lsh -t 10 $N1 "$(listening 18617)" || fail "bw-client: the ib_write_bw server is not listening"
	job $N0 mig-bwc timeout $((XCAP + 120)) ib_write_bw -d "$DA" -x "$GA" -D "$XCAP" -f 2 -F -p 18617 --report_gbits "$(ip_of $N1)" ||
		fail "bw-client: cannot start the ib_write_bw client"
	wait_for 60 grep -q 'remote address' "$OUT/bwc.server" || { cat "$OUT/bwc.server"; fail "bw-client: ib_write_bw did not connect"; }
	sleep 1
	kill -0 $spid 2>/dev/null || { cat "$OUT/bwc.server"; fail "bw-client: ib_write_bw ended before the migration"; }
	RESUME_WAIT=150 migrate_now write_bw-client $N0 $N1
	# the server waits for the client: it runs while the client does
	in_flight write_bw-client $N1 "kill -0 $spid"
	perf_stop $N0 "gone $spid" || fail "bw-client: ib_write_bw on node$N0 did not end on SIGALRM"
	echo "write_bw-client: frames flowed after the migration; ib_write_bw stopped then"
	wait $spid
	src=$?
	cli=$(job_wait $N0 mig-bwc 120)
	crc=$?
	echo "$cli" | tail -n 3
	[ $crc = 0 ] && [ $src = 0 ] || { tail -n 8 "$OUT/bwc.server"; fail "bw-client: ib_write_bw with its client migrated failed (client rc $crc, server rc $src)"; }
	if grep -qi 'completion with error\|failed' "$OUT/bwc.server" || echo "$cli" | grep -qi 'error\|failed'; then
		fail "bw-client: ib_write_bw reported an error"
	fi
}

# 12. rping: the client (node 0) moves, the server stays; data checked.
want rping-client && {
	lsh -t $((XCAP + 90)) $N1 "timeout $((XCAP + 60)) stdbuf -oL rping -s -a $(ip_of $N1) -p 18618 -V -v -C $PINGS" >"$OUT/rpc.server" 2>&1 &
	spid=$!
	wait_for 30 lsh -t 10 $N1 "$(cm_listening)" || fail "rping-client: the rping server is not listening"
	job $N0 mig-rpc timeout $((XCAP + 60)) rping -c -a "$(ip_of $N1)" -p 18618 -V -v -C "$PINGS" ||
		fail "rping-client: cannot start the rping client"
	wait_for 60 grep -q 'ping data' "$OUT/rpc.server" || { cat "$OUT/rpc.server"; fail "rping-client: rping did not start"; }
	sleep 1
	RESUME_WAIT=150 migrate_now rping-client $N0 $N1
	# the server's count: the client's output is read back at the end
	pinged_after rping-client "$OUT/rpc.server" "$(pings "$OUT/rpc.server")"
	in_flight rping-client $N1 "kill -0 $spid"
	lsh -t 30 $N0 "pkill -INT -x rping" || fail "rping-client: cannot stop rping on node$N0"
	wait $spid
	src=$?
	job_wait $N0 mig-rpc 60 >"$OUT/rpc.client"
	crc=$?
	n=$(pings "$OUT/rpc.client")
	echo "rping-client: $n pings with data checked; client rc $crc (our SIGINT), server rc $src"
	[ $crc = 130 ] || { tail -n 5 "$OUT/rpc.client"; fail "rping-client: rping's client ended with $crc, not on the SIGINT that stopped it"; }
	rping_end rping-client "$src" "$OUT/rpc.server" "$OUT/rpc.client"
}

# 13. CnuasLink: node 0's GPU sends frames of 1 B..64 KiB to node 1's,
# which compares each; the sender moves, then the receiver. The link
# stays up for both guests and no frame is lost, doubled or failed: the
# frame in flight moves in the device state and the peer drops a copy.
want link && [ -n "$gpu" ] && {
	LF=${MIG_LINK_FRAMES:-40000}
	gpu_ready $N0 cnuasgpu-test
	gpu_ready $N1 cnuasgpu-test
	job $N1 mig-link cnuasgpu-test link-recv 0 "$LF" && job $N0 mig-link cnuasgpu-test link-send 0 "$LF" ||
		fail "link: cannot start cnuasgpu-test"
	sleep 3
	for mv in $N0 $N1; do
		lsh -t 10 $mv "pgrep -x cnuasgpu-test >/dev/null" || {
			job_wait $mv mig-link 10
			fail "link: cnuasgpu-test on node$mv ended before its migration"
		}
		migrate_now link-node$mv $mv $((1 - mv)) nopause
	done
	for n in $N0 $N1; do
		res=$(job_wait $n mig-link 600)
		rc=$?
		echo "$res" | tail -n 2 | sed "s/^/node$n: /"
		[ $rc = 0 ] || fail "link: cnuasgpu-test on node$n failed across the migrations (rc $rc)"
	done
	echo "link: $LF CnuasLink frames sent and compared while the sender, then the receiver moved"
}

# A guest that crashed after a migration is a failure of the migration
# (in the IB lab the consoles hold the earlier tests' lines too: only new
# ones count).
[ "$(console_problems)" = "$PROBLEMS0" ] ||
	fail "a guest kernel reported a problem after the migrations"
exit 0
