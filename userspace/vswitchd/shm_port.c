// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * A SEQPACKET port that negotiated shared-memory rings (--shm-ring,
 * docs/shm-ring.md): the first message with its descriptors, ACCEPT or
 * REFUSE, the wake eventfd in epoll, and receive/send through the rings.
 * Each step of that is a port_io table (port_io.h): hello (the first
 * message), accepted (egress on the rings), ring (both ways); the port
 * switches table at the ACCEPT and the device's RING_ON, and the data
 * path never asks which one it has.
 */
#include "port_io.h"
#include "shm_ring.h"
#include "strbuf.h"
#include "switch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

_Static_assert(CNUAS_SHM_FRAME_MAX == VS_MAX_FRAME, "a ring slot holds a switch frame");
_Static_assert(CNUAS_SHM_MSG_LEN < VS_ETH_HLEN, "ring messages are never frames");

static const struct port_io shm_accepted_io, shm_ring_io;

static bool shm_is_msg(const uint8_t *d, uint32_t len, uint16_t type)
{
	struct cnuas_shm_msg m;

	if (len != CNUAS_SHM_MSG_LEN)
		return false;
	memcpy(&m, d, sizeof(m));
	return m.magic == CNUAS_SHM_MAGIC && m.version == CNUAS_SHM_VERSION && m.type == type;
}

static bool reply(struct port *p, uint16_t type, uint32_t arg)
{
	struct cnuas_shm_msg m = {
		.magic = CNUAS_SHM_MAGIC, .version = CNUAS_SHM_VERSION, .type = type, .arg = arg,
	};

	return send(p->fd, &m, CNUAS_SHM_MSG_LEN, MSG_DONTWAIT | MSG_NOSIGNAL) == CNUAS_SHM_MSG_LEN;
}

/* The descriptors of h's SCM_RIGHTS messages: the first CNUAS_SHM_NFDS kept, the rest closed. */
static unsigned take_fds(struct msghdr *h, int fds[CNUAS_SHM_NFDS])
{
	unsigned n = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		unsigned k = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int fd;

		for (unsigned i = 0; i < k; i++) {
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (n < CNUAS_SHM_NFDS)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

static void close_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

/* A valid-looking HELLO with nfds descriptors: 0 when accepted, else the refusal. */
static int hello(struct vswitch *sw, struct port *p, const uint8_t *d, int *fds, unsigned nfds)
{
	struct cnuas_shm_msg m;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = ev_tag(EV_SHM, (uint32_t)p->idx) };
	int r;

	memcpy(&m, d, sizeof(m));
	if (nfds != CNUAS_SHM_NFDS) {
		close_fds(fds, nfds);
		return CNUAS_SHM_R_FDS;
	}
	p->shm = calloc(1, sizeof(*p->shm));
	if (!p->shm) {
		close_fds(fds, nfds);
		return CNUAS_SHM_R_MAP;
	}
	r = shm_attach(p->shm, fds, m.arg);
	if (r)
		goto fail;
	/* what went to the socket so far must arrive before the ACCEPT */
	if (p->npend)
		dp_flush(sw);
	if (p->qlen || p->stx_len) {
		vs_log(VS_LOG_INFO, "port %u: rings not taken: its socket is full", p->id);
		shm_detach(p->shm);
		r = CNUAS_SHM_R_MAP;
		goto fail;
	}
	if (epoll_ctl(sw->epfd, EPOLL_CTL_ADD, p->shm->wake_fd, &ev) < 0 ||
	    !reply(p, CNUAS_SHM_ACCEPT, 0)) {
		epoll_ctl(sw->epfd, EPOLL_CTL_DEL, p->shm->wake_fd, NULL);
		shm_detach(p->shm);
		free(p->shm);
		p->shm = NULL;
		return -1;	/* nothing answered: the device stays on the socket */
	}
	p->io = &shm_accepted_io;
	vs_log(VS_LOG_INFO, "port %u: shared-memory rings, %u slots of %u bytes", p->id,
	       p->shm->nslots, p->shm->slot_size);
	return 0;
fail:
	free(p->shm);
	p->shm = NULL;
	return r;
}

/* The port's first message: a HELLO, or an old device's first frame. */
static int hello_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * (CNUAS_SHM_NFDS + 1))];
	} ctl;
	struct msghdr *h = &sw->rx_msg[0].msg_hdr;
	int fds[CNUAS_SHM_NFDS];
	unsigned nfds;
	ssize_t r;
	int why;

	(void)n;	/* one message: a HELLO comes alone, with its descriptors */
	h->msg_name = NULL;
	h->msg_namelen = 0;
	h->msg_control = ctl.buf;
	h->msg_controllen = sizeof(ctl.buf);
	h->msg_flags = 0;
	r = recvmsg(p->fd, h, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	nfds = r >= 0 ? take_fds(h, fds) : 0;
	h->msg_control = NULL;
	h->msg_controllen = 0;
	if (r < 0)
		return -1;
	/* on the socket until an ACCEPT went out */
	p->io = &seqpacket_io;
	if (!shm_is_msg(sw->rx_pkt[0]->data, (uint32_t)r, CNUAS_SHM_HELLO)) {
		/* an old device's first frame: a socket port for good */
		close_fds(fds, nfds);
		sw->rx_msg[0].msg_len = (unsigned int)r;
		return 1;
	}
	why = hello(sw, p, sw->rx_pkt[0]->data, fds, nfds);
	if (why > 0) {
		vs_log(VS_LOG_INFO, "port %u: shared-memory rings refused (reason %d)", p->id, why);
		reply(p, CNUAS_SHM_REFUSE, (uint32_t)why);
	}
	return 0;
}

