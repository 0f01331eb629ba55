// SPDX-License-Identifier: GPL-2.0
/*
 * RoCEv2 frames as skbs: building them (Ethernet, optional 802.1Q tag,
 * IPv4 or IPv6, UDP to port 4791, then the transport headers and payload
 * the caller writes, pad and ICRC) and validating received ones down to
 * the ICRC. On the InfiniBand link layer each of these steps goes to
 * ib_frame.c (LRH, GRH, native ICRC) instead, one branch per step.
 * Everything read from a frame is hostile: every length is
 * checked against what is really there before it is used.
 */
/* etherdevice.h brings the unaligned accessors (moved header in 6.12). */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/checksum.h>
#include <net/ip6_checksum.h>
#include <net/ipv6.h>
#include <rdma/ib_verbs.h>

#include "cnuas_ib.h"
#include "cnuas_roce_frame.h"
#include "cnuas_skb.h"
#include "wire.h"

#define CNUAS_TTL_DEFAULT	64

static bool zero_copy = true;
module_param(zero_copy, bool, 0644);
MODULE_PARM_DESC(zero_copy,
		 "Send payloads from user MRs' pages without copying them, when the device computes the ICRC");

void cnuas_ib_stat_inc(struct cnuas_ib_dev *cdev, enum cnuas_ib_stat s)
{
	atomic64_inc(&cdev->tdev.stats[s]);
}

static bool cnuas_av_tagged(const struct cnuas_ib_av *av)
{
	return av->vlan_id < VLAN_VID_MASK;
}

/* A frame this small may reuse one of its QP's (cnuas_pkt_get()). */
#define CNUAS_IB_SMALL_FRAME	256
/* Below this, copying the payload costs less than mapping MR pages. */
#define CNUAS_IB_ZC_MIN		256

/*
 * An skb for a frame of @head linear bytes. Small frames of a QP (@pool:
 * one of its skb_pools) reuse skbs: a fresh one per frame,
 * allocated and zeroed, was a tenth of the guest kernel's instructions in
 * a ping-pong and a quarter of an atomic responder's. The pool keeps a
 * reference; once the device and everyone else let go (users back to 1),
 * the skb is rewound and sent again, as pktgen resends one. The slots go
 * round, so the one tried is the oldest out: if it is still out, so are
 * the others, and a fresh skb it is. An empty slot is filled only when
 * the last one used is still out, so a ping-pong keeps one. Frames to
 * ourselves (whose receiver may change them) get a fresh skb too.
 */
static struct sk_buff *cnuas_pkt_get(struct cnuas_ib_dev *cdev,
				     struct cnuas_skb_pool *pool,
				     const struct cnuas_ib_av *av, u32 head)
{
	const struct net_device *nd = cdev->adev->netdev;
	struct sk_buff *skb, *last;
	unsigned int i;

	if (!pool || head > CNUAS_IB_SMALL_FRAME || !nd ||
	    ether_addr_equal(av->dmac, nd->dev_addr))
		return alloc_skb(head, GFP_ATOMIC);
	i = pool->next;
	skb = pool->skb[i];
	if (skb) {
		if (!cnuas_skb_rewind(skb, 0))
			return alloc_skb(head, GFP_ATOMIC);
	} else {
		last = pool->skb[(i + CNUAS_SKB_POOL - 1) % CNUAS_SKB_POOL];
		if (last && cnuas_skb_rewind(last, 0))
			return skb_get(last);
		skb = alloc_skb(CNUAS_IB_SMALL_FRAME, GFP_ATOMIC);
		if (!skb)
			return NULL;
		pool->skb[i] = skb;
	}
	pool->next = (i + 1) % CNUAS_SKB_POOL;
	return skb_get(skb);
}

/* The QP is gone: its reusable frames go when their last user lets go. */
void cnuas_ib_pkt_pools_free(struct cnuas_skb_pool *pools, int n)
{
	struct cnuas_skb_pool *pool;
	int i;

	for (pool = pools; pool < pools + n; pool++) {
		for (i = 0; i < CNUAS_SKB_POOL; i++) {
			kfree_skb(pool->skb[i]);
			pool->skb[i] = NULL;
		}
		pool->next = 0;
	}
}

