/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* What port.h needs of the MAD layer: the trap notice it keeps. */
#ifndef KSTUB_RDMA_IB_MAD_H
#define KSTUB_RDMA_IB_MAD_H
#include "../kstub.h"

struct ib_mad_agent;

struct ib_mad_notice_attr {
	u8 generic_type;
	u8 prod_type_msb;
	__be16 prod_type_lsb;
	__be16 trap_num;
	__be16 issuer_lid;
	__be16 toggle_count;
	u8 details[54];
};
#endif
