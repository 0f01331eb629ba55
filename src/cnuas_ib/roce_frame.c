// SPDX-License-Identifier: GPL-2.0
/*
 * The RoCEv2 link layer (cnuas-vnic with link_layer=eth): the
 * transport's packets behind Ethernet, an optional 802.1Q tag, IPv4 or
 * IPv6 and UDP to port 4791, with the RoCEv2 ICRC (and an IPv6 UDP
 * checksum) after the pad. Address vectors are resolved once from the
 * GID's attributes (MACs, VLAN, IP addresses, a UDP source port); frames
 * to our own MAC go to the loop. Its table is cnuas_ib_roce_link
 * (link_ops.h). Everything read from a received frame is hostile: every
 * length is checked against what is really there before it is used.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ip6_checksum.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "cnuas_ib.h"
#include "cnuas_roce_frame.h"
#include "link_ops.h"
#include "wire.h"

#define CNUAS_TTL_DEFAULT	64

static int cnuas_roce_av_from_attr(struct cnuas_ib_dev *cdev,
				   struct cnuas_ib_av *av,
				   const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	enum rdma_network_type ntype;
	u16 vlan_id = 0xffff;
	int err;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr)
		return -EINVAL;
	ntype = rdma_gid_attr_network_type(sgid_attr);
	if (ntype != RDMA_NETWORK_IPV4 && ntype != RDMA_NETWORK_IPV6)
		return -EINVAL;	/* RoCE v1 GIDs: not on this wire */

	memset(av, 0, sizeof(*av));
	err = rdma_read_gid_l2_fields(sgid_attr, &vlan_id, av->smac);
	if (err)
		return err;
	av->valid = true;
	av->network_type = ntype;
	av->vlan_id = vlan_id < VLAN_N_VID ? vlan_id : 0xffff;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->flow_label = grh->flow_label & 0xfffff;
	av->sl = rdma_ah_get_sl(attr);
	av->sgid_index = grh->sgid_index;
	av->sgid = sgid_attr->gid;
	av->dgid = grh->dgid;
	ether_addr_copy(av->dmac, attr->roce.dmac);
	rdma_gid2ip((struct sockaddr *)&av->saddr, &av->sgid);
	rdma_gid2ip((struct sockaddr *)&av->daddr, &av->dgid);
	if (av->flow_label)
		av->udp_sport = rdma_flow_label_to_udp_sport(av->flow_label);
	else	/* an AH has no QPNs: spread by the address pair */
		av->udp_sport = IB_ROCE_UDP_ENCAP_VALID_PORT_MIN |
			(jhash(&av->dgid, sizeof(av->dgid),
			       jhash(&av->sgid, sizeof(av->sgid), 0)) &
			 (IB_ROCE_UDP_ENCAP_VALID_PORT_MAX -
			  IB_ROCE_UDP_ENCAP_VALID_PORT_MIN));
	return 0;
}

