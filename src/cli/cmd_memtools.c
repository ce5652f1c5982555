/*
 * kscope memcheck, kscope contention and kscope falseshare: their options
 * and commands.  memcheck runs Valgrind's Memcheck (memcheck_mc.c);
 * contention and falseshare run kscope's Valgrind tool (src/memtools/vg),
 * or, for a program built for it (--front-end), natively with kscope's
 * runtime libkscope-mt.so (the compiled front end: mtrun.c, src/memtools/rt).
 *
 *     kscope memcheck   [options] -- PROGRAM [ARGS...]
 *     kscope contention [options] -- PROGRAM [ARGS...]
 *     kscope falseshare [options] -- PROGRAM [ARGS...]
 *
 * For contention and falseshare: checks the options and the program, creates the run directory, then
 * builds a private Valgrind library directory (the system's Valgrind
 * files linked in, plus kscope's tool and preload library) and runs
 * `valgrind --tool=kscope --analysis=... --trace-children=yes` on the
 * program with VALGRIND_LIB pointing there.  Every process writes its
 * own findings file (findings.<pid>.jsonl; an exec'd image continues its
 * process's) and Valgrind log; when the program ends (or is interrupted)
 * the logs are merged into valgrind.log, the program's file becomes
 * findings.jsonl, and the reports are written from all of them
 * (src/memtools/report), with how each process ended as kscope saw it.
 * The text report is printed on stderr, so the program's standard
 * output stays its own.
 *
 * Exit status: 1 if the analysis itself failed; else --error-exitcode
 * (KS_EXIT_FINDINGS by default) when falseshare found false sharing; else the program's own status (128+N if signal N
 * ended it); 2 for bad input.  contention measures and has no findings:
 * it always exits with the program's status.
 */
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

#include "argcheck.h"
#include "cli.h"
#include "log.h"
#include "memcheck_mc.h"
#include "mtreport.h"
#include "mtrun.h"
#include "outdir.h"
#include "readfile.h"
#include "runprog.h"
#include "vgrun.h"
#include <dirent.h>
#include <signal.h>


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
	int leak_check;          /* ks_mc_leak_check_choices */
	int engine;              /* ks_mc_engine_choices */
	bool track_origins;
	char *show_leak_kinds, *errors_for_leak_kinds;
	struct ks_strlist suppressions;
	bool gen_suppressions;
	bool no_filter;
	bool xml;
	bool heap_map;
	/* contention, falseshare */
	int64_t line_size;
	int64_t min_accesses;
	int64_t min_writes;
	bool no_min_write, no_pad_smu, no_thread_isolation;
	int front_end;           /* ks_mt_fe_choices */
	bool print_cflags;
};

#define OPT(field) .offset = offsetof(struct mt_opts, field)

#define MT_OUTPUT_OPT                                                              \
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR", \
	  .def = "kscope-out", .env = "KSCOPE_OUTPUT",                                 \
	  .help = "where the run directory is created", OPT(output) }

/* memcheck and falseshare only: contention has no findings.  The default
 * is KS_EXIT_FINDINGS (cli.h). */
#define MT_FINDINGS_OPT(found)                                                     \
	{ .name = "error-exitcode", .type = KS_OPT_INT, .metavar = "N", .def = "100",  \
	  .env = "KSCOPE_ERROR_EXITCODE",                                              \
	  .help = "exit status when " found " (0: the program's own)",                \
	  OPT(error_exitcode), .min = 0, .max = 255 }

#define MT_COMMON_OPTS                                                             \
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
	  OPT(no_thread_isolation) },                                                  \
	{ .name = "front-end", .type = KS_OPT_ENUM, .metavar = "HOW", .def = "auto",   \
	  .env = "KSCOPE_FRONT_END", .choices = ks_mt_fe_choices,                      \
	  .help = "auto (compiled for a program built with kscope's runtime, see "     \
		  "--print-cflags, else valgrind), compiled or valgrind",              \
	  OPT(front_end) },                                                            \
	{ .name = "print-cflags", .type = KS_OPT_FLAG, .env = "KSCOPE_PRINT_CFLAGS",   \
	  .flags = KS_OPT_HIDDEN_ENV | KS_OPT_NO_PROGRAM,                              \
	  .help = "print the gcc and clang flags that build a program for the "        \
		  "compiled front end, and exit", OPT(print_cflags) }

