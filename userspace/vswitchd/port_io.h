/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * How a port moves frames: its socket's recvmmsg/sendmmsg, a TAP's
 * read/write, a stream's length-prefixed bytes, or shared-memory rings
 * (shm_port.c). Each port points at one table (port.io), its kind's when
 * the port is added (port_kind.h) and switched only where its transport
 * changes (a HELLO accepted, RING_ON); the data path and the epoll
 * interest ask it instead of testing what the port is.
 */
#ifndef CNUAS_PORT_IO_H
#define CNUAS_PORT_IO_H

#include <stdbool.h>
#include <sys/socket.h>

#include "switch.h"

struct port_io {
	/*
	 * Up to n frames from p into sw->rx_pkt[i], their lengths in
	 * sw->rx_msg[i].msg_len, as recvmmsg does: how many, or < 0 with
	 * errno (EAGAIN: nothing there).
	 */
	int (*recv)(struct vswitch *sw, struct port *p, unsigned int n);
	/* Up to n frames of m to p: how many went, or < 0 with errno (EAGAIN: full). */
	int (*send)(struct port *p, struct mmsghdr *m, unsigned int n);
	/*
	 * Frame i of what recv gave came from the port's peer (dgram: the
	 * sender's address); else it is dropped as drop_foreign. NULL: all do.
	 */
	bool (*rx_from_peer)(struct vswitch *sw, struct port *p, unsigned int i);
	/* After an empty message: did the peer close? NULL: an empty message is never the EOF. */
	bool (*rx_eof)(struct port *p);
	/* room on p's socket for waiting egress shows as EPOLLOUT */
	bool tx_pollout;
	/* nothing says when there is room (an unconnected socket): try again on a timer */
	bool tx_timer;
	/*
	 * Ingress is not on the socket (rings): the port's wake says when
	 * frames came, and EPOLLIN on the socket, watched even while p is
	 * paused, is a stray message or the EOF, read by this. NULL: the
	 * socket carries the frames.
	 */
	void (*stray)(struct vswitch *sw, struct port *p);
	/* About to wait: ask for the port's wake where it has one. NULL: the socket's epoll. */
	void (*arm)(struct vswitch *sw, struct port *p);
	/* The port is destroyed: free what the transport holds. NULL: nothing. */
	void (*close)(struct vswitch *sw, struct port *p);
};

/* The socket's own calls: recvmmsg into sw's receive batch, sendmmsg. */
int sock_recv(struct vswitch *sw, struct port *p, unsigned int n);
int sock_send(struct port *p, struct mmsghdr *m, unsigned int n);
/* After an empty message on a SEQPACKET socket: the peer's EOF, or an empty frame? */
bool sock_peer_closed(struct port *p);

/*
 * A connected SOCK_SEQPACKET socket; under --shm-ring also a port whose
 * first message was a frame or whose HELLO was not accepted, and one
 * while its HELLO is answered (what went before the ACCEPT, on the socket).
 */
extern const struct port_io seqpacket_io;
extern const struct port_io tap_io, stream_io;
/* dgram.c: an unconnected datagram socket, each frame to and from the peer's address */
extern const struct port_io dgram_io;
/* shm_port.c: a SEQPACKET port whose first message may be a HELLO. */
extern const struct port_io shm_hello_io;
struct strbuf;
/* shm_port.c: a ring port's rings in cnuas-vsctl counters (nothing for other ports). */
void shm_port_counters(const struct port *p, struct strbuf *b, bool json);

#endif
