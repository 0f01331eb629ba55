// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* Control socket server and its commands. */
#include "capture.h"
#include "ctl_proto.h"
#include "fdb.h"
#include "fwd_mode.h"
#include "port_io.h"
#include "port_kind.h"
#include "strbuf.h"
#include "switch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

int ctl_listen(struct vswitch *sw)
{
	char err[256];
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = ev_tag(EV_CTL_LISTEN, 0) };

	sw->ctl_fd = unix_listen(sw->cfg.ctl_path, SOCK_STREAM, 0600, err, sizeof(err));
	if (sw->ctl_fd < 0) {
		vs_log(VS_LOG_ERR, "control socket: %s", err);
		return -1;
	}
	epoll_ctl(sw->epfd, EPOLL_CTL_ADD, sw->ctl_fd, &ev);
	return 0;
}

static void conn_close(struct vswitch *sw, struct ctl_conn *c)
{
	epoll_ctl(sw->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->in);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void ctl_close_all(struct vswitch *sw)
{
	for (unsigned i = 0; i < VS_MAX_CTL_CONNS; i++)
		if (sw->ctl[i].used)
			conn_close(sw, &sw->ctl[i]);
}

/* A client that stalls must not hold one of the few slots forever. */
void ctl_expire(struct vswitch *sw)
{
	for (unsigned i = 0; i < VS_MAX_CTL_CONNS; i++) {
		if (sw->ctl[i].used && sw->ctl[i].deadline <= sw->now) {
			vs_log(VS_LOG_INFO, "control connection timed out");
			conn_close(sw, &sw->ctl[i]);
		}
	}
}

void ctl_accept(struct vswitch *sw)
{
	for (;;) {
		int fd = accept4(sw->ctl_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		unsigned i;

		if (fd < 0)
			return;
		for (i = 0; i < VS_MAX_CTL_CONNS && sw->ctl[i].used; i++)
			;
		if (i == VS_MAX_CTL_CONNS) {
			static const char busy[] = "ERR too many control connections\n";

			if (write(fd, busy, sizeof(busy) - 1) < 0) {
				/* nothing to do: we close anyway */
			}
			close(fd);
			continue;
		}
		struct ctl_conn *c = &sw->ctl[i];
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = ev_tag(EV_CTL_CONN, i) };

		memset(c, 0, sizeof(*c));
		c->used = true;
		c->fd = fd;
		c->deadline = mono_ns() + CTL_TIMEOUT_NS;
		epoll_ctl(sw->epfd, EPOLL_CTL_ADD, fd, &ev);
	}
}

/* ---- output helpers ---- */

struct req {
	bool json;
	int argc;
	char *argv[CTL_MAX_ARGS];
	struct strbuf out;
	char err[512];
};

static int fail(struct req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct req *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t total_drops(const struct counters *c)
{
	return c->drop_bad_size + c->drop_runt + c->drop_bad_src + c->drop_filtered +
	       c->drop_flood_overflow + c->drop_port_closed + c->drop_peer_absent + c->drop_foreign +
	       c->drop_tc_full;
}

static void json_counters(struct strbuf *b, const struct counters *c)
{
	const char *sep = "";

	sb_printf(b, "{");
#define VS_X(n)                                                                                    \
	sb_printf(b, "%s\"" #n "\": %llu", sep, (unsigned long long)c->n);                          \
	sep = ", ";
	VS_COUNTERS(VS_X)
#undef VS_X
	sb_printf(b, "}");
}

static void json_fault(struct strbuf *b, const struct fault *f)
{
	if (!f->active) {
		sb_printf(b, "null");
		return;
	}
	sb_printf(b, "{\"drop\": %g, \"corrupt\": %g, \"reorder\": %g, \"vcrc\": %g, \"delay_ms\": %u, "
		     "\"seed\": %llu}",
		  f->drop_pct, f->corrupt_pct, f->reorder_pct, f->vcrc_pct, f->delay_ms,
		  (unsigned long long)f->seed);
}

static void text_fault(struct strbuf *b, const struct fault *f)
{
	if (!f->active)
		sb_printf(b, "none");
	else
		sb_printf(b, "drop=%g corrupt=%g reorder=%g vcrc=%g delay=%u seed=%llu", f->drop_pct,
			  f->corrupt_pct, f->reorder_pct, f->vcrc_pct, f->delay_ms,
			  (unsigned long long)f->seed);
}

/* Per-class egress counters and per-priority ingress counters of p. */
static void json_classes(struct strbuf *b, const struct port *p)
{
	sb_printf(b, "[");
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++) {
		const struct tc_counters *t = &p->tcc[tc];

		sb_printf(b, "%s{\"tc\": %u, \"queue\": %u", tc ? ", " : "", tc, p->tq[tc].len);
#define VS_X(n) sb_printf(b, ", \"" #n "\": %llu", (unsigned long long)t->n);
		VS_TC_COUNTERS(VS_X)
#undef VS_X
		sb_printf(b, "}");
	}
	sb_printf(b, "], \"rx_priority\": [");
	for (unsigned pr = 0; pr < VS_NUM_TC; pr++)
		sb_printf(b, "%s{\"prio\": %u, \"rx_frames\": %llu, \"rx_bytes\": %llu}",
			  pr ? ", " : "", pr, (unsigned long long)p->rx_prio_frames[pr],
			  (unsigned long long)p->rx_prio_bytes[pr]);
	sb_printf(b, "]");
}

static void text_classes(struct strbuf *b, const struct port *p)
{
	sb_printf(b, "  %-3s %-5s %12s %14s %10s %10s %10s %8s %6s %12s\n", "TC", "MODE",
		  "TX_FRAMES", "TX_BYTES", "DROP_FULL", "DROP_FLOOD", "BP_CAUSED", "HIWATER",
		  "QUEUE", "RX_PRIO");
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++) {
		const struct tc_counters *t = &p->tcc[tc];
		char mode[8];

		snprintf(mode, sizeof(mode), "%c%c", (p->qos.strict & (1u << tc)) ? 'S' : 'W',
			 (p->qos.lossless & (1u << tc)) ? 'L' : 'D');
		sb_printf(b, "  %-3u %-5s %12llu %14llu %10llu %10llu %10llu %8llu %6u %12llu\n", tc,
			  mode, (unsigned long long)t->tx_frames, (unsigned long long)t->tx_bytes,
			  (unsigned long long)t->drop_tc_full,
			  (unsigned long long)t->drop_flood_overflow, (unsigned long long)t->bp_caused,
			  (unsigned long long)t->queue_hiwater, p->tq[tc].len,
			  (unsigned long long)p->rx_prio_frames[tc]);
	}
}

static void json_psec(struct strbuf *b, const struct fdb_policy *ps)
{
	sb_printf(b, "{\"pin\": %s, \"macs\": %u}", ps->pin ? "true" : "false", ps->limit);
}

static const char *const macs_from_name[] = {
	[MACS_NONE] = "none", [MACS_GIVEN] = "given", [MACS_STATIC] = "static",
};

/* "assigned_macs": {"from": "given"|"static"|"none", "macs": [...]} */
static void json_assigned_macs(struct strbuf *b, const struct port *p)
{
	char mac[18];

	sb_printf(b, "\"assigned_macs\": {\"from\": \"%s\", \"macs\": [",
		  macs_from_name[p->macs_from]);
	for (unsigned i = 0; i < p->nmacs; i++) {
		fdb_mac_str(p->macs[i], mac);
		sb_printf(b, "%s\"%s\"", i ? ", " : "", mac);
	}
	sb_printf(b, "]}");
}

/* "port N MACs (given): a, b" lines of ports that have assigned MACs. */
static void text_assigned_macs(struct strbuf *b, const struct port *p)
{
	char mac[18];

	if (!p->nmacs)
		return;
	sb_printf(b, "port %u MACs (%s%s):", p->id, macs_from_name[p->macs_from],
		  p->psec.pin ? "" : ", not enforced: pin off");
	for (unsigned i = 0; i < p->nmacs; i++) {
		fdb_mac_str(p->macs[i], mac);
		sb_printf(b, "%s %s", i ? "," : "", mac);
	}
	sb_printf(b, "\n");
}

static int parse_port(struct vswitch *sw, struct req *r, const char *s, struct port **out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v == 0 || v > UINT32_MAX)
		return fail(r, "bad port '%s' (want a port id from 'show')", s);
	*out = port_by_id(sw, (uint32_t)v);
	if (!*out)
		return fail(r, "no port %lu", v);
	return 0;
}

