// SPDX-License-Identifier: GPL-2.0
/*
 * Allocations of either exporter: a range of the device's gen_pool
 * (GPU: BAR1 physical addresses, so alignment requests are absolute;
 * host: offsets in the pinned-memory budget), backed by the device's
 * struct cnuasgpu_backing, owned by the opening file through per-file
 * handles, and mmap of an allocation into the caller.
 */

#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu.h"

int cnuasgpu_mem_init(struct cnuasgpu_dev *gdev, int nid)
{
	gdev->pool = gen_pool_create(PAGE_SHIFT, nid);
	if (!gdev->pool)
		return -ENOMEM;
	return gen_pool_add(gdev->pool, gdev->mem_phys, gdev->mem_size, nid);
}

u64 cnuasgpu_mem_total(struct cnuasgpu_dev *gdev)
{
	return gdev->mem_size - gdev->reserved_bytes;
}

u64 cnuasgpu_mem_free_bytes(struct cnuasgpu_dev *gdev)
{
	return gen_pool_avail(gdev->pool);
}

void cnuasgpu_obj_get(struct cnuasgpu_obj *obj)
{
	kref_get(&obj->ref);
}

static void cnuasgpu_obj_release(struct kref *ref)
{
	struct cnuasgpu_obj *obj = container_of(ref, struct cnuasgpu_obj, ref);
	struct cnuasgpu_dev *gdev = obj->gdev;

	gdev->backing->obj_fini(obj);
	gen_pool_free(gdev->pool, obj->addr, obj->size);
	atomic_dec(&gdev->objects);
	kfree(obj);
	cnuasgpu_dev_put(gdev);
}

void cnuasgpu_obj_put(struct cnuasgpu_obj *obj)
{
	kref_put(&obj->ref, cnuasgpu_obj_release);
}

/* Caller holds gf->lock; no reference is taken. */
struct cnuasgpu_obj *cnuasgpu_obj_lookup(struct cnuasgpu_file *gf, u32 handle)
{
	lockdep_assert_held(&gf->lock);
	return xa_load(&gf->handles, handle);
}

int cnuasgpu_ioc_alloc(struct cnuasgpu_file *gf, void __user *arg)
{
	struct cnuasgpu_dev *gdev = gf->gdev;
	struct genpool_data_align data;
	struct cnuasgpu_alloc req;
	struct cnuasgpu_obj *obj;
	u64 size, align;
	u32 handle;
	int err;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.flags)
		return -EOPNOTSUPP;
	if (memchr_inv(req.reserved, 0, sizeof(req.reserved)))
		return -EINVAL;
	align = req.align ? req.align : PAGE_SIZE;
	if (!req.size || !is_power_of_2(align) || align > gdev->mem_size)
		return -EINVAL;
	if (req.size > gdev->mem_size)
		return -gdev->backing->full_errno;
	size = PAGE_ALIGN(req.size);
	align = max_t(u64, align, PAGE_SIZE);

	obj = kzalloc(sizeof(*obj), GFP_KERNEL);
	if (!obj)
		return -ENOMEM;
	kref_init(&obj->ref);
	atomic_set(&obj->exports, 0);
	obj->size = size;
	obj->align = align;
	obj->gdev = gdev;

	mutex_lock(&gdev->lock);
	if (gdev->dead) {
		mutex_unlock(&gdev->lock);
		kfree(obj);
		return -ENODEV;
	}
	data.align = align;
	obj->addr = gen_pool_alloc_algo(gdev->pool, size,
					gen_pool_first_fit_align, &data);
	if (!obj->addr) {
		mutex_unlock(&gdev->lock);
		kfree(obj);
		return -gdev->backing->full_errno;
	}
	cnuasgpu_dev_get(gdev);
	atomic_inc(&gdev->objects);
	mutex_unlock(&gdev->lock);

	/* Fresh memory never shows a previous owner's data. */
	err = gdev->backing->obj_init(obj);
	if (err) {
		cnuasgpu_obj_put(obj);
		return err;
	}

	mutex_lock(&gf->lock);
	err = xa_alloc(&gf->handles, &handle, obj, xa_limit_31b, GFP_KERNEL);
	mutex_unlock(&gf->lock);
	if (err) {
		cnuasgpu_obj_put(obj);
		return err;
	}
	req.handle = handle;
	req.mmap_offset = cnuasgpu_obj_offset(obj);
	req.size = size;
	req.align = align;
	if (copy_to_user(arg, &req, sizeof(req))) {
		mutex_lock(&gf->lock);
		xa_erase(&gf->handles, handle);
		mutex_unlock(&gf->lock);
		cnuasgpu_obj_put(obj);
		return -EFAULT;
	}
	return 0;
}

