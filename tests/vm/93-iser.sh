#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# iSCSI over RDMA (iSER) with the kernel's own target and initiator:
# node 1 runs Linux's LIO target set up by targetcli (a 64 MiB fileio
# backstore on tmpfs, one LUN, a portal on its lab address with iSER
# enabled, demo-mode ACLs), node 0 open-iscsi's iscsid and iscsiadm with
# the iser transport (ib_iser): discovery, login, the LUN as a SCSI disk.
# fio writes 56 MiB to the disk and checks what it reads back
# (lib-storage.sh: sequential 1 MiB and random 4 KiB O_DIRECT I/O, and
# buffered 64 KiB writes read back after the page cache was dropped),
# then node 1 checks the same data in the backstore's file itself.
# Proof that it went over RDMA: iscsiadm shows an iser session and the
# target lists the initiator's session on a portal whose iser attribute
# is 1, neither node holds a TCP connection on port 3260, the RDMA
# devices received at least the data's bytes in 4 KiB packets each way,
# the target moved the data with RDMA READ/WRITE (rdma_sends) and the
# initiator registered its buffers (fast_reg, on cnuas). Logout and the
# target's teardown must leave no SCSI disk and no RDMA CM ID on 3260.
# Over Ethernet (st_faults_here), before the logout, I/O goes on through
# faults (lib-storage.sh st_through_faults): the switch drops and reorders 2% of the frames, the
# initiator's switch port is hung up, its cnuas_ib is reloaded; iscsid
# logs in again by itself, fio finds every block as written, and the
# initiator logs only the errors ISER_EXPLAINED names.
# The target's kernel log, from the start to the end of the teardown,
# holds no error but those ISERT_EXPLAINED names (lib-storage.sh
# st_server_check): LIO's and ib_isert's, the faults' included.
# In the Ethernet lab the Soft-RoCE node then logs in to the same target
# over iSER and writes and checks 8 MiB of its own (lib-storage.sh
# st_rxe_*).
# CNUAS_PAIR="INITIATOR TARGET" picks other nodes (e.g. a Soft-RoCE one).
# Runs over RoCE and, in the IB lab, over IPoIB addresses on native IB,
# where node 0 runs OpenSM and so is the target, node 1 the initiator.
# timeout: 600
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-storage.sh"
need_cnuas_nodes 2
rdma_pair CNUAS_PAIR "$ST_PAIR"
I=$A T=$B
IQN=iqn.2026-12.org.cnuas:vm93
INAME=iqn.2026-12.org.cnuas:vm93-node$I
TADDR=$(ip_of "$T")
PORTAL=$TADDR:3260
IMG=/tmp/cnuas-vm93.img
TPG=/sys/kernel/config/target/iscsi/$IQN/tpgt_1
NODE_ARGS="-T $IQN -p $PORTAL -I iser"
# The initiator's messages the faults explain, each by name:
# - the port's events while its link goes down and up (and, on IB, the
#   SM brings it back): port error, port active, client reregister, LID,
#   SM or GID change;
# - the connection's error (1011 failed, 1020 closed, 1022 NOP timeout)
#   and iscsid logging in again; under the drops a NOP-Out may wait out
#   its 5 s behind RC retransmits;
# - a WR that ran out of RC retries while the port was hung up;
# - while the reloaded driver's ib0 is not up yet (IB): no route to the
#   target (-101, ENETUNREACH) for iscsid's next login;
# - a command SEND whose retransmission found its data MR invalidated
#   (local protection error on the "command" completion): with immediate
#   data the SEND reads the I/O's fast-registration MR, the dropped ACK
#   of that SEND leaves it outstanding, and the target's response (SEND
#   with Invalidate of the same key) invalidates the MR before the
#   retransmit re-reads it. An HCA re-reads memory through the key when
#   it retransmits, so this needs a lost ACK (the drops, or the port
#   hung up): it cannot happen on a lossless fabric, and the connection
#   recovers. (Seen in 93[ib] through the drops and in 93 after the
#   hang-up, 2026-12-06; the explanation is the fitting one, not a
#   proven one. The kernel prints vend_err with %#x: "0x0".)
# Anything else (a protection or access error, a QP event) fails.
ISER_EXPLAINED='iser: iser_event_handler: async event (port error \(10\)|port active \(9\)|client reregister \(17\)|LID change \(11\)|SM change \(13\)|GID table change \(18\)) on device cnuas_0 port 1$'
ISER_EXPLAINED+='|connection[0-9]+:[0-9]+: (detected conn error \((1011|1020|1022)\)$|ping timeout of 5 secs expired)'
ISER_EXPLAINED+='|iser: iser_err_comp: [a-z_]+ failure: transport retry counter exceeded \(12\)'
ISER_EXPLAINED+='|iser: iser_connect: rdma_resolve_addr failed: -101$'
ISER_EXPLAINED+='|iser: iser_err_comp: command failure: local protection error \(4\) vend_err 0(x0)?$'
# The target's messages explained: LIO's first load (ST_WHY_LIO). LIO
# and ib_isert logged no other error in any run, through the faults
# either: ib_isert logs a failed completion unless it was flushed, and
# only flushes came (the hang-up stayed within RC's retries; the
# reloaded initiator's connection was torn down, not left to time out).
ISERT_EXPLAINED=$ST_WHY_LIO

