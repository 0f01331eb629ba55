/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The state-machine fixture of the ib_resp and ib_comp fuzz targets
 * (ib_sm_fixture.c). Input:
 *
 *   8 bytes of configuration
 *     [0] bits 0-1 QP type (ib_resp: RC UC UD GSI; ib_comp: UC if 0,
 *         else RC), bit 2 user QP, bit 3 sq_sig_all, bits 4-7 path MTU
 *         (256 << n % 5)
 *     [1] bit 0 REMOTE_WRITE, bit 1 REMOTE_READ, bit 2 REMOTE_ATOMIC of
 *         the QP, bits 4-7 max_dest_rd_atomic
 *     [2] bits 0-3 max_rd_atomic, bits 4-6 retry_cnt
 *     [3] bits 0-2 rnr_retry, bits 3-7 min_rnr_timer
 *     [4] timeout
 *     [5..7] the first PSN, both directions (big endian, 24 bits)
 *   then commands, one byte each: bits 0-2 the command, bits 3-7 flags
 *     FRAME   2 bytes length (big endian), then the frame from the BTH on
 *             (no ICRC); flags FX_F_*
 *     SEND    2 bytes: a send WQE (ib_sm_fixture.c: fx_post_send), kick
 *     RECV    1 byte: a receive WQE (fx_post_recv)
 *     TICK    1 byte: that many jiffies pass, due timers fire
 *     WORK    the QP's work item runs if queued
 *     MODIFY  flag 1: to ERR (fatal); flag 2: RESET, then to RTS again;
 *             none: RTS to SQD
 *     TX      flag 1: memory for frames runs out / comes back; none: the
 *             TX ring fills / drains (then tx_wake)
 *     BATCH_END  the end of a NAPI batch
 * The ib_resp target starts with four receive WQEs posted, ib_comp with
 * a SEND, a WRITE, a READ and a FETCH_ADD sent.
 */
#ifndef CNUAS_FUZZ_IB_SM_FIXTURE_H
#define CNUAS_FUZZ_IB_SM_FIXTURE_H

#include <stddef.h>

#define FX_CONFIG_LEN		8

enum fx_mode { FX_RESP, FX_COMP };

enum {
	FX_CMD_FRAME,
	FX_CMD_SEND,
	FX_CMD_RECV,
	FX_CMD_TICK,
	FX_CMD_WORK,
	FX_CMD_MODIFY,
	FX_CMD_TX,
	FX_CMD_BATCH_END,
};

/* FRAME flags (the command byte's bits 3-7) */
#define FX_F_OUR_QPN		1	/* the BTH's QPN becomes ours */
#define FX_F_REL_PSN		2	/* PSN += expected (request) or una */
#define FX_F_NO_BATCH_END	4	/* more frames in the same batch */
#define FX_F_OTHER_SRC		8	/* from an address not the peer's */

/* cnuas_ib_rx() flags of the fixture's parse: the other source. */
#define FX_RX_OTHER_SRC		0x100

int ib_sm_run(const unsigned char *data, size_t size, enum fx_mode mode);

/* What the last ib_sm_run() sent and where it left the QP (ib_sm_cases.c). */
struct ib_sm_outcome {
	int failed;			/* the QP went to ERR before the end */
	unsigned int naks[5];		/* NAKs sent, by AETH code (0-4) */
	unsigned int read_resps;	/* READ response packets sent */
	unsigned int last_read_psn;	/* the last one's PSN */
	unsigned int atomic_acks;
	unsigned long long frames_out;
};

const struct ib_sm_outcome *ib_sm_outcome(void);

#endif
