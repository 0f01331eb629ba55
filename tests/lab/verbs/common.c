// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* Shared helpers of the lab's verbs test programs (see common.h). */
#include "common.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

const char *vt_prog = "verbs-test";
int vt_verbose;

void vt_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: error: ", vt_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void vt_opts_default(struct vt_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->ib_port = 1;
	o->gid_idx = -1;
	o->timeout = 16;	/* 268 ms: TCG guests see round trips of tens of ms */
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->min_rnr_timer = 12;
	o->max_dest_rd_atomic = 1;
	o->tcp_port = 18515;
}

void vt_usage_common(FILE *f)
{
	fprintf(f, "Common options:\n"
		   "  -d DEV     RDMA device (default: the first)\n"
		   "  -i PORT    device port (default 1)\n"
		   "  -g IDX     GID index (default: the first RoCE v2 IPv4 GID)\n"
		   "  -m MTU     path MTU 256..4096 (default: the port's active MTU)\n"
		   "  -t N       local ACK timeout exponent 0..31 (default 16)\n"
		   "  -r N       retry_cnt 0..7 (default 7)\n"
		   "  -R N       rnr_retry 0..7 (default 7 = infinite)\n"
		   "  -p PORT    TCP port of the side channel (default 18515)\n"
		   "  -v         verbose\n");
}

uint64_t vt_parse_u64(const char *s, const char *what, uint64_t max)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!*s || *s == '-')
		vt_die("bad %s '%s'", what, s);
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		vt_die("bad %s '%s' (0..%llu)", what, s, (unsigned long long)max);
	return v;
}

int vt_common_opt(struct vt_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 'd': o->dev = arg; return 1;
	case 'i': o->ib_port = (int)vt_parse_u64(arg, "port", 255); return 1;
	case 'g': o->gid_idx = (int)vt_parse_u64(arg, "gid index", 65535); return 1;
	case 'm':
		o->mtu = (int)vt_parse_u64(arg, "mtu", 4096);
		if (!vt_mtu_enum(o->mtu))
			vt_die("bad mtu %s (256, 512, 1024, 2048 or 4096)", arg);
		return 1;
	case 't': o->timeout = (int)vt_parse_u64(arg, "timeout", 31); return 1;
	case 'r': o->retry_cnt = (int)vt_parse_u64(arg, "retry_cnt", 7); return 1;
	case 'R': o->rnr_retry = (int)vt_parse_u64(arg, "rnr_retry", 7); return 1;
	case 'p': o->tcp_port = (int)vt_parse_u64(arg, "tcp port", 65535); return 1;
	case 'v': vt_verbose++; return 1;
	}
	return 0;
}

enum ibv_mtu vt_mtu_enum(int bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	}
	return 0;
}

int vt_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

/*
 * The first RoCE v2 GID that maps an IPv4 address (::ffff:a.b.c.d); on
 * InfiniBand the port GID (index 0), with the LID for the local subnet.
 */
static int pick_gid(struct vt_ctx *c)
{
	if (c->port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND)
		return 0;
	for (int i = 0; i < c->port_attr.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(c->ctx, (uint32_t)c->ib_port, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		if (!memcmp(e.gid.raw, v4map, 12))
			return i;
	}
	return -1;
}

void vt_open(struct vt_ctx *c, const struct vt_opts *o)
{
	struct ibv_device **list;
	int n;

	memset(c, 0, sizeof(*c));
	list = ibv_get_device_list(&n);
	if (!list || n == 0)
		vt_die("no RDMA devices (ibv_get_device_list: %s)", strerror(errno));
	for (int i = 0; i < n; i++) {
		if (o->dev && strcmp(ibv_get_device_name(list[i]), o->dev))
			continue;
		c->ctx = ibv_open_device(list[i]);
		if (!c->ctx)
			vt_die("ibv_open_device(%s): %s", ibv_get_device_name(list[i]), strerror(errno));
		break;
	}
	ibv_free_device_list(list);
	if (!c->ctx)
		vt_die("device %s not found", o->dev);
	c->ib_port = o->ib_port;
	if (ibv_query_device(c->ctx, &c->dev_attr))
		vt_die("ibv_query_device: %s", strerror(errno));
	if (ibv_query_port(c->ctx, (uint8_t)c->ib_port, &c->port_attr))
		vt_die("ibv_query_port: %s", strerror(errno));
	if (c->port_attr.state != IBV_PORT_ACTIVE)
		vt_die("port %d of %s is not active (state %d)", c->ib_port,
		       ibv_get_device_name(c->ctx->device), c->port_attr.state);
	c->gid_idx = o->gid_idx >= 0 ? o->gid_idx : pick_gid(c);
	if (c->gid_idx < 0)
		vt_die("no RoCE v2 IPv4 GID on %s port %d (use -g)", ibv_get_device_name(c->ctx->device),
		       c->ib_port);
	if (ibv_query_gid(c->ctx, (uint8_t)c->ib_port, c->gid_idx, &c->gid))
		vt_die("ibv_query_gid(%d): %s", c->gid_idx, strerror(errno));
	c->pd = ibv_alloc_pd(c->ctx);
	if (!c->pd)
		vt_die("ibv_alloc_pd: %s", strerror(errno));
	vt_dbg("device %s port %d gid index %d, active mtu %d", ibv_get_device_name(c->ctx->device),
	       c->ib_port, c->gid_idx, vt_mtu_bytes(c->port_attr.active_mtu));
}

void vt_close(struct vt_ctx *c)
{
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->ctx)
		ibv_close_device(c->ctx);
	memset(c, 0, sizeof(*c));
}

