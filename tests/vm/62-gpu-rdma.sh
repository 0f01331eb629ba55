#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# GPU device memory as RDMA memory, in a `scripts/lab up --gpu`
# lab, with cnuas-gpu-rdma (tests/lab/gpu; libcnuaspeermem compiled in):
#  1. node 0 allocates cnuasgpu memory, fills it through mmap and registers
#     it (export + ibv_reg_dmabuf_mr); node 1 RDMA READs and compares, RDMA
#     WRITEs a pattern that node 0 checks through mmap, SENDs into a
#     GPU-memory receive buffer, and runs FETCH_AND_ADD/CMP_SWAP on it;
#  2. GPU->GPU: node 1 RDMA WRITEs from its own GPU memory into node 0's;
#  3. lifetime on node 0: FREE with an export is EBUSY; closing the GPU fd
#     leaves the MR usable (loopback WRITE + READ) until dereg, then sysfs
#     `exports` and `mem_free` show the memory reclaimed;
#  4. the same with pinned host memory of /dev/cnuasgpu_host0 (-H): the
#     host exporter's API checks (cnuasgpu-test host-api), parts 1-3 on it,
#     host->host DMA-BUF WRITEs;
#  5. device_del of node 0's GPU under a live MR: node 1's next READ ends
#     in an error completion (no hang, no data), node 0 deregisters and the
#     deferred BAR teardown completes; the GPU is then hot-plugged back.
#     Meanwhile a live host-memory MR of node 0 keeps working (its READ
#     after the removal returns the data).
# The consoles stay free of oopses and warnings. GPU_RDMA_KIB sets the
# region size (default 256), GPU_BW_ITERS the GPU->GPU WRITEs (16 x 1 MiB),
# GPU_RDMA_DEVDEL=0 leaves out the (disruptive) part 5.
# link-layers: eth
# (not ib: DMA-BUF MRs on GPU memory are memory registration, the same on
# either link layer)
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth_or_verbs_over_ib
N0=0 N1=1
KIB=${GPU_RDMA_KIB:-256}
ITERS=${GPU_BW_ITERS:-16}
PORT=18762

for n in $N0 $N1; do
	rdma_ready "$n"
	gpu_ready "$n" cnuas-gpu-rdma
	lsh -t 30 "$n" '[ -e /dev/cnuasgpu_host0 ]' ||
		fail "node$n: cnuasgpu loaded but no /dev/cnuasgpu_host0"
done
problems0=$(console_problems)

# run_pair NAME SERVER_ARGS CLIENT_ARGS: server on N0, client on N1.
run_pair() {
	local name=$1 sargs=$2 cargs=$3 srv spid crc src
	srv=$(mktemp)
	lsh -t 600 "$N0" "cnuas-gpu-rdma -d cnuas_0 -p $PORT $sargs" >"$srv" 2>&1 &
	spid=$!
	sleep 2
	lsh -t 600 "$N1" "cnuas-gpu-rdma -d cnuas_0 -p $PORT $cargs $(ip_of "$N0")" 2>&1
	crc=$?
	wait $spid
	src=$?
	sed 's/^/server: /' "$srv"
	rm -f "$srv"
	PORT=$((PORT + 1))
	if [ $crc != 0 ] || [ $src != 0 ]; then
		fail "$name: client rc $crc, server rc $src"
	fi
}

note "READ / WRITE / SEND / atomics on node 0's GPU memory ($KIB KiB)"
run_pair "GPU memory verbs" "-s $KIB" "-s $KIB"
note "GPU->GPU RDMA WRITE, $ITERS x 1 MiB"
run_pair "GPU->GPU" "-s 1024" "-s 1024 -b $ITERS"
note "lifetime: EBUSY, MR after closing the GPU fd, reclaim after dereg"
lsh -t 600 "$N0" "cnuas-gpu-rdma -d cnuas_0 -l -s $KIB" 2>&1 || fail "lifetime checks failed"

note "host exporter /dev/cnuasgpu_host0: API, argument checks, lifetime"
lsh -t 300 "$N0" "cnuasgpu-test host-api 0" 2>&1 || fail "cnuasgpu-test host-api failed"
note "READ / WRITE / SEND / atomics on node 0's pinned host memory ($KIB KiB)"
run_pair "host memory verbs" "-H -s $KIB" "-H -s $KIB"
note "host->host DMA-BUF RDMA WRITE, $ITERS x 1 MiB"
run_pair "host->host" "-H -s 1024" "-H -s 1024 -b $ITERS"
note "host memory lifetime: EBUSY, MR after closing the fd, reclaim after dereg"
lsh -t 600 "$N0" "cnuas-gpu-rdma -d cnuas_0 -H -l -s $KIB" 2>&1 ||
	fail "host memory lifetime checks failed"

