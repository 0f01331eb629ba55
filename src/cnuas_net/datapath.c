// SPDX-License-Identifier: GPL-2.0
/*
 * Data path life cycle (reset, program, enable; stop, reset, drain) and
 * the NAPI poll shared by RX and TX completion. Used by ndo_open/ndo_stop
 * in Ethernet mode and by probe/remove in IB mode.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>

#include "cnuas_net.h"

static void cnuas_wr_q(struct cnuas_net *cn, u32 q, dma_addr_t base, u32 size)
{
	cnuas_wr(cn, q + CNUAS_VNIC_Q_BASE_LO, lower_32_bits(base));
	cnuas_wr(cn, q + CNUAS_VNIC_Q_BASE_HI, upper_32_bits(base));
	cnuas_wr(cn, q + CNUAS_VNIC_Q_SIZE, size);
}

/* Largest frame the RX buffers are sized for (no FCS). */
u32 cnuas_cur_max_frame(struct cnuas_net *cn)
{
	u32 len;

	if (!cn->netdev)
		return cn->max_frame;
	len = READ_ONCE(cn->netdev->mtu) + ETH_HLEN + VLAN_HLEN;
	return min(len, cn->max_frame);
}

/* Reset, program and enable the device. Caller holds dp_lock. */
int cnuas_dp_start(struct cnuas_net *cn)
{
	u32 st;
	int err;

	lockdep_assert_held(&cn->dp_lock);
	if (cn->dp_up)
		return 0;
	err = cnuas_hw_reset(cn);
	if (err)
		return err;

	memset(cn->sb, 0, sizeof(*cn->sb));
	cn->tx.prod = 0;
	cn->tx.cons = 0;
	cn->tx.db_prod = 0;
	cnuas_rx_set_buf_len(cn, cnuas_cur_max_frame(cn));
	err = cnuas_rx_fill(cn);
	if (err)
		return err;

	cnuas_wr(cn, CNUAS_VNIC_REG_DRV_FEATURES, cn->features);
	if (cn->features & CNUAS_VNIC_F_STATUS_BLOCK) {
		cnuas_wr(cn, CNUAS_VNIC_REG_SB_LO, lower_32_bits(cn->sb_dma));
		cnuas_wr(cn, CNUAS_VNIC_REG_SB_HI, upper_32_bits(cn->sb_dma));
	}
	cnuas_wr_q(cn, CNUAS_VNIC_REG_TXQ, cn->tx.desc_dma, cn->tx.size);
	cnuas_wr_q(cn, CNUAS_VNIC_REG_RXQ, cn->rx.desc_dma, cn->rx.size);
	if (cn->features & CNUAS_VNIC_F_INT_DELAY)
		cnuas_wr(cn, CNUAS_VNIC_REG_INT_DELAY, cn->int_delay_us);

	clear_bit(CNUAS_F_DEAD, &cn->flags);
	napi_enable(&cn->napi);
	cnuas_wr(cn, CNUAS_VNIC_REG_INT_MASK_CLR, CNUAS_VNIC_INT_ALL);
	cnuas_wr(cn, CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_ENABLE);

	st = cnuas_rd(cn, CNUAS_VNIC_REG_STATUS);
	if (st == ~0u) {
		set_bit(CNUAS_F_GONE, &cn->flags);
		err = -ENODEV;
		goto err_disable;
	}
	if (!(st & CNUAS_VNIC_STATUS_ENABLED) ||
	    (st & CNUAS_VNIC_STATUS_ERROR)) {
		dev_err(&cn->pdev->dev, "enable failed: status %#x error %u\n",
			st, cnuas_rd(cn, CNUAS_VNIC_REG_ERROR));
		err = -EIO;
		goto err_disable;
	}
	/* Post every RX buffer with one doorbell. */
	cn->rx.db_prod = cn->rx.size;
	cnuas_wr(cn, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_PROD, cn->rx.db_prod);

	spin_lock_bh(&cn->tx_lock);
	set_bit(CNUAS_F_RUNNING, &cn->flags);
	spin_unlock_bh(&cn->tx_lock);
	cn->dp_up = true;

	if (cn->netdev) {
		netdev_reset_queue(cn->netdev);
		if (st & CNUAS_VNIC_STATUS_LINK_UP)
			netif_carrier_on(cn->netdev);
		else
			netif_carrier_off(cn->netdev);
		netif_tx_wake_all_queues(cn->netdev);
	}
	cnuas_misc_kick(cn);	/* report link, wake a blocked aux sender */
	return 0;

err_disable:
	napi_disable(&cn->napi);
	cnuas_hw_reset(cn);
	cnuas_irq_sync(cn);
	cnuas_rx_drain(cn);
	return err;
}

