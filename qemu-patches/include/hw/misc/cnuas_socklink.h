/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The socket link of the Cnuas devices (cnuas-vnic to cnuas-vswitchd,
 * cnuasgpu to its peer GPU): a non-blocking SOCK_SEQPACKET connection to
 * a Unix socket, connected again every CNUAS_SOCKLINK_RETRY_MS while
 * there is none, or taken from a listening socket, one peer at a time.
 * A timer run also notices a peer that hung up while the device did not
 * read the socket (it would see the end of file only then).
 *
 * What goes over the connection, and when to read or write it, is the
 * device's business: it installs its own fd handlers on @fd.
 *
 * A connection that fails is reported once with warn_report() (the
 * device, the path, the error and the device's hint for it), again only
 * when the error changes, and its success after that with info_report():
 * QEMU's log (libvirt's /var/log/libvirt/qemu/DOMAIN.log) says why the
 * guest's link stays down.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#ifndef HW_MISC_CNUAS_SOCKLINK_H
#define HW_MISC_CNUAS_SOCKLINK_H

#include "qemu/timer.h"
#include "hw/qdev-core.h"

#define CNUAS_SOCKLINK_RETRY_MS 500

typedef struct CnuasSockLinkOps {
    /* @fd is a new connection. */
    void (*connected)(void *opaque);
    /* The peer hung up while reading() was false: end the connection. */
    void (*hung_up)(void *opaque);
    /* Does the device read @fd now (and so see the end of file)? */
    bool (*reading)(void *opaque);
    /* Optional: with no connection, connect now? (Default: yes.) */
    bool (*may_connect)(void *opaque);
    /* Optional: a timer run found no connection, before connecting. */
    void (*unconnected)(void *opaque);
    /* Optional: what the administrator should check when connect() fails. */
    const char *(*hint)(int err);
} CnuasSockLinkOps;

typedef struct CnuasSockLink {
    const char *path;           /* NULL: no link at all */
    int fd;                     /* the connection, -1: none */
    int listen_fd;              /* listening: the socket peers connect to */
    uint32_t retry_ms;          /* timer period, CNUAS_SOCKLINK_RETRY_MS */
    QEMUTimer *timer;
    const CnuasSockLinkOps *ops;
    void *opaque;
    DeviceState *dev;           /* named in the warnings */
    int warned_err;             /* errno last warned about, 0: none */
} CnuasSockLink;

/* Realize-time check of the socket path property @prop. */
bool cnuas_socklink_check_path(const char *path, const char *prop,
                               Error **errp);
/*
 * Set @l of device @dev up for @path (already checked), listening on it
 * if @listen. Nothing connects before cnuas_socklink_start().
 */
bool cnuas_socklink_init(CnuasSockLink *l, DeviceState *dev, const char *path,
                         bool listen, const CnuasSockLinkOps *ops,
                         void *opaque, Error **errp);
/* The first timer run: connect now if there is a path. */
void cnuas_socklink_start(CnuasSockLink *l);
/* Without a connection and not listening: try once; true if connected. */
bool cnuas_socklink_connect(CnuasSockLink *l);
/* End the connection (fd handlers removed); the timer connects again. */
void cnuas_socklink_close(CnuasSockLink *l);
/* Run the timer @l->retry_ms from now (after changing retry_ms). */
void cnuas_socklink_retry(CnuasSockLink *l);
void cnuas_socklink_cleanup(CnuasSockLink *l);

#endif
