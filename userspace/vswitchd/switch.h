/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * cnuas-vswitchd: shared types of the software switch.
 *
 * One single-threaded epoll loop owns everything below; nothing here is
 * locked. Frames live in refcounted `struct pkt` buffers. The fast path
 * (empty egress queue, writable peer) sends straight from the receive
 * buffers; a frame that must wait keeps its receive buffer if it is big
 * (the slot gets a new one) or is copied into a small buffer.
 */
#ifndef CNUAS_SWITCH_H
#define CNUAS_SWITCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fdb.h"
#include "peer_macs.h"
#include "peer_name.h"

#define VS_MAX_FRAME 9216	/* largest frame on the wire (jumbo) */
#define VS_ETH_HLEN 14		/* smallest frame we can switch */
#define VS_BATCH 64		/* frames per recvmmsg/sendmmsg */
#define VS_RX_ROUNDS 4		/* batches per port per wakeup (fairness) */
#define VS_DELAY_MAX 4096	/* delayed frames per port before we stop reading */
#define VS_REORDER_NS (5 * 1000000ull) /* longest hold of a reordered frame */
#define VS_DGRAM_RETRY_NS (1 * 1000000ull) /* dgram peer full: retry after */
#define VS_NUM_TC 8		/* traffic classes, as many as 802.1p priorities */
#define VS_DWRR_UNIT 1024	/* DWRR quantum in bytes per unit of weight */
#define VS_WEIGHT_MAX 1000	/* largest DWRR weight of a class */
#define VS_MAX_STREAM_LISTEN 16	/* --stream sockets */

/* Every per-port counter, once; drives the struct and all output. */
#define VS_COUNTERS(X)                                                         \
	X(rx_frames) X(rx_bytes) X(tx_frames) X(tx_bytes) X(flood)             \
	X(drop_bad_size) X(drop_runt) X(drop_bad_src) X(drop_filtered)         \
	X(drop_flood_overflow) X(drop_port_closed) X(drop_peer_absent)         \
	X(drop_foreign) X(fault_drop) X(fault_corrupt) X(fault_reorder)        \
	X(fault_delay) X(fault_vcrc) X(bp_paused) X(bp_caused) X(drop_mac_spoof)            \
	X(drop_mac_limit) X(drop_mac_not_assigned) X(drop_link_down)            \
	X(ib_drop_vcrc) X(ib_drop_lrh) X(ib_drop_no_route)                    \
	X(ib_drop_not_active) X(ib_drop_smp) X(ib_drop_mkey) X(ib_smp_local)  \
	X(ib_drop_vl) X(ib_drop_smp_not_sm) X(ib_drop_pma_not_sm)              \
	X(ib_drop_slid_spoof)                                                   \
	X(drop_tc_full) X(stream_bad_length) X(prio_capped)

struct counters {
#define VS_X(n) uint64_t n;
	VS_COUNTERS(VS_X)
#undef VS_X
};

/*
 * Counters of one egress traffic class of a port. drop_tc_full: the class
 * is lossy and its queue was full; bp_caused: the class is lossless and a
 * sender was paused on it; queue_hiwater: most frames ever waiting in it.
 */
#define VS_TC_COUNTERS(X)                                                      \
	X(tx_frames) X(tx_bytes) X(drop_tc_full) X(drop_flood_overflow)        \
	X(bp_caused) X(queue_hiwater)

struct tc_counters {
#define VS_X(n) uint64_t n;
	VS_TC_COUNTERS(VS_X)
#undef VS_X
};

/*
 * Traffic-class settings of a port (qos.c). Ingress: in trust mode dscp
 * (struct qos_trust) an IP frame's priority is its DSCP through
 * dscp2prio. Egress: prio2tc picks the queue; strict
 * classes go first (the highest class first), the others share what is
 * left by weight (DWRR over bytes). A lossless class pauses the sender
 * when full, a lossy one drops.
 */
struct qos {
	uint8_t dscp2prio[64];
	uint8_t prio2tc[VS_NUM_TC];
	uint8_t strict;		/* bitmask of classes */
	uint8_t lossless;	/* bitmask of classes */
	uint16_t weight[VS_NUM_TC];
};

/*
 * What a port's ingress priority is taken from (qos_trust.c): the trust
 * mode, an index of its table (0, none, is the default), and the highest
 * priority the port may claim (higher is lowered to it: prio_capped).
 * Which modes a link layer offers is its fwd_mode's trust_modes: PCP and
 * DSCP for Ethernet, the LRH's SL for InfiniBand.
 */
enum { QOS_TRUST_NONE, QOS_TRUST_PCP, QOS_TRUST_DSCP, QOS_TRUST_SL, QOS_TRUST_MODES };

