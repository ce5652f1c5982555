/*
 * The JSON deliverables of kscope op --simulate: the pipeline chart
 * (trace.json, and the same document as the 0x02 block) and
 * visualize_data.bin with, in this order, 0x02, a 0x01 block per readable
 * source file, 0x03 (the api.json Files part: per source line and
 * thread), 0x04 (the Instructions part: per instruction and thread,
 * version 0x00 as its instructions map to source by "Source Location")
 * and 0x0D (the roofline).  docs/formats.md gives the container and the
 * MindStudio schemas; "Cores" are the threads, "thread<TID>", by TID.
 *
 * The documents are streamed through textout.h rather than built with
 * jansson: a tree of half a million instructions with their per-thread
 * arrays would take hundreds of megabytes, and jansson refuses strings
 * that are not UTF-8, which a path or a function name from a program may
 * not be.
 *
 * The pipeline chart: a process per thread, a track per pipe class.
 * Each `tr` record (one execution of a block) shares its cycles among the
 * instructions that ran in proportion to their base cycles, and
 * consecutive instructions of one pipe become one slice, named after its
 * first instruction's mnemonic.  The transfer bandwidth chart follows the
 * slices as counter ("C") events on each thread's process, one counter
 * per path (bw_counters).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kscope/vizbin.h>

#include "readfile.h"
#include "simpost_int.h"

/* A source file larger than this is not put in the container. */
#define SIM_SOURCE_MAX (64u << 20)

static const char *const pipe_names[] = KS_SIM_PIPE_NAMES;

/* ------------------------------------------------------------------ */
/* The pipeline chart                                                  */
/* ------------------------------------------------------------------ */

static int tid_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct sim *s = ctx;
	uint32_t a = s->threads[*(const uint32_t *)pa].tid;
	uint32_t b = s->threads[*(const uint32_t *)pb].tid;

	return a < b ? -1 : a > b;
}

static void meta(struct ks_text *t, bool *first, const char *what, uint32_t pid, int tid,
		 const char *key, const char *name, long sort)
{
	ks_text_puts(t, *first ? "\n" : ",\n");
	*first = false;
	ks_text_puts(t, "{\"name\":");
	ks_text_json_str(t, what);
	ks_text_puts(t, ",\"ph\":\"M\",\"pid\":");
	ks_text_u64(t, pid);
	ks_text_puts(t, ",\"tid\":");
	ks_text_i64(t, tid);
	ks_text_puts(t, ",\"args\":{");
	ks_text_json_str(t, key);
	ks_text_puts(t, ":");
	if (name)
		ks_text_json_str(t, name);
	else
		ks_text_i64(t, sort);
	ks_text_puts(t, "}}");
}

/* A non-negative time in microseconds with 6 decimals, without printf
 * (a trace has hundreds of thousands of them). */
static void put_us(struct ks_text *t, double us)
{
	char frac[8];
	uint64_t ps;

	if (!isfinite(us) || us < 0 || us > 1e12) {
		ks_text_json_num(t, us, 6);
		return;
	}
	ps = (uint64_t)llround(us * 1e6);
	ks_text_u64(t, ps / 1000000);
	frac[0] = '.';
	for (int i = 6, v = (int)(ps % 1000000); i >= 1; i--, v /= 10)
		frac[i] = (char)('0' + v % 10);
	ks_text_put(t, frac, 7);
}

/* One slice: instructions [from, to) of the block's list, from cycle
 * c0 to c1. */
static void slice(struct ks_text *t, const struct sim *s, uint32_t tid,
		  const uint32_t *ins, size_t from, size_t to, double c0, double c1)
{
	const struct sim_ins *in = &s->ins[ins[from]];
	char name[64], loc[600], detail[1024];
	size_t dl = 0;

	snprintf(name, sizeof(name), "%.*s", (int)in->mnem_len, sim_dis(s, in));
	sim_location(s, in, loc, sizeof(loc));
	detail[0] = '\0';
	for (size_t i = from; i < to && i < from + 4 && dl < sizeof(detail); i++)
		dl += (size_t)snprintf(detail + dl, sizeof(detail) - dl, "%s%s",
				       i > from ? "; " : "", sim_dis(s, &s->ins[ins[i]]));
	ks_text_puts(t, ",\n{\"name\":");
	ks_text_json_str(t, name);
	ks_text_puts(t, ",\"ph\":\"X\",\"pid\":");
	ks_text_u64(t, tid);
	ks_text_puts(t, ",\"tid\":");
	ks_text_u64(t, in->pipe + 1u);
	ks_text_puts(t, ",\"ts\":");
	put_us(t, sim_us(s, c0));
	ks_text_puts(t, ",\"dur\":");
	put_us(t, sim_us(s, c1 - c0));
	ks_text_printf(t, ",\"args\":{\"pc_addr\":\"0x%llx\",\"code\":",
		       (unsigned long long)in->addr);
	ks_text_json_str(t, loc);
	ks_text_puts(t, ",\"function\":");
	ks_text_json_str(t, sim_fn_name(s, in->fn));
	ks_text_puts(t, ",\"detail\":");
	ks_text_json_str(t, detail);
	ks_text_puts(t, ",\"instructions\":");
	ks_text_u64(t, to - from);
	ks_text_puts(t, "}}");
}

