/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * pcap capture of switched frames: LINKTYPE_ETHERNET, or in IB mode
 * LINKTYPE_ERF records of type InfiniBand (what ibdump writes).
 */
#ifndef CNUAS_CAPTURE_H
#define CNUAS_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

struct capture;

#define CAPTURE_LINKTYPE_ETHERNET	1
#define CAPTURE_LINKTYPE_INFINIBAND	247	/* asked for; written as ERF */

/* port_id 0 = all ports. Returns NULL and fills err on failure. */
struct capture *capture_start(const char *path, uint32_t port_id, int linktype, char *err,
			      size_t errlen);
void capture_frame(struct capture *c, const uint8_t *data, uint32_t len);
void capture_flush(struct capture *c);
/* Flushes, closes, frees; returns frames written. */
uint64_t capture_stop(struct capture *c);
uint32_t capture_port(const struct capture *c);
const char *capture_path(const struct capture *c);
uint64_t capture_frames(const struct capture *c);

#endif
