// SPDX-License-Identifier: GPL-2.0
/*
 * The Ethernet net_device (link layer eth) or, in IB mode, the dummy
 * net_device that only hosts the NAPI context.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>

#include "cnuas_net.h"

static struct cnuas_net *cnuas_from_netdev(struct net_device *nd)
{
	return *(struct cnuas_net **)netdev_priv(nd);
}

static int cnuas_open(struct net_device *nd)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);
	int err;

	mutex_lock(&cn->dp_lock);
	err = cnuas_dp_start(cn);
	mutex_unlock(&cn->dp_lock);
	return err;
}

static int cnuas_stop(struct net_device *nd)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);

	mutex_lock(&cn->dp_lock);
	cnuas_dp_stop(cn);
	mutex_unlock(&cn->dp_lock);
	return 0;
}

static netdev_tx_t cnuas_start_xmit(struct sk_buff *skb, struct net_device *nd)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);
	bool more = netdev_xmit_more();
	unsigned int len = skb->len;
	int err;

	spin_lock(&cn->tx_lock);
	if (unlikely(!test_bit(CNUAS_F_RUNNING, &cn->flags)))
		err = -ENETDOWN;
	else
		err = cnuas_tx_post(cn, skb, true, true, 0);

	if (unlikely(err == -EBUSY)) {
		/* Should not happen: the queue stops while room is left. */
		netif_stop_queue(nd);
		cnuas_tx_doorbell(cn);
		spin_unlock(&cn->tx_lock);
		return NETDEV_TX_BUSY;
	}
	if (unlikely(err)) {
		if (!more)
			cnuas_tx_doorbell(cn);
		spin_unlock(&cn->tx_lock);
		cnuas_net_dbg(cn, "[tx_dropped] drop: %u-byte frame: %s (%d)\n",
			      len, err == -ENETDOWN ? "device not running" :
			      err == -EMSGSIZE ? "empty or over the maximum frame" :
			      "no memory or DMA mapping", err);
		u64_stats_update_begin(&cn->tx_stats.syncp);
		u64_stats_inc(&cn->tx_stats.dropped);
		u64_stats_update_end(&cn->tx_stats.syncp);
		dev_kfree_skb_any(skb);
		return NETDEV_TX_OK;
	}

	if (cn->tx.size - (cn->tx.prod - cn->tx.cons) < CNUAS_TX_DESC_MAX) {
		netif_stop_queue(nd);
		u64_stats_update_begin(&cn->tx_stats.syncp);
		u64_stats_inc(&cn->tx_stats.stops);
		u64_stats_update_end(&cn->tx_stats.syncp);
	}
	/* True at the end of a batch, or when BQL or we stopped the queue. */
	if (__netdev_sent_queue(nd, len, more))
		cnuas_tx_doorbell(cn);
	spin_unlock(&cn->tx_lock);
	return NETDEV_TX_OK;
}

static void cnuas_get_stats64(struct net_device *nd,
			      struct rtnl_link_stats64 *s)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&cn->rx_stats.syncp);
		s->rx_packets = u64_stats_read(&cn->rx_stats.packets);
		s->rx_bytes = u64_stats_read(&cn->rx_stats.bytes);
		s->rx_dropped = u64_stats_read(&cn->rx_stats.dropped);
		s->rx_errors = u64_stats_read(&cn->rx_stats.errors);
		s->rx_length_errors = s->rx_errors;
	} while (u64_stats_fetch_retry(&cn->rx_stats.syncp, start));

	do {
		start = u64_stats_fetch_begin(&cn->tx_stats.syncp);
		s->tx_packets = u64_stats_read(&cn->tx_stats.packets);
		s->tx_bytes = u64_stats_read(&cn->tx_stats.bytes);
		s->tx_dropped = u64_stats_read(&cn->tx_stats.dropped);
	} while (u64_stats_fetch_retry(&cn->tx_stats.syncp, start));
}

