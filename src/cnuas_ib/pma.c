// SPDX-License-Identifier: GPL-2.0
/*
 * The performance management agent (class 0x04, IBA 16.1): ClassPortInfo,
 * PortCounters and PortCountersExtended, read from the device's own
 * counters (counters.c, and the port's byte counts); a Set clears the
 * selected ones. perfquery asks it over the wire or through the local
 * port, ib_core's sysfs (ports/1/counters) through process_mad.
 */
#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>

#include "cnuas_ib.h"

/* The device's counters now, before the baselines of the last clear. */
struct cnuas_pma_now {
	u64 tx_bytes, rx_bytes, tx_pkts, rx_pkts, mc_rx_pkts;
	u64 rcv_err, xmit_discards;
	u8 link_downed;
};

static u64 cnuas_pma_stat(struct cnuas_ib_dev *cdev, enum cnuas_ib_stat s)
{
	return atomic64_read(&cdev->tdev.stats[s]);
}

/*
 * PortRcvErrors (IBA 16.1.3.5): packets received with an error: a bad
 * ICRC or a malformed header here, a bad VCRC (or too short for one) in
 * cnuas_net's link layer.
 */
static u64 cnuas_pma_rcv_errors(struct cnuas_ib_dev *cdev)
{
	return cnuas_pma_stat(cdev, CNUAS_STAT_ICRC_ERR) +
	       cnuas_pma_stat(cdev, CNUAS_STAT_DROP_HDR) +
	       cnuas_net_aux_rx_vcrc_errors(cdev->adev);
}

/* Port lock held. */
static void cnuas_pma_read(struct cnuas_ib_dev *cdev, struct cnuas_pma_now *n)
{
	struct cnuas_ib_port *p = &cdev->port;

	n->tx_bytes = atomic64_read(&p->tx_bytes) - p->base_tx_bytes;
	n->rx_bytes = atomic64_read(&p->rx_bytes) - p->base_rx_bytes;
	n->tx_pkts = cnuas_pma_stat(cdev, CNUAS_STAT_SENT_PKTS) -
		     p->base_tx_pkts;
	n->rx_pkts = cnuas_pma_stat(cdev, CNUAS_STAT_RCVD_PKTS) -
		     p->base_rx_pkts;
	n->mc_rx_pkts = cnuas_pma_stat(cdev, CNUAS_STAT_MCAST_RCVD) -
			p->base_mc_rx_pkts;
	n->rcv_err = cnuas_pma_rcv_errors(cdev) - p->base_rcv_err;
	n->xmit_discards = cnuas_pma_stat(cdev, CNUAS_STAT_SEND_ERR) -
			   p->base_xmit_discards;
	n->link_downed = p->link_downed - p->base_link_downed;
}

/* Port lock held: a Set's counter_select bits, PortCounters' or _EXT's. */
static void cnuas_pma_clear(struct cnuas_ib_dev *cdev, bool ext, u16 sel)
{
	struct cnuas_ib_port *p = &cdev->port;
	bool data_tx, data_rx, pkts_tx, pkts_rx;

	if (ext) {
		data_tx = sel & be16_to_cpu(IB_PMA_SELX_PORT_XMIT_DATA);
		data_rx = sel & be16_to_cpu(IB_PMA_SELX_PORT_RCV_DATA);
		pkts_tx = sel & be16_to_cpu(IB_PMA_SELX_PORT_XMIT_PACKETS);
		pkts_rx = sel & be16_to_cpu(IB_PMA_SELX_PORT_RCV_PACKETS);
		if (sel & be16_to_cpu(IB_PMA_SELX_PORT_MULTI_RCV_PACKETS))
			p->base_mc_rx_pkts =
				cnuas_pma_stat(cdev, CNUAS_STAT_MCAST_RCVD);
	} else {
		data_tx = sel & be16_to_cpu(IB_PMA_SEL_PORT_XMIT_DATA);
		data_rx = sel & be16_to_cpu(IB_PMA_SEL_PORT_RCV_DATA);
		pkts_tx = sel & be16_to_cpu(IB_PMA_SEL_PORT_XMIT_PACKETS);
		pkts_rx = sel & be16_to_cpu(IB_PMA_SEL_PORT_RCV_PACKETS);
		if (sel & be16_to_cpu(IB_PMA_SEL_PORT_RCV_ERRORS))
			p->base_rcv_err = cnuas_pma_rcv_errors(cdev);
		if (sel & be16_to_cpu(IB_PMA_SEL_PORT_XMIT_DISCARDS))
			p->base_xmit_discards =
				cnuas_pma_stat(cdev, CNUAS_STAT_SEND_ERR);
		if (sel & be16_to_cpu(IB_PMA_SEL_LINK_DOWNED))
			p->base_link_downed = p->link_downed;
	}
	if (data_tx)
		p->base_tx_bytes = atomic64_read(&p->tx_bytes);
	if (data_rx)
		p->base_rx_bytes = atomic64_read(&p->rx_bytes);
	if (pkts_tx)
		p->base_tx_pkts = cnuas_pma_stat(cdev, CNUAS_STAT_SENT_PKTS);
	if (pkts_rx)
		p->base_rx_pkts = cnuas_pma_stat(cdev, CNUAS_STAT_RCVD_PKTS);
}

