/*
 * The timeline of a profile (trace_int.h): records grouped per thread or
 * process with a counting sort, each group sorted with qsort_r, the pids
 * shown, and the lane walk that both trace writers draw slices from.
 *
 * The walk visits a thread's slices by start time (longer first on a tie,
 * so a parent comes before its children) and keeps a stack of open
 * slices per lane.  Before a slice begins, every open slice that ends no
 * later than its start is closed, earliest end first, across all lanes;
 * the slice then goes on the first lane of its family whose innermost
 * open slice contains it.  Cost: O(n log n) for the sort plus O(n * lanes)
 * for the walk, and lanes are as many as the most slices that overlap
 * without nesting at one moment (usually none beyond lane 0).
 */
#include "trace_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Grouping and sorting                                                */
/* ------------------------------------------------------------------ */

/* Buckets items 0..n-1 by keys[i] (< n_groups, or KS_NONE to leave an
 * item out), keeping their order within a bucket. */
static int bucket(size_t n_groups, size_t n, const uint32_t *keys,
		  uint32_t **idx_out, size_t **off_out)
{
	size_t *off = calloc(n_groups + 2, sizeof(*off)), *pos = NULL;
	uint32_t *idx = NULL;
	size_t total = 0;

	if (!off)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (keys[i] != KS_NONE)
			off[keys[i] + 1]++;
	for (size_t g = 0; g < n_groups; g++)
		off[g + 1] += off[g];
	total = off[n_groups];
	idx = malloc((total ? total : 1) * sizeof(*idx));
	pos = malloc((n_groups ? n_groups : 1) * sizeof(*pos));
	if (!idx || !pos) {
		free(off);
		free(idx);
		free(pos);
		return -ENOMEM;
	}
	memcpy(pos, off, n_groups * sizeof(*pos));
	for (size_t i = 0; i < n; i++)
		if (keys[i] != KS_NONE)
			idx[pos[keys[i]]++] = (uint32_t)i;
	free(pos);
	*idx_out = idx;
	*off_out = off;
	return 0;
}

uint64_t ks_timeline_slice_end(const struct ks_profile *p,
			       const struct ks_pslice *s)
{
	uint64_t tend;

	if (s->kind == KS_SLICE_MARK)
		return s->start;
	if (s->end >= s->start)
		return s->end;
	tend = s->thread < p->n_threads ? p->threads[s->thread].end : 0;
	return tend > s->start ? tend : s->start;
}

/* qsort_r's argument is not const; the comparators only read through it. */
struct sort_arg {
	const struct ks_profile *p;
};

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

/* Nesting order: by start, longer first, shallower first, then by id so
 * the order is total and the output reproducible. */
static int cmp_slice(const void *a, const void *b, void *arg)
{
	const struct ks_profile *p = ((const struct sort_arg *)arg)->p;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct ks_pslice *x = &p->slices[ia], *y = &p->slices[ib];
	int c;

	if ((c = cmp_u64(x->start, y->start)))
		return c;
	if ((c = cmp_u64(ks_timeline_slice_end(p, y), ks_timeline_slice_end(p, x))))
		return c;
	if ((c = cmp_u64(x->depth, y->depth)))
		return c;
	return cmp_u64(ia, ib);
}

static int cmp_sample(const void *a, const void *b, void *arg)
{
	const struct ks_profile *p = ((const struct sort_arg *)arg)->p;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	int c = cmp_u64(p->samples[ia].ts, p->samples[ib].ts);

	return c ? c : cmp_u64(ia, ib);
}

static int cmp_counter(const void *a, const void *b, void *arg)
{
	const struct ks_profile *p = ((const struct sort_arg *)arg)->p;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	int c = cmp_u64(p->counters[ia].ts, p->counters[ib].ts);

	if (!c)
		c = cmp_u64(p->counters[ia].kind, p->counters[ib].kind);
	return c ? c : cmp_u64(ia, ib);
}

static void sort_groups(uint32_t *idx, const size_t *off, size_t n_groups,
			int (*cmp)(const void *, const void *, void *),
			const struct ks_profile *p)
{
	struct sort_arg arg = { p };

	for (size_t g = 0; g < n_groups; g++) {
		uint32_t *a = idx + off[g];
		size_t n = off[g + 1] - off[g], i;

		/* Records often arrive in order already: check before sorting. */
		for (i = 1; i < n && cmp(&a[i - 1], &a[i], &arg) <= 0; i++)
			;
		if (i < n)
			qsort_r(a, n, sizeof(*a), cmp, &arg);
	}
}

