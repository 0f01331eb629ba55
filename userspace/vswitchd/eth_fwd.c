// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Ethernet mode (the default): a learning bridge. Source MACs are learned
 * into the MAC table (fdb.c, with port security), known unicast goes to
 * its one port, everything else is flooded to every other port.
 */
#include "capture.h"
#include "dp.h"
#include "fdb.h"
#include "fwd_mode.h"
#include "switch.h"

#include <stdio.h>

/*
 * Learn and forward one frame from p. Returns false, with p paused on the
 * destination, when a known-unicast destination is full.
 */
static bool eth_forward(struct vswitch *sw, struct port *p, uint8_t *data, uint32_t len,
			struct pkt *k)
{
	if (data[6] & 1) {	/* multicast source address: invalid */
		p->c.drop_bad_src++;
		return true;
	}
	switch (port_macs_learn(sw, p, fdb_key(data + 6))) {
	case FDB_NOT_ASSIGNED:	/* the port has its MACs: not this one */
		p->c.drop_mac_not_assigned++;
		return true;
	case FDB_SPOOF:		/* another port's pinned MAC */
		p->c.drop_mac_spoof++;
		return true;
	case FDB_LIMIT:
		p->c.drop_mac_limit++;
		return true;
	default:		/* learned, or table full: forward anyway */
		break;
	}
	bool capped;	/* counted where the frame arrived (datapath.c) */
	unsigned prio = qos_classify(p, data, len, &capped);

	if (!(data[0] & 1)) {
		int slot = fdb_lookup(sw->fdb, fdb_key(data), dp_now_s(sw));

		if (slot >= 0) {
			struct port *d = &sw->ports[slot];

			if (d == p) {	/* never back out of the ingress port */
				p->c.drop_filtered++;
				return true;
			}
			return dp_unicast(sw, p, d, data, len, k, prio);
		}
	}
	p->c.flood++;
	dp_capture_fwd(sw, p, data, len);
	for (unsigned i = 0; i < sw->nactive; i++) {
		struct port *d = &sw->ports[sw->active[i]];

		if (d != p)
			dp_flood_one(sw, d, data, len, k, prio);
	}
	return true;
}

static void eth_fault_corrupt(struct vswitch *sw, struct fault *f, uint8_t *data, uint32_t len)
{
	(void)sw;
	fault_corrupt_frame(f, data, len);
}

static void eth_describe(const struct vswitch *sw, char *buf, size_t len)
{
	snprintf(buf, len, "eth, aging %u s", sw->cfg.aging_s);
}

const struct fwd_mode eth_fwd_mode = {
	.name = "eth",
	.capture_linktype = CAPTURE_LINKTYPE_ETHERNET,
	.traffic_classes = true,
	.trust_modes = 1u << QOS_TRUST_NONE | 1u << QOS_TRUST_PCP | 1u << QOS_TRUST_DSCP,
	.ethernet_ports = true,
	.dst_off = 0,		/* the destination MAC */
	.dst_len = 6,
	.forward = eth_forward,
	.fault_corrupt = eth_fault_corrupt,
	.describe = eth_describe,
};

void eth_fwd_start(struct vswitch *sw)
{
	sw->ops = &eth_fwd_mode;
}
