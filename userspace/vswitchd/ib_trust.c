// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: whom the switch trusts. A guest's port is a virtual
 * function's: it may answer the subnet manager (SMP responses) and raise
 * traps, but only ports designated for an SM (--sm-port, cnuas-vsctl
 * sm-port; by IB port number or by the VM's name) may manage:
 * SubnGet/SubnSet, directed-route SMPs going out,
 * TrapRepress, PMA counter resets. Until an SM port is designated every
 * port is trusted, as before (the start-up log warns). A data packet must
 * come from behind the port the SM routes its SLID to.
 */
#include "ib.h"
#include "switch.h"

#include <infiniband/umad_sm.h>
#include <infiniband/umad_types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REFUSED_LOG_NS 1000000000ull	/* at most one refusal logged a second */

void ib_refuse(struct vswitch *sw, struct port *p, uint64_t *counter, const char *what)
{
	struct ib_switch *ib = sw->ib;

	(*counter)++;
	if (sw->now < ib->refused_log_next) {
		ib->refused_unlogged++;
		return;
	}
	vs_log(VS_LOG_WARN, "IB port %u (port %u, %s): %s refused (%llu more not logged)",
	       p->ib_port, p->id, p->peer, what, (unsigned long long)ib->refused_unlogged);
	ib->refused_unlogged = 0;
	ib->refused_log_next = sw->now + REFUSED_LOG_NS;
}

static void enforce(struct ib_switch *ib)
{
	if (!ib->sm_enforced)
		vs_log(VS_LOG_INFO, "IB: only SM ports manage the fabric from now on");
	ib->sm_enforced = true;
}

int ib_sm_port_mark(struct vswitch *sw, unsigned n, unsigned how, bool on)
{
	struct ib_switch *ib = sw->ib;
	unsigned was;

	if (n == 0 || n > ib->nports)
		return -1;
	was = ib->sm_port[n];
	ib->sm_port[n] = (uint8_t)(on ? was | how : was & ~how);
	if (on)
		enforce(ib);
	if (!was != !ib->sm_port[n])
		vs_log(VS_LOG_INFO, "IB port %u %s an SM port", n, on ? "is" : "is no longer");
	return 0;
}

bool ib_sm_name(const struct ib_switch *ib, const char *name)
{
	for (unsigned i = 0; i < ib->nsm_opt_name; i++)
		if (!strcmp(ib->sm_opt_name[i], name))
			return true;
	return ib_state_sm_name(&ib->st, name);
}

/* Mark or unmark the port VM @name is on now, if it is. */
static void mark_name(struct vswitch *sw, const char *name, bool on)
{
	for (unsigned n = 1; n <= sw->ib->nports; n++) {
		struct port *p = ib_slot(sw, n);

		if (p && !strcmp(p->vm, name))
			ib_sm_port_mark(sw, n, IB_SM_NAME, on);
	}
}

void ib_sm_name_option(struct vswitch *sw, const char *name)
{
	struct ib_switch *ib = sw->ib;

	if (ib_sm_name(ib, name) || ib->nsm_opt_name == IB_MAX_PORTS)
		return;
	snprintf(ib->sm_opt_name[ib->nsm_opt_name++], VS_VM_NAME_MAX + 1, "%s", name);
	enforce(ib);
	vs_log(VS_LOG_INFO, "IB: VM %s's port is an SM port (--sm-port name=)", name);
}

void ib_sm_restore(struct vswitch *sw)
{
	struct ib_switch *ib = sw->ib;

	for (unsigned n = 1; n <= IB_MAX_PORTS; n++)
		if (ib->st.sm_num[n] && ib_sm_port_mark(sw, n, IB_SM_VSCTL, true) < 0)
			vs_log(VS_LOG_WARN, "IB state: SM port %u is beyond the switch's %u ports",
			       n, ib->nports);
	for (unsigned i = 0; i < ib->st.nsm_name; i++) {
		enforce(ib);
		vs_log(VS_LOG_INFO, "IB: VM %s's port is an SM port (sm-port add name=, kept)",
		       ib->st.sm_name[i]);
	}
}

/* sm-port add|del name=NAME; < 0: not a name (@err says). */
static int sm_name_cmd(struct vswitch *sw, bool add, const char *name, char *err, size_t errlen)
{
	struct ib_switch *ib = sw->ib;
	struct ib_state *st = &ib->st;

	if (!ib_state_name_ok(name, strlen(name))) {
		snprintf(err, errlen, "sm-port: '%s' is no VM name (1..%u printable bytes)", name,
			 VS_VM_NAME_MAX);
		return -1;
	}
	if (add && !ib_state_sm_name(st, name)) {
		if (st->nsm_name == IB_MAX_PORTS) {
			snprintf(err, errlen, "sm-port: %u names already", IB_MAX_PORTS);
			return -1;
		}
		snprintf(st->sm_name[st->nsm_name++], VS_VM_NAME_MAX + 1, "%s", name);
		enforce(ib);
		ib_state_store(sw);
		vs_log(VS_LOG_INFO, "IB: VM %s's port is an SM port (sm-port add name=)", name);
	}
	if (!add) {
		unsigned j = 0;

		for (unsigned i = 0; i < st->nsm_name; i++)
			if (strcmp(st->sm_name[i], name))
				memmove(st->sm_name[j++], st->sm_name[i], VS_VM_NAME_MAX + 1);
		if (j != st->nsm_name) {
			st->nsm_name = j;
			ib_state_store(sw);
		}
		j = 0;
		for (unsigned i = 0; i < ib->nsm_opt_name; i++)
			if (strcmp(ib->sm_opt_name[i], name))
				memmove(ib->sm_opt_name[j++], ib->sm_opt_name[i], VS_VM_NAME_MAX + 1);
		ib->nsm_opt_name = j;
	}
	mark_name(sw, name, add);
	return 0;
}

/* sm-port add|del N: by number (a cnuas-vsctl designation is kept in the state). */
static int sm_num_cmd(struct vswitch *sw, bool add, const char *arg, char *err, size_t errlen)
{
	struct ib_switch *ib = sw->ib;
	char *end;
	unsigned long v = strtoul(arg, &end, 10);
	unsigned n = end == arg || *end || arg[0] == '-' || v > IB_MAX_PORTS ? 0 : (unsigned)v;

	if (ib_sm_port_mark(sw, n, add ? IB_SM_VSCTL : 0xff, add) < 0) {
		snprintf(err, errlen, "sm-port: '%s' is no IB port (1..%u) nor name=VM", arg,
			 ib->nports);
		return -1;
	}
	if (ib->st.sm_num[n] != add) {
		ib->st.sm_num[n] = add;
		ib_state_store(sw);
	}
	return 0;
}

static const char *sm_from(unsigned how)
{
	if (how & IB_SM_OPTION)
		return "option";
	return how & IB_SM_VSCTL ? "vsctl" : "name";
}

/*
 * An HCA's SMA sends the SM responses, which in directed route travel
 * back (the D bit), and traps, LID-routed to the SM. Nothing else: no
 * SMInfo either, which only an SM answers, so a guest's own OpenSM cannot
 * win the SM election (IBA 14.4) and put the real one in standby.
 */
bool ib_smp_ingress_ok(struct vswitch *sw, struct port *p, const struct ibf *x)
{
	unsigned method = x->mad[3];
	bool back = x->mad[4] & (UMAD_SMP_DIRECTION >> 8);
	bool ok;

	if (ib_may_manage(sw->ib, p->ib_port))
		return true;
	if (x->mad[1] == UMAD_CLASS_SUBN_DIRECTED_ROUTE)
		ok = (method & UMAD_METHOD_RESP_MASK) && back;
	else
		ok = (method & UMAD_METHOD_RESP_MASK) || method == UMAD_METHOD_TRAP;
	if (((unsigned)x->mad[16] << 8 | x->mad[17]) == UMAD_SM_ATTR_SM_INFO)
		ok = false;
	if (!ok)
		ib_refuse(sw, p, &p->c.ib_drop_smp_not_sm, "SMP from a port that is no SM's");
	return ok;
}

/*
 * The SM routes each end port's LIDs (base LID to base + 2^LMC - 1) to the
 * switch port that end port sits behind: so the LFT's entry for a SLID
 * names the one port a packet with it may come from. A LID the SM routes
 * nowhere (or to the switch itself) is nobody's. Before the SM wrote the
 * LFT no port is Active and no data passes anyway.
 */
bool ib_slid_ok(const struct ib_switch *ib, unsigned in, unsigned slid)
{
	return ib_lft_port(ib, slid) == in;
}

int ib_ctl_sm_port(struct vswitch *sw, struct strbuf *b, int argc, char **argv, bool json,
		   char *err, size_t errlen)
{
	struct ib_switch *ib = sw->ib;
	bool first = true;

	if (argc == 3 && (!strcmp(argv[1], "add") || !strcmp(argv[1], "del"))) {
		bool add = argv[1][0] == 'a';
		int r = strncmp(argv[2], "name=", 5) ?
			sm_num_cmd(sw, add, argv[2], err, errlen) :
			sm_name_cmd(sw, add, argv[2] + 5, err, errlen);

		if (r < 0)
			return -1;
	} else if (argc != 2 || strcmp(argv[1], "list")) {
		snprintf(err, errlen, "usage: sm-port add|del IB_PORT|name=VM, sm-port list");
		return -1;
	}
	if (json)
		sb_printf(b, "{\"enforced\": %s, \"sm_ports\": [",
			  ib->sm_enforced ? "true" : "false");
	else if (!ib->sm_enforced)
		sb_printf(b, "no SM port: every port may manage the fabric\n");
	for (unsigned n = 1; n <= ib->nports; n++) {
		struct port *p = ib_slot(sw, n);

		if (!ib->sm_port[n])
			continue;
		if (json)
			sb_printf(b, "%s{\"port\": %u, \"vsport\": %u, \"from\": \"%s\"}",
				  first ? "" : ", ", n, p ? p->id : 0, sm_from(ib->sm_port[n]));
		else
			sb_printf(b, "IB port %u (vsport %u, %s)\n", n, p ? p->id : 0,
				  ib->sm_port[n] & IB_SM_OPTION ? "--sm-port" :
				  ib->sm_port[n] & IB_SM_VSCTL ? "sm-port add" : "by VM name");
		first = false;
	}
	if (json)
		sb_printf(b, "], \"sm_names\": [");
	for (unsigned i = 0; i < ib->nsm_opt_name + ib->st.nsm_name; i++) {
		bool opt = i < ib->nsm_opt_name;
		const char *name = opt ? ib->sm_opt_name[i] : ib->st.sm_name[i - ib->nsm_opt_name];

		if (json) {
			sb_printf(b, "%s{\"vm\": ", i ? ", " : "");
			sb_json_str(b, name);
			sb_printf(b, ", \"from\": \"%s\"}", opt ? "option" : "vsctl");
		} else
			sb_printf(b, "VM %s, wherever it connects (%s)\n", name,
				  opt ? "--sm-port name=" : "sm-port add name=");
	}
	if (json)
		sb_printf(b, "]}\n");
	else if (ib->sm_enforced && first && !ib->nsm_opt_name && !ib->st.nsm_name)
		sb_printf(b, "no SM port: nobody may manage the fabric\n");
	return 0;
}
