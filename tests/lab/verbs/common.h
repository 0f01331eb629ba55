/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * Shared helpers of the lab's verbs test programs: device and GID choice,
 * RC and UC QP bring-up, the TCP side channel that swaps QP details (like
 * ibv_rc_pingpong), a seeded PRNG and small utilities.
 */
#ifndef CNUAS_VT_COMMON_H
#define CNUAS_VT_COMMON_H

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

extern const char *vt_prog;
extern int vt_verbose;

#define vt_log(...) do { fprintf(stderr, "%s: ", vt_prog); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } while (0)
#define vt_dbg(...) do { if (vt_verbose) vt_log(__VA_ARGS__); } while (0)
_Noreturn void vt_die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What one side tells the other about its QP (network byte order on the wire). */
struct vt_peer {
	uint32_t qpn, psn, rkey, mtu;	/* mtu: enum ibv_mtu the side can do */
	uint32_t lid, resv;		/* lid: the port's, 0 on RoCE */
	uint64_t addr;			/* base of the memory the peer may write */
	uint64_t arg[4];		/* program specific */
	uint8_t gid[16];
};

struct vt_opts {
	const char *dev;	/* NULL: the first device */
	int ib_port;
	int gid_idx;		/* -1: the first RoCE v2 IPv4 GID */
	int mtu;		/* bytes, 0: the port's active MTU */
	int timeout;		/* local ACK timeout exponent */
	int retry_cnt;
	int rnr_retry;
	int min_rnr_timer;
	int max_dest_rd_atomic;	/* READs/atomics this side serves at once */
	int tcp_port;
	const char *server;	/* NULL: we are the server */
};
void vt_opts_default(struct vt_opts *o);

struct vt_ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr dev_attr;
	struct ibv_port_attr port_attr;
	union ibv_gid gid;
	int gid_idx;
	int ib_port;
};
void vt_open(struct vt_ctx *c, const struct vt_opts *o);
void vt_close(struct vt_ctx *c);

struct ibv_qp *vt_create_rc(struct vt_ctx *c, struct ibv_cq *scq, struct ibv_cq *rcq,
			    uint32_t max_wr, uint32_t max_sge);
/*
 * RESET -> INIT -> RTR -> RTS towards the peer; returns 0 or an errno.
 * With a GRH to the peer's GID, but on InfiniBand to a peer that gives a
 * LID and no GID (all zero): LRH only (tests/lab/ib-hostile.py).
 */
int vt_connect_rc(struct vt_ctx *c, struct ibv_qp *qp, const struct vt_opts *o, uint32_t my_psn,
		  const struct vt_peer *peer, int access);
/*
 * A UC QP towards the peer, with UC's attributes only (no timeout,
 * retries, RNR timer or READ/atomic depths); returns 0 or an errno.
 */
int vt_connect_uc(struct vt_ctx *c, struct ibv_qp *qp, const struct vt_opts *o, uint32_t my_psn,
		  const struct vt_peer *peer, int access);
enum ibv_mtu vt_mtu_enum(int bytes);
int vt_mtu_bytes(enum ibv_mtu m);

/* TCP side channel: server listens and accepts one client; client connects. */
int vt_tcp_open(const struct vt_opts *o, int timeout_s);
/* Our port's address (GID, and LID on InfiniBand) into a vt_peer. */
void vt_peer_addr(const struct vt_ctx *c, struct vt_peer *p);
/* Our port's LID on InfiniBand, 0 on RoCE (an AH to ourselves). */
uint16_t vt_lid(const struct vt_ctx *c);
void vt_send_peer(int fd, const struct vt_peer *p);
void vt_recv_peer(int fd, struct vt_peer *p, int timeout_s);
void vt_send_word(int fd, uint64_t w);
/* Returns 0 and *w, or -1 on EOF/timeout. */
int vt_recv_word(int fd, uint64_t *w, int timeout_s);

/* Wait for one completion on cq (busy poll with a short sleep), bounded. */
int vt_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double timeout_s);

/* xorshift64*: fills with a stream that depends only on (seed, stream) */
void vt_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t stream);
uint64_t vt_rand(uint64_t *state);
double vt_now(void);
uint64_t vt_parse_u64(const char *s, const char *what, uint64_t max);
void vt_usage_common(FILE *f);
/* getopt helper for the common options; returns 1 if opt was one of them */
int vt_common_opt(struct vt_opts *o, int opt, const char *arg);
#define VT_COMMON_OPTS "d:i:g:m:t:r:R:p:v"

/* A test program made of named cases (cnuas-badverbs, cnuas-wrapi). */
struct vt_case {
	const char *name;
	void (*fn)(void);
};
/*
 * Parse the common options (-h or a bad one: usage, exit), open the
 * device into c and run the cases named on the command line, or all.
 */
void vt_run_cases(int argc, char **argv, struct vt_ctx *c, struct vt_opts *o,
		  const struct vt_case *cases, size_t ncases);

#endif
