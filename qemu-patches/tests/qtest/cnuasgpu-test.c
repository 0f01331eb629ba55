/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest for the cnuasgpu device: identification, BAR sizes and types,
 * property validation, hostile offsets and lengths, CnuasLink frames in
 * both directions through a real SOCK_SEQPACKET socket (the test plays the
 * peer GPU), back-pressure, link loss and reconnect, listening mode, reset.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include <poll.h>
#include <sys/un.h>
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci-pc.h"
#include "hw/pci/pci_regs.h"
#include "hw/misc/cnuasgpu_hw.h"

#define DEVMEM          (16 * 1024 * 1024)
#define WAIT_US         (5 * 1000 * 1000)
#define MAXF            CNUASGPU_LINK_MAX_FRAME

typedef struct Gpu {
    QOSState *qs;
    QTestState *qts;
    QPCIDevice *dev;
    QPCIBar regs, mem;
    uint64_t regs_size, mem_size;
    char *dir;
    char *path;
    int lfd;                    /* listening socket: the peer */
    int cfd;                    /* the device's connection */
} Gpu;

static void save_dev(QPCIDevice *dev, int devfn, void *data)
{
    QPCIDevice **pdev = data;

    if (!*pdev) {
        *pdev = dev;
    } else {
        g_free(dev);
    }
}

static int listen_on(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpuint(strlen(path), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, path);
    unlink(path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    g_assert_cmpint(listen(fd, 4), ==, 0);
    return fd;
}

static int accept_timeout(int lfd)
{
    struct pollfd pfd = { .fd = lfd, .events = POLLIN };
    int fd;

    g_assert_cmpint(poll(&pfd, 1, WAIT_US / 1000), ==, 1);
    fd = accept(lfd, NULL, NULL);
    g_assert_cmpint(fd, >=, 0);
    return fd;
}

static uint32_t rd(Gpu *g, uint32_t reg)
{
    return qpci_io_readl(g->dev, g->regs, reg);
}

static void wr(Gpu *g, uint32_t reg, uint32_t val)
{
    qpci_io_writel(g->dev, g->regs, reg, val);
}

static uint32_t gstat(Gpu *g, uint32_t off)
{
    return rd(g, CNUASGPU_REG_STATS + off);
}

/* Poll a register (through qtest, so QEMU keeps running) until it matches. */
static bool wait_reg(Gpu *g, uint32_t reg, uint32_t mask, uint32_t want)
{
    int us;

    for (us = 0; us < WAIT_US; us += 1000) {
        if ((rd(g, reg) & mask) == want) {
            return true;
        }
        g_usleep(1000);
    }
    return false;
}

/* sock: 0 none, 1 device connects to us, 2 device listens */
static Gpu *gpu_new(const char *extra, int sock)
{
    Gpu *g = g_new0(Gpu, 1);
    QPCIDevice *dev = NULL;

    g->dir = g_dir_make_tmp("cnuasgpu-XXXXXX", NULL);
    g_assert(g->dir);
    g->path = g_build_filename(g->dir, "link.sock", NULL);
    g->lfd = -1;
    g->cfd = -1;
    if (sock == 1) {
        g->lfd = listen_on(g->path);
    }
    g->qs = qtest_pc_boot("-nodefaults -device cnuasgpu,id=gpu0,addr=0x4%s%s"
                          "%s%s", extra ? extra : "",
                          sock ? ",cnuaslink_socket=" : "",
                          sock ? g->path : "",
                          sock == 2 ? ",cnuaslink_listen=on" : "");
    g->qts = g->qs->qts;
    qpci_device_foreach(g->qs->pcibus, CNUASGPU_VENDOR_ID,
                        CNUASGPU_DEVICE_ID, save_dev, &dev);
    g_assert(dev);
    g->dev = dev;
    g->regs = qpci_iomap(dev, CNUASGPU_BAR_REGS, &g->regs_size);
    g->mem = qpci_iomap(dev, CNUASGPU_BAR_DEVMEM, &g->mem_size);
    qpci_device_enable(dev);
    if (sock == 1) {
        g->cfd = accept_timeout(g->lfd);
    } else if (sock == 2) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        strcpy(sa.sun_path, g->path);
        g->cfd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        g_assert_cmpint(connect(g->cfd, (struct sockaddr *)&sa,
                                sizeof(sa)), ==, 0);
    }
    return g;
}

