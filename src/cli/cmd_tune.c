/*
 * kscope tune: searches a kernel's parameters by building and running
 * every configuration of a space (docs/tune.md).
 *
 *     kscope tune --src FILE --space SPACE.json --build CMD --run CMD [options]
 *
 * A thin layer over include/kscope/tune.h: this file checks the command
 * line and the inputs (everything is checked before the run directory is
 * created), blocks SIGINT and SIGTERM into a signalfd that the search
 * polls as its stop descriptor, shows the progress on stderr, writes
 * tune.csv and tune.json, and prints the table and the best configuration
 * on stdout.  Exit status: 0 when at least one configuration was
 * measured, 1 when none was, 2 on bad input, 128 + the signal when
 * interrupted (what was measured is still written).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kscope/tune.h"
#include "log.h"
#include "outdir.h"

#define DEFAULT_ROWS 20       /* rows printed without --top or --predict */
#define MAX_FAILURES_SHOWN 10
#define PROGRESS_EVERY_S 5.0  /* off a terminal */

struct tune_opts {
	struct ks_common_opts common;
	char *src;
	char *space;
	char *build;
	char *run;
	int64_t warmup;
	int64_t repeat;
	int64_t jobs;          /* 0 when not given */
	int64_t timeout;
	int64_t build_timeout;
	double stop_factor;
	int64_t top;           /* 0 when not given */
	char *predict;
	char *output;
	char *verify;
	double precision;
	int64_t max_runs;
	int strategy;          /* index into strategy_choices */
	int64_t max_evals;     /* 0 when not given */
	double time_budget;
	int64_t seed;
	struct ks_strlist restrict_exprs;
	int64_t model_top;
	int64_t model_sample;
	char *cache;           /* NULL when not given */
};

/* In the order of enum ks_tune_strategy. */
static const char *const strategy_choices[] = { "exhaustive", "random", "anneal",
						"model", NULL };
_Static_assert(KS_TUNE_EXHAUSTIVE == 0 && KS_TUNE_RANDOM == 1 && KS_TUNE_ANNEAL == 2 &&
	       KS_TUNE_MODEL == 3, "strategy_choices follows enum ks_tune_strategy");

#define OPT(f) .offset = offsetof(struct tune_opts, f)

