/*
 * kscope op --simulate: runs a program on kscope's Valgrind tool with the
 * hotspot analysis (src/memtools/vg/kst_hot*.c) and writes the hot-spot
 * map, cache figures, bandwidth and pipeline charts from its raw file
 * (src/op/sim).  cmd_op.c parses the options and calls this.
 * docs/simulate.md is the user's page.
 */
#ifndef KS_CLI_OP_SIMULATE_H
#define KS_CLI_OP_SIMULATE_H

#include <stdbool.h>
#include <stdint.h>

#include "err.h"

struct ks_op_sim_args {
	const char *kernel_name; /* checked name pattern, or NULL: everything */
	const char *threads;     /* "1,3", or NULL: every thread */
	const char *cache;       /* --cache spec, or NULL: this machine's */
	double clock_ghz;        /* 0: this machine's */
	int64_t trace_limit;
	int64_t mem_latency;
	bool kernel_lines;       /* OpenCL (PoCL) kernels built with -g, -O0 */
	int64_t timeout_min;     /* --timeout, minutes; 0: none */
	double minute_s;         /* seconds in one of them (60 but in tests) */
	const char *output;      /* where the run directory is created */
	char **program;          /* NULL-terminated */
	unsigned metrics;        /* --aic-metrics: KS_SIM_METRIC_* (simpost.h) */
	bool dump;               /* --dump: keep hotspot.<pid>.raw */
	const char *soc;         /* --soc-version preset's name, or NULL */
};

/* A --soc-version preset: the caches (a --cache spec) and clock of a
 * published machine (op_sets.c says where each figure comes from). */
struct ks_op_soc {
	const char *name, *machine, *cache;
	double ghz;
};

/* The preset called name, or NULL with err listing those accepted. */
const struct ks_op_soc *ks_op_soc_find(const char *name, struct ks_err *err);

/* --aic-metrics LIST: set names separated by ',' (any case); *mask the
 * KS_SIM_METRIC_* they select (NULL or "": all).  On-board (simulate
 * false) only Default applies.  -EINVAL with err saying why not. */
int ks_op_metrics_parse(const char *list, bool simulate, unsigned *mask,
			struct ks_err *err);

/* Checks the options that only --simulate has (--threads, --cache); -EINVAL
 * with err naming the option, the value and what is accepted. */
int ks_op_sim_check(const struct ks_op_sim_args *a, struct ks_err *err);

/* Runs it all; returns the KS_EXIT_* status or the program's status. */
int ks_op_simulate(const struct ks_op_sim_args *a);

/* --export of a --simulate run: the deliverables of dir's raw file
 * (hotspot.<pid>.raw), written into a new run directory under output
 * with this run's clock (clock_ghz, 0: this machine's), calibration and
 * metric sets (KS_SIM_METRIC_*).
 * A KS_EXIT_* status. */
int ks_op_simulate_export(const char *dir, const char *raw_name, const char *output,
			  double clock_ghz, unsigned metrics);

#endif
