// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu.ko: driver for the Cnuas GPU-like accelerator (PCI 1af4:10f1).
 * This file binds the PCI device, maps the BARs, creates /dev/cnuasgpuN
 * and owns the device lifetime: removal stops new work at once and leaves
 * the BAR teardown to the last reference (exports, mappings, open files).
 * The module also brings up the host exporter (host.c), which lives from
 * module load to unload, independent of any GPU.
 */

#include <linux/idr.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "cnuasgpu.h"

static DEFINE_IDA(cnuasgpu_ida);

static void cnuasgpu_dev_release(struct kref *ref)
{
	struct cnuasgpu_dev *gdev = container_of(ref, struct cnuasgpu_dev, ref);

	/* Every allocation is gone: each one held a reference. */
	if (gdev->pool)
		gen_pool_destroy(gdev->pool);
	gdev->backing->release(gdev);
	kfree(gdev);
}

/* The GPU's part of the last put: BAR mappings and the PCI device. */
void cnuasgpu_pci_release(struct cnuasgpu_dev *gdev)
{
	struct pci_dev *pdev = gdev->pdev;

	if (gdev->mem)
		iounmap(gdev->mem);
	if (gdev->regs)
		pci_iounmap(pdev, gdev->regs);
	if (!gdev->regions_released) {
		pci_release_regions(pdev);
		pci_disable_device(pdev);
	}
	ida_free(&cnuasgpu_ida, gdev->id);
	dev_info(&pdev->dev, "device memory released\n");
	pci_dev_put(pdev);
}

/* A device with one reference, no files, exports or objects yet. */
struct cnuasgpu_dev *cnuasgpu_dev_alloc(const struct cnuasgpu_backing *backing)
{
	struct cnuasgpu_dev *gdev = kzalloc(sizeof(*gdev), GFP_KERNEL);

	if (!gdev)
		return NULL;
	kref_init(&gdev->ref);
	gdev->backing = backing;
	mutex_init(&gdev->lock);
	INIT_LIST_HEAD(&gdev->files);
	INIT_LIST_HEAD(&gdev->export_list);
	atomic_set(&gdev->exports, 0);
	atomic_set(&gdev->objects, 0);
	gdev->irq = -1;
	return gdev;
}

void cnuasgpu_dev_get(struct cnuasgpu_dev *gdev)
{
	kref_get(&gdev->ref);
}

void cnuasgpu_dev_put(struct cnuasgpu_dev *gdev)
{
	kref_put(&gdev->ref, cnuasgpu_dev_release);
}

static int cnuasgpu_map(struct cnuasgpu_dev *gdev)
{
	struct pci_dev *pdev = gdev->pdev;
	u64 size;

	if (pci_resource_len(pdev, CNUASGPU_BAR_REGS) < CNUASGPU_REGS_SIZE ||
	    !(pci_resource_flags(pdev, CNUASGPU_BAR_DEVMEM) & IORESOURCE_MEM))
		return -ENODEV;
	gdev->regs = pci_iomap(pdev, CNUASGPU_BAR_REGS, CNUASGPU_REGS_SIZE);
	if (!gdev->regs)
		return -ENOMEM;
	if (cnuasgpu_rd(gdev, CNUASGPU_REG_VENDOR) != CNUASGPU_VENDOR_ID ||
	    cnuasgpu_rd(gdev, CNUASGPU_REG_DEVICE) != CNUASGPU_DEVICE_ID) {
		dev_err(&pdev->dev, "registers do not identify a cnuasgpu\n");
		return -ENODEV;
	}
	size = cnuasgpu_rd(gdev, CNUASGPU_REG_DEVMEM_SIZE_LO) |
	       (u64)cnuasgpu_rd(gdev, CNUASGPU_REG_DEVMEM_SIZE_HI) << 32;
	gdev->mem_phys = pci_resource_start(pdev, CNUASGPU_BAR_DEVMEM);
	gdev->mem_size = pci_resource_len(pdev, CNUASGPU_BAR_DEVMEM);
	if (size != gdev->mem_size || !is_power_of_2(size) ||
	    !IS_ALIGNED(gdev->mem_phys, PAGE_SIZE)) {
		dev_err(&pdev->dev, "BAR1 is %llu bytes, device says %llu\n",
			gdev->mem_size, size);
		return -ENODEV;
	}
	gdev->mem = ioremap_wc(gdev->mem_phys, gdev->mem_size);
	if (!gdev->mem)
		return -ENOMEM;
	gdev->gpu_id = cnuasgpu_rd(gdev, CNUASGPU_REG_GPU_ID);
	gdev->fw_version = cnuasgpu_rd(gdev, CNUASGPU_REG_FW_VERSION);
	return 0;
}

