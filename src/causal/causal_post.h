/*
 * kscope causal's post-processing: causal profiling as coz introduced it
 * (Curtsinger & Berger, SOSP 2015).  The preloaded runtime runs
 * experiments, each of which virtually speeds up one source line by a
 * percentage, and writes one raw text file per process; this library
 * reads those files into one data set, computes for each line the
 * program-speedup curve with 95% bootstrap intervals, ranks the lines,
 * and writes coz's own profile.coz, a CSV and a ranked text report.
 * causal_post.c's header comment gives the raw format and the analysis.
 *
 * Lines are named by a line id: an index into the caller's line table
 * (struct ks_causal_line), which the runtime and the command share.
 * Nothing here prints or exits; every failure comes back as a negative
 * errno-style code with a message in the struct ks_err.
 */
#ifndef KS_CAUSAL_POST_H
#define KS_CAUSAL_POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

/* One entry of the caller's line table; the index is the line id. */
struct ks_causal_line {
	const char *file;        /* source path, not NULL */
	int line;                /* 1-based line number */
	const char *function;    /* the function holding it, or NULL */
};

/* ------------------------------------------------------------------ */
/* The data read from raw files                                        */
/* ------------------------------------------------------------------ */

enum ks_causal_kind {
	KS_CAUSAL_THROUGHPUT,
	KS_CAUSAL_LATENCY,
};

/* One progress point's change during one experiment (a `point` record). */
struct ks_causal_pointval {
	uint32_t name;           /* index into ks_causal_data.names */
	enum ks_causal_kind kind;
	uint64_t delta;          /* throughput: visits during the experiment */
	uint64_t arrivals;       /* latency: the three values, kept for */
	uint64_t departures;     /* profile.coz (no latency analysis yet) */
	int64_t difference;
};

/* One experiment: line `line` virtually sped up by speedup_pct. */
struct ks_causal_experiment {
	uint32_t line;           /* line id */
	uint32_t speedup_pct;    /* 0..100 */
	uint64_t wall_ns;        /* wall-clock length */
	uint64_t delay_ns;       /* delay inserted (the virtual speedup) */
	uint64_t samples;        /* samples that fell in the selected line */
	uint64_t ready_wait_ns;  /* the measured threads' run-queue wait in it */
	uint64_t threads;        /* threads measured; 0: not measured */
	size_t first_point;      /* its values: points[first_point..+npoints) */
	size_t npoints;
};

/* A process's total samples in one line. */
struct ks_causal_samples {
	uint32_t line;           /* line id */
	uint64_t count;
};

/* One process's section of a raw file. */
struct ks_causal_process {
	uint64_t pid;
	uint64_t period_ns;      /* sampling period; 0 when not given */
	uint64_t start_ns;       /* monotonic time the section started */
	uint64_t end_ns;         /* monotonic time it ended, if ended */
	bool ended;              /* an `end` record was read */
	bool coarse;             /* sampled by POSIX timers (sampler=timer) */
	size_t first_experiment; /* experiments[first..+nexperiments) */
	size_t nexperiments;
	size_t first_samples;    /* samples[first..+nsamples), by line id */
	size_t nsamples;
};

/* Everything read, in file order.  The arrays are owned by the data set
 * and grow with each ks_causal_data_read; callers only read them. */
struct ks_causal_data {
	size_t nlines;           /* entries in the caller's line table */
	struct ks_causal_process *processes;
	size_t nprocesses;
	struct ks_causal_experiment *experiments;
	size_t nexperiments;
	struct ks_causal_pointval *points;
	size_t npoints;
	struct ks_causal_samples *samples;
	size_t nsamples;
	char **names;            /* progress point names, each once */
	size_t nnames;
	size_t truncated;        /* last lines ignored for want of a newline */
	/* Allocated sizes of the arrays above (private). */
	size_t cap_processes, cap_experiments, cap_points, cap_samples, cap_names;
};

/* Starts an empty data set for a line table of nlines entries (line ids
 * 0..nlines-1).  Returns 0, or -EINVAL when nlines does not fit a line id
 * (more than UINT32_MAX).  Free it with ks_causal_data_free. */
int ks_causal_data_init(struct ks_causal_data *d, size_t nlines);

/* Appends the raw file at path: its processes, experiments, points and
 * samples.  Unknown record types and unknown keys are skipped; a final
 * line without a newline (a process killed while writing) is ignored and
 * counted in d->truncated.  A malformed known record is -EINVAL with a
 * message "path:N: ..." naming the line; a file that cannot be read is
 * its -errno.  On failure d is left as it was before the call. */
int ks_causal_data_read(struct ks_causal_data *d, const char *path, struct ks_err *err);

/* Appends every raw file of a run directory: raw/run_<k>/causal_*.txt
 * for k = 1, 2, ... while raw/run_<k> exists, in name order; *nfiles gets
 * how many were read.  Errors as ks_causal_data_read's. */
int ks_causal_data_read_run(struct ks_causal_data *d, const char *rundir, size_t *nfiles,
			    struct ks_err *err);

