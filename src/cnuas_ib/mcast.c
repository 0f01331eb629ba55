// SPDX-License-Identifier: GPL-2.0
/*
 * Multicast: UD QPs attach to multicast GIDs (RoCEv2: IPv4 224/4 as
 * v4-mapped GIDs, IPv6 ff00::/8; InfiniBand: an MGID and its MLID), and
 * a received UD packet for QPN 0xFFFFFF goes to every QP attached to its
 * destination address (InfiniBand: its DLID, and its DGID if it has a
 * GRH), each with its own Q_Key check and receive WQE. The frames themselves come
 * from the switch's flooding; RDMA CM joins the IP group on the netdev.
 * What we send to a group our own QPs joined is looped back to them too
 * (net.c), as an HCA does.
 *
 * A group is small (at most CNUAS_IB_MAX_MCAST_QP_ATTACH QPNs) and there
 * are few, so a list under one spinlock does; the receive path copies a
 * group's QPNs out and then looks the QPs up by number like any packet.
 */
#include <linux/slab.h>
#include <rdma/ib_addr.h>

#include "cnuas_ib.h"
#include "cnuas_ib_link.h"
#include "wire.h"

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

/* The GID of an IP header's destination (IPv4: v4-mapped). */
static void cnuas_mcg_daddr(bool v4, const void *iph, union ib_gid *mgid)
{
	if (v4) {
		const struct iphdr *ip4 = iph;

		ipv6_addr_set_v4mapped(ip4->daddr, (struct in6_addr *)mgid->raw);
	} else {
		const struct ipv6hdr *ip6 = iph;

		memcpy(mgid->raw, &ip6->daddr, sizeof(mgid->raw));
	}
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

/* The GRH of an IB-mode frame (LRH at @lrh), or NULL. */
static const u8 *cnuas_mcg_grh(const u8 *lrh)
{
	return cnuas_lrh_lnh(lrh) == CNUAS_LNH_IBA_GLOBAL ?
	       lrh + CNUAS_LRH_LEN : NULL;
}

/* Has a QP of ours joined the group @skb (a frame we send) goes to? */
bool cnuas_ib_mcast_local(struct cnuas_ib_dev *cdev, const struct sk_buff *skb)
{
	const u8 *lrh = skb_mac_header(skb);
	union ib_gid mgid;
	bool found;

	if (!READ_ONCE(cdev->num_mcg))	/* the common case, lock-free */
		return false;
	if (!cnuas_ib_is_eth(cdev)) {
		spin_lock_bh(&cdev->mcg_lock);
		found = !!cnuas_mcg_find_ib(cdev, cnuas_lrh_dlid(lrh),
					    cnuas_mcg_grh(lrh));
		spin_unlock_bh(&cdev->mcg_lock);
		return found;
	}
	cnuas_mcg_daddr(skb->protocol == htons(ETH_P_IP),
			skb_network_header(skb), &mgid);
	spin_lock_bh(&cdev->mcg_lock);
	found = !!cnuas_mcg_find(cdev, &mgid);
	spin_unlock_bh(&cdev->mcg_lock);
	return found;
}

/*
 * The QPNs attached to the packet's destination address, copied into
 * @qpn (CNUAS_IB_MAX_MCAST_QP_ATTACH of them at most); 0: no group.
 */
u32 cnuas_ib_mcast_qpns(struct cnuas_ib_dev *cdev,
			const struct cnuas_ib_rxp *p, u32 *qpn)
{
	union ib_gid mgid;
	struct cnuas_ib_mcg *g;
	u32 n = 0;

	if (p->net_type == RDMA_NETWORK_IB) {
		spin_lock(&cdev->mcg_lock);
		g = cnuas_mcg_find_ib(cdev, p->dlid, p->iph);
	} else {
		cnuas_mcg_daddr(p->net_type == RDMA_NETWORK_IPV4, p->iph,
				&mgid);
		spin_lock(&cdev->mcg_lock);
		g = cnuas_mcg_find(cdev, &mgid);
	}
	if (g) {
		n = g->nqp;
		memcpy(qpn, g->qpn, n * sizeof(*qpn));
	}
	spin_unlock(&cdev->mcg_lock);
	return n;
}
