/*
 * view_import_profile.c: a kscope sample profile.db as a card -- the
 * profile itself (the profile commands report from it) and a timeline
 * of its samples.
 *
 * The timeline shows, per thread, the call stacks of consecutive samples
 * as nested slices, the outermost frame at depth 0: consecutive samples
 * whose call paths share a node at a depth extend one slice there, and
 * each sample lasts one sampling interval (1 / the rate of its clock), cut
 * short by the thread's next sample.  A gap (the thread was not running,
 * or its samples were dropped) ends every slice: for wall-clock samples a
 * gap is more than two intervals; CPU-time samples of a thread that
 * shares its core with others come further apart in wall time, so for
 * them a gap is more than ten intervals.  A slice's args give its frame's file, line and module and the
 * samples it covers; for a profile with samples of both timers, also how
 * many of them each timer took (cpu_samples, wall_samples), as the
 * reports keep the timers apart.  The sample run's trace.json (if any) is
 * not used: its samples are instants without their stacks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "raw.h"
#include "store.h"
#include "view_import_int.h"

/* A sample's place in its thread's order. */
struct order {
	uint32_t thread;
	uint64_t ts;
	uint32_t sample;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->sample < y->sample ? -1 : x->sample > y->sample;
}

/* One open slice of the thread being built. */
struct open {
	uint32_t node;
	uint64_t start, last, samples;
	uint64_t cpu, wall;    /* of the samples, the CPU-time and wall-clock ones */
};

struct builder {
	const struct ks_profile *p;
	struct kv_timeline *tl;
	char pid[24], tid[24];
	bool both;             /* the profile has samples of both timers */
	struct open *open;
	size_t nopen, cap;
	uint32_t *path;
	size_t cappath;
};

static const char *base_name(const char *s)
{
	const char *b = strrchr(s, '/');

	return b ? b + 1 : s;
}

static int emit(struct builder *b, const struct open *o, uint64_t end)
{
	const struct ks_profile *p = b->p;
	const struct ks_pframe *f = &p->frames[p->nodes[o->node].frame];
	const char *module = ks_profile_str(p, f->module);
	json_t *args = json_object();
	char *text;
	int rc;

	if (!args)
		return -ENOMEM;
	if (f->file != KS_NONE)
		json_object_set_new(args, "file", ks_json_text(ks_profile_str(p, f->file)));
	if (f->line)
		json_object_set_new(args, "line", json_integer(f->line));
	json_object_set_new(args, "module", ks_json_text(module));
	json_object_set_new(args, "samples", json_integer((json_int_t)o->samples));
	if (b->both) {
		json_object_set_new(args, "cpu_samples", json_integer((json_int_t)o->cpu));
		json_object_set_new(args, "wall_samples", json_integer((json_int_t)o->wall));
	}
	text = json_dumps(args, JSON_COMPACT);
	json_decref(args);
	if (!text)
		return -ENOMEM;
	rc = kv_tl_slice(b->tl, b->pid, b->tid, ks_profile_str(p, f->function),
			 base_name(module), NULL, (int64_t)o->start,
			 end > o->start ? end - o->start : 0, text, strlen(text));
	free(text);
	return rc;
}

/*
 * Closes the open slices at depths keep and deeper.  They are added
 * outermost first: a caller and its callee often cover the same samples,
 * so their slices have the same start and end, and the timeline puts
 * slices of equal extent in the order they were added, the first one
 * outermost (view_timeline.c).  Adding the callee first would draw the
 * stack upside down.
 */
static int close_to(struct builder *b, size_t keep, uint64_t interval, uint64_t next_ts,
		    bool has_next)
{
	for (size_t d = keep; d < b->nopen; d++) {
		const struct open *o = &b->open[d];
		uint64_t end = o->last + interval;
		int rc;

		if (has_next && next_ts < end)
			end = next_ts;
		rc = emit(b, o, end);
		if (rc < 0)
			return rc;
	}
	if (b->nopen > keep)
		b->nopen = keep;
	return 0;
}

static int add_sample(struct builder *b, const struct ks_psample *s, uint64_t interval,
		      bool gap)
{
	const struct ks_profile *p = b->p;
	size_t n = 0, common = 0;
	int rc;

	/* the path, innermost first, then reversed */
	for (uint32_t node = s->node; node != KS_NONE && node < p->n_nodes;
	     node = p->nodes[node].parent) {
		if (n == b->cappath) {
			size_t cap = b->cappath ? 2 * b->cappath : 64;
			uint32_t *np = realloc(b->path, cap * sizeof *np);

			if (!np)
				return -ENOMEM;
			b->path = np;
			b->cappath = cap;
		}
		b->path[n++] = node;
		if (n > p->n_nodes) /* a cycle: the file is damaged */
			break;
	}
	for (size_t i = 0; i < n / 2; i++) {
		uint32_t t = b->path[i];

		b->path[i] = b->path[n - 1 - i];
		b->path[n - 1 - i] = t;
	}
	if (!gap)
		while (common < n && common < b->nopen && b->open[common].node == b->path[common])
			common++;
	rc = close_to(b, common, interval, s->ts, !gap);
	if (rc < 0)
		return rc;
	if (n > b->cap) {
		struct open *no = realloc(b->open, n * sizeof *no);

		if (!no)
			return -ENOMEM;
		b->open = no;
		b->cap = n;
	}
	for (size_t d = common; d < n; d++)
		b->open[d] = (struct open){ .node = b->path[d], .start = s->ts };
	b->nopen = n;
	for (size_t d = 0; d < n; d++) {
		b->open[d].last = s->ts;
		b->open[d].samples++;
		b->open[d].cpu += s->clock == KS_RAW_CLOCK_CPU;
		b->open[d].wall += s->clock == KS_RAW_CLOCK_REAL;
	}
	return 0;
}

