/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The RoCEv2 transport of cnuas_ib: per-device and per-QP state, and the
 * entry points the object code (qp.c, post.c, main.c) calls.
 *
 * Context rules:
 * - cnuas_ib_rx() runs in NAPI softirq context (cnuas_net's ->rx).
 * - cnuas_ib_transport_sq_kick() may be called from any context.
 * - qp_init/qp_destroy run in process context; qp_modify in any context
 *   (without qp->state_lock held).
 *
 * Inside the transport, one spinlock per QP (tqp.lock, BH-safe, never
 * taken with IRQs off) guards all of its state: the receive path (softirq)
 * runs the responder and the completer under it, the QP's work item
 * (process context) runs the requester, READ responses and flushes under
 * it. Frames are transmitted with that lock held (cnuas_net's xmit is
 * BH-safe). cnuas_ib_qp_error() is only called with no transport lock
 * held (see cnuas_ib_tqp_unlock()). Timers only queue the work item.
 *
 * Runners: the work item is not the only place a QP's requester runs. A
 * user QP's doorbell (post_send) runs it inline, and so does the receive
 * path once per NAPI batch for every QP the batch touched, so an ACK
 * (one per QP and batch), a READ response or the next requests do not
 * wait for a worker thread to be scheduled. A runner owns the
 * CNUAS_TQP_RUNNER bit while it runs; cnuas_ib_tqp_schedule() from
 * anywhere sets CNUAS_TQP_RUN and only queues the work item when no runner
 * holds the QP (the holder looks at RUN again before it lets go).
 */
#ifndef CNUAS_IB_TRANSPORT_H
#define CNUAS_IB_TRANSPORT_H

#include <linux/atomic.h>
#include <linux/in6.h>
#include <linux/list.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "uapi/cnuas-abi.h"

struct cnuas_ib_dev;
struct cnuas_ib_qp;
struct cnuas_ib_mr;
struct cnuas_ib_ah;
struct cnuas_ib_pd;
struct cnuas_ib_av;
struct cnuas_ib_recv_wqe;
struct cnuas_opcode;
struct sk_buff;
struct rdma_hw_stats;

/* 6.16 renamed from_timer(). */
#ifndef timer_container_of
#define timer_container_of(var, t, field)	from_timer(var, t, field)
#endif

/*
 * Tunables of the transport (packets). The requester's window grows like
 * TCP's (slow start, then one packet per window), halves on a sequence
 * NAK and drops to the minimum after an ACK timeout: go-back-N resends
 * the whole window per loss, so it has to stay small on a lossy path.
 */
#define CNUAS_IB_WINDOW		1024	/* requester packets in flight, max */
#define CNUAS_IB_MIN_WINDOW	8	/* ... floor, after an ACK timeout */
#define CNUAS_IB_ACKREQ_EVERY	16	/* AckReq at least this often */
#define CNUAS_IB_ACK_EVERY	32	/* responder ACKs unasked after */
/* A held ACK that waited this long found no request coming (resp.c). */
#define CNUAS_IB_ACK_HOLD_MISS_NS	(1000 * NSEC_PER_USEC)
#define CNUAS_IB_TX_BUDGET	256	/* frames per work item run */
#define CNUAS_IB_MIN_TIMEOUT_MS	250	/* floor of the ACK timeout */
#define CNUAS_IB_MIN_RTO_MS	20	/* floor of the resend timer */
/* How long a dying QP's owed ACK may wait for TX ring room. */
#define CNUAS_IB_ACK_RELEASE_MS	200

/* Hardware counters (counters.c holds the names, in this order). */
enum cnuas_ib_stat {
	CNUAS_STAT_SENT_PKTS,
	CNUAS_STAT_RCVD_PKTS,
	CNUAS_STAT_DUP_REQ,
	CNUAS_STAT_OUT_OF_SEQ_REQ,
	CNUAS_STAT_RCVD_RNR_ERR,
	CNUAS_STAT_SEND_RNR_ERR,
	CNUAS_STAT_RCVD_SEQ_ERR,
	CNUAS_STAT_ACK_DEFERRED,
	CNUAS_STAT_RETRY_EXCEEDED,
	CNUAS_STAT_RNR_RETRY_EXCEEDED,
	CNUAS_STAT_COMPLETER_RETRY,
	CNUAS_STAT_SEND_ERR,
	CNUAS_STAT_RDMA_SENDS,
	CNUAS_STAT_RDMA_RECVS,
	CNUAS_STAT_ICRC_ERR,
	CNUAS_STAT_DROP_HDR,
	CNUAS_STAT_DROP_QPN,
	CNUAS_STAT_DROP_QKEY,
	CNUAS_STAT_DROP_PKEY,
	CNUAS_STAT_DROP_STATE,
	CNUAS_STAT_DROP_OPCODE,
	CNUAS_STAT_DROP_SRC,
	CNUAS_STAT_DROP_NO_RECV,
	CNUAS_STAT_DROP_RESP,
	CNUAS_STAT_TX_BUSY,
	CNUAS_STAT_TX_ICRC_OFFLOAD,	/* ICRC left to the device */
	CNUAS_STAT_RX_ICRC_OFFLOAD,	/* ICRC verdict from the device */
	CNUAS_STAT_TX_ZERO_COPY,	/* payload sent from the MR's pages */
	CNUAS_STAT_FAST_REG,		/* REG_MR work requests done */
	CNUAS_STAT_LOCAL_INV,		/* LOCAL_INV work requests done */
	CNUAS_STAT_REMOTE_INV,		/* MRs a SEND with Invalidate freed */
	CNUAS_STAT_MCAST_RCVD,		/* multicast packets for a group */
	CNUAS_STAT_ACK_WITH_REQ,	/* ACK sent behind the QP's requests */
	CNUAS_STAT_ACK_HOLD_EXPIRED,	/* a held ACK waited in vain */
	CNUAS_STAT_ACK_RELEASE_LOST,	/* a dying QP's ACK found no room */
	CNUAS_STAT_MW_BIND,		/* memory windows bound */
	CNUAS_STAT_UC_MSG_DROPPED,	/* UC messages lost in part or whole */
	CNUAS_STAT_TRAPS_SENT,		/* SMA traps to the SM (trap.c) */
	CNUAS_STAT_TRAPS_REPRESSED,	/* ... that the SM repressed */
	CNUAS_STAT_VCRC_ERR,		/* read from cnuas_net: bad VCRC (IB) */
	CNUAS_STAT_NUM
};

/* Per-device transport state (embedded in struct cnuas_ib_dev). */
struct cnuas_ib_tdev {
	struct workqueue_struct *wq;	/* the QPs' work items */
	spinlock_t park_lock;		/* parked */
	struct list_head parked;	/* QPs waiting for TX ring room */
	bool rx_batching;		/* ->rx_batch_end is wired */
	spinlock_t rx_run_lock;		/* rx_run */
	struct list_head rx_run;	/* QPs to run at the RX batch's end */
	atomic64_t stats[CNUAS_STAT_NUM];
	/* loopback.c: frames to our own MAC */
	struct sk_buff_head loop_q;
	struct work_struct loop_work;
	unsigned long loop_full;	/* bit 0: a sender saw -EBUSY */
	struct page *zero_page;		/* zero-copy frames' pad and ICRC */
};

/* Bits of cnuas_ib_tqp.flags (atomic bitops, any context). */
enum {
	CNUAS_TQP_RETRY,		/* ACK timeout expired */
	CNUAS_TQP_RNR,			/* RNR wait over: resend */
	CNUAS_TQP_SEND_ACK,		/* responder owes an ACK ... */
	CNUAS_TQP_ACK_NOW,		/* ... that may not be held */
	CNUAS_TQP_DYING,		/* destroy: no new work, no timers */
	CNUAS_TQP_MODIFIED,		/* state changed in atomic context */
	CNUAS_TQP_RUN,			/* the QP has work for a runner */
	CNUAS_TQP_RUNNER,		/* a runner holds the QP (see below) */
};

/*
 * req.c: the kernel's own copy of one send WQE, by SQ slot (user space
 * may rewrite its ring at any time), and where the transport is with it.
 */
enum cnuas_ib_swqe_state {
	CNUAS_SW_NEW,			/* copied, not validated yet */
	CNUAS_SW_STARTED,		/* validated, PSNs assigned */
	CNUAS_SW_DONE,			/* finished: complete with status */
};

struct cnuas_ib_swqe {
	struct cnuas_send_wqe wqe;
	u32 len;			/* message length */
	u32 first_psn;
	u32 last_psn;			/* READ: of the last response */
	u32 resp_psn;			/* READ/atomic: next response PSN */
	u8 state;			/* enum cnuas_ib_swqe_state */
	u8 status;			/* enum ib_wc_status when DONE */
	bool rd;			/* READ or atomic */
	u8 reserved;
	u8 data[] __aligned(8);		/* SGEs or inline data */
};

struct cnuas_ib_res;			/* resp.c: READ/atomic history */

/* A QP's reusable small frames: its requests, and its ACKs and responses. */
enum cnuas_skb_kind {
	CNUAS_SKB_REQ,
	CNUAS_SKB_RESP,
	CNUAS_SKB_KINDS
};

/*
 * Up to CNUAS_SKB_POOL of them per kind, filled as a burst needs them (a
 * ping-pong uses one): a requester's window of small atomics or a
 * responder's batch of their responses is out at once (see net.c). 16
 * ran dry in ib_atomic_bw's window of 128; 64 (about 80 KB per kind)
 * covers what the TX ring holds before it is reaped.
 */
#define CNUAS_SKB_POOL	64
struct cnuas_skb_pool {
	struct sk_buff *skb[CNUAS_SKB_POOL];
	unsigned int next;		/* the oldest one: tried first */
};

/* Per-QP transport state (embedded in struct cnuas_ib_qp). */
struct cnuas_ib_tqp {
	spinlock_t lock;		/* everything below but flags/park */
	struct work_struct work;	/* requester, READ responses, flush */
	struct timer_list retry_timer;	/* ACK timeout */
	struct timer_list rnr_timer;	/* RNR NAK wait */
	struct timer_list ack_timer;	/* end of a held ACK's wait */
	struct list_head park;		/* on tdev.parked (park_lock) */
	struct list_head rx_run;	/* on tdev.rx_run (rx_run_lock) */
	unsigned long flags;		/* CNUAS_TQP_* */
	struct sk_buff *pending;	/* built frame TX refused (-EBUSY) */
	/* Small frames sent again once the device let go (net.c). */
	struct cnuas_skb_pool skb_pools[CNUAS_SKB_KINDS];

	/* Snapshot of the verbs state and attributes (qp_modify). */
	enum ib_qp_state state;
	bool fatal;			/* raise cnuas_ib_qp_error() on unlock */
	enum ib_event_type fatal_event;	/* 0: none */
	bool flushed;			/* ERR: transport resources released */
	u32 mtu;
	u32 dest_qpn;
	u32 qkey;
	u16 pkey_index;			/* its entry is the QP's P_Key */
	u8 max_rd_atomic;
	u8 max_dest_rd_atomic;
	u8 min_rnr_timer;
	int access;			/* qp_access_flags: remote rights */
	unsigned long timeout_j;	/* ACK timeout in jiffies, 0: none */

	/* Requester. Ring indices are free running like the ring's. */
	struct cnuas_ib_swqe *swqe;	/* shadow slots, sq.num of them */
	u32 swqe_stride;		/* bytes per shadow slot */
	u32 sq_fetch;			/* next ring index to copy */
	u32 req_idx;			/* WQE being sent */
	u32 req_off;			/* its next byte */
	u32 req_psn;			/* next PSN to send */
	u32 una;			/* oldest unacknowledged PSN */
	u32 psn_hi;			/* next PSN after the highest sent */
	u32 rd_out;			/* READ/atomic WQEs in flight */
	u32 since_ackreq;		/* packets since the last AckReq */
	u32 cwnd;			/* window now: shrinks on losses */
	u32 ssthresh;			/* slow start below this window */
	u32 cwnd_acked;			/* packets acked toward cwnd + 1 */
	/*
	 * The resend timer runs at a measured RTO (srtt + 4 * rttvar, like
	 * TCP's); a retry only counts against retry_cnt once the QP's ACK
	 * timeout passed without progress, as the IBA timer would.
	 */
	unsigned long rto_j;		/* resend timer, 0: not measured */
	unsigned long progress_j;	/* when una last moved */
	unsigned long retry_due;	/* resend deadline (see req.c) */
	unsigned long rtt_start;	/* when rtt_psn was sent */
	u32 srtt8;			/* smoothed RTT, jiffies * 8 */
	u32 rttvar4;			/* its mean deviation, jiffies * 4 */
	u32 rtt_psn;			/* PSN being timed */
	bool rtt_timing;		/* rtt_psn is a first transmission */
	u32 rnr_psn;			/* resend from here after RNR wait */
	bool rnr_wait;			/* RNR NAK: sending paused */
	u8 retry_left;
	u8 rnr_left;
	u8 retry_cnt;
	u8 rnr_retry;

	/* Responder. */
	u32 epsn;			/* expected PSN */
	u32 msn;			/* messages completed */
	bool nak_sent;			/* one sequence NAK per gap */
	bool uc_drop;			/* UC: dropping until FIRST/ONLY */
	u8 resp_op;			/* CNUAS_OPF_SEND/_WRITE in progress */
	bool rwqe_valid;		/* rwqe taken for the current SEND */
	u32 recv_off;			/* bytes received into rwqe */
	u32 wr_rkey;			/* WRITE in progress */
	u64 wr_va;
	u32 wr_left;
	u32 wr_len;
	u32 ack_pkts;			/* requests received since the ACK */
	u64 ack_hold_ns;		/* when the ACK began to wait */
	unsigned long ack_nohold_j;	/* no holding until then */
	unsigned long req_sent_j;	/* last run that sent a request (resp.c) */
	u8 ack_misses;			/* holds in a row that waited in vain */
	struct cnuas_ib_res *res;	/* history, CNUAS_IB_MAX_QP_RD_ATOM */
	u32 res_next;			/* next history slot to use */
	u32 res_cur;			/* slot READ responses come from */
	u32 res_num;			/* slots in use: max_dest_rd_atomic */
	struct cnuas_ib_recv_wqe *rwqe;	/* the current receive WQE */
};

/* probe (before ib_register_device) and remove (after unregister). */
int cnuas_ib_transport_dev_init(struct cnuas_ib_dev *cdev);
void cnuas_ib_transport_dev_cleanup(struct cnuas_ib_dev *cdev);

/*
 * create_qp: before the QP is visible to the receive path; qp->type,
 * qp->cdev and the queues are set. Allocates the transport's per-QP
 * memory: on error create_qp fails.
 */
int cnuas_ib_transport_qp_init(struct cnuas_ib_qp *qp);
/*
 * modify_qp, after @mask's attributes and the new state were stored
 * under state_lock (not held now); @old_state is the state before. Starts,
 * resets or flushes (IB_QPS_ERR: every posted WQE completes with
 * IB_WC_WR_FLUSH_ERR) the transport. Any context.
 */
void cnuas_ib_transport_qp_modify(struct cnuas_ib_qp *qp, int mask,
				  enum ib_qp_state old_state);
/*
 * destroy_qp: the QP is already out of the QPN table and no RX lookup
 * holds it. Stops timers and work, releases what the transport holds.
 */
void cnuas_ib_transport_qp_destroy(struct cnuas_ib_qp *qp);

/* New send WQEs in @qp's SQ (the doorbell). Any context. */
void cnuas_ib_transport_sq_kick(struct cnuas_ib_qp *qp);

/* cnuas_net callbacks (main.c forwards them). */
/* @flags: cnuas_net's CNUAS_NET_AUX_RX_* (the device's ICRC verdict). */
void cnuas_ib_rx(struct cnuas_ib_dev *cdev, struct sk_buff *skb, u32 flags);
/* Runs the QPs the batch's packets made runnable; then the doorbell. */
void cnuas_ib_rx_batch_end(struct cnuas_ib_dev *cdev);
void cnuas_ib_tx_wake(struct cnuas_ib_dev *cdev);

/* counters.c: ib_device_ops for `rdma statistic`. */
struct rdma_hw_stats *cnuas_ib_alloc_hw_port_stats(struct ib_device *ibdev,
						   u32 port);
int cnuas_ib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			  u32 port, int index);

