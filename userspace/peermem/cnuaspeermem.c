// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * libcnuaspeermem: GPU allocation -> DMA-BUF -> ibv_mr, with explicit
 * ownership (see cnuaspeermem.h).
 *
 * ibv_reg_dmabuf_mr() is looked up at run time, so the library loads with
 * any libibverbs and says clearly when the function is missing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "cnuaspeermem.h"
#include "uapi/cnuasgpu.h"

struct cnuas_peermem_mr {
	struct ibv_mr *mr;
	int dmabuf_fd;
};

typedef struct ibv_mr *(*reg_dmabuf_fn)(struct ibv_pd *, uint64_t, size_t,
					uint64_t, int, int);

static reg_dmabuf_fn find_reg_dmabuf(void)
{
	return (reg_dmabuf_fn)dlsym(RTLD_DEFAULT, "ibv_reg_dmabuf_mr");
}

int cnuas_peermem_supported(void)
{
	return !!find_reg_dmabuf();
}

int cnuas_peermem_reg(int gpu_fd, uint32_t handle, uint64_t offset, uint64_t length,
		      struct ibv_pd *pd, uint64_t iova, int access,
		      struct cnuas_peermem_mr **out)
{
	struct cnuasgpu_export_dmabuf exp;
	struct cnuas_peermem_mr *m;
	reg_dmabuf_fn reg;
	int err;

	if (!out || !pd || gpu_fd < 0 || !length || length > SIZE_MAX)
		return -EINVAL;
	*out = NULL;
	reg = find_reg_dmabuf();
	if (!reg)
		return -ELIBACC;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;

	memset(&exp, 0, sizeof(exp));
	exp.handle = handle;
	exp.flags = CNUASGPU_EXPORT_CLOEXEC;
	exp.offset = offset;
	exp.length = length;
	if (ioctl(gpu_fd, CNUASGPU_IOC_EXPORT_DMABUF, &exp)) {
		err = -errno;
		free(m);
		return err;
	}
	m->dmabuf_fd = exp.fd;
	/* The dma-buf starts at the exported offset: MR offset 0 in it. */
	m->mr = reg(pd, 0, (size_t)length, iova, exp.fd, access);
	if (!m->mr) {
		err = errno ? -errno : -EIO;
		close(m->dmabuf_fd);	/* ours; the GPU fd and PD are not */
		free(m);
		return err;
	}
	*out = m;
	return 0;
}

int cnuas_peermem_dereg(struct cnuas_peermem_mr *m)
{
	int err;

	if (!m)
		return 0;
	/* The MR goes first: it holds the dma-buf attachment. */
	err = ibv_dereg_mr(m->mr);
	if (err)
		return err > 0 ? -err : err;	/* nothing released: retry */
	close(m->dmabuf_fd);
	free(m);
	return 0;
}

struct ibv_mr *cnuas_peermem_ibv_mr(const struct cnuas_peermem_mr *m)
{
	return m ? m->mr : NULL;
}

int cnuas_peermem_dmabuf_fd(const struct cnuas_peermem_mr *m)
{
	return m ? m->dmabuf_fd : -1;
}

int cnuas_peermem_reg_arena(const void *arena, size_t length,
			    struct ibv_pd *pd, int access,
			    struct cnuas_peermem_mr **out)
{
	(void)arena;
	(void)length;
	(void)pd;
	(void)access;
	if (out)
		*out = NULL;
	return -EOPNOTSUPP;
}

const char *cnuas_peermem_strerror(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		/* Soft-GPU arenas live in the process: no device fd to export. */
		return "not supported (Soft-GPU arena, or unsupported export flags)";
	case -ELIBACC:
		return "this libibverbs has no ibv_reg_dmabuf_mr() (rdma-core 34 or newer needed)";
	case -EDOM:
		return "offset or length not a multiple of the GPU's export_align";
	case -EOVERFLOW:
		return "offset + length overflows";
	case -ERANGE:
		return "range ends past the allocation";
	case -ENOENT:
		return "no such allocation handle in this GPU file";
	case -ENODEV:
		return "the GPU is being removed";
	}
	return strerror(-err);
}
