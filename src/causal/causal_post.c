/*
 * kscope causal's post-processing (causal_post.h): reading the runtime's
 * raw files, the speedup analysis, and profile.coz, the CSV and the report.
 *
 * The raw file.  Text, one record per line: the record's first word, then
 * TAB-separated key=value fields.
 *
 *   process     pid= period_ns= start_ns= [sampler=perf|timer]
 *                                              starts a process's section
 *   experiment  line= speedup= wall_ns= delay_ns= samples=
 *               [ready_wait_ns= threads=]    the threads' run-queue wait
 *   point       name= kind=throughput delta=
 *   point       name= kind=latency arrivals= departures= difference=
 *   samples     line= count=                   the process's total in a line
 *   end         ns=                            the process ended normally
 *
 * `point` records follow their experiment and give every progress point's
 * change during it.  Unknown record types, unknown keys and unknown point
 * kinds are skipped, so that an older kscope reads a newer runtime's files;
 * anything else that is wrong in a known record is an error naming the
 * file and line.  A last line without a newline is what a process killed
 * while writing leaves: it is ignored and counted.  When a line's
 * `samples` comes twice in one process the last one wins (each is a
 * total, so a runtime may rewrite them as it goes).
 *
 * The analysis, for a throughput point P.  An experiment e's effective
 * duration is D_e = wall_ns - delay_ns: the virtual speedup pauses every
 * other thread, and subtracting the pauses gives the time the program
 * would have taken had the line really been faster.  An experiment whose
 * delay is not below its wall time says nothing and is counted as
 * unusable.  V_e is P's delta in e.  An experiment with no record of P
 * is left out for P: its process did not know P then (the runtime
 * writes every point it knows after each experiment, visited or not).
 *
 *   - The baseline pools every experiment at 0% speedup, whatever its
 *     line: at 0% nothing is delayed, so the line does not matter.  Its
 *     time per visit is p0 = sum D / sum V.  No baseline, or sum V = 0,
 *     means no curves for P (r->why says so).
 *   - For a line L and a speedup s > 0, p_s = sum D / sum V over the
 *     experiments (L, s), when their sum V > 0; the program speedup is
 *     (p0 - p_s) / p0, in percent.  Pooling sums rather than averaging
 *     ratios weights each experiment by its length, as coz's viewer does.
 *     Each curve starts with the origin (0%, 0%), given the baseline's
 *     own interval, so that it shows how noisy the baseline is.
 *   - The 95% interval is a percentile bootstrap: KS_CAUSAL_BOOTSTRAP
 *     times, the baseline's experiments and the (L, s) experiments are
 *     each drawn with replacement and the speedup recomputed; the interval
 *     runs from the 2.5th to the 97.5th percentile of those (interpolated
 *     between ranks).  A resample whose sum V is 0 is left out.  The
 *     origin's interval compares two independent resamples of the
 *     baseline.  The random numbers come from a xorshift64* generator
 *     with a fixed seed, mixed with L and s, so that every run over the
 *     same data gives the same intervals, whatever else the data hold.
 *     The baseline's resamples are drawn once per point and shared by
 *     every (L, s): this costs KS_CAUSAL_BOOTSTRAP draws per experiment
 *     instead of per experiment and curve point.
 *   - A line's impact is the mean program speedup over its curve's points
 *     with s > 0, a simple summary of how much making it faster pays.
 *     Curves are ranked by impact (highest first), then by line id, then
 *     by point name.  A line appears only when it has a point with s > 0.
 *
 * Sums are kept in doubles (a uint64 sum of hostile counts could wrap);
 * the visit counts shown are uint64 sums that saturate.
 */
#include "causal_post.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "readfile.h"
#include "textout.h"

/* Raw files larger than this are refused: an experiment and its points
 * take a few hundred bytes and come about twice a second, so even a
 * day-long run writes tens of MiB. */
#define RAW_MAX ((size_t)1 << 30)

#define NONE SIZE_MAX

/* Returns arr with room for n + 1 elements of size bytes (*cap grows), or
 * NULL when out of memory (arr is then untouched). */
static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return arr;
	ncap = *cap ? *cap * 2 : 16;
	if (ncap < *cap || ncap > SIZE_MAX / size)
		return NULL;
	p = realloc(arr, ncap * size);
	if (p)
		*cap = ncap;
	return p;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* ------------------------------------------------------------------ */
/* The data set                                                        */
/* ------------------------------------------------------------------ */

int ks_causal_data_init(struct ks_causal_data *d, size_t nlines)
{
	memset(d, 0, sizeof(*d));
	if (nlines > UINT32_MAX)
		return -EINVAL;
	d->nlines = nlines;
	return 0;
}

int ks_causal_data_read_run(struct ks_causal_data *d, const char *rundir, size_t *nfiles,
			    struct ks_err *err)
{
	*nfiles = 0;
	for (int k = 1;; k++) {
		char dir[PATH_MAX], path[PATH_MAX + 300];
		struct dirent **names;
		int n, rc = 0;

		snprintf(dir, sizeof(dir), "%s/raw/run_%d", rundir, k);
		n = scandir(dir, &names, NULL, alphasort);
		if (n < 0)
			return 0;
		for (int i = 0; i < n; i++) {
			if (!rc && strncmp(names[i]->d_name, "causal_", 7) == 0) {
				snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
				rc = ks_causal_data_read(d, path, err);
				(*nfiles)++;
			}
			free(names[i]);
		}
		free(names);
		if (rc)
			return rc;
	}
}

