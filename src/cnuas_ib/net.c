// SPDX-License-Identifier: GPL-2.0
/*
 * Frames between the transport and cnuas_net, whatever the link layer:
 * the transport asks for a frame (its headers up to the BTH are the link
 * layer's, cdev->link, link_ops.h), copies or attaches the payload, has
 * it sealed and sends it, to the device or the loop; a received frame is
 * linearized and handed to the link layer's parse.
 */
#include <linux/skbuff.h>

#include "cnuas_ib.h"
#include "link_ops.h"

static bool zero_copy = true;
module_param(zero_copy, bool, 0644);
MODULE_PARM_DESC(zero_copy,
		 "Send payloads from user MRs' pages without copying them, when the device computes the ICRC");

/* Below this, copying the payload costs less than mapping MR pages. */
#define CNUAS_IB_ZC_MIN		256

struct sk_buff *cnuas_ib_pkt_alloc(struct cnuas_ib_dev *cdev,
				   struct cnuas_skb_pool *pool,
				   const struct cnuas_ib_av *av,
				   u32 hdr_len, u32 paylen, void **bth,
				   void **payload)
{
	struct sk_buff *skb = cdev->link->frame_new(cdev, pool, av, hdr_len,
						    paylen, true, bth);

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
	skb = cdev->link->frame_new(cdev, NULL, av, hdr_len, paylen, false,
				    bth);
	if (skb && cdev->link->is_local(cdev, skb)) {
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

/* Called once BTH, extension headers and payload are in place. */
void cnuas_ib_pkt_seal(struct cnuas_ib_dev *cdev, struct sk_buff *skb)
{
	cdev->link->seal(cdev, skb);
}

/*
 * A multicast frame also goes to this device's own QPs in its group
 * (CNUAS_IB_ROUTE_MCAST), as an HCA loops it back (the switch never
 * returns a frame to its ingress port). The copy is linear and sealed
 * here: it never meets the device. Like the wire, multicast may lose it
 * when the loop is full.
 */
static void cnuas_mcast_loop(struct cnuas_ib_dev *cdev, struct sk_buff *skb)
{
	struct sk_buff *copy = skb_copy(skb, GFP_ATOMIC);

	if (!copy)
		return;
	cdev->link->seal_sw(copy);
	if (cnuas_ib_loop_xmit(cdev, copy))
		kfree_skb(copy);
}

int cnuas_ib_xmit(struct cnuas_ib_dev *cdev, struct sk_buff *skb, bool more)
{
	u32 flags = more ? CNUAS_NET_AUX_TX_MORE : 0;
	enum cnuas_ib_route route = cdev->link->route(cdev, skb);
	bool local = route == CNUAS_IB_ROUTE_LOCAL;
	u32 len = skb->len;
	int err;

	if (route == CNUAS_IB_ROUTE_DOWN) {
		cnuas_stat_dbg_dev(cdev, CNUAS_STAT_SEND_ERR,
				   "frame of %u bytes lost: the port may not send it (not Active)\n",
				   len);
		kfree_skb(skb);
		return -ENETDOWN;
	}

	if (cnuas_ib_skb_cb(skb)->hw_icrc)
		flags |= CNUAS_NET_AUX_TX_ICRC;
	if (route == CNUAS_IB_ROUTE_MCAST)
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

int cnuas_ib_parse(struct cnuas_ib_dev *cdev, struct sk_buff *skb, u32 flags,
		   struct cnuas_ib_rxp *p)
{
	if (skb_linearize(skb))
		return cnuas_rx_drop(cdev, CNUAS_STAT_DROP_HDR,
				     "no memory to linearize %u bytes\n",
				     skb->len);
	return cdev->link->parse(cdev, skb, flags, p);
}
