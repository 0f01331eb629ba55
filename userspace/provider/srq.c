// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* Shared receive queues: one mapped ring the provider fills. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cnuas.h"
#include "cnuas-abi.h"

struct ibv_srq *cnuas_create_srq(struct ibv_pd *pd,
				 struct ibv_srq_init_attr *attr)
{
	struct cnuas_cmd_create_srq cmd;
	struct cnuas_cmd_create_srq_resp resp = {};
	struct cnuas_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;
	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd.ibv_cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = cnuas_queue_map(pd->context, &srq->q, &resp.drv_payload.srq,
			      sizeof(struct cnuas_recv_wqe), 1);
	if (ret)
		goto err_destroy;
	srq->q.max_sge = attr->attr.max_sge;
	srq->srq_num = resp.drv_payload.srq_num;
	return &srq->vsrq.srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

/*
 * IB_SRQ_MAX_WR moves the SRQ to a new ring the kernel describes at the
 * address we give it; our lock keeps every poster out until it is ours.
 */
int cnuas_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		     int mask)
{
	struct cnuas_srq *srq = to_csrq(ibsrq);
	struct cnuas_queue_info info = {};
	struct cnuas_cmd_modify_srq cmd = {};
	struct cnuas_queue old;
	int ret;

	if (!(mask & IBV_SRQ_MAX_WR))
		return ibv_cmd_modify_srq(ibsrq, attr, mask, &cmd.ibv_cmd,
					  sizeof(cmd));
	cmd.ring_info_addr = (uintptr_t)&info;
	pthread_spin_lock(&srq->q.lock);
	ret = ibv_cmd_modify_srq(ibsrq, attr, mask, &cmd.ibv_cmd, sizeof(cmd));
	if (ret) {
		pthread_spin_unlock(&srq->q.lock);
		return ret;
	}
	ret = cnuas_queue_swap(ibsrq->context, &srq->q, &info,
			       sizeof(struct cnuas_recv_wqe), 1, &old, "modify_srq");
	pthread_spin_unlock(&srq->q.lock);
	if (ret)
		return ret;
	munmap(old.map, old.map_size);
	return 0;
}

int cnuas_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int cnuas_destroy_srq(struct ibv_srq *ibsrq)
{
	struct cnuas_srq *srq = to_csrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	cnuas_queue_unmap(&srq->q);
	free(srq);
	return 0;
}
