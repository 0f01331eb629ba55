// SPDX-License-Identifier: GPL-2.0
/*
 * The requester: send WQEs to packets. Runs in the QP's work item with
 * the QP's transport lock held. WQEs are copied out of the SQ ring into
 * kernel-private shadow slots before they are looked at; messages are cut
 * to the path MTU, PSNs assigned in order, and a bounded window of packets
 * stays unacknowledged. Retransmission goes back to the PSN the peer
 * asks for (sequence NAK, RNR NAK) or to the oldest unacknowledged one
 * (ACK timeout); ACKs of packets sent before a rewind still count and
 * move the requester forward again (cnuas_ib_req_rewind()). UC and UD
 * send each packet once, with no window, and complete a WQE once its
 * last packet is out.
 */
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "cnuas_ib.h"
#include "wire.h"

struct cnuas_ib_swqe *cnuas_ib_swqe_at(struct cnuas_ib_qp *qp, u32 idx)
{
	return (void *)((u8 *)qp->t.swqe +
			(size_t)(idx & (qp->sq.num - 1)) * qp->t.swqe_stride);
}

int cnuas_ib_req_init(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u32 data = 0;

	if (qp->sq.stride > sizeof(struct cnuas_send_wqe))
		data = qp->sq.stride - sizeof(struct cnuas_send_wqe);
	t->swqe_stride = ALIGN(sizeof(struct cnuas_ib_swqe) + data, 8);
	if (!qp->sq.num)
		return 0;
	t->swqe = kvcalloc(qp->sq.num, t->swqe_stride, GFP_KERNEL);
	return t->swqe ? 0 : -ENOMEM;
}

void cnuas_ib_req_cleanup(struct cnuas_ib_qp *qp)
{
	kvfree(qp->t.swqe);
	qp->t.swqe = NULL;
}

void cnuas_ib_req_reset(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if (qp->is_user && qp->sq.hdr)
		WRITE_ONCE(qp->sq.hdr->db_skip, 0);

	t->sq_fetch = qp->sq.index;
	t->req_idx = qp->sq.index;
	t->req_off = 0;
	t->rd_out = 0;
	t->since_ackreq = 0;
	cnuas_ib_req_window_init(t);
	t->rnr_wait = false;
	t->retry_left = t->retry_cnt;
	t->rnr_left = t->rnr_retry;
}

void cnuas_ib_req_window_init(struct cnuas_ib_tqp *t)
{
	t->cwnd = CNUAS_IB_WINDOW / 4;
	t->ssthresh = CNUAS_IB_WINDOW;
	t->cwnd_acked = 0;
	t->rto_j = 0;
	t->srtt8 = 0;
	t->rttvar4 = 0;
	t->rtt_timing = false;
}

/* Requests answered by a response of their own: READ, atomics, FLUSH. */
static bool cnuas_is_rd_op(u32 opcode)
{
	return opcode == IB_UVERBS_WR_RDMA_READ || opcode == CNUAS_WR_FLUSH ||
	       opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;
}

/* Work requests that send nothing: they take effect when reached. */
static bool cnuas_is_local_op(u32 opcode)
{
	return opcode == IB_WR_REG_MR || opcode == IB_UVERBS_WR_LOCAL_INV ||
	       opcode == IB_UVERBS_WR_BIND_MW;
}

static bool cnuas_is_atomic_op(u32 opcode)
{
	return opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	       opcode == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD;
}

/* Copy the WQEs user space produced since the last look. */
static void cnuas_req_fetch(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_queue *q = &qp->sq;
	u32 dmax = t->swqe_stride - sizeof(struct cnuas_ib_swqe);
	u32 prod = q->index + cnuas_ib_queue_avail(q);

	/* A producer index that went backwards fetches nothing. */
	while ((s32)(prod - t->sq_fetch) > 0) {
		struct cnuas_ib_swqe *sw = cnuas_ib_swqe_at(qp, t->sq_fetch);
		const u8 *slot = cnuas_ib_queue_slot(q, t->sq_fetch);
		struct cnuas_send_wqe *w = &sw->wqe;
		u32 n;

		memcpy(w, slot, sizeof(*w));
		sw->state = CNUAS_SW_NEW;
		sw->status = IB_WC_SUCCESS;
		sw->rd = false;
		sw->len = 0;
		if (w->send_flags & CNUAS_SEND_INLINE) {
			n = w->inline_len;
			if (n > qp->sq_max_inline)
				n = ~0u;
		} else {
			n = w->num_sge > qp->sq_max_sge ? ~0u :
			    w->num_sge * (u32)sizeof(struct cnuas_sge);
		}
		if (n <= dmax)
			memcpy(sw->data, slot + sizeof(*w), n);
		else
			sw->status = IB_WC_LOC_QP_OP_ERR;
		t->sq_fetch++;
	}
}

