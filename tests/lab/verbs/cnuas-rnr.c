// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-rnr: RC error paths that must end in the right completion status.
 *
 *   server:  cnuas-rnr -M rnr|vanish|lastack [options]
 *   client:  cnuas-rnr -M rnr|vanish|lastack [options] SERVER
 *
 * rnr:    the server posts no receive buffer; the client SENDs with
 *         rnr_retry N < 7 and must get IBV_WC_RNR_RETRY_EXC_ERR.
 * vanish: the server destroys its QP once both are at RTS; the client
 *         SENDs with a short timeout and retry_cnt and must get
 *         IBV_WC_RETRY_EXC_ERR.
 * lastack: the server takes one SEND and destroys its QP as soon as the
 *         receive completes; the client's SEND must still complete with
 *         IBV_WC_SUCCESS: the ACK the server owed (and may have held for
 *         a reply) leaves before its QP goes.
 * busyack: as lastack, but the server keeps RDMA WRITEs of -s bytes into
 *         the client's memory in flight until the SEND arrives: its TX
 *         ring is full when its QP goes, the owed ACK waits behind its
 *         own queued frame (ibv_srq_pingpong -q 4 -s 1M's client, which
 *         exits with its own sends still in flight). As oneway, -R 7 -t 14
 *         -r 7: the WRITEs must not fail on a busy host.
 * oneway: the server only receives: -n SENDs, each taken and its buffer
 *         posted again; the client sends them one at a time, each after
 *         the last one completed. Nothing answers them, so an ACK the
 *         server held for a reply would cost each one a timer tick
 *         (the VM test reads the server's hw counters).
 * Then, after the error modes, both sides build fresh QPs and exchange one
 * SEND each way: the device keeps working. Not after oneway, where nothing
 * failed: that exchange is a request answered by a request, whose ACKs
 * may wait for one (and count as held) on the node whose counters the VM
 * test reads. Exit 0 only when all that happened within -T s.
 */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double limit = 120;
static unsigned int oneway_msgs = 1000;
static size_t busy_len = 8 << 20;
#define BUSY_WRITES	4	/* WRITEs the busyack server keeps in flight */

struct side {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[64];
	uint32_t psn;
	/* busyack: the WRITEs' memory, and where they go */
	struct ibv_mr *big;
	uint64_t peer_addr;
	uint32_t peer_rkey;
};

static void side_new(struct vt_ctx *c, struct side *s)
{
	s->mr = ibv_reg_mr(c->pd, s->buf, sizeof(s->buf), IBV_ACCESS_LOCAL_WRITE);
	s->cq = ibv_create_cq(c->ctx, 16, NULL, NULL, 0);
	if (!s->mr || !s->cq)
		vt_die("ibv_reg_mr/ibv_create_cq: %s", strerror(errno));
	s->qp = vt_create_rc(c, s->cq, s->cq, BUSY_WRITES + 4, 1);
	if (!s->qp)
		vt_die("ibv_create_qp: %s", strerror(errno));
	s->psn = (uint32_t)lrand48() & 0xffffff;
}

/* busyack: memory the server's WRITEs read (server) or land in (client). */
static void side_big(struct vt_ctx *c, struct side *s)
{
	void *p = calloc(1, busy_len);

	if (!p)
		vt_die("no memory for %zu bytes", busy_len);
	s->big = ibv_reg_mr(c->pd, p, busy_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!s->big)
		vt_die("ibv_reg_mr of %zu bytes: %s", busy_len, strerror(errno));
}

static void side_free(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	ibv_destroy_cq(s->cq);
	ibv_dereg_mr(s->mr);
	if (s->big) {
		void *p = s->big->addr;

		ibv_dereg_mr(s->big);
		free(p);
		s->big = NULL;
	}
	s->qp = NULL;
}

/* Swap QP details over the side channel and go to RTS. */
static void side_connect(struct vt_ctx *c, struct side *s, const struct vt_opts *o, int fd)
{
	struct vt_peer me = { .qpn = s->qp->qp_num, .psn = s->psn, .mtu = c->port_attr.active_mtu }, peer;
	int r;

	vt_peer_addr(c, &me);
	if (s->big) {
		me.addr = (uintptr_t)s->big->addr;
		me.rkey = s->big->rkey;
	}
	vt_send_peer(fd, &me);
	vt_recv_peer(fd, &peer, (int)limit);
	s->peer_addr = peer.addr;
	s->peer_rkey = peer.rkey;
	r = vt_connect_rc(c, s->qp, o, s->psn, &peer,
			  IBV_ACCESS_LOCAL_WRITE | (s->big ? IBV_ACCESS_REMOTE_WRITE : 0));
	if (r)
		vt_die("bringing the QP to RTS: %s", strerror(r));
	vt_dbg("qpn 0x%06x -> 0x%06x", me.qpn, peer.qpn);
}

static void post_recv(struct side *s)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf, .length = sizeof(s->buf), .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = &sg, .num_sge = 1 }, *bad;

	if (ibv_post_recv(s->qp, &wr, &bad))
		vt_die("ibv_post_recv failed");
}

