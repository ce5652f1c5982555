/*
 * What the two trace writers share (private to src/sample/trace): the
 * timeline of a profile, meaning its slices, samples and counters grouped
 * per thread or process and put in the order a trace needs, the pid each
 * process is shown under, and the walk that turns a thread's slices into
 * begin/end/instant events on properly nested lanes.
 *
 * Why lanes: both trace formats draw a thread's slices as a stack, so on
 * one track every slice must lie wholly inside the one below it.  Regions,
 * MPI calls and pauses come from code that opens and closes them in
 * order, so they nest; ranges (kscope_range_start/end, which carry an id)
 * are asynchronous by design and may overlap anything.  The walk
 * therefore keeps two families of lanes per thread: the "stack" family,
 * whose lane 0 is the thread's own track and whose further lanes only
 * appear if the profile holds slices that do not nest (a pause that spans
 * a region's end, say), and the "range" family for ranges.  A slice goes
 * to the first lane of its family where it nests, or to a new lane.
 */
#ifndef KS_SAMPLE_TRACE_INT_H
#define KS_SAMPLE_TRACE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"
#include "utf8.h"

struct ks_timeline {
	const struct ks_profile *p;
	uint32_t *slices;      /* slice ids by thread, each in nesting order */
	size_t *slice_off;     /* n_threads + 1 entries: thread t's slices are
				* slices[slice_off[t] .. slice_off[t + 1]) */
	uint32_t *samples;     /* sample ids by thread, each by time */
	size_t *sample_off;
	uint32_t *counters;    /* counter ids by process, each by time; counters
				* of unknown kinds or with non-finite values
				* are left out */
	size_t *counter_off;   /* n_processes + 1 entries */
	int32_t *pid;          /* per process: the pid the traces show */
	uint8_t *counter_kinds; /* per process: bit 1 << kind for each kind
				 * it has values of */
};

/* Groups and sorts p's records (p must outlive tl).  Checks every id
 * that crosses arrays and that the writers index with (slice and sample
 * threads, thread and counter processes, sample nodes, node frames and
 * parents, which must come before their children, slice names, frame
 * functions, files and modules) and fails with -EINVAL on the first that
 * is out of range, or -ENOMEM. */
int ks_timeline_init(struct ks_timeline *tl, const struct ks_profile *p,
		     struct ks_err *err);
void ks_timeline_free(struct ks_timeline *tl);

/* Where a slice ends in the traces: its start for marks; its thread's
 * end, or its start if that is earlier, when end is before start (which
 * profile.h rules out, but a trace must still nest). */
uint64_t ks_timeline_slice_end(const struct ks_profile *p,
			       const struct ks_pslice *s);

/* The name a process is shown under: its command, then " [rank N]" for
 * MPI ranks, then " (pid N)" when its pid is shared with an earlier
 * process (ranks on different hosts) and the traces show a made-up pid
 * instead.  malloc'd for the caller; NULL when out of memory. */
char *ks_timeline_process_name(const struct ks_timeline *tl, uint32_t process);

/* The function name of a sample's innermost frame, or "[unknown]". */
const char *ks_timeline_sample_name(const struct ks_profile *p,
				    const struct ks_psample *s);

enum ks_tl_type {
	KS_TL_BEGIN,
	KS_TL_END,
	KS_TL_INSTANT,         /* a mark; always on lane 0 */
};

enum ks_tl_family {
	KS_TL_STACK = 0,       /* lane 0 is the thread's own track */
	KS_TL_RANGE = 1,
};

struct ks_tl_event {
	enum ks_tl_type type;
	uint32_t slice;        /* slice id */
	uint64_t ts;           /* ns */
	uint32_t lane;         /* per thread, from 0 (the thread's track);
				* a new lane first appears with a BEGIN and
				* lanes appear in increasing order */
	enum ks_tl_family family;
	uint32_t index;        /* the lane's index within its family */
};

/* Calls fn for each event of thread's slices: per lane in time order and
 * properly nested (an END always closes the lane's latest open BEGIN),
 * and overall in time order.  Stops at the first non-zero return of fn
 * and returns it; -ENOMEM when out of memory. */
typedef int (*ks_tl_fn)(void *ctx, const struct ks_tl_event *ev);
int ks_timeline_walk(const struct ks_timeline *tl, uint32_t thread,
		     ks_tl_fn fn, void *ctx);

/* Kind names, used as categories. */
const char *ks_timeline_kind_name(uint8_t kind);


#endif
