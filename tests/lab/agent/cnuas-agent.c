// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * cnuas-agent: in-guest control agent of the Cnuas lab.
 *
 *   cnuas-agent --port /dev/vport0p1   serve exec sessions on one port
 *   cnuas-agent --supervise            (PID 1 or a service) one server per
 *                                      port named org.cnuas.agent.*,
 *                                      respawned when they die; reaps
 *                                      orphans
 *
 * One port carries one session at a time; the host picks a free port.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "proto.h"

#define MAX_PORTS 32
/* at most this long between looks for a host, should its SIGIO be lost */
#define HOST_WAIT_MS 500
#define PORT_NAME_PREFIX "org.cnuas.agent."

void agent_log(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cnuas-agent[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void buf_append(struct buf *b, const void *data, size_t len)
{
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + len)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p) {
			agent_log("out of memory");
			_exit(1);
		}
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, len);
	b->len += len;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

void buf_put_frame(struct buf *b, uint16_t type, const void *data, uint32_t len)
{
	uint8_t hdr[CNUAS_AGENT_HDR_LEN];

	cnuas_agent_put_hdr(hdr, type, len);
	buf_append(b, hdr, sizeof(hdr));
	if (len)
		buf_append(b, data, len);
}

long buf_read_fd(struct buf *b, int fd, size_t max)
{
	uint8_t tmp[16384];
	ssize_t n;

	if (max > sizeof(tmp))
		max = sizeof(tmp);
	n = read(fd, tmp, max);
	if (n > 0) {
		buf_append(b, tmp, (size_t)n);
		return n;
	}
	if (n == 0)
		return 0;
	if (errno == EAGAIN || errno == EINTR)
		return -1;
	return -2;
}

int buf_write_fd(struct buf *b, int fd)
{
	ssize_t n;

	if (!b->len)
		return 0;
	n = write(fd, b->p, b->len);
	if (n > 0) {
		buf_consume(b, (size_t)n);
		return 0;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

/* Wait for the port; a port without a host reports POLLHUP, so nap. */
static int port_wait(int fd, short events, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int r = poll(&p, 1, timeout_ms);

	if (r <= 0)
		return 0;
	if (p.revents & events)
		return p.revents;
	if (p.revents & (POLLHUP | POLLERR)) {
		usleep(100 * 1000);
		return POLLHUP;
	}
	return 0;
}

/* SIGIO only ends host_wait()'s ppoll: serve_port() blocks it elsewhere. */
static void on_sigio(int sig)
{
	(void)sig;
}

/*
 * No host on the port: virtio_console's poll and read say so at once, so
 * nothing blocks until one connects, but its SIGIO does come then (the
 * port is O_ASYNC and ours). Sleep until that signal, or HOST_WAIT_MS in
 * case it was lost; a signal sent since the last look is pending and ends
 * the ppoll at once. Napping 100 ms instead woke eight ports 20 times a
 * second in every idle guest: 2-3% of a host core per TCG guest.
 */
static void host_wait(void)
{
	struct timespec ts = { .tv_nsec = HOST_WAIT_MS * 1000000L };
	sigset_t mask;

	sigprocmask(SIG_SETMASK, NULL, &mask);
	sigdelset(&mask, SIGIO);
	ppoll(NULL, 0, &ts, &mask);
}

/* Discard input until SYNC_MAGIC + nonce; returns 0 with nonce filled. */
static int port_sync(int fd, struct buf *in, uint8_t *nonce)
{
	const size_t want = CNUAS_AGENT_MAGIC_LEN + CNUAS_AGENT_NONCE_LEN;

	for (;;) {
		uint8_t *m = memmem(in->p ? in->p : (uint8_t *)"", in->len,
				    CNUAS_AGENT_SYNC_MAGIC, CNUAS_AGENT_MAGIC_LEN);

		if (m) {
			size_t off = (size_t)(m - in->p);

			if (in->len - off >= want) {
				memcpy(nonce, m + CNUAS_AGENT_MAGIC_LEN, CNUAS_AGENT_NONCE_LEN);
				buf_consume(in, off + want);
				return 0;
			}
			buf_consume(in, off);
		} else if (in->len >= CNUAS_AGENT_MAGIC_LEN) {
			buf_consume(in, in->len - (CNUAS_AGENT_MAGIC_LEN - 1));
		}
		/* Commands killed while stuck in the kernel end up here. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (port_wait(fd, POLLIN, 1000) & POLLIN) {
			long r = buf_read_fd(in, fd, 16384);

			/*
			 * With no host on the port, virtio_console polls
			 * POLLIN|POLLHUP and read() gives EOF at once: wait
			 * for one, or every idle port spins a vCPU.
			 */
			if (r == 0) {
				host_wait();
			} else if (r == -2) {
				agent_log("read port: %s", strerror(errno));
				sleep(1);
			}
		}
	}
}

static int port_send_ack(int fd, const uint8_t *nonce)
{
	struct buf out = { 0 };
	int tries = 50; /* 5 s */

	buf_append(&out, CNUAS_AGENT_ACK_MAGIC, CNUAS_AGENT_MAGIC_LEN);
	buf_append(&out, nonce, CNUAS_AGENT_NONCE_LEN);
	/*
	 * No host yet is no reason to give up: virtio_console hands over a
	 * new host's first bytes from the data queue's interrupt but learns
	 * of its connection from the control queue, in a work item that may
	 * run later. Until then the port polls POLLHUP and a write would
	 * block; the host waits for this ACK, so wait for it (5 s at most).
	 */
	while (out.len && tries-- > 0) {
		if ((port_wait(fd, POLLOUT, 100) & POLLOUT) &&
		    buf_write_fd(&out, fd) < 0)
			break;
	}
	free(out.p);
	return out.len ? -1 : 0;
}

static int serve_port(const char *path)
{
	struct buf in = { 0 };
	uint8_t nonce[CNUAS_AGENT_NONCE_LEN];
	int fd;

	struct sigaction sa = { .sa_handler = on_sigio };
	sigset_t io;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&io);
	sigaddset(&io, SIGIO);
	sigprocmask(SIG_BLOCK, &io, NULL);
	sigaction(SIGIO, &sa, NULL);
	fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		agent_log("open %s: %s", path, strerror(errno));
		return 1;
	}
	/* virtio_console signals a host's connection (host_wait()) */
	if (fcntl(fd, F_SETOWN, getpid()) < 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC) < 0)
		agent_log("%s: no SIGIO (%s): waiting %d ms for a host", path,
			  strerror(errno), HOST_WAIT_MS);
	for (;;) {
		port_sync(fd, &in, nonce);
		if (port_send_ack(fd, nonce) < 0)
			continue;
		exec_session(fd, &in);
	}
}

