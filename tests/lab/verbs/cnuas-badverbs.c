// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-badverbs: bad verbs arguments on one node; each case prints
 * PASS/FAIL (SKIP when the device lacks the feature). What we assert is
 * what ib_core and hardware HCAs (mlx5) return, and what the IBA says:
 *
 *  caps          ibv_create_qp with max_send_wr / max_recv_wr / max_send_sge
 *                over the device limits -> NULL, errno EINVAL;
 *                ibv_create_cq with cqe > max_cqe -> NULL, EINVAL
 *  state         RESET->RTR, RESET->RTS, INIT->RTS -> EINVAL
 *                (ib_modify_qp_is_ok); the QP stays usable
 *  access        ibv_reg_mr REMOTE_WRITE or REMOTE_ATOMIC without
 *                LOCAL_WRITE -> EINVAL (IBA 10.6.3.1, ib_core)
 *  zero-mr       ibv_reg_mr of 0 bytes -> EINVAL (ib_umem_get refuses an
 *                empty range); a 0-byte SEND with no SGE still completes
 *  bad-rkey      RDMA WRITE / READ with a wrong rkey, beyond the MR, or to
 *                an MR without remote access -> IBV_WC_REM_ACCESS_ERR, then
 *                the QP is in ERR and the next WR flushes (WR_FLUSH_ERR)
 *  atomic-align  CMP_AND_SWP / FETCH_AND_ADD to an address that is not
 *                8-byte aligned -> IBV_WC_REM_INV_REQ_ERR (IBA: the
 *                responder NAKs "invalid request"), then the QP is in ERR;
 *                or ibv_post_send refuses it with EINVAL (rxe's provider)
 *  resize-cq     ibv_resize_cq below the CQEs waiting in it or above
 *                max_cqe -> EINVAL, nothing lost; larger and smaller
 *                resizes keep the waiting CQEs in order, and the CQ keeps
 *                working
 *  mcast         ibv_attach_mcast with a unicast GID, or on an RC QP ->
 *                EINVAL (ib_attach_mcast's checks; rxe agrees); attaching a UD
 *                QP twice is no error (uverbs dedups), detaching a group
 *                it is not in -> EINVAL; destroying an attached QP ->
 *                EBUSY (uverbs), after the detach it goes; on an IB port
 *                the group is an MGID (ff12:401b:ffff::ef01:23d, 0xff
 *                first) with a multicast LID (0xc161), the unicast GID the
 *                port's own: on IB ib_attach_mcast wants a multicast LID
 *  async         affiliated asynchronous events: SRQ_LIMIT_REACHED once
 *                an SRQ falls below its armed limit (not before; then the
 *                limit reads 0, disarmed, IBA 10.2.9.4), QP_ACCESS_ERR on
 *                the responder QP of a WRITE with a bad rkey (as mlx5)
 *  mw-revoke     a 32 MiB READ through a type 1 window that is unbound
 *                while its responses stream -> IBV_WC_REM_ACCESS_ERR and
 *                the rest is not read (each response resolves the key)
 *  qp-access     WRITE, READ and ATOMIC to a responder QP whose access
 *                flags lack that right -> IBV_WC_REM_ACCESS_ERR, target
 *                untouched, even though the MR grants it; a QP with
 *                max_dest_rd_atomic 0 serves no READ (NAK)
 *  mw            memory windows: type 1 bound with ibv_bind_mw and type 2
 *                with IBV_WR_BIND_MW carry WRITEs and READs (bytes
 *                compared) inside the window and IBV_WC_REM_ACCESS_ERR
 *                outside it; LOCAL_INV and SEND with Invalidate free a
 *                type 2 window, after which it fails; a zero-length
 *                ibv_bind_mw unbinds a type 1; dereg of the MR unbinds
 *                its windows
 * The RC cases run over a loopback pair of QPs on the same port.
 */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int npass, nfail, nskip;
static int post_err;	/* ibv_post_send's return of the last run_wr */
static struct vt_ctx C;
static struct vt_opts O;

#define REPORT(ok, name, ...) do { bool ok_ = (ok); \
	printf("%s %-14s ", ok_ ? "PASS" : "FAIL", name); printf(__VA_ARGS__); putchar('\n'); \
	fflush(stdout); if (ok_) npass++; else nfail++; } while (0)
#define SKIP(name, ...) do { printf("SKIP %-14s ", name); printf(__VA_ARGS__); putchar('\n'); nskip++; } while (0)

static void expect_einval_qp(const char *what, struct ibv_qp_init_attr a)
{
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp(C.pd, &a);
	REPORT(!qp && errno == EINVAL, "caps", "%s -> %s (errno %d %s)", what, qp ? "created" : "NULL",
	       errno, strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
}

static void case_caps(void)
{
	struct ibv_cq *cq = ibv_create_cq(C.ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr ok = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 } }, a;
	char what[96];

	if (!cq)
		vt_die("ibv_create_cq: %s", strerror(errno));
	a = ok;
	a.cap.max_send_wr = (uint32_t)C.dev_attr.max_qp_wr + 1;
	snprintf(what, sizeof(what), "max_send_wr %u > max_qp_wr %d", a.cap.max_send_wr, C.dev_attr.max_qp_wr);
	expect_einval_qp(what, a);
	a = ok;
	a.cap.max_recv_wr = (uint32_t)C.dev_attr.max_qp_wr + 1;
	snprintf(what, sizeof(what), "max_recv_wr %u > max_qp_wr", a.cap.max_recv_wr);
	expect_einval_qp(what, a);
	a = ok;
	a.cap.max_send_sge = (uint32_t)C.dev_attr.max_sge + 1;
	snprintf(what, sizeof(what), "max_send_sge %u > max_sge %d", a.cap.max_send_sge, C.dev_attr.max_sge);
	expect_einval_qp(what, a);
	a = ok;
	a.cap.max_recv_sge = (uint32_t)C.dev_attr.max_sge + 1;
	snprintf(what, sizeof(what), "max_recv_sge %u > max_sge", a.cap.max_recv_sge);
	expect_einval_qp(what, a);

	struct ibv_cq *big;

	errno = 0;
	big = ibv_create_cq(C.ctx, C.dev_attr.max_cqe + 1, NULL, NULL, 0);
	REPORT(!big && errno == EINVAL, "caps", "create_cq cqe %d > max_cqe %d -> %s (errno %d %s)",
	       C.dev_attr.max_cqe + 1, C.dev_attr.max_cqe, big ? "created" : "NULL", errno, strerror(errno));
	if (big)
		ibv_destroy_cq(big);
	/* the limits themselves are fine */
	a = ok;
	a.cap.max_send_sge = (uint32_t)C.dev_attr.max_sge;
	struct ibv_qp *qp = ibv_create_qp(C.pd, &a);

	REPORT(qp != NULL, "caps", "max_send_sge = max_sge %d -> %s", C.dev_attr.max_sge,
	       qp ? "created" : strerror(errno));
	if (qp)
		ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

static void case_state(void)
{
	struct ibv_cq *cq = ibv_create_cq(C.ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp = cq ? vt_create_rc(&C, cq, cq, 4, 1) : NULL;
	struct ibv_qp_attr a;
	int r;

	if (!qp)
		vt_die("ibv_create_qp: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	REPORT(r == EINVAL, "state", "RESET->RTS -> %d (%s)", r, strerror(r));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	REPORT(r == EINVAL, "state", "RESET->RTR -> %d (%s)", r, strerror(r));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)C.ib_port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE);	/* INIT needs pkey, port, access */
	REPORT(r == EINVAL, "state", "RESET->INIT without required attributes -> %d (%s)", r, strerror(r));
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	REPORT(r == 0, "state", "RESET->INIT -> %d (%s)", r, strerror(r));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 1;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	REPORT(r == EINVAL, "state", "INIT->RTS -> %d (%s)", r, strerror(r));
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	r = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	REPORT(r == 0 && a.qp_state == IBV_QPS_INIT, "state", "still INIT after the refused transitions (state %d)",
	       a.qp_state);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

static void case_access(void)
{
	static char buf[8192] __attribute__((aligned(4096)));
	static const struct { int flags; const char *name; } bad[] = {
		{ IBV_ACCESS_REMOTE_WRITE, "REMOTE_WRITE without LOCAL_WRITE" },
		{ IBV_ACCESS_REMOTE_ATOMIC, "REMOTE_ATOMIC without LOCAL_WRITE" },
		{ IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, "REMOTE_WRITE|REMOTE_READ without LOCAL_WRITE" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ibv_mr *mr;

		errno = 0;
		mr = ibv_reg_mr(C.pd, buf, sizeof(buf), bad[i].flags);
		REPORT(!mr && errno == EINVAL, "access", "reg_mr %s -> %s (errno %d %s)", bad[i].name,
		       mr ? "registered" : "NULL", errno, strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
	}
	struct ibv_mr *mr = ibv_reg_mr(C.pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_READ);

	REPORT(mr != NULL, "access", "reg_mr REMOTE_READ alone -> %s", mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
}

/* ---- loopback RC pair ---- */

struct pair {
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	uint8_t *mem;		/* 4 pages: a's local buffer, b's target */
	struct ibv_mr *la, *rb, *ro;	/* a local; b remote r/w/atomic; b local-only */
};

/* A loopback pair; b takes its receives from srq when one is given. */
/*
 * A loopback pair; b, the responder, enables the remote rights acc_b and
 * serves rd_b READs/atomics at once.
 */
static void pair_new_qp(struct pair *p, struct ibv_srq *srq, int acc_b, int rd_b)
{
	struct vt_peer pa = { 0 }, pb = { 0 };
	struct ibv_qp_init_attr ib = { .srq = srq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_send_sge = 1 } };
	int r;

	memset(p, 0, sizeof(*p));
	if (posix_memalign((void **)&p->mem, 4096, 4 * 4096))
		vt_die("out of memory");
	memset(p->mem, 0x5a, 4 * 4096);
	p->cq = ibv_create_cq(C.ctx, 32, NULL, NULL, 0);
	p->la = ibv_reg_mr(C.pd, p->mem, 4096, IBV_ACCESS_LOCAL_WRITE);
	p->rb = ibv_reg_mr(C.pd, p->mem + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	p->ro = ibv_reg_mr(C.pd, p->mem + 8192, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!p->cq || !p->la || !p->rb || !p->ro)
		vt_die("loopback pair: %s", strerror(errno));
	p->a = vt_create_rc(&C, p->cq, p->cq, 8, 1);
	ib.send_cq = ib.recv_cq = p->cq;
	p->b = srq ? ibv_create_qp(C.pd, &ib) : vt_create_rc(&C, p->cq, p->cq, 8, 1);
	if (!p->a || !p->b)
		vt_die("loopback pair: ibv_create_qp: %s", strerror(errno));
	pa.qpn = p->a->qp_num;
	pa.psn = 100;
	pb.qpn = p->b->qp_num;
	pb.psn = 200;
	vt_peer_addr(&C, &pa);
	vt_peer_addr(&C, &pb);
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC;

	struct vt_opts ob = O;

	ob.max_dest_rd_atomic = rd_b;
	r = vt_connect_rc(&C, p->a, &O, pa.psn, &pb, acc);
	if (!r)
		r = vt_connect_rc(&C, p->b, &ob, pb.psn, &pa, acc_b);
	if (r)
		vt_die("loopback pair to RTS: %s", strerror(r));
}

#define ALL_REMOTE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static void pair_new_srq(struct pair *p, struct ibv_srq *srq)
{
	pair_new_qp(p, srq, ALL_REMOTE, 1);
}

static void pair_new(struct pair *p)
{
	pair_new_srq(p, NULL);
}

static void pair_free(struct pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
	ibv_dereg_mr(p->la);
	ibv_dereg_mr(p->rb);
	ibv_dereg_mr(p->ro);
	ibv_destroy_cq(p->cq);
	free(p->mem);
}

/* Post one WR on a, wait for its completion; returns the status or -1. */
static int run_wr(struct pair *p, enum ibv_wr_opcode op, uint32_t len, uint64_t raddr, uint32_t rkey,
		  uint64_t cmp, uint64_t swap)
{
	struct ibv_sge sg = { .addr = (uintptr_t)p->mem, .length = len, .lkey = p->la->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sg, .num_sge = len ? 1 : 0, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = cmp;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	post_err = ibv_post_send(p->a, &wr, &bad);
	if (post_err)
		return -2;
	/* skip b's completions (none expected: it posts nothing) */
	do {
		if (vt_poll_one(p->cq, &wc, 30))
			return -1;
	} while (wc.qp_num != p->a->qp_num);
	return wc.status;
}

static const char *st(int s)
{
	static char b[64];

	if (s == -2) {
		snprintf(b, sizeof(b), "post failed: %s", strerror(post_err));
		return b;
	}
	return s == -1 ? "no completion in 30 s" : ibv_wc_status_str((enum ibv_wc_status)s);
}

static void qp_in_error_then_flush(struct pair *p, const char *name)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int s;

	memset(&a, 0, sizeof(a));
	ibv_query_qp(p->a, &a, IBV_QP_STATE, &ia);
	REPORT(a.qp_state == IBV_QPS_ERR, name, "requester QP state after the error: %d (want ERR %d)", a.qp_state,
	       IBV_QPS_ERR);
	s = run_wr(p, IBV_WR_RDMA_WRITE, 8, (uintptr_t)p->mem + 4096, p->rb->rkey, 0, 0);
	REPORT(s == IBV_WC_WR_FLUSH_ERR, name, "next WR on the errored QP -> %s", st(s));
}

static void case_bad_rkey(void)
{
	struct pair p;
	int s;
	uint64_t tgt;

	pair_new(&p);
	tgt = (uintptr_t)p.mem + 4096;
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, tgt, p.rb->rkey, 0, 0);
	REPORT(s == IBV_WC_SUCCESS, "bad-rkey", "loopback RDMA WRITE with the right rkey -> %s", st(s));
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, tgt, p.rb->rkey ^ 0x5a5a00, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR, "bad-rkey", "RDMA WRITE with a wrong rkey -> %s", st(s));
	qp_in_error_then_flush(&p, "bad-rkey");
	pair_free(&p);

	pair_new(&p);
	s = run_wr(&p, IBV_WR_RDMA_READ, 64, (uintptr_t)p.mem + 4096, p.rb->rkey + 0x100, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR, "bad-rkey", "RDMA READ with a wrong rkey -> %s", st(s));
	pair_free(&p);

	pair_new(&p);
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)p.mem + 4096 + 4096 - 32, p.rb->rkey, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR, "bad-rkey", "RDMA WRITE past the end of the MR -> %s", st(s));
	pair_free(&p);

	pair_new(&p);
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)p.mem + 8192, p.ro->rkey, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR, "bad-rkey", "RDMA WRITE to an MR without REMOTE_WRITE -> %s", st(s));
	pair_free(&p);
}

/*
 * The responder QP's access flags gate each remote operation whatever the
 * MR allows (rdma-core's test_*_invalid_qp_access; rxe and mlx5 agree).
 */
static void case_qp_access(void)
{
	static const struct {
		enum ibv_wr_opcode op;
		int right;
		const char *name;
	} ops[] = {
		{ IBV_WR_RDMA_WRITE, IBV_ACCESS_REMOTE_WRITE, "RDMA WRITE" },
		{ IBV_WR_RDMA_READ, IBV_ACCESS_REMOTE_READ, "RDMA READ" },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_ACCESS_REMOTE_ATOMIC, "FETCH_AND_ADD" },
	};
	struct pair p;
	int s;

	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		uint64_t tgt;

		pair_new_qp(&p, NULL, ALL_REMOTE & ~ops[i].right, 1);
		tgt = (uintptr_t)p.mem + 4096;
		memset(p.mem + 4096, 0x11, 64);
		s = run_wr(&p, ops[i].op, ops[i].op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : 64, tgt,
			   p.rb->rkey, 1, 0);
		REPORT(s == IBV_WC_REM_ACCESS_ERR && p.mem[4096] == 0x11, "qp-access",
		       "%s to a QP without that right (the MR has it) -> %s, target %s", ops[i].name,
		       st(s), p.mem[4096] == 0x11 ? "untouched" : "CHANGED");
		pair_free(&p);
		pair_new_qp(&p, NULL, ops[i].right | IBV_ACCESS_LOCAL_WRITE, 1);
		s = run_wr(&p, ops[i].op, ops[i].op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 8 : 64,
			   (uintptr_t)p.mem + 4096, p.rb->rkey, 1, 0);
		REPORT(s == IBV_WC_SUCCESS, "qp-access", "%s to a QP with only that right -> %s",
		       ops[i].name, st(s));
		pair_free(&p);
	}
	/* max_dest_rd_atomic 0: no responder resources, so no READ at all */
	pair_new_qp(&p, NULL, ALL_REMOTE, 0);
	s = run_wr(&p, IBV_WR_RDMA_READ, 64, (uintptr_t)p.mem + 4096, p.rb->rkey, 0, 0);
	REPORT(s == IBV_WC_REM_INV_REQ_ERR || s == IBV_WC_REM_ACCESS_ERR, "qp-access",
	       "RDMA READ to a QP with max_dest_rd_atomic 0 -> %s", st(s));
	pair_free(&p);
}

