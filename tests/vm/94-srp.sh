#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# SRP with the kernel's own target and initiator: node 1 runs LIO's
# ib_srpt (a 64 MiB fileio backstore on tmpfs, one LUN, set up in configfs
# as targetcli would: its srpt support wants tcmu's D-Bus and adds
# nothing here), node 0 ib_srp. The target port is named by its GID, the
# ACL by the initiator's port ID (initiator_ext 0 and its GID's interface
# ID, as ib_srp sends it).
#  - native IB (the IB lab, OpenSM on node 0): ib_srpt sets the port's
#    IsDeviceManagementSupported bit and answers DM MADs; srptools' ibsrpdm
#    asks the SA for such ports and their I/O controllers and prints the
#    target string ib_srp's add_target takes (IB CM, by GID and service
#    ID). OpenSM learns of the new bit from the Trap 144 (Local Changes)
#    cnuas_ib sends when the CapabilityMask changes, as an HCA does: the
#    target's sma_traps_sent and _repressed grow when ib_srpt loads, and
#    no SIGHUP asks OpenSM for a sweep.
#  - RoCE: there is no SM nor DM agent to ask, so no discovery; ib_srpt
#    listens on RDMA CM (its configfs rdma_cm_port) and ib_srp connects
#    with dest=IP:port, the target's node GUID as id_ext and ioc_guid.
# fio writes 56 MiB to the disk and checks what it reads back, node 1
# checks its backstore file (lib-storage.sh). Proof that it went over
# RDMA: the RDMA devices received at least the data's bytes in 4 KiB
# packets each way, the target moved the data with RDMA READ/WRITE
# (rdma_sends) and the initiator registered its buffers (fast_reg).
# Teardown: the disk and the target go, ib_srpt unloads, no CM ID stays.
# CNUAS_PAIR="INITIATOR TARGET" picks other nodes: with the Ethernet
# lab's Soft-RoCE node on either side ("2 1", "1 2") it passes too.
# timeout: 300
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-storage.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "0 1"
I=$A T=$B
DI=$(rdma_dev "$I") DT=$(rdma_dev "$T")
IMG=/tmp/cnuas-vm94.img
CFG=/sys/kernel/config/target
BS=$CFG/core/fileio_94/vm94
CM_PORT=5094

