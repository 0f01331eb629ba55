// SPDX-License-Identifier: GPL-2.0
/*
 * The responder: requests that arrive for a QP. In-order packets are
 * executed (SEND into receive WQEs, WRITE into MRs, atomics), READs are
 * queued and answered from the QP's work item, ACKs are coalesced. Out of
 * order packets get one sequence NAK; duplicates are answered again (a
 * READ re-read, an atomic replayed from its stored result, never
 * re-executed). FLUSH and ATOMIC WRITE (IBA 1.5) are served much as a
 * READ of nothing and a one-packet WRITE. Runs with the QP's transport
 * lock held.
 *
 * UC shares the SEND and WRITE execution but answers nothing: a packet
 * lost loses its message, and the responder takes the sequence up again
 * at the next FIRST or ONLY packet (cnuas_resp_uc()).
 */
#include <linux/skbuff.h>
#include <linux/slab.h>

#include "cnuas_ib.h"
#include "wire.h"

#define CNUAS_GSI_QKEY		0x80010000u
#define CNUAS_GRH_LEN		40
#define CNUAS_ACK_SYNDROME	(CNUAS_AETH_TYPE_ACK | CNUAS_AETH_CREDITS_NONE)

enum {
	CNUAS_RES_READ = 1,
	CNUAS_RES_ATOMIC,
	CNUAS_RES_FLUSH,	/* answered as a READ of length 0 */
};

/* One READ, atomic or FLUSH request, kept for duplicates. */
struct cnuas_ib_res {
	u8 kind;
	bool active;			/* responses still to send */
	bool replay;			/* answering a duplicate */
	u32 psn;
	u32 last_psn;
	u32 next_psn;			/* READ: next response to send */
	u64 va;
	u32 rkey;			/* READ: the key the peer presented */
	u32 len;
	u64 orig;			/* atomic: the value before */
};

int cnuas_ib_resp_init(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;

	t->rwqe = kmalloc(sizeof(*t->rwqe), GFP_KERNEL);
	if (!t->rwqe)
		return -ENOMEM;
	if (qp->type == IB_QPT_RC) {
		t->res = kcalloc(CNUAS_IB_MAX_QP_RD_ATOM, sizeof(*t->res),
				 GFP_KERNEL);
		if (!t->res) {
			kfree(t->rwqe);
			t->rwqe = NULL;
			return -ENOMEM;
		}
	}
	t->res_num = 1;
	return 0;
}

void cnuas_ib_resp_cleanup(struct cnuas_ib_qp *qp)
{
	kfree(qp->t.res);
	qp->t.res = NULL;
	kfree(qp->t.rwqe);
	qp->t.rwqe = NULL;
}

void cnuas_ib_resp_reset(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;

	t->msn = 0;
	t->nak_sent = false;
	t->uc_drop = false;
	t->resp_op = 0;
	t->rwqe_valid = false;
	t->recv_off = 0;
	t->wr_left = 0;
	t->wr_len = 0;
	t->ack_pkts = 0;
	cnuas_ib_resp_hold_reset(t);
	t->res_next = 0;
	t->res_cur = 0;
	/* 0 serves no READ or atomic: each is NAKed as too many. */
	t->res_num = min_t(u32, t->max_dest_rd_atomic, CNUAS_IB_MAX_QP_RD_ATOM);
	if (t->res)
		memset(t->res, 0, CNUAS_IB_MAX_QP_RD_ATOM * sizeof(*t->res));
}

static bool cnuas_resp_more(struct cnuas_ib_qp *qp)
{
	/* In ->rx: wait for ->rx_batch_end's doorbell if it comes. */
	return in_serving_softirq() ? READ_ONCE(qp->cdev->tdev.rx_batching) :
				      true;
}

/* Skip finished history slots: is a READ/atomic answer still queued? */
static bool cnuas_resp_busy(struct cnuas_ib_tqp *t)
{
	if (!t->res)
		return false;
	while (t->res_cur != t->res_next &&
	       !t->res[t->res_cur % t->res_num].active)
		t->res_cur++;
	return t->res_cur != t->res_next;
}

/*
 * An ACK-type packet (ACK, NAK, ATOMIC ACK) for @psn. -EAGAIN: not sent
 * (a frame already waits for ring room, or no memory).
 */
static int cnuas_resp_ack_pkt(struct cnuas_ib_qp *qp, u8 opc, u8 syn,
			      u32 psn, const u64 *orig)
{
	const struct cnuas_opcode *op = &cnuas_opcodes[opc];
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_atomic_ack *ack;
	void *bth, *payload;
	struct sk_buff *skb;

	if (t->pending)
		return -EAGAIN;
	skb = cnuas_ib_pkt_alloc(qp->cdev, &t->skb_pools[CNUAS_SKB_RESP],
				 &qp->attr.av, op->hdr_len, 0, &bth, &payload);
	if (!skb)
		return -EAGAIN;
	cnuas_bth_build(bth, opc, false, 0, cnuas_ib_tx_pkey(qp, NULL),
			t->dest_qpn, false, psn);
	cnuas_aeth_build(cnuas_eh_ptr(op, bth, CNUAS_EH_AETH), syn, t->msn);
	ack = cnuas_eh_ptr(op, bth, CNUAS_EH_ATOMIC_ACK);
	if (ack)
		ack->orig = cpu_to_be64(*orig);
	cnuas_ib_pkt_seal(qp->cdev, skb);
	cnuas_ib_tqp_xmit(qp, skb, cnuas_resp_more(qp));
	return 0;
}

/* ACK everything up to the expected PSN. */
bool cnuas_ib_resp_send_ack(struct cnuas_ib_qp *qp, bool more)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if (cnuas_resp_ack_pkt(qp, CNUAS_OP_RC_ACK, CNUAS_ACK_SYNDROME,
			       cnuas_psn_add(t->epsn, -1), NULL)) {
		set_bit(CNUAS_TQP_SEND_ACK, &t->flags);
		return false;
	}
	t->ack_pkts = 0;
	return true;
}

/*
 * The QP's runner sends the ACK (cnuas_ib_resp_ack_run()): at the end of
 * the RX batch, so one ACK covers all the batch's packets, and behind
 * queued READ responses, which carry PSN order. @may_hold: it may wait
 * for the QP's next request (see cnuas_ib_resp_ack_run()).
 */
static void cnuas_resp_ack_now(struct cnuas_ib_qp *qp, bool may_hold)
{
	if (!may_hold)
		set_bit(CNUAS_TQP_ACK_NOW, &qp->t.flags);
	set_bit(CNUAS_TQP_SEND_ACK, &qp->t.flags);
	cnuas_ib_tqp_schedule(qp);
}

static void cnuas_resp_ack_maybe(struct cnuas_ib_qp *qp,
				 struct cnuas_ib_rxp *p)
{
	bool ackreq = cnuas_bth_ackreq(p->bth);
	bool only = (p->op->flags & CNUAS_OPF_MIDDLE_MASK) ==
		    CNUAS_OPF_MIDDLE_MASK;

	if (qp->type != IB_QPT_RC)
		return;
	if (++qp->t.ack_pkts < CNUAS_IB_ACK_EVERY && !ackreq) {
		cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_ACK_DEFERRED);
		return;
	}
	/* Only the ACK of a one-packet message may wait (ack_hold). */
	cnuas_resp_ack_now(qp, ackreq && only);
}

