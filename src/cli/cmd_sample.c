/*
 * kscope sample: the whole-program sampling profiler's launcher.
 *
 *     kscope sample [options] -- PROGRAM [ARGS...]
 *
 * Checks every option and the program (it must exist, be executable and
 * be dynamically linked), creates the run directory, turns the options
 * into the KSCOPE_* environment variables of the option table, puts
 * libkscope.so in LD_PRELOAD and runs the program.  When it ends, the raw
 * samples are symbolized (src/sample/post.c) and written as profile.db,
 * the trace, flat and tree reports; a short summary and the run directory
 * are printed on stderr (stdout is the program's).  kscope exits with the
 * program's exit status (128+N if a signal N ended it), or 1 if profiling
 * itself failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argcheck.h"
#include "cli.h"
#include "ks_version.h"
#include "log.h"
#include "mpirank.h"
#include "outdir.h"
#include "post.h"
#include "profile.h"
#include "runprog.h"
#include "spec.h"
#include "store.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

struct sample_opts {
	struct ks_common_opts common;
	char *output;
	int64_t freq;
	int64_t cputime_freq;   /* -1: --freq */
	int64_t realtime_freq;  /* -1: --freq when the real-time sampler is on */
	int samplers;           /* index into sampler_choices */
	double delay, duration;
	char *tids;
	char *periods;
	int unwind;             /* index into unwind_choices */
	char *counters;
	int64_t buffer_samples;
	int trace_format;       /* index into trace_choices */
	int format;             /* index into format_choices */
	bool keep_raw;
	bool keep_running;      /* leave the program running if kscope dies */
};

static const char *const sampler_choices[] = { "cputime", "realtime", "both", NULL };
static const char *const unwind_choices[] = { "libunwind", "fp", NULL };
static const char *const trace_choices[] = { "perfetto", "json", "both", "none", NULL };
static const char *const format_choices[] = { "text", "json", NULL };

#define OPT(field) .offset = offsetof(struct sample_opts, field)

static const struct ks_opt sample_opts[] = {
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR",
	  .def = "kscope-out", .env = "KSCOPE_OUTPUT",
	  .help = "where the run directory is created", OPT(output) },
	{ .name = "freq", .short_name = 'F', .type = KS_OPT_INT, .metavar = "HZ",
	  .def = "300", .env = "KSCOPE_FREQ",
	  .help = "samples per second for every sampler", OPT(freq),
	  .min = 1, .max = 10000 },
	{ .name = "cputime-freq", .type = KS_OPT_INT, .metavar = "HZ", .def = "-1",
	  .env = "KSCOPE_CPUTIME_FREQ",
	  .help = "samples per CPU-second of each thread (-1: --freq)",
	  OPT(cputime_freq), .min = -1, .max = 10000 },
	{ .name = "realtime-freq", .type = KS_OPT_INT, .metavar = "HZ", .def = "-1",
	  .env = "KSCOPE_REALTIME_FREQ",
	  .help = "samples per second of wall-clock time (-1: --freq)",
	  OPT(realtime_freq), .min = -1, .max = 10000 },
	{ .name = "samplers", .type = KS_OPT_ENUM, .metavar = "WHICH", .def = "cputime",
	  .env = "KSCOPE_SAMPLERS",
	  .help = "the CPU-time sampler, the real-time sampler, or both",
	  OPT(samplers), .choices = sampler_choices },
	{ .name = "delay", .type = KS_OPT_DOUBLE, .metavar = "SEC", .def = "0",
	  .env = "KSCOPE_DELAY", .help = "seconds to wait before sampling",
	  OPT(delay), .dmin = 0, .dmax = 86400 },
	{ .name = "duration", .type = KS_OPT_DOUBLE, .metavar = "SEC", .def = "0",
	  .env = "KSCOPE_DURATION",
	  .help = "seconds to sample after the delay (0: until the program ends)",
	  OPT(duration), .dmin = 0, .dmax = 86400 },
	{ .name = "tids", .type = KS_OPT_NAME, .metavar = "LIST", .env = "KSCOPE_TIDS",
	  .help = "sample only these threads, by creation order (0 = main), "
		  "e.g. 0,2-4",
	  OPT(tids), .name_extra = ",-", .max_len = 1024 },
	{ .name = "periods", .type = KS_OPT_STRING, .metavar = "SPECS",
	  .env = "KSCOPE_PERIODS",
	  .help = "time windows \"clock:delay:duration:cycles ...\", run one "
		  "after the other from the end of --delay; clocks realtime, "
		  "monotonic, boottime, process_cputime and the others of "
		  "docs/sample.md, e.g. realtime:10:1:5",
	  OPT(periods), .max_len = 1024 },
	{ .name = "unwind", .type = KS_OPT_ENUM, .metavar = "HOW", .def = "libunwind",
	  .env = "KSCOPE_UNWIND",
	  .help = "how call stacks are walked: libunwind, or frame pointers",
	  OPT(unwind), .choices = unwind_choices },
	{ .name = "counters", .type = KS_OPT_NAME, .metavar = "LIST",
	  .env = "KSCOPE_COUNTERS",
	  .help = "per-sample counters, e.g. cycles,instructions (see "
		  "'kscope avail')",
	  OPT(counters), .name_extra = ",-_", .max_len = 512 },
	{ .name = "buffer-samples", .type = KS_OPT_INT, .metavar = "N", .def = "1024",
	  .env = "KSCOPE_BUFFER_SAMPLES",
	  .help = "samples each thread buffers before handing them to the writer",
	  OPT(buffer_samples), .min = 1024, .max = 1048576 },
	{ .name = "trace-format", .type = KS_OPT_ENUM, .metavar = "FMT",
	  .def = "perfetto", .env = "KSCOPE_TRACE_FORMAT",
	  .help = "timeline trace: Perfetto protobuf, Chrome JSON, both or none",
	  OPT(trace_format), .choices = trace_choices },
	{ .name = "format", .type = KS_OPT_ENUM, .metavar = "FMT", .def = "text",
	  .env = "KSCOPE_FORMAT",
	  .help = "flat and tree reports as text (flat.txt) or JSON (flat.json)",
	  OPT(format), .choices = format_choices },
	{ .name = "keep-raw", .type = KS_OPT_FLAG, .env = "KSCOPE_KEEP_RAW",
	  .help = "keep the raw sample files (raw/) after post-processing",
	  OPT(keep_raw) },
	{ .name = "keep-running", .type = KS_OPT_FLAG, .env = "KSCOPE_KEEP_RUNNING",
	  .help = "if kscope itself is killed, leave the program running (by "
		  "default it is killed with it)",
	  OPT(keep_running) },
	KS_COMMON_OPTS(struct sample_opts),
	KS_OPT_END
};

