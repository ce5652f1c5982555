/*
 * Private to src/tune: the pieces of kscope tune's search that
 * include/kscope/tune.h puts together.  Each has its own file:
 *   space.c    the search space (JSON, or filled by the caller) and its checks
 *   source.c   the source's `// tunable` lines and the variants' text
 *   command.c  build and run commands: splitting and placeholders
 *   proc.c     running one build or run: process group, pipes, timeout
 *   files.c    the variants' directories, created and removed
 *   stats.c    medians and percentiles
 *   predict.c  ranking the configurations with a kscope predict model
 *   restrict.c the --restrict expressions
 *   cache.c    --cache: SHA-256 keys and the entries of measured results
 *   write.c    tune.csv and tune.json
 *   tune.c     the search itself
 * The unit tests (tests/tune) include this header; nothing outside
 * src/tune and its tests does.
 */
#ifndef KS_TUNE_INT_H
#define KS_TUNE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "kscope/tune.h"

#include <nettle/sha2.h>

/* ------------------------------------------------------------------ */
/* space.c                                                             */
/* ------------------------------------------------------------------ */

/* Checks a space however it was made (keys, sizes, values); err names
 * what is wrong and what is accepted.  -EINVAL. */
int ks_tune_space_check(const struct ks_tune_space *s, struct ks_err *err);
/* Whether value c's key k is an integer (the space's is_int, or whether
 * the text reads as one). */
bool ks_tune_space_is_int(const struct ks_tune_space *s, size_t c, size_t k);
/* "KEY=VALUE KEY=VALUE" of configuration c into buf (cut to size). */
void ks_tune_space_label(const struct ks_tune_space *s, size_t c, char *buf,
			 size_t size);
/* Whether text (len bytes) is a C identifier. */
bool ks_tune_is_ident(const char *text, size_t len);

/* ------------------------------------------------------------------ */
/* source.c                                                            */
/* ------------------------------------------------------------------ */

#define KS_TUNE_MAX_SOURCE (64u << 20) /* bytes of a source file */

struct ks_tune_line {
	size_t lineno;             /* 1-based */
	char key[KS_TUNE_MAX_KEY + 1];
	size_t vstart, vend;       /* the value's bytes in the source */
	long key_index;            /* in the space, or -1 */
};

struct ks_tune_source {
	char *data;                /* the whole file, NUL added; owned */
	size_t size;
	struct ks_tune_line *lines; /* the tunable lines, in file order; owned */
	size_t nlines;
};

/* Finds the tunable lines of data (size bytes; copied).  name is the
 * file's name in messages.  A line with code before a `// tunable`
 * comment must be one of the accepted forms; -EINVAL otherwise, with err
 * giving name:line and the line. */
int ks_tune_source_scan(const char *data, size_t size, const char *name,
			struct ks_tune_source *s, struct ks_err *err);
/* The line's value as it is in the source, into buf (cut to size). */
void ks_tune_source_value(const struct ks_tune_source *s, const struct ks_tune_line *l,
			  char *buf, size_t size);
/* The variant's text for configuration c of space: every tunable line
 * whose key_index is set gets the configuration's value.  *out is
 * malloc'd (the caller frees it); -ENOMEM. */
int ks_tune_source_variant(const struct ks_tune_source *s,
			   const struct ks_tune_space *space, size_t c, char **out,
			   size_t *outlen);
void ks_tune_source_free(struct ks_tune_source *s);

/* ------------------------------------------------------------------ */
/* command.c                                                           */
/* ------------------------------------------------------------------ */

enum ks_tune_ph {
	KS_TUNE_PH_SRC,
	KS_TUNE_PH_EXE,
	KS_TUNE_PH_DIR,
	KS_TUNE_PH_SRCDIR,
	KS_TUNE_PH_COUNT,
};

#define KS_TUNE_MAX_WORDS 1024

/* A command split into words; a placeholder inside a word is kept as the
 * byte 0x01 followed by '0' + its enum ks_tune_ph (commands contain no
 * control characters, so the pair cannot come from the text). */
struct ks_tune_cmd {
	char **words;              /* owned */
	size_t nwords;
	bool has[KS_TUNE_PH_COUNT]; /* which placeholders appear */
};

/* Splits text (what names it in messages: "--build").  -EINVAL for an
 * empty command, an unbalanced quote, a lone trailing backslash, an
 * unknown {placeholder}, a control character or too many words. */
int ks_tune_cmd_parse(const char *text, const char *what, struct ks_tune_cmd *c,
		      struct ks_err *err);
/* The argument vector with the placeholders replaced by vals (indexed by
 * enum ks_tune_ph; a NULL one must not appear); NULL-terminated,
 * malloc'd, freed with ks_tune_argv_free.  NULL when out of memory. */
