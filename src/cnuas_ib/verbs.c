// SPDX-License-Identifier: GPL-2.0
/*
 * Device, port and protection-domain verbs. Everything the device reports
 * comes from the limits in cnuas_ib.h and from cnuas_net's live state
 * (link up/down, speed, netdev MTU).
 */
#include <linux/kernel.h>
#include <linux/netdevice.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>

#include "cnuas_ib.h"

int cnuas_ib_query_device(struct ib_device *ibdev,
			  struct ib_device_attr *attr, struct ib_udata *udata)
{
	/* No driver-specific query_device data is defined (yet). */
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;

	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = CNUAS_IB_HW_VER;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = CNUAS_IB_MAX_MR_SIZE;
	attr->page_size_cap = CNUAS_IB_PAGE_SIZE_CAP;
	attr->vendor_id = CNUAS_IB_VENDOR_ID;
	attr->vendor_part_id = CNUAS_IB_VENDOR_PART_ID;
	attr->hw_ver = CNUAS_IB_HW_VER;
	attr->max_qp = CNUAS_IB_MAX_QP;
	attr->max_qp_wr = CNUAS_IB_MAX_QP_WR;
	attr->device_cap_flags = CNUAS_IB_DEVICE_CAP_FLAGS;
	attr->max_send_sge = CNUAS_IB_MAX_SGE;
	attr->max_recv_sge = CNUAS_IB_MAX_SGE;
	attr->max_sge_rd = CNUAS_IB_MAX_SGE_RD;
	attr->max_cq = CNUAS_IB_MAX_CQ;
	attr->max_cqe = CNUAS_IB_MAX_CQE;
	attr->max_mr = CNUAS_IB_MAX_MR;
	attr->max_pd = CNUAS_IB_MAX_PD;
	attr->max_qp_rd_atom = CNUAS_IB_MAX_QP_RD_ATOM;
	attr->max_qp_init_rd_atom = CNUAS_IB_MAX_QP_RD_ATOM;
	attr->max_res_rd_atom = CNUAS_IB_MAX_RES_RD_ATOM;
	/* Atomics are serialized by the device, not against the CPU. */
	attr->atomic_cap = IB_ATOMIC_HCA;
	attr->masked_atomic_cap = IB_ATOMIC_NONE;
	attr->max_fast_reg_page_list_len = CNUAS_IB_MAX_FRMR_PAGES;
	/* Windows share the MR table and its keys (mw.c); no XRC. */
	attr->max_mw = CNUAS_IB_MAX_MR;
	attr->max_ah = CNUAS_IB_MAX_AH;
	attr->max_mcast_grp = CNUAS_IB_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = CNUAS_IB_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = CNUAS_IB_MAX_MCAST_GRP *
					  CNUAS_IB_MAX_MCAST_QP_ATTACH;
	attr->max_srq = CNUAS_IB_MAX_SRQ;
	attr->max_srq_wr = CNUAS_IB_MAX_SRQ_WR;
	attr->max_srq_sge = CNUAS_IB_MAX_SRQ_SGE;
	attr->max_pkeys = cnuas_ib_pkey_tbl_len(to_cdev(ibdev));
	attr->local_ca_ack_delay = CNUAS_IB_LOCAL_CA_ACK_DELAY;
	return 0;
}

/* Per-lane data rates, fastest first (Mb/s). */
static const struct {
	u32 mbps;
	u16 speed;
} cnuas_ib_lane_rates[] = {
	{ 100000, IB_SPEED_NDR },
	{ 50000, IB_SPEED_HDR },
	{ 25000, IB_SPEED_EDR },
	{ 14000, IB_SPEED_FDR },
	{ 10000, IB_SPEED_QDR },
	{ 5000, IB_SPEED_DDR },
	{ 2500, IB_SPEED_SDR },
};

