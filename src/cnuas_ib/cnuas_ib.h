/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cnuas_ib: the RDMA device of a cnuas-vnic, on top of cnuas_net's
 * auxiliary device. Private objects and the device limits.
 *
 * Lifetime: ib_core allocates and frees every object (ib_alloc_device,
 * INIT_RDMA_OBJ_SIZE). Frames and link events from cnuas_net flow only
 * between attach (after ib_register_device) and detach (before
 * ib_unregister_device), so no callback ever sees an unregistered device.
 *
 * Files, one role each:
 *   main.c      module, auxiliary driver, ib_device life cycle, port events
 *   verbs.c     device/port/GID/P_Key queries, PD, user context (ABI check)
 *   queue.c     rings shared with the provider (uapi/cnuas-abi.h), mmap
 *   cq.c        completion queues, events, resize, kernel poll_cq
 *   mr.c        DMA and user MRs (ib_umem), key lookup, copies, atomics
 *   mr-dmabuf.c DMA-BUF MRs: importer, I/O-memory copies and atomics
 *   mr-fast.c   fast-registration MRs of kernel ULPs (REG_MR, LOCAL_INV)
 *   mw.c        memory windows, type 1 and 2B: bind, invalidate, checks
 *   ah.c        address vectors and address handles
 *   srq.c       shared receive queues, limit events
 *   qp.c        QP create/query/destroy, the state machine (modify_qp)
 *   post.c      post_send/post_recv of kernel QPs, doorbell of user QPs
 *   mcast.c     multicast groups of UD QPs (attach_mcast/detach_mcast)
 *   transport.h the transport's state and entry points
 *   transport.c its QP life cycle: runners, work item, timers, parking
 *   net.c       frames to/from cnuas_net: build, zero copy, seal, send
 *   frame.c     what the link layers' frames share: reusable skbs, ICRC
 *               offload
 *   recv.c      received frames: transport headers, demultiplex by QPN
 *   req.c       requester: WQEs to packets, segmentation, retransmission
 *   comp.c      completer: ACK/NAK/READ/atomic responses, completions
 *   resp.c      responder: PSN checks, RECV/WRITE/READ/atomic execution,
 *               ACK coalescing and holding, NAKs, duplicate replay
 *   counters.c  hardware counters (rdma statistic)
 *   loopback.c  frames to this port, delivered without the wire
 *   link_ops.h  the link layer's table (cdev->link, picked at probe)
 *   roce_frame.c RoCEv2 link layer: Ethernet/IP/UDP frames, ICRC, IP
 *               address vectors, groups by IP address
 *   ib_frame.c  InfiniBand link layer: LRH, GRH, native ICRC, LID
 *               address vectors, groups by MLID
 *   ib_wire.h   ... its host-testable part: LRH/GRH build and walk, ICRC
 *   port.h      IB mode: the port's state, what the data path asks of it
 *   port.c      ... link and SM driven port state, modify_port, query_port
 *   mad.c       process_mad: MAD dispatch, M_Key check
 *   sma.c       subnet management agent: SubnGet/SubnSet attributes
 *   pma.c       performance management agent: PortCounters(Extended)
 *   trap.c      traps to the master SM: Bad M_Key, P_Key, Q_Key
 *   debug.h     debug lines per object and counter, drop reasons
 *   debug.c     ... the names and explanations they print
 *   compat.h    differences between the kernels we build against
 *   wire.h      RoCEv2 headers: structs, accessors, opcode table, ICRC API
 *   opcode.c    the BTH opcode table
 *   icrc.c      the RoCEv2 ICRC
 *   test/       host unit test of wire.h/opcode.c/icrc.c (not built here)
 */
#ifndef CNUAS_IB_H
#define CNUAS_IB_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/mutex.h>
#include <linux/completion.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/iosys-map.h>
#include <linux/log2.h>
#include <linux/refcount.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "cnuas_net_aux.h"
#include "cnuas_vnic_hw.h"
#include "uapi/cnuas-abi.h"
#include "compat.h"
#include "transport.h"
#include "port.h"
#include "debug.h"

#define CNUAS_IB_NAME_FMT	"cnuas_%d"

/*
 * Device limits (query_device, query_port, get_port_immutable): the one
 * place they are defined. They are what the transport will enforce; until
 * an object type is implemented its create verb fails with -EOPNOTSUPP.
 */
