/*
 * The runtime's messages on stderr, as "kscope: LEVEL: message".  The
 * runtime runs inside someone else's program, so it says nothing in a
 * normal run, at any level up to info (the launcher passes its own
 * --log-level, info by default): only warnings about things that change
 * what is measured (no signal left to sample with, an unwritable run
 * directory) are printed, and KSCOPE_LOG_LEVEL=debug adds detail (the raw
 * file's name, signal moves, counters this machine lacks).  Never writes to stdout and
 * never touches stdio buffers, whose state belongs to the program.
 * Normal context only (it formats with vsnprintf).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rt_int.h"

void ks_rt_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	char line[512];
	int saved = errno, n;
	va_list ap;

	if (level > ks_rt.opts.log_level || level < 0 || level > KS_RT_LOG_DEBUG)
		goto out;
	n = snprintf(line, sizeof(line), "kscope: %s: ", names[level]);
	if (n < 0 || (size_t)n >= sizeof(line))
		goto out;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(line);
	line[n++] = '\n';
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, line, (size_t)n);

		if (w < 0 && errno == EINTR)
			continue;
		break;
	}
out:
	errno = saved;
}
