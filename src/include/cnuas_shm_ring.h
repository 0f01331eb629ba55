/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The shared-memory rings between a cnuas-vnic (QEMU) and cnuas-vswitchd:
 * the messages that negotiate them over the SOCK_SEQPACKET connection and
 * the layout of the memfd area both map. Design: docs/shm-ring.md.
 *
 * Both sides treat the area as memory the peer may change at any time:
 * each keeps its own index privately, reads the peer's once per batch,
 * bounds it by nslots, reads a slot's length once and copies the frame
 * out before looking at it.
 *
 * Userspace only (QEMU and the switch); little-endian hosts, as both
 * sides run on one host.
 */
#ifndef CNUAS_SHM_RING_H
#define CNUAS_SHM_RING_H

/* __u32 and friends: the kernel style that src/include is checked against */
#include <linux/types.h>

/* ---- Messages on the socket, shorter than any frame (14 bytes) ---- */

#define CNUAS_SHM_MAGIC		0x52534e43u	/* "CNSR" */
#define CNUAS_SHM_VERSION	1

enum cnuas_shm_msg_type {
	CNUAS_SHM_HELLO = 1,	/* device: area size, SCM_RIGHTS memfd + 3 eventfds */
	CNUAS_SHM_ACCEPT = 2,	/* switch: ring in use from the next frame on */
	CNUAS_SHM_REFUSE = 3,	/* switch: stay on the socket; arg = reason */
	CNUAS_SHM_RING_ON = 4,	/* device: last socket message, then the ring */
};

/* Why a switch refused (CNUAS_SHM_REFUSE's arg). */
enum cnuas_shm_refusal {
	CNUAS_SHM_R_DISABLED = 1,	/* switch runs without --shm-ring */
	CNUAS_SHM_R_FDS = 2,		/* not a sealed memfd and three eventfds */
	CNUAS_SHM_R_LAYOUT = 3,		/* the area header does not fit */
	CNUAS_SHM_R_MAP = 4,		/* mmap failed */
};

struct cnuas_shm_msg {
	__u32 magic;		/* CNUAS_SHM_MAGIC */
	__u16 version;	/* CNUAS_SHM_VERSION */
	__u16 type;		/* enum cnuas_shm_msg_type */
	__u32 arg;		/* HELLO: area bytes; REFUSE: the reason */
};

#define CNUAS_SHM_MSG_LEN	12
/* The HELLO's descriptors, in this order. */
#define CNUAS_SHM_FD_AREA	0
#define CNUAS_SHM_FD_SWITCH_WAKE 1	/* the switch sleeps on it: frames or room */
#define CNUAS_SHM_FD_RX_WAKE	2	/* the device's RX waits on it: frames */
#define CNUAS_SHM_FD_TX_WAKE	3	/* the device's TX waits on it: room */
#define CNUAS_SHM_NFDS		4

/* ---- The area ---- */

#define CNUAS_SHM_SLOTS_MIN	16
#define CNUAS_SHM_SLOTS_MAX	4096
#define CNUAS_SHM_SLOTS_DEFAULT	256
#define CNUAS_SHM_FRAME_MAX	9216	/* CNUAS_VNIC_MAX_FRAME, VS_MAX_FRAME */
#define CNUAS_SHM_LINE		64
/* Area header, then the TX ring (device -> switch), then the RX ring. */
struct cnuas_shm_area {
	__u32 magic;		/* CNUAS_SHM_MAGIC */
	__u32 version;	/* CNUAS_SHM_VERSION */
	__u32 nslots;	/* per ring, a power of two in [SLOTS_MIN, SLOTS_MAX] */
	__u32 slot_size;	/* bytes, a multiple of 64, 16 + frame room */
	__u64 tx_off;	/* offset of the TX ring's struct cnuas_shm_ctl */
	__u64 rx_off;	/* offset of the RX ring's */
	__u8 pad[CNUAS_SHM_LINE - 32];
};

/*
 * A ring's control block: one cache line written by each side. Slots
 * follow it. prod and cons are free running; prod - cons <= nslots.
 */
struct cnuas_shm_ctl {
	__u32 prod;		/* written by the producer only */
	__u32 cons_sleep;	/* consumer: kick me when prod moves */
	__u8 pad0[CNUAS_SHM_LINE - 8];
	__u32 cons;		/* written by the consumer only */
	__u32 prod_wait;	/* producer: kick me when cons moves */
	__u8 pad1[CNUAS_SHM_LINE - 8];
	__u8 pad2[CNUAS_SHM_LINE];
};

struct cnuas_shm_slot {
	__u32 len;		/* frame bytes, 1..slot_size - 16 */
	__u32 flags;		/* none defined yet: 0 */
	__u32 rsvd[2];
	__u8 frame[];
};

#define CNUAS_SHM_SLOT_HDR	16
#define CNUAS_SHM_SLOT_DEFAULT \
	((CNUAS_SHM_SLOT_HDR + CNUAS_SHM_FRAME_MAX + CNUAS_SHM_LINE - 1) & \
	 ~(__u32)(CNUAS_SHM_LINE - 1))

/* Bytes of one ring (control block and slots). */
static inline __u64 cnuas_shm_ring_bytes(__u32 nslots, __u32 slot_size)
{
	return sizeof(struct cnuas_shm_ctl) + (__u64)nslots * slot_size;
}

/* Bytes of an area with both rings laid out one after the other. */
static inline __u64 cnuas_shm_area_bytes(__u32 nslots, __u32 slot_size)
{
	return sizeof(struct cnuas_shm_area) + 2 * cnuas_shm_ring_bytes(nslots, slot_size);
}

#endif