initiator_stop() {
	lsh -t 90 "$I" "for p in /sys/class/srp_remote_ports/port-*; do
			[ -e \$p/delete ] && echo 1 >\$p/delete
		done
		modprobe -r ib_srp; true" >/dev/null 2>&1
}
# target_stop WWN: the configfs steps undone, newest first.
target_stop() {
	lsh -t 90 "$T" "w=$CFG/srpt/$1/tpgt_1
		if [ -d \$w ]; then
			echo 0 >\$w/enable
			rm -f \$w/acls/*/lun_0/map; rmdir \$w/acls/*/lun_0 \$w/acls/*
			rm -f \$w/lun/lun_0/vm94; rmdir \$w/lun/lun_0 \$w
		fi
		[ ! -d $CFG/srpt/$1 ] || rmdir $CFG/srpt/$1
		[ ! -e $CFG/srpt/discovery_auth/rdma_cm_port ] || echo 0 >$CFG/srpt/discovery_auth/rdma_cm_port
		# The fabric's directory holds a reference on ib_srpt.
		[ ! -d $CFG/srpt ] || rmdir $CFG/srpt
		[ ! -d $BS ] || rmdir $BS
		[ ! -d ${BS%/*} ] || rmdir ${BS%/*}
		rm -f $IMG
		modprobe -r ib_srpt; true" >/dev/null 2>&1
}
WWN=none
cleanup() {
	initiator_stop
	target_stop "$WWN"
}
storage_begin
# traps NODE: its port's SMA traps sent and repressed.
traps() {
	lsh -t 30 "$1" "cd /sys/class/infiniband/$(rdma_dev "$1")/ports/1/hw_counters &&
		echo \$(cat sma_traps_sent) \$(cat sma_traps_repressed)" || fail "node$1: no SMA trap counters"
}
[ "$LINK_LAYER" != ib ] || traps0=$(traps "$T")
st_modprobe "$T" "LIO's SRP target (ib_srpt)" target_core_mod target_core_file ib_srpt
st_modprobe "$I" "the SRP initiator (ib_srp)" ib_srp sd_mod ib_umad

# gid0_hex NODE: the 32 hex digits of GID 0 of NODE's RDMA port.
gid0_hex() {
	lsh -t 30 "$1" "tr -d ':\n' </sys/class/infiniband/$(rdma_dev "$1")/ports/1/gids/0" ||
		fail "node$1: no GID 0"
}
tgid=$(gid0_hex "$T") igid=$(gid0_hex "$I")
WWN=0x$tgid
ACL=0x0000000000000000${igid:16}

# The target: backstore, target port, LUN 0, the initiator's ACL with
# LUN 0 mapped, then enabled; on RoCE its RDMA CM listener too.
t0=$SECONDS
out=$(lsh -t 120 "$T" "set -e
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	truncate -s 64M $IMG
	mkdir -p $BS
	echo fd_dev_name=$IMG,fd_dev_size=67108864 >$BS/control
	echo 1 >$BS/enable
	mkdir -p $CFG/srpt/$WWN/tpgt_1/lun/lun_0
	w=$CFG/srpt/$WWN/tpgt_1
	ln -s $BS \$w/lun/lun_0/vm94
	mkdir -p \$w/acls/$ACL/lun_0
	ln -s \$w/lun/lun_0 \$w/acls/$ACL/lun_0/map
	echo 1 >\$w/enable
	if [ $LINK_LAYER = eth ]; then
		echo $CM_PORT >$CFG/srpt/discovery_auth/rdma_cm_port
		i=0; until rdma res show cm_id | grep -qE ':$CM_PORT( |\$)'; do
			[ \$i -lt 50 ] || { echo 'ib_srpt does not listen on RDMA CM port $CM_PORT:'; rdma res show cm_id; exit 1; }
			sleep 0.1; i=\$((i + 1)); done
		echo listening on $CM_PORT
	fi
	echo node_guid \$(tr -d ':' </sys/class/infiniband/$DT/node_guid)" 2>&1) ||
	fail "node$T: the SRP target setup failed: $out"
echo "$out"
guid=$(sed -n 's/^node_guid //p' <<<"$out")
note "node$T: ib_srpt exports LUN 0 as $WWN to $ACL ($((SECONDS - t0)) s)"

# The target string: by discovery on IB, by address on RoCE.
t0=$SECONDS
if [ "$LINK_LAYER" = ib ]; then
	out=$(lsh -t 90 "$I" "umad=
		for u in /sys/class/infiniband_mad/umad*; do
			[ \"\$(cat \$u/ibdev)\" = $DI ] && [ \"\$(cat \$u/port)\" = 1 ] && umad=/dev/infiniband/\${u##*/}
		done
		[ -n \"\$umad\" ] || { echo 'no umad device of $DI port 1'; exit 1; }
		i=0; until ibsrpdm -c -d \$umad >/tmp/cnuas-vm94.dm 2>&1 && grep -q 'id_ext=' /tmp/cnuas-vm94.dm; do
			[ \$i -lt 30 ] || { echo 'ibsrpdm found no SRP target in 30 s:'; cat /tmp/cnuas-vm94.dm; exit 1; }
			sleep 1; i=\$((i + 1)); done
		cat /tmp/cnuas-vm94.dm" 2>&1) || fail "node$I: SRP discovery failed: $out"
	echo "$out"
	tstr=$(grep 'id_ext=' <<<"$out" | grep -i "dgid=$tgid" | head -n 1)
	[ -n "$tstr" ] || fail "node$I: ibsrpdm does not list node$T's port (GID $tgid)"
	note "node$I: ibsrpdm found node$T's target in $((SECONDS - t0)) s"
	read -r s0 r0 <<<"$traps0"
	read -r s1 r1 <<<"$(traps "$T")"
	echo "node$T: SMA traps sent $s0 -> $s1, repressed $r0 -> $r1"
	[ "$s1" -gt "$s0" ] && [ "$r1" -gt "$r0" ] ||
		fail "node$T: no Trap 144 sent and repressed when ib_srpt set IsDeviceManagementSupported"
else
	tstr="id_ext=$guid,ioc_guid=$guid,dest=$(ip_of "$T"):$CM_PORT"
fi

# Login: the string to add_target, then the LUN as a SCSI disk.
out=$(lsh -t 120 "$I" "set -e
	h=/sys/class/infiniband_srp/srp-$DI-1
	echo '$tstr' >\$h/add_target || { echo 'add_target refused $tstr:'; dmesg | tail -n 12; exit 1; }
	hosts=
	for s in /sys/class/scsi_host/host*; do
		[ \"\$(cat \$s/proc_name 2>/dev/null)\" = ib_srp ] || continue
		hosts=\"\$hosts \${s##*/}\"
		echo srp \${s##*/} id_ext \$(cat \$s/id_ext) sgid \$(cat \$s/sgid)
	done
	[ -n \"\$hosts\" ] || { echo 'no ib_srp SCSI host'; dmesg | tail -n 12; exit 1; }
	# The disk: a block device whose sysfs path runs through that host.
	i=0; dev=
	while :; do
		for b in /sys/block/sd*; do
			for h in \$hosts; do
				case \$(readlink -f \$b) in */\$h/*) dev=\${b##*/} ;; esac
			done
		done
		[ -n \"\$dev\" ] && [ -b /dev/\$dev ] && break
		dev=
		[ \$i -lt 100 ] || { echo 'no SCSI disk from the SRP target'; dmesg | tail -n 12; exit 1; }
		sleep 0.2; i=\$((i + 1))
	done
	echo disk \$dev \$(cat /sys/block/\$dev/size)" 2>&1) || {
	echo "node$T's kernel said:"
	lsh -t 30 "$T" "dmesg | grep -i srpt | tail -n 8"
	fail "node$I: SRP login failed: $out"
}
echo "$out"
read -r _ dev sectors <<<"$(grep '^disk ' <<<"$out")"
[ "$sectors" = 131072 ] || fail "node$I: /dev/$dev has $sectors sectors, the LUN 131072"
note "node$I: /dev/$dev is LUN 0 of node$T's ib_srpt over $LINK_LAYER ($((SECONDS - t0)) s)"

c0=$(st_counters "$I") s0=$(st_counters "$T")
out=$(st_fio_write "$I" "/dev/$dev") || { echo "$out"; exit 1; }
echo "$out" | sed '$d'
secs=$(tail -n 1 <<<"$out")
st_fio_check "$T" "$IMG"
c1=$(st_counters "$I") s1=$(st_counters "$T")
for d in $ST_COUNTERS; do
	echo "  $d: node$I +$(st_delta "$c0" "$c1" $d) node$T +$(st_delta "$s0" "$s1" $d)"
done
d=$(st_delta "$c0" "$c1" rcvd_pkts)
[ "$d" -ge $((ST_MIB * 256)) ] || fail "node$I received $d RDMA packets for $ST_MIB MiB read"
d=$(st_delta "$s0" "$s1" rcvd_pkts)
[ "$d" -ge $((ST_MIB * 256)) ] || fail "node$T received $d RDMA packets for $ST_MIB MiB written"
[ "$(st_delta "$s0" "$s1" rdma_sends)" -gt 0 ] || fail "the target on node$T issued no RDMA READ or WRITE"
[ "$DI" != cnuas_0 ] || [ "$(st_delta "$c0" "$c1" fast_reg)" -gt 0 ] ||
	fail "the initiator on node$I registered no memory (fast_reg)"
echo "PASS SRP over $LINK_LAYER: $ST_MIB MiB written and read back intact in $secs s, checked on node$T"

# Logout: the remote port deleted, its disk goes; then the target.
out=$(lsh -t 90 "$I" "set -e
	for p in /sys/class/srp_remote_ports/port-*; do echo 1 >\$p/delete; done
	i=0; while [ -e /sys/block/$dev ]; do
		[ \$i -lt 50 ] || { echo '/dev/$dev is still there'; exit 1; }
		sleep 0.2; i=\$((i + 1)); done" 2>&1) || fail "node$I: SRP logout failed: $out"
initiator_stop
target_stop "$WWN"
out=$(lsh -t 30 "$T" "[ ! -e /sys/module/ib_srpt ] || echo 'ib_srpt is still loaded'" 2>&1)
[ -z "$out" ] || fail "node$T: $out"
[ "$LINK_LAYER" != eth ] || st_no_cm_id "$T" $CM_PORT
storage_end
echo "SRP over $LINK_LAYER: $ST_MIB MiB each way over LIO's ib_srpt and ib_srp"