#define CNUAS_IB_VENDOR_ID		0x1af4	/* the PCI function's vendor */
#define CNUAS_IB_VENDOR_PART_ID		0x10f0
#define CNUAS_IB_HW_VER			1
#define CNUAS_IB_MAX_MR_SIZE		BIT_ULL(40)
#define CNUAS_IB_PAGE_SIZE_CAP		(SZ_4K | SZ_64K | SZ_2M)
#define CNUAS_IB_MAX_QP			65536
#define CNUAS_IB_MAX_QP_WR		16384
#define CNUAS_IB_MAX_SGE		32
#define CNUAS_IB_MAX_SGE_RD		32
#define CNUAS_IB_MAX_CQ			65536
#define CNUAS_IB_MAX_CQE		BIT(20)
#define CNUAS_IB_MAX_MR			BIT(18)
#define CNUAS_IB_MAX_PD			65536
#define CNUAS_IB_MAX_QP_RD_ATOM		128
#define CNUAS_IB_MAX_RES_RD_ATOM	(CNUAS_IB_MAX_QP * CNUAS_IB_MAX_QP_RD_ATOM)
#define CNUAS_IB_MAX_SRQ		65536
#define CNUAS_IB_MAX_SRQ_WR		16384
#define CNUAS_IB_MAX_SRQ_SGE		32
#define CNUAS_IB_MAX_AH			65536
#define CNUAS_IB_MAX_MCAST_GRP		256
#define CNUAS_IB_MAX_MCAST_QP_ATTACH	16
#define CNUAS_IB_MCAST_QPN		0xffffff
#define CNUAS_IB_LOCAL_CA_ACK_DELAY	15
#define CNUAS_IB_MAX_MSG_SZ		0x80000000u	/* 2 GiB (IBA) */
#define CNUAS_IB_NUM_PORTS		1
#define CNUAS_IB_PKEY_TBL_LEN		1
#define CNUAS_IB_DEFAULT_PKEY		0xffff
#define CNUAS_IB_GID_TBL_LEN		64	/* RoCE v2: one per address */
#define CNUAS_IB_GID_TBL_LEN_IB		1	/* IB: the port GUID GID */
/* Capabilities: only what works now; the transport adds its flags. */
#define CNUAS_IB_DEVICE_CAP_FLAGS	(IB_DEVICE_PORT_ACTIVE_EVENT | \
					 IB_DEVICE_SYS_IMAGE_GUID | \
					 IB_DEVICE_RC_RNR_NAK_GEN | \
					 IB_DEVICE_MEM_MGT_EXTENSIONS | \
					 IB_DEVICE_MEM_WINDOW | \
					 IB_DEVICE_MEM_WINDOW_TYPE_2B | \
					 IB_DEVICE_SRQ_RESIZE | \
					 CNUAS_IB_DEVICE_CAP_MPE)
/* Pages of one fast-registration MR (mr-fast.c). */
#define CNUAS_IB_MAX_FRMR_PAGES		512

#define CNUAS_IB_UVERBS_ABI_VERSION	CNUAS_UVERBS_ABI_VERSION
/*
 * IBA 1.5 WR and WC opcodes of the uverbs ABI (IB_UVERBS_WR_FLUSH ...):
 * fixed values, named here for kernels whose headers lack them (6.1).
 */
#define CNUAS_WR_FLUSH			14
#define CNUAS_WR_ATOMIC_WRITE		15
#define CNUAS_WC_FLUSH			8
#define CNUAS_WC_ATOMIC_WRITE		9
/* IB_ACCESS_FLUSH_GLOBAL, _PERSISTENT as QP access flags (uverbs bits) */
#define CNUAS_QP_ACCESS_FLUSH_GLOBAL	BIT(8)
#define CNUAS_QP_ACCESS_FLUSH_PERSISTENT BIT(9)
#define CNUAS_IB_MAX_INLINE_DATA	CNUAS_MAX_INLINE_DATA
#define CNUAS_IB_GSI_QPN		1
#define CNUAS_IB_MIN_QPN		16	/* below: reserved (QP0, QP1) */

