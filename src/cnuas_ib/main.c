// SPDX-License-Identifier: GPL-2.0
/*
 * cnuas_ib: module, auxiliary driver and ib_device life cycle. Binds to
 * cnuas_net's "cnuas_net.rdma" auxiliary device, registers cnuas_N (a
 * child of the PCI function) with ib_core and turns link changes into
 * port events.
 */
#include <linux/module.h>
#include <linux/skbuff.h>
#include <net/addrconf.h>

#include "cnuas_ib.h"
#include "link_ops.h"

/* Sorted by member name, as ib_core's own list is. */
const struct ib_device_ops cnuas_ib_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = CNUAS_IB_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = cnuas_ib_alloc_hw_port_stats,
	.alloc_pd = cnuas_ib_alloc_pd,
	.alloc_ucontext = cnuas_ib_alloc_ucontext,
	.attach_mcast = cnuas_ib_attach_mcast,
	.create_ah = cnuas_ib_create_ah,
	.create_cq = cnuas_ib_create_cq,
	.create_qp = cnuas_ib_create_qp,
	.create_srq = cnuas_ib_create_srq,
	.create_user_ah = cnuas_ib_create_ah,
	CNUAS_IB_OPS_CREATE_USER_CQ
	.dealloc_pd = cnuas_ib_dealloc_pd,
	.dealloc_ucontext = cnuas_ib_dealloc_ucontext,
	.dereg_mr = cnuas_ib_dereg_mr,
	.alloc_mr = cnuas_ib_alloc_mr,
	.alloc_mw = cnuas_ib_alloc_mw,
	.dealloc_mw = cnuas_ib_dealloc_mw,
	.map_mr_sg = cnuas_ib_map_mr_sg,
	.destroy_ah = cnuas_ib_destroy_ah,
	.destroy_cq = cnuas_ib_destroy_cq,
	.destroy_qp = cnuas_ib_destroy_qp,
	.destroy_srq = cnuas_ib_destroy_srq,
	.detach_mcast = cnuas_ib_detach_mcast,
	.disassociate_ucontext = cnuas_ib_disassociate_ucontext,
	.get_dma_mr = cnuas_ib_get_dma_mr,
	.get_hw_stats = cnuas_ib_get_hw_stats,
	.get_link_layer = cnuas_ib_get_link_layer,
	.get_port_immutable = cnuas_ib_get_port_immutable,
	.mmap = cnuas_ib_mmap,
	.mmap_free = cnuas_ib_mmap_free,
	.modify_qp = cnuas_ib_modify_qp,
	.modify_srq = cnuas_ib_modify_srq,
	.poll_cq = cnuas_ib_poll_cq,
	.post_recv = cnuas_ib_post_recv,
	.post_send = cnuas_ib_post_send,
	.post_srq_recv = cnuas_ib_post_srq_recv,
	CNUAS_IB_OPS_RESIZE_CQ
	.query_ah = cnuas_ib_query_ah,
	.query_device = cnuas_ib_query_device,
	.query_gid = cnuas_ib_query_gid,
	.query_pkey = cnuas_ib_query_pkey,
	.query_port = cnuas_ib_query_port,
	.query_qp = cnuas_ib_query_qp,
	.query_srq = cnuas_ib_query_srq,
	.reg_user_mr = cnuas_ib_reg_user_mr,
	.reg_user_mr_dmabuf = cnuas_ib_reg_user_mr_dmabuf,
	.rereg_user_mr = cnuas_ib_rereg_user_mr,
	.req_notify_cq = cnuas_ib_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, cnuas_ib_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, cnuas_ib_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, cnuas_ib_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, cnuas_ib_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, cnuas_ib_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, cnuas_ib_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, cnuas_ib_ucontext, ibuc),
};

/* IB link layer only: the port's management (port.c, mad.c). */
static const struct ib_device_ops cnuas_ib_ib_ops = {
	.modify_device = cnuas_ib_modify_device,
	.modify_port = cnuas_ib_modify_port,
	.process_mad = cnuas_ib_process_mad,
};

/* ---- callbacks from cnuas_net (only between attach and detach) ---- */

