// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* uapi layout the library relies on: sizes, offsets, ioctl numbers. */
#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/ioctl.h>

#include "uapi/cnuasgpu.h"

int main(void)
{
	static_assert(sizeof(struct cnuasgpu_caps) == 88, "caps");
	static_assert(sizeof(struct cnuasgpu_alloc) == 48, "alloc");
	static_assert(sizeof(struct cnuasgpu_free) == 8, "free");
	static_assert(sizeof(struct cnuasgpu_query) == 56, "query");
	static_assert(sizeof(struct cnuasgpu_export_dmabuf) == 48, "export");
	static_assert(sizeof(struct cnuasgpu_link_frame) == 40, "link");
	static_assert(offsetof(struct cnuasgpu_export_dmabuf, offset) == 8, "");
	static_assert(offsetof(struct cnuasgpu_export_dmabuf, length) == 16, "");
	static_assert(offsetof(struct cnuasgpu_export_dmabuf, fd) == 24, "");
	static_assert(offsetof(struct cnuasgpu_export_dmabuf, reserved) == 32, "");
	static_assert(_IOC_SIZE(CNUASGPU_IOC_EXPORT_DMABUF) == 48, "");
	static_assert(_IOC_DIR(CNUASGPU_IOC_EXPORT_DMABUF) == (_IOC_READ | _IOC_WRITE), "");
	static_assert(_IOC_TYPE(CNUASGPU_IOC_CAPS) == CNUASGPU_IOC_MAGIC, "");
	static_assert(CNUASGPU_EXPORT_FLAGS == 1, "only CLOEXEC is defined");
	printf("PASS: cnuasgpu uapi layout\n");
	return 0;
}
