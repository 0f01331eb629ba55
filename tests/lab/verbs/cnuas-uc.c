// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-uc: Unreliable Connected transfers that check every byte.
 *
 *   server (receiver):  cnuas-uc [options]
 *   client (sender):    cnuas-uc [options] SERVER
 *
 * The sender sends N messages in rounds of W over a UC QP, in turn SEND,
 * SEND with immediate, RDMA WRITE with immediate and RDMA WRITE, of
 * sizes from the seed (most span several packets, every fifth is small).
 * A SEND starts with a header naming its index; a WRITE goes to the
 * receiver's area for its place in the round, and the immediate names
 * its index. Before each round the receiver posts a receive WQE per
 * message (UC has no RNR: a message with none is lost) and clears the
 * WRITE area; after it, it checks every message that completed, and
 * every plain WRITE in its area, against the seed.
 *
 * Without -L every message must arrive intact. With -L (the path drops
 * packets) a message may be lost, but only whole: none may complete
 * with wrong bytes, length or immediate, twice, or out of its round, and
 * messages must still arrive after losses (in the last quarter). -W: the
 * receiver's QP grants no remote write, so every WRITE must be dropped
 * and every SEND arrive.
 *
 * The sender also checks what UC refuses: READ and atomics at post time
 * (EINVAL; on cnuas devices only: Soft-RoCE's provider takes them), and
 * the RC-only attributes (min_rnr_timer, max_dest_rd_atomic, timeout,
 * retry_cnt) in modify_qp.
 */
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HDR_MAGIC 0x55434e41u	/* "UCNA" */
#define END_WORD UINT64_MAX

enum kind { K_SEND, K_SEND_IMM, K_WRITE_IMM, K_WRITE };

struct hdr {
	uint32_t magic;
	uint32_t index;
	uint32_t len;
	uint32_t kind;
};

struct uc {
	struct vt_opts o;
	uint32_t count;		/* messages */
	uint32_t win;		/* messages per round */
	uint32_t max;		/* largest message, bytes */
	uint64_t seed;
	bool lossy;		/* -L */
	bool no_write;		/* -W */
	double quiet;		/* lossy receiver: a round ends this long after its last completion */
	double limit;
	double deadline;
	struct vt_ctx c;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	uint8_t *mem;		/* W message buffers | W WRITE areas (receiver) */
	size_t mem_len;
	struct ibv_mr *mr;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: cnuas-uc [options] [SERVER]   (no SERVER: receive; SERVER: send to it)\n"
		   "  -n N       messages (default 256)\n"
		   "  -w N       messages per round (default 16)\n"
		   "  -c BYTES   largest message (default 10000)\n"
		   "  -S SEED    PRNG seed (default 1)\n"
		   "  -L         the path loses packets: messages may be lost, whole only\n"
		   "  -W         the receiver's QP grants no remote write: WRITEs must be dropped\n"
		   "  -T SEC     give up (exit 1) after SEC seconds (default 300)\n");
	vt_usage_common(f);
}

static enum kind kind_of(uint32_t idx)
{
	return (enum kind)(idx % 4);
}

static const char *kind_name(enum kind k)
{
	static const char *const n[] = { "SEND", "SEND_IMM", "WRITE_IMM", "WRITE" };

	return n[k];
}

static uint32_t len_of(const struct uc *u, uint32_t idx)
{
	uint64_t s = u->seed * 0x9E3779B97F4A7C15ull + idx + 1;
	uint64_t r = vt_rand(&s);

	if (idx % 5 == 4)	/* one packet */
		return (uint32_t)(sizeof(struct hdr) + r % 48);
	return (uint32_t)(sizeof(struct hdr) + r % (u->max - sizeof(struct hdr) + 1));
}

/* Message @idx as the sender sends it and the receiver expects it. */
static void make_msg(const struct uc *u, uint8_t *buf, uint32_t idx)
{
	uint32_t len = len_of(u, idx);
	struct hdr h = { HDR_MAGIC, idx, len, kind_of(idx) };

	vt_fill(buf, len, u->seed, idx);
	if (kind_of(idx) == K_SEND || kind_of(idx) == K_SEND_IMM)
		memcpy(buf, &h, sizeof(h));
}

static uint8_t *msg_buf(const struct uc *u, uint32_t j)
{
	return u->mem + (size_t)j * u->max;
}

static uint8_t *write_area(const struct uc *u, uint32_t j)
{
	return u->mem + (size_t)(u->win + j) * u->max;
}

