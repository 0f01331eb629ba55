// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: the switch's subnet management agent (SubnGet/SubnSet
 * behind base switch port 0) and its performance management agent.
 * Attribute fields are read and written with libibmad's field tables.
 */
#include "ib.h"
#include "switch.h"

#include <arpa/inet.h>
#include <endian.h>
#include <infiniband/mad.h>
#include <infiniband/umad_sm.h>
#include <infiniband/umad_types.h>
#include <stdio.h>
#include <string.h>

#include "cnuas_ib_link.h"

#define STATUS_BAD_VERSION	UMAD_STATUS_BAD_VERSION
#define STATUS_BAD_METHOD	UMAD_STATUS_METHOD_NOT_SUPPORTED
#define STATUS_BAD_ATTR		UMAD_STATUS_ATTR_NOT_SUPPORTED
#define STATUS_BAD_VALUE	UMAD_STATUS_INVALID_ATTR_VALUE

#define PMA_CLASS_PORT_INFO	0x0001
#define PMA_PORT_COUNTERS	0x0012
#define PMA_PORT_COUNTERS_EXT	0x001d
#define PMA_CAP_ALL_PORT_SELECT	0x0100
#define PMA_CAP_EXT_WIDTH	0x0200

/* Port 0's CapabilityMask: IsTrapSupported, IsSLMappingSupported, IsSystemImageGUIDSupported. */
#define PORT0_CAPMASK		0x00000848

#define MTU_4096		5
#define VLCAP_VL0		1
#define WIDTH_1X_4X		3
#define WIDTH_4X		2
#define SPEED_SDR_DDR_QDR	7
#define SPEED_QDR		4

void ib_sma_defaults(struct ib_switch *ib)
{
	uint8_t *si = ib->sw_info;

	mad_set_field(si, 0, IB_SW_LINEAR_FDB_CAP_F, IB_LFT_CAP);
	mad_set_field(si, 0, IB_SW_RANDOM_FDB_CAP_F, 0);
	mad_set_field(si, 0, IB_SW_MCAST_FDB_CAP_F, IB_MFT_CAP);
	mad_set_field(si, 0, IB_SW_LINEAR_FDB_TOP_F, 0);
	mad_set_field(si, 0, IB_SW_DEF_PORT_F, 0);
	mad_set_field(si, 0, IB_SW_DEF_MCAST_PRIM_F, 0xff);
	mad_set_field(si, 0, IB_SW_DEF_MCAST_NOT_PRIM_F, 0xff);
	mad_set_field(si, 0, IB_SW_LIFE_TIME_F, 18);
	mad_set_field(si, 0, IB_SW_PARTITION_ENFORCE_CAP_F, IB_PKEY_CAP);
	mad_set_field(si, 0, IB_SW_ENHANCED_PORT0_F, 0);
	/* FilterRawInbound/OutboundCap: PortInfo's FilterRaw bits are applied (ib_fwd.c) */
	mad_set_field(si, 0, IB_SW_FILTER_RAW_INB_F, 1);
	mad_set_field(si, 0, IB_SW_FILTER_RAW_OUTB_F, 1);
	mad_set_field(si, 0, IB_SW_MCAST_FDB_TOP_F, 0xbfff);
	snprintf((char *)ib->node_desc, sizeof(ib->node_desc), "cnuas-vswitchd %016llx",
		 (unsigned long long)ib->guid);
	/* VLArb: VL0 weight 255 in every low and high priority entry that is used */
	for (unsigned n = 0; n <= ib->nports; n++)
		for (unsigned b = 0; b < 4; b++)
			for (unsigned e = 0; e < 32; e++)
				ib->vlarb[(n * 4 + b) * 64 + 2 * e + 1] = e < 8 ? 255 : 0;
}