char **ks_tune_cmd_expand(const struct ks_tune_cmd *c, const char *const *vals);
/* Whether word w is, or contains, a placeholder. */
bool ks_tune_cmd_word_has_ph(const struct ks_tune_cmd *c, size_t w);
void ks_tune_argv_free(char **argv);
void ks_tune_cmd_free(struct ks_tune_cmd *c);

/* ------------------------------------------------------------------ */
/* proc.c                                                              */
/* ------------------------------------------------------------------ */

#define KS_TUNE_TAIL 4096          /* bytes of output kept per process */

/* One build or run: a child in its own process group, its output read
 * through pipes, and a deadline. */
struct ks_tune_proc {
	pid_t pid;                 /* 0 when none is running */
	int pidfd;                 /* readable when it ends; -1 without */
	int outfd, errfd;          /* parent ends of its stdout and stderr
				    * pipes; -1 when closed */
	bool want_time;            /* parse KSCOPE_TIME_NS lines on stdout */
	bool save;                 /* stdout is also copied to save_fd (a
				    * zeroed proc copies nothing) */
	int save_fd;
	bool save_failed;          /* a write to save_fd failed */
	double started, deadline, ended; /* CLOCK_MONOTONIC seconds */
	size_t tag;                /* the caller's (a configuration) */
	/* The outcome. */
	bool done, timed_out;
	int status;                /* as waitpid gives it */
	int exec_errno;            /* the program could not be started */
	bool have_time, bad_time;  /* a KSCOPE_TIME_NS line was seen, valid or not */
	uint64_t time_ns;          /* the last valid one */
	char bad_line[96];         /* the first bad one, quoted */
	/* stdout's current line (only its start matters). */
	char line[96];
	size_t linelen;
	bool line_long;
	/* The last KS_TUNE_TAIL bytes of stderr (of all output when merged). */
	char tail[KS_TUNE_TAIL];
	size_t tail_pos;           /* next write position */
	bool tail_full;
};

/* Starts argv[0] (execvp: a PATH search when it has no '/') with stdin
 * /dev/null.  merge: stdout and stderr both go into the tail (builds);
 * otherwise stdout is scanned for KSCOPE_TIME_NS lines and discarded and
 * stderr goes into the tail.  A program that cannot be started is not an
 * error here: the proc is done with exec_errno set.  Returns 0, or -errno
 * when the pipes or the process cannot be made. */
int ks_tune_proc_start(struct ks_tune_proc *p, char *const *argv, bool merge,
		       double timeout_s, struct ks_err *err);
/* The same with envp (NULL: kscope's environment) as the program's
 * environment, and its stdout also written to save_fd (-1: not; the
 * caller owns and closes it; a failed write sets save_failed). */
int ks_tune_proc_start_env(struct ks_tune_proc *p, char *const *argv, bool merge,
			   double timeout_s, char *const *envp, int save_fd,
			   struct ks_err *err);
/* Serves procs (n of them; entries that are done or not started are
 * skipped) until at least one is done or stop_fd (-1: none) is readable
 * (*stopped set then).  A proc past its deadline is killed (SIGKILL to its
 * process group) and marked timed_out.  When a proc's main process
 * ends, anything still running in its process group is killed too. */
void ks_tune_proc_wait(struct ks_tune_proc *const *procs, size_t n, int stop_fd,
		       bool *stopped);
/* Kills p's process group and reaps it (the search was stopped). */
void ks_tune_proc_kill(struct ks_tune_proc *p);
/* The last at most maxlines non-empty lines of p's tail, joined with
 * '\n', into buf (cut to size). */
void ks_tune_proc_tail(const struct ks_tune_proc *p, int maxlines, char *buf,
		       size_t size);
/* What ended p, for a message: "exit status 2", "killed by signal 11
 * (Segmentation fault)", "timed out after 2 s", "cannot run 'x': ...". */
void ks_tune_proc_describe(const struct ks_tune_proc *p, const char *prog,
			   double timeout_s, char *buf, size_t size);
/* Whether p ended with exit status 0 (and was not killed). */
bool ks_tune_proc_ok(const struct ks_tune_proc *p);
/* Feeds bytes to p as if they came from its stdout or stderr (tests). */
void ks_tune_proc_feed(struct ks_tune_proc *p, bool is_stdout, const char *buf,
		       size_t len);
double ks_tune_now(void);

/* ------------------------------------------------------------------ */
/* files.c                                                             */
/* ------------------------------------------------------------------ */

/* Creates dir/variants-XXXXXX (0700) and opens it.  *path malloc'd. */
int ks_tune_files_root(const char *dir, char **path, int *fd, struct ks_err *err);
/* Creates the subdirectory name of rootfd (0700) holding file (text,
 * len bytes, mode 0640), both new. */
int ks_tune_files_variant(int rootfd, const char *name, const char *file,
			  const char *text, size_t len, struct ks_err *err);
/* Removes the directory name in dirfd and everything in it, never
 * following a symbolic link (a link is removed, not what it points to). */
