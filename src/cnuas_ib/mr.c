// SPDX-License-Identifier: GPL-2.0
/*
 * Memory regions: kernel DMA MRs (addresses are kernel virtual addresses,
 * the device has no DMA device: ib_uses_virt_dma()), user MRs pinned
 * with ib_umem and DMA-BUF MRs (mr-dmabuf.c). lkey == rkey = table
 * index << 8 | a variant byte, so a stale key of a re-used index does not
 * match. Lookups hold a reference; dereg waits for them. Every data path
 * reaches MR memory through the lookups, cnuas_ib_mr_copy() and
 * cnuas_ib_mr_atomic(), which go through the entry's ops (struct
 * cnuas_ib_mr_ops): DMA and user MRs here, DMA-BUF MRs in mr-dmabuf.c,
 * fast registration MRs in mr-fast.c. Memory windows (mw.c) are entries
 * of the same table.
 */
#include <linux/highmem.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/skbuff.h>
#include <rdma/ib_umem.h>

#include "cnuas_ib.h"

#define CNUAS_IB_MR_ACCESS	(IB_ACCESS_LOCAL_WRITE | \
				 IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC | \
				 IB_ACCESS_MW_BIND | \
				 CNUAS_IB_ACCESS_FLUSH_GLOBAL | \
				 IB_ZERO_BASED)	/* iova is any address */

int cnuas_ib_mr_check_access(int access)
{
	/* Optional bits (IB_ACCESS_OPTIONAL) may be ignored. */
	if (access & ~(CNUAS_IB_MR_ACCESS | IB_ACCESS_OPTIONAL))
		return -EOPNOTSUPP;
	/* IBA: remote write and atomic need local write. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

struct cnuas_ib_mr *cnuas_ib_mr_alloc(struct ib_pd *ibpd, int access,
				      const struct cnuas_ib_mr_ops *ops)
{
	struct cnuas_ib_mr *mr;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return NULL;
	mr->cdev = to_cdev(ibpd->device);
	/* ib_core sets these too, after we return: lookups need them now. */
	mr->ibmr.device = ibpd->device;
	mr->ibmr.pd = ibpd;
	mr->ops = ops;
	mr->access = access;
	refcount_set(&mr->ref, 1);
	init_completion(&mr->released);
	spin_lock_init(&mr->lock);
	return mr;
}

/* Publish @mr: from here lookups find it. */
int cnuas_ib_mr_insert(struct cnuas_ib_mr *mr)
{
	struct cnuas_ib_dev *cdev = mr->cdev;
	u32 idx, key;
	int err;

	err = xa_alloc_cyclic_irq(&cdev->mr_xa, &idx, NULL,
				  XA_LIMIT(1, CNUAS_IB_MAX_MR), &cdev->mr_next,
				  GFP_KERNEL);
	if (err < 0)
		return err == -EBUSY ? -ENOMEM : err;
	key = idx << 8 | (get_random_u32() & 0xff);
	mr->ibmr.lkey = key;
	mr->ibmr.rkey = key;
	mr->key = key;
	/* The slot is reserved: storing into it allocates nothing. */
	xa_store_irq(&cdev->mr_xa, idx, mr, GFP_KERNEL);
	return 0;
}

struct ib_mr *cnuas_ib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct cnuas_ib_mr *mr;
	int err;

	err = cnuas_ib_mr_check_access(access);
	if (err)
		return ERR_PTR(err);
	mr = cnuas_ib_mr_alloc(ibpd, access, &cnuas_ib_mr_dma_ops);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->iova = 0;
	mr->length = U64_MAX;
	err = cnuas_ib_mr_insert(mr);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/* The pages of @umem, one per PAGE_SIZE, into *@pages (kvfree). */
static int cnuas_ib_umem_pages(struct ib_umem *umem, struct page ***pages,
			       unsigned long *npages)
{
	struct sg_table *sgt = &umem->sgt_append.sgt;
	struct sg_page_iter piter;
	unsigned long n = 0, max;
	struct page **p;

	max = (PAGE_ALIGN(umem->address + umem->length) -
	       (umem->address & PAGE_MASK)) >> PAGE_SHIFT;
	p = kvcalloc(max, sizeof(*p), GFP_KERNEL);
	if (!p)
		return -ENOMEM;
	for_each_sgtable_page(sgt, &piter, 0) {
		if (n == max)
			break;
		p[n++] = sg_page_iter_page(&piter);
	}
	if (n != max) {
		kvfree(p);
		return -EFAULT;
	}
	*pages = p;
	*npages = n;
	return 0;
}

