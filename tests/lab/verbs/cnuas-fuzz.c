// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-fuzz: send random and mutated RoCEv2 frames at a target, raw,
 * from one interface (AF_PACKET). Every frame has a valid Ethernet/IPv4/
 * UDP-4791 envelope unless the class breaks exactly that; then:
 *   random     random bytes after the UDP header
 *   valid      a well-formed packet of a random opcode, real or random QPN,
 *              random PSN, correct extension headers, correct ICRC
 *   near-psn   the same with PSNs close to one another (-P base)
 *   lengths    IP total length / UDP length / pad count that lie
 *   truncated  cut inside the BTH or extension headers (envelope fixed up)
 *   bad-icrc   a well-formed packet with a wrong ICRC
 *   rkey       RDMA WRITE / READ / atomics with random rkeys, addresses and
 *              lengths (huge ones too)
 *   opcode     any opcode byte, reserved ones included
 *   gsi        UD SENDs to QP1 with random MAD bytes
 *   bth        bad transport version, P_Key, pad count
 * Deterministic for a seed. Prints how many frames of each class it sent.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cnuas_roce.h"
#include "roce-raw.h"

#define MAX_QPNS 16

enum cls { C_RANDOM, C_VALID, C_NEAR, C_LENGTHS, C_TRUNC, C_ICRC, C_RKEY, C_OPCODE, C_GSI, C_BTH, C_N };
static const char *cls_name[C_N] = { "random", "valid", "near-psn", "lengths", "truncated", "bad-icrc",
				     "rkey", "opcode", "gsi", "bth" };

static uint64_t rng;

static uint32_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545F4914F6CDD1Dull) >> 32);
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

static _Noreturn void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "cnuas-fuzz: error: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

/* ---- opcodes: which extension headers follow the BTH ---- */

enum { X_RETH = 1, X_AETH = 2, X_IMM = 4, X_ATOM = 8, X_ATOMACK = 16, X_IETH = 32, X_DETH = 64, X_PAY = 128 };