/* ---- inside the transport (net.c recv.c req.c comp.c resp.c) ---- */

/* 24-bit PSN arithmetic: a - b as a signed distance. */
static inline int cnuas_psn_diff(u32 a, u32 b)
{
	return (int)((a - b) << 8) >> 8;
}

static inline u32 cnuas_psn_add(u32 psn, u32 n)
{
	return (psn + n) & 0x00ffffffu;
}

/* net.c: a received packet, validated up to and with the ICRC. */
/*
 * The P_Key a packet of @qp carries (IBA 10.9.2): the QP's entry of the
 * P_Key table; a GSI QP's send @w names its own (the MAD layer answers
 * with the index the request came in on); QP0's is never checked.
 */
struct cnuas_send_wqe;
u16 cnuas_ib_tx_pkey(struct cnuas_ib_qp *qp, const struct cnuas_send_wqe *w);

struct cnuas_ib_rxp {
	struct sk_buff *skb;
	const struct cnuas_opcode *op;
	void *bth;
	u8 *payload;
	u32 paylen;
	u32 psn;
	u32 qpn;
	u8 opcode;
	u8 net_type;			/* RDMA_NETWORK_IPV4 / _IPV6 / _IB */
	u16 vlan_id;			/* 0xffff: untagged */
	const void *iph;		/* the IP header; IB: the GRH or NULL */
	const u8 *smac;			/* IB: NULL */
	struct in6_addr saddr;		/* IPv4: v4-mapped; IB: the SGID */
	/* IB link layer (ib_frame.c): the LRH */
	u16 slid;
	u16 dlid;
	u8 sl;
	u8 path_bits;			/* DLID's bits under the LMC */
	u16 pkey_index;			/* the entry the BTH's P_Key matched */
};

