/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * libcnuas: the libibverbs provider of cnuas_ib.ko. Private objects and
 * the entry points of each file.
 *
 * Files, one role each:
 *   device.c  provider registration, device match, context (ABI check)
 *   verbs.c   device/port queries, PD and parent domain, MR, MW, AH
 *   queue.c   mmap of the rings the kernel shares (ring.h)
 *   cq.c      CQs: create/destroy, poll_cq, notify, extended polling
 *   qp.c      QPs: create/query/modify/destroy
 *   srq.c     SRQs: create/modify/query/destroy
 *   post.c    post_send (ring + one doorbell), post_recv, post_srq_recv
 *   wr.c      the extended send API (ibv_wr_start .. ibv_wr_complete)
 *   wqe.c     work requests to ring slots (no device needed: unit test)
 *
 * Locking: one spinlock per ring side we own (SQ, RQ, SRQ producer; CQ
 * consumer). Nothing in poll_cq, post_recv or post_srq_recv enters the
 * kernel (except post_recv on a QP in ERR: the kick that flushes it).
 */
#ifndef CNUAS_H
#define CNUAS_H

#include "compat.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/driver.h>
#include <infiniband/verbs.h>

#include <rdma/cnuas-abi.h>
#include "ring.h"

#define CNUAS_PREFIX "libcnuas: "
/* The kernel maps the RX poll page only where pages are this size. */
#define CNUAS_RX_POLL_PAGE 4096

struct cnuas_device {
	struct verbs_device vdev;
};

struct cnuas_context {
	struct verbs_context vctx;
	uint32_t max_inline;
	/* The device's RX poll page (uapi CNUAS_UCTX_RX_POLL), or NULL. */
	const volatile uint32_t *rx_poll;
	/* The kernel refused the SQ doorbell by write(): use ioctl. */
	int kick_ioctl;
	/*
	 * IBV_QP_EX_WITH_FLUSH / _ATOMIC_WRITE: what the kernel offers (its
	 * extended device caps) and the libibverbs we run in can call.
	 */
	uint64_t wr_ops_mpe;
};

/*
 * A poller that found its CQ empty lends its CPU to the device: the load
 * moves frames waiting on the link into the RX ring now (see the device's
 * F_RX_POLL), rather than when the host next schedules the device.
 */
static inline void cnuas_rx_poll(const struct cnuas_context *ctx)
{
	if (ctx->rx_poll)
		(void)*ctx->rx_poll;
}

/* A mapped ring and what protects our side of it. */
struct cnuas_queue {
	pthread_spinlock_t lock;
	struct cnuas_ring ring;
	void *map;
	size_t map_size;
	uint32_t max_sge;	/* SQ/RQ/SRQ: SGEs per WQE */
};

/*
 * A PD, or a parent domain (protection set): the PD it contains, whose
 * kernel handle it carries, and what ibv_alloc_parent_domain gave.
 */
struct cnuas_pd {
	struct ibv_pd ibpd;
	struct cnuas_pd *protection;	/* parent domain: the contained PD */
	uint32_t parents;		/* PD: parent domains made of it */
	void *pd_context;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
};

struct cnuas_cq {
	struct verbs_cq vcq;
	struct cnuas_queue q;
	const struct cnuas_cqe *cur;	/* extended polling: current CQE */
};

/* The ibv_wr_* batch of a QP: ibv_wr_start to ibv_wr_complete/abort. */
struct cnuas_wr_batch {
	struct ibv_send_wr wr;		/* the request being built */
	struct ibv_sge *sge;		/* its SGEs: max(max_sge, 1) of them */
	uint8_t *inl;			/* its inline bytes: max_inline */
	uint32_t ah_num;		/* UD: wr.wr.ud.ah's */
	uint32_t n;			/* slots written since ibv_wr_start */
	uint32_t space;			/* free slots at ibv_wr_start */
	int err;			/* first error since ibv_wr_start */
	int open;			/* wr is being built */
};

struct cnuas_qp {
	struct verbs_qp vqp;
	struct cnuas_queue sq;
	struct cnuas_queue rq;		/* unmapped with an SRQ */
	uint32_t max_inline;
	struct cnuas_wr_batch *batch;	/* created with send_ops_flags */
};

struct cnuas_srq {
	struct verbs_srq vsrq;
	struct cnuas_queue q;
	uint32_t srq_num;
};

struct cnuas_ah {
	struct ibv_ah ibah;
	uint32_t ah_num;
};

#define cnuas_container_of(ptr, type, member) \
	((type *)((uint8_t *)(ptr) - offsetof(type, member)))

