// SPDX-License-Identifier: GPL-2.0
/*
 * Completion queues: a ring of struct cnuas_cqe the kernel produces. User
 * CQs are mmap'ed and polled by the provider; kernel CQs are polled by
 * cnuas_ib_poll_cq(). Completion events follow req_notify_cq's arming.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <rdma/uverbs_ioctl.h>

#include "cnuas_ib.h"

static struct ib_udata *cnuas_ib_cq_udata(struct CNUAS_CREATE_CQ_ARG *arg)
{
#ifdef CNUAS_HAVE_CREATE_CQ_ATTRS
	return arg ? &arg->driver_udata : NULL;
#else
	return arg;
#endif
}

int cnuas_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       struct CNUAS_CREATE_CQ_ARG *arg)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibcq->device);
	struct ib_udata *udata = cnuas_ib_cq_udata(arg);
	struct cnuas_ib_cq *cq = to_ccq(ibcq);
	struct cnuas_create_cq_resp resp = {};
	u32 num;
	int err;

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > CNUAS_IB_MAX_CQE)
		return -EINVAL;
	if (attr->comp_vector >= (u32)ibcq->device->num_comp_vectors)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&cdev->num_cq) > CNUAS_IB_MAX_CQ) {
		err = -ENOMEM;
		goto err_count;
	}

	/* The ring holds num CQEs: full is prod - cons == num. */
	num = roundup_pow_of_two(attr->cqe);
	spin_lock_init(&cq->lock);
	cq->notify = 0;
	cq->overflow = false;
	cq->is_user = !!udata;
	cq->kernel_cons = 0;
	err = cnuas_ib_queue_init(cdev, &cq->q, num, sizeof(struct cnuas_cqe),
				  udata, &resp.cq);
	if (err)
		goto err_count;
	if (udata) {
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_queue;
	}
	ibcq->cqe = num;
	return 0;

err_queue:
	cnuas_ib_queue_cleanup(&cq->q);
err_count:
	atomic_dec(&cdev->num_cq);
	return err;
}

int cnuas_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct cnuas_ib_cq *cq = to_ccq(ibcq);

	/* ib_core destroys a CQ only when no QP uses it any more. */
	cnuas_ib_queue_cleanup(&cq->q);
	atomic_dec(&to_cdev(ibcq->device)->num_cq);
	return 0;
}

/*
 * Move the CQ to a new ring of roundup_pow_of_two(@cqe) entries, the
 * unpolled CQEs first. Fails with -EINVAL when they do not fit, as the
 * verb requires, or when a user consumer index makes no sense; the CQ
 * then stays as it was. The copy runs under the CQ lock, so no CQE is
 * posted to the old ring meanwhile (at most CNUAS_IB_MAX_CQE entries).
 */
static int cnuas_ib_cq_resize(struct ib_cq *ibcq, u32 cqe,
			      struct ib_udata *udata)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibcq->device);
	struct cnuas_ib_cq *cq = to_ccq(ibcq);
	struct cnuas_resize_cq_resp resp = {};
	struct cnuas_ib_queue nq, old;
	unsigned long flags;
	u32 num, cons, used;
	int err;

	if (cqe < 1 || cqe > CNUAS_IB_MAX_CQE || !!udata != cq->is_user)
		return -EINVAL;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	num = roundup_pow_of_two(cqe);
	err = cnuas_ib_queue_init(cdev, &nq, num, sizeof(struct cnuas_cqe),
				  udata, &resp.cq);
	if (err)
		return err;
	/* Before the switch: the provider ignores it if we fail after. */
	if (udata) {
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_free;
	}

	spin_lock_irqsave(&cq->lock, flags);
	/* acquire: the provider is done with the CQEs before cons */
	cons = cq->is_user ? smp_load_acquire(&cq->q.hdr->cons) :
			     cq->kernel_cons;
	used = cq->q.index - cons;
	if (used > cq->q.num || used > num) {
		spin_unlock_irqrestore(&cq->lock, flags);
		err = -EINVAL;
		goto err_free;
	}
	cnuas_ib_queue_copy(&nq, &cq->q, cons, used);
	cnuas_ib_queue_produce(&nq, used);
	old = cq->q;
	cq->q = nq;
	cq->kernel_cons = 0;
	cq->overflow = false;
	ibcq->cqe = num;
	spin_unlock_irqrestore(&cq->lock, flags);

	/* The old pages stay valid in the process until it unmaps them. */
	cnuas_ib_queue_cleanup(&old);
	return 0;

err_free:
	cnuas_ib_queue_cleanup(&nq);
	return err;
}

int cnuas_ib_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	return cqe < 1 ? -EINVAL : cnuas_ib_cq_resize(ibcq, cqe, udata);
}

