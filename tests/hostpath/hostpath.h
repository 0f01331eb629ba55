/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * cnuas-hostpath: the host path's own ceiling. Two cnuas-vnic devices (real
 * QEMU processes, -accel qtest, no guest) per pair move frames through the
 * real cnuas-vswitchd; this program plays both drivers. Guest RAM is a
 * shared file the harness maps, so descriptors and the status block are
 * plain memory here; the qtest socket carries only the doorbells, one per
 * batch, never waited for.
 *
 * Files: qemu_proc.c starts a QEMU and speaks the qtest protocol;
 * vnic_drv.c brings a device up and keeps its rings; cpu_cost.c reads
 * each thread's CPU time; hostpath.c runs the rows and prints them.
 */
#ifndef CNUAS_HOSTPATH_H
#define CNUAS_HOSTPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cnuas_vnic_hw.h"

/* One QEMU process and its qtest connection. */
struct qemu_proc {
	pid_t pid;
	int fd;			/* qtest socket */
	int qmp;		/* QMP socket, or -1 (qemu_args.qmp) */
	char qin[8192];		/* QMP bytes not yet taken as lines */
	size_t qinlen;
	unsigned int pending;	/* replies owed for unanswered commands */
	char in[4096];
	size_t inlen;
	uint8_t *ram;		/* the guest RAM, mapped here */
	size_t ram_size;
	char ram_path[256];
};

struct qemu_args {
	const char *qemu;	/* qemu-system-x86_64 */
	const char *dir;	/* for the qtest socket and the log */
	const char *switch_sock;
	const char *name;	/* unique within dir */
	uint8_t mac[6];
	size_t ram_size;
	bool shm_ring;		/* x-shm-ring=on: offer the switch shared-memory rings */
	bool qmp;		/* a QMP connection (qemu_qmp) */
	bool stopped;		/* -S: the VM does not run until QMP's cont */
	const char *incoming;	/* -incoming URI: a migration target */
};

int qemu_start(struct qemu_proc *q, const struct qemu_args *a);
void qemu_stop(struct qemu_proc *q);
/* A command whose reply is waited for; *val gets the value, if any. */
int qemu_cmd(struct qemu_proc *q, uint64_t *val, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A command whose reply is collected later by qemu_drain(). */
int qemu_post(struct qemu_proc *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Consume the replies that have arrived; -1 when QEMU went away. */
int qemu_drain(struct qemu_proc *q);
/*
 * A QMP command (one line of JSON); its reply line into out (events are
 * skipped). 0 on a "return", -1 on an "error" or a broken connection.
 */
int qemu_qmp(struct qemu_proc *q, char *out, size_t outlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Guest physical layout (below 4 GiB on q35 RAM is linear from 0). */
#define HP_SB		0x01000000u
#define HP_TX_RING	0x01001000u
#define HP_RX_RING	0x01011000u
#define HP_LEARN_BUF	0x010ff000u
#define HP_TX_BUFS	0x01100000u
#define HP_RX_BUFS	0x02000000u
#define HP_RING		4096u	/* descriptors per ring */
#define HP_TX_NBUF	256u	/* distinct TX buffers, reused round robin */
#define HP_BUF		CNUAS_VNIC_MAX_FRAME
#define HP_RAM		(HP_RX_BUFS + HP_RING * HP_BUF + (8u << 20))
#define HP_BAR0		0xe0000000u
#define HP_BAR2		0xe0010000u	/* the RX poll page (F_RX_POLL) */

/* One device as the harness drives it. */
struct vnic {
	struct qemu_proc qp;
	uint8_t mac[6];
	uint32_t tx_prod;	/* TX doorbell value */
	uint32_t rx_prod;	/* RX buffers posted */
	uint32_t rx_seen;	/* RX descriptors checked */
	uint64_t rx_frames;	/* data frames of the right size */
	uint64_t rx_bad;	/* anything else */
	uint32_t frame_len;	/* data frames expected / sent */
	uint32_t alt_len;	/* frames of this length counted apart, or 0 */
	uint64_t rx_alt;	/* ... in here, not as rx_bad */
	uint32_t rx_window;	/* RX buffers kept posted; 0: the whole ring */
	bool rx_poll;		/* F_RX_POLL: the poll page at HP_BAR2 */
};

int vnic_up(struct vnic *v);
void vnic_set_frames(struct vnic *v, const uint8_t *dst, uint32_t len);
uint32_t vnic_tx_cons(const struct vnic *v);
uint32_t vnic_rx_cons(const struct vnic *v);
/* Send one broadcast so the switch learns the MAC; waits until sent. */
int vnic_announce(struct vnic *v);
/* Keep the TX ring full to within a batch; true if it rang. */
bool vnic_tx_fill(struct vnic *v, uint32_t batch);
/* Check what arrived and repost; true if it rang. */
bool vnic_rx_refill(struct vnic *v, uint32_t batch);
uint32_t vnic_stat(struct vnic *v, unsigned int off);
/* One read of the RX poll page, as a busy-polling guest: frames it moved. */
uint32_t vnic_poll(struct vnic *v);

/*
 * Parts of the path whose CPU time is counted: the sender's main thread
 * (doorbell, TX run, sendmmsg) and its other threads, the switch, the
 * receiver's RX thread (recvmmsg, RX delivery) and its other threads,
 * this harness.
 */
enum cpu_part {
	CPU_TX_MAIN, CPU_TX_OTHER, CPU_SWITCH, CPU_RX_THREAD, CPU_RX_OTHER,
	CPU_HARNESS, CPU_PARTS
};

struct cpu_cost {
	uint64_t ns[CPU_PARTS];
};

extern const char *const cpu_part_name[CPU_PARTS];
void cpu_sample(const struct vnic *v, unsigned int pairs, int switch_pid,
		struct cpu_cost *c);

#endif /* CNUAS_HOSTPATH_H */