void ib_port_info_defaults(struct ib_switch *ib, unsigned n)
{
	uint8_t *pi = ib->port[n].pi;

	memset(pi, 0, 64);
	mad_set_field(pi, 0, IB_PORT_LINK_WIDTH_ENABLED_F, WIDTH_1X_4X);
	mad_set_field(pi, 0, IB_PORT_LINK_WIDTH_SUPPORTED_F, WIDTH_1X_4X);
	mad_set_field(pi, 0, IB_PORT_LINK_WIDTH_ACTIVE_F, WIDTH_4X);
	mad_set_field(pi, 0, IB_PORT_LINK_SPEED_SUPPORTED_F, SPEED_SDR_DDR_QDR);
	mad_set_field(pi, 0, IB_PORT_LINK_SPEED_ENABLED_F, SPEED_SDR_DDR_QDR);
	mad_set_field(pi, 0, IB_PORT_LINK_SPEED_ACTIVE_F, SPEED_QDR);
	mad_set_field(pi, 0, IB_PORT_LINK_DOWN_DEF_F, IB_PHYS_POLLING);
	mad_set_field(pi, 0, IB_PORT_NEIGHBOR_MTU_F, MTU_4096);
	mad_set_field(pi, 0, IB_PORT_MTU_CAP_F, MTU_4096);
	mad_set_field(pi, 0, IB_PORT_VL_CAP_F, VLCAP_VL0);
	mad_set_field(pi, 0, IB_PORT_OPER_VLS_F, VLCAP_VL0);
	mad_set_field(pi, 0, IB_PORT_VL_ARBITRATION_HIGH_CAP_F, 8);
	mad_set_field(pi, 0, IB_PORT_VL_ARBITRATION_LOW_CAP_F, 8);
	mad_set_field(pi, 0, IB_PORT_HOQ_LIFE_F, 16);
	mad_set_field(pi, 0, IB_PORT_RESP_TIME_VAL_F, 16);
	mad_set_field(pi, 0, IB_PORT_LOCAL_PHYS_ERR_F, 8);
	mad_set_field(pi, 0, IB_PORT_OVERRUN_ERR_F, 8);
	if (n == 0) {
		mad_set_field(pi, 0, IB_PORT_CAPMASK_F, PORT0_CAPMASK);
		mad_set_field(pi, 0, IB_PORT_GUID_CAP_F, 1);
		mad_set_field64(pi, 0, IB_PORT_GID_PREFIX_F, 0xfe80000000000000ull);
		mad_set_field(pi, 0, IB_PORT_PHYS_STATE_F, IB_PHYS_LINKUP);
		ib->port[n].state = IB_PS_ACTIVE;
	} else {
		mad_set_field(pi, 0, IB_PORT_PHYS_STATE_F, IB_PHYS_POLLING);
		ib->port[n].state = IB_PS_DOWN;
	}
	memset(ib->port[n].pkeys, 0, sizeof(ib->port[n].pkeys));
	ib->port[n].pkeys[0] = 0xffff;
}

/* ---- M_Key (IBA 14.2.4) ---- */

/*
 * Whether the SMP may go on. A wrong key with a non-zero switch M_Key:
 * Sets and TrapRepresses are refused at every protection level, Gets from
 * level 2 on; refused SMPs get no answer. *@hide: level 1, a Get answered
 * without the key. A refusal starts the M_Key lease (if the SM gave one
 * and it is not running): unless an SMP shows the key before it ends,
 * the protection falls to 0 (ib_timers), so a new SM can read the key and
 * take the subnet over. The right key stops the lease.
 */
static bool mkey_ok(struct vswitch *sw, const uint8_t *mad, unsigned method, bool *hide)
{
	struct ib_switch *ib = sw->ib;
	uint64_t mine = mad_get_field64(ib->port[0].pi, 0, IB_PORT_MKEY_F);
	uint64_t theirs = mad_get_field64((void *)mad, 0, IB_MAD_MKEY_F);
	unsigned prot = mad_get_field(ib->port[0].pi, 0, IB_PORT_MKEY_PROT_BITS_F);
	unsigned lease = mad_get_field(ib->port[0].pi, 0, IB_PORT_MKEY_LEASE_F);

	*hide = false;
	if (!mine || mine == theirs) {
		ib->mkey_lease_end = 0;
		return true;
	}
	if (method == UMAD_METHOD_GET && prot < 2) {
		*hide = prot == 1;
		return true;
	}
	ib->mkey_violations++;
	unsigned v = mad_get_field(ib->port[0].pi, 0, IB_PORT_MKEY_VIOL_F);

	if (v < 0xffff)
		mad_set_field(ib->port[0].pi, 0, IB_PORT_MKEY_VIOL_F, v + 1);
	if (lease && !ib->mkey_lease_end)
		ib->mkey_lease_end = sw->now + lease * 1000000000ull;
	return false;
}

