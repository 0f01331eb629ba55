// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Host unit test of the provider's ring logic (ring.h) and of the work
 * request to WQE conversion (wqe.c): geometry checks, full/empty,
 * index wrap-around at 2^32, a hostile kernel index, ordering between
 * a producer and a consumer thread, the SQ doorbell hint, and the WQE
 * layouts.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "ring.h"
#include "wqe.h"

static int failures;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__,       \
				__LINE__, #cond);                            \
			failures++;                                          \
		}                                                            \
	} while (0)

static void *alloc_ring(uint32_t num, uint32_t stride)
{
	return calloc(1, CNUAS_QUEUE_HDR_SIZE + (size_t)num * stride);
}

static void test_geometry(void)
{
	struct cnuas_ring r;
	size_t size = CNUAS_QUEUE_HDR_SIZE + 8 * 64;
	void *buf = alloc_ring(8, 64);

	CHECK(sizeof(struct cnuas_queue_hdr) == CNUAS_QUEUE_HDR_SIZE);
	CHECK(cnuas_ring_init(&r, buf, size, 8, 64, 64, 1) == 0);
	CHECK(cnuas_ring_init(&r, buf, size, 0, 64, 64, 1) == -EINVAL);
	CHECK(cnuas_ring_init(&r, buf, size, 6, 64, 64, 1) == -EINVAL);
	CHECK(cnuas_ring_init(&r, buf, size, 8, 48, 16, 1) == -EINVAL);
	CHECK(cnuas_ring_init(&r, buf, size, 8, 32, 64, 1) == -EINVAL);
	CHECK(cnuas_ring_init(&r, buf, size - 1, 8, 64, 64, 1) == -EINVAL);
	CHECK(cnuas_ring_init(&r, buf, 64, 8, 64, 64, 1) == -EINVAL);
	CHECK(cnuas_ring_init(&r, NULL, size, 8, 64, 64, 1) == -EINVAL);
	/* num * stride must not overflow into a "fits". */
	CHECK(cnuas_ring_init(&r, buf, size, 1u << 31, 1u << 31, 16, 1) ==
	      -EINVAL);
	free(buf);
}

/* Producer side against a simulated kernel consumer, across 2^32. */
static void test_produce_wrap(void)
{
	struct cnuas_ring r;
	void *buf = alloc_ring(4, 16);
	struct cnuas_queue_hdr *hdr = buf;
	uint32_t start = UINT32_MAX - 5, i, kcons;

	hdr->prod = hdr->cons = start;
	CHECK(cnuas_ring_init(&r, buf, CNUAS_QUEUE_HDR_SIZE + 64, 4, 16, 16,
			      1) == 0);
	CHECK(r.index == start);
	kcons = start;
	for (i = 0; i < 40; i++) {
		uint32_t space = cnuas_ring_space(&r);

		if (!space) {
			/* Full: exactly num in flight; the kernel consumes. */
			CHECK(hdr->prod - hdr->cons == 4);
			CHECK(*(uint32_t *)((uint8_t *)buf +
					    CNUAS_QUEUE_HDR_SIZE +
					    (kcons & 3) * 16) == kcons);
			kcons++;
			__atomic_store_n(&hdr->cons, kcons, __ATOMIC_RELEASE);
			continue;
		}
		*(uint32_t *)cnuas_ring_slot(&r, r.index) = r.index;
		cnuas_ring_produce(&r, 1);
		CHECK(hdr->prod == r.index);
	}
	CHECK(r.index < 100);	/* wrapped past 2^32 */

	/* A kernel cons ahead of prod or far behind: no space, no trust. */
	hdr->cons = r.index + 1;
	CHECK(cnuas_ring_space(&r) == 0);
	hdr->cons = r.index - 5;
	CHECK(cnuas_ring_space(&r) == 0);
	hdr->cons = r.index;
	CHECK(cnuas_ring_space(&r) == 4);
	free(buf);
}

