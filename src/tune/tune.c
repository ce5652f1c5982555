/*
 * kscope tune's search (include/kscope/tune.h): checks everything first
 * (ks_tune_new), then, batch by batch, writes the variants and builds
 * them in parallel, runs the built ones one at a time with no build
 * running, and removes each variant once it is measured (ks_tune_run).
 *
 * Measuring runs alone keeps the machine quiet while a time is taken;
 * batches keep the disk a large space needs bounded.  A configuration
 * whose median so far is more than stop_factor times the best median so
 * far is stopped early, which is also why a --predict ranking is run
 * best first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argcheck.h"
#include "readfile.h"
#include "tune_int.h"

#define BATCH 256             /* configurations built before their runs */
#define MAX_JOBS 1024
#define TAIL_LINES 10
#define MAX_RUNS 1000         /* measured runs of a configuration (stats.c) */

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */

struct cfg {
	enum ks_tune_status status;
	bool selected;             /* to be built (all, or the predicted top) */
	bool built;
	char *message, *output;    /* owned; NULL is "" */
	double *samples;           /* repeat of them */
	size_t runs, program_timed;
	bool cached;               /* the runs came from the cache */
	size_t eval_order;         /* 1-based order taken up; 0: not */
};

struct ks_tune {
	struct ks_tune_opts o;
	const struct ks_tune_space *space;
	struct ks_tune_source source;
	struct ks_tune_cmd build, run, verify;
	int max_measured;          /* measured runs at most per configuration */
	char *src;                 /* the source's absolute path */
	char *srcdir;              /* its directory */
	char *srcname;             /* its file name: the variants' too */
	char *exename;             /* {exe}'s file name */
	int jobs;
	double *pred_us;           /* per configuration, with a model */
	size_t *pred_rank;
	size_t *order;             /* the selected configurations, in the
				    * order they are built and run */
	size_t norder;
	unsigned char *restricted; /* per configuration */
	size_t nrestricted;
	size_t nkept;              /* configurations --restrict keeps: the
				    * first of order (anneal draws from them) */
	unsigned char *sampled;    /* strategy model: per configuration */
	/* Strategy anneal: the grid.  coords[c * nkeys + k] is the index of
	 * configuration c's value of key k among that key's distinct values
	 * (in the order they first appear); grid is a hash table of the
	 * configurations by their coordinates (SIZE_MAX: empty slot). */
	uint32_t *coords;
	size_t *grid;
	size_t grid_size;          /* a power of two, at least twice nconfigs */
	uint32_t *nvalues;         /* per key: its distinct values */
	char *settings;            /* with a cache: the measurement settings */
};

/* One search in progress. */
struct search {
	struct ks_tune *t;
	struct cfg *cfgs;
	int dirfd;                 /* the caller's directory */
	int rootfd;                /* variants-XXXXXX */
	char *root;                /* its path */
	double best_ns;            /* < 0 until a configuration is measured */
	size_t built, build_failed, run_done, run_failed;
	bool stopped;
	double started;            /* ks_tune_now() when the search began */
	bool budget_spent;         /* the time budget is used up */
	struct ks_err cleanup_err; /* the first failed removal */
	size_t evals;              /* configurations taken up so far */
	size_t cached;             /* of them, found in the cache */
	bool cache_warned;         /* a cache entry could not be written */
};

void ks_tune_opts_init(struct ks_tune_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->warmup = 1;
	o->repeat = 5;
	o->jobs = 0;
	o->run_timeout_s = 60;
	o->build_timeout_s = 300;
	o->stop_factor = 3;
	o->top = 3;
	o->stop_fd = -1;
	o->precision = 5;
	o->max_runs = 30;
	o->model_top = 5;
	o->model_sample = 5;
}

const char *ks_tune_status_name(enum ks_tune_status s)
{
	switch (s) {
	case KS_TUNE_OK: return "ok";
	case KS_TUNE_STOPPED: return "stopped early";
	case KS_TUNE_BUILD_FAILED: return "build failed";
	case KS_TUNE_BUILD_TIMEOUT: return "build timed out";
	case KS_TUNE_RUN_FAILED: return "run failed";
	case KS_TUNE_RUN_TIMEOUT: return "run timed out";
	case KS_TUNE_NOT_SELECTED: return "not selected";
	case KS_TUNE_INTERRUPTED: return "interrupted";
	case KS_TUNE_VERIFY_FAILED: return "verify failed";
	case KS_TUNE_RESTRICTED: return "restricted";
	}
	return "?";
}

const char *ks_tune_timing_name(enum ks_tune_timing t)
{
	switch (t) {
	case KS_TUNE_TIMING_NONE: return "-";
	case KS_TUNE_TIMING_PROGRAM: return "program";
	case KS_TUNE_TIMING_WALL: return "wall";
	case KS_TUNE_TIMING_MIXED: return "mixed";
	}
	return "?";
}

static void note(const struct ks_tune *t, enum ks_tune_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void note(const struct ks_tune *t, enum ks_tune_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!t->o.note)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	t->o.note(t->o.arg, level, msg);
}

static void copy_err(const struct ks_err *e, char *err, size_t errsize)
{
	if (err && errsize)
		snprintf(err, errsize, "%s", e->msg);
}

/* ------------------------------------------------------------------ */
/* Checking the input (ks_tune_new)                                    */
/* ------------------------------------------------------------------ */

static int check_numbers(const struct ks_tune_opts *o, struct ks_err *err)
{
	if (!o->src || !o->space || !o->build || !o->run)
		return ks_err_set(err, -EINVAL, "the search needs a source, a space, a "
				  "build command and a run command; missing: %s",
				  !o->src ? "the source" : !o->space ? "the space"
				  : !o->build ? "the build command" : "the run command");
	if (o->warmup < 0 || o->warmup > 1000)
		return ks_err_set(err, -EINVAL, "warm-up runs: %d; accepted: 0 to 1000",
				  o->warmup);
	if (o->repeat < 1 || o->repeat > 1000)
		return ks_err_set(err, -EINVAL, "measured runs: %d; accepted: 1 to 1000",
				  o->repeat);
	if (o->jobs < 0 || o->jobs > MAX_JOBS)
		return ks_err_set(err, -EINVAL, "jobs: %d; accepted: 1 to %d, or 0 for "
				  "the number of CPUs", o->jobs, MAX_JOBS);
	if (!(o->run_timeout_s > 0 && o->run_timeout_s <= 1e6))
		return ks_err_set(err, -EINVAL, "run timeout: %g s; accepted: more than 0 "
				  "and at most 1000000 seconds", o->run_timeout_s);
	if (!(o->build_timeout_s > 0 && o->build_timeout_s <= 1e6))
		return ks_err_set(err, -EINVAL, "build timeout: %g s; accepted: more than "
				  "0 and at most 1000000 seconds", o->build_timeout_s);
	if (!(o->stop_factor == 0 || (o->stop_factor >= 1 && o->stop_factor <= 1000)))
		return ks_err_set(err, -EINVAL, "stop factor: %g; accepted: 0 (never stop "
				  "early) or a number from 1 to 1000", o->stop_factor);
	if (!(o->precision == 0 || (o->precision >= 0.1 && o->precision <= 100)))
		return ks_err_set(err, -EINVAL, "precision: %g%%; accepted: 0 (exactly "
				  "the measured runs asked) or 0.1 to 100 (percent of "
				  "the median)", o->precision);
	if (o->max_runs < 1 || o->max_runs > MAX_RUNS)
		return ks_err_set(err, -EINVAL, "maximum measured runs: %d; accepted: 1 "
				  "to %d", o->max_runs, MAX_RUNS);
	if (o->strategy != KS_TUNE_EXHAUSTIVE && o->strategy != KS_TUNE_RANDOM &&
	    o->strategy != KS_TUNE_ANNEAL && o->strategy != KS_TUNE_MODEL)
		return ks_err_set(err, -EINVAL, "strategy: %d; accepted: exhaustive, "
				  "random, anneal or model", (int)o->strategy);
	if ((o->strategy == KS_TUNE_RANDOM || o->strategy == KS_TUNE_ANNEAL) &&
	    o->predict)
		return ks_err_set(err, -EINVAL, "option --strategy: %s does not go with "
				  "--predict; accepted: --predict with the strategy "
				  "exhaustive (the --top best predicted) or model",
				  o->strategy == KS_TUNE_RANDOM ? "random" : "anneal");
	if (o->strategy == KS_TUNE_MODEL && !o->predict)
		return ks_err_set(err, -EINVAL, "option --strategy: model needs a model; "
				  "accepted: --strategy model with --predict MODEL.kpp");
	if (o->strategy == KS_TUNE_MODEL &&
	    (o->model_top < 1 || o->model_top > KS_TUNE_MAX_CONFIGS))
		return ks_err_set(err, -EINVAL, "option --model-top: %zu; accepted: 1 to "
				  "%d", o->model_top, KS_TUNE_MAX_CONFIGS);
	if (o->strategy == KS_TUNE_MODEL && o->model_sample > KS_TUNE_MAX_CONFIGS)
		return ks_err_set(err, -EINVAL, "option --model-sample: %zu; accepted: 0 "
				  "to %d", o->model_sample, KS_TUNE_MAX_CONFIGS);
	if (o->cache_dir) {
		int rc = ks_tune_cache_check_dir(o->cache_dir, err);

		if (rc)
			return rc;
	}
	if (o->max_evals > KS_TUNE_MAX_CONFIGS)
		return ks_err_set(err, -EINVAL, "maximum evaluations: %zu; accepted: 1 to "
				  "%d, or 0 for no limit", o->max_evals, KS_TUNE_MAX_CONFIGS);
	if (!(o->time_budget_s >= 0 && o->time_budget_s <= 1e7))
		return ks_err_set(err, -EINVAL, "time budget: %g s; accepted: 0 (none) to "
				  "10000000 seconds", o->time_budget_s);
	if (o->nrestrict && !o->restrict_exprs)
		return ks_err_set(err, -EINVAL, "restrict: %zu expressions but no list",
				  o->nrestrict);
	if (o->predict && (o->top < 1 || o->top > KS_TUNE_MAX_CONFIGS))
		return ks_err_set(err, -EINVAL, "top: %zu; accepted: 1 to %d", o->top,
				  KS_TUNE_MAX_CONFIGS);
	return 0;
}

