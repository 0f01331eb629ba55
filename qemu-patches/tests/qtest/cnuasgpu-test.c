/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QTest for the cnuasgpu device: identification, BAR sizes and types,
 * property validation, hostile offsets and lengths, CnuasLink frames in
 * both directions through a real SOCK_SEQPACKET socket (the test plays the
 * peer GPU, hw/misc/cnuaslink.h), acknowledgements and duplicates,
 * malformed messages, link loss, the hold and the resend, listening mode,
 * reset.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "cnuas-qtest-harness.h"
#include "hw/pci/pci_regs.h"
#include "hw/misc/cnuasgpu_hw.h"
#include "hw/misc/cnuaslink.h"

#define DEVMEM          (16 * 1024 * 1024)
#define WAIT_US         CNUAS_QTEST_WAIT_US
#define MAXF            CNUASGPU_LINK_MAX_FRAME
#define PEER_EPOCH      0x5eed0000cafe0001ull

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
    uint64_t seq;               /* of the peer's last DATA */
    CnuasLinkHdr last;          /* header of the device's last DATA */
} Gpu;

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

static bool wait_reg(Gpu *g, uint32_t reg, uint32_t mask, uint32_t want)
{
    return cnuas_qtest_wait_reg(g->dev, g->regs, reg, mask, want);
}