static const struct {
	u32 lanes;
	u8 width;
} cnuas_ib_widths[] = {
	{ 12, IB_WIDTH_12X },
	{ 8, IB_WIDTH_8X },
	{ 4, IB_WIDTH_4X },
	{ 2, IB_WIDTH_2X },
	{ 1, IB_WIDTH_1X },
};

/*
 * The IB speed x width pair with the highest rate not above the link
 * speed (SDR 1X when the link is slower or unknown); among equal rates
 * the faster lanes win.
 */
static void cnuas_ib_speed_width(u32 link_mbps, u16 *speed, u8 *width)
{
	u64 best = 0, rate;
	unsigned int s, w;

	*speed = IB_SPEED_SDR;
	*width = IB_WIDTH_1X;
	for (s = 0; s < ARRAY_SIZE(cnuas_ib_lane_rates); s++) {
		for (w = 0; w < ARRAY_SIZE(cnuas_ib_widths); w++) {
			rate = (u64)cnuas_ib_lane_rates[s].mbps *
			       cnuas_ib_widths[w].lanes;
			if (rate > link_mbps || rate <= best)
				continue;
			best = rate;
			*speed = cnuas_ib_lane_rates[s].speed;
			*width = cnuas_ib_widths[w].width;
		}
	}
}

/* Largest IB MTU that fits the current frames. */
enum ib_mtu cnuas_ib_active_mtu(struct cnuas_ib_dev *cdev)
{
	struct cnuas_net_aux_dev *adev = cdev->adev;
	u32 frame = cnuas_net_aux_max_frame(adev);
	enum ib_mtu mtu;
	int l3;

	if (cnuas_ib_is_eth(cdev)) {
		/* The netdev MTU counts from the IP header on. */
		l3 = min_t(int, READ_ONCE(adev->netdev->mtu),
			   (int)frame - ETH_HLEN);
		mtu = iboe_get_mtu(l3);
		return mtu ? mtu : IB_MTU_256;	/* 0: below 256 */
	}
	/* IB: LRH + GRH + BTH + largest extension header + ICRC + VCRC. */
	return ib_mtu_int_to_enum((int)frame - 8 - 40 - 12 - 28 - 4 - 2);
}

int cnuas_ib_query_port(struct ib_device *ibdev, u32 port,
			struct ib_port_attr *attr)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibdev);
	bool up = cnuas_net_aux_link_up(cdev->adev);

	/* ib_core has zeroed *attr. */
	if (!cnuas_ib_is_eth(cdev)) {
		/* IB: the state the link and the subnet manager gave it. */
		cnuas_ib_port_query(cdev, attr);
		return 0;
	}
	if (up) {
		attr->state = IB_PORT_ACTIVE;
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else {
		attr->state = IB_PORT_DOWN;
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;
	}
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = cnuas_ib_active_mtu(cdev);
	cnuas_ib_speed_width(up ? cnuas_net_aux_link_speed(cdev->adev) : 0,
			     &attr->active_speed, &attr->active_width);
	attr->gid_tbl_len = CNUAS_IB_GID_TBL_LEN;
	attr->pkey_tbl_len = CNUAS_IB_PKEY_TBL_LEN;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = CNUAS_IB_MAX_MSG_SZ;
	attr->max_vl_num = 1;
	attr->ip_gids = true;
	return 0;
}

int cnuas_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				struct ib_port_immutable *imm)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibdev);

	imm->pkey_tbl_len = cnuas_ib_pkey_tbl_len(cdev);
	imm->max_mad_size = IB_MGMT_MAD_SIZE;
	if (cnuas_ib_is_eth(cdev)) {
		/*
		 * RoCE v2 only: cnuas_net hands us UDP/4791 frames, never
		 * RoCE v1's EtherType 0x8915, so v1 GIDs would not work.
		 */
		imm->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
		imm->gid_tbl_len = CNUAS_IB_GID_TBL_LEN;
	} else {
		imm->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
		imm->gid_tbl_len = CNUAS_IB_GID_TBL_LEN_IB;
	}
	return 0;
}