/* Report a link change to ib_core once: the port event follows the state. */
static void cnuas_ib_link_update(struct cnuas_ib_dev *cdev, bool up)
{
	struct ib_event ev = {
		.device = &cdev->ibdev,
		.element.port_num = 1,
	};

	/* IB: the subnet manager, not the link, makes the port active. */
	if (!cnuas_ib_is_eth(cdev)) {
		mutex_lock(&cdev->link_lock);
		cdev->link_up = up;
		cnuas_ib_port_link(cdev, up);
		mutex_unlock(&cdev->link_lock);
		return;
	}
	mutex_lock(&cdev->link_lock);
	if (cdev->link_up != up) {
		cdev->link_up = up;
		ev.event = up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
		ib_dispatch_event(&ev);
		ibdev_info(&cdev->ibdev, "port 1 %s\n", up ? "active" : "down");
	}
	mutex_unlock(&cdev->link_lock);
}

static struct cnuas_ib_dev *cnuas_ib_from_adev(struct cnuas_net_aux_dev *adev)
{
	return auxiliary_get_drvdata(&adev->adev);
}

static void cnuas_ib_aux_rx(struct cnuas_net_aux_dev *adev,
			    struct sk_buff *skb, u32 flags)
{
	struct cnuas_ib_dev *cdev = cnuas_ib_from_adev(adev);

	cnuas_ib_port_count_rx(&cdev->port, skb->len);
	cnuas_ib_rx(cdev, skb, flags);
}

static void cnuas_ib_aux_rx_batch_end(struct cnuas_net_aux_dev *adev)
{
	cnuas_ib_rx_batch_end(cnuas_ib_from_adev(adev));
}

static void cnuas_ib_aux_tx_wake(struct cnuas_net_aux_dev *adev)
{
	cnuas_ib_tx_wake(cnuas_ib_from_adev(adev));
}

static void cnuas_ib_link_change(struct cnuas_net_aux_dev *adev, bool up)
{
	cnuas_ib_link_update(cnuas_ib_from_adev(adev), up);
}

static const struct cnuas_net_aux_ops cnuas_ib_aux_ops = {
	.rx = cnuas_ib_aux_rx,
	.rx_batch_end = cnuas_ib_aux_rx_batch_end,
	.tx_wake = cnuas_ib_aux_tx_wake,
	.link_change = cnuas_ib_link_change,
};

/* ---- auxiliary driver ---- */

static int cnuas_ib_probe(struct auxiliary_device *aux,
			  const struct auxiliary_device_id *id)
{
	struct cnuas_net_aux_dev *adev = to_cnuas_net_aux_dev(aux);
	struct cnuas_ib_dev *cdev;
	struct ib_device *ibdev;
	int err;

	if (adev->link_layer != CNUAS_VNIC_LL_ETH &&
	    adev->link_layer != CNUAS_VNIC_LL_IB)
		return -ENODEV;
	if (adev->link_layer == CNUAS_VNIC_LL_ETH && !adev->netdev)
		return -ENODEV;

	cdev = ib_alloc_device(cnuas_ib_dev, ibdev);
	if (!cdev)
		return -ENOMEM;
	ibdev = &cdev->ibdev;
	cdev->adev = adev;
	cdev->link_layer = adev->link_layer;
	cdev->link = cnuas_ib_is_eth(cdev) ? &cnuas_ib_roce_link :
					     &cnuas_ib_ib_link;
	mutex_init(&cdev->link_lock);
	atomic_set(&cdev->num_pd, 0);
	atomic_set(&cdev->num_cq, 0);
	atomic_set(&cdev->num_srq, 0);
	atomic_set(&cdev->num_ah, 0);
	atomic_set(&cdev->num_qp, 0);
	/* Lookups run in any context under the xa_lock (cnuas_ib.h). */
	xa_init_flags(&cdev->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&cdev->mr_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&cdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&cdev->srq_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	spin_lock_init(&cdev->atomic_lock);
	cnuas_ib_mcast_init(cdev);
	cnuas_ib_port_init(cdev);
	auxiliary_set_drvdata(aux, cdev);
	err = cnuas_ib_transport_dev_init(cdev);
	if (err)
		goto err_free;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = CNUAS_IB_NUM_PORTS;
	ibdev->num_comp_vectors = 1;
	/*
	 * The PCI function is the parent, as mlx5's: sysfs then shows the
	 * netdev beside the RDMA device (device/net/cnuas0), where rdma-core
	 * and RDMA CM tools look for it. The driver stays bound to the
	 * auxiliary device, which is the PCI function's child.
	 */
	ibdev->dev.parent = aux->dev.parent;
	strscpy(ibdev->node_desc, "cnuas", sizeof(ibdev->node_desc));
	addrconf_addr_eui48((u8 *)&ibdev->node_guid, adev->mac);
	ib_set_device_ops(ibdev, &cnuas_ib_dev_ops);
	if (!cnuas_ib_is_eth(cdev))
		ib_set_device_ops(ibdev, &cnuas_ib_ib_ops);
	/*
	 * Beyond ib_core's default commands: POST_SEND is the provider's
	 * SQ doorbell (and flushes receives in ERR), REQ_NOTIFY_CQ arms
	 * completion events.
	 */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_REQ_NOTIFY_CQ);

	if (adev->netdev) {
		/* ib_core derives the RoCE GIDs from this netdev's addresses. */
		err = ib_device_set_netdev(ibdev, adev->netdev, 1);
		if (err)
			goto err_dealloc;
	}

	/*
	 * No DMA device: the transport moves data with the CPU (kernel
	 * virtual addresses), frames go to cnuas_net as skbs.
	 */
	cdev->link_up = cnuas_net_aux_link_up(adev);
	if (!cnuas_ib_is_eth(cdev))
		cnuas_ib_port_link(cdev, cdev->link_up);
	err = ib_register_device(ibdev, CNUAS_IB_NAME_FMT, NULL);
	if (err)
		goto err_dealloc;
	cnuas_ib_port_registered(cdev);
	err = cnuas_ib_trap_start(cdev);
	if (err)
		goto err_unregister;

	err = cnuas_net_aux_attach(adev, &cnuas_ib_aux_ops);
	if (err)
		goto err_unregister;
	/* A change between the sample above and attach went nowhere. */
	cnuas_ib_link_update(cdev, cnuas_net_aux_link_up(adev));

	ibdev_info(ibdev, "on %s, link layer %s\n",
		   adev->netdev ? netdev_name(adev->netdev) : dev_name(&aux->dev),
		   cdev->link->name);
	return 0;

err_unregister:
	cnuas_ib_trap_stop(cdev);
	ib_unregister_device(ibdev);
	cnuas_ib_trap_cleanup(cdev);
err_dealloc:
	cnuas_ib_transport_dev_cleanup(cdev);
err_free:
	mutex_destroy(&cdev->link_lock);
	ib_dealloc_device(ibdev);
	auxiliary_set_drvdata(aux, NULL);
	return err;
}

