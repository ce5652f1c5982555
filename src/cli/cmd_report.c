/*
 * kscope report: prints the reports of a `kscope sample` run from its
 * profile.db (and those of a `kscope instrument` run from its own,
 * report_instr.c): the flat profile (the default), the call tree (--tree) or
 * the per-thread table (--threads), as text or JSON, for all samples or
 * only those of one thread (--thread TID), inside one region (--region
 * NAME) or of one timer (--clock cpu or real); or exports the call stacks
 * of those samples for other tools (--format folded, pprof or
 * speedscope).
 *
 * It exists so that a run can be looked at again with other filters and
 * limits than the flat.txt and tree.txt written at the end of the run,
 * and handed to flame-graph tools.  It only reads the database (opened
 * read-only); the one file it may create is --output's, which must not
 * exist: it is written under a temporary name and renamed when complete.
 *
 * One exception: a run directory with raw files and no profile.db, left
 * by a kscope that was killed before it post-processed them, is finished
 * first (finish_run): the raw files become the run's deliverables, as
 * `kscope sample` would have written them.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argcheck.h"
#include "causal_lines.h"
#include "causal_post.h"
#include "cli.h"
#include "log.h"
#include "outdir.h"
#include "post.h"
#include "profile.h"
#include "report_instr.h"
#include "store.h"

struct report_opts {
	struct ks_common_opts common;
	bool tree;
	bool threads;
	bool counters;        /* the per-sample counters per function and line */
	int64_t tid;          /* -1: every thread */
	char *region;         /* NULL: no region filter */
	int clock;            /* enum ks_report_clock, index into its names */
	int format;           /* index into format_choices (enum fmt) */
	double min_pct;
	int64_t depth;        /* 0: no limit */
	char *output;         /* NULL: standard output */
};

enum fmt { FMT_TEXT, FMT_JSON, FMT_FOLDED, FMT_PPROF, FMT_SPEEDSCOPE };
static const char *const format_choices[] = {
	"text", "json", "folded", "pprof", "speedscope", NULL,
};

static const struct ks_opt report_opts[] = {
	{ .name = "tree", .type = KS_OPT_FLAG,
	  .env = "KSCOPE_REPORT_TREE",
	  .help = "print the call tree instead of the flat profile",
	  .offset = offsetof(struct report_opts, tree) },
	{ .name = "threads", .type = KS_OPT_FLAG, .env = "KSCOPE_REPORT_THREADS",
	  .help = "print one row a thread instead of the flat profile",
	  .offset = offsetof(struct report_opts, threads) },
	{ .name = "counters", .type = KS_OPT_FLAG, .env = "KSCOPE_REPORT_COUNTERS",
	  .help = "print the per-sample counters (kscope sample --counters) per "
		  "function and per line instead of the flat profile",
	  .offset = offsetof(struct report_opts, counters) },
	{ .name = "thread", .type = KS_OPT_INT, .metavar = "TID", .def = "-1",
	  .env = "KSCOPE_REPORT_THREAD",
	  .help = "count only the samples of the thread with this id; -1: all threads",
	  .offset = offsetof(struct report_opts, tid),
	  .min = -1, .max = INT32_MAX },
	{ .name = "region", .type = KS_OPT_STRING, .metavar = "NAME",
	  .env = "KSCOPE_REPORT_REGION",
	  .help = "count only the samples taken inside the user-API region NAME",
	  .offset = offsetof(struct report_opts, region), .max_len = 256 },
	{ .name = "clock", .type = KS_OPT_ENUM, .metavar = "CLOCK", .def = "all",
	  .env = "KSCOPE_REPORT_CLOCK",
	  .help = "count only the CPU-time samples (cpu) or the wall-clock samples "
		  "(real); all: both, in columns side by side when the profile has both",
	  .offset = offsetof(struct report_opts, clock),
	  .choices = ks_report_clock_names },
	{ .name = "format", .type = KS_OPT_ENUM, .metavar = "FMT", .def = "text",
	  .env = "KSCOPE_REPORT_FORMAT",
	  .help = "the report as text or JSON, or the call stacks as folded stacks "
		  "(flamegraph.pl), pprof's gzipped protobuf, or speedscope JSON",
	  .offset = offsetof(struct report_opts, format),
	  .choices = format_choices },
	{ .name = "min-pct", .type = KS_OPT_DOUBLE, .metavar = "X", .def = "0.5",
	  .env = "KSCOPE_REPORT_MIN_PCT",
	  .help = "tree: fold the nodes below X% of the samples into one line",
	  .offset = offsetof(struct report_opts, min_pct),
	  .dmin = 0, .dmax = 100 },
	{ .name = "depth", .type = KS_OPT_INT, .metavar = "N", .def = "0",
	  .env = "KSCOPE_REPORT_DEPTH",
	  .help = "tree: show N levels from the roots; 0: all",
	  .offset = offsetof(struct report_opts, depth),
	  .min = 0, .max = 10000 },
	{ .name = "output", .type = KS_OPT_STRING, .metavar = "FILE",
	  .env = "KSCOPE_REPORT_OUTPUT",
	  .help = "write to FILE, which must not exist, instead of standard output",
	  .offset = offsetof(struct report_opts, output), .max_len = 4096 },
	KS_COMMON_OPTS(struct report_opts),
	KS_OPT_END
};

