/*
 * kscope tune: searches a kernel's parameters by building and running it
 * (docs/tune.md).
 *
 * A search space lists configurations, each a value per key.  Source
 * lines marked `// tunable` carry the keys (`#define TILE 32 // tunable`,
 * `const int TILE = 32; // tunable`, `using Shape = S<64>; // tunable`).
 * For each configuration kscope writes a copy of the source with those
 * values, builds it with the user's build command (several at a time),
 * runs it one run at a time with the user's run command, and measures it:
 * warm-up runs, then measured runs; the time of a run is the last
 * `KSCOPE_TIME_NS=<n>` line the program printed, else its wall time.  The
 * result is a table sorted by median time.  With a kscope predict model,
 * the configurations are ranked by predicted time first and only the best
 * few are built and run.  The user's source is never modified.
 *
 * The kscope executable's `kscope tune` is a thin layer over these calls.
 * Conventions, as in predict.h: calls that can fail return 0 or a negative
 * errno code, with a one-line message in err (errsize bytes; err may be
 * NULL) naming the bad value and what is accepted.  -EINVAL means bad
 * input (nothing was built or written).
 */
#ifndef KSCOPE_TUNE_H
#define KSCOPE_TUNE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KS_TUNE_MAX_CONFIGS 100000  /* configurations of a space */
#define KS_TUNE_MAX_KEYS 64         /* keys of a configuration */
#define KS_TUNE_MAX_KEY 63          /* characters of a key */
#define KS_TUNE_MAX_VALUE 1024      /* characters of a value */
#define KS_TUNE_MAX_COMMAND 4096    /* characters of a build or run command */

/* ------------------------------------------------------------------ */
/* The search space                                                    */
/* ------------------------------------------------------------------ */

/* Configurations: nconfigs rows of nkeys values.  A key is a C identifier
 * of 1 to KS_TUNE_MAX_KEY characters, each key once; a value is 1 to
 * KS_TUNE_MAX_VALUE characters without control characters (tabs
 * allowed), substituted as is.  is_int (may be NULL) marks the integer
 * values, the ones a --predict model receives; when NULL, a value is an
 * integer when it reads as one ([-]digits).  A caller may fill this
 * struct itself; ks_tune_new checks it. */
struct ks_tune_space {
	size_t nkeys;
	size_t nconfigs;
	char **keys;            /* nkeys */
	char **values;          /* nconfigs * nkeys, row-major:
				 * values[c * nkeys + k] */
	unsigned char *is_int;  /* as values, or NULL */
};

/* Parses a space in JSON (len bytes of text, need not end in NUL):
 *  - a list of objects, each a configuration:
 *      [{"TILE": 32, "UNROLL": 2}, {"TILE": 64, "UNROLL": 1}]
 *    every object with the same keys (in any order; the first object's
 *    order is the table's);
 *  - or an object of lists, the cartesian product of the lists, the
 *    first key varying slowest (the order of nested loops written in the
 *    object's order):  {"TILE": [16, 32, 64], "UNROLL": [1, 2]}
 * Values are integers or strings.  At most KS_TUNE_MAX_CONFIGS
 * configurations.  name (may be NULL) is what messages call the text.
 * *out is freed with ks_tune_space_free. */
int ks_tune_space_parse(const char *text, size_t len, const char *name,
			struct ks_tune_space **out, char *err, size_t errsize);
/* The same from a file (at most 64 MiB). */
int ks_tune_space_load(const char *path, struct ks_tune_space **out, char *err,
		       size_t errsize);
/* Frees a space made by ks_tune_space_parse or ks_tune_space_load. */
void ks_tune_space_free(struct ks_tune_space *s);

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

enum ks_tune_level {
	KS_TUNE_INFO,  /* worth knowing (a tunable line keeps its value) */
	KS_TUNE_WARN,  /* a configuration failed, or a result is doubtful */
};

/* Where the search is, for a progress display. */
struct ks_tune_progress {
	const char *phase;      /* "build" or "run" */
	size_t done, total;     /* configurations finished in this phase, and
				 * to do in all (builds and runs each count
				 * every selected configuration) */
	size_t failed;          /* configurations failed so far */
	size_t config;          /* run phase: the configuration being run */
	const char *label;      /* run phase: its values, "TILE=32 UNROLL=2" */
	int run, runs;          /* run phase: which run (1-based) of how many
				 * (warm-up and measured) */
	double best_ns;         /* the best median so far; < 0 when none */
};

