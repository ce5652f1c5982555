/*
 * kscope op: per-kernel profiling of OpenCL programs.
 *
 *     kscope op [options] -- PROGRAM [ARGS...]
 *
 * Checks every option and the program, creates the run directory, listens
 * on a SOCK_SEQPACKET socket file in a private directory and runs the
 * program with libkscope-op.so preloaded and the socket's address in
 * KSCOPE_OP_CHANNEL (proto.h).  Every process of the program that uses an
 * accelerator runtime connects by itself (a peer), so a script's children
 * and forked workers are profiled too.  The library asks about each
 * kernel launch that passed its filters; kscope answers collect or pass,
 * counting across all the peers (first asked, first counted), applies
 * --launch-count and --kill, and turns
 * each collected launch's raw files into deliverables as soon as the
 * library says they are complete (src/op/post), so an interrupted run
 * keeps what it collected.  Application replay then reruns the program
 * once per further pass.  When the program is gone, kscope writes
 * summary.csv and prints the summary on stderr: the program's standard
 * output stays its own.
 *
 * One loop waits, with poll(), on the listening socket, every peer's
 * connection and a signalfd for SIGCHLD, SIGINT and SIGTERM (blocked in
 * kscope, restored in the program), so the program's exit, a new
 * process, a message and a signal to kscope are handled in one place,
 * without signal handlers.  A run ends when the program kscope started
 * (the top process) has exited and every peer has disconnected, or
 * ORPHAN_GRACE_S after the top process exited.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argcheck.h"
#include "calib.h"
#include "cli.h"
#include "filter.h"
#include "log.h"
#include "op_simulate.h"
#include "oppost.h"
#include "opraw.h"
#include "outdir.h"
#include "proto.h"
#include "runprog.h"

extern char **environ;

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

struct op_opts {
	struct ks_common_opts common;
	char *kernel_name;      /* NULL: all kernels */
	int64_t skip;
	int64_t count;
	int mode;               /* index into mode_choices */
	int64_t warmup;
	int64_t passes;
	int flush, kill, mstx;  /* index into on_off: 0 on, 1 off */
	int backup;             /* index into backup_choices */
	char *mstx_include;
	int64_t timeout;        /* minutes; 0 when not given */
	struct ks_strlist flops; /* EXPR or KERNEL=EXPR, repeatable */
	char *output;
	char *export_dir;       /* --export: a run directory to rebuild */
	/* --simulate */
	bool simulate;
	char *threads, *cache;
	double clock_ghz;
	int64_t trace_limit, mem_latency;
	int kernel_lines;       /* index into on_off */
	char *metrics;          /* --aic-metrics LIST, NULL: Default */
	int dump;               /* index into on_off */
	char *soc;              /* --soc-version NAME */
};

enum { MODE_KERNEL, MODE_APPLICATION, MODE_RANGE };
static const char *const mode_choices[] = { "kernel", "application", "range", NULL };
static const char *const on_off[] = { "on", "off", NULL };
enum { BACKUP_ARGS, BACKUP_ALL };
static const char *const backup_choices[] = { "args", "all", NULL };
#define ON 0

#define OPT(field) .offset = offsetof(struct op_opts, field)

static const struct ks_opt op_opts[] = {
	{ .name = "kernel-name", .type = KS_OPT_STRING, .metavar = "PAT",
	  .env = "KSCOPE_OP_KERNEL_NAME",
	  .help = "collect only kernels whose name starts with PAT: letters, "
		  "digits and '_', with '*' for any run of characters and '|' "
		  "between alternatives (default: all kernels)",
	  OPT(kernel_name), .max_len = KS_OP_FILTER_MAX },
	{ .name = "launch-skip-before-match", .type = KS_OPT_INT, .metavar = "N",
	  .def = "0", .env = "KSCOPE_OP_LAUNCH_SKIP_BEFORE_MATCH",
	  .help = "let the first N kernel launches run unexamined",
	  OPT(skip), .min = 0, .max = 1000 },
	{ .name = "launch-count", .type = KS_OPT_INT, .metavar = "N", .def = "1",
	  .env = "KSCOPE_OP_LAUNCH_COUNT",
	  .help = "collect at most N launches (ranges in range replay)",
	  OPT(count), .min = 1, .max = 5000 },
	{ .name = "replay-mode", .type = KS_OPT_ENUM, .metavar = "MODE", .def = "kernel",
	  .env = "KSCOPE_OP_REPLAY_MODE",
	  .help = "replay each launch (kernel), rerun the program per pass "
		  "(application), or replay user ranges (range, needs --mstx on)",
	  OPT(mode), .choices = mode_choices },
	{ .name = "warm-up", .type = KS_OPT_INT, .metavar = "N", .def = "5",
	  .env = "KSCOPE_OP_WARM_UP",
	  .help = "untimed launches before the measured passes",
	  OPT(warmup), .min = 0, .max = 500 },
	{ .name = "replay-count", .type = KS_OPT_INT, .metavar = "N", .def = "10",
	  .env = "KSCOPE_OP_REPLAY_COUNT",
	  .help = "measured passes per collected launch",
	  OPT(passes), .min = 1, .max = 1000 },
	{ .name = "cache-flush", .type = KS_OPT_ENUM, .metavar = "on|off", .def = "on",
	  .env = "KSCOPE_OP_CACHE_FLUSH",
	  .help = "stream through a buffer larger than the last-level cache "
		  "before each pass",
	  OPT(flush), .choices = on_off },
	{ .name = "backup", .type = KS_OPT_ENUM, .metavar = "args|all", .def = "args",
	  .env = "KSCOPE_OP_BACKUP",
	  .help = "device memory a replay backs up and restores: what the arguments "
		  "point into, or every live allocation (CUDA)",
	  OPT(backup), .choices = backup_choices },
	{ .name = "kill", .type = KS_OPT_ENUM, .metavar = "on|off", .def = "off",
	  .env = "KSCOPE_OP_KILL",
	  .help = "stop the program once --launch-count launches are collected",
	  OPT(kill), .choices = on_off },
	{ .name = "mstx", .type = KS_OPT_ENUM, .metavar = "on|off", .def = "off",
	  .env = "KSCOPE_OP_MSTX",
	  .help = "only launches inside the program's kscope_range_start/end "
		  "(kscope/user.h) or NVTX ranges pass",
	  OPT(mstx), .choices = on_off },
	{ .name = "mstx-include", .type = KS_OPT_STRING, .metavar = "PAT",
	  .env = "KSCOPE_OP_MSTX_INCLUDE",
	  .help = "only ranges whose name matches PAT (as --kernel-name; needs "
		  "--mstx on)",
	  OPT(mstx_include), .max_len = KS_OP_FILTER_MAX },
	{ .name = "timeout", .type = KS_OPT_INT, .metavar = "MINUTES",
	  .env = "KSCOPE_OP_TIMEOUT",
	  .help = "stop the program after MINUTES (SIGTERM, then SIGKILL 5 s "
		  "later; --simulate: SIGINT, and what was simulated is kept; "
		  "default: no limit)",
	  OPT(timeout), .min = 1, .max = 2880 },
	{ .name = "export", .type = KS_OPT_STRING, .metavar = "DIR",
	  .env = "KSCOPE_OP_EXPORT", .flags = KS_OPT_NO_PROGRAM,
	  .help = "run no program: rebuild the deliverables of the run directory DIR "
		  "(on-board or --simulate) into a new one, with this run's --flops, "
		  "calibration and --clock",
	  OPT(export_dir), .max_len = 4096 },
	{ .name = "flops", .type = KS_OPT_STRING, .metavar = "[KERNEL=]EXPR",
	  .env = "KSCOPE_OP_FLOPS",
	  .help = "floating-point operations per launch, an expression over the "
		  "kernel's scalar arguments by name and gx gy gz lx ly lz, "
		  "e.g. 2*M*N*K; KERNEL=EXPR gives one kernel its own, a bare "
		  "EXPR is for the others",
	  OPT(flops), .flags = KS_OPT_REPEAT, .max_len = KS_EXPR_MAX_LEN + 256 },
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR",
	  .def = "kscope-out", .env = "KSCOPE_OUTPUT",
	  .help = "where the run directory is created", OPT(output) },
	{ .name = "simulate", .type = KS_OPT_FLAG, .env = "KSCOPE_OP_SIMULATE",
	  .help = "run the program on kscope's instruction-level engine instead: "
		  "hot-spot map per line and instruction, cache simulation, "
		  "bandwidth and pipeline charts (docs/simulate.md); --kernel-name "
		  "then names functions", OPT(simulate) },
	{ .name = "threads", .type = KS_OPT_STRING, .metavar = "LIST",
	  .env = "KSCOPE_OP_THREADS",
	  .help = "--simulate: only these threads, e.g. 1,3 (1 is the main "
		  "thread; default: all)", OPT(threads), .max_len = 1024 },
	{ .name = "cache", .type = KS_OPT_STRING, .metavar = "SPEC",
	  .env = "KSCOPE_OP_CACHE",
	  .help = "--simulate: cache levels NAME=SIZE:WAYS:LINE[:LATENCY],... "
		  "nearest first, e.g. L1=32k:8:64,L2=1M:16:64,LL=32M:16:64 "
		  "(default: this machine's)", OPT(cache), .max_len = 400 },
	{ .name = "clock", .type = KS_OPT_DOUBLE, .metavar = "GHZ",
	  .env = "KSCOPE_OP_CLOCK",
	  .help = "--simulate: clock that turns simulated cycles into time "
		  "(default: this machine's)", OPT(clock_ghz), .dmin = 0.01, .dmax = 100 },
	{ .name = "trace-limit", .type = KS_OPT_INT, .metavar = "N", .def = "10000",
	  .env = "KSCOPE_OP_TRACE_LIMIT",
	  .help = "--simulate: at most N block executions in the pipeline chart "
		  "(0: none)", OPT(trace_limit), .min = 0, .max = 10000000 },
	{ .name = "mem-latency", .type = KS_OPT_INT, .metavar = "CYCLES", .def = "200",
	  .env = "KSCOPE_OP_MEM_LATENCY",
	  .help = "--simulate: cycles of an access that no cache level holds",
	  OPT(mem_latency), .min = 1, .max = 100000 },
	{ .name = "kernel-lines", .type = KS_OPT_ENUM, .metavar = "on|off", .def = "off",
	  .env = "KSCOPE_OP_KERNEL_LINES",
	  .help = "--simulate: build OpenCL kernels (PoCL) with line information and "
		  "without optimization, so cycles map to kernel source lines",
	  OPT(kernel_lines), .choices = on_off },
	{ .name = "aic-metrics", .type = KS_OPT_STRING, .metavar = "LIST",
	  .env = "KSCOPE_OP_AIC_METRICS",
	  .help = "metric sets, separated by ',': Default; with --simulate also "
		  "PipeUtilization, PMSampling, Source, MemoryDetail, each "
		  "writing only its deliverables (default: Default, everything)",
	  OPT(metrics), .max_len = 256 },
	{ .name = "dump", .type = KS_OPT_ENUM, .metavar = "on|off", .def = "on",
	  .env = "KSCOPE_OP_DUMP",
	  .help = "--simulate: keep the engine's raw dump hotspot.<pid>.raw in the "
		  "run directory (--export rebuilds from it); off removes it once "
		  "the deliverables are written",
	  OPT(dump), .choices = on_off },
	{ .name = "soc-version", .type = KS_OPT_STRING, .metavar = "NAME",
	  .env = "KSCOPE_OP_SOC_VERSION",
	  .help = "--simulate: the caches and clock of a published machine: "
		  "skylake, skylake-sp or zen3 (--cache, --clock override its "
		  "parts; default: this machine's)",
	  OPT(soc), .max_len = 64 },
	KS_COMMON_OPTS(struct op_opts),
	KS_OPT_END
};