/* ---- attributes ---- */

static int get_node_info(struct ib_switch *ib, unsigned in, uint8_t *d)
{
	mad_set_field(d, 0, IB_NODE_BASE_VERS_F, 1);
	mad_set_field(d, 0, IB_NODE_CLASS_VERS_F, 1);
	mad_set_field(d, 0, IB_NODE_TYPE_F, 2);	/* switch */
	mad_set_field(d, 0, IB_NODE_NPORTS_F, ib->nports);
	mad_set_field64(d, 0, IB_NODE_SYSTEM_GUID_F, ib->guid);
	mad_set_field64(d, 0, IB_NODE_GUID_F, ib->guid);
	mad_set_field64(d, 0, IB_NODE_PORT_GUID_F, ib->guid);
	mad_set_field(d, 0, IB_NODE_PARTITION_CAP_F, IB_PKEY_CAP);
	mad_set_field(d, 0, IB_NODE_DEVID_F, 0xc5a5);
	mad_set_field(d, 0, IB_NODE_REVISION_F, 1);
	mad_set_field(d, 0, IB_NODE_LOCAL_PORT_F, in);
	mad_set_field(d, 0, IB_NODE_VENDORID_F, 0);
	return 0;
}

static int do_switch_info(struct ib_switch *ib, bool set, uint8_t *d)
{
	static const enum MAD_FIELDS rw[] = {
		IB_SW_LINEAR_FDB_TOP_F, IB_SW_DEF_PORT_F, IB_SW_DEF_MCAST_PRIM_F,
		IB_SW_DEF_MCAST_NOT_PRIM_F, IB_SW_LIFE_TIME_F, IB_SW_PARTITION_ENF_INB_F,
		IB_SW_PARTITION_ENF_OUTB_F, IB_SW_MCAST_FDB_TOP_F,
	};

	if (set) {
		if (mad_get_field(d, 0, IB_SW_LINEAR_FDB_TOP_F) >= IB_LFT_CAP)
			return STATUS_BAD_VALUE;
		for (unsigned i = 0; i < sizeof(rw) / sizeof(rw[0]); i++)
			mad_set_field(ib->sw_info, 0, rw[i], mad_get_field(d, 0, rw[i]));
		/* PortStateChange: writing one clears it */
		if (mad_get_field(d, 0, IB_SW_STATE_CHANGE_F))
			mad_set_field(ib->sw_info, 0, IB_SW_STATE_CHANGE_F, 0);
	}
	memcpy(d, ib->sw_info, 64);
	return 0;
}

static void fill_port_info(struct ib_switch *ib, unsigned n, unsigned in, uint8_t *d, bool hide)
{
	const uint8_t *p0 = ib->port[0].pi;

	memcpy(d, ib->port[n].pi, 64);
	/* the switch's management fields live in port 0 and show on every port */
	mad_set_field64(d, 0, IB_PORT_MKEY_F, hide ? 0 : mad_get_field64((void *)p0, 0, IB_PORT_MKEY_F));
	if (n) {
		mad_set_field64(d, 0, IB_PORT_GID_PREFIX_F, 0);
		mad_set_field(d, 0, IB_PORT_LID_F, 0);
		mad_set_field(d, 0, IB_PORT_SMLID_F, 0);
		mad_set_field(d, 0, IB_PORT_CAPMASK_F, 0);
	}
	mad_set_field(d, 0, IB_PORT_LOCAL_PORT_F, in);
	mad_set_field(d, 0, IB_PORT_STATE_F, ib->port[n].state);
}

