#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
# Verbs as rdma-core's own test suite (its pyverbs tests) uses them, on
# cnuas_0 (cnuas-verbsapi, loopback QPs): ibv_create_qp_ex with creation
# flags asked for and none set, RC QPs with the FLUSH rights, a zero-byte
# UD SEND; UD modify_qp through every state with the attributes the IBA
# allows, read back by ibv_query_qp; memory windows of type 1 and 2 bound
# with local write among the rights, invalidated by a zero-length bind,
# LOCAL_INV, SEND_WITH_INV and dealloc; ibv_rereg_mr of access, PD and
# translation; extended CQs; parent domains with and without allocators;
# UD receives as UCX reads them (the GRH area, byte_len, src_qp, and the
# L3 header type in sl); a QP moved to RESET taking its completions out
# of its CQ; SRQ resize with receives posted; the IBA 1.5 ATOMIC WRITE
# (exactly 8 bytes change) and FLUSH (built with ibv_wr_flush only), or,
# on kernels before 6.2 (Debian 12), their clean refusal. Bytes and
# completion statuses are checked. Over native IB (its IB cell,
# CNUAS_VERBS_OVER_IB=1) the QPs address by LID and the UD receives carry
# the packet's IB GRH, the source LID and the SL in place of RoCE's IP
# header and L3 type.
# link-layers: eth ib
. "$(dirname "$0")/lib.sh"
need_cnuas_nodes 1
need_eth_or_verbs_over_ib
# VERBS_DEV / VERBS_NODES="A" run it on another device/node (rxe0: the
# parent-domain case skips, rxe has none; ud-recv fails there, rxe reports
# sl 0; reset-cq fails there, rxe keeps a reset QP's completions)
DEV=${VERBS_DEV:-cnuas_0}
read -r N0 <<<"${VERBS_NODES:-0}"
rdma_dev_up "$N0" "$DEV"
out=$(lsh -t 300 "$N0" "cnuas-verbsapi -d $DEV" 2>&1)
rc=$?
echo "$out"
[ $rc = 0 ] || fail "cnuas-verbsapi: $(echo "$out" | grep -c '^FAIL') check(s) failed (rc $rc)"
n=$(echo "$out" | grep -c '^PASS')
[ "$n" -ge 60 ] || fail "cnuas-verbsapi ran only $n checks"
