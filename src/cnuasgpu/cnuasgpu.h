/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cnuasgpu.ko private definitions.
 *
 * Lifetime, one lock order: gdev->lock (device state) > file->lock
 * (handles) > obj state (atomics). References:
 *   cnuasgpu_dev   kref: the PCI binding, each open file, each allocation.
 *                  The last put unmaps BAR1 and releases the PCI device, so
 *                  BAR teardown waits for every export and mapping.
 *   cnuasgpu_obj   kref: the owning handle, each user mapping, each DMA-BUF
 *                  export. The last put returns the memory to the pool.
 */
#ifndef CNUASGPU_H
#define CNUASGPU_H

#include <linux/genalloc.h>
#include <linux/kref.h>
#include <linux/miscdevice.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "cnuasgpu_hw.h"
#include "uapi/cnuasgpu.h"

#ifndef PCI_IRQ_INTX
#define PCI_IRQ_INTX	PCI_IRQ_LEGACY
#endif

#define CNUASGPU_NAME		"cnuasgpu"
#define CNUASGPU_EXPORT_ALIGN	PAGE_SIZE
#define CNUASGPU_LINK_TIMEOUT_MS 5000

struct cnuasgpu_dev {
	struct kref ref;
	struct pci_dev *pdev;
	struct miscdevice misc;
	bool misc_registered;
	int id;

	void __iomem *regs;
	void __iomem *mem;		/* BAR1, write-combining */
	phys_addr_t mem_phys;
	u64 mem_size;
	struct gen_pool *pool;		/* BAR1 physical addresses */
	u64 reserved_bytes;		/* link staging, not for users */

	struct mutex lock;		/* dead, files, export_list */
	bool dead;			/* removed: no new allocations/exports */
	bool regions_released;
	struct list_head files;		/* open cnuasgpu_files (under lock) */
	struct list_head export_list;	/* live cnuasgpu_exports (under lock) */
	atomic_t exports;		/* live DMA-BUFs */
	atomic_t objects;		/* live allocations (incl. orphans) */

	/* CnuasLink */
	int irq;
	wait_queue_head_t link_wq;
	struct mutex tx_lock;		/* one send at a time */
	struct mutex rx_lock;		/* one receiver at a time */
	unsigned long tx_addr;		/* staging in BAR1 (pool address) */
	unsigned long rx_addr;
	void *bounce;			/* one frame, for copy_{to,from}_user */
	struct mutex bounce_lock;	/* bounce */

	u32 gpu_id, fw_version;
};

struct cnuasgpu_file {
	struct cnuasgpu_dev *gdev;
	struct list_head node;		/* in gdev->files */
	struct address_space *mapping;	/* to zap user mappings at removal */
	struct mutex lock;		/* handles */
	struct xarray handles;		/* handle -> cnuasgpu_obj */
};

struct cnuasgpu_obj {
	struct kref ref;
	struct cnuasgpu_dev *gdev;
	unsigned long addr;		/* pool address = BAR1 physical */
	u64 size;
	u64 align;
	atomic_t exports;
};

static inline u64 cnuasgpu_obj_offset(const struct cnuasgpu_obj *obj)
{
	return obj->addr - obj->gdev->mem_phys;
}

static inline u32 cnuasgpu_rd(struct cnuasgpu_dev *gdev, u32 reg)
{
	return readl(gdev->regs + reg);
}

static inline void cnuasgpu_wr(struct cnuasgpu_dev *gdev, u32 reg, u32 val)
{
	writel(val, gdev->regs + reg);
}

/* main.c */
void cnuasgpu_dev_get(struct cnuasgpu_dev *gdev);
void cnuasgpu_dev_put(struct cnuasgpu_dev *gdev);

/* file.c */
extern const struct file_operations cnuasgpu_fops;

/* mem.c */
int cnuasgpu_mem_init(struct cnuasgpu_dev *gdev);
u64 cnuasgpu_mem_free_bytes(struct cnuasgpu_dev *gdev);
u64 cnuasgpu_mem_total(struct cnuasgpu_dev *gdev);
int cnuasgpu_ioc_alloc(struct cnuasgpu_file *gf, void __user *arg);
int cnuasgpu_ioc_free(struct cnuasgpu_file *gf, void __user *arg);
int cnuasgpu_ioc_query(struct cnuasgpu_file *gf, void __user *arg);
struct cnuasgpu_obj *cnuasgpu_obj_lookup(struct cnuasgpu_file *gf, u32 handle);
void cnuasgpu_obj_get(struct cnuasgpu_obj *obj);
void cnuasgpu_obj_put(struct cnuasgpu_obj *obj);
void cnuasgpu_file_release_all(struct cnuasgpu_file *gf);
int cnuasgpu_mmap(struct file *filp, struct vm_area_struct *vma);

/* dmabuf.c */
int cnuasgpu_ioc_export(struct cnuasgpu_file *gf, void __user *arg);
void cnuasgpu_exports_revoke(struct cnuasgpu_dev *gdev);

/* link.c */
int cnuasgpu_link_init(struct cnuasgpu_dev *gdev);
void cnuasgpu_link_fini(struct cnuasgpu_dev *gdev);
bool cnuasgpu_link_up(struct cnuasgpu_dev *gdev);
int cnuasgpu_ioc_link_send(struct cnuasgpu_file *gf, void __user *arg);
int cnuasgpu_ioc_link_recv(struct cnuasgpu_file *gf, void __user *arg);

/* sysfs.c */
extern const struct attribute_group *cnuasgpu_groups[];

#endif /* CNUASGPU_H */
