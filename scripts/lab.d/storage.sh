# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# The kernel's storage servers and clients over RDMA, set up by hand in
# lab guests (no init system starts them there): each function prints a
# guest shell script, which the caller runs in its guest its own way
# (tests/vm's lsh, scripts/bench-rdma's x). Shared by VM tests 92 (NFS
# over RDMA) and 93 (iSER) and by the storage rows of scripts/bench-rdma.
# TAG names a user's files and pids in the guest (vm92, bench...).

# st_nfsd_up TAG EXPORT PORT SIZE FSID CLIENT_ADDR...: nfsd's filesystem,
# a tmpfs of SIZE exported to each client, rpcbind (NFSv3's MOUNT
# protocol), mountd (answers the kernel's export lookups), then the
# threads and the RDMA listener on PORT. NFSv4's lease and grace period
# at their least (10 s): a fresh server refuses OPENs for the grace
# period. Prints "portlist ..." and "versions ...".
st_nfsd_up() {
	local tag=$1 exp=$2 port=$3 size=$4 fsid=$5 a exports=''
	shift 5
	for a in "$@"; do
		exports+="exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=$fsid $a:$exp
	"
	done
	echo "set -e
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	mkdir -p $exp
	mountpoint -q $exp || mount -t tmpfs -o size=$size cnuas-$tag $exp
	if [ \"\$(cat /proc/fs/nfsd/threads)\" = 0 ]; then
		echo 10 >/proc/fs/nfsd/nfsv4leasetime
		echo 10 >/proc/fs/nfsd/nfsv4gracetime
	fi
	setsid rpcbind -f -w >/tmp/cnuas-$tag-rpcbind.log 2>&1 &
	echo \$! >/run/cnuas-$tag-rpcbind.pid
	i=0; until rpcinfo -p 127.0.0.1 >/dev/null 2>&1; do
		[ \$i -lt 100 ] || { echo 'rpcbind does not answer:'; cat /tmp/cnuas-$tag-rpcbind.log; exit 1; }
		sleep 0.1; i=\$((i + 1)); done
	$exports
	setsid rpc.mountd -F >/tmp/cnuas-$tag-mountd.log 2>&1 &
	echo \$! >/run/cnuas-$tag-mountd.pid
	rpc.nfsd 4
	echo rdma $port >/proc/fs/nfsd/portlist
	echo portlist \$(cat /proc/fs/nfsd/portlist)
	echo versions \$(cat /proc/fs/nfsd/versions)
	i=0; until rdma res show cm_id | grep -qE ':$port( |\$)'; do
		[ \$i -lt 50 ] || { echo 'no RDMA listener on $port:'; rdma res show cm_id; exit 1; }
		sleep 0.1; i=\$((i + 1)); done"
}

# st_nfsd_down TAG EXPORT CLIENT_ADDR...: unexported, nfsd stopped, the
# tmpfs gone; never fails.
st_nfsd_down() {
	local tag=$1 exp=$2 a s=''
	shift 2
	for a in "$@"; do
		s+="exportfs -u $a:$exp 2>/dev/null
	"
	done
	echo "$s
	[ ! -d /proc/fs/nfsd ] || [ \"\$(cat /proc/fs/nfsd/threads 2>/dev/null)\" = 0 ] || rpc.nfsd 0
	for d in mountd rpcbind; do
		f=/run/cnuas-$tag-\$d.pid
		[ ! -s \$f ] || kill \$(cat \$f) 2>/dev/null
		rm -f \$f
	done
	! mountpoint -q $exp || umount $exp
	! mountpoint -q /proc/fs/nfsd || umount /proc/fs/nfsd
	true"
}

# st_nfs_mount SERVER_ADDR EXPORT MOUNTPOINT OPTIONS: the mount (modules
# loaded first); prints its /proc/mounts line and its transport line
# ("xprt: rdma ...") from /proc/self/mountstats.
st_nfs_mount() {
	echo "set -e
	modprobe -a nfs nfsv3 nfsv4 rpcrdma
	mkdir -p $3
	mount -t nfs -o $4 $1:$2 $3
	grep ' $3 ' /proc/mounts
	awk '\$1 == \"device\" { on = (\$5 == \"$3\") } on && /xprt:/ { print; exit }' /proc/self/mountstats"
}

# st_lio_up TAG IQN IMAGE SIZE ADDR: Linux's LIO target, one targetcli
# command at a time as an administrator types them: a fileio backstore
# TAG of SIZE in IMAGE, one LUN, a portal on ADDR:3260 with iSER enabled,
# demo-mode ACLs. targetcli asks the system D-Bus for tcmu-runner's
# backstores and stops when there is no bus: one is started unless there
# is one (systemd guests). /iscsi create adds a portal on every address;
# this one listens on ADDR only, and with iSER beside TCP. Prints
# "iser 1" when the portal has it, then targetcli's tree.
st_lio_up() {
	local tag=$1 iqn=$2 img=$3 size=$4 addr=$5
	local tpg=/sys/kernel/config/target/iscsi/$iqn/tpgt_1
	echo "set -e
	modprobe -a target_core_mod iscsi_target_mod ib_isert
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	if [ ! -S /run/dbus/system_bus_socket ]; then
		mkdir -p /run/dbus
		dbus-daemon --system --fork
		touch /run/cnuas-$tag-dbus
	fi
	targetcli /backstores/fileio create name=$tag file_or_dev=$img size=$size write_back=false
	targetcli /iscsi create $iqn
	targetcli /iscsi/$iqn/tpg1/luns create /backstores/fileio/$tag
	[ ! -e $tpg/np/0.0.0.0:3260 ] || targetcli /iscsi/$iqn/tpg1/portals delete 0.0.0.0 3260
	targetcli /iscsi/$iqn/tpg1/portals create $addr 3260
	targetcli /iscsi/$iqn/tpg1/portals/$addr:3260 enable_iser true
	targetcli /iscsi/$iqn/tpg1 set attribute authentication=0 demo_mode_write_protect=0 \
		generate_node_acls=1 cache_dynamic_acls=1
	echo iser \$(cat $tpg/np/$addr:3260/iser)
	targetcli ls /iscsi/$iqn"
}

# st_lio_down TAG IQN IMAGE: the target, its backstore, its image and a
# D-Bus st_lio_up started gone; never fails.
st_lio_down() {
	echo "[ ! -d /sys/kernel/config/target/iscsi/$2 ] || targetcli /iscsi delete $2
	! ls -d /sys/kernel/config/target/core/fileio_*/$1 >/dev/null 2>&1 ||
		targetcli /backstores/fileio delete $1
	rm -f $3
	if [ -e /run/cnuas-$1-dbus ]; then
		kill \$(cat /run/dbus/pid) 2>/dev/null
		rm -f /run/cnuas-$1-dbus /run/dbus/pid /run/dbus/system_bus_socket
	fi; true"
}

# st_iser_login IQN PORTAL INITIATOR_NAME: open-iscsi's iscsid (unless
# one runs; iscsiadm starts none of its own when one answers), then
# discovery and login over iSER (ib_iser). Prints the session and "disk
# DEV SECTORS" of the LUN's SCSI disk (sd_mod loaded: no udev here).
st_iser_login() {
	echo "set -e
	modprobe -a ib_iser sd_mod
	mkdir -p /run/lock/iscsi /etc/iscsi
	echo InitiatorName=$3 >/etc/iscsi/initiatorname.iscsi
	[ -s /run/iscsid.pid ] && kill -0 \$(cat /run/iscsid.pid) 2>/dev/null || iscsid
	i=0; until ss -xl | grep -q ISCSIADM_ABSTRACT; do
		[ \$i -lt 100 ] || { echo 'iscsid does not listen'; exit 1; }
		sleep 0.1; i=\$((i + 1)); done
	iscsiadm -m discovery -t sendtargets -p $2 -I iser
	iscsiadm -m node -T $1 -p $2 -I iser --login
	iscsiadm -m session
	i=0; dev=
	while [ -z \"\$dev\" ]; do
		for s in /sys/class/iscsi_session/session*; do
			[ \"\$(cat \$s/targetname)\" = $1 ] || continue
			for b in \$s/device/target*/*:*/block/*; do [ -e \$b ] && dev=\${b##*/}; done
		done
		[ -n \"\$dev\" ] && [ -b /dev/\$dev ] && break
		dev=
		[ \$i -lt 150 ] || { echo 'no SCSI disk from the session'; dmesg | tail -n 10; exit 1; }
		sleep 0.2; i=\$((i + 1))
	done
	echo disk \$dev \$(cat /sys/block/\$dev/size)"
}

# st_iser_stop IQN PORTAL: the initiator's session, its records and
# iscsid gone; never fails.
st_iser_stop() {
	echo "iscsiadm -m node -T $1 -p $2 -I iser --logout
	iscsiadm -m node -T $1 -p $2 -I iser -o delete
	iscsiadm -m discoverydb -t sendtargets -p $2 -I iser -o delete
	[ ! -s /run/iscsid.pid ] || iscsiadm -k 0 || kill \$(cat /run/iscsid.pid)
	true"
}