struct cnuas_ib_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	struct cnuas_net_aux_dev *adev;
	u32 link_layer;			/* CNUAS_VNIC_LL_* */
	/* Its frames and addresses, picked at probe (link_ops.h). */
	const struct cnuas_ib_link_ops *link;

	struct mutex link_lock;		/* serializes link_up changes */
	bool link_up;			/* as last reported to ib_core */

	atomic_t num_pd;
	atomic_t num_cq;
	atomic_t num_srq;
	atomic_t num_ah;
	atomic_t num_qp;

	/* Object tables (qp.c, mr.c, ah.c, srq.c); lookups under RCU. */
	struct xarray qp_xa;		/* qpn -> cnuas_ib_qp */
	u32 qp_next;			/* cyclic QPN allocation */
	struct xarray mr_xa;		/* key >> 8 -> cnuas_ib_mr */
	u32 mr_next;
	struct xarray ah_xa;		/* ah_num -> cnuas_ib_ah */
	u32 ah_next;
	struct xarray srq_xa;		/* srq_num -> cnuas_ib_srq */
	u32 srq_next;
	/*
	 * The tables are XA_FLAGS_LOCK_IRQ: lookups take the xa_lock (any
	 * context) and a reference, so an object leaves its table, then
	 * its destroy waits for the references to drain.
	 */

	spinlock_t atomic_lock;		/* every MR atomic of the device */

	/* Multicast groups (mcast.c). */
	spinlock_t mcg_lock;		/* mcg_list, num_mcg; BH */
	struct list_head mcg_list;
	u32 num_mcg;

	struct cnuas_ib_tdev tdev;	/* transport state (transport.h) */
	struct cnuas_ib_port port;	/* IB mode: SMA/PMA state (port.h) */
};

struct cnuas_ib_ucontext {
	struct ib_ucontext ibuc;
	struct rdma_user_mmap_entry *rx_poll;	/* or NULL */
};

struct cnuas_ib_pd {
	struct ib_pd ibpd;
};

/*
 * A ring (uapi/cnuas-abi.h), mmap'ed by user space or kernel-only. The
 * kernel keeps its own index in @index and never trusts the other side's.
 */
struct cnuas_ib_queue {
	struct cnuas_queue_hdr *hdr;	/* vmalloc_user() buffer */
	void *slots;			/* hdr + CNUAS_QUEUE_HDR_SIZE */
	size_t size;			/* whole buffer, page aligned */
	u32 num;			/* slots, power of two */
	u32 stride;			/* bytes per slot, power of two */
	u32 index;			/* the kernel side's index */
	struct rdma_user_mmap_entry *mentry;	/* NULL: kernel-only */
};

/* queue.c */
int cnuas_ib_queue_init(struct cnuas_ib_dev *cdev, struct cnuas_ib_queue *q,
			u32 num, u32 stride, struct ib_udata *udata,
			struct cnuas_queue_info *info);
void cnuas_ib_queue_cleanup(struct cnuas_ib_queue *q);
static inline void *cnuas_ib_queue_slot(struct cnuas_ib_queue *q, u32 idx)
{
	return q->slots + (size_t)(idx & (q->num - 1)) * q->stride;
}

void cnuas_ib_queue_copy(struct cnuas_ib_queue *nq, struct cnuas_ib_queue *q,
			 u32 first, u32 n);

/* Consumer side (SQ, RQ, SRQ): slots the producer has filled, 0..num. */
u32 cnuas_ib_queue_avail(struct cnuas_ib_queue *q);
void cnuas_ib_queue_consume(struct cnuas_ib_queue *q, u32 n);
/* Producer side (CQ): free slots, 0..num. */
u32 cnuas_ib_queue_space(struct cnuas_ib_queue *q);
void cnuas_ib_queue_produce(struct cnuas_ib_queue *q, u32 n);
/*
 * Kernel QPs and SRQs post into their own kernel-only rings (mentry ==
 * NULL) through the header's prod, trusted there; @index stays the
 * consumer's.
 */
u32 cnuas_ib_queue_kspace(struct cnuas_ib_queue *q);
void cnuas_ib_queue_kproduce(struct cnuas_ib_queue *q, u32 n);
/*
 * modify_qp(RESET): drop every posted entry. The consumer index and cons
 * jump to the producer's current prod; the producer keeps counting.
 */
void cnuas_ib_queue_discard(struct cnuas_ib_queue *q);

struct cnuas_ib_cq {
	struct ib_cq ibcq;
	struct cnuas_ib_queue q;	/* kernel produces CQEs */
	spinlock_t lock;		/* q producer, notify */
	u8 notify;			/* IB_CQ_SOLICITED / _NEXT_COMP / 0 */
	bool overflow;			/* reported IB_EVENT_CQ_ERR */
	bool is_user;
	u32 kernel_cons;		/* kernel CQs: poll_cq's index */
};

/*
 * Post a completion: copies @cqe into the ring, raises the completion
 * event if armed (@solicited for IB_CQ_SOLICITED). -ENOSPC on overflow
 * (the CQ then reports IB_EVENT_CQ_ERR once). Any context.
 */
int cnuas_ib_cq_post(struct cnuas_ib_cq *cq, const struct cnuas_cqe *cqe,
		     bool solicited);

struct dma_buf;
struct dma_buf_attachment;
struct cnuas_ib_mr;

