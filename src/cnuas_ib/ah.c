// SPDX-License-Identifier: GPL-2.0
/*
 * Address vectors (RoCE v2: Ethernet/IP/UDP addressing resolved from an
 * rdma_ah_attr; InfiniBand: LIDs, ib_frame.c) and address handles,
 * kernel and user. User UD WQEs name
 * their AH by number (ah_xa), checked against the QP's PD.
 */
#include <linux/etherdevice.h>
#include <linux/jhash.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>

#include "cnuas_ib.h"

int cnuas_ib_av_from_attr(struct cnuas_ib_dev *cdev, struct cnuas_ib_av *av,
			  const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	enum rdma_network_type ntype;
	u16 vlan_id = 0xffff;
	int err;

	if (!cnuas_ib_is_eth(cdev))
		return cnuas_ib_av_from_attr_ib(cdev, av, attr);
	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr)
		return -EINVAL;
	ntype = rdma_gid_attr_network_type(sgid_attr);
	if (ntype != RDMA_NETWORK_IPV4 && ntype != RDMA_NETWORK_IPV6)
		return -EINVAL;	/* RoCE v1 GIDs: not on this wire */

	memset(av, 0, sizeof(*av));
	err = rdma_read_gid_l2_fields(sgid_attr, &vlan_id, av->smac);
	if (err)
		return err;
	av->valid = true;
	av->network_type = ntype;
	av->vlan_id = vlan_id < VLAN_N_VID ? vlan_id : 0xffff;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->flow_label = grh->flow_label & 0xfffff;
	av->sl = rdma_ah_get_sl(attr);
	av->sgid_index = grh->sgid_index;
	av->sgid = sgid_attr->gid;
	av->dgid = grh->dgid;
	ether_addr_copy(av->dmac, attr->roce.dmac);
	rdma_gid2ip((struct sockaddr *)&av->saddr, &av->sgid);
	rdma_gid2ip((struct sockaddr *)&av->daddr, &av->dgid);
	if (av->flow_label)
		av->udp_sport = rdma_flow_label_to_udp_sport(av->flow_label);
	else	/* an AH has no QPNs: spread by the address pair */
		av->udp_sport = IB_ROCE_UDP_ENCAP_VALID_PORT_MIN |
			(jhash(&av->dgid, sizeof(av->dgid),
			       jhash(&av->sgid, sizeof(av->sgid), 0)) &
			 (IB_ROCE_UDP_ENCAP_VALID_PORT_MAX -
			  IB_ROCE_UDP_ENCAP_VALID_PORT_MIN));
	return 0;
}

void cnuas_ib_av_to_attr(const struct cnuas_ib_av *av,
			 struct rdma_ah_attr *attr)
{
	union ib_gid dgid = av->dgid;

	if (av->network_type == RDMA_NETWORK_IB) {
		cnuas_ib_av_to_attr_ib(av, attr);
		return;
	}
	memset(attr, 0, sizeof(*attr));
	attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(attr, 1);
	rdma_ah_set_sl(attr, av->sl);
	rdma_ah_set_grh(attr, &dgid, av->flow_label, av->sgid_index,
			av->hop_limit, av->traffic_class);
	ether_addr_copy(attr->roce.dmac, av->dmac);
}

int cnuas_ib_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		       struct ib_udata *udata)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibah->device);
	bool sleepable = init->flags & RDMA_CREATE_AH_SLEEPABLE;
	struct cnuas_ib_ah *ah = to_cah(ibah);
	struct cnuas_create_ah_resp resp = {};
	unsigned long flags;
	int err;

	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	if (atomic_inc_return(&cdev->num_ah) > CNUAS_IB_MAX_AH) {
		err = -ENOMEM;
		goto err_count;
	}
	err = cnuas_ib_av_from_attr(cdev, &ah->av, init->ah_attr);
	if (err)
		goto err_count;
	refcount_set(&ah->ref, 1);
	init_completion(&ah->released);

	/* May run in atomic context: no sleeping lock, no GFP_KERNEL. */
	xa_lock_irqsave(&cdev->ah_xa, flags);
	err = __xa_alloc_cyclic(&cdev->ah_xa, &ah->ah_num, ah,
				XA_LIMIT(1, CNUAS_IB_MAX_AH), &cdev->ah_next,
				sleepable ? GFP_KERNEL : GFP_ATOMIC);
	xa_unlock_irqrestore(&cdev->ah_xa, flags);
	if (err < 0)
		goto err_count;

	if (udata) {
		resp.ah_num = ah->ah_num;
		err = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&cdev->ah_xa, ah->ah_num);
err_count:
	atomic_dec(&cdev->num_ah);
	return err;
}

int cnuas_ib_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	cnuas_ib_av_to_attr(&to_cah(ibah)->av, attr);
	return 0;
}

int cnuas_ib_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibah->device);
	struct cnuas_ib_ah *ah = to_cah(ibah);
	unsigned long irqflags;

	xa_lock_irqsave(&cdev->ah_xa, irqflags);
	__xa_erase(&cdev->ah_xa, ah->ah_num);
	xa_unlock_irqrestore(&cdev->ah_xa, irqflags);

	/* The transport holds AH references only briefly (copies the AV). */
	cnuas_ib_ah_put(ah);
	if (flags & RDMA_DESTROY_AH_SLEEPABLE)
		wait_for_completion(&ah->released);
	else
		while (!completion_done(&ah->released))
			cpu_relax();
	atomic_dec(&cdev->num_ah);
	return 0;
}

struct cnuas_ib_ah *cnuas_ib_ah_get(struct cnuas_ib_pd *pd, u32 ah_num)
{
	struct cnuas_ib_dev *cdev = to_cdev(pd->ibpd.device);
	struct cnuas_ib_ah *ah;
	unsigned long flags;

	xa_lock_irqsave(&cdev->ah_xa, flags);
	ah = xa_load(&cdev->ah_xa, ah_num);
	if (ah && ah->ibah.pd != &pd->ibpd)
		ah = NULL;
	if (ah)
		refcount_inc(&ah->ref);
	xa_unlock_irqrestore(&cdev->ah_xa, flags);
	return ah;
}

void cnuas_ib_ah_put(struct cnuas_ib_ah *ah)
{
	if (refcount_dec_and_test(&ah->ref))
		complete(&ah->released);
}
