// SPDX-License-Identifier: GPL-2.0
/*
 * The InfiniBand link layer's frames (cnuas-vnic with link_layer=ib):
 * the transport's packets behind an LRH and an optional GRH instead of
 * Ethernet, IP and UDP, with the native ICRC (ib_wire.h). Its table is
 * cnuas_ib_ib_link (link_ops.h), beside RoCEv2's (roce_frame.c); the
 * transport above is the same.
 *
 * A cnuas-vnic with F_IB_CRC seals and checks ICRCs (and the VCRC) as it
 * does RoCEv2's, so frames may carry their payload as fragments of the
 * MR's pages; without it every ICRC is computed here, and cnuas_net adds
 * and strips the VCRC. Addressing is by LID: an address vector holds the DLID, SL,
 * source path bits and, with IB_AH_GRH, the GRH's fields; nothing is
 * resolved through neighbours or MACs.
 */
/* etherdevice.h brings the unaligned accessors (moved header in 6.12). */
#include <linux/etherdevice.h>
#include <linux/skbuff.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "cnuas_ib.h"
#include "ib_wire.h"
#include "link_ops.h"

static int cnuas_ib_frame_av_from_attr(struct cnuas_ib_dev *cdev,
				       struct cnuas_ib_av *av,
				       const struct rdma_ah_attr *attr)
{
	u32 dlid;

	if (attr->type != RDMA_AH_ATTR_TYPE_IB)
		return -EINVAL;
	dlid = rdma_ah_get_dlid(attr);
	if (dlid == CNUAS_LID_RESERVED || dlid > CNUAS_LID_PERMISSIVE)
		return -EINVAL;
	memset(av, 0, sizeof(*av));
	av->valid = true;
	av->network_type = RDMA_NETWORK_IB;
	av->vlan_id = 0xffff;
	av->dlid = dlid;
	av->sl = rdma_ah_get_sl(attr) & 0xf;
	av->src_path_bits = rdma_ah_get_path_bits(attr) & 0x7f;
	av->static_rate = rdma_ah_get_static_rate(attr);
	if (rdma_ah_get_ah_flags(attr) & IB_AH_GRH) {
		const struct ib_global_route *grh = rdma_ah_read_grh(attr);
		int err;

		av->grh = true;
		av->hop_limit = grh->hop_limit;
		av->traffic_class = grh->traffic_class;
		av->flow_label = grh->flow_label & 0xfffff;
		av->sgid_index = grh->sgid_index;
		av->dgid = grh->dgid;
		if (grh->sgid_attr) {
			av->sgid = grh->sgid_attr->gid;
		} else {
			err = rdma_query_gid(&cdev->ibdev, 1, grh->sgid_index,
					     &av->sgid);
			if (err)
				return err;
		}
	}
	return 0;
}

static void cnuas_ib_frame_av_to_attr(const struct cnuas_ib_av *av,
				      struct rdma_ah_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_dlid(attr, av->dlid);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_path_bits(attr, av->src_path_bits);
	rdma_ah_set_static_rate(attr, av->static_rate);
	if (av->grh) {
		union ib_gid dgid = av->dgid;

		rdma_ah_set_grh(attr, &dgid, av->flow_label, av->sgid_index,
				av->hop_limit, av->traffic_class);
	}
}

/*
 * A frame: LRH (and GRH), then @hdr_len bytes of BTH and extension
 * headers, @paylen of payload, pad and ICRC; with @linear all of it in the
 * head, else the head ends at the extension headers and the rest comes as
 * fragments. The VL of the SL (SLtoVL: VL 0, the one data VL) and the SLID
 * of the port's LID and the path bits: cnuas_ib_frame_seal() moves QP0's
 * to VL15. A linear frame keeps room for the VCRC at its tail, where
 * cnuas_net may write it; it takes no skb of @pool.
 */
