# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# The kernel's storage ULPs over RDMA (sourced by tests 92 to 95 after
# lib.sh): their common start and end, the RDMA counters that show where
# the data went, the fio jobs that write data, read it back and check it,
# once on the consumer and once more on the server's own copy, and the
# same I/O through faults. The servers' and clients' setup is shared
# with scripts/bench-rdma (lab.d/storage.sh).
# shellcheck source=../../scripts/lab.d/storage.sh
. "$VM_TESTS/../../scripts/lab.d/storage.sh"

# The default pair of a test that reloads its consumer's driver: on IB
# node 0 runs OpenSM, so the consumer is node 1 there.
# shellcheck disable=SC2034 # for the tests
if [ "$LINK_LAYER" = ib ]; then ST_PAIR="1 0"; else ST_PAIR="0 1"; fi

# st_faults_here LAYER: whether this cell takes its test through the
# faults. Each protocol goes through them over one link layer, LAYER: the
# upper layer's recovery is the same code over both, and cnuas's own side
# of each fault (the switch's drops, a port hung up, the driver reloaded)
# is checked over both by tests 57, 70 and 80. That keeps the four
# storage tests' cost in make check near a few minutes (the faults took
# half of it). CNUAS_STORAGE_FAULTS=both runs them in both cells.
st_faults_here() {
	if [ "$LINK_LAYER" = "$1" ] || [ "${CNUAS_STORAGE_FAULTS:-}" = both ]; then
		return 0
	fi
	note "no faults over $LINK_LAYER: this test goes through them over $1 (CNUAS_STORAGE_FAULTS=both: over both)"
	return 1
}

# This test's marks in the kernel logs (an earlier test left its own).
ST_MARK="$(basename "$0" .sh) $$"

# storage_begin: the start of every test (after rdma_pair and its
# cleanup function): cleanup on exit, the consoles' problems so far, the
# server's kernel log marked (node B: the server or target of every
# storage test), both nodes' RDMA devices ready.
# storage_end WHY [FAULTS_WHY]: the end, after the teardown: no new
# problem on a console, and no error in the server's kernel log since the
# mark that the ERE WHY does not explain, or from the faults' start on
# WHY nor FAULTS_WHY (st_server_check).
storage_begin() {
	trap cleanup EXIT
	ST_PROBLEMS=$(console_problems)
	st_server_mark "$B" "log begins"
	rdma_ready "$A"
	rdma_ready "$B"
}
storage_end() {
	[ "$(console_problems)" = "$ST_PROBLEMS" ] || fail "kernel problems on a console"
	st_server_check "$B" "${1:-}" "${2:-}"
}

# ---- the server's kernel log (st_server_*) ----
# The consumer's messages are checked through the faults; the server's
# (nfsd and svcrdma, LIO's ib_isert and ib_srpt, RDS) over the whole
# test: a target that logs a failed RDMA READ, a protection error or a
# dropped connection nothing explains fails the test even though the
# consumer got its data. A line reports an error when printk's level is
# err or worse, or when it says so in words (ST_ERR_RE, and on the server
# also refused, reject, unexpected, invalid, protection, cannot, unable:
# ib_srpt and ib_isert report that way). Level warn alone is no error:
# a loaded host makes the guest warn (hrtimer, clocksource), which says
# nothing about the server.
# The consumer's error words (st_through_faults, st_fault_check).
ST_ERR_RE='err(or|ors|no)?|fail(ed|s|ure)?|abort(ed|ing)?|timed out|timeout|lost|I/O'
ST_SERVER_ERR_RE="$ST_ERR_RE|refused|reject(ed|s|ing)?|unexpected|invalid|protection|cannot|unable"
# LIO's first load in a guest (tests 93, 94): target_core_mod looks for
# its saved configuration in /etc/target (db_root), which no guest has.
# shellcheck disable=SC2034 # for the tests
ST_WHY_LIO='^db_root: cannot open: /etc/target$'