static int do_port_info(struct vswitch *sw, bool set, unsigned in, uint32_t mod, uint8_t *d,
			bool hide)
{
	struct ib_switch *ib = sw->ib;
	struct ib_port *ip;

	if (mod > ib->nports)
		return STATUS_BAD_VALUE;
	ip = &ib->port[mod];
	if (set) {
		uint8_t *pi = ip->pi;
		unsigned ns = mad_get_field(d, 0, IB_PORT_STATE_F);
		unsigned nphys = mad_get_field(d, 0, IB_PORT_PHYS_STATE_F);
		unsigned mtu = mad_get_field(d, 0, IB_PORT_NEIGHBOR_MTU_F);
		unsigned ovls = mad_get_field(d, 0, IB_PORT_OPER_VLS_F);
		unsigned lid = mad_get_field(d, 0, IB_PORT_LID_F);
		unsigned to = ns;

		/* validate everything before changing anything */
		int bad = 0;

		if (ns > IB_PS_ACTIVE || nphys > IB_PHYS_DISABLED)
			bad = STATUS_BAD_VALUE;
		if (mod && ns != IB_PS_NOP) {
			unsigned cur = ip->state;

			if (ns == IB_PS_INIT ||
			    (ns == IB_PS_ARMED && cur != IB_PS_INIT && cur != IB_PS_ARMED) ||
			    (ns == IB_PS_ACTIVE && cur != IB_PS_ARMED && cur != IB_PS_ACTIVE))
				bad = STATUS_BAD_VALUE;
		}
		if (mtu && mtu > mad_get_field(pi, 0, IB_PORT_MTU_CAP_F))
			bad = STATUS_BAD_VALUE;
		if (ovls > mad_get_field(pi, 0, IB_PORT_VL_CAP_F))
			bad = STATUS_BAD_VALUE;
		if (mod == 0 && lid > CNUAS_LID_UCAST_MAX)
			bad = STATUS_BAD_VALUE;
		if (bad) {
			/* refused: the answer carries the attribute as it stays */
			fill_port_info(ib, mod, in, d, hide);
			return bad;
		}
		if (mod == 0) {
			mad_set_field64(pi, 0, IB_PORT_MKEY_F, mad_get_field64(d, 0, IB_PORT_MKEY_F));
			mad_set_field64(pi, 0, IB_PORT_GID_PREFIX_F,
					mad_get_field64(d, 0, IB_PORT_GID_PREFIX_F));
			mad_set_field(pi, 0, IB_PORT_LID_F, lid);
			mad_set_field(pi, 0, IB_PORT_SMLID_F, mad_get_field(d, 0, IB_PORT_SMLID_F));
			mad_set_field(pi, 0, IB_PORT_LMC_F, mad_get_field(d, 0, IB_PORT_LMC_F));
			mad_set_field(pi, 0, IB_PORT_SMSL_F, mad_get_field(d, 0, IB_PORT_SMSL_F));
			mad_set_field(pi, 0, IB_PORT_MKEY_PROT_BITS_F,
				      mad_get_field(d, 0, IB_PORT_MKEY_PROT_BITS_F));
			mad_set_field(pi, 0, IB_PORT_MKEY_LEASE_F,
				      mad_get_field(d, 0, IB_PORT_MKEY_LEASE_F));
			mad_set_field(pi, 0, IB_PORT_SUBN_TIMEOUT_F,
				      mad_get_field(d, 0, IB_PORT_SUBN_TIMEOUT_F));
		}
		/* 0: no change; 255 (width) and 15 (speed): all that is supported */
		unsigned wen = mad_get_field(d, 0, IB_PORT_LINK_WIDTH_ENABLED_F);
		unsigned sen = mad_get_field(d, 0, IB_PORT_LINK_SPEED_ENABLED_F);

		if (wen == 255)
			wen = mad_get_field(pi, 0, IB_PORT_LINK_WIDTH_SUPPORTED_F);
		if (sen == 15)
			sen = mad_get_field(pi, 0, IB_PORT_LINK_SPEED_SUPPORTED_F);
		if (wen)
			mad_set_field(pi, 0, IB_PORT_LINK_WIDTH_ENABLED_F, wen);
		if (sen)
			mad_set_field(pi, 0, IB_PORT_LINK_SPEED_ENABLED_F, sen);
		if (mtu)
			mad_set_field(pi, 0, IB_PORT_NEIGHBOR_MTU_F, mtu);
		if (ovls)
			mad_set_field(pi, 0, IB_PORT_OPER_VLS_F, ovls);
		if (mad_get_field(d, 0, IB_PORT_LINK_DOWN_DEF_F))
			mad_set_field(pi, 0, IB_PORT_LINK_DOWN_DEF_F,
				      mad_get_field(d, 0, IB_PORT_LINK_DOWN_DEF_F));
		mad_set_field(pi, 0, IB_PORT_HOQ_LIFE_F, mad_get_field(d, 0, IB_PORT_HOQ_LIFE_F));
		mad_set_field(pi, 0, IB_PORT_VL_HIGH_LIMIT_F,
			      mad_get_field(d, 0, IB_PORT_VL_HIGH_LIMIT_F));
		mad_set_field(pi, 0, IB_PORT_VL_STALL_COUNT_F,
			      mad_get_field(d, 0, IB_PORT_VL_STALL_COUNT_F));
		mad_set_field(pi, 0, IB_PORT_PART_EN_INB_F, mad_get_field(d, 0, IB_PORT_PART_EN_INB_F));
		mad_set_field(pi, 0, IB_PORT_PART_EN_OUTB_F, mad_get_field(d, 0, IB_PORT_PART_EN_OUTB_F));
		mad_set_field(pi, 0, IB_PORT_FILTER_RAW_INB_F,
			      mad_get_field(d, 0, IB_PORT_FILTER_RAW_INB_F));
		mad_set_field(pi, 0, IB_PORT_FILTER_RAW_OUTB_F,
			      mad_get_field(d, 0, IB_PORT_FILTER_RAW_OUTB_F));
		/* the SM writes the violation counters to reset them */
		mad_set_field(pi, 0, IB_PORT_MKEY_VIOL_F, mad_get_field(d, 0, IB_PORT_MKEY_VIOL_F));
		mad_set_field(pi, 0, IB_PORT_PKEY_VIOL_F, mad_get_field(d, 0, IB_PORT_PKEY_VIOL_F));
		mad_set_field(pi, 0, IB_PORT_QKEY_VIOL_F, mad_get_field(d, 0, IB_PORT_QKEY_VIOL_F));
		if (mod && ns == IB_PS_DOWN && ip->slot >= 0) {
			/* the link goes down and, with its peer still there, trains again */
			ip->pc.link_downed++;
			to = IB_PS_INIT;
		}
		if (mod && to != IB_PS_NOP && (ip->slot >= 0 || to == IB_PS_DOWN))
			ip->state = (uint8_t)to;
		/* Disabled takes the link off for real, Polling lets it come back */
		if (mod && nphys == IB_PHYS_DISABLED)
			ib_port_disable(sw, mod);
		else if (mod && nphys == IB_PHYS_POLLING)
			ib_port_enable(sw, mod);
	}
	fill_port_info(ib, mod, in, d, hide);
	return 0;
}

