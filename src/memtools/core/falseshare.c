/*
 * False sharing in the line shadow: once a second thread touches a line,
 * a per-line detail takes over from the SMU's first-thread fields and
 * keeps, per thread, the words read and written with their counts, and
 * per (thread, site) the accesses with the front-end's context of the
 * first one; at report time each such line gets the verdict of
 * mtcore.h (false, true, mixed, read) from the word masks alone, so it
 * does not depend on how the threads happened to interleave; a false
 * line without sustained writes by two threads is read-mostly instead.
 * Freestanding: no library calls.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mtcore_int.h"

/* ------------------------------------------------------------------ */
/* Per-line detail                                                     */
/* ------------------------------------------------------------------ */

/* Grows one of the detail's arrays (the allocator has no realloc) to as
 * many entries as fit the next power of two of bytes: allocators serve
 * small blocks from power-of-two size classes (the compiled front end's
 * does), so doubling the entries of a 40-byte entry would leave up to
 * half of each block unused -- on a line every thread reads from several
 * instructions (a shared matrix: 20 to 30 entries), the most memory the
 * analysis takes.  Returns the new array or NULL (the old one is then
 * kept). */
static void *grow(struct ks_mt *m, void *old, unsigned n, unsigned *cap,
		  size_t elem)
{
	size_t bytes = 128;
	unsigned ncap;
	unsigned char *nw;

	while (bytes < (*cap + 1) * elem || bytes < 4 * elem)
		bytes *= 2;
	ncap = (unsigned)(bytes / elem);
	nw = ks_mt_mem_zalloc(&m->alloc, &m->bytes, ncap * elem);
	const unsigned char *o = old;
	size_t i;

	if (!nw)
		return NULL;
	for (i = 0; i < n * elem; i++)
		nw[i] = o[i];
	ks_mt_mem_free(&m->alloc, &m->bytes, old, *cap * elem);
	*cap = ncap;
	return nw;
}

/* The entry of tid, inserted in tid order if new; NULL when out of
 * memory. */
