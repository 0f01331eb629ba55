// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: the switch's control server. The input is one whole
 * request as a client sends it (see ctl_proto.h), handed over a real
 * socket to ctl_conn_event() of a switch with three ports; then one frame
 * crosses the switch so changed fault and port-security settings run.
 * Every "@D" in the input becomes the switch socket's directory (a private
 * temporary one), so add-dgram can succeed.
 */
#include "vswitch_fixture.h"

#include "ctl_proto.h"
#include "port_kind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static const char *dir;


/* add-dgram may bind only beside the switch socket: a private directory. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	dir = vsf_private_dir("ctl");
	return 0;
}

static const uint8_t frame[60] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06,
};

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
/* The input with "@D" replaced by dir, in a new buffer of *n bytes. */
static uint8_t *expand(const uint8_t *in, size_t *n)
{
	size_t dl = strlen(dir), o = 0;
	uint8_t *out = malloc(*n * (dl > 2 ? dl : 2) / 2 + 2);

	if (!out)
		abort();
	for (size_t i = 0; i < *n; i++) {
		if (in[i] == '@' && i + 1 < *n && in[i + 1] == 'D') {
			memcpy(out + o, dir, dl);
			o += dl;
			i++;
		} else {
			out[o++] = in[i];
		}
	}
	*n = o;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
	static struct vsf v;
	static char sock_path[128];
	static char resp[4096];
	struct ctl_conn *c;
	int sv[2];
	size_t off = 0;

	if (n > CTL_MAX_REQUEST + 16)
		return 0;
	uint8_t *d = expand(in, &n);

	snprintf(sock_path, sizeof(sock_path), "%s/switch.sock", dir);
	vsf_init(&v, 3, 16, sock_path);
	struct vswitch *sw = &v.sw;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	c = &sw->ctl[0];
	c->used = true;
	c->fd = sv[0];
	c->deadline = sw->now + CTL_TIMEOUT_NS;
	/* the client writes its request and shuts down; the server reads */
	while (c->used && !c->out) {
		if (off < n) {
			ssize_t w = send(sv[1], d + off, n - off, MSG_DONTWAIT);

			if (w > 0)
				off += (size_t)w;
		}
		if (off == n)
			shutdown(sv[1], SHUT_WR);
		ctl_conn_event(sw, 0, EPOLLIN);
	}
	/* the client reads the answer until the server closes */
	while (c->used) {
		while (recv(sv[1], resp, sizeof(resp), MSG_DONTWAIT) > 0)
			;
		ctl_conn_event(sw, 0, EPOLLOUT);
	}
	close(sv[1]);

	/* add-dgram's QEMU path may name any socket here: send nowhere real */
	for (unsigned i = 0; i < sw->nactive; i++) {
		struct port *p = &sw->ports[sw->active[i]];

		if (p->kind == &dgram_kind) {
			snprintf(p->peer_addr.sun_path, sizeof(p->peer_addr.sun_path), "%s/none", dir);
			p->peer_len = sizeof(p->peer_addr);
		}
	}
	/* a frame from each port through whatever the request configured */
	for (unsigned i = 0; i < v.nports; i++) {
		uint8_t f[sizeof(frame)];

		memcpy(f, frame, sizeof(f));
		f[11] = (uint8_t)i;
		if (send(v.peer[i], f, sizeof(f), MSG_DONTWAIT) < 0)
			continue;
		if (v.port[i]->used)
			dp_port_event(sw, v.port[i], EPOLLIN);
	}
	sw->now += 100 * 1000000ull;
	int timeout;

	dp_timers(sw, &timeout);
	dp_flush(sw);
	vsf_fini(&v);
	free(d);
	return 0;
}
