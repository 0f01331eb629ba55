/* SPDX-License-Identifier: (GPL-2.0-or-later OR MIT) */
/*
 * cnuas-vnic hardware interface: the register map and the in-memory
 * structures shared by the QEMU device model and the cnuas_net driver.
 *
 * This file is the single source of truth. The QEMU build and the kernel
 * build copy it; nobody edits a copy. docs/specs/cnuas-vnic.rst in the
 * QEMU patch series describes the same interface in prose.
 *
 * All registers are 32 bit, little endian, in BAR0 (4 KiB, MMIO). The
 * MSI-X table and PBA live in BAR1; BAR2 is the RX poll page (see
 * F_RX_POLL). All in-memory structures are little endian.
 */
#ifndef CNUAS_VNIC_HW_H
#define CNUAS_VNIC_HW_H

#ifdef __KERNEL__
#include <linux/types.h>
#define cnuas_le16 __le16
#define cnuas_le32 __le32
#define cnuas_le64 __le64
#else
#include <stdint.h>
#define cnuas_le16 uint16_t
#define cnuas_le32 uint32_t
#define cnuas_le64 uint64_t
#endif

#define CNUAS_VNIC_VENDOR_ID		0x1af4
#define CNUAS_VNIC_DEVICE_ID		0x10f0
#define CNUAS_VNIC_REVISION		1

#define CNUAS_VNIC_BAR_REGS		0
#define CNUAS_VNIC_BAR_MSIX		1
#define CNUAS_VNIC_BAR_POLL		2
#define CNUAS_VNIC_REGS_SIZE		0x1000
#define CNUAS_VNIC_POLL_SIZE		0x1000

#define CNUAS_VNIC_MAGIC_VALUE		0x41554e43	/* "CNUA" */
#define CNUAS_VNIC_VERSION_MAJOR	1
/* Minor versions: 1 ICRC, 2 automask, 3 RX poll, 4 IB CRCs. */
#define CNUAS_VNIC_VERSION_MINOR	4

/* Frame size limits (whole Ethernet/IB frame, no FCS). */
#define CNUAS_VNIC_MIN_FRAME		1
#define CNUAS_VNIC_MAX_FRAME		9216

/* Ring sizes: power of two, in descriptors. */
#define CNUAS_VNIC_RING_MIN		64
#define CNUAS_VNIC_RING_MAX		4096

/* Most descriptors one TX frame may span (scatter-gather). */
#define CNUAS_VNIC_TX_MAX_SG		32

/* MSI-X vectors. With INTx, all causes share the line. */
#define CNUAS_VNIC_VEC_RX		0
#define CNUAS_VNIC_VEC_TX		1
#define CNUAS_VNIC_VEC_MISC		2
#define CNUAS_VNIC_NUM_VECTORS		3

/* ---- Register offsets (BAR0) ---- */
#define CNUAS_VNIC_REG_MAGIC		0x000	/* RO: CNUAS_VNIC_MAGIC_VALUE */
#define CNUAS_VNIC_REG_VERSION		0x004	/* RO: major << 16 | minor */
#define CNUAS_VNIC_REG_FEATURES		0x008	/* RO: CNUAS_VNIC_F_* offered */
#define CNUAS_VNIC_REG_DRV_FEATURES	0x00c	/* RW: features the driver uses */
#define CNUAS_VNIC_REG_CTRL		0x010	/* RW: CNUAS_VNIC_CTRL_* */
#define CNUAS_VNIC_REG_STATUS		0x014	/* RO: CNUAS_VNIC_STATUS_* */
#define CNUAS_VNIC_REG_LINK_LAYER	0x018	/* RO: CNUAS_VNIC_LL_* */
#define CNUAS_VNIC_REG_LINK_SPEED	0x01c	/* RO: link speed, Mb/s */
#define CNUAS_VNIC_REG_MAC_LO		0x020	/* RO: MAC bytes 0..3 */
#define CNUAS_VNIC_REG_MAC_HI		0x024	/* RO: MAC bytes 4..5 */
#define CNUAS_VNIC_REG_MAX_FRAME	0x028	/* RO: CNUAS_VNIC_MAX_FRAME */
#define CNUAS_VNIC_REG_ERROR		0x02c	/* RO: first CNUAS_VNIC_ERR_* seen */

