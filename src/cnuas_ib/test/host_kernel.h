/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The kernel primitives the codec (wire.h, opcode.c, icrc.c) uses, for
 * building it as plain host C in the unit test.
 */
#ifndef CNUAS_IB_TEST_HOST_KERNEL_H
#define CNUAS_IB_TEST_HOST_KERNEL_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>

typedef __UINT8_TYPE__ u8;
typedef __UINT16_TYPE__ u16;
typedef __UINT32_TYPE__ u32;
typedef unsigned long long u64;	/* as the kernel's (and <linux/types.h>) */
typedef __UINT16_TYPE__ __be16;
typedef __UINT32_TYPE__ __be32;
typedef unsigned long long __be64;

/* __packed comes from the Makefile (-D), as the kernel's compiler_attributes.h. */
#define be16_to_cpu(x)		be16toh(x)
#define be32_to_cpu(x)		be32toh(x)
#define be64_to_cpu(x)		be64toh(x)
#define cpu_to_be16(x)		htobe16(x)
#define cpu_to_be32(x)		htobe32(x)
#define cpu_to_be64(x)		htobe64(x)

/* lib/crc32.c's crc32_le(): reflected CRC-32, no pre/post inversion. */
u32 crc32_le(u32 crc, const unsigned char *p, size_t len);

#endif
