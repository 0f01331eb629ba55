/* SPDX-License-Identifier: (GPL-2.0-or-later OR MIT) */
/*
 * Native InfiniBand link facts shared by everything that reads or writes
 * IB-mode frames: cnuas_net and cnuas_ib in the guest, the switch and the
 * test tools. Plain C for the kernel and for user space alike.
 *
 * An IB-mode frame, one per message on the switch socket (no Ethernet):
 *   LRH (8 bytes), GRH (40, only when LRH.LNH is CNUAS_LNH_IBA_GLOBAL),
 *   BTH and the rest as over RoCEv2, pad, ICRC (4), VCRC (2).
 * LRH.PktLen counts 4-byte words from the LRH through the ICRC; the VCRC
 * is outside it (IBA 7.7.8).
 *
 * The ICRC (IBA 7.8.1) is the same CRC-32 as over RoCEv2 over
 *   local packets (LNH 2): the LRH with VL set to ones, the BTH with its
 *     FECN/BECN/resv6a byte set to ones, and the rest up to the ICRC;
 *   global packets (LNH 3): 64 bits of ones for the LRH, the GRH with
 *     TClass, FlowLabel and HopLmt set to ones, the masked BTH, the rest.
 * cnuas_ib_icrc_hdr() builds the masked start.
 *
 * The VCRC (IBA 7.8.2) is a CRC-16, polynomial 0x100B (0xD008 reflected),
 * initial value 0xFFFF, final XOR 0xFFFF, over the LRH through the ICRC.
 * It protects one hop: the switch checks and rewrites it, since it may
 * change the VL. Like the ICRC it goes on the wire least significant byte
 * first. Neither the kernel's crc16 (0x8005) nor crc-itu-t (0x1021) has
 * this polynomial, hence the tables below.
 */
#ifndef CNUAS_IB_LINK_H
#define CNUAS_IB_LINK_H

#ifdef __KERNEL__
#include <linux/string.h>
#include <linux/types.h>
#else
#include <stdint.h>
#include <string.h>
#endif
/* CNUAS_BTH_LEN, CNUAS_ICRC_LEN */
#include "cnuas_roce.h"

#define CNUAS_LRH_LEN			8
#define CNUAS_GRH_LEN			40
#define CNUAS_VCRC_LEN			2
/* Largest frame the switch socket and cnuas-vnic carry (MAX_FRAME). */
#define CNUAS_IB_MAX_FRAME		9216

/* LRH.LNH: what follows the LRH. */
#define CNUAS_LNH_RAW			0
#define CNUAS_LNH_IP			1
#define CNUAS_LNH_IBA_LOCAL		2	/* BTH */
#define CNUAS_LNH_IBA_GLOBAL		3	/* GRH, then BTH */

#define CNUAS_LRH_LVER			0
#define CNUAS_VL15			15	/* subnet management only */
#define CNUAS_GRH_NXTHDR_BTH		0x1b

/* LIDs (IBA 4.1.3) */
#define CNUAS_LID_RESERVED		0x0000
#define CNUAS_LID_UCAST_MAX		0xbfff
#define CNUAS_LID_MCAST_MIN		0xc000
#define CNUAS_LID_MCAST_MAX		0xfffe
#define CNUAS_LID_PERMISSIVE		0xffff

/* ---- LRH fields; @lrh points at its 8 bytes in network order ---- */
static inline unsigned int cnuas_lrh_vl(const unsigned char *lrh)
{
	return lrh[0] >> 4;
}

static inline unsigned int cnuas_lrh_lver(const unsigned char *lrh)
{
	return lrh[0] & 0x0f;
}

static inline unsigned int cnuas_lrh_sl(const unsigned char *lrh)
{
	return lrh[1] >> 4;
}

static inline unsigned int cnuas_lrh_lnh(const unsigned char *lrh)
{
	return lrh[1] & 0x03;
}

static inline unsigned int cnuas_lrh_dlid(const unsigned char *lrh)
{
	return (unsigned int)lrh[2] << 8 | lrh[3];
}