static const struct ks_opt memcheck_opts[] = {
	MT_OUTPUT_OPT,
	MT_FINDINGS_OPT("errors or leaks were found"),
	MT_COMMON_OPTS,
	/* 128, not Memcheck's 16: an overflow of up to about 100 bytes then
	 * stays out of Memcheck's allocator data, which aborts Memcheck when
	 * overwritten (docs/memtools.md, Redzone). */
	{ .name = "redzone", .type = KS_OPT_SIZE, .metavar = "BYTES", .def = "128",
	  .env = "KSCOPE_REDZONE",
	  .help = "unaddressable bytes before and after every heap block",
	  OPT(redzone), .min = 0, .max = 4096 },
	{ .name = "freelist-vol", .type = KS_OPT_SIZE, .metavar = "SIZE", .def = "20m",
	  .env = "KSCOPE_FREELIST_VOL",
	  .help = "bytes of freed blocks kept unusable to catch late uses",
	  OPT(freelist_vol), .min = 0, .max = (int64_t)1 << 40 },
	{ .name = "leak-check", .type = KS_OPT_ENUM, .metavar = "HOW", .def = "full",
	  .env = "KSCOPE_LEAK_CHECK",
	  .help = "look for leaked blocks at exit: full (each one), summary (totals), no",
	  OPT(leak_check), .choices = ks_mc_leak_check_choices },
	{ .name = "no-leak-check", .type = KS_OPT_FLAG, .env = "KSCOPE_NO_LEAK_CHECK",
	  .help = "do not look for leaked blocks at exit (--leak-check no)",
	  OPT(no_leak_check) },
	{ .name = "show-leak-kinds", .type = KS_OPT_NAME, .metavar = "KINDS",
	  .def = "definite,possible", .env = "KSCOPE_SHOW_LEAK_KINDS",
	  .help = "leaks listed: comma-separated definite, indirect, possible, "
		  "reachable, or all, or none", OPT(show_leak_kinds), .name_extra = ",",
	  .max_len = 64 },
	{ .name = "errors-for-leak-kinds", .type = KS_OPT_NAME, .metavar = "KINDS",
	  .def = "definite,possible", .env = "KSCOPE_ERRORS_FOR_LEAK_KINDS",
	  .help = "leaks that count as errors (exit status, error summary), as "
		  "--show-leak-kinds", OPT(errors_for_leak_kinds), .name_extra = ",",
	  .max_len = 64 },
	{ .name = "track-origins", .type = KS_OPT_FLAG, .env = "KSCOPE_TRACK_ORIGINS",
	  .help = "say where each uninitialised value was created (slower)",
	  OPT(track_origins) },
	{ .name = "suppressions", .type = KS_OPT_PATH, .metavar = "FILE",
	  .env = "KSCOPE_SUPPRESSIONS", .flags = KS_OPT_REPEAT | KS_PATH_FILE | KS_PATH_READ,
	  .help = "Valgrind suppressions file of errors not to report",
	  OPT(suppressions) },
	{ .name = "gen-suppressions", .type = KS_OPT_FLAG, .env = "KSCOPE_GEN_SUPPRESSIONS",
	  .help = "write a suppression for every error to suppressions.supp",
	  OPT(gen_suppressions) },
	{ .name = "no-filter", .type = KS_OPT_FLAG, .env = "KSCOPE_NO_FILTER",
	  .help = "also report errors whose top three frames have no line "
		  "information", OPT(no_filter) },
	{ .name = "engine", .type = KS_OPT_ENUM, .metavar = "ENGINE", .def = "auto",
	  .env = "KSCOPE_ENGINE", .choices = ks_mc_engine_choices,
	  .help = "auto (AddressSanitizer for a program built with it, else "
		  "Valgrind's Memcheck), memcheck or asan", OPT(engine) },
	{ .name = "xml", .type = KS_OPT_FLAG, .env = "KSCOPE_XML",
	  .help = "keep Memcheck's XML (protocol 4): memcheck.xml, memcheck.<pid>.xml "
		  "for child processes", OPT(xml) },
	/* Off by default: every allocation call then costs a wrapper, a lock
	 * and a record (docs/memtools.md, "Heap map"; bench/memtools.sh). */
	{ .name = "heap-map", .type = KS_OPT_FLAG, .env = "KSCOPE_HEAP_MAP",
	  .help = "for an invalid access Memcheck relates to no block (past the redzone), "
		  "name the nearest heap block at that moment (slower on allocation-heavy "
		  "programs)", OPT(heap_map) },
	KS_COMMON_OPTS(struct mt_opts),
	KS_OPT_END
};