/*
 * Parse @skb into @p: 0, or the CNUAS_STAT_* drop reason. The ICRC is
 * checked in software unless @flags carry the device's verdict.
 */
int cnuas_ib_parse(struct cnuas_ib_dev *cdev, struct sk_buff *skb, u32 flags,
		   struct cnuas_ib_rxp *p);
/*
 * A frame for @av with @hdr_len bytes of BTH and extension headers and
 * @paylen bytes of payload: *bth and *payload point where the caller
 * writes them. Seal it (pad, ICRC, UDP checksum) once they are written:
 * the device does the ICRC and the checksum when it offers to (not for
 * frames to our own MAC, which never reach it).
 */
struct sk_buff *cnuas_ib_pkt_alloc(struct cnuas_ib_dev *cdev,
				   struct cnuas_skb_pool *pool,
				   const struct cnuas_ib_av *av,
				   u32 hdr_len, u32 paylen, void **bth,
				   void **payload);
void cnuas_ib_pkt_seal(struct cnuas_ib_dev *cdev, struct sk_buff *skb);
/* frame.c: the QP is gone; its reusable frames go with their last user. */
void cnuas_ib_pkt_pools_free(struct cnuas_skb_pool *pools, int n);
/*
 * A frame with @paylen payload bytes taken from MRs through @sge (at
 * @offset, checked for @access): the MRs' pages become fragments when the
 * device computes the ICRC and they are user MRs, else the bytes are
 * copied into the head. Fill the headers at *bth, then seal. ERR_PTR:
 * -ENOMEM, -EINVAL (key, bounds, access), -EMSGSIZE (SGEs too short).
 * @pool (or NULL): the QP's skb_pools entry a small copied frame reuses.
 */
