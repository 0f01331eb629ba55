// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: the management agents of cnuas_ib's IB-mode port, the
 * driver's own mad.c, sma.c, pma.c and trap.c built against kstub/: every
 * MAD a subnet manager (or anyone on the fabric) sends the HCA's SMA and
 * PMA through process_mad, under any M_Key state, with the Trap 256
 * notices that violations raise sent through a recording MAD layer.
 *
 * Input: a setup byte, then records of an op byte and a 256-byte MAD.
 *   setup: bits 0-2 the active MTU (256 << n % 5), bit 3 an SM runs here
 *          (IB_PORT_SM), bit 4 its SM is disabled, bit 5 no trap agent,
 *          bit 6 the link is down, bit 7 the port starts Armed
 *   op:    bit 0 IB_MAD_IGNORE_MKEY, bit 1 no work completion (a local
 *          MAD), bit 2 two seconds pass first, bit 3 the trap work item
 *          runs after, bit 4 the MAD layer ends the traps in flight after
 *          (bit 5: repressed, else timed out), bit 6 to port 2, bit 7 the
 *          device is in Ethernet mode for this MAD
 * Checked after every MAD: a reply is a GetResp (directed-route ones with
 * the direction bit) of exactly one MAD; a SubnSet without the port's
 * M_Key changes no configuration; a Get without it never shows the key
 * under protection 1 (unless it held the key in its own data); the
 * port's state, LID, MTU, VLs and M_Key protection stay in their ranges;
 * at most one trap per number in flight.
 */
#include <stdio.h>

#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>
#include <rdma/ib_smi.h>

#include "cnuas_ib.h"

#define MAD_LEN		256

/* kstub's layouts are the wire's (IBA 13.4, 14.2.5, 16.1). */
static_assert(sizeof(struct ib_mad) == MAD_LEN, "MAD");
static_assert(sizeof(struct ib_smp) == MAD_LEN, "SMP");
static_assert(sizeof(struct ib_pma_mad) == MAD_LEN, "PMA MAD");
static_assert(sizeof(struct ib_mad_notice_attr) == 64, "Notice");
static_assert(sizeof(struct ib_port_info) <= IB_SMP_DATA_SIZE, "PortInfo");
static_assert(sizeof(struct ib_pma_portcounters_ext) <= 192, "PortCountersExt");

bool kstub_in_softirq;
bool kstub_debug;
unsigned long jiffies;
u64 kstub_ns;

void kstub_printk(const char *fmt, ...)
{
	(void)fmt;
}

static struct cnuas_ib_dev *cdev;
static u32 fx_caps;
static enum ib_mtu fx_mtu;
static u64 fx_vcrc_errors;

/* ---- what mad.c, sma.c, pma.c and trap.c call of the rest ---- */
u32 cnuas_ib_port_cap_mask(struct cnuas_ib_dev *d)
{
	return d->port.cap_mask | fx_caps;
}

void cnuas_ib_port_speed(struct cnuas_ib_dev *d, u8 *speed, u8 *width)
{
	(void)d;
	*speed = IB_SPEED_QDR;
	*width = IB_WIDTH_4X;
}

__be64 cnuas_ib_port_guid(struct cnuas_ib_dev *d)
{
	(void)d;
	return cpu_to_be64(0x0200000000000001ULL);
}

void cnuas_ib_port_event(struct cnuas_ib_dev *d, enum ib_event_type type)
{
	(void)d;
	(void)type;
}

enum ib_mtu cnuas_ib_active_mtu(struct cnuas_ib_dev *d)
{
	(void)d;
	return fx_mtu;
}

u64 cnuas_net_aux_rx_vcrc_errors(struct cnuas_net_aux_dev *adev)
{
	(void)adev;
	return fx_vcrc_errors;
}

void cnuas_ib_stat_inc(struct cnuas_ib_dev *d, enum cnuas_ib_stat s)
{
	atomic64_inc(&d->tdev.stats[s]);
}