static const struct ks_opt contention_opts[] = {
	MT_OUTPUT_OPT,
	MT_COMMON_OPTS,
	MT_CACHE_OPTS,
	KS_COMMON_OPTS(struct mt_opts),
	KS_OPT_END
};

static const struct ks_opt falseshare_opts[] = {
	MT_OUTPUT_OPT,
	MT_FINDINGS_OPT("false sharing was found"),
	MT_COMMON_OPTS,
	MT_CACHE_OPTS,
	{ .name = "min-accesses", .type = KS_OPT_INT, .metavar = "N", .def = "100",
	  .env = "KSCOPE_MIN_ACCESSES",
	  .help = "report a shared line only if two threads each accessed it N times",
	  OPT(min_accesses), .min = 1, .max = 1000000000 },
	{ .name = "min-writes", .type = KS_OPT_INT, .metavar = "N", .def = "100",
	  .env = "KSCOPE_MIN_WRITES",
	  .help = "call a line of threads on different bytes false sharing only if one "
		  "thread wrote it N times and another came back to it N times (else "
		  "read-mostly, not reported); 0: no such test",
	  OPT(min_writes), .min = 0, .max = 1000000000 },
	KS_COMMON_OPTS(struct mt_opts),
	KS_OPT_END
};

static int build_argv(const char *analysis, const struct mt_opts *o,
		      const char *valgrind, const char *rundir, char **program,
		      struct ks_argv *a)
{
	char *esc = ks_vg_escape_percent(rundir);
	int rc = 0;

	if (!esc)
		return -ENOMEM;
	rc |= ks_argv_add(a, "%s", valgrind);
	rc |= ks_argv_add(a, "--tool=kscope");
	rc |= ks_argv_add(a, "--trace-children=yes");
	/* Each process under the tool (a forked child, an exec'd image) logs
	 * into its own file, merged into valgrind.log afterwards: an exec'd
	 * image would truncate a shared one. */
	rc |= ks_argv_add(a, "--log-file=%s/valgrind.%%p.log", esc);
	rc |= ks_argv_add(a, "--analysis=%s", analysis);
	rc |= ks_argv_add(a, "--out=%s/findings.%%p.jsonl", esc);
	rc |= ks_argv_add(a, "--num-callers=%" PRId64, o->num_callers);
	rc |= ks_argv_add(a, "--max-threads=%" PRId64, o->max_threads + 1);
	rc |= ks_argv_add(a, "--fair-sched=%s", o->fair_sched ? "yes" : "no");
	rc |= ks_argv_add(a, "--line-size=%" PRId64, o->line_size);
	if (!strcmp(analysis, "falseshare"))
		rc |= ks_argv_add(a, "--min-accesses=%" PRId64, o->min_accesses);
	if (!strcmp(analysis, "falseshare"))
		rc |= ks_argv_add(a, "--min-writes=%" PRId64, o->min_writes);
	rc |= ks_argv_add(a, "--min-write=%s", o->no_min_write ? "no" : "yes");
	rc |= ks_argv_add(a, "--pad-smu=%s", o->no_pad_smu ? "no" : "yes");
	rc |= ks_argv_add(a, "--thread-isolation=%s", o->no_thread_isolation ? "no" : "yes");
	for (char **p = program; *p; p++)
		rc |= ks_argv_add(a, "%s", *p);
	free(esc);
	return rc ? -ENOMEM : 0;
}

/* ------------------------------------------------------------------ */
/* Processes: the findings files and Valgrind's logs of a run           */
/* ------------------------------------------------------------------ */

