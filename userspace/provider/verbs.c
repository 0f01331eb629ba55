// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Device and port queries, protection domains and parent domains, memory
 * regions and windows, AHs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cnuas.h"
#include "cnuas-abi.h"

int cnuas_query_device_ex(struct ibv_context *ibctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int ret;

	ret = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (ret)
		return ret;
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

int cnuas_query_port(struct ibv_context *ibctx, uint8_t port,
		     struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ibctx, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *cnuas_alloc_pd(struct ibv_context *ibctx)
{
	struct ibv_alloc_pd cmd;
	struct ib_uverbs_alloc_pd_resp resp;
	struct cnuas_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ret = ibv_cmd_alloc_pd(ibctx, &pd->ibpd, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return &pd->ibpd;
}

/*
 * A parent domain is the PD it contains as far as the kernel is concerned
 * (its handle), so every command given it acts on that PD. The custom
 * allocators are kept but never called: every ring lives in kernel memory
 * mapped in, nothing the provider allocates for the device could go
 * through them (ibv_alloc_parent_domain(3) leaves that to the provider).
 * No thread domains are offered, so none may be given.
 */
struct ibv_pd *
cnuas_alloc_parent_domain(struct ibv_context *ibctx,
			  struct ibv_parent_domain_init_attr *attr)
{
	struct cnuas_pd *pd, *contained;

	if (ibv_check_alloc_parent_domain(attr))
		return NULL;
	contained = to_cpd(attr->pd);
	if (!check_comp_mask(attr->comp_mask,
			     IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) ||
	    attr->td || contained->protection ||
	    attr->pd->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	ibv_initialize_parent_domain(&pd->ibpd, attr->pd);
	pd->protection = contained;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	__atomic_add_fetch(&contained->parents, 1, __ATOMIC_RELAXED);
	return &pd->ibpd;
}

int cnuas_dealloc_pd(struct ibv_pd *ibpd)
{
	struct cnuas_pd *pd = to_cpd(ibpd);
	int ret;

	if (pd->protection) {
		__atomic_sub_fetch(&pd->protection->parents, 1,
				   __ATOMIC_RELAXED);
		free(pd);
		return 0;
	}
	/* As mlx5: a PD goes only after the parent domains made of it. */
	if (__atomic_load_n(&pd->parents, __ATOMIC_RELAXED))
		return EBUSY;
	ret = ibv_cmd_dealloc_pd(ibpd);
	if (!ret)
		free(pd);
	return ret;
}

struct ibv_mr *cnuas_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			    uint64_t hca_va, int access)
{
	struct ibv_reg_mr cmd;
	struct ib_uverbs_reg_mr_resp resp;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * ibv_cmd_reg_dmabuf_mr() gained a trailing driver command buffer in
 * rdma-core 5x (still PABI 34), and the provider built against a newer
 * PABI-34 tree may load into an older libibverbs (Debian 12: 44.0). So it
 * is always called with the driver argument, NULL (no driver data): a
 * library without it ignores the extra argument (the caller pops it in
 * every ABI libibverbs runs on), one with it sees "no driver data".
 */
typedef int (*cnuas_cmd_reg_dmabuf_mr_fn)(struct ibv_pd *pd, uint64_t offset,
					  size_t length, uint64_t iova, int fd,
					  int access, struct verbs_mr *vmr,
					  void *driver);

struct ibv_mr *cnuas_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
				   size_t length, uint64_t iova, int fd,
				   int access)
{
	cnuas_cmd_reg_dmabuf_mr_fn reg = (cnuas_cmd_reg_dmabuf_mr_fn)
		(void (*)(void))ibv_cmd_reg_dmabuf_mr;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;
	ret = reg(pd, offset, length, iova, fd, access, vmr, NULL);
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * The kernel changes the MR in place and keeps its keys; libibverbs
 * updates the ibv_mr's pd, addr and length once it succeeded.
 */
int cnuas_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		   void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

int cnuas_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(vmr);
	return ret;
}

/* Memory windows: the kernel keeps them (cnuas_ib mw.c). */
struct ibv_mw *cnuas_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

int cnuas_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (!ret)
		free(mw);
	return ret;
}

/*
 * A type 1 bind is a BIND_MW work request on @qp's SQ; the window's rkey
 * changes (its low byte) with every bind, as ibv_bind_mw(3) says.
 */
int cnuas_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
	}, *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = cnuas_post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

struct ibv_ah *cnuas_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct cnuas_cmd_create_ah_resp resp = {};
	struct cnuas_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return NULL;
	ret = ibv_cmd_create_ah(pd, &ah->ibah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_num = resp.drv_payload.ah_num;
	return &ah->ibah;
}

int cnuas_destroy_ah(struct ibv_ah *ibah)
{
	int ret = ibv_cmd_destroy_ah(ibah);

	if (!ret)
		free(to_cah(ibah));
	return ret;
}
