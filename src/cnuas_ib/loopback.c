// SPDX-License-Identifier: GPL-2.0
/*
 * Loopback: frames addressed to this port (our own MAC, or on the
 * InfiniBand link layer one of the port's LIDs: the link layer's
 * ->is_local and ->route say so) from a QP to a QP of this device, e.g.
 * perftest or ping-pong on one node, never reach the wire,
 * since the switch does not send a frame back out of its ingress port,
 * and the device has no internal loop. They are queued here and handed to
 * the receive path from the transport's workqueue, in the same context
 * cnuas_net gives ->rx (BH off, RCU read side), never recursively from
 * the sender's locks.
 */
#include <linux/netdevice.h>
#include <linux/skbuff.h>

#include "cnuas_ib.h"

/* Frames waiting in the loop before senders see a full "ring". */
#define CNUAS_LOOP_MAX	1024

/* Like cnuas_net_aux_xmit(): 0 (the skb is ours) or -EBUSY (the caller's). */
int cnuas_ib_loop_xmit(struct cnuas_ib_dev *cdev, struct sk_buff *skb)
{
	struct cnuas_ib_tdev *td = &cdev->tdev;

	if (skb_queue_len(&td->loop_q) >= CNUAS_LOOP_MAX) {
		set_bit(0, &td->loop_full);
		return -EBUSY;
	}
	skb_queue_tail(&td->loop_q, skb);
	queue_work(td->wq, &td->loop_work);
	return 0;
}

static void cnuas_ib_loop_work(struct work_struct *work)
{
	struct cnuas_ib_tdev *td = container_of(work, struct cnuas_ib_tdev,
						loop_work);
	struct cnuas_ib_dev *cdev = container_of(td, struct cnuas_ib_dev,
						 tdev);
	struct sk_buff_head batch;
	struct sk_buff *skb;

	__skb_queue_head_init(&batch);
	skb_queue_splice_init(&td->loop_q, &batch);
	while ((skb = __skb_dequeue(&batch))) {
		skb->dev = cdev->adev->netdev;
		skb_reset_mac_header(skb);
		local_bh_disable();
		rcu_read_lock();
		cnuas_ib_rx(cdev, skb, 0);
		rcu_read_unlock();
		local_bh_enable();
	}
	/*
	 * ACKs the receive path queued with more=true. As after a NAPI
	 * batch, with bottom halves off: the rx_run lock is also taken by
	 * cnuas_ib_rx_defer() in NAPI, which would spin on this CPU forever
	 * if it interrupted us holding it (soft lockup seen in VM test 76
	 * over IB, pml ucx).
	 */
	local_bh_disable();
	cnuas_ib_rx_batch_end(cdev);
	local_bh_enable();
	if (test_and_clear_bit(0, &td->loop_full))
		cnuas_ib_tx_wake(cdev);
}

void cnuas_ib_loop_init(struct cnuas_ib_dev *cdev)
{
	skb_queue_head_init(&cdev->tdev.loop_q);
	INIT_WORK(&cdev->tdev.loop_work, cnuas_ib_loop_work);
	cdev->tdev.loop_full = 0;
}

/* After the workqueue is flushed: nothing runs the loop any more. */
void cnuas_ib_loop_cleanup(struct cnuas_ib_dev *cdev)
{
	skb_queue_purge(&cdev->tdev.loop_q);
}