static void case_zero_mr(void)
{
	static char buf[4096] __attribute__((aligned(4096)));
	struct ibv_mr *mr;
	struct pair p;
	int s;

	errno = 0;
	mr = ibv_reg_mr(C.pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	REPORT(!mr && errno == EINVAL, "zero-mr", "reg_mr of 0 bytes -> %s (errno %d %s)",
	       mr ? "registered" : "NULL", errno, strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);
	/* a 0-byte RDMA WRITE needs no valid rkey-covered range and succeeds */
	pair_new(&p);
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 0, (uintptr_t)p.mem + 4096, p.rb->rkey, 0, 0);
	REPORT(s == IBV_WC_SUCCESS, "zero-mr", "0-byte RDMA WRITE (no SGE) -> %s", st(s));
	pair_free(&p);
}

/*
 * Unaligned atomics: the IBA has the responder NAK them (invalid request ->
 * IBV_WC_REM_INV_REQ_ERR at the requester); rdma-core's rxe provider
 * refuses them at post time with EINVAL. Either is what an HCA does.
 */
#define UNALIGNED_OK(s) ((s) == IBV_WC_REM_INV_REQ_ERR || ((s) == -2 && post_err == EINVAL))

static void case_atomic_align(void)
{
	struct pair p;
	int s;

	if (C.dev_attr.atomic_cap == IBV_ATOMIC_NONE) {
		SKIP("atomic-align", "device has no atomics (atomic_cap NONE)");
		return;
	}
	pair_new(&p);
	s = run_wr(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, (uintptr_t)p.mem + 4096, p.rb->rkey, 1, 0);
	REPORT(s == IBV_WC_SUCCESS, "atomic-align", "aligned FETCH_AND_ADD -> %s", st(s));
	s = run_wr(&p, IBV_WR_ATOMIC_CMP_AND_SWP, 8, (uintptr_t)p.mem + 4096 + 4, p.rb->rkey, 0, 1);
	REPORT(UNALIGNED_OK(s), "atomic-align", "CMP_AND_SWP at 8n+4 -> %s", st(s));
	if (s >= 0)
		qp_in_error_then_flush(&p, "atomic-align");
	pair_free(&p);
	pair_new(&p);
	s = run_wr(&p, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, (uintptr_t)p.mem + 4096 + 1, p.rb->rkey, 1, 0);
	REPORT(UNALIGNED_OK(s), "atomic-align", "FETCH_AND_ADD at 8n+1 -> %s", st(s));
	pair_free(&p);
}

