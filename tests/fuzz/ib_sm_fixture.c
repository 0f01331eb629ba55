// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * One cnuas_ib QP and its peer's frames, on the host, for the ib_resp and
 * ib_comp fuzz targets. The transport is the driver's own code
 * (src/cnuas_ib/transport.c recv.c req.c comp.c resp.c queue.c opcode.c,
 * built against kstub/); what it calls into elsewhere is stubbed here,
 * small and with the same contract:
 *
 *   qp.c      the QP lookup, qp_error (state to ERR, then the transport),
 *             the RQ pop (queue.c's own)
 *   mr.c      five MRs on host memory (exact-size heap buffers: ASan sees
 *             any byte past them), lookups by key, PD, access and bounds,
 *             the SGE walk, atomics; one MR can be invalidated remotely
 *   cq.c      CQEs are checked and counted, not queued
 *   net.c     cnuas_ib_parse()'s checks from the BTH on (the ICRC counts
 *             as checked by the device), frames out are checked and freed
 *
 * The input: 8 bytes of QP configuration, then commands (see
 * ib_sm_fixture.h). After every command the invariants below are checked
 * and a violation aborts:
 *   - the requester's PSNs: una <= req_psn <= psn_hi, less than half the
 *     PSN space apart; SQ indices cons <= req_idx <= fetch <= cons + size;
 *     READ/atomics in flight within max_rd_atomic
 *   - the responder's READ/atomic history within max_dest_rd_atomic
 *   - completions only for posted WQEs, each at most once, in posting
 *     order (SQ and RQ); a failed send WQE takes the QP to ERR
 *   - MR memory is written only in bounds (checked at every copy); the MR
 *     without any write right and the MR of another PD never change
 *   - frames out carry a known opcode, the peer's QPN, and at most one
 *     MTU of payload
 * At the end the QP is moved to ERR and drained: every posted receive
 * WQE and every signaled send WQE has then completed exactly once.
 */
#include <stdarg.h>
#include <stdio.h>

#include "cnuas_ib.h"
#include "link_ops.h"
#include "wire.h"
#include "ib_sm_fixture.h"

#define FX_QPN		17
#define FX_PEER_QPN	0x22
#define FX_SQ_NUM	16
#define FX_RQ_NUM	16
#define FX_MAX_SGE	4
#define FX_NMR		5
#define FX_MAX_POSTS	256
#define FX_SEND_ID	0x5e000000ull
#define FX_RECV_ID	0x7e000000ull

#define fx_check(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "ib_sm: invariant failed: %s (%s:%d)\n",	\
			#cond, __FILE__, __LINE__);			\
		abort();						\
	}								\
} while (0)

bool kstub_in_softirq;
bool kstub_debug;

