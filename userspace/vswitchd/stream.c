// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * QEMU `-netdev stream` ports: the switch listens on a unix stream socket
 * (--stream PATH) and every connection is one port, so a stock virtio-net
 * guest joins the fabric with
 *
 *   -netdev stream,id=n0,server=off,addr.type=unix,addr.path=PATH
 *
 * On the byte stream each frame is a 4-byte big-endian length followed by
 * that many bytes (QEMU's net/stream.c, without a vnet header).
 *
 * Receive. A frame is read straight into a receive buffer of the port's
 * own, together with the next frame's length (one readv per frame in the
 * steady state). We never read beyond the next length: a port paused by
 * back-pressure keeps its frames in the kernel's socket buffer, and
 * level-triggered epoll still sees them when reading resumes. A length of
 * 0 or above VS_MAX_FRAME cannot be resynchronised: the connection is
 * dropped, counted (stream_bad_length on the port, stream_framing_errors
 * on the switch) and logged; the frames before it are forwarded.
 *
 * Send. The frames of a batch go out in one sendmsg, each behind its
 * length. The kernel may take part of a frame: the rest is copied to the
 * port (tx_rest) and must go before anything else, so the port waits for
 * EPOLLOUT and back-pressure works as for seqpacket ports.
 */
#include "port_kind.h"
#include "switch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/uio.h>
#include <unistd.h>

int stream_listen_add(struct vswitch *sw, const char *path, char *err, size_t errlen)
{
	unsigned i = sw->nstream;

	if (i == VS_MAX_STREAM_LISTEN) {
		snprintf(err, errlen, "too many stream sockets (max %d)", VS_MAX_STREAM_LISTEN);
		return -1;
	}
	for (unsigned j = 0; j < i; j++) {
		if (!strcmp(sw->stream_path[j], path)) {
			snprintf(err, errlen, "%s is already a stream socket", path);
			return -1;
		}
	}
	if (!strcmp(path, sw->cfg.socket_path) || !strcmp(path, sw->cfg.ctl_path)) {
		snprintf(err, errlen, "%s is the switch's or control socket", path);
		return -1;
	}
	int fd = unix_listen(path, SOCK_STREAM, 0660, err, errlen);

	if (fd < 0)
		return -1;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = ev_tag(EV_STREAM_LISTEN, i) };

	if (epoll_ctl(sw->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		snprintf(err, errlen, "epoll_ctl: %s", strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	sw->stream_fd[i] = fd;
	snprintf(sw->stream_path[i], sizeof(sw->stream_path[i]), "%s", path);
	sw->nstream++;
	vs_log(VS_LOG_INFO, "listening for -netdev stream on %s", path);
	return (int)i;
}

void stream_accept(struct vswitch *sw, unsigned li)
{
	for (int n = 0; n < 64; n++) {
		int fd = accept4(sw->stream_fd[li], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cr;
		socklen_t crlen = sizeof(cr);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				vs_log(VS_LOG_WARN, "accept on %s: %s", sw->stream_path[li],
				       strerror(errno));
			return;
		}
		struct port *p = port_add(sw, fd, &stream_kind);

		if (!p) {
			vs_log(VS_LOG_WARN, "refusing stream connection: %u ports already",
			       sw->cfg.max_ports);
			close(fd);
			continue;
		}
		p->srx = pkt_alloc_rx();
		p->stx = malloc(4 + VS_MAX_FRAME);
		if (!p->srx || !p->stx) {
			vs_log(VS_LOG_WARN, "refusing stream connection: out of memory");
			port_destroy(sw, p);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0)
			port_name_peer(p, sw->stream_path[li], cr.pid, NULL);
		else
			snprintf(p->peer, sizeof(p->peer), "%s", sw->stream_path[li]);
		vs_log(VS_LOG_INFO, "port %u up (stream %s)", p->id, p->peer);
	}
}

/* The stream of p cannot go on: stop reading it, the port hangs up. */
static void stream_bad(struct vswitch *sw, struct port *p, uint32_t len)
{
	p->c.stream_bad_length++;
	sw->stream_framing_errors++;
	p->eof_seen = true;
	vs_log(VS_LOG_WARN, "port %u (%s): frame length %u is not in 1..%u: connection dropped",
	       p->id, p->peer, len, VS_MAX_FRAME);
}

/* A complete length in srx_hdr: check it, start the frame. */
static bool stream_start_frame(struct vswitch *sw, struct port *p)
{
	uint32_t be;

	memcpy(&be, p->srx_hdr, 4);
	p->srx_len = ntohl(be);
	p->srx_got = 0;
	if (p->srx_len == 0 || p->srx_len > VS_MAX_FRAME) {
		stream_bad(sw, p, p->srx_len);
		return false;
	}
	return true;
}

/*
 * Up to n whole frames from p into sw->rx_pkt[0..n): the port's buffer of
 * a finished frame trades places with the batch slot. Returns the number
 * of frames, or -1 with errno (EAGAIN: none yet). On EOF or a bad length
 * it sets p->eof_seen and returns the frames before it.
 */
int stream_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	unsigned int i = 0;

	while (i < n && !p->eof_seen) {
		struct iovec iov[2];
		int niov = 1;
		bool in_frame = p->srx_hdr_got == 4;

		if (in_frame) {
			iov[0].iov_base = p->srx->data + p->srx_got;
			iov[0].iov_len = p->srx_len - p->srx_got;
			iov[1].iov_base = p->srx_hdr;	/* the next length, no further */
			iov[1].iov_len = 4;
			niov = 2;
		} else {
			iov[0].iov_base = p->srx_hdr + p->srx_hdr_got;
			iov[0].iov_len = 4 - p->srx_hdr_got;
		}
		ssize_t r = readv(p->fd, iov, niov);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return i ? (int)i : -1;
		}
		if (r == 0) {
			if (p->srx_got || (p->srx_hdr_got && p->srx_hdr_got < 4))
				vs_log(VS_LOG_INFO, "port %u (%s): closed in the middle of a frame",
				       p->id, p->peer);
			p->eof_seen = true;
			break;
		}
		size_t got = (size_t)r;

		if (!in_frame) {
			p->srx_hdr_got += (uint32_t)got;
			if (p->srx_hdr_got == 4 && !stream_start_frame(sw, p))
				break;
			continue;
		}
		size_t want = p->srx_len - p->srx_got;

		if (got < want) {
			p->srx_got += (uint32_t)got;
			continue;
		}
		/* a whole frame: into the batch; the slot's buffer becomes ours */
		struct pkt *k = p->srx;

		k->len = p->srx_len;
		p->srx = sw->rx_pkt[i];
		sw->rx_pkt[i] = k;
		sw->rx_iov[i].iov_base = k->data;
		sw->rx_msg[i].msg_len = k->len;
		sw->rx_msg[i].msg_hdr.msg_flags = 0;
		i++;
		p->srx_got = 0;
		p->srx_hdr_got = (uint32_t)(got - want);
		if (p->srx_hdr_got == 4 && !stream_start_frame(sw, p))
			break;
	}
	return (int)i;
}

