// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: the IB switch's state file (ib_state.h), read back at every
 * start from a directory another process might write. Checked: a file the
 * parser takes holds only what the switch could have written (valid
 * names and port numbers, no VM on two ports), and writing it out and
 * reading that back gives the same state.
 */
#include "ib_state.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct ib_state a, b;
static char text[IB_STATE_FILE_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char err[256], *buf = malloc(n ? n : 1);	/* its own buffer: ASan sees overreads */
	size_t len;

	if (!buf)
		abort();
	memcpy(buf, d, n);
	if (ib_state_parse(&a, buf, n, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();	/* a refusal says why */
		free(buf);
		return 0;
	}
	free(buf);
	for (unsigned p = 1; p <= IB_STATE_PORTS; p++)
		if (a.peer[p][0] && (!ib_state_name_ok(a.peer[p], strlen(a.peer[p])) ||
				     ib_state_port_of(&a, a.peer[p]) != p))
			abort();
	for (unsigned i = 0; i < a.nsm_name; i++)
		if (!ib_state_name_ok(a.sm_name[i], strlen(a.sm_name[i])))
			abort();
	len = ib_state_format(&a, text, sizeof(text));
	if (len >= sizeof(text) || ib_state_parse(&b, text, len, err, sizeof(err)) < 0 ||
	    memcmp(&a, &b, sizeof(a)))
		abort();
	return 0;
}
