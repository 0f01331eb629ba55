/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* MAC learning table: open addressing, linear probing, backward-shift delete. */
#ifndef CNUAS_FDB_H
#define CNUAS_FDB_H

#include <stdbool.h>
#include <stdint.h>

#define FDB_BITS 13
#define FDB_SLOTS (1u << FDB_BITS)
#define FDB_MAX (FDB_SLOTS / 2)	/* keep the load factor at or below 1/2 */
#define FDB_MAX_PORTS 4096	/* port slots (the switch's --max-ports bound) */

struct fdb_entry {
	uint64_t key;		/* MAC | 1 << 48; 0 = empty slot */
	uint32_t port;		/* switch port slot */
	uint32_t seen : 31;	/* seconds (monotonic) of the last frame */
	uint32_t pinned : 1;	/* port security: never moves, never ages */
};

struct fdb {
	unsigned n;
	unsigned aging_s;	/* 0 = never */
	uint16_t port_n[FDB_MAX_PORTS];	/* entries per port slot */
	struct fdb_entry e[FDB_SLOTS];
};

/* What a port may learn: pin its MACs to it, and at most limit of them. */
struct fdb_policy {
	bool pin;
	unsigned limit;		/* 0 = no limit */
};

enum fdb_verdict {
	FDB_LEARNED = 0,
	FDB_FULL = -1,		/* table full: forward without learning */
	FDB_SPOOF = -2,		/* MAC pinned to another port: drop */
	FDB_LIMIT = -3,		/* port already has its limit of MACs: drop */
	FDB_NOT_ASSIGNED = -4,	/* not one of the port's assigned MACs: drop */
	FDB_UNLEARNED = 1,	/* closing port: forward, learn nothing */
};

static inline uint64_t fdb_key(const uint8_t *mac)
{
	return ((uint64_t)mac[0] << 40 | (uint64_t)mac[1] << 32 | (uint64_t)mac[2] << 24 |
		(uint64_t)mac[3] << 16 | (uint64_t)mac[4] << 8 | mac[5]) | 1ull << 48;
}

void fdb_init(struct fdb *t, unsigned aging_s);
/* Port slot for mac, or -1 if unknown or aged out. */
int fdb_lookup(struct fdb *t, uint64_t key, uint32_t now_s);
/* Learn/refresh key on port under the port's policy. */
enum fdb_verdict fdb_learn(struct fdb *t, uint64_t key, uint32_t port, uint32_t now_s,
			   const struct fdb_policy *pol);
/*
 * A frame read from a port that is closing (its peer is gone, frames it
 * sent before are still being read): its MACs were released when it
 * closed, so they may move to a new port at once (a migrated guest's
 * port). It learns nothing; a MAC pinned to another port is still a spoof.
 */
/* Pin key to port whatever it was before (a MAC the port was assigned). */
enum fdb_verdict fdb_claim(struct fdb *t, uint64_t key, uint32_t port, uint32_t now_s);
enum fdb_verdict fdb_check_closing(struct fdb *t, uint64_t key, uint32_t port);
void fdb_del_port(struct fdb *t, uint32_t port);
/* The port's entries may move and age again. */
void fdb_unpin_port(struct fdb *t, uint32_t port);
void fdb_age(struct fdb *t, uint32_t now_s);
void fdb_mac_str(uint64_t key, char *buf /* 18 bytes */);

#endif
