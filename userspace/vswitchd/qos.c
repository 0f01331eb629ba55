// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Traffic classes: the egress scheduler and the settings of set-qos.
 *
 * A frame's priority (0..7) comes from its ingress port's trust mode
 * (qos_trust.c): none, its VLAN tag's PCP, or its DSCP mapped through
 * the port's dscp2prio (by default DSCP >> 3, the class selector, as
 * Linux maps it). The egress port maps the priority to one of its
 * VS_NUM_TC queues (prio2tc, identity by default).
 *
 * Classes only matter when frames wait: the data path sends straight
 * from the receive batch while a port's queues are empty. When the peer
 * can take frames again, qos_pick() chooses the next one: strict classes
 * first, the highest class first, as 802.1Qaz's strict-priority
 * algorithm; then the other classes by deficit round robin over bytes,
 * each turn worth weight * VS_DWRR_UNIT bytes, so a class's share of what
 * the strict ones leave is its weight over the sum of the busy classes'
 * weights (ETS).
 */
#include "strbuf.h"
#include "switch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void qos_default(struct qos *q)
{
	memset(q, 0, sizeof(*q));
	for (unsigned i = 0; i < 64; i++)
		q->dscp2prio[i] = (uint8_t)(i >> 3);
	for (unsigned i = 0; i < VS_NUM_TC; i++) {
		q->prio2tc[i] = (uint8_t)i;
		q->weight[i] = 1;
	}
	/* every class lossless: what the switch did before it had classes */
	q->lossless = 0xff;
}

static inline bool backlogged(const struct port *d, unsigned tc, const uint32_t *taken)
{
	return d->tq[tc].len > taken[tc];
}

static inline uint32_t head_len(const struct port *d, unsigned tc, const uint32_t *taken)
{
	const struct tc_queue *t = &d->tq[tc];

	return t->q[(t->head + taken[tc]) & d->qmask]->len;
}

/*
 * The class of the next frame to send from d, which must have one that
 * taken[] has not already claimed (taken[tc]: frames of tc already in the
 * batch being built). Advances the DWRR state s.
 */
unsigned qos_pick(const struct port *d, struct dwrr *s, const uint32_t *taken)
{
	unsigned busy = 0, tc;

	for (tc = 0; tc < VS_NUM_TC; tc++)
		if (backlogged(d, tc, taken))
			busy |= 1u << tc;
	if (busy & d->qos.strict) {
		busy &= d->qos.strict;
		return 31 - (unsigned)__builtin_clz(busy);
	}
	/* one busy class (the usual case): nothing to share */
	if (!(busy & (busy - 1)))
		return (unsigned)__builtin_ctz(busy);
	/*
	 * Each step either sends or moves the turn on, adding a quantum
	 * (>= VS_DWRR_UNIT) to a busy class, so a head of VS_MAX_FRAME bytes
	 * fits within this many steps.
	 */
	for (unsigned step = 0; step < VS_NUM_TC * (VS_MAX_FRAME / VS_DWRR_UNIT + 2); step++) {
		tc = s->cur;
		if (busy & (1u << tc)) {
			uint32_t len = head_len(d, tc, taken);

			if (len <= s->deficit[tc]) {
				s->deficit[tc] -= len;
				return tc;
			}
		} else {
			/* an idle class saves nothing up for later (DRR) */
			s->deficit[tc] = 0;
		}
		s->cur = (tc + 1) % VS_NUM_TC;
		if (busy & (1u << s->cur))
			s->deficit[s->cur] += (uint32_t)d->qos.weight[s->cur] * VS_DWRR_UNIT;
	}
	return (unsigned)__builtin_ctz(busy);	/* not reached */
}

/* ---- set-qos arguments ---- */

static int perr(char *err, size_t errlen, const char *fmt, const char *arg)
{
	snprintf(err, errlen, fmt, arg);
	return -1;
}

/* A number in 0..max, all of s up to *end (',' or ':' or the end). */
static int num(const char **s, unsigned long max, unsigned long *v)
{
	char *end;

	if (**s < '0' || **s > '9')
		return -1;
	errno = 0;
	*v = strtoul(*s, &end, 10);
	if (errno || *v > max)
		return -1;
	*s = end;
	return 0;
}

/* "T[,T...]" of classes, or "all" / "none": a bitmask. */
static int parse_classes(const char *s, uint8_t *mask)
{
	unsigned long v;

	if (!strcmp(s, "all")) {
		*mask = 0xff;
		return 0;
	}
	if (!strcmp(s, "none")) {
		*mask = 0;
		return 0;
	}
	*mask = 0;
	for (;;) {
		if (num(&s, VS_NUM_TC - 1, &v) < 0)
			return -1;
		*mask |= (uint8_t)(1u << v);
		if (!*s)
			return 0;
		if (*s++ != ',')
			return -1;
	}
}

/* "K:V[,K:V...]" with K in 0..kmax and V in vmin..vmax, into a table. */
static int parse_pairs(const char *s, unsigned long kmax, unsigned long vmin, unsigned long vmax,
		       void (*set)(struct qos *, unsigned, unsigned), struct qos *q)
{
	unsigned long k, v;

	for (;;) {
		if (num(&s, kmax, &k) < 0 || *s++ != ':' || num(&s, vmax, &v) < 0 || v < vmin)
			return -1;
		set(q, (unsigned)k, (unsigned)v);
		if (!*s)
			return 0;
		if (*s++ != ',')
			return -1;
	}
}

