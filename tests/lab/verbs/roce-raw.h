/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * Raw RoCEv2 frames for the lab's hostile senders (cnuas-fuzz, cnuas-hostile):
 * big-endian field access, the IPv4/UDP envelope and the ICRC.
 */
#ifndef CNUAS_VT_ROCE_RAW_H
#define CNUAS_VT_ROCE_RAW_H

#include <stddef.h>
#include <stdint.h>

/* Offsets in an Ethernet frame carrying IPv4 without options. */
#define RR_IP 14
#define RR_UDP (RR_IP + 20)
#define RR_BTH (RR_UDP + 8)

void rr_put32(uint8_t *p, uint32_t v);
void rr_put64(uint8_t *p, uint64_t v);
uint32_t rr_get32(const uint8_t *p);

/* Ethernet header with type IPv4. */
void rr_eth(uint8_t *f, const uint8_t dmac[6], const uint8_t smac[6]);

/*
 * IPv4 + UDP (to port 4791) headers at @ip for a datagram of @iplen bytes
 * from the IP header to the end of the ICRC; addresses in network order.
 */
void rr_ipv4_udp(uint8_t *ip, size_t iplen, uint32_t sip, uint32_t dip, uint16_t ipid,
		 uint16_t sport);

/* Set IP total length, UDP length and the IP checksum for @iplen. */
void rr_ipv4_lengths(uint8_t *ip, size_t iplen);

/*
 * Write the ICRC (IBA A17.3.3) of the @iplen - 4 bytes at @ip into its last
 * four bytes. Returns -1 if the headers are too short to hold one.
 */
int rr_put_icrc(uint8_t *ip, size_t iplen);

#endif
