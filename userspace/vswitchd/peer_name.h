/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The name of the VM behind a port: the `-name` of the QEMU process that
 * connected (SO_PEERCRED's pid), read from /proc/PID/cmdline. libvirt
 * passes `-name guest=DOMAIN,...`, scripts/lab `-name nodeN,...`. Its
 * bytes are not trusted: cut to VS_VM_NAME_MAX bytes of printable ASCII.
 * The guest cannot choose its QEMU's command line, so in IB mode the name
 * is the host's identity of a VM (its IB port number, SM ports by name:
 * ib_state.h); any process that may connect to the socket can claim any
 * name, so it is as trusted as the socket's access (sock_access.c).
 */
#ifndef CNUAS_PEER_NAME_H
#define CNUAS_PEER_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define VS_VM_NAME_MAX 64
/* Bytes of /proc/PID/cmdline looked at (libvirt's lines run to kilobytes). */
#define VS_CMDLINE_MAX 65536

/* The guest name in argv (NUL-separated, len bytes) into out; false if none. */
bool vm_name_from_cmdline(const char *argv, size_t len, char *out, size_t outsz);
/*
 * The first VS_CMDLINE_MAX bytes of process pid's /proc/PID/cmdline (to
 * free()), their number in *len; NULL if it is gone.
 */
char *peer_cmdline(pid_t pid, size_t *len);

#endif
