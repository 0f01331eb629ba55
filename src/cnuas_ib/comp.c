// SPDX-License-Identifier: GPL-2.0
/*
 * The completer: what comes back to the requester (ACK, NAK, READ
 * responses, ATOMIC ACKs) and the send completions, in SQ order. Runs
 * with the QP's transport lock held, from the receive path.
 */
#include <linux/skbuff.h>

#include "cnuas_ib.h"
#include "wire.h"

/* IBA table 45: RNR NAK timer field -> microseconds. */
static const u32 cnuas_rnr_usecs[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120,
	160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

#ifdef CNUAS_HAVE_IB_FLUSH
static_assert(CNUAS_WR_FLUSH == IB_UVERBS_WR_FLUSH);
static_assert(CNUAS_WR_ATOMIC_WRITE == IB_UVERBS_WR_ATOMIC_WRITE);
static_assert(CNUAS_WC_FLUSH == IB_UVERBS_WC_FLUSH);
static_assert(CNUAS_WC_ATOMIC_WRITE == IB_UVERBS_WC_ATOMIC_WRITE);
#endif

static u32 cnuas_wc_opcode(u32 wr)
{
	switch (wr) {
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_UVERBS_WR_RDMA_READ:
		return IB_WC_RDMA_READ;
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case CNUAS_WR_FLUSH:
		return CNUAS_WC_FLUSH;
	case CNUAS_WR_ATOMIC_WRITE:
		return CNUAS_WC_ATOMIC_WRITE;
	case IB_UVERBS_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_UVERBS_WR_BIND_MW:
		return IB_WC_BIND_MW;
	default:
		return IB_WC_SEND;
	}
}

/* The CQE of a send WQE: always on error, else when signaled. */
void cnuas_ib_comp_post(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *sw,
			enum ib_wc_status status)
{
	struct cnuas_cqe cqe = {};

	if (status == IB_WC_SUCCESS && !qp->sig_all &&
	    !(sw->wqe.send_flags & CNUAS_SEND_SIGNALED))
		return;
	cqe.wr_id = sw->wqe.wr_id;
	cqe.status = status;
	cqe.opcode = cnuas_wc_opcode(sw->wqe.opcode);
	cqe.byte_len = sw->len;
	cqe.qp_num = qp->ibqp.qp_num;
	cqe.port_num = 1;
	cqe.vlan_id = 0xffff;
	cnuas_ib_cq_post(qp->scq, &cqe, false);
}

/* Complete, in order, every WQE that is finished. */
void cnuas_ib_comp_advance(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_tqp *t = &qp->t;
	bool rc = qp->type == IB_QPT_RC;
	bool opened = false;

	if (!t->swqe)
		return;
	while (qp->sq.index != t->sq_fetch) {
		struct cnuas_ib_swqe *sw = cnuas_ib_swqe_at(qp, qp->sq.index);
		enum ib_wc_status status;

		if (sw->state != CNUAS_SW_DONE) {
			/* RC SEND/WRITE: done once its last PSN is acked. */
			if (!rc || sw->rd || sw->state != CNUAS_SW_STARTED ||
			    (s32)(qp->sq.index - t->req_idx) >= 0 ||
			    cnuas_psn_diff(t->una, sw->last_psn) <= 0)
				break;
			sw->state = CNUAS_SW_DONE;
			sw->status = IB_WC_SUCCESS;
		}
		status = sw->status;
		cnuas_ib_comp_post(qp, sw, status);
		if (sw->rd && t->rd_out) {
			t->rd_out--;
			opened = true;
		}
		cnuas_ib_queue_consume(&qp->sq, 1);
		/*
		 * The requester never stays on a consumed slot: a local op it
		 * meets again after a rewind (or a WQE that failed where it
		 * stood) is done, and a fetch may soon reuse the slot for a
		 * new WQE, which would then go out first.
		 */
		if ((s32)(t->req_idx - qp->sq.index) < 0) {
			t->req_idx = qp->sq.index;
			t->req_off = 0;
		}
		if (status) {
			cnuas_dbg_qp(qp, "send WQE 0x%llx completes with %s\n",
				     sw->wqe.wr_id, ib_wc_status_msg(status));
			cnuas_ib_tqp_fatal(qp, 0);
			return;
		}
	}
	if (opened)
		cnuas_ib_tqp_schedule(qp);
}

/* Open the window for @acked newly acknowledged packets. */
static void cnuas_comp_window_grow(struct cnuas_ib_tqp *t, u32 acked)
{
	if (t->cwnd < t->ssthresh) {
		/* Slow start: one packet per packet acknowledged. */
		t->cwnd = min(t->cwnd + acked, t->ssthresh);
		return;
	}
	/* Then one packet per window acknowledged. */
	t->cwnd_acked += acked;
	if (t->cwnd_acked >= t->cwnd) {
		t->cwnd_acked -= t->cwnd;
		if (t->cwnd < CNUAS_IB_WINDOW)
			t->cwnd++;
	}
}

/* An RTT sample of @m jiffies: the resend timer follows it. */
static void cnuas_comp_rtt_sample(struct cnuas_ib_tqp *t, u32 m)
{
	u32 err;

	m = max(m, 1u);
	if (!t->srtt8) {
		t->srtt8 = m << 3;
		t->rttvar4 = m << 1;
	} else {
		err = abs((int)m - (int)(t->srtt8 >> 3));
		t->srtt8 = t->srtt8 - (t->srtt8 >> 3) + m;
		t->rttvar4 = t->rttvar4 - (t->rttvar4 >> 2) + err;
	}
	t->rto_j = max_t(unsigned long, (t->srtt8 >> 3) + t->rttvar4,
			 msecs_to_jiffies(CNUAS_IB_MIN_RTO_MS));
}

/*
 * The requester made progress: the IBA transport timer measures how long
 * the oldest unacknowledged request waits, so every ACK that moves una
 * restarts it and gives a fresh retry budget. A slow peer that keeps
 * acknowledging never fails the QP.
 */
static void cnuas_comp_progress(struct cnuas_ib_qp *qp, u32 una)
{
	struct cnuas_ib_tqp *t = &qp->t;
	bool was_full = cnuas_psn_diff(t->req_psn, t->una) >= t->cwnd;

	cnuas_comp_window_grow(t, cnuas_psn_diff(una, t->una));
	if (t->rtt_timing && cnuas_psn_diff(una, t->rtt_psn) > 0) {
		t->rtt_timing = false;
		cnuas_comp_rtt_sample(t, jiffies - t->rtt_start);
	}
	t->progress_j = jiffies;
	t->una = una;
	t->retry_left = t->retry_cnt;
	t->rnr_left = t->rnr_retry;
	/* Acknowledged packets we were about to resend: skip them. */
	if (cnuas_psn_diff(una, t->req_psn) > 0) {
		cnuas_ib_req_rewind(qp, una);
		was_full = true;
	}
	/* Idle: the timer stays; firing, it finds nothing to resend. */
	if (t->una != t->psn_hi)
		cnuas_ib_req_arm_timer(qp);
	/*
	 * Send more: the window has room again, or the provider left out
	 * doorbells because we said an ACK would bring us back (db_skip).
	 */
	if (was_full || (qp->is_user && READ_ONCE(qp->sq.hdr->db_skip)))
		cnuas_ib_tqp_schedule(qp);
}

/*
 * Everything up to and with @apsn arrived at the responder. una does not
 * pass a READ or atomic whose response is missing: that one is resent.
 */
static void cnuas_comp_ack_to(struct cnuas_ib_qp *qp, u32 apsn)
{
	struct cnuas_ib_tqp *t = &qp->t;
	u32 limit = cnuas_psn_add(apsn, 1), idx;

	for (idx = qp->sq.index; idx != t->sq_fetch; idx++) {
		struct cnuas_ib_swqe *sw = cnuas_ib_swqe_at(qp, idx);

		if (sw->state == CNUAS_SW_NEW)
			break;
		if (sw->state != CNUAS_SW_STARTED)
			continue;
		if (cnuas_psn_diff(sw->first_psn, limit) >= 0)
			break;
		if (sw->rd) {
			if (cnuas_psn_diff(limit, sw->resp_psn) > 0)
				limit = sw->resp_psn;
			break;
		}
	}
	if (cnuas_psn_diff(limit, t->una) > 0)
		cnuas_comp_progress(qp, limit);
	cnuas_ib_comp_advance(qp);
}

/* The oldest unfinished WQE if it is a READ/atomic waiting for @psn. */
static struct cnuas_ib_swqe *cnuas_comp_rd_head(struct cnuas_ib_qp *qp,
						u32 psn)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_swqe *sw;

	if (qp->sq.index == t->req_idx)
		return NULL;
	sw = cnuas_ib_swqe_at(qp, qp->sq.index);
	if (sw->state != CNUAS_SW_STARTED || !sw->rd || sw->resp_psn != psn)
		return NULL;
	return sw;
}

