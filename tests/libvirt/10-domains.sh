#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The path an administrator takes (issue 43, docs/libvirt.md): the switch
# run as its unit runs it (root, group cnuas, /run/cnuas 0750 root:cnuas),
# Debian's libvirtd with its stock configuration (QEMU as libvirt-qemu),
# the two domains of docs/libvirt.md (the lab's kernel, initrd and disk, its
# agent on a virtio-serial channel, TCG), then ibv_rc_pingpong, rping -V
# and ib_write_bw between them; a process outside group cnuas cannot
# connect; the switch names both ports by domain; a switch restart and a
# `virsh reset` bring the link back; `virsh destroy` takes the port away.
# Everything it started or changed is stopped and undone at the end; a
# libvirtd or group that was there before is left alone.
# timeout: 1500
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
# shellcheck source=../lib-skip.sh
. "$top/tests/lib-skip.sh"
fail() { echo "FAIL: $*"; exit 1; }
note() { echo "# $(date -u +%T) $*"; }

RUN=/run/cnuas SOCK=/run/cnuas/switch.sock GROUP=cnuas QUSER=libvirt-qemu
DOMS=(cnuas-test-vm1 cnuas-test-vm2)
MTU=9000

[ "$(id -u)" = 0 ] || skip_because not-root "starts libvirtd, a system service and creates a group"
if ! command -v libvirtd >/dev/null || ! command -v virsh >/dev/null; then
	# Without recommends: they would add Debian's QEMU beside ours.
	note "installing libvirt-daemon-system"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		libvirt-daemon-system >/dev/null ||
		skip_because no-libvirt "apt-get install libvirt-daemon-system failed"
fi
[ -e "$SOCK" ] && fail "$SOCK exists: a cnuas-vswitchd serves this host already; not touching it"

make -s -C userspace/vswitchd cnuas-vswitchd cnuas-vsctl >/dev/null || fail "switch build failed"
qemu=$(scripts/build-qemu --print)
rc=$?
qemu=$(tail -n1 <<<"$qemu")
[ $rc = 3 ] && skip_because no-qemu-build "scripts/build-qemu cannot build QEMU here"
[ -x "$qemu" ] || fail "scripts/build-qemu gave no QEMU"
image=$(scripts/guest-image --distro bookworm | tail -n1)
[ -s "$image/rootfs.ext4" ] || fail "no guest image (scripts/guest-image)"

T=$(mktemp -d /var/tmp/cnuas-libvirt.XXXXXX) || exit 2
chmod 0755 "$T"
made_group=0 added_user=0 made_run=0 started_libvirtd=0 started_virtlogd=0 sw_pid=''
caps_before=$(ls /var/cache/libvirt/qemu/capabilities 2>/dev/null)
run_libvirt_before=0
[ -e /run/libvirt ] && run_libvirt_before=1

