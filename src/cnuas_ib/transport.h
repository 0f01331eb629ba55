/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The RoCEv2 transport of cnuas_ib: per-device and per-QP state, and the
 * entry points the object code (qp.c, post.c, main.c) calls.
 *
 * Context rules:
 * - cnuas_ib_rx() runs in NAPI softirq context (cnuas_net's ->rx).
 * - cnuas_ib_transport_sq_kick() may be called from any context.
 * - qp_init/qp_modify/qp_destroy run in process context.
 */
#ifndef CNUAS_IB_TRANSPORT_H
#define CNUAS_IB_TRANSPORT_H

#include <linux/types.h>

struct cnuas_ib_dev;
struct cnuas_ib_qp;
struct sk_buff;

/* Per-device transport state (embedded in struct cnuas_ib_dev). */
struct cnuas_ib_tdev {
	int unused;	/* filled in by the transport */
};

/* Per-QP transport state (embedded in struct cnuas_ib_qp). */
struct cnuas_ib_tqp {
	int unused;	/* filled in by the transport */
};

/* probe (before ib_register_device) and remove (after unregister). */
int cnuas_ib_transport_dev_init(struct cnuas_ib_dev *cdev);
void cnuas_ib_transport_dev_cleanup(struct cnuas_ib_dev *cdev);

/* create_qp: before the QP is visible to the receive path. */
void cnuas_ib_transport_qp_init(struct cnuas_ib_qp *qp);
/*
 * modify_qp, after @mask's attributes and the new state were stored
 * under state_lock; @old_state is the state before. Starts, resets or
 * flushes (IB_QPS_ERR: every posted WQE completes with
 * IB_WC_WR_FLUSH_ERR) the transport.
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
void cnuas_ib_rx(struct cnuas_ib_dev *cdev, struct sk_buff *skb);
void cnuas_ib_tx_wake(struct cnuas_ib_dev *cdev);

/* counters.c: ib_device_ops for `rdma statistic`. */
struct rdma_hw_stats *cnuas_ib_alloc_hw_port_stats(struct ib_device *ibdev,
						   u32 port);
int cnuas_ib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			  u32 port, int index);

#endif /* CNUAS_IB_TRANSPORT_H */
