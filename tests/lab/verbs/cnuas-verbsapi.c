// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-verbsapi: verbs that rdma-core's own test suite (its tests/ in
 * Python, pyverbs) uses the way it uses them, on loopback QPs of one port; each
 * check prints PASS/FAIL. What a case asserts is what the verbs man pages
 * say and rdma_rxe (or a hardware HCA) does, so it passes on rxe0 too
 * where rxe has the verb (rereg and parent domains: SKIP there), but for
 * the IBV_WC_WITH_INV that Linux 6.1's rxe leaves out of the receive
 * completion of a SEND with Invalidate.
 *
 *  qp-ex      ibv_create_qp_ex of RC and UD QPs with comp_mask PD only,
 *             PD | CREATE_FLAGS (no flag set: created; a flag: refused)
 *             and PD | SEND_OPS_FLAGS, caps at least the asked ones; an RC
 *             QP taken to INIT with the FLUSH rights next to the remote
 *             ones (test_qpex.py does on every RC QP); a zero-byte UD SEND
 *             with ibv_wr_send (test_qp_ex_ud_zero_size)
 *  ud-modify  a UD QP, made by ibv_create_qp and by ibv_create_qp_ex
 *             (comp_mask PD, and PD | CREATE_FLAGS with no flag), through every state with the attributes the IBA allows for
 *             UD in each transition (Q_Key in INIT->INIT, INIT->RTR,
 *             RTS->RTS, SQD->SQD, SQD->RTS; SQ PSN at RTR->RTS), each read
 *             back with ibv_query_qp (test_modify_ud_qp); SQ PSN in
 *             RTS->RTS is refused as the IBA says; a SEND with the new
 *             Q_Key arrives, one with the old is dropped
 *  mw         MWTest of test_mr.py: MRs with local write and MW bind only,
 *             windows bound with remote and local write rights: type 1 by
 *             ibv_bind_mw, type 2 by IBV_WR_BIND_MW; an RDMA WRITE through
 *             each lands (bytes compared); a zero-length type 1 rebind
 *             that names the MR, LOCAL_INV, a peer's SEND_WITH_INV and
 *             dealloc of a bound type 2 window each make the next WRITE
 *             fail with IBV_WC_REM_ACCESS_ERR; ibv_wr_bind_mw with local
 *             write only gives a window without remote write
 *             (test_qp_ex_rc_bind_mw)
 *  rereg      ibv_rereg_mr (test_mr.py's rereg tests): CHANGE_ACCESS takes
 *             remote write away (REM_ACCESS_ERR) and gives it back;
 *             CHANGE_PD makes a receive into the MR fail (the sender gets
 *             IBV_WC_REM_OP_ERR) and back works; CHANGE_TRANSLATION moves
 *             the keys to a new buffer (WRITE lands there, bytes compared);
 *             keys stay the same; an MR with a bound window refuses it
 *  cq-ex      ibv_create_cq_ex (test_cqex.py): IBV_WC_STANDARD_FLAGS and
 *             RC traffic polled with ibv_start_poll/ibv_next_poll, every
 *             field read; each wc flag alone is taken or refused with
 *             EOPNOTSUPP; too many CQEs or a bad comp_vector: EINVAL
 *  parent-domain
 *             ibv_alloc_parent_domain without and with allocators
 *             (test_parent_domain.py): MRs, RC QPs, an SRQ and an extended
 *             CQ (IBV_CQ_INIT_ATTR_MASK_PD) on it carry SENDs (bytes
 *             compared); its PD cannot go before it
 *  ud-recv    a UD SEND from the port's IPv4 and IPv6 RoCE v2 GIDs to
 *             themselves, received the way UCX's UD transport reads it
 *             (one SGE, and the GRH area split over two SGEs): byte_len
 *             counts the 40-byte GRH area, IBV_WC_GRH, src_qp, the
 *             packet's IPv4 header in the last 20 bytes of the area (its
 *             IPv6 header in all 40), and sl giving the L3 header type
 *             as ConnectX reports it (0xa IPv4, 0x9 IPv6: RoCE has no
 *             SL; UCX reads the area by it). rdma_rxe reports sl 0 and,
 *             on loopback only, leaves the IPv4 header checksum 0: those
 *             checks FAIL on rxe0.
 *             On an InfiniBand port: from the port GID to itself by LID,
 *             the GRH area the packet's IB GRH (IPVer 6, PayLen, NxtHdr
 *             0x1B, both GIDs), slid the port's LID and sl the AH's SL 5
 *  reset-cq   a QP moved to RESET leaves none of its completions in its
 *             CQ, another QP's stay (test_mr.py's restate_qps: the flush
 *             completions of the trip through ERR must not reach the next
 *             poll), as mlx4/mlx5 do; rxe keeps them (FAIL on rxe0, which
 *             passes test_mr.py only because it has no rereg)
 *  srq-resize ibv_modify_srq with IBV_SRQ_MAX_WR (test_srq.py): an SRQ
 *             with receives posted grows, ibv_query_srq shows the new
 *             size, more receives fit, and SENDs complete every receive
 *             in order with its bytes; shrinking below the receives
 *             posted fails with EINVAL and changes nothing
 *  mpe        IBA 1.5 on RC: where the device claims neither (kernels
 *             before 6.2) RC QPs with the ATOMIC WRITE or FLUSH send ops
 *             are refused with EOPNOTSUPP and MRs with the FLUSH right
 *             too; else no persistent FLUSH (refused MR right), an
 *             ATOMIC WRITE changes exactly its 8 bytes (IBV_WC_ATOMIC_WRITE)
 *             and an unaligned one is an invalid request; with
 *             ibv_wr_flush in the headers built against (rdma-core 47
 *             on, not Debian 12's 44 the image builds with) FLUSH of a
 *             range and of a whole MR completes (IBV_WC_FLUSH), on an MR
 *             without the right or asking persistence it is a remote
 *             access error. rxe's provider takes the send ops whatever
 *             the kernel offers (FAIL on rxe0 under 6.1); rxe claims
 *             persistent FLUSH (FAIL there on 6.12)
 */
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QKEY_A 0x123
#define QKEY_UD 0x11111111
#define GRH 40
#define PAGE 4096
#define FLUSH_RIGHTS ((1 << 8) | (1 << 9))	/* IBV_ACCESS_FLUSH_GLOBAL, _PERSISTENT */

static int npass, nfail;
static struct vt_ctx C;
static struct vt_opts O;

static void report(int ok, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %-13s ", ok ? "PASS" : "FAIL", name);
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

static const char *wc_str(int r, const struct ibv_wc *wc)
{
	return r ? "no completion" : ibv_wc_status_str(wc->status);
}

static int poll_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	return vt_poll_one(cq, wc, 30) ? ETIMEDOUT : 0;
}

static void *page_alloc(size_t n)
{
	void *p;

	if (posix_memalign(&p, PAGE, n * PAGE))
		vt_die("out of memory");
	memset(p, 0, n * PAGE);
	return p;
}

static int post_one(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t id, struct ibv_mr *mr,
		    void *buf, uint32_t len, uint32_t rkey, void *raddr, uint32_t ex)
{
	struct ibv_sge sg = { .addr = (uintptr_t)buf, .length = len, .lkey = mr ? mr->lkey : 0 };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = len ? 1 : 0,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = (uintptr_t)raddr;
	if (op == IBV_WR_SEND_WITH_INV || op == IBV_WR_LOCAL_INV)
		wr.invalidate_rkey = ex;
	return ibv_post_send(qp, &wr, &bad);
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, uint64_t id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	if (ibv_post_recv(qp, &wr, &bad))
		vt_die("ibv_post_recv: %s", strerror(errno));
}

/* ---- an RC pair of loopback QPs ---- */

struct pair {
	struct ibv_pd *pd;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
	struct vt_peer pa, pb;
	int access;
};

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = srq ? 0 : 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &a);
}

static int pair_connect(struct pair *p)
{
	int r = vt_connect_rc(&C, p->a, &O, p->pa.psn, &p->pb, p->access);

	return r ? r : vt_connect_rc(&C, p->b, &O, p->pb.psn, &p->pa, p->access);
}

static void pair_new(struct pair *p, struct ibv_pd *pd, int access)
{
	memset(p, 0, sizeof(*p));
	p->pd = pd;
	p->access = access;
	p->cqa = ibv_create_cq(C.ctx, 64, NULL, NULL, 0);
	p->cqb = ibv_create_cq(C.ctx, 64, NULL, NULL, 0);
	if (!p->cqa || !p->cqb)
		vt_die("ibv_create_cq: %s", strerror(errno));
	p->a = rc_qp(pd, p->cqa, NULL);
	p->b = rc_qp(pd, p->cqb, NULL);
	if (!p->a || !p->b)
		vt_die("ibv_create_qp RC: %s", strerror(errno));
	p->pa = (struct vt_peer){ .qpn = p->a->qp_num, .psn = 100 };
	p->pb = (struct vt_peer){ .qpn = p->b->qp_num, .psn = 200 };
	vt_peer_addr(&C, &p->pa);
	vt_peer_addr(&C, &p->pb);
	if (pair_connect(p))
		vt_die("RC pair to RTS: %s", strerror(errno));
}

/* Both QPs back from ERR: RESET, then RTS again (restate_qps of test_mr.py). */
static void pair_restate(struct pair *p)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct ibv_wc wc;

	if (ibv_modify_qp(p->a, &a, IBV_QP_STATE) || ibv_modify_qp(p->b, &a, IBV_QP_STATE))
		vt_die("QP to RESET: %s", strerror(errno));
	while (ibv_poll_cq(p->cqa, 1, &wc) > 0 || ibv_poll_cq(p->cqb, 1, &wc) > 0)
		;
	p->pa.psn += 1000;
	p->pb.psn += 1000;
	if (pair_connect(p))
		vt_die("RC pair back to RTS: %s", strerror(errno));
}

