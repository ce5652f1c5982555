/*
 * view_tl_int.h: the timeline model's insides and its queries, private to
 * src/view (view_timeline.c builds and answers, view_api_timeline.c turns
 * answers into JSON, view_trace.c feeds the builder).
 *
 * After kv_tl_finish every slice of a card lives in one array, grouped by
 * thread (in the order threads were first seen), within a thread by depth,
 * within a depth by start.  A slice's id is its index in that array, so
 * ids are unique per card, dense, and the same every time the same input
 * is imported.  Within one depth slices never overlap (see the nesting
 * rule in view_timeline.c), so both their starts and their ends are
 * sorted and a window is found by two binary searches.
 */
#ifndef KS_VIEW_TL_INT_H
#define KS_VIEW_TL_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "view.h"

#define KV_TL_NONE UINT32_MAX

/* One slice (56 bytes; the budget at 1e6 slices is ~100 bytes each). */
struct kv_tl_slice {
	int64_t start;      /* ns from the origin (absolute while building) */
	int64_t end;        /* start + duration */
	uint64_t args;      /* offset of the args text in the args arena */
	uint32_t args_len;  /* 0: no args */
	uint32_t name;      /* string ids (kv_tl_str); 0 is "" */
	uint32_t cat;
	uint32_t cname;
	uint32_t depth;     /* while building: the insertion sequence */
	uint32_t thread;    /* index in tl->threads */
	bool brief;         /* lasted under 1 ns: a duration that rounds to 0,
			     * not an instant (kv_tl_mark_brief) */
};

/* Marks the slice added last as briefer than a nanosecond: its source
 * gave it a duration, which rounds to none.  It keeps 0 ns, but nests as
 * what it was, a slice that ended before the next one started: it is
 * placed before the slices starting in the same nanosecond, beside them,
 * where an instant (a slice of no duration) would go under the slice it
 * starts with.  Nothing happens if no slice was added. */
void kv_tl_mark_brief(struct kv_timeline *tl);

struct kv_tl_thread {
	uint32_t process;   /* index in tl->processes */
	uint32_t tid;       /* string id */
	uint32_t name;      /* string id, 0 if unnamed */
	int sort;           /* thread_sort_index */
	uint32_t ndepth;    /* 0 when the thread has no slice */
	uint64_t first;     /* the slices are [first, first + n) */
	uint64_t n;
	uint64_t *depth_off; /* ndepth + 1 offsets into the slices, absolute */
};

/* A busy interval of a process: the union of its threads' slices. */
struct kv_tl_span {
	int64_t start, end;
};

struct kv_tl_process {
	uint32_t pid;       /* string id */
	uint32_t name;      /* string id, 0 if unnamed */
	int sort;           /* process_sort_index */
	uint32_t *threads;  /* thread indices in display order */
	uint32_t nthreads, cap;
	struct kv_tl_span *busy; /* sorted, disjoint, not touching */
	uint64_t nbusy;
};

struct kv_tl_flow {
	uint32_t id, cat, name;       /* string ids */
	uint32_t thread[2];           /* from, to */
	int64_t ts[2];                /* ns from the origin */
	uint32_t slice[2];            /* bound slices (KV_TL_NONE: none) */
};

struct kv_tl_strtab {
	char *buf;          /* NUL-terminated strings one after another */
	size_t len, cap;
	uint64_t *off;      /* string id -> offset in buf */
	uint32_t n, ncap;
	uint32_t *hash;     /* open addressing: string id + 1, 0 empty */
	uint32_t hcap;      /* a power of two */
};

struct kv_timeline {
	struct kv_tl_strtab strs;
	struct kv_tl_slice *slices;
	uint64_t nslices, slcap;
	char *args;         /* every slice's args text, one after another */
	uint64_t args_len, args_cap;
	struct kv_tl_thread *threads;
	uint32_t nthreads, thcap;
	struct kv_tl_process *processes;
	uint32_t nprocesses, prcap;
	uint32_t *proc_order;   /* process indices in display order */
	/* (pid string id << 32 | tid string id) -> thread, and pid -> process */
	uint64_t *tkeys;
	uint32_t *tvals, tmapcap, tmapn;
	uint32_t *pmap, pmapcap; /* pid string id + 1 -> process + 1 */
	struct kv_tl_flow *flows;
	uint64_t nflows, flcap;
	/* flows by slice: (slice << 32 | flow) keys sorted; a flow is in it
	 * once per bound end (twice if both ends are the same slice: once) */
	uint64_t *flow_index;
	uint64_t nflow_index;
	struct kv_tl_counter *counters;
	uint32_t ncounters, ctrcap;
	/* display order (after kv_tl_finish): the counters of processes with
	 * tracks in the processes' order, then the others, each group in
	 * order of first sight; indexes into counters */
	uint32_t *counter_order;
	uint32_t *ctr_map, ctr_mapcap; /* key string id -> counter + 1 */
	int64_t counter_end;     /* ns from the origin of the latest sample */
	int64_t origin;     /* absolute ns of the earliest event */
	int64_t last_end;   /* ns from the origin of the latest end */
	uint32_t last_thread; /* the builder's one-entry cache */
	uint32_t last_pid, last_tid;
	int finished;
};

