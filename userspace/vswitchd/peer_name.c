// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* The VM name of a port's peer process (see peer_name.h). */
#include "peer_name.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Copy [s, e) into out, QEMU's ",," unescaped, unprintable bytes as '?'. */
static bool copy_name(const char *s, const char *e, char *out, size_t outsz)
{
	size_t n = 0;

	if (outsz < 2)
		return false;
	if (outsz > VS_VM_NAME_MAX + 1)
		outsz = VS_VM_NAME_MAX + 1;
	while (s < e && n + 1 < outsz) {
		unsigned char c = (unsigned char)*s++;

		if (c == ',')
			s++;	/* the second comma of an escaped ",," */
		out[n++] = c > 0x20 && c < 0x7f ? (char)c : '?';
	}
	out[n] = '\0';
	return n > 0;
}

/*
 * -name's value: "NAME[,key=value...]" or "guest=NAME,...". A comma ends
 * an element unless doubled.
 */
static bool name_from_opt(const char *v, const char *end, char *out, size_t outsz)
{
	const char *el = v;

	for (const char *s = v; s <= end; s++) {
		if (s + 1 < end && s[0] == ',' && s[1] == ',') {
			s++;
			continue;
		}
		if (s < end && *s != ',')
			continue;
		/* [el, s) is one element */
		if (s - el > 6 && !memcmp(el, "guest=", 6))
			return copy_name(el + 6, s, out, outsz);
		if (el == v && s > el && !memchr(el, '=', (size_t)(s - el)))
			return copy_name(el, s, out, outsz);
		el = s + 1;
	}
	return false;
}

bool vm_name_from_cmdline(const char *argv, size_t len, char *out, size_t outsz)
{
	const char *end = argv + len, *val = NULL, *val_end = NULL;
	bool next_is_name = false;

	/* QEMU takes the last -name; so do we */
	for (const char *a = argv; a < end;) {
		const char *z = memchr(a, '\0', (size_t)(end - a));

		if (!z)
			z = end;	/* cut short at VS_CMDLINE_MAX */
		if (next_is_name) {
			val = a;
			val_end = z;
			next_is_name = false;
		} else if ((z - a == 5 && !memcmp(a, "-name", 5)) ||
			   (z - a == 6 && !memcmp(a, "--name", 6))) {
			next_is_name = true;
		}
		a = z + 1;
	}
	return val && name_from_opt(val, val_end, out, outsz);
}

char *peer_cmdline(pid_t pid, size_t *len)
{
	char path[40];
	char *buf;
	size_t got = 0;
	int fd;

	if (pid <= 0)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	buf = malloc(VS_CMDLINE_MAX);
	if (!buf) {
		close(fd);
		return NULL;
	}
	while (got < VS_CMDLINE_MAX) {
		ssize_t n = read(fd, buf + got, VS_CMDLINE_MAX - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;
}
