/*
 * The reports of a sample profile, in text or JSON: the flat profile
 * (functions by self and total share), the call tree, and the per-thread
 * table.  flat.txt and tree.txt of a run and `kscope report` print them;
 * docs/profile-db.md ("Reports") documents both formats.
 *
 * All three start from the same counts: which samples pass the filters
 * (one thread, and/or call paths through a named region), how many of
 * them end in each call-path node, and from that each node's subtree
 * total.  A sample counts for the timer periods it stands for (1 + its
 * overrun): when the kernel delivers one signal for several periods, as
 * it does to a thread that gets the CPU late, the shares still follow the
 * time.  Functions are identified by name and module, so the many frames
 * of one function (one per line or address) add up to one row; the
 * file:line shown for a function is its hottest one.
 *
 * The timers are kept apart: a CPU-time period and a wall-clock period
 * are different amounts of different things, so a report never adds
 * them into one share.  With a clock filter (--clock cpu or real) it
 * counts one timer's samples; without one, a profile with samples of both
 * timers gets its counts in two columns side by side, each a share of its
 * own timer's periods (struct rctx, "columns").
 */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "jsontext.h"
#include "post.h"
#include "raw.h"
#include "store_int.h"

#define REGION_MODULE "[region]"

/* ------------------------------------------------------------------ */
/* A map from three ids to a dense index                               */
/* ------------------------------------------------------------------ */

struct key3 {
	uint32_t a, b, c;
};

struct tmap {
	uint32_t *slot;        /* entry index + 1; 0 = empty */
	size_t cap;            /* slots, a power of two */
	struct key3 *keys;     /* per entry */
	size_t n, cap_keys;
};

static uint64_t key3_hash(struct key3 k)
{
	uint64_t h = ((uint64_t)k.a << 32 | k.b) * 0x9e3779b97f4a7c15ull;

	h ^= (h >> 29) + k.c * 0xbf58476d1ce4e5b9ull;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static void tmap_free(struct tmap *m)
{
	free(m->slot);
	free(m->keys);
	memset(m, 0, sizeof(*m));
}

/* The index of key, adding it if new (*added tells); KS_NONE when out of
 * memory. */
static uint32_t tmap_get(struct tmap *m, uint32_t a, uint32_t b, uint32_t c,
			 bool *added)
{
	struct key3 k = { a, b, c };
	size_t j;

	*added = false;
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		uint32_t *slot = calloc(cap, sizeof(*slot));

		if (!slot)
			return KS_NONE;
		for (size_t i = 0; i < m->n; i++) {
			for (j = key3_hash(m->keys[i]) & (cap - 1); slot[j];
			     j = (j + 1) & (cap - 1))
				;
			slot[j] = (uint32_t)i + 1;
		}
		free(m->slot);
		m->slot = slot;
		m->cap = cap;
	}
	for (j = key3_hash(k) & (m->cap - 1); m->slot[j]; j = (j + 1) & (m->cap - 1)) {
		const struct key3 *e = &m->keys[m->slot[j] - 1];

		if (e->a == a && e->b == b && e->c == c)
			return m->slot[j] - 1;
	}
	if (m->n == m->cap_keys) {
		size_t nc = m->cap_keys ? m->cap_keys * 2 : 256;
		struct key3 *keys = realloc(m->keys, nc * sizeof(*keys));

		if (!keys)
			return KS_NONE;
		m->keys = keys;
		m->cap_keys = nc;
	}
	if (m->n >= KS_NONE - 1)
		return KS_NONE;
	m->keys[m->n] = k;
	m->slot[j] = (uint32_t)++m->n;
	*added = true;
	return (uint32_t)m->n - 1;
}

/* ------------------------------------------------------------------ */
/* Counts shared by the reports                                        */
/* ------------------------------------------------------------------ */

/* The columns of counts: one, of the samples the filters pass; or, with
 * KS_REPORT_CLOCK_ALL on a profile with samples of both timers, two:
 * column 0 the CPU-time samples, column 1 the wall-clock (real-time)
 * ones.  Each column's shares are of its own periods. */
#define NCOL 2

static const char *const col_clock[NCOL] = { "cpu", "wall" };

struct rctx {
	const struct ks_profile *p;
	const struct ks_report_opts *o;
	unsigned ncol;         /* columns: 1, or 2 (cpu, wall) */
	/* Periods: a counted sample counts 1 + its overrun.  Samples: once.
	 * Per column k < ncol: */
	uint64_t *self[NCOL];  /* per node: periods of the samples that end in it */
	uint64_t *total[NCOL]; /* per node: periods of the samples in its subtree */
	uint64_t *tperiods[NCOL]; /* per thread: periods of its counted samples */
	uint64_t nperiods[NCOL];  /* periods of the counted samples: the shares' base */
	/* Over all columns: */
	uint64_t *wself;       /* per node: self of every column (picks hottest */
	uint64_t *wtotal;      /* lines); with one column, that column's arrays */
	uint64_t *tsamples;    /* per thread: its counted samples */
	uint64_t allperiods;   /* periods of the counted samples */
	uint64_t nsamples;     /* samples counted: they pass the filters */
	uint64_t nostack;      /* of those, samples without a call path */
	uint64_t unplaced;     /* two columns: samples of a timer of unknown kind */
	/* The header's account, per timer (enum hclock): */
	uint64_t hsignals[3];  /* samples taken at a signal (call stacks) */
	uint64_t hperiods[3];  /* the periods those stand for */
	uint64_t hend[3];      /* periods counted at a thread's end, no stack */
	uint32_t nthreads;     /* threads with at least one passing sample */
	uint32_t *fkey;        /* per frame: its function (name and module) */
	uint32_t *func_frame;  /* per function: its first frame (for the names) */
	size_t nfunc;
};

static void ctx_free(struct rctx *c)
{
	for (unsigned k = 0; k < NCOL; k++) {
		free(c->self[k]);
		free(c->total[k]);
		free(c->tperiods[k]);
	}
	if (c->ncol > 1) {
		free(c->wself);
		free(c->wtotal);
	}
	free(c->tsamples);
	free(c->fkey);
	free(c->func_frame);
}

static uint32_t find_string(const struct ks_profile *p, const char *s)
{
	for (size_t i = 0; i < p->n_strings; i++)
		if (strcmp(p->strings[i], s) == 0)
			return (uint32_t)i;
	return KS_NONE;
}

/* Marks the nodes whose call path passes through a region frame named
 * o->region.  Returns -ENOENT when the profile has no such region. */
static int region_nodes(struct rctx *c, bool **in, struct ks_err *err)
{
	const struct ks_profile *p = c->p;
	uint32_t mod = find_string(p, REGION_MODULE);
	uint32_t name = find_string(p, c->o->region);
	bool any = false, *r;

	r = calloc(p->n_nodes + 1, sizeof(*r));
	if (!r)
		return ks_err_set(err, -ENOMEM, "out of memory");
	/* Parents come before children (checked by ks_store_check_profile),
	 * so a parent's mark is final when its children are visited. */
	for (size_t i = 0; i < p->n_nodes; i++) {
		const struct ks_pnode *n = &p->nodes[i];
		const struct ks_pframe *f = &p->frames[n->frame];
		bool here = mod != KS_NONE && name != KS_NONE &&
			    f->module == mod && f->function == name;

		any |= here;
		r[i] = here || (n->parent != KS_NONE && r[n->parent]);
	}
	if (!any) {
		free(r);
		return ks_err_set(err, -ENOENT, "the profile has no region named '%s'",
				  c->o->region);
	}
	*in = r;
	return 0;
}

/* Gives each frame the index of its function: frames with the same name
 * and module are one function. */
static int group_functions(struct rctx *c)
{
	const struct ks_profile *p = c->p;
	struct tmap m = { 0 };
	int rc = 0;

	c->fkey = malloc((p->n_frames + 1) * sizeof(*c->fkey));
	c->func_frame = malloc((p->n_frames + 1) * sizeof(*c->func_frame));
	if (!c->fkey || !c->func_frame)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_frames; i++) {
		bool added;
		uint32_t f = tmap_get(&m, p->frames[i].function, p->frames[i].module,
				      0, &added);

		if (f == KS_NONE) {
			rc = -ENOMEM;
			break;
		}
		if (added)
			c->func_frame[f] = (uint32_t)i;
		c->fkey[i] = f;
	}
	c->nfunc = m.n;
	tmap_free(&m);
	return rc;
}

/* The profile is consistent, the thread filter names one of its threads
 * and the clock filter is a value of enum ks_report_clock. */
static int check_input(const struct ks_profile *p, const struct ks_report_opts *o,
		       struct ks_err *err)
{
	int rc = ks_store_check_profile(p, err);

	if (rc)
		return rc;
	if (o->thread != KS_NONE && o->thread >= p->n_threads)
		return ks_err_set(err, -EINVAL, "thread %" PRIu32 " does not exist: "
				  "the profile has %zu thread%s", o->thread,
				  p->n_threads, p->n_threads == 1 ? "" : "s");
	if ((unsigned)o->clock > KS_REPORT_CLOCK_REAL)
		return ks_err_set(err, -EINVAL, "clock filter %u is not one of "
				  "enum ks_report_clock", (unsigned)o->clock);
	return 0;
}

/* The timers the header tells apart: the clock column holds 0 or 1 as
 * kscope writes it; any other value (a database edited by hand) is
 * counted as a timer of unknown rate. */
enum hclock { HC_CPU, HC_REAL, HC_OTHER };

static enum hclock hclock_of(uint8_t clock)
{
	return clock == KS_RAW_CLOCK_CPU ? HC_CPU
	     : clock == KS_RAW_CLOCK_REAL ? HC_REAL : HC_OTHER;
}

const char *const ks_report_clock_names[] = { "all", "cpu", "real", NULL };
_Static_assert(sizeof(ks_report_clock_names) / sizeof(ks_report_clock_names[0]) ==
	       KS_REPORT_CLOCK_REAL + 2, "one name per enum ks_report_clock, in its order");