/* The direction of a copy between a buffer and an MR. */
enum cnuas_ib_copy_dir {
	CNUAS_IB_TO_MR,
	CNUAS_IB_FROM_MR,
};

/* The 8-byte atomics: FETCH ADD, COMPARE SWAP, ATOMIC WRITE (IBA 1.5). */
enum cnuas_ib_atomic_op {
	CNUAS_IB_ATOMIC_FETCH_ADD,
	CNUAS_IB_ATOMIC_CMP_SWAP,
	CNUAS_IB_ATOMIC_WRITE,
};

/*
 * What one kind of MR table entry does differently; one const table per
 * kind: DMA and user MRs (mr.c), DMA-BUF MRs (mr-dmabuf.c), fast
 * registration MRs (mr-fast.c), memory windows (mw.c). A lookup through
 * a window returns the MR under it, so a window has only ->lookup and
 * ->invalidate. Optional (NULL) ones say so.
 */
struct cnuas_ib_mr_ops {
	/*
	 * Table lock held: the MR a lookup of @key through entry @mr finds
	 * for [@addr, @addr + @len) and @access, or NULL. @rkey: a remote
	 * key, used by responder QP @qpn.
	 */
	struct cnuas_ib_mr *(*lookup)(struct cnuas_ib_mr *mr,
				      struct cnuas_ib_pd *pd, u32 key,
				      u64 addr, u64 len, int access,
				      bool rkey, u32 qpn);
	/* cnuas_ib_mr_copy() */
	int (*copy)(struct cnuas_ib_mr *mr, u64 addr, void *buf, u32 len,
		    enum cnuas_ib_copy_dir dir);
	/* cnuas_ib_mr_atomic(), @addr 8-byte aligned */
	int (*atomic)(struct cnuas_ib_mr *mr, u64 addr,
		      enum cnuas_ib_atomic_op op, u64 compare_add, u64 swap,
		      u64 *orig);
	/*
	 * Optional: attach [@addr, @addr + @len) to @skb as page fragments;
	 * -EOPNOTSUPP (and NULL): the caller copies.
	 */
	int (*frags)(struct cnuas_ib_mr *mr, u64 addr, u32 len,
		     struct sk_buff *skb);
	/*
	 * Optional, table lock held: LOCAL_INV or SEND with Invalidate of
	 * @key by QP @qpn of @pd. 0 or -EINVAL (and NULL).
	 */
	int (*invalidate)(struct cnuas_ib_mr *mr, struct cnuas_ib_pd *pd,
			  u32 key, u32 qpn);
	/* Optional: dereg, after the last lookup; undo the registration. */
	void (*release)(struct cnuas_ib_mr *mr);
	bool unbounded;			/* any kernel virtual address */
};

extern const struct cnuas_ib_mr_ops cnuas_ib_mr_dma_ops;
extern const struct cnuas_ib_mr_ops cnuas_ib_mr_user_ops;
extern const struct cnuas_ib_mr_ops cnuas_ib_mr_dmabuf_ops;
extern const struct cnuas_ib_mr_ops cnuas_ib_mr_fast_ops;
extern const struct cnuas_ib_mr_ops cnuas_ib_mw_ops;

/* Memory regions: key = index << 8 | variant byte. */

struct cnuas_ib_mr {
	struct ib_mr ibmr;
	struct cnuas_ib_dev *cdev;
	const struct cnuas_ib_mr_ops *ops;	/* what kind of entry */
	u32 key;			/* lkey == rkey that lookups match */
	int access;			/* IB_ACCESS_* */
	u64 iova;
	u64 length;
	struct ib_umem *umem;
	struct page **pages;		/* USER: one per PAGE_SIZE of umem */
	unsigned long npages;
	unsigned int page_offset;	/* iova's offset in pages[0] */
	/* DMABUF (mr-dmabuf.c): held from registration to dereg. */
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *dmabuf_att;
	struct iosys_map dmabuf_map;	/* the whole dma-buf, often __iomem */
	u64 dmabuf_off;			/* iova's offset in the dma-buf */
	/* FAST: page addresses (kernel virtual) from ib_map_mr_sg(). */
	u64 *fpages;
	u32 fmax;			/* fpages allocated */
	u32 fn;				/* fpages mapped */
	spinlock_t lock;		/* DMABUF: revoked vs copies, atomics */
	bool revoked;			/* no access: exporter revoked the
					 * DMA-BUF, FAST not registered
					 */
	refcount_t ref;			/* lookups in flight + 1 */
	struct completion released;	/* ref reached 0 */
	/*
	 * MW: the window [iova, iova + length) of @parent while bound
	 * (revoked: not bound), type 2 only for QP @mw_qpn. Not MW: the
	 * windows bound to this MR. Both change under the MR table's lock.
	 */
	struct cnuas_ib_mr *parent;
	u32 mw_qpn;
	u8 mw_type;			/* IB_MW_TYPE_1 or _2 */
	u32 num_mw;
};