#define CNUAS_VNIC_REG_INT_STATUS	0x040	/* RO: pending causes (INTx) */
#define CNUAS_VNIC_REG_INT_ACK		0x044	/* WO: write 1s to clear causes */
#define CNUAS_VNIC_REG_INT_MASK		0x048	/* RO: masked causes */
#define CNUAS_VNIC_REG_INT_MASK_SET	0x04c	/* WO: mask causes */
#define CNUAS_VNIC_REG_INT_MASK_CLR	0x050	/* WO: unmask causes */
#define CNUAS_VNIC_REG_INT_DELAY	0x054	/* RW: moderation, microseconds */
#define CNUAS_VNIC_REG_INT_REARM	0x058	/* WO: see F_INT_AUTOMASK */

/* Status block: 64 bytes of guest memory the device keeps up to date. */
#define CNUAS_VNIC_REG_SB_LO		0x060
#define CNUAS_VNIC_REG_SB_HI		0x064

/* Queue registers: TX queue at 0x100, RX queue at 0x200. */
#define CNUAS_VNIC_REG_TXQ		0x100
#define CNUAS_VNIC_REG_RXQ		0x200
#define CNUAS_VNIC_Q_BASE_LO		0x00	/* RW while disabled */
#define CNUAS_VNIC_Q_BASE_HI		0x04	/* RW while disabled */
#define CNUAS_VNIC_Q_SIZE		0x08	/* RW while disabled */
#define CNUAS_VNIC_Q_PROD		0x0c	/* WO doorbell: driver producer */
#define CNUAS_VNIC_Q_CONS		0x10	/* RO: device consumer */
#define CNUAS_VNIC_Q_STATE		0x14	/* RO: CNUAS_VNIC_QS_* */

/* Per-device counters, RO, 32 bit, wrap around. */
#define CNUAS_VNIC_REG_STATS		0x300
#define CNUAS_VNIC_STAT_TX_FRAMES	0x00
#define CNUAS_VNIC_STAT_TX_BYTES	0x04	/* low 32 bits */
#define CNUAS_VNIC_STAT_RX_FRAMES	0x08
#define CNUAS_VNIC_STAT_RX_BYTES	0x0c	/* low 32 bits */
#define CNUAS_VNIC_STAT_TX_DOORBELLS	0x10
#define CNUAS_VNIC_STAT_IRQS		0x14
#define CNUAS_VNIC_STAT_RX_OVERSIZE	0x18	/* frame larger than buffer */
#define CNUAS_VNIC_STAT_TX_LINK_DOWN	0x1c	/* TX discarded, link down */
#define CNUAS_VNIC_STAT_RX_STALLS	0x20	/* RX paused: no buffers */
#define CNUAS_VNIC_STAT_TX_STALLS	0x24	/* TX paused: switch full */
#define CNUAS_VNIC_STAT_GUEST_ERRORS	0x28
#define CNUAS_VNIC_STAT_RX_POLLS	0x2c	/* RX poll page reads (1.3) */
#define CNUAS_VNIC_STAT_RX_POLL_FRAMES	0x30	/* frames those reads moved */
#define CNUAS_VNIC_NUM_STATS		13
#define CNUAS_VNIC_NUM_STATS_1_2	11	/* devices before 1.3 */

/* ---- Register bits ---- */