/* The source: read, tunable lines found and tied to the space's keys. */
static int check_source(struct ks_tune *t, struct ks_err *err)
{
	const struct ks_tune_space *s = t->space;
	char *data = NULL, *slash, *dot;
	size_t size = 0;
	int rc;

	t->src = realpath(t->o.src, NULL);
	if (!t->src)
		return ks_err_set(err, -EINVAL, "source '%s': %s", t->o.src, strerror(errno));
	rc = ks_read_file_at(AT_FDCWD, t->src, 0, KS_TUNE_MAX_SOURCE, &data, &size, err);
	if (rc)
		return rc == -ENOMEM ? rc : -EINVAL;
	rc = ks_tune_source_scan(data, size, t->o.src, &t->source, err);
	free(data);
	if (rc)
		return rc;
	for (size_t i = 0; i < t->source.nlines; i++) {
		struct ks_tune_line *l = &t->source.lines[i];

		for (size_t k = 0; k < s->nkeys; k++)
			if (strcmp(s->keys[k], l->key) == 0)
				l->key_index = (long)k;
		if (l->key_index < 0) {
			bool first = true;
			char v[128];

			for (size_t j = 0; j < i; j++)
				if (strcmp(t->source.lines[j].key, l->key) == 0)
					first = false;
			ks_tune_source_value(&t->source, l, v, sizeof(v));
			if (first)
				note(t, KS_TUNE_INFO, "%s:%zu: %s is not in the space: it "
				     "keeps its value %s", t->o.src, l->lineno, l->key, v);
		}
	}
	for (size_t k = 0; k < s->nkeys; k++) {
		bool found = false;

		for (size_t i = 0; i < t->source.nlines; i++)
			if (t->source.lines[i].key_index == (long)k)
				found = true;
		if (!found)
			return ks_err_set(err, -EINVAL, "%s has no tunable line for %s, a key "
					  "of the space; accepted: a line such as '#define "
					  "%s VALUE // tunable' or 'const int %s = VALUE; // "
					  "tunable'", t->o.src, s->keys[k], s->keys[k],
					  s->keys[k]);
	}
	/* The variants' file name and {exe}'s. */
	slash = strrchr(t->src, '/');
	t->srcdir = strndup(t->src, slash == t->src ? 1 : (size_t)(slash - t->src));
	t->srcname = strdup(slash + 1);
	if (!t->srcdir || !t->srcname)
		return ks_err_set(err, -ENOMEM, "out of memory");
	dot = strrchr(t->srcname, '.');
	if (dot && dot != t->srcname)
		t->exename = strndup(t->srcname, (size_t)(dot - t->srcname));
	else if (asprintf(&t->exename, "%s.out", t->srcname) < 0)
		t->exename = NULL;
	if (!t->exename)
		return ks_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* Whether prog (no '/') is an executable file in PATH. */
static bool in_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t len = colon ? (size_t)(colon - path) : strlen(path);
		struct stat st;
		int n = snprintf(buf, sizeof(buf), "%.*s%s%s", (int)len, path,
				 len ? "/" : "", prog);

		if (n > 0 && (size_t)n < sizeof(buf) && stat(buf, &st) == 0 &&
		    S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return true;
		if (!colon)
			break;
		path = colon + 1;
	}
	return false;
}

/* kind: 'b' build, 'r' run, 'v' verify (which need not name {exe}). */
static int check_command(const char *text, const char *what, struct ks_tune_cmd *c,
			 int kind, struct ks_err *err)
{
	bool build = kind == 'b';
	char q[160], prog[160];
	struct stat st;
	int rc;

	rc = ks_tune_cmd_parse(text, what, c, err);
	if (rc)
		return rc;
	ks_quote(q, sizeof(q), text, strlen(text));
	if (build && !c->has[KS_TUNE_PH_SRC])
		return ks_err_set(err, -EINVAL, "%s: '%s' does not name {src}; accepted: a "
				  "command that builds {src} into {exe}, e.g. \"cc -O2 "
				  "{src} -o {exe}\"", what, q);
	if (!c->has[KS_TUNE_PH_EXE] && kind != 'v')
		return ks_err_set(err, -EINVAL, build
				  ? "%s: '%s' does not name {exe}; accepted: a command "
				    "that builds {src} into {exe}, e.g. \"cc -O2 {src} -o "
				    "{exe}\""
				  : "%s: '%s' does not name {exe}; accepted: a command "
				    "that runs the variant {exe}, e.g. \"{exe} 1024\"",
				  what, q);
	if (ks_tune_cmd_word_has_ph(c, 0))
		return 0;
	ks_quote(prog, sizeof(prog), c->words[0], strlen(c->words[0]));
	if (strchr(c->words[0], '/')) {
		if (stat(c->words[0], &st) != 0 || !S_ISREG(st.st_mode) ||
		    access(c->words[0], X_OK) != 0)
			return ks_err_set(err, -EINVAL, "%s: the program '%s' is not an "
					  "executable file; accepted: a program in PATH or "
					  "the path of an executable", what, prog);
	} else if (!in_path(c->words[0])) {
		return ks_err_set(err, -EINVAL, "%s: the program '%s' is not in PATH; "
				  "accepted: a program in PATH or the path of an "
				  "executable", what, prog);
	}
	return 0;
}

static int cpu_count(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && (n = CPU_COUNT(&set)) > 0)
		return n > MAX_JOBS ? MAX_JOBS : n;
	n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (n > MAX_JOBS ? MAX_JOBS : n) : 1;
}

struct pred_key {
	double us;
	size_t c;
};

static int by_prediction(const void *a, const void *b)
{
	const struct pred_key *x = a, *y = b;

	if (x->us != y->us)
		return x->us < y->us ? -1 : 1;
	return x->c < y->c ? -1 : x->c > y->c;
}

static int rank(struct ks_tune *t, struct ks_err *err)
{
	size_t n = t->space->nconfigs;
	bool all_same = true;
	int rc;

	t->order = calloc(n, sizeof(*t->order));
	if (!t->order)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (size_t c = 0; c < n; c++)
		t->order[c] = c;
	t->norder = n;
	if (!t->o.predict)
		return 0;
	t->pred_us = calloc(n, sizeof(*t->pred_us));
	t->pred_rank = calloc(n, sizeof(*t->pred_rank));
	if (!t->pred_us || !t->pred_rank)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = ks_tune_predict(t->o.predict, t->space, t->pred_us, err);
	if (rc)
		return rc;
	{
		struct pred_key *keys = calloc(n, sizeof(*keys));

		if (!keys)
			return ks_err_set(err, -ENOMEM, "out of memory");
		for (size_t c = 0; c < n; c++)
			keys[c] = (struct pred_key){ t->pred_us[c], c };
		qsort(keys, n, sizeof(*keys), by_prediction);
		for (size_t i = 0; i < n; i++)
			t->order[i] = keys[i].c;
		free(keys);
	}
	for (size_t i = 0; i < n; i++) {
		t->pred_rank[t->order[i]] = i + 1;
		if (t->pred_us[i] != t->pred_us[0])
			all_same = false;
	}
	/* select_configs keeps the top after --restrict. */
	if (all_same && n > 1) {
		size_t top = t->o.top < n ? t->o.top : n;

		note(t, KS_TUNE_WARN, "the model predicts the same time (%.3f us) for "
		     "every configuration: its params do not depend on the space's "
		     "integer keys; the first %zu configuration%s of the space %s "
		     "built", t->pred_us[0], top, top == 1 ? "" : "s",
		     top == 1 ? "is" : "are");
	}
	return 0;
}

