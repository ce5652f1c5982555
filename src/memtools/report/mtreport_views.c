/*
 * What the memory-tool reports derive from the records before writing:
 * the filter and error totals of memcheck, the sorted site and object
 * tables of contention, and for falseshare the falsely shared objects and
 * the paper's three views (per thread, global-all-threads-info keyed by
 * (variable, context), global-all-threads-compact-info merged per
 * variable).  Computed once here so the text, JSON and SARIF reports
 * cannot disagree; everything is sorting and merging, O(n log n).
 *
 * A false-sharing "object" is the variable an access record names (else
 * its line's variable); a line with no variable at all stands for itself.
 * A line holding two variables therefore belongs to both objects, and its
 * per-line counts (misses, invalidations, potential invalidations) show
 * under each: they are properties of the line.  Only lines whose verdict
 * is false or mixed make objects; true sharing is listed on its own.
 */
#include "mtreport_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* memcheck and contention                                             */
/* ------------------------------------------------------------------ */

static int cmp_leak(const void *a, const void *b, void *ctx)
{
	const struct ks_mtr_run *r = ctx;
	const struct ks_mtr_leak *x = &r->leaks[*(const uint32_t *)a];
	const struct ks_mtr_leak *y = &r->leaks[*(const uint32_t *)b];

	/* Valgrind's order: smallest first, so the largest ends up next to
	 * the summary.  Ties keep the file's order. */
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks < y->blocks ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int cmp_site(const void *a, const void *b, void *ctx)
{
	const struct ks_mtr_run *r = ctx;
	uint64_t x = ks_mtr_score(&r->sites[*(const uint32_t *)a].c);
	uint64_t y = ks_mtr_score(&r->sites[*(const uint32_t *)b].c);

	if (x != y)
		return x > y ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static uint64_t object_score(const struct ks_mtr_object *o)
{
	return o->misses + o->invalidations;
}

static int cmp_object(const void *a, const void *b, void *ctx)
{
	const struct ks_mtr_run *r = ctx;
	uint64_t x = object_score(&r->objects[*(const uint32_t *)a]);
	uint64_t y = object_score(&r->objects[*(const uint32_t *)b]);

	if (x != y)
		return x > y ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static int cmp_cline(const void *a, const void *b, void *ctx)
{
	const struct ks_mtr_run *r = ctx;
	const struct ks_mtr_line *x = &r->clines[*(const uint32_t *)a];
	const struct ks_mtr_line *y = &r->clines[*(const uint32_t *)b];
	uint64_t sx = x->misses + x->invalidations, sy = y->misses + y->invalidations;

	if (sx != sy)
		return sx > sy ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static uint32_t *iota(size_t n)
{
	uint32_t *v = malloc((n ? n : 1) * sizeof(*v));

	if (v)
		for (size_t i = 0; i < n; i++)
			v[i] = (uint32_t)i;
	return v;
}

/* True if one of the top three frames has a line number: what the filter
 * keeps (an error deep in a library without debug information is rarely
 * the program's).  Valgrind's replacement functions on top (malloc,
 * memcpy: they have no line) are not counted among the three, and
 * Valgrind's "(below main)", the C library's start-up code that called
 * main, has a line but is never where a defect is. */
static bool has_line_on_top(const struct ks_mtr_stack *s)
{
	uint32_t i = 0;

	while (i + 1 < s->nframes && ks_mtr_frame_is_replacement(&s->frames[i]))
		i++;
	for (uint32_t k = 0; i < s->nframes && k < 3; i++, k++)
		if (s->frames[i].line &&
		    !(s->frames[i].fn && !strcmp(s->frames[i].fn, "(below main)")))
			return true;
	return false;
}

static void views_memcheck(struct ks_mtr_run *r, const struct ks_mtr_opts *o)
{
	for (size_t i = 0; i < r->nerrors; i++) {
		struct ks_mtr_error *e = &r->errors[i];

		e->filtered = o->filter && !has_line_on_top(&r->stacks[e->stack]);
		r->nfiltered += e->filtered;
		if (e->filtered)
			continue;
		r->nreported++;
		r->occurrences += e->count;
	}
	r->nreported_errors = r->nreported;
	/* Valgrind counts each loss record as one error in one context (of
	 * the kinds its --errors-for-leak-kinds names). */
	for (size_t i = 0; i < r->nleaks; i++) {
		struct ks_mtr_leak *l = &r->leaks[i];

		l->filtered = o->filter && !has_line_on_top(&r->stacks[l->stack]);
		r->nfiltered += l->filtered;
		if (l->filtered || l->not_error)
			continue;
		r->nreported++;
		r->occurrences++;
	}
	qsort_r(r->leak_order, r->nleaks, sizeof(uint32_t), cmp_leak, r);
	/* The filtered leaks go last; the others keep their order. */
	for (size_t i = 0; i < r->nleaks; i++)
		if (!r->leaks[r->leak_order[i]].filtered)
			r->leak_order[r->nleaks_shown++] = r->leak_order[i];
	for (size_t i = 0, k = r->nleaks_shown; i < r->nleaks; i++)
		if (r->leaks[i].filtered)
			r->leak_order[k++] = (uint32_t)i;
}

static void views_contention(struct ks_mtr_run *r)
{
	if (r->total.present) {
		r->sum = r->total.c;
		r->has_contention = true;
		r->contention_accesses = r->total.contention_accesses;
	} else {
		/* A truncated run: the threads' own counts are all there is. */
		for (size_t i = 0; i < r->nthreads; i++) {
			const struct ks_mtr_counts *c = &r->threads[i].c;

			r->sum.accesses += c->accesses;
			r->sum.reads += c->reads;
			r->sum.writes += c->writes;
			r->sum.cold_misses += c->cold_misses;
			r->sum.misses += c->misses;
			r->sum.invalidations += c->invalidations;
		}
	}
	qsort_r(r->site_order, r->nsites, sizeof(uint32_t), cmp_site, r);
	qsort_r(r->object_order, r->nobjects, sizeof(uint32_t), cmp_object, r);
	qsort_r(r->cline_order, r->nclines, sizeof(uint32_t), cmp_cline, r);
}

/* ------------------------------------------------------------------ */
/* falseshare                                                          */
/* ------------------------------------------------------------------ */

struct fs_build {
	struct ks_mtr_run *r;
	uint32_t *by_var;        /* var index -> fobj, or MTR_NONE */
	uint32_t *by_line;       /* line index -> fobj for variable-less lines */
	struct ks_mtr_map has_line; /* (fobj << 32 | line) already in fobj->lines */
	size_t cap_fobjs;
	struct ks_mtr_fentry *raw;  /* one per access record on a false/mixed line */
	size_t nraw, cap_raw;
};

/* The distinct variables of l's parts (a: those of the parts where that
 * access touched a word, or, when the record does not say which words
 * (or says none: a site whose accesses were all made before a second
 * thread came), its thread's) into vs; with no parts, l's variable (a NULL) or nothing.
 * Returns how many. */
static unsigned line_vars(const struct ks_mtr_line *l, const struct ks_mtr_access *a,
			  uint32_t vs[64])
{
	const struct ks_mtr_lthread *t = NULL;
	unsigned n = 0;

	if (a && (!a->has_words || !a->words)) {
		for (uint32_t i = 0; i < l->nthreads && !t; i++)
			if (l->threads[i].tid == a->tid)
				t = &l->threads[i];
		if (!t)
			return 0;
	}
	for (uint32_t p = 0; p < l->nparts && n < 64; p++) {
		const struct ks_mtr_part *pt = &l->parts[p];
		bool dup = false, mine = !a;

		if (pt->var == MTR_NONE)
			continue;
		for (unsigned w = pt->first; a && w < pt->first + pt->nwords && !mine; w++)
			mine = t ? (t->read[w / 64] | t->write[w / 64]) >> (w % 64) & 1
				 : w < 64 && (a->words >> w & 1);
		for (unsigned k = 0; k < n && !dup; k++)
			dup = vs[k] == pt->var;
		if (mine && !dup)
			vs[n++] = pt->var;
	}
	if (!n && !a)
		vs[n++] = l->var;
	return n;
}

/* The index of variable v in l->vars (present: line_vars gives only
 * those). */
static unsigned var_index(const struct ks_mtr_line *l, uint32_t v)
{
	unsigned i = 0;

	while (i + 1 < l->nvars && l->vars[i] != v)
		i++;
	return i;
}

/* Whether a variable of a line counts as shared there: count accesses
 * reached it, at least the run's min_accesses (1 without), or there is
 * nothing to choose (`choose` false: the line has one variable, or no
 * access records to tell). */
static bool var_counts(const struct ks_mtr_run *r, bool choose, uint64_t count)
{
	uint64_t min = r->total.has_quiet && r->total.min_accesses ? r->total.min_accesses : 1;

	return !choose || count >= min;
}

static uint32_t fobj_for(struct fs_build *b, uint32_t var, uint32_t line)
{
	struct ks_mtr_run *r = b->r;
	uint32_t *slot = var != MTR_NONE ? &b->by_var[var] : &b->by_line[line];
	struct ks_mtr_fobj *f;

	if (*slot != MTR_NONE)
		return *slot;
	f = ks_mtr_vec_push(&r->fobjs, &r->nfobjs, &b->cap_fobjs, sizeof(*f));
	if (!f)
		return MTR_NONE;
	f->var = var;
	f->line = var != MTR_NONE ? MTR_NONE : line;
	f->verdict = MTR_FALSE;
	*slot = (uint32_t)(r->nfobjs - 1);
	return *slot;
}

static int fobj_add_line(struct fs_build *b, uint32_t fi, uint32_t line)
{
	struct ks_mtr_fobj *f = &b->r->fobjs[fi];
	uint64_t key = (uint64_t)fi << 32 | line;
	uint32_t *p;

	if (ks_mtr_map_get(&b->has_line, key) != MTR_NONE)
		return 0;
	if (ks_mtr_map_put(&b->has_line, key, 1))
		return -ENOMEM;
	p = ks_mtr_vec_push(&f->lines, &f->nlines, &f->cap_lines, sizeof(*p));
	if (!p)
		return -ENOMEM;
	*p = line;
	return 0;
}

static bool line_is_false(const struct ks_mtr_line *l)
{
	return l->verdict != MTR_TRUE;
}

static uint64_t entry_count(const struct ks_mtr_fentry *e)
{
	return e->reads + e->writes;
}

static int cmp_u32_addr(const void *a, const void *b, void *ctx)
{
	const struct ks_mtr_run *r = ctx;
	uint64_t x = r->lines[*(const uint32_t *)a].addr, y = r->lines[*(const uint32_t *)b].addr;

	return x < y ? -1 : x > y;
}

static int cmp_fobj(const void *a, const void *b, void *ctx)
{
	const struct ks_mtr_run *r = ctx;
	const struct ks_mtr_fobj *x = &r->fobjs[*(const uint32_t *)a];
	const struct ks_mtr_fobj *y = &r->fobjs[*(const uint32_t *)b];
	uint64_t xa, ya, xs, ys;

	/* The costliest first: potential invalidations are what padding
	 * would save. */
	if (x->potential != y->potential)
		return x->potential > y->potential ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	ks_mtr_fobj_range(r, x, &xa, &xs);
	ks_mtr_fobj_range(r, y, &ya, &ys);
	if (xa != ya)
		return xa < ya ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Grouping order: (fobj, context, tid). */
static int cmp_key_global(const void *a, const void *b)
{
	const struct ks_mtr_fentry *x = a, *y = b;

	if (x->fobj != y->fobj)
		return x->fobj < y->fobj ? -1 : 1;
	if (x->context != y->context)
		return x->context < y->context ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Grouping order: (process, tid, fobj, context). */
static int cmp_key_thread(const void *a, const void *b)
{
	const struct ks_mtr_fentry *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return cmp_key_global(a, b);
}

/* Display order: count descending, then the grouping order. */
static int cmp_count_global(const void *a, const void *b)
{
	uint64_t x = entry_count(a), y = entry_count(b);

	if (x != y)
		return x > y ? -1 : 1;
	return cmp_key_global(a, b);
}

static int cmp_count_thread(const void *a, const void *b)
{
	const struct ks_mtr_fentry *x = a, *y = b;

	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return cmp_count_global(a, b);
}

static int cmp_compact(const void *a, const void *b, void *ctx)
{
	const struct ks_mtr_run *r = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (r->fobjs[i].count != r->fobjs[j].count)
		return r->fobjs[i].count > r->fobjs[j].count ? -1 : 1;
	return i < j ? -1 : 1;
}

/* Sorts src (n entries) with keycmp, merges runs equal under same and
 * returns them sorted with showcmp in *out. */
static int merge_entries(const struct ks_mtr_fentry *src, size_t n,
			 int (*keycmp)(const void *, const void *), bool keep_tid,
			 int (*showcmp)(const void *, const void *),
			 struct ks_mtr_fentry **out, size_t *nout)
{
	struct ks_mtr_fentry *v = malloc((n ? n : 1) * sizeof(*v));
	size_t m = 0;

	if (!v)
		return -ENOMEM;
	if (n)
		memcpy(v, src, n * sizeof(*v));
	if (!keep_tid)
		for (size_t i = 0; i < n; i++) {
			v[i].tid = 0;
			v[i].proc = 0;
		}
	qsort(v, n, sizeof(*v), keycmp);
	for (size_t i = 0; i < n; i++) {
		if (m && v[m - 1].proc == v[i].proc && v[m - 1].tid == v[i].tid &&
		    v[m - 1].fobj == v[i].fobj &&
		    v[m - 1].context == v[i].context) {
			v[m - 1].reads += v[i].reads;
			v[m - 1].writes += v[i].writes;
			continue;
		}
		v[m++] = v[i];
	}
	qsort(v, m, sizeof(*v), showcmp);
	*out = v;
	*nout = m;
	return 0;
}

struct srcline {
	const struct ks_mtr_frame *f;
	size_t order;            /* the first context it came from */
};

static int cmp_srcline_where(const void *a, const void *b)
{
	const struct srcline *x = a, *y = b;
	int c = strcmp(x->f->file, y->f->file);

	if (c)
		return c;
	if (x->f->line != y->f->line)
		return x->f->line < y->f->line ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int cmp_srcline_order(const void *a, const void *b)
{
	const struct srcline *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

/* The distinct file:line of an object's contexts, in context order. */
static int source_lines(struct ks_mtr_run *r, struct ks_mtr_fobj *f)
{
	struct srcline *v = malloc((f->ncontexts ? f->ncontexts : 1) * sizeof(*v));
	size_t n = 0, m = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < f->ncontexts; i++) {
		const struct ks_mtr_frame *fr =
			ks_mtr_stack_line_frame(&r->stacks[f->contexts[i].stack]);

		if (fr)
			v[n++] = (struct srcline){ fr, i };
	}
	qsort(v, n, sizeof(*v), cmp_srcline_where);
	for (size_t i = 0; i < n; i++)
		if (!m || v[m - 1].f->line != v[i].f->line ||
		    strcmp(v[m - 1].f->file, v[i].f->file) != 0)
			v[m++] = v[i];
	qsort(v, m, sizeof(*v), cmp_srcline_order);
	f->srclines = malloc((m ? m : 1) * sizeof(*f->srclines));
	if (!f->srclines) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m; i++)
		f->srclines[i] = v[i].f;
	f->nsrclines = m;
	free(v);
	return 0;
}

static int views_falseshare(struct ks_mtr_run *r)
{
	struct fs_build b = { .r = r };
	uint32_t *order = NULL, *rank = NULL;
	size_t *vbase = NULL;
	uint64_t *vcount = NULL;
	bool *laccess = NULL;
	int rc = -ENOMEM;

	b.by_var = malloc((r->nvars ? r->nvars : 1) * sizeof(uint32_t));
	b.by_line = malloc((r->nlines ? r->nlines : 1) * sizeof(uint32_t));
	r->true_lines = malloc((r->nlines ? r->nlines : 1) * sizeof(uint32_t));
	if (!b.by_var || !b.by_line || !r->true_lines)
		goto out;
	memset(b.by_var, 0xff, (r->nvars ? r->nvars : 1) * sizeof(uint32_t));
	memset(b.by_line, 0xff, (r->nlines ? r->nlines : 1) * sizeof(uint32_t));

	/* The accesses to each variable of each false line (vcount, at
	 * vbase[line] + the variable's index in the line's vars). */
	vbase = malloc((r->nlines + 1) * sizeof(*vbase));
	if (!vbase)
		goto out;
	vbase[0] = 0;
	for (size_t i = 0; i < r->nlines; i++)
		vbase[i + 1] = vbase[i] + r->lines[i].nvars;
	vcount = calloc(vbase[r->nlines] ? vbase[r->nlines] : 1, sizeof(*vcount));
	laccess = calloc(r->nlines ? r->nlines : 1, sizeof(*laccess));
	if (!vcount || !laccess)
		goto out;
	for (size_t i = 0; i < r->naccesses; i++) {
		const struct ks_mtr_access *a = &r->accesses[i];
		const struct ks_mtr_line *l = &r->lines[a->line];
		uint32_t vs[64];
		unsigned nv = line_vars(l, a, vs);

		laccess[a->line] = true;
		for (unsigned k = 0; k < nv; k++)
			vcount[vbase[a->line] + var_index(l, vs[k])] += a->reads + a->writes;
	}

	/* Lines: each false or mixed line belongs to the object of every
	 * variable among its parts that its access records reached
	 * min_accesses times when it has several (a variable touched once
	 * beside the hot ones, a flag read at exit, is a part of the line,
	 * not a finding); to its own variable's when none did or it has no
	 * parts. */
	for (size_t i = 0; i < r->nlines; i++) {
		const struct ks_mtr_line *l = &r->lines[i];
		uint32_t vs[64], fi;
		unsigned nv, made = 0;

		if (!line_is_false(l)) {
			r->true_lines[r->ntrue++] = (uint32_t)i;
			continue;
		}
		r->false_lines++;
		nv = line_vars(l, NULL, vs);
		for (unsigned k = 0; k < nv; k++) {
			if (vs[k] == MTR_NONE ||
			    !var_counts(r, laccess[i] && l->nvars > 1,
					vcount[vbase[i] + var_index(l, vs[k])]))
				continue;
			fi = fobj_for(&b, vs[k], (uint32_t)i);
			if (fi == MTR_NONE || fobj_add_line(&b, fi, (uint32_t)i))
				goto out;
			made++;
		}
		if (!made) {
			fi = fobj_for(&b, l->var, (uint32_t)i);
			if (fi == MTR_NONE || fobj_add_line(&b, fi, (uint32_t)i))
				goto out;
		}
	}
	qsort_r(r->true_lines, r->ntrue, sizeof(uint32_t), cmp_u32_addr, r);

	/* Accesses: to the object of each variable whose words they touched
	 * in the line (made above; those of variables below min_accesses
	 * are left out), else to the line's own object. */
	for (size_t i = 0; i < r->naccesses; i++) {
		const struct ks_mtr_access *a = &r->accesses[i];
		const struct ks_mtr_line *l = &r->lines[a->line];
		uint32_t vs[64], fi;
		unsigned nv, n = 0;

		if (!line_is_false(l))
			continue;
		nv = line_vars(l, a, vs);
		for (unsigned k = 0; k < nv; k++)
			if (var_counts(r, l->nvars > 1, vcount[vbase[a->line] + var_index(l, vs[k])]))
				vs[n++] = vs[k];
		if (!nv)
			vs[n++] = a->var != MTR_NONE ? a->var : l->var;
		for (unsigned k = 0; k < n; k++) {
			struct ks_mtr_fentry *e;

			fi = fobj_for(&b, vs[k], a->line);
			if (fi == MTR_NONE || fobj_add_line(&b, fi, a->line))
				goto out;
			e = ks_mtr_vec_push(&b.raw, &b.nraw, &b.cap_raw, sizeof(*e));
			if (!e)
				goto out;
			e->tid = a->tid;
			e->proc = a->proc;
			e->fobj = fi;
			e->context = a->context;
			e->reads = a->reads;
			e->writes = a->writes;
			r->fobjs[fi].count += a->reads + a->writes;
		}
	}

	/* Per-object totals over its lines. */
	for (size_t i = 0; i < r->nfobjs; i++) {
		struct ks_mtr_fobj *f = &r->fobjs[i];

		qsort_r(f->lines, f->nlines, sizeof(uint32_t), cmp_u32_addr, r);
		for (size_t j = 0; j < f->nlines; j++) {
			const struct ks_mtr_line *l = &r->lines[f->lines[j]];

			if (l->verdict == MTR_MIXED)
				f->verdict = MTR_MIXED;
			f->potential += l->potential;
			f->misses += l->misses;
			f->invalidations += l->invalidations;
		}
	}

	/* Final object order; entries follow their objects' new indexes. */
	order = iota(r->nfobjs);
	rank = malloc((r->nfobjs ? r->nfobjs : 1) * sizeof(*rank));
	if (!order || !rank)
		goto out;
	qsort_r(order, r->nfobjs, sizeof(uint32_t), cmp_fobj, r);
	{
		struct ks_mtr_fobj *sorted = malloc((r->nfobjs ? r->nfobjs : 1) * sizeof(*sorted));

		if (!sorted)
			goto out;
		for (size_t i = 0; i < r->nfobjs; i++) {
			sorted[i] = r->fobjs[order[i]];
			rank[order[i]] = (uint32_t)i;
		}
		free(r->fobjs);
		r->fobjs = sorted;
	}
	for (size_t i = 0; i < b.nraw; i++)
		b.raw[i].fobj = rank[b.raw[i].fobj];

	if (merge_entries(b.raw, b.nraw, cmp_key_global, false, cmp_count_global,
			  &r->global, &r->nglobal) ||
	    merge_entries(b.raw, b.nraw, cmp_key_thread, true, cmp_count_thread,
			  &r->per_thread, &r->nper_thread))
		goto out;

	/* Each object's contexts, by count (the global view is so sorted). */
	for (size_t i = 0; i < r->nglobal; i++) {
		struct ks_mtr_fobj *f = &r->fobjs[r->global[i].fobj];
		struct ks_mtr_fctx *p = ks_mtr_vec_push(&f->contexts, &f->ncontexts,
							&f->cap_contexts, sizeof(*p));

		if (!p)
			goto out;
		p->stack = r->global[i].context;
		p->count = r->global[i].reads + r->global[i].writes;
	}
	for (size_t i = 0; i < r->nfobjs; i++)
		if (source_lines(r, &r->fobjs[i]))
			goto out;

	r->compact = iota(r->nfobjs);
	if (!r->compact)
		goto out;
	qsort_r(r->compact, r->nfobjs, sizeof(uint32_t), cmp_compact, r);
	rc = 0;
out:
	free(order);
	free(rank);
	free(vbase);
	free(vcount);
	free(laccess);
	free(b.by_var);
	free(b.by_line);
	free(b.raw);
	ks_mtr_map_free(&b.has_line);
	return rc;
}

int ks_mtr_views(struct ks_mtr_run *r, const struct ks_mtr_opts *o, struct ks_err *err)
{
	r->leak_order = iota(r->nleaks);
	r->site_order = iota(r->nsites);
	r->object_order = iota(r->nobjects);
	r->cline_order = iota(r->nclines);
	if (!r->leak_order || !r->site_order || !r->object_order || !r->cline_order)
		return ks_err_set(err, -ENOMEM, "out of memory");
	switch (r->start.analysis) {
	case MTR_MEMCHECK:
		views_memcheck(r, o);
		break;
	case MTR_CONTENTION:
		views_contention(r);
		break;
	case MTR_FALSESHARE:
		views_contention(r);
		if (ks_mtr_parts(r, o) || views_falseshare(r) || ks_mtr_layouts(r))
			return ks_err_set(err, -ENOMEM, "out of memory");
		break;
	}
	return 0;
}
