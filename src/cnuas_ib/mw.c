// SPDX-License-Identifier: GPL-2.0
/*
 * Memory windows (IBA 10.6.7): a window grants remote access to a range
 * of an MR under a key of its own. Type 1 is bound with ibv_bind_mw() and
 * used by any QP of its PD; type 2B is bound by an IBV_WR_BIND_MW in a
 * QP's SQ, used only through that QP, and invalidated by LOCAL_INV or a
 * peer's SEND with Invalidate.
 *
 * A window is an entry of the MR table of its own kind, so its key comes
 * from the same space as MR keys and one lookup finds either. An rkey
 * lookup that meets a bound window checks it and returns the MR under it
 * (referenced, as for an MR's own key); an lkey never names a window. A
 * bound window counts on its MR (num_mw); deregistering the MR unbinds
 * its windows, as hardware HCAs let it. Binding, unbinding and
 * invalidating happen under the table's lock, which lookups hold too.
 */
#include <linux/slab.h>

#include "cnuas_ib.h"

#define CNUAS_IB_MW_ACCESS	(IB_ACCESS_REMOTE_WRITE | \
				 IB_ACCESS_REMOTE_READ | \
				 IB_ACCESS_REMOTE_ATOMIC)
/*
 * A bind may also name local write (consumers pass the MR's rights, as
 * rdma-core's tests do): a window grants no local access, so the bit is
 * accepted and dropped, as hardware HCAs and rxe do.
 */
#define CNUAS_IB_MW_BIND_ACCESS	(CNUAS_IB_MW_ACCESS | IB_ACCESS_LOCAL_WRITE)

static inline struct cnuas_ib_mw *to_cmw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct cnuas_ib_mw, ibmw);
}

static bool cnuas_ib_is_mw(const struct cnuas_ib_mr *mr)
{
	return mr->ops == &cnuas_ib_mw_ops;
}

int cnuas_ib_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct cnuas_ib_mw *mw = to_cmw(ibmw);
	struct cnuas_ib_mr *mr;
	int err;

	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;
	mr = cnuas_ib_mr_alloc(ibmw->pd, 0, &cnuas_ib_mw_ops);
	if (!mr)
		return -ENOMEM;
	mr->mw_type = ibmw->type;
	mr->revoked = true;		/* not bound yet */
	err = cnuas_ib_mr_insert(mr);
	if (err) {
		kfree(mr);
		return err;
	}
	mw->mr = mr;
	ibmw->rkey = mr->key;
	return 0;
}

/* Table lock held. */
static void cnuas_ib_mw_unbind(struct cnuas_ib_mr *mw)
{
	if (mw->parent)
		mw->parent->num_mw--;
	mw->parent = NULL;
	WRITE_ONCE(mw->revoked, true);
}

int cnuas_ib_dealloc_mw(struct ib_mw *ibmw)
{
	struct cnuas_ib_mr *mw = to_cmw(ibmw)->mr;
	struct xarray *xa = &mw->cdev->mr_xa;
	unsigned long flags;

	/* Lookups of the window run under the lock: none is left after. */
	xa_lock_irqsave(xa, flags);
	cnuas_ib_mw_unbind(mw);
	__xa_erase(xa, mw->key >> 8);
	xa_unlock_irqrestore(xa, flags);
	kfree(mw);
	return 0;
}

void cnuas_ib_mw_unbind_all(struct cnuas_ib_mr *mr)
{
	struct cnuas_ib_mr *e;
	unsigned long idx;

	/* Rare (an MR deregistered under bound windows): a walk will do. */
	xa_for_each(&mr->cdev->mr_xa, idx, e) {
		if (!mr->num_mw)
			break;
		if (cnuas_ib_is_mw(e) && e->parent == mr)
			cnuas_ib_mw_unbind(e);
	}
}

/* Table lock held: the MR under @mw if @pd and @qpn may use it; an rkey. */
static struct cnuas_ib_mr *cnuas_ib_mw_lookup(struct cnuas_ib_mr *mw,
					      struct cnuas_ib_pd *pd, u32 key,
					      u64 addr, u64 len, int access,
					      bool rkey, u32 qpn)
{
	struct cnuas_ib_mr *mr = mw->parent;

	if (!rkey || mw->key != key || READ_ONCE(mw->revoked) || !mr ||
	    mw->ibmr.pd != &pd->ibpd || (mw->access & access) != access ||
	    (mw->mw_type == IB_MW_TYPE_2 && mw->mw_qpn != qpn))
		return NULL;
	if (!cnuas_ib_mr_in_bounds(mw, addr, len))
		return NULL;
	/* The MR may have lost its memory since (DMA-BUF revoked). */
	return READ_ONCE(mr->revoked) ? NULL : mr;
}

