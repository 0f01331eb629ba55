// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* The fuzz targets' switch: see vswitch_fixture.h. */
#include "vswitch_fixture.h"

#include "capture.h"
#include "fdb.h"
#include "fwd_mode.h"
#include "port_kind.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Format every message (printf bugs show up) but print nothing. */
void vs_log_init(bool use_syslog, int verbose)
{
	(void)use_syslog;
	(void)verbose;
}

void vs_log(int level, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	(void)level;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
}

/* In-memory capture: reads every captured byte so ASan checks the bounds. */
struct capture {
	uint32_t port_id;
	uint64_t frames;
	uint32_t sum;
	char path[4096];
};

struct capture *capture_start(const char *path, uint32_t port_id, int linktype, char *err,
			      size_t errlen)
{
	(void)linktype;
	struct capture *c = calloc(1, sizeof(*c));

	if (!c || strlen(path) >= sizeof(c->path)) {
		snprintf(err, errlen, "capture path too long");
		free(c);
		return NULL;
	}
	c->port_id = port_id;
	strcpy(c->path, path);
	return c;
}

void capture_frame(struct capture *c, const uint8_t *data, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		c->sum = c->sum * 31 + data[i];
	c->frames++;
}

void capture_flush(struct capture *c) { (void)c; }

uint64_t capture_stop(struct capture *c)
{
	uint64_t n = c->frames;

	free(c);
	return n;
}

uint32_t capture_port(const struct capture *c) { return c->port_id; }
const char *capture_path(const struct capture *c) { return c->path; }
uint64_t capture_frames(const struct capture *c) { return c->frames; }

/* No TAP interfaces from a fuzzer: add-tap fails as without /dev/net/tun. */
struct port *tap_add(struct vswitch *sw, const char *name, char *err, size_t errlen)
{
	(void)sw;
	(void)name;
	snprintf(err, errlen, "/dev/net/tun: not in the fuzzer");
	return NULL;
}

int tap_recv(int fd, struct mmsghdr *m, unsigned int n)
{
	(void)fd, (void)m, (void)n;
	abort();
}

int tap_send(int fd, struct mmsghdr *m, unsigned int n)
{
	(void)fd, (void)m, (void)n;
	abort();
}

/* 136 KiB: allocated once, not per input (speed) */
static struct fdb fdb_store;

int vsf_init(struct vsf *v, unsigned nports, unsigned queue_frames, const char *socket_path)
{
	struct vswitch *sw = &v->sw;
	unsigned n = VSF_MAX_PORTS + 4;	/* room for add-dgram ports */

	memset(v, 0, sizeof(*v));
	sw->epfd = sw->listen_fd = sw->ctl_fd = sw->sig_fd = -1;
	sw->cfg.socket_path = socket_path;
	sw->cfg.aging_s = 300;
	sw->cfg.queue_frames = queue_frames;
	sw->cfg.max_ports = n;
	sw->flood_cap = 2 * queue_frames;
	sw->low_water = queue_frames / 2;
	qos_default(&sw->qos_all);
	eth_fwd_start(sw);	/* switch_frames may make it an IB switch (ib_init) */
	sw->ports = calloc(n, sizeof(*sw->ports));
	sw->active = calloc(n, sizeof(int));
	sw->dirty = calloc(n, sizeof(int));
	sw->runq = calloc(n, sizeof(int));
	sw->fdb = &fdb_store;
	if (!sw->ports || !sw->active || !sw->dirty || !sw->runq || !sw->fdb)
		abort();
	for (unsigned i = 0; i < n; i++) {
		sw->ports[i].fd = -1;
		sw->ports[i].blocked_on = -1;
	}
	for (unsigned i = 0; i < VS_MAX_CTL_CONNS; i++)
		sw->ctl[i].fd = -1;
	fdb_init(sw->fdb, sw->cfg.aging_s);
	for (unsigned i = 0; i < VS_BATCH; i++) {
		sw->rx_pkt[i] = pkt_alloc_rx();
		sw->rx_iov[i].iov_base = sw->rx_pkt[i]->data;
		sw->rx_iov[i].iov_len = VS_MAX_FRAME;
		sw->rx_msg[i].msg_hdr.msg_iov = &sw->rx_iov[i];
		sw->rx_msg[i].msg_hdr.msg_iovlen = 1;
	}
	sw->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sw->epfd < 0)
		abort();
	sw->now = 1000 * 1000000000ull;
	sw->next_sweep = sw->now + 1000000000ull;
	if (nports > VSF_MAX_PORTS)
		nports = VSF_MAX_PORTS;
	for (unsigned i = 0; i < nports; i++) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
			abort();
		v->port[i] = port_add(sw, sv[0], &seqpacket_kind);
		if (!v->port[i])
			abort();
		snprintf(v->port[i]->peer, sizeof(v->port[i]->peer), "fuzz %u", i);
		v->peer[i] = sv[1];
	}
	v->nports = nports;
	return 0;
}

void vsf_drain_peer(struct vsf *v, unsigned i)
{
	static uint8_t buf[VS_MAX_FRAME];

	if (v->peer[i] < 0)
		return;
	while (recv(v->peer[i], buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

void vsf_fini(struct vsf *v)
{
	struct vswitch *sw = &v->sw;

	while (sw->nactive)
		port_destroy(sw, &sw->ports[sw->active[sw->nactive - 1]]);
	if (sw->ops->fini)
		sw->ops->fini(sw);
	if (sw->cap) {
		capture_stop(sw->cap);
		sw->cap = NULL;
	}
	ctl_close_all(sw);
	for (unsigned i = 0; i < v->nports; i++)
		if (v->peer[i] >= 0)
			close(v->peer[i]);
	close(sw->epfd);
	free(sw->ports);
	free(sw->active);
	free(sw->dirty);
	free(sw->runq);
	for (unsigned i = 0; i < VS_BATCH; i++)
		pkt_put(sw->rx_pkt[i]);
	/* the buffers stay in pkt.c's cache for the next input (speed) */
}

static char vsf_dir[64];

static void vsf_rm_dir(void)
{
	rmdir(vsf_dir);
}

const char *vsf_private_dir(const char *name)
{
	snprintf(vsf_dir, sizeof(vsf_dir), "/tmp/cnuas-fuzz-%s-XXXXXX", name);
	if (!mkdtemp(vsf_dir))
		abort();
	atexit(vsf_rm_dir);
	return vsf_dir;
}
