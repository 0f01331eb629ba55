/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest for the cnuas-vnic device: registers, TX and RX through a real
 * SOCK_SEQPACKET socket that the test plays the switch on, back-pressure,
 * hostile descriptors, link state, MSI-X masking and hot-unplug.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qemu/atomic.h"
#include "qemu/bswap.h"
#include <sys/mman.h>
#include "cnuas-qtest-harness.h"
#include "hw/pci/pci_regs.h"
#include "hw/net/cnuas_vnic_hw.h"
#include "hw/net/cnuas_ib_link.h"
#include "hw/net/cnuas_shm_ring.h"
/* Frames captured from Linux Soft-RoCE (copied in by the Cnuas build). */
#include "cnuas-rxe-frames.h"

#define TEST_MAC        "52:54:00:12:34:56"
#define RING            64
#define WAIT_US         CNUAS_QTEST_WAIT_US
#define BUF_SIZE        CNUAS_VNIC_MAX_FRAME

typedef struct Vnic {
    QOSState *qs;
    QTestState *qts;
    QPCIDevice *dev;
    QPCIBar bar;
    char *dir;
    char *path;
    int lfd;                    /* listening socket: the "switch" */
    int cfd;                    /* the device's connection */
    uint64_t txring, rxring, sb, txbuf, rxbuf;
    uint32_t txprod, rxprod;
} Vnic;

static uint32_t rd(Vnic *v, uint32_t reg)
{
    return qpci_io_readl(v->dev, v->bar, reg);
}

static void wr(Vnic *v, uint32_t reg, uint32_t val)
{
    qpci_io_writel(v->dev, v->bar, reg, val);
}

static uint32_t vstat(Vnic *v, uint32_t off)
{
    return rd(v, CNUAS_VNIC_REG_STATS + off);
}

static bool wait_reg(Vnic *v, uint32_t reg, uint32_t mask, uint32_t want)
{
    return cnuas_qtest_wait_reg(v->dev, v->bar, reg, mask, want);
}

static Vnic *vnic_new(const char *extra, bool with_socket)
{
    Vnic *v = g_new0(Vnic, 1);
    QPCIDevice *dev;

    v->path = cnuas_qtest_sock_path("cnuas-vnic-XXXXXX", "sw.sock", &v->dir);
    v->lfd = -1;
    v->cfd = -1;
    if (with_socket) {
        v->lfd = cnuas_qtest_listen(v->path);
    }
    v->qs = qtest_pc_boot("-nodefaults -device cnuas-vnic,id=nic0,addr=0x4,"
                          "mac=" TEST_MAC "%s%s%s",
                          with_socket ? ",socket_path=" : "",
                          with_socket ? v->path : "", extra ? extra : "");
    v->qts = v->qs->qts;
    dev = cnuas_qtest_find_dev(v->qs->pcibus, CNUAS_VNIC_VENDOR_ID,
                               CNUAS_VNIC_DEVICE_ID);
    v->dev = dev;
    v->bar = qpci_iomap(dev, CNUAS_VNIC_BAR_REGS, NULL);
    qpci_device_enable(dev);
    /* An IB link comes up only once the driver enables the device. */
    if (with_socket && !(extra && strstr(extra, "link_layer=ib"))) {
        v->cfd = cnuas_qtest_accept(v->lfd);
    }

    v->txring = guest_alloc(&v->qs->alloc, RING * 16);
    v->rxring = guest_alloc(&v->qs->alloc, RING * 16);
    v->sb = guest_alloc(&v->qs->alloc, 64);
    v->txbuf = guest_alloc(&v->qs->alloc, 40 * BUF_SIZE);
    v->rxbuf = guest_alloc(&v->qs->alloc, RING * BUF_SIZE);
    return v;
}

static void vnic_free(Vnic *v)
{
    cnuas_qtest_close(v->cfd);
    cnuas_qtest_close(v->lfd);
    g_free(v->dev);
    qtest_shutdown(v->qs);
    cnuas_qtest_sock_path_free(v->dir, v->path);
    g_free(v);
}

/* Driver bring-up with @features and a status block. */
static void vnic_start_with(Vnic *v, uint32_t features)
{
    wr(v, CNUAS_VNIC_REG_DRV_FEATURES, features);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_BASE_LO, (uint32_t)v->txring);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_BASE_HI, v->txring >> 32);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_SIZE, RING);
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_BASE_LO, (uint32_t)v->rxring);
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_BASE_HI, v->rxring >> 32);
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_SIZE, RING);
    wr(v, CNUAS_VNIC_REG_SB_LO, (uint32_t)v->sb);
    wr(v, CNUAS_VNIC_REG_SB_HI, v->sb >> 32);
    wr(v, CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_ENABLE);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_STATUS) & CNUAS_VNIC_STATUS_ENABLED,
                    ==, CNUAS_VNIC_STATUS_ENABLED);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE), ==,
                     CNUAS_VNIC_QS_RUNNING);
    v->txprod = 0;
    v->rxprod = 0;
}

static void vnic_start(Vnic *v)
{
    vnic_start_with(v, rd(v, CNUAS_VNIC_REG_FEATURES));
}

static void vnic_reset(Vnic *v)
{
    wr(v, CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_RESET);
}

static void put_desc(Vnic *v, uint64_t ring, uint32_t idx, uint64_t addr,
                     uint32_t len, uint16_t flags)
{
    struct cnuas_vnic_desc d = {
        .addr = cpu_to_le64(addr),
        .len = cpu_to_le32(len),
        .flags = cpu_to_le16(flags),
    };

    qtest_memwrite(v->qts, ring + (idx % RING) * sizeof(d), &d, sizeof(d));
}

static void get_desc(Vnic *v, uint64_t ring, uint32_t idx,
                     struct cnuas_vnic_desc *d)
{
    qtest_memread(v->qts, ring + (idx % RING) * sizeof(*d), d, sizeof(*d));
}

static uint32_t sb_field(Vnic *v, unsigned word)
{
    return qtest_readl(v->qts, v->sb + 4 * word);
}

/* Receive one frame as the switch; returns its length, -1 on timeout. */
static ssize_t sw_recv(Vnic *v, uint8_t *buf, size_t size, int timeout_ms)
{
    struct pollfd pfd = { .fd = v->cfd, .events = POLLIN };

    if (poll(&pfd, 1, timeout_ms) != 1) {
        return -1;
    }
    return recv(v->cfd, buf, size, MSG_DONTWAIT);
}

static void sw_send(Vnic *v, const uint8_t *buf, size_t len)
{
    g_assert_cmpint(send(v->cfd, buf, len, 0), ==, len);
}

/*
 * Reference CRCs for the IB offload, bit by bit as the IBA defines them
 * (7.8.1, 7.8.2), apart from the table-driven code under test.
 */
static uint32_t ref_crc32(const uint8_t *p, size_t len)
{
    uint32_t crc = 0xffffffff;
    unsigned b;

    while (len--) {
        crc ^= *p++;
        for (b = 0; b < 8; b++) {
            crc = crc & 1 ? crc >> 1 ^ 0xedb88320 : crc >> 1;
        }
    }
    return ~crc;
}

static uint16_t ref_vcrc(const uint8_t *p, size_t len)
{
    uint16_t crc = 0xffff;
    unsigned b;

    while (len--) {
        crc ^= *p++;
        for (b = 0; b < 8; b++) {
            crc = crc & 1 ? crc >> 1 ^ 0xd008 : crc >> 1;
        }
    }
    return crc ^ 0xffff;
}

/* The ICRC of the IB packet @f (LRH through ICRC, @len bytes). */
static uint32_t ref_ib_icrc(const uint8_t *f, size_t len)
{
    g_autofree uint8_t *m = g_memdup2(f, len - 4);
    size_t bth = 8;

    if ((m[1] & 3) == 3) {          /* global: LRH, GRH's variant fields */
        memset(m, 0xff, 8);
        m[8] |= 0x0f;
        m[9] = m[10] = m[11] = 0xff;
        m[15] = 0xff;
        bth += 40;
    } else {
        m[0] |= 0xf0;               /* VL */
    }
    m[bth + 4] = 0xff;              /* FECN, BECN, resv6a */
    return ref_crc32(m, len - 4);
}

/* As the switch, send @len bytes, with a VCRC behind them when @ib. */
static void sw_send_ll(Vnic *v, const uint8_t *buf, size_t len, bool ib)
{
    g_autofree uint8_t *f = g_malloc(len + 2);

    memcpy(f, buf, len);
    stw_le_p(f + len, ref_vcrc(buf, len));
    g_assert_cmpint(send(v->cfd, f, len + (ib ? 2 : 0), 0), ==,
                    len + (ib ? 2 : 0));
}

