// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-gpu-rdma: GPU device memory (cnuasgpu BAR1) as RDMA memory, end to
 * end, through libcnuaspeermem (export + ibv_reg_dmabuf_mr in one call).
 *
 *   cnuas-gpu-rdma [opts]            guest 0 (server): owns the GPU memory
 *   cnuas-gpu-rdma [opts] SERVER     guest 1 (client): RDMA READ, WRITE,
 *                                    SEND, FETCH_AND_ADD/CMP_SWAP into it
 *   cnuas-gpu-rdma -b N [opts] [SERVER]  GPU->GPU bandwidth: the client
 *                                    WRITEs N times from its GPU memory
 *   cnuas-gpu-rdma -D FILE [opts] [SERVER]  device removal: the client
 *                                    READs once, waits until FILE exists in
 *                                    its guest (meanwhile the GPU of the
 *                                    server's guest is removed: device_del),
 *                                    then READs again, which must fail with
 *                                    an error completion, neither hang nor
 *                                    return data; the server (-D x) then
 *                                    deregisters (teardown completes)
 *   cnuas-gpu-rdma -l                lifetime checks on one node (loopback
 *                                    QP): FREE with an export is EBUSY;
 *                                    closing the GPU fd keeps the MR usable
 *                                    until dereg, then sysfs shows the
 *                                    memory reclaimed
 *
 * Options: the common ones of the verbs tools (-d -g -p -t ...), plus
 *   -s KIB   region size (default 256 KiB)   -G N   /dev/cnuasgpuN (0)
 *   -L       client: local buffers in GPU memory too (default: malloc)
 *   -H       pinned host memory of /dev/cnuasgpu_hostN instead of the GPU
 *            (N from -G): the same steps, the same export path. With -D
 *            the client's second READ must SUCCEED with the data: a GPU's
 *            removal must not touch the host exporter's live exports.
 *
 * Server GPU allocation, one MR over all of it:
 *   [0, S)      filled through mmap, the client READs and compares
 *   [S, 2S)     the client WRITEs a pattern, the server checks via mmap
 *   [2S, 3S)    receive buffer of the client's SEND
 *   [3S, 3S+8)  the atomic counter
 * The TCP side channel orders the steps: the client sends the step it
 * finished, the server checks its memory and answers 0 (ok) or 1.
 *
 * Exit 0 pass, 77 skip (no GPU / no device), 1 fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"
#include "cnuaspeermem.h"
#include "uapi/cnuasgpu.h"

#define ACCESS_ALL	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define ATOMIC_INIT	1000ull
#define TIMEOUT_S	120

enum step { STEP_READ = 1, STEP_WRITE, STEP_SEND, STEP_ATOMIC, STEP_BW, STEP_DONE };

struct gpu_mem {
	int fd;
	uint32_t handle;
	uint64_t size;
	uint8_t *map;
	struct cnuas_peermem_mr *pmr;
	struct ibv_mr *mr;
};

static struct vt_opts o;
static struct vt_ctx c;
static uint64_t S = 256 << 10;
static int gpu_index;
static int failures;
static const char *gone_file;	/* -D: the device removal check */
static bool host_mem;		/* -H: /dev/cnuasgpu_hostN */
static const char *mem_name = "GPU memory";
static const char *dev_name = "cnuasgpu";

#define FAIL(...) do { vt_log("FAIL: " __VA_ARGS__); failures++; } while (0)

static int open_gpu(bool must)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/dev/%s%d", dev_name, gpu_index);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && must) {
		printf("SKIP: %s: %s\n", path, strerror(errno));
		exit(77);
	}
	return fd;
}

static long long sysfs(const char *attr)
{
	char path[128], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/%s%d/%s", dev_name, gpu_index, attr);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f)) {
		FAIL("cannot read %s", path);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	return atoll(buf);
}

/* Allocate @size of GPU memory, map it, register all of it (iova = map). */
static void gpu_alloc_reg(struct gpu_mem *g, uint64_t size)
{
	struct cnuasgpu_alloc a = { .size = size, .align = 0 };
	int r;

	g->fd = open_gpu(true);
	if (ioctl(g->fd, CNUASGPU_IOC_ALLOC, &a))
		vt_die("CNUASGPU_IOC_ALLOC %" PRIu64 ": %s", size, strerror(errno));
	g->handle = a.handle;
	g->size = a.size;
	g->map = mmap(NULL, g->size, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, a.mmap_offset);
	if (g->map == MAP_FAILED)
		vt_die("mmap of %s: %s", mem_name, strerror(errno));
	r = cnuas_peermem_reg(g->fd, g->handle, 0, g->size, c.pd, (uintptr_t)g->map, ACCESS_ALL,
			      &g->pmr);
	if (r)
		vt_die("cnuas_peermem_reg: %s", cnuas_peermem_strerror(r));
	g->mr = cnuas_peermem_ibv_mr(g->pmr);
	vt_dbg("%s: %" PRIu64 " bytes at %p, lkey %#x rkey %#x", mem_name, g->size,
	       (void *)g->map, g->mr->lkey, g->mr->rkey);
}

