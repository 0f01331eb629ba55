// SPDX-License-Identifier: GPL-2.0
/*
 * Multicast: UD QPs attach to multicast GIDs (RoCEv2: IPv4 224/4 as
 * v4-mapped GIDs, IPv6 ff00::/8; InfiniBand: an MGID and its MLID), and
 * a received UD packet for QPN 0xFFFFFF goes to every QP attached to its
 * destination address (InfiniBand: its DLID, and its DGID if it has a
 * GRH), each with its own Q_Key check and receive WQE. The frames themselves come
 * from the switch's flooding; RDMA CM joins the IP group on the netdev.
 * What we send to a group our own QPs joined is looped back to them too
 * (net.c), as an HCA does. Which group a frame names is its link
 * layer's to say (link_ops.h): they look it up here.
 *
 * A group is small (at most CNUAS_IB_MAX_MCAST_QP_ATTACH QPNs) and there
 * are few, so a list under one spinlock does; the receive path copies a
 * group's QPNs out and then looks the QPs up by number like any packet.
 */
#include <linux/slab.h>
#include <rdma/ib_addr.h>

#include "cnuas_ib.h"
#include "link_ops.h"

struct cnuas_ib_mcg {
	struct list_head node;		/* on cdev->mcg_list */
	union ib_gid mgid;
	u16 mlid;			/* InfiniBand: the group's LID */
	u32 nqp;
	u32 qpn[CNUAS_IB_MAX_MCAST_QP_ATTACH];
};

void cnuas_ib_mcast_init(struct cnuas_ib_dev *cdev)
{
	spin_lock_init(&cdev->mcg_lock);
	INIT_LIST_HEAD(&cdev->mcg_list);
}

void cnuas_ib_mcast_cleanup(struct cnuas_ib_dev *cdev)
{
	struct cnuas_ib_mcg *g, *n;

	list_for_each_entry_safe(g, n, &cdev->mcg_list, node) {
		list_del(&g->node);
		kfree(g);
	}
}

static struct cnuas_ib_mcg *cnuas_mcg_find(struct cnuas_ib_dev *cdev,
					   const union ib_gid *mgid)
{
	struct cnuas_ib_mcg *g;

	list_for_each_entry(g, &cdev->mcg_list, node)
		if (!memcmp(g->mgid.raw, mgid->raw, sizeof(g->mgid.raw)))
			return g;
	return NULL;
}

static int cnuas_mcg_index(const struct cnuas_ib_mcg *g, u32 qpn)
{
	u32 i;

	for (i = 0; i < g->nqp; i++)
		if (g->qpn[i] == qpn)
			return i;
	return -1;
}

int cnuas_ib_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	struct cnuas_ib_dev *cdev = qp->cdev;
	struct cnuas_ib_mcg *g, *fresh;
	int err = 0;

	/* uverbs calls us without ib_attach_mcast()'s own checks. */
	if (qp->type != IB_QPT_UD ||
	    !rdma_is_multicast_addr((struct in6_addr *)gid->raw))
		return -EINVAL;
	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL);
	if (!fresh)
		return -ENOMEM;
	spin_lock_bh(&cdev->mcg_lock);
	g = cnuas_mcg_find(cdev, gid);
	if (!g) {
		if (cdev->num_mcg >= CNUAS_IB_MAX_MCAST_GRP) {
			err = -ENOMEM;
			goto out;
		}
		g = fresh;
		fresh = NULL;
		g->mgid = *gid;
		g->mlid = lid;
		list_add_tail(&g->node, &cdev->mcg_list);
		WRITE_ONCE(cdev->num_mcg, cdev->num_mcg + 1);
	}
	if (cnuas_mcg_index(g, ibqp->qp_num) >= 0)
		goto out;		/* attached already: nothing to do */
	if (g->nqp >= CNUAS_IB_MAX_MCAST_QP_ATTACH) {
		err = -ENOMEM;
		goto out;
	}
	g->qpn[g->nqp++] = ibqp->qp_num;
	atomic_inc(&qp->mcast_attached);
out:
	spin_unlock_bh(&cdev->mcg_lock);
	kfree(fresh);
	return err;
}

