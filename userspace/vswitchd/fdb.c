// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* MAC learning table. */
#include "fdb.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static inline uint32_t fdb_hash(uint64_t key)
{
	return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - FDB_BITS));
}

void fdb_init(struct fdb *t, unsigned aging_s)
{
	memset(t, 0, sizeof(*t));
	t->aging_s = aging_s;
}

static bool expired(const struct fdb *t, const struct fdb_entry *e, uint32_t now_s)
{
	return t->aging_s && !e->pinned && now_s - e->seen > t->aging_s;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void fdb_del_slot(struct fdb *t, uint32_t i)
{
	uint32_t j = i;

	t->port_n[t->e[i].port]--;
	for (;;) {
		j = (j + 1) & (FDB_SLOTS - 1);
		if (!t->e[j].key)
			break;
		uint32_t h = fdb_hash(t->e[j].key);
		/* move e[j] into the hole at i if its home is not in (i, j] */
		if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
			t->e[i] = t->e[j];
			i = j;
		}
	}
	t->e[i].key = 0;
	t->n--;
}

int fdb_lookup(struct fdb *t, uint64_t key, uint32_t now_s)
{
	for (uint32_t i = fdb_hash(key);; i = (i + 1) & (FDB_SLOTS - 1)) {
		struct fdb_entry *e = &t->e[i];

		if (!e->key)
			return -1;
		if (e->key == key) {
			if (expired(t, e, now_s)) {
				fdb_del_slot(t, i);
				return -1;
			}
			return (int)e->port;
		}
	}
}

enum fdb_verdict fdb_learn(struct fdb *t, uint64_t key, uint32_t port, uint32_t now_s,
			   const struct fdb_policy *pol)
{
	bool at_limit = pol->limit && t->port_n[port] >= pol->limit;

	for (uint32_t i = fdb_hash(key);; i = (i + 1) & (FDB_SLOTS - 1)) {
		struct fdb_entry *e = &t->e[i];

		if (e->key == key) {
			if (e->port != port) {
				/* a station may move, unless its port pinned it */
				if (e->pinned)
					return FDB_SPOOF;
				if (at_limit)
					return FDB_LIMIT;
				t->port_n[e->port]--;
				t->port_n[port]++;
				e->port = port;
			}
			e->seen = now_s;
			e->pinned = pol->pin;
			return FDB_LEARNED;
		}
		if (!e->key) {
			if (at_limit)
				return FDB_LIMIT;
			if (t->n >= FDB_MAX)
				return FDB_FULL;
			e->key = key;
			e->port = port;
			e->seen = now_s;
			e->pinned = pol->pin;
			t->n++;
			t->port_n[port]++;
			return FDB_LEARNED;
		}
	}
}

enum fdb_verdict fdb_claim(struct fdb *t, uint64_t key, uint32_t port, uint32_t now_s)
{
	const struct fdb_policy pin = { .pin = true };

	for (uint32_t i = fdb_hash(key);; i = (i + 1) & (FDB_SLOTS - 1)) {
		struct fdb_entry *e = &t->e[i];

		if (e->key == key && e->port != port) {
			t->port_n[e->port]--;
			t->port_n[port]++;
			e->port = port;
		}
		if (e->key == key || !e->key)
			return fdb_learn(t, key, port, now_s, &pin);
	}
}

enum fdb_verdict fdb_check_closing(struct fdb *t, uint64_t key, uint32_t port)
{
	for (uint32_t i = fdb_hash(key);; i = (i + 1) & (FDB_SLOTS - 1)) {
		struct fdb_entry *e = &t->e[i];

		if (!e->key)
			return FDB_UNLEARNED;
		if (e->key == key)
			return e->pinned && e->port != port ? FDB_SPOOF : FDB_UNLEARNED;
	}
}

static void fdb_del_if(struct fdb *t, bool (*match)(struct fdb *, struct fdb_entry *, uint32_t),
		       uint32_t arg)
{
	/*
	 * Deleting shifts later entries back into the hole, so re-examine
	 * the same slot after a delete. Start just after an empty slot so no
	 * chain wraps around our starting point.
	 */
	uint32_t start = 0;

	while (start < FDB_SLOTS && t->e[start].key)
		start++;
	if (start == FDB_SLOTS)
		start = 0;	/* cannot happen: load factor <= 1/2 */
	for (uint32_t k = 0; k < FDB_SLOTS; k++) {
		uint32_t i = (start + k) & (FDB_SLOTS - 1);

		while (t->e[i].key && match(t, &t->e[i], arg))
			fdb_del_slot(t, i);
	}
}

static bool match_port(struct fdb *t, struct fdb_entry *e, uint32_t port)
{
	(void)t;
	return e->port == port;
}

static bool match_old(struct fdb *t, struct fdb_entry *e, uint32_t now_s)
{
	return expired(t, e, now_s);
}

void fdb_del_port(struct fdb *t, uint32_t port)
{
	fdb_del_if(t, match_port, port);
}

void fdb_unpin_port(struct fdb *t, uint32_t port)
{
	for (uint32_t i = 0; i < FDB_SLOTS; i++)
		if (t->e[i].key && t->e[i].port == port)
			t->e[i].pinned = 0;
}

void fdb_age(struct fdb *t, uint32_t now_s)
{
	if (t->aging_s)
		fdb_del_if(t, match_old, now_s);
}

void fdb_mac_str(uint64_t key, char *buf)
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", (unsigned)(key >> 40) & 0xff,
		 (unsigned)(key >> 32) & 0xff, (unsigned)(key >> 24) & 0xff,
		 (unsigned)(key >> 16) & 0xff, (unsigned)(key >> 8) & 0xff, (unsigned)key & 0xff);
}