# initiator_stop [NODE]: the initiator's session and iscsid gone.
initiator_stop() {
	lsh -t 90 "${1:-$I}" "$(st_iser_stop $IQN $PORTAL)" >/dev/null 2>&1
}
target_stop() {
	lsh -t 90 "$T" "$(st_lio_down vm93 $IQN $IMG)" >/dev/null 2>&1
}
cleanup() {
	initiator_stop
	[ -z "$X" ] || initiator_stop "$X"
	target_stop
}
X=$(st_rxe_peer)
storage_begin
[ -z "$X" ] || rdma_ready "$X"
out=$(lsh -t 30 "$T" 'for t in targetcli dbus-daemon; do command -v $t >/dev/null || echo "no $t"; done' 2>&1) ||
	fail "node$T: $out"
[ -z "$out" ] || fail "node$T: the image lacks targetcli or D-Bus: ${out//$'\n'/, }"
out=$(lsh -t 30 "$I" 'for t in iscsid iscsiadm fio; do command -v $t >/dev/null || echo "no $t"; done' 2>&1) ||
	fail "node$I: $out"
[ -z "$out" ] || fail "node$I: the image lacks open-iscsi or fio: ${out//$'\n'/, }"
st_modprobe "$T" "the iSER target (LIO ib_isert)" target_core_mod iscsi_target_mod ib_isert
# sd_mod too: no udev loads it for the new disk here.
st_modprobe "$I" "the iSER initiator (ib_iser)" ib_iser sd_mod

# The target by hand (lab.d/storage.sh): LIO with an iSER portal.
t0=$SECONDS
out=$(lsh -t 240 "$T" "$(st_lio_up vm93 $IQN $IMG 64M "$TADDR")" 2>&1) ||
	fail "node$T: targetcli setup failed: $out"
echo "$out"
grep -qx 'iser 1' <<<"$out" || fail "node$T: the portal $PORTAL does not have iSER enabled"
note "node$T: LIO exports $IQN on $PORTAL with iSER ($((SECONDS - t0)) s)"

c0=$(st_counters "$I") s0=$(st_counters "$T")

# initiator_login NODE: iscsid by hand (lab.d/storage.sh), discovery
# and login over iSER. Prints the session and "disk DEV SECTORS".
initiator_login() {
	lsh -t 180 "$1" "$(st_iser_login $IQN $PORTAL $IQN-node$1)" 2>&1
}
t0=$SECONDS
out=$(initiator_login "$I") || fail "node$I: iSER discovery or login failed: $out"
echo "$out"
grep -qE "^iser: \[[0-9]+\] $PORTAL,1 $IQN" <<<"$out" || fail "node$I: no iser session to $IQN"
read -r _ dev sectors <<<"$(grep '^disk ' <<<"$out")"
[ "$sectors" = 131072 ] || fail "node$I: /dev/$dev has $sectors sectors, the LUN 131072"
out=$(lsh -t 30 "$T" "tr -d '\\0' <$TPG/dynamic_sessions" 2>&1)
grep -qx "$INAME" <<<"$out" || fail "node$T: no session of $INAME in $TPG/dynamic_sessions: $out"
note "node$I: /dev/$dev is LUN 0 of $IQN over iSER ($((SECONDS - t0)) s)"

out=$(st_fio_write "$I" "/dev/$dev") || { echo "$out"; exit 1; }
echo "$out" | sed '$d'
secs=$(tail -n 1 <<<"$out")
st_fio_check "$T" "$IMG"

