/*
 * kscope op --simulate's deliverables (simpost.h): reads the raw file of
 * kscope's Valgrind tool (simread.c), disassembles its instructions
 * (simdisasm.c), derives what every writer shares (the cores, the source
 * lines, the x records in the orders the writers walk them), fills the
 * summary, and calls the writers (simcsv.c, simviz.c, simbw.c).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kscope/vizbin.h>

#include "simpost_int.h"

/* ------------------------------------------------------------------ */
/* Shared by the writers                                               */
/* ------------------------------------------------------------------ */

const uint64_t *sim_xv(const struct sim *s, size_t xi)
{
	return s->xv + xi * XW(s);
}

const uint64_t *sim_bwv(const struct sim *s, size_t bi)
{
	return s->bwv + bi * BW(s);
}

void sim_acc_add(const struct sim *s, struct sim_acc *a, size_t xi)
{
	const uint64_t *v = sim_xv(s, xi);

	a->execs += v[XE];
	a->cycles += v[XC];
	a->loadb += v[XL];
	a->storeb += v[XS];
	a->imiss += v[XI];
	a->flops += v[XE] * s->ins[s->x[xi].ins].flops;
	a->basec += v[XE] * s->ins[s->x[xi].ins].base;
	a->gprs |= s->ins[s->x[xi].ins].gprs;
	if (s->ins[s->x[xi].ins].pipe == KS_SIM_PIPE_VECTOR && s->ins[s->x[xi].ins].velem) {
		a->vused += v[XE] * s->ins[s->x[xi].ins].vlanes;
		a->vavail += v[XE] * (KS_SIM_VECTOR_BITS / s->ins[s->x[xi].ins].velem);
	}
	for (unsigned k = 0; k < s->levels; k++) {
		a->acc[k] += v[XA(k)];
		a->miss[k] += v[XM(k)];
	}
}

uint64_t sim_stall(const struct sim_acc *a)
{
	return a->cycles > a->basec ? a->cycles - a->basec : 0;
}

double sim_hit_rate(const struct sim_acc *a, unsigned k)
{
	if (k >= KS_SIM_MAX_LEVELS || !a->acc[k])
		return NAN;
	return (double)(a->acc[k] - a->miss[k]) / (double)a->acc[k];
}

double sim_vector_util(const struct sim_acc *a)
{
	return a->vavail ? 100.0 * (double)a->vused / (double)a->vavail : NAN;
}

int sim_pipe_acc(const struct sim *s, struct sim_acc **out, struct ks_err *err)
{
	struct sim_acc *a = calloc((s->ncores + 1) * KS_SIM_PIPE_COUNT, sizeof(*a));

	if (!a)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nx; i++) {
		unsigned p = s->ins[s->x[i].ins].pipe;

		sim_acc_add(s, &a[s->threads[s->x[i].th].core * KS_SIM_PIPE_COUNT + p], i);
		sim_acc_add(s, &a[s->ncores * KS_SIM_PIPE_COUNT + p], i);
	}
	*out = a;
	return 0;
}

/* The "L2Cache Hit Rate" column of the MindStudio design names the level
 * behind the first; a one-level hierarchy has none, and shows its only
 * level rather than nothing. */
int sim_l2_level(const struct sim *s)
{
	return s->levels >= 2 ? 1 : s->levels == 1 ? 0 : -1;
}

const char *sim_file_name(const struct sim *s, int32_t file)
{
	return file >= 0 && (size_t)file < s->nfiles ? s->files[file] : "??";
}

const char *sim_fn_name(const struct sim *s, int32_t fn)
{
	return fn >= 0 && (size_t)fn < s->nfns ? s->fns[fn] : "??";
}

void sim_location(const struct sim *s, const struct sim_ins *in, char *out, size_t size)
{
	if (in->file >= 0 && in->line)
		snprintf(out, size, "%s:%u", sim_file_name(s, in->file), in->line);
	else
		snprintf(out, size, "??:0");
}