static void test_registers(void)
{
    Vnic *v = vnic_new(NULL, true);
    uint32_t off;

    g_assert_cmphex(qpci_config_readw(v->dev, PCI_CLASS_DEVICE), ==, 0x0200);
    g_assert_cmphex(qpci_config_readb(v->dev, PCI_REVISION_ID), ==,
                    CNUAS_VNIC_REVISION);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_MAGIC), ==, CNUAS_VNIC_MAGIC_VALUE);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_VERSION), ==,
                    CNUAS_VNIC_VERSION_MAJOR << 16 | CNUAS_VNIC_VERSION_MINOR);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_FEATURES), ==,
                    CNUAS_VNIC_F_TX_SG | CNUAS_VNIC_F_STATUS_BLOCK |
                    CNUAS_VNIC_F_INT_DELAY | CNUAS_VNIC_F_INT_AUTOMASK |
                    CNUAS_VNIC_F_RX_POLL | CNUAS_VNIC_F_RDMA_ICRC);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_MAC_LO), ==, 0x12005452);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_MAC_HI), ==, 0x5634);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_LINK_LAYER), ==, CNUAS_VNIC_LL_ETH);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_LINK_SPEED), ==, 400000);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_MAX_FRAME), ==,
                     CNUAS_VNIC_MAX_FRAME);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATUS, ~0u,
                      CNUAS_VNIC_STATUS_LINK_UP));

    /* Program everything, run, then CTRL.RESET brings back power-on. */
    vnic_start(v);
    wr(v, CNUAS_VNIC_REG_INT_MASK_SET, CNUAS_VNIC_INT_RX);
    wr(v, CNUAS_VNIC_REG_INT_DELAY, 50);
    put_desc(v, v->txring, 0, v->txbuf, 60, 0);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, 1);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS, ~0u, 1));
    /* Setup registers are locked while enabled. */
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_SIZE, 128);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_SIZE), ==, RING);

    vnic_reset(v);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_CTRL), ==, 0);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_DRV_FEATURES), ==, 0);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_STATUS), ==,
                    CNUAS_VNIC_STATUS_LINK_UP);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_ERROR), ==, 0);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, 0);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_MASK), ==, 0);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_DELAY), ==, 0);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_SB_LO), ==, 0);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_SB_HI), ==, 0);
    for (off = 0; off <= CNUAS_VNIC_Q_STATE; off += 4) {
        g_assert_cmphex(rd(v, CNUAS_VNIC_REG_TXQ + off), ==, 0);
        g_assert_cmphex(rd(v, CNUAS_VNIC_REG_RXQ + off), ==, 0);
    }
    for (off = 0; off < 4 * CNUAS_VNIC_NUM_STATS; off += 4) {
        g_assert_cmphex(vstat(v, off), ==, 0);
    }
    /* MAGIC etc. survive, and the socket stays connected. */
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_MAGIC), ==, CNUAS_VNIC_MAGIC_VALUE);
    vnic_free(v);
}

static void test_properties(void)
{
    Vnic *v = vnic_new(",link_layer=ib,x-speed=8,x-width=4", false);

    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_LINK_LAYER), ==, CNUAS_VNIC_LL_IB);
    /* 8 GT/s x4 at 128b/130b = 31.5 Gb/s -> 25G */
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_LINK_SPEED), ==, 25000);
    /* No socket_path: link down forever. */
    g_usleep(600 * 1000);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_STATUS), ==, 0);
    /* A conventional PCI bus: no PCIe capability. */
    g_assert_cmpuint(qpci_find_capability(v->dev, PCI_CAP_ID_EXP, 0), ==, 0);
    g_assert_cmpuint(qpci_find_capability(v->dev, PCI_CAP_ID_MSIX, 0), !=, 0);
    vnic_free(v);
}

/* Boot with @args and read the MAC of the cnuas-vnic in @slot. */
static uint64_t boot_mac(const char *args, int slot)
{
    QOSState *qs = qtest_pc_boot("-nodefaults %s", args);
    QPCIDevice *dev = qpci_device_find(qs->pcibus, QPCI_DEVFN(slot, 0));
    QPCIBar bar;
    uint64_t mac;

    g_assert(dev);
    bar = qpci_iomap(dev, CNUAS_VNIC_BAR_REGS, NULL);
    qpci_device_enable(dev);
    mac = qpci_io_readl(dev, bar, CNUAS_VNIC_REG_MAC_LO) |
          (uint64_t)qpci_io_readl(dev, bar, CNUAS_VNIC_REG_MAC_HI) << 32;
    g_free(dev);
    qtest_shutdown(qs);
    return mac;
}

/*
 * Without mac=, the MAC comes from -uuid and the device: unique per VM
 * and NIC, the same on every start (and so on a migration destination).
 * On a fabric without either, the device does not start.
 */
static void test_default_mac(void)
{
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");
    const char *u1 = "-uuid 6c3e3ad4-3c51-4b8f-9d1e-0f6a2b7c8d91";
    const char *nics = "-device cnuas-vnic,id=nic0,addr=0x4,"
                       "socket_path=/nonexistent/sw.sock "
                       "-device cnuas-vnic,id=nic1,addr=0x5,"
                       "socket_path=/nonexistent/sw.sock";
    g_autofree char *a1 = g_strdup_printf("%s %s", u1, nics);
    g_autofree char *a2 = g_strdup_printf("-uuid 0f4b2d1e-8a6c-4c3f-b9e2-"
                                          "7d5a1c0e3b42 %s", nics);
    uint64_t m0 = boot_mac(a1, 4), m1 = boot_mac(a1, 5);
    char *argv[] = { (char *)qemu, (char *)"-M", (char *)"pc",
                     (char *)"-nodefaults", (char *)"-display",
                     (char *)"none", (char *)"-S", (char *)"-device",
                     (char *)"cnuas-vnic,socket_path=/nonexistent/sw.sock",
                     NULL };
    g_autofree char *err = NULL;
    int status;

    g_assert_cmphex(m0 & 3, ==, 2);     /* unicast, locally administered */
    g_assert_cmphex(m1 & 3, ==, 2);
    g_assert_cmphex(m0, !=, m1);
    g_assert_cmphex(boot_mac(a1, 4), ==, m0);
    g_assert_cmphex(boot_mac(a2, 4), !=, m0);

    g_assert(qemu);
    g_assert(g_spawn_sync(NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                          NULL, NULL, &err, &status, NULL));
    g_assert_cmpint(status, !=, 0);
    g_assert(strstr(err, "needs mac= or -uuid"));
}

static void test_pcie_link(void)
{
    QTestState *qts;
    QPCIBus *bus;
    QPCIDevice *dev;
    uint8_t cap;
    uint32_t lnkcap;

    qts = qtest_init("-M q35 -nodefaults -device cnuas-vnic,addr=0x4");
    bus = qpci_new_pc(qts, NULL);
    dev = cnuas_qtest_find_dev(bus, CNUAS_VNIC_VENDOR_ID, CNUAS_VNIC_DEVICE_ID);
    cap = qpci_find_capability(dev, PCI_CAP_ID_EXP, 0);
    g_assert_cmpuint(cap, !=, 0);
    lnkcap = qpci_config_readl(dev, cap + PCI_EXP_LNKCAP);
    g_assert_cmpuint(lnkcap & PCI_EXP_LNKCAP_SLS, ==, 5);       /* 32 GT/s */
    g_assert_cmpuint((lnkcap & PCI_EXP_LNKCAP_MLW) >> 4, ==, 16);
    g_free(dev);
    qpci_free_pc(bus);
    qtest_quit(qts);
}

/* Frames of the sizes the transport uses, some as scatter-gather chains. */
static void test_tx(void)
{
    static const uint32_t sizes[] = { 1, 60, 4096, 9216, 9216, 4096, 60, 1 };
    static const uint8_t segs[] = { 1, 1, 1, 1, 3, 2, 1, 1 };
    Vnic *v = vnic_new(NULL, true);
    g_autofree uint8_t *want = g_malloc(BUF_SIZE);
    g_autofree uint8_t *got = g_malloc(BUF_SIZE + 1);
    unsigned i, s, round, frames = 0;
    uint32_t idx = 0;

    vnic_start(v);
    for (round = 0; round < 12; round++) {
        /* Several frames per doorbell; 12 rounds wrap the 64-entry ring. */
        for (i = 0; i < ARRAY_SIZE(sizes); i++) {
            uint64_t addr = v->txbuf + i * BUF_SIZE;
            uint32_t left = sizes[i], chunk = DIV_ROUND_UP(sizes[i], segs[i]);

            cnuas_qtest_fill(want, sizes[i], round * 16 + i);
            qtest_memwrite(v->qts, addr, want, sizes[i]);
            for (s = 0; s < segs[i]; s++) {
                uint32_t len = MIN(chunk, left);

                put_desc(v, v->txring, idx++, addr + sizes[i] - left, len,
                         left > len ? CNUAS_VNIC_DESC_F_MORE : 0);
                left -= len;
            }
        }
        wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, idx);
        for (i = 0; i < ARRAY_SIZE(sizes); i++) {
            ssize_t n = sw_recv(v, got, BUF_SIZE + 1, 5000);

            cnuas_qtest_fill(want, sizes[i], round * 16 + i);
            g_assert_cmpint(n, ==, sizes[i]);
            g_assert(memcmp(got, want, sizes[i]) == 0);
            frames++;
        }
        g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS, ~0u,
                          idx));
        g_assert_cmpuint(sb_field(v, 0), ==, idx);
        g_assert_cmphex(sb_field(v, 2), ==, CNUAS_VNIC_STATUS_LINK_UP |
                        CNUAS_VNIC_STATUS_ENABLED);
    }
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_TX_FRAMES), ==, frames);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_TX_DOORBELLS), ==, 12);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_TX_STALLS), ==, 0);
    g_assert(rd(v, CNUAS_VNIC_REG_INT_STATUS) & CNUAS_VNIC_INT_TX);
    wr(v, CNUAS_VNIC_REG_INT_ACK, CNUAS_VNIC_INT_ALL);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, 0);
    /* Nothing extra on the wire. */
    g_assert_cmpint(sw_recv(v, got, BUF_SIZE, 100), ==, -1);
    vnic_free(v);
}

static void post_rx(Vnic *v, unsigned n, uint32_t len)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        put_desc(v, v->rxring, v->rxprod,
                 v->rxbuf + (v->rxprod % RING) * BUF_SIZE, len, 0);
        v->rxprod++;
    }
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_PROD, v->rxprod);
}

static void check_rx(Vnic *v, uint32_t idx, uint32_t len, unsigned seed)
{
    g_autofree uint8_t *want = g_malloc(len);
    g_autofree uint8_t *got = g_malloc(len);
    struct cnuas_vnic_desc d;

    get_desc(v, v->rxring, idx, &d);
    g_assert_cmpuint(le32_to_cpu(d.len), ==, len);
    g_assert_cmphex(le16_to_cpu(d.flags), ==, CNUAS_VNIC_DESC_F_DONE);
    cnuas_qtest_fill(want, len, seed);
    qtest_memread(v->qts, le64_to_cpu(d.addr), got, len);
    g_assert(memcmp(got, want, len) == 0);
}

