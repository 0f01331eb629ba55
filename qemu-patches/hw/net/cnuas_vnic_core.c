/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuas-vnic device core: registers, descriptor rings, interrupts and the
 * SOCK_SEQPACKET link to cnuas-vswitchd. See docs/specs/cnuas-vnic.rst.
 *
 * The guest is untrusted: every descriptor is copied out of guest memory
 * before use, every buffer must lie in guest RAM, and any violation kills
 * the queue (Q_STATE DEAD, STATUS.ERROR) until the driver resets the
 * device. Work is bounded per bottom half / fd handler run.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "exec/memory.h"
#include "hw/core/cpu.h"
#include "sysemu/dma.h"
#include "hw/net/cnuas_ib_link.h"
#include "cnuas_vnic.h"

#include <poll.h>

#define STAT(name) (CNUAS_VNIC_STAT_##name / 4)

static void cnuas_vnic_update_handlers(CnuasVnicState *s);
static void cnuas_vnic_tx_writable(void *opaque);
static void cnuas_vnic_rx_readable(void *opaque);
static void cnuas_vnic_rx_watch(CnuasVnicState *s, int fd);

/*
 * Work that starts outside an MMIO access (the RX thread, timers) runs
 * under the device's re-entrancy guard, as MMIO and the TX bottom half do:
 * a guest that aims an MSI-X vector or a DMA address at our own BARs then
 * gets a blocked access instead of, say, a reset in the middle of an RX
 * delivery. Returns whether this call engaged the guard.
 */
static bool cnuas_vnic_guard_enter(CnuasVnicState *s)
{
    MemReentrancyGuard *g = &DEVICE(s)->mem_reentrancy_guard;

    if (g->engaged_in_io) {
        return false;
    }
    g->engaged_in_io = true;
    return true;
}

static void cnuas_vnic_guard_exit(CnuasVnicState *s, bool engaged)
{
    if (engaged) {
        DEVICE(s)->mem_reentrancy_guard.engaged_in_io = false;
    }
}

/* ---- Status, status block, interrupts ---- */

static uint32_t cnuas_vnic_status(CnuasVnicState *s)
{
    uint32_t st = 0;

    if (s->link_up) {
        st |= CNUAS_VNIC_STATUS_LINK_UP;
    }
    if (s->ctrl & CNUAS_VNIC_CTRL_ENABLE) {
        st |= CNUAS_VNIC_STATUS_ENABLED;
    }
    if (s->error != CNUAS_VNIC_ERR_NONE) {
        st |= CNUAS_VNIC_STATUS_ERROR;
    }
    return st;
}

static void cnuas_vnic_update_intx(CnuasVnicState *s)
{
    bool level = !cnuas_vnic_pci_msix(s) && (s->int_status & ~s->int_mask);

    cnuas_vnic_pci_set_intx(s, level);
}

/* MSI-X: one message per cause; RX/TX mask themselves with AUTOMASK. */
static void cnuas_vnic_msix_send(CnuasVnicState *s, uint32_t causes)
{
    const uint32_t napi = CNUAS_VNIC_INT_RX | CNUAS_VNIC_INT_TX;
    unsigned vec;

    for (vec = 0; vec < CNUAS_VNIC_NUM_VECTORS; vec++) {
        if (causes & (1u << vec)) {
            s->stats[STAT(IRQS)]++;
            cnuas_vnic_pci_notify(s, vec);
        }
    }
    if ((causes & napi) && (s->drv_features & CNUAS_VNIC_F_INT_AUTOMASK)) {
        s->int_mask |= napi;
    }
}

/* Deliver causes now: MSI-X vector per cause, or the INTx line. */
static void cnuas_vnic_fire(CnuasVnicState *s, uint32_t causes)
{
    causes &= CNUAS_VNIC_INT_ALL;
    if (!causes) {
        return;
    }
    s->int_status |= causes;
    if (cnuas_vnic_pci_msix(s)) {
        uint32_t now = causes & ~s->int_mask;

        s->msix_pending |= causes & s->int_mask;
        cnuas_vnic_msix_send(s, now);
    } else {
        if (causes & ~s->int_mask) {
            s->stats[STAT(IRQS)]++;
        }
        cnuas_vnic_update_intx(s);
    }
}

static bool cnuas_vnic_delay_active(CnuasVnicState *s)
{
    return s->int_delay && (s->drv_features & CNUAS_VNIC_F_INT_DELAY);
}

/*
 * Raise causes. With INT_DELAY in use it is the least time between two
 * RX/TX interrupts: a cause after a quiet spell is signalled at once (a
 * lone frame is never held), one that comes sooner waits for the end of
 * the spell and goes with whatever else came meanwhile.
 */
static void cnuas_vnic_raise(CnuasVnicState *s, uint32_t causes)
{
    uint32_t slow = causes & (CNUAS_VNIC_INT_RX | CNUAS_VNIC_INT_TX);

    if (slow && cnuas_vnic_delay_active(s)) {
        int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

        if (timer_pending(s->int_timer) || now < s->int_quiet_ns) {
            s->delayed |= slow;
            causes &= ~slow;
            if (!timer_pending(s->int_timer)) {
                timer_mod(s->int_timer, s->int_quiet_ns);
            }
        } else {
            s->int_quiet_ns = now + (int64_t)s->int_delay * SCALE_US;
        }
    }
    cnuas_vnic_fire(s, causes);
}

static void cnuas_vnic_int_timer(void *opaque)
{
    CnuasVnicState *s = opaque;
    uint32_t causes = s->delayed;
    bool guard = cnuas_vnic_guard_enter(s);

    s->delayed = 0;
    s->int_quiet_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                      (int64_t)s->int_delay * SCALE_US;
    cnuas_vnic_fire(s, causes);
    cnuas_vnic_guard_exit(s, guard);
}

static void cnuas_vnic_unmask(CnuasVnicState *s, uint32_t causes)
{
    uint32_t fire;

    s->int_mask &= ~causes;
    fire = s->msix_pending & ~s->int_mask;
    s->msix_pending &= ~fire;
    if (cnuas_vnic_pci_msix(s)) {
        cnuas_vnic_msix_send(s, fire);
    }
    cnuas_vnic_update_intx(s);
}

/*
 * Is [addr, addr + len) guest RAM reachable by this device's DMA? Only RAM
 * is accepted, so a guest cannot point rings or buffers at MMIO (including
 * our own BAR) and cause re-entrant device accesses.
 */
static bool cnuas_vnic_dma_ok(CnuasVnicState *s, uint64_t addr, uint64_t len,
                              bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));

    if (len == 0 || addr + len < addr) {
        return false;
    }
    RCU_READ_LOCK_GUARD();
    while (len) {
        hwaddr xlat, l = len;
        MemoryRegion *mr;

        mr = address_space_translate(as, addr, &xlat, &l, is_write,
                                     MEMTXATTRS_UNSPECIFIED);
        if (!l || !memory_region_is_ram(mr) ||
            memory_region_is_ram_device(mr) || (is_write && mr->readonly)) {
            return false;
        }
        addr += l;
        len -= l;
    }
    return true;
}

static void cnuas_vnic_sb_write(CnuasVnicState *s);

/*
 * A guest mistake: log it, remember the first error, kill the queue (or
 * both when q is NULL and kill is set) and tell the driver via MISC.
 */
static void G_GNUC_PRINTF(5, 6)
cnuas_vnic_guest_error(CnuasVnicState *s, CnuasVnicQueue *q, bool kill,
                       uint32_t err, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *msg = NULL;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: %s\n", TYPE_CNUAS_VNIC, msg);

    s->stats[STAT(GUEST_ERRORS)]++;
    if (s->error == CNUAS_VNIC_ERR_NONE) {
        s->error = err;
    }
    if (kill) {
        if (!q || q == &s->txq) {
            s->txq.state = CNUAS_VNIC_QS_DEAD;
        }
        if (!q || q == &s->rxq) {
            s->rxq.state = CNUAS_VNIC_QS_DEAD;
        }
    }
    cnuas_vnic_sb_write(s);
    cnuas_vnic_raise(s, CNUAS_VNIC_INT_MISC);
}

