/*
 * The per-sample counters kscope knows by name, and whether this machine
 * has them: the perf_event_open events behind `kscope sample --counters`
 * and `kscope avail --counters`.  Virtual machines often lack the
 * hardware ones; that is reported, never an error.
 */
#ifndef KS_SAMPLE_COUNTERS_H
#define KS_SAMPLE_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

struct ks_counter_def {
	const char *name;      /* as given to --counters */
	uint32_t type;         /* PERF_TYPE_HARDWARE or PERF_TYPE_SOFTWARE */
	uint64_t config;       /* PERF_COUNT_* */
	const char *help;
};

/* The known counters, ending with a NULL name. */
extern const struct ks_counter_def ks_counter_defs[];

const struct ks_counter_def *ks_counter_find(const char *name);
/* Opens the counter for the calling thread to see if it works here;
 * returns 0 or -errno (ENOENT/EOPNOTSUPP: not on this machine, EACCES:
 * not allowed by kernel.perf_event_paranoid). */
int ks_counter_probe(const struct ks_counter_def *c);

#endif