struct qos_trust {
	uint8_t mode;
	uint8_t max_prio;
};

/* One class's egress ring; all rings of a port share one size (qmask). */
struct tc_queue {
	struct pkt **q;
	uint32_t head, len;
};

/* DWRR state of a port's weighted classes. */
struct dwrr {
	unsigned cur;			/* class whose turn it is */
	uint32_t deficit[VS_NUM_TC];	/* bytes it may still send this turn */
};

struct pkt {
	struct pkt *next;	/* hold / delay list link */
	uint64_t due;		/* delay list: release time (ns, monotonic) */
	uint32_t refs;
	uint32_t len;
	uint32_t cap;
	bool rx;		/* a receive buffer (VS_MAX_FRAME bytes) */
	uint8_t data[];
};

struct pkt *pkt_new(const void *data, uint32_t len);
struct pkt *pkt_alloc_rx(void);
/*
 * A reference for a frame that must wait. Small frames in receive buffers
 * are copied (a 9 KiB buffer per 64-byte frame would waste memory), big
 * ones are shared (the receive slot gets a fresh buffer).
 */
struct pkt *pkt_keep(struct pkt *k);
static inline struct pkt *pkt_get(struct pkt *p) { p->refs++; return p; }
void pkt_put(struct pkt *p);
void pkt_cache_free(void);

/* Fault injection on a port's ingress (frames the switch receives from it). */
struct fault {
	bool active;
	uint32_t drop, corrupt, reorder;	/* thresholds out of 2^32 */
	uint32_t vcrc;				/* IB mode: a flip on the egress link */
	double drop_pct, corrupt_pct, reorder_pct, vcrc_pct;
	uint32_t delay_ms;
	uint64_t seed, rng;
};
int fault_parse(struct fault *f, int argc, char **argv, char *err, size_t errlen);
void fault_start(struct fault *f, uint32_t port_id);
uint32_t fault_rand(struct fault *f);
void fault_corrupt_frame(struct fault *f, uint8_t *data, uint32_t len);

struct port_io;
struct port_kind;
/* Where a port's assigned MACs come from: none (first-come), QEMU, vsctl. */
enum port_macs_from { MACS_NONE, MACS_GIVEN, MACS_STATIC };

struct port {
	bool used;
	bool closing;		/* peer gone: draining what it sent, then removed */
	bool eof_seen;		/* read everything the peer sent */
	bool tx_dead;		/* sends fail: frames to us are dropped */
	bool runq_queued;	/* on vswitch.runq: has held frames to retry */
	uint32_t id;		/* user-visible, never reused */
	int idx;		/* slot in vswitch.ports */
	const struct port_kind *kind;	/* what its peer is (port_kind.h) */
	int fd;
	uint32_t ev_mask;	/* events currently registered with epoll */
	bool in_epoll;
	char peer[160];
	int peer_pid;		/* SO_PEERCRED of a guest port's peer, 0: unknown */
	char vm[VS_VM_NAME_MAX + 1];	/* the peer QEMU's -name (peer_name.h), or "" */

	/* dgram kind: our bound path and QEMU's */
	struct sockaddr_un peer_addr;
	socklen_t peer_len;
	char local_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	bool peer_present;
	uint64_t retry_due;	/* dgram peer queue full: retry time, 0 = none */

	/* stream kind (stream.c): the frame being read, the rest of one sent */
	struct pkt *srx;	/* receive buffer of the frame being read */
	uint8_t srx_hdr[4];	/* its big-endian length */
	uint32_t srx_hdr_got;	/* bytes of srx_hdr read, 4 = in the frame */
	uint32_t srx_len, srx_got;
	uint8_t *stx;		/* length + frame that the socket took part of */
	uint32_t stx_len, stx_off;

	const struct port_io *io;	/* how it moves frames (port_io.h) */
	struct shm_port *shm;		/* its shared-memory rings (shm_port.c), or NULL */

	/* egress queues, one per class: packets waiting for the peer to read */
	struct tc_queue tq[VS_NUM_TC];
	uint32_t qmask;
	uint32_t qlen;		/* frames in all of tq */
	struct dwrr dwrr;
	struct qos qos;
	struct qos_trust trust;

	/* egress frames collected in this pass, sent by one sendmmsg */
	uint32_t npend;
	bool dirty;
	struct mmsghdr pend_msg[VS_BATCH];
	struct iovec pend_iov[VS_BATCH];
	struct pkt *pend_pkt[VS_BATCH];
	uint8_t pend_tc[VS_BATCH];	/* class of each pending frame */
	uint32_t pend_n[VS_NUM_TC];	/* pending frames per class */

