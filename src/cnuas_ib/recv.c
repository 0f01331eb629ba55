// SPDX-License-Identifier: GPL-2.0
/*
 * Received RoCEv2 frames: validate (net.c), find the QP by the BTH's
 * destination QPN, check that the packet may reach it (transport, state,
 * RC or UC peer) and hand requests to the responder, responses to the
 * completer. Every dropped frame is counted by reason. NAPI softirq.
 */
#include <linux/skbuff.h>

#include "cnuas_ib.h"
#include "link_ops.h"
#include "wire.h"

/*
 * IBA 10.9.3: QP0 takes any P_Key, QP1 one that matches an entry of the
 * P_Key table (the receive completion names it), every other QP only
 * one that matches its own. A refusal counts as a P_Key violation.
 */
static int cnuas_rx_pkey(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_dev *cdev = qp->cdev;
	u16 pkey = cnuas_bth_pkey(p->bth);
	u16 i, idx = qp->t.pkey_index;

	p->pkey_index = 0;
	if (qp->type == IB_QPT_SMI)
		return 0;
	if (qp->type == IB_QPT_GSI) {
		for (i = 0; i < cnuas_ib_pkey_tbl_len(cdev); i++) {
			if (cnuas_ib_pkey_match(pkey, cnuas_ib_pkey(cdev, i))) {
				p->pkey_index = i;
				return 0;
			}
		}
	} else if (cnuas_ib_pkey_match(pkey, cnuas_ib_pkey(cdev, idx))) {
		p->pkey_index = idx;
		return 0;
	}
	cnuas_ib_port_key_violation(cdev, true);
	cnuas_ib_trap_key(cdev, true, p, pkey,
			  p->op->flags & CNUAS_OPF_UD ?
			  cnuas_deth_sqpn(cnuas_eh_ptr(p->op, p->bth,
						       CNUAS_EH_DETH)) :
			  qp->t.dest_qpn);
	return cnuas_rx_drop_qp(qp, CNUAS_STAT_DROP_PKEY,
				"PSN %u: P_Key 0x%04x does not match %s\n",
				p->psn, pkey, qp->type == IB_QPT_GSI ?
				"the P_Key table" : "the QP's");
}

/* The packet's transport and the QP's type agree; the QP takes it now. */
static int cnuas_rx_check(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p)
{
	u16 flags = p->op->flags;
	enum ib_qp_state s = qp->t.state;
	bool gsi, to_gsi;
	int why;

	why = cnuas_rx_pkey(qp, p);
	if (why)
		return why;
	if (cnuas_ib_qp_connected(qp)) {
		bool rc = qp->type == IB_QPT_RC;

		if (!(flags & (rc ? CNUAS_OPF_RC : CNUAS_OPF_UC)))
			return cnuas_rx_drop_qp(qp, CNUAS_STAT_DROP_OPCODE,
						"opcode 0x%02x is not %s\n",
						p->opcode, rc ? "RC" : "UC");
		/* No source QPN on the wire: the peer's address. */
		if (p->net_type == RDMA_NETWORK_IB) {
			if (p->slid != qp->attr.av.dlid)
				return cnuas_rx_drop_qp(qp, CNUAS_STAT_DROP_SRC,
							"PSN %u from LID 0x%x, the peer is 0x%x\n",
							p->psn, p->slid,
							qp->attr.av.dlid);
		} else if (memcmp(&p->saddr, qp->attr.av.dgid.raw,
				  sizeof(p->saddr)))
			return cnuas_rx_drop_qp(qp, CNUAS_STAT_DROP_SRC,
						"PSN %u from %pI6c, the peer is %pI6c\n",
						p->psn, &p->saddr,
						qp->attr.av.dgid.raw);
		/* Requests from RTR on, responses (RC) in RTS and SQD. */
		if (s == IB_QPS_RTS || s == IB_QPS_SQD ||
		    ((flags & CNUAS_OPF_REQ) &&
		     (s == IB_QPS_RTR || s == IB_QPS_SQE)))
			return 0;
		return cnuas_rx_drop_qp(qp, CNUAS_STAT_DROP_STATE,
					"%s PSN %u in state %s\n",
					flags & CNUAS_OPF_REQ ? "request" :
					"response", p->psn,
					cnuas_ib_qp_state_name(s));
	}
	/* QP0 and QP1 take their numbers' packets, other UD QPs none. */
	gsi = qp->type == IB_QPT_GSI || qp->type == IB_QPT_SMI;
	to_gsi = p->qpn == CNUAS_IB_GSI_QPN || !p->qpn;
	/* Multicast: only for a UD QP (mcast.c attached no other). */
	if (p->qpn == CNUAS_IB_MCAST_QPN && qp->type != IB_QPT_UD)
		return cnuas_rx_drop_qp(qp, CNUAS_STAT_DROP_QPN,
					"multicast for a QP that is not UD\n");
	if (!(flags & CNUAS_OPF_UD) || gsi != to_gsi)
		return cnuas_rx_drop_qp(qp, CNUAS_STAT_DROP_OPCODE,
					"opcode 0x%02x is not UD, or GSI mismatch\n",
					p->opcode);
	if (s == IB_QPS_RTR || s == IB_QPS_RTS || s == IB_QPS_SQD ||
	    s == IB_QPS_SQE)
		return 0;
	return cnuas_rx_drop_qp(qp, CNUAS_STAT_DROP_STATE,
				"datagram in state %s\n",
				cnuas_ib_qp_state_name(s));
}