/* ------------------------------------------------------------------ */
/* The bandwidth counters                                              */
/* ------------------------------------------------------------------ */

/* Steps of one thread's counters at most (bandwidth.svg's cap): a longer
 * run has its buckets merged, SIM_TRACE_BW_STEPS at most per path and
 * thread, so the counters add at most about 2 x 1000 x (levels + 1)
 * events per thread to the document whatever the run's length. */
#define SIM_TRACE_BW_STEPS 1000

struct bwkey {
	uint32_t tid, bi;
	uint64_t bucket;
};

static int bwkey_cmp(const void *pa, const void *pb)
{
	const struct bwkey *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->bucket != b->bucket)
		return a->bucket < b->bucket ? -1 : 1;
	return a->bi < b->bi ? -1 : a->bi > b->bi;
}

/* The first bucket of thread tid the chart shows: the one holding the
 * trace's start, main's entry, on the thread that entered main; 0 on the
 * others (a thread's clock starts when it does), with a region (the
 * clock counts only inside it), and when main was never seen (the
 * simulated threads did not run it, or it has no symbol: the bandwidth
 * is still charted, from the start). */
static uint64_t bw_first(const struct sim *s, uint32_t tid)
{
	if (strcmp(s->trace_from, "main") == 0 && tid == s->trace_tid)
		return s->trace_clock / s->interval;
	return 0;
}

/* One counter event: the GB/s of one path from time us on. */
static void bw_event(struct ks_text *t, const char *path, uint32_t tid, double us,
		     double rd, double wr)
{
	ks_text_puts(t, ",\n{\"name\":");
	ks_text_json_str(t, path);
	ks_text_puts(t, ",\"cat\":\"bandwidth\",\"ph\":\"C\",\"pid\":");
	ks_text_u64(t, tid);
	ks_text_puts(t, ",\"ts\":");
	put_us(t, us);
	ks_text_printf(t, ",\"args\":{\"Read GB/s\":%.10g,\"Write GB/s\":%.10g}}", rd, wr);
}

/*
 * The transfer bandwidth chart: per thread (on its process) a counter per
 * path, named as in bandwidth.csv, with its read and write GB/s as two
 * series.  A step of the chart is a bucket of the tool's interval (or
 * merged buckets, their bytes over their span): an event at its start,
 * a zero where a path stops moving bytes, and a zero at the end of the
 * thread's last bucket, so that a step chart integrates to the bytes of
 * bandwidth.csv.  Steps in which a path moves nothing after a zero are
 * left out: the zero before them holds.
 */
