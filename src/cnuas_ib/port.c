// SPDX-License-Identifier: GPL-2.0
/*
 * The InfiniBand port of an IB-mode device, as a real HCA's: the physical
 * link follows cnuas_net's link (LinkUp, else Polling), the logical state
 * is Down without a link, Init once it is up, and only the subnet manager
 * moves it on to Armed and Active (sma.c). modify_port (issm, ib_cm),
 * modify_device (the node description) and the IB half of query_port.
 */
#include <linux/jiffies.h>
#include <linux/utsname.h>
#include <rdma/ib_mad.h>

#include "cnuas_ib.h"

#define CNUAS_IB_DEFAULT_GID_PREFIX	0xfe80000000000000ULL
/* Capabilities every IB-mode port has; modify_port adds IB_PORT_SM etc. */
#define CNUAS_IB_PORT_BASE_CAPS		(IB_PORT_SYS_IMAGE_GUID_SUP | \
					 IB_PORT_CLIENT_REG_SUP | \
					 IB_PORT_TRAP_SUP)
/* What modify_port may set or clear: the bits ib_core's users own. */
#define CNUAS_IB_PORT_MODIFY_CAPS	(IB_PORT_SM | IB_PORT_SM_DISABLED | \
					 IB_PORT_CM_SUP | \
					 IB_PORT_SNMP_TUNNEL_SUP | \
					 IB_PORT_DEVICE_MGMT_SUP | \
					 IB_PORT_VENDOR_CLASS_SUP | \
					 IB_PORT_BOOT_MGMT_SUP)

void cnuas_ib_port_init(struct cnuas_ib_dev *cdev)
{
	struct cnuas_ib_port *p = &cdev->port;

	memset(p, 0, sizeof(*p));
	spin_lock_init(&p->lock);
	cnuas_ib_trap_init(cdev);
	p->state = IB_PORT_DOWN;
	p->phys_state = IB_PORT_PHYS_STATE_POLLING;
	p->link_down_default = IB_PORT_PHYS_STATE_POLLING;
	p->gid_prefix = cpu_to_be64(CNUAS_IB_DEFAULT_GID_PREFIX);
	p->subnet_timeout = 18;
	p->op_vls = CNUAS_IB_VL_CAP;
	p->link_width_enabled = IB_WIDTH_1X | IB_WIDTH_4X;
	p->link_speed_enabled = IB_SPEED_SDR | IB_SPEED_DDR | IB_SPEED_QDR;
	p->pkeys[0] = CNUAS_IB_DEFAULT_PKEY;
	p->vlarb_low[0][1] = 1;		/* VL0, weight 1 */
	atomic64_set(&p->tx_bytes, 0);
	atomic64_set(&p->rx_bytes, 0);
}

__be64 cnuas_ib_port_guid(struct cnuas_ib_dev *cdev)
{
	return cdev->ibdev.node_guid;
}

void cnuas_ib_port_event(struct cnuas_ib_dev *cdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &cdev->ibdev,
		.element.port_num = 1,
		.event = type,
	};

	ib_dispatch_event(&ev);
}

void cnuas_ib_port_key_violation(struct cnuas_ib_dev *cdev, bool pkey)
{
	struct cnuas_ib_port *p = &cdev->port;
	unsigned long flags;
	u16 *c = pkey ? &p->pkey_violations : &p->qkey_violations;

	spin_lock_irqsave(&p->lock, flags);
	if (*c != U16_MAX)	/* PortInfo's counters stop at all ones */
		(*c)++;
	spin_unlock_irqrestore(&p->lock, flags);
}

/*
 * The node description real HCAs carry ("host mlx5_0", as rdma-ndd sets
 * it): the host name and the device's name. Only in IB mode, where the
 * subnet manager reads it; user space may change it through sysfs.
 */
void cnuas_ib_port_registered(struct cnuas_ib_dev *cdev)
{
	struct ib_device *ibdev = &cdev->ibdev;

	if (cnuas_ib_is_eth(cdev))
		return;
	snprintf(ibdev->node_desc, sizeof(ibdev->node_desc), "%s %s",
		 init_utsname()->nodename, dev_name(&ibdev->dev));
}

void cnuas_ib_port_link(struct cnuas_ib_dev *cdev, bool up)
{
	struct cnuas_ib_port *p = &cdev->port;
	unsigned long flags;
	bool was_active;

	spin_lock_irqsave(&p->lock, flags);
	if (p->link_up == up) {
		spin_unlock_irqrestore(&p->lock, flags);
		return;
	}
	was_active = p->state == IB_PORT_ACTIVE;
	p->link_up = up;
	if (up) {
		/* Trained: the subnet manager takes it from Init. */
		WRITE_ONCE(p->phys_state, IB_PORT_PHYS_STATE_LINK_UP);
		WRITE_ONCE(p->state, IB_PORT_INIT);
	} else {
		WRITE_ONCE(p->phys_state, IB_PORT_PHYS_STATE_POLLING);
		WRITE_ONCE(p->state, IB_PORT_DOWN);
		if (p->link_downed < U8_MAX)
			p->link_downed++;
	}
	spin_unlock_irqrestore(&p->lock, flags);
	if (was_active)
		cnuas_ib_port_event(cdev, IB_EVENT_PORT_ERR);
	if (device_is_registered(&cdev->ibdev.dev))
		ibdev_info(&cdev->ibdev, "port 1 link %s, state %s\n",
			   up ? "up" : "down", up ? "INIT" : "DOWN");
}

