/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CnuasLink on the wire: the messages two cnuasgpu devices exchange over
 * their SOCK_SEQPACKET socket. The guest never sees them; the device and
 * its qtest (which plays the peer) share this header.
 *
 * Every message starts with a header, little-endian. A DATA message
 * carries one frame; the receiver answers it with an ACK once the frame
 * is in its BAR1 (or was dropped as too big for the buffer): only then is
 * the send finished. One DATA is in flight per direction, so a frame the
 * connection loses (a peer restarting, a VM migrating to a new process)
 * is sent again on the next connection, and the receiver drops the copy
 * of a frame it already has by the sender's epoch and sequence number.
 *
 * Copyright (c) 2026 The Cnuas authors
 */

#ifndef HW_MISC_CNUASLINK_H
#define HW_MISC_CNUASLINK_H

#define CNUASLINK_DATA  1       /* header + frame (1..LINK_MAX_FRAME bytes) */
#define CNUASLINK_ACK   2       /* header only: epoch and seq of the DATA */

typedef struct CnuasLinkHdr {
    uint8_t type;
    uint8_t resv[7];            /* 0 */
    uint64_t epoch;             /* the sender's, random, never 0 */
    uint64_t seq;               /* per epoch, from 1 */
} QEMU_PACKED CnuasLinkHdr;

#define CNUASLINK_HDR_LEN   sizeof(CnuasLinkHdr)

#endif