static void bw_counters(struct ks_text *t, const struct sim *s)
{
	unsigned np = s->levels + 1;
	char names[KS_SIM_MAX_LEVELS + 1][64];
	bool on[KS_SIM_MAX_LEVELS + 1];
	struct bwkey *k;
	uint64_t *sum;

	if (!s->nbw || !s->interval || !(s->clock_hz > 0) || t->error)
		return;
	k = malloc(s->nbw * sizeof(*k));
	sum = malloc(BW(s) * sizeof(*sum));
	if (!k || !sum) {
		free(k);
		free(sum);
		t->error = -ENOMEM;
		return;
	}
	for (unsigned p = 0; p < np; p++)
		sim_path_name(s, p, names[p], sizeof(names[p]));
	for (size_t i = 0; i < s->nbw; i++) {
		k[i].tid = s->threads[s->bw[i].th].tid;
		k[i].bucket = s->bw[i].bucket;
		k[i].bi = (uint32_t)i;
	}
	qsort(k, s->nbw, sizeof(*k), bwkey_cmp);
	for (size_t i = 0, e; i < s->nbw; i = e) {
		uint32_t tid = k[i].tid;
		uint64_t b0 = bw_first(s, tid), b1, g;
		size_t j = i;

		for (e = i; e < s->nbw && k[e].tid == tid; e++)
			;
		while (j < e && k[j].bucket < b0)
			j++;
		if (j == e)
			continue;
		b0 = k[j].bucket;
		b1 = k[e - 1].bucket;
		g = (b1 - b0) / SIM_TRACE_BW_STEPS + 1;
		memset(on, 0, sizeof(on));
		for (uint64_t st = b0; st <= b1; st += g) {
			uint64_t se = b1 - st < g ? b1 + 1 : st + g;
			double secs = (double)(se - st) * (double)s->interval / s->clock_hz;

			memset(sum, 0, BW(s) * sizeof(*sum));
			for (; j < e && k[j].bucket < se; j++)
				for (size_t f = 0; f < BW(s); f++)
					sum[f] += sim_bwv(s, k[j].bi)[f];
			for (unsigned p = 0; p < np; p++) {
				bool nz = sum[2 * p] || sum[2 * p + 1];
				double us = sim_us(s, (double)st * (double)s->interval);

				if (nz || on[p])
					bw_event(t, names[p], tid, us, (double)sum[2 * p] / secs / 1e9,
						 (double)sum[2 * p + 1] / secs / 1e9);
				on[p] = nz;
			}
			if (b1 - st < g)
				break;
		}
		for (unsigned p = 0; p < np; p++)
			if (on[p])
				bw_event(t, names[p], tid, sim_us(s, ((double)b1 + 1) *
					 (double)s->interval), 0, 0);
	}
	free(k);
	free(sum);
}

void sim_trace_doc(const struct sim *s, struct ks_text *t, uint64_t *slices)
{
	uint32_t *order = malloc((s->nthreads ? s->nthreads : 1) * sizeof(*order));
	bool first = true;

	*slices = 0;
	ks_text_puts(t, "{\"displayTimeUnit\":\"ns\",\"profilingType\":\"op\",\"schemaVersion\":1,"
		     "\"otherData\":{\"kscope\":\"op --simulate\",\"clock_hz\":");
	ks_text_json_num(t, s->clock_hz, 0);
	ks_text_puts(t, ",\"trace_dropped\":");
	ks_text_u64(t, s->dropped);
	ks_text_printf(t, ",\"truncated\":%s},\"traceEvents\":[", s->have_end ? "false" : "true");
	if (!order) {
		if (!t->error)
			t->error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < s->nthreads; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, s->nthreads, sizeof(*order), tid_cmp, (void *)(uintptr_t)s);
	for (size_t i = 0; i < s->nthreads; i++) {
		uint32_t tid = s->threads[order[i]].tid;
		char name[32];

		snprintf(name, sizeof(name), "thread%u", tid);
		meta(t, &first, "process_name", tid, 0, "name", name, 0);
		meta(t, &first, "process_sort_index", tid, 0, "sort_index", NULL, (long)i);
		for (int p = 0; p < KS_SIM_PIPE_COUNT; p++) {
			meta(t, &first, "thread_name", tid, p + 1, "name", pipe_names[p], 0);
			meta(t, &first, "thread_sort_index", tid, p + 1, "sort_index", NULL, p);
		}
	}
	free(order);
	for (size_t r = 0; r < s->ntr && !t->error; r++) {
		const struct sim_tr *tr = &s->tr[r];
		const uint32_t *ins = s->sb_ins + s->sbs[tr->sb].first;
		uint32_t tid = s->threads[tr->th].tid;
		double total = 0, span = (double)(tr->end - tr->start), cum = 0, c0;
		bool equal;
		size_t from = 0;

		for (size_t i = 0; i < tr->executed; i++)
			total += s->ins[ins[i]].base;
		/* Without base cycles, the instructions share it equally. */
		equal = total == 0;
		if (equal)
			total = tr->executed;
		c0 = (double)tr->start;
		for (size_t i = 0; i < tr->executed; i++) {
			cum += equal ? 1 : s->ins[ins[i]].base;
			if (i + 1 < tr->executed && s->ins[ins[i + 1]].pipe == s->ins[ins[from]].pipe)
				continue;
			{
				double c1 = i + 1 == tr->executed ? (double)tr->end
					    : (double)tr->start + span * cum / total;

				slice(t, s, tid, ins, from, i + 1, c0, c1);
				(*slices)++;
				c0 = c1;
				from = i + 1;
			}
		}
	}
	if (s->metrics & KS_SIM_METRIC_BANDWIDTH)
		bw_counters(t, s);
	ks_text_puts(t, "\n]}\n");
}

