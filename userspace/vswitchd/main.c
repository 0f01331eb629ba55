// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-vswitchd: the Cnuas software switch. Options, startup, the event
 * loop and clean shutdown.
 */
#include "capture.h"
#include "fdb.h"
#include "fwd_mode.h"
#include "ib.h"
#include "switch.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#define DEFAULT_SOCKET "/run/cnuas/switch.sock"
#define VS_VERSION "0.1.0"

struct dgram_opt {
	char *local, *remote;
};

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
		"  --aging SECONDS     MAC aging time, 0 = never (default 300)\n"
		"  --queue-frames N    egress queue bound per port, 16..65536 (default 256)\n"
		"  --max-ports N       most ports at once, 2..4096 (default 256)\n"
		"  --port-security     pin each MAC to the port that first sent it (no moves,\n"
		"                      no aging) and limit MACs per port (default 4)\n"
		"  --port-macs N       MACs a port may learn, 0 = any (default: 4 with\n"
		"                      --port-security, else any)\n"
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


static int setup_signals(struct vswitch *sw)
{
	sigset_t set;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = ev_tag(EV_SIGNAL, 0) };

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sw->sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sw->sig_fd < 0)
		return -1;
	return epoll_ctl(sw->epfd, EPOLL_CTL_ADD, sw->sig_fd, &ev);
}

static void on_signal(struct vswitch *sw)
{
	struct signalfd_siginfo si;

	while (read(sw->sig_fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			vs_log(VS_LOG_INFO, "SIGHUP ignored");
			continue;
		}
		vs_log(VS_LOG_INFO, "signal %u: shutting down", si.ssi_signo);
		sw->stop = true;
	}
}

static void accept_ports(struct vswitch *sw)
{
	for (int n = 0; n < 64; n++) {
		int fd = accept4(sw->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct ucred cr;
		socklen_t crlen = sizeof(cr);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				vs_log(VS_LOG_WARN, "accept: %s", strerror(errno));
			return;
		}
		struct port *p = port_add(sw, fd, PORT_SEQPACKET);

		if (!p) {
			vs_log(VS_LOG_WARN, "refusing connection: %u ports already", sw->cfg.max_ports);
			close(fd);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0)
			snprintf(p->peer, sizeof(p->peer), "pid %d", (int)cr.pid);
		else
			snprintf(p->peer, sizeof(p->peer), "unknown");
		if (sw->ops->port_attach && sw->ops->port_attach(sw, p) < 0) {
			port_destroy(sw, p);
			continue;
		}
		vs_log(VS_LOG_INFO, "port %u up (%s)", p->id, p->peer);
	}
}

