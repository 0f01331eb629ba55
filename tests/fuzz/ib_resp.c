// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: cnuas_ib's responder (resp.c) and the transport around it,
 * the driver's own code on the host (ib_sm_fixture.c), fed frames by a
 * hostile peer. The QP (RC, UC, UD or GSI) starts in RTS with four
 * receive WQEs posted: the frames are requests, SENDs, WRITEs, READs,
 * atomics, in order or not, duplicated, cut or lying about their length.
 * Input format and invariants: ib_sm_fixture.h, ib_sm_fixture.c.
 */
#include "ib_sm_fixture.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	return ib_sm_run(data, size, FX_RESP);
}
