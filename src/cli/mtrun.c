/*
 * kscope contention and falseshare with the compiled front end (mtrun.h).
 *
 * Which front end: a program (or a library it names in DT_NEEDED) that
 * calls ThreadSanitizer's instrumentation interface without
 * ThreadSanitizer's runtime was built for kscope's runtime; one that
 * brings ThreadSanitizer's runtime (needs libtsan, or has clang's linked
 * in) can run under neither front end and is refused.
 *
 * The run: the run directory, then the program with libkscope-mt.so in
 * LD_PRELOAD (ahead of the program's own list) and the run directory and
 * settings in KSCOPE_MT_DIR and KSCOPE_MT_OPTIONS (mtrt.h); every process
 * of the program writes findings.<pid>.jsonl there.  Afterwards each
 * file's frames are named (src/memtools/rtsym), the program's file
 * becomes findings.jsonl, and the reports are written as the Valgrind
 * front end's are (src/memtools/report), with how the program ended as
 * kscope saw it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "elfdeps.h"
#include "log.h"
#include "mtreport.h"
#include "mtrt.h"
#include "mtrun.h"
#include "rtsym.h"
#include "runprog.h"

extern char **environ;

const char *const ks_mt_fe_choices[] = { "auto", "compiled", "valgrind", NULL };

/* ------------------------------------------------------------------ */
/* Which front end                                                     */
/* ------------------------------------------------------------------ */

enum { SYM_FUNC_ENTRY, SYM_INIT };
static const char *const tsan_syms[] = { "__tsan_func_entry", "__tsan_init", NULL };
#define TSAN_CALLS ((1u << SYM_FUNC_ENTRY) | (1u << SYM_INIT))

/* What one file says: ThreadSanitizer's runtime (needed or linked in),
 * or calls of the interface.  self: the program (else a library). */
static void inspect_file(const char *path, const struct ks_elfdeps *d, bool self,
			 struct ks_mt_build *b)
{
	const char *n;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	if (!b->tsan_runtime) {
		if ((n = ks_elfdeps_needs(d, "libtsan.so")) ||
		    (n = ks_elfdeps_needs(d, "libclang_rt.tsan"))) {
			b->tsan_runtime = true;
			snprintf(b->tsan_what, sizeof(b->tsan_what), "%s needs %s", path, n);
		} else if ((d->defines & (1u << SYM_INIT)) &&
			   strncmp(base, KS_MTRT_LIBNAME, strlen(KS_MTRT_LIBNAME))) {
			/* clang links its runtime into the program itself. */
			b->tsan_runtime = true;
			snprintf(b->tsan_what, sizeof(b->tsan_what),
				 "%s contains ThreadSanitizer's runtime (it defines __tsan_init: "
				 "clang linked its runtime in)", path);
		}
	}
	if (!b->instrumented && (d->refers & TSAN_CALLS)) {
		b->instrumented = true;
		snprintf(b->instrumented_in, sizeof(b->instrumented_in), "%s%s", path,
			 self ? "" : " (a library it loads at start)");
	}
}

int ks_mt_inspect(const char *prog, struct ks_mt_build *b, struct ks_err *err)
{
	struct ks_elfdeps d;
	int rc;

	memset(b, 0, sizeof(*b));
	rc = ks_elfdeps_read(prog, tsan_syms, &d, err);
	if (rc == -ENOEXEC) {
		ks_elfdeps_free(&d);
		ks_err_clear(err);
		return 0; /* a script */
	}
	if (rc) {
		ks_elfdeps_free(&d);
		return rc;
	}
	b->elf = true;
	inspect_file(prog, &d, true, b);
	/* The libraries it loads at start: instrumented ones of the user's
	 * (found by the loader's rules), ThreadSanitizer's by name. */
	for (size_t i = 0; i < d.nneeded; i++) {
		char *path = ks_elfdeps_resolve(prog, &d, d.needed[i]);
		struct ks_elfdeps ld;
		struct ks_err e;

		if (!path)
			continue;
		if (ks_elfdeps_read(path, tsan_syms, &ld, &e) == 0)
			inspect_file(path, &ld, false, b);
		ks_elfdeps_free(&ld);
		free(path);
	}
	ks_elfdeps_free(&d);
	return 0;
}