struct cnuas_ib_mw {
	struct ib_mw ibmw;
	struct cnuas_ib_mr *mr;		/* its entry in the MR table */
};

/*
 * mr.c. Lookups return a referenced MR or NULL; they check the key, the
 * PD, that [addr, addr + len) lies inside the MR and @access (the
 * IB_ACCESS_* the operation needs; 0 for a local read). Release with
 * cnuas_ib_mr_put(). Callable from softirq.
 */
struct cnuas_ib_mr *cnuas_ib_mr_get_lkey(struct cnuas_ib_pd *pd, u32 lkey,
					 u64 addr, u64 len, int access);
/*
 * An rkey may name a memory window bound for responder QP @qpn. @len
 * CNUAS_IB_WHOLE_MR checks no range (@addr ignored): a FLUSH of the MR.
 */
#define CNUAS_IB_WHOLE_MR	U64_MAX
struct cnuas_ib_mr *cnuas_ib_mr_get_rkey(struct cnuas_ib_pd *pd, u32 rkey,
					 u64 addr, u64 len, int access,
					 u32 qpn);
void cnuas_ib_mr_put(struct cnuas_ib_mr *mr);
/*
 * Copy @len bytes between @buf and the MR at @addr (checked by get).
 * 0, or -ENODEV: a DMA-BUF MR whose exporter revoked it since the lookup
 * (treat as a failed lookup: access NAK / protection error).
 */
static inline int cnuas_ib_mr_copy(struct cnuas_ib_mr *mr, u64 addr,
				   void *buf, u32 len,
				   enum cnuas_ib_copy_dir dir)
{
	return mr->ops->copy(mr, addr, buf, len, dir);
}

/* 8-byte atomics on MR memory, atomic against every other one here. */
int cnuas_ib_mr_atomic(struct cnuas_ib_mr *mr, u64 addr,
		       enum cnuas_ib_atomic_op op, u64 compare_add, u64 swap,
		       u64 *orig);

/* The value an atomic leaves in memory that held @val. */
static inline u64 cnuas_ib_atomic_new(enum cnuas_ib_atomic_op op, u64 val,
				      u64 compare_add, u64 swap)
{
	switch (op) {
	case CNUAS_IB_ATOMIC_CMP_SWAP:
		return val == compare_add ? swap : val;
	case CNUAS_IB_ATOMIC_WRITE:
		return swap;
	default:
		return val + compare_add;
	}
}

/*
 * Scatter/gather: copy @len bytes at byte @offset of the SGE list
 * to/from @buf, looking up every lkey in @pd with @access. Returns 0, or
 * -EINVAL (bad lkey, bounds or access: IB_WC_LOC_PROT_ERR) or -EMSGSIZE
 * (SGEs too short: IB_WC_LOC_LEN_ERR).
 */
int cnuas_ib_sge_copy(struct cnuas_ib_pd *pd, const struct cnuas_sge *sge,
		      u32 num_sge, u32 offset, void *buf, u32 len,
		      enum cnuas_ib_copy_dir dir, int access);
/*
 * The same walk, but the pieces go to @skb as page fragments (zero copy):
 * -EOPNOTSUPP when an MR is not a user MR or the fragments do not fit,
 * and the caller copies instead (it frees the skb).
 */
int cnuas_ib_sge_frags(struct cnuas_ib_pd *pd, const struct cnuas_sge *sge,
		       u32 num_sge, u32 offset, struct sk_buff *skb, u32 len,
		       int access);
u64 cnuas_ib_sge_total(const struct cnuas_sge *sge, u32 num_sge);

/*
 * An address vector: everything needed to build the Ethernet/IP/UDP
 * headers of a RoCEv2 frame, or the LRH and GRH of an IB one, resolved
 * once (modify_qp, create_ah).
 */
struct cnuas_ib_av {
	bool valid;			/* set by the link's ->av_from_attr */
	u8 network_type;		/* RDMA_NETWORK_IPV4 / _IPV6 / _IB */
	/* IB link layer: the LRH; the GRH's fields below when @grh */
	bool grh;
	u8 src_path_bits;
	u8 static_rate;
	u16 dlid;
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;
	u8 sgid_index;			/* for query_ah/query_qp */
	u32 flow_label;
	u16 vlan_id;			/* 0xffff: untagged */
	u16 udp_sport;
	u8 smac[ETH_ALEN];
	u8 dmac[ETH_ALEN];
	union ib_gid sgid;
	union ib_gid dgid;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} saddr, daddr;
};

