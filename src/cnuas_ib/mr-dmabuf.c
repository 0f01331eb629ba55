// SPDX-License-Identifier: GPL-2.0
/*
 * DMA-BUF MRs (ibv_reg_dmabuf_mr): GPU device memory (cnuasgpu BAR1) or
 * any other exporter's buffer registered as RDMA memory.
 *
 * Why dma_buf_get + attach + vmap, not ib_umem_dmabuf: the transport is
 * software, so it needs a CPU mapping, not DMA addresses; ib_umem_dmabuf
 * maps for ibdev->dma_device, which a virt-DMA device (ib_uses_virt_dma)
 * does not have, and its sg_table would carry no struct page for BAR
 * memory anyway. So the MR holds, from registration to dereg:
 *   - a reference on the dma-buf (the exporter keeps the memory, and BAR1
 *     mapped, until it is dropped),
 *   - a dynamic attachment for the cnuas-vnic PCI function, so the
 *     exporter sees its importer and can revoke the MR (move_notify /
 *     invalidate_mappings): the MR is then dead for every later access,
 *   - the dma-buf's vmap (struct iosys_map, __iomem for BAR memory): all
 *     copies use the iosys_map accessors (memcpy_toio/fromio), atomics
 *     readq/writeq, so no struct page is ever needed.
 * mr->lock orders revocation against copies and atomics: after the
 * notification returns no access touches the mapping again; an access
 * that finds the MR revoked fails like a bad key (access NAK, protection
 * error completion).
 */
#include <linux/dma-buf.h>
#include <linux/io.h>
#include <linux/io-64-nonatomic-lo-hi.h>
#include <linux/iosys-map.h>
#include <linux/slab.h>

#include "cnuas_ib.h"

/* The exporter moves or removes the buffer: no access from now on. */
static void cnuas_ib_dmabuf_revoke(struct dma_buf_attachment *att)
{
	struct cnuas_ib_mr *mr = att->importer_priv;
	unsigned long flags;

	spin_lock_irqsave(&mr->lock, flags);
	if (!mr->revoked)
		cnuas_dbg_mr(mr, "DMA-BUF revoked by %s\n",
			     att->dmabuf->exp_name);
	WRITE_ONCE(mr->revoked, true);
	spin_unlock_irqrestore(&mr->lock, flags);
}

static const struct dma_buf_attach_ops cnuas_ib_dmabuf_attach_ops = {
	.allow_peer2peer = true,	/* we never need a struct page */
	.CNUAS_IB_DMABUF_NOTIFY = cnuas_ib_dmabuf_revoke,
};

struct ib_mr *cnuas_ib_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
					  u64 len, u64 iova, int fd,
					  int access,
					  CNUAS_IB_REG_DMABUF_DMAH
					  struct CNUAS_REG_DMABUF_ARG *arg)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibpd->device);
	struct dma_buf_attachment *att;
	struct dma_buf *dmabuf;
	struct cnuas_ib_mr *mr;
	int err;

	if (!len || len > CNUAS_IB_MAX_MR_SIZE)
		return ERR_PTR(-EINVAL);
	if (offset + len < offset || iova + len < iova)
		return ERR_PTR(-EINVAL);
	err = cnuas_ib_mr_check_access(access);
	if (err)
		return ERR_PTR(err);

	dmabuf = dma_buf_get(fd);
	if (IS_ERR(dmabuf))
		return ERR_CAST(dmabuf);
	if (offset > dmabuf->size || len > dmabuf->size - offset) {
		err = -EINVAL;
		goto err_put;
	}
	mr = cnuas_ib_mr_alloc(ibpd, access, &cnuas_ib_mr_dmabuf_ops);
	if (!mr) {
		err = -ENOMEM;
		goto err_put;
	}
	att = dma_buf_dynamic_attach(dmabuf, cdev->adev->dma_dev,
				     &cnuas_ib_dmabuf_attach_ops, mr);
	if (IS_ERR(att)) {
		err = PTR_ERR(att);
		goto err_mr;
	}
	/* Fails (-ENODEV) once the exporting device is being removed. */
	err = cnuas_ib_dma_buf_vmap(dmabuf, &mr->dmabuf_map);
	if (err)
		goto err_detach;
	mr->dmabuf = dmabuf;
	mr->dmabuf_att = att;
	mr->dmabuf_off = offset;
	mr->iova = iova;
	mr->length = len;
	err = cnuas_ib_mr_insert(mr);
	if (err)
		goto err_vunmap;
	mr->ibmr.iova = iova;
	mr->ibmr.length = len;
	return &mr->ibmr;

