// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Scenario tests of cnuas_ib's responder on the fuzz targets' fixture
 * (ib_sm_fixture.c): inputs a well-behaved requester could send, each
 * with the answer the IBA asks for, checked on the frames the responder
 * sent. The fuzz targets find crashes and broken invariants; these pin
 * down behaviour that is legal either way for an invariant but wrong for
 * the peer (a NAK a correct requester never earned).
 *   make -C tests/fuzz cases
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ib_sm_fixture.h"

#define FX_F_REQ	(FX_F_OUR_QPN | FX_F_REL_PSN)
#define NAK_INVALID	1

struct input {
	unsigned char d[4096];
	size_t n;
};

static void put(struct input *in, const void *p, size_t len)
{
	memcpy(in->d + in->n, p, len);
	in->n += len;
}

static void put_be(struct input *in, uint64_t v, int bytes)
{
	while (bytes--)
		in->d[in->n++] = v >> (8 * bytes);
}

/*
 * RC, path MTU 256, the QP grants remote READ and atomics and keeps
 * @depth READ/atomics (max_dest_rd_atomic), first PSN 0x100.
 */
static void config(struct input *in, int depth)
{
	const unsigned char c[FX_CONFIG_LEN] = {
		0x00, 0x06 | depth << 4, 0x01, 0x00, 0x0e, 0x00, 0x01, 0x00
	};

	in->n = 0;
	put(in, c, sizeof(c));
}

/* A request from the BTH on; @rel: its PSN against the expected one. */
static void request(struct input *in, int opcode, int rel, int flags,
		    const unsigned char *ext, size_t ext_len)
{
	const unsigned char bth[8] = { opcode, 0, 0xff, 0xff, 0, 0, 0, 0 };

	in->d[in->n++] = FX_CMD_FRAME | (FX_F_REQ | flags) << 3;
	put_be(in, 12 + ext_len, 2);
	put(in, bth, sizeof(bth));
	in->d[in->n++] = 0x80;		/* AckReq */
	put_be(in, (unsigned int)rel & 0xffffff, 3);
	put(in, ext, ext_len);
}

/* An RDMA READ of 256 bytes of the fixture's MR 0 (rkey 0x111). */
static void read_req(struct input *in, int rel, int flags)
{
	struct input e = { .n = 0 };

	put_be(&e, 0x10000, 8);
	put_be(&e, 0x111, 4);
	put_be(&e, 256, 4);
	request(in, 0x0c, rel, flags, e.d, e.n);
}

/* A FETCH_ADD of 1 on MR 0. */
static void fetch_add(struct input *in, int rel, int flags)
{
	struct input e = { .n = 0 };

	put_be(&e, 0x10000, 8);
	put_be(&e, 0x111, 4);
	put_be(&e, 1, 8);
	put_be(&e, 0, 8);
	request(in, 0x14, rel, flags, e.d, e.n);
}

static void work(struct input *in)
{
	in->d[in->n++] = FX_CMD_WORK;
}

/* Memory for frames runs out, or comes back (the fixture toggles it). */
static void no_mem(struct input *in)
{
	in->d[in->n++] = FX_CMD_TX | 1 << 3;
}

/* The device's TX ring fills and drains: the device wakes its QPs. */
static void tx_wake(struct input *in)
{
	in->d[in->n++] = FX_CMD_TX;
	in->d[in->n++] = FX_CMD_TX;
}

static int failures;

static const struct ib_sm_outcome *run(const char *name, struct input *in)
{
	const struct ib_sm_outcome *o;

	ib_sm_run(in->d, in->n, FX_RESP);
	o = ib_sm_outcome();
	printf("%s: %llu frames out, %u READ responses (last PSN 0x%x), %u atomic ACKs, NAK invalid %u, %s\n",
	       name, o->frames_out, o->read_resps, o->last_read_psn,
	       o->atomic_acks, o->naks[NAK_INVALID],
	       o->failed ? "QP in ERR" : "QP alive");
	return o;
}

static void expect(const char *name, int ok, const char *what)
{
	if (ok)
		return;
	printf("FAIL %s: %s\n", name, what);
	failures++;
}

int main(void)
{
	const struct ib_sm_outcome *o;
	struct input in;
	const char *name;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* in order with the fixture's stderr */

	/*
	 * Two READs answered; the requester timed out and sent both again,
	 * then the original answers reached it, it completed both and sent
	 * a third: the retransmissions and the third arrive in one batch,
	 * before the replays went out. The third is within the requester's
	 * limit: answered, no NAK (the replay of the oldest is stale).
	 */
	name = "read-replay-crossed";
	config(&in, 2);
	read_req(&in, 0, 0);
	read_req(&in, 0, 0);
	work(&in);
	read_req(&in, -2, FX_F_NO_BATCH_END);
	read_req(&in, -1, FX_F_NO_BATCH_END);
	read_req(&in, 0, 0);
	work(&in);
	o = run(name, &in);
	expect(name, !o->naks[NAK_INVALID] && !o->failed,
	       "the third READ was NAKed as more than 2 outstanding");
	expect(name, o->last_read_psn == 0x102, "the third READ was not answered");

	/*
	 * The same with atomics, whose replays wait only when no frame can
	 * be had for them: a queued ATOMIC ACK replay is stale the same way.
	 */
	name = "atomic-replay-crossed";
	config(&in, 2);
	fetch_add(&in, 0, 0);
	fetch_add(&in, 0, 0);
	work(&in);
	no_mem(&in);
	fetch_add(&in, -2, 0);
	fetch_add(&in, -1, 0);
	fetch_add(&in, 0, 0);
	no_mem(&in);
	tx_wake(&in);
	work(&in);
	o = run(name, &in);
	expect(name, !o->naks[NAK_INVALID] && !o->failed,
	       "the third atomic was NAKed as more than 2 outstanding");
	expect(name, o->atomic_acks == 4, "the third atomic was not answered (A, B, the replay of B, C)");

	/* A replay that is not overtaken is sent. */
	name = "read-replay";
	config(&in, 2);
	read_req(&in, 0, 0);
	work(&in);
	read_req(&in, -1, 0);
	work(&in);
	o = run(name, &in);
	expect(name, o->read_resps == 2 && o->last_read_psn == 0x100 &&
	       !o->failed, "the duplicate READ was not answered again");

	/*
	 * A requester over its limit: three READs before any answer went
	 * out, to a QP that keeps two. The third is NAKed invalid request
	 * (IBA 9.7.5.1.3 / C9-83) and the QP fails.
	 */
	name = "read-over-limit";
	config(&in, 2);
	read_req(&in, 0, FX_F_NO_BATCH_END);
	read_req(&in, 0, FX_F_NO_BATCH_END);
	read_req(&in, 0, 0);
	o = run(name, &in);
	expect(name, o->naks[NAK_INVALID] == 1 && o->failed,
	       "a third READ beyond max_dest_rd_atomic was not NAKed");

	/* Over the limit while the oldest is being replayed, not answered yet. */
	name = "read-over-limit-replaying";
	config(&in, 2);
	read_req(&in, 0, 0);
	work(&in);
	read_req(&in, -1, FX_F_NO_BATCH_END);
	read_req(&in, 0, FX_F_NO_BATCH_END);
	read_req(&in, 0, FX_F_NO_BATCH_END);
	read_req(&in, 0, 0);
	o = run(name, &in);
	expect(name, o->naks[NAK_INVALID] == 1 && o->failed,
	       "three new READs beside a replay were not NAKed");

	if (failures) {
		printf("%d scenario check(s) failed\n", failures);
		return 1;
	}
	printf("all scenarios pass\n");
	return 0;
}
