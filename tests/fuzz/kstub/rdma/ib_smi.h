/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* Subnet management packets and the attributes sma.c answers (IBA 14.2.5). */
#ifndef KSTUB_RDMA_IB_SMI_H
#define KSTUB_RDMA_IB_SMI_H
#include "ib_mad.h"

#define IB_SMP_DATA_SIZE	64
#define IB_SMP_MAX_PATH_HOPS	64
#define IB_SMP_DIRECTION	KSTUB_BE16(0x8000)

#define IB_SMP_ATTR_NOTICE		KSTUB_BE16(0x0002)
#define IB_SMP_ATTR_NODE_DESC		KSTUB_BE16(0x0010)
#define IB_SMP_ATTR_NODE_INFO		KSTUB_BE16(0x0011)
#define IB_SMP_ATTR_GUID_INFO		KSTUB_BE16(0x0014)
#define IB_SMP_ATTR_PORT_INFO		KSTUB_BE16(0x0015)
#define IB_SMP_ATTR_PKEY_TABLE		KSTUB_BE16(0x0016)
#define IB_SMP_ATTR_SL_TO_VL_TABLE	KSTUB_BE16(0x0017)
#define IB_SMP_ATTR_VL_ARB_TABLE	KSTUB_BE16(0x0018)
#define IB_SMP_ATTR_SM_INFO		KSTUB_BE16(0x0020)

struct ib_smp {
	u8 base_version;
	u8 mgmt_class;
	u8 class_version;
	u8 method;
	__be16 status;
	u8 hop_ptr;
	u8 hop_cnt;
	__be64 tid;
	__be16 attr_id;
	__be16 resv;
	__be32 attr_mod;
	__be64 mkey;
	__be16 dr_slid;
	__be16 dr_dlid;
	u8 reserved[28];
	u8 data[IB_SMP_DATA_SIZE];
	u8 initial_path[IB_SMP_MAX_PATH_HOPS];
	u8 return_path[IB_SMP_MAX_PATH_HOPS];
} __packed;

struct ib_node_info {
	u8 base_version;
	u8 class_version;
	u8 node_type;
	u8 num_ports;
	__be64 sys_guid;
	__be64 node_guid;
	__be64 port_guid;
	__be16 partition_cap;
	__be16 device_id;
	__be32 revision;
	u8 local_port_num;
	u8 vendor_id[3];
} __packed;

struct ib_port_info {
	__be64 mkey;
	__be64 gid_prefix;
	__be16 lid;
	__be16 sm_lid;
	__be32 cap_mask;
	__be16 diag_code;
	__be16 mkey_lease_period;
	u8 local_port_num;
	u8 link_width_enabled;
	u8 link_width_supported;
	u8 link_width_active;
	u8 linkspeed_portstate;
	u8 portphysstate_linkdown;
	u8 mkeyprot_resv_lmc;
	u8 linkspeedactive_enabled;
	u8 neighbormtu_mastersmsl;
	u8 vlcap_inittype;
	u8 vl_high_limit;
	u8 vl_arb_high_cap;
	u8 vl_arb_low_cap;
	u8 inittypereply_mtucap;
	u8 vlstallcnt_hoqlife;
	u8 operationalvl_pei_peo_fpi_fpo;
	__be16 mkey_violations;
	__be16 pkey_violations;
	__be16 qkey_violations;
	u8 guid_cap;
	u8 clientrereg_resv_subnetto;
	u8 resv_resptimevalue;
	u8 localphyerrors_overrunerrors;
	__be16 max_credit_hint;
	u8 resv;
	u8 link_roundtrip_latency[3];
} __packed;
#endif