/* sock: 0 none, 1 device connects to us, 2 device listens */
static Gpu *gpu_new(const char *extra, int sock)
{
    Gpu *g = g_new0(Gpu, 1);
    QPCIDevice *dev;

    g->path = cnuas_qtest_sock_path("cnuasgpu-XXXXXX", "link.sock", &g->dir);
    g->lfd = -1;
    g->cfd = -1;
    if (sock == 1) {
        g->lfd = cnuas_qtest_listen(g->path);
    }
    g->qs = qtest_pc_boot("-nodefaults -device cnuasgpu,id=gpu0,addr=0x4%s%s"
                          "%s%s", extra ? extra : "",
                          sock ? ",cnuaslink_socket=" : "",
                          sock ? g->path : "",
                          sock == 2 ? ",cnuaslink_listen=on" : "");
    g->qts = g->qs->qts;
    dev = cnuas_qtest_find_dev(g->qs->pcibus, CNUASGPU_VENDOR_ID,
                               CNUASGPU_DEVICE_ID);
    g->dev = dev;
    g->regs = qpci_iomap(dev, CNUASGPU_BAR_REGS, &g->regs_size);
    g->mem = qpci_iomap(dev, CNUASGPU_BAR_DEVMEM, &g->mem_size);
    qpci_device_enable(dev);
    if (sock == 1) {
        g->cfd = cnuas_qtest_accept(g->lfd);
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
    cnuas_qtest_close(g->cfd);
    cnuas_qtest_close(g->lfd);
    g_free(g->dev);
    qtest_shutdown(g->qs);
    cnuas_qtest_sock_path_free(g->dir, g->path);
    g_free(g);
}

/* One message from the device: its header in *h, the frame in buf. */
static ssize_t peer_msg(Gpu *g, CnuasLinkHdr *h, uint8_t *buf, size_t size,
                        int timeout_ms)
{
    struct pollfd pfd = { .fd = g->cfd, .events = POLLIN };
    struct iovec iov[2] = {
        { .iov_base = h, .iov_len = sizeof(*h) },
        { .iov_base = buf, .iov_len = size },
    };
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
    ssize_t r;

    if (poll(&pfd, 1, timeout_ms) != 1) {
        return -1;
    }
    r = recvmsg(g->cfd, &msg, MSG_DONTWAIT);
    g_assert_cmpint(r, >=, (ssize_t)sizeof(*h));
    g_assert_cmpint(msg.msg_flags & MSG_TRUNC, ==, 0);
    return r - sizeof(*h);
}

static void peer_raw(Gpu *g, uint8_t type, uint64_t epoch, uint64_t seq,
                     const uint8_t *buf, size_t len)
{
    CnuasLinkHdr h = {
        .type = type, .epoch = cpu_to_le64(epoch), .seq = cpu_to_le64(seq),
    };
    struct iovec iov[2] = {
        { .iov_base = &h, .iov_len = sizeof(h) },
        { .iov_base = (void *)buf, .iov_len = len },
    };
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

    g_assert_cmpint(sendmsg(g->cfd, &msg, 0), ==, sizeof(h) + len);
}

/* The device's next frame, without acknowledging it (-1: none). */
static ssize_t peer_recv_noack(Gpu *g, uint8_t *buf, size_t size,
                               int timeout_ms)
{
    ssize_t r;

    do {
        r = peer_msg(g, &g->last, buf, size, timeout_ms);
    } while (r >= 0 && g->last.type == CNUASLINK_ACK);
    if (r >= 0) {
        g_assert_cmpuint(g->last.type, ==, CNUASLINK_DATA);
        g_assert(g->last.epoch);
    }
    return r;
}

static void peer_ack(Gpu *g)
{
    peer_raw(g, CNUASLINK_ACK, le64_to_cpu(g->last.epoch),
             le64_to_cpu(g->last.seq), NULL, 0);
}

/* The device's next frame, acknowledged as a peer GPU does. */
static ssize_t peer_recv(Gpu *g, uint8_t *buf, size_t size, int timeout_ms)
{
    ssize_t r = peer_recv_noack(g, buf, size, timeout_ms);

    if (r >= 0) {
        peer_ack(g);
    }
    return r;
}

static void peer_send(Gpu *g, const uint8_t *buf, size_t len)
{
    peer_raw(g, CNUASLINK_DATA, PEER_EPOCH, ++g->seq, buf, len);
}

/* The device acknowledged our DATA seq (and nothing else came), or not. */
static bool peer_acked(Gpu *g, uint64_t seq, int timeout_ms)
{
    CnuasLinkHdr h;
    uint8_t b[16];

    if (peer_msg(g, &h, b, sizeof(b), timeout_ms) < 0) {
        return false;
    }
    g_assert_cmpuint(h.type, ==, CNUASLINK_ACK);
    g_assert_cmphex(le64_to_cpu(h.epoch), ==, PEER_EPOCH);
    g_assert_cmpuint(le64_to_cpu(h.seq), ==, seq);
    return true;
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

    cnuas_qtest_fill(a, 8192, 3);
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
    cnuas_qtest_fill(buf, sizeof(buf), 1);
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
    Gpu *g = gpu_new(",devmem_size=16M,x-link-hold-ms=0", 1);
    g_autofree uint8_t *a = g_malloc(MAXF + 16), *b = g_malloc(MAXF + 16);
    uint64_t txoff = 0x100000 + 3, rxoff = 0x400000;
    unsigned i;

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    wr(g, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_ALL);
    wr(g, CNUASGPU_REG_INT_MASK, 0);

    /* TX: BAR1 -> peer, byte for byte. */
    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        cnuas_qtest_fill(a, sizes[i], i);
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

    /*
     * RX: peer -> BAR1; one frame per buffer until RX_CONSUME, and the
     * acknowledgement only once the frame is in BAR1: the next frame
     * waits in the device meanwhile.
     */
    set_rx(g, rxoff, MAXF);
    cnuas_qtest_fill(a, sizes[0], 100);
    peer_send(g, a, sizes[0]);
    for (i = 0; i < ARRAY_SIZE(sizes); i++) {
        g_assert(wait_reg(g, CNUASGPU_REG_RX_LEN, ~0u, sizes[i]));
        g_assert(rd(g, CNUASGPU_REG_INT_STATUS) & CNUASGPU_INT_RX);
        cnuas_qtest_fill(a, sizes[i], 100 + i);
        qpci_memread(g->dev, g->mem, rxoff, b, sizes[i]);
        g_assert_cmpmem(a, sizes[i], b, sizes[i]);
        g_assert(peer_acked(g, g->seq, WAIT_US / 1000));
        if (i + 1 < ARRAY_SIZE(sizes)) {
            cnuas_qtest_fill(a, sizes[i + 1], 100 + i + 1);
            peer_send(g, a, sizes[i + 1]);
            /* Held: the next frame waits for the consume, unacknowledged. */
            g_assert(!peer_acked(g, g->seq, 50));
            g_assert_cmpuint(rd(g, CNUASGPU_REG_RX_LEN), ==, sizes[i]);
        }
        wr(g, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_RX);
        wr(g, CNUASGPU_REG_RX_CONSUME, 1);
    }
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_RX_FRAMES), ==,
                     ARRAY_SIZE(sizes));

    /* A copy of a frame it has (a resend) is acknowledged, not delivered. */
    peer_raw(g, CNUASLINK_DATA, PEER_EPOCH, g->seq, a, 10);
    g_assert(peer_acked(g, g->seq, WAIT_US / 1000));
    g_assert_cmpuint(rd(g, CNUASGPU_REG_RX_LEN), ==, 0);
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_RX_FRAMES), ==,
                     ARRAY_SIZE(sizes));

    /* Malformed messages are dropped and counted; nothing else changes. */
    g_assert_cmpint(send(g->cfd, a, 5, 0), ==, 5);
    peer_raw(g, 9, PEER_EPOCH, g->seq + 1, a, 10);
    peer_raw(g, CNUASLINK_DATA, 0, g->seq + 1, a, 10);
    peer_raw(g, CNUASLINK_ACK, 1, 1, NULL, 0);
    g_assert(wait_reg(g, CNUASGPU_REG_STATS + CNUASGPU_STAT_RX_DROPS, ~0u, 3));
    g_assert(!peer_acked(g, g->seq + 1, 50));
    g_assert_cmpuint(rd(g, CNUASGPU_REG_RX_LEN), ==, 0);

    /* Larger than the buffer: dropped, counted and acknowledged. */
    set_rx(g, rxoff, 100);
    cnuas_qtest_fill(a, 101, 7);
    peer_send(g, a, 101);
    g_assert(peer_acked(g, g->seq, WAIT_US / 1000));
    peer_send(g, a, 100);
    g_assert(wait_reg(g, CNUASGPU_REG_RX_LEN, ~0u, 100));
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_RX_DROPS), ==, 4);
    g_assert(peer_acked(g, g->seq, WAIT_US / 1000));
    wr(g, CNUASGPU_REG_RX_CONSUME, 1);

    /* Peer hangs up (no hold here): link down, INT_LINK; it comes back. */
    wr(g, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_ALL);
    close(g->cfd);
    g->cfd = -1;
    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP, 0));
    g_assert(rd(g, CNUASGPU_REG_INT_STATUS) & CNUASGPU_INT_LINK);
    set_tx(g, txoff, 10);
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==, CNUASGPU_TX_ERR_LINK);
    g->cfd = cnuas_qtest_accept(g->lfd);
    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpint(peer_recv(g, b, MAXF, WAIT_US / 1000), ==, 10);
    gpu_free(g);
}