/* splitmix64: a small generator whose sequence depends on the seed only
 * (so --seed repeats a search on every machine). */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Strategy model: order (the kept configurations, best predicted first)
 * becomes the model_top best, then model_sample of the others drawn with
 * the seed, in predicted order. */
static int select_model(struct ks_tune *t, struct ks_err *err)
{
	const struct ks_tune_opts *o = &t->o;
	size_t top = o->model_top < t->norder ? o->model_top : t->norder;
	size_t rest = t->norder - top, take = o->model_sample < rest ? o->model_sample
								   : rest;
	uint64_t st = o->seed;
	size_t *pool;

	t->sampled = calloc(t->space->nconfigs, 1);
	pool = calloc(rest ? rest : 1, sizeof(*pool));
	if (!t->sampled || !pool) {
		free(pool);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	memcpy(pool, t->order + top, rest * sizeof(*pool));
	/* A partial Fisher-Yates: the first take of pool are the sample. */
	for (size_t i = 0; i < take; i++) {
		size_t j = i + (size_t)(next_random(&st) % (rest - i)), x = pool[i];

		pool[i] = pool[j];
		pool[j] = x;
		t->sampled[pool[i]] = 1;
	}
	free(pool);
	/* The sample, in predicted order after the top. */
	for (size_t i = top, n = top; i < t->norder; i++)
		if (t->sampled[t->order[i]])
			t->order[n++] = t->order[i];
	t->norder = top + take;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Strategy anneal's grid                                              */
/* ------------------------------------------------------------------ */

static uint64_t hash_coords(const uint32_t *v, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= v[i];
		h *= 0x100000001b3ull;
	}
	return h ^ (h >> 29);
}

/* The configuration at coordinates v, or SIZE_MAX when the space has
 * none there. */
static size_t grid_find(const struct ks_tune *t, const uint32_t *v)
{
	size_t nk = t->space->nkeys, mask = t->grid_size - 1;

	for (size_t i = (size_t)hash_coords(v, nk) & mask;; i = (i + 1) & mask) {
		size_t c = t->grid[i];

		if (c == SIZE_MAX)
			return SIZE_MAX;
		if (memcmp(t->coords + c * nk, v, nk * sizeof(*v)) == 0)
			return c;
	}
}

/* Gives every configuration its coordinates: per key, the index of its
 * value among the key's distinct values in the order they first appear
 * (for an object of lists, the list's order). */
static int grid_build(struct ks_tune *t, struct ks_err *err)
{
	const struct ks_tune_space *sp = t->space;
	size_t n = sp->nconfigs, nk = sp->nkeys;
	int rc = 0;

	t->coords = calloc(n * nk, sizeof(*t->coords));
	t->nvalues = calloc(nk, sizeof(*t->nvalues));
	for (t->grid_size = 16; t->grid_size < 2 * n; t->grid_size *= 2)
		;
	t->grid = malloc(t->grid_size * sizeof(*t->grid));
	if (!t->coords || !t->nvalues || !t->grid) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t k = 0; k < nk; k++) {
		/* Distinct values by a hash of their text, as for the grid. */
		size_t mask = t->grid_size - 1;

		for (size_t i = 0; i < t->grid_size; i++)
			t->grid[i] = SIZE_MAX;
		for (size_t c = 0; c < n; c++) {
			const char *v = sp->values[c * nk + k];
			uint64_t h = 0xcbf29ce484222325ull;

			for (const char *p = v; *p; p++)
				h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
			for (size_t i = (size_t)(h ^ (h >> 29)) & mask;; i = (i + 1) & mask) {
				if (t->grid[i] == SIZE_MAX) {
					t->grid[i] = c;
					t->coords[c * nk + k] = t->nvalues[k]++;
					break;
				}
				if (strcmp(sp->values[t->grid[i] * nk + k], v) == 0) {
					t->coords[c * nk + k] = t->coords[t->grid[i] * nk + k];
					break;
				}
			}
		}
	}
	for (size_t i = 0; i < t->grid_size; i++)
		t->grid[i] = SIZE_MAX;
	for (size_t c = 0; c < n; c++) {
		size_t mask = t->grid_size - 1;

		for (size_t i = (size_t)hash_coords(t->coords + c * nk, nk) & mask;;
		     i = (i + 1) & mask) {
			if (t->grid[i] == SIZE_MAX) {
				t->grid[i] = c;
				break;
			}
			/* A configuration listed twice: the first is its point. */
			if (memcmp(t->coords + t->grid[i] * nk, t->coords + c * nk,
				   nk * sizeof(*t->coords)) == 0)
				break;
		}
	}
out:
	return rc;
}

/* After rank(): drops the configurations a restrict expression excludes
 * (keeping the order), then applies the strategy and max_evals. */
static int select_configs(struct ks_tune *t, struct ks_err *err)
{
	const struct ks_tune_opts *o = &t->o;
	size_t n = t->space->nconfigs, kept = 0;
	int rc;

	t->restricted = calloc(n, 1);
	if (!t->restricted)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (size_t c = 0; c < n; c++) {
		for (size_t i = 0; i < o->nrestrict && !t->restricted[c]; i++) {
			bool keep;

			rc = ks_tune_restrict_eval(o->restrict_exprs[i], t->space, c, &keep,
						   err);
			if (rc)
				return rc;
			t->restricted[c] = !keep;
			if (!keep)
				t->nrestricted++;
		}
	}
	for (size_t i = 0; i < t->norder; i++)
		if (!t->restricted[t->order[i]])
			t->order[kept++] = t->order[i];
	t->norder = kept;
	t->nkept = kept;
	if (o->strategy == KS_TUNE_ANNEAL) {
		/* The order is decided as the search goes (anneal_search);
		 * norder is how many it may take up. */
		size_t budget = o->max_evals ? o->max_evals : KS_TUNE_ANNEAL_DEFAULT_EVALS;

		if (t->norder > budget)
			t->norder = budget;
		goto out;
	}
	if (o->strategy == KS_TUNE_MODEL) {
		rc = select_model(t, err);
		if (rc)
			return rc;
	}
	if (o->strategy == KS_TUNE_RANDOM) {
		uint64_t st = o->seed;

		/* Fisher-Yates over the kept configurations, in space order. */
		for (size_t i = t->norder; i > 1; i--) {
			size_t j = (size_t)(next_random(&st) % i), x = t->order[i - 1];

			t->order[i - 1] = t->order[j];
			t->order[j] = x;
		}
	}
	if (o->predict && o->strategy == KS_TUNE_EXHAUSTIVE && t->norder > o->top)
		t->norder = o->top;
	if (o->max_evals && t->norder > o->max_evals)
		t->norder = o->max_evals;
out:
	if (o->nrestrict && t->norder == 0)
		note(t, KS_TUNE_WARN, "--restrict excludes every configuration of the "
		     "space: nothing is built");
	return 0;
}

