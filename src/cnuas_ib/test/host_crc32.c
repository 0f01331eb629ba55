// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * The kernel's crc32_le() for the host test, on top of zlib's crc32():
 * zlib inverts the CRC before and after, the kernel's raw form does not.
 */
#include <zlib.h>
#include "host_kernel.h"

u32 crc32_le(u32 crc, const unsigned char *p, size_t len)
{
	return ~(u32)crc32(~crc & 0xffffffffu, p, len);
}