static const struct ks_opt tune_opts[] = {
	{ .name = "src", .type = KS_OPT_PATH, .metavar = "FILE", .env = "KSCOPE_TUNE_SRC",
	  .help = "the source whose lines marked // tunable get each configuration's "
		  "values, in a copy (FILE itself is never changed)",
	  OPT(src), .flags = KS_PATH_FILE | KS_PATH_READ },
	{ .name = "space", .type = KS_OPT_PATH, .metavar = "FILE",
	  .env = "KSCOPE_TUNE_SPACE",
	  .help = "the configurations: a JSON list of objects, [{\"TILE\": 32}, ...], "
		  "or an object of lists, {\"TILE\": [16, 32]}, whose cartesian "
		  "product is the space",
	  OPT(space), .flags = KS_PATH_FILE | KS_PATH_READ },
	{ .name = "build", .type = KS_OPT_STRING, .metavar = "CMD",
	  .env = "KSCOPE_TUNE_BUILD",
	  .help = "builds {src} into {exe}, e.g. \"cc -O2 {src} -o {exe}\" (also "
		  "{dir}, {srcdir}); split into words by kscope, never run by a shell",
	  OPT(build), .max_len = KS_TUNE_MAX_COMMAND },
	{ .name = "run", .type = KS_OPT_STRING, .metavar = "CMD", .env = "KSCOPE_TUNE_RUN",
	  .help = "runs {exe}, e.g. \"{exe} 1024\"; a run's time is its last "
		  "KSCOPE_TIME_NS=<n> line on stdout, else its wall time",
	  OPT(run), .max_len = KS_TUNE_MAX_COMMAND },
	{ .name = "strategy", .type = KS_OPT_ENUM, .metavar = "S", .def = "exhaustive",
	  .env = "KSCOPE_TUNE_STRATEGY",
	  .help = "which configurations to build: exhaustive (all, in the space's "
		  "order), random (drawn with --seed), anneal (simulated annealing "
		  "over the grid with --seed) or model (with --predict: the "
		  "--model-top best predicted and --model-sample others)",
	  OPT(strategy), .choices = strategy_choices },
	{ .name = "max-evals", .type = KS_OPT_INT, .metavar = "N",
	  .env = "KSCOPE_TUNE_MAX_EVALS",
	  .help = "build and run at most N configurations (default: no limit; 100 "
		  "with --strategy anneal)",
	  OPT(max_evals), .min = 1, .max = KS_TUNE_MAX_CONFIGS },
	{ .name = "model-top", .type = KS_OPT_INT, .metavar = "K", .def = "5",
	  .env = "KSCOPE_TUNE_MODEL_TOP",
	  .help = "with --strategy model: build and run the K best predicted",
	  OPT(model_top), .min = 1, .max = KS_TUNE_MAX_CONFIGS },
	{ .name = "model-sample", .type = KS_OPT_INT, .metavar = "S", .def = "5",
	  .env = "KSCOPE_TUNE_MODEL_SAMPLE",
	  .help = "with --strategy model: and S others drawn with --seed, to check "
		  "the model (the rank correlation of predicted and measured times)",
	  OPT(model_sample), .min = 0, .max = KS_TUNE_MAX_CONFIGS },
	{ .name = "cache", .type = KS_OPT_STRING, .metavar = "DIR",
	  .env = "KSCOPE_TUNE_CACHE",
	  .help = "keep measured results in DIR (created if missing) and reuse them: "
		  "a configuration with the same source, values, commands and "
		  "measurement settings is not built or run again (default: no cache)",
	  OPT(cache), .max_len = 4000 },
	{ .name = "time-budget", .type = KS_OPT_DOUBLE, .metavar = "S", .def = "0",
	  .env = "KSCOPE_TUNE_TIME_BUDGET",
	  .help = "start no configuration after S seconds of search (0: no limit)",
	  OPT(time_budget), .dmin = 0, .dmax = 1e7 },
	{ .name = "seed", .type = KS_OPT_INT, .metavar = "N", .def = "1",
	  .env = "KSCOPE_TUNE_SEED",
	  .help = "seed of --strategy random, anneal and model: the same seed "
		  "takes up the same configurations", OPT(seed), .min = 0, .max = INT64_MAX },
	{ .name = "restrict", .type = KS_OPT_STRING, .metavar = "EXPR",
	  .env = "KSCOPE_TUNE_RESTRICT",
	  .help = "build only configurations for which EXPR is true, e.g. 'TILE * "
		  "UNROLL <= 256' (integers, keys, + - * / % comparisons && || ! "
		  "parentheses; repeatable: all must hold)", OPT(restrict_exprs),
	  .flags = KS_OPT_REPEAT, .max_len = 1024 },
	{ .name = "verify", .type = KS_OPT_STRING, .metavar = "CMD",
	  .env = "KSCOPE_TUNE_VERIFY",
	  .help = "checks each configuration's result after its first run (stdout "
		  "in the file $KSCOPE_TUNE_STDOUT, values in $KSCOPE_TUNE_PARAM_<KEY>); "
		  "a non-zero exit fails it: it is not ranked",
	  OPT(verify), .max_len = KS_TUNE_MAX_COMMAND },
	{ .name = "warmup", .type = KS_OPT_INT, .metavar = "N", .def = "1",
	  .env = "KSCOPE_TUNE_WARMUP",
	  .help = "unmeasured runs of each configuration first", OPT(warmup),
	  .min = 0, .max = 1000 },
	{ .name = "repeat", .type = KS_OPT_INT, .metavar = "N", .def = "5",
	  .env = "KSCOPE_TUNE_REPEAT",
	  .help = "measured runs of each configuration at least (median, 20th and "
		  "80th percentiles)", OPT(repeat), .min = 1, .max = 1000 },
	{ .name = "precision", .type = KS_OPT_DOUBLE, .metavar = "P", .def = "5",
	  .env = "KSCOPE_TUNE_PRECISION",
	  .help = "then measure until the median's 95% confidence interval is at "
		  "most P percent of the median wide (0: exactly --repeat runs; "
		  "else 0.1 to 100)", OPT(precision), .dmin = 0, .dmax = 100 },
	{ .name = "max-runs", .type = KS_OPT_INT, .metavar = "N", .def = "30",
	  .env = "KSCOPE_TUNE_MAX_RUNS",
	  .help = "with --precision: at most N measured runs of a configuration",
	  OPT(max_runs), .min = 1, .max = 1000 },
	{ .name = "jobs", .short_name = 'j', .type = KS_OPT_INT, .metavar = "J",
	  .env = "KSCOPE_TUNE_JOBS",
	  .help = "builds at a time (default: the CPUs kscope may run on); runs are "
		  "always one at a time", OPT(jobs), .min = 1, .max = 1024 },
	{ .name = "timeout", .type = KS_OPT_INT, .metavar = "S", .def = "60",
	  .env = "KSCOPE_TUNE_TIMEOUT",
	  .help = "a run taking longer than S seconds is killed (its process group) "
		  "and its configuration fails", OPT(timeout), .min = 1, .max = 86400 },
	{ .name = "build-timeout", .type = KS_OPT_INT, .metavar = "S", .def = "300",
	  .env = "KSCOPE_TUNE_BUILD_TIMEOUT",
	  .help = "the same for a build", OPT(build_timeout), .min = 1, .max = 86400 },
	{ .name = "stop-factor", .type = KS_OPT_DOUBLE, .metavar = "F", .def = "3",
	  .env = "KSCOPE_TUNE_STOP_FACTOR",
	  .help = "stop measuring a configuration once its median is more than F "
		  "times the best so far (0: never; else at least 1)",
	  OPT(stop_factor), .dmin = 0, .dmax = 1000 },
	{ .name = "top", .type = KS_OPT_INT, .metavar = "K", .env = "KSCOPE_TUNE_TOP",
	  .help = "with --predict: build and run only the K best predicted (default "
		  "3); without: print only the first K rows (default 20)",
	  OPT(top), .min = 1, .max = KS_TUNE_MAX_CONFIGS },
	{ .name = "predict", .type = KS_OPT_PATH, .metavar = "MODEL",
	  .env = "KSCOPE_TUNE_PREDICT",
	  .help = "a kscope predict model (.kpp) whose params are keys of the space: "
		  "rank the configurations by predicted time first",
	  OPT(predict), .flags = KS_PATH_FILE | KS_PATH_READ },
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR",
	  .def = "kscope-out", .env = "KSCOPE_OUTPUT",
	  .help = "where the run directory is created", OPT(output) },
	KS_COMMON_OPTS(struct tune_opts),
	KS_OPT_END
};

