/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RoCEv2 wire format: the IBA transport headers (BTH and its extension
 * headers), the opcode table that says which of them each packet carries,
 * and the ICRC.
 *
 * This header and opcode.c / icrc.c build both in the kernel and in the
 * host unit test (test/, plain C, no kernel headers): there the few kernel
 * primitives they use come from test/host_kernel.h.
 *
 * All headers are in network byte order and may sit at any alignment in a
 * frame: the structs are packed and only read through the accessors.
 */
#ifndef CNUAS_IB_WIRE_H
#define CNUAS_IB_WIRE_H

#ifdef __KERNEL__
#include <linux/crc32.h>
#include <linux/types.h>
#include <asm/byteorder.h>
#else
#include "test/host_kernel.h"
#endif
/* CNUAS_BTH_LEN, CNUAS_ICRC_LEN and the ICRC's masked headers */
#include "cnuas_roce.h"

/* ---- extension header sizes (bytes) ---- */
#define CNUAS_DETH_LEN		8
#define CNUAS_FETH_LEN		4
#define CNUAS_RETH_LEN		16
#define CNUAS_ATOMIC_ETH_LEN	28
#define CNUAS_AETH_LEN		4
#define CNUAS_ATOMIC_ACK_LEN	8
#define CNUAS_IMMDT_LEN		4
#define CNUAS_IETH_LEN		4

/*
 * Extension headers after the BTH. The enum order is the order in which
 * they follow each other in a packet (IBA 9.2): offsets are derived from it.
 */
enum cnuas_eh {
	CNUAS_EH_DETH,
	CNUAS_EH_FETH,
	CNUAS_EH_RETH,
	CNUAS_EH_ATOMIC_ETH,
	CNUAS_EH_AETH,
	CNUAS_EH_ATOMIC_ACK,
	CNUAS_EH_IMMDT,
	CNUAS_EH_IETH,
	CNUAS_EH_NUM
};

#define CNUAS_EH(eh)		(1u << (eh))

/* What an opcode means to the transport (struct cnuas_opcode.flags). */
enum cnuas_op_flags {
	CNUAS_OPF_REQ		= 1u << 0,	/* requester -> responder */
	CNUAS_OPF_RESP		= 1u << 1,	/* responder -> requester */
	CNUAS_OPF_FIRST		= 1u << 2,	/* starts a message */
	CNUAS_OPF_LAST		= 1u << 3,	/* ends a message (ONLY = both) */
	CNUAS_OPF_PAYLOAD	= 1u << 4,	/* carries a payload */
	CNUAS_OPF_SEND		= 1u << 5,
	CNUAS_OPF_WRITE		= 1u << 6,
	CNUAS_OPF_READ		= 1u << 7,	/* READ request or response */
	CNUAS_OPF_ATOMIC	= 1u << 8,	/* atomic request or its ACK */
	CNUAS_OPF_ACK		= 1u << 9,	/* carries an AETH */
	CNUAS_OPF_IMM		= 1u << 10,
	CNUAS_OPF_INV		= 1u << 11,	/* invalidates an rkey */
	CNUAS_OPF_RC		= 1u << 12,
	CNUAS_OPF_UD		= 1u << 13,
	CNUAS_OPF_RECV		= 1u << 14,	/* consumes a receive WQE */
	CNUAS_OPF_UC		= 1u << 15,
};

#define CNUAS_OPF_MIDDLE_MASK	(CNUAS_OPF_FIRST | CNUAS_OPF_LAST)