/* A counter track: the samples of the "C" events of one name in one
 * process (and thread, when its events name one).  After kv_tl_finish
 * the samples are in time order, from the origin; a sample holds until
 * the next one (a step chart). */
struct kv_tl_counter {
	uint32_t pid, tid;  /* string ids; tid 0: the process's counter */
	uint32_t name;      /* string id */
	uint32_t nseries;
	uint32_t *series;   /* string ids of the series, in order of first sight */
	uint64_t n, cap;    /* samples */
	int64_t *ts;        /* ns */
	double *vals;       /* nseries per sample; a series an event lacks is 0 */
	double max;         /* the largest value of any series (0 if none above) */
};

/* Adds a sample of counter name of process pid (thread tid; NULL or ""
 * for the process's) at ts_ns: series[i] has values[i] (finite).
 * Counters make no process or thread track of their own.  0, -EINVAL
 * after kv_tl_finish, -ENOMEM, -E2BIG past KV_TL_MAX_COUNTERS tracks. */
#define KV_TL_MAX_COUNTERS 65536
int kv_tl_counter(struct kv_timeline *tl, const char *pid, const char *tid,
		  const char *name, int64_t ts_ns, size_t n, const char *const *series,
		  const double *values);

/* The text of string id s ("" for 0). */
static inline const char *kv_tl_str(const struct kv_timeline *tl, uint32_t s)
{
	return tl->strs.buf + tl->strs.off[s];
}

/* An item of a unit/threadTraces answer: one slice (count 1) or merged
 * neighbours (count > 1: name the most common, ties to the earliest; id
 * and cname those of the first). */
struct kv_tl_item {
	uint64_t id;
	int64_t start, end;
	uint64_t count;
	uint32_t name, cname, depth;
};

/* The thread (pid, tid) or process pid; KV_TL_NONE if absent. */
uint32_t kv_tl_thread_find(const struct kv_timeline *tl, const char *pid,
			   const char *tid);
uint32_t kv_tl_process_find(const struct kv_timeline *tl, const char *pid);

/* The slices of thread th overlapping [ws, we] (an end at ws or a start at
 * we counts), depth by depth, neighbours merged where their extent stays
 * under time_per_px.  *out (malloc'ed, caller frees) is sorted by depth
 * then start; *n its length.  At most about 2 * ((we - ws) / time_per_px
 * + 2) items per depth whatever the slice count.  0 or -ENOMEM. */
int kv_tl_query(const struct kv_timeline *tl, uint32_t th, int64_t ws, int64_t we,
		double time_per_px, struct kv_tl_item **out, size_t *n);

/* The busy intervals of process pr within [ws, we], clipped to it, merged
 * where the gap between them is under time_per_px.  *out malloc'ed.  0 or
 * -ENOMEM. */
int kv_tl_busy(const struct kv_timeline *tl, uint32_t pr, int64_t ws, int64_t we,
	       double time_per_px, struct kv_tl_span **out, size_t *n);

/* The flows with an end bound to slice id; *out (malloc'ed) holds flow
 * indices in tl->flows, in the order they were added.  0 or -ENOMEM. */
int kv_tl_flows_of(const struct kv_timeline *tl, uint64_t slice, uint64_t **out,
		   size_t *n);

/* An item of a unit/counterValues answer: samples [first, first+count)
 * of a counter merged where they start within a pixel of the first. */
struct kv_tl_citem {
	uint64_t first, count;
};

/* The samples of counter c in force in [ws, we] (the last one at or
 * before ws, then those up to we), merged as kv_tl_citem says.  *out
 * malloc'ed; at most (we - ws) / time_per_px + 2 items.  0 or -ENOMEM. */
int kv_tl_counter_query(const struct kv_timeline *tl, uint32_t c, int64_t ws, int64_t we,
			double time_per_px, struct kv_tl_citem **out, size_t *n);

/* The counter (pid, tid, name); KV_TL_NONE if absent. */
uint32_t kv_tl_counter_find(const struct kv_timeline *tl, const char *pid,
			    const char *tid, const char *name);

/* The time of slice id not covered by its direct children (the slices one
 * depth deeper overlapping it). */
int64_t kv_tl_self_time(const struct kv_timeline *tl, uint64_t slice);

#endif