err_vunmap:
	cnuas_ib_dma_buf_vunmap(dmabuf, &mr->dmabuf_map);
err_detach:
	dma_buf_detach(dmabuf, att);
err_mr:
	kfree(mr);
err_put:
	dma_buf_put(dmabuf);
	return ERR_PTR(err);
}

/* dereg, after the last lookup is gone: undo the registration. */
static void cnuas_ib_mr_dmabuf_release(struct cnuas_ib_mr *mr)
{
	cnuas_ib_dma_buf_vunmap(mr->dmabuf, &mr->dmabuf_map);
	/* Serialized with the exporter's notification (reservation lock). */
	dma_buf_detach(mr->dmabuf, mr->dmabuf_att);
	dma_buf_put(mr->dmabuf);
}

static int cnuas_ib_mr_dmabuf_copy(struct cnuas_ib_mr *mr, u64 addr,
				   void *buf, u32 len,
				   enum cnuas_ib_copy_dir dir)
{
	/* In bounds: the lookup checked [addr, addr + len) against iova. */
	size_t off = mr->dmabuf_off + (addr - mr->iova);
	unsigned long flags;
	int err = 0;

	spin_lock_irqsave(&mr->lock, flags);
	if (mr->revoked)
		err = -ENODEV;
	else if (dir == CNUAS_IB_TO_MR)
		iosys_map_memcpy_to(&mr->dmabuf_map, off, buf, len);
	else
		iosys_map_memcpy_from(buf, &mr->dmabuf_map, off, len);
	spin_unlock_irqrestore(&mr->lock, flags);
	return err;
}

static u64 cnuas_ib_dmabuf_read64(struct cnuas_ib_mr *mr, size_t off)
{
	u64 val;

	if (mr->dmabuf_map.is_iomem && IS_ALIGNED(off, sizeof(u64)))
		return readq(mr->dmabuf_map.vaddr_iomem + off);
	iosys_map_memcpy_from(&val, &mr->dmabuf_map, off, sizeof(val));
	return val;
}

static void cnuas_ib_dmabuf_write64(struct cnuas_ib_mr *mr, size_t off,
				    u64 val)
{
	if (mr->dmabuf_map.is_iomem && IS_ALIGNED(off, sizeof(u64))) {
		writeq(val, mr->dmabuf_map.vaddr_iomem + off);
		/* BAR1 is write-combining: the next reader is anywhere. */
		wmb();
		return;
	}
	iosys_map_memcpy_to(&mr->dmabuf_map, off, &val, sizeof(val));
}

/*
 * Atomic against every other atomic of the device (its atomic_lock, as
 * for the other MR types: two MRs may share memory) and against
 * revocation (the MR's lock).
 */
static int cnuas_ib_mr_dmabuf_atomic(struct cnuas_ib_mr *mr, u64 addr,
				     enum cnuas_ib_atomic_op op,
				     u64 compare_add, u64 swap, u64 *orig)
{
	size_t off = mr->dmabuf_off + (addr - mr->iova);
	unsigned long flags;
	u64 val, new;
	int err = 0;

	spin_lock_irqsave(&mr->cdev->atomic_lock, flags);
	spin_lock(&mr->lock);
	if (mr->revoked) {
		err = -ENODEV;
		goto out;
	}
	val = cnuas_ib_dmabuf_read64(mr, off);
	*orig = val;
	new = cnuas_ib_atomic_new(op, val, compare_add, swap);
	if (new != val)
		cnuas_ib_dmabuf_write64(mr, off, new);
out:
	spin_unlock(&mr->lock);
	spin_unlock_irqrestore(&mr->cdev->atomic_lock, flags);
	return err;
}

const struct cnuas_ib_mr_ops cnuas_ib_mr_dmabuf_ops = {
	.lookup = cnuas_ib_mr_lookup,
	.copy = cnuas_ib_mr_dmabuf_copy,
	.atomic = cnuas_ib_mr_dmabuf_atomic,
	.release = cnuas_ib_mr_dmabuf_release,
};
