// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * The I/O tables (port_io.h) of the ports that move frames through their
 * file descriptor: SEQPACKET sockets, TAP, stream. Dgram sockets:
 * dgram.c; rings: shm_port.c.
 */
#include "port_io.h"

#include <poll.h>

int sock_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	/* a connected socket: no sender's address to read */
	for (unsigned int i = 0; i < n; i++) {
		sw->rx_msg[i].msg_hdr.msg_name = NULL;
		sw->rx_msg[i].msg_hdr.msg_namelen = 0;
	}
	return recvmmsg(p->fd, sw->rx_msg, n, MSG_DONTWAIT, NULL);
}

int sock_send(struct port *p, struct mmsghdr *m, unsigned int n)
{
	return sendmmsg(p->fd, m, n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

bool sock_peer_closed(struct port *p)
{
	struct pollfd pfd = { .fd = p->fd, .events = POLLRDHUP };

	return poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP));
}

const struct port_io seqpacket_io = {
	.recv = sock_recv,
	.send = sock_send,
	.rx_eof = sock_peer_closed,
	.tx_pollout = true,
};

static int tap_io_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	return tap_recv(p->fd, sw->rx_msg, n);
}

static int tap_io_send(struct port *p, struct mmsghdr *m, unsigned int n)
{
	return tap_send(p->fd, m, n);
}

const struct port_io tap_io = {
	.recv = tap_io_recv,
	.send = tap_io_send,
	.tx_pollout = true,
};

const struct port_io stream_io = {
	.recv = stream_recv,
	.send = stream_send,
	.tx_pollout = true,
};