static void test_consume(void)
{
	struct cnuas_ring r;
	void *buf = alloc_ring(8, 64);
	struct cnuas_queue_hdr *hdr = buf;

	hdr->prod = hdr->cons = 0xfffffffe;
	CHECK(cnuas_ring_init(&r, buf, CNUAS_QUEUE_HDR_SIZE + 512, 8, 64, 64,
			      0) == 0);
	CHECK(cnuas_ring_avail(&r) == 0);
	hdr->prod += 3;
	CHECK(cnuas_ring_avail(&r) == 3);
	cnuas_ring_consume(&r, 2);
	CHECK(hdr->cons == 0);
	CHECK(cnuas_ring_avail(&r) == 1);
	CHECK(cnuas_ring_slot(&r, r.index) ==
	      (uint8_t *)buf + CNUAS_QUEUE_HDR_SIZE);
	hdr->prod = r.index + 9;	/* more than the ring holds */
	CHECK(cnuas_ring_avail(&r) == 0);
	hdr->prod = r.index - 1;	/* behind us */
	CHECK(cnuas_ring_avail(&r) == 0);
	free(buf);
}

/* Two threads: every value arrives once and in order. */
#define XFER 200000u
struct xfer {
	struct cnuas_ring prod, cons;
};

static void *producer(void *arg)
{
	struct xfer *x = arg;
	uint32_t v = 0;

	while (v < XFER) {
		uint32_t n = cnuas_ring_space(&x->prod), k;

		for (k = 0; k < n && v < XFER; k++, v++)
			*(uint64_t *)cnuas_ring_slot(&x->prod,
						     x->prod.index + k) =
				(uint64_t)v * 0x9e3779b97f4a7c15ull;
		if (k)
			cnuas_ring_produce(&x->prod, k);
		else
			sched_yield();
	}
	return NULL;
}

static void test_threads(void)
{
	struct xfer x;
	void *buf = alloc_ring(64, 16);
	size_t size = CNUAS_QUEUE_HDR_SIZE + 64 * 16;
	pthread_t t;
	uint32_t got = 0, bad = 0;

	CHECK(cnuas_ring_init(&x.prod, buf, size, 64, 16, 16, 1) == 0);
	CHECK(cnuas_ring_init(&x.cons, buf, size, 64, 16, 16, 0) == 0);
	CHECK(pthread_create(&t, NULL, producer, &x) == 0);
	while (got < XFER) {
		uint32_t n = cnuas_ring_avail(&x.cons), k;

		for (k = 0; k < n; k++, got++)
			if (*(uint64_t *)cnuas_ring_slot(&x.cons,
							 x.cons.index + k) !=
			    (uint64_t)got * 0x9e3779b97f4a7c15ull)
				bad++;
		if (n)
			cnuas_ring_consume(&x.cons, n);
		else
			sched_yield();
	}
	pthread_join(t, NULL);
	CHECK(bad == 0);
	CHECK(got == XFER);
	free(buf);
}

