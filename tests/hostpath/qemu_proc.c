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
		      const char *sock, const char *log)
{
	char mem[512], dev[512], qt[300], mach[64], size[32];
	const uint8_t *m = a->mac;
	int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

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
	snprintf(dev, sizeof(dev),
		 "cnuas-vnic,id=nic0,addr=0x4,socket_path=%s,"
		 "mac=%02x:%02x:%02x:%02x:%02x:%02x%s",
		 a->switch_sock, m[0], m[1], m[2], m[3], m[4], m[5],
		 a->shm_ring ? ",x-shm-ring=on" : "");
	execl(a->qemu, a->qemu, "-machine", mach, "-m", size, "-object", mem,
	      "-accel", "qtest", "-qtest", qt, "-qtest-log", "/dev/null", "-display", "none", "-nodefaults",
	      "-name", "hostpath,debug-threads=on",
	      "-device", dev, (char *)NULL);
	perror(a->qemu);
	_exit(127);
}

int qemu_start(struct qemu_proc *q, const struct qemu_args *a)
{
	char sock[256], log[256];
	struct pollfd p;
	int lfd;

	memset(q, 0, sizeof(*q));
	q->fd = -1;
	snprintf(sock, sizeof(sock), "%s/qtest-%s.sock", a->dir, a->name);
	snprintf(log, sizeof(log), "%s/qemu-%s.log", a->dir, a->name);
	if (map_ram(q, a))
		return -1;
	lfd = listen_at(sock);
	if (lfd < 0)
		return -1;
	q->pid = fork();
	if (q->pid < 0) {
		close(lfd);
		return -1;
	}
	if (!q->pid)
		exec_qemu(a, q->ram_path, sock, log);
	p.fd = lfd;
	p.events = POLLIN;
	if (poll(&p, 1, 20000) == 1)
		q->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(lfd);
	unlink(sock);
	if (q->fd < 0) {
		fprintf(stderr, "hostpath: QEMU %s did not connect, see %s\n", a->name, log);
		return -1;
	}
	/*
	 * QEMU connects before it makes the machine; it answers once the
	 * machine, and so its RAM, exists. Then nothing needs the name.
	 */
	if (qemu_cmd(q, NULL, "outl 0xcf8 0x80000000"))
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