int ks_tune_files_remove(int dirfd, const char *name, struct ks_err *err);

/* ------------------------------------------------------------------ */
/* stats.c                                                             */
/* ------------------------------------------------------------------ */

/* The p-th percentile (0..100) of v (n >= 1 values, any order):
 * linear interpolation between the sorted values, at rank
 * p/100 * (n - 1). */
double ks_tune_percentile(const double *v, size_t n, double p);
/* The median's 95% confidence interval [*lo, *hi] of v (n values, any
 * order, at most 1000 used): the k-th smallest and k-th largest sample
 * for the largest k whose binomial(n, 1/2) tail is at most 2.5% on each
 * side; under 6 values, the range.  -1 for both when n == 0. */
void ks_tune_median_ci(const double *v, size_t n, double *lo, double *hi);

/* ------------------------------------------------------------------ */
/* predict.c                                                           */
/* ------------------------------------------------------------------ */

/* The model's time for every configuration of space (us[c]); a
 * configuration's integer values are the model's params.  -EINVAL with
 * err naming the configuration and the model's message. */
int ks_tune_predict(const char *model, const struct ks_tune_space *space,
		    double *us, struct ks_err *err);

/* ------------------------------------------------------------------ */
/* restrict.c                                                          */
/* ------------------------------------------------------------------ */

/* Evaluates the --restrict expression text for configuration c of sp:
 * *keep is whether it is non-zero (a division or % by zero makes it
 * false).  -EINVAL, with err naming the expression, the column and what
 * is accepted, for a syntax error, a name that is not a key, a key whose
 * value there is not an integer, or a 64-bit overflow. */
int ks_tune_restrict_eval(const char *text, const struct ks_tune_space *sp, size_t c,
			  bool *keep, struct ks_err *err);

/* ------------------------------------------------------------------ */
/* cache.c                                                             */
/* ------------------------------------------------------------------ */

struct ks_tune_sha256 {
	struct sha256_ctx ctx;     /* nettle's */
};

void ks_tune_sha256_init(struct ks_tune_sha256 *h);
void ks_tune_sha256_update(struct ks_tune_sha256 *h, const void *data, size_t len);
/* Finishes: the digest as 64 lowercase hex digits and a NUL. */
void ks_tune_sha256_hex(struct ks_tune_sha256 *h, char hex[65]);

/* What a cached result depends on, besides the configuration. */
struct ks_tune_cache_inputs {
	const char *src;           /* the source's bytes */
	size_t srclen;
	const char *build, *run, *verify; /* verify may be NULL */
	const char *settings;      /* the measurement settings, as text */
};

/* The key of configuration c of sp: a SHA-256 of the inputs, the
 * configuration's keys and values, each field prefixed by its length. */
void ks_tune_cache_key(const struct ks_tune_cache_inputs *in,
		       const struct ks_tune_space *sp, size_t c, char hex[65]);

/* One cached result: a measured configuration (ok or stopped early). */
struct ks_tune_cache_entry {
	bool stopped;              /* "stopped early" */
	size_t runs;               /* 1 to 1000 */
	double *samples;           /* runs of them; owned */
	size_t program_timed;      /* runs that printed KSCOPE_TIME_NS */
	char *message;             /* owned */
};

/* Parses an entry (len bytes of JSON); key (may be NULL) must be the
 * entry's.  -EINVAL with err saying what is wrong; *out is empty then. */
int ks_tune_cache_parse(const char *text, size_t len, const char *key,
			struct ks_tune_cache_entry *out, struct ks_err *err);
/* dir/<key>.json: -ENOENT when there is none (err untouched), -EINVAL
 * when it is not an entry. */
int ks_tune_cache_load(const char *dir, const char *key,
		       struct ks_tune_cache_entry *out, struct ks_err *err);
/* Writes dir/<key>.json under a temporary name, then renames it. */
int ks_tune_cache_store(const char *dir, const char *key,
			const struct ks_tune_cache_entry *e, struct ks_err *err);
void ks_tune_cache_entry_free(struct ks_tune_cache_entry *e);
/* Whether dir can be the cache: a writable directory, or a path whose
 * parent is one (the search creates it).  -EINVAL naming --cache. */
int ks_tune_cache_check_dir(const char *dir, struct ks_err *err);

/* ------------------------------------------------------------------ */
/* stats.c: ranks                                                      */
/* ------------------------------------------------------------------ */

/* Spearman's rank correlation of x and y (n pairs; ties get their
 * average rank).  false when n < 3 or one of them does not vary. */
bool ks_tune_spearman(const double *x, const double *y, size_t n, double *rho);

/* ------------------------------------------------------------------ */
/* write.c                                                             */
/* ------------------------------------------------------------------ */

/* Whether a row's status counts as measured. */
bool ks_tune_row_measured(const struct ks_tune_row *r);

#endif
