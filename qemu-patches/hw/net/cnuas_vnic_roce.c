/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cnuas-vnic RoCEv2 offload: the Invariant CRC (IBA Annex A17) of RoCEv2
 * frames, computed on TX and checked on RX, so the guest's CPU does not
 * run a CRC over every payload byte. The driver's software CRC stays the
 * fallback when the feature is not negotiated.
 *
 * The ICRC is a CRC-32 (the Ethernet one, as zlib's crc32() computes it)
 * over 64 bits of ones, the IP header and UDP header with the fields a
 * router may change set to ones, the BTH with its FECN/BECN byte set to
 * ones, and the rest of the UDP payload up to the ICRC itself.
 *
 * Frames come from the guest or the wire: every offset is checked against
 * the frame length before it is read.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "net/checksum.h"
#include "hw/net/cnuas_roce_frame.h"
#include "cnuas_vnic.h"

#include <zlib.h>

/* False unless @f is a well-formed RoCEv2 frame (see cnuas_vnic_hw.h). */
static bool cnuas_roce_parse(const uint8_t *f, uint32_t len,
                             struct cnuas_roce_frame *r)
{
    return cnuas_roce_frame_walk(f, len, r) == CNUAS_ROCE_FRAME_OK &&
           cnuas_roce_frame_lengths(r, len) == CNUAS_ROCE_FRAME_OK;
}

/* The end of the UDP datagram, after the ICRC. */
static uint32_t cnuas_roce_end(const struct cnuas_roce_frame *r)
{
    return r->udp + r->udp_len;
}

static uint32_t cnuas_roce_icrc(const uint8_t *f,
                                const struct cnuas_roce_frame *r)
{
    uint8_t hdr[CNUAS_ROCE_ICRC_HDR_MAX];
    uint32_t end = cnuas_roce_end(r) - CNUAS_ICRC_LEN;
    int n = cnuas_roce_icrc_hdr(hdr, f + r->ip, end - r->ip);
    uLong crc;

    assert(n >= 0);             /* the parse checked the headers */
    crc = crc32(0, hdr, CNUAS_ROCE_ICRC_PREFIX_LEN + n);
    return crc32(crc, f + r->ip + n, end - (r->ip + n));
}

/* The IPv6 UDP checksum, which covers the ICRC: computed after it. */
static void cnuas_roce_udp6_csum(uint8_t *f, const struct cnuas_roce_frame *r)
{
    uint32_t ulen = r->udp_len, sum;

    stw_be_p(f + r->udp + 6, 0);
    sum = net_checksum_add(32, f + r->ip + 8);      /* source, dest */
    sum += ulen + CNUAS_ROCE_IPPROTO_UDP;
    sum += net_checksum_add(ulen, f + r->udp);
    stw_be_p(f + r->udp + 6, net_checksum_finish_nozero(sum));
}

bool cnuas_vnic_roce_tx(uint8_t *frame, uint32_t len)
{
    struct cnuas_roce_frame r;

    if (!cnuas_roce_parse(frame, len, &r)) {
        return false;
    }
    stl_le_p(frame + cnuas_roce_end(&r) - CNUAS_ICRC_LEN,
             cnuas_roce_icrc(frame, &r));
    if (r.v6) {
        cnuas_roce_udp6_csum(frame, &r);
    }
    return true;
}

uint16_t cnuas_vnic_roce_rx(const uint8_t *frame, uint32_t len)
{
    struct cnuas_roce_frame r;

    if (!cnuas_roce_parse(frame, len, &r)) {
        return 0;
    }
    return cnuas_roce_icrc(frame, &r) ==
           ldl_le_p(frame + cnuas_roce_end(&r) - CNUAS_ICRC_LEN) ?
           CNUAS_VNIC_DESC_F_ICRC_OK : CNUAS_VNIC_DESC_F_ICRC_BAD;
}
