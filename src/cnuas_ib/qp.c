// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs: create (RC, UC, UD, GSI; SMI in IB mode), the state
 * machine and attribute checks of modify_qp, query, destroy, and the
 * lookups the transport uses. QPNs live in qp_xa; a lookup takes the xa_lock and a reference,
 * destroy takes the QP out of the table, then waits for the references.
 *
 * Locks, outermost first: modify_lock (mutex, modify_qp), then
 * state_lock, sq_post_lock or rq_lock (spinlocks, never nested).
 */
#include <rdma/ib_cache.h>

#include "cnuas_ib.h"
#include "link_ops.h"

#define CNUAS_IB_QP_ACCESS	(IB_ACCESS_LOCAL_WRITE | \
				 IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC)
#define CNUAS_IB_QPN_MASK	0xffffff
/*
 * IB_ACCESS_FLUSH_GLOBAL and _PERSISTENT (6.2 on; the uverbs bits 8, 9):
 * consumers ask for them on every RC QP (rdma-core's tests do). The
 * responder wants the QP's right for each placement type a FLUSH asks
 * for, as for the other remote rights (resp.c); taken on every kernel.
 */
#define CNUAS_IB_QP_ACCESS_FLUSH	(CNUAS_QP_ACCESS_FLUSH_GLOBAL | \
					 CNUAS_QP_ACCESS_FLUSH_PERSISTENT)

static int cnuas_ib_qp_check_caps(const struct ib_qp_init_attr *init)
{
	const struct ib_qp_cap *cap = &init->cap;

	if (cap->max_send_wr > CNUAS_IB_MAX_QP_WR ||
	    cap->max_send_sge > CNUAS_IB_MAX_SGE ||
	    cap->max_inline_data > CNUAS_IB_MAX_INLINE_DATA)
		return -EINVAL;
	if (!init->srq && (cap->max_recv_wr > CNUAS_IB_MAX_QP_WR ||
			   cap->max_recv_sge > CNUAS_IB_MAX_SGE))
		return -EINVAL;
	return 0;
}

static int cnuas_ib_qp_init_queues(struct cnuas_ib_qp *qp,
				   struct ib_qp_init_attr *init,
				   struct ib_udata *udata,
				   struct cnuas_create_qp_resp *resp)
{
	struct ib_qp_cap *cap = &init->cap;
	u32 num, stride, room;
	int err;

	/* SQ: a WQE header, then SGEs or inline data. */
	num = roundup_pow_of_two(max_t(u32, cap->max_send_wr, 1));
	room = max_t(u32, cap->max_send_sge * sizeof(struct cnuas_sge),
		     cap->max_inline_data);
	stride = roundup_pow_of_two(sizeof(struct cnuas_send_wqe) +
				    max_t(u32, room, sizeof(struct cnuas_sge)));
	room = stride - sizeof(struct cnuas_send_wqe);
	qp->sq_max_sge = min_t(u32, CNUAS_IB_MAX_SGE,
			       room / sizeof(struct cnuas_sge));
	qp->sq_max_inline = min_t(u32, CNUAS_IB_MAX_INLINE_DATA, room);
	err = cnuas_ib_queue_init(qp->cdev, &qp->sq, num, stride, udata,
				  &resp->sq);
	if (err)
		return err;

	if (qp->srq)
		return 0;	/* rq stays empty: resp->rq.num_entries 0 */
	num = roundup_pow_of_two(max_t(u32, cap->max_recv_wr, 1));
	stride = cnuas_ib_recv_stride(cap->max_recv_sge);
	qp->rq_max_sge = min_t(u32, CNUAS_IB_MAX_SGE,
			       (stride - sizeof(struct cnuas_recv_wqe)) /
			       sizeof(struct cnuas_sge));
	err = cnuas_ib_queue_init(qp->cdev, &qp->rq, num, stride, udata,
				  &resp->rq);
	if (err)
		cnuas_ib_queue_cleanup(&qp->sq);
	return err;
}

static void cnuas_ib_qp_caps(struct cnuas_ib_qp *qp, struct ib_qp_cap *cap)
{
	cap->max_send_wr = qp->sq.num;
	cap->max_send_sge = qp->sq_max_sge;
	cap->max_inline_data = qp->sq_max_inline;
	cap->max_recv_wr = qp->srq ? 0 : qp->rq.num;
	cap->max_recv_sge = qp->srq ? 0 : qp->rq_max_sge;
}

