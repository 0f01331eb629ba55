/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The InfiniBand port of an IB-mode device: what the subnet manager
 * configures through the SMA (mad.c, sma.c), the performance counters of
 * the PMA (pma.c), and the few facts the data path asks of them (the
 * helpers at the end). An Ethernet-mode (RoCE) device has the structure
 * too but never uses it: its port is always Active and has no LID.
 *
 * Writers (SubnSet, modify_port, link changes) hold @lock; the data path
 * reads single fields with READ_ONCE() and no lock.
 */
#ifndef CNUAS_IB_PORT_H
#define CNUAS_IB_PORT_H

#include <linux/atomic.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "cnuas_ib_link.h"

struct cnuas_ib_dev;
struct ib_smp;
struct ib_mad;

/* IB mode: one P_Key block, one GUID (the port GUID). */
#define CNUAS_IB_PKEY_TBL_LEN_IB	32
#define CNUAS_IB_SMI_QPN		0
#define CNUAS_IB_NUM_SL			16
/* VLArb entries of each priority the port offers (one block each). */
#define CNUAS_IB_VLARB_CAP		8
/* PortInfo.VLCap and the largest OperationalVLs: VL0 (and VL15). */
#define CNUAS_IB_VL_CAP			1
/*
 * The SMA's traps (trap.c): 256 Bad M_Key, 257 Bad P_Key, 258 Bad Q_Key,
 * 144 Local Changes (the CapabilityMask); their slots in that order.
 */
#define CNUAS_TRAP_FIRST		256
#define CNUAS_TRAP_BAD_MKEY		256
#define CNUAS_TRAP_BAD_PKEY		257
#define CNUAS_TRAP_BAD_QKEY		258
#define CNUAS_TRAP_LOCAL_CHANGES	144
#define CNUAS_TRAP_KINDS		4
/* ClassPortInfo.RespTimeValue and PortInfo.RespTimeValue: 4.096 us * 2^18, ~1 s */
#define CNUAS_IB_RESP_TIME		18

struct cnuas_ib_port {
	spinlock_t lock;		/* writers of everything below */

	/* Link */
	u8 state;			/* enum ib_port_state */
	u8 phys_state;			/* enum ib_port_phys_state */
	bool link_up;			/* as cnuas_net last said */
	u8 link_downed;			/* PMA LinkDownedCounter */

	/* Set by the subnet manager (SubnSet(PortInfo) and tables) */
	u64 mkey;			/* host order */
	u8 mkeyprot;
	u16 mkey_lease_period;		/* seconds, 0: never expires */
	unsigned long mkey_lease_end;	/* jiffies, 0: no lease running */
	u16 mkey_violations;
	u16 pkey_violations;
	u16 qkey_violations;
	__be64 gid_prefix;
	u16 lid;
	u8 lmc;
	u16 sm_lid;
	u8 sm_sl;
	u8 subnet_timeout;
	u8 neighbor_mtu;		/* enum ib_mtu */
	u8 op_vls;
	u8 link_width_enabled;
	u8 link_speed_enabled;
	u8 vl_high_limit;
	u8 hoq_life;			/* VLStallCount:3 | HOQLife:5 */
	u8 phy_err_thresholds;		/* LocalPhyErrors:4 | Overrun:4 */
	u8 link_down_default;		/* LinkDownDefaultState */
	u32 cap_mask;			/* modify_port's IB_PORT_* bits */
	u16 pkeys[CNUAS_IB_PKEY_TBL_LEN_IB];
	u8 sl2vl[CNUAS_IB_NUM_SL];
	u8 vlarb_low[CNUAS_IB_VLARB_CAP][2];	/* VL, weight */
	u8 vlarb_high[CNUAS_IB_VLARB_CAP][2];

	/* PMA: bytes on the link (packets: the transport's counters) */
	atomic64_t tx_bytes;
	atomic64_t rx_bytes;
	/* Values at the last PMA Set(PortCounters*): what reads subtract. */
	u64 base_tx_bytes, base_rx_bytes, base_tx_pkts, base_rx_pkts;
	u64 base_mc_rx_pkts, base_rcv_err, base_xmit_discards;
	u8 base_link_downed;

