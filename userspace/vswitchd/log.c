// SPDX-License-Identifier: GPL-2.0-or-later OR MIT
/*
 * Logging: stderr by default; lines carry a "<N>" priority prefix when
 * stderr is the systemd journal (JOURNAL_STREAM set), or go to syslog(3)
 * with --syslog.
 */
#include "switch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>

static bool log_syslog, log_journal;
static int log_max = VS_LOG_INFO;

void vs_log_init(bool use_syslog, int verbose)
{
	log_syslog = use_syslog;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	log_max = verbose ? VS_LOG_DEBUG : VS_LOG_INFO;
	if (use_syslog)
		openlog("cnuas-vswitchd", LOG_PID, LOG_DAEMON);
}

void vs_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { [VS_LOG_ERR] = "error", [VS_LOG_WARN] = "warning",
					      [VS_LOG_INFO] = "info", [VS_LOG_DEBUG] = "debug" };
	char msg[1024];
	va_list ap;

	if (level > log_max)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log_syslog)
		syslog(level, "%s", msg);
	else if (log_journal)
		fprintf(stderr, "<%d>%s\n", level, msg);
	else
		fprintf(stderr, "cnuas-vswitchd: %s: %s\n", names[level] ? names[level] : "log", msg);
}