/* NAK the expected PSN with @syn (RC); fatal ones move the QP to error. */
static void cnuas_resp_nak(struct cnuas_ib_qp *qp, u8 syn)
{
	if (qp->type != IB_QPT_RC)
		return;
	cnuas_dbg_qp(qp, "%s sent for PSN %u (syndrome 0x%02x)\n",
		     cnuas_ib_syndrome_name(syn), qp->t.epsn, syn);
	cnuas_resp_ack_pkt(qp, CNUAS_OP_RC_ACK, syn, qp->t.epsn, NULL);
}

/*
 * UC: the message of @p is lost (a packet of it missing, no receive WQE,
 * a request refused): its other packets are dropped until a FIRST or
 * ONLY packet starts the next one. A receive WQE it took serves that one.
 */
static void cnuas_resp_uc_drop(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if (!t->uc_drop)
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_UC_MSG_DROPPED,
				  "PSN %u (opcode 0x%02x): message dropped\n",
				  p->psn, p->opcode);
	t->uc_drop = true;
	t->resp_op = 0;
}

/* A local error (receive WQE): the QP fails; RC NAKs the request. */
static void cnuas_resp_fail(struct cnuas_ib_qp *qp, u8 code,
			    enum ib_event_type ev)
{
	cnuas_resp_nak(qp, CNUAS_AETH_TYPE_NAK | code);
	cnuas_ib_tqp_fatal(qp, ev);
}

/*
 * A request the responder refuses (key, rights, length): RC NAKs it and
 * the QP fails. UC, which answers nothing, drops the message and goes on,
 * as rxe and the IBA's UC responder do.
 */
static void cnuas_resp_reject(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p,
			      u8 code, enum ib_event_type ev)
{
	if (qp->type == IB_QPT_UC)
		cnuas_resp_uc_drop(qp, p);
	else
		cnuas_resp_fail(qp, code, ev);
}

/*
 * The QP's own remote rights come before any MR's: a request the QP does
 * not enable is a remote access error whatever the key (IBA, as rxe and
 * mlx5 do).
 */
static bool cnuas_resp_qp_allows(struct cnuas_ib_qp *qp,
				 struct cnuas_ib_rxp *p, int right)
{
	if (likely(qp->t.access & right))
		return true;
	cnuas_dbg_qp(qp, "PSN %u: the QP's access flags 0x%x lack 0x%x\n",
		     p->psn, qp->t.access, right);
	cnuas_resp_reject(qp, p, CNUAS_AETH_NAK_ACCESS, IB_EVENT_QP_ACCESS_ERR);
	return false;
}

/* No receive WQE: RC asks the requester to wait, UC loses the message. */
static void cnuas_resp_rnr(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	if (qp->type == IB_QPT_UC) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_NO_RECV,
				  "UC PSN %u: no receive WQE posted\n", p->psn);
		cnuas_resp_uc_drop(qp, p);
		return;
	}
	cnuas_stat_dbg_qp(qp, CNUAS_STAT_SEND_RNR_ERR,
			  "PSN %u: no receive WQE posted\n", qp->t.epsn);
	cnuas_resp_nak(qp, CNUAS_AETH_TYPE_RNR | qp->t.min_rnr_timer);
}

/* Complete the current receive WQE of an RC QP. */
static void cnuas_resp_recv_done(struct cnuas_ib_qp *qp,
				 struct cnuas_ib_rxp *p,
				 enum ib_wc_status status, u32 opcode,
				 u32 byte_len)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_cqe cqe = {};
	struct cnuas_immdt *imm;
	struct cnuas_ieth *ieth;

	cqe.wr_id = t->rwqe->wr_id;
	cqe.status = status;
	cqe.opcode = opcode;
	cqe.byte_len = byte_len;
	cqe.qp_num = qp->ibqp.qp_num;
	cqe.src_qp = t->dest_qpn;
	cqe.port_num = 1;
	cqe.vlan_id = 0xffff;
	imm = p ? cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_IMMDT) : NULL;
	if (imm && !status) {
		cqe.wc_flags |= CNUAS_CQE_WITH_IMM;
		memcpy(&cqe.ex, &imm->imm, sizeof(cqe.ex));
	}
	ieth = p ? cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_IETH) : NULL;
	if (ieth && !status) {
		cqe.wc_flags |= CNUAS_CQE_WITH_INV;
		cqe.ex = cnuas_ieth_rkey(ieth);
	}
	t->rwqe_valid = false;
	cnuas_ib_cq_post(qp->rcq, &cqe, p && cnuas_bth_se(p->bth));
}

/*
 * The peer released @rkey with a SEND with Invalidate, which it sends once
 * it has what it read through the key (nvmet, after the READ it needed):
 * a replay of an earlier READ through the key, answering a retransmission
 * that crossed the original responses, is stale. It ends unanswered; met
 * with the key gone it would NAK and fail a connection that lost nothing.
 * A duplicate that comes after the invalidation is still refused.
 */
static void cnuas_resp_end_stale_replays(struct cnuas_ib_qp *qp, u32 rkey)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u32 i;

	for (i = 0; t->res && i < t->res_num; i++) {
		struct cnuas_ib_res *r = &t->res[i];

		if (!r->active || !r->replay || r->kind != CNUAS_RES_READ ||
		    r->rkey != rkey)
			continue;
		cnuas_dbg_qp(qp, "READ replay PSN %u: rkey 0x%x released: replay ends\n",
			     r->next_psn, rkey);
		r->active = false;
	}
}

/*
 * Take the next receive WQE into t.rwqe. A malformed one (-EINVAL) was
 * consumed: it completes in error and the QP fails. false: none to use.
 */
static bool cnuas_resp_take_rwqe(struct cnuas_ib_qp *qp,
				 struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;
	int err = cnuas_ib_recv_wqe_pop(qp, t->rwqe);

	if (!err) {
		t->rwqe_valid = true;
		return true;
	}
	if (err == -ENOENT) {
		cnuas_resp_rnr(qp, p);
		return false;
	}
	cnuas_dbg_qp(qp, "PSN %u: malformed receive WQE 0x%llx\n", t->epsn,
		     t->rwqe->wr_id);
	t->rwqe_valid = true;
	cnuas_resp_recv_done(qp, NULL, IB_WC_LOC_QP_OP_ERR, IB_WC_RECV, 0);
	cnuas_resp_fail(qp, CNUAS_AETH_NAK_OPERR, IB_EVENT_QP_FATAL);
	return false;
}

