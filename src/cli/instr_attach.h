/*
 * kscope instrument --pid: kscope's runtime loaded into a running
 * process and its functions patched, then unpatched, through ptrace
 * (docs/instrument.md, "Attaching").  x86-64 Linux.
 */
#ifndef KS_INSTR_ATTACH_H
#define KS_INSTR_ATTACH_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

struct ks_attach;

/* Checks that pid can be attached to (it exists, is not kscope itself,
 * is not traced already, runs a program of the same user or kscope is
 * privileged), and returns its executable's path (malloc'd) in *exe and
 * its real uid and gid.  -ESRCH, -EPERM, -EBUSY with err set. */
int ks_attach_check(pid_t pid, char **exe, uid_t *uid, gid_t *gid, struct ks_err *err);

/* Stops every thread of pid, loads lib (kscope's runtime) into it with
 * dlopen, hands it the settings block (len bytes: "NAME=VALUE" strings
 * each ended by a NUL), patches the process and lets it run on.  *out
 * is for ks_attach_wait and ks_attach_detach.  Nothing is left changed
 * in the process on an error but the runtime, loaded and inactive. */
int ks_attach_start(pid_t pid, const char *lib, const char *block, size_t len,
		    struct ks_attach **out, struct ks_err *err);

/* Waits until the process ends (1), *stop is set or seconds pass (0;
 * seconds <= 0: no limit). */
int ks_attach_wait(struct ks_attach *a, const volatile sig_atomic_t *stop, double seconds);

/* Stops the process again, puts its original code back, has the runtime
 * write its results and lets the process run on, no longer traced: 0.
 * 1 when the process ran another program since (exec): the runtime
 * wrote its results then, and there is nothing to put back. */
int ks_attach_detach(struct ks_attach *a, struct ks_err *err);

void ks_attach_free(struct ks_attach *a);

#endif
