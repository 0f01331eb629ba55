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

/*
 * IB_SRQ_MAX_WR: a new ring takes the WQEs not consumed yet (from slot 0);
 * a user SRQ learns where it is through the address in its request, the
 * provider posting nothing meanwhile. Fewer slots than WQEs posted and
 * not consumed: -EINVAL, the SRQ unchanged.
 */
static int cnuas_ib_srq_resize(struct cnuas_ib_srq *srq, u32 max_wr,
			       struct ib_udata *udata)
{
	struct cnuas_ib_dev *cdev = to_cdev(srq->ibsrq.device);
	struct cnuas_modify_srq_req req = {};
	struct cnuas_queue_info info = {};
	struct cnuas_ib_queue nq, old;
	unsigned long flags;
	u32 num, used;
	int err;

	if (!max_wr || max_wr > CNUAS_IB_MAX_SRQ_WR)
		return -EINVAL;
	if (srq->is_user) {
		/* A provider that does not know the request cannot follow. */
		if (!udata || udata->inlen < sizeof(req))
			return -EOPNOTSUPP;
		err = ib_copy_from_udata(&req, udata, sizeof(req));
		if (err)
			return err;
	}
	num = roundup_pow_of_two(max_wr);
	err = cnuas_ib_queue_init(cdev, &nq, num, srq->q.stride,
				  srq->is_user ? udata : NULL, &info);
	if (err)
		return err;
	if (srq->is_user &&
	    copy_to_user(u64_to_user_ptr(req.ring_info_addr), &info,
			 sizeof(info))) {
		err = -EFAULT;
		goto err_free;
	}

	spin_lock_irqsave(&srq->lock, flags);
	used = cnuas_ib_queue_avail(&srq->q);
	if (used > num) {
		spin_unlock_irqrestore(&srq->lock, flags);
		err = -EINVAL;
		goto err_free;
	}
	cnuas_ib_queue_copy(&nq, &srq->q, srq->q.index, used);
	/* release: the slots are written before prod counts them */
	smp_store_release(&nq.hdr->prod, used);
	if (srq->limit > num)
		srq->limit = 0;
	old = srq->q;
	srq->q = nq;
	spin_unlock_irqrestore(&srq->lock, flags);

	/* The old pages stay valid in the process until it unmaps them. */
	cnuas_ib_queue_cleanup(&old);
	return 0;

err_free:
	cnuas_ib_queue_cleanup(&nq);
	return err;
}

int cnuas_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct cnuas_ib_srq *srq = to_csrq(ibsrq);
	unsigned long flags;
	int err;

	if (mask & ~(IB_SRQ_MAX_WR | IB_SRQ_LIMIT))
		return -EINVAL;
	if ((mask & IB_SRQ_MAX_WR) &&
	    (!attr->max_wr || attr->max_wr > CNUAS_IB_MAX_SRQ_WR))
		return -EINVAL;
	if (mask & IB_SRQ_LIMIT) {
		if (attr->srq_limit > ((mask & IB_SRQ_MAX_WR) ?
				       roundup_pow_of_two(attr->max_wr) :
				       srq->q.num))
			return -EINVAL;
	}
	if (mask & IB_SRQ_MAX_WR) {
		err = cnuas_ib_srq_resize(srq, attr->max_wr, udata);
		if (err)
			return err;
		attr->max_wr = srq->q.num;
	}
	if (mask & IB_SRQ_LIMIT) {
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