struct port {
	char dev[64];
	pid_t pid;
};

static int find_ports(struct port *ports)
{
	DIR *d = opendir("/sys/class/virtio-ports");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < MAX_PORTS) {
		char path[512], name[128] = "";
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(name, sizeof(name), f))
			name[0] = 0;
		fclose(f);
		if (strncmp(name, PORT_NAME_PREFIX, strlen(PORT_NAME_PREFIX)))
			continue;
		snprintf(ports[n].dev, sizeof(ports[n].dev), "/dev/%.32s", e->d_name);
		ports[n].pid = 0;
		n++;
	}
	closedir(d);
	return n;
}

/*
 * virtio-serial ports appear one by one: the first may be there well
 * before the last. Take in the ones not yet in @ports.
 */
static void add_new_ports(struct port *ports, int *n)
{
	struct port found[MAX_PORTS];
	int m = find_ports(found), i, j;

	for (i = 0; i < m && *n < MAX_PORTS; i++) {
		for (j = 0; j < *n && strcmp(ports[j].dev, found[i].dev); j++)
			;
		if (j == *n) {
			ports[(*n)++] = found[i];
			agent_log("serving %s", found[i].dev);
		}
	}
}

static pid_t spawn_server(const char *dev)
{
	pid_t pid = fork();

	if (pid == 0) {
		sigset_t all;

		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		_exit(serve_port(dev));
	}
	return pid;
}

static __attribute__((noreturn)) void supervise(void)
{
	struct port ports[MAX_PORTS];
	int n = 0, i;

	/* Ports show up once virtio_console loads (udev loads it in a systemd guest). */
	for (i = 0; i < 600 && !(n = find_ports(ports)); i++)
		usleep(100 * 1000);
	if (!n) {
		agent_log("no %s* virtio-serial ports found", PORT_NAME_PREFIX);
		/* A service is restarted and looks again; PID 1 stays. */
		if (getpid() != 1)
			exit(1);
	}
	agent_log("serving %d port(s)", n);
	for (;;) {
		int status;
		pid_t pid;

		add_new_ports(ports, &n);
		for (i = 0; i < n; i++) {
			if (!ports[i].pid)
				ports[i].pid = spawn_server(ports[i].dev);
		}
		/* Not blocking: ports that show up later are looked for each second. */
		pid = waitpid(-1, &status, WNOHANG);
		if (pid <= 0) {
			sleep(1);
			continue;
		}
		for (i = 0; i < n; i++) {
			if (ports[i].pid == pid) {
				agent_log("server for %s exited (status 0x%x), respawning",
					  ports[i].dev, status);
				ports[i].pid = 0;
				sleep(1); /* no hot respawn loop */
			}
		}
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--port"))
		return serve_port(argv[2]);
	if (argc == 2 && !strcmp(argv[1], "--supervise"))
		supervise();
	fprintf(stderr, "usage: cnuas-agent --port DEV | --supervise\n");
	return 2;
}
