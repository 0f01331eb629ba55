// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Host unit test of the RoCEv2 codec (wire.h, opcode.c, icrc.c and the
 * shared cnuas_roce.h, cnuas_roce_frame.h): struct layout, the opcode
 * table, field packing, the envelope walk, and the ICRC against frames
 * that Linux Soft-RoCE put on the wire (rxe-frames.h); and the native
 * InfiniBand framing (ib_wire.h, cnuas_ib_link.h): LRH and GRH round
 * trips, the walk's checks, the native ICRC against one computed here
 * from the IBA's masking rules with zlib, the VCRC against a bitwise
 * CRC-16 written here. Built with ASan and
 * UBSan: every buffer handed to the codec is a heap copy of exactly its
 * length, so an out-of-bounds read fails the test.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "wire.h"
#include "ib_wire.h"
#include "cnuas_roce_frame.h"
#include "rxe-frames.h"

static int failures, checks;

#define CHECK(cond, ...)						\
	do {								\
		checks++;						\
		if (!(cond)) {						\
			failures++;					\
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);				\
			printf("\n");					\
		}							\
	} while (0)

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof(*(a)))
#define ETH_HLEN	14
#define UDP_HLEN	8

static u8 *dup_bytes(const void *p, size_t len)
{
	u8 *d = malloc(len ? len : 1);

	if (!d) {
		perror("malloc");
		exit(2);
	}
	memcpy(d, p, len);
	return d;
}

static u32 get_le32(const u8 *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (u32)p[3] << 24;
}

