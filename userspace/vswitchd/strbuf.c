// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
#include "strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void sb_grow(struct strbuf *b, size_t need)
{
	if (b->len + need + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;

	while (cap < b->len + need + 1)
		cap *= 2;
	b->s = realloc(b->s, cap);
	if (!b->s)
		abort();
	b->cap = cap;
}

void sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sb_grow(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void sb_json_str(struct strbuf *b, const char *s)
{
	sb_printf(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			sb_printf(b, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)	/* keep the JSON valid, even for odd bytes */
			sb_printf(b, "\\u%04x", *p);
		else
			sb_printf(b, "%c", *p);
	}
	sb_printf(b, "\"");
}

void sb_free(struct strbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}
