/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * libcnuaspeermem: register cnuasgpu device memory as an RDMA memory region
 * in one call (CNUASGPU_IOC_EXPORT_DMABUF + ibv_reg_dmabuf_mr()).
 *
 * Ownership: the caller owns the GPU fd, the allocation handle and the
 * protection domain; the library never closes or frees them. The library
 * owns the DMA-BUF fd and the ibv_mr it creates, and cnuas_peermem_dereg()
 * releases them in the right order: MR first, then the DMA-BUF. The caller
 * frees the GPU allocation after that (FREE fails with EBUSY before).
 *
 * Errors are negative errno values; cnuas_peermem_strerror() explains the
 * library's own ones (-EOPNOTSUPP for in-process Soft-GPU arenas, -ELIBACC
 * for a libibverbs without ibv_reg_dmabuf_mr()).
 */
#ifndef CNUASPEERMEM_H
#define CNUASPEERMEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_pd;
struct ibv_mr;
struct cnuas_peermem_mr;

#define CNUAS_PEERMEM_VERSION_MAJOR	1
#define CNUAS_PEERMEM_VERSION_MINOR	0

/*
 * Export [offset, offset + length) of allocation @handle (page-aligned, see
 * CNUASGPU_IOC_CAPS export_align) from @gpu_fd and register it with @pd at
 * @iova with IBV_ACCESS_* @access. On success *@out holds the new region.
 */
int cnuas_peermem_reg(int gpu_fd, uint32_t handle, uint64_t offset, uint64_t length,
		      struct ibv_pd *pd, uint64_t iova, int access,
		      struct cnuas_peermem_mr **out);

/* Deregister the MR, close the DMA-BUF, free @mr. NULL is a no-op. */
int cnuas_peermem_dereg(struct cnuas_peermem_mr *mr);

/* The verbs MR (lkey, rkey), owned by @mr. */
struct ibv_mr *cnuas_peermem_ibv_mr(const struct cnuas_peermem_mr *mr);

/* The DMA-BUF fd, owned by @mr: do not close it. */
int cnuas_peermem_dmabuf_fd(const struct cnuas_peermem_mr *mr);

/*
 * In-process Soft-GPU arenas have no device fd and cannot be exported:
 * always -EOPNOTSUPP (kept so callers get a clear answer, not a crash).
 */
int cnuas_peermem_reg_arena(const void *arena, size_t length,
			    struct ibv_pd *pd, int access,
			    struct cnuas_peermem_mr **out);

/* 1 if this libibverbs has ibv_reg_dmabuf_mr(), else 0. */
int cnuas_peermem_supported(void);

/* Message for a negative errno returned by this library. */
const char *cnuas_peermem_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* CNUASPEERMEM_H */
