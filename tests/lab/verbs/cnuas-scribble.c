// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-scribble: a hostile user of its own queues. The SQ, RQ, SRQ and
 * CQ rings cnuas_ib shares with the process are ordinary writable memory;
 * a thread rewrites them at random (producer and consumer indices, opcodes,
 * SGE counts, inline lengths, keys, addresses) while the main thread rings
 * the SQ doorbell itself (the POST_SEND command with no work requests, as
 * the provider does) and loopback partners send, write, read and do atomics
 * into the victim QPs so that their receive queues are consumed. The kernel
 * must copy each slot before checking it: nothing it does may oops, warn
 * or touch memory the process did not register.
 *
 * Afterwards every object must be destroyed cleanly and a fresh loopback
 * pair must move data correctly.
 *
 *   cnuas-scribble [common options] [-s SECONDS] [-S SEED]
 *
 * Prints key=value figures; exit 0 when the device survived, 1 otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>
#include <uapi/cnuas-abi.h>

#include "common.h"

#define MAX_REGIONS	32
#define BUF_SIZE	(64 * 1024)

struct region {
	uint8_t *start;
	size_t len;
};

static struct vt_ctx C;
static struct vt_opts O;
static volatile bool stop;
static struct region victim[MAX_REGIONS];
static int nvictim;
static unsigned long scribbles;

/* The writable mappings of the uverbs device: the rings the kernel shares. */
static int uverbs_maps(struct region *r, int max)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!f)
		vt_die("/proc/self/maps: %s", strerror(errno));
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perm[8];

		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 || perm[1] != 'w')
			continue;
		r[n].start = (uint8_t *)lo;
		r[n].len = hi - lo;
		n++;
	}
	fclose(f);
	return n;
}

static bool known(const struct region *set, int n, const struct region *r)
{
	for (int i = 0; i < n; i++)
		if (set[i].start == r->start)
			return true;
	return false;
}

/* Values that break naive bounds checks more often than random ones do. */
static uint32_t nasty(uint64_t *st)
{
	static const uint32_t v[] = { 0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x1ff, 0x200,
				      0x201, 0xfff, 0x1000, 0xffff, 0x10000,
				      0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff };
	uint64_t x = vt_rand(st);

	return (x & 3) ? v[(x >> 8) % (sizeof(v) / sizeof(v[0]))] : (uint32_t)(x >> 32);
}

static void *scribbler(void *arg)
{
	uint64_t st = *(uint64_t *)arg;

	while (!stop) {
		const struct region *r = &victim[vt_rand(&st) % nvictim];
		uint64_t x = vt_rand(&st);
		size_t off;

		/* Half on the index words of the header, half anywhere. */
		if (x & 1)
			off = (x & 2) ? offsetof(struct cnuas_queue_hdr, prod) :
			      (x & 4) ? offsetof(struct cnuas_queue_hdr, cons) :
					offsetof(struct cnuas_queue_hdr, db_skip);
		else
			off = (x >> 16) % (r->len / 4) * 4;
		__atomic_store_n((uint32_t *)(r->start + off), nasty(&st), __ATOMIC_RELAXED);
		scribbles++;
		if (!(scribbles & 255))
			sched_yield();
	}
	return NULL;
}

/* The SQ doorbell, written to the command fd as the provider writes it. */
static int kick(struct ibv_qp *qp)
{
	struct ib_uverbs_post_send_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send body;
	} cmd = {
		.hdr.command = IB_USER_VERBS_CMD_POST_SEND,
		.hdr.in_words = sizeof(cmd) / 4,
		.hdr.out_words = sizeof(resp) / 4,
		.body.response = (uintptr_t)&resp,
		.body.qp_handle = qp->handle,
		.body.wqe_size = sizeof(struct ib_uverbs_send_wr),
	};

	return write(qp->context->cmd_fd, &cmd, sizeof(cmd)) == sizeof(cmd) ? 0 : errno;
}

static void connect_pair(struct ibv_qp *a, struct ibv_qp *b)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;
	struct vt_peer pa = { .qpn = a->qp_num, .psn = 100 }, pb = { .qpn = b->qp_num, .psn = 200 };
	int r;

	vt_peer_addr(&C, &pa);
	vt_peer_addr(&C, &pb);
	r = vt_connect_rc(&C, a, &O, pa.psn, &pb, acc);
	if (!r)
		r = vt_connect_rc(&C, b, &O, pb.psn, &pa, acc);
	if (r)
		vt_die("loopback pair to RTS: %s", strerror(r));
}

static void post_recv(struct ibv_qp *qp, struct ibv_srq *srq, struct ibv_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 4096, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	if (srq)
		ibv_post_srq_recv(srq, &wr, &bad);
	else
		ibv_post_recv(qp, &wr, &bad);
}

/*
 * A pair whose partner saw an error completion (the victim NAKed or its QP
 * broke) goes back through RESET to RTS, so attacks on the victim's queues
 * go on for the whole run; the victim's QP is reset over scribbled rings.
 */