c1=$(st_counters "$I") s1=$(st_counters "$T")
out=$(lsh -t 30 "$I" "ss -Htn state established '( dport = :3260 )'" 2>&1)$(lsh -t 30 "$T" "ss -Htn state established '( sport = :3260 )'" 2>&1)
[ -z "$out" ] || fail "TCP connections on port 3260 beside the iSER session: $out"
for d in sent_pkts rcvd_pkts rdma_sends rdma_recvs fast_reg remote_inv; do
	echo "  $d: node$I +$(st_delta "$c0" "$c1" $d) node$T +$(st_delta "$s0" "$s1" $d)"
done
# The initiator's reads arrive at the initiator, its writes at the
# target, in packets of at most 4 KiB of data.
d=$(st_delta "$c0" "$c1" rcvd_pkts)
[ "$d" -ge $((ST_MIB * 256)) ] || fail "node$I received $d RDMA packets for $ST_MIB MiB read"
d=$(st_delta "$s0" "$s1" rcvd_pkts)
[ "$d" -ge $((ST_MIB * 256)) ] || fail "node$T received $d RDMA packets for $ST_MIB MiB written"
[ "$(st_delta "$s0" "$s1" rdma_sends)" -gt 0 ] || fail "the target on node$T issued no RDMA READ or WRITE"
[ "$(rdma_dev "$I")" != cnuas_0 ] || [ "$(st_delta "$c0" "$c1" fast_reg)" -gt 0 ] ||
	fail "the initiator on node$I registered no memory (fast_reg)"
echo "PASS iSER: $ST_MIB MiB written and read back intact in $secs s, checked on node$T"

! st_faults_here eth || st_through_faults "$I" "/dev/$dev" "$ISER_EXPLAINED"

# Logout: the disk goes; then the target goes, and with it the listener.
out=$(lsh -t 90 "$I" "set -e
	iscsiadm -m node $NODE_ARGS --logout
	i=0; while [ -e /sys/block/$dev ]; do
		[ \$i -lt 50 ] || { echo '/dev/$dev is still there'; exit 1; }
		sleep 0.2; i=\$((i + 1)); done
	! iscsiadm -m session 2>/dev/null | grep -q $IQN || { echo 'the session is still there'; exit 1; }" 2>&1) ||
	fail "node$I: logout failed: $out"
initiator_stop

# Soft-RoCE as the initiator (Ethernet lab): it logs in to the same
# target, writes 8 MiB past the others' data and reads it back, and the
# target finds it in its file.
if [ -n "$X" ]; then
	t0=$SECONDS
	out=$(lsh -t 60 "$X" "modprobe -a ib_iser sd_mod" 2>&1) ||
		st_rxe_fail "$X" "$T" "ib_iser does not load" "$out"
	out=$(initiator_login "$X") || st_rxe_fail "$X" "$T" "iSER discovery or login failed" "$out"
	grep -qE "^iser: \[[0-9]+\] $PORTAL,1 $IQN" <<<"$out" ||
		st_rxe_fail "$X" "$T" "no iser session to $IQN" "$out"
	read -r _ xdev _ <<<"$(grep '^disk ' <<<"$out")"
	out=$(st_rxe_fio "$X" "$T" "/dev/$xdev") || { echo "$out"; exit 1; }
	echo "$out" | sed '$d'
	st_fio_check "$T" "$IMG" peer
	initiator_stop "$X"
	lsh -t 30 "$X" "! iscsiadm -m session 2>/dev/null | grep -q $IQN" ||
		st_rxe_fail "$X" "$T" "the session is still there after the logout" ""
	echo "PASS iSER with Soft-RoCE: node$X (rxe0) wrote 8 MiB to node$T's cnuas target and read it back in $(tail -n 1 <<<"$out") s ($((SECONDS - t0)) s in all)"
else
	note "no Soft-RoCE step: the lab has no rxe node, or a test node is not cnuas"
fi
target_stop
out=$(lsh -t 30 "$T" "[ ! -e /sys/kernel/config/target/iscsi/$IQN ] || echo $IQN is still there" 2>&1)
[ -z "$out" ] || fail "node$T: $out"
st_no_cm_id "$T" 3260
st_no_cm_id "$I" 3260
storage_end "$ISERT_EXPLAINED"
echo "iSER: $ST_MIB MiB each way over LIO's ib_isert and ib_iser"