static __be32 cnuas_pma_sat32(u64 v)
{
	return cpu_to_be32(min_t(u64, v, U32_MAX));
}

static __be16 cnuas_pma_sat16(u64 v)
{
	return cpu_to_be16(min_t(u64, v, U16_MAX));
}

static void cnuas_pma_counters(const struct cnuas_pma_now *n,
			       struct ib_pma_portcounters *pc)
{
	pc->link_downed_counter = n->link_downed;
	pc->port_rcv_errors = cnuas_pma_sat16(n->rcv_err);
	pc->port_xmit_discards = cnuas_pma_sat16(n->xmit_discards);
	/* Data in 4-byte words (IBA 16.1.3.5). */
	pc->port_xmit_data = cnuas_pma_sat32(n->tx_bytes / 4);
	pc->port_rcv_data = cnuas_pma_sat32(n->rx_bytes / 4);
	pc->port_xmit_packets = cnuas_pma_sat32(n->tx_pkts);
	pc->port_rcv_packets = cnuas_pma_sat32(n->rx_pkts);
}

static void cnuas_pma_counters_ext(const struct cnuas_pma_now *n,
				   struct ib_pma_portcounters_ext *pc)
{
	pc->port_xmit_data = cpu_to_be64(n->tx_bytes / 4);
	pc->port_rcv_data = cpu_to_be64(n->rx_bytes / 4);
	pc->port_xmit_packets = cpu_to_be64(n->tx_pkts);
	pc->port_rcv_packets = cpu_to_be64(n->rx_pkts);
	/* Multicast sends are not told apart from unicast ones. */
	pc->port_unicast_xmit_packets = cpu_to_be64(n->tx_pkts);
	pc->port_unicast_rcv_packets =
		cpu_to_be64(n->rx_pkts - min(n->rx_pkts, n->mc_rx_pkts));
	pc->port_multicast_rcv_packets = cpu_to_be64(n->mc_rx_pkts);
}

static void cnuas_pma_class_port_info(struct ib_pma_mad *pmp)
{
	struct ib_class_port_info *cpi =
		(struct ib_class_port_info *)pmp->data;

	cpi->base_version = IB_MGMT_BASE_VERSION;
	cpi->class_version = 1;
	cpi->capability_mask = IB_PMA_CLASS_CAP_EXT_WIDTH;
	ib_set_cpi_resp_time(cpi, CNUAS_IB_RESP_TIME);
}

static int cnuas_pma_reply(struct ib_pma_mad *pmp)
{
	pmp->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

int cnuas_ib_pma(struct cnuas_ib_dev *cdev, struct ib_mad *mad, u32 port)
{
	struct ib_pma_mad *pmp = (struct ib_pma_mad *)mad;
	struct ib_pma_portcounters *pc = (void *)pmp->data;
	struct cnuas_ib_port *p = &cdev->port;
	__be16 attr = pmp->mad_hdr.attr_id;
	struct cnuas_pma_now now;
	unsigned long flags;
	u8 port_select;
	u16 sel;

	switch (pmp->mad_hdr.method) {
	case IB_MGMT_METHOD_GET:
	case IB_MGMT_METHOD_SET:
		break;
	case IB_MGMT_METHOD_GET_RESP:
	case IB_MGMT_METHOD_TRAP:
		return IB_MAD_RESULT_SUCCESS;	/* for a PM here, if any */
	default:
		pmp->mad_hdr.status =
			cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD);
		return cnuas_pma_reply(pmp);
	}
	if (pmp->mad_hdr.class_version != 1) {
		pmp->mad_hdr.status =
			cpu_to_be16(IB_MGMT_MAD_STATUS_BAD_VERSION);
		return cnuas_pma_reply(pmp);
	}

	if (attr == IB_PMA_CLASS_PORT_INFO &&
	    pmp->mad_hdr.method == IB_MGMT_METHOD_GET) {
		memset(pmp->data, 0, sizeof(pmp->data));
		cnuas_pma_class_port_info(pmp);
		return cnuas_pma_reply(pmp);
	}
	if (attr != IB_PMA_PORT_COUNTERS && attr != IB_PMA_PORT_COUNTERS_EXT) {
		pmp->mad_hdr.status =
		cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
		return cnuas_pma_reply(pmp);
	}

	/* Both layouts start with reserved, PortSelect, CounterSelect. */
	port_select = pc->port_select;
	sel = be16_to_cpu(pc->counter_select);
	memset(pmp->data, 0, sizeof(pmp->data));
	pc->port_select = port_select;
	if (port_select != port && port_select != 0xff) {
		pmp->mad_hdr.status =
			cpu_to_be16(IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
		return cnuas_pma_reply(pmp);
	}

	spin_lock_irqsave(&p->lock, flags);
	if (pmp->mad_hdr.method == IB_MGMT_METHOD_SET)
		cnuas_pma_clear(cdev, attr == IB_PMA_PORT_COUNTERS_EXT, sel);
	cnuas_pma_read(cdev, &now);
	spin_unlock_irqrestore(&p->lock, flags);

	if (attr == IB_PMA_PORT_COUNTERS)
		cnuas_pma_counters(&now, pc);
	else
		cnuas_pma_counters_ext(&now, (void *)pmp->data);
	return cnuas_pma_reply(pmp);
}