/* ---------------------------------------------------------------------
 * Progress and notes on stderr
 * --------------------------------------------------------------------- */

struct progress {
	bool show;            /* the log level lets info through */
	bool tty;             /* stderr is a terminal: one line, redrawn */
	bool line_open;
	char phase[8];
	double last;          /* last line off a terminal */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress_end(struct progress *pr)
{
	if (pr->line_open) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		pr->line_open = false;
	}
}

/* A time in the unit that suits it. */
static void fmt_time(double ns, char *buf, size_t size)
{
	if (ns < 0)
		snprintf(buf, size, "-");
	else if (ns < 1e3)
		snprintf(buf, size, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, size, "%.3f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, size, "%.3f ms", ns / 1e6);
	else
		snprintf(buf, size, "%.3f s", ns / 1e9);
}

static void on_progress(void *arg, const struct ks_tune_progress *p)
{
	struct progress *pr = arg;
	bool is_run = strcmp(p->phase, "run") == 0;
	char line[512], best[32], failed[32] = "";
	double t = now_s();

	if (!pr->show)
		return;
	fmt_time(p->best_ns, best, sizeof(best));
	if (p->failed)
		snprintf(failed, sizeof(failed), ", %zu failed", p->failed);
	if (!is_run)
		snprintf(line, sizeof(line), "building %zu/%zu%s", p->done, p->total, failed);
	else if (p->run > 0)
		snprintf(line, sizeof(line), "measuring %zu/%zu%s, best %s: %s (run %d/%d)",
			 p->done + 1, p->total, failed, best, p->label, p->run, p->runs);
	else
		snprintf(line, sizeof(line), "measured %zu/%zu%s, best %s", p->done,
			 p->total, failed, best);
	if (pr->tty) {
		fprintf(stderr, "\r\033[Kkscope: %s", line);
		fflush(stderr);
		pr->line_open = true;
	} else if (strcmp(pr->phase, p->phase) != 0 || t - pr->last >= PROGRESS_EVERY_S) {
		ks_info("%s", line);
		pr->last = t;
	}
	snprintf(pr->phase, sizeof(pr->phase), "%s", p->phase);
}

static void on_note(void *arg, enum ks_tune_level level, const char *msg)
{
	progress_end(arg);
	if (level == KS_TUNE_WARN)
		KS_LOG_RATELIMITED(KS_LOG_WARN, "%s", msg);
	else
		ks_info("%s", msg);
}

/* ---------------------------------------------------------------------
 * The table
 * --------------------------------------------------------------------- */

#define MAX_CELL 32

/* A value for the table: cut to MAX_CELL characters. */
static void cell(const char *v, char *buf, size_t size)
{
	size_t n = strlen(v);

	if (n <= MAX_CELL)
		snprintf(buf, size, "%s", v);
	else
		snprintf(buf, size, "%.*s...", MAX_CELL - 3, v);
}

/* The unit of the table's times: the best median's. */
static void pick_unit(const struct ks_tune_result *r, const char **name, double *div)
{
	double ns = r->best ? r->best->median_ns : 1e6;

	if (ns < 1e4) {
		*name = "ns";
		*div = 1;
	} else if (ns < 1e7) {
		*name = "us";
		*div = 1e3;
	} else if (ns < 1e10) {
		*name = "ms";
		*div = 1e6;
	} else {
		*name = "s";
		*div = 1e9;
	}
}

static void fmt_cell_time(double ns, double div, char *buf, size_t size)
{
	if (ns < 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.*f", div == 1 ? 0 : 3, ns / div);
}

static bool row_shown(const struct ks_tune_result *r, const struct ks_tune_row *w)
{
	/* The configurations left out (by the model, the strategy, the time
	 * budget or --restrict) are counted, not listed. */
	(void)r;
	return w->status != KS_TUNE_NOT_SELECTED && w->status != KS_TUNE_RESTRICTED;
}

static void print_table(const struct ks_tune_result *r, size_t limit)
{
	const char *unit;
	double div;
	int wk[KS_TUNE_MAX_KEYS], wt[4] = { 0 };
	char hdr[4][32], buf[64];
	size_t shown = 0, total = 0, rank = 0;
	int ws = (int)strlen("status"), wpred = (int)strlen("predicted (us)");
	int wci = (int)strlen("ci (%)");

	pick_unit(r, &unit, &div);
	snprintf(hdr[0], sizeof(hdr[0]), "median (%s)", unit);
	snprintf(hdr[1], sizeof(hdr[1]), "p20 (%s)", unit);
	snprintf(hdr[2], sizeof(hdr[2]), "p80 (%s)", unit);
	snprintf(hdr[3], sizeof(hdr[3]), "runs");
	for (int i = 0; i < 4; i++)
		wt[i] = (int)strlen(hdr[i]);
	for (size_t k = 0; k < r->nkeys; k++)
		wk[k] = (int)strlen(r->keys[k]);
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ks_tune_row *w = &r->rows[i];
		double t[3] = { w->median_ns, w->p20_ns, w->p80_ns };

		if (!row_shown(r, w))
			continue;
		if (total++ >= limit)
			continue;
		for (size_t k = 0; k < r->nkeys; k++) {
			cell(w->values[k], buf, sizeof(buf));
			if ((int)strlen(buf) > wk[k])
				wk[k] = (int)strlen(buf);
		}
		for (int j = 0; j < 3; j++) {
			fmt_cell_time(t[j], div, buf, sizeof(buf));
			if ((int)strlen(buf) > wt[j])
				wt[j] = (int)strlen(buf);
		}
		if ((int)strlen(ks_tune_status_name(w->status)) > ws)
			ws = (int)strlen(ks_tune_status_name(w->status));
	}
	printf("%4s", "rank");
	for (size_t k = 0; k < r->nkeys; k++)
		printf("  %*s", wk[k], r->keys[k]);
	for (int j = 0; j < 4; j++)
		printf("  %*s", wt[j], hdr[j]);
	printf("  %*s", wci, "ci (%)");
	if (r->predict)
		printf("  %*s", wpred, "predicted (us)");
	printf("  %s\n", "status");
	for (size_t i = 0; i < r->nrows && shown < limit; i++) {
		const struct ks_tune_row *w = &r->rows[i];
		double t[3] = { w->median_ns, w->p20_ns, w->p80_ns };

		if (!row_shown(r, w))
			continue;
		shown++;
		if (w->status == KS_TUNE_OK || w->status == KS_TUNE_STOPPED) {
			/* Ties with the best share its rank, marked "=1": their
			 * order is noise. */
			++rank;
			if (w->tie)
				printf("%4s", "=1");
			else
				printf("%4zu", rank);
		} else {
			printf("%4s", "-");
		}
		for (size_t k = 0; k < r->nkeys; k++) {
			cell(w->values[k], buf, sizeof(buf));
			printf("  %*s", wk[k], buf);
		}
		for (int j = 0; j < 3; j++) {
			fmt_cell_time(t[j], div, buf, sizeof(buf));
			printf("  %*s", wt[j], buf);
		}
		printf("  %*zu", wt[3], w->runs);
		if (w->runs && w->median_ns > 0)
			snprintf(buf, sizeof(buf), "%.1f",
				 100 * (w->ci_hi_ns - w->ci_lo_ns) / w->median_ns);
		else
			snprintf(buf, sizeof(buf), "-");
		printf("  %*s", wci, buf);
		if (r->predict) {
			if (w->predicted_us < 0)
				snprintf(buf, sizeof(buf), "-");
			else
				snprintf(buf, sizeof(buf), "%.3f", w->predicted_us);
			printf("  %*s", wpred, buf);
		}
		printf("  %s%s%s%s\n", ks_tune_status_name(w->status),
		       w->tie ? ", tie" : w->status == KS_TUNE_OK && !w->precise
		       ? ", imprecise" : "", w->cached ? ", cached" : "",
		       w->sampled ? ", sampled" : "");
	}
	if (total > shown)
		printf("(%zu more row%s in tune.csv)\n", total - shown,
		       total - shown == 1 ? "" : "s");
	if (r->strategy == KS_TUNE_MODEL && r->not_selected)
		printf("(%zu configuration%s not built: neither among the --model-top "
		       "%zu best predicted nor in the --model-sample of %zu; their "
		       "predictions are in tune.csv)\n", r->not_selected,
		       r->not_selected == 1 ? "" : "s", r->model_top, r->model_sample);
	else if (r->predict && r->not_selected)
		printf("(%zu configuration%s not built: predicted slower than the top "
		       "%zu; their predictions are in tune.csv)\n", r->not_selected,
		       r->not_selected == 1 ? "" : "s", r->top);
	else if (r->strategy == KS_TUNE_ANNEAL && r->not_selected)
		printf("(%zu configuration%s not built: the annealing did not reach "
		       "them within %s)\n", r->not_selected,
		       r->not_selected == 1 ? "" : "s", r->budget_spent
		       ? "the time budget" : "its evaluations (--max-evals)");
	else if (r->not_selected)
		printf("(%zu configuration%s not built: %s)\n", r->not_selected,
		       r->not_selected == 1 ? "" : "s", r->budget_spent
		       ? "the time budget was spent or --max-evals reached"
		       : "beyond --max-evals");
	if (r->restricted)
		printf("(%zu configuration%s excluded by --restrict, not built)\n",
		       r->restricted, r->restricted == 1 ? "" : "s");
}

/* Prints text's lines indented, control bytes other than tabs as '?'. */
static void print_indented(const char *text)
{
	bool bol = true;

	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (bol)
			fputs("    ", stdout);
		bol = *p == '\n';
		putchar(*p == '\n' || *p == '\t' || *p >= 0x20 ? *p : '?');
	}
	if (!bol)
		putchar('\n');
}