static void post_send(struct side *s)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf, .length = 16, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (ibv_post_send(s->qp, &wr, &bad))
		vt_die("ibv_post_send failed");
}

static void post_write(struct side *s)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->big->addr, .length = (uint32_t)busy_len,
			      .lkey = s->big->lkey };
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = s->peer_addr, .rkey = s->peer_rkey } }, *bad;

	if (ibv_post_send(s->qp, &wr, &bad))
		vt_die("ibv_post_send (RDMA WRITE) failed");
}

/*
 * busyack's server, its WRITEs posted before the client may send: they
 * stay in flight until the SEND's receive completes (each one done is
 * posted again), then the QP goes at once. Returns the WRITEs that
 * completed meanwhile.
 */
static unsigned int busy_until_recv(struct side *s)
{
	unsigned int done = 0;
	struct ibv_wc wc;

	for (;;) {
		if (vt_poll_one(s->cq, &wc, limit))
			vt_die("busyack: the SEND did not arrive");
		if (wc.status != IBV_WC_SUCCESS)
			vt_die("busyack: %s completion: %s", wc.opcode == IBV_WC_RECV ? "receive" : "WRITE",
			       ibv_wc_status_str(wc.status));
		if (wc.opcode == IBV_WC_RECV)
			break;
		done++;
		post_write(s);
	}
	ibv_destroy_qp(s->qp);
	s->qp = NULL;
	return done;
}

static void sync_word(int fd, const char *what)
{
	uint64_t w;

	vt_send_word(fd, 1);
	if (vt_recv_word(fd, &w, (int)limit))
		vt_die("peer vanished from the side channel (%s)", what);
}

/* oneway: the server keeps the receive queue topped up, the client waits for each SEND. */
static int oneway(struct side *s, int server)
{
	unsigned int i;
	struct ibv_wc wc;

	for (i = 0; i < oneway_msgs; i++) {
		if (server && !i) {
			post_recv(s);
			post_recv(s);
		}
		if (!server)
			post_send(s);
		if (vt_poll_one(s->cq, &wc, limit)) {
			vt_log("FAIL: oneway: no completion for message %u within %.0f s", i, limit);
			return 1;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			vt_log("FAIL: oneway: message %u: %s", i, ibv_wc_status_str(wc.status));
			return 1;
		}
		if (server)
			post_recv(s);
	}
	return 0;
}

