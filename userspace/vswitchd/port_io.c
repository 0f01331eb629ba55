// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * The I/O tables (port_io.h) of the ports that move frames through their
 * file descriptor: SEQPACKET and dgram sockets, TAP, stream. Rings:
 * shm_port.c.
 */
#include "port_io.h"

int sock_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	return recvmmsg(p->fd, sw->rx_msg, n, MSG_DONTWAIT, NULL);
}

int sock_send(struct port *p, struct mmsghdr *m, unsigned int n)
{
	return sendmmsg(p->fd, m, n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

const struct port_io seqpacket_io = {
	.recv = sock_recv,
	.send = sock_send,
	.tx_pollout = true,
};

/* an unconnected datagram socket cannot say when its peer drains */
static const struct port_io dgram_io = {
	.recv = sock_recv,
	.send = sock_send,
};

static int tap_io_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	return tap_recv(p->fd, sw->rx_msg, n);
}

static int tap_io_send(struct port *p, struct mmsghdr *m, unsigned int n)
{
	return tap_send(p->fd, m, n);
}

static const struct port_io tap_io = {
	.recv = tap_io_recv,
	.send = tap_io_send,
	.tx_pollout = true,
};

static const struct port_io stream_io = {
	.recv = stream_recv,
	.send = stream_send,
	.tx_pollout = true,
};

const struct port_io *port_io_for(enum port_kind kind, bool shm_ring)
{
	switch (kind) {
	case PORT_DGRAM:
		return &dgram_io;
	case PORT_TAP:
		return &tap_io;
	case PORT_STREAM:
		return &stream_io;
	case PORT_SEQPACKET:
		break;
	}
	/* --shm-ring: a cnuas-vnic may offer rings in its first message */
	return shm_ring ? &shm_hello_io : &seqpacket_io;
}
