// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Provider registration, device match and the user context: the ABI
 * handshake with cnuas_ib.ko (uapi/cnuas-abi.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cnuas.h"
#include "cnuas-abi.h"

static void cnuas_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops cnuas_ctx_ops = {
	.alloc_mw = cnuas_alloc_mw,
	.alloc_parent_domain = cnuas_alloc_parent_domain,
	.alloc_pd = cnuas_alloc_pd,
	.bind_mw = cnuas_bind_mw,
	/* The kernel keeps the groups: nothing of ours to add. */
	.attach_mcast = ibv_cmd_attach_mcast,
	.create_ah = cnuas_create_ah,
	.create_cq = cnuas_create_cq,
	.create_cq_ex = cnuas_create_cq_ex,
	.create_qp = cnuas_create_qp,
	.create_qp_ex = cnuas_create_qp_ex,
	.create_srq = cnuas_create_srq,
	.dealloc_mw = cnuas_dealloc_mw,
	.dealloc_pd = cnuas_dealloc_pd,
	.dereg_mr = cnuas_dereg_mr,
	.free_context = cnuas_free_context,
	.destroy_ah = cnuas_destroy_ah,
	.destroy_cq = cnuas_destroy_cq,
	.destroy_qp = cnuas_destroy_qp,
	.destroy_srq = cnuas_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.modify_qp = cnuas_modify_qp,
	.modify_srq = cnuas_modify_srq,
	.poll_cq = cnuas_poll_cq,
	.post_recv = cnuas_post_recv,
	.post_send = cnuas_post_send,
	.post_srq_recv = cnuas_post_srq_recv,
	.query_device_ex = cnuas_query_device_ex,
	.query_port = cnuas_query_port,
	.query_qp = cnuas_query_qp,
	.query_srq = cnuas_query_srq,
	.reg_dmabuf_mr = cnuas_reg_dmabuf_mr,
	.reg_mr = cnuas_reg_mr,
	.rereg_mr = cnuas_rereg_mr,
	.req_notify_cq = cnuas_req_notify_cq,
	.resize_cq = cnuas_resize_cq,
};

static void cnuas_free_context(struct ibv_context *ibctx)
{
	struct cnuas_context *ctx = to_cctx(ibctx);

	if (ctx->rx_poll)
		munmap((void *)ctx->rx_poll, CNUAS_RX_POLL_PAGE);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

/*
 * Map the RX poll page the kernel offers, unless CNUAS_RX_POLL=0. Without
 * it everything works the same, only frames wait for the host to
 * schedule the device.
 */
static void map_rx_poll(struct cnuas_context *ctx,
			const struct cnuas_alloc_ucontext_resp *drv)
{
	const char *env = getenv("CNUAS_RX_POLL");
	void *p;

	if (!(drv->flags & CNUAS_UCTX_RX_POLL) || (env && !strcmp(env, "0")) ||
	    sysconf(_SC_PAGESIZE) != CNUAS_RX_POLL_PAGE)
		return;
	p = mmap(NULL, CNUAS_RX_POLL_PAGE, PROT_READ, MAP_SHARED,
		 ctx->vctx.context.cmd_fd, drv->rx_poll_mmap_offset);
	if (p != MAP_FAILED)
		ctx->rx_poll = p;
}

static struct verbs_context *cnuas_alloc_context(struct ibv_device *ibdev,
						 int cmd_fd,
						 void *private_data)
{
	struct cnuas_cmd_alloc_ucontext cmd = {};
	struct cnuas_cmd_alloc_ucontext_resp resp = {};
	struct cnuas_context *ctx;
	int ret;

	(void)private_data;
	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	cmd.drv_payload.abi_version = CNUAS_UVERBS_ABI_VERSION;
	ret = ibv_cmd_get_context(&ctx->vctx, &cmd.ibv_cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret) {
		if (ret == EPROTO)
			fprintf(stderr, CNUAS_PREFIX
				"%s: the kernel's cnuas_ib does not speak provider ABI %u: install matching cnuas_ib.ko and libcnuas\n",
				ibdev->name, CNUAS_UVERBS_ABI_VERSION);
		errno = ret;
		goto err;
	}
	if (resp.drv_payload.abi_version != CNUAS_UVERBS_ABI_VERSION) {
		fprintf(stderr, CNUAS_PREFIX
			"%s: kernel answered provider ABI %u, libcnuas speaks %u: install matching cnuas_ib.ko and libcnuas\n",
			ibdev->name, resp.drv_payload.abi_version,
			CNUAS_UVERBS_ABI_VERSION);
		errno = EPROTO;
		goto err;
	}
	ctx->max_inline = resp.drv_payload.max_inline_data;
	map_rx_poll(ctx, &resp.drv_payload);
	verbs_set_ops(&ctx->vctx, &cnuas_ctx_ops);
	ctx->wr_ops_mpe = cnuas_wr_ops_mpe(&ctx->vctx.context);
	return &ctx->vctx;

err:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	return NULL;
}

static struct verbs_device *cnuas_alloc_device(struct verbs_sysfs_dev *sysfs)
{
	struct cnuas_device *dev;

	(void)sysfs;
	dev = calloc(1, sizeof(*dev));
	return dev ? &dev->vdev : NULL;
}

static void cnuas_uninit_device(struct verbs_device *vdev)
{
	free(cnuas_container_of(vdev, struct cnuas_device, vdev));
}

/* The cnuas-vnic PCI function (src/include/cnuas_vnic_hw.h). */
#define CNUAS_VNIC_PCI_VENDOR 0x1af4
#define CNUAS_VNIC_PCI_DEVICE 0x10f0

/*
 * The RDMA device's parent is the cnuas-vnic PCI function: its PCI ID is
 * the match. Older cnuas_ib parented it to cnuas_net's auxiliary device
 * "cnuas_net.rdma.N", whose modalias matches. The name is the fallback
 * for sysfs without a modalias.
 */
static const struct verbs_match_ent cnuas_match_table[] = {
	VERBS_PCI_MATCH(CNUAS_VNIC_PCI_VENDOR, CNUAS_VNIC_PCI_DEVICE, NULL),
	VERBS_MODALIAS_MATCH("auxiliary:cnuas_net.rdma", NULL),
	VERBS_NAME_MATCH("cnuas", NULL),
	{},
};

static const struct verbs_device_ops cnuas_dev_ops = {
	.name = "cnuas",
	.match_min_abi_version = CNUAS_UVERBS_ABI_VERSION,
	.match_max_abi_version = CNUAS_UVERBS_ABI_VERSION,
	.match_table = cnuas_match_table,
	.alloc_device = cnuas_alloc_device,
	.uninit_device = cnuas_uninit_device,
	.alloc_context = cnuas_alloc_context,
};

PROVIDER_DRIVER(cnuas, cnuas_dev_ops);
