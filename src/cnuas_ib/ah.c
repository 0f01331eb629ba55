// SPDX-License-Identifier: GPL-2.0
/*
 * Address handles, kernel and user: their address vector is the link
 * layer's to resolve (->av_from_attr, link_ops.h: roce_frame.c,
 * ib_frame.c). User UD WQEs name their AH by number (ah_xa), checked
 * against the QP's PD.
 */
#include "cnuas_ib.h"
#include "link_ops.h"

int cnuas_ib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		       struct ib_udata *udata)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibah->device);
	bool sleepable = init->flags & RDMA_CREATE_AH_SLEEPABLE;
	struct cnuas_ib_ah *ah = to_cah(ibah);
	struct cnuas_create_ah_resp resp = {};
	unsigned long flags;
	int err;

	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&cdev->num_ah) > CNUAS_IB_MAX_AH) {
		err = -ENOMEM;
		goto err_count;
	}
	err = cdev->link->av_from_attr(cdev, &ah->av, init->ah_attr);
	if (err)
		goto err_count;
	refcount_set(&ah->ref, 1);
	init_completion(&ah->released);

	/* May run in atomic context: no sleeping lock, no GFP_KERNEL. */
	xa_lock_irqsave(&cdev->ah_xa, flags);
	err = __xa_alloc_cyclic(&cdev->ah_xa, &ah->ah_num, ah,
				XA_LIMIT(1, CNUAS_IB_MAX_AH), &cdev->ah_next,
				sleepable ? GFP_KERNEL : GFP_ATOMIC);
	xa_unlock_irqrestore(&cdev->ah_xa, flags);
	if (err < 0)
		goto err_count;

	if (udata) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&cdev->ah_xa, ah->ah_num);
err_count:
	atomic_dec(&cdev->num_ah);
	return err;
}

int cnuas_ib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	to_cdev(ibah->device)->link->av_to_attr(&to_cah(ibah)->av, attr);
	return 0;
}

int cnuas_ib_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibah->device);
	struct cnuas_ib_ah *ah = to_cah(ibah);
	unsigned long irqflags;

	xa_lock_irqsave(&cdev->ah_xa, irqflags);
	__xa_erase(&cdev->ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&cdev->ah_xa, irqflags);

	/* The transport holds AH references only briefly (copies the AV). */
	cnuas_ib_ah_put(ah);
	if (flags & RDMA_DESTROY_AH_SLEEPABLE)
		wait_for_completion(&ah->released);
	else
		while (!completion_done(&ah->released))
			cpu_relax();
	atomic_dec(&cdev->num_ah);
	return 0;
}

struct cnuas_ib_ah *cnuas_ib_ah_get(struct cnuas_ib_pd *pd, u32 ah_num)
{
	struct cnuas_ib_dev *cdev = to_cdev(pd->ibpd.device);
	struct cnuas_ib_ah *ah;
	unsigned long flags;

	xa_lock_irqsave(&cdev->ah_xa, flags);
	ah = xa_load(&cdev->ah_xa, ah_num);
	if (ah && ah->ibah.pd != &pd->ibpd)
		ah = NULL;
	if (ah)
		refcount_inc(&ah->ref);
	xa_unlock_irqrestore(&cdev->ah_xa, flags);
	return ah;
}

void cnuas_ib_ah_put(struct cnuas_ib_ah *ah)
{
	if (refcount_dec_and_test(&ah->ref))
		complete(&ah->released);
}