static void cnuas_resp_send(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u16 flags = p->op->flags;
	int err;

	if (flags & CNUAS_OPF_FIRST) {
		if (!t->rwqe_valid && !cnuas_resp_take_rwqe(qp, p))
			return;
		t->recv_off = 0;
		t->resp_op = CNUAS_OPF_SEND;
	}
	if (p->paylen) {
		err = cnuas_ib_sge_copy(to_cpd(qp->ibqp.pd), t->rwqe->sge,
					t->rwqe->num_sge, t->recv_off,
					p->payload, p->paylen, CNUAS_IB_TO_MR,
					IB_ACCESS_LOCAL_WRITE);
		if (err) {
			bool len = err == -EMSGSIZE;

			cnuas_dbg_qp(qp, "SEND PSN %u: %u bytes at offset %u: %s\n",
				     p->psn, p->paylen, t->recv_off,
				     len ? "receive WQE too short" :
				     "bad lkey, range or access in the receive WQE");
			cnuas_resp_recv_done(qp, NULL, len ? IB_WC_LOC_LEN_ERR :
					     IB_WC_LOC_PROT_ERR, IB_WC_RECV,
					     t->recv_off);
			cnuas_resp_fail(qp, len ? CNUAS_AETH_NAK_INVALID :
					CNUAS_AETH_NAK_OPERR, 0);
			return;
		}
		t->recv_off += p->paylen;
	}
	if ((flags & CNUAS_OPF_INV) && (flags & CNUAS_OPF_LAST) &&
	    cnuas_ib_mr_invalidate(to_cpd(qp->ibqp.pd),
				   cnuas_ieth_rkey(cnuas_eh_ptr(p->op, p->bth,
								CNUAS_EH_IETH)),
				   qp->ibqp.qp_num)) {
		/*
		 * Only a fast-registration MR of the QP's PD, or a type 2
		 * window bound for this QP, can be invalidated remotely:
		 * anything else is an invalid request (IBA 10.6.7.2.2).
		 */
		cnuas_dbg_qp(qp, "SEND with Invalidate PSN %u: rkey 0x%x cannot be invalidated\n",
			     p->psn, cnuas_ieth_rkey(cnuas_eh_ptr(p->op, p->bth,
								  CNUAS_EH_IETH)));
		cnuas_resp_recv_done(qp, NULL, IB_WC_REM_INV_REQ_ERR,
				     IB_WC_RECV, t->recv_off);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_INVALID,
				IB_EVENT_QP_REQ_ERR);
		return;
	}
	if ((flags & CNUAS_OPF_INV) && (flags & CNUAS_OPF_LAST)) {
		cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_REMOTE_INV);
		cnuas_resp_end_stale_replays(qp,
					     cnuas_ieth_rkey(cnuas_eh_ptr(p->op, p->bth,
									  CNUAS_EH_IETH)));
	}
	t->epsn = cnuas_psn_add(t->epsn, 1);
	if (flags & CNUAS_OPF_LAST) {
		cnuas_resp_recv_done(qp, p, IB_WC_SUCCESS, IB_WC_RECV,
				     t->recv_off);
		t->resp_op = 0;
		t->msn = cnuas_psn_add(t->msn, 1);
	}
	cnuas_resp_ack_maybe(qp, p);
}

static void cnuas_resp_write(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_pd *pd = to_cpd(qp->ibqp.pd);
	struct cnuas_ib_tqp *t = &qp->t;
	u16 flags = p->op->flags;
	struct cnuas_ib_mr *mr;

	/* WRITE with immediate: no receive WQE, no data taken (RNR). */
	if ((flags & CNUAS_OPF_RECV) && !t->rwqe_valid &&
	    !cnuas_resp_take_rwqe(qp, p))
		return;
	if (flags & CNUAS_OPF_FIRST) {
		struct cnuas_reth *reth = cnuas_eh_ptr(p->op, p->bth,
						       CNUAS_EH_RETH);
		u32 len = cnuas_reth_len(reth);

		if (!cnuas_resp_qp_allows(qp, p, IB_ACCESS_REMOTE_WRITE))
			return;
		if (len > CNUAS_IB_MAX_MSG_SZ) {
			cnuas_dbg_qp(qp, "WRITE PSN %u: length %u over the maximum message\n",
				     p->psn, len);
			cnuas_resp_reject(qp, p, CNUAS_AETH_NAK_INVALID,
					  IB_EVENT_QP_REQ_ERR);
			return;
		}
		if (len) {
			mr = cnuas_ib_mr_get_rkey(pd, cnuas_reth_rkey(reth),
						  cnuas_reth_va(reth), len,
						  IB_ACCESS_REMOTE_WRITE,
						  qp->ibqp.qp_num);
			if (!mr) {
				cnuas_dbg_qp(qp, "WRITE PSN %u rkey 0x%x va 0x%llx len %u: %s\n",
					     p->psn, cnuas_reth_rkey(reth),
					     cnuas_reth_va(reth), len,
					     cnuas_ib_rkey_why(pd,
							       cnuas_reth_rkey(reth),
							       cnuas_reth_va(reth),
							       len,
							       IB_ACCESS_REMOTE_WRITE,
							       qp->ibqp.qp_num));
				cnuas_resp_reject(qp, p, CNUAS_AETH_NAK_ACCESS,
						  IB_EVENT_QP_ACCESS_ERR);
				return;
			}
			cnuas_ib_mr_put(mr);
		}
		t->wr_rkey = cnuas_reth_rkey(reth);
		t->wr_va = cnuas_reth_va(reth);
		t->wr_left = len;
		t->wr_len = len;
		t->resp_op = CNUAS_OPF_WRITE;
		cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_RDMA_RECVS);
	}
	if (p->paylen > t->wr_left ||
	    ((flags & CNUAS_OPF_LAST) && p->paylen != t->wr_left)) {
		cnuas_dbg_qp(qp, "WRITE PSN %u: %u payload bytes, %u left of the message\n",
			     p->psn, p->paylen, t->wr_left);
		cnuas_resp_reject(qp, p, CNUAS_AETH_NAK_INVALID,
				  IB_EVENT_QP_REQ_ERR);
		return;
	}
	if (p->paylen) {
		/* Looked up again: the MR may be gone since the FIRST. */
		mr = cnuas_ib_mr_get_rkey(pd, t->wr_rkey, t->wr_va, p->paylen,
					  IB_ACCESS_REMOTE_WRITE,
					  qp->ibqp.qp_num);
		/* A revoked DMA-BUF MR fails its copy like a lookup. */
		if (mr && cnuas_ib_mr_copy(mr, t->wr_va, p->payload, p->paylen,
					   CNUAS_IB_TO_MR)) {
			cnuas_ib_mr_put(mr);
			mr = NULL;
		}
		if (!mr) {
			cnuas_dbg_qp(qp, "WRITE PSN %u rkey 0x%x va 0x%llx len %u: %s\n",
				     p->psn, t->wr_rkey, t->wr_va, p->paylen,
				     cnuas_ib_rkey_why(pd, t->wr_rkey, t->wr_va,
						       p->paylen,
						       IB_ACCESS_REMOTE_WRITE,
						       qp->ibqp.qp_num));
			cnuas_resp_reject(qp, p, CNUAS_AETH_NAK_ACCESS,
					  IB_EVENT_QP_ACCESS_ERR);
			return;
		}
		cnuas_ib_mr_put(mr);
		t->wr_va += p->paylen;
		t->wr_left -= p->paylen;
	}
	t->epsn = cnuas_psn_add(t->epsn, 1);
	if (flags & CNUAS_OPF_LAST) {
		t->resp_op = 0;
		t->msn = cnuas_psn_add(t->msn, 1);
		if (flags & CNUAS_OPF_RECV)
			cnuas_resp_recv_done(qp, p, IB_WC_SUCCESS,
					     IB_WC_RECV_RDMA_WITH_IMM,
					     t->wr_len);
	}
	cnuas_resp_ack_maybe(qp, p);
}

/*
 * A history slot for a new READ/atomic/FLUSH @what. All in use means more
 * than max_dest_rd_atomic outstanding: NAK invalid request, NULL.
 *
 * A requester keeps at most max_rd_atomic of them incomplete and
 * completes them in order, so a new one while the history is full proves
 * it has the oldest's answer. If the oldest is being answered again (a
 * retransmission that crossed the original responses, which completed
 * it), that replay is stale: it ends unanswered and frees its slot. A
 * first answer still owed means a requester over its limit.
 */