/* The MR a window may be bound to (table lock held). */
static struct cnuas_ib_mr *cnuas_ib_mw_bind_target(struct cnuas_ib_pd *pd,
						   u32 lkey, u64 addr, u64 len,
						   int access)
{
	struct cnuas_ib_mr *mr = xa_load(&to_cdev(pd->ibpd.device)->mr_xa,
					 lkey >> 8);

	if (!mr || cnuas_ib_is_mw(mr) || mr->key != lkey ||
	    READ_ONCE(mr->revoked) || mr->ibmr.pd != &pd->ibpd ||
	    !(mr->access & IB_ACCESS_MW_BIND))
		return NULL;
	/* IBA: remote write and atomic rights need local write on the MR. */
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IB_ACCESS_LOCAL_WRITE))
		return NULL;
	if (!cnuas_ib_mr_in_bounds(mr, addr, len))
		return NULL;
	return mr;
}

enum ib_wc_status cnuas_ib_mw_bind(struct cnuas_ib_qp *qp,
				   const struct cnuas_send_wqe *w)
{
	struct cnuas_ib_pd *pd = to_cpd(qp->ibqp.pd);
	struct xarray *xa = &qp->cdev->mr_xa;
	u32 key = w->wr.bind.mw_rkey, new_key = w->wr.bind.new_rkey;
	int access = w->wr.bind.access;
	struct cnuas_ib_mr *mw, *mr;
	enum ib_wc_status status = IB_WC_MW_BIND_ERR;
	unsigned long flags;

	/* Zero-based windows are not offered. */
	if (access & ~CNUAS_IB_MW_BIND_ACCESS || new_key >> 8 != key >> 8)
		return IB_WC_MW_BIND_ERR;
	xa_lock_irqsave(xa, flags);
	/*
	 * The window is named by its table slot: after a type 2 bind the
	 * consumer's ibv_mw still holds the key it was allocated with.
	 */
	mw = xa_load(xa, key >> 8);
	if (!mw || !cnuas_ib_is_mw(mw) || mw->ibmr.pd != &pd->ibpd)
		goto out;
	/* IBA 10.6.7.2.2: a type 2 window is bound only while free. */
	if (mw->mw_type == IB_MW_TYPE_2 && !READ_ONCE(mw->revoked))
		goto out;
	/*
	 * ibv_bind_mw(3): a zero-length bind unbinds a type 1 window,
	 * whether or not it names an MR; a type 2 window is freed only by
	 * invalidation (IBA o10-37.2.40), so a zero length fails.
	 */
	if (!w->wr.bind.length) {
		if (mw->mw_type != IB_MW_TYPE_1)
			goto out;
		cnuas_ib_mw_unbind(mw);
		mw->key = new_key;
		status = IB_WC_SUCCESS;
		goto out;
	}
	mr = cnuas_ib_mw_bind_target(pd, w->wr.bind.mr_lkey, w->wr.bind.addr,
				     w->wr.bind.length, access);
	if (!mr)
		goto out;
	cnuas_ib_mw_unbind(mw);		/* a type 1 rebind */
	mw->parent = mr;
	mr->num_mw++;
	mw->key = new_key;
	mw->access = access & CNUAS_IB_MW_ACCESS;
	mw->iova = w->wr.bind.addr;
	mw->length = w->wr.bind.length;
	mw->mw_qpn = qp->ibqp.qp_num;
	WRITE_ONCE(mw->revoked, false);
	status = IB_WC_SUCCESS;
out:
	xa_unlock_irqrestore(xa, flags);
	if (!status)
		cnuas_ib_stat_inc(qp->cdev, CNUAS_STAT_MW_BIND);
	else
		cnuas_dbg_qp(qp, "MW 0x%x: bind to lkey 0x%x [0x%llx +0x%llx) access 0x%x fails\n",
			     key, w->wr.bind.mr_lkey, w->wr.bind.addr,
			     w->wr.bind.length, access);
	return status;
}

/* Table lock held: only a bound type 2 window, through its QP. */
static int cnuas_ib_mw_invalidate(struct cnuas_ib_mr *mw,
				  struct cnuas_ib_pd *pd, u32 key, u32 qpn)
{
	if (mw->mw_type != IB_MW_TYPE_2 || mw->key != key ||
	    mw->ibmr.pd != &pd->ibpd || READ_ONCE(mw->revoked) ||
	    mw->mw_qpn != qpn)
		return -EINVAL;
	cnuas_ib_mw_unbind(mw);
	return 0;
}

/* Lookups return the MR under a window: it never copies itself. */
const struct cnuas_ib_mr_ops cnuas_ib_mw_ops = {
	.lookup = cnuas_ib_mw_lookup,
	.invalidate = cnuas_ib_mw_invalidate,
};