struct cnuas_ib_ah {
	struct ib_ah ibah;
	struct cnuas_ib_av av;
	u32 ah_num;
	refcount_t ref;
	struct completion released;
};

/* ah.c: a UD send WQE's ah_num -> referenced AH of @pd, or NULL. */
struct cnuas_ib_ah *cnuas_ib_ah_get(struct cnuas_ib_pd *pd, u32 ah_num);
void cnuas_ib_ah_put(struct cnuas_ib_ah *ah);

struct cnuas_ib_srq {
	struct ib_srq ibsrq;
	struct cnuas_ib_queue q;	/* provider (or post_srq_recv) fills */
	spinlock_t lock;		/* consumer side, limit */
	u32 max_sge;
	u32 limit;			/* 0: disarmed */
	u32 srq_num;
	bool is_user;
};

/* A receive WQE as the transport uses it: copied out of the ring. */
struct cnuas_ib_recv_wqe {
	u64 wr_id;
	u32 num_sge;
	struct cnuas_sge sge[CNUAS_IB_MAX_SGE];
};

/*
 * srq.c / qp.c: take the next receive WQE of @qp (its RQ or its SRQ),
 * copied and validated (num_sge within the queue's max). -ENOENT: none
 * posted (RNR). SRQ limit events are raised here. Any context.
 */
int cnuas_ib_recv_wqe_pop(struct cnuas_ib_qp *qp,
			  struct cnuas_ib_recv_wqe *wqe);
/*
 * A WQE whose num_sge exceeds the queue's max (or is otherwise broken)
 * is consumed and returned with -EINVAL, wqe->wr_id set and num_sge 0:
 * the transport completes it with an error status (IB_WC_LOC_QP_OP_ERR)
 * and moves the QP to the error state.
 */

/* queue.c: the receive-ring consumer shared by RQs and SRQs. */
int cnuas_ib_queue_pop_recv(struct cnuas_ib_queue *q, u32 max_sge,
			    struct cnuas_ib_recv_wqe *wqe, u32 *left);
/* srq.c: the SRQ side of cnuas_ib_recv_wqe_pop(). */
int cnuas_ib_srq_pop(struct cnuas_ib_srq *srq, struct cnuas_ib_recv_wqe *wqe);
/* srq.c: a kernel ib_recv_wr into a kernel-only RQ/SRQ ring (its lock held). */
int cnuas_ib_recv_wr_put(struct cnuas_ib_queue *q, u32 max_sge,
			 const struct ib_recv_wr *wr);

/* Receive ring slot for @max_sge SGEs: header + SGEs, a power of two. */
static inline u32 cnuas_ib_recv_stride(u32 max_sge)
{
	return roundup_pow_of_two(sizeof(struct cnuas_recv_wqe) +
				  max_t(u32, max_sge, 1) *
				  sizeof(struct cnuas_sge));
}

/* Attributes set by modify_qp, read by the transport. */
struct cnuas_ib_qp_attr {
	enum ib_mtu path_mtu;
	u32 mtu;			/* bytes: ib_mtu_enum_to_int() */
	u32 qkey;
	u32 dest_qpn;
	u32 sq_psn;			/* first PSN the requester sends */
	u32 rq_psn;			/* first PSN the responder expects */
	u8 retry_cnt;
	u8 rnr_retry;
	u8 min_rnr_timer;
	u8 timeout;
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u16 pkey_index;
	int access;			/* qp_access_flags */
	struct cnuas_ib_av av;		/* RC, UC: the peer */
};

struct cnuas_ib_qp {
	struct ib_qp ibqp;
	struct cnuas_ib_dev *cdev;
	enum ib_qp_type type;		/* IB_QPT_RC, _UC, _UD, _GSI, _SMI */
	bool is_user;
	bool sig_all;
	atomic_t mcast_attached;	/* groups it is in (mcast.c) */
	struct mutex modify_lock;	/* serializes modify_qp */

	/* state_lock: state and attr; held briefly, any context. */
	spinlock_t state_lock;
	enum ib_qp_state state;
	struct cnuas_ib_qp_attr attr;

	/* Send queue: kernel consumes; cons advances at completion. */
	struct cnuas_ib_queue sq;
	u32 sq_max_sge;
	u32 sq_max_inline;
	spinlock_t sq_post_lock;	/* kernel QPs: post_send producer */

	/* Receive queue (unless srq) */
	struct cnuas_ib_queue rq;
	u32 rq_max_sge;
	spinlock_t rq_lock;		/* consumer; kernel post_recv */
	struct cnuas_ib_srq *srq;