static const struct ks_opt report_dir = {
	.name = "DIR", .type = KS_OPT_PATH, .metavar = "DIR",
	.flags = KS_PATH_READ,
};

/* ------------------------------------------------------------------ */
/* Finishing a run whose kscope was killed                             */
/* ------------------------------------------------------------------ */

/* Whether process pid is alive and maps a file whose path contains what
 * (its own executable, or libkscope.so): a pid alone may have been
 * reused. */
static bool process_maps(long pid, const char *what)
{
	char path[64], line[4400];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

/* A reason why the run in dir (its raw/ opened as rawfd) may still be
 * going: its kscope (the pid that ends the directory's name) or one of
 * its processes (raw/<pid>[.<n>].ksraw) alive with kscope's code mapped.
 * Empty if none. */
static void run_alive(const char *dir, int rawfd, char *why, size_t size)
{
	char self[PATH_MAX];
	const char *us = strrchr(dir, '_');
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	DIR *d;
	struct dirent *de;

	why[0] = '\0';
	if (n > 0 && us && strncmp(strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir,
				   "sample_", 7) == 0) {
		char *end;
		long pid = strtol(us + 1, &end, 10);

		self[n] = '\0';
		if (!*end && pid > 0 && pid != getpid() && process_maps(pid, self)) {
			snprintf(why, size, "its kscope (pid %ld) is still running", pid);
			return;
		}
	}
	d = fdopendir(dup(rawfd));
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (pid > 0 && (*end == '.') && strstr(end, ".ksraw") &&
		    process_maps(pid, "libkscope.so")) {
			snprintf(why, size, "its process %ld is still running", pid);
			break;
		}
	}
	closedir(d);
}

/* If dir is a sample run directory with raw files but no profile.db (its
 * kscope was killed before post-processing), turns the raw files into
 * profile.db, the trace and the reports, as `kscope sample` would have,
 * and removes them.  Returns KS_EXIT_OK when there is nothing to do or it
 * is done, else the exit status after logging why. */