static const struct { uint8_t op; uint8_t x; } ops[] = {
	{ 0x00, X_PAY }, { 0x01, X_PAY }, { 0x02, X_PAY }, { 0x03, X_IMM | X_PAY }, { 0x04, X_PAY },
	{ 0x05, X_IMM | X_PAY }, { 0x06, X_RETH | X_PAY }, { 0x07, X_PAY }, { 0x08, X_PAY },
	{ 0x09, X_IMM | X_PAY }, { 0x0a, X_RETH | X_PAY }, { 0x0b, X_RETH | X_IMM | X_PAY }, { 0x0c, X_RETH },
	{ 0x0d, X_AETH | X_PAY }, { 0x0e, X_PAY }, { 0x0f, X_AETH | X_PAY }, { 0x10, X_AETH | X_PAY },
	{ 0x11, X_AETH }, { 0x12, X_AETH | X_ATOMACK }, { 0x13, X_ATOM }, { 0x14, X_ATOM },
	{ 0x16, X_IETH | X_PAY }, { 0x17, X_IETH | X_PAY }, { 0x64, X_DETH | X_PAY },
	{ 0x65, X_DETH | X_IMM | X_PAY },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static uint8_t op_ext(uint8_t op)
{
	for (size_t i = 0; i < NOPS; i++)
		if (ops[i].op == op)
			return ops[i].x;
	return X_PAY;
}

struct target {
	uint8_t dmac[6], smac[6];
	uint32_t sip, dip;	/* network order */
	uint32_t qpn[MAX_QPNS];
	int nqpn;
	uint32_t psn_base;
	uint32_t mtu;
};

static uint32_t pick_qpn(const struct target *t)
{
	uint32_t r = rnd() % 8;

	if (r < 5 && t->nqpn)
		return t->qpn[rnd() % (uint32_t)t->nqpn];
	if (r == 5)
		return 1;
	return rnd() & 0xffffff;
}

/*
 * Build a well-formed packet into f (Ethernet frame). Returns the frame
 * length including the ICRC. Class-specific changes come after.
 */
static size_t build(const struct target *t, uint8_t *f, uint8_t op, uint32_t qpn, uint32_t psn,
		    uint32_t paylen, bool fix_icrc)
{
	uint8_t *ip = f + RR_IP, *bth = f + RR_BTH, *p = bth + 12;
	uint8_t x = op_ext(op);
	uint32_t pad = (4 - (paylen & 3)) & 3;

	rr_eth(f, t->dmac, t->smac);
	bth[0] = op;
	bth[1] = (uint8_t)((rnd() & 0x80) | (pad << 4));	/* SE random, M 0, pad, tver 0 */
	bth[2] = bth[3] = 0xff;					/* default P_Key */
	bth[4] = 0;
	bth[5] = (uint8_t)(qpn >> 16);
	bth[6] = (uint8_t)(qpn >> 8);
	bth[7] = (uint8_t)qpn;
	rr_put32(bth + 8, (psn & 0xffffff) | (rnd() & 1u) << 31);	/* AckReq random */
	if (x & X_DETH) {
		rr_put32(p, qpn == 1 ? 0x80010000u : rnd());	/* Q_Key */
		rr_put32(p + 4, rnd() & 0xffffff);			/* source QP */
		p += 8;
	}
	if (x & X_RETH) {
		rr_put64(p, ((uint64_t)rnd() << 32) | rnd());
		rr_put32(p + 8, rnd());
		rr_put32(p + 12, rnd() % 4 ? rnd() % (2 * t->mtu) : rnd());
		p += 16;
	}
	if (x & X_ATOM) {
		rr_put64(p, ((uint64_t)rnd() << 32) | (rnd() & ~7u));
		rr_put32(p + 8, rnd());
		rr_put64(p + 12, ((uint64_t)rnd() << 32) | rnd());
		rr_put64(p + 20, ((uint64_t)rnd() << 32) | rnd());
		p += 28;
	}
	if (x & X_AETH) {
		rr_put32(p, rnd());	/* syndrome + MSN */
		p += 4;
	}
	if (x & X_ATOMACK) {
		rr_put64(p, ((uint64_t)rnd() << 32) | rnd());
		p += 8;
	}
	if (x & (X_IMM | X_IETH)) {
		rr_put32(p, rnd());
		p += 4;
	}
	if (!(x & X_PAY))
		paylen = pad = 0;
	rnd_bytes(p, paylen);
	memset(p + paylen, 0, pad);
	p += paylen + pad;

	size_t iplen = (size_t)(p - ip) + 4;
	uint16_t ipid = (uint16_t)(rnd() & 0xff) << 8;

	ipid |= (uint16_t)(rnd() & 0xff);
	rr_ipv4_udp(ip, iplen, t->sip, t->dip, ipid, (uint16_t)(0xc000 | (rnd() & 0x3fff)));
	if (fix_icrc && rr_put_icrc(ip, iplen))
		memset(p, 0, 4);
	return 14 + iplen;
}

/* Re-make IP/UDP lengths, IP checksum and ICRC after the frame was cut to len. */
static void fixup(uint8_t *f, size_t len, bool with_icrc)
{
	uint8_t *ip = f + 14;
	size_t iplen = len - 14;

	rr_ipv4_lengths(ip, iplen);
	if (with_icrc && iplen >= 44 && rr_put_icrc(ip, iplen))
		memset(ip + iplen - 4, 0, 4);
}

static size_t make(const struct target *t, uint8_t *f, enum cls k)
{
	uint8_t op = ops[rnd() % NOPS].op;
	uint32_t pay = rnd() % 3 ? rnd() % (t->mtu + 1) : rnd() % 64;
	size_t len;

	switch (k) {
	case C_RANDOM:
		len = build(t, f, 0x04, pick_qpn(t), rnd(), 0, false);
		len = 14 + 20 + 8 + rnd() % 300;
		rnd_bytes(f + 42, len - 42);
		fixup(f, len, false);
		return len;
	case C_VALID:
		return build(t, f, op, pick_qpn(t), rnd(), pay, true);
	case C_NEAR:
		return build(t, f, op, pick_qpn(t), t->psn_base + rnd() % 16 - 8, pay, true);
	case C_LENGTHS:
		len = build(t, f, op, pick_qpn(t), rnd(), pay, true);
		switch (rnd() % 4) {
		case 0: f[14 + 2] = (uint8_t)rnd(); f[14 + 3] = (uint8_t)rnd(); break;	/* IP total length */
		case 1: f[14 + 24] = (uint8_t)rnd(); f[14 + 25] = (uint8_t)rnd(); break;	/* UDP length */
		case 2: f[14 + 29] = (uint8_t)(f[14 + 29] | 0x30); fixup(f, len, true); break;	/* pad 3 */
		default: len = 14 + 20 + 8 + 12 + rnd() % 8; fixup(f, len, true); break;	/* no room for ICRC */
		}
		return len;
	case C_TRUNC:
		len = build(t, f, op, pick_qpn(t), rnd(), pay, true);
		len = 14 + 20 + 8 + rnd() % (uint32_t)(len - 42 < 60 ? len - 42 : 60);
		fixup(f, len, rnd() & 1);
		return len;
	case C_ICRC:
		len = build(t, f, op, pick_qpn(t), rnd(), pay, true);
		f[len - 1 - rnd() % 4] ^= (uint8_t)(1u << (rnd() % 8));
		return len;
	case C_RKEY: {
		static const uint8_t rk[] = { 0x06, 0x0a, 0x0b, 0x0c, 0x13, 0x14 };

		return build(t, f, rk[rnd() % sizeof(rk)], pick_qpn(t), rnd() % 2 ? rnd() : t->psn_base,
			     pay, true);
	}
	case C_OPCODE:
		return build(t, f, (uint8_t)rnd(), pick_qpn(t), rnd(), pay % 512, true);
	case C_GSI:
		return build(t, f, 0x64, 1, rnd(), 256, true);
	case C_BTH:
		len = build(t, f, op, pick_qpn(t), rnd(), pay, false);
		switch (rnd() % 3) {
		case 0: f[14 + 29] = (uint8_t)(f[14 + 29] | (1 + rnd() % 15)); break;	/* tver != 0 */
		case 1: f[14 + 30] = (uint8_t)rnd(); f[14 + 31] = (uint8_t)rnd(); break; /* P_Key */
		default: f[14 + 28 + 4] = (uint8_t)rnd(); f[14 + 28 + 8] = (uint8_t)rnd(); break; /* reserved bits */
		}
		fixup(f, len, true);
		return len;
	default:
		return 0;
	}
}

static int parse_mac(const char *s, uint8_t m[6])
{
	unsigned v[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -1;
		m[i] = (uint8_t)v[i];
	}
	return 0;
}

static unsigned long num(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *s == '-' || v > max)
		die("bad %s", what);
	return v;
}

