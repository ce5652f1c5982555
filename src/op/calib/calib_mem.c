/*
 * Memory bandwidth per cache level and DRAM: the working-set sweep.
 *
 * As in empirical roofline tools, every thread streams through its own
 * block of doubles, all threads at once, for working sets from 16 KiB to
 * several times the last-level cache; the best of several trials is kept
 * per working set.  The curve has a plateau per level of the hierarchy.
 * Each level's bandwidth is then read from the working sets that fit in it
 * with margin: a thread's share at most half of its part of the level
 * (the level divided among the threads that share one instance) and at
 * least twice its part of the level below, so that the level below does
 * not hold it.  DRAM is the best of the working sets of at least four
 * times the whole last-level cache.  Cache sizes come from
 * /sys/devices/system/cpu/cpu0/cache (see calib_machine.c).
 *
 * The kernel reads (one load and one add per element): a read-dominated
 * stream like STREAM's and the Empirical Roofline Toolkit's, without the
 * write-allocate traffic of a copy, which would count bytes the program
 * never asked for.  Each block is allocated and first touched by the
 * thread that reads it, so its pages are local to that thread's node.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib_int.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define SHARE_ALIGN 4096ull      /* a share is a whole number of pages */
#define MAX_SIZES 96

/* How long the sweep measures: per working set, each trial at least
 * min_trial seconds (passes are repeated to get there), at least
 * min_trials trials, and trials go on until budget seconds are spent. */
struct sweep_params {
	double min_trial, budget;
	int min_trials, max_trials;
};

static const struct sweep_params quick_params = { 0.001, 0.06, 5, 100 };
static const struct sweep_params full_params = { 0.002, 0.5, 10, 1000 };

struct per_thread {
	double *buf;          /* this thread's block */
	double sum;           /* what the last job read */
	int failed;           /* allocation failed */
	char pad[64];         /* keeps threads' results off each other's line */
};

struct mem_job {
	const struct ks_calib_read_kernel *k;
	struct per_thread *t;
	size_t cap;           /* doubles allocated per thread */
	size_t n;             /* doubles read per pass */
	long passes;
};

/* ---------------------------------------------------------------------
 * Levels and working sets
 * --------------------------------------------------------------------- */

uint64_t ks_calib_llc_total(const struct ks_calib_machine *m)
{
	const struct ks_calib_cache *llc;
	int instances;

	if (m->ncaches == 0)
		return 0;
	llc = &m->caches[m->ncaches - 1];
	instances = llc->shared_cpus > 0 && m->cpus > llc->shared_cpus
			    ? (m->cpus + llc->shared_cpus - 1) / llc->shared_cpus
			    : 1;
	return llc->bytes * (uint64_t)instances;
}

/* The smallest total working set counted as DRAM. */
static uint64_t dram_min(const struct ks_calib_machine *m)
{
	uint64_t llc = ks_calib_llc_total(m);

	return llc ? 4 * llc : 256 * MIB;
}

size_t ks_calib_mem_levels(const struct ks_calib_machine *m, int threads,
			   struct ks_calib_level *levels)
{
	uint64_t prev_cap = 0;
	size_t n = 0;

	for (size_t i = 0; i < m->ncaches && n < KS_CALIB_MAX_CACHES; i++) {
		const struct ks_calib_cache *c = &m->caches[i];
		struct ks_calib_level *l = &levels[n];
		int users = c->shared_cpus < 1 ? 1 : c->shared_cpus;
		uint64_t cap;

		if (users > threads)
			users = threads;
		cap = c->bytes / (uint64_t)users;
		if (cap <= prev_cap)
			continue; /* not larger than the level below: unmeasurable */
		memset(l, 0, sizeof(*l));
		snprintf(l->name, sizeof(l->name), "L%d", c->level);
		l->hi = cap / 2;
		l->lo = 2 * prev_cap;
		l->prev_cap = prev_cap;
		l->cap = cap;
		prev_cap = cap;
		n++;
	}
	memset(&levels[n], 0, sizeof(levels[n]));
	snprintf(levels[n].name, sizeof(levels[n].name), "DRAM");
	levels[n].total_min = dram_min(m);
	return n + 1;
}

