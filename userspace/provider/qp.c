// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Queue pairs (RC, UC, UD): the kernel answers create_qp with the geometry
 * of the SQ and RQ rings, which are mapped here and unmapped after the
 * QP is destroyed. send_ops_flags add the ibv_wr_* API (wr.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cnuas.h"
#include "cnuas-abi.h"
#include "wqe.h"

static void unmap_qp(struct cnuas_qp *qp)
{
	cnuas_queue_unmap(&qp->sq);
	cnuas_queue_unmap(&qp->rq);
}

static int map_qp(struct ibv_context *ibctx, struct cnuas_qp *qp,
		  const struct cnuas_create_qp_resp *drv,
		  const struct ibv_qp_cap *cap, int has_srq)
{
	int ret;

	if (drv->sq.num_entries) {
		ret = cnuas_queue_map(ibctx, &qp->sq, &drv->sq,
				      sizeof(struct cnuas_send_wqe), 1);
		if (ret)
			return ret;
	}
	qp->sq.max_sge = cap->max_send_sge;
	qp->max_inline = cap->max_inline_data;
	if (drv->max_inline_data < qp->max_inline)
		qp->max_inline = drv->max_inline_data;

	if (has_srq || !drv->rq.num_entries)
		return 0;
	ret = cnuas_queue_map(ibctx, &qp->rq, &drv->rq,
			      sizeof(struct cnuas_recv_wqe), 1);
	if (ret) {
		cnuas_queue_unmap(&qp->sq);
		return ret;
	}
	qp->rq.max_sge = cap->max_recv_sge;
	return 0;
}

struct ibv_qp *cnuas_create_qp_ex(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct cnuas_cmd_create_qp cmd = {};
	struct cnuas_cmd_create_qp_resp resp = {};
	struct ibv_qp_init_attr_ex kattr;
	struct cnuas_qp *qp;
	int ret;

	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* Creation flags may be asked for as long as none is set (as rxe). */
	if (!check_comp_mask(attr->comp_mask, IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_CREATE_FLAGS |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) || !attr->pd) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (attr->send_ops_flags &
	     ~cnuas_wr_ops(to_cctx(ibctx), attr->qp_type))) {
		errno = EOPNOTSUPP;	/* as mlx5 for operations it lacks */
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;
	/*
	 * The send ops are ours alone and no creation flag is set: the
	 * kernel command takes neither.
	 */
	kattr = *attr;
	kattr.comp_mask &= ~(IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			     IBV_QP_INIT_ATTR_CREATE_FLAGS);
	ret = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, &kattr, &cmd.ibv_cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	attr->cap = kattr.cap;
	ret = map_qp(ibctx, qp, &resp.drv_payload, &attr->cap, attr->srq != NULL);
	if (ret)
		goto err_destroy;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ret = cnuas_wr_init(qp, attr->send_ops_flags);
		if (ret)
			goto err_unmap;
	}
	return &qp->vqp.qp;

err_unmap:
	unmap_qp(qp);
err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *cnuas_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {};
	struct ibv_qp *qp;

	memcpy(&ex, attr, sizeof(*attr));
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = cnuas_create_qp_ex(pd->context, &ex);
	if (qp)
		memcpy(attr, &ex, sizeof(*attr));	/* the granted caps */
	return qp;
}

int cnuas_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		   struct ibv_qp_init_attr *init)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init, &cmd, sizeof(cmd));
}

/* After RESET the kernel may have reset the rings: take its indices. */
static void resync(struct cnuas_queue *q)
{
	if (!q->map)
		return;
	pthread_spin_lock(&q->lock);
	q->ring.index = __atomic_load_n(&q->ring.hdr->prod, __ATOMIC_ACQUIRE);
	pthread_spin_unlock(&q->lock);
}

int cnuas_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct cnuas_qp *qp = to_cqp(ibqp);
	struct ibv_modify_qp cmd;
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, mask, &cmd, sizeof(cmd));
	if (!ret && (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		resync(&qp->sq);
		resync(&qp->rq);
		if (ibqp->send_cq)
			cnuas_cq_clean(ibqp->send_cq, ibqp->qp_num);
		if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
			cnuas_cq_clean(ibqp->recv_cq, ibqp->qp_num);
	}
	return ret;
}

int cnuas_destroy_qp(struct ibv_qp *ibqp)
{
	struct cnuas_qp *qp = to_cqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	unmap_qp(qp);
	cnuas_wr_free(qp);
	free(qp);
	return 0;
}
