// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: management packets on VL15 and to the switch itself.
 * Directed-route SMPs are forwarded along their paths (IBA 14.2.2),
 * LID-routed ones by the LFT; those for the switch go to its SMA, PMA
 * MADs to its PMA (ib_sma.c), and the answers go back out.
 */
#include "dp.h"
#include "ib.h"
#include "switch.h"

#include <arpa/inet.h>
#include <infiniband/mad.h>
#include <infiniband/umad_sm.h>
#include <infiniband/umad_types.h>
#include <string.h>

_Static_assert(sizeof(struct umad_smp) == IB_MAD_LEN, "an SMP is one MAD");

static void drop_smp(struct vswitch *sw, struct port *p)
{
	p->c.ib_drop_smp++;
	sw->ib->port[p->ib_port].pc.vl15_dropped++;
}

/* An SMP from a port that is no SM's (its SMA's answer, a trap) goes only to an SM. */
static bool to_sm_only(struct vswitch *sw, struct port *p, unsigned out)
{
	if (ib_may_manage(sw->ib, p->ib_port) || ib_may_manage(sw->ib, out))
		return true;
	ib_refuse(sw, p, &p->c.ib_drop_smp_not_sm, "SMP to a port that is no SM's");
	sw->ib->port[p->ib_port].pc.vl15_dropped++;
	return false;
}

/*
 * The LRH of a forwarded SMP: in the directed part of its path both LIDs
 * are permissive (an HCA takes only its own LIDs and 0xFFFF); in a
 * LID-routed part the switch is its source. Resealed when it goes out.
 */
static void smp_set_lids(struct ib_switch *ib, struct ibf *x, unsigned dlid, bool lid_routed)
{
	unsigned slid = lid_routed && ib_own_lid(ib) ? ib_own_lid(ib) : CNUAS_LID_PERMISSIVE;

	x->f[2] = (uint8_t)(dlid >> 8);
	x->f[3] = (uint8_t)dlid;
	x->f[6] = (uint8_t)(slid >> 8);
	x->f[7] = (uint8_t)slid;
}

/* Forward a (modified) received SMP out of IB port @out as is. */
static void smp_out(struct vswitch *sw, struct port *p, struct ibf *x, unsigned out)
{
	struct port *d = ib_slot(sw, out);

	if (!to_sm_only(sw, p, out))
		return;
	if (!d || out > sw->ib->nports || sw->ib->port[out].state < IB_PS_INIT) {
		p->c.ib_drop_no_route++;
		sw->ib->port[p->ib_port].pc.relay_errors++;
		return;
	}
	ib_reseal(sw->ib, x->f, x->len);
	dp_capture_fwd(sw, p, x->f, x->len);
	/* a copy: the receive buffer may be modified again by the caller */
	struct pkt *k = pkt_new(x->f, x->len);

	if (!k)
		return;
	if (dp_flood_one(sw, d, k->data, k->len, k, IB_VL15_PRIO))
		ib_count_xmit(sw->ib, out, x->len, false);
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
	uint8_t mad[IB_MAD_LEN] __attribute__((aligned(8))), f[IB_MAD_FRAME_LEN];
	unsigned out, dlid, slid = ib_own_lid(ib);

	uint64_t viol = ib->mkey_violations;

	if (!to_sm_only(sw, p, 0))
		return;
	/* captured as delivered to the SMA (with the hop pointer it moved) */
	ib_reseal(ib, x->f, x->len);
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
		if (!hp && ntohs(smp->dr_slid) != CNUAS_LID_PERMISSIVE) {
			/* came LID-routed from DrSLID (C14-13:3): goes back that way */
			dlid = ntohs(smp->dr_slid);
			slid = ib_own_lid(ib) ? ib_own_lid(ib) : CNUAS_LID_PERMISSIVE;
			out = ib_lft_port(ib, dlid);
			if (out == 0 || out > ib->nports)
				out = in;
		}
	} else {
		dlid = x->slid;
		out = ib_lft_port(ib, dlid);
		if (out == 0 || out > ib->nports)
			out = in;	/* not routed yet: back where it came from */
		if (!slid)
			slid = CNUAS_LID_PERMISSIVE;
	}
	ib_build_mad_frame(f, CNUAS_VL15, 0, dlid, slid, x->pkey, x->sqp, 0, 0, mad);
	ib_send_built(sw, out, f, IB_MAD_FRAME_LEN);
}

void ib_pma_local(struct vswitch *sw, struct port *p, struct ibf *x, unsigned in)
{
	struct ib_switch *ib = sw->ib;
	uint8_t mad[IB_MAD_LEN] __attribute__((aligned(8))), f[IB_MAD_FRAME_LEN];
	unsigned out;

	dp_capture_fwd(sw, p, x->f, x->len);
	memcpy(mad, x->mad, IB_MAD_LEN);
	if (!ib_pma_process(sw, mad))
		return;
	out = ib_lft_port(ib, x->slid);
	if (out == 0 || out > ib->nports)
		out = in;
	ib_build_mad_frame(f, x->vl, x->sl, x->slid, ib_own_lid(ib), x->pkey, x->sqp, IB_QP1_QKEY, 1,
			mad);
	ib_send_built(sw, out, f, IB_MAD_FRAME_LEN);
}

/* LID-route a VL15 SMP (class 0x01, or the LID-routed part of a DR path). */
static void smp_lid_route(struct vswitch *sw, struct port *p, struct ibf *x, unsigned dlid,
			  unsigned in, bool dr)
{
	unsigned out;

	if (dlid == CNUAS_LID_PERMISSIVE || ib_is_own_lid(sw->ib, dlid)) {
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
	smp_set_lids(sw->ib, x, CNUAS_LID_PERMISSIVE, false);
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
			if (dr_slid == CNUAS_LID_PERMISSIVE || !ib_is_own_lid(sw->ib, x->dlid)) {
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
			if (dr_dlid == CNUAS_LID_PERMISSIVE) {
				sma_local(sw, p, x, in, true);
			} else {
				smp_set_lids(sw->ib, x, dr_dlid, true);
				smp_lid_route(sw, p, x, dr_dlid, in, true);
			}
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
		smp_set_lids(sw->ib, x, dr_slid, true);
		smp_lid_route(sw, p, x, dr_slid, in, true);
		return;
	}
	/* hop pointer 1 with a permissive DrSLID, or 0: for an SM here; there is none */
	drop_smp(sw, p);
}

void ib_handle_smp(struct vswitch *sw, struct port *p, struct ibf *x)
{
	unsigned in = p->ib_port;

	if (x->lnh != CNUAS_LNH_IBA_LOCAL || x->dqp != 0 || !x->mad) {
		drop_smp(sw, p);
		return;
	}
	if (!ib_smp_ingress_ok(sw, p, x)) {
		sw->ib->port[in].pc.vl15_dropped++;
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
