// SPDX-License-Identifier: GPL-2.0
/*
 * Placeholders while the object code lands (queue.c, cq.c, mr.c, ah.c,
 * srq.c, qp.c, post.c): each verb fails cleanly with -EOPNOTSUPP. Each
 * moves to its own file; this file then goes away.
 */
#include "cnuas_ib.h"

int cnuas_ib_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	return -EINVAL;
}

void cnuas_ib_mmap_free(struct rdma_user_mmap_entry *entry)
{
}

int cnuas_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       struct CNUAS_CREATE_CQ_ARG *arg)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	return 0;
}

int cnuas_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		       struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

int cnuas_ib_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	return 0;
}

int cnuas_ib_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

int cnuas_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		       int mask, struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		      int mask, struct ib_qp_init_attr *init)
{
	return -EOPNOTSUPP;
}

int cnuas_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	return 0;
}

int cnuas_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

int cnuas_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

struct ib_mr *cnuas_ib_get_dma_mr(struct ib_pd *ibpd, int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

struct ib_mr *cnuas_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
				   u64 iova, int access,
				   CNUAS_IB_REG_USER_MR_DMAH
				   struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

int cnuas_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	return 0;
}
