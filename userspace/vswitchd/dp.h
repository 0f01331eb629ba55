/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * What the data path (datapath.c) offers the forwarding modes: hand a
 * frame to one port as unicast (lossless, may pause the sender) or as one
 * copy of a flood (never pauses), and capture what is forwarded.
 */
#ifndef CNUAS_DP_H
#define CNUAS_DP_H

#include <stdbool.h>
#include <stdint.h>

#include "switch.h"

/* sw->now in seconds, the clock of the MAC table. */
static inline uint32_t dp_now_s(const struct vswitch *sw)
{
	return (uint32_t)(sw->now / 1000000000ull);
}

/*
 * A frame of priority prio from p to its one known destination d. Returns
 * false, with p paused on d, when d's queue for the frame's class is full
 * and lossless; a full lossy class drops the frame instead.
 */
bool dp_unicast(struct vswitch *sw, struct port *p, struct port *d, uint8_t *data, uint32_t len,
		struct pkt *k, unsigned prio);
/* One copy of a flooded (or replicated) frame to d; never pauses. False: not sent. */
bool dp_flood_one(struct vswitch *sw, struct port *d, uint8_t *data, uint32_t len, struct pkt *k,
		  unsigned prio);
/* Capture a frame as forwarded from p: all ports, or the port it came from. */
void dp_capture_fwd(struct vswitch *sw, const struct port *p, const uint8_t *data, uint32_t len);
/* Capture a frame the switch itself sends (capturing all ports only). */
void dp_capture_own(struct vswitch *sw, const uint8_t *data, uint32_t len);

#endif
