/* SPDX-License-Identifier: (GPL-2.0-or-later OR MIT) */
/*
 * The one walk through a received frame's RoCEv2 envelope: Ethernet, at
 * most one 802.1Q tag, IPv4 (options allowed, no fragments) or IPv6 (no
 * extension headers), UDP to the RoCEv2 port. cnuas_net uses it to pick
 * the frames of the RDMA client, cnuas_ib to validate them (and the host
 * unit test to check both agree with captured frames).
 *
 * Frames are hostile: nothing is read outside [0, len). The walk checks
 * what every user needs; the length fields of IP and UDP are only read,
 * cnuas_roce_frame_lengths() checks them for users that go on to the
 * transport headers.
 */
#ifndef CNUAS_ROCE_FRAME_H
#define CNUAS_ROCE_FRAME_H

#include "cnuas_roce.h"

enum cnuas_roce_verdict {
	CNUAS_ROCE_FRAME_OK,
	CNUAS_ROCE_FRAME_SHORT,		/* ends inside a header */
	CNUAS_ROCE_FRAME_NOT_IP,	/* EtherType neither IPv4 nor IPv6 */
	CNUAS_ROCE_FRAME_BAD_IP,	/* IP version or header length */
	CNUAS_ROCE_FRAME_NOT_UDP,	/* IP carries something else */
	CNUAS_ROCE_FRAME_FRAGMENT,	/* IPv4 fragment */
	CNUAS_ROCE_FRAME_NOT_ROCE,	/* UDP to another port */
	CNUAS_ROCE_FRAME_BAD_LEN,	/* IP or UDP length field lies */
};

/* Offsets from the start of the frame. */
struct cnuas_roce_frame {
	unsigned int ip;		/* IP header */
	unsigned int ip_hlen;		/* its length */
	unsigned int udp;		/* UDP header */
	unsigned int ip_end;		/* end of the IP packet, by its header */
	unsigned int udp_len;		/* UDP length field */
	unsigned short vlan_tci;	/* 802.1Q tag control, if tagged */
	unsigned char tagged;
	unsigned char v6;
};

static inline unsigned int cnuas_roce_get_be16(const unsigned char *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/* Walk the @len bytes at @frame; @f is valid for CNUAS_ROCE_FRAME_OK. */
static inline enum cnuas_roce_verdict
cnuas_roce_frame_walk(const void *frame, unsigned int len,
		      struct cnuas_roce_frame *f)
{
	const unsigned char *d = (const unsigned char *)frame, *ip;
	unsigned int off = CNUAS_ROCE_ETH_HLEN, proto;

	if (len < CNUAS_ROCE_ETH_HLEN)
		return CNUAS_ROCE_FRAME_SHORT;
	proto = cnuas_roce_get_be16(d + 12);
	f->tagged = proto == CNUAS_ROCE_ETH_P_8021Q;
	if (f->tagged) {
		if (len < off + CNUAS_ROCE_VLAN_HLEN)
			return CNUAS_ROCE_FRAME_SHORT;
		f->vlan_tci = cnuas_roce_get_be16(d + off);
		proto = cnuas_roce_get_be16(d + off + 2);
		off += CNUAS_ROCE_VLAN_HLEN;
	}

	ip = d + off;
	f->ip = off;
	if (proto == CNUAS_ROCE_ETH_P_IP) {
		if (len < off + CNUAS_ROCE_IPV4_HLEN)
			return CNUAS_ROCE_FRAME_SHORT;
		f->ip_hlen = (ip[0] & 0x0f) * 4;
		if (ip[0] >> 4 != 4 || f->ip_hlen < CNUAS_ROCE_IPV4_HLEN)
			return CNUAS_ROCE_FRAME_BAD_IP;
		if (ip[9] != CNUAS_ROCE_IPPROTO_UDP)
			return CNUAS_ROCE_FRAME_NOT_UDP;
		/* More Fragments or a fragment offset */
		if (cnuas_roce_get_be16(ip + 6) & 0x3fff)
			return CNUAS_ROCE_FRAME_FRAGMENT;
		f->ip_end = off + cnuas_roce_get_be16(ip + 2);
		f->v6 = 0;
	} else if (proto == CNUAS_ROCE_ETH_P_IPV6) {
		if (len < off + CNUAS_ROCE_IPV6_HLEN)
			return CNUAS_ROCE_FRAME_SHORT;
		if (ip[0] >> 4 != 6)
			return CNUAS_ROCE_FRAME_BAD_IP;
		if (ip[6] != CNUAS_ROCE_IPPROTO_UDP)
			return CNUAS_ROCE_FRAME_NOT_UDP;
		f->ip_hlen = CNUAS_ROCE_IPV6_HLEN;
		f->ip_end = off + CNUAS_ROCE_IPV6_HLEN +
			    cnuas_roce_get_be16(ip + 4);
		f->v6 = 1;
	} else {
		return CNUAS_ROCE_FRAME_NOT_IP;
	}

	f->udp = off + f->ip_hlen;
	if (len < f->udp + CNUAS_ROCE_UDP_HLEN)
		return CNUAS_ROCE_FRAME_SHORT;
	if (cnuas_roce_get_be16(d + f->udp + 2) != CNUAS_ROCE_UDP_PORT)
		return CNUAS_ROCE_FRAME_NOT_ROCE;
	f->udp_len = cnuas_roce_get_be16(d + f->udp + 4);
	return CNUAS_ROCE_FRAME_OK;
}

/*
 * After an OK walk of @len bytes: the IP packet holds the UDP header and
 * fits in the frame, the UDP datagram fits in the IP packet and has room
 * for a BTH and the ICRC. Bytes after the IP packet are Ethernet padding.
 */
static inline enum cnuas_roce_verdict
cnuas_roce_frame_lengths(const struct cnuas_roce_frame *f, unsigned int len)
{
	if (f->ip_end < f->udp + CNUAS_ROCE_UDP_HLEN || f->ip_end > len)
		return CNUAS_ROCE_FRAME_BAD_LEN;
	if (f->udp_len < CNUAS_ROCE_UDP_HLEN + CNUAS_BTH_LEN + CNUAS_ICRC_LEN ||
	    f->udp_len > f->ip_end - f->udp)
		return CNUAS_ROCE_FRAME_BAD_LEN;
	return CNUAS_ROCE_FRAME_OK;
}

#endif /* CNUAS_ROCE_FRAME_H */