static void test_send_wqe(void)
{
	uint8_t slot[256], data[600];
	struct cnuas_send_wqe *w = (void *)slot;
	struct cnuas_sge *s = (void *)(w + 1);
	struct ibv_sge sg[3] = {
		{ .addr = 0x1000, .length = 100, .lkey = 7 },
		{ .addr = 0x2000, .length = 200, .lkey = 8 },
		{ .addr = 0x3000, .length = 300, .lkey = 9 },
	};
	struct ibv_send_wr wr = {
		.wr_id = 42, .sg_list = sg, .num_sge = 2,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED,
		.imm_data = htonl(0xdeadbeef),
	};
	struct cnuas_wqe_limits lim = {
		.qp_type = IBV_QPT_RC, .stride = 128, .max_sge = 4,
		.max_inline = 64,
	};

	memset(slot, 0xaa, sizeof(slot));
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	CHECK(w->wr_id == 42 && w->opcode == IBV_WR_SEND_WITH_IMM);
	CHECK(w->send_flags == (CNUAS_SEND_SIGNALED | CNUAS_SEND_SOLICITED));
	CHECK(w->ex == htonl(0xdeadbeef));
	CHECK(w->num_sge == 2 && w->inline_len == 0);
	CHECK(s[0].addr == 0x1000 && s[0].length == 100 && s[0].lkey == 7);
	CHECK(s[1].addr == 0x2000 && s[1].length == 200 && s[1].lkey == 8);
	CHECK(w->reserved == 0 && w->wr.rdma.remote_addr == 0);

	/* SGEs over max_sge, or beyond the slot. */
	wr.num_sge = 3;
	lim.max_sge = 2;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	lim.max_sge = 32;
	lim.stride = 64 + 2 * 16;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	wr.num_sge = -1;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);

	/* RDMA WRITE and READ, atomics. */
	lim.stride = 128;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = 0x123456789ull;
	wr.wr.rdma.rkey = 0x55;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	CHECK(w->wr.rdma.remote_addr == 0x123456789ull && w->wr.rdma.rkey == 0x55);
	CHECK(w->ex == 0);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.remote_addr = 0x8000;
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.swap = 2;
	wr.wr.atomic.rkey = 3;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	CHECK(w->wr.atomic.remote_addr == 0x8000 && w->wr.atomic.compare_add == 1 &&
	      w->wr.atomic.swap == 2 && w->wr.atomic.rkey == 3);
	wr.send_flags = IBV_SEND_INLINE;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);

	/*
	 * IBA 1.5: ATOMIC WRITE and FLUSH from the ibv_wr_* API only, RC
	 * only, no SGEs; operands in wr.atomic (wqe.h).
	 */
	wr.send_flags = 0;
	wr.num_sge = 0;
	wr.opcode = CNUAS_WR_ATOMIC_WRITE;
	wr.wr.atomic.remote_addr = 0x9000;
	wr.wr.atomic.compare_add = 0x1122334455667788ull;
	wr.wr.atomic.rkey = 7;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);	/* ibv_post_send */
	lim.wr_api = 1;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	CHECK(w->opcode == CNUAS_WR_ATOMIC_WRITE && w->num_sge == 0 &&
	      w->wr.atomic.remote_addr == 0x9000 && w->wr.atomic.rkey == 7 &&
	      w->wr.atomic.compare_add == 0x1122334455667788ull);
	wr.opcode = CNUAS_WR_FLUSH;
	wr.wr.atomic.compare_add = 12345678;
	wr.wr.atomic.swap = 1 | 1 << 8;	/* IBV_FLUSH_GLOBAL, IBV_FLUSH_MR */
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	CHECK(w->opcode == CNUAS_WR_FLUSH && w->wr.flush.remote_addr == 0x9000 &&
	      w->wr.flush.length == 12345678 && w->wr.flush.rkey == 7 &&
	      w->wr.flush.type == 1 && w->wr.flush.level == 1);
	wr.num_sge = 1;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	wr.num_sge = 0;
	lim.qp_type = IBV_QPT_UC;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	lim.qp_type = IBV_QPT_RC;
	lim.wr_api = 0;
	wr.num_sge = 1;

	wr.send_flags = 1u << 20;	/* unknown flag */
	wr.opcode = IBV_WR_SEND;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);

	/* Inline: bytes copied, bounded by max_inline and the slot. */
	for (unsigned int i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	sg[0].addr = (uintptr_t)data;
	sg[0].length = 30;
	sg[1].addr = (uintptr_t)(data + 30);
	sg[1].length = 34;
	wr.num_sge = 2;
	wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	CHECK(w->inline_len == 64 && w->num_sge == 0);
	CHECK(memcmp(w + 1, data, 64) == 0);
	sg[1].length = 35;	/* 65 > max_inline */
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	lim.max_inline = 512;
	lim.stride = 128;	/* 65 > 128 - 64 */
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	lim.stride = 256;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	CHECK(w->inline_len == 65 && memcmp(w + 1, data, 65) == 0);

	/* UD: SEND only, the AH number and remote QP/Q_Key. */
	lim.qp_type = IBV_QPT_UD;
	wr.send_flags = 0;
	wr.opcode = IBV_WR_RDMA_WRITE;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 9) == EINVAL);
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.remote_qpn = 0x123;
	wr.wr.ud.remote_qkey = 0x11111111;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 9) == 0);
	CHECK(w->wr.ud.ah_num == 9 && w->wr.ud.remote_qpn == 0x123 &&
	      w->wr.ud.remote_qkey == 0x11111111);
	/* UC: SEND and WRITE (with immediate); no READ, atomic, Invalidate. */
	lim.qp_type = IBV_QPT_UC;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.rdma.remote_addr = 0x5000;
	wr.wr.rdma.rkey = 0x77;
	wr.imm_data = 0x01020304;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	CHECK(w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && w->ex == 0x01020304 &&
	      w->wr.rdma.remote_addr == 0x5000 && w->wr.rdma.rkey == 0x77);
	wr.opcode = IBV_WR_SEND;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
	wr.opcode = IBV_WR_RDMA_READ;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	wr.opcode = IBV_WR_SEND_WITH_INV;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	/* Memory windows: RC and UC; BIND_MW names window, MR and range. */
	lim.qp_type = IBV_QPT_UD;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = 0x1234;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
	lim.qp_type = IBV_QPT_UC;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0 && w->ex == 0x1234);
	lim.qp_type = IBV_QPT_RC;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0 && w->ex == 0x1234 &&
	      w->num_sge == 0);
	{
		struct ibv_mw mw = { .rkey = 0x4501 };
		struct ibv_mr mr = { .lkey = 0x6702 };

		wr.opcode = IBV_WR_BIND_MW;
		wr.bind_mw.mw = NULL;
		CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
		wr.bind_mw.mw = &mw;
		wr.bind_mw.rkey = 0x4502;
		wr.bind_mw.bind_info.mr = NULL;
		wr.bind_mw.bind_info.addr = 0x10000;
		wr.bind_mw.bind_info.length = 4096;
		CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == EINVAL);
		wr.bind_mw.bind_info.mr = &mr;
		wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0);
		CHECK(w->wr.bind.mw_rkey == 0x4501 &&
		      w->wr.bind.new_rkey == 0x4502 &&
		      w->wr.bind.mr_lkey == 0x6702 &&
		      w->wr.bind.addr == 0x10000 &&
		      w->wr.bind.length == 4096 &&
		      w->wr.bind.access == IBV_ACCESS_REMOTE_WRITE &&
		      w->num_sge == 0);
		memset(&wr.bind_mw, 0, sizeof(wr.bind_mw));
	}
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = 0x777;
	CHECK(cnuas_wqe_send(slot, &lim, &wr, 0) == 0 && w->ex == 0x777);
}