cleanup() {
	local d f
	set +e
	for d in "${DOMS[@]}"; do
		virsh -q domstate "$d" >/dev/null 2>&1 || continue
		virsh -q destroy "$d" >/dev/null 2>&1
		virsh -q undefine "$d" >/dev/null 2>&1
		rm -f /var/log/libvirt/qemu/"$d".log*
	done
	[ -z "$sw_pid" ] || { kill "$sw_pid"; wait "$sw_pid"; } 2>/dev/null
	[ $started_libvirtd = 0 ] || stop_pidfile "$T/libvirtd.pid"
	[ $started_virtlogd = 0 ] || stop_pidfile "$T/virtlogd.pid"
	# what libvirtd cached about our emulator, and its runtime folder
	for f in /var/cache/libvirt/qemu/capabilities/*; do
		[ -e "$f" ] || continue
		grep -qxF "${f##*/}" <<<"$caps_before" || rm -f "$f"
	done
	[ $started_libvirtd = 0 ] || [ $run_libvirt_before = 1 ] || rm -rf /run/libvirt
	[ $made_run = 0 ] || rm -rf "$RUN"
	[ $added_user = 0 ] || gpasswd -d "$QUSER" "$GROUP" >/dev/null
	[ $made_group = 0 ] || groupdel "$GROUP"
	rm -rf "$T"
}
trap cleanup EXIT
# tests/run's time limit: undo all the same
trap 'exit 1' TERM INT
stop_pidfile() {
	local p i
	p=$(cat "$1" 2>/dev/null) || return 0
	kill "$p" 2>/dev/null || return 0
	for i in $(seq 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.2; done
	kill -9 "$p" 2>/dev/null
}

# ---- the switch, as cnuas-vswitchd.service runs it -------------------------
if ! getent group "$GROUP" >/dev/null; then
	systemd-sysusers "$top/userspace/vswitchd/cnuas-vswitchd.sysusers" || fail "systemd-sysusers failed"
	made_group=1
fi
getent group "$GROUP" >/dev/null || fail "no group $GROUP after systemd-sysusers"
if [ ! -d "$RUN" ]; then
	install -d -m 0750 -o root -g "$GROUP" "$RUN" || fail "cannot make $RUN"
	made_run=1
fi
# The user's groups as they were: the switch must say when QEMU's lacks ours.
in_group() { id -nG "$QUSER" | tr ' ' '\n' | grep -qx "$GROUP"; }
start_switch() {
	# Group=cnuas, NoNewPrivileges=yes of the unit; root, as the unit
	setpriv --regid "$GROUP" --clear-groups --no-new-privs -- \
		userspace/vswitchd/cnuas-vswitchd --foreground --socket "$SOCK" 2>>"$T/switch.log" &
	sw_pid=$!
	local i
	for i in $(seq 50); do [ -S "$SOCK.ctl" ] && return 0; sleep 0.1; done
	cat "$T/switch.log"
	fail "the switch did not come up"
}
vsctl() { userspace/vswitchd/cnuas-vsctl "$@"; }
start_switch
ls -ln "$RUN"
if ! in_group; then
	grep -q "user $QUSER (libvirt's QEMU) is not in group $GROUP" "$T/switch.log" ||
		{ cat "$T/switch.log"; fail "the switch did not warn that $QUSER is not in $GROUP"; }
	note "the switch warns: $(grep "not in group" "$T/switch.log")"
	adduser -q "$QUSER" "$GROUP" || fail "adduser $QUSER $GROUP failed"
	added_user=1
fi

# Who may connect: root's group member libvirt-qemu yes, nobody not.
connect_as() { # connect_as USER GROUP: exit 0 when USER connects to the switch
	setpriv --reuid "$1" --regid "$2" --init-groups -- /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(e); sys.exit(1)' "$SOCK"
}
out=$(connect_as nobody nogroup 2>&1) && fail "user nobody connected to $SOCK"
grep -q "Errno 13" <<<"$out" || fail "nobody's connect failed, but not for permissions: $out"
note "outside group $GROUP: $out"
connect_as "$QUSER" kvm || fail "$QUSER (in $GROUP) cannot connect to $SOCK"

# ---- libvirtd, stock configuration ------------------------------------------
if virsh -q -c qemu:///system uri >/dev/null 2>&1; then
	note "using the libvirtd that runs already"
else
	virtlogd --daemon --pid-file "$T/virtlogd.pid" || fail "virtlogd did not start"
	started_virtlogd=1
	libvirtd --daemon --pid-file "$T/libvirtd.pid" || fail "libvirtd did not start"
	started_libvirtd=1
	for i in $(seq 100); do virsh -q uri >/dev/null 2>&1 && break; sleep 0.2; done
	virsh -q uri >/dev/null || fail "libvirtd does not answer"
fi
for d in "${DOMS[@]}"; do
	virsh -q domstate "$d" >/dev/null 2>&1 && fail "a domain $d exists already; not touching it"
done
grep -E '^(user|group|security_driver|namespaces) *=' /etc/libvirt/qemu.conf &&
	note "qemu.conf is not stock (above)"

# ---- the two domains of docs/libvirt.md ---------------------------------------
# The emulator where libvirt-qemu can read it (root's home is 0700).
install -D -m 0755 "$qemu" "$T/qemu/bin/qemu-system-x86_64"
install -m 0644 "$image/vmlinuz" "$image/initrd.img" "$T/"
# domain_xml TAG NAME N: the docs' XML with the lab's boot, disk and agent.
domain_xml() {
	python3 - docs/libvirt.md "$1" "$2" "$T" "$3" "$MTU" <<'PY'
import re, sys, xml.etree.ElementTree as ET
md, tag, name, t, n, mtu = sys.argv[1:]
n = int(n)
m = re.search(r"<!-- libvirt-test: %s -->\s*```xml\n(.*?)```" % tag, open(md).read(), re.S)
if not m:
    sys.exit("docs/libvirt.md has no domain marked %s" % tag)
ET.register_namespace("qemu", "http://libvirt.org/schemas/domain/qemu/1.0")
d = ET.fromstring(m.group(1))
vm = "%s/%s" % (t, name)
d.set("type", "qemu")   # TCG: what the project tests (docs/own-qemu.md, KVM)
d.find("name").text = name
d.find("vcpu").text = "1"
d.find("memory").text = "1024"
os_ = d.find("os")
cmdline = ("console=ttyS0 root=/dev/vda rw panic=-1 mitigations=off net.ifnames=0 "
           "cnuas.node=%d cnuas.kind=cnuas cnuas.if=cnuas0 cnuas.ip=198.18.0.%d/24 "
           "cnuas.ip6=fd00:198:18::%d/64 cnuas.mtu=%s" % (n, n + 1, n + 1, mtu))
for k, v in (("kernel", t + "/vmlinuz"), ("initrd", t + "/initrd.img"), ("cmdline", cmdline)):
    ET.SubElement(os_, k).text = v
dev = d.find("devices")
dev.find("emulator").text = t + "/qemu/bin/qemu-system-x86_64"
disk = dev.find("disk")
disk.find("driver").set("type", "raw")
disk.find("source").set("file", vm + "/disk.img")
for e in dev.findall("serial") + dev.findall("console"):
    dev.remove(e)
ser = ET.SubElement(dev, "serial", type="file")
ET.SubElement(ser, "source", path=vm + "/console.log")
for k in range(3):
    ch = ET.SubElement(dev, "channel", type="unix")
    ET.SubElement(ch, "source", mode="bind", path="%s/agent%d.sock" % (vm, k))
    ET.SubElement(ch, "target", type="virtio", name="org.cnuas.agent.%d" % k)
rng = ET.SubElement(dev, "rng", model="virtio")
ET.SubElement(rng, "backend", model="random").text = "/dev/urandom"
print(ET.tostring(d, encoding="unicode"))
PY
}
tags=(vnic gpu)
for i in 0 1; do
	d=${DOMS[$i]}
	install -d -m 0755 -o "$QUSER" -g kvm "$T/$d"
	cp --sparse=always "$image/rootfs.ext4" "$T/$d/disk.img" || fail "no room for the disk copy"
	domain_xml "${tags[$i]}" "$d" "$i" >"$T/$d.xml" || fail "domain XML for $d"
	virsh -q define "$T/$d.xml" || { cat "$T/$d.xml"; fail "virsh define $d"; }
done
for d in "${DOMS[@]}"; do
	virsh -q start "$d" || { tail -n 20 /var/log/libvirt/qemu/"$d".log; fail "virsh start $d"; }
done
for d in "${DOMS[@]}"; do
	pid=$(cat /run/libvirt/qemu/"$d".pid)
	note "$d: QEMU pid $pid as $(ps -o user= -p "$pid"), groups $(ps -o supgrp= -p "$pid")"
	[ "$(ps -o user= -p "$pid")" = "$QUSER" ] || fail "$d's QEMU does not run as $QUSER"
done

# ---- in the guests, through their agents --------------------------------------
gx() { # gx SECONDS DOMAIN CMD...
	local t=$1 d=$2
	shift 2
	timeout -k 5 "$t" python3 scripts/lab.d/labctl.py exec "$T/$d" -- "$@"
}
gsh() { gx "$1" "$2" sh -c "$3"; }
wait_agent() {
	local d=$1 i
	for i in $(seq 120); do
		gx 20 "$d" true >/dev/null 2>&1 && return 0
		sleep 2
	done
	tail -n 30 "$T/$d/console.log"
	fail "$d: its agent did not answer in 240 s"
}
# rdma_up DOMAIN: RDMA device ACTIVE on cnuas0; prints the RoCE v2 GID
# index of its IPv4 address.
rdma_up() {
	local d=$1 n=$2
	gsh 120 "$d" "
		modprobe cnuas_ib && modprobe -a ib_uverbs rdma_ucm || exit 1
		i=0
		until rdma link show cnuas_0/1 2>/dev/null | grep -q 'state ACTIVE'; do
			[ \$i -lt 120 ] || { rdma link; dmesg | tail -n 20; exit 1; } >&2
			sleep 0.5; i=\$((i + 1))
		done
		want=0000:0000:0000:0000:0000:ffff:c612:$(printf '%04x' $((n + 1)))
		p=/sys/class/infiniband/cnuas_0/ports/1
		for try in \$(seq 20); do
			for f in \$(grep -lx \$want \$p/gids/* 2>/dev/null); do
				g=\${f##*/}
				[ \"\$(cat \$p/gid_attrs/types/\$g)\" = 'RoCE v2' ] && { echo \$g; exit 0; }
			done
			sleep 0.5
		done
		echo 'no RoCE v2 GID for 198.18.0.$((n + 1))' >&2; exit 1"
}
# pair NAME READY SERVER CLIENT: SERVER on vm1, once READY (a guest test)
# holds there CLIENT on vm2; both must exit 0.
pair() {
	local name=$1 ready=$2 srv=$3 cli=$4 sp
	gsh 200 "${DOMS[0]}" "$srv" >"$T/$name.srv" 2>&1 &
	sp=$!
	gsh 60 "${DOMS[0]}" "i=0; until $ready; do i=\$((i + 1)); [ \$i -lt 250 ] || exit 1; sleep 0.2; done" ||
		{ kill $sp; cat "$T/$name.srv"; fail "$name: the server did not get ready"; }
	if ! gsh 200 "${DOMS[1]}" "$cli" >"$T/$name.cli" 2>&1; then
		kill $sp 2>/dev/null
		cat "$T/$name.srv" "$T/$name.cli"
		fail "$name: the client failed"
	fi
	wait $sp || { cat "$T/$name.srv" "$T/$name.cli"; fail "$name: the server failed"; }
	note "$name: $(tail -n 1 "$T/$name.cli")"
}
tcp_listening() { printf "grep -qi ':%04X [0-9A-F]*:0000 0A' /proc/net/tcp /proc/net/tcp6" "$1"; }
cm_listening="rdma res show cm_id 2>/dev/null | grep -q LISTEN"
ip1=198.18.0.1

for d in "${DOMS[@]}"; do wait_agent "$d"; done
note "both agents answer"
g1=$(rdma_up "${DOMS[0]}" 0) || fail "${DOMS[0]}: RDMA device not ACTIVE"
g2=$(rdma_up "${DOMS[1]}" 1) || fail "${DOMS[1]}: RDMA device not ACTIVE"
gsh 30 "${DOMS[1]}" 'ls /sys/class/misc/ | grep -q cnuasgpu || { lspci -nn; exit 1; }' ||
	fail "${DOMS[1]}: no cnuasgpu in the guest"

# The switch names the ports after the domains.
port_names() {
	vsctl --json show | python3 -c '
import json, sys
print(" ".join(sorted(p["vm"] or "-" for p in json.load(sys.stdin)["ports"])))'
}
vsctl show
names=$(port_names)
[ "$names" = "${DOMS[*]}" ] || fail "switch ports named '$names', want '${DOMS[*]}'"
# vm1's MAC came from its UUID (no mac= in the docs' XML), vm2's is the docs'.
mac1=$(gsh 20 "${DOMS[0]}" 'cat /sys/class/net/cnuas0/address')
mac2=$(gsh 20 "${DOMS[1]}" 'cat /sys/class/net/cnuas0/address')
note "MACs: ${DOMS[0]} $mac1 (from its UUID $(virsh domuuid "${DOMS[0]}")), ${DOMS[1]} $mac2"
[ "$mac2" = 52:54:00:3c:1a:07 ] || fail "${DOMS[1]}: MAC $mac2 is not the docs' mac="
[ $(( 0x${mac1:0:2} & 3 )) = 2 ] || fail "${DOMS[0]}: MAC $mac1 is not a locally administered unicast one"

rdma_traffic() {
	pair rc_pingpong "$(tcp_listening 18515)" \
		"ibv_rc_pingpong -d cnuas_0 -g $g1 -n 20 -c" \
		"ibv_rc_pingpong -d cnuas_0 -g $g2 -n 20 -c $ip1"
	pair rping "$cm_listening" "rping -s -a $ip1 -v -V -C 5" "rping -c -a $ip1 -v -V -C 5"
	pair write_bw "$(tcp_listening 18516)" \
		"ib_write_bw -d cnuas_0 -x $g1 -F -n 200 -p 18516" \
		"ib_write_bw -d cnuas_0 -x $g2 -F -n 200 -p 18516 $ip1"
}
rdma_traffic

# ---- the switch restarts: the devices connect again ---------------------------
note "restarting the switch"
kill "$sw_pid"
wait "$sw_pid"
sw_pid=''
start_switch
for i in $(seq 100); do
	[ "$(vsctl --json show | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["ports"]))')" = 2 ] && break
	sleep 0.2
done
note "after the restart: $(vsctl --json show | python3 -c '
import json, sys
print(", ".join("port %d %s" % (p["id"], p["vm"]) for p in json.load(sys.stdin)["ports"]))')"
for n in 0 1; do
	rdma_up "${DOMS[$n]}" $n >/dev/null || fail "${DOMS[$n]}: RDMA port not ACTIVE after the switch restart"
done
pair rc_pingpong_after_restart "$(tcp_listening 18517)" \
	"ibv_rc_pingpong -d cnuas_0 -g $g1 -n 20 -c -p 18517" \
	"ibv_rc_pingpong -d cnuas_0 -g $g2 -n 20 -c -p 18517 $ip1"

# ---- virsh reset: same QEMU, same port, the guest starts again ----------------
note "virsh reset ${DOMS[1]}"
virsh -q reset "${DOMS[1]}" || fail "virsh reset"
sleep 5
wait_agent "${DOMS[1]}"
g2=$(rdma_up "${DOMS[1]}" 1) || fail "${DOMS[1]}: RDMA device not ACTIVE after virsh reset"
names=$(port_names)
[ "$names" = "${DOMS[*]}" ] || fail "after virsh reset the switch's ports are named '$names'"
pair rc_pingpong_after_reset "$(tcp_listening 18518)" \
	"ibv_rc_pingpong -d cnuas_0 -g $g1 -n 20 -c -p 18518" \
	"ibv_rc_pingpong -d cnuas_0 -g $g2 -n 20 -c -p 18518 $ip1"

# ---- virsh destroy: the port goes --------------------------------------------
virsh -q destroy "${DOMS[1]}" || fail "virsh destroy"
for i in $(seq 50); do
	names=$(port_names)
	[ "$names" = "${DOMS[0]}" ] && break
	sleep 0.2
done
[ "$names" = "${DOMS[0]}" ] || fail "after virsh destroy the switch has ports '$names'"
note "after virsh destroy ${DOMS[1]}: ports of $names"
grep -E "port [0-9]+ (up|closed|gone|down)" "$T/switch.log" | tail -n 8
echo "PASS: two libvirt domains from docs/libvirt.md on the switch, RDMA between them"
