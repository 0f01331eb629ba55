// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: whom the switch trusts. A guest's port is a virtual
 * function's: it may answer the subnet manager (SMP responses) and raise
 * traps, but only ports designated for an SM (--sm-port, cnuas-vsctl
 * sm-port) may manage: SubnGet/SubnSet, directed-route SMPs going out,
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

int ib_sm_port_set(struct vswitch *sw, unsigned n, unsigned how)
{
	struct ib_switch *ib = sw->ib;

	if (n == 0 || n > ib->nports)
		return -1;
	ib->sm_port[n] = (uint8_t)how;
	if (how && !ib->sm_enforced) {
		ib->sm_enforced = true;
		vs_log(VS_LOG_INFO, "IB: only SM ports manage the fabric from now on");
	}
	vs_log(VS_LOG_INFO, "IB port %u %s an SM port", n, how ? "is" : "is no longer");
	return 0;
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
		char *end;
		unsigned long v = strtoul(argv[2], &end, 10);
		unsigned n = end == argv[2] || *end || argv[2][0] == '-' || v > IB_MAX_PORTS ?
			     0 : (unsigned)v;

		if (ib_sm_port_set(sw, n, argv[1][0] == 'a' ? IB_SM_VSCTL : 0) < 0) {
			snprintf(err, errlen, "sm-port: '%s' is no IB port (1..%u)", argv[2],
				 ib->nports);
			return -1;
		}
	} else if (argc != 2 || strcmp(argv[1], "list")) {
		snprintf(err, errlen, "usage: sm-port add|del IB_PORT, sm-port list");
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
				  first ? "" : ", ", n, p ? p->id : 0,
				  ib->sm_port[n] == IB_SM_OPTION ? "option" : "vsctl");
		else
			sb_printf(b, "IB port %u (vsport %u, %s)\n", n, p ? p->id : 0,
				  ib->sm_port[n] == IB_SM_OPTION ? "--sm-port" : "sm-port add");
		first = false;
	}
	if (json)
		sb_printf(b, "]}\n");
	else if (ib->sm_enforced && first)
		sb_printf(b, "no SM port: nobody may manage the fabric\n");
	return 0;
}
