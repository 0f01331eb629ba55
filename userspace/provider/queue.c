// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* mmap of the rings cnuas_ib.ko shares (struct cnuas_queue_info). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "cnuas.h"

int cnuas_queue_map(struct ibv_context *ibctx, struct cnuas_queue *q,
		    const struct cnuas_queue_info *info, uint32_t min_stride,
		    int producer)
{
	void *map;
	int ret;

	q->map = NULL;
	q->map_size = 0;
	if (!info->mmap_size || info->mmap_size != (size_t)info->mmap_size)
		return EINVAL;
	map = mmap(NULL, info->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		   ibctx->cmd_fd, info->mmap_offset);
	if (map == MAP_FAILED)
		return errno;
	ret = cnuas_ring_init(&q->ring, map, info->mmap_size,
			      info->num_entries, info->entry_size, min_stride,
			      producer);
	if (ret) {
		fprintf(stderr, CNUAS_PREFIX
			"kernel ring geometry unusable (%u x %u bytes in %llu)\n",
			info->num_entries, info->entry_size,
			(unsigned long long)info->mmap_size);
		munmap(map, info->mmap_size);
		return -ret;
	}
	q->map = map;
	q->map_size = info->mmap_size;
	pthread_spin_init(&q->lock, PTHREAD_PROCESS_PRIVATE);
	return 0;
}

void cnuas_queue_unmap(struct cnuas_queue *q)
{
	if (!q->map)
		return;
	munmap(q->map, q->map_size);
	pthread_spin_destroy(&q->lock);
	q->map = NULL;
}

/*
 * The kernel has moved @q to the ring @info describes (a resize). Called
 * with q->lock held so no user sees half a swap; the lock stays held and
 * the old mapping is left in @old for munmap once it is dropped. If the new
 * ring cannot be mapped the kernel already uses it: the queue is lost.
 */
int cnuas_queue_swap(struct ibv_context *ibctx, struct cnuas_queue *q,
		     const struct cnuas_queue_info *info, uint32_t min_stride,
		     int producer, struct cnuas_queue *old, const char *verb)
{
	struct cnuas_queue nq;
	int ret;

	ret = cnuas_queue_map(ibctx, &nq, info, min_stride, producer);
	if (ret) {
		fprintf(stderr, CNUAS_PREFIX "%s: cannot map the new ring: %s\n",
			verb, strerror(ret));
		return ret;
	}
	pthread_spin_destroy(&nq.lock);
	old->map = q->map;
	old->map_size = q->map_size;
	q->ring = nq.ring;
	q->map = nq.map;
	q->map_size = nq.map_size;
	return 0;
}