int sim_write_trace(struct ks_rundir *run, const struct sim *s, uint64_t *slices,
		    struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc = sim_open(run, "trace.json", &of, &t, err);

	if (rc)
		return rc;
	sim_trace_doc(s, &t, slices);
	return sim_commit(&of, &t, err);
}

/* ------------------------------------------------------------------ */
/* The hot-spot map                                                    */
/* ------------------------------------------------------------------ */

static void cores(struct ks_text *t, const struct sim *s)
{
	ks_text_puts(t, "\"Cores\":[");
	for (size_t c = 0; c < s->ncores; c++)
		ks_text_printf(t, "%s\"thread%u\"", c ? "," : "", s->threads[s->cores[c]].tid);
	ks_text_puts(t, "]");
}

/* The per-core arrays of one line or instruction. */
enum col { C_CYCLES, C_EXECS, C_HIT, C_BYTES, C_FLOPS, C_STALL, C_GPR, C_VEC };

static void per_core(struct ks_text *t, const struct sim *s, const char *key,
		     const struct sim_acc *a, enum col col)
{
	int l2 = sim_l2_level(s);

	ks_text_puts(t, ",");
	ks_text_json_str(t, key);
	ks_text_puts(t, ":[");
	for (size_t c = 0; c < s->ncores; c++) {
		if (c)
			ks_text_puts(t, ",");
		switch (col) {
		case C_CYCLES: ks_text_u64(t, a[c].cycles); break;
		case C_EXECS: ks_text_u64(t, a[c].execs); break;
		case C_BYTES: ks_text_u64(t, a[c].loadb + a[c].storeb); break;
		case C_FLOPS: ks_text_u64(t, a[c].flops); break;
		case C_STALL: ks_text_u64(t, sim_stall(&a[c])); break;
		case C_GPR: ks_text_u64(t, (uint64_t)__builtin_popcount(a[c].gprs)); break;
		case C_VEC: ks_text_json_num(t, sim_vector_util(&a[c]), 2); break;
		case C_HIT:
			ks_text_json_num(t, l2 < 0 ? NAN : sim_hit_rate(&a[c], (unsigned)l2), 4);
			break;
		}
	}
	ks_text_puts(t, "]");
}

/* ------------------------------------------------------------------ */
/* 0x01 source files                                                   */
/* ------------------------------------------------------------------ */

/* What a 0x01 block's path area takes: under 4096 bytes, no control
 * byte. */
static bool path_storable(const char *path)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++, n++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return n < KS_VB_PATH_SIZE;
}

/* Files that cannot go in the container (the C library's, whose sources
 * are seldom installed, say) are named in one warning, up to this many,
 * then counted. */
#define SIM_SOURCE_WARNINGS 3

struct skipped {
	unsigned n;
	char names[SIM_SOURCE_WARNINGS * 160];
};

static void source_skip(struct skipped *sk, const char *path, const char *why)
{
	size_t len = strlen(sk->names);

	if (sk->n++ < SIM_SOURCE_WARNINGS)
		snprintf(sk->names + len, sizeof(sk->names) - len, "%s'%.100s' (%.40s)",
			 len ? ", " : "", path, why);
}

static int write_sources(struct sim_vb *v, const struct sim *s,
			 struct ks_simpost_summary *sum, struct ks_err *err)
{
	const char *prev = NULL;
	struct skipped sk = { 0 };

	for (size_t l = 0; l < s->nlines; l++) {
		const char *path;
		struct ks_err e;
		char *data = NULL;
		size_t size = 0;
		int rc;

		if (s->lines[l].file < 0)
			continue;
		path = s->files[s->lines[l].file];
		if (prev && strcmp(prev, path) == 0)
			continue;
		prev = path;
		if (path[0] != '/') {
			source_skip(&sk, path, "not an absolute path");
			continue;
		}
		if (!path_storable(path)) {
			source_skip(&sk, path, "its path is too long or has a control "
				    "character");
			continue;
		}
		rc = ks_read_file_at(AT_FDCWD, path, 0, SIM_SOURCE_MAX, &data, &size, &e);
		if (rc == -ENOMEM) {
			free(data);
			return ks_err_set(err, rc, "out of memory");
		}
		if (rc) {
			source_skip(&sk, path, rc == -EFBIG ? "larger than 64 MiB"
				    : rc == -EINVAL ? "not a regular file" : strerror(-rc));
			continue;
		}
		if (memchr(data, '\0', size)) {
			source_skip(&sk, path, "it has a NUL byte (not text)");
			free(data);
			continue;
		}
		rc = ks_vb_write(v->w, KS_VB_SOURCE, KS_VB_VERSION, path, data, size, &v->verr);
		free(data);
		if (rc)
			return ks_err_set(err, rc, "visualize_data.bin: %s", v->verr.msg);
		sum->sources++;
	}
	if (sk.n)
		sim_warnf(s, "%u source file%s not in visualize_data.bin, their text "
			  "cannot be read: %s%s", sk.n, sk.n == 1 ? " is" : "s are", sk.names,
			  sk.n > SIM_SOURCE_WARNINGS ? ", ..." : "");
	return 0;
}

