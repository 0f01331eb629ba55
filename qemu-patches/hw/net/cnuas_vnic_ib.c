/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuas-vnic InfiniBand CRC offload (F_IB_CRC): on an IB link the device
 * is the link layer, which adds the VCRC (IBA 7.8.2) to every frame it
 * sends and checks and strips it on every frame it receives, and it seals
 * and checks the ICRC (IBA 7.8.1) of IB transport packets, so the guest's
 * CPU runs no CRC over the payload and IB frames may be gathered straight
 * from the guest's memory, as RoCEv2 frames are.
 *
 * The masks and the VCRC's CRC-16 are those of cnuas_ib_link.h, shared
 * with the guest driver and the switch. Frames come from the guest or the
 * wire: every length is checked before it is used.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "hw/net/cnuas_ib_link.h"
#include "cnuas_vnic.h"

#include <zlib.h>

/* The CRC-16 of the VCRC has no zlib or QEMU helper: tables here. */
static struct cnuas_vcrc_table cnuas_vcrc_tab;

static void cnuas_vnic_ib_init(void)
{
    static bool done;

    if (!done) {
        cnuas_vcrc_table_init(&cnuas_vcrc_tab);
        done = true;
    }
}

/*
 * The ICRC of the IB transport packet of @len bytes at @f (LRH through
 * ICRC), or false when it is not one (see cnuas_vnic_hw.h).
 */
static bool cnuas_vnic_ib_icrc(const uint8_t *f, uint32_t len, uint32_t *icrc)
{
    uint8_t hdr[CNUAS_IB_ICRC_HDR_MAX];
    int n;
    uLong crc;

    if (len < CNUAS_LRH_LEN || cnuas_lrh_lver(f) != CNUAS_LRH_LVER ||
        cnuas_lrh_pktlen(f) * 4 != len) {
        return false;
    }
    n = cnuas_ib_icrc_hdr(hdr, f, len);
    if (n < 0 || (uint32_t)n + CNUAS_ICRC_LEN > len) {
        return false;
    }
    crc = crc32(0, hdr, n);
    *icrc = crc32(crc, f + n, len - CNUAS_ICRC_LEN - n);
    return true;
}

uint32_t cnuas_vnic_ib_tx(uint8_t *frame, uint32_t len, bool icrc,
                          bool *not_ib)
{
    uint32_t crc;

    cnuas_vnic_ib_init();
    *not_ib = false;
    if (icrc) {
        if (cnuas_vnic_ib_icrc(frame, len, &crc)) {
            stl_le_p(frame + len - CNUAS_ICRC_LEN, crc);
        } else {
            *not_ib = true;
        }
    }
    cnuas_vcrc_put(&cnuas_vcrc_tab, frame, len);
    return len + CNUAS_VCRC_LEN;
}

uint16_t cnuas_vnic_ib_rx(const uint8_t *frame, uint32_t *len)
{
    uint32_t crc;

    cnuas_vnic_ib_init();
    if (!cnuas_vcrc_ok(&cnuas_vcrc_tab, frame, *len)) {
        return CNUAS_VNIC_DESC_F_VCRC_BAD;
    }
    *len -= CNUAS_VCRC_LEN;
    if (!cnuas_vnic_ib_icrc(frame, *len, &crc)) {
        return 0;
    }
    return crc == ldl_le_p(frame + *len - CNUAS_ICRC_LEN) ?
           CNUAS_VNIC_DESC_F_ICRC_OK : CNUAS_VNIC_DESC_F_ICRC_BAD;
}