/* Post n signaled 8-byte WRITEs a -> b with wr_id first..first+n-1. */
static int post_writes(struct pair *p, int n, uint64_t first)
{
	struct ibv_sge sg = { .addr = (uintptr_t)p->mem, .length = 8, .lkey = p->la->lkey };
	struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int i, r;

	wr.wr.rdma.remote_addr = (uintptr_t)p->mem + 4096;
	wr.wr.rdma.rkey = p->rb->rkey;
	for (i = 0; i < n; i++) {
		wr.wr_id = first + i;
		r = ibv_post_send(p->a, &wr, &bad);
		if (r)
			return r;
	}
	return 0;
}

/* Poll n completions: wr_id first.. in order, all successful? */
static bool poll_writes(struct pair *p, int n, uint64_t first)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < n; i++)
		if (vt_poll_one(p->cq, &wc, 30) || wc.status != IBV_WC_SUCCESS || wc.wr_id != first + i)
			return false;
	return true;
}

static void case_resize_cq(void)
{
	struct ibv_device_attr da;
	struct pair p;
	bool ok;
	int r;

	if (ibv_query_device(C.ctx, &da))
		vt_die("ibv_query_device: %s", strerror(errno));
	pair_new(&p);		/* a 32-entry CQ, 8 send WRs */
	r = post_writes(&p, 8, 100);
	if (r) {
		REPORT(0, "resize-cq", "posting 8 WRITEs: %s", strerror(r));
		pair_free(&p);
		return;
	}
	sleep(2);		/* loopback: all 8 CQEs are in by now */
	r = ibv_resize_cq(p.cq, 4);
	REPORT(r == EINVAL, "resize-cq", "to 4 with 8 CQEs waiting -> %s", r ? strerror(r) : "resized");
	r = ibv_resize_cq(p.cq, da.max_cqe + 1);
	REPORT(r == EINVAL, "resize-cq", "to max_cqe + 1 (%d) -> %s", da.max_cqe + 1,
	       r ? strerror(r) : "resized");
	r = ibv_resize_cq(p.cq, 100);
	REPORT(!r && p.cq->cqe >= 100, "resize-cq", "to 100 with 8 waiting -> %s, cqe %d",
	       r ? strerror(r) : "ok", p.cq->cqe);
	ok = poll_writes(&p, 8, 100);	/* REPORT evaluates its test twice */
	REPORT(ok, "resize-cq", "the 8 waiting CQEs after the resize, in order");
	ok = !post_writes(&p, 8, 200) && poll_writes(&p, 8, 200);
	REPORT(ok, "resize-cq", "8 more WRITEs complete on the larger CQ");
	r = ibv_resize_cq(p.cq, 16);
	REPORT(!r && p.cq->cqe >= 16 && p.cq->cqe < 100, "resize-cq", "empty, down to 16 -> %s, cqe %d",
	       r ? strerror(r) : "ok", p.cq->cqe);
	ok = !post_writes(&p, 8, 300) && poll_writes(&p, 8, 300);
	REPORT(ok, "resize-cq", "8 more WRITEs complete on the smaller CQ");
	pair_free(&p);
}

