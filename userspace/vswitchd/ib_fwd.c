// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: the forwarding plane. Link checks (VCRC, PktLen), the
 * port states, SLtoVL and partitions that gate data, LID routing by the
 * linear forwarding table, multicast by the multicast forwarding table.
 * VL15 and MADs for the switch itself go to ib_smp.c.
 */
#include "dp.h"
#include "ib.h"
#include "switch.h"

#include <infiniband/mad.h>
#include <infiniband/umad_types.h>
#include <string.h>

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
	if (x->bth[0] == IB_BTH_OP_UD_SEND_ONLY) {
		unsigned pad = (x->bth[1] >> 4) & 3;
		uint32_t off = hl + CNUAS_BTH_LEN + IB_DETH_LEN;

		if (len >= off + pad + IB_MAD_LEN + CNUAS_ICRC_LEN + CNUAS_VCRC_LEN) {
			uint8_t *deth = x->bth + CNUAS_BTH_LEN;

			x->mad = f + off;
			x->sqp = (unsigned)deth[5] << 16 | (unsigned)deth[6] << 8 | deth[7];
		}
	}
	return true;
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
 * (no BTH) carry no P_Key to show: they pass neither a port that enforces
 * partitions (stricter than the IBA, which leaves them to raw filtering)
 * nor one whose PortInfo FilterRawInbound/Outbound the SM set.
 */
static bool pkey_allowed(const struct ib_switch *ib, unsigned n, const struct ibf *x, bool out)
{
	const struct ib_port *ip = &ib->port[n];
	unsigned base = x->pkey & 0x7fff;
	bool enforced = mad_get_field((void *)ip->pi, 0,
				      out ? IB_PORT_PART_EN_OUTB_F : IB_PORT_PART_EN_INB_F);

	if (!x->bth)
		return !enforced &&
		       !mad_get_field((void *)ip->pi, 0,
				      out ? IB_PORT_FILTER_RAW_OUTB_F : IB_PORT_FILTER_RAW_INB_F);
	if (!enforced)
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
	/* the neighbour's LID: only one the SM routes to this port, not a spoofed one */
	if (x.slid && ib_slid_ok(ib, in, x.slid))
		ib->port[in].neighbor_lid = (uint16_t)x.slid;
	if (x.vl == CNUAS_VL15) {
		ib_handle_smp(sw, p, &x);
		return true;
	}
	/* data: only between Active ports */
	if (!port_active(ib, in)) {
		p->c.ib_drop_not_active++;
		ib->port[in].pc.rcv_errors++;
		return true;
	}
	if (!ib_slid_ok(ib, in, x.slid)) {
		ib_refuse(sw, p, &p->c.ib_drop_slid_spoof,
			  "data with a SLID the SM routes elsewhere");
		return true;
	}
	if (x.mad && x.dqp == 1 && x.mad[1] == UMAD_CLASS_PERF_MGMT &&
	    x.mad[3] == UMAD_METHOD_SET && !ib_may_manage(ib, in)) {
		/* the switch's PMA or an HCA's: only the SM resets counters */
		ib_refuse(sw, p, &p->c.ib_drop_pma_not_sm, "PMA Set from a port that is no SM's");
		return true;
	}
	if (!pkey_allowed(ib, in, &x, false)) {
		ib->port[in].pc.rcv_constraint++;
		return true;
	}
	if (ib_is_own_lid(ib, x.dlid)) {
		if (x.mad && x.dqp == 1 && x.mad[1] == UMAD_CLASS_PERF_MGMT)
			ib_pma_local(sw, p, &x, in);
		else
			p->c.ib_drop_no_route++;
		return true;
	}
	bool capped;	/* counted where the frame arrived (datapath.c) */
	unsigned prio = qos_classify(p, data, len, &capped);

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
				if (dp_flood_one(sw, ib_slot(sw, out), data, len, k, prio))
					ib_count_xmit(ib, out, len, true);
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
	if (!dp_unicast(sw, p, ib_slot(sw, out), data, len, k, prio)) {
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
	ib_count_xmit(ib, out, len, false);
	return true;
}
