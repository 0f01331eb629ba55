// SPDX-License-Identifier: GPL-2.0
/*
 * cnuas_net: driver for the cnuas-vnic virtual PCI NIC (1af4:10f0).
 * PCI probe/remove, device identification and reset, module glue.
 */
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "cnuas_net.h"

static unsigned int tx_ring_size = CNUAS_NET_DEF_RING;
module_param(tx_ring_size, uint, 0444);
MODULE_PARM_DESC(tx_ring_size, "TX descriptors, power of two, 64..4096");

static unsigned int rx_ring_size = CNUAS_NET_DEF_RING;
module_param(rx_ring_size, uint, 0444);
MODULE_PARM_DESC(rx_ring_size, "RX buffers, power of two, 64..4096");

static unsigned int int_delay_us;
module_param(int_delay_us, uint, 0444);
MODULE_PARM_DESC(int_delay_us,
		 "Initial RX/TX interrupt moderation in microseconds (0 = off; ethtool -C rx-usecs)");

static bool rdma_offload = true;
module_param(rdma_offload, bool, 0444);
MODULE_PARM_DESC(rdma_offload,
		 "Let the device compute and check ICRCs (and IB VCRCs) if it can (0: software does)");

static bool rx_poll = true;
module_param(rx_poll, bool, 0444);
MODULE_PARM_DESC(rx_poll,
		 "Let busy-polling RDMA user space map the device's RX poll page (device 1.3)");

#define CNUAS_RESET_POLLS	100	/* x 1..2 ms */

/* Reset the device (self-clearing CTRL.RESET); bounded, no spinning. */
int cnuas_hw_reset(struct cnuas_net *cn)
{
	unsigned int i;
	u32 v;

	if (test_bit(CNUAS_F_GONE, &cn->flags))
		return -ENODEV;
	cnuas_wr(cn, CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_RESET);
	for (i = 0; i < CNUAS_RESET_POLLS; i++) {
		v = cnuas_rd(cn, CNUAS_VNIC_REG_CTRL);
		if (v == ~0u) {
			set_bit(CNUAS_F_GONE, &cn->flags);
			return -ENODEV;
		}
		if (!(v & CNUAS_VNIC_CTRL_RESET)) {
			atomic_inc(&cn->resets);
			return 0;
		}
		usleep_range(1000, 2000);
	}
	dev_err(&cn->pdev->dev, "reset did not complete\n");
	return -ETIMEDOUT;
}

bool cnuas_ring_size_ok(u32 size)
{
	return is_power_of_2(size) && size >= CNUAS_VNIC_RING_MIN &&
	       size <= CNUAS_VNIC_RING_MAX;
}

static u32 cnuas_ring_param(const char *name, unsigned int val)
{
	if (cnuas_ring_size_ok(val))
		return val;
	pr_warn_once("%s: %s=%u invalid, using %u\n", CNUAS_NET_DRV_NAME,
		     name, val, CNUAS_NET_DEF_RING);
	return CNUAS_NET_DEF_RING;
}

