/*
 * kscope memcheck's ASan engine: a program built with AddressSanitizer
 * runs natively (Valgrind cannot run it), with
 *
 *     ASAN_OPTIONS=halt_on_error=0:exitcode=0:malloc_context_size=N
 *                  (--redzone, --freelist-vol, --leak-check no when given)
 *                  :(the user's ASAN_OPTIONS):log_path=RUN/asan
 *                  :log_exe_name=1:symbolize=0
 *
 * so that every process writes ASan's and LeakSanitizer's reports to
 * RUN/asan.<exe>.<pid> (forks and execs included), the program's standard
 * error stays its own, and the reports come without names: kscope names
 * the frames with libdw (src/memtools/asan).  The user's options win over
 * kscope's defaults; the last three are kscope's, for it must find and
 * read the reports.
 *
 * halt_on_error=0 goes on after an error where the program was built with
 * -fsanitize-recover=address (otherwise ASan stops at the first, and the
 * reports say the rest was not checked).  exitcode=0 keeps the program's
 * own exit status when only leaks were found (LeakSanitizer otherwise
 * replaces it with 1).
 */
#include "memcheck_mc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "asan.h"
#include "cli.h"
#include "log.h"
#include "mcxml.h"
#include "outdir.h"
#include "runprog.h"

extern char **environ;

/* ASAN_OPTIONS for the run; malloc'd, NULL when memory runs out or the
 * run directory's path cannot be quoted (*bad set). */
static char *asan_options(const struct ks_mc_opts *o, const char *rundir, bool *bad)
{
	const char *user = getenv("ASAN_OPTIONS");
	char extra[256] = "";
	char *s = NULL;
	size_t n = 0;

	*bad = strchr(rundir, '"') || strchr(rundir, '\'');
	if (*bad)
		return NULL;
	if (o->redzone_given)
		n += (size_t)snprintf(extra + n, sizeof(extra) - n, ":redzone=%" PRId64, o->redzone);
	if (o->freelist_given)
		n += (size_t)snprintf(extra + n, sizeof(extra) - n, ":quarantine_size_mb=%" PRId64,
				      (o->freelist_vol + (1 << 20) - 1) >> 20);
	if (o->leak_check == 2)
		n += (size_t)snprintf(extra + n, sizeof(extra) - n, ":detect_leaks=0");
	if (asprintf(&s, "ASAN_OPTIONS=halt_on_error=0:exitcode=0:malloc_context_size=%" PRId64
		     "%s%s%s:log_path=\"%s/asan\":log_exe_name=1:symbolize=0",
		     o->num_callers, extra, user && *user ? ":" : "", user ? user : "",
		     rundir) < 0)
		return NULL;
	return s;
}

/* environ with ASAN_OPTIONS replaced by opt; malloc'd array. */
static char **asan_env(char *opt)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	if (!(envp = calloc(n + 2, sizeof(*envp))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "ASAN_OPTIONS=", 13))
			envp[k++] = environ[i];
	envp[k++] = opt;
	envp[k] = NULL;
	return envp;
}

struct asan_log {
	char *name;       /* asan.<exe>.<pid> */
	char *exe;        /* <exe> */
	long pid;
};

static int cmp_log(const void *a, const void *b)
{
	const struct asan_log *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void free_logs(struct asan_log *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].exe);
	}
	free(v);
}

/* The logs ASan wrote in the run directory, the program's first. */
static int find_logs(struct ks_rundir *rd, pid_t main_pid, struct asan_log **out, size_t *n)
{
	int fd = dup(rd->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	struct asan_log *v = NULL;
	size_t cap = 0;

	*n = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		const char *dot = strrchr(de->d_name, '.');
		char *end;
		long pid;

		if (strncmp(de->d_name, "asan.", 5) || !dot || dot < de->d_name + 5)
			continue;
		pid = strtol(dot + 1, &end, 10);
		if (*end || end == dot + 1 || pid <= 0)
			continue;
		if (*n == cap) {
			struct asan_log *w = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof(*v));

			if (!w)
				goto oom;
			v = w;
		}
		v[*n].pid = pid;
		v[*n].name = strdup(de->d_name);
		v[*n].exe = dot > de->d_name + 5 ? strndup(de->d_name + 5,
							   (size_t)(dot - de->d_name - 6))
						 : strdup("");
		(*n)++;
		if (!v[*n - 1].name || !v[*n - 1].exe)
			goto oom;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_log);
	for (size_t i = 0; i < *n; i++)
		if (v[i].pid == (long)main_pid) {
			struct asan_log m = v[i];

			memmove(v + 1, v, i * sizeof(*v));
			v[0] = m;
			break;
		}
	*out = v;
	return 0;
oom:
	closedir(d);
	free_logs(v, *n);
	*n = 0;
	return -ENOMEM;
}

/* The program's argv into its document (ASan's log has no command). */
static int set_command(struct ks_mcx_doc *d, const char *prog, char **program)
{
	size_t argc = 0;

	free(d->exe);
	if (!(d->exe = strdup(prog)))
		return -ENOMEM;
	while (program[argc])
		argc++;
	if (argc > 1 && !(d->argv = calloc(argc - 1, sizeof(*d->argv))))
		return -ENOMEM;
	for (size_t i = 1; i < argc; i++) {
		if (!(d->argv[i - 1] = strdup(program[i])))
			return -ENOMEM;
		d->argc = i;
	}
	return 0;
}

