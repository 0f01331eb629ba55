// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * The extended send API (ibv_wr_start, ibv_wr_<opcode>, ibv_wr_set_*,
 * ibv_wr_complete/abort) on the same SQ ring as ibv_post_send.
 *
 * ibv_wr_start takes the SQ lock. Each request is built as an
 * ibv_send_wr in the QP's batch, its SGEs and inline bytes copied when
 * they are set (the caller may reuse them at once), and is written to
 * the next free slot by cnuas_wqe_send(), the same checks as
 * ibv_post_send, when the next request starts or the batch completes.
 * The producer index moves only in ibv_wr_complete, so the kernel sees
 * all of a batch or, after any error in it or ibv_wr_abort, none.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* dladdr(); rdma-core's own build does not set it */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnuas.h"
#include "wqe.h"

/*
 * ibv_qp_to_qp_ex() of libibverbs looks for VERBS_QP_EX in verbs_qp's
 * comp_mask, right after the union of ibv_qp and ibv_qp_ex. ibv_qp_ex
 * grew within provider ABI 34 (wr_flush, rdma-core 45), which moved that
 * field, so it must be set where the library we load into has it: the
 * standalone build (Makefile) measures that library's ibv_qp_ex from its
 * own headers (CNUAS_LIB_QP_EX_SIZE); in rdma-core's tree the library
 * is the tree's own. Where the library's is smaller, its comp_mask lies
 * on our tree's wr_flush, which no caller can use here.
 */
#ifndef CNUAS_LIB_QP_EX_SIZE
#define CNUAS_LIB_QP_EX_SIZE sizeof(struct ibv_qp_ex)
#endif
#define CNUAS_ALIGN(x, a) (((x) + (a) - 1) / (a) * (a))
#define CNUAS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define CNUAS_LIB_QP_MASK_OFF \
	CNUAS_ALIGN(CNUAS_MAX(sizeof(struct ibv_qp), CNUAS_LIB_QP_EX_SIZE), \
		    _Alignof(struct ibv_qp_ex))

_Static_assert(CNUAS_LIB_QP_EX_SIZE <= sizeof(struct ibv_qp_ex),
	       "the system libibverbs is newer than the rdma-core headers");
_Static_assert(CNUAS_LIB_QP_MASK_OFF + sizeof(uint32_t) <=
	       offsetof(struct verbs_qp, comp_mask) + sizeof(uint32_t),
	       "verbs_qp layout");

#define CNUAS_WR_OPS_UD (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)
#define CNUAS_WR_OPS_UC (CNUAS_WR_OPS_UD | IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)
#define CNUAS_WR_OPS_RC (CNUAS_WR_OPS_UD | IBV_QP_EX_WITH_SEND_WITH_INV | \
			 IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | \
			 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

/*
 * wr_flush came with rdma-core 47 (Debian 12 has 44, whose ibv_qp_ex
 * ends with wr_atomic_write): set it only where the library's
 * ibv_qp_ex has it, else it would land on the library's comp_mask.
 */
#define CNUAS_LIB_HAS(member) \
	(CNUAS_LIB_QP_EX_SIZE >= offsetof(struct ibv_qp_ex, member) + \
				 sizeof(void (*)(void)))
#define CNUAS_LIB_HAS_WR_FLUSH CNUAS_LIB_HAS(wr_flush)
_Static_assert(offsetof(struct ibv_qp_ex, wr_atomic_write) <
	       offsetof(struct ibv_qp_ex, wr_flush), "ibv_qp_ex layout");

/*
 * Has the libibverbs we run in wr_flush? The one built against says so
 * for itself; a provider built against an older one (44) may run in a
 * newer one (one package on Debian 12 and 13, as the lab installs it),
 * whose file name carries its release: libibverbs.so.1.14.56.1. Then
 * its ibv_qp_ex is our tree's, comp_mask included; but a program built
 * against the older headers looks for comp_mask where wr_flush is, so
 * only a QP that asks for FLUSH gets wr_flush (cnuas_wr_init()).
 */
