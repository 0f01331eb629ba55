/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * Control protocol (unix SOCK_STREAM at --ctl). The client sends lines:
 * "CNUAS-CTL 1", then "json" or "text", then one argument per line, and
 * shuts down its write side. The switch answers "OK\n" or "ERR <message>\n",
 * then the body, and closes. Arguments may not contain newlines.
 */
#ifndef CNUAS_CTL_PROTO_H
#define CNUAS_CTL_PROTO_H

#define CTL_MAGIC "CNUAS-CTL 1"
#define CTL_MAX_REQUEST 65536
#define CTL_MAX_ARGS 32
#define CTL_TIMEOUT_NS (10 * 1000000000ull) /* whole exchange, server side */

#endif
