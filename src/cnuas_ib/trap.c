// SPDX-License-Identifier: GPL-2.0
/*
 * The SMA's traps (IBA 13.4.9, 14.2.5.1 Notice): an IB-mode port tells
 * the master SM of a Bad M_Key (256), Bad P_Key (257) or Bad Q_Key (258),
 * and of a new CapabilityMask (144, Local Changes: an SM learns at once
 * that ib_srpt set IsDeviceManagementSupported, say) with a SubnTrap()
 * on QP0 to PortInfo.MasterSMLID, as a real HCA's firmware does.
 * ib_core's MAD layer sends it through an agent of our own and resends
 * it until the SM's TrapRepress (same TID) comes back (mad.c lets a
 * TrapRepress through to that agent).
 *
 * One trap of each number is in flight at a time; a violation while its
 * trap is still unrepressed is only counted (PortInfo's counters), so a
 * flood of bad packets cannot flood the SM. Violations are found in
 * softirq (P_Key, Q_Key) or by the SMA (M_Key); the notice is built
 * there and sent from a work item, since creating an AH and a send
 * buffer may sleep. A trap number's busy bit makes its notice the
 * finder's to fill, then the work item's, until the trap ends.
 */
#include <linux/workqueue.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "cnuas_ib.h"
#include "wire.h"

#define CNUAS_TRAP_RETRIES	3

/* A trap number's slot in the port's notices and bits (port.h). */
static unsigned int cnuas_trap_slot(u16 num)
{
	return num == CNUAS_TRAP_LOCAL_CHANGES ? CNUAS_TRAP_KINDS - 1 :
						 num - CNUAS_TRAP_FIRST;
}

static void cnuas_trap_done(struct cnuas_ib_dev *cdev, unsigned int i)
{
	struct cnuas_ib_port *p = &cdev->port;
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	p->trap_busy &= ~BIT(i);
	spin_unlock_irqrestore(&p->lock, flags);
}

static void cnuas_trap_send_handler(struct ib_mad_agent *agent,
				    struct ib_mad_send_wc *wc)
{
	struct ib_mad_send_buf *send = wc->send_buf;
	struct cnuas_ib_dev *cdev = agent->context;
	unsigned int i = (uintptr_t)send->context[0];

	if (wc->status == IB_WC_SUCCESS)
		cnuas_ib_stat_inc(cdev, CNUAS_STAT_TRAPS_REPRESSED);
	else
		ibdev_dbg(&cdev->ibdev, "trap %u: not repressed (status %d)\n",
			  be16_to_cpu(cdev->port.trap_notice[i].trap_num),
			  wc->status);
	rdma_destroy_ah(send->ah, RDMA_DESTROY_AH_SLEEPABLE);
	ib_free_send_mad(send);
	cnuas_trap_done(cdev, i);
}

/* The TrapRepress, matched to its trap by the MAD layer: nothing to keep. */
static void cnuas_trap_recv_handler(struct ib_mad_agent *agent,
				    struct ib_mad_send_buf *send,
				    struct ib_mad_recv_wc *wc)
{
	ib_free_recv_mad(wc);
}