struct ibv_qp *vt_create_rc(struct vt_ctx *c, struct ibv_cq *scq, struct ibv_cq *rcq,
			    uint32_t max_wr, uint32_t max_sge)
{
	struct ibv_qp_init_attr a = {
		.send_cq = scq,
		.recv_cq = rcq,
		.cap = { .max_send_wr = max_wr, .max_recv_wr = max_wr,
			 .max_send_sge = max_sge, .max_recv_sge = max_sge },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(c->pd, &a);
}

/*
 * RESET -> INIT -> RTR -> RTS towards the peer. RC adds its reliability
 * attributes (READ/atomic depths, RNR timer, timeout, retries); UC takes
 * none of them.
 */
static int connect_qp(struct vt_ctx *c, struct ibv_qp *qp, const struct vt_opts *o,
		      uint32_t my_psn, const struct vt_peer *peer, int access, bool rc)
{
	enum ibv_mtu mtu = o->mtu ? vt_mtu_enum(o->mtu) : c->port_attr.active_mtu;
	struct ibv_qp_attr a;
	int mask, r;

	if (peer->mtu && peer->mtu < (uint32_t)mtu)
		mtu = (enum ibv_mtu)peer->mtu;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)c->ib_port;
	a.qp_access_flags = access;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (r)
		return r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	/*
	 * RoCE always needs the GRH. On InfiniBand a peer that gives a LID
	 * and no GID (all zero) is on the local subnet: LRH only (LNH 2).
	 */
	a.ah_attr.is_global = c->port_attr.link_layer != IBV_LINK_LAYER_INFINIBAND || !peer->lid ||
			      memcmp(peer->gid, (uint8_t[16]){ 0 }, 16);
	a.ah_attr.dlid = (uint16_t)peer->lid;
	a.ah_attr.port_num = (uint8_t)c->ib_port;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)c->gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	if (rc) {
		a.max_dest_rd_atomic = (uint8_t)o->max_dest_rd_atomic;
		a.min_rnr_timer = (uint8_t)o->min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	r = ibv_modify_qp(qp, &a, mask);
	if (r)
		return r;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = my_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (rc) {
		a.timeout = (uint8_t)o->timeout;
		a.retry_cnt = (uint8_t)o->retry_cnt;
		a.rnr_retry = (uint8_t)o->rnr_retry;
		a.max_rd_atomic = 1;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

int vt_connect_rc(struct vt_ctx *c, struct ibv_qp *qp, const struct vt_opts *o, uint32_t my_psn,
		  const struct vt_peer *peer, int access)
{
	return connect_qp(c, qp, o, my_psn, peer, access, true);
}

int vt_connect_uc(struct vt_ctx *c, struct ibv_qp *qp, const struct vt_opts *o, uint32_t my_psn,
		  const struct vt_peer *peer, int access)
{
	return connect_qp(c, qp, o, my_psn, peer, access, false);
}

/* ---- TCP side channel ---- */

static int wait_fd(int fd, short ev, int timeout_s)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int r;

	do
		r = poll(&p, 1, timeout_s * 1000);
	while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : -1;
}

int vt_tcp_open(const struct vt_opts *o, int timeout_s)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	char port[16];
	int fd = -1, one = 1;

	snprintf(port, sizeof(port), "%d", o->tcp_port);
	if (!o->server) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)o->tcp_port),
					  .sin6_addr = IN6ADDR_ANY_INIT };
		int ls = socket(AF_INET6, SOCK_STREAM, 0);

		if (ls < 0)
			vt_die("socket: %s", strerror(errno));
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1))
			vt_die("listen on TCP port %d: %s", o->tcp_port, strerror(errno));
		vt_dbg("waiting for the client on TCP port %d", o->tcp_port);
		if (wait_fd(ls, POLLIN, timeout_s))
			vt_die("no client connected within %d s", timeout_s);
		fd = accept(ls, NULL, NULL);
		if (fd < 0)
			vt_die("accept: %s", strerror(errno));
		close(ls);
		return fd;
	}
	if (getaddrinfo(o->server, port, &hints, &res))
		vt_die("cannot resolve %s", o->server);
	double end = vt_now() + timeout_s;

	/* the server may not listen yet: retry until the deadline */
	while (fd < 0 && vt_now() < end) {
		for (ai = res; ai; ai = ai->ai_next) {
			fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
			if (fd < 0)
				continue;
			if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
				break;
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			usleep(200000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		vt_die("cannot connect to %s:%d within %d s", o->server, o->tcp_port, timeout_s);
	return fd;
}

static void write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			vt_die("side channel write: %s", n < 0 ? strerror(errno) : "closed");
		p += n;
		len -= (size_t)n;
	}
}

