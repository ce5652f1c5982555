/*
 * Unit tests of the sample store and reports (src/sample/store): a
 * synthetic profile (a 3:1 split between two functions, nested regions,
 * two threads, per-sample and process counters) goes through profile.db
 * and back unchanged, the flat profile, call tree and thread table show
 * the known shares in text and JSON, with and without filters, and a
 * writer killed at random moments never leaves a damaged database under
 * the final name.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include <cmocka.h>

#include "post.h"
#include "profile.h"
#include "raw.h"
#include "store.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Building profiles                                                   */
/* ------------------------------------------------------------------ */

static uint32_t S(struct ks_profile *p, const char *s)
{
	uint32_t id = ks_profile_intern(p, s);

	assert_int_not_equal(id, KS_NONE);
	return id;
}

static uint32_t frame(struct ks_profile *p, const char *fn, const char *file,
		      uint32_t line, const char *module, uint64_t addr)
{
	struct ks_pframe f;

	memset(&f, 0, sizeof(f));
	f.function = S(p, fn);
	f.file = file ? S(p, file) : KS_NONE;
	f.line = line;
	f.module = S(p, module);
	f.address = addr;
	return ks_profile_frame(p, &f);
}

/* The node of a call path given outermost first, ending with KS_NONE. */
static uint32_t path(struct ks_profile *p, ...)
{
	uint32_t node = KS_NONE, fr;
	va_list ap;

	va_start(ap, p);
	while ((fr = va_arg(ap, uint32_t)) != KS_NONE) {
		node = ks_profile_node(p, node, fr);
		assert_int_not_equal(node, KS_NONE);
	}
	va_end(ap);
	return node;
}

static void add_samples(struct ks_profile *p, uint32_t thread, uint32_t node,
			unsigned n, uint64_t *ts, bool counters)
{
	for (unsigned i = 0; i < n; i++) {
		struct ks_psample *s = ks_profile_push(p, samples);

		assert_non_null(s);
		s->ts = (*ts += 1000000);
		s->thread = thread;
		s->node = node;
		s->clock = KS_RAW_CLOCK_CPU;  /* tests that need the other set it */
		s->cpu_ns = *ts / 2;
		s->minflt = i;
		s->majflt = i / 10;
		s->counters = KS_NONE;
		if (counters && p->n_counter_names) {
			s->counters = (uint32_t)p->n_counter_values;
			for (size_t j = 0; j < p->n_counter_names; j++) {
				uint64_t *v = ks_profile_push(p, counter_values);

				assert_non_null(v);
				*v = *ts * (j + 1) + (j == 1 ? UINT64_C(1) << 63 : 0);
			}
		}
		p->threads[thread].samples++;
	}
}

static void add_slice(struct ks_profile *p, uint32_t thread, const char *name,
		      uint8_t kind, uint32_t depth, uint64_t start, uint64_t end)
{
	struct ks_pslice *s = ks_profile_push(p, slices);

	assert_non_null(s);
	s->thread = thread;
	s->name = S(p, name);
	s->kind = kind;
	s->depth = depth;
	s->start = start;
	s->end = end;
	s->peer = -1;
	if (kind == KS_SLICE_MPI) {
		s->bytes = 4096;
		s->peer = 3;
	}
	if (kind == KS_SLICE_RANGE)
		s->id = UINT64_MAX - 5;
}

/*
 * The basic profile: 80 samples, 3:1 between work_a and work_b.
 *
 *   thread 0 (main):   main:10 > [solve] > work_a:12          20
 *                      main:10 > [solve] > [inner] > work_a:13 10
 *                      main:11 > work_b:7                      10
 *   thread 1 (worker): thread_start > work_a:12                30
 *                      thread_start > work_b:7                 10
 */
static void build_basic(struct ks_profile *p)
{
	const char *prog = "/usr/bin/prog", *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	uint32_t main10, main11, solve, inner, a12, a13, b7, ts_fr;
	struct ks_pprocess *pr;
	struct ks_pthread *th;
	struct ks_pcounter *c;
	struct ks_err e;
	uint64_t ts = 0;

	assert_int_equal(ks_profile_init(p, &e), 0);
	main10 = frame(p, "main", "/src/main.c", 10, prog, 0x1010);
	main11 = frame(p, "main", "/src/main.c", 11, prog, 0x1020);
	solve = frame(p, "solve", NULL, 0, "[region]", 0);
	inner = frame(p, "inner", NULL, 0, "[region]", 0);
	a12 = frame(p, "work_a", "/src/a.c", 12, prog, 0x2000);
	a13 = frame(p, "work_a", "/src/a.c", 13, prog, 0x2010);
	b7 = frame(p, "work_b", "/src/b.c", 7, prog, 0x3000);
	ts_fr = frame(p, "thread_start", "pthread_create.c", 442, libc, 0x8f00);
	p->frames[a13].inlined = false;

	pr = ks_profile_push(p, processes);
	assert_non_null(pr);
	pr->pid = 1000;
	pr->ppid = 1;
	pr->rank = -1;
	pr->command = S(p, "prog --size 10");
	pr->start = 0;
	pr->end = 5000000000ull;
	pr->end_reason = 1;
	pr->end_status = 0;
	th = ks_profile_push(p, threads);
	assert_non_null(th);
	th->process = 0;
	th->tid = 1000;
	th->name = S(p, "main");
	th->start = 0;
	th->end = 4000000000ull;
	th->cpu_ns = 3500000000ull;
	th = ks_profile_push(p, threads);
	assert_non_null(th);
	th->process = 0;
	th->tid = 1001;
	th->name = S(p, "worker");
	th->start = 500000000ull;
	th->end = 2500000000ull;
	th->cpu_ns = 1250000000ull;

	{
		uint32_t *n = ks_profile_push(p, counter_names);

		*n = S(p, "cycles");
		n = ks_profile_push(p, counter_names);
		*n = S(p, "instructions");
	}
	add_samples(p, 0, path(p, main10, solve, a12, KS_NONE), 20, &ts, false);
	add_samples(p, 0, path(p, main10, solve, inner, a13, KS_NONE), 10, &ts, false);
	add_samples(p, 0, path(p, main11, b7, KS_NONE), 10, &ts, false);
	add_samples(p, 1, path(p, ts_fr, a12, KS_NONE), 30, &ts, true);
	add_samples(p, 1, path(p, ts_fr, b7, KS_NONE), 10, &ts, true);

	add_slice(p, 0, "solve", KS_SLICE_REGION, 0, 1000000, 31000000);
	add_slice(p, 0, "inner", KS_SLICE_REGION, 1, 21000000, 31000000);
	add_slice(p, 0, "MPI_Send", KS_SLICE_MPI, 0, 32000000, 33000000);
	add_slice(p, 1, "io", KS_SLICE_RANGE, 0, 40000000, 45000000);
	add_slice(p, 1, "checkpoint", KS_SLICE_MARK, 0, 46000000, 46000000);
	add_slice(p, 1, "[paused]", KS_SLICE_PAUSE, 0, 47000000, 48000000);
	for (int i = 0; i < 4; i++) {
		c = ks_profile_push(p, counters);
		c->process = 0;
		c->kind = KS_PCOUNTER_RSS;
		c->ts = (uint64_t)i * 100000000;
		c->value = 1048576.0 * (i + 1);
		c = ks_profile_push(p, counters);
		c->process = 0;
		c->kind = KS_PCOUNTER_CPU_PCT;
		c->ts = (uint64_t)i * 100000000;
		c->value = i == 3 ? NAN : 99.5 - i;
	}
	assert_int_equal(ks_profile_meta(p, "hostname", "node1"), 0);
	assert_int_equal(ks_profile_meta(p, "cputime_freq", "1000"), 0);
	assert_int_equal(ks_profile_meta(p, "note", "a \"quoted\" value; with\nnewline"), 0);
	{
		struct ks_pmodule *m = ks_profile_push(p, modules);

		assert_non_null(m);
		m->process = 0;
		m->path = S(p, prog);
		m->base = 0x555555554000ull;
		m->low = 0x555555554000ull;
		m->high = 0x555555559000ull;
		m->build_id = S(p, "3f2a9c0d5e8b7a61c4d2e0f1a9b8c7d6e5f40312");
		m = ks_profile_push(p, modules);
		assert_non_null(m);
		m->process = 0;
		m->path = S(p, libc);
		m->base = 0xffff800000000000ull; /* 2^63 and more: stored negative */
		m->low = 0xffff800000028000ull;
		m->high = 0xffff8000001bd000ull;
		m->build_id = KS_NONE;
	}
	p->dropped_samples = 3;
	p->cputime_freq = 1000;
	p->realtime_freq = 0;
}

/* A profile of n samples spread over many call paths, for speed and for
 * the killed writer. */
