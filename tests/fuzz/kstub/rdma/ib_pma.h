/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* Performance management MADs and the counters pma.c answers (IBA 16.1). */
#ifndef KSTUB_RDMA_IB_PMA_H
#define KSTUB_RDMA_IB_PMA_H
#include "ib_mad.h"

#define IB_PMA_CLASS_PORT_INFO		KSTUB_BE16(0x0001)
#define IB_PMA_PORT_COUNTERS		KSTUB_BE16(0x0012)
#define IB_PMA_PORT_COUNTERS_EXT	KSTUB_BE16(0x001d)
#define IB_PMA_CLASS_CAP_EXT_WIDTH	KSTUB_BE16(1 << 9)

/* PortCounters' CounterSelect bits */
#define IB_PMA_SEL_LINK_DOWNED		KSTUB_BE16(0x0004)
#define IB_PMA_SEL_PORT_RCV_ERRORS	KSTUB_BE16(0x0008)
#define IB_PMA_SEL_PORT_XMIT_DISCARDS	KSTUB_BE16(0x0040)
#define IB_PMA_SEL_PORT_XMIT_DATA	KSTUB_BE16(0x1000)
#define IB_PMA_SEL_PORT_RCV_DATA	KSTUB_BE16(0x2000)
#define IB_PMA_SEL_PORT_XMIT_PACKETS	KSTUB_BE16(0x4000)
#define IB_PMA_SEL_PORT_RCV_PACKETS	KSTUB_BE16(0x8000)
/* PortCountersExtended's */
#define IB_PMA_SELX_PORT_XMIT_DATA	KSTUB_BE16(0x0001)
#define IB_PMA_SELX_PORT_RCV_DATA	KSTUB_BE16(0x0002)
#define IB_PMA_SELX_PORT_XMIT_PACKETS	KSTUB_BE16(0x0004)
#define IB_PMA_SELX_PORT_RCV_PACKETS	KSTUB_BE16(0x0008)
#define IB_PMA_SELX_PORT_MULTI_RCV_PACKETS KSTUB_BE16(0x0080)

struct ib_pma_mad {
	struct ib_mad_hdr mad_hdr;
	u8 reserved[40];
	u8 data[192];
} __packed;

struct ib_pma_portcounters {
	u8 reserved;
	u8 port_select;
	__be16 counter_select;
	__be16 symbol_error_counter;
	u8 link_error_recovery_counter;
	u8 link_downed_counter;
	__be16 port_rcv_errors;
	__be16 port_rcv_remphys_errors;
	__be16 port_rcv_switch_relay_errors;
	__be16 port_xmit_discards;
	u8 port_xmit_constraint_errors;
	u8 port_rcv_constraint_errors;
	u8 reserved1;
	u8 link_overrun_errors;
	__be16 reserved2;
	__be16 vl15_dropped;
	__be32 port_xmit_data;
	__be32 port_rcv_data;
	__be32 port_xmit_packets;
	__be32 port_rcv_packets;
	__be32 port_xmit_wait;
} __packed;

struct ib_pma_portcounters_ext {
	u8 reserved;
	u8 port_select;
	__be16 counter_select;
	__be32 reserved2;
	__be64 port_xmit_data;
	__be64 port_rcv_data;
	__be64 port_xmit_packets;
	__be64 port_rcv_packets;
	__be64 port_unicast_xmit_packets;
	__be64 port_unicast_rcv_packets;
	__be64 port_multicast_xmit_packets;
	__be64 port_multicast_rcv_packets;
} __packed;
#endif
