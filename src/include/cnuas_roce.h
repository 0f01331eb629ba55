/* SPDX-License-Identifier: (GPL-2.0-or-later OR MIT) */
/*
 * RoCEv2 facts shared by everything that reads or writes RoCEv2 frames:
 * the kernel modules, the QEMU device's ICRC offload, the switch and the
 * test tools. Plain C for the kernel and for user space alike.
 *
 * A RoCEv2 frame: Ethernet, at most one 802.1Q tag here, IPv4 or IPv6,
 * UDP to port 4791, the IBA transport headers (BTH first), payload, pad
 * and the 4-byte Invariant CRC.
 *
 * The ICRC (IBA Annex A17) is a CRC-32 (the Ethernet one: reflected,
 * initial value and final XOR all ones) over
 *   64 bits of ones (standing in for the LRH of native IB),
 *   the IP header with the fields routers may change set to ones:
 *     IPv4: Type of Service, Time to Live, Header Checksum;
 *     IPv6: Traffic Class, Flow Label, Hop Limit;
 *   the UDP header with its Checksum set to ones,
 *   the BTH with its FECN/BECN/resv6a byte set to ones,
 *   and everything after the BTH up to the ICRC (extension headers,
 *   payload, pad).
 * The result goes on the wire least significant byte first, as the
 * Ethernet FCS does. cnuas_roce_icrc_hdr() builds the masked start; each
 * user runs its own CRC-32 over it and the rest.
 */
#ifndef CNUAS_ROCE_H
#define CNUAS_ROCE_H

#ifdef __KERNEL__
#include <linux/string.h>
#include <rdma/ib_verbs.h>
/* The kernel has the port already: ib_core's. */
#define CNUAS_ROCE_UDP_PORT		ROCE_V2_UDP_DPORT
#else
#include <string.h>
#define CNUAS_ROCE_UDP_PORT		4791	/* IANA, RoCEv2 */
#endif

/* ---- Ethernet and IP ---- */
#define CNUAS_ROCE_ETH_HLEN		14
#define CNUAS_ROCE_VLAN_HLEN		4	/* one 802.1Q tag */
#define CNUAS_ROCE_ETH_P_IP		0x0800
#define CNUAS_ROCE_ETH_P_IPV6		0x86dd
#define CNUAS_ROCE_ETH_P_8021Q		0x8100
#define CNUAS_ROCE_IPV4_HLEN		20	/* without options */
#define CNUAS_ROCE_IPV4_MAX_HLEN	60
#define CNUAS_ROCE_IPV6_HLEN		40	/* no extension headers */
#define CNUAS_ROCE_IPPROTO_UDP		17
#define CNUAS_ROCE_UDP_HLEN		8

/* ---- IBA transport: the header every packet has, and the trailer ---- */
#define CNUAS_BTH_LEN			12
#define CNUAS_ICRC_LEN			4

/* ---- ICRC ---- */
#define CNUAS_ROCE_ICRC_PREFIX_LEN	8	/* the ones for the LRH */
/* Longest masked start: prefix, IPv4 with options, UDP, BTH. */
#define CNUAS_ROCE_ICRC_HDR_MAX		(CNUAS_ROCE_ICRC_PREFIX_LEN + \
					 CNUAS_ROCE_IPV4_MAX_HLEN + \
					 CNUAS_ROCE_UDP_HLEN + CNUAS_BTH_LEN)

/*
 * The start of the ICRC's input for the RoCEv2 packet whose IP header is
 * at @ip (@len bytes there, IPv4 or IPv6): writes the prefix and the IP,
 * UDP and BTH headers with their variant fields masked into @hdr
 * (CNUAS_ROCE_ICRC_HDR_MAX bytes). Returns the number of bytes of @ip it
 * covers (@hdr holds CNUAS_ROCE_ICRC_PREFIX_LEN more); the CRC goes on
 * over @ip from there to the ICRC. -1: not IPv4/IPv6 carrying UDP, or
 * shorter than its headers.
 */
static inline int cnuas_roce_icrc_hdr(unsigned char *hdr, const void *ip,
				      unsigned int len)
{
	const unsigned char *p = (const unsigned char *)ip;
	unsigned char *h = hdr + CNUAS_ROCE_ICRC_PREFIX_LEN, *udp;
	unsigned int iplen, n;

	if (len < 1)
		return -1;
	switch (p[0] >> 4) {
	case 4:
		iplen = (p[0] & 0x0f) * 4;
		if (iplen < CNUAS_ROCE_IPV4_HLEN || len < iplen ||
		    p[9] != CNUAS_ROCE_IPPROTO_UDP)
			return -1;
		break;
	case 6:
		iplen = CNUAS_ROCE_IPV6_HLEN;
		if (len < iplen || p[6] != CNUAS_ROCE_IPPROTO_UDP)
			return -1;
		break;
	default:
		return -1;
	}
	n = iplen + CNUAS_ROCE_UDP_HLEN + CNUAS_BTH_LEN;
	if (len < n)
		return -1;

	memset(hdr, 0xff, CNUAS_ROCE_ICRC_PREFIX_LEN);
	memcpy(h, p, n);
	if (iplen == CNUAS_ROCE_IPV6_HLEN) {
		h[0] |= 0x0f;			/* traffic class, high nibble */
		h[1] = 0xff;			/* traffic class, flow label */
		h[2] = 0xff;
		h[3] = 0xff;
		h[7] = 0xff;			/* hop limit */
	} else {
		h[1] = 0xff;			/* type of service */
		h[8] = 0xff;			/* time to live */
		h[10] = 0xff;			/* header checksum */
		h[11] = 0xff;
	}
	udp = h + iplen;
	udp[6] = 0xff;				/* UDP checksum */
	udp[7] = 0xff;
	udp[CNUAS_ROCE_UDP_HLEN + 4] = 0xff;	/* BTH: FECN, BECN, resv6a */
	return n;
}

#endif /* CNUAS_ROCE_H */
