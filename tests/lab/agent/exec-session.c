// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * One exec session of the lab agent: receive argv, run the command in its
 * own session/process group, pump stdin/stdout/stderr between the port and
 * its pipes (with back-pressure both ways, never blocking on either side),
 * send the exit status.  A host that goes away kills the process group.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "proto.h"

#define PIPE_HIGH_WATER (256 * 1024)
#define MAX_ARGS 4096
#define MAX_ENV 256
#define START_TIMEOUT_MS 10000
#define DRAIN_IDLE_MS 200   /* after exit: stop when output is idle this long */
#define DRAIN_MAX_MS 2000   /* ...or after this, if a background job keeps writing */
#define FLUSH_TIMEOUT_MS 30000

struct session {
	int port;
	struct buf *in;
	struct buf out;       /* frames to the host */
	struct buf to_stdin;  /* bytes for the command */
	char *argv[MAX_ARGS + 1];
	char *envp[MAX_ENV + 8];
	int nargs, nenv;
	int stdin_fd, stdout_fd, stderr_fd, pidfd;
	int stdin_eof;
	pid_t pid;
	int exited, status;
};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* 1 = frame at in->p, 0 = need more bytes, -1 = garbage. */
static int frame_ready(struct buf *in, uint16_t *type, uint32_t *len)
{
	if (in->len < CNUAS_AGENT_HDR_LEN)
		return 0;
	if (!cnuas_agent_hdr_valid(in->p))
		return -1;
	*type = cnuas_agent_hdr_type(in->p);
	*len = cnuas_agent_hdr_len(in->p);
	return in->len >= CNUAS_AGENT_HDR_LEN + *len;
}

static char *dup_string(const uint8_t *p, uint32_t len)
{
	char *s = malloc(len + 1);

	if (!s)
		_exit(1);
	memcpy(s, p, len);
	s[len] = 0;
	return s;
}

/* Split the ARGV payload (NUL-terminated strings). */
static int parse_argv(struct session *s, const uint8_t *p, uint32_t len)
{
	uint32_t start = 0, i;

	if (!len || p[len - 1] != 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (p[i])
			continue;
		if (s->nargs >= MAX_ARGS)
			return -1;
		s->argv[s->nargs++] = dup_string(p + start, i - start);
		start = i + 1;
	}
	s->argv[s->nargs] = NULL;
	return s->argv[0][0] ? 0 : -1;
}

static void add_env(struct session *s, char *kv)
{
	size_t k = strcspn(kv, "=");
	int i;

	if (!kv[k] || !k) {
		free(kv);
		return;
	}
	for (i = 0; i < s->nenv; i++) {
		if (!strncmp(s->envp[i], kv, k + 1)) {
			free(s->envp[i]);
			s->envp[i] = kv;
			return;
		}
	}
	if (s->nenv < MAX_ENV + 7) {
		s->envp[s->nenv++] = kv;
		s->envp[s->nenv] = NULL;
	} else {
		free(kv);
	}
}

/* Wait for ENV* ARGV.  0 = have argv, -1 = host gone / bad input. */
static int read_request(struct session *s)
{
	long deadline = now_ms() + START_TIMEOUT_MS;

	for (;;) {
		uint16_t type;
		uint32_t len;
		int r = frame_ready(s->in, &type, &len);
		struct pollfd p = { .fd = s->port, .events = POLLIN };
		long left;

		if (r < 0)
			return -1;
		if (r > 0) {
			const uint8_t *pl = s->in->p + CNUAS_AGENT_HDR_LEN;
			int rc = 0;

			if (type == CNUAS_AGENT_ENV)
				add_env(s, dup_string(pl, len));
			else if (type == CNUAS_AGENT_ARGV)
				rc = parse_argv(s, pl, len) ? -1 : 1;
			else
				rc = -1;
			buf_consume(s->in, CNUAS_AGENT_HDR_LEN + len);
			if (rc)
				return rc > 0 ? 0 : -1;
			continue;
		}
		left = deadline - now_ms();
		if (left <= 0)
			return -1;
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if (!(p.revents & POLLIN))
			return -1; /* POLLHUP: host left */
		/* A host that left also shows POLLIN (read gives EOF). */
		if (buf_read_fd(s->in, s->port, 16384) == -2 ||
		    (p.revents & POLLHUP))
			return -1;
	}
}

