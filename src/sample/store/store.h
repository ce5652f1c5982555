/*
 * The sample store and reports: profile.db (SQLite, the primary store of
 * a `kscope sample` run; schema in docs/formats.md) written from and read
 * back into a struct ks_profile, the flat profile, call tree and
 * per-thread table that flat.txt, tree.txt and `kscope report` print,
 * and the exports of the call stacks (folded, pprof, speedscope).
 */
#ifndef KS_SAMPLE_STORE_H
#define KS_SAMPLE_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "outdir.h"
#include "profile.h"

/* Writes p to a new SQLite database at path (which must not exist), in
 * transactions, so that a reader never sees a half-written table. */
int ks_store_write(const struct ks_profile *p, const char *path, struct ks_err *err);
/* A new SQLite database written as profile.db is: created exclusively
 * (mode 0640, never through a link) under a temporary name, without a
 * journal, with the given application_id and user_version; commit closes
 * it, syncs it and gives it its name, never replacing a file; abort
 * removes it.  kscope instrument's profile.db uses it too. */
struct ks_store_file {
	struct sqlite3 *db;
	int fd;
	char path[4096];
	char tmp[4096];
};
int ks_store_file_create(struct ks_store_file *f, const char *path, uint32_t application_id,
			 int user_version, struct ks_err *err);
int ks_store_file_commit(struct ks_store_file *f, struct ks_err *err);
void ks_store_file_abort(struct ks_store_file *f);
/* Reads a profile.db back (p must be freshly ks_profile_init'ed). */
int ks_store_read(const char *path, struct ks_profile *p, struct ks_err *err);

/* The deliverables of a run (outputs.c), in the run directory rd, each
 * under a temporary name until complete and then read-only:
 * profile.db, traces (0 trace.perfetto-trace, 1 trace.json, 2 both, 3
 * neither), then flat, tree and threads as .txt, or .json with json. */
int ks_run_write_outputs(struct ks_rundir *rd, const struct ks_profile *p, bool json,
			 unsigned traces, struct ks_err *err);
/* One trace file NAME of p in rd, written by fn (ks_trace_write_perfetto
 * or ks_trace_write_json) under its temporary name, then read-only; a
 * failed one leaves nothing.  kscope instrument's traces use it too. */
int ks_store_write_trace(struct ks_rundir *rd, const char *name,
			 int (*fn)(const struct ks_profile *, struct ks_outfile *, struct ks_err *),
			 const struct ks_profile *p, struct ks_err *err);
/* Removes <run>/raw/ and its files after the deliverables are written. */
void ks_run_remove_raw(struct ks_rundir *rd);

/* Which timer's samples a report counts.  With KS_REPORT_CLOCK_ALL (the
 * zero value) on a profile with samples of both timers, the flat, tree,
 * threads and counters reports show the two side by side, each as shares
 * of its own timer's periods: a CPU-time and a wall-clock period are not
 * the same thing, so they are never added into one share. */
enum ks_report_clock {
	KS_REPORT_CLOCK_ALL,   /* every sample; side by side if both timers ran */
	KS_REPORT_CLOCK_CPU,   /* only the CPU-time sampler's */
	KS_REPORT_CLOCK_REAL,  /* only the real-time (wall-clock) sampler's */
};

/* The names of enum ks_report_clock, in its order, NULL-terminated:
 * `kscope report --clock` and kscope view's clock parameter take them. */
extern const char *const ks_report_clock_names[];

struct ks_report_opts {
	bool json;             /* JSON instead of text */
	uint32_t thread;       /* only this thread (index), or KS_NONE */
	const char *region;    /* only samples inside this region name, or NULL */
	double min_pct;        /* tree: hide nodes below this share of all samples */
	unsigned max_depth;    /* tree: 0 = unlimited */
	enum ks_report_clock clock; /* only this timer's samples */
};

/* Whether p has samples of the timer clock names: 0, or -ENOENT with err
 * saying which samples p has and which values are accepted instead.
 * KS_REPORT_CLOCK_ALL is always accepted. */
int ks_report_check_clock(const struct ks_profile *p, enum ks_report_clock clock,
			  struct ks_err *err);

/* Functions by self and total share.  Text: one row a function with
 * self%, total%, samples, function, file:line, module. */
int ks_report_flat(FILE *out, const struct ks_profile *p,
		   const struct ks_report_opts *o, struct ks_err *err);
/* The call tree with total and self shares, indented by depth. */
int ks_report_tree(FILE *out, const struct ks_profile *p,
		   const struct ks_report_opts *o, struct ks_err *err);
/* One row a thread: tid, name, samples, share, CPU time, wall time. */
int ks_report_threads(FILE *out, const struct ks_profile *p,
		      const struct ks_report_opts *o, struct ks_err *err);

/* The per-sample counters (cycles, context switches, ...) per function
 * and per line: the events between a thread's consecutive samples, given
 * to the later sample's innermost frame.  -ENOENT when the profile has
 * no counters. */
int ks_report_counters(FILE *out, const struct ks_profile *p,
		       const struct ks_report_opts *o, struct ks_err *err);

/* The exports (export.c): every call stack of the samples that pass o's
 * thread, region and clock filters (o's other fields are not used).  Folded
 * stacks (text), pprof's profile.proto (gzip-compressed binary) and
 * speedscope's JSON.  -ENOENT for a region the profile does not have. */
int ks_export_folded(FILE *out, const struct ks_profile *p,
		     const struct ks_report_opts *o, struct ks_err *err);
int ks_export_pprof(FILE *out, const struct ks_profile *p,
		    const struct ks_report_opts *o, struct ks_err *err);
int ks_export_speedscope(FILE *out, const struct ks_profile *p,
			 const struct ks_report_opts *o, struct ks_err *err);

#endif