static struct sk_buff *cnuas_ib_frame_new(struct cnuas_ib_dev *cdev,
					  struct cnuas_skb_pool *pool,
					  const struct cnuas_ib_av *av,
					  u32 hdr_len, u32 paylen, bool linear,
					  void **bth)
{
	u32 hlen = cnuas_ib_hdrs_len(av->grh);
	u32 tlen = hdr_len + paylen + cnuas_ib_pad(paylen);
	u32 head = hlen + (linear ? tlen + CNUAS_ICRC_LEN : hdr_len);
	struct cnuas_ib_hdrs h = {
		.vl = cnuas_ib_port_vl(&cdev->port, IB_QPT_UD, av->sl),
		.sl = av->sl,
		.dlid = av->dlid,
		.slid = cnuas_ib_port_slid(&cdev->port, IB_QPT_UD, av->dlid,
					   av->src_path_bits),
		.grh = av->grh,
		.tclass = av->traffic_class,
		.hop_limit = av->hop_limit,
		.flow_label = av->flow_label,
	};
	struct sk_buff *skb;
	u8 *p;

	skb = alloc_skb(head + (linear ? CNUAS_VCRC_LEN : 0), GFP_ATOMIC);
	if (!skb)
		return NULL;
	p = skb_put(skb, head);
	skb_reset_mac_header(skb);
	skb_set_network_header(skb, CNUAS_LRH_LEN);
	skb_set_transport_header(skb, hlen);
	if (av->grh) {
		memcpy(h.sgid, av->sgid.raw, sizeof(h.sgid));
		memcpy(h.dgid, av->dgid.raw, sizeof(h.dgid));
	}
	cnuas_ib_hdrs_build(p, &h, tlen);
	*bth = p + hlen;
	return skb;
}

/* The source QPN of a UD packet (DETH), or -1 for other transports. */
static int cnuas_ib_frame_sqpn(const u8 *bth)
{
	const struct cnuas_opcode *op = cnuas_opcode_get(bth[0]);
	const struct cnuas_deth *deth;

	if (!op)
		return -1;
	deth = cnuas_eh_ptr(op, (void *)bth, CNUAS_EH_DETH);
	return deth ? (int)cnuas_deth_sqpn(deth) : -1;
}

/* The ICRC of a linear frame, computed here. */
static void cnuas_ib_frame_seal_sw(struct sk_buff *skb)
{
	u8 *icrcp = skb_tail_pointer(skb) - CNUAS_ICRC_LEN;
	u32 icrc = 0;

	/* Only the device can seal a frame whose payload is not linear. */
	if (WARN_ON_ONCE(skb_is_nonlinear(skb)))
		return;
	cnuas_ib_skb_cb(skb)->hw_icrc = false;
	cnuas_ib_icrc(skb->data, icrcp - skb->data, &icrc);
	put_unaligned_le32(icrc, icrcp);
}

/* A frame to one of our own LIDs: the loop delivers it, not the wire. */
static bool cnuas_ib_frame_is_local(struct cnuas_ib_dev *cdev,
				    const struct sk_buff *skb)
{
	return cnuas_ib_lid_ours(cnuas_lrh_dlid(skb_mac_header(skb)),
				 cnuas_ib_port_lid(&cdev->port),
				 cnuas_ib_port_lmc(&cdev->port));
}

/*
 * Once BTH, extension headers and payload are in place: QP0's packets
 * go on VL15, with the permissive SLID while the port has no LID or
 * when they go to the permissive DLID (a directed route SMP); then the
 * ICRC, which covers the SLID: the device's where it seals them and the
 * frame goes to it, else ours.
 */
static void cnuas_ib_frame_seal(struct cnuas_ib_dev *cdev,
				struct sk_buff *skb)
{
	u8 *lrh = skb->data;