static void gpu_free(Gpu *g)
{
    if (g->cfd >= 0) {
        close(g->cfd);
    }
    if (g->lfd >= 0) {
        close(g->lfd);
    }
    g_free(g->dev);
    qtest_shutdown(g->qs);
    unlink(g->path);
    rmdir(g->dir);
    g_free(g->path);
    g_free(g->dir);
    g_free(g);
}

static void fill(uint8_t *buf, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
    }
}

static ssize_t peer_recv(Gpu *g, uint8_t *buf, size_t size, int timeout_ms)
{
    struct pollfd pfd = { .fd = g->cfd, .events = POLLIN };

    if (poll(&pfd, 1, timeout_ms) != 1) {
        return -1;
    }
    return recv(g->cfd, buf, size, MSG_DONTWAIT);
}

static void peer_send(Gpu *g, const uint8_t *buf, size_t len)
{
    g_assert_cmpint(send(g->cfd, buf, len, 0), ==, len);
}

static void set_tx(Gpu *g, uint64_t off, uint32_t len)
{
    wr(g, CNUASGPU_REG_TX_OFF_LO, (uint32_t)off);
    wr(g, CNUASGPU_REG_TX_OFF_HI, off >> 32);
    wr(g, CNUASGPU_REG_TX_LEN, len);
}

/* Receive off while the buffer moves, as a driver would do it. */
static void set_rx(Gpu *g, uint64_t off, uint32_t size)
{
    wr(g, CNUASGPU_REG_RX_BUF_SIZE, 0);
    wr(g, CNUASGPU_REG_RX_OFF_LO, (uint32_t)off);
    wr(g, CNUASGPU_REG_RX_OFF_HI, off >> 32);
    wr(g, CNUASGPU_REG_RX_BUF_SIZE, size);
}

static void test_identification(void)
{
    Gpu *g = gpu_new(",devmem_size=16M,gpu_id=7", 0);
    uint32_t bar1;

    g_assert_cmphex(qpci_config_readw(g->dev, PCI_VENDOR_ID), ==, 0x1af4);
    g_assert_cmphex(qpci_config_readw(g->dev, PCI_DEVICE_ID), ==, 0x10f1);
    g_assert_cmphex(qpci_config_readw(g->dev, PCI_CLASS_DEVICE), ==, 0x0b40);
    g_assert_cmphex(qpci_config_readb(g->dev, PCI_REVISION_ID), ==, 1);
    g_assert_cmpuint(g->regs_size, ==, 64 * 1024);
    g_assert_cmpuint(g->mem_size, ==, DEVMEM);
    bar1 = qpci_config_readl(g->dev, PCI_BASE_ADDRESS_0 + 4 *
                             CNUASGPU_BAR_DEVMEM);
    g_assert_cmphex(bar1 & 0xf, ==, PCI_BASE_ADDRESS_MEM_TYPE_64 |
                    PCI_BASE_ADDRESS_MEM_PREFETCH);
    g_assert(qpci_find_capability(g->dev, PCI_CAP_ID_MSI, 0));
    g_assert_cmphex(qpci_config_readb(g->dev, PCI_INTERRUPT_PIN), ==, 1);

    g_assert_cmphex(rd(g, CNUASGPU_REG_VENDOR), ==, 0x1af4);
    g_assert_cmphex(rd(g, CNUASGPU_REG_DEVICE), ==, 0x10f1);
    g_assert_cmphex(rd(g, CNUASGPU_REG_REVISION), ==, 1);
    g_assert_cmphex(rd(g, CNUASGPU_REG_FW_VERSION), ==, 0x000100);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_GPU_ID), ==, 7);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_SM_COUNT), ==, 16);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_LANES_PER_SM), ==, 32);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TENSOR_SIZE), ==, 16);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_DEVMEM_SIZE_LO), ==, DEVMEM);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_DEVMEM_SIZE_HI), ==, 0);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_LINK_MAX_FRAME), ==, 65536);
    /* Reset values: every cause masked, nothing pending, no link. */
    g_assert_cmphex(rd(g, CNUASGPU_REG_INT_MASK), ==, CNUASGPU_INT_ALL);
    g_assert_cmphex(rd(g, CNUASGPU_REG_INT_STATUS), ==, 0);
    g_assert_cmphex(rd(g, CNUASGPU_REG_LINK_STATUS), ==, 0);
    /* Identification is read-only; unknown offsets read 0. */
    wr(g, CNUASGPU_REG_GPU_ID, 99);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_GPU_ID), ==, 7);
    g_assert_cmphex(rd(g, 0xfffc), ==, 0);
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_GUEST_ERRORS), ==, 2);
    gpu_free(g);
}