/* Identify the device and negotiate features. */
static int cnuas_hw_init(struct cnuas_net *cn)
{
	struct device *dev = &cn->pdev->dev;
	u32 magic, lo, hi, mf;
	int err;

	magic = cnuas_rd(cn, CNUAS_VNIC_REG_MAGIC);
	if (magic != CNUAS_VNIC_MAGIC_VALUE) {
		dev_err(dev, "bad magic %#x\n", magic);
		return -ENODEV;
	}
	cn->hw_version = cnuas_rd(cn, CNUAS_VNIC_REG_VERSION);
	if (cn->hw_version >> 16 != CNUAS_VNIC_VERSION_MAJOR) {
		dev_err(dev, "unsupported device version %u.%u\n",
			cn->hw_version >> 16, cn->hw_version & 0xffff);
		return -ENODEV;
	}
	err = cnuas_hw_reset(cn);
	if (err)
		return err;

	cn->link_layer = cnuas_rd(cn, CNUAS_VNIC_REG_LINK_LAYER);
	if (cn->link_layer != CNUAS_VNIC_LL_ETH &&
	    cn->link_layer != CNUAS_VNIC_LL_IB) {
		dev_err(dev, "unknown link layer %u\n", cn->link_layer);
		return -ENODEV;
	}

	/* Each link layer has its CRC offload (RoCEv2's parses Ethernet). */
	cn->features = cnuas_rd(cn, CNUAS_VNIC_REG_FEATURES) &
		       (CNUAS_VNIC_F_TX_SG | CNUAS_VNIC_F_STATUS_BLOCK |
			CNUAS_VNIC_F_INT_DELAY | CNUAS_VNIC_F_INT_AUTOMASK |
			(!rdma_offload ? 0 : cnuas_is_eth(cn) ?
			 CNUAS_VNIC_F_RDMA_ICRC : CNUAS_VNIC_F_IB_CRC) |
			(rx_poll ? CNUAS_VNIC_F_RX_POLL : 0));
	/* The poll page is only worth offering where it can be mapped. */
	if (!(pci_resource_flags(cn->pdev, CNUAS_VNIC_BAR_POLL) & IORESOURCE_MEM) ||
	    pci_resource_len(cn->pdev, CNUAS_VNIC_BAR_POLL) < CNUAS_VNIC_POLL_SIZE)
		cn->features &= ~CNUAS_VNIC_F_RX_POLL;
	cnuas_wr(cn, CNUAS_VNIC_REG_DRV_FEATURES, cn->features);

	mf = cnuas_rd(cn, CNUAS_VNIC_REG_MAX_FRAME);
	cn->max_frame = min_t(u32, mf, CNUAS_VNIC_MAX_FRAME);
	if (cn->max_frame < ETH_HLEN + VLAN_HLEN + CNUAS_NET_MIN_MTU) {
		dev_err(dev, "max frame %u too small\n", mf);
		return -ENODEV;
	}

	lo = cnuas_rd(cn, CNUAS_VNIC_REG_MAC_LO);
	hi = cnuas_rd(cn, CNUAS_VNIC_REG_MAC_HI);
	cn->mac[0] = lo;
	cn->mac[1] = lo >> 8;
	cn->mac[2] = lo >> 16;
	cn->mac[3] = lo >> 24;
	cn->mac[4] = hi;
	cn->mac[5] = hi >> 8;
	if (!is_valid_ether_addr(cn->mac)) {
		dev_warn(dev, "invalid MAC %pM, using a random one\n", cn->mac);
		eth_random_addr(cn->mac);
	}

	dev_info(dev, "cnuas-vnic %u.%u, %s link layer, MAC %pM, features %#x\n",
		 cn->hw_version >> 16, cn->hw_version & 0xffff,
		 cnuas_is_eth(cn) ? "eth" : "ib", cn->mac, cn->features);
	return 0;
}

/* Stop MISC work, then the data path: shared by probe unwind and remove. */
static void cnuas_stop_all(struct cnuas_net *cn)
{
	/* No more MISC work: it could restart what we stop next. */
	set_bit(CNUAS_F_REMOVING, &cn->flags);
	cnuas_irq_sync(cn);
	cancel_work_sync(&cn->misc_work);

	if (cn->netdev) {
		cnuas_netdev_unregister(cn);
	} else {
		mutex_lock(&cn->dp_lock);
		cnuas_dp_stop(cn);
		mutex_unlock(&cn->dp_lock);
	}
}

