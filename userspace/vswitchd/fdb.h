/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* MAC learning table: open addressing, linear probing, backward-shift delete. */
#ifndef CNUAS_FDB_H
#define CNUAS_FDB_H

#include <stdint.h>

#define FDB_BITS 13
#define FDB_SLOTS (1u << FDB_BITS)
#define FDB_MAX (FDB_SLOTS / 2)	/* keep the load factor at or below 1/2 */

struct fdb_entry {
	uint64_t key;		/* MAC | 1 << 48; 0 = empty slot */
	uint32_t port;		/* switch port slot */
	uint32_t seen;		/* seconds (monotonic) of the last frame */
};

struct fdb {
	unsigned n;
	unsigned aging_s;	/* 0 = never */
	struct fdb_entry e[FDB_SLOTS];
};

static inline uint64_t fdb_key(const uint8_t *mac)
{
	return ((uint64_t)mac[0] << 40 | (uint64_t)mac[1] << 32 | (uint64_t)mac[2] << 24 |
		(uint64_t)mac[3] << 16 | (uint64_t)mac[4] << 8 | mac[5]) | 1ull << 48;
}

void fdb_init(struct fdb *t, unsigned aging_s);
/* Port slot for mac, or -1 if unknown or aged out. */
int fdb_lookup(struct fdb *t, uint64_t key, uint32_t now_s);
/* Learn/refresh; returns 0, or -1 if the table is full. */
int fdb_learn(struct fdb *t, uint64_t key, uint32_t port, uint32_t now_s);
void fdb_del_port(struct fdb *t, uint32_t port);
void fdb_age(struct fdb *t, uint32_t now_s);
void fdb_mac_str(uint64_t key, char *buf /* 18 bytes */);

#endif