static void build_big(struct ks_profile *p, size_t n)
{
	struct ks_err e;
	uint32_t nodes[512];
	uint64_t ts = 0;
	struct ks_pprocess *pr;
	struct ks_pthread *th;

	assert_int_equal(ks_profile_init(p, &e), 0);
	pr = ks_profile_push(p, processes);
	pr->command = S(p, "big");
	pr->rank = -1;
	for (int t = 0; t < 4; t++) {
		th = ks_profile_push(p, threads);
		th->tid = 100 + t;
		th->name = S(p, "w");
	}
	for (int i = 0; i < 512; i++) {
		char fn[32];
		uint32_t node = KS_NONE;

		for (int d = 0; d < 1 + i % 12; d++) {
			snprintf(fn, sizeof(fn), "f%d", (i * 7 + d) % 97);
			node = ks_profile_node(p, node, frame(p, fn, "/src/f.c",
							       (uint32_t)(d + i % 5), "/bin/big",
							       (uint64_t)d * 16));
		}
		nodes[i] = node;
	}
	for (size_t i = 0; i < n; i++) {
		struct ks_psample *s = ks_profile_push(p, samples);

		s->ts = (ts += 1000);
		s->thread = (uint32_t)(i % 4);
		s->node = nodes[(i * 2654435761u) % 512];
		s->cpu_ns = ts;
		s->counters = KS_NONE;
		p->threads[s->thread].samples++;
	}
	for (size_t i = 0; i < n / 100; i++)
		add_slice(p, (uint32_t)(i % 4), "r", KS_SLICE_REGION, 0, i * 1000,
			  i * 1000 + 500);
	p->cputime_freq = 1000;
}

/* ------------------------------------------------------------------ */
/* Comparing                                                           */
/* ------------------------------------------------------------------ */

static void assert_profiles_equal(const struct ks_profile *a, const struct ks_profile *b)
{
	assert_int_equal(a->n_strings, b->n_strings);
	for (size_t i = 0; i < a->n_strings; i++)
		assert_string_equal(a->strings[i], b->strings[i]);
	assert_int_equal(a->n_frames, b->n_frames);
	for (size_t i = 0; i < a->n_frames; i++) {
		const struct ks_pframe *x = &a->frames[i], *y = &b->frames[i];

		assert_int_equal(x->function, y->function);
		assert_int_equal(x->file, y->file);
		assert_int_equal(x->line, y->line);
		assert_int_equal(x->module, y->module);
		assert_true(x->address == y->address);
		assert_int_equal(x->inlined, y->inlined);
	}
	assert_int_equal(a->n_nodes, b->n_nodes);
	for (size_t i = 0; i < a->n_nodes; i++) {
		assert_int_equal(a->nodes[i].parent, b->nodes[i].parent);
		assert_int_equal(a->nodes[i].frame, b->nodes[i].frame);
	}
	assert_int_equal(a->n_processes, b->n_processes);
	for (size_t i = 0; i < a->n_processes; i++) {
		const struct ks_pprocess *x = &a->processes[i], *y = &b->processes[i];

		assert_int_equal(x->pid, y->pid);
		assert_int_equal(x->ppid, y->ppid);
		assert_int_equal(x->rank, y->rank);
		assert_int_equal(x->command, y->command);
		assert_true(x->start == y->start && x->end == y->end);
		assert_int_equal(x->end_reason, y->end_reason);
		assert_int_equal(x->end_status, y->end_status);
	}
	assert_int_equal(a->n_threads, b->n_threads);
	for (size_t i = 0; i < a->n_threads; i++) {
		const struct ks_pthread *x = &a->threads[i], *y = &b->threads[i];

		assert_int_equal(x->process, y->process);
		assert_int_equal(x->tid, y->tid);
		assert_int_equal(x->name, y->name);
		assert_true(x->start == y->start && x->end == y->end);
		assert_true(x->cpu_ns == y->cpu_ns && x->samples == y->samples);
	}
	assert_int_equal(a->n_samples, b->n_samples);
	for (size_t i = 0; i < a->n_samples; i++) {
		const struct ks_psample *x = &a->samples[i], *y = &b->samples[i];

		assert_true(x->ts == y->ts && x->cpu_ns == y->cpu_ns);
		assert_int_equal(x->thread, y->thread);
		assert_int_equal(x->node, y->node);
		assert_int_equal(x->clock, y->clock);
		assert_int_equal(x->overrun, y->overrun);
		assert_int_equal(x->minflt, y->minflt);
		assert_int_equal(x->majflt, y->majflt);
		assert_int_equal(x->counters, y->counters);
	}
	assert_int_equal(a->n_counter_values, b->n_counter_values);
	for (size_t i = 0; i < a->n_counter_values; i++)
		assert_true(a->counter_values[i] == b->counter_values[i]);
	assert_int_equal(a->n_counter_names, b->n_counter_names);
	for (size_t i = 0; i < a->n_counter_names; i++)
		assert_int_equal(a->counter_names[i], b->counter_names[i]);
	assert_int_equal(a->n_slices, b->n_slices);
	for (size_t i = 0; i < a->n_slices; i++) {
		const struct ks_pslice *x = &a->slices[i], *y = &b->slices[i];

		assert_int_equal(x->thread, y->thread);
		assert_int_equal(x->name, y->name);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->depth, y->depth);
		assert_true(x->start == y->start && x->end == y->end);
		assert_true(x->bytes == y->bytes && x->id == y->id);
		assert_int_equal(x->peer, y->peer);
	}
	assert_int_equal(a->n_counters, b->n_counters);
	for (size_t i = 0; i < a->n_counters; i++) {
		const struct ks_pcounter *x = &a->counters[i], *y = &b->counters[i];

		assert_int_equal(x->process, y->process);
		assert_int_equal(x->kind, y->kind);
		assert_true(x->ts == y->ts);
		assert_true(x->value == y->value || (isnan(x->value) && isnan(y->value)));
	}
	assert_int_equal(a->n_modules, b->n_modules);
	for (size_t i = 0; i < a->n_modules; i++) {
		const struct ks_pmodule *x = &a->modules[i], *y = &b->modules[i];

		assert_int_equal(x->process, y->process);
		assert_int_equal(x->path, y->path);
		assert_true(x->base == y->base && x->low == y->low && x->high == y->high);
		assert_int_equal(x->build_id, y->build_id);
	}
	assert_int_equal(a->n_meta, b->n_meta);
	for (size_t i = 0; i < a->n_meta; i++) {
		assert_int_equal(a->meta[i].key, b->meta[i].key);
		assert_int_equal(a->meta[i].value, b->meta[i].value);
	}
	assert_true(a->dropped_samples == b->dropped_samples);
	assert_int_equal(a->cputime_freq, b->cputime_freq);
	assert_int_equal(a->realtime_freq, b->realtime_freq);
}

static const char *const all_tables[] = {
	"meta", "sampling", "strings", "processes", "threads", "frames", "stacks",
	"counter_names", "samples", "sample_counters", "regions", "counters",
	"modules", NULL,
};

