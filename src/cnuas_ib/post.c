// SPDX-License-Identifier: GPL-2.0
/*
 * post_send/post_recv. Kernel QPs: work requests become ring entries in
 * the same format the provider writes (uapi/cnuas-abi.h), so the
 * transport reads one kind of queue. User QPs write their rings
 * themselves; post_send is only their doorbell.
 */
#include "cnuas_ib.h"

static bool cnuas_ib_send_opcode_ok(const struct cnuas_ib_qp *qp,
				    enum ib_wr_opcode opcode)
{
	switch (opcode) {
	case IB_WR_SEND:
	case IB_WR_SEND_WITH_IMM:
		return true;
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_REG_MR:
	case IB_WR_LOCAL_INV:
		return cnuas_ib_qp_connected(qp);
	case IB_WR_SEND_WITH_INV:	/* UC has no Invalidate opcodes */
	case IB_WR_RDMA_READ:
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return qp->type == IB_QPT_RC;
	default:
		return false;
	}
}

static u32 cnuas_ib_send_flags(int flags)
{
	u32 f = 0;

	if (flags & IB_SEND_FENCE)
		f |= CNUAS_SEND_FENCE;
	if (flags & IB_SEND_SIGNALED)
		f |= CNUAS_SEND_SIGNALED;
	if (flags & IB_SEND_SOLICITED)
		f |= CNUAS_SEND_SOLICITED;
	if (flags & IB_SEND_INLINE)
		f |= CNUAS_SEND_INLINE;
	return f;
}

/* Inline data: kernel SGE addresses are kernel virtual addresses. */
static int cnuas_ib_send_inline(struct cnuas_ib_qp *qp,
				const struct ib_send_wr *wr,
				struct cnuas_send_wqe *wqe)
{
	u8 *dst = (u8 *)(wqe + 1);
	u32 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		if (wr->sg_list[i].length > qp->sq_max_inline - len)
			return -EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)wr->sg_list[i].addr,
		       wr->sg_list[i].length);
		len += wr->sg_list[i].length;
	}
	wqe->inline_len = len;
	return 0;
}

/* Fill the next SQ slot from @wr (sq_post_lock held, space checked). */
static int cnuas_ib_send_wqe_fill(struct cnuas_ib_qp *qp,
				  const struct ib_send_wr *wr,
				  struct cnuas_send_wqe *wqe)
{
	struct cnuas_sge *sge = (struct cnuas_sge *)(wqe + 1);
	int i;

	if (!cnuas_ib_send_opcode_ok(qp, wr->opcode) || wr->num_sge < 0)
		return -EINVAL;
	if (!(wr->send_flags & IB_SEND_INLINE) &&
	    (u32)wr->num_sge > qp->sq_max_sge)
		return -EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;	/* IB_WR_* == IBV_WR_* for these */
	wqe->send_flags = cnuas_ib_send_flags(wr->send_flags);
	if (qp->sig_all)
		wqe->send_flags |= CNUAS_SEND_SIGNALED;

	switch (wr->opcode) {
	case IB_WR_SEND_WITH_IMM:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		wqe->ex = (__force u32)wr->ex.imm_data;
		break;
	case IB_WR_SEND_WITH_INV:
	case IB_WR_LOCAL_INV:
		wqe->ex = wr->ex.invalidate_rkey;
		break;
	default:
		break;
	}
	if (wr->opcode == IB_WR_REG_MR) {
		/*
		 * The MR's table slot is in the key (mr-fast.c finds the MR
		 * by it): a key that names another slot is refused here.
		 */
		if (reg_wr(wr)->mr->device != qp->ibqp.device ||
		    reg_wr(wr)->key >> 8 != reg_wr(wr)->mr->lkey >> 8)
			return -EINVAL;
		wqe->wr.reg.key = reg_wr(wr)->key;
		wqe->wr.reg.access = reg_wr(wr)->access;
		return 0;
	}
	if (wr->opcode == IB_WR_LOCAL_INV)
		return 0;

	switch (wr->opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		wqe->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
		wqe->wr.rdma.rkey = rdma_wr(wr)->rkey;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		if (wr->num_sge != 1 || wr->sg_list[0].length != sizeof(u64) ||
		    (wr->send_flags & IB_SEND_INLINE))
			return -EINVAL;
		wqe->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
		wqe->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
		wqe->wr.atomic.swap = atomic_wr(wr)->swap;
		wqe->wr.atomic.rkey = atomic_wr(wr)->rkey;
		break;
	default:
		break;
	}

	if (!cnuas_ib_qp_connected(qp)) {
		if (!ud_wr(wr)->ah)
			return -EINVAL;
		wqe->wr.ud.ah_num = to_cah(ud_wr(wr)->ah)->ah_num;
		wqe->wr.ud.remote_qpn = ud_wr(wr)->remote_qpn;
		wqe->wr.ud.remote_qkey = ud_wr(wr)->remote_qkey;
		if (qp->type == IB_QPT_GSI) {
			if (ud_wr(wr)->pkey_index >=
			    cnuas_ib_pkey_tbl_len(qp->cdev))
				return -EINVAL;
			wqe->wr.ud.pkey_index = ud_wr(wr)->pkey_index;
		}
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		if (wr->opcode == IB_WR_RDMA_READ)
			return -EINVAL;
		return cnuas_ib_send_inline(qp, wr, wqe);
	}
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	return 0;
}

int cnuas_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad_wr)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	enum ib_qp_state state;
	unsigned long flags;
	int err = 0, posted = 0;

	if (qp->is_user) {	/* the doorbell: WQEs are in the ring */
		cnuas_ib_transport_sq_kick(qp);
		return 0;
	}

	state = READ_ONCE(qp->state);
	if (state == IB_QPS_RESET || state == IB_QPS_INIT ||
	    state == IB_QPS_RTR) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->sq_post_lock, flags);
	for (; wr; wr = wr->next) {
		struct cnuas_send_wqe *wqe;

		if (!cnuas_ib_queue_kspace(&qp->sq)) {
			err = -ENOMEM;
			break;
		}
		wqe = cnuas_ib_queue_slot(&qp->sq, READ_ONCE(qp->sq.hdr->prod));
		err = cnuas_ib_send_wqe_fill(qp, wr, wqe);
		if (err)
			break;
		cnuas_ib_queue_kproduce(&qp->sq, 1);
		posted++;
	}
	spin_unlock_irqrestore(&qp->sq_post_lock, flags);
	if (err)
		*bad_wr = wr;
	/* In ERR the transport flushes what was posted. */
	if (posted)
		cnuas_ib_transport_sq_kick(qp);
	return err;
}

int cnuas_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	unsigned long flags;
	int err = 0;

	if (qp->is_user)	/* the ring is the interface */
		return 0;
	if (qp->srq || READ_ONCE(qp->state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->rq_lock, flags);
	for (; wr; wr = wr->next) {
		err = cnuas_ib_recv_wr_put(&qp->rq, qp->rq_max_sge, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	/* In ERR the kick makes the transport flush them (ib_drain_rq). */
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		cnuas_ib_transport_sq_kick(qp);
	return err;
}