/* ---- the MAD layer: one agent, its sends recorded until ended ---- */
static struct ib_pd fx_pd;
static struct ib_qp fx_qp0 = { .pd = &fx_pd };
static struct ib_mad_agent fx_agent = { .qp = &fx_qp0, .hi_tid = 7 };
static ib_mad_send_handler fx_send_handler;
static struct ib_mad_send_buf *fx_sent[CNUAS_TRAP_KINDS];
static unsigned int fx_nsent, fx_ahs;

struct ib_mad_agent *ib_register_mad_agent(struct ib_device *dev, u32 port,
					   enum ib_qp_type qpt, void *reg_req,
					   u8 rmpp_version,
					   ib_mad_send_handler send,
					   ib_mad_recv_handler recv,
					   void *context, u32 flags)
{
	(void)dev, (void)port, (void)qpt, (void)reg_req, (void)rmpp_version;
	(void)recv, (void)flags;
	fx_agent.context = context;
	fx_send_handler = send;
	return &fx_agent;
}

/* Ends every send in flight: the handler frees it. */
static void fx_end_sends(enum ib_wc_status status)
{
	while (fx_nsent) {
		struct ib_mad_send_wc wc = {
			.send_buf = fx_sent[--fx_nsent],
			.status = status,
		};

		fx_send_handler(&fx_agent, &wc);
	}
}

void ib_unregister_mad_agent(struct ib_mad_agent *agent)
{
	(void)agent;
	fx_end_sends(IB_WC_WR_FLUSH_ERR);
}

struct ib_mad_send_buf *ib_create_send_mad(struct ib_mad_agent *agent,
					   u32 remote_qpn, u16 pkey_index,
					   int rmpp_active, int hdr_len,
					   int data_len, gfp_t gfp,
					   u8 base_version)
{
	struct ib_mad_send_buf *send = calloc(1, sizeof(*send));

	(void)agent, (void)remote_qpn, (void)pkey_index, (void)rmpp_active;
	(void)gfp, (void)base_version;
	if (!send || hdr_len + data_len != MAD_LEN)
		abort();
	send->mad = calloc(1, MAD_LEN);
	if (!send->mad)
		abort();
	return send;
}

int ib_post_send_mad(struct ib_mad_send_buf *send,
		     struct ib_mad_send_buf **bad)
{
	const struct ib_smp *smp = send->mad;
	const struct ib_mad_notice_attr *n = (const void *)smp->data;
	u16 num = be16_to_cpu(n->trap_num);

	(void)bad;
	/* One trap per number in flight, each a SubnTrap(Notice). */
	if (fx_nsent == CNUAS_TRAP_KINDS || !send->ah ||
	    smp->method != IB_MGMT_METHOD_TRAP ||
	    smp->attr_id != IB_SMP_ATTR_NOTICE ||
	    num < CNUAS_TRAP_FIRST ||
	    num >= CNUAS_TRAP_FIRST + CNUAS_TRAP_KINDS)
		abort();
	for (unsigned int i = 0; i < fx_nsent; i++)
		if (((const struct ib_mad_notice_attr *)
		     ((const struct ib_smp *)fx_sent[i]->mad)->data)->trap_num ==
		    n->trap_num)
			abort();
	fx_sent[fx_nsent++] = send;
	return 0;
}

void ib_free_send_mad(struct ib_mad_send_buf *send)
{
	free(send->mad);
	free(send);
}

void ib_free_recv_mad(struct ib_mad_recv_wc *wc)
{
	(void)wc;
}

struct ib_ah *rdma_create_ah(struct ib_pd *pd, struct rdma_ah_attr *attr,
			     u32 flags)
{
	(void)pd, (void)flags;
	if (!attr->dlid || attr->dlid > CNUAS_LID_UCAST_MAX)
		abort();
	fx_ahs++;
	return malloc(1);
}

int rdma_destroy_ah(struct ib_ah *ah, u32 flags)
{
	(void)flags;
	fx_ahs--;
	free(ah);
	return 0;
}

/* ---- the checks ---- */