static void pair_free(struct pair *p)
{
	ibv_destroy_qp(p->a);
	ibv_destroy_qp(p->b);
	ibv_destroy_cq(p->cqa);
	ibv_destroy_cq(p->cqb);
}

/* One signalled WRITE from a; its status (or ETIMEDOUT as -1). */
static int write_through(struct pair *p, struct ibv_mr *smr, void *src, uint32_t len, uint32_t rkey,
			 void *dst)
{
	struct ibv_wc wc;

	if (post_one(p->a, IBV_WR_RDMA_WRITE, 1, smr, src, len, rkey, dst, 0))
		return -2;
	if (poll_wc(p->cqa, &wc))
		return -1;
	return wc.status;
}

static const char *st(int s)
{
	return s == -1 ? "no completion" : s == -2 ? "post failed" :
	       ibv_wc_status_str((enum ibv_wc_status)s);
}

/* ---- qp-ex ---- */

static struct ibv_qp *create_ex(struct ibv_cq *cq, enum ibv_qp_type t, uint32_t mask, uint32_t cflags,
				uint64_t ops, struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr_ex a = {
		.send_cq = cq, .recv_cq = cq, .qp_type = t, .comp_mask = mask, .pd = C.pd,
		.create_flags = cflags, .send_ops_flags = ops,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp;

	if (cap)
		a.cap = *cap;
	qp = ibv_create_qp_ex(C.ctx, &a);
	if (qp && cap)
		*cap = a.cap;
	return qp;
}

static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i))
		return -1;
	return a.qp_state;
}

static int ud_to_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = (uint8_t)C.ib_port, .qkey = qkey };
	int r;

	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	r = r ? r : ibv_modify_qp(qp, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x45;
	return r ? r : ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static struct ibv_ah *self_ah(struct ibv_pd *pd)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = (uint8_t)C.ib_port };

	a.dlid = vt_lid(&C);
	a.grh.dgid = C.gid;
	a.grh.sgid_index = (uint8_t)C.gid_idx;
	a.grh.hop_limit = 64;
	return ibv_create_ah(pd, &a);
}

static void case_qp_ex(void)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UD };
	struct ibv_cq *cq = ibv_create_cq(C.ctx, 256, NULL, NULL, 0);
	struct ibv_qp *qp, *s, *d;
	struct ibv_qp_attr qa;
	struct ibv_qp_cap cap, want;
	struct ibv_qp_ex *x;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_wc wc, two[2];
	uint8_t *mem;
	int r, i;

	if (!cq)
		vt_die("ibv_create_cq: %s", strerror(errno));
	for (i = 0; i < 2; i++) {
		const char *tn = types[i] == IBV_QPT_RC ? "RC" : "UD";

		want = (struct ibv_qp_cap){ .max_send_wr = C.dev_attr.max_qp_wr / 8,
					    .max_recv_wr = C.dev_attr.max_qp_wr / 8,
					    .max_send_sge = C.dev_attr.max_sge / 2,
					    .max_recv_sge = C.dev_attr.max_sge / 2 };
		cap = want;
		errno = 0;
		qp = create_ex(cq, types[i], IBV_QP_INIT_ATTR_PD, 0, 0, &cap);
		report(qp && qp_state(qp) == IBV_QPS_RESET && cap.max_send_wr >= want.max_send_wr &&
		       cap.max_recv_wr >= want.max_recv_wr && cap.max_send_sge >= want.max_send_sge &&
		       cap.max_recv_sge >= want.max_recv_sge, "qp-ex",
		       "%s, comp_mask PD: %s, caps %u/%u wr %u/%u sge", tn,
		       qp ? "created in RESET" : strerror(errno), cap.max_send_wr, cap.max_recv_wr,
		       cap.max_send_sge, cap.max_recv_sge);
		if (qp)
			ibv_destroy_qp(qp);

		cap = want;
		errno = 0;
		qp = create_ex(cq, types[i], IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS, 0, 0, &cap);
		report(qp && qp_state(qp) == IBV_QPS_RESET, "qp-ex",
		       "%s, comp_mask PD | CREATE_FLAGS, no flag set: %s", tn,
		       qp ? "created in RESET" : strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);

		errno = 0;
		qp = create_ex(cq, types[i], IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
			       IBV_QP_CREATE_SCATTER_FCS, 0, NULL);
		report(!qp && (errno == EOPNOTSUPP || errno == EINVAL), "qp-ex",
		       "%s, CREATE_FLAGS SCATTER_FCS: %s", tn, qp ? "created" : strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);

		errno = 0;
		qp = create_ex(cq, types[i], IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS, 0, IBV_QP_EX_WITH_SEND, NULL);
		report(qp && ibv_qp_to_qp_ex(qp), "qp-ex", "%s, PD | SEND_OPS_FLAGS | CREATE_FLAGS: %s", tn,
		       !qp ? strerror(errno) : ibv_qp_to_qp_ex(qp) ? "created with the API" : "no API");
		if (qp)
			ibv_destroy_qp(qp);

		/* create_qp_ex() of test_qpex.py */
		errno = 0;
		qp = create_ex(cq, types[i], IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
			       IBV_QP_EX_WITH_SEND, NULL);
		report(qp && ibv_qp_to_qp_ex(qp), "qp-ex", "%s, PD | SEND_OPS_FLAGS: %s", tn,
		       !qp ? strerror(errno) : ibv_qp_to_qp_ex(qp) ? "created with the API" : "no API");
		if (qp && types[i] == IBV_QPT_RC) {
			memset(&qa, 0, sizeof(qa));
			qa.qp_state = IBV_QPS_INIT;
			qa.port_num = (uint8_t)C.ib_port;
			qa.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_ATOMIC | FLUSH_RIGHTS;
			r = ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS);
			report(!r && qp_state(qp) == IBV_QPS_INIT, "qp-ex",
			       "RC to INIT with the remote and FLUSH rights: %s", r ? strerror(r) : "INIT");
		}
		if (qp)
			ibv_destroy_qp(qp);
	}

	/* test_qp_ex_ud_zero_size: a SEND of no byte arrives as the GRH alone. */
	mem = page_alloc(1);
	mr = ibv_reg_mr(C.pd, mem, PAGE, IBV_ACCESS_LOCAL_WRITE);
	s = create_ex(cq, IBV_QPT_UD, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
		      IBV_QP_EX_WITH_SEND, NULL);
	d = create_ex(cq, IBV_QPT_UD, IBV_QP_INIT_ATTR_PD, 0, 0, NULL);
	ah = self_ah(C.pd);
	if (!mr || !s || !d || !ah || ud_to_rts(s, QKEY_UD) || ud_to_rts(d, QKEY_UD))
		vt_die("qp-ex UD: %s", strerror(errno));
	x = ibv_qp_to_qp_ex(s);
	post_recv(d, mr, mem, GRH, 7);
	ibv_wr_start(x);
	x->wr_id = 8;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_ud_addr(x, ah, d->qp_num, QKEY_UD);
	ibv_wr_set_sge(x, mr->lkey, (uintptr_t)mem + 2048, 0);
	r = ibv_wr_complete(x);
	/* Both completions share the CQ, in either order. */
	memset(two, 0, sizeof(two));
	for (i = 0; !r && i < 2; i++) {
		r = poll_wc(cq, &wc);
		if (!r)
			two[wc.wr_id == 7] = wc;
	}
	report(two[0].wr_id == 8 && two[0].status == IBV_WC_SUCCESS, "qp-ex",
	       "UD zero-byte SEND with ibv_wr_*: %s", two[0].wr_id == 8 ?
	       ibv_wc_status_str(two[0].status) : r ? strerror(r) : "no completion");
	report(two[1].wr_id == 7 && two[1].status == IBV_WC_SUCCESS && two[1].byte_len == GRH, "qp-ex",
	       "its receive: %s, %u bytes (the GRH)", two[1].wr_id == 7 ?
	       ibv_wc_status_str(two[1].status) : "no completion", two[1].byte_len);
	ibv_destroy_ah(ah);
	ibv_destroy_qp(s);
	ibv_destroy_qp(d);
	ibv_dereg_mr(mr);
	free(mem);
	ibv_destroy_cq(cq);
}

/* ---- ud-modify ---- */

/* Modify, then read back @mask; the state and the asked values must match. */
static int ud_step(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask, const char *what, const char *tn)
{
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr i;
	int r, ok;

	r = ibv_modify_qp(qp, a, mask);
	memset(&q, 0, sizeof(q));
	if (!r)
		r = ibv_query_qp(qp, &q, mask | IBV_QP_STATE | IBV_QP_CAP, &i);
	ok = !r && q.qp_state == a->qp_state;
	if (mask & IBV_QP_QKEY)
		ok &= q.qkey == a->qkey;
	if (mask & IBV_QP_SQ_PSN)
		ok &= q.sq_psn == a->sq_psn;
	if (mask & IBV_QP_PKEY_INDEX)
		ok &= q.pkey_index == a->pkey_index;
	if (mask & IBV_QP_PORT)
		ok &= q.port_num == a->port_num;
	report(ok, "ud-modify", "%s %s: %s; query: state %d qkey %#x sq_psn %#x pkey_index %u port %u", tn,
	       what, r ? strerror(r) : "ok", q.qp_state, q.qkey, q.sq_psn, q.pkey_index, q.port_num);
	return ok;
}

