// SPDX-License-Identifier: GPL-2.0
/* ethtool: driver info, link, ring sizes, driver and device counters. */
#include <linux/ethtool.h>
#include <linux/netdevice.h>

#include "cnuas_net.h"

static struct cnuas_net *cnuas_from_netdev(struct net_device *nd)
{
	return *(struct cnuas_net **)netdev_priv(nd);
}

static const char cnuas_drv_stat_names[][ETH_GSTRING_LEN] = {
	"rx_packets", "rx_bytes", "rx_dropped_nomem", "rx_errors",
	"rx_aux_packets", "rx_no_client", "rx_vcrc_errors",
	"tx_packets", "tx_bytes", "tx_dropped", "tx_linearized",
	"tx_queue_stops", "tx_aux_packets", "tx_aux_busy",
	"misc_irqs", "resets", "queue_dead_events",
	"napi_full_polls", "napi_thread_switches",
};

/* Device counters, in REG_STATS order. */
static const char cnuas_hw_stat_names[][ETH_GSTRING_LEN] = {
	"hw_tx_frames", "hw_tx_bytes", "hw_rx_frames", "hw_rx_bytes",
	"hw_tx_doorbells", "hw_irqs", "hw_rx_oversize", "hw_tx_link_down",
	"hw_rx_stalls", "hw_tx_stalls", "hw_guest_errors", "hw_rx_polls",
	"hw_rx_poll_frames",
};

#define CNUAS_DRV_STATS	ARRAY_SIZE(cnuas_drv_stat_names)
#define CNUAS_HW_STATS	ARRAY_SIZE(cnuas_hw_stat_names)
static_assert(CNUAS_HW_STATS == CNUAS_VNIC_NUM_STATS);

static void cnuas_get_drvinfo(struct net_device *nd,
			      struct ethtool_drvinfo *info)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);

	strscpy(info->driver, CNUAS_NET_DRV_NAME, sizeof(info->driver));
	strscpy(info->version, CNUAS_VERSION, sizeof(info->version));
	snprintf(info->fw_version, sizeof(info->fw_version), "%u.%u",
		 cn->hw_version >> 16, cn->hw_version & 0xffff);
	strscpy(info->bus_info, pci_name(cn->pdev), sizeof(info->bus_info));
}

static int cnuas_get_link_ksettings(struct net_device *nd,
				    struct ethtool_link_ksettings *ks)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);
	u32 speed = 0;

	ethtool_link_ksettings_zero_link_mode(ks, supported);
	ethtool_link_ksettings_zero_link_mode(ks, advertising);
	if (netif_carrier_ok(nd) && !test_bit(CNUAS_F_GONE, &cn->flags))
		speed = cnuas_rd(cn, CNUAS_VNIC_REG_LINK_SPEED);
	if (speed && speed != ~0u) {
		ks->base.speed = speed;
		ks->base.duplex = DUPLEX_FULL;
	} else {
		ks->base.speed = SPEED_UNKNOWN;
		ks->base.duplex = DUPLEX_UNKNOWN;
	}
	ks->base.port = PORT_OTHER;
	ks->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static void cnuas_get_ringparam(struct net_device *nd,
				struct ethtool_ringparam *ring,
				struct kernel_ethtool_ringparam *kring,
				struct netlink_ext_ack *extack)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);

	ring->rx_max_pending = CNUAS_VNIC_RING_MAX;
	ring->tx_max_pending = CNUAS_VNIC_RING_MAX;
	ring->rx_pending = cn->rx.size;
	ring->tx_pending = cn->tx.size;
	kring->rx_buf_len = cn->rx.buf_len;
}

/* Stop the data path, swap the rings, start again (ethtool -G). */
static int cnuas_set_ringparam(struct net_device *nd,
			       struct ethtool_ringparam *ring,
			       struct kernel_ethtool_ringparam *kring,
			       struct netlink_ext_ack *extack)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);
	bool was_up;
	int err;

	if (ring->rx_mini_pending || ring->rx_jumbo_pending)
		return -EINVAL;
	if (!cnuas_ring_size_ok(ring->rx_pending) ||
	    !cnuas_ring_size_ok(ring->tx_pending)) {
		NL_SET_ERR_MSG(extack, "ring sizes: powers of two, 64..4096");
		return -EINVAL;
	}
	if (ring->rx_pending == cn->rx.size && ring->tx_pending == cn->tx.size)
		return 0;

	mutex_lock(&cn->dp_lock);
	was_up = cn->dp_up;
	cnuas_dp_stop(cn);
	err = cnuas_rings_resize(cn, ring->tx_pending, ring->rx_pending);
	if (err)
		NL_SET_ERR_MSG(extack, "no memory for the new rings");
	if (was_up && cnuas_dp_start(cn)) {
		netdev_err(nd, "restart failed, set the interface down and up\n");
		err = err ?: -EIO;
	}
	mutex_unlock(&cn->dp_lock);
	return err;
}