static void set_weight(struct qos *q, unsigned tc, unsigned w) { q->weight[tc] = (uint16_t)w; }
static void set_map(struct qos *q, unsigned prio, unsigned tc) { q->prio2tc[prio] = (uint8_t)tc; }
static void set_dscp(struct qos *q, unsigned dscp, unsigned prio) { q->dscp2prio[dscp] = (uint8_t)prio; }

/*
 * Apply set-qos arguments to *q. On an error *q may be half changed:
 * callers parse into a copy and keep it only on success.
 */
int qos_parse(struct qos *q, int argc, char **argv, char *err, size_t errlen)
{
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *eq = strchr(a, '=');
		const char *v = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);
		uint8_t mask;

		if (!strcmp(a, "reset")) {
			qos_default(q);
		} else if (klen == 6 && !strncmp(a, "strict", 6)) {
			if (parse_classes(v, &mask) < 0)
				return perr(err, errlen, "bad '%s': want strict=T[,T...] (classes 0..7), all or none", a);
			q->strict = mask;
		} else if (klen == 8 && !strncmp(a, "lossless", 8)) {
			if (parse_classes(v, &mask) < 0)
				return perr(err, errlen, "bad '%s': want lossless=T[,T...] (classes 0..7), all or none", a);
			q->lossless = mask;
		} else if (klen == 7 && !strncmp(a, "weights", 7)) {
			if (parse_pairs(v, VS_NUM_TC - 1, 1, VS_WEIGHT_MAX, set_weight, q) < 0)
				return perr(err, errlen, "bad '%s': want weights=T:W[,T:W...] (class 0..7, weight 1..1000)", a);
		} else if (klen == 3 && !strncmp(a, "map", 3)) {
			if (parse_pairs(v, VS_NUM_TC - 1, 0, VS_NUM_TC - 1, set_map, q) < 0)
				return perr(err, errlen, "bad '%s': want map=P:T[,P:T...] (priority 0..7 to class 0..7)", a);
		} else if (klen == 4 && !strncmp(a, "dscp", 4)) {
			if (!strcmp(v, "default")) {
				for (unsigned d = 0; d < 64; d++)
					q->dscp2prio[d] = (uint8_t)(d >> 3);
			} else if (parse_pairs(v, 63, 0, VS_NUM_TC - 1, set_dscp, q) < 0) {
				return perr(err, errlen, "bad '%s': want dscp=D:P[,D:P...] (DSCP 0..63 to priority 0..7) or dscp=default", a);
			}
		} else {
			return perr(err, errlen, "bad '%s': want strict=, weights=, lossless=, map=, dscp= or reset", a);
		}
	}
	return 0;
}

/* ---- output ---- */

static void classes_text(struct strbuf *b, uint8_t mask)
{
	const char *sep = "";

	if (mask == 0xff) {
		sb_printf(b, "all");
		return;
	}
	if (!mask) {
		sb_printf(b, "none");
		return;
	}
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++) {
		if (mask & (1u << tc)) {
			sb_printf(b, "%s%u", sep, tc);
			sep = ",";
		}
	}
}

/* The same syntax set-qos takes, so a setting can be read back and reused. */
void qos_text(struct strbuf *b, const struct qos *q)
{
	const char *sep = "";

	sb_printf(b, "strict=");
	classes_text(b, q->strict);
	sb_printf(b, " weights=");
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++)
		sb_printf(b, "%s%u:%u", tc ? "," : "", tc, q->weight[tc]);
	sb_printf(b, " lossless=");
	classes_text(b, q->lossless);
	sb_printf(b, " map=");
	for (unsigned p = 0; p < VS_NUM_TC; p++)
		sb_printf(b, "%s%u:%u", p ? "," : "", p, q->prio2tc[p]);
	sb_printf(b, " dscp=");
	for (unsigned d = 0; d < 64; d++) {
		if (q->dscp2prio[d] != d >> 3) {
			sb_printf(b, "%s%u:%u", sep, d, q->dscp2prio[d]);
			sep = ",";
		}
	}
	if (!*sep)
		sb_printf(b, "default");
}

static void json_u8_list(struct strbuf *b, const uint8_t *v, unsigned n)
{
	sb_printf(b, "[");
	for (unsigned i = 0; i < n; i++)
		sb_printf(b, "%s%u", i ? ", " : "", v[i]);
	sb_printf(b, "]");
}

static void json_mask(struct strbuf *b, uint8_t mask)
{
	const char *sep = "";

	sb_printf(b, "[");
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++) {
		if (mask & (1u << tc)) {
			sb_printf(b, "%s%u", sep, tc);
			sep = ", ";
		}
	}
	sb_printf(b, "]");
}

void qos_json(struct strbuf *b, const struct qos *q)
{
	sb_printf(b, "{\"strict\": ");
	json_mask(b, q->strict);
	sb_printf(b, ", \"lossless\": ");
	json_mask(b, q->lossless);
	sb_printf(b, ", \"weights\": [");
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++)
		sb_printf(b, "%s%u", tc ? ", " : "", q->weight[tc]);
	sb_printf(b, "], \"prio2tc\": ");
	json_u8_list(b, q->prio2tc, VS_NUM_TC);
	sb_printf(b, ", \"dscp2prio\": ");
	json_u8_list(b, q->dscp2prio, 64);
	sb_printf(b, "}");
}