/* A UD SEND with @qkey from @s to @d: did it arrive? */
static int ud_send(struct ibv_qp *s, struct ibv_qp *d, struct ibv_cq *cq, struct ibv_ah *ah,
		   struct ibv_mr *mr, uint8_t *mem, uint32_t qkey)
{
	struct ibv_sge sg = { .addr = (uintptr_t)mem, .length = 64, .lkey = mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 5, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	int got = 0, n;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = d->qp_num;
	wr.wr.ud.remote_qkey = qkey;
	vt_fill(mem, 64, qkey, 1);
	memset(mem + 1024, 0, 128);
	if (ibv_post_send(s, &wr, &bad))
		return -1;
	for (n = 0; n < 2 && !vt_poll_one(cq, &wc, n ? 1 : 30); n++)
		if (wc.qp_num == d->qp_num)
			got = wc.status == IBV_WC_SUCCESS && wc.byte_len == GRH + 64 &&
			      !memcmp(mem + 1024 + GRH, mem, 64);
	return got;
}

/*
 * @ex 0: ibv_create_qp; 1: ibv_create_qp_ex, comp_mask PD; 2: with
 * CREATE_FLAGS too, as random_qp_init_attr_ex() of the suite may ask.
 */
static void ud_modify_one(int ex)
{
	static const char *const names[] = { "ibv_create_qp", "ibv_create_qp_ex",
					      "ibv_create_qp_ex(CREATE_FLAGS)" };
	const char *tn = names[ex];
	struct ibv_cq *cq = ibv_create_cq(C.ctx, 64, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 100, .max_recv_wr = 100, .max_send_sge = 4,
						.max_recv_sge = 4 } };
	struct ibv_qp_attr a;
	struct ibv_qp *qp, *s;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	uint8_t *mem;
	int r;