static void mcast_gid(union ibv_gid *g, uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	g->raw[12] = a;
	g->raw[13] = b;
	g->raw[14] = c;
	g->raw[15] = d;
}

static struct ibv_qp *ud_qp(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				      .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
					       .max_recv_sge = 1 } };

	return ibv_create_qp(C.pd, &a);
}

static void case_mcast(void)
{
	union ibv_gid grp, uni;
	struct ibv_qp *ud;
	struct pair p;
	int r;
	uint16_t mlid = 0;
	const char *gname = "239.1.2.61", *uname = "::ffff:198.18.0.1";

	mcast_gid(&grp, 239, 1, 2, 61);
	mcast_gid(&uni, 198, 18, 0, 1);
	if (C.port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND) {
		/* an IB group: an MGID (0xff first) and a multicast LID */
		grp.raw[0] = 0xff;
		grp.raw[1] = 0x12;
		grp.raw[2] = 0x40;
		grp.raw[3] = 0x1b;
		grp.raw[4] = 0xff;
		grp.raw[5] = 0xff;
		mlid = 0xc161;
		uni = C.gid;
		gname = "ff12:401b:ffff::ef01:23d (MLID 0xc161)";
		uname = "the port GID";
	}
	pair_new(&p);
	ud = ud_qp(p.cq);
	if (!ud) {
		REPORT(0, "mcast", "ibv_create_qp(UD): %s", strerror(errno));
		pair_free(&p);
		return;
	}
	r = ibv_attach_mcast(ud, &uni, mlid);
	REPORT(r == EINVAL, "mcast", "attach UD QP to unicast %s -> %s", uname,
	       r ? strerror(r) : "attached");
	if (!r)
		ibv_detach_mcast(ud, &uni, mlid);
	r = ibv_attach_mcast(p.a, &grp, mlid);
	REPORT(r == EINVAL, "mcast", "attach RC QP -> %s", r ? strerror(r) : "attached");
	if (!r)
		ibv_detach_mcast(p.a, &grp, mlid);
	r = ibv_detach_mcast(ud, &grp, mlid);
	REPORT(r == EINVAL, "mcast", "detach from a group not joined -> %s", r ? strerror(r) : "detached");
	r = ibv_attach_mcast(ud, &grp, mlid);
	REPORT(!r, "mcast", "attach UD QP to %s -> %s", gname, r ? strerror(r) : "ok");
	r = ibv_attach_mcast(ud, &grp, mlid);
	REPORT(!r, "mcast", "the same attach again -> %s", r ? strerror(r) : "ok");
	r = ibv_destroy_qp(ud);
	REPORT(r == EBUSY, "mcast", "destroy while attached -> %s (uverbs wants a detach first)",
	       r ? strerror(r) : "destroyed");
	if (!r)
		ud = ud_qp(p.cq);
	r = ud ? ibv_detach_mcast(ud, &grp, mlid) : errno;
	REPORT(!r, "mcast", "detach -> %s", r ? strerror(r) : "ok");
	r = ud ? ibv_destroy_qp(ud) : errno;
	REPORT(!r, "mcast", "then destroy -> %s", r ? strerror(r) : "ok");
	pair_free(&p);
}