int cnuas_lib_has_wr_flush(void)
{
	unsigned int rel = 0;
	Dl_info info;
	const char *p;
	char *path;

	if (CNUAS_LIB_HAS_WR_FLUSH)
		return 1;
	if (!dladdr((void *)ibv_get_device_name, &info) || !info.dli_fname)
		return 0;
	path = realpath(info.dli_fname, NULL);
	if (!path)
		return 0;
	p = strstr(path, "libibverbs.so.1.");
	if (!p || sscanf(p, "libibverbs.so.1.%*u.%u", &rel) != 1)
		rel = 0;
	free(path);
	return rel >= 47;
}

/* IB_UVERBS_DEVICE_FLUSH_GLOBAL, _ATOMIC_WRITE (kernel 6.2 uapi) */
#define CNUAS_DEV_FLUSH_GLOBAL	(1ULL << 38)
#define CNUAS_DEV_ATOMIC_WRITE	(1ULL << 40)

/*
 * IBA 1.5 operations, at context creation: only where the kernel
 * reports them (cnuas_ib on 6.2 and later) and the library can call them.
 */
uint64_t cnuas_wr_ops_mpe(struct ibv_context *ibctx)
{
	struct ibv_device_attr_ex attr = {};
	uint64_t ops = 0;

	if (cnuas_query_device_ex(ibctx, NULL, &attr, sizeof(attr)))
		return 0;
	if ((attr.device_cap_flags_ex & CNUAS_DEV_FLUSH_GLOBAL) &&
	    cnuas_lib_has_wr_flush())
		ops |= IBV_QP_EX_WITH_FLUSH;
	if ((attr.device_cap_flags_ex & CNUAS_DEV_ATOMIC_WRITE) &&
	    CNUAS_LIB_HAS(wr_atomic_write))
		ops |= IBV_QP_EX_WITH_ATOMIC_WRITE;
	return ops;
}

/* send_ops_flags a QP of this type may ask for. */
uint64_t cnuas_wr_ops(const struct cnuas_context *ctx, enum ibv_qp_type type)
{
	return type == IBV_QPT_RC ? CNUAS_WR_OPS_RC | ctx->wr_ops_mpe :
	       type == IBV_QPT_UC ? CNUAS_WR_OPS_UC :
	       type == IBV_QPT_UD ? CNUAS_WR_OPS_UD : 0;
}

static struct cnuas_qp *qpx_to_cqp(struct ibv_qp_ex *qpx)
{
	return cnuas_container_of(qpx, struct cnuas_qp, vqp.qp_ex);
}