	ia.send_cq = ia.recv_cq = cq;
	if (ex)
		qp = create_ex(cq, IBV_QPT_UD, IBV_QP_INIT_ATTR_PD |
			       (ex > 1 ? IBV_QP_INIT_ATTR_CREATE_FLAGS : 0), 0, 0, &ia.cap);
	else
		qp = ibv_create_qp(C.pd, &ia);
	if (!cq)
		vt_die("ud-modify: %s", strerror(errno));
	if (!qp) {
		report(0, "ud-modify", "%s: %s", tn, strerror(errno));
		ibv_destroy_cq(cq);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)C.ib_port;
	a.qkey = QKEY_A;
	ud_step(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "RESET->INIT", tn);
	a.qkey = QKEY_A + 1;
	ud_step(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "INIT->INIT", tn);
	a.qp_state = IBV_QPS_RTR;
	a.qkey = QKEY_A + 2;
	ud_step(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_QKEY, "INIT->RTR", tn);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x45;
	ud_step(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTR->RTS sq_psn", tn);
	a.qkey = QKEY_UD;
	ud_step(qp, &a, IBV_QP_STATE | IBV_QP_QKEY, "RTS->RTS qkey", tn);
	a.cur_qp_state = IBV_QPS_RTS;
	ud_step(qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_QKEY, "RTS->RTS cur_state", tn);
	a.sq_psn = 0x46;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	report(r == EINVAL, "ud-modify", "%s RTS->RTS with SQ_PSN (not a UD RTS->RTS attribute): %s", tn,
	       r ? strerror(r) : "taken");
	a.sq_psn = 0x45;

	/* The Q_Key in force is the last one: SENDs with it arrive, others not. */
	mem = page_alloc(1);
	mr = ibv_reg_mr(C.pd, mem, PAGE, IBV_ACCESS_LOCAL_WRITE);
	s = ibv_create_qp(C.pd, &ia);
	ah = self_ah(C.pd);
	if (!mr || !s || !ah || ud_to_rts(s, QKEY_UD))
		vt_die("ud-modify: %s", strerror(errno));
	post_recv(qp, mr, mem + 1024, GRH + 128, 9);
	r = ud_send(s, qp, cq, ah, mr, mem, QKEY_A);
	report(r == 0, "ud-modify", "%s SEND with the old Q_Key: %s", tn, r > 0 ? "arrived" : "dropped");
	r = ud_send(s, qp, cq, ah, mr, mem, QKEY_UD);
	report(r == 1, "ud-modify", "%s SEND with the Q_Key of RTS->RTS: %s", tn,
	       r > 0 ? "arrived, bytes equal" : "lost");

	a.qp_state = IBV_QPS_SQD;
	ud_step(qp, &a, IBV_QP_STATE, "RTS->SQD", tn);
	a.qkey = QKEY_A + 3;
	ud_step(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_QKEY, "SQD->SQD", tn);
	a.qp_state = IBV_QPS_RTS;
	a.qkey = QKEY_A + 4;
	ud_step(qp, &a, IBV_QP_STATE | IBV_QP_QKEY, "SQD->RTS", tn);
	a.qp_state = IBV_QPS_RESET;
	ud_step(qp, &a, IBV_QP_STATE, "RTS->RESET", tn);

	ibv_destroy_ah(ah);
	ibv_destroy_qp(s);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	free(mem);
}

static void case_ud_modify(void)
{
	ud_modify_one(0);
	ud_modify_one(1);
	ud_modify_one(2);
}

/* ---- ud-recv ---- */

#define UDR_LEN 100

/* The first RoCE v2 GID of the port that maps an IPv4 address (@v4) or not. */
static int roce2_gid(int v4, union ibv_gid *gid)
{
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct ibv_gid_entry e;
	int i;

	for (i = 0; i < C.port_attr.gid_tbl_len; i++) {
		if (ibv_query_gid_ex(C.ctx, (uint32_t)C.ib_port, (uint32_t)i, &e, 0) ||
		    e.gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (!memcmp(e.gid.raw, v4map, 12) == !!v4) {
			memcpy(gid, &e.gid, sizeof(*gid));
			return i;
		}
	}
	return -1;
}

/* The Internet checksum of the IPv4 header at @h: 0 when it is right. */
static uint16_t ip4_csum(const uint8_t *h)
{
	uint32_t s = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		s += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/*
 * The 40-byte GRH area of a datagram received from @gid to @gid: an
 * IPv4 header in its last 20 bytes, or the IPv6 header in all 40
 * (IBA Annex A17, A17.4.5.1), of a UDP datagram carrying @len bytes.
 */
static const char *grh_check(const uint8_t *g, int v4, const union ibv_gid *gid, uint32_t len)
{
	/* UDP 8 + BTH 12 + DETH 8 + payload + ICRC 4 */
	uint32_t l4 = 8 + 12 + 8 + len + 4;

	if (v4 < 0) {
		/* the IB GRH: PayLen from the BTH to the ICRC (len a multiple of 4: no pad) */
		if (g[0] >> 4 != 6)
			return "IPVer not 6";
		if ((uint32_t)(g[4] << 8 | g[5]) != l4 - 8)
			return "PayLen wrong";
		if (g[6] != 0x1b)
			return "NxtHdr not 0x1B (BTH)";
		if (memcmp(g + 8, gid->raw, 16) || memcmp(g + 24, gid->raw, 16))
			return "SGID or DGID is not the port GID";
		return NULL;
	}
	if (v4) {
		g += 20;
		if (g[0] != 0x45)
			return "no IPv4 header in bytes 20..39";
		if ((uint32_t)(g[2] << 8 | g[3]) != 20 + l4)
			return "IPv4 total length wrong";
		if (g[9] != 17)
			return "IPv4 protocol not UDP";
		if (ip4_csum(g))
			return "IPv4 header checksum wrong";
		if (memcmp(g + 12, gid->raw + 12, 4) || memcmp(g + 16, gid->raw + 12, 4))
			return "IPv4 source or destination is not the GID's address";
		return NULL;
	}
	if (g[0] >> 4 != 6)
		return "no IPv6 header";
	if ((uint32_t)(g[4] << 8 | g[5]) != l4)
		return "IPv6 payload length wrong";
	if (g[6] != 17)
		return "IPv6 next header not UDP";
	if (memcmp(g + 8, gid->raw, 16) || memcmp(g + 24, gid->raw, 16))
		return "IPv6 source or destination is not the GID";
	return NULL;
}

/*
 * A UD SEND from the port's own GID to itself, received the way UCX's
 * UD transport posts and reads its receives: the GRH area and the
 * datagram in one buffer (@nsge 1), or the GRH area split over two SGEs
 * and the payload in a third (@nsge 3).
 */
static void ud_recv_one(int v4, int nsge)
{
	const char *fam = v4 < 0 ? "IB" : v4 ? "IPv4" : "IPv6";
	struct ibv_cq *scq = ibv_create_cq(C.ctx, 8, NULL, NULL, 0);
	struct ibv_cq *rcq = ibv_create_cq(C.ctx, 8, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 3 } };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = (uint8_t)C.ib_port };
	struct ibv_sge sg, rsg[3];
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_recv_wr rw = { .wr_id = 2, .sg_list = rsg, .num_sge = nsge }, *rbad;
	uint8_t *mem = page_alloc(1), grh[GRH], *rbuf = mem + 1024, *data;
	struct ibv_qp *s, *d;
	struct ibv_ah *ah;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	union ibv_gid gid;
	const char *why;
	int idx, r, l3;

	if (v4 < 0) {
		/* IB: the port GID, to our own LID */
		idx = C.gid_idx;
		gid = C.gid;
		aa.dlid = vt_lid(&C);
		aa.sl = 5;
	} else {
		idx = roce2_gid(v4, &gid);
	}
	if (idx < 0) {
		printf("SKIP %-13s no RoCE v2 %s GID on the port\n", "ud-recv", fam);
		free(mem);
		ibv_destroy_cq(scq);
		ibv_destroy_cq(rcq);
		return;
	}
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	mr = ibv_reg_mr(C.pd, mem, PAGE, IBV_ACCESS_LOCAL_WRITE);
	s = ibv_create_qp(C.pd, &ia);
	d = ibv_create_qp(C.pd, &ia);
	aa.grh.dgid = gid;
	aa.grh.sgid_index = (uint8_t)idx;
	aa.grh.hop_limit = 64;
	ah = ibv_create_ah(C.pd, &aa);
	if (!scq || !rcq || !mr || !s || !d || !ah || ud_to_rts(s, QKEY_UD) || ud_to_rts(d, QKEY_UD))
		vt_die("ud-recv: %s", strerror(errno));

	vt_fill(mem, UDR_LEN, (uint64_t)nsge, 9);
	memset(rbuf, 0xee, 2 * GRH + 2 * UDR_LEN);
	if (nsge == 1) {
		rsg[0] = (struct ibv_sge){ .addr = (uintptr_t)rbuf, .length = GRH + 2 * UDR_LEN,
					   .lkey = mr->lkey };
	} else {
		/* 16 + 24 bytes of GRH area, then the datagram past a gap */
		rsg[0] = (struct ibv_sge){ .addr = (uintptr_t)rbuf, .length = 16, .lkey = mr->lkey };
		rsg[1] = (struct ibv_sge){ .addr = (uintptr_t)rbuf + 16, .length = GRH - 16,
					   .lkey = mr->lkey };
		rsg[2] = (struct ibv_sge){ .addr = (uintptr_t)rbuf + GRH + 64, .length = 2 * UDR_LEN,
					   .lkey = mr->lkey };
	}
	data = nsge == 1 ? rbuf + GRH : rbuf + GRH + 64;
	sg = (struct ibv_sge){ .addr = (uintptr_t)mem, .length = UDR_LEN, .lkey = mr->lkey };
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = d->qp_num;
	wr.wr.ud.remote_qkey = QKEY_UD;
	if (ibv_post_recv(d, &rw, &rbad) || ibv_post_send(s, &wr, &bad))
		vt_die("ud-recv: post: %s", strerror(errno));
	r = poll_wc(scq, &wc);
	report(!r && wc.status == IBV_WC_SUCCESS, "ud-recv", "%s, %d SGE: the SEND: %s", fam, nsge,
	       wc_str(r, &wc));
	r = poll_wc(rcq, &wc);
	if (r || wc.status != IBV_WC_SUCCESS) {
		report(0, "ud-recv", "%s, %d SGE: the receive: %s", fam, nsge, wc_str(r, &wc));
		goto out;
	}
	memcpy(grh, rbuf, GRH);
	report(wc.wr_id == 2 && wc.opcode == IBV_WC_RECV && wc.qp_num == d->qp_num &&
	       wc.byte_len == GRH + UDR_LEN && (wc.wc_flags & IBV_WC_GRH) && wc.src_qp == s->qp_num &&
	       !wc.pkey_index && wc.slid == vt_lid(&C) && !wc.dlid_path_bits && !memcmp(data, mem, UDR_LEN) &&
	       data[UDR_LEN] == 0xee, "ud-recv",
	       "%s, %d SGE: byte_len %u (GRH + %d), wc_flags %#x, src_qp %u (%u), pkey_index %u, "
	       "slid %u, dlid_path_bits %u, bytes %s", fam, nsge, wc.byte_len, UDR_LEN, wc.wc_flags,
	       wc.src_qp, s->qp_num, wc.pkey_index, wc.slid, wc.dlid_path_bits,
	       memcmp(data, mem, UDR_LEN) ? "differ" : data[UDR_LEN] != 0xee ? "overrun" : "equal");
	why = grh_check(grh, v4, &gid, UDR_LEN);
	report(!why, "ud-recv", "%s, %d SGE: the GRH area: %s", fam, nsge, why ? why : "the packet's header");
	/*
	 * RoCE has no LRH: sl carries the L3 header type, as ConnectX
	 * reports it (bits 2:0: 1 IPv6, 2 IPv4; bit 3: UDP, RoCE v2).
	 * Consumers read the GRH area by it (UCX's UD checks the
	 * destination address there); rdma_rxe reports sl 0.
	 */
	if (v4 < 0) {
		/* IB: the SL of the LRH, the AH's */
		report(wc.sl == 5, "ud-recv", "%s, %d SGE: sl %u, the AH's (want 5)", fam, nsge, wc.sl);
		goto out;
	}
	l3 = v4 ? 2 : 1;
	report(wc.sl == (0x8 | l3), "ud-recv", "%s, %d SGE: sl %#x, the L3 header type (want %#x)", fam, nsge,
	       wc.sl, 0x8 | l3);
out:
	ibv_destroy_ah(ah);
	ibv_destroy_qp(s);
	ibv_destroy_qp(d);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	free(mem);
}

static void case_ud_recv(void)
{
	if (C.port_attr.link_layer == IBV_LINK_LAYER_INFINIBAND) {
		ud_recv_one(-1, 1);
		ud_recv_one(-1, 3);
		return;
	}
	ud_recv_one(1, 1);
	ud_recv_one(1, 3);
	ud_recv_one(0, 1);
	ud_recv_one(0, 3);
}

/* ---- mw ---- */

#define MW_LEN 1024
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

struct mwres {
	struct pair p;
	uint8_t *mem;		/* page 0: a's source, page 1: b's window */
	struct ibv_mr *amr, *bmr;
	struct ibv_mw *mw;
};

static void mw_new(struct mwres *m, enum ibv_mw_type t)
{
	pair_new(&m->p, C.pd, RW);
	m->mem = page_alloc(2);
	m->amr = ibv_reg_mr(C.pd, m->mem, PAGE, IBV_ACCESS_LOCAL_WRITE);
	m->bmr = ibv_reg_mr(C.pd, m->mem + PAGE, PAGE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	m->mw = ibv_alloc_mw(C.pd, t);
	if (!m->amr || !m->bmr || !m->mw)
		vt_die("mw: %s", strerror(errno));
}

static void mw_free(struct mwres *m)
{
	pair_free(&m->p);
	if (m->mw)
		ibv_dealloc_mw(m->mw);
	ibv_dereg_mr(m->amr);
	ibv_dereg_mr(m->bmr);
	free(m->mem);
}

/* A WRITE of MW_LEN bytes through @key into b's page: its status; bytes checked. */
static int mw_write(struct mwres *m, uint32_t key, int *bytes_ok)
{
	int s;

	vt_fill(m->mem, MW_LEN, key, 3);
	memset(m->mem + PAGE, 0, MW_LEN);
	s = write_through(&m->p, m->amr, m->mem, MW_LEN, key, m->mem + PAGE);
	if (bytes_ok)
		*bytes_ok = !memcmp(m->mem, m->mem + PAGE, MW_LEN);
	return s;
}

/* IBV_WR_BIND_MW of a type 2 window by b; the new rkey. */
static int bind2(struct mwres *m, int access, uint32_t *key, struct ibv_wc *wc)
{
	struct ibv_send_wr wr = { .wr_id = 3, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.bind_mw.mw = m->mw;
	wr.bind_mw.rkey = ibv_inc_rkey(m->mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = m->bmr, .addr = (uintptr_t)m->mem + PAGE,
							  .length = MW_LEN, .mw_access_flags = access };
	*key = wr.bind_mw.rkey;
	if (ibv_post_send(m->p.b, &wr, &bad))
		return errno ? errno : EINVAL;
	return poll_wc(m->p.cqb, wc);
}

static void case_mw(void)
{
	struct ibv_mw_bind bind = { .wr_id = 2, .send_flags = IBV_SEND_SIGNALED };
	struct mwres m;
	struct ibv_wc wc;
	uint32_t key;
	int r, s, ok;

	if (!(C.dev_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW)) {
		printf("SKIP mw            the device offers no memory windows\n");
		return;
	}
	/* test_mw_type1, test_invalidate_mw_type1 */
	mw_new(&m, IBV_MW_TYPE_1);
	bind.bind_info = (struct ibv_mw_bind_info){ .mr = m.bmr, .addr = (uintptr_t)m.mem + PAGE,
						    .length = MW_LEN, .mw_access_flags = RW };
	r = ibv_bind_mw(m.p.b, m.mw, &bind);
	r = r ? r : poll_wc(m.p.cqb, &wc);
	report(!r && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW, "mw",
	       "type 1 ibv_bind_mw, remote and local write: %s", r ? strerror(r) : ibv_wc_status_str(wc.status));
	s = mw_write(&m, m.mw->rkey, &ok);
	report(s == IBV_WC_SUCCESS && ok, "mw", "WRITE through the type 1 window: %s, bytes %s", st(s),
	       ok ? "equal" : "differ");
	bind.bind_info.length = 0;
	bind.bind_info.mw_access_flags = 0;
	r = ibv_bind_mw(m.p.b, m.mw, &bind);
	r = r ? r : poll_wc(m.p.cqb, &wc);
	report(!r && wc.status == IBV_WC_SUCCESS, "mw", "zero-length rebind naming the MR: %s",
	       r ? strerror(r) : ibv_wc_status_str(wc.status));
	s = mw_write(&m, m.mw->rkey, NULL);
	report(s == IBV_WC_REM_ACCESS_ERR, "mw", "WRITE through the unbound type 1 window: %s", st(s));
	mw_free(&m);

	/* test_mw_type2, test_mw_type2_invalidate_local */
	mw_new(&m, IBV_MW_TYPE_2);
	r = bind2(&m, RW, &key, &wc);
	report(!r && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW, "mw",
	       "type 2 IBV_WR_BIND_MW, remote and local write: %s", r ? strerror(r) : ibv_wc_status_str(wc.status));
	s = mw_write(&m, key, &ok);
	report(s == IBV_WC_SUCCESS && ok, "mw", "WRITE through the type 2 window: %s, bytes %s", st(s),
	       ok ? "equal" : "differ");
	r = post_one(m.p.b, IBV_WR_LOCAL_INV, 4, NULL, NULL, 0, 0, NULL, key);
	r = r ? r : poll_wc(m.p.cqb, &wc);
	report(!r && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV, "mw", "LOCAL_INV: %s",
	       r ? strerror(r) : ibv_wc_status_str(wc.status));
	s = mw_write(&m, key, NULL);
	report(s == IBV_WC_REM_ACCESS_ERR, "mw", "WRITE through the invalidated window: %s", st(s));
	mw_free(&m);

	/* test_mw_type2_invalidate_remote */
	mw_new(&m, IBV_MW_TYPE_2);
	r = bind2(&m, RW, &key, &wc);
	s = mw_write(&m, key, &ok);
	report(!r && wc.status == IBV_WC_SUCCESS && s == IBV_WC_SUCCESS && ok, "mw",
	       "type 2 bound again, WRITE through it: %s", st(s));
	post_recv(m.p.b, m.amr, m.mem + 2048, 64, 6);
	r = post_one(m.p.a, IBV_WR_SEND_WITH_INV, 5, NULL, NULL, 0, 0, NULL, key);
	r = r ? r : poll_wc(m.p.cqa, &wc);
	report(!r && wc.status == IBV_WC_SUCCESS, "mw", "SEND_WITH_INV of its rkey: %s",
	       r ? strerror(r) : ibv_wc_status_str(wc.status));
	r = poll_wc(m.p.cqb, &wc);
	report(!r && wc.status == IBV_WC_SUCCESS && (wc.wc_flags & IBV_WC_WITH_INV) &&
	       wc.invalidated_rkey == key, "mw", "the receive: %s, WITH_INV %d, rkey %#x", wc_str(r, &wc),
	       !!(wc.wc_flags & IBV_WC_WITH_INV), wc.invalidated_rkey);
	s = mw_write(&m, key, NULL);
	report(s == IBV_WC_REM_ACCESS_ERR, "mw", "WRITE through the remotely invalidated window: %s", st(s));
	mw_free(&m);

	/* test_mw_type2_invalidate_dealloc */
	mw_new(&m, IBV_MW_TYPE_2);
	r = bind2(&m, RW, &key, &wc);
	s = mw_write(&m, key, &ok);
	r = r ? r : ibv_dealloc_mw(m.mw);
	m.mw = NULL;
	report(!r, "mw", "dealloc of the bound type 2 window: %s", r ? strerror(r) : "ok");
	s = mw_write(&m, key, NULL);
	report(s == IBV_WC_REM_ACCESS_ERR, "mw", "WRITE through the freed window: %s", st(s));
	mw_free(&m);

	/* test_qp_ex_rc_bind_mw: a bind granting local write only. */
	mw_new(&m, IBV_MW_TYPE_2);
	r = bind2(&m, IBV_ACCESS_LOCAL_WRITE, &key, &wc);
	report(!r && wc.status == IBV_WC_SUCCESS, "mw", "type 2 bind with local write only: %s",
	       r ? strerror(r) : ibv_wc_status_str(wc.status));
	s = mw_write(&m, key, NULL);
	report(s == IBV_WC_REM_ACCESS_ERR, "mw", "WRITE through that window: %s", st(s));
	mw_free(&m);
}

/* ---- rereg ---- */

static void case_rereg(void)
{
	struct ibv_mw_bind bind = { .wr_id = 2, .send_flags = IBV_SEND_SIGNALED };
	int acc = RW | IBV_ACCESS_REMOTE_READ;
	uint8_t *mem = page_alloc(2), *nbuf = page_alloc(1);
	struct ibv_mr *amr, *bmr;
	struct ibv_pd *pd2;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	struct pair p;
	uint32_t lkey, rkey;
	int r, s;

	pair_new(&p, C.pd, acc);
	amr = ibv_reg_mr(C.pd, mem, PAGE, IBV_ACCESS_LOCAL_WRITE);
	bmr = ibv_reg_mr(C.pd, mem + PAGE, PAGE, acc);
	pd2 = ibv_alloc_pd(C.ctx);
	if (!amr || !bmr || !pd2)
		vt_die("rereg: %s", strerror(errno));
	lkey = bmr->lkey;
	rkey = bmr->rkey;
	vt_fill(mem, 512, 9, 1);

	/* test_mr_rereg_access_bad_flow, test_mr_rereg_access */
	errno = 0;
	r = ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	if (r && errno == EOPNOTSUPP) {
		/* the suite skips then (rxe has no rereg) */
		printf("SKIP rereg         the device cannot reregister an MR\n");
		pair_free(&p);
		ibv_dereg_mr(bmr);
		ibv_dereg_mr(amr);
		ibv_dealloc_pd(pd2);
		free(mem);
		free(nbuf);
		return;
	}
	report(!r && bmr->lkey == lkey && bmr->rkey == rkey, "rereg",
	       "CHANGE_ACCESS to local write only: %d (%s), keys %s", r, r ? strerror(errno) : "ok",
	       bmr->rkey == rkey ? "kept" : "changed");
	s = write_through(&p, amr, mem, 512, bmr->rkey, mem + PAGE);
	report(s == IBV_WC_REM_ACCESS_ERR, "rereg", "WRITE into it: %s", st(s));
	pair_restate(&p);
	r = ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, acc);
	memset(mem + PAGE, 0, 512);
	s = write_through(&p, amr, mem, 512, bmr->rkey, mem + PAGE);
	report(!r && s == IBV_WC_SUCCESS && !memcmp(mem, mem + PAGE, 512), "rereg",
	       "CHANGE_ACCESS back to remote write: %d, WRITE %s, bytes %s", r, st(s),
	       memcmp(mem, mem + PAGE, 512) ? "differ" : "equal");

	/* test_mr_rereg_pd: b receives into an MR of another PD. */
	r = ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	report(!r && bmr->pd == pd2, "rereg", "CHANGE_PD: %d (%s)", r, r ? strerror(errno) : "ok");
	post_recv(p.b, bmr, mem + PAGE, 512, 11);
	r = post_one(p.a, IBV_WR_SEND, 12, amr, mem, 512, 0, NULL, 0);
	r = r ? r : poll_wc(p.cqa, &wc);
	report(!r && wc.status == IBV_WC_REM_OP_ERR, "rereg", "SEND into the MR of the other PD: %s",
	       wc_str(r, &wc));
	pair_restate(&p);
	r = ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_PD, C.pd, NULL, 0, 0);
	memset(mem + PAGE, 0, 512);
	post_recv(p.b, bmr, mem + PAGE, 512, 13);
	s = post_one(p.a, IBV_WR_SEND, 14, amr, mem, 512, 0, NULL, 0);
	s = s ? s : poll_wc(p.cqa, &wc);
	s = s ? -1 : (int)wc.status;
	r = r ? r : poll_wc(p.cqb, &wc);
	report(!r && s == IBV_WC_SUCCESS && wc.status == IBV_WC_SUCCESS && wc.byte_len == 512 &&
	       !memcmp(mem, mem + PAGE, 512), "rereg", "CHANGE_PD back: SEND %s, receive %s, bytes %s", st(s),
	       wc_str(r, &wc), memcmp(mem, mem + PAGE, 512) ? "differ" : "equal");

	/* test_mr_rereg_addr: the same keys name the new buffer. */
	r = ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nbuf, PAGE, 0);
	report(!r && bmr->addr == nbuf && bmr->lkey == lkey && bmr->rkey == rkey, "rereg",
	       "CHANGE_TRANSLATION to a new buffer: %d (%s), keys %s", r, r ? strerror(errno) : "ok",
	       bmr->rkey == rkey ? "kept" : "changed");
	memset(mem + PAGE, 0, 512);
	s = write_through(&p, amr, mem, 512, bmr->rkey, nbuf + 256);
	report(s == IBV_WC_SUCCESS && !memcmp(nbuf + 256, mem, 512) && mem[PAGE] == 0 &&
	       mem[PAGE + 511] == 0, "rereg", "WRITE to the new address: %s, bytes %s, old buffer untouched",
	       st(s), memcmp(nbuf + 256, mem, 512) ? "differ" : "equal");
	s = write_through(&p, amr, mem, 512, bmr->rkey, mem + PAGE);
	report(s == IBV_WC_REM_ACCESS_ERR, "rereg", "WRITE to the old address: %s", st(s));
	pair_restate(&p);