void ks_mt_refuse_tsan(const char *prog, const struct ks_mt_build *b, const char *cmd)
{
	ks_error("%s: %s is built with ThreadSanitizer's own runtime (%s). kscope's compiled "
		 "front end is a runtime for the same calls and cannot run beside it, and "
		 "Valgrind cannot run ThreadSanitizer's shadow memory. Build it for kscope: "
		 "compile with -fsanitize=thread and link kscope's runtime instead "
		 "(gcc: do not give -fsanitize=thread when linking; clang: link with "
		 "-fno-sanitize-link-runtime), or build it without -fsanitize=thread for the "
		 "Valgrind front end; 'kscope %s --print-cflags' prints the flags",
		 cmd, prog, b->tsan_what, cmd);
}

/* The runtime's path and its directory; 0 or -ENOENT (said). */
static int find_runtime(char *lib, size_t size, char *dir, size_t dsize)
{
	struct ks_err err;
	char *slash;

	ks_err_clear(&err);
	if (ks_find_own_file(KS_MTRT_LIBNAME, R_OK, "kscope's runtime " KS_MTRT_LIBNAME, lib,
			     size, &err)) {
		ks_error("%s", err.msg);
		return -ENOENT;
	}
	snprintf(dir, dsize, "%s", lib);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

int ks_mt_print_cflags(FILE *out, const char *cmd)
{
	char lib[PATH_MAX], dir[PATH_MAX];
	char link[2 * PATH_MAX + 64];

	if (find_runtime(lib, sizeof(lib), dir, sizeof(dir)))
		return KS_EXIT_FAIL;
	snprintf(link, sizeof(link), "-L%s -Wl,-rpath,%s -l%s", dir, dir, KS_MTRT_LINKNAME);
	fprintf(out,
		"# kscope %s's compiled front end: compile with ThreadSanitizer's\n"
		"# instrumentation, link kscope's runtime (%s) instead of\n"
		"# ThreadSanitizer's.  Shell assignments: eval \"$(kscope %s --print-cflags)\".\n"
		"KSCOPE_MT_CFLAGS='-fsanitize=thread -g'\n"
		"KSCOPE_MT_LDFLAGS_GCC='%s'\n"
		"KSCOPE_MT_LDFLAGS_CLANG='-fsanitize=thread -fno-sanitize-link-runtime %s'\n"
		"# gcc:   gcc $KSCOPE_MT_CFLAGS -c app.c && gcc app.o $KSCOPE_MT_LDFLAGS_GCC -o app\n"
		"#        (never -fsanitize=thread on gcc's link line: it links libtsan)\n"
		"# clang: clang $KSCOPE_MT_CFLAGS app.c $KSCOPE_MT_LDFLAGS_CLANG -o app\n"
		"# then:  kscope %s -- ./app\n",
		cmd, lib, cmd, link, link, cmd);
	return fflush(out) ? KS_EXIT_FAIL : KS_EXIT_OK;
}

/* ------------------------------------------------------------------ */
/* Findings files                                                      */
/* ------------------------------------------------------------------ */

/* The pid in NAME = PREFIX<pid>SUFFIX, or -1. */
static long name_pid(const char *name, const char *prefix, const char *suffix)
{
	size_t lp = strlen(prefix), ls = strlen(suffix), n = strlen(name);
	long pid = 0;

	if (n <= lp + ls || strncmp(name, prefix, lp) || strcmp(name + n - ls, suffix))
		return -1;
	for (size_t i = lp; i < n - ls; i++) {
		if (name[i] < '0' || name[i] > '9' || pid > 100000000)
			return -1;
		pid = pid * 10 + (name[i] - '0');
	}
	return pid;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

int ks_mt_list_pids(struct ks_rundir *rd, const char *prefix, const char *suffix,
		    long **pids, size_t *n)
{
	int fd = openat(rd->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t cap = 0;

	*pids = NULL;
	*n = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while ((de = readdir(d))) {
		long pid = name_pid(de->d_name, prefix, suffix);

		if (pid < 0)
			continue;
		if (*n == cap) {
			long *v = realloc(*pids, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!v) {
				closedir(d);
				return -ENOMEM;
			}
			*pids = v;
		}
		(*pids)[(*n)++] = pid;
	}
	closedir(d);
	if (*n)
		qsort(*pids, *n, sizeof(**pids), cmp_long);
	return 0;
}

int ks_mt_child_findings(struct ks_rundir *rd, pid_t root, char ***paths, size_t *n,
			 struct ks_err *err)
{
	long *pids = NULL;
	size_t np = 0;
	int rc = ks_mt_list_pids(rd, "findings.", ".jsonl", &pids, &np);

	*paths = NULL;
	*n = 0;
	if (rc)
		return ks_err_set(err, rc, "cannot list %s: %s", rd->path, strerror(-rc));
	*paths = calloc(np ? np : 1, sizeof(**paths));
	if (!*paths) {
		free(pids);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < np; i++) {
		char name[64];

		if (pids[i] == (long)root)
			continue;
		snprintf(name, sizeof(name), "findings.%ld.jsonl", pids[i]);
		fchmodat(rd->dirfd, name, KS_DELIVERABLE_MODE, 0);
		if (asprintf(&(*paths)[*n], "%s/%s", rd->path, name) < 0) {
			free(pids);
			return ks_err_set(err, -ENOMEM, "out of memory");
		}
		(*n)++;
	}
	free(pids);
	return 0;
}

void ks_mt_free_paths(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/* Names the frames of every findings file of the run. */
static int name_frames(struct ks_rundir *rd, struct ks_err *err)
{
	long *pids = NULL;
	size_t n = 0;
	int rc = ks_mt_list_pids(rd, "findings.", ".jsonl", &pids, &n);

	if (rc)
		return ks_err_set(err, rc, "cannot list %s: %s", rd->path, strerror(-rc));
	for (size_t i = 0; i < n && !rc; i++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/findings.%ld.jsonl", rd->path, pids[i]);
		rc = ks_rtsym_file(path, err);
	}
	free(pids);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

/* kscope's environment, less any KSCOPE_MT_* of its own, plus the
 * runtime's variables and the runtime first in LD_PRELOAD.  *owned holds
 * the strings made here. */
static char **run_env(const struct ks_mt_run_opts *o, const char *lib, const char *rundir,
		      char *owned[3])
{
	size_t n = 0, k = 0;
	const char *pre = getenv("LD_PRELOAD");
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 4, sizeof(*env));
	if (!env)
		return NULL;
	if (asprintf(&owned[0], "%s=%s", KS_MTRT_ENV_DIR, rundir) < 0 ||
	    asprintf(&owned[1], "%s=analysis=%s,line_size=%" PRId64 ",min_accesses=%" PRId64
		     ",min_writes=%" PRId64 ",num_callers=%" PRId64
		     ",min_write=%d,pad_smu=%d,thread_isolation=%d",
		     KS_MTRT_ENV_OPTIONS, o->command, o->line_size, o->min_accesses,
		     o->min_writes, o->num_callers, o->min_write, o->pad_smu, o->thread_isolation) < 0 ||
	    asprintf(&owned[2], "LD_PRELOAD=%s%s%s", lib, pre && *pre ? ":" : "",
		     pre ? pre : "") < 0) {
		free(env);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "KSCOPE_MT_", 10) || !strncmp(environ[i], "LD_PRELOAD=", 11))
			continue;
		env[k++] = environ[i];
	}
	env[k++] = owned[0];
	env[k++] = owned[1];
	env[k++] = owned[2];
	env[k] = NULL;
	return env;
}

int ks_mt_compiled_run(const struct ks_mt_run_opts *o, const char *prog, char **program)
{
	char lib[PATH_MAX], dir[PATH_MAX], name[64], findings[PATH_MAX + 32];
	char *owned[3] = { NULL, NULL, NULL }, **env = NULL, **children = NULL;
	struct ks_rundir rd = { 0 };
	struct ks_mtr_opts ro;
	struct ks_mtr_summary sum;
	struct ks_mtr_exit ex;
	struct ks_err err;
	size_t nchildren = 0;
	pid_t pid = 0;
	int status, code = KS_EXIT_FAIL, exit_code;
	bool have_rd = false;

	ks_err_clear(&err);
	if (ks_check_dynamic(prog, o->command, "kscope's runtime", &err)) {
		ks_error("%s", err.msg);
		return KS_EXIT_USAGE;
	}
	if (find_runtime(lib, sizeof(lib), dir, sizeof(dir)))
		return KS_EXIT_FAIL;
	if (ks_rundir_create(o->output, o->command, 0, &rd, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	have_rd = true;
	if (!(env = run_env(o, lib, rd.path, owned))) {
		ks_error("out of memory");
		goto out;
	}
	ks_info("%s: running %s natively with the compiled front end (%s, threads in "
		"parallel); results in %s", o->command, prog, KS_MTRT_LIBNAME, rd.path);
	status = ks_run_program(program, env, &pid, &err);
	if (status < 0) {
		ks_error("%s", err.msg);
		goto out;
	}
	exit_code = ks_exit_status(status);
	if (WIFSIGNALED(status))
		ks_info("the program was ended by signal %d (%s); reporting what was found",
			WTERMSIG(status), strsignal(WTERMSIG(status)));
	snprintf(name, sizeof(name), "findings.%d.jsonl", (int)pid);
	if (faccessat(rd.dirfd, name, F_OK, 0) != 0) {
		ks_error("%s wrote no findings: %s. The program must run kscope's runtime: "
			 "was it linked against another one, or made to drop LD_PRELOAD?",
			 prog, WIFSIGNALED(status) ? "it was killed before it started analysing"
						   : "its runtime never started");
		goto out;
	}
	if (name_frames(&rd, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (renameat(rd.dirfd, name, rd.dirfd, "findings.jsonl") != 0) {
		ks_error("cannot rename %s: %s", name, strerror(errno));
		goto out;
	}
	fchmodat(rd.dirfd, "findings.jsonl", KS_DELIVERABLE_MODE, 0);
	snprintf(findings, sizeof(findings), "%s/findings.jsonl", rd.path);
	if (ks_mt_child_findings(&rd, pid, &children, &nchildren, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	memset(&ex, 0, sizeof(ex));
	ex.pid = pid;
	ex.signaled = WIFSIGNALED(status);
	ex.code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
	memset(&ro, 0, sizeof(ro));
	ro.children = (const char *const *)children;
	ro.nchildren = nchildren;
	ro.exits = &ex;
	ro.nexits = 1;
	ro.filter = true;
	ro.max_stack = (unsigned)o->num_callers;
	ro.command = o->command;
	ro.field_names = true;
	if (ks_mtr_write(findings, &rd, &ro, stderr, &sum, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (sum.truncated)
		ks_warn("the findings file has no end record: the process was killed before it "
			"could write its results; what it wrote is reported");
	else if (sum.truncated_procs)
		ks_warn("%lu of the program's %lu processes left no end record: what they wrote "
			"is reported", sum.truncated_procs, sum.processes);
	fprintf(stderr, "results: %s\n", rd.path);
	code = exit_code;
	if (o->error_exitcode && !strcmp(o->command, "falseshare") && sum.false_lines > 0) {
		code = (int)o->error_exitcode;
		if (WIFEXITED(status) && exit_code != 0)
			ks_info("the program exited with status %d; kscope exits with %d "
				"(--error-exitcode): falseshare found false sharing", exit_code, code);
	}
out:
	ks_mt_free_paths(children, nchildren);
	for (int i = 0; i < 3; i++)
		free(owned[i]);
	free(env);
	if (have_rd)
		ks_rundir_close(&rd);
	return code;
}
