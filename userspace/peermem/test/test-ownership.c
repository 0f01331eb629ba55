// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Ownership rules of libcnuaspeermem without a device: the export ioctl
 * and ibv_dereg_mr are wrapped, ibv_reg_dmabuf_mr is ours (the library
 * finds it with dlsym). Checked: the caller's GPU fd and PD are never
 * closed, the library's DMA-BUF fd is closed exactly when it should be,
 * the MR goes before the DMA-BUF, errors leak nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "cnuaspeermem.h"
#include "uapi/cnuasgpu.h"

static int failures;
#define CHECK(c) do {						\
	if (!(c)) {							\
		fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #c);	\
		failures++;						\
	}								\
} while (0)

static int export_errno;		/* fake EXPORT_DMABUF fails with it */
static int reg_errno;			/* fake reg fails with it */
static int dereg_ret;			/* fake ibv_dereg_mr result */
static int last_dmabuf = -1;
static struct cnuasgpu_export_dmabuf last_export;
static int dmabuf_open_at_dereg = -1;
static struct ibv_mr fake_mr;

static int fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

int __real_ioctl(int fd, unsigned long req, ...);
int __wrap_ioctl(int fd, unsigned long req, ...)
{
	struct cnuasgpu_export_dmabuf *e;
	va_list ap;
	int p[2];

	va_start(ap, req);
	e = va_arg(ap, struct cnuasgpu_export_dmabuf *);
	va_end(ap);
	if (req != CNUASGPU_IOC_EXPORT_DMABUF)
		return __real_ioctl(fd, req, e);
	last_export = *e;
	if (export_errno) {
		errno = export_errno;
		return -1;
	}
	if (pipe(p))
		return -1;
	close(p[1]);
	e->fd = p[0];
	last_dmabuf = p[0];
	return 0;
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				 size_t length, uint64_t iova, int fd,
				 int access)
{
	CHECK(fd == last_dmabuf && fd_open(fd));
	CHECK(offset == 0 && length == last_export.length);
	(void)pd; (void)iova; (void)access;
	if (reg_errno) {
		errno = reg_errno;
		return NULL;
	}
	return &fake_mr;
}

int __wrap_ibv_dereg_mr(struct ibv_mr *mr)
{
	CHECK(mr == &fake_mr);
	dmabuf_open_at_dereg = fd_open(last_dmabuf);
	return dereg_ret;
}

static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fd_open(fd);
	return n;
}

int main(void)
{
	struct ibv_pd *pd = (struct ibv_pd *)0x1000;	/* never touched */
	struct cnuas_peermem_mr *mr = (void *)1;
	int gpu = open("/dev/null", O_RDWR), base, r;

	CHECK(cnuas_peermem_supported());

	/* Success: export arguments, the MR and DMA-BUF belong to the lib. */
	base = open_fds();
	r = cnuas_peermem_reg(gpu, 7, 4096, 8192, pd, 0x10000, 7, &mr);
	CHECK(r == 0 && mr);
	CHECK(last_export.handle == 7 && last_export.offset == 4096 &&
	      last_export.length == 8192 &&
	      last_export.flags == CNUASGPU_EXPORT_CLOEXEC &&
	      !last_export.reserved0 && !last_export.reserved[0] &&
	      !last_export.reserved[1]);
	CHECK(cnuas_peermem_ibv_mr(mr) == &fake_mr);
	CHECK(cnuas_peermem_dmabuf_fd(mr) == last_dmabuf);
	CHECK(open_fds() == base + 1);

	/* dereg failing releases nothing; the retry releases MR then fd. */
	dereg_ret = EBUSY;
	CHECK(cnuas_peermem_dereg(mr) == -EBUSY);
	CHECK(fd_open(last_dmabuf));
	dereg_ret = 0;
	CHECK(cnuas_peermem_dereg(mr) == 0);
	CHECK(dmabuf_open_at_dereg == 1);	/* MR first ... */
	CHECK(!fd_open(last_dmabuf));		/* ... then the DMA-BUF */
	CHECK(fd_open(gpu));			/* never the caller's fd */
	CHECK(open_fds() == base);
	CHECK(cnuas_peermem_dereg(NULL) == 0);

	/* Export refused: the kernel's errno comes back, nothing leaks. */
	export_errno = EDOM;
	r = cnuas_peermem_reg(gpu, 7, 1, 8192, pd, 0, 0, &mr);
	CHECK(r == -EDOM && !mr && open_fds() == base && fd_open(gpu));
	CHECK(strstr(cnuas_peermem_strerror(r), "export_align"));
	export_errno = 0;

	/* Registration refused: the library closes its own DMA-BUF only. */
	reg_errno = EINVAL;
	r = cnuas_peermem_reg(gpu, 7, 0, 4096, pd, 0, 0, &mr);
	CHECK(r == -EINVAL && !mr);
	CHECK(!fd_open(last_dmabuf) && fd_open(gpu) && open_fds() == base);
	reg_errno = 0;

	/* Bad arguments, Soft-GPU arenas. */
	CHECK(cnuas_peermem_reg(-1, 1, 0, 4096, pd, 0, 0, &mr) == -EINVAL);
	CHECK(cnuas_peermem_reg(gpu, 1, 0, 4096, NULL, 0, 0, &mr) == -EINVAL);
	CHECK(cnuas_peermem_reg(gpu, 1, 0, 0, pd, 0, 0, &mr) == -EINVAL);
	CHECK(cnuas_peermem_reg(gpu, 1, 0, 4096, pd, 0, 0, NULL) == -EINVAL);
	r = cnuas_peermem_reg_arena(&r, 4096, pd, 0, &mr);
	CHECK(r == -EOPNOTSUPP && !mr);
	CHECK(strstr(cnuas_peermem_strerror(r), "Soft-GPU"));
	CHECK(strstr(cnuas_peermem_strerror(-ELIBACC), "ibv_reg_dmabuf_mr"));
	CHECK(open_fds() == base && fd_open(gpu));

	close(gpu);
	if (failures)
		return 1;
	printf("PASS: libcnuaspeermem ownership (%s)\n", "export, reg, dereg order, error paths");
	return 0;
}