	/* A window bound to the MR: rereg must not pull the memory away. */
	mw = ibv_alloc_mw(C.pd, IBV_MW_TYPE_1);
	r = ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, acc | IBV_ACCESS_MW_BIND);
	bind.bind_info = (struct ibv_mw_bind_info){ .mr = bmr, .addr = (uintptr_t)nbuf, .length = 256,
						    .mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
	r = r ? r : !mw ? errno : ibv_bind_mw(p.b, mw, &bind);
	r = r ? r : poll_wc(p.cqb, &wc);
	if (!r && wc.status == IBV_WC_SUCCESS) {
		r = ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, mem + PAGE, PAGE, 0);
		report(r != 0 && bmr->addr == nbuf, "rereg", "CHANGE_TRANSLATION under a bound window: %s",
		       r ? "refused" : "taken");
		s = write_through(&p, amr, mem, 64, mw->rkey, nbuf);
		report(s == IBV_WC_SUCCESS && !memcmp(nbuf, mem, 64), "rereg",
		       "the window still works: %s", st(s));
	} else {
		report(0, "rereg", "bind a window to the MR: %s", r ? strerror(r) : ibv_wc_status_str(wc.status));
	}
	if (mw)
		ibv_dealloc_mw(mw);
	pair_free(&p);
	r = ibv_dereg_mr(bmr);
	r = r ? r : ibv_dereg_mr(amr);
	r = r ? r : ibv_dealloc_pd(pd2);
	report(!r, "rereg", "dereg and dealloc after: %s", r ? strerror(r) : "ok");
	free(mem);
	free(nbuf);
}

