#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The path an administrator takes (issue 43, docs/libvirt.md): the switch
# from the built cnuas-vswitchd .deb, run as its unit says (unit-exec:
# group cnuas from the package's sysusers.d file, /run/cnuas 0750, the
# unit's sandboxing), Debian's libvirtd with its stock configuration (QEMU
# as libvirt-qemu), the two domains of docs/libvirt.md (the lab's kernel,
# initrd and one read-only disk under transient overlays, the agent on
# virtio-serial channels, TCG). A domain started before the switch waits
# for it, its log saying why once and then that it connected; then
# ibv_rc_pingpong, rping -V and ib_write_bw between the guests; a
# process outside group cnuas cannot connect; the switch names both ports
# by domain; a switch restart, `virsh reboot`, `virsh destroy`
# and `virsh start` each bring the link back. Everything it started or
# changed is stopped and undone at the end; a libvirtd or group that was
# there before is left alone.
# timeout: 600
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
# shellcheck source=../lib-skip.sh
. "$top/tests/lib-skip.sh"
fail() { echo "FAIL: $*"; exit 1; }
note() { echo "# $(date -u +%T) $*"; }

RUN=/run/cnuas SOCK=/run/cnuas/switch.sock GROUP=cnuas QUSER=libvirt-qemu
# The unit's StateDirectory=: kept at stop, as systemd does; ours to remove
# if the host had none.
STATE=/var/lib/cnuas-vswitchd state_before=0
[ ! -e "$STATE" ] || state_before=1
UNIT=/lib/systemd/system/cnuas-vswitchd.service
DOMS=(cnuas-test-vm1 cnuas-test-vm2)
NODEV=cnuas-test-nodev
MTU=9000

[ "$(id -u)" = 0 ] || skip_because not-root "starts libvirtd, a system service and creates a group"
if ! command -v libvirtd >/dev/null || ! command -v virsh >/dev/null; then
	# Without recommends: they would add Debian's QEMU beside ours.
	note "installing libvirt-daemon-system"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		libvirt-daemon-system >/dev/null ||
		skip_because no-libvirt "apt-get install libvirt-daemon-system failed"
fi
[ -e "$RUN" ] && fail "$RUN exists: a cnuas-vswitchd serves this host already; not touching it"

debs=$(scripts/build-debs | tail -n1) || fail "scripts/build-debs failed"
debfiles=("$debs"/cnuas-vswitchd_*_amd64.deb)
deb=${debfiles[-1]}
[ -f "$deb" ] || fail "no cnuas-vswitchd .deb in $debs"
qemu=$(scripts/build-qemu --print)
rc=$?
qemu=$(tail -n1 <<<"$qemu")
[ $rc = 3 ] && skip_because no-qemu-build "scripts/build-qemu cannot build QEMU here"
[ -x "$qemu" ] || fail "scripts/build-qemu gave no QEMU"
image=$(scripts/guest-image --distro bookworm | tail -n1)
[ -s "$image/rootfs.ext4" ] || fail "no guest image (scripts/guest-image)"

T=$(mktemp -d /var/tmp/cnuas-libvirt.XXXXXX) || exit 2
chmod 0755 "$T"
made_group=0 added_user=0 started_libvirtd=0 started_virtlogd=0 sw_pid='' aa_line=''
caps_before=$(ls /var/cache/libvirt/qemu/capabilities 2>/dev/null)
run_libvirt_before=0
[ -e /run/libvirt ] && run_libvirt_before=1
net_before=$(virsh -q net-list --name 2>/dev/null)
# libvirt's own folders as they were: what a libvirtd started here adds
# to them (domain logs, channel folders) goes again
libvirt_dirs=(/etc/libvirt /var/lib/libvirt /var/log/libvirt /var/cache/libvirt)
libvirt_before=$(find "${libvirt_dirs[@]}" 2>/dev/null | sort)