static void cnuas_ib_remove(struct auxiliary_device *aux)
{
	struct cnuas_ib_dev *cdev = auxiliary_get_drvdata(aux);

	/* No frame or link callback runs after this returns. */
	cnuas_net_aux_detach(cdev->adev);
	cnuas_ib_trap_stop(cdev);
	/* Waits for every user (uverbs contexts get disassociated). */
	ib_unregister_device(&cdev->ibdev);
	cnuas_ib_trap_cleanup(cdev);
	cnuas_ib_transport_dev_cleanup(cdev);
	/* Every object is gone: the tables are empty. */
	WARN_ON(!xa_empty(&cdev->qp_xa) || !xa_empty(&cdev->mr_xa) ||
		!xa_empty(&cdev->ah_xa) || !xa_empty(&cdev->srq_xa));
	xa_destroy(&cdev->qp_xa);
	xa_destroy(&cdev->mr_xa);
	xa_destroy(&cdev->ah_xa);
	xa_destroy(&cdev->srq_xa);
	cnuas_ib_mcast_cleanup(cdev);
	mutex_destroy(&cdev->link_lock);
	ib_dealloc_device(&cdev->ibdev);
	auxiliary_set_drvdata(aux, NULL);
}

static const struct auxiliary_device_id cnuas_ib_id_table[] = {
	{ .name = CNUAS_NET_AUX_MATCH },
	{}
};
MODULE_DEVICE_TABLE(auxiliary, cnuas_ib_id_table);

static struct auxiliary_driver cnuas_ib_driver = {
	.name = "ib",
	.probe = cnuas_ib_probe,
	.remove = cnuas_ib_remove,
	.id_table = cnuas_ib_id_table,
};
module_auxiliary_driver(cnuas_ib_driver);

MODULE_DESCRIPTION("Cnuas RDMA (RoCEv2) device driver");
MODULE_AUTHOR("The Cnuas developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(CNUAS_VERSION);
/* DMA-BUF MRs (mr-dmabuf.c); 6.13 made the namespace a string. */
#ifdef CNUAS_IB_NS_STRINGIFY
MODULE_IMPORT_NS(DMA_BUF);
#else
MODULE_IMPORT_NS("DMA_BUF");
#endif