/* A hand-over time: 1..600000 ms. */
static int parse_ms(struct req *r, const char *s, unsigned *ms)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v == 0 || v > 600000)
		return fail(r, "bad time '%s' (want 1..600000 ms)", s);
	*ms = (unsigned)v;
	return 0;
}

/* ---- commands ---- */

/* The active port with the smallest id above @after: listings go in id order. */
static struct port *next_port_by_id(struct vswitch *sw, uint32_t after)
{
	struct port *p = NULL;

	for (unsigned i = 0; i < sw->nactive; i++) {
		struct port *q = &sw->ports[sw->active[i]];

		if (q->id > after && (!p || q->id < p->id))
			p = q;
	}
	return p;
}

static int cmd_show(struct vswitch *sw, struct req *r)
{
	struct strbuf *b = &r->out;

	if (r->argc != 1)
		return fail(r, "usage: show");
	if (r->json) {
		sb_printf(b, "{\"socket\": ");
		sb_json_str(b, sw->cfg.socket_path);
		sb_printf(b, ", \"link_layer\": \"%s\", \"aging_s\": %u, \"queue_frames\": %u, "
			     "\"fdb_entries\": %u, \"stream_framing_errors\": %llu, \"capture\": ",
			  sw->ops->name, sw->cfg.aging_s, sw->cfg.queue_frames, sw->fdb->n,
			  (unsigned long long)sw->stream_framing_errors);
		if (sw->cap) {
			sb_printf(b, "{\"file\": ");
			sb_json_str(b, capture_path(sw->cap));
			sb_printf(b, ", \"port\": %u, \"frames\": %llu}", capture_port(sw->cap),
				  (unsigned long long)capture_frames(sw->cap));
		} else {
			sb_printf(b, "null");
		}
		sb_printf(b, ", \"port_security_all\": ");
		json_psec(b, &sw->psec_all);
		sb_printf(b, ", \"ports\": [");
	} else {
		sb_printf(b, "switch %s: link-layer %s, %u ports, %u fdb entries, aging %u s, capture ",
			  sw->cfg.socket_path, sw->ops->name, sw->nactive, sw->fdb->n,
			  sw->cfg.aging_s);
		if (sw->cap && capture_port(sw->cap))
			sb_printf(b, "%s (port %u)\n", capture_path(sw->cap), capture_port(sw->cap));
		else if (sw->cap)
			sb_printf(b, "%s (all ports)\n", capture_path(sw->cap));
		else
			sb_printf(b, "off\n");
		if (sw->nstream)
			sb_printf(b, "stream connections dropped for a bad frame length: %llu\n",
				  (unsigned long long)sw->stream_framing_errors);
		sb_printf(b, "%-5s %-16s %-9s %-8s %12s %12s %12s %12s %8s %6s %-5s %-20s  %s\n",
			  "PORT", "VM", "KIND", "STATE", "RX_FRAMES", "RX_BYTES", "TX_FRAMES", "TX_BYTES", "DROPS",
			  "QUEUE", "FAULT", "INJECTED(D/R/C/DLY)", "PEER");
	}
	/* list ports in id order */
	struct port *p = NULL;

	for (unsigned n = 0; n < sw->nactive; n++) {
		p = next_port_by_id(sw, p ? p->id : 0);
		if (r->json) {
			sb_printf(b, "%s{\"id\": %u, \"kind\": \"%s\", \"peer\": ", n ? ", " : "", p->id,
				  p->kind->name);
			sb_json_str(b, p->peer);
			sb_printf(b, ", \"vm\": ");
			if (p->vm[0])
				sb_json_str(b, p->vm);
			else
				sb_printf(b, "null");
			sb_printf(b, ", \"state\": \"%s\", \"queue\": %u, \"held\": %u, \"fault\": ",
				  port_state(p), p->qlen, p->hold_len);
			json_fault(b, &p->fault);
			sb_printf(b, ", \"port_security\": ");
			json_psec(b, &p->psec);
			sb_printf(b, ", ");
			json_assigned_macs(b, p);
			sb_printf(b, ", \"macs_learned\": %u, \"counters\": ",
				  sw->fdb->port_n[p->idx]);
			json_counters(b, &p->c);
			if (sw->ops->traffic_classes) {
				sb_printf(b, ", \"qos\": ");
				qos_json(b, &p->qos);
				sb_printf(b, ", \"trust\": ");
				qos_trust_json(b, &p->trust);
				sb_printf(b, ", \"classes\": ");
				json_classes(b, p);
			}
			sb_printf(b, "}");
		} else {
			char inj[96];

			snprintf(inj, sizeof(inj), "%llu/%llu/%llu/%llu",
				 (unsigned long long)p->c.fault_drop, (unsigned long long)p->c.fault_reorder,
				 (unsigned long long)p->c.fault_corrupt, (unsigned long long)p->c.fault_delay);
			sb_printf(b, "%-5u %-16s %-9s %-8s %12llu %12llu %12llu %12llu %8llu %6u %-5s %-20s  %s\n",
				  p->id, p->vm[0] ? p->vm : "-", p->kind->name, port_state(p), (unsigned long long)p->c.rx_frames,
				  (unsigned long long)p->c.rx_bytes, (unsigned long long)p->c.tx_frames,
				  (unsigned long long)p->c.tx_bytes,
				  (unsigned long long)total_drops(&p->c), p->qlen,
				  p->fault.active ? "yes" : "-", inj, p->peer);
		}
	}
	if (r->json) {
		sb_printf(b, "], \"fault_all\": ");
		json_fault(b, &sw->fault_all);
		if (sw->ops->traffic_classes) {
			sb_printf(b, ", \"qos_all\": ");
			qos_json(b, &sw->qos_all);
			sb_printf(b, ", \"trust_all\": ");
			qos_trust_json(b, &sw->trust_all);
		}
		if (sw->ops->ctl_show)
			sw->ops->ctl_show(sw, b, true);
		sb_printf(b, "}\n");
		return 0;
	}
	if (sw->ops->ctl_show)
		sw->ops->ctl_show(sw, b, false);
	/* the settings of faulty ports, one line each */
	p = NULL;
	if (sw->fault_all.active) {
		sb_printf(b, "fault all ports: ");
		text_fault(b, &sw->fault_all);
		sb_printf(b, "\n");
	}
	for (unsigned n = 0; n < sw->nactive; n++) {
		p = next_port_by_id(sw, p ? p->id : 0);
		text_assigned_macs(b, p);
		if (p->fault.active) {
			sb_printf(b, "fault port %u: ", p->id);
			text_fault(b, &p->fault);
			sb_printf(b, "\n");
		}
	}
	return 0;
}