/* What the subnet manager configures: all of it, by value. */
struct fx_config {
	u64 mkey;
	u16 lease_period;
	__be64 gid_prefix;
	u16 lid, sm_lid;
	u8 lmc, sm_sl, subnet_timeout, neighbor_mtu, op_vls, lwe, lse;
	u8 vl_high_limit, hoq_life, phy_err, down_default, state;
	u16 pkeys[CNUAS_IB_PKEY_TBL_LEN_IB];
	u8 sl2vl[CNUAS_IB_NUM_SL];
	u8 vlarb[2][CNUAS_IB_VLARB_CAP][2];
};

static void fx_config(const struct cnuas_ib_port *p, struct fx_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mkey = p->mkey;
	c->lease_period = p->mkey_lease_period;
	c->gid_prefix = p->gid_prefix;
	c->lid = p->lid;
	c->sm_lid = p->sm_lid;
	c->lmc = p->lmc;
	c->sm_sl = p->sm_sl;
	c->subnet_timeout = p->subnet_timeout;
	c->neighbor_mtu = p->neighbor_mtu;
	c->op_vls = p->op_vls;
	c->lwe = p->link_width_enabled;
	c->lse = p->link_speed_enabled;
	c->vl_high_limit = p->vl_high_limit;
	c->hoq_life = p->hoq_life;
	c->phy_err = p->phy_err_thresholds;
	c->down_default = p->link_down_default;
	c->state = p->state;
	memcpy(c->pkeys, p->pkeys, sizeof(c->pkeys));
	memcpy(c->sl2vl, p->sl2vl, sizeof(c->sl2vl));
	memcpy(c->vlarb[0], p->vlarb_low, sizeof(c->vlarb[0]));
	memcpy(c->vlarb[1], p->vlarb_high, sizeof(c->vlarb[1]));
}

static void fx_check_port(const struct cnuas_ib_port *p)
{
	if (p->state < IB_PORT_DOWN || p->state > IB_PORT_ACTIVE ||
	    p->lid > CNUAS_LID_UCAST_MAX || p->sm_lid > CNUAS_LID_UCAST_MAX ||
	    p->lmc > 7 || p->mkeyprot > 3 || p->sm_sl > 15 ||
	    p->neighbor_mtu > fx_mtu || p->op_vls > CNUAS_IB_VL_CAP ||
	    p->subnet_timeout > 31 || (p->trap_busy >> CNUAS_TRAP_KINDS) ||
	    (p->trap_pending & ~p->trap_busy))
		abort();
	for (int i = 0; i < CNUAS_IB_NUM_SL; i++)
		if (p->sl2vl[i] > 15)
			abort();
}

static void fx_setup(u8 s)
{
	struct cnuas_ib_port *p;

	if (!cdev)
		cdev = calloc(1, sizeof(*cdev));
	if (!cdev)
		abort();
	memset(cdev, 0, sizeof(*cdev));
	p = &cdev->port;
	jiffies = 1000;
	fx_mtu = IB_MTU_256 + (s & 7) % 5;
	fx_caps = (s & 8 ? IB_PORT_SM : 0) | (s & 16 ? IB_PORT_SM_DISABLED : 0);
	fx_vcrc_errors = 0;
	fx_nsent = 0;
	fx_ahs = 0;
	cdev->link_layer = CNUAS_VNIC_LL_IB;
	snprintf(cdev->ibdev.node_desc, sizeof(cdev->ibdev.node_desc),
		 "fuzz HCA-1");
	cdev->ibdev.node_guid = cnuas_ib_port_guid(cdev);
	/* As port.c leaves a fresh IB port: Init (or Down), the default P_Key. */
	p->link_up = !(s & 64);
	p->phys_state = p->link_up ? IB_PORT_PHYS_STATE_LINK_UP :
				     IB_PORT_PHYS_STATE_POLLING;
	p->state = !p->link_up ? IB_PORT_DOWN :
		   s & 128 ? IB_PORT_ARMED : IB_PORT_INIT;
	p->pkeys[0] = 0xffff;
	p->op_vls = 1;
	p->link_width_enabled = IB_WIDTH_4X;
	p->link_speed_enabled = IB_SPEED_QDR;
	cnuas_ib_trap_init(cdev);
	if (!(s & 32) && cnuas_ib_trap_start(cdev))
		abort();
}