static void cnuas_comp_fail(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *sw,
			    enum ib_wc_status status)
{
	sw->state = CNUAS_SW_DONE;
	sw->status = status;
	cnuas_ib_comp_advance(qp);
}

static void cnuas_comp_read_resp(struct cnuas_ib_qp *qp,
				 struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_ib_swqe *sw;
	u32 off, want;
	bool last;
	int err;

	/* A response implicitly acknowledges everything before it. */
	cnuas_comp_ack_to(qp, cnuas_psn_add(p->psn, -1));
	sw = cnuas_comp_rd_head(qp, p->psn);
	/* A FLUSH is answered by a READ response without payload. */
	if (!sw || (sw->wqe.opcode != IB_UVERBS_WR_RDMA_READ &&
		    sw->wqe.opcode != CNUAS_WR_FLUSH)) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_RESP,
				  "drop: READ response PSN %u: no READ or FLUSH waits for it\n",
				  p->psn);
		return;
	}
	off = cnuas_psn_diff(p->psn, sw->first_psn) * t->mtu;
	want = min(sw->len - off, t->mtu);
	last = off + want == sw->len;
	if (p->paylen != want || !!(p->op->flags & CNUAS_OPF_LAST) != last) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_RESP,
				  "drop: READ response PSN %u: %u bytes%s, expected %u%s\n",
				  p->psn, p->paylen,
				  p->op->flags & CNUAS_OPF_LAST ? " (last)" : "",
				  want, last ? " (last)" : "");
		return;
	}
	if (want) {
		err = cnuas_ib_sge_copy(to_cpd(qp->ibqp.pd),
					(const struct cnuas_sge *)sw->data,
					sw->wqe.num_sge, off, p->payload, want,
					CNUAS_IB_TO_MR, IB_ACCESS_LOCAL_WRITE);
		if (err) {
			cnuas_dbg_qp(qp, "READ response PSN %u: %s\n", p->psn,
				     err == -EMSGSIZE ? "local SGEs too short" :
				     "bad lkey, range or access in the local SGEs");
			cnuas_comp_fail(qp, sw, err == -EMSGSIZE ?
					IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR);
			return;
		}
	}
	sw->resp_psn = cnuas_psn_add(p->psn, 1);
	cnuas_comp_progress(qp, sw->resp_psn);
	if (last) {
		sw->state = CNUAS_SW_DONE;
		sw->status = IB_WC_SUCCESS;
		cnuas_ib_comp_advance(qp);
	}
}