/* In 4-byte words, LRH through ICRC. */
static inline unsigned int cnuas_lrh_pktlen(const unsigned char *lrh)
{
	return ((unsigned int)lrh[4] & 0x07) << 8 | lrh[5];
}

static inline unsigned int cnuas_lrh_slid(const unsigned char *lrh)
{
	return (unsigned int)lrh[6] << 8 | lrh[7];
}

static inline void cnuas_lrh_set_vl(unsigned char *lrh, unsigned int vl)
{
	lrh[0] = (unsigned char)((vl & 0x0f) << 4 | (lrh[0] & 0x0f));
}

/* @pktlen in 4-byte words. */
static inline void cnuas_lrh_build(unsigned char *lrh, unsigned int vl,
				   unsigned int sl, unsigned int lnh,
				   unsigned int dlid, unsigned int slid,
				   unsigned int pktlen)
{
	lrh[0] = (unsigned char)((vl & 0x0f) << 4 | CNUAS_LRH_LVER);
	lrh[1] = (unsigned char)((sl & 0x0f) << 4 | (lnh & 0x03));
	lrh[2] = (unsigned char)(dlid >> 8);
	lrh[3] = (unsigned char)dlid;
	lrh[4] = (unsigned char)((pktlen >> 8) & 0x07);
	lrh[5] = (unsigned char)pktlen;
	lrh[6] = (unsigned char)(slid >> 8);
	lrh[7] = (unsigned char)slid;
}

static inline int cnuas_lid_is_mcast(unsigned int lid)
{
	return lid >= CNUAS_LID_MCAST_MIN && lid <= CNUAS_LID_MCAST_MAX;
}

/* ---- ICRC ---- */
/* Longest masked start: LRH (or its ones), GRH, BTH. */
#define CNUAS_IB_ICRC_HDR_MAX	(CNUAS_LRH_LEN + CNUAS_GRH_LEN + CNUAS_BTH_LEN)

/*
 * The start of the ICRC's input for the IB-mode frame at @frame (@len
 * bytes, from the LRH): writes the LRH, the GRH if any and the BTH with
 * their variant fields masked into @hdr (CNUAS_IB_ICRC_HDR_MAX bytes).
 * Returns how many bytes of @frame (and of @hdr) that is; the CRC goes on
 * over @frame from there to the ICRC. -1: not an IBA transport packet or
 * shorter than its headers.
 */
static inline int cnuas_ib_icrc_hdr(unsigned char *hdr, const void *frame,
				    unsigned int len)
{
	const unsigned char *p = (const unsigned char *)frame;
	unsigned int n;

	if (len < CNUAS_LRH_LEN)
		return -1;
	switch (cnuas_lrh_lnh(p)) {
	case CNUAS_LNH_IBA_LOCAL:
		n = CNUAS_LRH_LEN + CNUAS_BTH_LEN;
		break;
	case CNUAS_LNH_IBA_GLOBAL:
		n = CNUAS_LRH_LEN + CNUAS_GRH_LEN + CNUAS_BTH_LEN;
		break;
	default:
		return -1;
	}
	if (len < n)
		return -1;

	memcpy(hdr, p, n);
	if (n == CNUAS_LRH_LEN + CNUAS_BTH_LEN) {
		hdr[0] |= 0xf0;				/* VL */
	} else {
		unsigned char *grh = hdr + CNUAS_LRH_LEN;

		memset(hdr, 0xff, CNUAS_LRH_LEN);	/* the whole LRH */
		grh[0] |= 0x0f;				/* TClass, high nibble */
		grh[1] = 0xff;				/* TClass, FlowLabel */
		grh[2] = 0xff;
		grh[3] = 0xff;
		grh[7] = 0xff;				/* HopLmt */
	}
	hdr[n - CNUAS_BTH_LEN + 4] = 0xff;	/* BTH: FECN, BECN, resv6a */
	return n;
}

/* ---- VCRC ---- */
#define CNUAS_VCRC_POLY_REFLECTED	0xd008
#define CNUAS_VCRC_INIT			0xffff
#define CNUAS_VCRC_XOROUT		0xffff