static u32 get_be32(const u8 *p)
{
	return (u32)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static void test_layout(void)
{
	CHECK(sizeof(struct cnuas_bth) == CNUAS_BTH_LEN, "%zu", sizeof(struct cnuas_bth));
	CHECK(sizeof(struct cnuas_deth) == CNUAS_DETH_LEN, "%zu", sizeof(struct cnuas_deth));
	CHECK(sizeof(struct cnuas_reth) == CNUAS_RETH_LEN, "%zu", sizeof(struct cnuas_reth));
	CHECK(sizeof(struct cnuas_atomic_eth) == CNUAS_ATOMIC_ETH_LEN, "%zu",
	      sizeof(struct cnuas_atomic_eth));
	CHECK(sizeof(struct cnuas_aeth) == CNUAS_AETH_LEN, "%zu", sizeof(struct cnuas_aeth));
	CHECK(sizeof(struct cnuas_atomic_ack) == CNUAS_ATOMIC_ACK_LEN, "%zu",
	      sizeof(struct cnuas_atomic_ack));
	CHECK(sizeof(struct cnuas_immdt) == CNUAS_IMMDT_LEN, "%zu", sizeof(struct cnuas_immdt));
	CHECK(sizeof(struct cnuas_ieth) == CNUAS_IETH_LEN, "%zu", sizeof(struct cnuas_ieth));
}

/* Header lengths and offsets as IBA 9.2 lays the packets out. */
static void test_opcode_rows(void)
{
	static const struct {
		u8 opcode;
		u8 hdr_len;
		int eh, off;	/* one extension header and its offset, or -1 */
		int eh2, off2;
	} rows[] = {
		{ CNUAS_OP_RC_SEND_ONLY, 12, -1, 0, -1, 0 },
		{ CNUAS_OP_RC_SEND_ONLY_IMM, 16, CNUAS_EH_IMMDT, 12, -1, 0 },
		{ CNUAS_OP_RC_WRITE_FIRST, 28, CNUAS_EH_RETH, 12, -1, 0 },
		{ CNUAS_OP_RC_WRITE_MIDDLE, 12, -1, 0, -1, 0 },
		{ CNUAS_OP_RC_WRITE_ONLY_IMM, 32, CNUAS_EH_RETH, 12, CNUAS_EH_IMMDT, 28 },
		{ CNUAS_OP_RC_READ_REQ, 28, CNUAS_EH_RETH, 12, -1, 0 },
		{ CNUAS_OP_RC_READ_RESP_FIRST, 16, CNUAS_EH_AETH, 12, -1, 0 },
		{ CNUAS_OP_RC_READ_RESP_MIDDLE, 12, -1, 0, -1, 0 },
		{ CNUAS_OP_RC_ACK, 16, CNUAS_EH_AETH, 12, -1, 0 },
		{ CNUAS_OP_RC_ATOMIC_ACK, 24, CNUAS_EH_AETH, 12, CNUAS_EH_ATOMIC_ACK, 16 },
		{ CNUAS_OP_RC_CMP_SWAP, 40, CNUAS_EH_ATOMIC_ETH, 12, -1, 0 },
		{ CNUAS_OP_RC_FETCH_ADD, 40, CNUAS_EH_ATOMIC_ETH, 12, -1, 0 },
		{ CNUAS_OP_RC_SEND_LAST_INV, 16, CNUAS_EH_IETH, 12, -1, 0 },
		{ CNUAS_OP_RC_FLUSH, 32, CNUAS_EH_FETH, 12, CNUAS_EH_RETH, 16 },
		{ CNUAS_OP_RC_ATOMIC_WRITE, 28, CNUAS_EH_RETH, 12, -1, 0 },
		{ CNUAS_OP_UD_SEND_ONLY, 20, CNUAS_EH_DETH, 12, -1, 0 },
		{ CNUAS_OP_UD_SEND_ONLY_IMM, 24, CNUAS_EH_DETH, 12, CNUAS_EH_IMMDT, 20 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct cnuas_opcode *op = cnuas_opcode_get(rows[i].opcode);

		CHECK(op, "opcode 0x%02x missing", rows[i].opcode);
		if (!op)
			continue;
		CHECK(op->hdr_len == rows[i].hdr_len, "%s: hdr_len %u, want %u", op->name,
		      op->hdr_len, rows[i].hdr_len);
		if (rows[i].eh >= 0)
			CHECK(op->off[rows[i].eh] == rows[i].off, "%s: offset %u, want %d",
			      op->name, op->off[rows[i].eh], rows[i].off);
		if (rows[i].eh2 >= 0)
			CHECK(op->off[rows[i].eh2] == rows[i].off2, "%s: offset %u, want %d",
			      op->name, op->off[rows[i].eh2], rows[i].off2);
	}
}

static bool has_eh(const struct cnuas_opcode *op, enum cnuas_eh eh)
{
	return op->ehs & CNUAS_EH(eh);
}

/* Every row is consistent: flags agree with the headers it carries. */
static void test_opcode_table(void)
{
	unsigned int i, known = 0, len;
	int eh;

	for (i = 0; i < CNUAS_OPCODE_NUM; i++) {
		const struct cnuas_opcode *op = cnuas_opcode_get(i);
		u16 f;

		if (!op)
			continue;
		known++;
		f = op->flags;
		CHECK(!(f & CNUAS_OPF_ACK) == !has_eh(op, CNUAS_EH_AETH), "%s", op->name);
		CHECK(!(f & CNUAS_OPF_IMM) == !has_eh(op, CNUAS_EH_IMMDT), "%s", op->name);
		CHECK(!(f & CNUAS_OPF_INV) == !has_eh(op, CNUAS_EH_IETH), "%s", op->name);
		CHECK(!(f & CNUAS_OPF_UD) == !has_eh(op, CNUAS_EH_DETH), "%s", op->name);
		CHECK(!!(f & CNUAS_OPF_REQ) != !!(f & CNUAS_OPF_RESP), "%s", op->name);
		/* A receive WQE goes to every SEND and to WRITE with immediate. */
		CHECK(!(f & CNUAS_OPF_RECV) ==
		      !((f & CNUAS_OPF_SEND) || ((f & CNUAS_OPF_WRITE) && (f & CNUAS_OPF_IMM))),
		      "%s", op->name);
		CHECK(!((f & CNUAS_OPF_SEND) && (f & CNUAS_OPF_WRITE)), "%s", op->name);
		/* One transport each, and its range of opcodes (IBA 9.2.1). */
		CHECK(!!(f & CNUAS_OPF_RC) + !!(f & CNUAS_OPF_UC) + !!(f & CNUAS_OPF_UD) == 1,
		      "%s", op->name);
		CHECK((f & CNUAS_OPF_RC) ? i < 0x20 :
		      (f & CNUAS_OPF_UC) ? (i >= 0x20 && i < 0x40) : (i >= 0x60 && i < 0x80),
		      "%s", op->name);
		/* UC has SEND and WRITE only, as RC's with the UC bits. */
		if (f & CNUAS_OPF_UC) {
			const struct cnuas_opcode *rc = cnuas_opcode_get(i - CNUAS_OP_TRANSPORT_UC);

			CHECK(rc && (f & (CNUAS_OPF_SEND | CNUAS_OPF_WRITE)) &&
			      (rc->flags & ~CNUAS_OPF_RC) == (f & ~CNUAS_OPF_UC) &&
			      rc->hdr_len == op->hdr_len && rc->ehs == op->ehs, "%s", op->name);
		}
		/*
		 * First-of-message writes (ATOMIC WRITE too), READ requests
		 * and FLUSH carry the RETH, nothing else does; FLUSH alone
		 * the FETH.
		 */
		CHECK(has_eh(op, CNUAS_EH_RETH) ==
		      (((f & CNUAS_OPF_WRITE) && (f & CNUAS_OPF_FIRST)) ||
		       ((f & CNUAS_OPF_READ) && (f & CNUAS_OPF_REQ)) ||
		       i == CNUAS_OP_RC_FLUSH), "%s", op->name);
		CHECK(has_eh(op, CNUAS_EH_FETH) == (i == CNUAS_OP_RC_FLUSH), "%s", op->name);
		len = CNUAS_BTH_LEN;
		for (eh = 0; eh < CNUAS_EH_NUM; eh++) {
			static const u8 lens[CNUAS_EH_NUM] = {
				CNUAS_DETH_LEN, CNUAS_FETH_LEN, CNUAS_RETH_LEN,
				CNUAS_ATOMIC_ETH_LEN,
				CNUAS_AETH_LEN, CNUAS_ATOMIC_ACK_LEN, CNUAS_IMMDT_LEN,
				CNUAS_IETH_LEN,
			};

			if (!(op->ehs & CNUAS_EH(eh)))
				continue;
			CHECK(op->off[eh] == len, "%s: eh %d at %u, want %u", op->name, eh,
			      op->off[eh], len);
			len += lens[eh];
		}
		CHECK(op->hdr_len == len, "%s: hdr_len %u, want %u", op->name, op->hdr_len, len);
	}
	CHECK(known == 39, "%u known opcodes", known);
	CHECK(!cnuas_opcode_get(0x15) && !cnuas_opcode_get(0x18) &&
	      !cnuas_opcode_get(0x2c) && !cnuas_opcode_get(0x81) &&
	      !cnuas_opcode_get(0xff), "reserved opcodes must be unknown");
}

static void test_packing(void)
{
	static const u8 want_bth[] = {
		0x0a, 0xa0, 0x80, 0x01, 0x00, 0xab, 0xcd, 0xef, 0x80, 0x12, 0x34, 0x56,
	};
	static const u8 want_reth[] = {
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x00, 0x00,
	};
	static const u8 want_aeth[] = { 0x61, 0x00, 0x00, 0x07 };
	static const u8 want_deth[] = { 0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01 };
	u8 buf[64];
	struct cnuas_bth *bth = (struct cnuas_bth *)(buf + 1);	/* unaligned */
	struct cnuas_reth *reth = (struct cnuas_reth *)(buf + 13);
	struct cnuas_aeth *aeth = (struct cnuas_aeth *)(buf + 29);
	struct cnuas_deth *deth = (struct cnuas_deth *)(buf + 33);
	struct cnuas_atomic_eth *at = (struct cnuas_atomic_eth *)(buf + 1);

	memset(buf, 0x5a, sizeof(buf));
	/* Out-of-range inputs are cut to their field width. */
	cnuas_bth_build(bth, CNUAS_OP_RC_WRITE_ONLY, true, 2 | 4, 0x8001, 0xffabcdef, true,
			0x7f123456);
	CHECK(!memcmp(bth, want_bth, sizeof(want_bth)), "BTH bytes");
	CHECK(cnuas_bth_opcode(bth) == CNUAS_OP_RC_WRITE_ONLY, "opcode");
	CHECK(cnuas_bth_se(bth), "se");
	CHECK(cnuas_bth_pad(bth) == 2, "pad %u", cnuas_bth_pad(bth));
	CHECK(cnuas_bth_tver(bth) == 0, "tver");
	CHECK(cnuas_bth_pkey(bth) == 0x8001, "pkey");
	CHECK(cnuas_bth_qpn(bth) == 0xabcdef, "qpn %x", cnuas_bth_qpn(bth));
	CHECK(!cnuas_bth_becn(bth), "becn");
	CHECK(cnuas_bth_ackreq(bth), "ackreq");
	CHECK(cnuas_bth_psn(bth) == 0x123456, "psn %x", cnuas_bth_psn(bth));
	CHECK(buf[0] == 0x5a && buf[13] == 0x5a, "BTH wrote outside its 12 bytes");
	buf[5] = 0x40;	/* BECN set by a switch */
	CHECK(cnuas_bth_becn(bth) && cnuas_bth_qpn(bth) == 0xabcdef, "becn");

	cnuas_reth_build(reth, 0x0102030405060708ull, 0xdeadbeef, 65536);
	CHECK(!memcmp(reth, want_reth, sizeof(want_reth)), "RETH bytes");
	CHECK(cnuas_reth_va(reth) == 0x0102030405060708ull, "va");
	CHECK(cnuas_reth_rkey(reth) == 0xdeadbeef, "rkey");
	CHECK(cnuas_reth_len(reth) == 65536, "len");

	cnuas_aeth_build(aeth, CNUAS_AETH_TYPE_NAK | CNUAS_AETH_NAK_INVALID, 0xff000007);
	CHECK(!memcmp(aeth, want_aeth, sizeof(want_aeth)), "AETH bytes");
	CHECK(cnuas_aeth_syndrome(aeth) == 0x61, "syndrome");
	CHECK((cnuas_aeth_syndrome(aeth) & CNUAS_AETH_TYPE_MASK) == CNUAS_AETH_TYPE_NAK, "type");
	CHECK(cnuas_aeth_msn(aeth) == 7, "msn");

	cnuas_deth_build(deth, 0x80010000, 0x12000001);
	CHECK(!memcmp(deth, want_deth, sizeof(want_deth)), "DETH bytes");
	CHECK(cnuas_deth_qkey(deth) == 0x80010000, "qkey");
	CHECK(cnuas_deth_sqpn(deth) == 1, "sqpn");

	cnuas_atomic_eth_build(at, 0x1000, 0x42, 0x1122334455667788ull, 0x99);
	CHECK(buf[1 + 8] == 0 && buf[1 + 11] == 0x42, "AtomicETH rkey bytes");
	CHECK(buf[1 + 12] == 0x11 && buf[1 + 19] == 0x88, "AtomicETH swap bytes");
	CHECK(buf[1 + 27] == 0x99, "AtomicETH compare bytes");
	CHECK(cnuas_atomic_eth_va(at) == 0x1000 && cnuas_atomic_eth_rkey(at) == 0x42 &&
	      cnuas_atomic_eth_swap_add(at) == 0x1122334455667788ull &&
	      cnuas_atomic_eth_compare(at) == 0x99, "AtomicETH fields");
}

static void test_crc32(void)
{
	const char *s = "123456789";

	/* The IEEE 802.3 check value: same CRC as the kernel's crc32_le(). */
	CHECK(~crc32_le(~0u, (const unsigned char *)s, 9) == 0xcbf43926u, "crc32 check value");
}

struct parsed {
	u8 *ip;			/* heap copy from the IP header to the end */
	unsigned int ip_len;	/* up to and with the ICRC */
	unsigned int l3_hdr;	/* IP header length */
	struct cnuas_bth *bth;
};

static int parse(const struct rxe_frame *f, struct parsed *p)
{
	const u8 *b = f->bytes;
	unsigned int type = b[12] << 8 | b[13];

	p->ip_len = f->len - ETH_HLEN;
	p->ip = dup_bytes(b + ETH_HLEN, p->ip_len);
	if (type == 0x0800)
		p->l3_hdr = (p->ip[0] & 0xf) * 4;
	else if (type == 0x86dd)
		p->l3_hdr = 40;
	else
		return -1;
	if ((p->ip[p->l3_hdr + 2] << 8 | p->ip[p->l3_hdr + 3]) != CNUAS_ROCE_UDP_PORT)
		return -1;
	p->bth = (struct cnuas_bth *)(p->ip + p->l3_hdr + UDP_HLEN);
	return 0;
}

static u32 icrc_of(const u8 *ip, unsigned int len)
{
	u8 *copy = dup_bytes(ip, len);
	u32 icrc = 0;
	int err = cnuas_icrc_linear(copy, len, &icrc);

	free(copy);
	return err ? 0xdeadbeefu : icrc;
}

static void test_rxe_frame(const struct rxe_frame *f)
{
	struct parsed p = { 0 };
	const struct cnuas_opcode *op;
	unsigned int udp_len, icrc_off, n;
	u32 icrc, crc, wire;
	u8 *m;

	if (parse(f, &p)) {
		CHECK(0, "%s: not a RoCEv2 frame", f->name);
		goto out;
	}
	CHECK(cnuas_bth_opcode(p.bth) == f->opcode, "%s: opcode", f->name);
	CHECK(cnuas_bth_pkey(p.bth) == f->pkey, "%s: pkey", f->name);
	CHECK(cnuas_bth_qpn(p.bth) == f->qpn, "%s: qpn %u want %u", f->name, cnuas_bth_qpn(p.bth),
	      f->qpn);
	CHECK(cnuas_bth_ackreq(p.bth) == !!f->ackreq, "%s: ackreq", f->name);
	CHECK(cnuas_bth_psn(p.bth) == f->psn, "%s: psn", f->name);
	CHECK(cnuas_bth_pad(p.bth) == f->pad, "%s: pad", f->name);
	op = cnuas_opcode_get(cnuas_bth_opcode(p.bth));
	CHECK(op, "%s: opcode unknown", f->name);
	if (!op)
		goto out;
	if (op->ehs & CNUAS_EH(CNUAS_EH_DETH)) {
		struct cnuas_deth *d = cnuas_eh_ptr(op, p.bth, CNUAS_EH_DETH);

		CHECK(cnuas_deth_qkey(d) == f->qkey, "%s: qkey", f->name);
		CHECK(cnuas_deth_sqpn(d) == f->sqpn, "%s: sqpn", f->name);
	} else {
		CHECK(!cnuas_eh_ptr(op, p.bth, CNUAS_EH_DETH), "%s: no DETH", f->name);
	}

	udp_len = p.ip[p.l3_hdr + 4] << 8 | p.ip[p.l3_hdr + 5];
	CHECK(p.l3_hdr + udp_len == p.ip_len, "%s: UDP length", f->name);
	CHECK(cnuas_payload_len(op, p.bth, udp_len - UDP_HLEN) ==
	      (int)(udp_len - UDP_HLEN - op->hdr_len - CNUAS_ICRC_LEN), "%s: payload", f->name);
	CHECK(cnuas_payload_len(op, p.bth, op->hdr_len + 3) < 0, "%s: short packet", f->name);

	/* The ICRC: ours over the frame equals what rxe sent. */
	icrc_off = p.ip_len - CNUAS_ICRC_LEN;
	wire = get_le32(p.ip + icrc_off);
	CHECK(get_be32(p.ip + icrc_off) == f->icrc, "%s: tshark ICRC", f->name);
	icrc = icrc_of(p.ip, icrc_off);
	CHECK(icrc == wire, "%s: ICRC %08x, on the wire %08x", f->name, icrc, wire);

	/* The same, fed piecewise as from skb fragments. */
	n = cnuas_icrc_begin(p.ip, icrc_off, &crc);
	CHECK(n == p.l3_hdr + UDP_HLEN + CNUAS_BTH_LEN, "%s: begin consumed %u", f->name, n);
	crc = cnuas_icrc_update(crc, p.ip + n, 5);
	crc = cnuas_icrc_update(crc, p.ip + n + 5, icrc_off - n - 5);
	CHECK(cnuas_icrc_final(crc) == wire, "%s: piecewise ICRC", f->name);

	/* Fields routers change are masked: the ICRC stays. */
	m = dup_bytes(p.ip, p.ip_len);
	if (p.l3_hdr == 40) {
		m[0] ^= 0x0f;	/* traffic class */
		m[1] ^= 0xff;	/* traffic class, flow label */
		m[3] ^= 0x5a;	/* flow label */
		m[7] -= 1;	/* hop limit */
	} else {
		m[1] ^= 0x03;	/* ECN */
		m[8] -= 1;	/* TTL */
		m[10] ^= 0x12;	/* header checksum */
	}
	m[p.l3_hdr + 6] ^= 0xff;			/* UDP checksum */
	m[p.l3_hdr + UDP_HLEN + 4] |= 0xc0;		/* FECN, BECN */
	CHECK(icrc_of(m, icrc_off) == wire, "%s: masked fields changed the ICRC", f->name);
	free(m);

	/* Everything else is covered. */
	for (n = 0; n < icrc_off; n += 7) {
		m = dup_bytes(p.ip, p.ip_len);
		m[n] ^= 0x01;
		if (icrc_of(m, icrc_off) == wire) {
			/* Only masked bytes may flip without changing it. */
			int masked = p.l3_hdr == 40 ? (n <= 3 || n == 7) :
				(n == 1 || n == 8 || n == 10 || n == 11);

			masked |= n == p.l3_hdr + 6 || n == p.l3_hdr + 7 ||
				  n == p.l3_hdr + UDP_HLEN + 4;
			CHECK(masked, "%s: byte %u not covered by the ICRC", f->name, n);
		}
		free(m);
	}
out:
	free(p.ip);
}

static enum cnuas_roce_verdict walk(const u8 *frame, unsigned int len, struct cnuas_roce_frame *w)
{
	u8 *copy = dup_bytes(frame, len);
	enum cnuas_roce_verdict v = cnuas_roce_frame_walk(copy, len, w);

	if (v == CNUAS_ROCE_FRAME_OK)
		v = cnuas_roce_frame_lengths(w, len);
	free(copy);
	return v;
}

/* The shared envelope walk (cnuas_roce_frame.h) on a captured frame and on its mutants. */
static void test_frame_walk(const struct rxe_frame *f)
{
	unsigned int ip_hlen = (f->bytes[12] << 8 | f->bytes[13]) == 0x86dd ? 40 :
			       (f->bytes[ETH_HLEN] & 0xf) * 4;
	unsigned int udp = ETH_HLEN + ip_hlen, len;
	struct cnuas_roce_frame w;
	u8 *m;

	CHECK(walk(f->bytes, f->len, &w) == CNUAS_ROCE_FRAME_OK, "%s: walk", f->name);
	CHECK(w.ip == ETH_HLEN && w.ip_hlen == ip_hlen && w.udp == udp && !w.tagged &&
	      w.v6 == (ip_hlen == 40) && w.ip_end == f->len && udp + w.udp_len == f->len,
	      "%s: walk offsets", f->name);
	/* Cut anywhere inside the headers: never OK, never a read outside. */
	for (len = 0; len < udp + UDP_HLEN + CNUAS_BTH_LEN + CNUAS_ICRC_LEN; len++)
		CHECK(walk(f->bytes, len, &w) != CNUAS_ROCE_FRAME_OK, "%s: cut to %u", f->name,
		      len);
	/* Ethernet padding after the IP packet is fine. */
	m = calloc(1, f->len + 8);
	memcpy(m, f->bytes, f->len);
	CHECK(walk(m, f->len + 8, &w) == CNUAS_ROCE_FRAME_OK, "%s: padded", f->name);
	free(m);

	/* One 802.1Q tag. */
	m = malloc(f->len + 4);
	memcpy(m, f->bytes, 12);
	m[12] = 0x81;
	m[13] = 0x00;
	m[14] = 0xa1;	/* PCP 5, VID 0x123 */
	m[15] = 0x23;
	memcpy(m + 16, f->bytes + 12, f->len - 12);
	CHECK(walk(m, f->len + 4, &w) == CNUAS_ROCE_FRAME_OK && w.tagged && w.vlan_tci == 0xa123 &&
	      w.ip == ETH_HLEN + 4 && w.udp == udp + 4, "%s: tagged", f->name);
	m[16] = 0x81;	/* a second tag is not walked into */
	m[17] = 0x00;
	CHECK(walk(m, f->len + 4, &w) == CNUAS_ROCE_FRAME_NOT_IP, "%s: two tags", f->name);
	free(m);

	m = dup_bytes(f->bytes, f->len);
	m[12] = 0x08;
	m[13] = 0x06;
	CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_NOT_IP, "%s: ARP", f->name);
	memcpy(m, f->bytes, f->len);
	m[ETH_HLEN] ^= 0x30;	/* version 4 <-> 7, 6 <-> 5 */
	CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_BAD_IP, "%s: IP version", f->name);
	memcpy(m, f->bytes, f->len);
	m[ETH_HLEN + (ip_hlen == 40 ? 6 : 9)] = 6;
	CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_NOT_UDP, "%s: TCP", f->name);
	memcpy(m, f->bytes, f->len);
	m[udp + 3] ^= 1;
	CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_NOT_ROCE, "%s: port", f->name);
	memcpy(m, f->bytes, f->len);
	m[udp + 4] = 0;
	m[udp + 5] = UDP_HLEN + CNUAS_BTH_LEN + CNUAS_ICRC_LEN - 1;
	CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_BAD_LEN, "%s: UDP length short", f->name);
	memcpy(m, f->bytes, f->len);
	m[udp + 4] = 0xff;
	CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_BAD_LEN, "%s: UDP length long", f->name);
	memcpy(m, f->bytes, f->len);
	m[ETH_HLEN + (ip_hlen == 40 ? 4 : 2)] = 0xff;
	CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_BAD_LEN, "%s: IP length long", f->name);
	if (ip_hlen != 40) {
		memcpy(m, f->bytes, f->len);
		m[ETH_HLEN] = 0x44;
		CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_BAD_IP, "%s: IHL 4", f->name);
		memcpy(m, f->bytes, f->len);
		m[ETH_HLEN + 6] |= 0x20;	/* more fragments */
		CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_FRAGMENT, "%s: MF", f->name);
		memcpy(m, f->bytes, f->len);
		m[ETH_HLEN + 7] = 1;		/* offset 8 */
		CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_FRAGMENT, "%s: offset", f->name);
		memcpy(m, f->bytes, f->len);
		m[ETH_HLEN + 2] = 0;
		m[ETH_HLEN + 3] = ip_hlen + UDP_HLEN - 1;
		CHECK(walk(m, f->len, &w) == CNUAS_ROCE_FRAME_BAD_LEN, "%s: IP length short",
		      f->name);
	}
	free(m);
}

