// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * The data path: receive batches, ingress faults, learning, forwarding,
 * egress batching and lossless back-pressure.
 *
 * What a frame is forwarded to is for the forwarding mode (fwd_mode.h:
 * eth_fwd.c, ib_fwd.c); it hands frames back through dp.h.
 *
 * Back-pressure. Every port has a bounded egress queue (queue_frames for
 * known unicast). When a known-unicast frame's destination is full, the
 * ingress port stops: the frame (and the rest of its receive batch) is
 * held, we stop reading that socket, the kernel socket buffers fill and
 * the sender sees EAGAIN. When the destination drains to low_water the
 * held frames move on and reading resumes. Other ports are untouched, so
 * a slow port never stalls traffic that does not go to it.
 *
 * Flooded frames (broadcast, multicast, unknown unicast) never pause the
 * ingress port: a full port must not stall everyone. They may use extra
 * headroom (flood_cap = 2 * queue_frames) in each egress queue; a copy for
 * a port that is beyond even that is dropped and counted on that port as
 * drop_flood_overflow. Known unicast is never dropped for slowness.
 *
 * Traffic classes (qos.c). Each port has one egress queue per class, each
 * bounded as above on its own, so a full bulk class never holds back
 * another class. Back-pressure is per class: a frame for a full lossless
 * class pauses its ingress port (our vNIC has one TX ring, so pausing the
 * whole sender is as close to PFC as it gets); a frame for a full lossy
 * class is dropped and counted (drop_tc_full) and never pauses anyone.
 */
#include "capture.h"
#include "dp.h"
#include "fdb.h"
#include "fwd_mode.h"
#include "port_io.h"
#include "port_kind.h"
#include "shm_ring.h"
#include "switch.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

static inline void cap_port(struct vswitch *sw, const struct port *p, const uint8_t *d, uint32_t len)
{
	if (sw->cap && capture_port(sw->cap) == p->id)
		capture_frame(sw->cap, d, len);
}

/* A receive buffer now queued somewhere: leave it there, take a new one. */
static void rx_renew(struct vswitch *sw, unsigned i)
{
	struct pkt *k = sw->rx_pkt[i];

	k->rx = false;
	pkt_put(k);
	sw->rx_pkt[i] = pkt_alloc_rx();
	sw->rx_iov[i].iov_base = sw->rx_pkt[i]->data;
}

static void runq_push(struct vswitch *sw, struct port *p)
{
	if (!p->runq_queued) {
		p->runq_queued = true;
		sw->runq[sw->nrunq++] = p->idx;
	}
}

/* Let the ports paused on one of d's classes in tcs move again. */
static void unblock_classes(struct vswitch *sw, struct port *d, unsigned tcs)
{
	for (unsigned i = 0; i < sw->nactive && d->n_waiters; i++) {
		struct port *p = &sw->ports[sw->active[i]];

		if (p->blocked_on == d->idx && (tcs & (1u << p->blocked_tc))) {
			p->blocked_on = -1;
			d->n_waiters--;
			runq_push(sw, p);
		}
	}
	d->wait_tcs &= (uint8_t)~tcs;
	if (!d->n_waiters)
		d->wait_tcs = 0;
}

void dp_unblock_waiters(struct vswitch *sw, struct port *d)
{
	unblock_classes(sw, d, 0xff);
}

/* Frames of class tc waiting for d: queued and in this pass's batch. */
static inline uint32_t tc_depth(const struct port *d, unsigned tc)
{
	return d->tq[tc].len + d->pend_n[tc];
}

static void maybe_wake(struct vswitch *sw, struct port *d)
{
	unsigned tcs = 0;

	if (!d->n_waiters)
		return;
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++)
		if ((d->wait_tcs & (1u << tc)) && tc_depth(d, tc) <= sw->low_water)
			tcs |= 1u << tc;
	if (tcs || !d->wait_tcs)
		unblock_classes(sw, d, tcs ? tcs : 0xff);
}

