/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Debug output that names its object, through ib_core's ibdev_dbg(), so
 * dynamic debug turns it on per module, file, function or line:
 *
 *   echo 'module cnuas_ib +p' > /sys/kernel/debug/dynamic_debug/control
 *
 * A line reads "cnuas_0: QP17: ...". Lines that go with a hardware
 * counter (rdma statistic, hw_counters) name it in brackets, e.g.
 * "cnuas_0: QP17: [duplicate_request] PSN 5 (opcode 0x0a), expected 9",
 * so a counter that moves can be matched with its reasons; drops say
 * "drop:" (docs/debugging.md lists them).
 *
 * A site that is off costs one patched-out jump: its arguments are not
 * evaluated, so they may call the explaining functions below. Without
 * dynamic debug the lines compile away, arguments and all.
 */
#ifndef CNUAS_IB_DEBUG_H
#define CNUAS_IB_DEBUG_H

#include <linux/printk.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>

#include "transport.h"

#if defined(CONFIG_DYNAMIC_DEBUG) || \
	(defined(CONFIG_DYNAMIC_DEBUG_CORE) && defined(DYNAMIC_DEBUG_MODULE))
#define cnuas_dbg_dev(cdev, fmt, ...) \
	ibdev_dbg(&(cdev)->ibdev, fmt, ##__VA_ARGS__)
#else
#define cnuas_dbg_dev(cdev, fmt, ...) \
	no_printk(fmt, ##__VA_ARGS__)
#endif

#define cnuas_dbg_qpn(cdev, qpn, fmt, ...) \
	cnuas_dbg_dev(cdev, "QP%u: " fmt, qpn, ##__VA_ARGS__)

#define cnuas_dbg_qp(qp, fmt, ...)					\
do {									\
	const struct cnuas_ib_qp *dq_ = (qp);				\
									\
	cnuas_dbg_qpn(dq_->cdev, dq_->ibqp.qp_num, fmt, ##__VA_ARGS__);	\
} while (0)

#define cnuas_dbg_mr(mr, fmt, ...)					\
do {									\
	const struct cnuas_ib_mr *dm_ = (mr);				\
									\
	cnuas_dbg_dev(dm_->cdev, "MR 0x%x: " fmt, dm_->key,		\
		      ##__VA_ARGS__);					\
} while (0)

/* Count one @stat event of the device and say why. */
#define cnuas_stat_dbg_dev(cdev, stat, fmt, ...)			\
do {									\
	struct cnuas_ib_dev *sd_ = (cdev);				\
	enum cnuas_ib_stat ss_ = (stat);				\
									\
	cnuas_ib_stat_inc(sd_, ss_);					\
	cnuas_dbg_dev(sd_, "[%s] " fmt, cnuas_ib_stat_name(ss_),	\
		      ##__VA_ARGS__);					\
} while (0)

/* Count one @stat event of the QP's device and say why, for the QP. */
#define cnuas_stat_dbg_qp(qp, stat, fmt, ...)				\
do {									\
	struct cnuas_ib_qp *sq_ = (qp);					\
	enum cnuas_ib_stat ss_ = (stat);				\
									\
	cnuas_ib_stat_inc(sq_->cdev, ss_);				\
	cnuas_dbg_qp(sq_, "[%s] " fmt, cnuas_ib_stat_name(ss_),	\
		     ##__VA_ARGS__);					\
} while (0)

/*
 * A received frame is dropped for @stat: say why and give @stat back.
 * cnuas_ib_rx() counts it (once, also when several multicast QPs drop it).
 */
#define cnuas_rx_drop(cdev, stat, fmt, ...)				\
({									\
	enum cnuas_ib_stat rs_ = (stat);				\
									\
	cnuas_dbg_dev(cdev, "[%s] drop: " fmt,				\
		      cnuas_ib_stat_name(rs_), ##__VA_ARGS__);		\
	rs_;								\
})

#define cnuas_rx_drop_qp(qp, stat, fmt, ...)				\
({									\
	enum cnuas_ib_stat rs_ = (stat);				\
									\
	cnuas_dbg_qp(qp, "[%s] drop: " fmt, cnuas_ib_stat_name(rs_),	\
		     ##__VA_ARGS__);					\
	rs_;								\
})

struct cnuas_ib_pd;

/* counters.c: the counter's name in rdma statistic and hw_counters. */
const char *cnuas_ib_stat_name(enum cnuas_ib_stat s);

/* debug.c: names for the lines. */
const char *cnuas_ib_qp_state_name(enum ib_qp_state s);
/* An AETH syndrome: "ACK", "RNR NAK", "NAK remote access error", ... */
const char *cnuas_ib_syndrome_name(u8 syn);
/*
 * Why the rkey lookup of [addr, addr + len) for @access by responder QP
 * @qpn fails (or "granted now", if it changed since). Takes the MR table's
 * lock: only for debug lines.
 */
const char *cnuas_ib_rkey_why(struct cnuas_ib_pd *pd, u32 key, u64 addr,
			      u64 len, int access, u32 qpn);

#endif /* CNUAS_IB_DEBUG_H */