/* Publish indices and status to the status block (before any interrupt). */
static void cnuas_vnic_sb_write(CnuasVnicState *s)
{
    uint32_t v[3];

    if (!s->sb || !s->sb_ok || !(s->ctrl & CNUAS_VNIC_CTRL_ENABLE)) {
        return;
    }
    v[0] = cpu_to_le32(s->txq.cons);
    v[1] = cpu_to_le32(s->rxq.cons);
    v[2] = cpu_to_le32(cnuas_vnic_status(s));
    if (!cnuas_vnic_dma_ok(s, s->sb, sizeof(v), true) ||
        pci_dma_write(PCI_DEVICE(s), s->sb, v, sizeof(v)) != MEMTX_OK) {
        s->sb_ok = false;
        cnuas_vnic_guest_error(s, NULL, true, CNUAS_VNIC_ERR_RING_DMA,
                               "status block at 0x%" PRIx64
                               " is not writable guest RAM", s->sb);
    }
}

/* ---- Rings ---- */

/*
 * Copy the descriptor at ring index idx out of guest memory, reading ahead
 * up to the producer (or the ring end) in one DMA. Returns NULL after a
 * ring DMA error, which has killed the queue.
 */
static const CnuasVnicDesc *cnuas_vnic_desc(CnuasVnicState *s,
                                            CnuasVnicQueue *q,
                                            CnuasVnicDescCache *dc,
                                            uint32_t idx)
{
    struct cnuas_vnic_desc raw[CNUAS_VNIC_DESC_CACHE];
    uint32_t slot, n, i;
    uint64_t addr;

    if (idx - dc->first < dc->count) {
        return &dc->d[idx - dc->first];
    }
    slot = idx & (q->size - 1);
    n = MIN(q->prod - idx, q->size - slot);
    n = MIN(n, CNUAS_VNIC_DESC_CACHE);
    n = MAX(n, 1);
    addr = q->base + (uint64_t)slot * sizeof(raw[0]);
    if (!cnuas_vnic_dma_ok(s, addr, n * sizeof(raw[0]), false) ||
        pci_dma_read(PCI_DEVICE(s), addr, raw,
                     n * sizeof(raw[0])) != MEMTX_OK) {
        cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_RING_DMA,
                               "%s ring at 0x%" PRIx64 " is not guest RAM",
                               q == &s->txq ? "TX" : "RX", q->base);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        dc->d[i].addr = le64_to_cpu(raw[i].addr);
        dc->d[i].len = le32_to_cpu(raw[i].len);
        dc->d[i].flags = le16_to_cpu(raw[i].flags);
    }
    dc->first = idx;
    dc->count = n;
    return &dc->d[0];
}

/* ---- Link ---- */

/* Tell the driver about a link change, unless the VM is stopped. */
static void cnuas_vnic_link_changed(CnuasVnicState *s)
{
    if (!s->vm_running || s->link_published == s->link_up) {
        return;
    }
    s->link_published = s->link_up;
    if (s->ctrl & CNUAS_VNIC_CTRL_ENABLE) {
        cnuas_vnic_sb_write(s);
        cnuas_vnic_raise(s, CNUAS_VNIC_INT_MISC);
    }
}

static void cnuas_vnic_link_down(CnuasVnicState *s)
{
    if (s->link.fd < 0) {
        return;
    }
    cnuas_vnic_rx_watch(s, -1);
    cnuas_vnic_shm_close(s);
    cnuas_socklink_close(&s->link);
    s->link_up = false;
    s->rx_armed = false;
    s->tx_armed = false;
    s->tx_blocked = false;
    cnuas_vnic_link_changed(s);
    /* Frames still queued for TX are now consumed as "no carrier". */
    qemu_bh_schedule(s->tx_bh);
}

/* A new connection (work outside MMIO: see cnuas_vnic_guard_enter()). */
static void cnuas_vnic_link_connected(void *opaque)
{
    CnuasVnicState *s = opaque;
    bool guard = cnuas_vnic_guard_enter(s);

    s->link_up = true;
    s->rx_armed = false;
    s->tx_armed = false;
    s->tx_blocked = false;
    cnuas_vnic_shm_offer(s);
    cnuas_vnic_update_handlers(s);
    cnuas_vnic_link_changed(s);
    qemu_bh_schedule(s->tx_bh);
    cnuas_vnic_guard_exit(s, guard);
}

/* The peer went away while we did not read (RX back-pressure). */
static void cnuas_vnic_link_hung_up(void *opaque)
{
    CnuasVnicState *s = opaque;
    bool guard = cnuas_vnic_guard_enter(s);

    cnuas_vnic_link_down(s);
    cnuas_vnic_guard_exit(s, guard);
}

static bool cnuas_vnic_link_reading(void *opaque)
{
    CnuasVnicState *s = opaque;

    /* on the rings nobody reads the socket: the timer looks for its end */
    return s->rx_armed && !cnuas_vnic_shm_rx_on(s);
}

/*
 * An IB port's link is up only while a driver runs the device: the switch,
 * and through it the subnet manager, sees the port go and come back when
 * the driver resets the device, as with an HCA whose driver is reloaded.
 * A migration target with the state loaded links when it runs, not before:
 * the old process's switch port is gone by then and this one can take its
 * IB port over (cnuas-vsctl handover) instead of a new port that the SM
 * would have to make Active first. An Ethernet link stays up regardless.
 */
static bool cnuas_vnic_link_wanted(CnuasVnicState *s)
{
    return s->link_layer != CNUAS_VNIC_LL_IB ||
           (s->vm_running && (s->ctrl & CNUAS_VNIC_CTRL_ENABLE));
}

static bool cnuas_vnic_link_may_connect(void *opaque)
{
    return cnuas_vnic_link_wanted(opaque);
}

/* The usual causes on a host, as docs/libvirt.md lists them. */
static const char *cnuas_vnic_link_hint(int err)
{
    switch (err) {
    case ENOENT:
        return "is cnuas-vswitchd running (systemctl status cnuas-vswitchd), "
               "and is socket_path its socket?";
    case EACCES:
    case EPERM:
        return "QEMU's user may not open the switch's socket: add it to "
               "group cnuas (adduser libvirt-qemu cnuas), then restart "
               "this VM";
    case ECONNREFUSED:
        return "nothing listens there: cnuas-vswitchd is gone "
               "(systemctl restart cnuas-vswitchd)";
    }
    return NULL;
}

static const CnuasSockLinkOps cnuas_vnic_socklink_ops = {
    .connected = cnuas_vnic_link_connected,
    .hung_up = cnuas_vnic_link_hung_up,
    .reading = cnuas_vnic_link_reading,
    .may_connect = cnuas_vnic_link_may_connect,
    .hint = cnuas_vnic_link_hint,
};

/* Install exactly the fd handlers the current state needs. */
static void cnuas_vnic_update_handlers(CnuasVnicState *s)
{
    bool rx, tx;
    int fd;

    if (s->link.fd < 0) {
        return;
    }
    rx = s->vm_running && s->rxq.state == CNUAS_VNIC_QS_RUNNING &&
         s->rxq.prod != s->rxq.cons;
    tx = s->tx_blocked;
    /* the socket, or the RX ring's eventfd once the switch accepted it */
    fd = rx ? cnuas_vnic_rx_fd(s) : -1;
    if (rx == s->rx_armed && tx == s->tx_armed &&
        fd == qatomic_read(&s->rx_fd)) {
        return;
    }
    if (tx != s->tx_armed && cnuas_vnic_shm_tx_on(s)) {
        qemu_set_fd_handler(event_notifier_get_fd(&s->shm.tx_wake),
                            tx ? cnuas_vnic_tx_writable : NULL, NULL, s);
    } else if (tx != s->tx_armed) {
        qemu_set_fd_handler(s->link.fd, NULL,
                            tx ? cnuas_vnic_tx_writable : NULL, s);
    }
    if (rx && cnuas_vnic_shm_rx_on(s) && fd != qatomic_read(&s->rx_fd)) {
        cnuas_vnic_shm_rx_arm(s);
    }
    s->rx_armed = rx;
    s->tx_armed = tx;
    cnuas_vnic_rx_watch(s, fd);
}

