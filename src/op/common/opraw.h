/*
 * What libkscope-op.so leaves for kscope op: the raw files of one collected
 * launch (kernel and application replay) or range (range replay).  This
 * header is the contract between the two; it holds only names.  The
 * deliverables kscope writes from these files are in docs/op.md.
 *
 * Directory: <run>/<pid>/<kernel>_<index>/ where <run> is config's dir,
 * <pid> the program's pid and <index> the launch's index among all the
 * process's launches, counted from 0 (range replay: <range>_<n>, n the
 * range's index among the ranges that passed the filters).  kscope names
 * it in `collect dir=`; the library creates it (0750) and writes:
 *
 *   context.json   the captured launch:
 *     { "kind": "kernel",                   ("range" for range replay)
 *       "name": "mm_tiled", "index": 7, "pid": 123, "tid": 124,
 *       "ordinal": K,                (among launches of this name and
 *                                     global size; proto.h's launch)
 *       "range": "step" or null,     (the user range the launch was in)
 *       "platform": {"name", "vendor", "version"},
 *       "device": {"name", "vendor", "version", "driver_version",
 *                  "type": "CPU"|"GPU"|"ACCELERATOR"|"OTHER",
 *                  "compute_units", "max_clock_mhz",
 *                  "global_mem_bytes", "global_mem_cache_bytes",
 *                  "local_mem_bytes"},
 *       "program": {"origin": "source"|"binary"|"il"|"unknown",
 *                   "file": "kernel.cl"|"kernel.bin"|"kernel.il"|null,
 *                   "bytes": N, "build_options": "..." or null,
 *                   "kscope_build_options": "..." (what the runtime
 *                   added, -cl-kernel-arg-info) },
 *       "work": {"dim": 2, "global": [..], "local": [..] or null,
 *                "offset": [..] or null},
 *       "args": [ { "index": 0,
 *                   "name": "a" or null, "type_name": "float*" or null,
 *                   "address": "global"|"constant"|"local"|"private"|null,
 *                   "access": "read_only"|"write_only"|"read_write"|"none"|null,
 *                   "const": true|false|null,        (type qualifier)
 *                   "kind": "buffer"|"local"|"scalar"|"null"|"sampler"|"unknown",
 *                   "size": N,                       (clSetKernelArg's arg_size)
 *                   "value_hex": "0a000000",         (scalars)
 *                   "value": 10 or 1.5 or null,      (scalars whose type_name
 *                                                     says int/uint/long/ulong/
 *                                                     float/double/...)
 *                   "buffer": { "bytes": N, "flags": ["CL_MEM_READ_ONLY", ...],
 *                               "sub_buffer_of": null or {"origin": N} }
 *                   (buffers only) } ],
 *       "queue": {"out_of_order": false, "profiling_by_program": false},
 *       "launches": [ ... ]   (range only: one object per launch, each with
 *                              name, index, work, args as above; a range
 *                              has no top-level work or args) }
 *   kernel.cl | kernel.bin | kernel.il
 *                  the program's source (all strings concatenated as the
 *                  runtime compiled them), binary or IL, as given; absent
 *                  when not known (context's program.file is then null)
 *   measure.json   the measurement (kernel and range replay; application
 *                  replay writes it for run 0 with one pass):
 *     { "mode": "kernel"|"application"|"range",
 *       "status": "ok"|"failed", "error": "..." (failed only),
 *       "warmup": 5, "passes": 10, "flush": true, "flush_bytes": N,
 *       "original_ns": N or null,   (the program's own launch, event time)
 *       "pass_ns": [N, ...],        (END - START of each measured pass)
 *       "pass_queued_ns": [N, ...], (START of each pass, relative to the
 *                                    first warm-up's START: for trace.json)
 *       "warmup_ns": [N, ...],
 *       "warmup_queued_ns": [N, ...], (START of each warm-up, as above)
 *       "replay_wall_ns": N,        (the whole replay, backup to restore)
 *       "backup_bytes": N,          (bytes backed up and restored per pass)
 *       "buffers": [ { "arg": 0, "bytes": N, "backed_up": true|false,
 *                      "may_read": true|false, "may_write": true|false,
 *                      "launch": I (ranges: which recorded launch),
 *                      (bytes_written is null when it was not measured)
 *                      "bytes_read": N, "bytes_written": N,
 *                      (bytes_written: the bytes the first pass changed)
 *                      "read_basis": "whole buffer (not write-only)"|...,
 *                      "write_basis": "bytes changed by the launch"|... },
 *                    { "arg": null, "base": "0x...", "bytes_read": null, ...
 *                      (--backup all: an allocation no argument reaches) } ],
 *       "counters": { "supported": false, "reason": "..." }
 *                or { "supported": true, "per_pass": [ {"instructions": N,
 *                     "cycles": N, ...}, ... ] },
 *       "hardware": (CUDA, after the passes: one more run under CUPTI)
 *                { "supported": true, "source": "CUPTI range profiler (...)",
 *                  "metrics": { "dram__bytes_read.sum": X, ... } }
 *                or { "supported": false, "reason": "..." } }
 *
 * Files are written under a temporary name and renamed, so a file that
 * exists is complete.  `collected` is sent after the last rename.
 */
#ifndef KS_OP_RAW_H
#define KS_OP_RAW_H

#define KS_OP_CONTEXT_FILE "context.json"
#define KS_OP_MEASURE_FILE "measure.json"

#endif
