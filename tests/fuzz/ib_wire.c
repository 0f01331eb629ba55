// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: cnuas_ib's RoCEv2 codec (src/cnuas_ib/wire.h, opcode.c,
 * icrc.c) as plain C, on arbitrary Ethernet frames. The checks follow
 * cnuas_ib_parse() (net.c): VLAN, IPv4/IPv6, UDP to 4791, BTH version,
 * opcode table, payload and pad length, P_Key, ICRC; then every header
 * accessor of the opcode's row is read. The frame is a heap copy of
 * exactly its length, so any read past it is an ASan error.
 *
 * Properties checked (abort on failure): the ICRC computed in two parts
 * equals the linear one; a frame whose ICRC field is set to the computed
 * value verifies; BTH/RETH/AETH/DETH fields read back as built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define ETH_HLEN 14
#define VLAN_HLEN 4
#define UDP_HLEN 8

static u32 rd_be16(const u8 *p) { return (u32)p[0] << 8 | p[1]; }
static u32 rd_le32(const u8 *p) { return p[0] | p[1] << 8 | p[2] << 16 | (u32)p[3] << 24; }

static volatile u64 sink;

/* Touch every header the opcode says the packet has. */
static void read_headers(const struct cnuas_opcode *op, struct cnuas_bth *bth)
{
	const struct cnuas_reth *reth = cnuas_eh_ptr(op, bth, CNUAS_EH_RETH);
	const struct cnuas_deth *deth = cnuas_eh_ptr(op, bth, CNUAS_EH_DETH);
	const struct cnuas_aeth *aeth = cnuas_eh_ptr(op, bth, CNUAS_EH_AETH);
	const struct cnuas_atomic_eth *ath = cnuas_eh_ptr(op, bth, CNUAS_EH_ATOMIC_ETH);
	const struct cnuas_atomic_ack *ack = cnuas_eh_ptr(op, bth, CNUAS_EH_ATOMIC_ACK);
	const struct cnuas_immdt *imm = cnuas_eh_ptr(op, bth, CNUAS_EH_IMMDT);
	const struct cnuas_ieth *ieth = cnuas_eh_ptr(op, bth, CNUAS_EH_IETH);

	sink += cnuas_bth_se(bth) + cnuas_bth_qpn(bth) + cnuas_bth_psn(bth) +
		cnuas_bth_ackreq(bth) + cnuas_bth_becn(bth);
	if (reth)
		sink += cnuas_reth_va(reth) + cnuas_reth_rkey(reth) + cnuas_reth_len(reth);
	if (deth)
		sink += cnuas_deth_qkey(deth) + cnuas_deth_sqpn(deth);
	if (aeth)
		sink += cnuas_aeth_syndrome(aeth) + cnuas_aeth_msn(aeth);
	if (ath)
		sink += cnuas_atomic_eth_va(ath) + cnuas_atomic_eth_rkey(ath) +
			cnuas_atomic_eth_swap_add(ath) + cnuas_atomic_eth_compare(ath);
	if (ack)
		sink += cnuas_atomic_ack_orig(ack);
	if (imm)
		sink += imm->imm;
	if (ieth)
		sink += cnuas_ieth_rkey(ieth);
}

/* Build headers from the fuzzed fields and read them back. */
static void build_read_back(const struct cnuas_bth *in)
{
	struct cnuas_bth b;
	struct cnuas_reth r;
	struct cnuas_aeth a;
	struct cnuas_deth d;
	u32 qpn = cnuas_bth_qpn(in), psn = cnuas_bth_psn(in);
	u64 va = (u64)qpn << 40 | psn;

	cnuas_bth_build(&b, cnuas_bth_opcode(in), cnuas_bth_se(in), cnuas_bth_pad(in),
			cnuas_bth_pkey(in), qpn, cnuas_bth_ackreq(in), psn);
	if (cnuas_bth_opcode(&b) != cnuas_bth_opcode(in) || cnuas_bth_se(&b) != cnuas_bth_se(in) ||
	    cnuas_bth_pad(&b) != cnuas_bth_pad(in) || cnuas_bth_pkey(&b) != cnuas_bth_pkey(in) ||
	    cnuas_bth_qpn(&b) != qpn || cnuas_bth_psn(&b) != psn ||
	    cnuas_bth_ackreq(&b) != cnuas_bth_ackreq(in) || cnuas_bth_tver(&b))
		abort();
	cnuas_reth_build(&r, va, psn, qpn);
	if (cnuas_reth_va(&r) != va || cnuas_reth_rkey(&r) != psn || cnuas_reth_len(&r) != qpn)
		abort();
	cnuas_aeth_build(&a, in->opcode, psn);
	if (cnuas_aeth_syndrome(&a) != in->opcode || cnuas_aeth_msn(&a) != psn)
		abort();
	cnuas_deth_build(&d, (u32)va, qpn);
	if (cnuas_deth_qkey(&d) != (u32)va || cnuas_deth_sqpn(&d) != qpn)
		abort();
}

