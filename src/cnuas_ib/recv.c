// SPDX-License-Identifier: GPL-2.0
/*
 * Received RoCEv2 frames: validate (net.c), find the QP by the BTH's
 * destination QPN, check that the packet may reach it (transport, state,
 * RC peer) and hand requests to the responder, responses to the
 * completer. Every dropped frame is counted by reason. NAPI softirq.
 */
#include <linux/skbuff.h>

#include "cnuas_ib.h"
#include "wire.h"

/* The packet's transport and the QP's type agree; the QP takes it now. */
static int cnuas_rx_check(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	u16 flags = p->op->flags;
	enum ib_qp_state s = qp->t.state;
	bool gsi, to_gsi;

	if (qp->type == IB_QPT_RC) {
		if (!(flags & CNUAS_OPF_RC))
			return CNUAS_STAT_DROP_OPCODE;
		/* RC has no source QPN on the wire: the peer's address. */
		if (memcmp(&p->saddr, qp->attr.av.dgid.raw, sizeof(p->saddr)))
			return CNUAS_STAT_DROP_SRC;
		if (flags & CNUAS_OPF_REQ)
			return s == IB_QPS_RTR || s == IB_QPS_RTS ||
			       s == IB_QPS_SQD || s == IB_QPS_SQE ?
			       0 : CNUAS_STAT_DROP_STATE;
		return s == IB_QPS_RTS || s == IB_QPS_SQD ?
		       0 : CNUAS_STAT_DROP_STATE;
	}
	gsi = qp->type == IB_QPT_GSI;
	to_gsi = p->qpn == CNUAS_IB_GSI_QPN;
	if (!(flags & CNUAS_OPF_UD) || gsi != to_gsi)
		return CNUAS_STAT_DROP_OPCODE;
	return s == IB_QPS_RTR || s == IB_QPS_RTS || s == IB_QPS_SQD ||
	       s == IB_QPS_SQE ? 0 : CNUAS_STAT_DROP_STATE;
}

void cnuas_ib_rx(struct cnuas_ib_dev *cdev, struct sk_buff *skb, u32 flags)
{
	struct cnuas_ib_rxp p;
	struct cnuas_ib_qp *qp;
	bool runner;
	int why;

	cnuas_ib_stat_inc(cdev, CNUAS_STAT_RCVD_PKTS);
	why = cnuas_ib_parse(cdev, skb, flags, &p);
	if (why)
		goto drop;
	/* QP0 does not exist on RoCE; QPN 1 is the GSI QP. */
	qp = p.qpn ? cnuas_ib_qp_get(cdev, p.qpn) : NULL;
	if (!qp) {
		why = CNUAS_STAT_DROP_QPN;
		goto drop;
	}
	/*
	 * Send what the packets call for (ACKs, READ responses, more
	 * requests) at the end of the batch, not from the worker.
	 */
	runner = cnuas_ib_tqp_runner_begin(qp);
	spin_lock(&qp->t.lock);
	why = cnuas_rx_check(qp, &p);
	if (!why) {
		if (p.op->flags & CNUAS_OPF_REQ)
			cnuas_ib_resp_rx(qp, &p);
		else
			cnuas_ib_comp_rx(qp, &p);
	}
	cnuas_ib_tqp_unlock(qp);
	if (runner)
		cnuas_ib_rx_defer(qp);	/* keeps the reference */
	else
		cnuas_ib_qp_put(qp);
	if (why)
		goto drop;
	consume_skb(skb);
	return;
drop:
	cnuas_ib_stat_inc(cdev, why);
	kfree_skb(skb);
}
