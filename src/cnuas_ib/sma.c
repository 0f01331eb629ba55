// SPDX-License-Identifier: GPL-2.0
/*
 * The subnet management agent of an IB-mode port (IBA 14.2.5): SubnGet
 * and SubnSet of the attributes a channel adapter has. The subnet manager
 * configures the port only through here: its LID, the SM's LID, the
 * P_Keys, and the port state beyond Init. Each change raises the event
 * ib_core's clients follow (SA, IPoIB, the caches).
 */
#include <linux/jiffies.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "cnuas_ib.h"

#define CNUAS_SMA_WIDTH_SUP	(IB_WIDTH_1X | IB_WIDTH_4X)
#define CNUAS_SMA_SPEED_SUP	(IB_SPEED_SDR | IB_SPEED_DDR | IB_SPEED_QDR)
/* Events a Set raises, dispatched after the port lock. */
#define CNUAS_EV_LID		BIT(0)
#define CNUAS_EV_SM		BIT(1)
#define CNUAS_EV_ACTIVE		BIT(2)
#define CNUAS_EV_ERR		BIT(3)
#define CNUAS_EV_REREG		BIT(4)
#define CNUAS_EV_PKEY		BIT(5)
#define CNUAS_EV_GID		BIT(6)

static void cnuas_sma_events(struct cnuas_ib_dev *cdev, u32 ev)
{
	if (ev & CNUAS_EV_GID)
		cnuas_ib_port_event(cdev, IB_EVENT_GID_CHANGE);
	if (ev & CNUAS_EV_LID)
		cnuas_ib_port_event(cdev, IB_EVENT_LID_CHANGE);
	if (ev & CNUAS_EV_SM)
		cnuas_ib_port_event(cdev, IB_EVENT_SM_CHANGE);
	if (ev & CNUAS_EV_PKEY)
		cnuas_ib_port_event(cdev, IB_EVENT_PKEY_CHANGE);
	if (ev & CNUAS_EV_ERR)
		cnuas_ib_port_event(cdev, IB_EVENT_PORT_ERR);
	if (ev & CNUAS_EV_ACTIVE)
		cnuas_ib_port_event(cdev, IB_EVENT_PORT_ACTIVE);
	if (ev & CNUAS_EV_REREG)
		cnuas_ib_port_event(cdev, IB_EVENT_CLIENT_REREGISTER);
}

static void cnuas_sma_invalid(struct ib_smp *smp)
{
	smp->status |= cpu_to_be16(IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE);
}

static void cnuas_sma_node_info(struct cnuas_ib_dev *cdev, struct ib_smp *smp,
				u32 port)
{
	struct ib_node_info *ni = (struct ib_node_info *)smp->data;
	__be64 guid = cnuas_ib_port_guid(cdev);

	ni->base_version = IB_MGMT_BASE_VERSION;
	ni->class_version = 1;
	ni->node_type = RDMA_NODE_IB_CA;
	ni->num_ports = CNUAS_IB_NUM_PORTS;
	ni->sys_guid = guid;
	ni->node_guid = guid;
	ni->port_guid = guid;
	ni->partition_cap = cpu_to_be16(CNUAS_IB_PKEY_TBL_LEN_IB);
	ni->device_id = cpu_to_be16(CNUAS_IB_VENDOR_PART_ID);
	ni->revision = cpu_to_be32(CNUAS_IB_HW_VER);
	ni->local_port_num = port;
	/* The 24-bit vendor ID: the PCI vendor's number, as query_device's. */
	ni->vendor_id[0] = (CNUAS_IB_VENDOR_ID >> 16) & 0xff;
	ni->vendor_id[1] = (CNUAS_IB_VENDOR_ID >> 8) & 0xff;
	ni->vendor_id[2] = CNUAS_IB_VENDOR_ID & 0xff;
}

