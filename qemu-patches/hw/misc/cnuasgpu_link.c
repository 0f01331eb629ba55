/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuasgpu CnuasLink backend: one SOCK_SEQPACKET connection, one message
 * per frame, frames copied between the socket and BAR1.
 *
 * The socket is non-blocking and only watched when there is something to
 * do: the read handler is installed while the guest has an empty, valid
 * RX buffer (otherwise the peer holds its frames: back-pressure, no drops),
 * the write handler while a send waits for room.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/main-loop.h"
#include "qemu/sockets.h"
#include "exec/memory.h"
#include "cnuasgpu.h"

#include <poll.h>
#include <sys/un.h>

static void cnuasgpu_link_readable(void *opaque);
static void cnuasgpu_link_writable(void *opaque);

static bool cnuasgpu_rx_ready(CnuasGpuState *s)
{
    return s->vm_running && s->rx_len == 0 && s->rx_buf_size &&
           cnuasgpu_range_ok(s, s->rx_off, s->rx_buf_size);
}

/* Install exactly the fd handlers the current state needs. */
void cnuasgpu_link_update(CnuasGpuState *s)
{
    bool rx, tx;

    if (s->fd < 0) {
        return;
    }
    rx = cnuasgpu_rx_ready(s);
    tx = s->tx_busy;
    if (rx == s->rx_armed && tx == s->tx_armed) {
        return;
    }
    s->rx_armed = rx;
    s->tx_armed = tx;
    qemu_set_fd_handler(s->fd, rx ? cnuasgpu_link_readable : NULL,
                        tx ? cnuasgpu_link_writable : NULL, s);
}

static void cnuasgpu_tx_finish(CnuasGpuState *s, uint32_t result)
{
    s->tx_busy = false;
    s->tx_result = result;
    if (result == CNUASGPU_TX_OK) {
        s->stats[CNUASGPU_STAT(TX_FRAMES)]++;
    } else {
        s->stats[CNUASGPU_STAT(TX_ERRORS)]++;
    }
    cnuasgpu_raise(s, CNUASGPU_INT_TX);
}

static void cnuasgpu_link_set(CnuasGpuState *s, int fd)
{
    s->fd = fd;
    s->rx_armed = false;
    s->tx_armed = false;
    if (fd >= 0) {
        cnuasgpu_link_update(s);
    }
    cnuasgpu_raise(s, CNUASGPU_INT_LINK);
}

static void cnuasgpu_link_down(CnuasGpuState *s)
{
    if (s->fd < 0) {
        return;
    }
    qemu_set_fd_handler(s->fd, NULL, NULL, NULL);
    close(s->fd);
    if (s->tx_busy) {
        cnuasgpu_tx_finish(s, CNUASGPU_TX_ERR_LINK);
    }
    cnuasgpu_link_set(s, -1);
}

static void cnuasgpu_link_connect(CnuasGpuState *s)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;

    fd = qemu_socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd < 0) {
        return;
    }
    qemu_socket_set_nonblock(fd);
    pstrcpy(sa.sun_path, sizeof(sa.sun_path), s->link_path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return;
    }
    cnuasgpu_link_set(s, fd);
}

/* Listening side: take one peer at a time, refuse the others. */
static void cnuasgpu_link_accept(void *opaque)
{
    CnuasGpuState *s = opaque;
    int fd = qemu_accept(s->listen_fd, NULL, NULL);

    if (fd < 0) {
        return;
    }
    if (s->fd >= 0) {
        close(fd);
        return;
    }
    qemu_socket_set_nonblock(fd);
    cnuasgpu_link_set(s, fd);
}

/* Did the peer go away while we are not reading (RX back-pressure)? */
static bool cnuasgpu_link_hung_up(CnuasGpuState *s)
{
    struct pollfd pfd = { .fd = s->fd, .events = POLLRDHUP };

    if (poll(&pfd, 1, 0) <= 0) {
        return false;
    }
    return pfd.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL);
}

static void cnuasgpu_link_timer(void *opaque)
{
    CnuasGpuState *s = opaque;

    if (s->fd < 0) {
        if (!s->link_listen) {
            cnuasgpu_link_connect(s);
        }
    } else if (!s->rx_armed && cnuasgpu_link_hung_up(s)) {
        cnuasgpu_link_down(s);
    }
    timer_mod(s->link_timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
              CNUASGPU_RECONNECT_MS);
}