u32 cnuas_ib_port_cap_mask(struct cnuas_ib_dev *cdev)
{
	return CNUAS_IB_PORT_BASE_CAPS | READ_ONCE(cdev->port.cap_mask);
}

/*
 * 4X lanes at the fastest of SDR, DDR and QDR the device's link speed
 * carries, but never below 4X SDR (10 Gb/s): OpenSM refuses to let slower
 * ports join the IPoIB broadcast group it creates at 10 Gb/s.
 */
void cnuas_ib_port_speed(struct cnuas_ib_dev *cdev, u8 *speed, u8 *width)
{
	u32 lane = cnuas_net_aux_link_speed(cdev->adev) / 4;

	*width = IB_WIDTH_4X;
	if (lane >= 10000)
		*speed = IB_SPEED_QDR;
	else if (lane >= 5000)
		*speed = IB_SPEED_DDR;
	else
		*speed = IB_SPEED_SDR;
}

void cnuas_ib_port_query(struct cnuas_ib_dev *cdev, struct ib_port_attr *attr)
{
	struct cnuas_ib_port *p = &cdev->port;
	enum ib_mtu mtu = cnuas_ib_active_mtu(cdev);
	unsigned long flags;
	u8 speed, width;

	cnuas_ib_port_speed(cdev, &speed, &width);
	spin_lock_irqsave(&p->lock, flags);
	attr->state = p->state;
	attr->phys_state = p->phys_state;
	attr->lid = p->lid;
	attr->lmc = p->lmc;
	attr->sm_lid = p->sm_lid;
	attr->sm_sl = p->sm_sl;
	attr->subnet_timeout = p->subnet_timeout;
	attr->bad_pkey_cntr = p->pkey_violations;
	attr->qkey_viol_cntr = p->qkey_violations;
	if (p->neighbor_mtu && p->neighbor_mtu < mtu)
		mtu = p->neighbor_mtu;
	spin_unlock_irqrestore(&p->lock, flags);
	attr->active_mtu = mtu;
	attr->max_mtu = IB_MTU_4096;
	attr->active_speed = speed;
	attr->active_width = width;
	attr->port_cap_flags = cnuas_ib_port_cap_mask(cdev);
	attr->gid_tbl_len = CNUAS_IB_GID_TBL_LEN_IB;
	attr->pkey_tbl_len = CNUAS_IB_PKEY_TBL_LEN_IB;
	attr->max_msg_sz = CNUAS_IB_MAX_MSG_SZ;
	attr->max_vl_num = CNUAS_IB_VL_CAP;
	attr->ip_gids = false;
}

/*
 * ib_umad sets IB_PORT_SM while an SM holds issm open, ib_cm sets
 * IB_PORT_CM_SUP while loaded; each clears its bit again.
 */
int cnuas_ib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			 struct ib_port_modify *props)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibdev);
	struct cnuas_ib_port *p = &cdev->port;
	unsigned long flags;
	bool changed;
	u32 old;

	if (port != 1)
		return -EINVAL;
	if (mask & ~(IB_PORT_INIT_TYPE | IB_PORT_RESET_QKEY_CNTR))
		return -EOPNOTSUPP;
	if ((props->set_port_cap_mask | props->clr_port_cap_mask) &
	    ~CNUAS_IB_PORT_MODIFY_CAPS)
		return -EINVAL;
	spin_lock_irqsave(&p->lock, flags);
	old = p->cap_mask;
	p->cap_mask |= props->set_port_cap_mask;
	p->cap_mask &= ~props->clr_port_cap_mask;
	changed = p->cap_mask != old;
	if (mask & IB_PORT_RESET_QKEY_CNTR)
		p->qkey_violations = 0;
	spin_unlock_irqrestore(&p->lock, flags);
	/* The SM caches PortInfo: tell it (no trap over RoCE, nor unless Active). */
	if (changed)
		cnuas_ib_trap_caps(cdev);
	return 0;
}

/* sysfs node_desc (rdma-ndd writes "host device" there). */
int cnuas_ib_modify_device(struct ib_device *ibdev, int mask,
			   struct ib_device_modify *props)
{
	if (mask & ~IB_DEVICE_MODIFY_NODE_DESC)
		return -EOPNOTSUPP;
	if (mask & IB_DEVICE_MODIFY_NODE_DESC)
		memcpy(ibdev->node_desc, props->node_desc,
		       IB_DEVICE_NODE_DESC_MAX);
	return 0;
}
