/*
 * The findings file of a process, as kscope's Valgrind tool writes it
 * (docs/formats.md, "Memory-tool run directories"): the records of the
 * analysis at the end of the process -- threads, sites, data objects,
 * shared lines and their accesses (falseshare), the total -- with the
 * stacks they refer to.  A stack frame carries the code address, the
 * module's path and the address in the module's file ("off"); kscope
 * adds function, file and line after the run (src/memtools/rtsym), where
 * libdw is at hand.
 *
 * Sites are per thread in the runtime (rt_access.c); here those of one
 * instruction are summed into one site record, as the Valgrind tool has
 * one per instruction.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rt_int.h"

static void out_write(struct rt_out *o, const char *p, size_t n)
{
	while (n > 0 && !o->failed) {
		ssize_t w = write(o->fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			o->failed = true; /* a full disk: nothing better to do */
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

void rt_out_flush(struct rt_out *o)
{
	out_write(o, o->buf, o->len);
	o->len = 0;
}

void rt_out_printf(struct rt_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(o->buf) - o->len) {
		rt_out_flush(o);
		va_start(ap, fmt);
		n = vsnprintf(o->buf, sizeof(o->buf), fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n >= sizeof(o->buf))
			n = (int)sizeof(o->buf) - 1; /* no record is that long */
	}
	o->len += (size_t)n;
}

void rt_out_str(struct rt_out *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";

	if (sizeof(o->buf) - o->len < 8)
		rt_out_flush(o);
	o->buf[o->len++] = '"';
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (sizeof(o->buf) - o->len < 8)
			rt_out_flush(o);
		if (c == '"' || c == '\\') {
			o->buf[o->len++] = '\\';
			o->buf[o->len++] = (char)c;
		} else if (c < 0x20 || c == 0x7f) {
			o->buf[o->len++] = '\\';
			o->buf[o->len++] = 'u';
			o->buf[o->len++] = '0';
			o->buf[o->len++] = '0';
			o->buf[o->len++] = hex[c >> 4];
			o->buf[o->len++] = hex[c & 15];
		} else {
			/* Bytes >= 0x80 pass: the reader repairs bad UTF-8. */
			o->buf[o->len++] = (char)c;
		}
	}
	if (sizeof(o->buf) - o->len < 2)
		rt_out_flush(o);
	o->buf[o->len++] = '"';
}

/* ------------------------------------------------------------------ */
/* Stacks                                                              */
/* ------------------------------------------------------------------ */

/* Ids of one-frame site stacks come after every context's id; a
 * segment's written flags are the generation below. */
static int generation = 1;
static uint32_t next_pc_id;

void rt_out_reset(void)
{
	generation++;
	next_pc_id = 0;
}

static void frame_out(struct rt_out *o, uintptr_t pc, bool first)
{
	const char *path;
	uintptr_t off;

	rt_out_printf(o, "%s{\"ip\":\"0x%lx\"", first ? "" : ",", (unsigned long)pc);
	if (rt_sym_module(pc, &path, &off)) {
		rt_out_printf(o, ",\"obj\":");
		rt_out_str(o, path);
		rt_out_printf(o, ",\"off\":\"0x%lx\"", (unsigned long)off);
	}
	rt_out_printf(o, "}");
}

uint32_t rt_out_stack(struct rt_out *o, struct rt_ctx *c)
{
	if (c->written == generation)
		return c->id;
	c->written = generation;
	rt_out_printf(o, "{\"rec\":\"stack\",\"id\":%u,\"frames\":[", c->id);
	for (uint32_t i = 0; i < c->n; i++)
		frame_out(o, c->pc[i], i == 0);
	rt_out_printf(o, "]}\n");
	return c->id;
}