static int make_pipe(int fds[2], int parent_end)
{
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	fcntl(fds[parent_end], F_SETFL, O_NONBLOCK);
	return 0;
}

static int spawn(struct session *s)
{
	int in[2], out[2], err[2];

	if (make_pipe(in, 1) || make_pipe(out, 0) || make_pipe(err, 0))
		return -1;
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		setsid();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		if (chdir("/root") < 0 && chdir("/") < 0)
			_exit(126);
		execvpe(s->argv[0], s->argv, s->envp);
		dprintf(2, "cnuas-agent: %s: %s\n", s->argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(in[0]);
	close(out[1]);
	close(err[1]);
	s->stdin_fd = in[1];
	s->stdout_fd = out[0];
	s->stderr_fd = err[0];
	s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	return 0;
}

static void reap(struct session *s, int options)
{
	int st;

	if (s->exited || waitpid(s->pid, &st, options) != s->pid)
		return;
	s->exited = 1;
	s->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	close_fd(&s->pidfd);
}

/* Frames from the host while the command runs. */
static int handle_input(struct session *s)
{
	uint16_t type;
	uint32_t len;
	int r;

	while ((r = frame_ready(s->in, &type, &len)) > 0) {
		const uint8_t *pl = s->in->p + CNUAS_AGENT_HDR_LEN;

		if (type == CNUAS_AGENT_STDIN) {
			if (s->stdin_fd >= 0 && !s->stdin_eof)
				buf_append(&s->to_stdin, pl, len);
		} else if (type == CNUAS_AGENT_STDIN_EOF) {
			s->stdin_eof = 1;
		} else {
			return -1;
		}
		buf_consume(s->in, CNUAS_AGENT_HDR_LEN + len);
	}
	if (r < 0)
		return -1;
	if (s->stdin_eof && !s->to_stdin.len)
		close_fd(&s->stdin_fd);
	return 0;
}

static int pump_output(struct session *s, int *fd, uint16_t type)
{
	uint8_t tmp[16384];
	ssize_t n = read(*fd, tmp, sizeof(tmp));

	if (n > 0) {
		buf_put_frame(&s->out, type, tmp, (uint32_t)n);
		return 1;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		close_fd(fd);
	return 0;
}

static int run(struct session *s)
{
	long exit_at = 0, last_data = 0;

	for (;;) {
		struct pollfd p[5];
		int n = 0, ip = -1, iin = -1, iout = -1, ierr = -1, ipid = -1;
		int timeout = -1, hup;

		/* Frames may already wait in s->in (e.g. read with the argv). */
		if (handle_input(s) < 0)
			return -1;
		if (s->exited) {
			long t = now_ms();

			if ((s->stdout_fd < 0 && s->stderr_fd < 0) ||
			    t - last_data >= DRAIN_IDLE_MS || t - exit_at >= DRAIN_MAX_MS)
				return 0;
			timeout = DRAIN_IDLE_MS;
		} else if (s->pidfd < 0) {
			timeout = 100; /* no pidfd: poll for the exit */
		}
		ip = n;
		p[n++] = (struct pollfd){ .fd = s->port,
			.events = (short)((s->to_stdin.len < PIPE_HIGH_WATER ? POLLIN : 0) |
					  (s->out.len ? POLLOUT : 0)) };
		if (s->stdin_fd >= 0 && s->to_stdin.len) {
			iin = n;
			p[n++] = (struct pollfd){ .fd = s->stdin_fd, .events = POLLOUT };
		}
		if (s->out.len < PIPE_HIGH_WATER) {
			if (s->stdout_fd >= 0) {
				iout = n;
				p[n++] = (struct pollfd){ .fd = s->stdout_fd, .events = POLLIN };
			}
			if (s->stderr_fd >= 0) {
				ierr = n;
				p[n++] = (struct pollfd){ .fd = s->stderr_fd, .events = POLLIN };
			}
		}
		if (s->pidfd >= 0) {
			ipid = n;
			p[n++] = (struct pollfd){ .fd = s->pidfd, .events = POLLIN };
		}
		if (poll(p, (nfds_t)n, timeout) < 0 && errno != EINTR)
			return -1;

		/* The host side: data, room, or gone. */
		hup = p[ip].revents & (POLLHUP | POLLERR);
		if (p[ip].revents & POLLIN) {
			if (buf_read_fd(s->in, s->port, 16384) == -2)
				return -1;
		}
		if (hup)
			return -1;
		if ((p[ip].revents & POLLOUT) && buf_write_fd(&s->out, s->port) < 0)
			return -1;

		if (iin >= 0 && (p[iin].revents & (POLLOUT | POLLERR | POLLHUP))) {
			if (buf_write_fd(&s->to_stdin, s->stdin_fd) < 0) {
				/* The command closed its stdin: drop the rest. */
				close_fd(&s->stdin_fd);
				s->to_stdin.len = 0;
			} else if (s->stdin_eof && !s->to_stdin.len) {
				close_fd(&s->stdin_fd);
			}
		}
		if (iout >= 0 && p[iout].revents && pump_output(s, &s->stdout_fd, CNUAS_AGENT_STDOUT))
			last_data = now_ms();
		if (ierr >= 0 && p[ierr].revents && pump_output(s, &s->stderr_fd, CNUAS_AGENT_STDERR))
			last_data = now_ms();
		if (!s->exited && (s->pidfd < 0 || (ipid >= 0 && p[ipid].revents))) {
			reap(s, WNOHANG);
			if (s->exited)
				exit_at = last_data = now_ms();
		}
	}
}

/* Send what is queued plus the exit status. */
static int finish(struct session *s)
{
	uint8_t st[4] = { (uint8_t)s->status, (uint8_t)(s->status >> 8),
			  (uint8_t)(s->status >> 16), (uint8_t)(s->status >> 24) };
	long deadline = now_ms() + FLUSH_TIMEOUT_MS;

	buf_put_frame(&s->out, CNUAS_AGENT_EXIT, st, sizeof(st));
	while (s->out.len) {
		struct pollfd p = { .fd = s->port, .events = POLLOUT };
		long left = deadline - now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) < 0)
			return -1;
		if (p.revents & (POLLHUP | POLLERR))
			return -1;
		if ((p.revents & POLLOUT) && buf_write_fd(&s->out, s->port) < 0)
			return -1;
	}
	return 0;
}

