// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuasgpu-race: threads of one process, and children it forks, race the
 * lifetime operations of a cnuasgpu file against each other: ALLOC, FREE,
 * EXPORT_DMABUF, mmap of the GPU file and of the DMA-BUF, touching those
 * mappings, close of the DMA-BUF and of whole GPU files (opened per round)
 * while another thread still uses what came from them. Every call may fail
 * with a clean errno; a touch of a mapping may not fault (a live mapping
 * keeps its memory). Nothing may oops, and when everything is closed the
 * device's free memory is what it was before (no leaked allocation).
 *
 *   cnuasgpu-race [-s SECONDS] [-t THREADS] [-S SEED] DEVICE
 *
 * DEVICE is e.g. /dev/cnuasgpu0 or /dev/cnuasgpu_host0. Prints key=value
 * counts; exit 0 on success, 1 on a finding, 77 without the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "uapi/cnuasgpu.h"

#define SLOTS		16
#define MAX_THREADS	8

/* What the threads share: live handles and DMA-BUF fds, one file per round. */
struct slot {
	pthread_mutex_t lock;
	int gfd;		/* the GPU file the handle belongs to, -1: none */
	uint32_t handle;
	uint64_t size, mmap_offset;
	int dfd;		/* a DMA-BUF of the whole allocation, -1: none */
};

static struct slot slots[SLOTS];
static const char *path;
static volatile bool stop;
static uint32_t align = 4096;
static unsigned long n_alloc, n_free, n_busy, n_export, n_mmap, n_dmap, n_fork, n_close,
	n_errno, n_bad;
static __thread sigjmp_buf fault_jmp;
static __thread volatile int touching;
/* The bytes a thread writes: its own, as mappings of one allocation alias. */
static __thread size_t my_byte;
static unsigned long n_fault;

