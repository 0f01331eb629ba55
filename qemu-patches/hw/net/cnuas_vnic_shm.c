/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuas-vnic: shared-memory rings with cnuas-vswitchd (property
 * x-shm-ring, experimental). Per connection the device offers a memfd
 * with one ring per direction and three eventfds in its first message;
 * a switch that answers ACCEPT then sends frames through the RX ring, and
 * after the device's RING_ON takes them from the TX ring. The layout and
 * messages are in hw/net/cnuas_shm_ring.h, the design in the Cnuas tree's
 * docs/shm-ring.md.
 *
 * The switch may write the area at any time: the device keeps its own
 * indexes, bounds the switch's by the ring size and reads a slot's length
 * once.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/memfd.h"
#include "cnuas_vnic.h"

#include <sys/mman.h>
#include <sys/socket.h>

static bool cnuas_vnic_shm_send(CnuasVnicState *s, uint16_t type,
                                uint32_t arg, const int *fds, unsigned nfds)
{
    struct cnuas_shm_msg m = {
        .magic = CNUAS_SHM_MAGIC, .version = CNUAS_SHM_VERSION,
        .type = type, .arg = arg,
    };
    struct iovec iov = { .iov_base = &m, .iov_len = CNUAS_SHM_MSG_LEN };
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * CNUAS_SHM_NFDS)];
    } c;
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
    struct cmsghdr *cm;

    if (nfds) {
        memset(&c, 0, sizeof(c));
        mh.msg_control = c.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
    }
    return sendmsg(s->link.fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) ==
           CNUAS_SHM_MSG_LEN;
}

void cnuas_vnic_shm_close(CnuasVnicState *s)
{
    CnuasVnicShm *r = &s->shm;

    if (r->state == CNUAS_VNIC_SHM_OFF) {
        return;
    }
    qemu_set_fd_handler(event_notifier_get_fd(&r->tx_wake), NULL, NULL,
                        NULL);
    munmap(r->map, r->len);
    close(r->memfd);
    event_notifier_cleanup(&r->sw_wake);
    event_notifier_cleanup(&r->rx_wake);
    event_notifier_cleanup(&r->tx_wake);
    r->state = CNUAS_VNIC_SHM_OFF;
}

/* On a new connection: offer the rings, or stay on the socket. */
void cnuas_vnic_shm_offer(CnuasVnicState *s)
{
    CnuasVnicShm *r = &s->shm;
    struct cnuas_shm_area h = {
        .magic = CNUAS_SHM_MAGIC,
        .version = CNUAS_SHM_VERSION,
        .nslots = CNUAS_SHM_SLOTS_DEFAULT,
        .slot_size = CNUAS_SHM_SLOT_DEFAULT,
        .tx_off = sizeof(struct cnuas_shm_area),
        .rx_off = sizeof(struct cnuas_shm_area) +
                  cnuas_shm_ring_bytes(CNUAS_SHM_SLOTS_DEFAULT,
                                       CNUAS_SHM_SLOT_DEFAULT),
    };
    Error *err = NULL;
    int fds[CNUAS_SHM_NFDS];

    if (!s->shm_ring || s->link.fd < 0 || r->state != CNUAS_VNIC_SHM_OFF) {
        return;
    }
    r->len = cnuas_shm_area_bytes(h.nslots, h.slot_size);
    /* sealed: the switch must not fear a shrink (SIGBUS) */
    r->memfd = qemu_memfd_create("cnuas-vnic-rings", r->len, false, 0,
                                 F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL,
                                 &err);
    if (r->memfd < 0) {
        warn_report_err(err);
        return;
    }
    r->map = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED,
                  r->memfd, 0);
    if (r->map == MAP_FAILED) {
        close(r->memfd);
        return;
    }
    event_notifier_init(&r->sw_wake, 0);
    event_notifier_init(&r->rx_wake, 0);
    event_notifier_init(&r->tx_wake, 0);
    memcpy(r->map, &h, sizeof(h));
    r->nslots = h.nslots;
    r->slot_size = h.slot_size;
    r->tx = (struct cnuas_shm_ctl *)(r->map + h.tx_off);
    r->rx = (struct cnuas_shm_ctl *)(r->map + h.rx_off);
    r->tx_slots = (uint8_t *)(r->tx + 1);
    r->rx_slots = (uint8_t *)(r->rx + 1);
    r->tx_prod = r->rx_cons = 0;
    r->state = CNUAS_VNIC_SHM_OFFERED;
    fds[CNUAS_SHM_FD_AREA] = r->memfd;
    fds[CNUAS_SHM_FD_SWITCH_WAKE] = event_notifier_get_fd(&r->sw_wake);
    fds[CNUAS_SHM_FD_RX_WAKE] = event_notifier_get_fd(&r->rx_wake);
    fds[CNUAS_SHM_FD_TX_WAKE] = event_notifier_get_fd(&r->tx_wake);
    if (!cnuas_vnic_shm_send(s, CNUAS_SHM_HELLO, r->len, fds,
                             CNUAS_SHM_NFDS)) {
        cnuas_vnic_shm_close(s);
    }
}