static int do_pkeys(struct ib_switch *ib, bool set, uint32_t mod, uint8_t *d)
{
	unsigned port = mod >> 16, block = mod & 0xffff;

	if (port > ib->nports || block != 0)
		return STATUS_BAD_VALUE;
	for (unsigned i = 0; i < IB_PKEY_CAP; i++) {
		if (set)
			ib->port[port].pkeys[i] = (uint16_t)(d[2 * i] << 8 | d[2 * i + 1]);
		d[2 * i] = (uint8_t)(ib->port[port].pkeys[i] >> 8);
		d[2 * i + 1] = (uint8_t)ib->port[port].pkeys[i];
	}
	return 0;
}

static int do_lft(struct ib_switch *ib, bool set, uint32_t mod, uint8_t *d)
{
	if (mod >= IB_LFT_CAP / 64)
		return STATUS_BAD_VALUE;
	if (set)
		memcpy(ib->lft + mod * 64, d, 64);
	memcpy(d, ib->lft + mod * 64, 64);
	return 0;
}

static int do_mft(struct ib_switch *ib, bool set, uint32_t mod, uint8_t *d)
{
	unsigned pos = mod >> 28, block = mod & 0x1ff;

	if (block >= IB_MFT_CAP / 32 || pos * 16 > ib->nports || (mod & 0x0ffffe00))
		return STATUS_BAD_VALUE;
	for (unsigned i = 0; i < 32; i++) {
		uint16_t *e = &ib->mft[(block * 32 + i) * IB_MFT_POSITIONS + pos];

		if (set)
			*e = (uint16_t)(d[2 * i] << 8 | d[2 * i + 1]);
		d[2 * i] = (uint8_t)(*e >> 8);
		d[2 * i + 1] = (uint8_t)*e;
	}
	return 0;
}