static void tx_done(struct vswitch *sw, struct port *d, unsigned tc, const void *data, uint32_t len)
{
	d->c.tx_frames++;
	d->c.tx_bytes += len;
	d->tcc[tc].tx_frames++;
	d->tcc[tc].tx_bytes += len;
	if (sw->cap)
		cap_port(sw, d, data, len);
}

/* Frames wait for d: if nothing will say when there is room (dgram), try on a timer. */
static void retry_later(struct vswitch *sw, struct port *d)
{
	if (!d->io->tx_timer || d->retry_due)
		return;
	d->retry_due = sw->now + VS_DGRAM_RETRY_NS;
	sw->timers = true;
}

enum send_verdict { SEND_RETRY, SEND_WAIT, SEND_DROP_ALL };

/*
 * What to do after a send to d failed with err; SEND_DROP_ALL: what could
 * not go is dropped and counted in *lost (the port's kind says which).
 */
static enum send_verdict send_error(struct vswitch *sw, struct port *d, int err, uint64_t **lost)
{
	if (err == EINTR)
		return SEND_RETRY;
	if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
		retry_later(sw, d);
		return SEND_WAIT;
	}
	*lost = d->kind->send_failed(d, err);
	return SEND_DROP_ALL;
}

/* Send the frames collected for d in this pass; queue what does not fit. */
static void flush_port(struct vswitch *sw, struct port *d)
{
	uint32_t n = d->npend, done = 0;

	while (done < n) {
		int r = d->io->send(d, &d->pend_msg[done], n - done);

		if (r > 0) {
			for (uint32_t i = done; i < done + (uint32_t)r; i++) {
				tx_done(sw, d, d->pend_tc[i], d->pend_iov[i].iov_base,
					(uint32_t)d->pend_iov[i].iov_len);
				if (d->pend_pkt[i])
					pkt_put(d->pend_pkt[i]);
			}
			done += (uint32_t)r;
			continue;
		}
		uint64_t *lost;
		enum send_verdict v = send_error(sw, d, r < 0 ? errno : EAGAIN, &lost);

		if (v == SEND_RETRY)
			continue;
		if (v == SEND_DROP_ALL) {
			*lost += n - done;
			for (uint32_t i = done; i < n; i++)
				if (d->pend_pkt[i])
					pkt_put(d->pend_pkt[i]);
			done = n;
		}
		break;
	}
	/* leftovers keep their order at the head of their (empty) queues */
	for (uint32_t i = done; i < n; i++) {
		port_queue_push(d, d->pend_tc[i], pkt_keep(d->pend_pkt[i]));
		pkt_put(d->pend_pkt[i]);
	}
	d->npend = 0;
	memset(d->pend_n, 0, sizeof(d->pend_n));
	if (done < n || d->stx_len) {
		if (done < n)
			retry_later(sw, d);
		port_update_events(sw, d);
	}
	maybe_wake(sw, d);
}

static void drop_all_queued(struct port *d, uint64_t *lost)
{
	*lost += d->qlen;
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++) {
		struct tc_queue *t = &d->tq[tc];

		while (t->len) {
			pkt_put(t->q[t->head]);
			t->head = (t->head + 1) & d->qmask;
			t->len--;
		}
	}
	d->qlen = 0;
}

/*
 * Send from d's egress queues (EPOLLOUT, or the dgram retry timer), in
 * the order the class scheduler picks. A batch is built on a copy of the
 * scheduler state; if the peer takes only part of it, the real state
 * replays the picks of the frames that went (the same queues give the same
 * picks), so the rest are picked again next time, as if never chosen.
 */
