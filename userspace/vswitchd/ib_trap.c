// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: traps the switch sends to the master SM: 128 (a port
 * changed state) and 256 (bad M_Key), the latter resent until repressed.
 */
#include "ib.h"
#include "switch.h"

#include <infiniband/mad.h>
#include <infiniband/umad_sm.h>
#include <infiniband/umad_types.h>
#include <string.h>

/*
 * A SubnTrap(Notice) from the switch (generic, @type, producer: switch)
 * with a fresh TID, details left to the caller; 0 if the switch has no
 * LID yet.
 */
static unsigned notice_init(struct ib_switch *ib, uint8_t *mad, unsigned type, unsigned num)
{
	unsigned lid = ib_own_lid(ib);

	memset(mad, 0, IB_MAD_LEN);
	if (!lid)
		return 0;
	mad_set_field(mad, 0, IB_MAD_BASEVER_F, 1);
	mad_set_field(mad, 0, IB_MAD_MGMTCLASS_F, UMAD_CLASS_SUBN_LID_ROUTED);
	mad_set_field(mad, 0, IB_MAD_CLASSVER_F, 1);
	mad_set_field(mad, 0, IB_MAD_METHOD_F, UMAD_METHOD_TRAP);
	mad_set_field64(mad, 0, IB_MAD_TRID_F, ++ib->tid);
	mad_set_field(mad, 0, IB_MAD_ATTRID_F, 0x0002);	/* Notice */
	mad_set_field64(mad, 0, IB_MAD_MKEY_F, mad_get_field64(ib->port[0].pi, 0, IB_PORT_MKEY_F));
	mad_set_field(mad, IB_SMP_DATA_OFFS, IB_NOTICE_IS_GENERIC_F, 1);
	mad_set_field(mad, IB_SMP_DATA_OFFS, IB_NOTICE_TYPE_F, type);
	mad_set_field(mad, IB_SMP_DATA_OFFS, IB_NOTICE_PRODUCER_F, 2);	/* switch */
	mad_set_field(mad, IB_SMP_DATA_OFFS, IB_NOTICE_TRAP_NUMBER_F, num);
	mad_set_field(mad, IB_SMP_DATA_OFFS, IB_NOTICE_ISSUER_LID_F, lid);
	return lid;
}

/* A trap to the master SM, LID-routed, on its SL; false if there is no way there yet. */
static bool notice_send(struct vswitch *sw, const uint8_t *mad)
{
	struct ib_switch *ib = sw->ib;
	unsigned lid = ib_own_lid(ib);
	unsigned sm = mad_get_field(ib->port[0].pi, 0, IB_PORT_SMLID_F);
	unsigned sl = mad_get_field(ib->port[0].pi, 0, IB_PORT_SMSL_F);
	uint8_t f[IB_MAD_FRAME_LEN];
	unsigned out;

	if (!lid || !sm || ib_is_own_lid(ib, sm))
		return false;
	out = ib_lft_port(ib, sm);
	if (out == 0 || out > ib->nports || !ib_slot(sw, out))
		return false;
	ib_build_mad_frame(f, CNUAS_VL15, sl, sm, lid, 0xffff, 0, 0, 0, mad);
	ib->traps_sent++;
	ib_send_built(sw, out, f, IB_MAD_FRAME_LEN);
	return true;
}

/* Trap 128 (link state change) to the SM, if we know where it is. */
void ib_trap_128(struct vswitch *sw)
{
	uint8_t mad[IB_MAD_LEN];
	unsigned lid = notice_init(sw->ib, mad, 1, UMAD_SM_LINK_STATE_CHANGED_TRAP);	/* urgent */

	if (!lid)
		return;
	mad_set_field(mad, IB_SMP_DATA_OFFS, IB_NOTICE_DATA_LID_F, lid);
	notice_send(sw, mad);
}

/* Notice details of trap 256 (IBA 14.2.5.1), from the start of the Notice. */
#define NTC256_LID		12
#define NTC256_DR_SLID		14
#define NTC256_METHOD		16
#define NTC256_ATTR_ID		18
#define NTC256_ATTR_MOD		20
#define NTC256_MKEY		24
#define NTC256_DR_HOPS		33	/* DRNotice, DRPathTruncated, DRHopCount */
#define NTC256_DR_PATH		34
#define NTC256_DR_PATH_LEN	30
#define TRAP256_RESENDS		3

/*
 * The resend interval of trap 256: 4.096 us * 2^SubnetTimeout, as the SM
 * set it for port 0, but at least a second (ib_timers' tick).
 */
static uint64_t trap256_interval(const struct ib_switch *ib)
{
	unsigned t = mad_get_field((void *)ib->port[0].pi, 0, IB_PORT_SUBN_TIMEOUT_F);
	uint64_t ns = 4096ull << (t > 20 ? 20 : t);

	return ns < 1000000000ull ? 1000000000ull : ns;
}

/*
 * Bad M_Key (IBA 14.2.4.1): the switch tells the master SM who tried what.
 * One such trap is in flight at a time, resent until repressed; a
 * violation meanwhile is only counted (PortInfo.M_KeyViolations), so a
 * flood of bad SMPs cannot flood the SM.
 */
void ib_trap_256(struct vswitch *sw, unsigned slid, const uint8_t *smp)
{
	struct ib_switch *ib = sw->ib;
	uint8_t *mad = ib->trap256, *n = mad + IB_SMP_DATA_OFFS;

	if (ib->trap256_tid || !notice_init(ib, mad, 2, 256))	/* security */
		return;
	n[NTC256_LID] = (uint8_t)(slid >> 8);
	n[NTC256_LID + 1] = (uint8_t)slid;
	n[NTC256_METHOD] = smp[3];
	memcpy(n + NTC256_ATTR_ID, smp + 16, 2);
	memcpy(n + NTC256_ATTR_MOD, smp + 20, 4);
	memcpy(n + NTC256_MKEY, smp + 24, 8);
	if (smp[1] == UMAD_CLASS_SUBN_DIRECTED_ROUTE) {
		const struct umad_smp *s = (const void *)smp;
		unsigned hops = s->hop_cnt > 63 ? 63 : s->hop_cnt;

		memcpy(n + NTC256_DR_SLID, &s->dr_slid, 2);
		n[NTC256_DR_HOPS] = (uint8_t)(0x80 | hops);
		if (hops >= NTC256_DR_PATH_LEN) {
			n[NTC256_DR_HOPS] |= 0x40;
			hops = NTC256_DR_PATH_LEN - 1;
		}
		memcpy(n + NTC256_DR_PATH, s->return_path, hops + 1);
	}
	if (!notice_send(sw, mad))
		return;
	ib->trap256_tid = mad_get_field64(mad, 0, IB_MAD_TRID_F);
	ib->trap256_resends = TRAP256_RESENDS;
	ib->trap256_next = sw->now + trap256_interval(ib);
}

void ib_trap256_resend(struct vswitch *sw)
{
	struct ib_switch *ib = sw->ib;

	if (!ib->trap256_resends) {
		vs_log(VS_LOG_INFO, "IB: trap 256 (TID 0x%016llx) not repressed",
		       (unsigned long long)ib->trap256_tid);
		ib->trap256_tid = 0;
		return;
	}
	ib->trap256_resends--;
	ib->trap256_next = sw->now + trap256_interval(ib);
	notice_send(sw, ib->trap256);
}