/* IP header at ip, ulen bytes of UDP at ip + l3: the whole ICRC check. */
static void check_icrc(u8 *ip, u32 l3, u32 ulen, u32 split)
{
	u32 n = l3 + ulen - CNUAS_ICRC_LEN, icrc, crc, icrc2;
	u8 *field = ip + n;
	int hdr;

	if (cnuas_icrc_linear(ip, n, &icrc))
		return;
	hdr = cnuas_icrc_begin(ip, n, &crc);
	if (hdr < 0 || (u32)hdr > n)
		abort();
	split = hdr + split % (n - hdr + 1);
	crc = cnuas_icrc_update(crc, ip + hdr, split - hdr);
	crc = cnuas_icrc_update(crc, ip + split, n - split);
	if (cnuas_icrc_final(crc) != icrc)
		abort();
	sink += icrc == rd_le32(field);
	/* with the right ICRC in place the check must pass */
	field[0] = (u8)icrc;
	field[1] = (u8)(icrc >> 8);
	field[2] = (u8)(icrc >> 16);
	field[3] = (u8)(icrc >> 24);
	if (cnuas_icrc_linear(ip, n, &icrc2) || icrc2 != icrc || rd_le32(field) != icrc)
		abort();
}

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);
int LLVMFuzzerTestOneInput(const u8 *data, size_t size)
{
	const struct cnuas_opcode *op;
	u32 off = ETH_HLEN, len = (u32)size, l3, iplen, ulen, blen, proto;
	struct cnuas_bth *bth;
	u8 *d, *udp;
	int plen;

	if (size > 65536)
		return 0;
	d = malloc(size ? size : 1);
	if (!d)
		abort();
	memcpy(d, data, size);
	/* the ICRC primitive on its own, on whatever follows the Ethernet header */
	if (len > ETH_HLEN) {
		u32 crc, icrc;

		if (cnuas_icrc_begin(d + ETH_HLEN, len - ETH_HLEN, &crc) >= 0)
			sink += crc;
		if (!cnuas_icrc_linear(d + ETH_HLEN, len - ETH_HLEN, &icrc))
			sink += icrc;
	}
	if (len < ETH_HLEN)
		goto out;
	proto = rd_be16(d + 12);
	if (proto == 0x8100) {
		if (len < ETH_HLEN + VLAN_HLEN)
			goto out;
		proto = rd_be16(d + ETH_HLEN + 2);
		off += VLAN_HLEN;
	}
	if (proto == 0x0800) {
		if (len - off < 20 || d[off] >> 4 != 4 || (d[off] & 15) < 5)
			goto out;
		l3 = (d[off] & 15) * 4;
		iplen = rd_be16(d + off + 2);
		if (iplen < l3 || iplen > len - off || d[off + 9] != 17)
			goto out;
	} else if (proto == 0x86dd) {
		if (len - off < 40 || d[off] >> 4 != 6 || d[off + 6] != 17)
			goto out;
		l3 = 40;
		iplen = l3 + rd_be16(d + off + 4);
		if (iplen > len - off)
			goto out;
	} else {
		goto out;
	}
	if (iplen - l3 < UDP_HLEN)
		goto out;
	udp = d + off + l3;
	ulen = rd_be16(udp + 4);
	if (ulen < UDP_HLEN + CNUAS_BTH_LEN + CNUAS_ICRC_LEN || ulen > iplen - l3 ||
	    rd_be16(udp + 2) != CNUAS_ROCE_UDP_PORT)
		goto out;
	bth = (struct cnuas_bth *)(udp + UDP_HLEN);
	blen = ulen - UDP_HLEN;
	build_read_back(bth);
	if (cnuas_bth_tver(bth))
		goto out;
	op = cnuas_opcode_get(cnuas_bth_opcode(bth));
	if (!op)
		goto out;
	if (op->hdr_len < CNUAS_BTH_LEN)
		abort();
	plen = cnuas_payload_len(op, bth, blen);
	if (plen < 0)
		goto out;
	if (op->hdr_len + (u32)plen + cnuas_bth_pad(bth) + CNUAS_ICRC_LEN != blen)
		abort();
	if (!((!(op->flags & CNUAS_OPF_PAYLOAD) && (plen || cnuas_bth_pad(bth))) ||
	      ((plen + cnuas_bth_pad(bth)) & 3)) &&
	    (cnuas_bth_pkey(bth) & 0x7fff) == 0x7fff) {
		/* accepted: read the headers and the payload */
		const u8 *pay = (const u8 *)bth + op->hdr_len;

		read_headers(op, bth);
		for (int i = 0; i < plen; i++)
			sink += pay[i];
	}
	check_icrc(d + off, l3, ulen, len > 0 ? d[len - 1] * 131u : 0);
out:
	free(d);
	return 0;
}
