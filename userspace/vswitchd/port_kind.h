/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * What is at the other end of a port: a cnuas-vnic's SEQPACKET
 * connection, a QEMU `-netdev dgram` peer known only by its address, a
 * TAP interface the switch owns (a link of the host's), a `-netdev stream`
 * connection. What follows from that (how the port starts moving frames,
 * whether it lives and dies with a connection, what a failed send means,
 * what the control socket may do with it) is in the kind's table, given
 * once to port_add(); nothing else asks which kind a port is.
 */
#ifndef CNUAS_PORT_KIND_H
#define CNUAS_PORT_KIND_H

#include <stdbool.h>
#include <stdint.h>

struct port;
struct port_io;

struct port_kind {
	const char *name;		/* in cnuas-vsctl show */
	const struct port_io *io;	/* how it moves frames when added */
	/* under --shm-ring: the table of a port that may offer rings first */
	const struct port_io *shm_io;
	/*
	 * No connection: the peer may come and go (a QEMU restarts), so a
	 * receive error or a hang-up does not end the port, which shows
	 * "waiting" until its peer is heard from (port.peer_present).
	 */
	bool connectionless;
	uint32_t epoll_extra;		/* EPOLLRDHUP where a connection can be half closed */
	bool uplink;			/* a host's link, not a guest: no port security */
	bool guest_conn;		/* a guest's connection: del-port and handover */
	/*
	 * A send to the peer failed with err, not for want of room: say so
	 * (once) and mark the port. Returns the counter under which the
	 * frames that could not go are dropped.
	 */
	uint64_t *(*send_failed)(struct port *d, int err);
};

extern const struct port_kind seqpacket_kind;	/* port_kind.c */
extern const struct port_kind tap_kind;
extern const struct port_kind stream_kind;
extern const struct port_kind dgram_kind;	/* dgram.c */

#endif
