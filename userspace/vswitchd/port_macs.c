// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Port security's assigned MACs. A port whose QEMU was given MACs on its
 * command line (peer_macs.h), or that an administrator gave a static list
 * (set-port-security mac=...), may send only from them, and they are
 * pinned to it from the start: no other port can claim one, even before
 * it ever sent. A MAC given to two live ports (a migration's source and
 * destination QEMU) stays with the port that has it until that port goes,
 * then it is the other's at once. Ports without assigned MACs keep
 * first-come pinning (fdb_learn()'s policy).
 */
#include "dp.h"
#include "fdb.h"
#include "switch.h"

#include <string.h>

bool port_has_mac(const struct port *p, uint64_t key)
{
	for (unsigned i = 0; i < p->nmacs; i++)
		if (p->macs[i] == key)
			return true;
	return false;
}

/* May q keep key against another port that was assigned it too? */
static bool holds(const struct port *q, uint64_t key)
{
	return q->used && !q->closing && q->psec.pin && port_has_mac(q, key);
}

static void claim(struct vswitch *sw, struct port *p, uint64_t key)
{
	char mac[18];

	if (fdb_claim(sw->fdb, key, (uint32_t)p->idx, dp_now_s(sw)) == FDB_LEARNED)
		return;
	fdb_mac_str(key, mac);
	vs_log(VS_LOG_WARN, "port %u: MAC table full, %s not reserved", p->id, mac);
}

void port_macs_reserve(struct vswitch *sw, struct port *p)
{
	if (!p->psec.pin || p->closing)
		return;
	for (unsigned i = 0; i < p->nmacs; i++) {
		int owner = fdb_lookup(sw->fdb, p->macs[i], dp_now_s(sw));

		if (owner >= 0 && owner != p->idx && holds(&sw->ports[owner], p->macs[i]))
			continue;
		claim(sw, p, p->macs[i]);
	}
}

/* keys, once p's, are not in the FDB: another port assigned one takes it. */
static void release(struct vswitch *sw, const struct port *p, const uint64_t *keys, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t key = keys[i];

		if (fdb_lookup(sw->fdb, key, dp_now_s(sw)) >= 0)
			continue;
		for (unsigned j = 0; j < sw->nactive; j++) {
			struct port *q = &sw->ports[sw->active[j]];

			if (q != p && holds(q, key)) {
				claim(sw, q, key);
				break;
			}
		}
	}
}

void port_macs_release(struct vswitch *sw, const struct port *p)
{
	release(sw, p, p->macs, p->nmacs);
}

void port_macs_set(struct vswitch *sw, struct port *p, const uint64_t *keys, unsigned n)
{
	uint64_t old[VS_PORT_MACS_MAX];
	unsigned nold = p->nmacs;

	memcpy(old, p->macs, sizeof(old));
	/* what it learned or was given before is not its own any more */
	fdb_del_port(sw->fdb, (uint32_t)p->idx);
	memcpy(p->macs, keys, n * sizeof(*keys));
	p->nmacs = (uint8_t)n;
	p->macs_from = n ? MACS_STATIC : MACS_NONE;
	port_macs_reserve(sw, p);
	release(sw, p, old, nold);
}

enum fdb_verdict port_macs_learn(struct vswitch *sw, struct port *p, uint64_t key)
{
	int owner;

	if (!p->psec.pin || !p->nmacs)
		return p->closing ? fdb_check_closing(sw->fdb, key, (uint32_t)p->idx) :
			fdb_learn(sw->fdb, key, (uint32_t)p->idx, dp_now_s(sw), &p->psec);
	if (!port_has_mac(p, key))
		return FDB_NOT_ASSIGNED;
	/* a closing port released its MACs: what it still sends learns nothing */
	if (p->closing)
		return fdb_check_closing(sw->fdb, key, (uint32_t)p->idx);
	/* given to both: the one that has it keeps it until it goes */
	owner = fdb_lookup(sw->fdb, key, dp_now_s(sw));
	if (owner >= 0 && owner != p->idx && holds(&sw->ports[owner], key))
		return FDB_SPOOF;
	return fdb_claim(sw->fdb, key, (uint32_t)p->idx, dp_now_s(sw));
}