/* Environment variables only the runtime reads (not options). */
#define ENV_RUN_DIR "KSCOPE_RUN_DIR"
#define ENV_RANK    "KSCOPE_RANK"

/* ------------------------------------------------------------------ */
/* Checks beyond the option table                                      */
/* ------------------------------------------------------------------ */

/* --tids, --periods and --counters are parsed by spec.c, the code the
 * runtime parses them with, so whatever passes here the runtime holds:
 * nothing it would drop (a 65th range, a window past its limits) gets
 * through to be ignored in the program. */
static int check_spec(const struct sample_opts *o, struct ks_err *err)
{
	struct ks_spec_tidrange tids[KS_SPEC_MAX_TIDRANGES];
	struct ks_spec_period periods[KS_SPEC_MAX_PERIODS];
	char counters[KS_SPEC_MAX_COUNTERS][KS_SPEC_COUNTER_NAME_MAX + 1];
	char why[512];
	size_t n;

	if (o->tids && ks_spec_parse_tids(o->tids, tids, &n, why, sizeof(why)))
		return ks_err_set(err, -EINVAL, "option --tids: %s", why);
	if (o->periods && ks_spec_parse_periods(o->periods, periods, &n, why, sizeof(why)))
		return ks_err_set(err, -EINVAL, "option --periods: %s", why);
	if (o->periods && ks_spec_check_windows(periods, n, (uint64_t)(o->duration * 1e9 + 0.5),
						why, sizeof(why)))
		return ks_err_set(err, -EINVAL, "option --periods: %s", why);
	if (o->counters && ks_spec_parse_counters(o->counters, counters, &n, why,
						  sizeof(why)))
		return ks_err_set(err, -EINVAL, "option --counters: %s", why);
	return 0;
}

/* libkscope.so: next to the executable in a build tree (build/lib/), or
 * in <prefix>/lib/kscope/ when installed. */
static int find_runtime(char *out, size_t size, struct ks_err *err)
{
	return ks_find_own_file("libkscope.so", R_OK, "kscope's sampler library libkscope.so",
				out, size, err);
}

/* ------------------------------------------------------------------ */
/* Run directory (MPI-aware)                                           */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* Running the program                                                 */
/* ------------------------------------------------------------------ */

static const char *opt_env(const char *name)
{
	return ks_opt_find(sample_opts, name)->env;
}

