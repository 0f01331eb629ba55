// SPDX-License-Identifier: GPL-2.0
/*
 * Descriptor rings: allocation, TX posting and completion, RX buffer
 * posting and reception. No per-frame MMIO: one doorbell per batch, and
 * completions are read from the status block in guest memory.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/skbuff.h>

#include "cnuas_net.h"
#include "cnuas_skb.h"

static size_t cnuas_ring_bytes(u32 size)
{
	return (size_t)size * sizeof(struct cnuas_vnic_desc);
}

static int cnuas_ring_mem_alloc(struct cnuas_net *cn, u32 size,
				size_t buf_size, struct cnuas_vnic_desc **desc,
				dma_addr_t *dma, void **buf)
{
	/* dma_alloc_coherent memory is page aligned (>= 16 bytes needed). */
	*desc = dma_alloc_coherent(&cn->pdev->dev, cnuas_ring_bytes(size), dma,
				   GFP_KERNEL);
	*buf = kcalloc(size, buf_size, GFP_KERNEL);
	if (*desc && *buf)
		return 0;
	kfree(*buf);
	if (*desc)
		dma_free_coherent(&cn->pdev->dev, cnuas_ring_bytes(size), *desc,
				  *dma);
	return -ENOMEM;
}

static void cnuas_rings_release(struct cnuas_net *cn)
{
	struct device *dev = &cn->pdev->dev;

	kfree(cn->rx.buf);
	cn->rx.buf = NULL;
	if (cn->rx.desc)
		dma_free_coherent(dev, cnuas_ring_bytes(cn->rx.size),
				  cn->rx.desc, cn->rx.desc_dma);
	cn->rx.desc = NULL;
	kfree(cn->tx.buf);
	cn->tx.buf = NULL;
	if (cn->tx.desc)
		dma_free_coherent(dev, cnuas_ring_bytes(cn->tx.size),
				  cn->tx.desc, cn->tx.desc_dma);
	cn->tx.desc = NULL;
}

/*
 * Replace both rings with rings of the given sizes. The data path must be
 * stopped (rings empty). On failure the old rings stay.
 */
int cnuas_rings_resize(struct cnuas_net *cn, u32 tx_size, u32 rx_size)
{
	struct cnuas_vnic_desc *td, *rd;
	dma_addr_t tdma, rdma;
	void *tb, *rb;

	if (cnuas_ring_mem_alloc(cn, tx_size, sizeof(struct cnuas_tx_buf),
				 &td, &tdma, &tb))
		return -ENOMEM;
	if (cnuas_ring_mem_alloc(cn, rx_size, sizeof(struct cnuas_rx_buf),
				 &rd, &rdma, &rb)) {
		kfree(tb);
		dma_free_coherent(&cn->pdev->dev, cnuas_ring_bytes(tx_size),
				  td, tdma);
		return -ENOMEM;
	}
	cnuas_rings_release(cn);
	cn->tx.desc = td;
	cn->tx.desc_dma = tdma;
	cn->tx.buf = tb;
	cn->tx.size = tx_size;
	cn->rx.desc = rd;
	cn->rx.desc_dma = rdma;
	cn->rx.buf = rb;
	cn->rx.size = rx_size;
	return 0;
}

/* Status block (64-byte aligned: coherent memory is page aligned), rings. */
int cnuas_rings_alloc(struct cnuas_net *cn, u32 tx_size, u32 rx_size)
{
	cn->sb = dma_alloc_coherent(&cn->pdev->dev, sizeof(*cn->sb),
				    &cn->sb_dma, GFP_KERNEL);
	if (!cn->sb)
		return -ENOMEM;
	if (cnuas_rings_resize(cn, tx_size, rx_size)) {
		cnuas_rings_free(cn);
		return -ENOMEM;
	}
	return 0;
}

void cnuas_rings_free(struct cnuas_net *cn)
{
	cnuas_rings_release(cn);
	if (cn->sb)
		dma_free_coherent(&cn->pdev->dev, sizeof(*cn->sb), cn->sb,
				  cn->sb_dma);
	cn->sb = NULL;
}

/* ---- TX ---- */

static u32 cnuas_tx_free(const struct cnuas_tx_ring *tx)
{
	return tx->size - (tx->prod - tx->cons);
}