static int finish_run(const char *dir)
{
	struct ks_rundir rd = { .path = NULL, .dirfd = -1 };
	struct ks_profile prof;
	struct ks_post_stats st;
	struct ks_err err;
	struct stat sb;
	char why[256];
	int rawfd, status = KS_EXIT_FAIL;

	if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return KS_EXIT_OK;
	rd.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rd.dirfd < 0)
		return KS_EXIT_OK; /* database_path says why */
	if (faccessat(rd.dirfd, "profile.db", F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
	    (rawfd = openat(rd.dirfd, "raw", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC)) < 0) {
		close(rd.dirfd);
		return KS_EXIT_OK;
	}
	run_alive(dir, rawfd, why, sizeof(why));
	close(rawfd);
	if (why[0]) {
		ks_error("argument DIR: '%s' has no profile.db yet and %s; accepted: a "
			 "finished run, or one whose kscope was killed (its results are "
			 "written when the program ends)", dir, why);
		status = KS_EXIT_USAGE;
		goto out;
	}
	if (fstat(rd.dirfd, &sb) != 0 || !ks_dir_is_safe(&sb, getuid(), why, sizeof(why))) {
		ks_error("argument DIR: '%s' has only raw files, and kscope will not write "
			 "its results there: %s", dir, why);
		status = KS_EXIT_USAGE;
		goto out;
	}
	rd.path = realpath(dir, NULL);
	if (!rd.path) {
		ks_error("argument DIR: '%s': %s", dir, strerror(errno));
		goto out;
	}
	ks_info("%s has no profile.db: its kscope ended before writing the results; "
		"writing them from its raw files", rd.path);
	ks_err_clear(&err);
	if (ks_profile_init(&prof, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (ks_post_build(rd.path, &prof, &st, &err)) {
		ks_error("%s: %s", rd.path, err.msg);
		ks_profile_free(&prof);
		goto out;
	}
	if (st.damaged_files)
		ks_warn("%zu raw file%s ended in an incomplete record (%" PRIu64
			" bytes ignored): a process was killed while writing",
			st.damaged_files, st.damaged_files == 1 ? "" : "s", st.bytes_ignored);
	ks_profile_meta(&prof, "program_status", "unknown");
	ks_profile_meta(&prof, "finished_by", "kscope report (the run's kscope had ended)");
	if (ks_run_write_outputs(&rd, &prof, false, 0, &err)) {
		ks_error("%s: %s", rd.path, err.msg);
		ks_profile_free(&prof);
		goto out;
	}
	ks_run_remove_raw(&rd);
	ks_info("%s: %" PRIu64 " samples written to profile.db, trace.perfetto-trace, "
		"flat.txt, tree.txt and threads.txt", rd.path, st.samples);
	ks_profile_free(&prof);
	status = KS_EXIT_OK;
out:
	ks_rundir_close(&rd);
	return status;
}

/* ------------------------------------------------------------------ */
/* The command                                                         */
/* ------------------------------------------------------------------ */

/* DIR/profile.db for a run directory, or the path itself for a file;
 * malloc'd, or NULL with the reason logged. */
static char *database_path(const char *arg)
{
	struct stat st;
	char *path = NULL, *rank0 = NULL;

	if (stat(arg, &st) == 0 && !S_ISDIR(st.st_mode))
		path = strdup(arg);
	else if (asprintf(&path, "%s/profile.db", arg) < 0)
		path = NULL;
	if (!path) {
		ks_error("out of memory");
		return NULL;
	}
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return path;
	free(path);
	/* The per-rank directories of an MPI run, not yet merged? */
	if (asprintf(&rank0, "%s/rank0/profile.db", arg) < 0)
		rank0 = NULL;
	if (rank0 && stat(rank0, &st) == 0)
		ks_error("argument DIR: '%s' has no profile.db, but per-rank results: "
			 "combine them with 'kscope merge %s', or report one rank "
			 "('%s/rank0')", arg, arg, arg);
	else
		ks_error("argument DIR: '%s' has no profile.db; accepted: a kscope "
			 "sample or instrument run directory, or its profile.db", arg);
	free(rank0);
	return NULL;
}

/* Refuses options that do not apply to the chosen format; false after
 * logging why. */
static bool check_format(const struct report_opts *o)
{
	bool export = o->format >= FMT_FOLDED;
	const char *f = format_choices[o->format];

	if (o->tree + o->threads + o->counters > 1) {
		ks_error("options %s choose different reports; give one of them",
			 !o->counters ? "--tree and --threads" :
			 !o->threads ? "--tree and --counters" :
			 !o->tree ? "--threads and --counters" :
			 "--tree, --threads and --counters");
		return false;
	}
	if (export && (o->tree || o->threads || o->counters)) {
		ks_error("option --format %s exports every call stack; --%s chooses a "
			 "report, printed with --format text or json", f,
			 o->tree ? "tree" : o->threads ? "threads" : "counters");
		return false;
	}
	if (export && (o->min_pct != 0.5 || o->depth != 0)) {
		ks_error("option --format %s exports every call stack; --%s shapes the "
			 "call tree (--tree) and does not apply", f,
			 o->min_pct != 0.5 ? "min-pct" : "depth");
		return false;
	}
	if (o->format == FMT_PPROF && !o->output && isatty(STDOUT_FILENO)) {
		ks_error("option --format pprof writes gzip-compressed binary data, not "
			 "text for a terminal: give --output FILE (e.g. --output "
			 "profile.pb.gz), or redirect standard output to a file or pipe");
		return false;
	}
	return true;
}

/* --output FILE: its directory opened as a struct ks_rundir and the file
 * started under its temporary name.  false after logging why. */
static bool output_open(const char *path, struct ks_rundir *rd, struct ks_outfile *of)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
		    : strdup(".");
	struct ks_err err;
	struct stat st;

	rd->dirfd = -1;
	rd->path = dir;
	if (!dir) {
		ks_error("out of memory");
		return false;
	}
	if (!name[0] || name[0] == '.' || strlen(name) > 200) {
		ks_error("option --output: '%s' is not a file name kscope writes: the "
			 "name must not be empty, start with '.' or pass 200 bytes", path);
		return false;
	}
	if (lstat(path, &st) == 0) {
		ks_error("option --output: '%s' exists; kscope report never replaces a "
			 "file: remove it or give another name", path);
		return false;
	}
	rd->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rd->dirfd < 0) {
		ks_error("option --output: cannot open the directory '%s': %s", dir,
			 strerror(errno));
		return false;
	}
	ks_err_clear(&err);
	if (ks_outfile_open(rd, name, of, &err) != 0) {
		ks_error("option --output: %s", err.msg);
		return false;
	}
	return true;
}