/* Take @qpn out of @g, and @g out of the list once it is empty. */
static void cnuas_mcg_remove(struct cnuas_ib_dev *cdev,
			     struct cnuas_ib_mcg *g, int i)
{
	g->qpn[i] = g->qpn[--g->nqp];
	if (g->nqp)
		return;
	list_del(&g->node);
	WRITE_ONCE(cdev->num_mcg, cdev->num_mcg - 1);
	kfree(g);
}

int cnuas_ib_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct cnuas_ib_qp *qp = to_cqp(ibqp);
	struct cnuas_ib_dev *cdev = qp->cdev;
	struct cnuas_ib_mcg *g;
	int i, err = -EINVAL;

	spin_lock_bh(&cdev->mcg_lock);
	g = cnuas_mcg_find(cdev, gid);
	i = g ? cnuas_mcg_index(g, ibqp->qp_num) : -1;
	if (i >= 0) {
		cnuas_mcg_remove(cdev, g, i);
		atomic_dec(&qp->mcast_attached);
		err = 0;
	}
	spin_unlock_bh(&cdev->mcg_lock);
	return err;
}

/* destroy_qp: a QPN may be reused, so the QP leaves every group. */
void cnuas_ib_mcast_qp_destroy(struct cnuas_ib_qp *qp)
{
	struct cnuas_ib_dev *cdev = qp->cdev;
	struct cnuas_ib_mcg *g, *n;
	int i;

	if (!atomic_read(&qp->mcast_attached))
		return;
	spin_lock_bh(&cdev->mcg_lock);
	list_for_each_entry_safe(g, n, &cdev->mcg_list, node) {
		i = cnuas_mcg_index(g, qp->ibqp.qp_num);
		if (i >= 0)
			cnuas_mcg_remove(cdev, g, i);
	}
	spin_unlock_bh(&cdev->mcg_lock);
	atomic_set(&qp->mcast_attached, 0);
}

/*
 * InfiniBand: the group of a packet to multicast LID @mlid, with the GRH
 * at @grh (or NULL): the one of its MGID if it has a GRH (several groups
 * may share a MLID), else the first attached to the MLID.
 */
static struct cnuas_ib_mcg *cnuas_mcg_find_ib(struct cnuas_ib_dev *cdev,
					      u16 mlid, const u8 *grh)
{
	struct cnuas_ib_mcg *g;

	list_for_each_entry(g, &cdev->mcg_list, node)
		if (g->mlid == mlid &&
		    (!grh || !memcmp(g->mgid.raw, grh + 24, sizeof(g->mgid.raw))))
			return g;
	return NULL;
}

/*
 * @g's QPNs into @qpn (if not NULL), with mcg_lock held: how many. A
 * group lives only while a QP is attached to it, so 0 means no group.
 */
static u32 cnuas_mcg_copy(const struct cnuas_ib_mcg *g, u32 *qpn)
{
	if (!g)
		return 0;
	if (qpn)
		memcpy(qpn, g->qpn, g->nqp * sizeof(*qpn));
	return g->nqp;
}

u32 cnuas_ib_mcg_qpns(struct cnuas_ib_dev *cdev, const union ib_gid *mgid,
		      u32 *qpn)
{
	u32 n;

	if (!READ_ONCE(cdev->num_mcg))	/* the common case, lock-free */
		return 0;
	spin_lock_bh(&cdev->mcg_lock);
	n = cnuas_mcg_copy(cnuas_mcg_find(cdev, mgid), qpn);
	spin_unlock_bh(&cdev->mcg_lock);
	return n;
}

u32 cnuas_ib_mcg_qpns_lid(struct cnuas_ib_dev *cdev, u16 mlid, const u8 *grh,
			  u32 *qpn)
{
	u32 n;

	if (!READ_ONCE(cdev->num_mcg))
		return 0;
	spin_lock_bh(&cdev->mcg_lock);
	n = cnuas_mcg_copy(cnuas_mcg_find_ib(cdev, mlid, grh), qpn);
	spin_unlock_bh(&cdev->mcg_lock);
	return n;
}