u32 cnuas_tx_hw_cons(struct cnuas_net *cn)
{
	if (cn->features & CNUAS_VNIC_F_STATUS_BLOCK)
		return le32_to_cpu(READ_ONCE(cn->sb->tx_cons));
	return cnuas_rd(cn, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS);
}

void cnuas_tx_doorbell(struct cnuas_net *cn)
{
	struct cnuas_tx_ring *tx = &cn->tx;

	if (tx->db_prod == tx->prod)
		return;
	/* writel orders the descriptor writes before the doorbell. */
	cnuas_wr(cn, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, tx->prod);
	tx->db_prod = tx->prod;
}

static void cnuas_tx_unmap(struct cnuas_net *cn, struct cnuas_tx_buf *b)
{
	struct device *dev = &cn->pdev->dev;

	if (b->is_page)
		dma_unmap_page(dev, b->dma, b->len, DMA_TO_DEVICE);
	else
		dma_unmap_single(dev, b->dma, b->len, DMA_TO_DEVICE);
	b->len = 0;
}

static unsigned int cnuas_tx_count_desc(const struct sk_buff *skb)
{
	const struct skb_shared_info *si = skb_shinfo(skb);
	unsigned int i, n = skb_headlen(skb) ? 1 : 0;

	for (i = 0; i < si->nr_frags; i++)
		if (skb_frag_size(&si->frags[i]))
			n++;
	return n;
}

/*
 * Map @skb and write its descriptors; @dflags (CNUAS_VNIC_DESC_F_ICRC) go
 * on the first one. Caller holds tx_lock and has checked that the rings
 * run. The doorbell is the caller's business. Returns 0 (skb owned by
 * the ring), -EBUSY (no room) or another errno; on error the skb still
 * belongs to the caller.
 */
int cnuas_tx_post(struct cnuas_net *cn, struct sk_buff *skb, bool more,
		  bool from_netdev, u16 dflags)
{
	struct cnuas_tx_ring *tx = &cn->tx;
	struct device *dev = &cn->pdev->dev;
	u32 max_sg = (cn->features & CNUAS_VNIC_F_TX_SG) ?
		     CNUAS_VNIC_TX_MAX_SG : 1;
	u32 mask = tx->size - 1, first = tx->prod, p = tx->prod;
	unsigned int need, i;
	struct cnuas_tx_buf *b;

	/* The device kills the queue for a bad length: never post one. */
	if (!skb->len || skb->len > cn->max_frame)
		return -EMSGSIZE;

	need = cnuas_tx_count_desc(skb);
	if (need > max_sg) {
		if (skb_linearize(skb))
			return -ENOMEM;
		u64_stats_update_begin(&cn->tx_stats.syncp);
		u64_stats_inc(&cn->tx_stats.linearized);
		u64_stats_update_end(&cn->tx_stats.syncp);
		need = 1;
	}
	if (need > cnuas_tx_free(tx))
		return -EBUSY;

	if (skb_headlen(skb)) {
		b = &tx->buf[p & mask];
		b->dma = dma_map_single(dev, skb->data, skb_headlen(skb),
					DMA_TO_DEVICE);
		if (dma_mapping_error(dev, b->dma))
			goto unwind;
		b->len = skb_headlen(skb);
		b->is_page = false;
		p++;
	}
	for (i = 0; i < skb_shinfo(skb)->nr_frags; i++) {
		const skb_frag_t *f = &skb_shinfo(skb)->frags[i];

		if (!skb_frag_size(f))
			continue;
		b = &tx->buf[p & mask];
		b->dma = skb_frag_dma_map(dev, f, 0, skb_frag_size(f),
					  DMA_TO_DEVICE);
		if (dma_mapping_error(dev, b->dma))
			goto unwind;
		b->len = skb_frag_size(f);
		b->is_page = true;
		p++;
	}

	for (; first != p; first++) {
		struct cnuas_vnic_desc *d = &tx->desc[first & mask];

		b = &tx->buf[first & mask];
		b->skb = NULL;
		d->addr = cpu_to_le64(b->dma);
		d->len = cpu_to_le32(b->len);
		d->flags = cpu_to_le16(dflags | (first + 1 != p ?
						 CNUAS_VNIC_DESC_F_MORE : 0));
		d->reserved = 0;
		dflags = 0;
	}
	b = &tx->buf[(p - 1) & mask];
	b->skb = skb;
	b->from_netdev = from_netdev;
	tx->prod = p;
	if (!more)
		cnuas_tx_doorbell(cn);
	return 0;

unwind:
	while (p != first) {
		p--;
		cnuas_tx_unmap(cn, &tx->buf[p & mask]);
	}
	return -ENOMEM;
}

