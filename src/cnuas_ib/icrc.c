// SPDX-License-Identifier: GPL-2.0
/*
 * RoCEv2 Invariant CRC (IBA Annex A17, RoCEv2): a CRC-32 (the Ethernet
 * polynomial, reflected, initial value and final XOR all ones) over
 *   64 bits of ones (standing in for the LRH of native IB),
 *   the IP header with the fields routers may change set to ones:
 *     IPv4: Type of Service, Time to Live, Header Checksum;
 *     IPv6: Traffic Class, Flow Label, Hop Limit;
 *   the UDP header with its Checksum set to ones,
 *   the BTH with its FECN/BECN/resv6a byte set to ones,
 *   and everything after it up to the ICRC (extension headers, payload,
 *   pad).
 * The result goes on the wire least significant byte first, as the
 * Ethernet FCS does.
 */
#ifdef __KERNEL__
#include <linux/string.h>
#else
#include <string.h>
#endif

#include "wire.h"

#define IPV4_MIN_LEN	20
#define IPV4_MAX_LEN	60
#define IPV6_LEN	40
#define UDP_LEN		8
#define PROTO_UDP	17
#define PREFIX_LEN	8

#define MASK_BUF_LEN	(PREFIX_LEN + IPV4_MAX_LEN + UDP_LEN + CNUAS_BTH_LEN)

int cnuas_icrc_begin(const void *ip, unsigned int len, u32 *crc)
{
	const u8 *p = ip;
	u8 buf[MASK_BUF_LEN], *h = buf + PREFIX_LEN, *udp, *bth;
	unsigned int iplen, n;

	if (len < 1)
		return -1;
	switch (p[0] >> 4) {
	case 4:
		iplen = (p[0] & 0x0f) * 4;
		if (iplen < IPV4_MIN_LEN || len < iplen || p[9] != PROTO_UDP)
			return -1;
		break;
	case 6:
		iplen = IPV6_LEN;
		if (len < iplen || p[6] != PROTO_UDP)
			return -1;
		break;
	default:
		return -1;
	}
	n = iplen + UDP_LEN + CNUAS_BTH_LEN;
	if (len < n)
		return -1;

	memset(buf, 0xff, PREFIX_LEN);
	memcpy(h, p, n);
	if (iplen == IPV6_LEN) {
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
	bth = udp + UDP_LEN;
	bth[4] = 0xff;				/* FECN, BECN, resv6a */

	*crc = cnuas_icrc_update(~0u, buf, PREFIX_LEN + n);
	return n;
}

int cnuas_icrc_linear(const void *ip, unsigned int len, u32 *icrc)
{
	u32 crc;
	int n = cnuas_icrc_begin(ip, len, &crc);

	if (n < 0)
		return -1;
	crc = cnuas_icrc_update(crc, (const u8 *)ip + n, len - n);
	*icrc = cnuas_icrc_final(crc);
	return 0;
}
