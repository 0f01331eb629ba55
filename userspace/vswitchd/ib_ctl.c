// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: what the control socket shows of it (show, lft, mft).
 */
#include "ib.h"
#include "switch.h"

#include <infiniband/mad.h>
#include <stdio.h>
#include <string.h>

const char *ib_state_name(unsigned state)
{
	static const char *const n[] = { "nop", "down", "init", "armed", "active" };

	return state < 5 ? n[state] : "?";
}

static const char *phys_name(unsigned phys)
{
	return phys == IB_PHYS_LINKUP ? "linkup" : phys == IB_PHYS_DISABLED ? "disabled" : "polling";
}

void ib_ctl_show(struct vswitch *sw, struct strbuf *b, bool json)
{
	struct ib_switch *ib = sw->ib;
	const uint8_t *p0 = ib->port[0].pi;
	unsigned lid = ib_own_lid(ib);
	unsigned smlid = mad_get_field((void *)p0, 0, IB_PORT_SMLID_F);
	unsigned psc = mad_get_field(ib->sw_info, 0, IB_SW_STATE_CHANGE_F);
	unsigned top = mad_get_field(ib->sw_info, 0, IB_SW_LINEAR_FDB_TOP_F);

	if (json) {
		sb_printf(b, ", \"ib\": {\"guid\": \"0x%016llx\", \"nports\": %u, \"lid\": %u, \"lmc\": %u, "
			     "\"sm_lid\": %u, \"port_state_change\": %u, \"linear_fdb_top\": %u, "
			     "\"mkey_violations\": %llu, \"traps_sent\": %llu, "
			     "\"handover_port\": %u, \"handovers\": %llu, \"ports\": [",
			  (unsigned long long)ib->guid, ib->nports, lid,
			  mad_get_field((void *)p0, 0, IB_PORT_LMC_F), smlid, psc, top,
			  (unsigned long long)ib->mkey_violations, (unsigned long long)ib->traps_sent,
			  ib->handover_port, (unsigned long long)ib->handovers);
	} else {
		sb_printf(b, "ib switch guid 0x%016llx, %u ports, lid %u, sm lid %u, "
			     "port state change %u, lft top %u, traps sent %llu, mkey violations %llu\n",
			  (unsigned long long)ib->guid, ib->nports, lid, smlid, psc, top,
			  (unsigned long long)ib->traps_sent, (unsigned long long)ib->mkey_violations);
		sb_printf(b, "%-4s %-6s %-7s %-8s %5s %12s %12s %8s %8s %8s\n", "IB", "VSPORT", "STATE",
			  "PHYS", "LID", "RCV_PKTS", "XMIT_PKTS", "RCV_ERR", "RELAY", "DISCARD");
	}
	bool first = true;

	for (unsigned n = 1; n <= ib->nports; n++) {
		struct ib_port *ip = &ib->port[n];
		struct port *p = ib_slot(sw, n);
		unsigned phys = mad_get_field(ip->pi, 0, IB_PORT_PHYS_STATE_F);

		if (!p && !ip->pc.rcv_pkts && !ip->pc.link_downed)
			continue;
		if (json) {
			sb_printf(b, "%s{\"port\": %u, \"vsport\": %u, \"state\": \"%s\", "
				     "\"phys\": \"%s\", \"neighbor_lid\": %u, \"rcv_pkts\": %llu, "
				     "\"xmit_pkts\": %llu, \"rcv_bytes\": %llu, \"xmit_bytes\": %llu, "
				     "\"rcv_errors\": %llu, \"relay_errors\": %llu, "
				     "\"xmit_discards\": %llu, \"vl15_dropped\": %llu, "
				     "\"link_downed\": %llu, \"rcv_constraint_errors\": %llu, "
				     "\"xmit_constraint_errors\": %llu}",
				  first ? "" : ", ", n, p ? p->id : 0, ib_state_name(ip->state),
				  phys_name(phys), ip->neighbor_lid,
				  (unsigned long long)ip->pc.rcv_pkts,
				  (unsigned long long)ip->pc.xmit_pkts,
				  (unsigned long long)ip->pc.rcv_bytes,
				  (unsigned long long)ip->pc.xmit_bytes,
				  (unsigned long long)ip->pc.rcv_errors,
				  (unsigned long long)ip->pc.relay_errors,
				  (unsigned long long)ip->pc.xmit_discards,
				  (unsigned long long)ip->pc.vl15_dropped,
				  (unsigned long long)ip->pc.link_downed,
				  (unsigned long long)ip->pc.rcv_constraint,
				  (unsigned long long)ip->pc.xmit_constraint);
		} else {
			sb_printf(b, "%-4u %-6u %-7s %-8s %5u %12llu %12llu %8llu %8llu %8llu\n", n,
				  p ? p->id : 0, ib_state_name(ip->state),
				  phys_name(phys), ip->neighbor_lid,
				  (unsigned long long)ip->pc.rcv_pkts,
				  (unsigned long long)ip->pc.xmit_pkts,
				  (unsigned long long)ip->pc.rcv_errors,
				  (unsigned long long)ip->pc.relay_errors,
				  (unsigned long long)ip->pc.xmit_discards);
		}
		first = false;
	}
	if (json)
		sb_printf(b, "]}");
}

static int ib_ctl_lft(struct vswitch *sw, struct strbuf *b, bool json)
{
	struct ib_switch *ib = sw->ib;
	bool first = true;

	sb_printf(b, json ? "{\"lft\": [" : "LID    PORT\n");
	for (unsigned lid = 0; lid < IB_LFT_CAP; lid++) {
		if (ib->lft[lid] == 0xff)
			continue;
		if (json)
			sb_printf(b, "%s{\"lid\": %u, \"port\": %u}", first ? "" : ", ", lid,
				  ib->lft[lid]);
		else
			sb_printf(b, "%-6u %u\n", lid, ib->lft[lid]);
		first = false;
	}
	if (json)
		sb_printf(b, "]}\n");
	return 0;
}

static int ib_ctl_mft(struct vswitch *sw, struct strbuf *b, bool json)
{
	struct ib_switch *ib = sw->ib;
	bool first = true;

	sb_printf(b, json ? "{\"mft\": [" : "MLID    PORTS\n");
	for (unsigned i = 0; i < IB_MFT_CAP; i++) {
		const uint16_t *m = &ib->mft[i * IB_MFT_POSITIONS];
		bool any = false;

		for (unsigned pos = 0; pos < IB_MFT_POSITIONS; pos++)
			any |= m[pos] != 0;
		if (!any)
			continue;
		sb_printf(b, json ? "%s{\"mlid\": \"0x%04x\", \"ports\": [" : "%s0x%04x ",
			  json && !first ? ", " : "", CNUAS_LID_MCAST_MIN + i);
		bool f2 = true;

		for (unsigned n = 0; n < IB_MFT_POSITIONS * 16; n++) {
			if (!(m[n / 16] & (1u << (n % 16))))
				continue;
			sb_printf(b, json ? "%s%u" : "%s%u", f2 ? "" : json ? ", " : ",", n);
			f2 = false;
		}
		sb_printf(b, json ? "]}" : "\n");
		first = false;
	}
	if (json)
		sb_printf(b, "]}\n");
	return 0;
}

int ib_ctl_table(struct vswitch *sw, struct strbuf *b, const char *name, bool json)
{
	return strcmp(name, "lft") ? ib_ctl_mft(sw, b, json) : ib_ctl_lft(sw, b, json);
}