static void tx_drain(struct vswitch *sw, struct port *d)
{
	struct mmsghdr msg[VS_BATCH];
	struct iovec iov[VS_BATCH];
	uint8_t pick[VS_BATCH];

	/* a stream port finishes the frame it sent part of first */
	if (d->stx_len && stream_flush_rest(d) < 0) {
		int err = errno;
		uint64_t *lost;

		if (send_error(sw, d, err, &lost) == SEND_DROP_ALL) {
			d->stx_len = d->stx_off = 0;
			drop_all_queued(d, lost);
		}
		port_update_events(sw, d);
		maybe_wake(sw, d);
		return;
	}
	while (d->qlen) {
		uint32_t n = d->qlen < VS_BATCH ? d->qlen : VS_BATCH;
		uint32_t taken[VS_NUM_TC] = { 0 };
		struct dwrr s = d->dwrr;

		for (uint32_t i = 0; i < n; i++) {
			unsigned tc = qos_pick(d, &s, taken);
			struct tc_queue *t = &d->tq[tc];
			struct pkt *k = t->q[(t->head + taken[tc]++) & d->qmask];

			pick[i] = (uint8_t)tc;
			iov[i].iov_base = k->data;
			iov[i].iov_len = k->len;
			memset(&msg[i].msg_hdr, 0, sizeof(msg[i].msg_hdr));
			msg[i].msg_hdr.msg_iov = &iov[i];
			msg[i].msg_hdr.msg_iovlen = 1;
		}
		int r = d->io->send(d, msg, n);

		if (r <= 0) {
			uint64_t *lost;
			enum send_verdict v = send_error(sw, d, r < 0 ? errno : EAGAIN, &lost);

			if (v == SEND_RETRY)
				continue;
			if (v == SEND_DROP_ALL)
				drop_all_queued(d, lost);
			break;
		}
		if ((uint32_t)r == n) {
			d->dwrr = s;
		} else {
			memset(taken, 0, sizeof(taken));
			for (int i = 0; i < r; i++)
				taken[qos_pick(d, &d->dwrr, taken)]++;
		}
		for (int i = 0; i < r; i++) {
			struct tc_queue *t = &d->tq[pick[i]];
			struct pkt *k = t->q[t->head];

			tx_done(sw, d, pick[i], k->data, k->len);
			pkt_put(k);
			t->head = (t->head + 1) & d->qmask;
			t->len--;
			d->qlen--;
		}
		if ((uint32_t)r < n)
			break;
	}
	if (d->qlen)
		retry_later(sw, d);
	port_update_events(sw, d);
	maybe_wake(sw, d);
}

/* Hand a frame to d: straight into this pass's batch, or behind its queue. */
static void emit(struct vswitch *sw, struct port *d, unsigned tc, uint8_t *data, uint32_t len,
		 struct pkt *k)
{
	if (d->npend == VS_BATCH)
		flush_port(sw, d);
	if (d->qlen) {
		port_queue_push(d, tc, pkt_keep(k));
		retry_later(sw, d);
		port_update_events(sw, d);
		return;
	}
	uint32_t i = d->npend++;
	struct msghdr *h = &d->pend_msg[i].msg_hdr;

	d->pend_iov[i].iov_base = data;
	d->pend_iov[i].iov_len = len;
	d->pend_pkt[i] = pkt_get(k);
	d->pend_tc[i] = (uint8_t)tc;
	d->pend_n[tc]++;
	h->msg_iov = &d->pend_iov[i];
	h->msg_iovlen = 1;
	h->msg_control = NULL;
	h->msg_controllen = 0;
	h->msg_flags = 0;
	h->msg_name = NULL;	/* a dgram port's send names its peer */
	h->msg_namelen = 0;
	if (!d->dirty) {
		d->dirty = true;
		sw->dirty[sw->ndirty++] = d->idx;
	}
}

static inline bool port_gone(const struct port *d)
{
	return d->closing || d->tx_dead;
}

void dp_capture_fwd(struct vswitch *sw, const struct port *p, const uint8_t *data, uint32_t len)
{
	if (sw->cap && (capture_port(sw->cap) == 0 || capture_port(sw->cap) == p->id))
		capture_frame(sw->cap, data, len);
}

void dp_capture_own(struct vswitch *sw, const uint8_t *data, uint32_t len)
{
	if (sw->cap && capture_port(sw->cap) == 0)
		capture_frame(sw->cap, data, len);
}

