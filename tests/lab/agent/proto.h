/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * Wire protocol of the lab control agent over one virtio-serial port.
 *
 * A virtio-serial port is a byte stream that survives host reconnects and
 * may hold stale bytes from an earlier session in either direction, so a
 * session starts with a sync: the host sends SYNC_MAGIC + 8-byte nonce, the
 * agent discards everything before it and answers ACK_MAGIC + the same nonce
 * (the host discards everything before that).  After that both directions
 * carry frames: 8-byte header (le16 type, le16 zero, le32 length) + payload.
 *
 * Host -> agent: ENV* ARGV (STDIN* STDIN_EOF?)
 * Agent -> host: (STDOUT|STDERR)* EXIT
 * A host that disconnects ends the session: the agent kills the command.
 */
#ifndef CNUAS_AGENT_PROTO_H
#define CNUAS_AGENT_PROTO_H

#include <stdint.h>

#define CNUAS_AGENT_SYNC_MAGIC "\xff" "CNUASyn"
#define CNUAS_AGENT_ACK_MAGIC "\xff" "CNUASak"
#define CNUAS_AGENT_MAGIC_LEN 8
#define CNUAS_AGENT_NONCE_LEN 8

#define CNUAS_AGENT_HDR_LEN 8
#define CNUAS_AGENT_MAX_PAYLOAD 65536

enum cnuas_agent_frame {
	CNUAS_AGENT_ARGV = 1,      /* argv strings, each NUL-terminated */
	CNUAS_AGENT_STDIN = 2,     /* bytes for the command's stdin */
	CNUAS_AGENT_STDIN_EOF = 3, /* no more stdin (empty payload) */
	CNUAS_AGENT_STDOUT = 4,
	CNUAS_AGENT_STDERR = 5,
	CNUAS_AGENT_ENV = 6,       /* one "NAME=value" string */
	CNUAS_AGENT_EXIT = 7,      /* le32 status: exit code or 128+signal */
};

static inline void cnuas_agent_put_hdr(uint8_t *p, uint16_t type, uint32_t len)
{
	p[0] = type & 0xff;
	p[1] = type >> 8;
	p[2] = 0;
	p[3] = 0;
	p[4] = len & 0xff;
	p[5] = (len >> 8) & 0xff;
	p[6] = (len >> 16) & 0xff;
	p[7] = len >> 24;
}

static inline uint16_t cnuas_agent_hdr_type(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t cnuas_agent_hdr_len(const uint8_t *p)
{
	return (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
	       (uint32_t)p[7] << 24;
}

static inline int cnuas_agent_hdr_valid(const uint8_t *p)
{
	uint16_t t = cnuas_agent_hdr_type(p);

	return p[2] == 0 && p[3] == 0 && t >= CNUAS_AGENT_ARGV &&
	       t <= CNUAS_AGENT_EXIT &&
	       cnuas_agent_hdr_len(p) <= CNUAS_AGENT_MAX_PAYLOAD;
}

#endif