/* ------------------------------------------------------------------ */
/* State of one kscope op run                                          */
/* ------------------------------------------------------------------ */

/* Seconds to wait after SIGTERM before SIGKILL when --timeout ends it. */
#define TERM_GRACE_S 5.0
/* Progress off a terminal: at most one line this often, and only for
 * replays that have already taken longer than PROGRESS_AFTER_S. */
#define PROGRESS_EVERY_S 5.0
#define PROGRESS_AFTER_S 2.0
/* Kernel names kept for the nothing-collected message. */
#define MAX_KERNEL_NAMES 4096
/* How long processes of the program that are still connected when the top
 * process has exited (daemons, orphans) are waited for. */
#define ORPHAN_GRACE_S 5.0

/* The launches of one kernel (or range) name that passed the runtime's
 * filters (skip, ranges, --kernel-name) and reached kscope as `launch`. */
struct name_count {
	long long pid;                /* the process that launched them */
	char name[256];
	size_t matched;               /* `launch` messages of run 0 */
	size_t collected;             /* of them, told to collect */
};

/* One launch kscope said to collect. */
struct launch_rec {
	long long pid;                /* the process (its hello) */
	unsigned rank;                /* that process's connection order in run 0 */
	char name[256];
	unsigned long long index, ordinal;
	char gsize[64];               /* "X:Y:Z" as the library sent it */
	char rel[320];                /* "<pid>/<name>_<index>" */
	bool collected, failed;       /* `collected` came; its status */
	char message[512];
	double started;               /* when collect was sent */
	double last_line;             /* last progress line about it */
	uint64_t *app_ns;             /* application runs >= 1: their times */
	unsigned *app_run;
	size_t n_app;
	unsigned timed_run;           /* last run that timed it, +1 */
	struct ks_oppost_result res;
};

/* One connection: a process of the program that loaded the runtime and
 * used it. */
struct op_peer {
	int sock;                     /* -1 once closed */
	bool hello;                   /* its hello was accepted */
	long long pid, ppid;          /* as its hello says */
	pid_t cred_pid;               /* SO_PEERCRED: the process that connected,
	                                 as kscope's namespace sees it (signals) */
	unsigned rank;                /* hellos accepted before it, this run */
};

/* One execution of the program. */
struct op_run {
	unsigned no;                  /* 0: the user's run; >= 1: application */
	pid_t pid;                    /* the top process, which kscope started */
	struct op_peer *peers;        /* every connection, in order */
	size_t npeers;
	unsigned nhello;              /* peers whose hello was accepted */
	bool reaped;
	int status;                   /* wait status */
	double ended_at;              /* when it was reaped */
	bool killed_by_kill;          /* --kill stopped it */
	double term_at;               /* SIGTERM sent (--timeout or second ^C) */
	bool hard_killed;
	size_t timed;                 /* targets timed in this run */
};

/* --flops KERNEL=EXPR. */
struct op_kflops {
	char name[256];
	struct ks_expr *expr;
};

