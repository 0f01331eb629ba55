/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * cnuas-vswitchd in InfiniBand mode (--link-layer ib): a managed IB switch.
 *
 * Every message on a port socket is one native IB frame (LRH, optional
 * GRH, BTH..., ICRC, VCRC; see cnuas_ib_link.h). The switch checks the
 * VCRC of every frame it receives and writes it on every frame it sends,
 * routes directed-route SMPs by their paths (IBA 14.2.2), everything
 * else by the linear and multicast forwarding tables the subnet manager
 * writes, and answers SubnGet/SubnSet and the PMA behind its base
 * switch port 0.
 *
 * IB port numbers 1..nports are fixed: a connection takes the lowest
 * free one, and gives it back when it goes. Port 0 is the management
 * port.
 */
#ifndef CNUAS_IB_H
#define CNUAS_IB_H

#include <infiniband/mad.h>
#include <stdbool.h>
#include <stdint.h>

#include "cnuas_ib_link.h"
#include "ib_state.h"
#include "strbuf.h"
#include "switch.h"

#define IB_DEFAULT_PORTS	32
#define IB_MAX_PORTS		254
#define IB_LFT_CAP		0xc000		/* every unicast LID */
#define IB_MFT_CAP		1024		/* MLIDs 0xc000..0xc3ff */
#define IB_MFT_POSITIONS	16		/* 16 ports each: 0..255 */
#define IB_PKEY_CAP		32		/* one block */
#define IB_MAD_LEN		256

/* The MAD frames the switch sends: LRH, BTH (UD SEND only), DETH, the MAD, ICRC, VCRC. */
#define IB_BTH_OP_UD_SEND_ONLY	0x64
#define IB_DETH_LEN		8
#define IB_MAD_OFF		(CNUAS_LRH_LEN + CNUAS_BTH_LEN + IB_DETH_LEN)
#define IB_MAD_FRAME_LEN	(IB_MAD_OFF + IB_MAD_LEN + CNUAS_ICRC_LEN + CNUAS_VCRC_LEN)
#define IB_QP1_QKEY		0x80010000u
/* VL15 is served before every data VL (IBA 7.6.4): SMPs go in the top class */
#define IB_VL15_PRIO		(VS_NUM_TC - 1)

/* IBA PortInfo.PortState */
enum { IB_PS_NOP = 0, IB_PS_DOWN, IB_PS_INIT, IB_PS_ARMED, IB_PS_ACTIVE };
/* PortInfo.PortPhysicalState */
enum { IB_PHYS_SLEEP = 1, IB_PHYS_POLLING = 2, IB_PHYS_DISABLED = 3, IB_PHYS_LINKUP = 5 };

/* What the PMA reports per IB port (they survive a reconnection). */
struct ib_pcnt {
	uint64_t rcv_pkts, rcv_bytes, xmit_pkts, xmit_bytes;
	uint64_t rcv_ucast, rcv_mcast, xmit_ucast, xmit_mcast;
	uint64_t rcv_errors;		/* bad VCRC, bad LRH/PktLen, malformed */
	uint64_t relay_errors;		/* no route, DR path to nowhere */
	uint64_t xmit_discards;		/* egress down, not active, overflow */
	uint64_t vl15_dropped;
	uint64_t link_downed;
	uint64_t rcv_constraint;	/* refused by inbound partition enforcement */
	uint64_t xmit_constraint;	/* refused by outbound partition enforcement */
};

struct ib_port {
	int slot;			/* index in vswitch.ports, -1: nothing connected */
	uint8_t state;			/* IB_PS_* */
	uint8_t pi[64];			/* PortInfo as the SM last set it (fields we keep) */
	uint16_t pkeys[IB_PKEY_CAP];
	uint16_t neighbor_lid;		/* last SLID seen from behind the port */
	/*
	 * PortPhysicalState Disabled (the SM's): the link is off, its guest
	 * hung up, and its reconnections (@held_pid, 0: unknown) refused.
	 * Once Polling again the port is kept for @held_pid until
	 * @held_until (sw->now).
	 */
	bool disabled;
	bool refusal_logged;
	int held_pid;
	uint64_t held_until;
	struct ib_pcnt pc, pc_base;	/* PMA values are pc - pc_base */
};

