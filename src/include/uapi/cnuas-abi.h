/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
/*
 * Cnuas kernel <-> provider ABI: the driver-specific parts of the uverbs
 * commands, and the layout of the queues shared by mmap (SQ, RQ, SRQ, CQ).
 *
 * Shared by cnuas_ib.ko and libcnuas-rdmav34.so; the build copies it, never
 * edit a copy. Any change to a struct or a ring layout bumps
 * CNUAS_UVERBS_ABI_VERSION; a new opcode whose union member fits the
 * union's size does not (a kernel that does not know it refuses it).
 * Comments go on their own lines before a nested struct or union: the
 * provider's build turns these structs into macros with rdma-core's
 * make_abi_structs.py, which only knows a bare "struct {" line.
 *
 * Rings: one mmap'ed buffer per queue, a struct cnuas_queue_hdr at offset 0,
 * then num_entries slots of entry_size bytes (both powers of two) at
 * CNUAS_QUEUE_HDR_SIZE. prod and cons are free-running u32 indices; slot =
 * index & (num_entries - 1); the ring is full when prod - cons ==
 * num_entries. Each side writes only its own index (store-release after
 * filling or consuming a slot) and reads the other's (load-acquire):
 *   SQ, RQ, SRQ: the provider produces WQEs, the kernel consumes them;
 *   CQ:          the kernel produces CQEs, the provider consumes them.
 * The kernel copies a WQE out of the ring before it uses it and treats
 * every index and field user space writes as untrusted. SQ slots are
 * consumed (cons advances) only when the WQE completes, so the provider
 * may reuse a slot once cons has passed it.
 *
 * Doorbell: after producing send WQEs the provider calls the POST_SEND
 * command with no work requests (ibv_cmd_post_send() with wr_count 0); the
 * kernel then reads the SQ. Receive WQEs need no doorbell.
 *
 * Doorbell hint (SQ only): while the kernel sets db_skip to a nonzero
 * value it promises to read the SQ again by itself (it waits for ACKs of
 * packets in flight, or a timer), so the provider may leave the doorbell
 * out. Protocol: the provider publishes prod, issues a full memory
 * barrier, then reads db_skip; the kernel clears db_skip, issues a full
 * barrier, then reads prod once more. One of the two always sees the
 * other, so no WQE waits. A kernel that never sets it (0) gets a
 * doorbell every time, as before.
 */
#ifndef CNUAS_ABI_H
#define CNUAS_ABI_H

#include <linux/types.h>

/* Reported in sysfs (uverbsN/abi_version) and sent in alloc_ucontext. */
#define CNUAS_UVERBS_ABI_VERSION	1

#define CNUAS_QUEUE_HDR_SIZE		128
#define CNUAS_MAX_INLINE_DATA		512

/* One cache line each: the two sides never write the same line. */
struct cnuas_queue_hdr {
	__u32 prod;
	__u32 reserved0[15];
	__u32 cons;
	__u32 db_skip;			/* SQ: kernel's doorbell hint */
	__u32 reserved1[14];
};

/* Where and how to mmap one queue (offset into the uverbs fd). */
struct cnuas_queue_info {
	__aligned_u64 mmap_offset;
	__aligned_u64 mmap_size;	/* header and slots, page aligned */
	__u32 num_entries;		/* power of two */
	__u32 entry_size;		/* bytes per slot, power of two */
};

struct cnuas_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/* Send WQE flags (send_flags): the IBV_SEND_* / IB_SEND_* values. */
#define CNUAS_SEND_FENCE		(1u << 0)
#define CNUAS_SEND_SIGNALED		(1u << 1)
#define CNUAS_SEND_SOLICITED		(1u << 2)
#define CNUAS_SEND_INLINE		(1u << 3)

/*
 * A send WQE (64 bytes) followed by num_sge struct cnuas_sge, or with
 * CNUAS_SEND_INLINE by inline_len bytes of data. opcode is an
 * IBV_WR_* (= enum ib_uverbs_wr_opcode) value.
 *
 * IBA 1.5 (kernels that report IBV_DEVICE_FLUSH_GLOBAL / ATOMIC_WRITE in
 * the extended device caps; others fail the WQE with LOC_QP_OP_ERR):
 *   IBV_WR_ATOMIC_WRITE (15): wr.atomic with remote_addr (8-byte
 *     aligned), rkey and, in compare_add, the 8 bytes to store as they
 *     lie in memory (not a number: no byte order applies); num_sge 0.
 *   IBV_WR_FLUSH (14): wr.flush; num_sge 0. Completes with
 *     IBV_WC_FLUSH (8), ATOMIC WRITE with IBV_WC_ATOMIC_WRITE (9).
 * Both fit the union, so the ABI version stays.
 */