static int cnuas_ib_mr_user_range_ok(u64 start, u64 len, u64 iova)
{
	if (!len || len > CNUAS_IB_MAX_MR_SIZE)
		return -EINVAL;
	if (start + len < start || iova + len < iova)
		return -EINVAL;
	return 0;
}

struct ib_mr *cnuas_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
				   u64 iova, int access,
				   CNUAS_IB_REG_USER_MR_DMAH
				   struct ib_udata *udata)
{
	struct cnuas_ib_mr *mr;
	struct ib_umem *umem;
	int err;

	err = cnuas_ib_mr_user_range_ok(start, len, iova);
	if (!err)
		err = cnuas_ib_mr_check_access(access);
	if (err)
		return ERR_PTR(err);

	umem = cnuas_ib_umem_get(ibpd->device, start, len, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);
	mr = cnuas_ib_mr_alloc(ibpd, access, &cnuas_ib_mr_user_ops);
	if (!mr) {
		err = -ENOMEM;
		goto err_umem;
	}
	mr->umem = umem;
	mr->iova = iova;
	mr->length = len;
	mr->page_offset = start & ~PAGE_MASK;
	err = cnuas_ib_umem_pages(umem, &mr->pages, &mr->npages);
	if (err)
		goto err_mr;
	err = cnuas_ib_mr_insert(mr);
	if (err)
		goto err_pages;
	mr->ibmr.iova = iova;
	mr->ibmr.length = len;
	return &mr->ibmr;

err_pages:
	kvfree(mr->pages);
err_mr:
	kfree(mr);
err_umem:
	ib_umem_release(umem);
	return ERR_PTR(err);
}

int cnuas_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct cnuas_ib_mr *mr = to_cmr(ibmr);
	struct xarray *xa = &mr->cdev->mr_xa;
	unsigned long flags;

	xa_lock_irqsave(xa, flags);
	if (mr->num_mw)
		cnuas_ib_mw_unbind_all(mr);
	__xa_erase(xa, ibmr->lkey >> 8);
	xa_unlock_irqrestore(xa, flags);
	/* No new lookup finds it; wait for those in flight. */
	cnuas_ib_mr_put(mr);
	wait_for_completion(&mr->released);
	if (mr->ops->release)
		mr->ops->release(mr);
	kfree(mr);
	return 0;
}

static void cnuas_ib_mr_user_release(struct cnuas_ib_mr *mr)
{
	ib_umem_release(mr->umem);
	kvfree(mr->pages);
}

/*
 * ibv_rereg_mr(3) of a user MR, in place: a new translation or new rights
 * pin the memory again (rights decide how it is pinned), a new PD moves
 * the MR. The keys stay, as HCAs keep them for an in-place rereg. While
 * it changes the MR is out of the table, so an access meanwhile fails as
 * for an invalid key; those in flight finish on the old memory first.
 * Windows bound to the MR make it fail (-EBUSY); on any error the MR is
 * left as it was.
 */
