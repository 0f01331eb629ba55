// SPDX-License-Identifier: GPL-2.0
/*
 * What the debug lines (debug.h) print besides numbers: QP states, AETH
 * syndromes, and why an rkey was refused. Called only from the arguments
 * of enabled debug lines.
 */
#include "cnuas_ib.h"
#include "wire.h"

const char *cnuas_ib_qp_state_name(enum ib_qp_state s)
{
	static const char * const names[] = {
		[IB_QPS_RESET]	= "RESET",
		[IB_QPS_INIT]	= "INIT",
		[IB_QPS_RTR]	= "RTR",
		[IB_QPS_RTS]	= "RTS",
		[IB_QPS_SQD]	= "SQD",
		[IB_QPS_SQE]	= "SQE",
		[IB_QPS_ERR]	= "ERR",
	};

	return (unsigned int)s < ARRAY_SIZE(names) && names[s] ? names[s] :
								 "?";
}

const char *cnuas_ib_syndrome_name(u8 syn)
{
	switch (syn & CNUAS_AETH_TYPE_MASK) {
	case CNUAS_AETH_TYPE_ACK:
		return "ACK";
	case CNUAS_AETH_TYPE_RNR:
		return "RNR NAK";
	case CNUAS_AETH_TYPE_NAK:
		break;
	default:
		return "reserved syndrome";
	}
	switch (syn & CNUAS_AETH_VALUE_MASK) {
	case CNUAS_AETH_NAK_PSN_SEQ:
		return "NAK PSN sequence error";
	case CNUAS_AETH_NAK_INVALID:
		return "NAK invalid request";
	case CNUAS_AETH_NAK_ACCESS:
		return "NAK remote access error";
	case CNUAS_AETH_NAK_OPERR:
		return "NAK remote operational error";
	case CNUAS_AETH_NAK_INV_RD:
		return "NAK invalid RD request";
	default:
		return "NAK of a reserved code";
	}
}

static bool cnuas_dbg_in(u64 base, u64 size, u64 addr, u64 len)
{
	return addr + len >= addr && addr >= base && len <= size &&
	       addr - base <= size - len;
}

/* The checks of mw.c's cnuas_ib_mw_resolve(), one at a time. */
static const char *cnuas_dbg_mw_why(const struct cnuas_ib_mr *mw,
				    struct cnuas_ib_pd *pd, u32 key, u64 addr,
				    u64 len, int access, u32 qpn)
{
	if (mw->key != key)
		return "window key does not match (stale key)";
	if (READ_ONCE(mw->revoked) || !mw->parent)
		return "window not bound";
	if (mw->ibmr.pd != &pd->ibpd)
		return "window of another PD";
	if ((mw->access & access) != access)
		return "window lacks the access right";
	if (mw->mw_type == IB_MW_TYPE_2 && mw->mw_qpn != qpn)
		return "type 2 window bound to another QP";
	if (!cnuas_dbg_in(mw->iova, mw->length, addr, len))
		return "range outside the window";
	if (READ_ONCE(mw->parent->revoked))
		return "the window's MR was revoked";
	return "granted now";
}

/* The checks of mr.c's cnuas_ib_mr_get(), one at a time. */
const char *cnuas_ib_rkey_why(struct cnuas_ib_pd *pd, u32 key, u64 addr,
			      u64 len, int access, u32 qpn)
{
	struct cnuas_ib_dev *cdev = to_cdev(pd->ibpd.device);
	const struct cnuas_ib_mr *mr;
	const char *why = "granted now";
	unsigned long flags;

	xa_lock_irqsave(&cdev->mr_xa, flags);
	mr = xa_load(&cdev->mr_xa, key >> 8);
	if (!mr)
		why = "no MR or window has this key";
	else if (mr->ops == &cnuas_ib_mw_ops)
		why = cnuas_dbg_mw_why(mr, pd, key, addr, len, access, qpn);
	else if (mr->key != key)
		why = "key does not match (stale key)";
	else if (mr->ibmr.pd != &pd->ibpd)
		why = "MR of another PD";
	else if ((mr->access & access) != access)
		why = "MR lacks the access right";
	else if (READ_ONCE(mr->revoked))
		why = "MR revoked or not registered";
	else if (mr->ops != &cnuas_ib_mr_dma_ops &&
		 !cnuas_dbg_in(mr->iova, mr->length, addr, len))
		why = "range outside the MR";
	xa_unlock_irqrestore(&cdev->mr_xa, flags);
	return why;
}
