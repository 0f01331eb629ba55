#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#
# Host check of the cnuasgpu uapi (src/include/uapi/cnuasgpu.h): struct
# sizes and field offsets are fixed (no implicit padding, 8-byte multiples,
# same on 32- and 64-bit), ioctl numbers are distinct, the CAPS flags
# (incl. CNUASGPU_CAP_HOST of /dev/cnuasgpu_hostN) are distinct single
# bits, and the guest test tool (tests/lab/gpu/cnuasgpu-test.c) builds
# warning-free against it.
# Exit: 0 pass, 77 skip (no C compiler), anything else fail.

set -u

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CC=${CC:-cc}
command -v "$CC" >/dev/null || { echo "SKIP: no-cc: no C compiler ($CC)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/abi.c" <<'C'
#include <stddef.h>
#include "uapi/cnuasgpu.h"

#define SZ(t, n) _Static_assert(sizeof(struct t) == (n), #t " size")
#define OFF(t, f, n) _Static_assert(offsetof(struct t, f) == (n), #t "." #f)

SZ(cnuasgpu_caps, 88);
OFF(cnuasgpu_caps, mem_total, 8);
OFF(cnuasgpu_caps, export_align, 24);
OFF(cnuasgpu_caps, link_max_frame, 48);
OFF(cnuasgpu_caps, reserved, 56);
SZ(cnuasgpu_alloc, 48);
OFF(cnuasgpu_alloc, flags, 16);
OFF(cnuasgpu_alloc, handle, 20);
OFF(cnuasgpu_alloc, mmap_offset, 24);
SZ(cnuasgpu_free, 8);
SZ(cnuasgpu_query, 56);
OFF(cnuasgpu_query, dev_offset, 32);
SZ(cnuasgpu_export_dmabuf, 48);
OFF(cnuasgpu_export_dmabuf, offset, 8);
OFF(cnuasgpu_export_dmabuf, length, 16);
OFF(cnuasgpu_export_dmabuf, fd, 24);
OFF(cnuasgpu_export_dmabuf, reserved, 32);
SZ(cnuasgpu_link_frame, 40);
OFF(cnuasgpu_link_frame, timeout_ms, 16);

static const unsigned int caps[] = {
	CNUASGPU_CAP_DMABUF, CNUASGPU_CAP_PEER_RDMA, CNUASGPU_CAP_LINK,
	CNUASGPU_CAP_LINK_UP, CNUASGPU_CAP_HOST,
};

static const unsigned long cmds[] = {
	CNUASGPU_IOC_CAPS, CNUASGPU_IOC_ALLOC, CNUASGPU_IOC_FREE,
	CNUASGPU_IOC_QUERY, CNUASGPU_IOC_EXPORT_DMABUF, CNUASGPU_IOC_LINK_SEND,
	CNUASGPU_IOC_LINK_RECV,
};

int main(void)
{
	unsigned i, j;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		for (j = 0; j < i; j++)
			if (cmds[i] == cmds[j])
				return 1;
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		if (!caps[i] || (caps[i] & (caps[i] - 1)))
			return 1;
		for (j = 0; j < i; j++)
			if (caps[i] == caps[j])
				return 1;
	}
	return CNUASGPU_EXPORT_FLAGS == CNUASGPU_EXPORT_CLOEXEC ? 0 : 1;
}
C

fail=0
for m in -m64 -m32; do
	if ! "$CC" $m -std=c11 -Wall -Wextra -Werror -I"$REPO/src/include" \
		-o "$TMP/abi$m" "$TMP/abi.c" 2>"$TMP/err$m"; then
		# -m32 needs gcc-multilib; the layout is only checked where it builds.
		if [ "$m" = -m32 ] && grep -q 'gnu/stubs-32.h\|asm/ioctl.h\|cannot find\|skipping incompatible' "$TMP/err$m"; then
			echo "note: no 32-bit toolchain, -m32 layout not checked"
			continue
		fi
		cat "$TMP/err$m"
		echo "FAIL: uapi layout ($m)"
		fail=1
		continue
	fi
	"$TMP/abi$m" || { echo "FAIL: duplicate ioctl numbers or flags, or a CAPS flag not one bit ($m)"; fail=1; }
done
"$CC" -Wall -Wextra -Werror -O2 -I"$REPO/src/include" -o "$TMP/cnuasgpu-test" \
	"$REPO/tests/lab/gpu/cnuasgpu-test.c" || { echo "FAIL: cnuasgpu-test build"; fail=1; }
[ "$fail" = 0 ] && echo "PASS: cnuasgpu uapi layout, ioctl numbers, CAPS bits, guest tool builds"
exit "$fail"