/*
 * Reclaim what the device consumed. Returns true when an auxiliary
 * client waits for room (the caller calls its tx_wake, unlocked).
 */
bool cnuas_tx_reap(struct cnuas_net *cn, int budget)
{
	struct cnuas_tx_ring *tx = &cn->tx;
	struct net_device *nd = cn->netdev;
	unsigned int pkts = 0, bytes = 0, bql_pkts = 0, bql_bytes = 0;
	u32 hw, mask = tx->size - 1;
	bool wake_aux = false;

	spin_lock(&cn->tx_lock);
	hw = cnuas_tx_hw_cons(cn);
	/* Ignore a consumer beyond what we posted (device gone or broken). */
	if (hw - tx->cons > tx->prod - tx->cons)
		goto out;

	while (tx->cons != hw) {
		struct cnuas_tx_buf *b = &tx->buf[tx->cons & mask];

		cnuas_tx_unmap(cn, b);
		if (b->skb) {
			pkts++;
			bytes += b->skb->len;
			if (b->from_netdev) {
				bql_pkts++;
				bql_bytes += b->skb->len;
			}
			napi_consume_skb(b->skb, budget);
			b->skb = NULL;
		}
		tx->cons++;
	}
	if (!pkts)
		goto out;

	u64_stats_update_begin(&cn->tx_stats.syncp);
	u64_stats_add(&cn->tx_stats.packets, pkts);
	u64_stats_add(&cn->tx_stats.bytes, bytes);
	u64_stats_add(&cn->tx_stats.aux_packets, pkts - bql_pkts);
	u64_stats_update_end(&cn->tx_stats.syncp);

	if (cnuas_tx_free(tx) >= CNUAS_TX_WAKE_THRESH) {
		if (nd && netif_queue_stopped(nd) &&
		    test_bit(CNUAS_F_RUNNING, &cn->flags) &&
		    !test_bit(CNUAS_F_DEAD, &cn->flags))
			netif_wake_queue(nd);
		wake_aux = test_and_clear_bit(CNUAS_F_AUX_TX_BLOCKED,
					      &cn->flags);
	}
out:
	if (nd && bql_pkts)
		netdev_completed_queue(nd, bql_pkts, bql_bytes);
	spin_unlock(&cn->tx_lock);
	return wake_aux;
}

/* Every descriptor posted is reaped; *@hw: the device's consumer seen. */
bool cnuas_tx_all_reaped(struct cnuas_net *cn, u32 *hw)
{
	struct cnuas_tx_ring *tx = &cn->tx;
	bool all;

	spin_lock(&cn->tx_lock);
	*hw = cnuas_tx_hw_cons(cn);
	all = tx->cons == tx->prod && *hw == tx->prod;
	spin_unlock(&cn->tx_lock);
	return all;
}

/* Drop everything still on the ring; the device is reset (no DMA). */
void cnuas_tx_drain(struct cnuas_net *cn)
{
	struct cnuas_tx_ring *tx = &cn->tx;
	u32 mask = tx->size - 1;

	spin_lock_bh(&cn->tx_lock);
	while (tx->cons != tx->prod) {
		struct cnuas_tx_buf *b = &tx->buf[tx->cons & mask];

		cnuas_tx_unmap(cn, b);
		if (b->skb)
			dev_kfree_skb_any(b->skb);
		b->skb = NULL;
		tx->cons++;
	}
	tx->prod = 0;
	tx->cons = 0;
	tx->db_prod = 0;
	memset(tx->desc, 0, cnuas_ring_bytes(tx->size));
	spin_unlock_bh(&cn->tx_lock);
	if (cn->netdev)
		netdev_reset_queue(cn->netdev);
}

/* ---- RX ---- */

/* Size RX buffers for frames of @frame_len bytes; rings must be empty. */
void cnuas_rx_set_buf_len(struct cnuas_net *cn, u32 frame_len)
{
	struct cnuas_rx_ring *rx = &cn->rx;

	rx->buf_len = frame_len;
	rx->truesize = SKB_DATA_ALIGN(CNUAS_RX_HEADROOM + frame_len) +
		       SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
}