/* BTH opcodes (IBA 9.2.1): transport in bits 7..5, operation in 4..0. */
enum cnuas_opcode_num {
	CNUAS_OP_RC_SEND_FIRST			= 0x00,
	CNUAS_OP_RC_SEND_MIDDLE			= 0x01,
	CNUAS_OP_RC_SEND_LAST			= 0x02,
	CNUAS_OP_RC_SEND_LAST_IMM		= 0x03,
	CNUAS_OP_RC_SEND_ONLY			= 0x04,
	CNUAS_OP_RC_SEND_ONLY_IMM		= 0x05,
	CNUAS_OP_RC_WRITE_FIRST			= 0x06,
	CNUAS_OP_RC_WRITE_MIDDLE		= 0x07,
	CNUAS_OP_RC_WRITE_LAST			= 0x08,
	CNUAS_OP_RC_WRITE_LAST_IMM		= 0x09,
	CNUAS_OP_RC_WRITE_ONLY			= 0x0a,
	CNUAS_OP_RC_WRITE_ONLY_IMM		= 0x0b,
	CNUAS_OP_RC_READ_REQ			= 0x0c,
	CNUAS_OP_RC_READ_RESP_FIRST		= 0x0d,
	CNUAS_OP_RC_READ_RESP_MIDDLE		= 0x0e,
	CNUAS_OP_RC_READ_RESP_LAST		= 0x0f,
	CNUAS_OP_RC_READ_RESP_ONLY		= 0x10,
	CNUAS_OP_RC_ACK				= 0x11,
	CNUAS_OP_RC_ATOMIC_ACK			= 0x12,
	CNUAS_OP_RC_CMP_SWAP			= 0x13,
	CNUAS_OP_RC_FETCH_ADD			= 0x14,
	CNUAS_OP_RC_SEND_LAST_INV		= 0x16,
	CNUAS_OP_RC_SEND_ONLY_INV		= 0x17,
	/* IBA 1.5 Memory Placement Extensions */
	CNUAS_OP_RC_FLUSH			= 0x1c,
	CNUAS_OP_RC_ATOMIC_WRITE		= 0x1d,
	CNUAS_OP_UC_SEND_FIRST			= 0x20,
	CNUAS_OP_UC_SEND_MIDDLE			= 0x21,
	CNUAS_OP_UC_SEND_LAST			= 0x22,
	CNUAS_OP_UC_SEND_LAST_IMM		= 0x23,
	CNUAS_OP_UC_SEND_ONLY			= 0x24,
	CNUAS_OP_UC_SEND_ONLY_IMM		= 0x25,
	CNUAS_OP_UC_WRITE_FIRST			= 0x26,
	CNUAS_OP_UC_WRITE_MIDDLE		= 0x27,
	CNUAS_OP_UC_WRITE_LAST			= 0x28,
	CNUAS_OP_UC_WRITE_LAST_IMM		= 0x29,
	CNUAS_OP_UC_WRITE_ONLY			= 0x2a,
	CNUAS_OP_UC_WRITE_ONLY_IMM		= 0x2b,
	CNUAS_OP_UD_SEND_ONLY			= 0x64,
	CNUAS_OP_UD_SEND_ONLY_IMM		= 0x65,
};

#define CNUAS_OPCODE_NUM	256
/*
 * UC's SEND and WRITE opcodes are RC's (0x00..0x0b) with the transport
 * bits of UC (IBA 9.2.1).
 */
#define CNUAS_OP_TRANSPORT_UC	0x20

/* One row of the opcode table; an all-zero row is an unsupported opcode. */
struct cnuas_opcode {
	const char *name;
	u16 flags;			/* CNUAS_OPF_* */
	u8 ehs;				/* CNUAS_EH() bits */
	u8 hdr_len;			/* BTH + extension headers */
	u8 off[CNUAS_EH_NUM];		/* from the BTH start, if present */
};

extern const struct cnuas_opcode cnuas_opcodes[CNUAS_OPCODE_NUM];

/* NULL for an opcode this transport does not know: drop the packet. */
static inline const struct cnuas_opcode *cnuas_opcode_get(u8 opcode)
{
	const struct cnuas_opcode *op = &cnuas_opcodes[opcode];

	return op->name ? op : NULL;
}

/* ---- BTH (IBA 9.2) ---- */
struct cnuas_bth {
	u8 opcode;
	u8 flags;		/* SE(7) M(6) PadCnt(5..4) TVer(3..0) */
	__be16 pkey;
	__be32 qpn;		/* FECN(31) BECN(30) resv6a(29..24) DestQP */
	__be32 apsn;		/* AckReq(31) resv7(30..24) PSN */
} __packed;