/*
 * A frame with every header up to the transport's; @linear: the payload,
 * pad and ICRC are in the head too, else they come as fragments.
 */
static struct sk_buff *cnuas_pkt_new(struct cnuas_ib_dev *cdev,
				     struct cnuas_skb_pool *pool,
				     const struct cnuas_ib_av *av,
				     u32 hdr_len, u32 paylen, bool linear,
				     void **bth)
{
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

	/* InfiniBand: LRH (and GRH) instead. */
	if (!cnuas_ib_is_eth(cdev))
		return cnuas_ib_frame_new(cdev, av, hdr_len, paylen, linear,
					  bth);
	skb = cnuas_pkt_get(cdev, linear ? pool : NULL, av, head);
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

struct sk_buff *cnuas_ib_pkt_alloc(struct cnuas_ib_dev *cdev,
				   struct cnuas_skb_pool *pool,
				   const struct cnuas_ib_av *av,
				   u32 hdr_len, u32 paylen, void **bth,
				   void **payload)
{
	struct sk_buff *skb = cnuas_pkt_new(cdev, pool, av, hdr_len, paylen,
					    true, bth);

	if (!skb)
		return NULL;
	*payload = (u8 *)*bth + hdr_len;
	memset((u8 *)*payload + paylen, 0, cnuas_ib_pad(paylen));
	return skb;
}

/* Pad and ICRC after the payload fragments: zeros from a page of ours. */
static int cnuas_pkt_add_trailer(struct cnuas_ib_dev *cdev,
				 struct sk_buff *skb, u32 paylen)
{
	u32 len = cnuas_ib_pad(paylen) + CNUAS_ICRC_LEN;
	int i = skb_shinfo(skb)->nr_frags;

	if (i >= MAX_SKB_FRAGS)
		return -EOPNOTSUPP;
	get_page(cdev->tdev.zero_page);
	skb_fill_page_desc(skb, i, cdev->tdev.zero_page, 0, len);
	skb->len += len;
	skb->data_len += len;
	skb->truesize += len;
	return 0;
}

/*
 * Zero copy needs the device's ICRC: with the payload left in the MR's
 * pages, nothing in the guest reads it (and a frame to ourselves never
 * meets the device). A short payload is copied: mapping its pages and a
 * trailer as more descriptors costs more than the copy.
 */
static struct sk_buff *cnuas_pkt_new_zc(struct cnuas_ib_dev *cdev,
					const struct cnuas_ib_av *av,
					u32 hdr_len, u32 paylen, void **bth)
{
	struct sk_buff *skb;

	if (!(cdev->adev->offloads & CNUAS_NET_AUX_OFF_ICRC) ||
	    !cdev->tdev.zero_page || !zero_copy || paylen < CNUAS_IB_ZC_MIN)
		return NULL;
	skb = cnuas_pkt_new(cdev, NULL, av, hdr_len, paylen, false, bth);
	if (skb && cnuas_ib_loop_is_local(cdev, skb)) {
		kfree_skb(skb);
		skb = NULL;
	}
	return skb;
}

struct sk_buff *cnuas_ib_pkt_from_mr(struct cnuas_ib_dev *cdev,
				     struct cnuas_skb_pool *pool,
				     const struct cnuas_ib_av *av, u32 hdr_len,
				     void **bth, struct cnuas_ib_pd *pd,
				     const struct cnuas_sge *sge, u32 num_sge,
				     u32 offset, u32 paylen, int access)
{
	struct sk_buff *skb;
	void *payload;
	int err;

	skb = cnuas_pkt_new_zc(cdev, av, hdr_len, paylen, bth);
	if (skb) {
		err = cnuas_ib_sge_frags(pd, sge, num_sge, offset, skb, paylen,
					 access);
		if (!err)
			err = cnuas_pkt_add_trailer(cdev, skb, paylen);
		if (!err) {
			cnuas_ib_stat_inc(cdev, CNUAS_STAT_TX_ZERO_COPY);
			return skb;
		}
		kfree_skb(skb);
		if (err != -EOPNOTSUPP)
			return ERR_PTR(err);
	}
	skb = cnuas_ib_pkt_alloc(cdev, pool, av, hdr_len, paylen, bth,
				 &payload);
	if (!skb)
		return ERR_PTR(-ENOMEM);
	err = cnuas_ib_sge_copy(pd, sge, num_sge, offset, payload, paylen,
				CNUAS_IB_FROM_MR, access);
	if (err) {
		kfree_skb(skb);
		return ERR_PTR(err);
	}
	return skb;
}

static void cnuas_pkt_seal_sw(struct sk_buff *skb);

/* Called once BTH, extension headers and payload are in place. */
void cnuas_ib_pkt_seal(struct cnuas_ib_dev *cdev, struct sk_buff *skb)
{
	if (!cnuas_ib_is_eth(cdev)) {
		cnuas_ib_frame_seal(cdev, skb);
		return;
	}
	if (!cnuas_ib_pkt_seal_hw(cdev, skb))
		cnuas_pkt_seal_sw(skb);
}

/*
 * Where the device seals what it sends, it gets the frame with the ICRC
 * (and an IPv6 UDP checksum) zero and fills them in (cnuas_vnic_hw.h); a
 * zero-copy frame's trailer is zero already. false: seal it here (no
 * offload, or a frame to ourselves, which never meets the device).
 */
bool cnuas_ib_pkt_seal_hw(struct cnuas_ib_dev *cdev, struct sk_buff *skb)
{
	if (!(cdev->adev->offloads & CNUAS_NET_AUX_OFF_ICRC) ||
	    cnuas_ib_loop_is_local(cdev, skb))
		return false;
	if (!skb_is_nonlinear(skb))
		put_unaligned_le32(0, skb_tail_pointer(skb) - CNUAS_ICRC_LEN);
	cnuas_ib_skb_cb(skb)->hw_icrc = true;
	return true;
}

/* ICRC and, for IPv6, the UDP checksum, computed here. */
static void cnuas_pkt_seal_sw(struct sk_buff *skb)
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

/*
 * A multicast frame also goes to this device's own QPs in its group, as
 * an HCA loops it back (the switch never returns a frame to its ingress
 * port). The copy is linear and sealed here: it never meets the device.
 * Like the wire, multicast may lose it when the loop is full.
 */
static void cnuas_mcast_loop(struct cnuas_ib_dev *cdev, struct sk_buff *skb)
{
	bool eth = cnuas_ib_is_eth(cdev);
	struct sk_buff *copy;

	if (!(eth ? is_multicast_ether_addr(skb_mac_header(skb)) :
		    cnuas_ib_frame_is_mcast(skb)) ||
	    !cnuas_ib_mcast_local(cdev, skb))
		return;
	copy = skb_copy(skb, GFP_ATOMIC);
	if (!copy)
		return;
	if (eth)
		cnuas_pkt_seal_sw(copy);
	else
		cnuas_ib_frame_seal_sw(copy);
	if (cnuas_ib_loop_xmit(cdev, copy))
		kfree_skb(copy);
}

int cnuas_ib_xmit(struct cnuas_ib_dev *cdev, struct sk_buff *skb, bool more)
{
	u32 flags = more ? CNUAS_NET_AUX_TX_MORE : 0;
	bool local = cnuas_ib_loop_is_local(cdev, skb);
	u32 len = skb->len;
	int err;

	if (!cnuas_ib_is_eth(cdev) && !cnuas_ib_frame_can_send(cdev, skb)) {
		cnuas_stat_dbg_dev(cdev, CNUAS_STAT_SEND_ERR,
				   "frame of %u bytes on VL%u lost: the port is not Active\n",
				   len, cnuas_lrh_vl(skb->data));
		kfree_skb(skb);
		return -ENETDOWN;
	}

	if (cnuas_ib_skb_cb(skb)->hw_icrc)
		flags |= CNUAS_NET_AUX_TX_ICRC;
	if (!local)
		cnuas_mcast_loop(cdev, skb);
	if (local && skb_shared(skb)) {
		/* A QP's reused frame (our MAC changed since): loop a copy. */
		struct sk_buff *copy = skb_copy(skb, GFP_ATOMIC);

		err = copy ? cnuas_ib_loop_xmit(cdev, copy) : -ENOMEM;
		if (err)
			kfree_skb(copy);
		else
			consume_skb(skb);
	} else {
		err = local ? cnuas_ib_loop_xmit(cdev, skb) :
			      cnuas_net_aux_xmit(cdev->adev, skb, flags);
	}

	if (!err) {
		cnuas_ib_stat_inc(cdev, CNUAS_STAT_SENT_PKTS);
		cnuas_ib_port_count_tx(&cdev->port, len);
		if (flags & CNUAS_NET_AUX_TX_ICRC)
			cnuas_ib_stat_inc(cdev, CNUAS_STAT_TX_ICRC_OFFLOAD);
		return 0;
	}
	if (err == -EBUSY) {
		cnuas_ib_stat_inc(cdev, CNUAS_STAT_TX_BUSY);
		return err;
	}
	/* Down or refused: lost like on a wire; RC retransmits. */
	cnuas_stat_dbg_dev(cdev, CNUAS_STAT_SEND_ERR,
			   "frame of %u bytes lost: %s refused it (%d)\n",
			   skb->len, local ? "loopback" : "cnuas_net", err);
	kfree_skb(skb);
	return err;
}

static const char *cnuas_frame_why(enum cnuas_roce_verdict v)
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

int cnuas_ib_parse(struct cnuas_ib_dev *cdev, struct sk_buff *skb, u32 flags,
		   struct cnuas_ib_rxp *p)
{
	enum cnuas_roce_verdict v;
	struct cnuas_roce_frame f;
	struct cnuas_bth *bth;
	u32 icrc = 0, len, blen;
	u8 *d;
	int why;

	if (skb_linearize(skb))
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "no memory to linearize %u bytes\n",
				     skb->len);
	if (!cnuas_ib_is_eth(cdev))
		return cnuas_ib_frame_parse(cdev, skb, flags, p);
	d = skb->data;
	len = skb->len;
	/* The envelope; lengths that leave room for a BTH and the ICRC. */
	v = cnuas_roce_frame_walk(d, len, &f);
	if (v == CNUAS_ROCE_FRAME_OK)
		v = cnuas_roce_frame_lengths(&f, len);
	if (v != CNUAS_ROCE_FRAME_OK)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "%s (frame of %u bytes)\n",
				     cnuas_frame_why(v), len);
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

