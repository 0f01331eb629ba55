/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The socket link of the Cnuas devices: connect, reconnect, accept and
 * hang-up detection. See include/hw/misc/cnuas_socklink.h.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/main-loop.h"
#include "qemu/sockets.h"
#include "hw/misc/cnuas_socklink.h"

#include <poll.h>
#include <sys/un.h>

bool cnuas_socklink_check_path(const char *path, const char *prop,
                               Error **errp)
{
    struct sockaddr_un sa;

    if (path && strlen(path) >= sizeof(sa.sun_path)) {
        error_setg(errp, "%s is longer than %zu bytes", prop,
                   sizeof(sa.sun_path) - 1);
        return false;
    }
    return true;
}

/* The device as the administrator named it: its id, else its QOM path. */
static char *cnuas_socklink_name(CnuasSockLink *l)
{
    const char *type = object_get_typename(OBJECT(l->dev));
    g_autofree char *qom = NULL;

    if (l->dev->id) {
        return g_strdup_printf("%s '%s'", type, l->dev->id);
    }
    qom = object_get_canonical_path(OBJECT(l->dev));
    return g_strdup_printf("%s %s", type, qom ? qom : "");
}

/*
 * connect() failed with @err: say so once per distinct error, since the
 * guest only sees its link down. Transient errors are not worth a word.
 */
static void cnuas_socklink_warn(CnuasSockLink *l, int err)
{
    g_autofree char *name = NULL;
    const char *hint;

    if (err == EAGAIN || err == EINTR || err == l->warned_err) {
        return;
    }
    l->warned_err = err;
    name = cnuas_socklink_name(l);
    hint = l->ops->hint ? l->ops->hint(err) : NULL;
    warn_report("%s: cannot connect to '%s' (retrying every %u ms): %s%s%s",
                name, l->path, l->retry_ms, strerror(err), hint ? "; " : "",
                hint ? hint : "");
}

static void cnuas_socklink_set(CnuasSockLink *l, int fd)
{
    if (l->warned_err) {
        g_autofree char *name = cnuas_socklink_name(l);

        info_report("%s: connected to '%s'", name, l->path);
        l->warned_err = 0;
    }
    l->fd = fd;
    l->ops->connected(l->opaque);
}

bool cnuas_socklink_connect(CnuasSockLink *l)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;

    if (l->fd >= 0 || l->listen_fd >= 0 || !l->path) {
        return false;
    }
    fd = qemu_socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd < 0) {
        cnuas_socklink_warn(l, errno);
        return false;
    }
    qemu_socket_set_nonblock(fd);
    pstrcpy(sa.sun_path, sizeof(sa.sun_path), l->path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int err = errno;

        close(fd);
        cnuas_socklink_warn(l, err);
        return false;
    }
    cnuas_socklink_set(l, fd);
    return true;
}

/* Listening: take one peer at a time, refuse the others. */
static void cnuas_socklink_accept(void *opaque)
{
    CnuasSockLink *l = opaque;
    int fd = qemu_accept(l->listen_fd, NULL, NULL);

    if (fd < 0) {
        return;
    }
    if (l->fd >= 0) {
        close(fd);
        return;
    }
    qemu_socket_set_nonblock(fd);
    cnuas_socklink_set(l, fd);
}

void cnuas_socklink_close(CnuasSockLink *l)
{
    if (l->fd < 0) {
        return;
    }
    qemu_set_fd_handler(l->fd, NULL, NULL, NULL);
    close(l->fd);
    l->fd = -1;
}

/* Did the peer go away while nobody reads the socket? */
static bool cnuas_socklink_hung_up(CnuasSockLink *l)
{
    struct pollfd pfd = { .fd = l->fd, .events = POLLRDHUP };

    if (poll(&pfd, 1, 0) <= 0) {
        return false;
    }
    return pfd.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL);
}

static void cnuas_socklink_timer(void *opaque)
{
    CnuasSockLink *l = opaque;
    int64_t now = qemu_clock_get_ms(QEMU_CLOCK_REALTIME);

    if (l->fd < 0) {
        if (l->ops->unconnected) {
            l->ops->unconnected(l->opaque);
        }
        if (!l->ops->may_connect || l->ops->may_connect(l->opaque)) {
            cnuas_socklink_connect(l);
        }
    } else if (!l->ops->reading(l->opaque) && cnuas_socklink_hung_up(l)) {
        l->ops->hung_up(l->opaque);
    }
    timer_mod(l->timer, now + l->retry_ms);
}

void cnuas_socklink_retry(CnuasSockLink *l)
{
    timer_mod(l->timer, qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + l->retry_ms);
}

static int cnuas_socklink_listen(const char *path, Error **errp)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;
    int fd;

    fd = qemu_socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd < 0) {
        error_setg_errno(errp, errno, "cannot listen on '%s'", path);
        return -1;
    }
    pstrcpy(sa.sun_path, sizeof(sa.sun_path), path);
    /* Replace a stale socket from an earlier run, never another file. */
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        unlink(path);
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0) {
        error_setg_errno(errp, errno, "cannot listen on '%s'", path);
        close(fd);
        return -1;
    }
    qemu_socket_set_nonblock(fd);
    return fd;
}

bool cnuas_socklink_init(CnuasSockLink *l, DeviceState *dev, const char *path,
                         bool listen, const CnuasSockLinkOps *ops,
                         void *opaque, Error **errp)
{
    l->dev = dev;
    l->warned_err = 0;
    l->path = path;
    l->fd = -1;
    l->listen_fd = -1;
    l->retry_ms = CNUAS_SOCKLINK_RETRY_MS;
    l->ops = ops;
    l->opaque = opaque;
    if (listen) {
        l->listen_fd = cnuas_socklink_listen(path, errp);
        if (l->listen_fd < 0) {
            return false;
        }
        qemu_set_fd_handler(l->listen_fd, cnuas_socklink_accept, NULL, l);
    }
    l->timer = timer_new_ms(QEMU_CLOCK_REALTIME, cnuas_socklink_timer, l);
    return true;
}

void cnuas_socklink_start(CnuasSockLink *l)
{
    if (l->path) {
        cnuas_socklink_timer(l);
    }
}

void cnuas_socklink_cleanup(CnuasSockLink *l)
{
    cnuas_socklink_close(l);
    if (l->listen_fd >= 0) {
        qemu_set_fd_handler(l->listen_fd, NULL, NULL, NULL);
        close(l->listen_fd);
        l->listen_fd = -1;
    }
    timer_free(l->timer);
    l->timer = NULL;
}
