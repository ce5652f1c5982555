/*
 * kscope causal: causal profiling (Curtsinger and Berger, "Coz: Finding
 * Code that Counts with Causal Profiling", SOSP 2015).
 *
 *     kscope causal [options] -- PROGRAM [ARGS...]
 *
 * Reads the program's line table (src/causal/causal_lines.c), writes its
 * line ranges into the run directory, and runs the program --runs times,
 * one run after the other, with libkscope-causal.so preloaded: the
 * runtime runs experiments (a line and a virtual speedup each) and counts
 * the program's progress points (src/causal/rt).  When the last run has
 * ended, the raw records of every run and process are read together and
 * the per-line program-speedup curves computed (src/causal/causal_post.c):
 * profile.coz (coz's format), causal.csv, report.txt, causal.svg and
 * profile.db (the same as SQLite tables) in
 * <output>/causal_<YYYYmmdd_HHMMSS>_<pid>/, the head of the report on
 * stderr.  kscope exits with the status of the first run that failed, else
 * the last run's (128+N if signal N ended it), or 1 if profiling itself
 * failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "argcheck.h"
#include "causal_db.h"
#include "causal_lines.h"
#include "causal_post.h"
#include "cli.h"
#include "log.h"
#include "outdir.h"
#include "runprog.h"

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

struct causal_opts {
	struct ks_common_opts common;
	char *output;
	char *fixed_line;
	char *fixed_function;
	char *speedups;
	struct ks_strlist lines;
	struct ks_strlist functions;
	int granularity;        /* index into granularity_choices */
	char *progress;
	int64_t experiment_ms;
	int64_t runs;
	int64_t period_us;
	bool end_to_end;
	bool keep_running;
};

static const char *const granularity_choices[] = { "line", "function", NULL };

#define OPT(field) .offset = offsetof(struct causal_opts, field)

static const struct ks_opt causal_opts[] = {
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR",
	  .def = "kscope-out", .env = "KSCOPE_OUTPUT",
	  .help = "where the run directory is created", OPT(output) },
	{ .name = "fixed-line", .type = KS_OPT_STRING, .metavar = "FILE:LINE",
	  .env = "KSCOPE_CAUSAL_FIXED",
	  .help = "experiment on this line only (FILE a path or its end, e.g. "
		  "main.c:42)", OPT(fixed_line), .max_len = 1024 },
	{ .name = "speedups", .type = KS_OPT_STRING, .metavar = "LIST",
	  .def = "0,10,20,30,40,50,60,70,80,90,100", .env = "KSCOPE_CAUSAL_SPEEDUP_LIST",
	  .help = "virtual line speedups in percent, 0 to 100, comma-separated "
		  "(0, the baseline, is always added)",
	  OPT(speedups), .max_len = 512 },
	{ .name = "fixed-function", .type = KS_OPT_STRING, .metavar = "NAME",
	  .env = "KSCOPE_CAUSAL_FIXED_FUNCTION",
	  .help = "with --granularity function: experiment on this function only",
	  OPT(fixed_function), .max_len = 1024 },
	{ .name = "granularity", .type = KS_OPT_ENUM, .metavar = "UNIT", .def = "line",
	  .env = "KSCOPE_CAUSAL_GRANULARITY",
	  .help = "what an experiment speeds up: a source line, or a whole function",
	  OPT(granularity), .choices = granularity_choices },
	{ .name = "lines", .type = KS_OPT_STRING, .metavar = "GLOB",
	  .env = "KSCOPE_CAUSAL_LINES", .flags = KS_OPT_REPEAT,
	  .help = "lines in scope: shell pattern on the full FILE path or on "
		  "FILE:LINE, e.g. '*/src/*' (default: every file not under /usr/)",
	  OPT(lines), .max_len = 1024 },
	{ .name = "functions", .type = KS_OPT_STRING, .metavar = "GLOB",
	  .env = "KSCOPE_CAUSAL_FUNCTIONS", .flags = KS_OPT_REPEAT,
	  .help = "only the lines of functions whose name matches, e.g. 'work*' "
		  "(C++ names as demangled)",
	  OPT(functions), .max_len = 1024 },
	{ .name = "progress", .type = KS_OPT_STRING, .metavar = "NAME",
	  .env = "KSCOPE_CAUSAL_PROGRESS",
	  .help = "rank lines by this throughput progress point (default: each "
		  "point the program has)", OPT(progress), .max_len = 127 },
	{ .name = "experiment-ms", .type = KS_OPT_INT, .metavar = "MS", .def = "500",
	  .env = "KSCOPE_CAUSAL_EXPERIMENT_LENGTH",
	  .help = "first length of an experiment (doubled while experiments see "
		  "fewer than 5 visits of a progress point)",
	  OPT(experiment_ms), .min = 10, .max = 60000 },
	{ .name = "runs", .type = KS_OPT_INT, .metavar = "N", .def = "1",
	  .env = "KSCOPE_CAUSAL_RUNS",
	  .help = "runs of the program, one after the other, into one profile",
	  OPT(runs), .min = 1, .max = 1000 },
	{ .name = "period-us", .type = KS_OPT_INT, .metavar = "US", .def = "1000",
	  .env = "KSCOPE_CAUSAL_PERIOD",
	  .help = "CPU time between two samples of a thread, in microseconds",
	  OPT(period_us), .min = 100, .max = 100000 },
	{ .name = "end-to-end", .type = KS_OPT_FLAG, .env = "KSCOPE_CAUSAL_END_TO_END",
	  .help = "each run is one experiment, measured by the program's run time "
		  "(for programs without progress points; give --runs)",
	  OPT(end_to_end) },
	{ .name = "keep-running", .type = KS_OPT_FLAG, .env = "KSCOPE_KEEP_RUNNING",
	  .help = "if kscope itself is killed, leave the program running (by "
		  "default it is killed with it)",
	  OPT(keep_running) },
	KS_COMMON_OPTS(struct causal_opts),
	KS_OPT_END
};

