// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: the IB switch's management path. 256-byte MADs go into
 * its SMA, its directed-route and LID-routed SMP forwarding and its PMA
 * from ports that are or are not subnet manager ports, under M_Key
 * states, on real socketpair ports.
 *
 * Property: a MAD from a port that may not manage changes none of the
 * switch's management state (forwarding tables, SwitchInfo, PortInfo,
 * P_Key tables, SLtoVL, VLArb, M_Key lease, PMA counter bases).
 *
 * Input: a 4-byte setup, then records of an op byte and a MAD (256
 * bytes; the last one is padded with zeros).
 *   setup [0]: bits 0-3 SM ports (IB ports 1..4; none: every port is
 *              trusted), bit 4 "enforced" even with none (nobody manages)
 *         [1]: bits 0-1 M_Key protect bits, bit 2 an M_Key is set, bits
 *              3-4 lease seconds
 *         [2]: the switch's LID (0 becomes 1)
 *         [3]: bit 0 ports Active (else Init), bit 1 partition
 *              enforcement on every port, bits 4-6 LMC of port 0
 *   op: bits 0-1 the port (IB port 1..4, LID 0x10 + port), bit 2 the
 *       MAD carries the right M_Key, bit 3 DLID the switch's LID (else
 *       permissive), bit 4 a PMA GMP on QP1 (else an SMP on VL15), bit
 *       5 the SLID is another port's LID, bit 6 a second passes first
 *       (timers: lease, trap resends), bit 7 the port hangs up after.
 */
#include "vswitch_fixture.h"

#include "cnuas_ib_link.h"
#include "dp.h"
#include "ib.h"

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#define NPORTS 4
#define MKEY 0x0123456789abcdefull
#define PORT_LID(n) (0x10 + (n))

/*
 * Everything only a manager may change, copied (memcpy/memcmp: the
 * tables are 100 KiB, a byte loop under the sanitizers would dominate).
 */
struct mgmt {
	uint8_t lft[IB_LFT_CAP];
	uint16_t mft[IB_MFT_CAP * IB_MFT_POSITIONS];
	uint8_t sl2vl[(8 + 1) * (8 + 1) * 8];
	uint8_t vlarb[(8 + 1) * 4 * 64];
	uint8_t sw_info[64];
	uint64_t mkey_lease_end;
	uint8_t sm_port[IB_MAX_PORTS + 1];
	struct {
		uint8_t pi[64];
		uint16_t pkeys[IB_PKEY_CAP];
		uint8_t state;
		bool disabled;
		struct ib_pcnt pc_base;
	} port[8 + 1];
};

static void mgmt_copy(struct mgmt *m, const struct ib_switch *ib)
{
	memset(m, 0, sizeof(*m));
	memcpy(m->lft, ib->lft, sizeof(m->lft));
	memcpy(m->mft, ib->mft, sizeof(m->mft));
	memcpy(m->sl2vl, ib->sl2vl, sizeof(m->sl2vl));
	memcpy(m->vlarb, ib->vlarb, sizeof(m->vlarb));
	memcpy(m->sw_info, ib->sw_info, sizeof(m->sw_info));
	m->mkey_lease_end = ib->mkey_lease_end;
	memcpy(m->sm_port, ib->sm_port, sizeof(m->sm_port));
	for (unsigned n = 0; n <= ib->nports; n++) {
		memcpy(m->port[n].pi, ib->port[n].pi, sizeof(m->port[n].pi));
		memcpy(m->port[n].pkeys, ib->port[n].pkeys, sizeof(m->port[n].pkeys));
		m->port[n].state = ib->port[n].state;
		m->port[n].disabled = ib->port[n].disabled;
		m->port[n].pc_base = ib->port[n].pc_base;
	}
}