/*
 * A message on the socket while the offer stands: ACCEPT or REFUSE is
 * taken (true), anything else is a frame.
 */
bool cnuas_vnic_shm_msg(CnuasVnicState *s, const uint8_t *buf, uint32_t len)
{
    struct cnuas_shm_msg m;

    if (s->shm.state != CNUAS_VNIC_SHM_OFFERED || len != CNUAS_SHM_MSG_LEN) {
        return false;
    }
    memcpy(&m, buf, sizeof(m));
    if (m.magic != CNUAS_SHM_MAGIC || m.version != CNUAS_SHM_VERSION) {
        return false;
    }
    if (m.type == CNUAS_SHM_ACCEPT) {
        /* the RX thread moves to the ring at once; TX after RING_ON */
        s->shm.state = CNUAS_VNIC_SHM_ACCEPTED;
        qemu_bh_schedule(s->tx_bh);
        return true;
    }
    if (m.type == CNUAS_SHM_REFUSE) {
        qemu_log_mask(LOG_UNIMP, "%s: switch refused shared-memory rings "
                      "(reason %u)\n", TYPE_CNUAS_VNIC, m.arg);
        cnuas_vnic_shm_close(s);
        return true;
    }
    return false;
}

/* Accepted: tell the switch our frames come on the ring from now on. */
void cnuas_vnic_shm_ring_on(CnuasVnicState *s)
{
    if (s->shm.state == CNUAS_VNIC_SHM_ACCEPTED &&
        cnuas_vnic_shm_send(s, CNUAS_SHM_RING_ON, 0, NULL, 0)) {
        s->shm.state = CNUAS_VNIC_SHM_ON;
    }
}

/* What the RX thread watches: the RX ring's eventfd or the socket. */
int cnuas_vnic_rx_fd(CnuasVnicState *s)
{
    return cnuas_vnic_shm_rx_on(s) ? event_notifier_get_fd(&s->shm.rx_wake) :
           s->link.fd;
}

static struct cnuas_shm_slot *cnuas_vnic_shm_slot(CnuasVnicShm *r,
                                                  uint8_t *slots,
                                                  uint32_t idx)
{
    return (struct cnuas_shm_slot *)(slots + (size_t)(idx & (r->nslots - 1)) *
                                     r->slot_size);
}

/* Frames waiting in the RX ring, at most @max; -1: impossible index. */
int cnuas_vnic_shm_rx_avail(CnuasVnicState *s, unsigned max)
{
    CnuasVnicShm *r = &s->shm;
    uint32_t avail = qatomic_load_acquire(&r->rx->prod) - r->rx_cons;

    if (avail > r->nslots) {
        return -1;
    }
    return MIN(avail, max);
}