static void test_rx(void)
{
    static const uint32_t sizes[] = { 1, 60, 4096, 9216 };
    Vnic *v = vnic_new(NULL, true);
    g_autofree uint8_t *buf = g_malloc(BUF_SIZE + 100);
    struct cnuas_vnic_desc d;
    unsigned i, round;

    vnic_start(v);
    for (round = 0; round < 20; round++) {
        post_rx(v, ARRAY_SIZE(sizes), BUF_SIZE);
        for (i = 0; i < ARRAY_SIZE(sizes); i++) {
            cnuas_qtest_fill(buf, sizes[i], round * 8 + i);
            sw_send(v, buf, sizes[i]);
        }
        g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u,
                          v->rxprod));
        g_assert_cmpuint(sb_field(v, 1), ==, v->rxprod);
        for (i = 0; i < ARRAY_SIZE(sizes); i++) {
            check_rx(v, v->rxprod - ARRAY_SIZE(sizes) + i, sizes[i],
                     round * 8 + i);
        }
    }
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_FRAMES), ==, 80);
    g_assert(rd(v, CNUAS_VNIC_REG_INT_STATUS) & CNUAS_VNIC_INT_RX);

    /* A frame larger than the posted buffer is returned with F_ERR. */
    post_rx(v, 1, 100);
    cnuas_qtest_fill(buf, 200, 1);
    sw_send(v, buf, 200);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u,
                      v->rxprod));
    get_desc(v, v->rxring, v->rxprod - 1, &d);
    g_assert_cmpuint(le32_to_cpu(d.len), ==, 0);
    g_assert_cmphex(le16_to_cpu(d.flags), ==,
                    CNUAS_VNIC_DESC_F_DONE | CNUAS_VNIC_DESC_F_ERR);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_OVERSIZE), ==, 1);
    /* A frame larger than the maximum is an oversize too, not a crash. */
    post_rx(v, 2, BUF_SIZE);
    sw_send(v, buf, BUF_SIZE + 100);
    cnuas_qtest_fill(buf, 60, 2);
    sw_send(v, buf, 60);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u,
                      v->rxprod));
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_OVERSIZE), ==, 2);
    check_rx(v, v->rxprod - 1, 60, 2);
    vnic_free(v);
}

/*
 * F_RX_POLL: BAR2 reads move waiting frames and count; the RX thread
 * still delivers too, so which of the two moved a frame is not fixed,
 * but the counters must add up and every frame arrive intact.
 */
static void test_rx_poll(void)
{
    Vnic *v = vnic_new(NULL, true);
    QPCIBar poll = qpci_iomap(v->dev, CNUAS_VNIC_BAR_POLL, NULL);
    g_autofree uint8_t *buf = g_malloc(BUF_SIZE);
    uint32_t moved = 0, reads = 0, len;
    int64_t deadline;
    unsigned i;

    /* Feature off: a read does nothing and counts nothing. */
    vnic_start_with(v, rd(v, CNUAS_VNIC_REG_FEATURES) & ~CNUAS_VNIC_F_RX_POLL);
    post_rx(v, 1, BUF_SIZE);
    g_assert_cmpuint(qpci_io_readl(v->dev, poll, CNUAS_VNIC_POLL_RX), ==, 0);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_POLLS), ==, 0);
    vnic_reset(v);

    vnic_start(v);
    g_assert(rd(v, CNUAS_VNIC_REG_DRV_FEATURES) & CNUAS_VNIC_F_RX_POLL);
    /* Without buffers nothing moves: the frame waits on the socket. */
    cnuas_qtest_fill(buf, 60, 1);
    sw_send(v, buf, 60);
    g_assert_cmpuint(qpci_io_readl(v->dev, poll, CNUAS_VNIC_POLL_RX), ==, 0);
    reads++;
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS), ==, 0);
    for (i = 0; i < 40; i++) {
        len = i ? 100 + i * 200 : 60;
        if (i) {
            cnuas_qtest_fill(buf, len, i + 1);
            sw_send(v, buf, len);
        }
        post_rx(v, 1, BUF_SIZE);
        deadline = g_get_monotonic_time() + WAIT_US;
        while (rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS) != v->rxprod) {
            g_assert(g_get_monotonic_time() < deadline);
            moved += qpci_io_readl(v->dev, poll, CNUAS_VNIC_POLL_RX);
            reads++;
        }
        check_rx(v, v->rxprod - 1, len, i + 1);
    }
    /*
     * A guest that stops reading right after a read still gets its
     * frames: the device only leaves the socket to reads for a while.
     */
    post_rx(v, 1, BUF_SIZE);
    moved += qpci_io_readl(v->dev, poll, CNUAS_VNIC_POLL_RX);
    reads++;
    cnuas_qtest_fill(buf, 60, 99);
    sw_send(v, buf, 60);
    deadline = g_get_monotonic_time() + WAIT_US;
    while (rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS) != v->rxprod) {
        g_assert(g_get_monotonic_time() < deadline);
        g_usleep(100);
    }
    check_rx(v, v->rxprod - 1, 60, 99);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_FRAMES), ==, 41);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_POLLS), ==, reads);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_POLL_FRAMES), ==, moved);
    g_assert_cmpuint(moved, <=, 40);

    /* Writes and other offsets do nothing, and log nothing. */
    qpci_io_writel(v->dev, poll, CNUAS_VNIC_POLL_RX, ~0u);
    qpci_io_writel(v->dev, poll, 0x100, 1);
    g_assert_cmpuint(qpci_io_readl(v->dev, poll, 0x100), ==, 0);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_POLLS), ==, reads);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_GUEST_ERRORS), ==, 0);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_ERROR), ==, 0);
    vnic_free(v);
}

/* Ones' complement sum of the IPv6 pseudo-header and UDP datagram. */
static uint16_t udp6_sum(const uint8_t *f, uint32_t ip, uint32_t ulen)
{
    uint32_t sum = ulen + 17, i;
    const uint8_t *udp = f + ip + 40;

    for (i = 0; i < 32; i += 2) {
        sum += lduw_be_p(f + ip + 8 + i);
    }
    for (i = 0; i + 1 < ulen; i += 2) {
        sum += lduw_be_p(udp + i);
    }
    if (ulen & 1) {
        sum += udp[ulen - 1] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return sum;
}

static uint16_t rx_one(Vnic *v, const uint8_t *f, uint32_t len)
{
    struct cnuas_vnic_desc d;

    post_rx(v, 1, BUF_SIZE);
    sw_send(v, f, len);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u,
                      v->rxprod));
    get_desc(v, v->rxring, v->rxprod - 1, &d);
    g_assert_cmpuint(le32_to_cpu(d.len), ==, len);
    return le16_to_cpu(d.flags);
}

static void tx_one(Vnic *v, const uint8_t *f, uint32_t len, uint16_t flags,
                   uint8_t *got)
{
    qtest_memwrite(v->qts, v->txbuf, f, len);
    put_desc(v, v->txring, v->txprod++, v->txbuf, len, flags);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, v->txprod);
    g_assert_cmpint(sw_recv(v, got, BUF_SIZE, 5000), ==, len);
}

/* RoCEv2 ICRC offload: Soft-RoCE's own frames are the reference. */
static void test_roce_icrc(void)
{
    static const struct rxe_frame *frames[] = {
        &rc4_send_first, &rc4_send_last, &ud4_send_only, &rc6_send_only,
    };
    const uint16_t ok = CNUAS_VNIC_DESC_F_DONE | CNUAS_VNIC_DESC_F_ICRC_OK;
    const uint16_t bad = CNUAS_VNIC_DESC_F_DONE | CNUAS_VNIC_DESC_F_ICRC_BAD;
    Vnic *v = vnic_new(NULL, true);
    g_autofree uint8_t *f = g_malloc(BUF_SIZE);
    g_autofree uint8_t *got = g_malloc(BUF_SIZE);
    uint32_t errors;
    unsigned i;

    vnic_start(v);
    g_assert(rd(v, CNUAS_VNIC_REG_DRV_FEATURES) & CNUAS_VNIC_F_RDMA_ICRC);
    for (i = 0; i < ARRAY_SIZE(frames); i++) {
        const struct rxe_frame *x = frames[i];
        bool v6 = x->bytes[12] == 0x86;
        uint32_t udp = 14 + (v6 ? 40 : 20), len = x->len;

        /* RX: the capture passes, one flipped payload bit fails. */
        g_assert_cmphex(rx_one(v, x->bytes, len), ==, ok);
        memcpy(f, x->bytes, len);
        f[len - 9] ^= 0x10;
        g_assert_cmphex(rx_one(v, f, len), ==, bad);
        /* Shorter than its IP header says: not judged. */
        g_assert_cmphex(rx_one(v, x->bytes, len - 6), ==,
                        CNUAS_VNIC_DESC_F_DONE);

        /* TX: the device writes the ICRC (and the IPv6 checksum). */
        memcpy(f, x->bytes, len);
        memset(f + len - 4, 0, 4);
        if (v6) {
            memset(f + udp + 6, 0, 2);
        }
        tx_one(v, f, len, CNUAS_VNIC_DESC_F_ICRC, got);
        g_assert(memcmp(got + len - 4, x->bytes + len - 4, 4) == 0);
        g_assert(memcmp(got, x->bytes, v6 ? udp + 6 : len - 4) == 0);
        if (v6) {
            g_assert_cmphex(udp6_sum(got, 14, len - udp), ==, 0xffff);
        }
        /* Without the flag the frame leaves as it is. */
        tx_one(v, f, len, 0, got);
        g_assert(memcmp(got, f, len) == 0);
    }

    /* F_ICRC on a frame that is not RoCEv2: sent unchanged, counted. */
    errors = vstat(v, CNUAS_VNIC_STAT_GUEST_ERRORS);
    cnuas_qtest_fill(f, 200, 7);
    tx_one(v, f, 200, CNUAS_VNIC_DESC_F_ICRC, got);
    g_assert(memcmp(got, f, 200) == 0);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_GUEST_ERRORS), ==, errors + 1);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE), ==,
                     CNUAS_VNIC_QS_RUNNING);
    g_assert_cmphex(rx_one(v, f, 200), ==, CNUAS_VNIC_DESC_F_DONE);

    /* A driver that did not enable the offload gets none of it. */
    vnic_reset(v);
    vnic_start_with(v, rd(v, CNUAS_VNIC_REG_FEATURES) &
                    ~CNUAS_VNIC_F_RDMA_ICRC);
    g_assert(!(rd(v, CNUAS_VNIC_REG_DRV_FEATURES) & CNUAS_VNIC_F_RDMA_ICRC));
    g_assert_cmphex(rx_one(v, ud4_send_only.bytes, ud4_send_only.len), ==,
                    CNUAS_VNIC_DESC_F_DONE);
    memcpy(f, ud4_send_only.bytes, ud4_send_only.len);
    memset(f + ud4_send_only.len - 4, 0, 4);
    tx_one(v, f, ud4_send_only.len, CNUAS_VNIC_DESC_F_ICRC, got);
    g_assert(memcmp(got, f, ud4_send_only.len) == 0);
    vnic_free(v);
}