/*
 * A send finishes when the peer acknowledges it: one frame in flight,
 * a doorbell meanwhile refused, acknowledgements of other frames ignored.
 */
static void test_tx_ack(void)
{
    Gpu *g = gpu_new(",devmem_size=16M", 1);
    g_autofree uint8_t *b = g_malloc(MAXF);

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    set_tx(g, 0, MAXF);
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpint(peer_recv_noack(g, b, MAXF, WAIT_US / 1000), ==, MAXF);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_LINK_STATUS) & CNUASGPU_LINK_TX_BUSY,
                     ==, CNUASGPU_LINK_TX_BUSY);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==, CNUASGPU_TX_PENDING);
    /* A doorbell while busy is refused, the frame in flight stays. */
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_TX_ERRORS), ==, 1);
    g_assert_cmpint(peer_recv_noack(g, b, MAXF, 100), ==, -1);
    peer_raw(g, CNUASLINK_ACK, le64_to_cpu(g->last.epoch),
             le64_to_cpu(g->last.seq) + 1, NULL, 0);
    peer_raw(g, CNUASLINK_ACK, le64_to_cpu(g->last.epoch) ^ 1,
             le64_to_cpu(g->last.seq), NULL, 0);
    g_usleep(100 * 1000);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==, CNUASGPU_TX_PENDING);
    peer_ack(g);
    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_TX_BUSY, 0));
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==, CNUASGPU_TX_OK);
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_TX_FRAMES), ==, 1);
    gpu_free(g);
}

