// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-badring: hand a cnuas-vnic (with no driver bound) a hostile TX
 * ring from user space, through BAR0 mmap of sysfs resource0, and report
 * how the device reacted.  Used by the lab's garbage-descriptor test.
 *
 *   cnuas-badring BDF MODE      MODE: bad-addr | bad-len | zero-len | bad-prod
 *
 * Prints key=value lines; exit 0 when the device declared the TX queue
 * dead with an error code (the expected, safe outcome), 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cnuas_vnic_hw.h"

static volatile uint32_t *regs;

static uint32_t rd(uint32_t off)
{
	return regs[off / 4];
}

static void wr(uint32_t off, uint32_t v)
{
	regs[off / 4] = v;
	__sync_synchronize();
}

static void die(const char *what)
{
	fprintf(stderr, "cnuas-badring: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Guest-physical address of a locked page, from /proc/self/pagemap. */
static uint64_t phys_of(void *va)
{
	uint64_t ent;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	long pg = sysconf(_SC_PAGESIZE);

	if (fd < 0)
		die("open pagemap");
	if (pread(fd, &ent, sizeof(ent), (off_t)((uintptr_t)va / (uintptr_t)pg) * 8) != sizeof(ent))
		die("read pagemap");
	close(fd);
	if (!(ent & (1ULL << 63)) || !(ent & ((1ULL << 55) - 1))) {
		errno = EFAULT;
		die("page not present or PFN hidden");
	}
	return (ent & ((1ULL << 55) - 1)) * (uint64_t)pg + ((uintptr_t)va % (uintptr_t)pg);
}

static void pci_enable(const char *bdf)
{
	char path[256];
	uint16_t cmd;
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", bdf);
	fd = open(path, O_RDWR);
	if (fd < 0)
		die("open config");
	if (pread(fd, &cmd, 2, 4) != 2)
		die("read command register");
	cmd |= 0x6; /* memory space + bus master */
	if (pwrite(fd, &cmd, 2, 4) != 2)
		die("write command register");
	close(fd);
}

int main(int argc, char **argv)
{
	const char *bdf, *mode;
	char path[256];
	struct stat st;
	struct cnuas_vnic_desc *tx, *rx;
	uint8_t *page;
	uint64_t pa;
	uint32_t qstate, err, status, prod = 1;
	int fd, i;

	if (argc != 3) {
		fprintf(stderr, "usage: cnuas-badring BDF bad-addr|bad-len|zero-len|bad-prod\n");
		return 2;
	}
	bdf = argv[1];
	mode = argv[2];
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", bdf);
	if (lstat(path, &st) == 0) {
		fprintf(stderr, "cnuas-badring: %s still has a driver; unbind it first\n", bdf);
		return 2;
	}
	pci_enable(bdf);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", bdf);
	fd = open(path, O_RDWR | O_SYNC);
	if (fd < 0)
		die("open resource0");
	regs = mmap(NULL, CNUAS_VNIC_REGS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (regs == MAP_FAILED)
		die("mmap resource0");
	if (rd(CNUAS_VNIC_REG_MAGIC) != CNUAS_VNIC_MAGIC_VALUE) {
		fprintf(stderr, "cnuas-badring: bad magic 0x%x\n", rd(CNUAS_VNIC_REG_MAGIC));
		return 2;
	}

	/* One locked page: TX ring, RX ring, status block. */
	page = aligned_alloc(4096, 4096);
	if (!page || mlock(page, 4096))
		die("mlock");
	memset(page, 0, 4096);
	pa = phys_of(page);
	tx = (struct cnuas_vnic_desc *)page;
	rx = (struct cnuas_vnic_desc *)(page + 1024);
	(void)rx;

	wr(CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_RESET);
	usleep(1000);
	tx[0].addr = pa + 3072;
	tx[0].len = 64;
	if (!strcmp(mode, "bad-addr")) {
		tx[0].addr = 0xdead0000000ULL; /* far beyond guest RAM */
	} else if (!strcmp(mode, "bad-len")) {
		tx[0].len = 0x7fffffff;
	} else if (!strcmp(mode, "zero-len")) {
		tx[0].len = 0;
	} else if (!strcmp(mode, "bad-prod")) {
		prod = 100000; /* far more than the ring holds */
	} else {
		fprintf(stderr, "cnuas-badring: unknown mode %s\n", mode);
		return 2;
	}
	/* A chain that never ends, for good measure, in the other slots. */
	for (i = 1; i < 64; i++) {
		tx[i].addr = pa + 3072;
		tx[i].len = 64;
		tx[i].flags = CNUAS_VNIC_DESC_F_MORE;
	}
	__sync_synchronize();
	wr(CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_BASE_LO, (uint32_t)pa);
	wr(CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_BASE_HI, (uint32_t)(pa >> 32));
	wr(CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_SIZE, 64);
	wr(CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_BASE_LO, (uint32_t)(pa + 1024));
	wr(CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_BASE_HI, (uint32_t)((pa + 1024) >> 32));
	wr(CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_SIZE, 64);
	wr(CNUAS_VNIC_REG_SB_LO, (uint32_t)(pa + 2048));
	wr(CNUAS_VNIC_REG_SB_HI, (uint32_t)((pa + 2048) >> 32));
	wr(CNUAS_VNIC_REG_INT_MASK_SET, CNUAS_VNIC_INT_ALL);
	wr(CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_ENABLE);
	wr(CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, prod);

	/* The device works in a bottom half: give it time. */
	for (i = 0; i < 50; i++) {
		usleep(20000);
		if (rd(CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE) == CNUAS_VNIC_QS_DEAD)
			break;
	}
	qstate = rd(CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE);
	err = rd(CNUAS_VNIC_REG_ERROR);
	status = rd(CNUAS_VNIC_REG_STATUS);
	printf("mode=%s txq_state=%u error=%u status=0x%x guest_errors=%u\n", mode, qstate, err,
	       status, rd(CNUAS_VNIC_REG_STATS + CNUAS_VNIC_STAT_GUEST_ERRORS));

	/* Leave the device quiet for the driver. */
	wr(CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_RESET);
	usleep(1000);
	return (qstate == CNUAS_VNIC_QS_DEAD && err != CNUAS_VNIC_ERR_NONE) ? 0 : 1;
}