/* Hostile input: never a read outside the buffer (ASan), always -1. */
static void test_icrc_malformed(void)
{
	const struct rxe_frame *f = &rc4_send_last;
	const u8 *ip = f->bytes + ETH_HLEN;
	unsigned int full = f->len - ETH_HLEN, len;
	u32 crc = 0;
	u8 *m;

	for (len = 0; len < 20 + UDP_HLEN + CNUAS_BTH_LEN; len++) {
		m = dup_bytes(ip, len);
		CHECK(cnuas_icrc_begin(m, len, &crc) == -1, "truncated to %u", len);
		free(m);
	}
	m = dup_bytes(ip, full);
	m[0] = 0x55;				/* version 5 */
	CHECK(cnuas_icrc_begin(m, full, &crc) == -1, "IP version 5");
	m[0] = 0x44;				/* IHL 4 */
	CHECK(cnuas_icrc_begin(m, full, &crc) == -1, "IHL 4");
	m[0] = 0x45;
	m[9] = 6;				/* TCP */
	CHECK(cnuas_icrc_begin(m, full, &crc) == -1, "not UDP");
	free(m);
	m = dup_bytes(ip, 50);
	m[0] = 0x4f;				/* 60-byte header, 50 bytes there */
	CHECK(cnuas_icrc_begin(m, 50, &crc) == -1, "IHL beyond the buffer");
	free(m);

	/* Random garbage of every small length. */
	srand(1);
	for (len = 0; len < 20000; len++) {
		unsigned int l = rand() % 128, i;

		m = malloc(l ? l : 1);
		for (i = 0; i < l; i++)
			m[i] = rand();
		if (l && rand() % 2)
			m[0] = rand() % 2 ? 0x45 : 0x60;
		if (cnuas_icrc_linear(m, l, &crc) == 0)
			CHECK(l >= 20 + UDP_HLEN + CNUAS_BTH_LEN, "accepted %u bytes", l);
		free(m);
	}
}