#define CNUAS_BTH_SE		0x80
#define CNUAS_BTH_MIG		0x40
#define CNUAS_BTH_PAD_SHIFT	4
#define CNUAS_BTH_PAD_MASK	0x30
#define CNUAS_BTH_TVER_MASK	0x0f
#define CNUAS_BTH_FECN		0x80000000u
#define CNUAS_BTH_BECN		0x40000000u
#define CNUAS_BTH_ACKREQ	0x80000000u
#define CNUAS_QPN_MASK		0x00ffffffu
#define CNUAS_PSN_MASK		0x00ffffffu

static inline u8 cnuas_bth_opcode(const struct cnuas_bth *bth)
{
	return bth->opcode;
}

static inline bool cnuas_bth_se(const struct cnuas_bth *bth)
{
	return bth->flags & CNUAS_BTH_SE;
}

static inline u8 cnuas_bth_pad(const struct cnuas_bth *bth)
{
	return (bth->flags & CNUAS_BTH_PAD_MASK) >> CNUAS_BTH_PAD_SHIFT;
}

static inline u8 cnuas_bth_tver(const struct cnuas_bth *bth)
{
	return bth->flags & CNUAS_BTH_TVER_MASK;
}

static inline u16 cnuas_bth_pkey(const struct cnuas_bth *bth)
{
	return be16_to_cpu(bth->pkey);
}

static inline u32 cnuas_bth_qpn(const struct cnuas_bth *bth)
{
	return be32_to_cpu(bth->qpn) & CNUAS_QPN_MASK;
}

static inline bool cnuas_bth_becn(const struct cnuas_bth *bth)
{
	return be32_to_cpu(bth->qpn) & CNUAS_BTH_BECN;
}

static inline bool cnuas_bth_ackreq(const struct cnuas_bth *bth)
{
	return be32_to_cpu(bth->apsn) & CNUAS_BTH_ACKREQ;
}

static inline u32 cnuas_bth_psn(const struct cnuas_bth *bth)
{
	return be32_to_cpu(bth->apsn) & CNUAS_PSN_MASK;
}

/* Write a whole BTH: reserved bits zero, TVer 0, no FECN/BECN. */
static inline void cnuas_bth_build(struct cnuas_bth *bth, u8 opcode, bool se,
				   u8 pad, u16 pkey, u32 qpn, bool ackreq,
				   u32 psn)
{
	bth->opcode = opcode;
	bth->flags = (se ? CNUAS_BTH_SE : 0) |
		     ((pad << CNUAS_BTH_PAD_SHIFT) & CNUAS_BTH_PAD_MASK);
	bth->pkey = cpu_to_be16(pkey);
	bth->qpn = cpu_to_be32(qpn & CNUAS_QPN_MASK);
	bth->apsn = cpu_to_be32((ackreq ? CNUAS_BTH_ACKREQ : 0) |
				(psn & CNUAS_PSN_MASK));
}

/* ---- DETH (UD) ---- */
struct cnuas_deth {
	__be32 qkey;
	__be32 sqpn;		/* resv8(31..24) SrcQP */
} __packed;

static inline u32 cnuas_deth_qkey(const struct cnuas_deth *d)
{
	return be32_to_cpu(d->qkey);
}

static inline u32 cnuas_deth_sqpn(const struct cnuas_deth *d)
{
	return be32_to_cpu(d->sqpn) & CNUAS_QPN_MASK;
}

static inline void cnuas_deth_build(struct cnuas_deth *d, u32 qkey, u32 sqpn)
{
	d->qkey = cpu_to_be32(qkey);
	d->sqpn = cpu_to_be32(sqpn & CNUAS_QPN_MASK);
}

/*
 * ---- FETH (FLUSH, IBA 1.5): resv(31..6) SelectivityLevel(5..4)
 * PlacementType(3..0) ----
 */
