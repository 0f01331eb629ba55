// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: the switch's QEMU `-netdev stream` ports (stream.c). Each
 * input makes a switch with one seqpacket port, listens on a stream
 * socket of a private directory (stream_listen_add) and connects 1-4
 * peers, which stream_accept() takes as ports. The peers then write any
 * bytes: well-framed frames, lengths of 0 or above VS_MAX_FRAME, frames
 * cut anywhere, many frames before the switch reads once.
 *
 * Input: a setup byte, then operations.
 *   setup: stream ports-1 (low 2 bits) | small socket buffers on the
 *          switch's side of the stream ports (4: frames go out in pieces)
 *          | small queues (8)
 *   op byte: low 3 bits the operation, the rest the port: n % (streams + 1),
 *          the last one being the seqpacket port.
 *     0:   a stream peer writes raw bytes: 2 length bytes, then those bytes
 *     1:   a stream peer writes one frame behind its 4-byte length: 2
 *          length bytes, then the frame (the seqpacket port sends it)
 *     2:   the seqpacket peer sends a frame: 2 length bytes, then the frame
 *     3:   the switch reads the port (EPOLLIN)
 *     4:   the peer reads everything, the switch may send (EPOLLOUT)
 *     5:   the peer reads the next byte's count of bytes only, EPOLLOUT
 *     6:   time passes (next byte: ms), timers and housekeeping run
 *     7:   the peer hangs up
 * Checked: every byte a stream peer reads is well framed (each length in
 * 1..VS_MAX_FRAME), however the switch's sends were cut.
 */
#include "vswitch_fixture.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_STREAMS 4

/* What a stream peer has read of the switch's byte stream. */
struct peer_rx {
	uint8_t hdr[4];
	uint32_t hdr_got;	/* 4: inside a frame */
	uint32_t left;		/* bytes of that frame still to come */
};

struct stream_peer {
	int fd;
	struct port *port;
	struct peer_rx rx;
};

static const char *dir;
static char listen_path[128];
static char ctl_path[128];


int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	dir = vsf_private_dir("stream");
	snprintf(listen_path, sizeof(listen_path), "%s/stream.sock", dir);
	snprintf(ctl_path, sizeof(ctl_path), "%s/ctl.sock", dir);
	return 0;
}

/* The peer's side of the framing: every length the switch wrote is sane. */
static void peer_parse(struct peer_rx *rx, const uint8_t *b, size_t n)
{
	while (n) {
		if (rx->hdr_got < 4) {
			rx->hdr[rx->hdr_got++] = *b++;
			n--;
			if (rx->hdr_got == 4) {
				uint32_t be;

				memcpy(&be, rx->hdr, 4);
				rx->left = ntohl(be);
				if (rx->left == 0 || rx->left > VS_MAX_FRAME)
					abort();
			}
			continue;
		}
		size_t k = n < rx->left ? n : rx->left;

		b += k;
		n -= k;
		rx->left -= (uint32_t)k;
		if (!rx->left)
			rx->hdr_got = 0;
	}
}

/* Read up to max bytes (0: all there is) from a stream peer. */
static void peer_read(struct stream_peer *s, size_t max)
{
	static uint8_t buf[4 + VS_MAX_FRAME];

	if (s->fd < 0)
		return;
	for (;;) {
		size_t want = max && max < sizeof(buf) ? max : sizeof(buf);
		ssize_t r = recv(s->fd, buf, want, MSG_DONTWAIT);

		if (r <= 0)
			return;
		peer_parse(&s->rx, buf, (size_t)r);
		if (max) {
			max -= (size_t)r;
			if (!max)
				return;
		}
	}
}

