// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: the switch's view of a port's shared-memory rings
 * (userspace/vswitchd/shm_ring.c), written by a hostile QEMU. The area
 * is a heap block of exactly the mapped size, so ASan sees any access
 * past it.
 *
 * Input: a 4-byte setup, then operations.
 *   setup: d[0] bit 0: 32 slots (else 16); bit 1: the area header comes
 *          from the input (32 bytes after the setup) instead of a valid
 *          one; bits 2-7: bytes cut off the end of the area.
 *          d[1..3]: unused (room for later options).
 *   op byte: low 3 bits the operation.
 *     0: the peer scribbles: 2-byte offset (scaled to the area), length
 *        byte, that many bytes
 *     1: the peer produces: count byte; its TX prod moves by it and each
 *        new slot's len takes the next 2 bytes
 *     2: the switch receives up to (next byte % 80) frames
 *     3: the switch sends (next byte % 80) frames, each length from 2
 *        bytes (1..CNUAS_SHM_FRAME_MAX)
 *     4: the peer sets its RX cons to any 4 bytes
 *     5: the peer sets its TX prod to any 4 bytes
 *     6: the switch arms (next byte: bit 0 for frames, bit 1 for room)
 *     7: the switch is woken
 */
#include "shm_ring.h"

#include <stdlib.h>
#include <string.h>

#define MAX_N 80

static uint8_t frame_out[CNUAS_SHM_FRAME_MAX];

static uint32_t take(const uint8_t *d, size_t n, size_t *off, unsigned bytes)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | (*off < n ? d[(*off)++] : 0);
	return v;
}

static void valid_header(uint8_t *area, uint32_t nslots)
{
	struct cnuas_shm_area h = {
		.magic = CNUAS_SHM_MAGIC,
		.version = CNUAS_SHM_VERSION,
		.nslots = nslots,
		.slot_size = CNUAS_SHM_SLOT_DEFAULT,
		.tx_off = sizeof(struct cnuas_shm_area),
		.rx_off = sizeof(struct cnuas_shm_area) +
			  cnuas_shm_ring_bytes(nslots, CNUAS_SHM_SLOT_DEFAULT),
	};

	memcpy(area, &h, sizeof(h));
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static uint8_t *bufs[MAX_N];
	static uint8_t *arena;
	uint32_t lens[MAX_N];
	struct iovec iov[MAX_N];
	struct shm_port s;
	size_t off = 4, len;
	uint32_t nslots;
	uint8_t *area;

	if (n < off)
		return 0;
	if (!arena) {
		arena = malloc((size_t)MAX_N * CNUAS_SHM_FRAME_MAX);
		for (unsigned i = 0; i < MAX_N; i++)
			bufs[i] = arena + (size_t)i * CNUAS_SHM_FRAME_MAX;
		memset(frame_out, 0xa5, sizeof(frame_out));
	}
	nslots = d[0] & 1 ? 32 : 16;
	len = cnuas_shm_area_bytes(nslots, CNUAS_SHM_SLOT_DEFAULT) - (size_t)(d[0] >> 2);
	area = calloc(1, len);
	if (!area)
		return 0;
	valid_header(area, nslots);
	if (d[0] & 2) {
		for (size_t i = 0; i < 32 && off < n; i++)
			area[i] = d[off++];
	}
	if (shm_layout(&s, area, len)) {
		free(area);
		return 0;
	}
	/* a valid layout fits the area: the ring pointers are inside it */
	if ((uint8_t *)s.tx.slots + (size_t)s.nslots * s.slot_size > area + len ||
	    (uint8_t *)s.rx.slots + (size_t)s.nslots * s.slot_size > area + len)
		abort();
	while (off < n) {
		uint8_t op = d[off++];
		uint32_t k, v;
		int r;

		switch (op & 7) {
		case 0:
			v = take(d, n, &off, 2) * (uint32_t)(len / 65536 + 1);
			k = take(d, n, &off, 1);
			for (uint32_t i = 0; i < k && off < n; i++)
				if (v + i < len)
					area[v + i] = d[off++];
			break;
		case 1:
			k = take(d, n, &off, 1);
			for (uint32_t i = 0; i < k; i++) {
				uint32_t p = s.tx.ctl->prod;
				struct cnuas_shm_slot *sl = (struct cnuas_shm_slot *)
					(s.tx.slots + (size_t)(p & (s.nslots - 1)) * s.slot_size);

				sl->len = take(d, n, &off, 2);
				s.tx.ctl->prod = p + 1;
			}
			break;
		case 2:
			k = take(d, n, &off, 1) % MAX_N;
			r = shm_recv(&s, bufs, lens, k);
			if (r > (int)k)
				abort();
			for (int i = 0; i < r; i++)
				if (lens[i] > CNUAS_SHM_FRAME_MAX)
					abort();
			break;
		case 3:
			k = take(d, n, &off, 1) % MAX_N;
			for (uint32_t i = 0; i < k; i++) {
				iov[i].iov_base = frame_out;
				iov[i].iov_len = take(d, n, &off, 2) % CNUAS_SHM_FRAME_MAX + 1;
			}
			r = shm_send(&s, iov, k);
			if (r > (int)k)
				abort();
			break;
		case 4:
			s.rx.ctl->cons = take(d, n, &off, 4);
			break;
		case 5:
			s.tx.ctl->prod = take(d, n, &off, 4);
			break;
		case 6:
			k = take(d, n, &off, 1);
			shm_arm(&s, k & 1, k & 2);
			break;
		default:
			shm_woken(&s);
			break;
		}
		/* the switch's own indexes never run beyond what the ring holds */
		if (s.rx.idx - s.rx.peer > s.nslots || s.tx.peer - s.tx.idx > s.nslots)
			abort();
	}
	free(area);
	return 0;
}