/* Copy the @i-th waiting frame into @buf: its length, 0 if it lies. */
uint32_t cnuas_vnic_shm_rx_copy(CnuasVnicState *s, unsigned i, uint8_t *buf)
{
    CnuasVnicShm *r = &s->shm;
    struct cnuas_shm_slot *sl = cnuas_vnic_shm_slot(r, r->rx_slots,
                                                    r->rx_cons + i);
    uint32_t len = qatomic_read(&sl->len);

    if (!len || len > CNUAS_VNIC_MAX_FRAME ||
        len > r->slot_size - CNUAS_SHM_SLOT_HDR) {
        return 0;
    }
    memcpy(buf, sl->frame, len);
    return len;
}

void cnuas_vnic_shm_rx_pop(CnuasVnicState *s, unsigned n)
{
    CnuasVnicShm *r = &s->shm;

    if (!n) {
        return;
    }
    r->rx_cons += n;
    qatomic_store_release(&r->rx->cons, r->rx_cons);
    smp_mb();   /* cons before prod_wait: pairs with the switch's arm */
    if (qatomic_read(&r->rx->prod_wait)) {
        event_notifier_set(&r->sw_wake);
    }
}

/* About to wait for frames: ask for a kick, or kick ourselves. */
void cnuas_vnic_shm_rx_arm(CnuasVnicState *s)
{
    CnuasVnicShm *r = &s->shm;

    qatomic_set(&r->rx->cons_sleep, 1);
    smp_mb();   /* cons_sleep before prod: pairs with the switch's send */
    if (qatomic_load_acquire(&r->rx->prod) != r->rx_cons) {
        event_notifier_set(&r->rx_wake);
    }
}

void cnuas_vnic_shm_rx_woken(CnuasVnicState *s)
{
    event_notifier_test_and_clear(&s->shm.rx_wake);
    qatomic_set(&s->shm.rx->cons_sleep, 0);
}

/* Free slots in the TX ring, at most @max; -1: impossible index. */
int cnuas_vnic_shm_tx_room(CnuasVnicState *s, unsigned max)
{
    CnuasVnicShm *r = &s->shm;
    uint32_t used = r->tx_prod - qatomic_load_acquire(&r->tx->cons);

    if (used > r->nslots) {
        return -1;
    }
    return MIN(r->nslots - used, max);
}

/* Where the @i-th next TX frame goes (room for CNUAS_VNIC_MAX_FRAME). */
uint8_t *cnuas_vnic_shm_tx_buf(CnuasVnicState *s, unsigned i)
{
    CnuasVnicShm *r = &s->shm;

    return cnuas_vnic_shm_slot(r, r->tx_slots, r->tx_prod + i)->frame;
}

void cnuas_vnic_shm_tx_push(CnuasVnicState *s, const uint32_t *lens,
                            unsigned n)
{
    CnuasVnicShm *r = &s->shm;
    struct cnuas_shm_slot *sl;
    unsigned i;

    for (i = 0; i < n; i++) {
        sl = cnuas_vnic_shm_slot(r, r->tx_slots, r->tx_prod + i);
        qatomic_set(&sl->len, lens[i]);
        qatomic_set(&sl->flags, 0);
    }
    r->tx_prod += n;
    qatomic_store_release(&r->tx->prod, r->tx_prod);
    smp_mb();   /* prod before cons_sleep: pairs with the switch's arm */
    if (qatomic_read(&r->tx->cons_sleep)) {
        event_notifier_set(&r->sw_wake);
    }
}

/* The TX ring is full: ask for a kick; true if room came meanwhile. */
bool cnuas_vnic_shm_tx_wait(CnuasVnicState *s)
{
    CnuasVnicShm *r = &s->shm;

    qatomic_set(&r->tx->prod_wait, 1);
    smp_mb();   /* prod_wait before cons: pairs with the switch's recv */
    if (r->tx_prod - qatomic_load_acquire(&r->tx->cons) < r->nslots) {
        qatomic_set(&r->tx->prod_wait, 0);
        return true;
    }
    return false;
}

void cnuas_vnic_shm_tx_woken(CnuasVnicState *s)
{
    event_notifier_test_and_clear(&s->shm.tx_wake);
    qatomic_set(&s->shm.tx->prod_wait, 0);
}
