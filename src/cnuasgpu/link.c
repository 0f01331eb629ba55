// SPDX-License-Identifier: GPL-2.0
/*
 * CnuasLink: frames between two GPUs. The driver keeps one TX and one RX
 * staging buffer of a maximum frame each in BAR1 (taken from the pool, not
 * available to users); the ioctls copy user buffers through them. The
 * interrupt only wakes waiters: all state is in the registers.
 */

#include <linux/interrupt.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "cnuasgpu.h"

static irqreturn_t cnuasgpu_irq(int irq, void *data)
{
	struct cnuasgpu_dev *gdev = data;
	u32 status = cnuasgpu_rd(gdev, CNUASGPU_REG_INT_STATUS);

	if (!status || status == ~0u)	/* not ours, or surprise-removed */
		return IRQ_NONE;
	cnuasgpu_wr(gdev, CNUASGPU_REG_INT_STATUS, status);
	wake_up_all(&gdev->link_wq);
	return IRQ_HANDLED;
}

bool cnuasgpu_link_up(struct cnuasgpu_dev *gdev)
{
	return !READ_ONCE(gdev->dead) &&
	       (cnuasgpu_rd(gdev, CNUASGPU_REG_LINK_STATUS) & CNUASGPU_LINK_UP);
}

int cnuasgpu_link_init(struct cnuasgpu_dev *gdev)
{
	struct pci_dev *pdev = gdev->pdev;
	int err;

	init_waitqueue_head(&gdev->link_wq);
	mutex_init(&gdev->tx_lock);
	mutex_init(&gdev->rx_lock);
	mutex_init(&gdev->bounce_lock);
	gdev->bounce = kvmalloc(CNUASGPU_LINK_MAX_FRAME, GFP_KERNEL);
	gdev->tx_addr = gen_pool_alloc(gdev->pool, CNUASGPU_LINK_MAX_FRAME);
	gdev->rx_addr = gen_pool_alloc(gdev->pool, CNUASGPU_LINK_MAX_FRAME);
	if (!gdev->bounce || !gdev->tx_addr || !gdev->rx_addr) {
		err = -ENOMEM;
		goto err_free;
	}
	gdev->reserved_bytes = 2 * CNUASGPU_LINK_MAX_FRAME;

	err = pci_alloc_irq_vectors(pdev, 1, 1, PCI_IRQ_MSI | PCI_IRQ_INTX);
	if (err < 0)
		goto err_free;
	gdev->irq = pci_irq_vector(pdev, 0);
	err = request_irq(gdev->irq, cnuasgpu_irq, IRQF_SHARED, CNUASGPU_NAME,
			  gdev);
	if (err)
		goto err_vectors;

	cnuasgpu_wr(gdev, CNUASGPU_REG_RX_OFF_LO,
		    lower_32_bits(gdev->rx_addr - gdev->mem_phys));
	cnuasgpu_wr(gdev, CNUASGPU_REG_RX_OFF_HI,
		    upper_32_bits(gdev->rx_addr - gdev->mem_phys));
	cnuasgpu_wr(gdev, CNUASGPU_REG_RX_BUF_SIZE, CNUASGPU_LINK_MAX_FRAME);
	cnuasgpu_wr(gdev, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_ALL);
	cnuasgpu_wr(gdev, CNUASGPU_REG_INT_MASK, 0);
	return 0;

err_vectors:
	pci_free_irq_vectors(pdev);
	gdev->irq = -1;
err_free:
	if (gdev->tx_addr)
		gen_pool_free(gdev->pool, gdev->tx_addr, CNUASGPU_LINK_MAX_FRAME);
	if (gdev->rx_addr)
		gen_pool_free(gdev->pool, gdev->rx_addr, CNUASGPU_LINK_MAX_FRAME);
	gdev->tx_addr = 0;
	gdev->rx_addr = 0;
	kvfree(gdev->bounce);
	gdev->bounce = NULL;
	return err;
}

/* Removal: quiesce the device, wake and fail every waiter. */
void cnuasgpu_link_fini(struct cnuasgpu_dev *gdev)
{
	if (gdev->irq < 0)
		return;
	cnuasgpu_wr(gdev, CNUASGPU_REG_INT_MASK, CNUASGPU_INT_ALL);
	cnuasgpu_wr(gdev, CNUASGPU_REG_RX_BUF_SIZE, 0);
	free_irq(gdev->irq, gdev);
	pci_free_irq_vectors(gdev->pdev);
	gdev->irq = -1;
	wake_up_all(&gdev->link_wq);
	/* Waiters see dead and leave; then the staging memory can go. */
	mutex_lock(&gdev->tx_lock);
	mutex_lock(&gdev->rx_lock);
	gen_pool_free(gdev->pool, gdev->tx_addr, CNUASGPU_LINK_MAX_FRAME);
	gen_pool_free(gdev->pool, gdev->rx_addr, CNUASGPU_LINK_MAX_FRAME);
	gdev->tx_addr = 0;
	gdev->rx_addr = 0;
	mutex_unlock(&gdev->rx_lock);
	mutex_unlock(&gdev->tx_lock);
	kvfree(gdev->bounce);
	gdev->bounce = NULL;
}

static int cnuasgpu_link_get_req(void __user *arg,
				 struct cnuasgpu_link_frame *req, u32 flags_ok)
{
	if (copy_from_user(req, arg, sizeof(*req)))
		return -EFAULT;
	if (req->flags & ~flags_ok)
		return -EOPNOTSUPP;
	if (req->reserved0 || memchr_inv(req->reserved, 0, sizeof(req->reserved)))
		return -EINVAL;
	return 0;
}