/* FEATURES / DRV_FEATURES */
#define CNUAS_VNIC_F_TX_SG		(1u << 0)	/* TX chains (F_MORE) */
#define CNUAS_VNIC_F_STATUS_BLOCK	(1u << 1)	/* status block writes */
#define CNUAS_VNIC_F_INT_DELAY		(1u << 2)	/* interrupt moderation */
#define CNUAS_VNIC_F_INT_AUTOMASK	(1u << 3)	/* see below (1.2) */
#define CNUAS_VNIC_F_RX_POLL		(1u << 4)	/* see below (1.3) */
#define CNUAS_VNIC_F_RDMA_ICRC		(1u << 8)	/* RoCEv2 ICRC, see below */
#define CNUAS_VNIC_F_IB_CRC		(1u << 9)	/* IB ICRC, VCRC (1.4) */
/* Bits 10..15 reserved for further RDMA offloads (segmentation). */

/* CTRL */
#define CNUAS_VNIC_CTRL_RESET		(1u << 0)	/* self-clearing */
#define CNUAS_VNIC_CTRL_ENABLE		(1u << 1)	/* queues are live */

/* STATUS */
#define CNUAS_VNIC_STATUS_LINK_UP	(1u << 0)
#define CNUAS_VNIC_STATUS_ENABLED	(1u << 1)
#define CNUAS_VNIC_STATUS_ERROR		(1u << 2)	/* a queue is dead */

/* LINK_LAYER */
#define CNUAS_VNIC_LL_ETH		0
#define CNUAS_VNIC_LL_IB		1

/* Interrupt causes, also the bit in INT_* registers. */
#define CNUAS_VNIC_INT_RX		(1u << 0)
#define CNUAS_VNIC_INT_TX		(1u << 1)
#define CNUAS_VNIC_INT_MISC		(1u << 2)	/* link change, error */
#define CNUAS_VNIC_INT_ALL		0x7u

/*
 * F_INT_AUTOMASK: with MSI-X, delivering the RX or the TX vector also
 * masks both causes, as an INT_MASK_SET of RX | TX would, so an interrupt
 * handler that only schedules its poll writes no register. INT_REARM ends
 * the poll in one write: the causes in bits 16..18 that wait behind the
 * mask are forgotten (the poll handled them), then the causes in bits
 * 0..2 are unmasked, and one still waiting fires at once.
 */
#define CNUAS_VNIC_INT_REARM_DROP_SHIFT	16

/*
 * F_RX_POLL: a 32-bit read at offset 0 of BAR2, while the driver enabled
 * the feature, makes the device move the frames waiting on its link into
 * posted RX buffers at once, in the reader's time, rather than whenever
 * the device next services the link on its own; it returns how many it
 * moved (0 when the feature is off). Delivery, status block and
 * interrupts are exactly as for any other frame. The page holds nothing
 * else and ignores writes, so a driver may map it into user space for
 * busy-polling consumers.
 */
#define CNUAS_VNIC_POLL_RX		0x000

/* Q_STATE */
#define CNUAS_VNIC_QS_DISABLED		0
#define CNUAS_VNIC_QS_RUNNING		1
#define CNUAS_VNIC_QS_DEAD		2	/* guest error; reset to recover */

/* ERROR codes (REG_ERROR, first one wins until reset) */
#define CNUAS_VNIC_ERR_NONE		0
#define CNUAS_VNIC_ERR_RING_DMA		1	/* ring or status block unreadable */
#define CNUAS_VNIC_ERR_BUF_DMA		2	/* buffer address not in memory */
#define CNUAS_VNIC_ERR_BAD_LEN		3	/* zero, too long, or chain too long */
#define CNUAS_VNIC_ERR_BAD_PROD		4	/* producer ran ahead of ring */
#define CNUAS_VNIC_ERR_BAD_SETUP	5	/* base/size invalid at enable */

/* ---- In-memory structures ---- */

/*
 * Descriptor, 16 bytes, in a ring of Q_SIZE entries at Q_BASE (16-byte
 * aligned). Indices are free-running 32-bit counters; the slot is
 * index & (size - 1).
 *
 * TX: addr/len give one buffer; F_MORE says the frame continues in the
 * next descriptor. The device does not write TX descriptors back; it
 * publishes its consumer index in the status block.
 *
 * RX: the driver posts addr/len (buffer size). The device writes one
 * frame per descriptor, then stores the frame length in len and sets
 * F_DONE in flags (F_ERR if the frame did not fit: it is counted in
 * RX_OVERSIZE and the buffer is returned empty).
 */