/* ---- TX ---- */

static void cnuas_vnic_tx_writable(void *opaque)
{
    CnuasVnicState *s = opaque;

    if (cnuas_vnic_shm_tx_on(s)) {
        cnuas_vnic_shm_tx_woken(s);
    }
    s->tx_blocked = false;
    cnuas_vnic_update_handlers(s);
    qemu_bh_schedule(s->tx_bh);
}

/* The IB link layer's VCRC: the device adds and strips it (F_IB_CRC). */
static bool cnuas_vnic_ib_crc(CnuasVnicState *s)
{
    return s->link_layer == CNUAS_VNIC_LL_IB &&
           (s->drv_features & CNUAS_VNIC_F_IB_CRC);
}

/* The longest frame the driver may post: the device may append a VCRC. */
static uint32_t cnuas_vnic_tx_max(CnuasVnicState *s)
{
    return CNUAS_VNIC_MAX_FRAME - (cnuas_vnic_ib_crc(s) ? CNUAS_VCRC_LEN : 0);
}

/*
 * The offloads the first descriptor of a gathered frame asks for, and the
 * IB link layer's VCRC. Returns the frame's length to send.
 */
static uint32_t cnuas_vnic_tx_offload(CnuasVnicState *s, uint16_t flags,
                                      uint8_t *frame, uint32_t len)
{
    bool not_ib;

    if (cnuas_vnic_ib_crc(s)) {
        len = cnuas_vnic_ib_tx(frame, len, flags & CNUAS_VNIC_DESC_F_ICRC,
                               &not_ib);
        if (not_ib) {
            /* Sent with its VCRC only; the queue lives. */
            qemu_log_mask(LOG_GUEST_ERROR, "%s: TX ICRC asked for a frame "
                          "of %u bytes that is not an IB transport packet\n",
                          TYPE_CNUAS_VNIC, len - CNUAS_VCRC_LEN);
            s->stats[STAT(GUEST_ERRORS)]++;
        }
        return len;
    }
    if (!(flags & CNUAS_VNIC_DESC_F_ICRC) ||
        !(s->drv_features & CNUAS_VNIC_F_RDMA_ICRC)) {
        return len;
    }
    if (!cnuas_vnic_roce_tx(frame, len)) {
        /* Sent as it is; the queue lives on. */
        qemu_log_mask(LOG_GUEST_ERROR, "%s: TX ICRC asked for a frame of "
                      "%u bytes that is not RoCEv2\n", TYPE_CNUAS_VNIC, len);
        s->stats[STAT(GUEST_ERRORS)]++;
    }
    return len;
}

/*
 * Gather one frame starting at *idx into buf. Returns its length, 0 when
 * the chain is not completely published yet, or -1 after a guest error
 * (queue killed). With copy false only the descriptors are validated.
 */
static int cnuas_vnic_tx_gather(CnuasVnicState *s, CnuasVnicDescCache *dc,
                                uint32_t *idx, uint8_t *buf, bool copy)
{
    CnuasVnicQueue *q = &s->txq;
    uint32_t i = *idx, total = 0, nsg = 0;
    const CnuasVnicDesc *d;
    uint16_t first_flags = 0;

    while (i != q->prod) {
        d = cnuas_vnic_desc(s, q, dc, i);
        if (!d) {
            return -1;
        }
        if (!nsg) {
            first_flags = d->flags;
        }
        if (++nsg > CNUAS_VNIC_TX_MAX_SG) {
            cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_BAD_LEN,
                                   "TX chain at %u longer than %u", *idx,
                                   CNUAS_VNIC_TX_MAX_SG);
            return -1;
        }
        if (d->len == 0 || d->len > cnuas_vnic_tx_max(s) - total) {
            cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_BAD_LEN,
                                   "TX desc %u: len %u (frame so far %u)",
                                   i, d->len, total);
            return -1;
        }
        if (!cnuas_vnic_dma_ok(s, d->addr, d->len, false) ||
            (copy && pci_dma_read(PCI_DEVICE(s), d->addr, buf + total,
                                  d->len) != MEMTX_OK)) {
            cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_BUF_DMA,
                                   "TX desc %u: buffer 0x%" PRIx64
                                   "+%u is not guest RAM", i, d->addr,
                                   d->len);
            return -1;
        }
        total += d->len;
        i++;
        if (!(d->flags & CNUAS_VNIC_DESC_F_MORE)) {
            *idx = i;
            return copy ? cnuas_vnic_tx_offload(s, first_flags, buf, total) :
                   total;
        }
    }
    return 0;
}

/* Send frames [0, n); returns how many the switch took. */
static unsigned cnuas_vnic_tx_send(CnuasVnicState *s, struct mmsghdr *msgs,
                                   unsigned n)
{
    unsigned sent = 0;
    int r;

    while (sent < n) {
        r = sendmmsg(s->link.fd, msgs + sent, n - sent,
                     MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r > 0) {
            sent += r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                             errno == ENOBUFS)) {
            /* Switch back-pressure: wait until writable, never drop. */
            s->stats[STAT(TX_STALLS)]++;
            s->tx_blocked = true;
            cnuas_vnic_update_handlers(s);
            break;
        } else {
            cnuas_vnic_link_down(s);
            break;
        }
    }
    return sent;
}

/*
 * On the shared-memory rings: gather up to max frames straight into the
 * TX ring's slots and publish them at once. Returns frames consumed.
 */
static unsigned cnuas_vnic_tx_ring(CnuasVnicState *s, CnuasVnicDescCache *dc,
                                   unsigned max)
{
    CnuasVnicQueue *q = &s->txq;
    uint32_t lens[CNUAS_VNIC_IO_BATCH];
    uint32_t idx = q->cons, bytes = 0;
    unsigned n = 0;
    int room, len;

    room = cnuas_vnic_shm_tx_room(s, MIN(max, CNUAS_VNIC_IO_BATCH));
    if (room < 0) {
        qemu_log_mask(LOG_UNIMP, "%s: switch broke the TX ring\n",
                      TYPE_CNUAS_VNIC);
        cnuas_vnic_link_down(s);
        return 0;
    }
    if (!room) {
        if (cnuas_vnic_shm_tx_wait(s)) {
            qemu_bh_schedule(s->tx_bh);
            return 0;
        }
        /* Switch back-pressure: wait for room, never drop. */
        s->stats[STAT(TX_STALLS)]++;
        s->tx_blocked = true;
        cnuas_vnic_update_handlers(s);
        return 0;
    }
    while (n < room && idx != q->prod) {
        len = cnuas_vnic_tx_gather(s, dc, &idx, cnuas_vnic_shm_tx_buf(s, n),
                                   true);
        if (len <= 0) {
            break;
        }
        lens[n++] = len;
        bytes += len;
    }
    if (!n) {
        return 0;
    }
    cnuas_vnic_shm_tx_push(s, lens, n);
    s->stats[STAT(TX_FRAMES)] += n;
    s->stats[STAT(TX_BYTES)] += bytes;
    q->cons = idx;
    return n;
}

/*
 * Move up to max frames: gather, send in one system call, and advance the
 * consumer past what the switch accepted. Returns frames consumed.
 */