int main(int argc, char **argv)
{
	struct target t = { .mtu = 4096 };
	const char *ifname = NULL;
	unsigned long count = 5000, seed = 1, pause_us = 300;
	unsigned long sent[C_N] = { 0 }, errors = 0;
	int opt, fd;
	bool have_mac = false, have_ip = false;
	unsigned allow = (1u << C_N) - 1;	/* classes to send (-C) */

	while ((opt = getopt(argc, argv, "i:M:a:s:q:P:n:S:m:u:C:h")) != -1) {
		switch (opt) {
		case 'i': ifname = optarg; break;
		case 'M': if (parse_mac(optarg, t.dmac)) die("bad MAC '%s'", optarg); have_mac = true; break;
		case 'a': if (inet_pton(AF_INET, optarg, &t.dip) != 1) die("bad IPv4 address '%s'", optarg); have_ip = true; break;
		case 's': if (inet_pton(AF_INET, optarg, &t.sip) != 1) die("bad IPv4 address '%s'", optarg); break;
		case 'q':
			if (t.nqpn == MAX_QPNS)
				die("at most 16 -q%s", "");
			t.qpn[t.nqpn++] = (uint32_t)num(optarg, "QPN", 0xffffff);
			break;
		case 'P': t.psn_base = (uint32_t)num(optarg, "PSN", 0xffffff); break;
		case 'n': count = num(optarg, "count", 100000000); break;
		case 'S': seed = num(optarg, "seed", ~0ul); break;
		case 'm': t.mtu = (uint32_t)num(optarg, "mtu", 9000); break;
		case 'u': pause_us = num(optarg, "pause", 1000000); break;
		case 'C': {
			char *save = NULL, *tok;

			allow = 0;
			for (tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				int k;

				for (k = 0; k < C_N && strcmp(tok, cls_name[k]); k++)
					;
				if (k == C_N)
					die("unknown class '%s'", tok);
				allow |= 1u << k;
			}
			break;
		}
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"Usage: cnuas-fuzz -i IFACE -M DST_MAC -a DST_IP [-s SRC_IP] [-q QPN]... [-P PSN]\n"
				"                  [-n COUNT (5000)] [-S SEED] [-m MTU (4096)] [-u PAUSE_US per 16 frames (300)]\n"
				"                  [-C CLASS,... (random valid near-psn lengths truncated bad-icrc rkey\n"
				"                                 opcode gsi bth; default all)]\n");
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!ifname || !have_mac || !have_ip || optind != argc)
		die("need -i IFACE -M DST_MAC -a DST_IP%s (see -h)", "");
	rng = (seed ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	if (!rng)
		rng = 1;

	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	if (fd < 0)
		die("AF_PACKET socket: %s (needs root)", strerror(errno));
	struct ifreq ifr = { 0 };

	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		die("interface name too long: %s", ifname);
	strcpy(ifr.ifr_name, ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr))
		die("no interface %s", ifname);
	int ifindex = ifr.ifr_ifindex;

	if (ioctl(fd, SIOCGIFHWADDR, &ifr))
		die("cannot read the MAC of %s", ifname);
	memcpy(t.smac, ifr.ifr_hwaddr.sa_data, 6);
	if (!t.sip) {
		ifr.ifr_addr.sa_family = AF_INET;
		if (ioctl(fd, SIOCGIFADDR, &ifr))
			die("%s has no IPv4 address (use -s)", ifname);
		t.sip = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr;
	}
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = ifindex, .sll_halen = 6,
				  .sll_protocol = htons(ETH_P_IP) };

	memcpy(to.sll_addr, t.dmac, 6);
	static uint8_t f[9216];

	for (unsigned long i = 0; i < count; i++) {
		enum cls k = (enum cls)(rnd() % C_N);
		size_t len;

		while (!(allow & (1u << k)))
			k = (enum cls)(rnd() % C_N);

		memset(f, 0, 256);
		len = make(&t, f, k);
		if (len < 60)
			len = 60;	/* Ethernet minimum: the tail is padding */
		for (int tries = 0;; tries++) {
			if (sendto(fd, f, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len) {
				sent[k]++;
				break;
			}
			if ((errno != ENOBUFS && errno != EAGAIN) || tries > 100) {
				errors++;
				break;
			}
			usleep(1000);
		}
		if (pause_us && i % 16 == 15)
			usleep((useconds_t)pause_us);
	}
	unsigned long total = 0;

	printf("cnuas-fuzz: sent");
	for (int k = 0; k < C_N; k++) {
		printf(" %s=%lu", cls_name[k], sent[k]);
		total += sent[k];
	}
	printf(" total=%lu errors=%lu\n", total, errors);
	close(fd);
	return errors > count / 100 ? 1 : 0;
}