static int cmd_fdb(struct vswitch *sw, struct req *r)
{
	struct strbuf *b = &r->out;
	uint32_t now = (uint32_t)(sw->now / 1000000000ull);
	bool first = true;

	if (r->argc != 1)
		return fail(r, "usage: fdb");
	fdb_age(sw->fdb, now);
	if (r->json)
		sb_printf(b, "{\"fdb\": [");
	else
		sb_printf(b, "%-17s %5s %6s %s\n", "MAC", "PORT", "AGE_S", "PINNED");
	for (unsigned i = 0; i < FDB_SLOTS; i++) {
		const struct fdb_entry *e = &sw->fdb->e[i];
		char mac[18];

		if (!e->key)
			continue;
		fdb_mac_str(e->key, mac);
		if (r->json)
			sb_printf(b, "%s{\"mac\": \"%s\", \"port\": %u, \"age_s\": %u, \"pinned\": %s}",
				  first ? "" : ", ", mac, sw->ports[e->port].id, now - e->seen,
				  e->pinned ? "true" : "false");
		else
			sb_printf(b, "%-17s %5u %6u %s\n", mac, sw->ports[e->port].id, now - e->seen,
				  e->pinned ? "yes" : "no");
		first = false;
	}
	if (r->json)
		sb_printf(b, "]}\n");
	return 0;
}

static void counters_one(struct req *r, const struct port *p, bool first)
{
	struct strbuf *b = &r->out;

	if (r->json) {
		sb_printf(b, "%s{\"id\": %u, \"counters\": ", first ? "" : ", ", p->id);
		json_counters(b, &p->c);
		shm_port_counters(p, b, true);
		sb_printf(b, "}");
		return;
	}
	sb_printf(b, "port %u (%s %s, %s)\n", p->id, p->kind->name, p->peer, port_state(p));
#define VS_X(n) sb_printf(b, "  %-20s %llu\n", #n, (unsigned long long)p->c.n);
	VS_COUNTERS(VS_X)
#undef VS_X
	shm_port_counters(p, b, false);
}