/* Validate a WQE and give it its PSNs: IB_WC_SUCCESS or the error. */
static enum ib_wc_status cnuas_req_start(struct cnuas_ib_qp *qp,
					 struct cnuas_ib_swqe *sw)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_send_wqe *w = &sw->wqe;
	bool rc = qp->type == IB_QPT_RC;
	bool inl = w->send_flags & CNUAS_SEND_INLINE;
	u32 npkts;
	u64 len;

	if (sw->status)
		return sw->status;
	switch (w->opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
		break;
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		if (!cnuas_ib_qp_connected(qp))
			return IB_WC_LOC_QP_OP_ERR;
		break;
	case IB_UVERBS_WR_SEND_WITH_INV:
		if (!rc)
			return IB_WC_LOC_QP_OP_ERR;
		break;
	case IB_UVERBS_WR_RDMA_READ:
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		if (!rc || inl)
			return IB_WC_LOC_QP_OP_ERR;
		break;
	case CNUAS_WR_FLUSH:
	case CNUAS_WR_ATOMIC_WRITE:
		/* IBA 1.5, RC only; the operands are in the WQE itself. */
		if (!CNUAS_IB_DEVICE_CAP_MPE || !rc || inl || w->num_sge)
			return IB_WC_LOC_QP_OP_ERR;
		if (w->opcode == CNUAS_WR_FLUSH &&
		    w->wr.flush.level == CNUAS_FLUSH_RANGE &&
		    w->wr.flush.length > U32_MAX)
			return IB_WC_LOC_LEN_ERR;
		break;
	default:
		return IB_WC_LOC_QP_OP_ERR;
	}
	sw->rd = cnuas_is_rd_op(w->opcode);
	len = inl ? w->inline_len :
	      cnuas_ib_sge_total((const struct cnuas_sge *)sw->data,
				 w->num_sge);
	if (len > CNUAS_IB_MAX_MSG_SZ ||
	    (!cnuas_ib_qp_connected(qp) && len > t->mtu))
		return IB_WC_LOC_LEN_ERR;
	if (w->opcode == CNUAS_WR_ATOMIC_WRITE)
		len = sizeof(u64);	/* the 8 bytes in the WQE */
	if (cnuas_is_atomic_op(w->opcode)) {
		if (len < sizeof(u64))
			return IB_WC_LOC_LEN_ERR;
		len = sizeof(u64);
		npkts = 1;
	} else {
		npkts = max_t(u32, 1, DIV_ROUND_UP((u32)len, t->mtu));
	}
	sw->len = len;
	sw->first_psn = t->req_psn;
	sw->last_psn = cnuas_psn_add(t->req_psn, npkts - 1);
	sw->resp_psn = t->req_psn;
	sw->state = CNUAS_SW_STARTED;
	return IB_WC_SUCCESS;
}

/*
 * REG_MR and LOCAL_INV of fast-registration MRs (mr-fast.c), BIND_MW and
 * LOCAL_INV of memory windows (mw.c), in SQ order: requests behind them
 * see the new state. REG_MR is for kernel QPs only (user space has no
 * fast-registration MRs).
 */
static enum ib_wc_status cnuas_req_local_op(struct cnuas_ib_qp *qp,
					    struct cnuas_ib_swqe *sw)
{
	struct cnuas_ib_pd *pd = to_cpd(qp->ibqp.pd);
	struct cnuas_send_wqe *w = &sw->wqe;
	enum ib_wc_status status;