static void fail(struct cnuas_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* Write the request being built to the next slot. */
static void finish(struct cnuas_qp *qp)
{
	struct cnuas_wr_batch *b = qp->batch;
	struct cnuas_ring *r = &qp->sq.ring;
	struct cnuas_wqe_limits lim;

	if (!b->open)
		return;
	b->open = 0;
	if (b->err)
		return;
	if (b->n == b->space) {
		fail(b, ENOMEM);
		return;
	}
	if (qp->vqp.qp.qp_type == IBV_QPT_UD && !b->wr.wr.ud.ah) {
		fail(b, EINVAL);
		return;
	}
	cnuas_sq_limits(qp, &lim);
	lim.wr_api = 1;
	fail(b, cnuas_wqe_send(cnuas_ring_slot(r, r->index + b->n), &lim,
			       &b->wr, b->ah_num));
	if (!b->err)
		b->n++;
}

/* Start a request: the previous one is done. */
static struct ibv_send_wr *begin(struct ibv_qp_ex *qpx,
				 enum ibv_wr_opcode opcode)
{
	struct cnuas_qp *qp = qpx_to_cqp(qpx);
	struct cnuas_wr_batch *b = qp->batch;

	finish(qp);
	memset(&b->wr, 0, sizeof(b->wr));
	b->wr.wr_id = qpx->wr_id;
	b->wr.send_flags = qpx->wr_flags;
	b->wr.opcode = opcode;
	b->wr.sg_list = b->sge;
	b->ah_num = 0;
	b->open = 1;
	return &b->wr;
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct cnuas_qp *qp = qpx_to_cqp(qpx);
	struct cnuas_wr_batch *b = qp->batch;

	pthread_spin_lock(&qp->sq.lock);
	b->n = 0;
	b->err = 0;
	b->open = 0;
	b->space = cnuas_ring_space(&qp->sq.ring);
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct cnuas_qp *qp = qpx_to_cqp(qpx);
	struct cnuas_wr_batch *b = qp->batch;
	uint32_t n = 0;
	int err;

	finish(qp);
	err = b->err;
	if (!err && !cnuas_sq_ready(qp))
		err = EINVAL;
	if (!err) {
		n = b->n;
		if (n)
			cnuas_ring_produce(&qp->sq.ring, n);
	}
	pthread_spin_unlock(&qp->sq.lock);
	return err ? err : cnuas_sq_doorbell(qp, n);
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct cnuas_qp *qp = qpx_to_cqp(qpx);

	qp->batch->open = 0;
	pthread_spin_unlock(&qp->sq.lock);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	begin(qpx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	begin(qpx, IBV_WR_SEND_WITH_IMM)->imm_data = imm;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	begin(qpx, IBV_WR_SEND_WITH_INV)->invalidate_rkey = rkey;
}

static void rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
		 uint32_t rkey, uint64_t raddr, __be32 imm)
{
	struct ibv_send_wr *wr = begin(qpx, opcode);

	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = raddr;
	wr->imm_data = imm;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			  uint64_t raddr)
{
	rdma(qpx, IBV_WR_RDMA_WRITE, rkey, raddr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t raddr, __be32 imm)
{
	rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, raddr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			 uint64_t raddr)
{
	rdma(qpx, IBV_WR_RDMA_READ, rkey, raddr, 0);
}

static void atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode opcode,
		   uint32_t rkey, uint64_t raddr, uint64_t compare_add,
		   uint64_t swap)
{
	struct ibv_send_wr *wr = begin(qpx, opcode);

	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = raddr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t raddr, uint64_t compare, uint64_t swap)
{
	atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, raddr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t raddr, uint64_t add)
{
	atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr, add, 0);
}

/* The 8 bytes as they lie in memory: copied, never byte-swapped. */
static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			    uint64_t raddr, const void *atomic_wr)
{
	uint64_t val;

	memcpy(&val, atomic_wr, sizeof(val));
	atomic(qpx, (enum ibv_wr_opcode)CNUAS_WR_ATOMIC_WRITE, rkey, raddr, val, 0);
}

static void wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t raddr,
		     size_t len, uint8_t type, uint8_t level)
{
	atomic(qpx, (enum ibv_wr_opcode)CNUAS_WR_FLUSH, rkey, raddr, len,
	       (uint64_t)type | (uint64_t)level << 8);
}

/* The batch a setter works on; NULL (and EINVAL) before any request. */
static struct cnuas_wr_batch *open_batch(struct ibv_qp_ex *qpx)
{
	struct cnuas_wr_batch *b = qpx_to_cqp(qpx)->batch;

	if (!b->open)
		fail(b, EINVAL);
	return b->open ? b : NULL;
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	begin(qpx, IBV_WR_LOCAL_INV)->invalidate_rkey = rkey;
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *wr = begin(qpx, IBV_WR_BIND_MW);

	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *info;
}

