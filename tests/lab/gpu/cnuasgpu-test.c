// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuasgpu-test: exercise /dev/cnuasgpuN in a guest.
 *
 *   cnuasgpu-test api [N]         allocation, mmap, export argument checks,
 *                                 export lifetime (EBUSY, orphans), sysfs
 *   cnuasgpu-test host-api [N]    the same on /dev/cnuasgpu_hostN (pinned
 *                                 host memory), plus its own rules: CAPS
 *                                 flag HOST, ENOSPC past the limit, no
 *                                 CnuasLink (ENOTTY)
 *   cnuasgpu-test link-send [N] COUNT   send COUNT frames over CnuasLink
 *   cnuasgpu-test link-recv [N] COUNT   receive and verify COUNT frames
 *   cnuasgpu-test hold [N]        export, close the GPU fd, keep the
 *                                 DMA-BUF until stdin closes
 *   cnuasgpu-test hold-gone [N]   the same; the device is removed
 *                                 (device_del) before stdin closes
 *
 * Exit 0 pass, 77 skip (no device), 1 fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "uapi/cnuasgpu.h"

static int failures;
static int gpu_index;
static const char *dev_name = "cnuasgpu";	/* host-api: cnuasgpu_host */
static int host;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "FAIL %s:%d: %s: ", __func__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		failures++;						\
	}								\
} while (0)

static int open_gpu(void)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/%s%d", dev_name, gpu_index);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		printf("SKIP: %s: %s\n", path, strerror(errno));
		exit(77);
	}
	return fd;
}

static long long sysfs(const char *attr)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/%s%d/%s",
		 dev_name, gpu_index, attr);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		fprintf(stderr, "FAIL: cannot read %s\n", path);
		failures++;
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return atoll(buf);
}

/* ioctl returning -errno, 0 on success */
static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? -errno : 0;
}

static int alloc(int fd, uint64_t size, uint64_t align,
		 struct cnuasgpu_alloc *a)
{
	memset(a, 0, sizeof(*a));
	a->size = size;
	a->align = align;
	return xioctl(fd, CNUASGPU_IOC_ALLOC, a);
}

static int gfree(int fd, uint32_t handle)
{
	struct cnuasgpu_free f = { .handle = handle };

	return xioctl(fd, CNUASGPU_IOC_FREE, &f);
}

static int export(int fd, uint32_t handle, uint64_t off, uint64_t len,
		  uint32_t flags, int *out)
{
	struct cnuasgpu_export_dmabuf e = {
		.handle = handle, .flags = flags, .offset = off, .length = len,
	};
	int r = xioctl(fd, CNUASGPU_IOC_EXPORT_DMABUF, &e);

	if (!r && out)
		*out = e.fd;
	return r;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 12));
}