static void post_recv(struct uc *u, uint32_t slot)
{
	struct ibv_sge sg = { .addr = (uintptr_t)msg_buf(u, slot), .length = u->max, .lkey = u->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sg, .num_sge = 1 }, *bad;
	int r = ibv_post_recv(u->qp, &wr, &bad);

	if (r)
		vt_die("ibv_post_recv: %s", strerror(r));
}

static void check_wc(const struct ibv_wc *wc, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS)
		vt_die("%s completion wr_id %" PRIu64 ": %s (%d), vendor_err 0x%x", what, wc->wr_id,
		       ibv_wc_status_str(wc->status), wc->status, wc->vendor_err);
}

/* ---- receiver ---- */

struct tally {
	uint64_t expected, delivered, bad, writes, writes_intact, late;
};

/* A receive completion of round [base, base + n): 0, or 1 if the message is wrong. */
static int check_recv(struct uc *u, const struct ibv_wc *wc, uint32_t base, uint32_t n,
		      uint8_t *seen, uint8_t *expect, uint32_t *idx_out)
{
	uint32_t slot = (uint32_t)wc->wr_id, idx, len;
	bool imm = wc->wc_flags & IBV_WC_WITH_IMM;
	const uint8_t *got;

	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		if (!imm)
			vt_die("RDMA WRITE with immediate completed without IBV_WC_WITH_IMM");
		idx = ntohl(wc->imm_data);
		if (idx - base >= n || kind_of(idx) != K_WRITE_IMM)
			vt_die("WRITE immediate %u: not a WRITE_IMM of round [%u, %u)", idx, base, base + n);
		got = write_area(u, idx - base);
	} else if (wc->opcode == IBV_WC_RECV) {
		struct hdr h;

		memcpy(&h, msg_buf(u, slot), sizeof(h));
		idx = h.index;
		if (h.magic != HDR_MAGIC || idx - base >= n ||
		    (kind_of(idx) != K_SEND && kind_of(idx) != K_SEND_IMM))
			vt_die("SEND in slot %u: header magic 0x%x index %u, not a SEND of round [%u, %u)",
			       slot, h.magic, idx, base, base + n);
		if (imm != (kind_of(idx) == K_SEND_IMM) || (imm && ntohl(wc->imm_data) != idx))
			vt_die("message %u (%s): immediate flag %d value 0x%x", idx, kind_name(kind_of(idx)), imm,
			       imm ? ntohl(wc->imm_data) : 0);
		got = msg_buf(u, slot);
	} else {
		vt_die("receive completion with opcode %d", wc->opcode);
	}
	if (seen[idx - base]++)
		vt_die("message %u (%s) completed twice", idx, kind_name(kind_of(idx)));
	*idx_out = idx;
	len = len_of(u, idx);
	if (wc->byte_len != len) {
		vt_log("MISMATCH message %u (%s): %u bytes, want %u", idx, kind_name(kind_of(idx)), wc->byte_len,
		       len);
		return 1;
	}
	make_msg(u, expect, idx);
	if (memcmp(expect, got, len)) {
		size_t off = 0;

		while (expect[off] == got[off])
			off++;
		vt_log("MISMATCH message %u (%s, %u bytes) at offset %zu: got 0x%02x want 0x%02x", idx,
		       kind_name(kind_of(idx)), len, off, got[off], expect[off]);
		return 1;
	}
	return 0;
}