struct ib_switch {
	unsigned nports;
	uint64_t guid;
	uint8_t sw_info[64];		/* SwitchInfo as kept */
	uint8_t node_desc[64];
	uint8_t *sl2vl;			/* SLtoVL per (in, out) port pair: ib_sl2vl() */
	uint8_t *vlarb;			/* VLArbitration per port: 4 blocks of 64 bytes */
	uint8_t *lft;			/* IB_LFT_CAP entries, 0xff = none */
	uint16_t *mft;			/* [mlid - 0xc000][position] port mask */
	struct cnuas_vcrc_table vcrc_table;
	uint64_t tid;			/* for traps we originate */
	uint64_t mkey_violations;
	uint64_t traps_sent;
	/* M_Key lease (IBA 14.2.4.2): when the protection falls to 0 (sw->now), 0: none */
	uint64_t mkey_lease_end;
	/*
	 * The Bad M_Key trap (256) in flight, resent until the SM represses
	 * it or resends run out: its MAD, TID (0: none), next resend.
	 */
	uint8_t trap256[IB_MAD_LEN];
	uint64_t trap256_tid;
	uint64_t trap256_next;
	unsigned trap256_resends;
	/*
	 * A port handed over (a migrating guest's): kept in its state, with
	 * nothing behind it, for the next guest port until @handover_until
	 * (sw->now). 0: none.
	 */
	unsigned handover_port;
	uint64_t handover_until;
	int handover_pid;		/* only this peer may take it over; 0: any */
	uint64_t handovers;
	/*
	 * Ports designated for a subnet manager (IB_SM_*): only they manage
	 * (ib_trust.c). sm_enforced: one was ever designated; until then
	 * every port is trusted, as before SM ports existed.
	 */
	uint8_t sm_port[IB_MAX_PORTS + 1];
	bool sm_enforced;
	/* --sm-port name=: VMs whose port is an SM port, for as long as the switch runs */
	char sm_opt_name[IB_MAX_PORTS][VS_VM_NAME_MAX + 1];
	unsigned nsm_opt_name;
	/*
	 * What a restart keeps (ib_state.h): the VM each IB port number was
	 * given, the SM ports cnuas-vsctl designated. Saved to @state_path on
	 * every change; NULL: kept in memory only (no --state-dir).
	 */
	struct ib_state st;
	char *state_path;
	uint64_t refused_log_next;	/* rate limit of the refusals' log (sw->now) */
	uint64_t refused_unlogged;	/* refusals since the last one logged */
	struct ib_port port[IB_MAX_PORTS + 1];
};

/* sm_port[]: how a port became an SM port */
#define IB_SM_VSCTL	1	/* cnuas-vsctl sm-port add N: until its guest goes */
#define IB_SM_OPTION	2	/* --sm-port N: for as long as the switch runs */
#define IB_SM_NAME	4	/* its VM is designated by name: while that VM is on it */

/* A received frame, parsed by ib_fwd.c's link checks. */
struct ibf {
	uint8_t *f;
	uint32_t len;		/* whole frame, VCRC included */
	unsigned vl, sl, lnh, dlid, slid;
	uint8_t *bth;		/* NULL: no BTH (raw) */
	unsigned dqp, pkey;
	uint8_t *mad;		/* UD with a full MAD, else NULL */
	unsigned sqp;
};

static inline unsigned ib_own_lid(const struct ib_switch *ib)
{
	return mad_get_field((void *)ib->port[0].pi, 0, IB_PORT_LID_F);
}

/* Whether @dlid is one of the switch's own LIDs (base LID and LMC). */
static inline bool ib_is_own_lid(const struct ib_switch *ib, unsigned dlid)
{
	unsigned lid = ib_own_lid(ib);
	unsigned lmc = mad_get_field((void *)ib->port[0].pi, 0, IB_PORT_LMC_F);

	return lid && dlid >= lid && dlid < lid + (1u << lmc);
}

static inline unsigned ib_lft_port(const struct ib_switch *ib, unsigned dlid)
{
	if (dlid >= IB_LFT_CAP)
		return 0xff;
	return ib->lft[dlid];
}

/* The vswitchd port behind IB port @n, or NULL. */
static inline struct port *ib_slot(struct vswitch *sw, unsigned n)
{
	if (n == 0 || n > sw->ib->nports || sw->ib->port[n].slot < 0)
		return NULL;
	return &sw->ports[sw->ib->port[n].slot];
}

/* PMA: one packet of @len bytes sent out of IB port @out. */
static inline void ib_count_xmit(struct ib_switch *ib, unsigned out, uint32_t len, bool mcast)
{
	struct ib_pcnt *c = &ib->port[out].pc;

	c->xmit_pkts++;
	c->xmit_bytes += len;
	if (mcast)
		c->xmit_mcast++;
	else
		c->xmit_ucast++;
}

/* ib_mode.c: setup (sw->ops becomes ib_fwd_mode), timers */
int ib_init(struct vswitch *sw, unsigned nports, uint64_t guid, bool guid_set);
void ib_fini(struct vswitch *sw);
/* Once a second: hand-overs, trap 256 resends, the M_Key lease. */
void ib_timers(struct vswitch *sw);

/* ib_port.c: IB ports, hand-over of a migrating guest's */
int ib_port_attach(struct vswitch *sw, struct port *p);
void ib_port_detach(struct vswitch *sw, struct port *p);
/* p's IB port keeps its state for the next guest port for @ms ms. */
void ib_port_handover(struct vswitch *sw, struct port *p, unsigned ms, int pid);
/* A hand-over nobody took ends in a link down. */
void ib_handover_end(struct vswitch *sw);
/* PortPhysicalState Disabled: IB port @n's link goes off, its guest is hung up. */
void ib_port_disable(struct vswitch *sw, unsigned n);
/* PortPhysicalState Polling on a disabled port: its guest may come back. */
void ib_port_enable(struct vswitch *sw, unsigned n);
/* Keep the state in @dir (--state-dir): read what it holds. < 0: @err says why. */
int ib_state_open(struct vswitch *sw, const char *dir, char *err, size_t errlen);
/* The state changed: save it, if it is kept in a file (a failure is logged). */
void ib_state_store(struct vswitch *sw);