/* ------------------------------------------------------------------ */
/* Checks beyond the option table                                      */
/* ------------------------------------------------------------------ */

/* --speedups as the runtime takes it: sorted, distinct, 0 first; the
 * values above 0 also into nonzero (room for 100), *nnonzero of them. */
static int parse_speedups(const char *text, char *out, size_t size, unsigned *nonzero,
			  size_t *nnonzero, struct ks_err *err)
{
	bool have[101] = { true };     /* 0 always */
	const char *p = text;
	size_t len = 0;

	while (*p) {
		char *end;
		long v;

		if (*p < '0' || *p > '9')
			return ks_err_set(err, -EINVAL, "option --speedups: '%s' is not a list "
					  "of percentages; accepted: integers 0 to 100 separated "
					  "by commas, e.g. 0,25,50", text);
		v = strtol(p, &end, 10);
		if (v > 100 || (*end && *end != ','))
			return ks_err_set(err, -EINVAL, "option --speedups: '%.*s' is not a "
					  "percentage from 0 to 100", (int)(end - p), p);
		have[v] = true;
		p = *end ? end + 1 : end;
	}
	*nnonzero = 0;
	out[0] = '\0';
	for (int v = 0; v <= 100; v++)
		if (have[v]) {
			len += (size_t)snprintf(out + len, size - len, "%s%d", len ? "," : "", v);
			if (v)
				nonzero[(*nnonzero)++] = (unsigned)v;
		}
	return 0;
}

/* The runtime: next to the executable in a build tree (build/lib/), or
 * in <prefix>/lib/kscope/ when installed. */
static int find_runtime(char *out, size_t size, struct ks_err *err)
{
	return ks_find_own_file("libkscope-causal.so", R_OK,
				"kscope causal's runtime libkscope-causal.so", out, size, err);
}

/* ------------------------------------------------------------------ */
/* Running the program                                                 */
/* ------------------------------------------------------------------ */

struct run_setup {
	const char *runtime;
	const char *rundir;
	const char *program;      /* its real path */
	const char *speedups;
	int64_t fixed_line;       /* -1: none */
	const struct causal_opts *o;
};

/* One run's variant: experiments as usual, or (whole) the run as one
 * experiment at one line and speedup. */
struct variant {
	bool whole;
	int64_t line;             /* whole: the line, -1 at 0% */
	unsigned speedup;         /* whole: the speedup */
};

