/* SPDX-License-Identifier: (GPL-2.0-or-later OR MIT) */
/*
 * cnuasgpu hardware interface: the register map shared by the QEMU device
 * model and the cnuasgpu driver.
 *
 * This file is the single source of truth. The QEMU build copies it; nobody
 * edits a copy. docs/specs/cnuasgpu.rst in the QEMU patch series describes
 * the same interface in prose.
 *
 * BAR0: 64 KiB of 32-bit little-endian registers (MMIO, 4-byte accesses).
 * BAR1: device memory, 64-bit prefetchable, DEVMEM_SIZE bytes (a power of
 *       two). Ordinary memory: any access size, contents survive reset.
 *
 * CnuasLink moves whole frames (1..CNUASGPU_LINK_MAX_FRAME bytes, one
 * SOCK_SEQPACKET message each, no header) between BAR1 and the link:
 * TX copies [TX_OFF, TX_OFF + TX_LEN) out of BAR1 at the doorbell; RX
 * writes one frame into [RX_OFF, RX_OFF + RX_BUF_SIZE) and holds further
 * frames until the driver writes RX_CONSUME.
 */
#ifndef CNUASGPU_HW_H
#define CNUASGPU_HW_H

#define CNUASGPU_VENDOR_ID		0x1af4
#define CNUASGPU_DEVICE_ID		0x10f1
#define CNUASGPU_REVISION		1
#define CNUASGPU_CLASS			0x0b40	/* co-processor */

#define CNUASGPU_BAR_REGS		0
#define CNUASGPU_BAR_DEVMEM		1
#define CNUASGPU_REGS_SIZE		0x10000

#define CNUASGPU_FW_MAJOR		0
#define CNUASGPU_FW_MINOR		1
#define CNUASGPU_FW_PATCH		0

#define CNUASGPU_SM_COUNT		16
#define CNUASGPU_LANES_PER_SM		32
#define CNUASGPU_TENSOR_SIZE		16

/* devmem_size limits (power of two) and default. */
#define CNUASGPU_DEVMEM_MIN		(1ull << 20)	/* 1 MiB */
#define CNUASGPU_DEVMEM_MAX		(1ull << 36)	/* 64 GiB */
#define CNUASGPU_DEVMEM_DEFAULT		(256ull << 20)

#define CNUASGPU_LINK_MAX_FRAME		65536

/* ---- Identification (RO) ---- */
#define CNUASGPU_REG_VENDOR		0x000	/* CNUASGPU_VENDOR_ID */
#define CNUASGPU_REG_DEVICE		0x004	/* CNUASGPU_DEVICE_ID */
#define CNUASGPU_REG_REVISION		0x008	/* CNUASGPU_REVISION */
#define CNUASGPU_REG_FW_VERSION		0x00c	/* major << 16 | minor << 8 | patch */
#define CNUASGPU_REG_GPU_ID		0x010	/* gpu_id property */
#define CNUASGPU_REG_SM_COUNT		0x014
#define CNUASGPU_REG_LANES_PER_SM	0x018
#define CNUASGPU_REG_TENSOR_SIZE	0x01c
#define CNUASGPU_REG_DEVMEM_SIZE_LO	0x020	/* BAR1 size, bytes */
#define CNUASGPU_REG_DEVMEM_SIZE_HI	0x024
#define CNUASGPU_REG_LINK_MAX_FRAME	0x028	/* CNUASGPU_LINK_MAX_FRAME */

/* ---- Interrupts ---- */
#define CNUASGPU_REG_INT_STATUS		0x040	/* RW1C: raised causes */
#define CNUASGPU_REG_INT_MASK		0x044	/* RW: 1 = cause masked */

/* ---- CnuasLink ---- */
#define CNUASGPU_REG_LINK_STATUS	0x100	/* RO: CNUASGPU_LINK_* */
#define CNUASGPU_REG_TX_OFF_LO		0x110	/* RW: BAR1 offset of the frame */
#define CNUASGPU_REG_TX_OFF_HI		0x114
#define CNUASGPU_REG_TX_LEN		0x118	/* RW: frame length */
#define CNUASGPU_REG_TX_DOORBELL	0x11c	/* WO: any value sends */
#define CNUASGPU_REG_TX_RESULT		0x120	/* RO: CNUASGPU_TX_* of last send */
#define CNUASGPU_REG_RX_OFF_LO		0x130	/* RW: BAR1 offset of RX buffer */
#define CNUASGPU_REG_RX_OFF_HI		0x134
#define CNUASGPU_REG_RX_BUF_SIZE	0x138	/* RW: 0 = receive disabled */
#define CNUASGPU_REG_RX_LEN		0x13c	/* RO: frame in buffer, 0 = none */
#define CNUASGPU_REG_RX_CONSUME		0x140	/* WO: any value frees the buffer */

/* Counters, RO, 32 bit, wrap around, cleared by reset. */
#define CNUASGPU_REG_STATS		0x200
#define CNUASGPU_STAT_TX_FRAMES		0x00
#define CNUASGPU_STAT_RX_FRAMES		0x04
#define CNUASGPU_STAT_TX_ERRORS		0x08	/* bad range, busy, link down */
#define CNUASGPU_STAT_RX_DROPS		0x0c	/* larger than the RX buffer */
#define CNUASGPU_STAT_GUEST_ERRORS	0x10
#define CNUASGPU_NUM_STATS		5

/* ---- Register bits ---- */

/* Interrupt causes (INT_STATUS, INT_MASK). One MSI vector or INTx. */
#define CNUASGPU_INT_RX			(1u << 0)	/* RX_LEN became nonzero */
#define CNUASGPU_INT_TX			(1u << 1)	/* a send finished */
#define CNUASGPU_INT_LINK		(1u << 2)	/* LINK_STATUS.UP changed */
#define CNUASGPU_INT_ALL		0x7u

/* LINK_STATUS */
#define CNUASGPU_LINK_UP		(1u << 0)
#define CNUASGPU_LINK_TX_BUSY		(1u << 1)	/* send in flight */

/* TX_RESULT */
#define CNUASGPU_TX_OK			0
#define CNUASGPU_TX_PENDING		1	/* doorbell accepted, in flight */
#define CNUASGPU_TX_ERR_RANGE		2	/* length or offset outside BAR1 */
#define CNUASGPU_TX_ERR_BUSY		3	/* doorbell while busy, ignored */
#define CNUASGPU_TX_ERR_LINK		4	/* no link, frame dropped */

#endif /* CNUASGPU_HW_H */
