// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-hostile: a stateful hostile RC peer. The victim side uses real
 * verbs: for each case it makes an RC QP (rights chosen by the case), MRs
 * and a type 2 window, and connects the QP to a QP number the attacker
 * only pretends to have. The attacker side crafts the requests raw
 * (AF_PACKET, RoCEv2, correct ICRC) with the PSN the victim expects,
 * reads the victim's ACKs, NAKs and READ responses off the same socket,
 * and checks each against the IBA; the victim then reports its receive
 * completion, async event, QP state and memory over the TCP side channel.
 *
 *   victim:   cnuas-hostile [-d DEV] [-p PORT]
 *   attacker: cnuas-hostile -I IFACE -M VICTIM_MAC [-p PORT] VICTIM_IP [CASE...]
 *
 * Cases (expectation, IBA chapter 9.7):
 *   read-noright     READ to an MR with rights, QP without REMOTE_READ:
 *                    NAK remote access error, QP in error
 *   atomic-noright   FETCH_ADD, QP without REMOTE_ATOMIC: the same, memory
 *                    unchanged
 *   write-long       WRITE ONLY with more payload than the RETH length:
 *                    NAK invalid request
 *   write-short      WRITE FIRST + a LAST shorter than the rest of the
 *                    RETH length: NAK invalid request for the LAST
 *   write-zero       zero-length WRITE with a bogus rkey and address: ACK
 *                    (no key check for zero length), QP stays RTS
 *   addr-overflow    WRITE whose address + length wraps 64 bits, valid rkey:
 *                    NAK remote access error
 *   read-after-inv   READ through a type 2 window its owner invalidated:
 *                    no data, NAK remote access error
 *   dup-read-revoked READ through a type 2 window, answered; the owner
 *                    invalidates the window; the same READ (same PSN) again:
 *                    no data, NAK remote access error
 *   dup-read-inv     READ through a type 2 window, answered; the same READ
 *                    again (a retransmission that crossed its answer) and,
 *                    right behind it, a SEND with Invalidate of the window:
 *                    the replay may go out or end, never a NAK; the SEND
 *                    is ACKed and completes, the QP stays RTS
 *   send-inv-foreign SEND with Invalidate naming an MR of another PD:
 *                    NAK invalid request, the receive completes in error
 *   write-imm-norecv WRITE with immediate, no receive posted: RNR NAK with
 *                    the QP's timer, nothing written; after a receive is
 *                    posted the retry is ACKed and completes with the data
 * The attacker's interface must hand RoCE frames to the stack (a virtio-net
 * eth0, Soft-RoCE's too): cnuas0 gives them to cnuas_ib directly, so a
 * packet socket there never sees the victim's answers.
 * Each prints "CASE NAME: PASS ..." or "CASE NAME: FAIL ..."; exit 1 if any
 * failed.
 * An InfiniBand lab has no Ethernet netdev for this attacker: there the
 * attacker is tests/lab/ib-hostile.py on the host (the same cases in native
 * IB frames, from a port of its own on the IB switch) and the victim is
 * this one, unchanged; the attacker gives its LID and no GID, so the
 * victim's QP addresses it by LID with no GRH (common.c).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cnuas_roce.h"
#include "roce-raw.h"
#include "common.h"

#define MR_LEN		65536
#define MTU		256
#define FAKE_QPN_BASE	0xc0de00
#define PATTERN_SEED	0x5eed

/* opcodes (RC) */
enum {
	OP_SEND_ONLY = 0x04, OP_WRITE_FIRST = 0x06, OP_WRITE_LAST = 0x08,
	OP_WRITE_ONLY = 0x0a, OP_WRITE_ONLY_IMM = 0x0b, OP_READ_REQ = 0x0c,
	OP_READ_RESP_FIRST = 0x0d, OP_READ_RESP_MIDDLE = 0x0e, OP_READ_RESP_LAST = 0x0f,
	OP_READ_RESP_ONLY = 0x10, OP_ACK = 0x11, OP_ATOMIC_ACK = 0x12, OP_FETCH_ADD = 0x14,
	OP_SEND_ONLY_INV = 0x17,
};

#define SYN_NAK_INVALID	0x61
#define SYN_NAK_ACCESS	0x62

enum hcase { H_READ_NORIGHT = 1, H_ATOMIC_NORIGHT, H_WRITE_LONG, H_WRITE_SHORT, H_WRITE_ZERO,
	     H_ADDR_OVERFLOW, H_READ_AFTER_INV, H_DUP_READ_REVOKED, H_SEND_INV_FOREIGN, H_WRITE_IMM_NORECV,
	     H_DUP_READ_INV, H_N };
static const char *hname[H_N] = { NULL, "read-noright", "atomic-noright", "write-long", "write-short",
				  "write-zero", "addr-overflow", "read-after-inv", "dup-read-revoked",
				  "send-inv-foreign",
				  "write-imm-norecv", "dup-read-inv" };