/* Ingress on the socket until the device's RING_ON, its last message there. */
static int accepted_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	int r = sock_recv(sw, p, n);

	for (int i = 0; i < r; i++) {
		if (!shm_is_msg(sw->rx_pkt[i]->data, sw->rx_msg[i].msg_len, CNUAS_SHM_RING_ON))
			continue;
		p->io = &shm_ring_io;
		/* what followed it on the socket is a protocol error */
		p->c.drop_bad_size += (unsigned int)(r - i - 1);
		return i;
	}
	return r;
}

static int ring_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	uint8_t *bufs[VS_BATCH];
	uint32_t lens[VS_BATCH];
	int r;

	for (unsigned i = 0; i < n; i++)
		bufs[i] = sw->rx_pkt[i]->data;
	r = shm_recv(p->shm, bufs, lens, n);
	if (r < 0) {
		vs_log(VS_LOG_WARN, "port %u: impossible TX ring index from the device", p->id);
		errno = EPROTO;
		return -1;
	}
	/* a closed port's ring is drained once it is empty */
	if (!r && p->closing)
		p->eof_seen = true;
	for (int i = 0; i < r; i++) {
		/* a bad slot length: counted as drop_bad_size, never as the EOF */
		sw->rx_msg[i].msg_len = lens[i] ? lens[i] : VS_MAX_FRAME + 1;
		sw->rx_msg[i].msg_hdr.msg_flags = 0;
	}
	return r;
}

static int ring_send(struct port *p, struct mmsghdr *m, unsigned int n)
{
	struct iovec iov[VS_BATCH];
	int r;

	if (n > VS_BATCH)
		n = VS_BATCH;
	for (unsigned i = 0; i < n; i++)
		iov[i] = m[i].msg_hdr.msg_iov[0];
	r = shm_send(p->shm, iov, n);
	if (r <= 0)
		errno = r < 0 ? EPROTO : EAGAIN;
	return r <= 0 ? -1 : r;
}

/* After RING_ON: whatever comes on the socket is a protocol error, or the EOF. */
static void ring_stray(struct vswitch *sw, struct port *p)
{
	uint8_t b[CNUAS_SHM_MSG_LEN];

	for (;;) {
		ssize_t r = recv(p->fd, b, sizeof(b), MSG_DONTWAIT | MSG_TRUNC);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return;
		if (r == 0) {
			dp_port_hangup(sw, p);
			return;
		}
		p->c.drop_bad_size++;
	}
}

