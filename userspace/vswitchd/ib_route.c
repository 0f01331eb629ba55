// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: the forwarding plane. Link checks (VCRC, PktLen),
 * directed-route SMPs (IBA 14.2.2), LID routing by the linear forwarding
 * table, multicast by the multicast forwarding table, and the port
 * states that gate data.
 */
#include "capture.h"
#include "dp.h"
#include "fwd_mode.h"
#include "ib.h"
#include "switch.h"

#include <arpa/inet.h>
#include <infiniband/mad.h>
#include <infiniband/umad_sm.h>
#include <infiniband/umad_types.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "cnuas_ib_link.h"

#define BTH_OP_UD_SEND_ONLY	0x64
#define DETH_LEN		8
#define MAD_OFF			(CNUAS_LRH_LEN + CNUAS_BTH_LEN + DETH_LEN)
#define MAD_FRAME_LEN		(MAD_OFF + IB_MAD_LEN + CNUAS_ICRC_LEN + CNUAS_VCRC_LEN)
#define QP1_QKEY		0x80010000u

_Static_assert(sizeof(struct umad_smp) == IB_MAD_LEN, "an SMP is one MAD");

const char *ib_state_name(unsigned state)
{
	static const char *const n[] = { "nop", "down", "init", "armed", "active" };

	return state < 5 ? n[state] : "?";
}

unsigned ib_own_lid(const struct ib_switch *ib)
{
	return mad_get_field((void *)ib->port[0].pi, 0, IB_PORT_LID_F);
}

static bool own_lid(const struct ib_switch *ib, unsigned dlid)
{
	unsigned lid = ib_own_lid(ib);
	unsigned lmc = mad_get_field((void *)ib->port[0].pi, 0, IB_PORT_LMC_F);

	return lid && dlid >= lid && dlid < lid + (1u << lmc);
}

unsigned ib_lft_port(const struct ib_switch *ib, unsigned dlid)
{
	if (dlid >= IB_LFT_CAP)
		return 0xff;
	return ib->lft[dlid];
}

static struct port *ib_slot(struct vswitch *sw, unsigned n)
{
	if (n == 0 || n > sw->ib->nports || sw->ib->port[n].slot < 0)
		return NULL;
	return &sw->ports[sw->ib->port[n].slot];
}

/* ---- setup ---- */

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
	free(sw->ib);
	sw->ib = NULL;
}

static void port_state_change(struct vswitch *sw)
{
	mad_set_field(sw->ib->sw_info, 0, IB_SW_STATE_CHANGE_F, 1);
	ib_trap_128(sw);
}

/* IB port @n lost its link: Down, Polling, counted, reported to the SM. */
static void ib_link_down(struct vswitch *sw, unsigned n)
{
	struct ib_switch *ib = sw->ib;

	if (ib->port[n].state >= IB_PS_INIT)
		ib->port[n].pc.link_downed++;
	ib->port[n].state = IB_PS_DOWN;
	mad_set_field(ib->port[n].pi, 0, IB_PORT_PHYS_STATE_F, IB_PHYS_POLLING);
	port_state_change(sw);
}

static void ib_handover_end(struct vswitch *sw)
{
	struct ib_switch *ib = sw->ib;
	unsigned n = ib->handover_port;

	ib->handover_port = 0;
	vs_log(VS_LOG_INFO, "IB port %u down: no port took it over", n);
	ib_link_down(sw, n);
}

static void trap256_resend(struct vswitch *sw);

void ib_timers(struct vswitch *sw)
{
	struct ib_switch *ib = sw->ib;

	if (ib->handover_port && sw->now >= ib->handover_until)
		ib_handover_end(sw);
	if (ib->trap256_tid && sw->now >= ib->trap256_next)
		trap256_resend(sw);
	if (ib->mkey_lease_end && sw->now >= ib->mkey_lease_end) {
		/* nobody showed the key for a lease period: anyone may read it now */
		ib->mkey_lease_end = 0;
		mad_set_field(ib->port[0].pi, 0, IB_PORT_MKEY_PROT_BITS_F, 0);
		vs_log(VS_LOG_INFO, "IB: M_Key lease expired, protection 0");
	}
}