bool dp_unicast(struct vswitch *sw, struct port *p, struct port *d, uint8_t *data, uint32_t len,
		struct pkt *k, unsigned prio)
{
	unsigned tc = d->qos.prio2tc[prio];

	if (port_gone(d)) {
		d->c.drop_port_closed++;
		return true;
	}
	if (tc_depth(d, tc) >= sw->cfg.queue_frames) {
		if (!(d->qos.lossless & (1u << tc))) {
			d->c.drop_tc_full++;
			d->tcc[tc].drop_tc_full++;
			return true;
		}
		p->blocked_on = d->idx;
		p->blocked_tc = tc;
		d->n_waiters++;
		d->wait_tcs |= (uint8_t)(1u << tc);
		d->c.bp_caused++;
		d->tcc[tc].bp_caused++;
		p->c.bp_paused++;
		return false;
	}
	dp_capture_fwd(sw, p, data, len);
	emit(sw, d, tc, data, len, k);
	return true;
}

bool dp_flood_one(struct vswitch *sw, struct port *d, uint8_t *data, uint32_t len, struct pkt *k,
		  unsigned prio)
{
	unsigned tc = d->qos.prio2tc[prio];

	if (port_gone(d))
		return false;
	if (tc_depth(d, tc) >= sw->flood_cap) {
		d->c.drop_flood_overflow++;
		d->tcc[tc].drop_flood_overflow++;
		return false;
	}
	emit(sw, d, tc, data, len, k);
	return true;
}

static void hold_append(struct port *p, struct pkt *k)
{
	k = pkt_keep(k);
	k->next = NULL;
	if (p->hold_tail)
		p->hold_tail->next = k;
	else
		p->hold_head = k;
	p->hold_tail = k;
	p->hold_len++;
}

static void forward_or_hold(struct vswitch *sw, struct port *p, uint8_t *data, uint32_t len,
			    struct pkt *k)
{
	if (p->hold_head || p->blocked_on >= 0 || !sw->ops->forward(sw, p, data, len, k))
		hold_append(p, k);
}

/* Retry p's held frames in order until one blocks again. */
static void run_hold(struct vswitch *sw, struct port *p)
{
	while (p->hold_head && p->blocked_on < 0) {
		struct pkt *k = p->hold_head;

		if (!sw->ops->forward(sw, p, k->data, k->len, k))
			break;
		p->hold_head = k->next;
		if (!p->hold_head)
			p->hold_tail = NULL;
		p->hold_len--;
		pkt_put(k);
	}
	port_update_events(sw, p);
	if (p->closing && port_can_read(p))
		sw->need_reap = true;
}

/* Past the fault stage: delay (keeping order behind delayed frames) or forward. */
static void pass(struct vswitch *sw, struct port *p, uint8_t *data, uint32_t len, struct pkt *k,
		 uint64_t due)
{
	if (due || p->delay_head) {
		k = pkt_keep(k);
		k->due = due ? due : sw->now;
		k->next = NULL;
		if (p->delay_tail)
			p->delay_tail->next = k;
		else
			p->delay_head = k;
		p->delay_tail = k;
		p->delay_len++;
		sw->timers = true;
		return;
	}
	forward_or_hold(sw, p, data, len, k);
}