static void test_recv_wqe(void)
{
	uint8_t slot[64];
	struct cnuas_recv_wqe *w = (void *)slot;
	struct cnuas_sge *s = (void *)(w + 1);
	struct ibv_sge sg[4] = { { .addr = 1, .length = 2, .lkey = 3 } };
	struct ibv_recv_wr wr = { .wr_id = 5, .sg_list = sg, .num_sge = 1 };
	struct cnuas_wqe_limits lim = { .stride = 64, .max_sge = 4 };

	CHECK(cnuas_wqe_recv(slot, &lim, &wr) == 0);
	CHECK(w->wr_id == 5 && w->num_sge == 1 && s[0].addr == 1 &&
	      s[0].length == 2 && s[0].lkey == 3);
	wr.num_sge = 4;		/* 16 + 4 * 16 > 64 */
	CHECK(cnuas_wqe_recv(slot, &lim, &wr) == EINVAL);
	wr.num_sge = 0;
	CHECK(cnuas_wqe_recv(slot, &lim, &wr) == 0 && w->num_sge == 0);
}

/*
 * The doorbell hint: a ping-pong producer (one value, then it waits for
 * it to be consumed) that rings only when cnuas_ring_needs_doorbell()
 * says so, against a "kernel" thread that follows uapi/cnuas-abi.h:
 * db_skip only while it will come back by itself; clear, barrier, look at
 * prod again before it sleeps. A value left behind stalls the producer.
 */