/* The afterwards check: a fresh QP pair, one SEND each way, both succeed. */
static int still_works(struct vt_ctx *c, const struct vt_opts *o, int fd)
{
	struct vt_opts ok = *o;
	struct side s = { 0 };
	struct ibv_wc wc;
	int got_send = 0, got_recv = 0;

	ok.timeout = 14;
	ok.retry_cnt = 7;
	ok.rnr_retry = 7;
	side_new(c, &s);
	side_connect(c, &s, &ok, fd);
	post_recv(&s);
	sync_word(fd, "fresh QPs ready");
	post_send(&s);
	while (!got_send || !got_recv) {
		if (vt_poll_one(s.cq, &wc, 30)) {
			vt_log("FAIL: fresh QP: no completion within 30 s");
			return 1;
		}
		if (wc.status != IBV_WC_SUCCESS) {
			vt_log("FAIL: fresh QP: %s", ibv_wc_status_str(wc.status));
			return 1;
		}
		if (wc.opcode == IBV_WC_RECV)
			got_recv = 1;
		else
			got_send = 1;
	}
	sync_word(fd, "fresh QPs done");
	side_free(&s);
	printf("cnuas-rnr: PASS fresh QPs after the test: SEND both ways\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct vt_opts o;
	struct vt_ctx c;
	struct side s = { 0 };
	const char *mode = NULL;
	int opt, fd, rc = 0;

	vt_prog = "cnuas-rnr";
	vt_opts_default(&o);
	o.rnr_retry = 2;
	o.min_rnr_timer = 1;	/* 0.01 ms: retries come fast */
	o.timeout = 10;		/* ~4 ms */
	o.retry_cnt = 2;
	while ((opt = getopt(argc, argv, VT_COMMON_OPTS "M:T:n:s:h")) != -1) {
		if (vt_common_opt(&o, opt, optarg))
			continue;
		switch (opt) {
		case 'M': mode = optarg; break;
		case 'T': limit = (double)vt_parse_u64(optarg, "time limit", 86400); break;
		case 'n': oneway_msgs = (unsigned int)vt_parse_u64(optarg, "messages", 1000000); break;
		case 's': busy_len = (size_t)vt_parse_u64(optarg, "WRITE size", 1u << 30); break;
		case 'h':
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"Usage: cnuas-rnr -M rnr|vanish|lastack|busyack|oneway [-T SEC] [-n MSGS] [-s BYTES]\n"
				"                 [options] [SERVER]\n"
				"  defaults here: -R 2 (rnr_retry), -t 10, -r 2; -n 1000 (oneway, which always\n"
				"  uses -R 7 -t 14 -r 7: it tests no error path); -s 8388608 (busyack's WRITEs)\n");
			vt_usage_common(opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (optind < argc)
		o.server = argv[optind++];
	if (optind < argc || !mode ||
	    (strcmp(mode, "rnr") && strcmp(mode, "vanish") && strcmp(mode, "lastack") &&
	     strcmp(mode, "busyack") && strcmp(mode, "oneway")))
		vt_die("usage: cnuas-rnr -M rnr|vanish|lastack|busyack|oneway [options] [SERVER]");
	if (!busy_len)
		vt_die("-s: a WRITE of 0 bytes keeps nothing busy");
	bool rnr = !strcmp(mode, "rnr");
	bool busy = !strcmp(mode, "busyack");
	bool lastack = busy || !strcmp(mode, "lastack");
	bool is_oneway = !strcmp(mode, "oneway");

	if (is_oneway || busy) {
		/* nothing may fail here (busyack: the WRITEs, on a busy TCG host) */
		o.rnr_retry = 7;
		o.timeout = 14;
		o.retry_cnt = 7;
	}

	if (rnr && o.rnr_retry >= 7)
		vt_die("rnr_retry 7 retries forever: use -R 0..6");
	srand48((long)getpid());
	vt_open(&c, &o);
	fd = vt_tcp_open(&o, (int)limit);
	side_new(&c, &s);
	if (busy)
		side_big(&c, &s);
	side_connect(&c, &s, &o, fd);
	sync_word(fd, "both at RTS");
	if (is_oneway) {
		if (!o.server)
			post_recv(&s);	/* a third, so the first SEND finds one */
		sync_word(fd, "server side set up");
		rc = oneway(&s, !o.server);
		if (!rc)
			printf("cnuas-rnr: PASS oneway: %u SENDs, one at a time, all completed\n",
			       oneway_msgs);
		sync_word(fd, "oneway done");
	} else if (!o.server) {
		/* server: no receive buffer (rnr), no QP at all (vanish) */
		if (lastack)
			post_recv(&s);
		if (busy)
			for (int i = 0; i < BUSY_WRITES; i++)
				post_write(&s);
		if (!lastack && !rnr) {
			ibv_destroy_qp(s.qp);
			s.qp = NULL;
		}
		sync_word(fd, "server side set up");
		uint64_t verdict;

		if (busy) {
			unsigned int n = busy_until_recv(&s);

			printf("cnuas-rnr: busyack: the SEND came with %u WRITE(s) of %zu bytes in flight, "
			       "%u done before it; QP destroyed\n", BUSY_WRITES, busy_len, n);
		} else if (lastack) {
			struct ibv_wc wc;

			/* one receive, then the QP goes at once */
			if (vt_poll_one(s.cq, &wc, limit) || wc.status != IBV_WC_SUCCESS)
				vt_die("lastack: the SEND did not arrive");
			ibv_destroy_qp(s.qp);
			s.qp = NULL;
		}

		if (vt_recv_word(fd, &verdict, (int)limit))
			vt_die("no verdict from the client");
		rc = verdict ? 1 : 0;
	} else {
		enum ibv_wc_status want = rnr ? IBV_WC_RNR_RETRY_EXC_ERR :
					  lastack ? IBV_WC_SUCCESS : IBV_WC_RETRY_EXC_ERR;
		struct ibv_wc wc;
		double t0;

		sync_word(fd, "server side set up");
		t0 = vt_now();
		post_send(&s);
		if (vt_poll_one(s.cq, &wc, limit)) {
			vt_log("FAIL: %s: no completion within %.0f s", mode, limit);
			rc = 1;
		} else if (wc.status != want) {
			vt_log("FAIL: %s: completion %s (%d), want %s", mode, ibv_wc_status_str(wc.status),
			       wc.status, ibv_wc_status_str(want));
			rc = 1;
		} else {
			struct ibv_qp_attr a;
			struct ibv_qp_init_attr ia;

			printf("cnuas-rnr: PASS %s: %s after %.2f s (rnr_retry %d, min_rnr_timer %d, timeout %d, retry_cnt %d)\n",
			       mode, ibv_wc_status_str(wc.status), vt_now() - t0, o.rnr_retry, o.min_rnr_timer,
			       o.timeout, o.retry_cnt);
			if (!lastack &&
			    (ibv_query_qp(s.qp, &a, IBV_QP_STATE, &ia) || a.qp_state != IBV_QPS_ERR)) {
				vt_log("FAIL: the QP is not in the error state after the error completion");
				rc = 1;
			}
		}
		vt_send_word(fd, (uint64_t)rc);
	}
	side_free(&s);
	if (!is_oneway && still_works(&c, &o, fd))
		rc = 1;
	close(fd);
	vt_close(&c);
	return rc;
}