void kstub_printk(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

unsigned long jiffies;
u64 kstub_ns;

struct fx_mr {
	struct cnuas_ib_mr mr;
	u8 *buf;
	u8 *ref;			/* canaries: what the contents must stay */
	bool remote_inv;		/* SEND with Invalidate may name it */
};

static struct fx {
	struct cnuas_ib_dev cdev;
	struct cnuas_net_aux_dev adev;
	struct cnuas_ib_pd pd, pd2;
	struct cnuas_ib_cq scq, rcq;
	struct cnuas_ib_qp qp;
	struct cnuas_ib_ah ah;
	struct fx_mr mrs[FX_NMR];
	bool alive;
	bool tx_busy, no_mem;
	/* what was posted and what completed */
	u32 sends, recvs;
	bool send_signaled[FX_MAX_POSTS];
	u8 send_done[FX_MAX_POSTS], recv_done[FX_MAX_POSTS];
	u64 recv_room[FX_MAX_POSTS];
	u32 send_next, recv_next;	/* lowest not yet completed */
	bool send_failed;		/* an error CQE (not a flush) */
	u64 frames_out;
	struct ib_sm_outcome out;
} fx;

const struct ib_sm_outcome *ib_sm_outcome(void)
{
	return &fx.out;
}

/* Count what a frame out says, for the scenario tests. */
static void fx_outcome_frame(const struct cnuas_opcode *op, void *bth)
{
	struct cnuas_aeth *aeth = cnuas_eh_ptr(op, bth, CNUAS_EH_AETH);
	u8 opc = cnuas_bth_opcode(bth);

	if (aeth) {
		u8 syn = cnuas_aeth_syndrome(aeth);

		if ((syn & CNUAS_AETH_TYPE_MASK) == CNUAS_AETH_TYPE_NAK)
			fx.out.naks[min_t(u8, syn & CNUAS_AETH_VALUE_MASK, 4)]++;
	}
	if (opc >= CNUAS_OP_RC_READ_RESP_FIRST &&
	    opc <= CNUAS_OP_RC_READ_RESP_ONLY) {
		fx.out.read_resps++;
		fx.out.last_read_psn = cnuas_bth_psn(bth);
	}
	if (opc == CNUAS_OP_RC_ATOMIC_ACK)
		fx.out.atomic_acks++;
}

static const struct cnuas_ib_mr_ops fx_mr_ops;

/* ---- kernel odds and ends ---- */

void kfree_skb(struct sk_buff *skb)
{
	if (!skb)
		return;
	free(skb->data);
	free(skb);
}

struct workqueue_struct *alloc_workqueue(const char *fmt, unsigned int flags,
					 int max_active, ...)
{
	return NULL;
}

void destroy_workqueue(struct workqueue_struct *wq) {}
struct page *alloc_page(gfp_t g) { return NULL; }
void put_page(struct page *page) {}
const char *ib_wc_status_msg(enum ib_wc_status s) { return "status"; }
const char *ib_event_msg(enum ib_event_type e) { return "event"; }
const char *cnuas_ib_stat_name(enum cnuas_ib_stat s) { return "stat"; }
const char *cnuas_ib_qp_state_name(enum ib_qp_state s) { return "state"; }
const char *cnuas_ib_syndrome_name(u8 syn) { return "syndrome"; }
const char *cnuas_ib_rkey_why(struct cnuas_ib_pd *pd, u32 key, u64 addr,
			      u64 len, int access, u32 qpn)
{
	return "why";
}

/* queue.c's user-mapped rings: the fixture's QP is a kernel QP. */
int rdma_user_mmap_entry_insert(struct ib_ucontext *uc,
				struct rdma_user_mmap_entry *e, size_t len)
{
	return -EOPNOTSUPP;
}

u64 rdma_user_mmap_get_offset(struct rdma_user_mmap_entry *e) { return 0; }
void rdma_user_mmap_entry_remove(struct rdma_user_mmap_entry *e) {}
struct rdma_user_mmap_entry *
rdma_user_mmap_entry_get(struct ib_ucontext *uc, struct vm_area_struct *vma)
{
	return NULL;
}

void rdma_user_mmap_entry_put(struct rdma_user_mmap_entry *e) {}
int rdma_user_mmap_io(struct ib_ucontext *uc, struct vm_area_struct *vma,
		      unsigned long pfn, unsigned long size, unsigned long prot,
		      struct rdma_user_mmap_entry *e)
{
	return -EOPNOTSUPP;
}

int remap_vmalloc_range(struct vm_area_struct *vma, void *addr,
			unsigned long pgoff)
{
	return -EOPNOTSUPP;
}

void cnuas_net_aux_flush(struct cnuas_net_aux_dev *adev) {}
void cnuas_ib_loop_init(struct cnuas_ib_dev *cdev) {}
void cnuas_ib_loop_cleanup(struct cnuas_ib_dev *cdev) {}
void cnuas_ib_port_key_violation(struct cnuas_ib_dev *cdev, bool pkey) {}
void cnuas_ib_trap_key(struct cnuas_ib_dev *cdev, bool pkey,
		       const struct cnuas_ib_rxp *p, u32 key, u32 src_qp) {}

void cnuas_ib_stat_inc(struct cnuas_ib_dev *cdev, enum cnuas_ib_stat s)
{
	fx_check(s < CNUAS_STAT_NUM);
	atomic64_inc(&cdev->tdev.stats[s]);
}

/* ---- qp.c, srq.c, ah.c, mcast.c ---- */

struct cnuas_ib_qp *cnuas_ib_qp_get(struct cnuas_ib_dev *cdev, u32 qpn)
{
	if (!fx.alive || qpn != fx.qp.ibqp.qp_num)
		return NULL;
	refcount_inc(&fx.qp.ref);
	return &fx.qp;
}

void cnuas_ib_qp_put(struct cnuas_ib_qp *qp)
{
	fx_check(qp->ref.refs.counter > 1);
	refcount_dec_and_test(&qp->ref);
}

void cnuas_ib_qp_error(struct cnuas_ib_qp *qp, enum ib_event_type event)
{
	enum ib_qp_state old = qp->state;

	if (old == IB_QPS_RESET || old == IB_QPS_ERR)
		return;
	qp->state = IB_QPS_ERR;
	cnuas_ib_transport_qp_modify(qp, IB_QP_STATE, old);
}

int cnuas_ib_recv_wqe_pop(struct cnuas_ib_qp *qp,
			  struct cnuas_ib_recv_wqe *wqe)
{
	u32 left;

	fx_check(!qp->srq);
	return cnuas_ib_queue_pop_recv(&qp->rq, qp->rq_max_sge, wqe, &left);
}

int cnuas_ib_srq_pop(struct cnuas_ib_srq *srq, struct cnuas_ib_recv_wqe *wqe)
{
	abort();
}

struct cnuas_ib_ah *cnuas_ib_ah_get(struct cnuas_ib_pd *pd, u32 ah_num)
{
	if (pd != &fx.pd || ah_num != fx.ah.ah_num)
		return NULL;
	refcount_inc(&fx.ah.ref);
	return &fx.ah;
}

void cnuas_ib_ah_put(struct cnuas_ib_ah *ah)
{
	fx_check(ah->ref.refs.counter > 1);
	refcount_dec_and_test(&ah->ref);
}

static u32 fx_mcast_qpns(struct cnuas_ib_dev *cdev,
			 const struct cnuas_ib_rxp *p, u32 *qpn)
{
	return 0;
}

/* The link layer (link_ops.h): what recv.c asks of it; no groups. */
static const struct cnuas_ib_link_ops fx_link = {
	.mcast_qpns = fx_mcast_qpns,
};

/* ---- mr.c, mw.c, mr-fast.c ---- */

static struct fx_mr *fx_mr_of(struct cnuas_ib_mr *mr)
{
	return container_of(mr, struct fx_mr, mr);
}

static struct cnuas_ib_mr *fx_mr_get(struct cnuas_ib_pd *pd, u32 key,
				     u64 addr, u64 len, int access)
{
	for (int i = 0; i < FX_NMR; i++) {
		struct cnuas_ib_mr *mr = &fx.mrs[i].mr;

		if (mr->key != key || mr->ibmr.pd != &pd->ibpd ||
		    (mr->access & access) != access || mr->revoked ||
		    !cnuas_ib_mr_in_bounds(mr, addr, len))
			continue;
		refcount_inc(&mr->ref);
		return mr;
	}
	return NULL;
}

struct cnuas_ib_mr *cnuas_ib_mr_get_lkey(struct cnuas_ib_pd *pd, u32 lkey,
					 u64 addr, u64 len, int access)
{
	return fx_mr_get(pd, lkey, addr, len, access);
}

struct cnuas_ib_mr *cnuas_ib_mr_get_rkey(struct cnuas_ib_pd *pd, u32 rkey,
					 u64 addr, u64 len, int access,
					 u32 qpn)
{
	if (!(access & (IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
			IB_ACCESS_REMOTE_ATOMIC)))
		return NULL;
	return fx_mr_get(pd, rkey, addr, len, access);
}

void cnuas_ib_mr_put(struct cnuas_ib_mr *mr)
{
	fx_check(mr->ref.refs.counter > 1);
	refcount_dec_and_test(&mr->ref);
}

/* The MR's bytes at @addr: the caller's lookup must have checked it. */
static u8 *fx_mr_at(struct cnuas_ib_mr *mr, u64 addr, u64 len)
{
	fx_check(mr->ref.refs.counter > 1);
	fx_check(cnuas_ib_mr_in_bounds(mr, addr, len));
	return fx_mr_of(mr)->buf + (addr - mr->iova);
}

static int fx_mr_copy(struct cnuas_ib_mr *mr, u64 addr, void *buf, u32 len,
		      enum cnuas_ib_copy_dir dir)
{
	u8 *va = fx_mr_at(mr, addr, len);

	if (dir == CNUAS_IB_TO_MR)
		memcpy(va, buf, len);
	else
		memcpy(buf, va, len);
	return 0;
}

static const struct cnuas_ib_mr_ops fx_mr_ops = {
	.copy = fx_mr_copy,
};

int cnuas_ib_mr_atomic(struct cnuas_ib_mr *mr, u64 addr,
		       enum cnuas_ib_atomic_op op, u64 compare_add, u64 swap,
		       u64 *orig)
{
	u64 val, new;
	u8 *va;

	if (addr & 7)
		return -EINVAL;
	/* ATOMIC WRITE is a WRITE to the key's rights (IBA 1.5) */
	fx_check(mr->access & (op == CNUAS_IB_ATOMIC_WRITE ? IB_ACCESS_REMOTE_WRITE :
			       IB_ACCESS_REMOTE_ATOMIC));
	va = fx_mr_at(mr, addr, sizeof(val));
	memcpy(&val, va, sizeof(val));
	*orig = val;
	new = cnuas_ib_atomic_new(op, val, compare_add, swap);
	memcpy(va, &new, sizeof(new));
	return 0;
}

u64 cnuas_ib_sge_total(const struct cnuas_sge *sge, u32 num_sge)
{
	u64 total = 0;

	for (u32 i = 0; i < num_sge; i++)
		total += sge[i].length;
	return total;
}

/* mr.c's contract: every piece looked up with @access, -EINVAL/-EMSGSIZE. */
int cnuas_ib_sge_copy(struct cnuas_ib_pd *pd, const struct cnuas_sge *sge,
		      u32 num_sge, u32 offset, void *buf, u32 len,
		      enum cnuas_ib_copy_dir dir, int access)
{
	u8 *b = buf;

	fx_check(dir == CNUAS_IB_FROM_MR || (access & IB_ACCESS_LOCAL_WRITE));
	for (u32 i = 0; i < num_sge && len; i++) {
		struct cnuas_ib_mr *mr;
		u32 chunk;
		u64 addr;

		if (offset >= sge[i].length) {
			offset -= sge[i].length;
			continue;
		}
		chunk = min(len, sge[i].length - offset);
		addr = sge[i].addr + offset;
		offset = 0;
		mr = cnuas_ib_mr_get_lkey(pd, sge[i].lkey, addr, chunk, access);
		if (!mr)
			return -EINVAL;
		fx_mr_copy(mr, addr, b, chunk, dir);
		cnuas_ib_mr_put(mr);
		b += chunk;
		len -= chunk;
	}
	return len ? -EMSGSIZE : 0;
}

int cnuas_ib_mr_invalidate(struct cnuas_ib_pd *pd, u32 key, u32 qpn)
{
	for (int i = 0; i < FX_NMR; i++) {
		struct fx_mr *m = &fx.mrs[i];

		if (m->mr.key == key && m->remote_inv &&
		    m->mr.ibmr.pd == &pd->ibpd && !m->mr.revoked) {
			m->mr.revoked = true;
			return 0;
		}
	}
	return -EINVAL;
}

enum ib_wc_status cnuas_ib_mw_bind(struct cnuas_ib_qp *qp,
				   const struct cnuas_send_wqe *w)
{
	return IB_WC_MW_BIND_ERR;
}

enum ib_wc_status cnuas_ib_mr_fast_reg(struct cnuas_ib_pd *pd, u32 key,
				       int access)
{
	return IB_WC_LOC_PROT_ERR;
}

/* ---- cq.c ---- */

int cnuas_ib_cq_post(struct cnuas_ib_cq *cq, const struct cnuas_cqe *cqe,
		     bool solicited)
{
	fx_check(cq == &fx.scq || cq == &fx.rcq);
	fx_check(cqe->qp_num == fx.qp.ibqp.qp_num);
	if (cq == &fx.scq) {
		u64 k = cqe->wr_id - FX_SEND_ID;

		/* posted, not completed yet, and none after it completed */
		fx_check(cqe->wr_id >= FX_SEND_ID && k < fx.sends);
		fx_check(k >= fx.send_next && !fx.send_done[k]);
		fx.send_done[k] = 1;
		fx.send_next = k + 1;
		fx_check(cqe->status || fx.send_signaled[k]);
		if (cqe->status && cqe->status != IB_WC_WR_FLUSH_ERR)
			fx.send_failed = true;
	} else {
		u64 k = cqe->wr_id - FX_RECV_ID;

		/* the RQ completes in order, each WQE once */
		fx_check(cqe->wr_id >= FX_RECV_ID && k < fx.recvs);
		fx_check(k == fx.recv_next && !fx.recv_done[k]);
		fx.recv_done[k] = 1;
		fx.recv_next++;
		fx_check(cqe->status || cqe->byte_len <= fx.recv_room[k] ||
			 cqe->opcode == IB_WC_RECV_RDMA_WITH_IMM);
	}
	return 0;
}

/* ---- net.c ---- */

static const u8 fx_iph[20] = {
	0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1
};
static const u8 fx_smac[ETH_ALEN] = { 2, 0, 0, 0, 0, 2 };

/* cnuas_ib_parse() from the BTH on; @skb holds BTH..payload, pad, ICRC. */
int cnuas_ib_parse(struct cnuas_ib_dev *cdev, struct sk_buff *skb, u32 flags,
		   struct cnuas_ib_rxp *p)
{
	struct cnuas_bth *bth = (void *)skb->data;
	const struct cnuas_opcode *op;
	int plen;

	if (skb->len < CNUAS_BTH_LEN + CNUAS_ICRC_LEN)
		return CNUAS_STAT_DROP_HDR;
	if (cnuas_bth_tver(bth))
		return CNUAS_STAT_DROP_HDR;
	op = cnuas_opcode_get(cnuas_bth_opcode(bth));
	if (!op)
		return CNUAS_STAT_DROP_OPCODE;
	plen = cnuas_payload_len(op, bth, skb->len);
	if (plen < 0)
		return CNUAS_STAT_DROP_HDR;
	if ((!(op->flags & CNUAS_OPF_PAYLOAD) && (plen || cnuas_bth_pad(bth))) ||
	    ((plen + cnuas_bth_pad(bth)) & 3))
		return CNUAS_STAT_DROP_HDR;
	memset(&p->saddr, 0, sizeof(p->saddr));
	p->saddr.s6_addr[10] = 0xff;
	p->saddr.s6_addr[11] = 0xff;
	memcpy(&p->saddr.s6_addr[12], fx_iph + 12, 4);
	if (flags & FX_RX_OTHER_SRC)
		p->saddr.s6_addr[15] ^= 0x80;
	p->net_type = RDMA_NETWORK_IPV4;
	p->skb = skb;
	p->smac = fx_smac;
	p->vlan_id = 0xffff;
	p->iph = fx_iph;
	p->op = op;
	p->bth = bth;
	p->opcode = cnuas_bth_opcode(bth);
	p->psn = cnuas_bth_psn(bth);
	p->qpn = cnuas_bth_qpn(bth);
	p->payload = (u8 *)bth + op->hdr_len;
	p->paylen = plen;
	return 0;
}

static struct sk_buff *fx_skb(u32 len)
{
	struct sk_buff *skb = calloc(1, sizeof(*skb));

	fx_check(skb);
	skb->data = calloc(1, len);
	fx_check(skb->data);
	skb->len = len;
	return skb;
}

struct sk_buff *cnuas_ib_pkt_alloc(struct cnuas_ib_dev *cdev,
				   struct cnuas_skb_pool *pool,
				   const struct cnuas_ib_av *av,
				   u32 hdr_len, u32 paylen, void **bth,
				   void **payload)
{
	struct sk_buff *skb;

	if (fx.no_mem)
		return NULL;
	fx_check(hdr_len >= CNUAS_BTH_LEN && paylen <= 4096);
	skb = fx_skb(hdr_len + paylen + cnuas_ib_pad(paylen) + CNUAS_ICRC_LEN);
	*bth = skb->data;
	*payload = skb->data + hdr_len;
	return skb;
}

struct sk_buff *cnuas_ib_pkt_from_mr(struct cnuas_ib_dev *cdev,
				     struct cnuas_skb_pool *pool,
				     const struct cnuas_ib_av *av, u32 hdr_len,
				     void **bth, struct cnuas_ib_pd *pd,
				     const struct cnuas_sge *sge, u32 num_sge,
				     u32 offset, u32 paylen, int access)
{
	struct sk_buff *skb;
	void *payload;
	int err;

	if (fx.no_mem)
		return ERR_PTR(-ENOMEM);
	skb = cnuas_ib_pkt_alloc(cdev, pool, av, hdr_len, paylen, bth, &payload);
	err = cnuas_ib_sge_copy(pd, sge, num_sge, offset, payload, paylen,
				CNUAS_IB_FROM_MR, access);
	if (err) {
		kfree_skb(skb);
		return ERR_PTR(err);
	}
	return skb;
}

void cnuas_ib_pkt_seal(struct cnuas_ib_dev *cdev, struct sk_buff *skb) {}
void cnuas_ib_pkt_pools_free(struct cnuas_skb_pool *pools, int n) {}

/* A frame out: checked, then gone (the wire). */
int cnuas_ib_xmit(struct cnuas_ib_dev *cdev, struct sk_buff *skb, bool more)
{
	struct cnuas_bth *bth = (void *)skb->data;
	const struct cnuas_opcode *op;
	int plen;

	if (fx.tx_busy)
		return -EBUSY;
	op = cnuas_opcode_get(cnuas_bth_opcode(bth));
	fx_check(op);
	plen = cnuas_payload_len(op, bth, skb->len);
	fx_check(plen >= 0 && (u32)plen <= fx.qp.t.mtu);
	if (fx.qp.type == IB_QPT_RC || fx.qp.type == IB_QPT_UC)
		fx_check(cnuas_bth_qpn(bth) == FX_PEER_QPN);
	fx.frames_out++;
	fx.out.frames_out = fx.frames_out;
	fx_outcome_frame(op, bth);
	kfree_skb(skb);
	return 0;
}

/* ---- the fuzz input ---- */

struct fx_in {
	const u8 *d;
	size_t n;
};

static u8 fx_byte(struct fx_in *in)
{
	u8 b;

	if (!in->n)
		return 0;
	b = *in->d++;
	in->n--;
	return b;
}

static void fx_mr_init(int i, struct cnuas_ib_pd *pd, u32 key, u64 iova,
		       u64 len, int access, bool remote_inv)
{
	struct fx_mr *m = &fx.mrs[i];

	m->buf = malloc(len);
	fx_check(m->buf);
	memset(m->buf, 0x11 * (i + 1), len);
	for (u64 j = 0; j < len; j += 64)
		m->buf[j] = (u8)(j >> 6);
	m->mr.ibmr.pd = &pd->ibpd;
	m->mr.cdev = &fx.cdev;
	m->mr.ops = &fx_mr_ops;
	m->mr.key = key;
	m->mr.access = access;
	m->mr.iova = iova;
	m->mr.length = len;
	refcount_set(&m->mr.ref, 1);
	m->remote_inv = remote_inv;
}

static void fx_canary(struct fx_mr *m)
{
	m->ref = malloc(m->mr.length);
	fx_check(m->ref);
	memcpy(m->ref, m->buf, m->mr.length);
}

static bool fx_canary_ok(const struct fx_mr *m)
{
	return !memcmp(m->ref, m->buf, m->mr.length);
}

#define FX_ALL_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC)

static void fx_mrs_init(void)
{
	fx_mr_init(0, &fx.pd, 0x111, 0x10000, 16384, FX_ALL_ACCESS, false);
	fx_mr_init(1, &fx.pd, 0x222, 0x40000, 8192,
		   IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE, false);
	/* canary: no write right at all */
	fx_mr_init(2, &fx.pd, 0x333, 0x80000, 4096, IB_ACCESS_REMOTE_READ,
		   false);
	fx_mr_init(3, &fx.pd, 0x444, 0xc0000, 4096, FX_ALL_ACCESS, true);
	/* canary: another PD's */
	fx_mr_init(4, &fx.pd2, 0x555, 0x10000, 4096, FX_ALL_ACCESS, false);
	fx_canary(&fx.mrs[2]);
	fx_canary(&fx.mrs[4]);
}

/* An SGE on MR @i (past the end for i == FX_NMR: a bad lkey). */
static struct cnuas_sge fx_sge(unsigned int i, u32 off, u32 len)
{
	struct cnuas_sge s = { .length = len };

	if (i >= FX_NMR) {
		s.lkey = 0x999;
		s.addr = 0x10000;
		return s;
	}
	s.lkey = fx.mrs[i].mr.key;
	s.addr = fx.mrs[i].mr.iova + off;
	return s;
}

static void fx_post_recv(u8 b)
{
	struct cnuas_ib_queue *q = &fx.qp.rq;
	u32 prod = q->hdr->prod, n = b & 3;
	struct cnuas_recv_wqe *w;
	struct cnuas_sge *sge;
	u64 room = 0;

	/* as post.c: not in RESET; only a user ring holds broken WQEs */
	if (fx.recvs >= FX_MAX_POSTS || prod - q->hdr->cons >= q->num ||
	    fx.qp.state == IB_QPS_RESET)
		return;
	w = cnuas_ib_queue_slot(q, prod);
	sge = (void *)(w + 1);
	w->wr_id = FX_RECV_ID + fx.recvs;
	w->num_sge = b & 0x80 && fx.qp.is_user ? fx.qp.rq_max_sge + 1 : n;
	for (u32 i = 0; i < n; i++) {
		u32 len = ((b >> 4) & 7) * 600 + 40;

		sge[i] = fx_sge(((b >> 2) & 3) + (i == 2), i * 1000, len);
		room += len;
	}
	fx.recv_room[fx.recvs++] = room;
	cnuas_ib_queue_kproduce(q, 1);
	/* In ERR the kick makes the transport flush them (post.c). */
	if (fx.qp.state == IB_QPS_ERR)
		cnuas_ib_transport_sq_kick(&fx.qp);
}

static void fx_post_send(u8 b0, u8 b1)
{
	static const u32 ops[16] = {
		IB_UVERBS_WR_SEND, IB_UVERBS_WR_SEND_WITH_IMM,
		IB_UVERBS_WR_RDMA_WRITE, IB_UVERBS_WR_RDMA_WRITE_WITH_IMM,
		IB_UVERBS_WR_RDMA_READ, IB_UVERBS_WR_ATOMIC_CMP_AND_SWP,
		IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD, IB_UVERBS_WR_SEND_WITH_INV,
		IB_UVERBS_WR_LOCAL_INV, IB_UVERBS_WR_BIND_MW, IB_WR_REG_MR,
		0x77, IB_UVERBS_WR_SEND, IB_UVERBS_WR_SEND,
		IB_UVERBS_WR_RDMA_READ, IB_UVERBS_WR_SEND,
	};
	struct cnuas_ib_queue *q = &fx.qp.sq;
	u32 prod = q->hdr->prod, k = b0 & 15, len = (b1 & 0x3f) * 97;
	struct cnuas_send_wqe *w;
	struct cnuas_sge *sge;

	/* as post.c: a kernel QP takes none before RTS */
	if (fx.sends >= FX_MAX_POSTS || prod - q->hdr->cons >= q->num ||
	    (!fx.qp.is_user && fx.qp.state < IB_QPS_RTS))
		return;
	w = cnuas_ib_queue_slot(q, prod);
	sge = (void *)(w + 1);
	memset(w, 0, q->stride);
	w->wr_id = FX_SEND_ID + fx.sends;
	w->opcode = ops[k];
	w->send_flags = (b0 >> 4) & (CNUAS_SEND_FENCE | CNUAS_SEND_SIGNALED |
				     CNUAS_SEND_SOLICITED);
	w->ex = 0x444 + (b1 >> 6);
	if (ops[k] == IB_UVERBS_WR_ATOMIC_CMP_AND_SWP ||
	    ops[k] == IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD) {
		len = b1 & 1 ? 4 : 8;	/* 4: too short */
		w->wr.atomic.remote_addr = 0x10000 + (b1 & 0xf8);
		w->wr.atomic.rkey = 0x111;
		w->wr.atomic.compare_add = b1;
		w->wr.atomic.swap = b0;
	} else if (fx.qp.type == IB_QPT_UD || fx.qp.type == IB_QPT_GSI) {
		w->wr.ud.ah_num = b1 >> 7 ? 9 : fx.ah.ah_num;
		w->wr.ud.remote_qpn = FX_PEER_QPN;
		w->wr.ud.remote_qkey = b1 & 0x40 ? 0x80000000 : 0x1234;
		len %= 512;
	} else {
		w->wr.rdma.remote_addr = 0x10000 + (b1 >> 6) * 64;
		w->wr.rdma.rkey = 0x111;
	}
	if (k == 12) {
		/* inline */
		w->send_flags |= CNUAS_SEND_INLINE;
		w->inline_len = min_t(u32, len, fx.qp.sq_max_inline);
		memset(sge, 0x5a, w->inline_len);
	} else if (k == 13) {
		/* two SGEs over two MRs */
		w->num_sge = 2;
		sge[0] = fx_sge(0, 100, len / 2);
		sge[1] = fx_sge(1, 0, len - len / 2);
	} else if (len || ops[k] != IB_UVERBS_WR_SEND) {
		/* READ into MR 2 (no local write), a bad lkey, or MR 0/3 */
		w->num_sge = 1;
		sge[0] = fx_sge(k == 14 ? 2 : k == 15 ? FX_NMR : (b1 >> 6) & 1 ? 3 : 0,
				0, len);
	}
	fx.send_signaled[fx.sends] = fx.qp.sig_all ||
				     (w->send_flags & CNUAS_SEND_SIGNALED);
	fx.sends++;
	cnuas_ib_queue_kproduce(q, 1);
}

/* Deliver one frame from the peer: BTH on, as it comes off the wire. */
static void fx_frame(struct fx_in *in, u8 flags)
{
	u32 len = fx_byte(in) << 8;
	struct sk_buff *skb;
	struct cnuas_bth *bth;

	len |= fx_byte(in);
	len = min_t(u32, len, in->n);
	len = min_t(u32, len, 4096 + 64);
	skb = fx_skb(len + CNUAS_ICRC_LEN);
	memcpy(skb->data, in->d, len);
	in->d += len;
	in->n -= len;
	bth = (void *)skb->data;
	if (len >= CNUAS_BTH_LEN) {
		const struct cnuas_opcode *op = cnuas_opcode_get(cnuas_bth_opcode(bth));
		u32 psn = cnuas_bth_psn(bth), qpn = cnuas_bth_qpn(bth);

		/* Help the fuzzer: our QPN, a PSN near the expected one. */
		if (flags & FX_F_OUR_QPN)
			qpn = fx.qp.ibqp.qp_num;
		if ((flags & FX_F_REL_PSN) && op)
			psn += op->flags & CNUAS_OPF_REQ ? fx.qp.t.epsn :
			       fx.qp.t.una;
		cnuas_bth_build(bth, cnuas_bth_opcode(bth), cnuas_bth_se(bth),
				cnuas_bth_pad(bth), cnuas_bth_pkey(bth), qpn,
				cnuas_bth_ackreq(bth), psn & CNUAS_PSN_MASK);
	}
	kstub_in_softirq = true;
	cnuas_ib_rx(&fx.cdev, skb, flags & FX_F_OTHER_SRC ? FX_RX_OTHER_SRC : 0);
	if (!(flags & FX_F_NO_BATCH_END))
		cnuas_ib_rx_batch_end(&fx.cdev);
	kstub_in_softirq = false;
}

static void fx_timers(void)
{
	struct cnuas_ib_tqp *t = &fx.qp.t;
	struct timer_list *tl[] = { &t->retry_timer, &t->rnr_timer,
				    &t->ack_timer };

	kstub_in_softirq = true;
	for (unsigned int i = 0; i < ARRAY_SIZE(tl); i++) {
		if (tl[i]->pending && !time_before(jiffies, tl[i]->expires)) {
			tl[i]->pending = false;
			tl[i]->function(tl[i]);
		}
	}
	kstub_in_softirq = false;
}

static void fx_work(void)
{
	struct work_struct *w = &fx.qp.t.work;

	if (!w->pending)
		return;
	w->pending = false;
	w->func(w);
}

/* modify_qp: the attributes, then the transport (as qp.c does). */
static void fx_modify(enum ib_qp_state s, int mask)
{
	enum ib_qp_state old = fx.qp.state;

	fx.qp.state = s;
	cnuas_ib_transport_qp_modify(&fx.qp, mask | IB_QP_STATE, old);
}

/* modify_qp(RESET): posted WQEs are dropped, none completes. */
static void fx_reset(void)
{
	enum ib_qp_state old = fx.qp.state;

	fx.qp.state = IB_QPS_RESET;
	cnuas_ib_queue_discard(&fx.qp.sq);
	cnuas_ib_queue_discard(&fx.qp.rq);
	cnuas_ib_transport_qp_modify(&fx.qp, IB_QP_STATE, old);
	for (u32 k = fx.send_next; k < fx.sends; k++)
		fx.send_done[k] = 2;
	for (u32 k = fx.recv_next; k < fx.recvs; k++)
		fx.recv_done[k] = 2;
	fx.send_next = fx.sends;
	fx.recv_next = fx.recvs;
	fx.send_failed = false;
}

static void fx_connect(void)
{
	bool conn = cnuas_ib_qp_connected(&fx.qp);

	fx_modify(IB_QPS_INIT, conn ? IB_QP_ACCESS_FLAGS : IB_QP_QKEY);
	fx_modify(IB_QPS_RTR, conn ? IB_QP_PATH_MTU | IB_QP_DEST_QPN |
		  IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
		  IB_QP_MIN_RNR_TIMER : 0);
	fx_modify(IB_QPS_RTS, IB_QP_SQ_PSN | (conn ? IB_QP_TIMEOUT |
		  IB_QP_RETRY_CNT | IB_QP_RNR_RETRY |
		  IB_QP_MAX_QP_RD_ATOMIC : 0));
}

static void fx_setup(const u8 *c, enum fx_mode mode)
{
	static const enum ib_qp_type types[4] = {
		IB_QPT_RC, IB_QPT_UC, IB_QPT_UD, IB_QPT_GSI
	};
	struct cnuas_ib_qp *qp = &fx.qp;
	struct cnuas_ib_qp_attr *a = &qp->attr;
	u32 sq_stride = roundup_pow_of_two(sizeof(struct cnuas_send_wqe) +
					   FX_MAX_SGE * sizeof(struct cnuas_sge));
	u32 psn = (c[5] << 16 | c[6] << 8 | c[7]) & CNUAS_PSN_MASK;

	memset(&fx, 0, sizeof(fx));
	jiffies = -1000UL;	/* wraps soon, as the kernel's does */
	kstub_ns = 1000000000ULL;
	kstub_in_softirq = false;
	fx.cdev.adev = &fx.adev;
	fx.cdev.link_layer = CNUAS_VNIC_LL_ETH;
	fx.cdev.link = &fx_link;
	fx.pd.ibpd.device = &fx.cdev.ibdev;
	fx.pd2.ibpd.device = &fx.cdev.ibdev;
	for (int i = 0; i < CNUAS_STAT_NUM; i++)
		atomic64_set(&fx.cdev.tdev.stats[i], 0);
	spin_lock_init(&fx.cdev.tdev.park_lock);
	INIT_LIST_HEAD(&fx.cdev.tdev.parked);
	INIT_LIST_HEAD(&fx.cdev.tdev.rx_run);
	fx.cdev.tdev.rx_batching = true;
	fx_mrs_init();
	fx.ah.ah_num = 1;
	refcount_set(&fx.ah.ref, 1);

	if (mode == FX_COMP)
		qp->type = c[0] & 3 ? IB_QPT_RC : IB_QPT_UC;
	else
		qp->type = types[c[0] & 3];
	qp->cdev = &fx.cdev;
	qp->ibqp.qp_num = qp->type == IB_QPT_GSI ? CNUAS_IB_GSI_QPN : FX_QPN;
	qp->ibqp.pd = &fx.pd.ibpd;
	qp->ibqp.device = &fx.cdev.ibdev;
	qp->is_user = c[0] & 4;
	qp->sig_all = c[0] & 8;
	qp->scq = &fx.scq;
	qp->rcq = &fx.rcq;
	refcount_set(&qp->ref, 1);
	fx_check(!cnuas_ib_queue_init(&fx.cdev, &qp->sq, FX_SQ_NUM, sq_stride,
				      NULL, NULL));
	qp->sq_max_sge = FX_MAX_SGE;
	qp->sq_max_inline = sq_stride - sizeof(struct cnuas_send_wqe);
	fx_check(!cnuas_ib_queue_init(&fx.cdev, &qp->rq, FX_RQ_NUM,
				      cnuas_ib_recv_stride(FX_MAX_SGE),
				      NULL, NULL));
	qp->rq_max_sge = FX_MAX_SGE;

	a->path_mtu = IB_MTU_256 + (c[0] >> 4) % 5;
	a->mtu = 256 << (a->path_mtu - IB_MTU_256);
	a->qkey = 0x1234;
	a->dest_qpn = FX_PEER_QPN;
	a->sq_psn = psn;
	a->rq_psn = psn;
	a->access = IB_ACCESS_LOCAL_WRITE |
		    (c[1] & 1 ? IB_ACCESS_REMOTE_WRITE : 0) |
		    (c[1] & 2 ? IB_ACCESS_REMOTE_READ : 0) |
		    (c[1] & 4 ? IB_ACCESS_REMOTE_ATOMIC : 0);
	a->max_dest_rd_atomic = c[1] >> 4;
	a->max_rd_atomic = c[2] & 15;
	a->retry_cnt = (c[2] >> 4) & 7;
	a->rnr_retry = c[3] & 7;
	a->min_rnr_timer = c[3] >> 3;
	a->timeout = c[4] & 31;
	memset(a->av.dgid.raw, 0, 16);
	a->av.dgid.raw[10] = 0xff;
	a->av.dgid.raw[11] = 0xff;
	memcpy(&a->av.dgid.raw[12], fx_iph + 12, 4);
	qp->state = IB_QPS_RESET;
	fx_check(!cnuas_ib_transport_qp_init(qp));
	fx.alive = true;
	fx_connect();
}

static void fx_invariants(void)
{
	struct cnuas_ib_qp *qp = &fx.qp;
	struct cnuas_ib_tqp *t = &qp->t;

	fx_check(fx_canary_ok(&fx.mrs[2]));
	fx_check(fx_canary_ok(&fx.mrs[4]));
	for (int i = 0; i < FX_NMR; i++)
		fx_check(fx.mrs[i].mr.ref.refs.counter == 1);
	fx_check(fx.ah.ref.refs.counter == 1);
	/* SQ: consumer <= requester <= fetched <= consumer + size */
	fx_check((s32)(t->req_idx - qp->sq.index) >= 0);
	fx_check((s32)(t->sq_fetch - t->req_idx) >= 0);
	fx_check(t->sq_fetch - qp->sq.index <= qp->sq.num);
	fx_check(qp->sq.hdr->cons == qp->sq.index);
	if (qp->type == IB_QPT_RC) {
		fx_check(cnuas_psn_diff(t->req_psn, t->una) >= 0);
		fx_check(cnuas_psn_diff(t->psn_hi, t->req_psn) >= 0);
		fx_check(cnuas_psn_diff(t->psn_hi, t->una) < (1 << 22));
		fx_check(t->rd_out <= max_t(u32, 1, t->max_rd_atomic));
		fx_check(t->res_num <= CNUAS_IB_MAX_QP_RD_ATOM);
		fx_check(t->res_next - t->res_cur <= t->res_num);
	}
	fx_check(t->cwnd >= 1 && t->cwnd <= CNUAS_IB_WINDOW);
	/* a send WQE that failed takes the QP down */
	if (fx.send_failed)
		fx_check(t->state == IB_QPS_ERR || qp->state == IB_QPS_ERR);
}

static void fx_teardown(bool drain)
{
	struct cnuas_ib_qp *qp = &fx.qp;

	fx.out.failed = qp->t.state == IB_QPS_ERR || qp->state == IB_QPS_ERR;
	fx.tx_busy = false;
	fx.no_mem = false;
	if (drain) {
		kstub_in_softirq = true;
		cnuas_ib_rx_batch_end(&fx.cdev);
		kstub_in_softirq = false;
		cnuas_ib_tx_wake(&fx.cdev);
		cnuas_ib_qp_error(qp, 0);
		for (int i = 0; i < 8 && qp->t.work.pending; i++)
			fx_work();
		fx_invariants();
		/* ERR flushed everything that was posted */
		fx_check(qp->t.flushed);
		for (u32 k = 0; k < fx.recvs; k++)
			fx_check(fx.recv_done[k]);
		for (u32 k = 0; k < fx.sends; k++)
			fx_check(fx.send_done[k] || !fx.send_signaled[k]);
	}
	/* IB_SM_DEBUG=1: what an input did (for writing seeds) */
	if (kstub_debug) {
		fprintf(stderr, "ib_sm: QP type %d, %u sends, %u recvs, %llu frames out, send CQEs up to %u, recv CQEs up to %u, stats:",
			qp->type, fx.sends, fx.recvs,
			(unsigned long long)fx.frames_out, fx.send_next,
			fx.recv_next);
		for (int i = 0; i < CNUAS_STAT_NUM; i++)
			if (atomic64_read(&fx.cdev.tdev.stats[i]))
				fprintf(stderr, " %d=%lld", i,
					(long long)atomic64_read(&fx.cdev.tdev.stats[i]));
		fprintf(stderr, "\n");
	}
	fx.alive = false;
	cnuas_ib_transport_qp_destroy(qp);
	cnuas_ib_queue_cleanup(&qp->sq);
	cnuas_ib_queue_cleanup(&qp->rq);
	for (int i = 0; i < FX_NMR; i++) {
		free(fx.mrs[i].buf);
		free(fx.mrs[i].ref);
	}
}

int ib_sm_run(const u8 *data, size_t size, enum fx_mode mode)
{
	struct fx_in in = { data, size };
	u8 c[FX_CONFIG_LEN] = {};
	int steps = 0;

	if (size < FX_CONFIG_LEN || size > 65536)
		return 0;
	memcpy(c, data, FX_CONFIG_LEN);
	kstub_debug = getenv("IB_SM_DEBUG");
	in.d += FX_CONFIG_LEN;
	in.n -= FX_CONFIG_LEN;
	fx_setup(c, mode);
	if (mode == FX_RESP) {
		/* receive WQEs: one SGE of 4240 bytes each, on MR 0 or 1 */
		for (int i = 0; i < 4; i++)
			fx_post_recv(0x71 | (i & 1) << 2);
	} else {
		/* SEND, WRITE, READ, FETCH_ADD in flight */
		fx_post_send(0x20, 3);
		fx_post_send(0x22, 40);
		fx_post_send(0x24, 20);
		fx_post_send(0x26, 8);
		cnuas_ib_transport_sq_kick(&fx.qp);
		fx_work();
	}
	fx_invariants();
	while (in.n && steps++ < 512) {
		u8 cmd = fx_byte(&in), b;

		switch (cmd & 7) {
		case FX_CMD_FRAME:
			fx_frame(&in, cmd >> 3);
			break;
		case FX_CMD_SEND:
			b = fx_byte(&in);
			fx_post_send(b, fx_byte(&in));
			cnuas_ib_transport_sq_kick(&fx.qp);
			break;
		case FX_CMD_RECV:
			fx_post_recv(fx_byte(&in));
			break;
		case FX_CMD_TICK:
			b = fx_byte(&in);
			jiffies += b;
			kstub_ns += (u64)b * (1000000000ULL / HZ);
			if (!b)
				kstub_ns += 100000 * ((cmd >> 3) + 1);
			fx_timers();
			break;
		case FX_CMD_WORK:
			fx_work();
			break;
		case FX_CMD_MODIFY:
			if (cmd & 8) {
				cnuas_ib_qp_error(&fx.qp, IB_EVENT_QP_FATAL);
			} else if (cmd & 16) {
				/* RESET and back, a new connection */
				fx_reset();
				fx_work();
				fx_connect();
			} else if (fx.qp.state == IB_QPS_RTS) {
				fx_modify(IB_QPS_SQD, 0);
			}
			break;
		case FX_CMD_TX:
			if (cmd & 8) {
				fx.no_mem = !fx.no_mem;
			} else {
				fx.tx_busy = !fx.tx_busy;
				if (!fx.tx_busy)
					cnuas_ib_tx_wake(&fx.cdev);
			}
			break;
		case FX_CMD_BATCH_END:
			kstub_in_softirq = true;
			cnuas_ib_rx_batch_end(&fx.cdev);
			kstub_in_softirq = false;
			break;
		}
		if (kstub_debug)
			fprintf(stderr, "ib_sm: cmd 0x%02x: state %d, sq %u req_idx %u fetch %u, una %u req_psn %u psn_hi %u, epsn %u\n",
				cmd, fx.qp.t.state, fx.qp.sq.index,
				fx.qp.t.req_idx, fx.qp.t.sq_fetch, fx.qp.t.una,
				fx.qp.t.req_psn, fx.qp.t.psn_hi, fx.qp.t.epsn);
		fx_invariants();
	}
	fx_teardown(true);
	return 0;
}