	if (sw->status)
		return sw->status;
	if (!cnuas_ib_qp_connected(qp) ||
	    (qp->is_user && w->opcode == IB_WR_REG_MR))
		return IB_WC_LOC_QP_OP_ERR;
	if (w->opcode == IB_UVERBS_WR_BIND_MW)
		return cnuas_ib_mw_bind(qp, w);
	if (w->opcode == IB_WR_REG_MR) {
		status = cnuas_ib_mr_fast_reg(pd, w->wr.reg.key,
					      w->wr.reg.access);
		if (!status)
			cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_FAST_REG);
		return status;
	}
	if (cnuas_ib_mr_invalidate(pd, w->ex, qp->ibqp.qp_num))
		return IB_WC_LOC_PROT_ERR;
	cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_LOCAL_INV);
	return IB_WC_SUCCESS;
}

/* A WQE failed locally: it completes with @status, the QP fails. */
static void cnuas_req_local_error(struct cnuas_ib_qp *qp,
				  struct cnuas_ib_swqe *sw,
				  enum ib_wc_status status)
{
	sw->state = CNUAS_SW_DONE;
	sw->status = status;
	cnuas_stat_dbg_qp(qp, CNUAS_STAT_SEND_ERR,
			  "send WQE 0x%llx (opcode %u) fails: %s\n",
			  sw->wqe.wr_id, sw->wqe.opcode,
			  ib_wc_status_msg(status));
	cnuas_ib_tqp_fatal(qp, 0);
}

/* The RC opcode of packet [first][last] of a @wr message. */
static u8 cnuas_req_opcode_rc(u32 wr, bool first, bool last)
{
	static const u8 send[2][2] = {	/* [first][last] */
		{ CNUAS_OP_RC_SEND_MIDDLE, CNUAS_OP_RC_SEND_LAST },
		{ CNUAS_OP_RC_SEND_FIRST, CNUAS_OP_RC_SEND_ONLY },
	};
	static const u8 write[2][2] = {
		{ CNUAS_OP_RC_WRITE_MIDDLE, CNUAS_OP_RC_WRITE_LAST },
		{ CNUAS_OP_RC_WRITE_FIRST, CNUAS_OP_RC_WRITE_ONLY },
	};

	switch (wr) {
	case IB_UVERBS_WR_RDMA_READ:
		return CNUAS_OP_RC_READ_REQ;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		return CNUAS_OP_RC_CMP_SWAP;
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		return CNUAS_OP_RC_FETCH_ADD;
	case CNUAS_WR_FLUSH:
		return CNUAS_OP_RC_FLUSH;
	case CNUAS_WR_ATOMIC_WRITE:
		return CNUAS_OP_RC_ATOMIC_WRITE;
	case IB_UVERBS_WR_RDMA_WRITE:
		return write[first][last];
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		if (!last)
			return write[first][last];
		return first ? CNUAS_OP_RC_WRITE_ONLY_IMM :
			       CNUAS_OP_RC_WRITE_LAST_IMM;
	case IB_UVERBS_WR_SEND_WITH_IMM:
		if (!last)
			return send[first][last];
		return first ? CNUAS_OP_RC_SEND_ONLY_IMM :
			       CNUAS_OP_RC_SEND_LAST_IMM;
	case IB_UVERBS_WR_SEND_WITH_INV:
		if (!last)
			return send[first][last];
		return first ? CNUAS_OP_RC_SEND_ONLY_INV :
			       CNUAS_OP_RC_SEND_LAST_INV;
	default:
		return send[first][last];
	}
}

static u8 cnuas_req_opcode(struct cnuas_ib_qp *qp, u32 wr, bool first,
			   bool last)
{
	if (!cnuas_ib_qp_connected(qp))
		return wr == IB_UVERBS_WR_SEND_WITH_IMM ?
		       CNUAS_OP_UD_SEND_ONLY_IMM : CNUAS_OP_UD_SEND_ONLY;
	/* UC: SEND or WRITE (cnuas_req_start() let no other through). */
	if (qp->type == IB_QPT_UC)
		return CNUAS_OP_TRANSPORT_UC |
		       cnuas_req_opcode_rc(wr, first, last);
	return cnuas_req_opcode_rc(wr, first, last);
}

