#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# NFS over RDMA with the kernel's own server and client (Debian's nfsd
# and rpcrdma): node 1 exports a tmpfs to node 0 and listens for
# RPC-over-RDMA on port 20049 beside its TCP port; node 0 mounts it with
# proto=rdma, once as NFSv3 and once as NFSv4.2, each time on a new file.
# On each mount fio writes 56 MiB and checks what it reads back
# (lib-storage.sh: sequential 1 MiB and random 4 KiB O_DIRECT I/O, and
# buffered 64 KiB writes read back after the client's page cache was
# dropped), then node 1 checks the same data in the exported file itself.
# Proof that it all went over RDMA: the mount's transport in
# /proc/self/mountstats is rdma; nfsd counted RPCs but no TCP packet nor
# TCP connection and the client has no TCP socket to port 2049; the RDMA
# devices received at least the data's bytes in 4 KiB packets each way;
# the server moved the data with RDMA READ/WRITE (rdma_sends) and the
# client registered its buffers (fast_reg, on cnuas). The teardown
# (umount, unexport, nfsd stopped) must leave no RDMA CM ID on 20049.
# Over IB (st_faults_here), before the NFSv3 mount goes, I/O goes on
# through faults (lib-storage.sh st_through_faults): the switch drops and reorders 2% of the frames, the
# client's switch port is hung up, the client's cnuas_ib is reloaded; the
# mount reconnects by itself, fio finds every block as written, nfsd sees
# no TCP, and the client logs only transport errors.
# The server's kernel log, from the start to the end of the teardown,
# must hold no error (lib-storage.sh st_server_check): nfsd and svcrdma
# logged none in any run, through the faults either (svcrdma reports its
# transport's troubles through tracepoints, not printk), so none is
# explained.
# In the Ethernet lab the Soft-RoCE node then mounts the same export over
# RDMA (NFSv3) and writes and checks 8 MiB of its own (lib-storage.sh
# st_rxe_*).
# CNUAS_PAIR="CLIENT SERVER" picks other nodes (e.g. a Soft-RoCE one).
# Runs over RoCE and, in the IB lab, over IPoIB addresses on native IB,
# where node 0 runs OpenSM and so is the server, node 1 the client.
# timeout: 600
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-storage.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "$ST_PAIR"
C=$A S=$B
SADDR=$(ip_of "$S") CADDR=$(ip_of "$C")
EXP=/srv/cnuas-vm92
MNT=/mnt/cnuas-vm92
PORT=20049
# The client's messages the faults explain: the transport closed and
# connected again, the server not answering for a while.
NFS_EXPLAINED='rpcrdma|xprt|server .* not responding|server .* OK'
# The server's errors explained: none (above).
NFSD_EXPLAINED='^$'