cleanup() {
	local d f
	set +e
	for d in "${DOMS[@]}" "$NODEV"; do
		rm -f /var/log/libvirt/qemu/"$d".log*
		virsh -q domstate "$d" >/dev/null 2>&1 || continue
		virsh -q destroy "$d" >/dev/null 2>&1
		virsh -q undefine "$d" >/dev/null 2>&1
	done
	stop_switch
	# not there when the test began: whatever is there now is ours
	rm -rf "$RUN"
	[ $state_before = 1 ] || rm -rf "$STATE"
	if [ $started_libvirtd = 1 ]; then
		# a network libvirtd autostarted for us (the host had none running)
		for d in $(virsh -q net-list --name 2>/dev/null); do
			grep -qxF "$d" <<<"$net_before" || virsh -q net-destroy "$d" >/dev/null
		done
		stop_pidfile "$T/libvirtd.pid"
	fi
	[ $started_virtlogd = 0 ] || stop_pidfile "$T/virtlogd.pid"
	# what libvirtd cached about our emulator, and its runtime folder
	for f in /var/cache/libvirt/qemu/capabilities/*; do
		[ -e "$f" ] || continue
		grep -qxF "${f##*/}" <<<"$caps_before" || rm -f "$f"
	done
	[ $started_libvirtd = 0 ] || [ $run_libvirt_before = 1 ] || rm -rf /run/libvirt
	if [ $started_libvirtd = 1 ]; then
		find "${libvirt_dirs[@]}" 2>/dev/null | sort | comm -13 <(echo "$libvirt_before") - |
			sort -r | while read -r f; do rm -rf "$f"; done
	fi
	[ $added_user = 0 ] || gpasswd -d "$QUSER" "$GROUP" >/dev/null
	if [ -n "$aa_line" ]; then
		grep -vxF "$aa_line" "$AA_LOCAL" >"$AA_LOCAL.cnuas-test"
		cat "$AA_LOCAL.cnuas-test" >"$AA_LOCAL" && rm -f "$AA_LOCAL.cnuas-test"
	fi
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

# ---- the switch, from its package, as cnuas-vswitchd.service runs it ----------
dpkg-deb -x "$deb" "$T/pkg" || fail "cannot unpack $deb"
if ! getent group "$GROUP" >/dev/null; then
	systemd-sysusers "$T/pkg/usr/lib/sysusers.d/cnuas-vswitchd.conf" || fail "systemd-sysusers failed"
	made_group=1
fi
getent group "$GROUP" >/dev/null || fail "no group $GROUP after the package's sysusers.d file"
in_group() { id -nG "$QUSER" | tr ' ' '\n' | grep -qx "$GROUP"; }
start_switch() {
	rm -f "$T/ready"
	tests/libvirt/unit-exec "$T/pkg" "$UNIT" "$T/ready" 2>>"$T/switch.log" &
	sw_pid=$!
	local i
	for i in $(seq 100); do [ -e "$T/ready" ] && return 0; sleep 0.1; done
	cat "$T/switch.log"
	fail "the switch did not say READY=1"
}
stop_switch() {
	[ -n "$sw_pid" ] || return 0
	kill "$sw_pid" 2>/dev/null
	wait "$sw_pid" 2>/dev/null
	sw_pid=''
}
vsctl() { "$T/pkg/usr/bin/cnuas-vsctl" "$@"; }
start_switch
ls -ln "$RUN"
[ "$(stat -c '%a %U %G' "$RUN")" = "750 root $GROUP" ] || fail "$RUN is not 0750 root:$GROUP"
[ "$(stat -c '%a %U %G' "$SOCK")" = "660 root $GROUP" ] || fail "$SOCK is not 0660 root:$GROUP"
[ "$(stat -c '%a' "$SOCK.ctl")" = 600 ] || fail "$SOCK.ctl is not 0600"
if ! in_group; then
	grep -q "user $QUSER (libvirt's QEMU) is not in group $GROUP" "$T/switch.log" ||
		{ cat "$T/switch.log"; fail "the switch did not warn that $QUSER is not in $GROUP"; }
	note "the switch warns: $(grep "not in group" "$T/switch.log")"
fi

# Who may connect: libvirt-qemu once in the group, nobody never.
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
# The service stops: its runtime folder goes, as under systemd.
stop_switch
[ -e "$RUN" ] && fail "$RUN still there after the switch stopped"

# ---- libvirtd, stock configuration ------------------------------------------
if virsh -q -c qemu:///system uri >/dev/null 2>&1; then
	note "using the libvirtd that runs already"