# st_server_mark NODE WHAT: WHAT ("log begins", "faults begin") in
# NODE's kernel log: st_through_faults and st_faults mark the server's
# log where the faults begin, since only from there on can they explain
# an error.
st_server_mark() {
	lsh -t 30 "$1" "echo 'cnuas-storage: server $2 $ST_MARK' >/dev/kmsg" || fail "node$1: no /dev/kmsg"
}

# st_server_check NODE WHY FAULTS_WHY: NODE's kernel lines since its
# "log begins" mark are printed (all when they are few, else those that
# report an error); each that reports an error must match the ERE WHY,
# or from the "faults begin" mark on WHY or FAULTS_WHY. The test names
# each entry by the event that explains it ("" or "^$": none).
st_server_check() {
	local n=$1 why=${2:-^\$} fwhy=${3:-^\$} raw log errs bad
	raw=$(lsh -t 30 "$n" "dmesg -r | sed -n '/cnuas-storage: server log begins $ST_MARK\$/,\$p'") ||
		fail "node$n: cannot read its kernel log"
	[ -n "$raw" ] || fail "node$n: this test's mark is gone from its kernel log"
	# Each line after the mark as "PHASE<tab>LEVEL<tab>[time] message":
	# PHASE 1 from the faults' mark on (its own LEVEL: -), LEVEL printk's.
	log=$(awk -v f="cnuas-storage: server faults begin $ST_MARK" 'NR > 1 { l = 6
		if (match($0, /^<[0-9]+>/)) { l = substr($0, 2, RLENGTH - 2) % 8; $0 = substr($0, RLENGTH + 1) }
		if (index($0, f)) { p = 1; l = "-" }
		print p + 0 "\t" l "\t" $0 }' <<<"$raw")
	[ -n "$log" ] || { echo "node$n's kernel (the server) logged nothing during the test"; return 0; }
	errs=$({ grep -nE '^[01]'$'\t''[0-3]'$'\t' <<<"$log"; grep -niwE "$ST_SERVER_ERR_RE" <<<"$log"; } |
		sort -t: -k1,1n -u | cut -d: -f2-)
	if [ "$(wc -l <<<"$log")" -le 40 ]; then
		echo "node$n's kernel (the server) during the test:"
		cut -f3- <<<"$log" | sed 's/^/  /'
	else
		echo "node$n's kernel (the server) during the test: $(wc -l <<<"$log") lines, those that report an error:"
		[ -z "$errs" ] || cut -f3- <<<"$errs" | sed 's/^/  /'
	fi
	[ -n "$errs" ] || { echo "node$n (the server): no error"; return 0; }
	bad=$({
		grep -E '^0'$'\t' <<<"$errs" | cut -f3- | sed -E 's/^\[ *[0-9]+\.[0-9]+\] //' | grep -vE "$why"
		grep -E '^1'$'\t' <<<"$errs" | cut -f3- | sed -E 's/^\[ *[0-9]+\.[0-9]+\] //' | grep -vE "$why|$fwhy"
	})
	[ -z "$bad" ] || { echo "$bad"; fail "node$n (the server): errors nothing in this test explains: $(head -n 1 <<<"$bad")"; }
	echo "node$n (the server): $(wc -l <<<"$errs") lines report an error, each explained"
}

# st_modprobe NODE WHAT MODULE...: load the modules; Debian's kernel builds
# them all, so one that does not load fails the test (WHAT: what they are).
st_modprobe() {
	local n=$1 what=$2 out
	shift 2
	out=$(lsh -t 60 "$n" "modprobe -a $*" 2>&1) || fail "node$n: $what does not load: $out"
}

# The counters compared, by the names cnuas_ib and rdma_rxe share (rxe has
# no fast_reg nor remote_inv: those read 0 there).
ST_COUNTERS="sent_pkts rcvd_pkts rdma_sends rdma_recvs fast_reg remote_inv"

# st_counters NODE: ST_COUNTERS's values on NODE's RDMA device, one line.
st_counters() {
	lsh -t 30 "$1" "cd /sys/class/infiniband/$(rdma_dev "$1")/ports/1/hw_counters &&
		for c in $ST_COUNTERS; do cat \$c 2>/dev/null || echo 0; done | paste -sd ' '" ||
		fail "node$1: cannot read the counters of $(rdma_dev "$1")"
}