static int build_env(const struct sample_opts *o, const char *rundir,
		     const char *runtime, int rank, struct ks_env *e)
{
	const char *preload = getenv("LD_PRELOAD");
	int64_t cpu = o->samplers == 1 ? 0 : (o->cputime_freq >= 0 ? o->cputime_freq : o->freq);
	int64_t real = o->samplers == 0 ? 0 : (o->realtime_freq >= 0 ? o->realtime_freq : o->freq);
	char num[64], *pre = NULL;
	int rc = 0;

	if (ks_env_init(e))
		return -ENOMEM;
	rc |= ks_env_set(e, ENV_RUN_DIR, rundir);
	snprintf(num, sizeof(num), "%" PRId64, cpu);
	rc |= ks_env_set(e, opt_env("cputime-freq"), num);
	snprintf(num, sizeof(num), "%" PRId64, real);
	rc |= ks_env_set(e, opt_env("realtime-freq"), num);
	snprintf(num, sizeof(num), "%.9g", o->delay);
	rc |= ks_env_set(e, opt_env("delay"), num);
	snprintf(num, sizeof(num), "%.9g", o->duration);
	rc |= ks_env_set(e, opt_env("duration"), num);
	rc |= ks_env_set(e, opt_env("tids"), o->tids ? o->tids : "");
	rc |= ks_env_set(e, opt_env("periods"), o->periods ? o->periods : "");
	rc |= ks_env_set(e, opt_env("unwind"), unwind_choices[o->unwind]);
	rc |= ks_env_set(e, opt_env("counters"), o->counters ? o->counters : "");
	snprintf(num, sizeof(num), "%" PRId64, o->buffer_samples);
	rc |= ks_env_set(e, opt_env("buffer-samples"), num);
	rc |= ks_env_set(e, opt_env("log-level"), ks_log_level_choices[o->common.log_level]);
	snprintf(num, sizeof(num), "%d", rank);
	rc |= ks_env_set(e, ENV_RANK, num);
	if (preload && *preload) {
		if (asprintf(&pre, "%s:%s", runtime, preload) < 0)
			pre = NULL;
	} else {
		pre = strdup(runtime);
	}
	rc |= pre ? ks_env_set(e, "LD_PRELOAD", pre) : -ENOMEM;
	free(pre);
	if (rc) {
		ks_env_free(e);
		return -ENOMEM;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Outputs                                                             */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* The command                                                         */
/* ------------------------------------------------------------------ */

static void add_run_meta(struct ks_profile *p, const struct sample_opts *o,
			 char **argv, int status)
{
	char buf[4096];
	size_t off = 0;

	for (int i = 0; argv[i] && off < sizeof(buf); i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? " " : "",
					argv[i]);
	ks_profile_meta(p, "command", buf);
	ks_profile_meta(p, "kscope_version", KS_VERSION);
	ks_profile_meta(p, "samplers", sampler_choices[o->samplers]);
	if (WIFEXITED(status))
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "signal %d", WTERMSIG(status));
	else
		snprintf(buf, sizeof(buf), "unknown");
	ks_profile_meta(p, "program_status", buf);
}

/* The summary goes to stderr: the program's standard output stays its
 * own (`kscope sample -- prog > out` gives prog's out). */
static void print_summary(FILE *out, const struct ks_profile *p,
			  const struct ks_post_stats *st)
{
	struct ks_report_opts ro = { .thread = KS_NONE, .min_pct = 0.5 };
	struct ks_err err;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int lines = 0;

	fprintf(out, "kscope sample: %" PRIu64 " samples, %zu thread%s, %zu process%s",
		st->samples, p->n_threads, p->n_threads == 1 ? "" : "s",
		p->n_processes, p->n_processes == 1 ? "" : "es");
	if (p->dropped_samples)
		fprintf(out, ", %" PRIu64 " dropped", p->dropped_samples);
	fprintf(out, "\n");
	if (!mem)
		return;
	if (ks_report_flat(mem, p, &ro, &err) == 0) {
		fflush(mem);
		/* The head of the flat profile: its header and top functions. */
		for (char *line = buf, *nl; line && *line && lines < 12; line = nl) {
			nl = strchr(line, '\n');
			if (nl)
				*nl++ = '\0';
			fprintf(out, "  %s\n", line);
			lines++;
		}
	}
	fclose(mem);
	free(buf);
}

static int sample_run(const struct ks_cmd *cmd, struct ks_parsed *ps)
{
	const struct sample_opts *o = ps->opts;
	char runtime[PATH_MAX], *prog = NULL, **argv;
	struct ks_env env;
	struct ks_rundir rd;
	struct ks_profile prof;
	struct ks_post_stats st;
	struct ks_err err;
	int rank = ks_mpi_rank(), status, exit_code;

	(void)cmd;
	ks_err_clear(&err);
	/* Everything is checked before anything is created or launched. */
	if (check_spec(o, &err) ||
	    ks_find_program(ps->program[0], &prog, &err) ||
	    ks_check_dynamic(prog, "kscope sample", "its sampler", &err)) {
		ks_error("%s", err.msg);
		free(prog);
		return KS_EXIT_USAGE;
	}
	if (find_runtime(runtime, sizeof(runtime), &err)) {
		ks_error("%s", err.msg);
		free(prog);
		return KS_EXIT_FAIL;
	}
	if (ks_mpi_rundir(o->output, "sample", rank, &rd, &err)) {
		ks_error("%s", err.msg);
		free(prog);
		return KS_EXIT_FAIL;
	}
	if (build_env(o, rd.path, runtime, rank, &env) != 0) {
		ks_error("out of memory");
		ks_rundir_discard(&rd);
		free(prog);
		return KS_EXIT_FAIL;
	}
	ks_info("profiling %s; results in %s", prog, rd.path);
	argv = ps->program;
	status = ks_run_program_tied(argv, env.envp, NULL, !o->keep_running, &err);
	free(prog);
	ks_env_free(&env);
	if (status < 0) {
		ks_error("%s", err.msg);
		ks_rundir_discard(&rd);
		return KS_EXIT_USAGE;
	}
	exit_code = ks_exit_status(status);
	if (WIFSIGNALED(status))
		ks_info("the program was ended by signal %d (%s); writing what was "
			"collected", WTERMSIG(status), strsignal(WTERMSIG(status)));

	ks_info("post-processing the samples");
	if (ks_profile_init(&prof, &err) || ks_post_build(rd.path, &prof, &st, &err)) {
		ks_error("%s", err.msg);
		ks_rundir_close(&rd);
		return KS_EXIT_FAIL;
	}
	if (st.damaged_files)
		ks_warn("%zu raw file%s ended in an incomplete record (%" PRIu64
			" bytes ignored): a process was killed while writing",
			st.damaged_files, st.damaged_files == 1 ? "" : "s",
			st.bytes_ignored);
	add_run_meta(&prof, o, argv, status);
	if (ks_run_write_outputs(&rd, &prof, o->format == 1, (unsigned)o->trace_format, &err)) {
		ks_error("%s: %s", rd.path, err.msg);
		ks_profile_free(&prof);
		ks_rundir_close(&rd);
		return KS_EXIT_FAIL;
	}
	if (!o->keep_raw)
		ks_run_remove_raw(&rd);
	print_summary(stderr, &prof, &st);
	if (st.slowed_samples)
		ks_warn("the real-time sampler slowed down: more than %u threads were "
			"live at %u Hz, beyond its budget of %u samples a second in "
			"all, so %" PRIu64 " of its samples stand for up to %" PRIu64
			" periods each (shares stay right; each thread's resolution "
			"is coarser; see docs/sample.md)",
			KS_RAW_REALTIME_BUDGET / (prof.realtime_freq ? prof.realtime_freq : 1),
			prof.realtime_freq, KS_RAW_REALTIME_BUDGET, st.slowed_samples,
			st.slowed_max_periods);
	if (st.samples == 0 && (o->delay > 0 || o->duration > 0 || o->periods))
		ks_warn("no samples: the time windows (--delay, --duration, --periods) "
			"were closed whenever the program's threads were sampled");
	fprintf(stderr, "results: %s\n", rd.path);
	ks_profile_free(&prof);
	ks_rundir_close(&rd);
	return exit_code;
}

const struct ks_cmd ks_cmd_sample = {
	.name = "sample",
	.summary = "profile any dynamically linked program by sampling its threads",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM with kscope's sampler preloaded: per-thread timers\n"
		"record call stacks (CPU time by default; wall-clock time with\n"
		"--samplers), user-API regions and MPI calls.  When the program ends,\n"
		"or is interrupted, the samples are symbolized and written to\n"
		"<output>/sample_<YYYYmmdd_HHMMSS>_<pid>/: profile.db (SQLite),\n"
		"trace.perfetto-trace, flat.txt, tree.txt and threads.txt.  Under\n"
		"mpirun each rank writes rank<K>/ of one shared directory; combine\n"
		"them with 'kscope merge'.  The summary goes to stderr; kscope exits\n"
		"with the program's status (128+N if signal N ended it).",
	.args = {
		.opts = sample_opts,
		.opts_size = sizeof(struct sample_opts),
		.takes_program = true,
	},
	.run = sample_run,
};
