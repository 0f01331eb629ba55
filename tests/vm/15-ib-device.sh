#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# cnuas_ib registers cnuas_0 on every cnuas guest: on netdev cnuas0,
# ACTIVE, link layer Ethernet, the IPv4-mapped RoCE v2 GID of the guest's
# address, node GUID from the MAC; its sysfs parent is the PCI function,
# with the netdev beside it (device/net/cnuas0, where rdma-core's RDMA CM
# tests look), the driver bound to the auxiliary device; port events
# follow the link (switch killed and restarted); unbind/bind of the PCI
# function and
# rmmod/modprobe of cnuas_ib and cnuas_net (in that order) are clean.
# Leaves cnuas_ib loaded on both nodes.
# timeout: 600
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
lsh 0 'modinfo -F filename cnuas_ib >/dev/null 2>&1' || skip "cnuas_ib is not in the guest image"

IBSYS=/sys/class/infiniband/cnuas_0
before=$(console_problems)
trap '"$LAB" switch-start >/dev/null 2>&1; for n in 0 1; do lsh -t 60 $n "modprobe cnuas_net; modprobe cnuas_ib" >/dev/null 2>&1; cnuas_reconfigure $n >/dev/null 2>&1; done' EXIT

# port_is NODE STATE: `rdma link` shows cnuas_0 on cnuas0 in STATE.
port_is() {
	lsh -t 20 "$1" "rdma link show cnuas_0/1 2>/dev/null | grep -q 'state $2 .*netdev cnuas0'"
}
ib_gone() { lsh -t 20 "$1" "[ ! -e $IBSYS ] && ! rdma link show 2>/dev/null | grep -q cnuas_0"; }
# parent_ok NODE: cnuas_0's device is the PCI function, cnuas0 beside it,
# and cnuas_ib drives the PCI function's auxiliary device.
parent_ok() {
	local bdf
	bdf=$(cnuas_bdf "$1") || return 1
	lsh -t 20 "$1" "[ \"\$(basename \"\$(readlink -f $IBSYS/device)\")\" = $bdf ] &&
		[ -e $IBSYS/device/net/cnuas0 ] &&
		[ \"\$(basename \"\$(readlink -f /sys/bus/pci/devices/$bdf/cnuas_net.rdma.*/driver)\")\" = cnuas_ib.ib ]"
}

for n in 0 1; do
	lsh -t 60 "$n" 'modprobe cnuas_ib' || fail "node$n: modprobe cnuas_ib failed"
	wait_for 20 port_is "$n" ACTIVE || {
		lsh "$n" 'rdma link; dmesg | tail -n 20'
		fail "node$n: rdma link does not show cnuas_0 ACTIVE on cnuas0"
	}
	note "node$n: $(lsh "$n" 'rdma link show cnuas_0/1')"

	# ::ffff:198.18.0.N as sysfs prints it, a RoCE v2 GID on cnuas0.
	ip=$(ip_of "$n")
	IFS=. read -r a b c d <<<"$ip"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	idx=$(lsh "$n" "for f in $IBSYS/ports/1/gids/*; do
			[ \"\$(cat \$f 2>/dev/null)\" = $want ] || continue
			i=\${f##*/}
			[ \"\$(cat $IBSYS/ports/1/gid_attrs/types/\$i)\" = 'RoCE v2' ] &&
				[ \"\$(cat $IBSYS/ports/1/gid_attrs/ndevs/\$i)\" = cnuas0 ] && { echo \$i; exit 0; }
		done; exit 1") || {
		lsh "$n" "grep -H . $IBSYS/ports/1/gids/* | grep -v ':0000:0000:0000:0000:0000:0000:0000:0000$'"
		fail "node$n: no RoCE v2 GID $want ($ip) on cnuas0"
	}
	note "node$n: GID[$idx] = $want (RoCE v2, cnuas0)"

	ll=$(lsh "$n" "cat $IBSYS/ports/1/link_layer")
	[ "$ll" = Ethernet ] || fail "node$n: link layer '$ll', want Ethernet"
	state=$(lsh "$n" "cat $IBSYS/ports/1/state")
	[ "$state" = "4: ACTIVE" ] || fail "node$n: port state '$state'"
	# EUI-64 of the MAC 52:54:00:c0:00:0N (universal/local bit flipped).
	guid=$(printf '5054:00ff:fec0:%04x' $((n + 1)))
	[ "$(lsh "$n" "cat $IBSYS/node_guid")" = "$guid" ] || fail "node$n: node_guid is not $guid (from the MAC)"
	[ "$(lsh "$n" "cat $IBSYS/ports/1/pkeys/0")" = 0xffff ] || fail "node$n: pkey[0] is not 0xffff"
	parent_ok "$n" || {
		lsh "$n" "ls -l $IBSYS/device; ls $IBSYS/device/net; ls -l /sys/bus/auxiliary/devices/"
		fail "node$n: $IBSYS/device is not the PCI function with net/cnuas0, or cnuas_ib does not drive its auxiliary device"
	}
	note "node$n: $IBSYS/device -> $(cnuas_bdf "$n"), device/net/cnuas0 present"
	note "node$n: $ll, $state, rate $(lsh "$n" "cat $IBSYS/ports/1/rate"), node_guid $guid"
done

# Link events: the switch going away takes the port down, and back up.
# events NODE: how many "port 1 down" and "port 1 active" lines dmesg has.
# shellcheck disable=SC2016 # expanded in the guest
events() {
	lsh "$1" 'd=$(dmesg | grep -c "cnuas_0: port 1 down"); a=$(dmesg | grep -c "cnuas_0: port 1 active"); echo "$d $a"'
}
declare -A ev=([0]="$(events 0)" [1]="$(events 1)")
"$LAB" switch-kill || fail "switch-kill failed"
for n in 0 1; do
	wait_for 20 port_is "$n" DOWN || fail "node$n: port not DOWN 20 s after the switch died"
done
"$LAB" switch-start || fail "switch-start failed"
for n in 0 1; do
	wait_for 30 port_is "$n" ACTIVE || fail "node$n: port not ACTIVE again after the switch restarted"
	read -r d0 a0 <<<"${ev[$n]}"
	read -r d1 a1 <<<"$(events "$n")"
	if [ "$d1" -le "$d0" ] || [ "$a1" -le "$a0" ]; then
		fail "node$n: no PORT_ERR/PORT_ACTIVE reported (dmesg: $d0 $a0 -> $d1 $a1)"
	fi
done
note "port events: DOWN and ACTIVE again on both nodes"

# Remove paths on node 0: the aux device going away (PCI unbind) ...
bdf=$(cnuas_bdf 0) || fail "node0: no cnuas-vnic PCI function"
lsh 0 "echo $bdf >/sys/bus/pci/drivers/cnuas_net/unbind" || fail "node0: unbind failed"
wait_for 20 ib_gone 0 || fail "node0: cnuas_0 still there after the PCI unbind"
lsh 0 "echo $bdf >/sys/bus/pci/drivers/cnuas_net/bind" || fail "node0: bind failed"
cnuas_reconfigure 0 || fail "node0: cnuas0 did not come back after bind"
wait_for 30 port_is 0 ACTIVE || fail "node0: cnuas_0 not back after bind"
parent_ok 0 || fail "node0: cnuas_0 not under the PCI function after bind"
note "node0: PCI unbind/bind removed and re-created cnuas_0"

# ... and module reloads, in dependency order.
lsh 0 'rmmod cnuas_net' 2>/dev/null && fail "node0: rmmod cnuas_net succeeded while cnuas_ib uses it"
lsh 0 'rmmod cnuas_ib' || fail "node0: rmmod cnuas_ib failed"
wait_for 10 ib_gone 0 || fail "node0: cnuas_0 still there after rmmod cnuas_ib"
lsh 0 'modprobe cnuas_ib' || fail "node0: modprobe cnuas_ib failed"
wait_for 20 port_is 0 ACTIVE || fail "node0: cnuas_0 not back after modprobe cnuas_ib"
lsh 0 'rmmod cnuas_ib && rmmod cnuas_net' || fail "node0: rmmod cnuas_ib cnuas_net failed"
lsh 0 '[ ! -e /sys/class/net/cnuas0 ]' || fail "node0: cnuas0 still there after rmmod cnuas_net"
lsh -t 60 0 'modprobe cnuas_net && modprobe cnuas_ib' || fail "node0: modprobe cnuas_net cnuas_ib failed"
cnuas_reconfigure 0 || fail "node0: cnuas0 did not come back"
wait_for 30 port_is 0 ACTIVE || fail "node0: cnuas_0 not ACTIVE after reloading both modules"
parent_ok 0 || fail "node0: cnuas_0 not under the PCI function after the reloads"
lsh 0 "grep -qx 0000:0000:0000:0000:0000:ffff:c612:0001 $IBSYS/ports/1/gids/*" ||
	fail "node0: IPv4 GID missing after reload"
note "node0: rmmod/modprobe of cnuas_ib and cnuas_net clean"
trap - EXIT

wait_ping 0 "$(ip_of 1)" 30 || fail "node0 cannot reach node1 after the reloads"
sleep 1
after=$(console_problems)
if [ "$after" != "$before" ]; then
	grep -E 'Oops|BUG:|WARNING:|general protection' "$LAB_DIR"/node*.console.log | tail -n 5
	fail "kernel problem on a console"
fi
for n in 0 1; do
	lsh "$n" 'dmesg | grep -E "Oops|BUG:|WARNING:|general protection"' && fail "node$n: kernel problem in dmesg"
done
echo "cnuas_0 ACTIVE on cnuas0 with IPv4 RoCE v2 GIDs on both nodes; events, unbind and reloads clean"
