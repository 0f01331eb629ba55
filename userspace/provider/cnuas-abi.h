/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * uverbs command buffers: the core request/response of libibverbs
 * followed by cnuas's driver data (<rdma/cnuas-abi.h>), declared the way
 * rdma-core's providers declare theirs. <kernel-abi/cnuas-abi.h> is made
 * from the uapi header by rdma-core's make_abi_structs.py (in rdma-core's
 * tree by its cmake, standalone by our Makefile); DECLARE_DRV_CMD checks
 * that the driver part starts right after the core part, as the
 * kernel's udata does. Fields: cmd.ibv_cmd, resp.ibv_resp, and the
 * driver's as resp.drv_payload (or by name).
 */
#ifndef LIBCNUAS_ABI_H
#define LIBCNUAS_ABI_H

#include <infiniband/kern-abi.h>
#include <rdma/cnuas-abi.h>
#include <kernel-abi/cnuas-abi.h>

DECLARE_DRV_CMD(cnuas_cmd_alloc_ucontext, IB_USER_VERBS_CMD_GET_CONTEXT,
		cnuas_alloc_ucontext_req, cnuas_alloc_ucontext_resp);
DECLARE_DRV_CMD(cnuas_cmd_create_cq, IB_USER_VERBS_CMD_CREATE_CQ,
		empty, cnuas_create_cq_resp);
DECLARE_DRV_CMD(cnuas_cmd_create_cq_ex, IB_USER_VERBS_EX_CMD_CREATE_CQ,
		empty, cnuas_create_cq_resp);
DECLARE_DRV_CMD(cnuas_cmd_resize_cq, IB_USER_VERBS_CMD_RESIZE_CQ,
		empty, cnuas_resize_cq_resp);
DECLARE_DRV_CMD(cnuas_cmd_create_qp, IB_USER_VERBS_CMD_CREATE_QP,
		empty, cnuas_create_qp_resp);
DECLARE_DRV_CMD(cnuas_cmd_create_srq, IB_USER_VERBS_CMD_CREATE_SRQ,
		empty, cnuas_create_srq_resp);
DECLARE_DRV_CMD(cnuas_cmd_modify_srq, IB_USER_VERBS_CMD_MODIFY_SRQ,
		cnuas_modify_srq_req, empty);
DECLARE_DRV_CMD(cnuas_cmd_create_ah, IB_USER_VERBS_CMD_CREATE_AH,
		empty, cnuas_create_ah_resp);

#endif /* LIBCNUAS_ABI_H */