static int vswitch_init(struct vswitch *sw)
{
	char err[256];
	unsigned n = sw->cfg.max_ports;

	sw->flood_cap = 2 * sw->cfg.queue_frames;
	sw->low_water = sw->cfg.queue_frames / 2;
	sw->ports = calloc(n, sizeof(*sw->ports));
	sw->active = calloc(n, sizeof(int));
	sw->dirty = calloc(n, sizeof(int));
	sw->runq = calloc(n, sizeof(int));
	sw->fdb = malloc(sizeof(*sw->fdb));
	if (!sw->ports || !sw->active || !sw->dirty || !sw->runq || !sw->fdb) {
		vs_log(VS_LOG_ERR, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < n; i++) {
		sw->ports[i].fd = -1;
		sw->ports[i].blocked_on = -1;
	}
	fdb_init(sw->fdb, sw->cfg.aging_s);
	for (unsigned i = 0; i < VS_BATCH; i++) {
		sw->rx_pkt[i] = pkt_alloc_rx();
		sw->rx_iov[i].iov_base = sw->rx_pkt[i]->data;
		sw->rx_iov[i].iov_len = VS_MAX_FRAME;
		sw->rx_msg[i].msg_hdr.msg_iov = &sw->rx_iov[i];
		sw->rx_msg[i].msg_hdr.msg_iovlen = 1;
		sw->rx_msg[i].msg_hdr.msg_name = &sw->rx_addr[i];
		sw->rx_msg[i].msg_hdr.msg_namelen = sizeof(sw->rx_addr[i]);
	}
	sw->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (sw->epfd < 0 || setup_signals(sw) < 0) {
		vs_log(VS_LOG_ERR, "epoll/signalfd: %s", strerror(errno));
		return -1;
	}
	sw->listen_fd = unix_listen(sw->cfg.socket_path, SOCK_SEQPACKET, 0660, err, sizeof(err));
	if (sw->listen_fd < 0) {
		vs_log(VS_LOG_ERR, "switch socket: %s", err);
		return -1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = ev_tag(EV_LISTEN, 0) };

	epoll_ctl(sw->epfd, EPOLL_CTL_ADD, sw->listen_fd, &ev);
	if (ctl_listen(sw) < 0) {
		close(sw->listen_fd);
		sw->listen_fd = -1;
		unlink(sw->cfg.socket_path);
		return -1;
	}
	sw->now = mono_ns();
	sw->next_sweep = sw->now + 1000000000ull;
	return 0;
}

static void vswitch_fini(struct vswitch *sw)
{
	while (sw->nactive)
		port_destroy(sw, &sw->ports[sw->active[sw->nactive - 1]]);
	if (sw->cap) {
		uint64_t n = capture_stop(sw->cap);

		vs_log(VS_LOG_INFO, "capture closed: %llu frames", (unsigned long long)n);
		sw->cap = NULL;
	}
	ctl_close_all(sw);
	stream_close_listeners(sw);
	if (sw->listen_fd >= 0) {
		close(sw->listen_fd);
		unlink(sw->cfg.socket_path);
	}
	if (sw->ctl_fd >= 0) {
		close(sw->ctl_fd);
		unlink(sw->cfg.ctl_path);
	}
	if (sw->sig_fd >= 0)
		close(sw->sig_fd);
	if (sw->epfd >= 0)
		close(sw->epfd);
	if (sw->ops->fini)
		sw->ops->fini(sw);
	free(sw->ports);
	free(sw->active);
	free(sw->dirty);
	free(sw->runq);
	free(sw->fdb);
	for (unsigned i = 0; i < VS_BATCH; i++) {
		if (sw->rx_pkt[i])
			pkt_put(sw->rx_pkt[i]);
		sw->rx_pkt[i] = NULL;
	}
	pkt_cache_free();
}

static void run(struct vswitch *sw)
{
	struct epoll_event evs[64];

	while (!sw->stop) {
		int timeout;

		sw->now = mono_ns();
		dp_timers(sw, &timeout);
		dp_housekeeping(sw);
		int n = epoll_wait(sw->epfd, evs, 64, timeout);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			vs_log(VS_LOG_ERR, "epoll_wait: %s", strerror(errno));
			break;
		}
		sw->now = mono_ns();
		for (int i = 0; i < n; i++) {
			uint32_t kind = (uint32_t)(evs[i].data.u64 >> 32);
			uint32_t idx = (uint32_t)evs[i].data.u64;

			switch (kind) {
			case EV_LISTEN:
				accept_ports(sw);
				break;
			case EV_STREAM_LISTEN:
				stream_accept(sw, idx);
				break;
			case EV_CTL_LISTEN:
				ctl_accept(sw);
				break;
			case EV_CTL_CONN:
				ctl_conn_event(sw, idx, evs[i].events);
				break;
			case EV_SIGNAL:
				on_signal(sw);
				break;
			case EV_PORT:
				if (sw->ports[idx].used && !sw->ports[idx].closing)
					dp_port_event(sw, &sw->ports[idx], evs[i].events);
				break;
			}
		}
		dp_flush(sw);
		dp_housekeeping(sw);
	}
}

/* Detach; the parent exits once the child has its sockets bound. */
static int daemonize(int *ready_fd)
{
	int pfd[2];
	pid_t pid;
	char c;

	if (pipe(pfd) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(pfd[1]);
		exit(read(pfd[0], &c, 1) == 1 ? 0 : 1);
	}
	close(pfd[0]);
	setsid();
	int nul = open("/dev/null", O_RDWR);

	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		if (nul > 2)
			close(nul);
	}
	*ready_fd = pfd[1];
	return 0;
}