static unsigned cnuas_vnic_tx_batch(CnuasVnicState *s, CnuasVnicDescCache *dc,
                                    unsigned max)
{
    CnuasVnicQueue *q = &s->txq;
    struct mmsghdr msgs[CNUAS_VNIC_IO_BATCH];
    struct iovec iov[CNUAS_VNIC_IO_BATCH];
    uint32_t ends[CNUAS_VNIC_IO_BATCH];
    uint32_t idx = q->cons, bytes = 0;
    bool link = s->link_up;
    unsigned n = 0, sent, i;
    int len;

    if (link) {
        cnuas_vnic_shm_ring_on(s);
    }
    if (link && cnuas_vnic_shm_tx_on(s)) {
        return cnuas_vnic_tx_ring(s, dc, max);
    }
    max = MIN(max, CNUAS_VNIC_IO_BATCH);
    while (n < max && idx != q->prod) {
        len = cnuas_vnic_tx_gather(s, dc, &idx,
                                   s->bufs + n * CNUAS_VNIC_MAX_FRAME, link);
        if (len <= 0) {
            break;
        }
        iov[n].iov_base = s->bufs + n * CNUAS_VNIC_MAX_FRAME;
        iov[n].iov_len = len;
        memset(&msgs[n], 0, sizeof(msgs[n]));
        msgs[n].msg_hdr.msg_iov = &iov[n];
        msgs[n].msg_hdr.msg_iovlen = 1;
        ends[n] = idx;
        n++;
    }
    if (!n) {
        return 0;
    }

    sent = link ? cnuas_vnic_tx_send(s, msgs, n) : 0;
    for (i = 0; i < sent; i++) {
        bytes += iov[i].iov_len;
    }
    s->stats[STAT(TX_FRAMES)] += sent;
    s->stats[STAT(TX_BYTES)] += bytes;
    if (!s->link_up) {
        /* No carrier (or lost during send): consume, count, never block. */
        s->stats[STAT(TX_LINK_DOWN)] += n - sent;
        sent = n;
    }
    if (sent) {
        q->cons = ends[sent - 1];
    }
    return sent;
}

static void cnuas_vnic_tx_bh(void *opaque)
{
    CnuasVnicState *s = opaque;
    CnuasVnicQueue *q = &s->txq;
    CnuasVnicDescCache dc = { .count = 0 };
    uint32_t start = q->cons;
    unsigned budget = CNUAS_VNIC_BUDGET, n;

    while (s->vm_running && q->state == CNUAS_VNIC_QS_RUNNING &&
           !s->tx_blocked && q->cons != q->prod) {
        if (!budget) {
            /* Let the rest of the main loop run, then continue. */
            qemu_bh_schedule(s->tx_bh);
            break;
        }
        n = cnuas_vnic_tx_batch(s, &dc, budget);
        if (!n) {
            break;
        }
        budget -= n;
    }
    if (q->cons != start) {
        cnuas_vnic_sb_write(s);
        cnuas_vnic_raise(s, CNUAS_VNIC_INT_TX);
    }
}

/* ---- RX ---- */

/* Hand one received frame to the guest buffer d; false on a DMA error. */
static bool cnuas_vnic_rx_deliver(CnuasVnicState *s, const CnuasVnicDesc *d,
                                  uint32_t idx, const uint8_t *buf,
                                  uint32_t len, bool trunc)
{
    CnuasVnicQueue *q = &s->rxq;
    uint64_t wb = q->base + (uint64_t)(idx & (q->size - 1)) *
                  sizeof(struct cnuas_vnic_desc) +
                  offsetof(struct cnuas_vnic_desc, len);
    struct {
        uint32_t len;
        uint16_t flags;
    } QEMU_PACKED done;
    uint16_t flags = CNUAS_VNIC_DESC_F_DONE;

    if (trunc || len > d->len) {
        s->stats[STAT(RX_OVERSIZE)]++;
        flags |= CNUAS_VNIC_DESC_F_ERR;
        len = 0;
    } else if (pci_dma_write(PCI_DEVICE(s), d->addr, buf, len) != MEMTX_OK) {
        cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_BUF_DMA,
                               "RX desc %u: buffer 0x%" PRIx64
                               " not writable", idx, d->addr);
        return false;
    } else {
        s->stats[STAT(RX_FRAMES)]++;
        s->stats[STAT(RX_BYTES)] += len;
        if (cnuas_vnic_ib_crc(s)) {
            flags |= cnuas_vnic_ib_rx(buf, &len);
        } else if (s->drv_features & CNUAS_VNIC_F_RDMA_ICRC) {
            flags |= cnuas_vnic_roce_rx(buf, len);
        }
    }
    done.len = cpu_to_le32(len);
    done.flags = cpu_to_le16(flags);
    if (!cnuas_vnic_dma_ok(s, wb, sizeof(done), true) ||
        pci_dma_write(PCI_DEVICE(s), wb, &done, sizeof(done)) != MEMTX_OK) {
        cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_RING_DMA,
                               "RX ring at 0x%" PRIx64 " not writable",
                               q->base);
        return false;
    }
    return true;
}

/*
 * Copy out and check up to max posted buffers starting at the consumer.
 * Returns how many are usable; a bad one kills the queue after them.
 */
static unsigned cnuas_vnic_rx_buffers(CnuasVnicState *s,
                                      CnuasVnicDescCache *dc,
                                      CnuasVnicDesc *out, unsigned max)
{
    CnuasVnicQueue *q = &s->rxq;
    const CnuasVnicDesc *d;
    unsigned i;

    for (i = 0; i < max; i++) {
        d = cnuas_vnic_desc(s, q, dc, q->cons + i);
        if (!d) {
            break;
        }
        if (d->len == 0) {
            cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_BAD_LEN,
                                   "RX desc %u: len 0", q->cons + i);
            break;
        }
        if (!cnuas_vnic_dma_ok(s, d->addr,
                               MIN(d->len, CNUAS_VNIC_MAX_FRAME), true)) {
            cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_BUF_DMA,
                                   "RX desc %u: buffer 0x%" PRIx64
                                   "+%u is not guest RAM", q->cons + i,
                                   d->addr, d->len);
            break;
        }
        out[i] = *d;
    }
    return i;
}

/* Count a stall only if a frame is really waiting for a buffer. */
static void cnuas_vnic_rx_check_stall(CnuasVnicState *s)
{
    char c;

    if (recv(s->link.fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) > 0) {
        s->stats[STAT(RX_STALLS)]++;
    }
}

/* On the shared-memory rings: frames from the RX ring into guest buffers. */
static void cnuas_vnic_rx_ring(CnuasVnicState *s)
{
    CnuasVnicQueue *q = &s->rxq;
    CnuasVnicDescCache dc = { .count = 0 };
    CnuasVnicDesc descs[CNUAS_VNIC_IO_BATCH];
    uint32_t start = q->cons, len;
    unsigned budget = CNUAS_VNIC_BUDGET, n, i;
    bool broken = false;
    int avail;

    cnuas_vnic_shm_rx_woken(s);
    while (budget && q->state == CNUAS_VNIC_QS_RUNNING) {
        avail = cnuas_vnic_shm_rx_avail(s, MIN(budget, CNUAS_VNIC_IO_BATCH));
        if (avail < 0) {
            broken = true;
            break;
        }
        n = MIN(q->prod - q->cons, (unsigned)avail);
        if (!n) {
            if (avail) {
                s->stats[STAT(RX_STALLS)]++;
            }
            break;
        }
        n = cnuas_vnic_rx_buffers(s, &dc, descs, n);
        for (i = 0; i < n; i++) {
            /* copied out: the switch may still write the slot */
            len = cnuas_vnic_shm_rx_copy(s, i, s->bufs);
            if (!cnuas_vnic_rx_deliver(s, &descs[i], q->cons, s->bufs, len,
                                       len == 0)) {
                break;
            }
            q->cons++;
        }
        cnuas_vnic_shm_rx_pop(s, i);
        budget -= i;
        if (!n || i < n) {
            break;
        }
    }
    if (q->cons != start) {
        cnuas_vnic_sb_write(s);
        cnuas_vnic_raise(s, CNUAS_VNIC_INT_RX);
    }
    if (broken) {
        qemu_log_mask(LOG_UNIMP, "%s: switch broke the RX ring\n",
                      TYPE_CNUAS_VNIC);
        cnuas_vnic_link_down(s);
        return;
    }
    if (!budget) {
        event_notifier_set(&s->shm.rx_wake);    /* more: come back soon */
    } else if (q->state == CNUAS_VNIC_QS_RUNNING && q->prod != q->cons) {
        cnuas_vnic_shm_rx_arm(s);
    }
    cnuas_vnic_update_handlers(s);
}