static int test_api(void)
{
	int fd = open_gpu(), fd2, dfd, r;
	long ps = sysconf(_SC_PAGESIZE);
	struct cnuasgpu_caps caps = { 0 };
	struct cnuasgpu_alloc a, b;
	struct cnuasgpu_query q;
	long long free0, exports0, allocs0;
	uint8_t *m, *dm, *ref;
	size_t size = 1 << 20;

	/* ABI layout (also checked on the host by the peermem tests). */
	CHECK(sizeof(struct cnuasgpu_caps) == 88, "caps %zu", sizeof(caps));
	CHECK(sizeof(struct cnuasgpu_alloc) == 48, "alloc");
	CHECK(sizeof(struct cnuasgpu_export_dmabuf) == 48, "export");

	CHECK(xioctl(fd, CNUASGPU_IOC_CAPS, &caps) == 0, "caps");
	CHECK(caps.abi_version == CNUASGPU_ABI_VERSION, "abi %u", caps.abi_version);
	CHECK(caps.flags & CNUASGPU_CAP_DMABUF, "flags %#x", caps.flags);
	CHECK(caps.flags & CNUASGPU_CAP_PEER_RDMA, "flags %#x", caps.flags);
	CHECK(caps.export_align == (uint32_t)ps, "align %u", caps.export_align);
	if (host) {
		CHECK((caps.flags & (CNUASGPU_CAP_HOST | CNUASGPU_CAP_LINK)) ==
		      CNUASGPU_CAP_HOST, "host flags %#x", caps.flags);
		CHECK(!caps.sm_count && !caps.fw_version && !caps.link_max_frame,
		      "host: sm %u fw %#x link %u", caps.sm_count,
		      caps.fw_version, caps.link_max_frame);
	} else {
		CHECK(!(caps.flags & CNUASGPU_CAP_HOST), "flags %#x", caps.flags);
		CHECK(caps.sm_count == 16 && caps.lanes_per_sm == 32 &&
		      caps.tensor_size == 16, "sm %u lanes %u tensor %u",
		      caps.sm_count, caps.lanes_per_sm, caps.tensor_size);
		CHECK(caps.fw_version == 0x000100, "fw %#x", caps.fw_version);
	}
	CHECK(caps.mem_free <= caps.mem_total && caps.mem_total > size,
	      "mem %llu/%llu", (unsigned long long)caps.mem_free,
	      (unsigned long long)caps.mem_total);
	caps.reserved[1] = 1;
	CHECK(xioctl(fd, CNUASGPU_IOC_CAPS, &caps) == -EINVAL, "caps reserved");
	CHECK(sysfs("peer_rdma") == 1, "peer_rdma");
	CHECK(sysfs("export_align") == ps, "export_align");
	free0 = sysfs("mem_free");
	exports0 = sysfs("exports");
	allocs0 = sysfs("allocations");
	CHECK(free0 == (long long)caps.mem_free, "mem_free %lld", free0);

	/* Allocation arguments. */
	CHECK(alloc(fd, 0, 0, &a) == -EINVAL, "size 0");
	CHECK(alloc(fd, 4096, 3 * 4096, &a) == -EINVAL, "align not pow2");
	/* Past the memory: a GPU says ENOMEM, the host exporter's limit ENOSPC. */
	CHECK(alloc(fd, ~0ull, 0, &a) == (host ? -ENOSPC : -ENOMEM), "huge");
	if (host) {
		struct cnuasgpu_link_frame lf = { 0 };

		CHECK(alloc(fd, caps.mem_total + ps, 0, &a) == -ENOSPC,
		      "past the limit");
		CHECK(xioctl(fd, CNUASGPU_IOC_LINK_SEND, &lf) == -ENOTTY,
		      "host: no CnuasLink");
	}
	a.flags = 1;
	CHECK(xioctl(fd, CNUASGPU_IOC_ALLOC, &a) == -EOPNOTSUPP, "alloc flags");
	CHECK(alloc(fd, 100, 0, &a) == 0, "small");
	CHECK(a.size == (uint64_t)ps, "rounded %llu", (unsigned long long)a.size);
	CHECK(alloc(fd, size, 1 << 20, &b) == 0, "aligned");
	CHECK(b.mmap_offset % (1 << 20) == 0, "offset %#llx",
	      (unsigned long long)b.mmap_offset);
	CHECK(gfree(fd, a.handle) == 0, "free small");
	CHECK(gfree(fd, a.handle) == -ENOENT, "double free");
	CHECK(sysfs("mem_free") == free0 - (long long)size, "mem_free after alloc");
	CHECK(sysfs("allocations") == allocs0 + 1, "allocations");

	/* mmap: fill, read back; other files cannot map or export it. */
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 b.mmap_offset);
	CHECK(m != MAP_FAILED, "mmap %s", strerror(errno));
	if (m == MAP_FAILED)
		return 1;
	ref = malloc(size);
	fill(ref, size, 5);
	memcpy(m, ref, size);
	CHECK(!memcmp(m, ref, size), "mmap readback");
	CHECK(mmap(NULL, size + ps, PROT_READ, MAP_SHARED, fd, b.mmap_offset) ==
	      MAP_FAILED, "mmap past the end");
	fd2 = open_gpu();
	CHECK(mmap(NULL, ps, PROT_READ, MAP_SHARED, fd2, b.mmap_offset) ==
	      MAP_FAILED, "mmap of a foreign allocation");
	CHECK(export(fd2, b.handle, 0, ps, 0, NULL) == -ENOENT, "foreign export");

	/* Every bad export argument, each with its own errno. */
	{
		struct cnuasgpu_export_dmabuf e = { .handle = b.handle, .length = ps };

		e.reserved[0] = 1;
		CHECK(xioctl(fd, CNUASGPU_IOC_EXPORT_DMABUF, &e) == -EINVAL,
		      "reserved");
		e.reserved[0] = 0;
		e.reserved0 = 1;
		CHECK(xioctl(fd, CNUASGPU_IOC_EXPORT_DMABUF, &e) == -EINVAL,
		      "reserved0");
	}
	CHECK(export(fd, b.handle, 0, ps, 0x80, NULL) == -EOPNOTSUPP, "flags");
	CHECK(export(fd, b.handle, 1, ps, 0, NULL) == -EDOM, "misaligned off");
	CHECK(export(fd, b.handle, 0, ps + 1, 0, NULL) == -EDOM, "misaligned len");
	CHECK(export(fd, b.handle, 0, 0, 0, NULL) == -EDOM, "zero length");
	CHECK(export(fd, b.handle, ~0ull - ps + 1, 2 * ps, 0, NULL) == -EOVERFLOW,
	      "overflow");
	CHECK(export(fd, b.handle, size - ps, 2 * ps, 0, NULL) == -ERANGE,
	      "past the end");
	CHECK(export(fd, b.handle, size, ps, 0, NULL) == -ERANGE, "at the end");
	CHECK(export(fd, 9999, 0, ps, 0, NULL) == -ENOENT, "no handle");

	/* A subrange export sees the same bytes; free is refused. */
	r = export(fd, b.handle, 2 * ps, 4 * ps, CNUASGPU_EXPORT_CLOEXEC, &dfd);
	CHECK(r == 0, "export %d", r);
	if (r)
		return 1;
	CHECK(fcntl(dfd, F_GETFD) & FD_CLOEXEC, "cloexec");
	CHECK(lseek(dfd, 0, SEEK_END) == 4 * ps, "dma-buf size");
	CHECK(sysfs("exports") == exports0 + 1, "exports +1");
	memset(&q, 0, sizeof(q));
	q.handle = b.handle;
	CHECK(xioctl(fd, CNUASGPU_IOC_QUERY, &q) == 0 && q.exports == 1 &&
	      q.size == size, "query");
	CHECK(gfree(fd, b.handle) == -EBUSY, "free with export");
	dm = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
	CHECK(dm != MAP_FAILED, "dma-buf mmap %s", strerror(errno));
	if (dm != MAP_FAILED) {
		CHECK(!memcmp(dm, ref + 2 * ps, 4 * ps), "dma-buf view");
		dm[0] = 0x5a;
		CHECK(m[2 * ps] == 0x5a, "write through the dma-buf");
		munmap(dm, 4 * ps);
	}

	/* Close the GPU file: the export stays valid, the memory in use. */
	munmap(m, size);
	close(fd);
	CHECK(sysfs("exports") == exports0 + 1, "export survives close");
	CHECK(sysfs("mem_free") == free0 - (long long)size, "orphan not freed");
	dm = mmap(NULL, 4 * ps, PROT_READ, MAP_SHARED, dfd, 0);
	CHECK(dm != MAP_FAILED && dm[0] == 0x5a && !memcmp(dm + 1,
	      ref + 2 * ps + 1, 4 * ps - 1), "orphan contents");
	if (dm != MAP_FAILED)
		munmap(dm, 4 * ps);
	/* Last export closes: the orphan is reclaimed. */
	close(dfd);
	CHECK(sysfs("exports") == exports0, "exports back");
	CHECK(sysfs("mem_free") == free0, "orphan reclaimed: %lld vs %lld",
	      sysfs("mem_free"), free0);
	CHECK(sysfs("allocations") == allocs0, "allocations back");

	/* Closing a file frees what it still holds. */
	CHECK(alloc(fd2, 3 * ps, 0, &a) == 0, "alloc fd2");
	close(fd2);
	CHECK(sysfs("mem_free") == free0, "close frees");
	free(ref);
	return failures ? 1 : 0;
}