/*
 * Wait for an affiliated asynchronous event of this type on elem (a QP or
 * an SRQ); every event read on the way is acknowledged. true if it came.
 */
static bool got_async(enum ibv_event_type type, const void *elem, double timeout_s)
{
	struct pollfd pfd = { .fd = C.ctx->async_fd, .events = POLLIN };
	double end = vt_now() + timeout_s;
	struct ibv_async_event ev;
	bool found = false;

	fcntl(pfd.fd, F_SETFL, fcntl(pfd.fd, F_GETFL) | O_NONBLOCK);
	while (!found && vt_now() < end) {
		if (poll(&pfd, 1, 50) <= 0 || ibv_get_async_event(C.ctx, &ev))
			continue;
		if (ev.event_type == type)
			found = type == IBV_EVENT_SRQ_LIMIT_REACHED ? ev.element.srq == elem :
								      ev.element.qp == elem;
		ibv_ack_async_event(&ev);
	}
	return found;
}

static void case_async(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq_attr lim = { .srq_limit = 8 };
	struct ibv_recv_wr rwr = { .num_sge = 1 }, *bad;
	struct ibv_srq *srq = ibv_create_srq(C.pd, &sa);
	struct ibv_sge sg;
	struct pair p;
	int i, r, s;

	if (!srq)
		vt_die("ibv_create_srq: %s", strerror(errno));
	pair_new_srq(&p, srq);
	sg = (struct ibv_sge){ .addr = (uintptr_t)p.mem + 8192, .length = 64, .lkey = p.ro->lkey };
	rwr.sg_list = &sg;
	for (i = 0, r = 0; i < 16 && !r; i++)
		r = ibv_post_srq_recv(srq, &rwr, &bad);
	if (!r)
		r = ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT);
	REPORT(!r, "async", "16 receives on an SRQ, limit armed at 8 -> %s", r ? strerror(r) : "ok");
	/* 8 SENDs leave 8 receives: not below the limit yet */
	for (i = 0, s = IBV_WC_SUCCESS; i < 8 && s == IBV_WC_SUCCESS; i++)
		s = run_wr(&p, IBV_WR_SEND, 64, 0, 0, 0, 0);
	REPORT(s == IBV_WC_SUCCESS && !got_async(IBV_EVENT_SRQ_LIMIT_REACHED, srq, 0.5), "async",
	       "8 SENDs into the SRQ (%s): no SRQ_LIMIT_REACHED at 8 left", st(s));
	s = run_wr(&p, IBV_WR_SEND, 64, 0, 0, 0, 0);
	REPORT(s == IBV_WC_SUCCESS && got_async(IBV_EVENT_SRQ_LIMIT_REACHED, srq, 10), "async",
	       "the 9th SEND (%s) leaves 7: SRQ_LIMIT_REACHED", st(s));
	memset(&lim, 0xff, sizeof(lim));
	r = ibv_query_srq(srq, &lim);
	REPORT(!r && lim.srq_limit == 0, "async", "the limit is disarmed after the event (srq_limit %u, %s)",
	       lim.srq_limit, r ? strerror(r) : "ok");
	/* the responder QP of a bad-rkey WRITE reports a local access error */
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)p.mem + 4096, p.rb->rkey ^ 0x5a5a00, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR && got_async(IBV_EVENT_QP_ACCESS_ERR, p.b, 10), "async",
	       "RDMA WRITE with a wrong rkey (%s): QP_ACCESS_ERR on the responder QP", st(s));
	pair_free(&p);
	r = ibv_destroy_srq(srq);
	REPORT(!r, "async", "destroy the SRQ after its QP -> %s", r ? strerror(r) : "ok");
}