/* One valid-size frame received from p, in a receive buffer we may modify. */
static void ingress(struct vswitch *sw, struct port *p, struct pkt *rx)
{
	struct fault *f = &p->fault;
	uint8_t *data = rx->data;
	uint32_t len = rx->len;
	uint64_t due = 0;

	if (len < VS_ETH_HLEN) {
		p->c.drop_runt++;
		return;
	}
	if (f->active) {
		uint32_t rd = fault_rand(f), rc = fault_rand(f), rr = fault_rand(f);

		if (f->drop && rd < f->drop) {
			p->c.fault_drop++;
			return;
		}
		if (f->corrupt && rc < f->corrupt) {
			sw->ops->fault_corrupt(sw, f, data, len);
			p->c.fault_corrupt++;
		}
		if (f->reorder && rr < f->reorder && !p->reorder) {
			/* goes out right after the next frame from this port to the same MAC/DLID */
			p->reorder = pkt_keep(rx);
			p->reorder_due = sw->now + VS_REORDER_NS;
			p->c.fault_reorder++;
			sw->timers = true;
			return;
		}
		if (f->delay_ms) {
			due = sw->now + (uint64_t)f->delay_ms * 1000000ull;
			p->c.fault_delay++;
		}
	}
	/* to the same destination: MAC, or in IB mode DLID (LRH bytes 2-3) */
	const struct fwd_mode *m = sw->ops;
	bool release = p->reorder &&
		       !memcmp(p->reorder->data + m->dst_off, data + m->dst_off, m->dst_len);

	pass(sw, p, data, len, rx, due);
	if (release) {
		struct pkt *k = p->reorder;

		p->reorder = NULL;
		pass(sw, p, k->data, k->len, k, due);
		pkt_put(k);
	}
}

/* Read up to VS_RX_ROUNDS batches (all, when draining a closed port). */
static void port_rx(struct vswitch *sw, struct port *p)
{
	for (unsigned round = 0; port_can_read(p) && !p->eof_seen; round++) {
		if (round >= VS_RX_ROUNDS && !p->closing)
			break;
		int n = p->io->recv(sw, p, VS_BATCH);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			vs_log(VS_LOG_INFO, "port %u: receive failed: %s", p->id, strerror(errno));
			if (!p->kind->connectionless)
				p->eof_seen = true;
			break;
		}
		for (int i = 0; i < n; i++) {
			struct msghdr *h = &sw->rx_msg[i].msg_hdr;
			uint32_t len = sw->rx_msg[i].msg_len;

			if (len == 0 && p->io->rx_eof && p->io->rx_eof(p)) {
				p->eof_seen = true;
				break;
			}
			if (len == 0 || len > VS_MAX_FRAME || (h->msg_flags & MSG_TRUNC)) {
				p->c.drop_bad_size++;
				continue;
			}
			if (p->io->rx_from_peer && !p->io->rx_from_peer(sw, p, (unsigned)i)) {
				p->c.drop_foreign++;
				continue;
			}
			p->c.rx_frames++;
			p->c.rx_bytes += len;
			if (sw->ops->traffic_classes) {
				bool capped;
				unsigned prio = qos_classify(p, sw->rx_pkt[i]->data, len, &capped);

				p->c.prio_capped += capped;
				p->rx_prio_frames[prio]++;
				p->rx_prio_bytes[prio] += len;
			}
			sw->rx_pkt[i]->len = len;
			ingress(sw, p, sw->rx_pkt[i]);
		}
		/* send what this batch collected, then renew buffers still in use */
		dp_flush(sw);
		for (int i = 0; i < n; i++)
			if (sw->rx_pkt[i]->refs > 1)
				rx_renew(sw, (unsigned)i);
		if (n < VS_BATCH && !p->closing)
			break;
	}
	if (p->eof_seen && !p->closing)
		dp_port_hangup(sw, p);
	port_update_events(sw, p);
	if (p->closing)
		sw->need_reap = true;
}

void dp_flush(struct vswitch *sw)
{
	for (;;) {
		while (sw->ndirty) {
			struct port *d = &sw->ports[sw->dirty[--sw->ndirty]];

			d->dirty = false;
			if (d->npend)
				flush_port(sw, d);
		}
		if (!sw->nrunq)
			break;
		struct port *p = &sw->ports[sw->runq[--sw->nrunq]];

		if (p->used && p->runq_queued) {
			p->runq_queued = false;
			run_hold(sw, p);
		}
	}
}

/* The peer of p closed (or failed): stop sending to it, drain what it sent. */
void dp_port_hangup(struct vswitch *sw, struct port *p)
{
	if (p->closing)
		return;
	p->closing = true;
	if (sw->ops->port_detach)
		sw->ops->port_detach(sw, p);
	fdb_del_port(sw->fdb, (uint32_t)p->idx);
	port_macs_release(sw, p);
	port_drop_egress(sw, p);
	port_update_events(sw, p);
	sw->need_reap = true;
}