/* Reserve the QPN: the QP stays invisible until it is stored there. */
static int cnuas_ib_qpn_reserve(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_dev *cdev = qp->cdev;
	u32 qpn;
	int err;

	if (qp->type == IB_QPT_GSI || qp->type == IB_QPT_SMI) {
		qpn = qp->type == IB_QPT_GSI ? CNUAS_IB_GSI_QPN :
					       CNUAS_IB_SMI_QPN;
		err = xa_insert_irq(&cdev->qp_xa, qpn, NULL, GFP_KERNEL);
	} else {
		err = xa_alloc_cyclic_irq(&cdev->qp_xa, &qpn, NULL,
					  XA_LIMIT(CNUAS_IB_MIN_QPN,
						   CNUAS_IB_QPN_MASK),
					  &cdev->qp_next, GFP_KERNEL);
	}
	if (err < 0)
		return err;
	qp->ibqp.qp_num = qpn;
	return 0;
}

int cnuas_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibqp->device);
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	struct cnuas_create_qp_resp resp = {};
	int err;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_SMI:
		/* QP0: subnet management, only on an InfiniBand link. */
		if (cnuas_ib_is_eth(cdev))
			return -EOPNOTSUPP;
		fallthrough;
	case IB_QPT_GSI:
		if (udata || init->port_num != 1)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	err = cnuas_ib_qp_check_caps(init);
	if (err)
		return err;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&cdev->num_qp) > CNUAS_IB_MAX_QP) {
		err = -ENOMEM;
		goto err_count;
	}

	qp->cdev = cdev;
	qp->type = init->qp_type;
	qp->is_user = !!udata;
	qp->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	spin_lock_init(&qp->state_lock);
	spin_lock_init(&qp->sq_post_lock);
	spin_lock_init(&qp->rq_lock);
	mutex_init(&qp->modify_lock);
	qp->state = IB_QPS_RESET;
	memset(&qp->attr, 0, sizeof(qp->attr));
	if (!cnuas_ib_qp_connected(qp)) {
		/* UD/GSI have no path MTU attribute: the port's. */
		qp->attr.path_mtu = cnuas_ib_active_mtu(cdev);
		qp->attr.mtu = ib_mtu_enum_to_int(qp->attr.path_mtu);
	}
	qp->srq = init->srq ? to_csrq(init->srq) : NULL;
	qp->scq = to_ccq(init->send_cq);
	qp->rcq = to_ccq(init->recv_cq);
	refcount_set(&qp->ref, 1);
	init_completion(&qp->released);

	err = cnuas_ib_qpn_reserve(qp);
	if (err)
		goto err_mutex;
	err = cnuas_ib_qp_init_queues(qp, init, udata, &resp);
	if (err)
		goto err_qpn;
	err = cnuas_ib_transport_qp_init(qp);
	if (err)
		goto err_queues;
	if (udata) {
		resp.max_inline_data = qp->sq_max_inline;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_transport;
	}
	cnuas_ib_qp_caps(qp, &init->cap);
	/* Visible to the receive path from here. */
	xa_store_irq(&cdev->qp_xa, qp->ibqp.qp_num, qp, GFP_KERNEL);
	return 0;

err_transport:
	cnuas_ib_transport_qp_destroy(qp);
err_queues:
	cnuas_ib_queue_cleanup(&qp->rq);
	cnuas_ib_queue_cleanup(&qp->sq);
err_qpn:
	xa_erase_irq(&cdev->qp_xa, qp->ibqp.qp_num);
err_mutex:
	mutex_destroy(&qp->modify_lock);
err_count:
	atomic_dec(&cdev->num_qp);
	return err;
}

int cnuas_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	struct cnuas_ib_dev *cdev = qp->cdev;

	cnuas_ib_mcast_qp_destroy(qp);
	xa_erase_irq(&cdev->qp_xa, ibqp->qp_num);
	/* No new lookup finds it; wait for those in flight. */
	cnuas_ib_qp_put(qp);
	wait_for_completion(&qp->released);
	cnuas_ib_transport_qp_destroy(qp);
	cnuas_ib_queue_cleanup(&qp->rq);
	cnuas_ib_queue_cleanup(&qp->sq);
	mutex_destroy(&qp->modify_lock);
	atomic_dec(&cdev->num_qp);
	return 0;
}