/* Whether the clock filter lets a sample of timer clock through. */
static bool clock_admits(enum ks_report_clock filter, uint8_t clock)
{
	return filter == KS_REPORT_CLOCK_ALL ||
	       (filter == KS_REPORT_CLOCK_CPU && hclock_of(clock) == HC_CPU) ||
	       (filter == KS_REPORT_CLOCK_REAL && hclock_of(clock) == HC_REAL);
}

/* The samples of each timer (enum hclock) in the whole profile. */
static void count_clocks(const struct ks_profile *p, uint64_t n[3])
{
	n[HC_CPU] = n[HC_REAL] = n[HC_OTHER] = 0;
	for (size_t i = 0; i < p->n_samples; i++)
		n[hclock_of(p->samples[i].clock)]++;
}

int ks_report_check_clock(const struct ks_profile *p, enum ks_report_clock clock,
			  struct ks_err *err)
{
	static const char *const what[] = {
		[HC_CPU] = "CPU-time", [HC_REAL] = "wall-clock (real-time)",
	};
	enum hclock want = clock == KS_REPORT_CLOCK_CPU ? HC_CPU : HC_REAL;
	enum hclock other = want == HC_CPU ? HC_REAL : HC_CPU;
	const char *alt = ks_report_clock_names[want == HC_CPU ? KS_REPORT_CLOCK_REAL
							       : KS_REPORT_CLOCK_CPU];
	uint64_t n[3];
	char has[200];

	if (clock == KS_REPORT_CLOCK_ALL)
		return 0;
	count_clocks(p, n);
	if (n[want])
		return 0;
	if (n[other] && n[HC_OTHER])
		snprintf(has, sizeof(has), "it has %" PRIu64 " %s samples and %" PRIu64
			 " of a timer of unknown kind", n[other], what[other], n[HC_OTHER]);
	else if (n[other])
		snprintf(has, sizeof(has), "it has only %" PRIu64 " %s sample%s", n[other],
			 what[other], n[other] == 1 ? "" : "s");
	else if (n[HC_OTHER])
		snprintf(has, sizeof(has), "it has only %" PRIu64 " sample%s of a timer of "
			 "unknown kind", n[HC_OTHER], n[HC_OTHER] == 1 ? "" : "s");
	else
		snprintf(has, sizeof(has), "it has no samples at all");
	return ks_err_set(err, -ENOENT, "the profile has no %s samples: %s (kscope sample "
			  "--samplers chooses the samplers); accepted: %s%s", what[want], has,
			  n[other] ? alt : "", n[other] ? " or all" : "all");
}

/* The frame of the samples written when a thread ended, for the CPU-time
 * periods that expired after its last signal (post.c's
 * KS_POST_AT_END_FRAME); KS_NONE if the profile has none.  Frames are
 * unique, so there is at most one. */
static uint32_t at_end_frame(const struct ks_profile *p)
{
	for (size_t i = 0; i < p->n_frames; i++) {
		const struct ks_pframe *f = &p->frames[i];

		if (f->file == KS_NONE && f->line == 0 && f->address == 0 && !f->inlined &&
		    strcmp(ks_profile_str(p, f->function), KS_POST_AT_END_FRAME) == 0 &&
		    strcmp(ks_profile_str(p, f->module), "[unknown]") == 0)
			return (uint32_t)i;
	}
	return KS_NONE;
}

/* The column a sample of timer clock counts in, or -1 when it counts in
 * none: the clock filter leaves it out, or, with two columns, its timer
 * is of unknown kind. */
static int sample_col(const struct rctx *c, uint8_t clock)
{
	if (!clock_admits(c->o->clock, clock))
		return -1;
	if (c->ncol == 1)
		return 0;
	return hclock_of(clock) == HC_CPU ? 0 : hclock_of(clock) == HC_REAL ? 1 : -1;
}

static int ctx_init(struct rctx *c, const struct ks_profile *p,
		    const struct ks_report_opts *o, struct ks_err *err)
{
	bool *in_region = NULL;
	uint32_t end_frame;
	uint64_t w, nclock[3];
	size_t nn = p->n_nodes + 1;
	int rc, k;

	memset(c, 0, sizeof(*c));
	c->p = p;
	c->o = o;
	if ((rc = check_input(p, o, err)))
		return rc;
	if (!(o->min_pct >= 0 && o->min_pct <= 100))
		return ks_err_set(err, -EINVAL, "the tree's minimum share %g is not "
				  "a percentage", o->min_pct);
	if (o->region && (rc = region_nodes(c, &in_region, err)))
		return rc;
	/* Two columns when both timers have samples anywhere in the profile,
	 * whatever the other filters pass: a thread's report has the layout
	 * of the whole profile's. */
	count_clocks(p, nclock);
	c->ncol = o->clock == KS_REPORT_CLOCK_ALL && nclock[HC_CPU] && nclock[HC_REAL]
		  ? 2 : 1;
	rc = 0;
	for (unsigned j = 0; j < c->ncol; j++) {
		c->self[j] = calloc(nn, sizeof(*c->self[j]));
		c->total[j] = calloc(nn, sizeof(*c->total[j]));
		c->tperiods[j] = calloc(p->n_threads + 1, sizeof(*c->tperiods[j]));
		if (!c->self[j] || !c->total[j] || !c->tperiods[j])
			rc = -ENOMEM;
	}
	if (c->ncol == 1) {
		c->wself = c->self[0];
		c->wtotal = c->total[0];
	} else {
		c->wself = calloc(nn, sizeof(*c->wself));
		c->wtotal = calloc(nn, sizeof(*c->wtotal));
	}
	c->tsamples = calloc(p->n_threads + 1, sizeof(*c->tsamples));
	if (rc || !c->wself || !c->wtotal || !c->tsamples || group_functions(c) != 0) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	end_frame = at_end_frame(p);
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		if (o->thread != KS_NONE && s->thread != o->thread)
			continue;
		if (in_region && (s->node == KS_NONE || !in_region[s->node]))
			continue;
		if ((k = sample_col(c, s->clock)) < 0) {
			c->unplaced += c->ncol > 1;
			continue;
		}
		/* At most 2^32 periods per sample: the sums cannot wrap. */
		w = (uint64_t)s->overrun + 1;
		c->nsamples++;
		c->allperiods += w;
		c->nperiods[k] += w;
		if (c->tsamples[s->thread]++ == 0)
			c->nthreads++;
		c->tperiods[k][s->thread] += w;
		if (s->node == KS_NONE)
			c->nostack++;
		else
			c->self[k][s->node] += w;
		if (end_frame != KS_NONE && s->node != KS_NONE &&
		    p->nodes[s->node].frame == end_frame) {
			c->hend[hclock_of(s->clock)] += w;
		} else {
			c->hsignals[hclock_of(s->clock)]++;
			c->hperiods[hclock_of(s->clock)] += w;
		}
	}
	for (size_t i = p->n_nodes; i-- > 0;) {
		uint32_t up = p->nodes[i].parent;

		for (unsigned j = 0; j < c->ncol; j++) {
			c->total[j][i] += c->self[j][i];
			if (up != KS_NONE)
				c->total[j][up] += c->total[j][i];
		}
		if (c->ncol > 1) {
			c->wself[i] = c->self[0][i] + c->self[1][i];
			c->wtotal[i] = c->total[0][i] + c->total[1][i];
		}
	}
	rc = 0;
out:
	free(in_region);
	if (rc)
		ctx_free(c);
	return rc;
}

int ks_report_select(const struct ks_profile *p, const struct ks_report_opts *o,
		     bool **pass, struct ks_err *err)
{
	struct rctx c = { .p = p, .o = o };
	bool *in_region = NULL, *r;
	int rc;

	*pass = NULL;
	if ((rc = check_input(p, o, err)))
		return rc;
	if (o->region && (rc = region_nodes(&c, &in_region, err)))
		return rc;
	r = calloc(p->n_samples + 1, sizeof(*r));
	if (!r) {
		free(in_region);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		r[i] = (o->thread == KS_NONE || s->thread == o->thread) &&
		       (!in_region || (s->node != KS_NONE && in_region[s->node])) &&
		       clock_admits(o->clock, s->clock);
	}
	free(in_region);
	*pass = r;
	return 0;
}

static double pct(uint64_t n, uint64_t of)
{
	return of ? 100.0 * (double)n / (double)of : 0.0;
}

/* What column k calls a count: name itself with one column, else name
 * after the column's clock and sep ("cpu_self" in JSON, "cpu self%" in
 * text).  Returns name or buf. */
static const char *col_name(const struct rctx *c, unsigned k, const char *name, char sep,
			    char *buf, size_t size)
{
	if (c->ncol == 1)
		return name;
	snprintf(buf, size, "%s%c%s", col_clock[k], sep, name);
	return buf;
}

/* The largest of a row's shares, v[k] its count in column k: what orders
 * rows and decides which tree nodes are folded, so that what is hot by
 * either timer comes first.  With one column, rows are ordered by their
 * count, as shares of one base are. */