/* An IB packet: UD SEND to LID 2 from LID 1, @global with a GRH. */
static uint32_t ib_packet(uint8_t *f, bool global, unsigned seed)
{
    uint32_t hl = 8 + (global ? 40 : 0), len = hl + 12 + 8 + 64 + 4;

    cnuas_qtest_fill(f, len, seed);
    f[0] = 0x10;                    /* VL1, LVer 0: the VL is masked */
    f[1] = global ? 0x03 : 0x02;
    stw_be_p(f + 2, 2);
    stw_be_p(f + 4, len / 4);
    stw_be_p(f + 6, 1);
    if (global) {
        f[8] = 0x60 | (f[8] & 0x0f);        /* IPVer 6 */
        stw_be_p(f + 12, len - hl);         /* PayLen */
        f[14] = 0x1b;                       /* NxtHdr: BTH */
    }
    f[hl] = 0x64;                   /* UD SEND only */
    f[hl + 1] = 0;
    memset(f + len - 4, 0, 4);
    return len;
}

/* One frame out with @flags; the switch gets it with a VCRC in @got. */
static void tx_ib(Vnic *v, const uint8_t *f, uint32_t len, uint16_t flags,
                  uint8_t *got)
{
    qtest_memwrite(v->qts, v->txbuf, f, len);
    put_desc(v, v->txring, v->txprod++, v->txbuf, len, flags);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, v->txprod);
    g_assert_cmpint(sw_recv(v, got, BUF_SIZE, 5000), ==, len + 2);
    g_assert_cmphex(lduw_le_p(got + len), ==, ref_vcrc(got, len));
}

/* One frame in as the switch: its flags, and its length in *@len. */
static uint16_t rx_ib(Vnic *v, const uint8_t *f, uint32_t wire_len,
                      uint32_t *len)
{
    struct cnuas_vnic_desc d;

    post_rx(v, 1, BUF_SIZE);
    g_assert_cmpint(send(v->cfd, f, wire_len, 0), ==, wire_len);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u,
                      v->rxprod));
    get_desc(v, v->rxring, v->rxprod - 1, &d);
    *len = le32_to_cpu(d.len);
    return le16_to_cpu(d.flags);
}

/*
 * F_IB_CRC, on an IB link only: the device appends the VCRC to every frame
 * and seals the ICRC of IB packets marked F_ICRC, local and global; it
 * checks and strips the VCRC of received frames (F_VCRC_BAD as they are,
 * else shorter by two) and judges their ICRC. Checked against bitwise
 * CRCs built here from the IBA's rules.
 */
static void test_ib_crc(void)
{
    const uint16_t done = CNUAS_VNIC_DESC_F_DONE;
    Vnic *v = vnic_new(",link_layer=ib", true), *e;
    g_autofree uint8_t *f = g_malloc(BUF_SIZE);
    g_autofree uint8_t *got = g_malloc(BUF_SIZE);
    uint32_t len, n, errors;
    unsigned g;

    g_assert(rd(v, CNUAS_VNIC_REG_FEATURES) & CNUAS_VNIC_F_IB_CRC);
    vnic_start(v);
    v->cfd = cnuas_qtest_accept(v->lfd);
    g_assert(rd(v, CNUAS_VNIC_REG_DRV_FEATURES) & CNUAS_VNIC_F_IB_CRC);
    for (g = 0; g < 2; g++) {
        len = ib_packet(f, g, 3 + g);
        /* TX: ICRC sealed, VCRC behind it; the rest as posted. */
        tx_ib(v, f, len, CNUAS_VNIC_DESC_F_ICRC, got);
        g_assert(memcmp(got, f, len - 4) == 0);
        g_assert_cmphex((uint32_t)ldl_le_p(got + len - 4), ==,
                        ref_ib_icrc(f, len));
        stl_le_p(f + len - 4, ref_ib_icrc(f, len));

        /* RX: good; a flipped payload bit; a bad VCRC. */
        memcpy(got, f, len);
        stw_le_p(got + len, ref_vcrc(got, len));
        g_assert_cmphex(rx_ib(v, got, len + 2, &n), ==,
                        done | CNUAS_VNIC_DESC_F_ICRC_OK);
        g_assert_cmpuint(n, ==, len);
        got[len - 9] ^= 0x10;
        stw_le_p(got + len, ref_vcrc(got, len));
        g_assert_cmphex(rx_ib(v, got, len + 2, &n), ==,
                        done | CNUAS_VNIC_DESC_F_ICRC_BAD);
        g_assert_cmpuint(n, ==, len);
        got[len + 1] ^= 0x01;
        g_assert_cmphex(rx_ib(v, got, len + 2, &n), ==,
                        done | CNUAS_VNIC_DESC_F_VCRC_BAD);
        g_assert_cmpuint(n, ==, len + 2);
    }
    /* TX without F_ICRC: only the VCRC. */
    len = ib_packet(f, false, 5);
    tx_ib(v, f, len, 0, got);
    g_assert(memcmp(got, f, len) == 0);
    g_assert_cmphex(lduw_le_p(got + len), ==, ref_vcrc(f, len));

    /* F_ICRC on a raw packet (LNH 0): VCRC only, counted; queue lives. */
    errors = vstat(v, CNUAS_VNIC_STAT_GUEST_ERRORS);
    f[1] = 0x00;
    tx_ib(v, f, len, CNUAS_VNIC_DESC_F_ICRC, got);
    g_assert(memcmp(got, f, len) == 0);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_GUEST_ERRORS), ==, errors + 1);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE), ==,
                     CNUAS_VNIC_QS_RUNNING);
    /* ... received: VCRC stripped, no ICRC verdict. A 1-byte frame. */
    g_assert_cmphex(rx_ib(v, got, len + 2, &n), ==, done);
    g_assert_cmpuint(n, ==, len);
    g_assert_cmphex(rx_ib(v, f, 1, &n), ==, done | CNUAS_VNIC_DESC_F_VCRC_BAD);
    g_assert_cmpuint(n, ==, 1);
    vnic_free(v);

    /* A driver that did not enable it gets frames as they are. */
    v = vnic_new(",link_layer=ib", true);
    vnic_start_with(v, rd(v, CNUAS_VNIC_REG_FEATURES) & ~CNUAS_VNIC_F_IB_CRC);
    v->cfd = cnuas_qtest_accept(v->lfd);
    len = ib_packet(f, false, 6);
    tx_one(v, f, len, CNUAS_VNIC_DESC_F_ICRC, got);
    g_assert(memcmp(got, f, len) == 0);
    g_assert_cmphex(rx_ib(v, f, len, &n), ==, done);
    g_assert_cmpuint(n, ==, len);
    vnic_free(v);

    /* Nor does an Ethernet device offer it. */
    e = vnic_new(NULL, true);
    g_assert(!(rd(e, CNUAS_VNIC_REG_FEATURES) & CNUAS_VNIC_F_IB_CRC));
    vnic_free(e);
}

/* Frames arriving while no buffers are posted wait in the switch. */
static void test_rx_backpressure(void)
{
    Vnic *v = vnic_new(NULL, true);
    uint8_t buf[60];
    unsigned i;

    vnic_start(v);
    for (i = 0; i < 20; i++) {
        cnuas_qtest_fill(buf, sizeof(buf), i);
        sw_send(v, buf, sizeof(buf));
    }
    g_usleep(100 * 1000);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS), ==, 0);

    post_rx(v, 8, BUF_SIZE);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 8));
    g_usleep(50 * 1000);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS), ==, 8);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_STALLS), >=, 1);

    post_rx(v, 30, BUF_SIZE);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 20));
    for (i = 0; i < 20; i++) {
        check_rx(v, i, sizeof(buf), i);
    }
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_FRAMES), ==, 20);

    /* Buffers still posted: new frames flow at once. */
    cnuas_qtest_fill(buf, sizeof(buf), 99);
    sw_send(v, buf, sizeof(buf));
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 21));
    check_rx(v, 20, sizeof(buf), 99);
    vnic_free(v);
}

/* The switch stops reading: TX waits for it, nothing is lost. */
static void test_tx_backpressure(void)
{
    Vnic *v = vnic_new(NULL, true);
    g_autofree uint8_t *want = g_malloc(BUF_SIZE);
    g_autofree uint8_t *got = g_malloc(BUF_SIZE);
    uint32_t i;

    vnic_start(v);
    /* 64 x 9 KiB is more than the socket buffers hold. */
    for (i = 0; i < RING; i++) {
        cnuas_qtest_fill(want, BUF_SIZE, i);
        qtest_memwrite(v->qts, v->rxbuf + i * BUF_SIZE, want, BUF_SIZE);
        put_desc(v, v->txring, i, v->rxbuf + i * BUF_SIZE, BUF_SIZE, 0);
    }
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, RING);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATS + CNUAS_VNIC_STAT_TX_STALLS,
                      ~0u, 1));
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS), <, RING);

    for (i = 0; i < RING; i++) {
        g_assert_cmpint(sw_recv(v, got, BUF_SIZE, 5000), ==, BUF_SIZE);
        cnuas_qtest_fill(want, BUF_SIZE, i);
        g_assert(memcmp(got, want, BUF_SIZE) == 0);
    }
    g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS, ~0u, RING));
    g_assert_cmpuint(sb_field(v, 0), ==, RING);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_TX_FRAMES), ==, RING);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_TX_LINK_DOWN), ==, 0);
    vnic_free(v);
}

