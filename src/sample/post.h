/*
 * Post-processing of a `kscope sample` run: the raw files the runtime
 * wrote under <run>/raw/ become one symbolized struct ks_profile.
 *
 * Addresses are symbolized with elfutils' libdw (function, source file and
 * line, inlined frames, demangled C++ names) against the modules each
 * process recorded at start and at every dlopen.  A sample in a module
 * without symbols, or in no known module, still counts: under the
 * module's name, or under "[unknown]".
 */
#ifndef KS_SAMPLE_POST_H
#define KS_SAMPLE_POST_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "profile.h"

/* The function name of the samples a thread's CPU-time timer owed when it
 * ended (KS_RAW_SAMPLE_AT_END): CPU time counted, place unknown. */
#define KS_POST_AT_END_FRAME "[thread ended between ticks]"

struct ks_post_stats {
	size_t files;          /* raw files read */
	size_t damaged_files;  /* files with an incomplete or bad tail */
	uint64_t bytes_ignored;/* bytes of those tails */
	uint64_t samples;
	uint64_t addresses;    /* distinct addresses symbolized */
	uint64_t unknown;      /* addresses outside every known module */
	/* Real-time samples of a timer slowed for many live threads
	 * (KS_RAW_SAMPLE_SLOWED), and the most periods one stood for. */
	uint64_t slowed_samples;
	uint64_t slowed_max_periods;
};

/* Reads every raw file of run_dir/raw into p (freshly ks_profile_init'ed).
 * Returns 0, or -errno with err set when nothing usable was found. */
int ks_post_build(const char *run_dir, struct ks_profile *p,
		  struct ks_post_stats *stats, struct ks_err *err);

#endif
