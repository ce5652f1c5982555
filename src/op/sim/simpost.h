/*
 * kscope op --simulate's deliverables, written from the raw file of
 * kscope's Valgrind tool (simraw.h): the hot-spot map per source line and
 * per instruction, the cache figures, the bandwidth chart and the pipeline
 * chart.  docs/simulate.md describes every file, column and field.
 *
 * In the run directory:
 *   visualize_data.bin   0x02 (the pipeline chart: the MindStudio design
 *                        has it before the hot-spot map, which its viewer
 *                        needs), 0x01 per readable source file, 0x03
 *                        (api.json Files part), 0x04 (Instructions part),
 *                        0x0D (roofline, when FLOPs were executed)
 *   thread<TID>/code_exe.csv   one row per source line
 *   thread<TID>/instr_exe.csv  one row per instruction
 *   bandwidth.csv, bandwidth.svg   bytes per interval per path
 *   trace.json           the pipeline chart (the same document as 0x02)
 *
 * The raw file is read defensively: a file cut short (no `end` record)
 * gives the deliverables of what it holds and sum->truncated; a damaged
 * record is an error naming the line, never a crash.
 */
#ifndef KS_OP_SIMPOST_H
#define KS_OP_SIMPOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calib.h"
#include "err.h"
#include "outdir.h"
#include "simraw.h"

/* Receives the warnings of one call (one line each, without "warning:"). */
typedef void (*ks_simpost_warn_fn)(void *ctx, const char *msg);

/* The metric sets of --aic-metrics (docs/simulate.md): which deliverables
 * are written.  The summary, summary.csv and the roofline always are. */
enum {
	KS_SIM_METRIC_PIPE = 1u << 0,      /* PipeUtilization: pipeline chart,
					    * pipe utilisation, compute workload */
	KS_SIM_METRIC_BANDWIDTH = 1u << 1, /* PMSampling: bandwidth chart */
	KS_SIM_METRIC_SOURCE = 1u << 2,    /* Source: hot-spot map */
	KS_SIM_METRIC_MEMORY = 1u << 3,    /* MemoryDetail: caches, memory heat
					    * map and tables */
	KS_SIM_METRIC_ALL = (1u << 4) - 1, /* Default */
};

struct ks_simpost_opts {
	const char *raw_path;            /* the tool's raw file */
	double clock_hz;                 /* simulated clock: cycles to time */
	const struct ks_calib *calib;    /* roofline ceilings, or NULL: from
					  * the cost model */
	ks_simpost_warn_fn warn;         /* may be NULL */
	void *warn_ctx;
	unsigned metrics;                /* KS_SIM_METRIC_*; 0 means all */
	const char *soc;                 /* --soc-version preset, or NULL */
};

/* A source line in the summary. */
struct ks_simpost_line {
	char file[256];          /* path as in the debug information */
	unsigned line;
	uint64_t cycles, instrs; /* over all threads */
};

#define KS_SIMPOST_TOP 5

struct ks_simpost_summary {
	bool truncated;              /* the raw file has no `end` record */
	char end_how[16];            /* "exit", "signal", or "" if truncated */
	int end_code;
	unsigned threads;            /* threads with counted instructions */
	unsigned levels;             /* data-cache levels */
	char level_name[KS_SIM_MAX_LEVELS][16];
	uint64_t level_acc[KS_SIM_MAX_LEVELS], level_miss[KS_SIM_MAX_LEVELS];
	uint64_t instrs, cycles;     /* totals over threads */
	uint64_t flops;
	uint64_t load_bytes, store_bytes;
	uint64_t dram_bytes;         /* across the last boundary, both ways */
	double sim_seconds;          /* the longest thread's cycles / clock */
	uint64_t trace_dropped;
	char trace_from[8];          /* "main", "region", "never", "" */
	uint64_t trace_blocks;       /* block executions in the chart */
	uint64_t trace_cycles;       /* their simulated cycles */
	unsigned blocks;             /* visualize_data.bin blocks written */
	unsigned sources;            /* of which 0x01 (source files) */
	uint64_t trace_slices;       /* slices in the pipeline chart */
	bool roofline;               /* a 0x0D block was written */
	char roofline_source[16];    /* its ceilings: "calibration", "cost
				      * model" or "mixed"; "" without it */
	size_t ntop;                 /* lines by cycles, most first */
	struct ks_simpost_line top[KS_SIMPOST_TOP];
};

/* Writes every deliverable into run from o->raw_path and fills *sum (as
 * far as known, even on failure).  0 when all were written. */
int ks_simpost_write(struct ks_rundir *run, const struct ks_simpost_opts *o,
		     struct ks_simpost_summary *sum, struct ks_err *err);

#endif