static void output_close(struct ks_rundir *rd)
{
	if (rd->dirfd >= 0)
		close(rd->dirfd);
	free(rd->path);
	rd->path = NULL;
	rd->dirfd = -1;
}

/* The index of the thread with tid, or KS_NONE after logging why. */
static uint32_t thread_index(const struct ks_profile *p, int64_t tid)
{
	uint32_t found = KS_NONE, second = KS_NONE;
	char list[512];
	size_t len = 0;

	for (size_t i = 0; i < p->n_threads; i++) {
		if (p->threads[i].tid != tid)
			continue;
		if (found == KS_NONE)
			found = (uint32_t)i;
		else if (second == KS_NONE)
			second = (uint32_t)i;
	}
	if (found != KS_NONE && second == KS_NONE)
		return found;
	if (found != KS_NONE) {
		ks_error("option --thread: tid %" PRId64 " names more than one thread "
			 "(of processes %" PRId32 " and %" PRId32 ", from different "
			 "machines); 'kscope report --threads' lists them", tid,
			 p->processes[p->threads[found].process].pid,
			 p->processes[p->threads[second].process].pid);
		return KS_NONE;
	}
	list[0] = '\0';
	for (size_t i = 0; i < p->n_threads && len < sizeof(list) - 32; i++) {
		int n = snprintf(list + len, sizeof(list) - len, "%s%" PRId32,
				 i ? ", " : "", p->threads[i].tid);

		if (n < 0 || (size_t)n >= sizeof(list) - len)
			break;
		len += (size_t)n;
		if (i == 19 && p->n_threads > 20) {
			snprintf(list + len, sizeof(list) - len, ", ...");
			break;
		}
	}
	ks_error("option --thread: no thread has tid %" PRId64 "; accepted: %s%s",
		 tid, p->n_threads ? "one of " : "nothing (the profile has no threads)",
		 list);
	return KS_NONE;
}

/* After a report was made into out (a memory stream with --output, which
 * is closed here): the exit status, having said what failed or written
 * --output's file.  -ENOENT from a report is a bad value of option
 * `what`, nothing having been printed. */
static int report_done(const struct report_opts *o, FILE *out, int rc, struct ks_err *err,
		       const char *what, char **buf, size_t *len)
{
	struct ks_rundir rd = { .path = NULL, .dirfd = -1 };
	struct ks_outfile of = { .fd = -1 };
	int status = KS_EXIT_OK;

	if (o->output && fclose(out) != 0 && !rc)
		rc = ks_err_set(err, -ENOMEM, "out of memory");
	if (rc == -ENOENT) {
		ks_error("option --%s: %s", what, err->msg);
		return KS_EXIT_USAGE;
	}
	if (rc) {
		ks_error("%s", err->msg);
		return KS_EXIT_FAIL;
	}
	if (!o->output)
		return KS_EXIT_OK;
	if (!output_open(o->output, &rd, &of)) {
		status = KS_EXIT_USAGE;
	} else {
		ks_err_clear(err);
		ks_outfile_write(&of, *buf, *len);
		if (ks_outfile_commit(&of, KS_FILE_MODE, err) != 0) {
			ks_error("%s", err->msg);
			status = KS_EXIT_FAIL;
		}
	}
	output_close(&rd);
	return status;
}

/* The report of a `kscope instrument` run (report_instr.c): its function
 * table, --threads, or --tree as the call graph; --thread, --format text
 * or json and --output apply, the sampling options do not. */
