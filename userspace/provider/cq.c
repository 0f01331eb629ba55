// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Completion queues: the kernel produces struct cnuas_cqe into the
 * mapped ring, poll_cq consumes them without a system call. Extended
 * polling (ibv_create_cq_ex) reads the same ring one CQE at a time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cnuas.h"
#include "cnuas-abi.h"

/* The ibv_wc fields the extended API can ask for. */
#define CNUAS_WC_EX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |   \
			   IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |  \
			   IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |        \
			   IBV_WC_EX_WITH_DLID_PATH_BITS)

static unsigned int cqe_wc_flags(const struct cnuas_cqe *cqe)
{
	unsigned int f = 0;

	if (cqe->wc_flags & CNUAS_CQE_GRH)
		f |= IBV_WC_GRH;
	if (cqe->wc_flags & CNUAS_CQE_WITH_IMM)
		f |= IBV_WC_WITH_IMM;
	if (cqe->wc_flags & CNUAS_CQE_WITH_INV)
		f |= IBV_WC_WITH_INV;
	return f;
}

/*
 * RoCE carries no LRH, so no SL arrives with a datagram. What a RoCEv2
 * UD completion must report instead (IBA Annex A17, A17.4.5.1) is which
 * network header the frame had, IPv4 or IPv6: only then can a consumer
 * read the 40-byte GRH area of the receive buffer, where an IPv4 header
 * fills the last 20 bytes and an IPv6 one all 40. struct ibv_wc has no
 * field for it; verbs consumers (UCX's UD transport, which drops every
 * datagram whose destination address is not one of the port's GIDs)
 * take it from sl as ConnectX HCAs report it there: bits 2:0 the L3
 * header (1 IPv6, 2 IPv4), bit 3 set for a UDP (RoCEv2) frame.
 */
static uint8_t cqe_sl(const struct cnuas_cqe *cqe)
{
	if (!(cqe->wc_flags & CNUAS_CQE_GRH))
		return cqe->sl;
	switch (cqe->network_hdr_type) {
	case CNUAS_NET_IPV4:
		return 0x8 | 0x2;
	case CNUAS_NET_IPV6:
		return 0x8 | 0x1;
	default:
		return cqe->sl;
	}
}

static void cqe_to_wc(const struct cnuas_cqe *cqe, struct ibv_wc *wc)
{
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = cqe->byte_len;
	wc->qp_num = cqe->qp_num;
	wc->src_qp = cqe->src_qp;
	wc->wc_flags = cqe_wc_flags(cqe);
	if (cqe->wc_flags & CNUAS_CQE_WITH_INV)
		wc->invalidated_rkey = cqe->ex;
	else
		wc->imm_data = cqe->ex;
	wc->pkey_index = cqe->pkey_index;
	wc->slid = cqe->slid;
	wc->sl = cqe_sl(cqe);
	wc->dlid_path_bits = cqe->dlid_path_bits;
}

int cnuas_poll_cq(struct ibv_cq *ibcq, int num, struct ibv_wc *wc)
{
	struct cnuas_cq *cq = to_ccq(ibcq);
	struct cnuas_ring *r = &cq->q.ring;
	uint32_t avail;
	int n;

	if (num <= 0)
		return 0;
	pthread_spin_lock(&cq->q.lock);
	avail = cnuas_ring_avail(r);
	if (avail > (uint32_t)num)
		avail = num;
	for (n = 0; n < (int)avail; n++)
		cqe_to_wc(cnuas_ring_slot(r, r->index + n), &wc[n]);
	if (n)
		cnuas_ring_consume(r, n);
	pthread_spin_unlock(&cq->q.lock);
	if (!n)
		cnuas_rx_poll(to_cctx(ibcq->context));
	return n;
}

int cnuas_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ibv_cmd_req_notify_cq(ibcq, solicited_only);
}

/*
 * The kernel moves the CQ to a new ring holding the unpolled CQEs from
 * index 0; our lock keeps every poller out until the new ring is ours.
 */