	struct cnuas_ib_cq *scq;
	struct cnuas_ib_cq *rcq;

	/* RX lookups (recv.c) hold a reference; destroy waits. */
	refcount_t ref;
	struct completion released;

	struct cnuas_ib_tqp t;		/* transport state (transport.h) */
};

/* qp.c: referenced QP by number for the receive path, or NULL. */
struct cnuas_ib_qp *cnuas_ib_qp_get(struct cnuas_ib_dev *cdev, u32 qpn);

/* mcast.c (the lookups by a frame's group: link_ops.h) */
void cnuas_ib_mcast_init(struct cnuas_ib_dev *cdev);
void cnuas_ib_mcast_cleanup(struct cnuas_ib_dev *cdev);
int cnuas_ib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int cnuas_ib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void cnuas_ib_mcast_qp_destroy(struct cnuas_ib_qp *qp);
void cnuas_ib_qp_put(struct cnuas_ib_qp *qp);
/*
 * Move @qp to IB_QPS_ERR from the transport (fatal error, retries
 * exhausted): flushes through cnuas_ib_transport_modify(). @event:
 * IB_EVENT_QP_FATAL etc. or 0 for none. Any context.
 */
void cnuas_ib_qp_error(struct cnuas_ib_qp *qp, enum ib_event_type event);

static inline struct cnuas_ib_dev *to_cdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct cnuas_ib_dev, ibdev);
}

/* RC and UC: one peer QP, set at RTR; UD and GSI address every WR. */
static inline bool cnuas_ib_qp_connected(const struct cnuas_ib_qp *qp)
{
	return qp->type == IB_QPT_RC || qp->type == IB_QPT_UC;
}

static inline bool cnuas_ib_is_eth(const struct cnuas_ib_dev *cdev)
{
	return cdev->link_layer == CNUAS_VNIC_LL_ETH;
}

static inline u16 cnuas_ib_pkey_tbl_len(const struct cnuas_ib_dev *cdev)
{
	return cnuas_ib_is_eth(cdev) ? CNUAS_IB_PKEY_TBL_LEN :
				       CNUAS_IB_PKEY_TBL_LEN_IB;
}

/* P_Key table entry @index: the SM's in IB mode, the default on RoCE. */
static inline u16 cnuas_ib_pkey(const struct cnuas_ib_dev *cdev, u16 index)
{
	if (cnuas_ib_is_eth(cdev))
		return index < CNUAS_IB_PKEY_TBL_LEN ? CNUAS_IB_DEFAULT_PKEY : 0;
	return cnuas_ib_port_pkey(&cdev->port, index);
}

static inline struct cnuas_ib_pd *to_cpd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct cnuas_ib_pd, ibpd);
}

static inline struct cnuas_ib_cq *to_ccq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct cnuas_ib_cq, ibcq);
}

static inline struct cnuas_ib_qp *to_cqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct cnuas_ib_qp, ibqp);
}

static inline struct cnuas_ib_mr *to_cmr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct cnuas_ib_mr, ibmr);
}

static inline struct cnuas_ib_ah *to_cah(struct ib_ah *ibah)
{
	return container_of(ibah, struct cnuas_ib_ah, ibah);
}

static inline struct cnuas_ib_srq *to_csrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct cnuas_ib_srq, ibsrq);
}

/* main.c */
extern const struct ib_device_ops cnuas_ib_dev_ops;

/* verbs.c: device queries, user context, PD */
enum ib_mtu cnuas_ib_active_mtu(struct cnuas_ib_dev *cdev);
int cnuas_ib_query_device(struct ib_device *ibdev,
			  struct ib_device_attr *attr, struct ib_udata *udata);
int cnuas_ib_query_port(struct ib_device *ibdev, u32 port,
			struct ib_port_attr *attr);
int cnuas_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				struct ib_port_immutable *imm);
enum rdma_link_layer cnuas_ib_get_link_layer(struct ib_device *ibdev,
					     u32 port);
int cnuas_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			u16 *pkey);
int cnuas_ib_query_gid(struct ib_device *ibdev, u32 port, int index,
		       union ib_gid *gid);
int cnuas_ib_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata);
void cnuas_ib_dealloc_ucontext(struct ib_ucontext *ibuc);
void cnuas_ib_disassociate_ucontext(struct ib_ucontext *ibuc);
int cnuas_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int cnuas_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* queue.c: mmap of the rings */
int cnuas_ib_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma);
bool cnuas_ib_rx_poll_entry(struct cnuas_ib_dev *cdev,
			    struct cnuas_ib_ucontext *uctx, u64 *offset);