static int do_guid_info(struct ib_switch *ib, uint32_t mod, uint8_t *d)
{
	if (mod != 0)
		return STATUS_BAD_VALUE;
	memset(d, 0, 64);
	for (unsigned i = 0; i < 8; i++)
		d[i] = (uint8_t)(ib->guid >> (56 - 8 * i));
	return 0;
}

bool ib_sma_process(struct vswitch *sw, unsigned in, uint8_t *mad, bool dr)
{
	struct ib_switch *ib = sw->ib;
	struct umad_smp *smp = (struct umad_smp *)mad;
	unsigned method = smp->method;
	unsigned attr = ntohs(smp->attr_id);
	uint32_t mod = ntohl(smp->attr_mod);
	uint8_t *d = smp->data;
	bool set = method == UMAD_METHOD_SET, hide;
	int status = 0;

	if (method & UMAD_METHOD_RESP_MASK)
		return false;		/* responses are not for us */
	if (method == UMAD_METHOD_TRAP_REPRESS) {
		/* with the key, it ends our trap of that TID */
		if (mkey_ok(sw, mad, method, &hide) && ib->trap256_tid &&
		    be64toh(smp->tid) == ib->trap256_tid)
			ib->trap256_tid = 0;
		return false;		/* consumed */
	}
	if (smp->base_version != 1 || smp->class_version != 1) {
		status = STATUS_BAD_VERSION;
		goto reply;
	}
	if (method != UMAD_METHOD_GET && method != UMAD_METHOD_SET) {
		status = STATUS_BAD_METHOD;
		goto reply;
	}
	if (!mkey_ok(sw, mad, method, &hide))
		return false;	/* refused without an answer */
	switch (attr) {
	case UMAD_SM_ATTR_NODE_DESC:
		if (set)
			status = STATUS_BAD_ATTR;
		else
			memcpy(d, ib->node_desc, 64);
		break;
	case UMAD_SM_ATTR_NODE_INFO:
		status = set ? STATUS_BAD_ATTR : get_node_info(ib, in, d);
		break;
	case UMAD_SM_ATTR_SWITCH_INFO:
		status = do_switch_info(ib, set, d);
		break;
	case UMAD_SM_ATTR_GUID_INFO:
		status = set ? STATUS_BAD_ATTR : do_guid_info(ib, mod, d);
		break;
	case UMAD_SM_ATTR_PORT_INFO:
		status = do_port_info(sw, set, in, mod, d, hide);
		break;
	case UMAD_SM_ATTR_PKEY_TABLE:
		status = do_pkeys(ib, set, mod, d);
		break;
	case UMAD_SM_ATTR_SLVL_TABLE: {
		/* a switch's: input port in bits 15:8, output port in 7:0 (IBA 14.2.5.8) */
		unsigned from = (mod >> 8) & 0xff, to = mod & 0xff;

		if ((mod >> 16) || from > ib->nports || to > ib->nports) {
			status = STATUS_BAD_VALUE;
			break;
		}
		if (set)
			memcpy(ib_sl2vl(ib, from, to), d, 8);
		memcpy(d, ib_sl2vl(ib, from, to), 8);
		break;
	}
	case UMAD_SM_ATTR_VL_ARB_TABLE: {
		/* block in bits 31:16, port in 7:0 */
		unsigned block = mod >> 16, port = mod & 0xffff;
		uint8_t *t;

		if (block < 1 || block > 4 || port > ib->nports) {
			status = STATUS_BAD_VALUE;
			break;
		}
		t = ib->vlarb + (port * 4 + block - 1) * 64;
		if (set)
			memcpy(t, d, 64);
		memcpy(d, t, 64);
		break;
	}
	case UMAD_SM_ATTR_LINEAR_FT:
		status = do_lft(ib, set, mod, d);
		break;
	case UMAD_SM_ATTR_MCAST_FT:
		status = do_mft(ib, set, mod, d);
		break;
	default:
		status = STATUS_BAD_ATTR;
	}
reply:
	smp->method = UMAD_METHOD_GET_RESP;
	if (dr)
		smp->status = htons((uint16_t)(status | UMAD_SMP_DIRECTION));
	else
		smp->status = htons((uint16_t)status);
	return true;
}