void dp_port_event(struct vswitch *sw, struct port *p, uint32_t events)
{
	if (events & EPOLLOUT)
		tx_drain(sw, p);
	if (events & EPOLLIN) {
		if (p->io->stray)
			p->io->stray(sw, p);
		else
			port_rx(sw, p);
	}
	if (p->closing)
		return;
	/* a TAP whose interface was deleted reports EPOLLERR */
	if (!p->kind->connectionless && (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR))) {
		/* read what is left first, if we may; the rest after unpausing */
		if (port_can_read(p))
			port_rx(sw, p);
		dp_port_hangup(sw, p);
	}
}

/* The port's wake eventfd: the device gave frames or room on its rings. */
void dp_shm_event(struct vswitch *sw, struct port *p)
{
	shm_woken(p->shm);
	if (p->qlen)
		tx_drain(sw, p);
	/* ingress on the rings too (stray: not on the socket) */
	if (p->io->stray)
		port_rx(sw, p);
	else
		port_update_events(sw, p);
}

/* Finish closing ports whose held frames have all moved on. */
void dp_housekeeping(struct vswitch *sw)
{
	if (!sw->need_reap)
		return;
	sw->need_reap = false;
	for (unsigned i = sw->nactive; i-- > 0;) {
		if (i >= sw->nactive)
			continue;
		struct port *p = &sw->ports[sw->active[i]];

		if (!p->closing || !port_can_read(p) || p->delay_head || p->reorder)
			continue;
		if (!p->eof_seen)
			port_rx(sw, p);
		if (p->eof_seen && port_can_read(p)) {
			port_destroy(sw, p);
			dp_flush(sw);
		} else {
			sw->need_reap = true;
		}
	}
}

/* Release due delayed/reordered frames, retry dgram sends; next timeout. */
void dp_timers(struct vswitch *sw, int *timeout_ms)
{
	uint64_t next = sw->next_sweep;

	if (sw->now >= sw->next_sweep) {
		fdb_age(sw->fdb, dp_now_s(sw));
		if (sw->cap)
			capture_flush(sw->cap);
		ctl_expire(sw);
		if (sw->ops->timers)
			sw->ops->timers(sw);
		sw->next_sweep = sw->now + 1000000000ull;
		next = sw->next_sweep;
	}
	if (sw->timers) {
		bool any = false;

		/* work started during the scan (e.g. a dgram retry) sets it again */
		sw->timers = false;

		for (unsigned i = 0; i < sw->nactive; i++) {
			struct port *p = &sw->ports[sw->active[i]];

			if (p->reorder && p->reorder_due <= sw->now) {
				struct pkt *k = p->reorder;

				p->reorder = NULL;
				pass(sw, p, k->data, k->len, k, 0);
				pkt_put(k);
			}
			while (p->delay_head && p->delay_head->due <= sw->now) {
				struct pkt *k = p->delay_head;

				p->delay_head = k->next;
				if (!p->delay_head)
					p->delay_tail = NULL;
				p->delay_len--;
				forward_or_hold(sw, p, k->data, k->len, k);
				pkt_put(k);
			}
			if (p->retry_due && p->retry_due <= sw->now) {
				p->retry_due = 0;
				tx_drain(sw, p);
			}
			if (p->reorder) {
				any = true;
				next = p->reorder_due < next ? p->reorder_due : next;
			}
			if (p->delay_head) {
				any = true;
				next = p->delay_head->due < next ? p->delay_head->due : next;
			}
			if (p->retry_due) {
				any = true;
				next = p->retry_due < next ? p->retry_due : next;
			}
			port_update_events(sw, p);
			if (p->closing)
				sw->need_reap = true;
		}
		dp_flush(sw);
		/* set during the scan for a port already passed: rescan at once */
		if (sw->timers)
			next = sw->now;
		sw->timers |= any;
	}
	*timeout_ms = next <= sw->now ? 0 : (int)((next - sw->now + 999999) / 1000000);
}
