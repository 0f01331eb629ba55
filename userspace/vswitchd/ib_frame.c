// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * InfiniBand mode: frames the switch writes. ICRC and VCRC of a frame it
 * changed, the MAD frames it sends itself, the corrupt= fault.
 */
#include "dp.h"
#include "ib.h"
#include "switch.h"

#include <string.h>
#include <zlib.h>

/* Write the ICRC and VCRC of an IB-mode frame of @len bytes (VCRC included). */
void ib_reseal(const struct ib_switch *ib, uint8_t *f, uint32_t len)
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

void ib_send_built(struct vswitch *sw, unsigned out, uint8_t *frame, uint32_t len)
{
	struct port *d = ib_slot(sw, out);
	struct pkt *k;

	if (!d) {
		if (out && out <= sw->ib->nports)
			sw->ib->port[out].pc.xmit_discards++;
		return;
	}
	ib_reseal(sw->ib, frame, len);
	k = pkt_new(frame, len);
	if (!k)
		return;
	dp_capture_own(sw, k->data, k->len);
	if (dp_flood_one(sw, d, k->data, k->len, k,
			 cnuas_lrh_vl(frame) == CNUAS_VL15 ? IB_VL15_PRIO : 0))
		ib_count_xmit(sw->ib, out, len, false);
	else
		sw->ib->port[out].pc.xmit_discards++;
	pkt_put(k);
}

/*
 * A MAD frame: LRH (no GRH), BTH (UD SEND only), DETH, the MAD, room for
 * ICRC and VCRC. Returns its length.
 */
uint32_t ib_build_mad_frame(uint8_t *f, unsigned vl, unsigned sl, unsigned dlid, unsigned slid,
				unsigned pkey, unsigned dqp, uint32_t qkey, unsigned sqp,
				const uint8_t *mad)
{
	uint8_t *bth = f + CNUAS_LRH_LEN, *deth = bth + CNUAS_BTH_LEN;

	cnuas_lrh_build(f, vl, sl, CNUAS_LNH_IBA_LOCAL, dlid, slid,
			(IB_MAD_FRAME_LEN - CNUAS_VCRC_LEN) / 4);
	memset(bth, 0, CNUAS_BTH_LEN + IB_DETH_LEN);
	bth[0] = IB_BTH_OP_UD_SEND_ONLY;
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
	memcpy(f + IB_MAD_OFF, mad, IB_MAD_LEN);
	return IB_MAD_FRAME_LEN;
}