# st_delta BEFORE AFTER NAME: how much counter NAME grew between two
# st_counters lines.
st_delta() {
	local i=0 n b a
	read -ra b <<<"$1"
	read -ra a <<<"$2"
	for n in $ST_COUNTERS; do
		[ "$n" = "$3" ] && { echo $((a[i] - b[i])); return 0; }
		i=$((i + 1))
	done
	fail "st_delta: no counter $3"
}

# Three fio jobs on one 64 MiB file or device, each on its own region:
#   seq  1 MiB sequential O_DIRECT writes (libaio, 4 in flight), crc32c;
#   rnd  4 KiB random O_DIRECT writes (libaio, 16 in flight), md5;
#   buf  64 KiB random buffered writes, fsync at the end, read back by a
#        second run (--verify_only) after the page cache was dropped, so
#        those reads leave the node too.
# Every block is written once and read back once: ST_MIB MiB each way.
# shellcheck disable=SC2034 # for the tests
ST_MIB=56

# st_fio_opts JOB FILE: fio's options for JOB on FILE.
st_fio_opts() {
	local o="--name=$1 --filename=$2 --randseed=4492 --verify_fatal=1 --fallocate=none"
	case $1 in
	seq) o+=" --rw=write --bs=1M --offset=0 --size=32M --direct=1 --ioengine=libaio --iodepth=4 --verify=crc32c" ;;
	rnd) o+=" --rw=randwrite --bs=4k --offset=32M --size=8M --direct=1 --ioengine=libaio --iodepth=16 --verify=md5" ;;
	buf) o+=" --rw=randwrite --bs=64k --offset=40M --size=16M --ioengine=psync --verify=crc32c" ;;
	peer) o+=" --rw=randwrite --bsrange=4k-1M --offset=56M --size=8M --direct=1 --ioengine=libaio --iodepth=8 --verify=crc32c" ;;
	*) fail "st_fio_opts: no job $1" ;;
	esac
	echo "$o"
}

# st_fio_guest SCRIPT: run SCRIPT's fio commands in the guest with their
# output in a log; print fio's summary lines, all of the log's end on error.
st_fio_guest() {
	echo "log=/tmp/cnuas-storage-fio.log
		( set -e
		$1
		) >\$log 2>&1; rc=\$?
		grep -E '^== |^ *(READ|WRITE):|err=' \$log
		[ \$rc = 0 ] || { echo '---- fio log:'; tail -n 30 \$log; }
		exit \$rc"
}

# st_fio_write NODE FILE: the three jobs write FILE on NODE and check what
# they read back. Prints the seconds they took as the last line. Called
# in $(...), where fail ends only the subshell: the caller exits on its
# status (out=$(st_fio_write N F) || { echo "$out"; exit 1; }).
st_fio_write() {
	local out t0=$SECONDS
	out=$(lsh -t 300 "$1" "$(st_fio_guest "
		echo '== seq'; fio $(st_fio_opts seq "$2")
		echo '== rnd'; fio $(st_fio_opts rnd "$2")
		echo '== buf (write, fsync)'; fio $(st_fio_opts buf "$2") --do_verify=0 --end_fsync=1
		sync; echo 3 >/proc/sys/vm/drop_caches
		echo '== buf (read back, page cache dropped)'; fio $(st_fio_opts buf "$2") --verify_only")" 2>&1) ||
		{ echo "$out"; fail "node$1: fio on $2 failed or found bad data"; }
	echo "$out"
	echo $((SECONDS - t0))
}