static int reconnect(struct ibv_qp *a, struct ibv_qp *b)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(a, &at, IBV_QP_STATE) || ibv_modify_qp(b, &at, IBV_QP_STATE))
		return errno;
	connect_pair(a, b);
	return 0;
}

/* One request from a partner into a victim; errors are expected and ignored. */
static void partner_post(struct ibv_qp *qp, struct ibv_mr *local, struct ibv_mr *remote,
			 uint64_t *st)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE,
						  IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
						  IBV_WR_ATOMIC_FETCH_AND_ADD };
	uint64_t x = vt_rand(st);
	struct ibv_sge sge = { .addr = (uintptr_t)local->addr, .lkey = local->lkey,
			       .length = 1 + (x >> 20) % 4096 };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = ops[x % (sizeof(ops) / sizeof(ops[0]))],
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = (uintptr_t)remote->addr + ((x >> 8) & 0xff) * 8;
	wr.wr.rdma.rkey = remote->rkey;
	if (wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		sge.length = 8;
		wr.wr.atomic.remote_addr = wr.wr.rdma.remote_addr;
		wr.wr.atomic.rkey = remote->rkey;
		wr.wr.atomic.compare_add = 1;
	}
	ibv_post_send(qp, &wr, &bad);
}

/* A fresh loopback pair must still move data: WRITE, READ back, compare. */
static int sanity(void)
{
	size_t n = 8192;
	uint8_t *buf = aligned_alloc(4096, 3 * n);
	struct ibv_cq *cq = ibv_create_cq(C.ctx, 16, NULL, NULL, 0);
	struct ibv_mr *mr;
	struct ibv_qp *a, *b;
	struct ibv_wc wc;
	int bad = 0;

	if (!buf || !cq)
		return 1;
	vt_fill(buf, n, 7, 1);
	memset(buf + n, 0, 2 * n);
	mr = ibv_reg_mr(C.pd, buf, 3 * n, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ);
	a = vt_create_rc(&C, cq, cq, 4, 1);
	b = vt_create_rc(&C, cq, cq, 4, 1);
	if (!mr || !a || !b)
		return 1;
	connect_pair(a, b);
	for (int step = 0; step < 2; step++) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf + step * n, .length = n, .lkey = mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
					  .opcode = step ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE }, *bwr;

		if (step)
			sge.addr = (uintptr_t)buf + 2 * n;
		wr.wr.rdma.remote_addr = (uintptr_t)buf + n;
		wr.wr.rdma.rkey = mr->rkey;
		if (ibv_post_send(a, &wr, &bwr) || vt_poll_one(cq, &wc, 30) ||
		    wc.status != IBV_WC_SUCCESS) {
			printf("sanity_%s=%s\n", step ? "read" : "write",
			       ibv_wc_status_str(wc.status));
			bad = 1;
		}
	}
	if (!bad && memcmp(buf, buf + 2 * n, n)) {
		printf("sanity_data=mismatch\n");
		bad = 1;
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	free(buf);
	return bad;
}