struct op_state {
	const struct op_opts *o;
	char **argv;                  /* the program and its arguments */
	char *prog;                   /* its resolved path */
	char runtime[PATH_MAX];
	char token[KS_OP_TOKEN_LEN + 1];
	char *nvtx_env;               /* "NVTX_INJECTION64_PATH=<runtime>" for the
	                                 program (--mstx on), or NULL */
	int lsock;                    /* listening socket; -1 when none */
	char sockpath[sizeof(((struct sockaddr_un *)0)->sun_path)];
	unsigned long long skip_seen; /* `skip` requests answered more=1 */
	struct ks_expr *flops;        /* --flops EXPR: for every kernel without its own */
	struct op_kflops *kflops;     /* --flops KERNEL=EXPR */
	size_t nkflops;
	struct ks_op_filter *name_filter;
	struct ks_calib calib;
	bool calib_tried;      /* load_calibration ran (on the first build) */
	bool have_calib;
	bool calib_missing;    /* none made yet: the summary says how */
	char calib_why[KS_ERR_MSG_MAX];
	struct ks_rundir rd;
	char targets[PATH_MAX];       /* application runs' target file */
	size_t ntargets;              /* lines in it */
	int sigfd;
	sigset_t oldmask;
	struct ks_op_msg *in, *out;   /* 64 KiB each */
	/* what the program did (run 0) */
	bool saw_hello, used_opencl;
	bool used_opencl_only;  /* run 0 used OpenCL, not CUDA */
	char unusable[512];           /* `unusable`: a runtime the program tried
	                                 and could not use ("cuda: why") */
	char **kernels;               /* names the processes launched */
	long long *kernel_pids;       /* the process of each */
	size_t nkernels;
	struct launch_rec *launches;  /* every collect sent, in order */
	size_t nlaunches, ncollected;
	struct name_count *counts;    /* per name, in the order first matched */
	size_t ncounts;
	bool final_sent;              /* `pass final=1`: nothing more is reported */
	/* how it ended */
	int interrupted;              /* SIGINT or SIGTERM reached kscope */
	double interrupted_at;
	bool timed_out;
	double deadline;              /* --timeout, monotonic seconds; 0 none */
	bool write_failed;
	/* progress */
	bool tty;
	bool line_shown;              /* a progress line is on the terminal */
	double last_app_line;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* Progress                                                            */
/* ------------------------------------------------------------------ */

/* Removes the progress line before anything else is written to stderr. */
static void progress_clear(struct op_state *st)
{
	if (!st->line_shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	st->line_shown = false;
}

static void progress_line(struct op_state *st, const char *text)
{
	if (ks_log_get_level() < KS_LOG_INFO)
		return;
	fprintf(stderr, "\rkscope: %s\033[K", text);
	fflush(stderr);
	st->line_shown = true;
}

static void show_progress(struct op_state *st, struct launch_rec *l,
			  unsigned long long done, unsigned long long total)
{
	double t = now_s();
	char text[512];

	snprintf(text, sizeof(text), "replaying %s (launch %llu): %llu of %llu passes",
		 l->name, l->index, done, total);
	if (st->tty) {
		progress_line(st, text);
		return;
	}
	if (t - l->started < PROGRESS_AFTER_S || t - l->last_line < PROGRESS_EVERY_S)
		return;
	l->last_line = t;
	ks_info("%s", text);
}

static void warn_cb(void *ctx, const char *msg)
{
	progress_clear(ctx);
	ks_warn("%s", msg);
}

/* ------------------------------------------------------------------ */
/* Checks before anything runs                                         */
/* ------------------------------------------------------------------ */

/* Where an option's value came from, worded as the option checker words
 * it: the environment when the variable holds this very value. */
static void origin_of(const char *opt, const char *value, char *out, size_t size)
{
	const struct ks_opt *o = ks_opt_find(op_opts, opt);
	const char *env = o && o->env ? getenv(o->env) : NULL;

	if (env && strcmp(env, value) == 0)
		snprintf(out, size, "environment %s (for --%s)", o->env, opt);
	else
		snprintf(out, size, "option --%s", opt);
}

static int check_filter(const char *opt, const char *value, struct ks_op_filter **out,
			struct ks_err *err)
{
	char why[256], q[400], origin[128];
	int rc;

	*out = NULL;
	if (!value)
		return 0;
	rc = ks_op_filter_compile(value, out, why, sizeof(why));
	if (rc == -ENOMEM)
		return ks_err_set(err, rc, "out of memory");
	if (rc) {
		/* why says what is wrong and what is accepted. */
		ks_quote(q, sizeof(q), value, strlen(value));
		origin_of(opt, value, origin, sizeof(origin));
		return ks_err_set(err, rc, "%s: '%s' is not a name pattern: %s", origin, q,
				  why);
	}
	return 0;
}

/* The length of a kernel name that value starts with, followed by '=';
 * 0 when it has none (a bare expression: expressions have no '='). */
static size_t flops_kernel_len(const char *value)
{
	size_t n = 0;

	if (!((value[0] >= 'A' && value[0] <= 'Z') || (value[0] >= 'a' && value[0] <= 'z') ||
	      value[0] == '_'))
		return 0;
	while ((value[n] >= 'A' && value[n] <= 'Z') || (value[n] >= 'a' && value[n] <= 'z') ||
	       (value[n] >= '0' && value[n] <= '9') || value[n] == '_')
		n++;
	return value[n] == '=' && n < sizeof(((struct op_kflops *)0)->name) ? n : 0;
}

/* One --flops value: EXPR, for every kernel without its own, or
 * KERNEL=EXPR. */
static int check_flops(struct op_state *st, const char *value, struct ks_err *err)
{
	size_t kn = flops_kernel_len(value);
	const char *text = kn ? value + kn + 1 : value;
	char origin[128], q[400];
	struct ks_expr *x = NULL;
	struct ks_err e;
	int rc;

	origin_of("flops", value, origin, sizeof(origin));
	ks_quote(q, sizeof(q), value, strlen(value));
	if (!kn && st->flops)
		return ks_err_set(err, -EINVAL, "%s: '%s': an expression for every kernel is "
				  "given twice; accepted: one EXPR, and KERNEL=EXPR for each kernel "
				  "that needs its own", origin, q);
	for (size_t i = 0; kn && i < st->nkflops; i++)
		if (strlen(st->kflops[i].name) == kn && !memcmp(st->kflops[i].name, value, kn))
			return ks_err_set(err, -EINVAL, "%s: '%s': kernel %.*s has an "
					  "expression already; accepted: one KERNEL=EXPR per "
					  "kernel", origin, q, (int)kn, value);
	rc = ks_expr_parse(text, &x, &e);
	if (rc == -ENOMEM)
		return ks_err_set(err, rc, "out of memory");
	if (rc)
		return ks_err_set(err, rc, "%s: '%s' is not an expression: %s; "
				  "accepted: numbers and names with + - * / and "
				  "parentheses, e.g. 2*M*N*K, or KERNEL=EXPR", origin, q, e.msg);
	if (!kn) {
		st->flops = x;
		return 0;
	}
	{
		struct op_kflops *v = realloc(st->kflops, (st->nkflops + 1) * sizeof(*v));

		if (!v) {
			ks_expr_free(x);
			return ks_err_set(err, -ENOMEM, "out of memory");
		}
		st->kflops = v;
		memcpy(v[st->nkflops].name, value, kn);
		v[st->nkflops].name[kn] = '\0';
		v[st->nkflops].expr = x;
		st->nkflops++;
	}
	return 0;
}

/* The --flops expression of a kernel: its own, else the one for all. */
static const struct ks_expr *flops_of(const struct op_state *st, const char *kernel)
{
	for (size_t i = 0; i < st->nkflops; i++)
		if (!strcmp(st->kflops[i].name, kernel))
			return st->kflops[i].expr;
	return st->flops;
}

static int check_options(struct op_state *st, struct ks_err *err)
{
	const struct op_opts *o = st->o;
	struct ks_op_filter *inc = NULL;
	int rc;

	if ((rc = check_filter("kernel-name", o->kernel_name, &st->name_filter, err)) ||
	    (rc = check_filter("mstx-include", o->mstx_include, &inc, err)))
		return rc;
	ks_op_filter_free(inc);
	if (o->mstx_include && o->mstx != ON)
		return ks_err_set(err, -EINVAL, "option --mstx-include needs --mstx on "
				  "(ranges are seen only when --mstx is on)");
	if (o->mode == MODE_RANGE && o->mstx != ON)
		return ks_err_set(err, -EINVAL, "option --replay-mode range needs --mstx on "
				  "(the ranges come from the program's "
				  "kscope_range_start/end or NVTX calls)");
	if (o->backup == BACKUP_ALL && o->mode == MODE_APPLICATION)
		return ks_err_set(err, -EINVAL, "option --backup all applies to kernel and range "
				  "replay (application replay reruns the program and backs up "
				  "nothing)");
	for (size_t i = 0; i < o->flops.n; i++)
		if ((rc = check_flops(st, o->flops.v[i], err)))
			return rc;
	{
		unsigned mask;

		if ((rc = ks_op_metrics_parse(o->metrics, false, &mask, err)))
			return rc;
	}
	return 0;
}


/* This machine's ceilings, for the roofline; their absence is not an error. */
static void load_calibration(struct op_state *st)
{
	struct ks_err e;
	int rc;

	ks_err_clear(&e);
	rc = ks_calib_load(&st->calib, &e);
	st->have_calib = rc == 0;
	if (!rc)
		return;
	snprintf(st->calib_why, sizeof(st->calib_why), "%s", e.msg);
	if (rc == -EINVAL)
		ks_warn("%s; kscope op places no kernel on the roofline", e.msg);
	else if (rc == -ENOENT)
		st->calib_missing = true; /* a note after the summary */
	else
		ks_info("no roofline: %s", e.msg);
	ks_debug("no calibration: %s", e.msg);
}

/* ------------------------------------------------------------------ */
/* The program's environment                                           */
/* ------------------------------------------------------------------ */

/* With --mstx on, NVTX ranges are user ranges too: the runtime is also an
 * NVTX injection (src/op/rt/oprt_nvtx.c), which NVTX loads from
 * NVTX_INJECTION64_PATH.  st->nvtx_env gets that variable naming the
 * runtime, unless the user's environment names an injection already:
 * another tool's is left as it is, with a warning (NVTX loads one tool
 * only), and kscope's own needs nothing.  -ENOMEM. */
static int nvtx_setup(struct op_state *st, struct ks_err *err)
{
	const char *theirs = getenv("NVTX_INJECTION64_PATH");
	struct stat a, b;

	if (st->o->mstx != ON)
		return 0;
	if (theirs && *theirs) {
		if (stat(theirs, &a) != 0 || stat(st->runtime, &b) != 0 ||
		    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
			ks_warn("NVTX_INJECTION64_PATH names another NVTX tool (%s): it is left "
				"as it is, so the program's NVTX ranges are not seen (only "
				"kscope_range_start/end ranges are)", theirs);
		return 0;
	}
	if (asprintf(&st->nvtx_env, "NVTX_INJECTION64_PATH=%s", st->runtime) < 0) {
		st->nvtx_env = NULL;
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* kscope's environment plus LD_PRELOAD, the channel and the run number
 * (and st->nvtx_env).  The vector borrows environ's strings and
 * st->nvtx_env, and owns the three it adds, which are its last three
 * entries (free_env).  The runtime leaves all three
 * in the environment, so the program's children inherit them. */
static char **build_env(const struct op_state *st, unsigned run)
{
	static const char *const ours[] = { "LD_PRELOAD=", KS_OP_CHANNEL_ENV "=",
					    KS_OP_RUN_ENV "=" };
	const char *preload = getenv("LD_PRELOAD");
	char *add[3] = { NULL, NULL, NULL }, **env = NULL;
	size_t n = 0, k = 0;

	if ((preload && *preload ? asprintf(&add[0], "LD_PRELOAD=%s:%s", st->runtime, preload)
	     : asprintf(&add[0], "LD_PRELOAD=%s", st->runtime)) < 0)
		add[0] = NULL;
	if (asprintf(&add[1], "%s=%s:%s", KS_OP_CHANNEL_ENV, st->token, st->sockpath) < 0)
		add[1] = NULL;
	if (asprintf(&add[2], "%s=%u", KS_OP_RUN_ENV, run) < 0)
		add[2] = NULL;
	while (environ[n])
		n++;
	if (add[0] && add[1] && add[2])
		env = calloc(n + 5, sizeof(*env));
	if (!env) {
		for (size_t j = 0; j < 3; j++)
			free(add[j]);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;

		for (size_t j = 0; j < 3; j++)
			replaced |= strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
		if (st->nvtx_env)         /* the user's is empty: replaced */
			replaced |= strncmp(environ[i], "NVTX_INJECTION64_PATH=", 22) == 0;
		if (!replaced)
			env[k++] = environ[i];
	}
	if (st->nvtx_env)
		env[k++] = st->nvtx_env;
	for (size_t j = 0; j < 3; j++)
		env[k++] = add[j];
	env[k] = NULL;
	return env;
}

static void free_env(char **env)
{
	size_t n = 0;

	while (env[n])
		n++;
	for (size_t i = n - 3; i < n; i++)
		free(env[i]);
	free(env);
}

static int make_token(char *out, struct ks_err *err)
{
	unsigned char r[KS_OP_TOKEN_LEN / 2];
	size_t got = 0;

	while (got < sizeof(r)) {
		ssize_t n = getrandom(r + got, sizeof(r) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ks_err_set(err, -errno, "cannot make the channel's token: "
					  "getrandom: %s", strerror(errno));
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(r); i++)
		sprintf(out + 2 * i, "%02x", r[i]);
	out[KS_OP_TOKEN_LEN] = '\0';
	return 0;
}

/* ------------------------------------------------------------------ */
/* The listening socket                                                */
/* ------------------------------------------------------------------ */

/*
 * A socket file rather than an abstract name: the file is created with
 * mode 0700 (umask 077 around bind; kscope has no other thread yet), and
 * connecting needs write permission on it, so only this user's processes
 * can connect at all (the token then tells kscope's run from another);
 * and it works in sandboxes that give the program a network namespace of
 * its own but the same /tmp.  Its name is random, in $TMPDIR when the
 * path fits in sun_path, else /tmp; bind never follows or replaces what
 * is there.  No private directory around it: making and removing one
 * cost a tenth of a millisecond of every run, where the file system
 * discards freed blocks.  listener_remove() deletes the file at the end of
 * every run; only a kscope killed with SIGKILL leaves it behind.
 */
static int listener_make(struct op_state *st, struct ks_err *err)
{
	const char *tmp = getenv("TMPDIR");
	const char *bases[2] = { tmp && tmp[0] == '/' ? tmp : "/tmp", "/tmp" };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int e = ENAMETOOLONG;

	st->lsock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (st->lsock < 0)
		return ks_err_set(err, -errno, "cannot make kscope op's channel: %s",
				  strerror(errno));
	/* Up to 4 names in each place: a taken name is only bad luck. */
	for (unsigned i = 0; i < 8 && !st->sockpath[0]; i++) {
		uint32_t r = 0;
		mode_t old;
		int n, b;

		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint32_t)(now_s() * 1e9) ^ i;
		n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/kscope-op-%ld-%08x.sock",
			     bases[i / 4], (long)getpid(), r);
		if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
			e = ENAMETOOLONG;
			i |= 3; /* this place cannot hold it: the next */
			continue;
		}
		old = umask(077);
		b = bind(st->lsock, (struct sockaddr *)&sa, sizeof(sa));
		e = errno;
		umask(old);
		if (b == 0)
			snprintf(st->sockpath, sizeof(st->sockpath), "%s", sa.sun_path);
		else if (e != EADDRINUSE)
			i |= 3;
	}
	if (!st->sockpath[0])
		return ks_err_set(err, -e, "cannot make kscope op's channel (a socket) in "
				  "$TMPDIR or /tmp: %s", strerror(e));
	if (listen(st->lsock, SOMAXCONN) != 0)
		return ks_err_set(err, -errno, "cannot listen on %s: %s", st->sockpath,
				  strerror(errno));
	return 0;
}

static void listener_remove(struct op_state *st)
{
	if (st->lsock >= 0)
		close(st->lsock);
	st->lsock = -1;
	if (!st->sockpath[0])
		return;
	unlink(st->sockpath);
	st->sockpath[0] = '\0';
}

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

static void close_channel(struct op_peer *p)
{
	if (p->sock >= 0)
		close(p->sock);
	p->sock = -1;
}

static void send_msg(struct op_state *st, struct op_peer *p)
{
	int rc;

	if (p->sock < 0)
		return;
	rc = ks_op_send(p->sock, st->out);
	if (rc) {
		/* The process carries on unprofiled; kscope keeps waiting. */
		progress_clear(st);
		ks_debug("channel: send to process %lld failed: %s", p->pid, strerror(-rc));
		close_channel(p);
	}
}

static void on_hello(struct op_state *st, struct op_run *r, struct op_peer *p)
{
	const struct op_opts *o = st->o;
	char token[KS_OP_TOKEN_LEN + 8];
	unsigned long long version = ks_op_msg_getu(st->in, "version", 0);
	unsigned long long run = ks_op_msg_getu(st->in, "run", ~0ull);

	if (!ks_op_msg_get(st->in, "token", NULL, token, sizeof(token)))
		token[0] = '\0';
	if (version != KS_OP_PROTO_VERSION || strcmp(token, st->token) != 0 || run != r->no) {
		progress_clear(st);
		ks_warn("a peer on kscope op's channel was dropped: %s",
			version != KS_OP_PROTO_VERSION ? "it speaks another protocol version "
			"(is libkscope-op.so from another kscope?)"
			: strcmp(token, st->token) ? "its token is wrong"
			: "it belongs to another application run");
		close_channel(p);
		return;
	}
	p->hello = true;
	p->pid = (long long)ks_op_msg_getu(st->in, "pid", 0);
	p->ppid = (long long)ks_op_msg_getu(st->in, "ppid", 0);
	p->rank = r->nhello++;
	if (r->no == 0)
		st->saw_hello = true;
	ks_op_msg_init(st->out, "config");
	ks_op_msg_add(st->out, "mode", mode_choices[o->mode]);
	ks_op_msg_addu(st->out, "skip", (unsigned long long)o->skip);
	ks_op_msg_addu(st->out, "warmup", (unsigned long long)o->warmup);
	ks_op_msg_addu(st->out, "passes", (unsigned long long)o->passes);
	ks_op_msg_addu(st->out, "flush", o->flush == ON);
	ks_op_msg_addu(st->out, "mstx", o->mstx == ON);
	ks_op_msg_addu(st->out, "backup_all", o->backup == BACKUP_ALL);
	if (o->kernel_name)
		ks_op_msg_add(st->out, "kernel_name", o->kernel_name);
	if (o->mstx_include)
		ks_op_msg_add(st->out, "mstx_include", o->mstx_include);
	ks_op_msg_add(st->out, "dir", st->rd.path);
	if (r->no > 0)
		ks_op_msg_add(st->out, "targets", st->targets);
	send_msg(st, p);
	ks_debug("run %u: process %lld (parent %lld) is connected", r->no, p->pid, p->ppid);
}

static void on_kernel(struct op_state *st, const struct op_run *r, const struct op_peer *p)
{
	char name[256];
	char **v;
	long long *w;

	if (r->no > 0 || !ks_op_msg_get(st->in, "name", NULL, name, sizeof(name)) ||
	    st->nkernels >= MAX_KERNEL_NAMES)
		return;
	for (size_t i = 0; i < st->nkernels; i++)
		if (strcmp(st->kernels[i], name) == 0 && st->kernel_pids[i] == p->pid)
			return;
	v = realloc(st->kernels, (st->nkernels + 1) * sizeof(*v));
	if (!v)
		return;
	st->kernels = v;
	w = realloc(st->kernel_pids, (st->nkernels + 1) * sizeof(*w));
	if (!w)
		return;
	st->kernel_pids = w;
	v[st->nkernels] = strdup(name);
	w[st->nkernels] = p->pid;
	if (v[st->nkernels])
		st->nkernels++;
}

static void send_pass(struct op_state *st, const struct op_run *r, struct op_peer *p,
		      bool final)
{
	if (final && r->no == 0)
		st->final_sent = true;
	ks_op_msg_init(st->out, "pass");
	ks_op_msg_addu(st->out, "final", final);
	send_msg(st, p);
}

/* `skip`: --launch-skip-before-match over every process of the program,
 * in the order they ask. */
static void on_skip(struct op_state *st, struct op_peer *p)
{
	bool more = st->skip_seen < (unsigned long long)st->o->skip;

	if (more)
		st->skip_seen++;
	ks_op_msg_init(st->out, "skip");
	ks_op_msg_addu(st->out, "more", more);
	send_msg(st, p);
}

/* The count of name in process pid (a new one, at the end, when it has
 * none yet), or NULL when out of memory. */
static struct name_count *count_of(struct op_state *st, long long pid, const char *name)
{
	struct name_count *v;

	for (size_t i = 0; i < st->ncounts; i++)
		if (st->counts[i].pid == pid && strcmp(st->counts[i].name, name) == 0)
			return &st->counts[i];
	v = realloc(st->counts, (st->ncounts + 1) * sizeof(*v));
	if (!v)
		return NULL;
	st->counts = v;
	v = &v[st->ncounts++];
	memset(v, 0, sizeof(*v));
	v->pid = pid;
	snprintf(v->name, sizeof(v->name), "%s", name);
	return v;
}

/* The run directory is made when the first launch is collected: a run
 * that collects nothing leaves none behind and pays nothing for it.  If
 * it cannot be made, nothing more is collected (said once). */
static bool rundir_ready(struct op_state *st)
{
	struct ks_err err;

	if (!st->rd.pending)
		return st->rd.dirfd >= 0;
	ks_err_clear(&err);
	if (ks_rundir_make(&st->rd, &err) == 0)
		return true;
	ks_error("%s; nothing is collected", err.msg);
	st->write_failed = true;
	return false;
}

static void on_launch(struct op_state *st, const struct op_run *r, struct op_peer *p)
{
	struct launch_rec *l;
	struct name_count *nc = NULL;
	char name[256];

	if (r->no == 0 && p->hello && ks_op_msg_get(st->in, "name", NULL, name, sizeof(name)) &&
	    (nc = count_of(st, p->pid, name)) != NULL)
		nc->matched++;
	if (r->no > 0 || !p->hello || st->interrupted || st->timed_out ||
	    st->nlaunches >= (size_t)st->o->count || !rundir_ready(st) ||
	    !ks_op_msg_get(st->in, "name", NULL, name, sizeof(name))) {
		send_pass(st, r, p, true);
		return;
	}
	l = realloc(st->launches, (st->nlaunches + 1) * sizeof(*l));
	if (!l) {
		send_pass(st, r, p, false);
		return;
	}
	st->launches = l;
	l = &st->launches[st->nlaunches];
	memset(l, 0, sizeof(*l));
	l->pid = p->pid;
	l->rank = p->rank;
	snprintf(l->name, sizeof(l->name), "%s", name);
	l->index = ks_op_msg_getu(st->in, "index", 0);
	l->ordinal = ks_op_msg_getu(st->in, "ordinal", 0);
	if (!ks_op_msg_get(st->in, "gsize", NULL, l->gsize, sizeof(l->gsize)))
		snprintf(l->gsize, sizeof(l->gsize), "?");
	ks_oppost_dirname(p->pid, name, l->index, l->rel, sizeof(l->rel));
	for (size_t i = 0; i < st->nlaunches; i++)
		if (strcmp(st->launches[i].rel, l->rel) == 0) {
			send_pass(st, r, p, false); /* the same launch twice: not again */
			return;
		}
	l->started = now_s();
	st->nlaunches++;
	if (nc)
		nc->collected++;
	ks_op_msg_init(st->out, "collect");
	ks_op_msg_add(st->out, "dir", l->rel);
	send_msg(st, p);
	ks_debug("collecting %s (launch %llu of process %lld) into %s", l->name, l->index,
		 p->pid, l->rel);
}

static struct launch_rec *find_launch(struct op_state *st, const char *rel)
{
	for (size_t i = 0; i < st->nlaunches; i++)
		if (strcmp(st->launches[i].rel, rel) == 0)
			return &st->launches[i];
	return NULL;
}

/* This machine's ceilings, read when the first launch is collected rather
 * than at start: finding this machine's file lists its OpenCL devices in
 * a child process (tens of milliseconds), which a run that collects
 * nothing should not pay.  NULL when there are none. */
static const struct ks_calib *calibration(struct op_state *st)
{
	if (!st->calib_tried) {
		st->calib_tried = true;
		load_calibration(st);
	}
	return st->have_calib ? &st->calib : NULL;
}

/* Writes (or, with replace, rewrites) a launch's deliverables. */
static void build(struct op_state *st, struct launch_rec *l, bool replace)
{
	struct ks_oppost_opts po = {
		.flops = flops_of(st, l->name),
		.calib = calibration(st),
		.calib_why = st->calib_why,
		.status = !l->collected ? "incomplete" : l->failed ? "failed" : NULL,
		.message = l->message,
		.app_ns = l->app_ns,
		.app_run = l->app_run,
		.n_app = l->n_app,
		.replace = replace,
		.warn = warn_cb,
		.warn_ctx = st,
	};
	struct ks_err err;
	int rc;

	ks_err_clear(&err);
	rc = ks_oppost_launch(&st->rd, l->rel, &po, &l->res, &err);
	if (rc == -ENOENT && !l->collected) {
		ks_debug("%s: no raw files: %s", l->rel, err.msg);
	} else if (rc) {
		progress_clear(st);
		ks_error("%s", err.msg);
		st->write_failed = true;
	}
	/* What the directory could not say, the launch message did. */
	snprintf(l->res.name, sizeof(l->res.name), "%s", l->name);
	l->res.index = (long long)l->index;
	if (!strcmp(l->res.global, "-") && strspn(l->gsize, "0:") != strlen(l->gsize)) {
		char *p = l->res.global;

		snprintf(l->res.global, sizeof(l->res.global), "%s", l->gsize);
		for (; *p; p++)
			if (*p == ':')
				*p = 'x';
	}
}

/* Sends sig to the program: its top process, while kscope has not reaped
 * it, and every process connected to kscope (the processes of the tree
 * that use the runtime; a shell or launcher between them that never
 * connected is reached only when it is the top process). */
static void kill_program(struct op_run *r, int sig)
{
	if (!r->reaped && r->pid > 0)
		kill(r->pid, sig);
	for (size_t i = 0; i < r->npeers; i++) {
		const struct op_peer *p = &r->peers[i];

		if (p->sock >= 0 && p->hello && p->cred_pid > 0 && p->cred_pid != r->pid)
			kill(p->cred_pid, sig);
	}
}

static void on_collected(struct op_state *st, struct op_run *r)
{
	const struct op_opts *o = st->o;
	char rel[320], status[32];
	struct launch_rec *l;

	if (!ks_op_msg_get(st->in, "dir", NULL, rel, sizeof(rel)) ||
	    !(l = find_launch(st, rel)) || l->collected)
		return;
	if (!ks_op_msg_get(st->in, "status", NULL, status, sizeof(status)))
		snprintf(status, sizeof(status), "failed");
	if (!ks_op_msg_get(st->in, "message", NULL, l->message, sizeof(l->message)))
		l->message[0] = '\0';
	l->collected = true;
	l->failed = strcmp(status, "ok") != 0;
	st->ncollected++;
	build(st, l, false);
	progress_clear(st);
	if (l->failed) {
		char q[600];

		ks_quote(q, sizeof(q), l->message, strlen(l->message));
		ks_warn("the replay of %s (launch %llu) failed%s%s; the program's own "
			"launch went on", l->name, l->index, q[0] ? ": " : "", q);
	} else if (isfinite(l->res.median_us)) {
		ks_info("collected %s (launch %llu): median %.3f us over %zu pass%s", l->name,
			l->index, l->res.median_us, l->res.passes,
			l->res.passes == 1 ? "" : "es");
	} else {
		ks_info("collected %s (launch %llu)", l->name, l->index);
	}
	if (o->kill == ON && r->no == 0 && st->ncollected >= (size_t)o->count &&
	    !r->killed_by_kill) {
		ks_info("--kill on: stopping the program after %zu collected launch%s",
			st->ncollected, st->ncollected == 1 ? "" : "es");
		r->killed_by_kill = true;
		kill_program(r, SIGKILL);
	}
}

static void on_progress(struct op_state *st)
{
	char rel[320];
	struct launch_rec *l;

	if (!ks_op_msg_get(st->in, "dir", NULL, rel, sizeof(rel)) ||
	    !(l = find_launch(st, rel)) || l->collected)
		return;
	show_progress(st, l, ks_op_msg_getu(st->in, "done", 0),
		      ks_op_msg_getu(st->in, "total", 0));
}

/* timing target=NAME,X:Y:Z,K ns=NS.  The target is the launch of that
 * key in the process of the same connection order in run 0 (so that each
 * process of a tree that runs the same way times its own), else the first
 * launch of that key not timed yet in this run. */
static void on_timing(struct op_state *st, struct op_run *r, const struct op_peer *p)
{
	char target[400], *c1, *c2, *end;
	unsigned long long ns = ks_op_msg_getu(st->in, "ns", ~0ull), ord;

	if (r->no == 0 || ns == ~0ull ||
	    !ks_op_msg_get(st->in, "target", NULL, target, sizeof(target)))
		return;
	c2 = strrchr(target, ',');
	if (!c2)
		return;
	*c2 = '\0';
	c1 = strrchr(target, ',');
	if (!c1)
		return;
	*c1 = '\0';
	ord = strtoull(c2 + 1, &end, 10);
	if (*end)
		return;
	for (size_t i = 0; i < 2 * st->nlaunches; i++) {
		struct launch_rec *l = &st->launches[i % st->nlaunches];
		uint64_t *v;
		unsigned *w;

		if (strcmp(l->name, target) || strcmp(l->gsize, c1 + 1) || l->ordinal != ord ||
		    l->timed_run == r->no + 1 || (i < st->nlaunches && l->rank != p->rank))
			continue;
		v = realloc(l->app_ns, (l->n_app + 1) * sizeof(*v));
		if (v)
			l->app_ns = v;
		w = realloc(l->app_run, (l->n_app + 1) * sizeof(*w));
		if (w)
			l->app_run = w;
		if (!v || !w)
			return;
		l->app_ns[l->n_app] = ns;
		l->app_run[l->n_app++] = r->no;
		l->timed_run = r->no + 1;
		r->timed++;
		/* --kill on: this run has served its purpose. */
		if (st->o->kill == ON && r->timed >= st->ntargets && !r->killed_by_kill) {
			r->killed_by_kill = true;
			kill_program(r, SIGKILL);
		}
		return;
	}
}

/* `unusable backend=B reason=R`: the program tried runtime B (CUDA) and
 * could not use it; explain_nothing() says so. */
static void on_unusable(struct op_state *st)
{
	char be[32], why[400];

	if (!ks_op_msg_get(st->in, "backend", NULL, be, sizeof(be)) ||
	    !ks_op_msg_get(st->in, "reason", NULL, why, sizeof(why)))
		return;
	snprintf(st->unusable, sizeof(st->unusable), "%s, but %s",
		 strcmp(be, "cuda") == 0 ? "CUDA" : be, why);
}

/* `note text=T`: something of the process kscope did not profile. */
static void on_note(struct op_state *st, const struct op_peer *p)
{
	char text[400];

	if (ks_op_msg_get(st->in, "text", NULL, text, sizeof(text)))
		ks_warn("process %lld: %s", p->pid, text);
}

static void handle_message(struct op_state *st, struct op_run *r, struct op_peer *p)
{
	char type[32];

	ks_op_msg_type(st->in, type, sizeof(type));
	if (!p->hello && strcmp(type, "hello") != 0) {
		ks_debug("channel: '%s' before hello ignored", type);
		return;
	}
	if (strcmp(type, "hello") == 0) {
		if (p->hello)
			ks_debug("channel: a second hello ignored");
		else
			on_hello(st, r, p);
	}
	else if (strcmp(type, "opencl") == 0 || strcmp(type, "cuda") == 0) {
		st->used_opencl |= r->no == 0;
		if (r->no == 0)
			st->used_opencl_only = strcmp(type, "opencl") == 0;
	}
	else if (strcmp(type, "unusable") == 0 && r->no == 0)
		on_unusable(st);
	else if (strcmp(type, "kernel") == 0)
		on_kernel(st, r, p);
	else if (strcmp(type, "skip") == 0)
		on_skip(st, p);
	else if (strcmp(type, "launch") == 0)
		on_launch(st, r, p);
	else if (strcmp(type, "progress") == 0)
		on_progress(st);
	else if (strcmp(type, "collected") == 0)
		on_collected(st, r);
	else if (strcmp(type, "timing") == 0)
		on_timing(st, r, p);
	else if (strcmp(type, "note") == 0)
		on_note(st, p);
	else if (strcmp(type, "bye") == 0)
		ks_debug("run %u: process %lld said bye", r->no, p->pid);
	else
		ks_debug("channel: unknown message '%s' ignored", type);
}

/* Reads every message waiting on a peer's connection. */
static void drain(struct op_state *st, struct op_run *r, struct op_peer *p)
{
	while (p->sock >= 0) {
		int rc = ks_op_recv(p->sock, st->in);

		if (rc == -EAGAIN || rc == -EWOULDBLOCK)
			return;
		if (rc == -EBADMSG) {
			ks_debug("channel: a malformed message was ignored");
			continue;
		}
		if (rc) {
			close_channel(p);
			return;
		}
		handle_message(st, r, p);
	}
}

/* Accepts every connection waiting on the listening socket. */
static void accept_peers(struct op_state *st, struct op_run *r)
{
	for (;;) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		struct op_peer *v;
		int fd = accept4(st->lsock, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				ks_debug("channel: accept: %s", strerror(errno));
			return;
		}
		v = realloc(r->peers, (r->npeers + 1) * sizeof(*v));
		if (!v) {
			close(fd);
			return;
		}
		r->peers = v;
		v = &v[r->npeers++];
		memset(v, 0, sizeof(*v));
		v->sock = fd;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
			v->cred_pid = cred.pid;
	}
}

static size_t open_peers(const struct op_run *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->npeers; i++)
		n += r->peers[i].sock >= 0;
	return n;
}

/* ------------------------------------------------------------------ */
/* Running the program                                                 */
/* ------------------------------------------------------------------ */

static void on_signal(struct op_state *st, struct op_run *r)
{
	struct signalfd_siginfo si;

	while (read(st->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGCHLD) {
			int status;
			pid_t p;

			if (!r->reaped && (p = waitpid(r->pid, &status, WNOHANG)) == r->pid) {
				r->reaped = true;
				r->status = status;
			}
			continue;
		}
		progress_clear(st);
		if (st->interrupted) {
			/* Another interrupt, a while after the first: the program
			 * did not end.  (One sent to the whole process group by a
			 * wrapper such as timeout(1) arrives twice at once.) */
			if (now_s() - st->interrupted_at >= 1.0) {
				ks_warn("interrupted again: killing the program");
				kill_program(r, SIGKILL);
			}
			continue;
		}
		st->interrupted = sig;
		st->interrupted_at = now_s();
		ks_info("interrupted (%s): waiting for the program to end, then writing "
			"what was collected", sig == SIGINT ? "SIGINT" : "SIGTERM");
		/* The terminal's Ctrl+C reached the program too; a signal sent to
		 * kscope alone is passed on. */
		if (si.ssi_code != SI_KERNEL)
			kill_program(r, sig);
	}
}

static void check_timers(struct op_state *st, struct op_run *r)
{
	double t = now_s();

	if (st->deadline > 0 && t >= st->deadline && !st->timed_out) {
		progress_clear(st);
		st->timed_out = true;
		ks_warn("--timeout %" PRId64 " minute%s reached: stopping the program "
			"(SIGTERM, then SIGKILL after %.0f s)", st->o->timeout,
			st->o->timeout == 1 ? "" : "s", TERM_GRACE_S);
		r->term_at = t;
		kill_program(r, SIGTERM);
	}
	if (r->term_at > 0 && !r->hard_killed && t >= r->term_at + TERM_GRACE_S) {
		progress_clear(st);
		ks_warn("the program did not end %.0f s after SIGTERM: SIGKILL",
			TERM_GRACE_S);
		r->hard_killed = true;
		kill_program(r, SIGKILL);
	}
}

/* The wait is cut at least every REAP_EVERY_MS to look for the program's
 * end directly as well: SIGCHLD goes to whichever thread has it
 * unblocked, and a library kscope loaded may have started one before the
 * mask was set. */
#define REAP_EVERY_MS 1000

static int poll_timeout_ms(const struct op_state *st, const struct op_run *r)
{
	double t = now_s(), next = 0;
	int ms;

	if (st->deadline > 0 && !st->timed_out)
		next = st->deadline;
	if (r->term_at > 0 && !r->hard_killed &&
	    (next == 0 || r->term_at + TERM_GRACE_S < next))
		next = r->term_at + TERM_GRACE_S;
	if (r->reaped && (next == 0 || r->ended_at + ORPHAN_GRACE_S < next))
		next = r->ended_at + ORPHAN_GRACE_S;
	if (next == 0)
		return REAP_EVERY_MS;
	ms = next <= t ? 0 : (int)((next - t) * 1000) + 1;
	return ms < REAP_EVERY_MS ? ms : REAP_EVERY_MS;
}

static void reap(struct op_run *r)
{
	int status;

	if (!r->reaped && waitpid(r->pid, &status, WNOHANG) == r->pid) {
		r->reaped = true;
		r->status = status;
	}
	if (r->reaped && r->ended_at == 0)
		r->ended_at = now_s();
}

/* Whether the run is over: the top process is gone and so is every
 * connection, or the grace for processes that outlive it is up. */
static bool run_over(const struct op_run *r)
{
	return r->reaped && (open_peers(r) == 0 || now_s() >= r->ended_at + ORPHAN_GRACE_S);
}

/* Starts the program for run r->no and serves it until it is gone.
 * Returns 0, or -errno with err set when it could not be started.
 *
 * posix_spawn() rather than fork() and execve(): the program starts
 * without the kernel copying kscope's page tables first and tearing them
 * down again at the exec, which was a good part of what kscope adds to a
 * short run.  glibc reports a failed exec as posix_spawn()'s result. */
static int run_program(struct op_state *st, struct op_run *r, struct ks_err *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct pollfd *pf = NULL;
	size_t left;
	int sr;
	char **env;

	env = build_env(st, r->no);
	if (!env)
		return ks_err_set(err, -ENOMEM, "out of memory");
	sr = posix_spawn_file_actions_init(&fa);
	if (sr == 0 && (sr = posix_spawnattr_init(&attr)) != 0)
		posix_spawn_file_actions_destroy(&fa);
	if (sr != 0) {
		free_env(env);
		return ks_err_set(err, -sr, "cannot start the program: %s", strerror(sr));
	}
	/* The program gets kscope's original signal mask; the further runs
	 * of application replay get /dev/null for their standard streams. */
	posix_spawnattr_setsigmask(&attr, &st->oldmask);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	if (r->no > 0 &&
	    ((sr = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDWR, 0)) != 0 ||
	     (sr = posix_spawn_file_actions_adddup2(&fa, 0, 1)) != 0 ||
	     (sr = posix_spawn_file_actions_adddup2(&fa, 0, 2)) != 0))
		goto spawned;
	fflush(stdout);
	fflush(stderr);
	sr = posix_spawn(&r->pid, st->prog, &fa, &attr, st->argv, env);
spawned:
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free_env(env);
	if (sr != 0) {
		r->reaped = true;
		return ks_err_set(err, -sr, "cannot run '%s': %s", st->prog, strerror(sr));
	}

