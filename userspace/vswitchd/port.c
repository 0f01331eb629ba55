// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* Port lifecycle, egress queue and epoll interest. */
#include "capture.h"
#include "fdb.h"
#include "fwd_mode.h"
#include "port_io.h"
#include "port_kind.h"
#include "switch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

struct port *port_add(struct vswitch *sw, int fd, const struct port_kind *kind)
{
	struct port *p = NULL;
	uint32_t qsize = 1;

	for (unsigned i = 0; i < sw->cfg.max_ports; i++) {
		if (!sw->ports[i].used) {
			p = &sw->ports[i];
			p->idx = (int)i;
			break;
		}
	}
	if (!p)
		return NULL;
	/* room for flood headroom plus one batch of leftovers, per class */
	while (qsize < sw->flood_cap + VS_BATCH)
		qsize <<= 1;
	int idx = p->idx;
	memset(p, 0, sizeof(*p));
	/* one allocation for all classes' rings; tq[0].q owns it */
	struct pkt **rings = calloc((size_t)qsize * VS_NUM_TC, sizeof(*rings));

	if (!rings)
		return NULL;
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++)
		p->tq[tc].q = rings + (size_t)tc * qsize;
	p->idx = idx;
	p->qmask = qsize - 1;
	p->used = true;
	p->id = ++sw->next_port_id;
	p->kind = kind;
	p->fd = fd;
	p->io = sw->cfg.shm_ring && kind->shm_io ? kind->shm_io : kind->io;
	p->blocked_on = -1;
	p->fault = sw->fault_all;
	p->psec = sw->psec_all;
	p->qos = sw->qos_all;
	p->trust = sw->trust_all;
	fault_start(&p->fault, p->id);
	sw->active[sw->nactive++] = p->idx;
	port_update_events(sw, p);
	return p;
}

struct port *port_by_id(struct vswitch *sw, uint32_t id)
{
	for (unsigned i = 0; i < sw->nactive; i++) {
		struct port *p = &sw->ports[sw->active[i]];

		if (p->id == id)
			return p;
	}
	return NULL;
}

void port_name_peer(struct port *p, const char *what, pid_t pid, const char *vnic_sock)
{
	const char *sep = *what ? " " : "";
	size_t len = 0;
	char *argv = peer_cmdline(pid, &len);
	bool named = argv && vm_name_from_cmdline(argv, len, p->vm, sizeof(p->vm));

	if (argv && vnic_sock) {
		p->nmacs = (uint8_t)vnic_macs_from_cmdline(argv, len, vnic_sock, p->macs,
							   VS_PORT_MACS_MAX);
		p->macs_from = p->nmacs ? MACS_GIVEN : MACS_NONE;
	}
	free(argv);
	if (named)
		snprintf(p->peer, sizeof(p->peer), "%s%spid %d vm %s", what, sep, (int)pid, p->vm);
	else
		snprintf(p->peer, sizeof(p->peer), "%s%spid %d", what, sep, (int)pid);
}

bool port_can_read(const struct port *p)
{
	return p->blocked_on < 0 && !p->hold_head && p->delay_len < VS_DELAY_MAX;
}

const char *port_state(const struct port *p)
{
	if (p->closing)
		return "closing";
	if (p->kind->connectionless && !p->peer_present)
		return "waiting";
	if (p->blocked_on >= 0)
		return "paused";
	return "up";
}