/* ---- native InfiniBand framing ---- */

/* A UD SEND ONLY of @plen payload bytes behind the LRH (and GRH). */
static unsigned int ib_packet(u8 *buf, const struct cnuas_ib_hdrs *h,
			      unsigned int plen)
{
	unsigned int hlen = cnuas_ib_hdrs_len(h->grh);
	const struct cnuas_opcode *op = cnuas_opcode_get(CNUAS_OP_UD_SEND_ONLY);
	u8 *bth = buf + hlen;
	unsigned int pad = -plen & 3, tlen = op->hdr_len + plen + pad, i;

	cnuas_bth_build((struct cnuas_bth *)bth, CNUAS_OP_UD_SEND_ONLY, false,
			pad, 0xffff, 0x000123, false, 0x00abcd);
	bth[4] |= 0xc0;		/* FECN, BECN: variant, masked */
	cnuas_deth_build((struct cnuas_deth *)(bth + CNUAS_BTH_LEN),
			 0x11111111, 0x42);
	for (i = 0; i < plen; i++)
		bth[op->hdr_len + i] = (u8)(i * 7 + 1);
	memset(bth + op->hdr_len + plen, 0, pad);
	cnuas_ib_hdrs_build(buf, h, tlen);
	return hlen + tlen;	/* up to the ICRC */
}