static int run_receiver(struct uc *u, int fd)
{
	uint8_t *expect = malloc(u->max), *seen = malloc(u->win);
	struct tally t = { 0 };
	uint64_t n;

	if (!expect || !seen)
		vt_die("out of memory");
	for (uint32_t round = 0;; round++) {
		uint32_t base = round * u->win, want = 0, got = 0;
		double last;

		memset(write_area(u, 0), 0, (size_t)u->win * u->max);
		memset(seen, 0, u->win);
		vt_send_word(fd, round);
		if (vt_recv_word(fd, &n, (int)(u->deadline - vt_now()) + 1))
			vt_die("round %u: the sender did not say what it sent", round);
		if (n == END_WORD)
			break;
		if (n > u->win)
			vt_die("round %u: the sender sent %" PRIu64 " messages, more than %u", round, n, u->win);
		for (uint32_t j = 0; j < n; j++) {
			enum kind k = kind_of(base + j);

			if (k == K_SEND || k == K_SEND_IMM || (k == K_WRITE_IMM && !u->no_write))
				want++;
		}
		t.expected += want;
		last = vt_now();
		while (got < want) {
			struct ibv_wc wc;
			uint32_t idx;
			int r = ibv_poll_cq(u->cq, 1, &wc);

			if (r < 0)
				vt_die("ibv_poll_cq failed");
			if (!r) {
				if (u->lossy && vt_now() - last > u->quiet)
					break;
				if (vt_now() > u->deadline)
					vt_die("round %u: %u of %u messages after the time limit", round, got, want);
				usleep(100);
				continue;
			}
			check_wc(&wc, "receive");
			last = vt_now();
			got++;
			t.bad += check_recv(u, &wc, base, (uint32_t)n, seen, expect, &idx);
			if (u->no_write && kind_of(idx) == K_WRITE_IMM)
				vt_die("WRITE %u completed on a QP without remote write", idx);
			if (idx >= u->count - u->count / 4)
				t.late++;
			post_recv(u, (uint32_t)wc.wr_id);
		}
		t.delivered += got;
		/* Plain WRITEs leave no completion: their bytes tell. */
		for (uint32_t j = 0; j < n; j++) {
			uint32_t idx = base + j;

			if (kind_of(idx) != K_WRITE)
				continue;
			make_msg(u, expect, idx);
			t.writes++;
			t.writes_intact += !memcmp(expect, write_area(u, j), len_of(u, idx));
		}
	}
	bool ok = !t.bad;

	if (!u->lossy && t.delivered != t.expected)
		ok = false;
	if (u->lossy && !t.late)
		ok = false;	/* nothing got through after the losses */
	if (!u->lossy && !u->no_write && t.writes_intact != t.writes)
		ok = false;
	if (u->no_write && t.writes_intact)
		ok = false;
	printf("cnuas-uc: received %" PRIu64 " of %" PRIu64 " messages with completions (%" PRIu64
	       " lost, %" PRIu64 " bad, %" PRIu64 " in the last quarter); plain WRITEs intact %" PRIu64
	       " of %" PRIu64 ": %s\n",
	       t.delivered, t.expected, t.expected - t.delivered, t.bad, t.late, t.writes_intact, t.writes,
	       ok ? "PASS" : "FAIL");
	fflush(stdout);
	vt_send_word(fd, ok);
	free(expect);
	free(seen);
	return ok ? 0 : 1;
}

/* ---- sender ---- */

static int post_one(struct uc *u, uint32_t j, uint32_t idx, const struct vt_peer *peer)
{
	static const enum ibv_wr_opcode op[] = {
		[K_SEND] = IBV_WR_SEND, [K_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
		[K_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM, [K_WRITE] = IBV_WR_RDMA_WRITE,
	};
	struct ibv_sge sg = { .addr = (uintptr_t)msg_buf(u, j), .length = len_of(u, idx), .lkey = u->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = idx, .sg_list = &sg, .num_sge = 1, .opcode = op[kind_of(idx)],
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	make_msg(u, msg_buf(u, j), idx);
	wr.imm_data = htonl(idx);
	/* Each message its own place in the round: nothing is overwritten. */
	wr.wr.rdma.remote_addr = peer->addr + (uint64_t)(u->win + j) * u->max;
	wr.wr.rdma.rkey = peer->rkey;
	return ibv_post_send(u->qp, &wr, &bad);
}

/* READ and atomics are refused at post time, and leave the QP working. */
static void check_refused_ops(struct uc *u, const struct vt_peer *peer)
{
	static const struct { enum ibv_wr_opcode op; const char *name; } ops[] = {
		{ IBV_WR_RDMA_READ, "RDMA READ" },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, "ATOMIC FETCH_AND_ADD" },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, "ATOMIC CMP_AND_SWP" },
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ibv_sge sg = { .addr = (uintptr_t)msg_buf(u, 0), .length = 8, .lkey = u->mr->lkey };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = ops[i].op,
					  .send_flags = IBV_SEND_SIGNALED }, *bad = NULL;
		int r;

		wr.wr.atomic.remote_addr = peer->addr;
		wr.wr.atomic.rkey = peer->rkey;
		r = ibv_post_send(u->qp, &wr, &bad);
		if (r != EINVAL && r != -EINVAL)
			vt_die("%s on a UC QP: ibv_post_send returned %d, want EINVAL", ops[i].name, r);
		if (bad != &wr)
			vt_die("%s on a UC QP: bad_wr does not name it", ops[i].name);
	}
	vt_log("RDMA READ and atomics on a UC QP: refused with EINVAL at post time");
}

