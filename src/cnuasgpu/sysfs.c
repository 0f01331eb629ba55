// SPDX-License-Identifier: GPL-2.0
/*
 * sysfs attributes of /sys/class/misc/cnuasgpuN and cnuasgpu_host0: what
 * peer-memory users (libcnuaspeermem, tests, admins) read to see the
 * export interface and its live state. Both exporters have the common
 * group (for the host exporter mem_total is the pinned-memory limit and
 * mem_used the pinned memory); gpu_id and link_up are a GPU's only.
 */

#include <linux/device.h>
#include <linux/sysfs.h>

#include "cnuasgpu.h"

static struct cnuasgpu_dev *to_gdev(struct device *dev)
{
	struct miscdevice *misc = dev_get_drvdata(dev);

	return container_of(misc, struct cnuasgpu_dev, misc);
}

static ssize_t peer_rdma_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%d\n", !READ_ONCE(to_gdev(dev)->dead));
}
static DEVICE_ATTR_RO(peer_rdma);

static ssize_t export_align_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lu\n", CNUASGPU_EXPORT_ALIGN);
}
static DEVICE_ATTR_RO(export_align);

static ssize_t exports_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_gdev(dev)->exports));
}
static DEVICE_ATTR_RO(exports);

static ssize_t allocations_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_gdev(dev)->objects));
}
static DEVICE_ATTR_RO(allocations);

static ssize_t mem_total_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%llu\n", cnuasgpu_mem_total(to_gdev(dev)));
}
static DEVICE_ATTR_RO(mem_total);

static ssize_t mem_free_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%llu\n", cnuasgpu_mem_free_bytes(to_gdev(dev)));
}
static DEVICE_ATTR_RO(mem_free);

static ssize_t mem_used_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct cnuasgpu_dev *gdev = to_gdev(dev);

	return sysfs_emit(buf, "%llu\n", cnuasgpu_mem_total(gdev) -
			  cnuasgpu_mem_free_bytes(gdev));
}
static DEVICE_ATTR_RO(mem_used);

static ssize_t gpu_id_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n", to_gdev(dev)->gpu_id);
}
static DEVICE_ATTR_RO(gpu_id);

static ssize_t link_up_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", cnuasgpu_link_up(to_gdev(dev)));
}
static DEVICE_ATTR_RO(link_up);

static struct attribute *cnuasgpu_common_attrs[] = {
	&dev_attr_peer_rdma.attr,
	&dev_attr_export_align.attr,
	&dev_attr_exports.attr,
	&dev_attr_allocations.attr,
	&dev_attr_mem_total.attr,
	&dev_attr_mem_free.attr,
	&dev_attr_mem_used.attr,
	NULL,
};

static const struct attribute_group cnuasgpu_common_group = {
	.attrs = cnuasgpu_common_attrs,
};

static struct attribute *cnuasgpu_gpu_attrs[] = {
	&dev_attr_gpu_id.attr,
	&dev_attr_link_up.attr,
	NULL,
};

static const struct attribute_group cnuasgpu_gpu_group = {
	.attrs = cnuasgpu_gpu_attrs,
};

const struct attribute_group *cnuasgpu_groups[] = {
	&cnuasgpu_common_group,
	&cnuasgpu_gpu_group,
	NULL,
};

const struct attribute_group *cnuasgpu_host_groups[] = {
	&cnuasgpu_common_group,
	NULL,
};
