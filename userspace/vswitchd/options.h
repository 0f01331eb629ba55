/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * cnuas-vswitchd's command line: parse_options() fills struct vs_options,
 * check_options() judges the whole (what no single option can), main()
 * starts the switch from it.
 */
#ifndef CNUAS_OPTIONS_H
#define CNUAS_OPTIONS_H

#include <stdbool.h>

#include "ib.h"
#include "switch.h"

#define VS_MAX_PORT_OPTS 64	/* --dgram, --tap options */
#define OPTS_RUN (-1)		/* parse/check: go on; anything else is the exit code */

struct vs_options {
	struct vs_config cfg;
	struct { char *local, *remote; } dgram[VS_MAX_PORT_OPTS];
	unsigned ndgram;
	char *tap[VS_MAX_PORT_OPTS];
	unsigned ntap;
	char *stream[VS_MAX_STREAM_LISTEN];
	unsigned nstream;
	bool port_security, port_macs_set;
	unsigned port_macs;
	unsigned sm_port[IB_MAX_PORTS];	/* --sm-port: IB ports a subnet manager manages from */
	unsigned nsm_port;
	char *sm_name[IB_MAX_PORTS];	/* --sm-port name=VM: VMs a subnet manager manages from */
	unsigned nsm_name;
	char *state_dir;	/* --state-dir: what a restart keeps, NULL nothing */
	bool psec_ignored;	/* IB mode: --port-security/--port-macs given, no effect */
	struct fdb_policy psec;	/* of every port */
	struct qos_trust trust;	/* of every port: --qos-trust, --qos-max-prio */
	const char *extra;	/* the first argument that is no option, NULL none */
	char *ctl_alloc;	/* the default --ctl path, to free */
};

int parse_options(struct vs_options *o, int argc, char **argv);
int check_options(struct vs_options *o);

#endif
