// SPDX-License-Identifier: GPL-2.0
/*
 * Placeholder of the RoCEv2 transport (net.c, recv.c, req.c, comp.c,
 * resp.c, counters.c replace it): frames are dropped, QPs never send.
 */
#include <linux/skbuff.h>

#include "cnuas_ib.h"

int cnuas_ib_transport_dev_init(struct cnuas_ib_dev *cdev)
{
	return 0;
}

void cnuas_ib_transport_dev_cleanup(struct cnuas_ib_dev *cdev)
{
}

void cnuas_ib_transport_qp_init(struct cnuas_ib_qp *qp)
{
}

void cnuas_ib_transport_qp_modify(struct cnuas_ib_qp *qp, int mask,
				  enum ib_qp_state old_state)
{
}

void cnuas_ib_transport_qp_destroy(struct cnuas_ib_qp *qp)
{
}

void cnuas_ib_transport_sq_kick(struct cnuas_ib_qp *qp)
{
}

void cnuas_ib_rx(struct cnuas_ib_dev *cdev, struct sk_buff *skb)
{
	kfree_skb(skb);
}

void cnuas_ib_tx_wake(struct cnuas_ib_dev *cdev)
{
}

struct rdma_hw_stats *cnuas_ib_alloc_hw_port_stats(struct ib_device *ibdev,
						   u32 port)
{
	return NULL;
}

int cnuas_ib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			  u32 port, int index)
{
	return 0;
}