struct cnuas_vnic_desc {
	cnuas_le64 addr;
	cnuas_le32 len;
	cnuas_le16 flags;
	cnuas_le16 reserved;
};

#define CNUAS_VNIC_DESC_F_MORE		(1u << 0)	/* TX: chained */
#define CNUAS_VNIC_DESC_F_DONE		(1u << 1)	/* RX: written */
#define CNUAS_VNIC_DESC_F_ERR		(1u << 2)	/* RX: dropped */
#define CNUAS_VNIC_DESC_F_ICRC		(1u << 3)	/* TX: fill the ICRC */
#define CNUAS_VNIC_DESC_F_ICRC_OK	(1u << 4)	/* RX: ICRC checked, good */
#define CNUAS_VNIC_DESC_F_ICRC_BAD	(1u << 5)	/* RX: ICRC checked, bad */
#define CNUAS_VNIC_DESC_F_VCRC_BAD	(1u << 6)	/* RX: VCRC bad (F_IB_CRC) */

/*
 * RoCEv2 ICRC offload (F_RDMA_ICRC, when the driver enabled it). A RoCEv2
 * frame is Ethernet (at most one 802.1Q tag), IPv4 (no fragment) or IPv6
 * (UDP as next header), UDP to port 4791, then at least a BTH and the
 * 4-byte ICRC, all inside the frame.
 *
 * TX: F_ICRC on the first descriptor of a frame asks the device to compute
 * the ICRC (IBA Annex A17) and store it, least significant byte first, in
 * the last four bytes of the UDP datagram; for IPv6 it then also computes
 * the UDP checksum (the driver leaves both zero). A frame that is not
 * RoCEv2 is sent unchanged and counted in GUEST_ERRORS; the queue lives.
 *
 * RX: the device checks the ICRC of every RoCEv2 frame it delivers and
 * sets F_ICRC_OK or F_ICRC_BAD in its descriptor; other frames get
 * neither, and the driver checks them itself if it cares.
 *
 * InfiniBand CRC offload (F_IB_CRC, offered only with LINK_LAYER IB, when
 * the driver enabled it): the device is the link layer that adds and
 * strips the VCRC (cnuas_ib_link.h), and seals and checks ICRCs. An IB
 * transport packet is a frame whose LRH has LVer 0, LNH 2 (BTH) or 3 (GRH,
 * then BTH), room for those headers and the ICRC, and PktLen (4-byte
 * words) equal to its length without the VCRC.
 *
 * TX: the driver posts LRH through ICRC, at most MAX_FRAME - 2 bytes. With
 * F_ICRC on the first descriptor the device computes the ICRC of an IB
 * transport packet into its last four bytes (a frame that is not one is
 * sent unchanged and counted in GUEST_ERRORS; the queue lives). Then it
 * appends the VCRC to every frame.
 *
 * RX: the device checks the VCRC of every frame. A bad one (or a frame too
 * short to have one) is delivered as received with F_VCRC_BAD, for the
 * driver to count and drop. A good one is delivered without its VCRC, and
 * an IB transport packet with F_ICRC_OK or F_ICRC_BAD.
 */

/*
 * Status block, 64 bytes at SB (64-byte aligned), written by the device
 * before it raises the matching interrupt, so the driver's poll loop
 * reads memory instead of registers.
 */
struct cnuas_vnic_status_block {
	cnuas_le32 tx_cons;	/* TX descriptors consumed */
	cnuas_le32 rx_prod;	/* RX descriptors filled */
	cnuas_le32 status;	/* copy of REG_STATUS */
	cnuas_le32 reserved[13];
};

#undef cnuas_le16
#undef cnuas_le32
#undef cnuas_le64

#endif /* CNUAS_VNIC_HW_H */
