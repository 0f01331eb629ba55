# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# `scripts/lab up`: build what is missing, start the switch and the guests,
# wait until every guest's agent answers and its lab interface is configured.

AGENT_PORTS=8
T_UP=$(date +%s)

elapsed() { echo $(($(date +%s) - T_UP)); }
say() { echo "lab: [+$(elapsed)s] $*" >&2; }

find_qemu() {
	local q=${CNUAS_QEMU:-}
	if [ -z "$q" ] && [ -x "$ROOT/scripts/build-qemu" ]; then
		say "QEMU: scripts/build-qemu --print (builds if needed)"
		q=$("$ROOT/scripts/build-qemu" --print | tail -1) || die "scripts/build-qemu failed"
	fi
	[ -n "$q" ] && [ -x "$q" ] || die "no patched QEMU (scripts/build-qemu failed; or set CNUAS_QEMU)"
	"$q" -device help 2>/dev/null | grep -q '"cnuas-vnic"' ||
		die "$q has no cnuas-vnic device (not the patched QEMU?)"
	echo "$q"
}

build_switch() {
	local sw=$ROOT/userspace/vswitchd
	say "switch: make -C userspace"
	nice make -s -j2 -C "$ROOT/userspace" >&2 || die "make -C userspace failed"
	[ -x "$sw/cnuas-vswitchd" ] && [ -x "$sw/cnuas-vsctl" ] || die "userspace did not produce cnuas-vswitchd/cnuas-vsctl"
}

build_image() { # build_image DEV DISTRO
	local dev=$1 distro=$2 kdir mods
	if [ "$dev" = 1 ]; then
		kdir=$("$ROOT/scripts/guest-image" --distro "$distro" --kdir | tail -1) || die "guest-image --kdir failed"
		# Build in a copy: the tree stays clean (its .o files would end
		# up in the packages) and other builds in src/ do not race us.
		# Files are compared by content and written with the time of the
		# copy, not the source's; and a build from another checkout
		# starts from clean (its objects may be newer than our older
		# sources, and make would keep them).
		# One copy per checkout and distro: labs of two checkouts
		# may build at the same time.
		mods=${CNUAS_CACHE:-$HOME/.cache/cnuas}/work/dev-src-$distro-$(echo "$ROOT" | sha256sum | cut -c1-8)
		mkdir -p "$mods"
		if [ "$(cat "$mods/.cnuas-src-root" 2>/dev/null)" != "$ROOT $kdir" ]; then
			make -s -C "$mods" KDIR="$kdir" clean >/dev/null 2>&1 || true
			rm -f "$mods/.cnuas-src-root"
		fi
		rsync -rlpD --checksum --delete --exclude=.cnuas-src-root --exclude='*.o' --exclude='*.ko' --exclude='*.mod*' --exclude='.*.cmd' \
			--exclude='Module.symvers' --exclude='modules.order' --filter='P *.o' --filter='P *.ko' \
			--filter='P *.mod*' --filter='P .*.cmd' --filter='P Module.symvers' --filter='P modules.order' \
			"$ROOT/src/" "$mods/"
		say "--dev: make -C src KDIR=$kdir (in $mods)"
		nice make -s -j2 -C "$mods" KDIR="$kdir" >&2 || die "make -C src failed"
		echo "$ROOT $kdir" >"$mods/.cnuas-src-root"
		# The provider goes in too (build/provider/); exit 3: cannot
		# be built here, the image then has no libcnuas.
		local prc=0
		nice "$ROOT/scripts/build-provider" >&2 || prc=$?
		[ "$prc" -eq 0 ] || [ "$prc" -eq 3 ] || die "scripts/build-provider failed"
		[ "$prc" -eq 0 ] || say "--dev: no libibverbs provider in the image (build-provider: cannot build here)"
		"$ROOT/scripts/guest-image" --distro "$distro" --dev-modules "$mods" | tail -1
	else
		"$ROOT/scripts/guest-image" --distro "$distro" | tail -1
	fi
}