/* Write what is left of a partly sent frame. 0: all gone; -1: errno. */
int stream_flush_rest(struct port *p)
{
	while (p->stx_len > p->stx_off) {
		ssize_t r = send(p->fd, p->stx + p->stx_off, p->stx_len - p->stx_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p->stx_off += (uint32_t)r;
	}
	p->stx_len = p->stx_off = 0;
	return 0;
}

/*
 * Send up to n frames (one iovec each) to p, each behind its length.
 * Returns how many frames the stream took (the last may be partly in
 * tx_rest), or -1 with errno (EAGAIN: the socket or a partial frame waits).
 */
int stream_send(struct port *p, struct mmsghdr *m, unsigned int n)
{
	struct iovec iov[2 * VS_BATCH];
	uint32_t hdr[VS_BATCH];
	struct msghdr h = { .msg_iov = iov };
	ssize_t r;

	if (stream_flush_rest(p) < 0)
		return -1;
	if (n > VS_BATCH)
		n = VS_BATCH;
	for (unsigned int i = 0; i < n; i++) {
		const struct iovec *f = m[i].msg_hdr.msg_iov;

		hdr[i] = htonl((uint32_t)f->iov_len);
		iov[2 * i].iov_base = &hdr[i];
		iov[2 * i].iov_len = 4;
		iov[2 * i + 1] = *f;
	}
	h.msg_iovlen = 2 * n;
	do
		r = sendmsg(p->fd, &h, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		if (r == 0)
			errno = EAGAIN;
		return -1;
	}
	size_t left = (size_t)r;
	unsigned int i;

	for (i = 0; i < n; i++) {
		size_t flen = m[i].msg_hdr.msg_iov->iov_len;
		size_t whole = 4 + flen;

		m[i].msg_len = (unsigned int)flen;
		if (left >= whole) {
			left -= whole;
			continue;
		}
		if (left) {
			/* part of this frame went: keep the rest, it goes first */
			uint8_t *o = p->stx;

			memcpy(o, &hdr[i], 4);
			memcpy(o + 4, m[i].msg_hdr.msg_iov->iov_base, flen);
			p->stx_len = (uint32_t)whole;
			p->stx_off = (uint32_t)left;
			i++;
		}
		break;
	}
	return (int)i;
}

void stream_close_listeners(struct vswitch *sw)
{
	for (unsigned i = 0; i < sw->nstream; i++) {
		close(sw->stream_fd[i]);
		unlink(sw->stream_path[i]);
	}
	sw->nstream = 0;
}