void sim_path_name(const struct sim *s, unsigned k, char *out, size_t size)
{
	if (k == 0 && s->levels)
		snprintf(out, size, "%s -> registers", s->cache[0].name);
	else if (k == 0)
		snprintf(out, size, "memory -> registers");
	else if (k < s->levels)
		snprintf(out, size, "%s -> %s", s->cache[k].name, s->cache[k - 1].name);
	else
		snprintf(out, size, "memory -> %s", s->cache[s->levels - 1].name);
}

double sim_us(const struct sim *s, double cycles)
{
	return cycles / s->clock_hz * 1e6;
}

int sim_open(struct ks_rundir *rd, const char *name, struct ks_outfile *of,
	     struct ks_text *t, struct ks_err *err)
{
	int rc = ks_outfile_open(rd, name, of, err);

	if (rc)
		return rc;
	if (ks_text_open_outfile(t, of)) {
		ks_outfile_abort(of);
		return ks_err_set(err, -ENOMEM, "%s: out of memory", name);
	}
	return 0;
}

int sim_commit(struct ks_outfile *of, struct ks_text *t, struct ks_err *err)
{
	int rc = ks_text_close(t);

	if (rc && !of->error)
		of->error = rc;
	return ks_outfile_commit(of, KS_DELIVERABLE_MODE, err);
}

/* ------------------------------------------------------------------ */
/* Streaming a JSON block                                              */
/* ------------------------------------------------------------------ */

static int vb_sink(void *ctx, const void *buf, size_t len)
{
	struct sim_vb *v = ctx;

	if (v->tee)
		ks_outfile_write(v->tee, buf, len);  /* its error: at commit */
	return ks_vb_append(v->w, buf, len, &v->verr);
}

int sim_vb_begin(struct sim_vb *v, struct ks_text *t, unsigned type, unsigned version,
		 struct ks_err *err)
{
	int rc = ks_vb_begin(v->w, type, version, NULL, &v->verr);

	if (rc)
		return ks_err_set(err, rc, "visualize_data.bin: %s", v->verr.msg);
	if (ks_text_open(t, vb_sink, v))
		return ks_err_set(err, -ENOMEM, "visualize_data.bin: out of memory");
	return 0;
}

int sim_vb_end(struct sim_vb *v, struct ks_text *t, struct ks_err *err)
{
	int rc = ks_text_close(t);

	if (rc == -ENOMEM && !v->verr.msg[0])
		return ks_err_set(err, rc, "visualize_data.bin: out of memory");
	if (!rc)
		rc = ks_vb_end(v->w, &v->verr);
	if (rc)
		return ks_err_set(err, rc, "visualize_data.bin: %s", v->verr.msg);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Orders                                                              */
/* ------------------------------------------------------------------ */

struct xkey {
	uint64_t a, b;
	uint32_t c, xi;
};

static int xkey_cmp(const void *pa, const void *pb)
{
	const struct xkey *a = pa, *b = pb;

	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	if (a->c != b->c)
		return a->c < b->c ? -1 : 1;
	return a->xi < b->xi ? -1 : a->xi > b->xi;
}

int sim_sort_x(const struct sim *s, enum sim_order order, uint32_t **out,
	       struct ks_err *err)
{
	struct xkey *k = malloc((s->nx ? s->nx : 1) * sizeof(*k));
	uint32_t *idx = malloc((s->nx ? s->nx : 1) * sizeof(*idx));

	if (!k || !idx) {
		free(k);
		free(idx);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nx; i++) {
		const struct sim_ins *in = &s->ins[s->x[i].ins];
		uint64_t core = s->threads[s->x[i].th].core;

		k[i].xi = (uint32_t)i;
		k[i].c = s->x[i].ins;
		k[i].b = in->addr;
		switch (order) {
		case SIM_BY_CORE_ADDR:
			k[i].a = core;
			break;
		case SIM_BY_CORE_LINE:
			k[i].a = core << 32 | in->lineid;
			break;
		case SIM_BY_LINE_CORE:
			k[i].a = (uint64_t)in->lineid << 32 | core;
			break;
		case SIM_BY_ADDR_CORE:
			k[i].a = in->addr;
			k[i].b = (uint64_t)s->x[i].ins << 32 | core;
			k[i].c = 0;
			break;
		}
	}
	qsort(k, s->nx, sizeof(*k), xkey_cmp);
	for (size_t i = 0; i < s->nx; i++)
		idx[i] = k[i].xi;
	free(k);
	*out = idx;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Cores and lines                                                     */
/* ------------------------------------------------------------------ */

static int thread_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct sim *s = ctx;
	uint32_t a = s->threads[*(const uint32_t *)pa].tid;
	uint32_t b = s->threads[*(const uint32_t *)pb].tid;

	return a < b ? -1 : a > b;
}

static int file_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct sim *s = ctx;

	return strcmp(s->files[*(const uint32_t *)pa], s->files[*(const uint32_t *)pb]);
}