int cnuasgpu_ioc_free(struct cnuasgpu_file *gf, void __user *arg)
{
	struct cnuasgpu_obj *obj;
	struct cnuasgpu_free req;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (req.reserved)
		return -EINVAL;
	mutex_lock(&gf->lock);
	obj = cnuasgpu_obj_lookup(gf, req.handle);
	if (!obj) {
		mutex_unlock(&gf->lock);
		return -ENOENT;
	}
	if (atomic_read(&obj->exports)) {
		mutex_unlock(&gf->lock);
		return -EBUSY;
	}
	xa_erase(&gf->handles, req.handle);
	mutex_unlock(&gf->lock);
	/* Memory returns once the last user mapping is gone too. */
	cnuasgpu_obj_put(obj);
	return 0;
}

int cnuasgpu_ioc_query(struct cnuasgpu_file *gf, void __user *arg)
{
	struct cnuasgpu_query req;
	struct cnuasgpu_obj *obj;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	if (memchr_inv(req.reserved, 0, sizeof(req.reserved)))
		return -EINVAL;
	mutex_lock(&gf->lock);
	obj = cnuasgpu_obj_lookup(gf, req.handle);
	if (!obj) {
		mutex_unlock(&gf->lock);
		return -ENOENT;
	}
	req.exports = atomic_read(&obj->exports);
	req.size = obj->size;
	req.align = obj->align;
	req.mmap_offset = cnuasgpu_obj_offset(obj);
	req.dev_offset = cnuasgpu_obj_offset(obj);
	mutex_unlock(&gf->lock);
	return copy_to_user(arg, &req, sizeof(req)) ? -EFAULT : 0;
}

/* The file is going away: its handles go, the objects may live on. */
void cnuasgpu_file_release_all(struct cnuasgpu_file *gf)
{
	struct cnuasgpu_obj *obj;
	unsigned long handle;

	mutex_lock(&gf->lock);
	xa_for_each(&gf->handles, handle, obj) {
		xa_erase(&gf->handles, handle);
		cnuasgpu_obj_put(obj);
	}
	mutex_unlock(&gf->lock);
}

static void cnuasgpu_vm_open(struct vm_area_struct *vma)
{
	cnuasgpu_obj_get(vma->vm_private_data);
}

static void cnuasgpu_vm_close(struct vm_area_struct *vma)
{
	cnuasgpu_obj_put(vma->vm_private_data);
}

static const struct vm_operations_struct cnuasgpu_vm_ops = {
	.open = cnuasgpu_vm_open,
	.close = cnuasgpu_vm_close,
};

/* mmap(offset = mmap_offset [+ page offset]) of an allocation this file owns. */
int cnuasgpu_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct cnuasgpu_file *gf = filp->private_data;
	struct cnuasgpu_dev *gdev = gf->gdev;
	u64 len = vma->vm_end - vma->vm_start;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	struct cnuasgpu_obj *obj, *found = NULL;
	unsigned long handle;
	int err;

	/* gdev->lock: removal cannot zap between our check and the map. */
	mutex_lock(&gdev->lock);
	if (gdev->dead) {
		mutex_unlock(&gdev->lock);
		return -ENODEV;
	}
	mutex_lock(&gf->lock);
	xa_for_each(&gf->handles, handle, obj) {
		u64 start = cnuasgpu_obj_offset(obj);

		if (off >= start && off - start < obj->size &&
		    len <= obj->size - (off - start)) {
			found = obj;
			cnuasgpu_obj_get(found);
			break;
		}
	}
	mutex_unlock(&gf->lock);
	if (!found) {
		mutex_unlock(&gdev->lock);
		return -EINVAL;
	}

	err = gdev->backing->mmap(found, off - cnuasgpu_obj_offset(found), vma);
	mutex_unlock(&gdev->lock);
	if (err) {
		cnuasgpu_obj_put(found);
		return err;
	}
	vma->vm_private_data = found;
	vma->vm_ops = &cnuasgpu_vm_ops;
	return 0;
}