/* UC's modify_qp takes no RC-only attribute. */
static void check_uc_attrs(struct uc *u, const struct vt_peer *peer)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = u->cq, .recv_cq = u->cq, .qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(u->c.pd, &ia);
	struct ibv_qp_attr a;
	int base = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	if (!qp)
		vt_die("ibv_create_qp(UC): %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)u->c.ib_port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		vt_die("UC QP to INIT: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = peer->qpn;
	a.ah_attr.is_global = 1;
	a.ah_attr.dlid = (uint16_t)peer->lid;
	a.ah_attr.port_num = (uint8_t)u->c.ib_port;
	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	a.ah_attr.grh.sgid_index = (uint8_t)u->c.gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	a.min_rnr_timer = 12;
	a.max_dest_rd_atomic = 1;
	if (!ibv_modify_qp(qp, &a, base | IBV_QP_MIN_RNR_TIMER))
		vt_die("UC QP to RTR with min_rnr_timer accepted");
	if (!ibv_modify_qp(qp, &a, base | IBV_QP_MAX_DEST_RD_ATOMIC))
		vt_die("UC QP to RTR with max_dest_rd_atomic accepted");
	if (ibv_modify_qp(qp, &a, base))
		vt_die("UC QP to RTR: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	if (!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT))
		vt_die("UC QP to RTS with timeout accepted");
	if (!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT))
		vt_die("UC QP to RTS with retry_cnt accepted");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		vt_die("UC QP to RTS: %s", strerror(errno));
	if (ibv_destroy_qp(qp))
		vt_die("ibv_destroy_qp(UC): %s", strerror(errno));
	vt_log("UC modify_qp: INIT/RTR/RTS with UC's attributes; min_rnr_timer, max_dest_rd_atomic, timeout, retry_cnt refused");
}

