#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Many QPs on one guest pair: ib_write_bw -q MANY_QPS (default 1000) with
# --mr_per_qp (an MR and a buffer per QP) between cnuas nodes 0 and 1
# (CNUAS_PAIR="A B" for others), PERF_ITERS (20) 4 KiB WRITEs on every QP.
# Both ends must exit 0; the client must report QPs x iterations
# messages; the responder's device must have received at least that many
# packets; and while the test runs the server must hold every QP at once
# (`rdma res show qp`). The server's memory per QP (its MemAvailable drop
# while the QPs exist, over their number: kernel rings, provider and
# perftest's buffers together) is printed, not asserted.
# timeout: 900
# link-layers: eth
# (not ib: 1000 QPs load the QP tables, not the link layer; perftest by LID
# is 47[ib])
. "$(dirname "$0")/lib.sh"
rdma_pair CNUAS_PAIR "0 1"
rdma_prep "$A" "$B"
qps=${MANY_QPS:-1000} iters=${PERF_ITERS:-20}
dev=$(rdma_dev "$B")
hw() { lsh -t 30 "$1" "cat /sys/class/infiniband/$(rdma_dev "$1")/ports/1/hw_counters/$2"; }
p0=$(hw "$B" rcvd_pkts) || fail "node$B: no rcvd_pkts counter"
mem0=$(lsh -t 30 "$B" "awk '/MemAvailable/ {print \$2}' /proc/meminfo") || fail "node$B: no MemAvailable"

# On the server: the most RC QPs seen at once and the lowest MemAvailable.
mkdir -p "$PR_DIR"
lsh -t 600 "$B" "rm -f /tmp/many-qps.done; max=0 low=$mem0 i=0
	while [ \$i -lt 1100 ] && [ ! -e /tmp/many-qps.done ]; do
		n=\$(rdma res show qp link $dev/1 2>/dev/null | grep -c 'type RC')
		m=\$(awk '/MemAvailable/ {print \$2}' /proc/meminfo)
		[ \$n -gt \$max ] && max=\$n low=\$m
		[ \$n -ge $qps ] && [ \$m -lt \$low ] && low=\$m
		sleep 0.5; i=\$((i + 1))
	done; echo \$max \$low" >"$PR_DIR/sampler.out" 2>&1 &
spid=$!

gs=$GB gc=$GA
[ "$B" = "$A" ] && fail "CNUAS_PAIR names one node twice"
t0=$SECONDS
pair_run many_qps 420 "$B" "$A" "$(listening 18950)" \
	"ib_write_bw -d $dev -x $gs -F -q $qps --mr_per_qp -s 4096 -n $iters -p 18950" \
	"ib_write_bw -d $(rdma_dev "$A") -x $gc -F -q $qps --mr_per_qp -s 4096 -n $iters -p 18950 $(ip_of "$B")"
rc=$?
dt=$((SECONDS - t0))
lsh -t 30 "$B" "touch /tmp/many-qps.done" >/dev/null
wait $spid
[ $rc = 0 ] || { pair_show; fail "ib_write_bw with $qps QPs failed"; }
read -r maxqp low <"$PR_DIR/sampler.out" || fail "no sample from node$B"
line=$(awk '$1 == 4096 {print; exit}' "$PR_CLI")
[ -n "$line" ] || { pair_show; fail "no 4096-byte result line"; }
read -r _ n _ bw _ <<<"$line"
[ "$n" -ge $((qps * iters)) ] || fail "client reports $n messages, want $((qps * iters))"
p1=$(hw "$B" rcvd_pkts) || fail "node$B: no rcvd_pkts counter"
[ $((p1 - p0)) -ge $((qps * iters)) ] ||
	fail "node$B received $((p1 - p0)) packets for $((qps * iters)) WRITEs"
[ "$maxqp" -ge "$qps" ] || fail "node$B held at most $maxqp RC QPs at once, want $qps"
echo "PASS $qps RC QPs with an MR each, $iters WRITEs of 4 KiB on every QP: $n messages, $bw MB/s average, $((p1 - p0)) packets at node$B, $dt s"
kib=$(((mem0 - low) / qps))
echo "memory per QP on node$B: $kib KiB ($((mem0 - low)) KiB for $maxqp QPs; kernel rings, provider and perftest buffers)"