typedef enum BadKind {
    BAD_ADDR,
    BAD_MMIO,
    BAD_LEN0,
    BAD_LONG,
    BAD_CHAIN,
    BAD_PROD,
} BadKind;

static void run_bad_tx(Vnic *v, BadKind kind, uint32_t want_err)
{
    g_autofree uint8_t *got = g_malloc(BUF_SIZE);
    uint64_t addr = v->txbuf;
    uint32_t len = 64, prod = RING;
    uint16_t flags = 0;
    unsigned i;

    vnic_reset(v);
    vnic_start(v);
    switch (kind) {
    case BAD_ADDR:
        addr = 0xfff00000000ull;
        break;
    case BAD_MMIO:
        addr = v->bar.addr;
        break;
    case BAD_LEN0:
        len = 0;
        break;
    case BAD_LONG:
        len = CNUAS_VNIC_MAX_FRAME + 1;
        break;
    case BAD_CHAIN:
        len = 10;
        flags = CNUAS_VNIC_DESC_F_MORE;
        break;
    case BAD_PROD:
        prod = 100000;
        break;
    }
    /* A ring full of bad descriptors. */
    for (i = 0; i < RING; i++) {
        put_desc(v, v->txring, i, addr, len, flags);
    }
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, prod);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE, ~0u,
                      CNUAS_VNIC_QS_DEAD));
    g_assert(rd(v, CNUAS_VNIC_REG_STATUS) & CNUAS_VNIC_STATUS_ERROR);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_ERROR), ==, want_err);
    g_assert(rd(v, CNUAS_VNIC_REG_INT_STATUS) & CNUAS_VNIC_INT_MISC);
    g_assert(sb_field(v, 2) & CNUAS_VNIC_STATUS_ERROR);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_GUEST_ERRORS), >=, 1);
    /* More doorbells on a dead queue change nothing. */
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, 1);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE), ==,
                     CNUAS_VNIC_QS_DEAD);
    /* QEMU still answers, nothing went out, and a reset recovers. */
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_MAGIC), ==, CNUAS_VNIC_MAGIC_VALUE);
    g_assert_cmpint(sw_recv(v, got, BUF_SIZE, 20), ==, -1);
    vnic_reset(v);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE), ==,
                     CNUAS_VNIC_QS_DISABLED);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_STATUS) & CNUAS_VNIC_STATUS_ERROR,
                    ==, 0);
    vnic_start(v);
    put_desc(v, v->txring, 0, v->txbuf, 60, 0);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, 1);
    g_assert_cmpint(sw_recv(v, got, BUF_SIZE, 5000), ==, 60);
}

static void test_tx_bad(void)
{
    Vnic *v = vnic_new(NULL, true);

    run_bad_tx(v, BAD_ADDR, CNUAS_VNIC_ERR_BUF_DMA);
    run_bad_tx(v, BAD_MMIO, CNUAS_VNIC_ERR_BUF_DMA);
    run_bad_tx(v, BAD_LEN0, CNUAS_VNIC_ERR_BAD_LEN);
    run_bad_tx(v, BAD_LONG, CNUAS_VNIC_ERR_BAD_LEN);
    run_bad_tx(v, BAD_CHAIN, CNUAS_VNIC_ERR_BAD_LEN);
    run_bad_tx(v, BAD_PROD, CNUAS_VNIC_ERR_BAD_PROD);
    vnic_free(v);
}

static void test_bad_setup(void)
{
    Vnic *v = vnic_new(NULL, true);
    uint8_t buf[60];

    /* Ring outside guest RAM. */
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_BASE_HI, 0xfff);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_SIZE, RING);
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_BASE_LO, (uint32_t)v->rxring);
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_SIZE, RING);
    wr(v, CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_ENABLE);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_CTRL), ==, 0);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_ERROR), ==,
                     CNUAS_VNIC_ERR_BAD_SETUP);
    g_assert(rd(v, CNUAS_VNIC_REG_STATUS) & CNUAS_VNIC_STATUS_ERROR);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE), ==,
                     CNUAS_VNIC_QS_DISABLED);

    /* Size not a power of two. */
    vnic_reset(v);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_BASE_LO, (uint32_t)v->txring);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_SIZE, 100);
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_BASE_LO, (uint32_t)v->rxring);
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_SIZE, RING);
    wr(v, CNUAS_VNIC_REG_CTRL, CNUAS_VNIC_CTRL_ENABLE);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_ERROR), ==,
                     CNUAS_VNIC_ERR_BAD_SETUP);

    /* RX buffer outside RAM kills the RX queue, TX keeps running. */
    vnic_reset(v);
    vnic_start(v);
    put_desc(v, v->rxring, 0, 0xfff00000000ull, BUF_SIZE, 0);
    wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_PROD, 1);
    /* Buffers are checked when a frame needs them. */
    memset(buf, 0, sizeof(buf));
    sw_send(v, buf, sizeof(buf));
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_STATE, ~0u,
                      CNUAS_VNIC_QS_DEAD));
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_ERROR), ==, CNUAS_VNIC_ERR_BUF_DMA);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE), ==,
                     CNUAS_VNIC_QS_RUNNING);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_MAGIC), ==, CNUAS_VNIC_MAGIC_VALUE);
    vnic_free(v);
}

static void test_link(void)
{
    Vnic *v = vnic_new(NULL, true);
    uint8_t buf[64];

    vnic_start(v);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATUS, CNUAS_VNIC_STATUS_LINK_UP,
                      CNUAS_VNIC_STATUS_LINK_UP));
    wr(v, CNUAS_VNIC_REG_INT_ACK, CNUAS_VNIC_INT_ALL);

    /* The switch goes away: link down, MISC raised, status block too. */
    close(v->cfd);
    v->cfd = -1;
    close(v->lfd);
    v->lfd = -1;
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATUS, CNUAS_VNIC_STATUS_LINK_UP,
                      0));
    g_assert(rd(v, CNUAS_VNIC_REG_INT_STATUS) & CNUAS_VNIC_INT_MISC);
    g_assert_cmphex(sb_field(v, 2) & CNUAS_VNIC_STATUS_LINK_UP, ==, 0);

    /* TX without carrier is consumed and counted, never stuck. */
    put_desc(v, v->txring, 0, v->txbuf, 60, 0);
    put_desc(v, v->txring, 1, v->txbuf, 60, 0);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, 2);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS, ~0u, 2));
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_TX_LINK_DOWN), ==, 2);

    /* The switch comes back: the device reconnects by itself. */
    wr(v, CNUAS_VNIC_REG_INT_ACK, CNUAS_VNIC_INT_ALL);
    v->lfd = cnuas_qtest_listen(v->path);
    v->cfd = cnuas_qtest_accept(v->lfd);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATUS, CNUAS_VNIC_STATUS_LINK_UP,
                      CNUAS_VNIC_STATUS_LINK_UP));
    g_assert(rd(v, CNUAS_VNIC_REG_INT_STATUS) & CNUAS_VNIC_INT_MISC);
    g_assert(sb_field(v, 2) & CNUAS_VNIC_STATUS_LINK_UP);

    /* And traffic flows again both ways. */
    cnuas_qtest_fill(buf, 60, 5);
    qtest_memwrite(v->qts, v->txbuf, buf, 60);
    put_desc(v, v->txring, 2, v->txbuf, 60, 0);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, 3);
    g_assert_cmpint(sw_recv(v, buf, sizeof(buf), 5000), ==, 60);
    post_rx(v, 1, BUF_SIZE);
    cnuas_qtest_fill(buf, 60, 6);
    sw_send(v, buf, 60);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 1));
    check_rx(v, 0, 60, 6);

    /* Peer closes while RX buffers are posted: EOF seen by the reader. */
    close(v->cfd);
    v->cfd = -1;
    close(v->lfd);
    v->lfd = -1;
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATUS, CNUAS_VNIC_STATUS_LINK_UP,
                      0));
    vnic_free(v);
}

/* Is there no connection to accept within @ms? */
static bool no_connect_within(int lfd, int ms)
{
    struct pollfd pfd = { .fd = lfd, .events = POLLIN };

    return poll(&pfd, 1, ms) == 0;
}

/* Does the device's end of the socket close within WAIT_US? */
static bool peer_closed(int fd)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    uint8_t buf[BUF_SIZE];

    while (poll(&pfd, 1, WAIT_US / 1000) == 1) {
        if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * link_layer=ib: the link follows the driver. No connection before ENABLE
 * (over twice the reconnect period), one at ENABLE, closed by a reset and
 * not made again until the next ENABLE; frames flow on the new one.
 */
static void test_ib_link(void)
{
    Vnic *v = vnic_new(",link_layer=ib", true);
    uint8_t buf[64];

    g_assert(no_connect_within(v->lfd, 1200));
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_STATUS) & CNUAS_VNIC_STATUS_LINK_UP,
                    ==, 0);

    vnic_start(v);
    v->cfd = cnuas_qtest_accept(v->lfd);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATUS, CNUAS_VNIC_STATUS_LINK_UP,
                      CNUAS_VNIC_STATUS_LINK_UP));
    g_assert(rd(v, CNUAS_VNIC_REG_INT_STATUS) & CNUAS_VNIC_INT_MISC);

    vnic_reset(v);
    g_assert(peer_closed(v->cfd));
    close(v->cfd);
    v->cfd = -1;
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_STATUS) & CNUAS_VNIC_STATUS_LINK_UP,
                    ==, 0);
    g_assert(no_connect_within(v->lfd, 1200));

    vnic_start(v);
    v->cfd = cnuas_qtest_accept(v->lfd);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATUS, CNUAS_VNIC_STATUS_LINK_UP,
                      CNUAS_VNIC_STATUS_LINK_UP));
    cnuas_qtest_fill(buf, 60, 7);
    qtest_memwrite(v->qts, v->txbuf, buf, 60);
    put_desc(v, v->txring, 0, v->txbuf, 60, 0);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, 1);
    g_assert_cmpint(sw_recv(v, buf, sizeof(buf), 5000), ==,
                    60 + CNUAS_VCRC_LEN);
    vnic_free(v);
}

