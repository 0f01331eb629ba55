/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/* Growable output buffer with printf and JSON string helpers. */
#ifndef CNUAS_STRBUF_H
#define CNUAS_STRBUF_H

#include <stddef.h>

struct strbuf {
	char *s;
	size_t len, cap;
};

void sb_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_json_str(struct strbuf *b, const char *s);
void sb_free(struct strbuf *b);

#endif