/* PortInfo as the port is now (under the port lock). */
static void cnuas_sma_port_info_get(struct cnuas_ib_dev *cdev,
				    struct ib_smp *smp, u32 port,
				    bool show_mkey)
{
	struct ib_port_info *pi = (struct ib_port_info *)smp->data;
	struct cnuas_ib_port *p = &cdev->port;
	u8 speed, width;

	cnuas_ib_port_speed(cdev, &speed, &width);
	memset(smp->data, 0, sizeof(smp->data));
	/* Protection 1 hides the key from a Get without it (IBA 14.2.4.1). */
	pi->mkey = show_mkey || p->mkeyprot != 1 ? cpu_to_be64(p->mkey) : 0;
	pi->gid_prefix = p->gid_prefix;
	pi->lid = cpu_to_be16(p->lid);
	pi->sm_lid = cpu_to_be16(p->sm_lid);
	pi->cap_mask = cpu_to_be32(cnuas_ib_port_cap_mask(cdev));
	pi->mkey_lease_period = cpu_to_be16(p->mkey_lease_period);
	pi->local_port_num = port;
	pi->link_width_enabled = p->link_width_enabled;
	pi->link_width_supported = CNUAS_SMA_WIDTH_SUP;
	pi->link_width_active = width;
	pi->linkspeed_portstate = CNUAS_SMA_SPEED_SUP << 4 | p->state;
	pi->portphysstate_linkdown = p->phys_state << 4 |
				     p->link_down_default;
	pi->mkeyprot_resv_lmc = p->mkeyprot << 6 | p->lmc;
	pi->linkspeedactive_enabled = speed << 4 | p->link_speed_enabled;
	pi->neighbormtu_mastersmsl = (p->neighbor_mtu ?:
				      cnuas_ib_active_mtu(cdev)) << 4 |
				     p->sm_sl;
	pi->vlcap_inittype = CNUAS_IB_VL_CAP << 4;
	pi->vl_high_limit = p->vl_high_limit;
	pi->vl_arb_high_cap = CNUAS_IB_VLARB_CAP;
	pi->vl_arb_low_cap = CNUAS_IB_VLARB_CAP;
	pi->inittypereply_mtucap = cnuas_ib_active_mtu(cdev);
	pi->vlstallcnt_hoqlife = p->hoq_life;
	pi->operationalvl_pei_peo_fpi_fpo = p->op_vls << 4;
	pi->mkey_violations = cpu_to_be16(p->mkey_violations);
	pi->pkey_violations = cpu_to_be16(p->pkey_violations);
	pi->qkey_violations = cpu_to_be16(p->qkey_violations);
	pi->guid_cap = CNUAS_IB_GID_TBL_LEN_IB;
	pi->clientrereg_resv_subnetto = p->subnet_timeout & 0x1f;
	pi->resv_resptimevalue = CNUAS_IB_RESP_TIME;
	pi->localphyerrors_overrunerrors = p->phy_err_thresholds;
}

/*
 * SubnSet(PortInfo), under the port lock: checks every field first and
 * changes nothing if one is invalid; returns the events to raise.
 */
static u32 cnuas_sma_port_info_set(struct cnuas_ib_dev *cdev,
				   struct ib_smp *smp)
{
	const struct ib_port_info *pi = (const struct ib_port_info *)smp->data;
	struct cnuas_ib_port *p = &cdev->port;
	u16 lid = be16_to_cpu(pi->lid), sm_lid = be16_to_cpu(pi->sm_lid);
	u8 lmc = pi->mkeyprot_resv_lmc & 0x7;
	u8 state = pi->linkspeed_portstate & 0xf;
	u8 phys = pi->portphysstate_linkdown >> 4;
	u8 down_default = pi->portphysstate_linkdown & 0xf;
	u8 lse = pi->linkspeedactive_enabled & 0xf;
	u8 lwe = pi->link_width_enabled;
	u8 mtu = pi->neighbormtu_mastersmsl >> 4;
	u8 sm_sl = pi->neighbormtu_mastersmsl & 0xf;
	u8 vls = pi->operationalvl_pei_peo_fpi_fpo >> 4;
	u8 old = p->state;
	u32 ev = 0;

	if (lse == 0xf)
		lse = CNUAS_SMA_SPEED_SUP;
	if (lwe == 0xff)
		lwe = CNUAS_SMA_WIDTH_SUP;
	if (lid == CNUAS_LID_RESERVED || lid > CNUAS_LID_UCAST_MAX ||
	    sm_lid == CNUAS_LID_RESERVED || sm_lid > CNUAS_LID_UCAST_MAX ||
	    (lse & ~CNUAS_SMA_SPEED_SUP) || (lwe & ~CNUAS_SMA_WIDTH_SUP) ||
	    mtu < IB_MTU_256 || mtu > cnuas_ib_active_mtu(cdev) ||
	    vls > CNUAS_IB_VL_CAP ||
	    (phys && phys != IB_PORT_PHYS_STATE_POLLING) ||
	    down_default > IB_PORT_PHYS_STATE_POLLING)
		goto invalid;
	/* PortState: NOP, Down, or one step on from Init (IBA 7.2). */
	switch (state) {
	case IB_PORT_NOP:
	case IB_PORT_DOWN:
		break;
	case IB_PORT_ARMED:
		if (old != IB_PORT_INIT && old != IB_PORT_ARMED)
			goto invalid;
		break;
	case IB_PORT_ACTIVE:
		if (old != IB_PORT_ARMED && old != IB_PORT_ACTIVE)
			goto invalid;
		break;
	default:
		goto invalid;
	}