static void print_failures(const struct ks_tune_result *r)
{
	size_t shown = 0;
	char lab[512];

	if (!r->failed)
		return;
	printf("\nfailures:\n");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ks_tune_row *w = &r->rows[i];

		if (w->status == KS_TUNE_OK || w->status == KS_TUNE_STOPPED ||
		    w->status == KS_TUNE_NOT_SELECTED || w->status == KS_TUNE_RESTRICTED ||
		    w->status == KS_TUNE_INTERRUPTED)
			continue;
		if (shown++ == MAX_FAILURES_SHOWN) {
			printf("  (%zu more in tune.csv)\n", r->failed - MAX_FAILURES_SHOWN);
			break;
		}
		ks_tune_row_label(r, w, lab, sizeof(lab));
		printf("  %s: %s: %s\n", lab, ks_tune_status_name(w->status), w->message);
		print_indented(w->output);
	}
}

/* Strategy model: how well the model ranked what was measured. */
static void print_model(const struct ks_tune_result *r)
{
	const struct ks_tune_row *mbest = NULL;
	char lb[512], lm[512], med[32], mmed[32];

	if (!r->has_spearman) {
		printf("model: no rank correlation: %zu measured configuration%s (it "
		       "needs 3 or more, with different times)\n", r->spearman_n,
		       r->spearman_n == 1 ? "" : "s");
		return;
	}
	printf("model: Spearman rank correlation %.2f between predicted and measured "
	       "times over %zu configurations (%zu top predicted, up to %zu sampled)\n",
	       r->spearman, r->spearman_n, r->model_top, r->model_sample);
	if (r->spearman >= 0.5)
		return;
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ks_tune_row *w = &r->rows[i];

		if ((w->status == KS_TUNE_OK || w->status == KS_TUNE_STOPPED) &&
		    (!mbest || w->predicted_rank < mbest->predicted_rank))
			mbest = w;
	}
	ks_tune_row_label(r, r->best, lb, sizeof(lb));
	ks_tune_row_label(r, mbest, lm, sizeof(lm));
	fmt_time(r->best->median_ns, med, sizeof(med));
	fmt_time(mbest->median_ns, mmed, sizeof(mmed));
	printf("warning: the model and the measurements disagree (rank correlation "
	       "below 0.5): the best measured is %s (median %s); the model's best is "
	       "%s (predicted %.3f us, measured %s)\n", lb, med, lm,
	       mbest->predicted_us, mmed);
}