/* ---- PMA ---- */

static uint64_t sat(uint64_t v, unsigned bits)
{
	uint64_t max = bits >= 64 ? ~0ull : (1ull << bits) - 1;

	return v > max ? max : v;
}

/* The PMA's view of IB port n (n 0xff: every port added). */
static void pma_values(struct ib_switch *ib, unsigned n, struct ib_pcnt *v)
{
	memset(v, 0, sizeof(*v));
	for (unsigned i = 1; i <= ib->nports; i++) {
		const struct ib_pcnt *c = &ib->port[i].pc, *b = &ib->port[i].pc_base;

		if (n != 0xff && n != i)
			continue;
#define PMA_ADD(f) v->f += c->f - b->f;
		PMA_ADD(rcv_pkts) PMA_ADD(rcv_bytes) PMA_ADD(xmit_pkts) PMA_ADD(xmit_bytes)
		PMA_ADD(rcv_ucast) PMA_ADD(rcv_mcast) PMA_ADD(xmit_ucast) PMA_ADD(xmit_mcast)
		PMA_ADD(rcv_errors) PMA_ADD(relay_errors) PMA_ADD(xmit_discards)
		PMA_ADD(vl15_dropped) PMA_ADD(link_downed)
		PMA_ADD(rcv_constraint) PMA_ADD(xmit_constraint)
#undef PMA_ADD
	}
}

static void pma_reset(struct ib_switch *ib, unsigned n, unsigned sel, bool ext)
{
	for (unsigned i = 1; i <= ib->nports; i++) {
		const struct ib_pcnt *c = &ib->port[i].pc;
		struct ib_pcnt *b = &ib->port[i].pc_base;

		if (n != 0xff && n != i)
			continue;
		if (ext) {
			if (sel & 0x01) b->xmit_bytes = c->xmit_bytes;
			if (sel & 0x02) b->rcv_bytes = c->rcv_bytes;
			if (sel & 0x04) b->xmit_pkts = c->xmit_pkts;
			if (sel & 0x08) b->rcv_pkts = c->rcv_pkts;
			if (sel & 0x10) b->xmit_ucast = c->xmit_ucast;
			if (sel & 0x20) b->rcv_ucast = c->rcv_ucast;
			if (sel & 0x40) b->xmit_mcast = c->xmit_mcast;
			if (sel & 0x80) b->rcv_mcast = c->rcv_mcast;
			continue;
		}
		if (sel & 0x0004) b->link_downed = c->link_downed;
		if (sel & 0x0008) b->rcv_errors = c->rcv_errors;
		if (sel & 0x0020) b->relay_errors = c->relay_errors;
		if (sel & 0x0040) b->xmit_discards = c->xmit_discards;
		if (sel & 0x0080) b->xmit_constraint = c->xmit_constraint;
		if (sel & 0x0100) b->rcv_constraint = c->rcv_constraint;
		if (sel & 0x0800) b->vl15_dropped = c->vl15_dropped;
		if (sel & 0x1000) b->xmit_bytes = c->xmit_bytes;
		if (sel & 0x2000) b->rcv_bytes = c->rcv_bytes;
		if (sel & 0x4000) b->xmit_pkts = c->xmit_pkts;
		if (sel & 0x8000) b->rcv_pkts = c->rcv_pkts;
	}
}

