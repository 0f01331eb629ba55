/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuasgpu: private state shared by the PCI/register glue (cnuasgpu.c)
 * and the CnuasLink backend (cnuasgpu_link.c).
 *
 * The guest-visible interface is in hw/misc/cnuasgpu_hw.h and
 * docs/specs/cnuasgpu.rst.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#ifndef HW_MISC_CNUASGPU_H
#define HW_MISC_CNUASGPU_H

#include "hw/pci/pci.h"
#include "qemu/timer.h"
#include "qom/object.h"
#include "sysemu/runstate.h"
#include "hw/misc/cnuasgpu_hw.h"
#include "hw/misc/cnuaslink.h"
#include "hw/misc/cnuas_socklink.h"

#define TYPE_CNUASGPU "cnuasgpu"
OBJECT_DECLARE_SIMPLE_TYPE(CnuasGpuState, CNUASGPU)

#define CNUASGPU_REHOLD_MS      50      /* reconnect interval while holding */
#define CNUASGPU_HOLD_MS        3000    /* x-link-hold-ms default */

struct CnuasGpuState {
    PCIDevice parent_obj;

    MemoryRegion regs;
    MemoryRegion devmem;
    uint8_t *devmem_ptr;

    /* Properties */
    uint64_t devmem_size;
    uint32_t gpu_id;
    char *link_path;
    bool link_listen;
    uint32_t hold_ms;           /* link shown up this long after a loss */

    /* Guest-visible registers (migrated) */
    uint32_t int_status;
    uint32_t int_mask;
    uint64_t tx_off;
    uint32_t tx_len;
    uint32_t tx_result;
    uint64_t rx_off;
    uint32_t rx_buf_size;
    uint32_t rx_len;
    uint32_t stats[CNUASGPU_NUM_STATS];

    /* Link sequence state and the frame in flight (migrated) */
    uint64_t epoch;             /* ours, in every DATA we send */
    uint64_t tx_seq;            /* seq of the frame in txbuf */
    bool tx_busy;               /* frame in txbuf not yet acknowledged */
    uint32_t tx_pending_len;
    uint64_t peer_epoch;        /* of the last frame taken in */
    uint64_t rx_next;           /* next seq expected from peer_epoch */
    bool link_was_up;           /* at save: the destination holds the link */

    /* Link backend (not migrated: each side owns its connection) */
    CnuasSockLink link;         /* connection, reconnect, hang-up */
    int64_t hold_until;         /* no connection, link still shown up */
    bool rx_armed;
    bool tx_armed;
    bool tx_sent;               /* txbuf's DATA went out on this connection */
    bool ack_pending;
    uint64_t ack_epoch, ack_seq;
    uint32_t stash_len;         /* frame in rxbuf waiting for the RX buffer */
    uint64_t stash_epoch, stash_seq;
    bool vm_running;
    VMChangeStateEntry *vmstate_change;
    uint8_t *txbuf;             /* CNUASGPU_LINK_MAX_FRAME */
    uint8_t *rxbuf;             /* CNUASGPU_LINK_MAX_FRAME */
};

#define CNUASGPU_STAT(name) (CNUASGPU_STAT_##name / 4)

/* Registers and interrupts, cnuasgpu.c */
void cnuasgpu_raise(CnuasGpuState *s, uint32_t causes);
void cnuasgpu_guest_error(CnuasGpuState *s, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
bool cnuasgpu_range_ok(CnuasGpuState *s, uint64_t off, uint64_t len);

/* CnuasLink, cnuasgpu_link.c */
bool cnuasgpu_link_realize(CnuasGpuState *s, Error **errp);
void cnuasgpu_link_unrealize(CnuasGpuState *s);
void cnuasgpu_link_reset(CnuasGpuState *s);
void cnuasgpu_link_tx(CnuasGpuState *s);
void cnuasgpu_link_update(CnuasGpuState *s);
bool cnuasgpu_link_is_up(CnuasGpuState *s);
void cnuasgpu_link_pre_save(CnuasGpuState *s);
void cnuasgpu_link_post_load(CnuasGpuState *s);

#endif