static int cmd_counters(struct vswitch *sw, struct req *r)
{
	struct port *one = NULL;

	if (r->argc > 2)
		return fail(r, "usage: counters [PORT]");
	if (r->argc == 2 && parse_port(sw, r, r->argv[1], &one) < 0)
		return -1;
	if (r->json)
		sb_printf(&r->out, "{\"ports\": [");
	if (one) {
		counters_one(r, one, true);
	} else {
		struct port *p = NULL;

		for (unsigned n = 0; n < sw->nactive; n++) {
			p = next_port_by_id(sw, p ? p->id : 0);
			counters_one(r, p, n == 0);
		}
	}
	if (r->json)
		sb_printf(&r->out, "]}\n");
	return 0;
}

static int cmd_fault(struct vswitch *sw, struct req *r)
{
	struct port *p;
	struct fault f;

	if (r->argc < 3)
		return fail(r, "usage: fault PORT drop=P corrupt=P reorder=P vcrc=P delay=MS seed=N | fault PORT clear");
	if (parse_port(sw, r, r->argv[1], &p) < 0)
		return -1;
	if (fault_parse(&f, r->argc - 2, r->argv + 2, r->err, sizeof(r->err)) < 0)
		return -1;
	if (f.vcrc && !sw->ops->link_vcrc)
		return fail(r, "vcrc= needs --link-layer ib (an Ethernet frame has no VCRC)");
	p->fault = f;
	fault_start(&p->fault, p->id);
	vs_log(VS_LOG_INFO, "port %u: fault %s", p->id, f.active ? "set" : "cleared");
	if (r->json) {
		sb_printf(&r->out, "{\"port\": %u, \"fault\": ", p->id);
		json_fault(&r->out, &p->fault);
		sb_printf(&r->out, "}\n");
	} else {
		sb_printf(&r->out, "port %u fault: ", p->id);
		text_fault(&r->out, &p->fault);
		sb_printf(&r->out, "\n");
	}
	return 0;
}

/*
 * set-fault [--port ID|all] drop=P reorder=P corrupt=P [vcrc=P] [delay=MS] [seed=N]
 * (or "clear"). Without --port, or with "all": every port, now and ports
 * that connect later. All rates 0 switches faults off.
 */
/*
 * The optional leading "--port ID|all" (or --port=...) of the set-* commands:
 * *one is the port, or NULL for all; returns the index of the next argument.
 */
static int parse_port_sel(struct vswitch *sw, struct req *r, struct port **one)
{
	const char *sel;
	int first;

	*one = NULL;
	if (r->argc < 2 || strncmp(r->argv[1], "--port", 6))
		return 1;
	if (r->argv[1][6] == '=') {
		sel = r->argv[1] + 7;
		first = 2;
	} else if (!r->argv[1][6] && r->argc >= 3) {
		sel = r->argv[2];
		first = 3;
	} else {
		return fail(r, "--port needs a port id or 'all'");
	}
	if (strcmp(sel, "all") && parse_port(sw, r, sel, one) < 0)
		return -1;
	return first;
}

/* The start of a set-* answer: {"port": ID or "all", "@key": */
static void json_port_sel(struct strbuf *b, const struct port *one, const char *key)
{
	if (one)
		sb_printf(b, "{\"port\": %u, \"%s\": ", one->id, key);
	else
		sb_printf(b, "{\"port\": \"all\", \"%s\": ", key);
}

static int cmd_set_fault(struct vswitch *sw, struct req *r)
{
	struct port *one;
	struct fault f;
	int first = parse_port_sel(sw, r, &one);

	if (first < 0)
		return -1;
	if (r->argc <= first)
		return fail(r, "usage: set-fault [--port ID|all] drop=P reorder=P corrupt=P [vcrc=P] [delay=MS] [seed=N] | set-fault [--port ID|all] clear");
	if (fault_parse(&f, r->argc - first, r->argv + first, r->err, sizeof(r->err)) < 0)
		return -1;
	if (f.vcrc && !sw->ops->link_vcrc)
		return fail(r, "vcrc= needs --link-layer ib (an Ethernet frame has no VCRC)");
	if (one) {
		one->fault = f;
		fault_start(&one->fault, one->id);
	} else {
		sw->fault_all = f;
		for (unsigned i = 0; i < sw->nactive; i++) {
			struct port *p = &sw->ports[sw->active[i]];

			p->fault = f;
			fault_start(&p->fault, p->id);
		}
	}
	if (one)
		vs_log(VS_LOG_INFO, "fault %s on port %u", f.active ? "set" : "cleared", one->id);
	else
		vs_log(VS_LOG_INFO, "fault %s on all ports", f.active ? "set" : "cleared");
	if (r->json) {
		json_port_sel(&r->out, one, "fault");
		json_fault(&r->out, &f);
		sb_printf(&r->out, "}\n");
	} else {
		if (one)
			sb_printf(&r->out, "port %u fault: ", one->id);
		else
			sb_printf(&r->out, "all ports fault: ");
		text_fault(&r->out, &f);
		sb_printf(&r->out, "\n");
	}
	return 0;
}

static void apply_psec(struct vswitch *sw, struct port *p, const struct fdb_policy *ps)
{
	bool pin_on = !p->psec.pin && ps->pin;

	if (p->psec.pin && !ps->pin)
		fdb_unpin_port(sw->fdb, (uint32_t)p->idx);
	p->psec = *ps;
	if (pin_on)
		port_macs_reserve(sw, p);
}

