/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The MAD layer as mad.c, sma.c, pma.c and trap.c use it (the ib_mad
 * target; port.h only needs the notice): the MAD and notice layouts of
 * IBA 13.4 and the agent calls trap.c makes, which the fixture records.
 * Wire constants are big endian where the driver compares them raw.
 */
#ifndef KSTUB_RDMA_IB_MAD_H
#define KSTUB_RDMA_IB_MAD_H
#include "../kstub.h"

/* A big-endian constant usable in case labels (little-endian hosts). */
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "kstub: little endian");
#define KSTUB_BE16(x)	((__be16)((((x) & 0xff) << 8) | (((x) >> 8) & 0xff)))

#define IB_MGMT_BASE_VERSION			1
#define IB_MGMT_CLASS_SUBN_LID_ROUTED		0x01
#define IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE	0x81
#define IB_MGMT_CLASS_PERF_MGMT			0x04

#define IB_MGMT_METHOD_GET			0x01
#define IB_MGMT_METHOD_SET			0x02
#define IB_MGMT_METHOD_TRAP			0x05
#define IB_MGMT_METHOD_REPORT			0x06
#define IB_MGMT_METHOD_TRAP_REPRESS		0x07
#define IB_MGMT_METHOD_GET_RESP			0x81
#define IB_MGMT_METHOD_REPORT_RESP		0x86

#define IB_MGMT_MAD_STATUS_BAD_VERSION		0x0004
#define IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD	0x0008
#define IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB 0x000c
#define IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE	0x001c

#define IB_MGMT_MAD_HDR		24
#define IB_MGMT_MAD_DATA	232

/* process_mad's result bits and flags */
#define IB_MAD_RESULT_FAILURE	0
#define IB_MAD_RESULT_SUCCESS	BIT(0)
#define IB_MAD_RESULT_REPLY	BIT(1)
#define IB_MAD_RESULT_CONSUMED	BIT(2)
#define IB_MAD_IGNORE_MKEY	1

#define IB_NOTICE_TYPE_SECURITY	0x82
#define IB_NOTICE_TYPE_INFO	0x84
#define IB_NOTICE_PROD_CA	KSTUB_BE16(1)

struct ib_mad_hdr {
	u8 base_version;
	u8 mgmt_class;
	u8 class_version;
	u8 method;
	__be16 status;
	__be16 class_specific;
	__be64 tid;
	__be16 attr_id;
	__be16 resv;
	__be32 attr_mod;
} __packed;

struct ib_mad {
	struct ib_mad_hdr mad_hdr;
	u8 data[IB_MGMT_MAD_DATA];
} __packed;

/* ClassPortInfo (IBA 13.4.8.1): what pma.c fills. */
struct ib_class_port_info {
	u8 base_version;
	u8 class_version;
	__be16 capability_mask;
	__be32 cap_mask2_resp_time;	/* CapabilityMask2:27 | RespTimeValue:5 */
	u8 rest[64];
} __packed;

static inline void ib_set_cpi_resp_time(struct ib_class_port_info *cpi,
					u8 rtime)
{
	u32 v = be32_to_cpu(cpi->cap_mask2_resp_time);

	cpi->cap_mask2_resp_time = cpu_to_be32((v & ~0x1fu) | (rtime & 0x1f));
}

/* Notice (IBA 13.4.8.2), with the details of traps 144, 256 and 257/258. */
struct ib_mad_notice_attr {
	u8 generic_type;
	u8 prod_type_msb;
	__be16 prod_type_lsb;
	__be16 trap_num;
	__be16 issuer_lid;
	__be16 toggle_count;
	union {
		struct {
			__be16 reserved;
			__be16 lid;
			u8 method;
			u8 reserved2;
			__be16 attr_id;
			__be32 attr_mod;
			__be64 mkey;
			__be16 dr_slid;
			u8 dr_trunc_hop;
			u8 dr_rtn_path[30];
		} __packed ntc_256;
		struct {
			__be16 reserved;
			__be16 lid;
			u8 reserved2;
			u8 local_changes;
			__be32 new_cap_mask;
			u8 reserved3;
			u8 change_flags;
		} __packed ntc_144;
		struct {
			__be16 reserved;
			__be16 lid1;
			__be16 lid2;
			__be32 key;
			__be32 sl_qp1;
			__be32 qp2;
			union ib_gid gid1;
			union ib_gid gid2;
		} __packed ntc_257_258;
		u8 raw[54];
	} details;
} __packed;

/* What the driver reads of a receive completion. */
struct ib_wc {
	u32 slid;
};

/* ---- the agent trap.c registers, and its sends ---- */
struct ib_mad_agent {
	struct ib_qp *qp;
	void *context;
	u32 hi_tid;
};

struct ib_ah;
struct ib_mad_send_buf {
	void *mad;
	struct ib_ah *ah;
	void *context[2];
	int timeout_ms;
	int retries;
};

struct ib_mad_send_wc {
	struct ib_mad_send_buf *send_buf;
	enum ib_wc_status status;
};

struct ib_mad_recv_wc;
typedef void (*ib_mad_send_handler)(struct ib_mad_agent *agent,
				    struct ib_mad_send_wc *wc);
typedef void (*ib_mad_recv_handler)(struct ib_mad_agent *agent,
				    struct ib_mad_send_buf *send,
				    struct ib_mad_recv_wc *wc);

struct ib_mad_agent *ib_register_mad_agent(struct ib_device *dev, u32 port,
					   enum ib_qp_type qpt, void *reg_req,
					   u8 rmpp_version,
					   ib_mad_send_handler send,
					   ib_mad_recv_handler recv,
					   void *context, u32 flags);
void ib_unregister_mad_agent(struct ib_mad_agent *agent);
struct ib_mad_send_buf *ib_create_send_mad(struct ib_mad_agent *agent,
					   u32 remote_qpn, u16 pkey_index,
					   int rmpp_active, int hdr_len,
					   int data_len, gfp_t gfp,
					   u8 base_version);
int ib_post_send_mad(struct ib_mad_send_buf *send,
		     struct ib_mad_send_buf **bad);
void ib_free_send_mad(struct ib_mad_send_buf *send);
void ib_free_recv_mad(struct ib_mad_recv_wc *wc);

/* ---- address handles ---- */
enum rdma_ah_attr_type { RDMA_AH_ATTR_TYPE_IB = 1 };
#define RDMA_CREATE_AH_SLEEPABLE	1
#define RDMA_DESTROY_AH_SLEEPABLE	1
struct rdma_ah_attr {
	enum rdma_ah_attr_type type;
	u16 dlid;
	u8 sl;
	u32 port_num;
};

static inline void rdma_ah_set_dlid(struct rdma_ah_attr *a, u32 dlid)
{
	a->dlid = (u16)dlid;
}

static inline void rdma_ah_set_sl(struct rdma_ah_attr *a, u8 sl)
{
	a->sl = sl;
}

static inline void rdma_ah_set_port_num(struct rdma_ah_attr *a, u32 port)
{
	a->port_num = port;
}

struct ib_ah *rdma_create_ah(struct ib_pd *pd, struct rdma_ah_attr *attr,
			     u32 flags);
int rdma_destroy_ah(struct ib_ah *ah, u32 flags);
#endif
