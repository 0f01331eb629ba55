// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-xfer: an RC transfer that checks every byte.
 *
 *   server (receiver):  cnuas-xfer [options]
 *   client (sender):    cnuas-xfer [options] SERVER
 *
 * The sender cuts N MiB into chunks filled from a seeded PRNG (a chunk's
 * contents depend only on the seed and its index). Even chunks go as a
 * SEND (a 16-byte header and the data, two SGEs), odd chunks as an RDMA
 * WRITE into the receiver's slot followed by a header-only SEND. The
 * receiver has a ring of slots, regenerates each chunk and compares it,
 * then reposts the slot and returns a credit SEND; the sender never has
 * more than one ring of chunks outstanding. Exit 0 only when every chunk
 * arrived intact, in order, and every completion succeeded. SIGUSR1 ends
 * the sender's run as -D does (a test stops it once something happened,
 * rather than guessing a length); the receiver ignores it.
 *
 * When the CQ stays empty for about a millisecond, both sides sleep on
 * its completion channel: a poll loop with 50 us sleeps cost a TCG guest
 * 0.8 of a host core in timer wake-ups for as long as it waited (a
 * sender held back by drops, a receiver waiting for its sender), while
 * sleeping at once on every empty poll made a transfer through drops a
 * third slower (-P keeps the poll loop).
 */
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HDR_MAGIC 0x434e5541u	/* "CNUA" */
enum { K_SEND = 1, K_WRITE = 2, K_END = 3 };
#define SPIN_POLLS 20	/* empty polls 50 us apart before sleeping on the channel */

struct hdr {
	uint32_t magic;
	uint32_t kind;
	uint32_t index;
	uint32_t len;
};

struct xfer {
	struct vt_opts o;
	uint64_t size;		/* bytes */
	uint32_t chunk, nslot;
	uint64_t seed;
	double seconds;		/* sender: stop after this long (0: never) */
	double limit;		/* whole run */
	struct vt_ctx c;
	struct ibv_comp_channel *channel;	/* NULL: -P, poll with short sleeps */
	struct ibv_cq *cq;
	bool armed;		/* notification requested, its event not yet read */
	bool waited_out;	/* armed, and a second passed without the event */
	uint64_t late_events;	/* CQEs found that way: the event is late or lost */
	struct ibv_qp *qp;
	uint8_t *mem;		/* data slots | headers | credit words */
	struct ibv_mr *mr;
	uint8_t *data;
	struct hdr *hdrs;
	uint64_t *credits;
	double deadline;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: cnuas-xfer [options] [SERVER]   (no SERVER: receive; SERVER: send to it)\n"
		   "  -s MIB     bytes to transfer, in MiB (default 256)\n"
		   "  -c KIB     chunk (message) size in KiB (default 1024)\n"
		   "  -w N       receive slots = chunks in flight (default 8)\n"
		   "  -S SEED    PRNG seed (default 1)\n"
		   "  -D SEC     sender: stop after SEC seconds even if not all sent\n"
		   "             (or on SIGUSR1, which the receiver ignores)\n"
		   "  -T SEC     give up (exit 1) after SEC seconds (default 1200)\n"
		   "  -P         poll the CQ with 50 us sleeps instead of sleeping on its\n"
		   "             completion channel\n");
	vt_usage_common(f);
}

static volatile sig_atomic_t stop_asked;

static void ask_stop(int sig)
{
	(void)sig;
	stop_asked = 1;
}

static const char *kind_name(uint32_t k)
{
	return k == K_SEND ? "SEND" : k == K_WRITE ? "WRITE" : k == K_END ? "END" : "?";
}

