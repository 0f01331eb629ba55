// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: the switch's frame path (receive, ingress faults, learning,
 * forwarding, egress batching, back-pressure, timers, hangup) on real
 * socketpair ports.
 *
 * Input: a 6-byte setup, then operations.
 *   setup: ports-2 (low 2 bits) | pin (4) | small queue (8) | capture (16) |
 *          InfiniBand mode (32: --link-layer ib, each port an IB port),
 *          traffic classes (64, Ethernet: strict classes d[2], lossy ones
 *          d[3], DWRR weights 1..8 from d[4] and d[5], priority p to class
 *          d[4] >> (p % 4) & 7, trust mode d[1] % 3, priority cap
 *          d[5] >> 5),
 *          MAC limit, drop, corrupt, reorder (percent = byte * 100 / 255
 *          for each) and delay (ms) of the faults of every port.
 *   op byte: low 3 bits the operation, the rest the port.
 *     0-3: send a frame: 2 length bytes, then that many bytes; in IB mode
 *          1 and 3 first make its PktLen and VCRC right (else nearly every
 *          frame would stop at the VCRC check)
 *     4:   the switch reads the port (EPOLLIN)
 *     5:   the port's peer reads everything, the switch may send (EPOLLOUT)
 *     6:   time passes (next byte: ms), timers and housekeeping run
 *     7:   the port's peer hangs up
 */
#include "vswitch_fixture.h"

#include "capture.h"
#include "cnuas_ib_link.h"
#include "ib.h"

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Each port's class queues add up to its queue length and fit their rings. */
static void check_queues(struct vswitch *sw)
{
	for (unsigned i = 0; i < sw->nactive; i++) {
		const struct port *p = &sw->ports[sw->active[i]];
		uint32_t sum = 0;

		for (unsigned tc = 0; tc < VS_NUM_TC; tc++) {
			if (p->tq[tc].len > p->qmask + 1)
				abort();
			sum += p->tq[tc].len;
		}
		if (sum != p->qlen)
			abort();
	}
}

static void pump(struct vsf *v)
{
	int timeout;

	dp_flush(&v->sw);
	dp_timers(&v->sw, &timeout);
	dp_housekeeping(&v->sw);
	check_queues(&v->sw);
}

static struct port *live(struct vsf *v, unsigned i)
{
	struct port *p = v->port[i];

	return p && p->used && !p->closing ? p : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct vsf v;
	char err[128];
	size_t off = 6;

	if (n < off)
		return 0;
	vsf_init(&v, 2 + (d[0] & 3), d[0] & 8 ? 16 : 256, "/nonexistent/switch.sock");
	struct vswitch *sw = &v.sw;

	sw->psec_all.pin = d[0] & 4;
	sw->psec_all.limit = d[1] & 7;
	if (d[0] & 16)
		sw->cap = capture_start("/fuzz.pcap", d[1] >> 4 & 3, CAPTURE_LINKTYPE_ETHERNET, err,
					sizeof(err));
	if (d[0] & 32) {
		if (ib_init(sw, 8, 0, false) < 0)
			return 0;
		for (unsigned i = 0; i < v.nports; i++)
			ib_port_attach(sw, v.port[i]);
	}
	sw->fault_all.drop = (uint32_t)d[2] << 24;
	sw->fault_all.corrupt = (uint32_t)d[3] << 24;
	sw->fault_all.reorder = (uint32_t)d[4] << 24;
	sw->fault_all.delay_ms = d[5] & 15;
	sw->fault_all.seed = d[5];
	sw->fault_all.active = sw->fault_all.drop || sw->fault_all.corrupt ||
			       sw->fault_all.reorder || sw->fault_all.delay_ms;
	if ((d[0] & 64) && !sw->ib) {
		struct qos *q = &sw->qos_all;

		q->strict = d[2];
		q->lossless = (uint8_t)~d[3];
		for (unsigned t = 0; t < VS_NUM_TC; t++) {
			q->weight[t] = (uint16_t)(1 + ((d[4 + t / 4] >> (2 * (t % 4))) & 7));
			q->prio2tc[t] = (uint8_t)(d[4] >> (t % 4) & 7);
		}
		sw->trust_all.mode = (uint8_t)(d[1] % QOS_TRUST_MODES);
		sw->trust_all.max_prio = (uint8_t)(d[5] >> 5);
	}
	for (unsigned i = 0; i < v.nports; i++) {
		v.port[i]->qos = sw->qos_all;
		v.port[i]->trust = sw->trust_all;
		v.port[i]->psec = sw->psec_all;
		v.port[i]->fault = sw->fault_all;
		fault_start(&v.port[i]->fault, v.port[i]->id);
	}

	while (off < n) {
		unsigned op = d[off] & 7, i = (d[off] >> 3) % v.nports;
		struct port *p = live(&v, i);

		off++;
		switch (op) {
		case 0: case 1: case 2: case 3: {
			size_t len;

			if (off + 2 > n)
				goto out;
			len = (size_t)d[off] << 8 | d[off + 1];
			off += 2;
			if (len > n - off)
				len = n - off;
			const uint8_t *f = d + off;
			static uint8_t sealed[CNUAS_IB_MAX_FRAME];

			if (sw->ib && (op & 1) && len >= CNUAS_LRH_LEN + CNUAS_VCRC_LEN &&
			    len <= sizeof(sealed) && len % 4 == 2) {
				memcpy(sealed, f, len);
				sealed[4] = (uint8_t)((sealed[4] & 0xf8) | (((len - 2) / 4) >> 8 & 7));
				sealed[5] = (uint8_t)((len - 2) / 4);
				cnuas_vcrc_put(&sw->ib->vcrc_table, sealed, (unsigned int)len - 2);
				f = sealed;
			}
			if (v.peer[i] >= 0 && send(v.peer[i], f, len, MSG_DONTWAIT) < 0) {
				/* the switch stopped reading: back-pressure, try again later */
			}
			off += len;
			break;
		}
		case 4:
			if (p)
				dp_port_event(sw, p, EPOLLIN);
			break;
		case 5:
			vsf_drain_peer(&v, i);
			if (p)
				dp_port_event(sw, p, EPOLLOUT);
			break;
		case 6:
			if (off < n)
				sw->now += (uint64_t)d[off++] * 1000000ull;
			break;
		case 7:
			if (v.peer[i] >= 0) {
				close(v.peer[i]);
				v.peer[i] = -1;
			}
			if (p)
				dp_port_event(sw, p, EPOLLIN | EPOLLHUP | EPOLLRDHUP);
			break;
		}
		pump(&v);
	}
out:
	/* let every port drain, then everything delayed come out */
	for (unsigned round = 0; round < 4; round++) {
		sw->now += 10 * 1000000ull;
		for (unsigned i = 0; i < v.nports; i++) {
			struct port *p = live(&v, i);

			vsf_drain_peer(&v, i);
			if (p)
				dp_port_event(sw, p, EPOLLIN | EPOLLOUT);
		}
		pump(&v);
	}
	vsf_fini(&v);
	return 0;
}