bool ib_pma_process(struct vswitch *sw, uint8_t *mad)
{
	struct ib_switch *ib = sw->ib;
	struct umad_hdr *h = (struct umad_hdr *)mad;
	uint8_t *d = mad + IB_PC_DATA_OFFS;
	unsigned attr = ntohs(h->attr_id), port;
	bool set = h->method == UMAD_METHOD_SET;
	struct ib_pcnt v;
	int status = 0;

	if (h->method & UMAD_METHOD_RESP_MASK)
		return false;
	if (h->base_version != 1 || h->class_version != 1) {
		status = STATUS_BAD_VERSION;
		goto reply;
	}
	if (h->method != UMAD_METHOD_GET && h->method != UMAD_METHOD_SET) {
		status = STATUS_BAD_METHOD;
		goto reply;
	}
	switch (attr) {
	case PMA_CLASS_PORT_INFO:
		if (set) {
			status = STATUS_BAD_ATTR;
			break;
		}
		memset(d, 0, IB_PC_DATA_SZ);
		mad_set_field(d, 0, IB_CPI_BASEVER_F, 1);
		mad_set_field(d, 0, IB_CPI_CLASSVER_F, 1);
		mad_set_field(d, 0, IB_CPI_CAPMASK_F, PMA_CAP_ALL_PORT_SELECT | PMA_CAP_EXT_WIDTH);
		mad_set_field(d, 0, IB_CPI_RESP_TIME_VALUE_F, 18);
		break;
	case PMA_PORT_COUNTERS:
	case PMA_PORT_COUNTERS_EXT: {
		bool ext = attr == PMA_PORT_COUNTERS_EXT;

		port = mad_get_field(d, 0, ext ? IB_PC_EXT_PORT_SELECT_F : IB_PC_PORT_SELECT_F);
		if (port > ib->nports && port != 0xff) {
			status = STATUS_BAD_VALUE;
			break;
		}
		if (set)
			pma_reset(ib, port, mad_get_field(d, 0, ext ? IB_PC_EXT_COUNTER_SELECT_F :
							 IB_PC_COUNTER_SELECT_F), ext);
		pma_values(ib, port, &v);
		memset(d, 0, IB_PC_DATA_SZ);
		if (ext) {
			mad_set_field(d, 0, IB_PC_EXT_PORT_SELECT_F, port);
			mad_set_field64(d, 0, IB_PC_EXT_XMT_BYTES_F, v.xmit_bytes / 4);
			mad_set_field64(d, 0, IB_PC_EXT_RCV_BYTES_F, v.rcv_bytes / 4);
			mad_set_field64(d, 0, IB_PC_EXT_XMT_PKTS_F, v.xmit_pkts);
			mad_set_field64(d, 0, IB_PC_EXT_RCV_PKTS_F, v.rcv_pkts);
			mad_set_field64(d, 0, IB_PC_EXT_XMT_UPKTS_F, v.xmit_ucast);
			mad_set_field64(d, 0, IB_PC_EXT_RCV_UPKTS_F, v.rcv_ucast);
			mad_set_field64(d, 0, IB_PC_EXT_XMT_MPKTS_F, v.xmit_mcast);
			mad_set_field64(d, 0, IB_PC_EXT_RCV_MPKTS_F, v.rcv_mcast);
			break;
		}
		mad_set_field(d, 0, IB_PC_PORT_SELECT_F, port);
		mad_set_field(d, 0, IB_PC_LINK_DOWNED_F, (uint32_t)sat(v.link_downed, 8));
		mad_set_field(d, 0, IB_PC_ERR_RCV_F, (uint32_t)sat(v.rcv_errors, 16));
		mad_set_field(d, 0, IB_PC_ERR_SWITCH_REL_F, (uint32_t)sat(v.relay_errors, 16));
		mad_set_field(d, 0, IB_PC_XMT_DISCARDS_F, (uint32_t)sat(v.xmit_discards, 16));
		mad_set_field(d, 0, IB_PC_ERR_XMTCONSTR_F, (uint32_t)sat(v.xmit_constraint, 8));
		mad_set_field(d, 0, IB_PC_ERR_RCVCONSTR_F, (uint32_t)sat(v.rcv_constraint, 8));
		mad_set_field(d, 0, IB_PC_VL15_DROPPED_F, (uint32_t)sat(v.vl15_dropped, 16));
		mad_set_field(d, 0, IB_PC_XMT_BYTES_F, (uint32_t)sat(v.xmit_bytes / 4, 32));
		mad_set_field(d, 0, IB_PC_RCV_BYTES_F, (uint32_t)sat(v.rcv_bytes / 4, 32));
		mad_set_field(d, 0, IB_PC_XMT_PKTS_F, (uint32_t)sat(v.xmit_pkts, 32));
		mad_set_field(d, 0, IB_PC_RCV_PKTS_F, (uint32_t)sat(v.rcv_pkts, 32));
		break;
	}
	default:
		status = STATUS_BAD_ATTR;
	}
reply:
	h->method = UMAD_METHOD_GET_RESP;
	h->status = htons((uint16_t)status);
	return true;
}
