/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cnuas_net private definitions.
 *
 * Locking:
 * - rtnl, then cn->dp_lock (mutex): data path start/stop, MTU and ring
 *   changes, the MISC work.
 * - cn->aux_lock (mutex, never held with dp_lock): client attach/detach
 *   and link_change calls.
 * - cn->tx_lock (spinlock, BH): TX producer and completion; netdev and
 *   the auxiliary client both post on the one TX ring.
 * - RX runs only in NAPI. The aux client ops pointer is RCU protected.
 */
#ifndef CNUAS_NET_H
#define CNUAS_NET_H

#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>

#include "cnuas_vnic_hw.h"
#include "cnuas_net_aux.h"
#include "compat.h"

#define CNUAS_NET_DRV_NAME	KBUILD_MODNAME

#define CNUAS_NET_MIN_MTU	68
#define CNUAS_NET_MAX_MTU	9000
#define CNUAS_NET_DEF_RING	256

/* Room kept in RX buffers in front of the frame, and at their end. */
#define CNUAS_RX_HEADROOM	(NET_SKB_PAD + NET_IP_ALIGN)
/*
 * Frames up to this size are copied into a small skb and their buffer
 * goes straight back to the ring: an ACK or an atomic then costs no
 * allocation of a max-size buffer and no DMA map/unmap.
 */
#define CNUAS_RX_COPYBREAK	256
/* Reused skbs for small frames to the RDMA client (ring.c). */
#define CNUAS_RX_POOL		8
/* RX buffers refilled before the producer doorbell (a quarter ring at most). */
#define CNUAS_RX_DB_BATCH	32
/* Worst case descriptors for one skb, and when to wake the queue. */
#define CNUAS_TX_DESC_MAX	(MAX_SKB_FRAGS + 1)
#define CNUAS_TX_WAKE_THRESH	(2 * CNUAS_TX_DESC_MAX)

/* cn->flags bits */
enum {
	CNUAS_F_RUNNING,	/* rings enabled, TX accepted */
	CNUAS_F_DEAD,		/* a queue died; reset needed */
	CNUAS_F_REMOVING,	/* remove started: no new work */
	CNUAS_F_GONE,		/* device reads all-ones: surprise removal */
	CNUAS_F_AUX_TX_BLOCKED,	/* aux client saw -EBUSY, owes a tx_wake */
	CNUAS_F_LINK_UP,	/* last link state reported to users */
};

struct cnuas_tx_buf {
	struct sk_buff *skb;	/* on the last descriptor of a frame */
	dma_addr_t dma;
	u32 len;
	bool is_page;		/* mapped with dma_map_page (a frag) */
	bool from_netdev;	/* counted by BQL */
};

struct cnuas_rx_buf {
	void *data;		/* page fragment of rx.truesize bytes */
	dma_addr_t dma;		/* maps data + CNUAS_RX_HEADROOM */
};

struct cnuas_tx_ring {
	struct cnuas_vnic_desc *desc;
	dma_addr_t desc_dma;
	struct cnuas_tx_buf *buf;
	u32 size;		/* power of two */
	u32 prod;		/* next descriptor to fill */
	u32 cons;		/* next descriptor to reclaim */
	u32 db_prod;		/* last value written to the doorbell */
};

struct cnuas_rx_ring {
	struct cnuas_vnic_desc *desc;
	dma_addr_t desc_dma;
	struct cnuas_rx_buf *buf;
	u32 size;
	u32 cons;		/* next descriptor to look at; prod = cons + size */
	u32 db_prod;		/* the producer index the device was told */
	u32 buf_len;		/* bytes the device may write per buffer */
	u32 truesize;		/* fragment size: headroom + buf + shinfo */
	struct sk_buff *pool[CNUAS_RX_POOL];
	u32 pool_next;
};

struct cnuas_rx_stats {
	struct u64_stats_sync syncp;
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t dropped;	/* no memory for a new buffer */
	u64_stats_t errors;	/* oversize or malformed completion */
	u64_stats_t aux_packets;
	u64_stats_t no_client;	/* IB mode frame with no aux client */
	u64_stats_t vcrc_errors; /* IB mode frame with a bad VCRC, or short */
};

struct cnuas_tx_stats {
	struct u64_stats_sync syncp;
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t dropped;	/* bad length or DMA mapping failure */
	u64_stats_t linearized;
	u64_stats_t stops;	/* netdev queue stopped, ring full */
	u64_stats_t aux_packets;
	u64_stats_t aux_busy;
};

struct cnuas_net {
	struct pci_dev *pdev;
	void __iomem *regs;
	struct net_device *netdev;	/* Ethernet mode, else NULL */
	struct net_device *napi_dev;	/* netdev, or a dummy in IB mode */
	struct napi_struct napi;
	/* Adaptive threaded NAPI (napi_thread.c) */
	struct delayed_work napi_mode_work;
	unsigned long napi_busy_j;	/* last poll that left work behind */
	unsigned long napi_check_j;	/* last run of napi_mode_work */
	u32 napi_polls;			/* RX poll page reads then */
	bool napi_threaded;		/* we turned it on (under RTNL) */
	atomic_long_t napi_full_polls;	/* polls that left work behind */
	atomic_t napi_thread_switches;	/* times we turned it on */
	unsigned long flags;

	u32 link_layer;
	u32 features;			/* negotiated CNUAS_VNIC_F_* */
	u32 max_frame;			/* device limit */
	u32 int_delay_us;		/* INT_DELAY, under dp_lock */
	u32 hw_version;
	u8 mac[ETH_ALEN];

	struct cnuas_vnic_status_block *sb;
	dma_addr_t sb_dma;

	spinlock_t tx_lock;		/* TX ring producer and completion */
	struct cnuas_tx_ring tx;
	struct cnuas_rx_ring rx;
	struct cnuas_rx_stats rx_stats;
	struct cnuas_tx_stats tx_stats;

	int nvec;			/* 3 with MSI-X, else 1 */
	bool msix;
	char irq_name[CNUAS_VNIC_NUM_VECTORS][32];

	struct mutex dp_lock;		/* data path start/stop */
	bool dp_up;			/* under dp_lock */
	struct mutex aux_lock;		/* aux attach/detach, link_change */
	struct work_struct misc_work;	/* link and error handling */
	atomic_t misc_irqs;
	atomic_t resets;
	atomic_t dead_events;

	struct cnuas_net_aux_dev *aux;
	const struct cnuas_net_aux_ops __rcu *aux_ops;
};

static inline u32 cnuas_rd(struct cnuas_net *cn, u32 reg)
{
	return readl(cn->regs + reg);
}

static inline void cnuas_wr(struct cnuas_net *cn, u32 reg, u32 val)
{
	writel(val, cn->regs + reg);
}

static inline bool cnuas_is_eth(const struct cnuas_net *cn)
{
	return cn->link_layer == CNUAS_VNIC_LL_ETH;
}

/* InfiniBand with the VCRC in software (ib_link.c): no F_IB_CRC. */
static inline bool cnuas_ib_link_sw(const struct cnuas_net *cn)
{
	return !cnuas_is_eth(cn) && !(cn->features & CNUAS_VNIC_F_IB_CRC);
}

/*
 * Debug lines of the function, through dynamic debug (off until enabled:
 * echo 'module cnuas_net +p' > /sys/kernel/debug/dynamic_debug/control).
 * On the PCI device: in IB mode there is no netdev.
 */
#define cnuas_net_dbg(cn, fmt, ...) \
	dev_dbg(&(cn)->pdev->dev, fmt, ##__VA_ARGS__)

/*
 * A frame dropped: count it in @ctr and say why, naming the counter as
 * ethtool -S does (@name), e.g. "[rx_errors] drop: ...".
 */
#define cnuas_net_drop(cn, ctr, name, fmt, ...)				\
do {									\
	(ctr)++;							\
	cnuas_net_dbg(cn, "[" name "] drop: " fmt, ##__VA_ARGS__);	\
} while (0)

/* main.c */
int cnuas_hw_reset(struct cnuas_net *cn);
bool cnuas_ring_size_ok(u32 size);

/* ring.c */
int cnuas_rings_alloc(struct cnuas_net *cn, u32 tx_size, u32 rx_size);
int cnuas_rings_resize(struct cnuas_net *cn, u32 tx_size, u32 rx_size);
void cnuas_rings_free(struct cnuas_net *cn);
void cnuas_rx_set_buf_len(struct cnuas_net *cn, u32 frame_len);
int cnuas_rx_fill(struct cnuas_net *cn);
void cnuas_rx_drain(struct cnuas_net *cn);
void cnuas_tx_drain(struct cnuas_net *cn);
int cnuas_tx_post(struct cnuas_net *cn, struct sk_buff *skb, bool more,
		  bool from_netdev, u16 dflags);
void cnuas_tx_doorbell(struct cnuas_net *cn);
bool cnuas_tx_reap(struct cnuas_net *cn, int budget);
bool cnuas_tx_all_reaped(struct cnuas_net *cn, u32 *hw);
u32 cnuas_tx_hw_cons(struct cnuas_net *cn);
int cnuas_rx_poll(struct cnuas_net *cn, int budget);

/* datapath.c */
int cnuas_dp_start(struct cnuas_net *cn);
void cnuas_dp_stop(struct cnuas_net *cn);
int cnuas_napi_poll(struct napi_struct *napi, int budget);
u32 cnuas_cur_max_frame(struct cnuas_net *cn);

/* napi_thread.c */
void cnuas_napi_load(struct cnuas_net *cn, int done, int budget);
bool cnuas_napi_handover(struct cnuas_net *cn);
void cnuas_napi_mode_init(struct cnuas_net *cn);
void cnuas_napi_mode_stop(struct cnuas_net *cn);

/* link.c */
void cnuas_misc_kick(struct cnuas_net *cn);
void cnuas_misc_work(struct work_struct *work);

/* netdev.c */
int cnuas_netdev_create(struct cnuas_net *cn);
int cnuas_netdev_register(struct cnuas_net *cn);
void cnuas_netdev_unregister(struct cnuas_net *cn);
void cnuas_netdev_destroy(struct cnuas_net *cn);

/* irq.c */
int cnuas_irq_setup(struct cnuas_net *cn);
void cnuas_irq_teardown(struct cnuas_net *cn);
void cnuas_irq_sync(struct cnuas_net *cn);

/* ethtool.c */
void cnuas_set_ethtool_ops(struct net_device *netdev);

/* ib_link.c: the InfiniBand link layer's VCRC */
void cnuas_ib_link_init(void);
struct sk_buff *cnuas_ib_link_tx(struct sk_buff *skb);
void cnuas_ib_link_tx_undo(struct sk_buff *skb, struct sk_buff *out);
bool cnuas_ib_link_rx(struct sk_buff *skb);

/* aux.c */
int cnuas_aux_create(struct cnuas_net *cn);
void cnuas_aux_destroy(struct cnuas_net *cn);
bool cnuas_aux_wants(struct cnuas_net *cn, const struct sk_buff *skb);
void cnuas_aux_link_change(struct cnuas_net *cn, bool up);

#endif /* CNUAS_NET_H */
