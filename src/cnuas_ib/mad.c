// SPDX-License-Identifier: GPL-2.0
/*
 * process_mad: the management agents of an IB-mode port, which a real
 * HCA runs in its firmware. ib_core offers every MAD that arrives on QP0
 * or QP1, every directed-route SMP that never leaves the node (hop count
 * 0: the subnet manager on this port sweeping it) and the PMA queries of
 * sysfs (no work completion then) here first:
 *   - subnet management (classes 0x01 and 0x81): the SMA (sma.c), after
 *     the M_Key check below (IBA 14.2.4; a failure raises Trap 256,
 *     trap.c, whose TrapRepress goes on to trap.c's agent);
 *   - performance management (class 0x04): the PMA (pma.c);
 *   - everything else, and responses, traps and reports of the SM
 *     classes, go on to ib_core's agents (umad: OpenSM, infiniband-diags).
 * The answer is built in @out from a copy of the request; ib_core turns
 * directed-route fields around and sends it, or hands it to the local
 * requester. The hop pointer and paths are never touched here.
 */
#include <linux/jiffies.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "cnuas_ib.h"

/*
 * The M_Key check of one SMP (IBA 14.2.4): *@match says whether the SMP
 * showed the port's M_Key (or no check applies). Returns false when the
 * SMP must be dropped: a Set or TrapRepress without the key, or a Get
 * when the protection bits are 2 or 3. Such a violation is counted and
 * starts the lease, after which the protection falls to 0 (the key can be
 * taken over by a new subnet manager).
 */
static bool cnuas_mad_mkey_check(struct cnuas_ib_dev *cdev,
				 const struct ib_smp *smp, int mad_flags,
				 bool *match)
{
	struct cnuas_ib_port *p = &cdev->port;
	unsigned long flags;
	bool ok = true;

	spin_lock_irqsave(&p->lock, flags);
	if (p->mkey_lease_end && time_after_eq(jiffies, p->mkey_lease_end)) {
		p->mkey_lease_end = 0;
		p->mkeyprot = 0;
	}
	*match = (mad_flags & IB_MAD_IGNORE_MKEY) || !p->mkey ||
		 be64_to_cpu(smp->mkey) == p->mkey;
	if (*match) {
		/* A good key on a Get or Set stops a running lease. */
		p->mkey_lease_end = 0;
	} else if (smp->method != IB_MGMT_METHOD_GET || p->mkeyprot >= 2) {
		ok = false;
		if (p->mkey_violations < U16_MAX)
			p->mkey_violations++;
		if (!p->mkey_lease_end && p->mkey_lease_period)
			p->mkey_lease_end = jiffies +
					    p->mkey_lease_period * HZ ?: 1;
	}
	spin_unlock_irqrestore(&p->lock, flags);
	return ok;
}

static int cnuas_mad_subn(struct cnuas_ib_dev *cdev, struct ib_smp *smp,
			  u32 port, int mad_flags, const struct ib_wc *in_wc)
{
	bool match;
	u32 caps;

	switch (smp->method) {
	case IB_MGMT_METHOD_GET:
	case IB_MGMT_METHOD_SET:
		break;
	case IB_MGMT_METHOD_TRAP_REPRESS:
		/* With the M_Key: for the agent whose trap it represses (trap.c). */
		if (!cnuas_mad_mkey_check(cdev, smp, mad_flags, &match))
			return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
		return IB_MAD_RESULT_SUCCESS;
	case IB_MGMT_METHOD_GET_RESP:
	case IB_MGMT_METHOD_TRAP:
	case IB_MGMT_METHOD_REPORT:
	case IB_MGMT_METHOD_REPORT_RESP:
		/* For the subnet manager, if one runs here. */
		return IB_MAD_RESULT_SUCCESS;
	default:
		smp->status |= cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD);
		return cnuas_ib_mad_reply(smp);
	}
	if (smp->class_version != 1) {
		smp->status |= cpu_to_be16(IB_MGMT_MAD_STATUS_BAD_VERSION);
		return cnuas_ib_mad_reply(smp);
	}
	if (!cnuas_mad_mkey_check(cdev, smp, mad_flags, &match)) {
		cnuas_ib_trap_mkey(cdev, smp, in_wc);
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	}

	if (smp->attr_id == IB_SMP_ATTR_SM_INFO) {
		/*
		 * SMInfo is the subnet manager's own attribute: it answers
		 * when it runs on this port (ib_umad set IB_PORT_SM while
		 * it holds issm); a port whose SM is disabled drops it.
		 */
		caps = cnuas_ib_port_cap_mask(cdev);
		if (caps & IB_PORT_SM_DISABLED)
			return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
		if (caps & IB_PORT_SM)
			return IB_MAD_RESULT_SUCCESS;
		smp->status |=
			cpu_to_be16(IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB);
		return cnuas_ib_mad_reply(smp);
	}
	return cnuas_ib_sma(cdev, smp, port, match);
}

int cnuas_ib_mad_reply(struct ib_smp *smp)
{
	smp->method = IB_MGMT_METHOD_GET_RESP;
	if (smp->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		smp->status |= IB_SMP_DIRECTION;
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

int cnuas_ib_process_mad(struct ib_device *ibdev, int mad_flags, u32 port,
			 const struct ib_wc *in_wc, const struct ib_grh *in_grh,
			 const struct ib_mad *in, struct ib_mad *out,
			 size_t *out_size, u16 *out_pkey_index)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibdev);
	int ret;

	if (port != 1 || *out_size < sizeof(*out) ||
	    in->mad_hdr.base_version != IB_MGMT_BASE_VERSION)
		return IB_MAD_RESULT_FAILURE;

	switch (in->mad_hdr.mgmt_class) {
	case IB_MGMT_CLASS_SUBN_LID_ROUTED:
	case IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE:
		if (cnuas_ib_is_eth(cdev))
			return IB_MAD_RESULT_SUCCESS;
		memcpy(out, in, sizeof(*out));
		ret = cnuas_mad_subn(cdev, (struct ib_smp *)out, port,
				     mad_flags, in_wc);
		break;
	case IB_MGMT_CLASS_PERF_MGMT:
		memcpy(out, in, sizeof(*out));
		ret = cnuas_ib_pma(cdev, out, port);
		break;
	default:
		return IB_MAD_RESULT_SUCCESS;
	}
	if (ret & IB_MAD_RESULT_REPLY)
		*out_size = sizeof(*out);
	return ret;
}
