#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# After `systemctl reboot` the Debian 13 guest comes back the same way:
# drivers loaded from their aliases, cnuas0 configured, the RDMA device ACTIVE,
# and RDMA with the other guest works again.
# timeout: 900
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
s=$(reboot_node 1)
note "node1 rebooted in $s s"
check_node_up 1
guest_pingpong rc-after-reboot 0 1 "-n 20"
echo "node1 came back from a reboot with its RDMA device by itself"