/* ib_trust.c: who may manage the fabric, and which source LIDs a port may use */
/* Whether IB port @n may send subnet management: an SM port, or none was ever designated. */
static inline bool ib_may_manage(const struct ib_switch *ib, unsigned n)
{
	return !ib->sm_enforced || (n && n <= ib->nports && ib->sm_port[n]);
}
/* IB port @n is an SM port for reason @how (IB_SM_*) or not (!@on). < 0: no such port. */
int ib_sm_port_mark(struct vswitch *sw, unsigned n, unsigned how, bool on);
/* --sm-port name=@name: its VM's port, wherever it connects, is an SM port. */
void ib_sm_name_option(struct vswitch *sw, const char *name);
/* Whether VM @name is designated an SM's (option or cnuas-vsctl). */
bool ib_sm_name(const struct ib_switch *ib, const char *name);
/* The designations the state file kept (sm N, sm name=) are in force again. */
void ib_sm_restore(struct vswitch *sw);
/* Count a refusal in *@counter and log it (at most once a second): @what came from p. */
void ib_refuse(struct vswitch *sw, struct port *p, uint64_t *counter, const char *what);
/* Whether p (not an SM port) may send this VL15 SMP: a response on its way back, a trap. */
bool ib_smp_ingress_ok(struct vswitch *sw, struct port *p, const struct ibf *x);
/* Whether a data packet's SLID is one the LFT routes to IB port @in (its neighbour's). */
bool ib_slid_ok(const struct ib_switch *ib, unsigned in, unsigned slid);
/* The sm-port command: add|del PORT, list. */
int ib_ctl_sm_port(struct vswitch *sw, struct strbuf *b, int argc, char **argv, bool json,
		   char *err, size_t errlen);

/* ib_fwd.c: the forwarding plane */
/* One frame from p; false: p must pause (unicast destination full). */
bool ib_forward(struct vswitch *sw, struct port *p, uint8_t *data, uint32_t len, struct pkt *k);
/* The 8-byte SLtoVL table of a packet from IB port @in leaving by @out. */
uint8_t *ib_sl2vl(const struct ib_switch *ib, unsigned in, unsigned out);

/* ib_smp.c: VL15, and MADs to the switch itself */
void ib_handle_smp(struct vswitch *sw, struct port *p, struct ibf *x);
/* A PMA MAD LID-routed to the switch, from IB port @in: answered. */
void ib_pma_local(struct vswitch *sw, struct port *p, struct ibf *x, unsigned in);

/* ib_frame.c: frames the switch writes */
/* Write the ICRC and VCRC of a frame of @len bytes (VCRC included). */
void ib_reseal(const struct ib_switch *ib, uint8_t *f, uint32_t len);
void ib_fault_corrupt(struct vswitch *sw, struct fault *f, uint8_t *data, uint32_t len);
/* Send a frame the switch built (LRH..ICRC then room for the VCRC) out of IB port @out. */
void ib_send_built(struct vswitch *sw, unsigned out, uint8_t *frame, uint32_t len);
/* A MAD frame (IB_MAD_FRAME_LEN bytes, no GRH) around @mad; returns its length. */
uint32_t ib_build_mad_frame(uint8_t *f, unsigned vl, unsigned sl, unsigned dlid, unsigned slid,
			    unsigned pkey, unsigned dqp, uint32_t qkey, unsigned sqp,
			    const uint8_t *mad);

/* ib_trap.c: traps to the master SM */
void ib_trap_128(struct vswitch *sw);
/* Bad M_Key: @mad, refused, came from @slid. */
void ib_trap_256(struct vswitch *sw, unsigned slid, const uint8_t *mad);
/* The trap 256 in flight: resend it, or give up. */
void ib_trap256_resend(struct vswitch *sw);

/* ib_sma.c: the switch's SMA and PMA */
/*
 * Handle one MAD for the switch itself, arrived on IB port @in (0 if from
 * the switch itself). @mad is IB_MAD_LEN bytes and is turned into the
 * response in place. Returns true if it must be answered.
 */
bool ib_sma_process(struct vswitch *sw, unsigned in, uint8_t *mad, bool dr);
bool ib_pma_process(struct vswitch *sw, uint8_t *mad);
void ib_sma_defaults(struct ib_switch *ib);
void ib_port_info_defaults(struct ib_switch *ib, unsigned n);

/* ib_ctl.c: show (JSON: the top object's "ib" member), lft and mft */
void ib_ctl_show(struct vswitch *sw, struct strbuf *b, bool json);
int ib_ctl_table(struct vswitch *sw, struct strbuf *b, const char *name, bool json);
const char *ib_state_name(unsigned state);

#endif