static sqlite3 *open_ro(const char *path)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
			 SQLITE_OK);
	return db;
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static char *query_text(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	char *v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

static int64_t table_rows(sqlite3 *db, const char *table)
{
	char sql[128];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	return query_int(db, sql);
}

/* Every table of the two databases holds the same rows. */
static void assert_same_tables(const char *p1, const char *p2)
{
	sqlite3 *db = open_ro(p1);
	char sql[512];

	snprintf(sql, sizeof(sql), "ATTACH '%s' AS b", p2);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	for (int i = 0; all_tables[i]; i++) {
		const char *t = all_tables[i];

		snprintf(sql, sizeof(sql), "SELECT (SELECT count(*) FROM main.%s) - "
			 "(SELECT count(*) FROM b.%s)", t, t);
		assert_int_equal(query_int(db, sql), 0);
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT * FROM main.%s "
			 "EXCEPT SELECT * FROM b.%s)", t, t);
		assert_int_equal(query_int(db, sql), 0);
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM (SELECT * FROM b.%s "
			 "EXCEPT SELECT * FROM main.%s)", t, t);
		assert_int_equal(query_int(db, sql), 0);
	}
	sqlite3_close(db);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

static size_t dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Runs a report into a string (malloc'd); *rc gets its result. */
typedef int (*report_fn)(FILE *, const struct ks_profile *,
			 const struct ks_report_opts *, struct ks_err *);

static char *report(report_fn fn, const struct ks_profile *p,
		    const struct ks_report_opts *o, int *rc, struct ks_err *e)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*rc = fn(f, p, o, e);
	fclose(f);
	return buf;
}

static struct ks_report_opts opts(void)
{
	struct ks_report_opts o = { .json = false, .thread = KS_NONE, .region = NULL,
				    .min_pct = 0.0, .max_depth = 0 };

	return o;
}

static void assert_report(report_fn fn, const struct ks_profile *p,
			  const struct ks_report_opts *o, const char *want)
{
	struct ks_err e;
	int rc;
	char *got = report(fn, p, o, &rc, &e);

	if (rc)
		fail_msg("report failed: %s", e.msg);
	if (strcmp(got, want) != 0) {
		print_error("got:\n%s\nwanted:\n%s\n", got, want);
		fail();
	}
	free(got);
}

static json_t *report_json(report_fn fn, const struct ks_profile *p,
			   struct ks_report_opts o)
{
	struct ks_err e;
	json_error_t je;
	json_t *j;
	int rc;
	char *text;

	o.json = true;
	text = report(fn, p, &o, &rc, &e);
	if (rc)
		fail_msg("report failed: %s", e.msg);
	j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (!j)
		fail_msg("invalid JSON at line %d: %s\n%s", je.line, je.text, text);
	free(text);
	return j;
}

/* ------------------------------------------------------------------ */
/* The database                                                        */
/* ------------------------------------------------------------------ */

static void test_round_trip(void **state)
{
	static const mode_t masks[] = { 0, 022, 077 };
	char *dir = ks_test_tmpdir(), p1[PATH_MAX], p2[PATH_MAX];
	struct ks_profile a, b;
	struct ks_err e;
	sqlite3 *db;

	(void)state;
	build_basic(&a);
	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		mode_t old = umask(masks[i]);

		snprintf(p1, sizeof(p1), "%s/one%zu.db", dir, i);
		snprintf(p2, sizeof(p2), "%s/two%zu.db", dir, i);
		if (ks_store_write(&a, p1, &e) != 0)
			fail_msg("%s", e.msg);
		umask(old);
		assert_int_equal(mode_of(p1), 0640);
		assert_int_equal(ks_profile_init(&b, &e), 0);
		if (ks_store_read(p1, &b, &e) != 0)
			fail_msg("%s", e.msg);
		assert_profiles_equal(&a, &b);
		assert_int_equal(ks_store_write(&b, p2, &e), 0);
		assert_same_tables(p1, p2);
		ks_profile_free(&b);
	}
	/* Only the databases: no temporary, journal or WAL file is left. */
	assert_int_equal(dir_entries(dir), 6);

	/* Never overwritten. */
	assert_int_equal(ks_store_write(&a, p1, &e), -EEXIST);
	assert_non_null(strstr(e.msg, "exists"));
	assert_int_equal(dir_entries(dir), 6);

	/* What the documentation promises about the contents. */
	db = open_ro(p1);
	assert_int_equal(query_int(db, "PRAGMA application_id"), 0x4b534350);
	assert_int_equal(query_int(db, "PRAGMA user_version"), 3);
	{
		char *jm = query_text(db, "PRAGMA journal_mode");

		assert_string_equal(jm, "delete");
		free(jm);
	}
	assert_int_equal(query_int(db, "SELECT count(*) FROM meta WHERE key = "
				   "'schema_version' AND value = '3' AND id = 0"), 1);
	/* The module table: paths by string, build-ids in hex or NULL. */
	assert_int_equal(table_rows(db, "modules"), 2);
	{
		char *bid = query_text(db, "SELECT b.text FROM modules m JOIN strings p "
				       "ON p.id = m.path JOIN strings b ON b.id = "
				       "m.build_id WHERE p.text = '/usr/bin/prog'");

		assert_string_equal(bid, "3f2a9c0d5e8b7a61c4d2e0f1a9b8c7d6e5f40312");
		free(bid);
	}
	assert_int_equal(query_int(db, "SELECT count(*) FROM modules WHERE "
				   "build_id IS NULL AND base < 0"), 1);
	assert_int_equal(table_rows(db, "samples"), 80);
	assert_int_equal(table_rows(db, "sample_counters"), 80);
	assert_int_equal(query_int(db, "SELECT count(*) FROM samples WHERE "
				   "thread_id = 1"), 40);
	assert_int_equal(query_int(db, "SELECT value FROM sample_counters WHERE "
				   "sample_id = 40 AND counter_id = 1"),
			 (int64_t)(UINT64_C(41000000) * 2 + (UINT64_C(1) << 63)));
	assert_int_equal(query_int(db, "SELECT count(*) FROM counters WHERE value "
				   "IS NULL"), 1);
	assert_int_equal(query_int(db, "SELECT dropped_samples FROM sampling"), 3);
	assert_int_equal(query_int(db, "SELECT count(*) FROM stacks WHERE parent_id "
				   "IS NULL"), 3);
	assert_int_equal(query_int(db, "SELECT count(*) FROM frames WHERE file IS NULL"),
			 2);
	/* The flat view agrees with the report. */
	assert_int_equal(query_int(db, "SELECT self FROM flat WHERE function = 'work_a'"),
			 60);
	assert_int_equal(query_int(db, "SELECT total FROM flat WHERE function = 'main'"),
			 40);
	assert_int_equal(query_int(db, "SELECT total FROM flat WHERE function = 'solve'"),
			 30);
	assert_int_equal(query_int(db, "SELECT count(*) FROM regions_named WHERE "
				   "kind = 'mpi' AND duration_ns = 1000000"), 1);
	assert_int_equal(query_int(db, "SELECT count(*) FROM sqlite_master WHERE "
				   "type = 'index' AND name IN ('samples_by_thread', "
				   "'samples_by_stack', 'regions_by_thread')"), 3);
	sqlite3_close(db);

	ks_profile_free(&a);
	ks_test_rmtree(dir);
	free(dir);
}

/* docs/profile-db.md quotes every CREATE statement of the database
 * exactly, so the documented schema is the real one. */
static void test_schema_documented(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX];
	struct ks_profile a;
	struct ks_err e;
	sqlite3 *db;
	sqlite3_stmt *st;
	size_t len;
	char *doc = (char *)ks_test_read_file(KS_SOURCE_DIR "/docs/profile-db.md", &len);
	int n = 0;

	(void)state;
	assert_non_null(doc);
	doc[len] = '\0';
	assert_int_equal(ks_profile_init(&a, &e), 0);
	snprintf(path, sizeof(path), "%s/profile.db", dir);
	assert_int_equal(ks_store_write(&a, path, &e), 0);
	db = open_ro(path);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_master "
					    "WHERE sql IS NOT NULL", -1, &st, NULL),
			 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		char want[8192];

		snprintf(want, sizeof(want), "%s;\n", sqlite3_column_text(st, 1));
		if (!strstr(doc, want))
			fail_msg("docs/profile-db.md does not quote the statement of "
				 "%s:\n%s", sqlite3_column_text(st, 0), want);
		n++;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	assert_int_equal(n, 13 + 7 + 3); /* tables, indexes, views */
	free(doc);
	ks_profile_free(&a);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_empty_profile(void **state)
{
	char *dir = ks_test_tmpdir(), p1[PATH_MAX], p2[PATH_MAX];
	struct ks_report_opts o = opts();
	struct ks_profile a, b;
	struct ks_err e;
	json_t *j;

	(void)state;
	assert_int_equal(ks_profile_init(&a, &e), 0);
	snprintf(p1, sizeof(p1), "%s/e1.db", dir);
	snprintf(p2, sizeof(p2), "%s/e2.db", dir);
	assert_int_equal(ks_store_write(&a, p1, &e), 0);
	assert_int_equal(ks_profile_init(&b, &e), 0);
	assert_int_equal(ks_store_read(p1, &b, &e), 0);
	assert_profiles_equal(&a, &b);
	assert_int_equal(ks_store_write(&b, p2, &e), 0);
	assert_same_tables(p1, p2);

	assert_report(ks_report_flat, &b, &o,
		      "0 call stacks sampled (sampling rate unknown), 0 threads\n"
		      " self%  total%  self total  function  location  module\n");
	assert_report(ks_report_tree, &b, &o,
		      "0 call stacks sampled (sampling rate unknown), 0 threads\n"
		      "total%  self%  function\n");
	assert_report(ks_report_threads, &b, &o,
		      "0 call stacks sampled (sampling rate unknown), 0 threads\n"
		      "index      tid      pid  name samples  share%      cpu_s     wall_s\n");
	j = report_json(ks_report_flat, &b, o);
	assert_int_equal(json_array_size(json_object_get(j, "functions")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "samples")), 0);
	json_decref(j);
	j = report_json(ks_report_tree, &b, o);
	assert_int_equal(json_array_size(json_object_get(j, "roots")), 0);
	json_decref(j);
	ks_profile_free(&a);
	ks_profile_free(&b);
	ks_test_rmtree(dir);
	free(dir);
}

static void exec_sql(const char *path, const char *sql)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void copy_file(const char *from, const char *to)
{
	size_t n;
	unsigned char *buf = ks_test_read_file(from, &n);
	FILE *f = fopen(to, "wb");

	assert_non_null(buf);
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, n, f), n);
	fclose(f);
	free(buf);
}

static void expect_read_error(const char *path, int code, const char *needle)
{
	struct ks_profile p;
	struct ks_err e;
	int rc;

	assert_int_equal(ks_profile_init(&p, &e), 0);
	rc = ks_store_read(path, &p, &e);
	if (rc != code || !strstr(e.msg, needle))
		fail_msg("want %d '%s', got %d '%s'", code, needle, rc, e.msg);
	ks_profile_free(&p);
}