struct lkey {
	uint32_t unknown, rank, line, ins;
};

static int lkey_cmp(const void *pa, const void *pb)
{
	const struct lkey *a = pa, *b = pb;

	if (a->unknown != b->unknown)
		return a->unknown < b->unknown ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return a->ins < b->ins ? -1 : a->ins > b->ins;
}

/* The cores (threads with x records, by TID) and the line table (the
 * lines of executed instructions, by file path and line; files of the
 * same path are one). */
static int derive(struct sim *s, struct ks_err *err)
{
	uint32_t *order = NULL, *rank = NULL;
	struct lkey *lk = NULL;
	size_t nl = 0;
	int rc = -ENOMEM;

	for (size_t i = 0; i < s->nx; i++)
		s->threads[s->x[i].th].core = 0;
	s->cores = malloc((s->nthreads ? s->nthreads : 1) * sizeof(*s->cores));
	order = malloc((s->nfiles ? s->nfiles : 1) * sizeof(*order));
	rank = malloc((s->nfiles ? s->nfiles : 1) * sizeof(*rank));
	lk = malloc((s->nins ? s->nins : 1) * sizeof(*lk));
	if (!s->cores || !order || !rank || !lk)
		goto out;
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].core != SIM_NONE)
			s->cores[s->ncores++] = (uint32_t)i;
	qsort_r(s->cores, s->ncores, sizeof(*s->cores), thread_cmp, s);
	for (size_t c = 0; c < s->ncores; c++)
		s->threads[s->cores[c]].core = (uint32_t)c;

	for (size_t i = 0; i < s->nfiles; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, s->nfiles, sizeof(*order), file_cmp, s);
	for (size_t i = 0; i < s->nfiles; i++)
		rank[order[i]] = i && strcmp(s->files[order[i]], s->files[order[i - 1]]) == 0
				 ? rank[order[i - 1]] : (uint32_t)i;
	for (size_t i = 0; i < s->nins; i++) {
		const struct sim_ins *in = &s->ins[i];
		bool known = in->file >= 0 && in->line > 0;

		if (!in->executed)
			continue;
		if (in->flops > s->max_flops)
			s->max_flops = in->flops;
		lk[nl].unknown = !known;
		lk[nl].rank = known ? rank[in->file] : 0;
		lk[nl].line = known ? in->line : 0;
		lk[nl].ins = (uint32_t)i;
		nl++;
	}
	qsort(lk, nl, sizeof(*lk), lkey_cmp);
	s->lines = malloc((nl ? nl : 1) * sizeof(*s->lines));
	if (!s->lines)
		goto out;
	for (size_t i = 0; i < nl; i++) {
		struct sim_ins *in = &s->ins[lk[i].ins];

		if (!i || lkey_cmp(&(struct lkey){ lk[i].unknown, lk[i].rank, lk[i].line, 0 },
				   &(struct lkey){ lk[i - 1].unknown, lk[i - 1].rank,
						   lk[i - 1].line, 0 }) != 0) {
			s->lines[s->nlines].file = lk[i].unknown ? -1 : in->file;
			s->lines[s->nlines].line = lk[i].line;
			s->nlines++;
		}
		in->lineid = (uint32_t)(s->nlines - 1);
	}
	rc = 0;
