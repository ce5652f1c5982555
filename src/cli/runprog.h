/*
 * Running the program under test (src/cli/runprog.c).
 */
#ifndef KS_RUNPROG_H
#define KS_RUNPROG_H

#include <sys/types.h>

#include "err.h"

/* Finds prog like execvp does (a name with a '/' is taken as a path) and
 * checks that it is an executable file; *path is the absolute path,
 * malloc'd.  Errors name the program and what is accepted. */
int ks_find_program(const char *prog, char **path, struct ks_err *err);

/* Runs argv with envp and waits for it.  SIGINT and SIGTERM sent to
 * kscope by another process are passed on; the terminal's Ctrl+C reaches
 * the program directly.  The program inherits kscope's dispositions.
 * Returns the wait status, or -errno with err set when the program could
 * not be started.  *pid_out (may be NULL) gets the program's pid. */
int ks_run_program(char **argv, char **envp, pid_t *pid_out, struct ks_err *err);

#endif
