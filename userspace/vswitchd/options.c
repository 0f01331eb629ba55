// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* cnuas-vswitchd's options: see options.h. */
#include "fdb.h"
#include "fwd_mode.h"
#include "ib.h"
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_SOCKET "/run/cnuas/switch.sock"
#define VS_VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: cnuas-vswitchd [OPTIONS]\n"
		"The Cnuas software switch: an Ethernet learning bridge between VMs, or\n"
		"a managed InfiniBand switch (--link-layer ib).\n\n"
		"  --socket PATH       SOCK_SEQPACKET listening socket, one connection = one port\n"
		"                      (default " DEFAULT_SOCKET ")\n"
		"  --ctl PATH          control socket (default SOCKET_PATH.ctl)\n"
		"  --dgram SW=QEMU     add a QEMU -netdev dgram port: bind SW, send to QEMU\n"
		"                      (repeatable)\n"
		"  --stream PATH       listen on unix stream socket PATH for QEMU -netdev stream\n"
		"                      (server=off) peers, one connection = one port\n"
		"  --tap IFNAME        add a TAP port: create (or attach) interface IFNAME\n"
		"                      and set it up (repeatable)\n"
		"  --link-layer eth|ib link layer: eth (default, Ethernet learning bridge) or\n"
		"                      ib (InfiniBand switch managed by a subnet manager)\n"
		"  --ib-ports N        IB mode: switch ports (NumPorts), 1..254 (default 32)\n"
		"  --guid GUID         IB mode: NodeGUID, hex (default: derived from --socket)\n"
		"  --sm-port N|name=VM IB mode: only IB port N, or the port VM (its QEMU's -name)\n"
		"                      is on (repeatable), and those added by cnuas-vsctl\n"
		"                      sm-port may manage the fabric (SMPs other than\n"
		"                      responses and traps, PMA resets); default: any\n"
		"  --state-dir DIR     keep in DIR/ib-state which VM had which IB port and\n"
		"                      cnuas-vsctl's SM ports, for the next start (IB mode;\n"
		"                      Ethernet mode keeps nothing there)\n"
		"  --aging SECONDS     MAC aging time, 0 = never (default 300)\n"
		"  --queue-frames N    egress queue bound per port, 16..65536 (default 256)\n"
		"  --max-ports N       most ports at once, 2..4096 (default 256)\n"
		"  --port-security     pin a guest port to the MACs its QEMU command line\n"
		"                      gives its cnuas-vnic devices on this socket; other\n"
		"                      ports pin the MACs they first send (no moves, no\n"
		"                      aging), at most 4 per port\n"
		"  --port-macs N       MACs a port may learn, 0 = any (default: 4 with\n"
		"                      --port-security, else any)\n"
		"  --qos-trust MODE    what a port's frames' priority comes from: none (default:\n"
		"                      all priority 0, a guest claims no class), pcp (the VLAN\n"
		"                      tag's PCP) or dscp (the IPv4/IPv6 DSCP); with\n"
		"                      --link-layer ib none or sl (the LRH's service level)\n"
		"  --qos-max-prio N    the highest priority a port may claim, 0..7 (default 7);\n"
		"                      higher ones are lowered to N and counted (prio_capped)\n"
		"  --shm-ring          let cnuas-vnic ports move frames through shared-memory\n"
		"                      rings (experimental; default: the socket only)\n"
		"  --foreground        do not detach\n"
		"  --syslog            log to syslog instead of stderr\n"
		"  --verbose           log debug messages\n"
		"  --help, --version\n");
}

