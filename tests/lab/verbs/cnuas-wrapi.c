// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-wrapi: the extended send API (ibv_wr_start .. ibv_wr_complete) on
 * loopback QP pairs of one port; each case prints PASS/FAIL. It asserts
 * what the verbs man pages (ibv_wr_post(3)) promise and rdma_rxe's
 * provider does, so the same program passes on rxe0:
 *
 *  qp-ex       ibv_qp_to_qp_ex() finds the API on a QP created with
 *              send_ops_flags and not on one without; unsupported ops
 *              (TSO on RC) make ibv_create_qp_ex fail
 *  rc-ops      one batch of SEND (SGE), SEND_WITH_IMM (inline data,
 *              whose buffer is overwritten before ibv_wr_complete),
 *              RDMA WRITE (SGE list), WRITE_WITH_IMM, READ, CMP_AND_SWP
 *              and FETCH_AND_ADD: completions in order with the right
 *              opcodes, every byte and atomic result checked
 *  abort       ibv_wr_abort posts nothing; the next batch works
 *  errors      more SGEs than max_send_sge, more inline bytes than
 *              max_inline_data, more requests than the SQ holds: the
 *              batch fails and posts nothing, the QP keeps working
 *  ud          UD SENDs with ibv_wr_set_ud_addr (SGE and inline) to a
 *              second UD QP: data and immediate arrive after the GRH
 *  mw          ibv_wr_bind_mw binds a type 2 window (IBV_WC_BIND_MW), a
 *              WRITE through it arrives, ibv_wr_local_inv frees it
 *              (IBV_WC_LOCAL_INV) and the next WRITE gets
 *              IBV_WC_REM_ACCESS_ERR (skipped without memory windows)
 */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WR_RC_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
		   IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
		   IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
		   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define SQ_WR 16
#define MAX_SGE 64
#define INLINE 64
#define QKEY 0x11111111

static int npass, nfail;
static uint64_t pair_ops = WR_RC_OPS;	/* send_ops_flags of pair_new's QPs */
static struct vt_ctx C;
static struct vt_opts O;

static void report(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %-8s ", ok ? "PASS" : "FAIL", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (ok)
		npass++;
	else
		nfail++;
}

static struct ibv_qp *create_qp(struct ibv_cq *cq, enum ibv_qp_type type, uint64_t ops)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = SQ_WR, .max_recv_wr = SQ_WR, .max_send_sge = 2,
			 .max_recv_sge = 1, .max_inline_data = INLINE },
		.qp_type = type,
		.comp_mask = IBV_QP_INIT_ATTR_PD | (ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0),
		.pd = C.pd,
		.send_ops_flags = ops,
	};

	return ibv_create_qp_ex(C.ctx, &a);
}

/* Two RC QPs of the API connected to each other, and their memory. */
struct pair {
	struct ibv_cq *cq, *cqb;	/* a's, b's */
	struct ibv_qp *a, *b;
	struct ibv_qp_ex *x;	/* a's API */
	uint8_t *mem;		/* page 0: a's; page 1: b's target; page 2: b's receives */
	struct ibv_mr *mr;
};

static void pair_new(struct pair *p)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;
	struct vt_peer pa = { .psn = 100 }, pb = { .psn = 200 };
	int r;

	memset(p, 0, sizeof(*p));
	if (posix_memalign((void **)&p->mem, 4096, 3 * 4096))
		vt_die("out of memory");
	memset(p->mem, 0, 3 * 4096);
	p->cq = ibv_create_cq(C.ctx, 128, NULL, NULL, 0);
	p->cqb = ibv_create_cq(C.ctx, 128, NULL, NULL, 0);
	p->mr = ibv_reg_mr(C.pd, p->mem, 3 * 4096, acc);
	if (!p->cq || !p->cqb || !p->mr)
		vt_die("pair: %s", strerror(errno));
	p->a = create_qp(p->cq, IBV_QPT_RC, pair_ops);
	p->b = create_qp(p->cqb, IBV_QPT_RC, pair_ops);
	if (!p->a || !p->b)
		vt_die("pair: ibv_create_qp_ex with send_ops_flags: %s", strerror(errno));
	p->x = ibv_qp_to_qp_ex(p->a);
	if (!p->x)
		vt_die("pair: ibv_qp_to_qp_ex: NULL");
	pa.qpn = p->a->qp_num;
	pb.qpn = p->b->qp_num;
	vt_peer_addr(&C, &pa);
	vt_peer_addr(&C, &pb);
	r = vt_connect_rc(&C, p->a, &O, pa.psn, &pb, acc);
	if (!r)
		r = vt_connect_rc(&C, p->b, &O, pb.psn, &pa, acc);
	if (r)
		vt_die("pair to RTS: %s", strerror(r));
}