static void test_default_size(void)
{
    Gpu *g = gpu_new(NULL, 0);

    g_assert_cmpuint(g->mem_size, ==, 256 * 1024 * 1024);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_DEVMEM_SIZE_LO), ==, 256u << 20);
    gpu_free(g);
}

/* Device memory behaves as memory through BAR1. */
static void test_devmem(void)
{
    Gpu *g = gpu_new(",devmem_size=16M", 0);
    g_autofree uint8_t *a = g_malloc(8192), *b = g_malloc(8192);

    fill(a, 8192, 3);
    qpci_memwrite(g->dev, g->mem, DEVMEM - 8192, a, 8192);
    qpci_memread(g->dev, g->mem, DEVMEM - 8192, b, 8192);
    g_assert_cmpmem(a, 8192, b, 8192);
    qpci_io_writeq(g->dev, g->mem, 8, 0x0123456789abcdefull);
    g_assert_cmphex(qpci_io_readq(g->dev, g->mem, 8), ==,
                    0x0123456789abcdefull);
    gpu_free(g);
}

static void expect_bad_props(const char *props, const char *msg)
{
    const char *qemu = g_getenv("QTEST_QEMU_BINARY");
    g_autofree char *dev = g_strdup_printf("cnuasgpu%s", props);
    g_autofree char *err = NULL;
    char *argv[] = { (char *)qemu, (char *)"-M", (char *)"pc",
                     (char *)"-nodefaults", (char *)"-display",
                     (char *)"none", (char *)"-S", (char *)"-device", dev,
                     NULL };
    int status;

    g_assert(qemu);
    g_assert(g_spawn_sync(NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                          NULL, NULL, &err, &status, NULL));
    g_assert_cmpint(status, !=, 0);
    g_assert(strstr(err, msg));
}

static void test_bad_properties(void)
{
    expect_bad_props(",devmem_size=3M", "power of two");
    expect_bad_props(",devmem_size=512K", "power of two");
    expect_bad_props(",devmem_size=128G", "power of two");
    expect_bad_props(",cnuaslink_listen=on", "needs cnuaslink_socket");
    expect_bad_props(",cnuaslink_socket=/tmp/"
                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                     "longer than");
}

/* Every offset/length the guest gives is checked against BAR1. */
static void test_bad_ranges(void)
{
    static const struct {
        uint64_t off;
        uint32_t len;
    } bad[] = {
        { 0, 0 },
        { 0, MAXF + 1 },
        { DEVMEM, 1 },
        { DEVMEM - 100, 101 },
        { UINT64_MAX, 2 },
        { UINT64_MAX - 10, 64 },
        { 1ull << 40, 64 },
    };
    Gpu *g = gpu_new(",devmem_size=16M", 1);
    uint8_t buf[64];
    uint32_t errs;
    unsigned i;

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    for (i = 0; i < ARRAY_SIZE(bad); i++) {
        errs = gstat(g, CNUASGPU_STAT_TX_ERRORS);
        set_tx(g, bad[i].off, bad[i].len);
        wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
        g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==,
                         CNUASGPU_TX_ERR_RANGE);
        g_assert_cmpuint(gstat(g, CNUASGPU_STAT_TX_ERRORS), ==, errs + 1);
    }
    g_assert_cmpint(peer_recv(g, buf, sizeof(buf), 200), ==, -1);

    /* An RX buffer outside BAR1 never receives; a valid one does. */
    fill(buf, sizeof(buf), 1);
    peer_send(g, buf, sizeof(buf));
    for (i = 0; i < 3; i++) {
        set_rx(g, bad[i + 2].off, bad[i + 2].len);
        g_usleep(100 * 1000);
        g_assert_cmpuint(rd(g, CNUASGPU_REG_RX_LEN), ==, 0);
    }
    set_rx(g, DEVMEM - 64, 64);
    g_assert(wait_reg(g, CNUASGPU_REG_RX_LEN, ~0u, 64));
    gpu_free(g);
}