/* total rounded down to whole pages per thread (at least one). */
static uint64_t round_total(uint64_t total, int threads)
{
	uint64_t share = total / (uint64_t)threads / SHARE_ALIGN * SHARE_ALIGN;

	return (share ? share : SHARE_ALIGN) * (uint64_t)threads;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

size_t ks_calib_mem_sizes(const struct ks_calib_machine *m,
			  const struct ks_calib_plan *plan, uint64_t *sizes,
			  size_t max)
{
	struct ks_calib_level levels[KS_CALIB_MAX_CACHES + 1];
	size_t nlev = ks_calib_mem_levels(m, plan->threads, levels), n = 0, out = 0;
	uint64_t lo = 16 * KIB, top = dram_min(m), start = 16 * KIB;

	if (lo < (uint64_t)plan->threads * SHARE_ALIGN)
		lo = (uint64_t)plan->threads * SHARE_ALIGN;
	/* The full run goes beyond the DRAM threshold (to at least 256 MiB)
	 * so DRAM's figure is the best of several sizes. */
	if (!plan->quick)
		top = top * 2 > 256 * MIB ? top * 2 : 256 * MIB;
	if (top > plan->mem_limit)
		top = plan->mem_limit;
	/* Steps of a factor of 4 (quick) or sqrt(2) (full), from 16 KiB. */
	for (int k = 0; n < max; k++) {
		uint64_t s = plan->quick ? start << (2 * k)
			: (k % 2 ? (start << (k / 2)) * 1414 / 1000 : start << (k / 2));

		if (s > top)
			break;
		if (s >= lo)
			sizes[n++] = s;
	}
	/* Each level's best-fitting size, and the DRAM threshold, always. */
	for (size_t i = 0; i < nlev && n < max; i++) {
		uint64_t s = levels[i].total_min ? levels[i].total_min
			: levels[i].hi * (uint64_t)plan->threads;

		if (s >= lo && s <= top)
			sizes[n++] = s;
	}
	if (n < max && top >= lo)
		sizes[n++] = top;
	for (size_t i = 0; i < n; i++)
		sizes[i] = round_total(sizes[i], plan->threads);
	qsort(sizes, n, sizeof(*sizes), cmp_u64);
	for (size_t i = 0; i < n; i++)
		if (out == 0 || sizes[i] != sizes[out - 1])
			sizes[out++] = sizes[i];
	return out;
}

static int best_in(uint64_t lo, uint64_t hi, bool hi_inclusive, int threads,
		   const struct ks_calib_mem_point *pts, size_t npts)
{
	int best = -1;

	for (size_t i = 0; i < npts; i++) {
		uint64_t share = pts[i].total / (uint64_t)threads;

		if (share < lo || share > hi || (!hi_inclusive && share == hi))
			continue;
		if (best < 0 || pts[i].bytes_per_s > pts[best].bytes_per_s)
			best = (int)i;
	}
	return best;
}

int ks_calib_mem_pick(const struct ks_calib_level *level, int threads,
		      const struct ks_calib_mem_point *pts, size_t npts)
{
	int best = -1;

	if (level->total_min) {
		for (size_t i = 0; i < npts; i++)
			if (pts[i].total >= level->total_min &&
			    (best < 0 || pts[i].bytes_per_s > pts[best].bytes_per_s))
				best = (int)i;
		return best;
	}
	if (level->lo <= level->hi)
		best = best_in(level->lo, level->hi, true, threads, pts, npts);
	/* No point with margin: anything above the level below that fits. */
	if (best < 0)
		best = best_in(level->prev_cap + 1, level->cap, true, threads, pts,
			       npts);
	return best;
}

/* ---------------------------------------------------------------------
 * Running the sweep
 * --------------------------------------------------------------------- */

static void job_alloc(void *arg, int tid)
{
	struct mem_job *j = arg;
	struct per_thread *t = &j->t[tid];
	void *p = NULL;

	/* Allocated and first touched here, by the thread that reads it. */
	if (posix_memalign(&p, 4096, j->cap * sizeof(double)) != 0) {
		t->failed = 1;
		return;
	}
	t->buf = p;
	for (size_t i = 0; i < j->cap; i++)
		t->buf[i] = 1.0;
}

static void job_free(void *arg, int tid)
{
	struct mem_job *j = arg;

	free(j->t[tid].buf);
	j->t[tid].buf = NULL;
}

static void job_read(void *arg, int tid)
{
	struct mem_job *j = arg;
	struct per_thread *t = &j->t[tid];

	t->sum = j->k->sum(t->buf, j->n, j->passes);
}

/* One trial; checks what every thread read (all elements are 1.0, so the
 * sum is exact) to be sure the kernel read it all. */
static int trial(struct ks_calib_team *team, struct mem_job *j, int threads,
		 double *seconds, struct ks_err *err)
{
	double want = (double)j->n * (double)j->passes;

	*seconds = ks_calib_team_run(team, job_read, j);
	for (int i = 0; i < threads; i++)
		if (j->t[i].sum != want)
			return ks_err_set(err, -EIO,
					  "the %s read kernel summed %.17g instead "
					  "of %.17g on thread %d: the measurement "
					  "cannot be trusted", j->k->isa,
					  j->t[i].sum, want, i);
	return 0;
}

/* The best bandwidth over the trials of one working set: the best of
 * the undisturbed trials, or if every trial was disturbed, the best of
 * all and p->busy. */
static int measure_point(struct ks_calib_team *team, struct mem_job *j,
			 int threads, const struct sweep_params *sp,
			 struct ks_calib_mem_point *p, struct ks_err *err)
{
	double bytes, t, start, spent, clean = 0, any = 0;
	int rc, trials = 0;

	/* Enough passes per trial for min_trial seconds; the first trials
	 * also warm the caches and are not counted. */
	j->passes = 1;
	for (int tries = 0; tries < 8; tries++) {
		rc = trial(team, j, threads, &t, err);
		if (rc)
			return rc;
		if (t >= sp->min_trial)
			break;
		j->passes = (long)((double)j->passes * 1.3 * sp->min_trial /
				   (t > 1e-7 ? t : 1e-7)) + 1;
	}
	bytes = (double)j->n * sizeof(double) * (double)j->passes * threads;
	start = ks_calib_now();
	do {
		rc = trial(team, j, threads, &t, err);
		if (rc)
			return rc;
		if (t > 0 && bytes / t > any)
			any = bytes / t;
		if (t > 0 && bytes / t > clean &&
		    ks_calib_team_cpu_share(team) >= KS_CALIB_UNDISTURBED)
			clean = bytes / t;
		trials++;
		spent = ks_calib_now() - start;
	} while (trials < sp->max_trials &&
		 (trials < sp->min_trials || spent < sp->budget));
	p->bytes_per_s = clean > 0 ? clean : any;
	p->busy = clean == 0;
	return 0;
}

int ks_calib_mem_measure(const struct ks_calib_opts *o,
			 const struct ks_calib_plan *plan,
			 struct ks_calib_team *team, struct ks_calib *c,
			 struct ks_err *err)
{
	const struct sweep_params *sp = plan->quick ? &quick_params : &full_params;
	struct ks_calib_level levels[KS_CALIB_MAX_CACHES + 1];
	struct ks_calib_mem_point pts[MAX_SIZES];
	uint64_t sizes[MAX_SIZES];
	int threads = ks_calib_team_size(team);
	size_t nsizes, nlev;
	struct mem_job j;
	char what[64], human[32], busy[128];
	int rc = 0;

	memset(&j, 0, sizeof(j));
	nsizes = ks_calib_mem_sizes(&c->machine, plan, sizes, MAX_SIZES);
	nlev = ks_calib_mem_levels(&c->machine, threads, levels);
	if (nsizes == 0)
		return ks_err_set(err, -ENOMEM, "no memory to measure with "
				  "(%" PRIu64 " bytes allowed)", plan->mem_limit);
	j.k = ks_calib_read_kernel_best();
	j.t = calloc((size_t)threads, sizeof(*j.t));
	if (!j.t)
		return ks_err_set(err, -ENOMEM, "out of memory");
	j.cap = (size_t)(sizes[nsizes - 1] / (uint64_t)threads / sizeof(double));
	ks_calib_fmt_bytes(sizes[nsizes - 1], human, sizeof(human));
	snprintf(what, sizeof(what), "allocating %s", human);
	ks_calib_progress(o, "memory", what, 0, (int)nsizes);
	ks_calib_team_run(team, job_alloc, &j);
	for (int i = 0; i < threads; i++)
		if (j.t[i].failed) {
			rc = ks_err_set(err, -ENOMEM, "cannot allocate %s for the "
					"memory sweep", human);
			goto out;
		}

	for (size_t i = 0; i < nsizes; i++) {
		j.n = (size_t)(sizes[i] / (uint64_t)threads / sizeof(double));
		j.n -= j.n % j.k->granule;
		ks_calib_fmt_bytes(sizes[i], human, sizeof(human));
		snprintf(what, sizeof(what), "%s working set", human);
		ks_calib_progress(o, "memory", what, (int)i + 1, (int)nsizes);
		pts[i].total = (uint64_t)j.n * sizeof(double) * (uint64_t)threads;
		rc = measure_point(team, &j, threads, sp, &pts[i], err);
		if (rc)
			goto out;
	}

	c->nmem = 0;
	busy[0] = '\0';
	for (size_t l = 0; l < nlev && c->nmem < KS_CALIB_MAX; l++) {
		int b = ks_calib_mem_pick(&levels[l], threads, pts, nsizes);
		struct ks_calib_ceiling *ce;

		if (b < 0) {
			if (levels[l].total_min) {
				char need[32];

				ks_calib_fmt_bytes(levels[l].total_min, need, sizeof(need));
				ks_calib_fmt_bytes(plan->mem_limit, human, sizeof(human));
				ks_calib_note(o, true, "DRAM bandwidth not measured: it "
					      "needs a working set of %s (4x the "
					      "last-level cache), and only %s may "
					      "be used (a quarter of the available "
					      "memory)", need, human);
			} else {
				ks_calib_note(o, true, "%s bandwidth not measured: no "
					      "working set fits it", levels[l].name);
			}
			continue;
		}
		if (pts[b].busy)
			snprintf(busy + strlen(busy), sizeof(busy) - strlen(busy), "%s%.15s",
				 busy[0] ? ", " : "", levels[l].name);
		ce = &c->mem[c->nmem++];
		memset(ce, 0, sizeof(*ce));
		snprintf(ce->name, sizeof(ce->name), "%.15s", levels[l].name);
		ce->per_s = pts[b].bytes_per_s;
		ce->working_set = pts[b].total;
		snprintf(ce->how, sizeof(ce->how), "C, %s read of doubles, %d thread%s",
			 j.k->isa, threads, threads == 1 ? "" : "s");
	}
	if (busy[0])
		ks_calib_note(o, true, "other programs kept the CPUs busy during "
			      "every trial of %s: %s may be low; run 'kscope "
			      "calibrate --force' when the machine is idle", busy,
			      strchr(busy, ',') ? "those ceilings" : "that ceiling");
	/* Fastest first, whatever the levels' order (a noisy level can beat
	 * the one above it). */
	for (size_t a = 1; a < c->nmem; a++)
		for (size_t b = a; b > 0 && c->mem[b].per_s > c->mem[b - 1].per_s; b--) {
			struct ks_calib_ceiling tmp = c->mem[b];

			c->mem[b] = c->mem[b - 1];
			c->mem[b - 1] = tmp;
		}
out:
	ks_calib_team_run(team, job_free, &j);
	free(j.t);
	return rc;
}
