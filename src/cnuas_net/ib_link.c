// SPDX-License-Identifier: GPL-2.0
/*
 * The InfiniBand link layer's per-hop check, the VCRC (IBA 7.8.2), which
 * an HCA's link layer adds and strips. A cnuas-vnic with F_IB_CRC does it
 * itself; an older one carries frames as they are, so cnuas_net does it
 * for the RDMA client (cnuas_ib_link_sw()). On
 * transmit it appends the VCRC after the ICRC; on receive it checks it and
 * strips it, so the client sees LRH through ICRC (and LRH.PktLen agrees
 * with the length it gets). Loopback frames of the client never come
 * here and carry none.
 *
 * The VCRC is a CRC-16 with polynomial 0x100B; the kernel's crc16
 * (0x8005) and crc-itu-t (0x1021) are other polynomials, so the module
 * keeps tables of its own, filled at load (cnuas_ib_link.h).
 */
#include <linux/skbuff.h>

#include "cnuas_net.h"
#include "cnuas_ib_link.h"

static struct cnuas_vcrc_table cnuas_vcrc_tab;

void cnuas_ib_link_init(void)
{
	cnuas_vcrc_table_init(&cnuas_vcrc_tab);
}

/*
 * The frame to post for @skb, with its VCRC appended: @skb itself when it
 * is linear with tailroom for it (its own skb, written only here), else a
 * linear copy, or NULL without memory. cnuas_ib_link_tx_undo() puts
 * things back when the post fails.
 */
struct sk_buff *cnuas_ib_link_tx(struct sk_buff *skb)
{
	struct sk_buff *out = skb;

	if (skb_is_nonlinear(skb) || skb_cloned(skb) ||
	    skb_tailroom(skb) < CNUAS_VCRC_LEN) {
		out = skb_copy_expand(skb, 0, CNUAS_VCRC_LEN, GFP_ATOMIC);
		if (!out)
			return NULL;
	}
	cnuas_vcrc_put(&cnuas_vcrc_tab, out->data, out->len);
	skb_put(out, CNUAS_VCRC_LEN);
	return out;
}

/* The post of @out (from @skb) failed: @skb is the caller's again, as it was. */
void cnuas_ib_link_tx_undo(struct sk_buff *skb, struct sk_buff *out)
{
	if (out != skb)
		kfree_skb(out);
	else
		__skb_trim(skb, skb->len - CNUAS_VCRC_LEN);
}

/* A received frame: check and strip its VCRC. false: drop it. */
bool cnuas_ib_link_rx(struct sk_buff *skb)
{
	if (skb_is_nonlinear(skb) ||
	    !cnuas_vcrc_ok(&cnuas_vcrc_tab, skb->data, skb->len))
		return false;
	__skb_trim(skb, skb->len - CNUAS_VCRC_LEN);
	return true;
}