static int test_link(int send, int count)
{
	int fd = open_gpu(), i, r;
	uint8_t *buf = malloc(65536), *want = malloc(65536);
	/* a buffer the kernel cannot write, and one not faulted in yet */
	uint8_t *bad = mmap(NULL, 65536, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *lazy = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
	struct cnuasgpu_link_frame f;

	CHECK(bad != MAP_FAILED && lazy != MAP_FAILED, "mmap: %s", strerror(errno));
	for (i = 0; i < 600 && sysfs("link_up") != 1; i++)
		usleep(100000);
	CHECK(sysfs("link_up") == 1, "link up");
	for (i = 0; i < count; i++) {
		uint32_t len = 1 + (i * 7919) % 65536;

		if (i == count - 1)
			len = 65536;
		memset(&f, 0, sizeof(f));
		if (send) {
			if (i == 0) {
				f.buf = (uintptr_t)bad;
				f.len = len;
				r = xioctl(fd, CNUASGPU_IOC_LINK_SEND, &f);
				CHECK(r == -EFAULT, "send from an unreadable buffer: %s",
				      strerror(-r));
			}
			fill(buf, len, i);
			f.buf = (uintptr_t)buf;
			f.len = len;
			f.timeout_ms = 30000;
			r = xioctl(fd, CNUASGPU_IOC_LINK_SEND, &f);
			CHECK(r == 0, "send %d: %s", i, strerror(-r));
		} else {
			uint8_t *dst = i == 1 ? lazy : buf;

			if (i == 0) {
				/* EFAULT, and the frame stays for the next call */
				f.buf = (uintptr_t)bad;
				f.len = 65536;
				f.timeout_ms = 60000;
				r = xioctl(fd, CNUASGPU_IOC_LINK_RECV, &f);
				CHECK(r == -EFAULT, "recv into an unwritable buffer: %s",
				      strerror(-r));
			}
			f.buf = (uintptr_t)dst;
			f.len = 65536;
			f.timeout_ms = 60000;
			r = xioctl(fd, CNUASGPU_IOC_LINK_RECV, &f);
			CHECK(r == 0, "recv %d: %s", i, strerror(-r));
			fill(want, len, i);
			CHECK(f.len == len && !memcmp(dst, want, len),
			      "frame %d: len %u want %u", i, f.len, len);
		}
		if (failures)
			break;
	}
	if (!send) {
		memset(&f, 0, sizeof(f));
		f.buf = (uintptr_t)buf;
		f.len = 65536;
		f.flags = CNUASGPU_LINK_NONBLOCK;
		CHECK(xioctl(fd, CNUASGPU_IOC_LINK_RECV, &f) == -EAGAIN, "empty");
	}
	memset(&f, 0, sizeof(f));
	f.len = 65537;
	f.buf = (uintptr_t)buf;
	CHECK(xioctl(fd, CNUASGPU_IOC_LINK_SEND, &f) == -EMSGSIZE, "too big");
	f.len = 1;
	f.flags = 8;
	CHECK(xioctl(fd, CNUASGPU_IOC_LINK_SEND, &f) == -EOPNOTSUPP, "flags");
	printf("%s %d frames: %s\n", send ? "sent" : "received", i,
	       failures ? "FAIL" : "ok");
	close(fd);
	return failures ? 1 : 0;
}

static sigjmp_buf bus_jmp;

static void on_sigbus(int sig)
{
	siglongjmp(bus_jmp, sig);
}

/*
 * Keep an export of an orphaned allocation (and a mapping of it) until
 * stdin closes; with "gone", the device was removed meanwhile: the old
 * mapping must fault (SIGBUS), a new one must fail.
 */
static int test_hold(int gone)
{
	int fd = open_gpu(), dfd, r;
	volatile uint8_t *dm;
	struct cnuasgpu_alloc a;
	char c;

	CHECK(alloc(fd, 1 << 16, 0, &a) == 0, "alloc");
	r = export(fd, a.handle, 0, 1 << 16, 0, &dfd);
	CHECK(r == 0, "export %d", r);
	if (failures)
		return 1;
	close(fd);
	dm = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0);
	CHECK(dm != MAP_FAILED, "mmap");
	if (failures)
		return 1;
	dm[0] = 0x42;
	printf("holding dma-buf fd %d\n", dfd);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	if (gone) {
		signal(SIGBUS, on_sigbus);
		if (!sigsetjmp(bus_jmp, 1)) {
			r = dm[0];
			CHECK(0, "old mapping still reads %#x after removal", r);
		} else {
			printf("old mapping: SIGBUS\n");
		}
		CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, dfd, 0) == MAP_FAILED &&
		      errno == ENODEV, "new mapping after removal: %s",
		      strerror(errno));
	} else {
		CHECK(dm[0] == 0x42, "contents");
	}
	close(dfd);
	printf("released: %s\n", failures ? "FAIL" : "ok");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "api";
	int argi = 2;

	if (argc > argi && argv[argi][0] >= '0' && argv[argi][0] <= '9' &&
	    argc > argi + (strncmp(cmd, "link", 4) ? 0 : 1))
		gpu_index = atoi(argv[argi++]);
	if (!strcmp(cmd, "api"))
		return test_api();
	if (!strcmp(cmd, "host-api")) {
		dev_name = "cnuasgpu_host";
		host = 1;
		return test_api();
	}
	if (!strcmp(cmd, "hold") || !strcmp(cmd, "hold-gone"))
		return test_hold(!strcmp(cmd, "hold-gone"));
	if (!strcmp(cmd, "link-send") || !strcmp(cmd, "link-recv"))
		return test_link(!strcmp(cmd, "link-send"),
				 argc > argi ? atoi(argv[argi]) : 10);
	fprintf(stderr, "usage: %s api|host-api|hold|link-send|link-recv [N] [COUNT]\n",
		argv[0]);
	return 2;
}