struct ib_mr *cnuas_ib_rereg_user_mr(struct ib_mr *ibmr, int flags,
				     u64 start, u64 len, u64 iova, int access,
				     struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct cnuas_ib_mr *mr = to_cmr(ibmr);
	struct xarray *xa = &mr->cdev->mr_xa;
	struct ib_umem *umem = NULL, *old_umem = NULL;
	struct page **pages = NULL, **old_pages = NULL;
	unsigned long npages = 0, fl;
	int err;

	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD |
		      IB_MR_REREG_ACCESS) || mr->ops != &cnuas_ib_mr_user_ops)
		return ERR_PTR(-EOPNOTSUPP);
	if (!(flags & IB_MR_REREG_ACCESS))
		access = mr->access;
	if (!(flags & IB_MR_REREG_TRANS)) {
		start = mr->umem->address;
		len = mr->length;
		iova = mr->iova;
	}
	err = cnuas_ib_mr_user_range_ok(start, len, iova);
	if (!err)
		err = cnuas_ib_mr_check_access(access);
	if (err)
		return ERR_PTR(err);
	if (flags & (IB_MR_REREG_TRANS | IB_MR_REREG_ACCESS)) {
		umem = cnuas_ib_umem_get(ibmr->device, start, len, access);
		if (IS_ERR(umem))
			return ERR_CAST(umem);
		err = cnuas_ib_umem_pages(umem, &pages, &npages);
		if (err)
			goto err_umem;
	}

	xa_lock_irqsave(xa, fl);
	if (mr->num_mw) {
		xa_unlock_irqrestore(xa, fl);
		err = -EBUSY;
		goto err_pages;
	}
	/* NULL keeps the slot (and so the key) allocated. */
	__xa_store(xa, mr->key >> 8, NULL, GFP_ATOMIC);
	xa_unlock_irqrestore(xa, fl);
	cnuas_ib_mr_put(mr);
	wait_for_completion(&mr->released);

	if (umem) {
		old_umem = mr->umem;
		old_pages = mr->pages;
		mr->umem = umem;
		mr->pages = pages;
		mr->npages = npages;
		mr->page_offset = start & ~PAGE_MASK;
		mr->iova = iova;
		mr->length = len;
		mr->ibmr.iova = iova;
		mr->ibmr.length = len;
	}
	mr->access = access;
	if (flags & IB_MR_REREG_PD)
		mr->ibmr.pd = ibpd;
	refcount_set(&mr->ref, 1);
	reinit_completion(&mr->released);
	xa_store_irq(xa, mr->key >> 8, mr, GFP_KERNEL);
	if (old_umem) {
		ib_umem_release(old_umem);
		kvfree(old_pages);
	}
	return NULL;

err_pages:
	kvfree(pages);
err_umem:
	ib_umem_release(umem);
	return ERR_PTR(err);
}

void cnuas_ib_mr_put(struct cnuas_ib_mr *mr)
{
	if (refcount_dec_and_test(&mr->ref))
		complete(&mr->released);
}

struct cnuas_ib_mr *cnuas_ib_mr_lookup(struct cnuas_ib_mr *mr,
				       struct cnuas_ib_pd *pd, u32 key,
				       u64 addr, u64 len, int access,
				       bool rkey, u32 qpn)
{
	if (mr->key != key || mr->ibmr.pd != &pd->ibpd ||
	    (mr->access & access) != access || READ_ONCE(mr->revoked) ||
	    !cnuas_ib_mr_in_bounds(mr, addr, len))
		return NULL;
	return mr;
}

/* @qpn: the responder QP of an rkey, which may name a window; else 0. */
static struct cnuas_ib_mr *cnuas_ib_mr_get(struct cnuas_ib_pd *pd, u32 key,
					   u64 addr, u64 len, int access,
					   bool rkey, u32 qpn)
{
	struct cnuas_ib_dev *cdev = to_cdev(pd->ibpd.device);
	struct cnuas_ib_mr *mr;
	unsigned long flags;

	xa_lock_irqsave(&cdev->mr_xa, flags);
	mr = xa_load(&cdev->mr_xa, key >> 8);
	if (mr && len == CNUAS_IB_WHOLE_MR) {
		/* The entry's own range (a window's, for a window). */
		addr = mr->iova;
		len = 0;
	}
	if (mr)
		mr = mr->ops->lookup(mr, pd, key, addr, len, access, rkey, qpn);
	if (mr)
		refcount_inc(&mr->ref);	/* > 0 while in the table */
	xa_unlock_irqrestore(&cdev->mr_xa, flags);
	return mr;
}

struct cnuas_ib_mr *cnuas_ib_mr_get_lkey(struct cnuas_ib_pd *pd, u32 lkey,
					 u64 addr, u64 len, int access)
{
	return cnuas_ib_mr_get(pd, lkey, addr, len, access, false, 0);
}

struct cnuas_ib_mr *cnuas_ib_mr_get_rkey(struct cnuas_ib_pd *pd, u32 rkey,
					 u64 addr, u64 len, int access,
					 u32 qpn)
{
	/* A remote access must name the remote right it uses. */
	if (!(access & (IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
			IB_ACCESS_REMOTE_ATOMIC | CNUAS_IB_ACCESS_FLUSH_GLOBAL |
			CNUAS_IB_ACCESS_FLUSH_PERSISTENT)))
		return NULL;
	return cnuas_ib_mr_get(pd, rkey, addr, len, access, true, qpn);
}