static void cnuas_roce_av_to_attr(const struct cnuas_ib_av *av,
				  struct rdma_ah_attr *attr)
{
	union ib_gid dgid = av->dgid;

	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_grh(attr, &dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	ether_addr_copy(attr->roce.dmac, av->dmac);
}

static bool cnuas_av_tagged(const struct cnuas_ib_av *av)
{
	return av->vlan_id < VLAN_VID_MASK;
}

/*
 * Ethernet (and the tag), IP and UDP; a QP's small linear frames reuse
 * its skbs, but not frames to ourselves, whose receiver may change them.
 */
static struct sk_buff *cnuas_roce_frame_new(struct cnuas_ib_dev *cdev,
					    struct cnuas_skb_pool *pool,
					    const struct cnuas_ib_av *av,
					    u32 hdr_len, u32 paylen,
					    bool linear, void **bth)
{
	const struct net_device *nd = cdev->adev->netdev;
	bool v6 = av->network_type == RDMA_NETWORK_IPV6;
	u32 l2 = ETH_HLEN + (cnuas_av_tagged(av) ? VLAN_HLEN : 0);
	u32 l3 = v6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	u32 pad = cnuas_ib_pad(paylen);
	u32 ulen = sizeof(struct udphdr) + hdr_len + paylen + pad +
		   CNUAS_ICRC_LEN;
	u32 head = l2 + l3 + (linear ? ulen : sizeof(struct udphdr) + hdr_len);
	__be16 proto = htons(v6 ? ETH_P_IPV6 : ETH_P_IP);
	struct sk_buff *skb;
	struct udphdr *udp;
	struct ethhdr *eth;
	u8 *p;

	if (!linear || !nd || ether_addr_equal(av->dmac, nd->dev_addr))
		pool = NULL;
	skb = cnuas_ib_pool_get(pool, head);
	if (!skb)
		return NULL;
	p = skb_put(skb, head);
	skb_reset_mac_header(skb);
	skb_set_network_header(skb, l2);
	skb_set_transport_header(skb, l2 + l3);
	skb->protocol = proto;

	eth = (struct ethhdr *)p;
	ether_addr_copy(eth->h_dest, av->dmac);
	ether_addr_copy(eth->h_source, av->smac);
	if (cnuas_av_tagged(av)) {
		struct vlan_ethhdr *veth = (struct vlan_ethhdr *)p;

		veth->h_vlan_proto = htons(ETH_P_8021Q);
		veth->h_vlan_TCI = htons(av->vlan_id |
					 (av->sl & 7) << VLAN_PRIO_SHIFT);
		veth->h_vlan_encapsulated_proto = proto;
	} else {
		eth->h_proto = proto;
	}

	if (v6) {
		struct ipv6hdr *ip6 = ipv6_hdr(skb);

		ip6_flow_hdr(ip6, av->traffic_class,
			     cpu_to_be32(av->flow_label) & IPV6_FLOWLABEL_MASK);
		ip6->payload_len = htons(ulen);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = av->hop_limit ?: CNUAS_TTL_DEFAULT;
		ip6->saddr = av->saddr.v6.sin6_addr;
		ip6->daddr = av->daddr.v6.sin6_addr;
	} else {
		struct iphdr *ip4 = ip_hdr(skb);

		ip4->version = 4;
		ip4->ihl = sizeof(*ip4) / 4;
		ip4->tos = av->traffic_class;
		ip4->tot_len = htons(l3 + ulen);
		ip4->id = 0;
		ip4->frag_off = htons(IP_DF);
		ip4->ttl = av->hop_limit ?: CNUAS_TTL_DEFAULT;
		ip4->protocol = IPPROTO_UDP;
		ip4->saddr = av->saddr.v4.sin_addr.s_addr;
		ip4->daddr = av->daddr.v4.sin_addr.s_addr;
		ip4->check = 0;
		ip4->check = ip_fast_csum(ip4, ip4->ihl);
	}

	udp = udp_hdr(skb);
	udp->source = htons(av->udp_sport ?: 0xc000);
	udp->dest = htons(ROCE_V2_UDP_DPORT);
	udp->len = htons(ulen);
	udp->check = 0;

	*bth = udp + 1;
	return skb;
}

/* A frame to our own MAC: the loop delivers it, not the wire. */
static bool cnuas_roce_is_local(struct cnuas_ib_dev *cdev,
				const struct sk_buff *skb)
{
	const struct net_device *nd = cdev->adev->netdev;

	return nd && ether_addr_equal(skb_mac_header(skb), nd->dev_addr);
}

/* ICRC and, for IPv6, the UDP checksum, computed here. */
static void cnuas_roce_seal_sw(struct sk_buff *skb)
{
	u8 *ip = skb_network_header(skb);
	u8 *icrcp = skb_tail_pointer(skb) - CNUAS_ICRC_LEN;
	struct udphdr *udp = udp_hdr(skb);
	u32 icrc = 0;

	/* Only the device can seal a frame whose payload is not linear. */
	if (WARN_ON_ONCE(skb_is_nonlinear(skb)))
		return;
	cnuas_ib_skb_cb(skb)->hw_icrc = false;
	/* Covers the UDP header with its checksum masked: do it first. */
	cnuas_icrc_linear(ip, icrcp - ip, &icrc);
	put_unaligned_le32(icrc, icrcp);

	if (skb->protocol == htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = ipv6_hdr(skb);
		u32 ulen = ntohs(udp->len);

		/* IPv6 forbids a zero UDP checksum (RFC 8200 8.1). */
		udp->check = csum_ipv6_magic(&ip6->saddr, &ip6->daddr, ulen,
					     IPPROTO_UDP,
					     csum_partial(udp, ulen, 0));
		if (!udp->check)
			udp->check = CSUM_MANGLED_0;
	}
}

static void cnuas_roce_seal(struct cnuas_ib_dev *cdev, struct sk_buff *skb)
{
	if (!cnuas_ib_seal_hw(cdev, skb, cnuas_roce_is_local(cdev, skb)))
		cnuas_roce_seal_sw(skb);
}

/* The GID of an IP header's destination (IPv4: v4-mapped). */
static void cnuas_roce_daddr(bool v4, const void *iph, union ib_gid *mgid)
{
	if (v4) {
		const struct iphdr *ip4 = iph;

		ipv6_addr_set_v4mapped(ip4->daddr, (struct in6_addr *)mgid->raw);
	} else {
		const struct ipv6hdr *ip6 = iph;

		memcpy(mgid->raw, &ip6->daddr, sizeof(mgid->raw));
	}
}

static enum cnuas_ib_route cnuas_roce_route(struct cnuas_ib_dev *cdev,
					    const struct sk_buff *skb)
{
	union ib_gid mgid;

	if (cnuas_roce_is_local(cdev, skb))
		return CNUAS_IB_ROUTE_LOCAL;
	if (!is_multicast_ether_addr(skb_mac_header(skb)))
		return CNUAS_IB_ROUTE_WIRE;
	cnuas_roce_daddr(skb->protocol == htons(ETH_P_IP),
			 skb_network_header(skb), &mgid);
	return cnuas_ib_mcg_qpns(cdev, &mgid, NULL) ? CNUAS_IB_ROUTE_MCAST :
						      CNUAS_IB_ROUTE_WIRE;
}

static const char *cnuas_roce_why(enum cnuas_roce_verdict v)
{
	switch (v) {
	case CNUAS_ROCE_FRAME_SHORT:
		return "headers cut short";
	case CNUAS_ROCE_FRAME_NOT_IP:
		return "EtherType is not IP";
	case CNUAS_ROCE_FRAME_BAD_IP:
		return "bad IP header";
	case CNUAS_ROCE_FRAME_NOT_UDP:
		return "IP protocol is not UDP";
	case CNUAS_ROCE_FRAME_FRAGMENT:
		return "IP fragment";
	case CNUAS_ROCE_FRAME_NOT_ROCE:
		return "UDP port is not RoCEv2's";
	case CNUAS_ROCE_FRAME_BAD_LEN:
		return "IP or UDP length does not fit the frame, a BTH and the ICRC";
	default:
		return "frame";
	}
}

static int cnuas_roce_parse(struct cnuas_ib_dev *cdev, struct sk_buff *skb,
			    u32 flags, struct cnuas_ib_rxp *p)
{
	enum cnuas_roce_verdict v;
	struct cnuas_roce_frame f;
	struct cnuas_bth *bth;
	u32 icrc = 0, len, blen;
	u8 *d;
	int why;

	d = skb->data;
	len = skb->len;
	/* The envelope; lengths that leave room for a BTH and the ICRC. */
	v = cnuas_roce_frame_walk(d, len, &f);
	if (v == CNUAS_ROCE_FRAME_OK)
		v = cnuas_roce_frame_lengths(&f, len);
	if (v != CNUAS_ROCE_FRAME_OK)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "%s (frame of %u bytes)\n",
				     cnuas_roce_why(v), len);
	if (f.v6) {
		const struct ipv6hdr *ip6 = (const void *)(d + f.ip);

		p->saddr = ip6->saddr;
		p->net_type = RDMA_NETWORK_IPV6;
	} else {
		const struct iphdr *ip4 = (const void *)(d + f.ip);

		if (ip_fast_csum(ip4, ip4->ihl))
			return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
					     "IPv4 header checksum from %pI4\n",
					     &ip4->saddr);
		ipv6_addr_set_v4mapped(ip4->saddr, &p->saddr);
		p->net_type = RDMA_NETWORK_IPV4;
	}
	p->skb = skb;
	p->smac = d + ETH_ALEN;
	p->vlan_id = f.tagged ? f.vlan_tci & VLAN_VID_MASK : 0xffff;
	p->iph = d + f.ip;

	bth = (void *)(d + f.udp + sizeof(struct udphdr));
	blen = f.udp_len - sizeof(struct udphdr);
	why = cnuas_ib_parse_bth(cdev, p, bth, blen);
	if (why)
		return why;

	if (flags & (CNUAS_NET_AUX_RX_ICRC_OK | CNUAS_NET_AUX_RX_ICRC_BAD))
		cnuas_ib_stat_inc(cdev, CNUAS_STAT_RX_ICRC_OFFLOAD);
	if (flags & CNUAS_NET_AUX_RX_ICRC_BAD)
		return cnuas_rx_drop(cdev, CNUAS_STAT_ICRC_ERR,
				     "QP%u PSN %u: the device found a bad ICRC\n",
				     cnuas_bth_qpn(bth), cnuas_bth_psn(bth));
	/* The device checked the same bytes we would: trust it. */
	if (!(flags & CNUAS_NET_AUX_RX_ICRC_OK)) {
		u32 want = get_unaligned_le32(d + f.udp + f.udp_len -
					      CNUAS_ICRC_LEN);

		if (cnuas_icrc_linear(d + f.ip, f.udp + f.udp_len - f.ip -
				      CNUAS_ICRC_LEN, &icrc))
			return cnuas_rx_drop(cdev, CNUAS_STAT_ICRC_ERR,
					     "QP%u PSN %u: no ICRC over this IP header\n",
					     cnuas_bth_qpn(bth),
					     cnuas_bth_psn(bth));
		if (icrc != want)
			return cnuas_rx_drop(cdev, CNUAS_STAT_ICRC_ERR,
					     "QP%u PSN %u: ICRC 0x%08x, computed 0x%08x\n",
					     cnuas_bth_qpn(bth),
					     cnuas_bth_psn(bth), want, icrc);
	}
	return 0;
}

/* The group of the packet's destination IP address. */
static u32 cnuas_roce_mcast_qpns(struct cnuas_ib_dev *cdev,
				 const struct cnuas_ib_rxp *p, u32 *qpn)
{
	union ib_gid mgid;

	cnuas_roce_daddr(p->net_type == RDMA_NETWORK_IPV4, p->iph, &mgid);
	return cnuas_ib_mcg_qpns(cdev, &mgid, qpn);
}

const struct cnuas_ib_link_ops cnuas_ib_roce_link = {
	.name = "Ethernet",
	.av_from_attr = cnuas_roce_av_from_attr,
	.av_to_attr = cnuas_roce_av_to_attr,
	.frame_new = cnuas_roce_frame_new,
	.seal = cnuas_roce_seal,
	.seal_sw = cnuas_roce_seal_sw,
	.is_local = cnuas_roce_is_local,
	.route = cnuas_roce_route,
	.parse = cnuas_roce_parse,
	.mcast_qpns = cnuas_roce_mcast_qpns,
};
