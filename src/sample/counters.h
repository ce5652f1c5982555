/*
 * The per-sample counters kscope knows by name, and whether this machine
 * has them: the perf_event_open events behind `kscope sample --counters`
 * and `kscope avail --counters`.  This one table serves `kscope avail`,
 * the checker of `kscope sample` (spec.c) and the runtime (libkscope.so,
 * which compiles this file in), so a name one accepts the others know and
 * open the same way.  Virtual machines often lack the hardware counters;
 * that is reported, never an error.  Plain C with no dependency but libc,
 * because the runtime links nothing of kscope's.
 */
#ifndef KS_SAMPLE_COUNTERS_H
#define KS_SAMPLE_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ks_counter_def {
	const char *name;      /* as given to --counters */
	uint32_t type;         /* PERF_TYPE_HARDWARE or PERF_TYPE_SOFTWARE */
	uint64_t config;       /* PERF_COUNT_* */
	const char *help;
	/* Counted in the kernel (exclude_kernel = 0): a software event such
	 * as a context switch or a page fault happens in kernel code, and a
	 * counter that excludes the kernel reads 0 for it.  Hardware
	 * counters count the program's own code only (exclude_kernel = 1),
	 * which kernel.perf_event_paranoid = 2, the common default, allows. */
	bool kernel_side;
};

/* The known counters, ending with a NULL name. */
extern const struct ks_counter_def ks_counter_defs[];

const struct ks_counter_def *ks_counter_find(const char *name);
/* "cycles, instructions, ...": the known names, for messages; truncated
 * to size bytes (always NUL-terminated when size > 0). */
void ks_counter_list(char *buf, size_t size);
/* Opens the counter for the calling thread (disabled if `disabled`, else
 * counting from now), with perf_event_open's flags; returns the
 * descriptor or -errno (ENOENT/EOPNOTSUPP/ENODEV: not on this machine,
 * EACCES: not allowed by kernel.perf_event_paranoid).  No allocation, no
 * stdio: the runtime calls it. */
int ks_counter_open(const struct ks_counter_def *c, bool disabled, unsigned long flags);
/* Opens the counter for the calling thread to see if it works here;
 * returns 0 or -errno as ks_counter_open. */
int ks_counter_probe(const struct ks_counter_def *c);
/* Why a counter failed to open with -err, in words for the user, with
 * the paranoid level where it matters (read from /proc at the call). */
void ks_counter_why(const struct ks_counter_def *c, int err, char *buf, size_t size);

#endif
