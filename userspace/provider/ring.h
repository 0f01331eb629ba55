/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * One ring shared with cnuas_ib.ko by mmap (layout: uapi/cnuas-abi.h).
 *
 * The provider is the producer of the SQ, RQ and SRQ rings and the
 * consumer of the CQ ring. It keeps its own index privately in
 * @index, publishes it with a store-release after the slots are written
 * (producer) or read (consumer), and reads the kernel's index with a
 * load-acquire. A kernel index that claims more than the ring holds is
 * treated as "nothing to do" rather than trusted.
 *
 * No rdma-core dependency: the host unit test (test/ring-test.c) builds
 * this file alone.
 */
#ifndef CNUAS_RING_H
#define CNUAS_RING_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/cnuas-abi.h>

struct cnuas_ring {
	struct cnuas_queue_hdr *hdr;
	uint8_t *slots;
	uint32_t num;		/* slots, power of two */
	uint32_t stride;	/* bytes per slot, power of two */
	uint32_t index;		/* our side's free-running index */
};

static inline int cnuas_is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

/*
 * Attach @r to a mapped buffer of @size bytes. @producer: we own prod
 * (SQ/RQ/SRQ), else cons (CQ). @min_stride: the smallest slot the
 * caller can use. -EINVAL if the kernel's geometry does not fit.
 */
static inline int cnuas_ring_init(struct cnuas_ring *r, void *buf, size_t size,
				  uint32_t num, uint32_t stride,
				  uint32_t min_stride, int producer)
{
	struct cnuas_queue_hdr *hdr = buf;

	if (!buf || !cnuas_is_pow2(num) || !cnuas_is_pow2(stride) ||
	    stride < min_stride || size < CNUAS_QUEUE_HDR_SIZE ||
	    (size - CNUAS_QUEUE_HDR_SIZE) / stride < num)
		return -EINVAL;
	r->hdr = hdr;
	r->slots = (uint8_t *)buf + CNUAS_QUEUE_HDR_SIZE;
	r->num = num;
	r->stride = stride;
	r->index = __atomic_load_n(producer ? &hdr->prod : &hdr->cons,
				   __ATOMIC_RELAXED);
	return 0;
}

static inline void *cnuas_ring_slot(const struct cnuas_ring *r, uint32_t idx)
{
	return r->slots + (size_t)(idx & (r->num - 1)) * r->stride;
}

/* Producer: free slots (0..num), after the kernel's last consume. */
static inline uint32_t cnuas_ring_space(const struct cnuas_ring *r)
{
	uint32_t cons = __atomic_load_n(&r->hdr->cons, __ATOMIC_ACQUIRE);
	uint32_t used = r->index - cons;

	return used > r->num ? 0 : r->num - used;
}

/* Producer: publish @n slots written at index, index + 1, ... */
static inline void cnuas_ring_produce(struct cnuas_ring *r, uint32_t n)
{
	r->index += n;
	__atomic_store_n(&r->hdr->prod, r->index, __ATOMIC_RELEASE);
}

/*
 * SQ producer, after cnuas_ring_produce(): does the kernel need the
 * doorbell? Not while it set db_skip (see uapi/cnuas-abi.h); the full
 * barrier orders our prod store before the db_skip load, as the kernel
 * orders its db_skip store before its prod load.
 */
static inline int cnuas_ring_needs_doorbell(const struct cnuas_ring *r)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return !__atomic_load_n(&r->hdr->db_skip, __ATOMIC_RELAXED);
}

/* Consumer: filled slots (0..num) the kernel has published. */
static inline uint32_t cnuas_ring_avail(const struct cnuas_ring *r)
{
	uint32_t prod = __atomic_load_n(&r->hdr->prod, __ATOMIC_ACQUIRE);
	uint32_t avail = prod - r->index;

	return avail > r->num ? 0 : avail;
}

/* Consumer: hand @n read slots back to the kernel. */
static inline void cnuas_ring_consume(struct cnuas_ring *r, uint32_t n)
{
	r->index += n;
	__atomic_store_n(&r->hdr->cons, r->index, __ATOMIC_RELEASE);
}

#endif /* CNUAS_RING_H */