static int tune_new(const struct ks_tune_opts *o, struct ks_tune *t, struct ks_err *err)
{
	int rc;

	if ((rc = check_numbers(o, err)) || (rc = ks_tune_space_check(o->space, err)))
		return rc;
	if ((rc = check_source(t, err)) ||
	    (rc = check_command(o->build, "option --build", &t->build, 'b', err)) ||
	    (rc = check_command(o->run, "option --run", &t->run, 'r', err)) ||
	    (o->verify &&
	     (rc = check_command(o->verify, "option --verify", &t->verify, 'v', err))))
		return rc;
	t->max_measured = o->precision > 0 && o->max_runs > o->repeat ? o->max_runs
								       : o->repeat;
	t->jobs = o->jobs > 0 ? o->jobs : cpu_count();
	if ((rc = rank(t, err)))
		return rc;
	if (o->strategy == KS_TUNE_ANNEAL && (rc = grid_build(t, err)))
		return rc;
	if (o->cache_dir &&
	    asprintf(&t->settings, "warmup %d repeat %d precision %g max_runs %d",
		     o->warmup, o->repeat, o->precision, t->max_measured) < 0) {
		t->settings = NULL;
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	return select_configs(t, err);
}

int ks_tune_new(const struct ks_tune_opts *o, struct ks_tune **out, char *err,
		size_t errsize)
{
	struct ks_tune *t = calloc(1, sizeof(*t));
	struct ks_err e;
	int rc;

	*out = NULL;
	ks_err_clear(&e);
	if (!t) {
		ks_err_set(&e, -ENOMEM, "out of memory");
		copy_err(&e, err, errsize);
		return -ENOMEM;
	}
	t->o = *o;
	t->space = o->space;
	rc = tune_new(o, t, &e);
	if (rc) {
		copy_err(&e, err, errsize);
		ks_tune_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

size_t ks_tune_selected(const struct ks_tune *t)
{
	return t->norder;
}

void ks_tune_free(struct ks_tune *t)
{
	if (!t)
		return;
	ks_tune_source_free(&t->source);
	ks_tune_cmd_free(&t->build);
	ks_tune_cmd_free(&t->run);
	ks_tune_cmd_free(&t->verify);
	free(t->src);
	free(t->srcdir);
	free(t->srcname);
	free(t->exename);
	free(t->pred_us);
	free(t->pred_rank);
	free(t->order);
	free(t->restricted);
	free(t->sampled);
	free(t->coords);
	free(t->grid);
	free(t->nvalues);
	free(t->settings);
	free(t);
}

/* ------------------------------------------------------------------ */
/* The search                                                          */
/* ------------------------------------------------------------------ */

static bool stop_requested(const struct search *s)
{
	struct pollfd pf = { .fd = s->t->o.stop_fd, .events = POLLIN };

	return s->t->o.stop_fd >= 0 && poll(&pf, 1, 0) > 0 && (pf.revents & POLLIN);
}

/* Whether the time budget is used up (then nothing new is started). */
static bool out_of_time(struct search *s)
{
	if (s->t->o.time_budget_s > 0 && !s->budget_spent &&
	    ks_tune_now() - s->started >= s->t->o.time_budget_s) {
		s->budget_spent = true;
		note(s->t, KS_TUNE_INFO, "the time budget of %g s is spent: the "
		     "configurations not measured yet are not selected",
		     s->t->o.time_budget_s);
	}
	return s->budget_spent;
}

static void set_text(char **dst, const char *text)
{
	free(*dst);
	*dst = strdup(text);
}

static void progress(const struct search *s, const char *phase, size_t done,
		     size_t total, size_t c, int run, int runs)
{
	const struct ks_tune *t = s->t;
	struct ks_tune_progress p;
	char label[256] = "";

	if (!t->o.progress)
		return;
	if (run > 0)
		ks_tune_space_label(t->space, c, label, sizeof(label));
	memset(&p, 0, sizeof(p));
	p.phase = phase;
	p.done = done;
	p.total = total;
	p.failed = s->build_failed + s->run_failed;
	p.config = c;
	p.label = label;
	p.run = run;
	p.runs = runs;
	p.best_ns = s->best_ns;
	t->o.progress(t->o.arg, &p);
}

static void variant_name(size_t c, char *buf, size_t size)
{
	snprintf(buf, size, "c%zu", c);
}

/* The placeholders' values for configuration c (paths into bufs). */
static void placeholders(const struct search *s, size_t c, char bufs[3][PATH_MAX],
			 const char *vals[KS_TUNE_PH_COUNT])
{
	char name[32];

	variant_name(c, name, sizeof(name));
	snprintf(bufs[0], PATH_MAX, "%s/%s/%s", s->root, name, s->t->srcname);
	snprintf(bufs[1], PATH_MAX, "%s/%s/%s", s->root, name, s->t->exename);
	snprintf(bufs[2], PATH_MAX, "%s/%s", s->root, name);
	vals[KS_TUNE_PH_SRC] = bufs[0];
	vals[KS_TUNE_PH_EXE] = bufs[1];
	vals[KS_TUNE_PH_DIR] = bufs[2];
	vals[KS_TUNE_PH_SRCDIR] = s->t->srcdir;
}

static void remove_variant(struct search *s, size_t c)
{
	char name[32];
	struct ks_err e;

	variant_name(c, name, sizeof(name));
	ks_err_clear(&e);
	if (ks_tune_files_remove(s->rootfd, name, &e) && !s->cleanup_err.code)
		s->cleanup_err = e;
}

/* How much a line says about a failure: a compiler's "error:" line
 * most, then any mention of an error, then anything else. */
static int line_score(const char *p, size_t len)
{
	if (memmem(p, len, "error:", 6) || memmem(p, len, "Error:", 6))
		return 2;
	return memmem(p, len, "error", 5) || memmem(p, len, "Error", 5) ? 1 : 0;
}

/* The line of output that says most about a failure, for a note: the
 * last of the best score (a compiler's caret lines come after its
 * message), without leading blanks and the variant's directory prefix
 * (so "planted.c:23:2: error: ..." remains), control bytes as '?', cut
 * at a character boundary to fit size. */
static void telling_line(const char *output, const char *prefix, char *buf, size_t size)
{
	size_t plen = strlen(prefix), o = 0;
	const char *best = NULL, *best_end = NULL, *p = output;
	int best_score = -1;

	while (p && *p) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int sc = line_score(p, len);

		if (sc >= best_score) {
			best = p;
			best_end = p + len;
			best_score = sc;
		}
		p = end ? end + 1 : NULL;
	}
	buf[0] = '\0';
	if (!best || size < 4)
		return;
	while (best < best_end && (*best == ' ' || *best == '\t'))
		best++;
	if ((size_t)(best_end - best) > plen && memcmp(best, prefix, plen) == 0)
		best += plen;
	for (; best < best_end && o + 1 < size; best++)
		buf[o++] = (unsigned char)*best < 0x20 || *best == 0x7f ? '?' : *best;
	if (best < best_end) {
		/* Cut: end on a whole UTF-8 character, then "...". */
		o = o > 3 ? o - 3 : 0;
		while (o > 0 && ((unsigned char)buf[o] & 0xc0) == 0x80)
			o--;
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

/* The failure of configuration c: its row, and a note. */
static void fail(struct search *s, size_t c, enum ks_tune_status status,
		 const char *message, const char *output)
{
	struct cfg *f = &s->cfgs[c];
	char label[256], line[240], prefix[PATH_MAX], name[32];

	f->status = status;
	set_text(&f->message, message);
	set_text(&f->output, output ? output : "");
	ks_tune_space_label(s->t->space, c, label, sizeof(label));
	variant_name(c, name, sizeof(name));
	snprintf(prefix, sizeof(prefix), "%s/%s/", s->root, name);
	telling_line(output, prefix, line, sizeof(line));
	note(s->t, KS_TUNE_WARN, "%s: %s: %s%s%s", label, ks_tune_status_name(status),
	     message, line[0] ? ": " : "", line);
}

/* ------------------------------------------------------------------ */
/* The cache                                                           */
/* ------------------------------------------------------------------ */

static void cache_key(const struct ks_tune *t, size_t c, char hex[65])
{
	struct ks_tune_cache_inputs in = {
		.src = t->source.data, .srclen = t->source.size, .build = t->o.build,
		.run = t->o.run, .verify = t->o.verify, .settings = t->settings,
	};

	ks_tune_cache_key(&in, t->space, c, hex);
}

/* Whether configuration c's result is in the cache: then it is taken
 * from there, and c is neither built nor run. */
static bool from_cache(struct search *s, size_t c)
{
	const struct ks_tune *t = s->t;
	struct cfg *f = &s->cfgs[c];
	struct ks_tune_cache_entry e;
	struct ks_err err;
	char key[65], label[256];
	double med;
	int rc;

	if (!t->o.cache_dir)
		return false;
	cache_key(t, c, key);
	ks_err_clear(&err);
	rc = ks_tune_cache_load(t->o.cache_dir, key, &e, &err);
	if (rc == -ENOENT)
		return false;
	if (rc) {
		ks_tune_space_label(t->space, c, label, sizeof(label));
		note(t, KS_TUNE_WARN, "%s: the cache's entry is not used (%s): it is "
		     "measured again", label, err.msg);
		return false;
	}
	free(f->samples);
	free(f->message);
	f->samples = e.samples;
	f->message = e.message;
	f->runs = e.runs;
	f->program_timed = e.program_timed;
	f->status = e.stopped ? KS_TUNE_STOPPED : KS_TUNE_OK;
	f->cached = true;
	med = ks_tune_percentile(f->samples, f->runs, 50);
	if (s->best_ns < 0 || med < s->best_ns)
		s->best_ns = med;
	s->cached++;
	s->run_done++;
	return true;
}

/* Keeps measured configuration c's runs in the cache. */
static void to_cache(struct search *s, size_t c)
{
	const struct ks_tune *t = s->t;
	const struct cfg *f = &s->cfgs[c];
	struct ks_tune_cache_entry e = {
		.stopped = f->status == KS_TUNE_STOPPED, .runs = f->runs,
		.samples = f->samples, .program_timed = f->program_timed,
		.message = f->message,
	};
	struct ks_err err;
	char key[65];

	if (!t->o.cache_dir || f->cached || f->runs == 0)
		return;
	cache_key(t, c, key);
	ks_err_clear(&err);
	if (ks_tune_cache_store(t->o.cache_dir, key, &e, &err) && !s->cache_warned) {
		s->cache_warned = true;
		note(t, KS_TUNE_WARN, "the cache: %s (the search goes on; results "
		     "that cannot be kept are measured again next time)", err.msg);
	}
}

/* Writes configuration c's variant and starts its build. */
static void start_build(struct search *s, size_t c, struct ks_tune_proc *p)
{
	const struct ks_tune *t = s->t;
	char bufs[3][PATH_MAX], name[32];
	const char *vals[KS_TUNE_PH_COUNT];
	char *text = NULL, **argv = NULL;
	size_t len = 0;
	struct ks_err e;

	ks_err_clear(&e);
	memset(p, 0, sizeof(*p));
	p->pidfd = p->outfd = p->errfd = -1;
	p->tag = c;
	variant_name(c, name, sizeof(name));
	placeholders(s, c, bufs, vals);
	if (ks_tune_source_variant(&t->source, t->space, c, &text, &len) != 0 ||
	    !(argv = ks_tune_cmd_expand(&t->build, vals))) {
		ks_err_set(&e, -ENOMEM, "out of memory");
	} else if (ks_tune_files_variant(s->rootfd, name, t->srcname, text, len, &e) == 0) {
		ks_tune_proc_start(p, argv, true, t->o.build_timeout_s, &e);
	}
	if (e.code) {
		/* Not this configuration's fault, but it cannot be built. */
		p->done = true;
		fail(s, c, KS_TUNE_BUILD_FAILED, e.msg, "");
		remove_variant(s, c);
	}
	p->tag = c;
	free(text);
	ks_tune_argv_free(argv);
}

/* A finished build: the configuration is built, or failed. */
static void end_build(struct search *s, struct ks_tune_proc *p)
{
	const struct ks_tune *t = s->t;
	size_t c = p->tag;
	char msg[512], tail[KS_TUNE_TAIL], path[64 + NAME_MAX];
	struct stat st;

	if (s->cfgs[c].message) {
		/* start_build already failed it. */
		s->build_failed++;
		return;
	}
	ks_tune_proc_tail(p, TAIL_LINES, tail, sizeof(tail));
	if (ks_tune_proc_ok(p)) {
		variant_name(c, path, sizeof(path));
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s",
			 t->exename);
		if (fstatat(s->rootfd, path, &st, 0) == 0 && S_ISREG(st.st_mode) &&
		    faccessat(s->rootfd, path, X_OK, 0) == 0) {
			s->cfgs[c].built = true;
			s->built++;
			return;
		}
		snprintf(msg, sizeof(msg), "the build succeeded but wrote no executable "
			 "{exe} (%s/%s)", s->root, path);
		fail(s, c, KS_TUNE_BUILD_FAILED, msg, tail);
	} else {
		ks_tune_proc_describe(p, t->build.words[0], t->o.build_timeout_s, msg,
				      sizeof(msg));
		fail(s, c, p->timed_out ? KS_TUNE_BUILD_TIMEOUT : KS_TUNE_BUILD_FAILED, msg,
		     tail);
	}
	s->build_failed++;
	remove_variant(s, c);
}

/* Builds the batch's configurations, jobs at a time. */
static void build_batch(struct search *s, const size_t *batch, size_t n)
{
	const struct ks_tune *t = s->t;
	size_t nprocs = (size_t)t->jobs < n ? (size_t)t->jobs : n, next = 0, running = 0;
	struct ks_tune_proc *procs = calloc(nprocs, sizeof(*procs));
	struct ks_tune_proc **ptrs = calloc(nprocs, sizeof(*ptrs));
	bool *busy = calloc(nprocs, sizeof(*busy));

	if (!procs || !ptrs || !busy) {
		for (size_t i = 0; i < n; i++)
			fail(s, batch[i], KS_TUNE_BUILD_FAILED, "out of memory", "");
		s->build_failed += n;
		goto out;
	}
	for (size_t i = 0; i < nprocs; i++) {
		procs[i].done = true; /* a free slot: ks_tune_proc_wait skips it */
		procs[i].pidfd = procs[i].outfd = procs[i].errfd = -1;
		ptrs[i] = &procs[i];
	}
	while (next < n || running > 0) {
		bool stopped = false;
		size_t i = 0;

		/* Fill the free slots. */
		while (i < nprocs && next < n) {
			if (busy[i]) {
				i++;
				continue;
			}
			if (stop_requested(s)) {
				s->stopped = true;
				break;
			}
			if (out_of_time(s))
				break;
			if (!s->cfgs[batch[next]].eval_order)
				s->cfgs[batch[next]].eval_order = ++s->evals;
			if (from_cache(s, batch[next])) {
				next++;
				progress(s, "build", s->built + s->build_failed + s->cached,
					 t->norder, 0, 0, 0);
				continue;
			}
			start_build(s, batch[next++], &procs[i]);
			if (procs[i].done) {
				/* It could not start: the slot stays free. */
				end_build(s, &procs[i]);
				progress(s, "build", s->built + s->build_failed, t->norder,
					 0, 0, 0);
				continue;
			}
			busy[i] = true;
			running++;
		}
		if (s->stopped || running == 0)
			break;
		ks_tune_proc_wait(ptrs, nprocs, t->o.stop_fd, &stopped);
		if (stopped) {
			s->stopped = true;
			break;
		}
		for (i = 0; i < nprocs; i++) {
			if (!busy[i] || !procs[i].done)
				continue;
			end_build(s, &procs[i]);
			busy[i] = false;
			running--;
			progress(s, "build", s->built + s->build_failed, t->norder, 0, 0, 0);
		}
	}
	if (s->stopped) {
		/* Kill what is building; those configurations were not measured. */
		for (size_t i = 0; i < nprocs; i++)
			if (busy[i]) {
				ks_tune_proc_kill(&procs[i]);
				remove_variant(s, procs[i].tag);
			}
	}
out:
	free(procs);
	free(ptrs);
	free(busy);
}

/* The environment of a verify command: kscope's, with KSCOPE_TUNE_*
 * variables first (they win over inherited ones of the same name).
 * NULL-terminated, malloc'd, freed with ks_tune_argv_free; NULL when out
 * of memory. */
static char **verify_env(const struct search *s, size_t c, const char *out_path,
			 const char *const vals[KS_TUNE_PH_COUNT])
{
	extern char **environ;
	const struct ks_tune_space *sp = s->t->space;
	size_t n = 0, i = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + sp->nkeys + 6, sizeof(*env));
	if (!env)
		return NULL;
	if (asprintf(&env[i++], "KSCOPE_TUNE_STDOUT=%s", out_path) < 0 ||
	    asprintf(&env[i++], "KSCOPE_TUNE_EXE=%s", vals[KS_TUNE_PH_EXE]) < 0 ||
	    asprintf(&env[i++], "KSCOPE_TUNE_DIR=%s", vals[KS_TUNE_PH_DIR]) < 0 ||
	    asprintf(&env[i++], "KSCOPE_TUNE_CONFIG=%zu", c) < 0)
		goto fail;
	for (size_t k = 0; k < sp->nkeys; k++)
		if (asprintf(&env[i++], "KSCOPE_TUNE_PARAM_%s=%s", sp->keys[k],
			     sp->values[c * sp->nkeys + k]) < 0)
			goto fail;
	for (size_t e = 0; e < n; e++) {
		if (strncmp(environ[e], "KSCOPE_TUNE_", 12) == 0)
			continue;
		if (!(env[i++] = strdup(environ[e])))
			goto fail;
	}
	return env;
fail:
	/* asprintf leaves its pointer undefined on failure: clear it. */
	env[i - 1] = NULL;
	ks_tune_argv_free(env);
	return NULL;
}

/* Runs the verify command on configuration c's first run, whose stdout
 * is in out_path.  Returns false, with c failed, when it does not pass
 * (or the search was stopped: c is interrupted then). */
static bool verify_config(struct search *s, size_t c, const char *out_path,
			  bool save_failed, const char *const vals[KS_TUNE_PH_COUNT])
{
	const struct ks_tune *t = s->t;
	struct cfg *f = &s->cfgs[c];
	char **argv = ks_tune_cmd_expand(&t->verify, vals), **env = verify_env(s, c,
									 out_path, vals);
	char msg[KS_ERR_MSG_MAX + 64], desc[400], tail[KS_TUNE_TAIL];
	struct ks_tune_proc p;
	struct ks_err e;
	bool stopped = false, ok = false;

	ks_err_clear(&e);
	if (!argv || !env) {
		fail(s, c, KS_TUNE_VERIFY_FAILED, "verify: out of memory", "");
		goto out;
	}
	if (save_failed) {
		fail(s, c, KS_TUNE_VERIFY_FAILED, "verify: the run's stdout could not "
		     "be saved", "");
		goto out;
	}
	if (ks_tune_proc_start_env(&p, argv, true, t->o.run_timeout_s, env, -1, &e)) {
		snprintf(msg, sizeof(msg), "verify: %s", e.msg);
		fail(s, c, KS_TUNE_VERIFY_FAILED, msg, "");
		goto out;
	}
	if (!p.done)
		ks_tune_proc_wait((struct ks_tune_proc *[]){ &p }, 1, t->o.stop_fd,
				  &stopped);
	if (stopped) {
		ks_tune_proc_kill(&p);
		f->status = KS_TUNE_INTERRUPTED;
		s->stopped = true;
		goto out;
	}
	if (!ks_tune_proc_ok(&p)) {
		ks_tune_proc_describe(&p, argv[0], t->o.run_timeout_s, desc, sizeof(desc));
		ks_tune_proc_tail(&p, TAIL_LINES, tail, sizeof(tail));
		snprintf(msg, sizeof(msg), "verify: %s", desc);
		fail(s, c, KS_TUNE_VERIFY_FAILED, msg, tail);
		goto out;
	}
	ok = true;
out:
	ks_tune_argv_free(argv);
	ks_tune_argv_free(env);
	return ok;
}

/* Whether configuration c's samples have reached the precision: the
 * median's 95% interval at most precision percent of the median wide. */
static bool precise_enough(const struct ks_tune *t, const struct cfg *f)
{
	double lo, hi, med;

	if (t->o.precision <= 0)
		return true;
	ks_tune_median_ci(f->samples, f->runs, &lo, &hi);
	med = ks_tune_percentile(f->samples, f->runs, 50);
	return hi - lo <= t->o.precision / 100 * med;
}

/* Runs configuration c: warmup runs, then measured runs until there are
 * repeat of them and, with a precision, until the median's interval is
 * narrow enough or max_runs are done; unless it fails (verification
 * included, after the first run), is stopped early or the search is
 * stopped. */
static void run_config(struct search *s, size_t c)
{
	const struct ks_tune *t = s->t;
	struct cfg *f = &s->cfgs[c];
	int total = t->o.warmup + t->max_measured;
	char bufs[3][PATH_MAX], msg[KS_ERR_MSG_MAX + 64], desc[400], tail[KS_TUNE_TAIL];
	char out_path[PATH_MAX + 16], label[256], of[32];
	const char *vals[KS_TUNE_PH_COUNT];
	char **argv;

	/* "6", or "6 to 31" when the precision decides. */
	if (t->max_measured > t->o.repeat)
		snprintf(of, sizeof(of), "%d to %d", t->o.warmup + t->o.repeat, total);
	else
		snprintf(of, sizeof(of), "%d", total);
	placeholders(s, c, bufs, vals);
	snprintf(out_path, sizeof(out_path), "%s/run1.stdout", bufs[2]);
	argv = ks_tune_cmd_expand(&t->run, vals);
	f->samples = calloc((size_t)t->max_measured, sizeof(*f->samples));
	if (!argv || !f->samples) {
		fail(s, c, KS_TUNE_RUN_FAILED, "out of memory", "");
		s->run_failed++;
		ks_tune_argv_free(argv);
		return;
	}
	f->status = KS_TUNE_OK;
	for (int i = 0; i < total; i++) {
		struct ks_tune_proc p;
		struct ks_err e;
		bool stopped = false, verify = i == 0 && t->o.verify;
		int save_fd = -1, rc;
		double ns;

		progress(s, "run", s->run_done + s->run_failed,
			 t->norder - s->build_failed, c, i + 1, total);
		ks_err_clear(&e);
		if (verify) {
			save_fd = open(out_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
			if (save_fd < 0) {
				snprintf(msg, sizeof(msg), "verify: cannot create the file "
					 "for the run's stdout in {dir}: %s", strerror(errno));
				fail(s, c, KS_TUNE_VERIFY_FAILED, msg, "");
				break;
			}
		}
		rc = ks_tune_proc_start_env(&p, argv, false, t->o.run_timeout_s, NULL,
					    save_fd, &e);
		if (rc != 0) {
			if (save_fd >= 0)
				close(save_fd);
			snprintf(msg, sizeof(msg), "run %d of %s: %s", i + 1, of, e.msg);
			fail(s, c, KS_TUNE_RUN_FAILED, msg, "");
			break;
		}
		if (!p.done)
			ks_tune_proc_wait((struct ks_tune_proc *[]){ &p }, 1, t->o.stop_fd,
					  &stopped);
		if (save_fd >= 0)
			close(save_fd);
		if (stopped) {
			ks_tune_proc_kill(&p);
			f->status = KS_TUNE_INTERRUPTED;
			s->stopped = true;
			break;
		}
		if (!ks_tune_proc_ok(&p)) {
			ks_tune_proc_describe(&p, argv[0], t->o.run_timeout_s, desc, sizeof(desc));
			ks_tune_proc_tail(&p, TAIL_LINES, tail, sizeof(tail));
			snprintf(msg, sizeof(msg), "run %d of %s: %s", i + 1, of, desc);
			fail(s, c, p.timed_out ? KS_TUNE_RUN_TIMEOUT : KS_TUNE_RUN_FAILED,
			     msg, tail);
			break;
		}
		if (p.bad_time) {
			ks_tune_proc_tail(&p, TAIL_LINES, tail, sizeof(tail));
			snprintf(msg, sizeof(msg), "run %d of %s: the line '%s' is not a "
				 "time; accepted: KSCOPE_TIME_NS= followed by a whole "
				 "number of nanoseconds", i + 1, of, p.bad_line);
			fail(s, c, KS_TUNE_RUN_FAILED, msg, tail);
			break;
		}
		/* A wrong result is never measured, so it can neither win nor
		 * stop a right one early. */
		if (verify && !verify_config(s, c, out_path, p.save_failed, vals))
			break;
		if (i < t->o.warmup)
			continue;
		ns = p.have_time ? (double)p.time_ns : (p.ended - p.started) * 1e9;
		f->samples[f->runs++] = ns;
		if (p.have_time)
			f->program_timed++;
		if (t->o.stop_factor > 0 && s->best_ns >= 0 &&
		    f->runs < (size_t)t->max_measured) {
			double med = ks_tune_percentile(f->samples, f->runs, 50);

			if (med > t->o.stop_factor * s->best_ns) {
				f->status = KS_TUNE_STOPPED;
				snprintf(msg, sizeof(msg), "after %zu of %d measured runs: "
					 "median %.0f ns > %g x the best %.0f ns", f->runs,
					 t->max_measured, med, t->o.stop_factor, s->best_ns);
				set_text(&f->message, msg);
				ks_tune_space_label(t->space, c, label, sizeof(label));
				/* Said out loud: a noisy first run can stop a
				 * configuration that would have won. */
				note(t, f->runs < 3 ? KS_TUNE_WARN : KS_TUNE_INFO,
				     "%s: stopped early %s%s", label, msg, f->runs < 3
				     ? " (few runs: noise may have stopped it; "
				       "--stop-factor 0 measures every configuration)" : "");
				break;
			}
		}
		if (f->runs >= (size_t)t->o.repeat && precise_enough(t, f))
			break;
	}
	ks_tune_argv_free(argv);
	if (f->status == KS_TUNE_OK && t->o.precision > 0 && !precise_enough(t, f)) {
		double lo, hi, med = ks_tune_percentile(f->samples, f->runs, 50);

		ks_tune_median_ci(f->samples, f->runs, &lo, &hi);
		snprintf(msg, sizeof(msg), "imprecise: the median's 95%% interval is %.1f%% "
			 "of the median wide after %zu runs (precision %g%%, at most %d "
			 "runs)", med > 0 ? 100 * (hi - lo) / med : 0.0, f->runs,
			 t->o.precision, t->max_measured);
		set_text(&f->message, msg);
		ks_tune_space_label(t->space, c, label, sizeof(label));
		note(t, KS_TUNE_INFO, "%s: %s", label, msg);
	}
	if (f->status == KS_TUNE_OK || f->status == KS_TUNE_STOPPED) {
		double med = ks_tune_percentile(f->samples, f->runs, 50);

		if (s->best_ns < 0 || med < s->best_ns)
			s->best_ns = med;
		s->run_done++;
		to_cache(s, c);
	} else if (f->status != KS_TUNE_INTERRUPTED) {
		s->run_failed++;
	}
	progress(s, "run", s->run_done + s->run_failed, t->norder - s->build_failed, c,
		 0, 0);
}

static void run_batch(struct search *s, const size_t *batch, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t c = batch[i];

		if (!s->cfgs[c].built)
			continue;
		if (!s->stopped && stop_requested(s))
			s->stopped = true;
		if (!s->stopped && !out_of_time(s))
			run_config(s, c);
		remove_variant(s, c);
	}
}

/* ------------------------------------------------------------------ */
/* Strategy anneal                                                     */
/* ------------------------------------------------------------------ */

/* A configuration's energy: its median, or infinity when it failed. */
static double energy(const struct search *s, size_t c)
{
	const struct cfg *f = &s->cfgs[c];

	if (f->status == KS_TUNE_OK || f->status == KS_TUNE_STOPPED)
		return ks_tune_percentile(f->samples, f->runs, 50);
	return INFINITY;
}

/* Takes up configuration c: from the cache, or built and run. */
static void evaluate(struct search *s, size_t c)
{
	s->cfgs[c].status = KS_TUNE_INTERRUPTED;
	s->cfgs[c].selected = true;
	build_batch(s, &c, 1);
	run_batch(s, &c, 1);
}

/* A configuration --restrict keeps that was not taken up yet, drawn with
 * rng; SIZE_MAX when none is left. */
static size_t fresh_point(const struct search *s, uint64_t *rng)
{
	const struct ks_tune *t = s->t;
	size_t left = t->nkept - s->evals, pick;

	if (t->nkept <= s->evals)
		return SIZE_MAX;
	pick = (size_t)(next_random(rng) % left);
	for (size_t i = 0; i < t->nkept; i++)
		if (!s->cfgs[t->order[i]].eval_order && pick-- == 0)
			return t->order[i];
	return SIZE_MAX;
}

/* Simulated annealing over the grid: from a point drawn with the seed, a
 * step goes to a neighbour (one key changed to the value next to it in
 * its list; a neighbour --restrict excludes is never one), drawn with the
 * seed.  A faster neighbour is always accepted, a slower one with the
 * probability exp(-(its median / the current one's - 1) / T), T going
 * down geometrically from 0.3 to 0.003 as the evaluations are used up.
 * A neighbour already measured is not measured again: its result is
 * reused.  After many steps that find nothing new (the neighbourhood is
 * used up), the walk starts again from a point not measured yet. */
static void anneal_search(struct search *s)
{
	const struct ks_tune *t = s->t;
	size_t nk = t->space->nkeys, budget = t->norder, stale = 0;
	size_t stale_max = 20 * (2 * nk + 1), cur;
	uint64_t rng = t->o.seed;
	uint32_t v[KS_TUNE_MAX_KEYS];
	size_t nbs[2 * KS_TUNE_MAX_KEYS];

	if (budget == 0)
		return;
	cur = fresh_point(s, &rng);
	evaluate(s, cur);
	while (s->evals < budget && !s->stopped && !s->budget_spent) {
		size_t nn = 0, nb;
		double ec, en, temp, u;

		memcpy(v, t->coords + cur * nk, nk * sizeof(*v));
		for (size_t k = 0; k < nk; k++)
			for (int d = -1; d <= 1; d += 2) {
				size_t c;

				if ((d < 0 && v[k] == 0) || (d > 0 && v[k] + 1 >= t->nvalues[k]))
					continue;
				v[k] = (uint32_t)((int64_t)v[k] + d);
				c = grid_find(t, v);
				v[k] = (uint32_t)((int64_t)v[k] - d);
				if (c != SIZE_MAX && !t->restricted[c])
					nbs[nn++] = c;
			}
		if (nn == 0 || stale >= stale_max) {
			cur = fresh_point(s, &rng);
			if (cur == SIZE_MAX)
				break;
			evaluate(s, cur);
			stale = 0;
			continue;
		}
		nb = nbs[next_random(&rng) % nn];
		if (!s->cfgs[nb].eval_order) {
			evaluate(s, nb);
			stale = 0;
		} else {
			stale++;
		}
		if (s->stopped)
			break;
		ec = energy(s, cur);
		en = energy(s, nb);
		temp = 0.3 * pow(0.01, (double)s->evals / (double)budget);
		u = (double)(next_random(&rng) >> 11) * 0x1p-53;
		if (en <= ec || (isfinite(en) && isfinite(ec) && ec > 0 &&
				 u < exp(-(en - ec) / ec / temp)))
			cur = nb;
	}
}

/* ------------------------------------------------------------------ */
/* The result                                                          */
/* ------------------------------------------------------------------ */

bool ks_tune_row_measured(const struct ks_tune_row *r)
{
	return r->status == KS_TUNE_OK || r->status == KS_TUNE_STOPPED;
}

static int group(const struct ks_tune_row *r)
{
	switch (r->status) {
	case KS_TUNE_OK:
	case KS_TUNE_STOPPED:
		return 0;
	case KS_TUNE_NOT_SELECTED:
	case KS_TUNE_RESTRICTED:
		return 2;
	case KS_TUNE_INTERRUPTED:
		return 3;
	default:
		return 1;
	}
}

static int by_row(const void *a, const void *b)
{
	const struct ks_tune_row *x = a, *y = b;
	int gx = group(x), gy = group(y);

	if (gx != gy)
		return gx - gy;
	if (gx == 0 && x->median_ns != y->median_ns)
		return x->median_ns < y->median_ns ? -1 : 1;
	if (x->predicted_rank != y->predicted_rank)
		return x->predicted_rank < y->predicted_rank ? -1 : 1;
	return x->config < y->config ? -1 : x->config > y->config;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

void ks_tune_result_free(struct ks_tune_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nrows && r->rows; i++) {
		struct ks_tune_row *w = &r->rows[i];

		for (size_t k = 0; k < r->nkeys && w->values; k++)
			free(w->values[k]);
		free(w->values);
		free(w->is_int);
		free(w->message);
		free(w->output);
		free(w->samples_ns);
	}
	free(r->rows);
	for (size_t k = 0; k < r->nkeys && r->keys; k++)
		free(r->keys[k]);
	free(r->keys);
	free(r->src);
	free(r->build);
	free(r->run);
	free(r->predict);
	free(r->verify);
	free(r->cache_dir);
	free(r);
}

/* The rank correlation of predicted and measured times over the measured
 * rows (strategy model).  false when out of memory. */
static bool spearman(struct ks_tune_result *r)
{
	double *x = calloc(r->nrows ? r->nrows : 1, sizeof(*x));
	double *y = calloc(r->nrows ? r->nrows : 1, sizeof(*y));
	size_t n = 0;

	if (!x || !y) {
		free(x);
		free(y);
		return false;
	}
	for (size_t i = 0; i < r->nrows; i++)
		if (ks_tune_row_measured(&r->rows[i]) && r->rows[i].predicted_us >= 0) {
			x[n] = r->rows[i].predicted_us;
			y[n++] = r->rows[i].median_ns;
		}
	r->spearman_n = n;
	r->has_spearman = ks_tune_spearman(x, y, n, &r->spearman);
	free(x);
	free(y);
	return true;
}

void ks_tune_row_label(const struct ks_tune_result *r, const struct ks_tune_row *w, char *buf,
		       size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t k = 0; k < r->nkeys && used < size; k++) {
		int n = snprintf(buf + used, size - used, "%s%s=%s", k ? " " : "",
				 r->keys[k], w->values[k]);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/* Strategy model: says how far the model and the measurements agree,
 * and warns when they do not (the rank correlation below 0.5). */
static void report_model(const struct ks_tune *t, const struct ks_tune_result *r)
{
	const struct ks_tune_row *mbest = NULL;
	char lb[256], lm[256], med[64];

	if (t->o.strategy != KS_TUNE_MODEL)
		return;
	if (!r->has_spearman) {
		note(t, KS_TUNE_INFO, "model: no rank correlation: %zu measured "
		     "configuration%s (it needs 3 or more, with different times)",
		     r->spearman_n, r->spearman_n == 1 ? "" : "s");
		return;
	}
	if (r->spearman >= 0.5) {
		note(t, KS_TUNE_INFO, "model: Spearman rank correlation %.2f between "
		     "predicted and measured times over %zu configurations",
		     r->spearman, r->spearman_n);
		return;
	}
	/* The model's best: the best predicted of those measured. */
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ks_tune_row *w = &r->rows[i];

		if (ks_tune_row_measured(w) &&
		    (!mbest || w->predicted_rank < mbest->predicted_rank))
			mbest = w;
	}
	ks_tune_row_label(r, r->best, lb, sizeof(lb));
	ks_tune_row_label(r, mbest, lm, sizeof(lm));
	snprintf(med, sizeof(med), "%.0f ns", mbest->median_ns);
	note(t, KS_TUNE_WARN, "model: the model and the measurements disagree "
	     "(Spearman rank correlation %.2f over %zu configurations, below "
	     "0.5): the best measured is %s (median %.0f ns), the model's best is "
	     "%s (predicted %.3f us, measured %s)", r->spearman, r->spearman_n, lb,
	     r->best->median_ns, lm, mbest->predicted_us, med);
}

static struct ks_tune_result *make_result(const struct search *s)
{
	const struct ks_tune *t = s->t;
	const struct ks_tune_space *sp = t->space;
	struct ks_tune_result *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->nkeys = sp->nkeys;
	r->keys = calloc(sp->nkeys, sizeof(*r->keys));
	r->rows = calloc(sp->nconfigs, sizeof(*r->rows));
	r->src = strdup(t->src);
	r->build = strdup(t->o.build);
	r->run = strdup(t->o.run);
	r->predict = t->o.predict ? strdup(t->o.predict) : NULL;
	r->verify = t->o.verify ? strdup(t->o.verify) : NULL;
	if (!r->keys || !r->rows || !r->src || !r->build || !r->run ||
	    (t->o.predict && !r->predict) || (t->o.verify && !r->verify))
		goto fail;
	if (t->o.cache_dir && !(r->cache_dir = strdup(t->o.cache_dir)))
		goto fail;
	if (t->o.strategy == KS_TUNE_MODEL) {
		r->model_top = t->o.model_top;
		r->model_sample = t->o.model_sample;
	}
	r->precision = t->o.precision;
	r->strategy = (int)t->o.strategy;
	r->max_evals = t->o.max_evals;
	r->seed = t->o.seed;
	r->time_budget_s = t->o.time_budget_s;
	r->budget_spent = s->budget_spent;
	r->max_runs = t->max_measured;
	r->nrows = sp->nconfigs;
	r->warmup = t->o.warmup;
	r->repeat = t->o.repeat;
	r->jobs = t->jobs;
	r->run_timeout_s = t->o.run_timeout_s;
	r->build_timeout_s = t->o.build_timeout_s;
	r->stop_factor = t->o.stop_factor;
	r->top = t->o.predict ? t->o.top : 0;
	r->stopped_by_fd = s->stopped;
	for (size_t k = 0; k < sp->nkeys; k++)
		if (!(r->keys[k] = strdup(sp->keys[k])))
			goto fail;
	for (size_t c = 0; c < sp->nconfigs; c++) {
		const struct cfg *f = &s->cfgs[c];
		struct ks_tune_row *w = &r->rows[c];

		w->config = c;
		w->status = f->status;
		w->values = calloc(sp->nkeys, sizeof(*w->values));
		w->is_int = calloc(sp->nkeys, 1);
		w->message = dup_or_empty(f->message);
		w->output = dup_or_empty(f->output);
		w->samples_ns = calloc(f->runs ? f->runs : 1, sizeof(*w->samples_ns));
		if (!w->values || !w->is_int || !w->message || !w->output || !w->samples_ns)
			goto fail;
		for (size_t k = 0; k < sp->nkeys; k++) {
			if (!(w->values[k] = strdup(sp->values[c * sp->nkeys + k])))
				goto fail;
			w->is_int[k] = ks_tune_space_is_int(sp, c, k);
		}
		w->runs = f->runs;
		if (f->runs)
			memcpy(w->samples_ns, f->samples, f->runs * sizeof(*f->samples));
		w->median_ns = ks_tune_percentile(f->samples, f->runs, 50);
		w->p20_ns = ks_tune_percentile(f->samples, f->runs, 20);
		w->p80_ns = ks_tune_percentile(f->samples, f->runs, 80);
		ks_tune_median_ci(f->samples, f->runs, &w->ci_lo_ns, &w->ci_hi_ns);
		w->precise = f->runs > 0 && precise_enough(t, f);
		w->timing = f->runs == 0 ? KS_TUNE_TIMING_NONE
			    : f->program_timed == f->runs ? KS_TUNE_TIMING_PROGRAM
			    : f->program_timed == 0 ? KS_TUNE_TIMING_WALL
			    : KS_TUNE_TIMING_MIXED;
		w->predicted_us = t->pred_us ? t->pred_us[c] : -1;
		w->predicted_rank = t->pred_rank ? t->pred_rank[c] : 0;
		w->cached = f->cached;
		w->sampled = t->sampled ? t->sampled[c] : 0;
		w->eval_order = f->eval_order;
		r->cached += f->cached;
		switch (w->status) {
		case KS_TUNE_OK:
		case KS_TUNE_STOPPED:
			r->measured++;
			break;
		case KS_TUNE_NOT_SELECTED:
			r->not_selected++;
			break;
		case KS_TUNE_INTERRUPTED:
			r->interrupted++;
			break;
		case KS_TUNE_RESTRICTED:
			r->restricted++;
			break;
		case KS_TUNE_VERIFY_FAILED:
			r->verify_failed++;
			r->failed++;
			break;
		default:
			r->failed++;
		}
	}
	if (t->o.strategy == KS_TUNE_MODEL && !spearman(r))
		goto fail;
	qsort(r->rows, r->nrows, sizeof(*r->rows), by_row);
	r->best = r->nrows && ks_tune_row_measured(&r->rows[0]) ? &r->rows[0] : NULL;
	/* Ties: measured rows whose interval reaches down into the best's.
	 * Rows are sorted by median, so overlap is lo <= the best's hi. */
	for (size_t i = 1; r->best && i < r->nrows; i++) {
		struct ks_tune_row *w = &r->rows[i];

		if (ks_tune_row_measured(w) && w->ci_lo_ns <= r->best->ci_hi_ns) {
			w->tie = 1;
			r->rows[0].tie = 1;
			r->ties += r->ties ? 1 : 2;
		}
	}
	return r;
fail:
	ks_tune_result_free(r);
	return NULL;
}

static void free_cfgs(struct cfg *cfgs, size_t n)
{
	for (size_t c = 0; c < n && cfgs; c++) {
		free(cfgs[c].message);
		free(cfgs[c].output);
		free(cfgs[c].samples);
	}
	free(cfgs);
}

int ks_tune_run(struct ks_tune *t, const char *dir, struct ks_tune_result **out,
		char *err, size_t errsize)
{
	struct search s = { .t = t, .dirfd = -1, .rootfd = -1, .best_ns = -1 };
	size_t n = t->space->nconfigs;
	struct ks_err e;
	int rc = 0;

	*out = NULL;
	ks_err_clear(&e);
	ks_err_clear(&s.cleanup_err);
	s.cfgs = calloc(n, sizeof(*s.cfgs));
	if (!s.cfgs) {
		rc = ks_err_set(&e, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t c = 0; c < n; c++)
		s.cfgs[c].status = t->restricted[c] ? KS_TUNE_RESTRICTED
						    : KS_TUNE_NOT_SELECTED;
	/* anneal decides as it goes which configurations it takes up. */
	for (size_t i = 0; i < t->norder && t->o.strategy != KS_TUNE_ANNEAL; i++) {
		s.cfgs[t->order[i]].status = KS_TUNE_INTERRUPTED;
		s.cfgs[t->order[i]].selected = true;
	}
	s.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s.dirfd < 0) {
		rc = ks_err_set(&e, -errno, "cannot open '%s': %s", dir, strerror(errno));
		goto out;
	}
	if ((rc = ks_tune_files_root(dir, &s.root, &s.rootfd, &e)))
		goto out;
	if (strlen(s.root) + strlen(t->srcname) + strlen(t->exename) + 32 >= PATH_MAX) {
		rc = ks_err_set(&e, -ENAMETOOLONG, "the variants' paths under '%s' would "
				"be longer than %d bytes", s.root, PATH_MAX);
		goto out;
	}
	if (t->o.cache_dir && mkdir(t->o.cache_dir, 0777) != 0 && errno != EEXIST) {
		rc = ks_err_set(&e, -errno, "cannot create the cache '%s': %s",
				t->o.cache_dir, strerror(errno));
		goto out;
	}
	s.started = ks_tune_now();
	if (t->o.strategy == KS_TUNE_ANNEAL)
		anneal_search(&s);
	for (size_t b = 0; t->o.strategy != KS_TUNE_ANNEAL && b < t->norder &&
	     !s.stopped && !s.budget_spent; b += BATCH) {
		size_t bn = t->norder - b < BATCH ? t->norder - b : BATCH;

		progress(&s, "build", s.built + s.build_failed, t->norder, 0, 0, 0);
		build_batch(&s, t->order + b, bn);
		run_batch(&s, t->order + b, bn);
	}
	/* The variants' directory, with anything a build left in it. */
	close(s.rootfd);
	s.rootfd = -1;
	{
		const char *base = strrchr(s.root, '/') + 1;
		struct ks_err re;

		ks_err_clear(&re);
		if (ks_tune_files_remove(s.dirfd, base, &re) && !s.cleanup_err.code)
			s.cleanup_err = re;
	}
	if (s.cleanup_err.code)
		note(t, KS_TUNE_WARN, "cleaning up: %s", s.cleanup_err.msg);
	if (s.budget_spent && !s.stopped)
		for (size_t c = 0; c < n; c++)
			if (s.cfgs[c].status == KS_TUNE_INTERRUPTED) {
				s.cfgs[c].status = KS_TUNE_NOT_SELECTED;
				set_text(&s.cfgs[c].message, "not measured: the time budget "
					 "was spent");
			}
	*out = make_result(&s);
	if (!*out)
		rc = ks_err_set(&e, -ENOMEM, "out of memory");
	else
		report_model(t, *out);
	if (*out && s.cached)
		note(t, KS_TUNE_INFO, "%zu configuration%s cached in %s: %s not built "
		     "or run again", s.cached, s.cached == 1 ? "" : "s", t->o.cache_dir,
		     s.cached == 1 ? "it was" : "they were");
	else if (s.stopped)
		rc = ks_err_set(&e, -EINTR, "the search was stopped");
out:
	if (rc)
		copy_err(&e, err, errsize);
	if (s.rootfd >= 0) {
		/* Failed before the search: the variants' directory is empty. */
		struct ks_err re;

		close(s.rootfd);
		ks_tune_files_remove(s.dirfd, strrchr(s.root, '/') + 1, &re);
	}
	if (s.dirfd >= 0)
		close(s.dirfd);
	free(s.root);
	free_cfgs(s.cfgs, n);
	return rc;
}

int ks_tune(const struct ks_tune_opts *o, const char *dir, struct ks_tune_result **out,
	    char *err, size_t errsize)
{
	struct ks_tune *t;
	int rc;

	*out = NULL;
	rc = ks_tune_new(o, &t, err, errsize);
	if (rc)
		return rc;
	rc = ks_tune_run(t, dir, out, err, errsize);
	ks_tune_free(t);
	return rc;
}