static void test_damaged_databases(void **state)
{
	char *dir = ks_test_tmpdir(), good[PATH_MAX], bad[PATH_MAX];
	struct ks_profile a;
	struct ks_err e;

	(void)state;
	build_basic(&a);
	snprintf(good, sizeof(good), "%s/good.db", dir);
	snprintf(bad, sizeof(bad), "%s/bad.db", dir);
	assert_int_equal(ks_store_write(&a, good, &e), 0);

	copy_file(good, bad);
	exec_sql(bad, "UPDATE samples SET thread_id = 7 WHERE id = 5");
	expect_read_error(bad, -EBADMSG, "table samples, row 5, column thread_id is 7");
	unlink(bad);

	copy_file(good, bad);
	exec_sql(bad, "UPDATE stacks SET parent_id = 9 WHERE id = 2");
	expect_read_error(bad, -EBADMSG, "table stacks, row 2, column parent_id is 9");
	unlink(bad);

	copy_file(good, bad);
	exec_sql(bad, "DELETE FROM frames WHERE id = 1");
	expect_read_error(bad, -EBADMSG, "table frames has id 2 where 1 was expected");
	unlink(bad);

	copy_file(good, bad);
	exec_sql(bad, "UPDATE meta SET value = '4' WHERE key = 'schema_version'");
	expect_read_error(bad, -EPROTONOSUPPORT, "schema version '4'; this kscope "
			  "reads versions 1 to 3");
	unlink(bad);

	copy_file(good, bad);
	exec_sql(bad, "UPDATE modules SET process_id = 4 WHERE id = 1");
	expect_read_error(bad, -EBADMSG, "table modules, row 1, column process_id is 4");
	unlink(bad);

	copy_file(good, bad);
	exec_sql(bad, "UPDATE modules SET build_id = 100000 WHERE id = 0");
	expect_read_error(bad, -EBADMSG, "table modules, row 0, column build_id is 100000");
	unlink(bad);
	copy_file(good, bad);
	exec_sql(bad, "UPDATE meta SET value = '0' WHERE key = 'schema_version'");
	expect_read_error(bad, -EPROTONOSUPPORT, "schema version '0'");
	unlink(bad);

	/* Deleted samples are simply absent (sample ids need not be dense). */
	copy_file(good, bad);
	exec_sql(bad, "DELETE FROM samples WHERE thread_id = 0");
	{
		struct ks_profile b;

		assert_int_equal(ks_profile_init(&b, &e), 0);
		assert_int_equal(ks_store_read(bad, &b, &e), 0);
		assert_int_equal(b.n_samples, 40);
		assert_int_equal(b.samples[0].counters, 0);
		assert_true(b.counter_values[1] == a.counter_values[1]);
		ks_profile_free(&b);
	}
	unlink(bad);

	exec_sql(bad, "CREATE TABLE x(a)");
	expect_read_error(bad, -EBADMSG, "not a kscope profile database");
	unlink(bad);
	ks_test_write_file(bad, "this is not a database, just some text in a file "
			   "that is long enough to have a header of its own.......", 0600);
	expect_read_error(bad, -EBADMSG, "not a database");
	snprintf(bad, sizeof(bad), "%s/absent.db", dir);
	expect_read_error(bad, -ENOENT, "absent.db");

	/* The writer refuses a profile it could not read back. */
	a.samples[3].node = 999;
	assert_int_equal(ks_store_write(&a, bad, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "sample 3"));
	a.samples[3].node = KS_NONE;
	/* A block of counter values cut short keeps the values it has; the
	 * reader fills the rest with 0. */
	a.samples[a.n_samples - 1].counters = (uint32_t)a.n_counter_values - 1;
	assert_int_equal(ks_store_write(&a, bad, &e), 0);
	{
		struct ks_profile b;
		const struct ks_psample *last;

		assert_int_equal(ks_profile_init(&b, &e), 0);
		assert_int_equal(ks_store_read(bad, &b, &e), 0);
		last = &b.samples[b.n_samples - 1];
		assert_true(b.counter_values[last->counters] ==
			    a.counter_values[a.n_counter_values - 1]);
		assert_true(b.counter_values[last->counters + 1] == 0);
		ks_profile_free(&b);
	}
	unlink(bad);
	a.samples[a.n_samples - 1].counters = (uint32_t)a.n_counter_values + 1;
	assert_int_equal(ks_store_write(&a, bad, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "counter values"));
	a.samples[a.n_samples - 1].counters = KS_NONE;
	assert_int_equal(ks_profile_meta(&a, "schema_version", "9"), 0);
	assert_int_equal(ks_store_write(&a, bad, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "reserved"));
	assert_int_equal(access(bad, F_OK), -1);
	ks_profile_free(&a);
	ks_test_rmtree(dir);
	free(dir);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A million samples write in a few seconds (measured: the limit below
 * only catches a writer gone badly wrong, e.g. one transaction a row). */
static void test_million_samples(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX];
	struct ks_profile a, b;
	struct ks_err e;
	double t0, t1, t2;

	(void)state;
	build_big(&a, 1000000);
	snprintf(path, sizeof(path), "%s/big.db", dir);
	t0 = now_s();
	if (ks_store_write(&a, path, &e) != 0)
		fail_msg("%s", e.msg);
	t1 = now_s();
	assert_int_equal(ks_profile_init(&b, &e), 0);
	assert_int_equal(ks_store_read(path, &b, &e), 0);
	t2 = now_s();
	print_message("1M samples: write %.2f s, read %.2f s\n", t1 - t0, t2 - t1);
	assert_true(t1 - t0 < 30.0);
	assert_profiles_equal(&a, &b);
	ks_profile_free(&a);
	ks_profile_free(&b);
	ks_test_rmtree(dir);
	free(dir);
}

/* A writer killed at random moments leaves under the final name either
 * nothing or a complete database (integrity_check ok, every table at its
 * full size), and never a journal that a reader would need. */
static void test_killed_writer(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX], side[PATH_MAX + 16];
	struct ks_profile a;
	struct ks_err e;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	int absent = 0, complete = 0;
	double t0, dt;

	(void)state;
	build_big(&a, 100000);
	snprintf(path, sizeof(path), "%s/timing.db", dir);
	t0 = now_s();
	assert_int_equal(ks_store_write(&a, path, &e), 0);
	dt = now_s() - t0;
	unlink(path);
	srand(seed);
	print_message("killed writer: seed %u, a write takes %.3f s\n", seed, dt);

	for (int round = 0; round < 12; round++) {
		/* Kill anywhere from before the start to after the end. */
		useconds_t delay = (useconds_t)(dt * 1.2e6 * rand() / RAND_MAX);
		pid_t pid;
		int status;
		sqlite3 *db;

		snprintf(path, sizeof(path), "%s/k%d.db", dir, round);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct ks_err ce;

			_exit(ks_store_write(&a, path, &ce) == 0 ? 0 : 1);
		}
		usleep(delay);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		snprintf(side, sizeof(side), "%s-journal", path);
		assert_int_equal(access(side, F_OK), -1);
		snprintf(side, sizeof(side), "%s-wal", path);
		assert_int_equal(access(side, F_OK), -1);
		if (access(path, F_OK) != 0) {
			/* Absent: a reader is told so, and finds no half file. */
			absent++;
			assert_int_equal(errno, ENOENT);
			expect_read_error(path, -ENOENT, "cannot open");
			continue;
		}
		complete++;
		assert_int_equal(mode_of(path), 0640);
		db = open_ro(path);
		{
			char *ok = query_text(db, "PRAGMA integrity_check");

			assert_string_equal(ok, "ok");
			free(ok);
		}
		assert_int_equal(table_rows(db, "samples"), 100000);
		assert_int_equal(table_rows(db, "regions"), 1000);
		assert_int_equal(table_rows(db, "stacks"), (int64_t)a.n_nodes);
		assert_int_equal(table_rows(db, "strings"), (int64_t)a.n_strings);
		sqlite3_close(db);
	}
	print_message("killed writer: %d absent, %d complete\n", absent, complete);
	/* Files a killed writer left under temporary names do not stop the
	 * next one. */
	snprintf(path, sizeof(path), "%s/k0.db", dir);
	unlink(path);
	assert_int_equal(ks_store_write(&a, path, &e), 0);
	ks_profile_free(&a);
	ks_test_rmtree(dir);
	free(dir);
}

/* ------------------------------------------------------------------ */
/* Reports                                                             */
/* ------------------------------------------------------------------ */

static void test_flat(void **state)
{
	struct ks_report_opts o = opts();
	struct ks_profile p;

	(void)state;
	build_basic(&p);
	assert_report(ks_report_flat, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms, 2 threads, "
		"3 samples dropped by the runtime (not counted)\n"
		" self%  total%  self total  function      location              module\n"
		" 75.00   75.00    60    60  work_a        a.c:12                prog\n"
		" 25.00   25.00    20    20  work_b        b.c:7                 prog\n"
		"  0.00   50.00     0    40  main          main.c:10             prog\n"
		"  0.00   50.00     0    40  thread_start  pthread_create.c:442  libc.so.6\n"
		"  0.00   37.50     0    30  solve         -                     [region]\n"
		"  0.00   12.50     0    10  inner         -                     [region]\n");

	/* Only thread 1: the same 3:1 split. */
	o.thread = 1;
	assert_report(ks_report_flat, &p, &o,
		"40 call stacks sampled from 40 CPU-time periods of 1 ms, 1 thread, "
		"3 samples dropped by the runtime (not counted); only "
		"thread 1 (tid 1001)\n"
		" self%  total%  self total  function      location              module\n"
		" 75.00   75.00    30    30  work_a        a.c:12                prog\n"
		" 25.00   25.00    10    10  work_b        b.c:7                 prog\n"
		"  0.00  100.00     0    40  thread_start  pthread_create.c:442  libc.so.6\n");

	/* Only inside region solve: 30 samples, all in work_a, the hottest
	 * line still a.c:12 (20 against 10). */
	o.thread = KS_NONE;
	o.region = "solve";
	assert_report(ks_report_flat, &p, &o,
		"30 call stacks sampled from 30 CPU-time periods of 1 ms, 1 thread, "
		"3 samples dropped by the runtime (not counted); only "
		"inside region 'solve'\n"
		" self%  total%  self total  function  location   module\n"
		"100.00  100.00    30    30  work_a    a.c:12     prog\n"
		"  0.00  100.00     0    30  main      main.c:10  prog\n"
		"  0.00  100.00     0    30  solve     -          [region]\n"
		"  0.00   33.33     0    10  inner     -          [region]\n");

	/* The nested region: its samples sit on line 13. */
	o.region = "inner";
	assert_report(ks_report_flat, &p, &o,
		"10 call stacks sampled from 10 CPU-time periods of 1 ms, 1 thread, "
		"3 samples dropped by the runtime (not counted); only "
		"inside region 'inner'\n"
		" self%  total%  self total  function  location   module\n"
		"100.00  100.00    10    10  work_a    a.c:13     prog\n"
		"  0.00  100.00     0    10  inner     -          [region]\n"
		"  0.00  100.00     0    10  main      main.c:10  prog\n"
		"  0.00  100.00     0    10  solve     -          [region]\n");

	/* Both filters: thread 1 was never inside solve. */
	o.region = "solve";
	o.thread = 1;
	assert_report(ks_report_flat, &p, &o,
		"0 call stacks sampled from 0 CPU-time periods of 1 ms, 0 threads, "
		"3 samples dropped by the runtime (not counted); only "
		"thread 1 (tid 1001); only inside region 'solve'\n"
		" self%  total%  self total  function  location  module\n");
	ks_profile_free(&p);
}

