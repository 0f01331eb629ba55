// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* The IB switch's state file (see ib_state.h): parse, format, load, save. */
#include "ib_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADER "cnuas-ib-state 1"

bool ib_state_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > VS_VM_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

unsigned ib_state_port_of(const struct ib_state *st, const char *name)
{
	for (unsigned n = 1; n <= IB_STATE_PORTS; n++)
		if (st->peer[n][0] && !strcmp(st->peer[n], name))
			return n;
	return 0;
}

bool ib_state_sm_name(const struct ib_state *st, const char *name)
{
	for (unsigned i = 0; i < st->nsm_name; i++)
		if (!strcmp(st->sm_name[i], name))
			return true;
	return false;
}

/* A port number: decimal 1..IB_STATE_PORTS, no sign, no leading zero. */
static unsigned port_number(const char *s, size_t len)
{
	unsigned v = 0;

	if (len == 0 || len > 3 || s[0] == '0')
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v <= IB_STATE_PORTS ? v : 0;
}

/* One line [s, s + len), no newline; NULL if it is good, else why not. */
static const char *parse_line(struct ib_state *st, const char *s, size_t len)
{
	char name[VS_VM_NAME_MAX + 1];
	const char *sp;
	unsigned n;

	if (len > 5 && !memcmp(s, "port ", 5)) {
		s += 5;
		len -= 5;
		sp = memchr(s, ' ', len);
		if (!sp)
			return "'port N NAME' has no NAME";
		n = port_number(s, (size_t)(sp - s));
		if (!n)
			return "no IB port number 1..254";
		len -= (size_t)(sp + 1 - s);
		s = sp + 1;
		if (!ib_state_name_ok(s, len))
			return "not a VM name (1..64 printable bytes, no space)";
		if (st->peer[n][0])
			return "the port is named twice";
		memcpy(name, s, len);
		name[len] = '\0';
		if (ib_state_port_of(st, name))
			return "the VM has another port already";
		memcpy(st->peer[n], name, len + 1);
		return NULL;
	}
	if (len > 8 && !memcmp(s, "sm name=", 8)) {
		if (!ib_state_name_ok(s + 8, len - 8))
			return "not a VM name (1..64 printable bytes, no space)";
		if (st->nsm_name == IB_STATE_PORTS)
			return "too many SM names";
		memcpy(st->sm_name[st->nsm_name], s + 8, len - 8);
		st->sm_name[st->nsm_name][len - 8] = '\0';
		if (ib_state_sm_name(st, st->sm_name[st->nsm_name]))
			return "the SM name is there twice";
		st->nsm_name++;
		return NULL;
	}
	if (len > 3 && !memcmp(s, "sm ", 3)) {
		n = port_number(s + 3, len - 3);
		if (!n)
			return "no IB port number 1..254";
		if (st->sm_num[n])
			return "the SM port is there twice";
		st->sm_num[n] = true;
		return NULL;
	}
	return "neither 'port N NAME', 'sm N' nor 'sm name=NAME'";
}

int ib_state_parse(struct ib_state *st, const char *buf, size_t len, char *err, size_t errlen)
{
	const char *end = buf + len, *why = NULL;
	unsigned line = 1;

	memset(st, 0, sizeof(*st));
	if (len > IB_STATE_FILE_MAX) {
		snprintf(err, errlen, "larger than %u bytes", IB_STATE_FILE_MAX);
		return -1;
	}
	if (memchr(buf, '\0', len)) {
		snprintf(err, errlen, "has a NUL byte: not a state file");
		return -1;
	}
	for (const char *s = buf; s < end; line++) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));

		if (!nl) {
			why = "no newline at its end (cut short?)";
			break;
		}
		if (line == 1)
			why = (size_t)(nl - s) == strlen(HEADER) && !memcmp(s, HEADER, strlen(HEADER)) ?
			      NULL : "not '" HEADER "'";
		else
			why = parse_line(st, s, (size_t)(nl - s));
		if (why)
			break;
		s = nl + 1;
	}
	if (!why && line == 1)
		why = "empty, not '" HEADER "'";
	if (why) {
		snprintf(err, errlen, "line %u: %s", line, why);
		return -1;
	}
	return 0;
}

size_t ib_state_format(const struct ib_state *st, char *buf, size_t size)
{
	size_t n = 0;

#define PUT(...) do {							\
		int w = snprintf(buf + (n < size ? n : size), n < size ? size - n : 0, __VA_ARGS__); \
		n += w > 0 ? (size_t)w : 0;				\
	} while (0)
	PUT("%s\n", HEADER);
	for (unsigned p = 1; p <= IB_STATE_PORTS; p++)
		if (st->peer[p][0])
			PUT("port %u %s\n", p, st->peer[p]);
	for (unsigned p = 1; p <= IB_STATE_PORTS; p++)
		if (st->sm_num[p])
			PUT("sm %u\n", p);
	for (unsigned i = 0; i < st->nsm_name; i++)
		PUT("sm name=%s\n", st->sm_name[i]);
#undef PUT
	return n;
}

int ib_state_load(struct ib_state *st, const char *path, char *err, size_t errlen)
{
	char *buf, why[160];
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	memset(st, 0, sizeof(*st));
	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf = malloc(IB_STATE_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	for (;;) {
		ssize_t r = read(fd, buf + got, IB_STATE_FILE_MAX + 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			close(fd);
			free(buf);
			return -1;
		}
		got += (size_t)r;
		if (r == 0 || got > IB_STATE_FILE_MAX)
			break;
	}
	close(fd);
	if (ib_state_parse(st, buf, got, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		free(buf);
		return -1;
	}
	free(buf);
	return 0;
}

int ib_state_save(const struct ib_state *st, const char *path, char *err, size_t errlen)
{
	char tmp[4096 + 8];
	char *buf = malloc(IB_STATE_FILE_MAX);
	size_t len, off = 0;
	int fd, e;

	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	len = ib_state_format(st, buf, IB_STATE_FILE_MAX);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		free(buf);
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		goto fail;
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			goto fail;
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) < 0)
		goto fail;
	free(buf);
	return 0;
fail:
	e = errno;
	snprintf(err, errlen, "%s: %s", tmp, strerror(e));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	free(buf);
	return -1;
}