static int parse_uint(const char *opt, const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < lo || v > hi) {
		fprintf(stderr, "cnuas-vswitchd: %s: '%s' is not a number in %u..%u\n", opt, s, lo, hi);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* One option @opt with argument @arg (getopt's optarg). */
static int parse_one(struct vs_options *o, int opt, char *arg)
{
	struct vs_config *cfg = &o->cfg;

	switch (opt) {
	case 's':
		cfg->socket_path = arg;
		break;
	case 'c':
		cfg->ctl_path = arg;
		break;
	case 'd': {
		char *eq = strchr(arg, '=');

		if (!eq || eq == arg || !eq[1]) {
			fprintf(stderr, "cnuas-vswitchd: --dgram wants SWITCH_PATH=QEMU_PATH, got '%s'\n",
				arg);
			return 2;
		}
		if (o->ndgram == VS_MAX_PORT_OPTS) {
			fprintf(stderr, "cnuas-vswitchd: too many --dgram options\n");
			return 2;
		}
		*eq = 0;
		o->dgram[o->ndgram].local = arg;
		o->dgram[o->ndgram++].remote = eq + 1;
		break;
	}
	case 't':
		if (o->ntap == VS_MAX_PORT_OPTS) {
			fprintf(stderr, "cnuas-vswitchd: too many --tap options\n");
			return 2;
		}
		o->tap[o->ntap++] = arg;
		break;
	case 'T':
		if (o->nstream == VS_MAX_STREAM_LISTEN) {
			fprintf(stderr, "cnuas-vswitchd: too many --stream options (max %d)\n",
				VS_MAX_STREAM_LISTEN);
			return 2;
		}
		o->stream[o->nstream++] = arg;
		break;
	case 'l':
		if (!strcmp(arg, "ib")) {
			cfg->link_layer = LINK_IB;
		} else if (!strcmp(arg, "eth")) {
			cfg->link_layer = LINK_ETH;
		} else {
			fprintf(stderr, "cnuas-vswitchd: --link-layer: unknown link layer '%s' (eth or ib)\n",
				arg);
			return 2;
		}
		break;
	case 'I':
		if (parse_uint("--ib-ports", arg, 1, IB_MAX_PORTS, &cfg->ib_ports) < 0)
			return 2;
		break;
	case 'G': {
		char *end;

		errno = 0;
		cfg->ib_guid = strtoull(arg, &end, 16);
		if (errno || end == arg || *end || !cfg->ib_guid) {
			fprintf(stderr, "cnuas-vswitchd: --guid: '%s' is not a non-zero hex GUID\n",
				arg);
			return 2;
		}
		break;
	}
	case 'R':
		if (!strncmp(arg, "name=", 5)) {
			if (!ib_state_name_ok(arg + 5, strlen(arg + 5)) || o->nsm_name == IB_MAX_PORTS) {
				fprintf(stderr, "cnuas-vswitchd: --sm-port %s: no VM name (1..%u printable "
					"bytes, no space) or too many\n", arg, VS_VM_NAME_MAX);
				return 2;
			}
			o->sm_name[o->nsm_name++] = arg + 5;
			break;
		}
		if (o->nsm_port == IB_MAX_PORTS) {
			fprintf(stderr, "cnuas-vswitchd: too many --sm-port options\n");
			return 2;
		}
		if (parse_uint("--sm-port", arg, 1, IB_MAX_PORTS, &o->sm_port[o->nsm_port++]) < 0)
			return 2;
		break;
	case 'D':
		o->state_dir = arg;
		break;
	case 'a':
		if (parse_uint("--aging", arg, 0, 1000000, &cfg->aging_s) < 0)
			return 2;
		break;
	case 'q':
		if (parse_uint("--queue-frames", arg, 16, 65536, &cfg->queue_frames) < 0)
			return 2;
		break;
	case 'm':
		if (parse_uint("--max-ports", arg, 2, 4096, &cfg->max_ports) < 0)
			return 2;
		break;
	case 'H':
		cfg->shm_ring = true;
		break;
	case 'P':
		o->port_security = true;
		break;
	case 'M':
		if (parse_uint("--port-macs", arg, 0, FDB_MAX, &o->port_macs) < 0)
			return 2;
		o->port_macs_set = true;
		break;
	case 'Q': {
		int m = qos_trust_mode(arg);

		if (m < 0) {
			fprintf(stderr, "cnuas-vswitchd: --qos-trust: '%s' is not pcp, dscp, sl or none\n",
				arg);
			return 2;
		}
		o->trust.mode = (uint8_t)m;
		break;
	}
	case 'X': {
		unsigned v;

		if (parse_uint("--qos-max-prio", arg, 0, VS_NUM_TC - 1, &v) < 0)
			return 2;
		o->trust.max_prio = (uint8_t)v;
		break;
	}
	case 'f':
		cfg->foreground = true;
		break;
	case 'S':
		cfg->use_syslog = true;
		break;
	case 'v':
		cfg->verbose = 1;
		break;
	case 'h':
		usage(stdout);
		return 0;
	case 'V':
		printf("cnuas-vswitchd %s\n", VS_VERSION);
		return 0;
	}
	return OPTS_RUN;
}

int parse_options(struct vs_options *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "ctl", required_argument, NULL, 'c' },
		{ "dgram", required_argument, NULL, 'd' },
		{ "tap", required_argument, NULL, 't' },
		{ "stream", required_argument, NULL, 'T' },
		{ "link-layer", required_argument, NULL, 'l' },
		{ "ib-ports", required_argument, NULL, 'I' },
		{ "guid", required_argument, NULL, 'G' },
		{ "sm-port", required_argument, NULL, 'R' },
		{ "state-dir", required_argument, NULL, 'D' },
		{ "aging", required_argument, NULL, 'a' },
		{ "queue-frames", required_argument, NULL, 'q' },
		{ "max-ports", required_argument, NULL, 'm' },
		{ "port-security", no_argument, NULL, 'P' },
		{ "shm-ring", no_argument, NULL, 'H' },
		{ "port-macs", required_argument, NULL, 'M' },
		{ "qos-trust", required_argument, NULL, 'Q' },
		{ "qos-max-prio", required_argument, NULL, 'X' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "syslog", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int opt, rc;

	o->cfg.socket_path = DEFAULT_SOCKET;
	o->cfg.aging_s = 300;
	o->cfg.queue_frames = 256;
	o->cfg.max_ports = 256;
	/* a guest's frames claim no priority unless the administrator says so */
	o->trust.mode = QOS_TRUST_NONE;
	o->trust.max_prio = VS_NUM_TC - 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "fhvV", opts, NULL)) != -1) {
		if (opt == '?' || opt == ':') {
			fprintf(stderr, "cnuas-vswitchd: unknown option or missing argument: '%s'\n",
				argv[optind - 1]);
			fprintf(stderr, "Try 'cnuas-vswitchd --help'.\n");
			return 2;
		}
		rc = parse_one(o, opt, optarg);
		if (rc != OPTS_RUN)
			return rc;
	}
	o->extra = optind < argc ? argv[optind] : NULL;
	return OPTS_RUN;
}

