# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# Open MPI across lab guests (sourced by the MPI tests after lib.sh):
# mpirun on the first node starts the ranks over ssh (ssh_setup), one rank
# a node, its out-of-band channel on cnuas0; cnuas-mpi-check (tests/lab/mpi,
# built into the image) checks every byte it moves.

# mpi_ready NODE...: Open MPI and cnuas-mpi-check are in the image.
mpi_ready() {
	local n out
	for n in "$@"; do
		out=$(lsh -t 60 "$n" 'for c in mpirun cnuas-mpi-check ucx_info; do
			command -v $c >/dev/null || echo "no $c in the image"; done' 2>&1) ||
			fail "node$n: $out"
		[ -z "$out" ] || skip "node$n: $out (an image from before the consumer packages; rebuild it)"
	done
}

# mpi_run OUT NODE... -- ARGS...: mpirun on the first NODE with one rank on
# each NODE, ARGS after the common options; output in OUT. Bounded by
# MPI_TIMEOUT (default 600 s).
mpi_run() {
	local out=$1 hosts='' n t=${MPI_TIMEOUT:-600} first=''
	shift
	while [ "$1" != -- ]; do
		hosts+=${hosts:+,}node$1
		first=${first:-$1}
		shift
	done
	shift
	lsh -t $((t + 30)) "$first" "timeout -k 5 $t mpirun --allow-run-as-root -np $(tr , '\n' <<<"$hosts" | wc -l) \
		-H $hosts --mca plm_rsh_agent ssh --mca oob_tcp_if_include $(rdma_netdev "$first") $*" >"$out" 2>&1 </dev/null
}

# mpi_counters NODE: "SENT RCVD", the RoCE packets of the node's cnuas_0.
mpi_counters() {
	lsh -t 30 "$1" 'c=/sys/class/infiniband/cnuas_0/ports/1/hw_counters; echo $(cat $c/sent_pkts) $(cat $c/rcvd_pkts)'
}

# mpi_pingpong_pkts ITERS MAX MTU: the RoCE packets each of the two
# ping-pong ranks of `cnuas-mpi-check -i ITERS -m MAX` sends at least (its
# messages in packets of the path MTU; whether by SEND, WRITE or as the
# responder of a READ, the data leaves from the node that holds it).
mpi_pingpong_pkts() {
	local iters=$1 max=$2 mtu=$3 len=1 n pkts=0
	while [ $len -le "$max" ]; do
		n=$iters
		[ $len -lt 1048576 ] || n=$(((iters + 3) / 4))
		pkts=$((pkts + n * ((len + mtu - 1) / mtu)))
		len=$((len * 4))
	done
	echo $pkts
}

# How Debian 12's UCX 1.13 fails over a RoCE device whose UD receives it
# cannot read (no GRH where it looks, no L3 header type in sl): its UD
# endpoint times out and UCX aborts. A failure, named for what it means.
UCX_UD_TIMEOUT_RE='UD endpoint .* unhandled timeout error'
# ucx_ud_timeout OUT: ": UCX's UD endpoint timed out (...)" when OUT has
# that message, else nothing.
ucx_ud_timeout() {
	local line
	line=$(grep -m1 -E "$UCX_UD_TIMEOUT_RE" "$1") || return 0
	echo ": UCX's UD endpoint timed out ($(sed 's/^.*\] *//; s/  */ /g' <<<"$line")): check the provider's UD receives (GRH, L3 header type in sl)"
}

# mpi_alltoall_pkts ITERS MAX NRANKS MTU: the RoCE packets each rank of
# `cnuas-mpi-check -i ITERS -m MAX` sends at least in its alltoall (a block
# to each of the other ranks).
mpi_alltoall_pkts() {
	local iters=$1 max=$2 nr=$3 mtu=$4 block=1 n pkts=0
	while [ $((block * nr)) -le "$max" ]; do
		n=$iters
		[ $block -lt 65536 ] || n=$(((iters + 3) / 4))
		pkts=$((pkts + n * (nr - 1) * ((block + mtu - 1) / mtu)))
		block=$((block * 8))
	done
	echo $pkts
}
