// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: cnuas_ib's completer (comp.c) and the transport around it,
 * the driver's own code on the host (ib_sm_fixture.c), fed frames by a
 * hostile peer. The QP (RC or UC) starts in RTS with a SEND, a WRITE,
 * a READ and a FETCH_ADD in flight: the frames are ACKs, NAKs, RNR NAKs,
 * READ responses and ATOMIC ACKs, for PSNs in the window or not.
 * Input format and invariants: ib_sm_fixture.h, ib_sm_fixture.c.
 */
#include "ib_sm_fixture.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	return ib_sm_run(data, size, FX_COMP);
}