/*
 * Every frame's bytes go through the VCRC at each hop (sender, switch,
 * receiver), so it is computed eight bytes at a time: t[k][i] is the CRC
 * of byte i followed by k zero bytes. One table a byte ran at a quarter
 * of the speed (456 against 1739 MB/s over 4 KiB on the build host).
 *
 * In user space on x86-64 (the device model, the switch) a CPU with
 * PCLMULQDQ folds 16 bytes per carry-less multiply instead, as Intel's
 * "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ" shows for
 * any polynomial: the bits so far, X, are carried over the next 128 bits
 * as X * x^128 mod P in two multiplies by constants x^n mod P that
 * cnuas_vcrc_table_init() computes, and the last 16 bytes go through the
 * tables. No library has this polynomial (zlib and the kernel have none).
 */
#if !defined(__KERNEL__) && defined(__x86_64__) && defined(__GNUC__)
#define CNUAS_VCRC_CLMUL 1
#include <immintrin.h>
#endif

struct cnuas_vcrc_table {
	unsigned short t[8][256];
#ifdef CNUAS_VCRC_CLMUL
	int clmul;			/* the CPU has PCLMULQDQ */
	unsigned long long k128[2];	/* fold 128 bits: x^191, x^127 mod P */
	unsigned long long k512[2];	/* fold 512 bits: x^575, x^511 mod P */
#endif
};

#ifdef CNUAS_VCRC_CLMUL
/*
 * x^@n mod P, bit-reversed into 64 bits (degree d at bit 63 - d) as the
 * folds multiply it: a product of two such values comes out one degree
 * short, which the constants' n (one less than the fold's) makes up for.
 */
static inline unsigned long long cnuas_vcrc_xpow(unsigned int n)
{
	unsigned int r = 1, d;
	unsigned long long k = 0;

	while (n--) {
		r <<= 1;
		if (r & 0x10000)
			r ^= 0x1100b;
	}
	for (d = 0; d < 16; d++)
		if (r & 1u << d)
			k |= 1ull << (63 - d);
	return k;
}
#endif

/* Fill the tables once. */
static inline void cnuas_vcrc_table_init(struct cnuas_vcrc_table *tab)
{
	unsigned int i, k, bit, crc;

	for (i = 0; i < 256; i++) {
		crc = i;
		for (bit = 0; bit < 8; bit++)
			crc = crc & 1 ? crc >> 1 ^ CNUAS_VCRC_POLY_REFLECTED :
					crc >> 1;
		tab->t[0][i] = (unsigned short)crc;
	}
	for (k = 1; k < 8; k++)
		for (i = 0; i < 256; i++)
			tab->t[k][i] = (unsigned short)(tab->t[k - 1][i] >> 8 ^
				tab->t[0][tab->t[k - 1][i] & 0xff]);
#ifdef CNUAS_VCRC_CLMUL
	__builtin_cpu_init();
	tab->clmul = !!__builtin_cpu_supports("pclmul");
	tab->k128[0] = cnuas_vcrc_xpow(128 + 63);
	tab->k128[1] = cnuas_vcrc_xpow(128 - 1);
	tab->k512[0] = cnuas_vcrc_xpow(512 + 63);
	tab->k512[1] = cnuas_vcrc_xpow(512 - 1);
#endif
}

/* The CRC register @crc carried over @len more bytes at @p (no final XOR). */
static inline unsigned int cnuas_vcrc_update(const struct cnuas_vcrc_table *tab,
					     unsigned int crc,
					     const unsigned char *p,
					     unsigned int len)
{
	unsigned int x;

	for (; len >= 8; p += 8, len -= 8) {
		x = crc ^ (p[0] | (unsigned int)p[1] << 8);
		crc = tab->t[7][x & 0xff] ^ tab->t[6][x >> 8] ^
		      tab->t[5][p[2]] ^ tab->t[4][p[3]] ^ tab->t[3][p[4]] ^
		      tab->t[2][p[5]] ^ tab->t[1][p[6]] ^ tab->t[0][p[7]];
	}
	while (len--)
		crc = crc >> 8 ^ tab->t[0][(crc ^ *p++) & 0xff];
	return crc;
}