/* Which configurations are built and run, after --restrict:
 *   EXHAUSTIVE  all, in the space's order (the first max_evals)
 *   RANDOM      max_evals (all when 0) drawn without replacement with
 *               the seed
 *   ANNEAL      simulated annealing over the space's grid (a step changes
 *               one key to the value next to it in that key's list),
 *               with the seed; max_evals configurations (100 when 0, or
 *               all when fewer), none measured twice
 *   MODEL       with predict: the model_top best predicted and a sample
 *               of model_sample others drawn with the seed; the result
 *               has the rank correlation of model and measurements */
enum ks_tune_strategy {
	KS_TUNE_EXHAUSTIVE,
	KS_TUNE_RANDOM,
	KS_TUNE_ANNEAL,
	KS_TUNE_MODEL,
};

/* --strategy anneal's evaluations when max_evals is 0. */
#define KS_TUNE_ANNEAL_DEFAULT_EVALS 100

/* The placeholders of the build and run commands:
 *   {src}     the variant's source (a copy of the source, same file name,
 *             in a directory of its own)
 *   {exe}     what the build must write and the run runs
 *   {dir}     the variant's directory (the build may put other files there)
 *   {srcdir}  the directory of the original source, e.g. -I{srcdir} for
 *             its #include "..." files
 * A command is split into words at blanks, with '...' (literal) and
 * "..." (\" and \\ escaped) quoting and \ escaping the next character
 * outside quotes; placeholders are replaced inside words, so a path with
 * blanks stays one argument.  It runs with fork and execvp, never
 * through a shell, in the caller's working directory, with stdin
 * /dev/null, an empty signal mask and a process group of its own.  The
 * build must name {src} and {exe}; the run must name {exe}. */
struct ks_tune_opts {
	const char *src;        /* the source with // tunable lines */
	const struct ks_tune_space *space;
	const char *build;      /* e.g. "cc -O2 {src} -o {exe}" */
	const char *run;        /* e.g. "{exe} 1024" */
	int warmup;             /* unmeasured runs per configuration (0..1000) */
	int repeat;             /* measured runs per configuration (1..1000) */
	int jobs;               /* builds at a time (1..1024); 0: the CPUs
				 * this process may run on */
	double run_timeout_s;   /* one run's limit, then SIGKILL (> 0) */
	double build_timeout_s; /* one build's limit, then SIGKILL (> 0) */
	double stop_factor;     /* stop a configuration once its median is
				 * more than this times the best median so
				 * far; 0 never, else 1 to 1000 */
	const char *predict;    /* a kscope predict model (.kpp) ranking the
				 * configurations, or NULL */
	size_t top;             /* with predict: build and run only the best
				 * top (>= 1) by predicted time */
	int stop_fd;            /* -1, or a descriptor that becomes readable
				 * when the search must stop (a signalfd for
				 * SIGINT and SIGTERM); kscope polls it and
				 * never reads it */
	/* Callbacks (each may be NULL); arg is passed to them. */
	void (*note)(void *arg, enum ks_tune_level level, const char *msg);
	void (*progress)(void *arg, const struct ks_tune_progress *p);
	void *arg;
	/* Added after the first release: ks_tune_opts_init sets them. */
	const char *verify;     /* a command run after each configuration's
				 * first run (NULL: none); a non-zero exit
				 * fails the configuration ("verify failed").
				 * It gets the placeholders, and in its
				 * environment KSCOPE_TUNE_STDOUT (a file with
				 * that run's stdout), KSCOPE_TUNE_EXE,
				 * KSCOPE_TUNE_DIR, KSCOPE_TUNE_CONFIG and
				 * KSCOPE_TUNE_PARAM_<KEY> for each key */
	double precision;       /* percent: measure a configuration until
				 * its median's 95% confidence interval is at
				 * most this wide, relative to the median
				 * (0: exactly repeat runs; else 0.1 to 100) */
	enum ks_tune_strategy strategy; /* which configurations are built */
	size_t max_evals;       /* configurations built at most (0: no limit) */
	double time_budget_s;   /* no configuration is started after this
				 * many seconds of search (0: no limit) */
	unsigned long long seed; /* of the random strategy's choices: the
				 * same seed, the same configurations */
	const char *const *restrict_exprs; /* nrestrict expressions over the
				 * keys (integer arithmetic, + - * / %,
				 * comparisons, && || !, parentheses); a
				 * configuration for which one is 0 (or
				 * divides by zero) is not built */
	size_t nrestrict;
	int max_runs;           /* with precision: at most this many
				 * measured runs (1..1000; repeat when
				 * smaller) */
	size_t model_top;       /* strategy MODEL: the best predicted built
				 * (1..KS_TUNE_MAX_CONFIGS; default 5) */
	size_t model_sample;    /* strategy MODEL: other configurations drawn
				 * with the seed (0..KS_TUNE_MAX_CONFIGS;
				 * default 5) */
	const char *cache_dir;  /* NULL, or a directory of measured results
				 * (created when missing, its parent must
				 * exist): a configuration whose source,
				 * values, commands and measurement settings
				 * have an entry there is not built or run */
};