/* IBA 7.8.1, applied by hand to a copy: the ICRC with zlib's CRC-32. */
static u32 ib_icrc_ref(const u8 *pkt, unsigned int len, bool global)
{
	u8 *m = dup_bytes(pkt, len);
	unsigned int bth = global ? 48 : 8;
	u32 crc;

	if (global) {
		memset(m, 0xff, 8);		/* the whole LRH */
		m[8] |= 0x0f;			/* TClass 7..4 */
		m[9] = 0xff;			/* TClass 3..0, FlowLabel */
		m[10] = 0xff;
		m[11] = 0xff;
		m[15] = 0xff;			/* HopLmt */
	} else {
		m[0] |= 0xf0;			/* VL */
	}
	m[bth + 4] = 0xff;			/* BTH: FECN, BECN, resv6a */
	crc = (u32)crc32(0L, m, len);
	free(m);
	return crc;
}

/* CRC-16 0x100B, bit by bit, LSB first (reflected), init and xorout ones. */
static unsigned int vcrc_ref(const u8 *p, unsigned int len)
{
	unsigned int crc = 0xffff, i, b;

	for (i = 0; i < len; i++) {
		crc ^= p[i];
		for (b = 0; b < 8; b++)
			crc = crc & 1 ? (crc >> 1) ^ 0xd008 : crc >> 1;
	}
	return crc ^ 0xffff;
}