#ifdef CNUAS_VCRC_CLMUL
/* X * x^128 (or x^512) mod P, congruent, in 128 bits: k holds the fold's constants. */
__attribute__((target("pclmul")))
static inline __m128i cnuas_vcrc_fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

/* The register after @len >= 64 bytes at @p, starting from CNUAS_VCRC_INIT. */
__attribute__((target("pclmul")))
static inline unsigned int cnuas_vcrc_clmul(const struct cnuas_vcrc_table *tab,
					    const unsigned char *p,
					    unsigned int len)
{
	__m128i k1 = _mm_loadu_si128((const __m128i *)tab->k128);
	__m128i k4 = _mm_loadu_si128((const __m128i *)tab->k512);
	__m128i x0, x1, x2, x3;
	unsigned char last[16];

	/* the initial value goes into the first two bytes */
	x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p),
			   _mm_cvtsi32_si128(CNUAS_VCRC_INIT));
	x1 = _mm_loadu_si128((const __m128i *)(p + 16));
	x2 = _mm_loadu_si128((const __m128i *)(p + 32));
	x3 = _mm_loadu_si128((const __m128i *)(p + 48));
	for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
		x0 = _mm_xor_si128(cnuas_vcrc_fold(x0, k4),
				   _mm_loadu_si128((const __m128i *)p));
		x1 = _mm_xor_si128(cnuas_vcrc_fold(x1, k4),
				   _mm_loadu_si128((const __m128i *)(p + 16)));
		x2 = _mm_xor_si128(cnuas_vcrc_fold(x2, k4),
				   _mm_loadu_si128((const __m128i *)(p + 32)));
		x3 = _mm_xor_si128(cnuas_vcrc_fold(x3, k4),
				   _mm_loadu_si128((const __m128i *)(p + 48)));
	}
	x1 = _mm_xor_si128(cnuas_vcrc_fold(x0, k1), x1);
	x2 = _mm_xor_si128(cnuas_vcrc_fold(x1, k1), x2);
	x3 = _mm_xor_si128(cnuas_vcrc_fold(x2, k1), x3);
	for (; len >= 16; p += 16, len -= 16)
		x3 = _mm_xor_si128(cnuas_vcrc_fold(x3, k1),
				   _mm_loadu_si128((const __m128i *)p));
	/* X's 128 bits are a message of 16 bytes whose CRC from 0 is X * x^16 mod P */
	_mm_storeu_si128((__m128i *)last, x3);
	return cnuas_vcrc_update(tab, cnuas_vcrc_update(tab, 0, last, 16), p, len);
}
#endif

/* The VCRC of @len bytes at @buf (the LRH through the ICRC). */
static inline unsigned int cnuas_vcrc(const struct cnuas_vcrc_table *tab,
				      const void *buf, unsigned int len)
{
	const unsigned char *p = (const unsigned char *)buf;
	unsigned int crc;

#ifdef CNUAS_VCRC_CLMUL
	if (tab->clmul && len >= 64)
		crc = cnuas_vcrc_clmul(tab, p, len);
	else
#endif
		crc = cnuas_vcrc_update(tab, CNUAS_VCRC_INIT, p, len);
	return (crc ^ CNUAS_VCRC_XOROUT) & 0xffff;
}

/* Write the VCRC of the @len bytes at @frame right after them. */
static inline void cnuas_vcrc_put(const struct cnuas_vcrc_table *table,
				  unsigned char *frame, unsigned int len)
{
	unsigned int crc = cnuas_vcrc(table, frame, len);

	frame[len] = (unsigned char)crc;
	frame[len + 1] = (unsigned char)(crc >> 8);
}

/* 1 if the last two of the @len bytes at @frame are its right VCRC. */
static inline int cnuas_vcrc_ok(const struct cnuas_vcrc_table *table,
				const unsigned char *frame, unsigned int len)
{
	unsigned int crc;

	if (len < CNUAS_LRH_LEN + CNUAS_VCRC_LEN)
		return 0;
	crc = cnuas_vcrc(table, frame, len - CNUAS_VCRC_LEN);
	return frame[len - 2] == (crc & 0xff) && frame[len - 1] == crc >> 8;
}

#endif /* CNUAS_IB_LINK_H */
