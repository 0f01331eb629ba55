#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# An in-kernel storage ULP on cnuas: NVMe over Fabrics with Linux's own
# nvmet-rdma target (node 1, a 64 MiB file namespace) and nvme-rdma host
# (node 0), both from Debian's kernel. The host registers every I/O buffer
# with fast-registration MRs (IB_WR_REG_MR) and the target frees them with
# SEND with Invalidate, so this runs FRMR, remote invalidation, RDMA
# READ/WRITE and kernel QPs through RDMA CM. 16 MiB written with O_DIRECT
# in 1 MiB and 4 KiB blocks are read back and checksummed on both sides.
# timeout: 600
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "0 1"
H=$A T=$B
[ "$(rdma_dev "$H")" = cnuas_0 ] && [ "$(rdma_dev "$T")" = cnuas_0 ] ||
	skip "needs two cnuas nodes"
NQN=nqn.2026-12.org.cnuas:vm64
CFG=/sys/kernel/config/nvmet
IMG=/tmp/cnuas-nvmet-ns1.img
TADDR=$(ip_of "$T")

cleanup() {
	lsh -t 60 "$H" "for c in /sys/class/nvme/nvme*; do
		grep -qx $NQN \$c/subsysnqn 2>/dev/null && echo 1 >\$c/delete_controller
		done; true" >/dev/null 2>&1
	lsh -t 60 "$T" "rm -f $CFG/ports/64/subsystems/$NQN; rmdir $CFG/ports/64
		echo 0 >$CFG/subsystems/$NQN/namespaces/1/enable
		rmdir $CFG/subsystems/$NQN/namespaces/1 $CFG/subsystems/$NQN
		rm -f $IMG; true" >/dev/null 2>&1
}
trap cleanup EXIT
problems0=$(console_problems)

rdma_ready "$H"
rdma_ready "$T"
lsh -t 60 "$T" "modprobe -a nvmet nvmet-rdma" || skip "no nvmet-rdma in the guest kernel"
lsh -t 60 "$H" "modprobe nvme-rdma" || skip "no nvme-rdma in the guest kernel"
c0=$(lsh -t 30 "$H" 'cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/fast_reg') ||
	fail "node$H: no fast_reg counter"
r0=$(lsh -t 30 "$T" 'cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/rcvd_pkts')
i0=$(lsh -t 30 "$H" 'cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/remote_inv')

nvmet_export "$T" $NQN $IMG 64

# Connect once (nvmet_export waited for the port's listener), find the
# namespace.
dev=$(lsh -t 120 "$H" "echo 'transport=rdma,traddr=$TADDR,trsvcid=4420,nqn=$NQN' >/dev/nvme-fabrics ||
		{ echo 'the connect failed:'; dmesg | tail -n 8; exit 1; }
	for i in \$(seq 50); do
		for c in /sys/class/nvme/nvme*; do
			grep -qx $NQN \$c/subsysnqn 2>/dev/null || continue
			for b in /sys/block/\${c##*/}n* /sys/block/nvme*; do
				[ -e \$b/device ] || continue
				[ \"\$(cat \$b/device/subsysnqn 2>/dev/null || cat \$b/device/../subsysnqn 2>/dev/null)\" = $NQN ] || continue
				case \${b##*/} in *c*n*) continue ;; esac
				echo \${b##*/}; exit 0
			done
		done
		sleep 0.2
	done; dmesg | tail -n 8 >&2; exit 1") || fail "node$H: no NVMe namespace from $NQN over RDMA: $dev"
note "node$H /dev/$dev is namespace 1 of $NQN on node$T over cnuas_0"

sum=$(lsh -t 60 "$H" "head -c 16M /dev/urandom >/tmp/nvme.in && sha256sum </tmp/nvme.in") ||
	fail "node$H: no test data"
sum=${sum%% *}
res=$(lsh -t 300 "$H" "set -e
	dd if=/tmp/nvme.in of=/dev/$dev bs=1M oflag=direct 2>&1 | tail -n 1
	dd if=/tmp/nvme.in of=/dev/$dev bs=4k seek=8192 oflag=direct 2>&1 | tail -n 1
	echo r1 \$(dd if=/dev/$dev bs=1M count=16 iflag=direct 2>/dev/null | sha256sum)
	echo r2 \$(dd if=/dev/$dev bs=64k skip=512 count=256 iflag=direct 2>/dev/null | sha256sum)" 2>&1) ||
	fail "node$H: I/O on /dev/$dev failed: $res"
echo "$res" | grep copied
for r in r1 r2; do
	got=$(echo "$res" | sed -n "s/^$r \([0-9a-f]*\).*/\1/p")
	[ "$got" = "$sum" ] || fail "read back ($r) $got, wrote $sum"
done
t1=$(lsh -t 60 "$T" "head -c 16M $IMG | sha256sum; tail -c +33554433 $IMG | head -c 16M | sha256sum")
[ "$(echo "$t1" | awk '{print $1}' | sort -u)" = "$sum" ] ||
	fail "the target's file holds other data: $t1"

c1=$(lsh -t 30 "$H" 'cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/fast_reg')
i1=$(lsh -t 30 "$H" 'cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/remote_inv')
r1=$(lsh -t 30 "$T" 'cat /sys/class/infiniband/cnuas_0/ports/1/hw_counters/rcvd_pkts')
echo "node$H: fast_reg +$((c1 - c0)) remote_inv +$((i1 - i0)); node$T: rcvd_pkts +$((r1 - r0))"
# Every read (16 x 1 MiB, 256 x 64 KiB) and the 1 MiB writes need an MR;
# 4 KiB writes go inline in the command capsule.
[ $((c1 - c0)) -ge 288 ] || fail "only $((c1 - c0)) fast registrations for 288 reads"
[ $((i1 - i0)) -gt 0 ] && [ $((i1 - i0)) -le $((c1 - c0)) ] ||
	fail "$((i1 - i0)) remote invalidations for $((c1 - c0)) registrations"
[ "$(console_problems)" = "$problems0" ] || fail "kernel problems on a console"
echo "NVMe/RDMA: 32 MiB written and read back intact over cnuas_0"