static int cnuas_rx_buf_alloc(struct cnuas_net *cn, struct cnuas_rx_buf *b,
			      bool napi)
{
	struct device *dev = &cn->pdev->dev;
	void *data;

	data = napi ? napi_alloc_frag(cn->rx.truesize) :
		      netdev_alloc_frag(cn->rx.truesize);
	if (!data)
		return -ENOMEM;
	b->dma = dma_map_single(dev, data + CNUAS_RX_HEADROOM,
				cn->rx.buf_len, DMA_FROM_DEVICE);
	if (dma_mapping_error(dev, b->dma)) {
		skb_free_frag(data);
		return -ENOMEM;
	}
	b->data = data;
	return 0;
}

static void cnuas_rx_buf_free(struct cnuas_net *cn, struct cnuas_rx_buf *b)
{
	if (!b->data)
		return;
	dma_unmap_single(&cn->pdev->dev, b->dma, cn->rx.buf_len,
			 DMA_FROM_DEVICE);
	skb_free_frag(b->data);
	b->data = NULL;
}

static void cnuas_rx_post(struct cnuas_rx_ring *rx, u32 slot)
{
	struct cnuas_vnic_desc *d = &rx->desc[slot];

	d->addr = cpu_to_le64(rx->buf[slot].dma);
	d->len = cpu_to_le32(rx->buf_len);
	d->flags = 0;
	d->reserved = 0;
}

/* Give every slot a buffer (process context, before CTRL.ENABLE). */
int cnuas_rx_fill(struct cnuas_net *cn)
{
	struct cnuas_rx_ring *rx = &cn->rx;
	u32 i;

	rx->cons = 0;
	for (i = 0; i < rx->size; i++) {
		if (cnuas_rx_buf_alloc(cn, &rx->buf[i], false)) {
			cnuas_rx_drain(cn);
			return -ENOMEM;
		}
		cnuas_rx_post(rx, i);
	}
	return 0;
}

void cnuas_rx_drain(struct cnuas_net *cn)
{
	struct cnuas_rx_ring *rx = &cn->rx;
	u32 i;

	for (i = 0; i < rx->size; i++)
		cnuas_rx_buf_free(cn, &rx->buf[i]);
	memset(rx->desc, 0, cnuas_ring_bytes(rx->size));
	rx->cons = 0;
	/* A client still holding one frees it when it lets go. */
	for (i = 0; i < CNUAS_RX_POOL; i++) {
		dev_kfree_skb_any(rx->pool[i]);
		rx->pool[i] = NULL;
	}
}

static u32 cnuas_rx_hw_prod(struct cnuas_net *cn)
{
	if (cn->features & CNUAS_VNIC_F_STATUS_BLOCK)
		return le32_to_cpu(READ_ONCE(cn->sb->rx_prod));
	return cnuas_rd(cn, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS);
}

/*
 * Small frames get skbs of a little pool, used again once their last
 * user let go (users back to 1): a fresh skb per frame cost a page
 * allocation, zeroed (init_on_alloc), every few frames, on the path of
 * every RDMA message. A pool skb is only lent to the RDMA client, which
 * frees what it is given; one for the stack leaves the pool (see
 * cnuas_rx_deliver()). NULL: none free, allocate.
 */
static struct sk_buff *cnuas_rx_pool_get(struct cnuas_net *cn)
{
	struct cnuas_rx_ring *rx = &cn->rx;
	u32 i, n;

	for (i = 0; i < CNUAS_RX_POOL; i++) {
		struct sk_buff *skb;

		n = (rx->pool_next + i) % CNUAS_RX_POOL;
		skb = rx->pool[n];
		if (!skb) {
			skb = napi_alloc_skb(&cn->napi, CNUAS_RX_COPYBREAK);
			if (!skb)
				return NULL;
			rx->pool[n] = skb;
		} else if (!cnuas_skb_rewind(skb, CNUAS_RX_HEADROOM)) {
			continue;
		}
		rx->pool_next = n + 1;
		return skb_get(skb);
	}
	return NULL;
}

