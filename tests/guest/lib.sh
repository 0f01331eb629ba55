# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# shellcheck shell=bash
# Shared helpers of the real-guest tests (sourced): the VM tests' helpers
# plus what a systemd guest adds. The harness runs `scripts/lab up --init
# systemd --distro bookworm,trixie --nodes 2 --rxe-nodes 1 --gpu` first:
# Debian's systemd and udev boot each guest, nothing is loaded by hand.
# shellcheck source=../vm/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../vm/lib.sh"
INIT=${INIT:-shell} DISTROS=${DISTROS:-bookworm}
[ "$INIT" = systemd ] || skip "needs a systemd lab (scripts/lab up --init systemd); this one boots '$INIT'"

# The distro of node N: the N-th of the lab's list, the last for the rest.
node_distro() {
	local list
	read -r -a list <<<"$DISTROS"
	if [ "$1" -lt ${#list[@]} ]; then echo "${list[$1]}"; else echo "${list[-1]}"; fi
}

# The RDMA device of node N. The kernel names a cnuas device cnuas_N, but
# in a systemd guest rdma-core's persistent naming (udev, rdma_rename
# NAME_FALLBACK) renames it after its PCI slot, e.g. rocep1s0, as any PCI
# HCA whose ib_device hangs off its PCI function: found by that function
# (1af4:10f0), asked once per lab (the name follows the slot, so it
# survives reboots).
rdma_dev() {
	local n=$1 f=$LAB_DIR/node$1/rdma-dev d
	case $(node_kind "$n") in
	rxe) echo rxe0; return ;;
	cnuas) ;;
	*) return 1 ;;
	esac
	if [ ! -s "$f" ]; then
		d=$(lsh -t 60 "$n" 'udevadm settle --timeout=60
			for d in /sys/class/infiniband/*; do
				[ "$(cat $d/device/vendor 2>/dev/null):$(cat $d/device/device 2>/dev/null)" = 0x1af4:0x10f0 ] &&
					{ basename $d; exit 0; }
			done; exit 1') || { echo "node$n: no RDMA device on the cnuas-vnic" >&2; return 1; }
		echo "$d" >"$f"
	fi
	cat "$f"
}

boot_id() { lsh -t 30 "$1" 'cat /proc/sys/kernel/random/boot_id' 2>/dev/null; }

# wait_booted NODE SECONDS: until systemd says the boot is over (the agent
# does not answer while the guest reboots).
wait_booted() {
	local n=$1 limit=$2 t0 st
	t0=$(date +%s)
	while :; do
		st=$(lsh -t 60 "$n" 'systemctl is-system-running --wait' 2>/dev/null) || true
		case $st in running | degraded) return 0 ;; esac
		[ $(($(date +%s) - t0)) -lt "$limit" ] || { echo "node$n: not booted after $limit s (state '$st')"; return 1; }
		sleep 2
	done
}

# reboot_node NODE: `systemctl reboot` in the guest, as an admin would; back
# when the new boot is over. Prints the seconds it took.
reboot_node() {
	local n=$1 old t0
	old=$(boot_id "$n") || fail "node$n: no boot id"
	t0=$(date +%s)
	lsh -t 20 "$n" 'systemctl reboot' >/dev/null 2>&1 || true
	wait_for 600 sh -c "[ \"\$(timeout 40 '$LAB' exec $n -- cat /proc/sys/kernel/random/boot_id 2>/dev/null)\" != '' ] &&
		[ \"\$(timeout 40 '$LAB' exec $n -- cat /proc/sys/kernel/random/boot_id 2>/dev/null)\" != '$old' ]" ||
		fail "node$n did not come back from the reboot"
	wait_booted "$n" 600 || fail "node$n: boot after the reboot did not finish"
	echo $(($(date +%s) - t0))
}

# check_node_up NODE: everything a systemd guest should have by itself:
# the distro asked for; systemd as PID 1 with no failed unit; for a cnuas
# node the drivers bound from their aliases (cnuas_net to the PCI NIC,
# cnuas_ib to its auxiliary device, cnuasgpu to the accelerator) out of
# DKMS's tree, rdma-core's udev rules having loaded ib_uverbs and
# rdma_ucm, cnuas0 configured by systemd-networkd (address, MTU) and
# the RDMA device (under the PCI function, beside cnuas0) ACTIVE in
# libibverbs; for an rxe node, rxe0 on eth0.
check_node_up() {
	local n=$1 kind dev nd out bad=()
	kind=$(node_kind "$n") nd=$(rdma_netdev "$n")
	dev=$(rdma_dev "$n") || fail "node$n: no RDMA device"
	note "node$n: RDMA device $dev"
	# systemd may call the boot done while udev still loads drivers for
	# the devices it found, and the units those devices pull in (e.g.
	# rdma-hw.target loading rdma_ucm) start after that: wait for udev's
	# queue, then for systemd's jobs, as a script on a real machine would.
	out=$(lsh -t 240 "$n" "
		udevadm settle --timeout=120 || echo 'udev-settle=timeout'
		i=0
		while [ -n \"\$(systemctl list-jobs --no-legend)\" ]; do
			[ \$i -lt 120 ] || { echo 'jobs=pending'; break; }
			sleep 1; i=\$((i + 1))
		done
		. /etc/os-release; echo \"distro=\$VERSION_CODENAME\"
		echo \"pid1=\$(cat /proc/1/comm)\"
		echo \"state=\$(systemctl is-system-running)\"
		echo \"failed=\$(systemctl --failed --no-legend --plain | awk '{print \$1}' | xargs)\"
		echo \"modules=\$(cut -d' ' -f1 /proc/modules | xargs)\"
		for d in /sys/bus/pci/devices/*; do
			case \$(cat \$d/vendor):\$(cat \$d/device) in
			0x1af4:0x10f0) echo \"nic_driver=\$(basename \$(readlink \$d/driver) 2>/dev/null)\" ;;
			0x1af4:0x10f1) echo \"gpu_driver=\$(basename \$(readlink \$d/driver) 2>/dev/null)\" ;;
			esac
		done
		for d in /sys/bus/auxiliary/devices/cnuas_net.rdma.*; do
			[ -e \$d ] && echo \"aux_driver=\$(basename \$(readlink \$d/driver) 2>/dev/null)\"
		done
		for m in cnuas_net cnuas_ib cnuasgpu; do
			echo \"file_\$m=\$(modinfo -F filename \$m 2>/dev/null)\"
		done
		echo \"dkms=\$(dkms status -k \$(uname -r) 2>/dev/null | grep -c ': installed')\"
		i=\$(cat /sys/class/net/$nd/ifindex 2>/dev/null)
		echo \"nd_admin=\$(sed -n 's/^ADMIN_STATE=//p' /run/systemd/netif/links/\$i 2>/dev/null)\"
		echo \"nd_file=\$(sed -n 's/^NETWORK_FILE=//p' /run/systemd/netif/links/\$i 2>/dev/null)\"
		echo \"nd_mtu=\$(cat /sys/class/net/$nd/mtu 2>/dev/null)\"
		echo \"nd_addr=\$(ip -4 -o addr show dev $nd 2>/dev/null | awk '{print \$4}' | xargs)\"
		echo \"port=\$(ibv_devinfo -d $dev 2>/dev/null | sed -n 's/.*state:[[:space:]]*//p' | head -1)\"
		echo \"dev_net=\$(ls /sys/class/infiniband/$dev/device/net 2>/dev/null | xargs)\"
		echo \"gpu_dev=\$(ls /dev/cnuasgpu0 2>/dev/null)\"
		" 2>&1) || { echo "$out"; fail "node$n: cannot inspect the guest"; }
	echo "$out" | sed "s/^/node$n: /"
	val() { echo "$out" | sed -n "s/^$1=//p" | head -1; }
	has_mod() { [[ " $(val modules) " == *" $1 "* ]]; }
	[ "$(val distro)" = "$(node_distro "$n")" ] || bad+=("distro $(val distro), want $(node_distro "$n")")
	[ "$(val pid1)" = systemd ] || bad+=("PID 1 is $(val pid1)")
	[ "$(val state)" = running ] || bad+=("system state $(val state)")
	[ -z "$(val udev-settle)" ] || bad+=("udev did not settle in 120 s")
	[ -z "$(val jobs)" ] || bad+=("systemd jobs still pending after 120 s")
	[ -z "$(val failed)" ] || bad+=("failed units: $(val failed)")
	[ "$(val nd_admin)" = configured ] || bad+=("systemd-networkd state of $nd: '$(val nd_admin)'")
	[[ "$(val nd_file)" == */systemd/network/* ]] || bad+=("no systemd-networkd file for $nd")
	[ "$(val nd_mtu)" = "$MTU" ] || bad+=("$nd MTU $(val nd_mtu), want $MTU")
	[ "$(val nd_addr)" = "$(ip_of "$n")/24" ] || bad+=("$nd address '$(val nd_addr)'")
	[ "$(val port)" = "PORT_ACTIVE (4)" ] || bad+=("$dev port state '$(val port)'")
	for m in ib_uverbs rdma_ucm; do has_mod $m || bad+=("$m not loaded"); done
	if [ "$kind" = cnuas ]; then
		[ "$(val nic_driver)" = cnuas_net ] || bad+=("NIC driver '$(val nic_driver)'")
		[[ " $(val dev_net) " == *" $nd "* ]] || bad+=("$dev/device/net has no $nd: '$(val dev_net)'")
		[[ "$(val aux_driver)" == cnuas_ib.* ]] || bad+=("auxiliary device driver '$(val aux_driver)'")
		for m in cnuas_net cnuas_ib; do
			[[ "$(val "file_$m")" == */updates/dkms/* ]] || bad+=("$m not from DKMS: '$(val "file_$m")'")
		done
		[ "$(val dkms)" -ge 1 ] 2>/dev/null || bad+=("dkms status: not installed for the running kernel")
	else
		has_mod rdma_rxe || bad+=("rdma_rxe not loaded")
	fi
	if [ "${GPU:-0}" = 1 ]; then
		[ "$(val gpu_driver)" = cnuasgpu ] || bad+=("accelerator driver '$(val gpu_driver)'")
		[ -n "$(val gpu_dev)" ] || bad+=("no /dev/cnuasgpu0")
	fi
	[ ${#bad[@]} -eq 0 ] || fail "node$n ($(node_distro "$n"), $kind): ${bad[*]}"
}

# guest_pingpong NAME A B ARGS: ibv_rc_pingpong ARGS (with -c: the receiver
# checks the data) between nodes A (server) and B over their IPv4 GIDs.
guest_pingpong() {
	local name=$1 a=$2 b=$3 args=$4 ga gb
	ga=$(gid_index "$a" 4) || fail "node$a: no RoCE v2 GID for $(ip_of "$a")"
	gb=$(gid_index "$b" 4) || fail "node$b: no RoCE v2 GID for $(ip_of "$b")"
	pair_run "$name" 120 "$a" "$b" "$(listening 18515)" \
		"ibv_rc_pingpong -d $(rdma_dev "$a") -g $ga -c $args" \
		"ibv_rc_pingpong -d $(rdma_dev "$b") -g $gb -c $args $(ip_of "$a")" &&
		grep -q 'iters in' "$PR_CLI" || { pair_show 8; fail "$name: ibv_rc_pingpong node$a <- node$b failed"; }
	echo "PASS $name: $(grep -h 'iters in' "$PR_CLI")"
}