/* Wait for @qp's next completion on the pair's CQ (others are skipped). */
static int poll_qp(struct pair *p, struct ibv_qp *qp, struct ibv_wc *wc)
{
	do {
		if (vt_poll_one(p->cq, wc, 30))
			return -1;
	} while (wc->qp_num != qp->qp_num);
	return 0;
}

/* Post one WR on b, the responder of a's requests; its completion status. */
static int run_b(struct pair *p, struct ibv_send_wr *wr, enum ibv_wc_opcode want)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	post_err = ibv_post_send(p->b, wr, &bad);
	if (post_err)
		return -2;
	if (poll_qp(p, p->b, &wc))
		return -1;
	return wc.status == IBV_WC_SUCCESS && wc.opcode != want ? IBV_WC_GENERAL_ERR : (int)wc.status;
}

/* ibv_bind_mw of type 1 window @mw on b: the completion status, or -1/-2. */
static int bind_type1(struct pair *p, struct ibv_mw *mw, struct ibv_mw_bind_info bi, struct ibv_wc *wc)
{
	struct ibv_mw_bind b = { .wr_id = 11, .send_flags = IBV_SEND_SIGNALED, .bind_info = bi };

	post_err = ibv_bind_mw(p->b, mw, &b);
	if (post_err)
		return -2;
	return poll_qp(p, p->b, wc) ? -1 : (int)wc->status;
}

/* IBV_WR_BIND_MW of type 2 window @mw on b, 1 KiB REMOTE_WRITE at @win. */
static int bind_type2(struct pair *p, struct ibv_mw *mw, uint32_t key, struct ibv_mr *mr, uint8_t *win)
{
	struct ibv_send_wr wr = { .wr_id = 12, .opcode = IBV_WR_BIND_MW };

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)win, .length = 1024,
							  .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	return run_b(p, &wr, IBV_WC_BIND_MW);
}

/* Bytes of @d landed in order: up to the first 4 KiB page still zero. */
static size_t landed_prefix(const volatile uint8_t *d, size_t len)
{
	size_t off = 0;

	while (off < len && d[off])
		off += 4096;
	return off < len ? off : len;
}

/*
 * A long READ through a type 1 window, unbound while its responses are
 * streaming: the READ fails with IBV_WC_REM_ACCESS_ERR and the rest of the
 * buffer is not read, as every response packet resolves the key again.
 */
