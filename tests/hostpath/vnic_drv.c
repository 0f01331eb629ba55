// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * The harness's driver of one cnuas-vnic: PCI config through port I/O,
 * bring-up as the device spec says, rings and status block in the shared
 * guest RAM. TX descriptors are written once (the device never writes
 * them back), so keeping TX busy is one doorbell per batch; RX buffers
 * are reposted in batches, one doorbell each.
 */
#include <string.h>
#include <time.h>

#include "hostpath.h"

#define CFG(reg)	(0x80000000u | (4u << 11) | (reg))	/* bus 0, slot 4 */
#define REG(off)	(HP_BAR0 + (off))

static struct cnuas_vnic_desc *ring(struct vnic *v, uint32_t base)
{
	return (struct cnuas_vnic_desc *)(v->qp.ram + base);
}

static const struct cnuas_vnic_status_block *sb(const struct vnic *v)
{
	return (const void *)(v->qp.ram + HP_SB);
}

uint32_t vnic_tx_cons(const struct vnic *v)
{
	return __atomic_load_n(&sb(v)->tx_cons, __ATOMIC_ACQUIRE);
}

uint32_t vnic_rx_cons(const struct vnic *v)
{
	return __atomic_load_n(&sb(v)->rx_prod, __ATOMIC_ACQUIRE);
}

uint32_t vnic_stat(struct vnic *v, unsigned int off)
{
	uint64_t val = 0;

	qemu_cmd(&v->qp, &val, "readl 0x%x", REG(CNUAS_VNIC_REG_STATS + off));
	return (uint32_t)val;
}

uint32_t vnic_poll(struct vnic *v)
{
	uint64_t val = 0;

	qemu_cmd(&v->qp, &val, "readl 0x%x", HP_BAR2 + CNUAS_VNIC_POLL_RX);
	return (uint32_t)val;
}

static int wr(struct vnic *v, unsigned int off, uint32_t val)
{
	return qemu_cmd(&v->qp, NULL, "writel 0x%x 0x%x", REG(off), val);
}

static int sleep_us(long us)
{
	struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

	return nanosleep(&ts, NULL);
}

static uint32_t rx_window(const struct vnic *v)
{
	return v->rx_window ? v->rx_window : HP_RING;
}

int vnic_up(struct vnic *v)
{
	struct qemu_proc *q = &v->qp;
	struct cnuas_vnic_desc *rx = ring(v, HP_RX_RING);
	uint64_t id = 0, st = 0;
	uint32_t i;
	int tries;

	if (qemu_cmd(q, NULL, "outl 0xcf8 0x%x", CFG(0)) ||
	    qemu_cmd(q, &id, "inl 0xcfc") ||
	    id != (CNUAS_VNIC_DEVICE_ID << 16 | CNUAS_VNIC_VENDOR_ID))
		return -1;
	/* BAR0 (and BAR2), then memory decoding and bus mastering (DMA). */
	if (v->rx_poll && (qemu_cmd(q, NULL, "outl 0xcf8 0x%x", CFG(0x18)) ||
			   qemu_cmd(q, NULL, "outl 0xcfc 0x%x", HP_BAR2)))
		return -1;
	if (qemu_cmd(q, NULL, "outl 0xcf8 0x%x", CFG(0x10)) ||
	    qemu_cmd(q, NULL, "outl 0xcfc 0x%x", HP_BAR0) ||
	    qemu_cmd(q, NULL, "outl 0xcf8 0x%x", CFG(0x04)) ||
	    qemu_cmd(q, NULL, "outl 0xcfc 0x6"))
		return -1;
	if (qemu_cmd(q, &id, "readl 0x%x", REG(CNUAS_VNIC_REG_MAGIC)) ||
	    id != CNUAS_VNIC_MAGIC_VALUE)
		return -1;
	memset(q->ram + HP_SB, 0, 64);
	for (i = 0; i < HP_RING; i++) {
		rx[i].addr = HP_RX_BUFS + (uint64_t)i * HP_BUF;
		rx[i].len = HP_BUF;
		rx[i].flags = 0;
	}
	if (wr(v, CNUAS_VNIC_REG_DRV_FEATURES, CNUAS_VNIC_F_STATUS_BLOCK |
	       (v->rx_poll ? CNUAS_VNIC_F_RX_POLL : 0)) ||
	    wr(v, CNUAS_VNIC_REG_SB_LO, HP_SB) ||
	    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_BASE_LO, HP_TX_RING) ||
	    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_SIZE, HP_RING) ||
	    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_BASE_LO, HP_RX_RING) ||
	    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_SIZE, HP_RING) ||
	    wr(v, CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_ENABLE) ||
	    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_PROD, rx_window(v)))
		return -1;
	v->rx_prod = rx_window(v);
	for (tries = 0; tries < 400; tries++) {
		if (qemu_cmd(q, &st, "readl 0x%x", REG(CNUAS_VNIC_REG_STATUS)))
			return -1;
		if (st & CNUAS_VNIC_STATUS_ERROR)
			return -1;
		if (st & CNUAS_VNIC_STATUS_LINK_UP)
			return 0;
		sleep_us(10000);
	}
	return -1;
}

