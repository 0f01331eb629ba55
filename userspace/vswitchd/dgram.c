// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * QEMU `-netdev dgram` ports over unix datagram sockets, so a stock
 * virtio-net guest joins the fabric.
 *
 * We bind SWITCH_PATH and sendto() QEMU_PATH for every frame, and accept
 * frames only from QEMU_PATH. Nothing is connected, so either side may
 * start first or restart: frames to a QEMU that is not there are dropped
 * (drop_peer_absent) and the port shows "waiting" until it answers.
 *
 * Back-pressure is best effort: an unconnected datagram socket cannot
 * report when the peer's queue drains, so when QEMU's queue is full we
 * keep frames in the egress queue and retry every millisecond; in the
 * other direction, a paused dgram port stops being read and QEMU's
 * sendto() sees EAGAIN once our receive queue is full.
 */
#include "port_io.h"
#include "port_kind.h"
#include "switch.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct port *dgram_add(struct vswitch *sw, const char *local, const char *remote, char *err,
		       size_t errlen)
{
	struct sockaddr_un ra = { .sun_family = AF_UNIX };
	struct port *p;
	int fd;

	if (!remote[0] || strlen(remote) >= sizeof(ra.sun_path)) {
		snprintf(err, errlen, "QEMU socket path '%s' is empty or longer than %zu bytes", remote,
			 sizeof(ra.sun_path) - 1);
		return NULL;
	}
	if (!strcmp(local, remote)) {
		snprintf(err, errlen, "switch and QEMU paths must differ");
		return NULL;
	}
	for (unsigned i = 0; i < sw->nactive; i++) {
		struct port *o = &sw->ports[sw->active[i]];

		if (o->kind == &dgram_kind && !strcmp(o->local_path, local)) {
			snprintf(err, errlen, "%s is already dgram port %u", local, o->id);
			return NULL;
		}
	}
	fd = unix_listen(local, SOCK_DGRAM, 0660, err, errlen);
	if (fd < 0)
		return NULL;
	p = port_add(sw, fd, &dgram_kind);
	if (!p) {
		snprintf(err, errlen, "too many ports (max %u)", sw->cfg.max_ports);
		close(fd);
		unlink(local);
		return NULL;
	}
	memcpy(ra.sun_path, remote, strlen(remote));
	p->peer_addr = ra;
	p->peer_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(remote) + 1);
	snprintf(p->local_path, sizeof(p->local_path), "%s", local);
	snprintf(p->peer, sizeof(p->peer), "%s", remote);
	vs_log(VS_LOG_INFO, "port %u: dgram %s <-> %s", p->id, local, remote);
	return p;
}

static bool dgram_from_peer(const struct port *p, const struct sockaddr_un *a, socklen_t alen)
{
	size_t off = offsetof(struct sockaddr_un, sun_path);

	if (alen <= off)
		return false;
	size_t n = strnlen(a->sun_path, alen - off);

	return n == strlen(p->peer_addr.sun_path) && !memcmp(a->sun_path, p->peer_addr.sun_path, n);
}

/* each frame with its sender's address, to take only the peer's */
static int dgram_recv(struct vswitch *sw, struct port *p, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		sw->rx_msg[i].msg_hdr.msg_name = &sw->rx_addr[i];
		sw->rx_msg[i].msg_hdr.msg_namelen = sizeof(sw->rx_addr[i]);
	}
	return recvmmsg(p->fd, sw->rx_msg, n, MSG_DONTWAIT, NULL);
}

static bool dgram_rx_from_peer(struct vswitch *sw, struct port *p, unsigned int i)
{
	if (!dgram_from_peer(p, &sw->rx_addr[i], sw->rx_msg[i].msg_hdr.msg_namelen))
		return false;
	p->peer_present = true;
	return true;
}

/* each frame to the peer's address; one that went says the peer is there */
static int dgram_send(struct port *p, struct mmsghdr *m, unsigned int n)
{
	int r;

	for (unsigned int i = 0; i < n; i++) {
		m[i].msg_hdr.msg_name = &p->peer_addr;
		m[i].msg_hdr.msg_namelen = p->peer_len;
	}
	r = sock_send(p, m, n);
	if (r > 0)
		p->peer_present = true;
	return r;
}

/* an unconnected datagram socket cannot say when its peer drains: a timer */
const struct port_io dgram_io = {
	.recv = dgram_recv,
	.send = dgram_send,
	.rx_from_peer = dgram_rx_from_peer,
	.tx_timer = true,
};

/* QEMU not (yet, or any more) there: nobody to deliver to */
static uint64_t *dgram_send_failed(struct port *d, int err)
{
	if (d->peer_present)
		vs_log(VS_LOG_INFO, "port %u: dgram peer %s unreachable: %s", d->id,
		       d->peer_addr.sun_path, strerror(err));
	d->peer_present = false;
	return &d->c.drop_peer_absent;
}

const struct port_kind dgram_kind = {
	.name = "dgram",
	.io = &dgram_io,
	.connectionless = true,
	.send_failed = dgram_send_failed,
};