out:
	free(order);
	free(rank);
	free(lk);
	if (rc)
		return ks_err_set(err, rc, "out of memory");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Summary                                                             */
/* ------------------------------------------------------------------ */

static int summarize(const struct sim *s, struct ks_simpost_summary *sum,
		     struct ks_err *err)
{
	struct sim_acc all = { 0 };
	uint64_t *lc, *li, maxc = 0;

	sum->truncated = !s->have_end;
	snprintf(sum->end_how, sizeof(sum->end_how), "%s", s->have_end ? s->end_how : "");
	sum->end_code = s->end_code;
	sum->threads = (unsigned)s->ncores;
	sum->levels = s->levels;
	for (unsigned k = 0; k < s->levels; k++)
		snprintf(sum->level_name[k], sizeof(sum->level_name[k]), "%s", s->cache[k].name);
	for (size_t i = 0; i < s->nthreads; i++) {
		sum->instrs += s->threads[i].instrs;
		sum->cycles += s->threads[i].cycles;
		if (s->threads[i].cycles > maxc)
			maxc = s->threads[i].cycles;
	}
	sum->sim_seconds = (double)maxc / s->clock_hz;
	for (size_t i = 0; i < s->nx; i++)
		sim_acc_add(s, &all, i);
	for (unsigned k = 0; k < s->levels; k++) {
		sum->level_acc[k] = all.acc[k];
		sum->level_miss[k] = all.miss[k];
	}
	sum->flops = all.flops;
	sum->load_bytes = all.loadb;
	sum->store_bytes = all.storeb;
	for (size_t i = 0; i < s->nbw; i++)
		sum->dram_bytes += sim_bwv(s, i)[2 * s->levels] + sim_bwv(s, i)[2 * s->levels + 1];
	sum->trace_dropped = s->dropped;
	snprintf(sum->trace_from, sizeof(sum->trace_from), "%s", s->trace_from);
	sum->trace_blocks = s->ntr;
	for (size_t i = 0; i < s->ntr; i++)
		sum->trace_cycles += s->tr[i].end - s->tr[i].start;

	/* The hottest lines over all threads. */
	lc = calloc(s->nlines ? s->nlines : 1, sizeof(*lc));
	li = calloc(s->nlines ? s->nlines : 1, sizeof(*li));
	if (!lc || !li) {
		free(lc);
		free(li);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nx; i++) {
		uint32_t l = s->ins[s->x[i].ins].lineid;

		lc[l] += sim_xv(s, i)[XC];
		li[l] += sim_xv(s, i)[XE];
	}
	sum->ntop = 0;
	for (size_t l = 0; l < s->nlines; l++) {
		size_t at = sum->ntop;

		while (at > 0 && sum->top[at - 1].cycles < lc[l])
			at--;
		if (at >= KS_SIMPOST_TOP)
			continue;
		if (sum->ntop < KS_SIMPOST_TOP)
			sum->ntop++;
		memmove(&sum->top[at + 1], &sum->top[at],
			(sum->ntop - 1 - at) * sizeof(sum->top[0]));
		snprintf(sum->top[at].file, sizeof(sum->top[at].file), "%s",
			 sim_file_name(s, s->lines[l].file));
		sum->top[at].line = s->lines[l].line;
		sum->top[at].cycles = lc[l];
		sum->top[at].instrs = li[l];
	}
	free(lc);
	free(li);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The deliverables                                                    */
/* ------------------------------------------------------------------ */

/* The container and, when it did not write it, trace.json. */
struct viz_task {
	struct ks_rundir *run;
	const struct sim *s;
	const struct ks_simpost_opts *o;
	struct ks_simpost_summary *sum;
	int rc;
	struct ks_err err;
};

static void *viz_main(void *arg)
{
	struct viz_task *t = arg;
	/* --aic-metrics: the trace is the pipeline and bandwidth charts. */
	bool want_trace = t->s->metrics & (KS_SIM_METRIC_PIPE | KS_SIM_METRIC_BANDWIDTH);
	bool trace_done = false;
	struct ks_err e;
	int r;

	t->rc = sim_write_viz(t->run, t->s, t->o, t->sum, &trace_done, &t->err);
	if (want_trace && !trace_done) {
		r = sim_write_trace(t->run, t->s, &t->sum->trace_slices, &e);
		if (r && !t->rc) {
			t->rc = r;
			t->err = e;
		}
	}
	return NULL;
}

int ks_simpost_write(struct ks_rundir *run, const struct ks_simpost_opts *o,
		     struct ks_simpost_summary *sum, struct ks_err *err)
{
	struct sim s;
	int rc;

