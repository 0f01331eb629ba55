/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * uverbs command buffers: the core request/response of libibverbs
 * followed by cnuas's driver data (uapi/cnuas-abi.h). The driver part
 * must start right after the core part, as the kernel's udata does.
 */
#ifndef CNUAS_CMD_H
#define CNUAS_CMD_H

#include <stddef.h>
#include <infiniband/kern-abi.h>

#include "uapi/cnuas-abi.h"

struct cnuas_get_context_cmd {
	struct ibv_get_context ibv_cmd;
	struct cnuas_alloc_ucontext_req drv;
};

struct cnuas_get_context_cmd_resp {
	struct ib_uverbs_get_context_resp ibv_resp;
	struct cnuas_alloc_ucontext_resp drv;
};

struct cnuas_create_cq_cmd_resp {
	struct ib_uverbs_create_cq_resp ibv_resp;
	struct cnuas_create_cq_resp drv;
};

struct cnuas_create_cq_ex_cmd_resp {
	struct ib_uverbs_ex_create_cq_resp ibv_resp;
	struct cnuas_create_cq_resp drv;
};

struct cnuas_resize_cq_cmd_resp {
	struct ib_uverbs_resize_cq_resp ibv_resp;
	struct cnuas_resize_cq_resp drv;
};

struct cnuas_create_qp_cmd_resp {
	struct ib_uverbs_create_qp_resp ibv_resp;
	struct cnuas_create_qp_resp drv;
};

struct cnuas_create_srq_cmd_resp {
	struct ib_uverbs_create_srq_resp ibv_resp;
	struct cnuas_create_srq_resp drv;
};

struct cnuas_create_ah_cmd_resp {
	struct ib_uverbs_create_ah_resp ibv_resp;
	struct cnuas_create_ah_resp drv;
};

#define CNUAS_CMD_CHECK(t, core, drv)                                        \
	_Static_assert(offsetof(struct t, drv) == sizeof(struct core),       \
		       #t ": driver data must follow the core part")
CNUAS_CMD_CHECK(cnuas_get_context_cmd, ibv_get_context, drv);
CNUAS_CMD_CHECK(cnuas_get_context_cmd_resp, ib_uverbs_get_context_resp, drv);
CNUAS_CMD_CHECK(cnuas_create_cq_cmd_resp, ib_uverbs_create_cq_resp, drv);
CNUAS_CMD_CHECK(cnuas_create_cq_ex_cmd_resp, ib_uverbs_ex_create_cq_resp, drv);
CNUAS_CMD_CHECK(cnuas_resize_cq_cmd_resp, ib_uverbs_resize_cq_resp, drv);
CNUAS_CMD_CHECK(cnuas_create_qp_cmd_resp, ib_uverbs_create_qp_resp, drv);
CNUAS_CMD_CHECK(cnuas_create_srq_cmd_resp, ib_uverbs_create_srq_resp, drv);
CNUAS_CMD_CHECK(cnuas_create_ah_cmd_resp, ib_uverbs_create_ah_resp, drv);

#endif /* CNUAS_CMD_H */