static void test_ib_frames(void)
{
	struct cnuas_ib_hdrs h = {
		.vl = 0, .sl = 5, .dlid = 0x0012, .slid = 0x0034,
	}, g, r;
	u8 buf[512], *c;
	unsigned int n, hlen, len, i, plen;
	struct cnuas_vcrc_table tab;
	u32 icrc = 0;

	cnuas_vcrc_table_init(&tab);
	for (plen = 0; plen < 9; plen++) {
		/* Local (LNH 2): round trip, PktLen, ICRC. */
		n = ib_packet(buf, &h, plen);
		CHECK(n % 4 == 0, "local packet of %u bytes", n);
		CHECK(cnuas_lrh_lnh(buf) == CNUAS_LNH_IBA_LOCAL, "LNH");
		CHECK(cnuas_ib_icrc(buf, n, &icrc) == 0, "icrc");
		CHECK(icrc == ib_icrc_ref(buf, n, false),
		      "local ICRC 0x%08x, by hand 0x%08x", icrc,
		      ib_icrc_ref(buf, n, false));
		buf[n] = (u8)icrc;
		buf[n + 1] = (u8)(icrc >> 8);
		buf[n + 2] = (u8)(icrc >> 16);
		buf[n + 3] = (u8)(icrc >> 24);
		len = n + 4;
		CHECK(cnuas_lrh_pktlen(buf) * 4 == len, "PktLen %u words, %u bytes",
		      cnuas_lrh_pktlen(buf), len);
		c = dup_bytes(buf, len);
		memset(&r, 0, sizeof(r));
		CHECK(cnuas_ib_hdrs_parse(c, len, &r, &hlen) == CNUAS_IB_FRAME_OK,
		      "local parse");
		CHECK(hlen == 8 && !r.grh && r.vl == 0 && r.sl == 5 &&
		      r.dlid == 0x12 && r.slid == 0x34, "local fields");
		/* VL is outside the ICRC: VL15 changes nothing. */
		cnuas_lrh_set_vl(c, CNUAS_VL15);
		CHECK(cnuas_ib_icrc(c, n, &icrc) == 0 && icrc == get_le32(c + n),
		      "VL masked");
		/* FECN/BECN too; the SLID is covered. */
		c[8 + 4] ^= 0x40;
		CHECK(cnuas_ib_icrc(c, n, &icrc) == 0 && icrc == get_le32(c + n),
		      "BECN masked");
		c[7] ^= 1;
		CHECK(cnuas_ib_icrc(c, n, &icrc) == 0 && icrc != get_le32(c + n),
		      "SLID covered");
		free(c);

		/* The VCRC: LRH through ICRC, least significant byte first. */
		c = malloc(len + 2);
		memcpy(c, buf, len);
		cnuas_vcrc_put(&tab, c, len);
		CHECK((unsigned int)(c[len] | c[len + 1] << 8) == vcrc_ref(c, len),
		      "VCRC 0x%04x, bitwise 0x%04x", c[len] | c[len + 1] << 8,
		      vcrc_ref(c, len));
		CHECK(cnuas_vcrc_ok(&tab, c, len + 2), "VCRC ok");
		for (i = 0; i < (len + 2) * 8; i += 13) {
			c[i / 8] ^= (u8)(1 << (i % 8));
			CHECK(!cnuas_vcrc_ok(&tab, c, len + 2), "bit %u flipped", i);
			c[i / 8] ^= (u8)(1 << (i % 8));
		}
		CHECK(!cnuas_vcrc_ok(&tab, c, 9), "too short for a VCRC");
		free(c);

		/* Global (LNH 3) */
		g = h;
		g.grh = true;
		g.tclass = 0xa5;
		g.flow_label = 0xbcdef;
		g.hop_limit = 7;
		for (i = 0; i < 16; i++) {
			g.sgid[i] = (u8)(0xf0 + i);
			g.dgid[i] = (u8)(0x10 + i);
		}
		n = ib_packet(buf, &g, plen);
		CHECK(cnuas_ib_icrc(buf, n, &icrc) == 0, "icrc");
		CHECK(icrc == ib_icrc_ref(buf, n, true),
		      "global ICRC 0x%08x, by hand 0x%08x", icrc,
		      ib_icrc_ref(buf, n, true));
		buf[n] = (u8)icrc;
		buf[n + 1] = (u8)(icrc >> 8);
		buf[n + 2] = (u8)(icrc >> 16);
		buf[n + 3] = (u8)(icrc >> 24);
		len = n + 4;
		CHECK(buf[8] >> 4 == 6 && buf[14] == 0x1b, "IPVer, NxtHdr");
		CHECK((unsigned int)(buf[12] << 8 | buf[13]) == len - 48, "PayLen");
		c = dup_bytes(buf, len);
		memset(&r, 0, sizeof(r));
		CHECK(cnuas_ib_hdrs_parse(c, len, &r, &hlen) == CNUAS_IB_FRAME_OK,
		      "global parse");
		CHECK(hlen == 48 && r.grh && r.tclass == 0xa5 &&
		      r.flow_label == 0xbcdef && r.hop_limit == 7 &&
		      !memcmp(r.sgid, g.sgid, 16) && !memcmp(r.dgid, g.dgid, 16),
		      "global fields");
		/* The whole LRH, TClass, FlowLabel and HopLmt are masked. */
		c[1] ^= 0xf0;	/* SL */
		c[3] ^= 0x01;	/* DLID */
		c[9] ^= 0x5a;
		c[15] ^= 0x3c;
		CHECK(cnuas_ib_icrc(c, n, &icrc) == 0 && icrc == get_le32(c + n),
		      "global masks");
		c[8 + 24] ^= 1;	/* SGID is covered */
		CHECK(cnuas_ib_icrc(c, n, &icrc) == 0 && icrc != get_le32(c + n),
		      "SGID covered");
		free(c);
	}

	/* The walk's refusals. */
	n = ib_packet(buf, &h, 4);
	len = n + 4;
	c = dup_bytes(buf, len);
	CHECK(cnuas_ib_hdrs_parse(c, len - 4, &r, &hlen) == CNUAS_IB_FRAME_PKTLEN,
	      "a word short");
	CHECK(cnuas_ib_hdrs_parse(c, len - 1, &r, &hlen) == CNUAS_IB_FRAME_PKTLEN,
	      "a byte short");
	c[5]++;
	CHECK(cnuas_ib_hdrs_parse(c, len, &r, &hlen) == CNUAS_IB_FRAME_PKTLEN,
	      "PktLen one more");
	c[5]--;
	c[0] |= 1;
	CHECK(cnuas_ib_hdrs_parse(c, len, &r, &hlen) == CNUAS_IB_FRAME_LVER,
	      "LVer 1");
	c[0] &= 0xf0;
	for (i = 0; i < 2; i++) {
		c[1] = (u8)((c[1] & ~3) | i);
		CHECK(cnuas_ib_hdrs_parse(c, len, &r, &hlen) == CNUAS_IB_FRAME_LNH,
		      "LNH %u", i);
	}
	free(c);
	/* PktLen matching a frame too short for LRH, BTH and ICRC */
	memset(buf, 0, 16);
	cnuas_lrh_build(buf, 0, 0, CNUAS_LNH_IBA_LOCAL, 1, 2, 4);
	c = dup_bytes(buf, 16);
	CHECK(cnuas_ib_hdrs_parse(c, 16, &r, &hlen) == CNUAS_IB_FRAME_SHORT,
	      "16 bytes");
	CHECK(cnuas_ib_hdrs_parse(c, 5, &r, &hlen) == CNUAS_IB_FRAME_SHORT,
	      "5 bytes");
	free(c);
	n = ib_packet(buf, &g, 4);
	len = n + 4;
	c = dup_bytes(buf, len);
	c[8] = (u8)(4 << 4 | (c[8] & 0x0f));
	CHECK(cnuas_ib_hdrs_parse(c, len, &r, &hlen) == CNUAS_IB_FRAME_GRH,
	      "IPVer 4");
	c[8] = (u8)(6 << 4 | (c[8] & 0x0f));
	c[14] = 17;
	CHECK(cnuas_ib_hdrs_parse(c, len, &r, &hlen) == CNUAS_IB_FRAME_GRH,
	      "NxtHdr UDP");
	c[14] = 0x1b;
	c[13]++;
	CHECK(cnuas_ib_hdrs_parse(c, len, &r, &hlen) == CNUAS_IB_FRAME_GRH,
	      "PayLen");
	free(c);

	/* VL15 is QP0's and QP0 is on VL15 only. */
	CHECK(cnuas_ib_vl_ok(15, 0) && cnuas_ib_vl_ok(0, 1) &&
	      cnuas_ib_vl_ok(0, 0x123) && !cnuas_ib_vl_ok(0, 0) &&
	      !cnuas_ib_vl_ok(15, 1) && !cnuas_ib_vl_ok(3, 0), "VL15 rules");
	/* DLIDs within the LMC */
	CHECK(cnuas_ib_lid_ours(4, 4, 0) && !cnuas_ib_lid_ours(5, 4, 0) &&
	      cnuas_ib_lid_ours(7, 4, 2) && !cnuas_ib_lid_ours(8, 4, 2) &&
	      !cnuas_ib_lid_ours(0, 0, 0) && !cnuas_ib_lid_ours(0xc001, 0xc001, 0) &&
	      !cnuas_ib_lid_ours(0xffff, 4, 0), "LIDs within the LMC");

	/* Random bytes: nothing read past the end (ASan), no crash. */
	for (i = 0; i < 20000; i++) {
		unsigned int l = (unsigned int)rand() % 80, j;
		u8 *m = malloc(l ? l : 1);

		for (j = 0; j < l; j++)
			m[j] = (u8)rand();
		if (l >= 6)
			m[5] = (u8)(l / 4);
		if (l)
			m[0] &= 0xf0;
		if (cnuas_ib_hdrs_parse(m, l, &r, &hlen) == CNUAS_IB_FRAME_OK)
			CHECK(l >= hlen + CNUAS_BTH_LEN + CNUAS_ICRC_LEN,
			      "accepted %u bytes", l);
		cnuas_ib_icrc(m, l, &icrc);
		free(m);
	}
}

