// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-vsctl: control tool for cnuas-vswitchd.
 * Exit codes: 0 ok, 1 the switch refused the command, 2 usage error,
 * 3 the switch could not be reached.
 */
#include "ctl_proto.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_CTL "/run/cnuas/switch.sock.ctl"

static void usage(FILE *f)
{
	fprintf(f, "Usage: cnuas-vsctl [--ctl PATH] [--json] COMMAND [ARGS]\n"
		   "Commands:\n"
		   "  show                          ports, state, counters\n"
		   "  fdb                           learned MAC addresses\n"
		   "  lft | mft                     IB mode: the linear / multicast forwarding table\n"
		   "  counters [PORT]               all counters of all ports or one\n"
		   "  fault PORT drop=P corrupt=P reorder=P vcrc=P delay=MS seed=N\n"
		   "  fault PORT clear              (faults act on frames received from PORT)\n"
		   "  set-fault [--port ID|all] drop=P reorder=P corrupt=P [vcrc=P]\n"
		   "            [delay=MS] [seed=N]\n"
		   "  set-fault [--port ID|all] clear\n"
		   "                                P: percent (decimals allowed), 0 = off;\n"
		   "                                all (default): every port, also later ones;\n"
		   "                                vcrc (IB mode): one bit flipped on the link\n"
		   "                                out, after the VCRC (the receiver drops it)\n"
		   "  set-port-security [--port ID|all] [pin=on|off] [macs=N] [mac=MAC[,MAC...]|mac=none]\n"
		   "                                pin MACs to their port, limit MACs per port\n"
		   "                                (0 = no limit); mac=: the port's only MACs\n"
		   "  set-qos [--port ID|all] [reset] [strict=T,..|all|none] [weights=T:W,..]\n"
		   "          [lossless=T,..|all|none] [map=P:T,..] [dscp=D:P,..|default]\n"
		   "                                traffic classes T 0..7: strict priority,\n"
		   "                                DWRR weights, lossless (pause) or lossy (drop),\n"
		   "                                priority->class and DSCP->priority maps\n"
		   "  set-qos-trust [--port ID|all] [pcp|dscp|sl|none] [max-prio=N]\n"
		   "                                what ingress priorities come from, and their cap\n"
		   "  show-qos [PORT]               class settings and per-class counters\n"
		   "  capture start FILE [PORT]     pcap of all ports or one\n"
		   "  capture stop\n"
		   "  add-dgram SWITCH_PATH QEMU_PATH\n"
		   "  add-stream PATH               listen for QEMU -netdev stream peers on PATH\n"
		   "  add-tap IFNAME                create (or attach) TAP interface IFNAME\n"
		   "  del-port PORT                 hang up a guest's port (its MACs are free)\n"
		   "  handover PORT [MS] [pid=PID]  the same for a migrating guest; an IB port\n"
		   "                                stays Active for the guest port of process\n"
		   "                                PID (without: the next one) for MS (10 s)\n"
		   "  sm-port add|del IB_PORT|name=VM | list\n"
		   "                                IB mode: the ports a subnet manager may\n"
		   "                                manage from (SMPs, PMA resets); none: any\n"
		   "  shutdown\n"
		   "Options: --ctl PATH (default " DEFAULT_CTL "), --json, --help\n");
}

/* Command name, and the allowed argument counts (after the name). */
static const struct {
	const char *name;
	int min, max;
} cmds[] = {
	{ "show", 0, 0 },  { "fdb", 0, 0 },	  { "counters", 0, 1 },	 { "fault", 2, 7 },
	{ "capture", 1, 3 }, { "add-dgram", 2, 2 }, { "add-tap", 1, 1 }, { "add-stream", 1, 1 }, { "shutdown", 0, 0 }, { "set-fault", 1, 9 },
	{ "set-port-security", 1, 5 }, { "lft", 0, 0 }, { "mft", 0, 0 },
	{ "del-port", 1, 1 }, { "handover", 1, 3 }, { "sm-port", 1, 2 },
	{ "set-qos", 1, CTL_MAX_ARGS - 1 }, { "show-qos", 0, 1 },
	{ "set-qos-trust", 1, 4 },
};

/* Absolute form of path in buf (static storage: no cleanup on exit paths). */
static char *absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];

	if (path[0] == '/')
		return (char *)path;
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	if ((size_t)snprintf(buf, len, "%s/%s", cwd, path) >= len) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	return buf;
}

/* The command line: where the switch is, the output form, the command. */
struct vsctl_opts {
	const char *ctl;
	int json;
	int nargs;
	char *args[CTL_MAX_ARGS];	/* the command and its arguments */
};

/* Fill @o from the command line; returns -1 to go on, else the exit code. */
static int parse_options(struct vsctl_opts *o, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ctl", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;

	o->ctl = DEFAULT_CTL;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+c:jh", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o->ctl = optarg;
			break;
		case 'j':
			o->json = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "cnuas-vsctl: unknown option or missing argument: '%s'\n",
				argv[optind - 1]);
			fprintf(stderr, "Try 'cnuas-vsctl --help'.\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "cnuas-vsctl: no command given\n");
		fprintf(stderr, "Try 'cnuas-vsctl --help'.\n");
		return 2;
	}
	o->nargs = argc - optind;
	/* at most CTL_MAX_ARGS: no command takes more (check_command) */
	memcpy(o->args, argv + optind,
	       (size_t)(o->nargs < CTL_MAX_ARGS ? o->nargs : CTL_MAX_ARGS) * sizeof(char *));
	return -1;
}

