/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The link layer under the transport: what the common code (net.c,
 * recv.c, ah.c, qp.c) asks of the port's framing and addressing, one
 * const table per link layer, picked at probe from what the device says
 * it is (cdev->link): RoCEv2 (roce_frame.c: Ethernet, IP, UDP) or native
 * InfiniBand (ib_frame.c: LRH, GRH). The common code calls a link layer
 * only through its table; a link layer calls only the common helpers
 * declared at the end of this header, never back into net.c.
 *
 * What the IBA itself answers differently per link layer at the verbs
 * level (query_port, the GID and P_Key tables, get_port_immutable, QP0,
 * subnet management) stays plain cnuas_ib_is_eth() tests.
 */
#ifndef CNUAS_IB_LINK_OPS_H
#define CNUAS_IB_LINK_OPS_H

#include "cnuas_ib.h"

/* Where a frame the transport built goes (->route). */
enum cnuas_ib_route {
	CNUAS_IB_ROUTE_WIRE,	/* to the device */
	CNUAS_IB_ROUTE_MCAST,	/* to the device, a copy to our own members */
	CNUAS_IB_ROUTE_LOCAL,	/* to ourselves: the loop, never the device */
	CNUAS_IB_ROUTE_DOWN,	/* the port may not send it now: lost */
};

struct cnuas_ib_link_ops {
	const char *name;			/* as the probe line says it */
	/*
	 * create_ah, modify_qp: @attr resolved once into @av; -EINVAL for
	 * an address this link layer cannot use. ->av_to_attr: back, for
	 * query_ah and query_qp.
	 */
	int (*av_from_attr)(struct cnuas_ib_dev *cdev, struct cnuas_ib_av *av,
			    const struct rdma_ah_attr *attr);
	void (*av_to_attr)(const struct cnuas_ib_av *av,
			   struct rdma_ah_attr *attr);
	/*
	 * A frame to @av with every header up to the transport's, which
	 * go at *@bth (@hdr_len bytes of BTH and extension headers), then
	 * @paylen of payload, pad and ICRC. @linear: all of it in the head,
	 * else the head ends at the extension headers and the rest comes as
	 * fragments. @pool (or NULL): the QP's reusable frames it may take.
	 */
	struct sk_buff *(*frame_new)(struct cnuas_ib_dev *cdev,
				     struct cnuas_skb_pool *pool,
				     const struct cnuas_ib_av *av, u32 hdr_len,
				     u32 paylen, bool linear, void **bth);
	/*
	 * Once BTH, extension headers and payload are in place: what the
	 * link layer fills in last, then the ICRC (the device's where it
	 * seals the frame, cnuas_ib_seal_hw(), else ->seal_sw()).
	 */
	void (*seal)(struct cnuas_ib_dev *cdev, struct sk_buff *skb);
	/* Seal a linear frame here (a copy that never meets the device). */
	void (*seal_sw)(struct sk_buff *skb);
	/* Is a built frame addressed to this port (the loop takes it)? */
	bool (*is_local)(struct cnuas_ib_dev *cdev, const struct sk_buff *skb);
	/* Where a sealed frame goes: one look at its headers per frame. */
	enum cnuas_ib_route (*route)(struct cnuas_ib_dev *cdev,
				     const struct sk_buff *skb);
	/*
	 * A received frame, linear and hostile: its envelope and ICRC
	 * (checked here unless @flags carry the device's verdict), then the
	 * transport headers (cnuas_ib_parse_bth()). 0, @p filled, or the
	 * CNUAS_STAT_* drop reason.
	 */
	int (*parse)(struct cnuas_ib_dev *cdev, struct sk_buff *skb, u32 flags,
		     struct cnuas_ib_rxp *p);
	/*
	 * The QPNs attached to the group a received multicast packet goes
	 * to, copied into @qpn (CNUAS_IB_MAX_MCAST_QP_ATTACH at most).
	 */
	u32 (*mcast_qpns)(struct cnuas_ib_dev *cdev,
			  const struct cnuas_ib_rxp *p, u32 *qpn);
};

extern const struct cnuas_ib_link_ops cnuas_ib_roce_link;	/* roce_frame.c */
extern const struct cnuas_ib_link_ops cnuas_ib_ib_link;	/* ib_frame.c */

/* ---- common helpers the link layers use ---- */

/*
 * recv.c: the transport headers, @blen bytes from the BTH through the
 * ICRC: 0 (@p's op, bth, opcode, psn, qpn, payload, paylen set) or the
 * CNUAS_STAT_* drop reason.
 */
int cnuas_ib_parse_bth(struct cnuas_ib_dev *cdev, struct cnuas_ib_rxp *p,
		       void *bth, u32 blen);

/* frame.c: an skb for a frame of @head linear bytes, from @pool or not. */
struct sk_buff *cnuas_ib_pool_get(struct cnuas_skb_pool *pool, u32 head);

/*
 * mcast.c: the QPNs of the group of @mgid (RoCE), or of multicast LID
 * @mlid and, with a GRH at @grh, its MGID (InfiniBand), copied into @qpn
 * when not NULL; 0: no such group. Any context.
 */
u32 cnuas_ib_mcg_qpns(struct cnuas_ib_dev *cdev, const union ib_gid *mgid,
		      u32 *qpn);
u32 cnuas_ib_mcg_qpns_lid(struct cnuas_ib_dev *cdev, u16 mlid, const u8 *grh,
			  u32 *qpn);

/*
 * frame.c: where the device seals what it sends, hand it the frame
 * (true); false: the link layer seals it (no offload, or @local).
 */
bool cnuas_ib_seal_hw(struct cnuas_ib_dev *cdev, struct sk_buff *skb,
		      bool local);

#endif /* CNUAS_IB_LINK_OPS_H */
