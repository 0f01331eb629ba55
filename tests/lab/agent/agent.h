/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* Internal interfaces of the lab control agent. */
#ifndef CNUAS_AGENT_H
#define CNUAS_AGENT_H

#include <stddef.h>
#include <stdint.h>

/* Growable byte buffer; data lives in p[0..len). */
struct buf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

void buf_append(struct buf *b, const void *data, size_t len);
void buf_consume(struct buf *b, size_t n);
void buf_put_frame(struct buf *b, uint16_t type, const void *data, uint32_t len);

/* Read what is available from a non-blocking fd: >0 bytes, 0 EOF, -1 EAGAIN, -2 error. */
long buf_read_fd(struct buf *b, int fd, size_t max);
/* Write what the fd takes from the front of b: 0 ok/EAGAIN, -1 error. */
int buf_write_fd(struct buf *b, int fd);

void agent_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Run one exec session on a synced port.  `in` holds bytes already read
 * from the port after the sync.  Returns 0 when the command finished and
 * its status was sent, -1 when the host went away or broke the protocol
 * (the command is killed either way before returning).
 */
int exec_session(int port_fd, struct buf *in);

#endif
