/*
 * kscope memcheck, kscope contention and kscope falseshare: the launchers
 * of kscope's Valgrind tool (src/memtools/vg).
 *
 *     kscope memcheck   [options] -- PROGRAM [ARGS...]
 *     kscope contention [options] -- PROGRAM [ARGS...]
 *     kscope falseshare [options] -- PROGRAM [ARGS...]
 *
 * Checks the options and the program, creates the run directory, then
 * builds a private Valgrind library directory (the system's Valgrind
 * files linked in, plus kscope's tool and preload library) and runs
 * `valgrind --tool=kscope --analysis=...` on the program with
 * VALGRIND_LIB pointing there.  The tool writes findings.jsonl; when the
 * program ends (or is interrupted) the reports are written from it
 * (src/memtools/report) and the text report is printed on stderr.
 *
 * Exit status: --error-exitcode when errors (memcheck) or false sharing
 * (falseshare) were found, else the program's own status (128+N if
 * signal N ended it); 1 if the analysis itself failed, 2 for bad input.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "argcheck.h"
#include "cli.h"
#include "log.h"
#include "mtreport.h"
#include "outdir.h"
#include "runprog.h"

#ifndef KS_VG_LIBEXEC
#define KS_VG_LIBEXEC "/usr/libexec/valgrind"
#endif
#ifndef KS_VG_PLATFORM
#define KS_VG_PLATFORM "amd64-linux"
#endif

extern char **environ;

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

struct mt_opts {
	struct ks_common_opts common;
	char *output;
	int64_t error_exitcode;
	int64_t num_callers;
	int64_t max_threads;
	bool fair_sched;
	/* memcheck */
	int64_t redzone;
	int64_t freelist_vol;
	bool no_leak_check;
	bool no_filter;
	bool xml;
	/* contention, falseshare */
	int64_t line_size;
	int64_t min_accesses;
	bool no_min_write, no_pad_smu, no_thread_isolation;
};

#define OPT(field) .offset = offsetof(struct mt_opts, field)

#define MT_COMMON_OPTS(cmd)                                                        \
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR", \
	  .def = "kscope-out", .env = "KSCOPE_OUTPUT",                                 \
	  .help = "where the run directory is created", OPT(output) },                \
	{ .name = "error-exitcode", .type = KS_OPT_INT, .metavar = "N", .def = "1",    \
	  .env = "KSCOPE_ERROR_EXITCODE",                                              \
	  .help = "exit status when " cmd " found something (0: the program's own)",  \
	  OPT(error_exitcode), .min = 0, .max = 255 },                                 \
	{ .name = "num-callers", .type = KS_OPT_INT, .metavar = "N", .def = "12",      \
	  .env = "KSCOPE_NUM_CALLERS", .help = "frames recorded per stack",           \
	  OPT(num_callers), .min = 1, .max = 64 },                                     \
	{ .name = "max-threads", .type = KS_OPT_INT, .metavar = "N", .def = "500",     \
	  .env = "KSCOPE_MAX_THREADS",                                                 \
	  .help = "most threads the program may have alive at once",                   \
	  OPT(max_threads), .min = 1, .max = 4000 },                                   \
	{ .name = "fair-sched", .type = KS_OPT_FLAG, .env = "KSCOPE_FAIR_SCHED",       \
	  .help = "run threads in strict turns (Valgrind's --fair-sched=yes)",         \
	  OPT(fair_sched) }

#define MT_CACHE_OPTS                                                              \
	{ .name = "line-size", .type = KS_OPT_INT, .metavar = "BYTES", .def = "64",    \
	  .env = "KSCOPE_LINE_SIZE",                                                   \
	  .help = "cache line size: 16, 32, 64, 128, 256, ... 4096",                   \
	  OPT(line_size), .min = 16, .max = 4096 },                                    \
	{ .name = "no-min-write", .type = KS_OPT_FLAG, .env = "KSCOPE_NO_MIN_WRITE",   \
	  .help = "write shadow memory without testing it first (for the ablation "    \
		  "benchmark)", OPT(no_min_write) },                                   \
	{ .name = "no-pad-smu", .type = KS_OPT_FLAG, .env = "KSCOPE_NO_PAD_SMU",       \
	  .help = "pack shadow units instead of padding them to a cache line",        \
	  OPT(no_pad_smu) },                                                           \
	{ .name = "no-thread-isolation", .type = KS_OPT_FLAG,                          \
	  .env = "KSCOPE_NO_THREAD_ISOLATION",                                         \
	  .help = "keep all threads' counters interleaved instead of per thread",     \
	  OPT(no_thread_isolation) }