static void cnuas_vnic_rx_readable(void *opaque)
{
    CnuasVnicState *s = opaque;
    CnuasVnicQueue *q = &s->rxq;
    CnuasVnicDescCache dc = { .count = 0 };
    CnuasVnicDesc descs[CNUAS_VNIC_IO_BATCH];
    struct mmsghdr msgs[CNUAS_VNIC_IO_BATCH];
    struct iovec iov[CNUAS_VNIC_IO_BATCH];
    uint32_t start = q->cons, first;
    unsigned budget = CNUAS_VNIC_BUDGET, n, i;
    bool eof = false;
    int r;

    if (cnuas_vnic_shm_rx_on(s)) {
        cnuas_vnic_rx_ring(s);
        return;
    }
    while (budget && s->link.fd >= 0 && q->state == CNUAS_VNIC_QS_RUNNING) {
        n = MIN(q->prod - q->cons, MIN(budget, CNUAS_VNIC_IO_BATCH));
        if (!n) {
            cnuas_vnic_rx_check_stall(s);
            break;
        }
        n = cnuas_vnic_rx_buffers(s, &dc, descs, n);
        if (!n) {
            break;
        }
        for (i = 0; i < n; i++) {
            iov[i].iov_base = s->bufs + i * CNUAS_VNIC_MAX_FRAME;
            iov[i].iov_len = CNUAS_VNIC_MAX_FRAME;
            memset(&msgs[i], 0, sizeof(msgs[i]));
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        r = recvmmsg(s->link.fd, msgs, n, MSG_DONTWAIT, NULL);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        if (r <= 0) {
            eof = true;
            break;
        }
        first = q->cons;
        for (i = 0; i < r; i++) {
            /* Frames are 1..MAX_FRAME bytes; a 0-byte read is the EOF. */
            if (msgs[i].msg_len == 0) {
                eof = true;
                break;
            }
            /* The switch's answer to our offer of rings: no frame. */
            if (cnuas_vnic_shm_msg(s, iov[i].iov_base, msgs[i].msg_len)) {
                continue;
            }
            if (!cnuas_vnic_rx_deliver(s, &descs[q->cons - first], q->cons,
                                       iov[i].iov_base, msgs[i].msg_len,
                                       msgs[i].msg_hdr.msg_flags & MSG_TRUNC)) {
                break;
            }
            q->cons++;
        }
        budget -= q->cons - first;
        if (eof || i < n || cnuas_vnic_shm_rx_on(s)) {
            break;
        }
    }
    if (q->cons != start) {
        cnuas_vnic_sb_write(s);
        cnuas_vnic_raise(s, CNUAS_VNIC_INT_RX);
    }
    if (eof) {
        cnuas_vnic_link_down(s);
    } else {
        cnuas_vnic_update_handlers(s);
    }
}

/*
 * The RX thread waits for frames without the BQL, which the main loop
 * would take on every wake-up: with a vCPU reading the poll page, that
 * made the vCPU and the main loop queue on the lock for every frame.
 * The thread takes the BQL only when frames are still waiting once it
 * runs; cnuas_vnic_rx_readable() does the work, as for a poll read.
 *
 * While a vCPU keeps reading the poll page, it takes the frames itself,
 * and the thread does not watch the socket ("parks"): each frame would
 * wake it for nothing, a host context switch and often an IPI per frame.
 * It watches again once no poll read came for x-rx-park-us.
 * A guest may stop reading and still wait for a frame (it spins on the
 * memory an RDMA WRITE fills): a frame found waiting then was delayed.
 * CNUAS_VNIC_POLL_MISSES of them within CNUAS_VNIC_POLL_MISS_WINDOW_US,
 * and the thread does not park for CNUAS_VNIC_POLL_BACKOFF_US (a guest
 * may also stop reading for a while now and then: one such frame is no
 * pattern). Nor does a frame count when the guest could not have read
 * (cnuas_vnic_poller_could_read()): the host did not run its vCPU.
 */
static void cnuas_vnic_rx_watch(CnuasVnicState *s, int fd)
{
    if (qatomic_read(&s->rx_fd) != fd) {
        qatomic_set(&s->rx_fd, fd);
        event_notifier_set(&s->rx_kick);
    }
}

static uint32_t cnuas_vnic_clock_us(void)
{
    return get_clock() / SCALE_US;
}

typedef struct CnuasVnicPark {
    bool parked;                /* did not watch the socket last time */
    unsigned misses;            /* frames parking made wait ... */
    uint32_t window_us;         /* ... since this time */
    uint32_t miss_us;           /* time of the last one */
    bool backoff;               /* too many in too short a while */
    /* The reading vCPU thread's schedstat when the thread last parked */
    int tid;
    int stat_fd;                /* /proc/self/task/TID/schedstat, or -1 */
    bool sampled;
    uint64_t run_ns;            /* time it ran ... */
    uint64_t wait_ns;           /* ... and waited for a CPU */
} CnuasVnicPark;

/* Host thread of the caller, cached: poll reads are frequent. */
static int cnuas_vnic_thread_id(void)
{
    static __thread int tid;

    if (!tid) {
        tid = qemu_get_thread_id();
    }
    return tid;
}

static bool cnuas_vnic_schedstat(CnuasVnicPark *p, int tid, uint64_t *run,
                                 uint64_t *wait)
{
#ifdef CONFIG_LINUX
    char buf[80];
    ssize_t n;

    if (tid != p->tid) {
        g_autofree char *path =
            g_strdup_printf("/proc/self/task/%d/schedstat", tid);

        if (p->stat_fd >= 0) {
            close(p->stat_fd);
        }
        p->stat_fd = tid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        p->tid = tid;
        p->sampled = false;
    }
    if (p->stat_fd < 0) {
        return false;
    }
    n = pread(p->stat_fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) {
        return false;           /* the thread is gone */
    }
    buf[n] = '\0';
    return sscanf(buf, "%" SCNu64 " %" SCNu64, run, wait) == 2;
#else
    return false;
#endif
}

/*
 * Samples the schedstat of the vCPU thread that last read the poll page;
 * true: @ran and @waited (ns) tell how long it ran and waited for a CPU
 * since the previous sample.
 */
static bool cnuas_vnic_poller_sample(CnuasVnicState *s, CnuasVnicPark *p,
                                     uint64_t *ran, uint64_t *waited)
{
    uint64_t run, wait;
    bool had;

    if (!cnuas_vnic_schedstat(p, qatomic_read(&s->rx_poll_tid), &run,
                              &wait)) {
        p->sampled = false;
        return false;
    }
    had = p->sampled;   /* false when the thread changed */
    *ran = run - p->run_ns;
    *waited = wait - p->wait_ns;
    p->sampled = true;
    p->run_ns = run;
    p->wait_ns = wait;
    return had;
}

/*
 * Could the guest have read the poll page in the last @park_us? Not if
 * the host kept the reading vCPU thread waiting for a CPU longer than it
 * let it run, nor if the thread hardly ran while its vCPU is not halted
 * (it waited for a lock). A halted vCPU waits for frames some other way.
 * Without schedstat (not Linux, no CONFIG_SCHED_INFO): it could.
 */
static bool cnuas_vnic_poller_could_read(CnuasVnicState *s,
                                         CnuasVnicPark *p, uint32_t park_us)
{
    uint64_t ran, waited;
    CPUState *cpu;
    bool halted;

    if (!cnuas_vnic_poller_sample(s, p, &ran, &waited)) {
        return true;
    }
    if (waited > ran) {
        return false;
    }
    if (ran >= (uint64_t)park_us * SCALE_US / 4) {
        return true;
    }
    qemu_mutex_lock_iothread();
    cpu = qemu_get_cpu(qatomic_read(&s->rx_poll_cpu));
    halted = !cpu || cpu->halted;
    qemu_mutex_unlock_iothread();
    return halted;
}

/*
 * Frames waiting where the RX thread watches: data on the socket, or,
 * on the shared-memory rings, a kick on the RX eventfd (the switch kicks
 * only while the RX side is armed, and every RX run clears it first).
 * poll() and not recv(MSG_PEEK), which fails on an eventfd.
 */
static bool cnuas_vnic_rx_waiting(int fd)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };

    return poll(&pfd, 1, 0) > 0 && (pfd.revents & POLLIN);
}