static void test_link_frames(void)
{
    static const uint32_t sizes[] = { 1, 60, 1500, 4097, 9216, MAXF };
    Gpu *g = gpu_new(",devmem_size=16M", 1);
    g_autofree uint8_t *a = g_malloc(MAXF + 16), *b = g_malloc(MAXF + 16);
    uint64_t txoff = 0x100000 + 3, rxoff = 0x400000;
    unsigned i;

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    wr(g, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_ALL);
    wr(g, CNUASGPU_REG_INT_MASK, 0);

    /* TX: BAR1 -> peer, byte for byte. */
    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        fill(a, sizes[i], i);
        qpci_memwrite(g->dev, g->mem, txoff, a, sizes[i]);
        set_tx(g, txoff, sizes[i]);
        wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
        g_assert_cmpint(peer_recv(g, b, MAXF + 16, WAIT_US / 1000), ==,
                        sizes[i]);
        g_assert_cmpmem(a, sizes[i], b, sizes[i]);
        g_assert(wait_reg(g, CNUASGPU_REG_TX_RESULT, ~0u, CNUASGPU_TX_OK));
        g_assert(rd(g, CNUASGPU_REG_INT_STATUS) & CNUASGPU_INT_TX);
        wr(g, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_TX);
    }
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_TX_FRAMES), ==,
                     ARRAY_SIZE(sizes));

    /* RX: peer -> BAR1; one frame per buffer until RX_CONSUME. */
    set_rx(g, rxoff, MAXF);
    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        fill(a, sizes[i], 100 + i);
        peer_send(g, a, sizes[i]);
    }
    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        g_assert(wait_reg(g, CNUASGPU_REG_RX_LEN, ~0u, sizes[i]));
        g_assert(rd(g, CNUASGPU_REG_INT_STATUS) & CNUASGPU_INT_RX);
        fill(a, sizes[i], 100 + i);
        qpci_memread(g->dev, g->mem, rxoff, b, sizes[i]);
        g_assert_cmpmem(a, sizes[i], b, sizes[i]);
        /* Held: the next frame waits for the consume. */
        g_usleep(20 * 1000);
        g_assert_cmpuint(rd(g, CNUASGPU_REG_RX_LEN), ==, sizes[i]);
        wr(g, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_RX);
        wr(g, CNUASGPU_REG_RX_CONSUME, 1);
    }
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_RX_FRAMES), ==,
                     ARRAY_SIZE(sizes));

    /* Larger than the buffer: dropped and counted, the next one fits. */
    set_rx(g, rxoff, 100);
    fill(a, 101, 7);
    peer_send(g, a, 101);
    peer_send(g, a, 100);
    g_assert(wait_reg(g, CNUASGPU_REG_RX_LEN, ~0u, 100));
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_RX_DROPS), ==, 1);
    wr(g, CNUASGPU_REG_RX_CONSUME, 1);

    /* Peer hangs up: link down, INT_LINK; it comes back by itself. */
    wr(g, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_ALL);
    close(g->cfd);
    g->cfd = -1;
    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP, 0));
    g_assert(rd(g, CNUASGPU_REG_INT_STATUS) & CNUASGPU_INT_LINK);
    set_tx(g, txoff, 10);
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==, CNUASGPU_TX_ERR_LINK);
    g->cfd = accept_timeout(g->lfd);
    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpint(peer_recv(g, b, MAXF, WAIT_US / 1000), ==, 10);
    gpu_free(g);
}