/* "mac=MAC[,MAC...]" or "mac=none" into keys; the count, or -1. */
static int parse_mac_list(struct req *r, const char *a, uint64_t *keys)
{
	const char *s = a + 4;
	int n = 0;

	if (!strcmp(s, "none"))
		return 0;
	for (;;) {
		const char *e = strchr(s, ',');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		uint64_t key;
		bool dup = false;

		if (!mac_parse(s, len, &key))
			return fail(r, "bad '%s': want mac=MAC[,MAC...] (unicast xx:xx:xx:xx:xx:xx) or mac=none",
				    a);
		for (int i = 0; i < n; i++)
			dup |= keys[i] == key;
		if (!dup) {
			if (n == VS_PORT_MACS_MAX)
				return fail(r, "bad '%s': at most %u MACs", a, VS_PORT_MACS_MAX);
			keys[n++] = key;
		}
		if (!e)
			return n;
		s = e + 1;
	}
}

/*
 * set-port-security [--port ID|all] [pin=on|off] [macs=N] [mac=LIST]:
 * pinned MACs stay on their port (a frame from another port with that
 * source is dropped) and never age; a port may learn at most N MACs (0 =
 * any number). The learned entries are kept; a lower limit refuses new
 * ones. mac=MAC[,MAC...] (one port only, implies pin=on) gives the port a
 * static list, replacing what it learned or its QEMU gave it: it may send
 * only from those and they are pinned to it at once; mac=none drops the
 * list (first-come pinning again).
 */
static int cmd_set_port_security(struct vswitch *sw, struct req *r)
{
	static const char usage[] =
		"usage: set-port-security [--port ID|all] [pin=on|off] [macs=N] [mac=MAC[,MAC...]|mac=none]";
	struct port *one;
	int first = parse_port_sel(sw, r, &one);
	struct fdb_policy ps;
	uint64_t keys[VS_PORT_MACS_MAX];
	int nkeys = -1;
	bool pin_off = false;

	if (first < 0)
		return -1;
	if (r->argc <= first)
		return fail(r, "%s", usage);
	ps = one ? one->psec : sw->psec_all;
	for (int i = first; i < r->argc; i++) {
		const char *a = r->argv[i];
		char *end;
		unsigned long v;

		if (!strcmp(a, "pin=on")) {
			ps.pin = true;
		} else if (!strcmp(a, "pin=off")) {
			ps.pin = false;
			pin_off = true;
		} else if (!strncmp(a, "macs=", 5)) {
			errno = 0;
			v = strtoul(a + 5, &end, 10);
			if (errno || end == a + 5 || *end || a[5] == '-' || v > FDB_MAX)
				return fail(r, "bad '%s': macs is a number in 0..%u (0 = no limit)", a,
					    FDB_MAX);
			ps.limit = (unsigned)v;
		} else if (!strncmp(a, "mac=", 4)) {
			if (!one)
				return fail(r, "mac= is a setting of one port: give --port ID");
			nkeys = parse_mac_list(r, a, keys);
			if (nkeys < 0)
				return -1;
		} else {
			return fail(r, "bad '%s': want pin=on|off, macs=N or mac=MAC[,MAC...]", a);
		}
	}
	if (nkeys > 0 && pin_off)
		return fail(r, "a MAC list needs pin=on");
	if (nkeys > 0)
		ps.pin = true;
	if (one) {
		apply_psec(sw, one, &ps);
		if (nkeys >= 0)
			port_macs_set(sw, one, keys, (unsigned)nkeys);
		vs_log(VS_LOG_INFO, "port security of port %u: pin %s, macs %u, %u %s MACs", one->id,
		       ps.pin ? "on" : "off", ps.limit, one->nmacs, macs_from_name[one->macs_from]);
	} else {
		sw->psec_all = ps;
		for (unsigned i = 0; i < sw->nactive; i++)
			if (!sw->ports[sw->active[i]].kind->uplink)
				apply_psec(sw, &sw->ports[sw->active[i]], &ps);
		vs_log(VS_LOG_INFO, "port security of all ports but TAP uplinks: pin %s, macs %u",
		       ps.pin ? "on" : "off", ps.limit);
	}
	if (r->json) {
		json_port_sel(&r->out, one, "port_security");
		json_psec(&r->out, &ps);
		if (one) {
			sb_printf(&r->out, ", ");
			json_assigned_macs(&r->out, one);
		}
		sb_printf(&r->out, "}\n");
	} else {
		sb_printf(&r->out, "%s port security: pin %s, macs %u%s\n",
			  one ? "port" : "all ports", ps.pin ? "on" : "off", ps.limit,
			  ps.limit ? "" : " (no limit)");
		if (one)
			text_assigned_macs(&r->out, one);
	}
	return 0;
}

/*
 * set-qos [--port ID|all] ARG...: traffic classes (qos.c). The arguments
 * apply in order to the port's settings (or, for all, to those of ports
 * added later, then copied to every port); a bad one changes nothing.
 */
static int cmd_set_qos(struct vswitch *sw, struct req *r)
{
	struct port *one;
	int first = parse_port_sel(sw, r, &one);
	struct qos q;

	if (first < 0)
		return -1;
	if (!sw->ops->traffic_classes)
		return fail(r, "set-qos: this forwarding mode has no traffic classes");
	if (r->argc <= first)
		return fail(r, "usage: set-qos [--port ID|all] [reset] [strict=T,..|all|none] [weights=T:W,..] [lossless=T,..|all|none] [map=P:T,..] [dscp=D:P,..|default]");
	q = one ? one->qos : sw->qos_all;
	if (qos_parse(&q, r->argc - first, r->argv + first, r->err, sizeof(r->err)) < 0)
		return -1;
	if (one) {
		one->qos = q;
	} else {
		sw->qos_all = q;
		for (unsigned i = 0; i < sw->nactive; i++)
			sw->ports[sw->active[i]].qos = q;
	}
	struct strbuf t = { 0 };

	qos_text(&t, &q);
	if (one)
		vs_log(VS_LOG_INFO, "qos of port %u: %s", one->id, t.s);
	else
		vs_log(VS_LOG_INFO, "qos of all ports: %s", t.s);
	if (r->json) {
		json_port_sel(&r->out, one, "qos");
		qos_json(&r->out, &q);
		sb_printf(&r->out, "}\n");
	} else {
		sb_printf(&r->out, "%s qos: %s\n", one ? "port" : "all ports", t.s);
	}
	sb_free(&t);
	return 0;
}