server_stop() {
	lsh -t 60 "$S" "$(st_nfsd_down vm92 $EXP "$CADDR" ${X:+"$(ip_of "$X")"})" >/dev/null 2>&1
}
cleanup() {
	for n in "$C" $X; do
		lsh -t 60 "$n" "! mountpoint -q $MNT || umount -f $MNT || umount -l $MNT; true" >/dev/null 2>&1
	done
	server_stop
}
X=$(st_rxe_peer)
storage_begin
[ -z "$X" ] || rdma_ready "$X"
for n in "$C" "$S"; do
	out=$(lsh -t 30 "$n" 'for t in rpc.nfsd rpc.mountd exportfs rpcbind mount.nfs fio; do
		command -v $t >/dev/null || echo "no $t"; done' 2>&1) || fail "node$n: $out"
	[ -z "$out" ] || fail "node$n: the image lacks NFS or fio: ${out//$'\n'/, }"
done
st_modprobe "$S" "the NFS server over RDMA" nfsd rpcrdma
st_modprobe "$C" "the NFS client over RDMA" nfs nfsv3 nfsv4 rpcrdma

# nfsd by hand (lab.d/storage.sh), exporting a tmpfs to node C.
t0=$SECONDS
out=$(lsh -t 120 "$S" "$(st_nfsd_up vm92 $EXP $PORT 80M 92 "$CADDR")" 2>&1) ||
	fail "node$S: cannot start nfsd on RDMA: $out"
echo "$out"
grep -q "rdma $PORT" <<<"$out" || fail "node$S: nfsd does not list rdma $PORT"
note "node$S: nfsd exports $EXP to node$C, RDMA port $PORT ($((SECONDS - t0)) s)"

# nfsd_stats NODE: nfsd's "net" line (packets, UDP packets, TCP packets,
# TCP connections), then its RPC calls.
nfsd_stats() {
	lsh -t 30 "$1" "awk '/^net /{n=\$2\" \"\$3\" \"\$4\" \"\$5} /^rpc /{r=\$2} END{print n, r}' /proc/net/rpc/nfsd"
}

# one_mount VERS: mount with VERS over RDMA, the fio jobs, the checks.
one_mount() {
	local v=$1 f=$MNT/v$1.dat opts out c0 c1 s0 s1 n0 n1 n2 secs d
	opts=vers=$v,proto=rdma,port=$PORT
	[ "$v" = 3 ] && opts+=,nolock # no statd here
	c0=$(st_counters "$C") s0=$(st_counters "$S") n0=$(nfsd_stats "$S")
	out=$(lsh -t 120 "$C" "$(st_nfs_mount "$SADDR" $EXP $MNT "$opts")
		truncate -s 64M $f" 2>&1) ||
		fail "node$C: NFS $v mount over RDMA failed: $out"
	echo "$out"
	grep -q " $MNT nfs.*vers=$v,.*proto=rdma,.*port=$PORT" <<<"$out" ||
		fail "node$C: the NFS $v mount is not proto=rdma, port $PORT"
	grep -qP '^\s*xprt:\s+rdma ' <<<"$out" || fail "node$C: the mount's transport is not rdma"

	out=$(st_fio_write "$C" "$f") || { echo "$out"; exit 1; }
	echo "$out" | sed '$d'
	secs=$(tail -n 1 <<<"$out")
	st_fio_check "$S" "$EXP/v$v.dat"

	c1=$(st_counters "$C") s1=$(st_counters "$S") n1=$(nfsd_stats "$S")
	out=$(lsh -t 60 "$C" "ss -Htan '( dport = :2049 )'" 2>&1)
	[ -z "$out" ] || fail "node$C: TCP to port 2049 during the NFS $v over RDMA run: $out"

	read -ra n0 <<<"$n0"
	read -ra n1 <<<"$n1"
	echo "NFS $v: nfsd net packets +$((n1[0] - n0[0])) udp +$((n1[1] - n0[1])) tcp +$((n1[2] - n0[2])) tcp connections +$((n1[3] - n0[3])), rpc calls +$((n1[4] - n0[4]))"
	for d in sent_pkts rcvd_pkts rdma_sends rdma_recvs fast_reg remote_inv; do
		echo "  $d: node$C +$(st_delta "$c0" "$c1" $d) node$S +$(st_delta "$s0" "$s1" $d)"
	done
	[ $((n1[2] - n0[2])) = 0 ] && [ $((n1[3] - n0[3])) = 0 ] ||
		fail "nfsd on node$S saw TCP during the NFS $v over RDMA run"
	# Every MiB moved took at least one READ or WRITE call.
	[ $((n1[4] - n0[4])) -ge $((2 * ST_MIB)) ] ||
		fail "nfsd on node$S counted $((n1[4] - n0[4])) RPCs for $((2 * ST_MIB)) MiB"
	# The client's reads arrive at the client, its writes at the server,
	# in packets of at most 4 KiB of data.
	d=$(st_delta "$c0" "$c1" rcvd_pkts)
	[ "$d" -ge $((ST_MIB * 256)) ] || fail "node$C received $d RDMA packets for $ST_MIB MiB read"
	d=$(st_delta "$s0" "$s1" rcvd_pkts)
	[ "$d" -ge $((ST_MIB * 256)) ] || fail "node$S received $d RDMA packets for $ST_MIB MiB written"
	[ "$(st_delta "$s0" "$s1" rdma_sends)" -gt 0 ] || fail "nfsd on node$S issued no RDMA READ or WRITE"
	[ "$(rdma_dev "$C")" != cnuas_0 ] || [ "$(st_delta "$c0" "$c1" fast_reg)" -gt 0 ] ||
		fail "the NFS client on node$C registered no memory (fast_reg)"
	echo "PASS NFS $v over RDMA: $ST_MIB MiB written and read back intact in $secs s, checked on node$S"

	# NFSv3 (stateless: no lease to outlive) goes on through the faults
	# (the reload resets the client's counters: they were read before),
	# still with no TCP at nfsd.
	if [ "$v" = 3 ] && st_faults_here ib; then
		st_through_faults "$C" $MNT/faults.dat "$NFS_EXPLAINED"
		read -ra n2 <<<"$(nfsd_stats "$S")"
		[ "${n2[2]}" = "${n1[2]}" ] && [ "${n2[3]}" = "${n1[3]}" ] ||
			fail "nfsd on node$S saw TCP during the faults"
	fi
	out=$(lsh -t 60 "$C" "rm -f $f $MNT/faults.dat; umount $MNT" 2>&1) ||
		fail "node$C: cannot unmount the NFS $v mount: $out"
}

# rxe_mount: Soft-RoCE as the client (Ethernet lab): node X mounts the
# same export over RDMA (NFSv3), writes 8 MiB and reads it back, and the
# server finds it in its file.
rxe_mount() {
	local out t0=$SECONDS f=$MNT/rxe.dat
	lsh -t 30 "$S" "exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=92 $(ip_of "$X"):$EXP" ||
		fail "node$S: cannot export $EXP to node$X"
	out=$(lsh -t 120 "$X" "$(st_nfs_mount "$SADDR" $EXP $MNT vers=3,proto=rdma,port=$PORT,nolock)
		truncate -s 64M $f" 2>&1) ||
		st_rxe_fail "$X" "$S" "the NFSv3 mount over RDMA failed" "$out"
	grep -qP '^\s*xprt:\s+rdma ' <<<"$out" ||
		st_rxe_fail "$X" "$S" "the mount's transport is not rdma" "$out"
	out=$(st_rxe_fio "$X" "$S" "$f") || { echo "$out"; exit 1; }
	echo "$out" | sed '$d'
	st_fio_check "$S" "$EXP/rxe.dat" peer
	lsh -t 60 "$X" "rm -f $f; umount $MNT" || st_rxe_fail "$X" "$S" "cannot unmount" ""
	lsh -t 30 "$S" "exportfs -u $(ip_of "$X"):$EXP" || fail "node$S: cannot unexport $EXP from node$X"
	echo "PASS NFS over RDMA with Soft-RoCE: node$X (rxe0) wrote 8 MiB to node$S's cnuas nfsd and read it back in $(tail -n 1 <<<"$out") s ($((SECONDS - t0)) s in all)"
}

t0=$SECONDS
one_mount 3
one_mount 4.2
if [ -n "$X" ]; then
	rxe_mount
else
	note "no Soft-RoCE step: the lab has no rxe node, or a test node is not cnuas"
fi

server_stop
st_no_cm_id "$S" $PORT
st_no_cm_id "$C" $PORT
storage_end "$NFSD_EXPLAINED"
echo "NFS over RDMA: NFSv3 and NFSv4.2, $((2 * ST_MIB)) MiB each way, in $((SECONDS - t0)) s"