void ks_causal_data_free(struct ks_causal_data *d)
{
	for (size_t i = 0; i < d->nnames; i++)
		free(d->names[i]);
	free(d->names);
	free(d->processes);
	free(d->experiments);
	free(d->points);
	free(d->samples);
	ks_causal_data_init(d, d->nlines);
}

/* The sizes of d before a file is read, to undo the file on failure. */
struct mark {
	size_t nprocesses, nexperiments, npoints, nsamples, nnames, truncated;
};

static struct mark data_mark(const struct ks_causal_data *d)
{
	struct mark m = {
		.nprocesses = d->nprocesses, .nexperiments = d->nexperiments,
		.npoints = d->npoints, .nsamples = d->nsamples, .nnames = d->nnames,
		.truncated = d->truncated,
	};

	return m;
}

static void data_rollback(struct ks_causal_data *d, const struct mark *m)
{
	while (d->nnames > m->nnames)
		free(d->names[--d->nnames]);
	d->nprocesses = m->nprocesses;
	d->nexperiments = m->nexperiments;
	d->npoints = m->npoints;
	d->nsamples = m->nsamples;
	d->truncated = m->truncated;
}

/* ------------------------------------------------------------------ */
/* Reading a raw file                                                  */
/* ------------------------------------------------------------------ */

struct reader {
	struct ks_causal_data *d;
	const char *path;
	size_t lineno;
	size_t proc;             /* the current process, NONE before one */
	struct ks_err *err;
};