/*
 * set-qos-trust [--port ID|all] [pcp|dscp|sl|none] [max-prio=N]: what a
 * port's ingress priority comes from (qos_trust.c; the modes its link
 * layer offers); for all, also ports added later. A bad argument changes
 * nothing.
 */
static int cmd_set_qos_trust(struct vswitch *sw, struct req *r)
{
	struct port *one;
	int first = parse_port_sel(sw, r, &one);
	struct qos_trust t;
	struct strbuf txt = { 0 };

	if (first < 0)
		return -1;
	if (!sw->ops->traffic_classes)
		return fail(r, "set-qos-trust: this forwarding mode has no traffic classes");
	if (r->argc <= first)
		return fail(r, "usage: set-qos-trust [--port ID|all] [pcp|dscp|sl|none] [max-prio=N]");
	t = one ? one->trust : sw->trust_all;
	if (qos_trust_parse(&t, sw->ops->trust_modes, r->argc - first, r->argv + first, r->err,
			    sizeof(r->err)) < 0)
		return -1;
	if (one) {
		one->trust = t;
	} else {
		sw->trust_all = t;
		for (unsigned i = 0; i < sw->nactive; i++)
			sw->ports[sw->active[i]].trust = t;
	}
	qos_trust_text(&txt, &t);
	if (one)
		vs_log(VS_LOG_INFO, "qos trust of port %u: %s", one->id, txt.s);
	else
		vs_log(VS_LOG_INFO, "qos trust of all ports: %s", txt.s);
	if (r->json) {
		json_port_sel(&r->out, one, "trust");
		qos_trust_json(&r->out, &t);
		sb_printf(&r->out, "}\n");
	} else {
		sb_printf(&r->out, "%s qos trust: %s\n", one ? "port" : "all ports", txt.s);
	}
	sb_free(&txt);
	return 0;
}

/* show-qos [PORT]: settings and per-class counters. */
static int cmd_show_qos(struct vswitch *sw, struct req *r)
{
	struct strbuf *b = &r->out;
	struct port *one = NULL, *p = NULL;

	if (r->argc > 2)
		return fail(r, "usage: show-qos [PORT]");
	if (!sw->ops->traffic_classes)
		return fail(r, "show-qos: this forwarding mode has no traffic classes");
	if (r->argc == 2 && parse_port(sw, r, r->argv[1], &one) < 0)
		return -1;
	if (r->json) {
		sb_printf(b, "{\"qos_all\": ");
		qos_json(b, &sw->qos_all);
		sb_printf(b, ", \"trust_all\": ");
		qos_trust_json(b, &sw->trust_all);
		sb_printf(b, ", \"ports\": [");
	} else {
		sb_printf(b, "new ports: ");
		qos_text(b, &sw->qos_all);
		sb_printf(b, "\nnew ports trust: ");
		qos_trust_text(b, &sw->trust_all);
		sb_printf(b, "\n");
	}
	for (unsigned n = 0; n < (one ? 1 : sw->nactive); n++) {
		p = one ? one : next_port_by_id(sw, p ? p->id : 0);
		if (r->json) {
			sb_printf(b, "%s{\"id\": %u, \"qos\": ", n ? ", " : "", p->id);
			qos_json(b, &p->qos);
			sb_printf(b, ", \"trust\": ");
			qos_trust_json(b, &p->trust);
			sb_printf(b, ", \"prio_capped\": %llu, \"classes\": ",
				  (unsigned long long)p->c.prio_capped);
			json_classes(b, p);
			sb_printf(b, "}");
		} else {
			sb_printf(b, "port %u (%s %s): ", p->id, p->kind->name, p->peer);
			qos_text(b, &p->qos);
			sb_printf(b, "\n  trust ");
			qos_trust_text(b, &p->trust);
			sb_printf(b, ", prio_capped %llu\n", (unsigned long long)p->c.prio_capped);
			text_classes(b, p);
		}
	}
	if (r->json)
		sb_printf(b, "]}\n");
	return 0;
}

static int cmd_capture(struct vswitch *sw, struct req *r)
{
	if (r->argc >= 2 && !strcmp(r->argv[1], "stop")) {
		if (r->argc != 2)
			return fail(r, "usage: capture stop");
		if (!sw->cap)
			return fail(r, "no capture is running");
		char path[4096];

		snprintf(path, sizeof(path), "%s", capture_path(sw->cap));
		uint64_t n = capture_stop(sw->cap);

		sw->cap = NULL;
		vs_log(VS_LOG_INFO, "capture to %s stopped: %llu frames", path, (unsigned long long)n);
		if (r->json) {
			sb_printf(&r->out, "{\"file\": ");
			sb_json_str(&r->out, path);
			sb_printf(&r->out, ", \"frames\": %llu}\n", (unsigned long long)n);
		} else {
			sb_printf(&r->out, "capture stopped: %llu frames in %s\n", (unsigned long long)n, path);
		}
		return 0;
	}
	if (r->argc < 3 || r->argc > 4 || strcmp(r->argv[1], "start"))
		return fail(r, "usage: capture start FILE [PORT] | capture stop");
	struct port *p = NULL;

	if (r->argv[2][0] != '/')
		return fail(r, "capture file must be an absolute path");
	if (r->argc == 4 && parse_port(sw, r, r->argv[3], &p) < 0)
		return -1;
	if (sw->cap)
		return fail(r, "a capture to %s is running; stop it first", capture_path(sw->cap));
	sw->cap = capture_start(r->argv[2], p ? p->id : 0,
				sw->ops->capture_linktype,
				r->err, sizeof(r->err));
	if (!sw->cap)
		return -1;
	vs_log(VS_LOG_INFO, "capture to %s started (port %u)", r->argv[2], p ? p->id : 0);
	if (r->json) {
		sb_printf(&r->out, "{\"file\": ");
		sb_json_str(&r->out, r->argv[2]);
		sb_printf(&r->out, ", \"port\": %u}\n", p ? p->id : 0);
	} else {
		sb_printf(&r->out, "capturing %s to %s\n", p ? "one port" : "all ports", r->argv[2]);
	}
	return 0;
}