/* How often @what occurs in the file @log (QEMU's stderr). */
static int log_count(const char *log, const char *what)
{
    g_autofree char *text = NULL;
    const char *p;
    int n = 0;

    if (!g_file_get_contents(log, &text, NULL, NULL)) {
        return 0;
    }
    for (p = strstr(text, what); p; p = strstr(p + 1, what)) {
        n++;
    }
    return n;
}

/* Wait up to WAIT_US for @what to occur @n times in @log; show it if not. */
static bool log_wait(const char *log, const char *what, int n)
{
    g_autofree char *text = NULL;
    int us;

    for (us = 0; us < WAIT_US; us += 10000) {
        if (log_count(log, what) >= n) {
            return true;
        }
        g_usleep(10000);
    }
    g_file_get_contents(log, &text, NULL, NULL);
    g_test_message("no %d x '%s' in QEMU's stderr", n, what);
    g_test_message("%s", text ? text : "(none)");
    return false;
}

/*
 * The switch's socket is missing, then refuses, then listens: QEMU's log
 * (its stderr) says why the link is down once per distinct error, naming
 * the device, the path and what to check, and says when it connected.
 */
static void test_link_warnings(void)
{
    char *dir, *path = cnuas_qtest_sock_path("cnuas-vnic-XXXXXX", "sw.sock",
                                             &dir);
    g_autofree char *log = g_build_filename(dir, "stderr", NULL);
    g_autofree char *enoent = g_strdup_printf(
        "warning: cnuas-vnic 'nic0': cannot connect to '%s' (retrying every "
        "500 ms): No such file or directory; is cnuas-vswitchd running", path);
    g_autofree char *refused = g_strdup_printf(
        "warning: cnuas-vnic 'nic0': cannot connect to '%s' (retrying every "
        "500 ms): Connection refused; nothing listens there: cnuas-vswitchd "
        "is gone", path);
    g_autofree char *up = g_strdup_printf(
        "cnuas-vnic 'nic0': connected to '%s'", path);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    QTestState *qts;
    int lfd, cfd;

    /* libqtest runs QEMU through sh -c: a redirection keeps its stderr. */
    qts = qtest_initf("-M q35 -nodefaults -device cnuas-vnic,id=nic0,"
                      "mac=" TEST_MAC ",socket_path=%s 2>%s", path, log);
    g_assert(log_wait(log, enoent, 1));
    g_usleep(1500 * 1000);     /* three reconnect periods */
    g_assert_cmpint(log_count(log, "cannot connect"), ==, 1);

    /* Bound but not listening: as the socket a dead switch leaves. */
    lfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    g_assert_cmpint(lfd, >=, 0);
    strcpy(sa.sun_path, path);
    g_assert_cmpint(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert(log_wait(log, refused, 1));
    g_usleep(1500 * 1000);     /* three reconnect periods */
    g_assert_cmpint(log_count(log, "cannot connect"), ==, 2);

    g_assert_cmpint(listen(lfd, 1), ==, 0);
    cfd = cnuas_qtest_accept(lfd);
    g_assert(log_wait(log, up, 1));
    g_assert_cmpint(log_count(log, "warning:"), ==, 2);

    close(cfd);
    close(lfd);
    qtest_quit(qts);
    unlink(log);
    cnuas_qtest_sock_path_free(dir, path);
}

/* NAPI contract: an RX interrupt raised while masked fires on unmask. */
static void test_msix_mask(void)
{
    Vnic *v = vnic_new(NULL, true);
    uint8_t buf[60];

    qpci_msix_enable(v->dev);
    vnic_start(v);
    wr(v, CNUAS_VNIC_REG_INT_MASK_SET, CNUAS_VNIC_INT_RX);
    post_rx(v, 1, BUF_SIZE);
    cnuas_qtest_fill(buf, sizeof(buf), 1);
    sw_send(v, buf, sizeof(buf));
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 1));
    g_assert(!qpci_msix_pending(v->dev, CNUAS_VNIC_VEC_RX));
    wr(v, CNUAS_VNIC_REG_INT_MASK_CLR, CNUAS_VNIC_INT_RX);
    g_assert(qpci_msix_pending(v->dev, CNUAS_VNIC_VEC_RX));
    g_assert(!qpci_msix_pending(v->dev, CNUAS_VNIC_VEC_TX));
    qpci_msix_disable(v->dev);
    vnic_free(v);
}

/*
 * A guest may aim an MSI-X vector at the device's own BAR0 (here: CTRL =
 * RESET). Raised from the RX thread or a timer, that write must be blocked
 * by the re-entrancy guard, not reset the device in the middle of an RX
 * delivery: the device stays enabled and keeps receiving.
 */
static void test_msix_reentrancy(void)
{
    Vnic *v = vnic_new(NULL, true);
    uint64_t entry;
    uint8_t buf[60];
    unsigned i;

    qpci_msix_enable(v->dev);
    g_assert(!v->bar.is_io);
    for (i = 0; i < 3; i++) {
        entry = v->dev->msix_table_off + i * PCI_MSIX_ENTRY_SIZE;
        qpci_io_writel(v->dev, v->dev->msix_table_bar,
                       entry + PCI_MSIX_ENTRY_LOWER_ADDR,
                       (uint32_t)(v->bar.addr + CNUAS_VNIC_REG_CTRL));
        qpci_io_writel(v->dev, v->dev->msix_table_bar,
                       entry + PCI_MSIX_ENTRY_UPPER_ADDR,
                       (v->bar.addr + CNUAS_VNIC_REG_CTRL) >> 32);
        qpci_io_writel(v->dev, v->dev->msix_table_bar,
                       entry + PCI_MSIX_ENTRY_DATA, CNUAS_VNIC_CTRL_RESET);
        qpci_io_writel(v->dev, v->dev->msix_table_bar,
                       entry + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    }
    vnic_start(v);
    for (i = 0; i < 4; i++) {
        post_rx(v, 1, BUF_SIZE);
        cnuas_qtest_fill(buf, sizeof(buf), i);
        sw_send(v, buf, sizeof(buf));
        g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u,
                          v->rxprod));
        check_rx(v, v->rxprod - 1, sizeof(buf), i);
        g_assert_cmphex(rd(v, CNUAS_VNIC_REG_STATUS) &
                        CNUAS_VNIC_STATUS_ENABLED, ==,
                        CNUAS_VNIC_STATUS_ENABLED);
        g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_STATE), ==,
                         CNUAS_VNIC_QS_RUNNING);
    }
    /* The vector fired (into the blocked write) and changed nothing. */
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_IRQS), >=, 1);
    qpci_msix_disable(v->dev);
    vnic_free(v);
}

/* INT_DELAY holds TX/RX causes for that much guest time; MISC is not held. */
/* F_INT_AUTOMASK: MSI-X RX/TX mask themselves; INT_REARM drops, unmasks. */
static void test_msix_automask(void)
{
    const uint32_t napi = CNUAS_VNIC_INT_RX | CNUAS_VNIC_INT_TX;
    const uint32_t drop_tx = CNUAS_VNIC_INT_TX <<
                             CNUAS_VNIC_INT_REARM_DROP_SHIFT;
    Vnic *v = vnic_new(NULL, true);
    uint8_t buf[60];
    g_autofree uint8_t *got = g_malloc(BUF_SIZE);
    uint32_t irqs;

    qpci_msix_enable(v->dev);
    vnic_start(v);
    g_assert(rd(v, CNUAS_VNIC_REG_DRV_FEATURES) & CNUAS_VNIC_F_INT_AUTOMASK);
    cnuas_qtest_fill(buf, sizeof(buf), 1);
    /* An RX interrupt masks RX and TX by itself. */
    irqs = vstat(v, CNUAS_VNIC_STAT_IRQS);
    post_rx(v, 1, BUF_SIZE);
    sw_send(v, buf, sizeof(buf));
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 1));
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_IRQS), ==, irqs + 1);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_MASK) & napi, ==, napi);
    /* A TX completion now waits behind the mask... */
    tx_one(v, buf, sizeof(buf), 0, got);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS, ~0u,
                      v->txprod));
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_IRQS), ==, irqs + 1);
    /* ...INT_REARM's drop bits forget it: nothing fires, both unmasked. */
    wr(v, CNUAS_VNIC_REG_INT_REARM, drop_tx | napi);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_IRQS), ==, irqs + 1);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_MASK) & napi, ==, 0);
    /* Without them a waiting cause fires at the rearm and masks again. */
    wr(v, CNUAS_VNIC_REG_INT_MASK_SET, napi);
    tx_one(v, buf, sizeof(buf), 0, got);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS, ~0u,
                      v->txprod));
    wr(v, CNUAS_VNIC_REG_INT_REARM, napi);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_IRQS), ==, irqs + 2);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_MASK) & napi, ==, napi);

    /* A driver that did not enable it: no auto-mask, INT_REARM ignored. */
    vnic_reset(v);
    vnic_start_with(v, rd(v, CNUAS_VNIC_REG_FEATURES) &
                    ~CNUAS_VNIC_F_INT_AUTOMASK);
    wr(v, CNUAS_VNIC_REG_INT_MASK_SET, CNUAS_VNIC_INT_TX);
    wr(v, CNUAS_VNIC_REG_INT_REARM, napi);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_MASK) & napi, ==,
                    CNUAS_VNIC_INT_TX);
    wr(v, CNUAS_VNIC_REG_INT_MASK_CLR, napi);
    irqs = vstat(v, CNUAS_VNIC_STAT_IRQS);
    post_rx(v, 1, BUF_SIZE);
    sw_send(v, buf, sizeof(buf));
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 1));
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_IRQS), ==, irqs + 1);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_MASK) & napi, ==, 0);
    qpci_msix_disable(v->dev);
    vnic_free(v);
}

/* One 60-byte frame out; back once the device has completed it. */
static void tx_done_one(Vnic *v)
{
    static const uint8_t f[60] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2 };
    g_autofree uint8_t *got = g_malloc(BUF_SIZE);

    tx_one(v, f, sizeof(f), 0, got);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS, ~0u,
                      v->txprod));
}

/*
 * INT_DELAY is the least time between two RX/TX interrupts: the first
 * completion after a quiet spell is signalled at once, one within the
 * spell waits for its end (guest time) with whatever else came.
 */