int main(int argc, char **argv)
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
		{ "aging", required_argument, NULL, 'a' },
		{ "queue-frames", required_argument, NULL, 'q' },
		{ "max-ports", required_argument, NULL, 'm' },
		{ "port-security", no_argument, NULL, 'P' },
		{ "port-macs", required_argument, NULL, 'M' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "syslog", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	static struct vswitch sw_storage;
	struct vswitch *sw = &sw_storage;
	struct dgram_opt dg[64];
	bool port_security = false, port_macs_set = false;
	unsigned port_macs = 0;
	unsigned ndg = 0, ntap = 0, nstream = 0;
	char *tap[64], *stream[VS_MAX_STREAM_LISTEN];
	char *ctl_alloc = NULL;
	int opt, ready_fd = -1, rc = 0;

	sw->cfg.socket_path = DEFAULT_SOCKET;
	sw->cfg.aging_s = 300;
	sw->cfg.queue_frames = 256;
	sw->cfg.max_ports = 256;
	sw->epfd = sw->listen_fd = sw->ctl_fd = sw->sig_fd = -1;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "fhvV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			sw->cfg.socket_path = optarg;
			break;
		case 'c':
			sw->cfg.ctl_path = optarg;
			break;
		case 'd': {
			char *eq = strchr(optarg, '=');

			if (!eq || eq == optarg || !eq[1]) {
				fprintf(stderr, "cnuas-vswitchd: --dgram wants SWITCH_PATH=QEMU_PATH, got '%s'\n",
					optarg);
				return 2;
			}
			if (ndg == sizeof(dg) / sizeof(dg[0])) {
				fprintf(stderr, "cnuas-vswitchd: too many --dgram options\n");
				return 2;
			}
			*eq = 0;
			dg[ndg].local = optarg;
			dg[ndg++].remote = eq + 1;
			break;
		}
		case 't':
			if (ntap == sizeof(tap) / sizeof(tap[0])) {
				fprintf(stderr, "cnuas-vswitchd: too many --tap options\n");
				return 2;
			}
			tap[ntap++] = optarg;
			break;
		case 'T':
			if (nstream == VS_MAX_STREAM_LISTEN) {
				fprintf(stderr, "cnuas-vswitchd: too many --stream options (max %d)\n",
					VS_MAX_STREAM_LISTEN);
				return 2;
			}
			stream[nstream++] = optarg;
			break;
		case 'l':
			if (!strcmp(optarg, "ib")) {
				sw->cfg.link_layer = LINK_IB;
			} else if (!strcmp(optarg, "eth")) {
				sw->cfg.link_layer = LINK_ETH;
			} else {
				fprintf(stderr, "cnuas-vswitchd: --link-layer: unknown link layer '%s' (eth or ib)\n",
					optarg);
				return 2;
			}
			break;
		case 'I':
			if (parse_uint("--ib-ports", optarg, 1, IB_MAX_PORTS, &sw->cfg.ib_ports) < 0)
				return 2;
			break;
		case 'G': {
			char *end;

			errno = 0;
			sw->cfg.ib_guid = strtoull(optarg, &end, 16);
			if (errno || end == optarg || *end || !sw->cfg.ib_guid) {
				fprintf(stderr, "cnuas-vswitchd: --guid: '%s' is not a non-zero hex GUID\n",
					optarg);
				return 2;
			}
			break;
		}
		case 'a':
			if (parse_uint("--aging", optarg, 0, 1000000, &sw->cfg.aging_s) < 0)
				return 2;
			break;
		case 'q':
			if (parse_uint("--queue-frames", optarg, 16, 65536, &sw->cfg.queue_frames) < 0)
				return 2;
			break;
		case 'm':
			if (parse_uint("--max-ports", optarg, 2, 4096, &sw->cfg.max_ports) < 0)
				return 2;
			break;
		case 'P':
			port_security = true;
			break;
		case 'M':
			if (parse_uint("--port-macs", optarg, 0, FDB_MAX, &port_macs) < 0)
				return 2;
			port_macs_set = true;
			break;
		case 'f':
			sw->cfg.foreground = true;
			break;
		case 'S':
			sw->cfg.use_syslog = true;
			break;
		case 'v':
			sw->cfg.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("cnuas-vswitchd %s\n", VS_VERSION);
			return 0;
		default:
			fprintf(stderr, "cnuas-vswitchd: unknown option or missing argument: '%s'\n",
				argv[optind - 1]);
			fprintf(stderr, "Try 'cnuas-vswitchd --help'.\n");
			return 2;
		}
	}
	if (sw->cfg.link_layer == LINK_IB && (ndg || ntap || nstream)) {
		fprintf(stderr, "cnuas-vswitchd: --dgram, --stream and --tap ports are Ethernet only "
				"(not with --link-layer ib)\n");
		return 2;
	}
	if (sw->cfg.link_layer != LINK_IB && (sw->cfg.ib_ports || sw->cfg.ib_guid)) {
		fprintf(stderr, "cnuas-vswitchd: --ib-ports and --guid need --link-layer ib\n");
		return 2;
	}
	if (!sw->cfg.ib_ports)
		sw->cfg.ib_ports = IB_DEFAULT_PORTS;
	/* no MACs to pin in IB mode: accepted (the lab passes it), without effect */
	bool psec_ignored = sw->cfg.link_layer == LINK_IB && (port_security || port_macs_set);

	if (psec_ignored)
		port_security = port_macs_set = false;
	qos_default(&sw->qos_all);
	sw->psec_all.pin = port_security;
	sw->psec_all.limit = port_macs_set ? port_macs : port_security ? 4 : 0;
	if (optind < argc) {
		fprintf(stderr, "cnuas-vswitchd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!sw->cfg.ctl_path) {
		size_t l = strlen(sw->cfg.socket_path) + 5;

		ctl_alloc = malloc(l);
		if (!ctl_alloc)
			return 1;
		snprintf(ctl_alloc, l, "%s.ctl", sw->cfg.socket_path);
		sw->cfg.ctl_path = ctl_alloc;
	}
	if (!strcmp(sw->cfg.ctl_path, sw->cfg.socket_path)) {
		fprintf(stderr, "cnuas-vswitchd: --ctl and --socket must differ\n");
		return 2;
	}
	vs_log_init(sw->cfg.use_syslog || !sw->cfg.foreground, sw->cfg.verbose);
	if (!sw->cfg.foreground && daemonize(&ready_fd) < 0) {
		vs_log(VS_LOG_ERR, "cannot detach: %s", strerror(errno));
		return 1;
	}
	if (sw->cfg.link_layer == LINK_IB) {
		if (ib_init(sw, sw->cfg.ib_ports, sw->cfg.ib_guid, sw->cfg.ib_guid != 0) < 0) {
			vs_log(VS_LOG_ERR, "out of memory");
			return 1;
		}
	} else {
		eth_fwd_start(sw);
	}
	if (vswitch_init(sw) < 0) {
		vswitch_fini(sw);
		free(ctl_alloc);
		return 1;
	}
	for (unsigned i = 0; i < ndg; i++) {
		char err[256];

		if (!dgram_add(sw, dg[i].local, dg[i].remote, err, sizeof(err))) {
			vs_log(VS_LOG_ERR, "--dgram %s=%s: %s", dg[i].local, dg[i].remote, err);
			vswitch_fini(sw);
			free(ctl_alloc);
			return 1;
		}
	}
	for (unsigned i = 0; i < nstream; i++) {
		char err[256];

		if (stream_listen_add(sw, stream[i], err, sizeof(err)) < 0) {
			vs_log(VS_LOG_ERR, "--stream %s: %s", stream[i], err);
			vswitch_fini(sw);
			free(ctl_alloc);
			return 1;
		}
	}
	for (unsigned i = 0; i < ntap; i++) {
		char err[256];

		if (!tap_add(sw, tap[i], err, sizeof(err))) {
			vs_log(VS_LOG_ERR, "--tap %s: %s", tap[i], err);
			vswitch_fini(sw);
			free(ctl_alloc);
			return 1;
		}
	}
	if (psec_ignored)
		vs_log(VS_LOG_INFO, "--port-security/--port-macs have no effect in InfiniBand mode");
	char mode[128];

	sw->ops->describe(sw, mode, sizeof(mode));
	vs_log(VS_LOG_INFO, "listening on %s (control %s), link-layer %s, queue %u frames",
	       sw->cfg.socket_path, sw->cfg.ctl_path, mode, sw->cfg.queue_frames);
#ifdef HAVE_SYSTEMD
	sd_notify(0, "READY=1");
#endif
	if (ready_fd >= 0) {
		if (write(ready_fd, "r", 1) != 1)
			vs_log(VS_LOG_WARN, "could not signal readiness to the parent");
		close(ready_fd);
	}
	run(sw);
#ifdef HAVE_SYSTEMD
	sd_notify(0, "STOPPING=1");
#endif
	vswitch_fini(sw);
	vs_log(VS_LOG_INFO, "stopped");
	free(ctl_alloc);
	return rc;
}