/* The device has one moderation delay for RX and TX interrupts. */
static int cnuas_get_coalesce(struct net_device *nd,
			      struct ethtool_coalesce *ec,
			      struct kernel_ethtool_coalesce *kec,
			      struct netlink_ext_ack *extack)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);

	ec->rx_coalesce_usecs = cn->int_delay_us;
	ec->tx_coalesce_usecs = cn->int_delay_us;
	return 0;
}

static int cnuas_set_coalesce(struct net_device *nd,
			      struct ethtool_coalesce *ec,
			      struct kernel_ethtool_coalesce *kec,
			      struct netlink_ext_ack *extack)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);
	u32 usecs;

	if (!(cn->features & CNUAS_VNIC_F_INT_DELAY))
		return -EOPNOTSUPP;
	/* Whichever of the two was changed wins. */
	usecs = ec->rx_coalesce_usecs != cn->int_delay_us ?
		ec->rx_coalesce_usecs : ec->tx_coalesce_usecs;

	mutex_lock(&cn->dp_lock);
	cn->int_delay_us = usecs;
	if (cn->dp_up)	/* INT_DELAY may change while enabled */
		cnuas_wr(cn, CNUAS_VNIC_REG_INT_DELAY, usecs);
	mutex_unlock(&cn->dp_lock);
	return 0;
}

static int cnuas_get_sset_count(struct net_device *nd, int sset)
{
	if (sset != ETH_SS_STATS)
		return -EOPNOTSUPP;
	return CNUAS_DRV_STATS + CNUAS_HW_STATS;
}

static void cnuas_get_strings(struct net_device *nd, u32 sset, u8 *data)
{
	if (sset != ETH_SS_STATS)
		return;
	memcpy(data, cnuas_drv_stat_names, sizeof(cnuas_drv_stat_names));
	data += sizeof(cnuas_drv_stat_names);
	memcpy(data, cnuas_hw_stat_names, sizeof(cnuas_hw_stat_names));
}

static void cnuas_get_ethtool_stats(struct net_device *nd,
				    struct ethtool_stats *stats, u64 *data)
{
	struct cnuas_net *cn = cnuas_from_netdev(nd);
	struct cnuas_rx_stats *rs = &cn->rx_stats;
	struct cnuas_tx_stats *ts = &cn->tx_stats;
	unsigned int start, i, nhw;
	u64 *p;

	do {
		p = data;
		start = u64_stats_fetch_begin(&rs->syncp);
		*p++ = u64_stats_read(&rs->packets);
		*p++ = u64_stats_read(&rs->bytes);
		*p++ = u64_stats_read(&rs->dropped);
		*p++ = u64_stats_read(&rs->errors);
		*p++ = u64_stats_read(&rs->aux_packets);
		*p++ = u64_stats_read(&rs->no_client);
		*p++ = u64_stats_read(&rs->vcrc_errors);
	} while (u64_stats_fetch_retry(&rs->syncp, start));
	data = p;

	do {
		p = data;
		start = u64_stats_fetch_begin(&ts->syncp);
		*p++ = u64_stats_read(&ts->packets);
		*p++ = u64_stats_read(&ts->bytes);
		*p++ = u64_stats_read(&ts->dropped);
		*p++ = u64_stats_read(&ts->linearized);
		*p++ = u64_stats_read(&ts->stops);
		*p++ = u64_stats_read(&ts->aux_packets);
		*p++ = u64_stats_read(&ts->aux_busy);
	} while (u64_stats_fetch_retry(&ts->syncp, start));

	*p++ = atomic_read(&cn->misc_irqs);
	*p++ = atomic_read(&cn->resets);
	*p++ = atomic_read(&cn->dead_events);
	*p++ = atomic_long_read(&cn->napi_full_polls);
	*p++ = atomic_read(&cn->napi_thread_switches);

	/* Devices before 1.3 have fewer counters: those read as 0. */
	nhw = (cn->hw_version & 0xffff) >= 3 ? CNUAS_HW_STATS :
	      CNUAS_VNIC_NUM_STATS_1_2;
	for (i = 0; i < CNUAS_HW_STATS; i++)
		*p++ = test_bit(CNUAS_F_GONE, &cn->flags) || i >= nhw ? 0 :
		       cnuas_rd(cn, CNUAS_VNIC_REG_STATS + 4 * i);
}

static const struct ethtool_ops cnuas_ethtool_ops = {
	.supported_coalesce_params = ETHTOOL_COALESCE_USECS,
	.get_drvinfo		= cnuas_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_link_ksettings	= cnuas_get_link_ksettings,
	.get_ringparam		= cnuas_get_ringparam,
	.set_ringparam		= cnuas_set_ringparam,
	.get_coalesce		= cnuas_get_coalesce,
	.set_coalesce		= cnuas_set_coalesce,
	.get_sset_count		= cnuas_get_sset_count,
	.get_strings		= cnuas_get_strings,
	.get_ethtool_stats	= cnuas_get_ethtool_stats,
};

void cnuas_set_ethtool_ops(struct net_device *nd)
{
	nd->ethtool_ops = &cnuas_ethtool_ops;
}