static int build_env(const struct run_setup *s, const struct variant *v, const char *rawdir,
		     struct ks_env *e)
{
	int64_t line = v->whole ? v->line : s->fixed_line;
	const char *preload = getenv("LD_PRELOAD");
	char buf[PATH_MAX + 64];
	struct stat st;
	int rc = 0;

	if (ks_env_init(e))
		return -ENOMEM;
	if (stat(s->program, &st) != 0)
		return -errno;
	snprintf(buf, sizeof(buf), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
	rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_EXE", buf);
	snprintf(buf, sizeof(buf), "%s/lines.bin", s->rundir);
	rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_LINES", buf);
	rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_RAW", rawdir);
	if (v->whole) {
		snprintf(buf, sizeof(buf), "%u", v->speedup);
		rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_SPEEDUPS", buf);
		rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_WHOLE", "1");
	} else {
		rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_SPEEDUPS", s->speedups);
		ks_env_unset(e, "KSCOPE_CAUSAL_RT_WHOLE");
	}
	snprintf(buf, sizeof(buf), "%" PRId64, s->o->experiment_ms);
	rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_EXPERIMENT_MS", buf);
	snprintf(buf, sizeof(buf), "%" PRId64, s->o->period_us * 1000);
	rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_PERIOD_NS", buf);
	if (line >= 0) {
		snprintf(buf, sizeof(buf), "%" PRId64, line);
		rc |= ks_env_set(e, "KSCOPE_CAUSAL_RT_FIXED_LINE", buf);
	} else {
		/* One left in kscope's own environment must not fix the line. */
		ks_env_unset(e, "KSCOPE_CAUSAL_RT_FIXED_LINE");
	}
	if (preload && *preload)
		snprintf(buf, sizeof(buf), "%s:%s", s->runtime, preload);
	else
		snprintf(buf, sizeof(buf), "%s", s->runtime);
	rc |= ks_env_set(e, "LD_PRELOAD", buf);
	return rc ? -ENOMEM : 0;
}

/* Runs the program once, its raw files into <rundir>/raw/run_<k>; the
 * wait status, or -errno with err set. */
static int run_once(const struct run_setup *s, const struct variant *v, int k, char **argv,
		    struct ks_err *err)
{
	char rawdir[PATH_MAX];
	struct ks_env e;
	int status;