/* The extension headers of one request packet. */
static void cnuas_req_ehs(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *sw,
			  const struct cnuas_opcode *op, void *bth, u32 off)
{
	struct cnuas_send_wqe *w = &sw->wqe;
	void *p;

	p = cnuas_eh_ptr(op, bth, CNUAS_EH_DETH);
	if (p) {
		u32 qkey = w->wr.ud.remote_qkey;

		/* A Q_Key with the high bit set means the QP's own. */
		if (qkey & 0x80000000u)
			qkey = qp->t.qkey;
		cnuas_deth_build(p, qkey, qp->ibqp.qp_num);
	}
	p = cnuas_eh_ptr(op, bth, CNUAS_EH_FETH);
	if (p)
		cnuas_feth_build(p, w->wr.flush.type, w->wr.flush.level);
	p = cnuas_eh_ptr(op, bth, CNUAS_EH_RETH);
	if (p) {
		if (w->opcode == CNUAS_WR_FLUSH)
			/* The MR level names no range: length 0. */
			cnuas_reth_build(p, w->wr.flush.remote_addr,
					 w->wr.flush.rkey,
					 w->wr.flush.level == CNUAS_FLUSH_RANGE ?
					 (u32)w->wr.flush.length : 0);
		else if (w->opcode == CNUAS_WR_ATOMIC_WRITE)
			cnuas_reth_build(p, w->wr.atomic.remote_addr,
					 w->wr.atomic.rkey, sizeof(u64));
		else if (w->opcode == IB_UVERBS_WR_RDMA_READ)
			cnuas_reth_build(p, w->wr.rdma.remote_addr + off,
					 w->wr.rdma.rkey, sw->len - off);
		else
			cnuas_reth_build(p, w->wr.rdma.remote_addr,
					 w->wr.rdma.rkey, sw->len);
	}
	p = cnuas_eh_ptr(op, bth, CNUAS_EH_ATOMIC_ETH);
	if (p) {
		bool cas = w->opcode == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP;

		cnuas_atomic_eth_build(p, w->wr.atomic.remote_addr,
				       w->wr.atomic.rkey,
				       cas ? w->wr.atomic.swap :
					     w->wr.atomic.compare_add,
				       cas ? w->wr.atomic.compare_add : 0);
	}
	p = cnuas_eh_ptr(op, bth, CNUAS_EH_IMMDT);
	if (p)	/* already in network order */
		memcpy(p, &w->ex, sizeof(w->ex));
	p = cnuas_eh_ptr(op, bth, CNUAS_EH_IETH);
	if (p)
		((struct cnuas_ieth *)p)->rkey = cpu_to_be32(w->ex);
}

/*
 * Build and send the next packet of @sw. 0: sent (or lost on the way, as
 * on a wire); -EBUSY: queued as t.pending; -ENOMEM: try again later;
 * -EINVAL: the WQE failed locally.
 */