	p->mkey = be64_to_cpu(pi->mkey);
	p->mkeyprot = pi->mkeyprot_resv_lmc >> 6;
	p->mkey_lease_period = be16_to_cpu(pi->mkey_lease_period);
	if (pi->gid_prefix != p->gid_prefix) {
		p->gid_prefix = pi->gid_prefix;
		ev |= CNUAS_EV_GID;
	}
	if (lid != p->lid || lmc != p->lmc) {
		WRITE_ONCE(p->lid, lid);
		WRITE_ONCE(p->lmc, lmc);
		ev |= CNUAS_EV_LID;
	}
	if (sm_lid != p->sm_lid || sm_sl != p->sm_sl) {
		p->sm_lid = sm_lid;
		p->sm_sl = sm_sl;
		ev |= CNUAS_EV_SM;
	}
	if (lse)
		p->link_speed_enabled = lse;
	if (lwe)
		p->link_width_enabled = lwe;
	if (down_default)
		p->link_down_default = down_default;
	p->neighbor_mtu = mtu;
	if (vls)
		p->op_vls = vls;
	p->vl_high_limit = pi->vl_high_limit;
	p->hoq_life = pi->vlstallcnt_hoqlife;
	p->phy_err_thresholds = pi->localphyerrors_overrunerrors;
	p->subnet_timeout = pi->clientrereg_resv_subnetto & 0x1f;
	/* The counters can only be cleared. */
	if (!pi->mkey_violations)
		p->mkey_violations = 0;
	if (!pi->pkey_violations)
		p->pkey_violations = 0;
	if (!pi->qkey_violations)
		p->qkey_violations = 0;
	if (pi->clientrereg_resv_subnetto & 0x80)
		ev |= CNUAS_EV_REREG;

	/* Down (or Polling) retrains a connected link back to Init. */
	if (state == IB_PORT_DOWN || phys == IB_PORT_PHYS_STATE_POLLING) {
		if (p->link_up)
			WRITE_ONCE(p->state, IB_PORT_INIT);
		else
			WRITE_ONCE(p->state, IB_PORT_DOWN);
		if (old == IB_PORT_ACTIVE)
			ev |= CNUAS_EV_ERR;
	} else if (state != IB_PORT_NOP) {
		WRITE_ONCE(p->state, state);
		if (state == IB_PORT_ACTIVE && old != IB_PORT_ACTIVE)
			ev |= CNUAS_EV_ACTIVE;
	}
	return ev;

invalid:
	cnuas_sma_invalid(smp);
	return 0;
}

/* P_KeyTable block 0 (the only one): 32 P_Keys. */
static u32 cnuas_sma_pkeys(struct cnuas_ib_dev *cdev, struct ib_smp *smp,
			   bool set)
{
	__be16 *tbl = (__be16 *)smp->data;
	struct cnuas_ib_port *p = &cdev->port;
	u32 ev = 0;
	u16 pkey;
	int i;

	if ((be32_to_cpu(smp->attr_mod) & 0xffff) != 0) {
		cnuas_sma_invalid(smp);
		set = false;
	}
	for (i = 0; set && i < CNUAS_IB_PKEY_TBL_LEN_IB; i++) {
		pkey = be16_to_cpu(tbl[i]);
		if (pkey != p->pkeys[i]) {
			WRITE_ONCE(p->pkeys[i], pkey);
			ev |= CNUAS_EV_PKEY;
		}
	}
	memset(smp->data, 0, sizeof(smp->data));
	for (i = 0; i < CNUAS_IB_PKEY_TBL_LEN_IB; i++)
		tbl[i] = cpu_to_be16(p->pkeys[i]);
	return ev;
}

/* SLtoVL: 16 four-bit VLs, SL 0 in the high nibble of byte 0. */
static void cnuas_sma_sl2vl(struct cnuas_ib_dev *cdev, struct ib_smp *smp,
			    bool set)
{
	struct cnuas_ib_port *p = &cdev->port;
	int sl;

	if (smp->attr_mod) {
		cnuas_sma_invalid(smp);
		set = false;
	}
	for (sl = 0; set && sl < CNUAS_IB_NUM_SL; sl++)
		WRITE_ONCE(p->sl2vl[sl],
			   (smp->data[sl / 2] >> (sl & 1 ? 0 : 4)) & 0xf);
	memset(smp->data, 0, sizeof(smp->data));
	for (sl = 0; sl < CNUAS_IB_NUM_SL; sl++)
		smp->data[sl / 2] |= p->sl2vl[sl] << (sl & 1 ? 0 : 4);
}