#define DB_XFER 20000u
#define DB_SPINS 20000000u
struct db_test {
	struct cnuas_ring prod;
	struct cnuas_queue_hdr *hdr;
	int rung;			/* the doorbell */
	unsigned int doorbells;
	int stuck;
};

static void *db_kernel(void *arg)
{
	struct db_test *x = arg;
	uint32_t cons = 0, seed = 1;
	unsigned int spins;

	while (cons != DB_XFER && !__atomic_load_n(&x->stuck, __ATOMIC_RELAXED)) {
		/* This run answers every doorbell rung so far. */
		__atomic_store_n(&x->rung, 0, __ATOMIC_RELAXED);
		cons = __atomic_load_n(&x->hdr->prod, __ATOMIC_ACQUIRE);
		__atomic_store_n(&x->hdr->cons, cons, __ATOMIC_RELEASE);
		seed = seed * 1103515245u + 12345u;
		if ((seed >> 16) % 4 == 0) {	/* "packets in flight" */
			__atomic_store_n(&x->hdr->db_skip, 1, __ATOMIC_RELAXED);
			sched_yield();		/* until "the ACK" */
			continue;
		}
		sched_yield();	/* the end of a run: db_skip may still be 1 */
		__atomic_store_n(&x->hdr->db_skip, 0, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&x->hdr->prod, __ATOMIC_ACQUIRE) != cons ||
		    cons == DB_XFER)
			continue;
		for (spins = 0; !__atomic_load_n(&x->rung, __ATOMIC_ACQUIRE);
		     spins++) {
			if (spins > DB_SPINS ||
			    __atomic_load_n(&x->stuck, __ATOMIC_RELAXED))
				return NULL;
			sched_yield();
		}
	}
	return NULL;
}

static void test_doorbell_hint(void)
{
	struct db_test x = { .rung = 0 };
	void *buf = alloc_ring(64, 16);
	unsigned int spins;
	pthread_t t;
	uint32_t v;

	x.hdr = buf;
	CHECK(cnuas_ring_init(&x.prod, buf, CNUAS_QUEUE_HDR_SIZE + 64 * 16,
			      64, 16, 16, 1) == 0);
	CHECK(cnuas_ring_needs_doorbell(&x.prod));
	CHECK(pthread_create(&t, NULL, db_kernel, &x) == 0);
	for (v = 0; v < DB_XFER && !x.stuck; v++) {
		cnuas_ring_produce(&x.prod, 1);
		if (cnuas_ring_needs_doorbell(&x.prod)) {
			x.doorbells++;
			__atomic_store_n(&x.rung, 1, __ATOMIC_RELEASE);
		}
		for (spins = 0; __atomic_load_n(&x.hdr->cons, __ATOMIC_ACQUIRE) !=
				x.prod.index; spins++) {
			if (spins > DB_SPINS) {
				__atomic_store_n(&x.stuck, 1, __ATOMIC_RELAXED);
				break;
			}
			sched_yield();
		}
	}
	pthread_join(t, NULL);
	CHECK(!x.stuck);
	CHECK(x.hdr->cons == DB_XFER);
	/* Both ways were taken. */
	CHECK(x.doorbells > 0 && x.doorbells < DB_XFER);
	free(buf);
}

int main(void)
{
	test_geometry();
	test_produce_wrap();
	test_consume();
	test_threads();
	test_doorbell_hint();
	test_send_wqe();
	test_recv_wqe();
	if (failures) {
		fprintf(stderr, "ring-test: %d failure(s)\n", failures);
		return 1;
	}
	printf("ring-test: all passed\n");
	return 0;
}