/* ------------------------------------------------------------------ */
/* 0x03 files and lines                                                */
/* ------------------------------------------------------------------ */

struct ikey {
	uint32_t lineid;
	uint32_t ins;
	uint64_t addr;
};

static int ikey_cmp(const void *pa, const void *pb)
{
	const struct ikey *a = pa, *b = pb;

	if (a->lineid != b->lineid)
		return a->lineid < b->lineid ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return a->ins < b->ins ? -1 : a->ins > b->ins;
}

/* The line's merged address ranges [start, end), from its instructions
 * in address order (k[*pi..]). */
static void line_ranges(struct ks_text *t, const struct sim *s, const struct ikey *k,
			size_t nk, size_t *pi, uint32_t l)
{
	uint64_t start = 0, end = 0;
	bool open = false, any = false;

	ks_text_puts(t, ",\"Address Range\":[");
	for (; *pi < nk && k[*pi].lineid == l; (*pi)++) {
		const struct sim_ins *in = &s->ins[k[*pi].ins];

		if (open && in->addr <= end) {
			if (in->addr + in->len > end)
				end = in->addr + in->len;
			continue;
		}
		if (open) {
			ks_text_printf(t, "%s[\"0x%llx\",\"0x%llx\"]", any ? "," : "",
				       (unsigned long long)start, (unsigned long long)end);
			any = true;
		}
		open = true;
		start = in->addr;
		end = in->addr + in->len;
	}
	if (open)
		ks_text_printf(t, "%s[\"0x%llx\",\"0x%llx\"]", any ? "," : "",
			       (unsigned long long)start, (unsigned long long)end);
	ks_text_puts(t, "]");
}

static int write_files(struct sim_vb *v, const struct sim *s, struct ks_err *err)
{
	struct sim_acc *acc = calloc(s->ncores ? s->ncores : 1, sizeof(*acc));
	struct ikey *k = malloc((s->nins ? s->nins : 1) * sizeof(*k));
	uint32_t *idx = NULL;
	struct ks_text t;
	const char *prev = NULL;
	size_t nk = 0, pi = 0, px = 0;
	int rc = !acc || !k ? ks_err_set(err, -ENOMEM, "out of memory")
		 : sim_sort_x(s, SIM_BY_LINE_CORE, &idx, err);

	if (!rc)
		rc = sim_vb_begin(v, &t, KS_VB_API_FILES, KS_VB_VERSION, err);
	if (rc) {
		free(acc);
		free(k);
		free(idx);
		return rc;
	}
	for (size_t i = 0; i < s->nins; i++)
		if (s->ins[i].executed) {
			k[nk].lineid = s->ins[i].lineid;
			k[nk].ins = (uint32_t)i;
			k[nk].addr = s->ins[i].addr;
			nk++;
		}
	qsort(k, nk, sizeof(*k), ikey_cmp);

	ks_text_puts(&t, "{");
	cores(&t, s);
	ks_text_puts(&t, ",\"Files Dtype\":{\"Lines\":{\"Address Range\":0,\"Cycles\":1,"
		     "\"Instructions Executed\":1,\"Line\":1,\"L2Cache Hit Rate\":2,"
		     "\"Process Bytes\":1,\"Stall Cycles\":1,\"GPR Count\":1,"
		     "\"Vector Utilization (%)\":2}},\"Files\":[");
	for (uint32_t l = 0; l < s->nlines; l++) {
		const struct sim_line *ln = &s->lines[l];

		memset(acc, 0, (s->ncores ? s->ncores : 1) * sizeof(*acc));
		for (; px < s->nx && s->ins[s->x[idx[px]].ins].lineid == l; px++)
			sim_acc_add(s, &acc[s->threads[s->x[idx[px]].th].core], idx[px]);
		if (ln->file < 0) {
			/* No source to show them against: 0x04 has them. */
			for (; pi < nk && k[pi].lineid == l; pi++)
				;
			continue;
		}
		if (!prev || strcmp(prev, s->files[ln->file]) != 0) {
			ks_text_puts(&t, prev ? "]},\n{\"Source\":" : "\n{\"Source\":");
			ks_text_json_str(&t, s->files[ln->file]);
			ks_text_puts(&t, ",\"Lines\":[");
			prev = s->files[ln->file];
		} else {
			ks_text_puts(&t, ",");
		}
		ks_text_puts(&t, "\n{\"Line\":");
		ks_text_u64(&t, ln->line);
		line_ranges(&t, s, k, nk, &pi, l);
		per_core(&t, s, "Cycles", acc, C_CYCLES);
		per_core(&t, s, "Instructions Executed", acc, C_EXECS);
		per_core(&t, s, "L2Cache Hit Rate", acc, C_HIT);
		per_core(&t, s, "Process Bytes", acc, C_BYTES);
		per_core(&t, s, "Stall Cycles", acc, C_STALL);
		per_core(&t, s, "GPR Count", acc, C_GPR);
		per_core(&t, s, "Vector Utilization (%)", acc, C_VEC);
		ks_text_puts(&t, "}");
	}
	ks_text_puts(&t, prev ? "]}\n]}\n" : "]}\n");
	free(acc);
	free(k);
	free(idx);
	return sim_vb_end(v, &t, err);
}

