/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Native InfiniBand framing of the transport's packets: the LRH and the
 * optional GRH in front of the BTH, the native ICRC behind the pad, and
 * the walk that validates a received frame's LRH and GRH. The link
 * facts (field layout, masks, the VCRC) are cnuas_ib_link.h's; the VCRC
 * itself is cnuas_net's, which adds it on transmit and checks and
 * strips it on receive: frames here end with the ICRC.
 *
 * Like wire.h this builds in the kernel and in the host unit test.
 */
#ifndef CNUAS_IB_IB_WIRE_H
#define CNUAS_IB_IB_WIRE_H

#include "wire.h"
#include "cnuas_ib_link.h"

#define CNUAS_GRH_IPVER		6

/* What the LRH and GRH of one packet say (struct cnuas_ib_hdrs). */
struct cnuas_ib_hdrs {
	u8 vl;
	u8 sl;
	u16 dlid;
	u16 slid;
	bool grh;			/* LNH 3: a GRH follows the LRH */
	u8 tclass;
	u8 hop_limit;
	u32 flow_label;			/* 20 bits */
	u8 sgid[16];
	u8 dgid[16];
};

static inline unsigned int cnuas_ib_hdrs_len(bool grh)
{
	return CNUAS_LRH_LEN + (grh ? CNUAS_GRH_LEN : 0);
}

/*
 * Write the LRH (and GRH) at @p for a packet whose transport part (BTH
 * through pad, without the ICRC) is @tlen bytes: PktLen counts 4-byte
 * words from the LRH through the ICRC, the GRH's PayLen the bytes after
 * the GRH through the ICRC (IBA 7.7.8, 8.3.1).
 */
static inline void cnuas_ib_hdrs_build(u8 *p, const struct cnuas_ib_hdrs *h,
				       unsigned int tlen)
{
	unsigned int hlen = cnuas_ib_hdrs_len(h->grh);
	unsigned int words = (hlen + tlen + CNUAS_ICRC_LEN) / 4;

	cnuas_lrh_build(p, h->vl, h->sl,
			h->grh ? CNUAS_LNH_IBA_GLOBAL : CNUAS_LNH_IBA_LOCAL,
			h->dlid, h->slid, words);
	if (h->grh) {
		u8 *g = p + CNUAS_LRH_LEN;
		unsigned int paylen = tlen + CNUAS_ICRC_LEN;

		g[0] = (u8)(CNUAS_GRH_IPVER << 4 | h->tclass >> 4);
		g[1] = (u8)(h->tclass << 4 | ((h->flow_label >> 16) & 0x0f));
		g[2] = (u8)(h->flow_label >> 8);
		g[3] = (u8)h->flow_label;
		g[4] = (u8)(paylen >> 8);
		g[5] = (u8)paylen;
		g[6] = CNUAS_GRH_NXTHDR_BTH;
		g[7] = h->hop_limit;
		memcpy(g + 8, h->sgid, 16);
		memcpy(g + 24, h->dgid, 16);
	}
}

enum cnuas_ib_verdict {
	CNUAS_IB_FRAME_OK,
	CNUAS_IB_FRAME_SHORT,		/* shorter than its headers + ICRC */
	CNUAS_IB_FRAME_LVER,		/* LRH.LVer is not 0 */
	CNUAS_IB_FRAME_LNH,		/* not an IBA transport packet */
	CNUAS_IB_FRAME_PKTLEN,		/* LRH.PktLen is not the length */
	CNUAS_IB_FRAME_GRH,		/* IPVer, NxtHdr or PayLen */
};

/*
 * Walk the @len bytes at @frame (LRH through ICRC: the VCRC is gone)
 * into @h; *@hlen: bytes of LRH and GRH (the BTH's offset). Checks what
 * any receiver needs: LVer 0, LNH 2 or 3, PktLen, the GRH's version,
 * next header and payload length, room for a BTH and the ICRC. Nothing
 * is read outside [0, len).
 */