static void put_frame(uint8_t *buf, const uint8_t *dst, const uint8_t *src,
		      uint32_t len, uint32_t seed)
{
	uint32_t i;

	memcpy(buf, dst, 6);
	memcpy(buf + 6, src, 6);
	buf[12] = 0x88;		/* 0x88b5: local experimental EtherType */
	buf[13] = 0xb5;
	for (i = 14; i < len; i++)
		buf[i] = (uint8_t)(i + seed);
}

void vnic_set_frames(struct vnic *v, const uint8_t *dst, uint32_t len)
{
	struct cnuas_vnic_desc *tx = ring(v, HP_TX_RING);
	uint32_t i;

	for (i = 0; i < HP_TX_NBUF; i++)
		put_frame(v->qp.ram + HP_TX_BUFS + i * HP_BUF, dst, v->mac, len, i);
	for (i = 0; i < HP_RING; i++) {
		tx[i].addr = HP_TX_BUFS + (uint64_t)(i % HP_TX_NBUF) * HP_BUF;
		tx[i].len = len;
		tx[i].flags = 0;
	}
	v->frame_len = len;
}

int vnic_announce(struct vnic *v)
{
	static const uint8_t bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	struct cnuas_vnic_desc *d = &ring(v, HP_TX_RING)[v->tx_prod & (HP_RING - 1)];
	struct cnuas_vnic_desc keep = *d;
	int tries;

	put_frame(v->qp.ram + HP_LEARN_BUF, bcast, v->mac, 60, 0);
	d->addr = HP_LEARN_BUF;
	d->len = 60;
	d->flags = 0;
	v->tx_prod++;
	if (wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, v->tx_prod))
		return -1;
	for (tries = 0; tries < 200 && vnic_tx_cons(v) != v->tx_prod; tries++)
		sleep_us(5000);
	*d = keep;
	return vnic_tx_cons(v) == v->tx_prod ? 0 : -1;
}

bool vnic_tx_fill(struct vnic *v, uint32_t batch)
{
	uint32_t room = HP_RING - (v->tx_prod - vnic_tx_cons(v));

	if (room < batch || v->qp.pending > 1)
		return false;
	v->tx_prod += room;
	qemu_post(&v->qp, "writel 0x%x 0x%x",
		  REG(CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD), v->tx_prod);
	return true;
}

bool vnic_rx_refill(struct vnic *v, uint32_t batch)
{
	struct cnuas_vnic_desc *rx = ring(v, HP_RX_RING);
	uint32_t cons = vnic_rx_cons(v), i;
	struct cnuas_vnic_desc *d;

	for (; v->rx_seen != cons; v->rx_seen++) {
		d = &rx[v->rx_seen & (HP_RING - 1)];
		if (d->flags == CNUAS_VNIC_DESC_F_DONE && d->len == v->frame_len)
			v->rx_frames++;
		else if (d->flags == CNUAS_VNIC_DESC_F_DONE && v->alt_len && d->len == v->alt_len)
			v->rx_alt++;
		else
			v->rx_bad++;
	}
	if (cons + rx_window(v) - v->rx_prod < (batch < rx_window(v) ? batch : rx_window(v) / 2) ||
	    v->qp.pending > 1)
		return false;
	for (i = v->rx_prod; i != cons + rx_window(v); i++) {
		d = &rx[i & (HP_RING - 1)];
		d->len = HP_BUF;
		d->flags = 0;
	}
	v->rx_prod = cons + rx_window(v);
	qemu_post(&v->qp, "writel 0x%x 0x%x",
		  REG(CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_PROD), v->rx_prod);
	return true;
}
