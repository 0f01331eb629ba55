/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * cnuasgpu ioctl ABI: /dev/cnuasgpuN (GPU device memory) and
 * /dev/cnuasgpu_hostN (pinned host memory).
 *
 * Shared by cnuasgpu.ko, libcnuaspeermem and the tests; the build copies
 * it, never edit a copy. Structs only grow at the end (CNUASGPU_ABI_VERSION
 * goes up), every reserved field must be zero (else EINVAL), and every
 * struct is a multiple of 8 bytes with no implicit padding.
 *
 * Memory model. ALLOC carves device memory (BAR1) out of the device
 * allocator; the allocation belongs to the file that allocated it and is
 * named by a handle, unique within that file. mmap() of the GPU file at
 * offset mmap_offset maps (part of) the allocation. FREE drops the handle;
 * the memory returns to the device once no mapping or export uses it.
 * Closing the file frees every handle it still holds the same way.
 *
 * Export. EXPORT_DMABUF turns an owned allocation, or a subrange of it
 * whose offset and length are multiples of export_align, into a DMA-BUF
 * file descriptor (importers: RDMA NICs through ibv_reg_dmabuf_mr()). An
 * allocation with a live export cannot be freed (EBUSY). Errors of the
 * export ioctl, each distinct:
 *   EOPNOTSUPP  unsupported flags
 *   EINVAL      nonzero reserved field
 *   ENOENT      no such handle in this file
 *   EDOM        offset or length not a multiple of export_align, or 0
 *   EOVERFLOW   offset + length overflows 64 bits
 *   ERANGE      the range ends past the allocation
 *   ENODEV      the device is being removed: no new exports
 *   EFAULT      bad user pointer
 */
#ifndef _UAPI_CNUASGPU_H
#define _UAPI_CNUASGPU_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define CNUASGPU_ABI_VERSION		1

/*
 * Host exporter. /dev/cnuasgpu_hostN takes the same ioctls with the same
 * checks and errnos (except those below), for pinned guest-kernel memory
 * instead of BAR1: an allocation is pages from the kernel's page allocator,
 * never swapped or moved, zeroed, mapped cacheable by mmap(). There is one
 * per loaded cnuasgpu module, N = 0, independent of any GPU (it exists
 * without one and survives a GPU's removal). Differences:
 *   CAPS        flags CNUASGPU_CAP_HOST (no LINK); mem_total is the pinned
 *               memory limit (module parameter host_mem_mib, default 256
 *               MiB, at most half of RAM); gpu_id, sm_count, lanes_per_sm,
 *               tensor_size, fw_version and link_max_frame are 0
 *   ALLOC       ENOSPC when the allocation does not fit in the limit,
 *               ENOMEM when the kernel has no pages (a GPU says ENOMEM for
 *               both); align is the alignment of mmap_offset (pages are
 *               not physically contiguous)
 *   QUERY       dev_offset = mmap_offset (no device memory)
 *   LINK_*      ENOTTY
 *   ENODEV      never (only a GPU is removed)
 */

/* caps.flags */
#define CNUASGPU_CAP_DMABUF		(1u << 0)	/* EXPORT_DMABUF works */
#define CNUASGPU_CAP_PEER_RDMA		(1u << 1)	/* exports are RDMA-registrable */
#define CNUASGPU_CAP_LINK		(1u << 2)	/* CnuasLink present */
#define CNUASGPU_CAP_LINK_UP		(1u << 3)	/* CnuasLink connected now */
#define CNUASGPU_CAP_HOST		(1u << 4)	/* host exporter: pinned pages */

