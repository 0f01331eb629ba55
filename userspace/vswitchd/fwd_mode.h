/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * The forwarding mode of the switch: an Ethernet learning bridge
 * (eth_fwd.c) or a managed InfiniBand switch (ib_*.c). It is picked once
 * at start-up (vswitch.ops); the data path, the ports and the control
 * socket ask it instead of testing which mode runs. The data-path
 * services a mode uses in turn are in dp.h.
 */
#ifndef CNUAS_FWD_MODE_H
#define CNUAS_FWD_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vswitch;
struct port;
struct pkt;
struct fault;
struct strbuf;

struct fwd_mode {
	const char *name;		/* show's link_layer: "eth", "ib" */
	int capture_linktype;		/* CAPTURE_LINKTYPE_* of what the ports carry */
	bool traffic_classes;		/* set-qos, show-qos, per-priority rx counters */
	uint8_t trust_modes;		/* bits of the QOS_TRUST_* a port may be set to */
	bool ethernet_ports;		/* dgram, stream and TAP ports may be added */
	bool link_vcrc;			/* frames carry a VCRC: the vcrc= fault */
	/* where a frame names its destination: a reordered frame waits for the next one there */
	uint8_t dst_off, dst_len;

	/*
	 * One frame from p, past the fault stage, in a buffer the mode may
	 * modify. False: p must pause (a lossless destination is full); the
	 * same frame comes again later, unchanged.
	 */
	bool (*forward)(struct vswitch *sw, struct port *p, uint8_t *data, uint32_t len,
			struct pkt *k);
	/* The corrupt= fault: flip one bit of a received frame. */
	void (*fault_corrupt)(struct vswitch *sw, struct fault *f, uint8_t *data, uint32_t len);
	/* A guest port connected; < 0 refuses it (logged). NULL: any port is fine. */
	int (*port_attach)(struct vswitch *sw, struct port *p);
	/* A port hung up or is destroyed (maybe twice). NULL: nothing to do. */
	void (*port_detach)(struct vswitch *sw, struct port *p);
	/*
	 * handover PORT MS [pid=PID]: keep what p had for the next guest port
	 * (from process @pid, 0: any). NULL: nothing kept.
	 */
	void (*port_handover)(struct vswitch *sw, struct port *p, unsigned ms, int pid);
	/* Once a second. NULL: no timers. */
	void (*timers)(struct vswitch *sw);
	/* Free the mode's state. NULL: none. */
	void (*fini)(struct vswitch *sw);
	/* The start-up log's words after "link-layer ". */
	void (*describe)(const struct vswitch *sw, char *buf, size_t len);
	/* show: text after the port list; JSON: more members of the top object. NULL: none. */
	void (*ctl_show)(struct vswitch *sw, struct strbuf *b, bool json);
	/* The lft/mft commands (@name). NULL: the mode has no such tables. */
	int (*ctl_table)(struct vswitch *sw, struct strbuf *b, const char *name, bool json);
	/* The sm-port command (argv[0] is "sm-port"); < 0: @err says why. NULL: no SMs. */
	int (*ctl_sm_port)(struct vswitch *sw, struct strbuf *b, int argc, char **argv, bool json,
			   char *err, size_t errlen);
};

extern const struct fwd_mode eth_fwd_mode;
extern const struct fwd_mode ib_fwd_mode;

/* Make sw an Ethernet learning bridge (no state of its own: cannot fail). */
void eth_fwd_start(struct vswitch *sw);
/* ib.h: ib_init() makes it an InfiniBand switch. */

#endif