/* The defaults: warmup 1, repeat 5, jobs 0, run timeout 60 s, build
 * timeout 300 s, stop factor 3, top 3, stop_fd -1, precision 5 (%),
 * max_runs 30, model_top 5, model_sample 5, the rest NULL. */
void ks_tune_opts_init(struct ks_tune_opts *o);

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

enum ks_tune_status {
	KS_TUNE_OK,             /* measured: every run */
	KS_TUNE_STOPPED,        /* measured, stopped early (slower than
				 * stop_factor times the best) */
	KS_TUNE_BUILD_FAILED,   /* the build exited non-zero, was killed by a
				 * signal, or wrote no executable {exe} */
	KS_TUNE_BUILD_TIMEOUT,
	KS_TUNE_RUN_FAILED,     /* a run exited non-zero, was killed by a
				 * signal, or printed a bad KSCOPE_TIME_NS */
	KS_TUNE_RUN_TIMEOUT,
	KS_TUNE_NOT_SELECTED,   /* with predict: not among the top */
	KS_TUNE_INTERRUPTED,    /* the search stopped before it was measured */
	KS_TUNE_VERIFY_FAILED,  /* the verify command exited non-zero, was
				 * killed or timed out: not ranked */
	KS_TUNE_RESTRICTED,     /* a restrict expression excluded it */
};

/* "ok", "stopped early", "build failed", "build timed out", "run failed",
 * "run timed out", "not selected", "interrupted", "verify failed",
 * "restricted". */
const char *ks_tune_status_name(enum ks_tune_status s);

enum ks_tune_timing {
	KS_TUNE_TIMING_NONE,    /* no measured run */
	KS_TUNE_TIMING_PROGRAM, /* every run printed KSCOPE_TIME_NS */
	KS_TUNE_TIMING_WALL,    /* no run did: wall time */
	KS_TUNE_TIMING_MIXED,   /* some did */
};

/* "-", "program", "wall", "mixed". */
const char *ks_tune_timing_name(enum ks_tune_timing t);

/* One configuration's outcome.  Everything it points to belongs to the
 * result. */
struct ks_tune_row {
	size_t config;             /* its index in the space */
	char **values;             /* its nkeys values */
	unsigned char *is_int;     /* nkeys: 1 for integer values */
	enum ks_tune_status status;
	char *message;             /* what failed, one line; "" when measured */
	char *output;              /* the last lines (at most 10) of the failed
				    * build's output or run's stderr; "" */
	size_t runs;               /* measured runs */
	double *samples_ns;        /* runs times, in run order */
	double median_ns, p20_ns, p80_ns; /* of the samples; < 0 when runs == 0
				    * (percentiles interpolate linearly
				    * between the sorted samples) */
	enum ks_tune_timing timing;
	double predicted_us;       /* the model's time; < 0 without a model */
	size_t predicted_rank;     /* 1 for the fastest predicted; 0 without */
	double ci_lo_ns, ci_hi_ns; /* the median's 95% confidence interval
				    * (distribution-free, from the order
				    * statistics; the range of the samples
				    * under 6 runs); < 0 when runs == 0 */
	int precise;               /* the interval met the precision (or
				    * precision was 0) */
	int tie;                   /* measured, and its interval overlaps the
				    * best's: tied with the best (the best
				    * row has it set when it has a tie) */
	int cached;                /* its runs came from the cache: it was
				    * not built or run in this search */
	int sampled;               /* strategy MODEL: drawn by the random
				    * sample (not among the top predicted) */
	size_t eval_order;         /* 1 for the first configuration the
				    * search took up, 2 for the next...; 0
				    * when it was not taken up */
};

