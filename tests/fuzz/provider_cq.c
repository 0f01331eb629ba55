// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Fuzz target: the provider's CQ ring consumer (userspace/provider/cq.c,
 * included whole for its static extended-polling ops) against a kernel
 * that writes anything: ring geometry, producer index, CQE contents.
 * The ring is a heap buffer of exactly the mapped size, so a slot read
 * outside it is an ASan error.
 *
 * Input: num (log2, low 4 bits; bit 7: a raw, maybe bad, number instead),
 * stride (log2), bytes missing from the mapping, the starting index
 * (4 bytes); then operations (low 3 bits of a byte):
 *   0 the kernel writes a CQE (slot byte, then up to 64 bytes)
 *   1 the kernel stores prod (4 bytes)     2 the kernel adds to prod (1 byte)
 *   3 ibv_poll_cq (1 byte: the number of entries, minus 8)
 *   4 extended polling of up to (1 byte) entries   5 the kernel stores cons
 * Properties (abort on failure): poll_cq returns no more than asked and
 * than the ring holds, and moves cons by what it returned.
 */
#include "cq.c"

/* cq.c's create/resize/destroy paths need the kernel: never called here. */
int cnuas_queue_map(struct ibv_context *ibctx, struct cnuas_queue *q,
		    const struct cnuas_queue_info *info, uint32_t min_stride,
		    int producer)
{
	abort();
}

void cnuas_queue_unmap(struct cnuas_queue *q)
{
	abort();
}

int cnuas_queue_swap(struct ibv_context *ibctx, struct cnuas_queue *q,
		     const struct cnuas_queue_info *info, uint32_t min_stride,
		     int producer, struct cnuas_queue *old, const char *verb)
{
	abort();
}

static uint32_t rd32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static volatile uint64_t sink;

static void poll_ex(struct cnuas_cq *cq, unsigned int max)
{
	struct ibv_cq_ex *ex = &cq->vcq.cq_ex;
	struct ibv_poll_cq_attr attr = {};
	unsigned int n = 0;

	if (ex->start_poll(ex, &attr))
		return;
	do {
		sink += ex->wr_id + ex->status + ex->read_opcode(ex) +
			ex->read_vendor_err(ex) + ex->read_byte_len(ex) +
			ex->read_imm_data(ex) + ex->read_qp_num(ex) +
			ex->read_src_qp(ex) + ex->read_wc_flags(ex) +
			ex->read_slid(ex) + ex->read_sl(ex) +
			ex->read_dlid_path_bits(ex);
	} while (++n < max && !ex->next_poll(ex));
	ex->end_poll(ex);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t size)
{
	static const uint32_t poll_page;
	struct cnuas_context ctx = { .rx_poll = &poll_page };
	struct cnuas_cq cq = {};
	struct cnuas_ring *r = &cq.q.ring;
	struct cnuas_queue_hdr *hdr;
	uint32_t num, stride, start;
	size_t mapsize, off = 7;
	uint8_t *map;

	if (size < off)
		return 0;
	num = d[0] & 0x80 ? (uint32_t)d[0] << 24 | d[0] : 1u << (d[0] & 15);
	stride = 1u << (d[1] & 15);
	start = rd32(d + 3);
	mapsize = CNUAS_QUEUE_HDR_SIZE + (size_t)(num > 4096 ? 4096 : num) * stride;
	mapsize = mapsize > d[2] ? mapsize - d[2] : 0;
	if (mapsize > (1u << 20))
		return 0;
	map = calloc(1, mapsize > CNUAS_QUEUE_HDR_SIZE ? mapsize : CNUAS_QUEUE_HDR_SIZE);
	if (!map)
		abort();
	hdr = (struct cnuas_queue_hdr *)map;
	hdr->prod = hdr->cons = start;
	if (cnuas_ring_init(r, map, mapsize, num, stride, sizeof(struct cnuas_cqe), 0))
		goto out;
	if ((size_t)r->num * r->stride > mapsize - CNUAS_QUEUE_HDR_SIZE)
		abort();
	cq.vcq.cq.context = &ctx.vctx.context;
	pthread_spin_init(&cq.q.lock, PTHREAD_PROCESS_PRIVATE);
	set_ex_ops(&cq);

	while (off < size) {
		unsigned int op = d[off++] & 7;

		switch (op) {
		case 0: {
			size_t n;

			if (off >= size)
				goto done;
			n = size - off - 1 < sizeof(struct cnuas_cqe) ? size - off - 1 :
								      sizeof(struct cnuas_cqe);
			memcpy(cnuas_ring_slot(r, d[off]), d + off + 1, n);
			off += 1 + n;
			break;
		}
		case 1:
			if (off + 4 > size)
				goto done;
			hdr->prod = rd32(d + off);
			off += 4;
			break;
		case 2:
			if (off < size)
				hdr->prod += d[off++];
			break;
		case 3: {
			int want = off < size ? d[off++] - 8 : 1;
			struct ibv_wc *wc = malloc(sizeof(*wc) * (want > 0 ? want : 1));
			uint32_t before = r->index, avail = cnuas_ring_avail(r);
			int got;

			if (!wc)
				abort();
			got = cnuas_poll_cq(&cq.vcq.cq, want, wc);
			if (got < 0 || (want <= 0 && got) || (want > 0 && got > want) ||
			    (uint32_t)got > avail || (uint32_t)got > r->num ||
			    r->index - before != (uint32_t)got || (got && hdr->cons != r->index)) {
				fprintf(stderr, "poll_cq(%d) = %d: avail %u, index %u -> %u, cons %u\n",
					want, got, avail, before, r->index, hdr->cons);
				abort();
			}
			for (int i = 0; i < got; i++)
				sink += wc[i].wr_id + wc[i].byte_len + wc[i].wc_flags;
			free(wc);
			break;
		}
		case 4:
			poll_ex(&cq, off < size ? d[off++] : 1);
			break;
		case 5:
			if (off + 4 > size)
				goto done;
			hdr->cons = rd32(d + off);
			off += 4;
			break;
		default:
			break;
		}
	}
done:
	pthread_spin_destroy(&cq.q.lock);
out:
	free(map);
	return 0;
}
