// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * What a port's ingress priority is taken from: the trust mode of
 * set-qos-trust (--qos-trust for new ports), as a DCB NIC's trust state.
 *
 *   none  every frame has priority 0 (the default: a guest claims nothing)
 *   pcp   the outer VLAN tag's PCP; untagged frames 0
 *   dscp  the IPv4/IPv6 DSCP (behind up to two tags) through the port's
 *         dscp2prio; other frames 0, whatever their tag says
 *   sl    (InfiniBand) the LRH's service level, 0..15: what an IB switch's
 *         SLtoVL table of the ingress port would map
 *
 * The mode is picked once, when set, as an entry of modes[] (among those
 * the link layer offers, fwd_mode.trust_modes); the data path calls its
 * function and never tests which mode runs. A priority above the port's
 * max_prio (at most 7) is lowered to it, and the data path counts that
 * (prio_capped): an SL above the cap is a claim the port may not make.
 */
#include "cnuas_ib_link.h"
#include "cnuas_roce.h"
#include "strbuf.h"
#include "switch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ETH_P_8021AD 0x88a8

static inline uint16_t be16_at(const uint8_t *d) { return (uint16_t)(d[0] << 8 | d[1]); }

static inline bool is_tag(uint16_t et)
{
	return et == CNUAS_ROCE_ETH_P_8021Q || et == ETH_P_8021AD;
}

static unsigned prio_none(const struct qos *q, const uint8_t *d, uint32_t len)
{
	(void)q, (void)d, (void)len;
	return 0;
}

static unsigned prio_pcp(const struct qos *q, const uint8_t *d, uint32_t len)
{
	(void)q;
	/* the tag's TCI follows its type */
	if (len < CNUAS_ROCE_ETH_HLEN + 2 || !is_tag(be16_at(d + 12)))
		return 0;
	return d[14] >> 5;
}

static unsigned prio_dscp(const struct qos *q, const uint8_t *d, uint32_t len)
{
	uint32_t off = 12;	/* the EtherType, after at most two tags */

	for (unsigned tags = 0; tags < 2 && off + 2 <= len && is_tag(be16_at(d + off)); tags++)
		off += 4;
	/* the type and the IP header's first two bytes */
	if (off + 4 > len)
		return 0;
	if (be16_at(d + off) == CNUAS_ROCE_ETH_P_IP && (d[off + 2] >> 4) == 4)
		return q->dscp2prio[d[off + 3] >> 2];
	if (be16_at(d + off) == CNUAS_ROCE_ETH_P_IPV6 && (d[off + 2] >> 4) == 6)
		return q->dscp2prio[(d[off + 2] & 0x0f) << 2 | d[off + 3] >> 6];
	return 0;
}

static unsigned prio_sl(const struct qos *q, const uint8_t *d, uint32_t len)
{
	(void)q;
	/* the link checks come later: a short frame is dropped there */
	return len >= CNUAS_LRH_LEN ? cnuas_lrh_sl(d) : 0;
}

static const struct {
	const char *name;
	unsigned (*prio)(const struct qos *q, const uint8_t *d, uint32_t len);
} modes[QOS_TRUST_MODES] = {
	[QOS_TRUST_NONE] = { "none", prio_none },
	[QOS_TRUST_PCP] = { "pcp", prio_pcp },
	[QOS_TRUST_DSCP] = { "dscp", prio_dscp },
	[QOS_TRUST_SL] = { "sl", prio_sl },
};

unsigned qos_classify(const struct port *p, const uint8_t *d, uint32_t len, bool *capped)
{
	unsigned prio = modes[p->trust.mode].prio(&p->qos, d, len);

	*capped = prio > p->trust.max_prio;
	return *capped ? p->trust.max_prio : prio;
}

int qos_trust_mode(const char *name)
{
	for (int m = 0; m < QOS_TRUST_MODES; m++)
		if (!strcmp(name, modes[m].name))
			return m;
	return -1;
}

void qos_trust_names(char *buf, size_t len, unsigned allowed)
{
	unsigned n = 0, left = (unsigned)__builtin_popcount(allowed & ((1u << QOS_TRUST_MODES) - 1));
	size_t at = 0;

	buf[0] = '\0';
	/* "none" last: "pcp, dscp or none", "sl or none" */
	for (int i = 1; i <= QOS_TRUST_MODES && at < len; i++) {
		int m = i % QOS_TRUST_MODES;

		if (!(allowed & (1u << m)))
			continue;
		n++;
		at += (size_t)snprintf(buf + at, len - at, "%s%s",
				       n == 1 ? "" : n == left ? " or " : ", ", modes[m].name);
	}
}

/* One set-qos-trust argument: a mode of @allowed or max-prio=N. */
static int trust_arg(struct qos_trust *t, unsigned allowed, const char *a)
{
	int m = qos_trust_mode(a);
	char *end;
	unsigned long v;

	if (m >= 0) {
		if (!(allowed & (1u << m)))
			return -1;
		t->mode = (uint8_t)m;
		return 0;
	}
	if (strncmp(a, "max-prio=", 9) || a[9] < '0' || a[9] > '9')
		return -1;
	errno = 0;
	v = strtoul(a + 9, &end, 10);
	if (errno || *end || v >= VS_NUM_TC)
		return -1;
	t->max_prio = (uint8_t)v;
	return 0;
}

/* Apply set-qos-trust arguments in order; on an error *t may be half changed. */
int qos_trust_parse(struct qos_trust *t, unsigned allowed, int argc, char **argv, char *err,
		    size_t errlen)
{
	for (int i = 0; i < argc; i++) {
		if (trust_arg(t, allowed, argv[i]) < 0) {
			char names[64];

			qos_trust_names(names, sizeof(names), allowed);
			snprintf(err, errlen, "bad '%s': want %s, and max-prio=N (0..%u)",
				 argv[i], names, VS_NUM_TC - 1);
			return -1;
		}
	}
	return 0;
}

void qos_trust_text(struct strbuf *b, const struct qos_trust *t)
{
	sb_printf(b, "%s max-prio=%u", modes[t->mode].name, t->max_prio);
}

void qos_trust_json(struct strbuf *b, const struct qos_trust *t)
{
	sb_printf(b, "{\"mode\": \"%s\", \"max_prio\": %u}", modes[t->mode].name, t->max_prio);
}