static void print_result(const struct ks_tune_result *r, size_t limit, const char *dir)
{
	char lab[512], med[32];

	printf("kscope tune: %zu configuration%s: %zu measured, %zu failed", r->nrows,
	       r->nrows == 1 ? "" : "s", r->measured, r->failed);
	if (r->predict || r->not_selected)
		printf(", %zu not selected", r->not_selected);
	if (r->restricted)
		printf(", %zu restricted", r->restricted);
	if (r->interrupted)
		printf(", %zu not measured (interrupted)", r->interrupted);
	if (r->cached)
		printf(", %zu cached", r->cached);
	printf("\n");
	print_table(r, limit);
	print_failures(r);
	printf("\n");
	if (r->cached)
		printf("cached: %zu configuration%s came from the cache '%s', not "
		       "built or run\n", r->cached, r->cached == 1 ? "" : "s", r->cache_dir);
	if (r->strategy == KS_TUNE_MODEL)
		print_model(r);
	if (r->ties) {
		size_t n = 0;

		printf("tie: %zu configurations are within noise of each other (their "
		       "medians' 95%% intervals overlap the best's); measure them "
		       "again or with a smaller --precision to separate them:\n", r->ties);
		for (size_t i = 0; i < r->nrows && n < r->ties; i++) {
			const struct ks_tune_row *w = &r->rows[i];

			if (!w->tie)
				continue;
			n++;
			ks_tune_row_label(r, w, lab, sizeof(lab));
			fmt_time(w->median_ns, med, sizeof(med));
			printf("  %s (median %s of %zu runs)\n", lab, med, w->runs);
		}
	}
	if (r->best) {
		ks_tune_row_label(r, r->best, lab, sizeof(lab));
		fmt_time(r->best->median_ns, med, sizeof(med));
		printf("best: %s (median %s of %zu run%s%s)\n", lab, med, r->best->runs,
		       r->best->runs == 1 ? "" : "s", r->ties ? "; tied: see above" : "");
	} else {
		printf("best: none (no configuration was measured)\n");
	}
	printf("results: %s\n", dir);
}