static long cnuasgpu_link_wait(struct cnuasgpu_dev *gdev, u32 timeout_ms,
			       bool (*done)(struct cnuasgpu_dev *gdev))
{
	long t = timeout_ms ? msecs_to_jiffies(timeout_ms) : MAX_SCHEDULE_TIMEOUT;

	t = wait_event_interruptible_timeout(gdev->link_wq,
					     READ_ONCE(gdev->dead) || done(gdev), t);
	if (t < 0)
		return t;
	if (READ_ONCE(gdev->dead))
		return -ENODEV;
	return t ? 0 : -ETIMEDOUT;
}

static bool cnuasgpu_tx_done(struct cnuasgpu_dev *gdev)
{
	return cnuasgpu_rd(gdev, CNUASGPU_REG_TX_RESULT) != CNUASGPU_TX_PENDING;
}

static bool cnuasgpu_rx_ready(struct cnuasgpu_dev *gdev)
{
	return cnuasgpu_rd(gdev, CNUASGPU_REG_RX_LEN) != 0;
}

int cnuasgpu_ioc_link_send(struct cnuasgpu_file *gf, void __user *arg)
{
	struct cnuasgpu_dev *gdev = gf->gdev;
	struct cnuasgpu_link_frame req;
	u64 off;
	long err;
	u32 res;

	err = cnuasgpu_link_get_req(arg, &req, 0);
	if (err)
		return err;
	if (!req.len || req.len > CNUASGPU_LINK_MAX_FRAME)
		return -EMSGSIZE;
	if (mutex_lock_interruptible(&gdev->tx_lock))
		return -ERESTARTSYS;
	if (READ_ONCE(gdev->dead)) {
		err = -ENODEV;
		goto out;
	}
	if (!cnuasgpu_link_up(gdev)) {
		err = -ENOLINK;
		goto out;
	}
	off = gdev->tx_addr - gdev->mem_phys;
	mutex_lock(&gdev->bounce_lock);
	if (copy_from_user(gdev->bounce, u64_to_user_ptr(req.buf), req.len)) {
		mutex_unlock(&gdev->bounce_lock);
		err = -EFAULT;
		goto out;
	}
	memcpy_toio(gdev->mem + off, gdev->bounce, req.len);
	mutex_unlock(&gdev->bounce_lock);
	wmb();	/* frame in BAR1 before the doorbell */
	cnuasgpu_wr(gdev, CNUASGPU_REG_TX_OFF_LO, lower_32_bits(off));
	cnuasgpu_wr(gdev, CNUASGPU_REG_TX_OFF_HI, upper_32_bits(off));
	cnuasgpu_wr(gdev, CNUASGPU_REG_TX_LEN, req.len);
	cnuasgpu_wr(gdev, CNUASGPU_REG_TX_DOORBELL, 1);
	/* The device copied the frame at the doorbell; wait for the socket. */
	err = cnuasgpu_link_wait(gdev, req.timeout_ms ? req.timeout_ms :
				 CNUASGPU_LINK_TIMEOUT_MS, cnuasgpu_tx_done);
	if (err)
		goto out;
	res = cnuasgpu_rd(gdev, CNUASGPU_REG_TX_RESULT);
	if (res == CNUASGPU_TX_ERR_LINK)
		err = -ENOLINK;
	else if (res != CNUASGPU_TX_OK)
		err = -EIO;
out:
	mutex_unlock(&gdev->tx_lock);
	return err;
}

int cnuasgpu_ioc_link_recv(struct cnuasgpu_file *gf, void __user *arg)
{
	struct cnuasgpu_dev *gdev = gf->gdev;
	struct cnuasgpu_link_frame req;
	long err;
	u32 len;

	err = cnuasgpu_link_get_req(arg, &req, CNUASGPU_LINK_NONBLOCK);
	if (err)
		return err;
	if (mutex_lock_interruptible(&gdev->rx_lock))
		return -ERESTARTSYS;
	if (READ_ONCE(gdev->dead)) {
		err = -ENODEV;
		goto out;
	}
	if (!cnuasgpu_rx_ready(gdev)) {
		if (req.flags & CNUASGPU_LINK_NONBLOCK) {
			err = -EAGAIN;
			goto out;
		}
		err = cnuasgpu_link_wait(gdev, req.timeout_ms, cnuasgpu_rx_ready);
		if (err)
			goto out;
	}
	len = cnuasgpu_rd(gdev, CNUASGPU_REG_RX_LEN);
	if (len > CNUASGPU_LINK_MAX_FRAME) {
		err = -EIO;
		goto out;
	}
	if (len > req.len) {
		/* The frame stays for a caller with a larger buffer. */
		req.len = len;
		err = copy_to_user(arg, &req, sizeof(req)) ? -EFAULT : -EMSGSIZE;
		goto out;
	}
	mutex_lock(&gdev->bounce_lock);
	memcpy_fromio(gdev->bounce, gdev->mem + (gdev->rx_addr - gdev->mem_phys),
		      len);
	cnuasgpu_wr(gdev, CNUASGPU_REG_RX_CONSUME, 1);
	if (copy_to_user(u64_to_user_ptr(req.buf), gdev->bounce, len)) {
		mutex_unlock(&gdev->bounce_lock);
		err = -EFAULT;
		goto out;
	}
	mutex_unlock(&gdev->bounce_lock);
	req.len = len;
	err = copy_to_user(arg, &req, sizeof(req)) ? -EFAULT : 0;
out:
	mutex_unlock(&gdev->rx_lock);
	return err;
}