/* The stack may keep or change @skb: a pool skb becomes its own. */
static void cnuas_rx_pool_leave(struct cnuas_net *cn, struct sk_buff *skb)
{
	u32 i;

	if (!skb_shared(skb))
		return;
	for (i = 0; i < CNUAS_RX_POOL; i++) {
		if (cn->rx.pool[i] == skb) {
			cn->rx.pool[i] = NULL;
			napi_consume_skb(skb, 1);	/* the pool's reference */
			return;
		}
	}
}

/* A small frame in its own skb; the ring keeps buffer @b (mapped). */
static struct sk_buff *cnuas_rx_copy(struct cnuas_net *cn,
				     const struct cnuas_rx_buf *b, u32 len)
{
	struct device *dev = &cn->pdev->dev;
	struct sk_buff *skb = len <= CNUAS_RX_COPYBREAK ?
			      cnuas_rx_pool_get(cn) : NULL;

	if (!skb)
		skb = napi_alloc_skb(&cn->napi, len);

	if (!skb)
		return NULL;
	dma_sync_single_for_cpu(dev, b->dma, len, DMA_FROM_DEVICE);
	skb_put_data(skb, b->data + CNUAS_RX_HEADROOM, len);
	dma_sync_single_for_device(dev, b->dma, len, DMA_FROM_DEVICE);
	return skb;
}

/* The device's ICRC verdict in @dflags as ops->rx flags. */
static u32 cnuas_rx_aux_flags(u16 dflags)
{
	u32 f = 0;

	if (dflags & CNUAS_VNIC_DESC_F_ICRC_OK)
		f |= CNUAS_NET_AUX_RX_ICRC_OK;
	else if (dflags & CNUAS_VNIC_DESC_F_ICRC_BAD)
		f |= CNUAS_NET_AUX_RX_ICRC_BAD;
	return f;
}

/* Hand one good frame to the aux client or the stack. */
static void cnuas_rx_deliver(struct cnuas_net *cn, struct sk_buff *skb,
			     u16 dflags, unsigned int *aux_pkts,
			     unsigned int *no_client, unsigned int *vcrc_bad)
{
	const struct cnuas_net_aux_ops *ops = rcu_dereference(cn->aux_ops);

	/* InfiniBand: the link layer checks and strips the VCRC. */
	if (!cnuas_is_eth(cn) &&
	    ((dflags & CNUAS_VNIC_DESC_F_VCRC_BAD) ||
	     (cnuas_ib_link_sw(cn) && !cnuas_ib_link_rx(skb)))) {
		cnuas_net_drop(cn, *vcrc_bad, "rx_vcrc_errors",
			       "%u-byte frame: VCRC bad or frame too short\n",
			       skb->len);
		napi_consume_skb(skb, 1);
		return;
	}

	if (ops && (!cnuas_is_eth(cn) || cnuas_aux_wants(cn, skb))) {
		skb_reset_mac_header(skb);
		skb->dev = cn->netdev;
		/* Only a device that was asked to check gives a verdict. */
		if (!(cn->features &
		      (CNUAS_VNIC_F_RDMA_ICRC | CNUAS_VNIC_F_IB_CRC)))
			dflags = 0;
		ops->rx(cn->aux, skb, cnuas_rx_aux_flags(dflags));
		(*aux_pkts)++;
		return;
	}
	if (!cn->netdev) {
		cnuas_net_drop(cn, *no_client, "rx_no_client",
			       "%u-byte frame, no RDMA driver attached\n",
			       skb->len);
		napi_consume_skb(skb, 1);
		return;
	}
	cnuas_rx_pool_leave(cn, skb);
	skb->protocol = eth_type_trans(skb, cn->netdev);
	napi_gro_receive(&cn->napi, skb);
}

/*
 * Receive up to @budget frames. The ring is kept full: each consumed slot
 * is refilled (a new buffer, or the old one when the frame is dropped),
 * and the producer index is always cons + size: one doorbell per poll.
 */