	if (!cnuas_ib_frame_sqpn(skb_transport_header(skb))) {
		u16 slid = cnuas_ib_port_slid(&cdev->port, IB_QPT_SMI,
					      cnuas_lrh_dlid(lrh),
					      cnuas_lrh_slid(lrh));

		cnuas_lrh_set_vl(lrh, CNUAS_VL15);
		lrh[6] = slid >> 8;
		lrh[7] = slid & 0xff;
	}
	if (!cnuas_ib_seal_hw(cdev, skb, cnuas_ib_frame_is_local(cdev, skb)))
		cnuas_ib_frame_seal_sw(skb);
}

/* The GRH of a frame (LRH at @lrh), or NULL. */
static const u8 *cnuas_ib_frame_grh(const u8 *lrh)
{
	return cnuas_lrh_lnh(lrh) == CNUAS_LNH_IBA_GLOBAL ?
	       lrh + CNUAS_LRH_LEN : NULL;
}

/*
 * The port sends VL15 while its link is up, data VLs only when Active
 * (IBA 7.2): anything else is lost as on a link that is not up.
 */
static enum cnuas_ib_route cnuas_ib_frame_route(struct cnuas_ib_dev *cdev,
						const struct sk_buff *skb)
{
	const u8 *lrh = skb_mac_header(skb);

	if (!cnuas_ib_port_can_send(&cdev->port, cnuas_lrh_vl(lrh)))
		return CNUAS_IB_ROUTE_DOWN;
	if (cnuas_ib_frame_is_local(cdev, skb))
		return CNUAS_IB_ROUTE_LOCAL;
	if (!cnuas_lid_is_mcast(cnuas_lrh_dlid(lrh)))
		return CNUAS_IB_ROUTE_WIRE;
	return cnuas_ib_mcg_qpns_lid(cdev, cnuas_lrh_dlid(lrh),
				     cnuas_ib_frame_grh(lrh), NULL) ?
	       CNUAS_IB_ROUTE_MCAST : CNUAS_IB_ROUTE_WIRE;
}

static const char *cnuas_ib_frame_why(enum cnuas_ib_verdict v)
{
	switch (v) {
	case CNUAS_IB_FRAME_SHORT:
		return "shorter than its headers and ICRC";
	case CNUAS_IB_FRAME_LVER:
		return "LRH.LVer is not 0";
	case CNUAS_IB_FRAME_LNH:
		return "LRH.LNH is not an IBA transport packet";
	case CNUAS_IB_FRAME_PKTLEN:
		return "LRH.PktLen is not the frame's length";
	case CNUAS_IB_FRAME_GRH:
		return "GRH IPVer, NxtHdr or PayLen";
	default:
		return "frame";
	}
}

/*
 * A received IB-mode frame (linear, LRH through ICRC): LRH, GRH, the
 * ICRC, the transport headers (cnuas_ib_parse_bth()), then what depends
 * on the destination QP: the VL, and a DLID that is ours (one of the
 * port's 2^LMC LIDs), the permissive LID for QP0, or a multicast LID
 * (the group lookup then finds the QPs attached to it).
 */
static int cnuas_ib_frame_parse(struct cnuas_ib_dev *cdev,
				struct sk_buff *skb, u32 flags,
				struct cnuas_ib_rxp *p)
{
	u8 *d = skb->data;
	u32 len = skb->len, hlen, want, icrc = 0;
	struct cnuas_ib_hdrs h;
	enum cnuas_ib_verdict v;
	u16 lid;
	u8 lmc;
	int why;