	/* Until the program is reaped and its processes are gone: new
	 * processes, messages, signals, timers. */
	while (!run_over(r)) {
		size_t n = 2, *which;
		struct pollfd *v = realloc(pf, (r->npeers + 2) * (sizeof(*pf) + sizeof(size_t)));
		int rc;

		if (!v) {
			ks_error("out of memory");
			break;
		}
		pf = v;
		which = (size_t *)(void *)(pf + r->npeers + 2);
		pf[0] = (struct pollfd){ .fd = st->sigfd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = st->lsock, .events = POLLIN };
		for (size_t i = 0; i < r->npeers; i++)
			if (r->peers[i].sock >= 0) {
				which[n] = i;
				pf[n++] = (struct pollfd){ .fd = r->peers[i].sock, .events = POLLIN };
			}
		rc = poll(pf, n, poll_timeout_ms(st, r));
		if (rc < 0 && errno != EINTR) {
			ks_error("poll: %s", strerror(errno));
			break;
		}
		if (rc > 0 && (pf[0].revents & POLLIN))
			on_signal(st, r);
		for (size_t k = 2; rc > 0 && k < n; k++)
			if (pf[k].revents)
				drain(st, r, &r->peers[which[k]]);
		/* After the peers: accepting may move r->peers. */
		if (rc > 0 && (pf[1].revents & POLLIN))
			accept_peers(st, r);
		check_timers(st, r);
		reap(r);
	}
	free(pf);
	/* What the processes sent before they ended. */
	for (size_t i = 0; i < r->npeers; i++)
		drain(st, r, &r->peers[i]);
	left = open_peers(r);
	if (left) {
		progress_clear(st);
		ks_warn("%zu process%s of the program %s still connected %.0f s after it "
			"ended: left running, unprofiled from now on", left, left == 1 ? "" : "es",
			left == 1 ? "is" : "are", ORPHAN_GRACE_S);
	}
	for (size_t i = 0; i < r->npeers; i++)
		close_channel(&r->peers[i]);
	free(r->peers);
	r->peers = NULL;
	r->npeers = 0;
	progress_clear(st);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Application replay                                                  */
/* ------------------------------------------------------------------ */

/* The targets of runs >= 1: every launch run 0 collected. */
static int write_targets(struct op_state *st, size_t *ntargets, struct ks_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	*ntargets = 0;
	if (!f)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < st->nlaunches; i++) {
		const struct launch_rec *l = &st->launches[i];

		if (!l->collected || l->failed)
			continue;
		fprintf(f, "%s,%s,%llu\n", l->name, l->gsize, l->ordinal);
		(*ntargets)++;
	}
	if (fclose(f) != 0) {
		free(buf);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	rc = ks_outfile_put(&st->rd, "app_targets.txt", buf, len, KS_FILE_MODE, err);
	free(buf);
	snprintf(st->targets, sizeof(st->targets), "%s/app_targets.txt", st->rd.path);
	return rc;
}

static void app_progress(struct op_state *st, unsigned run, unsigned runs)
{
	char text[128];
	double t = now_s();

	snprintf(text, sizeof(text), "application replay: run %u of %u", run + 1, runs);
	if (st->tty) {
		progress_line(st, text);
	} else if (t - st->last_app_line >= PROGRESS_EVERY_S) {
		st->last_app_line = t;
		ks_info("%s", text);
	}
}

/* Runs 1 .. passes-1; each times the targets once. */
static void application_runs(struct op_state *st, const struct op_run *run0)
{
	unsigned runs = (unsigned)st->o->passes, done = 1;
	size_t ntargets;
	struct ks_err err;

	if (runs < 2 || st->interrupted || st->timed_out)
		goto rebuild;
	if (write_targets(st, &ntargets, &err)) {
		ks_error("%s", err.msg);
		st->write_failed = true;
		return;
	}
	if (!ntargets)
		return;
	st->ntargets = ntargets;
	st->last_app_line = now_s();
	for (unsigned k = 1; k < runs && !st->interrupted && !st->timed_out; k++) {
		struct op_run r = { .no = k };
		char missing[1024];
		size_t off = 0;

		app_progress(st, k, runs);
		if (run_program(st, &r, &err)) {
			ks_error("application run %u: %s", k, err.msg);
			break;
		}
		done++;
		if (!r.nhello)
			ks_warn("application run %u: no process of the program connected to "
				"kscope (none used OpenCL or CUDA)", k);
		missing[0] = '\0';
		for (size_t i = 0; i < st->nlaunches; i++) {
			const struct launch_rec *l = &st->launches[i];

			if (l->collected && !l->failed && l->timed_run != k + 1 &&
			    off < sizeof(missing))
				off += (size_t)snprintf(missing + off, sizeof(missing) - off,
							"%s%s (launch %llu)", off ? ", " : "",
							l->name, l->index);
		}
		if (off)
			ks_warn("application run %u did not launch %s again: %s%s", k,
				r.timed + 1 < ntargets ? "these kernels" : "this kernel",
				missing, off >= sizeof(missing) ? "..." : "");
		if (!r.killed_by_kill && !run0->killed_by_kill &&
		    (WIFEXITED(r.status) != WIFEXITED(run0->status) ||
		     (WIFEXITED(r.status) && WIFEXITED(run0->status) &&
		      WEXITSTATUS(r.status) != WEXITSTATUS(run0->status)) ||
		     (WIFSIGNALED(r.status) && WIFSIGNALED(run0->status) &&
		      WTERMSIG(r.status) != WTERMSIG(run0->status))))
			ks_warn("application run %u ended differently from the first run "
				"(%s %d)", k, WIFEXITED(r.status) ? "exit status" : "signal",
				WIFEXITED(r.status) ? WEXITSTATUS(r.status) : WTERMSIG(r.status));
	}
	progress_clear(st);
	if (done < runs)
		ks_warn("application replay stopped after %u of %u runs", done, runs);
rebuild:
	for (size_t i = 0; i < st->nlaunches; i++)
		if (st->launches[i].collected)
			build(st, &st->launches[i], true);
}

/* ------------------------------------------------------------------ */
/* The summary                                                         */
/* ------------------------------------------------------------------ */

static void fmt_num(char *out, size_t size, double v, int prec)
{
	if (isfinite(v))
		snprintf(out, size, "%.*f", prec, v);
	else
		snprintf(out, size, "-");
}

/* Whether the launches came from more than one process: the tables then
 * have a pid column. */
static bool several_pids(const struct op_state *st)
{
	for (size_t i = 1; i < st->nlaunches; i++)
		if (st->launches[i].pid != st->launches[0].pid)
			return true;
	for (size_t i = 1; i < st->ncounts; i++)
		if (st->counts[i].pid != st->counts[0].pid)
			return true;
	for (size_t i = 1; i < st->nkernels; i++)
		if (st->kernel_pids[i] != st->kernel_pids[0])
			return true;
	return false;
}

#define NCOLS 14

static void print_summary(FILE *out, struct op_state *st)
{
	static const char *const head[NCOLS] = {
		"#", "pid", "kernel", "launch", "global size", "passes", "median us", "gpu us",
		"min us", "max us", "spread %", "GB/s", "GFLOP/s", "status"
	};
	/* Numbers are right-aligned, words left-aligned. */
	static const bool right[NCOLS] = { true, true, false, true, false, true, true, true,
					   true, true, true, true, true, false };
	size_t w[NCOLS], n = st->nlaunches;
	char (*cells)[NCOLS][64] = calloc(n ? n : 1, sizeof(*cells));
	bool pids = several_pids(st), gpu = false;

	/* The GPU's own duration (CUDA with CUPTI) gets a column when any
	 * launch has one. */
	for (size_t i = 0; i < n; i++)
		gpu |= isfinite(st->launches[i].res.gpu_us);

	if (st->o->export_dir)
		fprintf(out, "kscope op: %zu kernel(s) rebuilt from %s in %s\n", n,
			st->o->export_dir, st->rd.path);
	else
		fprintf(out, "kscope op: %zu kernel(s) collected (replay mode %s) in %s\n", n,
			mode_choices[st->o->mode], st->rd.path);
	if (!cells)
		return;
	for (size_t c = 0; c < NCOLS; c++)
		w[c] = strlen(head[c]);
	for (size_t i = 0; i < n; i++) {
		const struct ks_oppost_result *r = &st->launches[i].res;
		char (*row)[64] = cells[i];

		snprintf(row[0], 64, "%zu", i + 1);
		snprintf(row[1], 64, "%lld", st->launches[i].pid);
		snprintf(row[2], 64, "%.63s", r->name);
		snprintf(row[3], 64, "%llu", st->launches[i].index);
		snprintf(row[4], 64, "%s", r->global);
		snprintf(row[5], 64, "%zu", r->passes);
		fmt_num(row[6], 64, r->median_us, 3);
		fmt_num(row[7], 64, r->gpu_us, 3);
		fmt_num(row[8], 64, r->min_us, 3);
		fmt_num(row[9], 64, r->max_us, 3);
		fmt_num(row[10], 64, r->spread_pct, 1);
		fmt_num(row[11], 64, r->gbps, 3);
		fmt_num(row[12], 64, r->gflops, 3);
		snprintf(row[13], 64, "%s", r->status);
		for (size_t c = 0; c < NCOLS; c++)
			if (strlen(row[c]) > w[c])
				w[c] = strlen(row[c]);
	}
	for (size_t i = 0; i <= n; i++) {
		fputs(" ", out);
		for (size_t c = 0; c < NCOLS; c++) {
			const char *s = i == 0 ? head[c] : cells[i - 1][c];

			if ((c == 1 && !pids) || (c == 7 && !gpu))
				continue;
			if (c + 1 == NCOLS)
				fprintf(out, " %s", s);
			else
				fprintf(out, " %*s%s", right[c] ? (int)w[c] : -(int)w[c], s, "");
		}
		fputs("\n", out);
	}
	free(cells);
}

/* "N" or "N+" (at least N) as the counts are complete or not. */
static void fmt_count(char *out, size_t size, size_t n, bool at_least)
{
	snprintf(out, size, "%zu%s", n, at_least ? "+" : "");
}

/* What the filters let through, per kernel (or range) name: matched
 * (passed skip, ranges and --kernel-name), collected, and skipped (matched
 * but not collected).  Once kscope has said `pass final=1` the runtime
 * reports nothing more, so matched and skipped are then lower bounds.
 * Launches a filter turned away are never reported, so they are not
 * counted. */
static void print_counts(FILE *out, const struct op_state *st)
{
	bool range = st->o->mode == MODE_RANGE, more = st->final_sent;
	bool pids = several_pids(st);
	size_t n = st->ncounts, w = strlen(range ? "range" : "kernel"), wp = 3;
	char m[32], c[32], k[32], pid[32];

	if (!range)
		for (size_t i = 0; i < st->nkernels; i++)
			if (strlen(st->kernels[i]) > w)
				w = strlen(st->kernels[i]);
	for (size_t i = 0; i < n; i++)
		if (strlen(st->counts[i].name) > w)
			w = strlen(st->counts[i].name);
	if (w > 63)
		w = 63;
	if (!n && (range || !st->nkernels))
		return;
	fprintf(out, "kscope op: launches per %s (matched: passed "
		"--launch-skip-before-match, --mstx and --kernel-name; skipped: matched, "
		"not collected)\n", range ? "range" : "kernel");
	/* Several processes: a pid column first, one row per process and
	 * name. */
	for (size_t i = 0; pids && i < n; i++) {
		snprintf(pid, sizeof(pid), "%lld", st->counts[i].pid);
		wp = strlen(pid) > wp ? strlen(pid) : wp;
	}
	for (size_t i = 0; pids && i < st->nkernels; i++) {
		snprintf(pid, sizeof(pid), "%lld", st->kernel_pids[i]);
		wp = strlen(pid) > wp ? strlen(pid) : wp;
	}
	if (pids)
		fprintf(out, "  %*s", (int)wp, "pid");
	fprintf(out, "  %-*s  matched  collected  skipped\n", (int)w, range ? "range" : "kernel");
	for (size_t i = 0; i < n; i++) {
		const struct name_count *nc = &st->counts[i];

		fmt_count(m, sizeof(m), nc->matched, more);
		fmt_count(c, sizeof(c), nc->collected, false);
		fmt_count(k, sizeof(k), nc->matched - nc->collected, more);
		if (pids)
			fprintf(out, "  %*lld", (int)wp, nc->pid);
		fprintf(out, "  %-*.63s  %7s  %9s  %7s\n", (int)w, nc->name, m, c, k);
	}
	/* Kernels the program launched that no launch message named. */
	for (size_t i = 0; !range && i < st->nkernels; i++) {
		bool listed = false;

		for (size_t j = 0; j < n && !listed; j++)
			listed = strcmp(st->counts[j].name, st->kernels[i]) == 0 &&
				 st->counts[j].pid == st->kernel_pids[i];
		if (listed)
			continue;
		fmt_count(m, sizeof(m), 0, more);
		if (pids)
			fprintf(out, "  %*lld", (int)wp, st->kernel_pids[i]);
		fprintf(out, "  %-*.63s  %7s  %9s  %7s\n", (int)w, st->kernels[i], m, "0", m);
	}
	if (more)
		fprintf(out, "  (+: at least; after the last collected launch (--launch-count "
			"%" PRId64 ") the program's launches were no longer reported)\n",
			st->o->count);
}

/* Advice after the summary: noisy timings, a missing calibration. */
static void print_notes(FILE *out, const struct op_state *st)
{
	size_t noisy = 0;

	for (size_t i = 0; i < st->nlaunches; i++)
		noisy += strcmp(st->launches[i].res.status, "noisy") == 0;
	if (noisy)
		fprintf(out, "kscope op: note: %zu launch%s noisy (the 80th percentile of "
			"the passes is above %.1f times the 20th): raise --replay-count (now "
			"%" PRId64 "), lock the clocks, or profile on an idle machine\n",
			noisy, noisy == 1 ? " is" : "es are", KS_OPPOST_NOISY_RATIO,
			st->o->passes);
	if (st->o->backup == BACKUP_ALL && st->used_opencl_only)
		fprintf(out, "kscope op: note: --backup all changes nothing for OpenCL: its "
			"kernels reach memory through their arguments (shared virtual memory "
			"aside), whose buffers are backed up in any case\n");
	if (st->calib_missing)
		fprintf(out, "kscope op: note: no roofline: this machine has no calibration "
			"yet; make one with: kscope calibrate (or kscope calibrate --quick, a "
			"few seconds)\n");
}

/* Why nothing was collected, for the user. */
static void explain_nothing(const struct op_state *st, bool as_error)
{
	const struct op_opts *o = st->o;
	char names[1500], q[400];
	size_t off = 0;
	bool any_match = false;

	names[0] = '\0';
	for (size_t i = 0; i < st->nkernels && off < sizeof(names); i++) {
		bool seen = false;

		/* Each name once, whichever processes launched it. */
		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(st->kernels[j], st->kernels[i]) == 0;
		if (seen)
			continue;
		off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s",
					off ? ", " : "", st->kernels[i]);
		any_match |= ks_op_filter_match(st->name_filter, st->kernels[i]);
	}
	if (off >= sizeof(names))
		memcpy(names + sizeof(names) - 4, "...", 4);
	if (st->unusable[0] && !st->nkernels) {
		/* One line naming what is missing: the program ran as it would. */
		ks_log(as_error ? KS_LOG_ERROR : KS_LOG_WARN,
		       "the program uses %s; nothing was profiled", st->unusable);
		return;
	}
	if (!st->saw_hello || (!st->used_opencl && !st->nkernels)) {
		ks_log(as_error ? KS_LOG_ERROR : KS_LOG_WARN,
		       "the program never used OpenCL or CUDA (no OpenCL or CUDA call reached "
		       "kscope's runtime)");
		if (!st->saw_hello)
			ks_debug("no process of the program connected to kscope: none called "
				 "OpenCL or CUDA, or one that did was statically linked, or "
				 "ran with LD_PRELOAD or KSCOPE_OP_CHANNEL removed from its "
				 "environment");
		return;
	}
	if (o->kernel_name && st->nkernels && !any_match) {
		ks_quote(q, sizeof(q), o->kernel_name, strlen(o->kernel_name));
		ks_log(as_error ? KS_LOG_ERROR : KS_LOG_WARN,
		       "--kernel-name '%s' matched none of the kernels the program "
		       "launched: %s", q, names);
		return;
	}
	ks_log(as_error ? KS_LOG_ERROR : KS_LOG_WARN,
	       "no kernel launch passed the filters (--launch-skip-before-match %" PRId64
	       "%s%s); kernels launched: %s", o->skip,
	       o->mstx == ON ? ", --mstx on" : "",
	       o->mode == MODE_RANGE ? ", range replay: no range was collected" : "",
	       st->nkernels ? names : "none");
}