int cnuas_ib_resize_user_cq(struct ib_cq *ibcq, unsigned int cqe,
			    struct ib_udata *udata)
{
	return cnuas_ib_cq_resize(ibcq, cqe, udata);
}

static void cnuas_ib_cq_event(struct cnuas_ib_cq *cq, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = cq->ibcq.device,
		.element.cq = &cq->ibcq,
		.event = type,
	};

	if (cq->ibcq.event_handler)
		cq->ibcq.event_handler(&ev, cq->ibcq.cq_context);
}

int cnuas_ib_cq_post(struct cnuas_ib_cq *cq, const struct cnuas_cqe *cqe,
		     bool solicited)
{
	bool report_overflow = false, wake = false;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	if (!cnuas_ib_queue_space(&cq->q)) {
		report_overflow = !cq->overflow;
		cq->overflow = true;
		spin_unlock_irqrestore(&cq->lock, flags);
		if (report_overflow) {
			ibdev_warn_ratelimited(cq->ibcq.device,
					       "CQ overflow (%u entries)\n",
					       cq->q.num);
			cnuas_ib_cq_event(cq, IB_EVENT_CQ_ERR);
		}
		return -ENOSPC;
	}
	memcpy(cnuas_ib_queue_slot(&cq->q, cq->q.index), cqe, sizeof(*cqe));
	cnuas_ib_queue_produce(&cq->q, 1);
	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED &&
	     (solicited || cqe->status != IB_WC_SUCCESS))) {
		cq->notify = 0;
		wake = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	/* Outside the lock: the handler may poll or re-arm this CQ. */
	if (wake && cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
	return 0;
}

int cnuas_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct cnuas_ib_cq *cq = to_ccq(ibcq);
	unsigned long irqflags;
	int ret = 0;
	u32 used;

	spin_lock_irqsave(&cq->lock, irqflags);
	if ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_NEXT_COMP)
		cq->notify = IB_CQ_NEXT_COMP;
	else if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = IB_CQ_SOLICITED;
	if (flags & IB_CQ_REPORT_MISSED_EVENTS) {
		if (cq->is_user)
			used = cq->q.num - cnuas_ib_queue_space(&cq->q);
		else
			used = cq->q.index - cq->kernel_cons;
		ret = used ? 1 : 0;
	}
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

static void cnuas_ib_cqe_to_wc(struct cnuas_ib_dev *cdev,
			       const struct cnuas_cqe *cqe, struct ib_wc *wc)
{
	struct cnuas_ib_qp *qp;

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->src_qp = cqe->src_qp;
	wc->slid = cqe->slid;
	wc->pkey_index = cqe->pkey_index;
	wc->sl = cqe->sl;
	wc->dlid_path_bits = cqe->dlid_path_bits;
	wc->port_num = cqe->port_num;

	if (cqe->wc_flags & CNUAS_CQE_WITH_IMM) {
		wc->ex.imm_data = (__force __be32)cqe->ex;
		wc->wc_flags |= IB_WC_WITH_IMM;
	} else if (cqe->wc_flags & CNUAS_CQE_WITH_INV) {
		wc->ex.invalidate_rkey = cqe->ex;
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	if (cqe->wc_flags & CNUAS_CQE_GRH) {
		wc->wc_flags |= IB_WC_GRH;
		if (cqe->network_hdr_type != RDMA_NETWORK_IB) {
			wc->wc_flags |= IB_WC_WITH_NETWORK_HDR_TYPE;
			wc->network_hdr_type = cqe->network_hdr_type;
		}
	}
	if (!is_zero_ether_addr(cqe->smac)) {
		ether_addr_copy(wc->smac, cqe->smac);
		wc->wc_flags |= IB_WC_WITH_SMAC;
	}
	if (cqe->vlan_id < VLAN_N_VID) {	/* 0xffff: untagged */
		wc->vlan_id = cqe->vlan_id;
		wc->wc_flags |= IB_WC_WITH_VLAN;
	}

	/*
	 * The QP may be gone (a CQE left behind by a destroyed QP): ULPs
	 * drain before destroying, so NULL is only seen by careless ones.
	 */
	qp = cnuas_ib_qp_get(cdev, cqe->qp_num);
	if (qp) {
		wc->qp = &qp->ibqp;
		cnuas_ib_qp_put(qp);
	}
}

int cnuas_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibcq->device);
	struct cnuas_ib_cq *cq = to_ccq(ibcq);
	unsigned long flags;
	int n = 0;

	if (cq->is_user)	/* the provider polls the ring itself */
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num && cq->kernel_cons != cq->q.index) {
		cnuas_ib_cqe_to_wc(cdev,
				   cnuas_ib_queue_slot(&cq->q, cq->kernel_cons),
				   &wc[n]);
		cq->kernel_cons++;
		n++;
	}
	if (n)	/* release: done reading these CQEs */
		smp_store_release(&cq->q.hdr->cons, cq->kernel_cons);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}