static void case_mw_revoke(void)
{
	const size_t len = 32 << 20;
	volatile uint8_t *dst;
	struct ibv_mr *smr, *dmr;
	uint8_t *src, *d;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	struct pair p;
	int s, rs = -1, bs = -1;
	bool in_flight, read_first = false;
	size_t landed = 0;
	double t0;

	if (!(C.dev_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW)) {
		SKIP("mw-revoke", "the device offers no memory windows");
		return;
	}
	pair_new(&p);
	if (posix_memalign((void **)&src, 4096, len) || posix_memalign((void **)&d, 4096, len))
		vt_die("out of memory");
	memset(src, 0x5a, len);
	memset(d, 0, len);
	dst = d;
	smr = ibv_reg_mr(C.pd, src, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	dmr = ibv_reg_mr(C.pd, d, len, IBV_ACCESS_LOCAL_WRITE);
	mw = ibv_alloc_mw(C.pd, IBV_MW_TYPE_1);
	if (!smr || !dmr || !mw)
		vt_die("mw-revoke: %s", strerror(errno));
	s = bind_type1(&p, mw, (struct ibv_mw_bind_info){ .mr = smr, .addr = (uintptr_t)src, .length = len,
			.mw_access_flags = IBV_ACCESS_REMOTE_READ }, &wc);
	REPORT(s == IBV_WC_SUCCESS, "mw-revoke", "bind a type 1 window over 32 MiB -> %s", st(s));

	struct ibv_sge sg = { .addr = (uintptr_t)d, .length = (uint32_t)len, .lkey = dmr->lkey };
	struct ibv_send_wr wr = { .wr_id = 21, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_mw_bind unbind = { .wr_id = 22, .send_flags = IBV_SEND_SIGNALED };

	wr.wr.rdma.remote_addr = (uintptr_t)src;
	wr.wr.rdma.rkey = mw->rkey;
	if (ibv_post_send(p.a, &wr, &bad))
		vt_die("mw-revoke: post READ: %s", strerror(errno));
	/* unbind once the first responses have landed */
	t0 = vt_now();
	while (!dst[0] && vt_now() - t0 < 20)
		;
	in_flight = dst[0] && !dst[len - 1];
	if (ibv_bind_mw(p.b, mw, &unbind))
		vt_die("mw-revoke: unbind: %s", strerror(errno));
	while (rs < 0 || bs < 0) {
		if (vt_poll_one(p.cq, &wc, 60))
			break;
		if (wc.qp_num == p.a->qp_num) {
			rs = wc.status;
			read_first = bs < 0;
		} else if (wc.qp_num == p.b->qp_num && wc.wr_id == 22) {
			bs = wc.status;
			landed = landed_prefix(dst, len);
		}
	}
	REPORT(bs == IBV_WC_SUCCESS, "mw-revoke", "unbind during the READ -> %s", st(bs));
	/*
	 * The unbind runs on the responder's send queue and the READ's
	 * responses on its receive side: on a one-vCPU guest the whole READ
	 * may be answered before the unbind is processed, and the last
	 * responses may still be on their way when the unbind completes.
	 * What is on its way is bounded by the rings and the switch's queue
	 * (a few MiB); with less than half of the READ landed when the
	 * unbind completed, the rest was answered after it and must fail.
	 */
	if (!in_flight || (read_first && rs == IBV_WC_SUCCESS))
		SKIP("mw-revoke", "the READ was not streaming when the window went (%s)",
		     !in_flight ? (dst[0] ? "first and last byte read" : "first byte never read") :
				  "it completed before the unbind");
	else if (rs == IBV_WC_SUCCESS && landed >= len / 2)
		SKIP("mw-revoke", "the READ was answered before the unbind (%zu of %zu KiB had landed when it completed)",
		     landed >> 10, len >> 10);
	else
		REPORT(rs == IBV_WC_REM_ACCESS_ERR && !dst[len - 1], "mw-revoke",
		       "32 MiB READ through the window, unbound mid-stream -> %s, last byte %s", st(rs),
		       dst[len - 1] ? "READ" : "not read");
	pair_free(&p);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(smr);
	ibv_dereg_mr(dmr);
	free(src);
	free(d);
}

static void case_mw(void)
{
	uint8_t *win1, *win2;
	struct ibv_send_wr wr;
	struct ibv_mw *mw1, *mw2;
	struct ibv_mr *mr;
	struct pair p;
	uint32_t old, k2;
	struct ibv_wc wc;
	int r, s;

	if (!(C.dev_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW)) {
		SKIP("mw", "the device offers no memory windows");
		return;
	}
	pair_new(&p);
	/* The windows grant the remote rights; the MR needs only MW_BIND. */
	mr = ibv_reg_mr(C.pd, p.mem + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	mw1 = ibv_alloc_mw(C.pd, IBV_MW_TYPE_1);
	mw2 = ibv_alloc_mw(C.pd, IBV_MW_TYPE_2);
	REPORT(mr && mw1 && mw2, "mw", "MR with MW_BIND, a type 1 and a type 2 window -> %s",
	       mr && mw1 && mw2 ? "ok" : strerror(errno));
	if (!mr || !mw1 || !mw2)
		vt_die("memory windows: %s", strerror(errno));
	win1 = p.mem + 4096 + 1024;
	win2 = p.mem + 4096 + 2048;

	/* type 1: ibv_bind_mw, any QP of the PD may use it */
	old = mw1->rkey;
	s = bind_type1(&p, mw1, (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)win1, .length = 1024,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ }, &wc);
	REPORT(s == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && mw1->rkey != old, "mw",
	       "ibv_bind_mw type 1, 1 KiB REMOTE_WRITE|READ -> %s, rkey %#x -> %#x", st(s), old, mw1->rkey);
	vt_fill(p.mem, 64, 1, 1);
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)win1 + 16, mw1->rkey, 0, 0);
	REPORT(s == IBV_WC_SUCCESS && !memcmp(win1 + 16, p.mem, 64), "mw",
	       "RDMA WRITE through the type 1 window -> %s, bytes %s", st(s),
	       memcmp(win1 + 16, p.mem, 64) ? "differ" : "arrived");
	memset(p.mem, 0, 64);
	s = run_wr(&p, IBV_WR_RDMA_READ, 64, (uintptr_t)win1 + 16, mw1->rkey, 0, 0);
	REPORT(s == IBV_WC_SUCCESS && !memcmp(win1 + 16, p.mem, 64), "mw",
	       "RDMA READ through the type 1 window -> %s, bytes %s", st(s),
	       memcmp(win1 + 16, p.mem, 64) ? "differ" : "match");
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)win1 - 32, mw1->rkey, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR, "mw", "RDMA WRITE reaching outside the window -> %s", st(s));
	pair_free(&p);

	pair_new(&p);
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)win1, mw1->rkey, 0, 0);
	REPORT(s == IBV_WC_SUCCESS, "mw", "the type 1 window on a new QP pair of the PD -> %s", st(s));

	/* type 2: bound by a work request, for the QP that bound it only */
	k2 = ibv_inc_rkey(mw2->rkey);
	s = bind_type2(&p, mw2, k2, mr, win2);
	REPORT(s == IBV_WC_SUCCESS, "mw", "IBV_WR_BIND_MW type 2 (rkey %#x), REMOTE_WRITE -> %s", k2, st(s));
	vt_fill(p.mem, 64, 2, 2);
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)win2, k2, 0, 0);
	REPORT(s == IBV_WC_SUCCESS && !memcmp(win2, p.mem, 64), "mw",
	       "RDMA WRITE through the type 2 window -> %s, bytes %s", st(s),
	       memcmp(win2, p.mem, 64) ? "differ" : "arrived");
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = k2;
	s = run_b(&p, &wr, IBV_WC_LOCAL_INV);
	REPORT(s == IBV_WC_SUCCESS, "mw", "LOCAL_INV of the type 2 window -> %s", st(s));
	k2 = ibv_inc_rkey(k2);
	s = bind_type2(&p, mw2, k2, mr, win2);
	REPORT(s == IBV_WC_SUCCESS, "mw", "bound again once free (rkey %#x) -> %s", k2, st(s));
	/* a SEND with Invalidate from a frees it on b */
	struct ibv_sge rs = { .addr = (uintptr_t)p.mem + 8192, .length = 64, .lkey = p.ro->lkey };
	struct ibv_recv_wr rw = { .wr_id = 13, .sg_list = &rs, .num_sge = 1 }, *rbad;
	struct ibv_sge ss = { .addr = (uintptr_t)p.mem, .length = 8, .lkey = p.la->lkey };
	struct ibv_send_wr sw = { .wr_id = 14, .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = k2 }, *sbad;

	r = ibv_post_recv(p.b, &rw, &rbad);
	if (!r)
		r = ibv_post_send(p.a, &sw, &sbad);
	s = r ? -2 : poll_qp(&p, p.b, &wc) ? -1 : (int)wc.status;
	post_err = r;
	REPORT(s == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == k2, "mw",
	       "SEND with Invalidate of the type 2 window -> %s, receive flags %#x rkey %#x", st(s),
	       s == IBV_WC_SUCCESS ? wc.wc_flags : 0, s == IBV_WC_SUCCESS ? wc.invalidated_rkey : 0);
	s = poll_qp(&p, p.a, &wc) ? -1 : (int)wc.status;
	REPORT(s == IBV_WC_SUCCESS, "mw", "the SEND with Invalidate completes -> %s", st(s));
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)win2, k2, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR, "mw", "RDMA WRITE through the invalidated window -> %s", st(s));
	pair_free(&p);

	/* ibv_bind_mw(3): a zero-length bind without an MR unbinds type 1 */
	pair_new(&p);
	old = mw1->rkey;
	s = bind_type1(&p, mw1, (struct ibv_mw_bind_info){ 0 }, &wc);
	REPORT(s == IBV_WC_SUCCESS && mw1->rkey != old, "mw", "zero-length ibv_bind_mw (unbind) -> %s", st(s));
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)win1, mw1->rkey, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR, "mw", "RDMA WRITE through the unbound window -> %s", st(s));
	pair_free(&p);
	pair_new(&p);
	s = bind_type1(&p, mw1, (struct ibv_mw_bind_info){ .mr = mr, .addr = (uintptr_t)win1, .length = 1024,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE }, &wc);
	REPORT(s == IBV_WC_SUCCESS, "mw", "bound again -> %s", st(s));
	pair_free(&p);

	/* deregistering the MR unbinds its windows (rxe refuses: EINVAL) */
	r = ibv_dereg_mr(mr);
	REPORT(!r, "mw", "dereg of the MR under a bound type 1 window -> %s", r ? strerror(r) : "ok");
	pair_new(&p);
	s = run_wr(&p, IBV_WR_RDMA_WRITE, 64, (uintptr_t)win1, mw1->rkey, 0, 0);
	REPORT(s == IBV_WC_REM_ACCESS_ERR, "mw", "RDMA WRITE through the window of the gone MR -> %s", st(s));
	pair_free(&p);
	r = ibv_dealloc_mw(mw1);
	if (!r)
		r = ibv_dealloc_mw(mw2);
	REPORT(!r, "mw", "dealloc both windows -> %s", r ? strerror(r) : "ok");
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "caps", case_caps }, { "state", case_state }, { "access", case_access },
		{ "zero-mr", case_zero_mr }, { "bad-rkey", case_bad_rkey }, { "atomic-align", case_atomic_align },
		{ "resize-cq", case_resize_cq }, { "mcast", case_mcast },
		{ "async", case_async }, { "mw", case_mw }, { "qp-access", case_qp_access },
		{ "mw-revoke", case_mw_revoke },
	};

	vt_prog = "cnuas-badverbs";
	vt_opts_default(&O);
	O.timeout = 12;
	O.retry_cnt = 3;
	O.rnr_retry = 3;
	vt_run_cases(argc, argv, &C, &O, cases, sizeof(cases) / sizeof(cases[0]));
	printf("cnuas-badverbs: %d passed, %d failed, %d skipped\n", npass, nfail, nskip);
	return nfail ? 1 : 0;
}
