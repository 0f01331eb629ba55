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
#include "cnuas_vnic.h"

#include <zlib.h>

#define ROCE_UDP_PORT   4791
#define ETH_HDR_LEN     14
#define VLAN_HDR_LEN    4
#define IP4_MIN_LEN     20
#define IP6_LEN         40
#define UDP_HDR_LEN     8
#define BTH_LEN         12
#define ICRC_LEN        4
#define IPPROTO_UDP_NUM 17

/* Where the parts of a RoCEv2 frame are (offsets into the frame). */
typedef struct CnuasRoceFrame {
    uint32_t ip;                /* IP header */
    uint32_t ip_len;            /* its length */
    uint32_t udp;               /* UDP header */
    uint32_t end;               /* end of the UDP datagram (after ICRC) */
    bool v6;
} CnuasRoceFrame;

/* False unless @f is a well-formed RoCEv2 frame (see cnuas_vnic_hw.h). */
static bool cnuas_roce_parse(const uint8_t *f, uint32_t len,
                             CnuasRoceFrame *r)
{
    uint32_t off = ETH_HDR_LEN, total, ulen;
    uint16_t proto;

    if (len < ETH_HDR_LEN) {
        return false;
    }
    proto = lduw_be_p(f + 12);
    if (proto == 0x8100) {
        if (len < ETH_HDR_LEN + VLAN_HDR_LEN) {
            return false;
        }
        proto = lduw_be_p(f + 16);
        off += VLAN_HDR_LEN;
    }
    r->ip = off;
    if (proto == 0x0800) {
        if (len < off + IP4_MIN_LEN || f[off] >> 4 != 4) {
            return false;
        }
        r->ip_len = (f[off] & 0x0f) * 4;
        total = lduw_be_p(f + off + 2);
        /* No fragments: MF clear, offset zero. */
        if (r->ip_len < IP4_MIN_LEN || f[off + 9] != IPPROTO_UDP_NUM ||
            (lduw_be_p(f + off + 6) & 0x3fff)) {
            return false;
        }
        r->v6 = false;
    } else if (proto == 0x86dd) {
        if (len < off + IP6_LEN || f[off] >> 4 != 6 ||
            f[off + 6] != IPPROTO_UDP_NUM) {
            return false;
        }
        r->ip_len = IP6_LEN;
        total = IP6_LEN + lduw_be_p(f + off + 4);
        r->v6 = true;
    } else {
        return false;
    }
    if (total < r->ip_len + UDP_HDR_LEN || total > len - off) {
        return false;
    }
    r->udp = off + r->ip_len;
    ulen = lduw_be_p(f + r->udp + 4);
    if (lduw_be_p(f + r->udp + 2) != ROCE_UDP_PORT ||
        ulen < UDP_HDR_LEN + BTH_LEN + ICRC_LEN ||
        ulen > total - r->ip_len) {
        return false;
    }
    r->end = r->udp + ulen;
    return true;
}

static uint32_t cnuas_roce_icrc(const uint8_t *f, const CnuasRoceFrame *r)
{
    /* Ones for the LRH, then IP, UDP and BTH with the variant fields. */
    uint8_t hdr[8 + 60 + UDP_HDR_LEN + BTH_LEN];
    uint32_t n = r->ip_len + UDP_HDR_LEN + BTH_LEN;
    uint8_t *ip = hdr + 8, *udp = ip + r->ip_len;
    uLong crc;

    memset(hdr, 0xff, 8);
    memcpy(ip, f + r->ip, n);
    if (r->v6) {
        ip[0] |= 0x0f;                  /* traffic class */
        ip[1] = ip[2] = ip[3] = 0xff;   /* traffic class, flow label */
        ip[7] = 0xff;                   /* hop limit */
    } else {
        ip[1] = 0xff;                   /* type of service */
        ip[8] = 0xff;                   /* time to live */
        ip[10] = ip[11] = 0xff;         /* header checksum */
    }
    udp[6] = udp[7] = 0xff;             /* UDP checksum */
    udp[UDP_HDR_LEN + 4] = 0xff;        /* BTH: FECN, BECN, resv6a */

    crc = crc32(0, hdr, 8 + n);
    return crc32(crc, f + r->ip + n, r->end - ICRC_LEN - (r->ip + n));
}

/* The IPv6 UDP checksum, which covers the ICRC: computed after it. */
static void cnuas_roce_udp6_csum(uint8_t *f, const CnuasRoceFrame *r)
{
    uint32_t ulen = r->end - r->udp, sum;

    stw_be_p(f + r->udp + 6, 0);
    sum = net_checksum_add(32, f + r->ip + 8);      /* source, dest */
    sum += ulen + IPPROTO_UDP_NUM;
    sum += net_checksum_add(ulen, f + r->udp);
    stw_be_p(f + r->udp + 6, net_checksum_finish_nozero(sum));
}

bool cnuas_vnic_roce_tx(uint8_t *frame, uint32_t len)
{
    CnuasRoceFrame r;

    if (!cnuas_roce_parse(frame, len, &r)) {
        return false;
    }
    stl_le_p(frame + r.end - ICRC_LEN, cnuas_roce_icrc(frame, &r));
    if (r.v6) {
        cnuas_roce_udp6_csum(frame, &r);
    }
    return true;
}

uint16_t cnuas_vnic_roce_rx(const uint8_t *frame, uint32_t len)
{
    CnuasRoceFrame r;

    if (!cnuas_roce_parse(frame, len, &r)) {
        return 0;
    }
    return cnuas_roce_icrc(frame, &r) == ldl_le_p(frame + r.end - ICRC_LEN) ?
           CNUAS_VNIC_DESC_F_ICRC_OK : CNUAS_VNIC_DESC_F_ICRC_BAD;
}