static void cnuas_comp_atomic_ack(struct cnuas_ib_qp *qp,
				  struct cnuas_ib_rxp *p)
{
	struct cnuas_atomic_ack *ack;
	struct cnuas_ib_swqe *sw;
	u64 orig;
	int err;

	cnuas_comp_ack_to(qp, cnuas_psn_add(p->psn, -1));
	sw = cnuas_comp_rd_head(qp, p->psn);
	if (!sw || (sw->wqe.opcode != IB_UVERBS_WR_ATOMIC_CMP_AND_SWP &&
		    sw->wqe.opcode != IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD)) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_RESP,
				  "drop: ATOMIC ACK PSN %u: no atomic waits for it\n",
				  p->psn);
		return;
	}
	ack = cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_ATOMIC_ACK);
	orig = cnuas_atomic_ack_orig(ack);
	err = cnuas_ib_sge_copy(to_cpd(qp->ibqp.pd),
				(const struct cnuas_sge *)sw->data,
				sw->wqe.num_sge, 0, &orig, sizeof(orig),
				CNUAS_IB_TO_MR, IB_ACCESS_LOCAL_WRITE);
	if (err) {
		cnuas_dbg_qp(qp, "ATOMIC ACK PSN %u: %s\n", p->psn,
			     err == -EMSGSIZE ? "local SGE too short" :
			     "bad lkey, range or access in the local SGE");
		cnuas_comp_fail(qp, sw, err == -EMSGSIZE ?
				IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR);
		return;
	}
	sw->resp_psn = cnuas_psn_add(p->psn, 1);
	cnuas_comp_progress(qp, sw->resp_psn);
	sw->state = CNUAS_SW_DONE;
	sw->status = IB_WC_SUCCESS;
	cnuas_ib_comp_advance(qp);
}

static void cnuas_comp_rnr(struct cnuas_ib_qp *qp, u32 psn, u8 timer)
{
	struct cnuas_ib_tqp *t = &qp->t;

	cnuas_stat_dbg_qp(qp, CNUAS_STAT_RCVD_RNR_ERR,
			  "RNR NAK for PSN %u: wait %u us, %u RNR retries left%s\n",
			  psn, cnuas_rnr_usecs[timer & 31], t->rnr_left,
			  t->rnr_retry == 7 ? " (no limit)" : "");
	cnuas_comp_ack_to(qp, cnuas_psn_add(psn, -1));
	/* Nothing outstanding (e.g. a late NAK after a flush). */
	if (t->state == IB_QPS_ERR || qp->sq.index == t->sq_fetch ||
	    t->una == t->psn_hi)
		return;
	if (!t->rnr_left) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_RNR_RETRY_EXCEEDED,
				  "PSN %u: RNR retries used up, the WQE fails\n",
				  psn);
		cnuas_comp_fail(qp, cnuas_ib_swqe_at(qp, qp->sq.index),
				IB_WC_RNR_RETRY_EXC_ERR);
		return;
	}
	if (t->rnr_retry != 7)	/* 7: retry for ever */
		t->rnr_left--;
	t->rnr_wait = true;
	t->rnr_psn = t->una;
	timer_delete(&t->retry_timer);
	if (!test_bit(CNUAS_TQP_DYING, &t->flags))
		mod_timer(&t->rnr_timer, jiffies +
			  usecs_to_jiffies(cnuas_rnr_usecs[timer & 31]));
}