/* TX back-pressure: a full socket keeps the send in flight, nothing lost. */
static void test_tx_backpressure(void)
{
    Gpu *g = gpu_new(",devmem_size=16M", 1);
    g_autofree uint8_t *b = g_malloc(MAXF);
    unsigned sent = 0, got = 0, i;

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    set_tx(g, 0, MAXF);
    for (i = 0; i < 200; i++) {
        if (rd(g, CNUASGPU_REG_LINK_STATUS) & CNUASGPU_LINK_TX_BUSY) {
            break;
        }
        wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
        sent++;
    }
    g_assert_cmpuint(rd(g, CNUASGPU_REG_LINK_STATUS) & CNUASGPU_LINK_TX_BUSY,
                     ==, CNUASGPU_LINK_TX_BUSY);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==, CNUASGPU_TX_PENDING);
    /* A doorbell while busy is refused, the frame in flight stays. */
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_TX_ERRORS), ==, 1);
    while (peer_recv(g, b, MAXF, 500) == MAXF) {
        got++;
    }
    g_assert_cmpuint(got, ==, sent);
    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_TX_BUSY, 0));
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==, CNUASGPU_TX_OK);
    gpu_free(g);
}

static void test_listen_mode(void)
{
    Gpu *g = gpu_new(",devmem_size=1M", 2);
    uint8_t a[32], b[32];

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    set_rx(g, 0, sizeof(b));
    fill(a, sizeof(a), 9);
    peer_send(g, a, sizeof(a));
    g_assert(wait_reg(g, CNUASGPU_REG_RX_LEN, ~0u, sizeof(a)));
    qpci_memread(g->dev, g->mem, 0, b, sizeof(b));
    g_assert_cmpmem(a, sizeof(a), b, sizeof(b));
    gpu_free(g);
}

static void test_reset(void)
{
    static const uint32_t regs[] = {
        CNUASGPU_REG_INT_STATUS, CNUASGPU_REG_TX_OFF_LO, CNUASGPU_REG_TX_OFF_HI,
        CNUASGPU_REG_TX_LEN, CNUASGPU_REG_TX_RESULT, CNUASGPU_REG_RX_OFF_LO,
        CNUASGPU_REG_RX_OFF_HI, CNUASGPU_REG_RX_BUF_SIZE, CNUASGPU_REG_RX_LEN,
    };
    Gpu *g = gpu_new(",devmem_size=16M", 1);
    uint32_t off;
    unsigned i;

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    wr(g, CNUASGPU_REG_INT_MASK, 0);
    set_tx(g, 0x1234, 0);
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    set_rx(g, 0x8000, 4096);
    qpci_io_writel(g->dev, g->mem, 0, 0xfeedf00d);
    qtest_qmp_assert_success(g->qts, "{'execute': 'system_reset'}");
    qtest_qmp_eventwait(g->qts, "RESET");
    /* libqos remaps on demand: the BARs are unassigned after reset. */
    g->regs = qpci_iomap(g->dev, CNUASGPU_BAR_REGS, NULL);
    g->mem = qpci_iomap(g->dev, CNUASGPU_BAR_DEVMEM, NULL);
    qpci_device_enable(g->dev);
    g_assert_cmphex(rd(g, CNUASGPU_REG_INT_MASK), ==, CNUASGPU_INT_ALL);
    for (i = 0; i < ARRAY_SIZE(regs); i++) {
        g_assert_cmphex(rd(g, regs[i]), ==, 0);
    }
    for (off = 0; off < 4 * CNUASGPU_NUM_STATS; off += 4) {
        g_assert_cmphex(gstat(g, off), ==, 0);
    }
    /* Device memory and the link survive a reset. */
    g_assert_cmphex(qpci_io_readl(g->dev, g->mem, 0), ==, 0xfeedf00d);
    g_assert_cmphex(rd(g, CNUASGPU_REG_LINK_STATUS), ==, CNUASGPU_LINK_UP);
    gpu_free(g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("/cnuasgpu/identification", test_identification);
    qtest_add_func("/cnuasgpu/default_size", test_default_size);
    qtest_add_func("/cnuasgpu/devmem", test_devmem);
    qtest_add_func("/cnuasgpu/bad_properties", test_bad_properties);
    qtest_add_func("/cnuasgpu/bad_ranges", test_bad_ranges);
    qtest_add_func("/cnuasgpu/link_frames", test_link_frames);
    qtest_add_func("/cnuasgpu/tx_backpressure", test_tx_backpressure);
    qtest_add_func("/cnuasgpu/listen_mode", test_listen_mode);
    qtest_add_func("/cnuasgpu/reset", test_reset);
    return g_test_run();
}
