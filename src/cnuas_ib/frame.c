// SPDX-License-Identifier: GPL-2.0
/*
 * What the link layers' frame building shares (link_ops.h): the skbs and
 * the hand-off of the ICRC to the device.
 *
 * A QP's reusable small frames (transport.h, struct cnuas_skb_pool): a
 * fresh skb per frame, allocated and zeroed, was a tenth of the guest
 * kernel's instructions in a ping-pong and a quarter of an atomic
 * responder's. The pool keeps a reference; once the device and everyone
 * else let go (users back to 1), the skb is rewound and sent again, as
 * pktgen resends one.
 */
/* etherdevice.h brings the unaligned accessors (moved header in 6.12). */
#include <linux/etherdevice.h>
#include <linux/skbuff.h>

#include "cnuas_ib.h"
#include "cnuas_skb.h"
#include "link_ops.h"

/* A frame this small may reuse one of its QP's. */
#define CNUAS_IB_SMALL_FRAME	256

/*
 * The slots go round, so the one tried is the oldest out: if it is
 * still out, so are the others, and a fresh skb it is. An empty slot is
 * filled only when the last one used is still out, so a ping-pong keeps
 * one. No @pool (frames to ourselves, whose receiver may change them) or
 * a bigger frame: a fresh skb.
 */
struct sk_buff *cnuas_ib_pool_get(struct cnuas_skb_pool *pool, u32 head)
{
	struct sk_buff *skb, *last;
	unsigned int i;

	if (!pool || head > CNUAS_IB_SMALL_FRAME)
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
 * Where the device seals what it sends, it gets the frame with the ICRC
 * (and an IPv6 UDP checksum) zero and fills them in (cnuas_vnic_hw.h); a
 * zero-copy frame's trailer is zero already. A frame to ourselves
 * (@local) never meets the device.
 */
bool cnuas_ib_seal_hw(struct cnuas_ib_dev *cdev, struct sk_buff *skb,
		      bool local)
{
	if (!(cdev->adev->offloads & CNUAS_NET_AUX_OFF_ICRC) || local)
		return false;
	if (!skb_is_nonlinear(skb))
		put_unaligned_le32(0, skb_tail_pointer(skb) - CNUAS_ICRC_LEN);
	cnuas_ib_skb_cb(skb)->hw_icrc = true;
	return true;
}
