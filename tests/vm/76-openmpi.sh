#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Open MPI (Debian's openmpi-bin) between cnuas nodes 0 and 1
# (CNUAS_PAIR="A B" for others), started as on a cluster: sshd on every
# node with host keys and root keys made for this lab (ssh_setup), mpirun
# with plm_rsh_agent ssh, one rank a node. cnuas-mpi-check
# (tests/lab/mpi/) runs ping-pong (1 B .. 1 MiB), allreduce and alltoall
# and checks every byte or element it receives:
#   1. pml ob1 over TCP on cnuas0 (ib0 on IB): the launcher and the program alone;
#   2. pml ucx over cnuas_0 (UCX_NET_DEVICES=cnuas_0:1, no TCP device):
#      must pass, and both nodes' cnuas_0 hw counters must have sent and
#      received at least the ping-pong's RoCE packets (its bytes in path
#      MTU packets): the data moved by RDMA, not by sockets;
#   3. mpi4py: a bcast, an allreduce and a sendrecv of Python objects over
#      pml ucx.
# Any failure fails. UCX 1.13's UD endpoint timeout (UCX_UD_TIMEOUT_RE in
# lib-mpi.sh) is named when it is the cause: our provider then broke what
# UCX reads of a UD receive (the GRH, the L3 header type in sl).
# timeout: 900
# link-layers: eth
# (not ib: Open MPI's pml ucx reaches the device through UCX, whose IB
# addressing by LID 74[ib] checks)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-mpi.sh"
rdma_pair CNUAS_PAIR "0 1"
[ "$(node_kind "$A")$(node_kind "$B")" = cnuascnuas ] || skip "CNUAS_PAIR: pml ucx over cnuas_0 needs two cnuas nodes"
rdma_prep "$A" "$B"
mpi_ready "$A" "$B"
iters=${MPI_ITERS:-10} max=${MPI_MAX:-1048576}
pmtu=$(roce_mtu "$MTU")
note "node$A <-> node$B, MTU $MTU (RoCE $pmtu), cnuas-mpi-check -i $iters -m $max"
t0=$SECONDS
# The group's later tests find the nodes as before: no sshd.
trap 'ssh_stop "$A" "$B"' EXIT
ssh_setup "$A" "$B"
echo "PASS ssh: sshd on both nodes, keys made for this lab, BatchMode logins ($((SECONDS - t0)) s)"

out=$PR_DIR/ob1.out
t0=$SECONDS
mpi_run "$out" "$A" "$B" -- --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include "$(rdma_netdev "$A")" \
	cnuas-mpi-check -i 5 -m 262144 || { tail -n 30 "$out"; fail "mpirun with pml ob1, btl tcp failed"; }
grep -q '^cnuas-mpi-check: OK' "$out" || { tail -n 30 "$out"; fail "pml ob1: no OK line"; }
echo "PASS pml ob1, btl tcp: $(grep '^cnuas-mpi-check:' "$out") (mpirun $((SECONDS - t0)) s)"

# UCX on cnuas_0 only: no TCP device, shared memory and self only within a node.
UCX=(--mca pml ucx --mca btl '^openib,uct,tcp' -x UCX_NET_DEVICES=cnuas_0:1 -x UCX_WARN_UNUSED_ENV_VARS=n)
read -r sa ra <<<"$(mpi_counters "$A")"
read -r sb rb <<<"$(mpi_counters "$B")"
out=$PR_DIR/ucx.out
t0=$SECONDS
if ! mpi_run "$out" "$A" "$B" -- "${UCX[@]}" cnuas-mpi-check -i "$iters" -m "$max"; then
	tail -n 12 "$out"
	fail "mpirun with pml ucx over cnuas_0 failed$(ucx_ud_timeout "$out")"
fi
dt=$((SECONDS - t0))
grep -q '^cnuas-mpi-check: OK' "$out" || { tail -n 30 "$out"; fail "pml ucx: no OK line"; }
read -r sa2 ra2 <<<"$(mpi_counters "$A")"
read -r sb2 rb2 <<<"$(mpi_counters "$B")"
want=$(mpi_pingpong_pkts "$iters" "$max" "$pmtu")
note "cnuas_0 packets: node$A sent $((sa2 - sa)) received $((ra2 - ra)), node$B sent $((sb2 - sb)) received $((rb2 - rb)); ping-pong alone: $want each way"
for d in "$((sa2 - sa))" "$((ra2 - ra))" "$((sb2 - sb))" "$((rb2 - rb))"; do
	[ "$d" -ge "$want" ] || fail "pml ucx: cnuas_0 counted fewer RoCE packets than the ping-pong's $want: the data did not go by RDMA"
done
sed -n '/^pingpong\|^allreduce\|^alltoall/p' "$out"
echo "PASS pml ucx over cnuas_0: $(grep '^cnuas-mpi-check:' "$out") (mpirun $dt s; node$A sent $((sa2 - sa)) RoCE packets)"

# mpi4py over pml ucx.
PML=("${UCX[@]}") pml="pml ucx"
out=$PR_DIR/mpi4py.out
t0=$SECONDS
mpi_run "$out" "$A" "$B" -- "${PML[@]}" python3 -c "'
from mpi4py import MPI
c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
d = c.bcast({\"blob\": bytes(range(256)) * 64} if r == 0 else None, root=0)
assert d[\"blob\"] == bytes(range(256)) * 64
assert c.allreduce(r + 1) == n * (n + 1) // 2
got = c.sendrecv([r] * 1000, dest=(r + 1) % n, source=(r - 1) % n)
assert got == [(r - 1) % n] * 1000
if r == 0:
    print(\"mpi4py OK\", MPI.Get_library_version().split(\",\")[0])
'" || { tail -n 30 "$out"; fail "mpi4py over $pml failed"; }
grep -q '^mpi4py OK' "$out" || { tail -n 30 "$out"; fail "mpi4py: no OK line"; }
echo "PASS mpi4py over $pml: $(grep '^mpi4py OK' "$out") ($((SECONDS - t0)) s)"
