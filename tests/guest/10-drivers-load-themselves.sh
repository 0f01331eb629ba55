#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# A systemd guest with our packages installed by apt comes up ready with
# no manual step: udev loads cnuas_net, cnuas_ib and cnuasgpu from their
# aliases, rdma-core's rules load ib_uverbs and rdma_ucm, systemd-networkd
# configures cnuas0, the RDMA device is ACTIVE; on Debian 12 and 13 guests alike,
# and the Soft-RoCE guest's rxe0 beside them. Runs first: no test has
# touched the guests yet.
# timeout: 600
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 2
need_eth
for n in $(seq 0 $((NODES + VIRTIO_NODES + RXE_NODES - 1))); do
	[ "$(node_kind "$n")" = virtio ] && continue
	check_node_up "$n"
done
echo "every guest came up with its drivers, addresses and RDMA device by itself"
