// SPDX-License-Identifier: GPL-2.0
/*
 * The BTH opcode table: for every opcode the transport speaks, which
 * extension headers follow the BTH and what the packet means. Building
 * and parsing packets read this table instead of switching on opcodes.
 */
#include "wire.h"

/*
 * The header layouts that occur: which extension headers, where each
 * starts (from the BTH) and where the payload starts. The unit test
 * (test/wire_test.c) checks every offset against the header lengths.
 */
#define L_NONE		.hdr_len = 12
#define L_IMMDT		.ehs = H_IMMDT, .hdr_len = 16,			\
			.off = { [CNUAS_EH_IMMDT] = 12 }
#define L_IETH		.ehs = H_IETH, .hdr_len = 16,			\
			.off = { [CNUAS_EH_IETH] = 12 }
#define L_RETH		.ehs = H_RETH, .hdr_len = 28,			\
			.off = { [CNUAS_EH_RETH] = 12 }
#define L_RETH_IMMDT	.ehs = H_RETH | H_IMMDT, .hdr_len = 32,		\
			.off = { [CNUAS_EH_RETH] = 12, [CNUAS_EH_IMMDT] = 28 }
#define L_FETH_RETH	.ehs = H_FETH | H_RETH, .hdr_len = 32,		\
			.off = { [CNUAS_EH_FETH] = 12, [CNUAS_EH_RETH] = 16 }
#define L_AETH		.ehs = H_AETH, .hdr_len = 16,			\
			.off = { [CNUAS_EH_AETH] = 12 }
#define L_AETH_ATACK	.ehs = H_AETH | H_ATACK, .hdr_len = 24,		\
			.off = { [CNUAS_EH_AETH] = 12, [CNUAS_EH_ATOMIC_ACK] = 16 }
#define L_ATETH		.ehs = H_ATETH, .hdr_len = 40,			\
			.off = { [CNUAS_EH_ATOMIC_ETH] = 12 }
#define L_DETH		.ehs = H_DETH, .hdr_len = 20,			\
			.off = { [CNUAS_EH_DETH] = 12 }
#define L_DETH_IMMDT	.ehs = H_DETH | H_IMMDT, .hdr_len = 24,		\
			.off = { [CNUAS_EH_DETH] = 12, [CNUAS_EH_IMMDT] = 20 }