static void pair_free(struct pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
	ibv_dereg_mr(p->mr);
	ibv_destroy_cq(p->cq);
	ibv_destroy_cq(p->cqb);
	free(p->mem);
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, uint64_t id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		vt_die("ibv_post_recv: %s", strerror(errno));
}

/* Collect n completions of qp into wc[]; returns how many came. */
static int poll_qp(struct ibv_cq *cq, struct ibv_qp *qp, struct ibv_wc *wc, int n, double timeout)
{
	double end = vt_now() + timeout;
	int got = 0;

	while (got < n && vt_now() < end) {
		struct ibv_wc w;
		int r = ibv_poll_cq(cq, 1, &w);

		if (r < 0)
			vt_die("ibv_poll_cq: %d", r);
		if (r == 0) {
			usleep(100);
			continue;
		}
		vt_dbg("qp %u: wr_id %llu status %s opcode %d len %u", w.qp_num,
		       (unsigned long long)w.wr_id, ibv_wc_status_str(w.status), w.opcode, w.byte_len);
		if (w.qp_num == qp->qp_num)
			wc[got++] = w;
	}
	return got;
}

static void case_qp_ex(void)
{
	struct ibv_cq *cq = ibv_create_cq(C.ctx, 8, NULL, NULL, 0);
	struct ibv_qp *plain, *ex, *tso;

	if (!cq)
		vt_die("ibv_create_cq: %s", strerror(errno));
	plain = create_qp(cq, IBV_QPT_RC, 0);
	ex = create_qp(cq, IBV_QPT_RC, WR_RC_OPS);
	report(plain && !ibv_qp_to_qp_ex(plain), "qp-ex", "QP without send_ops_flags: %s",
	       !plain ? "not created" : ibv_qp_to_qp_ex(plain) ? "has the API" : "no API");
	report(ex && ibv_qp_to_qp_ex(ex) && ibv_qp_to_qp_ex(ex)->wr_start, "qp-ex",
	       "QP with the RC send ops: %s", !ex ? strerror(errno) :
	       ibv_qp_to_qp_ex(ex) ? "has the API" : "ibv_qp_to_qp_ex NULL");
	errno = 0;
	tso = create_qp(cq, IBV_QPT_RC, IBV_QP_EX_WITH_TSO);
	report(!tso, "qp-ex", "RC QP asking for TSO: %s (errno %d)", tso ? "created" : "refused", errno);
	if (tso)
		ibv_destroy_qp(tso);
	if (ex)
		ibv_destroy_qp(ex);
	if (plain)
		ibv_destroy_qp(plain);
	ibv_destroy_cq(cq);
}