static inline enum cnuas_ib_verdict
cnuas_ib_hdrs_parse(const void *frame, unsigned int len,
		    struct cnuas_ib_hdrs *h, unsigned int *hlen)
{
	const u8 *p = (const u8 *)frame;
	unsigned int lnh;

	if (len < CNUAS_LRH_LEN)
		return CNUAS_IB_FRAME_SHORT;
	if (cnuas_lrh_lver(p) != CNUAS_LRH_LVER)
		return CNUAS_IB_FRAME_LVER;
	lnh = cnuas_lrh_lnh(p);
	if (lnh != CNUAS_LNH_IBA_LOCAL && lnh != CNUAS_LNH_IBA_GLOBAL)
		return CNUAS_IB_FRAME_LNH;
	if (cnuas_lrh_pktlen(p) * 4 != len)
		return CNUAS_IB_FRAME_PKTLEN;
	h->vl = (u8)cnuas_lrh_vl(p);
	h->sl = (u8)cnuas_lrh_sl(p);
	h->dlid = (u16)cnuas_lrh_dlid(p);
	h->slid = (u16)cnuas_lrh_slid(p);
	h->grh = lnh == CNUAS_LNH_IBA_GLOBAL;
	*hlen = cnuas_ib_hdrs_len(h->grh);
	if (len < *hlen + CNUAS_BTH_LEN + CNUAS_ICRC_LEN)
		return CNUAS_IB_FRAME_SHORT;
	if (h->grh) {
		const u8 *g = p + CNUAS_LRH_LEN;

		if (g[0] >> 4 != CNUAS_GRH_IPVER ||
		    g[6] != CNUAS_GRH_NXTHDR_BTH ||
		    ((unsigned int)g[4] << 8 | g[5]) != len - *hlen)
			return CNUAS_IB_FRAME_GRH;
		h->tclass = (u8)((g[0] & 0x0f) << 4 | g[1] >> 4);
		h->flow_label = ((u32)g[1] & 0x0f) << 16 | (u32)g[2] << 8 |
				g[3];
		h->hop_limit = g[7];
		memcpy(h->sgid, g + 8, 16);
		memcpy(h->dgid, g + 24, 16);
	} else {
		h->tclass = 0;
		h->flow_label = 0;
		h->hop_limit = 0;
	}
	return CNUAS_IB_FRAME_OK;
}

/*
 * The native ICRC of the @len bytes at @frame (LRH up to, not with, the
 * ICRC): the masked start of cnuas_ib_icrc_hdr(), then the rest, with
 * the RoCEv2 ICRC's CRC-32. -1: not an IBA transport packet.
 */
static inline int cnuas_ib_icrc(const void *frame, unsigned int len,
				u32 *icrc)
{
	u8 hdr[CNUAS_IB_ICRC_HDR_MAX];
	int n = cnuas_ib_icrc_hdr(hdr, frame, len);
	u32 crc;

	if (n < 0)
		return -1;
	crc = cnuas_icrc_update(~0u, hdr, n);
	crc = cnuas_icrc_update(crc, (const u8 *)frame + n, len - n);
	*icrc = cnuas_icrc_final(crc);
	return 0;
}

/*
 * VL15 carries subnet management packets only: QP0's packets travel on
 * VL15 and no other QP's do.
 */
static inline bool cnuas_ib_vl_ok(unsigned int vl, u32 dest_qpn)
{
	return (vl == CNUAS_VL15) == (dest_qpn == 0);
}

/* Is @dlid one of the 2^@lmc LIDs of base LID @lid (0: none yet)? */
static inline bool cnuas_ib_lid_ours(unsigned int dlid, unsigned int lid,
				     unsigned int lmc)
{
	unsigned int mask = ~((1u << (lmc & 7)) - 1) & 0xffff;

	if (!lid || lid > CNUAS_LID_UCAST_MAX || dlid > CNUAS_LID_UCAST_MAX)
		return false;
	return (dlid & mask) == (lid & mask);
}

#endif /* CNUAS_IB_IB_WIRE_H */