int cnuas_ib_parse_bth(struct cnuas_ib_dev *cdev, struct cnuas_ib_rxp *p,
		       void *bth, u32 blen)
{
	const struct cnuas_opcode *op;
	int plen;

	if (cnuas_bth_tver(bth))
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "BTH transport version %u\n",
				     cnuas_bth_tver(bth));
	op = cnuas_opcode_get(cnuas_bth_opcode(bth));
	if (!op)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_OPCODE,
				     "opcode 0x%02x unknown or not supported\n",
				     cnuas_bth_opcode(bth));
	plen = cnuas_payload_len(op, bth, blen);
	if (plen < 0)
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "opcode 0x%02x: headers, pad and ICRC overrun the %u bytes from the BTH on\n",
				     cnuas_bth_opcode(bth), blen);
	/* Pad only rounds a payload up to 4 bytes. */
	if ((!(op->flags & CNUAS_OPF_PAYLOAD) && (plen || cnuas_bth_pad(bth))) ||
	    ((plen + cnuas_bth_pad(bth)) & 3))
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "opcode 0x%02x: payload of %d bytes with pad %u\n",
				     cnuas_bth_opcode(bth), plen,
				     cnuas_bth_pad(bth));
	p->op = op;
	p->bth = bth;
	p->opcode = cnuas_bth_opcode(bth);
	p->psn = cnuas_bth_psn(bth);
	p->qpn = cnuas_bth_qpn(bth);
	p->payload = (u8 *)bth + op->hdr_len;
	p->paylen = plen;
	return 0;
}