/* Send trap @i's notice to the master SM; false if it cannot go now. */
static bool cnuas_trap_send(struct cnuas_ib_dev *cdev, struct ib_mad_agent *agent,
			    unsigned int i)
{
	struct cnuas_ib_port *p = &cdev->port;
	struct rdma_ah_attr attr = {};
	struct ib_mad_send_buf *send;
	struct ib_smp *smp;
	struct ib_ah *ah;
	unsigned long flags;
	u16 sm_lid;
	u64 mkey;
	u8 sm_sl, timeout;

	spin_lock_irqsave(&p->lock, flags);
	sm_lid = p->sm_lid;
	sm_sl = p->sm_sl;
	mkey = p->mkey;
	timeout = p->subnet_timeout;
	spin_unlock_irqrestore(&p->lock, flags);
	if (!sm_lid || sm_lid == CNUAS_LID_PERMISSIVE ||
	    cnuas_ib_port_state(p) != IB_PORT_ACTIVE)
		return false;

	attr.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_dlid(&attr, sm_lid);
	rdma_ah_set_sl(&attr, sm_sl);
	rdma_ah_set_port_num(&attr, 1);
	ah = rdma_create_ah(agent->qp->pd, &attr, RDMA_CREATE_AH_SLEEPABLE);
	if (IS_ERR(ah))
		return false;
	send = ib_create_send_mad(agent, 0, 0, false, IB_MGMT_MAD_HDR,
				  IB_MGMT_MAD_DATA, GFP_KERNEL,
				  IB_MGMT_BASE_VERSION);
	if (IS_ERR(send)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		return false;
	}
	smp = send->mad;
	smp->base_version = IB_MGMT_BASE_VERSION;
	smp->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	smp->class_version = 1;
	smp->method = IB_MGMT_METHOD_TRAP;
	/* The MAD layer finds our agent by the TID's high half. */
	smp->tid = cpu_to_be64(((u64)agent->hi_tid << 32) |
			       (u32)atomic_inc_return(&p->trap_tid));
	smp->attr_id = IB_SMP_ATTR_NOTICE;
	smp->mkey = cpu_to_be64(mkey);
	memcpy(smp->data, &p->trap_notice[i], sizeof(p->trap_notice[i]));

	send->ah = ah;
	send->context[0] = (void *)(uintptr_t)i;
	/* Resent every 4.096 us * 2^SubnetTimeout, at least 100 ms. */
	send->timeout_ms = max_t(u32, 100, (4096ULL << min_t(u8, timeout, 20)) /
				 NSEC_PER_MSEC);
	send->retries = CNUAS_TRAP_RETRIES;
	if (ib_post_send_mad(send, NULL)) {
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
		ib_free_send_mad(send);
		return false;
	}
	cnuas_ib_stat_inc(cdev, CNUAS_STAT_TRAPS_SENT);
	return true;
}

static void cnuas_trap_work(struct work_struct *work)
{
	struct cnuas_ib_dev *cdev = container_of(work, struct cnuas_ib_dev,
						 port.trap_work);
	struct cnuas_ib_port *p = &cdev->port;
	struct ib_mad_agent *agent = READ_ONCE(p->trap_agent);
	unsigned long flags, pending;
	unsigned int i;

	spin_lock_irqsave(&p->lock, flags);
	pending = p->trap_pending;
	p->trap_pending = 0;
	spin_unlock_irqrestore(&p->lock, flags);

	for_each_set_bit(i, &pending, CNUAS_TRAP_KINDS) {
		if (!agent || !cnuas_trap_send(cdev, agent, i))
			cnuas_trap_done(cdev, i);
	}
}

/*
 * Claim trap @num's slot: its notice, ours to fill until
 * cnuas_trap_queue(), or NULL when traps are off or one of that number
 * is still in flight.
 */
static struct ib_mad_notice_attr *cnuas_trap_claim(struct cnuas_ib_dev *cdev,
						   u16 num)
{
	struct cnuas_ib_port *p = &cdev->port;
	unsigned int i = cnuas_trap_slot(num);
	struct ib_mad_notice_attr *n;
	unsigned long flags;
	bool busy;

	if (cnuas_ib_is_eth(cdev) || !READ_ONCE(p->trap_agent))
		return NULL;
	spin_lock_irqsave(&p->lock, flags);
	busy = p->trap_busy & BIT(i);
	p->trap_busy |= BIT(i);
	spin_unlock_irqrestore(&p->lock, flags);
	if (busy)
		return NULL;
	n = &p->trap_notice[i];
	memset(n, 0, sizeof(*n));
	n->generic_type = num == CNUAS_TRAP_LOCAL_CHANGES ?
			  IB_NOTICE_TYPE_INFO : IB_NOTICE_TYPE_SECURITY;
	n->prod_type_lsb = IB_NOTICE_PROD_CA;
	n->trap_num = cpu_to_be16(num);
	n->issuer_lid = cpu_to_be16(cnuas_ib_port_lid(p));
	return n;
}

static void cnuas_trap_queue(struct cnuas_ib_dev *cdev, u16 num)
{
	struct cnuas_ib_port *p = &cdev->port;
	unsigned long flags;

	spin_lock_irqsave(&p->lock, flags);
	p->trap_pending |= BIT(cnuas_trap_slot(num));
	spin_unlock_irqrestore(&p->lock, flags);
	schedule_work(&p->trap_work);
}

/*
 * Notice 144 with LocalChanges 0: only the CapabilityMask changed, and
 * here is the new one. A change while the last trap is unrepressed sends
 * none; the SM that represses it reads PortInfo on its next sweep.
 */