static int cmd_add_dgram(struct vswitch *sw, struct req *r)
{
	struct port *p;

	if (r->argc != 3)
		return fail(r, "usage: add-dgram SWITCH_PATH QEMU_PATH");
	if (!sw->ops->ethernet_ports)
		return fail(r, "add-dgram: dgram ports carry Ethernet; not in InfiniBand mode");
	if (r->argv[1][0] != '/' || r->argv[2][0] != '/')
		return fail(r, "add-dgram paths must be absolute");
	/* A control client must not make the switch bind or unlink anywhere. */
	if (!same_dir(r->argv[1], sw->cfg.socket_path))
		return fail(r, "add-dgram: %s must be in the directory of %s", r->argv[1],
			    sw->cfg.socket_path);
	p = dgram_add(sw, r->argv[1], r->argv[2], r->err, sizeof(r->err));
	if (!p)
		return -1;
	if (r->json)
		sb_printf(&r->out, "{\"port\": %u}\n", p->id);
	else
		sb_printf(&r->out, "added dgram port %u\n", p->id);
	return 0;
}

static int cmd_add_stream(struct vswitch *sw, struct req *r)
{
	int li;

	if (r->argc != 2)
		return fail(r, "usage: add-stream PATH");
	if (!sw->ops->ethernet_ports)
		return fail(r, "add-stream: stream ports carry Ethernet; not in InfiniBand mode");
	if (r->argv[1][0] != '/')
		return fail(r, "add-stream path must be absolute");
	/* A control client must not make the switch bind or unlink anywhere. */
	if (!same_dir(r->argv[1], sw->cfg.socket_path))
		return fail(r, "add-stream: %s must be in the directory of %s", r->argv[1],
			    sw->cfg.socket_path);
	li = stream_listen_add(sw, r->argv[1], r->err, sizeof(r->err));
	if (li < 0)
		return -1;
	if (r->json) {
		sb_printf(&r->out, "{\"stream\": ");
		sb_json_str(&r->out, sw->stream_path[li]);
		sb_printf(&r->out, "}\n");
	} else {
		sb_printf(&r->out, "listening for -netdev stream on %s\n", sw->stream_path[li]);
	}
	return 0;
}

static int cmd_add_tap(struct vswitch *sw, struct req *r)
{
	struct port *p;

	if (r->argc != 2)
		return fail(r, "usage: add-tap IFNAME");
	if (!sw->ops->ethernet_ports)
		return fail(r, "add-tap: TAP ports carry Ethernet; not in InfiniBand mode");
	p = tap_add(sw, r->argv[1], r->err, sizeof(r->err));
	if (!p)
		return -1;
	if (r->json)
		sb_printf(&r->out, "{\"port\": %u, \"ifname\": ", p->id);
	else
		sb_printf(&r->out, "added TAP port %u (%s)\n", p->id, p->peer);
	if (r->json) {
		sb_json_str(&r->out, p->peer);
		sb_printf(&r->out, "}\n");
	}
	return 0;
}

static int cmd_ib_table(struct vswitch *sw, struct req *r)
{
	if (r->argc != 1)
		return fail(r, "usage: %s", r->argv[0]);
	if (!sw->ops->ctl_table)
		return fail(r, "%s: the switch is not in InfiniBand mode", r->argv[0]);
	return sw->ops->ctl_table(sw, &r->out, r->argv[0], r->json);
}

/*
 * del-port PORT: hang up a guest's (SOCK_SEQPACKET) port now, as if its
 * peer had closed: its MACs are free at once for another port (a migrated
 * guest's new QEMU) and the frames it sent before still go out.
 * handover PORT [MS] [pid=PID]: the same for a guest that moves to a new
 * QEMU; in IB mode its IB port also stays as the SM left it for the guest
 * port of process PID (the destination QEMU; without it: the next one)
 * that connects within MS ms (default 10000), see ib_port_handover().
 */
static int cmd_del_port(struct vswitch *sw, struct req *r)
{
	bool handover = !strcmp(r->argv[0], "handover");
	unsigned ms = 10000, pid = 0;
	int argc = r->argc;
	struct port *p;

	if (handover && argc >= 3 && !strncmp(r->argv[argc - 1], "pid=", 4)) {
		char *end, *s = r->argv[--argc] + 4;
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || *end || *s == '-' || v == 0 || v > 0x7fffffff)
			return fail(r, "bad pid '%s'", s);
		pid = (unsigned)v;
	}
	if (argc != 2 && !(handover && argc == 3))
		return fail(r, handover ? "usage: handover PORT [MS] [pid=PID]" :
					  "usage: del-port PORT");
	if (parse_port(sw, r, r->argv[1], &p) < 0)
		return -1;
	if (argc == 3 && parse_ms(r, r->argv[2], &ms) < 0)
		return -1;
	if (!p->kind->guest_conn)
		return fail(r, "port %u is a %s port: only guest ports can be removed", p->id,
			    p->kind->name);
	vs_log(VS_LOG_INFO, "port %u (%s) %s over the control socket", p->id, p->peer,
	       handover ? "handed over" : "removed");
	if (handover && sw->ops->port_handover)
		sw->ops->port_handover(sw, p, ms, (int)pid);
	shutdown(p->fd, SHUT_RDWR);
	dp_port_hangup(sw, p);
	if (r->json)
		sb_printf(&r->out, "{\"removed\": %u}\n", p->id);
	else
		sb_printf(&r->out, "port %u removed\n", p->id);
	return 0;
}