# KVM only when a guest kernel really runs under it within 5 s.
probe_accel() {
	local log=$LAB_DIR/kvm-probe.log
	if [ -n "${CNUAS_LAB_ACCEL:-}" ]; then
		echo "$CNUAS_LAB_ACCEL"
		return
	fi
	# Cached per host boot and QEMU binary: the answer does not change.
	local cache boot
	boot=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo unknown)
	cache=${CNUAS_CACHE:-$HOME/.cache/cnuas}/kvm-probe-$(echo "$boot $QEMU" | sha256sum | cut -c1-12)
	if [ -s "$cache" ]; then
		cat "$cache"
		return
	fi
	mkdir -p "${cache%/*}"
	if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
		timeout -s KILL 5 "$QEMU" -accel kvm -M q35 -m 256 -nodefaults -no-user-config \
			-display none -monitor none -no-reboot -L /usr/share/seabios -L /usr/share/qemu \
			-kernel "$IMAGE_0/vmlinuz" -initrd "$IMAGE_0/initrd.img" \
			-append "console=ttyS0 cnuas.probe panic=-1 quiet" \
			-serial "file:$log" </dev/null >/dev/null 2>&1 || true
		if grep -q CNUAS-PROBE-OK "$log" 2>/dev/null; then
			echo kvm | tee "$cache"
			return
		fi
	fi
	echo tcg | tee "$cache"
}

mac_of() { printf '52:54:00:c0:00:%02x' $(($1 + 1)); }

# The kernel command line of a systemd guest: the lab interface as the
# ip= that systemd-network-generator turns into a systemd-networkd
# configuration (the address, the prefix, the MTU).
systemd_cmdline() { # systemd_cmdline NODE IFNAME IP/LEN IP6/LEN
	local n=$1 ifname=$2 ip=$3 ip6=$4 mask
	echo -n "cnuas.init=systemd systemd.hostname=node$n"
	[ -n "$ifname" ] || return 0
	[ "${ip#*/}" = 24 ] || die "systemd_cmdline: /24 expected"
	mask=255.255.255.0
	[ -z "$ip" ] || echo -n " ip=${ip%/*}:::$mask::$ifname:none:$MTU"
	[ -z "$ip6" ] || echo -n " ip=[${ip6%/*}]:::${ip6#*/}::$ifname:none:$MTU"
}

start_guest() {
	local n=$1 kind=$2 nd=$LAB_DIR/node$1 args=() k ifname ip ip6 accel image cmdline reboot=-no-reboot
	mkdir -p "$nd"
	# shellcheck disable=SC2054 # -accel options are comma-separated
	if [ "$ACCEL" = kvm ]; then accel=(-accel kvm -cpu host); else accel=(-accel tcg,tb-size=256); fi
	ip=198.18.0.$((n + 1))/24 ip6=fd00:198:18::$((n + 1))/64
	if [ "$kind" = cnuas ]; then
		ifname=cnuas0
		[ "$LINK_LAYER" = ib ] && { ifname=; ip=; ip6=; }
		args+=(-device "cnuas-vnic,id=nic0,bus=rp1,socket_path=$(site_sock "$(site_of "$n")"),mac=$(mac_of "$n"),link_layer=$LINK_LAYER${SHM_RING:+,x-shm-ring=on}")
	else
		ifname=eth0
		if [ "$VIRTIO_NETDEV" = stream ]; then
			# one connection to the switch's stream socket (QEMU 7.2 does not reconnect)
			args+=(-netdev "stream,id=net0,server=off,addr.type=unix,addr.path=$(site_stream "$(site_of "$n")")")
		else
			args+=(-netdev "dgram,id=net0,local.type=unix,local.path=$LAB_DIR/vport$n.qemu,remote.type=unix,remote.path=$LAB_DIR/vport$n.sw")
		fi
		args+=(-device "virtio-net-pci,id=nic0,bus=rp1,netdev=net0,mac=$(mac_of "$n"),romfile=")
	fi
	if [ "$GPU" = 1 ]; then
		# CnuasLink pairs: node 2k listens, node 2k+1 connects.
		local listen=
		[ $((n % 2)) = 1 ] || listen=,cnuaslink_listen=on
		args+=(-device "pcie-root-port,id=rp2,bus=pcie.0,chassis=2,slot=2"
			-device "cnuasgpu,id=gpu0,bus=rp2,gpu_id=$n,devmem_size=$GPU_MEM,cnuaslink_socket=$LAB_DIR/gpulink$((n / 2)).sock$listen")
	fi
	for k in $(seq 0 $((AGENT_PORTS - 1))); do
		args+=(-chardev "socket,id=agent$k,path=$nd/agent$k.sock,server=on,wait=off"
			-device "virtserialport,bus=vser.0,chardev=agent$k,name=org.cnuas.agent.$k")
	done
	image=IMAGE_$n
	image=${!image}
	# Eight TCG guests booting on two host cores can starve one guest's
	# timer for tens of seconds before init runs (vm/86 saw a 43 s gap
	# in the crypto self-tests); RCU's stall report there describes the
	# host, not a guest bug. Stalls after init, when our modules load,
	# are still reported and fail the console scan.
	cmdline="console=ttyS0 root=/dev/vda rw panic=-1 mitigations=off net.ifnames=0 rcupdate.rcu_cpu_stall_suppress_at_boot=1 cnuas.node=$n cnuas.kind=$kind"
	if [ "$INIT" = systemd ]; then
		# A guest may reboot itself (systemctl reboot); writes to its
		# disk last as long as its QEMU process.
		reboot=
		cmdline+=" $(systemd_cmdline "$n" "$ifname" "$ip" "$ip6")"
	else
		cmdline+=" cnuas.if=$ifname cnuas.ip=$ip cnuas.ip6=$ip6 cnuas.mtu=$MTU"
	fi
	: >"$LAB_DIR/node$n.console.log"
	echo "---- $(date -u +%T) node$n ($kind, $(node_distro "$n"), init $INIT)" >>"$LAB_DIR/node$n.qemu.log"
	spawn "$LAB_DIR/node$n.pid" "$LAB_DIR/node$n.qemu.log" \
		"$QEMU" -name "node$n,debug-threads=on" -M q35 -m "$MEM" -smp 1 "${accel[@]}" \
		-nodefaults -no-user-config -nographic -monitor none $reboot \
		-L /usr/share/seabios -L /usr/share/qemu \
		-d guest_errors \
		-kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
		-append "$cmdline" \
		-drive "file=$image/rootfs.ext4,if=none,id=root,format=raw,snapshot=on" \
		-device virtio-blk-pci,drive=root \
		-chardev "file,id=con,path=$LAB_DIR/node$n.console.log,append=on" -serial chardev:con \
		-qmp "unix:$nd/qmp.sock,server=on,wait=off" \
		-device virtio-serial-pci,id=vser \
		-device virtio-rng-pci \
		-device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1 \
		"${args[@]}"
}