/* Connect a peer to the switch's stream socket; the port it accepts. */
static struct port *connect_peer(struct vswitch *sw, int li, int *fd)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	unsigned before = sw->nactive;

	*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		abort();
	memcpy(a.sun_path, listen_path, strlen(listen_path));
	if (connect(*fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		abort();
	stream_accept(sw, (unsigned)li);
	if (sw->nactive != before + 1)
		abort();
	return &sw->ports[sw->active[sw->nactive - 1]];
}

static struct port *live(struct port *p)
{
	return p && p->used && !p->closing ? p : NULL;
}

static void pump(struct vswitch *sw)
{
	int timeout;

	dp_flush(sw);
	dp_timers(sw, &timeout);
	dp_housekeeping(sw);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct vsf v;
	static uint8_t framed[4 + 0x10000];
	struct stream_peer s[MAX_STREAMS];
	char err[128];
	unsigned ns;
	size_t off = 1;
	int li;

	if (n < off)
		return 0;
	ns = 1 + (d[0] & 3);
	vsf_init(&v, 1, d[0] & 8 ? 16 : 256, "/nonexistent/switch.sock");
	struct vswitch *sw = &v.sw;

	sw->cfg.ctl_path = ctl_path;
	li = stream_listen_add(sw, listen_path, err, sizeof(err));
	if (li < 0)
		abort();
	for (unsigned i = 0; i < ns; i++) {
		memset(&s[i], 0, sizeof(s[i]));
		s[i].port = connect_peer(sw, li, &s[i].fd);
		if (d[0] & 4) {
			int small = 4096;

			setsockopt(s[i].port->fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
		}
	}

	while (off < n) {
		unsigned op = d[off] & 7, i = (d[off] >> 3) % (ns + 1);
		bool seq = i == ns;
		struct port *p = seq ? live(v.port[0]) : live(s[i].port);
		int peer = seq ? v.peer[0] : s[i].fd;

		off++;
		switch (op) {
		case 0: case 1: case 2: {
			size_t len;
			uint32_t be;

			if (off + 2 > n)
				goto out;
			len = (size_t)d[off] << 8 | d[off + 1];
			off += 2;
			if (len > n - off)
				len = n - off;
			const uint8_t *f = d + off;

			off += len;
			if (op == 2 || seq)
				peer = v.peer[0];
			if (peer < 0)
				break;
			if (op == 1 && !seq) {
				be = htonl((uint32_t)len);
				memcpy(framed, &be, 4);
				memcpy(framed + 4, f, len);
				f = framed;
				len += 4;
			}
			/* a full socket: the switch stopped reading (back-pressure) */
			(void)!send(peer, f, len, MSG_DONTWAIT | MSG_NOSIGNAL);
			break;
		}
		case 3:
			if (p)
				dp_port_event(sw, p, EPOLLIN);
			break;
		case 4:
		case 5: {
			size_t max = 0;

			if (op == 5) {
				if (off >= n)
					goto out;
				max = 1 + d[off++];
			}
			if (seq)
				vsf_drain_peer(&v, 0);
			else
				peer_read(&s[i], max);
			if (p)
				dp_port_event(sw, p, EPOLLOUT);
			break;
		}
		case 6:
			if (off < n)
				sw->now += (uint64_t)d[off++] * 1000000ull;
			break;
		case 7:
			if (peer >= 0)
				close(peer);
			if (seq)
				v.peer[0] = -1;
			else
				s[i].fd = -1;
			if (p)
				dp_port_event(sw, p, EPOLLIN | EPOLLHUP | EPOLLRDHUP);
			break;
		}
		pump(sw);
	}
out:
	/* every peer reads what it has been sent; everything queued goes */
	for (unsigned round = 0; round < 4; round++) {
		sw->now += 10 * 1000000ull;
		vsf_drain_peer(&v, 0);
		if (live(v.port[0]))
			dp_port_event(sw, v.port[0], EPOLLIN | EPOLLOUT);
		for (unsigned i = 0; i < ns; i++) {
			peer_read(&s[i], 0);
			if (live(s[i].port))
				dp_port_event(sw, s[i].port, EPOLLIN | EPOLLOUT);
		}
		pump(sw);
	}
	for (unsigned i = 0; i < ns; i++)
		if (s[i].fd >= 0)
			close(s[i].fd);
	stream_close_listeners(sw);
	vsf_fini(&v);
	return 0;
}
