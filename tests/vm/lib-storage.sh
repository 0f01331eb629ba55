# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# The kernel's storage ULPs over RDMA (sourced by tests 92 and 93 after
# lib.sh): the RDMA counters that show where the data went, and the fio
# jobs that write data, read it back and check it, once on the consumer
# and once more on the server's own copy.

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
# they read back. Prints the seconds they took as the last line.
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

# st_fio_check NODE FILE: NODE (the server) checks its own FILE, where the
# three jobs' data must be, with fio --verify_only (buffered: the server's
# file may live on tmpfs, which has no O_DIRECT).
st_fio_check() {
	local out j s=''
	for j in seq rnd buf; do
		s+="echo '== $j (server side)'; fio $(st_fio_opts $j "$2") --direct=0 --ioengine=psync --verify_only
		"
	done
	out=$(lsh -t 120 "$1" "$(st_fio_guest "$s")" 2>&1) ||
		{ echo "$out"; fail "node$1: the data in its $2 is not what was written"; }
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