static int read_all(int fd, void *buf, size_t len, int timeout_s)
{
	char *p = buf;
	double end = vt_now() + timeout_s;

	while (len) {
		int left = (int)(end - vt_now()) + 1;

		if (left <= 0 || wait_fd(fd, POLLIN, left))
			return -1;
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

void vt_peer_addr(const struct vt_ctx *c, struct vt_peer *p)
{
	memcpy(p->gid, c->gid.raw, 16);
	p->lid = vt_lid(c);
}

uint16_t vt_lid(const struct vt_ctx *c)
{
	return c->port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND ? c->port_attr.lid : 0;
}

void vt_send_peer(int fd, const struct vt_peer *p)
{
	struct vt_peer w = *p;

	w.qpn = htonl(p->qpn);
	w.psn = htonl(p->psn);
	w.rkey = htonl(p->rkey);
	w.mtu = htonl(p->mtu);
	w.lid = htonl(p->lid);
	w.addr = htobe64(p->addr);
	for (int i = 0; i < 4; i++)
		w.arg[i] = htobe64(p->arg[i]);
	write_all(fd, &w, sizeof(w));
}

void vt_recv_peer(int fd, struct vt_peer *p, int timeout_s)
{
	if (read_all(fd, p, sizeof(*p), timeout_s))
		vt_die("side channel: no QP details from the peer within %d s", timeout_s);
	p->qpn = ntohl(p->qpn);
	p->psn = ntohl(p->psn);
	p->rkey = ntohl(p->rkey);
	p->mtu = ntohl(p->mtu);
	p->lid = ntohl(p->lid);
	p->addr = be64toh(p->addr);
	for (int i = 0; i < 4; i++)
		p->arg[i] = be64toh(p->arg[i]);
}

void vt_send_word(int fd, uint64_t w)
{
	w = htobe64(w);
	write_all(fd, &w, sizeof(w));
}

int vt_recv_word(int fd, uint64_t *w, int timeout_s)
{
	if (read_all(fd, w, sizeof(*w), timeout_s))
		return -1;
	*w = be64toh(*w);
	return 0;
}

int vt_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double timeout_s)
{
	double end = vt_now() + timeout_s;
	unsigned spins = 0;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return 0;
		if (vt_now() > end)
			return -1;
		if (++spins > 1000)
			usleep(100);
	}
}

uint64_t vt_rand(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

void vt_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t stream)
{
	uint64_t s = (seed ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull ^ (stream + 1) * 0x94D049BB133111EBull;
	size_t i = 0;

	if (!s)
		s = 1;
	for (; i + 8 <= len; i += 8) {
		uint64_t v = vt_rand(&s);

		memcpy(buf + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = vt_rand(&s);

		memcpy(buf + i, &v, len - i);
	}
}

double vt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void vt_run_cases(int argc, char **argv, struct vt_ctx *c, struct vt_opts *o,
		  const struct vt_case *cases, size_t ncases)
{
	int opt;

	while ((opt = getopt(argc, argv, VT_COMMON_OPTS "h")) != -1) {
		if (vt_common_opt(o, opt, optarg))
			continue;
		printf("Usage: %s [options] [CASE...]\nCases:", vt_prog);
		for (size_t i = 0; i < ncases; i++)
			printf(" %s", cases[i].name);
		printf("\n");
		vt_usage_common(stdout);
		exit(opt == 'h' ? 0 : 2);
	}
	vt_open(c, o);
	for (size_t i = 0; i < ncases; i++) {
		bool want = optind == argc;

		for (int k = optind; k < argc; k++)
			want |= !strcmp(argv[k], cases[i].name);
		if (want)
			cases[i].fn();
	}
	vt_close(c);
}
