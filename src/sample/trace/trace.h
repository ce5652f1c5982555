/*
 * Timeline traces of a profile: the Perfetto protobuf trace
 * (trace.perfetto-trace) that ui.perfetto.dev opens, and the Chrome Trace
 * Event JSON (trace.json).  Both show a process track per process, a
 * thread track per thread with its regions, ranges, marks, pauses and MPI
 * calls as slices, and counter tracks for each process's CPU use and RSS.
 */
#ifndef KS_SAMPLE_TRACE_H
#define KS_SAMPLE_TRACE_H

#include "err.h"
#include "outdir.h"
#include "profile.h"

/* Writes p as a Perfetto trace to of (not committed: the caller commits). */
int ks_trace_write_perfetto(const struct ks_profile *p, struct ks_outfile *of,
			    struct ks_err *err);
/* Writes p as Chrome Trace Event JSON to of. */
int ks_trace_write_json(const struct ks_profile *p, struct ks_outfile *of,
			struct ks_err *err);

#endif
