// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/cnuasgpuN and /dev/cnuasgpu_host0 file operations (the same for
 * both): one cnuasgpu_file per open, which owns every allocation made
 * through it. ioctl dispatch and CAPS live here.
 */

#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "cnuasgpu.h"

static int cnuasgpu_open(struct inode *inode, struct file *filp)
{
	struct miscdevice *misc = filp->private_data;
	struct cnuasgpu_dev *gdev = container_of(misc, struct cnuasgpu_dev, misc);
	struct cnuasgpu_file *gf;

	gf = kzalloc(sizeof(*gf), GFP_KERNEL);
	if (!gf)
		return -ENOMEM;
	/* misc_open() holds misc_mtx, so remove() has not freed gdev. */
	mutex_lock(&gdev->lock);
	if (gdev->dead) {
		mutex_unlock(&gdev->lock);
		kfree(gf);
		return -ENODEV;
	}
	cnuasgpu_dev_get(gdev);
	gf->gdev = gdev;
	gf->mapping = filp->f_mapping;
	mutex_init(&gf->lock);
	xa_init_flags(&gf->handles, XA_FLAGS_ALLOC1);
	list_add(&gf->node, &gdev->files);
	mutex_unlock(&gdev->lock);
	filp->private_data = gf;
	return 0;
}

static int cnuasgpu_release(struct inode *inode, struct file *filp)
{
	struct cnuasgpu_file *gf = filp->private_data;
	struct cnuasgpu_dev *gdev = gf->gdev;

	mutex_lock(&gdev->lock);
	list_del(&gf->node);
	mutex_unlock(&gdev->lock);
	/* Exports and mappings keep their allocations alive (orphans). */
	cnuasgpu_file_release_all(gf);
	xa_destroy(&gf->handles);
	kfree(gf);
	cnuasgpu_dev_put(gdev);
	return 0;
}

static int cnuasgpu_ioc_caps(struct cnuasgpu_file *gf, void __user *arg)
{
	struct cnuasgpu_dev *gdev = gf->gdev;
	struct cnuasgpu_caps caps;

	if (copy_from_user(&caps, arg, sizeof(caps)))
		return -EFAULT;
	if (caps.reserved0 || memchr_inv(caps.reserved, 0, sizeof(caps.reserved)))
		return -EINVAL;
	memset(&caps, 0, sizeof(caps));
	caps.abi_version = CNUASGPU_ABI_VERSION;
	caps.flags = CNUASGPU_CAP_DMABUF | CNUASGPU_CAP_PEER_RDMA;
	caps.mem_total = cnuasgpu_mem_total(gdev);
	caps.mem_free = cnuasgpu_mem_free_bytes(gdev);
	caps.export_align = CNUASGPU_EXPORT_ALIGN;
	gdev->backing->caps(gdev, &caps);
	return copy_to_user(arg, &caps, sizeof(caps)) ? -EFAULT : 0;
}

static long cnuasgpu_ioctl(struct file *filp, unsigned int cmd,
			   unsigned long arg)
{
	struct cnuasgpu_file *gf = filp->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case CNUASGPU_IOC_CAPS:
		return cnuasgpu_ioc_caps(gf, uarg);
	case CNUASGPU_IOC_ALLOC:
		return cnuasgpu_ioc_alloc(gf, uarg);
	case CNUASGPU_IOC_FREE:
		return cnuasgpu_ioc_free(gf, uarg);
	case CNUASGPU_IOC_QUERY:
		return cnuasgpu_ioc_query(gf, uarg);
	case CNUASGPU_IOC_EXPORT_DMABUF:
		return cnuasgpu_ioc_export(gf, uarg);
	}
	/* CnuasLink is a GPU's; the host exporter has none. */
	if (cnuasgpu_is_host(gf->gdev))
		return -ENOTTY;
	switch (cmd) {
	case CNUASGPU_IOC_LINK_SEND:
		return cnuasgpu_ioc_link_send(gf, uarg);
	case CNUASGPU_IOC_LINK_RECV:
		return cnuasgpu_ioc_link_recv(gf, uarg);
	}
	return -ENOTTY;
}

const struct file_operations cnuasgpu_fops = {
	.owner = THIS_MODULE,
	.open = cnuasgpu_open,
	.release = cnuasgpu_release,
	.unlocked_ioctl = cnuasgpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = cnuasgpu_mmap,
	.llseek = noop_llseek,
};