static int cnuas_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct cnuas_net *cn;
	int err;

	cn = kzalloc(sizeof(*cn), GFP_KERNEL);
	if (!cn)
		return -ENOMEM;
	cn->pdev = pdev;
	pci_set_drvdata(pdev, cn);
	spin_lock_init(&cn->tx_lock);
	mutex_init(&cn->dp_lock);
	mutex_init(&cn->aux_lock);
	INIT_WORK(&cn->misc_work, cnuas_misc_work);
	cn->int_delay_us = int_delay_us;
	u64_stats_init(&cn->rx_stats.syncp);
	u64_stats_init(&cn->tx_stats.syncp);

	err = pci_enable_device_mem(pdev);
	if (err)
		goto err_free;
	err = pci_request_regions(pdev, CNUAS_NET_DRV_NAME);
	if (err)
		goto err_disable;
	if (!(pci_resource_flags(pdev, CNUAS_VNIC_BAR_REGS) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, CNUAS_VNIC_BAR_REGS) < CNUAS_VNIC_REGS_SIZE) {
		dev_err(&pdev->dev, "BAR0 missing or too small\n");
		err = -ENODEV;
		goto err_release;
	}
	cn->regs = pci_iomap(pdev, CNUAS_VNIC_BAR_REGS, CNUAS_VNIC_REGS_SIZE);
	if (!cn->regs) {
		err = -ENOMEM;
		goto err_release;
	}
	pci_set_master(pdev);
	err = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err) {
		dev_err(&pdev->dev, "no usable DMA configuration\n");
		goto err_unmap;
	}

	err = cnuas_hw_init(cn);
	if (err)
		goto err_unmap;
	err = cnuas_rings_alloc(cn, cnuas_ring_param("tx_ring_size",
						     tx_ring_size),
				cnuas_ring_param("rx_ring_size", rx_ring_size));
	if (err)
		goto err_unmap;
	err = cnuas_netdev_create(cn);
	if (err)
		goto err_rings;
	err = cnuas_irq_setup(cn);
	if (err)
		goto err_netdev;

	if (cnuas_is_eth(cn)) {
		err = cnuas_netdev_register(cn);
		if (err)
			goto err_irq;
	} else {
		/* No netdev to open: the rings run for the aux client. */
		mutex_lock(&cn->dp_lock);
		err = cnuas_dp_start(cn);
		mutex_unlock(&cn->dp_lock);
		if (err)
			goto err_irq;
	}

	err = cnuas_aux_create(cn);
	if (err)
		goto err_stop;

	dev_info(&pdev->dev, "%s, %s, %u TX / %u RX descriptors\n",
		 cn->netdev ? netdev_name(cn->netdev) : "no netdev (ib mode)",
		 cn->msix ? "MSI-X" : (pdev->msi_enabled ? "MSI" : "INTx"),
		 cn->tx.size, cn->rx.size);
	return 0;

err_stop:
	cnuas_stop_all(cn);
err_irq:
	set_bit(CNUAS_F_REMOVING, &cn->flags);
	cnuas_irq_teardown(cn);
	cancel_work_sync(&cn->misc_work);
err_netdev:
	cnuas_netdev_destroy(cn);
err_rings:
	cnuas_hw_reset(cn);
	cnuas_rings_free(cn);
err_unmap:
	pci_clear_master(pdev);
	pci_iounmap(pdev, cn->regs);
err_release:
	pci_release_regions(pdev);
err_disable:
	pci_disable_device(pdev);
err_free:
	mutex_destroy(&cn->aux_lock);
	mutex_destroy(&cn->dp_lock);
	kfree(cn);
	return err;
}

/* Also the surprise hot-unplug path: MMIO may read all-ones by now. */
static void cnuas_remove(struct pci_dev *pdev)
{
	struct cnuas_net *cn = pci_get_drvdata(pdev);

	if (!pci_device_is_present(pdev))
		set_bit(CNUAS_F_GONE, &cn->flags);

	cnuas_aux_destroy(cn);

	cnuas_stop_all(cn);
	cnuas_irq_teardown(cn);
	cancel_work_sync(&cn->misc_work);
	cnuas_netdev_destroy(cn);

	cnuas_hw_reset(cn);	/* nothing may DMA into what we free now */
	cnuas_rings_free(cn);
	pci_clear_master(pdev);
	pci_iounmap(pdev, cn->regs);
	pci_release_regions(pdev);
	pci_disable_device(pdev);
	mutex_destroy(&cn->aux_lock);
	mutex_destroy(&cn->dp_lock);
	kfree(cn);
}

static void cnuas_shutdown(struct pci_dev *pdev)
{
	struct cnuas_net *cn = pci_get_drvdata(pdev);

	/* Stop DMA before kexec or power off. */
	if (pci_device_is_present(pdev))
		cnuas_wr(cn, CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_RESET);
	pci_clear_master(pdev);
}

static const struct pci_device_id cnuas_pci_ids[] = {
	{ PCI_DEVICE(CNUAS_VNIC_VENDOR_ID, CNUAS_VNIC_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, cnuas_pci_ids);

static struct pci_driver cnuas_pci_driver = {
	.name		= CNUAS_NET_DRV_NAME,
	.id_table	= cnuas_pci_ids,
	.probe		= cnuas_probe,
	.remove		= cnuas_remove,
	.shutdown	= cnuas_shutdown,
};

static int __init cnuas_net_init(void)
{
	cnuas_ib_link_init();
	return pci_register_driver(&cnuas_pci_driver);
}
module_init(cnuas_net_init);

static void __exit cnuas_net_exit(void)
{
	pci_unregister_driver(&cnuas_pci_driver);
}
module_exit(cnuas_net_exit);

MODULE_DESCRIPTION("cnuas-vnic virtual NIC driver");
MODULE_AUTHOR("The Cnuas developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(CNUAS_VERSION);
