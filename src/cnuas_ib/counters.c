// SPDX-License-Identifier: GPL-2.0
/*
 * Hardware counters of the transport, per device, shown by
 * `rdma statistic` and in sysfs (hw_counters). Names follow rdma_rxe's
 * where the meaning is the same, so tools and tests read both alike.
 */
#include "cnuas_ib.h"

void cnuas_ib_stat_inc(struct cnuas_ib_dev *cdev, enum cnuas_ib_stat s)
{
	atomic64_inc(&cdev->tdev.stats[s]);
}

static const struct rdma_stat_desc cnuas_ib_stat_descs[CNUAS_STAT_NUM] = {
	[CNUAS_STAT_SENT_PKTS]		= { .name = "sent_pkts" },
	[CNUAS_STAT_RCVD_PKTS]		= { .name = "rcvd_pkts" },
	[CNUAS_STAT_DUP_REQ]		= { .name = "duplicate_request" },
	[CNUAS_STAT_OUT_OF_SEQ_REQ]	= { .name = "out_of_seq_request" },
	[CNUAS_STAT_RCVD_RNR_ERR]	= { .name = "rcvd_rnr_err" },
	[CNUAS_STAT_SEND_RNR_ERR]	= { .name = "send_rnr_err" },
	[CNUAS_STAT_RCVD_SEQ_ERR]	= { .name = "rcvd_seq_err" },
	[CNUAS_STAT_ACK_DEFERRED]	= { .name = "ack_deferred" },
	[CNUAS_STAT_RETRY_EXCEEDED]	= { .name = "retry_exceeded_err" },
	[CNUAS_STAT_RNR_RETRY_EXCEEDED]	= { .name = "retry_rnr_exceeded_err" },
	[CNUAS_STAT_COMPLETER_RETRY]	= { .name = "completer_retry_err" },
	[CNUAS_STAT_SEND_ERR]		= { .name = "send_err" },
	[CNUAS_STAT_RDMA_SENDS]		= { .name = "rdma_sends" },
	[CNUAS_STAT_RDMA_RECVS]		= { .name = "rdma_recvs" },
	[CNUAS_STAT_ICRC_ERR]		= { .name = "rx_icrc_errors" },
	[CNUAS_STAT_DROP_HDR]		= { .name = "rx_drop_bad_header" },
	[CNUAS_STAT_DROP_QPN]		= { .name = "rx_drop_unknown_qpn" },
	[CNUAS_STAT_DROP_QKEY]		= { .name = "rx_drop_bad_qkey" },
	[CNUAS_STAT_DROP_PKEY]		= { .name = "rx_drop_bad_pkey" },
	[CNUAS_STAT_DROP_STATE]		= { .name = "rx_drop_bad_state" },
	[CNUAS_STAT_DROP_OPCODE]	= { .name = "rx_drop_bad_opcode" },
	[CNUAS_STAT_DROP_SRC]		= { .name = "rx_drop_bad_source" },
	[CNUAS_STAT_DROP_NO_RECV]	= { .name = "rx_drop_no_recv_wqe" },
	[CNUAS_STAT_DROP_RESP]		= { .name = "rx_drop_stale_response" },
	[CNUAS_STAT_TX_BUSY]		= { .name = "tx_ring_full" },
	[CNUAS_STAT_TX_ICRC_OFFLOAD]	= { .name = "tx_icrc_offload" },
	[CNUAS_STAT_RX_ICRC_OFFLOAD]	= { .name = "rx_icrc_offload" },
	[CNUAS_STAT_TX_ZERO_COPY]	= { .name = "tx_zero_copy" },
	[CNUAS_STAT_FAST_REG]		= { .name = "fast_reg" },
	[CNUAS_STAT_LOCAL_INV]		= { .name = "local_inv" },
	[CNUAS_STAT_REMOTE_INV]		= { .name = "remote_inv" },
	[CNUAS_STAT_MCAST_RCVD]		= { .name = "mcast_rcvd" },
	[CNUAS_STAT_ACK_WITH_REQ]	= { .name = "ack_with_request" },
	[CNUAS_STAT_ACK_HOLD_EXPIRED]	= { .name = "ack_hold_expired" },
	[CNUAS_STAT_ACK_RELEASE_LOST]	= { .name = "ack_release_lost" },
	[CNUAS_STAT_MW_BIND]		= { .name = "mw_bind" },
	[CNUAS_STAT_UC_MSG_DROPPED]	= { .name = "uc_msg_dropped" },
	[CNUAS_STAT_TRAPS_SENT]		= { .name = "sma_traps_sent" },
	[CNUAS_STAT_TRAPS_REPRESSED]	= { .name = "sma_traps_repressed" },
	[CNUAS_STAT_VCRC_ERR]		= { .name = "rx_vcrc_errors" },
};

const char *cnuas_ib_stat_name(enum cnuas_ib_stat s)
{
	return (unsigned int)s < CNUAS_STAT_NUM ? cnuas_ib_stat_descs[s].name :
						  "?";
}

struct rdma_hw_stats *cnuas_ib_alloc_hw_port_stats(struct ib_device *ibdev,
						   u32 port)
{
	return rdma_alloc_hw_stats_struct(cnuas_ib_stat_descs, CNUAS_STAT_NUM,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int cnuas_ib_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			  u32 port, int index)
{
	struct cnuas_ib_dev *cdev = to_cdev(ibdev);
	int i;

	if (!stats)
		return -EINVAL;
	for (i = 0; i < CNUAS_STAT_NUM && i < stats->num_counters; i++)
		stats->value[i] = atomic64_read(&cdev->tdev.stats[i]);
	/* The link layer's own: cnuas_net checks the VCRC, not us. */
	if (i > CNUAS_STAT_VCRC_ERR)
		stats->value[CNUAS_STAT_VCRC_ERR] =
			cnuas_net_aux_rx_vcrc_errors(cdev->adev);
	return i;
}