/* sm-port add|del IB_PORT, sm-port list: the ports a subnet manager may manage from. */
static int cmd_sm_port(struct vswitch *sw, struct req *r)
{
	char err[128];

	if (!sw->ops->ctl_sm_port)
		return fail(r, "sm-port: the switch is not in InfiniBand mode");
	if (sw->ops->ctl_sm_port(sw, &r->out, r->argc, r->argv, r->json, err, sizeof(err)) < 0)
		return fail(r, "%s", err);
	return 0;
}

static int cmd_shutdown(struct vswitch *sw, struct req *r)
{
	if (r->argc != 1)
		return fail(r, "usage: shutdown");
	vs_log(VS_LOG_INFO, "shutdown requested over the control socket");
	sw->stop = true;
	sb_printf(&r->out, r->json ? "{\"shutdown\": true}\n" : "shutting down\n");
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct vswitch *, struct req *);
} commands[] = {
	{ "add-dgram", cmd_add_dgram }, { "add-tap", cmd_add_tap }, { "add-stream", cmd_add_stream },
	{ "capture", cmd_capture }, { "counters", cmd_counters }, { "del-port", cmd_del_port },
	{ "handover", cmd_del_port },
	{ "fault", cmd_fault },		{ "fdb", cmd_fdb },	      { "set-fault", cmd_set_fault },
	{ "set-port-security", cmd_set_port_security },
	{ "set-qos", cmd_set_qos },	{ "show-qos", cmd_show_qos },
	{ "set-qos-trust", cmd_set_qos_trust },
	{ "lft", cmd_ib_table },	{ "mft", cmd_ib_table },
	{ "show", cmd_show },		{ "sm-port", cmd_sm_port },
	{ "shutdown", cmd_shutdown },
};

/* Parse a complete request in c->in and build the response in c->out. */
static void handle(struct vswitch *sw, struct ctl_conn *c)
{
	struct req r = { 0 };
	char *line, *save = NULL;
	int rc = -1;
	int nline = 0;

	if (memchr(c->in, 0, c->inlen)) {
		fail(&r, "request contains NUL bytes");
		goto out;
	}
	for (line = strtok_r(c->in, "\n", &save); line; line = strtok_r(NULL, "\n", &save), nline++) {
		if (nline == 0) {
			if (strcmp(line, CTL_MAGIC)) {
				fail(&r, "bad protocol header (want '%s')", CTL_MAGIC);
				goto out;
			}
		} else if (nline == 1) {
			if (!strcmp(line, "json"))
				r.json = true;
			else if (strcmp(line, "text")) {
				fail(&r, "bad output format '%s' (want json or text)", line);
				goto out;
			}
		} else {
			if (r.argc == CTL_MAX_ARGS) {
				fail(&r, "too many arguments");
				goto out;
			}
			r.argv[r.argc++] = line;
		}
	}
	if (nline < 2 || !r.argc) {
		fail(&r, "empty request");
		goto out;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!strcmp(r.argv[0], commands[i].name)) {
			rc = commands[i].fn(sw, &r);
			goto out;
		}
	}
	fail(&r, "unknown command '%s'", r.argv[0]);
out:;
	struct strbuf o = { 0 };

	if (rc == 0) {
		sb_printf(&o, "OK\n%.*s", (int)r.out.len, r.out.s ? r.out.s : "");
	} else {
		sb_printf(&o, "ERR %s\n", r.err);
		vs_log(VS_LOG_DEBUG, "control request failed: %s", r.err);
	}
	sb_free(&r.out);
	c->out = o.s;
	c->outlen = o.len;
	c->outoff = 0;
}

static void conn_write(struct vswitch *sw, struct ctl_conn *c)
{
	while (c->outoff < c->outlen) {
		ssize_t n = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct epoll_event ev = { .events = EPOLLOUT,
							  .data.u64 = ev_tag(EV_CTL_CONN,
									     (uint32_t)(c - sw->ctl)) };

				epoll_ctl(sw->epfd, EPOLL_CTL_MOD, c->fd, &ev);
				return;
			}
			break;
		}
		c->outoff += (size_t)n;
	}
	conn_close(sw, c);
}

void ctl_conn_event(struct vswitch *sw, unsigned idx, uint32_t events)
{
	struct ctl_conn *c = &sw->ctl[idx];

	if (!c->used)
		return;
	if (c->out) {
		conn_write(sw, c);
		return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	if (!c->in) {
		c->in = malloc(CTL_MAX_REQUEST + 1);
		if (!c->in) {
			conn_close(sw, c);
			return;
		}
	}
	for (;;) {
		ssize_t n = recv(c->fd, c->in + c->inlen, CTL_MAX_REQUEST - c->inlen, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			conn_close(sw, c);
			return;
		}
		if (n == 0)
			break;	/* the client finished its request */
		c->inlen += (size_t)n;
		if (c->inlen == CTL_MAX_REQUEST) {
			static const char big[] = "ERR request too large\n";

			c->out = malloc(sizeof(big));
			if (!c->out) {
				conn_close(sw, c);
				return;
			}
			memcpy(c->out, big, sizeof(big));
			c->outlen = sizeof(big) - 1;
			conn_write(sw, c);
			return;
		}
	}
	c->in[c->inlen] = 0;
	handle(sw, c);
	conn_write(sw, c);
}
