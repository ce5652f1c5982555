/*
 * rawcheck: reads one raw sample file (src/sample/raw.h) through the reader
 * API (raw_read.h), prints what is in it, and checks expectations given on
 * the command line.  The runtime tests (test_rt.sh) use it to look inside
 * the files libkscope.so writes.
 *
 *   usage: rawcheck [-w LO-HI,...] FILE [KEY=VALUE | KEY>=VALUE | KEY<=VALUE]...
 *
 * It prints the header, the number of records of each type, the threads
 * seen and their samples, and summaries of regions, ranges, MPI calls and
 * the END record.  Each expectation compares one of the numbers below with
 * VALUE; `end` takes exit, exec, signal or none.  Exit status: 0 if every
 * expectation holds, 1 if one fails (each failure is printed), 2 if the
 * file cannot be read or the command line is wrong.
 *
 * Keys: samples cpu_samples real_samples threads thread_begins thread_ends
 * threads_with_samples workers_with_samples regions_ok region_pushes
 * region_pops marks range_starts range_ends ranges_matched pauses resumes
 * mpi mpi_bytes mpi_peers rank pid forked frame_pointers chunks modules
 * exe_module bad end
 * end_status end_last rate (CPU-time samples per CPU second)
 * periods (the timer periods all samples stand for, each 1 + its overrun)
 * cpu_periods (the same for the CPU-time samples) period_rate
 * (cpu_periods per CPU second)
 * ts_min ts_max signal_cpu signal_real dropped
 * counters counter_info counter_mask max_frames seq_ok cmdline_argc
 * chunks_bad max_name outside_windows (samples whose time, in seconds
 * since the process started, lies outside every -w window)
 * real_coverage (the real-time periods all samples stand for, over what
 * the threads' lives, begin to end, call for at the file's realtime_freq)
 * real_rate (real-time samples per second between the first and the
 * last sample) slowed (samples of a slowed real-time timer)
 * records_outside_windows (the same for region pushes, marks, range
 * starts, MPI calls and process counters: the records that begin
 * something; a region's pop or a range's end belongs with its beginning)
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw_read.h"

#define MAX_THREADS 100000
#define MAX_WINDOWS 16

struct thread {
	int32_t tid;
	unsigned begins, ends;
	uint64_t samples;
	int depth;           /* open regions */
	bool depth_bad;      /* a pop without a push */
	int64_t last_seq;    /* -1 before the first chunk */
	bool seq_bad;
	uint64_t cpu_ns;     /* from THREAD_END */
	uint64_t begin_ts, end_ts; /* CLOCK_MONOTONIC ns, 0 if not seen */
	char name[16];
};

struct stats {
	uint64_t types[32];
	size_t bad, chunks_bad;
	struct thread *threads;
	size_t nthreads;
	uint64_t samples, cpu_samples, real_samples, periods, cpu_periods;
	uint64_t real_periods, slowed;
	double ts_min, ts_max;
	unsigned max_frames;
	uint64_t *range_ids, *end_ids;
	size_t nranges, nends;
	uint64_t ranges_matched;
	uint32_t end_reason;
	int32_t end_status;
	bool end_last;
	uint64_t dropped;
	uint64_t mpi, mpi_bytes, mpi_peers;
	uint32_t counter_info, counter_mask;
	uint32_t cmdline_argc;
	bool exe_module;
	size_t max_name;     /* longest region/mark/range name */
	uint64_t outside;    /* samples outside every -w window */
	uint64_t rec_outside; /* other records outside every -w window */
	double win_lo[MAX_WINDOWS], win_hi[MAX_WINDOWS]; /* -w, seconds since start */
	int nwin;
	char *exe;           /* realpath of argv[0], malloc'd */
};

/* Whether ts (CLOCK_MONOTONIC ns) lies outside every -w window. */
static bool outside(const struct stats *s, const struct ks_raw_file *f, uint64_t ts)
{
	double rel = ((double)ts - (double)f->hdr->start_mono_ns) / 1e9;

	for (int i = 0; i < s->nwin; i++)
		if (rel >= s->win_lo[i] && rel <= s->win_hi[i])
			return false;
	return s->nwin > 0;
}

