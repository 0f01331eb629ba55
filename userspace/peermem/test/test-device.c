// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Guest smoke test: allocate on /dev/cnuasgpu0, fill through mmap,
 * register with the first RDMA device through libcnuaspeermem, check
 * the ownership order (FREE is EBUSY until dereg). Skips (77) without
 * the devices or when the RDMA driver cannot import DMA-BUFs yet.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "cnuaspeermem.h"
#include "uapi/cnuasgpu.h"

int main(void)
{
	struct cnuasgpu_alloc a = { .size = 1 << 20 };
	struct cnuasgpu_free f = { 0 };
	struct ibv_device **devs;
	struct cnuas_peermem_mr *mr;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	int gpu, n, r;
	void *m;

	gpu = open("/dev/cnuasgpu0", O_RDWR | O_CLOEXEC);
	devs = ibv_get_device_list(&n);
	if (gpu < 0 || !devs || n < 1) {
		printf("SKIP: needs /dev/cnuasgpu0 and an RDMA device\n");
		return 77;
	}
	ctx = ibv_open_device(devs[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd || ioctl(gpu, CNUASGPU_IOC_ALLOC, &a)) {
		printf("FAIL: setup: %s\n", strerror(errno));
		return 1;
	}
	m = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, gpu, a.mmap_offset);
	if (m == MAP_FAILED) {
		printf("FAIL: mmap: %s\n", strerror(errno));
		return 1;
	}
	memset(m, 0xa5, a.size);
	r = cnuas_peermem_reg(gpu, a.handle, 0, a.size, pd, 0,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			      IBV_ACCESS_REMOTE_WRITE, &mr);
	if (r == -EOPNOTSUPP || r == -ELIBACC) {
		printf("SKIP: %s cannot register DMA-BUF MRs: %s\n",
		       ibv_get_device_name(devs[0]), cnuas_peermem_strerror(r));
		return 77;
	}
	if (r) {
		printf("FAIL: cnuas_peermem_reg: %s\n", cnuas_peermem_strerror(r));
		return 1;
	}
	f.handle = a.handle;
	if (!ioctl(gpu, CNUASGPU_IOC_FREE, &f) || errno != EBUSY) {
		printf("FAIL: FREE with a live export must be EBUSY\n");
		return 1;
	}
	if (cnuas_peermem_dereg(mr) || ioctl(gpu, CNUASGPU_IOC_FREE, &f)) {
		printf("FAIL: dereg/free\n");
		return 1;
	}
	printf("PASS: lkey/rkey on %s, EBUSY until dereg\n",
	       ibv_get_device_name(devs[0]));
	return 0;
}
