// SPDX-License-Identifier: GPL-2.0
/*
 * RoCEv2 Invariant CRC with the kernel's crc32_le(): what it covers and
 * how the variant fields are masked is in cnuas_roce.h, shared with the
 * device model and the tools.
 */
#include "wire.h"

int cnuas_icrc_begin(const void *ip, unsigned int len, u32 *crc)
{
	u8 buf[CNUAS_ROCE_ICRC_HDR_MAX];
	int n = cnuas_roce_icrc_hdr(buf, ip, len);

	if (n < 0)
		return -1;
	*crc = cnuas_icrc_update(~0u, buf, CNUAS_ROCE_ICRC_PREFIX_LEN + n);
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