/* ---- cq-ex ---- */

static struct ibv_cq_ex *cq_ex(uint64_t wc_flags, uint32_t mask, uint32_t flags, struct ibv_pd *pd,
			       int cqe, uint32_t vec)
{
	struct ibv_cq_init_attr_ex a = { .cqe = cqe, .comp_vector = vec, .wc_flags = wc_flags,
					 .comp_mask = mask, .flags = flags, .parent_domain = pd };

	return ibv_create_cq_ex(C.ctx, &a);
}

/* Poll @n completions of an extended CQ, every field through the ops. */
static int poll_ex(struct ibv_cq_ex *cq, struct ibv_wc *wc, int n)
{
	struct ibv_poll_cq_attr pa = {};
	double end = vt_now() + 30;
	int got = 0, r;

	while (got < n && vt_now() < end) {
		r = ibv_start_poll(cq, &pa);
		if (r == ENOENT) {
			usleep(100);
			continue;
		}
		if (r)
			return got;
		do {
			struct ibv_wc *w = &wc[got++];

			w->wr_id = cq->wr_id;
			w->status = cq->status;
			w->opcode = ibv_wc_read_opcode(cq);
			w->byte_len = ibv_wc_read_byte_len(cq);
			w->qp_num = ibv_wc_read_qp_num(cq);
			w->src_qp = ibv_wc_read_src_qp(cq);
			w->wc_flags = ibv_wc_read_wc_flags(cq);
			w->imm_data = (w->wc_flags & IBV_WC_WITH_IMM) ? ibv_wc_read_imm_data(cq) : 0;
			w->slid = ibv_wc_read_slid(cq);
			w->sl = ibv_wc_read_sl(cq);
			w->dlid_path_bits = ibv_wc_read_dlid_path_bits(cq);
		} while (got < n && ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
	}
	return got;
}

/* SEND_WITH_IMM a -> b over QPs whose CQs are extended; @srq: b's. */
static int excq_traffic(const char *name, struct ibv_pd *pd, struct ibv_cq_ex *ca, struct ibv_cq_ex *cb,
			struct ibv_srq *srq)
{
	struct ibv_cq *a = ibv_cq_ex_to_cq(ca), *b = ibv_cq_ex_to_cq(cb);
	uint8_t *mem = page_alloc(2);
	struct ibv_mr *mr = ibv_reg_mr(pd, mem, 2 * PAGE, RW);
	struct ibv_qp *qa = rc_qp(pd, a, NULL), *qb = rc_qp(pd, b, srq);
	struct ibv_sge sg = { .addr = (uintptr_t)mem, .length = 700 };
	struct ibv_send_wr wr = { .wr_id = 21, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(0x5a5a) }, *bad;
	struct ibv_recv_wr rw = { .wr_id = 22, .num_sge = 1 }, *rbad;
	struct ibv_sge rsg;
	struct vt_peer pa = { .psn = 1 }, pb = { .psn = 2 };
	struct ibv_wc w[2];
	int ok, n;

	if (!mr || !qa || !qb)
		vt_die("%s: %s", name, strerror(errno));
	pa.qpn = qa->qp_num;
	pb.qpn = qb->qp_num;
	vt_peer_addr(&C, &pa);
	vt_peer_addr(&C, &pb);
	if (vt_connect_rc(&C, qa, &O, 1, &pb, RW) || vt_connect_rc(&C, qb, &O, 2, &pa, RW))
		vt_die("%s: to RTS: %s", name, strerror(errno));
	sg.lkey = mr->lkey;
	rsg = (struct ibv_sge){ .addr = (uintptr_t)mem + PAGE, .length = 1024, .lkey = mr->lkey };
	rw.sg_list = &rsg;
	vt_fill(mem, 700, 4, 4);
	if ((srq ? ibv_post_srq_recv(srq, &rw, &rbad) : ibv_post_recv(qb, &rw, &rbad)) ||
	    ibv_post_send(qa, &wr, &bad))
		vt_die("%s: post: %s", name, strerror(errno));
	n = poll_ex(ca, &w[0], 1);
	n += poll_ex(cb, &w[1], 1);
	if (n == 2)
		vt_dbg("%s: send %s id %llu op %d qp %u; recv %s id %llu op %d len %u qp %u src %u flags %#x imm %#x",
		       name, ibv_wc_status_str(w[0].status), (unsigned long long)w[0].wr_id, w[0].opcode,
		       w[0].qp_num, ibv_wc_status_str(w[1].status), (unsigned long long)w[1].wr_id,
		       w[1].opcode, w[1].byte_len, w[1].qp_num, w[1].src_qp, w[1].wc_flags,
		       be32toh(w[1].imm_data));
	ok = n == 2 && w[0].status == IBV_WC_SUCCESS && w[0].wr_id == 21 && w[0].opcode == IBV_WC_SEND &&
	     w[0].qp_num == qa->qp_num && w[1].status == IBV_WC_SUCCESS && w[1].wr_id == 22 &&
	     w[1].opcode == IBV_WC_RECV && w[1].byte_len == 700 && w[1].qp_num == qb->qp_num &&
	     (w[1].wc_flags & IBV_WC_WITH_IMM) &&
	     be32toh(w[1].imm_data) == 0x5a5a && !memcmp(mem, mem + PAGE, 700);
	ibv_destroy_qp(qa);
	ibv_destroy_qp(qb);
	ibv_dereg_mr(mr);
	free(mem);
	return ok ? 0 : n == 2 ? EIO : ETIMEDOUT;
}

static void case_cq_ex(void)
{
	static const uint64_t std = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
		IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
		IBV_WC_EX_WITH_DLID_PATH_BITS;
	struct ibv_cq_ex *a, *b, *c;
	int r, bad = 0, taken = 0;
	uint64_t f;

	a = cq_ex(std, 0, 0, NULL, 2000, 0);
	b = cq_ex(std, IBV_CQ_INIT_ATTR_MASK_FLAGS, IBV_CREATE_CQ_ATTR_SINGLE_THREADED, NULL, 2000, 0);
	report(a && b, "cq-ex", "IBV_WC_STANDARD_FLAGS, 2000 CQEs (and single-threaded): %s",
	       a && b ? "created" : strerror(errno));
	if (!a || !b)
		return;
	r = excq_traffic("cq-ex", C.pd, a, b, NULL);
	report(!r, "cq-ex", "RC SEND_WITH_IMM polled with ibv_start_poll: %s",
	       r ? strerror(r) : "both completions, every field right");
	ibv_destroy_cq(ibv_cq_ex_to_cq(a));
	ibv_destroy_cq(ibv_cq_ex_to_cq(b));
	for (f = 1; f <= IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK; f <<= 1) {
		errno = 0;
		c = cq_ex(f, 0, 0, NULL, 10, 0);
		if (c) {
			taken++;
			ibv_destroy_cq(ibv_cq_ex_to_cq(c));
		} else if (errno != EOPNOTSUPP) {
			bad++;
			printf("#    wc_flags %#llx: %s\n", (unsigned long long)f, strerror(errno));
		}
	}
	report(!bad, "cq-ex", "each wc flag alone: %d taken, the rest EOPNOTSUPP (%d other errors)", taken, bad);
	errno = 0;
	c = cq_ex(0, 0, 0, NULL, C.dev_attr.max_cqe + 1, 0);
	report(!c && errno == EINVAL, "cq-ex", "max_cqe + 1 CQEs: %s", c ? "created" : strerror(errno));
	if (c)
		ibv_destroy_cq(ibv_cq_ex_to_cq(c));
	errno = 0;
	c = cq_ex(0, 0, 0, NULL, 10, C.ctx->num_comp_vectors + 1);
	report(!c && errno == EINVAL, "cq-ex", "comp_vector past the last: %s", c ? "created" : strerror(errno));
	if (c)
		ibv_destroy_cq(ibv_cq_ex_to_cq(c));
}

/* ---- parent-domain ---- */

static int nalloc;

static void *pd_alloc(struct ibv_pd *pd, void *ctx, size_t size, size_t align, uint64_t type)
{
	(void)pd, (void)ctx, (void)size, (void)align, (void)type;
	nalloc++;
	return IBV_ALLOCATOR_USE_DEFAULT;
}

static void pd_free(struct ibv_pd *pd, void *ctx, void *ptr, uint64_t type)
{
	(void)pd, (void)ctx, (void)ptr, (void)type;
}

static void parent_domain_one(int allocators)
{
	const char *tn = allocators ? "with allocators" : "without allocators";
	struct ibv_parent_domain_init_attr pa = { .pd = C.pd };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_cq_ex *a, *b;
	struct ibv_srq *srq;
	struct ibv_pd *par;
	int r;

	if (allocators) {
		pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
		pa.alloc = pd_alloc;
		pa.free = pd_free;
		pa.pd_context = &nalloc;
	}
	errno = 0;
	par = ibv_alloc_parent_domain(C.ctx, &pa);
	if (!par && errno == EOPNOTSUPP) {
		printf("SKIP parent-domain the provider offers no parent domains\n");
		return;
	}
	report(par != NULL, "parent-domain", "ibv_alloc_parent_domain %s: %s", tn,
	       par ? "ok" : strerror(errno));
	if (!par)
		return;
	a = cq_ex(IBV_WC_STANDARD_FLAGS, IBV_CQ_INIT_ATTR_MASK_PD | IBV_CQ_INIT_ATTR_MASK_FLAGS, 0, par, 2000, 0);
	b = cq_ex(IBV_WC_STANDARD_FLAGS, IBV_CQ_INIT_ATTR_MASK_PD | IBV_CQ_INIT_ATTR_MASK_FLAGS, 0, par, 2000, 0);
	srq = ibv_create_srq(par, &sa);
	report(a && b && srq, "parent-domain", "extended CQs (MASK_PD) and an SRQ on it: %s",
	       a && b && srq ? "created" : strerror(errno));
	if (a && b && srq) {
		r = excq_traffic("parent-domain", par, a, b, srq);
		report(!r, "parent-domain", "MR and RC QPs on it, SEND_WITH_IMM into the SRQ: %s",
		       r ? strerror(r) : "arrived, bytes equal");
	}
	if (srq)
		ibv_destroy_srq(srq);
	if (a)
		ibv_destroy_cq(ibv_cq_ex_to_cq(a));
	if (b)
		ibv_destroy_cq(ibv_cq_ex_to_cq(b));
	r = ibv_dealloc_pd(par);
	report(!r, "parent-domain", "dealloc of the parent domain: %s", r ? strerror(r) : "ok");
}

static void case_parent_domain(void)
{
	struct ibv_parent_domain_init_attr pa = { .pd = C.pd };
	struct ibv_pd *pd, *par;
	int r;

	parent_domain_one(0);
	parent_domain_one(1);
	pd = ibv_alloc_pd(C.ctx);
	pa.pd = pd;
	par = pd ? ibv_alloc_parent_domain(C.ctx, &pa) : NULL;
	if (!par)
		return;
	r = ibv_dealloc_pd(pd);
	report(r != 0, "parent-domain", "dealloc of a PD under a parent domain: %s",
	       r ? strerror(r) : "taken");
	r = ibv_dealloc_pd(par);
	r = r ? r : ibv_dealloc_pd(pd);
	report(!r, "parent-domain", "parent domain, then its PD: %s", r ? strerror(r) : "both gone");
}

/* ---- reset-cq ---- */

static void case_reset_cq(void)
{
	struct ibv_cq *cq = ibv_create_cq(C.ctx, 16, NULL, NULL, 0);
	struct ibv_qp *x = cq ? rc_qp(C.pd, cq, NULL) : NULL, *y = cq ? rc_qp(C.pd, cq, NULL) : NULL;
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = O.ib_port,
				    .qp_access_flags = RW };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR }, rst = { .qp_state = IBV_QPS_RESET };
	uint8_t *mem = page_alloc(1);
	struct ibv_mr *mr = ibv_reg_mr(C.pd, mem, PAGE, RW);
	struct ibv_wc wc[4];
	int n;

	if (!x || !y || !mr)
		vt_die("reset-cq: %s", strerror(errno));
	if (ibv_modify_qp(x, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
	    ibv_modify_qp(y, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		vt_die("reset-cq: to INIT: %s", strerror(errno));
	post_recv(x, mr, mem, 64, 1);
	post_recv(x, mr, mem, 64, 2);
	post_recv(y, mr, mem, 64, 3);
	if (ibv_modify_qp(x, &err, IBV_QP_STATE) || ibv_modify_qp(y, &err, IBV_QP_STATE))
		vt_die("reset-cq: to ERR: %s", strerror(errno));
	/* The flushes are the kernel's: give them time to land. */
	for (n = 0; n < 100; n++) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (!ibv_query_qp(y, &a, IBV_QP_STATE, &ia) && a.qp_state == IBV_QPS_ERR && n > 10)
			break;
		usleep(20000);
	}
	if (ibv_modify_qp(x, &rst, IBV_QP_STATE))
		vt_die("reset-cq: to RESET: %s", strerror(errno));
	memset(wc, 0, sizeof(wc));
	n = 0;
	for (int t = 0; t < 50 && n < 4; t++) {
		int r = ibv_poll_cq(cq, 4 - n, wc + n);

		if (r < 0)
			break;
		n += r;
		if (!r)
			usleep(20000);
	}
	report(n == 1 && wc[0].qp_num == y->qp_num && wc[0].wr_id == 3 &&
	       wc[0].status == IBV_WC_WR_FLUSH_ERR, "reset-cq",
	       "after RESET of one of two QPs in ERR: %d completion(s) left%s", n,
	       n == 1 && wc[0].qp_num == y->qp_num ? ", the other QP's flush" :
	       n ? " (want only the other QP's)" : " (want the other QP's flush)");
	ibv_destroy_qp(x);
	ibv_destroy_qp(y);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	free(mem);
}

/* ---- srq-resize ---- */

static void case_srq_resize(void)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq_attr q = {}, m = {};
	struct ibv_recv_wr rw = { .num_sge = 1 }, *rbad;
	struct ibv_srq *srq;
	struct pair p;
	struct ibv_sge rsg;
	struct ibv_wc wc;
	uint8_t *mem = page_alloc(16);
	struct ibv_mr *mr = ibv_reg_mr(C.pd, mem, 16 * PAGE, RW);
	uint32_t posted = 0, want, i;
	int r, ok = 1;

	if (ibv_query_device(C.ctx, &da))
		vt_die("ibv_query_device: %s", strerror(errno));
	if (!(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE)) {
		printf("SKIP srq-resize   the device has no IBV_DEVICE_SRQ_RESIZE\n");
		return;
	}
	srq = ibv_create_srq(C.pd, &sa);
	if (!srq || !mr)
		vt_die("srq-resize: %s", strerror(errno));
	ibv_query_srq(srq, &q);
	/* Fill it: the new ring must take these along. */
	for (; posted < q.max_wr; posted++) {
		rsg = (struct ibv_sge){ .addr = (uintptr_t)mem + 8 * PAGE + posted * 256,
					.length = 256, .lkey = mr->lkey };
		rw.wr_id = 1000 + posted;
		rw.sg_list = &rsg;
		if (ibv_post_srq_recv(srq, &rw, &rbad))
			vt_die("srq-resize: post %u: %s", posted, strerror(errno));
	}
	m.max_wr = 1;
	r = ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR);
	report(r == EINVAL, "srq-resize", "shrink to 1 below %u receives posted: %s", posted,
	       r ? strerror(r) : "taken");
	want = q.max_wr * 4;
	m.max_wr = want;
	r = ibv_modify_srq(srq, &m, IBV_SRQ_MAX_WR);
	memset(&q, 0, sizeof(q));
	if (!r)
		r = ibv_query_srq(srq, &q);
	report(!r && q.max_wr >= want, "srq-resize", "grow to %u with %u posted: %s, max_wr %u", want,
	       posted, r ? strerror(r) : "done", q.max_wr);
	if (r)
		goto out;
	for (; posted < want; posted++) {
		rsg = (struct ibv_sge){ .addr = (uintptr_t)mem + 8 * PAGE + posted * 256,
					.length = 256, .lkey = mr->lkey };
		rw.wr_id = 1000 + posted;
		rw.sg_list = &rsg;
		if (ibv_post_srq_recv(srq, &rw, &rbad)) {
			ok = 0;
			break;
		}
	}
	report(ok, "srq-resize", "%u receives posted in the grown SRQ", posted);
	/* Every receive, old ring's first, completes in order. */
	memset(&p, 0, sizeof(p));
	pair_new(&p, C.pd, RW);
	ibv_destroy_qp(p.b);
	p.b = rc_qp(C.pd, p.cqb, srq);
	if (!p.b)
		vt_die("srq-resize: QP on the SRQ: %s", strerror(errno));
	p.pb.qpn = p.b->qp_num;
	p.pa.psn += 1000;
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

		ibv_modify_qp(p.a, &a, IBV_QP_STATE);
	}
	if (pair_connect(&p))
		vt_die("srq-resize: to RTS: %s", strerror(errno));
	for (i = 0; ok && i < posted; i++) {
		vt_fill(mem + (i % 8) * 256, 100 + i, i, 7);
		if (post_one(p.a, IBV_WR_SEND, 1, mr, mem + (i % 8) * 256, 100 + i, 0, NULL, 0) ||
		    poll_wc(p.cqa, &wc) || wc.status != IBV_WC_SUCCESS || poll_wc(p.cqb, &wc) ||
		    wc.status != IBV_WC_SUCCESS || wc.wr_id != 1000 + i || wc.byte_len != 100 + i ||
		    memcmp(mem + 8 * PAGE + i * 256, mem + (i % 8) * 256, 100 + i))
			ok = 0;
	}
	report(ok, "srq-resize", "%u SENDs: %s", posted,
	       ok ? "each receive completed in order with its bytes" :
	       "a receive is missing, out of order or wrong");
	ibv_destroy_qp(p.b);
	p.b = NULL;
	ibv_destroy_qp(p.a);
	ibv_destroy_cq(p.cqa);
	ibv_destroy_cq(p.cqb);