static void usage(void)
{
	fprintf(stderr, "usage: cnuas-scribble [options] [-s SECONDS] [-S SEED]\n");
	vt_usage_common(stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	struct region before[MAX_REGIONS], after[MAX_REGIONS];
	struct ibv_cq *pcq, *vcq;
	struct ibv_qp *pa[2], *vb[2];
	struct ibv_srq *srq;
	struct ibv_mr *pmr, *vmr;
	struct ibv_wc wc[16];
	unsigned long kicks = 0, kick_err = 0, posts = 0, done = 0, errs = 0, resets = 0;
	bool broken[2] = { false, false };
	double t_reset = 0;
	uint64_t seed = 1, st;
	double secs = 20, t_end;
	pthread_t th;
	int opt, nb, na, failed = 0;
	uint8_t *pbuf, *vbuf;

	vt_prog = "cnuas-scribble";
	vt_opts_default(&O);
	/* A pair stuck on a scribbled queue fails fast and is reset. */
	O.timeout = 10;
	O.retry_cnt = 2;
	O.rnr_retry = 2;
	O.min_rnr_timer = 1;
	while ((opt = getopt(argc, argv, VT_COMMON_OPTS "s:S:h")) != -1) {
		if (vt_common_opt(&O, opt, optarg))
			continue;
		switch (opt) {
		case 's': secs = vt_parse_u64(optarg, "-s", 3600); break;
		case 'S': seed = vt_parse_u64(optarg, "-S", UINT64_MAX); break;
		default: usage();
		}
	}
	vt_open(&C, &O);
	st = seed * 0x9e3779b97f4a7c15ull + 1;
	pbuf = aligned_alloc(4096, BUF_SIZE);
	vbuf = aligned_alloc(4096, BUF_SIZE);
	if (!pbuf || !vbuf)
		vt_die("out of memory");
	memset(pbuf, 0, BUF_SIZE);
	memset(vbuf, 0, BUF_SIZE);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;
	pmr = ibv_reg_mr(C.pd, pbuf, BUF_SIZE, acc);
	vmr = ibv_reg_mr(C.pd, vbuf, BUF_SIZE, acc);
	pcq = ibv_create_cq(C.ctx, 256, NULL, NULL, 0);
	if (!pmr || !vmr || !pcq)
		vt_die("setup: %s", strerror(errno));
	pa[0] = vt_create_rc(&C, pcq, pcq, 64, 1);
	pa[1] = vt_create_rc(&C, pcq, pcq, 64, 1);
	if (!pa[0] || !pa[1])
		vt_die("partner QPs: %s", strerror(errno));

	/* Everything created from here on is the victim's. */
	nb = uverbs_maps(before, MAX_REGIONS);
	vcq = ibv_create_cq(C.ctx, 256, NULL, NULL, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 2 } };

	srq = ibv_create_srq(C.pd, &sa);
	struct ibv_qp_init_attr qa = { .send_cq = vcq, .recv_cq = vcq, .srq = srq,
				       .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 64, .max_send_sge = 4,
						.max_inline_data = 64 } };

	if (!vcq || !srq)
		vt_die("victim CQ/SRQ: %s", strerror(errno));
	vb[0] = vt_create_rc(&C, vcq, vcq, 64, 4);
	vb[1] = ibv_create_qp(C.pd, &qa);
	if (!vb[0] || !vb[1])
		vt_die("victim QPs: %s", strerror(errno));
	connect_pair(pa[0], vb[0]);
	connect_pair(pa[1], vb[1]);
	na = uverbs_maps(after, MAX_REGIONS);
	for (int i = 0; i < na; i++)
		if (!known(before, nb, &after[i]))
			victim[nvictim++] = after[i];
	if (nvictim < 4)
		vt_die("found %d victim rings, want at least 4 (CQ, SRQ, SQ and RQ)", nvictim);
	for (int i = 0; i < 32; i++) {
		post_recv(vb[0], NULL, vmr);
		post_recv(NULL, srq, vmr);
		post_recv(pa[0], NULL, pmr);
		post_recv(pa[1], NULL, pmr);
	}

	uint64_t tseed = st ^ 0x5555;

	pthread_create(&th, NULL, scribbler, &tseed);
	t_end = vt_now() + secs;
	while (vt_now() < t_end) {
		for (int q = 0; q < 2; q++) {
			if (kick(vb[q]))
				kick_err++;
			kicks++;
			partner_post(pa[q], pmr, vmr, &st);
			post_recv(vb[0], NULL, vmr);
			post_recv(NULL, srq, vmr);
			post_recv(pa[q], NULL, pmr);
			posts++;
		}
		int n = ibv_poll_cq(pcq, 16, wc);

		for (int i = 0; i < n; i++) {
			done++;
			if (wc[i].status == IBV_WC_SUCCESS)
				continue;
			errs++;
			for (int q = 0; q < 2; q++)
				broken[q] |= wc[i].qp_num == pa[q]->qp_num;
		}
		if (vt_now() >= t_reset) {
			for (int q = 0; q < 2; q++) {
				if (!broken[q])
					continue;
				if (reconnect(pa[q], vb[q]))
					vt_die("reset of pair %d: %s", q, strerror(errno));
				broken[q] = false;
				resets++;
				for (int i = 0; i < 16; i++) {
					post_recv(vb[q], q ? srq : NULL, vmr);
					post_recv(pa[q], NULL, pmr);
				}
			}
			t_reset = vt_now() + 0.05;
		}
		/* The victim's own CQ is scribbled too: its entries mean nothing. */
		ibv_poll_cq(vcq, 16, wc);
	}
	stop = true;
	pthread_join(th, NULL);
	printf("victim_rings=%d scribbles=%lu kicks=%lu kick_errors=%lu partner_posts=%lu "
	       "partner_completions=%lu partner_errors=%lu pair_resets=%lu\n",
	       nvictim, scribbles, kicks, kick_err, posts, done, errs, resets);

	/* Teardown of scribbled objects must work. */
	const char *what[] = { "victim_qp0", "victim_qp1", "partner_qp0", "partner_qp1" };
	struct ibv_qp *qps[] = { vb[0], vb[1], pa[0], pa[1] };

	for (int i = 0; i < 4; i++) {
		int r = ibv_destroy_qp(qps[i]);

		if (r) {
			printf("destroy_%s=%s\n", what[i], strerror(r));
			failed = 1;
		}
	}
	if (ibv_destroy_srq(srq) || ibv_destroy_cq(vcq) || ibv_destroy_cq(pcq) ||
	    ibv_dereg_mr(vmr) || ibv_dereg_mr(pmr)) {
		printf("destroy=failed (%s)\n", strerror(errno));
		failed = 1;
	}
	if (sanity())
		failed = 1;
	else
		printf("sanity=ok (fresh loopback pair: 8 KiB WRITE and READ back compared)\n");
	vt_close(&C);
	free(pbuf);
	free(vbuf);
	return failed;
}