else
	virtlogd --daemon --pid-file "$T/virtlogd.pid" || fail "virtlogd did not start"
	started_virtlogd=1
	# Stock configuration; but where /dev/kvm exists and libvirt-qemu
	# cannot use it (this lab's machine: the labs run TCG), libvirt 9.0
	# finds its cached QEMU capabilities stale at every look-up and probes
	# QEMU again, 4 s each, a minute and more per virsh command. Its /dev
	# here is the host's without kvm, so it probes once, for TCG.
	if [ -e /dev/kvm ] && ! setpriv --reuid "$QUSER" --regid kvm --init-groups test -w /dev/kvm; then
		note "libvirtd sees no /dev/kvm (libvirt-qemu cannot use it)"
		# shellcheck disable=SC2016 # expanded by that sh
		unshare --mount --propagation private -- sh -c '
			set -e
			d=$1
			shift
			mkdir "$d"
			mount -t tmpfs -o mode=0755,nosuid tmpfs "$d"
			for f in /dev/*; do
				n=${f##*/}
				[ "$n" != kvm ] || continue
				if [ -L "$f" ]; then cp -a "$f" "$d/"
				elif [ -d "$f" ]; then mkdir "$d/$n"; mount --rbind "$f" "$d/$n"
				else touch "$d/$n"; mount --bind "$f" "$d/$n"; fi
			done
			mount --move "$d" /dev
			exec "$@"' libvirtd "$T/libvirtd-dev" libvirtd --daemon --pid-file "$T/libvirtd.pid" ||
			fail "libvirtd did not start"
	else
		libvirtd --daemon --pid-file "$T/libvirtd.pid" || fail "libvirtd did not start"
	fi
	started_libvirtd=1
	for i in $(seq 100); do virsh -q uri >/dev/null 2>&1 && break; sleep 0.2; done
	virsh -q uri >/dev/null || fail "libvirtd does not answer"
fi
for d in "${DOMS[@]}" "$NODEV"; do
	virsh -q domstate "$d" >/dev/null 2>&1 && fail "a domain $d exists already; not touching it"
done
grep -E '^(user|group|security_driver|namespaces|dynamic_ownership) *=' /etc/libvirt/qemu.conf &&
	note "qemu.conf is not stock (above)"
# What docs/libvirt.md says to do, with libvirtd already running.
if ! in_group; then
	adduser -q "$QUSER" "$GROUP" || fail "adduser $QUSER $GROUP failed"
	added_user=1
fi
# Under AppArmor, Debian 12's libvirt reads the package's snippet only
# through the line the docs have an administrator add (undone at the end
# if this test added it). This host's kernel may have no AppArmor: then
# libvirt confines nothing and the line is not needed.
AA_LOCAL=/etc/apparmor.d/local/abstractions/libvirt-qemu
if [ "$(cat /sys/module/apparmor/parameters/enabled 2>/dev/null)" = Y ]; then
	line=$(sed -n '/<!-- libvirt-test: apparmor-local -->/,/^```$/p' docs/libvirt.md |
		sed -n "s/.*'\(include .*\)'.*/\1/p")
	[ -n "$line" ] || fail "docs/libvirt.md has no line marked apparmor-local"
	if ! grep -qxF "$line" "$AA_LOCAL" 2>/dev/null; then
		mkdir -p "${AA_LOCAL%/*}"
		echo "$line" >>"$AA_LOCAL"
		aa_line=$line
	fi
	note "AppArmor: $AA_LOCAL has the docs' line: $line"
else
	note "AppArmor is not enabled in this kernel: libvirt confines no QEMU, the docs' local line is not needed"