/* ---------------------------------------------------------------------
 * The command
 * --------------------------------------------------------------------- */

static bool given(const struct ks_parsed *p, const char *name)
{
	return p->given[ks_opt_find(tune_opts, name) - tune_opts];
}

static int check_required(const struct tune_opts *o)
{
	const char *names[4] = { "--src", "--space", "--build", "--run" };
	const void *vals[4] = { o->src, o->space, o->build, o->run };
	char missing[64] = "";

	for (int i = 0; i < 4; i++)
		if (!vals[i])
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 "%s%s", missing[0] ? ", " : "", names[i]);
	if (!missing[0])
		return 0;
	ks_error("'kscope tune' needs --src, --space, --build and --run; missing: %s "
		 "(see 'kscope tune --help')", missing);
	return -EINVAL;
}

/* Gives kscope back its signal mask; returns the first SIGINT or SIGTERM
 * that arrived (0 if none).  Pending signals are read first: unblocked,
 * they would end kscope before it returns its exit status. */
static int restore_signals(int sigfd, const sigset_t *oldmask)
{
	struct signalfd_siginfo si;
	int sig = 0;

	if (sigfd >= 0) {
		while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			if (!sig)
				sig = (int)si.ssi_signo;
		close(sigfd);
	}
	sigprocmask(SIG_SETMASK, oldmask, NULL);
	return sig;
}