static struct ks_mt_line_thread *detail_thread(struct ks_mt *m,
					       struct ks_mt_detail *d,
					       unsigned tid)
{
	struct ks_mt_line_thread *t;
	unsigned lo = 0, hi = d->nthr, mid, i;

	if (d->thint < d->nthr && d->thr[d->thint].tid == tid)
		return &d->thr[d->thint];
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (d->thr[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < d->nthr && d->thr[lo].tid == tid) {
		d->thint = lo;
		return &d->thr[lo];
	}
	if (d->nthr == d->cthr) {
		t = grow(m, d->thr, d->nthr, &d->cthr, sizeof(*t));
		if (!t)
			return NULL;
		d->thr = t;
	}
	for (i = d->nthr; i > lo; i--)
		d->thr[i] = d->thr[i - 1];
	t = &d->thr[lo];
	t->tid = tid;
	t->rmask = t->wmask = 0;
	t->reads = t->writes = 0;
	d->nthr++;
	d->thint = lo;
	return t;
}

/* The entry of (tid, site), created at the end of tid's group if new.
 * Beyond KS_MT_MAX_LINE_SITES entries with a site, the thread's further
 * sites share its (tid, NULL) entry.  NULL when out of memory. */
static struct ks_mt_line_site *detail_site(struct ks_mt *m, struct ks_mt_detail *d,
					   unsigned tid, struct ks_mt_site *site)
{
	struct ks_mt_line_site *e;
	unsigned lo = 0, hi = d->nsite, mid, i, ovf = d->nsite;

	if (d->shint < d->nsite && d->site[d->shint].tid == tid &&
	    d->site[d->shint].site == site)
		return &d->site[d->shint];
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (d->site[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < d->nsite && d->site[i].tid == tid; i++) {
		if (d->site[i].site == site) {
			d->shint = i;
			return &d->site[i];
		}
		if (d->site[i].site == NULL)
			ovf = i;
	}
	if (site && d->nnamed >= KS_MT_MAX_LINE_SITES) {
		if (ovf < d->nsite) {
			d->shint = ovf;
			return &d->site[ovf];
		}
		site = NULL;
	}
	if (d->nsite == d->csite) {
		e = grow(m, d->site, d->nsite, &d->csite, sizeof(*e));
		if (!e)
			return NULL;
		d->site = e;
	}
	for (hi = d->nsite; hi > i; hi--)
		d->site[hi] = d->site[hi - 1];
	e = &d->site[i];
	e->tid = tid;
	e->site = site;
	e->context = NULL;
	e->reads = e->writes = 0;
	e->words = 0;
	d->nsite++;
	d->shint = i;
	/* An overflow entry stands for several sites, so no single context
	 * describes it; the front-end gets called for real sites only. */
	if (site) {
		d->nnamed++;
		if (m->cfg.context)
			e->context = m->cfg.context(m->cfg.context_ctx, tid, site);
	}
	return e;
}

static void detail_free(struct ks_mt *m, struct ks_mt_detail *d)
{
	ks_mt_mem_free(&m->alloc, &m->bytes, d->thr, d->cthr * sizeof(*d->thr));
	ks_mt_mem_free(&m->alloc, &m->bytes, d->site, d->csite * sizeof(*d->site));
	ks_mt_mem_free(&m->alloc, &m->bytes, d, sizeof(*d));
}

/* A second thread arrived: move what the first thread did into a new
 * detail.  Its reads and writes so far go to the entry of its first site
 * on the line (the context callback is called for it now, from the
 * second thread's access, with the first thread's tid). */
static struct ks_mt_detail *share(struct ks_mt *m, struct ks_mt_smu_fs *f)
{
	struct ks_mt_detail *d;
	struct ks_mt_line_thread *t;
	struct ks_mt_line_site *e;
	unsigned owner = (unsigned)(f->rt >> KS_MT_FS_TID_SHIFT) & 0xfffu;
	uint64_t reads = f->rt & KS_MT_FS_READS;

	d = ks_mt_mem_zalloc(&m->alloc, &m->bytes, sizeof(*d));
	if (!d)
		return NULL;
	t = detail_thread(m, d, owner);
	e = t ? detail_site(m, d, owner, f->u.site) : NULL;
	if (!e) {
		detail_free(m, d);
		return NULL;
	}
	t->rmask = f->rmask;
	t->wmask = f->wmask;
	t->reads = reads;
	t->writes = f->writes;
	e->reads = reads;
	e->writes = f->writes;
	/* Which of the thread's words were this site's is not known: the
	 * site's next accesses say. */
	e->words = 0;
	f->u.d = d;
	f->rt |= KS_MT_FS_SHARED;
	return d;
}

void ks_mt_fs_record(struct ks_mt *m, struct ks_mt_smu_fs *f, unsigned tid,
		     bool write, uint64_t mask, struct ks_mt_site *site)
{
	struct ks_mt_detail *d;
	struct ks_mt_line_thread *t;
	struct ks_mt_line_site *e;

	if (f->rt & KS_MT_FS_SHARED) {
		d = f->u.d;
	} else {
		d = share(m, f);
		if (!d)
			return;
	}
	t = detail_thread(m, d, tid);
	if (!t)
		return;
	e = detail_site(m, d, tid, site);
	if (e)
		e->words |= mask;
	if (write) {
		if (!m->cfg.min_write || (t->wmask & mask) != mask)
			t->wmask |= mask;
		t->writes++;
		if (e)
			e->writes++;
	} else {
		if (!m->cfg.min_write || (t->rmask & mask) != mask)
			t->rmask |= mask;
		t->reads++;
		if (e)
			e->reads++;
	}
}

void ks_mt_fs_add(struct ks_mt *m, struct ks_mt_smu_fs *f, unsigned tid,
		  bool write, struct ks_mt_site *site, uint64_t n, uint64_t words)
{
	struct ks_mt_detail *d = f->u.d;
	struct ks_mt_line_thread *t = detail_thread(m, d, tid);
	struct ks_mt_line_site *e = t ? detail_site(m, d, tid, site) : NULL;

	if (!t)
		return;
	if (e)
		e->words |= words;
	if (write) {
		t->wmask |= words;
		t->writes += n;
		if (e)
			e->writes += n;
	} else {
		t->rmask |= words;
		t->reads += n;
		if (e)
			e->reads += n;
	}
}

void ks_mt_fs_free(struct ks_mt *m, struct ks_mt_smu_fs *f)
{
	if (f->rt & KS_MT_FS_SHARED)
		detail_free(m, f->u.d);
}

/* ------------------------------------------------------------------ */
/* Reporting                                                           */
/* ------------------------------------------------------------------ */

/* The verdict from the word masks: every pair of threads of which one
 * writes is true sharing if a word written by one is touched by the
 * other, false sharing otherwise.  Each pair weighs the accesses of its
 * less active thread (how often the two could have taken the line from
 * each other), so that a thread that reads the results once after the
 * workers are done does not turn a falsely shared line into a mixed one:
 * a kind of pair must weigh KS_MT_DOMINANCE times the other to decide
 * the line alone. */
#define KS_MT_DOMINANCE 8u

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* Whether the line keeps moving between caches: one thread wrote it
 * min_writes times and another thread came back to it as often (reading
 * or writing).  False sharing costs when a writer keeps invalidating the
 * others' copies, not when threads store once next to data everyone
 * reads. */
static bool sustained_writes(const struct ks_mt_line_thread *t, unsigned n,
			     uint32_t min_writes)
{
	if (min_writes == 0)
		return true;
	for (unsigned i = 0; i < n; i++) {
		if (t[i].writes < min_writes)
			continue;
		for (unsigned j = 0; j < n; j++)
			if (j != i && sat_add(t[j].reads, t[j].writes) >= min_writes)
				return true;
	}
	return false;
}

static enum ks_mt_verdict line_verdict(const struct ks_mt_line_thread *t,
				       unsigned n, uint32_t min_writes)
{
	uint64_t tru = 0, fal = 0;
	bool any = false;
	unsigned i, j;

	if (n < 2)
		return KS_MT_PRIVATE;
	for (i = 0; i < n; i++) {
		uint64_t ai = sat_add(t[i].reads, t[i].writes);
		for (j = i + 1; j < n; j++) {
			uint64_t aj = sat_add(t[j].reads, t[j].writes);
			uint64_t w = ai < aj ? ai : aj;
			if (!(t[i].wmask | t[j].wmask))
				continue;
			any = true;
			if (w == 0)
				w = 1;
			if ((t[i].wmask & (t[j].rmask | t[j].wmask)) |
			    (t[j].wmask & (t[i].rmask | t[i].wmask)))
				tru = sat_add(tru, w);
			else
				fal = sat_add(fal, w);
		}
	}
	if (!any)
		return KS_MT_READ;
	if (tru == 0 || (fal / KS_MT_DOMINANCE >= tru && fal >= KS_MT_DOMINANCE))
		return sustained_writes(t, n, min_writes) ? KS_MT_FALSE : KS_MT_READ_MOSTLY;
	if (fal == 0 || (tru / KS_MT_DOMINANCE >= fal && tru >= KS_MT_DOMINANCE))
		return KS_MT_TRUE;
	return KS_MT_MIXED;
}

/* What the falseshare state f says of its line's threads, into li (one
 * holds a private line's thread); false when no thread touched it. */
static bool fs_threads(const struct ks_mt *m, const struct ks_mt_smu_fs *f,
		       struct ks_mt_line_info *li, struct ks_mt_line_thread *one)
{
	li->word_size = 1u << m->word_shift;
	li->misses = f->c.misses;
	li->invalidations = f->c.invals;
	li->potential_invalidations = 0;
	if (f->rt & KS_MT_FS_SHARED) {
		const struct ks_mt_detail *d = f->u.d;

		li->nthreads = d->nthr;
		li->threads = d->thr;
		li->nsites = d->nsite;
		li->sites = d->site;
		li->verdict = line_verdict(d->thr, d->nthr, m->cfg.min_writes);
		if (d->nthr >= 2)
			for (unsigned k = 0; k < d->nthr; k++)
				li->potential_invalidations += d->thr[k].writes;
		return d->nthr > 0;
	}
	one->tid = (unsigned)(f->rt >> KS_MT_FS_TID_SHIFT) & 0xfffu;
	one->rmask = f->rmask;
	one->wmask = f->wmask;
	one->reads = f->rt & KS_MT_FS_READS;
	one->writes = f->writes;
	li->nthreads = 1;
	li->threads = one;
	li->nsites = 0;
	li->sites = NULL;
	li->verdict = KS_MT_PRIVATE;
	return one->reads || one->writes;
}

/* What ks_mt_for_each_shared_line and ..._near_others pass to their
 * chunk walkers. */
struct line_walk {
	struct ks_mt *m;
	uint64_t min;              /* near lines: the accesses that count */
	ks_mt_line_fn fn;
	void *arg;
};

static void fe_chunk(void *arg, uintptr_t cidx, void *chunk)
{
	struct line_walk *a = arg;
	struct ks_mt *m = a->m;
	unsigned char *p = chunk;
	uintptr_t i, n = m->lc_mask + 1;

	for (i = 0; i < n; i++, p += m->smu_size) {
		const struct ks_mt_smu_fs *f = (const struct ks_mt_smu_fs *)(const void *)p;
		struct ks_mt_line_info li;
		struct ks_mt_line_thread one;

		if (!(f->rt & KS_MT_FS_SHARED) || f->u.d->nthr < 2)
			continue;
		(void)fs_threads(m, f, &li, &one);
		li.line_addr = ((cidx << m->lc_shift) | i) << m->line_shift;
		a->fn(a->arg, &li);
	}
}

void ks_mt_for_each_shared_line(struct ks_mt *m, ks_mt_line_fn fn, void *arg)
{
	struct line_walk a = { .m = m, .fn = fn, .arg = arg };

	if (!m->cfg.falseshare || !fn)
		return;
	ks_mt_tab_for_each(&m->tab, fe_chunk, &a);
}

/* The falseshare state of line number idx (address >> line_shift), or
 * NULL. */
static const struct ks_mt_smu_fs *fs_of(const struct ks_mt *m, uintptr_t idx)
{
	const unsigned char *ch = ks_mt_tab_get(&m->tab, idx >> m->lc_shift);

	if (!ch)
		return NULL;
	return (const struct ks_mt_smu_fs *)(const void *)(ch + (idx & m->lc_mask) * m->smu_size);
}

/* Whether a thread of li other than tid came to it min times, and one of
 * the two (this one, with writes, or tid, whose writes are given) wrote
 * min times. */
static bool other_busy(const struct ks_mt_line_info *li, unsigned tid, uint64_t tid_writes,
		       uint64_t min)
{
	for (unsigned k = 0; k < li->nthreads; k++) {
		const struct ks_mt_line_thread *t = &li->threads[k];

		if (t->tid != tid && sat_add(t->reads, t->writes) >= min &&
		    (t->writes >= min || tid_writes >= min))
			return true;
	}
	return false;
}

static void near_chunk(void *arg, uintptr_t cidx, void *chunk)
{
	struct line_walk *a = arg;
	struct ks_mt *m = a->m;
	unsigned char *p = chunk;
	uintptr_t i, n = m->lc_mask + 1;

	for (i = 0; i < n; i++, p += m->smu_size) {
		const struct ks_mt_smu_fs *f = (const struct ks_mt_smu_fs *)(const void *)p;
		uintptr_t idx = (cidx << m->lc_shift) | i;
		struct ks_mt_line_info li, nb;
		struct ks_mt_line_thread one, nbone;
		bool near = false;

		if (!fs_threads(m, f, &li, &one))
			continue;
		for (int side = -1; side <= 1 && !near; side += 2) {
			const struct ks_mt_smu_fs *g;

			if ((side < 0 && idx == 0) || (side > 0 && idx == UINTPTR_MAX >> m->line_shift))
				continue;
			g = fs_of(m, idx + (uintptr_t)(intptr_t)side);
			if (!g || !fs_threads(m, g, &nb, &nbone))
				continue;
			for (unsigned k = 0; k < li.nthreads && !near; k++) {
				const struct ks_mt_line_thread *t = &li.threads[k];

				near = sat_add(t->reads, t->writes) >= a->min &&
				       other_busy(&nb, t->tid, t->writes, a->min);
			}
		}
		if (near) {
			li.line_addr = idx << m->line_shift;
			a->fn(a->arg, &li);
		}
	}
}

void ks_mt_for_each_line_near_others(struct ks_mt *m, uint64_t min, ks_mt_line_fn fn, void *arg)
{
	struct line_walk a = { .m = m, .min = min ? min : 1, .fn = fn, .arg = arg };

	if (!m->cfg.falseshare || !fn)
		return;
	ks_mt_tab_for_each(&m->tab, near_chunk, &a);
}

const char *ks_mt_verdict_name(enum ks_mt_verdict v)
{
	switch (v) {
	case KS_MT_PRIVATE:
		return "private";
	case KS_MT_READ:
		return "read";
	case KS_MT_FALSE:
		return "false";
	case KS_MT_TRUE:
		return "true";
	case KS_MT_MIXED:
		return "mixed";
	case KS_MT_READ_MOSTLY:
		return "read-mostly";
	}
	return "?";
}