# st_fio_check NODE FILE [JOB...]: NODE (the server) checks its own FILE,
# where the jobs' data (the three above unless named) must be, with fio
# --verify_only (buffered: the server's file may live on tmpfs, which has
# no O_DIRECT).
st_fio_check() {
	local out j s='' n=$1 f=$2 jobs=(seq rnd buf)
	shift 2
	[ $# = 0 ] || jobs=("$@")
	for j in "${jobs[@]}"; do
		s+="echo '== $j (server side)'; fio $(st_fio_opts $j "$f") --direct=0 --ioengine=psync --verify_only
		"
	done
	out=$(lsh -t 120 "$n" "$(st_fio_guest "$s")" 2>&1) ||
		{ echo "$out"; fail "node$n: the data in its $f is not what was written"; }
	echo "$out"
}

# st_no_cm_id NODE PORT: within 15 s, NODE has no RDMA CM ID on PORT left
# (a listener or a connection of a stopped server or client).
st_no_cm_id() {
	lsh -t 30 "$1" "i=0; while rdma res show cm_id 2>/dev/null | grep -qE ':$2( |\$)'; do
		[ \$i -lt 75 ] || { rdma res show cm_id | grep -E ':$2( |\$)'; exit 1; }
		sleep 0.2; i=\$((i + 1)); done" ||
		fail "node$1: RDMA CM IDs on port $2 are left after the teardown"
}

# ---- Soft-RoCE as the other end (st_rxe_*) ----
# A short run between a Linux Soft-RoCE node (rdma_rxe) and a cnuas node,
# after the cnuas pair passed the same protocol: the job "peer" writes
# 8 MiB in 4 KiB to 1 MiB O_DIRECT blocks and reads them back.

# st_rxe_peer: the lab's first Soft-RoCE node when the test runs on two
# cnuas nodes of an Ethernet lab that has one; else nothing.
st_rxe_peer() {
	[ "$LINK_LAYER" = eth ] && [ "$RXE_NODES" -ge 1 ] &&
		[ "$(rdma_dev "$A")" = cnuas_0 ] && [ "$(rdma_dev "$B")" = cnuas_0 ] || return 0
	first_rxe_node
}

# st_rxe_fail RXE CNUAS WHAT OUT: the Soft-RoCE step failed. The cnuas
# pair passed the same steps, so the test names the side whose kernel
# reported the error: both logs' RDMA lines are shown. A failure is a
# FAIL unless a known Soft-RoCE defect explains it (none known yet).
st_rxe_fail() {
	echo "$4"
	echo "node$1 (Soft-RoCE) kernel:"
	lsh -t 30 "$1" "dmesg | grep -iE 'rxe|rdma|iser|iscsi|rpcrdma|nfs' | tail -n 20" | sed 's/^/  /'
	echo "node$2 (cnuas) kernel:"
	lsh -t 30 "$2" "dmesg | grep -iE 'cnuas|rdma|iser|isert|iscsi|rpcrdma|nfs' | tail -n 20" | sed 's/^/  /'
	fail "Soft-RoCE node$1 with cnuas node$2: $3 (the cnuas pair passed the same step)"
}

# st_rxe_fio RXE CNUAS FILE: the job "peer" on FILE of Soft-RoCE node RXE
# (the client); prints fio's summary and the seconds as the last line.
# Called as st_fio_write is.
st_rxe_fio() {
	local out t0=$SECONDS
	out=$(lsh -t 120 "$1" "$(st_fio_guest "echo '== peer'; fio $(st_fio_opts peer "$3")")" 2>&1) ||
		st_rxe_fail "$1" "$2" "fio on $3 failed or found bad data" "$out"
	echo "$out"
	echo $((SECONDS - t0))
}

# ---- I/O through faults (st_through_faults) ----
# A loop of fio jobs on the consumer, each writing 4 MiB in 64 KiB
# O_DIRECT blocks (8 in flight) with a new seed and reading them back
# (crc32c, fatal), counts its passes while the host injects one fault
# after another; each fault must be followed by two more passes (one
# whole pass after the fault cleared): the ULP reconnected by itself and
# the data came back as written.
ST_F=/tmp/cnuas-st-faults

# st_loop_start NODE FILE: the loop runs on NODE in the background.
st_loop_start() {
	lsh -t 30 "$1" "rm -f $ST_F.*; echo 0 >$ST_F.passes
		echo 'cnuas-storage: faults begin $ST_MARK' >/dev/kmsg
		setsid sh -c 'n=0
			while [ ! -e $ST_F.stop ]; do
				fio --name=faults --filename=$2 --rw=randwrite --bs=64k --offset=0 --size=4M \
					--direct=1 --ioengine=libaio --iodepth=8 --verify=crc32c --verify_fatal=1 \
					--fallocate=none --randseed=\$((n + 44)) >>$ST_F.log 2>&1 ||
					{ echo fail >$ST_F.rc; exit 1; }
				n=\$((n + 1)); echo \$n >$ST_F.passes
			done; echo ok >$ST_F.rc' >/dev/null 2>&1 &" ||
		fail "node$1: cannot start the fio loop"
}

# st_passes NODE: the loop's passes so far; "fail" once a run of it failed.
st_passes() {
	lsh -t 30 "$1" "[ ! -e $ST_F.rc ] || [ \"\$(cat $ST_F.rc)\" = ok ] || { echo fail; exit 0; }; cat $ST_F.passes"
}

# st_passes_after NODE BEFORE WHAT SECONDS: wait until NODE's loop did two
# passes more than BEFORE; fail (showing the loop's log) after SECONDS or when
# a pass failed. ST_SECS: the seconds it took.
st_passes_after() {
	local n t0=$SECONDS
	while :; do
		n=$(st_passes "$1") || n=0
		n=${n:-0}
		[ "$n" != fail ] || {
			lsh -t 30 "$1" "tail -n 30 $ST_F.log"
			fail "node$1: a run of the I/O loop failed (an error or wrong data) after $3"
		}
		[ "$n" -lt $(($2 + 2)) ] || break
		[ $((SECONDS - t0)) -lt "$4" ] || {
			lsh -t 30 "$1" "tail -n 12 $ST_F.log; dmesg | tail -n 15"
			fail "node$1: the I/O did not resume within $4 s after $3 ($n passes, $2 before)"
		}
		sleep 1
	done
	ST_SECS=$((SECONDS - t0))
}

# st_switch_port NODE: the switch port of cnuas NODE (its VM name).
st_switch_port() {
	"$LAB" switch -- --json show | /usr/bin/python3 -c '
import json, sys
print(" ".join(str(p["id"]) for p in json.load(sys.stdin)["ports"] if p["vm"] == "node" + sys.argv[1]))' "$1"
}

# st_link_downs NODE: how often cnuas_ib on NODE said its port went down.
st_link_downs() {
	lsh -t 30 "$1" 'dmesg | grep -cE "cnuas_0: port 1 (link )?down"'
}

# st_through_faults NODE FILE EXPLAINED: fio's loop on FILE of consumer
# NODE through (1) 2% of frames dropped and 2% reordered by the switch on
# every port, (2) NODE's switch port hung up (its QEMU connects again
# within a second; on IB the SM makes the port Active again), (3) NODE's
# cnuas_ib removed and loaded again, on IB with cnuas_net (the ULP sees
# its device go away and come back). NODE's kernel messages from the
# start are printed; any that reports an error must match the ERE
# EXPLAINED (the errors the faults explain).
st_through_faults() {
	local n=$1 f=$2 ok=$3 p port d0 d1 log bad t0=$SECONDS
	[ "$(rdma_dev "$n")" = cnuas_0 ] || { note "node$n is no cnuas node: no fault phase"; return 0; }
	# On any exit: no faults left, the loop stopped, the test's cleanup.
	trap '"$LAB" switch -- set-fault clear >/dev/null 2>&1
		lsh -t 20 '"$n"' "touch '"$ST_F"'.stop" >/dev/null 2>&1; cleanup' EXIT
	st_server_mark "$B" "faults begin"
	st_loop_start "$n" "$f"
	st_passes_after "$n" 0 "the start" 60
	note "node$n: fio loop running ($ST_SECS s for two passes)"

	p=$(st_passes "$n")
	"$LAB" switch -- set-fault drop=2 reorder=2 seed=44 >/dev/null || fail "set-fault refused"
	st_passes_after "$n" "$p" "drops and reorders" 180
	"$LAB" switch -- set-fault clear >/dev/null || fail "clearing the faults failed"
	echo "faults: two passes through 2% drops, 2% reorders in $ST_SECS s"

	p=$(st_passes "$n")
	port=$(st_switch_port "$n")
	[ -n "$port" ] && [ "${port// /}" = "$port" ] || fail "node$n: not one switch port: '$port'"
	d0=$(st_link_downs "$n")
	"$LAB" switch -- del-port "$port" >/dev/null || fail "del-port $port refused"
	st_passes_after "$n" "$p" "its switch port hung up" 180
	d1=$(st_link_downs "$n")
	[ "$d1" -gt "$d0" ] || fail "node$n: cnuas_0 saw no link down after del-port $port"
	echo "faults: switch port $port hung up, link down and back, two passes in $ST_SECS s"

	p=$(st_passes "$n")
	st_fault_reload "$n"
	st_passes_after "$n" "$p" "cnuas_ib reloaded" 240
	echo "faults: cnuas_ib reloaded under the I/O, two passes in $ST_SECS s"

	st_loop_stop "$n" fio
	log=$(lsh -t 30 "$n" "dmesg | sed -n '/cnuas-storage: faults begin $ST_MARK\$/,\$p'")
	echo "node$n's kernel during the faults:"
	echo "$log" | sed 's/^/  /'
	bad=$(echo "$log" | grep -iwE "$ST_ERR_RE" | grep -vE "$ok")
	[ -z "$bad" ] || { echo "$bad"; fail "node$n: errors the faults do not explain"; }
	echo "PASS through faults: $(st_passes "$n") passes of 4 MiB written and read back intact in $((SECONDS - t0)) s"
}

# ---- faults around a test's own loop (st_faults) ----
# st_through_faults's three faults, for a consumer whose loop is not fio
# on one file (RDS, test 95) or whose disk cannot live through the
# driver's reload (SRP, test 94). The test's loop keeps st_loop_start's
# files: $ST_F.passes counts whole passes, $ST_F.rc says ok or fail once
# it ended, $ST_F.stop ends it. Each fault's kernel messages are checked
# on their own: a line that reports an error must match the ERE of the
# fault that explains it, ST_WHY_DROPS, ST_WHY_HANGUP or ST_WHY_RELOAD
# (set by the test; "^$" when the fault explains none).

# st_fault_mark NODE FAULT: FAULT's mark in NODE's kernel log.
st_fault_mark() {
	lsh -t 30 "$1" "echo 'cnuas-storage: fault $2 $ST_MARK' >/dev/kmsg" || fail "node$1: no /dev/kmsg"
}

# st_fault_check NODE FAULT WHY: NODE's kernel messages since FAULT's
# mark, printed; each that reports an error must match the ERE WHY.
st_fault_check() {
	local log bad
	log=$(lsh -t 30 "$1" "dmesg | awk 'index(\$0, \"cnuas-storage: fault $2 $ST_MARK\") { on = 1; next } on'")
	echo "node$1's kernel during the fault ($2):"
	echo "$log" | sed 's/^/  /'
	bad=$(echo "$log" | grep -iwE "$ST_ERR_RE" | grep -vE "$3")
	[ -z "$bad" ] || { echo "$bad"; fail "node$1: errors the fault ($2) does not explain"; }
}

# st_loop_stop NODE WHAT: the fault loop on NODE stopped and ended; fail
# (saying WHAT found it) if a pass found an error or wrong data.
st_loop_stop() {
	lsh -t 30 "$1" "touch $ST_F.stop" || fail "node$1: cannot stop the loop"
	wait_for 120 lsh -t 20 "$1" "[ -e $ST_F.rc ]" || fail "node$1: the loop did not end"
	trap cleanup EXIT
	[ "$(lsh -t 20 "$1" "cat $ST_F.rc")" = ok ] || {
		lsh -t 30 "$1" "tail -n 30 $ST_F.log"
		fail "node$1: $2 found an error or wrong data"
	}
}

# st_fault_reload NODE: NODE's cnuas_ib removed and loaded again until
# its device is ready. On IB cnuas_net too, as test 80: the link bounces,
# the SM sees the port come back (Trap 128) and makes it Active again;
# the new ib0 is down, so no route to the server until it is up.
st_fault_reload() {
	if [ "$LINK_LAYER" = ib ]; then
		lsh -t 240 "$1" "rmmod cnuas_ib && rmmod cnuas_net && modprobe cnuas_net && modprobe cnuas_ib" ||
			fail "node$1: reloading cnuas_net and cnuas_ib failed"
		wait_for 150 lsh -t 20 "$1" "[ -e /sys/class/net/ib0 ] &&
			grep -q ACTIVE /sys/class/infiniband/cnuas_0/ports/1/state" ||
			fail "node$1: no ib0 or no ACTIVE port 150 s after the reload"
		ipoib_reconfigure "$1" || fail "node$1: cannot bring ib0 up after the reload"
	else
		lsh -t 240 "$1" "rmmod cnuas_ib && modprobe cnuas_ib" || fail "node$1: reloading cnuas_ib failed"
	fi
	rdma_ready "$1"
}

# st_faults NODE START RELOADED: START (a command) starts the loop on
# NODE; the three faults follow, each followed by two more passes. After
# the reload RELOADED (a command, or "") runs first: the test's own steps
# when its loop cannot go on by itself.
st_faults() {
	local n=$1 p port d0 t0=$SECONDS
	[ "$(rdma_dev "$n")" = cnuas_0 ] || { note "node$n is no cnuas node: no fault phase"; return 0; }
	trap '"$LAB" switch -- set-fault clear >/dev/null 2>&1
		lsh -t 20 '"$n"' "touch '"$ST_F"'.stop" >/dev/null 2>&1; cleanup' EXIT
	st_server_mark "$B" "faults begin"
	$2
	st_passes_after "$n" 0 "the start" 60
	note "node$n: loop running ($ST_SECS s for two passes)"

	st_fault_mark "$n" drops
	p=$(st_passes "$n")
	"$LAB" switch -- set-fault drop=2 reorder=2 seed=44 >/dev/null || fail "set-fault refused"
	st_passes_after "$n" "$p" "drops and reorders" 180
	"$LAB" switch -- set-fault clear >/dev/null || fail "clearing the faults failed"
	echo "faults: two passes through 2% drops, 2% reorders in $ST_SECS s"
	st_fault_check "$n" drops "$ST_WHY_DROPS"

	st_fault_mark "$n" hangup
	p=$(st_passes "$n")
	port=$(st_switch_port "$n")
	[ -n "$port" ] && [ "${port// /}" = "$port" ] || fail "node$n: not one switch port: '$port'"
	d0=$(st_link_downs "$n")
	"$LAB" switch -- del-port "$port" >/dev/null || fail "del-port $port refused"
	st_passes_after "$n" "$p" "its switch port hung up" 180
	[ "$(st_link_downs "$n")" -gt "$d0" ] || fail "node$n: cnuas_0 saw no link down after del-port $port"
	echo "faults: switch port $port hung up, link down and back, two passes in $ST_SECS s"
	st_fault_check "$n" hangup "$ST_WHY_HANGUP"

	# Two passes after the device is back: those the loop made while
	# rmmod waited for the consumer to let go do not count.
	st_fault_mark "$n" reload
	st_fault_reload "$n"
	[ -z "$3" ] || $3
	p=$(st_passes "$n")
	st_passes_after "$n" "$p" "cnuas_ib reloaded" 240
	echo "faults: cnuas_ib reloaded under the load, two passes in $ST_SECS s"

	st_loop_stop "$n" "the loop"
	st_fault_check "$n" reload "$ST_WHY_RELOAD"
	echo "PASS through faults: $(st_passes "$n") passes checked in $((SECONDS - t0)) s"
}
