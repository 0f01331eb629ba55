// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-vswitchd: the Cnuas software switch. Start-up (from the options,
 * options.c), the event loop and clean shutdown.
 */
#include "capture.h"
#include "fdb.h"
#include "fwd_mode.h"
#include "ib.h"
#include "options.h"
#include "port_kind.h"
#include "switch.h"

#include <errno.h>
#include <fcntl.h>
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
		struct port *p = port_add(sw, fd, &seqpacket_kind);

		if (!p) {
			vs_log(VS_LOG_WARN, "refusing connection: %u ports already", sw->cfg.max_ports);
			close(fd);
			continue;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0) {
			p->peer_pid = (int)cr.pid;
			port_name_peer(p, "", cr.pid, sw->cfg.socket_path);
		} else
			snprintf(p->peer, sizeof(p->peer), "unknown");
		if (sw->ops->port_attach && sw->ops->port_attach(sw, p) < 0) {
			port_destroy(sw, p);
			continue;
		}
		port_macs_reserve(sw, p);
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
	sock_log_access(sw->cfg.socket_path);
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
	sw->stop = true;	/* the ports go with the switch, not their guests: nothing to forget */
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
			case EV_SHM:
				if (sw->ports[idx].used && !sw->ports[idx].closing && sw->ports[idx].shm)
					dp_shm_event(sw, &sw->ports[idx]);
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

/* Add the ports the options name. */
static int add_option_ports(struct vswitch *sw, const struct vs_options *o)
{
	char err[256];

	for (unsigned i = 0; i < o->ndgram; i++) {
		if (!dgram_add(sw, o->dgram[i].local, o->dgram[i].remote, err, sizeof(err))) {
			vs_log(VS_LOG_ERR, "--dgram %s=%s: %s", o->dgram[i].local, o->dgram[i].remote,
			       err);
			return -1;
		}
	}
	for (unsigned i = 0; i < o->nstream; i++) {
		if (stream_listen_add(sw, o->stream[i], err, sizeof(err)) < 0) {
			vs_log(VS_LOG_ERR, "--stream %s: %s", o->stream[i], err);
			return -1;
		}
	}
	for (unsigned i = 0; i < o->ntap; i++) {
		if (!tap_add(sw, o->tap[i], err, sizeof(err))) {
			vs_log(VS_LOG_ERR, "--tap %s: %s", o->tap[i], err);
			return -1;
		}
	}
	return 0;
}

/*
 * Start the switch the options describe: log, detach (*ready_fd: tell the
 * parent once ready), the forwarding mode, sockets and ports. Returns the
 * exit code on failure, OPTS_RUN when running.
 */
static int start(struct vswitch *sw, const struct vs_options *o, int *ready_fd)
{
	char mode[128], err[512];

	sw->cfg = o->cfg;
	sw->epfd = sw->listen_fd = sw->ctl_fd = sw->sig_fd = -1;
	qos_default(&sw->qos_all);
	sw->psec_all = o->psec;
	sw->trust_all = o->trust;
	vs_log_init(sw->cfg.use_syslog || !sw->cfg.foreground, sw->cfg.verbose);
	if (!sw->cfg.foreground && daemonize(ready_fd) < 0) {
		vs_log(VS_LOG_ERR, "cannot detach: %s", strerror(errno));
		return 1;
	}
	if (sw->cfg.link_layer == LINK_IB) {
		if (ib_init(sw, sw->cfg.ib_ports, sw->cfg.ib_guid, sw->cfg.ib_guid != 0) < 0) {
			vs_log(VS_LOG_ERR, "out of memory");
			return 1;
		}
		for (unsigned i = 0; i < o->nsm_port; i++)
			ib_sm_port_mark(sw, o->sm_port[i], IB_SM_OPTION, true);
		for (unsigned i = 0; i < o->nsm_name; i++)
			ib_sm_name_option(sw, o->sm_name[i]);
		if (o->state_dir && ib_state_open(sw, o->state_dir, err, sizeof(err)) < 0) {
			vs_log(VS_LOG_ERR, "--state-dir: %s; start refused, the file left as it is "
			       "(fix or remove it)", err);
			return 1;
		}
		if (!sw->ib->sm_enforced)
			vs_log(VS_LOG_WARN, "IB: no --sm-port: every port may manage the fabric "
			       "(SubnSet, directed route, PMA resets) until one is designated "
			       "(cnuas-vsctl sm-port add)");
	} else {
		eth_fwd_start(sw);
	}
	if (vswitch_init(sw) < 0 || add_option_ports(sw, o) < 0) {
		vswitch_fini(sw);
		return 1;
	}
	if (o->psec_ignored)
		vs_log(VS_LOG_INFO, "--port-security/--port-macs have no effect in InfiniBand mode");
	sw->ops->describe(sw, mode, sizeof(mode));
	vs_log(VS_LOG_INFO, "listening on %s (control %s), link-layer %s, queue %u frames",
	       sw->cfg.socket_path, sw->cfg.ctl_path, mode, sw->cfg.queue_frames);
	return OPTS_RUN;
}

int main(int argc, char **argv)
{
	static struct vswitch sw_storage;
	static struct vs_options o;
	struct vswitch *sw = &sw_storage;
	int ready_fd = -1;
	int rc = parse_options(&o, argc, argv);

	if (rc == OPTS_RUN)
		rc = check_options(&o);
	if (rc == OPTS_RUN)
		rc = start(sw, &o, &ready_fd);
	if (rc != OPTS_RUN) {
		free(o.ctl_alloc);
		return rc;
	}
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
	free(o.ctl_alloc);
	return 0;
}
