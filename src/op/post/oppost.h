/*
 * kscope op's deliverables, written from the raw files libkscope-op.so
 * leaves per collected launch (opraw.h): OpBasicInfo.csv, Timing.csv,
 * Memory.csv, trace.json and visualize_data.bin in the launch's directory,
 * and summary.csv in the run directory.  docs/op.md describes every file,
 * column and field.
 *
 * Also the --flops expression: parsed once when kscope op starts (so a
 * bad expression is a usage error before anything runs) and evaluated per
 * launch over the launch's scalar arguments and work sizes.
 *
 * Raw files are read defensively: a missing or damaged context.json or
 * measure.json, or a missing kernel source, gives a warning (through the
 * caller's warn function; this library never prints) and deliverables
 * with what is known, never a crash.
 */
#ifndef KS_OP_OPPOST_H
#define KS_OP_OPPOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calib.h"
#include "err.h"
#include "expr.h"
#include "outdir.h"

/* ------------------------------------------------------------------ */
/* Deliverables                                                        */
/* ------------------------------------------------------------------ */

/* The directory kscope names for a launch: "<pid>/<name>_<index>" with the
 * name's characters outside [A-Za-z0-9_] replaced by '_' (and cut to 200
 * characters), into out (size bytes). */
void ks_oppost_dirname(long long pid, const char *name, unsigned long long index,
		       char *out, size_t size);

/* Receives the warnings of one call (one line each, without "warning:"). */
typedef void (*ks_oppost_warn_fn)(void *ctx, const char *msg);

struct ks_oppost_opts {
	const struct ks_expr *flops; /* --flops, or NULL */
	const struct ks_calib *calib;    /* this machine's ceilings, or NULL */
	const char *calib_why;           /* why calib is NULL (for OpBasicInfo) */
	/* NULL: the status comes from measure.json; otherwise it overrides
	 * it ("incomplete" for a launch whose `collected` never came). */
	const char *status;
	const char *message;             /* `collected`'s message=, or NULL */
	/* Application replay: the passes of runs >= 1 (event times in ns and
	 * the run each came from), added after measure.json's run-0 pass. */
	const uint64_t *app_ns;
	const unsigned *app_run;
	size_t n_app;
	unsigned app_runs;               /* runs made (for the missing ones) */
	bool replace;                    /* replace deliverables written before */
	ks_oppost_warn_fn warn;          /* may be NULL */
	void *warn_ctx;
};

/* A launch whose replay succeeded is `noisy` rather than `ok` when it has
 * at least KS_OPPOST_NOISY_MIN_PASSES measured passes and the 80th
 * percentile of their times is above KS_OPPOST_NOISY_RATIO times the 20th
 * (nearest rank; docs/op.md, "Noisy timings"). */
#define KS_OPPOST_NOISY_RATIO 1.5
#define KS_OPPOST_NOISY_MIN_PASSES 5

/* One collected launch as the summary shows it.  Unknown numbers are NaN. */
struct ks_oppost_result {
	char dir[320];           /* relative to the run directory */
	char name[256];          /* kernel (or range) name */
	long long index;         /* launch index, -1 if unknown */
	long long pid;           /* -1 if unknown */
	char global[64];         /* "1024x1024", "-" if unknown */
	char mode[16];           /* kernel, application, range, or "-" */
	size_t passes;           /* measured passes with a time */
	double min_us, median_us, mean_us, max_us;
	double spread_pct;       /* (max - min) / median, in percent */
	double p80_p20;          /* 80th / 20th percentile; NaN: too few passes */
	double gbps;             /* (bytes read + written) / median */
	double gflops;           /* FLOPs / median */
	double gpu_us;           /* the GPU's own duration of one run (CUDA:
	                            CUPTI's gpu__time_duration.sum); NaN */
	char status[32];         /* ok, noisy, failed, incomplete, no measurement */
};

/* Writes the deliverables of the launch in <run->path>/<rel> from its raw
 * files and fills *res (always, as far as known, even on failure).
 * Returns 0 when every deliverable was written; a failed write gives the
 * error (the deliverables already written stay).  Damaged or missing raw
 * files are warnings, not errors. */
int ks_oppost_launch(struct ks_rundir *run, const char *rel,
		     const struct ks_oppost_opts *o, struct ks_oppost_result *res,
		     struct ks_err *err);

/* Writes <run>/summary.csv: one row per result. */
int ks_oppost_summary(struct ks_rundir *run, const struct ks_oppost_result *r,
		      size_t n, struct ks_err *err);

#endif