/* Microseconds the RX thread may leave the socket to poll reads, or 0. */
static uint32_t cnuas_vnic_rx_park(CnuasVnicState *s, int fd,
                                   CnuasVnicPark *p)
{
    uint32_t now = cnuas_vnic_clock_us();
    uint32_t idle = now - qatomic_read(&s->rx_poll_us);
    uint32_t park = MIN(qatomic_read(&s->rx_park_us),
                        CNUAS_VNIC_POLL_PARK_MAX_US);
    bool was_parked = p->parked;
    uint64_t ran, waited;

    p->parked = false;
    if (fd < 0) {
        return 0;
    }
    if (p->backoff && now - p->miss_us < CNUAS_VNIC_POLL_BACKOFF_US) {
        return 0;
    }
    p->backoff = false;
    if (idle < park) {
        p->parked = true;
        cnuas_vnic_poller_sample(s, p, &ran, &waited); /* for the next */
        return park - idle;
    }
    if (was_parked && cnuas_vnic_rx_waiting(fd) &&
        cnuas_vnic_poller_could_read(s, p, park)) {
        if (!p->misses ||
            now - p->window_us >= CNUAS_VNIC_POLL_MISS_WINDOW_US) {
            p->misses = 0;
            p->window_us = now;
        }
        p->miss_us = now;
        p->backoff = ++p->misses >= CNUAS_VNIC_POLL_MISSES;
        if (p->backoff) {
            p->misses = 0;
        }
    }
    return 0;
}

static void *cnuas_vnic_rx_thread(void *opaque)
{
    CnuasVnicState *s = opaque;
    CnuasVnicPark pk = { .parked = false, .stat_fd = -1 };
    struct pollfd pfd[2];
    struct timespec ts;
    bool stop = false;
    uint32_t park;
    char c;
    int fd;

    while (!stop) {
        fd = qatomic_read(&s->rx_fd);
        park = cnuas_vnic_rx_park(s, fd, &pk);
        ts.tv_sec = park / 1000000;
        ts.tv_nsec = park % 1000000 * SCALE_US;
        pfd[0].fd = event_notifier_get_fd(&s->rx_kick);
        pfd[0].events = POLLIN;
        pfd[1].fd = park ? -1 : fd; /* poll() skips a negative fd */
        pfd[1].events = POLLIN;
        pfd[0].revents = pfd[1].revents = 0;
        if (ppoll(pfd, 2, park ? &ts : NULL, NULL) < 0 && errno != EINTR) {
            g_usleep(1000);     /* cannot happen with valid fds; no spin */
            continue;
        }
        if (pfd[0].revents) {
            event_notifier_test_and_clear(&s->rx_kick);
        }
        stop = qatomic_read(&s->rx_stop);
        if (stop || fd < 0 || !pfd[1].revents ||
            (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) < 0 &&
             (errno == EAGAIN || errno == EWOULDBLOCK))) {
            continue;           /* a poll read may have taken them */
        }
        qemu_mutex_lock_iothread();
        stop = s->rx_stop;
        if (!stop && s->rx_armed && s->link.fd >= 0 &&
            cnuas_vnic_rx_fd(s) == fd) {
            bool guard = cnuas_vnic_guard_enter(s);

            cnuas_vnic_rx_readable(s);
            cnuas_vnic_guard_exit(s, guard);
        }
        qemu_mutex_unlock_iothread();
    }
    if (pk.stat_fd >= 0) {
        close(pk.stat_fd);
    }
    qemu_mutex_lock_iothread();
    s->rx_stopped = true;
    qemu_cond_signal(&s->rx_done);
    qemu_mutex_unlock_iothread();
    return NULL;
}

/* ---- Registers ---- */

static bool cnuas_vnic_ring_ok(CnuasVnicState *s, CnuasVnicQueue *q,
                               bool is_write)
{
    return is_power_of_2(q->size) && q->size >= CNUAS_VNIC_RING_MIN &&
           q->size <= CNUAS_VNIC_RING_MAX && !(q->base & 15) &&
           cnuas_vnic_dma_ok(s, q->base,
                             (uint64_t)q->size * sizeof(struct cnuas_vnic_desc),
                             is_write);
}

static void cnuas_vnic_enable(CnuasVnicState *s)
{
    bool need_sb = s->drv_features & CNUAS_VNIC_F_STATUS_BLOCK;

    if (s->error != CNUAS_VNIC_ERR_NONE) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: ENABLE after error %u, reset "
                      "the device first\n", TYPE_CNUAS_VNIC, s->error);
        return;
    }
    if (!cnuas_vnic_ring_ok(s, &s->txq, false) ||
        !cnuas_vnic_ring_ok(s, &s->rxq, true) ||
        (need_sb && !s->sb) || (s->sb & 63) ||
        (s->sb && !cnuas_vnic_dma_ok(s, s->sb, 64, true))) {
        cnuas_vnic_guest_error(s, NULL, false, CNUAS_VNIC_ERR_BAD_SETUP,
                               "bad setup at ENABLE: TX 0x%" PRIx64 "/%u, "
                               "RX 0x%" PRIx64 "/%u, SB 0x%" PRIx64,
                               s->txq.base, s->txq.size, s->rxq.base,
                               s->rxq.size, s->sb);
        return;
    }
    s->ctrl |= CNUAS_VNIC_CTRL_ENABLE;
    s->sb_ok = true;
    s->txq.prod = s->txq.cons = 0;
    s->rxq.prod = s->rxq.cons = 0;
    s->txq.state = CNUAS_VNIC_QS_RUNNING;
    s->rxq.state = CNUAS_VNIC_QS_RUNNING;
    cnuas_vnic_sb_write(s);
    if (cnuas_vnic_link_wanted(s)) {
        cnuas_socklink_connect(&s->link);
    }
}

static void cnuas_vnic_disable(CnuasVnicState *s)
{
    s->ctrl &= ~CNUAS_VNIC_CTRL_ENABLE;
    if (s->txq.state == CNUAS_VNIC_QS_RUNNING) {
        s->txq.state = CNUAS_VNIC_QS_DISABLED;
    }
    if (s->rxq.state == CNUAS_VNIC_QS_RUNNING) {
        s->rxq.state = CNUAS_VNIC_QS_DISABLED;
    }
    timer_del(s->int_timer);
    s->delayed = 0;
    s->int_quiet_ns = 0;
    cnuas_vnic_update_handlers(s);
}

static void cnuas_vnic_doorbell(CnuasVnicState *s, CnuasVnicQueue *q,
                                uint32_t prod)
{
    const char *name = q == &s->txq ? "TX" : "RX";

    if (q->state != CNUAS_VNIC_QS_RUNNING) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: %s doorbell on a queue that is "
                      "not running\n", TYPE_CNUAS_VNIC, name);
        return;
    }
    if (prod - q->cons > q->size) {
        cnuas_vnic_guest_error(s, q, true, CNUAS_VNIC_ERR_BAD_PROD,
                               "%s PROD %u is more than %u ahead of CONS %u",
                               name, prod, q->size, q->cons);
        return;
    }
    q->prod = prod;
    if (q == &s->txq) {
        s->stats[STAT(TX_DOORBELLS)]++;
        /*
         * Send from the vCPU thread now, as a NIC starts DMA on its
         * doorbell: a bottom half would wait for the main loop thread to
         * get a host CPU first. The run is bounded; what is left goes to
         * the bottom half.
         */
        cnuas_vnic_tx_bh(s);
    } else {
        cnuas_vnic_update_handlers(s);
    }
}

