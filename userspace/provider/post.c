// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Posting work requests: WQEs go straight into the mapped rings. Sends
 * need a doorbell (the POST_SEND command with no work requests: the
 * kernel then reads the SQ) unless the kernel's hint says it will read
 * the SQ anyway, while ACKs are due; receives need none, except on a QP
 * in ERR, whose receives the kernel flushes when kicked.
 */
#include <errno.h>

#include "cnuas.h"
#include "wqe.h"

static void limits(struct cnuas_wqe_limits *lim, const struct ibv_qp *qp,
		   const struct cnuas_queue *q, uint32_t max_inline)
{
	lim->qp_type = qp ? qp->qp_type : IBV_QPT_RC;
	lim->stride = q->ring.stride;
	lim->max_sge = q->max_sge;
	lim->max_inline = max_inline;
}

void cnuas_sq_limits(struct cnuas_qp *qp, struct cnuas_wqe_limits *lim)
{
	limits(lim, &qp->vqp.qp, &qp->sq, qp->max_inline);
}

/* A real HCA refuses sends before RTS; ERR still takes them (flush). */
int cnuas_sq_ready(const struct cnuas_qp *qp)
{
	enum ibv_qp_state s = qp->vqp.qp.state;

	return qp->sq.map && s != IBV_QPS_RESET && s != IBV_QPS_INIT &&
	       s != IBV_QPS_RTR;
}

/* After n new WQEs: 0, or the error of the doorbell they needed. */
int cnuas_sq_doorbell(struct cnuas_qp *qp, uint32_t n)
{
	struct ibv_send_wr *dummy;

	if (!n || !cnuas_ring_needs_doorbell(&qp->sq.ring))
		return 0;
	return ibv_cmd_post_send(&qp->vqp.qp, NULL, &dummy);
}

int cnuas_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad)
{
	struct cnuas_qp *qp = to_cqp(ibqp);
	struct cnuas_ring *r = &qp->sq.ring;
	struct cnuas_wqe_limits lim;
	uint32_t space, n = 0;
	int ret = 0, db;

	if (!cnuas_sq_ready(qp)) {
		*bad = wr;
		return EINVAL;
	}
	cnuas_sq_limits(qp, &lim);

	pthread_spin_lock(&qp->sq.lock);
	space = cnuas_ring_space(r);
	for (; wr; wr = wr->next, n++) {
		uint32_t ah_num = 0;

		if (n == space) {
			ret = ENOMEM;
			break;
		}
		if (ibqp->qp_type == IBV_QPT_UD) {
			if (!wr->wr.ud.ah) {
				ret = EINVAL;
				break;
			}
			ah_num = to_cah(wr->wr.ud.ah)->ah_num;
		}
		ret = cnuas_wqe_send(cnuas_ring_slot(r, r->index + n), &lim,
				     wr, ah_num);
		if (ret)
			break;
	}
	if (n)
		cnuas_ring_produce(r, n);
	pthread_spin_unlock(&qp->sq.lock);

	if (ret)
		*bad = wr;
	db = cnuas_sq_doorbell(qp, n);
	if (db && !ret) {
		ret = db;
		*bad = NULL;	/* the WQEs are in the ring already */
	}
	return ret;
}

static int post_recv_ring(struct cnuas_queue *q, const struct ibv_qp *qp,
			  struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct cnuas_ring *r = &q->ring;
	struct cnuas_wqe_limits lim;
	uint32_t space, n = 0;
	int ret = 0;

	limits(&lim, qp, q, 0);
	pthread_spin_lock(&q->lock);
	space = cnuas_ring_space(r);
	for (; wr; wr = wr->next, n++) {
		if (n == space) {
			ret = ENOMEM;
			break;
		}
		ret = cnuas_wqe_recv(cnuas_ring_slot(r, r->index + n), &lim, wr);
		if (ret)
			break;
	}
	if (n)
		cnuas_ring_produce(r, n);
	pthread_spin_unlock(&q->lock);
	if (ret)
		*bad = wr;
	return ret;
}

int cnuas_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad)
{
	struct cnuas_qp *qp = to_cqp(ibqp);
	int ret;

	if (!qp->rq.map || ibqp->srq || ibqp->state == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	ret = post_recv_ring(&qp->rq, ibqp, wr, bad);
	/*
	 * In ERR the kernel flushes receives only when kicked (how a drain
	 * learns its marker completed): the one case with a syscall.
	 */
	if (ibqp->state == IBV_QPS_ERR) {
		struct ibv_send_wr *dummy;
		int db = ibv_cmd_post_send(ibqp, NULL, &dummy);

		if (db && !ret)
			ret = db;
	}
	return ret;
}

int cnuas_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	return post_recv_ring(&to_csrq(ibsrq)->q, NULL, wr, bad);
}
