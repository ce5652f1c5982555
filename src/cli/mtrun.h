/*
 * kscope contention and kscope falseshare with the compiled front end
 * (src/cli/mtrun.c): which front end a program is built for, the flags to
 * build one for kscope (--print-cflags), and the run itself -- the
 * program natively with libkscope-mt.so (src/memtools/rt) preloaded, its
 * findings files named with libdw (src/memtools/rtsym) and written into
 * the same reports as the Valgrind front end's.  Also the helpers both
 * front ends use to find the findings files of a run's processes.
 */
#ifndef KS_CLI_MTRUN_H
#define KS_CLI_MTRUN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "err.h"
#include "outdir.h"

/* --front-end's values, in this order. */
enum ks_mt_fe { KS_MT_FE_AUTO, KS_MT_FE_COMPILED, KS_MT_FE_VALGRIND };
extern const char *const ks_mt_fe_choices[];

/* What a program's ELF file (and the libraries it names in DT_NEEDED)
 * say about ThreadSanitizer. */
struct ks_mt_build {
	bool elf;                /* else a script: its interpreter is what runs */
	bool instrumented;       /* it or a library calls __tsan_func_entry or
				    __tsan_init and has no ThreadSanitizer runtime */
	char instrumented_in[512]; /* which file: the program's path or a library's */
	bool tsan_runtime;       /* ThreadSanitizer's own runtime comes with it */
	char tsan_what[512];     /* "libtsan.so.2", or why clang's is thought linked in */
};

/* Looks at prog.  0, or a negative errno with err set (it cannot be
 * read). */
int ks_mt_inspect(const char *prog, struct ks_mt_build *b, struct ks_err *err);

/* The message for a program built with ThreadSanitizer's runtime, on
 * stderr: why neither front end runs it and how to build it for kscope. */
void ks_mt_refuse_tsan(const char *prog, const struct ks_mt_build *b, const char *cmd);

/* --print-cflags: the compile and link flags for gcc and clang, as shell
 * assignments with comments.  0, or KS_EXIT_FAIL when the runtime is
 * missing (said on stderr). */
int ks_mt_print_cflags(FILE *out, const char *cmd);

struct ks_mt_run_opts {
	const char *command;     /* "contention", "falseshare" */
	const char *output;
	int64_t error_exitcode;  /* falseshare */
	int64_t num_callers, line_size, min_accesses;
	int64_t min_writes;      /* falseshare */
	bool min_write, pad_smu, thread_isolation;
};

/* Runs contention or falseshare with the compiled front end; the exit
 * status for kscope (cmd_memtools.c's rules). */
int ks_mt_compiled_run(const struct ks_mt_run_opts *o, const char *prog, char **program);

/* The pids of the files PREFIX<pid>SUFFIX in the run directory, sorted;
 * *pids is malloc'd.  0 or a negative errno. */
int ks_mt_list_pids(struct ks_rundir *rd, const char *prefix, const char *suffix,
		    long **pids, size_t *n);
/* The findings files of the program's child processes (every
 * findings.<pid>.jsonl but root's), by pid, each a malloc'd path. */
int ks_mt_child_findings(struct ks_rundir *rd, pid_t root, char ***paths, size_t *n,
			 struct ks_err *err);
void ks_mt_free_paths(char **paths, size_t n);

#endif