/* Try to send the frame in txbuf; false if the socket is full. */
static bool cnuasgpu_link_try_send(CnuasGpuState *s)
{
    ssize_t r;

    do {
        r = send(s->fd, s->txbuf, s->tx_pending_len, MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    if (r < 0 &&
        (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
        return false;
    }
    if (r < 0) {
        cnuasgpu_link_down(s);  /* finishes the send with ERR_LINK */
        return true;
    }
    cnuasgpu_tx_finish(s, CNUASGPU_TX_OK);
    return true;
}

static void cnuasgpu_link_writable(void *opaque)
{
    CnuasGpuState *s = opaque;

    if (s->tx_busy && s->fd >= 0) {
        cnuasgpu_link_try_send(s);
    }
    cnuasgpu_link_update(s);
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
    if (s->fd < 0) {
        cnuasgpu_tx_finish(s, CNUASGPU_TX_ERR_LINK);
        return;
    }
    memcpy(s->txbuf, s->devmem_ptr + s->tx_off, s->tx_len);
    s->tx_pending_len = s->tx_len;
    s->tx_busy = true;
    s->tx_result = CNUASGPU_TX_PENDING;
    if (!cnuasgpu_link_try_send(s)) {
        cnuasgpu_link_update(s);
    }
}

/* One frame into the RX buffer, then wait for RX_CONSUME. */
static void cnuasgpu_link_readable(void *opaque)
{
    CnuasGpuState *s = opaque;
    unsigned budget = 64;       /* bounded work per call, even if flooded */
    ssize_t r;

    while (budget-- && s->fd >= 0 && cnuasgpu_rx_ready(s)) {
        r = recv(s->fd, s->rxbuf, CNUASGPU_LINK_MAX_FRAME + 1,
                 MSG_DONTWAIT | MSG_TRUNC);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        }
        if (r <= 0) {
            cnuasgpu_link_down(s);      /* error or end of file */
            return;
        }
        if (r > CNUASGPU_LINK_MAX_FRAME || r > s->rx_buf_size) {
            s->stats[CNUASGPU_STAT(RX_DROPS)]++;
            continue;
        }
        memcpy(s->devmem_ptr + s->rx_off, s->rxbuf, r);
        memory_region_set_dirty(&s->devmem, s->rx_off, r);
        s->rx_len = r;
        s->stats[CNUASGPU_STAT(RX_FRAMES)]++;
        cnuasgpu_raise(s, CNUASGPU_INT_RX);
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

static int cnuasgpu_link_listen(CnuasGpuState *s, Error **errp)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;
    int fd;

    fd = qemu_socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd < 0) {
        error_setg_errno(errp, errno, "cnuaslink socket");
        return -1;
    }
    pstrcpy(sa.sun_path, sizeof(sa.sun_path), s->link_path);
    /* Replace a stale socket from an earlier run, never another file. */
    if (lstat(s->link_path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        unlink(s->link_path);
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0) {
        error_setg_errno(errp, errno, "cannot listen on '%s'", s->link_path);
        close(fd);
        return -1;
    }
    qemu_socket_set_nonblock(fd);
    return fd;
}

bool cnuasgpu_link_realize(CnuasGpuState *s, Error **errp)
{
    struct sockaddr_un sa;

    s->fd = -1;
    s->listen_fd = -1;
    if (s->link_path && strlen(s->link_path) >= sizeof(sa.sun_path)) {
        error_setg(errp, "cnuaslink_socket is longer than %zu bytes",
                   sizeof(sa.sun_path) - 1);
        return false;
    }
    if (s->link_listen && !s->link_path) {
        error_setg(errp, "cnuaslink_listen needs cnuaslink_socket");
        return false;
    }
    if (s->link_listen) {
        s->listen_fd = cnuasgpu_link_listen(s, errp);
        if (s->listen_fd < 0) {
            return false;
        }
        qemu_set_fd_handler(s->listen_fd, cnuasgpu_link_accept, NULL, s);
    }
    s->txbuf = g_malloc(CNUASGPU_LINK_MAX_FRAME);
    s->rxbuf = g_malloc(CNUASGPU_LINK_MAX_FRAME + 1);
    s->link_timer = timer_new_ms(QEMU_CLOCK_REALTIME, cnuasgpu_link_timer, s);
    s->vm_running = runstate_is_running();
    s->vmstate_change = qemu_add_vm_change_state_handler(cnuasgpu_vm_state, s);
    if (s->link_path) {
        cnuasgpu_link_timer(s);
    }
    return true;
}

void cnuasgpu_link_unrealize(CnuasGpuState *s)
{
    if (s->fd >= 0) {
        qemu_set_fd_handler(s->fd, NULL, NULL, NULL);
        close(s->fd);
        s->fd = -1;
    }
    if (s->listen_fd >= 0) {
        qemu_set_fd_handler(s->listen_fd, NULL, NULL, NULL);
        close(s->listen_fd);
        s->listen_fd = -1;
    }
    qemu_del_vm_change_state_handler(s->vmstate_change);
    timer_free(s->link_timer);
    g_free(s->txbuf);
    g_free(s->rxbuf);
}

/* Device reset: drop a send in flight, keep the connection. */
void cnuasgpu_link_reset(CnuasGpuState *s)
{
    s->tx_busy = false;
    s->tx_pending_len = 0;
    cnuasgpu_link_update(s);
}

/* The connection is not migrated: a send in flight is lost. */
void cnuasgpu_link_post_load(CnuasGpuState *s)
{
    if (s->tx_result == CNUASGPU_TX_PENDING) {
        s->tx_result = CNUASGPU_TX_ERR_LINK;
        s->int_status |= CNUASGPU_INT_TX;
    }
    s->tx_busy = false;
    cnuasgpu_link_update(s);
}
