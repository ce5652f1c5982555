/*
 * The runtime's options: the KSCOPE_* environment variables that the
 * `kscope sample` launcher sets before it execs the program.  The launcher
 * has already checked them, but the runtime can also be preloaded by hand,
 * so every value is parsed defensively: anything unreadable falls back to
 * its default, and nothing here can fail the program.  The thread list,
 * the periods and the counters are parsed by spec.c, the same code that
 * checks `kscope sample`'s options, so the two agree on every limit.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "rt_int.h"

#define KS_RT_DEFAULT_CPUTIME_FREQ 300
#define KS_RT_DEFAULT_BUFFER_SAMPLES 1024
#define KS_RT_MAX_FREQ 100000         /* 10 us between samples */
#define KS_RT_MIN_BUFFER_SAMPLES 16
#define KS_RT_MAX_BUFFER_SAMPLES (1u << 20) /* keeps a chunk under 4 GiB */

/* An unsigned integer in [0, max], or def if s is not one. */
static uint32_t parse_u32(const char *s, uint32_t def, uint32_t max)
{
	char *end;
	unsigned long v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || s[0] == '-' || v > max)
		return def;
	return (uint32_t)v;
}

/* Seconds (a non-negative decimal) as ns; false if s is not one. */
static bool parse_seconds(const char *s, size_t len, uint64_t *ns)
{
	char tmp[64], *end;
	double v;

	if (len == 0 || len >= sizeof(tmp))
		return false;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	errno = 0;
	v = strtod(tmp, &end);
	if (errno || *end || end == tmp || !isfinite(v) || v < 0 || v > KS_SPEC_MAX_SECONDS)
		return false;
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return true;
}

bool ks_rt_tid_selected(const struct ks_rt_opts *o, uint32_t index)
{
	if (o->ntids == 0)
		return true;
	for (size_t i = 0; i < o->ntids; i++)
		if (index >= o->tids[i].lo && index <= o->tids[i].hi)
			return true;
	return false;
}

/* A setting spec.c refuses is left out (the checker of `kscope sample`
 * refuses the same text, so only a runtime preloaded by hand gets here),
 * and the runtime says so at warn level. */
static void spec_warn(const char *var, const char *why)
{
	ks_rt_log(KS_RT_LOG_WARN, "%s ignored: %s", var, why);
}

static int32_t parse_rank(void)
{
	static const char *const vars[] = {
		"KSCOPE_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		uint32_t r = parse_u32(getenv(vars[i]), UINT32_MAX, INT32_MAX);

		if (r != UINT32_MAX)
			return (int32_t)r;
	}
	return -1;
}

void ks_rt_opts_from_env(struct ks_rt_opts *o)
{
	const char *s;
	char why[256];
	size_t n;

	memset(o, 0, sizeof(*o));
	/* First: the parsers below may log. */
	o->log_level = KS_RT_LOG_WARN;
	s = getenv("KSCOPE_LOG_LEVEL");
	if (s) {
		if (strcasecmp(s, "error") == 0)
			o->log_level = KS_RT_LOG_ERROR;
		else if (strcasecmp(s, "info") == 0)
			o->log_level = KS_RT_LOG_INFO;
		else if (strcasecmp(s, "debug") == 0)
			o->log_level = KS_RT_LOG_DEBUG;
	}
	s = getenv("KSCOPE_RUN_DIR");
	if (s && *s && strlen(s) < sizeof(o->run_dir)) {
		/* Absolute, so a program that changes directory before it
		 * forks still writes its children's files there. */
		char cwd[sizeof(o->run_dir)];
		size_t clen;

		if (s[0] == '/') {
			strcpy(o->run_dir, s);
		} else if (getcwd(cwd, sizeof(cwd)) &&
			   (clen = strlen(cwd)) + 1 + strlen(s) < sizeof(o->run_dir)) {
			memcpy(o->run_dir, cwd, clen);
			o->run_dir[clen] = '/';
			strcpy(o->run_dir + clen + 1, s);
		}
	}
	o->cputime_freq = parse_u32(getenv("KSCOPE_CPUTIME_FREQ"),
				    KS_RT_DEFAULT_CPUTIME_FREQ, KS_RT_MAX_FREQ);
	o->realtime_freq = parse_u32(getenv("KSCOPE_REALTIME_FREQ"), 0, KS_RT_MAX_FREQ);
	s = getenv("KSCOPE_DELAY");
	if (!s || !parse_seconds(s, strlen(s), &o->delay_ns))
		o->delay_ns = 0;
	s = getenv("KSCOPE_DURATION");
	if (!s || !parse_seconds(s, strlen(s), &o->duration_ns))
		o->duration_ns = 0;
	if (ks_spec_parse_tids(getenv("KSCOPE_TIDS"), o->tids, &o->ntids, why,
			       sizeof(why)) < 0)
		spec_warn("KSCOPE_TIDS", why);
	if (ks_spec_parse_periods(getenv("KSCOPE_PERIODS"), o->periods, &o->nperiods, why,
				  sizeof(why)) < 0)
		spec_warn("KSCOPE_PERIODS", why);
	else if (ks_spec_check_windows(o->periods, o->nperiods, o->duration_ns, why,
				       sizeof(why)) < 0)
		/* Kept: what the user asked for is nothing, and gets it. */
		ks_rt_log(KS_RT_LOG_WARN, "KSCOPE_PERIODS: %s", why);
	s = getenv("KSCOPE_UNWIND");
	o->unwind_fp = s && strcmp(s, "fp") == 0;
	if (ks_spec_parse_counters(getenv("KSCOPE_COUNTERS"), o->counters, &n, why,
				   sizeof(why)) < 0)
		spec_warn("KSCOPE_COUNTERS", why);
	o->ncounters = (uint32_t)n;
	o->buffer_samples = parse_u32(getenv("KSCOPE_BUFFER_SAMPLES"),
				      KS_RT_DEFAULT_BUFFER_SAMPLES, UINT32_MAX);
	if (o->buffer_samples < KS_RT_MIN_BUFFER_SAMPLES)
		o->buffer_samples = KS_RT_MIN_BUFFER_SAMPLES;
	if (o->buffer_samples > KS_RT_MAX_BUFFER_SAMPLES)
		o->buffer_samples = KS_RT_MAX_BUFFER_SAMPLES;
	o->rank = parse_rank();
}