static void post_recv(struct xfer *x, uint64_t id, void *a, uint32_t len, void *b, uint32_t blen)
{
	struct ibv_sge sg[2] = {
		{ .addr = (uintptr_t)a, .length = len, .lkey = x->mr->lkey },
		{ .addr = (uintptr_t)b, .length = blen, .lkey = x->mr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = sg, .num_sge = b ? 2 : 1 }, *bad;
	int r = ibv_post_recv(x->qp, &wr, &bad);

	if (r)
		vt_die("ibv_post_recv: %s", strerror(r));
}

static void post_send(struct xfer *x, uint64_t id, enum ibv_wr_opcode op, struct ibv_sge *sg, int nsg,
		      uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = sg, .num_sge = nsg, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	int r;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	r = ibv_post_send(x->qp, &wr, &bad);
	if (r)
		vt_die("ibv_post_send: %s", strerror(r));
}

/*
 * Sleep until the armed CQ's event comes, at most a second at a time (the
 * -T deadline is checked between sleeps). The event is acknowledged at
 * once, so the CQ can always be destroyed.
 */
static void wait_event(struct xfer *x)
{
	struct pollfd pfd = { .fd = x->channel->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;
	int r = poll(&pfd, 1, 1000);

	if (r < 0 && errno != EINTR)
		vt_die("poll on the completion channel: %s", strerror(errno));
	if (r == 0)
		x->waited_out = true;
	if (r <= 0)
		return;
	if (ibv_get_cq_event(x->channel, &cq, &ctx))
		vt_die("ibv_get_cq_event: %s", strerror(errno));
	ibv_ack_cq_events(cq, 1);
	x->armed = false;
}

static int poll_some(struct xfer *x, struct ibv_wc *wc, int max)
{
	unsigned int empty = 0;

	for (;;) {
		int n = ibv_poll_cq(x->cq, max, wc);

		if (n < 0)
			vt_die("ibv_poll_cq failed");
		if (n > 0) {
			if (x->armed && x->waited_out)
				x->late_events++;
			x->waited_out = false;
			return n;
		}
		if (vt_now() > x->deadline)
			vt_die("time limit reached (%.0f s)", x->limit);
		if (!x->channel || ++empty <= SPIN_POLLS) {
			usleep(50);
		} else if (!x->armed) {
			/* poll once more after arming: a CQE may have come before */
			if (ibv_req_notify_cq(x->cq, 0))
				vt_die("ibv_req_notify_cq: %s", strerror(errno));
			x->armed = true;
		} else {
			wait_event(x);
		}
	}
}

static void check_wc(const struct ibv_wc *wc, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS)
		vt_die("%s completion wr_id %" PRIu64 ": %s (%d), vendor_err 0x%x", what, wc->wr_id,
		       ibv_wc_status_str(wc->status), wc->status, wc->vendor_err);
}

/* ---- receiver ---- */

static int run_receiver(struct xfer *x, int fd, const struct vt_peer *peer)
{
	uint8_t *expect = malloc(x->chunk);
	uint64_t next = 0, bad_chunks = 0, bytes = 0, cred_sent = 0;
	uint32_t cred_out = 0, cred_slot = 0;
	double t0 = 0;
	struct ibv_wc wc[16];
	bool end = false;

	(void)peer;
	if (!expect)
		vt_die("out of memory");
	while (!end) {
		int n = poll_some(x, wc, 16);

		for (int i = 0; i < n; i++) {
			if (wc[i].opcode & IBV_WC_RECV) {
				check_wc(&wc[i], "receive");
				uint32_t s = (uint32_t)(wc[i].wr_id % x->nslot);
				struct hdr h = x->hdrs[s];
				uint8_t *d = x->data + (size_t)s * x->chunk;

				if (!t0)
					t0 = vt_now();
				if (wc[i].wr_id != next || h.magic != HDR_MAGIC || h.index != (uint32_t)next)
					vt_die("chunk %" PRIu64 ": bad header (magic 0x%x index %u kind %u, wr_id %" PRIu64 ")",
					       next, h.magic, h.index, h.kind, wc[i].wr_id);
				if (h.kind == K_END) {
					end = true;
					break;
				}
				if (h.len > x->chunk || (h.kind != K_SEND && h.kind != K_WRITE))
					vt_die("chunk %" PRIu64 ": bad header kind %u len %u", next, h.kind, h.len);
				if (h.kind == K_SEND && wc[i].byte_len != sizeof(h) + h.len)
					vt_die("chunk %" PRIu64 ": SEND of %u bytes, want %zu", next, wc[i].byte_len,
					       sizeof(h) + h.len);
				if (h.kind == K_WRITE && wc[i].byte_len != sizeof(h))
					vt_die("chunk %" PRIu64 ": notice of %u bytes, want %zu", next, wc[i].byte_len,
					       sizeof(h));
				vt_fill(expect, h.len, x->seed, next);
				if (memcmp(expect, d, h.len)) {
					size_t off = 0;

					while (off < h.len && expect[off] == d[off])
						off++;
					if (bad_chunks < 10)
						vt_log("MISMATCH chunk %" PRIu64 " (%s, %u bytes) at offset %zu: got 0x%02x want 0x%02x",
						       next, kind_name(h.kind), h.len, off, d[off], expect[off]);
					bad_chunks++;
				}
				bytes += h.len;
				/* reuse the slot for chunk next + nslot, then hand out a credit */
				memset(&x->hdrs[s], 0, sizeof(h));
				post_recv(x, next + x->nslot, &x->hdrs[s], sizeof(h), d, x->chunk);
				next++;
			} else {
				check_wc(&wc[i], "credit send");
				cred_out--;
				continue;
			}
		}
		/* credits are cumulative: one SEND tells all verified so far */
		if (!end && next > cred_sent && cred_out < x->nslot + 2) {
			x->credits[cred_slot] = next;
			struct ibv_sge sg = { .addr = (uintptr_t)&x->credits[cred_slot], .length = 8,
					      .lkey = x->mr->lkey };

			post_send(x, next, IBV_WR_SEND, &sg, 1, 0, 0);
			cred_slot = (cred_slot + 1) % (x->nslot + 2);
			cred_out++;
			cred_sent = next;
		}
	}
	double dt = vt_now() - t0;

	if (dt <= 0)
		dt = 1e-9;
	printf("cnuas-xfer: received %" PRIu64 " chunks, %.1f MiB in %.2f s: %.1f MiB/s, %s\n", next,
	       bytes / 1048576.0, dt, bytes / 1048576.0 / dt,
	       bad_chunks ? "DATA MISMATCH" : "all data verified");
	fflush(stdout);
	vt_send_word(fd, bad_chunks << 32 | (next & 0xffffffffu));
	free(expect);
	/* let the last credit sends finish before the QP goes */
	while (cred_out) {
		struct ibv_wc w;

		if (vt_poll_one(x->cq, &w, 10))
			break;
		cred_out--;
	}
	/*
	 * The ACKs of the last chunks may have been lost: our QP must stay
	 * to answer the sender's resends until it has seen them all (it says
	 * so, or goes away). Leaving early turns a lost ACK into a retry
	 * failure on the sender.
	 */
	uint64_t bye;

	if (vt_recv_word(fd, &bye, (int)(x->deadline - vt_now()) + 1))
		vt_log("the sender left without its final word");
	return bad_chunks ? 1 : 0;
}

/* ---- sender ---- */

static int run_sender(struct xfer *x, int fd, const struct vt_peer *peer)
{
	uint64_t nchunks = (x->size + x->chunk - 1) / x->chunk;
	uint64_t next = 0, done = 0, credit = 0, sent_bytes = 0, w;
	/* per slot: WRs of the chunk still outstanding */
	uint8_t *pending = calloc(x->nslot, 1);
	double t0 = vt_now();
	bool end_posted = false, end_done = false;
	struct ibv_wc wc[16];

	if (!pending)
		vt_die("out of memory");
	while (!end_done) {
		/* post what the window allows */
		while (!end_posted && next - done < x->nslot && next - credit < x->nslot) {
			bool stop = next == nchunks || stop_asked ||
				    (x->seconds > 0 && vt_now() - t0 > x->seconds);
			uint32_t s = (uint32_t)(next % x->nslot);
			struct hdr *h = &x->hdrs[s];
			uint8_t *d = x->data + (size_t)s * x->chunk;
			uint64_t rdata = peer->addr + (uint64_t)s * x->chunk;
			struct ibv_sge sg[2];

			h->magic = HDR_MAGIC;
			h->index = (uint32_t)next;
			h->kind = stop ? K_END : next % 2 ? K_WRITE : K_SEND;
			h->len = stop ? 0 : (uint32_t)(x->size - next * x->chunk < x->chunk ?
						       x->size - next * x->chunk : x->chunk);
			sg[0] = (struct ibv_sge){ .addr = (uintptr_t)h, .length = sizeof(*h), .lkey = x->mr->lkey };
			if (stop) {
				post_send(x, next << 8 | 1, IBV_WR_SEND, sg, 1, 0, 0);
				pending[s] = 1;
				end_posted = true;
				break;
			}
			vt_fill(d, h->len, x->seed, next);
			sg[1] = (struct ibv_sge){ .addr = (uintptr_t)d, .length = h->len, .lkey = x->mr->lkey };
			if (h->kind == K_SEND) {
				post_send(x, next << 8 | 1, IBV_WR_SEND, sg, 2, 0, 0);
				pending[s] = 1;
			} else {
				post_send(x, next << 8 | 2, IBV_WR_RDMA_WRITE, &sg[1], 1, rdata, peer->rkey);
				post_send(x, next << 8 | 1, IBV_WR_SEND, sg, 1, 0, 0);
				pending[s] = 2;
			}
			sent_bytes += h->len;
			next++;
		}
		int n = poll_some(x, wc, 16);

		for (int i = 0; i < n; i++) {
			if (wc[i].opcode & IBV_WC_RECV) {
				check_wc(&wc[i], "credit receive");
				uint64_t v = x->credits[wc[i].wr_id];

				if (v > credit)
					credit = v;
				post_recv(x, wc[i].wr_id, &x->credits[wc[i].wr_id], 8, NULL, 0);
				continue;
			}
			check_wc(&wc[i], (wc[i].wr_id & 0xff) == 2 ? "RDMA WRITE" : "SEND");
			uint64_t idx = wc[i].wr_id >> 8;
			uint32_t s = (uint32_t)(idx % x->nslot);

			if (!pending[s])
				vt_die("completion for chunk %" PRIu64 " that is not outstanding", idx);
			if (--pending[s] == 0) {
				if (idx != done)
					vt_die("chunk %" PRIu64 " completed before chunk %" PRIu64, idx, done);
				if (end_posted && idx == next)
					end_done = true;
				else
					done++;
			}
		}
	}
	double dt = vt_now() - t0;

	if (vt_recv_word(fd, &w, 120))
		vt_die("no verdict from the receiver");
	printf("cnuas-xfer: sent %" PRIu64 " chunks, %.1f MiB in %.2f s: %.1f MiB/s; receiver: %" PRIu64 " chunks, %" PRIu64 " bad\n",
	       next, sent_bytes / 1048576.0, dt, sent_bytes / 1048576.0 / dt, w & 0xffffffffu, w >> 32);
	free(pending);
	/* all our WRs are complete: the receiver may now take its QP down */
	vt_send_word(fd, 2);
	if ((w >> 32) || (w & 0xffffffffu) != (next & 0xffffffffu)) {
		vt_log("FAIL: the receiver saw %" PRIu64 " bad chunks of %" PRIu64, w >> 32, w & 0xffffffffu);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct xfer x = { .size = 256ull << 20, .chunk = 1 << 20, .nslot = 8, .seed = 1, .limit = 1200 };
	struct vt_peer me = { 0 }, peer;
	int opt, fd, r;

	vt_prog = "cnuas-xfer";
	vt_opts_default(&x.o);
	bool busy_poll = false;

	while ((opt = getopt(argc, argv, VT_COMMON_OPTS "s:c:w:S:D:T:Ph")) != -1) {
		if (vt_common_opt(&x.o, opt, optarg))
			continue;
		switch (opt) {
		case 's': x.size = vt_parse_u64(optarg, "size", 1 << 20) << 20; break;
		case 'c': x.chunk = (uint32_t)vt_parse_u64(optarg, "chunk", 64 * 1024) << 10; break;
		case 'w': x.nslot = (uint32_t)vt_parse_u64(optarg, "slots", 256); break;
		case 'S': x.seed = vt_parse_u64(optarg, "seed", UINT64_MAX); break;
		case 'D': x.seconds = (double)vt_parse_u64(optarg, "seconds", 86400); break;
		case 'T': x.limit = (double)vt_parse_u64(optarg, "time limit", 86400); break;
		case 'P': busy_poll = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		x.o.server = argv[optind++];
	if (optind < argc || !x.chunk || !x.nslot || !x.size) {
		usage(stderr);
		return 2;
	}
	x.deadline = vt_now() + x.limit;
	/* before the first line that says we run: a test may signal after it */
	struct sigaction sa = { .sa_handler = x.o.server ? ask_stop : SIG_IGN, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	vt_open(&x.c, &x.o);
	size_t data_len = (size_t)x.nslot * x.chunk;
	size_t mem_len = data_len + x.nslot * sizeof(struct hdr) + (x.nslot + 2) * 8;

	if (posix_memalign((void **)&x.mem, 4096, mem_len))
		vt_die("out of memory (%zu bytes)", mem_len);
	memset(x.mem, 0, mem_len);
	x.data = x.mem;
	x.hdrs = (struct hdr *)(x.mem + data_len);
	x.credits = (uint64_t *)(x.mem + data_len + x.nslot * sizeof(struct hdr));
	x.mr = ibv_reg_mr(x.c.pd, x.mem, mem_len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!x.mr)
		vt_die("ibv_reg_mr(%zu bytes): %s", mem_len, strerror(errno));
	if (!busy_poll) {
		x.channel = ibv_create_comp_channel(x.c.ctx);
		if (!x.channel)
			vt_die("ibv_create_comp_channel: %s", strerror(errno));
	}
	x.cq = ibv_create_cq(x.c.ctx, (int)(6 * x.nslot + 16), NULL, x.channel, 0);
	if (!x.cq)
		vt_die("ibv_create_cq: %s", strerror(errno));
	x.qp = vt_create_rc(&x.c, x.cq, x.cq, 2 * x.nslot + 4, 2);
	if (!x.qp)
		vt_die("ibv_create_qp: %s", strerror(errno));

	srand48((long)(getpid() ^ (long)(vt_now() * 1e6)));
	me.qpn = x.qp->qp_num;
	me.psn = (uint32_t)lrand48() & 0xffffff;
	me.rkey = x.mr->rkey;
	me.addr = (uintptr_t)x.data;
	me.mtu = x.o.mtu ? vt_mtu_enum(x.o.mtu) : x.c.port_attr.active_mtu;
	me.arg[0] = x.chunk;
	me.arg[1] = x.nslot;
	vt_peer_addr(&x.c, &me);

	fd = vt_tcp_open(&x.o, (int)x.limit);
	vt_send_peer(fd, &me);
	vt_recv_peer(fd, &peer, 60);
	if (peer.arg[0] != x.chunk || peer.arg[1] != x.nslot)
		vt_die("the peer uses chunk %" PRIu64 " and %" PRIu64 " slots, we %u and %u (use the same -c/-w)",
		       peer.arg[0], peer.arg[1], x.chunk, x.nslot);
	r = vt_connect_rc(&x.c, x.qp, &x.o, me.psn, &peer, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (r)
		vt_die("bringing the QP to RTS: %s", strerror(r));
	if (!x.o.server) {
		/* receiver: all slots waiting before the sender may start */
		for (uint32_t i = 0; i < x.nslot; i++)
			post_recv(&x, i, &x.hdrs[i], sizeof(struct hdr), x.data + (size_t)i * x.chunk, x.chunk);
	}
	vt_log("%s: local qpn 0x%06x psn 0x%06x, remote qpn 0x%06x psn 0x%06x, mtu %d, %u x %u KiB slots",
	       x.o.server ? "sender" : "receiver", me.qpn, me.psn, peer.qpn, peer.psn,
	       vt_mtu_bytes(peer.mtu < me.mtu ? peer.mtu : me.mtu), x.nslot, x.chunk >> 10);
	if (x.o.server) {
		/* sender: receive buffers for the credits */
		for (uint32_t i = 0; i < x.nslot + 2; i++)
			post_recv(&x, i, &x.credits[i], 8, NULL, 0);
	}
	/* both QPs at RTS (and the receive buffers posted) before any data */
	uint64_t w;

	vt_send_word(fd, 1);
	if (vt_recv_word(fd, &w, 60))
		vt_die("the peer did not get ready");
	r = x.o.server ? run_sender(&x, fd, &peer) : run_receiver(&x, fd, &peer);
	if (x.late_events)
		vt_log("%" PRIu64 " times completions were found after a second's wait without their CQ event",
		       x.late_events);
	close(fd);
	ibv_destroy_qp(x.qp);
	ibv_destroy_cq(x.cq);
	if (x.channel)
		ibv_destroy_comp_channel(x.channel);
	ibv_dereg_mr(x.mr);
	free(x.mem);
	vt_close(&x.c);
	return r;
}
