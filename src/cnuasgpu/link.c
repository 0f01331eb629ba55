// SPDX-License-Identifier: GPL-2.0
/*
 * CnuasLink: frames between two GPUs. The driver keeps one TX and one RX
 * staging buffer of a maximum frame each in BAR1 (taken from the pool, not
 * available to users); the ioctls copy user buffers through them. The
 * interrupt only wakes waiters: all state is in the registers.
 */

#include <linux/interrupt.h>
#include <linux/pagemap.h>
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
	gdev->tx_addr = gen_pool_alloc(gdev->pool, CNUASGPU_LINK_MAX_FRAME);
	gdev->rx_addr = gen_pool_alloc(gdev->pool, CNUASGPU_LINK_MAX_FRAME);
	if (!gdev->tx_addr || !gdev->rx_addr) {
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
	void *frame;
	u64 off;
	long err;
	u32 res;

	err = cnuasgpu_link_get_req(arg, &req, 0);
	if (err)
		return err;
	if (!req.len || req.len > CNUASGPU_LINK_MAX_FRAME)
		return -EMSGSIZE;
	/* Copied before the lock: a slow or faulting buffer stalls only us. */
	frame = vmemdup_user(u64_to_user_ptr(req.buf), req.len);
	if (IS_ERR(frame))
		return PTR_ERR(frame);
	if (mutex_lock_interruptible(&gdev->tx_lock)) {
		kvfree(frame);
		return -ERESTARTSYS;
	}
	if (READ_ONCE(gdev->dead)) {
		err = -ENODEV;
		goto out;
	}
	if (!cnuasgpu_link_up(gdev)) {
		err = -ENOLINK;
		goto out;
	}
	off = gdev->tx_addr - gdev->mem_phys;
	memcpy_toio(gdev->mem + off, frame, req.len);
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
	kvfree(frame);
	return err;
}

/*
 * Copy the waiting frame to the caller without sleeping on its page faults,
 * so the RX lock is never held across a slow buffer. The frame is consumed
 * only once it reached the caller: a faulting buffer loses nothing.
 * Returns 0, -EFAULT to fault the buffer in and retry, or an error.
 */
static int cnuasgpu_link_take(struct cnuasgpu_dev *gdev,
			      struct cnuasgpu_link_frame *req, void *frame)
{
	u32 len = cnuasgpu_rd(gdev, CNUASGPU_REG_RX_LEN);

	if (len > CNUASGPU_LINK_MAX_FRAME)
		return -EIO;
	if (len > req->len) {
		/* The frame stays for a caller with a larger buffer. */
		req->len = len;
		return -EMSGSIZE;
	}
	memcpy_fromio(frame, gdev->mem + (gdev->rx_addr - gdev->mem_phys), len);
	if (copy_to_user_nofault(u64_to_user_ptr(req->buf), frame, len))
		return -EFAULT;
	cnuasgpu_wr(gdev, CNUASGPU_REG_RX_CONSUME, 1);
	req->len = len;
	return 0;
}

int cnuasgpu_ioc_link_recv(struct cnuasgpu_file *gf, void __user *arg)
{
	struct cnuasgpu_dev *gdev = gf->gdev;
	struct cnuasgpu_link_frame req;
	u32 room;
	void *frame;
	long err;

	err = cnuasgpu_link_get_req(arg, &req, CNUASGPU_LINK_NONBLOCK);
	if (err)
		return err;
	room = min_t(u32, req.len, CNUASGPU_LINK_MAX_FRAME);
	frame = kvmalloc(room ?: 1, GFP_KERNEL);
	if (!frame)
		return -ENOMEM;
retry:
	if (mutex_lock_interruptible(&gdev->rx_lock)) {
		kvfree(frame);
		return -ERESTARTSYS;
	}
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
	err = cnuasgpu_link_take(gdev, &req, frame);
	if (err == -EFAULT) {
		mutex_unlock(&gdev->rx_lock);
		/* Whole buffer: the next frame may be longer than this one. */
		if (fault_in_writeable(u64_to_user_ptr(req.buf), room)) {
			kvfree(frame);
			return -EFAULT;
		}
		goto retry;
	}
out:
	mutex_unlock(&gdev->rx_lock);
	kvfree(frame);
	if ((!err || err == -EMSGSIZE) && copy_to_user(arg, &req, sizeof(req)))
		err = -EFAULT;
	return err;
}