static int instr_report(const struct report_opts *o, const char *path)
{
	const char *no = o->region ? "region" : o->clock ? "clock" : o->counters ? "counters"
			 : o->format >= FMT_FOLDED ? "format" : o->min_pct != 0.5 ? "min-pct"
			 : o->depth ? "depth" : NULL;
	struct ks_err err;
	char *buf = NULL;
	size_t len = 0;
	FILE *out = stdout;
	int rc, status;

	if (no) {
		ks_error("option --%s%s%s applies to kscope sample runs; '%s' is a kscope "
			 "instrument run, which counts calls rather than sampling stacks "
			 "(accepted: --threads, --tree for its call graph, --thread, --format "
			 "text or json, --output)", no, o->format >= FMT_FOLDED ? " " : "",
			 o->format >= FMT_FOLDED ? format_choices[o->format] : "", path);
		return KS_EXIT_USAGE;
	}
	ks_err_clear(&err);
	if (o->output && !(out = open_memstream(&buf, &len))) {
		ks_error("out of memory");
		return KS_EXIT_FAIL;
	}
	rc = ks_report_instr(out, path, o->tree ? KS_REPORT_INSTR_GRAPH
				   : o->threads ? KS_REPORT_INSTR_THREADS : KS_REPORT_INSTR_FLAT,
			     o->tid, o->format == FMT_JSON, &err);
	status = report_done(o, out, rc, &err, "thread", &buf, &len);
	free(buf);
	return status;
}