/* ------------------------------------------------------------------ */
/* The command                                                         */
/* ------------------------------------------------------------------ */

/* Gives kscope back the signal mask it started with.  Signals still
 * pending in the signalfd (a second Ctrl+C, the program's SIGCHLD) are
 * read first: unblocked, they would end kscope before it returns its
 * exit status. */
static void restore_signals(struct op_state *st)
{
	struct signalfd_siginfo si;

	if (st->sigfd >= 0)
		while (read(st->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
	sigprocmask(SIG_SETMASK, &st->oldmask, NULL);
}

static void state_free(struct op_state *st)
{
	listener_remove(st);
	for (size_t i = 0; i < st->nkernels; i++)
		free(st->kernels[i]);
	free(st->kernels);
	free(st->kernel_pids);
	for (size_t i = 0; i < st->nlaunches; i++) {
		free(st->launches[i].app_ns);
		free(st->launches[i].app_run);
	}
	free(st->launches);
	free(st->counts);
	ks_expr_free(st->flops);
	for (size_t i = 0; i < st->nkflops; i++)
		ks_expr_free(st->kflops[i].expr);
	free(st->kflops);
	ks_op_filter_free(st->name_filter);
	free(st->prog);
	free(st->nvtx_env);
	free(st->in);
	free(st->out);
	if (st->sigfd >= 0)
		close(st->sigfd);
}

/* ------------------------------------------------------------------ */
/* --simulate                                                          */
/* ------------------------------------------------------------------ */

/* The options of the on-board profiler and of --simulate: each applies to
 * one of the two only. */
static const char *const onboard_only[] = {
	"launch-skip-before-match", "launch-count", "replay-mode", "warm-up",
	"replay-count", "cache-flush", "backup", "kill", "mstx", "mstx-include",
	"flops", NULL
};
static const char *const simulate_only[] = {
	"threads", "cache", "clock", "trace-limit", "mem-latency", "kernel-lines",
	"dump", "soc-version", NULL
};

static bool given(struct ks_parsed *ps, const char *name)
{
	return ps->given[ks_opt_find(op_opts, name) - op_opts];
}

static bool simulate_only_given(struct ks_parsed *ps)
{
	for (const char *const *n = simulate_only; *n; n++)
		if (given(ps, *n))
			return true;
	return false;
}

/* Seconds in a --timeout minute: 60, or KSCOPE_OP_TEST_MINUTE_S (a test
 * hook, 0.1 to 60, so that tests of --timeout take seconds). */
static double minute_s(void)
{
	const char *v = getenv("KSCOPE_OP_TEST_MINUTE_S");
	double s = v && *v ? strtod(v, NULL) : 0;

	return s >= 0.1 && s <= 60 ? s : 60;
}

static int simulate(struct op_state *st, struct ks_parsed *ps)
{
	const struct op_opts *o = st->o;
	struct ks_op_sim_args a = {
		.kernel_name = o->kernel_name,
		.threads = o->threads,
		.cache = o->cache,
		.clock_ghz = o->clock_ghz,
		.trace_limit = o->trace_limit,
		.mem_latency = o->mem_latency,
		.kernel_lines = o->kernel_lines == ON,
		.timeout_min = o->timeout,
		.minute_s = minute_s(),
		.output = o->output,
		.program = ps->program,
		.dump = o->dump == ON,
	};
	const struct ks_op_soc *soc = NULL;
	struct ks_err err;
	int rc;

	ks_err_clear(&err);
	if (!o->simulate) {
		for (const char *const *n = simulate_only; *n; n++)
			if (given(ps, *n)) {
				ks_error("option --%s applies to --simulate only%s", *n,
					 strcmp(*n, "dump") == 0 ? ": an on-board run has no "
					 "simulator dump, and keeps its raw records "
					 "(context.json, measure.json) always" : "");
				break;
			}
		state_free(st);
		return KS_EXIT_USAGE;
	}
	for (const char *const *n = onboard_only; *n; n++)
		if (given(ps, *n)) {
			ks_error("option --%s does not apply to --simulate, which runs "
				 "the program once on kscope's instruction-level engine",
				 *n);
			state_free(st);
			return KS_EXIT_USAGE;
		}
	if (o->soc && !(soc = ks_op_soc_find(o->soc, &err))) {
		ks_error("%s", err.msg);
		state_free(st);
		return KS_EXIT_USAGE;
	}
	if (soc) {
		/* The preset's parts that --cache and --clock do not give. */
		a.soc = soc->name;
		if (!a.cache)
			a.cache = soc->cache;
		if (a.clock_ghz <= 0)
			a.clock_ghz = soc->ghz;
		ks_info("--soc-version %s: %s; caches %s, clock %.1f GHz", soc->name,
			soc->machine, a.cache, a.clock_ghz);
	}
	if ((rc = check_filter("kernel-name", o->kernel_name, &st->name_filter, &err)) ||
	    (rc = ks_op_metrics_parse(o->metrics, true, &a.metrics, &err)) ||
	    (rc = ks_op_sim_check(&a, &err))) {
		ks_error("%s", err.msg);
		state_free(st);
		return KS_EXIT_USAGE;
	}
	state_free(st);
	return ks_op_simulate(&a);
}

/* summary.csv of every launch, into the run directory; a failure sets
 * write_failed. */
static void write_summary(struct op_state *st)
{
	struct ks_oppost_result *res = calloc(st->nlaunches, sizeof(*res));
	struct ks_err err;

	ks_err_clear(&err);
	if (!res) {
		ks_error("out of memory");
		st->write_failed = true;
		return;
	}
	for (size_t i = 0; i < st->nlaunches; i++)
		res[i] = st->launches[i].res;
	if (ks_oppost_summary(&st->rd, res, st->nlaunches, &err)) {
		ks_error("%s: %s", st->rd.path, err.msg);
		st->write_failed = true;
	}
	free(res);
}

/* --export: copies one launch's raw files from dir/rel into the new run
 * directory; 0 or a negative errno. */
static int export_copy(int from, int to, const char *rel)
{
	static const char *const raw[] = { KS_OP_CONTEXT_FILE, KS_OP_MEASURE_FILE,
					   "kernel.cl", "kernel.bin", "kernel.il" };
	char path[PATH_MAX], buf[65536];
	const char *slash = strchr(rel, '/');
	int rc = 0;

	snprintf(path, sizeof(path), "%.*s", (int)(slash - rel), rel);
	if ((mkdirat(to, path, KS_DIR_MODE) != 0 && errno != EEXIST) ||
	    (mkdirat(to, rel, KS_DIR_MODE) != 0 && errno != EEXIST))
		return -errno;
	for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]) && !rc; i++) {
		int in, out;
		ssize_t n;

		snprintf(path, sizeof(path), "%s/%s", rel, raw[i]);
		in = openat(from, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0)
			continue;
		out = openat(to, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			     KS_FILE_MODE);
		if (out < 0) {
			rc = -errno;
			close(in);
			break;
		}
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n) {
				rc = -EIO;
				break;
			}
		if (n < 0)
			rc = -errno;
		close(in);
		if (close(out) != 0 && !rc)
			rc = -errno;
	}
	return rc;
}

