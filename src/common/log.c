/*
 * The log of log.h.
 *
 * The level and stream are process-wide globals on purpose: a log is a
 * property of the process, set once by the command from its options, and
 * threading a context through every function only to reach the log would
 * obscure the code.  Both are written before any thread starts.
 */
#include "log.h"

#include <stdarg.h>
#include <string.h>

static enum ks_log_level log_level = KS_LOG_INFO;
static FILE *log_stream;

/* Rate-limited call sites seen so far (static storage, never freed). */
static struct ks_ratelimit *ratelimit_sites;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void ks_log_set_level(enum ks_log_level level)
{
	log_level = level;
}

enum ks_log_level ks_log_get_level(void)
{
	return log_level;
}

void ks_log_set_stream(FILE *stream)
{
	log_stream = stream;
}

int ks_log_level_parse(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(name, level_names[i]) == 0)
			return i;
	return -1;
}

const char *ks_log_level_name(enum ks_log_level level)
{
	if ((unsigned)level > KS_LOG_DEBUG)
		return "?";
	return level_names[level];
}

static void log_vprint(enum ks_log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

static void log_vprint(enum ks_log_level level, const char *fmt, va_list ap)
{
	FILE *out = log_stream ? log_stream : stderr;

	fprintf(out, "kscope: %s: ", level_names[level]);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	fflush(out);
}

void ks_log(enum ks_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	log_vprint(level, fmt, ap);
	va_end(ap);
}

void ks_log_limited(struct ks_ratelimit *rl, enum ks_log_level level,
		    const char *fmt, ...)
{
	va_list ap;
	time_t now;

	if (level > log_level)
		return;
	if (!rl->registered) {
		rl->registered = 1;
		rl->next = ratelimit_sites;
		ratelimit_sites = rl;
	}
	rl->what = fmt;
	now = time(NULL);
	if (now != rl->window) {
		if (rl->dropped)
			ks_log(level, "%lu similar messages suppressed (\"%s\")",
			       rl->dropped, rl->what);
		rl->window = now;
		rl->printed = 0;
		rl->dropped = 0;
	}
	if (rl->printed >= KS_LOG_BURST) {
		rl->dropped++;
		return;
	}
	rl->printed++;
	va_start(ap, fmt);
	log_vprint(level, fmt, ap);
	va_end(ap);
}

void ks_log_flush(void)
{
	for (struct ks_ratelimit *rl = ratelimit_sites; rl; rl = rl->next) {
		if (rl->dropped)
			ks_log(KS_LOG_WARN, "%lu similar messages suppressed (\"%s\")",
			       rl->dropped, rl->what);
		rl->dropped = 0;
	}
}