	/* Traps (trap.c); the bits under @lock, one per trap number */
	struct ib_mad_agent *trap_agent;	/* QP0 sender; NULL: none */
	struct work_struct trap_work;
	unsigned long trap_pending;	/* notices the work item is to send */
	unsigned long trap_busy;	/* pending, or sent and not repressed */
	struct ib_mad_notice_attr trap_notice[CNUAS_TRAP_KINDS];
	atomic_t trap_tid;
};

struct ib_device_modify;
struct ib_grh;
struct ib_port_modify;

/* port.c */
void cnuas_ib_port_init(struct cnuas_ib_dev *cdev);
/* After ib_register_device(): IB-mode node description, first state. */
void cnuas_ib_port_registered(struct cnuas_ib_dev *cdev);
/* cnuas_net's link went up or down (process context). */
void cnuas_ib_port_link(struct cnuas_ib_dev *cdev, bool up);
int cnuas_ib_modify_port(struct ib_device *ibdev, u32 port, int mask,
			 struct ib_port_modify *props);
int cnuas_ib_modify_device(struct ib_device *ibdev, int mask,
			   struct ib_device_modify *props);
void cnuas_ib_port_query(struct cnuas_ib_dev *cdev, struct ib_port_attr *attr);
/* The IB-mode PortInfo speed and width (never below 10 Gb/s, see port.c). */
void cnuas_ib_port_speed(struct cnuas_ib_dev *cdev, u8 *speed, u8 *width);
/* Every IB_PORT_* capability bit the port shows now. */
u32 cnuas_ib_port_cap_mask(struct cnuas_ib_dev *cdev);
/* The port GUID (network order): NodeGUID = PortGUID = SysImageGUID. */
__be64 cnuas_ib_port_guid(struct cnuas_ib_dev *cdev);
void cnuas_ib_port_event(struct cnuas_ib_dev *cdev, enum ib_event_type type);
/* A packet refused for its P_Key or Q_Key: PortInfo's counters (IBA 14.2.5.6). */
void cnuas_ib_port_key_violation(struct cnuas_ib_dev *cdev, bool pkey);

/* trap.c */
struct cnuas_ib_rxp;
void cnuas_ib_trap_init(struct cnuas_ib_dev *cdev);
/* After ib_register_device() (the MAD layer's QP0 exists), and before unregistering. */
int cnuas_ib_trap_start(struct cnuas_ib_dev *cdev);
void cnuas_ib_trap_stop(struct cnuas_ib_dev *cdev);
/* After ib_unregister_device(). */
void cnuas_ib_trap_cleanup(struct cnuas_ib_dev *cdev);
/* The port's CapabilityMask changed (modify_port): Trap 144 to the SM. */
void cnuas_ib_trap_caps(struct cnuas_ib_dev *cdev);
/* Trap 257 (@pkey) or 258 for a packet refused for @key; @src_qp: its sender's QP. */
void cnuas_ib_trap_key(struct cnuas_ib_dev *cdev, bool pkey,
		       const struct cnuas_ib_rxp *p, u32 key, u32 src_qp);
/* Trap 256: @smp failed the M_Key check. */
void cnuas_ib_trap_mkey(struct cnuas_ib_dev *cdev, const struct ib_smp *smp,
			const struct ib_wc *in_wc);

/* mad.c */
int cnuas_ib_process_mad(struct ib_device *ibdev, int mad_flags, u32 port,
			 const struct ib_wc *in_wc, const struct ib_grh *in_grh,
			 const struct ib_mad *in, struct ib_mad *out,
			 size_t *out_size, u16 *out_pkey_index);
/* The GetResp of an SMP (the direction bit on directed-route ones). */
int cnuas_ib_mad_reply(struct ib_smp *smp);
/* sma.c: a SubnGet/SubnSet the M_Key check let through; returns the MAD result. */
int cnuas_ib_sma(struct cnuas_ib_dev *cdev, struct ib_smp *smp, u32 port,
		 bool mkey_ok);
/* pma.c */
int cnuas_ib_pma(struct cnuas_ib_dev *cdev, struct ib_mad *mad, u32 port);

/*
 * PMA byte counters: every frame cnuas_ib puts on the link or takes from
 * it (LRH or Ethernet header through the last CRC).
 */
