/*
 * The reader of kscope instrument's counters files (instr.<pid>.txt,
 * docs/instrument.md), as a run uses it, for its fuzz target
 * (tests/instrument/fuzz_instr_counters.c).
 */
#ifndef KS_INSTR_COUNTERS_H
#define KS_INSTR_COUNTERS_H

#include "err.h"

/* Reads the counters file name in the directory dirfd into a run's
 * results (tables, call graph, traces; no profile.db) and drops them:
 * 0, or a negative errno with err saying what is wrong in the file. */
int ks_instr_counters_read(int dirfd, const char *name, struct ks_err *err);

#endif