static const char *wc_op(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

static void case_rc_ops(void)
{
	static const enum ibv_wc_opcode want[] = { IBV_WC_SEND, IBV_WC_SEND, IBV_WC_RDMA_WRITE,
		IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD };
	struct pair p;
	uint8_t *la, *tb, *rb, inl[16];
	uint64_t *cas, *faa, *cas_old, *faa_old;
	uint32_t lk, rk;
	struct ibv_wc wc[8];
	struct ibv_sge two[2];
	int ok, n, i, r;

	pair_new(&p);
	la = p.mem;
	tb = p.mem + 4096;
	rb = p.mem + 8192;
	lk = p.mr->lkey;
	rk = p.mr->rkey;
	vt_fill(la, 1024, 1, 1);
	vt_fill(inl, sizeof(inl), 1, 2);
	cas = (uint64_t *)(tb + 2048);
	faa = cas + 1;
	*cas = 0x1111;
	*faa = 1000;
	cas_old = (uint64_t *)(la + 3072);
	faa_old = cas_old + 1;
	post_recv(p.b, p.mr, rb, 256, 11);
	post_recv(p.b, p.mr, rb + 256, 256, 12);
	post_recv(p.b, p.mr, rb + 512, 256, 13);

	ibv_wr_start(p.x);
	p.x->wr_flags = IBV_SEND_SIGNALED;
	p.x->wr_id = 1;
	ibv_wr_send(p.x);
	ibv_wr_set_sge(p.x, lk, (uintptr_t)la, 64);
	p.x->wr_id = 2;
	ibv_wr_send_imm(p.x, htobe32(0x1234));
	ibv_wr_set_inline_data(p.x, inl, sizeof(inl));
	p.x->wr_id = 3;
	ibv_wr_rdma_write(p.x, rk, (uintptr_t)tb);
	two[0] = (struct ibv_sge){ .addr = (uintptr_t)la + 64, .length = 100, .lkey = lk };
	two[1] = (struct ibv_sge){ .addr = (uintptr_t)la + 512, .length = 156, .lkey = lk };
	ibv_wr_set_sge_list(p.x, 2, two);
	p.x->wr_id = 4;
	ibv_wr_rdma_write_imm(p.x, rk, (uintptr_t)tb + 1024, htobe32(0xabcd));
	ibv_wr_set_sge(p.x, lk, (uintptr_t)la + 256, 32);
	p.x->wr_id = 5;
	ibv_wr_rdma_read(p.x, rk, (uintptr_t)tb + 1024);
	ibv_wr_set_sge(p.x, lk, (uintptr_t)la + 2048, 32);
	p.x->wr_id = 6;
	ibv_wr_atomic_cmp_swp(p.x, rk, (uintptr_t)cas, 0x1111, 0x2222);
	ibv_wr_set_sge(p.x, lk, (uintptr_t)cas_old, 8);
	p.x->wr_id = 7;
	ibv_wr_atomic_fetch_add(p.x, rk, (uintptr_t)faa, 5);
	ibv_wr_set_sge(p.x, lk, (uintptr_t)faa_old, 8);
	memset(inl, 0xee, sizeof(inl));	/* copied already: must not reach the wire */
	r = ibv_wr_complete(p.x);
	report(r == 0, "rc-ops", "ibv_wr_complete of 7 requests -> %s", r ? strerror(r) : "0");

	n = poll_qp(p.cq, p.a, wc, 7, 30);
	ok = n == 7;
	for (i = 0; i < n; i++)
		ok &= wc[i].status == IBV_WC_SUCCESS && wc[i].wr_id == (uint64_t)i + 1 &&
		      wc[i].opcode == want[i];
	report(ok, "rc-ops", "requester: %d of 7 completions in order with the right opcodes%s%s", n,
	       n ? ", first " : "", n ? wc_op(wc[0].opcode) : "");
	n = poll_qp(p.cqb, p.b, wc, 3, 30);
	vt_fill(inl, sizeof(inl), 1, 2);
	ok = n == 3 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_RECV &&
	     wc[0].byte_len == 64 && !(wc[0].wc_flags & IBV_WC_WITH_IMM) &&
	     wc[1].status == IBV_WC_SUCCESS && wc[1].opcode == IBV_WC_RECV && wc[1].byte_len == 16 &&
	     (wc[1].wc_flags & IBV_WC_WITH_IMM) && be32toh(wc[1].imm_data) == 0x1234 &&
	     wc[2].status == IBV_WC_SUCCESS && wc[2].opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	     be32toh(wc[2].imm_data) == 0xabcd;
	report(ok, "rc-ops", "responder: %d of 3 receives (SEND 64 B, SEND_WITH_IMM 16 B, WRITE_WITH_IMM)", n);
	report(!memcmp(rb, la, 64) && !memcmp(rb + 256, inl, 16), "rc-ops",
	       "SEND and inline SEND bytes (inline copied when set)");
	report(!memcmp(tb, la + 64, 100) && !memcmp(tb + 100, la + 512, 156) &&
	       !memcmp(tb + 1024, la + 256, 32) && !memcmp(la + 2048, la + 256, 32), "rc-ops",
	       "WRITE with two SGEs, WRITE_WITH_IMM, READ back");
	report(*cas_old == 0x1111 && *cas == 0x2222 && *faa_old == 1000 && *faa == 1005, "rc-ops",
	       "CMP_AND_SWP 0x%llx -> 0x%llx, FETCH_AND_ADD %llu -> %llu", (unsigned long long)*cas_old,
	       (unsigned long long)*cas, (unsigned long long)*faa_old, (unsigned long long)*faa);
	pair_free(&p);
}

/* One signalled SEND in a batch of its own; 0 if it completed well. */
static int one_send(struct pair *p, uint64_t id)
{
	struct ibv_wc wc;
	int r;

	post_recv(p->b, p->mr, p->mem + 8192, 256, id);
	ibv_wr_start(p->x);
	p->x->wr_flags = IBV_SEND_SIGNALED;
	p->x->wr_id = id;
	ibv_wr_send(p->x);
	ibv_wr_set_sge(p->x, p->mr->lkey, (uintptr_t)p->mem, 8);
	r = ibv_wr_complete(p->x);
	if (r)
		return r;
	if (poll_qp(p->cq, p->a, &wc, 1, 30) != 1)
		return ETIMEDOUT;
	return wc.status == IBV_WC_SUCCESS && wc.wr_id == id ? 0 : EIO;
}

/* Nothing of a failed or aborted batch may complete. */
static int quiet(struct pair *p)
{
	struct ibv_wc wc;

	return poll_qp(p->cq, p->a, &wc, 1, 0.5) == 0;
}

static void case_abort(void)
{
	struct pair p;
	int r;

	pair_new(&p);
	ibv_wr_start(p.x);
	p.x->wr_flags = IBV_SEND_SIGNALED;
	p.x->wr_id = 8;
	ibv_wr_rdma_write(p.x, p.mr->rkey, (uintptr_t)p.mem + 4096);
	ibv_wr_set_sge(p.x, p.mr->lkey, (uintptr_t)p.mem, 8);
	ibv_wr_abort(p.x);
	report(quiet(&p), "abort", "an aborted WRITE does not complete");
	r = one_send(&p, 9);
	report(!r, "abort", "the next batch: %s", r ? strerror(r) : "completes");
	pair_free(&p);
}

static void case_errors(void)
{
	struct ibv_sge sges[MAX_SGE];
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	uint8_t big[INLINE * 4 + 1];
	struct pair p;
	uint32_t inl_max;
	int r, i, nsge;

	pair_new(&p);
	if (ibv_query_qp(p.a, &qa, IBV_QP_CAP, &qi))
		vt_die("ibv_query_qp: %s", strerror(errno));
	nsge = qi.cap.max_send_sge + 1;
	if (nsge <= MAX_SGE) {
		for (i = 0; i < nsge; i++)
			sges[i] = (struct ibv_sge){ .addr = (uintptr_t)p.mem + 8 * i, .length = 8,
						    .lkey = p.mr->lkey };
		ibv_wr_start(p.x);
		p.x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(p.x, p.mr->rkey, (uintptr_t)p.mem + 4096);
		ibv_wr_set_sge_list(p.x, nsge, sges);
		r = ibv_wr_complete(p.x);
		report(r != 0 && quiet(&p), "errors", "%d SGEs over max_send_sge %u -> %s, nothing posted",
		       nsge, qi.cap.max_send_sge, r ? strerror(r) : "0");
	}

	inl_max = qi.cap.max_inline_data;
	memset(big, 7, sizeof(big));
	if (inl_max < sizeof(big)) {
		ibv_wr_start(p.x);
		p.x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(p.x, p.mr->rkey, (uintptr_t)p.mem + 4096);
		ibv_wr_set_inline_data(p.x, big, inl_max + 1);
		r = ibv_wr_complete(p.x);
		report(r != 0 && quiet(&p), "errors", "%u inline bytes over max_inline_data %u -> %s, nothing posted",
		       inl_max + 1, inl_max, r ? strerror(r) : "0");
	}

	ibv_wr_start(p.x);
	p.x->wr_flags = 0;
	for (i = 0; i < 4 * SQ_WR; i++) {
		ibv_wr_rdma_write(p.x, p.mr->rkey, (uintptr_t)p.mem + 4096);
		ibv_wr_set_sge(p.x, p.mr->lkey, (uintptr_t)p.mem, 8);
	}
	p.x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(p.x, p.mr->rkey, (uintptr_t)p.mem + 4096);
	ibv_wr_set_sge(p.x, p.mr->lkey, (uintptr_t)p.mem, 8);
	r = ibv_wr_complete(p.x);
	report(r != 0 && quiet(&p), "errors", "%d requests on a %d-deep SQ -> %s, nothing posted",
	       4 * SQ_WR + 1, SQ_WR, r ? strerror(r) : "0");
	r = one_send(&p, 10);
	report(!r, "errors", "the QP still works: %s", r ? strerror(r) : "SEND completes");
	pair_free(&p);
}

static void case_ud(void)
{
	struct ibv_cq *cq = ibv_create_cq(C.ctx, 16, NULL, NULL, 0);
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = (uint8_t)C.ib_port };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = (uint8_t)C.ib_port, .qkey = QKEY };
	struct ibv_qp *s, *d;
	struct ibv_qp_ex *x;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_wc wc[2];
	uint8_t *mem, inl[24];
	int r, n, i;

	if (!cq || posix_memalign((void **)&mem, 4096, 4096))
		vt_die("ud: %s", strerror(errno));
	memset(mem, 0, 4096);
	mr = ibv_reg_mr(C.pd, mem, 4096, IBV_ACCESS_LOCAL_WRITE);
	s = create_qp(cq, IBV_QPT_UD, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM);
	d = create_qp(cq, IBV_QPT_UD, 0);
	if (!mr || !s || !d)
		vt_die("ud: %s", strerror(errno));
	x = ibv_qp_to_qp_ex(s);
	for (i = 0; i < 2; i++) {
		struct ibv_qp *q = i ? d : s;

		a.qp_state = IBV_QPS_INIT;
		r = ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
		a.qp_state = IBV_QPS_RTR;
		r = r ? r : ibv_modify_qp(q, &a, IBV_QP_STATE);
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = 1;
		r = r ? r : ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
		if (r)
			vt_die("ud: QP to RTS: %s", strerror(r));
	}
	ah_attr.dlid = vt_lid(&C);
	ah_attr.grh.dgid = C.gid;
	ah_attr.grh.sgid_index = (uint8_t)C.gid_idx;
	ah_attr.grh.hop_limit = 64;
	ah = ibv_create_ah(C.pd, &ah_attr);
	if (!ah || !x)
		vt_die("ud: %s", !x ? "ibv_qp_to_qp_ex NULL" : strerror(errno));
	vt_fill(mem, 512, 2, 1);
	vt_fill(inl, sizeof(inl), 2, 2);
	post_recv(d, mr, mem + 1024, 40 + 512, 21);
	post_recv(d, mr, mem + 2048, 40 + 512, 22);
	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 31;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, d->qp_num, QKEY);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)mem, 512);
	x->wr_id = 32;
	ibv_wr_send_imm(x, htobe32(77));
	ibv_wr_set_inline_data(x, inl, sizeof(inl));
	ibv_wr_set_ud_addr(x, ah, d->qp_num, QKEY);
	r = ibv_wr_complete(x);
	n = poll_qp(cq, s, wc, 2, 30);
	report(!r && n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
	       wc[0].wr_id == 31 && wc[1].wr_id == 32, "ud", "two UD SENDs: complete -> %s, %d completions",
	       r ? strerror(r) : "0", n);
	n = poll_qp(cq, d, wc, 2, 30);
	report(n == 2 && wc[0].byte_len == 40 + 512 && !memcmp(mem + 1024 + 40, mem, 512) &&
	       wc[1].byte_len == 40 + sizeof(inl) && (wc[1].wc_flags & IBV_WC_WITH_IMM) &&
	       be32toh(wc[1].imm_data) == 77 && !memcmp(mem + 2048 + 40, inl, sizeof(inl)), "ud",
	       "receiver: %d of 2, data and immediate after the GRH", n);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(s);
	ibv_destroy_qp(d);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	free(mem);
}