static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			uint16_t mss)
{
	begin(qpx, IBV_WR_TSO);
	fail(qpx_to_cqp(qpx)->batch, EOPNOTSUPP);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	fail(qpx_to_cqp(qpx)->batch, EOPNOTSUPP);	/* no XRC */
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct cnuas_wr_batch *b = open_batch(qpx);

	if (!b)
		return;
	if (!ah) {
		fail(b, EINVAL);
		return;
	}
	b->wr.wr.ud.ah = ah;
	b->wr.wr.ud.remote_qpn = remote_qpn;
	b->wr.wr.ud.remote_qkey = remote_qkey;
	b->ah_num = to_cah(ah)->ah_num;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	struct cnuas_qp *qp = qpx_to_cqp(qpx);
	struct cnuas_wr_batch *b = open_batch(qpx);

	if (!b)
		return;
	if (num_sge > qp->sq.max_sge) {
		fail(b, EINVAL);
		return;
	}
	memcpy(b->sge, sg_list, num_sge * sizeof(*sg_list));
	b->wr.num_sge = num_sge;
	b->wr.send_flags &= ~IBV_SEND_INLINE;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct cnuas_qp *qp = qpx_to_cqp(qpx);
	struct cnuas_wr_batch *b = open_batch(qpx);
	size_t len = 0, i;

	if (!b)
		return;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->max_inline - len) {
			fail(b, EINVAL);
			return;
		}
		memcpy(b->inl + len, buf_list[i].addr, buf_list[i].length);
		len += buf_list[i].length;
	}
	b->sge[0].addr = (uintptr_t)b->inl;
	b->sge[0].length = len;
	b->sge[0].lkey = 0;
	b->wr.num_sge = 1;
	b->wr.send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
			       size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &buf);
}

/* Fill in the ops and announce them (VERBS_QP_EX); 0 or an errno. */
int cnuas_wr_init(struct cnuas_qp *qp, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;
	struct cnuas_wr_batch *b;
	uint8_t *mask = (uint8_t *)&qp->vqp + CNUAS_LIB_QP_MASK_OFF;
	uint32_t m;

	if (send_ops_flags & ~cnuas_wr_ops(to_cctx(qp->vqp.qp.context),
					   qp->vqp.qp.qp_type))
		return EOPNOTSUPP;
	b = calloc(1, sizeof(*b));
	if (!b)
		return ENOMEM;
	qp->batch = b;
	b->sge = calloc(qp->sq.max_sge ? qp->sq.max_sge : 1, sizeof(*b->sge));
	b->inl = malloc(qp->max_inline ? qp->max_inline : 1);
	if (!b->sge || !b->inl) {
		cnuas_wr_free(qp);
		return ENOMEM;
	}

	qpx->wr_start = wr_start;
	qpx->wr_complete = wr_complete;
	qpx->wr_abort = wr_abort;
	qpx->wr_send = wr_send;
	qpx->wr_send_imm = wr_send_imm;
	qpx->wr_send_inv = wr_send_inv;
	qpx->wr_send_tso = wr_send_tso;
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_set_ud_addr = wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
	/* Only when offered (cnuas_wr_ops_mpe()) and asked for: see above. */
	if (send_ops_flags & IBV_QP_EX_WITH_ATOMIC_WRITE)
		qpx->wr_atomic_write = wr_atomic_write;
	if (send_ops_flags & IBV_QP_EX_WITH_FLUSH)
		qpx->wr_flush = wr_flush;

	qp->vqp.comp_mask |= VERBS_QP_EX;
	/* Not where a newer library keeps the wr_flush asked for. */
	if (CNUAS_LIB_HAS_WR_FLUSH || !(send_ops_flags & IBV_QP_EX_WITH_FLUSH)) {
		memcpy(&m, mask, sizeof(m));
		m |= VERBS_QP_EX;
		memcpy(mask, &m, sizeof(m));
	}
	return 0;
}

void cnuas_wr_free(struct cnuas_qp *qp)
{
	if (!qp->batch)
		return;
	free(qp->batch->sge);
	free(qp->batch->inl);
	free(qp->batch);
	qp->batch = NULL;
}