static int cmp_launch(const void *a, const void *b)
{
	const struct launch_rec *x = a, *y = b;

	return x->pid != y->pid ? (x->pid < y->pid ? -1 : 1)
	       : x->index != y->index ? (x->index < y->index ? -1 : 1)
	       : strcmp(x->name, y->name);
}

/* The launches of run directory dir: <pid>/<kernel>_<index>/ holding a
 * context.json, into st->launches (rel, pid, name, index). */
static int export_scan(struct op_state *st, int dirfd)
{
	DIR *top = fdopendir(dup(dirfd));
	struct dirent *p;

	if (!top)
		return -errno;
	rewinddir(top);                   /* dup() shares the offset */
	while ((p = readdir(top))) {
		DIR *sub;
		struct dirent *k;
		int fd;

		if (!p->d_name[0] || strspn(p->d_name, "0123456789") != strlen(p->d_name) ||
		    (fd = openat(dirfd, p->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				 O_CLOEXEC)) < 0)
			continue;
		sub = fdopendir(fd);
		if (!sub) {
			close(fd);
			continue;
		}
		while ((k = readdir(sub))) {
			const char *us = strrchr(k->d_name, '_');
			struct launch_rec *l;
			char ctx[600];

			if (!us || us == k->d_name || !us[1] ||
			    strspn(us + 1, "0123456789") != strlen(us + 1))
				continue;
			snprintf(ctx, sizeof(ctx), "%s/%s", k->d_name, KS_OP_CONTEXT_FILE);
			if (faccessat(fd, ctx, R_OK, 0) != 0)
				continue;
			l = realloc(st->launches, (st->nlaunches + 1) * sizeof(*l));
			if (!l) {
				closedir(sub);
				closedir(top);
				return -ENOMEM;
			}
			st->launches = l;
			l = &st->launches[st->nlaunches++];
			memset(l, 0, sizeof(*l));
			l->pid = strtoll(p->d_name, NULL, 10);
			snprintf(l->name, sizeof(l->name), "%.*s", (int)(us - k->d_name),
				 k->d_name);
			l->index = strtoull(us + 1, NULL, 10);
			snprintf(l->rel, sizeof(l->rel), "%s/%s", p->d_name, k->d_name);
			snprintf(l->gsize, sizeof(l->gsize), "?");
			l->collected = true;
		}
		closedir(sub);
	}
	closedir(top);
	if (st->nlaunches)
		qsort(st->launches, st->nlaunches, sizeof(*st->launches), cmp_launch);
	return 0;
}