static void test_int_delay(void)
{
    Vnic *v = vnic_new(NULL, true);

    vnic_start(v);
    wr(v, CNUAS_VNIC_REG_INT_DELAY, 100);
    tx_done_one(v);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, CNUAS_VNIC_INT_TX);
    wr(v, CNUAS_VNIC_REG_INT_ACK, CNUAS_VNIC_INT_ALL);

    /* within 100 us of that interrupt: held to the end of the spell */
    tx_done_one(v);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, 0);
    qtest_clock_step(v->qts, 99 * 1000);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, 0);
    qtest_clock_step(v->qts, 2 * 1000);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, CNUAS_VNIC_INT_TX);
    wr(v, CNUAS_VNIC_REG_INT_ACK, CNUAS_VNIC_INT_ALL);

    /* that delayed one starts a spell too; after it, at once again */
    tx_done_one(v);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, 0);
    qtest_clock_step(v->qts, 101 * 1000);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, CNUAS_VNIC_INT_TX);
    wr(v, CNUAS_VNIC_REG_INT_ACK, CNUAS_VNIC_INT_ALL);
    qtest_clock_step(v->qts, 101 * 1000);
    tx_done_one(v);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, CNUAS_VNIC_INT_TX);

    /* with INT_DELAY 0 nothing waits */
    wr(v, CNUAS_VNIC_REG_INT_ACK, CNUAS_VNIC_INT_ALL);
    wr(v, CNUAS_VNIC_REG_INT_DELAY, 0);
    tx_done_one(v);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS), ==, CNUAS_VNIC_INT_TX);
    vnic_free(v);
}

static uint64_t random_addr(void)
{
    switch (g_test_rand_int_range(0, 4)) {
    case 0:
        return (uint64_t)g_test_rand_int() << 32 | g_test_rand_int();
    case 1:
        return 0xfec00000 + g_test_rand_int_range(0, 0x200000);
    default:
        return g_test_rand_int_range(0, 128 << 20);
    }
}

/* Episodes of random descriptors, doorbells, registers and frames. */
static void test_random(void)
{
    Vnic *v = vnic_new(NULL, true);
    g_autofree uint8_t *buf = g_malloc(BUF_SIZE + 1000);
    uint32_t tx = 0, rx = 0;
    unsigned ep, i, j;

    memset(buf, 0x5a, BUF_SIZE + 1000);
    for (ep = 0; ep < 60; ep++) {
        vnic_reset(v);
        vnic_start(v);
        tx = rx = 0;
        for (i = 0; i < 20; i++) {
            switch (g_test_rand_int_range(0, 6)) {
            case 0:
                wr(v, 4 * g_test_rand_int_range(0, 0x400 / 4),
                   g_test_rand_int());
                break;
            case 1:
                for (j = 0; j < 8; j++) {
                    put_desc(v, v->txring, tx + j, random_addr(),
                             g_test_rand_int_range(0, 3) ?
                             g_test_rand_int_range(1, 600) :
                             g_test_rand_int_range(0, 12000),
                             g_test_rand_int_range(0, 3) ? 0 :
                             g_test_rand_int_range(0, 8));
                }
                tx += g_test_rand_int_range(0, 9);
                wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, tx);
                break;
            case 2:
                for (j = 0; j < 8; j++) {
                    put_desc(v, v->rxring, rx + j, random_addr(),
                             g_test_rand_int_range(0, 12000), 0);
                }
                rx += g_test_rand_int_range(0, 9);
                wr(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_PROD, rx);
                break;
            case 3:
                for (j = 0; j < 4 && v->cfd >= 0; j++) {
                    send(v->cfd, buf,
                         g_test_rand_int_range(1, BUF_SIZE + 1000),
                         MSG_DONTWAIT | MSG_NOSIGNAL);
                }
                break;
            case 4:
                while (v->cfd >= 0 && sw_recv(v, buf, BUF_SIZE, 0) > 0) {
                    continue;
                }
                break;
            case 5:
                wr(v, CNUAS_VNIC_REG_INT_MASK_CLR, g_test_rand_int());
                break;
            }
        }
    }
    /* Still alive, and a reset brings back a working device. */
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_MAGIC), ==, CNUAS_VNIC_MAGIC_VALUE);
    vnic_reset(v);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_ERROR), ==, 0);
    vnic_free(v);
}

/* A stopped VM does not touch guest memory; frames wait in the switch. */
static void test_stop_cont(void)
{
    Vnic *v = vnic_new(NULL, true);
    uint8_t buf[60];

    vnic_start(v);
    post_rx(v, 4, BUF_SIZE);
    qtest_qmp_assert_success(v->qts, "{ 'execute': 'stop' }");
    cnuas_qtest_fill(buf, sizeof(buf), 7);
    sw_send(v, buf, sizeof(buf));
    g_usleep(100 * 1000);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS), ==, 0);
    qtest_qmp_assert_success(v->qts, "{ 'execute': 'cont' }");
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 1));
    check_rx(v, 0, sizeof(buf), 7);
    vnic_free(v);
}

/*
 * Registers, indices, counters and the link state the driver was told
 * migrate; the target has its own link.
 */
/*
 * @ll "" or ",link_layer=ib". An IB target links only once the device
 * state (ENABLE) has arrived, before the VM runs; an Ethernet one at once.
 */
static void migrate_with(const char *ll)
{
    bool ib = strstr(ll, "link_layer=ib");
    /* An IB device with F_IB_CRC adds and strips the VCRC. */
    uint32_t vcrc = ib ? CNUAS_VCRC_LEN : 0;
    Vnic *v = vnic_new(ll, true);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig.sock", v->dir);
    uint8_t buf[64];
    QOSState *src = v->qs, *dst;
    QPCIDevice *dev;
    unsigned i;

    vnic_start(v);
    if (ib) {
        v->cfd = cnuas_qtest_accept(v->lfd);
    }
    for (i = 0; i < 3; i++) {
        put_desc(v, v->txring, i, v->txbuf, 60, 0);
    }
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, 3);
    for (i = 0; i < 3; i++) {
        g_assert_cmpint(sw_recv(v, buf, sizeof(buf), 5000), ==, 60 + vcrc);
    }
    post_rx(v, 4, BUF_SIZE);
    for (i = 0; i < 2; i++) {
        cnuas_qtest_fill(buf, 60, i);
        sw_send_ll(v, buf, 60, ib);
    }
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 2));
    wr(v, CNUAS_VNIC_REG_INT_MASK_SET, CNUAS_VNIC_INT_TX);
    wr(v, CNUAS_VNIC_REG_INT_ACK, CNUAS_VNIC_INT_ALL);

    dst = qtest_pc_boot("-nodefaults -device cnuas-vnic,id=nic0,addr=0x4,"
                        "mac=" TEST_MAC ",socket_path=%s%s -incoming %s",
                        v->path, ll, uri);
    if (ib) {
        g_assert(no_connect_within(v->lfd, 1200));
        close(v->cfd);
        migrate(src, dst, uri);
        v->cfd = cnuas_qtest_accept(v->lfd);
    } else {
        close(v->cfd);
        v->cfd = cnuas_qtest_accept(v->lfd);
        migrate(src, dst, uri);
    }

    g_free(v->dev);
    qtest_shutdown(src);
    v->qs = dst;
    v->qts = dst->qts;
    dev = cnuas_qtest_find_dev(dst->pcibus, CNUAS_VNIC_VENDOR_ID,
                               CNUAS_VNIC_DEVICE_ID);
    v->dev = dev;
    v->bar = qpci_iomap(dev, CNUAS_VNIC_BAR_REGS, NULL);
    qpci_device_enable(dev);

    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_CTRL), ==, CNUAS_VNIC_CTRL_ENABLE);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_MASK), ==, CNUAS_VNIC_INT_TX);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS), ==, 3);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS), ==, 2);
    g_assert_cmpuint(rd(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_PROD), ==, 4);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_TX_FRAMES), ==, 3);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_FRAMES), ==, 2);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_STATUS, ~0u,
                      CNUAS_VNIC_STATUS_LINK_UP | CNUAS_VNIC_STATUS_ENABLED));
    /* The driver knew the link was up: the target tells it nothing new. */
    g_usleep(100 * 1000);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_INT_STATUS) & CNUAS_VNIC_INT_MISC,
                    ==, 0);

    /* The target carries on with the posted buffers and the TX ring. */
    cnuas_qtest_fill(buf, 60, 9);
    sw_send_ll(v, buf, 60, ib);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u, 3));
    check_rx(v, 2, 60, 9);
    put_desc(v, v->txring, 3, v->txbuf, 60, 0);
    wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, 4);
    g_assert_cmpint(sw_recv(v, buf, sizeof(buf), 5000), ==, 60 + vcrc);
    g_assert(wait_reg(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_CONS, ~0u, 4));
    unlink(uri + strlen("unix:"));
    vnic_free(v);
}

static void test_migrate(void)
{
    migrate_with("");
}

static void test_migrate_ib(void)
{
    migrate_with(",link_layer=ib");
}

static void test_hotplug(void)
{
    Vnic *v = vnic_new(NULL, true);
    struct pollfd pfd = { .events = POLLIN };
    char c;
    int cfd;

    qtest_qmp_device_add(v->qts, "cnuas-vnic", "hp0",
                         "{'addr': '0x6', 'mac': '52:54:00:12:34:57', "
                         "'socket_path': %s}", v->path);
    cfd = cnuas_qtest_accept(v->lfd);
    qpci_unplug_acpi_device_test(v->qts, "hp0", 0x6);
    /* The unplugged device closed its connection. */
    pfd.fd = cfd;
    g_assert_cmpint(poll(&pfd, 1, 5000), ==, 1);
    g_assert_cmpint(recv(cfd, &c, 1, MSG_DONTWAIT), ==, 0);
    close(cfd);
    g_assert_cmphex(rd(v, CNUAS_VNIC_REG_MAGIC), ==, CNUAS_VNIC_MAGIC_VALUE);
    vnic_free(v);
}