# vCPU threads (busy-polling verbs tools keep them at 100%) yield to the
# threads that move frames: the QEMU main loops and the switch. Without
# this every hop of a frame may wait for a vCPU's time slice on the host
# (milliseconds), for every kind of guest alike. CNUAS_LAB_VCPU_NICE=0
# turns it off.
lower_vcpu_priority() {
	local nice=${CNUAS_LAB_VCPU_NICE:-10} n pid t
	[ "$nice" != 0 ] || return 0
	for n in $(seq 0 $(($1 - 1))); do
		pid=$(pidfile_pid "$LAB_DIR/node$n.pid")
		for t in /proc/"$pid"/task/*; do
			case $(cat "$t/comm" 2>/dev/null) in
			"CPU "*) renice -n "$nice" -p "${t##*/}" >/dev/null || true ;;
			esac
		done
	done
}

# See raise_io_priority (common.sh); after wait_ready: the cnuas-vnic RX
# thread starts with the device.
raise_guest_io_priority() {
	local n
	for n in $(seq 0 $(($1 - 1))); do
		raise_io_priority "$(pidfile_pid "$LAB_DIR/node$n.pid")"
	done
}

# See io_cpu (common.sh): QEMU's other threads join the switch on the I/O
# CPU. The vCPUs float over the other CPUs (all of them on a host of two
# or three: pinning them halved ib_write_bw here, and two busy vCPUs on
# one CPU halve both).
pin_guest_threads() {
	local io ncpu vcpus n pid t
	io=$(io_cpu) || return 0
	ncpu=$(nproc)
	vcpus=0-$((ncpu - 1))
	if [ "$ncpu" -ge 4 ]; then
		vcpus=$(seq 0 $((ncpu - 1)) | grep -vx "$io" | paste -sd,)
	fi
	for n in $(seq 0 $(($1 - 1))); do
		pid=$(pidfile_pid "$LAB_DIR/node$n.pid")
		pin_io_threads "$pid"
		for t in /proc/"$pid"/task/*; do
			case $(cat "$t/comm" 2>/dev/null) in
			"CPU "*) taskset -p -c "$vcpus" "${t##*/}" >/dev/null 2>&1 || true ;;
			esac
		done
	done
}

