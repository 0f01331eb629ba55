// SPDX-License-Identifier: GPL-2.0
/*
 * The auxiliary device "cnuas_net.rdma.<id>" and the frame interface the
 * RDMA driver gets through it (see cnuas_net_aux.h).
 */
#include <linux/etherdevice.h>
#include <linux/idr.h>

#include "cnuas_net.h"
#include "cnuas_ib_link.h"
#include "cnuas_roce_frame.h"

static DEFINE_IDA(cnuas_aux_ida);

static void cnuas_aux_release(struct device *dev)
{
	struct cnuas_net_aux_dev *adev =
		to_cnuas_net_aux_dev(to_auxiliary_dev(dev));

	ida_free(&cnuas_aux_ida, adev->adev.id);
	kfree(adev);
}

int cnuas_aux_create(struct cnuas_net *cn)
{
	struct cnuas_net_aux_dev *adev;
	int id, err;

	adev = kzalloc(sizeof(*adev), GFP_KERNEL);
	if (!adev)
		return -ENOMEM;
	id = ida_alloc(&cnuas_aux_ida, GFP_KERNEL);
	if (id < 0) {
		kfree(adev);
		return id;
	}
	adev->adev.name = CNUAS_NET_AUX_NAME;
	adev->adev.id = id;
	adev->adev.dev.parent = &cn->pdev->dev;
	adev->adev.dev.release = cnuas_aux_release;
	adev->link_layer = cn->link_layer;
	ether_addr_copy(adev->mac, cn->mac);
	adev->netdev = cn->netdev;
	adev->dma_dev = &cn->pdev->dev;
	if (cn->features & (CNUAS_VNIC_F_RDMA_ICRC | CNUAS_VNIC_F_IB_CRC))
		adev->offloads |= CNUAS_NET_AUX_OFF_ICRC;
	if (cn->features & CNUAS_VNIC_F_RX_POLL)
		adev->rx_poll_page = pci_resource_start(cn->pdev,
							CNUAS_VNIC_BAR_POLL);
	adev->cn = cn;

	err = auxiliary_device_init(&adev->adev);
	if (err) {
		ida_free(&cnuas_aux_ida, id);
		kfree(adev);
		return err;
	}
	/* Published before add: the client's probe may use it at once. */
	cn->aux = adev;
	err = auxiliary_device_add(&adev->adev);
	if (err) {
		cn->aux = NULL;
		auxiliary_device_uninit(&adev->adev);	/* frees adev */
		return err;
	}
	return 0;
}

/* Unbinds the client (its remove detaches) before we go on tearing down. */
void cnuas_aux_destroy(struct cnuas_net *cn)
{
	struct cnuas_net_aux_dev *adev = cn->aux;

	if (!adev)
		return;
	auxiliary_device_delete(&adev->adev);
	/* A client that forgot to detach must not get more frames. */
	cnuas_net_aux_detach(adev);
	adev->cn = NULL;
	cn->aux = NULL;
	auxiliary_device_uninit(&adev->adev);
}

/*
 * Ethernet mode: does this received frame belong to the RDMA client?
 * RoCEv2 (cnuas_roce_frame_walk(): IPv4/IPv6, UDP to port 4791, one
 * 802.1Q tag allowed), unicast to us or multicast. The frame is
 * untrusted: the walk reads only inside the head.
 */
bool cnuas_aux_wants(struct cnuas_net *cn, const struct sk_buff *skb)
{
	const struct ethhdr *eth = (const struct ethhdr *)skb->data;
	unsigned int len = skb_headlen(skb);
	struct cnuas_roce_frame f;

	if (len < ETH_HLEN)
		return false;
	if (!is_multicast_ether_addr(eth->h_dest) &&
	    !ether_addr_equal(eth->h_dest, cn->netdev->dev_addr))
		return false;
	return cnuas_roce_frame_walk(skb->data, len, &f) == CNUAS_ROCE_FRAME_OK;
}

void cnuas_aux_link_change(struct cnuas_net *cn, bool up)
{
	const struct cnuas_net_aux_ops *ops;

	mutex_lock(&cn->aux_lock);
	ops = rcu_dereference_protected(cn->aux_ops,
					lockdep_is_held(&cn->aux_lock));
	if (ops && ops->link_change)
		ops->link_change(cn->aux, up);
	mutex_unlock(&cn->aux_lock);
}

/* ---- exported to the auxiliary driver ---- */

int cnuas_net_aux_attach(struct cnuas_net_aux_dev *adev,
			 const struct cnuas_net_aux_ops *ops)
{
	struct cnuas_net *cn = adev->cn;
	int err = 0;

	if (!cn || !ops || !ops->rx)
		return -EINVAL;
	mutex_lock(&cn->aux_lock);
	if (rcu_access_pointer(cn->aux_ops))
		err = -EBUSY;
	else
		rcu_assign_pointer(cn->aux_ops, ops);
	mutex_unlock(&cn->aux_lock);
	return err;
}
EXPORT_SYMBOL_GPL(cnuas_net_aux_attach);