static struct cnuas_ib_res *cnuas_resp_res_alloc(struct cnuas_ib_qp *qp,
						 struct cnuas_ib_rxp *p,
						 const char *what)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_res *r;

	while (cnuas_resp_busy(t) && t->res_next - t->res_cur >= t->res_num) {
		r = &t->res[t->res_cur % t->res_num];
		if (!r->replay)
			break;
		cnuas_dbg_qp(qp, "%s PSN %u: replay of PSN %u is stale: it ends\n",
			     what, p->psn, r->psn);
		r->active = false;
	}
	if (t->res_next - t->res_cur >= t->res_num) {
		cnuas_dbg_qp(qp, "%s PSN %u: more than %u READ/atomic requests outstanding\n",
			     what, p->psn, t->res_num);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_INVALID, IB_EVENT_QP_REQ_ERR);
		return NULL;
	}
	r = &t->res[t->res_next % t->res_num];
	t->res_next++;
	memset(r, 0, sizeof(*r));
	return r;
}

static void cnuas_resp_read(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_reth *reth = cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_RETH);
	struct cnuas_ib_tqp *t = &qp->t;
	u32 len = cnuas_reth_len(reth), npkts;
	struct cnuas_ib_res *r;
	struct cnuas_ib_mr *mr;

	if (!cnuas_resp_qp_allows(qp, p, IB_ACCESS_REMOTE_READ))
		return;
	if (len > CNUAS_IB_MAX_MSG_SZ) {
		cnuas_dbg_qp(qp, "READ PSN %u: length %u over the maximum message\n",
			     p->psn, len);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_INVALID, IB_EVENT_QP_REQ_ERR);
		return;
	}
	if (len) {
		mr = cnuas_ib_mr_get_rkey(to_cpd(qp->ibqp.pd),
					  cnuas_reth_rkey(reth),
					  cnuas_reth_va(reth), len,
					  IB_ACCESS_REMOTE_READ,
					  qp->ibqp.qp_num);
		if (!mr) {
			cnuas_dbg_qp(qp, "READ PSN %u rkey 0x%x va 0x%llx len %u: %s\n",
				     p->psn, cnuas_reth_rkey(reth),
				     cnuas_reth_va(reth), len,
				     cnuas_ib_rkey_why(to_cpd(qp->ibqp.pd),
						       cnuas_reth_rkey(reth),
						       cnuas_reth_va(reth), len,
						       IB_ACCESS_REMOTE_READ,
						       qp->ibqp.qp_num));
			cnuas_resp_fail(qp, CNUAS_AETH_NAK_ACCESS,
					IB_EVENT_QP_ACCESS_ERR);
			return;
		}
		cnuas_ib_mr_put(mr);
	}
	r = cnuas_resp_res_alloc(qp, p, "READ");
	if (!r)
		return;
	npkts = max_t(u32, 1, DIV_ROUND_UP(len, t->mtu));
	r->kind = CNUAS_RES_READ;
	r->replay = false;
	r->psn = p->psn;
	r->last_psn = cnuas_psn_add(p->psn, npkts - 1);
	r->next_psn = p->psn;
	r->va = cnuas_reth_va(reth);
	r->rkey = cnuas_reth_rkey(reth);
	r->len = len;
	r->active = true;
	t->epsn = cnuas_psn_add(r->last_psn, 1);
	t->msn = cnuas_psn_add(t->msn, 1);
	t->ack_pkts = 0;	/* the response ACKs them */
	cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_RDMA_RECVS);
	cnuas_ib_tqp_schedule(qp);
}

static void cnuas_resp_atomic(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_atomic_eth *a = cnuas_eh_ptr(p->op, p->bth,
						  CNUAS_EH_ATOMIC_ETH);
	bool cas = p->opcode == CNUAS_OP_RC_CMP_SWAP;
	u64 va = cnuas_atomic_eth_va(a), orig = 0;
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_res *r;
	struct cnuas_ib_mr *mr;
	bool queued;
	int err;

	if (!cnuas_resp_qp_allows(qp, p, IB_ACCESS_REMOTE_ATOMIC))
		return;
	if (va & 7) {
		cnuas_dbg_qp(qp, "atomic PSN %u: va 0x%llx not 8-byte aligned\n",
			     p->psn, va);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_INVALID, IB_EVENT_QP_REQ_ERR);
		return;
	}
	mr = cnuas_ib_mr_get_rkey(to_cpd(qp->ibqp.pd),
				  cnuas_atomic_eth_rkey(a), va, sizeof(u64),
				  IB_ACCESS_REMOTE_ATOMIC, qp->ibqp.qp_num);
	if (!mr) {
		cnuas_dbg_qp(qp, "atomic PSN %u rkey 0x%x va 0x%llx: %s\n",
			     p->psn, cnuas_atomic_eth_rkey(a), va,
			     cnuas_ib_rkey_why(to_cpd(qp->ibqp.pd),
					       cnuas_atomic_eth_rkey(a), va,
					       sizeof(u64),
					       IB_ACCESS_REMOTE_ATOMIC,
					       qp->ibqp.qp_num));
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_ACCESS,
				IB_EVENT_QP_ACCESS_ERR);
		return;
	}
	queued = cnuas_resp_busy(t);
	r = cnuas_resp_res_alloc(qp, p, "atomic");
	if (!r) {
		cnuas_ib_mr_put(mr);
		return;
	}
	err = cnuas_ib_mr_atomic(mr, va, cas ? CNUAS_IB_ATOMIC_CMP_SWAP :
					       CNUAS_IB_ATOMIC_FETCH_ADD,
				 cas ? cnuas_atomic_eth_compare(a) :
				       cnuas_atomic_eth_swap_add(a),
				 cnuas_atomic_eth_swap_add(a), &orig);
	cnuas_ib_mr_put(mr);
	if (err == -ENODEV) {
		/* A DMA-BUF MR revoked by its exporter since the lookup. */
		cnuas_dbg_qp(qp, "atomic PSN %u: MR revoked under it\n",
			     p->psn);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_ACCESS,
				IB_EVENT_QP_ACCESS_ERR);
		return;
	}
	if (err) {
		cnuas_dbg_qp(qp, "atomic PSN %u va 0x%llx failed (%d)\n",
			     p->psn, va, err);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_OPERR, IB_EVENT_QP_FATAL);
		return;
	}
	r->kind = CNUAS_RES_ATOMIC;
	r->replay = false;
	r->psn = p->psn;
	r->last_psn = p->psn;
	r->orig = orig;
	t->epsn = cnuas_psn_add(p->psn, 1);
	t->msn = cnuas_psn_add(t->msn, 1);
	t->ack_pkts = 0;	/* the response ACKs them */
	if (queued || cnuas_resp_ack_pkt(qp, CNUAS_OP_RC_ATOMIC_ACK,
					 CNUAS_ACK_SYNDROME, r->psn, &r->orig)) {
		r->active = true;
		cnuas_ib_tqp_schedule(qp);
	}
}

/*
 * ATOMIC WRITE (IBA 1.5): the 8 payload bytes stored at once at an
 * 8-byte aligned address, atomic against every other atomic of the
 * device (cnuas_ib_mr_atomic()). It asks for the remote write right, of
 * the QP and of the key, as rxe does. Answered by an ACK as a WRITE is;
 * a duplicate is ACKed again, not executed again.
 */