/* Frees what d holds and leaves it empty (d itself is the caller's). */
void ks_causal_data_free(struct ks_causal_data *d);

/* ------------------------------------------------------------------ */
/* The analysis                                                        */
/* ------------------------------------------------------------------ */

/* Bootstrap resamples behind each 95% interval. */
#define KS_CAUSAL_BOOTSTRAP 1000

/* One point of a curve: the line sped up by line_speedup_pct. */
struct ks_causal_point_result {
	unsigned line_speedup_pct;  /* 0..100; 0 is the baseline itself */
	double program_speedup_pct; /* predicted program speedup */
	double ci_low_pct;          /* 95% bootstrap interval; NaN when no */
	double ci_high_pct;         /* resample could be computed */
	size_t experiments;         /* experiments behind the point */
	uint64_t visits;            /* their visits to the point (saturating) */
	double effective_s;         /* their effective duration, in seconds */
};

/* The speedup curve of one line for one throughput progress point. */
struct ks_causal_curve {
	uint32_t line;           /* line id */
	char *point;             /* progress point name (owned) */
	size_t n;                /* points, by line speedup; v[0] is 0% */
	struct ks_causal_point_result *v;  /* owned */
	double impact_pct;       /* mean program speedup over v[1..n) */
	uint64_t line_samples;   /* samples in the line, all processes */
};

struct ks_causal_result {
	struct ks_causal_curve *curves;  /* best first (owned) */
	size_t ncurves;
	size_t points;           /* throughput points analysed */
	size_t unusable;         /* experiments skipped: delay >= wall */
	uint64_t total_samples;  /* samples in all lines, all processes */
	/* The share of the measured threads' time during the experiments
	 * that they spent ready to run but waiting for a CPU; NaN when no
	 * experiment measured it (an older runtime's raw files). */
	double ready_wait_share;
	char why[256];           /* when ncurves is 0: why, one line */
	size_t cap_curves;       /* allocated curves (private) */
};

/* Computes the curves of throughput point `point` (NULL: of every
 * throughput point recorded) into *r, which the caller frees with
 * ks_causal_result_free (also after a failure).  A point without a
 * baseline, or never visited during it, has no curves; no curves at all
 * is not an error: r->ncurves is 0 and r->why says why.  Returns 0, or
 * -ENOMEM. */
int ks_causal_analyze(const struct ks_causal_data *d, const char *point,
		      struct ks_causal_result *r, struct ks_err *err);

/* Frees what r holds and leaves it empty. */
void ks_causal_result_free(struct ks_causal_result *r);

/* Above this share of their time waiting for a CPU (r->ready_wait_share),
 * the program's threads were short of CPUs during the experiments, and
 * kscope warns that the predictions are unreliable (docs/causal.md). */
#define KS_CAUSAL_READY_WAIT_WARN 0.10

/* Writes the warning to out ("warning: ..." without kscope's prefix,
 * one line) when r's share is above KS_CAUSAL_READY_WAIT_WARN; true
 * when it did. */
bool ks_causal_busy_warning(const struct ks_causal_result *r, char *out, size_t size);

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

/* The writers take lines, the caller's table of d->nlines entries (the
 * one the data set was read against), and return 0 or a negative
 * errno-style code when out fails (-ENOMEM when out of memory); they
 * flush out but leave it open.  In profile.coz and the report a control
 * character in a path or name is written as '?', so that it cannot break
 * a record or a terminal line; the CSV quotes it instead. */

/* Writes d in coz's profile.coz format, which coz's viewer reads: per
 * process, in file order, `startup`, each usable experiment with its
 * `throughput-point` and `latency-point` records, `runtime` when the
 * process ended, and its `samples` records.  Unusable experiments (delay
 * >= wall) are left out: coz's viewer has no use for a duration of 0. */
int ks_causal_write_coz(FILE *out, const struct ks_causal_data *d,
			const struct ks_causal_line *lines, struct ks_err *err);

/* Writes r as CSV (RFC 4180): a header row, then one row per curve point
 * (the 0% row included), curves in rank order.  An unknown interval is
 * an empty field. */
int ks_causal_write_csv(FILE *out, const struct ks_causal_result *r,
			const struct ks_causal_line *lines, struct ks_err *err);

/* Writes r as a ranked table for people: per curve a line "file:line
 * impact X% (N samples)" and its points; at most max_curves curves (0:
 * all), then how many were left out.  With no curves, one line: why. */
int ks_causal_write_report(FILE *out, const struct ks_causal_result *r,
			   const struct ks_causal_line *lines, size_t max_curves,
			   struct ks_err *err);

/* Writes the best max_curves curves (0: all) as an SVG image of small
 * multiples, one panel per curve on a shared scale (causal_svg.c); with
 * no curves, an image saying why.  0, or -EIO when out fails. */
int ks_causal_write_svg(FILE *out, const struct ks_causal_result *r,
			const struct ks_causal_line *lines, size_t max_curves,
			struct ks_err *err);

#endif