static const struct ks_opt memcheck_opts[] = {
	MT_COMMON_OPTS("memcheck"),
	{ .name = "redzone", .type = KS_OPT_SIZE, .metavar = "BYTES", .def = "16",
	  .env = "KSCOPE_REDZONE",
	  .help = "unaddressable bytes before and after every heap block",
	  OPT(redzone), .min = 0, .max = 4096 },
	{ .name = "freelist-vol", .type = KS_OPT_SIZE, .metavar = "SIZE", .def = "20m",
	  .env = "KSCOPE_FREELIST_VOL",
	  .help = "bytes of freed blocks kept unusable to catch late uses",
	  OPT(freelist_vol), .min = 0, .max = (int64_t)1 << 40 },
	{ .name = "no-leak-check", .type = KS_OPT_FLAG, .env = "KSCOPE_NO_LEAK_CHECK",
	  .help = "do not look for leaked blocks at exit", OPT(no_leak_check) },
	{ .name = "no-filter", .type = KS_OPT_FLAG, .env = "KSCOPE_NO_FILTER",
	  .help = "also report errors whose top three frames have no line "
		  "information", OPT(no_filter) },
	{ .name = "xml", .type = KS_OPT_FLAG, .env = "KSCOPE_XML",
	  .help = "also write memcheck.xml in Valgrind's XML format (protocol 4)",
	  OPT(xml) },
	KS_COMMON_OPTS(struct mt_opts),
	KS_OPT_END
};

static const struct ks_opt contention_opts[] = {
	MT_COMMON_OPTS("contention"),
	MT_CACHE_OPTS,
	KS_COMMON_OPTS(struct mt_opts),
	KS_OPT_END
};

static const struct ks_opt falseshare_opts[] = {
	MT_COMMON_OPTS("falseshare"),
	MT_CACHE_OPTS,
	{ .name = "min-accesses", .type = KS_OPT_INT, .metavar = "N", .def = "100",
	  .env = "KSCOPE_MIN_ACCESSES",
	  .help = "report a shared line only if two threads each accessed it N times",
	  OPT(min_accesses), .min = 1, .max = 1000000000 },
	KS_COMMON_OPTS(struct mt_opts),
	KS_OPT_END
};

/* ------------------------------------------------------------------ */
/* The Valgrind library directory                                      */
/* ------------------------------------------------------------------ */

/* kscope's tool and preload library: in the build tree next to the
 * executable (build/lib/valgrind/), or <prefix>/lib/kscope/valgrind/. */