int cnuas_rx_poll(struct cnuas_net *cn, int budget)
{
	struct cnuas_rx_ring *rx = &cn->rx;
	struct device *dev = &cn->pdev->dev;
	unsigned int pkts = 0, bytes = 0, dropped = 0, errors = 0;
	unsigned int aux_pkts = 0, no_client = 0, vcrc_bad = 0;
	u32 avail, mask = rx->size - 1;
	const struct cnuas_net_aux_ops *ops;
	int done = 0;

	avail = cnuas_rx_hw_prod(cn) - rx->cons;
	if (avail > rx->size)	/* device gone or broken: touch nothing */
		return 0;
	/* Read descriptors only after the index that covers them. */
	dma_rmb();

	rcu_read_lock();
	while (done < budget && avail--) {
		u32 slot = rx->cons & mask;
		struct cnuas_vnic_desc *d = &rx->desc[slot];
		struct cnuas_rx_buf *b = &rx->buf[slot];
		struct cnuas_rx_buf nb;
		struct sk_buff *skb;
		u16 flags = le16_to_cpu(READ_ONCE(d->flags));
		u32 len = le32_to_cpu(READ_ONCE(d->len));
		void *data = b->data;

		if (!(flags & CNUAS_VNIC_DESC_F_DONE))
			break;
		done++;
		rx->cons++;

		if ((flags & CNUAS_VNIC_DESC_F_ERR) || !len ||
		    len > rx->buf_len) {
			cnuas_net_drop(cn, errors, "rx_errors",
				       "RX slot %u: descriptor flags 0x%x, length %u (buffers hold %u)\n",
				       slot, flags, len, rx->buf_len);
			cnuas_rx_post(rx, slot);	/* reuse the buffer */
			continue;
		}
		if (len <= CNUAS_RX_COPYBREAK) {
			skb = cnuas_rx_copy(cn, b, len);
			cnuas_rx_post(rx, slot);	/* reuse the buffer */
			if (!skb) {
				cnuas_net_drop(cn, dropped, "rx_dropped_nomem",
					       "no skb to copy %u bytes into\n",
					       len);
				continue;
			}
			pkts++;
			bytes += len;
			cnuas_rx_deliver(cn, skb, flags, &aux_pkts, &no_client,
					 &vcrc_bad);
			continue;
		}
		if (cnuas_rx_buf_alloc(cn, &nb, true)) {
			cnuas_net_drop(cn, dropped, "rx_dropped_nomem",
				       "no new RX buffer: %u-byte frame dropped, its buffer reused\n",
				       len);
			cnuas_rx_post(rx, slot);
			continue;
		}
		dma_unmap_single(dev, b->dma, rx->buf_len, DMA_FROM_DEVICE);
		*b = nb;
		cnuas_rx_post(rx, slot);

		skb = napi_build_skb(data, rx->truesize);
		if (!skb) {
			skb_free_frag(data);
			cnuas_net_drop(cn, dropped, "rx_dropped_nomem",
				       "no skb around a %u-byte frame\n", len);
			continue;
		}
		skb_reserve(skb, CNUAS_RX_HEADROOM);
		skb_put(skb, len);
		pkts++;
		bytes += len;
		cnuas_rx_deliver(cn, skb, flags, &aux_pkts, &no_client,
				 &vcrc_bad);
	}
	if (aux_pkts) {
		ops = rcu_dereference(cn->aux_ops);
		if (ops && ops->rx_batch_end)
			ops->rx_batch_end(cn->aux);
	}
	rcu_read_unlock();

	/*
	 * Every slot is refilled at once, but the device hears of it only
	 * every CNUAS_RX_DB_BATCH slots: it always keeps most of the ring.
	 */
	if (done && rx->cons + rx->size - rx->db_prod >=
	    min_t(u32, CNUAS_RX_DB_BATCH, rx->size / 4)) {
		rx->db_prod = rx->cons + rx->size;
		cnuas_wr(cn, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_PROD,
			 rx->db_prod);
	}

	if (done) {
		u64_stats_update_begin(&cn->rx_stats.syncp);
		u64_stats_add(&cn->rx_stats.packets, pkts);
		u64_stats_add(&cn->rx_stats.bytes, bytes);
		u64_stats_add(&cn->rx_stats.dropped, dropped);
		u64_stats_add(&cn->rx_stats.errors, errors);
		u64_stats_add(&cn->rx_stats.aux_packets, aux_pkts);
		u64_stats_add(&cn->rx_stats.no_client, no_client);
		u64_stats_add(&cn->rx_stats.vcrc_errors, vcrc_bad);
		u64_stats_update_end(&cn->rx_stats.syncp);
	}
	return done;
}
