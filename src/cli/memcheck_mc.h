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
	const char *command;             /* "memcheck", for the reports' headers */
};

/* --leak-check's values: "full", "summary", "no". */
extern const char *const ks_mc_leak_check_choices[];

/* Runs program under Memcheck and reports; returns kscope's exit status
 * (cli.h: 2 for bad input, 1 when the analysis failed, --error-exitcode
 * when Memcheck found errors, else the program's status). */
int ks_memcheck_run(const struct ks_mc_opts *o, char **program);

#endif
