/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * A cnuas-vswitchd without its listening sockets, for fuzz targets: ports
 * are socketpairs whose far ends the target writes frames into and reads
 * forwarded frames from. Logging and pcap capture are stubbed (no files).
 */
#ifndef CNUAS_FUZZ_VSWITCH_FIXTURE_H
#define CNUAS_FUZZ_VSWITCH_FIXTURE_H

#include "switch.h"

#define VSF_MAX_PORTS 8

struct vsf {
	struct vswitch sw;
	struct port *port[VSF_MAX_PORTS];
	int peer[VSF_MAX_PORTS];	/* the far end of each port's socketpair */
	unsigned nports;
};

/* A switch with nports seqpacket ports (at most VSF_MAX_PORTS). */
int vsf_init(struct vsf *v, unsigned nports, unsigned queue_frames, const char *socket_path);
/* Read and discard everything port i's peer has been sent. */
void vsf_drain_peer(struct vsf *v, unsigned i);
void vsf_fini(struct vsf *v);
/*
 * A private folder /tmp/cnuas-fuzz-NAME-XXXXXX for the target's sockets,
 * removed at exit (empty by then); aborts when it cannot be made.
 */
const char *vsf_private_dir(const char *name);

#endif
