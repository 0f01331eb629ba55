#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Garbage descriptors: with cnuas_net unbound on node 1, cnuas-badring hands
# the device hostile TX rings through BAR0 (bad address, huge length, zero
# length, runaway producer).  QEMU must log a guest error and declare the
# queue dead, node 0 and the switch keep working, and rebinding the driver
# brings node 1 back. On an IB lab (its IB cell) node 0's port
# stays Active meanwhile, and node 1's comes back Active with its LID once
# OpenSM has swept it in (its link went with the driver), then IPoIB.
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
if [ "$LINK_LAYER" = ib ]; then
	need_ib_sm
	P=/sys/class/infiniband/cnuas_0/ports/1
	lid1=$(lsh 1 "cat $P/lid")
	reconfigure() { ipoib_reconfigure 1; }
else
	need_eth
	reconfigure() { cnuas_reconfigure 1; }
fi
bdf=$(cnuas_bdf 1) || fail "node1: no cnuas-vnic PCI device"
qlog=$LAB_DIR/node1.qemu.log
before=$(wc -l <"$qlog")
rebind() {
	lsh -t 30 1 "[ -e /sys/bus/pci/devices/$bdf/driver ] || echo $bdf >/sys/bus/pci/drivers/cnuas_net/bind" >/dev/null 2>&1
	reconfigure >/dev/null 2>&1
}
trap rebind EXIT

lsh 1 "echo $bdf >/sys/bus/pci/drivers/cnuas_net/unbind" || fail "node1: unbind $bdf failed"
for mode in bad-addr bad-len zero-len bad-prod; do
	out=$(lx -t 60 1 cnuas-badring "$bdf" "$mode") || fail "device did not reject $mode: $out"
	echo "node1 $out"
done
pid_alive() { kill -0 "$(cat "$LAB_DIR/node1.pid")" 2>/dev/null; }
pid_alive || fail "node1 QEMU died"
after=$(wc -l <"$qlog")
[ "$after" -gt "$before" ] || fail "QEMU logged no guest error (node1.qemu.log unchanged)"
echo "QEMU log: $(tail -n +$((before + 1)) "$qlog" | head -3 | tr '\n' '|')"

# The rest of the fabric is unaffected.
lsh 0 'true' || fail "node0 does not answer"
"$LAB" switch -- show >/dev/null || fail "switch does not answer"
if [ "$LINK_LAYER" = ib ]; then
	lsh 0 "grep -q ACTIVE $P/state" || fail "node0's port is $(lsh 0 "cat $P/state") meanwhile"
elif [ $((VIRTIO_NODES + ${RXE_NODES:-0})) -ge 1 ]; then
	wait_ping 0 "$(ip_of "$(virtio_node)")" 20 || fail "node0 cannot reach the virtio node"
fi

lsh 1 "echo $bdf >/sys/bus/pci/drivers/cnuas_net/bind" || fail "node1: rebind failed"
if [ "$LINK_LAYER" = ib ]; then
	ib_port_back 1 "$lid1" "after the rebind"
	echo "node1: port ACTIVE again with LID $lid1"
fi
reconfigure || fail "node1: its interface did not come back"
wait_ping 1 "$(ip_of 0)" 30 || fail "node1 cannot reach node0 after rebind"
out=$(lsh -t 60 1 "ping -q -c 50 -i 0.02 -W 5 $(ip_of 0)") || true
echo "$out" | grep -q ' 0% packet loss' || fail "node1 lossy after rebind: $out"
echo "node1 recovered after rebind: $(echo "$out" | grep 'packet loss')"
trap - EXIT