static void fx_teardown(void)
{
	cnuas_ib_trap_stop(cdev);
	cnuas_ib_trap_cleanup(cdev);
	if (fx_nsent || fx_ahs)
		abort();
}

static u64 fx_pi_mkey(const struct ib_smp *smp)
{
	return be64_to_cpu(((const struct ib_port_info *)smp->data)->mkey);
}

/* One MAD through process_mad, and what must hold after it. */
static void fx_mad(u8 op, const u8 *bytes)
{
	struct cnuas_ib_port *p = &cdev->port;
	struct ib_mad *in = malloc(MAD_LEN), *out = malloc(MAD_LEN);
	const struct ib_smp *smp = (const void *)in;
	struct ib_wc wc = { .slid = 0x11 };
	size_t out_size = MAD_LEN;
	struct fx_config before, after;
	bool keyed, smp_class, is_set;
	u16 pkey_index = 0;
	int ret;

	if (!in || !out)
		abort();
	memcpy(in, bytes, MAD_LEN);
	memset(out, 0xa5, MAD_LEN);
	if (op & 4)
		jiffies += 2 * HZ;
	cdev->link_layer = op & 128 ? CNUAS_VNIC_LL_ETH : CNUAS_VNIC_LL_IB;
	smp_class = in->mad_hdr.mgmt_class == IB_MGMT_CLASS_SUBN_LID_ROUTED ||
		    in->mad_hdr.mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE;
	is_set = smp_class && in->mad_hdr.method == IB_MGMT_METHOD_SET;
	keyed = (op & 1) || !p->mkey || be64_to_cpu(smp->mkey) == p->mkey;
	fx_config(p, &before);

	ret = cnuas_ib_process_mad(&cdev->ibdev, op & 1 ? IB_MAD_IGNORE_MKEY : 0,
				   op & 64 ? 2 : 1, op & 2 ? NULL : &wc, NULL,
				   in, out, &out_size, &pkey_index);

	fx_config(p, &after);
	if (ret & IB_MAD_RESULT_REPLY) {
		const struct ib_smp *r = (const void *)out;

		if (out_size != MAD_LEN || !(ret & IB_MAD_RESULT_SUCCESS) ||
		    out->mad_hdr.method != IB_MGMT_METHOD_GET_RESP ||
		    memcmp(&out->mad_hdr.tid, &in->mad_hdr.tid, 8) ||
		    out->mad_hdr.mgmt_class != in->mad_hdr.mgmt_class ||
		    out->mad_hdr.attr_id != in->mad_hdr.attr_id)
			abort();
		if (r->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE &&
		    !(r->status & IB_SMP_DIRECTION))
			abort();
		/*
		 * Protection 1 hides the key from a Get without it (an
		 * error reply echoes the request's own bytes, though).
		 */
		if (smp_class && !keyed && p->mkeyprot == 1 && p->mkey &&
		    r->attr_id == IB_SMP_ATTR_PORT_INFO &&
		    fx_pi_mkey(r) == p->mkey && fx_pi_mkey(smp) != p->mkey)
			abort();
	} else if (out_size != MAD_LEN) {
		abort();
	}
	/* No SubnSet without the M_Key changes anything. */
	if (is_set && !keyed && memcmp(&before, &after, sizeof(before)))
		abort();
	fx_check_port(p);
	free(in);
	free(out);

	if (op & 8) {
		struct work_struct *w = &p->trap_work;

		if (w->pending) {
			w->pending = false;
			w->func(w);
		}
	}
	if (op & 16)
		fx_end_sends(op & 32 ? IB_WC_SUCCESS : IB_WC_RESP_TIMEOUT_ERR);
	fx_check_port(p);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	size_t off = 1;

	if (size < 1)
		return 0;
	fx_setup(data[0]);
	while (size - off >= 1 + MAD_LEN) {
		fx_mad(data[off], data + off + 1);
		off += 1 + MAD_LEN;
	}
	fx_teardown();
	return 0;
}