/* What the logs say about the run: the processes a fatal signal ended
 * (Valgrind names the signal; the tool cannot see it), and whether
 * Valgrind gave up because the program had more threads than
 * --max-threads allows. */
struct vglogs {
	struct ks_mtr_exit *exits;
	size_t nexits;
	bool too_many_threads;
};

/* Reads every valgrind.<pid>.log and merges them into valgrind.log (the
 * program's first, then its children's by pid); each line carries its
 * pid already. */
static int merge_logs(struct ks_rundir *rd, pid_t root, struct vglogs *lg,
		      struct ks_err *err)
{
	static const char fatal[] = "Process terminating with default action of signal ";
	struct ks_outfile of;
	long *pids = NULL;
	size_t n = 0;
	int rc = ks_mt_list_pids(rd, "valgrind.", ".log", &pids, &n);

	if (rc)
		return ks_err_set(err, rc, "cannot list %s: %s", rd->path, strerror(-rc));
	lg->exits = calloc(n ? n : 1, sizeof(*lg->exits));
	if (!lg->exits) {
		free(pids);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	/* The program's log first. */
	for (size_t i = 0; i < n; i++)
		if (pids[i] == (long)root && i > 0) {
			memmove(pids + 1, pids, i * sizeof(*pids));
			pids[0] = (long)root;
		}
	if ((rc = ks_outfile_open(rd, "valgrind.log", &of, err))) {
		free(pids);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		char name[64], *data = NULL, *p;
		size_t size = 0;
		struct ks_err e;

		snprintf(name, sizeof(name), "valgrind.%ld.log", pids[i]);
		if (ks_read_file_at(rd->dirfd, name, O_NOFOLLOW, (size_t)1 << 30, &data, &size,
				    &e) != 0)
			continue;
		ks_outfile_write(&of, data, size);
		if ((p = strstr(data, fatal))) {
			struct ks_mtr_exit *x = &lg->exits[lg->nexits++];

			x->pid = pids[i];
			x->signaled = true;
			x->code = atoi(p + sizeof(fatal) - 1);
		}
		if (ks_vg_log_too_many_threads(data))
			lg->too_many_threads = true;
		free(data);
		unlinkat(rd->dirfd, name, 0);
	}
	free(pids);
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
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

/* Whether option name of cmd's table was set on the command line or in
 * the environment. */
static bool cmd_given(const struct ks_cmd *cmd, const struct ks_parsed *ps, const char *name)
{
	const struct ks_opt *o = ks_opt_find(cmd->args.opts, name);

	return o && ps->given[o - cmd->args.opts];
}

/* Picks the front end for prog (--front-end): KS_MT_FE_COMPILED or
 * KS_MT_FE_VALGRIND, or -1 when prog cannot run (said on stderr). */
static int pick_front_end(const struct ks_cmd *cmd, const struct ks_parsed *ps,
			  const char *prog, bool *auto_chosen)
{
	const struct mt_opts *o = ps->opts;
	static const char *const valgrind_only[] = { "fair-sched", "max-threads", NULL };
	struct ks_mt_build b;
	struct ks_err err;
	int fe = o->front_end;

	ks_err_clear(&err);
	*auto_chosen = false;
	if (ks_mt_inspect(prog, &b, &err)) {
		ks_error("%s", err.msg);
		return -1;
	}
	if (b.tsan_runtime) {
		ks_mt_refuse_tsan(prog, &b, cmd->name);
		return -1;
	}
	if (fe == KS_MT_FE_AUTO) {
		fe = b.instrumented ? KS_MT_FE_COMPILED : KS_MT_FE_VALGRIND;
		*auto_chosen = true;
	}
	if (fe == KS_MT_FE_COMPILED && b.elf && !b.instrumented) {
		ks_error("option --front-end: 'compiled' needs a program built for kscope's "
			 "runtime, and %s makes no ThreadSanitizer calls (no __tsan_func_entry or "
			 "__tsan_init in it or the libraries it loads at start); accepted: auto, "
			 "valgrind, or rebuild it with the flags of 'kscope %s --print-cflags'",
			 prog, cmd->name);
		return -1;
	}
	if (fe == KS_MT_FE_COMPILED) {
		for (size_t i = 0; valgrind_only[i]; i++)
			if (cmd_given(cmd, ps, valgrind_only[i])) {
				ks_error("option --%s: Valgrind's, and %s runs with the compiled "
					 "front end%s (its threads run in parallel, as many as it "
					 "makes); drop it, or give --front-end valgrind",
					 valgrind_only[i], prog,
					 *auto_chosen ? " (it is built for kscope's runtime: "
							"--front-end auto chose it)" : "");
				return -1;
			}
		if (!b.elf)
			ks_info("%s is not an ELF program: only the programs it starts that are "
				"built for kscope's runtime are analysed", prog);
		else
			ks_info("front end: compiled (%s calls kscope's runtime)", b.instrumented_in);
	} else {
		ks_info("front end: Valgrind%s%s%s", *auto_chosen ? " (the program is not built "
			"for kscope's runtime: 'kscope " : "", *auto_chosen ? cmd->name : "",
			*auto_chosen ? " --print-cflags' says how)" : "");
	}
	return fe;
}

/* kscope contention and kscope falseshare. */
static int memtool_run(const struct ks_cmd *cmd, struct ks_parsed *ps)
{
	const struct mt_opts *o = ps->opts;
	char findings[PATH_MAX + 32];
	char *prog = NULL;
	struct ks_argv av = { 0 };
	struct ks_vg vg = { 0 };
	struct ks_rundir rd = { 0 };
	struct ks_mtr_opts ro;
	struct ks_mtr_summary sum;
	struct ks_err err;
	struct vglogs logs = { 0 };
	struct ks_mtr_exit *exits = NULL;
	char **children = NULL;
	size_t nchildren = 0;
	pid_t pid = 0;
	int status, code = KS_EXIT_FAIL, exit_code;
	bool have_rd = false;

	ks_err_clear(&err);
	if (o->print_cflags) {
		if (ps->program) {
			ks_error("option --print-cflags prints the build flags and runs nothing; "
				 "accepted: 'kscope %s --print-cflags' without a program", cmd->name);
			return KS_EXIT_USAGE;
		}
		return ks_mt_print_cflags(stdout, cmd->name);
	}
	if ((o->line_size & (o->line_size - 1)) != 0) {
		ks_error("option --line-size: '%" PRId64 "' is not a power of two; "
			 "accepted: 16, 32, 64, 128, 256, 512, 1024, 2048 or 4096",
			 o->line_size);
		return KS_EXIT_USAGE;
	}
	if (ks_find_program(ps->program[0], &prog, &err)) {
		ks_error("%s", err.msg);
		return KS_EXIT_USAGE;
	}
	{
		bool auto_chosen;
		int fe = pick_front_end(cmd, ps, prog, &auto_chosen);
		struct ks_mt_run_opts rto = {
			.command = cmd->name,
			.output = o->output,
			.error_exitcode = o->error_exitcode,
			.num_callers = o->num_callers,
			.line_size = o->line_size,
			.min_accesses = o->min_accesses,
			.min_writes = o->min_writes,
			.min_write = !o->no_min_write,
			.pad_smu = !o->no_pad_smu,
			.thread_isolation = !o->no_thread_isolation,
		};

		if (fe < 0) {
			free(prog);
			return KS_EXIT_USAGE;
		}
		if (fe == KS_MT_FE_COMPILED) {
			code = ks_mt_compiled_run(&rto, prog, ps->program);
			free(prog);
			return code;
		}
	}
	if (ks_vg_check_program(prog, cmd->name)) {
		free(prog);
		return KS_EXIT_USAGE;
	}
	if (ks_vg_open(&vg, &err) ||
	    ks_rundir_create(o->output, cmd->name, 0, &rd, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	have_rd = true;
	if (build_argv(cmd->name, o, vg.valgrind, rd.path, ps->program, &av)) {
		ks_error("out of memory");
		goto out;
	}
	ks_info("%s: running %s under Valgrind (expect it to run 10 to 50 times "
		"slower); results in %s", cmd->name, prog, rd.path);
	status = ks_run_program(av.v, vg.envp, &pid, &err);
	ks_vg_close(&vg);
	if (status < 0) {
		ks_error("%s", err.msg);
		goto out;
	}
	exit_code = ks_exit_status(status);
	if (WIFSIGNALED(status))
		ks_info("the program was ended by signal %d (%s); reporting what was "
			"found", WTERMSIG(status), strsignal(WTERMSIG(status)));
	if (merge_logs(&rd, pid, &logs, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (logs.too_many_threads) {
		ks_vg_error_too_many_threads((long long)o->max_threads, rd.path);
		code = KS_EXIT_USAGE;
		goto out;
	}
	if (adopt_findings(&rd, pid, findings, sizeof(findings), &err) ||
	    ks_mt_child_findings(&rd, pid, &children, &nchildren, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	/* How the program ended, as kscope saw it, and the fatal signals
	 * Valgrind named in its logs: the tool sees neither. */
	exits = calloc(logs.nexits + 1, sizeof(*exits));
	if (!exits) {
		ks_error("out of memory");
		goto out;
	}
	memcpy(exits, logs.exits, logs.nexits * sizeof(*exits));
	exits[logs.nexits].pid = pid;
	exits[logs.nexits].signaled = WIFSIGNALED(status);
	exits[logs.nexits].code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
	memset(&ro, 0, sizeof(ro));
	ro.children = (const char *const *)children;
	ro.nchildren = nchildren;
	ro.exits = exits;
	ro.nexits = logs.nexits + 1;
	ro.filter = true; /* memcheck's filter: nothing to drop here */
	ro.max_stack = (unsigned)o->num_callers;
	ro.command = cmd->name;
	ro.field_names = true;
	if (ks_mtr_write(findings, &rd, &ro, stderr, &sum, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (sum.truncated)
		ks_warn("the findings file has no end record: the analysis was cut "
			"short, and what it found so far is reported");
	else if (sum.truncated_procs)
		ks_warn("%lu of the program's %lu processes left no end record: what "
			"they found so far is reported", sum.truncated_procs, sum.processes);
	/* On stderr: the program's standard output stays its own. */
	fprintf(stderr, "results: %s\n", rd.path);
	code = exit_code;
	/* Findings win over the program's status, which is then said here. */
	if (o->error_exitcode && !strcmp(cmd->name, "falseshare") && sum.false_lines > 0) {
		code = (int)o->error_exitcode;
		if (WIFEXITED(status) && exit_code != 0)
			ks_info("the program exited with status %d; kscope exits with "
				"%d (--error-exitcode): falseshare found false sharing",
				exit_code, code);
	}
out:
	free(exits);
	free(logs.exits);
	ks_mt_free_paths(children, nchildren);
	ks_vg_close(&vg);
	if (have_rd)
		ks_rundir_close(&rd);
	ks_argv_free(&av);
	free(prog);
	return code;
}

/* Whether the option was set on the command line or in the environment. */
static bool given(const struct ks_parsed *ps, const char *name)
{
	return ps->given[ks_opt_find(memcheck_opts, name) - memcheck_opts];
}

/* kscope memcheck runs Valgrind's Memcheck or AddressSanitizer
 * (memcheck_mc.c, memcheck_asan.c). */
static int memcheck_run(const struct ks_cmd *cmd, struct ks_parsed *ps)
{
	const struct mt_opts *o = ps->opts;
	struct ks_mc_opts mc = {
		.output = o->output,
		.error_exitcode = o->error_exitcode,
		.num_callers = o->num_callers,
		.max_threads = o->max_threads,
		.fair_sched = o->fair_sched,
		.redzone = o->redzone,
		.freelist_vol = o->freelist_vol,
		.leak_check = o->no_leak_check ? 2 : o->leak_check,
		.track_origins = o->track_origins,
		.show_leak_kinds = o->show_leak_kinds,
		.errors_for_leak_kinds = o->errors_for_leak_kinds,
		.suppressions = &o->suppressions,
		.gen_suppressions = o->gen_suppressions,
		.no_filter = o->no_filter,
		.xml = o->xml,
		.heap_map = o->heap_map,
		.command = cmd->name,
		.engine = o->engine,
		.redzone_given = given(ps, "redzone"),
		.freelist_given = given(ps, "freelist-vol"),
	};
	/* Valgrind's options that AddressSanitizer has no counterpart for. */
	static const char *const valgrind_only[] = { "track-origins", "suppressions",
						     "gen-suppressions", "xml", "fair-sched",
						     "max-threads", NULL };

	for (size_t i = 0; valgrind_only[i] && !mc.not_for_asan; i++)
		if (given(ps, valgrind_only[i]))
			mc.not_for_asan = valgrind_only[i];
	return ks_memcheck_run(&mc, ps->program);
}

const struct ks_cmd ks_cmd_memcheck = {
	.name = "memcheck",
	.summary = "find memory defects in any program (Valgrind's Memcheck, or ASan)",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM under Valgrind's Memcheck and reports invalid reads and\n"
		"writes, uses after free, uses of uninitialised values where they\n"
		"matter (a branch, an address, a system call), double, invalid and\n"
		"mismatched frees, overlapping copies, and leaks at exit, in every\n"
		"process the program starts.  A program built with -fsanitize=address\n"
		"runs natively with AddressSanitizer instead (--engine), which also\n"
		"finds stack and global overflows.  Each report has its stacks and the\n"
		"place in the program's own code it points at; with --heap-map, an\n"
		"access past the redzone that Memcheck relates to no block names the\n"
		"heap block nearest to it at that moment.  Writes report.txt\n"
		"(also printed, on stderr), report.json, findings.sarif and, with\n"
		"--xml, Memcheck's memcheck.xml to\n"
		"<output>/memcheck_<YYYYmmdd_HHMMSS>_<pid>/.  Exits with 100\n"
		"(--error-exitcode) when it reported an error or a leak, else with the\n"
		"program's status.  See docs/memtools.md.",
	.args = {
		.opts = memcheck_opts,
		.opts_size = sizeof(struct mt_opts),
		.takes_program = true,
	},
	.run = memcheck_run,
};

const struct ks_cmd ks_cmd_contention = {
	.name = "contention",
	.summary = "find cache-line contention between threads",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM under kscope's Valgrind tool, or natively with kscope's\n"
		"runtime when it is built for it (--front-end, --print-cflags), with a\n"
		"per-cache-line thread-ownership bitmap: every access counts as a hit,\n"
		"a cold miss, a miss or an invalidation.  Reports the share of contended accesses\n"
		"and where they happen, per source location and per data object\n"
		"(heap block by allocation stack, global by name).  Writes\n"
		"report.txt (also printed, on stderr), report.json and findings.sarif\n"
		"to <output>/contention_<YYYYmmdd_HHMMSS>_<pid>/.  It measures and has\n"
		"no findings: it exits with the program's status.  See docs/memtools.md.",
	.args = {
		.opts = contention_opts,
		.opts_size = sizeof(struct mt_opts),
		.takes_program = true,
	},
	.run = memtool_run,
};

const struct ks_cmd ks_cmd_falseshare = {
	.name = "falseshare",
	.summary = "find false sharing between threads",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM under kscope's Valgrind tool, or natively with kscope's\n"
		"runtime when it is built for it (--front-end, --print-cflags),\n"
		"recording which words of each cache line every thread reads and\n"
		"writes.  A line that threads\n"
		"share while touching different words, at least one of them writing,\n"
		"is falsely shared; one where they touch the same words is truly\n"
		"shared.  The verdict does not depend on how threads were scheduled.\n"
		"Reports each falsely shared object (variable, address range, the\n"
		"words each thread touched, source lines) in the three views per\n"
		"thread, global-all-threads-info and global-all-threads-compact-info.\n"
		"Writes report.txt (also printed, on stderr), report.json and\n"
		"findings.sarif to <output>/falseshare_<YYYYmmdd_HHMMSS>_<pid>/.  Exits\n"
		"with 100 (--error-exitcode) when it found false sharing, else with the\n"
		"program's status.  See docs/memtools.md.",
	.args = {
		.opts = falseshare_opts,
		.opts_size = sizeof(struct mt_opts),
		.takes_program = true,
	},
	.run = memtool_run,
};