static struct thread *thread_get(struct stats *s, int32_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	if (s->nthreads == MAX_THREADS)
		return NULL;
	if (s->nthreads % 64 == 0) {
		struct thread *n = realloc(s->threads, (s->nthreads + 64) * sizeof(*n));

		if (!n)
			return NULL;
		s->threads = n;
	}
	memset(&s->threads[s->nthreads], 0, sizeof(s->threads[0]));
	s->threads[s->nthreads].tid = tid;
	s->threads[s->nthreads].last_seq = -1;
	return &s->threads[s->nthreads++];
}

static const char *type_name(unsigned t)
{
	static const char *const names[] = {
		"?", "module", "chunk", "thread_begin", "thread_end", "sample",
		"region_push", "region_pop", "mark", "range_start", "range_end",
		"pause", "resume", "mpi", "counter", "counter_info", "dropped",
		"end", "cmdline",
	};

	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

static const char *end_name(uint32_t r)
{
	switch (r) {
	case KS_RAW_END_EXIT: return "exit";
	case KS_RAW_END_EXEC: return "exec";
	case KS_RAW_END_SIGNAL: return "signal";
	default: return "none";
	}
}

static void thread_rec(struct stats *s, const struct ks_raw_file *f, struct thread *t,
		       const struct ks_raw_rec *r)
{
	double rel;

	s->types[r->type < 32 ? r->type : 0]++;
	if (r->type == KS_RAW_REGION_PUSH || r->type == KS_RAW_MARK ||
	    r->type == KS_RAW_RANGE_START) {
		const struct ks_raw_named *n = (const void *)r;
		const char *name = ks_raw_string(r, n->name);

		if (name && strlen(name) > s->max_name)
			s->max_name = strlen(name);
	}
	switch (r->type) {
	case KS_RAW_THREAD_BEGIN: {
		const struct ks_raw_thread_begin *b = (const void *)r;

		t->begins++;
		t->begin_ts = b->ts;
		if (b->tid != t->tid)
			t->seq_bad = true;
		memcpy(t->name, b->name, sizeof(t->name));
		t->name[sizeof(t->name) - 1] = '\0';
		break;
	}
	case KS_RAW_THREAD_END: {
		const struct ks_raw_thread_end *e = (const void *)r;

		t->ends++;
		t->cpu_ns = e->cpu_ns;
		t->end_ts = e->ts;
		break;
	}
	case KS_RAW_SAMPLE: {
		const struct ks_raw_sample *sm = (const void *)r;
		uint64_t periods = 1 + (uint64_t)sm->overrun;

		t->samples++;
		s->samples++;
		s->periods += periods;
		if ((r->flags & KS_RAW_CLOCK_MASK) == KS_RAW_CLOCK_REAL) {
			s->real_samples++;
			s->real_periods += periods;
			if (r->flags & KS_RAW_SAMPLE_SLOWED)
				s->slowed++;
		} else {
			s->cpu_samples++;
			s->cpu_periods += periods;
		}
		rel = ((double)sm->ts - (double)f->hdr->start_mono_ns) / 1e9;
		if (s->samples == 1 || rel < s->ts_min)
			s->ts_min = rel;
		if (s->samples == 1 || rel > s->ts_max)
			s->ts_max = rel;
		if (sm->nframes > s->max_frames)
			s->max_frames = sm->nframes;
		if (outside(s, f, sm->ts))
			s->outside++;
		break;
	}
	case KS_RAW_REGION_PUSH:
	case KS_RAW_MARK:
		if (outside(s, f, ((const struct ks_raw_named *)(const void *)r)->ts))
			s->rec_outside++;
		if (r->type == KS_RAW_REGION_PUSH)
			t->depth++;
		break;
	case KS_RAW_REGION_POP:
		if (--t->depth < 0)
			t->depth_bad = true;
		break;
	case KS_RAW_RANGE_START: {
		const struct ks_raw_named *n = (const void *)r;
		uint64_t *ids = realloc(s->range_ids, (s->nranges + 1) * sizeof(*ids));

		if (outside(s, f, n->ts))
			s->rec_outside++;
		if (ids) {
			s->range_ids = ids;
			ids[s->nranges++] = n->id;
		}
		break;
	}
	case KS_RAW_RANGE_END: {
		/* Matched at the end: a range may end on a thread whose
		 * chunk comes first in the file. */
		const struct ks_raw_named *n = (const void *)r;
		uint64_t *ids = realloc(s->end_ids, (s->nends + 1) * sizeof(*ids));

		if (ids) {
			s->end_ids = ids;
			ids[s->nends++] = n->id;
		}
		break;
	}
	case KS_RAW_MPI: {
		const struct ks_raw_mpi *m = (const void *)r;

		s->mpi++;
		s->mpi_bytes += m->bytes;
		if (outside(s, f, m->ts_begin) && outside(s, f, m->ts_end))
			s->rec_outside++;
		if (m->peer >= 0)
			s->mpi_peers++;
		break;
	}
	default:
		break;
	}
}

static int scan(const struct ks_raw_file *f, struct stats *s)
{
	struct ks_raw_iter it;
	const struct ks_raw_rec *r;
	size_t bad;

	ks_raw_iter_file(f, &it);
	while ((r = ks_raw_next(&it, &bad))) {
		s->end_last = false;
		if (r->type != KS_RAW_CHUNK)
			s->types[r->type < 32 ? r->type : 0]++;
		switch (r->type) {
		case KS_RAW_CHUNK: {
			const struct ks_raw_chunk *c = (const void *)r;
			struct thread *t = thread_get(s, c->tid);
			struct ks_raw_iter ci;
			const struct ks_raw_rec *cr;
			size_t cbad;

			s->types[KS_RAW_CHUNK]++;
			if (!t)
				return -1;
			if ((int64_t)c->seq != t->last_seq + 1)
				t->seq_bad = true;
			t->last_seq = c->seq;
			ks_raw_iter_chunk(c, &ci);
			while ((cr = ks_raw_next(&ci, &cbad))) {
				t = thread_get(s, c->tid); /* may move */
				thread_rec(s, f, t, cr);
			}
			if (cbad)
				s->chunks_bad += cbad;
			break;
		}
		case KS_RAW_MODULE: {
			const struct ks_raw_module *m = (const void *)r;
			const char *p = ks_raw_string(r, m->path);

			if (p && s->exe && strcmp(p, s->exe) == 0)
				s->exe_module = true;
			break;
		}
		case KS_RAW_END: {
			const struct ks_raw_end *e = (const void *)r;

			s->end_reason = e->reason;
			s->end_status = e->status;
			s->end_last = true;
			break;
		}
		case KS_RAW_COUNTER:
			if (outside(s, f, ((const struct ks_raw_counter *)(const void *)r)->ts))
				s->rec_outside++;
			break;
		case KS_RAW_DROPPED:
			s->dropped += ((const struct ks_raw_dropped *)(const void *)r)->samples;
			break;
		case KS_RAW_COUNTER_INFO: {
			const struct ks_raw_counter_info *ci = (const void *)r;

			s->counter_info = ci->ncounters;
			s->counter_mask = ci->supported_mask;
			break;
		}
		case KS_RAW_CMDLINE: {
			const struct ks_raw_cmdline *c = (const void *)r;

			s->cmdline_argc = c->argc;
			if (!s->exe && c->argc > 0 && ks_raw_string(r, c->args))
				s->exe = realpath(c->args, NULL);
			break;
		}
		default:
			break;
		}
	}
	s->bad = bad;
	for (size_t e = 0; e < s->nends; e++)
		for (size_t i = 0; i < s->nranges; i++)
			if (s->range_ids[i] == s->end_ids[e] && s->end_ids[e] != 0) {
				s->ranges_matched++;
				s->range_ids[i] = 0;
				break;
			}
	return 0;
}

/* The value of key, or NAN-like failure (returns false). */
static bool value_of(const struct ks_raw_file *f, const struct stats *s, const char *key,
		     double *v)
{
	unsigned with_samples = 0, workers = 0, begins = 0, ends = 0, threads = 0;
	bool regions_ok = true, seq_ok = true;
	double cpu = 0, life = 0;

	for (size_t i = 0; i < s->nthreads; i++) {
		const struct thread *t = &s->threads[i];

		if (t->begin_ts && t->end_ts > t->begin_ts)
			life += (double)(t->end_ts - t->begin_ts) / 1e9;
		if (t->begins)
			threads++;
		begins += t->begins;
		ends += t->ends;
		if (t->samples) {
			with_samples++;
			if (t->tid != f->hdr->pid)
				workers++;
		}
		if (t->depth != 0 || t->depth_bad)
			regions_ok = false;
		if (t->seq_bad)
			seq_ok = false;
		cpu += (double)t->cpu_ns / 1e9;
	}
#define KEY(name, expr) if (strcmp(key, name) == 0) { *v = (double)(expr); return true; }
	KEY("samples", s->samples);
	KEY("cpu_samples", s->cpu_samples);
	KEY("real_samples", s->real_samples);
	KEY("threads", threads);
	KEY("thread_begins", begins);
	KEY("thread_ends", ends);
	KEY("threads_with_samples", with_samples);
	KEY("workers_with_samples", workers);
	KEY("regions_ok", regions_ok && s->types[KS_RAW_REGION_PUSH] > 0);
	KEY("region_pushes", s->types[KS_RAW_REGION_PUSH]);
	KEY("region_pops", s->types[KS_RAW_REGION_POP]);
	KEY("marks", s->types[KS_RAW_MARK]);
	KEY("range_starts", s->types[KS_RAW_RANGE_START]);
	KEY("range_ends", s->types[KS_RAW_RANGE_END]);
	KEY("ranges_matched", s->ranges_matched);
	KEY("pauses", s->types[KS_RAW_PAUSE]);
	KEY("resumes", s->types[KS_RAW_RESUME]);
	KEY("mpi", s->mpi);
	KEY("mpi_bytes", s->mpi_bytes);
	KEY("mpi_peers", s->mpi_peers);
	KEY("rank", f->hdr->rank);
	KEY("pid", f->hdr->pid);
	KEY("forked", (f->hdr->flags & KS_RAW_F_FORKED) != 0);
	KEY("frame_pointers", (f->hdr->flags & KS_RAW_F_FRAME_POINTERS) != 0);
	KEY("chunks", s->types[KS_RAW_CHUNK]);
	KEY("modules", s->types[KS_RAW_MODULE]);
	KEY("exe_module", s->exe_module);
	KEY("bad", s->bad);
	KEY("chunks_bad", s->chunks_bad);
	KEY("end_status", s->end_status);
	KEY("end_last", s->end_last);
	KEY("rate", cpu > 0 ? (double)s->cpu_samples / cpu : 0);
	KEY("periods", s->periods);
	KEY("cpu_periods", s->cpu_periods);
	KEY("period_rate", cpu > 0 ? (double)s->cpu_periods / cpu : 0);
	KEY("ts_min", s->ts_min);
	KEY("ts_max", s->ts_max);
	KEY("signal_cpu", f->hdr->signal_cpu);
	KEY("signal_real", f->hdr->signal_real);
	KEY("dropped", s->dropped);
	KEY("counters", s->types[KS_RAW_COUNTER]);
	KEY("counter_info", s->counter_info);
	KEY("counter_mask", s->counter_mask);
	KEY("max_frames", s->max_frames);
	KEY("seq_ok", seq_ok);
	KEY("cmdline_argc", s->cmdline_argc);
	KEY("max_name", s->max_name);
	KEY("outside_windows", s->outside);
	KEY("real_coverage", life > 0 && f->hdr->realtime_freq ?
			     (double)s->real_periods / (life * f->hdr->realtime_freq) : 0);
	KEY("real_rate", s->ts_max > s->ts_min ?
			 (double)s->real_samples / (s->ts_max - s->ts_min) : 0);
	KEY("slowed", s->slowed);
	KEY("records_outside_windows", s->rec_outside);
#undef KEY
	return false;
}

static void print(const struct ks_raw_file *f, const struct stats *s)
{
	const struct ks_raw_file_header *h = f->hdr;
	double v, pv;

	printf("file: %s\n", f->path);
	printf("header: pid=%d ppid=%d rank=%d flags=%#x cputime_freq=%u realtime_freq=%u "
	       "signal_cpu=%u signal_real=%u host=%.64s\n",
	       h->pid, h->ppid, h->rank, h->flags, h->cputime_freq, h->realtime_freq,
	       h->signal_cpu, h->signal_real, h->hostname);
	printf("records:");
	for (unsigned t = 1; t < 32; t++)
		if (s->types[t])
			printf(" %s=%" PRIu64, type_name(t), s->types[t]);
	printf(" bad_bytes=%zu\n", s->bad + s->chunks_bad);
	value_of(f, s, "threads", &v);
	printf("threads: %.0f", v);
	value_of(f, s, "threads_with_samples", &v);
	printf(" with_samples=%.0f\n", v);
	for (size_t i = 0; i < s->nthreads && i < 20; i++) {
		const struct thread *t = &s->threads[i];

		printf("  thread %d: name=%s begin=%u end=%u samples=%" PRIu64 " cpu=%.3fs\n",
		       t->tid, t->name, t->begins, t->ends, t->samples, (double)t->cpu_ns / 1e9);
	}
	if (s->nthreads > 20)
		printf("  ... %zu more threads\n", s->nthreads - 20);
	value_of(f, s, "rate", &v);
	value_of(f, s, "period_rate", &pv);
	printf("samples: total=%" PRIu64 " cpu=%" PRIu64 " real=%" PRIu64
	       " rate=%.1f/cpu-s cpu_periods=%" PRIu64 " period_rate=%.1f/cpu-s"
	       " ts=[%.3f,%.3f]s max_frames=%u dropped=%" PRIu64 "\n",
	       s->samples, s->cpu_samples, s->real_samples, v, s->cpu_periods, pv,
	       s->ts_min, s->ts_max, s->max_frames, s->dropped);
	printf("user: region_push=%" PRIu64 " region_pop=%" PRIu64 " marks=%" PRIu64
	       " range_start=%" PRIu64 " range_end=%" PRIu64 " matched=%" PRIu64 "\n",
	       s->types[KS_RAW_REGION_PUSH], s->types[KS_RAW_REGION_POP], s->types[KS_RAW_MARK],
	       s->types[KS_RAW_RANGE_START], s->types[KS_RAW_RANGE_END], s->ranges_matched);
	printf("mpi: calls=%" PRIu64 " bytes=%" PRIu64 "\n", s->mpi, s->mpi_bytes);
	if (s->counter_info)
		printf("counters: %u per sample, supported mask %#x\n", s->counter_info,
		       s->counter_mask);
	printf("end: reason=%s status=%d last=%d\n", end_name(s->end_reason), s->end_status,
	       s->end_last);
}

static int check(const struct ks_raw_file *f, const struct stats *s, const char *expr)
{
	char key[64];
	const char *op = strpbrk(expr, "<>=");
	size_t klen;
	double want, have;
	int kind; /* 0 =, 1 >=, 2 <= */

	if (!op || (klen = (size_t)(op - expr)) == 0 || klen >= sizeof(key)) {
		fprintf(stderr, "rawcheck: bad expectation '%s'\n", expr);
		return 2;
	}
	memcpy(key, expr, klen);
	key[klen] = '\0';
	if (op[0] == '>' && op[1] == '=') {
		kind = 1;
		op += 2;
	} else if (op[0] == '<' && op[1] == '=') {
		kind = 2;
		op += 2;
	} else if (op[0] == '=') {
		kind = 0;
		op += 1;
	} else {
		fprintf(stderr, "rawcheck: bad operator in '%s'\n", expr);
		return 2;
	}
	if (strcmp(key, "end") == 0) {
		if (kind != 0 || strcmp(op, end_name(s->end_reason)) != 0) {
			printf("FAIL: %s (end is %s)\n", expr, end_name(s->end_reason));
			return 1;
		}
		return 0;
	}
	if (!value_of(f, s, key, &have)) {
		fprintf(stderr, "rawcheck: unknown key '%s'\n", key);
		return 2;
	}
	want = strtod(op, NULL);
	if ((kind == 0 && have != want) || (kind == 1 && have < want) ||
	    (kind == 2 && have > want)) {
		printf("FAIL: %s (%s is %g)\n", expr, key, have);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ks_raw_file f;
	struct ks_err err;
	struct stats s;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	if (argc > 2 && strcmp(argv[1], "-w") == 0) {
		char *p = argv[2];

		while (*p && s.nwin < MAX_WINDOWS) {
			s.win_lo[s.nwin] = strtod(p, &p);
			if (*p++ != '-')
				break;
			s.win_hi[s.nwin++] = strtod(p, &p);
			if (*p == ',')
				p++;
		}
		argv += 2;
		argc -= 2;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: rawcheck [-w LO-HI,...] FILE "
			"[KEY=VALUE|KEY>=VALUE|KEY<=VALUE]...\n");
		return 2;
	}
	ks_err_clear(&err);
	if (ks_raw_open(argv[1], &f, &err) < 0) {
		fprintf(stderr, "rawcheck: %s\n", err.msg);
		return 2;
	}
	if (scan(&f, &s) < 0) {
		fprintf(stderr, "rawcheck: out of memory\n");
		ks_raw_close(&f);
		return 2;
	}
	print(&f, &s);
	for (int i = 2; i < argc; i++) {
		int r = check(&f, &s, argv[i]);

		if (r > rc)
			rc = r;
	}
	free(s.exe);
	free(s.threads);
	free(s.range_ids);
	free(s.end_ids);
	ks_raw_close(&f);
	return rc;
}
