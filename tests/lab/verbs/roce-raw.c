// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#include <stdbool.h>
#include <string.h>

#include "cnuas_roce.h"
#include "roce-raw.h"

void rr_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

void rr_put64(uint8_t *p, uint64_t v)
{
	rr_put32(p, (uint32_t)(v >> 32));
	rr_put32(p + 4, (uint32_t)v);
}

uint32_t rr_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void rr_eth(uint8_t *f, const uint8_t dmac[6], const uint8_t smac[6])
{
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
}

static uint16_t ip_csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

void rr_ipv4_lengths(uint8_t *ip, size_t iplen)
{
	uint16_t c;

	ip[2] = (uint8_t)(iplen >> 8);
	ip[3] = (uint8_t)iplen;
	ip[10] = ip[11] = 0;
	c = ip_csum(ip, 20);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	ip[24] = (uint8_t)((iplen - 20) >> 8);
	ip[25] = (uint8_t)(iplen - 20);
}

void rr_ipv4_udp(uint8_t *ip, size_t iplen, uint32_t sip, uint32_t dip, uint16_t ipid,
		 uint16_t sport)
{
	uint8_t *udp = ip + 20;

	ip[0] = 0x45;
	ip[1] = 0;
	ip[4] = (uint8_t)(ipid >> 8);
	ip[5] = (uint8_t)ipid;
	ip[6] = 0x40;	/* DF */
	ip[7] = 0;
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, &sip, 4);
	memcpy(ip + 16, &dip, 4);
	udp[0] = (uint8_t)(sport >> 8);
	udp[1] = (uint8_t)sport;
	udp[2] = CNUAS_ROCE_UDP_PORT >> 8;
	udp[3] = CNUAS_ROCE_UDP_PORT & 0xff;
	udp[6] = udp[7] = 0;
	rr_ipv4_lengths(ip, iplen);
}

/* Table-driven CRC-32 (IEEE, reflected): the guest build links no zlib. */
static uint32_t crc_update(uint32_t c, const uint8_t *p, size_t n)
{
	static uint32_t table[256];
	static bool ready;

	if (!ready) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t t = i;

			for (int k = 0; k < 8; k++)
				t = t & 1 ? 0xEDB88320u ^ (t >> 1) : t >> 1;
			table[i] = t;
		}
		ready = true;
	}
	while (n--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

int rr_put_icrc(uint8_t *ip, size_t iplen)
{
	uint8_t h[CNUAS_ROCE_ICRC_HDR_MAX];
	size_t len = iplen - 4;
	int n;
	uint32_t c;

	if (iplen < 4)
		return -1;
	n = cnuas_roce_icrc_hdr(h, ip, (unsigned int)len);
	if (n < 0)
		return -1;
	c = crc_update(0xffffffffu, h, CNUAS_ROCE_ICRC_PREFIX_LEN + (size_t)n);
	c = ~crc_update(c, ip + n, len - (size_t)n);
	ip[len] = (uint8_t)c;	/* least significant byte first */
	ip[len + 1] = (uint8_t)(c >> 8);
	ip[len + 2] = (uint8_t)(c >> 16);
	ip[len + 3] = (uint8_t)(c >> 24);
	return 0;
}