fi
# ---- the two domains of docs/libvirt.md ---------------------------------------
# The emulator where libvirt-qemu can read it (root's home is 0700).
install -D -m 0755 "$qemu" "$T/qemu/bin/qemu-system-x86_64"
install -m 0644 "$image/vmlinuz" "$image/initrd.img" "$T/"
# domain_xml TAG NAME N: the docs' XML with the lab's boot, disk and agent.
domain_xml() {
	/usr/bin/python3 - docs/libvirt.md "$1" "$2" "$T" "$3" "$MTU" <<'PY'
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
disk.find("source").set("file", vm + "/base.img")
# One read-only base for both: libvirt writes to an overlay it creates
# beside it and removes when the domain stops.
ET.SubElement(disk, "transient", shareBacking="yes")
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
	# QEMU (libvirt-qemu) makes the agent's sockets here
	install -d -m 0755 -o "$QUSER" -g kvm "$T/$d"
	# the lab's disk itself (a hard link: no copy), opened read-only
	ln "$image/rootfs.ext4" "$T/$d/base.img" 2>/dev/null ||
		cp --sparse=always "$image/rootfs.ext4" "$T/$d/base.img" || fail "no room for the disk"
	domain_xml "${tags[$i]}" "$d" "$i" >"$T/$d.xml" || fail "domain XML for $d"
	virsh -q define "$T/$d.xml" || { cat "$T/$d.xml"; fail "virsh define $d"; }
done
qemu_of() { cat /run/libvirt/qemu/"$1".pid; }

# A device the emulator lacks (as Debian's QEMU lacks ours): virsh start
# fails and says which (docs/libvirt.md, section 4).
sed -e "s|<name>${DOMS[0]}</name>|<name>$NODEV</name>|" -e '/<uuid>/d' \
	-e 's|cnuas-vnic&quot;|cnuas-vnic-absent\&quot;|' "$T/${DOMS[0]}.xml" >"$T/$NODEV.xml"
virsh -q define "$T/$NODEV.xml" || fail "virsh define $NODEV"
out=$(virsh -q start "$NODEV" 2>&1) && fail "$NODEV started without its device"
grep -q "'cnuas-vnic-absent' is not a valid device model name" <<<"$out" ||
	fail "virsh start of a domain without its device says: $out"
note "a device the emulator lacks: $(tr '\n' ' ' <<<"$out")"
virsh -q undefine "$NODEV" >/dev/null
start_dom() {
	local d=$1 pid
	virsh -q start "$d" || { tail -n 20 /var/log/libvirt/qemu/"$d".log; fail "virsh start $d"; }
	pid=$(qemu_of "$d")
	[ "$(ps -o user= -p "$pid")" = "$QUSER" ] || fail "$d's QEMU does not run as $QUSER"
	note "$d: QEMU pid $pid as $QUSER, groups $(ps -o supgrp= -p "$pid")"
}

# The socket does not exist yet (the service is down): the domain starts
# all the same, and its port appears when the switch does.
start_dom "${DOMS[0]}"
out=$(vsctl show 2>&1) && fail "cnuas-vsctl reached a switch that is not running"
note "switch down: $out"
grep -q 'is cnuas-vswitchd running' <<<"$out" || fail "cnuas-vsctl does not say what to check: $out"
sleep 2
virsh -q domstate "${DOMS[0]}" | grep -qx running || fail "${DOMS[0]} did not keep running without the switch"
# The domain's log says why its link is down, once (docs/libvirt.md, section 4).
qlog=/var/log/libvirt/qemu/${DOMS[0]}.log
grep -qF "warning: cnuas-vnic 'cnuas0': cannot connect to '$SOCK' (retrying every 500 ms): No such file or directory; is cnuas-vswitchd running" "$qlog" ||
	{ tail -n 20 "$qlog"; fail "${DOMS[0]}'s log does not say that the switch's socket is missing"; }
[ "$(grep -c "cannot connect to '$SOCK'" "$qlog")" = 1 ] ||
	{ tail -n 20 "$qlog"; fail "${DOMS[0]}'s log repeats the warning"; }
note "the domain's log: $(grep "cannot connect" "$qlog")"
start_switch
port_names() {
	vsctl --json show | /usr/bin/python3 -c '
import json, sys
print(" ".join(sorted(p["vm"] or "-" for p in json.load(sys.stdin)["ports"])))'
}
wait_ports() { # wait_ports "NAMES": the switch's ports are named NAMES
	local i names
	for i in $(seq 100); do
		names=$(port_names)
		[ "$names" = "$1" ] && return 0
		sleep 0.2
	done
	vsctl show
	fail "the switch's ports are named '$names', want '$1'"
}
wait_ports "${DOMS[0]}"
note "the switch is up: ${DOMS[0]} connected by itself"
grep -qF "info: cnuas-vnic 'cnuas0': connected to '$SOCK'" "$qlog" ||
	{ tail -n 20 "$qlog"; fail "${DOMS[0]}'s log does not say that it connected"; }
start_dom "${DOMS[1]}"

# ---- in the guests, through their agents --------------------------------------
gx() { # gx SECONDS DOMAIN CMD...
	local t=$1 d=$2
	shift 2
	timeout -k 5 "$t" /usr/bin/python3 scripts/lab.d/labctl.py exec "$T/$d" -- "$@"
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
# (our small init loads no drivers: udev does that in a real guest)
# shellcheck disable=SC2016 # expanded in the guest
gsh 30 "${DOMS[1]}" 'modprobe cnuasgpu && for i in $(seq 50); do [ -e /dev/cnuasgpu0 ] && exit 0; sleep 0.2; done
	lspci -nn; exit 1' ||
	fail "${DOMS[1]}: no cnuasgpu in the guest"

# The switch names the ports after the domains.
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

# link_back WHAT PORT: both ports named by domain, both RDMA ports ACTIVE,
# and an RC ping-pong between the guests again.
link_back() {
	wait_ports "${DOMS[*]}"
	g1=$(rdma_up "${DOMS[0]}" 0) || fail "${DOMS[0]}: RDMA port not ACTIVE after $1"
	g2=$(rdma_up "${DOMS[1]}" 1) || fail "${DOMS[1]}: RDMA port not ACTIVE after $1"
	pair "rc_pingpong after $1" "$(tcp_listening "$2")" \
		"ibv_rc_pingpong -d cnuas_0 -g $g1 -n 20 -c -p $2" \
		"ibv_rc_pingpong -d cnuas_0 -g $g2 -n 20 -c -p $2 $ip1"
}
boot_id() { gsh 20 "$1" 'cat /proc/sys/kernel/random/boot_id'; }
wait_rebooted() { # wait_rebooted DOMAIN OLD_BOOT_ID
	local i id
	for i in $(seq 120); do
		id=$(boot_id "$1" 2>/dev/null) && [ -n "$id" ] && [ "$id" != "$2" ] && return 0
		sleep 2
	done
	tail -n 30 "$T/$1/console.log"
	fail "$1 did not come back with a new boot"
}

# ---- the switch restarts: the devices connect again ---------------------------
note "restarting the switch"
stop_switch
start_switch
link_back "a switch restart" 18517

# ---- virsh reboot: same QEMU, the guest starts again ----------------------------
# libvirt asks by ACPI; our small init has no acpid, so the test arms a
# power-button handler in the guest (what systemd-logind does in a real one).
# shellcheck disable=SC2016 # expanded in the guest
gsh 30 "${DOMS[1]}" '
	modprobe -a button evdev
	n=0
	for e in /sys/class/input/event*; do
		[ "$(cat $e/device/name)" = "Power Button" ] || continue
		ev=${e##*/}
		[ -e /dev/input/$ev ] || { mkdir -p /dev/input; mknod /dev/input/$ev c $(tr : " " <$e/dev); }
		setsid sh -c "head -c 24 /dev/input/$ev >/dev/null; echo o >/proc/sysrq-trigger" </dev/null >/dev/null 2>&1 &
		n=$((n + 1))
	done
	[ $n -gt 0 ] || { echo "no ACPI power button" >&2; exit 1; }' ||
	fail "${DOMS[1]}: cannot arm a power-button handler"
old=$(boot_id "${DOMS[1]}")
qpid=$(qemu_of "${DOMS[1]}")
note "virsh reboot ${DOMS[1]}"
virsh -q reboot "${DOMS[1]}" || fail "virsh reboot"
wait_rebooted "${DOMS[1]}" "$old"
[ "$(qemu_of "${DOMS[1]}")" = "$qpid" ] || fail "virsh reboot started a new QEMU"
link_back "virsh reboot" 18518

# ---- virsh destroy: the port goes; virsh start: it comes back -----------------
virsh -q destroy "${DOMS[1]}" || fail "virsh destroy"
wait_ports "${DOMS[0]}"
note "after virsh destroy ${DOMS[1]}: only ${DOMS[0]}'s port"
start_dom "${DOMS[1]}"
wait_agent "${DOMS[1]}"
link_back "virsh destroy and start" 18519
vsctl show
grep -E "port [0-9]+ (up|closed|gone|down)" "$T/switch.log" | tail -n 8
echo "PASS: two libvirt domains from docs/libvirt.md on the packaged switch, RDMA between them"