static void count(unsigned long *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static void on_fault(int sig)
{
	if (touching)
		siglongjmp(fault_jmp, sig);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* A live mapping must read and write: a fault is a finding. */
static void touch(volatile uint8_t *p, size_t len, uint8_t v)
{
	if (sigsetjmp(fault_jmp, 1)) {
		touching = 0;
		count(&n_fault);
		return;
	}
	touching = 1;
	p[my_byte] = v;
	p[len - 1 - my_byte] = v;
	if (p[my_byte] != v || p[len - 1 - my_byte] != v) {
		fprintf(stderr, "cnuasgpu-race: a mapping did not keep what was written\n");
		count(&n_bad);
	}
	touching = 0;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* An errno every cnuasgpu call may give in a race; anything else is a finding. */
static void expect(int err, const char *what)
{
	switch (err) {
	case 0: case ENOENT: case EBUSY: case ENOSPC: case ENOMEM: case EBADF:
	case EINVAL: case ENODEV:
		if (err)
			count(&n_errno);
		return;
	default:
		fprintf(stderr, "cnuasgpu-race: %s: unexpected %s\n", what, strerror(err));
		count(&n_bad);
	}
}

static void op_alloc(struct slot *s, uint64_t r)
{
	struct cnuasgpu_alloc a = { .size = ((r % 64) + 1) * align };
	int fd;

	if (s->gfd < 0) {
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			expect(errno, "open");
			return;
		}
		s->gfd = fd;
	}
	if (ioctl(s->gfd, CNUASGPU_IOC_ALLOC, &a)) {
		expect(errno, "ALLOC");
		return;
	}
	count(&n_alloc);
	s->handle = a.handle;
	s->size = a.size;
	s->mmap_offset = a.mmap_offset;
}

static void op_export(struct slot *s)
{
	struct cnuasgpu_export_dmabuf e = { .handle = s->handle, .length = s->size,
					    .flags = CNUASGPU_EXPORT_CLOEXEC };

	if (s->gfd < 0 || !s->size || s->dfd >= 0)
		return;
	if (ioctl(s->gfd, CNUASGPU_IOC_EXPORT_DMABUF, &e)) {
		expect(errno, "EXPORT_DMABUF");
		return;
	}
	count(&n_export);
	s->dfd = e.fd;
}

/* Map the allocation (GPU file) or the DMA-BUF, drop the lock, touch, unmap. */
static void op_map(struct slot *s, pthread_mutex_t *held, bool dmabuf, uint8_t v)
{
	int fd = dmabuf ? s->dfd : s->gfd;
	off_t off = dmabuf ? 0 : (off_t)s->mmap_offset;
	size_t len = s->size;
	void *m;

	if (fd < 0 || !len)
		return;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
	if (m == MAP_FAILED) {
		expect(errno, dmabuf ? "mmap dmabuf" : "mmap");
		return;
	}
	count(dmabuf ? &n_dmap : &n_mmap);
	/* Others may now free, close and unexport under the mapping. */
	pthread_mutex_unlock(held);
	touch(m, len, v);
	sched_yield();
	touch(m, len, v + 1);
	munmap(m, len);
	pthread_mutex_lock(held);
}

static void op_free(struct slot *s)
{
	struct cnuasgpu_free f = { .handle = s->handle };

	if (s->gfd < 0 || !s->size)
		return;
	if (ioctl(s->gfd, CNUASGPU_IOC_FREE, &f)) {
		if (errno == EBUSY)
			count(&n_busy);
		expect(errno, "FREE");
		return;
	}
	count(&n_free);
	s->size = 0;
}

/*
 * Close the DMA-BUF, the GPU file (its allocations go with it unless a
 * mapping or a DMA-BUF still holds them), or both.
 */
static void op_close(struct slot *s, bool file, bool dmabuf)
{
	if (s->dfd >= 0 && dmabuf) {
		close(s->dfd);
		s->dfd = -1;
		count(&n_close);
	}
	if (file && s->gfd >= 0) {
		close(s->gfd);
		s->gfd = -1;
		s->size = 0;
		count(&n_close);
	}
}

/* A child inherits the mappings and fds of this moment, uses them, exits. */
static void op_fork(struct slot *s, pthread_mutex_t *held)
{
	int fd = s->dfd;
	size_t len = s->size;
	pid_t pid;

	pthread_mutex_unlock(held);
	pid = fork();
	if (pid == 0) {
		void *m = fd >= 0 && len ?
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;

		if (m != MAP_FAILED)
			((volatile uint8_t *)m)[MAX_THREADS] = 0x77;
		_exit(0);
	}
	if (pid > 0) {
		int st;

		waitpid(pid, &st, 0);
		count(&n_fork);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "cnuasgpu-race: forked child: %s %d\n",
				WIFEXITED(st) ? "exit" : "signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			count(&n_bad);
		}
	}
	pthread_mutex_lock(held);
}

static void *worker(void *arg)
{
	uint64_t st = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;

	my_byte = (uintptr_t)arg % MAX_THREADS;

	while (!stop) {
		uint64_t r = rnd(&st);
		struct slot *s = &slots[r % SLOTS];

		pthread_mutex_lock(&s->lock);
		switch ((r >> 8) % 16) {
		case 0: case 1: case 2: op_alloc(s, r >> 16); break;
		case 3: case 4: op_export(s); break;
		case 5: case 6: case 7: op_map(s, &s->lock, false, r >> 24); break;
		case 8: case 9: op_map(s, &s->lock, true, r >> 24); break;
		case 10: case 11: op_free(s); break;
		case 12: op_close(s, false, true); break;
		case 13: op_close(s, true, r >> 40 & 1); break;
		case 14: if (!(r >> 32 & 7)) op_fork(s, &s->lock); break;
		default: break;
		}
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

static int mem_free(uint64_t *out)
{
	struct cnuasgpu_caps c = { 0 };
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (ioctl(fd, CNUASGPU_IOC_CAPS, &c)) {
		close(fd);
		return -1;
	}
	close(fd);
	*out = c.mem_free;
	if (c.export_align)
		align = c.export_align;
	return 0;
}

int main(int argc, char **argv)
{
	int secs = 20, nthreads = 4, opt;
	uint64_t seed = 1, free0, free1 = 0;
	pthread_t th[MAX_THREADS];
	struct timespec ts;

	while ((opt = getopt(argc, argv, "s:t:S:")) != -1) {
		switch (opt) {
		case 's': secs = atoi(optarg); break;
		case 't': nthreads = atoi(optarg); break;
		case 'S': seed = strtoull(optarg, NULL, 0); break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || secs < 1 || nthreads < 1 || nthreads > MAX_THREADS)
		goto usage;
	path = argv[optind];
	if (mem_free(&free0)) {
		printf("SKIP: %s: %s\n", path, strerror(errno));
		return 77;
	}
	signal(SIGBUS, on_fault);
	signal(SIGSEGV, on_fault);
	srand(seed);
	for (int i = 0; i < SLOTS; i++) {
		pthread_mutex_init(&slots[i].lock, NULL);
		slots[i].gfd = slots[i].dfd = -1;
	}
	for (int i = 0; i < nthreads; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)(seed * MAX_THREADS * 131 + i));
	ts.tv_sec = secs;
	ts.tv_nsec = 0;
	nanosleep(&ts, NULL);
	stop = true;
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < SLOTS; i++)
		op_close(&slots[i], true, true);
	/* DMA-BUF and file releases may finish after close() returns. */
	for (int i = 0; i < 50; i++) {
		if (mem_free(&free1) || free1 == free0)
			break;
		usleep(100000);
	}
	printf("alloc=%lu free=%lu free_busy=%lu export=%lu mmap=%lu mmap_dmabuf=%lu fork=%lu "
	       "close=%lu clean_errors=%lu faults=%lu findings=%lu mem_free_before=%llu "
	       "mem_free_after=%llu\n", n_alloc, n_free, n_busy, n_export, n_mmap, n_dmap,
	       n_fork, n_close, n_errno, n_fault, n_bad, (unsigned long long)free0,
	       (unsigned long long)free1);
	if (free1 != free0)
		printf("leak: %lld bytes of device memory not returned\n",
		       (long long)(free0 - free1));
	return n_bad || n_fault || free1 != free0 || !n_alloc || !n_export || !n_mmap;
usage:
	fprintf(stderr, "usage: cnuasgpu-race [-s SECONDS] [-t THREADS] [-S SEED] DEVICE\n");
	return 2;
}
