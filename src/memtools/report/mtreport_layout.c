/*
 * The layout prediction of falseshare (mtreport_int.h, struct
 * ks_mtr_layout): for each object that two threads or more came back to,
 * whether false sharing would appear if the object started elsewhere in
 * a cache line, or if lines were twice as long (128 bytes, as on many
 * arm64 and POWER servers), when it does not as laid out: "latent" false
 * sharing, which the next allocator, compiler or machine may bring.
 *
 * The input is what the front ends recorded of the object's lines: the
 * reported lines and the "near" records (lines next to another thread's
 * line), each with every thread's word masks and counts.  The object's
 * words are moved to a start offset o in a line of Lz bytes (byte b of
 * the object lands at o + b) and regrouped into virtual lines; a virtual
 * line gets, for each thread that touched its words, those words and the
 * thread's reads and writes on every real line that contributed words
 * (a thread's counts are per line, not per word: an upper bound).  Each
 * virtual line is then judged as the core judges a line (mtcore.h): two
 * threads each coming back --min-accesses times, one of them writing;
 * pairs of a writer and a thread on other words false, on the same words
 * true, weighed by the less active thread, the false kind deciding at 8
 * times the true; sustained writes (--min-writes).  Start offsets tried:
 * the multiples of the alignment the object is sure to have (a heap
 * block's: 16 bytes, glibc's malloc, or what aligned_alloc was asked;
 * a global's: from DWARF), below the line size.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mtreport_int.h"

#define DOMINANCE 8u     /* KS_MT_DOMINANCE of the core */
#define MAX_OBJECTS 4096 /* objects predicted; more are left out */

struct vthread {
	long long tid;
	uint64_t r[2], w[2];     /* words of the virtual line (up to 128) */
	uint64_t reads, writes;
	size_t last_rec;         /* the real line whose counts were added last */
};

struct vline {
	uint64_t index;          /* virtual line number */
	struct vthread *t;
	size_t n, cap;
	bool used;
};

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

struct limits {
	uint64_t min_accesses, min_writes;
};

/* The core's verdict on a (virtual) line, as false sharing or not (false
 * or mixed: true; true, read, private or read-mostly: false), with the
 * front ends' filter: two threads each min_accesses times, one writing. */
static bool vline_false(const struct vline *v, const struct limits *lim)
{
	uint64_t tru = 0, fal = 0;
	unsigned busy = 0;
	bool busy_writer = false, any = false, sustained = lim->min_writes == 0;

	for (size_t i = 0; i < v->n; i++) {
		uint64_t a = sat_add(v->t[i].reads, v->t[i].writes);

		if (a >= lim->min_accesses) {
			busy++;
			busy_writer |= v->t[i].writes > 0;
		}
	}
	if (busy < 2 || !busy_writer)
		return false;
	for (size_t i = 0; i < v->n; i++) {
		const struct vthread *x = &v->t[i];
		uint64_t ax = sat_add(x->reads, x->writes);

		if (!sustained && x->writes >= lim->min_writes)
			for (size_t j = 0; j < v->n && !sustained; j++)
				sustained = j != i &&
					    sat_add(v->t[j].reads, v->t[j].writes) >= lim->min_writes;
		for (size_t j = i + 1; j < v->n; j++) {
			const struct vthread *y = &v->t[j];
			uint64_t ay = sat_add(y->reads, y->writes), w = ax < ay ? ax : ay;
			bool xw = x->w[0] | x->w[1], yw = y->w[0] | y->w[1];

			if (!xw && !yw)
				continue;
			any = true;
			if (!w)
				w = 1;
			if ((x->w[0] & (y->r[0] | y->w[0])) | (x->w[1] & (y->r[1] | y->w[1])) |
			    (y->w[0] & (x->r[0] | x->w[0])) | (y->w[1] & (x->r[1] | x->w[1])))
				tru = sat_add(tru, w);
			else
				fal = sat_add(fal, w);
		}
	}
	if (!any)
		return false;
	if (tru == 0 || (fal / DOMINANCE >= tru && fal >= DOMINANCE))
		return sustained;
	if (fal == 0 || (tru / DOMINANCE >= fal && tru >= DOMINANCE))
		return false;
	return true; /* mixed */
}

