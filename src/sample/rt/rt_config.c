/*
 * The runtime's options: the KSCOPE_* environment variables that the
 * `kscope sample` launcher sets before it execs the program.  The launcher
 * has already checked them, but the runtime can also be preloaded by hand,
 * so every value is parsed defensively: anything unreadable falls back to
 * its default, and nothing here can fail the program.
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
#define KS_RT_MAX_SECONDS 1e9

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

/* Seconds (a non-negative decimal) as ns; def if s is not one. */
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
	if (errno || *end || end == tmp || !isfinite(v) || v < 0 || v > KS_RT_MAX_SECONDS)
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

int ks_rt_parse_tids(const char *s, struct ks_rt_opts *o)
{
	size_t n = 0;

	o->ntids = 0;
	if (!s)
		return 0;
	while (*s) {
		char *end;
		unsigned long lo, hi;

		while (*s == ' ' || *s == ',')
			s++;
		if (!*s)
			break;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		lo = strtoul(s, &end, 10);
		hi = lo;
		s = end;
		if (*s == '-') {
			s++;
			if (*s < '0' || *s > '9')
				return -EINVAL;
			hi = strtoul(s, &end, 10);
			s = end;
		}
		if (*s && *s != ',' && *s != ' ')
			return -EINVAL;
		if (hi < lo || hi > UINT32_MAX || n == KS_RT_MAX_TIDRANGES)
			return -EINVAL;
		o->tids[n].lo = (uint32_t)lo;
		o->tids[n].hi = (uint32_t)hi;
		n++;
	}
	o->ntids = n;
	return 0;
}

/* One "clock:delay:duration:cycles" item of KSCOPE_PERIODS. */
static int parse_period(const char *s, size_t len, struct ks_rt_period *p)
{
	const char *f[4];
	size_t flen[4], nf = 0;
	const char *start = s, *end = s + len;

	for (const char *q = s; q <= end; q++) {
		if (q == end || *q == ':') {
			if (nf == 4)
				return -EINVAL;
			f[nf] = start;
			flen[nf] = (size_t)(q - start);
			nf++;
			start = q + 1;
		}
	}
	if (nf != 4)
		return -EINVAL;
	if (flen[0] == 8 && strncmp(f[0], "realtime", 8) == 0)
		p->clock = KS_RT_PERIOD_REAL;
	else if (flen[0] == 7 && strncmp(f[0], "cputime", 7) == 0)
		p->clock = KS_RT_PERIOD_CPU;
	else
		return -EINVAL;
	if (!parse_seconds(f[1], flen[1], &p->delay_ns) ||
	    !parse_seconds(f[2], flen[2], &p->dur_ns) || p->dur_ns == 0)
		return -EINVAL;
	{
		char tmp[24], *e;
		unsigned long long c;

		if (flen[3] == 0 || flen[3] >= sizeof(tmp))
			return -EINVAL;
		memcpy(tmp, f[3], flen[3]);
		tmp[flen[3]] = '\0';
		errno = 0;
		c = strtoull(tmp, &e, 10);
		if (errno || *e || tmp[0] == '-')
			return -EINVAL;
		p->cycles = c;
	}
	return 0;
}

int ks_rt_parse_periods(const char *s, struct ks_rt_opts *o)
{
	size_t n = 0;

	o->nperiods = 0;
	if (!s)
		return 0;
	while (*s) {
		size_t len;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		len = strcspn(s, " \t");
		if (n == KS_RT_MAX_PERIODS || parse_period(s, len, &o->periods[n]) < 0) {
			o->nperiods = 0;
			return -EINVAL;
		}
		n++;
		s += len;
	}
	o->nperiods = n;
	return 0;
}

static void parse_counters(const char *s, struct ks_rt_opts *o)
{
	o->ncounters = 0;
	while (s && *s && o->ncounters < KS_RAW_MAX_COUNTERS) {
		size_t len;

		while (*s == ',' || *s == ' ')
			s++;
		len = strcspn(s, ", ");
		if (len == 0)
			break;
		if (len < sizeof(o->counters[0])) {
			memcpy(o->counters[o->ncounters], s, len);
			o->counters[o->ncounters][len] = '\0';
			o->ncounters++;
		}
		s += len;
	}
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

	memset(o, 0, sizeof(*o));
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
	if (ks_rt_parse_tids(getenv("KSCOPE_TIDS"), o) < 0)
		o->ntids = 0;
	if (ks_rt_parse_periods(getenv("KSCOPE_PERIODS"), o) < 0)
		o->nperiods = 0;
	s = getenv("KSCOPE_UNWIND");
	o->unwind_fp = s && strcmp(s, "fp") == 0;
	parse_counters(getenv("KSCOPE_COUNTERS"), o);
	o->buffer_samples = parse_u32(getenv("KSCOPE_BUFFER_SAMPLES"),
				      KS_RT_DEFAULT_BUFFER_SAMPLES, UINT32_MAX);
	if (o->buffer_samples < KS_RT_MIN_BUFFER_SAMPLES)
		o->buffer_samples = KS_RT_MIN_BUFFER_SAMPLES;
	if (o->buffer_samples > KS_RT_MAX_BUFFER_SAMPLES)
		o->buffer_samples = KS_RT_MAX_BUFFER_SAMPLES;
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
	o->rank = parse_rank();
}