#define OP(num, layout, fl)						\
	[CNUAS_OP_##num] = { .name = #num, .flags = (fl), layout }

/* Short names for the table only. */
#define F_RQ	(CNUAS_OPF_RC | CNUAS_OPF_REQ)
#define F_RS	(CNUAS_OPF_RC | CNUAS_OPF_RESP)
#define F_FIRST	CNUAS_OPF_FIRST
#define F_LAST	CNUAS_OPF_LAST
#define F_ONLY	(CNUAS_OPF_FIRST | CNUAS_OPF_LAST)
#define F_PAY	CNUAS_OPF_PAYLOAD
#define F_SEND	(CNUAS_OPF_SEND | CNUAS_OPF_RECV)
#define F_RECV	CNUAS_OPF_RECV
#define F_WRITE	CNUAS_OPF_WRITE
#define F_READ	CNUAS_OPF_READ
#define F_ATOMIC	CNUAS_OPF_ATOMIC
#define F_ACK	CNUAS_OPF_ACK
#define F_IMM	CNUAS_OPF_IMM
#define F_INV	CNUAS_OPF_INV
#define F_UQ	(CNUAS_OPF_UC | CNUAS_OPF_REQ)
#define F_UD	(CNUAS_OPF_UD | CNUAS_OPF_REQ)

#define H_DETH	CNUAS_EH(CNUAS_EH_DETH)
#define H_FETH	CNUAS_EH(CNUAS_EH_FETH)
#define H_RETH	CNUAS_EH(CNUAS_EH_RETH)
#define H_ATETH	CNUAS_EH(CNUAS_EH_ATOMIC_ETH)
#define H_AETH	CNUAS_EH(CNUAS_EH_AETH)
#define H_ATACK	CNUAS_EH(CNUAS_EH_ATOMIC_ACK)
#define H_IMMDT	CNUAS_EH(CNUAS_EH_IMMDT)
#define H_IETH	CNUAS_EH(CNUAS_EH_IETH)

const struct cnuas_opcode cnuas_opcodes[CNUAS_OPCODE_NUM] = {
	OP(RC_SEND_FIRST,	L_NONE,		F_RQ | F_SEND | F_PAY | F_FIRST),
	OP(RC_SEND_MIDDLE,	L_NONE,		F_RQ | F_SEND | F_PAY),
	OP(RC_SEND_LAST,	L_NONE,		F_RQ | F_SEND | F_PAY | F_LAST),
	OP(RC_SEND_LAST_IMM,	L_IMMDT,	F_RQ | F_SEND | F_PAY | F_LAST | F_IMM),
	OP(RC_SEND_ONLY,	L_NONE,		F_RQ | F_SEND | F_PAY | F_ONLY),
	OP(RC_SEND_ONLY_IMM,	L_IMMDT,	F_RQ | F_SEND | F_PAY | F_ONLY | F_IMM),
	OP(RC_WRITE_FIRST,	L_RETH,		F_RQ | F_WRITE | F_PAY | F_FIRST),
	OP(RC_WRITE_MIDDLE,	L_NONE,		F_RQ | F_WRITE | F_PAY),
	OP(RC_WRITE_LAST,	L_NONE,		F_RQ | F_WRITE | F_PAY | F_LAST),
	/* WRITE with immediate consumes a receive WQE for the ImmDt. */
	OP(RC_WRITE_LAST_IMM,	L_IMMDT,	F_RQ | F_WRITE | F_RECV | F_PAY | F_LAST | F_IMM),
	OP(RC_WRITE_ONLY,	L_RETH,		F_RQ | F_WRITE | F_PAY | F_ONLY),
	OP(RC_WRITE_ONLY_IMM,	L_RETH_IMMDT,	F_RQ | F_WRITE | F_RECV | F_PAY | F_ONLY | F_IMM),
	OP(RC_READ_REQ,		L_RETH,		F_RQ | F_READ | F_ONLY),
	OP(RC_READ_RESP_FIRST,	L_AETH,		F_RS | F_READ | F_PAY | F_FIRST | F_ACK),
	OP(RC_READ_RESP_MIDDLE,	L_NONE,		F_RS | F_READ | F_PAY),
	OP(RC_READ_RESP_LAST,	L_AETH,		F_RS | F_READ | F_PAY | F_LAST | F_ACK),
	OP(RC_READ_RESP_ONLY,	L_AETH,		F_RS | F_READ | F_PAY | F_ONLY | F_ACK),
	OP(RC_ACK,		L_AETH,		F_RS | F_ONLY | F_ACK),
	OP(RC_ATOMIC_ACK,	L_AETH_ATACK,	F_RS | F_ATOMIC | F_ONLY | F_ACK),
	OP(RC_CMP_SWAP,		L_ATETH,	F_RQ | F_ATOMIC | F_ONLY),
	OP(RC_FETCH_ADD,	L_ATETH,	F_RQ | F_ATOMIC | F_ONLY),
	OP(RC_SEND_LAST_INV,	L_IETH,		F_RQ | F_SEND | F_PAY | F_LAST | F_INV),
	OP(RC_SEND_ONLY_INV,	L_IETH,		F_RQ | F_SEND | F_PAY | F_ONLY | F_INV),
	/*
	 * IBA 1.5: FLUSH is answered like a READ (a zero-length READ
	 * RESPONSE ONLY); ATOMIC WRITE is a one-packet WRITE of 8 bytes,
	 * ACKed as one. The responder tells both from WRITE by opcode.
	 */
	OP(RC_FLUSH,		L_FETH_RETH,	F_RQ | F_ONLY),
	OP(RC_ATOMIC_WRITE,	L_RETH,		F_RQ | F_WRITE | F_PAY | F_ONLY),
	/* UC: SEND and WRITE only, no ACK asked or sent. */
	OP(UC_SEND_FIRST,	L_NONE,		F_UQ | F_SEND | F_PAY | F_FIRST),
	OP(UC_SEND_MIDDLE,	L_NONE,		F_UQ | F_SEND | F_PAY),
	OP(UC_SEND_LAST,	L_NONE,		F_UQ | F_SEND | F_PAY | F_LAST),
	OP(UC_SEND_LAST_IMM,	L_IMMDT,	F_UQ | F_SEND | F_PAY | F_LAST | F_IMM),
	OP(UC_SEND_ONLY,	L_NONE,		F_UQ | F_SEND | F_PAY | F_ONLY),
	OP(UC_SEND_ONLY_IMM,	L_IMMDT,	F_UQ | F_SEND | F_PAY | F_ONLY | F_IMM),
	OP(UC_WRITE_FIRST,	L_RETH,		F_UQ | F_WRITE | F_PAY | F_FIRST),
	OP(UC_WRITE_MIDDLE,	L_NONE,		F_UQ | F_WRITE | F_PAY),
	OP(UC_WRITE_LAST,	L_NONE,		F_UQ | F_WRITE | F_PAY | F_LAST),
	OP(UC_WRITE_LAST_IMM,	L_IMMDT,	F_UQ | F_WRITE | F_RECV | F_PAY | F_LAST | F_IMM),
	OP(UC_WRITE_ONLY,	L_RETH,		F_UQ | F_WRITE | F_PAY | F_ONLY),
	OP(UC_WRITE_ONLY_IMM,	L_RETH_IMMDT,	F_UQ | F_WRITE | F_RECV | F_PAY | F_ONLY | F_IMM),
	OP(UD_SEND_ONLY,	L_DETH,		F_UD | F_SEND | F_PAY | F_ONLY),
	OP(UD_SEND_ONLY_IMM,	L_DETH_IMMDT,	F_UD | F_SEND | F_PAY | F_ONLY | F_IMM),
};