struct cnuas_ib_qp *cnuas_ib_qp_get(struct cnuas_ib_dev *cdev, u32 qpn)
{
	struct cnuas_ib_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&cdev->qp_xa, flags);
	qp = xa_load(&cdev->qp_xa, qpn);
	if (qp)
		refcount_inc(&qp->ref);	/* > 0 while in the table */
	xa_unlock_irqrestore(&cdev->qp_xa, flags);
	return qp;
}

void cnuas_ib_qp_put(struct cnuas_ib_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

void cnuas_ib_qp_error(struct cnuas_ib_qp *qp, enum ib_event_type event)
{
	enum ib_qp_state old;
	unsigned long flags;

	spin_lock_irqsave(&qp->state_lock, flags);
	old = qp->state;
	if (old == IB_QPS_RESET || old == IB_QPS_ERR) {
		spin_unlock_irqrestore(&qp->state_lock, flags);
		return;
	}
	qp->state = IB_QPS_ERR;
	spin_unlock_irqrestore(&qp->state_lock, flags);
	cnuas_dbg_qp(qp, "state %s -> ERR by the transport, event %s\n",
		     cnuas_ib_qp_state_name(old),
		     event ? ib_event_msg(event) : "none");

	/* Any context: the transport defers the flush to its work item. */
	cnuas_ib_transport_qp_modify(qp, IB_QP_STATE, old);
	if (event && qp->ibqp.event_handler) {
		struct ib_event ev = {
			.device = qp->ibqp.device,
			.element.qp = &qp->ibqp,
			.event = event,
		};

		qp->ibqp.event_handler(&ev, qp->ibqp.qp_context);
	}
}

int cnuas_ib_recv_wqe_pop(struct cnuas_ib_qp *qp,
			  struct cnuas_ib_recv_wqe *wqe)
{
	unsigned long flags;
	u32 left;
	int err;

	if (qp->srq)
		return cnuas_ib_srq_pop(qp->srq, wqe);
	spin_lock_irqsave(&qp->rq_lock, flags);
	err = cnuas_ib_queue_pop_recv(&qp->rq, qp->rq_max_sge, wqe, &left);
	spin_unlock_irqrestore(&qp->rq_lock, flags);
	return err;
}

/* ---- modify_qp ---- */

static int cnuas_ib_qp_check_attr(struct cnuas_ib_qp *qp,
				  const struct ib_qp_attr *attr, int mask)
{
	struct cnuas_ib_dev *cdev = qp->cdev;

	if ((mask & IB_QP_PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= cnuas_ib_pkey_tbl_len(cdev))
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096 ||
	     attr->path_mtu > cnuas_ib_active_mtu(cdev)))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > CNUAS_IB_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > CNUAS_IB_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > CNUAS_IB_QPN_MASK)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags &
	     ~(CNUAS_IB_QP_ACCESS | CNUAS_IB_QP_ACCESS_FLUSH)))
		return -EINVAL;
	if (mask & IB_QP_ALT_PATH)
		return -EOPNOTSUPP;	/* no automatic path migration */
	return 0;
}

/* Store @attr's @mask fields (state_lock held). */
static void cnuas_ib_qp_store_attr(struct cnuas_ib_qp *qp,
				   const struct ib_qp_attr *attr, int mask,
				   const struct cnuas_ib_av *av)
{
	struct cnuas_ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_PATH_MTU) {
		a->path_mtu = attr->path_mtu;
		a->mtu = ib_mtu_enum_to_int(attr->path_mtu);
	}
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qpn = attr->dest_qp_num;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & CNUAS_IB_QPN_MASK;
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & CNUAS_IB_QPN_MASK;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_ACCESS_FLAGS)
		a->access = attr->qp_access_flags;
	if (mask & IB_QP_AV)
		a->av = *av;
	/* RC, UC: the UDP source port spreads by QP pair, as RoCE HCAs do. */
	if ((mask & (IB_QP_AV | IB_QP_DEST_QPN)) && cnuas_ib_qp_connected(qp) &&
	    !a->av.flow_label)
		a->av.udp_sport = rdma_get_udp_sport(0, qp->ibqp.qp_num,
						     a->dest_qpn);
}