static void gpu_free(struct gpu_mem *g)
{
	struct cnuasgpu_free f = { .handle = g->handle };
	int r = cnuas_peermem_dereg(g->pmr);

	if (r)
		FAIL("cnuas_peermem_dereg: %s", cnuas_peermem_strerror(r));
	munmap(g->map, g->size);
	/* After device removal FREE may fail: the memory goes with it. */
	if (ioctl(g->fd, CNUASGPU_IOC_FREE, &f) && !gone_file)
		FAIL("FREE after dereg: %s", strerror(errno));
	close(g->fd);
}

/* Copies out of GPU memory go through a bounce buffer (WC mapping). */
static bool check_pattern(const uint8_t *p, size_t len, uint64_t stream, const char *what)
{
	uint8_t *want = malloc(len), *got = malloc(len);
	bool ok;

	if (!want || !got)
		vt_die("out of memory");
	vt_fill(want, len, 1, stream);
	memcpy(got, p, len);
	ok = !memcmp(want, got, len);
	if (!ok) {
		size_t i = 0;

		while (i < len && want[i] == got[i])
			i++;
		FAIL("%s: first difference at byte %zu of %zu (got %#x, want %#x)", what, i, len,
		     got[i], want[i]);
	}
	free(want);
	free(got);
	return ok;
}