int check_options(struct vs_options *o)
{
	struct vs_config *cfg = &o->cfg;

	if (cfg->link_layer == LINK_IB && (o->ndgram || o->ntap || o->nstream)) {
		fprintf(stderr, "cnuas-vswitchd: --dgram, --stream and --tap ports are Ethernet only "
				"(not with --link-layer ib)\n");
		return 2;
	}
	/* --state-dir is taken in either mode (the packaged unit passes it): Ethernet keeps nothing */
	if (cfg->link_layer != LINK_IB && (cfg->ib_ports || cfg->ib_guid || o->nsm_port ||
					   o->nsm_name)) {
		fprintf(stderr,
			"cnuas-vswitchd: --ib-ports, --guid and --sm-port need --link-layer ib\n");
		return 2;
	}
	const struct fwd_mode *mode = cfg->link_layer == LINK_IB ? &ib_fwd_mode : &eth_fwd_mode;

	if (!(mode->trust_modes & (1u << o->trust.mode))) {
		char names[64];

		qos_trust_names(names, sizeof(names), mode->trust_modes);
		fprintf(stderr, "cnuas-vswitchd: --qos-trust: %s mode takes %s\n", mode->name, names);
		return 2;
	}
	if (!cfg->ib_ports)
		cfg->ib_ports = IB_DEFAULT_PORTS;
	for (unsigned i = 0; i < o->nsm_port; i++) {
		if (o->sm_port[i] > cfg->ib_ports) {
			fprintf(stderr,
				"cnuas-vswitchd: --sm-port %u: the switch has IB ports 1..%u\n",
				o->sm_port[i], cfg->ib_ports);
			return 2;
		}
	}
	/* no MACs to pin in IB mode: accepted (the lab passes it), without effect */
	o->psec_ignored = cfg->link_layer == LINK_IB && (o->port_security || o->port_macs_set);
	if (o->psec_ignored)
		o->port_security = o->port_macs_set = false;
	o->psec.pin = o->port_security;
	o->psec.limit = o->port_macs_set ? o->port_macs : o->port_security ? 4 : 0;
	if (o->extra) {
		fprintf(stderr, "cnuas-vswitchd: unexpected argument '%s'\n", o->extra);
		return 2;
	}
	if (!cfg->ctl_path) {
		size_t l = strlen(cfg->socket_path) + 5;

		o->ctl_alloc = malloc(l);
		if (!o->ctl_alloc)
			return 1;
		snprintf(o->ctl_alloc, l, "%s.ctl", cfg->socket_path);
		cfg->ctl_path = o->ctl_alloc;
	}
	if (!strcmp(cfg->ctl_path, cfg->socket_path)) {
		fprintf(stderr, "cnuas-vswitchd: --ctl and --socket must differ\n");
		return 2;
	}
	return OPTS_RUN;
}