static int cnuas_req_packet(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *sw)
{
	struct cnuas_ib_pd *pd = to_cpd(qp->ibqp.pd);
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_send_wqe *w = &sw->wqe;
	bool rc = qp->type == IB_QPT_RC, conn = cnuas_ib_qp_connected(qp);
	struct cnuas_ib_ah *ah = NULL;
	const struct cnuas_ib_av *av;
	const struct cnuas_opcode *op;
	u32 off = t->req_off, plen = 0, psn = t->req_psn;
	bool first = true, last = true, ackreq, se;
	bool aw = w->opcode == CNUAS_WR_ATOMIC_WRITE;
	void *bth, *payload;
	struct sk_buff *skb;
	u8 opc;
	int err;

	if (sw->rd) {
		/* Requests carry no payload; a READ resumes at @off. */
	} else {
		plen = min(sw->len - off, t->mtu);
		first = off == 0;
		last = off + plen == sw->len;
	}
	opc = cnuas_req_opcode(qp, w->opcode, first, last);
	op = &cnuas_opcodes[opc];

	if (conn) {
		av = &qp->attr.av;
	} else {
		ah = cnuas_ib_ah_get(pd, w->wr.ud.ah_num);
		if (!ah) {
			cnuas_req_local_error(qp, sw, IB_WC_LOC_QP_OP_ERR);
			return -EINVAL;
		}
		av = &ah->av;
	}
	if (plen && !aw && !(w->send_flags & CNUAS_SEND_INLINE)) {
		skb = cnuas_ib_pkt_from_mr(qp->cdev,
					   &qp->t.skb_pools[CNUAS_SKB_REQ], av,
					   op->hdr_len, &bth, pd,
					   (const struct cnuas_sge *)sw->data,
					   w->num_sge, off, plen, 0);
		err = IS_ERR(skb) ? PTR_ERR(skb) : 0;
		if (err && err != -ENOMEM) {
			if (ah)
				cnuas_ib_ah_put(ah);
			cnuas_req_local_error(qp, sw, err == -EMSGSIZE ?
					      IB_WC_LOC_LEN_ERR :
					      IB_WC_LOC_PROT_ERR);
			return -EINVAL;
		}
		if (err)
			skb = NULL;
	} else {
		skb = cnuas_ib_pkt_alloc(qp->cdev,
					 &qp->t.skb_pools[CNUAS_SKB_REQ], av,
					 op->hdr_len, plen, &bth, &payload);
		/* Inline data, or the 8 bytes of an ATOMIC WRITE. */
		if (skb && plen)
			memcpy(payload, aw ? (void *)&w->wr.atomic.compare_add :
				       sw->data + off, plen);
	}
	if (!skb) {
		if (ah)
			cnuas_ib_ah_put(ah);
		return -ENOMEM;
	}

	/* AckReq ends a message, and comes twice per window at least. */
	ackreq = rc && (last || t->since_ackreq + 1 >=
			min_t(u32, CNUAS_IB_ACKREQ_EVERY, t->cwnd / 2));
	t->since_ackreq = ackreq ? 0 : t->since_ackreq + 1;
	se = last && (w->send_flags & CNUAS_SEND_SOLICITED) &&
	     (op->flags & (CNUAS_OPF_SEND | CNUAS_OPF_IMM));
	cnuas_bth_build(bth, opc, se, cnuas_ib_pad(plen), cnuas_ib_tx_pkey(qp, w),
			conn ? t->dest_qpn : w->wr.ud.remote_qpn, ackreq, psn);
	cnuas_req_ehs(qp, sw, op, bth, off);
	cnuas_ib_pkt_seal(qp->cdev, skb);
	if (ah)
		cnuas_ib_ah_put(ah);

	if (op->flags & (CNUAS_OPF_WRITE | CNUAS_OPF_READ))
		cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_RDMA_SENDS);
	if (sw->rd) {
		t->req_psn = cnuas_psn_add(sw->last_psn, 1);
		last = true;
	} else {
		t->req_psn = cnuas_psn_add(psn, 1);
		t->req_off += plen;
	}
	if (rc && t->una == t->psn_hi)	/* the timer starts from now */
		t->progress_j = jiffies;
	if (cnuas_psn_diff(t->req_psn, t->psn_hi) > 0) {
		/* First transmission: time one at a time (Karn). */
		if (rc && !t->rtt_timing && psn == t->psn_hi) {
			t->rtt_timing = true;
			t->rtt_psn = psn;
			t->rtt_start = jiffies;
		}
		t->psn_hi = t->req_psn;
	}
	if (last) {
		t->req_idx++;
		t->req_off = 0;
		if (!rc)	/* UC, UD: complete once sent */
			sw->state = CNUAS_SW_DONE;
	}
	return cnuas_ib_tqp_xmit(qp, skb, true) == -EBUSY ? -EBUSY : 0;
}

/* Have the timer fire by retry_due at the latest (none once dying). */
static void cnuas_req_timer_catch_up(struct cnuas_ib_tqp *t)
{
	if (test_bit(CNUAS_TQP_DYING, &t->flags))
		return;
	if (!timer_pending(&t->retry_timer) ||
	    time_before(t->retry_due, READ_ONCE(t->retry_timer.expires)))
		mod_timer(&t->retry_timer, t->retry_due);
}

/*
 * Move the resend deadline to one RTO from now. The timer itself is only
 * moved when the deadline comes earlier than it: it stays armed while the
 * QP idles between messages, and one that fires before the deadline goes
 * again (cnuas_ib_req_retry_timeout()). Setting it for every message and
 * deleting it at every ACK cost a ping-pong 4% of its instructions.
 */
void cnuas_ib_req_arm_timer(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	unsigned long j = t->timeout_j;

	if (t->rto_j && t->rto_j < j)
		j = t->rto_j;
	if (!j)
		return;
	WRITE_ONCE(t->retry_due, jiffies + j);
	cnuas_req_timer_catch_up(t);
}

