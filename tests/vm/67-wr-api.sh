#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# The extended send API (ibv_wr_start .. ibv_wr_complete) through the
# provider on cnuas_0 (cnuas-wrapi, loopback QP pairs): every RC opcode
# with SGEs, SGE lists and inline data in one batch, UD with
# ibv_wr_set_ud_addr, ibv_wr_abort, and batches that must fail whole
# (too many SGEs or inline bytes, more requests than the SQ holds), a
# memory window bound and freed with ibv_wr_bind_mw / ibv_wr_local_inv;
# bytes, immediates, atomic results and completion order are checked.
# link-layers: eth
# (not ib: the extended send API builds the same WQEs on either link layer)
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
need_eth_or_verbs_over_ib
# VERBS_DEV / VERBS_NODES="A" run it on another device/node
DEV=${VERBS_DEV:-cnuas_0}
read -r N0 <<<"${VERBS_NODES:-0}"
rdma_dev_up "$N0" "$DEV"
out=$(lsh -t 300 "$N0" "cnuas-wrapi -d $DEV" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "cnuas-wrapi: $(echo "$out" | grep -c '^FAIL') case(s) failed (rc $rc)"
n=$(echo "$out" | grep -c '^PASS')
[ "$n" -ge 15 ] || fail "cnuas-wrapi ran only $n checks"