/* side-channel commands, attacker -> victim, inside a case */
enum { CMD_REPORT = 1, CMD_INVALIDATE, CMD_POST_RECV };
#define CMD_END 0xffffffffull

/* ------------------------------------------------------------------ victim */

static struct vt_ctx C;
static struct vt_opts O;

struct vres {
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *mwmr, *fmr, *rmr;
	struct ibv_pd *fpd;
	struct ibv_mw *mw;
	uint8_t *buf, *mwbuf, *fbuf, *rbuf;
};

static void post_recv(struct vres *v)
{
	struct ibv_sge sge = { .addr = (uintptr_t)v->rbuf, .length = 4096, .lkey = v->rmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(v->qp, &wr, &bad))
		vt_die("post_recv: %s", strerror(errno));
}

static int run_send_wr(struct vres *v, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(v->qp, wr, &bad))
		vt_die("post_send (opcode %d): %s", wr->opcode, strerror(errno));
	if (vt_poll_one(v->scq, &wc, 10))
		vt_die("no completion of the local work request (opcode %d)", wr->opcode);
	return wc.status;
}

static uint64_t buf_sum(const uint8_t *b, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void victim_case(int fd, unsigned int k)
{
	int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int mr_rights = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_ATOMIC;
	struct vt_peer a, me = { 0 };
	struct vres v = { 0 };
	uint64_t cmd;

	vt_recv_peer(fd, &a, 30);
	if (k == H_READ_NORIGHT)
		access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	else if (k == H_ATOMIC_NORIGHT)
		access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

	v.scq = ibv_create_cq(C.ctx, 16, NULL, NULL, 0);
	v.rcq = ibv_create_cq(C.ctx, 16, NULL, NULL, 0);
	if (!v.scq || !v.rcq)
		vt_die("create_cq: %s", strerror(errno));
	v.qp = vt_create_rc(&C, v.scq, v.rcq, 8, 1);
	if (posix_memalign((void **)&v.buf, 4096, MR_LEN) || posix_memalign((void **)&v.mwbuf, 4096, 4096) ||
	    posix_memalign((void **)&v.fbuf, 4096, 4096) || posix_memalign((void **)&v.rbuf, 4096, 4096))
		vt_die("out of memory");
	vt_fill(v.buf, MR_LEN, PATTERN_SEED, k);
	vt_fill(v.mwbuf, 4096, PATTERN_SEED, 100 + k);
	memset(v.rbuf, 0, 4096);
	v.mr = ibv_reg_mr(C.pd, v.buf, MR_LEN, mr_rights);
	v.rmr = ibv_reg_mr(C.pd, v.rbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (!v.mr || !v.rmr)
		vt_die("reg_mr: %s", strerror(errno));
	/* an MR of another PD: a SEND with Invalidate must not reach it */
	v.fpd = ibv_alloc_pd(C.ctx);
	if (!v.fpd)
		vt_die("alloc_pd: %s", strerror(errno));
	v.fmr = ibv_reg_mr(v.fpd, v.fbuf, 4096, mr_rights);
	if (!v.fmr)
		vt_die("reg_mr (second PD): %s", strerror(errno));
	if (vt_connect_rc(&C, v.qp, &O, 0, &a, access))
		vt_die("connect the QP: %s", strerror(errno));
	if (k == H_DUP_READ_REVOKED || k == H_READ_AFTER_INV || k == H_DUP_READ_INV) {
		struct ibv_send_wr wr = { .wr_id = 12, .opcode = IBV_WR_BIND_MW };
		int s;

		v.mwmr = ibv_reg_mr(C.pd, v.mwbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		v.mw = ibv_alloc_mw(C.pd, IBV_MW_TYPE_2);
		if (!v.mwmr || !v.mw)
			vt_die("memory window: %s", strerror(errno));
		wr.bind_mw.mw = v.mw;
		wr.bind_mw.rkey = ibv_inc_rkey(v.mw->rkey);
		wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = v.mwmr, .addr = (uintptr_t)v.mwbuf,
								  .length = 4096,
								  .mw_access_flags = IBV_ACCESS_REMOTE_READ };
		s = run_send_wr(&v, &wr);
		if (s != IBV_WC_SUCCESS)
			vt_die("bind the type 2 window: %s", ibv_wc_status_str(s));
		me.arg[2] = wr.bind_mw.rkey;
		me.arg[3] = (uintptr_t)v.mwbuf;
	}
	if (k == H_SEND_INV_FOREIGN || k == H_DUP_READ_INV)
		post_recv(&v);
	me.qpn = v.qp->qp_num;
	me.rkey = v.mr->rkey;
	me.addr = (uintptr_t)v.buf;
	me.arg[0] = v.fmr->rkey;
	me.arg[1] = (uint64_t)O.min_rnr_timer;
	vt_send_peer(fd, &me);

	for (;;) {
		if (vt_recv_word(fd, &cmd, 60))
			vt_die("the attacker went away");
		if (cmd == CMD_INVALIDATE) {
			struct ibv_send_wr wr = { .wr_id = 13, .opcode = IBV_WR_LOCAL_INV };

			wr.invalidate_rkey = (uint32_t)me.arg[2];
			vt_send_word(fd, (uint64_t)run_send_wr(&v, &wr));
		} else if (cmd == CMD_POST_RECV) {
			post_recv(&v);
			vt_send_word(fd, 0);
		} else if (cmd == CMD_REPORT) {
			struct ibv_qp_attr qa;
			struct ibv_qp_init_attr qia;
			struct ibv_async_event ev;
			struct ibv_wc wc;
			uint64_t w0 = 0xffff, ae = 0xffff;
			int n = vt_poll_one(v.rcq, &wc, 1.5);

			if (!n)
				w0 = (uint64_t)wc.status | (uint64_t)wc.opcode << 8 | (uint64_t)wc.byte_len << 16 |
				     (uint64_t)ntohl(wc.imm_data) << 32;
			/* the async event of this QP, if any (non-blocking fd) */
			for (int i = 0; i < 20; i++) {
				if (!ibv_get_async_event(C.ctx, &ev)) {
					if ((ev.event_type == IBV_EVENT_QP_FATAL ||
					     ev.event_type == IBV_EVENT_QP_REQ_ERR ||
					     ev.event_type == IBV_EVENT_QP_ACCESS_ERR) && ev.element.qp == v.qp)
						ae = (uint64_t)ev.event_type;
					ibv_ack_async_event(&ev);
					continue;
				}
				if (ae != 0xffff)
					break;
				usleep(50000);
			}
			if (ibv_query_qp(v.qp, &qa, IBV_QP_STATE, &qia))
				vt_die("query_qp: %s", strerror(errno));
			vt_send_word(fd, w0);
			vt_send_word(fd, ae);
			vt_send_word(fd, (uint64_t)qa.qp_state);
			vt_send_word(fd, buf_sum(v.buf, MR_LEN));
			vt_send_word(fd, buf_sum(v.rbuf, 4096));
			break;
		} else {
			vt_die("unknown command %llu", (unsigned long long)cmd);
		}
	}
	ibv_destroy_qp(v.qp);
	if (v.mw)
		ibv_dealloc_mw(v.mw);
	if (v.mwmr)
		ibv_dereg_mr(v.mwmr);
	ibv_dereg_mr(v.mr);
	ibv_dereg_mr(v.rmr);
	ibv_dereg_mr(v.fmr);
	ibv_dealloc_pd(v.fpd);
	ibv_destroy_cq(v.scq);
	ibv_destroy_cq(v.rcq);
	free(v.buf);
	free(v.mwbuf);
	free(v.fbuf);
	free(v.rbuf);
}

static int victim(void)
{
	int fd, fl;
	uint64_t k;

	vt_open(&C, &O);
	fl = fcntl(C.ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(C.ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		vt_die("async fd: %s", strerror(errno));
	printf("victim: listening on TCP port %d\n", O.tcp_port);
	fflush(stdout);
	fd = vt_tcp_open(&O, 120);
	for (;;) {
		if (vt_recv_word(fd, &k, 120))
			vt_die("the attacker went away");
		if (k == CMD_END)
			break;
		if (!k || k >= H_N)
			vt_die("unknown case %llu", (unsigned long long)k);
		victim_case(fd, (unsigned int)k);
	}
	close(fd);
	vt_close(&C);
	printf("victim: done\n");
	return 0;
}

/* ---------------------------------------------------------------- attacker */

struct atk {
	int fd, ifindex;
	uint8_t dmac[6], smac[6];
	uint32_t sip, dip;	/* network order */
	uint32_t qpn;		/* the victim's QP */
	uint32_t fake_qpn;	/* ours, pretended */
	uint32_t psn;		/* the PSN the victim expects next */
	int fails;
};

/* A request: extension header bytes @ext, payload @pay. */
static void tx(struct atk *t, uint8_t op, uint32_t psn, const uint8_t *ext, size_t extlen,
	       const uint8_t *pay, size_t paylen)
{
	static uint8_t f[9216];
	uint8_t *ip = f + RR_IP, *bth = f + RR_BTH, *p = bth + 12;
	uint32_t pad = (4 - (paylen & 3)) & 3;
	size_t iplen;
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = t->ifindex, .sll_halen = 6,
				  .sll_protocol = htons(ETH_P_IP) };

	memset(f, 0, 128);
	rr_eth(f, t->dmac, t->smac);
	bth[0] = op;
	bth[1] = (uint8_t)(pad << 4);
	bth[2] = bth[3] = 0xff;
	bth[4] = 0;
	bth[5] = (uint8_t)(t->qpn >> 16);
	bth[6] = (uint8_t)(t->qpn >> 8);
	bth[7] = (uint8_t)t->qpn;
	rr_put32(bth + 8, (psn & 0xffffff) | 1u << 31);	/* AckReq */
	memcpy(p, ext, extlen);
	p += extlen;
	memcpy(p, pay, paylen);
	memset(p + paylen, 0, pad);
	p += paylen + pad;
	iplen = (size_t)(p - ip) + 4;
	rr_ipv4_udp(ip, iplen, t->sip, t->dip, 0, 0xc001);
	if (rr_put_icrc(ip, iplen))
		vt_die("cannot build the ICRC header");

	size_t len = 14 + iplen < 60 ? 60 : 14 + iplen;

	if (sendto(t->fd, f, len, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)len)
		vt_die("sendto: %s", strerror(errno));
}

struct rx {
	uint8_t op;
	uint32_t psn;
	uint8_t syn;	/* AETH syndrome (0xff: none) */
	uint32_t msn;
	uint32_t paylen;
	uint8_t pay[MTU];
};

/* The next packet of the victim to our fake QP; 0 or -1 on timeout. */
static int rx(struct atk *t, struct rx *r, double timeout_s)
{
	static uint8_t f[9216];
	double end = vt_now() + timeout_s;

	for (;;) {
		double left = end - vt_now();
		struct pollfd pfd = { .fd = t->fd, .events = POLLIN };

		if (left <= 0)
			return -1;
		if (poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			continue;
		ssize_t n = recv(t->fd, f, sizeof(f), 0);

		if (n < 14 + 20 + 8 + 12 + 4 || f[12] != 0x08 || f[13] != 0x00)
			continue;
		uint8_t *ip = f + 14, *udp = ip + 20, *bth = udp + 8;

		if ((ip[0] & 0x0f) != 5 || ip[9] != 17 || memcmp(ip + 12, &t->dip, 4) ||
		    (udp[2] << 8 | udp[3]) != CNUAS_ROCE_UDP_PORT)
			continue;
		if ((rr_get32(bth + 4) & 0xffffff) != t->fake_qpn)
			continue;
		size_t iplen = (size_t)(ip[2] << 8 | ip[3]);

		if (iplen + 14 > (size_t)n || iplen < 20 + 8 + 12 + 4)
			continue;
		uint8_t *end_p = ip + iplen - 4, *p = bth + 12;

		r->op = bth[0];
		r->psn = rr_get32(bth + 8) & 0xffffff;
		r->syn = 0xff;
		r->msn = 0;
		if (r->op == OP_ACK || r->op == OP_ATOMIC_ACK || r->op == OP_READ_RESP_FIRST ||
		    r->op == OP_READ_RESP_LAST || r->op == OP_READ_RESP_ONLY) {
			r->syn = p[0];
			r->msn = rr_get32(p) & 0xffffff;
			p += 4;
		}
		if (r->op == OP_ATOMIC_ACK)
			p += 8;
		size_t pl = end_p > p ? (size_t)(end_p - p) - ((bth[1] >> 4) & 3) : 0;

		if (pl > MTU)
			pl = MTU;
		r->paylen = (uint32_t)pl;
		memcpy(r->pay, p, pl);
		return 0;
	}
}

static const char *syn_name(uint8_t s)
{
	static char b[32];

	if (s == 0xff)
		return "none";
	switch (s >> 5) {
	case 0: return "ACK";
	case 1: snprintf(b, sizeof(b), "RNR NAK timer %u", s & 0x1f); return b;
	case 3:
		switch (s & 0x1f) {
		case 0: return "NAK PSN sequence error";
		case 1: return "NAK invalid request";
		case 2: return "NAK remote access error";
		case 3: return "NAK remote operational error";
		case 4: return "NAK invalid RD request";
		}
	}
	snprintf(b, sizeof(b), "syndrome 0x%02x", s);
	return b;
}

/* the victim's report of the case */
struct report {
	int have_wc, wc_status, wc_opcode;
	uint32_t byte_len, imm;
	int async;	/* ibv_event_type or -1 */
	int qp_state;
	uint64_t mr_sum, recv_sum;
};

static void get_report(int fd, struct report *rp)
{
	uint64_t w[5];

	vt_send_word(fd, CMD_REPORT);
	for (int i = 0; i < 5; i++)
		if (vt_recv_word(fd, &w[i], 30))
			vt_die("no report from the victim");
	rp->have_wc = (w[0] & 0xffff) != 0xffff;
	rp->wc_status = (int)(w[0] & 0xff);
	rp->wc_opcode = (int)((w[0] >> 8) & 0xff);
	rp->byte_len = (uint32_t)((w[0] >> 16) & 0xffff);
	rp->imm = (uint32_t)(w[0] >> 32);
	rp->async = (w[1] & 0xffff) == 0xffff ? -1 : (int)w[1];
	rp->qp_state = (int)w[2];
	rp->mr_sum = w[3];
	rp->recv_sum = w[4];
}

static const char *qps_name(int s)
{
	static const char *n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return s >= 0 && s <= 6 ? n[s] : "?";
}

static char why[512];
static int why_len;

#define CHECK(cond, ...) do { \
	if (!(cond) && why_len < (int)sizeof(why) - 2) { \
		why_len += snprintf(why + why_len, sizeof(why) - (size_t)why_len, why_len ? "; " : ""); \
		why_len += snprintf(why + why_len, sizeof(why) - (size_t)why_len, __VA_ARGS__); \
	} \
} while (0)

/* Wait for an ACK-type answer (ACK/NAK) to @psn; fills r. -1: none. */
static int wait_ack(struct atk *t, struct rx *r, double timeout_s)
{
	double end = vt_now() + timeout_s;

	while (vt_now() < end)
		if (!rx(t, r, end - vt_now()) && (r->op == OP_ACK || r->op == OP_ATOMIC_ACK ||
						  r->op == OP_READ_RESP_ONLY || r->op == OP_READ_RESP_FIRST))
			return 0;
	return -1;
}

static void expect_nak(struct atk *t, uint32_t psn, uint8_t syn, const char *what)
{
	struct rx r;

	if (wait_ack(t, &r, 5)) {
		CHECK(0, "%s: no answer (want %s)", what, syn_name(syn));
		return;
	}
	CHECK(r.op == OP_ACK && r.syn == syn && r.psn == psn, "%s: got opcode 0x%02x %s PSN %u, want %s PSN %u",
	      what, r.op, syn_name(r.syn), r.psn, syn_name(syn), psn);
	if (r.op == OP_ACK && (r.syn >> 5) == 0)
		t->psn = (r.psn + 1) & 0xffffff;
}

static uint64_t ref_sum(uint64_t stream, size_t n)
{
	static uint8_t b[MR_LEN];

	vt_fill(b, n, PATTERN_SEED, stream);
	return buf_sum(b, n);
}

static void reth(uint8_t *e, uint64_t va, uint32_t rkey, uint32_t len)
{
	rr_put64(e, va);
	rr_put32(e + 8, rkey);
	rr_put32(e + 12, len);
}

/*
 * READ 64 bytes through the victim's type 2 window (its rkey and address
 * in arg[2], arg[3]) at @psn: answered with the window's pattern. Leaves
 * the RETH in @ext for a duplicate of the request.
 */
static void read_window(struct atk *t, const struct vt_peer *v, unsigned int k, uint32_t psn,
			uint8_t *ext)
{
	uint8_t full[4096];
	struct rx r;

	vt_fill(full, 4096, PATTERN_SEED, 100 + k);
	reth(ext, v->arg[3], (uint32_t)v->arg[2], 64);
	tx(t, OP_READ_REQ, psn, ext, 16, NULL, 0);
	if (wait_ack(t, &r, 5))
		CHECK(0, "READ through the window: no response");
	else
		CHECK(r.op == OP_READ_RESP_ONLY && r.psn == psn && r.paylen == 64 && !memcmp(r.pay, full, 64),
		      "READ through the window: opcode 0x%02x %s PSN %u, %u bytes%s", r.op,
		      syn_name(r.syn), r.psn, r.paylen,
		      r.paylen == 64 && memcmp(r.pay, full, 64) ? " (wrong data)" : "");
}

static void attack_case(struct atk *t, int fd, unsigned int k)
{
	struct vt_peer me = { 0 }, v;
	struct report rp = { 0 };
	uint8_t ext[32], pay[MTU];
	struct rx r;
	uint32_t p0;
	uint64_t mr0 = ref_sum(k, MR_LEN);

	why_len = 0;
	why[0] = 0;
	vt_send_word(fd, k);
	t->fake_qpn = FAKE_QPN_BASE + k;
	t->psn = (0x1000u * k + 0xfff00u) & 0xffffff;
	me.qpn = t->fake_qpn;
	me.psn = t->psn;
	me.mtu = (uint32_t)vt_mtu_enum(MTU);
	memset(me.gid, 0, 10);
	me.gid[10] = me.gid[11] = 0xff;
	memcpy(me.gid + 12, &t->sip, 4);
	vt_send_peer(fd, &me);
	vt_recv_peer(fd, &v, 30);
	t->qpn = v.qpn;
	p0 = t->psn;
	memset(pay, 0xa5, sizeof(pay));

	switch (k) {
	case H_READ_NORIGHT:
		reth(ext, v.addr, v.rkey, 64);
		tx(t, OP_READ_REQ, p0, ext, 16, NULL, 0);
		expect_nak(t, p0, SYN_NAK_ACCESS, "READ");
		get_report(fd, &rp);
		CHECK(rp.qp_state == IBV_QPS_ERR, "victim QP %s, want ERR", qps_name(rp.qp_state));
		CHECK(rp.async == IBV_EVENT_QP_ACCESS_ERR, "victim async event %d, want QP access error",
		      rp.async);
		break;
	case H_ATOMIC_NORIGHT:
		rr_put64(ext, v.addr);
		rr_put32(ext + 8, v.rkey);
		rr_put64(ext + 12, 1);
		rr_put64(ext + 20, 0);
		tx(t, OP_FETCH_ADD, p0, ext, 28, NULL, 0);
		expect_nak(t, p0, SYN_NAK_ACCESS, "FETCH_ADD");
		get_report(fd, &rp);
		CHECK(rp.qp_state == IBV_QPS_ERR, "victim QP %s, want ERR", qps_name(rp.qp_state));
		CHECK(rp.async == IBV_EVENT_QP_ACCESS_ERR, "victim async event %d, want QP access error",
		      rp.async);
		CHECK(rp.mr_sum == mr0, "the victim's memory changed");
		break;
	case H_WRITE_LONG:
		reth(ext, v.addr, v.rkey, 32);
		tx(t, OP_WRITE_ONLY, p0, ext, 16, pay, 64);
		expect_nak(t, p0, SYN_NAK_INVALID, "WRITE ONLY 64 bytes, RETH 32");
		get_report(fd, &rp);
		CHECK(rp.qp_state == IBV_QPS_ERR, "victim QP %s, want ERR", qps_name(rp.qp_state));
		CHECK(rp.async == IBV_EVENT_QP_REQ_ERR, "victim async event %d, want QP request error",
		      rp.async);
		break;
	case H_WRITE_SHORT:
		reth(ext, v.addr, v.rkey, 2 * MTU);
		tx(t, OP_WRITE_FIRST, p0, ext, 16, pay, MTU);
		if (wait_ack(t, &r, 5) || r.op != OP_ACK || r.syn >> 5 || r.psn != p0)
			CHECK(0, "WRITE FIRST: no ACK of PSN %u", p0);
		else
			t->psn = (r.psn + 1) & 0xffffff;
		tx(t, OP_WRITE_LAST, t->psn, NULL, 0, pay, MTU / 2);
		expect_nak(t, (p0 + 1) & 0xffffff, SYN_NAK_INVALID, "WRITE LAST with half the rest");
		get_report(fd, &rp);
		CHECK(rp.qp_state == IBV_QPS_ERR, "victim QP %s, want ERR", qps_name(rp.qp_state));
		CHECK(rp.async == IBV_EVENT_QP_REQ_ERR, "victim async event %d, want QP request error",
		      rp.async);
		break;
	case H_WRITE_ZERO:
		reth(ext, 0xdead0000beefull, 0xbadbad, 0);
		tx(t, OP_WRITE_ONLY, p0, ext, 16, NULL, 0);
		/* any credit count: an ACK */
		if (wait_ack(t, &r, 5))
			CHECK(0, "zero-length WRITE, bogus rkey: no answer (want ACK)");
		else
			CHECK(r.op == OP_ACK && r.syn >> 5 == 0 && r.psn == p0,
			      "zero-length WRITE, bogus rkey: opcode 0x%02x %s PSN %u, want ACK PSN %u",
			      r.op, syn_name(r.syn), r.psn, p0);
		get_report(fd, &rp);
		CHECK(rp.qp_state == IBV_QPS_RTS, "victim QP %s, want RTS", qps_name(rp.qp_state));
		CHECK(rp.async == -1, "victim async event %d, want none", rp.async);
		CHECK(rp.mr_sum == mr0, "the victim's memory changed");
		break;
	case H_ADDR_OVERFLOW:
		reth(ext, 0xffffffffffffffc0ull, v.rkey, 128);
		tx(t, OP_WRITE_ONLY, p0, ext, 16, pay, 128);
		expect_nak(t, p0, SYN_NAK_ACCESS, "WRITE at 2^64 - 64, 128 bytes");
		get_report(fd, &rp);
		CHECK(rp.qp_state == IBV_QPS_ERR, "victim QP %s, want ERR", qps_name(rp.qp_state));
		CHECK(rp.mr_sum == mr0, "the victim's memory changed");
		break;
	case H_READ_AFTER_INV: {
		uint64_t st;

		vt_send_word(fd, CMD_INVALIDATE);
		if (vt_recv_word(fd, &st, 30))
			vt_die("no answer to the invalidation");
		CHECK(st == IBV_WC_SUCCESS, "LOCAL_INV of the window: %s", ibv_wc_status_str((int)st));
		reth(ext, v.arg[3], (uint32_t)v.arg[2], 64);
		tx(t, OP_READ_REQ, p0, ext, 16, NULL, 0);
		if (wait_ack(t, &r, 5))
			CHECK(0, "READ through the invalidated window: no answer");
		else
			CHECK(r.op == OP_ACK && r.syn == SYN_NAK_ACCESS && r.psn == p0,
			      "READ through the invalidated window: opcode 0x%02x %s PSN %u (%u bytes), want NAK remote access error PSN %u",
			      r.op, syn_name(r.syn), r.psn, r.paylen, p0);
		get_report(fd, &rp);
		CHECK(rp.qp_state == IBV_QPS_ERR, "victim QP %s, want ERR", qps_name(rp.qp_state));
		CHECK(rp.async == IBV_EVENT_QP_ACCESS_ERR, "victim async event %d, want QP access error",
		      rp.async);
		break;
	}
	case H_DUP_READ_REVOKED: {
		uint64_t st;

		read_window(t, &v, k, p0, ext);
		vt_send_word(fd, CMD_INVALIDATE);
		if (vt_recv_word(fd, &st, 30))
			vt_die("no answer to the invalidation");
		CHECK(st == IBV_WC_SUCCESS, "LOCAL_INV of the window: %s", ibv_wc_status_str((int)st));
		/* the same request again: a duplicate the responder must not serve */
		tx(t, OP_READ_REQ, p0, ext, 16, NULL, 0);
		if (wait_ack(t, &r, 5))
			CHECK(0, "duplicate READ after the invalidation: no answer");
		else
			CHECK(r.op == OP_ACK && r.syn == SYN_NAK_ACCESS && r.psn == p0,
			      "duplicate READ after the invalidation: opcode 0x%02x %s PSN %u (%u bytes), want NAK remote access error PSN %u",
			      r.op, syn_name(r.syn), r.psn, r.paylen, p0);
		get_report(fd, &rp);
		CHECK(rp.qp_state == IBV_QPS_ERR, "victim QP %s, want ERR", qps_name(rp.qp_state));
		break;
	}
	case H_DUP_READ_INV: {
		uint8_t want[64], full[4096], ieth[4];
		uint32_t p1 = (p0 + 1) & 0xffffff;
		int resp = 0, acked = 0, other = 0;
		double end;

		vt_fill(full, 4096, PATTERN_SEED, 100 + k);
		memcpy(want, full, 64);
		read_window(t, &v, k, p0, ext);
		/* the READ again and, in the same burst, the SEND that releases the window */
		rr_put32(ieth, (uint32_t)v.arg[2]);
		tx(t, OP_READ_REQ, p0, ext, 16, NULL, 0);
		tx(t, OP_SEND_ONLY_INV, p1, ieth, 4, pay, 16);
		end = vt_now() + 5;
		while (!acked && vt_now() < end) {
			if (rx(t, &r, end - vt_now()))
				continue;
			if (r.op == OP_READ_RESP_ONLY && r.psn == p0 && r.paylen == 64 && !memcmp(r.pay, want, 64))
				resp++;
			else if (r.op == OP_ACK && (r.syn >> 5) == 0 && r.psn == p1)
				acked = 1;
			else if (r.op == OP_ACK || r.op == OP_READ_RESP_ONLY)
				other++;
		}
		CHECK(acked && !other, "READ replay and SEND with Invalidate: %s, %d other answers (want the SEND ACKed, no NAK)",
		      acked ? "SEND ACKed" : "no ACK of the SEND", other);
		CHECK(resp <= 1, "the READ replayed %d times", resp);
		get_report(fd, &rp);
		CHECK(rp.have_wc && rp.wc_status == IBV_WC_SUCCESS && rp.byte_len == 16,
		      "victim receive: %s, %u bytes", rp.have_wc ? ibv_wc_status_str(rp.wc_status) : "none",
		      rp.byte_len);
		CHECK(rp.qp_state == IBV_QPS_RTS, "victim QP %s, want RTS", qps_name(rp.qp_state));
		break;
	}
	case H_SEND_INV_FOREIGN:
		rr_put32(ext, (uint32_t)v.arg[0]);
		tx(t, OP_SEND_ONLY_INV, p0, ext, 4, pay, 16);
		expect_nak(t, p0, SYN_NAK_INVALID, "SEND with Invalidate of another PD's rkey");
		get_report(fd, &rp);
		CHECK(rp.have_wc && rp.wc_status == IBV_WC_REM_INV_REQ_ERR,
		      "receive completion %s, want remote invalid request error",
		      rp.have_wc ? ibv_wc_status_str(rp.wc_status) : "none");
		CHECK(rp.qp_state == IBV_QPS_ERR, "victim QP %s, want ERR", qps_name(rp.qp_state));
		break;
	case H_WRITE_IMM_NORECV: {
		uint32_t timer = (uint32_t)v.arg[1];
		uint64_t st;

		reth(ext, v.addr + 4096, v.rkey, 64);
		rr_put32(ext + 16, 0x1234abcd);
		tx(t, OP_WRITE_ONLY_IMM, p0, ext, 20, pay, 64);
		expect_nak(t, p0, (uint8_t)(0x20 | timer), "WRITE with immediate, no receive");
		/* the RNR wait: the owner posts a receive; the retry goes through */
		vt_send_word(fd, CMD_POST_RECV);
		if (vt_recv_word(fd, &st, 30))
			vt_die("no answer to the receive post");
		tx(t, OP_WRITE_ONLY_IMM, p0, ext, 20, pay, 64);
		if (wait_ack(t, &r, 5))
			CHECK(0, "retry after the receive: no answer");
		else
			CHECK(r.op == OP_ACK && r.syn >> 5 == 0 && r.psn == p0,
			      "retry after the receive: %s PSN %u, want ACK PSN %u", syn_name(r.syn), r.psn, p0);
		get_report(fd, &rp);
		CHECK(rp.have_wc && rp.wc_status == IBV_WC_SUCCESS && rp.wc_opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
		      rp.byte_len == 64 && rp.imm == 0x1234abcd,
		      "receive completion %s opcode %d len %u imm 0x%x, want success RECV_RDMA_WITH_IMM 64 0x1234abcd",
		      rp.have_wc ? ibv_wc_status_str(rp.wc_status) : "none", rp.wc_opcode, rp.byte_len, rp.imm);
		CHECK(rp.qp_state == IBV_QPS_RTS, "victim QP %s, want RTS", qps_name(rp.qp_state));
		CHECK(rp.mr_sum != mr0, "the retried WRITE did not land");
		break;
	}
	}
	if (why_len) {
		t->fails++;
		printf("CASE %s: FAIL %s\n", hname[k], why);
	} else {
		printf("CASE %s: PASS (victim QP %s, async event %s, receive completion %s)\n", hname[k],
		       qps_name(rp.qp_state), rp.async < 0 ? "none" : ibv_event_type_str(rp.async),
		       rp.have_wc ? ibv_wc_status_str(rp.wc_status) : "none");
	}
	fflush(stdout);
}

static int parse_mac(const char *s, uint8_t m[6])
{
	unsigned int b[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -1;
		m[i] = (uint8_t)b[i];
	}
	return 0;
}

static uint8_t atk_dmac[6];

static int attacker(const char *ifname, int argc, char **argv)
{
	struct atk t = { 0 };
	struct ifreq ifr = { 0 };
	bool want[H_N] = { false };
	int fd, any = 0;

	if (inet_pton(AF_INET, argv[0], &t.dip) != 1)
		vt_die("bad victim IPv4 address %s", argv[0]);
	for (int i = 1; i < argc; i++) {
		int k;

		for (k = 1; k < H_N && strcmp(argv[i], hname[k]); k++)
			;
		if (k == H_N)
			vt_die("unknown case %s", argv[i]);
		want[k] = true;
		any = 1;
	}
	memcpy(t.dmac, atk_dmac, 6);
	t.fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_IP));
	if (t.fd < 0)
		vt_die("AF_PACKET socket: %s (needs root)", strerror(errno));
	if (strlen(ifname) >= sizeof(ifr.ifr_name))
		vt_die("interface name too long");
	strcpy(ifr.ifr_name, ifname);
	if (ioctl(t.fd, SIOCGIFINDEX, &ifr))
		vt_die("no interface %s", ifname);
	t.ifindex = ifr.ifr_ifindex;
	if (ioctl(t.fd, SIOCGIFHWADDR, &ifr))
		vt_die("cannot read the MAC of %s", ifname);
	memcpy(t.smac, ifr.ifr_hwaddr.sa_data, 6);
	ifr.ifr_addr.sa_family = AF_INET;
	if (ioctl(t.fd, SIOCGIFADDR, &ifr))
		vt_die("%s has no IPv4 address", ifname);
	t.sip = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr;
	struct sockaddr_ll me = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
				  .sll_ifindex = t.ifindex };

	if (bind(t.fd, (struct sockaddr *)&me, sizeof(me)))
		vt_die("bind to %s: %s", ifname, strerror(errno));
	O.server = argv[0];
	fd = vt_tcp_open(&O, 60);
	for (unsigned int k = 1; k < H_N; k++)
		if (!any || want[k])
			attack_case(&t, fd, k);
	vt_send_word(fd, CMD_END);
	close(fd);
	close(t.fd);
	printf("cnuas-hostile: %d case(s) failed\n", t.fails);
	return t.fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *ifname = NULL;
	bool have_mac = false;
	int opt;
	static uint8_t dmac[6];

	vt_prog = "cnuas-hostile";
	vt_opts_default(&O);
	O.mtu = MTU;
	O.tcp_port = 18740;
	O.max_dest_rd_atomic = 4;
	while ((opt = getopt(argc, argv, VT_COMMON_OPTS "I:M:h")) != -1) {
		if (opt == 'I') {
			ifname = optarg;
		} else if (opt == 'M') {
			if (parse_mac(optarg, dmac))
				vt_die("bad MAC %s", optarg);
			have_mac = true;
		} else if (opt == 'h' || !vt_common_opt(&O, opt, optarg)) {
			fprintf(opt == 'h' ? stdout : stderr,
				"Usage: victim:   cnuas-hostile [-d DEV] [-p PORT]\n"
				"       attacker: cnuas-hostile -I IFACE -M VICTIM_MAC [-p PORT] VICTIM_IP [CASE...]\n");
			vt_usage_common(opt == 'h' ? stdout : stderr);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!ifname)
		return victim();
	if (!have_mac || optind >= argc)
		vt_die("the attacker needs -M VICTIM_MAC and VICTIM_IP");
	memcpy(atk_dmac, dmac, 6);
	return attacker(ifname, argc - optind, argv + optind);
}
