/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the qtests of the Cnuas devices (cnuas-vnic-test.c,
 * cnuasgpu-test.c) share: the PCI device under test, the Unix socket the
 * test plays the device's peer on, register polling, test patterns.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#ifndef CNUAS_QTEST_HARNESS_H
#define CNUAS_QTEST_HARNESS_H

#include <poll.h>
#include <sys/un.h>
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci-pc.h"

#define CNUAS_QTEST_WAIT_US     (5 * 1000 * 1000)

static void cnuas_qtest_save_dev(QPCIDevice *dev, int devfn, void *data)
{
    QPCIDevice **pdev = data;

    if (!*pdev) {
        *pdev = dev;
    } else {
        g_free(dev);
    }
}

/* The first function with @vendor:@device; the test g_free()s it. */
static inline QPCIDevice *cnuas_qtest_find_dev(QPCIBus *bus, uint16_t vendor,
                                               uint16_t device)
{
    QPCIDevice *dev = NULL;

    qpci_device_foreach(bus, vendor, device, cnuas_qtest_save_dev, &dev);
    g_assert(dev);
    return dev;
}

/* A fresh directory for the socket: *@dir, and @name in it (returned). */
static inline char *cnuas_qtest_sock_path(const char *tmpl, const char *name,
                                          char **dir)
{
    *dir = g_dir_make_tmp(tmpl, NULL);
    g_assert(*dir);
    return g_build_filename(*dir, name, NULL);
}

static inline void cnuas_qtest_sock_path_free(char *dir, char *path)
{
    unlink(path);
    rmdir(dir);
    g_free(path);
    g_free(dir);
}

static inline void cnuas_qtest_close(int fd)
{
    if (fd >= 0) {
        close(fd);
    }
}

static inline int cnuas_qtest_listen(const char *path)
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

/* The device's connection to our listening socket, within WAIT_US. */
static inline int cnuas_qtest_accept(int lfd)
{
    struct pollfd pfd = { .fd = lfd, .events = POLLIN };
    int fd;

    g_assert_cmpint(poll(&pfd, 1, CNUAS_QTEST_WAIT_US / 1000), ==, 1);
    fd = accept(lfd, NULL, NULL);
    g_assert_cmpint(fd, >=, 0);
    return fd;
}

/* Poll a register (through qtest, so QEMU keeps running) until it matches. */
static inline bool cnuas_qtest_wait_reg(QPCIDevice *dev, QPCIBar bar,
                                        uint32_t reg, uint32_t mask,
                                        uint32_t want)
{
    int us;

    for (us = 0; us < CNUAS_QTEST_WAIT_US; us += 1000) {
        if ((qpci_io_readl(dev, bar, reg) & mask) == want) {
            return true;
        }
        g_usleep(1000);
    }
    return false;
}

/* A pattern that differs per @seed and shows moved or lost bytes. */
static inline void cnuas_qtest_fill(uint8_t *buf, size_t len, unsigned seed)
{
    size_t i;

    for (i = 0; i < len; i++) {
        buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
    }
}

#endif