/*
 * x-shm-ring: the test plays a switch that accepts the device's HELLO,
 * maps the memfd it passes and moves frames through both rings.
 */
typedef struct ShmPeer {
    uint8_t *map;
    size_t len;
    int fds[CNUAS_SHM_NFDS];
    struct cnuas_shm_ctl *tx, *rx;
    uint8_t *tx_slots, *rx_slots;
    uint32_t nslots, slot_size, tx_cons, rx_prod;
} ShmPeer;

static void shm_peer_msg(Vnic *v, uint16_t type)
{
    struct cnuas_shm_msg m = {
        .magic = CNUAS_SHM_MAGIC, .version = CNUAS_SHM_VERSION, .type = type,
    };

    sw_send(v, (const uint8_t *)&m, CNUAS_SHM_MSG_LEN);
}

/* Take the HELLO and its descriptors, map the area, answer ACCEPT. */
static void shm_peer_accept(Vnic *v, ShmPeer *p)
{
    struct cnuas_shm_msg m;
    struct cnuas_shm_area h;
    struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * CNUAS_SHM_NFDS)];
    } c;
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1,
        .msg_control = c.buf, .msg_controllen = sizeof(c.buf),
    };
    struct pollfd pfd = { .fd = v->cfd, .events = POLLIN };
    struct cmsghdr *cm;

    g_assert_cmpint(poll(&pfd, 1, 5000), ==, 1);
    g_assert_cmpint(recvmsg(v->cfd, &mh, 0), ==, CNUAS_SHM_MSG_LEN);
    g_assert_cmphex(m.magic, ==, CNUAS_SHM_MAGIC);
    g_assert_cmpuint(m.type, ==, CNUAS_SHM_HELLO);
    cm = CMSG_FIRSTHDR(&mh);
    g_assert(cm && cm->cmsg_type == SCM_RIGHTS);
    g_assert_cmpuint(cm->cmsg_len, ==, CMSG_LEN(sizeof(int) * CNUAS_SHM_NFDS));
    memcpy(p->fds, CMSG_DATA(cm), sizeof(p->fds));
    p->len = m.arg;
    p->map = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED,
                  p->fds[CNUAS_SHM_FD_AREA], 0);
    g_assert(p->map != MAP_FAILED);
    memcpy(&h, p->map, sizeof(h));
    g_assert_cmpuint(h.nslots, >=, CNUAS_SHM_SLOTS_MIN);
    g_assert_cmpuint(cnuas_shm_area_bytes(h.nslots, h.slot_size), <=, p->len);
    p->nslots = h.nslots;
    p->slot_size = h.slot_size;
    p->tx = (struct cnuas_shm_ctl *)(p->map + h.tx_off);
    p->rx = (struct cnuas_shm_ctl *)(p->map + h.rx_off);
    p->tx_slots = (uint8_t *)(p->tx + 1);
    p->rx_slots = (uint8_t *)(p->rx + 1);
    p->tx_cons = p->rx_prod = 0;
    shm_peer_msg(v, CNUAS_SHM_ACCEPT);
}

static struct cnuas_shm_slot *shm_peer_slot(ShmPeer *p, uint8_t *slots,
                                            uint32_t idx)
{
    return (struct cnuas_shm_slot *)(slots + (size_t)(idx % p->nslots) *
                                     p->slot_size);
}

static void shm_peer_kick(int fd)
{
    uint64_t one = 1;

    g_assert_cmpint(write(fd, &one, sizeof(one)), ==, sizeof(one));
}

/* One frame into the device's RX ring, and the kick it may sleep on. */
static void shm_peer_send(ShmPeer *p, const uint8_t *f, uint32_t len)
{
    struct cnuas_shm_slot *sl = shm_peer_slot(p, p->rx_slots, p->rx_prod);

    g_assert_cmpuint(p->rx_prod - qatomic_load_acquire(&p->rx->cons), <,
                     p->nslots);
    memcpy(sl->frame, f, len);
    sl->len = len;
    sl->flags = 0;
    qatomic_store_release(&p->rx->prod, ++p->rx_prod);
    shm_peer_kick(p->fds[CNUAS_SHM_FD_RX_WAKE]);
}

/* The next frame from the device's TX ring: its length, -1 on timeout. */
static int shm_peer_recv(ShmPeer *p, uint8_t *buf)
{
    gint64 end = g_get_monotonic_time() + WAIT_US;
    struct cnuas_shm_slot *sl;
    uint32_t len;

    while (qatomic_load_acquire(&p->tx->prod) == p->tx_cons) {
        if (g_get_monotonic_time() > end) {
            return -1;
        }
        g_usleep(1000);
    }
    sl = shm_peer_slot(p, p->tx_slots, p->tx_cons);
    len = sl->len;
    g_assert_cmpuint(len, <=, CNUAS_SHM_FRAME_MAX);
    memcpy(buf, sl->frame, len);
    qatomic_store_release(&p->tx->cons, ++p->tx_cons);
    shm_peer_kick(p->fds[CNUAS_SHM_FD_TX_WAKE]);
    return len;
}

static void shm_peer_free(ShmPeer *p)
{
    unsigned i;

    munmap(p->map, p->len);
    for (i = 0; i < CNUAS_SHM_NFDS; i++) {
        close(p->fds[i]);
    }
}

static void test_shm_ring(void)
{
    static const uint32_t sizes[] = { 1, 60, 1500, 4096, 9216 };
    Vnic *v = vnic_new(",x-shm-ring=on", true);
    g_autofree uint8_t *want = g_malloc(BUF_SIZE);
    g_autofree uint8_t *got = g_malloc(BUF_SIZE + 1);
    ShmPeer p;
    uint32_t idx = 0;
    unsigned i, round;

    shm_peer_accept(v, &p);
    vnic_start(v);
    for (round = 0; round < 60; round++) {
        /* 300 frames each way wrap both 256-slot rings */
        post_rx(v, ARRAY_SIZE(sizes), BUF_SIZE);
        for (i = 0; i < ARRAY_SIZE(sizes); i++) {
            cnuas_qtest_fill(want, sizes[i], round * 8 + i);
            shm_peer_send(&p, want, sizes[i]);
            qtest_memwrite(v->qts, v->txbuf + i * BUF_SIZE, want, sizes[i]);
            put_desc(v, v->txring, idx++, v->txbuf + i * BUF_SIZE, sizes[i],
                     0);
        }
        if (!round) {
            /*
             * The RX thread takes the switch's ACCEPT in its own time, and
             * until it does frames rightly go on the socket: frames from
             * the RX ring show it took it, so the first TX work after that
             * must send RING_ON before any frame.
             */
            g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u,
                              v->rxprod));
        }
        wr(v, CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_PROD, idx);
        if (!round) {
            /* the first TX work: RING_ON, its last socket message */
            g_assert_cmpint(sw_recv(v, got, BUF_SIZE + 1, 5000), ==,
                            CNUAS_SHM_MSG_LEN);
            g_assert_cmpuint(((struct cnuas_shm_msg *)got)->type, ==,
                             CNUAS_SHM_RING_ON);
        }
        for (i = 0; i < ARRAY_SIZE(sizes); i++) {
            cnuas_qtest_fill(want, sizes[i], round * 8 + i);
            g_assert_cmpint(shm_peer_recv(&p, got), ==, sizes[i]);
            g_assert(memcmp(got, want, sizes[i]) == 0);
        }
        g_assert(wait_reg(v, CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_CONS, ~0u,
                          v->rxprod));
        for (i = 0; i < ARRAY_SIZE(sizes); i++) {
            check_rx(v, v->rxprod - ARRAY_SIZE(sizes) + i, sizes[i],
                     round * 8 + i);
        }
    }
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_TX_FRAMES), ==, idx);
    g_assert_cmpuint(vstat(v, CNUAS_VNIC_STAT_RX_FRAMES), ==, v->rxprod);
    /* nothing more on the socket: every frame took the rings */
    g_assert_cmpint(sw_recv(v, got, BUF_SIZE, 100), ==, -1);
    shm_peer_free(&p);
    vnic_free(v);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/cnuas-vnic/registers", test_registers);
    qtest_add_func("/cnuas-vnic/properties", test_properties);
    qtest_add_func("/cnuas-vnic/default-mac", test_default_mac);
    qtest_add_func("/cnuas-vnic/pcie-link", test_pcie_link);
    qtest_add_func("/cnuas-vnic/tx", test_tx);
    qtest_add_func("/cnuas-vnic/tx-backpressure", test_tx_backpressure);
    qtest_add_func("/cnuas-vnic/rx", test_rx);
    qtest_add_func("/cnuas-vnic/rx-backpressure", test_rx_backpressure);
    qtest_add_func("/cnuas-vnic/rx-poll", test_rx_poll);
    qtest_add_func("/cnuas-vnic/shm-ring", test_shm_ring);
    qtest_add_func("/cnuas-vnic/roce-icrc", test_roce_icrc);
    qtest_add_func("/cnuas-vnic/tx-bad-descriptors", test_tx_bad);
    qtest_add_func("/cnuas-vnic/bad-setup", test_bad_setup);
    qtest_add_func("/cnuas-vnic/link", test_link);
    qtest_add_func("/cnuas-vnic/ib-link", test_ib_link);
    qtest_add_func("/cnuas-vnic/link-warnings", test_link_warnings);
    qtest_add_func("/cnuas-vnic/ib-crc", test_ib_crc);
    qtest_add_func("/cnuas-vnic/msix-mask", test_msix_mask);
    qtest_add_func("/cnuas-vnic/msix-automask", test_msix_automask);
    qtest_add_func("/cnuas-vnic/msix-reentrancy", test_msix_reentrancy);
    qtest_add_func("/cnuas-vnic/int-delay", test_int_delay);
    qtest_add_func("/cnuas-vnic/random", test_random);
    qtest_add_func("/cnuas-vnic/stop-cont", test_stop_cont);
    qtest_add_func("/cnuas-vnic/migrate", test_migrate);
    qtest_add_func("/cnuas-vnic/migrate-ib", test_migrate_ib);
    qtest_add_func("/cnuas-vnic/hotplug", test_hotplug);
    return g_test_run();
}