struct cnuas_feth {
	__be32 bits;
} __packed;

#define CNUAS_FETH_PLT_MASK	0x0000000fu
#define CNUAS_FETH_SEL_SHIFT	4
#define CNUAS_FETH_SEL_MASK	0x00000030u
/* Placement types (bits, one or both) and selectivity levels. */
#define CNUAS_FLUSH_GLOBAL	0x1
#define CNUAS_FLUSH_PERSISTENT	0x2
#define CNUAS_FLUSH_RANGE	0
#define CNUAS_FLUSH_MR		1

static inline u8 cnuas_feth_plt(const struct cnuas_feth *f)
{
	return be32_to_cpu(f->bits) & CNUAS_FETH_PLT_MASK;
}

static inline u8 cnuas_feth_sel(const struct cnuas_feth *f)
{
	return (be32_to_cpu(f->bits) & CNUAS_FETH_SEL_MASK) >>
	       CNUAS_FETH_SEL_SHIFT;
}

static inline void cnuas_feth_build(struct cnuas_feth *f, u8 plt, u8 sel)
{
	f->bits = cpu_to_be32((plt & CNUAS_FETH_PLT_MASK) |
			      (((u32)sel << CNUAS_FETH_SEL_SHIFT) &
			       CNUAS_FETH_SEL_MASK));
}

/* ---- RETH (RDMA WRITE / READ request, FLUSH, ATOMIC WRITE) ---- */
struct cnuas_reth {
	__be64 va;
	__be32 rkey;
	__be32 len;
} __packed;

static inline u64 cnuas_reth_va(const struct cnuas_reth *r)
{
	return be64_to_cpu(r->va);
}

static inline u32 cnuas_reth_rkey(const struct cnuas_reth *r)
{
	return be32_to_cpu(r->rkey);
}

static inline u32 cnuas_reth_len(const struct cnuas_reth *r)
{
	return be32_to_cpu(r->len);
}

static inline void cnuas_reth_build(struct cnuas_reth *r, u64 va, u32 rkey,
				    u32 len)
{
	r->va = cpu_to_be64(va);
	r->rkey = cpu_to_be32(rkey);
	r->len = cpu_to_be32(len);
}

/* ---- AtomicETH ---- */
struct cnuas_atomic_eth {
	__be64 va;
	__be32 rkey;
	__be64 swap_add;
	__be64 compare;
} __packed;

static inline u64 cnuas_atomic_eth_va(const struct cnuas_atomic_eth *a)
{
	return be64_to_cpu(a->va);
}

static inline u32 cnuas_atomic_eth_rkey(const struct cnuas_atomic_eth *a)
{
	return be32_to_cpu(a->rkey);
}

static inline u64 cnuas_atomic_eth_swap_add(const struct cnuas_atomic_eth *a)
{
	return be64_to_cpu(a->swap_add);
}

static inline u64 cnuas_atomic_eth_compare(const struct cnuas_atomic_eth *a)
{
	return be64_to_cpu(a->compare);
}

static inline void cnuas_atomic_eth_build(struct cnuas_atomic_eth *a, u64 va,
					  u32 rkey, u64 swap_add, u64 compare)
{
	a->va = cpu_to_be64(va);
	a->rkey = cpu_to_be32(rkey);
	a->swap_add = cpu_to_be64(swap_add);
	a->compare = cpu_to_be64(compare);
}

/* ---- AETH (IBA 9.3.5): syndrome(31..24) MSN(23..0) ---- */
struct cnuas_aeth {
	__be32 smsn;
} __packed;