/* One signaled request on @x, built by @build; its completion in *wc. */
static int mw_one(struct ibv_qp_ex *x, struct ibv_cq *cq, struct ibv_qp *qp, struct ibv_wc *wc,
		  void (*build)(struct ibv_qp_ex *, void *), void *arg)
{
	int r;

	ibv_wr_start(x);
	x->wr_flags = IBV_SEND_SIGNALED;
	x->wr_id = 30;
	build(x, arg);
	r = ibv_wr_complete(x);
	if (r)
		return r;
	return poll_qp(cq, qp, wc, 1, 30) == 1 ? 0 : ETIMEDOUT;
}

struct mw_args {
	struct ibv_mw *mw;
	uint32_t key;
	struct ibv_mw_bind_info bi;
	uint32_t lkey;
	uint8_t *src, *dst;
};

static void mw_bind(struct ibv_qp_ex *x, void *arg)
{
	struct mw_args *m = arg;

	ibv_wr_bind_mw(x, m->mw, m->key, &m->bi);
}

static void mw_inv(struct ibv_qp_ex *x, void *arg)
{
	ibv_wr_local_inv(x, ((struct mw_args *)arg)->key);
}

static void mw_write(struct ibv_qp_ex *x, void *arg)
{
	struct mw_args *m = arg;

	ibv_wr_rdma_write(x, m->key, (uintptr_t)m->dst);
	ibv_wr_set_sge(x, m->lkey, (uintptr_t)m->src, 64);
}