/* --export DIR: runs no program.  A --simulate run (hotspot.<pid>.raw)
 * is handed to op_simulate.c; an on-board run's raw files are copied into
 * a new run directory and its deliverables made there, as after a run,
 * with this run's --flops and calibration. */
static int export_run(struct op_state *st, struct ks_parsed *ps)
{
	const struct op_opts *o = st->o;
	const char *dir = o->export_dir;
	struct ks_err err;
	struct dirent *e;
	char sim_raw[300] = "";
	int dirfd, rc, exit_code = KS_EXIT_OK;
	DIR *d;

	ks_err_clear(&err);
	if (ps->program) {
		ks_error("option --export rebuilds the deliverables of a run and runs no "
			 "program: give no -- PROGRAM");
		return KS_EXIT_USAGE;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		ks_error("option --export: '%s' is not a directory kscope can read: %s; "
			 "accepted: a run directory of kscope op (op_... or simulate_...)",
			 dir, strerror(errno));
		return KS_EXIT_USAGE;
	}
	d = fdopendir(dup(dirfd));
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "hotspot.", 8) && strlen(e->d_name) > 12 &&
		    !strcmp(e->d_name + strlen(e->d_name) - 4, ".raw"))
			snprintf(sim_raw, sizeof(sim_raw), "%s", e->d_name);
	if (d)
		closedir(d);
	if (sim_raw[0]) {
		static const char *const ran[] = {
			"threads", "cache", "trace-limit", "mem-latency", "kernel-lines",
			"dump", "soc-version", NULL
		};
		unsigned metrics;

		close(dirfd);
		for (const char *const *n = ran; *n; n++)
			if (given(ps, *n)) {
				ks_error("option --%s does not apply to --export: the "
					 "simulation of '%s' has run already (--clock and "
					 "--aic-metrics do)", *n, dir);
				return KS_EXIT_USAGE;
			}
		if (ks_op_metrics_parse(o->metrics, true, &metrics, &err)) {
			ks_error("%s", err.msg);
			return KS_EXIT_USAGE;
		}
		return ks_op_simulate_export(dir, sim_raw, o->output, o->clock_ghz,
					     metrics);
	}
	if ((rc = export_scan(st, dirfd)) != 0 || st->nlaunches == 0) {
		close(dirfd);
		if (rc)
			ks_error("option --export: reading '%s': %s", dir, strerror(-rc));
		else
			ks_error("option --export: '%s' holds no collected launch (expected "
				 "<pid>/<kernel>_<index>/context.json, or a --simulate run's "
				 "hotspot.<pid>.raw)", dir);
		return KS_EXIT_USAGE;
	}
	for (const char *const *n = simulate_only; *n; n++)
		if (given(ps, *n)) {
			close(dirfd);
			ks_error("option --%s applies to --simulate runs; '%s' is an "
				 "on-board run", *n, dir);
			return KS_EXIT_USAGE;
		}
	if (check_options(st, &err)) {
		close(dirfd);
		ks_error("%s", err.msg);
		return KS_EXIT_USAGE;
	}
	if (ks_rundir_create(o->output, "op", 0, &st->rd, &err)) {
		close(dirfd);
		ks_error("%s", err.msg);
		return KS_EXIT_FAIL;
	}
	ks_info("op --export: the deliverables of %zu launch%s of %s, into %s", st->nlaunches,
		st->nlaunches == 1 ? "" : "es", dir, st->rd.path);
	for (size_t i = 0; i < st->nlaunches; i++) {
		struct launch_rec *l = &st->launches[i];

		if ((rc = export_copy(dirfd, st->rd.dirfd, l->rel)) != 0) {
			ks_error("%s: copying its raw files: %s", l->rel, strerror(-rc));
			st->write_failed = true;
			continue;
		}
		build(st, l, false);
		st->ncollected++;
	}
	close(dirfd);
	write_summary(st);
	print_summary(stderr, st);
	print_notes(stderr, st);
	if (st->write_failed)
		exit_code = KS_EXIT_FAIL;
	ks_rundir_close(&st->rd);
	return exit_code;
}

