/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuasgpu CnuasLink backend: one SOCK_SEQPACKET connection, one message
 * per frame or acknowledgement (hw/misc/cnuaslink.h), frames copied
 * between the socket and BAR1.
 *
 * A send finishes when the peer acknowledges the frame, which it does once
 * the frame is in its BAR1: one frame is in flight per direction, which is
 * the back-pressure (nothing is dropped), and a frame a lost connection
 * took with it is sent again on the next one. A connection lost while the
 * link was up is not a link loss until it stays lost for x-link-hold-ms
 * (the peer restarting, or either VM moving to a new QEMU process): the
 * link stays up meanwhile and the send in flight waits.
 *
 * The socket is non-blocking; the read handler is installed while the VM
 * runs, the write handler while a message waits for room.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/bswap.h"
#include "qemu/main-loop.h"
#include "exec/memory.h"
#include "cnuasgpu.h"

static void cnuasgpu_link_readable(void *opaque);
static void cnuasgpu_link_writable(void *opaque);

static int64_t cnuasgpu_now_ms(void)
{
    return qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
}

bool cnuasgpu_link_is_up(CnuasGpuState *s)
{
    return s->link.fd >= 0 || s->hold_until;
}

static bool cnuasgpu_rx_ready(CnuasGpuState *s)
{
    return s->vm_running && s->rx_len == 0 && s->rx_buf_size &&
           cnuasgpu_range_ok(s, s->rx_off, s->rx_buf_size);
}

static void cnuasgpu_tx_finish(CnuasGpuState *s, uint32_t result)
{
    s->tx_busy = false;
    s->tx_sent = false;
    s->tx_result = result;
    if (result == CNUASGPU_TX_OK) {
        s->stats[CNUASGPU_STAT(TX_FRAMES)]++;
    } else {
        s->stats[CNUASGPU_STAT(TX_ERRORS)]++;
    }
    cnuasgpu_raise(s, CNUASGPU_INT_TX);
}