/* The directory holding kscope's Valgrind tool and preload library. */
static int find_tool_dir(char *out, size_t size, struct ks_err *err)
{
	char *slash;
	int rc = ks_find_own_file("valgrind/kscope-" KS_VG_PLATFORM, X_OK,
				  "kscope's Valgrind tool kscope-" KS_VG_PLATFORM, out, size, err);

	if (rc)
		return rc;
	slash = strrchr(out, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

static int rm_tree_links(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
	return rmdir(dir) ? -errno : 0;
}

/* A temporary directory with a link to every file of the system's
 * Valgrind library directory and to kscope's tool and preload library:
 * what VALGRIND_LIB must point at for `--tool=kscope`.  *out is
 * malloc'd; remove it with rm_tree_links. */
static int make_vglib(const char *tooldir, char **out, struct ks_err *err)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = NULL;
	DIR *d;
	int dfd;
	struct dirent *de;
	static const char *const own[] = { "kscope-" KS_VG_PLATFORM,
					   "vgpreload_kscope-" KS_VG_PLATFORM ".so" };

	if (!tmp || !*tmp || access(tmp, W_OK) != 0)
		tmp = "/tmp";
	if (asprintf(&dir, "%s/kscope-vglib-XXXXXX", tmp) < 0)
		return ks_err_set(err, -ENOMEM, "out of memory");
	if (!mkdtemp(dir)) {
		int e = errno;
		free(dir);
		return ks_err_set(err, -e, "cannot create a temporary directory in %s: %s",
				  tmp, strerror(e));
	}
	d = opendir(KS_VG_LIBEXEC);
	dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (!d || dfd < 0) {
		int e = errno;
		if (d)
			closedir(d);
		if (dfd >= 0)
			close(dfd);
		rm_tree_links(dir);
		free(dir);
		return ks_err_set(err, -e, "Valgrind's library directory %s cannot be "
				  "read (%s); install the valgrind package "
				  "(scripts/install-deps.sh)", KS_VG_LIBEXEC, strerror(e));
	}
	while ((de = readdir(d))) {
		char src[PATH_MAX];
		if (de->d_name[0] == '.')
			continue;
		snprintf(src, sizeof(src), "%s/%s", KS_VG_LIBEXEC, de->d_name);
		if (symlinkat(src, dfd, de->d_name) != 0) {
			int e = errno;
			closedir(d);
			close(dfd);
			rm_tree_links(dir);
			free(dir);
			return ks_err_set(err, -e, "cannot link %s into %s: %s", src, dir,
					  strerror(e));
		}
	}
	closedir(d);
	close(dfd);
	for (size_t i = 0; i < 2; i++) {
		char src[PATH_MAX + 64], dst[PATH_MAX + 64];
		snprintf(src, sizeof(src), "%s/%s", tooldir, own[i]);
		snprintf(dst, sizeof(dst), "%s/%s", dir, own[i]);
		if (symlink(src, dst) != 0) {
			int e = errno;
			rm_tree_links(dir);
			free(dir);
			return ks_err_set(err, -e, "cannot link %s into %s: %s", src, dir,
					  strerror(e));
		}
	}
	*out = dir;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Running                                                             */
/* ------------------------------------------------------------------ */

/* path with every '%' doubled: Valgrind expands %p and %q in file names. */
static char *escape_percent(const char *path)
{
	size_t n = strlen(path), extra = 0;
	char *out, *o;
	for (size_t i = 0; i < n; i++)
		extra += path[i] == '%';
	out = malloc(n + extra + 1);
	if (!out)
		return NULL;
	o = out;
	for (size_t i = 0; i < n; i++) {
		*o++ = path[i];
		if (path[i] == '%')
			*o++ = '%';
	}
	*o = '\0';
	return out;
}

struct argv_buf {
	char **v;
	size_t n, cap;
	char **owned;
	size_t nowned;
};

static int argv_add(struct argv_buf *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int argv_add(struct argv_buf *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		char **v = realloc(a->v, cap * sizeof(*v));
		if (!v) {
			free(s);
			return -ENOMEM;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

static void argv_free(struct argv_buf *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}

static int build_argv(const char *analysis, const struct mt_opts *o,
		      const char *valgrind, const char *rundir, char **program,
		      struct argv_buf *a)
{
	char *esc = escape_percent(rundir);
	int rc = 0;

	if (!esc)
		return -ENOMEM;
	rc |= argv_add(a, "%s", valgrind);
	rc |= argv_add(a, "--tool=kscope");
	rc |= argv_add(a, "--log-file=%s/valgrind.log", esc);
	rc |= argv_add(a, "--analysis=%s", analysis);
	rc |= argv_add(a, "--out=%s/findings.%%p.jsonl", esc);
	rc |= argv_add(a, "--num-callers=%" PRId64, o->num_callers);
	rc |= argv_add(a, "--max-threads=%" PRId64, o->max_threads + 1);
	rc |= argv_add(a, "--fair-sched=%s", o->fair_sched ? "yes" : "no");
	if (!strcmp(analysis, "memcheck")) {
		rc |= argv_add(a, "--redzone-size=%" PRId64, o->redzone);
		rc |= argv_add(a, "--freelist-vol=%" PRId64, o->freelist_vol);
		rc |= argv_add(a, "--leak-check=%s", o->no_leak_check ? "no" : "yes");
	} else {
		rc |= argv_add(a, "--line-size=%" PRId64, o->line_size);
		if (!strcmp(analysis, "falseshare"))
			rc |= argv_add(a, "--min-accesses=%" PRId64, o->min_accesses);
		rc |= argv_add(a, "--min-write=%s", o->no_min_write ? "no" : "yes");
		rc |= argv_add(a, "--pad-smu=%s", o->no_pad_smu ? "no" : "yes");
		rc |= argv_add(a, "--thread-isolation=%s",
			       o->no_thread_isolation ? "no" : "yes");
	}
	for (char **p = program; *p; p++)
		rc |= argv_add(a, "%s", *p);
	free(esc);
	return rc ? -ENOMEM : 0;
}

/* The environment: kscope's own with VALGRIND_LIB set and VALGRIND_OPTS
 * removed (its options could change what the tool is told). */
static char **build_env(const char *vglib, char **owned)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "VALGRIND_LIB=", 13) ||
		    !strncmp(environ[i], "VALGRIND_OPTS=", 14))
			continue;
		envp[k++] = environ[i];
	}
	if (asprintf(owned, "VALGRIND_LIB=%s", vglib) < 0) {
		free(envp);
		return NULL;
	}
	envp[k++] = *owned;
	envp[k] = NULL;
	return envp;
}

/* The tool names its file findings.<pid>.jsonl; the program's own becomes
 * findings.jsonl (read-only, like every deliverable).  Files of forked
 * children keep their pid in the name. */
static int adopt_findings(struct ks_rundir *rd, pid_t pid, char *path, size_t size,
			  struct ks_err *err)
{
	char name[64];

	snprintf(name, sizeof(name), "findings.%d.jsonl", (int)pid);
	if (faccessat(rd->dirfd, name, F_OK, 0) != 0)
		return ks_err_set(err, -ENOENT, "the Valgrind tool wrote no findings "
				  "(see %s/valgrind.log)", rd->path);
	if (renameat(rd->dirfd, name, rd->dirfd, "findings.jsonl") != 0)
		return ks_err_set(err, -errno, "cannot rename %s: %s", name, strerror(errno));
	fchmodat(rd->dirfd, "findings.jsonl", KS_DELIVERABLE_MODE, 0);
	snprintf(path, size, "%s/findings.jsonl", rd->path);
	return 0;
}

static int memtool_run(const struct ks_cmd *cmd, struct ks_parsed *ps)
{
	const struct mt_opts *o = ps->opts;
	char tooldir[PATH_MAX], findings[PATH_MAX + 32];
	char *prog = NULL, *valgrind = NULL, *vglib = NULL, *envvar = NULL, **envp = NULL;
	struct argv_buf av = { 0 };
	struct ks_rundir rd = { 0 };
	struct ks_mtr_opts ro;
	struct ks_mtr_summary sum;
	struct ks_err err;
	pid_t pid = 0;
	int status, code = KS_EXIT_FAIL, exit_code;
	bool have_rd = false;

	ks_err_clear(&err);
	if (strcmp(cmd->name, "memcheck") != 0 &&
	    (o->line_size & (o->line_size - 1)) != 0) {
		ks_error("option --line-size: '%" PRId64 "' is not a power of two; "
			 "accepted: 16, 32, 64, 128, 256, 512, 1024, 2048 or 4096",
			 o->line_size);
		return KS_EXIT_USAGE;
	}
	if (ks_find_program(ps->program[0], &prog, &err)) {
		ks_error("%s", err.msg);
		return KS_EXIT_USAGE;
	}
	if (ks_find_program("valgrind", &valgrind, &err)) {
		ks_error("valgrind is not installed (it is in scripts/install-deps.sh): %s",
			 err.msg);
		goto out;
	}
	if (find_tool_dir(tooldir, sizeof(tooldir), &err) ||
	    ks_rundir_create(o->output, cmd->name, 0, &rd, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	have_rd = true;
	if (make_vglib(tooldir, &vglib, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (build_argv(cmd->name, o, valgrind, rd.path, ps->program, &av) ||
	    !(envp = build_env(vglib, &envvar))) {
		ks_error("out of memory");
		goto out;
	}
	ks_info("%s: running %s under Valgrind (expect it to run 10 to 50 times "
		"slower); results in %s", cmd->name, prog, rd.path);
	status = ks_run_program(av.v, envp, &pid, &err);
	rm_tree_links(vglib);
	free(vglib);
	vglib = NULL;
	if (status < 0) {
		ks_error("%s", err.msg);
		goto out;
	}
	exit_code = WIFEXITED(status) ? WEXITSTATUS(status)
		    : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	if (WIFSIGNALED(status))
		ks_info("the program was ended by signal %d (%s); reporting what was "
			"found", WTERMSIG(status), strsignal(WTERMSIG(status)));
	if (adopt_findings(&rd, pid, findings, sizeof(findings), &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	fchmodat(rd.dirfd, "valgrind.log", KS_DELIVERABLE_MODE, 0);
	memset(&ro, 0, sizeof(ro));
	ro.filter = !o->no_filter;
	ro.xml = o->xml;
	ro.max_stack = (unsigned)o->num_callers;
	ro.command = cmd->name;
	if (ks_mtr_write(findings, &rd, &ro, stderr, &sum, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (sum.truncated)
		ks_warn("the findings file has no end record: the analysis was cut "
			"short, and what it found so far is reported");
	/* On stderr: the program's standard output stays its own. */
	fprintf(stderr, "results: %s\n", rd.path);
	code = exit_code;
	if (o->error_exitcode &&
	    ((!strcmp(cmd->name, "memcheck") && sum.errors > 0) ||
	     (!strcmp(cmd->name, "falseshare") && sum.false_lines > 0)))
		code = (int)o->error_exitcode;
out:
	if (vglib) {
		rm_tree_links(vglib);
		free(vglib);
	}
	if (have_rd)
		ks_rundir_close(&rd);
	argv_free(&av);
	free(envp);
	free(envvar);
	free(valgrind);
	free(prog);
	return code;
}

const struct ks_cmd ks_cmd_memcheck = {
	.name = "memcheck",
	.summary = "find heap memory defects in any program (Valgrind-based)",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM under kscope's Valgrind tool and reports invalid reads\n"
		"and writes (redzones around every heap block), uses after free, uses\n"
		"of uninitialized heap data where they matter (a branch, an address,\n"
		"a system call), double and invalid frees, and leaks at exit.  Each\n"
		"report has the access stack, and the allocation and free stacks of\n"
		"the block.  Writes report.txt (also printed), report.json,\n"
		"findings.sarif and, with --xml, memcheck.xml to\n"
		"<output>/memcheck_<YYYYmmdd_HHMMSS>_<pid>/.  See docs/memtools.md.",
	.args = {
		.opts = memcheck_opts,
		.opts_size = sizeof(struct mt_opts),
		.takes_program = true,
	},
	.run = memtool_run,
};

const struct ks_cmd ks_cmd_contention = {
	.name = "contention",
	.summary = "find cache-line contention between threads (Valgrind-based)",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM under kscope's Valgrind tool with a per-cache-line\n"
		"thread-ownership bitmap: every access counts as a hit, a cold miss,\n"
		"a miss or an invalidation.  Reports the share of contended accesses\n"
		"and where they happen, per source location and per data object\n"
		"(heap block by allocation stack, global by name).  Writes\n"
		"report.txt (also printed), report.json and findings.sarif to\n"
		"<output>/contention_<YYYYmmdd_HHMMSS>_<pid>/.  See docs/memtools.md.",
	.args = {
		.opts = contention_opts,
		.opts_size = sizeof(struct mt_opts),
		.takes_program = true,
	},
	.run = memtool_run,
};

const struct ks_cmd ks_cmd_falseshare = {
	.name = "falseshare",
	.summary = "find false sharing between threads (Valgrind-based)",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM under kscope's Valgrind tool, recording which words of\n"
		"each cache line every thread reads and writes.  A line that threads\n"
		"share while touching different words, at least one of them writing,\n"
		"is falsely shared; one where they touch the same words is truly\n"
		"shared.  The verdict does not depend on how threads were scheduled.\n"
		"Reports each falsely shared object (variable, address range, the\n"
		"words each thread touched, source lines) in the three views per\n"
		"thread, global-all-threads-info and global-all-threads-compact-info.\n"
		"Writes report.txt (also printed), report.json and findings.sarif to\n"
		"<output>/falseshare_<YYYYmmdd_HHMMSS>_<pid>/.  See docs/memtools.md.",
	.args = {
		.opts = falseshare_opts,
		.opts_size = sizeof(struct mt_opts),
		.takes_program = true,
	},
	.run = memtool_run,
};