static double top_share(const struct rctx *c, const uint64_t *v)
{
	double best = 0;

	for (unsigned k = 0; k < c->ncol; k++)
		if (pct(v[k], c->nperiods[k]) > best)
			best = pct(v[k], c->nperiods[k]);
	return best;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

static const char *str(const struct ks_profile *p, uint32_t id)
{
	return ks_profile_str(p, id);
}

/* Per group, the frame whose file:line has the most self samples (then
 * the most total samples; then the first seen): the hottest line of a
 * function or of a tree node.  Item i belongs to group[i] and is frame
 * frame[i] with counts iself[i], itotal[i]; items of one group with the
 * same file:line add up.  best[g] is KS_NONE for a group with no
 * samples. */
static int hottest_lines(const struct ks_profile *p, size_t nitems,
			 const uint32_t *group, const uint32_t *frame,
			 const uint64_t *iself, const uint64_t *itotal,
			 size_t ngroups, uint32_t *best)
{
	struct tmap m = { 0 };
	uint64_t *es = NULL, *et = NULL, *ns;
	uint32_t *ef = NULL, *nf;
	size_t cap = 0;
	int rc = -ENOMEM;

	for (size_t g = 0; g < ngroups; g++)
		best[g] = KS_NONE;
	for (size_t i = 0; i < nitems; i++) {
		const struct ks_pframe *f;
		uint32_t e;
		bool added;

		if (group[i] == KS_NONE || (iself[i] == 0 && itotal[i] == 0))
			continue;
		f = &p->frames[frame[i]];
		e = tmap_get(&m, group[i], f->file, f->line, &added);
		if (e == KS_NONE)
			goto out;
		if (e >= cap) {
			size_t nc = cap ? cap * 2 : 256;

			if (!(ns = realloc(es, nc * sizeof(*ns))))
				goto out;
			es = ns;
			if (!(ns = realloc(et, nc * sizeof(*ns))))
				goto out;
			et = ns;
			if (!(nf = realloc(ef, nc * sizeof(*nf))))
				goto out;
			ef = nf;
			cap = nc;
		}
		if (added) {
			es[e] = 0;
			et[e] = 0;
			ef[e] = frame[i];
		}
		es[e] += iself[i];
		et[e] += itotal[i];
	}
	for (size_t e = 0; e < m.n; e++) {
		uint32_t g = m.keys[e].a, b = best[g];
		size_t be;

		if (b == KS_NONE) {
			best[g] = (uint32_t)e;
			continue;
		}
		be = b;
		if (es[e] > es[be] || (es[e] == es[be] && et[e] > et[be]))
			best[g] = (uint32_t)e;
	}
	/* Entry indexes to frames. */
	for (size_t g = 0; g < ngroups; g++)
		if (best[g] != KS_NONE)
			best[g] = ef[best[g]];
	rc = 0;
out:
	tmap_free(&m);
	free(es);
	free(et);
	free(ef);
	return rc;
}

/* "file:line" (the file's base name in text), "file" without a line, or
 * "" without a file. */
static void location(const struct ks_profile *p, uint32_t frame, char *buf,
		     size_t size)
{
	const struct ks_pframe *f;

	buf[0] = '\0';
	if (frame == KS_NONE)
		return;
	f = &p->frames[frame];
	if (f->file == KS_NONE)
		return;
	if (f->line)
		snprintf(buf, size, "%s:%" PRIu32, base_name(str(p, f->file)), f->line);
	else
		snprintf(buf, size, "%s", base_name(str(p, f->file)));
}

/* ------------------------------------------------------------------ */
/* Output helpers                                                      */
/* ------------------------------------------------------------------ */

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

/* One timer's part of the header: "P CPU-time periods of 1 ms (notes)". */
/* The value of the run's metadata key, or NULL. */
static const char *meta_value(const struct ks_profile *p, const char *key)
{
	for (size_t i = 0; i < p->n_meta; i++)
		if (strcmp(p->strings[p->meta[i].key], key) == 0)
			return p->strings[p->meta[i].value];
	return NULL;
}

/* The most periods one sample of timer k stands for because the
 * real-time sampler slowed down for many live threads (kscope sample's
 * budget, docs/sample.md), or 0. */
static uint64_t slowed_max(const struct rctx *c, enum hclock k)
{
	const char *v = k == HC_REAL ? meta_value(c->p, "realtime_slowed_max_periods") : NULL;

	return v ? strtoull(v, NULL, 10) : 0;
}

static void header_timer(FILE *out, const struct rctx *c, enum hclock k)
{
	static const char *const kind[] = { "CPU-time", "real-time", "timer" };
	uint32_t freq = k == HC_CPU ? c->p->cputime_freq
		      : k == HC_REAL ? c->p->realtime_freq : 0;
	uint64_t periods = c->hperiods[k] + c->hend[k];
	uint64_t late = c->hperiods[k] - c->hsignals[k];
	double ms = freq ? 1000.0 / freq : 0;

	fprintf(out, "%" PRIu64 " %s period%s", periods, kind[k], plural(periods));
	if (!freq)
		fprintf(out, " (sampling rate unknown)");
	else if (ms >= 1000)
		fprintf(out, " of %.3g s", ms / 1000);
	else
		fprintf(out, " of %.3g ms", ms);
	if (late && slowed_max(c, k)) {
		/* The periods of a slowed timer and those of late signals
		 * are one count in the database. */
		fprintf(out, " (with many threads live the sampler slowed down to "
			"keep to %u samples a second, so a sample stands for up to %"
			PRIu64 " periods; %" PRIu64 " period%s in all %s counted with "
			"the call stack taken at a later signal",
			KS_RAW_REALTIME_BUDGET, slowed_max(c, k), late, plural(late),
			late == 1 ? "is" : "are");
	} else if (late) {
		fprintf(out, " (%" PRIu64 " period%s ended while a timer signal was "
			"pending and %s counted with the call stack taken when it arrived",
			late, plural(late), late == 1 ? "is" : "are");
	}
	if (c->hend[k]) {
		fprintf(out, "%s%" PRIu64 " period%s expired after a thread's last "
			"signal and %s counted at its end, without a call stack",
			late ? "; " : " (", c->hend[k], plural(c->hend[k]),
			c->hend[k] == 1 ? "is" : "are");
	}
	if (late || c->hend[k])
		fputc(')', out);
}

/* The first line of every text report, in words: how many call stacks
 * were sampled, from how many timer periods of which length, and how the
 * periods that got no signal of their own were counted (see
 * docs/profile-db.md, "Reports"). */
static void header_text(FILE *out, const struct rctx *c)
{
	const struct ks_profile *p = c->p;
	bool shown[3], any = false;
	uint64_t stacks;

	/* A timer is named when it ran (a rate) or has samples, unless the
	 * clock filter leaves it out. */
	shown[HC_CPU] = (p->cputime_freq || c->hsignals[HC_CPU] || c->hend[HC_CPU]) &&
			clock_admits(c->o->clock, KS_RAW_CLOCK_CPU);
	shown[HC_REAL] = (p->realtime_freq || c->hsignals[HC_REAL] || c->hend[HC_REAL]) &&
			 clock_admits(c->o->clock, KS_RAW_CLOCK_REAL);
	shown[HC_OTHER] = c->hsignals[HC_OTHER] || c->hend[HC_OTHER];
	for (int k = HC_CPU; k <= HC_OTHER; k++) {
		if (!shown[k])
			continue;
		stacks = c->hsignals[k];
		if (!any)
			fprintf(out, "%" PRIu64 " call stack%s sampled from ", stacks,
				plural(stacks));
		else
			fprintf(out, " and %" PRIu64 " from ", stacks);
		header_timer(out, c, (enum hclock)k);
		any = true;
	}
	if (!any)
		fprintf(out, "0 call stacks sampled (sampling rate unknown)");
	fprintf(out, ", %" PRIu32 " thread%s", c->nthreads, plural(c->nthreads));
	if (p->dropped_samples)
		fprintf(out, ", %" PRIu64 " sample%s dropped by the runtime (not counted)",
			p->dropped_samples, plural(p->dropped_samples));
	if (c->nostack)
		fprintf(out, ", %" PRIu64 " without a call path", c->nostack);
	if (c->unplaced)
		fprintf(out, ", %" PRIu64 " sample%s of a timer of unknown kind (not counted: "
			"%s neither CPU time nor wall-clock time)", c->unplaced,
			plural(c->unplaced), c->unplaced == 1 ? "it is" : "they are");
	if (c->o->clock == KS_REPORT_CLOCK_CPU)
		fprintf(out, "; only the CPU-time samples");
	else if (c->o->clock == KS_REPORT_CLOCK_REAL)
		fprintf(out, "; only the real-time (wall-clock) samples");
	if (c->o->thread != KS_NONE)
		fprintf(out, "; only thread %" PRIu32 " (tid %" PRId32 ")", c->o->thread,
			p->threads[c->o->thread].tid);
	if (c->o->region)
		fprintf(out, "; only inside region '%s'", c->o->region);
	fputc('\n', out);
}

/* A JSON builder that remembers the first allocation failure, so the
 * code can build a whole document and check once. */
struct jb {
	bool oom;
};

static void jput(struct jb *b, json_t *obj, const char *key, json_t *v)
{
	if (!obj || !v || json_object_set_new(obj, key, v) != 0)
		b->oom = true;
}

static void jappend(struct jb *b, json_t *arr, json_t *v)
{
	if (!arr || !v || json_array_append_new(arr, v) != 0)
		b->oom = true;
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *jstr_or_null(const char *s)
{
	return s ? ks_json_text(s) : json_null();
}

/* One timer's account in the header, the numbers of header_timer: the
 * samples taken at its signals, the periods they and the thread-end
 * samples stand for, and how many of those periods were late or counted
 * at a thread's end. */
static json_t *timer_json(struct jb *b, const struct rctx *c, enum hclock k)
{
	json_t *t = json_object();

	jput(b, t, "stacks", jint(c->hsignals[k]));
	jput(b, t, "periods", jint(c->hperiods[k] + c->hend[k]));
	jput(b, t, "late_periods", jint(c->hperiods[k] - c->hsignals[k]));
	jput(b, t, "thread_end_periods", jint(c->hend[k]));
	/* late_periods then also holds the periods of the slowed timer. */
	if (slowed_max(c, k))
		jput(b, t, "slowed_max_periods", jint(slowed_max(c, k)));
	return t;
}

/* The fields every report starts with. */
static json_t *header_json(struct jb *b, const struct rctx *c, const char *report)
{
	const struct ks_profile *p = c->p;
	json_t *root = json_object(), *sampling = json_object(), *filter = json_object();
	json_t *timers = json_object();

	jput(b, root, "report", json_string(report));
	jput(b, root, "samples", jint(c->nsamples));
	jput(b, root, "periods", jint(c->allperiods));
	jput(b, root, "threads", jint(c->nthreads));
	jput(b, sampling, "cpu_hz", jint(p->cputime_freq));
	jput(b, sampling, "real_hz", jint(p->realtime_freq));
	jput(b, root, "sampling", sampling);
	jput(b, root, "by_clock", json_boolean(c->ncol > 1));
	jput(b, timers, "cpu", timer_json(b, c, HC_CPU));
	jput(b, timers, "wall", timer_json(b, c, HC_REAL));
	if (c->hsignals[HC_OTHER] || c->hend[HC_OTHER])
		jput(b, timers, "unknown", timer_json(b, c, HC_OTHER));
	jput(b, root, "timers", timers);
	jput(b, root, "dropped_samples", jint(p->dropped_samples));
	jput(b, root, "samples_without_stack", jint(c->nostack));
	jput(b, root, "unknown_timer_samples", jint(c->unplaced));
	jput(b, root, "counters_recorded", jint(p->n_counter_names));
	if (c->o->thread != KS_NONE) {
		jput(b, filter, "thread", jint(c->o->thread));
		jput(b, filter, "tid", json_integer(p->threads[c->o->thread].tid));
	} else {
		jput(b, filter, "thread", json_null());
		jput(b, filter, "tid", json_null());
	}
	jput(b, filter, "region", jstr_or_null(c->o->region));
	jput(b, filter, "clock", json_string(ks_report_clock_names[c->o->clock]));
	jput(b, root, "filter", filter);
	return root;
}

/* A row's counts as JSON fields, column by column: self and total in
 * timer periods and as shares of the column's periods ("self",
 * "self_pct", ... with one column; "cpu_self", "wall_self", ... with
 * two).  self and total hold one count per column. */
static void counts_json(struct jb *b, json_t *o, const struct rctx *c, const uint64_t *self,
			const uint64_t *total)
{
	char buf[32];

	for (unsigned k = 0; k < c->ncol; k++) {
		jput(b, o, col_name(c, k, "self", '_', buf, sizeof(buf)), jint(self[k]));
		jput(b, o, col_name(c, k, "total", '_', buf, sizeof(buf)), jint(total[k]));
		jput(b, o, col_name(c, k, "self_pct", '_', buf, sizeof(buf)),
		     json_real(pct(self[k], c->nperiods[k])));
		jput(b, o, col_name(c, k, "total_pct", '_', buf, sizeof(buf)),
		     json_real(pct(total[k], c->nperiods[k])));
	}
}

/* A function's or tree node's names and place, as JSON fields. */
static void frame_json(struct jb *b, json_t *o, const struct ks_profile *p,
		       uint32_t name_frame, uint32_t line_frame)
{
	const struct ks_pframe *f = &p->frames[name_frame];
	const struct ks_pframe *lf = line_frame != KS_NONE ? &p->frames[line_frame] : NULL;

	jput(b, o, "function", ks_json_text(str(p, f->function)));
	jput(b, o, "module", ks_json_text(base_name(str(p, f->module))));
	jput(b, o, "module_path", ks_json_text(str(p, f->module)));
	jput(b, o, "file", lf && lf->file != KS_NONE ? ks_json_text(str(p, lf->file))
						     : json_null());
	jput(b, o, "line", lf && lf->file != KS_NONE && lf->line ? jint(lf->line)
								 : json_null());
}

static int dump_json(FILE *out, json_t *root, struct jb *b, struct ks_err *err)
{
	int rc = 0;

	if (b->oom || !root)
		rc = ks_err_set(err, -ENOMEM, "out of memory building the report");
	else if (json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER |
			    JSON_REAL_PRECISION(12)) != 0 || fputc('\n', out) == EOF)
		rc = ks_err_set(err, -EIO, "writing the report failed");
	json_decref(root);
	return rc;
}

static int finish_text(FILE *out, struct ks_err *err)
{
	if (fflush(out) != 0 || ferror(out))
		return ks_err_set(err, -EIO, "writing the report failed");
	return 0;
}

static int digits(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* One right-aligned cell of a text row, at least width wide, after a
 * space unless it is the row's first (*n counts the row's cells). */
static void cell(FILE *out, int *n, int width, const char *text)
{
	int len = (int)strlen(text);

	fprintf(out, "%s%*s", (*n)++ ? " " : "", len > width ? len : width, text);
}

/* A column's heading cell, as wide as the values under it need. */
static void head_cell(FILE *out, int *n, const struct rctx *c, unsigned k,
		      const char *name, int width)
{
	char buf[32];

	cell(out, n, width, col_name(c, k, name, ' ', buf, sizeof(buf)));
}

/* A share under the heading name of column k. */
static void pct_cell(FILE *out, int *n, const struct rctx *c, unsigned k,
		     const char *name, int width, uint64_t v)
{
	char buf[32], num[32];
	int w = (int)strlen(col_name(c, k, name, ' ', buf, sizeof(buf)));

	snprintf(num, sizeof(num), "%.2f", pct(v, c->nperiods[k]));
	cell(out, n, w > width ? w : width, num);
}

/* A count under the heading name of column k. */
static void count_cell(FILE *out, int *n, const struct rctx *c, unsigned k,
		       const char *name, int width, uint64_t v)
{
	char buf[32], num[32];
	int w = (int)strlen(col_name(c, k, name, ' ', buf, sizeof(buf)));

	snprintf(num, sizeof(num), "%" PRIu64, v);
	cell(out, n, w > width ? w : width, num);
}

/* ------------------------------------------------------------------ */
/* Flat profile                                                        */
/* ------------------------------------------------------------------ */

struct func_row {
	uint32_t func;
	uint64_t self[NCOL], total[NCOL];
};

static int cmp_func_row(const void *a, const void *b, void *arg)
{
	const struct func_row *x = a, *y = b;
	const struct rctx *c = arg;
	const struct ks_pframe *fx = &c->p->frames[c->func_frame[x->func]];
	const struct ks_pframe *fy = &c->p->frames[c->func_frame[y->func]];
	double sx = top_share(c, x->self), sy = top_share(c, y->self);
	int d;

	if (sx != sy)
		return sx > sy ? -1 : 1;
	sx = top_share(c, x->total);
	sy = top_share(c, y->total);
	if (sx != sy)
		return sx > sy ? -1 : 1;
	d = strcmp(str(c->p, fx->function), str(c->p, fy->function));
	if (d)
		return d;
	d = strcmp(str(c->p, fx->module), str(c->p, fy->module));
	return d ? d : (x->func > y->func) - (x->func < y->func);
}

int ks_report_flat(FILE *out, const struct ks_profile *p,
		   const struct ks_report_opts *o, struct ks_err *err)
{
	struct rctx c;
	uint64_t *fself = NULL, *ftotal = NULL, *frself = NULL, *frtotal = NULL;
	uint32_t *stamp = NULL, *best = NULL;
	struct func_row *rows = NULL;
	size_t nrows = 0, nc;
	int rc;

	if ((rc = ctx_init(&c, p, o, err)))
		return rc;
	nc = c.ncol;
	/* fself and ftotal: per function, one count per column. */
	fself = calloc(c.nfunc * nc + 1, sizeof(*fself));
	ftotal = calloc(c.nfunc * nc + 1, sizeof(*ftotal));
	stamp = calloc(c.nfunc + 1, sizeof(*stamp));
	best = calloc(c.nfunc + 1, sizeof(*best));
	frself = calloc(p->n_frames + 1, sizeof(*frself));
	frtotal = calloc(p->n_frames + 1, sizeof(*frtotal));
	rows = calloc(c.nfunc + 1, sizeof(*rows));
	if (!fself || !ftotal || !stamp || !best || !frself || !frtotal || !rows) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	/* Self: where samples end.  Total: each function once per call path,
	 * so a recursive function's samples are not counted twice. */
	for (size_t n = 0; n < p->n_nodes; n++) {
		uint32_t fr = p->nodes[n].frame;

		frself[fr] += c.wself[n];
		frtotal[fr] += c.wtotal[n];
		if (!c.wself[n])
			continue;
		for (size_t k = 0; k < nc; k++)
			fself[c.fkey[fr] * nc + k] += c.self[k][n];
		for (uint32_t a = (uint32_t)n; a != KS_NONE; a = p->nodes[a].parent) {
			uint32_t f = c.fkey[p->nodes[a].frame];

			if (stamp[f] == n + 1)
				continue;
			stamp[f] = (uint32_t)n + 1;
			for (size_t k = 0; k < nc; k++)
				ftotal[f * nc + k] += c.self[k][n];
		}
	}
	{
		uint32_t *frame_ids = malloc((p->n_frames + 1) * sizeof(*frame_ids));

		if (!frame_ids) {
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		for (size_t i = 0; i < p->n_frames; i++)
			frame_ids[i] = (uint32_t)i;
		rc = hottest_lines(p, p->n_frames, c.fkey, frame_ids, frself, frtotal,
				   c.nfunc, best);
		free(frame_ids);
		if (rc) {
			rc = ks_err_set(err, rc, "out of memory");
			goto out;
		}
	}
	for (size_t f = 0; f < c.nfunc; f++) {
		struct func_row r = { .func = (uint32_t)f };
		bool any = false;

		for (size_t k = 0; k < nc; k++) {
			r.self[k] = fself[f * nc + k];
			r.total[k] = ftotal[f * nc + k];
			any |= r.total[k] != 0;
		}
		if (any)
			rows[nrows++] = r;
	}
	qsort_r(rows, nrows, sizeof(*rows), cmp_func_row, &c);

	if (o->json) {
		struct jb b = { false };
		json_t *root = header_json(&b, &c, "flat"), *arr = json_array();

		for (size_t i = 0; i < nrows; i++) {
			json_t *r = json_object();

			frame_json(&b, r, p, c.func_frame[rows[i].func], best[rows[i].func]);
			counts_json(&b, r, &c, rows[i].self, rows[i].total);
			jappend(&b, arr, r);
		}
		jput(&b, root, "functions", arr);
		rc = dump_json(out, root, &b, err);
	} else {
		int wn = digits(c.allperiods) < 5 ? 5 : digits(c.allperiods);
		int wf = 8, wl = 8, n = 0;
		char loc[4200];

		for (size_t i = 0; i < nrows; i++) {
			const struct ks_pframe *f = &p->frames[c.func_frame[rows[i].func]];
			int len = (int)strlen(str(p, f->function));

			if (len > wf)
				wf = len > 60 ? 60 : len;
			location(p, best[rows[i].func], loc, sizeof(loc));
			if ((int)strlen(loc) > wl)
				wl = (int)strlen(loc) > 60 ? 60 : (int)strlen(loc);
		}
		header_text(out, &c);
		for (unsigned k = 0; k < nc; k++) {
			head_cell(out, &n, &c, k, "self%", 6);
			head_cell(out, &n, &c, k, "total%", 7);
		}
		for (unsigned k = 0; k < nc; k++) {
			head_cell(out, &n, &c, k, "self", wn);
			head_cell(out, &n, &c, k, "total", wn);
		}
		fprintf(out, "  %-*s  %-*s  %s\n", wf, "function", wl, "location", "module");
		for (size_t i = 0; i < nrows; i++) {
			const struct ks_pframe *f = &p->frames[c.func_frame[rows[i].func]];

			n = 0;
			for (unsigned k = 0; k < nc; k++) {
				pct_cell(out, &n, &c, k, "self%", 6, rows[i].self[k]);
				pct_cell(out, &n, &c, k, "total%", 7, rows[i].total[k]);
			}
			for (unsigned k = 0; k < nc; k++) {
				count_cell(out, &n, &c, k, "self", wn, rows[i].self[k]);
				count_cell(out, &n, &c, k, "total", wn, rows[i].total[k]);
			}
			location(p, best[rows[i].func], loc, sizeof(loc));
			fprintf(out, "  %-*s  %-*s  %s\n", wf, str(p, f->function), wl,
				loc[0] ? loc : "-", base_name(str(p, f->module)));
		}
		rc = finish_text(out, err);
	}
out:
	free(fself);
	free(ftotal);
	free(stamp);
	free(best);
	free(frself);
	free(frtotal);
	free(rows);
	ctx_free(&c);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Call tree                                                           */
/* ------------------------------------------------------------------ */

/* The report's tree: the profile's call-path tree with sibling nodes of
 * the same function (different lines or addresses) merged. */
struct tree {
	const struct rctx *c;
	size_t n;              /* nodes */
	uint32_t *func;        /* per node: function index */
	uint32_t *parent;      /* per node: parent or KS_NONE */
	uint64_t *self[NCOL], *total[NCOL]; /* per column, per node */
	uint32_t *line_frame;  /* per node: frame of its hottest line */
	uint32_t *child_at;    /* per node: first index into `child` (n + 1 entries) */
	uint32_t *child;       /* children, sorted by total descending */
	uint32_t *roots;
	size_t nroots;
};

static void tree_free(struct tree *t)
{
	free(t->func);
	free(t->parent);
	for (unsigned k = 0; k < NCOL; k++) {
		free(t->self[k]);
		free(t->total[k]);
	}
	free(t->line_frame);
	free(t->child_at);
	free(t->child);
	free(t->roots);
}

/* Node x's counts in v (t->self or t->total), one per column. */
static void node_counts(const struct tree *t, uint64_t *const *v, uint32_t x,
			uint64_t out[NCOL])
{
	for (unsigned k = 0; k < NCOL; k++)
		out[k] = k < t->c->ncol ? v[k][x] : 0;
}

/* Node x's largest share over the columns (top_share). */
static double node_share(const struct tree *t, uint64_t *const *v, uint32_t x)
{
	uint64_t n[NCOL];

	node_counts(t, v, x, n);
	return top_share(t->c, n);
}

static int cmp_tree_node(const void *a, const void *b, void *arg)
{
	const struct tree *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct ks_profile *p = t->c->p;
	double sx = node_share(t, t->total, x), sy = node_share(t, t->total, y);
	int d;

	if (sx != sy)
		return sx > sy ? -1 : 1;
	sx = node_share(t, t->self, x);
	sy = node_share(t, t->self, y);
	if (sx != sy)
		return sx > sy ? -1 : 1;
	d = strcmp(str(p, p->frames[t->c->func_frame[t->func[x]]].function),
		   str(p, p->frames[t->c->func_frame[t->func[y]]].function));
	return d ? d : (x > y) - (x < y);
}

static int tree_build(struct tree *t, const struct rctx *c)
{
	const struct ks_profile *p = c->p;
	struct tmap m = { 0 };
	uint32_t *map = NULL, *frames = NULL, *fill = NULL;
	size_t cap = p->n_nodes + 1;
	int rc = -ENOMEM;

	memset(t, 0, sizeof(*t));
	t->c = c;
	map = malloc(cap * sizeof(*map));
	frames = malloc(cap * sizeof(*frames));
	t->func = malloc(cap * sizeof(*t->func));
	t->parent = malloc(cap * sizeof(*t->parent));
	t->line_frame = malloc(cap * sizeof(*t->line_frame));
	if (!map || !frames || !t->func || !t->parent || !t->line_frame)
		goto out;
	for (unsigned k = 0; k < c->ncol; k++) {
		t->self[k] = calloc(cap, sizeof(*t->self[k]));
		t->total[k] = calloc(cap, sizeof(*t->total[k]));
		if (!t->self[k] || !t->total[k])
			goto out;
	}
	/* Nodes without passing samples below them are left out; their
	 * descendants have none either. */
	for (size_t i = 0; i < p->n_nodes; i++) {
		const struct ks_pnode *n = &p->nodes[i];
		uint32_t par, f, id;
		bool added;

		map[i] = KS_NONE;
		frames[i] = n->frame;
		if (!c->wtotal[i])
			continue;
		par = n->parent == KS_NONE ? KS_NONE : map[n->parent];
		f = c->fkey[n->frame];
		id = tmap_get(&m, par, f, 0, &added);
		if (id == KS_NONE)
			goto out;
		if (added) {
			t->func[id] = f;
			t->parent[id] = par;
		}
		map[i] = id;
		/* Merged siblings are disjoint subtrees: their totals add. */
		for (unsigned k = 0; k < c->ncol; k++) {
			t->self[k][id] += c->self[k][i];
			t->total[k][id] += c->total[k][i];
		}
	}
	t->n = m.n;
	if (hottest_lines(p, p->n_nodes, map, frames, c->wself, c->wtotal, t->n,
			  t->line_frame) != 0)
		goto out;

	/* Children lists: nodes were numbered parents first. */
	t->child_at = calloc(t->n + 2, sizeof(*t->child_at));
	t->child = malloc((t->n + 1) * sizeof(*t->child));
	t->roots = malloc((t->n + 1) * sizeof(*t->roots));
	fill = malloc((t->n + 1) * sizeof(*fill));
	if (!t->child_at || !t->child || !t->roots || !fill)
		goto out;
	for (size_t i = 0; i < t->n; i++)
		if (t->parent[i] != KS_NONE)
			t->child_at[t->parent[i] + 1]++;
	for (size_t i = 0; i < t->n; i++)
		t->child_at[i + 1] += t->child_at[i];
	memcpy(fill, t->child_at, (t->n + 1) * sizeof(*fill));
	for (size_t i = 0; i < t->n; i++) {
		if (t->parent[i] == KS_NONE)
			t->roots[t->nroots++] = (uint32_t)i;
		else
			t->child[fill[t->parent[i]]++] = (uint32_t)i;
	}
	qsort_r(t->roots, t->nroots, sizeof(*t->roots), cmp_tree_node, t);
	for (size_t i = 0; i < t->n; i++)
		qsort_r(t->child + t->child_at[i], t->child_at[i + 1] - t->child_at[i],
			sizeof(*t->child), cmp_tree_node, t);
	rc = 0;
out:
	tmap_free(&m);
	free(map);
	free(frames);
	free(fill);
	return rc;
}

/* How many of the n nodes in list (sorted by total, descending) are
 * shown: the rest are below the minimum share. */
static size_t tree_shown(const struct tree *t, const uint32_t *list, size_t n)
{
	size_t k = 0;

	while (k < n && node_share(t, t->total, list[k]) >= t->c->o->min_pct)
		k++;
	return k;
}

/* "function (file:line)", or "function [module]" without a file. */
static void tree_label(const struct tree *t, uint32_t node, char *buf, size_t size)
{
	const struct ks_profile *p = t->c->p;
	const struct ks_pframe *f = &p->frames[t->c->func_frame[t->func[node]]];
	const char *mod = base_name(str(p, f->module));
	char loc[4200];

	location(p, t->line_frame[node], loc, sizeof(loc));
	if (loc[0])
		snprintf(buf, size, "%s (%s)", str(p, f->function), loc);
	else if (mod[0] == '[')
		snprintf(buf, size, "%s %s", str(p, f->function), mod);
	else
		snprintf(buf, size, "%s [%s]", str(p, f->function), mod);
}

/* The depth-first walk of the shown tree, shared by the text and JSON
 * writers.  It keeps its own stack of levels on the heap rather than
 * recursing: a stored call path can be as deep as the profile has nodes
 * (a damaged or hand-made profile.db, deep recursion, nested regions), and
 * a recursion per level overflows the C stack long before that. */
struct walk_level {
	const uint32_t *list;  /* the nodes of this level, by total */
	size_t n;              /* in list */
	size_t shown;          /* of them above the minimum share */
	size_t i;              /* next to visit */
	unsigned depth;        /* 0: the roots */
};

struct walk {
	const struct tree *t;
	struct walk_level *lv; /* lv[0..nlv): the open levels, outermost first */
	size_t nlv, cap;
};

/* Opens the level of list (n nodes) at depth; with --depth, levels from
 * max_depth on are left empty (nothing shown, nothing folded).  The
 * walk's levels may move: callers re-fetch pointers into w->lv. */
static int walk_push(struct walk *w, const uint32_t *list, size_t n, unsigned depth)
{
	struct walk_level *l;

	if (w->nlv == w->cap) {
		size_t nc = w->cap ? 2 * w->cap : 64;
		struct walk_level *nl = realloc(w->lv, nc * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		w->lv = nl;
		w->cap = nc;
	}
	l = &w->lv[w->nlv++];
	l->depth = depth;
	l->i = 0;
	if (w->t->c->o->max_depth && depth >= w->t->c->o->max_depth) {
		l->list = NULL;
		l->n = l->shown = 0;
	} else {
		l->list = list;
		l->n = n;
		l->shown = tree_shown(w->t, list, n);
	}
	return 0;
}

/* Opens the level of node x's children. */
static int walk_push_children(struct walk *w, uint32_t x, unsigned depth)
{
	const struct tree *t = w->t;

	return walk_push(w, t->child + t->child_at[x], t->child_at[x + 1] - t->child_at[x],
			 depth);
}

/* The summed self and total, per column, of the nodes of level l below
 * the minimum share ("[N more]"). */
static void walk_folded(const struct walk *w, const struct walk_level *l,
			uint64_t self[NCOL], uint64_t total[NCOL])
{
	for (unsigned k = 0; k < NCOL; k++)
		self[k] = total[k] = 0;
	for (unsigned k = 0; k < w->t->c->ncol; k++) {
		for (size_t i = l->shown; i < l->n; i++) {
			self[k] += w->t->self[k][l->list[i]];
			total[k] += w->t->total[k][l->list[i]];
		}
	}
}

/* The total and self shares of a tree line, column by column. */
static void tree_shares(FILE *out, const struct rctx *c, const uint64_t *self,
			const uint64_t *total)
{
	int n = 0;

	for (unsigned k = 0; k < c->ncol; k++) {
		pct_cell(out, &n, c, k, "total%", 6, total[k]);
		pct_cell(out, &n, c, k, "self%", 6, self[k]);
	}
}

/* Prints the tree, depth first: each shown node, what is below it, then a
 * "[N more]" line for the level's folded nodes. */
static int tree_print(FILE *out, const struct tree *t, struct ks_err *err)
{
	struct walk w = { .t = t };
	char *label = malloc(8400);
	int rc = -ENOMEM;

	if (!label || walk_push(&w, t->roots, t->nroots, 0))
		goto out;
	while (w.nlv) {
		struct walk_level *l = &w.lv[w.nlv - 1];
		unsigned depth = l->depth;

		if (l->i < l->shown) {
			uint32_t x = l->list[l->i++];
			uint64_t self[NCOL], total[NCOL];

			tree_label(t, x, label, 8400);
			node_counts(t, t->self, x, self);
			node_counts(t, t->total, x, total);
			tree_shares(out, t->c, self, total);
			fprintf(out, "  %*s%s\n", (int)(2 * depth), "", label);
			if (walk_push_children(&w, x, depth + 1))
				goto out;
			continue;
		}
		if (l->shown < l->n) {
			uint64_t mself[NCOL], mtotal[NCOL];

			walk_folded(&w, l, mself, mtotal);
			tree_shares(out, t->c, mself, mtotal);
			fprintf(out, "  %*s[%zu more]\n", (int)(2 * depth), "", l->n - l->shown);
		}
		w.nlv--;
	}
	rc = 0;
out:
	free(label);
	free(w.lv);
	return rc ? ks_err_set(err, rc, "out of memory") : finish_text(out, err);
}

/* The tree's JSON is written by hand around jansson, in exactly the layout
 * json_dumpf gives with JSON_INDENT(2): jansson builds and dumps each
 * node's own fields, and this code nests them.  A whole jansson document
 * would be dumped and freed by recursion, two C frames of some 300 bytes
 * per level, which a path a few thousand deep overflows. */
#define JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12))

/* Writes v as json_dumpf would at nesting indent (its lines after the
 * first indented by that many more spaces); with open_end, without its
 * last line (the closing brace), so that more fields can follow.  Takes
 * the reference to v. */
static int put_json(FILE *out, json_t *v, unsigned indent, bool open_end)
{
	char *s = v ? json_dumps(v, JSON_FLAGS) : NULL, *end, *nl;

	json_decref(v);
	if (!s)
		return -ENOMEM;
	end = s + strlen(s);
	if (open_end && (nl = strrchr(s, '\n')) != NULL)
		end = nl;
	for (char *p = s; p < end; p++) {
		fputc(*p, out);
		if (*p == '\n')
			fprintf(out, "%*s", (int)indent, "");
	}
	free(s);
	return 0;
}

/* The fields of node x, without the closing brace. */
static int put_node_head(FILE *out, const struct tree *t, uint32_t x, unsigned indent)
{
	const struct ks_profile *p = t->c->p;
	uint64_t self[NCOL], total[NCOL];
	struct jb b = { false };
	json_t *o = json_object();

	node_counts(t, t->self, x, self);
	node_counts(t, t->total, x, total);
	frame_json(&b, o, p, t->c->func_frame[t->func[x]], t->line_frame[x]);
	counts_json(&b, o, t->c, self, total);
	if (b.oom) {
		json_decref(o);
		return -ENOMEM;
	}
	return put_json(out, o, indent, true);
}

/* The "more" of level l: null, or the sums of its folded nodes. */
static int put_more(FILE *out, const struct walk *w, const struct walk_level *l,
		    unsigned indent)
{
	uint64_t mself[NCOL], mtotal[NCOL];
	struct jb b = { false };
	json_t *m;

	if (l->shown == l->n) {
		fputs("null", out);
		return 0;
	}
	walk_folded(w, l, mself, mtotal);
	m = json_object();
	jput(&b, m, "nodes", jint(l->n - l->shown));
	counts_json(&b, m, w->t->c, mself, mtotal);
	if (b.oom) {
		json_decref(m);
		return -ENOMEM;
	}
	return put_json(out, m, indent, false);
}

/* The tree report as JSON: header (the root object less its closing
 * brace), then "roots" and "more".  The nodes of level depth d stand at
 * indent 4 + 4d, and the "children" or "roots" key holding them at 2 + 4d. */
static int tree_json(FILE *out, const struct rctx *c, const struct tree *t,
		     struct ks_err *err)
{
	struct walk w = { .t = t };
	struct jb b = { false };
	json_t *root = header_json(&b, c, "tree");
	int rc;

	jput(&b, root, "min_pct", json_real(c->o->min_pct));
	jput(&b, root, "max_depth", jint(c->o->max_depth));
	if (b.oom) {
		json_decref(root);
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = put_json(out, root, 0, true)))
		goto out;
	fputs(",\n  \"roots\": ", out);
	if ((rc = walk_push(&w, t->roots, t->nroots, 0)))
		goto out;
	fputs(w.lv[0].shown ? "[\n" : "[]", out);
	while (w.nlv) {
		struct walk_level *l = &w.lv[w.nlv - 1];
		unsigned depth = l->depth, key = 2 + 4 * depth;

		if (l->i < l->shown) {
			uint32_t x = l->list[l->i++];

			fprintf(out, "%s%*s", l->i > 1 ? ",\n" : "", (int)(key + 2), "");
			if ((rc = put_node_head(out, t, x, key + 2)))
				goto out;
			fprintf(out, ",\n%*s\"children\": ", (int)(key + 4), "");
			if ((rc = walk_push_children(&w, x, depth + 1)))
				goto out;
			fputs(w.lv[w.nlv - 1].shown ? "[\n" : "[]", out);
			continue;
		}
		/* The level is done: close its array, then give the "more"
		 * of the node (or root object) that holds it, and close that. */
		if (l->shown)
			fprintf(out, "\n%*s]", (int)key, "");
		fprintf(out, ",\n%*s\"more\": ", (int)key, "");
		if ((rc = put_more(out, &w, l, key)))
			goto out;
		fprintf(out, "\n%*s}", (int)(key - 2), "");
		w.nlv--;
	}
	fputc('\n', out);
out:
	free(w.lv);
	if (rc)
		return ks_err_set(err, rc, "out of memory building the report");
	if (fflush(out) != 0 || ferror(out))
		return ks_err_set(err, -EIO, "writing the report failed");
	return 0;
}

int ks_report_tree(FILE *out, const struct ks_profile *p,
		   const struct ks_report_opts *o, struct ks_err *err)
{
	struct rctx c;
	struct tree t;
	int rc;

	if ((rc = ctx_init(&c, p, o, err)))
		return rc;
	if (tree_build(&t, &c) != 0) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (o->json) {
		rc = tree_json(out, &c, &t, err);
	} else {
		int n = 0;

		header_text(out, &c);
		for (unsigned k = 0; k < c.ncol; k++) {
			head_cell(out, &n, &c, k, "total%", 6);
			head_cell(out, &n, &c, k, "self%", 6);
		}
		fprintf(out, "  %s\n", "function");
		rc = tree_print(out, &t, err);
	}
out:
	tree_free(&t);
	ctx_free(&c);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

int ks_report_threads(FILE *out, const struct ks_profile *p,
		      const struct ks_report_opts *o, struct ks_err *err)
{
	struct rctx c;
	bool ranks = false;
	int wname = 4, wn, n;
	char key[32];
	int rc;

	if ((rc = ctx_init(&c, p, o, err)))
		return rc;
	for (size_t i = 0; i < p->n_processes; i++)
		ranks |= p->processes[i].rank >= 0;
	for (size_t i = 0; i < p->n_threads; i++) {
		int len = (int)strlen(str(p, p->threads[i].name));

		if (len > wname)
			wname = len > 40 ? 40 : len;
	}
	wn = digits(c.nsamples) < 7 ? 7 : digits(c.nsamples);

	if (o->json) {
		struct jb b = { false };
		json_t *root = header_json(&b, &c, "threads"), *arr = json_array();

		for (size_t i = 0; i < p->n_threads; i++) {
			const struct ks_pthread *th = &p->threads[i];
			const struct ks_pprocess *pr = &p->processes[th->process];
			json_t *r;

			if (o->thread != KS_NONE && i != o->thread)
				continue;
			r = json_object();
			jput(&b, r, "index", jint(i));
			jput(&b, r, "tid", json_integer(th->tid));
			jput(&b, r, "pid", json_integer(pr->pid));
			jput(&b, r, "rank", pr->rank >= 0 ? json_integer(pr->rank)
							  : json_null());
			jput(&b, r, "name", ks_json_text(str(p, th->name)));
			jput(&b, r, "samples", jint(c.tsamples[i]));
			for (unsigned k = 0; k < c.ncol; k++) {
				jput(&b, r, col_name(&c, k, "periods", '_', key, sizeof(key)),
				     jint(c.tperiods[k][i]));
				jput(&b, r, col_name(&c, k, "share_pct", '_', key, sizeof(key)),
				     json_real(pct(c.tperiods[k][i], c.nperiods[k])));
			}
			jput(&b, r, "cpu_s", json_real((double)th->cpu_ns / 1e9));
			jput(&b, r, "wall_s", json_real(th->end > th->start ?
				(double)(th->end - th->start) / 1e9 : 0.0));
			jappend(&b, arr, r);
		}
		jput(&b, root, "rows", arr);
		rc = dump_json(out, root, &b, err);
	} else {
		header_text(out, &c);
		fprintf(out, "%5s %8s %8s", "index", "tid", "pid");
		if (ranks)
			fprintf(out, " %5s", "rank");
		fprintf(out, "  %-*s %*s", wname, "name", wn, "samples");
		n = 1;
		for (unsigned k = 0; k < c.ncol; k++)
			head_cell(out, &n, &c, k, "share%", 7);
		fprintf(out, " %10s %10s\n", "cpu_s", "wall_s");
		for (size_t i = 0; i < p->n_threads; i++) {
			const struct ks_pthread *th = &p->threads[i];
			const struct ks_pprocess *pr = &p->processes[th->process];
			const char *name = str(p, th->name);

			if (o->thread != KS_NONE && i != o->thread)
				continue;
			fprintf(out, "%5zu %8" PRId32 " %8" PRId32, i, th->tid, pr->pid);
			if (ranks && pr->rank >= 0)
				fprintf(out, " %5" PRId32, pr->rank);
			else if (ranks)
				fprintf(out, " %5s", "-");
			fprintf(out, "  %-*s %*" PRIu64, wname, name[0] ? name : "-", wn,
				c.tsamples[i]);
			n = 1;
			for (unsigned k = 0; k < c.ncol; k++)
				pct_cell(out, &n, &c, k, "share%", 7, c.tperiods[k][i]);
			fprintf(out, " %10.3f %10.3f\n", (double)th->cpu_ns / 1e9,
				th->end > th->start ? (double)(th->end - th->start) / 1e9 : 0.0);
		}
		rc = finish_text(out, err);
	}
	ctx_free(&c);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Per-sample counters                                                 */
/* ------------------------------------------------------------------ */

/* Each sample holds its thread's running totals of the counters.  The
 * events between a thread's previous sample and this one are given to
 * this sample's innermost frame: the statistical attribution of every
 * sampling profiler, true on average for a function that runs often
 * enough to be sampled.  A total below the previous one (a counter the
 * runtime lost, which then reads 0) gives 0.  With a clock filter, only
 * that timer's samples are in the sequence, so the events go to where
 * that timer's samples found the thread (for the CPU-time timer: where it
 * ran). */

struct crow {
	uint32_t key;          /* function index, or line index */
	const uint64_t *self;  /* per column: periods of the samples that end in it */
	uint64_t *v;           /* nc values */
};

/* The rows of keys 0..n-1 with any self periods (ncol per key) or
 * counted events (nc per key), into rows; returns how many. */
static size_t crows_of(struct crow *rows, size_t n, const uint64_t *self, size_t ncol,
		       uint64_t *val, size_t nc)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++) {
		bool any = false;

		for (size_t k = 0; k < ncol; k++)
			any |= self[i * ncol + k] != 0;
		for (size_t k = 0; k < nc; k++)
			any |= val[i * nc + k] != 0;
		if (any)
			rows[m++] = (struct crow){ (uint32_t)i, &self[i * ncol], &val[i * nc] };
	}
	return m;
}

struct cctx {
	size_t nc;
	uint32_t order;        /* counter that sorts the rows: the first supported */
	const struct ks_profile *p;
	const struct rctx *c;
	const uint32_t *line_frame; /* lines: per line, a frame of it */
	bool lines;
};

static int cmp_crow(const void *a, const void *b, void *arg)
{
	const struct crow *x = a, *y = b;
	const struct cctx *cc = arg;
	const struct ks_profile *p = cc->p;
	uint32_t fx, fy;
	int d;

	if (x->v[cc->order] != y->v[cc->order])
		return x->v[cc->order] > y->v[cc->order] ? -1 : 1;
	if (top_share(cc->c, x->self) != top_share(cc->c, y->self))
		return top_share(cc->c, x->self) > top_share(cc->c, y->self) ? -1 : 1;
	fx = cc->lines ? cc->line_frame[x->key] : cc->c->func_frame[x->key];
	fy = cc->lines ? cc->line_frame[y->key] : cc->c->func_frame[y->key];
	d = strcmp(str(p, p->frames[fx].function), str(p, p->frames[fy].function));
	if (d)
		return d;
	if (cc->lines) {
		d = strcmp(str(p, p->frames[fx].file), str(p, p->frames[fy].file));
		if (d)
			return d;
		if (p->frames[fx].line != p->frames[fy].line)
			return p->frames[fx].line < p->frames[fy].line ? -1 : 1;
	}
	return (x->key > y->key) - (x->key < y->key);
}

/* The counter's name without the " (not supported...)" note post.c adds
 * to a counter the machine lacked; *note is that note without its
 * parentheses, copied into note_buf, or NULL for a counter that counted.
 * The macro below passes the caller's note_buf, a local of each user. */
static void counter_name_note(const struct ks_profile *p, size_t k, char *buf, size_t size,
			      char *note_buf, size_t note_size, const char **note)
{
	const char *s = str(p, p->counter_names[k]);
	const char *paren = strstr(s, " (not supported");

	*note = NULL;
	snprintf(buf, size, "%s", s);
	if (paren) {
		size_t len = strlen(paren + 2);

		snprintf(buf, size, "%.*s", (int)(paren - s), s);
		if (len && paren[2 + len - 1] == ')')
			len--;
		snprintf(note_buf, note_size, "%.*s", (int)len, paren + 2);
		*note = note_buf;
	}
}

#define counter_name(p, k, buf, size, note) \
	counter_name_note(p, k, buf, size, note_buf, sizeof(note_buf), note)

static json_t *crow_values_json(struct jb *b, const struct ks_profile *p,
				const struct crow *r, size_t nc)
{
	json_t *o = json_object();

	for (size_t k = 0; k < nc; k++) {
		char name[64], note_buf[400];
		const char *note;

		counter_name(p, k, name, sizeof(name), &note);
		jput(b, o, name, note ? json_null() : jint(r->v[k]));
	}
	return o;
}

/* The headings of the self columns, each followed by two spaces as the
 * counters' are. */
static void crow_self_head(FILE *out, const struct rctx *c, int wn)
{
	char buf[32];

	for (unsigned k = 0; k < c->ncol; k++) {
		const char *name = col_name(c, k, "self", ' ', buf, sizeof(buf));

		fprintf(out, "%*s  ", wn > (int)strlen(name) ? wn : (int)strlen(name), name);
	}
}

static void crow_self_text(FILE *out, const struct rctx *c, const struct crow *r, int wn)
{
	char buf[32];

	for (unsigned k = 0; k < c->ncol; k++) {
		int len = (int)strlen(col_name(c, k, "self", ' ', buf, sizeof(buf)));

		fprintf(out, "%*" PRIu64 "  ", wn > len ? wn : len, r->self[k]);
	}
}

static void crow_values_text(FILE *out, const struct ks_profile *p, const struct crow *r,
			     size_t nc, const int *w)
{
	for (size_t k = 0; k < nc; k++) {
		char name[64], note_buf[400];
		const char *note;

		counter_name(p, k, name, sizeof(name), &note);
		if (note)
			fprintf(out, "%*s  ", w[k], "-");
		else
			fprintf(out, "%*" PRIu64 "  ", w[k], r->v[k]);
	}
}

int ks_report_counters(FILE *out, const struct ks_profile *p,
		       const struct ks_report_opts *o, struct ks_err *err)
{
	struct rctx c;
	struct cctx cc = { 0 };
	size_t nc = p->n_counter_names, nlines = 0, nfrows = 0, nlrows = 0, ncol;
	uint64_t *prev = NULL, *frval = NULL, *frself = NULL, *fval = NULL, *lval = NULL;
	uint64_t *frcself = NULL, *fself = NULL, *lself = NULL, *tot = NULL;
	uint32_t *line_of = NULL, *line_frame = NULL, *best = NULL, *frame_ids = NULL;
	uint64_t *frtotal = NULL;
	struct crow *frows = NULL, *lrows = NULL;
	struct tmap lm = { 0 };
	bool *pass = NULL;
	int w[64];             /* column widths, per counter */
	bool any_supported = false;
	int rc;

	if (nc == 0)
		return ks_err_set(err, -ENOENT, "the profile has no per-sample counters; "
				  "record them with kscope sample --counters LIST "
				  "(kscope avail --counters lists them)");
	if (nc > sizeof(w) / sizeof(w[0]))
		return ks_err_set(err, -EINVAL, "the profile has %zu per-sample counters; "
				  "this report shows at most %zu", nc, sizeof(w) / sizeof(w[0]));
	if ((rc = ctx_init(&c, p, o, err)))
		return rc;
	if ((rc = ks_report_select(p, o, &pass, err)))
		goto out_ctx;
	/* frcself, fself and lself: per frame, function or line, one count
	 * per column; frself and frtotal over all columns. */
	ncol = c.ncol;
	prev = calloc(p->n_threads * nc + 1, sizeof(*prev));
	frval = calloc(p->n_frames * nc + 1, sizeof(*frval));
	frself = calloc(p->n_frames + 1, sizeof(*frself));
	frtotal = calloc(p->n_frames + 1, sizeof(*frtotal));
	frcself = calloc(p->n_frames * ncol + 1, sizeof(*frcself));
	fval = calloc(c.nfunc * nc + 1, sizeof(*fval));
	fself = calloc(c.nfunc * ncol + 1, sizeof(*fself));
	line_of = malloc((p->n_frames + 1) * sizeof(*line_of));
	line_frame = malloc((p->n_frames + 1) * sizeof(*line_frame));
	best = calloc(c.nfunc + 1, sizeof(*best));
	frame_ids = malloc((p->n_frames + 1) * sizeof(*frame_ids));
	tot = calloc(nc, sizeof(*tot));
	if (!prev || !frval || !frself || !frtotal || !frcself || !fval || !fself ||
	    !line_of || !line_frame || !best || !frame_ids || !tot)
		goto oom;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		if (s->counters == KS_NONE || !clock_admits(o->clock, s->clock))
			continue;
		for (size_t k = 0; k < nc; k++) {
			size_t at = (size_t)s->counters + k;
			uint64_t v = at < p->n_counter_values ? p->counter_values[at] : 0;
			uint64_t *pv = &prev[(size_t)s->thread * nc + k];
			uint64_t d = v >= *pv ? v - *pv : 0;

			*pv = v;
			if (!pass[i])
				continue;
			tot[k] += d;
			if (s->node != KS_NONE)
				frval[(size_t)p->nodes[s->node].frame * nc + k] += d;
		}
	}
	for (size_t n = 0; n < p->n_nodes; n++) {
		uint32_t fr = p->nodes[n].frame;

		frself[fr] += c.wself[n];
		frtotal[fr] += c.wtotal[n];
		for (size_t k = 0; k < ncol; k++)
			frcself[fr * ncol + k] += c.self[k][n];
	}
	/* Functions, and lines: frames with a file, by function, file, line. */
	for (size_t fr = 0; fr < p->n_frames; fr++) {
		const struct ks_pframe *f = &p->frames[fr];
		uint32_t fn = c.fkey[fr];

		frame_ids[fr] = (uint32_t)fr;
		for (size_t k = 0; k < ncol; k++)
			fself[fn * ncol + k] += frcself[fr * ncol + k];
		for (size_t k = 0; k < nc; k++)
			fval[(size_t)fn * nc + k] += frval[fr * nc + k];
		line_of[fr] = KS_NONE;
		if (f->file != KS_NONE && f->line) {
			bool added;
			uint32_t l = tmap_get(&lm, f->function, f->file, f->line, &added);

			if (l == KS_NONE)
				goto oom;
			if (added)
				line_frame[l] = (uint32_t)fr;
			line_of[fr] = l;
		}
	}
	nlines = lm.n;
	lval = calloc(nlines * nc + 1, sizeof(*lval));
	lself = calloc(nlines * ncol + 1, sizeof(*lself));
	frows = calloc(c.nfunc + 1, sizeof(*frows));
	lrows = calloc(nlines + 1, sizeof(*lrows));
	if (!lval || !lself || !frows || !lrows)
		goto oom;
	for (size_t fr = 0; fr < p->n_frames; fr++) {
		if (line_of[fr] == KS_NONE)
			continue;
		for (size_t k = 0; k < ncol; k++)
			lself[(size_t)line_of[fr] * ncol + k] += frcself[fr * ncol + k];
		for (size_t k = 0; k < nc; k++)
			lval[(size_t)line_of[fr] * nc + k] += frval[fr * nc + k];
	}
	if (hottest_lines(p, p->n_frames, c.fkey, frame_ids, frself, frtotal, c.nfunc, best))
		goto oom;
	cc.nc = nc;
	cc.p = p;
	cc.c = &c;
	cc.line_frame = line_frame;
	for (size_t k = 0; k < nc; k++) {
		char name[64], note_buf[400];
		const char *note;

		counter_name(p, k, name, sizeof(name), &note);
		if (!note && !any_supported) {
			cc.order = (uint32_t)k;
			any_supported = true;
		}
		w[k] = (int)strlen(name) < 10 ? 10 : (int)strlen(name);
		if (w[k] < digits(tot[k]))
			w[k] = digits(tot[k]);
	}
	/* Rows: what the samples found running, or what counted events. */
	nfrows = crows_of(frows, c.nfunc, fself, ncol, fval, nc);
	nlrows = crows_of(lrows, nlines, lself, ncol, lval, nc);
	cc.lines = false;
	qsort_r(frows, nfrows, sizeof(*frows), cmp_crow, &cc);
	cc.lines = true;
	qsort_r(lrows, nlrows, sizeof(*lrows), cmp_crow, &cc);

	if (o->json) {
		struct jb b = { false };
		json_t *root = header_json(&b, &c, "counters"), *names = json_array();
		json_t *funcs = json_array(), *lines = json_array();
		struct crow totrow = { .self = c.nperiods, .v = tot };
		char key[32];

		for (size_t k = 0; k < nc; k++) {
			json_t *n = json_object();
			char name[64], note_buf[400];
			const char *note;

			counter_name(p, k, name, sizeof(name), &note);
			jput(&b, n, "name", ks_json_text(name));
			jput(&b, n, "supported", json_boolean(!note));
			jput(&b, n, "note", jstr_or_null(note));
			jappend(&b, names, n);
		}
		jput(&b, root, "counters", names);
		jput(&b, root, "totals", crow_values_json(&b, p, &totrow, nc));
		for (size_t i = 0; i < nfrows; i++) {
			json_t *r = json_object();

			frame_json(&b, r, p, c.func_frame[frows[i].key], best[frows[i].key]);
			for (unsigned k = 0; k < ncol; k++)
				jput(&b, r, col_name(&c, k, "self", '_', key, sizeof(key)),
				     jint(frows[i].self[k]));
			jput(&b, r, "counters", crow_values_json(&b, p, &frows[i], nc));
			jappend(&b, funcs, r);
		}
		jput(&b, root, "functions", funcs);
		for (size_t i = 0; i < nlrows; i++) {
			json_t *r = json_object();

			frame_json(&b, r, p, line_frame[lrows[i].key], line_frame[lrows[i].key]);
			for (unsigned k = 0; k < ncol; k++)
				jput(&b, r, col_name(&c, k, "self", '_', key, sizeof(key)),
				     jint(lrows[i].self[k]));
			jput(&b, r, "counters", crow_values_json(&b, p, &lrows[i], nc));
			jappend(&b, lines, r);
		}
		jput(&b, root, "lines", lines);
		rc = dump_json(out, root, &b, err);
	} else {
		int wn = digits(c.allperiods) < 5 ? 5 : digits(c.allperiods);
		char loc[4200];

		header_text(out, &c);
		for (size_t k = 0; k < nc; k++) {
			char name[64], note_buf[400];
			const char *note;

			counter_name(p, k, name, sizeof(name), &note);
			if (note)
				fprintf(out, "counter %s: %s\n", name, note);
			else
				fprintf(out, "counter %s: %" PRIu64 " events in these samples\n",
					name, tot[k]);
		}
		fprintf(out, "Events between a thread's samples go to the function "
			"(and line) its later sample found running.\n");
		fprintf(out, "\nBy function:\n");
		for (size_t k = 0; k < nc; k++) {
			char name[64], note_buf[400];
			const char *note;

			counter_name(p, k, name, sizeof(name), &note);
			fprintf(out, "%*s  ", w[k], name);
		}
		crow_self_head(out, &c, wn);
		fprintf(out, "%s  %s  %s\n", "function", "location", "module");
		for (size_t i = 0; i < nfrows; i++) {
			const struct ks_pframe *f = &p->frames[c.func_frame[frows[i].key]];

			location(p, best[frows[i].key], loc, sizeof(loc));
			crow_values_text(out, p, &frows[i], nc, w);
			crow_self_text(out, &c, &frows[i], wn);
			fprintf(out, "%s  %s  %s\n", str(p, f->function), loc[0] ? loc : "-",
				base_name(str(p, f->module)));
		}
		fprintf(out, "\nBy line:\n");
		for (size_t k = 0; k < nc; k++) {
			char name[64], note_buf[400];
			const char *note;

			counter_name(p, k, name, sizeof(name), &note);
			fprintf(out, "%*s  ", w[k], name);
		}
		crow_self_head(out, &c, wn);
		fprintf(out, "%s  %s\n", "location", "function");
		for (size_t i = 0; i < nlrows; i++) {
			const struct ks_pframe *f = &p->frames[line_frame[lrows[i].key]];

			location(p, line_frame[lrows[i].key], loc, sizeof(loc));
			crow_values_text(out, p, &lrows[i], nc, w);
			crow_self_text(out, &c, &lrows[i], wn);
			fprintf(out, "%s  %s\n", loc, str(p, f->function));
		}
		rc = finish_text(out, err);
	}
	goto out;
oom:
	rc = ks_err_set(err, -ENOMEM, "out of memory");
out:
	tmap_free(&lm);
	free(prev);
	free(frval);
	free(frself);
	free(frtotal);
	free(frcself);
	free(fval);
	free(fself);
	free(lval);
	free(lself);
	free(tot);
	free(line_of);
	free(line_frame);
	free(best);
	free(frame_ids);
	free(frows);
	free(lrows);
	free(pass);
out_ctx:
	ctx_free(&c);
	return rc;
}
