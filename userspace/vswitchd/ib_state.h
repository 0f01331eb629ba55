/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * InfiniBand mode: what the switch keeps across a restart (--state-dir),
 * as a real switch keeps its cabling: which VM had which IB port number,
 * and the SM ports cnuas-vsctl designated (by number or by VM name). A
 * text file, one fact a line, written whole (a temporary file renamed
 * over it) and read back strictly at start:
 *
 *   cnuas-ib-state 1
 *   port N NAME        IB port N (1..254) was VM NAME's
 *   sm N               cnuas-vsctl sm-port add N
 *   sm name=NAME       cnuas-vsctl sm-port add name=NAME
 *
 * NAME is a VM name as peer_name.h reads it (1..VS_VM_NAME_MAX bytes of
 * printable ASCII, no space). Anything else, a fact twice or a name on
 * two ports is refused with the line and the reason.
 */
#ifndef CNUAS_IB_STATE_H
#define CNUAS_IB_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include "peer_name.h"

#define IB_STATE_PORTS		254	/* = IB_MAX_PORTS */
#define IB_STATE_FILE_MAX	65536	/* a full state is under 40 KiB */
#define IB_STATE_FILE		"ib-state"	/* in --state-dir */

struct ib_state {
	char peer[IB_STATE_PORTS + 1][VS_VM_NAME_MAX + 1];	/* [n]: IB port n's VM, "" none */
	bool sm_num[IB_STATE_PORTS + 1];	/* [n]: sm-port add n */
	char sm_name[IB_STATE_PORTS][VS_VM_NAME_MAX + 1];	/* sm-port add name=... */
	unsigned nsm_name;
};

/* Whether [s, s + len) may be a VM name in the state (and on the command line). */
bool ib_state_name_ok(const char *s, size_t len);
/* The port number whose VM is @name, 0 none. */
unsigned ib_state_port_of(const struct ib_state *st, const char *name);
/* Whether @name is designated an SM's (sm name=). */
bool ib_state_sm_name(const struct ib_state *st, const char *name);

/* @buf (@len bytes) into *st; < 0: @err says which line and why (*st then undefined). */
int ib_state_parse(struct ib_state *st, const char *buf, size_t len, char *err, size_t errlen);
/* *st as text into @buf (at most @size bytes, NUL-terminated); its length, as snprintf. */
size_t ib_state_format(const struct ib_state *st, char *buf, size_t size);

/* The file @path into *st: a missing file is an empty state. < 0: @err says why. */
int ib_state_load(struct ib_state *st, const char *path, char *err, size_t errlen);
/* *st into the file @path, atomically (path.tmp, fsync, rename). < 0: @err says why. */
int ib_state_save(const struct ib_state *st, const char *path, char *err, size_t errlen);

#endif