static int post_one(struct ibv_qp *qp, enum ibv_wr_opcode opc, void *laddr, uint32_t lkey,
		    uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t add, uint64_t swap)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = opc, .sg_list = &sge, .num_sge = 1, .opcode = opc,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	if (opc == IBV_WR_ATOMIC_FETCH_AND_ADD || opc == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
		wr.wr.atomic.swap = swap;
	} else if (opc != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

/* Post one WR and wait for its completion: 0 ok, else the WC status. */
static int do_one(struct ibv_qp *qp, struct ibv_cq *cq, enum ibv_wr_opcode opc, void *laddr,
		  uint32_t lkey, uint32_t len, uint64_t raddr, uint32_t rkey, uint64_t add,
		  uint64_t swap)
{
	struct ibv_wc wc;
	int r = post_one(qp, opc, laddr, lkey, len, raddr, rkey, add, swap);

	if (r)
		vt_die("ibv_post_send: %s", strerror(r));
	if (vt_poll_one(cq, &wc, TIMEOUT_S))
		vt_die("no completion within %d s", TIMEOUT_S);
	if (wc.status != IBV_WC_SUCCESS)
		vt_log("completion: %s (%d)", ibv_wc_status_str(wc.status), wc.status);
	return wc.status;
}

/* Client local memory: host (malloc) or GPU (-L). */
struct local_buf {
	uint8_t *p;
	struct ibv_mr *mr;
	struct gpu_mem g;
	bool gpu;
};

static void local_alloc(struct local_buf *b, uint64_t size, bool gpu)
{
	b->gpu = gpu;
	if (gpu) {
		gpu_alloc_reg(&b->g, size);
		b->p = b->g.map;
		b->mr = b->g.mr;
		return;
	}
	b->p = aligned_alloc(4096, size);
	if (!b->p)
		vt_die("out of memory");
	b->mr = ibv_reg_mr(c.pd, b->p, size, ACCESS_ALL);
	if (!b->mr)
		vt_die("ibv_reg_mr: %s", strerror(errno));
}

static void local_free(struct local_buf *b)
{
	if (b->gpu) {
		gpu_free(&b->g);
		return;
	}
	ibv_dereg_mr(b->mr);
	free(b->p);
}

/* The server side: owns the GPU memory, checks it after each step. */
static int run_server(void)
{
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct gpu_mem g;
	struct vt_peer me = { 0 }, peer;
	uint64_t step, val;
	int fd, r;

	gpu_alloc_reg(&g, 3 * S + 4096);
	vt_fill(g.map, S, 1, 0);	/* straight into BAR1 through mmap */
	memset(g.map + S, 0, 2 * S);
	val = ATOMIC_INIT;
	memcpy(g.map + 3 * S, &val, sizeof(val));

	cq = ibv_create_cq(c.ctx, 16, NULL, NULL, 0);
	qp = cq ? vt_create_rc(&c, cq, cq, 16, 1) : NULL;
	if (!qp)
		vt_die("CQ/QP: %s", strerror(errno));
	me.qpn = qp->qp_num;
	me.psn = 0x1234;
	me.mtu = c.port_attr.active_mtu;
	me.rkey = g.mr->rkey;
	me.addr = (uintptr_t)g.map;
	me.arg[0] = S;
	vt_peer_addr(&c, &me);

	fd = vt_tcp_open(&o, TIMEOUT_S);
	vt_send_peer(fd, &me);
	vt_recv_peer(fd, &peer, TIMEOUT_S);
	r = vt_connect_rc(&c, qp, &o, me.psn, &peer, ACCESS_ALL);
	if (r)
		vt_die("connect: %s", strerror(r));
	{
		/* The receive buffer of step 3 is GPU memory too. */
		struct ibv_sge sge = { .addr = (uintptr_t)g.map + 2 * S, .length = (uint32_t)S,
				       .lkey = g.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;

		r = ibv_post_recv(qp, &wr, &bad);
		if (r)
			vt_die("ibv_post_recv into GPU memory: %s", strerror(r));
	}
	vt_send_word(fd, 0);	/* ready */

	while (!vt_recv_word(fd, &step, TIMEOUT_S * 5)) {
		bool ok = true;

		switch (step) {
		case STEP_READ:
			/* The client compares; our memory must be intact. */
			ok = check_pattern(g.map, S, 0, "GPU memory after the READ");
			break;
		case STEP_WRITE:
			ok = check_pattern(g.map + S, S, 1, "RDMA WRITE into GPU memory");
			if (ok)
				vt_log("RDMA WRITE into %s: %" PRIu64 " bytes verified via mmap",
				       mem_name, S);
			break;
		case STEP_SEND: {
			struct ibv_wc wc;

			ok = false;
			if (vt_poll_one(cq, &wc, TIMEOUT_S))
				FAIL("no receive completion for the SEND");
			else if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
				 wc.byte_len != S)
				FAIL("receive: %s, opcode %d, %u bytes", ibv_wc_status_str(wc.status),
				     wc.opcode, wc.byte_len);
			else
				ok = check_pattern(g.map + 2 * S, S, 2, "SEND into GPU memory");
			if (ok)
				vt_log("SEND into a %s receive buffer: %" PRIu64 " bytes verified",
				       mem_name, S);
			break;
		}
		case STEP_ATOMIC:
			memcpy(&val, g.map + 3 * S, sizeof(val));
			/* FETCH_AND_ADD 5 three times, then CMP_SWAP 1015 -> 77 */
			ok = val == 77;
			if (ok)
				vt_log("atomics on %s: counter %" PRIu64 " as expected", mem_name,
				       val);
			else
				FAIL("atomic counter in %s is %" PRIu64 ", want 77", mem_name, val);
			break;
		case STEP_BW:
			ok = check_pattern(g.map + S, S, 3, "GPU->GPU RDMA WRITE");
			break;
		case STEP_DONE:
			goto done;
		default:
			FAIL("unknown step %" PRIu64, step);
			ok = false;
		}
		vt_send_word(fd, ok ? 0 : 1);
	}
	FAIL("the client went away");
done:
	close(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	gpu_free(&g);
	return failures ? 1 : 0;
}

static int server_says(int fd, enum step step, const char *what)
{
	uint64_t w = 1;

	vt_send_word(fd, step);
	if (vt_recv_word(fd, &w, TIMEOUT_S) || w) {
		FAIL("%s: the server saw wrong data in its GPU memory", what);
		return 1;
	}
	return 0;
}

/*
 * -D: one READ that works, then (once the server's GPU is gone) one that
 * must end in an error completion: no hang, no data from a dead BAR.
 */
static int run_gone(struct ibv_qp *qp, struct ibv_cq *cq, struct local_buf *b, uint64_t raddr,
		    uint32_t rkey)
{
	double end;
	int st;

	st = do_one(qp, cq, IBV_WR_RDMA_READ, b->p, b->mr->lkey, (uint32_t)S, raddr, rkey, 0, 0);
	if (st || !check_pattern(b->p, S, 0, "READ before the removal")) {
		FAIL("READ before the device removal: %s", ibv_wc_status_str(st));
		return 1;
	}
	vt_log("READ before removal ok; waiting for %s (device_del of the server's GPU)",
	       gone_file);
	end = vt_now() + 600;
	while (access(gone_file, F_OK) && vt_now() < end)
		usleep(200000);
	if (access(gone_file, F_OK)) {
		FAIL("%s did not appear within 600 s", gone_file);
		return 1;
	}
	memset(b->p, 0x5a, S);
	st = do_one(qp, cq, IBV_WR_RDMA_READ, b->p, b->mr->lkey, (uint32_t)S, raddr, rkey, 0, 0);
	if (host_mem) {
		/* Host memory: the GPU's removal must not affect it. */
		if (st) {
			FAIL("READ of host memory after a GPU's removal: %s", ibv_wc_status_str(st));
			return 1;
		}
		if (!check_pattern(b->p, S, 0, "READ of host memory after a GPU's removal"))
			return 1;
		vt_log("READ of host memory after a GPU's removal: %" PRIu64 " bytes match", S);
		return 0;
	}
	if (st == IBV_WC_SUCCESS) {
		uint8_t *want = malloc(S);
		bool old;

		if (!want)
			vt_die("out of memory");
		vt_fill(want, S, 1, 0);
		old = !memcmp(want, b->p, S);
		free(want);
		/* The exporter did not revoke the MR's mapping at removal. */
		FAIL("READ of a removed GPU's memory succeeded (%s): the MR was not revoked",
		     old ? "with the old data" : "with other data, e.g. a dead BAR's");
		return 1;
	}
	vt_log("READ after the GPU's removal: %s (a clean error completion)",
	       ibv_wc_status_str(st));
	return 0;
}

static int run_client(bool local_gpu, unsigned int bw_iters)
{
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct local_buf b;
	struct vt_peer me = { 0 }, peer;
	uint64_t w, ctr, raddr;
	uint32_t rkey;
	double t0, dt;
	int fd, r, st;

	local_alloc(&b, S + 4096, local_gpu);
	cq = ibv_create_cq(c.ctx, 16, NULL, NULL, 0);
	qp = cq ? vt_create_rc(&c, cq, cq, 16, 1) : NULL;
	if (!qp)
		vt_die("CQ/QP: %s", strerror(errno));
	me.qpn = qp->qp_num;
	me.psn = 0x4321;
	me.mtu = c.port_attr.active_mtu;
	vt_peer_addr(&c, &me);

	fd = vt_tcp_open(&o, TIMEOUT_S);
	vt_recv_peer(fd, &peer, TIMEOUT_S);
	vt_send_peer(fd, &me);
	if (peer.arg[0] != S)
		vt_die("the server uses -s %" PRIu64 " KiB, we %" PRIu64, peer.arg[0] >> 10, S >> 10);
	r = vt_connect_rc(&c, qp, &o, me.psn, &peer, ACCESS_ALL);
	if (r)
		vt_die("connect: %s", strerror(r));
	if (vt_recv_word(fd, &w, TIMEOUT_S))
		vt_die("the server is not ready");
	raddr = peer.addr;
	rkey = peer.rkey;

	if (gone_file) {
		run_gone(qp, cq, &b, raddr, rkey);
		goto done;
	}
	if (bw_iters) {
		/* GPU->GPU: our GPU memory, filled via mmap, WRITTEN to theirs. */
		vt_fill(b.p, S, 1, 3);
		t0 = vt_now();
		for (unsigned int i = 0; i < bw_iters; i++) {
			st = do_one(qp, cq, IBV_WR_RDMA_WRITE, b.p, b.mr->lkey, (uint32_t)S,
				    raddr + S, rkey, 0, 0);
			if (st) {
				FAIL("GPU->GPU RDMA WRITE %u: %s", i, ibv_wc_status_str(st));
				break;
			}
		}
		dt = vt_now() - t0;
		if (!failures)
			printf("gpu-bw: %s->%s RDMA WRITE %u x %" PRIu64 " KiB: %.2f MiB/s\n",
			       local_gpu ? (host_mem ? "pinned host" : "GPU") : "malloc",
			       host_mem ? "pinned host" : "GPU", bw_iters, S >> 10,
			       (double)bw_iters * (double)S / (1 << 20) / (dt > 0 ? dt : 1e-9));
		if (!failures)
			server_says(fd, STEP_BW, "GPU->GPU RDMA WRITE");
		goto done;
	}

	/* 1. RDMA READ of the server's GPU memory. */
	memset(b.p, 0, S);
	st = do_one(qp, cq, IBV_WR_RDMA_READ, b.p, b.mr->lkey, (uint32_t)S, raddr, rkey, 0, 0);
	if (st)
		FAIL("RDMA READ of %s: %s", mem_name, ibv_wc_status_str(st));
	else if (check_pattern(b.p, S, 0, "RDMA READ of the server's memory"))
		vt_log("RDMA READ of %s: %" PRIu64 " bytes match", mem_name, S);
	if (server_says(fd, STEP_READ, "READ"))
		goto done;

	/* 2. RDMA WRITE of a pattern into it. */
	vt_fill(b.p, S, 1, 1);
	st = do_one(qp, cq, IBV_WR_RDMA_WRITE, b.p, b.mr->lkey, (uint32_t)S, raddr + S, rkey, 0, 0);
	if (st)
		FAIL("RDMA WRITE into %s: %s", mem_name, ibv_wc_status_str(st));
	if (st || server_says(fd, STEP_WRITE, "WRITE"))
		goto done;

	/* 3. SEND into the server's GPU-memory receive buffer. */
	vt_fill(b.p, S, 1, 2);
	st = do_one(qp, cq, IBV_WR_SEND, b.p, b.mr->lkey, (uint32_t)S, 0, 0, 0, 0);
	if (st)
		FAIL("SEND: %s", ibv_wc_status_str(st));
	if (st || server_says(fd, STEP_SEND, "SEND"))
		goto done;

	/* 4. FETCH_AND_ADD x3 (1000, 1005, 1010), CMP_SWAP 1015 -> 77. */
	for (int i = 0; i < 4 && !failures; i++) {
		bool cas = i == 3;
		uint64_t want = ATOMIC_INIT + 5 * (uint64_t)i;

		memset(b.p, 0xee, 8);
		st = do_one(qp, cq, cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD,
			    b.p, b.mr->lkey, 8, raddr + 3 * S, rkey, cas ? want : 5, 77);
		memcpy(&ctr, b.p, 8);
		if (st)
			FAIL("%s on %s: %s", cas ? "CMP_SWAP" : "FETCH_AND_ADD", mem_name,
			     ibv_wc_status_str(st));
		else if (ctr != want)
			FAIL("%s on %s returned %" PRIu64 ", want %" PRIu64,
			     cas ? "CMP_SWAP" : "FETCH_AND_ADD", mem_name, ctr, want);
	}
	if (!failures && !server_says(fd, STEP_ATOMIC, "atomics"))
		vt_log("FETCH_AND_ADD x3 + CMP_SWAP on %s: ok", mem_name);
done:
	vt_send_word(fd, STEP_DONE);
	close(fd);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	local_free(&b);
	return failures ? 1 : 0;
}

/*
 * One node: FREE with a live export is EBUSY; with the GPU fd closed the
 * MR still works (loopback RC QP: WRITE into it, READ back) until dereg,
 * after which sysfs shows the export and the memory gone.
 */
static int run_lifetime(void)
{
	struct cnuasgpu_free f;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct gpu_mem g;
	struct vt_peer self = { 0 };
	long long exports0, free0;
	uint8_t *h;
	struct ibv_mr *hmr;
	int st;

	exports0 = sysfs("exports");
	free0 = sysfs("mem_free");
	gpu_alloc_reg(&g, S);
	if (sysfs("exports") != exports0 + 1)
		FAIL("sysfs exports %lld, want %lld", sysfs("exports"), exports0 + 1);
	f.handle = g.handle;
	f.reserved = 0;
	if (!ioctl(g.fd, CNUASGPU_IOC_FREE, &f) || errno != EBUSY)
		FAIL("FREE with an open export: %s, want EBUSY", strerror(errno));
	else
		vt_log("FREE with an open export: EBUSY");
	vt_fill(g.map, S, 1, 4);

	/* Close the GPU fd (and the mapping): the export and MR live on. */
	munmap(g.map, S);
	close(g.fd);
	if (sysfs("exports") != exports0 + 1)
		FAIL("after close: exports %lld, want %lld", sysfs("exports"), exports0 + 1);

	h = aligned_alloc(4096, 2 * S);
	hmr = h ? ibv_reg_mr(c.pd, h, 2 * S, ACCESS_ALL) : NULL;
	cq = ibv_create_cq(c.ctx, 16, NULL, NULL, 0);
	qp = cq ? vt_create_rc(&c, cq, cq, 16, 1) : NULL;
	if (!hmr || !qp)
		vt_die("MR/CQ/QP: %s", strerror(errno));
	self.qpn = qp->qp_num;
	self.psn = 0x777;
	self.mtu = c.port_attr.active_mtu;
	vt_peer_addr(&c, &self);
	if (vt_connect_rc(&c, qp, &o, self.psn, &self, ACCESS_ALL))
		vt_die("loopback connect failed");
	/* READ what we wrote through mmap before closing; WRITE; READ back. */
	st = do_one(qp, cq, IBV_WR_RDMA_READ, h, hmr->lkey, (uint32_t)S, (uintptr_t)g.map,
		    g.mr->rkey, 0, 0);
	if (st)
		FAIL("READ of the MR after closing the GPU fd: %s", ibv_wc_status_str(st));
	else
		check_pattern(h, S, 4, "READ after closing the GPU fd");
	vt_fill(h + S, S, 1, 5);
	st = do_one(qp, cq, IBV_WR_RDMA_WRITE, h + S, hmr->lkey, (uint32_t)S, (uintptr_t)g.map,
		    g.mr->rkey, 0, 0);
	if (!st) {
		memset(h, 0, S);
		st = do_one(qp, cq, IBV_WR_RDMA_READ, h, hmr->lkey, (uint32_t)S, (uintptr_t)g.map,
			    g.mr->rkey, 0, 0);
	}
	if (st)
		FAIL("WRITE/READ of the MR after closing the GPU fd: %s", ibv_wc_status_str(st));
	else if (check_pattern(h, S, 5, "WRITE+READ after closing the GPU fd"))
		vt_log("MR usable after the GPU fd is closed (loopback WRITE + READ)");
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);

	st = cnuas_peermem_dereg(g.pmr);
	if (st)
		FAIL("dereg: %s", cnuas_peermem_strerror(st));
	if (sysfs("exports") != exports0)
		FAIL("after dereg: exports %lld, want %lld", sysfs("exports"), exports0);
	else if (sysfs("mem_free") != free0)
		FAIL("after dereg: mem_free %lld, want %lld", sysfs("mem_free"), free0);
	else
		vt_log("after dereg: export closed, orphaned allocation reclaimed (mem_free %lld)",
		       free0);
	ibv_dereg_mr(hmr);
	free(h);
	return failures ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: cnuas-gpu-rdma [-s KIB] [-G N] [-H] [-L] [-b N] [-l] [-D FILE] [common] [SERVER]\n");
	vt_usage_common(f);
}

int main(int argc, char **argv)
{
	unsigned int bw = 0;
	bool local_gpu = false, lifetime = false;
	int opt, r;

	vt_prog = "cnuas-gpu-rdma";
	vt_opts_default(&o);
	while ((opt = getopt(argc, argv, VT_COMMON_OPTS "s:G:HLb:lD:h")) != -1) {
		if (vt_common_opt(&o, opt, optarg))
			continue;
		switch (opt) {
		case 's': S = vt_parse_u64(optarg, "size", 1 << 20) << 10; break;
		case 'G': gpu_index = (int)vt_parse_u64(optarg, "GPU index", 255); break;
		case 'H': host_mem = true; break;
		case 'L': local_gpu = true; break;
		case 'b': bw = (unsigned int)vt_parse_u64(optarg, "iterations", 1 << 20); break;
		case 'l': lifetime = true; break;
		case 'D': gone_file = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc)
		o.server = argv[optind++];
	if (!S || S % 4096)
		vt_die("-s: a positive multiple of 4 KiB");
	if (host_mem) {
		mem_name = "pinned host memory";
		dev_name = "cnuasgpu_host";
	}
	if (!cnuas_peermem_supported()) {
		printf("SKIP: this libibverbs has no ibv_reg_dmabuf_mr()\n");
		return 77;
	}
	/* The GPU owner (and -L clients) need the device: SKIP, not FAIL. */
	if (bw)
		local_gpu = true;
	if (!o.server || local_gpu || lifetime)
		close(open_gpu(true));
	vt_open(&c, &o);
	if (lifetime)
		r = run_lifetime();
	else if (o.server)
		r = run_client(local_gpu, bw);
	else
		r = run_server();
	vt_close(&c);
	if (!r)
		vt_log("PASS");
	return r;
}