struct sk_buff *cnuas_ib_pkt_from_mr(struct cnuas_ib_dev *cdev,
				     struct cnuas_skb_pool *pool,
				     const struct cnuas_ib_av *av, u32 hdr_len,
				     void **bth, struct cnuas_ib_pd *pd,
				     const struct cnuas_sge *sge, u32 num_sge,
				     u32 offset, u32 paylen, int access);

/* skb->cb of our frames between seal and xmit. */
struct cnuas_ib_skb_cb {
	bool hw_icrc;			/* the device computes ICRC (+ csum) */
};

static inline struct cnuas_ib_skb_cb *cnuas_ib_skb_cb(struct sk_buff *skb)
{
	return (struct cnuas_ib_skb_cb *)skb->cb;
}

static inline u8 cnuas_ib_pad(u32 paylen)
{
	return -paylen & 3;
}

/* Queue a sealed frame; counts it. 0, -EBUSY (skb still ours), or error
 * (skb freed).
 */
int cnuas_ib_xmit(struct cnuas_ib_dev *cdev, struct sk_buff *skb, bool more);

/* loopback.c */
void cnuas_ib_loop_init(struct cnuas_ib_dev *cdev);
void cnuas_ib_loop_cleanup(struct cnuas_ib_dev *cdev);
int cnuas_ib_loop_xmit(struct cnuas_ib_dev *cdev, struct sk_buff *skb);