static int op_run(const struct ks_cmd *cmd, struct ks_parsed *ps)
{
	struct op_state st = { .o = ps->opts, .argv = ps->program, .sigfd = -1, .lsock = -1 };
	struct op_run run0 = { .no = 0 };
	struct ks_err err;
	sigset_t mask;
	int exit_code, rc;

	(void)cmd;
	ks_err_clear(&err);
	if (st.o->export_dir) {
		exit_code = export_run(&st, ps);
		state_free(&st);
		return exit_code;
	}
	if (st.o->simulate || simulate_only_given(ps))
		return simulate(&st, ps);
	/* Everything is checked before anything is created or started. */
	if (check_options(&st, &err) ||
	    ks_find_program(ps->program[0], &st.prog, &err) ||
	    ks_check_dynamic(st.prog, "kscope op", "its runtime libkscope-op.so", &err)) {
		ks_error("%s", err.msg);
		state_free(&st);
		return KS_EXIT_USAGE;
	}
	if (ks_find_own_file("libkscope-op.so", R_OK, "kscope op's runtime libkscope-op.so",
			     st.runtime, sizeof(st.runtime), &err) ||
	    make_token(st.token, &err) || nvtx_setup(&st, &err)) {
		ks_error("%s", err.msg);
		state_free(&st);
		return KS_EXIT_FAIL;
	}
	st.in = malloc(sizeof(*st.in));
	st.out = malloc(sizeof(*st.out));
	if (!st.in || !st.out) {
		ks_error("out of memory");
		state_free(&st);
		return KS_EXIT_FAIL;
	}
	if (st.o->mode == MODE_APPLICATION && ps->given[ks_opt_find(op_opts, "warm-up") - op_opts])
		ks_info("--warm-up does not apply to application replay: each pass is "
			"a run of the program");
	/* SIGCHLD, SIGINT and SIGTERM arrive through the signalfd.  They are
	 * blocked before anything can start a thread (reading the calibration
	 * may load the OpenCL runtime, which starts some): a thread that left
	 * them unblocked would take them and they would never reach it. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &st.oldmask);
	st.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (st.sigfd < 0) {
		ks_error("signalfd: %s", strerror(errno));
		restore_signals(&st);
		state_free(&st);
		return KS_EXIT_FAIL;
	}
	if (ks_rundir_reserve(st.o->output, "op", &st.rd, &err)) {
		ks_error("%s", err.msg);
		restore_signals(&st);
		state_free(&st);
		return KS_EXIT_FAIL;
	}
	if (listener_make(&st, &err)) {
		ks_error("%s", err.msg);
		restore_signals(&st);
		ks_rundir_discard(&st.rd);
		state_free(&st);
		return KS_EXIT_FAIL;
	}
	st.tty = isatty(STDERR_FILENO) == 1;
	if (st.o->timeout > 0)
		st.deadline = now_s() + (double)st.o->timeout * minute_s();
	ks_info("profiling %s; results in %s", st.prog, st.rd.path);

	rc = run_program(&st, &run0, &err);
	if (rc) {
		ks_error("%s", err.msg);
		restore_signals(&st);
		ks_rundir_discard(&st.rd);
		state_free(&st);
		return KS_EXIT_USAGE;
	}
	if (WIFSIGNALED(run0.status) && !run0.killed_by_kill)
		ks_info("the program was ended by signal %d (%s)", WTERMSIG(run0.status),
			strsignal(WTERMSIG(run0.status)));
	if (st.o->mode == MODE_APPLICATION && st.ncollected)
		application_runs(&st, &run0);
	/* Launches whose `collected` never came: what their raw files hold. */
	for (size_t i = 0; i < st.nlaunches; i++)
		if (!st.launches[i].collected) {
			ks_warn("%s (launch %llu) is incomplete: the program ended during "
				"its replay", st.launches[i].name, st.launches[i].index);
			build(&st, &st.launches[i], false);
		}

	exit_code = st.interrupted ? 128 + st.interrupted
		    : run0.killed_by_kill ? KS_EXIT_OK
		    : ks_exit_status(run0.status);
	if (st.nlaunches == 0) {
		bool clean = exit_code == 0 && !st.interrupted && !st.timed_out;

		explain_nothing(&st, clean);
		progress_clear(&st);
		fprintf(stderr, "kscope op: 0 kernel(s) collected (replay mode %s)\n",
			mode_choices[st.o->mode]);
		print_counts(stderr, &st);
		ks_rundir_discard(&st.rd);
		restore_signals(&st);
		state_free(&st);
		return clean ? KS_EXIT_FAIL : exit_code;
	}
	write_summary(&st);
	progress_clear(&st);
	print_summary(stderr, &st);
	print_counts(stderr, &st);
	print_notes(stderr, &st);
	fflush(stderr);
	/* kscope's own failure wins over the program's status (cli.h). */
	if (st.write_failed)
		exit_code = KS_EXIT_FAIL;
	ks_rundir_close(&st.rd);
	restore_signals(&st);
	state_free(&st);
	return exit_code;
}

const struct ks_cmd ks_cmd_op = {
	.name = "op",
	.summary = "profile the OpenCL kernels of a program, one launch at a time",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM with kscope's OpenCL runtime libkscope-op.so preloaded.\n"
		"Kernel launches are filtered in this order: --launch-skip-before-match,\n"
		"the user ranges (--mstx on), --kernel-name, --launch-count; --kill on\n"
		"then stops the program.  Each collected launch is replayed on its\n"
		"device: the buffers it may write are backed up and restored before\n"
		"every pass, the cache is flushed, --warm-up launches run, then\n"
		"--replay-count passes are timed with OpenCL profiling events; the\n"
		"program's own launch then runs as usual, so its output is unchanged.\n"
		"--replay-mode application reruns the whole program once per pass;\n"
		"range replays each kscope_range_start/end range as a whole.\n"
		"Each launch gets <output>/op_<YYYYmmdd_HHMMSS>_<pid>/<pid>/<kernel>_<index>/\n"
		"with context.json, kernel.cl, measure.json, OpBasicInfo.csv, Timing.csv,\n"
		"Memory.csv, trace.json and visualize_data.bin; summary.csv lists them,\n"
		"and a summary is printed on stderr (docs/op.md).  kscope exits with\n"
		"the program's status (128+N if signal N ended it); 1 if the program\n"
		"succeeded but nothing was collected, or a deliverable could not be\n"
		"written; 0 when --kill stopped it; 128+N when signal N interrupted it.\n"
		"With --simulate, the program runs once on kscope's instruction-level\n"
		"engine instead: per source line and instruction, executions, simulated\n"
		"cycles, bytes, FLOPs and cache hits, bandwidth and pipeline charts, in\n"
		"<output>/simulate_<YYYYmmdd_HHMMSS>_<pid>/ (docs/simulate.md).",
	.args = {
		.opts = op_opts,
		.opts_size = sizeof(struct op_opts),
		.takes_program = true,
	},
	.run = op_run,
};
