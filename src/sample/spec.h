/*
 * The grammar and the limits of the sampling settings that the runtime
 * (libkscope.so) reads from its environment: KSCOPE_TIDS, KSCOPE_PERIODS
 * and KSCOPE_COUNTERS.  One parser (spec.c), compiled into both kscope
 * and the runtime, is the single source of truth: `kscope sample` checks
 * its options with it before anything runs, so whatever the checker
 * accepts the runtime holds, and what the runtime could not hold is
 * refused with the limit in the message instead of being dropped in the
 * program.  Nothing here allocates or prints; it is plain C with no
 * dependency, because the runtime links nothing of kscope's.
 */
#ifndef KS_SAMPLE_SPEC_H
#define KS_SAMPLE_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "raw.h"

#define KS_SPEC_MAX_TIDRANGES   64          /* --tids: indexes and ranges */
#define KS_SPEC_MAX_TID_INDEX   UINT32_MAX  /* the largest thread index */
#define KS_SPEC_MAX_PERIODS     16          /* --periods: windows */
#define KS_SPEC_MAX_SECONDS     1e9         /* a window's delay or duration */
#define KS_SPEC_MAX_COUNTERS    KS_RAW_MAX_COUNTERS /* --counters: names */
#define KS_SPEC_COUNTER_NAME_MAX 31         /* bytes of a counter's name */

struct ks_spec_tidrange {
	uint32_t lo, hi;         /* thread indexes, inclusive */
};

enum { KS_SPEC_CLOCK_REAL = 0, KS_SPEC_CLOCK_CPU = 1 };

struct ks_spec_period {
	int clock;               /* KS_SPEC_CLOCK_*: wall clock or process CPU time */
	uint64_t delay_ns, dur_ns;
	uint64_t cycles;         /* 0 = forever */
};

/* Each parser fills out[0..*n) from s (NULL or empty: *n = 0) and returns
 * 0, or -EINVAL with *n = 0 and why (why_size bytes, may be 0) saying what
 * was wrong and what is accepted, without the option's name. */

/* "0,2-4": thread indexes and inclusive ranges, separated by commas. */
int ks_spec_parse_tids(const char *s, struct ks_spec_tidrange *out, size_t *n,
		       char *why, size_t why_size);
/* "clock:delay:duration:cycles ...", separated by spaces or tabs. */
int ks_spec_parse_periods(const char *s, struct ks_spec_period *out, size_t *n,
			  char *why, size_t why_size);
/* "cycles,instructions": counter names separated by commas. */
int ks_spec_parse_counters(const char *s, char (*out)[KS_SPEC_COUNTER_NAME_MAX + 1],
			   size_t *n, char *why, size_t why_size);

#endif