/*
 * VLArbitration: block 1 is the low-priority table's first 32 entries,
 * block 3 the high-priority one's; the port has CNUAS_IB_VLARB_CAP of
 * each, so blocks 2 and 4 do not exist.
 */
static void cnuas_sma_vlarb(struct cnuas_ib_dev *cdev, struct ib_smp *smp,
			    bool set)
{
	struct cnuas_ib_port *p = &cdev->port;
	u32 block = be32_to_cpu(smp->attr_mod) >> 16;
	u8 (*tbl)[2];
	int i;

	if (block != 1 && block != 3) {
		cnuas_sma_invalid(smp);
		memset(smp->data, 0, sizeof(smp->data));
		return;
	}
	tbl = block == 1 ? p->vlarb_low : p->vlarb_high;
	for (i = 0; set && i < CNUAS_IB_VLARB_CAP; i++) {
		tbl[i][0] = smp->data[2 * i] & 0xf;
		tbl[i][1] = smp->data[2 * i + 1];
	}
	memset(smp->data, 0, sizeof(smp->data));
	for (i = 0; i < CNUAS_IB_VLARB_CAP; i++) {
		smp->data[2 * i] = tbl[i][0];
		smp->data[2 * i + 1] = tbl[i][1];
	}
}

int cnuas_ib_sma(struct cnuas_ib_dev *cdev, struct ib_smp *smp, u32 port,
		 bool mkey_ok)
{
	struct cnuas_ib_port *p = &cdev->port;
	bool set = smp->method == IB_MGMT_METHOD_SET;
	u32 mod = be32_to_cpu(smp->attr_mod);
	unsigned long flags;
	u32 ev = 0;

	switch (smp->attr_id) {
	case IB_SMP_ATTR_NODE_DESC:
		if (set)
			goto unsupported;
		memset(smp->data, 0, sizeof(smp->data));
		memcpy(smp->data, cdev->ibdev.node_desc,
		       min_t(size_t, sizeof(smp->data),
			     IB_DEVICE_NODE_DESC_MAX));
		break;
	case IB_SMP_ATTR_NODE_INFO:
		if (set)
			goto unsupported;
		memset(smp->data, 0, sizeof(smp->data));
		cnuas_sma_node_info(cdev, smp, port);
		break;
	case IB_SMP_ATTR_GUID_INFO:
		/* One GUID, read-only: a Set is answered with the table. */
		memset(smp->data, 0, sizeof(smp->data));
		if (mod)
			cnuas_sma_invalid(smp);
		else
			memcpy(smp->data, &cdev->ibdev.node_guid, 8);
		break;
	case IB_SMP_ATTR_PORT_INFO:
		/* AttrMod: the port, 0 meaning the one it arrived on. */
		if (mod && mod != port) {
			cnuas_sma_invalid(smp);
			set = false;
		}
		spin_lock_irqsave(&p->lock, flags);
		if (set)
			ev = cnuas_sma_port_info_set(cdev, smp);
		cnuas_sma_port_info_get(cdev, smp, port, mkey_ok);
		spin_unlock_irqrestore(&p->lock, flags);
		break;
	case IB_SMP_ATTR_PKEY_TABLE:
		spin_lock_irqsave(&p->lock, flags);
		ev = cnuas_sma_pkeys(cdev, smp, set);
		spin_unlock_irqrestore(&p->lock, flags);
		break;
	case IB_SMP_ATTR_SL_TO_VL_TABLE:
		spin_lock_irqsave(&p->lock, flags);
		cnuas_sma_sl2vl(cdev, smp, set);
		spin_unlock_irqrestore(&p->lock, flags);
		break;
	case IB_SMP_ATTR_VL_ARB_TABLE:
		spin_lock_irqsave(&p->lock, flags);
		cnuas_sma_vlarb(cdev, smp, set);
		spin_unlock_irqrestore(&p->lock, flags);
		break;
	default:
		goto unsupported;
	}
	cnuas_sma_events(cdev, ev);
	if (ev & (CNUAS_EV_LID | CNUAS_EV_SM | CNUAS_EV_ACTIVE | CNUAS_EV_ERR))
		ibdev_dbg(&cdev->ibdev,
			  "SubnSet(PortInfo): LID %u, SM LID %u, state %u\n",
			  p->lid, p->sm_lid, p->state);
	return cnuas_ib_mad_reply(smp);

unsupported:
	smp->status |=
		cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
	return cnuas_ib_mad_reply(smp);
}
