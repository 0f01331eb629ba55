// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: what the switch reads from a peer QEMU's /proc/PID/cmdline
 * (any process may connect, so its argv is hostile). The input is the
 * cmdline as the kernel gives it: arguments, each ended by a NUL. Checked:
 * the VM name is printable and bounded (peer_name.h); the given MACs
 * (peer_macs.h) are at most the bound, unicast, without repeats.
 */
#include "peer_macs.h"
#include "peer_name.h"

#include <stdlib.h>
#include <string.h>

#define SOCK "/run/cnuas/switch.sock"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char name[VS_VM_NAME_MAX + 1];
	uint64_t keys[VS_PORT_MACS_MAX];
	unsigned nk;
	char *argv;

	if (n > VS_CMDLINE_MAX)
		return 0;
	/* its own buffer: ASan sees a read past the end */
	argv = malloc(n ? n : 1);
	if (!argv)
		abort();
	memcpy(argv, d, n);
	if (vm_name_from_cmdline(argv, n, name, sizeof(name))) {
		size_t len = strlen(name);

		if (!len || len > VS_VM_NAME_MAX)
			abort();
		for (size_t i = 0; i < len; i++)
			if (name[i] <= 0x20 || name[i] >= 0x7f)
				abort();
	}
	nk = vnic_macs_from_cmdline(argv, n, SOCK, keys, VS_PORT_MACS_MAX);
	if (nk > VS_PORT_MACS_MAX)
		abort();
	for (unsigned i = 0; i < nk; i++) {
		if (keys[i] >> 48 != 1 || (keys[i] >> 40 & 1))
			abort();
		for (unsigned j = 0; j < i; j++)
			if (keys[i] == keys[j])
				abort();
	}
	free(argv);
	return 0;
}
