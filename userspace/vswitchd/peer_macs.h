/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The MACs the host gave a guest port: those of the cnuas-vnic devices in
 * the peer QEMU's command line (/proc/PID/cmdline, see peer_name.h) whose
 * socket_path is this switch's socket. Both of QEMU's forms count:
 *   -device cnuas-vnic,socket_path=PATH,mac=MAC,...
 *   -device {"driver":"cnuas-vnic","socket_path":"PATH","mac":"MAC",...}
 * (libvirt writes the second). The guest cannot change its command line;
 * the process is still not trusted, so the parse is bounded and strict:
 * anything it does not understand for one of our devices means "no given
 * MACs" (the port falls back to first-come pinning), never a wrong list.
 * This guards against guests: a host process that may connect to the
 * socket (its group) can write itself any command line, as it could
 * already claim any MAC nobody had.
 */
#ifndef CNUAS_PEER_MACS_H
#define CNUAS_PEER_MACS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Given MACs a port keeps; a QEMU with more devices on our socket has none. */
#define VS_PORT_MACS_MAX 8

/*
 * The MACs (as fdb_key()s) of argv's (NUL-separated, len bytes) cnuas-vnic
 * devices on socket sock, at most max; 0 if there are none, more than
 * max, or one of them has no readable mac=.
 */
unsigned vnic_macs_from_cmdline(const char *argv, size_t len, const char *sock,
				uint64_t *keys, unsigned max);
/* "xx:xx:xx:xx:xx:xx" (exactly n bytes) as an fdb key; false if not one. */
bool mac_parse(const char *s, size_t n, uint64_t *key);

#endif