int ks_memcheck_asan_run(const struct ks_mc_opts *o, const char *prog, char **program,
			 unsigned show, unsigned errs)
{
	struct ks_rundir rd = { 0 };
	struct ks_err err;
	struct ks_asan_sym *sym = NULL;
	struct ks_asan_read_opts ropts;
	struct ks_asan_info main_info = { 0 };
	struct ks_mcx_doc *docs = NULL;
	struct ks_mcx_report_opts ro;
	struct ks_mtr_exit ex;
	struct ks_mtr_summary sum;
	struct asan_log *logs = NULL;
	size_t nlogs = 0, ndocs = 0;
	char *opt = NULL, **envp = NULL;
	char incomplete[512];
	pid_t pid = 0;
	int status, code = KS_EXIT_FAIL, exit_code;
	bool have_rd = false, bad = false;

	ks_err_clear(&err);
	if (ks_rundir_create(o->output, "memcheck", 0, &rd, &err)) {
		ks_error("%s", err.msg);
		return KS_EXIT_FAIL;
	}
	have_rd = true;
	if (!(opt = asan_options(o, rd.path, &bad)) || !(envp = asan_env(opt))) {
		if (bad)
			ks_error("the results directory %s has a quote in its name, which "
				 "ASAN_OPTIONS cannot carry; choose another --output", rd.path);
		else
			ks_error("out of memory");
		goto out;
	}
	ks_info("memcheck: running %s natively with AddressSanitizer (it was built with "
		"-fsanitize=address); results in %s", prog, rd.path);
	status = ks_run_program(program, envp, &pid, &err);
	if (status < 0) {
		ks_error("%s", err.msg);
		goto out;
	}
	exit_code = ks_exit_status(status);
	if (find_logs(&rd, pid, &logs, &nlogs)) {
		ks_error("cannot list %s: %s", rd.path, strerror(errno));
		goto out;
	}
	/* The program's document first, empty when ASan wrote nothing. */
	if (!(docs = calloc(nlogs + 1, sizeof(*docs))) || !(sym = ks_asan_sym_new())) {
		ks_error("out of memory");
		goto out;
	}
	ropts.show_leaks = show;
	ropts.sym = sym;
	if (!nlogs || logs[0].pid != (long)pid) {
		docs[0].pid = pid;
		docs[0].finished = docs[0].complete = true;
		if (!(docs[0].tool = strdup("asan"))) {
			ks_error("out of memory");
			goto out;
		}
		ndocs = 1;
	}
	for (size_t i = 0; i < nlogs; i++) {
		char path[PATH_MAX + 300];
		struct ks_asan_info info;
		struct ks_mcx_doc *d = &docs[ndocs];

		snprintf(path, sizeof(path), "%s/%s", rd.path, logs[i].name);
		if (ks_asan_read_file(d, &info, path, &ropts, &err)) {
			ks_error("%s", err.msg);
			goto out;
		}
		fchmodat(rd.dirfd, logs[i].name, KS_DELIVERABLE_MODE, 0);
		if (!d->pid)
			d->pid = logs[i].pid;
		if (logs[i].pid == (long)pid)
			main_info = info;
		else if (!(d->exe = strdup(logs[i].exe))) {
			ks_error("out of memory");
			ndocs++;
			goto out;
		}
		ndocs++;
	}
	if (set_command(&docs[0], prog, program)) {
		ks_error("out of memory");
		goto out;
	}

	ks_mc_report_opts(&ro, o, errs, false);
	ex.pid = pid;
	ex.signaled = WIFSIGNALED(status) || main_info.signo;
	ex.code = main_info.signo	 ? main_info.signo
		  : WIFSIGNALED(status) ? WTERMSIG(status)
					: WEXITSTATUS(status);
	ro.mtr.exits = &ex;
	/* ASan exits 0 when it stops the program (exitcode=0): no status. */
	ro.mtr.nexits = main_info.halted && !main_info.signo ? 0 : 1;
	if (main_info.halted && !main_info.signo) {
		snprintf(incomplete, sizeof(incomplete),
			 "AddressSanitizer stopped the program at its first error (%s); the rest "
			 "of the run was not checked.  A program built with "
			 "-fsanitize-recover=address goes on after each error",
			 main_info.first_bug[0] ? main_info.first_bug : "see the report");
		ro.incomplete = incomplete;
	}
	if (ks_mcx_report(docs, ndocs, &ro, &rd, stderr, &sum, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	/* On stderr: the program's standard output stays its own. */
	fprintf(stderr, "results: %s\n", rd.path);
	if (main_info.signo)
		exit_code = 128 + main_info.signo;
	else if (main_info.halted)
		exit_code = KS_EXIT_FAIL;
	code = exit_code;
	if (o->error_exitcode && sum.errors > 0) {
		code = (int)o->error_exitcode;
		if (!main_info.halted && WIFEXITED(status) && exit_code != 0)
			ks_info("the program exited with status %d; kscope exits with %d "
				"(--error-exitcode): memcheck found errors", exit_code, code);
	} else if (main_info.halted && !main_info.signo) {
		ks_info("AddressSanitizer stopped the program, whose own exit status is "
			"unknown; kscope exits with %d", KS_EXIT_FAIL);
	}
out:
	for (size_t i = 0; i < ndocs; i++)
		ks_mcx_free(&docs[i]);
	free(docs);
	free_logs(logs, nlogs);
	ks_asan_sym_free(sym);
	if (have_rd)
		ks_rundir_close(&rd);
	free(envp);
	free(opt);
	return code;
}
