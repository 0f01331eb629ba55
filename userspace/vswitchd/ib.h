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

#include <stdbool.h>
#include <stdint.h>

#include "cnuas_ib_link.h"
#include "strbuf.h"

struct vswitch;
struct port;
struct pkt;
struct fault;

#define IB_DEFAULT_PORTS	32
#define IB_MAX_PORTS		254
#define IB_LFT_CAP		0xc000		/* every unicast LID */
#define IB_MFT_CAP		1024		/* MLIDs 0xc000..0xc3ff */
#define IB_MFT_POSITIONS	16		/* 16 ports each: 0..255 */
#define IB_PKEY_CAP		32		/* one block */
#define IB_MAD_LEN		256

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
	uint64_t handovers;
	struct ib_port port[IB_MAX_PORTS + 1];
};

/* ib_route.c: setup (sw->ops becomes ib_fwd_mode), ports, the forwarding plane */
int ib_init(struct vswitch *sw, unsigned nports, uint64_t guid, bool guid_set);
void ib_fini(struct vswitch *sw);
int ib_port_attach(struct vswitch *sw, struct port *p);
void ib_port_detach(struct vswitch *sw, struct port *p);
/* p's IB port keeps its state for the next guest port for @ms ms. */
void ib_port_handover(struct vswitch *sw, struct port *p, unsigned ms);
/* Once a second: a hand-over nobody took ends in a link down. */
void ib_timers(struct vswitch *sw);
/* One frame from p; false: p must pause (unicast destination full). */
bool ib_forward(struct vswitch *sw, struct port *p, uint8_t *data, uint32_t len, struct pkt *k);
void ib_fault_corrupt(struct vswitch *sw, struct fault *f, uint8_t *data, uint32_t len);
/* Send a frame the switch built (LRH..ICRC then room for the VCRC) out of IB port @out. */
void ib_send_built(struct vswitch *sw, unsigned out, uint8_t *frame, uint32_t len);
unsigned ib_lft_port(const struct ib_switch *ib, unsigned dlid);
unsigned ib_own_lid(const struct ib_switch *ib);
const char *ib_state_name(unsigned state);

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
void ib_trap_128(struct vswitch *sw);
/* Bad M_Key: @mad, refused, came from @slid. */
void ib_trap_256(struct vswitch *sw, unsigned slid, const uint8_t *mad);
/* The 8-byte SLtoVL table of a packet from IB port @in leaving by @out. */
uint8_t *ib_sl2vl(const struct ib_switch *ib, unsigned in, unsigned out);

/* ctl: show (JSON: the top object's "ib" member), lft, mft */
void ib_ctl_show(struct vswitch *sw, struct strbuf *b, bool json);
int ib_ctl_lft(struct vswitch *sw, struct strbuf *b, bool json);
int ib_ctl_mft(struct vswitch *sw, struct strbuf *b, bool json);

#endif