static int build_timeline(struct kv_import *im, struct kv_card *c)
{
	const struct ks_profile *p = c->profile;
	struct builder b = { .p = p };
	struct order *ord = NULL;
	uint64_t iv_cpu = p->cputime_freq ? 1000000000ull / p->cputime_freq : 10000000,
		 iv_real = p->realtime_freq ? 1000000000ull / p->realtime_freq : 10000000;
	int rc = -ENOMEM;

	b.tl = kv_tl_new();
	if (!b.tl)
		goto out;
	for (size_t i = 0; i < p->n_processes; i++) {
		char pid[24];

		snprintf(pid, sizeof pid, "%d", p->processes[i].pid);
		rc = kv_tl_process_name(b.tl, pid, ks_profile_str(p, p->processes[i].command),
					(int)i);
		if (rc < 0)
			goto out;
	}
	for (size_t i = 0; i < p->n_threads; i++) {
		const struct ks_pthread *t = &p->threads[i];
		char pid[24], tid[24], name[64];
		const char *tn = ks_profile_str(p, t->name);

		snprintf(pid, sizeof pid, "%d", t->process < p->n_processes
			 ? p->processes[t->process].pid : -1);
		snprintf(tid, sizeof tid, "%d", t->tid);
		if (!tn[0]) {
			snprintf(name, sizeof name, "thread %d", t->tid);
			tn = name;
		}
		rc = kv_tl_thread_name(b.tl, pid, tid, tn, (int)i);
		if (rc < 0)
			goto out;
	}
	rc = -ENOMEM;
	ord = malloc((p->n_samples ? p->n_samples : 1) * sizeof *ord);
	if (!ord)
		goto out;
	for (size_t i = 0, seen = 0; i < p->n_samples; i++) {
		ord[i] = (struct order){ p->samples[i].thread, p->samples[i].ts, (uint32_t)i };
		seen |= p->samples[i].clock == KS_RAW_CLOCK_CPU ? 1 : 0;
		seen |= p->samples[i].clock == KS_RAW_CLOCK_REAL ? 2 : 0;
		b.both = seen == 3;
	}
	qsort(ord, p->n_samples, sizeof *ord, cmp_order);
	rc = 0;
	for (size_t i = 0; i < p->n_samples && rc == 0; i++) {
		const struct ks_psample *s = &p->samples[ord[i].sample];
		uint64_t iv = s->clock == KS_RAW_CLOCK_REAL ? iv_real : iv_cpu;
		bool first = i == 0 || ord[i - 1].thread != s->thread;
		uint64_t gap_ns = s->clock == KS_RAW_CLOCK_REAL ? 2 * iv : 10 * iv;
		bool gap = first || s->ts > ord[i - 1].ts + gap_ns;

		if (first) {
			rc = close_to(&b, 0, iv, 0, false);
			const struct ks_pthread *t = s->thread < p->n_threads
				? &p->threads[s->thread] : NULL;

			snprintf(b.pid, sizeof b.pid, "%d", t && t->process < p->n_processes
				 ? p->processes[t->process].pid : -1);
			snprintf(b.tid, sizeof b.tid, "%d", t ? t->tid : -1);
		}
		if (rc == 0)
			rc = add_sample(&b, s, iv, gap);
		if (rc == 0 && i + 1 == p->n_samples)
			rc = close_to(&b, 0, iv, 0, false);
	}
	if (rc < 0)
		goto out;
	rc = kv_tl_finish(b.tl, im->err);
	if (rc < 0)
		goto out_err;
	c->tl = b.tl;
	b.tl = NULL;
out:
	if (rc < 0)
		ks_err_set(im->err, rc, "%s: building the timeline of the samples: %s", c->path,
			   strerror(-rc));
out_err:
	if (b.tl)
		kv_tl_free(b.tl);
	free(b.open);
	free(b.path);
	free(ord);
	return rc;
}

int kv_card_profile(struct kv_import *im, struct kv_card *c, const char *path)
{
	struct ks_profile *p = calloc(1, sizeof *p);
	int rc;

	if (!p)
		return ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
	kv_progress(im, "reading %s", path);
	rc = ks_profile_init(p, im->err);
	if (rc == 0)
		rc = ks_store_read(path, p, im->err);
	if (rc < 0) {
		ks_profile_free(p);
		free(p);
		return rc;
	}
	c->profile = p;
	kv_progress(im, "building the timeline of %zu samples", p->n_samples);
	return build_timeline(im, c);
}