/* ------------------------------------------------------------------ */
/* 0x04 instructions                                                   */
/* ------------------------------------------------------------------ */

static int write_instructions(struct sim_vb *v, const struct sim *s, struct ks_err *err)
{
	struct sim_acc *acc = calloc(s->ncores ? s->ncores : 1, sizeof(*acc));
	uint32_t *idx = NULL;
	struct ks_text t;
	int rc = !acc ? ks_err_set(err, -ENOMEM, "out of memory")
		 : sim_sort_x(s, SIM_BY_ADDR_CORE, &idx, err);

	if (!rc)
		rc = sim_vb_begin(v, &t, KS_VB_API_INSTR, KS_VB_VERSION, err);
	if (rc) {
		free(acc);
		free(idx);
		return rc;
	}
	ks_text_puts(&t, "{");
	cores(&t, s);
	ks_text_puts(&t, ",\"Instructions Dtype\":{\"Instructions\":{\"Address\":3,"
		     "\"Source\":3,\"Pipe\":3,\"Source Location\":3,\"Cycles\":1,"
		     "\"Instructions Executed\":1,\"L2Cache Hit Rate\":2,"
		     "\"Process Bytes\":1,\"Flops\":1,\"Stall Cycles\":1,\"GPR Count\":1,"
		     "\"Vector Utilization (%)\":2}},\"Instructions\":[");
	for (size_t i = 0; i < s->nx;) {
		uint32_t ins = s->x[idx[i]].ins;
		const struct sim_ins *in = &s->ins[ins];
		char loc[600];

		memset(acc, 0, (s->ncores ? s->ncores : 1) * sizeof(*acc));
		for (; i < s->nx && s->x[idx[i]].ins == ins; i++)
			sim_acc_add(s, &acc[s->threads[s->x[idx[i]].th].core], idx[i]);
		sim_location(s, in, loc, sizeof(loc));
		ks_text_printf(&t, "\n{\"Address\":\"0x%llx\",\"Source\":",
			       (unsigned long long)in->addr);
		ks_text_json_str(&t, sim_dis(s, in));
		ks_text_puts(&t, ",\"Pipe\":");
		ks_text_json_str(&t, pipe_names[in->pipe]);
		ks_text_puts(&t, ",\"Source Location\":");
		ks_text_json_str(&t, loc);
		per_core(&t, s, "Cycles", acc, C_CYCLES);
		per_core(&t, s, "Instructions Executed", acc, C_EXECS);
		per_core(&t, s, "L2Cache Hit Rate", acc, C_HIT);
		per_core(&t, s, "Process Bytes", acc, C_BYTES);
		per_core(&t, s, "Flops", acc, C_FLOPS);
		per_core(&t, s, "Stall Cycles", acc, C_STALL);
		per_core(&t, s, "GPR Count", acc, C_GPR);
		per_core(&t, s, "Vector Utilization (%)", acc, C_VEC);
		ks_text_puts(&t, i < s->nx ? "}," : "}");
	}
	ks_text_puts(&t, "\n]}\n");
	free(acc);
	free(idx);
	return sim_vb_end(v, &t, err);
}

/* ------------------------------------------------------------------ */
/* 0x0D roofline                                                       */
/* ------------------------------------------------------------------ */

/* A ceiling or a point: nine significant digits, as intensities and rates
 * span many decades. */
