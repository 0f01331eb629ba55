#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Open MPI across four cnuas guests. The vm group's lab has two cnuas
# nodes, so this test boots its own lab of four (scripts/lab up --nodes 4
# in $LAB_DIR-mpi4, from the same image and QEMU) while the group's
# guests are paused (QMP stop; resumed, and the four taken down, on any
# exit). Then as in 76: sshd and lab keys on all four (ssh_setup),
# mpirun with plm_rsh_agent ssh and one rank a node, cnuas-mpi-check
# over pml ucx on cnuas_0 alone (over pml ob1 and TCP too when that
# failed, to tell where the problem is); every
# node's cnuas_0 must have sent at least its share of RoCE packets (ranks
# 0 and 1 the ping-pong's and the alltoall's, ranks 2 and 3 the
# alltoall's). Any failure fails (UCX 1.13's UD endpoint timeout named
# when it is the cause, as in 76). CNUAS_MPI4=0 opts out of the test.
# timeout: 1200
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-mpi.sh"
[ "${CNUAS_MPI4:-1}" != 0 ] || skip_because opt-out "CNUAS_MPI4=0"
need_eth
iters=${MPI_ITERS:-10} max=${MPI_MAX:-1048576}
side_lab mpi4 --nodes 4 --mtu "$MTU"
boot=$SIDE_BOOT
echo "PASS lab of four: up in $boot s (the group's ${#SIDE_PAUSED[@]} guests paused)"

pmtu=$(roce_mtu "$MTU")
pids=()
for n in 0 1 2 3; do
	(rdma_ready "$n") >"$PR_DIR.ready$n" 2>&1 &
	pids+=($!)
done
for n in 0 1 2 3; do
	wait "${pids[$n]}" || { cat "$PR_DIR.ready$n"; fail "node$n: RDMA device not ready"; }
done
mpi_ready 0 1 2 3
t0=$SECONDS
ssh_setup 0 1 2 3
echo "PASS ssh on four nodes ($((SECONDS - t0)) s)"

# ob1_check: the same program over pml ob1 and TCP on cnuas0, run only
# when pml ucx failed, to tell an MPI launch or network problem from an
# RDMA one (test 76 runs it every time, on two ranks).
ob1_check() {
	local out=$PR_DIR/ob1-4.out
	if mpi_run "$out" 0 1 2 3 -- --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include cnuas0 \
		cnuas-mpi-check -i 5 -m 262144 && grep -q '^cnuas-mpi-check: OK: 4 ranks' "$out"; then
		echo "pml ob1, btl tcp, 4 ranks works: $(grep '^cnuas-mpi-check:' "$out")"
	else
		tail -n 30 "$out"
		echo "pml ob1, btl tcp, 4 ranks failed too (above)"
	fi
}

declare -A s0 r0
for n in 0 1 2 3; do read -r "s0[$n]" "r0[$n]" <<<"$(mpi_counters "$n")"; done
out=$PR_DIR/ucx-4.out
t0=$SECONDS
if ! mpi_run "$out" 0 1 2 3 -- --mca pml ucx --mca btl '^openib,uct,tcp' \
	-x UCX_NET_DEVICES=cnuas_0:1 -x UCX_WARN_UNUSED_ENV_VARS=n cnuas-mpi-check -i "$iters" -m "$max"; then
	tail -n 12 "$out"
	ob1_check
	fail "mpirun -np 4 with pml ucx over cnuas_0 failed$(ucx_ud_timeout "$out")"
fi
dt=$((SECONDS - t0))
grep -q '^cnuas-mpi-check: OK: 4 ranks' "$out" || { tail -n 30 "$out"; fail "pml ucx: no OK line for 4 ranks"; }
pp=$(mpi_pingpong_pkts "$iters" "$max" "$pmtu")
a2a=$(mpi_alltoall_pkts "$iters" "$max" 4 "$pmtu")
for n in 0 1 2 3; do
	read -r s r <<<"$(mpi_counters "$n")"
	want=$a2a
	[ "$n" -ge 2 ] || want=$((a2a + pp))
	note "node$n cnuas_0: sent $((s - s0[$n])) received $((r - r0[$n])) RoCE packets (at least $want each way)"
	if [ $((s - s0[$n])) -lt "$want" ] || [ $((r - r0[$n])) -lt "$want" ]; then
		fail "pml ucx: node$n's cnuas_0 moved fewer RoCE packets than the program's $want: the data did not go by RDMA"
	fi
done
sed -n '/^pingpong\|^allreduce\|^alltoall/p' "$out"
echo "PASS pml ucx over cnuas_0, 4 ranks: $(grep '^cnuas-mpi-check:' "$out") (mpirun $dt s; lab of four up in $boot s)"