/* ------------------------------------------------------------------ */
/* Checks and pids                                                     */
/* ------------------------------------------------------------------ */

static int check_ids(const struct ks_profile *p, struct ks_err *err)
{
	for (size_t i = 0; i < p->n_threads; i++)
		if (p->threads[i].process >= p->n_processes)
			return ks_err_set(err, -EINVAL, "profile thread %zu refers to "
					  "process %u, but there are %zu", i,
					  p->threads[i].process, p->n_processes);
	for (size_t i = 0; i < p->n_slices; i++) {
		if (p->slices[i].thread >= p->n_threads)
			return ks_err_set(err, -EINVAL, "profile slice %zu refers to "
					  "thread %u, but there are %zu", i,
					  p->slices[i].thread, p->n_threads);
		if (p->slices[i].name >= p->n_strings)
			return ks_err_set(err, -EINVAL, "profile slice %zu refers to "
					  "string %u, but there are %zu", i,
					  p->slices[i].name, p->n_strings);
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		if (s->thread >= p->n_threads)
			return ks_err_set(err, -EINVAL, "profile sample %zu refers to "
					  "thread %u, but there are %zu", i, s->thread,
					  p->n_threads);
		if (s->node != KS_NONE && s->node >= p->n_nodes)
			return ks_err_set(err, -EINVAL, "profile sample %zu refers to "
					  "node %u, but there are %zu", i, s->node,
					  p->n_nodes);
	}
	for (size_t i = 0; i < p->n_nodes; i++) {
		if (p->nodes[i].frame >= p->n_frames)
			return ks_err_set(err, -EINVAL, "profile node %zu refers to "
					  "frame %u, but there are %zu", i,
					  p->nodes[i].frame, p->n_frames);
		/* Parents first (profile.h builds them so): call paths, which
		 * the writers walk for the stacks, cannot loop. */
		if (p->nodes[i].parent != KS_NONE && p->nodes[i].parent >= i)
			return ks_err_set(err, -EINVAL, "profile node %zu has parent %u, "
					  "which does not come before it", i,
					  p->nodes[i].parent);
	}
	for (size_t i = 0; i < p->n_frames; i++) {
		const struct ks_pframe *f = &p->frames[i];
		uint32_t bad = f->function >= p->n_strings ? f->function
			       : f->module >= p->n_strings ? f->module
			       : f->file != KS_NONE && f->file >= p->n_strings ? f->file
			       : KS_NONE;

		if (bad != KS_NONE)
			return ks_err_set(err, -EINVAL, "profile frame %zu refers to "
					  "string %u, but there are %zu", i, bad,
					  p->n_strings);
	}
	for (size_t i = 0; i < p->n_counters; i++)
		if (p->counters[i].process >= p->n_processes)
			return ks_err_set(err, -EINVAL, "profile counter %zu refers to "
					  "process %u, but there are %zu", i,
					  p->counters[i].process, p->n_processes);
	return 0;
}

struct pid_ix {
	int32_t pid;
	uint32_t process;
};

static int cmp_pid_ix(const void *a, const void *b)
{
	const struct pid_ix *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->process < y->process ? -1 : x->process > y->process;
}

/* The first process with a pid keeps it; later ones (ranks on other
 * hosts can have the same pid) get pids above every real one, since both
 * trace viewers merge processes with equal pids. */