/* counters.c */
void cnuas_ib_stat_inc(struct cnuas_ib_dev *cdev, enum cnuas_ib_stat s);

/* transport.c */
void cnuas_ib_transport_qp_modify_locked(struct cnuas_ib_qp *qp, int mask);
void cnuas_ib_tqp_schedule(struct cnuas_ib_qp *qp);
/* Become the QP's runner (false: another one is, and will see RUN). */
bool cnuas_ib_tqp_runner_begin(struct cnuas_ib_qp *qp);
/* recv.c: @qp's runner and reference go to the end of the RX batch. */
void cnuas_ib_rx_defer(struct cnuas_ib_qp *qp);
/* Run the QP while it has work (bounded), then let go; no lock held. */
void cnuas_ib_tqp_runner_end(struct cnuas_ib_qp *qp);
void cnuas_ib_tqp_park(struct cnuas_ib_qp *qp);
void cnuas_ib_tqp_fatal(struct cnuas_ib_qp *qp, enum ib_event_type ev);
void cnuas_ib_tqp_unlock_bh(struct cnuas_ib_qp *qp)
	__releases(&qp->t.lock);
void cnuas_ib_tqp_unlock(struct cnuas_ib_qp *qp)
	__releases(&qp->t.lock);
/* Transmit a frame for @qp: -EBUSY keeps it as t.pending and parks. */
int cnuas_ib_tqp_xmit(struct cnuas_ib_qp *qp, struct sk_buff *skb, bool more);