static CnuasVnicQueue *cnuas_vnic_queue(CnuasVnicState *s, hwaddr addr,
                                        hwaddr *off)
{
    if (addr >= CNUAS_VNIC_REG_TXQ &&
        addr <= CNUAS_VNIC_REG_TXQ + CNUAS_VNIC_Q_STATE) {
        *off = addr - CNUAS_VNIC_REG_TXQ;
        return &s->txq;
    }
    if (addr >= CNUAS_VNIC_REG_RXQ &&
        addr <= CNUAS_VNIC_REG_RXQ + CNUAS_VNIC_Q_STATE) {
        *off = addr - CNUAS_VNIC_REG_RXQ;
        return &s->rxq;
    }
    return NULL;
}

static uint64_t cnuas_vnic_queue_read(CnuasVnicQueue *q, hwaddr off)
{
    switch (off) {
    case CNUAS_VNIC_Q_BASE_LO:
        return (uint32_t)q->base;
    case CNUAS_VNIC_Q_BASE_HI:
        return q->base >> 32;
    case CNUAS_VNIC_Q_SIZE:
        return q->size;
    case CNUAS_VNIC_Q_PROD:
        return q->prod;
    case CNUAS_VNIC_Q_CONS:
        return q->cons;
    case CNUAS_VNIC_Q_STATE:
        return q->state;
    }
    return 0;
}

static uint64_t cnuas_vnic_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    CnuasVnicState *s = opaque;
    CnuasVnicQueue *q;
    hwaddr off;

    switch (addr) {
    case CNUAS_VNIC_REG_MAGIC:
        return CNUAS_VNIC_MAGIC_VALUE;
    case CNUAS_VNIC_REG_VERSION:
        return CNUAS_VNIC_VERSION_MAJOR << 16 | CNUAS_VNIC_VERSION_MINOR;
    case CNUAS_VNIC_REG_FEATURES:
        return CNUAS_VNIC_FEATURES_OF(s);
    case CNUAS_VNIC_REG_DRV_FEATURES:
        return s->drv_features;
    case CNUAS_VNIC_REG_CTRL:
        return s->ctrl;
    case CNUAS_VNIC_REG_STATUS:
        return cnuas_vnic_status(s);
    case CNUAS_VNIC_REG_LINK_LAYER:
        return s->link_layer;
    case CNUAS_VNIC_REG_LINK_SPEED:
        return s->link_speed_mbps;
    case CNUAS_VNIC_REG_MAC_LO:
        return ldl_le_p(&s->mac.a[0]);
    case CNUAS_VNIC_REG_MAC_HI:
        return lduw_le_p(&s->mac.a[4]);
    case CNUAS_VNIC_REG_MAX_FRAME:
        return CNUAS_VNIC_MAX_FRAME;
    case CNUAS_VNIC_REG_ERROR:
        return s->error;
    case CNUAS_VNIC_REG_INT_STATUS:
        return s->int_status;
    case CNUAS_VNIC_REG_INT_MASK:
        return s->int_mask;
    case CNUAS_VNIC_REG_INT_DELAY:
        return s->int_delay;
    case CNUAS_VNIC_REG_SB_LO:
        return (uint32_t)s->sb;
    case CNUAS_VNIC_REG_SB_HI:
        return s->sb >> 32;
    }
    q = cnuas_vnic_queue(s, addr, &off);
    if (q) {
        return cnuas_vnic_queue_read(q, off);
    }
    if (addr >= CNUAS_VNIC_REG_STATS &&
        addr < CNUAS_VNIC_REG_STATS + 4 * CNUAS_VNIC_NUM_STATS) {
        return s->stats[(addr - CNUAS_VNIC_REG_STATS) / 4];
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: read of unknown register 0x%"
                  HWADDR_PRIx "\n", TYPE_CNUAS_VNIC, addr);
    return 0;
}

/* Setup registers only change while the queues are disabled. */
static bool cnuas_vnic_setup_allowed(CnuasVnicState *s, hwaddr addr)
{
    if (s->ctrl & CNUAS_VNIC_CTRL_ENABLE) {
        qemu_log_mask(LOG_GUEST_ERROR, "%s: setup register 0x%" HWADDR_PRIx
                      " written while enabled, ignored\n", TYPE_CNUAS_VNIC,
                      addr);
        return false;
    }
    return true;
}

static void cnuas_vnic_queue_write(CnuasVnicState *s, CnuasVnicQueue *q,
                                   hwaddr addr, hwaddr off, uint32_t val)
{
    switch (off) {
    case CNUAS_VNIC_Q_BASE_LO:
        if (cnuas_vnic_setup_allowed(s, addr)) {
            q->base = deposit64(q->base, 0, 32, val);
        }
        return;
    case CNUAS_VNIC_Q_BASE_HI:
        if (cnuas_vnic_setup_allowed(s, addr)) {
            q->base = deposit64(q->base, 32, 32, val);
        }
        return;
    case CNUAS_VNIC_Q_SIZE:
        if (cnuas_vnic_setup_allowed(s, addr)) {
            q->size = val;
        }
        return;
    case CNUAS_VNIC_Q_PROD:
        cnuas_vnic_doorbell(s, q, val);
        return;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: write to read-only register 0x%"
                  HWADDR_PRIx "\n", TYPE_CNUAS_VNIC, addr);
}

static void cnuas_vnic_mmio_write(void *opaque, hwaddr addr, uint64_t val64,
                                  unsigned size)
{
    CnuasVnicState *s = opaque;
    uint32_t val = val64;
    CnuasVnicQueue *q;
    hwaddr off;

    switch (addr) {
    case CNUAS_VNIC_REG_DRV_FEATURES:
        if (cnuas_vnic_setup_allowed(s, addr)) {
            s->drv_features = val & CNUAS_VNIC_FEATURES_OF(s);
        }
        return;
    case CNUAS_VNIC_REG_CTRL:
        if (val & CNUAS_VNIC_CTRL_RESET) {
            cnuas_vnic_core_reset(s);
        } else if ((val & CNUAS_VNIC_CTRL_ENABLE) &&
                   !(s->ctrl & CNUAS_VNIC_CTRL_ENABLE)) {
            cnuas_vnic_enable(s);
        } else if (!(val & CNUAS_VNIC_CTRL_ENABLE) &&
                   (s->ctrl & CNUAS_VNIC_CTRL_ENABLE)) {
            cnuas_vnic_disable(s);
        }
        return;
    case CNUAS_VNIC_REG_INT_ACK:
        s->int_status &= ~val;
        cnuas_vnic_update_intx(s);
        return;
    case CNUAS_VNIC_REG_INT_MASK_SET:
        s->int_mask |= val & CNUAS_VNIC_INT_ALL;
        cnuas_vnic_update_intx(s);
        return;
    case CNUAS_VNIC_REG_INT_MASK_CLR:
        cnuas_vnic_unmask(s, val & CNUAS_VNIC_INT_ALL);
        return;
    case CNUAS_VNIC_REG_INT_REARM:
        if (!(s->drv_features & CNUAS_VNIC_F_INT_AUTOMASK)) {
            qemu_log_mask(LOG_GUEST_ERROR, "%s: INT_REARM without "
                          "INT_AUTOMASK\n", TYPE_CNUAS_VNIC);
            return;
        }
        s->msix_pending &= ~((val >> CNUAS_VNIC_INT_REARM_DROP_SHIFT) &
                             CNUAS_VNIC_INT_ALL);
        s->int_status &= ~((val >> CNUAS_VNIC_INT_REARM_DROP_SHIFT) &
                           CNUAS_VNIC_INT_ALL);
        cnuas_vnic_unmask(s, val & CNUAS_VNIC_INT_ALL);
        return;
    case CNUAS_VNIC_REG_INT_DELAY:
        s->int_delay = MIN(val, CNUAS_VNIC_MAX_INT_DELAY_US);
        return;
    case CNUAS_VNIC_REG_SB_LO:
        if (cnuas_vnic_setup_allowed(s, addr)) {
            s->sb = deposit64(s->sb, 0, 32, val);
        }
        return;
    case CNUAS_VNIC_REG_SB_HI:
        if (cnuas_vnic_setup_allowed(s, addr)) {
            s->sb = deposit64(s->sb, 32, 32, val);
        }
        return;
    }
    q = cnuas_vnic_queue(s, addr, &off);
    if (q) {
        cnuas_vnic_queue_write(s, q, addr, off, val);
        return;
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: write to read-only or unknown "
                  "register 0x%" HWADDR_PRIx "\n", TYPE_CNUAS_VNIC, addr);
}