int cnuas_ib_parse_bth(struct cnuas_ib_dev *cdev, struct cnuas_ib_rxp *p,
		       void *bth, u32 blen)
{
	const struct cnuas_opcode *op;
	int plen;

	if (cnuas_bth_tver(bth))
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "BTH transport version %u\n",
				     cnuas_bth_tver(bth));
	op = cnuas_opcode_get(cnuas_bth_opcode(bth));
	if (!op)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_OPCODE,
				     "opcode 0x%02x unknown or not supported\n",
				     cnuas_bth_opcode(bth));
	plen = cnuas_payload_len(op, bth, blen);
	if (plen < 0)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "opcode 0x%02x: headers, pad and ICRC overrun the %u bytes from the BTH on\n",
				     cnuas_bth_opcode(bth), blen);
	/* Pad only rounds a payload up to 4 bytes. */
	if ((!(op->flags & CNUAS_OPF_PAYLOAD) && (plen || cnuas_bth_pad(bth))) ||
	    ((plen + cnuas_bth_pad(bth)) & 3))
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "opcode 0x%02x: payload of %d bytes with pad %u\n",
				     cnuas_bth_opcode(bth), plen,
				     cnuas_bth_pad(bth));
	p->op = op;
	p->bth = bth;
	p->opcode = cnuas_bth_opcode(bth);
	p->psn = cnuas_bth_psn(bth);
	p->qpn = cnuas_bth_qpn(bth);
	p->payload = (u8 *)bth + op->hdr_len;
	p->paylen = plen;
	return 0;
}

/* Hand @p to the QP numbered @qpn: 0, or the CNUAS_STAT_* drop reason. */
static int cnuas_rx_qp(struct cnuas_ib_dev *cdev, u32 qpn,
		       struct cnuas_ib_rxp *p)
{
	struct cnuas_ib_qp *qp;
	bool runner;
	int why;

	/* QP0 (InfiniBand only) and QP1 are in the table like any QP. */
	qp = cnuas_ib_qp_get(cdev, qpn);
	if (!qp)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_QPN,
				     "opcode 0x%02x PSN %u: no QP%u\n",
				     p->opcode, p->psn, qpn);
	/*
	 * Send what the packets call for (ACKs, READ responses, more
	 * requests) at the end of the batch, not from the worker.
	 */
	runner = cnuas_ib_tqp_runner_begin(qp);
	spin_lock(&qp->t.lock);
	why = cnuas_rx_check(qp, p);
	if (!why) {
		if (p->op->flags & CNUAS_OPF_REQ)
			cnuas_ib_resp_rx(qp, p);
		else
			cnuas_ib_comp_rx(qp, p);
	}
	cnuas_ib_tqp_unlock(qp);
	if (runner)
		cnuas_ib_rx_defer(qp);	/* keeps the reference */
	else
		cnuas_ib_qp_put(qp);
	return why;
}

/*
 * A multicast packet: a UD SEND to every QP attached to its destination
 * address. Delivered if one of them took it; else dropped for the first
 * reason (no group: a QPN drop).
 */
static int cnuas_rx_mcast(struct cnuas_ib_dev *cdev, struct cnuas_ib_rxp *p)
{
	u32 qpn[CNUAS_IB_MAX_MCAST_QP_ATTACH], n, i;
	int why = CNUAS_STAT_DROP_QPN, w;
	bool taken = false;

	if (!(p->op->flags & CNUAS_OPF_UD))
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_OPCODE,
				     "multicast opcode 0x%02x is not UD\n",
				     p->opcode);
	n = cdev->link->mcast_qpns(cdev, p, qpn);
	if (!n)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_QPN,
				     "multicast PSN %u: no QP in its group\n",
				     p->psn);
	for (i = 0; i < n; i++) {
		w = cnuas_rx_qp(cdev, qpn[i], p);
		if (!w)
			taken = true;
		else if (!i)
			why = w;
	}
	if (n)
		cnuas_ib_stat_inc(cdev, CNUAS_STAT_MCAST_RCVD);
	return taken ? 0 : why;
}

void cnuas_ib_rx(struct cnuas_ib_dev *cdev, struct sk_buff *skb, u32 flags)
{
	struct cnuas_ib_rxp p;
	int why;

	cnuas_ib_stat_inc(cdev, CNUAS_STAT_RCVD_PKTS);
	why = cnuas_ib_parse(cdev, skb, flags, &p);
	if (why)
		goto drop;
	if (p.qpn == CNUAS_IB_MCAST_QPN)
		why = cnuas_rx_mcast(cdev, &p);
	else
		why = cnuas_rx_qp(cdev, p.qpn, &p);
	if (why)
		goto drop;
	consume_skb(skb);
	return;
drop:
	cnuas_ib_stat_inc(cdev, why);
	kfree_skb(skb);
}
