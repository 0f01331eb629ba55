/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* Unaligned loads and stores as QEMU's qemu/bswap.h names them. */
#ifndef CNUAS_FUZZ_QEMU_BSWAP_H
#define CNUAS_FUZZ_QEMU_BSWAP_H

#include <stdint.h>

static inline int lduw_be_p(const void *p)
{
	const uint8_t *b = p;

	return b[0] << 8 | b[1];
}

static inline int ldl_le_p(const void *p)
{
	const uint8_t *b = p;

	return (int)(b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24);
}

static inline void stw_be_p(void *p, uint16_t v)
{
	uint8_t *b = p;

	b[0] = v >> 8;
	b[1] = (uint8_t)v;
}

static inline void stl_le_p(void *p, uint32_t v)
{
	uint8_t *b = p;

	b[0] = (uint8_t)v;
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)(v >> 16);
	b[3] = (uint8_t)(v >> 24);
}

#endif