static int cnuasgpu_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct cnuasgpu_dev *gdev;
	int err;

	gdev = cnuasgpu_dev_alloc(&cnuasgpu_bar_backing);
	if (!gdev)
		return -ENOMEM;
	gdev->pdev = pci_dev_get(pdev);
	err = ida_alloc(&cnuasgpu_ida, GFP_KERNEL);
	if (err < 0)
		goto err_free;
	gdev->id = err;

	err = pci_enable_device(pdev);
	if (err)
		goto err_ida;
	err = pci_request_regions(pdev, CNUASGPU_NAME);
	if (err)
		goto err_disable;
	/* From here on the release function undoes everything. */
	pci_set_master(pdev);
	pci_set_drvdata(pdev, gdev);

	err = cnuasgpu_map(gdev);
	if (err)
		goto err_put;
	err = cnuasgpu_mem_init(gdev, dev_to_node(&pdev->dev));
	if (err)
		goto err_put;
	err = cnuasgpu_link_init(gdev);
	if (err)
		goto err_put;

	gdev->misc.minor = MISC_DYNAMIC_MINOR;
	gdev->misc.name = kasprintf(GFP_KERNEL, CNUASGPU_NAME "%d", gdev->id);
	gdev->misc.fops = &cnuasgpu_fops;
	gdev->misc.parent = &pdev->dev;
	gdev->misc.groups = cnuasgpu_groups;
	gdev->misc.mode = 0660;
	if (!gdev->misc.name) {
		err = -ENOMEM;
		goto err_link;
	}
	err = misc_register(&gdev->misc);
	if (err)
		goto err_name;
	gdev->misc_registered = true;
	dev_info(&pdev->dev, "/dev/%s: %llu MiB device memory, gpu_id %u, fw %u.%u.%u\n",
		 gdev->misc.name, gdev->mem_size >> 20, gdev->gpu_id,
		 gdev->fw_version >> 16, (gdev->fw_version >> 8) & 0xff,
		 gdev->fw_version & 0xff);
	return 0;

err_name:
	kfree(gdev->misc.name);
err_link:
	cnuasgpu_link_fini(gdev);
err_put:
	pci_set_drvdata(pdev, NULL);
	cnuasgpu_dev_put(gdev);
	return err;

	/* Before the release function owns the device: undo by hand. */
err_disable:
	pci_disable_device(pdev);
err_ida:
	ida_free(&cnuasgpu_ida, gdev->id);
err_free:
	pci_dev_put(pdev);
	kfree(gdev);
	return err;
}

/*
 * Hot-unplug (device_del) or rmmod. New opens, allocations, mmaps and
 * exports fail from now on, and user mappings of BAR1 (GPU file and
 * DMA-BUF) are zapped: a later access gets SIGBUS instead of touching
 * whatever the address range is given to next. Kernel importers keep
 * their vmap (our BAR1 mapping) until they release the export; that
 * teardown is deferred to the last reference, nothing here waits for
 * user space.
 */
static void cnuasgpu_remove(struct pci_dev *pdev)
{
	struct cnuasgpu_dev *gdev = pci_get_drvdata(pdev);
	struct cnuasgpu_file *gf;

	mutex_lock(&gdev->lock);
	gdev->dead = true;
	list_for_each_entry(gf, &gdev->files, node)
		unmap_mapping_range(gf->mapping, 0, 0, 1);
	cnuasgpu_exports_revoke(gdev);
	mutex_unlock(&gdev->lock);
	if (gdev->misc_registered)
		misc_deregister(&gdev->misc);
	kfree(gdev->misc.name);
	gdev->misc.name = NULL;
	cnuasgpu_link_fini(gdev);
	if (atomic_read(&gdev->exports))
		dev_info(&pdev->dev, "removed with %d live exports: BAR teardown deferred\n",
			 atomic_read(&gdev->exports));
	/* The PCI core frees the BAR resources after we return. */
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	gdev->regions_released = true;
	pci_set_drvdata(pdev, NULL);
	cnuasgpu_dev_put(gdev);
}

static const struct pci_device_id cnuasgpu_ids[] = {
	{ PCI_DEVICE(CNUASGPU_VENDOR_ID, CNUASGPU_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, cnuasgpu_ids);

static struct pci_driver cnuasgpu_driver = {
	.name = CNUASGPU_NAME,
	.id_table = cnuasgpu_ids,
	.probe = cnuasgpu_probe,
	.remove = cnuasgpu_remove,
};

static int __init cnuasgpu_init(void)
{
	int err = cnuasgpu_host_init();

	if (err)
		return err;
	err = pci_register_driver(&cnuasgpu_driver);
	if (err)
		cnuasgpu_host_exit();
	return err;
}
module_init(cnuasgpu_init);

static void __exit cnuasgpu_exit(void)
{
	pci_unregister_driver(&cnuasgpu_driver);
	cnuasgpu_host_exit();
}
module_exit(cnuasgpu_exit);

MODULE_DESCRIPTION("Cnuas GPU: device memory allocator and DMA-BUF exporter");
MODULE_AUTHOR("The Cnuas authors");
MODULE_LICENSE("GPL");
MODULE_VERSION(CNUAS_VERSION);
#ifdef CNUASGPU_NS_STRINGIFY
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif
