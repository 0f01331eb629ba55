/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Interface between cnuas_net (owner of the cnuas-vnic PCI function, its
 * rings and interrupts) and the RDMA driver bound to its auxiliary device
 * "cnuas_net.rdma.<id>".
 *
 * Frames: in Ethernet link-layer mode the client receives IPv4/IPv6 UDP
 * frames to port 4791 (RoCEv2, optionally behind one 802.1Q tag) while the
 * netdev keeps everything else; in IB link-layer mode there is no netdev
 * and the client receives every frame. Transmit shares the one TX ring with
 * the netdev.
 *
 * Rules for the client:
 * - Call cnuas_net_aux_attach() from probe and cnuas_net_aux_detach()
 *   from remove. No function below may be called after detach returns.
 * - ops->rx runs in NAPI (softirq) context under rcu_read_lock(); it owns
 *   the skb (skb->data and the mac header point at the start of the frame:
 *   the Ethernet header, or the LRH in IB mode; skb->dev is the netdev, NULL
 *   in IB mode). It may call cnuas_net_aux_xmit().
 * - ops->rx_batch_end (optional) runs after the last ->rx of one NAPI poll,
 *   so the client can ring its own doorbells once per batch.
 * - ops->tx_wake (optional) runs in softirq context after an xmit returned
 *   -EBUSY, once the TX ring has room again.
 * - ops->link_change (optional) runs in process context (may sleep; must
 *   not call attach/detach). The state at attach time is
 *   cnuas_net_aux_link_up(); "up" means the link is up and the rings run.
 */
#ifndef CNUAS_NET_AUX_H
#define CNUAS_NET_AUX_H

#include <linux/auxiliary_bus.h>
#include <linux/if_ether.h>
#include <linux/types.h>

struct net_device;
struct sk_buff;
struct cnuas_net;

/* Auxiliary device name: KBUILD_MODNAME "." CNUAS_NET_AUX_NAME "." id */
#define CNUAS_NET_AUX_NAME	"rdma"
#define CNUAS_NET_AUX_MATCH	"cnuas_net." CNUAS_NET_AUX_NAME

struct cnuas_net_aux_dev {
	struct auxiliary_device adev;
	u32 link_layer;			/* CNUAS_VNIC_LL_ETH or _IB */
	u8 mac[ETH_ALEN];		/* permanent device address */
	struct net_device *netdev;	/* Ethernet mode only, else NULL */
	struct device *dma_dev;		/* the PCI function, for DMA API use */
	u32 offloads;			/* CNUAS_NET_AUX_OFF_*, fixed at probe */
	/*
	 * Bus address of the device's RX poll page (CNUAS_VNIC_POLL_SIZE,
	 * safe to map into user space, see F_RX_POLL), or 0.
	 */
	phys_addr_t rx_poll_page;
	struct cnuas_net *cn;		/* private to cnuas_net */
};

/* What the device does for the client (cnuas_net_aux_dev.offloads). */
/* The link layer's ICRC, TX and RX: RoCEv2's, or IB's (and the VCRC). */
#define CNUAS_NET_AUX_OFF_ICRC		BIT(0)

/* cnuas_net_aux_xmit() flags. */
#define CNUAS_NET_AUX_TX_MORE		BIT(0)	/* more frames follow at once */
#define CNUAS_NET_AUX_TX_ICRC		BIT(1)	/* device fills ICRC (+ UDP csum) */

/* ops->rx flags: the device's verdict on a frame's ICRC, if any. */
#define CNUAS_NET_AUX_RX_ICRC_OK	BIT(0)
#define CNUAS_NET_AUX_RX_ICRC_BAD	BIT(1)

static inline struct cnuas_net_aux_dev *
to_cnuas_net_aux_dev(struct auxiliary_device *adev)
{
	return container_of(adev, struct cnuas_net_aux_dev, adev);
}

struct cnuas_net_aux_ops {
	void (*rx)(struct cnuas_net_aux_dev *adev, struct sk_buff *skb,
		   u32 flags);
	void (*rx_batch_end)(struct cnuas_net_aux_dev *adev);
	void (*tx_wake)(struct cnuas_net_aux_dev *adev);
	void (*link_change)(struct cnuas_net_aux_dev *adev, bool up);
};

/* Start/stop frame delivery to @ops. -EBUSY if another client is attached. */
int cnuas_net_aux_attach(struct cnuas_net_aux_dev *adev,
			 const struct cnuas_net_aux_ops *ops);
void cnuas_net_aux_detach(struct cnuas_net_aux_dev *adev);

/*
 * Queue @skb (a whole frame, head and page frags, 1..max_frame bytes) on
 * the TX ring. CNUAS_NET_AUX_TX_MORE in @flags: more frames follow at
 * once, so the doorbell may wait for them; the last frame of a batch must
 * go without it (or call cnuas_net_aux_flush()). CNUAS_NET_AUX_TX_ICRC
 * (only with CNUAS_NET_AUX_OFF_ICRC): the frame is RoCEv2 and the device
 * writes its ICRC and, for IPv6, its UDP checksum; or, on InfiniBand, an
 * IB transport packet (LRH through ICRC) whose ICRC the device writes.
 * On InfiniBand the VCRC is never the client's: cnuas_net or the device
 * appends it to every frame and checks and strips it on receive.
 * Returns 0: the skb belongs to cnuas_net (freed once sent).
 * -EBUSY: ring full, the skb still belongs to the caller; ops->tx_wake
 *         follows when there is room.
 * Other negative errno (-ENETDOWN: rings stopped, -EMSGSIZE, -ENOMEM): the
 * skb still belongs to the caller.
 */
int cnuas_net_aux_xmit(struct cnuas_net_aux_dev *adev, struct sk_buff *skb,
		       u32 flags);
/* Ring the TX doorbell for frames queued with @more == true. */
void cnuas_net_aux_flush(struct cnuas_net_aux_dev *adev);

/* Largest frame (headers included, no FCS) the RX buffers can take now. */
u32 cnuas_net_aux_max_frame(struct cnuas_net_aux_dev *adev);
bool cnuas_net_aux_link_up(struct cnuas_net_aux_dev *adev);
/* Link speed in Mb/s as the device reports it (REG_LINK_SPEED). */
u32 cnuas_net_aux_link_speed(struct cnuas_net_aux_dev *adev);
/*
 * Frames the link layer dropped on receive before the client saw them:
 * in IB mode a bad VCRC, or too short for one (ethtool's rx_vcrc_errors,
 * which IB mode has no netdev to show). Always 0 in Ethernet mode.
 */
u64 cnuas_net_aux_rx_vcrc_errors(struct cnuas_net_aux_dev *adev);

#endif /* CNUAS_NET_AUX_H */
