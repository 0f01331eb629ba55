// SPDX-License-Identifier: GPL-2.0
/*
 * Interrupts: MSI-X with one vector per cause (RX, TX, MISC), or one
 * MSI/INTx vector whose handler reads and acknowledges INT_STATUS.
 * RX and TX share one NAPI context: the hard IRQ masks both causes and
 * the poll unmasks them when it completes.
 */
#include <linux/interrupt.h>

#include "cnuas_net.h"

#define CNUAS_INT_NAPI	(CNUAS_VNIC_INT_RX | CNUAS_VNIC_INT_TX)

static void cnuas_irq_napi(struct cnuas_net *cn)
{
	cnuas_wr(cn, CNUAS_VNIC_REG_INT_MASK_SET, CNUAS_INT_NAPI);
	napi_schedule(&cn->napi);
}

static void cnuas_irq_misc(struct cnuas_net *cn)
{
	atomic_inc(&cn->misc_irqs);
	if (!test_bit(CNUAS_F_REMOVING, &cn->flags))
		schedule_work(&cn->misc_work);
}

static irqreturn_t cnuas_msix_rxtx(int irq, void *data)
{
	struct cnuas_net *cn = data;

	/* The device masked RX and TX itself: no register to write. */
	if (cn->features & CNUAS_VNIC_F_INT_AUTOMASK) {
		napi_schedule(&cn->napi);
		return IRQ_HANDLED;
	}
	/* INT_STATUS/INT_ACK only matter for INTx: one MMIO write here. */
	cnuas_irq_napi(cn);
	return IRQ_HANDLED;
}

static irqreturn_t cnuas_msix_misc(int irq, void *data)
{
	struct cnuas_net *cn = data;

	cnuas_irq_misc(cn);
	return IRQ_HANDLED;
}

/* MSI or INTx (possibly shared): one vector for all causes. */
static irqreturn_t cnuas_irq_shared(int irq, void *data)
{
	struct cnuas_net *cn = data;
	u32 st = cnuas_rd(cn, CNUAS_VNIC_REG_INT_STATUS);

	/* All-ones: the device is gone; never claim or loop on it. */
	if (st == ~0u || !(st & CNUAS_VNIC_INT_ALL))
		return IRQ_NONE;
	st &= CNUAS_VNIC_INT_ALL;
	cnuas_wr(cn, CNUAS_VNIC_REG_INT_ACK, st);
	if (st & CNUAS_INT_NAPI)
		cnuas_irq_napi(cn);
	if (st & CNUAS_VNIC_INT_MISC)
		cnuas_irq_misc(cn);
	return IRQ_HANDLED;
}

int cnuas_irq_setup(struct cnuas_net *cn)
{
	static const char * const suffix[CNUAS_VNIC_NUM_VECTORS] = {
		[CNUAS_VNIC_VEC_RX] = "rx",
		[CNUAS_VNIC_VEC_TX] = "tx",
		[CNUAS_VNIC_VEC_MISC] = "misc",
	};
	struct pci_dev *pdev = cn->pdev;
	int n, i, err;

	n = pci_alloc_irq_vectors(pdev, CNUAS_VNIC_NUM_VECTORS,
				  CNUAS_VNIC_NUM_VECTORS, PCI_IRQ_MSIX);
	if (n == CNUAS_VNIC_NUM_VECTORS) {
		cn->msix = true;
	} else {
		n = pci_alloc_irq_vectors(pdev, 1, 1,
					  PCI_IRQ_MSI | PCI_IRQ_INTX);
		if (n < 0)
			return n;
		cn->msix = false;
	}
	cn->nvec = n;

	if (!cn->msix) {
		snprintf(cn->irq_name[0], sizeof(cn->irq_name[0]), "%s@%s",
			 CNUAS_NET_DRV_NAME, pci_name(pdev));
		err = request_irq(pci_irq_vector(pdev, 0), cnuas_irq_shared,
				  pdev->msi_enabled ? 0 : IRQF_SHARED,
				  cn->irq_name[0], cn);
		if (err)
			goto err_free_vectors;
		return 0;
	}

	for (i = 0; i < n; i++) {
		snprintf(cn->irq_name[i], sizeof(cn->irq_name[i]), "%s-%s@%s",
			 CNUAS_NET_DRV_NAME, suffix[i], pci_name(pdev));
		err = request_irq(pci_irq_vector(pdev, i),
				  i == CNUAS_VNIC_VEC_MISC ?
				  cnuas_msix_misc : cnuas_msix_rxtx,
				  0, cn->irq_name[i], cn);
		if (err)
			goto err_free_irqs;
	}
	return 0;

err_free_irqs:
	while (i--)
		free_irq(pci_irq_vector(pdev, i), cn);
err_free_vectors:
	pci_free_irq_vectors(pdev);
	cn->nvec = 0;
	return err;
}

void cnuas_irq_teardown(struct cnuas_net *cn)
{
	int i;

	for (i = 0; i < cn->nvec; i++)
		free_irq(pci_irq_vector(cn->pdev, i), cn);
	if (cn->nvec)
		pci_free_irq_vectors(cn->pdev);
	cn->nvec = 0;
}

/* Wait for running handlers (after masking or resetting the device). */
void cnuas_irq_sync(struct cnuas_net *cn)
{
	int i;

	for (i = 0; i < cn->nvec; i++)
		synchronize_irq(pci_irq_vector(cn->pdev, i));
}