void cnuas_ib_trap_caps(struct cnuas_ib_dev *cdev)
{
	struct ib_mad_notice_attr *n;

	n = cnuas_trap_claim(cdev, CNUAS_TRAP_LOCAL_CHANGES);
	if (!n)
		return;
	n->details.ntc_144.lid = n->issuer_lid;
	n->details.ntc_144.new_cap_mask =
		cpu_to_be32(cnuas_ib_port_cap_mask(cdev));
	cnuas_trap_queue(cdev, CNUAS_TRAP_LOCAL_CHANGES);
}

void cnuas_ib_trap_key(struct cnuas_ib_dev *cdev, bool pkey,
		       const struct cnuas_ib_rxp *p, u32 key, u32 src_qp)
{
	u16 num = pkey ? CNUAS_TRAP_BAD_PKEY : CNUAS_TRAP_BAD_QKEY;
	struct ib_mad_notice_attr *n;

	n = cnuas_trap_claim(cdev, num);
	if (!n)
		return;
	n->details.ntc_257_258.lid1 = cpu_to_be16(p->slid);
	n->details.ntc_257_258.lid2 = cpu_to_be16(p->dlid);
	n->details.ntc_257_258.key = cpu_to_be32(key);
	n->details.ntc_257_258.sl_qp1 = cpu_to_be32((u32)p->sl << 28 |
						    (src_qp & CNUAS_QPN_MASK));
	n->details.ntc_257_258.qp2 = cpu_to_be32(p->qpn & CNUAS_QPN_MASK);
	if (p->iph) {
		const struct ib_grh *grh = p->iph;

		n->details.ntc_257_258.gid1 = grh->sgid;
		n->details.ntc_257_258.gid2 = grh->dgid;
	}
	cnuas_trap_queue(cdev, num);
}

void cnuas_ib_trap_mkey(struct cnuas_ib_dev *cdev, const struct ib_smp *smp,
			const struct ib_wc *in_wc)
{
	struct ib_mad_notice_attr *n;
	u8 hops;

	n = cnuas_trap_claim(cdev, CNUAS_TRAP_BAD_MKEY);
	if (!n)
		return;
	n->details.ntc_256.lid = cpu_to_be16(in_wc ? in_wc->slid : 0);
	n->details.ntc_256.method = smp->method;
	n->details.ntc_256.attr_id = smp->attr_id;
	n->details.ntc_256.attr_mod = smp->attr_mod;
	n->details.ntc_256.mkey = smp->mkey;
	if (smp->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE) {
		/* DR notice bit, truncated bit, hop count; the return path. */
		hops = min_t(u8, smp->hop_cnt, IB_SMP_MAX_PATH_HOPS - 1);
		n->details.ntc_256.dr_slid = smp->dr_slid;
		n->details.ntc_256.dr_trunc_hop = 0x80 | (hops & 0x3f);
		if (hops >= sizeof(n->details.ntc_256.dr_rtn_path)) {
			n->details.ntc_256.dr_trunc_hop |= 0x40;
			hops = sizeof(n->details.ntc_256.dr_rtn_path) - 1;
		}
		memcpy(n->details.ntc_256.dr_rtn_path, smp->return_path,
		       hops + 1);
	}
	cnuas_trap_queue(cdev, CNUAS_TRAP_BAD_MKEY);
}

void cnuas_ib_trap_init(struct cnuas_ib_dev *cdev)
{
	INIT_WORK(&cdev->port.trap_work, cnuas_trap_work);
}

int cnuas_ib_trap_start(struct cnuas_ib_dev *cdev)
{
	struct ib_mad_agent *agent;

	if (cnuas_ib_is_eth(cdev))
		return 0;
	agent = ib_register_mad_agent(&cdev->ibdev, 1, IB_QPT_SMI, NULL, 0,
				      cnuas_trap_send_handler,
				      cnuas_trap_recv_handler, cdev, 0);
	if (IS_ERR(agent))
		return PTR_ERR(agent);
	WRITE_ONCE(cdev->port.trap_agent, agent);
	return 0;
}

void cnuas_ib_trap_stop(struct cnuas_ib_dev *cdev)
{
	struct ib_mad_agent *agent = cdev->port.trap_agent;

	if (!agent)
		return;
	/* A work item that took the agent ends before it goes. */
	WRITE_ONCE(cdev->port.trap_agent, NULL);
	cancel_work_sync(&cdev->port.trap_work);
	/* Ends the traps in flight: their send handlers run first. */
	ib_unregister_mad_agent(agent);
}

void cnuas_ib_trap_cleanup(struct cnuas_ib_dev *cdev)
{
	/* No MAD or packet comes any more: nothing queues a trap again. */
	cancel_work_sync(&cdev->port.trap_work);
}