static inline void cnuas_ib_port_count_tx(struct cnuas_ib_port *p, u32 len)
{
	atomic64_add(len, &p->tx_bytes);
}

static inline void cnuas_ib_port_count_rx(struct cnuas_ib_port *p, u32 len)
{
	atomic64_add(len, &p->rx_bytes);
}

/*
 * ---- What the IB-mode data path asks of the port ----
 *
 * LIDs are host order. A QP0 (IB_QPT_SMI) packet always travels on VL15;
 * every other one on the VL its SL maps to (SLtoVL). QP0 sends with the
 * permissive SLID while the port has no LID or to the permissive DLID
 * (directed route, IBA 14.2.2); otherwise the SLID is the port's base LID
 * with the path bits of the address vector.
 */
static inline u16 cnuas_ib_port_lid(const struct cnuas_ib_port *p)
{
	return READ_ONCE(p->lid);
}

static inline u8 cnuas_ib_port_lmc(const struct cnuas_ib_port *p)
{
	return READ_ONCE(p->lmc);
}

static inline u8 cnuas_ib_port_state(const struct cnuas_ib_port *p)
{
	return READ_ONCE(p->state);
}

static inline u16 cnuas_ib_port_pkey(const struct cnuas_ib_port *p,
				     u16 index)
{
	return index < CNUAS_IB_PKEY_TBL_LEN_IB ? READ_ONCE(p->pkeys[index]) :
						  0;
}

/*
 * IBA 10.9.3: two P_Keys match when their low 15 bits are equal and not
 * 0 (an invalid P_Key matches nothing), and one of them at least is a
 * full member's (two limited members may not talk).
 */
static inline bool cnuas_ib_pkey_match(u16 a, u16 b)
{
	return (a & 0x7fff) && !((a ^ b) & 0x7fff) && ((a | b) & 0x8000);
}

/* The VL of a packet: VL15 for QP0, else SLtoVL[@sl]. */
static inline u8 cnuas_ib_port_vl(const struct cnuas_ib_port *p,
				  enum ib_qp_type type, u8 sl)
{
	if (type == IB_QPT_SMI)
		return CNUAS_VL15;
	return READ_ONCE(p->sl2vl[sl & 0xf]) & 0xf;
}

/* The SLID of a packet to @dlid with @path_bits (the AV's src_path_bits). */
static inline u16 cnuas_ib_port_slid(const struct cnuas_ib_port *p,
				     enum ib_qp_type type, u16 dlid,
				     u8 path_bits)
{
	u16 lid = cnuas_ib_port_lid(p);
	u8 lmc = cnuas_ib_port_lmc(p);

	if (type == IB_QPT_SMI &&
	    (lid == CNUAS_LID_RESERVED || dlid == CNUAS_LID_PERMISSIVE))
		return CNUAS_LID_PERMISSIVE;
	return lid | (path_bits & ((1u << lmc) - 1));
}

/*
 * A port sends VL15 (subnet management) whenever its physical link is
 * up, data VLs only when Active (IBA 7.2: Armed receives but does not
 * send data packets).
 */
static inline bool cnuas_ib_port_can_send(const struct cnuas_ib_port *p,
					  u8 vl)
{
	if (vl == CNUAS_VL15)
		return READ_ONCE(p->phys_state) == IB_PORT_PHYS_STATE_LINK_UP;
	return cnuas_ib_port_state(p) == IB_PORT_ACTIVE;
}

/*
 * Whether a packet to @dlid is for this port: our LID range (base LID and
 * its 2^LMC path-bit aliases), or the permissive LID, which only VL15
 * (QP0) traffic may use. Multicast DLIDs are the groups' (mcast.c).
 */
static inline bool cnuas_ib_port_dlid_ours(const struct cnuas_ib_port *p,
					   u16 dlid, u8 vl)
{
	u16 lid = cnuas_ib_port_lid(p);
	u8 lmc = cnuas_ib_port_lmc(p);

	if (dlid == CNUAS_LID_PERMISSIVE)
		return vl == CNUAS_VL15;
	return lid != CNUAS_LID_RESERVED &&
	       (dlid & ~((1u << lmc) - 1)) == lid;
}

#endif /* CNUAS_IB_PORT_H */