/* Is dir a `kscope causal` run directory (lines.tsv and raw/)? */
static bool causal_run_is(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/lines.tsv", dir);
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	snprintf(path, sizeof(path), "%s/raw", dir);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The report of a `kscope causal` run, computed again from its raw
 * experiments and its line table: the same ranked curves as its
 * report.txt (docs/causal.md). */
static int causal_report(const struct report_opts *o, const char *dir)
{
	struct ks_causal_lines lines = { 0 };
	struct ks_causal_data data = { 0 };
	struct ks_causal_result res = { 0 };
	struct ks_err err;
	char path[PATH_MAX], *buf = NULL;
	size_t len = 0, nfiles;
	FILE *out = stdout;
	int rc, status;

	if (o->format != FMT_TEXT || o->tree || o->threads || o->counters || o->tid >= 0 ||
	    o->region) {
		ks_error("'%s' is a kscope causal run: its report is the ranked speedup "
			 "curves, as text (--output FILE accepted); the sample options "
			 "(--format, --tree, --threads, --counters, --thread, --region) do "
			 "not apply; causal.csv and profile.coz hold the same data", dir);
		return KS_EXIT_USAGE;
	}
	ks_err_clear(&err);
	snprintf(path, sizeof(path), "%s/lines.tsv", dir);
	rc = ks_causal_lines_read_table(path, &lines, &err);
	if (!rc)
		rc = ks_causal_data_init(&data, lines.nlines);
	if (!rc)
		rc = ks_causal_data_read_run(&data, dir, &nfiles, &err);
	if (!rc)
		rc = ks_causal_analyze(&data, NULL, &res, &err);
	if (!rc) {
		char busy[512];

		if (ks_causal_busy_warning(&res, busy, sizeof(busy)))
			ks_warn("%s", busy);
	}
	if (!rc && o->output && !(out = open_memstream(&buf, &len)))
		rc = ks_err_set(&err, -ENOMEM, "out of memory");
	if (!rc)
		rc = ks_causal_write_report(out, &res, lines.lines, 0, &err);
	if (rc && !err.msg[0])
		ks_err_set(&err, rc, "out of memory");
	if (rc == -ENOENT)      /* not the "region" report_done would name */
		rc = -EIO;
	status = report_done(o, out, rc, &err, "region", &buf, &len);
	free(buf);
	ks_causal_result_free(&res);
	ks_causal_data_free(&data);
	ks_causal_lines_free(&lines);
	return status;
}

static int report_run(const struct ks_cmd *cmd, struct ks_parsed *pp)
{
	const struct report_opts *o = pp->opts;
	struct ks_report_opts ro = {
		.json = o->format == FMT_JSON, .thread = KS_NONE, .region = o->region,
		.min_pct = o->min_pct, .max_depth = (unsigned)o->depth,
		.clock = (enum ks_report_clock)o->clock,
	};
	struct ks_profile p;
	struct ks_err err;
	char *path, *buf = NULL;
	size_t buflen = 0;
	FILE *out = stdout;
	int rc, status = KS_EXIT_OK;

	(void)cmd;
	if (causal_run_is(pp->positional[0]))
		return causal_report(o, pp->positional[0]);
	if (!check_format(o))
		return KS_EXIT_USAGE;
	if ((status = finish_run(pp->positional[0])) != KS_EXIT_OK)
		return status;
	path = database_path(pp->positional[0]);
	if (!path)
		return KS_EXIT_USAGE;
	if (ks_report_instr_is(path)) {
		status = instr_report(o, path);
		free(path);
		return status;
	}
	ks_err_clear(&err);
	if (ks_profile_init(&p, &err) != 0) {
		ks_error("%s", err.msg);
		free(path);
		return KS_EXIT_FAIL;
	}
	if (ks_store_read(path, &p, &err) != 0) {
		ks_error("%s", err.msg);
		status = KS_EXIT_FAIL;
		goto out;
	}
	if (o->tid >= 0) {
		ro.thread = thread_index(&p, o->tid);
		if (ro.thread == KS_NONE) {
			status = KS_EXIT_USAGE;
			goto out;
		}
	}
	if (ks_report_check_clock(&p, ro.clock, &err) != 0) {
		ks_error("option --clock: %s", err.msg);
		status = KS_EXIT_USAGE;
		goto out;
	}
	if (o->counters && p.n_counter_names == 0) {
		ks_error("option --counters: the profile has no per-sample counters; "
			 "record some with kscope sample --counters LIST (kscope avail "
			 "--counters lists them)");
		status = KS_EXIT_USAGE;
		goto out;
	}
	/* With --output, the report is made in memory first, so that a
	 * failed one leaves no file. */
	if (o->output && !(out = open_memstream(&buf, &buflen))) {
		ks_error("out of memory");
		status = KS_EXIT_FAIL;
		goto out;
	}
	if (o->format == FMT_FOLDED)
		rc = ks_export_folded(out, &p, &ro, &err);
	else if (o->format == FMT_PPROF)
		rc = ks_export_pprof(out, &p, &ro, &err);
	else if (o->format == FMT_SPEEDSCOPE)
		rc = ks_export_speedscope(out, &p, &ro, &err);
	else if (o->tree)
		rc = ks_report_tree(out, &p, &ro, &err);
	else if (o->threads)
		rc = ks_report_threads(out, &p, &ro, &err);
	else if (o->counters)
		rc = ks_report_counters(out, &p, &ro, &err);
	else
		rc = ks_report_flat(out, &p, &ro, &err);
	/* -ENOENT: a region the profile does not know. */
	status = report_done(o, out, rc, &err, "region", &buf, &buflen);
out:
	free(buf);
	ks_profile_free(&p);
	free(path);
	return status;
}

const struct ks_cmd ks_cmd_report = {
	.name = "report",
	.summary = "print the flat profile, call tree or threads of a sample or instrument run",
	.usage = "[options] DIR",
	.description =
		"Reads DIR/profile.db, written by 'kscope sample' or 'kscope merge'\n"
		"(DIR may also be the profile.db itself), and prints the flat\n"
		"profile: functions by their share of the samples taken in them\n"
		"(self) and below them (total).  --tree prints the call tree from\n"
		"the roots, --threads one row a thread.  --thread and --region count\n"
		"only the samples of one thread or inside one region, and shares are\n"
		"of the samples counted.  CPU-time and wall-clock samples are never\n"
		"added up: --clock cpu or real counts one timer's, and a profile with\n"
		"both shows them in columns side by side, each a share of its own\n"
		"timer's periods.  --format folded, pprof or speedscope exports\n"
		"the call stacks of those samples instead: folded stacks for\n"
		"flamegraph.pl and inferno, pprof's gzipped profile.proto (binary:\n"
		"give --output FILE), or a speedscope file (one profile a thread).\n"
		"--output writes to a new FILE instead of standard output.  A run\n"
		"directory whose kscope was killed (raw files, no profile.db) is\n"
		"first finished: its raw files become profile.db and the reports.\n"
		"On a 'kscope instrument' run it prints its function table, --threads\n"
		"its threads and --tree its call graph (--thread, --format text or\n"
		"json and --output apply).  docs/profile-db.md describes every\n"
		"format, docs/instrument.md the instrument run's.",
	.args = {
		.opts = report_opts,
		.opts_size = sizeof(struct report_opts),
		.positional = &report_dir,
		.pos_min = 1,
		.pos_max = 1,
	},
	.run = report_run,
};