int cnuas_ib_req_run(struct cnuas_ib_qp *qp, int budget)
{
	struct cnuas_ib_tqp *t = &qp->t;
	bool rc = qp->type == IB_QPT_RC;
	u32 max_rd = max_t(u32, 1, t->max_rd_atomic);
	bool local_done = false, was_idle;
	int sent = 0, err;

	if (!t->swqe || t->rnr_wait)
		return 0;
	if (t->state != IB_QPS_RTS && t->state != IB_QPS_SQD)
		return 0;
	cnuas_req_fetch(qp);
	was_idle = t->una == t->psn_hi;
	while (sent < budget && t->req_idx != t->sq_fetch &&
	       t->state != IB_QPS_ERR) {
		struct cnuas_ib_swqe *sw = cnuas_ib_swqe_at(qp, t->req_idx);
		enum ib_wc_status status;

		if (sw->state == CNUAS_SW_NEW) {
			/* SQD: finish started messages, start none. */
			if (t->state == IB_QPS_SQD)
				break;
			if ((sw->wqe.send_flags & CNUAS_SEND_FENCE) && t->rd_out)
				break;
			if (cnuas_is_rd_op(sw->wqe.opcode) && t->rd_out >= max_rd)
				break;
			if (cnuas_is_local_op(sw->wqe.opcode)) {
				status = cnuas_req_local_op(qp, sw);
				if (status) {
					cnuas_req_local_error(qp, sw, status);
					break;
				}
				sw->state = CNUAS_SW_DONE;
				t->req_idx++;
				local_done = true;
				continue;
			}
			status = cnuas_req_start(qp, sw);
			if (status) {
				cnuas_req_local_error(qp, sw, status);
				break;
			}
			if (sw->rd)
				t->rd_out++;
		} else if (sw->state == CNUAS_SW_DONE &&
			   cnuas_is_local_op(sw->wqe.opcode)) {
			t->req_idx++;	/* met again after a rewind */
			continue;
		}
		if (rc && cnuas_psn_diff(t->req_psn, t->una) >= t->cwnd)
			break;
		err = cnuas_req_packet(qp, sw);
		if (err == -ENOMEM)
			cnuas_ib_tqp_schedule(qp);
		if (err && err != -EBUSY)
			break;
		sent++;
		if (err)
			break;
	}
	/*
	 * The timer runs while anything is unacknowledged (see comp.c),
	 * from the first send after an idle spell.
	 */
	if (rc && t->una != t->psn_hi &&
	    (was_idle || !timer_pending(&t->retry_timer)))
		cnuas_ib_req_arm_timer(qp);
	/* UC, UD complete once sent; a local op when it is the oldest. */
	if (!rc || local_done)
		cnuas_ib_comp_advance(qp);
	return sent;
}

/*
 * Go on sending from @psn, anywhere in [una, psn_hi]: back (a resend)
 * or forward (ACKs of packets sent before a rewind came in: those need
 * no resend).
 */
void cnuas_ib_req_rewind(struct cnuas_ib_qp *qp, u32 psn)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_swqe *sw = NULL;
	u32 idx;
	int d;

	if (!t->swqe || qp->type != IB_QPT_RC ||
	    cnuas_psn_diff(psn, t->psn_hi) > 0)
		return;
	if (cnuas_psn_diff(psn, t->una) < 0)
		psn = t->una;
	for (idx = qp->sq.index; idx != t->sq_fetch; idx++) {
		sw = cnuas_ib_swqe_at(qp, idx);
		if (sw->state == CNUAS_SW_NEW)
			break;
		if (sw->state == CNUAS_SW_STARTED &&
		    cnuas_psn_diff(psn, sw->last_psn) <= 0)
			break;
	}
	t->since_ackreq = 0;
	t->rtt_timing = false;
	if (idx == t->sq_fetch || sw->state == CNUAS_SW_NEW) {
		/* Past every started WQE: @psn is the next new one's. */
		t->req_idx = idx;
		t->req_psn = psn;
		t->req_off = 0;
		return;
	}
	d = max(0, cnuas_psn_diff(psn, sw->first_psn));
	if (cnuas_is_atomic_op(sw->wqe.opcode))
		d = 0;
	t->req_idx = idx;
	t->req_psn = cnuas_psn_add(sw->first_psn, d);
	/* A READ is asked again for the part not yet answered. */
	t->req_off = sw->rd && d == 0 ? 0 : d * t->mtu;
	if (sw->rd)
		sw->resp_psn = t->req_psn;
}