/* Kernel virtual addresses: ib_uses_virt_dma(). */
static int cnuas_ib_mr_dma_copy(struct cnuas_ib_mr *mr, u64 addr, void *buf,
				u32 len, enum cnuas_ib_copy_dir dir)
{
	void *va = (void *)(uintptr_t)addr;

	if (dir == CNUAS_IB_TO_MR)
		memcpy(va, buf, len);
	else
		memcpy(buf, va, len);
	return 0;
}

static int cnuas_ib_mr_user_copy(struct cnuas_ib_mr *mr, u64 addr, void *buf,
				 u32 len, enum cnuas_ib_copy_dir dir)
{
	u64 off = mr->page_offset + (addr - mr->iova);
	u32 pgoff, chunk;
	struct page *page;
	void *va;

	while (len) {
		if (WARN_ON_ONCE((off >> PAGE_SHIFT) >= mr->npages))
			return -EFAULT;
		page = mr->pages[off >> PAGE_SHIFT];
		pgoff = off & ~PAGE_MASK;
		chunk = min_t(u32, len, PAGE_SIZE - pgoff);
		va = kmap_local_page(page);
		if (dir == CNUAS_IB_TO_MR) {
			memcpy(va + pgoff, buf, chunk);
			flush_dcache_page(page);
		} else {
			memcpy(buf, va + pgoff, chunk);
		}
		kunmap_local(va);
		buf += chunk;
		off += chunk;
		len -= chunk;
	}
	return 0;
}

int cnuas_ib_mr_atomic(struct cnuas_ib_mr *mr, u64 addr,
		       enum cnuas_ib_atomic_op op, u64 compare_add, u64 swap,
		       u64 *orig)
{
	if (addr & 7)
		return -EINVAL;
	return mr->ops->atomic(mr, addr, op, compare_add, swap, orig);
}

int cnuas_ib_mr_atomic_copy(struct cnuas_ib_mr *mr, u64 addr,
			    enum cnuas_ib_atomic_op op, u64 compare_add,
			    u64 swap, u64 *orig)
{
	unsigned long flags;
	u64 val, new;

	/*
	 * One lock for the device: atomic against every other atomic that
	 * goes through it (not against the CPU, as on real HCAs). The copy
	 * helpers cope with a page-crossing, unaligned kernel address.
	 */
	spin_lock_irqsave(&mr->cdev->atomic_lock, flags);
	cnuas_ib_mr_copy(mr, addr, &val, sizeof(val), CNUAS_IB_FROM_MR);
	*orig = val;
	new = cnuas_ib_atomic_new(op, val, compare_add, swap);
	if (new != val)
		cnuas_ib_mr_copy(mr, addr, &new, sizeof(new), CNUAS_IB_TO_MR);
	spin_unlock_irqrestore(&mr->cdev->atomic_lock, flags);
	return 0;
}

u64 cnuas_ib_sge_total(const struct cnuas_sge *sge, u32 num_sge)
{
	u64 total = 0;
	u32 i;

	for (i = 0; i < num_sge; i++)
		total += sge[i].length;
	return total;
}

/*
 * Attach [addr, addr + len) of a user MR to @skb as page fragments, each
 * with its own page reference, so the device reads the pages themselves
 * (the pin of the MR may go before the frame does). -EOPNOTSUPP: @skb
 * has no room for the fragments; the caller copies.
 */
static int cnuas_ib_mr_user_frags(struct cnuas_ib_mr *mr, u64 addr, u32 len,
				  struct sk_buff *skb)
{
	u64 off = mr->page_offset + (addr - mr->iova);
	u32 pgoff, chunk;
	struct page *page;
	int i;

	while (len) {
		i = skb_shinfo(skb)->nr_frags;
		/* One slot stays for the trailer (cnuas_ib_pkt_add_trailer). */
		if (i >= MAX_SKB_FRAGS - 1)
			return -EOPNOTSUPP;
		if (WARN_ON_ONCE((off >> PAGE_SHIFT) >= mr->npages))
			return -EFAULT;
		page = mr->pages[off >> PAGE_SHIFT];
		pgoff = off & ~PAGE_MASK;
		chunk = min_t(u32, len, PAGE_SIZE - pgoff);
		get_page(page);
		skb_fill_page_desc(skb, i, page, pgoff, chunk);
		skb->len += chunk;
		skb->data_len += chunk;
		skb->truesize += chunk;
		off += chunk;
		len -= chunk;
	}
	return 0;
}