void cnuas_ib_mmap_free(struct rdma_user_mmap_entry *entry);

/* cq.c */
int cnuas_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       struct CNUAS_CREATE_CQ_ARG *arg);
int cnuas_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int cnuas_ib_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int cnuas_ib_resize_user_cq(struct ib_cq *ibcq, unsigned int cqe,
			    struct ib_udata *udata);
int cnuas_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int cnuas_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);

/* mr.c */
struct ib_mr *cnuas_ib_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *cnuas_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
				   u64 iova, int access,
				   CNUAS_IB_REG_USER_MR_DMAH
				   struct ib_udata *udata);
struct ib_mr *cnuas_ib_rereg_user_mr(struct ib_mr *ibmr, int flags,
				     u64 start, u64 len, u64 iova, int access,
				     struct ib_pd *ibpd, struct ib_udata *udata);
int cnuas_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct cnuas_ib_mr *cnuas_ib_mr_alloc(struct ib_pd *ibpd, int access,
				      const struct cnuas_ib_mr_ops *ops);
int cnuas_ib_mr_insert(struct cnuas_ib_mr *mr);
int cnuas_ib_mr_check_access(int access);
/* The ->lookup of an MR's own key: key, PD, access, validity, bounds. */
struct cnuas_ib_mr *cnuas_ib_mr_lookup(struct cnuas_ib_mr *mr,
				       struct cnuas_ib_pd *pd, u32 key,
				       u64 addr, u64 len, int access,
				       bool rkey, u32 qpn);
/* The ->atomic of MRs whose ->copy may run under a spinlock. */
int cnuas_ib_mr_atomic_copy(struct cnuas_ib_mr *mr, u64 addr,
			    enum cnuas_ib_atomic_op op, u64 compare_add,
			    u64 swap, u64 *orig);
/*
 * LOCAL_INV or SEND with Invalidate of @key by QP @qpn: an FRMR of @pd, or
 * a type 2 window of @pd bound for @qpn. 0 or -EINVAL.
 */
int cnuas_ib_mr_invalidate(struct cnuas_ib_pd *pd, u32 key, u32 qpn);

/* [addr, addr + len) inside the MR, without overflow. */
static inline bool cnuas_ib_mr_in_bounds(const struct cnuas_ib_mr *mr,
					 u64 addr, u64 len)
{
	if (addr + len < addr)
		return false;
	if (mr->ops->unbounded)
		return true;
	return addr >= mr->iova && len <= mr->length &&
	       addr - mr->iova <= mr->length - len;
}

/* mr-fast.c */
struct ib_mr *cnuas_ib_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
				u32 max_num_sg);
int cnuas_ib_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg,
		       int sg_nents, unsigned int *sg_offset);
/* mw.c: memory windows, type 1 and 2B */
int cnuas_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int cnuas_ib_dealloc_mw(struct ib_mw *ibmw);
/* IBV_WR_BIND_MW reached in @qp's SQ: IB_WC_SUCCESS or the error. */
enum ib_wc_status cnuas_ib_mw_bind(struct cnuas_ib_qp *qp,
				   const struct cnuas_send_wqe *w);
/* Table lock held: unbind the windows of an MR being deregistered. */
void cnuas_ib_mw_unbind_all(struct cnuas_ib_mr *mr);

/* IB_WR_REG_MR on the FRMR that @key names: IB_WC_SUCCESS or the error. */
enum ib_wc_status cnuas_ib_mr_fast_reg(struct cnuas_ib_pd *pd, u32 key,
				       int access);

/* mr-dmabuf.c */
struct ib_mr *cnuas_ib_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
					  u64 len, u64 iova, int fd,
					  int access,
					  CNUAS_IB_REG_DMABUF_DMAH
					  struct CNUAS_REG_DMABUF_ARG *arg);

/* ah.c */
int cnuas_ib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		       struct ib_udata *udata);
int cnuas_ib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr);
int cnuas_ib_destroy_ah(struct ib_ah *ibah, u32 flags);

/* srq.c */
int cnuas_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata);
int cnuas_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata);
int cnuas_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int cnuas_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int cnuas_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad_wr);

/* qp.c */
int cnuas_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata);
int cnuas_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		       int mask, struct ib_udata *udata);
int cnuas_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		      int mask, struct ib_qp_init_attr *init);
int cnuas_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);

/* post.c: kernel QPs write WRs into their rings; user QPs only kick. */
int cnuas_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad_wr);
int cnuas_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);

#endif /* CNUAS_IB_H */
