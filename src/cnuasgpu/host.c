// SPDX-License-Identifier: GPL-2.0
/*
 * The host exporter, /dev/cnuasgpu_host0: pinned guest-kernel memory
 * exported exactly like GPU memory (same ioctls, argument checks, errnos,
 * ownership and export lifetime: file.c, mem.c, dmabuf.c), so RDMA
 * software can use DMA-BUF MRs of host memory, and tests can compare.
 *
 * Numbering: one host exporter per module, always N = 0. It is created at
 * module load and removed at unload and belongs to no PCI device, so the
 * removal of a GPU never touches it or its exports. Unload cannot race
 * with users: open files, their mappings and every DMA-BUF hold a module
 * reference, so the last put below is the final one.
 *
 * Limit: the host_mem_mib module parameter (read-only, default 256 MiB,
 * clamped to half of RAM; 0 = no host exporter) is the size of the pool
 * every allocation is carved from, so pinned memory is accounted like
 * device memory (CAPS mem_total/mem_free, sysfs mem_*): an ALLOC that does
 * not fit fails with ENOSPC, one the kernel has no pages for with ENOMEM.
 */

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "cnuasgpu.h"

static unsigned int host_mem_mib = 256;
module_param(host_mem_mib, uint, 0444);
MODULE_PARM_DESC(host_mem_mib,
		 "Pinned host memory /dev/cnuasgpu_host0 may hand out, MiB (0: no host exporter; at most half of RAM)");

static struct cnuasgpu_dev *cnuasgpu_host;

int cnuasgpu_host_init(void)
{
	u64 half = ((u64)totalram_pages() << PAGE_SHIFT) / 2;
	u64 size = (u64)host_mem_mib << 20;
	struct cnuasgpu_dev *gdev;
	int err;

	if (!size) {
		pr_info(CNUASGPU_NAME ": host exporter disabled (host_mem_mib=0)\n");
		return 0;
	}
	if (size > half) {
		size = half & ~(u64)(SZ_1M - 1);
		pr_info(CNUASGPU_NAME ": host_mem_mib %u is more than half of RAM: %llu MiB\n",
			host_mem_mib, size >> 20);
		if (!size)
			return 0;
	}
	gdev = cnuasgpu_dev_alloc(&cnuasgpu_host_backing);
	if (!gdev)
		return -ENOMEM;
	/*
	 * The pool hands out offsets, not addresses: based at a power of two
	 * at least as large as the limit, so every alignment an ALLOC may ask
	 * for (up to the limit) is an alignment of mmap_offset too.
	 */
	gdev->mem_size = size;
	gdev->mem_phys = roundup_pow_of_two(size);
	err = cnuasgpu_mem_init(gdev, NUMA_NO_NODE);
	if (err)
		goto err_put;

	gdev->misc.minor = MISC_DYNAMIC_MINOR;
	gdev->misc.name = CNUASGPU_HOST_NAME "0";
	gdev->misc.fops = &cnuasgpu_fops;
	gdev->misc.groups = cnuasgpu_host_groups;
	gdev->misc.mode = 0660;
	err = misc_register(&gdev->misc);
	if (err)
		goto err_put;
	gdev->misc_registered = true;
	cnuasgpu_host = gdev;
	pr_info(CNUASGPU_NAME ": /dev/%s: up to %llu MiB of pinned host memory\n",
		gdev->misc.name, size >> 20);
	return 0;

err_put:
	cnuasgpu_dev_put(gdev);
	return err;
}

/* Module unload: nothing uses the exporter any more (see above). */
void cnuasgpu_host_exit(void)
{
	struct cnuasgpu_dev *gdev = cnuasgpu_host;

	if (!gdev)
		return;
	cnuasgpu_host = NULL;
	mutex_lock(&gdev->lock);
	gdev->dead = true;
	mutex_unlock(&gdev->lock);
	misc_deregister(&gdev->misc);
	cnuasgpu_dev_put(gdev);
}