/*
 * The VCRC of every length up to a few folds and of the largest frames,
 * at every alignment, against the bitwise reference: by the tables and,
 * where the CPU has it, by PCLMULQDQ folding.
 */
static void test_vcrc_lengths(void)
{
	static struct cnuas_vcrc_table tab, tables;
	static u8 buf[9216 + 16];
	unsigned int len, off, i, want, bad = 0;

	cnuas_vcrc_table_init(&tab);
	tables = tab;
#ifdef CNUAS_VCRC_CLMUL
	tables.clmul = 0;
	printf("VCRC by PCLMULQDQ: %s\n", tab.clmul ? "yes" : "no (tables only)");
#endif
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (u8)(i * 2654435761u >> 13);
	for (len = 0; len <= 9216; len += len < 400 ? 1 : 97) {
		for (off = 0; off < 16; off += len < 400 ? 1 : 5) {
			want = vcrc_ref(buf + off, len);
			if (cnuas_vcrc(&tab, buf + off, len) != want ||
			    cnuas_vcrc(&tables, buf + off, len) != want)
				bad++;
		}
	}
	CHECK(!bad, "%u lengths and alignments with a wrong VCRC", bad);
}

int main(void)
{
	unsigned int i;

	test_layout();
	test_opcode_rows();
	test_opcode_table();
	test_packing();
	test_crc32();
	for (i = 0; i < ARRAY_SIZE(rxe_frames); i++) {
		test_rxe_frame(rxe_frames[i]);
		test_frame_walk(rxe_frames[i]);
	}
	test_icrc_malformed();
	test_ib_frames();
	test_vcrc_lengths();

	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