uint32_t rt_out_stack_pc(struct rt_out *o, uintptr_t pc)
{
	uint32_t id;

	if (!next_pc_id)
		next_pc_id = rt_ctx_count() + 1;
	id = next_pc_id++;
	rt_out_printf(o, "{\"rec\":\"stack\",\"id\":%u,\"frames\":[", id);
	frame_out(o, pc, true);
	rt_out_printf(o, "]}\n");
	return id;
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static void counts_out(struct rt_out *o, const struct ks_mt_counts *c)
{
	rt_out_printf(o, "\"accesses\":%llu,\"reads\":%llu,\"writes\":%llu,\"cold_misses\":%llu,"
		      "\"misses\":%llu,\"invalidations\":%llu",
		      (unsigned long long)c->accesses, (unsigned long long)c->reads,
		      (unsigned long long)c->writes, (unsigned long long)c->cold_misses,
		      (unsigned long long)c->misses, (unsigned long long)c->invalidations);
}

/* Sites of all threads summed per instruction: an open-addressing map
 * from pc to the sum. */
struct site_sum {
	uintptr_t pc;
	struct ks_mt_counts c;
};

struct site_sums {
	struct site_sum *v;
	size_t cap, n;
};

static void sums_add(struct site_sums *ss, const struct rt_site *s)
{
	size_t j;

	if ((ss->n + 1) * 2 > ss->cap) {
		size_t ncap = ss->cap ? ss->cap * 2 : 1024;
		struct site_sum *nv = rt_zalloc(ncap * sizeof(*nv));

		if (!nv)
			return;
		for (size_t i = 0; i < ss->cap; i++) {
			if (!ss->v[i].pc)
				continue;
			for (j = (ss->v[i].pc * 0x9E3779B97F4A7C15ULL >> 20) & (ncap - 1); nv[j].pc;
			     j = (j + 1) & (ncap - 1))
				;
			nv[j] = ss->v[i];
		}
		rt_free(ss->v, ss->cap * sizeof(*ss->v));
		ss->v = nv;
		ss->cap = ncap;
	}
	for (j = (s->pc * 0x9E3779B97F4A7C15ULL >> 20) & (ss->cap - 1);
	     ss->v[j].pc && ss->v[j].pc != s->pc; j = (j + 1) & (ss->cap - 1))
		;
	if (!ss->v[j].pc) {
		ss->v[j].pc = s->pc;
		ss->n++;
	}
	ss->v[j].c.accesses += s->s.c.accesses;
	ss->v[j].c.reads += s->s.c.reads;
	ss->v[j].c.writes += s->s.c.writes;
	ss->v[j].c.cold_misses += s->s.c.cold_misses;
	ss->v[j].c.misses += s->s.c.misses;
	ss->v[j].c.invalidations += s->s.c.invalidations;
}

static void sites_out(struct rt_out *o)
{
	struct site_sums ss = { 0 };

	for (struct rt_thread *t = rt_threads(); t; t = t->next)
		for (size_t i = 0; i < t->scap; i++) {
			struct rt_site *s = __atomic_load_n(&t->smap[i], __ATOMIC_ACQUIRE);

			if (s && (s->s.c.misses || s->s.c.invalidations))
				sums_add(&ss, s);
		}
	for (size_t i = 0; i < ss.cap; i++) {
		uint32_t id;

		if (!ss.v[i].pc)
			continue;
		id = rt_out_stack_pc(o, ss.v[i].pc);
		rt_out_printf(o, "{\"rec\":\"site\",\"stack\":%u,", id);
		counts_out(o, &ss.v[i].c);
		rt_out_printf(o, "}\n");
	}
	rt_free(ss.v, ss.cap * sizeof(*ss.v));
}

static void var_out(struct rt_out *o, struct rt_obj *ob)
{
	if (ob->written)
		return;
	ob->written = true;
	if (ob->heap) {
		uint32_t aid = ob->alloc ? rt_out_stack(o, ob->alloc) : 0;

		rt_out_printf(o, "{\"rec\":\"var\",\"id\":%u,\"kind\":\"heap\",\"addr\":\"0x%lx\","
			      "\"size\":%lu", ob->id, (unsigned long)ob->addr,
			      (unsigned long)ob->size);
		if (aid)
			rt_out_printf(o, ",\"alloc_stack\":%u", aid);
		if (ob->align)
			rt_out_printf(o, ",\"align\":%lu", (unsigned long)ob->align);
		rt_out_printf(o, "}\n");
	} else {
		rt_out_printf(o, "{\"rec\":\"var\",\"id\":%u,\"kind\":\"global\",\"addr\":\"0x%lx\","
			      "\"size\":%lu,\"name\":", ob->id, (unsigned long)ob->addr,
			      (unsigned long)ob->size);
		rt_out_str(o, ob->name);
		if (ob->objname) {
			rt_out_printf(o, ",\"obj\":");
			rt_out_str(o, ob->objname);
		}
		rt_out_printf(o, "}\n");
	}
}

static void object_out(void *arg, struct rt_obj *ob)
{
	struct rt_out *o = arg;
	uint64_t misses = __atomic_load_n(&ob->misses, __ATOMIC_RELAXED);
	uint64_t invals = __atomic_load_n(&ob->invals, __ATOMIC_RELAXED);

	if (!misses && !invals)
		return;
	var_out(o, ob);
	rt_out_printf(o, "{\"rec\":\"object\",\"var\":%u,\"cold_misses\":0,\"misses\":%llu,"
		      "\"invalidations\":%llu}\n", ob->id, (unsigned long long)misses,
		      (unsigned long long)invals);
}

static void written_clear(void *arg, struct rt_obj *ob)
{
	(void)arg;
	ob->written = false;
}

struct line_arg {
	struct rt_out *o;
	uint64_t quiet;            /* shared lines below --min-accesses */
	uint64_t read_mostly;      /* false but below --min-writes (mtcore.h) */
};

/* What becomes of a shared line, as in the Valgrind tool: reported when
 * two threads each came back to it --min-accesses times, one of them
 * writing, and its verdict is false, true or mixed; quiet when they did
 * not; read-mostly lines are counted, not reported; others (read) are
 * neither. */
enum line_fate { LINE_OTHER, LINE_QUIET, LINE_READ_MOSTLY, LINE_REPORTED };

static enum line_fate line_fate(const struct ks_mt_line_info *li)
{
	unsigned busy = 0;
	bool busy_writer = false;

	if (li->verdict != KS_MT_FALSE && li->verdict != KS_MT_TRUE &&
	    li->verdict != KS_MT_MIXED && li->verdict != KS_MT_READ_MOSTLY)
		return LINE_OTHER;
	for (unsigned i = 0; i < li->nthreads; i++)
		if (li->threads[i].reads + li->threads[i].writes >= rt.min_accesses) {
			busy++;
			if (li->threads[i].writes)
				busy_writer = true;
		}
	if (busy < 2 || !busy_writer)
		return LINE_QUIET;
	return li->verdict == KS_MT_READ_MOSTLY ? LINE_READ_MOSTLY : LINE_REPORTED;
}

/* The objects of the n words of step bytes from base (those whose bit is
 * set in *touched, or all when touched is NULL), in address order, at
 * most 64, their var records written; returns how many. */
static unsigned objects_at(struct rt_out *o, uintptr_t base, unsigned step, unsigned n,
			   const uint64_t *touched, struct rt_obj *obs[64])
{
	unsigned nobs = 0;

	for (unsigned w = 0; w < n && nobs < 64; w++) {
		uintptr_t a = base + (uintptr_t)w * step;
		struct rt_obj *x;

		if (touched && !(*touched >> w & 1))
			continue;
		if (nobs && a >= obs[nobs - 1]->addr &&
		    a < obs[nobs - 1]->addr + (obs[nobs - 1]->size ? obs[nobs - 1]->size : 1))
			continue;
		if ((x = rt_obj_of_line(a)) && (!nobs || obs[nobs - 1] != x)) {
			var_out(o, x);
			obs[nobs++] = x;
		}
	}
	return nobs;
}

/* The objects of a line's touched words (the line's "var" is the first,
 * where its lowest touched word is). */
static unsigned line_objects(struct rt_out *o, const struct ks_mt_line_info *li,
			     struct rt_obj *obs[64])
{
	uint64_t touched = 0;

	for (unsigned i = 0; i < li->nthreads; i++)
		touched |= li->threads[i].rmask | li->threads[i].wmask;
	return objects_at(o, li->line_addr, li->word_size, 64, &touched, obs);
}

/* "var":N,"vars":[...], for a line's objects. */
static void line_vars_out(struct rt_out *o, struct rt_obj *const *obs, unsigned nobs)
{
	if (nobs)
		rt_out_printf(o, "\"var\":%u,", obs[0]->id);
	if (nobs > 1) {
		rt_out_printf(o, "\"vars\":[");
		for (unsigned i = 0; i < nobs; i++)
			rt_out_printf(o, "%s%u", i ? "," : "", obs[i]->id);
		rt_out_printf(o, "],");
	}
}

static void threads_out(struct rt_out *o, const struct ks_mt_line_info *li)
{
	rt_out_printf(o, "\"threads\":[");
	for (unsigned i = 0; i < li->nthreads; i++) {
		const struct ks_mt_line_thread *t = &li->threads[i];

		rt_out_printf(o, "%s{\"tid\":%u,\"read\":\"0x%llx\",\"write\":\"0x%llx\","
			      "\"reads\":%llu,\"writes\":%llu}", i ? "," : "", t->tid,
			      (unsigned long long)t->rmask, (unsigned long long)t->wmask,
			      (unsigned long long)t->reads, (unsigned long long)t->writes);
	}
	rt_out_printf(o, "]");
}

/* A line near another thread's (ks_mt_for_each_line_near_others) that
 * is not reported: a "near" record, for the layout prediction. */
struct near_arg {
	struct rt_out *o;
	uint64_t n, dropped;       /* records written; lines past MAX_NEARS */
};

#define MAX_NEARS 4096

static void near_out(void *arg, const struct ks_mt_line_info *li)
{
	struct near_arg *na = arg;
	struct rt_out *o = na->o;
	struct rt_obj *obs[64];
	unsigned nobs;

	if (line_fate(li) == LINE_REPORTED)
		return;
	if (na->n >= MAX_NEARS) {
		na->dropped++;
		return;
	}
	na->n++;
	nobs = line_objects(o, li, obs);
	rt_out_printf(o, "{\"rec\":\"near\",\"addr\":\"0x%lx\",", (unsigned long)li->line_addr);
	line_vars_out(o, obs, nobs);
	rt_out_printf(o, "\"word_size\":%u,", li->word_size);
	threads_out(o, li);
	rt_out_printf(o, "}\n");
}

static void line_out(void *arg, const struct ks_mt_line_info *li)
{
	struct line_arg *la = arg;
	struct rt_out *o = la->o;
	struct rt_obj *obs[64];
	unsigned nobs;

	switch (line_fate(li)) {
	case LINE_OTHER:
		return;
	case LINE_QUIET:
		la->quiet++;
		return;
	case LINE_READ_MOSTLY:
		la->read_mostly++;
		return;
	case LINE_REPORTED:
		break;
	}
	nobs = line_objects(o, li, obs);
	for (unsigned i = 0; i < li->nsites; i++)
		if (li->sites[i].context)
			(void)rt_out_stack(o, li->sites[i].context);
	rt_out_printf(o, "{\"rec\":\"line\",\"addr\":\"0x%lx\",", (unsigned long)li->line_addr);
	line_vars_out(o, obs, nobs);
	rt_out_printf(o, "\"verdict\":\"%s\",\"word_size\":%u,",
		      ks_mt_verdict_name(li->verdict), li->word_size);
	threads_out(o, li);
	rt_out_printf(o, ",\"misses\":%llu,\"invalidations\":%llu,"
		      "\"potential_invalidations\":%llu}\n",
		      (unsigned long long)li->misses, (unsigned long long)li->invalidations,
		      (unsigned long long)li->potential_invalidations);
	for (unsigned i = 0; i < li->nsites; i++) {
		const struct ks_mt_line_site *s = &li->sites[i];
		/* The entry gathering a thread's sites past the limit has no
		 * context of its own; the format requires one: the place 0. */
		uint32_t cid = s->context ? rt_out_stack(o, s->context) : rt_out_stack_pc(o, 0);

		rt_out_printf(o, "{\"rec\":\"access\",\"line\":\"0x%lx\",",
			      (unsigned long)li->line_addr);
		if (nobs)
			rt_out_printf(o, "\"var\":%u,", obs[0]->id);
		rt_out_printf(o, "\"tid\":%u,\"context\":%u,\"reads\":%llu,\"writes\":%llu,"
			      "\"words\":\"0x%llx\"}\n", s->tid, cid, (unsigned long long)s->reads,
			      (unsigned long long)s->writes, (unsigned long long)s->words);
	}
}

/* The contention report's lines: at most MAX_CLINES, those with the most
 * misses + invalidations (the threshold doubles until they fit). */
#define MAX_CLINES 1000

static void cline_out(void *arg, uintptr_t line, uint64_t misses, uint64_t invals)
{
	struct rt_out *o = arg;
	struct rt_obj *obs[64];
	/* Which words the threads touched is not kept for contention:
	 * every object of the line, looked up every 8 bytes. */
	unsigned nobs = objects_at(o, line, 8, rt.line_size / 8, NULL, obs);

	rt_out_printf(o, "{\"rec\":\"cline\",\"addr\":\"0x%lx\",", (unsigned long)line);
	line_vars_out(o, obs, nobs);
	rt_out_printf(o, "\"misses\":%llu,\"invalidations\":%llu}\n", (unsigned long long)misses,
		      (unsigned long long)invals);
}

static void clines_out(struct rt_out *o)
{
	uint64_t min = 1;

	while (ks_mt_for_each_contended_line(rt.mt, min, NULL, NULL) > MAX_CLINES &&
	       min < (UINT64_C(1) << 40))
		min *= 2;
	(void)ks_mt_for_each_contended_line(rt.mt, min, cline_out, o);
}

void rt_out_results(struct rt_out *o)
{
	struct line_arg la = { .o = o };
	struct near_arg na = { .o = o };
	struct ks_mt_counts c, tot;
	unsigned nt = ks_mt_threads_seen(rt.mt);

	rt_obj_for_each(written_clear, NULL);
	for (unsigned t = 0; t < nt; t++) {
		ks_mt_thread_counts(rt.mt, t, &c);
		if (!c.accesses)
			continue;
		rt_out_printf(o, "{\"rec\":\"thread\",\"tid\":%u,", t);
		counts_out(o, &c);
		rt_out_printf(o, "}\n");
	}
	sites_out(o);
	rt_obj_for_each(object_out, o);
	clines_out(o);
	if (rt.falseshare) {
		ks_mt_for_each_shared_line(rt.mt, line_out, &la);
		ks_mt_for_each_line_near_others(rt.mt, rt.min_writes, near_out, &na);
	}
	ks_mt_total_counts(rt.mt, &tot);
	rt_out_printf(o, "{\"rec\":\"total\",");
	counts_out(o, &tot);
	rt_out_printf(o, ",\"contention_accesses\":%llu,\"shadow_bytes\":%lu,"
		      "\"quiet_lines\":%llu,\"min_accesses\":%u",
		      (unsigned long long)(tot.misses + tot.invalidations),
		      (unsigned long)ks_mt_shadow_resident(rt.mt), (unsigned long long)la.quiet,
		      rt.min_accesses);
	if (rt.falseshare)
		rt_out_printf(o, ",\"read_mostly_lines\":%llu,\"min_writes\":%u,\"near_dropped\":%llu",
			      (unsigned long long)la.read_mostly, rt.min_writes,
			      (unsigned long long)na.dropped);
	rt_out_printf(o, "}\n");
}