#define CNUAS_AETH_SYN_SHIFT	24
#define CNUAS_AETH_MSN_MASK	0x00ffffffu
/* Syndrome bits 6..5: what kind of answer; bits 4..0: credits/timer/code. */
#define CNUAS_AETH_TYPE_MASK	0x60
#define CNUAS_AETH_TYPE_ACK	0x00
#define CNUAS_AETH_TYPE_RNR	0x20
#define CNUAS_AETH_TYPE_NAK	0x60
#define CNUAS_AETH_VALUE_MASK	0x1f
#define CNUAS_AETH_NAK_PSN_SEQ	0x00
#define CNUAS_AETH_NAK_INVALID	0x01
#define CNUAS_AETH_NAK_ACCESS	0x02
#define CNUAS_AETH_NAK_OPERR	0x03
#define CNUAS_AETH_NAK_INV_RD	0x04
#define CNUAS_AETH_CREDITS_NONE	0x1f	/* "no credit count" in ACKs */

static inline u8 cnuas_aeth_syndrome(const struct cnuas_aeth *a)
{
	return be32_to_cpu(a->smsn) >> CNUAS_AETH_SYN_SHIFT;
}

static inline u32 cnuas_aeth_msn(const struct cnuas_aeth *a)
{
	return be32_to_cpu(a->smsn) & CNUAS_AETH_MSN_MASK;
}

static inline void cnuas_aeth_build(struct cnuas_aeth *a, u8 syndrome,
				    u32 msn)
{
	a->smsn = cpu_to_be32((u32)syndrome << CNUAS_AETH_SYN_SHIFT |
			      (msn & CNUAS_AETH_MSN_MASK));
}

/* ---- AtomicAckETH ---- */
struct cnuas_atomic_ack {
	__be64 orig;
} __packed;

static inline u64 cnuas_atomic_ack_orig(const struct cnuas_atomic_ack *a)
{
	return be64_to_cpu(a->orig);
}

/* ---- ImmDt and IETH: one 32-bit field each ---- */
struct cnuas_immdt {
	__be32 imm;		/* passed to the consumer as is (__be32) */
} __packed;

struct cnuas_ieth {
	__be32 rkey;
} __packed;

static inline u32 cnuas_ieth_rkey(const struct cnuas_ieth *i)
{
	return be32_to_cpu(i->rkey);
}

/*
 * Extension header @eh of a packet whose BTH is at @bth and whose opcode
 * row is @op, or NULL if that opcode does not carry it. The caller has
 * checked that op->hdr_len bytes are there.
 */
static inline void *cnuas_eh_ptr(const struct cnuas_opcode *op, void *bth,
				 enum cnuas_eh eh)
{
	if (!(op->ehs & CNUAS_EH(eh)))
		return NULL;
	return (u8 *)bth + op->off[eh];
}

/* Payload length of a packet of @len bytes from the BTH to the ICRC. */
static inline int cnuas_payload_len(const struct cnuas_opcode *op,
				    const struct cnuas_bth *bth,
				    unsigned int len)
{
	unsigned int hdrs = op->hdr_len + cnuas_bth_pad(bth) + CNUAS_ICRC_LEN;

	return len < hdrs ? -1 : (int)(len - hdrs);
}

/* ---- ICRC (icrc.c) ---- */

/*
 * Start the ICRC of a RoCEv2 packet whose IP header is at @ip (IPv4 or
 * IPv6, @len bytes available): covers the 64-bit all-ones prefix and the
 * IP, UDP and BTH headers with their variant fields masked. On success
 * returns the number of bytes of @ip consumed; the caller goes on with
 * cnuas_icrc_update() over the rest (extension headers, payload, pad) and
 * ends with cnuas_icrc_final(). A malformed packet returns -1.
 */
int cnuas_icrc_begin(const void *ip, unsigned int len, u32 *crc);

static inline u32 cnuas_icrc_update(u32 crc, const void *p, unsigned int len)
{
	return crc32_le(crc, (const unsigned char *)p, len);
}

/* The value to compare with / store as a little-endian 32-bit field. */
static inline u32 cnuas_icrc_final(u32 crc)
{
	return ~crc;
}

/* The whole ICRC of a linear packet: IP header up to (not with) the ICRC. */
int cnuas_icrc_linear(const void *ip, unsigned int len, u32 *icrc);

#endif /* CNUAS_IB_WIRE_H */