static void cnuas_resp_atomic_write(struct cnuas_ib_qp *qp,
				    struct cnuas_ib_rxp *p)
{
	struct cnuas_reth *reth = cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_RETH);
	struct cnuas_ib_pd *pd = to_cpd(qp->ibqp.pd);
	u64 va = cnuas_reth_va(reth), val, orig;
	u32 rkey = cnuas_reth_rkey(reth);
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_mr *mr;
	int err;

	if (!cnuas_resp_qp_allows(qp, p, IB_ACCESS_REMOTE_WRITE))
		return;
	if (cnuas_reth_len(reth) != sizeof(val) || p->paylen != sizeof(val) ||
	    (va & 7)) {
		cnuas_dbg_qp(qp, "ATOMIC WRITE PSN %u: va 0x%llx len %u payload %u: bad\n",
			     p->psn, va, cnuas_reth_len(reth), p->paylen);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_INVALID, IB_EVENT_QP_REQ_ERR);
		return;
	}
	mr = cnuas_ib_mr_get_rkey(pd, rkey, va, sizeof(val),
				  IB_ACCESS_REMOTE_WRITE, qp->ibqp.qp_num);
	if (!mr) {
		cnuas_dbg_qp(qp, "ATOMIC WRITE PSN %u rkey 0x%x va 0x%llx: %s\n",
			     p->psn, rkey, va,
			     cnuas_ib_rkey_why(pd, rkey, va, sizeof(val),
					       IB_ACCESS_REMOTE_WRITE,
					       qp->ibqp.qp_num));
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_ACCESS,
				IB_EVENT_QP_ACCESS_ERR);
		return;
	}
	/* The bytes as they come: a value in memory order, not a number. */
	memcpy(&val, p->payload, sizeof(val));
	err = cnuas_ib_mr_atomic(mr, va, CNUAS_IB_ATOMIC_WRITE, 0, val, &orig);
	cnuas_ib_mr_put(mr);
	if (err) {
		cnuas_dbg_qp(qp, "ATOMIC WRITE PSN %u va 0x%llx failed (%d)\n",
			     p->psn, va, err);
		if (err == -ENODEV)	/* a DMA-BUF MR revoked meanwhile */
			cnuas_resp_fail(qp, CNUAS_AETH_NAK_ACCESS,
					IB_EVENT_QP_ACCESS_ERR);
		else
			cnuas_resp_fail(qp, CNUAS_AETH_NAK_OPERR,
					IB_EVENT_QP_FATAL);
		return;
	}
	cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_RDMA_RECVS);
	t->epsn = cnuas_psn_add(t->epsn, 1);
	t->msn = cnuas_psn_add(t->msn, 1);
	cnuas_resp_ack_maybe(qp, p);
}

/*
 * FLUSH (IBA 1.5): what was placed before it becomes visible at the
 * placement types it asks for. The QP and the key must carry the flush
 * right of each type asked (IB_ACCESS_FLUSH_GLOBAL, _PERSISTENT), the
 * key over the range or, at the MR level, its whole region; else it is
 * a remote access error. The responder places data with CPU stores,
 * so global visibility is a full barrier. Persistence is never granted:
 * guest memory is not persistent, the device does not offer it and no
 * MR gets the right (ib_core refuses it; rxe grants it on pmem pages
 * only). The answer is a READ RESPONSE ONLY without payload, behind
 * earlier READ responses; the request takes a READ/atomic slot.
 */
static void cnuas_resp_flush(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_feth *feth = cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_FETH);
	struct cnuas_reth *reth = cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_RETH);
	u8 plt = cnuas_feth_plt(feth), sel = cnuas_feth_sel(feth);
	struct cnuas_ib_pd *pd = to_cpd(qp->ibqp.pd);
	u64 va = cnuas_reth_va(reth), len = cnuas_reth_len(reth);
	u32 rkey = cnuas_reth_rkey(reth);
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_mr *mr = NULL;
	struct cnuas_ib_res *r;
	int access = 0, qp_need = 0;
	bool known = true;

	if (!plt || (plt & ~(CNUAS_FLUSH_GLOBAL | CNUAS_FLUSH_PERSISTENT)) ||
	    sel > CNUAS_FLUSH_MR) {
		cnuas_dbg_qp(qp, "FLUSH PSN %u: placement type 0x%x, selectivity %u: invalid\n",
			     p->psn, plt, sel);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_INVALID, IB_EVENT_QP_REQ_ERR);
		return;
	}
	/* A type this kernel has no right for is one no MR has. */
	if (plt & CNUAS_FLUSH_GLOBAL) {
		qp_need |= CNUAS_QP_ACCESS_FLUSH_GLOBAL;
		access |= CNUAS_IB_ACCESS_FLUSH_GLOBAL;
		known &= !!CNUAS_IB_ACCESS_FLUSH_GLOBAL;
	}
	if (plt & CNUAS_FLUSH_PERSISTENT) {
		qp_need |= CNUAS_QP_ACCESS_FLUSH_PERSISTENT;
		access |= CNUAS_IB_ACCESS_FLUSH_PERSISTENT;
		known &= !!CNUAS_IB_ACCESS_FLUSH_PERSISTENT;
	}
	/* The QP's rights first, as for every remote operation (rxe too). */
	if ((t->access & qp_need) != qp_need) {
		cnuas_dbg_qp(qp, "FLUSH PSN %u: the QP's access flags 0x%x lack 0x%x\n",
			     p->psn, t->access, qp_need);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_ACCESS,
				IB_EVENT_QP_ACCESS_ERR);
		return;
	}
	if (sel == CNUAS_FLUSH_MR)
		len = CNUAS_IB_WHOLE_MR;
	if (known)
		mr = cnuas_ib_mr_get_rkey(pd, rkey, va, len, access,
					  qp->ibqp.qp_num);
	if (!mr) {
		cnuas_dbg_qp(qp, "FLUSH PSN %u rkey 0x%x va 0x%llx type 0x%x level %u: denied\n",
			     p->psn, rkey, va, plt, sel);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_ACCESS,
				IB_EVENT_QP_ACCESS_ERR);
		return;
	}
	cnuas_ib_mr_put(mr);
	r = cnuas_resp_res_alloc(qp, p, "FLUSH");
	if (!r)
		return;
	/* Every store placed before is visible to every CPU and device. */
	mb();
	r->kind = CNUAS_RES_FLUSH;
	r->replay = false;
	r->psn = p->psn;
	r->last_psn = p->psn;
	r->next_psn = p->psn;
	r->active = true;
	t->epsn = cnuas_psn_add(p->psn, 1);
	t->msn = cnuas_psn_add(t->msn, 1);
	t->ack_pkts = 0;	/* the response ACKs them */
	cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_RDMA_RECVS);
	cnuas_ib_tqp_schedule(qp);
}

/* A request we have seen before: answer it again, never re-execute. */
static void cnuas_resp_dup(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u16 flags = p->op->flags;
	struct cnuas_ib_res *r;
	u32 k, i;

	cnuas_stat_dbg_qp(qp, CNUAS_STAT_DUP_REQ,
			  "PSN %u (opcode 0x%02x), expected %u\n",
			  p->psn, p->opcode, t->epsn);
	if (flags & (CNUAS_OPF_SEND | CNUAS_OPF_WRITE)) {
		if (cnuas_bth_ackreq(p->bth))
			cnuas_resp_ack_now(qp, false);	/* it retries */
		return;
	}
	for (k = 0; k < t->res_num && k < t->res_next; k++) {
		i = t->res_next - 1 - k;
		r = &t->res[i % t->res_num];
		if (!r->kind || cnuas_psn_diff(p->psn, r->psn) < 0 ||
		    cnuas_psn_diff(p->psn, r->last_psn) > 0)
			continue;
		if ((r->kind == CNUAS_RES_READ && (flags & CNUAS_OPF_READ)) ||
		    (r->kind == CNUAS_RES_FLUSH &&
		     p->opcode == CNUAS_OP_RC_FLUSH)) {
			/* Resend from the PSN the requester asks for. */
			if (!r->active ||
			    cnuas_psn_diff(p->psn, r->next_psn) < 0)
				r->next_psn = p->psn;
		} else if (r->kind == CNUAS_RES_ATOMIC &&
			   (flags & CNUAS_OPF_ATOMIC)) {
			if (!cnuas_resp_busy(t) &&
			    !cnuas_resp_ack_pkt(qp, CNUAS_OP_RC_ATOMIC_ACK,
						CNUAS_ACK_SYNDROME, r->psn,
						&r->orig))
				return;
		} else {
			return;
		}
		if (!r->active)
			r->replay = true;
		r->active = true;
		if ((s32)(i - t->res_cur) < 0)
			t->res_cur = i;
		cnuas_ib_tqp_schedule(qp);
		return;
	}
}

