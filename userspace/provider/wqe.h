/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * Work requests to ring slots (struct cnuas_send_wqe / cnuas_recv_wqe
 * of uapi/cnuas-abi.h). Pure functions of the request and the queue's
 * limits, so the host unit test checks them without a device.
 */
#ifndef CNUAS_WQE_H
#define CNUAS_WQE_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include <rdma/cnuas-abi.h>

/*
 * IBV_WR_FLUSH and IBV_WR_ATOMIC_WRITE (uverbs ABI values): libibverbs
 * 44 (Debian 12) names only the second, and this file builds against it.
 */
#define CNUAS_WR_FLUSH		14
#define CNUAS_WR_ATOMIC_WRITE	15

struct cnuas_wqe_limits {
	enum ibv_qp_type qp_type;
	uint32_t stride;	/* slot size in bytes */
	uint32_t max_sge;
	uint32_t max_inline;
	/*
	 * 1: from the ibv_wr_* API (wr.c), which alone builds ATOMIC WRITE
	 * and FLUSH: their operands ride in wr.atomic (see cnuas_wqe_send).
	 */
	uint32_t wr_api;
};

/*
 * Fill @slot from @wr. @ah_num names wr->wr.ud.ah for UD QPs. ATOMIC
 * WRITE and FLUSH come from wr.c only (lim->wr_api), which puts their
 * operands in wr->wr.atomic: remote_addr and rkey as for atomics;
 * ATOMIC WRITE's 8 bytes, as they lie in memory, in compare_add;
 * FLUSH's length in compare_add, its type | level << 8 in swap. Returns 0
 * or EINVAL (opcode not valid for the QP type, too many SGEs, inline
 * data too long or not allowed for the opcode).
 */
int cnuas_wqe_send(void *slot, const struct cnuas_wqe_limits *lim,
		   const struct ibv_send_wr *wr, uint32_t ah_num);

/* Fill @slot from @wr: 0 or EINVAL (too many SGEs). */
int cnuas_wqe_recv(void *slot, const struct cnuas_wqe_limits *lim,
		   const struct ibv_recv_wr *wr);

#endif /* CNUAS_WQE_H */