out:
	ibv_destroy_srq(srq);
	ibv_dereg_mr(mr);
	free(mem);
}

/* ---- mpe: IBA 1.5 ATOMIC WRITE and FLUSH ---- */

/* uverbs values; Debian 12's libibverbs 44 headers lack the FLUSH ones */
#define MPE_ACC_FLUSH_GLOBAL	(1 << 8)
#define MPE_ACC_FLUSH_PERSIST	(1 << 9)
#define MPE_DEV_FLUSH_GLOBAL	(1ULL << 38)
#define MPE_DEV_FLUSH_PERSIST	(1ULL << 39)
#define MPE_DEV_ATOMIC_WRITE	(1ULL << 40)
#define MPE_QP_WITH_FLUSH	(1ULL << 11)

/* One ATOMIC WRITE (or, with VT_HAVE_WR_FLUSH, FLUSH) from a; its status. */
static int mpe_post(struct pair *p, int flush, uint32_t rkey, void *raddr, size_t len,
		    uint8_t type, uint8_t level, const void *val, struct ibv_wc *wc)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(p->a);

	if (!x)
		return -2;
	ibv_wr_start(x);
	x->wr_id = 77;
	x->wr_flags = IBV_SEND_SIGNALED;
	if (!flush) {
		ibv_wr_atomic_write(x, rkey, (uintptr_t)raddr, val);
	} else {
#ifdef VT_HAVE_WR_FLUSH
		ibv_wr_flush(x, rkey, (uintptr_t)raddr, len, type, level);
#else
		(void)len, (void)type, (void)level;
		ibv_wr_abort(x);
		return -2;
#endif
	}
	if (ibv_wr_complete(x))
		return -2;
	if (poll_wc(p->cqa, wc))
		return -1;
	return wc->status;
}