/* Is @p the packet that may come now in the message in progress? */
static bool cnuas_resp_in_order(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u16 flags = p->op->flags;

	if (t->resp_op) {
		if (!(flags & t->resp_op) || (flags & CNUAS_OPF_FIRST))
			return false;
	} else if (!(flags & CNUAS_OPF_FIRST)) {
		return false;
	}
	if (flags & CNUAS_OPF_PAYLOAD) {
		if (p->paylen > t->mtu)
			return false;
		if (!(flags & CNUAS_OPF_LAST) && p->paylen != t->mtu)
			return false;
	}
	return true;
}

/* The provider reads cnuas_cqe.network_hdr_type with the uapi's names. */
static_assert(CNUAS_NET_IPV4 == RDMA_NETWORK_IPV4);
static_assert(CNUAS_NET_IPV6 == RDMA_NETWORK_IPV6);

static void cnuas_resp_ud(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_deth *deth = cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_DETH);
	struct cnuas_immdt *imm = cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_IMMDT);
	struct cnuas_ib_pd *pd = to_cpd(qp->ibqp.pd);
	struct cnuas_ib_recv_wqe *w = qp->t.rwqe;
	u32 qkey = qp->type == IB_QPT_GSI ? CNUAS_GSI_QKEY : qp->t.qkey;
	struct cnuas_cqe cqe = {};
	u8 grh[CNUAS_GRH_LEN] = {};
	int err;

	if (cnuas_deth_qkey(deth) != qkey) {
		cnuas_ib_port_key_violation(qp->cdev, false);
		cnuas_ib_trap_key(qp->cdev, false, p, cnuas_deth_qkey(deth),
				  cnuas_deth_sqpn(deth));
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_QKEY,
				  "drop: datagram from QP%u with Q_Key 0x%x, the QP's is 0x%x\n",
				  cnuas_deth_sqpn(deth), cnuas_deth_qkey(deth),
				  qkey);
		return;
	}
	err = cnuas_ib_recv_wqe_pop(qp, w);
	if (err == -ENOENT) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_NO_RECV,
				  "drop: datagram of %u bytes from QP%u, no receive WQE posted\n",
				  p->paylen, cnuas_deth_sqpn(deth));
		return;
	}
	if (err) {
		cnuas_dbg_qp(qp, "malformed receive WQE 0x%llx\n", w->wr_id);
		/* A malformed WQE, consumed: it fails, the QP too. */
		cqe.wr_id = w->wr_id;
		cqe.status = IB_WC_LOC_QP_OP_ERR;
		cqe.opcode = IB_WC_RECV;
		cqe.qp_num = qp->ibqp.qp_num;
		cqe.vlan_id = 0xffff;
		cnuas_ib_cq_post(qp->rcq, &cqe, false);
		cnuas_ib_tqp_fatal(qp, IB_EVENT_QP_FATAL);
		return;
	}
	/*
	 * The GRH slot: an IPv4 header sits in its last 20 bytes. On the
	 * IB link layer it holds the GRH if one came, else it is left as
	 * it was (IBA 11.4.1.2); byte_len counts it either way.
	 */
	err = 0;
	if (p->net_type == RDMA_NETWORK_IPV4)
		memcpy(grh + 20, p->iph, 20);
	else if (p->iph)
		memcpy(grh, p->iph, CNUAS_GRH_LEN);
	if (p->iph)
		err = cnuas_ib_sge_copy(pd, w->sge, w->num_sge, 0, grh,
					sizeof(grh), CNUAS_IB_TO_MR,
					IB_ACCESS_LOCAL_WRITE);
	if (!err && p->paylen)
		err = cnuas_ib_sge_copy(pd, w->sge, w->num_sge, sizeof(grh),
					p->payload, p->paylen, CNUAS_IB_TO_MR,
					IB_ACCESS_LOCAL_WRITE);

	if (err)
		cnuas_dbg_qp(qp, "datagram of %u bytes: %s\n", p->paylen,
			     err == -EMSGSIZE ? "receive WQE too short" :
			     "bad lkey, range or access in the receive WQE");
	cqe.wr_id = w->wr_id;
	cqe.status = !err ? IB_WC_SUCCESS : err == -EMSGSIZE ?
		     IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR;
	cqe.opcode = IB_WC_RECV;
	cqe.byte_len = sizeof(grh) + p->paylen;
	cqe.qp_num = qp->ibqp.qp_num;
	cqe.src_qp = cnuas_deth_sqpn(deth);
	cqe.pkey_index = p->pkey_index;
	cqe.wc_flags = p->iph ? CNUAS_CQE_GRH : 0;
	if (imm) {
		cqe.wc_flags |= CNUAS_CQE_WITH_IMM;
		memcpy(&cqe.ex, &imm->imm, sizeof(cqe.ex));
	}
	cqe.port_num = 1;
	cqe.network_hdr_type = p->net_type;
	cqe.vlan_id = p->vlan_id;
	if (p->smac) {
		memcpy(cqe.smac, p->smac, ETH_ALEN);
	} else {		/* InfiniBand: the LRH's addressing */
		cqe.slid = p->slid;
		cqe.sl = p->sl;
		cqe.dlid_path_bits = p->path_bits;
	}
	cnuas_ib_cq_post(qp->rcq, &cqe, cnuas_bth_se(p->bth));
}

/*
 * UC has no ACK, NAK or retransmission (IBA 9.7): a PSN other than
 * the expected one means packets were lost, and with them the message
 * they were part of, whole. The sequence resumes at the next FIRST or
 * ONLY packet, whatever its PSN.
 */
static void cnuas_resp_uc(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u16 flags = p->op->flags;
	bool first = flags & CNUAS_OPF_FIRST;
	int diff = cnuas_psn_diff(p->psn, t->epsn);

	if (diff) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_OUT_OF_SEQ_REQ,
				  "UC PSN %u, expected %u (%d ahead)\n",
				  p->psn, t->epsn, diff);
		/* Lost: the rest of the message in progress, or this one's start. */
		if (t->resp_op || !first)
			cnuas_resp_uc_drop(qp, p);
		else if (!t->uc_drop && diff > 0)	/* whole ones skipped */
			cnuas_stat_dbg_qp(qp, CNUAS_STAT_UC_MSG_DROPPED,
					  "PSN %u: a message or more before it lost\n",
					  p->psn);
		t->epsn = p->psn;
	} else if (t->resp_op && first) {
		/* In sequence, but its requester gave the message up. */
		cnuas_resp_uc_drop(qp, p);
	}
	if (t->uc_drop) {
		if (!first)
			goto out;
		t->uc_drop = false;
	}
	if (!cnuas_resp_in_order(qp, p)) {
		cnuas_dbg_qp(qp, "UC PSN %u: opcode 0x%02x, %u bytes, out of place\n",
			     p->psn, p->opcode, p->paylen);
		cnuas_resp_uc_drop(qp, p);
		goto out;
	}
	if (flags & CNUAS_OPF_SEND)
		cnuas_resp_send(qp, p);
	else
		cnuas_resp_write(qp, p);
