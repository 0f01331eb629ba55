#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Hot-unplug: QMP device_del nic0 on node 1 removes cnuas0 without an oops
# and the guest keeps answering.  (Disruptive: runs last; a device_add
# afterwards tries to restore the node.)
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
before=$(console_problems)
"$LAB" qmp 1 '{"execute": "device_del", "arguments": {"id": "nic0"}}' || fail "device_del refused"
# pciehp waits 5 s after the attention button before it removes the device.
gone() { lsh -t 20 1 '[ ! -e /sys/class/net/cnuas0 ] && ! grep -l 0x10f0 /sys/bus/pci/devices/*/device >/dev/null 2>&1'; }
wait_for 40 gone || fail "cnuas0/device still present 40 s after device_del"
qdev_gone() { ! "$LAB" qmp 1 '{"execute": "qom-get", "arguments": {"path": "/machine/peripheral/nic0", "property": "type"}}' >/dev/null 2>&1; }
wait_for 20 qdev_gone || fail "QEMU still has nic0 after the guest released it"
lsh 1 'echo alive' | grep -qx alive || fail "node1 does not answer after unplug"
sleep 1
after=$(console_problems)
[ "$after" = "$before" ] || { grep -E 'Oops|BUG:|WARNING:' "$LAB_DIR"/node1.console.log | tail -5; fail "kernel problem after unplug"; }
echo "nic0 removed, node1 alive, no oops"

# Restore: plug a new cnuas-vnic into the same root port.
mac=$(printf '52:54:00:c0:00:%02x' 2)
if "$LAB" qmp 1 "{\"execute\": \"device_add\", \"arguments\": {\"driver\": \"cnuas-vnic\", \"id\": \"nic0\", \"bus\": \"rp1\", \"socket_path\": \"$LAB_DIR/switch.sock\", \"mac\": \"$mac\", \"link_layer\": \"eth\"}}" >/dev/null &&
	cnuas_reconfigure 1 >/dev/null 2>&1 && wait_ping 1 "$(ip_of 0)" 30; then
	echo "node1 restored with a hot-plugged nic0"
else
	note "could not restore nic0 on node1 by hot-plug (lab needs a restart)"
fi