	v = cnuas_ib_hdrs_parse(d, len, &h, &hlen);
	if (v != CNUAS_IB_FRAME_OK)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "%s (frame of %u bytes, PktLen %u words)\n",
				     cnuas_ib_frame_why(v), len,
				     len >= CNUAS_LRH_LEN ?
				     cnuas_lrh_pktlen(d) : 0);
	if (flags & (CNUAS_NET_AUX_RX_ICRC_OK | CNUAS_NET_AUX_RX_ICRC_BAD))
		cnuas_ib_stat_inc(cdev, CNUAS_STAT_RX_ICRC_OFFLOAD);
	if (flags & CNUAS_NET_AUX_RX_ICRC_BAD)
		return cnuas_rx_drop(cdev, CNUAS_STAT_ICRC_ERR,
				     "from LID 0x%x: the device found a bad ICRC\n",
				     h.slid);
	/* The device checked the same bytes we would: trust it. */
	if (!(flags & CNUAS_NET_AUX_RX_ICRC_OK)) {
		want = get_unaligned_le32(d + len - CNUAS_ICRC_LEN);
		cnuas_ib_icrc(d, len - CNUAS_ICRC_LEN, &icrc);
		if (icrc != want)
			return cnuas_rx_drop(cdev, CNUAS_STAT_ICRC_ERR,
					     "from LID 0x%x: ICRC 0x%08x, computed 0x%08x\n",
					     h.slid, want, icrc);
	}

	p->skb = skb;
	p->net_type = RDMA_NETWORK_IB;
	p->vlan_id = 0xffff;
	p->smac = NULL;
	p->iph = h.grh ? d + CNUAS_LRH_LEN : NULL;
	memset(&p->saddr, 0, sizeof(p->saddr));
	if (h.grh)
		memcpy(&p->saddr, h.sgid, sizeof(p->saddr));
	p->slid = h.slid;
	p->dlid = h.dlid;
	p->sl = h.sl;
	p->path_bits = 0;
	why = cnuas_ib_parse_bth(cdev, p, d + hlen, len - hlen);
	if (why)
		return why;

	if (!cnuas_ib_vl_ok(h.vl, p->qpn))
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "VL%u for QP%u: VL15 is QP0's only\n",
				     h.vl, p->qpn);
	lid = cnuas_ib_port_lid(&cdev->port);
	lmc = cnuas_ib_port_lmc(&cdev->port);
	if (cnuas_lid_is_mcast(h.dlid)) {
		if (p->qpn != CNUAS_IB_MCAST_QPN)
			return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_QPN,
					     "multicast LID 0x%x to QP%u\n",
					     h.dlid, p->qpn);
	} else if (h.dlid == CNUAS_LID_PERMISSIVE) {
		if (p->qpn)
			return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_QPN,
					     "permissive DLID to QP%u, only QP0 takes it\n",
					     p->qpn);
	} else if (cnuas_ib_lid_ours(h.dlid, lid, lmc)) {
		p->path_bits = h.dlid & ((1u << lmc) - 1);
		if (p->qpn == CNUAS_IB_MCAST_QPN)
			return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_QPN,
					     "multicast QPN to unicast LID 0x%x\n",
					     h.dlid);
	} else {
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "DLID 0x%x is not ours (LID 0x%x, LMC %u)\n",
				     h.dlid, lid, lmc);
	}
	return 0;
}

/* The group of the packet's DLID and, with a GRH, DGID. */
static u32 cnuas_ib_frame_mcast_qpns(struct cnuas_ib_dev *cdev,
				     const struct cnuas_ib_rxp *p, u32 *qpn)
{
	return cnuas_ib_mcg_qpns_lid(cdev, p->dlid, p->iph, qpn);
}

const struct cnuas_ib_link_ops cnuas_ib_ib_link = {
	.name = "InfiniBand",
	.av_from_attr = cnuas_ib_frame_av_from_attr,
	.av_to_attr = cnuas_ib_frame_av_to_attr,
	.frame_new = cnuas_ib_frame_new,
	.seal = cnuas_ib_frame_seal,
	.seal_sw = cnuas_ib_frame_seal_sw,
	.is_local = cnuas_ib_frame_is_local,
	.route = cnuas_ib_frame_route,
	.parse = cnuas_ib_frame_parse,
	.mcast_qpns = cnuas_ib_frame_mcast_qpns,
};
