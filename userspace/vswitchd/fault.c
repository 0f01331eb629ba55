// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Seeded fault injection. Every frame received from a faulty port draws
 * three numbers (drop, corrupt, reorder) from a per-port xorshift64*
 * generator, so the same seed and the same frame sequence give the same
 * faults. The generator starts from the seed mixed with the port id, so
 * ports sharing one setting (set-fault --port all) fault independently.
 */
#include "switch.h"
#include "cnuas_roce.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t fault_rand(struct fault *f)
{
	uint64_t x = f->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	f->rng = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

/*
 * Where a corruption may land: for RoCEv2 (IPv4/IPv6 UDP to 4791) the UDP
 * payload after the 12-byte BTH, so the IP/UDP headers and the BTH stay
 * valid and only the receiver's ICRC check can notice; for anything else
 * every byte after the Ethernet header.  Returns the first byte; *end gets
 * one past the last.
 */
static uint32_t corrupt_span(const uint8_t *d, uint32_t len, uint32_t *end)
{
	uint32_t l3 = CNUAS_ROCE_ETH_HLEN, l4 = 0, l3_end = len;
	uint16_t et = (uint16_t)(d[12] << 8 | d[13]);

	*end = len;
	if (et == CNUAS_ROCE_ETH_P_8021Q && len >= CNUAS_ROCE_ETH_HLEN + CNUAS_ROCE_VLAN_HLEN) {
		et = (uint16_t)(d[16] << 8 | d[17]);
		l3 += CNUAS_ROCE_VLAN_HLEN;
	}
	if (et == CNUAS_ROCE_ETH_P_IP && len >= l3 + CNUAS_ROCE_IPV4_HLEN && (d[l3] >> 4) == 4 &&
	    d[l3 + 9] == CNUAS_ROCE_IPPROTO_UDP) {
		uint32_t ihl = (d[l3] & 15u) * 4, tot = (uint32_t)(d[l3 + 2] << 8 | d[l3 + 3]);

		if (ihl >= CNUAS_ROCE_IPV4_HLEN && tot >= ihl && l3 + tot <= len) {
			l4 = l3 + ihl;
			l3_end = l3 + tot;
		}
	} else if (et == CNUAS_ROCE_ETH_P_IPV6 && len >= l3 + CNUAS_ROCE_IPV6_HLEN && (d[l3] >> 4) == 6 &&
		   d[l3 + 6] == CNUAS_ROCE_IPPROTO_UDP) {
		uint32_t pl = (uint32_t)(d[l3 + 4] << 8 | d[l3 + 5]);

		if (l3 + CNUAS_ROCE_IPV6_HLEN + pl <= len) {
			l4 = l3 + CNUAS_ROCE_IPV6_HLEN;
			l3_end = l3 + CNUAS_ROCE_IPV6_HLEN + pl;
		}
	}
	/* UDP to the RoCEv2 port with room for UDP + BTH + at least one more byte */
	if (l4 && l4 + CNUAS_ROCE_UDP_HLEN + CNUAS_BTH_LEN < l3_end &&
	    (d[l4 + 2] << 8 | d[l4 + 3]) == CNUAS_ROCE_UDP_PORT) {
		*end = l3_end;
		return l4 + CNUAS_ROCE_UDP_HLEN + CNUAS_BTH_LEN;
	}
	return VS_ETH_HLEN;
}

/* Flip one random bit (see corrupt_span for where): the frame still gets switched. */
void fault_corrupt_frame(struct fault *f, uint8_t *data, uint32_t len)
{
	uint32_t start, end, r;

	if (len <= VS_ETH_HLEN)
		return;
	start = corrupt_span(data, len, &end);
	r = fault_rand(f);
	data[start + r % (end - start)] ^= (uint8_t)(1u << (fault_rand(f) & 7));
}

static int parse_pct(const char *s, double *pct, uint32_t *thr)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 100))
		return -1;
	*pct = v;
	*thr = v >= 100 ? UINT32_MAX : (uint32_t)(v / 100.0 * 4294967296.0);
	return 0;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/*
 * argv: "clear" or key=value words (drop, corrupt, reorder, vcrc in
 * percent, delay in ms, seed). Unset keys are 0; the seed defaults to 1.
 */
int fault_parse(struct fault *f, int argc, char **argv, char *err, size_t errlen)
{
	struct fault n = { .seed = 1 };

	if (argc == 1 && !strcmp(argv[0], "clear")) {
		memset(f, 0, sizeof(*f));
		return 0;
	}
	if (argc < 1) {
		snprintf(err, errlen, "fault needs key=value settings or 'clear'");
		return -1;
	}
	for (int i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		const char *v;
		uint64_t u;
		int bad = 0;

		if (!eq) {
			snprintf(err, errlen, "bad fault setting '%s' (want key=value)", argv[i]);
			return -1;
		}
		v = eq + 1;
		size_t kl = (size_t)(eq - argv[i]);
#define KEY(k) (kl == strlen(k) && !strncmp(argv[i], k, kl))
		if (KEY("drop"))
			bad = parse_pct(v, &n.drop_pct, &n.drop);
		else if (KEY("corrupt"))
			bad = parse_pct(v, &n.corrupt_pct, &n.corrupt);
		else if (KEY("reorder"))
			bad = parse_pct(v, &n.reorder_pct, &n.reorder);
		else if (KEY("vcrc"))
			bad = parse_pct(v, &n.vcrc_pct, &n.vcrc);
		else if (KEY("delay")) {
			bad = parse_u64(v, 60000, &u);
			n.delay_ms = (uint32_t)u;
		} else if (KEY("seed"))
			bad = parse_u64(v, UINT64_MAX, &n.seed);
		else {
			snprintf(err, errlen,
				 "unknown fault key '%.*s' (known: drop corrupt reorder vcrc delay seed)",
				 (int)kl, argv[i]);
			return -1;
		}
#undef KEY
		if (bad) {
			snprintf(err, errlen,
				 "bad value in '%s' (percent 0..100, delay 0..60000 ms, seed an unsigned integer)",
				 argv[i]);
			return -1;
		}
	}
	n.active = n.drop || n.corrupt || n.reorder || n.vcrc || n.delay_ms;
	*f = n;
	return 0;
}

/* Arm f for the port with this id: restart its generator from the seed. */
void fault_start(struct fault *f, uint32_t port_id)
{
	/* xorshift must not start at 0; mix the seed so nearby seeds differ */
	f->rng = (f->seed ^ 0x9E3779B97F4A7C15ull ^ ((uint64_t)port_id << 32)) * 0xBF58476D1CE4E5B9ull;
	if (!f->rng)
		f->rng = 1;
}