static int bad(struct reader *rd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A malformed record: -EINVAL with "path:line: message". */
static int bad(struct reader *rd, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ks_err_set(rd->err, -EINVAL, "%s:%zu: %s", rd->path, rd->lineno, msg);
}

static int nomem(struct reader *rd)
{
	return ks_err_set(rd->err, -ENOMEM, "%s:%zu: out of memory", rd->path, rd->lineno);
}

/* Fills vals[i] with the value of keys[i] among fields (the record's
 * TAB-separated key=value fields, cut in place), or NULL when absent.
 * Unknown keys are skipped; a field without '=' or a key given twice is
 * an error. */
static int fields_get(struct reader *rd, const char *type, char *fields,
		      const char *const *keys, const char **vals, size_t n)
{
	for (size_t i = 0; i < n; i++)
		vals[i] = NULL;
	while (fields) {
		char *f = fields, *tab = strchr(f, '\t'), *eq;

		fields = NULL;
		if (tab) {
			*tab = '\0';
			fields = tab + 1;
		}
		if (!*f)
			continue;
		eq = strchr(f, '=');
		if (!eq)
			return bad(rd, "%s: field '%.64s' is not key=value", type, f);
		*eq = '\0';
		for (size_t i = 0; i < n; i++) {
			if (strcmp(f, keys[i]) != 0)
				continue;
			if (vals[i])
				return bad(rd, "%s: %s= is given twice", type, f);
			vals[i] = eq + 1;
		}
	}
	return 0;
}

/* Parses a decimal uint64 with nothing around it (strtoull alone would
 * take spaces, a sign and a wrapped negative). */
static int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int parse_i64(const char *s, int64_t *out)
{
	long long v;
	char *end;

	if (!((*s >= '0' && *s <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9')))
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

static int need_u64(struct reader *rd, const char *type, const char *key, const char *val,
		    uint64_t *out)
{
	if (!val)
		return bad(rd, "%s record lacks %s=", type, key);
	if (parse_u64(val, out))
		return bad(rd, "%s: %s='%.64s' is not a non-negative integer", type, key, val);
	return 0;
}

static int need_line(struct reader *rd, const char *type, const char *val, uint32_t *out)
{
	uint64_t v;
	int rc = need_u64(rd, type, "line", val, &v);

	if (rc)
		return rc;
	if (v >= rd->d->nlines)
		return bad(rd, "%s: line=%" PRIu64 " is out of range (the line table has %zu "
			   "lines)", type, v, rd->d->nlines);
	*out = (uint32_t)v;
	return 0;
}

/* The current process, or an error for a record that needs one. */
static int need_process(struct reader *rd, const char *type, struct ks_causal_process **p)
{
	if (rd->proc == NONE)
		return bad(rd, "%s record before any process record", type);
	*p = &rd->d->processes[rd->proc];
	return 0;
}

/* A samples record with its place in the section, to sort stably. */
struct seq_samples {
	uint32_t line;
	size_t seq;
	uint64_t count;
};

static int seq_samples_cmp(const void *a, const void *b)
{
	const struct seq_samples *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Ends the current process's section: its samples sorted by line, the
 * last record of a line kept (each is a total). */
static int process_finish(struct reader *rd)
{
	struct ks_causal_data *d = rd->d;
	struct ks_causal_samples *s;
	struct seq_samples *tmp;
	size_t n, kept = 0;

	if (rd->proc == NONE || d->processes[rd->proc].nsamples < 2)
		return 0;
	n = d->processes[rd->proc].nsamples;
	s = d->samples + d->processes[rd->proc].first_samples;
	/* Sections are appended one after the other, so this process's
	 * samples are the last ones of the array. */
	assert(s + n == d->samples + d->nsamples);
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return nomem(rd);
	for (size_t i = 0; i < n; i++)
		tmp[i] = (struct seq_samples){ s[i].line, i, s[i].count };
	qsort(tmp, n, sizeof(*tmp), seq_samples_cmp);
	for (size_t i = 0; i < n; i++)
		if (i + 1 == n || tmp[i + 1].line != tmp[i].line)
			s[kept++] = (struct ks_causal_samples){ tmp[i].line, tmp[i].count };
	free(tmp);
	d->processes[rd->proc].nsamples = kept;
	d->nsamples -= n - kept;
	return 0;
}

/* The index of point name `name`, added when new; NONE: out of memory. */
static size_t name_intern(struct ks_causal_data *d, const char *name)
{
	char **names;

	/* A program has a handful of progress points: a linear search is
	 * the right tool. */
	for (size_t i = 0; i < d->nnames; i++)
		if (strcmp(d->names[i], name) == 0)
			return i;
	names = grow(d->names, &d->cap_names, d->nnames, sizeof(*names));
	if (!names)
		return NONE;
	d->names = names;
	names[d->nnames] = strdup(name);
	if (!names[d->nnames])
		return NONE;
	return d->nnames++;
}

static int rec_process(struct reader *rd, char *fields)
{
	static const char *const keys[] = { "pid", "period_ns", "start_ns", "sampler" };
	struct ks_causal_data *d = rd->d;
	struct ks_causal_process p = { 0 };
	const char *v[4];
	struct ks_causal_process *procs;
	int rc = fields_get(rd, "process", fields, keys, v, 4);

	if (!rc)
		rc = need_u64(rd, "process", "pid", v[0], &p.pid);
	if (!rc && v[1])
		rc = need_u64(rd, "process", "period_ns", v[1], &p.period_ns);
	if (!rc)
		rc = need_u64(rd, "process", "start_ns", v[2], &p.start_ns);
	/* An unknown sampler is read as the precise one: only "timer" is
	 * reported. */
	p.coarse = v[3] && strcmp(v[3], "timer") == 0;
	/* The section before ends first: it may drop samples records (the
	 * last of a line is kept), which moves where this one's start. */
	if (!rc)
		rc = process_finish(rd);
	if (rc)
		return rc;
	p.first_experiment = d->nexperiments;
	p.first_samples = d->nsamples;
	procs = grow(d->processes, &d->cap_processes, d->nprocesses, sizeof(*procs));
	if (!procs)
		return nomem(rd);
	d->processes = procs;
	procs[d->nprocesses] = p;
	rd->proc = d->nprocesses++;
	return 0;
}

static int rec_experiment(struct reader *rd, char *fields)
{
	static const char *const keys[] = { "line", "speedup", "wall_ns", "delay_ns",
					    "samples", "ready_wait_ns", "threads" };
	struct ks_causal_data *d = rd->d;
	struct ks_causal_experiment e = { .first_point = d->npoints };
	struct ks_causal_experiment *exps;
	struct ks_causal_process *p = NULL;
	const char *v[7];
	uint64_t speedup = 0;
	int rc = need_process(rd, "experiment", &p);

	if (!rc)
		rc = fields_get(rd, "experiment", fields, keys, v, 7);
	if (!rc)
		rc = need_line(rd, "experiment", v[0], &e.line);
	if (!rc)
		rc = need_u64(rd, "experiment", "speedup", v[1], &speedup);
	if (!rc && speedup > 100)
		rc = bad(rd, "experiment: speedup=%" PRIu64 " is not a percentage (0..100)",
			 speedup);
	if (!rc)
		rc = need_u64(rd, "experiment", "wall_ns", v[2], &e.wall_ns);
	if (!rc)
		rc = need_u64(rd, "experiment", "delay_ns", v[3], &e.delay_ns);
	if (!rc)
		rc = need_u64(rd, "experiment", "samples", v[4], &e.samples);
	/* Optional, together (a runtime before them wrote neither). */
	if (!rc && (v[5] || v[6])) {
		rc = need_u64(rd, "experiment", "ready_wait_ns", v[5], &e.ready_wait_ns);
		if (!rc)
			rc = need_u64(rd, "experiment", "threads", v[6], &e.threads);
	}
	if (rc)
		return rc;
	e.speedup_pct = (uint32_t)speedup;
	exps = grow(d->experiments, &d->cap_experiments, d->nexperiments, sizeof(*exps));
	if (!exps)
		return nomem(rd);
	d->experiments = exps;
	exps[d->nexperiments++] = e;
	p->nexperiments++;
	return 0;
}

/* A point's values by kind; 1 when the kind is unknown (skipped). */
static int point_values(struct reader *rd, const char *kind, const char *const *v,
			struct ks_causal_pointval *pv)
{
	if (strcmp(kind, "throughput") == 0) {
		pv->kind = KS_CAUSAL_THROUGHPUT;
		return need_u64(rd, "point", "delta", v[2], &pv->delta);
	}
	if (strcmp(kind, "latency") != 0)
		return 1;
	pv->kind = KS_CAUSAL_LATENCY;
	if (need_u64(rd, "point", "arrivals", v[3], &pv->arrivals) ||
	    need_u64(rd, "point", "departures", v[4], &pv->departures))
		return -EINVAL;
	if (!v[5])
		return bad(rd, "point record lacks difference=");
	if (parse_i64(v[5], &pv->difference))
		return bad(rd, "point: difference='%.64s' is not an integer", v[5]);
	return 0;
}

static int rec_point(struct reader *rd, char *fields)
{
	static const char *const keys[] = { "name", "kind", "delta", "arrivals",
					    "departures", "difference" };
	struct ks_causal_data *d = rd->d;
	struct ks_causal_pointval pv = { 0 }, *pts;
	struct ks_causal_process *p = NULL;
	const char *v[6];
	size_t name;
	int rc = need_process(rd, "point", &p);

	if (!rc && p->nexperiments == 0)
		rc = bad(rd, "point record before the process's first experiment");
	if (!rc)
		rc = fields_get(rd, "point", fields, keys, v, 6);
	if (!rc && (!v[0] || !*v[0]))
		rc = bad(rd, "point record lacks name=");
	if (!rc && !v[1])
		rc = bad(rd, "point record lacks kind=");
	if (!rc)
		rc = point_values(rd, v[1], v, &pv);
	if (rc)
		return rc < 0 ? rc : 0;
	name = name_intern(d, v[0]);
	if (name == NONE || name > UINT32_MAX)
		return nomem(rd);
	pv.name = (uint32_t)name;
	pts = grow(d->points, &d->cap_points, d->npoints, sizeof(*pts));
	if (!pts)
		return nomem(rd);
	d->points = pts;
	/* Points only ever go to the newest experiment, which keeps each
	 * experiment's points contiguous. */
	assert(d->experiments[d->nexperiments - 1].first_point +
	       d->experiments[d->nexperiments - 1].npoints == d->npoints);
	pts[d->npoints++] = pv;
	d->experiments[d->nexperiments - 1].npoints++;
	return 0;
}

static int rec_samples(struct reader *rd, char *fields)
{
	static const char *const keys[] = { "line", "count" };
	struct ks_causal_data *d = rd->d;
	struct ks_causal_samples s = { 0 }, *arr;
	struct ks_causal_process *p = NULL;
	const char *v[2];
	int rc = need_process(rd, "samples", &p);

	if (!rc)
		rc = fields_get(rd, "samples", fields, keys, v, 2);
	if (!rc)
		rc = need_line(rd, "samples", v[0], &s.line);
	if (!rc)
		rc = need_u64(rd, "samples", "count", v[1], &s.count);
	if (rc)
		return rc;
	arr = grow(d->samples, &d->cap_samples, d->nsamples, sizeof(*arr));
	if (!arr)
		return nomem(rd);
	d->samples = arr;
	arr[d->nsamples++] = s;
	p->nsamples++;
	return 0;
}

static int rec_end(struct reader *rd, char *fields)
{
	static const char *const keys[] = { "ns" };
	struct ks_causal_process *p = NULL;
	const char *v[1];
	uint64_t ns = 0;
	int rc = need_process(rd, "end", &p);

	if (!rc)
		rc = fields_get(rd, "end", fields, keys, v, 1);
	if (!rc)
		rc = need_u64(rd, "end", "ns", v[0], &ns);
	if (!rc && ns < p->start_ns)
		rc = bad(rd, "end: ns=%" PRIu64 " is before the process's start_ns=%" PRIu64,
			 ns, p->start_ns);
	if (rc)
		return rc;
	p->end_ns = ns;
	p->ended = true;
	return 0;
}

static const struct {
	const char *type;
	int (*parse)(struct reader *rd, char *fields);
} records[] = {
	{ "process", rec_process },
	{ "experiment", rec_experiment },
	{ "point", rec_point },
	{ "samples", rec_samples },
	{ "end", rec_end },
};

/* One complete line, NUL-terminated in place of its newline. */
static int parse_line(struct reader *rd, char *line)
{
	char *tab = strchr(line, '\t'), *fields = NULL;

	if (tab) {
		*tab = '\0';
		fields = tab + 1;
	}
	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++)
		if (strcmp(line, records[i].type) == 0)
			return records[i].parse(rd, fields);
	return 0;  /* a record type of a newer runtime */
}

static int parse_text(struct reader *rd, char *buf, size_t size)
{
	char *p = buf, *end = buf + size;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		int rc;

		rd->lineno++;
		if (!nl) {
			rd->d->truncated++;
			return 0;
		}
		*nl = '\0';
		if (strlen(p) != (size_t)(nl - p))
			return bad(rd, "the line holds a NUL byte");
		rc = parse_line(rd, p);
		if (rc)
			return rc;
		p = nl + 1;
	}
	return 0;
}

int ks_causal_data_read(struct ks_causal_data *d, const char *path, struct ks_err *err)
{
	struct reader rd = { .d = d, .path = path, .proc = NONE, .err = err };
	struct mark m = data_mark(d);
	char *buf = NULL;
	size_t size = 0;
	int rc = ks_read_file_at(AT_FDCWD, path, 0, RAW_MAX, &buf, &size, err);

	if (rc)
		return rc;
	rc = parse_text(&rd, buf, size);
	if (!rc)
		rc = process_finish(&rd);
	if (rc)
		data_rollback(d, &m);
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The analysis                                                        */
/* ------------------------------------------------------------------ */

#define NBOOT KS_CAUSAL_BOOTSTRAP
#define SEED UINT64_C(0x6b73636f70652121)  /* "kscope!!" */

/* xorshift64* (Vigna): small, fast, and good enough to pick resamples. */
struct rng {
	uint64_t s;              /* never 0 */
};

static void rng_seed(struct rng *r, uint64_t key)
{
	/* splitmix64 spreads a small key over all the state's bits. */
	uint64_t z = SEED + key * UINT64_C(0x9e3779b97f4a7c15);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	r->s = z ? z : SEED;
}

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * UINT64_C(0x2545f4914f6cdd1d);
}

/* One usable experiment as point P sees it. */
struct obs {
	uint32_t line, speedup;
	double d;                /* effective duration, ns */
	double v;                /* visits to P */
	uint64_t visits;
};

static int obs_cmp(const void *a, const void *b)
{
	const struct obs *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->speedup < y->speedup ? -1 : x->speedup > y->speedup;
}

/* Sums over a run of experiments. */
struct pool {
	double d, v;
	uint64_t visits;
};

static struct pool pool_of(const struct obs *o, size_t n)
{
	struct pool p = { 0, 0, 0 };

	for (size_t i = 0; i < n; i++) {
		p.d += o[i].d;
		p.v += o[i].v;
		p.visits = add_sat(p.visits, o[i].visits);
	}
	return p;
}

/* Time per visit of n experiments drawn with replacement from o; NaN
 * when the draw has no visit. */
static double resample_pace(const struct obs *o, size_t n, struct rng *r)
{
	double d = 0, v = 0;

	for (size_t i = 0; i < n; i++) {
		const struct obs *e = &o[rng_next(r) % n];

		d += e->d;
		v += e->v;
	}
	return v > 0 ? d / v : NAN;
}

static int double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile of sorted[0..n), interpolated between ranks. */
static double quantile(const double *sorted, size_t n, double q)
{
	double h = q * (double)(n - 1), f;
	size_t lo = (size_t)h;

	if (lo + 1 >= n)
		return sorted[n - 1];
	f = h - (double)lo;
	return sorted[lo] + f * (sorted[lo + 1] - sorted[lo]);
}

/* The 95% interval of vals[0..n) (sorted in place) into *pt. */
static void interval(double *vals, size_t n, struct ks_causal_point_result *pt)
{
	if (n == 0) {
		pt->ci_low_pct = pt->ci_high_pct = NAN;
		return;
	}
	qsort(vals, n, sizeof(*vals), double_cmp);
	pt->ci_low_pct = quantile(vals, n, 0.025);
	pt->ci_high_pct = quantile(vals, n, 0.975);
}

/* What the analysis of one point needs. */
struct actx {
	const struct ks_causal_data *d;
	struct ks_causal_result *r;
	const uint64_t *line_samples;  /* per line id, or NULL */
	const char *name;
	struct obs *base, *rest; /* usable experiments at 0% and above */
	size_t nbase, nrest;
	double p0;               /* baseline time per visit */
	double *boot0;           /* NBOOT baseline resamples' p0 (NaN: no visit) */
	double *vals;            /* NBOOT scratch values */
	struct ks_causal_point_result origin;
};

static void why(struct ks_causal_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Keeps the first reason why a point had no curves. */
static void why(struct ks_causal_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

/* P's visits in experiment e (summed, should a point come twice); false
 * when e has no record of P: its process did not know the point then (a
 * runtime writes every point it knows, visited or not), so e says
 * nothing of P's pace. */
static bool visits_in(const struct ks_causal_data *d, const struct ks_causal_experiment *e,
		      uint32_t name, struct obs *o)
{
	bool seen = false;

	o->v = 0;
	o->visits = 0;
	for (size_t i = e->first_point; i < e->first_point + e->npoints; i++) {
		const struct ks_causal_pointval *pv = &d->points[i];

		if (pv->name != name || pv->kind != KS_CAUSAL_THROUGHPUT)
			continue;
		o->v += (double)pv->delta;
		o->visits = add_sat(o->visits, pv->delta);
		seen = true;
	}
	return seen;
}

/* Splits the usable experiments into c->base (0%) and c->rest (sorted
 * by line and speedup). */
static int collect(struct actx *c, uint32_t name)
{
	const struct ks_causal_data *d = c->d;

	c->base = malloc(d->nexperiments * sizeof(*c->base));
	c->rest = malloc(d->nexperiments * sizeof(*c->rest));
	if (!c->base || !c->rest)
		return -ENOMEM;
	c->nbase = c->nrest = 0;
	for (size_t i = 0; i < d->nexperiments; i++) {
		const struct ks_causal_experiment *e = &d->experiments[i];
		struct obs o = { .line = e->line, .speedup = e->speedup_pct };

		if (e->delay_ns >= e->wall_ns)
			continue;
		o.d = (double)(e->wall_ns - e->delay_ns);
		if (!visits_in(d, e, name, &o))
			continue;
		if (o.speedup == 0)
			c->base[c->nbase++] = o;
		else
			c->rest[c->nrest++] = o;
	}
	qsort(c->rest, c->nrest, sizeof(*c->rest), obs_cmp);
	return 0;
}

/* The baseline's resamples and the origin point; 1 when P has no
 * baseline to compare with. */
static int baseline(struct actx *c)
{
	struct pool p = pool_of(c->base, c->nbase);
	struct rng r, r2;
	size_t n = 0;

	if (c->nbase == 0) {
		why(c->r, "no usable experiment ran at 0%% speedup, so there is no baseline "
		    "to compare with");
		return 1;
	}
	if (!(p.v > 0)) {
		why(c->r, "progress point '%s' was not visited during the baseline "
		    "experiments", c->name);
		return 1;
	}
	c->p0 = p.d / p.v;
	rng_seed(&r, 0);
	rng_seed(&r2, 1);
	for (size_t b = 0; b < NBOOT; b++) {
		double again;

		c->boot0[b] = resample_pace(c->base, c->nbase, &r);
		again = resample_pace(c->base, c->nbase, &r2);
		if (!isnan(c->boot0[b]) && !isnan(again))
			c->vals[n++] = (c->boot0[b] - again) / c->boot0[b] * 100;
	}
	c->origin = (struct ks_causal_point_result){
		.experiments = c->nbase, .visits = p.visits, .effective_s = p.d / 1e9,
	};
	interval(c->vals, n, &c->origin);
	return 0;
}

/* The curve point of the experiments o[0..n) of one line at one speedup;
 * false when they have no visit. */
static bool curve_point(struct actx *c, const struct obs *o, size_t n,
			struct ks_causal_point_result *pt)
{
	struct pool p = pool_of(o, n);
	struct rng r;
	size_t nv = 0;
	double ps;

	if (!(p.v > 0))
		return false;
	ps = p.d / p.v;
	*pt = (struct ks_causal_point_result){
		.line_speedup_pct = o[0].speedup,
		.program_speedup_pct = (c->p0 - ps) / c->p0 * 100,
		.experiments = n, .visits = p.visits, .effective_s = p.d / 1e9,
	};
	/* Key 0 and 1 are the baseline's; a line and speedup give another. */
	rng_seed(&r, ((uint64_t)o[0].line << 8 | o[0].speedup) + 2);
	for (size_t b = 0; b < NBOOT; b++) {
		double ps_b = resample_pace(o, n, &r);

		if (!isnan(c->boot0[b]) && !isnan(ps_b))
			c->vals[nv++] = (c->boot0[b] - ps_b) / c->boot0[b] * 100;
	}
	interval(c->vals, nv, pt);
	return true;
}

/* Adds the curve of the experiments o[0..n) of one line, unless none of
 * its speedups above 0% has a visit. */
static int line_curve(struct actx *c, const struct obs *o, size_t n)
{
	struct ks_causal_result *r = c->r;
	struct ks_causal_curve cv = { .line = o[0].line }, *curves;
	size_t groups = 1;
	double sum = 0;

	for (size_t i = 1; i < n; i++)
		groups += o[i].speedup != o[i - 1].speedup;
	cv.v = malloc((groups + 1) * sizeof(*cv.v));
	if (!cv.v)
		return -ENOMEM;
	cv.v[cv.n++] = c->origin;
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && o[j].speedup == o[i].speedup; j++)
			;
		if (curve_point(c, o + i, j - i, &cv.v[cv.n])) {
			sum += cv.v[cv.n].program_speedup_pct;
			cv.n++;
		}
	}
	if (cv.n == 1) {
		free(cv.v);
		return 0;
	}
	cv.impact_pct = sum / (double)(cv.n - 1);
	cv.line_samples = c->line_samples ? c->line_samples[cv.line] : 0;
	cv.point = strdup(c->name);
	curves = grow(r->curves, &r->cap_curves, r->ncurves, sizeof(*curves));
	if (!cv.point || !curves) {
		free(cv.point);
		free(cv.v);
		return -ENOMEM;
	}
	r->curves = curves;
	curves[r->ncurves++] = cv;
	return 0;
}

/* Adds the curves of throughput point `name`. */
static int analyze_point(struct actx *c, uint32_t name)
{
	size_t before = c->r->ncurves;
	int rc;

	c->name = c->d->names[name];
	rc = collect(c, name);
	if (rc || baseline(c))
		return rc;
	for (size_t i = 0, j; i < c->nrest; i = j) {
		for (j = i + 1; j < c->nrest && c->rest[j].line == c->rest[i].line; j++)
			;
		rc = line_curve(c, c->rest + i, j - i);
		if (rc)
			return rc;
	}
	if (c->r->ncurves == before)
		why(c->r, "no experiment above 0%% speedup visited progress point '%s'",
		    c->name);
	return 0;
}

static int curve_cmp(const void *a, const void *b)
{
	const struct ks_causal_curve *x = a, *y = b;

	if (x->impact_pct != y->impact_pct)
		return x->impact_pct > y->impact_pct ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return strcmp(x->point, y->point);
}

/* Marks in tp[] the names recorded as throughput points; their count. */
static size_t throughput_names(const struct ks_causal_data *d, bool *tp)
{
	size_t n = 0;

	for (size_t i = 0; i < d->npoints; i++)
		if (d->points[i].kind == KS_CAUSAL_THROUGHPUT && !tp[d->points[i].name]) {
			tp[d->points[i].name] = true;
			n++;
		}
	return n;
}

/* Fills r's counts: unusable experiments, samples (per line into ls,
 * which has d->nlines entries) and the share of the run-queue wait. */
static void count_totals(const struct ks_causal_data *d, struct ks_causal_result *r, uint64_t *ls)
{
	double waited = 0, thread_time = 0;

	for (size_t i = 0; i < d->nexperiments; i++) {
		const struct ks_causal_experiment *e = &d->experiments[i];

		r->unusable += e->delay_ns >= e->wall_ns;
		if (e->threads) {
			waited += (double)e->ready_wait_ns;
			thread_time += (double)e->wall_ns * (double)e->threads;
		}
	}
	r->ready_wait_share = thread_time > 0 ? waited / thread_time : NAN;
	for (size_t i = 0; i < d->nsamples; i++) {
		ls[d->samples[i].line] = add_sat(ls[d->samples[i].line], d->samples[i].count);
		r->total_samples = add_sat(r->total_samples, d->samples[i].count);
	}
}

/* Runs analyze_point over the points asked for, whose marks are in tp. */
static int analyze_points(struct actx *c, const bool *tp, const char *point)
{
	const struct ks_causal_data *d = c->d;
	int rc = 0;

	for (size_t i = 0; i < d->nnames && !rc; i++) {
		if (!tp[i] || (point && strcmp(point, d->names[i]) != 0))
			continue;
		c->r->points++;
		rc = analyze_point(c, (uint32_t)i);
		free(c->base);
		free(c->rest);
		c->base = c->rest = NULL;
	}
	if (!rc && c->r->points == 0 && point)
		why(c->r, "no throughput progress point named '%s' was recorded", point);
	else if (!rc && c->r->points == 0)
		why(c->r, "no throughput progress point was recorded");
	return rc;
}

int ks_causal_analyze(const struct ks_causal_data *d, const char *point,
		      struct ks_causal_result *r, struct ks_err *err)
{
	struct actx c = { .d = d, .r = r };
	uint64_t *ls = calloc(d->nlines ? d->nlines : 1, sizeof(*ls));
	bool *tp = calloc(d->nnames ? d->nnames : 1, sizeof(*tp));
	int rc = -ENOMEM;

	memset(r, 0, sizeof(*r));
	c.boot0 = malloc(NBOOT * sizeof(*c.boot0));
	c.vals = malloc(NBOOT * sizeof(*c.vals));
	if (!ls || !tp || !c.boot0 || !c.vals)
		goto out;
	c.line_samples = ls;
	count_totals(d, r, ls);
	if (d->nexperiments == 0) {
		why(r, "no experiment was recorded");
	} else if (r->unusable == d->nexperiments) {
		why(r, "all %zu experiments are unusable: their delay is not below their "
		    "wall-clock time", d->nexperiments);
	} else {
		throughput_names(d, tp);
		rc = analyze_points(&c, tp, point);
		if (rc)
			goto out;
	}
	if (r->ncurves > 1)
		qsort(r->curves, r->ncurves, sizeof(*r->curves), curve_cmp);
	if (r->ncurves)
		r->why[0] = '\0';
	rc = 0;
out:
	if (rc)
		ks_err_set(err, rc, "causal analysis: out of memory");
	free(ls);
	free(tp);
	free(c.boot0);
	free(c.vals);
	return rc;
}

bool ks_causal_busy_warning(const struct ks_causal_result *r, char *out, size_t size)
{
	if (!(r->ready_wait_share > KS_CAUSAL_READY_WAIT_WARN))
		return false;
	snprintf(out, size, "the program's threads were ready to run but waited for a CPU "
		 "%.0f%% of the time during the experiments (another load on the machine, or "
		 "more ready threads than CPUs): every pause then costs more than the delay "
		 "it inserts, and the predictions run low; profile on a machine with CPUs to "
		 "spare (docs/causal.md)", 100 * r->ready_wait_share);
	return true;
}

void ks_causal_result_free(struct ks_causal_result *r)
{
	for (size_t i = 0; i < r->ncurves; i++) {
		free(r->curves[i].point);
		free(r->curves[i].v);
	}
	free(r->curves);
	memset(r, 0, sizeof(*r));
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

static int file_sink(void *ctx, const void *buf, size_t len)
{
	errno = 0;
	if (fwrite(buf, 1, len, ctx) == len)
		return 0;
	return errno ? -errno : -EIO;
}

/* Flushes t and out; the first failure of either, reported as `what`. */
static int out_close(struct ks_text *t, FILE *out, const char *what, struct ks_err *err)
{
	int rc = ks_text_close(t);

	if (!rc) {
		errno = 0;
		if (fflush(out) != 0)
			rc = errno ? -errno : -EIO;
	}
	if (rc)
		return ks_err_set(err, rc, "cannot write the %s: %s", what, strerror(-rc));
	return 0;
}

static int out_open(struct ks_text *t, FILE *out, const char *what, struct ks_err *err)
{
	if (ks_text_open(t, file_sink, out))
		return ks_err_set(err, -ENOMEM, "cannot write the %s: out of memory", what);
	return 0;
}

/* s with each control character as '?': a TAB or newline in a path
 * would split a profile.coz record, an escape would drive a terminal. */
static void put_clean(struct ks_text *t, const char *s)
{
	const char *run = s;

	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f) {
			ks_text_put(t, run, (size_t)(s - run));
			ks_text_put(t, "?", 1);
			run = s + 1;
		}
	ks_text_put(t, run, (size_t)(s - run));
}

static void put_location(struct ks_text *t, const struct ks_causal_line *l)
{
	put_clean(t, l->file);
	ks_text_printf(t, ":%d", l->line);
}

static void coz_point(struct ks_text *t, const struct ks_causal_data *d,
		      const struct ks_causal_pointval *pv)
{
	if (pv->kind == KS_CAUSAL_THROUGHPUT) {
		ks_text_puts(t, "throughput-point\tname=");
		put_clean(t, d->names[pv->name]);
		ks_text_printf(t, "\tdelta=%" PRIu64 "\n", pv->delta);
		return;
	}
	ks_text_puts(t, "latency-point\tname=");
	put_clean(t, d->names[pv->name]);
	ks_text_printf(t, "\tarrivals=%" PRIu64 "\tdepartures=%" PRIu64 "\tdifference=%" PRId64
		       "\n", pv->arrivals, pv->departures, pv->difference);
}

static void coz_experiment(struct ks_text *t, const struct ks_causal_data *d,
			   const struct ks_causal_experiment *e,
			   const struct ks_causal_line *lines)
{
	ks_text_puts(t, "experiment\tselected=");
	put_location(t, &lines[e->line]);
	/* coz prints the fraction with two decimals; integer arithmetic
	 * keeps 0.29 from coming out as 0.28. */
	ks_text_printf(t, "\tspeedup=%" PRIu32 ".%02" PRIu32 "\tduration=%" PRIu64
		       "\tselected-samples=%" PRIu64 "\n", e->speedup_pct / 100,
		       e->speedup_pct % 100, e->wall_ns - e->delay_ns, e->samples);
	for (size_t i = e->first_point; i < e->first_point + e->npoints; i++)
		coz_point(t, d, &d->points[i]);
}

/* One process, in coz's order: startup, experiments, then at its end
 * runtime and the samples. */
static void coz_process(struct ks_text *t, const struct ks_causal_data *d,
			const struct ks_causal_process *p,
			const struct ks_causal_line *lines)
{
	ks_text_printf(t, "startup\ttime=%" PRIu64 "\n", p->start_ns);
	for (size_t i = p->first_experiment; i < p->first_experiment + p->nexperiments; i++)
		if (d->experiments[i].delay_ns < d->experiments[i].wall_ns)
			coz_experiment(t, d, &d->experiments[i], lines);
	if (p->ended)
		ks_text_printf(t, "runtime\ttime=%" PRIu64 "\n", p->end_ns - p->start_ns);
	for (size_t i = p->first_samples; i < p->first_samples + p->nsamples; i++) {
		if (!d->samples[i].count)
			continue;
		ks_text_puts(t, "samples\tlocation=");
		put_location(t, &lines[d->samples[i].line]);
		ks_text_printf(t, "\tcount=%" PRIu64 "\n", d->samples[i].count);
	}
}

int ks_causal_write_coz(FILE *out, const struct ks_causal_data *d,
			const struct ks_causal_line *lines, struct ks_err *err)
{
	struct ks_text t;
	int rc = out_open(&t, out, "causal profile", err);

	if (rc)
		return rc;
	for (size_t i = 0; i < d->nprocesses; i++)
		coz_process(&t, d, &d->processes[i], lines);
	return out_close(&t, out, "causal profile", err);
}

int ks_causal_write_csv(FILE *out, const struct ks_causal_result *r,
			const struct ks_causal_line *lines, struct ks_err *err)
{
	struct ks_text t;
	int rc = out_open(&t, out, "causal CSV", err);

	if (rc)
		return rc;
	ks_text_puts(&t, "point,file,line,line_speedup_pct,program_speedup_pct,ci_low_pct,"
		     "ci_high_pct,experiments,visits,effective_s,function\n");
	for (size_t i = 0; i < r->ncurves; i++) {
		const struct ks_causal_curve *cv = &r->curves[i];

		for (size_t k = 0; k < cv->n; k++) {
			const struct ks_causal_point_result *pt = &cv->v[k];

			ks_csv_str(&t, true, cv->point);
			ks_csv_str(&t, false, lines[cv->line].file);
			ks_csv_int(&t, lines[cv->line].line);
			ks_csv_u64(&t, pt->line_speedup_pct);
			ks_csv_num(&t, pt->program_speedup_pct, 3);
			ks_csv_num(&t, pt->ci_low_pct, 3);
			ks_csv_num(&t, pt->ci_high_pct, 3);
			ks_csv_u64(&t, pt->experiments);
			ks_csv_u64(&t, pt->visits);
			ks_csv_num(&t, pt->effective_s, 6);
			ks_csv_str(&t, false, lines[cv->line].function ? lines[cv->line].function
					      : "");
			ks_csv_end(&t);
		}
	}
	return out_close(&t, out, "causal CSV", err);
}

/* v rounded to one decimal, without the "-0.0" of a tiny negative. */
static double tenths(double v)
{
	double r = round(v * 10) / 10;

	return r == 0 ? 0 : r;
}

static void report_point(struct ks_text *t, const struct ks_causal_point_result *pt)
{
	ks_text_printf(t, "  line +%u%%  program %+.1f%% ", pt->line_speedup_pct,
		       tenths(pt->program_speedup_pct));
	if (isnan(pt->ci_low_pct) || isnan(pt->ci_high_pct))
		ks_text_puts(t, "[?, ?]");
	else
		ks_text_printf(t, "[%.1f, %.1f]", tenths(pt->ci_low_pct),
			       tenths(pt->ci_high_pct));
	ks_text_printf(t, "  (%zu experiment%s, %" PRIu64 " visit%s)\n", pt->experiments,
		       pt->experiments == 1 ? "" : "s", pt->visits, pt->visits == 1 ? "" : "s");
}

int ks_causal_write_report(FILE *out, const struct ks_causal_result *r,
			   const struct ks_causal_line *lines, size_t max_curves,
			   struct ks_err *err)
{
	size_t shown = max_curves && max_curves < r->ncurves ? max_curves : r->ncurves;
	bool several = false;
	struct ks_text t;
	int rc = out_open(&t, out, "causal report", err);

	if (rc)
		return rc;
	if (!r->ncurves)
		ks_text_printf(&t, "%s\n", r->why[0] ? r->why : "no curves");
	/* The point's name is worth a column only when it varies. */
	for (size_t i = 1; i < r->ncurves; i++)
		several |= strcmp(r->curves[i].point, r->curves[0].point) != 0;
	for (size_t i = 0; i < shown; i++) {
		const struct ks_causal_curve *cv = &r->curves[i];

		put_location(&t, &lines[cv->line]);
		if (lines[cv->line].function) {
			ks_text_puts(&t, " in ");
			put_clean(&t, lines[cv->line].function);
		}
		ks_text_printf(&t, "  impact %.1f%%  (%" PRIu64 " sample%s)", tenths(cv->impact_pct),
			       cv->line_samples, cv->line_samples == 1 ? "" : "s");
		if (several) {
			ks_text_puts(&t, "  point ");
			put_clean(&t, cv->point);
		}
		ks_text_puts(&t, "\n");
		for (size_t k = 0; k < cv->n; k++)
			report_point(&t, &cv->v[k]);
	}
	if (shown < r->ncurves)
		ks_text_printf(&t, "(%zu more curve%s not shown)\n", r->ncurves - shown,
			       r->ncurves - shown == 1 ? "" : "s");
	return out_close(&t, out, "causal report", err);
}