/*
 * A lost connection while the link is up (a peer restarting, a VM moving
 * to a new process) is no link loss for x-link-hold-ms: the link stays up,
 * the unacknowledged frame is sent again, same epoch and seq, on the next
 * connection. Only a hold that runs out takes the link and the send down.
 */
static void test_link_hold(void)
{
    Gpu *g = gpu_new(",devmem_size=16M,x-link-hold-ms=1500", 1);
    g_autofree uint8_t *a = g_malloc(MAXF), *b = g_malloc(MAXF);
    CnuasLinkHdr first;

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    wr(g, CNUASGPU_REG_INT_STATUS, CNUASGPU_INT_ALL);
    cnuas_qtest_fill(a, 3000, 42);
    qpci_memwrite(g->dev, g->mem, 0x1000, a, 3000);
    set_tx(g, 0x1000, 3000);
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpint(peer_recv_noack(g, b, MAXF, WAIT_US / 1000), ==, 3000);
    first = g->last;
    close(g->cfd);
    g_usleep(200 * 1000);
    g_assert_cmphex(rd(g, CNUASGPU_REG_LINK_STATUS), ==,
                    CNUASGPU_LINK_UP | CNUASGPU_LINK_TX_BUSY);
    g_assert_cmpuint(rd(g, CNUASGPU_REG_INT_STATUS) & CNUASGPU_INT_LINK, ==, 0);
    g->cfd = cnuas_qtest_accept(g->lfd);
    g_assert_cmpint(peer_recv(g, b, MAXF, WAIT_US / 1000), ==, 3000);
    g_assert_cmpmem(a, 3000, b, 3000);
    g_assert_cmphex(g->last.epoch, ==, first.epoch);
    g_assert_cmphex(g->last.seq, ==, first.seq);
    g_assert(wait_reg(g, CNUASGPU_REG_TX_RESULT, ~0u, CNUASGPU_TX_OK));
    g_assert_cmpuint(rd(g, CNUASGPU_REG_INT_STATUS) & CNUASGPU_INT_LINK, ==, 0);

    /* No connection within the hold: the link and the send go down. */
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpint(peer_recv_noack(g, b, MAXF, WAIT_US / 1000), ==, 3000);
    g_assert_cmphex(g->last.seq, ==, cpu_to_le64(le64_to_cpu(first.seq) + 1));
    close(g->cfd);
    g->cfd = -1;
    close(g->lfd);      /* the peer is gone: connecting fails */
    g->lfd = -1;
    unlink(g->path);
    g_usleep(1000 * 1000);
    g_assert_cmphex(rd(g, CNUASGPU_REG_LINK_STATUS), ==,
                    CNUASGPU_LINK_UP | CNUASGPU_LINK_TX_BUSY);
    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP, 0));
    g_assert_cmpuint(rd(g, CNUASGPU_REG_TX_RESULT), ==, CNUASGPU_TX_ERR_LINK);
    g_assert(rd(g, CNUASGPU_REG_INT_STATUS) & CNUASGPU_INT_LINK);
    gpu_free(g);
}

