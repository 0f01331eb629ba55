// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* Work requests to ring slots: see wqe.h. */
#include <stddef.h>
#include <string.h>

#include "wqe.h"

_Static_assert(sizeof(struct cnuas_send_wqe) == 64, "send WQE is 64 bytes");
_Static_assert(sizeof(struct cnuas_recv_wqe) == 16, "recv WQE is 16 bytes");
_Static_assert(sizeof(struct cnuas_sge) == 16, "SGE is 16 bytes");
_Static_assert(IBV_SEND_FENCE == CNUAS_SEND_FENCE &&
	       IBV_SEND_SIGNALED == CNUAS_SEND_SIGNALED &&
	       IBV_SEND_SOLICITED == CNUAS_SEND_SOLICITED &&
	       IBV_SEND_INLINE == CNUAS_SEND_INLINE,
	       "send flags are the IBV_SEND_* values");

#define CNUAS_SEND_FLAGS (CNUAS_SEND_FENCE | CNUAS_SEND_SIGNALED | \
			  CNUAS_SEND_SOLICITED | CNUAS_SEND_INLINE)

static int opcode_ok(enum ibv_qp_type type, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return 1;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		return type == IBV_QPT_RC || type == IBV_QPT_UC;
	/* UC has no READ, atomics or Invalidate (IBA 9.2.1). */
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return type == IBV_QPT_RC;
	default:
		return 0;
	}
}

/* IBA 1.5 (RC): only the ibv_wr_* API has them (ibv_wr_flush() ...). */
static int mpe_opcode(enum ibv_wr_opcode op)
{
	return op == CNUAS_WR_ATOMIC_WRITE || op == CNUAS_WR_FLUSH;
}

static int fill_mpe(struct cnuas_send_wqe *wqe, const struct ibv_send_wr *wr)
{
	if (wr->num_sge || (wr->send_flags & IBV_SEND_INLINE))
		return EINVAL;
	if (wr->opcode == CNUAS_WR_ATOMIC_WRITE) {
		wqe->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.atomic.rkey = wr->wr.atomic.rkey;
		return 0;
	}
	wqe->wr.flush.remote_addr = wr->wr.atomic.remote_addr;
	wqe->wr.flush.length = wr->wr.atomic.compare_add;
	wqe->wr.flush.rkey = wr->wr.atomic.rkey;
	wqe->wr.flush.type = wr->wr.atomic.swap & 0xff;
	wqe->wr.flush.level = (wr->wr.atomic.swap >> 8) & 0xff;
	return 0;
}

/* BIND_MW names the window, the MR and the range; no SGEs. */
static int fill_bind(struct cnuas_send_wqe *wqe, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

	if (!wr->bind_mw.mw || (bi->length && !bi->mr) ||
	    (wr->send_flags & IBV_SEND_INLINE))
		return EINVAL;
	wqe->wr.bind.mw_rkey = wr->bind_mw.mw->rkey;
	wqe->wr.bind.new_rkey = wr->bind_mw.rkey;
	wqe->wr.bind.mr_lkey = bi->mr ? bi->mr->lkey : 0;
	wqe->wr.bind.addr = bi->addr;
	wqe->wr.bind.length = bi->length;
	wqe->wr.bind.access = bi->mw_access_flags;
	return 0;
}

/* Only SENDs and WRITEs carry data the requester may copy now. */
static int inline_ok(enum ibv_wr_opcode op)
{
	return op != IBV_WR_RDMA_READ && op != IBV_WR_ATOMIC_CMP_AND_SWP &&
	       op != IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static int copy_inline(struct cnuas_send_wqe *wqe,
		       const struct cnuas_wqe_limits *lim,
		       const struct ibv_send_wr *wr)
{
	uint8_t *dst = (uint8_t *)(wqe + 1);
	uint32_t room = lim->stride - sizeof(*wqe);
	uint64_t len = 0;
	int i;

	if (room > lim->max_inline)
		room = lim->max_inline;
	if (wr->num_sge < 0)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ibv_sge *s = &wr->sg_list[i];

		if (s->length > room - len)
			return EINVAL;
		memcpy(dst + len, (const void *)(uintptr_t)s->addr, s->length);
		len += s->length;
	}
	wqe->inline_len = len;
	wqe->num_sge = 0;
	return 0;
}

static int copy_sges(struct cnuas_sge *dst, uint32_t stride_room,
		     uint32_t max_sge, const struct ibv_sge *sg, int num_sge)
{
	int i;

	if (num_sge < 0 || (uint32_t)num_sge > max_sge ||
	    (uint32_t)num_sge > stride_room / sizeof(*dst))
		return EINVAL;
	for (i = 0; i < num_sge; i++) {
		dst[i].addr = sg[i].addr;
		dst[i].length = sg[i].length;
		dst[i].lkey = sg[i].lkey;
	}
	return 0;
}

int cnuas_wqe_send(void *slot, const struct cnuas_wqe_limits *lim,
		   const struct ibv_send_wr *wr, uint32_t ah_num)
{
	struct cnuas_send_wqe *wqe = slot;
	int ret;

	if (mpe_opcode(wr->opcode)) {
		if (!lim->wr_api || lim->qp_type != IBV_QPT_RC)
			return EINVAL;
	} else if (!opcode_ok(lim->qp_type, wr->opcode)) {
		return EINVAL;
	}
	if (wr->send_flags & ~CNUAS_SEND_FLAGS)
		return EINVAL;
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags & CNUAS_SEND_FLAGS;

	switch (wr->opcode) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wqe->ex = wr->imm_data;	/* stays in network order */
		break;
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_LOCAL_INV:
		wqe->ex = wr->invalidate_rkey;
		break;
	default:
		break;
	}
	if (mpe_opcode(wr->opcode))
		return fill_mpe(wqe, wr);
	switch (wr->opcode) {
	case IBV_WR_BIND_MW:
		return fill_bind(wqe, wr);
	case IBV_WR_LOCAL_INV:
		return 0;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wqe->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.atomic.swap = wr->wr.atomic.swap;
		wqe->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	default:
		if (lim->qp_type == IBV_QPT_UD) {
			wqe->wr.ud.ah_num = ah_num;
			wqe->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
			wqe->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		}
		break;
	}

	if (wr->send_flags & IBV_SEND_INLINE) {
		if (!inline_ok(wr->opcode))
			return EINVAL;
		return copy_inline(wqe, lim, wr);
	}
	ret = copy_sges((struct cnuas_sge *)(wqe + 1),
			lim->stride - sizeof(*wqe), lim->max_sge, wr->sg_list,
			wr->num_sge);
	if (ret)
		return ret;
	wqe->num_sge = wr->num_sge;
	return 0;
}

int cnuas_wqe_recv(void *slot, const struct cnuas_wqe_limits *lim,
		   const struct ibv_recv_wr *wr)
{
	struct cnuas_recv_wqe *wqe = slot;
	int ret;

	ret = copy_sges((struct cnuas_sge *)(wqe + 1),
			lim->stride - sizeof(*wqe), lim->max_sge, wr->sg_list,
			wr->num_sge);
	if (ret)
		return ret;
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->reserved = 0;
	return 0;
}
