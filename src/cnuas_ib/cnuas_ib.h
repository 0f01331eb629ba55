/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cnuas_ib: the RDMA device of a cnuas-vnic, on top of cnuas_net's
 * auxiliary device. Private objects and the device limits.
 *
 * Lifetime: ib_core allocates and frees every object (ib_alloc_device,
 * INIT_RDMA_OBJ_SIZE). Frames and link events from cnuas_net flow only
 * between attach (after ib_register_device) and detach (before
 * ib_unregister_device), so no callback ever sees an unregistered device.
 *
 * Files, one role each:
 *   main.c    module, auxiliary driver, ib_device life cycle, port events
 *   verbs.c   device/port/GID/P_Key queries, PD, user context
 *   stubs.c   mandatory verbs not implemented yet (-EOPNOTSUPP)
 *   wire.h    RoCEv2 headers: structs, accessors, opcode table, ICRC API
 *   opcode.c  the BTH opcode table
 *   icrc.c    the RoCEv2 ICRC
 *   test/     host unit test of wire.h/opcode.c/icrc.c (not built here)
 * Planned for the transport (rxe's split): cq.c, qp.c (state machine),
 * mr.c, ah.c, srq.c, req.c / resp.c / comp.c (requester, responder,
 * completer), recv.c (demultiplex by QPN), net.c (frames to/from
 * cnuas_net), and src/include/uapi/cnuas-abi.h for the provider.
 */
#ifndef CNUAS_IB_H
#define CNUAS_IB_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <rdma/ib_verbs.h>

#include "cnuas_net_aux.h"
#include "cnuas_vnic_hw.h"
#include "compat.h"

#define CNUAS_IB_NAME_FMT	"cnuas_%d"

/*
 * Device limits (query_device, query_port, get_port_immutable): the one
 * place they are defined. They are what the transport will enforce; until
 * an object type is implemented its create verb fails with -EOPNOTSUPP.
 */
#define CNUAS_IB_VENDOR_ID		0x1af4	/* the PCI function's vendor */
#define CNUAS_IB_VENDOR_PART_ID		0x10f0
#define CNUAS_IB_HW_VER			1
#define CNUAS_IB_MAX_MR_SIZE		BIT_ULL(40)
#define CNUAS_IB_PAGE_SIZE_CAP		(SZ_4K | SZ_64K | SZ_2M)
#define CNUAS_IB_MAX_QP			65536
#define CNUAS_IB_MAX_QP_WR		16384
#define CNUAS_IB_MAX_SGE		32
#define CNUAS_IB_MAX_SGE_RD		32
#define CNUAS_IB_MAX_CQ			65536
#define CNUAS_IB_MAX_CQE		BIT(20)
#define CNUAS_IB_MAX_MR			BIT(18)
#define CNUAS_IB_MAX_PD			65536
#define CNUAS_IB_MAX_QP_RD_ATOM		128
#define CNUAS_IB_MAX_RES_RD_ATOM	(CNUAS_IB_MAX_QP * CNUAS_IB_MAX_QP_RD_ATOM)
#define CNUAS_IB_MAX_SRQ		65536
#define CNUAS_IB_MAX_SRQ_WR		16384
#define CNUAS_IB_MAX_SRQ_SGE		32
#define CNUAS_IB_MAX_AH			65536
#define CNUAS_IB_MAX_MCAST_GRP		8192
#define CNUAS_IB_MAX_MCAST_QP_ATTACH	56
#define CNUAS_IB_MAX_FAST_REG_PAGES	512
#define CNUAS_IB_LOCAL_CA_ACK_DELAY	15
#define CNUAS_IB_MAX_MSG_SZ		0x80000000u	/* 2 GiB (IBA) */
#define CNUAS_IB_NUM_PORTS		1
#define CNUAS_IB_PKEY_TBL_LEN		1
#define CNUAS_IB_DEFAULT_PKEY		0xffff
#define CNUAS_IB_GID_TBL_LEN		64	/* RoCE v2: one per address */
#define CNUAS_IB_GID_TBL_LEN_IB		1	/* IB: the port GUID GID */
/* Capabilities: only what works now; the transport adds its flags. */
#define CNUAS_IB_DEVICE_CAP_FLAGS	(IB_DEVICE_PORT_ACTIVE_EVENT | \
					 IB_DEVICE_SYS_IMAGE_GUID)

/*
 * TODO(provider ABI): move to src/include/uapi/cnuas-abi.h, the one
 * header shared with libcnuas (ABI version, create/destroy request and
 * response structs, mmap offsets, ring layouts), and check the version
 * the provider sends in alloc_ucontext.
 */
#define CNUAS_IB_UVERBS_ABI_VERSION	1

struct cnuas_ib_dev {
	struct ib_device ibdev;		/* first: ib_alloc_device() */
	struct cnuas_net_aux_dev *adev;
	u32 link_layer;			/* CNUAS_VNIC_LL_* */

	struct mutex link_lock;		/* serializes link_up changes */
	bool link_up;			/* as last reported to ib_core */

	atomic_t num_pd;

	/* Received frames the transport did not take (none yet). */
	atomic64_t rx_dropped;
};

struct cnuas_ib_ucontext {
	struct ib_ucontext ibuc;
};

struct cnuas_ib_pd {
	struct ib_pd ibpd;
};

/* Skeletons for the transport: ib_core needs their sizes already. */
struct cnuas_ib_cq {
	struct ib_cq ibcq;
};

struct cnuas_ib_qp {
	struct ib_qp ibqp;
};

static inline struct cnuas_ib_dev *to_cdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct cnuas_ib_dev, ibdev);
}

static inline bool cnuas_ib_is_eth(const struct cnuas_ib_dev *cdev)
{
	return cdev->link_layer == CNUAS_VNIC_LL_ETH;
}

/* main.c */
extern const struct ib_device_ops cnuas_ib_dev_ops;

/* verbs.c: the verbs entry points */
int cnuas_ib_query_device(struct ib_device *ibdev,
			  struct ib_device_attr *attr, struct ib_udata *udata);
int cnuas_ib_query_port(struct ib_device *ibdev, u32 port,
			struct ib_port_attr *attr);
int cnuas_ib_get_port_immutable(struct ib_device *ibdev, u32 port,
				struct ib_port_immutable *imm);
enum rdma_link_layer cnuas_ib_get_link_layer(struct ib_device *ibdev,
					     u32 port);
int cnuas_ib_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			u16 *pkey);
int cnuas_ib_query_gid(struct ib_device *ibdev, u32 port, int index,
		       union ib_gid *gid);
int cnuas_ib_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata);
void cnuas_ib_dealloc_ucontext(struct ib_ucontext *ibuc);
int cnuas_ib_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int cnuas_ib_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* stubs.c: mandatory verbs the transport has not implemented yet */
int cnuas_ib_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		       struct CNUAS_CREATE_CQ_ARG *arg);
int cnuas_ib_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int cnuas_ib_poll_cq(struct ib_cq *ibcq, int num, struct ib_wc *wc);
int cnuas_ib_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int cnuas_ib_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		       struct ib_udata *udata);
int cnuas_ib_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		       int mask, struct ib_udata *udata);
int cnuas_ib_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int cnuas_ib_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		       const struct ib_send_wr **bad_wr);
int cnuas_ib_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
struct ib_mr *cnuas_ib_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *cnuas_ib_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 len,
				   u64 iova, int access,
				   CNUAS_IB_REG_USER_MR_DMAH
				   struct ib_udata *udata);
int cnuas_ib_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

#endif /* CNUAS_IB_H */