struct cnuas_send_wqe {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 send_flags;
	__u32 num_sge;
	__u32 ex;		/* imm_data (network order) or invalidate_rkey */
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 reserved;
		} atomic;
		struct {
			__u32 ah_num;	/* from cnuas_create_ah_resp */
			__u32 remote_qpn;
			__u32 remote_qkey;
			/* the GSI QP (kernel) only; others send their QP's */
			__u16 pkey_index;
			__u16 reserved;
		} ud;
		/*
		 * IBV_WR_FLUSH: type IBV_FLUSH_GLOBAL/PERSISTENT bits,
		 * level IBV_FLUSH_RANGE (remote_addr, length) or
		 * IBV_FLUSH_MR (the whole MR: remote_addr, length ignored)
		 */
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 length;
			__u32 rkey;
			__u8 type;
			__u8 level;
			__u16 reserved;
		} flush;
		/* kernel QPs only: IB_WR_REG_MR */
		struct {
			__u32 key;	/* the FRMR's new lkey == rkey */
			__u32 access;	/* IB_ACCESS_* */
		} reg;
		/* IBV_WR_BIND_MW (and ibv_bind_mw) */
		struct {
			__aligned_u64 addr;	/* the window in the MR */
			__aligned_u64 length;
			__u32 mw_rkey;	/* the MW's current rkey: names it */
			__u32 new_rkey;	/* same MW, a new low byte */
			__u32 mr_lkey;	/* the MR the window lies in */
			__u32 access;	/* IBV_ACCESS_REMOTE_* */
		} bind;
	} wr;
	__u32 inline_len;
	__u32 reserved;
};

/* A receive WQE (16 bytes) followed by num_sge struct cnuas_sge. */
struct cnuas_recv_wqe {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 reserved;
};

/* CQE wc_flags (not the IBV_WC_* bit values: those differ from ib_core's) */
#define CNUAS_CQE_GRH			(1u << 0)
#define CNUAS_CQE_WITH_IMM		(1u << 1)
#define CNUAS_CQE_WITH_INV		(1u << 2)

/* CQE network_hdr_type: the values of the kernel's enum rdma_network_type */
#define CNUAS_NET_IPV4			2
#define CNUAS_NET_IPV6			3

/*
 * A completion (64 bytes). status uses the shared IBV_WC_* / IB_WC_*
 * status numbering, opcode the IBV_WC_* (= enum ib_uverbs_wc_opcode) one.
 */
struct cnuas_cqe {
	__aligned_u64 wr_id;
	__u32 status;
	__u32 opcode;
	__u32 vendor_err;
	__u32 byte_len;
	__u32 ex;		/* imm_data (network order) or invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;		/* CNUAS_CQE_* */
	__u16 pkey_index;
	__u16 slid;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 port_num;
	__u8 network_hdr_type;	/* CNUAS_NET_* when CNUAS_CQE_GRH */
	__u8 smac[6];
	__u16 vlan_id;
	__u32 reserved[2];
};

/* ---- driver data of the uverbs commands ---- */

struct cnuas_alloc_ucontext_req {
	__u32 abi_version;		/* CNUAS_UVERBS_ABI_VERSION */
	__u32 reserved;
};

/* cnuas_alloc_ucontext_resp.flags */
#define CNUAS_UCTX_RX_POLL	(1u << 0)	/* rx_poll_mmap_offset is valid */

/*
 * rx_poll_mmap_offset: one read-only page (the device's RX poll page);
 * a 32-bit load at offset 0 moves frames waiting on the link into the
 * device's RX ring now. Busy pollers do it when they find their CQ
 * empty. Older kernels send a shorter response: flags 0, no page.
 */
struct cnuas_alloc_ucontext_resp {
	__u32 abi_version;
	__u32 max_inline_data;
	__u32 flags;			/* CNUAS_UCTX_* */
	__u32 reserved;
	__aligned_u64 rx_poll_mmap_offset;
};

struct cnuas_create_cq_resp {
	struct cnuas_queue_info cq;
};

/*
 * resize_cq: the CQ moves to a new ring (map it, unmap the old one) that
 * starts with the unpolled CQEs of the old one at index 0.
 */
struct cnuas_resize_cq_resp {
	struct cnuas_queue_info cq;
};

/* The provider asks for at least cap.max_inline_data in the common part. */
struct cnuas_create_qp_resp {
	struct cnuas_queue_info sq;	/* num_entries 0: no SQ */
	struct cnuas_queue_info rq;	/* num_entries 0: SRQ or no RQ */
	__u32 max_inline_data;
	__u32 reserved;
};

struct cnuas_create_srq_resp {
	struct cnuas_queue_info srq;
	__u32 srq_num;
	__u32 reserved;
};

/*
 * modify_srq with IB_SRQ_MAX_WR (the command has no response): the
 * kernel writes the new ring's struct cnuas_queue_info at ring_info_addr,
 * a user address, before the SRQ moves to it. The WQEs not consumed yet
 * are in the new ring from slot 0 on, its prod counting them.
 */
struct cnuas_modify_srq_req {
	__aligned_u64 ring_info_addr;
};

struct cnuas_create_ah_resp {
	__u32 ah_num;			/* names the AH in UD send WQEs */
	__u32 reserved;
};

#endif /* CNUAS_ABI_H */