static int tune_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	const struct tune_opts *o = p->opts;
	struct ks_tune_space *space = NULL;
	struct ks_tune_result *res = NULL;
	struct ks_tune *t = NULL;
	struct ks_tune_opts to;
	struct progress pr;
	struct ks_rundir rd = { .path = NULL, .dirfd = -1 };
	struct ks_err err;
	char msg[KS_ERR_MSG_MAX];
	sigset_t mask, oldmask;
	int sigfd = -1, sig, rc = 0, status;
	size_t limit;

	(void)cmd;
	ks_err_clear(&err);
	if (check_required(o))
		return KS_EXIT_USAGE;
	if (o->stop_factor > 0 && o->stop_factor < 1) {
		ks_error("option --stop-factor: '%g' is out of range; accepted: 0 (never "
			 "stop early) or a number from 1 to 1000", o->stop_factor);
		return KS_EXIT_USAGE;
	}
	if (o->precision > 0 && o->precision < 0.1) {
		ks_error("option --precision: '%g' is out of range; accepted: 0 (exactly "
			 "--repeat runs) or a number from 0.1 to 100 (percent)",
			 o->precision);
		return KS_EXIT_USAGE;
	}
	if ((given(p, "model-top") || given(p, "model-sample")) && o->strategy != KS_TUNE_MODEL) {
		ks_error("option --%s: only with --strategy model; accepted: --strategy "
			 "model --predict MODEL.kpp --%s N", given(p, "model-top")
			 ? "model-top" : "model-sample", given(p, "model-top")
			 ? "model-top" : "model-sample");
		return KS_EXIT_USAGE;
	}
	if (given(p, "top") && o->strategy == KS_TUNE_MODEL) {
		ks_error("option --top: does not go with --strategy model; accepted: "
			 "--model-top K (the best predicted built) and --model-sample S");
		return KS_EXIT_USAGE;
	}
	if (given(p, "top") && !o->predict)
		ks_debug("--top without --predict: only the first %" PRId64 " rows are "
			 "printed", o->top);
	memset(&pr, 0, sizeof(pr));
	pr.show = ks_log_get_level() >= KS_LOG_INFO;
	pr.tty = isatty(STDERR_FILENO) == 1;

	/* SIGINT and SIGTERM become the search's stop descriptor (the builds
	 * and runs start with an empty signal mask: proc.c).  Nothing is
	 * started before the checks below pass. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0) {
		ks_error("signalfd: %s", strerror(errno));
		status = KS_EXIT_FAIL;
		goto out;
	}

	/* Everything is checked before anything is created. */
	if (ks_tune_space_load(o->space, &space, msg, sizeof(msg)) != 0) {
		ks_error("%s", msg);
		status = KS_EXIT_USAGE;
		goto out;
	}
	ks_tune_opts_init(&to);
	to.src = o->src;
	to.space = space;
	to.build = o->build;
	to.run = o->run;
	to.warmup = (int)o->warmup;
	to.repeat = (int)o->repeat;
	to.jobs = given(p, "jobs") ? (int)o->jobs : 0;
	to.run_timeout_s = (double)o->timeout;
	to.build_timeout_s = (double)o->build_timeout;
	to.stop_factor = o->stop_factor;
	to.predict = o->predict;
	to.verify = o->verify;
	to.precision = o->precision;
	to.max_runs = (int)o->max_runs;
	to.strategy = (enum ks_tune_strategy)o->strategy; /* the choices' order */
	to.model_top = (size_t)o->model_top;
	to.model_sample = (size_t)o->model_sample;
	to.cache_dir = o->cache;
	to.max_evals = given(p, "max-evals") ? (size_t)o->max_evals : 0;
	to.time_budget_s = o->time_budget;
	to.seed = (unsigned long long)o->seed;
	to.restrict_exprs = (const char *const *)o->restrict_exprs.v;
	to.nrestrict = o->restrict_exprs.n;
	if (given(p, "top"))
		to.top = (size_t)o->top;
	to.stop_fd = sigfd;
	to.note = on_note;
	to.progress = on_progress;
	to.arg = &pr;
	if ((rc = ks_tune_new(&to, &t, msg, sizeof(msg))) != 0) {
		ks_error("%s", msg);
		status = rc == -EINVAL ? KS_EXIT_USAGE : KS_EXIT_FAIL;
		rc = 0;
		goto out;
	}
	if (ks_rundir_create(o->output, "tune", 0, &rd, &err)) {
		ks_error("%s", err.msg);
		status = KS_EXIT_FAIL;
		goto out;
	}
	ks_info("tuning %zu of %zu configuration%s of %s; results in %s",
		ks_tune_selected(t), space->nconfigs, space->nconfigs == 1 ? "" : "s",
		o->src, rd.path);
	rc = ks_tune_run(t, rd.path, &res, msg, sizeof(msg));
	progress_end(&pr);
	if (rc && rc != -EINTR) {
		ks_error("%s", msg);
		ks_rundir_discard(&rd);
		status = KS_EXIT_FAIL;
		goto out;
	}
	status = res->measured > 0 ? KS_EXIT_OK : KS_EXIT_FAIL;
	if (ks_tune_write(res, rd.path, msg, sizeof(msg)) != 0) {
		ks_error("%s", msg);
		status = KS_EXIT_FAIL;
	}
	limit = o->predict ? SIZE_MAX : given(p, "top") ? (size_t)o->top : DEFAULT_ROWS;
	print_result(res, limit, rd.path);
	fflush(stdout);
	if (res->measured == 0 && rc == 0)
		ks_error("no configuration was measured: every one failed (see the "
			 "failures above)");
	ks_rundir_close(&rd);