/*
 * A known command with an allowed number of arguments, which may not be
 * empty nor hold newlines; paths made absolute (the switch resolves them
 * in its own directory). Returns -1 to go on, else the exit code.
 */
static int check_command(struct vsctl_opts *o)
{
	char **args = o->args;
	int nargs = o->nargs;
	size_t c;

	for (c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		if (!strcmp(args[0], cmds[c].name))
			break;
	if (c == sizeof(cmds) / sizeof(cmds[0])) {
		fprintf(stderr, "cnuas-vsctl: unknown command '%s'\n", args[0]);
		fprintf(stderr, "Try 'cnuas-vsctl --help'.\n");
		return 2;
	}
	if (nargs - 1 < cmds[c].min || nargs - 1 > cmds[c].max) {
		fprintf(stderr, "cnuas-vsctl: wrong number of arguments for '%s'\n", args[0]);
		fprintf(stderr, "Try 'cnuas-vsctl --help'.\n");
		return 2;
	}
	static char abs1[2 * PATH_MAX], abs2[2 * PATH_MAX];

	if (!strcmp(args[0], "capture") && nargs >= 3 && !strcmp(args[1], "start"))
		args[2] = absolute(args[2], abs2, sizeof(abs2));
	if (!strcmp(args[0], "add-stream"))
		args[1] = absolute(args[1], abs1, sizeof(abs1));
	if (!strcmp(args[0], "add-dgram")) {
		args[1] = absolute(args[1], abs1, sizeof(abs1));
		args[2] = absolute(args[2], abs2, sizeof(abs2));
	}
	for (int i = 0; i < nargs; i++) {
		if (!args[i]) {
			fprintf(stderr, "cnuas-vsctl: cannot resolve path: %s\n", strerror(errno));
			return 2;
		}
		if (strchr(args[i], '\n') || !args[i][0]) {
			fprintf(stderr, "cnuas-vsctl: arguments may not be empty or contain newlines\n");
			return 2;
		}
	}
	return -1;
}

/* Send the request, print the reply; returns the exit code. */
static int request(const struct vsctl_opts *o)
{
	const char *ctl = o->ctl;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(ctl) >= sizeof(a.sun_path)) {
		fprintf(stderr, "cnuas-vsctl: control path too long: %s\n", ctl);
		return 2;
	}
	memcpy(a.sun_path, ctl, strlen(ctl));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;

		fprintf(stderr, "cnuas-vsctl: cannot reach the switch at %s: %s%s\n", ctl, strerror(e),
			e == ENOENT || e == ECONNREFUSED ?
			" (is cnuas-vswitchd running? systemctl status cnuas-vswitchd)" :
			e == EACCES || e == EPERM ? " (the control socket is root's)" : "");
		return 3;
	}
	struct timeval tv = { .tv_sec = 10 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

	FILE *req = fdopen(dup(fd), "w");

	if (!req) {
		fprintf(stderr, "cnuas-vsctl: %s\n", strerror(errno));
		return 3;
	}
	fprintf(req, "%s\n%s\n", CTL_MAGIC, o->json ? "json" : "text");
	for (int i = 0; i < o->nargs; i++)
		fprintf(req, "%s\n", o->args[i]);
	if (fclose(req) != 0 || shutdown(fd, SHUT_WR) < 0) {
		fprintf(stderr, "cnuas-vsctl: sending the request failed: %s\n", strerror(errno));
		return 3;
	}

	char *resp = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		if (len + 4096 > cap) {
			cap = cap ? cap * 2 : 65536;
			resp = realloc(resp, cap + 1);
			if (!resp) {
				fprintf(stderr, "cnuas-vsctl: out of memory\n");
				return 3;
			}
		}
		ssize_t n = read(fd, resp + len, cap - len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "cnuas-vsctl: reading the reply failed: %s\n", strerror(errno));
			return 3;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!resp || !len) {
		free(resp);
		fprintf(stderr, "cnuas-vsctl: the switch closed the connection without a reply\n");
		return 3;
	}
	resp[len] = 0;
	int rc = 3;

	if (!strncmp(resp, "OK\n", 3)) {
		fputs(resp + 3, stdout);
		rc = 0;
	} else if (!strncmp(resp, "ERR ", 4)) {
		fprintf(stderr, "cnuas-vsctl: %s", resp + 4);
		rc = 1;
	} else {
		fprintf(stderr, "cnuas-vsctl: malformed reply from the switch\n");
	}
	free(resp);
	return rc;
}

int main(int argc, char **argv)
{
	struct vsctl_opts o = { 0 };
	int rc = parse_options(&o, argc, argv);

	if (rc < 0)
		rc = check_command(&o);
	if (rc < 0)
		rc = request(&o);
	return rc;
}
