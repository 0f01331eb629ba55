// SPDX-License-Identifier: GPL-2.0
/*
 * GPU device memory (BAR1) as a cnuasgpu backing: zeroing, user mappings
 * and the DMA-BUF view of an allocation.
 *
 * BAR pages have no struct page: importers get an sg_table of DMA
 * addresses from dma_map_resource() (no pages in it), or an __iomem
 * iosys_map from vmap for CPU copies with the I/O accessors. BAR1 stays
 * mapped (gdev->mem) until the device's last reference is gone.
 */

#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "cnuasgpu.h"

static phys_addr_t cnuasgpu_bar_phys(struct cnuasgpu_export *exp)
{
	return exp->obj->addr + exp->offset;
}

static int cnuasgpu_bar_obj_init(struct cnuasgpu_obj *obj)
{
	memset_io(obj->gdev->mem + cnuasgpu_obj_offset(obj), 0, obj->size);
	return 0;
}

static void cnuasgpu_bar_obj_fini(struct cnuasgpu_obj *obj)
{
}

/* Caller holds gdev->lock and checked that the device is alive. */
static int cnuasgpu_bar_mmap(struct cnuasgpu_obj *obj, u64 off,
			     struct vm_area_struct *vma)
{
	vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	return io_remap_pfn_range(vma, vma->vm_start,
				  (obj->addr + off) >> PAGE_SHIFT,
				  vma->vm_end - vma->vm_start,
				  vma->vm_page_prot);
}

static struct sg_table *cnuasgpu_bar_map(struct cnuasgpu_export *exp,
					 struct device *dev,
					 enum dma_data_direction dir)
{
	struct sg_table *sgt;
	dma_addr_t addr;
	int err;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	err = sg_alloc_table(sgt, 1, GFP_KERNEL);
	if (err)
		goto err_free;
	addr = dma_map_resource(dev, cnuasgpu_bar_phys(exp), exp->length, dir,
				DMA_ATTR_SKIP_CPU_SYNC);
	if (dma_mapping_error(dev, addr)) {
		err = -EIO;
		goto err_table;
	}
	/* DMA address and length only: there is no struct page. */
	sg_dma_address(sgt->sgl) = addr;
	sg_dma_len(sgt->sgl) = exp->length;
	return sgt;

err_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(err);
}

static void cnuasgpu_bar_unmap(struct cnuasgpu_export *exp, struct device *dev,
			       struct sg_table *sgt,
			       enum dma_data_direction dir)
{
	dma_unmap_resource(dev, sg_dma_address(sgt->sgl), sg_dma_len(sgt->sgl),
			   dir, DMA_ATTR_SKIP_CPU_SYNC);
	sg_free_table(sgt);
	kfree(sgt);
}

static int cnuasgpu_bar_vmap(struct cnuasgpu_export *exp,
			     struct iosys_map *map)
{
	struct cnuasgpu_obj *obj = exp->obj;

	if (READ_ONCE(obj->gdev->dead))
		return -ENODEV;
	iosys_map_set_vaddr_iomem(map, obj->gdev->mem +
				  cnuasgpu_obj_offset(obj) + exp->offset);
	return 0;
}

static void cnuasgpu_bar_caps(struct cnuasgpu_dev *gdev,
			      struct cnuasgpu_caps *caps)
{
	caps->flags |= CNUASGPU_CAP_LINK;
	if (cnuasgpu_link_up(gdev))
		caps->flags |= CNUASGPU_CAP_LINK_UP;
	caps->gpu_id = gdev->gpu_id;
	caps->sm_count = CNUASGPU_SM_COUNT;
	caps->lanes_per_sm = CNUASGPU_LANES_PER_SM;
	caps->tensor_size = CNUASGPU_TENSOR_SIZE;
	caps->fw_version = gdev->fw_version;
	caps->link_max_frame = CNUASGPU_LINK_MAX_FRAME;
}

const struct cnuasgpu_backing cnuasgpu_bar_backing = {
	.full_errno = ENOMEM,
	.obj_init = cnuasgpu_bar_obj_init,
	.obj_fini = cnuasgpu_bar_obj_fini,
	.mmap = cnuasgpu_bar_mmap,
	.map = cnuasgpu_bar_map,
	.unmap = cnuasgpu_bar_unmap,
	.vmap = cnuasgpu_bar_vmap,
	.caps = cnuasgpu_bar_caps,
	.release = cnuasgpu_pci_release,
};