static int assign_pids(struct ks_timeline *tl)
{
	const struct ks_profile *p = tl->p;
	struct pid_ix *v = malloc((p->n_processes ? p->n_processes : 1) * sizeof(*v));
	int32_t next = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_processes; i++) {
		v[i].pid = p->processes[i].pid;
		v[i].process = (uint32_t)i;
		tl->pid[i] = p->processes[i].pid;
		if (v[i].pid >= next)
			next = v[i].pid == INT32_MAX ? INT32_MAX : v[i].pid + 1;
	}
	qsort(v, p->n_processes, sizeof(*v), cmp_pid_ix);
	for (size_t i = 1; i < p->n_processes; i++)
		if (v[i].pid == v[i - 1].pid && next < INT32_MAX)
			tl->pid[v[i].process] = next++;
	free(v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Public functions                                                    */
/* ------------------------------------------------------------------ */

void ks_timeline_free(struct ks_timeline *tl)
{
	free(tl->slices);
	free(tl->slice_off);
	free(tl->samples);
	free(tl->sample_off);
	free(tl->counters);
	free(tl->counter_off);
	free(tl->pid);
	free(tl->counter_kinds);
	memset(tl, 0, sizeof(*tl));
}

int ks_timeline_init(struct ks_timeline *tl, const struct ks_profile *p,
		     struct ks_err *err)
{
	size_t nk = p->n_slices;
	uint32_t *keys;
	int rc;

	memset(tl, 0, sizeof(*tl));
	tl->p = p;
	rc = check_ids(p, err);
	if (rc)
		return rc;
	if (p->n_samples > nk)
		nk = p->n_samples;
	if (p->n_counters > nk)
		nk = p->n_counters;
	if (nk >= KS_NONE)
		return ks_err_set(err, -EOVERFLOW, "profile has too many records "
				  "for a trace");
	keys = malloc((nk ? nk : 1) * sizeof(*keys));
	tl->pid = malloc((p->n_processes ? p->n_processes : 1) * sizeof(*tl->pid));
	tl->counter_kinds = calloc(p->n_processes ? p->n_processes : 1, 1);
	if (!keys || !tl->pid || !tl->counter_kinds) {
		rc = -ENOMEM;
		goto out;
	}

	for (size_t i = 0; i < p->n_slices; i++)
		keys[i] = p->slices[i].thread;
	rc = bucket(p->n_threads, p->n_slices, keys, &tl->slices, &tl->slice_off);
	if (rc)
		goto out;
	sort_groups(tl->slices, tl->slice_off, p->n_threads, cmp_slice, p);

	for (size_t i = 0; i < p->n_samples; i++)
		keys[i] = p->samples[i].thread;
	rc = bucket(p->n_threads, p->n_samples, keys, &tl->samples, &tl->sample_off);
	if (rc)
		goto out;
	sort_groups(tl->samples, tl->sample_off, p->n_threads, cmp_sample, p);

	for (size_t i = 0; i < p->n_counters; i++) {
		const struct ks_pcounter *c = &p->counters[i];

		/* Unknown kinds (from a newer runtime) and values a viewer
		 * cannot draw are left out rather than failing the trace. */
		if ((c->kind != KS_PCOUNTER_RSS && c->kind != KS_PCOUNTER_CPU_PCT) ||
		    !isfinite(c->value)) {
			keys[i] = KS_NONE;
			continue;
		}
		keys[i] = c->process;
		tl->counter_kinds[c->process] |= (uint8_t)(1u << c->kind);
	}
	rc = bucket(p->n_processes, p->n_counters, keys, &tl->counters,
		    &tl->counter_off);
	if (rc)
		goto out;
	sort_groups(tl->counters, tl->counter_off, p->n_processes, cmp_counter, p);

	rc = assign_pids(tl);
out:
	free(keys);
	if (rc) {
		ks_timeline_free(tl);
		if (rc == -ENOMEM)
			ks_err_set(err, rc, "out of memory");
	}
	return rc;
}

char *ks_timeline_process_name(const struct ks_timeline *tl, uint32_t process)
{
	const struct ks_pprocess *pr = &tl->p->processes[process];
	char rank[32] = "", pid[32] = "", *s;

	if (pr->rank >= 0)
		snprintf(rank, sizeof(rank), " [rank %d]", pr->rank);
	if (tl->pid[process] != pr->pid)
		snprintf(pid, sizeof(pid), " (pid %d)", pr->pid);
	if (asprintf(&s, "%s%s%s", ks_profile_str(tl->p, pr->command), rank, pid) < 0)
		return NULL;
	return s;
}

const char *ks_timeline_sample_name(const struct ks_profile *p,
				    const struct ks_psample *s)
{
	const char *name;

	if (s->node >= p->n_nodes || p->nodes[s->node].frame >= p->n_frames)
		return "[unknown]";
	name = ks_profile_str(p, p->frames[p->nodes[s->node].frame].function);
	return name[0] ? name : "[unknown]";
}

const char *ks_timeline_kind_name(uint8_t kind)
{
	switch (kind) {
	case KS_SLICE_REGION: return "region";
	case KS_SLICE_RANGE:  return "range";
	case KS_SLICE_MPI:    return "mpi";
	case KS_SLICE_MARK:   return "mark";
	case KS_SLICE_PAUSE:  return "pause";
	case KS_SLICE_CALL:   return "call";
	default:              return "slice";
	}
}

/* ------------------------------------------------------------------ */
/* The lane walk                                                       */
/* ------------------------------------------------------------------ */

struct open_slice {
	uint32_t slice;
	uint64_t end;
};

struct lane {
	struct open_slice *open;   /* the stack; innermost last */
	size_t n, cap;
	enum ks_tl_family family;
	uint32_t index;
};

struct walk {
	struct lane *lanes;
	size_t n_lanes, cap_lanes;
	uint32_t n_family[2];
	ks_tl_fn fn;
	void *ctx;
};

static int emit(struct walk *w, enum ks_tl_type type, uint32_t slice,
		uint64_t ts, size_t lane)
{
	struct ks_tl_event ev = {
		.type = type, .slice = slice, .ts = ts, .lane = (uint32_t)lane,
		.family = w->lanes[lane].family, .index = w->lanes[lane].index,
	};

	return w->fn(w->ctx, &ev);
}

/* Closes, earliest end first, the open slices that a slice [t0, t1]
 * cannot nest in because they end no later than it starts (all of them
 * if all is set). */
static int close_ended(struct walk *w, uint64_t t0, uint64_t t1, bool all)
{
	for (;;) {
		size_t best = SIZE_MAX;
		struct open_slice top;
		int rc;

		for (size_t l = 0; l < w->n_lanes; l++) {
			const struct lane *ln = &w->lanes[l];
			uint64_t end;

			if (!ln->n)
				continue;
			end = ln->open[ln->n - 1].end;
			if (!all && !(end <= t0 && t1 > end))
				continue;
			if (best == SIZE_MAX || end < w->lanes[best].open[w->lanes[best].n - 1].end)
				best = l;
		}
		if (best == SIZE_MAX)
			return 0;
		top = w->lanes[best].open[--w->lanes[best].n];
		rc = emit(w, KS_TL_END, top.slice, top.end, best);
		if (rc)
			return rc;
	}
}

static int add_lane(struct walk *w, enum ks_tl_family family)
{
	struct lane *ln;

	if (w->n_lanes == w->cap_lanes) {
		size_t cap = w->cap_lanes ? w->cap_lanes * 2 : 4;

		ln = realloc(w->lanes, cap * sizeof(*ln));
		if (!ln)
			return -ENOMEM;
		w->lanes = ln;
		w->cap_lanes = cap;
	}
	ln = &w->lanes[w->n_lanes++];
	memset(ln, 0, sizeof(*ln));
	ln->family = family;
	ln->index = w->n_family[family]++;
	return 0;
}

static int push(struct lane *ln, uint32_t slice, uint64_t end)
{
	if (ln->n == ln->cap) {
		size_t cap = ln->cap ? ln->cap * 2 : 16;
		struct open_slice *o = realloc(ln->open, cap * sizeof(*o));

		if (!o)
			return -ENOMEM;
		ln->open = o;
		ln->cap = cap;
	}
	ln->open[ln->n].slice = slice;
	ln->open[ln->n].end = end;
	ln->n++;
	return 0;
}

int ks_timeline_walk(const struct ks_timeline *tl, uint32_t thread,
		     ks_tl_fn fn, void *ctx)
{
	const struct ks_profile *p = tl->p;
	struct walk w = { .fn = fn, .ctx = ctx };
	int rc = add_lane(&w, KS_TL_STACK);

	for (size_t i = tl->slice_off[thread]; !rc && i < tl->slice_off[thread + 1]; i++) {
		uint32_t id = tl->slices[i];
		const struct ks_pslice *s = &p->slices[id];
		uint64_t t1 = ks_timeline_slice_end(p, s);
		enum ks_tl_family fam = s->kind == KS_SLICE_RANGE ? KS_TL_RANGE : KS_TL_STACK;
		size_t l;

		rc = close_ended(&w, s->start, t1, false);
		if (rc)
			break;
		if (s->kind == KS_SLICE_MARK) {
			/* Lane 0's innermost open slice, if any, now contains
			 * the mark's moment. */
			rc = emit(&w, KS_TL_INSTANT, id, s->start, 0);
			continue;
		}
		for (l = 0; l < w.n_lanes; l++) {
			const struct lane *ln = &w.lanes[l];

			if (ln->family == fam && (!ln->n || ln->open[ln->n - 1].end >= t1))
				break;
		}
		if (l == w.n_lanes && (rc = add_lane(&w, fam)))
			break;
		rc = push(&w.lanes[l], id, t1);
		if (!rc)
			rc = emit(&w, KS_TL_BEGIN, id, s->start, l);
	}
	if (!rc)
		rc = close_ended(&w, 0, 0, true);
	for (size_t l = 0; l < w.n_lanes; l++)
		free(w.lanes[l].open);
	free(w.lanes);
	return rc;
}
