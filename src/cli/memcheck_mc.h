/*
 * kscope memcheck on Valgrind's Memcheck (memcheck_mc.c): cmd_memtools.c
 * parses and checks the options, this runs Memcheck with them and writes
 * kscope's reports from its XML (src/memtools/mcxml).
 */
#ifndef KS_CLI_MEMCHECK_MC_H
#define KS_CLI_MEMCHECK_MC_H

#include <stdbool.h>
#include <stdint.h>

#include "opt.h"

struct ks_mc_opts {
	const char *output;
	int64_t error_exitcode, num_callers, max_threads;
	bool fair_sched;
	int64_t redzone, freelist_vol;
	int leak_check;                 /* index into ks_mc_leak_check_choices */
	bool track_origins;
	const char *show_leak_kinds;     /* "definite,possible", "all", "none"... */
	const char *errors_for_leak_kinds;
	const struct ks_strlist *suppressions;
	bool gen_suppressions;
	bool no_filter;
	bool xml;                        /* keep Memcheck's XML in the run directory */
	bool heap_map;                   /* name the block nearest to a far access
					  * (libkscope-mcheap.so; Memcheck only) */
	const char *command;             /* "memcheck", for the reports' headers */
	int engine;                      /* index into ks_mc_engine_choices */
	bool redzone_given, freelist_given;
	/* An option given that the ASan engine has no counterpart for
	 * ("--track-origins"), or NULL. */
	const char *not_for_asan;
};

/* --engine's values: "auto" (ASan for a program built with it, else
 * Memcheck), "memcheck", "asan". */
extern const char *const ks_mc_engine_choices[];
enum { KS_MC_AUTO, KS_MC_MEMCHECK, KS_MC_ASAN };

/* --leak-check's values: "full", "summary", "no". */
extern const char *const ks_mc_leak_check_choices[];

/* Runs program under Memcheck and reports; returns kscope's exit status
 * (cli.h: 2 for bad input, 1 when the analysis failed, --error-exitcode
 * when Memcheck found errors, else the program's status). */
int ks_memcheck_run(const struct ks_mc_opts *o, char **program);

/* The report options both engines share: filter, stack depth, command,
 * the leak kinds that count as errors (errs), and the redzone and
 * freed-block settings (always for Memcheck, as given for ASan). */
struct ks_mcx_report_opts;
void ks_mc_report_opts(struct ks_mcx_report_opts *ro, const struct ks_mc_opts *o,
		       unsigned errs, bool memcheck);

/* The ASan engine (memcheck_asan.c): runs program natively, reads ASan's
 * reports; show and errs are the leak kinds listed and counted as errors
 * (bits 1 << MCX_LEAK_*).  Returns as ks_memcheck_run. */
int ks_memcheck_asan_run(const struct ks_mc_opts *o, const char *prog, char **program,
			 unsigned show, unsigned errs);

#endif