static void num_g(struct ks_text *t, double v)
{
	if (isfinite(v))
		ks_text_printf(t, "%.9g", v);
	else
		ks_text_puts(t, "null");
}

static const struct ks_calib_ceiling *calib_find(const struct ks_calib *c, bool compute,
						 const char *prefix)
{
	size_t n = compute ? c->ncompute : c->nmem;

	for (size_t i = 0; i < n && i < KS_CALIB_MAX; i++) {
		const struct ks_calib_ceiling *e = compute ? &c->compute[i] : &c->mem[i];

		if (e->per_s > 0 && strncmp(e->name, prefix, strlen(prefix)) == 0 &&
		    (compute || e->name[strlen(prefix)] == '\0'))
			return e;
	}
	return NULL;
}

/* The roofline chart: one roofline per boundary that moved bytes.  Ceilings
 * come from the calibration when it has them (the compute ceiling: CPU
 * FP32; a boundary above level k: the calibrated "L<k+1>"; memory: "DRAM"),
 * otherwise from the cost model of the simulation: the most FLOPs an
 * executed instruction does, once per cycle; a line per access latency. */
static int write_roofline(struct sim_vb *v, const struct sim *s,
			  const struct ks_simpost_opts *o, struct ks_simpost_summary *sum,
			  struct ks_err *err)
{
	const struct ks_calib *c = o->calib;
	const struct ks_calib_ceiling *ce = NULL;
	uint64_t bytes[KS_SIM_MAX_LEVELS + 1] = { 0 };
	double comp, perf;
	char comp_name[128], title[64];
	bool from_calib = false, from_model = false;
	unsigned npoints = 0;
	struct ks_text t;
	int rc;

	for (size_t i = 0; i < s->nbw; i++)
		for (unsigned k = 0; k <= s->levels; k++)
			bytes[k] += sim_bwv(s, i)[2 * k] + sim_bwv(s, i)[2 * k + 1];
	if (!bytes[0])
		bytes[0] = sum->load_bytes + sum->store_bytes;
	for (unsigned k = 0; k <= s->levels; k++)
		npoints += bytes[k] > 0;
	if (!sum->flops) {
		sim_warnf(s, "no roofline: no floating-point operation was executed");
		return 0;
	}
	if (!(sum->sim_seconds > 0) || !npoints) {
		sim_warnf(s, "no roofline: no %s was simulated",
			  npoints ? "cycle" : "memory traffic");
		return 0;
	}
	perf = (double)sum->flops / sum->sim_seconds / 1e9;
	if (c)
		ce = calib_find(c, true, "CPU FP32");
	if (c && !ce)
		ce = calib_find(c, true, "CPU");
	if (ce) {
		comp = ce->per_s / 1e9;
		snprintf(comp_name, sizeof(comp_name), "%s", ce->name);
		from_calib = true;
	} else {
		comp = (double)s->max_flops * s->clock_hz / 1e9;
		snprintf(comp_name, sizeof(comp_name), "cost model: %llu FLOPs per cycle",
			 (unsigned long long)s->max_flops);
		from_model = true;
	}
	rc = sim_vb_begin(v, &t, KS_VB_ROOFLINE, KS_VB_VERSION, err);
	if (rc)
		return rc;
	ks_text_puts(&t, "{\"multiple_rooflines\":[{\"rooflines\":[");
	npoints = 0;
	for (unsigned k = 0; k <= s->levels; k++) {
		const struct ks_calib_ceiling *m = NULL;
		char path[64], want[16];
		double bw;

		if (!bytes[k])
			continue;
		sim_path_name(s, k, path, sizeof(path));
		if (k < s->levels)
			snprintf(want, sizeof(want), "L%u", k + 1);
		else
			snprintf(want, sizeof(want), "DRAM");
		if (c)
			m = calib_find(c, false, want);
		if (m) {
			bw = m->per_s / 1e9;
			from_calib = true;
		} else {
			uint64_t line = s->levels ? s->cache[k < s->levels ? k : s->levels - 1].line
					: 64;
			uint64_t lat = k < s->levels ? s->cache[k].latency : s->mem_latency;

			bw = (double)line / (double)(lat ? lat : 1) * s->clock_hz / 1e9;
			from_model = true;
		}
		ks_text_puts(&t, npoints++ ? ",\n{\"bw\":" : "\n{\"bw\":");
		num_g(&t, bw);
		ks_text_puts(&t, ",\"bw_name\":");
		ks_text_json_str(&t, path);
		ks_text_puts(&t, ",\"bw_source\":");
		ks_text_json_str(&t, m ? m->name : "cost model");
		ks_text_puts(&t, ",\"computility\":");
		num_g(&t, comp);
		ks_text_puts(&t, ",\"computility_name\":");
		ks_text_json_str(&t, comp_name);
		ks_text_puts(&t, ",\"bytes\":");
		ks_text_u64(&t, bytes[k]);
		ks_text_puts(&t, ",\"point\":[");
		num_g(&t, (double)sum->flops / (double)bytes[k]);
		ks_text_puts(&t, ",");
		num_g(&t, perf);
		ks_text_puts(&t, "]}");
	}
	snprintf(sum->roofline_source, sizeof(sum->roofline_source), "%s",
		 from_calib && from_model ? "mixed" : from_calib ? "calibration" : "cost model");
	snprintf(title, sizeof(title), "Simulated (%s)",
		 from_calib && from_model ? "calibration, else cost model" :
		 from_calib ? "calibration" : "cost model");
	ks_text_puts(&t, "\n],\"title\":");
	ks_text_json_str(&t, title);
	ks_text_puts(&t, ",\"flops\":");
	ks_text_u64(&t, sum->flops);
	ks_text_puts(&t, ",\"seconds\":");
	num_g(&t, sum->sim_seconds);
	ks_text_puts(&t, "}]}\n");
	rc = sim_vb_end(v, &t, err);
	if (!rc)
		sum->roofline = true;
	return rc;
}

