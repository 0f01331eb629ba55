// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: IB ports. A connection takes an IB port (Init, LinkUp)
 * and gives it back (Down, Polling); a migrating guest's port is handed
 * over to the next one instead. The SM hears of every change by trap 128.
 * Port numbers are physical, as on a real switch: a VM (its QEMU's -name,
 * peer_name.h) gets back the number it had, across a switch restart too
 * (ib_state.h); a newcomer takes the lowest port nobody had, then, when
 * all are taken, the lowest one kept for an absent VM.
 */
#include "ib.h"
#include "switch.h"

#include <errno.h>
#include <infiniband/mad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void port_state_change(struct vswitch *sw)
{
	mad_set_field(sw->ib->sw_info, 0, IB_SW_STATE_CHANGE_F, 1);
	ib_trap_128(sw);
}

int ib_state_open(struct vswitch *sw, const char *dir, char *err, size_t errlen)
{
	struct ib_switch *ib = sw->ib;

	/* a directory that is not there would lose every change */
	if (access(dir, W_OK | X_OK) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if (asprintf(&ib->state_path, "%s/%s", dir, IB_STATE_FILE) < 0) {
		ib->state_path = NULL;
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (ib_state_load(&ib->st, ib->state_path, err, errlen) < 0)
		return -1;
	ib_sm_restore(sw);
	vs_log(VS_LOG_INFO, "IB state kept in %s", ib->state_path);
	return 0;
}

void ib_state_store(struct vswitch *sw)
{
	char err[256];

	if (sw->ib->state_path && ib_state_save(&sw->ib->st, sw->ib->state_path, err,
						sizeof(err)) < 0)
		vs_log(VS_LOG_ERR, "IB state not saved (a restart forgets the change): %s", err);
}

/*
 * IB port @n lost its link: Down, Polling, counted, reported to the SM. An
 * SM port that cnuas-vsctl designated by number was its guest's: the next
 * guest on the port is somebody else. One designated by name stays with
 * the name. When the switch itself stops, nothing is forgotten.
 */
static void ib_link_down(struct vswitch *sw, unsigned n)
{
	struct ib_switch *ib = sw->ib;

	if ((ib->sm_port[n] & IB_SM_VSCTL) && !sw->stop && ib->st.sm_num[n]) {
		ib->st.sm_num[n] = false;
		ib_state_store(sw);
	}
	if (!sw->stop)
		ib_sm_port_mark(sw, n, IB_SM_VSCTL | IB_SM_NAME, false);

	if (ib->port[n].state >= IB_PS_INIT)
		ib->port[n].pc.link_downed++;
	ib->port[n].state = IB_PS_DOWN;
	mad_set_field(ib->port[n].pi, 0, IB_PORT_PHYS_STATE_F, IB_PHYS_POLLING);
	port_state_change(sw);
}

void ib_handover_end(struct vswitch *sw)
{
	struct ib_switch *ib = sw->ib;
	unsigned n = ib->handover_port;

	ib->handover_port = 0;
	vs_log(VS_LOG_INFO, "IB port %u down: no port took it over", n);
	ib_link_down(sw, n);
}

/*
 * A live migration moves a guest's HCA to a new QEMU process, whose
 * connection replaces this one. Unplugging and plugging the "cable" would
 * take the port down until the SM swept it Active again, seconds in which
 * no data may pass (IBA: only an Active port forwards). Instead the IB port
 * stays as the SM left it, with nothing behind it, and the destination
 * QEMU's connection takes it over, as if the cable had never moved: the
 * one from process @pid (its SO_PEERCRED), which the caller knows. Any
 * other connection meanwhile gets a port of its own. @pid 0: the next
 * connection, whoever it is (logged). One hand-over at a time.
 */
void ib_port_handover(struct vswitch *sw, struct port *p, unsigned ms, int pid)
{
	struct ib_switch *ib = sw->ib;
	unsigned n = p->ib_port;

	if (!n || ib->port[n].slot != p->idx)
		return;
	if (ib->handover_port)
		ib_handover_end(sw);
	ib->port[n].slot = -1;
	p->ib_port = 0;
	ib->handover_port = n;
	ib->handover_pid = pid;
	ib->handover_until = sw->now + (uint64_t)ms * 1000000ull;
	if (pid)
		vs_log(VS_LOG_INFO, "IB port %u (%s) handed over: kept %s for pid %d for %u ms", n,
		       p->peer, ib_state_name(ib->port[n].state), pid, ms);
	else
		vs_log(VS_LOG_WARN, "IB port %u (%s) handed over: kept %s for %u ms for the next "
		       "connection, whoever it is (no pid= named)", n, p->peer,
		       ib_state_name(ib->port[n].state), ms);
}

#define IB_HELD_NS	10000000000ull	/* an enabled port waits 10 s for its guest */

/*
 * The subnet manager disabled IB port @n (ibportstate ... disable): its
 * guest's HCA must see its link go down, as when the switch restarts or
 * its port is deleted: the switch hangs its connection up. The device
 * reconnects every 500 ms; while the port is disabled those connections
 * (the same QEMU process) are refused, so its link stays down.
 */
void ib_port_disable(struct vswitch *sw, unsigned n)
{
	struct ib_switch *ib = sw->ib;
	struct ib_port *ip = &ib->port[n];
	struct port *p = ib_slot(sw, n);

	if (ip->disabled)
		return;
	ip->disabled = true;
	ip->refusal_logged = false;
	ip->held_pid = p ? p->peer_pid : 0;
	if (ib->handover_port == n)
		ib->handover_port = 0;
	vs_log(VS_LOG_INFO, "IB port %u disabled by the SM%s%s", n, p ? ": hanging up " : "",
	       p ? p->peer : "");
	if (p) {
		shutdown(p->fd, SHUT_RDWR);
		dp_port_hangup(sw, p);		/* Down, trap 128 (ib_port_detach) */
	}
	ip->state = IB_PS_DOWN;
	mad_set_field(ip->pi, 0, IB_PORT_PHYS_STATE_F, IB_PHYS_DISABLED);
}

void ib_port_enable(struct vswitch *sw, unsigned n)
{
	struct ib_port *ip = &sw->ib->port[n];

	if (!ip->disabled)
		return;
	ip->disabled = false;
	ip->held_until = sw->now + IB_HELD_NS;
	mad_set_field(ip->pi, 0, IB_PORT_PHYS_STATE_F, IB_PHYS_POLLING);
	vs_log(VS_LOG_INFO, "IB port %u enabled by the SM: Polling", n);
}

/* Whether IB port @n is kept from connection p: disabled, or enabled and waiting for its guest. */
static bool port_held(struct vswitch *sw, unsigned n, const struct port *p)
{
	const struct ib_port *ip = &sw->ib->port[n];

	if (ip->disabled)
		return true;
	return ip->held_pid && ip->held_pid != p->peer_pid && sw->now < ip->held_until;
}

/*
 * A named VM that took IB port @n keeps the number: remembered (if it had
 * none yet, taking it from an absent VM it was kept for), and its SM
 * designation by name applies.
 */
static void remember(struct vswitch *sw, unsigned n, const struct port *p)
{
	struct ib_state *st = &sw->ib->st;

	if (!p->vm[0])
		return;
	if (ib_sm_name(sw->ib, p->vm))
		ib_sm_port_mark(sw, n, IB_SM_NAME, true);
	if (ib_state_port_of(st, p->vm))
		return;
	if (st->peer[n][0])
		vs_log(VS_LOG_WARN, "IB port %u, kept for VM %s, goes to VM %s: no port was free",
		       n, st->peer[n], p->vm);
	snprintf(st->peer[n], sizeof(st->peer[n]), "%s", p->vm);
	ib_state_store(sw);
}

/* Whether IB port @n is free for connection p: @kept, even if kept for an absent VM. */
static bool port_free(struct vswitch *sw, unsigned n, const struct port *p, bool kept)
{
	struct ib_switch *ib = sw->ib;

	return ib->port[n].slot < 0 && n != ib->handover_port && !port_held(sw, n, p) &&
	       (kept || !ib->st.peer[n][0]);
}

int ib_port_attach(struct vswitch *sw, struct port *p)
{
	struct ib_switch *ib = sw->ib;
	unsigned n = ib->handover_port;

	for (unsigned i = 1; p->peer_pid && i <= ib->nports; i++) {
		struct ib_port *ip = &ib->port[i];

		if (ip->held_pid != p->peer_pid)
			continue;
		if (ip->disabled) {
			if (!ip->refusal_logged)
				vs_log(VS_LOG_INFO, "refusing %s while its IB port %u is disabled",
				       p->peer, i);
			ip->refusal_logged = true;
			return -1;
		}
		if (ip->slot < 0 && i != ib->handover_port) {
			n = i;		/* its own port back */
			break;
		}
	}
	if (n && n != ib->handover_port) {
		ib->port[n].held_pid = 0;
		goto take;
	}

	if (n && ib->port[n].slot < 0 && (!ib->handover_pid || ib->handover_pid == p->peer_pid)) {
		ib->handover_port = 0;
		ib->handovers++;
		ib->port[n].slot = p->idx;
		p->ib_port = n;
		snprintf(p->peer + strlen(p->peer), sizeof(p->peer) - strlen(p->peer), " ib %u", n);
		vs_log(VS_LOG_INFO, "port %u takes IB port %u over: %s", p->id, n,
		       ib_state_name(ib->port[n].state));
		remember(sw, n, p);
		return 0;
	}
	/* the number this VM had, if it is free */
	n = p->vm[0] ? ib_state_port_of(&ib->st, p->vm) : 0;
	if (n && n <= ib->nports && port_free(sw, n, p, true))
		goto take;
	/* the lowest free port, not one kept for somebody else (hand-over, disabled, absent VM) */
	for (n = 1; n <= ib->nports && !port_free(sw, n, p, false); n++)
		;
	for (unsigned kept = 1; n > ib->nports && kept <= ib->nports; kept++)
		if (port_free(sw, kept, p, true))
			n = kept;
	if (n > ib->nports) {
		vs_log(VS_LOG_WARN, "refusing connection: all %u IB ports in use", ib->nports);
		return -1;
	}
take:
	ib->port[n].slot = p->idx;
	ib->port[n].state = IB_PS_INIT;
	ib->port[n].neighbor_lid = 0;
	mad_set_field(ib->port[n].pi, 0, IB_PORT_PHYS_STATE_F, IB_PHYS_LINKUP);
	p->ib_port = n;
	snprintf(p->peer + strlen(p->peer), sizeof(p->peer) - strlen(p->peer), " ib %u", n);
	vs_log(VS_LOG_INFO, "port %u is IB port %u: Init, LinkUp", p->id, n);
	remember(sw, n, p);
	port_state_change(sw);
	return 0;
}

void ib_port_detach(struct vswitch *sw, struct port *p)
{
	struct ib_switch *ib = sw->ib;
	unsigned n = p->ib_port;

	if (!n || ib->port[n].slot != p->idx)
		return;
	ib->port[n].slot = -1;
	p->ib_port = 0;
	vs_log(VS_LOG_INFO, "IB port %u down (port %u gone)", n, p->id);
	ib_link_down(sw, n);
}
