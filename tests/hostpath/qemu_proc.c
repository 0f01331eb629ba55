// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * A QEMU without a guest: -accel qtest, guest RAM in a file shared with
 * this process, one cnuas-vnic on the switch. The qtest protocol is one
 * text line per command and one reply line ("OK [value]" or "FAIL ...")
 * per command, in order, so unanswered doorbells are just a count.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostpath.h"

static int listen_at(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, path);
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int map_ram(struct qemu_proc *q, const struct qemu_args *a)
{
	int fd;

	snprintf(q->ram_path, sizeof(q->ram_path), "/dev/shm/cnuas-hostpath-%d-%s",
		 (int)getpid(), a->name);
	fd = open(q->ram_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	q->ram_size = a->ram_size;
	if (ftruncate(fd, (off_t)a->ram_size)) {
		close(fd);
		return -1;
	}
	q->ram = mmap(NULL, a->ram_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return q->ram == MAP_FAILED ? -1 : 0;
}

static void exec_qemu(const struct qemu_args *a, const char *ram_path,
		      const char *sock, const char *qmp, const char *log)
{
	char mem[512], dev[512], qt[300], mach[64], size[32], mon[300];
	const uint8_t *m = a->mac;
	const char *argv[32];
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	unsigned int n = 0;

	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	/* A harness killed by a timeout leaves no QEMU behind. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	snprintf(size, sizeof(size), "%zuM", a->ram_size >> 20);
	snprintf(mem, sizeof(mem),
		 "memory-backend-file,id=ram,size=%s,mem-path=%s,share=on", size, ram_path);
	snprintf(mach, sizeof(mach), "q35,memory-backend=ram");
	snprintf(qt, sizeof(qt), "unix:%s", sock);
	snprintf(mon, sizeof(mon), "socket,id=qmp,path=%s", qmp);
	snprintf(dev, sizeof(dev),
		 "cnuas-vnic,id=nic0,addr=0x4,socket_path=%s,"
		 "mac=%02x:%02x:%02x:%02x:%02x:%02x%s",
		 a->switch_sock, m[0], m[1], m[2], m[3], m[4], m[5],
		 a->shm_ring ? ",x-shm-ring=on" : "");
	argv[n++] = a->qemu;
	argv[n++] = "-machine";
	argv[n++] = mach;
	argv[n++] = "-m";
	argv[n++] = size;
	argv[n++] = "-object";
	argv[n++] = mem;
	argv[n++] = "-accel";
	argv[n++] = "qtest";
	argv[n++] = "-qtest";
	argv[n++] = qt;
	argv[n++] = "-qtest-log";
	argv[n++] = "/dev/null";
	argv[n++] = "-display";
	argv[n++] = "none";
	argv[n++] = "-nodefaults";
	argv[n++] = "-name";
	argv[n++] = "hostpath,debug-threads=on";
	argv[n++] = "-device";
	argv[n++] = dev;
	if (a->qmp) {
		/* QEMU connects to the harness, as for qtest: no wait for a path */
		argv[n++] = "-chardev";
		argv[n++] = mon;
		argv[n++] = "-mon";
		argv[n++] = "chardev=qmp,mode=control";
	}
	if (a->stopped)
		argv[n++] = "-S";
	if (a->incoming) {
		argv[n++] = "-incoming";
		argv[n++] = a->incoming;
	}
	argv[n] = NULL;
	execv(a->qemu, (char *const *)argv);
	perror(a->qemu);
	_exit(127);
}

/* Take one connection on a listening socket, waiting up to 20 s. */
static int take_conn(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (poll(&p, 1, 20000) != 1)
		return -1;
	return accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
}

int qemu_start(struct qemu_proc *q, const struct qemu_args *a)
{
	char sock[256], qmp[256], log[256], line[512];
	int lfd, qlfd = -1;

	memset(q, 0, sizeof(*q));
	q->fd = -1;
	q->qmp = -1;
	snprintf(sock, sizeof(sock), "%s/qtest-%s.sock", a->dir, a->name);
	snprintf(qmp, sizeof(qmp), "%s/qmp-%s.sock", a->dir, a->name);
	snprintf(log, sizeof(log), "%s/qemu-%s.log", a->dir, a->name);
	if (map_ram(q, a))
		return -1;
	lfd = listen_at(sock);
	if (lfd < 0)
		return -1;
	if (a->qmp) {
		qlfd = listen_at(qmp);
		if (qlfd < 0) {
			close(lfd);
			return -1;
		}
	}
	q->pid = fork();
	if (q->pid < 0) {
		close(lfd);
		if (qlfd >= 0)
			close(qlfd);
		return -1;
	}
	if (!q->pid)
		exec_qemu(a, q->ram_path, sock, qmp, log);
	/* QEMU opens its chardevs (the monitor) before the qtest socket */
	if (qlfd >= 0) {
		q->qmp = take_conn(qlfd);
		close(qlfd);
		unlink(qmp);
	}
	q->fd = take_conn(lfd);
	close(lfd);
	unlink(sock);
	if (q->fd < 0 || (a->qmp && q->qmp < 0)) {
		fprintf(stderr, "hostpath: QEMU %s did not connect, see %s\n", a->name, log);
		return -1;
	}
	/*
	 * QEMU connects before it makes the machine; it answers once the
	 * machine, and so its RAM, exists. Then nothing needs the name.
	 */
	if (qemu_cmd(q, NULL, "outl 0xcf8 0x80000000"))
		return -1;
	if (a->qmp && qemu_qmp(q, line, sizeof(line), "{\"execute\": \"qmp_capabilities\"}"))
		return -1;
	unlink(q->ram_path);
	q->ram_path[0] = '\0';
	return 0;
}

void qemu_stop(struct qemu_proc *q)
{
	if (q->fd >= 0)
		close(q->fd);
	q->fd = -1;
	if (q->qmp >= 0)
		close(q->qmp);
	q->qmp = -1;
	if (q->pid > 0) {
		kill(q->pid, SIGTERM);
		waitpid(q->pid, NULL, 0);
	}
	q->pid = 0;
	if (q->ram && q->ram != MAP_FAILED)
		munmap(q->ram, q->ram_size);
	q->ram = NULL;
	if (q->ram_path[0])
		unlink(q->ram_path);
	q->ram_path[0] = '\0';
}

/* Take one complete reply line out of the buffer, if there is one. */
static int take_line(struct qemu_proc *q, char *line, size_t max)
{
	char *nl = memchr(q->in, '\n', q->inlen);
	size_t n;

	if (!nl)
		return 0;
	n = (size_t)(nl - q->in) + 1;
	if (n <= max) {
		memcpy(line, q->in, n - 1);
		line[n - 1] = '\0';
	} else {
		line[0] = '\0';
	}
	memmove(q->in, q->in + n, q->inlen - n);
	q->inlen -= n;
	return 1;
}

static int fill(struct qemu_proc *q, bool wait)
{
	ssize_t r;

	if (q->inlen == sizeof(q->in))
		return -1;
	r = recv(q->fd, q->in + q->inlen, sizeof(q->in) - q->inlen,
		 wait ? 0 : MSG_DONTWAIT);
	if (r > 0) {
		q->inlen += (size_t)r;
		return 1;
	}
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	return -1;
}

/* A reply line: "OK", "OK value", "FAIL ...". Asynchronous "IRQ" lines are not replies. */
static int reply(const char *line, uint64_t *val)
{
	if (!strncmp(line, "IRQ", 3))
		return 0;
	if (strncmp(line, "OK", 2)) {
		fprintf(stderr, "hostpath: qtest: %s\n", line);
		return -1;
	}
	if (val)
		*val = strtoull(line + 2, NULL, 0);
	return 1;
}

int qemu_drain(struct qemu_proc *q)
{
	char line[256];
	int r;

	while (q->pending) {
		while (take_line(q, line, sizeof(line))) {
			r = reply(line, NULL);
			if (r < 0)
				return -1;
			q->pending -= (unsigned int)r;
			if (!q->pending)
				return 0;
		}
		r = fill(q, false);
		if (r <= 0)
			return r;
	}
	return 0;
}

static int send_line(struct qemu_proc *q, const char *fmt, va_list ap)
{
	char buf[256];
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);

	if (n < 0 || (size_t)n >= sizeof(buf) - 1)
		return -1;
	buf[n++] = '\n';
	return send(q->fd, buf, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

int qemu_post(struct qemu_proc *q, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = send_line(q, fmt, ap);
	va_end(ap);
	if (!r)
		q->pending++;
	return r;
}

int qemu_cmd(struct qemu_proc *q, uint64_t *val, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = send_line(q, fmt, ap);
	va_end(ap);
	if (r)
		return -1;
	q->pending++;
	for (;;) {
		while (take_line(q, line, sizeof(line))) {
			r = reply(line, q->pending == 1 ? val : NULL);
			if (r < 0)
				return -1;
			q->pending -= (unsigned int)r;
			if (!q->pending)
				return 0;
		}
		if (fill(q, true) < 0)
			return -1;
	}
}

/* One QMP line into out; 1 got one, -1 the connection broke or timed out. */
static int qmp_line(struct qemu_proc *q, char *out, size_t outlen)
{
	struct pollfd p = { .fd = q->qmp, .events = POLLIN };
	char *nl;
	ssize_t r;
	size_t n;

	for (;;) {
		nl = memchr(q->qin, '\n', q->qinlen);
		if (nl) {
			n = (size_t)(nl - q->qin) + 1;
			if (outlen) {
				size_t k = n - 1 < outlen - 1 ? n - 1 : outlen - 1;

				memcpy(out, q->qin, k);
				out[k] = '\0';
			}
			memmove(q->qin, q->qin + n, q->qinlen - n);
			q->qinlen -= n;
			return 1;
		}
		if (q->qinlen == sizeof(q->qin))
			q->qinlen = 0;	/* a line longer than we keep: dropped */
		if (poll(&p, 1, 30000) != 1)
			return -1;
		r = recv(q->qmp, q->qin + q->qinlen, sizeof(q->qin) - q->qinlen, 0);
		if (r <= 0)
			return -1;
		q->qinlen += (size_t)r;
	}
}

int qemu_qmp(struct qemu_proc *q, char *out, size_t outlen, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	if (q->qmp < 0)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf) - 1)
		return -1;
	buf[n++] = '\n';
	if (send(q->qmp, buf, (size_t)n, MSG_NOSIGNAL) != n)
		return -1;
	for (;;) {
		if (qmp_line(q, out, outlen) < 0)
			return -1;
		/* the greeting and events are not the reply */
		if (strstr(out, "\"return\""))
			return 0;
		if (strstr(out, "\"error\"")) {
			fprintf(stderr, "hostpath: qmp: %s\n", out);
			return -1;
		}
	}
}