/* ------------------------------------------------------------------ */
/* visualize_data.bin                                                  */
/* ------------------------------------------------------------------ */

int sim_write_viz(struct ks_rundir *run, const struct sim *s,
		  const struct ks_simpost_opts *o, struct ks_simpost_summary *sum,
		  bool *trace_done, struct ks_err *err)
{
	struct sim_vb v = { 0 };
	struct ks_outfile of, tof;
	struct ks_text t;
	uint64_t slices;
	int rc = ks_outfile_open(run, "visualize_data.bin", &of, err);

	if (rc)
		return rc;
	rc = ks_vb_writer_open(of.fd, &v.w, &v.verr);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "visualize_data.bin: %s", v.verr.msg);
	}
	/* Each block when its metric set was asked for (--aic-metrics); the
	 * roofline and the basic info always. */
	if (s->metrics & (KS_SIM_METRIC_PIPE | KS_SIM_METRIC_BANDWIDTH)) {
		/* trace.json is the 0x02 block's document: made once, written
		 * to both. */
		rc = ks_outfile_open(run, "trace.json", &tof, err);
		if (!rc) {
			v.tee = &tof;
			rc = sim_vb_begin(&v, &t, KS_VB_TRACE, KS_VB_VERSION, err);
			if (!rc) {
				sim_trace_doc(s, &t, &slices);
				rc = sim_vb_end(&v, &t, err);
			}
			v.tee = NULL;
			if (rc) {
				ks_outfile_abort(&tof);
			} else {
				rc = ks_outfile_commit(&tof, KS_DELIVERABLE_MODE, err);
				sum->trace_slices = slices;
				*trace_done = rc == 0;
			}
		}
	}
	if (!rc && (s->metrics & KS_SIM_METRIC_SOURCE)) {
		rc = write_sources(&v, s, sum, err);
		if (!rc)
			rc = write_files(&v, s, err);
		if (!rc)
			rc = write_instructions(&v, s, err);
	}
	if (!rc)
		rc = write_roofline(&v, s, o, sum, err);
	if (!rc)
		rc = sim_write_base_info(v.w, s, o, sum, err);
	if (!rc && (s->metrics & KS_SIM_METRIC_PIPE)) {
		rc = sim_write_compute_graph(v.w, s, err);
		if (!rc)
			rc = sim_write_compute_table(v.w, s, err);
		if (!rc)
			rc = sim_write_core_load(v.w, s, o, err);
	}
	if (!rc && (s->metrics & KS_SIM_METRIC_MEMORY)) {
		rc = sim_write_memory_graph(v.w, s, o, err);
		if (!rc)
			rc = sim_write_memory_table(v.w, s, err);
		if (!rc)
			rc = sim_write_cache_sets(run, v.w, s, err);
		if (!rc)
			rc = sim_write_cache_lines(run, v.w, s, err);
	}
	sum->blocks = rc ? 0 : ks_vb_writer_blocks(v.w);
	ks_vb_writer_free(v.w);
	if (rc) {
		sum->sources = 0;
		sum->roofline = false;
		ks_outfile_abort(&of);
		return rc;
	}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}