static void setup(struct vsf *v, const uint8_t *s)
{
	struct vswitch *sw = &v->sw;
	struct ib_switch *ib = sw->ib;
	unsigned lid = s[2] ? s[2] : 1;
	uint8_t *p0 = ib->port[0].pi;

	for (unsigned i = 0; i < NPORTS; i++)
		ib_port_attach(sw, v->port[i]);
	mad_set_field(p0, 0, IB_PORT_LID_F, lid);
	mad_set_field(p0, 0, IB_PORT_LMC_F, s[3] >> 4 & 7);
	mad_set_field(p0, 0, IB_PORT_SMLID_F, PORT_LID(1));
	if (s[1] & 4) {
		mad_set_field64(p0, 0, IB_PORT_MKEY_F, MKEY);
		mad_set_field(p0, 0, IB_PORT_MKEY_PROT_BITS_F, s[1] & 3);
		mad_set_field(p0, 0, IB_PORT_MKEY_LEASE_F, s[1] >> 3 & 3);
	}
	ib->lft[lid] = 0;
	for (unsigned n = 1; n <= NPORTS; n++) {
		ib->lft[PORT_LID(n)] = (uint8_t)n;
		if (s[3] & 1)
			ib->port[n].state = IB_PS_ACTIVE;
		if (s[3] & 2) {
			mad_set_field(ib->port[n].pi, 0, IB_PORT_PART_EN_INB_F, 1);
			mad_set_field(ib->port[n].pi, 0, IB_PORT_PART_EN_OUTB_F, 1);
		}
		if (s[0] & (1u << (n - 1)))
			ib_sm_port_mark(sw, n, IB_SM_OPTION, true);
	}
	if (s[0] & 16)
		ib->sm_enforced = true;
}

/* One MAD from the port the op byte names, sent as it says. */
static void one_mad(struct vsf *v, unsigned op, const uint8_t *mad_in)
{
	struct vswitch *sw = &v->sw;
	struct ib_switch *ib = sw->ib;
	unsigned i = op & 3, n = i + 1;
	uint8_t mad[IB_MAD_LEN], f[IB_MAD_FRAME_LEN];
	unsigned dlid = op & 8 ? ib_own_lid(ib) : CNUAS_LID_PERMISSIVE;
	unsigned slid = PORT_LID(op & 32 ? (n % NPORTS) + 1 : n);
	struct port *p = v->port[i];

	if (!p || !p->used || p->closing || v->peer[i] < 0)
		return;
	memcpy(mad, mad_in, IB_MAD_LEN);
	if (op & 4)
		for (unsigned b = 0; b < 8; b++)
			mad[24 + b] = (uint8_t)(MKEY >> (56 - 8 * b));
	if (op & 16) {
		mad[1] = 0x04;	/* PerfMgmt */
		ib_build_mad_frame(f, 0, 0, op & 8 ? ib_own_lid(ib) : PORT_LID(n % NPORTS + 1),
				   slid, 0xffff, 1, IB_QP1_QKEY, 1, mad);
	} else {
		ib_build_mad_frame(f, CNUAS_VL15, 0, dlid, slid, 0xffff, 0, 0, 0, mad);
	}
	ib_reseal(ib, f, IB_MAD_FRAME_LEN);
	if (op & 64) {
		int timeout;

		sw->now += 1000000000ull;
		ib_timers(sw);
		dp_timers(sw, &timeout);
	}
	static struct mgmt before, after;
	bool trusted = ib_may_manage(ib, n);

	if (!trusted)
		mgmt_copy(&before, ib);

	if (send(v->peer[i], f, sizeof(f), MSG_DONTWAIT) < 0)
		return;
	dp_port_event(sw, p, EPOLLIN);
	dp_flush(sw);
	if (!trusted) {
		mgmt_copy(&after, ib);
		if (memcmp(&before, &after, sizeof(before)))
			abort();	/* a port that may not manage changed the switch */
	}
	for (unsigned k = 0; k < v->nports; k++)
		vsf_drain_peer(v, k);
	if (op & 128) {
		close(v->peer[i]);
		v->peer[i] = -1;
		dp_port_event(sw, p, EPOLLIN | EPOLLHUP | EPOLLRDHUP);
		dp_flush(sw);
		dp_housekeeping(sw);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct vsf v;
	static uint8_t mad[IB_MAD_LEN];
	size_t off = 4;

	if (n < off)
		return 0;
	vsf_init(&v, NPORTS, 256, "/nonexistent/switch.sock");
	if (ib_init(&v.sw, 8, 0, false) < 0)	/* 8 ports: struct mgmt's size */
		abort();
	setup(&v, d);
	while (off < n) {
		unsigned op = d[off++];
		size_t len = n - off < IB_MAD_LEN ? n - off : IB_MAD_LEN;

		memset(mad, 0, sizeof(mad));
		memcpy(mad, d + off, len);
		off += len;
		one_mad(&v, op, mad);
	}
	vsf_fini(&v);
	return 0;
}