static void teardown(struct session *s)
{
	int i;

	if (s->pid > 0 && !s->exited) {
		/*
		 * A command stuck in the kernel (D state) dies late: do not
		 * block the port on it; the server reaps strays later.
		 */
		kill(-s->pid, SIGKILL);
		kill(s->pid, SIGKILL);
		for (i = 0; i < 50 && !s->exited; i++) {
			reap(s, WNOHANG);
			if (!s->exited)
				usleep(10000);
		}
	}
	close_fd(&s->stdin_fd);
	close_fd(&s->stdout_fd);
	close_fd(&s->stderr_fd);
	close_fd(&s->pidfd);
	for (i = 0; i < s->nargs; i++)
		free(s->argv[i]);
	for (i = 0; i < s->nenv; i++)
		free(s->envp[i]);
	free(s->out.p);
	free(s->to_stdin.p);
}

int exec_session(int port_fd, struct buf *in)
{
	static const char *const defaults[] = {
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "USER=root", "LOGNAME=root", "SHELL=/bin/sh",
		"TERM=dumb", "LANG=C.UTF-8",
	};
	struct session s = { .port = port_fd, .in = in, .stdin_fd = -1,
			     .stdout_fd = -1, .stderr_fd = -1, .pidfd = -1 };
	int rc = -1;
	size_t i;

	for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		add_env(&s, strdup(defaults[i]));
	if (read_request(&s) == 0 && spawn(&s) == 0 && run(&s) == 0)
		rc = finish(&s);
	teardown(&s);
	return rc;
}