out:
	/* Taken, or dropped: either way the next PSN is expected next. */
	t->epsn = cnuas_psn_add(p->psn, 1);
}

void cnuas_ib_resp_rx(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u16 flags = p->op->flags;
	int diff;

	if (qp->type == IB_QPT_UC) {
		cnuas_resp_uc(qp, p);
		return;
	}
	if (qp->type != IB_QPT_RC) {
		cnuas_resp_ud(qp, p);
		return;
	}
	diff = cnuas_psn_diff(p->psn, t->epsn);
	if (diff > 0) {
		/* A gap: say so once, until the expected PSN comes. */
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_OUT_OF_SEQ_REQ,
				  "drop: PSN %u, expected %u (%d ahead)\n",
				  p->psn, t->epsn, diff);
		if (!t->nak_sent) {
			t->nak_sent = true;
			cnuas_resp_nak(qp, CNUAS_AETH_TYPE_NAK |
				       CNUAS_AETH_NAK_PSN_SEQ);
		}
		return;
	}
	if (diff < 0) {
		cnuas_resp_dup(qp, p);
		return;
	}
	t->nak_sent = false;
	if (!cnuas_resp_in_order(qp, p)) {
		cnuas_dbg_qp(qp, "PSN %u: opcode 0x%02x, %u bytes, out of place in the message\n",
			     p->psn, p->opcode, p->paylen);
		cnuas_resp_fail(qp, CNUAS_AETH_NAK_INVALID, IB_EVENT_QP_REQ_ERR);
		return;
	}
	if (p->opcode == CNUAS_OP_RC_FLUSH)
		cnuas_resp_flush(qp, p);
	else if (p->opcode == CNUAS_OP_RC_ATOMIC_WRITE)
		cnuas_resp_atomic_write(qp, p);
	else if (flags & CNUAS_OPF_SEND)
		cnuas_resp_send(qp, p);
	else if (flags & CNUAS_OPF_WRITE)
		cnuas_resp_write(qp, p);
	else if (flags & CNUAS_OPF_READ)
		cnuas_resp_read(qp, p);
	else if (flags & CNUAS_OPF_ATOMIC)
		cnuas_resp_atomic(qp, p);
}

/* One READ response packet of @r. -EAGAIN: nothing sent. */
static int cnuas_resp_read_pkt(struct cnuas_ib_qp *qp, struct cnuas_ib_res *r)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u32 n = cnuas_psn_diff(r->next_psn, r->psn);
	u32 npkts = cnuas_psn_diff(r->last_psn, r->psn) + 1;
	u32 off = n * t->mtu, plen = min(r->len - off, t->mtu);
	const struct cnuas_opcode *op;
	void *bth, *payload, *aeth;
	struct sk_buff *skb;
	u8 opc;

	if (npkts == 1)
		opc = CNUAS_OP_RC_READ_RESP_ONLY;
	else if (!n)
		opc = CNUAS_OP_RC_READ_RESP_FIRST;
	else if (n == npkts - 1)
		opc = CNUAS_OP_RC_READ_RESP_LAST;
	else
		opc = CNUAS_OP_RC_READ_RESP_MIDDLE;
	op = &cnuas_opcodes[opc];
	if (plen) {
		/*
		 * Every response, first or replayed, resolves the key the peer
		 * presented again: an MR deregistered or a window unbound or
		 * invalidated since the request ends the READ.
		 */
		struct cnuas_ib_mr *mr = NULL;
		struct cnuas_sge sge = { .addr = r->va + off, .length = plen };

		if (qp->t.access & IB_ACCESS_REMOTE_READ)
			mr = cnuas_ib_mr_get_rkey(to_cpd(qp->ibqp.pd), r->rkey,
						  sge.addr, plen,
						  IB_ACCESS_REMOTE_READ,
						  qp->ibqp.qp_num);
		if (mr) {
			/* The MR's own key: a window resolves to it. */
			sge.lkey = mr->key;
			skb = cnuas_ib_pkt_from_mr(qp->cdev,
						   &qp->t.skb_pools[CNUAS_SKB_RESP],
						   &qp->attr.av, op->hdr_len,
						   &bth, to_cpd(qp->ibqp.pd),
						   &sge, 1, 0, plen, 0);
			cnuas_ib_mr_put(mr);
		} else {
			skb = ERR_PTR(-EACCES);
		}
	} else {
		skb = cnuas_ib_pkt_alloc(qp->cdev,
					 &qp->t.skb_pools[CNUAS_SKB_RESP],
					 &qp->attr.av, op->hdr_len, 0, &bth,
					 &payload);
		if (!skb)
			skb = ERR_PTR(-ENOMEM);
	}
	if (PTR_ERR_OR_ZERO(skb) == -ENOMEM) {
		cnuas_ib_tqp_schedule(qp);
		return -EAGAIN;
	}
	if (IS_ERR(skb)) {
		/* Key no longer valid, or a DMA-BUF revoked, under the READ. */
		cnuas_dbg_qp(qp, "READ resp PSN %u: rkey 0x%x no longer valid (%ld): NAK\n",
			     r->next_psn, r->rkey, PTR_ERR(skb));
		r->active = false;
		cnuas_resp_ack_pkt(qp, CNUAS_OP_RC_ACK,
				   CNUAS_AETH_TYPE_NAK | CNUAS_AETH_NAK_ACCESS,
				   r->next_psn, NULL);
		cnuas_ib_tqp_fatal(qp, IB_EVENT_QP_ACCESS_ERR);
		return -EAGAIN;
	}
	cnuas_bth_build(bth, opc, false, cnuas_ib_pad(plen),
			cnuas_ib_tx_pkey(qp, NULL), t->dest_qpn, false,
			r->next_psn);
	aeth = cnuas_eh_ptr(op, bth, CNUAS_EH_AETH);
	if (aeth)
		cnuas_aeth_build(aeth, CNUAS_ACK_SYNDROME, t->msn);
	cnuas_ib_pkt_seal(qp->cdev, skb);
	r->next_psn = cnuas_psn_add(r->next_psn, 1);
	if (n + 1 == npkts)
		r->active = false;
	return cnuas_ib_tqp_xmit(qp, skb, true);
}

/* Work item: queued READ responses and ATOMIC ACKs, then a late ACK. */
int cnuas_ib_resp_run(struct cnuas_ib_qp *qp, int budget)
{
	struct cnuas_ib_tqp *t = &qp->t;
	int sent = 0, err;

	if (qp->type != IB_QPT_RC || !t->res)
		return 0;
	while (sent < budget && cnuas_resp_busy(t)) {
		struct cnuas_ib_res *r = &t->res[t->res_cur % t->res_num];

		if (r->kind == CNUAS_RES_ATOMIC) {
			if (cnuas_resp_ack_pkt(qp, CNUAS_OP_RC_ATOMIC_ACK,
					       CNUAS_ACK_SYNDROME, r->psn,
					       &r->orig)) {
				/* No frame to be had: again, as READ does. */
				if (!t->pending)
					cnuas_ib_tqp_schedule(qp);
				return sent;
			}
			r->active = false;
		} else {
			err = cnuas_resp_read_pkt(qp, r);
			if (err == -EAGAIN)
				return sent;
		}
		sent++;
		if (t->pending || t->state == IB_QPS_ERR)
			return sent;
	}
	return sent;
}