void port_update_events(struct vswitch *sw, struct port *p)
{
	uint32_t want = 0;
	struct epoll_event ev;

	if (p->io->stray || port_can_read(p))
		want |= EPOLLIN;	/* on the rings: the socket's strays and EOF */
	if ((p->qlen || p->stx_len) && !p->closing && p->io->tx_pollout)
		want |= EPOLLOUT;
	if (p->io->arm)
		p->io->arm(sw, p);
	if (p->closing) {
		/* the peer is gone; EPOLLHUP would fire forever while we cannot read */
		want = 0;
		if (p->in_epoll) {
			epoll_ctl(sw->epfd, EPOLL_CTL_DEL, p->fd, NULL);
			p->in_epoll = false;
		}
		return;
	}
	if (p->in_epoll && want == p->ev_mask)
		return;
	ev.events = want | p->kind->epoll_extra;
	ev.data.u64 = ev_tag(EV_PORT, (uint32_t)p->idx);
	if (epoll_ctl(sw->epfd, p->in_epoll ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, p->fd, &ev) < 0)
		vs_log(VS_LOG_ERR, "port %u: epoll_ctl failed", p->id);
	p->in_epoll = true;
	p->ev_mask = want;
}

void port_queue_push(struct port *p, unsigned tc, struct pkt *k)
{
	struct tc_queue *t = &p->tq[tc];

	t->q[(t->head + t->len) & p->qmask] = k;
	t->len++;
	p->qlen++;
	if (t->len > p->tcc[tc].queue_hiwater)
		p->tcc[tc].queue_hiwater = t->len;
}

/* Discard everything waiting to go out to p (its peer is gone). */
void port_drop_egress(struct vswitch *sw, struct port *p)
{
	(void)sw;
	for (unsigned tc = 0; tc < VS_NUM_TC; tc++) {
		struct tc_queue *t = &p->tq[tc];

		while (t->len) {
			pkt_put(t->q[t->head]);
			t->head = (t->head + 1) & p->qmask;
			t->len--;
			p->c.drop_port_closed++;
		}
	}
	p->qlen = 0;
	for (uint32_t i = 0; i < p->npend; i++) {
		if (p->pend_pkt[i])
			pkt_put(p->pend_pkt[i]);
		p->c.drop_port_closed++;
	}
	p->npend = 0;
	memset(p->pend_n, 0, sizeof(p->pend_n));
	if (p->n_waiters)
		dp_unblock_waiters(sw, p);
}

static void free_list(struct pkt *k)
{
	while (k) {
		struct pkt *n = k->next;

		pkt_put(k);
		k = n;
	}
}

void port_destroy(struct vswitch *sw, struct port *p)
{
	vs_log(VS_LOG_INFO, "port %u (%s) removed: rx %llu tx %llu frames", p->id, p->peer,
	       (unsigned long long)p->c.rx_frames, (unsigned long long)p->c.tx_frames);
	if (p->in_epoll)
		epoll_ctl(sw->epfd, EPOLL_CTL_DEL, p->fd, NULL);
	close(p->fd);
	if (p->io->close)
		p->io->close(sw, p);
	if (p->local_path[0])	/* a dgram port's bound socket */
		unlink(p->local_path);
	if (sw->ops->port_detach)
		sw->ops->port_detach(sw, p);
	port_drop_egress(sw, p);
	if (p->blocked_on >= 0) {
		sw->ports[p->blocked_on].n_waiters--;
		p->blocked_on = -1;
	}
	free_list(p->hold_head);
	free_list(p->delay_head);
	if (p->reorder)
		pkt_put(p->reorder);
	free(p->tq[0].q);
	if (p->srx)
		pkt_put(p->srx);
	free(p->stx);
	fdb_del_port(sw->fdb, (uint32_t)p->idx);
	port_macs_release(sw, p);
	if (sw->cap && capture_port(sw->cap) == p->id) {
		vs_log(VS_LOG_INFO, "capture of port %u stopped: port removed", p->id);
		capture_stop(sw->cap);
		sw->cap = NULL;
	}
	for (unsigned i = 0; i < sw->nactive; i++) {
		if (sw->active[i] == p->idx) {
			sw->active[i] = sw->active[--sw->nactive];
			break;
		}
	}
	for (unsigned i = 0; i < sw->ndirty; i++) {
		if (sw->dirty[i] == p->idx) {
			sw->dirty[i] = sw->dirty[--sw->ndirty];
			break;
		}
	}
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->blocked_on = -1;
}
