// SPDX-License-Identifier: GPL-2.0
/*
 * Shared receive queues: a ring of receive WQEs (the provider or
 * post_srq_recv produces, the transport consumes through
 * cnuas_ib_srq_pop()) and the limit event.
 */
#include "cnuas_ib.h"

int cnuas_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibsrq->device);
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);
	struct cnuas_create_srq_resp resp = {};
	struct ib_srq_attr *attr = &init->attr;
	u32 num, stride;
	int err;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	if (!attr->max_wr || attr->max_wr > CNUAS_IB_MAX_SRQ_WR ||
	    attr->max_sge > CNUAS_IB_MAX_SRQ_SGE)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&cdev->num_srq) > CNUAS_IB_MAX_SRQ) {
		err = -ENOMEM;
		goto err_count;
	}

	num = roundup_pow_of_two(attr->max_wr);
	stride = cnuas_ib_recv_stride(attr->max_sge);
	spin_lock_init(&srq->lock);
	srq->max_sge = min_t(u32, CNUAS_IB_MAX_SRQ_SGE,
			     (stride - sizeof(struct cnuas_recv_wqe)) /
			     sizeof(struct cnuas_sge));
	srq->limit = 0;		/* ibv_create_srq ignores srq_limit */
	srq->is_user = !!udata;
	err = cnuas_ib_queue_init(cdev, &srq->q, num, stride, udata,
				  &resp.srq);
	if (err)
		goto err_count;
	err = xa_alloc_cyclic_irq(&cdev->srq_xa, &srq->srq_num, srq,
				  XA_LIMIT(1, CNUAS_IB_MAX_SRQ),
				  &cdev->srq_next, GFP_KERNEL);
	if (err < 0)
		goto err_queue;
	if (udata) {
		resp.srq_num = srq->srq_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	attr->max_wr = num;
	attr->max_sge = srq->max_sge;
	return 0;

err_erase:
	xa_erase_irq(&cdev->srq_xa, srq->srq_num);
err_queue:
	cnuas_ib_queue_cleanup(&srq->q);
err_count:
	atomic_dec(&cdev->num_srq);
	return err;
}

int cnuas_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);
	unsigned long flags;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if (mask & IB_SRQ_MAX_WR)
		return -EOPNOTSUPP;	/* no IB_DEVICE_SRQ_RESIZE */
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > srq->q.num)
			return -EINVAL;
		spin_lock_irqsave(&srq->lock, flags);
		srq->limit = attr->srq_limit;	/* 0 disarms */
		spin_unlock_irqrestore(&srq->lock, flags);
	}
	return 0;
}

int cnuas_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);

	attr->max_wr = srq->q.num;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = READ_ONCE(srq->limit);
	return 0;
}

int cnuas_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibsrq->device);
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);

	/* ib_core destroys an SRQ only when no QP uses it any more. */
	xa_erase_irq(&cdev->srq_xa, srq->srq_num);
	cnuas_ib_queue_cleanup(&srq->q);
	atomic_dec(&cdev->num_srq);
	return 0;
}

/* Write one receive WR into a kernel-only receive ring (lock held). */
int cnuas_ib_recv_wr_put(struct cnuas_ib_queue *q, u32 max_sge,
			 const struct ib_recv_wr *wr)
{
	struct cnuas_recv_wqe *wqe;
	struct cnuas_sge *sge;
	int i;

	if (wr->num_sge < 0 || (u32)wr->num_sge > max_sge)
		return -EINVAL;
	if (!cnuas_ib_queue_kspace(q))
		return -ENOMEM;
	wqe = cnuas_ib_queue_slot(q, READ_ONCE(q->hdr->prod));
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->reserved = 0;
	sge = (struct cnuas_sge *)(wqe + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	cnuas_ib_queue_kproduce(q, 1);
	return 0;
}

int cnuas_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad_wr)
{
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);
	unsigned long flags;
	int err = 0;

	if (srq->is_user) {	/* the ring is the interface */
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&srq->lock, flags);
	for (; wr; wr = wr->next) {
		err = cnuas_ib_recv_wr_put(&srq->q, srq->max_sge, wr);
		if (err) {
			*bad_wr = wr;
			break;
		}
	}
	spin_unlock_irqrestore(&srq->lock, flags);
	return err;
}

int cnuas_ib_srq_pop(struct cnuas_ib_srq *srq, struct cnuas_ib_recv_wqe *wqe)
{
	bool limit_reached = false;
	unsigned long flags;
	u32 left;
	int err;

	spin_lock_irqsave(&srq->lock, flags);
	err = cnuas_ib_queue_pop_recv(&srq->q, srq->max_sge, wqe, &left);
	if (err != -ENOENT && srq->limit && left < srq->limit) {
		srq->limit = 0;		/* fires once, then disarmed */
		limit_reached = true;
	}
	spin_unlock_irqrestore(&srq->lock, flags);

	if (limit_reached && srq->ibsrq.event_handler) {
		struct ib_event ev = {
			.device = srq->ibsrq.device,
			.element.srq = &srq->ibsrq,
			.event = IB_EVENT_SRQ_LIMIT_REACHED,
		};

		srq->ibsrq.event_handler(&ev, srq->ibsrq.srq_context);
	}
	return err;
}
