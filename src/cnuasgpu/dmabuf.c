// SPDX-License-Identifier: GPL-2.0
/*
 * DMA-BUF exporter, shared by the GPU and the host exporter: the export
 * ioctl (argument checks, each with its errno), the export's lifetime and
 * revocation. An export covers a page-aligned range of one allocation and
 * holds a reference on it (so it outlives the file and blocks FREE) and,
 * through it, on the device (so BAR1 stays mapped until the last importer
 * lets go). The memory-specific dma-buf ops (sg_table, vmap, mmap) are the
 * backing's: bar.c, host-mem.c.
 */

#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu.h"

/* 7.x renamed the importer notification. */
#ifdef CNUASGPU_HAVE_INVALIDATE_MAPPINGS
#define dma_buf_move_notify	dma_buf_invalidate_mappings
#endif

static struct sg_table *cnuasgpu_map_dma_buf(struct dma_buf_attachment *att,
					     enum dma_data_direction dir)
{
	struct cnuasgpu_export *exp = att->dmabuf->priv;

	return exp->obj->gdev->backing->map(exp, att->dev, dir);
}

static void cnuasgpu_unmap_dma_buf(struct dma_buf_attachment *att,
				   struct sg_table *sgt,
				   enum dma_data_direction dir)
{
	struct cnuasgpu_export *exp = att->dmabuf->priv;

	exp->obj->gdev->backing->unmap(exp, att->dev, sgt, dir);
}

static int cnuasgpu_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct cnuasgpu_export *exp = dmabuf->priv;

	return exp->obj->gdev->backing->vmap(exp, map);
}

static void cnuasgpu_dmabuf_vunmap(struct dma_buf *dmabuf,
				   struct iosys_map *map)
{
	/* Both kinds keep their kernel mapping as long as the allocation. */
}

static int cnuasgpu_dmabuf_mmap(struct dma_buf *dmabuf,
				struct vm_area_struct *vma)
{
	struct cnuasgpu_export *exp = dmabuf->priv;
	struct cnuasgpu_dev *gdev = exp->obj->gdev;
	u64 len = vma->vm_end - vma->vm_start;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	int err;

	if (off >= exp->length || len > exp->length - off)
		return -EINVAL;
	/* gdev->lock: removal cannot zap between our check and the map. */
	mutex_lock(&gdev->lock);
	if (gdev->dead) {
		mutex_unlock(&gdev->lock);
		return -ENODEV;
	}
	err = gdev->backing->mmap(exp->obj, exp->offset + off, vma);
	mutex_unlock(&gdev->lock);
	return err;
}

/* Removal, gdev->lock held: user mappings of every export go away. */
void cnuasgpu_exports_revoke(struct cnuasgpu_dev *gdev)
{
	struct cnuasgpu_export *exp;

	lockdep_assert_held(&gdev->lock);
	list_for_each_entry(exp, &gdev->export_list, node) {
		unmap_mapping_range(exp->dmabuf->file->f_mapping, 0, 0, 1);
		/* Importers (cnuas_ib MRs) stop using their vmap now. */
		dma_resv_lock(exp->dmabuf->resv, NULL);
		dma_buf_move_notify(exp->dmabuf);
		dma_resv_unlock(exp->dmabuf->resv);
	}
}

static void cnuasgpu_dmabuf_release(struct dma_buf *dmabuf)
{
	struct cnuasgpu_export *exp = dmabuf->priv;
	struct cnuasgpu_obj *obj = exp->obj;
	struct cnuasgpu_dev *gdev = obj->gdev;

	mutex_lock(&gdev->lock);
	if (exp->dmabuf)
		list_del(&exp->node);
	mutex_unlock(&gdev->lock);
	atomic_dec(&obj->exports);
	atomic_dec(&gdev->exports);
	kfree(exp);
	/* An orphaned allocation is reclaimed here, after its last export. */
	cnuasgpu_obj_put(obj);
}

static const struct dma_buf_ops cnuasgpu_dmabuf_ops = {
	.map_dma_buf = cnuasgpu_map_dma_buf,
	.unmap_dma_buf = cnuasgpu_unmap_dma_buf,
	.vmap = cnuasgpu_dmabuf_vmap,
	.vunmap = cnuasgpu_dmabuf_vunmap,
	.mmap = cnuasgpu_dmabuf_mmap,
	.release = cnuasgpu_dmabuf_release,
};

int cnuasgpu_ioc_export(struct cnuasgpu_file *gf, void __user *arg)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct cnuasgpu_dev *gdev = gf->gdev;
	struct cnuasgpu_export_dmabuf req;
	struct cnuasgpu_export *exp;
	struct cnuasgpu_obj *obj;
	struct dma_buf *dmabuf;
	u64 end;
	int fd;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	/* The checks run in this order; each has its own errno (uapi). */
	if (req.flags & ~CNUASGPU_EXPORT_FLAGS)
		return -EOPNOTSUPP;
	if (req.reserved0 || memchr_inv(req.reserved, 0, sizeof(req.reserved)))
		return -EINVAL;
	if (check_add_overflow(req.offset, req.length, &end))
		return -EOVERFLOW;
	if (!req.length || !IS_ALIGNED(req.offset, CNUASGPU_EXPORT_ALIGN) ||
	    !IS_ALIGNED(req.length, CNUASGPU_EXPORT_ALIGN))
		return -EDOM;

	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return -ENOMEM;
	mutex_lock(&gdev->lock);
	if (gdev->dead) {
		mutex_unlock(&gdev->lock);
		kfree(exp);
		return -ENODEV;
	}
	mutex_lock(&gf->lock);
	obj = cnuasgpu_obj_lookup(gf, req.handle);
	if (!obj) {
		mutex_unlock(&gf->lock);
		mutex_unlock(&gdev->lock);
		kfree(exp);
		return -ENOENT;
	}
	if (end > obj->size) {
		mutex_unlock(&gf->lock);
		mutex_unlock(&gdev->lock);
		kfree(exp);
		return -ERANGE;
	}
	/* Counted before the lock drops, so FREE sees it (EBUSY). */
	cnuasgpu_obj_get(obj);
	atomic_inc(&obj->exports);
	atomic_inc(&gdev->exports);
	mutex_unlock(&gf->lock);
	mutex_unlock(&gdev->lock);

	exp->obj = obj;
	exp->offset = req.offset;
	exp->length = req.length;
	info.ops = &cnuasgpu_dmabuf_ops;
	/* Static: a GPU's misc name goes away with the device. */
	info.exp_name = cnuasgpu_is_host(gdev) ? CNUASGPU_HOST_NAME : CNUASGPU_NAME;
	info.size = req.length;
	info.flags = O_RDWR;
	info.priv = exp;
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		atomic_dec(&obj->exports);
		atomic_dec(&gdev->exports);
		kfree(exp);
		cnuasgpu_obj_put(obj);
		return PTR_ERR(dmabuf);
	}
	/* From here on the dma-buf owns exp: release() undoes the above. */
	mutex_lock(&gdev->lock);
	exp->dmabuf = dmabuf;
	list_add(&exp->node, &gdev->export_list);
	mutex_unlock(&gdev->lock);
	fd = dma_buf_fd(dmabuf, O_RDWR |
			(req.flags & CNUASGPU_EXPORT_CLOEXEC ? O_CLOEXEC : 0));
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	req.fd = fd;
	if (copy_to_user(arg, &req, sizeof(req))) {
		/* The fd is installed; user space can still close it. */
		return -EFAULT;
	}
	return 0;
}
