/*
 * libkscope-mt.so, kscope's runtime for code compiled with
 * -fsanitize=thread: what kscope and the runtime agree on.  The compiler
 * turns every memory access, atomic operation, function entry and exit of
 * the program into a call of ThreadSanitizer's instrumentation interface
 * (__tsan_read4, __tsan_atomic32_fetch_add, __tsan_func_entry...); this
 * runtime implements that interface and feeds kscope's analysis core
 * (src/memtools/core) instead of a race detector, so that `kscope
 * contention` and `kscope falseshare` see the program's threads run in
 * parallel at close to native speed, with the program's own heap layout.
 * It writes the findings file format of kscope's Valgrind tool
 * (docs/formats.md), one file per process, which kscope symbolizes
 * (src/memtools/rtsym) and turns into the same reports.
 *
 * kscope runs the program with the runtime in LD_PRELOAD and the two
 * variables below; without them (a program built for kscope run on its
 * own) the runtime does nothing but the atomic operations.
 */
#ifndef KS_MTRT_H
#define KS_MTRT_H

/* The runtime's file name: build/lib, installed in lib/kscope/. */
#define KS_MTRT_LIBNAME "libkscope-mt.so"
/* The link flag that names it. */
#define KS_MTRT_LINKNAME "kscope-mt"

/* The run directory: each process writes <dir>/findings.<pid>.jsonl. */
#define KS_MTRT_ENV_DIR "KSCOPE_MT_DIR"
/* The analysis and its settings, comma-separated key=value pairs:
 *   analysis=contention|falseshare   line_size=16..4096 (a power of two)
 *   min_accesses=N   min_writes=N   num_callers=1..64   min_write=0|1
 *   pad_smu=0|1   thread_isolation=0|1
 * A process that finds either variable missing or malformed stays
 * passive. */
#define KS_MTRT_ENV_OPTIONS "KSCOPE_MT_OPTIONS"

/* The start record's "front_end" for findings this runtime wrote (the
 * Valgrind tool writes none: "valgrind" is the default). */
#define KS_MTRT_FRONT_END "compiled"

#endif