/* RX buffers follow the MTU: restart the data path to resize them. */
static int cnuas_change_mtu(struct net_device *nd, int new_mtu)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);
	unsigned int old_mtu = nd->mtu;
	int err = 0;

	if (!netif_running(nd)) {
		WRITE_ONCE(nd->mtu, new_mtu);
		return 0;
	}
	mutex_lock(&cn->dp_lock);
	cnuas_dp_stop(cn);
	WRITE_ONCE(nd->mtu, new_mtu);
	err = cnuas_dp_start(cn);
	if (err) {
		netdev_err(nd, "MTU %d: restart failed (%d), back to %u\n",
			   new_mtu, err, old_mtu);
		WRITE_ONCE(nd->mtu, old_mtu);
		if (cnuas_dp_start(cn))
			netdev_err(nd, "restart failed, set the interface down and up\n");
	}
	mutex_unlock(&cn->dp_lock);
	return err;
}

static const struct net_device_ops cnuas_netdev_ops = {
	.ndo_open		= cnuas_open,
	.ndo_stop		= cnuas_stop,
	.ndo_start_xmit		= cnuas_start_xmit,
	.ndo_get_stats64	= cnuas_get_stats64,
	.ndo_change_mtu		= cnuas_change_mtu,
	.ndo_set_mac_address	= eth_mac_addr,
	.ndo_validate_addr	= eth_validate_addr,
};

/* Allocate the netdev (Ethernet) or the dummy one (IB) and add NAPI. */
int cnuas_netdev_create(struct cnuas_net *cn)
{
	struct net_device *nd;

	cnuas_napi_mode_init(cn);
	if (!cnuas_is_eth(cn)) {
		/* netif_napi_add needs a net_device even without a netdev. */
		cn->napi_dev = cnuas_alloc_dummy_netdev();
		if (!cn->napi_dev)
			return -ENOMEM;
		netif_napi_add(cn->napi_dev, &cn->napi, cnuas_napi_poll);
		return 0;
	}

	nd = alloc_etherdev(sizeof(struct cnuas_net *));
	if (!nd)
		return -ENOMEM;
	*(struct cnuas_net **)netdev_priv(nd) = cn;
	SET_NETDEV_DEV(nd, &cn->pdev->dev);
	strscpy(nd->name, "cnuas%d", sizeof(nd->name));
	nd->netdev_ops = &cnuas_netdev_ops;
	cnuas_set_ethtool_ops(nd);
	nd->min_mtu = CNUAS_NET_MIN_MTU;
	nd->max_mtu = min_t(u32, CNUAS_NET_MAX_MTU,
			    cn->max_frame - ETH_HLEN - VLAN_HLEN);
	nd->features = NETIF_F_HIGHDMA;
	if (cn->features & CNUAS_VNIC_F_TX_SG)
		nd->features |= NETIF_F_SG;
	nd->hw_features = nd->features & NETIF_F_SG;
	nd->priv_flags |= IFF_LIVE_ADDR_CHANGE;
	eth_hw_addr_set(nd, cn->mac);
	netif_carrier_off(nd);

	cn->netdev = nd;
	cn->napi_dev = nd;
	netif_napi_add(nd, &cn->napi, cnuas_napi_poll);
	return 0;
}

int cnuas_netdev_register(struct cnuas_net *cn)
{
	if (!cn->netdev)
		return 0;
	return register_netdev(cn->netdev);
}

void cnuas_netdev_unregister(struct cnuas_net *cn)
{
	if (cn->netdev)
		unregister_netdev(cn->netdev);	/* calls ndo_stop if up */
}

void cnuas_netdev_destroy(struct cnuas_net *cn)
{
	if (!cn->napi_dev)
		return;
	cnuas_napi_mode_stop(cn);
	netif_napi_del(&cn->napi);
	if (cn->netdev)
		free_netdev(cn->netdev);
	else
		cnuas_free_dummy_netdev(cn->napi_dev);
	cn->netdev = NULL;
	cn->napi_dev = NULL;
}
