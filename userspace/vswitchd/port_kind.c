// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * The kinds of ports (port_kind.h) that end with their connection or
 * are the host's own link; the dgram kind, whose peer comes and goes, is
 * in dgram.c.
 */
#include "port_io.h"
#include "port_kind.h"
#include "switch.h"

#include <string.h>
#include <sys/epoll.h>

/* a guest's connection that refuses frames is gone for sending: drop what comes */
static uint64_t *conn_send_failed(struct port *d, int err)
{
	if (!d->tx_dead)
		vs_log(VS_LOG_INFO, "port %u: send failed: %s", d->id, strerror(err));
	d->tx_dead = true;
	return &d->c.drop_port_closed;
}

/* the interface refuses frames (down, over its MTU): drop them, keep trying */
static uint64_t *tap_send_failed(struct port *d, int err)
{
	(void)err;
	return &d->c.drop_link_down;
}

const struct port_kind seqpacket_kind = {
	.name = "seqpacket",
	.io = &seqpacket_io,
	.shm_io = &shm_hello_io,	/* a cnuas-vnic may offer rings in its first message */
	.epoll_extra = EPOLLRDHUP,
	.guest_conn = true,
	.send_failed = conn_send_failed,
};

const struct port_kind tap_kind = {
	.name = "tap",
	.io = &tap_io,
	.uplink = true,
	.send_failed = tap_send_failed,
};

const struct port_kind stream_kind = {
	.name = "stream",
	.io = &stream_io,
	.epoll_extra = EPOLLRDHUP,
	.guest_conn = true,
	.send_failed = conn_send_failed,
};