/* An RC pair whose QPs carry the IBA 1.5 send ops and every remote right. */
static void mpe_pair(struct pair *p, uint64_t ops)
{
	memset(p, 0, sizeof(*p));
	p->pd = C.pd;
	p->access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		    FLUSH_RIGHTS;
	p->cqa = ibv_create_cq(C.ctx, 64, NULL, NULL, 0);
	p->cqb = ibv_create_cq(C.ctx, 64, NULL, NULL, 0);
	if (!p->cqa || !p->cqb)
		vt_die("ibv_create_cq: %s", strerror(errno));
	p->a = create_ex(p->cqa, IBV_QPT_RC, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			 0, ops, NULL);
	p->b = create_ex(p->cqb, IBV_QPT_RC, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			 0, ops, NULL);
	if (!p->a || !p->b)
		vt_die("ibv_create_qp_ex RC with ATOMIC WRITE/FLUSH: %s", strerror(errno));
	p->pa = (struct vt_peer){ .qpn = p->a->qp_num, .psn = 300 };
	p->pb = (struct vt_peer){ .qpn = p->b->qp_num, .psn = 400 };
	vt_peer_addr(&C, &p->pa);
	vt_peer_addr(&C, &p->pb);
	if (pair_connect(p))
		vt_die("RC pair to RTS: %s", strerror(errno));
}

static void case_mpe(void)
{
	static const uint8_t val[8] = { 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H' };
	struct ibv_device_attr_ex da;
	struct ibv_mr *mr, *fmr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct pair p;
	struct ibv_wc wc;
	uint64_t caps, ops;
	uint8_t *buf;
	int s, i, other;

	memset(&da, 0, sizeof(da));
	if (ibv_query_device_ex(C.ctx, NULL, &da))
		vt_die("ibv_query_device_ex: %s", strerror(errno));
	caps = da.device_cap_flags_ex;
	buf = page_alloc(2);
	if (!(caps & (MPE_DEV_FLUSH_GLOBAL | MPE_DEV_ATOMIC_WRITE))) {
		/*
		 * A kernel before 6.2 (Debian 12's 6.1): ib_core knows neither
		 * operation, the device claims neither, and both are refused
		 * cleanly (rxe on 6.1 the same).
		 */
		cq = ibv_create_cq(C.ctx, 16, NULL, NULL, 0);
		if (!cq)
			vt_die("ibv_create_cq: %s", strerror(errno));
		errno = 0;
		qp = create_ex(cq, IBV_QPT_RC, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
			       IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE, NULL);
		report(!qp && errno == EOPNOTSUPP, "mpe",
		       "not offered (caps 0x%llx): RC QP with ATOMIC WRITE send op: %s",
		       (unsigned long long)caps, qp ? "created" : strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
		errno = 0;
		qp = create_ex(cq, IBV_QPT_RC, IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
			       IBV_QP_EX_WITH_RDMA_WRITE | MPE_QP_WITH_FLUSH, NULL);
		report(!qp && errno == EOPNOTSUPP, "mpe",
		       "not offered: RC QP with FLUSH send op: %s", qp ? "created" : strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
		errno = 0;
		mr = ibv_reg_mr(C.pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				MPE_ACC_FLUSH_GLOBAL);
		report(!mr, "mpe", "not offered: MR with IBV_ACCESS_FLUSH_GLOBAL: %s",
		       mr ? "registered" : strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
		ibv_destroy_cq(cq);
		free(buf);
		return;
	}
	/*
	 * Guest memory is not persistent: cnuas never claims persistent
	 * FLUSH and ib_core then refuses the right (rxe claims it, and
	 * grants it on pmem pages only).
	 */
	report(!(caps & MPE_DEV_FLUSH_PERSIST), "mpe", "caps 0x%llx: no FLUSH_PERSISTENT",
	       (unsigned long long)caps);
	errno = 0;
	mr = ibv_reg_mr(C.pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			MPE_ACC_FLUSH_PERSIST);
	report(!mr, "mpe", "MR with IBV_ACCESS_FLUSH_PERSISTENT: %s",
	       mr ? "registered" : strerror(errno));
	if (mr)
		ibv_dereg_mr(mr);

	ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_WRITE;
#ifdef VT_HAVE_WR_FLUSH
	ops |= IBV_QP_EX_WITH_FLUSH;
#endif
	mpe_pair(&p, ops);
	mr = ibv_reg_mr(C.pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	fmr = ibv_reg_mr(C.pd, buf + PAGE, PAGE, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 MPE_ACC_FLUSH_GLOBAL);
	if (!mr || !fmr)
		vt_die("ibv_reg_mr: %s", strerror(errno));

	/* ATOMIC WRITE: exactly the 8 bytes at the address change. */
	memset(buf, 0xaa, PAGE);
	s = mpe_post(&p, 0, mr->rkey, buf + 64, 0, 0, 0, val, &wc);
	for (i = 0, other = 0; i < PAGE; i++)
		if ((i < 64 || i >= 72) && buf[i] != 0xaa)
			other++;
	report(s == IBV_WC_SUCCESS && wc.opcode == IBV_WC_ATOMIC_WRITE &&
	       !memcmp(buf + 64, val, 8) && !other, "mpe",
	       "ATOMIC WRITE of 8 bytes at offset 64: %s, opcode %d, bytes %s, %d others changed",
	       st(s), wc.opcode, memcmp(buf + 64, val, 8) ? "wrong" : "right", other);
	/* IBA 1.5: the address must be 8-byte aligned, else an invalid request. */
	s = mpe_post(&p, 0, mr->rkey, buf + 68, 0, 0, 0, val, &wc);
	report(s == IBV_WC_REM_INV_REQ_ERR && buf[68] == 'E', "mpe",
	       "ATOMIC WRITE at offset 68 (unaligned): %s", st(s));
	pair_restate(&p);

#ifdef VT_HAVE_WR_FLUSH
	s = mpe_post(&p, 1, fmr->rkey, buf + PAGE, 128, IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE, NULL, &wc);
	report(s == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FLUSH, "mpe",
	       "FLUSH global, range, MR with the right: %s, opcode %d", st(s), wc.opcode);
	s = mpe_post(&p, 1, fmr->rkey, NULL, 0, IBV_FLUSH_GLOBAL, IBV_FLUSH_MR, NULL, &wc);
	report(s == IBV_WC_SUCCESS && wc.opcode == IBV_WC_FLUSH, "mpe",
	       "FLUSH global, whole MR: %s", st(s));
	s = mpe_post(&p, 1, mr->rkey, buf, 128, IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE, NULL, &wc);
	report(s == IBV_WC_REM_ACCESS_ERR, "mpe", "FLUSH on an MR without the right: %s", st(s));
	pair_restate(&p);
	s = mpe_post(&p, 1, fmr->rkey, buf + PAGE, 128, IBV_FLUSH_PERSISTENT, IBV_FLUSH_RANGE, NULL,
		     &wc);
	report(s == IBV_WC_REM_ACCESS_ERR, "mpe", "FLUSH persistent (never granted): %s", st(s));
#else
	printf("SKIP mpe           FLUSH: built against a libibverbs without ibv_wr_flush\n");
#endif
	ibv_dereg_mr(mr);
	ibv_dereg_mr(fmr);
	pair_free(&p);
	free(buf);
}

int main(int argc, char **argv)
{
	static const struct vt_case cases[] = {
		{ "qp-ex", case_qp_ex }, { "ud-modify", case_ud_modify }, { "mw", case_mw },
		{ "rereg", case_rereg }, { "cq-ex", case_cq_ex }, { "parent-domain", case_parent_domain },
		{ "ud-recv", case_ud_recv },
		{ "reset-cq", case_reset_cq }, { "srq-resize", case_srq_resize },
		{ "mpe", case_mpe },
	};

	vt_prog = "cnuas-verbsapi";
	vt_opts_default(&O);
	O.timeout = 12;
	O.retry_cnt = 3;
	O.rnr_retry = 3;
	vt_run_cases(argc, argv, &C, &O, cases, sizeof(cases) / sizeof(cases[0]));
	printf("cnuas-verbsapi: %d passed, %d failed\n", npass, nfail);
	return nfail ? 1 : 0;
}