int cnuas_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		       int mask, struct ib_udata *udata)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	enum ib_qp_state cur, new;
	struct cnuas_ib_av av;
	unsigned long flags;
	int err;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	mutex_lock(&qp->modify_lock);
	cur = READ_ONCE(qp->state);
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		err = -EINVAL;
		goto out;
	}
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, new, qp->type, mask)) {
		err = -EINVAL;
		goto out;
	}
	err = cnuas_ib_qp_check_attr(qp, attr, mask);
	if (err)
		goto out;
	if (mask & IB_QP_AV) {
		err = qp->cdev->link->av_from_attr(qp->cdev, &av,
						   &attr->ah_attr);
		if (err)
			goto out;
	}

	spin_lock_irqsave(&qp->state_lock, flags);
	if (qp->state != cur) {		/* the transport moved it to ERR */
		spin_unlock_irqrestore(&qp->state_lock, flags);
		err = -EINVAL;
		goto out;
	}
	cnuas_ib_qp_store_attr(qp, attr, mask, &av);
	qp->state = new;
	spin_unlock_irqrestore(&qp->state_lock, flags);

	if (new == IB_QPS_RESET) {
		/* Posted WQEs are dropped; producers keep their counts. */
		spin_lock_irqsave(&qp->sq_post_lock, flags);
		cnuas_ib_queue_discard(&qp->sq);
		spin_unlock_irqrestore(&qp->sq_post_lock, flags);
		if (!qp->srq) {
			spin_lock_irqsave(&qp->rq_lock, flags);
			cnuas_ib_queue_discard(&qp->rq);
			spin_unlock_irqrestore(&qp->rq_lock, flags);
		}
	}
	cnuas_dbg_qp(qp, "modify_qp: state %s -> %s, mask 0x%x\n",
		     cnuas_ib_qp_state_name(cur), cnuas_ib_qp_state_name(new),
		     mask);
	if (new == IB_QPS_RTR && cur != IB_QPS_RTR)
		cnuas_dbg_qp(qp, "RTR: dest QP%u, rq_psn %u, MTU %u, min_rnr_timer %u\n",
			     qp->attr.dest_qpn, qp->attr.rq_psn, qp->attr.mtu,
			     qp->attr.min_rnr_timer);
	if (new == IB_QPS_RTS && cur != IB_QPS_RTS)
		cnuas_dbg_qp(qp, "RTS: sq_psn %u, timeout %u, retry_cnt %u, rnr_retry %u\n",
			     qp->attr.sq_psn, qp->attr.timeout,
			     qp->attr.retry_cnt, qp->attr.rnr_retry);
	cnuas_ib_transport_qp_modify(qp, mask, cur);
out:
	if (err)
		cnuas_dbg_qp(qp, "modify_qp: state %s -> %s, mask 0x%x refused (%d)\n",
			     cnuas_ib_qp_state_name(cur),
			     cnuas_ib_qp_state_name(mask & IB_QP_STATE ?
						    attr->qp_state : cur),
			     mask, err);
	mutex_unlock(&qp->modify_lock);
	return err;
}

int cnuas_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		      int mask, struct ib_qp_init_attr *init)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	struct cnuas_ib_qp_attr a;
	unsigned long flags;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));

	spin_lock_irqsave(&qp->state_lock, flags);
	attr->qp_state = qp->state;
	a = qp->attr;
	spin_unlock_irqrestore(&qp->state_lock, flags);

	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = a.path_mtu ? a.path_mtu : IB_MTU_256;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = a.qkey;
	attr->rq_psn = a.rq_psn;
	attr->sq_psn = a.sq_psn;
	attr->dest_qp_num = a.dest_qpn;
	attr->qp_access_flags = a.access;
	cnuas_ib_qp_caps(qp, &attr->cap);
	if (cnuas_ib_qp_connected(qp) && a.av.valid)
		qp->cdev->link->av_to_attr(&a.av, &attr->ah_attr);
	attr->pkey_index = a.pkey_index;
	attr->port_num = 1;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;

	init->qp_type = qp->type;
	init->send_cq = qp->ibqp.send_cq;
	init->recv_cq = qp->ibqp.recv_cq;
	init->srq = qp->ibqp.srq;
	init->event_handler = qp->ibqp.event_handler;
	init->qp_context = qp->ibqp.qp_context;
	cnuas_ib_qp_caps(qp, &init->cap);
	init->sq_sig_type = qp->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	init->port_num = 1;
	return 0;
}
