/*
 * Running a program under kscope's Valgrind tool (src/memtools/vg), for
 * kscope contention, falseshare and kscope op --simulate; kscope memcheck
 * runs Valgrind's Memcheck and uses the helpers that are not about the
 * tool (the program check, %-escaping, the thread-limit message).
 *
 * Valgrind finds a tool in the directory VALGRIND_LIB names, so kscope
 * builds a private one: a temporary directory with a link to every file
 * of the system's Valgrind library directory plus kscope's tool and
 * preload library.  A session holds that directory, valgrind's path and
 * the environment to run it with (kscope's own, VALGRIND_LIB set,
 * VALGRIND_OPTS removed so that nothing changes what the tool is told).
 */
#ifndef KS_CLI_VGRUN_H
#define KS_CLI_VGRUN_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* A growing NULL-terminated argument vector of malloc'd strings. */
struct ks_argv {
	char **v;
	size_t n, cap;
};

int ks_argv_add(struct ks_argv *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ks_argv_free(struct ks_argv *a);

struct ks_vg {
	char *valgrind;  /* path of the valgrind executable */
	char *vglib;     /* the private library directory, until ks_vg_close */
	char *envvar;    /* "VALGRIND_LIB=..." */
	char **envp;     /* the environment to run valgrind with */
};

/* Finds valgrind and kscope's tool and builds the library directory.
 * On failure err says what is missing and how to get it. */
int ks_vg_open(struct ks_vg *vg, struct ks_err *err);
/* Removes the library directory (Valgrind has read it once it runs the
 * tool) and frees the session; safe to call twice. */
void ks_vg_close(struct ks_vg *vg);

/* path with every '%' doubled (Valgrind expands %p and %q in file names
 * it is given); malloc'd, NULL when out of memory. */
char *ks_vg_escape_percent(const char *path);

/* The environment to run valgrind with: kscope's own less VALGRIND_OPTS
 * (its options could change what the tool is told) and VALGRIND_LIB, set
 * to vglib when it is not NULL (*owned is then that string, malloc'd,
 * else NULL).  The array is malloc'd, its other strings are environ's;
 * NULL when out of memory. */
char **ks_vg_env(const char *vglib, char **owned);

/* 0 when Valgrind can check prog; else says why not on stderr (a
 * statically linked program never loads Valgrind's malloc replacement:
 * memcheck would not check its heap, contention and falseshare could not
 * name its blocks) and returns KS_EXIT_USAGE.  cmd names the command. */
int ks_vg_check_program(const char *prog, const char *cmd);

/* Whether a Valgrind log says it stopped the program for having more
 * threads than --max-threads allows. */
bool ks_vg_log_too_many_threads(const char *log);

/* The message for that case, on stderr: the limit and how to raise it. */
void ks_vg_error_too_many_threads(long long max_threads, const char *rundir);

#endif
