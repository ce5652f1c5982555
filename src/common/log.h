/*
 * kscope's log: four levels (error, warn, info, debug) written to stderr as
 * "kscope: <level>: <message>".
 *
 * The level comes from --log-level or KSCOPE_LOG_LEVEL (option tables in the
 * commands).  A message logged in a loop is rate-limited through
 * KS_LOG_RATELIMITED: each call site prints at most KS_LOG_BURST messages per
 * second and then one line saying how many it suppressed.  A normal run logs
 * nothing at error level: errors are for runs that fail.
 */
#ifndef KS_LOG_H
#define KS_LOG_H

#include <stdio.h>
#include <time.h>

enum ks_log_level {
	KS_LOG_ERROR = 0,
	KS_LOG_WARN = 1,
	KS_LOG_INFO = 2,
	KS_LOG_DEBUG = 3,
};

#define KS_LOG_BURST 5

/* Per-call-site state of a rate-limited message. */
struct ks_ratelimit {
	time_t window;          /* second the current burst started */
	unsigned printed;       /* messages printed in this window */
	unsigned long dropped;  /* messages suppressed since the last report */
	const char *what;       /* format of the last message, for the report */
	struct ks_ratelimit *next; /* registered sites, for ks_log_flush */
	int registered;
};

void ks_log_set_level(enum ks_log_level level);
enum ks_log_level ks_log_get_level(void);
/* Redirects output (tests); NULL means stderr. */
void ks_log_set_stream(FILE *stream);
/* Parses "error", "warn", "info" or "debug"; returns -1 otherwise. */
int ks_log_level_parse(const char *name);
const char *ks_log_level_name(enum ks_log_level level);

/* Reports every rate-limited site's pending suppressed count; called at
 * the end of a command so that no suppressed message goes unmentioned. */
void ks_log_flush(void);

void ks_log(enum ks_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ks_log_limited(struct ks_ratelimit *rl, enum ks_log_level level,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define ks_error(...) ks_log(KS_LOG_ERROR, __VA_ARGS__)
#define ks_warn(...)  ks_log(KS_LOG_WARN, __VA_ARGS__)
#define ks_info(...)  ks_log(KS_LOG_INFO, __VA_ARGS__)
#define ks_debug(...) ks_log(KS_LOG_DEBUG, __VA_ARGS__)

/* A message that may repeat in a loop: limited per call site. */
#define KS_LOG_RATELIMITED(level, ...)                                  \
	do {                                                            \
		static struct ks_ratelimit ks_rl_site_;                 \
		ks_log_limited(&ks_rl_site_, (level), __VA_ARGS__);     \
	} while (0)

#endif