static int run_sender(struct uc *u, int fd, const struct vt_peer *peer)
{
	uint64_t w, sent = 0;

	if (!strncmp(ibv_get_device_name(u->c.ctx->device), "cnuas", 5))
		check_refused_ops(u, peer);
	check_uc_attrs(u, peer);
	for (uint32_t round = 0;; round++) {
		uint32_t base = round * u->win, n, done = 0;

		if (vt_recv_word(fd, &w, (int)(u->deadline - vt_now()) + 1) || w != round)
			vt_die("round %u: the receiver is not ready", round);
		if (base >= u->count) {
			vt_send_word(fd, END_WORD);
			break;
		}
		n = u->count - base < u->win ? u->count - base : u->win;
		for (uint32_t j = 0; j < n; j++) {
			int r = post_one(u, j, base + j, peer);

			if (r)
				vt_die("message %u (%s): ibv_post_send: %s", base + j, kind_name(kind_of(base + j)),
				       strerror(r));
		}
		/* UC completes a send once it is out: no ACK is waited for. */
		while (done < n) {
			struct ibv_wc wc;

			if (vt_poll_one(u->cq, &wc, u->deadline - vt_now()))
				vt_die("round %u: %u of %u send completions", round, done, n);
			check_wc(&wc, kind_name(kind_of((uint32_t)wc.wr_id)));
			if (wc.wr_id != base + done)
				vt_die("send completion of message %" PRIu64 ", want %u", wc.wr_id, base + done);
			done++;
		}
		sent += n;
		vt_send_word(fd, n);
	}
	if (vt_recv_word(fd, &w, 60))
		vt_die("no verdict from the receiver");
	printf("cnuas-uc: sent %" PRIu64 " messages (SEND, SEND_IMM, WRITE_IMM, WRITE); receiver: %s\n", sent,
	       w ? "PASS" : "FAIL");
	return w ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct uc u = { .count = 256, .win = 16, .max = 10000, .seed = 1, .quiet = 0.5, .limit = 300 };
	struct vt_peer me = { 0 }, peer;
	int opt, fd, r, access;
	uint64_t w;

	vt_prog = "cnuas-uc";
	vt_opts_default(&u.o);
	while ((opt = getopt(argc, argv, VT_COMMON_OPTS "n:w:c:S:LWT:h")) != -1) {
		if (vt_common_opt(&u.o, opt, optarg))
			continue;
		switch (opt) {
		case 'n': u.count = (uint32_t)vt_parse_u64(optarg, "messages", 1u << 30); break;
		case 'w': u.win = (uint32_t)vt_parse_u64(optarg, "messages per round", 1024); break;
		case 'c': u.max = (uint32_t)vt_parse_u64(optarg, "largest message", 1u << 24); break;
		case 'S': u.seed = vt_parse_u64(optarg, "seed", UINT64_MAX); break;
		case 'L': u.lossy = true; break;
		case 'W': u.no_write = true; break;
		case 'T': u.limit = (double)vt_parse_u64(optarg, "time limit", 86400); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		u.o.server = argv[optind++];
	if (optind < argc || !u.count || !u.win || u.max < 64) {
		usage(stderr);
		return 2;
	}
	u.deadline = vt_now() + u.limit;
	vt_open(&u.c, &u.o);
	u.mem_len = (size_t)2 * u.win * u.max;
	if (posix_memalign((void **)&u.mem, 4096, u.mem_len))
		vt_die("out of memory (%zu bytes)", u.mem_len);
	memset(u.mem, 0, u.mem_len);
	u.mr = ibv_reg_mr(u.c.pd, u.mem, u.mem_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!u.mr)
		vt_die("ibv_reg_mr(%zu bytes): %s", u.mem_len, strerror(errno));
	u.cq = ibv_create_cq(u.c.ctx, (int)(2 * u.win + 8), NULL, NULL, 0);
	if (!u.cq)
		vt_die("ibv_create_cq: %s", strerror(errno));
	struct ibv_qp_init_attr ia = {
		.send_cq = u.cq, .recv_cq = u.cq, .qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = u.win, .max_recv_wr = u.win, .max_send_sge = 1, .max_recv_sge = 1 },
	};

	u.qp = ibv_create_qp(u.c.pd, &ia);
	if (!u.qp)
		vt_die("ibv_create_qp(UC): %s", strerror(errno));

	srand48((long)(getpid() ^ (long)(vt_now() * 1e6)));
	me.qpn = u.qp->qp_num;
	me.psn = (uint32_t)lrand48() & 0xffffff;
	me.rkey = u.mr->rkey;
	me.addr = (uintptr_t)u.mem;
	me.mtu = u.o.mtu ? vt_mtu_enum(u.o.mtu) : u.c.port_attr.active_mtu;
	me.arg[0] = u.max;
	me.arg[1] = u.win;
	me.arg[2] = u.count;
	me.arg[3] = u.seed;
	vt_peer_addr(&u.c, &me);

	fd = vt_tcp_open(&u.o, (int)u.limit);
	vt_send_peer(fd, &me);
	vt_recv_peer(fd, &peer, 60);
	if (peer.arg[0] != u.max || peer.arg[1] != u.win || peer.arg[2] != u.count || peer.arg[3] != u.seed)
		vt_die("the peer uses -c %" PRIu64 " -w %" PRIu64 " -n %" PRIu64 " -S %" PRIu64
		       ", we -c %u -w %u -n %u -S %" PRIu64 " (use the same)",
		       peer.arg[0], peer.arg[1], peer.arg[2], peer.arg[3], u.max, u.win, u.count, u.seed);
	access = IBV_ACCESS_LOCAL_WRITE | (u.no_write && !u.o.server ? 0 : IBV_ACCESS_REMOTE_WRITE);
	r = vt_connect_uc(&u.c, u.qp, &u.o, me.psn, &peer, access);
	if (r)
		vt_die("bringing the UC QP to RTS: %s", strerror(r));
	if (!u.o.server)
		for (uint32_t i = 0; i < u.win; i++)
			post_recv(&u, i);
	vt_log("%s: UC qpn 0x%06x psn 0x%06x, remote qpn 0x%06x psn 0x%06x, mtu %d, %u messages up to %u bytes%s%s",
	       u.o.server ? "sender" : "receiver", me.qpn, me.psn, peer.qpn, peer.psn,
	       vt_mtu_bytes(peer.mtu < me.mtu ? peer.mtu : me.mtu), u.count, u.max,
	       u.lossy ? ", lossy path" : "", u.no_write ? ", no remote write" : "");
	vt_send_word(fd, 1);
	if (vt_recv_word(fd, &w, 60))
		vt_die("the peer did not get ready");
	r = u.o.server ? run_sender(&u, fd, &peer) : run_receiver(&u, fd);
	close(fd);
	ibv_destroy_qp(u.qp);
	ibv_destroy_cq(u.cq);
	ibv_dereg_mr(u.mr);
	free(u.mem);
	vt_close(&u.c);
	return r;
}