static void test_recursion_counted_once(void **state)
{
	struct ks_report_opts o = opts();
	struct ks_profile p;
	struct ks_pthread *th;
	struct ks_pprocess *pr;
	struct ks_err e;
	uint32_t m, f1, f2, g;
	uint64_t ts = 0;

	(void)state;
	assert_int_equal(ks_profile_init(&p, &e), 0);
	pr = ks_profile_push(&p, processes);
	pr->rank = -1;
	th = ks_profile_push(&p, threads);
	th->tid = 7;
	m = frame(&p, "main", "m.c", 1, "/bin/r", 1);
	f1 = frame(&p, "fib", "f.c", 3, "/bin/r", 2);
	f2 = frame(&p, "fib", "f.c", 4, "/bin/r", 3);
	g = frame(&p, "leaf", NULL, 0, "/bin/r", 4);
	/* main > fib > fib > fib > leaf: fib's total is 4 of 4, not 12. */
	add_samples(&p, 0, path(&p, m, f1, f2, f2, g, KS_NONE), 3, &ts, false);
	add_samples(&p, 0, path(&p, m, f1, f2, KS_NONE), 1, &ts, false);
	for (size_t i = 0; i < p.n_samples; i++)
		p.samples[i].clock = KS_RAW_CLOCK_REAL;
	p.realtime_freq = 250;
	assert_report(ks_report_flat, &p, &o,
		"4 call stacks sampled from 4 real-time periods of 4 ms, 1 thread\n"
		" self%  total%  self total  function  location  module\n"
		" 75.00   75.00     3     3  leaf      -         r\n"
		" 25.00  100.00     1     4  fib       f.c:4     r\n"
		"  0.00  100.00     0     4  main      m.c:1     r\n");
	assert_report(ks_report_tree, &p, &o,
		"4 call stacks sampled from 4 real-time periods of 4 ms, 1 thread\n"
		"total%  self%  function\n"
		"100.00   0.00  main (m.c:1)\n"
		"100.00   0.00    fib (f.c:3)\n"
		"100.00  25.00      fib (f.c:4)\n"
		" 75.00   0.00        fib (f.c:4)\n"
		" 75.00  75.00          leaf [r]\n");
	ks_profile_free(&p);
}

static void test_tree(void **state)
{
	struct ks_report_opts o = opts();
	struct ks_profile p;
	struct ks_err e;
	char *out;
	int rc;

	(void)state;
	build_basic(&p);
	assert_report(ks_report_tree, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms, 2 threads, "
		"3 samples dropped by the runtime (not counted)\n"
		"total%  self%  function\n"
		" 50.00   0.00  main (main.c:10)\n"
		" 37.50   0.00    solve [region]\n"
		" 25.00  25.00      work_a (a.c:12)\n"
		" 12.50   0.00      inner [region]\n"
		" 12.50  12.50        work_a (a.c:13)\n"
		" 12.50  12.50    work_b (b.c:7)\n"
		" 50.00   0.00  thread_start (pthread_create.c:442)\n"
		" 37.50  37.50    work_a (a.c:12)\n"
		" 12.50  12.50    work_b (b.c:7)\n");

	/* Below 20%: folded, per parent, into one line. */
	o.min_pct = 20;
	assert_report(ks_report_tree, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms, 2 threads, "
		"3 samples dropped by the runtime (not counted)\n"
		"total%  self%  function\n"
		" 50.00   0.00  main (main.c:10)\n"
		" 37.50   0.00    solve [region]\n"
		" 25.00  25.00      work_a (a.c:12)\n"
		" 12.50   0.00      [1 more]\n"
		" 12.50  12.50    [1 more]\n"
		" 50.00   0.00  thread_start (pthread_create.c:442)\n"
		" 37.50  37.50    work_a (a.c:12)\n"
		" 12.50  12.50    [1 more]\n");
	o.min_pct = 60;
	assert_report(ks_report_tree, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms, 2 threads, "
		"3 samples dropped by the runtime (not counted)\n"
		"total%  self%  function\n"
		"100.00   0.00  [2 more]\n");

	o.min_pct = 0;
	o.max_depth = 2;
	assert_report(ks_report_tree, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms, 2 threads, "
		"3 samples dropped by the runtime (not counted)\n"
		"total%  self%  function\n"
		" 50.00   0.00  main (main.c:10)\n"
		" 37.50   0.00    solve [region]\n"
		" 12.50  12.50    work_b (b.c:7)\n"
		" 50.00   0.00  thread_start (pthread_create.c:442)\n"
		" 37.50  37.50    work_a (a.c:12)\n"
		" 12.50  12.50    work_b (b.c:7)\n");

	o.max_depth = 0;
	o.region = "inner";
	assert_report(ks_report_tree, &p, &o,
		"10 call stacks sampled from 10 CPU-time periods of 1 ms, 1 thread, "
		"3 samples dropped by the runtime (not counted); only "
		"inside region 'inner'\n"
		"total%  self%  function\n"
		"100.00   0.00  main (main.c:10)\n"
		"100.00   0.00    solve [region]\n"
		"100.00   0.00      inner [region]\n"
		"100.00 100.00        work_a (a.c:13)\n");

	o.region = NULL;
	o.thread = 0;
	assert_report(ks_report_tree, &p, &o,
		"40 call stacks sampled from 40 CPU-time periods of 1 ms, 1 thread, "
		"3 samples dropped by the runtime (not counted); only "
		"thread 0 (tid 1000)\n"
		"total%  self%  function\n"
		"100.00   0.00  main (main.c:10)\n"
		" 75.00   0.00    solve [region]\n"
		" 50.00  50.00      work_a (a.c:12)\n"
		" 25.00   0.00      inner [region]\n"
		" 25.00  25.00        work_a (a.c:13)\n"
		" 25.00  25.00    work_b (b.c:7)\n");

	/* Filters that name nothing are errors, not empty reports. */
	o.thread = 2;
	out = report(ks_report_tree, &p, &o, &rc, &e);
	assert_int_equal(rc, -EINVAL);
	assert_string_equal(e.msg, "thread 2 does not exist: the profile has 2 threads");
	free(out);
	o.thread = KS_NONE;
	o.region = "MPI_Send"; /* a slice, but never a frame */
	out = report(ks_report_flat, &p, &o, &rc, &e);
	assert_int_equal(rc, -ENOENT);
	assert_string_equal(e.msg, "the profile has no region named 'MPI_Send'");
	free(out);
	ks_profile_free(&p);
}

static void test_threads(void **state)
{
	struct ks_report_opts o = opts();
	struct ks_profile p;

	(void)state;
	build_basic(&p);
	assert_report(ks_report_threads, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms, 2 threads, "
		"3 samples dropped by the runtime (not counted)\n"
		"index      tid      pid  name   samples  share%      cpu_s     wall_s\n"
		"    0     1000     1000  main        40   50.00      3.500      4.000\n"
		"    1     1001     1000  worker      40   50.00      1.250      2.000\n");
	o.region = "solve";
	assert_report(ks_report_threads, &p, &o,
		"30 call stacks sampled from 30 CPU-time periods of 1 ms, 1 thread, "
		"3 samples dropped by the runtime (not counted); only "
		"inside region 'solve'\n"
		"index      tid      pid  name   samples  share%      cpu_s     wall_s\n"
		"    0     1000     1000  main        30  100.00      3.500      4.000\n"
		"    1     1001     1000  worker       0    0.00      1.250      2.000\n");
	o.region = NULL;
	o.thread = 1;
	p.processes[0].rank = 2;
	assert_report(ks_report_threads, &p, &o,
		"40 call stacks sampled from 40 CPU-time periods of 1 ms, 1 thread, "
		"3 samples dropped by the runtime (not counted); only "
		"thread 1 (tid 1001)\n"
		"index      tid      pid  rank  name   samples  share%      cpu_s     wall_s\n"
		"    1     1001     1000     2  worker      40  100.00      1.250      2.000\n");
	ks_profile_free(&p);
}