void cnuas_ib_req_retry_timeout(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_swqe *sw;

	if (!t->swqe || qp->type != IB_QPT_RC || t->una == t->psn_hi ||
	    t->rnr_wait)
		return;
	/* Early: ACKs moved the deadline on since the timer was set. */
	if (time_before(jiffies, t->retry_due)) {
		cnuas_req_timer_catch_up(t);
		return;
	}
	if (timer_pending(&t->retry_timer))
		return;
	/*
	 * Our own TX ring is full (we are parked): the frames the peer
	 * would answer may not even have left. Not the path's fault: wait.
	 */
	if (t->pending) {
		cnuas_ib_req_arm_timer(qp);
		return;
	}
	/* Back off; a retry counts once per ACK timeout without progress. */
	if (t->rto_j)
		t->rto_j = min(t->rto_j * 2, t->timeout_j);
	if (time_before(jiffies, t->progress_j + t->timeout_j)) {
		cnuas_dbg_qp(qp, "no ACK for PSN %u within %u ms: resend from it\n",
			     t->una, jiffies_to_msecs(t->rto_j));
		goto resend;
	}
	t->progress_j = jiffies;
	if (!t->retry_left) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_RETRY_EXCEEDED,
				  "no ACK for PSN %u after %u retries: the WQE fails\n",
				  t->una, t->retry_cnt);
		if (qp->sq.index == t->sq_fetch)
			return;
		sw = cnuas_ib_swqe_at(qp, qp->sq.index);
		sw->state = CNUAS_SW_DONE;
		sw->status = IB_WC_RETRY_EXC_ERR;
		cnuas_ib_comp_advance(qp);
		return;
	}
	t->retry_left--;
	cnuas_stat_dbg_qp(qp, CNUAS_STAT_COMPLETER_RETRY,
			  "ACK timeout (%u ms) for PSN %u: resend, %u retries left\n",
			  jiffies_to_msecs(t->timeout_j), t->una, t->retry_left);
resend:
	/* The peer (or the path) is slow: resend little, grow back. */
	t->ssthresh = max_t(u32, CNUAS_IB_MIN_WINDOW, t->cwnd / 2);
	t->cwnd = CNUAS_IB_MIN_WINDOW;
	t->cwnd_acked = 0;
	cnuas_ib_req_rewind(qp, t->una);
	cnuas_ib_req_arm_timer(qp);
}

/* ERR: every send WQE, copied or still in the ring, completes flushed. */
void cnuas_ib_req_flush(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if (!t->swqe)
		return;
	cnuas_req_fetch(qp);
	while (qp->sq.index != t->sq_fetch) {
		struct cnuas_ib_swqe *sw = cnuas_ib_swqe_at(qp, qp->sq.index);

		if (sw->state == CNUAS_SW_DONE && sw->status)
			cnuas_ib_comp_post(qp, sw, sw->status);
		else
			cnuas_ib_comp_post(qp, sw, IB_WC_WR_FLUSH_ERR);
		cnuas_ib_queue_consume(&qp->sq, 1);
	}
	t->req_idx = t->sq_fetch;
	t->req_off = 0;
	t->rd_out = 0;
	t->rnr_wait = false;
	t->una = t->req_psn;
	t->psn_hi = t->req_psn;
}

/*
 * The doorbell hint of a user SQ (uapi/cnuas-abi.h), after a run: the
 * provider may skip the doorbell while RC packets are in flight, since
 * their ACKs, or the resend timer, bring us back to fetch. Otherwise it
 * must ring; WQEs published before it could see that are looked for here.
 */
bool cnuas_ib_req_doorbell_hint(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_queue *q = &qp->sq;
	bool skip;

	if (!qp->is_user || !q->hdr || !t->swqe)
		return false;
	skip = qp->type == IB_QPT_RC && t->state == IB_QPS_RTS &&
	       t->una != t->psn_hi;
	if (READ_ONCE(q->hdr->db_skip) != skip)
		WRITE_ONCE(q->hdr->db_skip, skip);
	if (skip)
		return false;
	/* Pairs with the provider's barrier between prod and db_skip. */
	smp_mb();
	/* Only where a run takes them (RTS sends, ERR flushes). */
	return (t->state == IB_QPS_RTS || t->state == IB_QPS_ERR) &&
	       q->index + cnuas_ib_queue_avail(q) != t->sq_fetch;
}