/*
 * A live migration moves a guest's HCA to a new QEMU process, whose
 * connection replaces this one. Unplugging and plugging the "cable" would
 * take the port down until the SM swept it Active again, seconds in which
 * no data may pass (IBA: only an Active port forwards). Instead the IB port
 * stays as the SM left it, with nothing behind it, and the next guest port
 * to connect takes it over, as if the cable had never moved. One hand-over
 * at a time: the switch cannot tell which new connection is which guest.
 */
void ib_port_handover(struct vswitch *sw, struct port *p, unsigned ms)
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
	ib->handover_until = sw->now + (uint64_t)ms * 1000000ull;
	vs_log(VS_LOG_INFO, "IB port %u (%s) handed over: kept %s for %u ms", n, p->peer,
	       ib_state_name(ib->port[n].state), ms);
}

int ib_port_attach(struct vswitch *sw, struct port *p)
{
	struct ib_switch *ib = sw->ib;
	unsigned n = ib->handover_port;

	if (n && ib->port[n].slot < 0) {
		ib->handover_port = 0;
		ib->handovers++;
		ib->port[n].slot = p->idx;
		p->ib_port = n;
		snprintf(p->peer + strlen(p->peer), sizeof(p->peer) - strlen(p->peer), " ib %u", n);
		vs_log(VS_LOG_INFO, "port %u takes IB port %u over: %s", p->id, n,
		       ib_state_name(ib->port[n].state));
		return 0;
	}
	for (n = 1; n <= ib->nports && ib->port[n].slot >= 0; n++)
		;
	if (n > ib->nports) {
		vs_log(VS_LOG_WARN, "refusing connection: all %u IB ports in use", ib->nports);
		return -1;
	}
	ib->port[n].slot = p->idx;
	ib->port[n].state = IB_PS_INIT;
	ib->port[n].neighbor_lid = 0;
	mad_set_field(ib->port[n].pi, 0, IB_PORT_PHYS_STATE_F, IB_PHYS_LINKUP);
	p->ib_port = n;
	snprintf(p->peer + strlen(p->peer), sizeof(p->peer) - strlen(p->peer), " ib %u", n);
	vs_log(VS_LOG_INFO, "port %u is IB port %u: Init, LinkUp", p->id, n);
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

/* ---- frames ---- */

/* Write the ICRC and VCRC of an IB-mode frame of @len bytes (VCRC included). */
static void reseal(const struct ib_switch *ib, uint8_t *f, uint32_t len)
{
	uint8_t hdr[CNUAS_IB_ICRC_HDR_MAX];
	uint32_t icrc_off = len - CNUAS_VCRC_LEN - CNUAS_ICRC_LEN;
	int n = cnuas_ib_icrc_hdr(hdr, f, icrc_off);

	if (n > 0) {
		uLong crc = crc32(0L, hdr, (uInt)n);

		crc = crc32(crc, f + n, (uInt)(icrc_off - (uint32_t)n));
		f[icrc_off] = (uint8_t)crc;
		f[icrc_off + 1] = (uint8_t)(crc >> 8);
		f[icrc_off + 2] = (uint8_t)(crc >> 16);
		f[icrc_off + 3] = (uint8_t)(crc >> 24);
	}
	cnuas_vcrc_put(&ib->vcrc_table, f, len - CNUAS_VCRC_LEN);
}

/*
 * The fault stage's corruption in IB mode: one bit after the BTH (LRH,
 * GRH and BTH stay valid, the ICRC may be the one hit), then a fresh
 * VCRC: as if the bit flipped inside the switch, after the ingress
 * link's VCRC check and before the egress one is computed.  The per-hop
 * VCRC cannot see such a fault; the destination HCA's end-to-end ICRC
 * must.  (A flip on the wire would be dropped by the next VCRC check,
 * which the drop fault already models.)  A frame with no payload after
 * its BTH, or no BTH, has one bit after its LRH flipped and no new VCRC.
 */
void ib_fault_corrupt(struct vswitch *sw, struct fault *f, uint8_t *data, uint32_t len)
{
	uint32_t start = CNUAS_LRH_LEN, end = len, hl;
	bool reseal_vcrc = false;

	if (len <= CNUAS_LRH_LEN)
		return;
	if (cnuas_lrh_lnh(data) >= CNUAS_LNH_IBA_LOCAL) {
		hl = CNUAS_LRH_LEN + (cnuas_lrh_lnh(data) == CNUAS_LNH_IBA_GLOBAL ? CNUAS_GRH_LEN : 0);
		if (cnuas_lrh_pktlen(data) * 4 == len - CNUAS_VCRC_LEN &&
		    hl + CNUAS_BTH_LEN < len - CNUAS_VCRC_LEN &&
		    cnuas_vcrc_ok(&sw->ib->vcrc_table, data, len)) {
			start = hl + CNUAS_BTH_LEN;
			end = len - CNUAS_VCRC_LEN;
			reseal_vcrc = true;
		}
	}
	data[start + fault_rand(f) % (end - start)] ^= (uint8_t)(1u << (fault_rand(f) & 7));
	if (reseal_vcrc)
		cnuas_vcrc_put(&sw->ib->vcrc_table, data, len - CNUAS_VCRC_LEN);
}

static void count_xmit(struct ib_switch *ib, unsigned out, uint32_t len, bool mcast)
{
	struct ib_pcnt *c = &ib->port[out].pc;

	c->xmit_pkts++;
	c->xmit_bytes += len;
	if (mcast)
		c->xmit_mcast++;
	else
		c->xmit_ucast++;
}

void ib_send_built(struct vswitch *sw, unsigned out, uint8_t *frame, uint32_t len)
{
	struct port *d = ib_slot(sw, out);
	struct pkt *k;

	if (!d) {
		if (out && out <= sw->ib->nports)
			sw->ib->port[out].pc.xmit_discards++;
		return;
	}
	reseal(sw->ib, frame, len);
	k = pkt_new(frame, len);
	if (!k)
		return;
	dp_capture_own(sw, k->data, k->len);
	if (dp_flood_one(sw, d, k->data, k->len, k, 0))
		count_xmit(sw->ib, out, len, false);
	else
		sw->ib->port[out].pc.xmit_discards++;
	pkt_put(k);
}

/*
 * A MAD frame: LRH (no GRH), BTH (UD SEND only), DETH, the MAD, room for
 * ICRC and VCRC. Returns its length.
 */
static uint32_t build_mad_frame(uint8_t *f, unsigned vl, unsigned sl, unsigned dlid, unsigned slid,
				unsigned pkey, unsigned dqp, uint32_t qkey, unsigned sqp,
				const uint8_t *mad)
{
	uint8_t *bth = f + CNUAS_LRH_LEN, *deth = bth + CNUAS_BTH_LEN;

	cnuas_lrh_build(f, vl, sl, CNUAS_LNH_IBA_LOCAL, dlid, slid,
			(MAD_FRAME_LEN - CNUAS_VCRC_LEN) / 4);
	memset(bth, 0, CNUAS_BTH_LEN + DETH_LEN);
	bth[0] = BTH_OP_UD_SEND_ONLY;
	bth[2] = (uint8_t)(pkey >> 8);
	bth[3] = (uint8_t)pkey;
	bth[5] = (uint8_t)(dqp >> 16);
	bth[6] = (uint8_t)(dqp >> 8);
	bth[7] = (uint8_t)dqp;
	deth[0] = (uint8_t)(qkey >> 24);
	deth[1] = (uint8_t)(qkey >> 16);
	deth[2] = (uint8_t)(qkey >> 8);
	deth[3] = (uint8_t)qkey;
	deth[5] = (uint8_t)(sqp >> 16);
	deth[6] = (uint8_t)(sqp >> 8);
	deth[7] = (uint8_t)sqp;
	memcpy(f + MAD_OFF, mad, IB_MAD_LEN);
	return MAD_FRAME_LEN;
}

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
	uint8_t f[MAD_FRAME_LEN];
	unsigned out;

	if (!lid || !sm || own_lid(ib, sm))
		return false;
	out = ib_lft_port(ib, sm);
	if (out == 0 || out > ib->nports || !ib_slot(sw, out))
		return false;
	build_mad_frame(f, CNUAS_VL15, sl, sm, lid, 0xffff, 0, 0, 0, mad);
	ib->traps_sent++;
	ib_send_built(sw, out, f, MAD_FRAME_LEN);
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

static void trap256_resend(struct vswitch *sw)
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

struct ibf {
	uint8_t *f;
	uint32_t len;		/* whole frame, VCRC included */
	unsigned vl, sl, lnh, dlid, slid;
	uint8_t *bth;		/* NULL: no BTH (raw) */
	unsigned dqp, pkey;
	uint8_t *mad;		/* UD with a full MAD, else NULL */
	unsigned sqp;
};

/* Link-level checks and parse; returns false (counted on p) to drop. */
static bool ib_parse(struct vswitch *sw, struct port *p, uint8_t *f, uint32_t len, struct ibf *x)
{
	struct ib_pcnt *pc = &sw->ib->port[p->ib_port].pc;
	uint32_t hl;

	if (len < CNUAS_LRH_LEN + CNUAS_BTH_LEN + CNUAS_ICRC_LEN + CNUAS_VCRC_LEN ||
	    cnuas_lrh_lver(f) != CNUAS_LRH_LVER ||
	    cnuas_lrh_pktlen(f) * 4 != len - CNUAS_VCRC_LEN) {
		p->c.ib_drop_lrh++;
		pc->rcv_errors++;
		return false;
	}
	if (!cnuas_vcrc_ok(&sw->ib->vcrc_table, f, len)) {
		p->c.ib_drop_vcrc++;
		pc->rcv_errors++;
		return false;
	}
	memset(x, 0, sizeof(*x));
	x->f = f;
	x->len = len;
	x->vl = cnuas_lrh_vl(f);
	x->sl = cnuas_lrh_sl(f);
	x->lnh = cnuas_lrh_lnh(f);
	x->dlid = cnuas_lrh_dlid(f);
	x->slid = cnuas_lrh_slid(f);
	if (x->lnh < CNUAS_LNH_IBA_LOCAL)
		return true;
	hl = CNUAS_LRH_LEN + (x->lnh == CNUAS_LNH_IBA_GLOBAL ? CNUAS_GRH_LEN : 0);
	if (len < hl + CNUAS_BTH_LEN + CNUAS_ICRC_LEN + CNUAS_VCRC_LEN) {
		p->c.ib_drop_lrh++;
		pc->rcv_errors++;
		return false;
	}
	x->bth = f + hl;
	x->pkey = (unsigned)x->bth[2] << 8 | x->bth[3];
	x->dqp = (unsigned)x->bth[5] << 16 | (unsigned)x->bth[6] << 8 | x->bth[7];
	if (x->bth[0] == BTH_OP_UD_SEND_ONLY) {
		unsigned pad = (x->bth[1] >> 4) & 3;
		uint32_t off = hl + CNUAS_BTH_LEN + DETH_LEN;

		if (len >= off + pad + IB_MAD_LEN + CNUAS_ICRC_LEN + CNUAS_VCRC_LEN) {
			uint8_t *deth = x->bth + CNUAS_BTH_LEN;

			x->mad = f + off;
			x->sqp = (unsigned)deth[5] << 16 | (unsigned)deth[6] << 8 | deth[7];
		}
	}
	return true;
}

static void drop_smp(struct vswitch *sw, struct port *p)
{
	p->c.ib_drop_smp++;
	sw->ib->port[p->ib_port].pc.vl15_dropped++;
}

/* Forward a (modified) received SMP out of IB port @out as is. */
static void smp_out(struct vswitch *sw, struct port *p, struct ibf *x, unsigned out)
{
	struct port *d = ib_slot(sw, out);

	if (!d || out > sw->ib->nports || sw->ib->port[out].state < IB_PS_INIT) {
		p->c.ib_drop_no_route++;
		sw->ib->port[p->ib_port].pc.relay_errors++;
		return;
	}
	reseal(sw->ib, x->f, x->len);
	dp_capture_fwd(sw, p, x->f, x->len);
	/* a copy: the receive buffer may be modified again by the caller */
	struct pkt *k = pkt_new(x->f, x->len);

	if (!k)
		return;
	if (dp_flood_one(sw, d, k->data, k->len, k, 0))
		count_xmit(sw->ib, out, x->len, false);
	else
		sw->ib->port[out].pc.xmit_discards++;
	pkt_put(k);
}

/*
 * The switch's SMA answers the SMP at x (arrived on IB port @in) and the
 * answer goes out: DR responses along the return path, LID-routed ones to
 * the requester's LID.
 */
static void sma_local(struct vswitch *sw, struct port *p, struct ibf *x, unsigned in, bool dr)
{
	struct ib_switch *ib = sw->ib;
	/* aligned: the SMA reads it as struct umad_smp */
	uint8_t mad[IB_MAD_LEN] __attribute__((aligned(8))), f[MAD_FRAME_LEN];
	unsigned out, dlid, slid = ib_own_lid(ib);

	uint64_t viol = ib->mkey_violations;

	/* captured as delivered to the SMA (with the hop pointer it moved) */
	reseal(ib, x->f, x->len);
	dp_capture_fwd(sw, p, x->f, x->len);
	memcpy(mad, x->mad, IB_MAD_LEN);
	p->c.ib_smp_local++;
	if (!ib_sma_process(sw, in, mad, dr)) {
		if (ib->mkey_violations != viol) {
			p->c.ib_drop_mkey++;
			ib_trap_256(sw, x->slid, mad);	/* refused: @mad as it came */
		}
		return;
	}
	if (dr) {
		struct umad_smp *smp = (struct umad_smp *)mad;
		unsigned hc = smp->hop_cnt, hp = smp->hop_ptr;

		/* sending the response: C14-13:1 (or hop count 0: back where it came from) */
		if (hc && hp == hc + 1) {
			hp--;
			out = smp->return_path[hp];
		} else if (!hc) {
			hp = 0;
			out = in;
		} else {
			drop_smp(sw, p);
			return;
		}
		smp->hop_ptr = (uint8_t)hp;
		dlid = CNUAS_LID_PERMISSIVE;
		slid = CNUAS_LID_PERMISSIVE;
	} else {
		dlid = x->slid;
		out = ib_lft_port(ib, dlid);
		if (out == 0 || out > ib->nports)
			out = in;	/* not routed yet: back where it came from */
		if (!slid)
			slid = CNUAS_LID_PERMISSIVE;
	}
	build_mad_frame(f, CNUAS_VL15, 0, dlid, slid, x->pkey, x->sqp, 0, 0, mad);
	ib_send_built(sw, out, f, MAD_FRAME_LEN);
}

static void pma_local(struct vswitch *sw, struct port *p, struct ibf *x, unsigned in)
{
	struct ib_switch *ib = sw->ib;
	uint8_t mad[IB_MAD_LEN] __attribute__((aligned(8))), f[MAD_FRAME_LEN];
	unsigned out;

	dp_capture_fwd(sw, p, x->f, x->len);
	memcpy(mad, x->mad, IB_MAD_LEN);
	if (!ib_pma_process(sw, mad))
		return;
	out = ib_lft_port(ib, x->slid);
	if (out == 0 || out > ib->nports)
		out = in;
	build_mad_frame(f, x->vl, x->sl, x->slid, ib_own_lid(ib), x->pkey, x->sqp, QP1_QKEY, 1,
			mad);
	ib_send_built(sw, out, f, MAD_FRAME_LEN);
}

/* LID-route a VL15 SMP (class 0x01, or the LID-routed part of a DR path). */
static void smp_lid_route(struct vswitch *sw, struct port *p, struct ibf *x, unsigned dlid,
			  unsigned in, bool dr)
{
	unsigned out;

	if (dlid == CNUAS_LID_PERMISSIVE || own_lid(sw->ib, dlid)) {
		sma_local(sw, p, x, in, dr);
		return;
	}
	out = ib_lft_port(sw->ib, dlid);
	if (out == 0 || out > sw->ib->nports) {
		p->c.ib_drop_no_route++;
		sw->ib->port[in].pc.relay_errors++;
		return;
	}
	smp_out(sw, p, x, out);
}

/*
 * Send a directed-route SMP on along its path: out of IB port @out with
 * hop pointer @hp, or drop it when the path names no port of ours.
 */
static void smp_dr_forward(struct vswitch *sw, struct port *p, struct ibf *x,
			   struct umad_smp *smp, unsigned hp, unsigned out)
{
	if (out == 0 || out > sw->ib->nports) {
		drop_smp(sw, p);
		return;
	}
	smp->hop_ptr = (uint8_t)hp;
	memcpy(x->mad, smp, sizeof(*smp));
	smp_out(sw, p, x, out);
}

/* Directed-route SMP arrived on IB port @in (IBA 14.2.2, as a switch). */
static void smp_dr(struct vswitch *sw, struct port *p, struct ibf *x, unsigned in)
{
	/* an aligned copy: the MAD sits at an odd offset in the frame */
	struct umad_smp sbuf, *smp = &sbuf;

	memcpy(smp, x->mad, sizeof(*smp));
	unsigned hc = smp->hop_cnt, hp = smp->hop_ptr;
	bool back = ntohs(smp->status) & UMAD_SMP_DIRECTION;
	unsigned dr_slid = ntohs(smp->dr_slid), dr_dlid = ntohs(smp->dr_dlid);

	if (hc >= UMAD_SMP_MAX_HOPS) {		/* C14-6 */
		drop_smp(sw, p);
		return;
	}
	if (!back) {
		if (hc && hp == 0) {
			/*
			 * C14-9:1 on receipt: the sender should have moved the
			 * pointer, unless the SMP came LID-routed to us as the
			 * first node of its directed part (DrSLID not permissive).
			 */
			if (dr_slid == CNUAS_LID_PERMISSIVE || !own_lid(sw->ib, x->dlid)) {
				drop_smp(sw, p);
				return;
			}
			smp_dr_forward(sw, p, x, smp, 1, smp->initial_path[1]);
			return;
		}
		if (hp && hp < hc) {			/* C14-9:2: a hop on the way */
			smp->return_path[hp] = (uint8_t)in;
			smp_dr_forward(sw, p, x, smp, hp + 1, smp->initial_path[hp + 1]);
			return;
		}
		if (hp == hc) {				/* C14-9:3: end of the directed part */
			if (hc)
				smp->return_path[hp] = (uint8_t)in;
			smp->hop_ptr = (uint8_t)(hp + 1);
			memcpy(x->mad, smp, sizeof(*smp));
			if (dr_dlid == CNUAS_LID_PERMISSIVE)
				sma_local(sw, p, x, in, true);
			else
				smp_lid_route(sw, p, x, dr_dlid, in, true);
			return;
		}
		if (hp == hc + 1) {			/* C14-9:4: LID-routed to us at the end */
			sma_local(sw, p, x, in, true);
			return;
		}
		drop_smp(sw, p);			/* C14-9:5 */
		return;
	}
	if (hc && hp == hc + 1) {			/* C14-13:1: from the LID-routed end */
		smp_dr_forward(sw, p, x, smp, hp - 1, smp->return_path[hp - 1]);
		return;
	}
	if (hp >= 2 && hp <= hc) {			/* C14-13:2: a hop on the way back */
		smp_dr_forward(sw, p, x, smp, hp - 1, smp->return_path[hp - 1]);
		return;
	}
	if (hp == 1 && dr_slid != CNUAS_LID_PERMISSIVE) {	/* C14-13:3: LID-route to the SM */
		smp->hop_ptr = 0;
		memcpy(x->mad, smp, sizeof(*smp));
		smp_lid_route(sw, p, x, dr_slid, in, true);
		return;
	}
	/* hop pointer 1 with a permissive DrSLID, or 0: for an SM here; there is none */
	drop_smp(sw, p);
}

static void handle_smp(struct vswitch *sw, struct port *p, struct ibf *x)
{
	unsigned in = p->ib_port;

	if (x->lnh != CNUAS_LNH_IBA_LOCAL || x->dqp != 0 || !x->mad) {
		drop_smp(sw, p);
		return;
	}
	switch (x->mad[1]) {
	case UMAD_CLASS_SUBN_DIRECTED_ROUTE:
		smp_dr(sw, p, x, in);
		break;
	case UMAD_CLASS_SUBN_LID_ROUTED:
		smp_lid_route(sw, p, x, x->dlid, in, false);
		break;
	default:
		drop_smp(sw, p);
	}
}

/*
 * The vcrc fault of the port a unicast data frame came from: one bit of
 * the frame (its VCRC already written) flipped as if on the link out of
 * the switch, so the receiving port's VCRC check drops it and counts a
 * receive error. Returns 0, or the flip: byte offset << 8 | bit mask.
 */
static uint32_t link_fault(struct port *p, uint32_t len)
{
	struct fault *f = &p->fault;

	if (!f->vcrc || fault_rand(f) >= f->vcrc)
		return 0;
	return (fault_rand(f) % len) << 8 | 1u << (fault_rand(f) & 7);
}

static bool port_active(const struct ib_switch *ib, unsigned n)
{
	return n && n <= ib->nports && ib->port[n].slot >= 0 && ib->port[n].state == IB_PS_ACTIVE;
}

uint8_t *ib_sl2vl(const struct ib_switch *ib, unsigned in, unsigned out)
{
	return ib->sl2vl + ((size_t)in * (ib->nports + 1) + out) * 8;
}

/*
 * Whether a data packet of @sl from IB port @in may leave by @out: its
 * SLtoVL entry for that pair must name an operational data VL there, not
 * VL15 (IBA 7.6.6: such packets are discarded). Every port has one data
 * VL (VLCap VL0), so a packet that passes leaves on VL0.
 */
static bool sl_passes(const struct ib_switch *ib, unsigned in, unsigned out, unsigned sl)
{
	uint8_t b = ib_sl2vl(ib, in, out)[sl / 2];
	unsigned vl = sl & 1 ? b & 0x0f : b >> 4;
	/* OperationalVLs: 1 = VL0, 2 = VL0..1, 3 = VL0..3, 4 = VL0..7, 5 = VL0..14 */
	unsigned ops = mad_get_field((void *)ib->port[out].pi, 0, IB_PORT_OPER_VLS_F);

	return ops && vl < (ops >= 5 ? 15u : 1u << (ops - 1));
}

/*
 * Partition enforcement, where the SM enabled it on IB port @n (PortInfo
 * PartitionEnforcementInbound/Outbound, @out picks which): a data packet
 * passes if its P_Key's partition number (low 15 bits, not 0) is in the
 * port's P_Key table. The membership bit is not compared: the SM copies an
 * end port's table, limited memberships included, to its switch port, and
 * whether two members may talk is for the end ports to judge. Raw packets
 * (no BTH) carry no P_Key and are not checked (raw filtering is apart).
 */
static bool pkey_allowed(const struct ib_switch *ib, unsigned n, const struct ibf *x, bool out)
{
	const struct ib_port *ip = &ib->port[n];
	unsigned base = x->pkey & 0x7fff;

	if (!x->bth ||
	    !mad_get_field((void *)ip->pi, 0, out ? IB_PORT_PART_EN_OUTB_F : IB_PORT_PART_EN_INB_F))
		return true;
	if (!base)
		return false;
	for (unsigned i = 0; i < IB_PKEY_CAP; i++)
		if ((ip->pkeys[i] & 0x7fff) == base)
			return true;
	return false;
}

bool ib_forward(struct vswitch *sw, struct port *p, uint8_t *data, uint32_t len, struct pkt *k)
{
	struct ib_switch *ib = sw->ib;
	unsigned in = p->ib_port;
	struct ibf x;

	if (!in)
		return true;
	if (!ib_parse(sw, p, data, len, &x))
		return true;
	ib->port[in].pc.rcv_pkts++;
	ib->port[in].pc.rcv_bytes += len;
	if (cnuas_lid_is_mcast(x.dlid))
		ib->port[in].pc.rcv_mcast++;
	else
		ib->port[in].pc.rcv_ucast++;
	if (x.slid && x.slid <= CNUAS_LID_UCAST_MAX)
		ib->port[in].neighbor_lid = (uint16_t)x.slid;
	if (x.vl == CNUAS_VL15) {
		handle_smp(sw, p, &x);
		return true;
	}
	/* data: only between Active ports */
	if (!port_active(ib, in)) {
		p->c.ib_drop_not_active++;
		ib->port[in].pc.rcv_errors++;
		return true;
	}
	if (!pkey_allowed(ib, in, &x, false)) {
		ib->port[in].pc.rcv_constraint++;
		return true;
	}
	if (own_lid(ib, x.dlid)) {
		if (x.mad && x.dqp == 1 && x.mad[1] == UMAD_CLASS_PERF_MGMT)
			pma_local(sw, p, &x, in);
		else
			p->c.ib_drop_no_route++;
		return true;
	}
	if (x.vl != 0) {
		/*
		 * Out on VL0, the one data VL. Otherwise the frame is unchanged and
		 * the VCRC it came with, checked on the way in, is the one the next
		 * link needs: no second CRC pass per frame.
		 */
		cnuas_lrh_set_vl(data, 0);
		cnuas_vcrc_put(&ib->vcrc_table, data, len - CNUAS_VCRC_LEN);
	}
	if (cnuas_lid_is_mcast(x.dlid)) {
		unsigned i = x.dlid - CNUAS_LID_MCAST_MIN;
		bool any = false;

		if (i >= IB_MFT_CAP) {
			p->c.ib_drop_no_route++;
			ib->port[in].pc.relay_errors++;
			return true;
		}
		dp_capture_fwd(sw, p, data, len);
		for (unsigned pos = 0; pos * 16 <= ib->nports; pos++) {
			uint16_t m = ib->mft[i * IB_MFT_POSITIONS + pos];

			for (unsigned b = 0; m && b < 16; b++) {
				unsigned out = pos * 16 + b;

				if (!(m & (1u << b)) || out == 0 || out == in || out > ib->nports)
					continue;
				if (!port_active(ib, out)) {
					ib->port[out].pc.xmit_discards++;
					continue;
				}
				any = true;
				if (!pkey_allowed(ib, out, &x, true)) {
					ib->port[out].pc.xmit_constraint++;
					continue;
				}
				if (!sl_passes(ib, in, out, x.sl)) {
					p->c.ib_drop_vl++;
					ib->port[out].pc.xmit_discards++;
					continue;
				}
				if (dp_flood_one(sw, ib_slot(sw, out), data, len, k, 0))
					count_xmit(ib, out, len, true);
				else
					ib->port[out].pc.xmit_discards++;
			}
		}
		if (!any)
			p->c.ib_drop_no_route++;
		return true;
	}
	unsigned out = ib_lft_port(ib, x.dlid);

	if (x.dlid == 0 || x.dlid == CNUAS_LID_PERMISSIVE || out == 0 || out > ib->nports) {
		p->c.ib_drop_no_route++;
		ib->port[in].pc.relay_errors++;
		return true;
	}
	if (out == in) {	/* never back out of the ingress port */
		p->c.drop_filtered++;
		ib->port[in].pc.relay_errors++;
		return true;
	}
	if (!port_active(ib, out)) {
		p->c.ib_drop_not_active++;
		ib->port[out].pc.xmit_discards++;
		return true;
	}
	if (!pkey_allowed(ib, out, &x, true)) {
		ib->port[out].pc.xmit_constraint++;
		return true;
	}
	if (!sl_passes(ib, in, out, x.sl)) {
		p->c.ib_drop_vl++;
		ib->port[out].pc.xmit_discards++;
		return true;
	}
	uint32_t flip = link_fault(p, len);

	if (flip)
		data[flip >> 8] ^= (uint8_t)flip;
	if (!dp_unicast(sw, p, ib_slot(sw, out), data, len, k, 0)) {
		/* paused: the frame comes here again (whole), count it then */
		if (flip)
			data[flip >> 8] ^= (uint8_t)flip;
		ib->port[in].pc.rcv_pkts--;
		ib->port[in].pc.rcv_bytes -= len;
		ib->port[in].pc.rcv_ucast--;
		return false;
	}
	if (flip)
		p->c.fault_vcrc++;
	count_xmit(ib, out, len, false);
	return true;
}

/* ---- control ---- */

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
				  phys == IB_PHYS_LINKUP ? "linkup" : "polling", ip->neighbor_lid,
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
				  phys == IB_PHYS_LINKUP ? "linkup" : "polling", ip->neighbor_lid,
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

int ib_ctl_lft(struct vswitch *sw, struct strbuf *b, bool json)
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

int ib_ctl_mft(struct vswitch *sw, struct strbuf *b, bool json)
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

static int ib_ctl_table(struct vswitch *sw, struct strbuf *b, const char *name, bool json)
{
	return strcmp(name, "lft") ? ib_ctl_mft(sw, b, json) : ib_ctl_lft(sw, b, json);
}

static void ib_describe(const struct vswitch *sw, char *buf, size_t len)
{
	snprintf(buf, len, "ib, %u ports, guid 0x%016llx", sw->ib->nports,
		 (unsigned long long)sw->ib->guid);
}

const struct fwd_mode ib_fwd_mode = {
	.name = "ib",
	.capture_linktype = CAPTURE_LINKTYPE_INFINIBAND,
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
};