void cnuas_net_aux_detach(struct cnuas_net_aux_dev *adev)
{
	struct cnuas_net *cn = adev->cn;

	if (!cn)
		return;
	mutex_lock(&cn->aux_lock);
	RCU_INIT_POINTER(cn->aux_ops, NULL);
	mutex_unlock(&cn->aux_lock);
	/* Wait for NAPI polls that may still call the old ops. */
	synchronize_net();
	clear_bit(CNUAS_F_AUX_TX_BLOCKED, &cn->flags);
}
EXPORT_SYMBOL_GPL(cnuas_net_aux_detach);

int cnuas_net_aux_xmit(struct cnuas_net_aux_dev *adev, struct sk_buff *skb,
		       u32 flags)
{
	struct cnuas_net *cn = adev->cn;
	struct sk_buff *out = skb;
	u16 dflags = 0;
	int err;

	if (flags & CNUAS_NET_AUX_TX_ICRC) {
		if (!(adev->offloads & CNUAS_NET_AUX_OFF_ICRC))
			return -EOPNOTSUPP;
		dflags = CNUAS_VNIC_DESC_F_ICRC;
	}
	/* InfiniBand: the link layer's VCRC goes behind the ICRC. */
	if (cnuas_ib_link_sw(cn)) {
		out = cnuas_ib_link_tx(skb);
		if (!out)
			return -ENOMEM;
	}

	spin_lock_bh(&cn->tx_lock);
	if (!test_bit(CNUAS_F_RUNNING, &cn->flags) ||
	    test_bit(CNUAS_F_DEAD, &cn->flags)) {
		err = -ENETDOWN;
	} else {
		err = cnuas_tx_post(cn, out, flags & CNUAS_NET_AUX_TX_MORE,
				    false, dflags);
		if (err == -EBUSY)
			set_bit(CNUAS_F_AUX_TX_BLOCKED, &cn->flags);
	}
	/* Whatever happens to this frame, earlier "more" ones must go. */
	if (err)
		cnuas_tx_doorbell(cn);
	spin_unlock_bh(&cn->tx_lock);

	if (out != skb || cnuas_ib_link_sw(cn)) {
		if (err)
			cnuas_ib_link_tx_undo(skb, out);
		else if (out != skb)
			consume_skb(skb);	/* its copy went */
	}

	if (err == -EBUSY) {
		u64_stats_update_begin(&cn->tx_stats.syncp);
		u64_stats_inc(&cn->tx_stats.aux_busy);
		u64_stats_update_end(&cn->tx_stats.syncp);
	}
	return err;
}
EXPORT_SYMBOL_GPL(cnuas_net_aux_xmit);

void cnuas_net_aux_flush(struct cnuas_net_aux_dev *adev)
{
	struct cnuas_net *cn = adev->cn;

	spin_lock_bh(&cn->tx_lock);
	if (test_bit(CNUAS_F_RUNNING, &cn->flags))
		cnuas_tx_doorbell(cn);
	spin_unlock_bh(&cn->tx_lock);
}
EXPORT_SYMBOL_GPL(cnuas_net_aux_flush);

u32 cnuas_net_aux_max_frame(struct cnuas_net_aux_dev *adev)
{
	struct cnuas_net *cn = adev->cn;

	/* On InfiniBand the VCRC comes on top of the client's frame. */
	return cnuas_cur_max_frame(cn) - (cnuas_is_eth(cn) ? 0 : CNUAS_VCRC_LEN);
}
EXPORT_SYMBOL_GPL(cnuas_net_aux_max_frame);

bool cnuas_net_aux_link_up(struct cnuas_net_aux_dev *adev)
{
	return test_bit(CNUAS_F_LINK_UP, &adev->cn->flags);
}
EXPORT_SYMBOL_GPL(cnuas_net_aux_link_up);

u32 cnuas_net_aux_link_speed(struct cnuas_net_aux_dev *adev)
{
	struct cnuas_net *cn = adev->cn;
	u32 speed;

	if (test_bit(CNUAS_F_GONE, &cn->flags))
		return 0;
	speed = cnuas_rd(cn, CNUAS_VNIC_REG_LINK_SPEED);
	return speed == ~0u ? 0 : speed;
}
EXPORT_SYMBOL_GPL(cnuas_net_aux_link_speed);

u64 cnuas_net_aux_rx_vcrc_errors(struct cnuas_net_aux_dev *adev)
{
	struct cnuas_rx_stats *rs = &adev->cn->rx_stats;
	unsigned int start;
	u64 v;

	do {
		start = u64_stats_fetch_begin(&rs->syncp);
		v = u64_stats_read(&rs->vcrc_errors);
	} while (u64_stats_fetch_retry(&rs->syncp, start));
	return v;
}
EXPORT_SYMBOL_GPL(cnuas_net_aux_rx_vcrc_errors);