int cnuas_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct cnuas_cq *cq = to_ccq(ibcq);
	struct cnuas_cmd_resize_cq_resp resp = {};
	struct cnuas_cmd_resize_cq cmd;
	struct cnuas_queue old;
	int ret;

	pthread_spin_lock(&cq->q.lock);
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		pthread_spin_unlock(&cq->q.lock);
		return ret;
	}
	ret = cnuas_queue_swap(ibcq->context, &cq->q, &resp.drv_payload.cq,
			       sizeof(struct cnuas_cqe), 0, &old, "resize_cq");
	pthread_spin_unlock(&cq->q.lock);
	if (ret)
		return ret;
	munmap(old.map, old.map_size);
	return 0;
}

/*
 * A QP moved to RESET leaves no completion behind: its CQEs not polled
 * yet (the flush completions of its last trip through ERR, say) are taken
 * out of the CQ, as the mlx4/mlx5 HCAs do, so that a QP brought back to
 * RTS does not hand its old completions to the next poll. The kernel only
 * writes at prod and beyond while we hold cons: the CQEs we keep slide
 * toward prod over the ones we drop, then cons passes the freed slots.
 */
void cnuas_cq_clean(struct ibv_cq *ibcq, uint32_t qpn)
{
	struct cnuas_cq *cq = to_ccq(ibcq);
	struct cnuas_ring *r = &cq->q.ring;
	uint32_t avail, i, dropped = 0;
	struct cnuas_cqe *cqe;

	pthread_spin_lock(&cq->q.lock);
	avail = cnuas_ring_avail(r);
	for (i = avail; i-- > 0;) {
		cqe = cnuas_ring_slot(r, r->index + i);
		if (cqe->qp_num == qpn)
			dropped++;
		else if (dropped)
			memcpy(cnuas_ring_slot(r, r->index + i + dropped), cqe,
			       sizeof(*cqe));
	}
	if (dropped)
		cnuas_ring_consume(r, dropped);
	pthread_spin_unlock(&cq->q.lock);
}

/* ---- extended polling: the CQ lock is held from start to end ---- */

static void load_cur(struct cnuas_cq *cq)
{
	struct cnuas_ring *r = &cq->q.ring;

	cq->cur = cnuas_ring_slot(r, r->index);
	cq->vcq.cq_ex.wr_id = cq->cur->wr_id;
	cq->vcq.cq_ex.status = cq->cur->status;
}

static int cq_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct cnuas_cq *cq = ex_to_ccq(ibcq);

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->q.lock);
	if (!cnuas_ring_avail(&cq->q.ring)) {
		cq->cur = NULL;
		pthread_spin_unlock(&cq->q.lock);
		cnuas_rx_poll(to_cctx(ibcq->context));
		return ENOENT;
	}
	load_cur(cq);
	return 0;
}

static int cq_next_poll(struct ibv_cq_ex *ibcq)
{
	struct cnuas_cq *cq = ex_to_ccq(ibcq);

	cnuas_ring_consume(&cq->q.ring, 1);
	if (!cnuas_ring_avail(&cq->q.ring)) {
		cq->cur = NULL;
		return ENOENT;
	}
	load_cur(cq);
	return 0;
}

static void cq_end_poll(struct ibv_cq_ex *ibcq)
{
	struct cnuas_cq *cq = ex_to_ccq(ibcq);

	if (cq->cur)
		cnuas_ring_consume(&cq->q.ring, 1);
	cq->cur = NULL;
	pthread_spin_unlock(&cq->q.lock);
}

static enum ibv_wc_opcode cq_read_opcode(struct ibv_cq_ex *ibcq)
{
	return ex_to_ccq(ibcq)->cur->opcode;
}

static uint32_t cq_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	return ex_to_ccq(ibcq)->cur->vendor_err;
}

static uint32_t cq_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return ex_to_ccq(ibcq)->cur->byte_len;
}

static __be32 cq_read_imm_data(struct ibv_cq_ex *ibcq)
{
	/* Also the invalidated rkey (ibv_wc_read_invalidated_rkey). */
	return ex_to_ccq(ibcq)->cur->ex;
}

