/*
 * The parsers of the sampling settings the runtime reads from KSCOPE_TIDS,
 * KSCOPE_PERIODS and KSCOPE_COUNTERS (spec.h).  Compiled into kscope (its
 * checker, cmd_sample.c) and into libkscope.so (rt_config.c), so both
 * accept exactly the same texts with the same limits.
 */
#include "spec.h"

#include "counters.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Writes the reason into why and returns -EINVAL. */
__attribute__((format(printf, 3, 4)))
static int bad(char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (size) {
		va_start(ap, fmt);
		vsnprintf(why, size, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A decimal index at *s (digits only), at most KS_SPEC_MAX_TID_INDEX. */
static int tid_index(const char **s, uint32_t *v, char *why, size_t size)
{
	const char *p = *s;
	uint64_t x = 0;
	bool big = false;

	if (*p < '0' || *p > '9')
		return bad(why, size, "'%.40s' is not a thread index; accepted: "
			   "indexes and ranges separated by commas, e.g. 0,2-4", p);
	for (; *p >= '0' && *p <= '9'; p++) {
		x = x * 10 + (uint64_t)(*p - '0');
		if (x > KS_SPEC_MAX_TID_INDEX)
			big = true, x = (uint64_t)KS_SPEC_MAX_TID_INDEX + 1;
	}
	if (big)
		return bad(why, size, "thread index '%.*s' is too large; accepted: "
			   "0 to %lu", (int)(p - *s > 40 ? 40 : p - *s), *s,
			   (unsigned long)KS_SPEC_MAX_TID_INDEX);
	*v = (uint32_t)x;
	*s = p;
	return 0;
}

int ks_spec_parse_tids(const char *s, struct ks_spec_tidrange *out, size_t *n,
		       char *why, size_t why_size)
{
	size_t k = 0;
	int rc;

	*n = 0;
	if (!s || !*s)
		return 0;
	for (;;) {
		struct ks_spec_tidrange r;
		const char *item = s;

		if ((rc = tid_index(&s, &r.lo, why, why_size)))
			return rc;
		r.hi = r.lo;
		if (*s == '-') {
			s++;
			if ((rc = tid_index(&s, &r.hi, why, why_size)))
				return rc;
			if (r.hi < r.lo)
				return bad(why, why_size, "'%.*s' is not a range: it ends "
					   "before it starts; accepted: LOW-HIGH with "
					   "LOW <= HIGH", (int)(s - item), item);
		}
		if (*s && *s != ',')
			return bad(why, why_size, "'%.40s' is not a thread list; "
				   "accepted: indexes and ranges separated by "
				   "commas, e.g. 0,2-4", item);
		if (k == KS_SPEC_MAX_TIDRANGES)
			return bad(why, why_size, "more than %d indexes and ranges; "
				   "accepted: at most %d (join neighbours into "
				   "ranges, e.g. 0-7)", KS_SPEC_MAX_TIDRANGES,
				   KS_SPEC_MAX_TIDRANGES);
		out[k++] = r;
		if (!*s)
			break;
		s++; /* the comma: an item must follow */
	}
	*n = k;
	return 0;
}

/* Seconds: a finite decimal from 0 to KS_SPEC_MAX_SECONDS, as ns. */
static int seconds(const char *f, size_t len, const char *what, uint64_t *ns,
		   char *why, size_t size)
{
	char tmp[64], *end;
	double v;

	if (len == 0 || len >= sizeof(tmp))
		goto no;
	memcpy(tmp, f, len);
	tmp[len] = '\0';
	/* Decimals only: strtod would also take "inf", "nan" and hex. */
	for (size_t i = 0; i < len; i++)
		if (!strchr("0123456789.eE+-", tmp[i]))
			goto no;
	errno = 0;
	v = strtod(tmp, &end);
	if (errno == ERANGE && v != 0)
		goto big;
	if (*end || end == tmp || !isfinite(v))
		goto no;
	if (v < 0)
		return bad(why, size, "the %s '%s' is negative; accepted: 0 to %.0f "
			   "seconds", what, tmp, KS_SPEC_MAX_SECONDS);
	if (v > KS_SPEC_MAX_SECONDS)
		goto big;
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
big:
	return bad(why, size, "the %s '%s' is too long; accepted: 0 to %.0f seconds",
		   what, tmp, KS_SPEC_MAX_SECONDS);
no:
	return bad(why, size, "the %s '%.*s' is not a number of seconds; accepted: "
		   "a decimal from 0 to %.0f", what, (int)(len > 40 ? 40 : len), f,
		   KS_SPEC_MAX_SECONDS);
}

const struct ks_spec_clock ks_spec_clocks[] = {
	{ "realtime", CLOCK_REALTIME, 0 },
	{ "monotonic", CLOCK_MONOTONIC, 0 },
	{ "monotonic_raw", CLOCK_MONOTONIC_RAW, 0 },
	{ "realtime_coarse", CLOCK_REALTIME_COARSE, 0 },
	{ "monotonic_coarse", CLOCK_MONOTONIC_COARSE, 0 },
	{ "boottime", CLOCK_BOOTTIME, 0 },
	{ "tai", CLOCK_TAI, 0 },
	{ "process_cputime", CLOCK_PROCESS_CPUTIME_ID, 1 },
	{ "cputime", CLOCK_PROCESS_CPUTIME_ID, 1 },
};
const size_t ks_spec_nclocks = sizeof(ks_spec_clocks) / sizeof(ks_spec_clocks[0]);

#define CLOCK_NAMES "realtime, monotonic, monotonic_raw, realtime_coarse, " \
	"monotonic_coarse, boottime, tai, process_cputime or cputime (the same)"

uint64_t ks_spec_period_len(const struct ks_spec_period *p)
{
	uint64_t cycle = p->delay_ns + p->dur_ns; /* each at most 1e18 */

	if (p->cycles == 0 || p->cycles > UINT64_MAX / cycle)
		return UINT64_MAX;
	return cycle * p->cycles;
}

/* One "clock:delay:duration:cycles" item. */
static int parse_period(const char *s, size_t len, struct ks_spec_period *p,
			char *why, size_t size)
{
	const char *f[4];
	size_t flen[4], nf = 0;
	const char *start = s, *end = s + len;
	int rc;

	for (const char *q = s; q <= end; q++) {
		if (q == end || *q == ':') {
			if (nf == 4)
				goto form;
			f[nf] = start;
			flen[nf] = (size_t)(q - start);
			nf++;
			start = q + 1;
		}
	}
	if (nf != 4)
		goto form;
	p->clock = -1;
	for (size_t i = 0; i < ks_spec_nclocks; i++)
		if (strlen(ks_spec_clocks[i].name) == flen[0] &&
		    strncmp(f[0], ks_spec_clocks[i].name, flen[0]) == 0)
			p->clock = (int)i;
	if (p->clock < 0 && flen[0] == 14 && strncmp(f[0], "thread_cputime", 14) == 0)
		return bad(why, size, "'%.*s': the clock thread_cputime is not supported: "
			   "windows open and close for the whole process, and each "
			   "thread has its own CPU time; accepted: " CLOCK_NAMES,
			   (int)(len > 60 ? 60 : len), s);
	if (p->clock < 0)
		return bad(why, size, "'%.*s': unknown clock '%.*s'; accepted: " CLOCK_NAMES,
			   (int)(len > 60 ? 60 : len), s, (int)(flen[0] > 30 ? 30 : flen[0]),
			   f[0]);
	if ((rc = seconds(f[1], flen[1], "delay", &p->delay_ns, why, size)) ||
	    (rc = seconds(f[2], flen[2], "duration", &p->dur_ns, why, size)))
		return rc;
	if (p->dur_ns == 0)
		return bad(why, size, "'%.*s': the duration is 0; accepted: a "
			   "duration above 0 seconds", (int)(len > 60 ? 60 : len), s);
	{
		uint64_t c = 0;

		if (flen[3] == 0)
			goto form;
		for (size_t i = 0; i < flen[3]; i++) {
			unsigned d = (unsigned)(f[3][i] - '0');

			if (d > 9)
				goto form;
			if (c > (UINT64_MAX - d) / 10)
				return bad(why, size, "the cycles '%.*s' are too many; "
					   "accepted: 0 (forever) to %llu",
					   (int)(flen[3] > 40 ? 40 : flen[3]), f[3],
					   (unsigned long long)UINT64_MAX);
			c = c * 10 + d;
		}
		p->cycles = c;
	}
	return 0;
form:
	return bad(why, size, "'%.*s' is not a period; accepted: "
		   "clock:delay:duration:cycles with clock " CLOCK_NAMES ", "
		   "delay >= 0 and duration > 0 in seconds (at most %.0f), cycles >= 0 "
		   "(0 repeats forever), e.g. realtime:10:1:5",
		   (int)(len > 60 ? 60 : len), s, KS_SPEC_MAX_SECONDS);
}

int ks_spec_parse_periods(const char *s, struct ks_spec_period *out, size_t *n,
			  char *why, size_t why_size)
{
	size_t k = 0;
	int rc;

	*n = 0;
	if (!s)
		return 0;
	for (;;) {
		size_t len;

		while (*s == ' ' || *s == '\t')
			s++;
		if (!*s)
			break;
		len = strcspn(s, " \t");
		if (k == KS_SPEC_MAX_PERIODS)
			return bad(why, why_size, "more than %d periods; accepted: at "
				   "most %d", KS_SPEC_MAX_PERIODS, KS_SPEC_MAX_PERIODS);
		if ((rc = parse_period(s, len, &out[k], why, why_size)))
			return rc;
		k++;
		s += len;
	}
	*n = k;
	return 0;
}

int ks_spec_check_windows(const struct ks_spec_period *p, size_t n, uint64_t dur_ns,
			  char *why, size_t why_size)
{
	uint64_t at = 0;   /* elapsed ns from the delay to period i's start */
	bool known = true; /* at is known: elapsed-time periods so far */

	for (size_t i = 0; i < n; i++) {
		uint64_t len = ks_spec_period_len(&p[i]);

		if (i > 0 && ks_spec_period_len(&p[i - 1]) == UINT64_MAX)
			return bad(why, why_size, "period %zu never starts: period %zu "
				   "before it repeats forever (cycles 0), and the periods "
				   "run one after the other; accepted: cycles 0 on the "
				   "last period only",
				   i + 1, i);
		if (ks_spec_clocks[p[i].clock].cpu)
			known = false;
		/* On elapsed-time clocks period i opens at + delay after the
		 * delay: never, if --duration has ended by then. */
		if (known && dur_ns && (at >= dur_ns || p[i].delay_ns >= dur_ns - at))
			return bad(why, why_size, "period %zu never opens: it would open "
				   "%.9g s after the delay, and the duration (%.9g s) "
				   "ends before that; accepted: periods that open before "
				   "the duration ends", i + 1,
				   ((double)at + (double)p[i].delay_ns) / 1e9,
				   (double)dur_ns / 1e9);
		at = at > UINT64_MAX - len ? UINT64_MAX : at + len;
	}
	return 0;
}

int ks_spec_parse_counters(const char *s, char (*out)[KS_SPEC_COUNTER_NAME_MAX + 1],
			   size_t *n, char *why, size_t why_size)
{
	size_t k = 0;

	*n = 0;
	if (!s || !*s)
		return 0;
	for (;;) {
		size_t len = strcspn(s, ",");

		if (len == 0)
			return bad(why, why_size, "an empty counter name; accepted: "
				   "names separated by commas, e.g. cycles,instructions");
		if (len > KS_SPEC_COUNTER_NAME_MAX)
			return bad(why, why_size, "the counter name '%.40s%s' is too long; "
				   "accepted: at most %d bytes", s, len > 40 ? "..." : "",
				   KS_SPEC_COUNTER_NAME_MAX);
		if (k == KS_SPEC_MAX_COUNTERS)
			return bad(why, why_size, "more than %d counters; accepted: at "
				   "most %d", KS_SPEC_MAX_COUNTERS, KS_SPEC_MAX_COUNTERS);
		memcpy(out[k], s, len);
		out[k][len] = '\0';
		if (!ks_counter_find(out[k])) {
			char known[256];

			ks_counter_list(known, sizeof(known));
			return bad(why, why_size, "unknown counter '%s'; accepted: %s",
				   out[k], known);
		}
		for (size_t j = 0; j < k; j++)
			if (strcmp(out[j], out[k]) == 0)
				return bad(why, why_size, "the counter '%s' is named twice; "
					   "accepted: each counter once", out[k]);
		k++;
		s += len;
		if (!*s)
			break;
		s++;
	}
	*n = k;
	return 0;
}
