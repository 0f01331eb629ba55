// SPDX-License-Identifier: GPL-2.0
/*
 * Fast-registration MRs (IB_MR_TYPE_MEM_REG), for kernel ULPs such as
 * nvme-rdma, iSER and NFS/RDMA: ib_alloc_mr() gives an MR with no access,
 * ib_map_mr_sg() fills its page list (kernel virtual addresses: the device
 * uses virt DMA), an IB_WR_REG_MR work request gives it a key, access
 * rights and the mapped range, and IB_WR_LOCAL_INV or a peer's SEND with
 * Invalidate takes them away again.
 *
 * The key lookups match is mr->key, not ibmr.lkey: ib_update_fast_reg_key()
 * changes the latter before the REG_MR that makes the new key valid is
 * even posted, as the ULP prepares it. Invalid means mr->revoked, which
 * every lookup already refuses. Key, range, access and validity change
 * under the MR table's lock, which lookups hold too.
 */
#include <linux/slab.h>

#include "cnuas_ib.h"

struct ib_mr *cnuas_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
				u32 max_num_sg)
{
	struct cnuas_ib_mr *mr;
	int err;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EINVAL);
	if (!max_num_sg || max_num_sg > CNUAS_IB_MAX_FRMR_PAGES)
		return ERR_PTR(-EINVAL);
	mr = cnuas_ib_mr_alloc(ibpd, 0, &cnuas_ib_mr_fast_ops);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->fpages = kcalloc(max_num_sg, sizeof(*mr->fpages), GFP_KERNEL);
	if (!mr->fpages) {
		kfree(mr);
		return ERR_PTR(-ENOMEM);
	}
	mr->fmax = max_num_sg;
	mr->revoked = true;		/* no access before a REG_MR */
	err = cnuas_ib_mr_insert(mr);
	if (err) {
		kfree(mr->fpages);
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

static int cnuas_ib_fast_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct cnuas_ib_mr *mr = to_cmr(ibmr);

	if (mr->fn == mr->fmax)
		return -ENOMEM;
	mr->fpages[mr->fn++] = addr;
	return 0;
}

/* Not under the table lock: the ULP maps only an MR it does not use. */
int cnuas_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
		       int sg_nents, unsigned int *sg_offset)
{
	struct cnuas_ib_mr *mr = to_cmr(ibmr);

	mr->fn = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset,
			      cnuas_ib_fast_set_page);
}

/* The FRMR of @pd whose table slot @key names, table lock held. */
static struct cnuas_ib_mr *cnuas_ib_fast_find(struct cnuas_ib_pd *pd, u32 key)
{
	struct cnuas_ib_dev *cdev = to_cdev(pd->ibpd.device);
	struct cnuas_ib_mr *mr = xa_load(&cdev->mr_xa, key >> 8);

	if (!mr || mr->ops != &cnuas_ib_mr_fast_ops || mr->ibmr.pd != &pd->ibpd)
		return NULL;
	return mr;
}

enum ib_wc_status cnuas_ib_mr_fast_reg(struct cnuas_ib_pd *pd, u32 key,
				       int access)
{
	struct cnuas_ib_dev *cdev = to_cdev(pd->ibpd.device);
	enum ib_wc_status status = IB_WC_SUCCESS;
	struct cnuas_ib_mr *mr;
	unsigned long flags;
	u64 span;

	if (cnuas_ib_mr_check_access(access))
		return IB_WC_MW_BIND_ERR;
	xa_lock_irqsave(&cdev->mr_xa, flags);
	mr = cnuas_ib_fast_find(pd, key);
	span = mr ? (u64)mr->fn * mr->ibmr.page_size : 0;
	/* IBA: registering a valid MR is an error; so is a bad page list. */
	if (!mr || !READ_ONCE(mr->revoked) || !mr->fn ||
	    !is_power_of_2(mr->ibmr.page_size) ||
	    mr->ibmr.page_size < SZ_4K ||
	    (mr->ibmr.iova & (mr->ibmr.page_size - 1)) + mr->ibmr.length >
	    span) {
		status = IB_WC_MW_BIND_ERR;
	} else {
		mr->key = key;
		mr->access = access;
		mr->iova = mr->ibmr.iova;
		mr->length = mr->ibmr.length;
		WRITE_ONCE(mr->revoked, false);
	}
	xa_unlock_irqrestore(&cdev->mr_xa, flags);
	return status;
}

/* Table lock held. */
static int cnuas_ib_fast_invalidate(struct cnuas_ib_mr *mr,
				    struct cnuas_ib_pd *pd, u32 key, u32 qpn)
{
	if (mr->ibmr.pd != &pd->ibpd || mr->key != key)
		return -EINVAL;
	/*
	 * Not while windows are bound to it (as rxe): after a REG_MR they
	 * would resolve against the new pages.
	 */
	if (mr->num_mw)
		return -EBUSY;
	WRITE_ONCE(mr->revoked, true);
	return 0;
}

static int cnuas_ib_fast_copy(struct cnuas_ib_mr *mr, u64 addr, void *buf,
			      u32 len, enum cnuas_ib_copy_dir dir)
{
	u64 ps = mr->ibmr.page_size;
	u64 pos = (mr->iova & (ps - 1)) + (addr - mr->iova);
	u32 chunk;
	u8 *va;

	while (len) {
		if (WARN_ON_ONCE(pos / ps >= mr->fn))
			return -EFAULT;
		va = (u8 *)(uintptr_t)mr->fpages[pos / ps] + pos % ps;
		chunk = min_t(u64, len, ps - pos % ps);
		if (dir == CNUAS_IB_TO_MR)
			memcpy(va, buf, chunk);
		else
			memcpy(buf, va, chunk);
		buf += chunk;
		pos += chunk;
		len -= chunk;
	}
	return 0;
}

static void cnuas_ib_fast_release(struct cnuas_ib_mr *mr)
{
	kfree(mr->fpages);
}

const struct cnuas_ib_mr_ops cnuas_ib_mr_fast_ops = {
	.lookup = cnuas_ib_mr_lookup,
	.copy = cnuas_ib_fast_copy,
	.atomic = cnuas_ib_mr_atomic_copy,
	.invalidate = cnuas_ib_fast_invalidate,
	.release = cnuas_ib_fast_release,
};
