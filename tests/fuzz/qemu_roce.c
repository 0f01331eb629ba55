// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Fuzz target: the cnuas-vnic QEMU device's RoCEv2 parser and ICRC
 * offload (qemu-patches/hw/net/cnuas_vnic_roce.c, included whole so its
 * static parser is reachable), built against qemu-stubs/.
 *
 * Properties checked (abort on failure): where the device parses a frame,
 * its ICRC equals cnuas_ib's (src/cnuas_ib/icrc.c) over the same bytes;
 * a frame the TX offload filled in verifies on RX as ICRC_OK; RX on a
 * frame it cannot parse says 0.
 */
#include "cnuas_vnic_roce.c"

#include <stdlib.h>

#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t len = (uint32_t)size;
	struct cnuas_roce_frame r;
	uint16_t verdict;
	uint8_t *f;
	bool ok;

	if (size > 65536)
		return 0;
	f = malloc(size ? size : 1);
	if (!f)
		abort();
	memcpy(f, data, size);
	ok = cnuas_roce_parse(f, len, &r);
	verdict = cnuas_vnic_roce_rx(f, len);
	if (!ok) {
		if (verdict || cnuas_vnic_roce_tx(f, len))
			abort();
		goto out;
	}
	if (verdict != CNUAS_VNIC_DESC_F_ICRC_OK && verdict != CNUAS_VNIC_DESC_F_ICRC_BAD)
		abort();
	uint32_t end = cnuas_roce_end(&r);

	if (end > len || r.udp < r.ip || end < r.udp + 24)
		abort();
	/* the same ICRC as the kernel driver's software one */
	uint32_t kicrc;

	if (cnuas_icrc_linear(f + r.ip, end - CNUAS_ICRC_LEN - r.ip, &kicrc) ||
	    kicrc != cnuas_roce_icrc(f, &r))
		abort();
	if (!cnuas_vnic_roce_tx(f, len) || cnuas_vnic_roce_rx(f, len) != CNUAS_VNIC_DESC_F_ICRC_OK)
		abort();
out:
	free(f);
	return 0;
}