static bool ack_hold = true;
module_param(ack_hold, bool, 0644);
MODULE_PARM_DESC(ack_hold,
		 "Let the ACK of a one-packet message wait for the QP's next request, up to a timer tick");

/*
 * After this many holds in a row that waited in vain the QP's ACKs go at
 * once for a while: a QP that gets requests but sends none would wait
 * for every ACK's timer. One miss alone does not: on a busy host a stall
 * of the guest's vCPU makes one in a ping-pong.
 */
#define CNUAS_IB_ACK_MISSES		2
#define CNUAS_IB_ACK_NOHOLD_MS		100
/*
 * Nor does a QP hold that sent no request in this timer tick or the one
 * before: it only receives (a target of one-sided WRITEs, a perftest
 * server that rdma_cm moved to RTS), and every hold would wait for the
 * timer in vain, a stall of one to two ticks each time the QP's misses
 * let it try again.
 */
#define CNUAS_IB_ACK_REQ_TICKS		1

/* A new connection starts without history: RESET, and again at RTR. */
void cnuas_ib_resp_hold_reset(struct cnuas_ib_tqp *t)
{
	t->ack_misses = 0;
	t->ack_nohold_j = jiffies;
	t->req_sent_j = jiffies - CNUAS_IB_ACK_REQ_TICKS - 1;
}

/*
 * Ping-pong traffic answers a one-packet message with one: its ACK can go
 * out behind the answer, in the same doorbell, as one more frame of a
 * batch the device, the switch and the peer handle anyway, rather than
 * as a batch of its own (on TCG guests each costs the host a wake-up or
 * two). So it may wait for a request of the QP, until the next timer
 * tick at most: a timer-wheel timer, which costs no clock event
 * reprogramming (an hrtimer per message cost more than the ACK did).
 * More packets, a duplicate, or a QP that cannot send, and it goes at
 * once; so do the QP's ACKs for a while after one waited in vain. The
 * requester's timeout is many times longer.
 */
static bool cnuas_resp_ack_may_hold(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if (!READ_ONCE(ack_hold) || test_bit(CNUAS_TQP_ACK_NOW, &t->flags) ||
	    t->ack_pkts > 1 || t->state != IB_QPS_RTS ||
	    time_before(jiffies, t->ack_nohold_j) ||
	    time_after(jiffies, t->req_sent_j + CNUAS_IB_ACK_REQ_TICKS))
		return false;
	/* Left armed by an earlier hold, the timer ends this one too. */
	if (!t->ack_hold_ns)
		WRITE_ONCE(t->ack_hold_ns, ktime_get_ns());
	if (!timer_pending(&t->ack_timer))
		mod_timer(&t->ack_timer, jiffies + 1);
	return true;
}

/* Send the owed ACK now; whatever held it is over. */
static bool cnuas_resp_ack_out(struct cnuas_ib_qp *qp, bool more)
{
	struct cnuas_ib_tqp *t = &qp->t;

	WRITE_ONCE(t->ack_hold_ns, 0);
	clear_bit(CNUAS_TQP_SEND_ACK, &t->flags);
	clear_bit(CNUAS_TQP_ACK_NOW, &t->flags);
	/* The timer stays armed for the next hold (see the ack_timer). */
	return cnuas_ib_resp_send_ack(qp, more);
}

/* The owed ACK, after the run's requests (@req_sent: it sent some). */
int cnuas_ib_resp_ack_run(struct cnuas_ib_qp *qp, bool req_sent)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if (req_sent)
		t->req_sent_j = jiffies;
	if (cnuas_resp_busy(t) || !test_bit(CNUAS_TQP_SEND_ACK, &t->flags))
		return 0;
	if (!req_sent && cnuas_resp_ack_may_hold(qp))
		return 0;
	if (!req_sent && t->ack_hold_ns && !timer_pending(&t->ack_timer) &&
	    ktime_get_ns() - t->ack_hold_ns >= CNUAS_IB_ACK_HOLD_MISS_NS) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_ACK_HOLD_EXPIRED,
				  "ACK for PSN %u held %llu us for no request\n",
				  cnuas_psn_add(t->epsn, -1),
				  div_u64(ktime_get_ns() - t->ack_hold_ns,
					  NSEC_PER_USEC));
		/* Until a hold works again, one miss is enough. */
		if (t->ack_misses < CNUAS_IB_ACK_MISSES)
			t->ack_misses++;
		if (t->ack_misses == CNUAS_IB_ACK_MISSES)
			t->ack_nohold_j = jiffies +
					  msecs_to_jiffies(CNUAS_IB_ACK_NOHOLD_MS);
	}
	if (!cnuas_resp_ack_out(qp, true))
		return 0;
	if (req_sent) {
		t->ack_misses = 0;
		cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_ACK_WITH_REQ);
	}
	return 1;
}

/*
 * The QP stops sending (destroyed, or moved to ERR or RESET): an ACK it
 * holds or coalesces goes now. The packets it owes for were taken and
 * may have completed, and the peer would otherwise retry them into a QP
 * that no longer answers (a client that exits on its last completion
 * used to leave its peer with RETRY_EXC_ERR). @dying: the QP is being
 * destroyed; a frame of its own that waits for TX ring room is dropped
 * for the ACK, as nobody waits for its requests any more. Under the QP's
 * lock; the caller rings the doorbell (cnuas_net_aux_flush()) after
 * unlocking. True: the ACK itself waits for ring room (t->pending).
 */
bool cnuas_ib_resp_ack_release(struct cnuas_ib_qp *qp, bool dying)
{
	struct cnuas_ib_tqp *t = &qp->t;

	if ((t->state != IB_QPS_RTS && t->state != IB_QPS_SQD) ||
	    cnuas_resp_busy(t) || !test_bit(CNUAS_TQP_SEND_ACK, &t->flags))
		return false;
	if (dying && t->pending) {
		kfree_skb(t->pending);
		t->pending = NULL;
	}
	cnuas_resp_ack_out(qp, false);
	return t->pending || test_bit(CNUAS_TQP_SEND_ACK, &t->flags);
}

/* ERR: the receive WQEs of the QP (not of its SRQ) complete flushed. */
void cnuas_ib_resp_flush(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_cqe cqe = {};

	if (!t->rwqe)
		return;
	cqe.status = IB_WC_WR_FLUSH_ERR;
	cqe.opcode = IB_WC_RECV;
	cqe.qp_num = qp->ibqp.qp_num;
	cqe.port_num = 1;
	cqe.vlan_id = 0xffff;
	if (t->rwqe_valid) {
		cqe.wr_id = t->rwqe->wr_id;
		cnuas_ib_cq_post(qp->rcq, &cqe, false);
		t->rwqe_valid = false;
	}
	while (!qp->srq) {
		int err = cnuas_ib_recv_wqe_pop(qp, t->rwqe);

		/* -EINVAL: a malformed WQE, consumed all the same. */
		if (err && err != -EINVAL)
			break;
		cqe.wr_id = t->rwqe->wr_id;
		cnuas_ib_cq_post(qp->rcq, &cqe, false);
	}
	t->resp_op = 0;
	t->res_cur = t->res_next;
}
