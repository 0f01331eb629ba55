// SPDX-License-Identifier: GPL-2.0
/*
 * Pinned host memory as a cnuasgpu backing (the host exporter's): each
 * allocation is an array of order-0 pages from the page allocator (not on
 * any LRU, so never swapped or migrated: pinned), mapped once into the
 * kernel with vmap() for importers' CPU copies, into user space with
 * vm_insert_pages() (ordinary cacheable mappings), and handed to DMA
 * importers as a real sg_table (sg_alloc_table_from_pages +
 * dma_map_sgtable). Pages need not be physically contiguous, so an
 * allocation's alignment is that of its mmap_offset only.
 */

#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "cnuasgpu.h"

/* Zeroed; the OOM killer is not woken for a big ALLOC: ENOMEM instead. */
#define CNUASGPU_HOST_GFP (GFP_HIGHUSER | __GFP_ZERO | __GFP_NOWARN | \
			   __GFP_RETRY_MAYFAIL)

static void cnuasgpu_host_obj_fini(struct cnuasgpu_obj *obj)
{
	unsigned long i, n = obj->size >> PAGE_SHIFT;

	if (obj->vaddr)
		vunmap(obj->vaddr);
	obj->vaddr = NULL;
	if (!obj->pages)
		return;
	/* A page still referenced elsewhere (e.g. pinned by GUP) lives on. */
	for (i = 0; i < n && obj->pages[i]; i++)
		__free_page(obj->pages[i]);
	kvfree(obj->pages);
	obj->pages = NULL;
}

static int cnuasgpu_host_obj_init(struct cnuasgpu_obj *obj)
{
	unsigned long i, n = obj->size >> PAGE_SHIFT;
	int err = -ENOMEM;

	/* vmap() counts pages in an unsigned int. */
	if (n > UINT_MAX)
		return -ENOMEM;
	obj->pages = kvcalloc(n, sizeof(*obj->pages), GFP_KERNEL);
	if (!obj->pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			goto err_fini;
		}
		obj->pages[i] = alloc_page(CNUASGPU_HOST_GFP);
		if (!obj->pages[i])
			goto err_fini;
		cond_resched();
	}
	obj->vaddr = vmap(obj->pages, n, VM_MAP, PAGE_KERNEL);
	if (!obj->vaddr)
		goto err_fini;
	return 0;

err_fini:
	cnuasgpu_host_obj_fini(obj);
	return err;
}

static int cnuasgpu_host_mmap(struct cnuasgpu_obj *obj, u64 off,
			      struct vm_area_struct *vma)
{
	unsigned long num = vma_pages(vma);
	int err;

	err = vm_insert_pages(vma, vma->vm_start,
			      obj->pages + (off >> PAGE_SHIFT), &num);
	return err ? err : num ? -EFAULT : 0;
}

static struct sg_table *cnuasgpu_host_map(struct cnuasgpu_export *exp,
					  struct device *dev,
					  enum dma_data_direction dir)
{
	struct sg_table *sgt;
	int err;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	err = sg_alloc_table_from_pages(sgt, exp->obj->pages +
					(exp->offset >> PAGE_SHIFT),
					exp->length >> PAGE_SHIFT, 0,
					exp->length, GFP_KERNEL);
	if (err)
		goto err_free;
	err = dma_map_sgtable(dev, sgt, dir, 0);
	if (err)
		goto err_table;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(err);
}

static void cnuasgpu_host_unmap(struct cnuasgpu_export *exp,
				struct device *dev, struct sg_table *sgt,
				enum dma_data_direction dir)
{
	dma_unmap_sgtable(dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

/* System memory: importers use plain memcpy through the iosys_map. */
static int cnuasgpu_host_vmap(struct cnuasgpu_export *exp,
			      struct iosys_map *map)
{
	iosys_map_set_vaddr(map, exp->obj->vaddr + exp->offset);
	return 0;
}

static void cnuasgpu_host_caps(struct cnuasgpu_dev *gdev,
			       struct cnuasgpu_caps *caps)
{
	/* No GPU: gpu_id, sm_count, ..., link_max_frame stay 0. */
	caps->flags |= CNUASGPU_CAP_HOST;
}

static void cnuasgpu_host_release(struct cnuasgpu_dev *gdev)
{
	pr_debug(CNUASGPU_NAME ": host exporter released\n");
}

const struct cnuasgpu_backing cnuasgpu_host_backing = {
	.full_errno = ENOSPC,
	.obj_init = cnuasgpu_host_obj_init,
	.obj_fini = cnuasgpu_host_obj_fini,
	.mmap = cnuasgpu_host_mmap,
	.map = cnuasgpu_host_map,
	.unmap = cnuasgpu_host_unmap,
	.vmap = cnuasgpu_host_vmap,
	.caps = cnuasgpu_host_caps,
	.release = cnuasgpu_host_release,
};
