// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* Socket helpers: listening unix sockets that replace only stale files. */
#include "switch.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Remove a leftover socket file, but never a live one (another switch) nor
 * something that is not a socket.
 */
static int clear_stale(const char *path, int type, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : (snprintf(err, errlen, "%s: %s", path, strerror(errno)), -1);
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket", path);
		return -1;
	}
	if (type != SOCK_DGRAM) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			snprintf(err, errlen, "socket: %s", strerror(errno));
			return -1;
		}
		memcpy(a.sun_path, path, strlen(path));
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
			close(fd);
			snprintf(err, errlen, "%s is in use by a running process", path);
			return -1;
		}
		close(fd);
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		snprintf(err, errlen, "unlink %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The socket file's mode comes from the umask at bind() time; fchmod() on
 * a socket does not reach its file, and chmod() after bind() leaves a
 * window. The daemon is single-threaded, so a umask around bind() is safe.
 */
int unix_listen(const char *path, int type, mode_t mode, char *err, size_t errlen)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	mode_t old_mask;
	int fd, rc;

	if (!path[0] || strlen(path) >= sizeof(a.sun_path)) {
		snprintf(err, errlen, "socket path '%s' is empty or longer than %zu bytes", path,
			 sizeof(a.sun_path) - 1);
		return -1;
	}
	if (clear_stale(path, type, err, errlen) < 0)
		return -1;
	memcpy(a.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	old_mask = umask(~mode & 0777);
	rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
	umask(old_mask);
	if (rc < 0) {
		snprintf(err, errlen, "bind %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (type != SOCK_DGRAM && listen(fd, 64) < 0) {
		snprintf(err, errlen, "listen %s: %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return -1;
	}
	return fd;
}

/* Whether PATH's directory is REF's directory (after resolving links). */
bool same_dir(const char *path, const char *ref)
{
	char a[PATH_MAX], b[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];

	snprintf(a, sizeof(a), "%s", path);
	snprintf(b, sizeof(b), "%s", ref);
	if (!realpath(dirname(a), ra) || !realpath(dirname(b), rb))
		return false;
	return !strcmp(ra, rb);
}
