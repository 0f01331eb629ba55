// SPDX-License-Identifier: GPL-2.0
/*
 * MISC interrupt handling in process context: link state (netdev carrier,
 * aux client notification) and dead queues (log once, stop; IB mode has no
 * "ip link set down/up", so it resets the data path itself).
 */
#include <linux/netdevice.h>

#include "cnuas_net.h"

static const char *cnuas_err_name(u32 err)
{
	static const char * const names[] = {
		[CNUAS_VNIC_ERR_NONE] = "none",
		[CNUAS_VNIC_ERR_RING_DMA] = "ring or status block unreadable",
		[CNUAS_VNIC_ERR_BUF_DMA] = "buffer address not in memory",
		[CNUAS_VNIC_ERR_BAD_LEN] = "bad length or chain",
		[CNUAS_VNIC_ERR_BAD_PROD] = "producer ran ahead of ring",
		[CNUAS_VNIC_ERR_BAD_SETUP] = "bad queue setup",
	};

	return err < ARRAY_SIZE(names) ? names[err] : "unknown";
}

void cnuas_misc_kick(struct cnuas_net *cn)
{
	if (!test_bit(CNUAS_F_REMOVING, &cn->flags))
		schedule_work(&cn->misc_work);
}

static void cnuas_report_dead(struct cnuas_net *cn, u32 st)
{
	u32 err = cnuas_rd(cn, CNUAS_VNIC_REG_ERROR);

	atomic_inc(&cn->dead_events);
	dev_err(&cn->pdev->dev,
		"queue dead: error %u (%s), txq state %u, rxq state %u, status %#x; %s\n",
		err, cnuas_err_name(err),
		cnuas_rd(cn, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE),
		cnuas_rd(cn, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_STATE), st,
		cn->netdev ? "set the interface down and up to reset" :
			     "resetting");
}

/* Call the aux client's tx_wake as if from softirq context. */
static void cnuas_aux_tx_wake(struct cnuas_net *cn)
{
	const struct cnuas_net_aux_ops *ops;

	local_bh_disable();
	rcu_read_lock();
	ops = rcu_dereference(cn->aux_ops);
	if (ops && ops->tx_wake)
		ops->tx_wake(cn->aux);
	rcu_read_unlock();
	local_bh_enable();
}

void cnuas_misc_work(struct work_struct *work)
{
	struct cnuas_net *cn = container_of(work, struct cnuas_net, misc_work);
	bool up, was_up, wake_aux = false, restart = false;
	u32 st;

	mutex_lock(&cn->dp_lock);
	st = test_bit(CNUAS_F_GONE, &cn->flags) ? ~0u :
	     cnuas_rd(cn, CNUAS_VNIC_REG_STATUS);
	if (st == ~0u) {
		if (!test_and_set_bit(CNUAS_F_GONE, &cn->flags))
			dev_warn(&cn->pdev->dev, "device not responding\n");
		st = 0;
	}

	if (cn->dp_up && (st & CNUAS_VNIC_STATUS_ERROR) &&
	    !test_and_set_bit(CNUAS_F_DEAD, &cn->flags)) {
		cnuas_report_dead(cn, st);
		if (cn->netdev) {
			netif_carrier_off(cn->netdev);
			netif_tx_stop_all_queues(cn->netdev);
		} else {
			/* Restart below, after the client saw the link drop. */
			cnuas_dp_stop(cn);
			restart = true;
		}
	}

	up = (st & CNUAS_VNIC_STATUS_LINK_UP) &&
	     !test_bit(CNUAS_F_DEAD, &cn->flags);
	if (cn->netdev) {
		if (up)
			netif_carrier_on(cn->netdev);
		else
			netif_carrier_off(cn->netdev);
	}
	/* The aux client can only use the link while the rings run. */
	up = up && cn->dp_up;
	was_up = test_bit(CNUAS_F_LINK_UP, &cn->flags);
	assign_bit(CNUAS_F_LINK_UP, &cn->flags, up);
	if (up)
		wake_aux = test_and_clear_bit(CNUAS_F_AUX_TX_BLOCKED,
					      &cn->flags);
	mutex_unlock(&cn->dp_lock);

	if (up != was_up)
		cnuas_aux_link_change(cn, up);
	if (wake_aux)
		cnuas_aux_tx_wake(cn);

	if (restart) {
		/* dp_start queues this work again to report the link. */
		mutex_lock(&cn->dp_lock);
		if (!test_bit(CNUAS_F_REMOVING, &cn->flags) &&
		    cnuas_dp_start(cn))
			dev_err(&cn->pdev->dev, "reset failed\n");
		mutex_unlock(&cn->dp_lock);
	}
}
