// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/* The given MACs of a port's peer QEMU (see peer_macs.h). */
#include "peer_macs.h"

#include <string.h>
#include <sys/un.h>

#define VNIC_DRIVER "cnuas-vnic"

/* One value as read: its bytes, or why it cannot be compared. */
struct field {
	char s[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	size_t n;
	bool seen, twice, unreadable;	/* unreadable: too long or an escape we do not take */
};

/* The three properties of one -device that matter. */
struct dev {
	struct field driver, sock, mac;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool mac_parse(const char *s, size_t n, uint64_t *key)
{
	uint64_t k = 0;

	if (n != 17)
		return false;
	for (unsigned i = 0; i < 6; i++) {
		int hi = hexval(s[3 * i]), lo = hexval(s[3 * i + 1]);

		if (hi < 0 || lo < 0 || (i < 5 && s[3 * i + 2] != ':'))
			return false;
		k = k << 8 | (uint64_t)(hi << 4 | lo);
	}
	if (k >> 40 & 1)	/* a group address is no station's */
		return false;
	*key = k | 1ull << 48;
	return true;
}

static void field_begin(struct field *f)
{
	f->twice |= f->seen;
	f->seen = true;
	f->n = 0;
	f->unreadable = false;
}

static void field_put(struct field *f, char c)
{
	if (f->n + 1 >= sizeof(f->s))
		f->unreadable = true;
	else
		f->s[f->n++] = c;
}

static struct field *dev_field(struct dev *d, const char *k, size_t n)
{
	if (n == 6 && !memcmp(k, "driver", 6))
		return &d->driver;
	if (n == 11 && !memcmp(k, "socket_path", 11))
		return &d->sock;
	if (n == 3 && !memcmp(k, "mac", 3))
		return &d->mac;
	return NULL;
}

/*
 * QEMU's "driver,key=value,..." form: a comma ends an element unless
 * doubled; the first element without '=' is the driver.
 */
static void parse_keyval(const char *v, const char *end, struct dev *d)
{
	bool first = true;

	while (v < end) {
		const char *k = v, *eq = NULL;
		struct field *f;

		/* the key runs to '=' or the end of the element (keys have no commas) */
		while (v < end && *v != '=' && *v != ',')
			v++;
		if (v < end && *v == '=')
			eq = v++;
		if (!eq && first)
			f = &d->driver, v = k;
		else
			f = eq ? dev_field(d, k, (size_t)(eq - k)) : NULL;
		first = false;
		if (f)
			field_begin(f);
		if (!eq && f != &d->driver) {	/* a bare flag: nothing to read */
			if (v < end)
				v++;
			continue;
		}
		while (v < end) {
			if (*v == ',' && (v + 1 >= end || v[1] != ','))
				break;
			if (*v == ',')
				v++;	/* the second comma of an escaped ",," */
			if (f)
				field_put(f, *v);
			v++;
		}
		if (v < end)
			v++;	/* the element's comma */
	}
}

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r'))
		s++;
	return s;
}

/*
 * A JSON string at s (after its opening quote) into f (may be NULL);
 * returns what follows it, NULL if it does not end. Escapes other than
 * \" \\ \/ make the value unreadable (a path spelled with \u is not ours
 * to guess at).
 */
static const char *json_string(const char *s, const char *end, struct field *f)
{
	while (s < end && *s != '"') {
		char c = *s++;

		if (c == '\\') {
			if (s >= end)
				return NULL;
			c = *s++;
			if (c != '"' && c != '\\' && c != '/') {
				if (f)
					f->unreadable = true;
				if (c == 'u')
					s += s + 4 <= end ? 4 : end - s;
				continue;
			}
		}
		if (f)
			field_put(f, c);
	}
	return s < end ? s + 1 : NULL;
}

/* Skip one JSON value that is not a string (nested, a number, a literal). */
static const char *json_skip(const char *s, const char *end)
{
	unsigned depth = 0;

	while (s < end) {
		char c = *s;

		if (c == '"') {
			s = json_string(s + 1, end, NULL);
			if (!s)
				return NULL;
			continue;
		}
		if (c == '{' || c == '[') {
			if (++depth > 32)
				return NULL;
		} else if (c == '}' || c == ']') {
			if (!depth)
				return s;	/* the end of the enclosing object */
			depth--;
		} else if (c == ',' && !depth) {
			return s;
		}
		s++;
	}
	return NULL;
}

/* The JSON form {"key": value, ...}; false if it is not one. */
static bool parse_json(const char *s, const char *end, struct dev *d)
{
	s = skip_ws(s + 1, end);	/* past '{' */
	if (s < end && *s == '}')
		return true;
	while (s < end) {
		const char *k;
		struct field *f;

		if (*s != '"')
			return false;
		k = ++s;
		s = json_string(s, end, NULL);
		if (!s)
			return false;
		f = dev_field(d, k, (size_t)(s - 1 - k));
		s = skip_ws(s, end);
		if (s >= end || *s != ':')
			return false;
		s = skip_ws(s + 1, end);
		if (s < end && *s == '"') {
			if (f)
				field_begin(f);
			s = json_string(s + 1, end, f);
		} else {
			if (f)	/* one of ours, not a string */
				return false;
			s = json_skip(s, end);
		}
		if (!s)
			return false;
		s = skip_ws(s, end);
		if (s < end && *s == '}')
			return true;
		if (s >= end || *s != ',')
			return false;
		s = skip_ws(s + 1, end);
	}
	return false;
}

static bool field_is(const struct field *f, const char *s)
{
	return f->seen && !f->unreadable && f->n == strlen(s) && !memcmp(f->s, s, f->n);
}

/* One -device value: 1 and *key for one of ours, 0 for another, -1: give up. */
static int device_mac(const char *v, const char *end, const char *sock, uint64_t *key)
{
	struct dev d;

	memset(&d, 0, sizeof(d));
	if (v < end && *v == '{') {
		if (!parse_json(v, end, &d))
			return memmem(v, (size_t)(end - v), VNIC_DRIVER, strlen(VNIC_DRIVER)) ? -1 : 0;
	} else {
		parse_keyval(v, end, &d);
	}
	if (d.driver.twice || d.driver.unreadable)
		return -1;
	if (!field_is(&d.driver, VNIC_DRIVER))
		return 0;
	if (d.sock.twice || d.sock.unreadable)
		return -1;
	if (!field_is(&d.sock, sock))
		return 0;
	if (d.mac.twice || !d.mac.seen || d.mac.unreadable || !mac_parse(d.mac.s, d.mac.n, key))
		return -1;
	return 1;
}

unsigned vnic_macs_from_cmdline(const char *argv, size_t len, const char *sock,
				uint64_t *keys, unsigned max)
{
	const char *end = argv + len;
	bool next_is_dev = false;
	unsigned n = 0;

	if (!sock || !*sock)
		return 0;
	for (const char *a = argv; a < end;) {
		const char *z = memchr(a, '\0', (size_t)(end - a));

		if (!z)
			return 0;	/* cut short: the rest may hold one of ours */
		if (next_is_dev) {
			uint64_t key;
			int r = device_mac(a, z, sock, &key);

			if (r < 0 || (r > 0 && n == max))
				return 0;
			if (r > 0) {
				bool dup = false;

				for (unsigned i = 0; i < n; i++)
					dup |= keys[i] == key;
				if (!dup)
					keys[n++] = key;
			}
			next_is_dev = false;
		} else {
			next_is_dev = (z - a == 7 && !memcmp(a, "-device", 7)) ||
				      (z - a == 8 && !memcmp(a, "--device", 8));
		}
		a = z + 1;
	}
	return n;
}