/* About to wait: ask for a kick, or wake ourselves if there is work. */
static void arm(struct vswitch *sw, struct port *p, bool rx_want)
{
	if (p->closing) {
		epoll_ctl(sw->epfd, EPOLL_CTL_DEL, p->shm->wake_fd, NULL);
		return;
	}
	if (shm_arm(p->shm, rx_want, p->qlen != 0)) {
		uint64_t one = 1;

		if (write(p->shm->wake_fd, &one, sizeof(one)) < 0)
			vs_log(VS_LOG_DEBUG, "port %u: wake: %s", p->id, strerror(errno));
	}
}

static void accepted_arm(struct vswitch *sw, struct port *p)
{
	arm(sw, p, false);
}

static void ring_arm(struct vswitch *sw, struct port *p)
{
	arm(sw, p, port_can_read(p));
}

static void shm_close(struct vswitch *sw, struct port *p)
{
	epoll_ctl(sw->epfd, EPOLL_CTL_DEL, p->shm->wake_fd, NULL);
	shm_detach(p->shm);
	free(p->shm);
	p->shm = NULL;
}

const struct port_io shm_hello_io = {
	.recv = hello_recv,
	.send = sock_send,
	.rx_eof = sock_peer_closed,
	.tx_pollout = true,
};

/* ACCEPT sent: egress on the rings, ingress on the socket until RING_ON */
static const struct port_io shm_accepted_io = {
	.recv = accepted_recv,
	.send = ring_send,
	.rx_eof = sock_peer_closed,
	.arm = accepted_arm,
	.close = shm_close,
};

/* RING_ON: both ways on the rings, the socket only for strays and the EOF */
static const struct port_io shm_ring_io = {
	.recv = ring_recv,
	.send = ring_send,
	.stray = ring_stray,
	.arm = ring_arm,
	.close = shm_close,
};

/*
 * A ring port's rings for cnuas-vsctl counters: which step, the frames
 * waiting each way, who asked the other for a kick, and the kicks so far.
 * A stall shows here: frames waiting on a side that asked for no kick.
 */
void shm_port_counters(const struct port *p, struct strbuf *b, bool json)
{
	const struct shm_port *s = p->shm;
	const char *step = p->io == &shm_ring_io ? "on" : "accepted";
	uint64_t from_dev;
	struct shm_view v;

	if (!s)
		return;
	shm_view(s, &v);
	from_dev = s->kicks_in > s->self_wakes ? s->kicks_in - s->self_wakes : 0;
	if (json) {
		sb_printf(b, ", \"ring\": {\"step\": \"%s\", \"tx_waiting\": %u, \"rx_waiting\": %u, "
			  "\"switch_wants_tx\": %s, \"switch_wants_room\": %s, "
			  "\"device_wants_rx\": %s, \"device_wants_room\": %s, \"kicks_rx\": %llu, "
			  "\"kicks_tx\": %llu, \"kicks_from_device\": %llu, \"self_wakes\": %llu}",
			  step, v.tx_waiting, v.rx_waiting, v.sw_wants_tx ? "true" : "false",
			  v.sw_wants_room ? "true" : "false", v.dev_wants_rx ? "true" : "false",
			  v.dev_wants_room ? "true" : "false", (unsigned long long)s->kicks_rx,
			  (unsigned long long)s->kicks_tx, (unsigned long long)from_dev,
			  (unsigned long long)s->self_wakes);
		return;
	}
	sb_printf(b, "  %-20s %s: TX %u waiting, RX %u waiting; kick asked by the switch:%s%s%s, "
		  "by the device:%s%s%s\n", "ring", step, v.tx_waiting, v.rx_waiting,
		  v.sw_wants_tx ? " TX frames" : "", v.sw_wants_room ? " RX room" : "",
		  v.sw_wants_tx || v.sw_wants_room ? "" : " none",
		  v.dev_wants_rx ? " RX frames" : "", v.dev_wants_room ? " TX room" : "",
		  v.dev_wants_rx || v.dev_wants_room ? "" : " none");
	sb_printf(b, "  %-20s %llu\n  %-20s %llu\n  %-20s %llu\n  %-20s %llu\n",
		  "ring_kicks_rx", (unsigned long long)s->kicks_rx,
		  "ring_kicks_tx", (unsigned long long)s->kicks_tx,
		  "ring_kicks_from_dev", (unsigned long long)from_dev,
		  "ring_self_wakes", (unsigned long long)s->self_wakes);
}