static void cnuas_comp_nak(struct cnuas_ib_qp *qp, u32 psn, u8 code)
{
	struct cnuas_ib_tqp *t = &qp->t;
	enum ib_wc_status status;

	cnuas_comp_ack_to(qp, cnuas_psn_add(psn, -1));
	/* Nothing outstanding (e.g. a late NAK after a flush). */
	if (t->state == IB_QPS_ERR || qp->sq.index == t->sq_fetch ||
	    t->una == t->psn_hi)
		return;
	switch (code) {
	case CNUAS_AETH_NAK_PSN_SEQ:
		/*
		 * Lost packets: go back to the first one missing, once per
		 * NAK (the responder sends one per gap), and halve the
		 * window: everything sent after the loss is sent again.
		 */
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_RCVD_SEQ_ERR,
				  "NAK PSN sequence error: the peer expects PSN %u, oldest unacked %u, window %u\n",
				  psn, t->una, t->cwnd);
		/* Overtaken by a later ACK (a reordering path): stale. */
		if (cnuas_psn_diff(psn, t->una) < 0)
			return;
		t->ssthresh = max_t(u32, CNUAS_IB_MIN_WINDOW, t->cwnd / 2);
		t->cwnd = t->ssthresh;
		t->cwnd_acked = 0;
		t->progress_j = jiffies;	/* the peer is alive */
		cnuas_ib_req_rewind(qp, t->una);
		cnuas_ib_req_arm_timer(qp);
		cnuas_ib_tqp_schedule(qp);
		return;
	case CNUAS_AETH_NAK_INVALID:
		status = IB_WC_REM_INV_REQ_ERR;
		break;
	case CNUAS_AETH_NAK_ACCESS:
		status = IB_WC_REM_ACCESS_ERR;
		break;
	case CNUAS_AETH_NAK_INV_RD:
		status = IB_WC_REM_INV_RD_REQ_ERR;
		break;
	default:
		status = IB_WC_REM_OP_ERR;
		break;
	}
	cnuas_dbg_qp(qp, "%s received for PSN %u: the WQE fails with %s\n",
		     cnuas_ib_syndrome_name(CNUAS_AETH_TYPE_NAK | code), psn,
		     ib_wc_status_msg(status));
	cnuas_comp_fail(qp, cnuas_ib_swqe_at(qp, qp->sq.index), status);
}

void cnuas_ib_comp_rx(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_tqp *t = &qp->t;
	struct cnuas_aeth *aeth;
	u8 syn;

	if (!t->swqe) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_RESP,
				  "drop: response PSN %u for a QP without send queue\n",
				  p->psn);
		return;
	}
	/*
	 * Only answers to PSNs we have sent: [una - 1, psn_hi). After a
	 * rewind req_psn is behind psn_hi; ACKs of the packets sent before
	 * it still count.
	 */
	if (cnuas_psn_diff(p->psn, t->psn_hi) >= 0 ||
	    cnuas_psn_diff(p->psn, t->una) < -1) {
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_RESP,
				  "drop: response PSN %u outside the window [%u, %u)\n",
				  p->psn, cnuas_psn_add(t->una, -1), t->psn_hi);
		return;
	}
	if (p->opcode == CNUAS_OP_RC_ATOMIC_ACK) {
		cnuas_comp_atomic_ack(qp, p);
		return;
	}
	if (p->op->flags & CNUAS_OPF_READ) {
		cnuas_comp_read_resp(qp, p);
		return;
	}
	aeth = cnuas_eh_ptr(p->op, p->bth, CNUAS_EH_AETH);
	syn = cnuas_aeth_syndrome(aeth);
	switch (syn & CNUAS_AETH_TYPE_MASK) {
	case CNUAS_AETH_TYPE_ACK:
		cnuas_comp_ack_to(qp, p->psn);
		break;
	case CNUAS_AETH_TYPE_RNR:
		cnuas_comp_rnr(qp, p->psn, syn & CNUAS_AETH_VALUE_MASK);
		break;
	case CNUAS_AETH_TYPE_NAK:
		cnuas_comp_nak(qp, p->psn, syn & CNUAS_AETH_VALUE_MASK);
		break;
	default:
		cnuas_stat_dbg_qp(qp, CNUAS_STAT_DROP_RESP,
				  "drop: response PSN %u with reserved syndrome 0x%02x\n",
				  p->psn, syn);
		break;
	}
}