static void test_listen_mode(void)
{
    Gpu *g = gpu_new(",devmem_size=1M", 2);
    uint8_t a[32], b[32];

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    set_rx(g, 0, sizeof(b));
    cnuas_qtest_fill(a, sizeof(a), 9);
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

/*
 * Migration carries the frame in flight and the sequence state: the
 * target sends the unacknowledged frame again (same epoch and seq) on its
 * own connection, and acknowledges without delivering a copy of a frame
 * the source had already taken in.
 */
static void test_migrate(void)
{
    Gpu *g = gpu_new(",devmem_size=16M", 1);
    g_autofree char *uri = g_strdup_printf("unix:%s/mig.sock", g->dir);
    g_autofree uint8_t *a = g_malloc(MAXF), *b = g_malloc(MAXF);
    QOSState *src = g->qs, *dst;
    QPCIDevice *dev;
    CnuasLinkHdr first;

    g_assert(wait_reg(g, CNUASGPU_REG_LINK_STATUS, CNUASGPU_LINK_UP,
                      CNUASGPU_LINK_UP));
    set_rx(g, 0x8000, MAXF);
    cnuas_qtest_fill(a, 700, 5);
    peer_send(g, a, 700);
    g_assert(wait_reg(g, CNUASGPU_REG_RX_LEN, ~0u, 700));
    g_assert(peer_acked(g, g->seq, WAIT_US / 1000));
    wr(g, CNUASGPU_REG_RX_CONSUME, 1);
    cnuas_qtest_fill(a, 5000, 6);
    qpci_memwrite(g->dev, g->mem, 0x20000, a, 5000);
    set_tx(g, 0x20000, 5000);
    wr(g, CNUASGPU_REG_TX_DOORBELL, 1);
    g_assert_cmpint(peer_recv_noack(g, b, MAXF, WAIT_US / 1000), ==, 5000);
    first = g->last;

    dst = qtest_pc_boot("-nodefaults -device cnuasgpu,id=gpu0,addr=0x4,"
                        "devmem_size=16M,cnuaslink_socket=%s -incoming %s",
                        g->path, uri);
    migrate(src, dst, uri);
    g_free(g->dev);
    qtest_shutdown(src);
    close(g->cfd);
    g->qs = dst;
    g->qts = dst->qts;
    dev = cnuas_qtest_find_dev(dst->pcibus, CNUASGPU_VENDOR_ID,
                               CNUASGPU_DEVICE_ID);
    g->dev = dev;
    g->regs = qpci_iomap(dev, CNUASGPU_BAR_REGS, NULL);
    g->mem = qpci_iomap(dev, CNUASGPU_BAR_DEVMEM, NULL);
    qpci_device_enable(dev);

    /* The link stayed up for the guest, the send waits for its ACK. */
    g_assert_cmphex(rd(g, CNUASGPU_REG_LINK_STATUS), ==,
                    CNUASGPU_LINK_UP | CNUASGPU_LINK_TX_BUSY);
    g->cfd = cnuas_qtest_accept(g->lfd);
    g_assert_cmpint(peer_recv(g, b, MAXF, WAIT_US / 1000), ==, 5000);
    g_assert_cmpmem(a, 5000, b, 5000);
    g_assert_cmphex(g->last.epoch, ==, first.epoch);
    g_assert_cmphex(g->last.seq, ==, first.seq);
    g_assert(wait_reg(g, CNUASGPU_REG_TX_RESULT, ~0u, CNUASGPU_TX_OK));
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_TX_FRAMES), ==, 1);

    /* Our frame the source took in, sent again: acknowledged, not taken. */
    cnuas_qtest_fill(a, 700, 5);
    peer_raw(g, CNUASLINK_DATA, PEER_EPOCH, g->seq, a, 700);
    g_assert(peer_acked(g, g->seq, WAIT_US / 1000));
    g_assert_cmpuint(rd(g, CNUASGPU_REG_RX_LEN), ==, 0);
    cnuas_qtest_fill(a, 900, 7);
    peer_send(g, a, 900);
    g_assert(wait_reg(g, CNUASGPU_REG_RX_LEN, ~0u, 900));
    qpci_memread(g->dev, g->mem, 0x8000, b, 900);
    g_assert_cmpmem(a, 900, b, 900);
    g_assert_cmpuint(gstat(g, CNUASGPU_STAT_RX_FRAMES), ==, 2);
    unlink(uri + strlen("unix:"));
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
    qtest_add_func("/cnuasgpu/tx_ack", test_tx_ack);
    qtest_add_func("/cnuasgpu/link_hold", test_link_hold);
    qtest_add_func("/cnuasgpu/listen_mode", test_listen_mode);
    qtest_add_func("/cnuasgpu/reset", test_reset);
    qtest_add_func("/cnuasgpu/migrate", test_migrate);
    return g_test_run();
}
