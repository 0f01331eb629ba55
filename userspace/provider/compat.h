/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * Differences between the rdma-core trees the provider builds against,
 * keyed on the tree's provider ABI (IBVERBS_PABI_VERSION in config.h).
 *
 * PABI 34 spans rdma-core 34..56: the provider may be built against a
 * newer 34 tree (e.g. 56.1) than the libibverbs it loads into (Debian
 * 12: 44.0). Everything used here exists in 44.0: no
 * ibv_cmd_create_cq_ex2, no reg_dmabuf_mr with a driver buffer, and no
 * verbs_context_ops member after resize_cq (44.0's verbs_set_ops() does
 * not read them). PABI 57/59/64 builds go through the guards below.
 */
#ifndef CNUAS_COMPAT_H
#define CNUAS_COMPAT_H

#include <config.h>

#ifndef IBVERBS_PABI_VERSION
#error "config.h of a configured rdma-core tree is needed (scripts/build-provider)"
#endif
#if IBVERBS_PABI_VERSION < 34
#error "rdma-core older than 34 (provider ABI < 34) is not supported"
#endif

/*
 * reg_dmabuf_mr: ibv_cmd_reg_dmabuf_mr() gained a driver buffer argument
 * within PABI 34 (56.1 has it, 44.0 not), so the tree's prototype says
 * nothing about the library loaded at run time: verbs.c calls it in a way
 * that is right for both.
 */

#endif /* CNUAS_COMPAT_H */
