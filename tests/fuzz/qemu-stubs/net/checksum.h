/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* The Internet checksum helpers of QEMU's net/checksum.h (RFC 1071). */
#ifndef CNUAS_FUZZ_NET_CHECKSUM_H
#define CNUAS_FUZZ_NET_CHECKSUM_H

#include <stdint.h>

/* Sum of the big-endian 16-bit words of buf, an odd last byte padded. */
static inline uint32_t net_checksum_add(int len, const uint8_t *buf)
{
	uint32_t sum = 0;

	for (int i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(buf[i] << 8 | buf[i + 1]);
	if (len & 1)
		sum += (uint32_t)buf[len - 1] << 8;
	return sum;
}

/* Folded and complemented; 0 is sent as 0xffff (UDP: 0 means none). */
static inline uint16_t net_checksum_finish_nozero(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum ? (uint16_t)~sum : 0xffff;
}

#endif