# Ready = the agent runs commands and the lab interface has its address.
node_ready() {
	local n=$1 kind=$2 check=true
	if [ "$kind" = virtio ]; then
		check="ip -4 -o addr show dev eth0 | grep -q ' 198.18.0.$((n + 1))/'"
	elif [ "$kind" = rxe ]; then
		check="ip -4 -o addr show dev eth0 | grep -q ' 198.18.0.$((n + 1))/' && [ -e /sys/class/infiniband/rxe0 ]"
	elif [ "$LINK_LAYER" = eth ]; then
		check="ip -4 -o addr show dev cnuas0 | grep -q ' 198.18.0.$((n + 1))/'"
	fi
	# A systemd guest is up when its boot has finished (a failed unit
	# shows in the tests, not here).
	[ "$INIT" = systemd ] && check="systemctl is-system-running --wait >/dev/null; $check"
	# Generous: on a loaded host a TCG agent takes seconds to answer a sync.
	timeout 40 "$PY" "$LABD/labctl.py" exec --sync-timeout 20 "$LAB_DIR/node$n" -- sh -c "$check" \
		</dev/null >/dev/null 2>&1
}

wait_ready() {
	local total=$((NODES + VIRTIO_NODES + RXE_NODES)) limit=${CNUAS_LAB_BOOT_TIMEOUT:-600} n kind pending
	local -A ready=()
	local t0 checks
	t0=$(date +%s)
	while :; do
		pending=0 checks=()
		# Ask all pending nodes at once: each check may take seconds.
		for n in $(seq 0 $((total - 1))); do
			[ -n "${ready[$n]:-}" ] && continue
			pid_alive "$(pidfile_pid "$LAB_DIR/node$n.pid")" || {
				tail -n 20 "$LAB_DIR/node$n.qemu.log" >&2
				tail -n 20 "$LAB_DIR/node$n.console.log" >&2
				die "node$n: QEMU exited (logs: $LAB_DIR/node$n.{qemu,console}.log)"
			}
			kind=$(node_kind "$n")
			rm -f "$LAB_DIR/node$n/ready"
			(node_ready "$n" "$kind" && : >"$LAB_DIR/node$n/ready") &
			checks+=($!)
		done
		# Only our checks: QEMU and the switch are children too.
		[ ${#checks[@]} -eq 0 ] || wait "${checks[@]}" 2>/dev/null || true
		for n in $(seq 0 $((total - 1))); do
			[ -n "${ready[$n]:-}" ] && continue
			if [ -e "$LAB_DIR/node$n/ready" ]; then
				ready[$n]=1
				say "node$n ready after $(($(date +%s) - t0)) s"
			else
				pending=$((pending + 1))
			fi
		done
		[ $pending = 0 ] && return 0
		if [ $(($(date +%s) - t0)) -ge "$limit" ]; then
			for n in $(seq 0 $((total - 1))); do
				[ -n "${ready[$n]:-}" ] || { say "node$n console tail:"; tail -n 15 "$LAB_DIR/node$n.console.log" >&2; }
			done
			die "guests not ready after $limit s"
		fi
		sleep 1
	done
}

lab_up() {
	local nodes=2 virtio=0 rxe=0 mtu=9000 ll=eth dev=0 mem=1024 gpu=0 psec=1 n total sw_args=()
	local shm=${CNUAS_LAB_SHM_RING:-}
	local sites=1 s site_args vnetdev=dgram sbridges=linux b
	local init=shell distros=bookworm d img
	local -A images=()
	while [ $# -gt 0 ]; do
		case $1 in
		--nodes) nodes=$2; shift 2 ;;
		--virtio-nodes) virtio=$2; shift 2 ;;
		--rxe-nodes) rxe=$2; shift 2 ;;
		--mtu) mtu=$2; shift 2 ;;
		--link-layer) ll=$2; shift 2 ;;
		--dev) dev=1; shift ;;
		--gpu) gpu=1; shift ;;
		--mem) mem=$2; shift 2 ;;
		--no-port-security) psec=0; shift ;;
		--shm-ring) shm=1; shift ;;
		--init) init=$2; shift 2 ;;
		--distro) distros=$2; shift 2 ;;
		--sites) sites=$2; shift 2 ;;
		--virtio-netdev) vnetdev=$2; shift 2 ;;
		--site-bridge) sbridges=$2; shift 2 ;;
		*) die "up: unknown argument $1" ;;
		esac
	done
	case "$nodes$virtio$rxe$mem$mtu$sites" in '' | *[!0-9]*) die "up: --nodes/--virtio-nodes/--rxe-nodes/--mem/--mtu/--sites take numbers" ;; esac
	[ "$sites" -ge 1 ] && [ "$sites" -le 8 ] || die "up: --sites 1..8"
	[ "$sites" = 1 ] || [ "$ll" = eth ] || die "up: --sites needs --link-layer eth"
	if [ "$sites" -gt 1 ]; then
		[ "$(id -u)" = 0 ] || die "up: --sites needs root (network namespaces, TAP interfaces)"
		command -v ip >/dev/null && command -v bridge >/dev/null || die "up: --sites needs iproute2 (ip, bridge)"
	fi
	case $ll in eth | ib) ;; *) die "up: --link-layer eth|ib" ;; esac
	case $init in shell | systemd) ;; *) die "up: --init shell|systemd" ;; esac
	case $vnetdev in dgram | stream) ;; *) die "up: --virtio-netdev dgram|stream" ;; esac
	for b in ${sbridges//,/ }; do
		case $b in linux | ovs) ;; *) die "up: --site-bridge linux|ovs[,...], not '$b'" ;; esac
	done
	if [[ " ${sbridges//,/ } " = *" ovs "* ]] && [ "$sites" -gt 1 ]; then
		command -v ovs-vswitchd >/dev/null || die "up: --site-bridge ovs needs Open vSwitch (apt-get install openvswitch-switch)"
		command -v ethtool >/dev/null || die "up: --site-bridge ovs needs ethtool"
	fi
	for d in ${distros//,/ }; do
		case $d in bookworm | trixie) ;; *) die "up: --distro bookworm|trixie[,...], not '$d'" ;; esac
	done
	[ $((nodes + virtio + rxe)) -ge 1 ] && [ $((nodes + virtio + rxe)) -le 32 ] || die "up: 1..32 nodes"
	# 68 = IPv4 minimum; 9000 leaves room in the 9216-byte switch frames.
	[ "$mtu" -ge 68 ] && [ "$mtu" -le 9000 ] || die "up: --mtu 68..9000"
	[ "$ll" = eth ] || [ "$rxe" = 0 ] || die "up: --rxe-nodes needs --link-layer eth"
	io_cpu >/dev/null || true	# a bad CNUAS_LAB_IO_CPU stops us here
	if [ -f "$LAB_DIR/lab.env" ]; then
		(. "$LAB_DIR/lab.env"; pid_alive "$(pidfile_pid "$LAB_DIR/switch.pid")") &&
			die "a lab is already up in $LAB_DIR (scripts/lab down first)"
		lab_down >/dev/null
	fi

	QEMU=$(find_qemu)
	build_switch
	VSWITCHD=$ROOT/userspace/vswitchd/cnuas-vswitchd
	VSCTL=$ROOT/userspace/vswitchd/cnuas-vsctl
	# Node N runs the N-th distro of the list; the last one for the rest.
	DISTROS=${distros//,/ }
	total=$((nodes + virtio + rxe))
	# CNUAS_LAB_IMAGE: a ready image directory (e.g. scripts/guest-image --no-driver).
	for n in $(seq 0 $((total - 1))); do
		d=$(node_distro "$n")
		if [ -z "${images[$d]:-}" ]; then
			if [ -n "${CNUAS_LAB_IMAGE:-}" ]; then
				img=$CNUAS_LAB_IMAGE
			else
				img=$(build_image $dev "$d") || die "guest image build failed ($d)"
			fi
			[ -s "$img/rootfs.ext4" ] || die "guest image build failed ($d)"
			images[$d]=$img
		fi
		printf -v "IMAGE_$n" '%s' "${images[$d]}"
	done

	# Fresh lab folder; old logs go.
	lab_dir_private "$LAB_DIR"
	(cd "$LAB_DIR" && rm -rf node* switch.* site* vport* gpulink* kvm-probe.log lab.env)
	ACCEL=$(probe_accel)
	NODES=$nodes VIRTIO_NODES=$virtio RXE_NODES=$rxe LINK_LAYER=$ll MEM=$mem MTU=$mtu GPU=$gpu INIT=$init SITES=$sites
	VIRTIO_NETDEV=$vnetdev SITE_BRIDGES=${sbridges//,/ }
	SHM_RING=${shm:+1}
	GPU_MEM=${CNUAS_LAB_GPU_MEM:-256M}
	if [ "$gpu" = 1 ]; then
		"$QEMU" -device help 2>/dev/null | grep -q '"cnuasgpu"' || die "$QEMU has no cnuasgpu device"
	fi
	say "starting switch + $nodes cnuas + $virtio virtio + $rxe rxe guest(s), $ll, MTU $mtu, accel $ACCEL, init $init, ${distros}: ${images[*]##*/}"

	sw_args=("$VSWITCHD" --socket "$LAB_DIR/switch.sock" --ctl "$LAB_DIR/switch.ctl" --foreground)
	# Each guest keeps the MAC QEMU gave it; no guest can take another's.
	[ "$psec" = 0 ] || sw_args+=(--port-security)
	# opt-in: cnuas-vnic ports offer shared-memory rings (docs/shm-ring.md)
	[ -z "$SHM_RING" ] || sw_args+=(--shm-ring)
	if [ "$ll" = ib ]; then
		"$VSWITCHD" --help 2>&1 | grep -q -- '--link-layer' || die "cnuas-vswitchd has no --link-layer option"
		# the IB port numbers and SM port a switch restart keeps (ib_sm_port)
		rm -f "$LAB_DIR/ib-state"
		sw_args+=(--link-layer ib --state-dir "$LAB_DIR")
	fi
	for s in $(seq 1 $((sites - 1))); do
		site_args=("$VSWITCHD" --socket "$LAB_DIR/site$s.sock" --ctl "$LAB_DIR/site$s.ctl" --foreground
			--tap "$(site_tap "$s")")
		[ "$psec" = 0 ] || site_args+=(--port-security)
		[ -z "$SHM_RING" ] || site_args+=(--shm-ring)
		if [ "$vnetdev" = stream ]; then
			site_args+=(--stream "$(site_stream "$s")")
		else
			for n in $(seq "$nodes" $((total - 1))); do
				[ "$(site_of "$n")" = "$s" ] && site_args+=(--dgram "$LAB_DIR/vport$n.sw=$LAB_DIR/vport$n.qemu")
			done
		fi
		printf '%s\n' "${site_args[@]}" >"$LAB_DIR/site$s.cmd"
	done
	[ "$sites" = 1 ] || sw_args+=(--tap "$(site_tap 0)")
	if [ "$vnetdev" = stream ]; then
		[ $((virtio + rxe)) = 0 ] || sw_args+=(--stream "$(site_stream 0)")
	else
		for n in $(seq "$nodes" $((total - 1))); do
			[ "$(site_of "$n")" = 0 ] && sw_args+=(--dgram "$LAB_DIR/vport$n.sw=$LAB_DIR/vport$n.qemu")
		done
	fi
	printf '%s\n' "${sw_args[@]}" >"$LAB_DIR/switch.cmd"
	{
		echo "NODES=$NODES VIRTIO_NODES=$VIRTIO_NODES RXE_NODES=$RXE_NODES LINK_LAYER=$LINK_LAYER MEM=$MEM MTU=$MTU ACCEL=$ACCEL DEV=$dev GPU=$GPU INIT=$INIT SITES=$SITES VIRTIO_NETDEV=$VIRTIO_NETDEV SHM_RING=$SHM_RING"
		printf 'SITE_BRIDGES=%q\n' "$SITE_BRIDGES"
		printf 'DISTROS=%q\nQEMU=%q\nVSWITCHD=%q\nVSCTL=%q\n' "$DISTROS" "$QEMU" "$VSWITCHD" "$VSCTL"
		for n in $(seq 0 $((total - 1))); do
			img=IMAGE_$n
			printf 'IMAGE_%d=%q\n' "$n" "${!img}"
		done
	} >"$LAB_DIR/lab.env"
	# A failed start leaves no process behind (the logs stay).
	trap 'lab_down >/dev/null 2>&1 || true' EXIT
	switch_start
	if [ "$sites" -gt 1 ]; then
		sites_start
		sites_wire
		say "$sites sites: node n on site n % $sites, namespaces $(site_ns 0)..$(site_ns $((sites - 1))), WAN $(site_ns wan)"
	fi
	for n in $(seq 0 $((total - 1))); do
		start_guest "$n" "$(node_kind "$n")"
	done
	wait_ready
	lower_vcpu_priority "$total"
	raise_guest_io_priority "$total"
	pin_guest_threads "$total"
	if [ "$ll" = ib ] && [ "$nodes" -gt 0 ]; then
		# shellcheck source=scripts/lab.d/ib.sh
		. "$LABD/ib.sh"
		ib_subnet_up "$nodes"
		[ -z "${IB_MKEY:-}" ] || echo "IB_MKEY=$IB_MKEY" >>"$LAB_DIR/lab.env"
	fi
	trap - EXIT
	say "lab up in $(elapsed) s: $nodes cnuas + $virtio virtio + $rxe rxe node(s), MTU $mtu; logs in $LAB_DIR"
	echo "$LAB_DIR"
}
