/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cnuasgpu.ko private definitions.
 *
 * Two kinds of exporter share one struct cnuasgpu_dev, the ioctls, the
 * handle and export code (file.c, mem.c, dmabuf.c): a GPU (/dev/cnuasgpuN,
 * PCI, memory = BAR1: bar.c) and the host exporter (/dev/cnuasgpu_host0,
 * no device, memory = pinned guest pages: host.c, host-mem.c). What
 * differs sits behind struct cnuasgpu_backing.
 *
 * Lifetime, one lock order: gdev->lock (device state) > file->lock
 * (handles) > obj state (atomics). References:
 *   cnuasgpu_dev   kref: the PCI binding (GPU) or the module (host), each
 *                  open file, each allocation. The last put releases the
 *                  backing (GPU: unmaps BAR1 and releases the PCI device,
 *                  so BAR teardown waits for every export and mapping).
 *   cnuasgpu_obj   kref: the owning handle, each user mapping, each DMA-BUF
 *                  export. The last put returns the memory to the pool.
 */
#ifndef CNUASGPU_H
#define CNUASGPU_H

#include <linux/dma-buf.h>
#include <linux/dma-direction.h>
#include <linux/genalloc.h>
#include <linux/iosys-map.h>
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
#define CNUASGPU_HOST_NAME	"cnuasgpu_host"

struct cnuasgpu_dev;
struct cnuasgpu_obj;
struct cnuasgpu_export;

/*
 * What a kind of memory does; the shared code does everything else
 * (arguments, handles, ownership, export lifetime, locking).
 */
struct cnuasgpu_backing {
	/* ALLOC past the pool (= past the memory limit): ENOMEM or ENOSPC. */
	int full_errno;
	/* Back a fresh pool range with zeroed memory; undo all on failure. */
	int (*obj_init)(struct cnuasgpu_obj *obj);
	/* Last reference: free what obj_init set up (also after its failure). */
	void (*obj_fini)(struct cnuasgpu_obj *obj);
	/* Map [off, off + vma length) of the allocation; bounds checked. */
	int (*mmap)(struct cnuasgpu_obj *obj, u64 off, struct vm_area_struct *vma);
	/* DMA-BUF: the export's range for one importer device. */
	struct sg_table *(*map)(struct cnuasgpu_export *exp, struct device *dev,
				enum dma_data_direction dir);
	void (*unmap)(struct cnuasgpu_export *exp, struct device *dev,
		      struct sg_table *sgt, enum dma_data_direction dir);
	int (*vmap)(struct cnuasgpu_export *exp, struct iosys_map *map);
	/* CAPS: the backing's own fields (flags beyond DMABUF/PEER_RDMA). */
	void (*caps)(struct cnuasgpu_dev *gdev, struct cnuasgpu_caps *caps);
	/* Last reference to the device: release the backing's resources. */
	void (*release)(struct cnuasgpu_dev *gdev);
};

struct cnuasgpu_dev {
	const struct cnuasgpu_backing *backing;
	struct kref ref;
	struct pci_dev *pdev;		/* NULL: the host exporter */
	struct miscdevice misc;
	bool misc_registered;
	int id;

	void __iomem *regs;
	void __iomem *mem;		/* BAR1, write-combining */
	phys_addr_t mem_phys;		/* pool base (host: not an address) */
	u64 mem_size;			/* pool size (host: the pinned limit) */
	struct gen_pool *pool;		/* BAR1 physical addresses / host offsets */
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
	unsigned long addr;		/* pool address (GPU: BAR1 physical) */
	u64 size;
	u64 align;
	atomic_t exports;
	/* host memory only */
	struct page **pages;		/* size >> PAGE_SHIFT pinned pages */
	void *vaddr;			/* their kernel mapping (vmap) */
};

/* One DMA-BUF: a page-aligned range of one allocation. */
struct cnuasgpu_export {
	struct cnuasgpu_obj *obj;
	struct dma_buf *dmabuf;
	struct list_head node;		/* in gdev->export_list, once exported */
	u64 offset;			/* in the allocation */
	u64 length;
};

static inline bool cnuasgpu_is_host(const struct cnuasgpu_dev *gdev)
{
	return !gdev->pdev;
}

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
struct cnuasgpu_dev *cnuasgpu_dev_alloc(const struct cnuasgpu_backing *backing);
void cnuasgpu_dev_get(struct cnuasgpu_dev *gdev);
void cnuasgpu_dev_put(struct cnuasgpu_dev *gdev);
void cnuasgpu_pci_release(struct cnuasgpu_dev *gdev);

/* file.c */
extern const struct file_operations cnuasgpu_fops;

/* mem.c */
int cnuasgpu_mem_init(struct cnuasgpu_dev *gdev, int nid);
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

/* bar.c: GPU device memory */
extern const struct cnuasgpu_backing cnuasgpu_bar_backing;

/* host.c, host-mem.c: the host exporter and its pinned pages */
int cnuasgpu_host_init(void);
void cnuasgpu_host_exit(void);
extern const struct cnuasgpu_backing cnuasgpu_host_backing;

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
extern const struct attribute_group *cnuasgpu_host_groups[];

#endif /* CNUASGPU_H */
