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

/* The clocks a period can be measured on: the POSIX clocks of the
 * design's constraint model.  thread_cputime is refused: windows open and
 * close for the whole process, and each thread has its own CPU time. */
struct ks_spec_clock {
	const char *name;        /* as written in a period */
	int id;                  /* the clockid_t of clock_gettime */
	int cpu;                 /* 1: process CPU time, 0: elapsed time */
};
extern const struct ks_spec_clock ks_spec_clocks[];
extern const size_t ks_spec_nclocks;

struct ks_spec_period {
	int clock;               /* index into ks_spec_clocks */
	uint64_t delay_ns, dur_ns;
	uint64_t cycles;         /* 0 = forever */
};

/* A period's whole length, (delay + duration) * cycles, in ns of its
 * clock; UINT64_MAX for cycles 0 (forever) or past 2^64 - 1 ns. */
uint64_t ks_spec_period_len(const struct ks_spec_period *p);

/* Whether the windows of a run can ever open: the periods run one after
 * the other from the end of the delay, and --duration (dur_ns, 0 = no
 * end) closes everything that long after the delay.  Returns 0, or
 * -EINVAL with why saying which period never opens and why: one that
 * follows a period repeating forever, or, measured on elapsed-time
 * clocks, one that would open only after the duration has ended. */
int ks_spec_check_windows(const struct ks_spec_period *p, size_t n, uint64_t dur_ns,
			  char *why, size_t why_size);

/* Each parser fills out[0..*n) from s (NULL or empty: *n = 0) and returns
 * 0, or -EINVAL with *n = 0 and why (why_size bytes, may be 0) saying what
 * was wrong and what is accepted, without the option's name. */

/* "0,2-4": thread indexes and inclusive ranges, separated by commas. */
int ks_spec_parse_tids(const char *s, struct ks_spec_tidrange *out, size_t *n,
		       char *why, size_t why_size);
/* "clock:delay:duration:cycles ...", separated by spaces or tabs, run one
 * after the other in the order given. */
int ks_spec_parse_periods(const char *s, struct ks_spec_period *out, size_t *n,
			  char *why, size_t why_size);
/* "cycles,instructions": counter names separated by commas. */
int ks_spec_parse_counters(const char *s, char (*out)[KS_SPEC_COUNTER_NAME_MAX + 1],
			   size_t *n, char *why, size_t why_size);

#endif