static const char *wc_str(int r, const struct ibv_wc *wc)
{
	return r ? strerror(r) : ibv_wc_status_str(wc->status);
}

static void case_mw(void)
{
	struct ibv_qp_ex *xb;
	struct mw_args m;
	struct ibv_mr *mr;
	struct ibv_wc wc = { 0 };
	struct pair p;
	int r;

	if (!(C.dev_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW)) {
		printf("SKIP mw       the device offers no memory windows\n");
		return;
	}
	pair_ops = WR_RC_OPS | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
	pair_new(&p);
	pair_ops = WR_RC_OPS;
	xb = ibv_qp_to_qp_ex(p.b);
	mr = ibv_reg_mr(C.pd, p.mem + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	memset(&m, 0, sizeof(m));
	m.mw = ibv_alloc_mw(C.pd, IBV_MW_TYPE_2);
	if (!xb || !mr || !m.mw)
		vt_die("mw: %s", strerror(errno));
	m.key = ibv_inc_rkey(m.mw->rkey);
	m.bi = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)p.mem + 4096, .length = 256,
					  .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	m.lkey = p.mr->lkey;
	m.src = p.mem;
	m.dst = p.mem + 4096 + 8;
	r = mw_one(xb, p.cqb, p.b, &wc, mw_bind, &m);
	report(!r && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW, "mw",
	       "ibv_wr_bind_mw type 2 (rkey %#x): %s, opcode %d", m.key, wc_str(r, &wc), r ? -1 : (int)wc.opcode);
	vt_fill(p.mem, 64, 5, 5);
	r = mw_one(p.x, p.cq, p.a, &wc, mw_write, &m);
	report(!r && wc.status == IBV_WC_SUCCESS && !memcmp(m.dst, m.src, 64), "mw",
	       "RDMA WRITE through the window: %s, bytes %s", wc_str(r, &wc),
	       memcmp(m.dst, m.src, 64) ? "differ" : "arrived");
	r = mw_one(xb, p.cqb, p.b, &wc, mw_inv, &m);
	report(!r && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV, "mw",
	       "ibv_wr_local_inv: %s, opcode %d", wc_str(r, &wc), r ? -1 : (int)wc.opcode);
	r = mw_one(p.x, p.cq, p.a, &wc, mw_write, &m);
	report(!r && wc.status == IBV_WC_REM_ACCESS_ERR, "mw", "RDMA WRITE through the freed window: %s",
	       wc_str(r, &wc));
	pair_free(&p);
	r = ibv_dealloc_mw(m.mw);
	if (!r)
		r = ibv_dereg_mr(mr);
	report(!r, "mw", "dealloc the window, dereg its MR: %s", r ? strerror(r) : "ok");
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "qp-ex", case_qp_ex }, { "rc-ops", case_rc_ops }, { "abort", case_abort },
		{ "errors", case_errors }, { "ud", case_ud }, { "mw", case_mw },
	};

	vt_prog = "cnuas-wrapi";
	vt_opts_default(&O);
	O.timeout = 12;
	O.retry_cnt = 3;
	O.rnr_retry = 3;
	vt_run_cases(argc, argv, &C, &O, cases, sizeof(cases) / sizeof(cases[0]));
	printf("cnuas-wrapi: %d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