	/* ingress: frames received but not yet forwarded (back-pressure) */
	struct pkt *hold_head, *hold_tail;
	uint32_t hold_len;
	int blocked_on;		/* slot of the full port we wait for, -1 none */
	unsigned blocked_tc;	/* and the class of it that is full */
	uint32_t n_waiters;	/* ports blocked on us */
	uint8_t wait_tcs;	/* bitmask: our classes that someone waits on */
	struct pkt *delay_head, *delay_tail;
	uint32_t delay_len;
	struct pkt *reorder;	/* held back until the next frame to its destination */
	uint64_t reorder_due;

	struct fault fault;
	unsigned ib_port;	/* IB mode: its IB port number (1..), 0 none */
	struct fdb_policy psec;	/* port security: pin MACs, limit their number */
	/* with psec.pin, the only MACs it may send from (port_macs.c) */
	uint64_t macs[VS_PORT_MACS_MAX];
	uint8_t nmacs;
	uint8_t macs_from;	/* enum port_macs_from */
	struct counters c;
	struct tc_counters tcc[VS_NUM_TC];	/* egress, per class */
	uint64_t rx_prio_frames[VS_NUM_TC];	/* ingress, per priority */
	uint64_t rx_prio_bytes[VS_NUM_TC];
};

struct fdb;
struct capture;
struct fwd_mode;

enum link_layer { LINK_ETH, LINK_IB };

struct vs_config {
	enum link_layer link_layer;
	const char *socket_path;
	const char *ctl_path;
	bool foreground;
	bool use_syslog;
	unsigned aging_s;	/* 0 = entries never age */
	unsigned queue_frames;	/* unicast egress queue bound per port */
	unsigned max_ports;
	unsigned ib_ports;	/* IB mode: NodeInfo.NumPorts */
	uint64_t ib_guid;	/* IB mode: NodeGUID, 0 = from the socket path */
	bool shm_ring;		/* SEQPACKET ports may negotiate shared-memory rings */
	int verbose;
};

#define VS_MAX_CTL_CONNS 16

struct ctl_conn {
	int fd;
	bool used;
	uint64_t deadline;	/* closed if the exchange is not done by then */
	char *in;
	size_t inlen;
	char *out;
	size_t outlen, outoff;
};

struct vswitch {
	struct vs_config cfg;
	int epfd, listen_fd, ctl_fd, sig_fd;
	bool stop;
	uint64_t now;		/* monotonic ns, refreshed per loop turn */
	uint64_t next_sweep;
	uint32_t next_port_id;
	unsigned flood_cap;	/* flood copies may use up to this many slots */
	unsigned low_water;	/* wake blocked senders at or below this */

	struct port *ports;	/* max_ports slots */
	int *active;		/* slots in use, compact */
	unsigned nactive;
	int *dirty;		/* slots with pending egress frames */
	unsigned ndirty;
	int *runq;		/* slots whose held frames may move again */
	unsigned nrunq;
	bool timers;		/* some port has delayed/reordered/retry work */
	bool need_reap;		/* some closing port may be finished */

	/* -netdev stream listening sockets (--stream) */
	int stream_fd[VS_MAX_STREAM_LISTEN];
	char stream_path[VS_MAX_STREAM_LISTEN][sizeof(((struct sockaddr_un *)0)->sun_path)];
	unsigned nstream;
	uint64_t stream_framing_errors;	/* connections dropped for a bad length */

	struct fault fault_all;	/* set-fault --port all: also for ports added later */
	struct fdb_policy psec_all; /* port security of ports added later */
	struct qos qos_all;	/* traffic classes of ports added later */
	struct qos_trust trust_all;	/* trust of ports added later (--qos-trust) */

	struct fdb *fdb;
	const struct fwd_mode *ops;	/* the forwarding mode, set once at start-up */
	struct ib_switch *ib;	/* InfiniBand mode's state (ib.h), else NULL */
	struct capture *cap;
	struct ctl_conn ctl[VS_MAX_CTL_CONNS];

	/* receive buffers, one batch */
	struct mmsghdr rx_msg[VS_BATCH];
	struct iovec rx_iov[VS_BATCH];
	struct sockaddr_un rx_addr[VS_BATCH];
	struct pkt *rx_pkt[VS_BATCH];
};

/* epoll tags */
enum { EV_LISTEN = 1, EV_CTL_LISTEN, EV_CTL_CONN, EV_SIGNAL, EV_PORT, EV_STREAM_LISTEN, EV_SHM };
static inline uint64_t ev_tag(uint32_t kind, uint32_t idx) { return ((uint64_t)kind << 32) | idx; }