enum rdma_link_layer cnuas_ib_get_link_layer(struct ib_device *ibdev,
					     u32 port)
{
	return cnuas_ib_is_eth(to_cdev(ibdev)) ? IB_LINK_LAYER_ETHERNET :
						 IB_LINK_LAYER_INFINIBAND;
}

int cnuas_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			u16 *pkey)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibdev);

	if (index >= cnuas_ib_pkey_tbl_len(cdev))
		return -EINVAL;
	/* IB: the table the subnet manager wrote (P_KeyTable). */
	*pkey = cnuas_ib_is_eth(cdev) ? CNUAS_IB_DEFAULT_PKEY :
					cnuas_ib_port_pkey(&cdev->port, index);
	return 0;
}

/*
 * Only for the IB link layer (ib_core keeps RoCE GIDs itself): the
 * subnet prefix the subnet manager set (PortInfo.GIDPrefix, fe80::/64
 * until then) and the port GUID.
 */
int cnuas_ib_query_gid(struct ib_device *ibdev, u32 port, int index,
		       union ib_gid *gid)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibdev);

	if (index < 0 || index >= CNUAS_IB_GID_TBL_LEN_IB)
		return -EINVAL;
	gid->global.subnet_prefix = READ_ONCE(cdev->port.gid_prefix);
	gid->global.interface_id = cnuas_ib_port_guid(cdev);
	return 0;
}

int cnuas_ib_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct cnuas_ib_ucontext *uctx =
		container_of(ibuc, struct cnuas_ib_ucontext, ibuc);
	struct cnuas_alloc_ucontext_resp resp = {
		.abi_version = CNUAS_UVERBS_ABI_VERSION,
		.max_inline_data = CNUAS_IB_MAX_INLINE_DATA,
	};
	struct cnuas_alloc_ucontext_req req = {};
	int err;

	/* A provider that sends no request predates the versioned ABI. */
	if (udata->inlen >= sizeof(req)) {
		err = ib_copy_from_udata(&req, udata, sizeof(req));
		if (err)
			return err;
	}
	if (req.abi_version != CNUAS_UVERBS_ABI_VERSION) {
		ibdev_warn_ratelimited(ibuc->device,
				       "provider ABI version %u, kernel ABI version %u: install the matching libcnuas\n",
				       req.abi_version,
				       CNUAS_UVERBS_ABI_VERSION);
		return -EPROTO;
	}
	if (cnuas_ib_rx_poll_entry(to_cdev(ibuc->device), uctx,
				   &resp.rx_poll_mmap_offset))
		resp.flags |= CNUAS_UCTX_RX_POLL;
	err = ib_copy_to_udata(udata, &resp,
			       min_t(size_t, sizeof(resp), udata->outlen));
	if (err && uctx->rx_poll) {
		rdma_user_mmap_entry_remove(uctx->rx_poll);
		uctx->rx_poll = NULL;
	}
	return err;
}

void cnuas_ib_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct cnuas_ib_ucontext *uctx =
		container_of(ibuc, struct cnuas_ib_ucontext, ibuc);

	if (uctx->rx_poll)
		rdma_user_mmap_entry_remove(uctx->rx_poll);
}

/*
 * Device removal with processes still holding contexts: ib_core destroys
 * their objects and then calls this. The rings' pages stay valid in the
 * processes' mappings (remap_vmalloc_range() took a reference on each,
 * no vm_ops point into this module), and ib_core itself zaps the RX poll
 * page it mapped with rdma_user_mmap_io(), so nothing is left to zap.
 */
void cnuas_ib_disassociate_ucontext(struct ib_ucontext *ibuc)
{
}

int cnuas_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibpd->device);

	if (atomic_inc_return(&cdev->num_pd) > CNUAS_IB_MAX_PD) {
		atomic_dec(&cdev->num_pd);
		return -ENOMEM;
	}
	return 0;
}

int cnuas_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_cdev(ibpd->device)->num_pd);
	return 0;
}
