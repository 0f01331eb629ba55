// SPDX-License-Identifier: GPL-2.0
/*
 * Verbs ib_core requires of every device before it registers it, which
 * the RoCEv2 transport has not implemented yet: each one fails cleanly
 * with -EOPNOTSUPP. The transport replaces them (cq.c, qp.c, mr.c, ...)
 * and this file goes away.
 */
#include "cnuas_ib.h"

int cnuas_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       struct CNUAS_CREATE_CQ_ARG *arg)
{
	return -EOPNOTSUPP;
}

/* Never called: no CQ is ever created. */
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

/* Never called: no QP is ever created. */
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

/* Never called: no MR is ever created. */
int cnuas_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	return 0;
}