/* log.c */
enum { VS_LOG_ERR = 3, VS_LOG_WARN = 4, VS_LOG_INFO = 6, VS_LOG_DEBUG = 7 };
void vs_log_init(bool use_syslog, int verbose);
void vs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* port.c */
struct port *port_add(struct vswitch *sw, int fd, const struct port_kind *kind);
void port_destroy(struct vswitch *sw, struct port *p);
struct port *port_by_id(struct vswitch *sw, uint32_t id);
/* p->peer and p->vm for the process pid that connected through listener
 * what ("" for the ports' socket); with vnic_sock, also the MACs its
 * cnuas-vnic devices on that socket were given (peer_macs.h) */
void port_name_peer(struct port *p, const char *what, pid_t pid, const char *vnic_sock);

/* port_macs.c: a port's assigned MACs under port security */
bool port_has_mac(const struct port *p, uint64_t key);
/* Pin p's assigned MACs to it, unless another live port was given one too. */
void port_macs_reserve(struct vswitch *sw, struct port *p);
/* p's MACs left the FDB: reserve them for another port that was given them. */
void port_macs_release(struct vswitch *sw, const struct port *p);
/* Replace p's MACs by a static list (n = 0: back to first-come). */
void port_macs_set(struct vswitch *sw, struct port *p, const uint64_t *keys, unsigned n);
/* A frame from p with source key: FDB_LEARNED to go on, else why it is dropped. */
enum fdb_verdict port_macs_learn(struct vswitch *sw, struct port *p, uint64_t key);
void port_update_events(struct vswitch *sw, struct port *p);
bool port_can_read(const struct port *p);
void port_queue_push(struct port *p, unsigned tc, struct pkt *k);
void port_drop_egress(struct vswitch *sw, struct port *p);
const char *port_state(const struct port *p);

/* datapath.c */
void dp_port_event(struct vswitch *sw, struct port *p, uint32_t events);
void dp_flush(struct vswitch *sw);
void dp_timers(struct vswitch *sw, int *timeout_ms);
void dp_port_hangup(struct vswitch *sw, struct port *p);
void dp_unblock_waiters(struct vswitch *sw, struct port *d);
void dp_housekeeping(struct vswitch *sw);
void dp_shm_event(struct vswitch *sw, struct port *p);
/* dp.h: what the data path offers the forwarding modes */

/* qos.c */
void qos_default(struct qos *q);
int qos_parse(struct qos *q, int argc, char **argv, char *err, size_t errlen);
unsigned qos_pick(const struct port *d, struct dwrr *s, const uint32_t *taken);
struct strbuf;
void qos_json(struct strbuf *b, const struct qos *q);
void qos_text(struct strbuf *b, const struct qos *q);

/* qos_trust.c */
/* p's priority for frame d; *capped: it claimed more than p's max_prio */
unsigned qos_classify(const struct port *p, const uint8_t *d, uint32_t len, bool *capped);
int qos_trust_mode(const char *name);	/* QOS_TRUST_*, -1 unknown */
/* set-qos-trust's arguments onto *t; a mode outside @allowed (bits of QOS_TRUST_*) is refused */
int qos_trust_parse(struct qos_trust *t, unsigned allowed, int argc, char **argv, char *err,
		    size_t errlen);
/* "pcp, dscp or none": the names of @allowed, for messages */
void qos_trust_names(char *buf, size_t len, unsigned allowed);
void qos_trust_text(struct strbuf *b, const struct qos_trust *t);
void qos_trust_json(struct strbuf *b, const struct qos_trust *t);

/* tap.c */
struct port *tap_add(struct vswitch *sw, const char *name, char *err, size_t errlen);
int tap_recv(int fd, struct mmsghdr *m, unsigned int n);
int tap_send(int fd, struct mmsghdr *m, unsigned int n);

/* dgram.c */
struct port *dgram_add(struct vswitch *sw, const char *local, const char *remote,
		       char *err, size_t errlen);

/* stream.c */
int stream_listen_add(struct vswitch *sw, const char *path, char *err, size_t errlen);
void stream_accept(struct vswitch *sw, unsigned li);
void stream_close_listeners(struct vswitch *sw);
int stream_recv(struct vswitch *sw, struct port *p, unsigned int n);
int stream_send(struct port *p, struct mmsghdr *m, unsigned int n);
int stream_flush_rest(struct port *p);

/* ctl.c */
int ctl_listen(struct vswitch *sw);
void ctl_accept(struct vswitch *sw);
void ctl_conn_event(struct vswitch *sw, unsigned idx, uint32_t events);
void ctl_close_all(struct vswitch *sw);
void ctl_expire(struct vswitch *sw);

/* sock.c */
int unix_listen(const char *path, int type, mode_t mode, char *err, size_t errlen);
/* Log who may connect to the ports' socket at path (sock_access.c). */
void sock_log_access(const char *path);
bool same_dir(const char *path, const char *ref);
uint64_t mono_ns(void);

#endif
