/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reusing an skb for the next frame, shared by cnuas_net (its RX copybreak
 * pool) and cnuas_ib (its per-QP small TX frames): on Debian's kernels a
 * fresh skb is zeroed on allocation (init_on_alloc), which under TCG cost
 * more than the frame's own processing. The kernel has had no recycling
 * helper since skb_recycle() went in 3.7.
 */
#ifndef CNUAS_SKB_H
#define CNUAS_SKB_H

#include <linux/skbuff.h>

/*
 * Rewind @skb, empty, @headroom bytes into its head, if the one reference
 * left is the caller's and nothing shares its data; false: leave it be.
 */
static inline bool cnuas_skb_rewind(struct sk_buff *skb, unsigned int headroom)
{
	if (refcount_read(&skb->users) != 1 || skb_cloned(skb) ||
	    skb_is_nonlinear(skb))
		return false;
	skb->data = skb->head + headroom;
	skb->len = 0;
	skb_reset_tail_pointer(skb);
	memset(skb->cb, 0, sizeof(skb->cb));
	return true;
}

#endif /* CNUAS_SKB_H */