/* ---- RX poll page (BAR2) ---- */

/*
 * A busy-polling consumer lends its vCPU thread to the RX path: frames
 * waiting on the socket reach the ring now instead of after the main
 * loop thread has been woken and scheduled, which on a loaded host is
 * most of a frame's latency. The main loop keeps watching the socket, so
 * frames still arrive when nobody polls.
 */
static uint64_t cnuas_vnic_poll_read(void *opaque, hwaddr addr, unsigned size)
{
    CnuasVnicState *s = opaque;
    uint32_t before = s->stats[STAT(RX_FRAMES)];
    uint32_t moved;

    if (addr != CNUAS_VNIC_POLL_RX ||
        !(s->drv_features & CNUAS_VNIC_F_RX_POLL)) {
        return 0;
    }
    s->stats[STAT(RX_POLLS)]++;
    qatomic_set(&s->rx_poll_us, cnuas_vnic_clock_us());
    if (qatomic_read(&s->rx_poll_tid) != cnuas_vnic_thread_id()) {
        qatomic_set(&s->rx_poll_tid, cnuas_vnic_thread_id());
    }
    if (current_cpu &&
        qatomic_read(&s->rx_poll_cpu) != current_cpu->cpu_index) {
        qatomic_set(&s->rx_poll_cpu, current_cpu->cpu_index);
    }
    if (!s->rx_armed) {
        return 0;
    }
    cnuas_vnic_rx_readable(s);
    moved = s->stats[STAT(RX_FRAMES)] - before;
    s->stats[STAT(RX_POLL_FRAMES)] += moved;
    return moved;
}

/* User space may own this page: writes are ignored without a log. */
static void cnuas_vnic_poll_write(void *opaque, hwaddr addr, uint64_t val,
                                  unsigned size)
{
}

const MemoryRegionOps cnuas_vnic_poll_ops = {
    .read = cnuas_vnic_poll_read,
    .write = cnuas_vnic_poll_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

const MemoryRegionOps cnuas_vnic_mmio_ops = {
    .read = cnuas_vnic_mmio_read,
    .write = cnuas_vnic_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* ---- Life cycle ---- */

/*
 * Ethernet-style speed for REG_LINK_SPEED: the PCIe payload bandwidth
 * (GT/s x lanes x line-code efficiency: 8b/10b up to 5 GT/s, 128b/130b
 * above) rounded down to the nearest standard Ethernet rate, so Gen5 x16
 * (504 Gb/s) reports 400000 and Gen3 x16 (126 Gb/s) reports 100000.
 */
uint32_t cnuas_vnic_link_speed_mbps(unsigned gts_x10, unsigned lanes)
{
    static const uint32_t eth[] = {
        800000, 400000, 200000, 100000, 50000, 40000, 25000, 10000,
        5000, 2500, 1000,
    };
    uint64_t mbps = (uint64_t)gts_x10 * 100 * lanes;
    unsigned i;

    mbps = gts_x10 <= 50 ? mbps * 8 / 10 : mbps * 128 / 130;
    for (i = 0; i < ARRAY_SIZE(eth); i++) {
        if (mbps >= eth[i]) {
            return eth[i];
        }
    }
    return 1000;
}

void cnuas_vnic_core_reset(CnuasVnicState *s)
{
    timer_del(s->int_timer);
    s->drv_features = 0;
    s->ctrl = 0;
    s->error = CNUAS_VNIC_ERR_NONE;
    s->int_status = 0;
    s->int_mask = 0;
    s->int_delay = 0;
    s->msix_pending = 0;
    s->delayed = 0;
    s->int_quiet_ns = 0;
    s->sb = 0;
    s->sb_ok = false;
    memset(&s->txq, 0, sizeof(s->txq));
    memset(&s->rxq, 0, sizeof(s->rxq));
    memset(s->stats, 0, sizeof(s->stats));
    cnuas_vnic_pci_set_intx(s, false);
    cnuas_vnic_update_handlers(s);
    if (!cnuas_vnic_link_wanted(s)) {
        cnuas_vnic_link_down(s);
    }
}

void cnuas_vnic_core_post_load(CnuasVnicState *s)
{
    uint32_t causes = s->delayed;

    s->delayed = 0;
    cnuas_vnic_fire(s, causes);
    cnuas_vnic_update_intx(s);
    cnuas_vnic_update_handlers(s);
    qemu_bh_schedule(s->tx_bh);
}

/*
 * Guest memory must not change while the VM is stopped (migration sends
 * it then): stop reading the socket and the rings, resume afterwards.
 */
static void cnuas_vnic_vm_state(void *opaque, bool running, RunState state)
{
    CnuasVnicState *s = opaque;

    s->vm_running = running;
    cnuas_vnic_update_handlers(s);
    if (running) {
        bool guard = cnuas_vnic_guard_enter(s);

        /* A migrated IB device: see cnuas_vnic_link_wanted(). */
        if (cnuas_vnic_link_wanted(s)) {
            cnuas_socklink_connect(&s->link);
        }
        cnuas_vnic_link_changed(s);
        cnuas_vnic_guard_exit(s, guard);
        qemu_bh_schedule(s->tx_bh);
    }
}

void cnuas_vnic_core_realize(CnuasVnicState *s)
{
    /* Connecting only: the path was checked with the properties. */
    cnuas_socklink_init(&s->link, DEVICE(s), s->socket_path, false,
                        &cnuas_vnic_socklink_ops, s, &error_abort);
    s->rx_fd = -1;
    event_notifier_init(&s->rx_kick, false);
    qemu_cond_init(&s->rx_done);
    qemu_thread_create(&s->rx_thread, "cnuas-vnic-rx", cnuas_vnic_rx_thread,
                       s, QEMU_THREAD_JOINABLE);
    s->bufs = g_malloc(CNUAS_VNIC_IO_BATCH * CNUAS_VNIC_MAX_FRAME);
    s->tx_bh = qemu_bh_new_guarded(cnuas_vnic_tx_bh, s,
                                   &DEVICE(s)->mem_reentrancy_guard);
    s->int_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, cnuas_vnic_int_timer, s);
    s->vm_running = runstate_is_running();
    s->vmstate_change = qemu_add_vm_change_state_handler(cnuas_vnic_vm_state,
                                                         s);
    cnuas_socklink_start(&s->link);
}

void cnuas_vnic_core_unrealize(CnuasVnicState *s)
{
    /* The thread may be waiting for the BQL: let it have it to finish. */
    qatomic_set(&s->rx_stop, true);
    event_notifier_set(&s->rx_kick);
    while (!s->rx_stopped) {
        qemu_cond_wait_iothread(&s->rx_done);
    }
    qemu_thread_join(&s->rx_thread);
    event_notifier_cleanup(&s->rx_kick);
    qemu_cond_destroy(&s->rx_done);
    cnuas_vnic_shm_close(s);
    cnuas_socklink_cleanup(&s->link);
    qemu_del_vm_change_state_handler(s->vmstate_change);
    timer_free(s->int_timer);
    qemu_bh_delete(s->tx_bh);
    g_free(s->bufs);
}