static struct vthread *vthread_of(struct vline *v, long long tid)
{
	for (size_t i = 0; i < v->n; i++)
		if (v->t[i].tid == tid)
			return &v->t[i];
	if (v->n == v->cap) {
		size_t cap = v->cap ? 2 * v->cap : 8;
		struct vthread *t = realloc(v->t, cap * sizeof(*t));

		if (!t)
			return NULL;
		v->t = t;
		v->cap = cap;
	}
	memset(&v->t[v->n], 0, sizeof(v->t[v->n]));
	v->t[v->n].tid = tid;
	v->t[v->n].last_rec = SIZE_MAX;
	return &v->t[v->n++];
}

/* Whether object v (its lines recs, ascending address) laid out from
 * start offset o in lines of lz bytes has a falsely shared line.  win
 * holds the virtual lines being filled. */
static int layout_false(const struct ks_mtr_var *v, const struct ks_mtr_line *const *recs,
			size_t nrecs, uint64_t o, uint64_t lz, const struct limits *lim,
			struct vline win[2], bool *out)
{
	*out = false;
	win[0].used = win[1].used = false;
	for (size_t k = 0; k < nrecs && !*out; k++) {
		const struct ks_mtr_line *l = recs[k];

		for (unsigned w = 0; w < l->nwords; w++) {
			uint64_t x = l->addr + (uint64_t)w * l->word_size, pos, idx;
			unsigned bit;
			struct vline *vl;

			if (x < v->addr || x - v->addr >= v->size)
				continue;
			pos = x - v->addr + o;
			idx = pos / lz;
			bit = (unsigned)((pos % lz) / l->word_size);
			/* A new virtual line: judge the one it leaves behind
			 * (positions only grow). */
			for (int s = 0; s < 2; s++)
				if (win[s].used && win[s].index < idx) {
					if (vline_false(&win[s], lim))
						*out = true;
					win[s].used = false;
				}
			vl = win[0].used && win[0].index == idx   ? &win[0]
			     : win[1].used && win[1].index == idx ? &win[1]
			     : !win[0].used			  ? &win[0]
								  : &win[1];
			if (!vl->used) {
				vl->used = true;
				vl->index = idx;
				vl->n = 0;
			}
			for (uint32_t t = 0; t < l->nthreads; t++) {
				const struct ks_mtr_lthread *lt = &l->threads[t];
				bool rd = lt->read[w / 64] >> (w % 64) & 1;
				bool wr = lt->write[w / 64] >> (w % 64) & 1;
				struct vthread *vt;

				if (!rd && !wr)
					continue;
				if (!(vt = vthread_of(vl, lt->tid)))
					return -ENOMEM;
				if (rd)
					vt->r[bit / 64] |= UINT64_C(1) << (bit % 64);
				if (wr)
					vt->w[bit / 64] |= UINT64_C(1) << (bit % 64);
				if (vt->last_rec != k) {
					vt->last_rec = k;
					vt->reads = sat_add(vt->reads, lt->reads);
					vt->writes = sat_add(vt->writes, lt->writes);
				}
			}
		}
	}
	for (int s = 0; s < 2 && !*out; s++)
		if (win[s].used && vline_false(&win[s], lim))
			*out = true;
	return 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct ks_mtr_line *x = *(const struct ks_mtr_line *const *)a;
	const struct ks_mtr_line *y = *(const struct ks_mtr_line *const *)b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Whether two threads came back to v's words min_accesses times, one of
 * them writing. */
static bool shared_object(const struct ks_mtr_var *v, const struct ks_mtr_line *const *recs,
			  size_t nrecs, const struct limits *lim)
{
	long long first = -1;
	bool writer = false, second = false;

	for (size_t k = 0; k < nrecs; k++) {
		const struct ks_mtr_line *l = recs[k];

		for (uint32_t t = 0; t < l->nthreads; t++) {
			const struct ks_mtr_lthread *lt = &l->threads[t];
			bool mine = false;

			if (sat_add(lt->reads, lt->writes) < lim->min_accesses)
				continue;
			for (unsigned w = 0; w < l->nwords && !mine; w++) {
				uint64_t x = l->addr + (uint64_t)w * l->word_size;

				mine = x >= v->addr && x - v->addr < v->size &&
				       ((lt->read[w / 64] | lt->write[w / 64]) >> (w % 64) & 1);
			}
			if (!mine)
				continue;
			writer |= lt->writes > 0;
			if (first < 0)
				first = lt->tid;
			else if (lt->tid != first)
				second = true;
		}
	}
	return second && writer;
}

int ks_mtr_layouts(struct ks_mtr_run *r)
{
	struct limits lim = {
		.min_accesses = r->total.has_quiet && r->total.min_accesses ? r->total.min_accesses : 1,
		.min_writes = r->total.has_read_mostly ? r->total.min_writes : 0,
	};
	size_t nall = r->nlines + r->nnears, *count = NULL, *start = NULL, cap = 0;
	const struct ks_mtr_line **recs = NULL;
	struct vline win[2] = { { 0 }, { 0 } };
	unsigned ls = r->start.line_size;
	int rc = -ENOMEM;

	if (!r->nvars || !nall || !ls || ls > 64 * 2 || (ls & (ls - 1)))
		return 0; /* the virtual lines' masks hold 128 words */
	/* The records of each variable, by counting sort. */
	count = calloc(r->nvars + 1, sizeof(*count));
	start = calloc(r->nvars + 1, sizeof(*start));
	if (!count || !start)
		goto out;
	for (size_t i = 0; i < nall; i++) {
		const struct ks_mtr_line *l = i < r->nlines ? &r->lines[i] : &r->nears[i - r->nlines];

		for (uint32_t j = 0; j < l->nvars; j++)
			count[l->vars[j]]++;
	}
	for (size_t v = 0; v < r->nvars; v++) {
		start[v + 1] = start[v] + count[v];
		cap += count[v];
		count[v] = 0;
	}
	recs = malloc((cap ? cap : 1) * sizeof(*recs));
	if (!recs)
		goto out;
	for (size_t i = 0; i < nall; i++) {
		const struct ks_mtr_line *l = i < r->nlines ? &r->lines[i] : &r->nears[i - r->nlines];

		for (uint32_t j = 0; j < l->nvars; j++)
			recs[start[l->vars[j]] + count[l->vars[j]]++] = l;
	}

	for (size_t v = 0; v < r->nvars && r->nlayouts < MAX_OBJECTS; v++) {
		const struct ks_mtr_var *var = &r->vars[v];
		const struct ks_mtr_line **vr = recs + start[v];
		size_t n = count[v];
		struct ks_mtr_layout *lay;
		uint64_t al;
		bool f;

		if (!n || !var->size || (var->kind != MTR_V_HEAP && var->kind != MTR_V_GLOBAL))
			continue;
		qsort(vr, n, sizeof(*vr), cmp_rec);
		if (!shared_object(var, vr, n, &lim))
			continue;
		/* glibc's malloc gives 16-byte alignment on 64-bit machines;
		 * a global without DWARF, its address's up to 8. */
		al = var->align ? var->align : var->kind == MTR_V_HEAP ? 16 : 8;
		if (var->kind == MTR_V_GLOBAL && !var->align)
			while (al > 1 && var->addr % al)
				al >>= 1;
		lay = ks_mtr_vec_push(&r->layouts, &r->nlayouts, &r->cap_layouts, sizeof(*lay));
		if (!lay)
			goto out;
		lay->var = (uint32_t)v;
		lay->align = al;
		lay->line_size = ls;
		lay->start[0] = (unsigned)(var->addr % ls);
		lay->start[1] = (unsigned)(var->addr % (2 * ls));
		for (int k = 0; k < 2; k++) {
			uint64_t lz = (uint64_t)ls << k, step = ks_mtr_layout_step(lay, k);

			if (layout_false(var, vr, n, lay->start[k], lz, &lim, win, &lay->now[k]))
				goto out;
			for (uint64_t b = 0; b * step < lz; b++) {
				if (layout_false(var, vr, n, b * step, lz, &lim, win, &f))
					goto out;
				if (f)
					lay->false_at[k][b / 64] |= UINT64_C(1) << (b % 64);
			}
		}
		lay->latent = !lay->now[0] &&
			      (lay->false_at[0][0] | lay->false_at[0][1] | lay->false_at[1][0] |
			       lay->false_at[1][1]);
	}
	rc = 0;
out:
	free(win[0].t);
	free(win[1].t);
	free(recs);
	free(count);
	free(start);
	return rc;
}