/* req.c (work item, lock held) */
struct cnuas_ib_swqe *cnuas_ib_swqe_at(struct cnuas_ib_qp *qp, u32 idx);
int cnuas_ib_req_init(struct cnuas_ib_qp *qp);
void cnuas_ib_req_cleanup(struct cnuas_ib_qp *qp);
void cnuas_ib_req_reset(struct cnuas_ib_qp *qp);
int cnuas_ib_req_run(struct cnuas_ib_qp *qp, int budget);
void cnuas_ib_req_rewind(struct cnuas_ib_qp *qp, u32 psn);
void cnuas_ib_req_window_init(struct cnuas_ib_tqp *t);
void cnuas_ib_req_arm_timer(struct cnuas_ib_qp *qp);
void cnuas_ib_req_retry_timeout(struct cnuas_ib_qp *qp);
void cnuas_ib_req_flush(struct cnuas_ib_qp *qp);
/* Update a user SQ's db_skip; true: WQEs wait that a run would take. */
bool cnuas_ib_req_doorbell_hint(struct cnuas_ib_qp *qp);

/* comp.c (RX, lock held) */
void cnuas_ib_comp_rx(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p);
void cnuas_ib_comp_advance(struct cnuas_ib_qp *qp);
void cnuas_ib_comp_post(struct cnuas_ib_qp *qp, struct cnuas_ib_swqe *sw,
			enum ib_wc_status status);

/* resp.c (RX, lock held; READ responses in the work item) */
int cnuas_ib_resp_init(struct cnuas_ib_qp *qp);
void cnuas_ib_resp_cleanup(struct cnuas_ib_qp *qp);
void cnuas_ib_resp_reset(struct cnuas_ib_qp *qp);
void cnuas_ib_resp_hold_reset(struct cnuas_ib_tqp *t);
void cnuas_ib_resp_rx(struct cnuas_ib_qp *qp, struct cnuas_ib_rxp *p);
int cnuas_ib_resp_run(struct cnuas_ib_qp *qp, int budget);
void cnuas_ib_resp_flush(struct cnuas_ib_qp *qp);
bool cnuas_ib_resp_send_ack(struct cnuas_ib_qp *qp, bool more);
int cnuas_ib_resp_ack_run(struct cnuas_ib_qp *qp, bool req_sent);
bool cnuas_ib_resp_ack_release(struct cnuas_ib_qp *qp, bool dying);

#endif /* CNUAS_IB_TRANSPORT_H */
