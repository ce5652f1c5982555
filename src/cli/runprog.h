/*
 * Running the program under test (src/cli/runprog.c).
 */
#ifndef KS_RUNPROG_H
#define KS_RUNPROG_H

#include <stdbool.h>
#include <sys/types.h>

#include "err.h"

/* Finds prog like execvp does (a name with a '/' is taken as a path) and
 * checks that it is an executable file; *path is the absolute path,
 * malloc'd.  Errors name the program and what is accepted. */
int ks_find_program(const char *prog, char **path, struct ks_err *err);

/* Refuses a statically linked ELF program, which LD_PRELOAD cannot reach
 * (it has no PT_INTERP), and 32-bit ELF programs; scripts pass (their
 * interpreter is what runs).  cmd names the command for the message
 * ("kscope op"), why says what it preloads ("its runtime"). */
int ks_check_dynamic(const char *path, const char *cmd, const char *why,
		     struct ks_err *err);

/* One of kscope's own files, found next to the running executable: in
 * <dir>/lib/<rel> (the build tree) or <dir>/../lib/kscope/<rel> (an
 * installation), where <dir> holds the executable.  mode is access(2)'s
 * (R_OK, X_OK).  On success *out (size bytes) is the file's real path;
 * otherwise the error names `what` and both places looked in, and *out
 * is the installed place (for messages). */
int ks_find_own_file(const char *rel, int mode, const char *what, char *out,
		     size_t size, struct ks_err *err);

/* Runs argv with envp and waits for it.  SIGINT and SIGTERM sent to
 * kscope by another process are passed on; the terminal's Ctrl+C reaches
 * the program directly.  The program inherits kscope's dispositions.
 * Returns the wait status, or -errno with err set when the program could
 * not be started.  *pid_out (may be NULL) gets the program's pid. */
int ks_run_program(char **argv, char **envp, pid_t *pid_out, struct ks_err *err);

/* The same; with die_with_kscope, the program gets SIGKILL if kscope
 * itself dies first (kill -9 of kscope, a crash), so that it is not left
 * running without anyone to collect it (PR_SET_PDEATHSIG, set before the
 * exec; if kscope died before that, the program is never started). */
int ks_run_program_tied(char **argv, char **envp, pid_t *pid_out, bool die_with_kscope,
			struct ks_err *err);

/* The program's environment: kscope's own (environ), with the runtime's
 * settings set or removed.  envp borrows the inherited strings and owns
 * the ones added. */
struct ks_env {
	char **envp;           /* NULL-terminated */
	size_t n;
	char **owned;          /* strings kscope allocated */
	size_t nowned;
};

/* Starts e as a copy of environ's list.  0, or -ENOMEM. */
int ks_env_init(struct ks_env *e);
/* Sets name=value, replacing an inherited or earlier name.  0, or -ENOMEM. */
int ks_env_set(struct ks_env *e, const char *name, const char *value);
/* Removes every name=... from the list. */
void ks_env_unset(struct ks_env *e, const char *name);
void ks_env_free(struct ks_env *e);

/* The exit status a shell would give for a wait status: the program's
 * own, 128+N when signal N ended it, else 1. */
int ks_exit_status(int status);

/* Sends sig to the program ks_run_program is waiting for, if any
 * (async-signal-safe: for a timer's signal handler). */
void ks_run_program_signal(int sig);

#endif