	snprintf(rawdir, sizeof(rawdir), "%s/raw", s->rundir);
	if (mkdir(rawdir, 0700) != 0 && errno != EEXIST)
		return ks_err_set(err, -errno, "cannot create %s: %s", rawdir, strerror(errno));
	snprintf(rawdir, sizeof(rawdir), "%s/raw/run_%d", s->rundir, k);
	if (mkdir(rawdir, 0700) != 0)
		return ks_err_set(err, -errno, "cannot create %s: %s", rawdir, strerror(errno));
	if (build_env(s, v, rawdir, &e)) {
		ks_env_free(&e);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	status = ks_run_program_tied(argv, e.envp, NULL, !s->o->keep_running, err);
	ks_env_free(&e);
	return status;
}

/* ------------------------------------------------------------------ */
/* End-to-end runs                                                     */
/* ------------------------------------------------------------------ */

/* A program without progress points is measured by its run time: each
 * run is one experiment.  The first such run is at 0% (a baseline, and
 * the samples lines are drawn from); after it, every other run is at 0%
 * too, and the others take the nonzero speedups in turn, at a line drawn
 * in proportion to the samples of the runs so far (or the fixed line). */
struct planner {
	unsigned nonzero[101];
	size_t nnonzero, next;
	uint64_t rng;
	int first_whole;          /* the first run made whole */
};

static uint64_t planner_rand(struct planner *p)
{
	p->rng ^= p->rng << 13;
	p->rng ^= p->rng >> 7;
	p->rng ^= p->rng << 17;
	return p->rng;
}

/* A line drawn in proportion to the samples the runs so far recorded;
 * -1 when none has any. */
static int64_t draw_line(struct planner *p, const struct ks_causal_data *d)
{
	uint64_t total = 0, pick;

	for (size_t i = 0; i < d->nsamples; i++)
		total += d->samples[i].count;
	if (!total)
		return -1;
	pick = planner_rand(p) % total;
	for (size_t i = 0; i < d->nsamples; i++) {
		if (pick < d->samples[i].count)
			return d->samples[i].line;
		pick -= d->samples[i].count;
	}
	return -1;
}

static void plan_whole(struct planner *p, int k, int64_t fixed, const char *rundir,
		       size_t nlines, struct variant *v)
{
	struct ks_causal_data d = { 0 };
	size_t nfiles;

	v->whole = true;
	v->line = -1;
	v->speedup = 0;
	if ((k - p->first_whole) % 2 == 0)
		return;
	if (fixed >= 0) {
		v->line = fixed;
	} else if (ks_causal_data_init(&d, nlines) == 0) {
		if (ks_causal_data_read_run(&d, rundir, &nfiles, NULL) == 0)
			v->line = draw_line(p, &d);
		ks_causal_data_free(&d);
	}
	if (v->line < 0)
		return;     /* no sample yet: another baseline */
	v->speedup = p->nonzero[p->next++ % p->nnonzero];
}

/* Records a run's variant in variants.tsv (run, mode, line, speedup and
 * the settings the runtime got), appended as the runs go. */
static void note_variant(const char *rundir, int k, const struct variant *v,
			 const struct ks_causal_lines *lines, const char *speedups)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/variants.tsv", rundir);
	f = fopen(path, k == 1 ? "wxe" : "ae");
	if (!f)
		return;
	if (k == 1)
		fputs("run\tmode\tline\tspeedup_pct\tsettings\n", f);
	if (!v->whole)
		fprintf(f, "%d\texperiments\t-\t-\tKSCOPE_CAUSAL_RT_SPEEDUPS=%s\n", k, speedups);
	else if (v->line < 0)
		fprintf(f, "%d\tend-to-end\t-\t0\tKSCOPE_CAUSAL_RT_WHOLE=1 "
			"KSCOPE_CAUSAL_RT_SPEEDUPS=0\n", k);
	else
		fprintf(f, "%d\tend-to-end\t%s:%d\t%u\tKSCOPE_CAUSAL_RT_WHOLE=1 "
			"KSCOPE_CAUSAL_RT_SPEEDUPS=%u KSCOPE_CAUSAL_RT_FIXED_LINE=%" PRId64 "\n",
			k, lines->lines[v->line].file, lines->lines[v->line].line, v->speedup,
			v->speedup, v->line);
	fclose(f);
}

/* Did run k record a throughput progress point? */
static bool run_has_points(const char *rundir, size_t nlines)
{
	struct ks_causal_data d = { 0 };
	size_t nfiles;
	bool any = false;

	if (ks_causal_data_init(&d, nlines) || ks_causal_data_read_run(&d, rundir, &nfiles, NULL)) {
		ks_causal_data_free(&d);
		return true;    /* unreadable: let the analysis say why */
	}
	for (size_t i = 0; i < d.npoints && !any; i++)
		any = d.points[i].kind == KS_CAUSAL_THROUGHPUT;
	ks_causal_data_free(&d);
	return any;
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

/* Writes one deliverable through a memory stream. */
static int put(struct ks_rundir *rd, const char *name, int (*fill)(FILE *, void *), void *ctx,
	       struct ks_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc;

	if (!mem)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = fill(mem, ctx);
	if (fclose(mem) != 0 && !rc)
		rc = -ENOMEM;
	if (rc)
		rc = ks_err_set(err, rc, "cannot write %s: %s", name, strerror(-rc));
	else
		rc = ks_outfile_put(rd, name, buf, len, KS_DELIVERABLE_MODE, err);
	free(buf);
	return rc;
}

struct outputs {
	const struct ks_causal_data *d;
	const struct ks_causal_result *r;
	const struct ks_causal_line *lines;
	const struct ks_causal_lines *table;
};

static int fill_ranges(FILE *f, void *ctx)
{
	return ks_causal_lines_write_ranges(((struct outputs *)ctx)->table, f);
}

static int fill_table(FILE *f, void *ctx)
{
	return ks_causal_lines_write_table(((struct outputs *)ctx)->table, f);
}

static int fill_coz(FILE *f, void *ctx)
{
	struct outputs *o = ctx;

	return ks_causal_write_coz(f, o->d, o->lines, NULL);
}

static int fill_csv(FILE *f, void *ctx)
{
	struct outputs *o = ctx;

	return ks_causal_write_csv(f, o->r, o->lines, NULL);
}

static int fill_svg(FILE *f, void *ctx)
{
	struct outputs *o = ctx;

	return ks_causal_write_svg(f, o->r, o->lines, 12, NULL);
}

static int fill_report(FILE *f, void *ctx)
{
	struct outputs *o = ctx;

	return ks_causal_write_report(f, o->r, o->lines, 0, NULL);
}

static size_t throughput_points(const struct ks_causal_data *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nnames; i++)
		for (size_t j = 0; j < d->npoints; j++)
			if (d->points[j].name == i && d->points[j].kind == KS_CAUSAL_THROUGHPUT) {
				n++;
				break;
			}
	return n;
}

/* ------------------------------------------------------------------ */
/* The command                                                         */
/* ------------------------------------------------------------------ */

static int causal_run(const struct ks_cmd *cmd, struct ks_parsed *ps)
{
	const struct causal_opts *o = ps->opts;
	char runtime[PATH_MAX], speedups[512];
	char *prog = NULL;
	struct ks_causal_lines lines = { 0 };
	struct ks_causal_data data = { 0 };
	struct ks_causal_result res = { 0 };
	struct run_setup setup = { 0 };
	struct ks_rundir rd = { .dirfd = -1 };
	struct ks_err err;
	struct outputs out;
	size_t nfiles = 0;
	struct ks_causal_scope scope = {
		.lines = (const char *const *)o->lines.v, .nlines = o->lines.n,
		.functions = (const char *const *)o->functions.v, .nfunctions = o->functions.n,
		.by_function = o->granularity == 1,
	};
	struct planner plan = { .nnonzero = 0 };
	int64_t fixed = -1;
	int status = 0, first_failure = 0, exit_code = KS_EXIT_USAGE;
	bool rd_made = false;

	(void)cmd;
	ks_err_clear(&err);
	/* Everything is checked before anything is created or launched. */
	if (parse_speedups(o->speedups, speedups, sizeof(speedups), plan.nonzero, &plan.nnonzero,
			   &err) ||
	    ks_find_program(ps->program[0], &prog, &err) ||
	    ks_check_dynamic(prog, "kscope causal", "its runtime", &err) ||
	    ks_causal_lines_read(prog, &scope, &lines, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (o->fixed_line && lines.by_function) {
		ks_error("option --fixed-line names a line; with --granularity function give "
			 "--fixed-function NAME");
		goto out;
	}
	if (o->fixed_function && !lines.by_function) {
		ks_error("option --fixed-function: functions are experimented on with "
			 "--granularity function; a line is chosen with --fixed-line FILE:LINE");
		goto out;
	}
	if (o->fixed_function) {
		uint32_t id;

		if (ks_causal_lines_find_function(&lines, o->fixed_function, &id, &err)) {
			ks_error("option --fixed-function: %s", err.msg);
			goto out;
		}
		fixed = id;
	}
	if (o->fixed_line) {
		uint32_t id;

		if (ks_causal_lines_find(&lines, o->fixed_line, &id, &err)) {
			ks_error("option --fixed-line: %s", err.msg);
			goto out;
		}
		fixed = id;
	}
	if (o->end_to_end && o->runs < 2) {
		ks_error("option --end-to-end: each run is one experiment, so give --runs N "
			 "with N of 2 or more (half the runs are baselines; 20 or more give "
			 "useful intervals)");
		goto out;
	}
	if (plan.nnonzero == 0) {
		ks_error("option --speedups: give at least one speedup above 0, e.g. 0,25,50");
		goto out;
	}
	exit_code = KS_EXIT_FAIL;
	if (find_runtime(runtime, sizeof(runtime), &err) ||
	    ks_rundir_create(o->output, "causal", 0, &rd, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	rd_made = true;
	out = (struct outputs){ NULL, NULL, NULL, &lines };
	if (put(&rd, "lines.bin", fill_ranges, &out, &err) ||
	    put(&rd, "lines.tsv", fill_table, &out, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	setup = (struct run_setup){ runtime, rd.path, prog, speedups, fixed, o };
	plan.rng = (uint64_t)getpid() * 0x9E3779B97F4A7C15ULL | 1;
	if (o->end_to_end)
		plan.first_whole = 1;
	ks_info("profiling %s (%zu lines in scope%s); results in %s", prog, lines.nlines,
		fixed >= 0 ? ", one fixed" : "", rd.path);
	for (int k = 1; k <= o->runs; k++) {
		struct variant v = { .whole = false, .line = -1, .speedup = 0 };
		int st;

		if (plan.first_whole && k >= plan.first_whole)
			plan_whole(&plan, k, fixed, rd.path, lines.nlines, &v);
		note_variant(rd.path, k, &v, &lines, speedups);
		if (o->runs > 1 && !v.whole)
			ks_info("run %d of %" PRId64, k, o->runs);
		else if (o->runs > 1 && v.line < 0)
			ks_info("run %d of %" PRId64 ": the whole run at 0%%", k, o->runs);
		else if (o->runs > 1)
			ks_info("run %d of %" PRId64 ": the whole run, %s:%d at +%u%%", k, o->runs,
				lines.lines[v.line].file, lines.lines[v.line].line, v.speedup);
		st = run_once(&setup, &v, k, ps->program, &err);
		if (st < 0 && k == 1) {
			/* Nothing ran: nothing is kept (cli.h's exit 2). */
			ks_error("%s", err.msg);
			unlinkat(rd.dirfd, "lines.bin", 0);
			unlinkat(rd.dirfd, "lines.tsv", 0);
			unlinkat(rd.dirfd, "variants.tsv", 0);
			unlinkat(rd.dirfd, "raw/run_1", AT_REMOVEDIR);
			unlinkat(rd.dirfd, "raw", AT_REMOVEDIR);
			ks_rundir_discard(&rd);
			rd_made = false;
			exit_code = KS_EXIT_USAGE;
			goto out;
		}
		if (st < 0) {
			ks_error("run %d: %s; analysing the %d run%s before it", k, err.msg,
				 k - 1, k == 2 ? "" : "s");
			break;
		}
		if (ks_exit_status(st) != 0 && o->runs > 1)
			ks_warn("run %d of %" PRId64 " exited with status %d", k, o->runs,
				ks_exit_status(st));
		if (ks_exit_status(st) != 0 && !first_failure)
			first_failure = st;
		status = st;
		if (WIFSIGNALED(st)) {
			ks_info("the program was ended by signal %d (%s); keeping the "
				"experiments it finished", WTERMSIG(st), strsignal(WTERMSIG(st)));
			if (WTERMSIG(st) == SIGINT || WTERMSIG(st) == SIGTERM)
				break;
		}
		/* A program without progress points: the runs left measure its
		 * run time. */
		if (k == 1 && !plan.first_whole && o->runs > 1 &&
		    !run_has_points(rd.path, lines.nlines)) {
			ks_warn("the program has no throughput progress point: the %" PRId64
				" runs left each measure the whole run's time, one line and "
				"speedup per run (the point \"end-to-end\"; docs/causal.md)",
				o->runs - 1);
			plan.first_whole = 2;
		}
	}
	/* The first run that failed, else the last run's status. */
	exit_code = ks_exit_status(first_failure ? first_failure : status);

	if (ks_causal_data_init(&data, lines.nlines) ||
	    ks_causal_data_read_run(&data, rd.path, &nfiles, &err)) {
		ks_error("%s", err.msg[0] ? err.msg : "out of memory");
		exit_code = KS_EXIT_FAIL;
		goto out;
	}
	if (data.truncated)
		ks_warn("%zu raw record%s ended without a newline (a process was killed "
			"while writing) and %s left out", data.truncated,
			data.truncated == 1 ? "" : "s", data.truncated == 1 ? "was" : "were");
	if (ks_causal_analyze(&data, o->progress, &res, &err)) {
		ks_error("%s", err.msg);
		exit_code = KS_EXIT_FAIL;
		goto out;
	}
	out = (struct outputs){ &data, &res, lines.lines, &lines };
	if (put(&rd, "profile.coz", fill_coz, &out, &err) ||
	    put(&rd, "causal.csv", fill_csv, &out, &err) ||
	    put(&rd, "report.txt", fill_report, &out, &err) ||
	    put(&rd, "causal.svg", fill_svg, &out, &err)) {
		ks_error("%s", err.msg);
		exit_code = KS_EXIT_FAIL;
		goto out;
	}
	{
		char dbpath[PATH_MAX], runs[32];
		const char *meta[] = { "program", prog, "runs", runs, "speedups", speedups,
				       "granularity", granularity_choices[o->granularity],
				       NULL, NULL };

		snprintf(runs, sizeof(runs), "%" PRId64, o->runs);
		snprintf(dbpath, sizeof(dbpath), "%s/profile.db", rd.path);
		if (ks_causal_db_write(dbpath, meta, &lines, &data, &res, &err)) {
			ks_error("%s", err.msg);
			exit_code = KS_EXIT_FAIL;
			goto out;
		}
	}
	fprintf(stderr, "kscope causal: %zu experiment%s in %zu process%s, %zu progress "
		"point%s\n", data.nexperiments, data.nexperiments == 1 ? "" : "s",
		data.nprocesses, data.nprocesses == 1 ? "" : "es", throughput_points(&data),
		throughput_points(&data) == 1 ? "" : "s");
	if (nfiles == 0)
		ks_warn("no process of the program ran experiments: is %s the program's "
			"executable (not a script that starts it)?", prog);
	else if (throughput_points(&data) == 0)
		ks_warn("the program has no throughput progress point: mark its progress "
			"with kscope_progress(\"name\") or coz's COZ_PROGRESS, or measure "
			"its run time with --end-to-end --runs N (docs/causal.md)");
	for (size_t i = 0; i < data.nprocesses; i++)
		if (data.processes[i].coarse) {
			ks_warn("process %" PRIu64 " was sampled with POSIX CPU-time timers "
				"(perf_event_open was refused: see "
				"/proc/sys/kernel/perf_event_paranoid), which the kernel "
				"checks only at its tick: delays came in lumps of the tick, "
				"and predictions for threads that meet more often than that "
				"are off (docs/causal.md)", data.processes[i].pid);
			break;
		}
	{
		char busy[512];

		if (ks_causal_busy_warning(&res, busy, sizeof(busy)))
			ks_warn("%s", busy);
	}
	if (res.unusable)
		ks_warn("%zu experiment%s inserted as much delay as %s lasted and %s left "
			"out", res.unusable, res.unusable == 1 ? "" : "s",
			res.unusable == 1 ? "it" : "they", res.unusable == 1 ? "was" : "were");
	ks_causal_write_report(stderr, &res, lines.lines, 5, NULL);
	fprintf(stderr, "results: %s\n", rd.path);
out:
	if (rd_made)
		ks_rundir_close(&rd);
	ks_causal_result_free(&res);
	ks_causal_data_free(&data);
	ks_causal_lines_free(&lines);
	free(prog);
	return exit_code;
}

const struct ks_cmd ks_cmd_causal = {
	.name = "causal",
	.summary = "find the lines whose speedup would speed the program up",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Causal profiling, as introduced by coz: runs PROGRAM with kscope's\n"
		"runtime preloaded, which runs experiments one after the other, each\n"
		"virtually speeding up one source line by a percentage (the other\n"
		"threads are paused whenever the line runs) and measuring how often\n"
		"the program's progress points are reached.  Mark progress with\n"
		"kscope_progress(\"name\") (kscope/user.h) or coz's COZ_PROGRESS.  The\n"
		"program needs line information (-g).  Results: for each line, the\n"
		"program speedup predicted at each line speedup with a 95% interval,\n"
		"lines ranked by impact, in <output>/causal_<YYYYmmdd_HHMMSS>_<pid>/:\n"
		"report.txt, causal.csv, causal.svg (the curves) and profile.coz (coz's\n"
		"format, for its viewer); --end-to-end measures a program without\n"
		"progress points by its run time, one experiment per run;\n"
		"the head of the report goes to stderr (docs/causal.md).  kscope exits\n"
		"with the program's status (128+N if signal N ended it).",
	.args = {
		.opts = causal_opts,
		.opts_size = sizeof(struct causal_opts),
		.takes_program = true,
	},
	.run = causal_run,
};