/* What one SGE walk does with each piece of MR it visits. */
struct cnuas_sge_op {
	int (*fn)(struct cnuas_sge_op *op, struct cnuas_ib_mr *mr, u64 addr,
		  u32 len);
	void *buf;			/* copy: the other side */
	enum cnuas_ib_copy_dir dir;
	struct sk_buff *skb;		/* fragments */
};

static int cnuas_sge_copy_fn(struct cnuas_sge_op *op, struct cnuas_ib_mr *mr,
			     u64 addr, u32 len)
{
	if (cnuas_ib_mr_copy(mr, addr, op->buf, len, op->dir))
		return -EINVAL;
	op->buf += len;
	return 0;
}

/* Only some kinds of MR have pages to lend: the others are copied. */
static int cnuas_sge_frags_fn(struct cnuas_sge_op *op, struct cnuas_ib_mr *mr,
			      u64 addr, u32 len)
{
	if (!mr->ops->frags)
		return -EOPNOTSUPP;
	return mr->ops->frags(mr, addr, len, op->skb);
}

/* @len bytes from @offset into the SGE list, each piece checked. */
static int cnuas_ib_sge_walk(struct cnuas_ib_pd *pd,
			     const struct cnuas_sge *sge, u32 num_sge,
			     u32 offset, u32 len, int access,
			     struct cnuas_sge_op *op)
{
	struct cnuas_ib_mr *mr;
	u32 i, chunk, skip;
	u64 addr;
	int err;

	for (i = 0; i < num_sge && len; i++) {
		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		skip = offset;
		offset = 0;
		chunk = min(len, sge[i].length - skip);
		addr = sge[i].addr + skip;
		mr = cnuas_ib_mr_get_lkey(pd, sge[i].lkey, addr, chunk, access);
		if (!mr)
			return -EINVAL;
		err = op->fn(op, mr, addr, chunk);
		cnuas_ib_mr_put(mr);
		if (err)
			return err;
		len -= chunk;
	}
	return len ? -EMSGSIZE : 0;
}

int cnuas_ib_sge_copy(struct cnuas_ib_pd *pd, const struct cnuas_sge *sge,
		      u32 num_sge, u32 offset, void *buf, u32 len,
		      enum cnuas_ib_copy_dir dir, int access)
{
	struct cnuas_sge_op op = {
		.fn = cnuas_sge_copy_fn, .buf = buf, .dir = dir,
	};

	return cnuas_ib_sge_walk(pd, sge, num_sge, offset, len, access, &op);
}

int cnuas_ib_sge_frags(struct cnuas_ib_pd *pd, const struct cnuas_sge *sge,
		       u32 num_sge, u32 offset, struct sk_buff *skb, u32 len,
		       int access)
{
	struct cnuas_sge_op op = { .fn = cnuas_sge_frags_fn, .skb = skb };

	return cnuas_ib_sge_walk(pd, sge, num_sge, offset, len, access, &op);
}

int cnuas_ib_mr_invalidate(struct cnuas_ib_pd *pd, u32 key, u32 qpn)
{
	struct xarray *xa = &to_cdev(pd->ibpd.device)->mr_xa;
	struct cnuas_ib_mr *mr;
	unsigned long flags;
	int err = -EINVAL;

	xa_lock_irqsave(xa, flags);
	mr = xa_load(xa, key >> 8);
	if (mr && mr->ops->invalidate)
		err = mr->ops->invalidate(mr, pd, key, qpn);
	xa_unlock_irqrestore(xa, flags);
	return err;
}

const struct cnuas_ib_mr_ops cnuas_ib_mr_dma_ops = {
	.lookup = cnuas_ib_mr_lookup,
	.copy = cnuas_ib_mr_dma_copy,
	.atomic = cnuas_ib_mr_atomic_copy,
	.unbounded = true,
};

const struct cnuas_ib_mr_ops cnuas_ib_mr_user_ops = {
	.lookup = cnuas_ib_mr_lookup,
	.copy = cnuas_ib_mr_user_copy,
	.atomic = cnuas_ib_mr_atomic_copy,
	.frags = cnuas_ib_mr_user_frags,
	.release = cnuas_ib_mr_user_release,
};