out:
	sig = restore_signals(sigfd, &oldmask);
	if (rc == -EINTR || sig) {
		ks_info("interrupted (%s)%s", sig == SIGTERM ? "SIGTERM" : "SIGINT",
			res ? ": what was measured is in tune.csv and tune.json" : "");
		status = 128 + (sig ? sig : SIGINT);
	}
	ks_tune_result_free(res);
	ks_tune_free(t);
	ks_tune_space_free(space);
	return status;
}

const struct ks_cmd ks_cmd_tune = {
	.name = "tune",
	.summary = "search a kernel's parameters by building and running each variant",
	.usage = "--src FILE --space SPACE.json --build CMD --run CMD [options]",
	.description =
		"Each configuration of SPACE.json gets a copy of FILE whose lines marked\n"
		"// tunable carry its values:\n"
		"  #define KEY VALUE // tunable      TYPE KEY = VALUE; // tunable\n"
		"The copies are built with --build, --jobs at a time, then run with\n"
		"--run one at a time, with no build running: --warmup runs, then\n"
		"--repeat measured runs.  A run's time is the last KSCOPE_TIME_NS=<n>\n"
		"line it printed on stdout, else its wall time.  A configuration whose\n"
		"median is more than --stop-factor times the best so far is stopped\n"
		"early; a build or run that fails or passes its timeout is reported and\n"
		"the search goes on.  --predict ranks the configurations with a kscope\n"
		"predict model first and builds only the --top best; --strategy picks\n"
		"random, annealed or model-chosen configurations instead, and --cache\n"
		"reuses results measured before.\n"
		"Commands are split into words by kscope (quotes '...' and \"...\", \\)\n"
		"and run without a shell; {src}, {exe}, {dir} and {srcdir} are replaced.\n"
		"FILE is never modified; kscope removes the copies and builds it made.\n"
		"Writes tune.csv and tune.json (one row per configuration, fastest\n"
		"first, failures last) in <output>/tune_<YYYYmmdd_HHMMSS>_<pid>/ and\n"
		"prints the table and the best configuration (docs/tune.md).  Exit\n"
		"status: 0 when a configuration was measured, 1 when none was.",
	.args = { .opts = tune_opts, .opts_size = sizeof(struct tune_opts) },
	.run = tune_run,
};
