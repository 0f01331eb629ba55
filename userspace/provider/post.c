// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Posting work requests: WQEs go straight into the mapped rings. Sends
 * need a doorbell (the POST_SEND command with no work requests: the
 * kernel then reads the SQ) unless the kernel's hint says it will read
 * the SQ anyway, while ACKs are due; receives need none, except on a QP
 * in ERR, whose receives the kernel flushes when kicked.
 */
#include <errno.h>
#include <unistd.h>

#include "cnuas.h"
#include "wqe.h"

static void limits(struct cnuas_wqe_limits *lim, const struct ibv_qp *qp,
		   const struct cnuas_queue *q, uint32_t max_inline)
{
	lim->qp_type = qp ? qp->qp_type : IBV_QPT_RC;
	lim->stride = q->ring.stride;
	lim->max_sge = q->max_sge;
	lim->max_inline = max_inline;
	lim->wr_api = 0;
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

/*
 * Kick the kernel to read the SQ: the POST_SEND command with no work
 * requests, written to the command fd. libibverbs would carry it in the
 * ioctl interface (UVERBS_METHOD_INVOKE_WRITE), whose attribute parsing
 * costs the guest kernel more than the kick itself, on the path of every
 * message. A kernel without the write() interface gets the ioctl from
 * then on (the kick is idempotent: trying both is harmless).
 */
static int cnuas_kick_sq(struct ibv_qp *ibqp)
{
	struct cnuas_context *ctx = to_cctx(ibqp->context);
	struct ib_uverbs_post_send_resp resp;
	struct ibv_post_send cmd = {
		.hdr.command = IB_USER_VERBS_CMD_POST_SEND,
		.hdr.in_words = sizeof(cmd) / 4,
		.hdr.out_words = sizeof(resp) / 4,
	};
	struct ibv_send_wr *dummy;
	int ret;

	if (!ctx->kick_ioctl) {
		cmd.response = (uintptr_t)&resp;
		cmd.qp_handle = ibqp->handle;
		cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
		if (write(ibqp->context->cmd_fd, &cmd, sizeof(cmd)) ==
		    sizeof(cmd))
			return 0;
	}
	ret = ibv_cmd_post_send(ibqp, NULL, &dummy);
	if (!ret)
		ctx->kick_ioctl = 1;
	return ret;
}

/* After n new WQEs: 0, or the error of the doorbell they needed. */
int cnuas_sq_doorbell(struct cnuas_qp *qp, uint32_t n)
{
	if (!n || !cnuas_ring_needs_doorbell(&qp->sq.ring))
		return 0;
	return cnuas_kick_sq(&qp->vqp.qp);
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
		int db = cnuas_kick_sq(ibqp);

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