	memset(sum, 0, sizeof(*sum));
	memset(&s, 0, sizeof(s));
	if (!o->raw_path)
		return ks_err_set(err, -EINVAL, "no raw file to read");
	if (!isfinite(o->clock_hz) || o->clock_hz <= 0)
		return ks_err_set(err, -EINVAL, "the simulated clock (%g Hz) must be positive",
				  o->clock_hz);
	s.raw_path = o->raw_path;
	s.warn = o->warn;
	s.warn_ctx = o->warn_ctx;
	s.clock_hz = o->clock_hz;
	s.metrics = o->metrics ? o->metrics & KS_SIM_METRIC_ALL : KS_SIM_METRIC_ALL;
	rc = sim_read(&s, err);
	if (!(s.metrics & KS_SIM_METRIC_PIPE))
		s.ntr = 0;  /* a run rebuilt by --export may have block executions */
	if (!rc)
		rc = sim_disasm(&s, err);
	if (!rc)
		rc = derive(&s, err);
	if (!rc)
		rc = summarize(&s, sum, err);
	if (rc) {
		sim_free(&s);
		return rc;
	}
	if (!s.ncores)
		sim_warnf(&s, "no instruction was counted%s%s%s: the deliverables are empty",
			  s.region && strcmp(s.region, "*") ? " in the region '" : "",
			  s.region && strcmp(s.region, "*") ? s.region : "",
			  s.region && strcmp(s.region, "*") ? "' (--kernel-name)" : "");

	/* Every deliverable is attempted; the first failure (in the order
	 * CSVs, container, trace, bandwidth) is returned.  The container,
	 * the largest, is written on a thread of its own while this one
	 * writes the others: the writers only read s, and only the
	 * container's writes sum.  The container writes trace.json with its
	 * 0x02 block; without the container, trace.json is written alone. */
	{
		struct viz_task vt = { .run = run, .s = &s, .o = o, .sum = sum };
		struct ks_err e[2];
		int r[2];
		pthread_t th;
		bool threaded = pthread_create(&th, NULL, viz_main, &vt) == 0;

		r[0] = sim_write_csv(run, &s, &e[0]);
		if (!threaded)
			viz_main(&vt);
		r[1] = s.metrics & KS_SIM_METRIC_BANDWIDTH ? sim_write_bw(run, &s, &e[1]) : 0;
		if (threaded)
			pthread_join(th, NULL);
		rc = r[0] ? r[0] : vt.rc ? vt.rc : r[1];
		if (rc && err)
			*err = r[0] ? e[0] : vt.rc ? vt.err : e[1];
	}
	sim_free(&s);
	return rc;
}