static uint32_t cq_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return ex_to_ccq(ibcq)->cur->qp_num;
}

static uint32_t cq_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return ex_to_ccq(ibcq)->cur->src_qp;
}

static unsigned int cq_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return cqe_wc_flags(ex_to_ccq(ibcq)->cur);
}

static uint32_t cq_read_slid(struct ibv_cq_ex *ibcq)
{
	return ex_to_ccq(ibcq)->cur->slid;
}

static uint8_t cq_read_sl(struct ibv_cq_ex *ibcq)
{
	return cqe_sl(ex_to_ccq(ibcq)->cur);
}

static uint8_t cq_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	return ex_to_ccq(ibcq)->cur->dlid_path_bits;
}

static void set_ex_ops(struct cnuas_cq *cq)
{
	struct ibv_cq_ex *ex = &cq->vcq.cq_ex;

	ex->start_poll = cq_start_poll;
	ex->next_poll = cq_next_poll;
	ex->end_poll = cq_end_poll;
	ex->read_opcode = cq_read_opcode;
	ex->read_vendor_err = cq_read_vendor_err;
	ex->read_byte_len = cq_read_byte_len;
	ex->read_imm_data = cq_read_imm_data;
	ex->read_qp_num = cq_read_qp_num;
	ex->read_src_qp = cq_read_src_qp;
	ex->read_wc_flags = cq_read_wc_flags;
	ex->read_slid = cq_read_slid;
	ex->read_sl = cq_read_sl;
	ex->read_dlid_path_bits = cq_read_dlid_path_bits;
}

/* ---- create / destroy ---- */

static int map_cq(struct ibv_context *ibctx, struct cnuas_cq *cq,
		  const struct cnuas_create_cq_resp *drv)
{
	return cnuas_queue_map(ibctx, &cq->q, &drv->cq,
			       sizeof(struct cnuas_cqe), 0);
}

struct ibv_cq *cnuas_create_cq(struct ibv_context *ibctx, int cqe,
			       struct ibv_comp_channel *channel,
			       int comp_vector)
{
	struct cnuas_cmd_create_cq cmd;
	struct cnuas_cmd_create_cq_resp resp = {};
	struct cnuas_cq *cq;
	int ret;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	ret = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector,
				&cq->vcq.cq, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = map_cq(ibctx, cq, &resp.drv_payload);
	if (ret)
		goto err_destroy;
	return &cq->vcq.cq;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq_ex *cnuas_create_cq_ex(struct ibv_context *ibctx,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct cnuas_cmd_create_cq_ex cmd;
	struct cnuas_cmd_create_cq_ex_resp resp = {};
	struct ibv_cq_init_attr_ex kattr;
	struct cnuas_cq *cq;
	int ret;

	if (!check_comp_mask(attr->comp_mask, IBV_CQ_INIT_ATTR_MASK_FLAGS |
			     IBV_CQ_INIT_ATTR_MASK_PD) ||
	    !check_comp_mask(attr->wc_flags, CNUAS_WC_EX_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     !check_comp_mask(attr->flags,
			      IBV_CREATE_CQ_ATTR_SINGLE_THREADED))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* The CQ's parent domain must be one (its allocators go unused). */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain ||
	     !to_cpd(attr->parent_domain)->protection)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return NULL;
	/* The kernel has no use for the parent domain. */
	kattr = *attr;
	kattr.comp_mask &= ~IBV_CQ_INIT_ATTR_MASK_PD;
	ret = ibv_cmd_create_cq_ex(ibctx, &kattr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp),
				   0);
	if (ret)
		goto err_free;
	ret = map_cq(ibctx, cq, &resp.drv_payload);
	if (ret)
		goto err_destroy;
	set_ex_ops(cq);
	return &cq->vcq.cq_ex;

err_destroy:
	ibv_cmd_destroy_cq(&cq->vcq.cq);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

int cnuas_destroy_cq(struct ibv_cq *ibcq)
{
	struct cnuas_cq *cq = to_ccq(ibcq);
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;
	cnuas_queue_unmap(&cq->q);
	free(cq);
	return 0;
}