/* Send one message; false if the socket is full or the connection failed. */
static bool cnuasgpu_link_send(CnuasGpuState *s, uint8_t type, uint64_t epoch,
                               uint64_t seq, void *data, size_t len)
{
    CnuasLinkHdr h = {
        .type = type,
        .epoch = cpu_to_le64(epoch),
        .seq = cpu_to_le64(seq),
    };
    struct iovec iov[2] = {
        { .iov_base = &h, .iov_len = sizeof(h) },
        { .iov_base = data, .iov_len = len },
    };
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
    ssize_t r;

    do {
        r = sendmsg(s->link.fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    return r >= 0;
}

/* Send what waits: our acknowledgement, then the frame in flight. */
static void cnuasgpu_link_flush(CnuasGpuState *s)
{
    if (s->link.fd >= 0 && s->vm_running && s->ack_pending &&
        cnuasgpu_link_send(s, CNUASLINK_ACK, s->ack_epoch, s->ack_seq,
                           NULL, 0)) {
        s->ack_pending = false;
    }
    if (s->link.fd >= 0 && s->vm_running && s->tx_busy && !s->tx_sent &&
        cnuasgpu_link_send(s, CNUASLINK_DATA, s->epoch, s->tx_seq,
                           s->txbuf, s->tx_pending_len)) {
        s->tx_sent = true;
    }
}

static void cnuasgpu_link_ack(CnuasGpuState *s, uint64_t epoch, uint64_t seq)
{
    s->ack_pending = true;
    s->ack_epoch = epoch;
    s->ack_seq = seq;
}

/* The frame waiting in rxbuf into the guest's RX buffer, once it is free. */
static void cnuasgpu_link_deliver(CnuasGpuState *s)
{
    if (!s->stash_len || !cnuasgpu_rx_ready(s)) {
        return;
    }
    if (s->stash_len > s->rx_buf_size) {
        s->stats[CNUASGPU_STAT(RX_DROPS)]++;
    } else {
        memcpy(s->devmem_ptr + s->rx_off, s->rxbuf, s->stash_len);
        memory_region_set_dirty(&s->devmem, s->rx_off, s->stash_len);
        s->rx_len = s->stash_len;
        s->stats[CNUASGPU_STAT(RX_FRAMES)]++;
        cnuasgpu_raise(s, CNUASGPU_INT_RX);
    }
    s->peer_epoch = s->stash_epoch;
    s->rx_next = s->stash_seq + 1;
    s->stash_len = 0;
    cnuasgpu_link_ack(s, s->stash_epoch, s->stash_seq);
}

/* Move what can move, then install exactly the fd handlers still needed. */
void cnuasgpu_link_update(CnuasGpuState *s)
{
    bool rx, tx;

    if (s->link.fd < 0) {
        return;
    }
    cnuasgpu_link_deliver(s);
    cnuasgpu_link_flush(s);
    if (s->link.fd < 0) {
        return;
    }
    rx = s->vm_running;
    tx = s->vm_running && (s->ack_pending || (s->tx_busy && !s->tx_sent));
    if (rx == s->rx_armed && tx == s->tx_armed) {
        return;
    }
    s->rx_armed = rx;
    s->tx_armed = tx;
    qemu_set_fd_handler(s->link.fd, rx ? cnuasgpu_link_readable : NULL,
                        tx ? cnuasgpu_link_writable : NULL, s);
}

/* Hold the link up until @until (ms), 0: no hold; reconnect faster then. */
static void cnuasgpu_link_hold(CnuasGpuState *s, int64_t until)
{
    s->hold_until = until;
    s->link.retry_ms = until ? CNUASGPU_REHOLD_MS : CNUAS_SOCKLINK_RETRY_MS;
}

/* A new connection: the link was up before only if held. */
static void cnuasgpu_link_set(void *opaque)
{
    CnuasGpuState *s = opaque;
    bool was_up = s->hold_until;

    cnuasgpu_link_hold(s, 0);
    s->rx_armed = false;
    s->tx_armed = false;
    s->tx_sent = false;
    s->ack_pending = false;
    s->stash_len = 0;
    cnuasgpu_link_update(s);
    if (!was_up) {
        cnuasgpu_raise(s, CNUASGPU_INT_LINK);
    }
}

/* No connection and no hold any more: the link is down. */
static void cnuasgpu_link_down(CnuasGpuState *s)
{
    cnuasgpu_link_hold(s, 0);
    if (s->tx_busy) {
        cnuasgpu_tx_finish(s, CNUASGPU_TX_ERR_LINK);
    }
    cnuasgpu_raise(s, CNUASGPU_INT_LINK);
}

/*
 * The connection ended. What it carried unacknowledged is sent again on
 * the next one, so the link only goes down if none comes within the hold.
 */
static void cnuasgpu_link_lost(CnuasGpuState *s)
{
    if (s->link.fd < 0) {
        return;
    }
    cnuas_socklink_close(&s->link);
    s->tx_sent = false;
    s->ack_pending = false;
    s->stash_len = 0;
    if (s->hold_ms) {
        cnuasgpu_link_hold(s, cnuasgpu_now_ms() + s->hold_ms);
        cnuas_socklink_retry(&s->link);
    } else {
        cnuasgpu_link_down(s);
    }
}

static void cnuasgpu_link_hung_up(void *opaque)
{
    cnuasgpu_link_lost(opaque);
}

/* We read only while the VM runs: a peer may go away meanwhile. */
static bool cnuasgpu_link_reading(void *opaque)
{
    CnuasGpuState *s = opaque;

    return s->rx_armed;
}

/* No connection: the hold may have run out. */
static void cnuasgpu_link_unconnected(void *opaque)
{
    CnuasGpuState *s = opaque;

    if (s->hold_until && cnuasgpu_now_ms() >= s->hold_until) {
        cnuasgpu_link_down(s);
    }
}

static const char *cnuasgpu_link_hint(int err)
{
    switch (err) {
    case ENOENT:
    case ECONNREFUSED:
        return "is the peer cnuasgpu (cnuaslink_listen=on) running, and is "
               "cnuaslink_socket its socket?";
    case EACCES:
    case EPERM:
        return "QEMU's user may not open the peer's socket";
    }
    return NULL;
}

static const CnuasSockLinkOps cnuasgpu_socklink_ops = {
    .connected = cnuasgpu_link_set,
    .hung_up = cnuasgpu_link_hung_up,
    .reading = cnuasgpu_link_reading,
    .unconnected = cnuasgpu_link_unconnected,
    .hint = cnuasgpu_link_hint,
};

static void cnuasgpu_link_writable(void *opaque)
{
    cnuasgpu_link_update(opaque);
}

/* TX_DOORBELL: copy the frame out of BAR1 now, send when possible. */
void cnuasgpu_link_tx(CnuasGpuState *s)
{
    if (s->tx_busy) {
        cnuasgpu_guest_error(s, "TX doorbell while a send is in flight");
        s->stats[CNUASGPU_STAT(TX_ERRORS)]++;
        return;
    }
    if (s->tx_len == 0 || s->tx_len > CNUASGPU_LINK_MAX_FRAME ||
        !cnuasgpu_range_ok(s, s->tx_off, s->tx_len)) {
        cnuasgpu_guest_error(s, "TX frame 0x%" PRIx64 "+%u outside BAR1 or "
                             "bad length", s->tx_off, s->tx_len);
        cnuasgpu_tx_finish(s, CNUASGPU_TX_ERR_RANGE);
        return;
    }
    if (!cnuasgpu_link_is_up(s)) {
        cnuasgpu_tx_finish(s, CNUASGPU_TX_ERR_LINK);
        return;
    }
    memcpy(s->txbuf, s->devmem_ptr + s->tx_off, s->tx_len);
    s->tx_pending_len = s->tx_len;
    s->tx_seq++;
    s->tx_busy = true;
    s->tx_sent = false;
    s->tx_result = CNUASGPU_TX_PENDING;
    cnuasgpu_link_update(s);
}

/* One message from the peer, header in h, len bytes of frame in rxbuf. */
static void cnuasgpu_link_input(CnuasGpuState *s, const CnuasLinkHdr *h,
                                size_t len)
{
    uint64_t epoch = le64_to_cpu(h->epoch), seq = le64_to_cpu(h->seq);

    if (h->type == CNUASLINK_ACK) {
        if (s->tx_busy && epoch == s->epoch && seq == s->tx_seq) {
            cnuasgpu_tx_finish(s, CNUASGPU_TX_OK);
        }
        return;
    }
    if (h->type != CNUASLINK_DATA || !epoch) {
        s->stats[CNUASGPU_STAT(RX_DROPS)]++;
        return;
    }
    if (epoch == s->peer_epoch && seq < s->rx_next) {
        cnuasgpu_link_ack(s, epoch, seq);       /* a copy of one we have */
        return;
    }
    if (len == 0 || len > CNUASGPU_LINK_MAX_FRAME) {
        s->stats[CNUASGPU_STAT(RX_DROPS)]++;
        cnuasgpu_link_ack(s, epoch, seq);       /* never fits: do not resend */
        return;
    }
    s->stash_len = len;
    s->stash_epoch = epoch;
    s->stash_seq = seq;
    cnuasgpu_link_deliver(s);
}

static void cnuasgpu_link_readable(void *opaque)
{
    CnuasGpuState *s = opaque;
    unsigned budget = 64;       /* bounded work per call, even if flooded */
    uint8_t scratch[16];

    while (budget-- && s->link.fd >= 0 && s->vm_running) {
        CnuasLinkHdr h;
        /* While a frame waits in rxbuf only acknowledgements may come. */
        struct iovec iov[2] = {
            { .iov_base = &h, .iov_len = sizeof(h) },
            { .iov_base = s->stash_len ? scratch : s->rxbuf,
              .iov_len = s->stash_len ? sizeof(scratch) :
                                        CNUASGPU_LINK_MAX_FRAME },
        };
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
        ssize_t r = recvmsg(s->link.fd, &msg, MSG_DONTWAIT | MSG_TRUNC);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        if (r <= 0) {
            cnuasgpu_link_lost(s);      /* error or end of file */
            return;
        }
        if (r < sizeof(h)) {
            s->stats[CNUASGPU_STAT(RX_DROPS)]++;
            continue;
        }
        if (s->stash_len && h.type == CNUASLINK_DATA) {
            /* a second frame in flight: the peer broke the protocol */
            s->stats[CNUASGPU_STAT(RX_DROPS)]++;
            continue;
        }
        cnuasgpu_link_input(s, &h, r - sizeof(h));
    }
    cnuasgpu_link_update(s);
}

/* Guest memory must not change while the VM is stopped. */
static void cnuasgpu_vm_state(void *opaque, bool running, RunState state)
{
    CnuasGpuState *s = opaque;

    s->vm_running = running;
    cnuasgpu_link_update(s);
}

bool cnuasgpu_link_realize(CnuasGpuState *s, Error **errp)
{
    if (!cnuas_socklink_check_path(s->link_path, "cnuaslink_socket", errp)) {
        return false;
    }
    if (s->link_listen && !s->link_path) {
        error_setg(errp, "cnuaslink_listen needs cnuaslink_socket");
        return false;
    }
    if (!cnuas_socklink_init(&s->link, DEVICE(s), s->link_path,
                             s->link_listen, &cnuasgpu_socklink_ops, s,
                             errp)) {
        return false;
    }
    s->txbuf = g_malloc(CNUASGPU_LINK_MAX_FRAME);
    s->rxbuf = g_malloc(CNUASGPU_LINK_MAX_FRAME);
    /* Distinct per device instance, kept across migration: never 0. */
    do {
        s->epoch = (uint64_t)g_random_int() << 32 | g_random_int();
    } while (!s->epoch);
    s->vm_running = runstate_is_running();
    s->vmstate_change = qemu_add_vm_change_state_handler(cnuasgpu_vm_state, s);
    cnuas_socklink_start(&s->link);
    return true;
}

void cnuasgpu_link_unrealize(CnuasGpuState *s)
{
    cnuas_socklink_cleanup(&s->link);
    qemu_del_vm_change_state_handler(s->vmstate_change);
    g_free(s->txbuf);
    g_free(s->rxbuf);
}

/* Device reset: drop a send in flight, keep the connection. */
void cnuasgpu_link_reset(CnuasGpuState *s)
{
    s->tx_busy = false;
    s->tx_sent = false;
    s->tx_pending_len = 0;
    cnuasgpu_link_update(s);
}

void cnuasgpu_link_pre_save(CnuasGpuState *s)
{
    s->link_was_up = cnuasgpu_link_is_up(s);
}

/*
 * The connection is not migrated, its sequence state and the frame in
 * flight are: the destination holds the link up while it connects and
 * sends that frame again; the peer drops it if it already had it.
 */
void cnuasgpu_link_post_load(CnuasGpuState *s)
{
    s->tx_sent = false;
    if (s->tx_busy) {
        s->tx_result = CNUASGPU_TX_PENDING;
    } else if (s->tx_result == CNUASGPU_TX_PENDING) {
        s->tx_result = CNUASGPU_TX_ERR_LINK;    /* from a version 1 stream */
        s->int_status |= CNUASGPU_INT_TX;
    }
    if (s->link.fd < 0 && s->link_was_up && s->hold_ms) {
        cnuasgpu_link_hold(s, cnuasgpu_now_ms() + s->hold_ms);
        cnuas_socklink_retry(&s->link);
    } else if (s->link.fd < 0 && s->tx_busy) {
        cnuasgpu_tx_finish(s, CNUASGPU_TX_ERR_LINK);
    }
    cnuasgpu_link_update(s);
}