if [ "${GPU_RDMA_DEVDEL:-1}" = 1 ]; then
	note "device_del of node 0's GPU under a live MR"
	gone=/tmp/gpu-gone.$$
	# BAR1's size, to plug the same GPU back afterwards.
	# shellcheck disable=SC2016 # expanded by the guest's shell
	devmem=$(lsh -t 30 "$N0" 'for d in /sys/bus/pci/devices/*; do
		[ "$(cat $d/vendor):$(cat $d/device)" = 0x1af4:0x10f1 ] || continue
		sed -n 2p $d/resource | { read -r a b _; echo $((b - a + 1)); }; exit 0
	done; exit 1') || fail "node0: no cnuasgpu PCI function"
	released() { lsh -t 30 "$N0" "dmesg | grep -c 'device memory released'"; }
	rel0=$(released)
	lsh -t 30 "$N1" "rm -f $gone"
	srv=$(mktemp) cli=$(mktemp) hsrv=$(mktemp) hcli=$(mktemp)
	lsh -t 900 "$N0" "cnuas-gpu-rdma -d cnuas_0 -p $PORT -s $KIB -D x" >"$srv" 2>&1 &
	spid=$!
	# A host-memory MR of the same node, live across the GPU's removal.
	lsh -t 900 "$N0" "cnuas-gpu-rdma -d cnuas_0 -p $((PORT + 1)) -H -s $KIB -D x" >"$hsrv" 2>&1 &
	hspid=$!
	sleep 2
	lsh -t 900 "$N1" "cnuas-gpu-rdma -d cnuas_0 -p $PORT -s $KIB -D $gone $(ip_of "$N0")" >"$cli" 2>&1 &
	cpid=$!
	lsh -t 900 "$N1" "cnuas-gpu-rdma -d cnuas_0 -p $((PORT + 1)) -H -s $KIB -D $gone $(ip_of "$N0")" >"$hcli" 2>&1 &
	hcpid=$!
	waiting() { { grep -q 'waiting for' "$cli" || ! kill -0 "$cpid" 2>/dev/null; } &&
		{ grep -q 'waiting for' "$hcli" || ! kill -0 "$hcpid" 2>/dev/null; }; }
	wait_for 300 waiting
	grep -q 'waiting for' "$cli" || { cat "$cli" "$srv"; fail "the client did not get to the removal"; }
	grep -q 'waiting for' "$hcli" || { cat "$hcli" "$hsrv"; fail "the host-memory client did not get to the removal"; }
	"$LAB" qmp "$N0" '{"execute": "device_del", "arguments": {"id": "gpu0"}}' >/dev/null ||
		fail "device_del gpu0 refused"
	gpu_gone() { lsh -t 20 "$N0" '[ ! -e /dev/cnuasgpu0 ]'; }
	wait_for 60 gpu_gone || fail "/dev/cnuasgpu0 still there 60 s after device_del"
	lsh -t 30 "$N1" "touch $gone"
	wait $cpid
	crc=$?
	wait $spid
	src=$?
	wait $hcpid
	hcrc=$?
	wait $hspid
	hsrc=$?
	cat "$cli"
	sed 's/^/server: /' "$srv"
	sed 's/^/host memory: /' "$hcli"
	sed 's/^/host memory server: /' "$hsrv"
	rm -f "$cli" "$srv" "$hcli" "$hsrv"
	# Checked after the GPU is back: the lab stays usable either way.
	err=
	[ "$(released)" -gt "$rel0" ] || err="no deferred BAR teardown (device memory released) after dereg"
	[ $src = 0 ] || err="deregistration after the removal failed (server rc $src)"
	# cnuas_ib drops the mapping when the exporter revokes it (move_notify):
	# an exporter that never notifies leaves the MR reading a dead BAR.
	[ $crc = 0 ] || err="the MR of the removed GPU did not fail cleanly (client rc $crc)"
	[ $hcrc = 0 ] && [ $hsrc = 0 ] ||
		err="a host-memory MR broke with the GPU's removal (client rc $hcrc, server rc $hsrc)"
	# Plug the GPU back for later tests (node 2k listens on its CnuasLink).
	qdev_gone() { ! "$LAB" qmp "$N0" '{"execute": "qom-get", "arguments": {"path": "/machine/peripheral/gpu0", "property": "type"}}' >/dev/null 2>&1; }
	wait_for 30 qdev_gone || fail "QEMU still has gpu0 after the guest released it"
	listen=
	[ $((N0 % 2)) = 1 ] || listen=', "cnuaslink_listen": true'
	if "$LAB" qmp "$N0" "{\"execute\": \"device_add\", \"arguments\": {\"driver\": \"cnuasgpu\", \"id\": \"gpu0\", \"bus\": \"rp2\", \"gpu_id\": $N0, \"devmem_size\": $devmem, \"cnuaslink_socket\": \"$LAB_DIR/gpulink$((N0 / 2)).sock\"$listen}}" >/dev/null &&
		wait_for 60 lsh -t 20 "$N0" '[ -e /dev/cnuasgpu0 ]'; then
		echo "node0's GPU hot-plugged back"
	else
		note "could not plug node0's GPU back (the lab needs a restart for GPU tests)"
	fi
	[ -z "$err" ] || fail "$err"
	echo "removed GPU: access failed cleanly, teardown completed after dereg; host-memory MR unaffected"
fi

problems=$(console_problems)
[ "$problems" = "$problems0" ] || {
	grep -E 'Oops|BUG:|WARNING:|Kernel panic|general protection fault' "$LAB_DIR"/node*.console.log | tail -n 20
	fail "new kernel problems on the consoles"
}
echo "PASS: GPU and pinned host memory registered with libcnuaspeermem: READ, WRITE, SEND, atomics, GPU->GPU, host->host, lifetime"