struct ks_tune_result {
	size_t nkeys;
	char **keys;
	size_t nrows;              /* one row per configuration of the space */
	struct ks_tune_row *rows;  /* measured rows by median (then predicted
				    * time, then space order), then failed
				    * rows, then not selected, then
				    * interrupted ones */
	const struct ks_tune_row *best; /* rows[0] when it was measured,
				    * else NULL */
	size_t measured, failed, not_selected, interrupted;
	int stopped_by_fd;         /* the search stopped because stop_fd
				    * became readable */
	/* What was asked, for tune.json. */
	char *src, *build, *run, *predict; /* predict may be NULL */
	int warmup, repeat, jobs;
	double run_timeout_s, build_timeout_s, stop_factor;
	size_t top;                /* 0 without predict */
	char *verify;              /* may be NULL */
	double precision;
	int max_runs;
	size_t verify_failed;      /* rows that failed verification (also
				    * counted in failed) */
	size_t restricted;         /* rows a restrict expression excluded */
	int strategy;              /* enum ks_tune_strategy */
	size_t max_evals;
	unsigned long long seed;
	double time_budget_s;
	int budget_spent;          /* the time budget left configurations
				    * unmeasured ("not selected") */
	size_t ties;               /* measured rows tied with the best,
				    * the best included; 0 when none */
	size_t model_top, model_sample; /* strategy MODEL; else 0 */
	int has_spearman;          /* strategy MODEL, at least 3 measured
				    * rows, and both rankings vary */
	double spearman;           /* then: Spearman's rank correlation of
				    * the predicted and the measured
				    * (median) times of the measured rows */
	size_t spearman_n;         /* the measured rows it is over */
	char *cache_dir;           /* NULL without a cache */
	size_t cached;             /* rows whose runs came from the cache */
};

/* ------------------------------------------------------------------ */
/* The search                                                          */
/* ------------------------------------------------------------------ */

struct ks_tune;

/* Checks everything before anything is built: the options, the space,
 * the source's tunable lines (every key of the space must have one; a
 * tunable line whose key is not in the space keeps its value, which the
 * note callback hears), the commands and their programs, and, with
 * predict, the model for every configuration (ranking them).  Nothing is
 * written.  o, and what it points to, must stay valid until
 * ks_tune_free.  -EINVAL on bad input. */
int ks_tune_new(const struct ks_tune_opts *o, struct ks_tune **out, char *err,
		size_t errsize);

/* Configurations that will be built: all, or the top with predict. */
size_t ks_tune_selected(const struct ks_tune *t);

/* Runs the search.  The variants are written under dir (an existing
 * directory), in a new directory variants-XXXXXX of their own, one
 * subdirectory per configuration; each is removed once its runs are done,
 * and all of it before the call returns.  Builds run jobs at a time, in
 * batches of at most 256 configurations; the batch's runs follow, one at
 * a time, when no build is running.  *out gets the result (free it with
 * ks_tune_result_free) on success and when stop_fd stopped the search
 * (-EINTR: the running build or run was killed, what was measured is
 * kept).  A variant that cannot be written or started fails only its
 * configuration; other errors (the variants' directory cannot be made,
 * out of memory) leave *out NULL. */
int ks_tune_run(struct ks_tune *t, const char *dir, struct ks_tune_result **out,
		char *err, size_t errsize);

void ks_tune_free(struct ks_tune *t);

/* Writes tune.csv and tune.json into dir (an existing directory; files of
 * those names are never replaced: -EEXIST).  Each file is written under a
 * temporary name and renamed when complete. */
int ks_tune_write(const struct ks_tune_result *r, const char *dir, char *err,
		  size_t errsize);

void ks_tune_result_free(struct ks_tune_result *r);

/* "KEY=VALUE KEY=VALUE" of row w of r into buf (cut to size). */
void ks_tune_row_label(const struct ks_tune_result *r, const struct ks_tune_row *w, char *buf,
		       size_t size);

/* ks_tune_new, ks_tune_run and ks_tune_free in one call. */
int ks_tune(const struct ks_tune_opts *o, const char *dir,
	    struct ks_tune_result **out, char *err, size_t errsize);

#ifdef __cplusplus
}
#endif

#endif