static json_t *get(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		fail_msg("JSON field '%s' is missing", key);
	return v;
}

/* A sample that stands for several timer periods (the kernel folded
 * them into one signal) counts that many times in every share, while the
 * sample counts stay what was recorded.  The weights survive the store,
 * and a version-1 database (no overrun column) reads as one period per
 * sample. */
static void test_overrun_weights(void **state)
{
	char *dir = ks_test_tmpdir(), p1[PATH_MAX], p2[PATH_MAX];
	struct ks_report_opts o = opts();
	struct ks_profile p, b;
	struct ks_err e;
	json_t *j, *rows;

	(void)state;
	build_basic(&p);
	/* The last 10 samples: thread 1 in work_b, 3 periods each. */
	for (size_t i = 70; i < 80; i++)
		p.samples[i].overrun = 2;
	assert_report(ks_report_threads, &p, &o,
		"80 call stacks sampled from 100 CPU-time periods of 1 ms (20 periods "
		"ended while a timer signal was pending and are counted with the call "
		"stack taken when it arrived), 2 threads, 3 samples dropped by the "
		"runtime (not counted)\n"
		"index      tid      pid  name   samples  share%      cpu_s     wall_s\n"
		"    0     1000     1000  main        40   40.00      3.500      4.000\n"
		"    1     1001     1000  worker      40   60.00      1.250      2.000\n");
	o.thread = 1;
	assert_report(ks_report_flat, &p, &o,
		"40 call stacks sampled from 60 CPU-time periods of 1 ms (20 periods "
		"ended while a timer signal was pending and are counted with the call "
		"stack taken when it arrived), 1 thread, 3 samples dropped by the "
		"runtime (not counted); only thread 1 (tid 1001)\n"
		" self%  total%  self total  function      location              module\n"
		" 50.00   50.00    30    30  work_a        a.c:12                prog\n"
		" 50.00   50.00    30    30  work_b        b.c:7                 prog\n"
		"  0.00  100.00     0    60  thread_start  pthread_create.c:442  libc.so.6\n");
	o.thread = KS_NONE;
	j = report_json(ks_report_threads, &p, o);
	assert_int_equal(json_integer_value(get(j, "samples")), 80);
	assert_int_equal(json_integer_value(get(j, "periods")), 100);
	rows = get(j, "rows");
	assert_int_equal(json_integer_value(get(json_array_get(rows, 1), "samples")), 40);
	assert_int_equal(json_integer_value(get(json_array_get(rows, 1), "periods")), 60);
	json_decref(j);

	snprintf(p1, sizeof(p1), "%s/w.db", dir);
	snprintf(p2, sizeof(p2), "%s/v1.db", dir);
	assert_int_equal(ks_store_write(&p, p1, &e), 0);
	assert_int_equal(ks_profile_init(&b, &e), 0);
	assert_int_equal(ks_store_read(p1, &b, &e), 0);
	assert_profiles_equal(&p, &b);
	ks_profile_free(&b);
	{
		sqlite3 *db = open_ro(p1);

		/* The flat view weighs as the report does: 20 + 10 + 10x3. */
		assert_int_equal(query_int(db, "SELECT self FROM flat WHERE "
					   "function = 'work_b'"), 40);
		assert_int_equal(query_int(db, "SELECT sum(overrun) FROM samples"), 20);
		sqlite3_close(db);
	}

	/* Version 2 (before the module table) reads as a profile without
	 * modules, everything else as it was. */
	{
		char p3[PATH_MAX];

		snprintf(p3, sizeof(p3), "%s/v2.db", dir);
		copy_file(p1, p3);
		exec_sql(p3, "DROP TABLE modules; "
			     "UPDATE meta SET value = '2' WHERE key = 'schema_version'; "
			     "PRAGMA user_version = 2");
		assert_int_equal(ks_profile_init(&b, &e), 0);
		assert_int_equal(ks_store_read(p3, &b, &e), 0);
		assert_int_equal(b.n_modules, 0);
		assert_int_equal(p.n_modules, 2);
		p.n_modules = 0;
		assert_profiles_equal(&p, &b);
		p.n_modules = 2;
		ks_profile_free(&b);
	}

	copy_file(p1, p2);
	/* Version 1's flat view counted rows; the reader uses no view. */
	exec_sql(p2, "DROP VIEW flat; ALTER TABLE samples DROP COLUMN overrun; "
		     "DROP TABLE modules; "
		     "UPDATE meta SET value = '1' WHERE key = 'schema_version'; "
		     "PRAGMA user_version = 1");
	assert_int_equal(ks_profile_init(&b, &e), 0);
	assert_int_equal(ks_store_read(p2, &b, &e), 0);
	assert_int_equal(b.n_samples, 80);
	for (size_t i = 0; i < b.n_samples; i++)
		assert_int_equal(b.samples[i].overrun, 0);
	ks_profile_free(&b);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

/* The header says in words what was sampled: call stacks (signals), the
 * timer periods they come from and their length, per timer when both ran;
 * the periods that fell while a signal was pending; and the periods a
 * thread's CPU-time timer owed when it ended, which have no call stack
 * and are not call stacks sampled. */
static void test_header_words(void **state)
{
	char *dir = ks_test_tmpdir(), path1[PATH_MAX];
	struct ks_report_opts o = opts();
	struct ks_profile p, b;
	struct ks_err e;
	uint32_t end_fr, r;
	uint64_t ts = 0;
	size_t first;

	(void)state;
	build_basic(&p);
	/* Thread 1 ends with 7 periods owed: one sample of 1 + 6 periods. */
	end_fr = frame(&p, KS_POST_AT_END_FRAME, NULL, 0, "[unknown]", 0);
	add_samples(&p, 1, path(&p, end_fr, KS_NONE), 1, &ts, false);
	p.samples[p.n_samples - 1].overrun = 6;
	/* Two samples of the real-time timer at 300 Hz, one of 2 periods. */
	r = frame(&p, "wait", NULL, 0, "/usr/bin/prog", 64);
	first = p.n_samples;
	add_samples(&p, 0, path(&p, r, KS_NONE), 2, &ts, false);
	for (size_t i = first; i < p.n_samples; i++)
		p.samples[i].clock = KS_RAW_CLOCK_REAL;
	p.samples[first].overrun = 1;
	p.samples[3].overrun = 4;
	p.realtime_freq = 300;
	assert_report(ks_report_threads, &p, &o,
		"80 call stacks sampled from 91 CPU-time periods of 1 ms (4 periods "
		"ended while a timer signal was pending and are counted with the call "
		"stack taken when it arrived; 7 periods expired after a thread's last "
		"signal and are counted at its end, without a call stack) and 2 from "
		"3 real-time periods of 3.33 ms (1 period ended while a timer signal "
		"was pending and is counted with the call stack taken when it "
		"arrived), 2 threads, 3 samples dropped by the runtime (not counted)\n"
		"index      tid      pid  name   samples cpu share% wall share%      cpu_s     wall_s\n"
		"    0     1000     1000  main        42      48.35      100.00      3.500      4.000\n"
		"    1     1001     1000  worker      41      51.65        0.00      1.250      2.000\n");
	/* The store keeps what the header is made of. */
	snprintf(path1, sizeof(path1), "%s/h.db", dir);
	assert_int_equal(ks_store_write(&p, path1, &e), 0);
	assert_int_equal(ks_profile_init(&b, &e), 0);
	assert_int_equal(ks_store_read(path1, &b, &e), 0);
	assert_profiles_equal(&p, &b);
	ks_profile_free(&b);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

/* The basic profile with wall-clock samples too: thread 0 waits in
 * wait() for 45 real-time periods and runs work_a inside region solve
 * for 20; thread 1 runs work_b for 10, with counters.  And one sample of
 * a timer of unknown kind (a database edited by hand). */
static void build_two_clocks(struct ks_profile *p)
{
	uint32_t main10, main11, solve, a12, wait, ts_fr, b7;
	uint64_t ts = 1000000000;
	size_t first;

	build_basic(p);
	main10 = frame(p, "main", "/src/main.c", 10, "/usr/bin/prog", 0x1010);
	main11 = frame(p, "main", "/src/main.c", 11, "/usr/bin/prog", 0x1020);
	solve = frame(p, "solve", NULL, 0, "[region]", 0);
	a12 = frame(p, "work_a", "/src/a.c", 12, "/usr/bin/prog", 0x2000);
	wait = frame(p, "wait", "/src/w.c", 3, "/usr/bin/prog", 0x4000);
	ts_fr = frame(p, "thread_start", "pthread_create.c", 442,
		      "/lib/x86_64-linux-gnu/libc.so.6", 0x8f00);
	b7 = frame(p, "work_b", "/src/b.c", 7, "/usr/bin/prog", 0x3000);
	first = p->n_samples;
	add_samples(p, 0, path(p, main11, wait, KS_NONE), 45, &ts, false);
	add_samples(p, 0, path(p, main10, solve, a12, KS_NONE), 20, &ts, false);
	add_samples(p, 1, path(p, ts_fr, b7, KS_NONE), 10, &ts, true);
	for (size_t i = first; i < p->n_samples; i++)
		p->samples[i].clock = KS_RAW_CLOCK_REAL;
	add_samples(p, 1, path(p, ts_fr, b7, KS_NONE), 1, &ts, false);
	p->samples[p->n_samples - 1].clock = 7;
	p->realtime_freq = 100;
}

/* The last running total of counter k among thread 1's samples of timer
 * clock (any timer with clock < 0): what the counters report sums to
 * when the deltas are taken between that timer's samples. */
static uint64_t last_counter(const struct ks_profile *p, int clock, size_t k)
{
	uint64_t v = 0;

	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		if (s->thread == 1 && s->counters != KS_NONE && (clock < 0 || s->clock == clock))
			v = p->counter_values[s->counters + k];
	}
	return v;
}

/* CPU-time and wall-clock samples are never added into one share: with
 * --clock cpu or real a report counts one timer's samples, and without
 * a clock filter a profile with both gets both side by side, each a share
 * of its own timer's periods, in text and JSON. */
static void test_clock_columns(void **state)
{
	struct ks_report_opts o = opts();
	struct ks_profile p;
	struct ks_err e;
	json_t *j, *f, *r, *t;

	(void)state;
	build_two_clocks(&p);
	/* One timer: the CPU-time report is the basic profile's. */
	o.clock = KS_REPORT_CLOCK_CPU;
	assert_report(ks_report_flat, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms, 2 threads, "
		"3 samples dropped by the runtime (not counted); only the CPU-time "
		"samples\n"
		" self%  total%  self total  function      location              module\n"
		" 75.00   75.00    60    60  work_a        a.c:12                prog\n"
		" 25.00   25.00    20    20  work_b        b.c:7                 prog\n"
		"  0.00   50.00     0    40  main          main.c:10             prog\n"
		"  0.00   50.00     0    40  thread_start  pthread_create.c:442  libc.so.6\n"
		"  0.00   37.50     0    30  solve         -                     [region]\n"
		"  0.00   12.50     0    10  inner         -                     [region]\n");
	o.clock = KS_REPORT_CLOCK_REAL;
	assert_report(ks_report_flat, &p, &o,
		"75 call stacks sampled from 75 real-time periods of 10 ms, 2 threads, "
		"3 samples dropped by the runtime (not counted); only the real-time "
		"(wall-clock) samples\n"
		" self%  total%  self total  function      location              module\n"
		" 60.00   60.00    45    45  wait          w.c:3                 prog\n"
		" 26.67   26.67    20    20  work_a        a.c:12                prog\n"
		" 13.33   13.33    10    10  work_b        b.c:7                 prog\n"
		"  0.00   86.67     0    65  main          main.c:11             prog\n"
		"  0.00   26.67     0    20  solve         -                     [region]\n"
		"  0.00   13.33     0    10  thread_start  pthread_create.c:442  libc.so.6\n");
	/* Both: side by side, ordered by the larger share; the sample of an
	 * unknown timer is in neither column, and the header says so. */
	o.clock = KS_REPORT_CLOCK_ALL;
	assert_report(ks_report_flat, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms and 75 from "
		"75 real-time periods of 10 ms, 2 threads, 3 samples dropped by the "
		"runtime (not counted), 1 sample of a timer of unknown kind (not "
		"counted: it is neither CPU time nor wall-clock time)\n"
		"cpu self% cpu total% wall self% wall total% cpu self cpu total wall self "
		"wall total  function      location              module\n"
		"    75.00      75.00      26.67       26.67       60        60        20"
		"         20  work_a        a.c:12                prog\n"
		"     0.00       0.00      60.00       60.00        0         0        45"
		"         45  wait          w.c:3                 prog\n"
		"    25.00      25.00      13.33       13.33       20        20        10"
		"         10  work_b        b.c:7                 prog\n"
		"     0.00      50.00       0.00       86.67        0        40         0"
		"         65  main          main.c:11             prog\n"
		"     0.00      50.00       0.00       13.33        0        40         0"
		"         10  thread_start  pthread_create.c:442  libc.so.6\n"
		"     0.00      37.50       0.00       26.67        0        30         0"
		"         20  solve         -                     [region]\n"
		"     0.00      12.50       0.00        0.00        0        10         0"
		"          0  inner         -                     [region]\n");
	o.min_pct = 20;
	assert_report(ks_report_tree, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms and 75 from "
		"75 real-time periods of 10 ms, 2 threads, 3 samples dropped by the "
		"runtime (not counted), 1 sample of a timer of unknown kind (not "
		"counted: it is neither CPU time nor wall-clock time)\n"
		"cpu total% cpu self% wall total% wall self%  function\n"
		"     50.00      0.00       86.67       0.00  main (main.c:11)\n"
		"      0.00      0.00       60.00      60.00    wait (w.c:3)\n"
		"     37.50      0.00       26.67       0.00    solve [region]\n"
		"     25.00     25.00       26.67      26.67      work_a (a.c:12)\n"
		"     12.50      0.00        0.00       0.00      [1 more]\n"
		"     12.50     12.50        0.00       0.00    [1 more]\n"
		"     50.00      0.00       13.33       0.00  thread_start (pthread_create.c:442)\n"
		"     37.50     37.50        0.00       0.00    work_a (a.c:12)\n"
		"     12.50     12.50       13.33      13.33    [1 more]\n");
	o.min_pct = 0;
	assert_report(ks_report_threads, &p, &o,
		"80 call stacks sampled from 80 CPU-time periods of 1 ms and 75 from "
		"75 real-time periods of 10 ms, 2 threads, 3 samples dropped by the "
		"runtime (not counted), 1 sample of a timer of unknown kind (not "
		"counted: it is neither CPU time nor wall-clock time)\n"
		"index      tid      pid  name   samples cpu share% wall share%      cpu_s     wall_s\n"
		"    0     1000     1000  main       105      50.00       86.67      3.500      4.000\n"
		"    1     1001     1000  worker      50      50.00       13.33      1.250      2.000\n");

	/* JSON: the counts per timer, and the header's account per timer. */
	j = report_json(ks_report_flat, &p, o);
	assert_true(json_is_true(get(j, "by_clock")));
	assert_string_equal(json_string_value(get(get(j, "filter"), "clock")), "all");
	assert_int_equal(json_integer_value(get(j, "samples")), 155);
	assert_int_equal(json_integer_value(get(j, "unknown_timer_samples")), 1);
	assert_int_equal(json_integer_value(get(j, "counters_recorded")), 2);
	t = get(j, "timers");
	assert_int_equal(json_integer_value(get(get(t, "cpu"), "periods")), 80);
	assert_int_equal(json_integer_value(get(get(t, "wall"), "stacks")), 75);
	assert_null(json_object_get(t, "unknown"));
	f = get(j, "functions");
	r = json_array_get(f, 0);
	assert_string_equal(json_string_value(get(r, "function")), "work_a");
	assert_int_equal(json_integer_value(get(r, "cpu_self")), 60);
	assert_int_equal(json_integer_value(get(r, "wall_self")), 20);
	assert_true(json_real_value(get(r, "cpu_self_pct")) == 75.0);
	assert_true(fabs(json_real_value(get(r, "wall_total_pct")) - 100.0 * 20 / 75) < 1e-9);
	assert_null(json_object_get(r, "self"));
	assert_null(json_object_get(r, "self_pct"));
	json_decref(j);
	o.clock = KS_REPORT_CLOCK_REAL;
	j = report_json(ks_report_flat, &p, o);
	assert_true(json_is_false(get(j, "by_clock")));
	assert_string_equal(json_string_value(get(get(j, "filter"), "clock")), "real");
	assert_int_equal(json_integer_value(get(j, "periods")), 75);
	assert_int_equal(json_integer_value(get(get(get(j, "timers"), "cpu"), "periods")), 0);
	r = json_array_get(get(j, "functions"), 0);
	assert_string_equal(json_string_value(get(r, "function")), "wait");
	assert_true(json_real_value(get(r, "self_pct")) == 60.0);
	assert_null(json_object_get(r, "wall_self"));
	json_decref(j);

	/* Counters: the events between one timer's samples, or between any
	 * two samples without a filter; the self periods per timer. */
	for (int clock = -1; clock <= KS_RAW_CLOCK_REAL; clock++) {
		o.clock = clock < 0 ? KS_REPORT_CLOCK_ALL : clock == KS_RAW_CLOCK_CPU
			  ? KS_REPORT_CLOCK_CPU : KS_REPORT_CLOCK_REAL;
		j = report_json(ks_report_counters, &p, o);
		assert_int_equal(json_integer_value(get(get(j, "totals"), "cycles")),
				 last_counter(&p, clock, 0));
		/* Thread 1's real-time samples start 0.9 s after its last
		 * CPU-time one: that gap's events go to work_b unless only the
		 * CPU-time samples count. */
		r = json_array_get(get(j, "functions"), 0);
		assert_string_equal(json_string_value(get(r, "function")),
				    clock == KS_RAW_CLOCK_CPU ? "work_a" : "work_b");
		if (clock < 0) {
			assert_int_equal(json_integer_value(get(r, "cpu_self")), 20);
			assert_int_equal(json_integer_value(get(r, "wall_self")), 10);
		} else {
			assert_int_equal(json_integer_value(get(r, "self")), clock ? 10 : 60);
		}
		json_decref(j);
	}

	/* A timer the profile has no samples of is refused, saying what it
	 * has. */
	assert_int_equal(ks_report_check_clock(&p, KS_REPORT_CLOCK_REAL, &e), 0);
	ks_profile_free(&p);
	build_basic(&p);
	assert_int_equal(ks_report_check_clock(&p, KS_REPORT_CLOCK_CPU, &e), 0);
	assert_int_equal(ks_report_check_clock(&p, KS_REPORT_CLOCK_ALL, &e), 0);
	assert_int_equal(ks_report_check_clock(&p, KS_REPORT_CLOCK_REAL, &e), -ENOENT);
	assert_string_equal(e.msg, "the profile has no wall-clock (real-time) samples: "
			    "it has only 80 CPU-time samples (kscope sample --samplers "
			    "chooses the samplers); accepted: cpu or all");
	p.n_samples = 0;
	assert_int_equal(ks_report_check_clock(&p, KS_REPORT_CLOCK_CPU, &e), -ENOENT);
	assert_string_equal(e.msg, "the profile has no CPU-time samples: it has no "
			    "samples at all (kscope sample --samplers chooses the "
			    "samplers); accepted: all");
	ks_profile_free(&p);
}

static void test_json(void **state)
{
	struct ks_report_opts o = opts();
	struct ks_profile p;
	json_t *j, *f, *r, *c;

	(void)state;
	build_basic(&p);

	j = report_json(ks_report_flat, &p, o);
	assert_string_equal(json_string_value(get(j, "report")), "flat");
	assert_int_equal(json_integer_value(get(j, "samples")), 80);
	assert_int_equal(json_integer_value(get(j, "threads")), 2);
	assert_int_equal(json_integer_value(get(get(j, "sampling"), "cpu_hz")), 1000);
	assert_int_equal(json_integer_value(get(get(j, "sampling"), "real_hz")), 0);
	assert_int_equal(json_integer_value(get(j, "dropped_samples")), 3);
	assert_int_equal(json_integer_value(get(j, "samples_without_stack")), 0);
	assert_true(json_is_null(get(get(j, "filter"), "thread")));
	assert_true(json_is_null(get(get(j, "filter"), "tid")));
	assert_true(json_is_null(get(get(j, "filter"), "region")));
	f = get(j, "functions");
	assert_int_equal(json_array_size(f), 6);
	r = json_array_get(f, 0);
	assert_string_equal(json_string_value(get(r, "function")), "work_a");
	assert_string_equal(json_string_value(get(r, "module")), "prog");
	assert_string_equal(json_string_value(get(r, "module_path")), "/usr/bin/prog");
	assert_string_equal(json_string_value(get(r, "file")), "/src/a.c");
	assert_int_equal(json_integer_value(get(r, "line")), 12);
	assert_int_equal(json_integer_value(get(r, "self")), 60);
	assert_int_equal(json_integer_value(get(r, "total")), 60);
	assert_true(json_real_value(get(r, "self_pct")) == 75.0);
	assert_true(json_real_value(get(r, "total_pct")) == 75.0);
	r = json_array_get(f, 1);
	assert_true(json_real_value(get(r, "self_pct")) == 25.0);
	r = json_array_get(f, 4);
	assert_string_equal(json_string_value(get(r, "function")), "solve");
	assert_true(json_is_null(get(r, "file")));
	assert_true(json_is_null(get(r, "line")));
	json_decref(j);

	o.min_pct = 20;
	j = report_json(ks_report_tree, &p, o);
	assert_string_equal(json_string_value(get(j, "report")), "tree");
	assert_true(json_real_value(get(j, "min_pct")) == 20.0);
	assert_int_equal(json_integer_value(get(j, "max_depth")), 0);
	assert_true(json_is_null(get(j, "more")));
	r = get(j, "roots");
	assert_int_equal(json_array_size(r), 2);
	r = json_array_get(r, 0);
	assert_string_equal(json_string_value(get(r, "function")), "main");
	assert_int_equal(json_integer_value(get(r, "line")), 10);
	assert_int_equal(json_integer_value(get(r, "total")), 40);
	assert_true(json_real_value(get(r, "total_pct")) == 50.0);
	c = get(r, "children");
	assert_int_equal(json_array_size(c), 1);
	assert_string_equal(json_string_value(get(json_array_get(c, 0), "function")),
			    "solve");
	assert_string_equal(json_string_value(get(json_array_get(c, 0), "module")),
			    "[region]");
	r = get(r, "more");
	assert_int_equal(json_integer_value(get(r, "nodes")), 1);
	assert_int_equal(json_integer_value(get(r, "total")), 10);
	assert_int_equal(json_integer_value(get(r, "self")), 10);
	assert_true(json_real_value(get(r, "total_pct")) == 12.5);
	assert_true(json_real_value(get(r, "self_pct")) == 12.5);
	json_decref(j);

	o.min_pct = 0;
	o.thread = 1;
	j = report_json(ks_report_threads, &p, o);
	assert_string_equal(json_string_value(get(j, "report")), "threads");
	assert_int_equal(json_integer_value(get(get(j, "filter"), "thread")), 1);
	assert_int_equal(json_integer_value(get(get(j, "filter"), "tid")), 1001);
	r = get(j, "rows");
	assert_int_equal(json_array_size(r), 1);
	r = json_array_get(r, 0);
	assert_int_equal(json_integer_value(get(r, "index")), 1);
	assert_int_equal(json_integer_value(get(r, "tid")), 1001);
	assert_int_equal(json_integer_value(get(r, "pid")), 1000);
	assert_true(json_is_null(get(r, "rank")));
	assert_string_equal(json_string_value(get(r, "name")), "worker");
	assert_int_equal(json_integer_value(get(r, "samples")), 40);
	assert_true(json_real_value(get(r, "share_pct")) == 100.0);
	assert_true(json_real_value(get(r, "cpu_s")) == 1.25);
	assert_true(json_real_value(get(r, "wall_s")) == 2.0);
	json_decref(j);
	ks_profile_free(&p);
}

/* Names from a program need not be UTF-8 (a path in Latin-1, a thread
 * name of raw bytes); the JSON reports show each such byte as the
 * character with its value instead of failing. */
static void test_json_not_utf8(void **state)
{
	struct ks_report_opts o = opts();
	struct ks_profile p;
	struct ks_pprocess *pr;
	struct ks_pthread *th;
	struct ks_err e;
	uint64_t ts = 0;
	uint32_t fr;
	json_t *j, *r;

	(void)state;
	assert_int_equal(ks_profile_init(&p, &e), 0);
	fr = frame(&p, "work", "/src/caf\xe9.c", 3, "/opt/caf\xe9/prog", 0x1000);
	pr = ks_profile_push(&p, processes);
	assert_non_null(pr);
	pr->pid = 10;
	pr->rank = -1;
	pr->command = S(&p, "prog");
	th = ks_profile_push(&p, threads);
	assert_non_null(th);
	th->process = 0;
	th->tid = 10;
	th->name = S(&p, "w\xe9\xff");
	add_samples(&p, 0, path(&p, fr, KS_NONE), 5, &ts, false);

	j = report_json(ks_report_flat, &p, o);
	r = json_array_get(get(j, "functions"), 0);
	assert_string_equal(json_string_value(get(r, "module_path")),
			    "/opt/caf\xc3\xa9/prog");
	assert_string_equal(json_string_value(get(r, "module")), "prog");
	assert_string_equal(json_string_value(get(r, "file")), "/src/caf\xc3\xa9.c");
	json_decref(j);
	j = report_json(ks_report_tree, &p, o);
	r = json_array_get(get(j, "roots"), 0);
	assert_string_equal(json_string_value(get(r, "module_path")),
			    "/opt/caf\xc3\xa9/prog");
	json_decref(j);
	j = report_json(ks_report_threads, &p, o);
	r = json_array_get(get(j, "rows"), 0);
	assert_string_equal(json_string_value(get(r, "name")), "w\xc3\xa9\xc3\xbf");
	json_decref(j);
	ks_profile_free(&p);
}

/* A report of a profile read back from the database is the report of the
 * original. */
static void test_report_after_round_trip(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX];
	struct ks_report_opts o = opts();
	struct ks_profile a, b;
	struct ks_err e;
	report_fn fns[] = { ks_report_flat, ks_report_tree, ks_report_threads };
	int rc;

	(void)state;
	build_basic(&a);
	snprintf(path, sizeof(path), "%s/profile.db", dir);
	assert_int_equal(ks_store_write(&a, path, &e), 0);
	assert_int_equal(ks_profile_init(&b, &e), 0);
	assert_int_equal(ks_store_read(path, &b, &e), 0);
	for (int json = 0; json < 2; json++)
		for (size_t i = 0; i < 3; i++) {
			char *x, *y;

			o.json = json;
			x = report(fns[i], &a, &o, &rc, &e);
			assert_int_equal(rc, 0);
			y = report(fns[i], &b, &o, &rc, &e);
			assert_int_equal(rc, 0);
			assert_string_equal(x, y);
			free(x);
			free(y);
		}
	ks_profile_free(&a);
	ks_profile_free(&b);
	ks_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_schema_documented),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_damaged_databases),
		cmocka_unit_test(test_flat),
		cmocka_unit_test(test_recursion_counted_once),
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_overrun_weights),
		cmocka_unit_test(test_header_words),
		cmocka_unit_test(test_clock_columns),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_json_not_utf8),
		cmocka_unit_test(test_report_after_round_trip),
		cmocka_unit_test(test_million_samples),
		cmocka_unit_test(test_killed_writer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
