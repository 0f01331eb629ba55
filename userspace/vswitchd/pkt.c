// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Refcounted frame buffers for frames that outlive a receive batch
 * (queued, held for back-pressure, delayed). Two size classes with small
 * free lists so a congested port does not hammer malloc.
 */
#include "switch.h"

#include <stdlib.h>
#include <string.h>

#define PKT_SMALL 2048
#define PKT_CACHE_MAX 1024

static struct pkt *cache_small, *cache_big;
static unsigned ncache_small, ncache_big;

static struct pkt *pkt_alloc(uint32_t cap)
{
	struct pkt **cache = cap == PKT_SMALL ? &cache_small : &cache_big;
	unsigned *ncache = cap == PKT_SMALL ? &ncache_small : &ncache_big;
	struct pkt *k = *cache;

	if (k) {
		*cache = k->next;
		(*ncache)--;
	} else {
		k = malloc(sizeof(*k) + cap);
		if (!k)
			abort();	/* out of memory: nothing sensible left to do */
	}
	k->next = NULL;
	k->due = 0;
	k->refs = 1;
	k->len = 0;
	k->cap = cap;
	k->rx = false;
	return k;
}

struct pkt *pkt_new(const void *data, uint32_t len)
{
	struct pkt *k = pkt_alloc(len <= PKT_SMALL ? PKT_SMALL : VS_MAX_FRAME);

	k->len = len;
	memcpy(k->data, data, len);
	return k;
}

struct pkt *pkt_alloc_rx(void)
{
	struct pkt *k = pkt_alloc(VS_MAX_FRAME);

	k->rx = true;
	return k;
}

struct pkt *pkt_keep(struct pkt *k)
{
	if (k->rx && k->len <= PKT_SMALL)
		return pkt_new(k->data, k->len);
	return pkt_get(k);
}

void pkt_put(struct pkt *k)
{
	if (--k->refs)
		return;
	struct pkt **cache = k->cap == PKT_SMALL ? &cache_small : &cache_big;
	unsigned *ncache = k->cap == PKT_SMALL ? &ncache_small : &ncache_big;

	if (*ncache >= PKT_CACHE_MAX) {
		free(k);
		return;
	}
	k->next = *cache;
	*cache = k;
	(*ncache)++;
}

void pkt_cache_free(void)
{
	struct pkt *k;

	while ((k = cache_small)) {
		cache_small = k->next;
		free(k);
	}
	while ((k = cache_big)) {
		cache_big = k->next;
		free(k);
	}
	ncache_small = ncache_big = 0;
}
