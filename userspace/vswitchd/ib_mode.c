// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode (--link-layer ib): its state, set up once, its timers
 * and its entry in the forwarding modes (fwd_mode.h).
 */
#include "capture.h"
#include "fwd_mode.h"
#include "ib.h"
#include "switch.h"

#include <infiniband/mad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t guid_from_path(const char *path)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (const char *c = path; *c; c++) {
		h ^= (unsigned char)*c;
		h *= 0x100000001b3ull;
	}
	/* locally administered EUI-64: 02:c5 then 48 bits of the hash */
	return 0x02c5000000000000ull | (h & 0xffffffffffffull);
}

int ib_init(struct vswitch *sw, unsigned nports, uint64_t guid, bool guid_set)
{
	struct ib_switch *ib = calloc(1, sizeof(*ib));

	if (!ib)
		return -1;
	ib->lft = malloc(IB_LFT_CAP);
	ib->mft = calloc((size_t)IB_MFT_CAP * IB_MFT_POSITIONS, sizeof(uint16_t));
	ib->sl2vl = calloc((size_t)(nports + 1) * (nports + 1), 8);
	ib->vlarb = calloc((size_t)(nports + 1) * 4, 64);
	if (!ib->lft || !ib->mft || !ib->sl2vl || !ib->vlarb) {
		free(ib->lft);
		free(ib->mft);
		free(ib->sl2vl);
		free(ib->vlarb);
		free(ib);
		return -1;
	}
	memset(ib->lft, 0xff, IB_LFT_CAP);
	ib->nports = nports;
	ib->guid = guid_set ? guid : guid_from_path(sw->cfg.socket_path);
	ib->tid = ib->guid << 16;
	cnuas_vcrc_table_init(&ib->vcrc_table);
	for (unsigned n = 0; n <= IB_MAX_PORTS; n++)
		ib->port[n].slot = -1;
	sw->ib = ib;
	sw->ops = &ib_fwd_mode;
	ib_sma_defaults(ib);
	for (unsigned n = 0; n <= nports; n++)
		ib_port_info_defaults(ib, n);
	return 0;
}

void ib_fini(struct vswitch *sw)
{
	if (!sw->ib)
		return;
	free(sw->ib->lft);
	free(sw->ib->mft);
	free(sw->ib->sl2vl);
	free(sw->ib->vlarb);
	free(sw->ib->state_path);
	free(sw->ib);
	sw->ib = NULL;
}

void ib_timers(struct vswitch *sw)
{
	struct ib_switch *ib = sw->ib;

	if (ib->handover_port && sw->now >= ib->handover_until)
		ib_handover_end(sw);
	if (ib->trap256_tid && sw->now >= ib->trap256_next)
		ib_trap256_resend(sw);
	if (ib->mkey_lease_end && sw->now >= ib->mkey_lease_end) {
		/* nobody showed the key for a lease period: anyone may read it now */
		ib->mkey_lease_end = 0;
		mad_set_field(ib->port[0].pi, 0, IB_PORT_MKEY_PROT_BITS_F, 0);
		vs_log(VS_LOG_INFO, "IB: M_Key lease expired, protection 0");
	}
}

static void ib_describe(const struct vswitch *sw, char *buf, size_t len)
{
	snprintf(buf, len, "ib, %u ports, guid 0x%016llx", sw->ib->nports,
		 (unsigned long long)sw->ib->guid);
}

const struct fwd_mode ib_fwd_mode = {
	.name = "ib",
	.capture_linktype = CAPTURE_LINKTYPE_INFINIBAND,
	.traffic_classes = true,
	/* the SL, capped per ingress port: as an SLtoVL table would remap it */
	.trust_modes = 1u << QOS_TRUST_NONE | 1u << QOS_TRUST_SL,
	.link_vcrc = true,
	.dst_off = 2,		/* the LRH's DLID */
	.dst_len = 2,
	.forward = ib_forward,
	.fault_corrupt = ib_fault_corrupt,
	.port_attach = ib_port_attach,
	.port_detach = ib_port_detach,
	.port_handover = ib_port_handover,
	.timers = ib_timers,
	.fini = ib_fini,
	.describe = ib_describe,
	.ctl_show = ib_ctl_show,
	.ctl_table = ib_ctl_table,
	.ctl_sm_port = ib_ctl_sm_port,
};