struct cnuasgpu_caps {
	__u32 abi_version;	/* out: CNUASGPU_ABI_VERSION */
	__u32 flags;		/* out: CNUASGPU_CAP_* */
	__u64 mem_total;	/* out: device memory for allocations, bytes */
	__u64 mem_free;		/* out */
	__u32 export_align;	/* out: export offset/length granularity */
	__u32 gpu_id;		/* out */
	__u32 sm_count;		/* out */
	__u32 lanes_per_sm;	/* out */
	__u32 tensor_size;	/* out */
	__u32 fw_version;	/* out: major << 16 | minor << 8 | patch */
	__u32 link_max_frame;	/* out */
	__u32 reserved0;	/* in: 0 */
	__u64 reserved[4];	/* in: 0 */
};

/* Allocation: size rounded up to pages; align 0 = page, else power of two. */
struct cnuasgpu_alloc {
	__u64 size;		/* in */
	__u64 align;		/* in */
	__u32 flags;		/* in: 0 */
	__u32 handle;		/* out */
	__u64 mmap_offset;	/* out: pass to mmap() on the GPU fd */
	__u64 reserved[2];	/* in: 0 */
};

struct cnuasgpu_free {
	__u32 handle;		/* in */
	__u32 reserved;		/* in: 0 */
};

struct cnuasgpu_query {
	__u32 handle;		/* in */
	__u32 exports;		/* out: live DMA-BUF exports */
	__u64 size;		/* out: rounded size */
	__u64 align;		/* out */
	__u64 mmap_offset;	/* out */
	__u64 dev_offset;	/* out: offset in device memory (BAR1) */
	__u64 reserved[2];	/* in: 0 */
};

/* export.flags */
#define CNUASGPU_EXPORT_CLOEXEC		(1u << 0)	/* fd gets O_CLOEXEC */
#define CNUASGPU_EXPORT_FLAGS		CNUASGPU_EXPORT_CLOEXEC

struct cnuasgpu_export_dmabuf {
	__u32 handle;		/* in */
	__u32 flags;		/* in: CNUASGPU_EXPORT_* */
	__u64 offset;		/* in: into the allocation */
	__u64 length;		/* in */
	__s32 fd;		/* out: DMA-BUF file descriptor (O_RDWR) */
	__u32 reserved0;	/* in: 0 */
	__u64 reserved[2];	/* in: 0 */
};

/* CnuasLink: one frame of 1..link_max_frame bytes per call. */
#define CNUASGPU_LINK_NONBLOCK		(1u << 0)	/* recv: EAGAIN if none */

struct cnuasgpu_link_frame {
	__u64 buf;		/* in: user pointer */
	__u32 len;		/* in: frame (send) or buffer (recv) size; out: frame */
	__u32 flags;		/* in: CNUASGPU_LINK_* */
	__u32 timeout_ms;	/* in: 0 = wait for ever (signals interrupt) */
	__u32 reserved0;	/* in: 0 */
	__u64 reserved[2];	/* in: 0 */
};

#define CNUASGPU_IOC_MAGIC		0xc6
#define CNUASGPU_IOC_CAPS	_IOWR(CNUASGPU_IOC_MAGIC, 0x00, struct cnuasgpu_caps)
#define CNUASGPU_IOC_ALLOC	_IOWR(CNUASGPU_IOC_MAGIC, 0x01, struct cnuasgpu_alloc)
#define CNUASGPU_IOC_FREE	_IOW(CNUASGPU_IOC_MAGIC, 0x02, struct cnuasgpu_free)
#define CNUASGPU_IOC_QUERY	_IOWR(CNUASGPU_IOC_MAGIC, 0x03, struct cnuasgpu_query)
#define CNUASGPU_IOC_EXPORT_DMABUF \
	_IOWR(CNUASGPU_IOC_MAGIC, 0x04, struct cnuasgpu_export_dmabuf)
#define CNUASGPU_IOC_LINK_SEND	_IOW(CNUASGPU_IOC_MAGIC, 0x05, struct cnuasgpu_link_frame)
#define CNUASGPU_IOC_LINK_RECV	_IOWR(CNUASGPU_IOC_MAGIC, 0x06, struct cnuasgpu_link_frame)

#endif /* _UAPI_CNUASGPU_H */