/* Stop the device and free all buffers. Caller holds dp_lock. */
void cnuas_dp_stop(struct cnuas_net *cn)
{
	lockdep_assert_held(&cn->dp_lock);
	if (!cn->dp_up)
		return;
	cn->dp_up = false;

	spin_lock_bh(&cn->tx_lock);
	clear_bit(CNUAS_F_RUNNING, &cn->flags);
	spin_unlock_bh(&cn->tx_lock);
	if (cn->netdev)
		netif_tx_disable(cn->netdev);

	/* No poll after this, so nothing rings a doorbell on a reset queue. */
	napi_disable(&cn->napi);
	if (!test_bit(CNUAS_F_GONE, &cn->flags)) {
		cnuas_wr(cn, CNUAS_VNIC_REG_INT_MASK_SET, CNUAS_VNIC_INT_ALL);
		cnuas_hw_reset(cn);	/* stops all DMA */
	}
	cnuas_irq_sync(cn);
	cnuas_tx_drain(cn);
	cnuas_rx_drain(cn);
	cnuas_misc_kick(cn);
}

/* Reclaim TX descriptors; wake the aux client if it waits for room. */
static void cnuas_napi_tx(struct cnuas_net *cn, int budget)
{
	const struct cnuas_net_aux_ops *ops;

	if (cnuas_tx_reap(cn, budget)) {
		rcu_read_lock();
		ops = rcu_dereference(cn->aux_ops);
		if (ops && ops->tx_wake)
			ops->tx_wake(cn->aux);
		rcu_read_unlock();
	}
}

/*
 * The poll is over: unmask RX and TX. With the device's auto-mask that
 * is one INT_REARM write, which also forgets the TX completion waiting
 * behind the mask when this poll reaped everything already (the ACKs the
 * RDMA client sent from the poll complete at their doorbell): no second
 * interrupt and poll just for them. A completion that slipped in between
 * shows in the status block, and we poll again.
 */
static void cnuas_napi_rearm(struct cnuas_net *cn, int budget)
{
	const u32 causes = CNUAS_VNIC_INT_RX | CNUAS_VNIC_INT_TX;
	u32 drop = 0, hw = 0;

	if (!cn->msix || !(cn->features & CNUAS_VNIC_F_INT_AUTOMASK)) {
		cnuas_wr(cn, CNUAS_VNIC_REG_INT_MASK_CLR, causes);
		return;
	}
	cnuas_napi_tx(cn, budget);
	if (cnuas_tx_all_reaped(cn, &hw))
		drop = CNUAS_VNIC_INT_TX << CNUAS_VNIC_INT_REARM_DROP_SHIFT;
	cnuas_wr(cn, CNUAS_VNIC_REG_INT_REARM, drop | causes);
	if (drop && cnuas_tx_hw_cons(cn) != hw)
		napi_schedule(&cn->napi);
}

int cnuas_napi_poll(struct napi_struct *napi, int budget)
{
	struct cnuas_net *cn = container_of(napi, struct cnuas_net, napi);
	bool handover = budget > 1 && cnuas_napi_handover(cn);
	int done = 0;

	cnuas_napi_tx(cn, budget);
	if (budget)
		done = cnuas_rx_poll(cn, handover ? budget - 1 : budget);
	cnuas_napi_load(cn, done, budget);

	if (handover && napi_complete_done(napi, done)) {
		napi_schedule(napi);	/* now in the thread, still masked */
		return done;
	}
	if (done < budget && napi_complete_done(napi, done))
		cnuas_napi_rearm(cn, budget);
	return done;
}