static inline struct cnuas_context *to_cctx(struct ibv_context *ibctx)
{
	return cnuas_container_of(ibctx, struct cnuas_context, vctx.context);
}

static inline struct cnuas_pd *to_cpd(struct ibv_pd *ibpd)
{
	return cnuas_container_of(ibpd, struct cnuas_pd, ibpd);
}

static inline struct cnuas_cq *to_ccq(struct ibv_cq *ibcq)
{
	return cnuas_container_of(ibcq, struct cnuas_cq, vcq.cq);
}

static inline struct cnuas_cq *ex_to_ccq(struct ibv_cq_ex *ibcq)
{
	return cnuas_container_of(ibcq, struct cnuas_cq, vcq.cq_ex);
}

static inline struct cnuas_qp *to_cqp(struct ibv_qp *ibqp)
{
	return cnuas_container_of(ibqp, struct cnuas_qp, vqp.qp);
}

static inline struct cnuas_srq *to_csrq(struct ibv_srq *ibsrq)
{
	return cnuas_container_of(ibsrq, struct cnuas_srq, vsrq.srq);
}

static inline struct cnuas_ah *to_cah(struct ibv_ah *ibah)
{
	return cnuas_container_of(ibah, struct cnuas_ah, ibah);
}

/* queue.c */
int cnuas_queue_map(struct ibv_context *ibctx, struct cnuas_queue *q,
		    const struct cnuas_queue_info *info, uint32_t min_stride,
		    int producer);
void cnuas_queue_unmap(struct cnuas_queue *q);
int cnuas_queue_swap(struct ibv_context *ibctx, struct cnuas_queue *q,
		     const struct cnuas_queue_info *info, uint32_t min_stride,
		     int producer, struct cnuas_queue *old, const char *verb);

/* verbs.c */
int cnuas_query_device_ex(struct ibv_context *ibctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int cnuas_query_port(struct ibv_context *ibctx, uint8_t port,
		     struct ibv_port_attr *attr);
struct ibv_pd *cnuas_alloc_pd(struct ibv_context *ibctx);
int cnuas_dealloc_pd(struct ibv_pd *pd);
struct ibv_pd *
cnuas_alloc_parent_domain(struct ibv_context *ibctx,
			  struct ibv_parent_domain_init_attr *attr);
struct ibv_mr *cnuas_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access);
struct ibv_mr *cnuas_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				   size_t length, uint64_t iova, int fd,
				   int access);
int cnuas_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access);
int cnuas_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *cnuas_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int cnuas_dealloc_mw(struct ibv_mw *mw);
int cnuas_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);
struct ibv_ah *cnuas_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int cnuas_destroy_ah(struct ibv_ah *ah);

/* cq.c */
struct ibv_cq *cnuas_create_cq(struct ibv_context *ibctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector);
struct ibv_cq_ex *cnuas_create_cq_ex(struct ibv_context *ibctx,
				     struct ibv_cq_init_attr_ex *attr);
int cnuas_destroy_cq(struct ibv_cq *cq);
int cnuas_poll_cq(struct ibv_cq *cq, int num, struct ibv_wc *wc);
int cnuas_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int cnuas_resize_cq(struct ibv_cq *cq, int cqe);
void cnuas_cq_clean(struct ibv_cq *cq, uint32_t qpn);

/* qp.c */
struct ibv_qp *cnuas_create_qp(struct ibv_pd *pd,
			       struct ibv_qp_init_attr *attr);
struct ibv_qp *cnuas_create_qp_ex(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr);
int cnuas_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		   struct ibv_qp_init_attr *init);
int cnuas_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int cnuas_destroy_qp(struct ibv_qp *qp);

/* srq.c */
struct ibv_srq *cnuas_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr);
int cnuas_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
		     int mask);
int cnuas_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int cnuas_destroy_srq(struct ibv_srq *srq);

/* post.c */
int cnuas_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad);
int cnuas_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad);
int cnuas_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad);
struct cnuas_wqe_limits;
void cnuas_sq_limits(struct cnuas_qp *qp, struct cnuas_wqe_limits *lim);
int cnuas_sq_ready(const struct cnuas_qp *qp);
int cnuas_sq_doorbell(struct cnuas_qp *qp, uint32_t n);

/* wr.c */
uint64_t cnuas_wr_ops(const struct cnuas_context *ctx, enum ibv_qp_type type);
uint64_t cnuas_wr_ops_mpe(struct ibv_context *ibctx);
int cnuas_lib_has_wr_flush(void);
int cnuas_wr_init(struct cnuas_qp *qp, uint64_t send_ops_flags);
void cnuas_wr_free(struct cnuas_qp *qp);

#endif /* CNUAS_H */
