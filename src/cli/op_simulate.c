/*
 * kscope op --simulate (op_simulate.h): the cache geometry (--cache, or
 * this machine's from sysfs), the simulated clock, the run of
 * `valgrind --tool=kscope --analysis=hotspot`, then the deliverables and
 * the summary.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "argcheck.h"
#include "calib.h"
#include "cli.h"
#include "log.h"
#include "op_simulate.h"
#include "outdir.h"
#include "readfile.h"
#include "runprog.h"
#include "simpost.h"
#include "simraw.h"
#include "vgrun.h"

/* Latencies (cycles) of an access served by the k-th level when --cache
 * does not give one, and of one no level holds.  docs/simulate.md, "The
 * cost model". */
static const int64_t default_latency[KS_SIM_MAX_LEVELS] = { 4, 14, 50, 80 };

struct level {
	char name[16];
	int64_t size, assoc, line, latency;
};

struct geometry {
	struct level l[KS_SIM_MAX_LEVELS];
	unsigned n;
	struct level icache; /* name unused */
	bool have_icache;
};

static bool pow2(int64_t v)
{
	return v > 0 && (v & (v - 1)) == 0;
}

/* "32k", "1M", "65536": bytes (k, m, g multiply by 1024, 1024^2, 1024^3). */
static bool parse_size(const char *s, size_t len, int64_t *out)
{
	int64_t v = 0, mul = 1;
	size_t i = 0;

	if (len == 0 || !isdigit((unsigned char)s[0]))
		return false;
	for (; i < len && isdigit((unsigned char)s[i]); i++) {
		if (v > INT64_MAX / 10 / 1024 / 1024 / 1024)
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (i < len) {
		switch (tolower((unsigned char)s[i])) {
		case 'k': mul = 1024; break;
		case 'm': mul = 1024 * 1024; break;
		case 'g': mul = 1024 * 1024 * 1024; break;
		default: return false;
		}
		if (++i != len)
			return false;
	}
	*out = v * mul;
	return true;
}

static bool parse_int(const char *s, size_t len, int64_t max, int64_t *out)
{
	int64_t v = 0;

	if (len == 0 || len > 12)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > max)
		return false;
	*out = v;
	return true;
}

/* Why level l cannot be simulated, or NULL. */
static const char *level_problem(const struct level *l)
{
	if (!pow2(l->line) || l->line < 16 || l->line > 4096)
		return "the line size must be a power of two from 16 to 4096";
	if (l->assoc > 1024)
		return "at most 1024 ways";
	if (l->size % (l->assoc * l->line) != 0)
		return "the size must be a multiple of ways x line size";
	if (!pow2(l->size / (l->assoc * l->line)))
		return "the number of sets (size / (ways x line size)) must be a "
		       "power of two";
	return NULL;
}

#define CACHE_ACCEPTED \
	"accepted: NAME=SIZE:WAYS:LINE[:LATENCY] for 1 to 4 levels, nearest " \
	"the core first, separated by commas, e.g. L1=32k:8:64,L2=1M:16:64," \
	"LL=32M:16:64 (SIZE in bytes with an optional k, m or g; LATENCY in " \
	"cycles)"

/* Length of field i of nf fields starting at f[], the last ending at end. */
static size_t field_len(const char *const *f, size_t nf, size_t i, const char *end)
{
	return (size_t)((i + 1 < nf ? f[i + 1] - 1 : end) - f[i]);
}

static int parse_cache(const char *spec, struct geometry *g, struct ks_err *err)
{
	const char *p = spec;
	char q[300];

	memset(g, 0, sizeof(*g));
	ks_quote(q, sizeof(q), spec, strlen(spec));
	for (;;) {
		const char *end = strchr(p, ','), *eq, *f[4];
		size_t len = end ? (size_t)(end - p) : strlen(p), nf = 0;
		struct level *l;
		const char *why;

		if (g->n == KS_SIM_MAX_LEVELS)
			return ks_err_set(err, -EINVAL, "option --cache: '%s' has more "
					  "than %d levels; " CACHE_ACCEPTED, q,
					  KS_SIM_MAX_LEVELS);
		l = &g->l[g->n];
		eq = memchr(p, '=', len);
		if (!eq || eq == p || (size_t)(eq - p) >= sizeof(l->name))
			return ks_err_set(err, -EINVAL, "option --cache: level %u of '%s' "
					  "has no NAME= (at most 15 characters); "
					  CACHE_ACCEPTED, g->n + 1, q);
		for (const char *c = p; c < eq; c++)
			if (!isalnum((unsigned char)*c) && *c != '_')
				return ks_err_set(err, -EINVAL, "option --cache: level %u "
						  "of '%s': the name may hold letters, "
						  "digits and '_'; " CACHE_ACCEPTED,
						  g->n + 1, q);
		memcpy(l->name, p, (size_t)(eq - p));
		f[nf++] = eq + 1;
		for (const char *c = eq + 1; c < p + len; c++)
			if (*c == ':') {
				if (nf == 4)
					goto bad_fields;
				f[nf++] = c + 1;
			}
		if (nf < 3)
			goto bad_fields;
#define FLEN(i) field_len(f, nf, i, p + len)
		if (!parse_size(f[0], FLEN(0), &l->size) || l->size < 1024 ||
		    l->size > ((int64_t)1 << 40))
			return ks_err_set(err, -EINVAL, "option --cache: level %s of '%s': "
					  "the size must be from 1k to 1024g; "
					  CACHE_ACCEPTED, l->name, q);
		if (!parse_int(f[1], FLEN(1), 1024, &l->assoc) ||
		    !parse_int(f[2], FLEN(2), 4096, &l->line))
			return ks_err_set(err, -EINVAL, "option --cache: level %s of '%s': "
					  "ways (1-1024) and line size (16-4096) must "
					  "be whole numbers; " CACHE_ACCEPTED, l->name, q);
		l->latency = default_latency[g->n];
		if (nf == 4 && !parse_int(f[3], FLEN(3), 100000, &l->latency))
			return ks_err_set(err, -EINVAL, "option --cache: level %s of '%s': "
					  "the latency must be from 1 to 100000 cycles; "
					  CACHE_ACCEPTED, l->name, q);
#undef FLEN
		if ((why = level_problem(l)))
			return ks_err_set(err, -EINVAL, "option --cache: level %s of '%s' "
					  "(%" PRId64 " bytes, %" PRId64 " ways, %" PRId64
					  "-byte lines) cannot be simulated: %s", l->name, q,
					  l->size, l->assoc, l->line, why);
		if (g->n && l->line < g->l[g->n - 1].line)
			return ks_err_set(err, -EINVAL, "option --cache: level %s of '%s' has "
					  "%" PRId64 "-byte lines, shorter than the %" PRId64
					  "-byte lines of the level above it; a level's lines "
					  "must be at least as long as those nearer the core",
					  l->name, q, l->line, g->l[g->n - 1].line);
		for (unsigned i = 0; i < g->n; i++)
			if (!strcmp(g->l[i].name, l->name))
				return ks_err_set(err, -EINVAL, "option --cache: '%s' names "
						  "level %s twice; " CACHE_ACCEPTED, q,
						  l->name);
		g->n++;
		if (!end)
			return 0;
		p = end + 1;
	}
bad_fields:
	return ks_err_set(err, -EINVAL, "option --cache: level %u of '%s' needs three "
			  "or four fields after '='; " CACHE_ACCEPTED, g->n + 1, q);
}

static int check_threads(const char *s, struct ks_err *err)
{
	const char *p = s;
	char q[300];

	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int64_t v;

		if (!parse_int(p, len, 100000, &v)) {
			ks_quote(q, sizeof(q), s, strlen(s));
			return ks_err_set(err, -EINVAL, "option --threads: '%s' is not a "
					  "list of threads; accepted: thread numbers "
					  "from 1 (the main thread) to 100000 separated "
					  "by commas, e.g. 1,3", q);
		}
		if (!end)
			return 0;
		p = end + 1;
	}
}

int ks_op_sim_check(const struct ks_op_sim_args *a, struct ks_err *err)
{
	struct geometry g;
	int rc;

	if (a->cache && (rc = parse_cache(a->cache, &g, err)))
		return rc;
	if (a->threads && (rc = check_threads(a->threads, err)))
		return rc;
	return 0;
}

/* ------------------------------------------------------------------ */
/* This machine                                                        */
/* ------------------------------------------------------------------ */

static bool sysfs_value(const char *dir, const char *file, char *buf, size_t size)
{
	char path[PATH_MAX];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (!(f = fopen(path, "re")))
		return false;
	ok = fgets(buf, (int)size, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* The data and unified caches of cpu0 (sysfs), nearest first, and its
 * instruction cache.  A level whose number of sets is not a power of two
 * (an 11-way 35.75 MiB L3, say) is simulated with the power of two just
 * below it and as many ways: a smaller cache, said on stderr. */
static int machine_geometry(struct geometry *g, struct ks_err *err)
{
	memset(g, 0, sizeof(*g));
	for (int idx = 0; idx < 16; idx++) {
		char dir[96], type[32], buf[64], size[64];
		struct level l = { 0 };
		int64_t level, sets;

		snprintf(dir, sizeof(dir), "/sys/devices/system/cpu/cpu0/cache/index%d", idx);
		if (!sysfs_value(dir, "type", type, sizeof(type)))
			break;
		if (!sysfs_value(dir, "level", buf, sizeof(buf)) ||
		    !parse_int(buf, strlen(buf), 9, &level) ||
		    !sysfs_value(dir, "size", size, sizeof(size)) ||
		    !parse_size(size, strlen(size), &l.size) ||
		    !sysfs_value(dir, "ways_of_associativity", buf, sizeof(buf)) ||
		    !parse_int(buf, strlen(buf), 1024, &l.assoc) ||
		    !sysfs_value(dir, "coherency_line_size", buf, sizeof(buf)) ||
		    !parse_int(buf, strlen(buf), 4096, &l.line))
			continue;
		snprintf(l.name, sizeof(l.name), "L%" PRId64, level);
		sets = l.size / (l.assoc * l.line);
		if (sets < 1)
			continue;
		if (!pow2(sets)) {
			int64_t p2 = 1;

			while (p2 * 2 <= sets)
				p2 *= 2;
			ks_info("%s (%s) has %" PRId64 " sets, not a power of two: "
				"simulated with %" PRId64 " sets of %" PRId64 " ways "
				"(%" PRId64 " KiB)", l.name, size, sets, p2, l.assoc,
				p2 * l.assoc * l.line / 1024);
			l.size = p2 * l.assoc * l.line;
		}
		if (!strcmp(type, "Instruction")) {
			if (level == 1 && !level_problem(&l)) {
				g->icache = l;
				g->have_icache = true;
			}
			continue;
		}
		if (strcmp(type, "Data") && strcmp(type, "Unified"))
			continue;
		if (g->n == KS_SIM_MAX_LEVELS || level_problem(&l))
			continue;
		g->l[g->n++] = l;
	}
	/* sysfs lists levels in order; keep them sorted all the same. */
	for (unsigned i = 1; i < g->n; i++)
		for (unsigned j = i; j > 0 && strcmp(g->l[j - 1].name, g->l[j].name) > 0; j--) {
			struct level t = g->l[j];
			g->l[j] = g->l[j - 1];
			g->l[j - 1] = t;
		}
	if (g->n == 0)
		return ks_err_set(err, -ENOENT, "this machine's caches cannot be read "
				  "from /sys/devices/system/cpu/cpu0/cache; give them "
				  "with --cache, e.g. L1=32k:8:64,LL=8M:16:64");
	for (unsigned i = 0; i < g->n; i++)
		g->l[i].latency = default_latency[i];
	return 0;
}

/* The clock in Hz: --clock, else /proc/cpuinfo's "cpu MHz" of the first
 * processor, else 1 GHz (said on stderr). */
static double machine_clock(double ghz)
{
	FILE *f;
	char line[256];
	double mhz = 0;

	if (ghz > 0)
		return ghz * 1e9;
	if ((f = fopen("/proc/cpuinfo", "re"))) {
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "cpu MHz", 7)) {
				const char *c = strchr(line, ':');
				if (c)
					mhz = strtod(c + 1, NULL);
				break;
			}
		fclose(f);
	}
	if (mhz > 0 && isfinite(mhz))
		return mhz * 1e6;
	ks_info("this machine's clock is unknown (/proc/cpuinfo has no \"cpu MHz\"): "
		"simulated time is at 1 GHz; --clock sets it");
	return 1e9;
}

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

static int build_argv(const struct ks_op_sim_args *a, const struct geometry *g,
		      double clock_hz, const char *valgrind, const char *rundir,
		      struct ks_argv *av)
{
	char *esc = ks_vg_escape_percent(rundir);
	char spec[512];
	size_t off = 0;
	int rc = 0;

	if (!esc)
		return -ENOMEM;
	for (unsigned i = 0; i < g->n; i++)
		off += (size_t)snprintf(spec + off, sizeof(spec) - off,
					"%s%s=%" PRId64 ":%" PRId64 ":%" PRId64 ":%" PRId64,
					i ? "," : "", g->l[i].name, g->l[i].size,
					g->l[i].assoc, g->l[i].line, g->l[i].latency);
	rc |= ks_argv_add(av, "%s", valgrind);
	rc |= ks_argv_add(av, "--tool=kscope");
	rc |= ks_argv_add(av, "--log-file=%s/valgrind.log", esc);
	rc |= ks_argv_add(av, "--analysis=hotspot");
	rc |= ks_argv_add(av, "--out=%s/hotspot.%%p.raw", esc);
	rc |= ks_argv_add(av, "--cache=%s", spec);
	if (g->have_icache)
		rc |= ks_argv_add(av, "--icache=%" PRId64 ":%" PRId64 ":%" PRId64,
				  g->icache.size, g->icache.assoc, g->icache.line);
	rc |= ks_argv_add(av, "--mem-latency=%" PRId64, a->mem_latency);
	rc |= ks_argv_add(av, "--interval=%.0f", fmax(1.0, round(clock_hz / 1e6)));
	/* No pipeline chart asked for: the engine records no block. */
	rc |= ks_argv_add(av, "--trace-limit=%" PRId64,
			  a->metrics & KS_SIM_METRIC_PIPE ? a->trace_limit : 0);
	if (a->kernel_name)
		rc |= ks_argv_add(av, "--region=%s", a->kernel_name);
	if (a->threads)
		rc |= ks_argv_add(av, "--threads=%s", a->threads);
	for (char **p = a->program; *p; p++)
		rc |= ks_argv_add(av, "%s", *p);
	free(esc);
	return rc ? -ENOMEM : 0;
}

/* --kernel-lines: vg's environment with PoCL told to build kernels with
 * line information and without optimization (PoCL drops the lines when
 * it inlines an optimized kernel into its work-group function), into a
 * cache of its own in the run directory, keeping the kernel sources it
 * compiled there (its temporary files) for the Source page.  NULL when
 * out of memory; *owned: the strings to free. */
static char **kernel_lines_env(char **base, const char *rundir, char *owned[3])
{
	const char *flags = getenv("POCL_EXTRA_BUILD_FLAGS");
	char dir[PATH_MAX + 32];
	size_t n = 0, k = 0;
	char **env;

	snprintf(dir, sizeof(dir), "%s/pocl-cache", rundir);
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return NULL;
	for (; base[n]; n++)
		;
	env = calloc(n + 4, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(base[i], "POCL_EXTRA_BUILD_FLAGS=", 23) &&
		    strncmp(base[i], "POCL_CACHE_DIR=", 15) &&
		    strncmp(base[i], "POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES=", 38))
			env[k++] = base[i];
	if (asprintf(&owned[0], "POCL_EXTRA_BUILD_FLAGS=%s%s-g -cl-opt-disable",
		     flags ? flags : "", flags && *flags ? " " : "") < 0)
		owned[0] = NULL;
	if (asprintf(&owned[1], "POCL_CACHE_DIR=%s", dir) < 0)
		owned[1] = NULL;
	owned[2] = strdup("POCL_LEAVE_KERNEL_COMPILER_TEMP_FILES=1");
	if (!owned[0] || !owned[1] || !owned[2]) {
		free(env);
		return NULL;
	}
	env[k++] = owned[0];
	env[k++] = owned[1];
	env[k++] = owned[2];
	env[k] = NULL;
	return env;
}

/* --timeout: the timer's handler asks the program (Valgrind) to stop as
 * Ctrl+C would, so that the tool writes what it simulated. */
static volatile sig_atomic_t timed_out;

static void on_timeout(int sig)
{
	(void)sig;
	timed_out = 1;
	ks_run_program_signal(SIGINT);
}

static void arm_timeout(const struct ks_op_sim_args *a)
{
	struct itimerval it = { 0 };
	struct sigaction sa;
	double s = (double)a->timeout_min * a->minute_s;

	if (a->timeout_min <= 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_timeout;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	it.it_value.tv_sec = (time_t)s;
	it.it_value.tv_usec = (suseconds_t)((s - (double)(time_t)s) * 1e6);
	setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_timeout(void)
{
	struct itimerval it = { 0 };

	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
}

static void warn_cb(void *ctx, const char *msg)
{
	(void)ctx;
	ks_warn("%s", msg);
}

static void print_summary(const struct ks_simpost_summary *s, double clock_hz,
			  unsigned metrics, const char *rundir)
{
	fprintf(stderr, "kscope op --simulate: %" PRIu64 " instructions, %" PRIu64
		" cycles on %u thread%s (%.6g ms at %.3g GHz), %" PRIu64 " FLOPs\n",
		s->instrs, s->cycles, s->threads, s->threads == 1 ? "" : "s",
		s->sim_seconds * 1e3, clock_hz / 1e9, s->flops);
	for (unsigned i = 0; i < s->levels; i++)
		if (s->level_acc[i])
			fprintf(stderr, "  %-4s %" PRIu64 " accesses, %" PRIu64
				" misses, hit rate %.2f%%\n", s->level_name[i],
				s->level_acc[i], s->level_miss[i],
				100.0 * (double)(s->level_acc[i] - s->level_miss[i]) /
					(double)s->level_acc[i]);
	/* What the pipeline chart shows of the run. */
	if ((metrics & KS_SIM_METRIC_PIPE) && (s->trace_blocks || s->trace_from[0]))
		fprintf(stderr, "  pipeline chart: %" PRIu64 " block executions %s, %.1f%% of "
			"the simulated cycles%s\n", s->trace_blocks,
			strcmp(s->trace_from, "main") == 0 ? "from main" :
			strcmp(s->trace_from, "region") == 0 ? "in the region" :
			strcmp(s->trace_from, "never") == 0 ? "(main never entered)" :
			"from the first instruction",
			s->cycles ? 100.0 * (double)s->trace_cycles / (double)s->cycles : 0.0,
			s->trace_dropped ? " (--trace-limit reached: raise it to see more)" : "");
	if (s->ntop)
		fprintf(stderr, "  hottest lines (cycles, share):\n");
	for (size_t i = 0; i < s->ntop; i++)
		fprintf(stderr, "    %s:%u  %" PRIu64 "  %.1f%%\n", s->top[i].file,
			s->top[i].line, s->top[i].cycles,
			s->cycles ? 100.0 * (double)s->top[i].cycles / (double)s->cycles : 0);
	if (metrics != KS_SIM_METRIC_ALL)
		fprintf(stderr, "  metric sets (--aic-metrics):%s%s%s%s\n",
			metrics & KS_SIM_METRIC_PIPE ? " PipeUtilization" : "",
			metrics & KS_SIM_METRIC_BANDWIDTH ? " PMSampling" : "",
			metrics & KS_SIM_METRIC_SOURCE ? " Source" : "",
			metrics & KS_SIM_METRIC_MEMORY ? " MemoryDetail" : "");
	fprintf(stderr, "results: %s\n", rundir);
}

/* The deliverables of raw into rd, with this machine's calibration (the
 * cost model's ceilings without one), and the summary printed; 0, or -1
 * after saying why. */
static int write_deliverables(struct ks_rundir *rd, const char *raw, double clock_hz,
			      unsigned metrics, const char *soc,
			      struct ks_simpost_summary *sum)
{
	struct ks_simpost_opts po = { .raw_path = raw, .clock_hz = clock_hz, .warn = warn_cb,
				      .metrics = metrics, .soc = soc };
	struct ks_calib calib;
	struct ks_err err;

	ks_err_clear(&err);
	if (ks_calib_load(&calib, &err) == 0)
		po.calib = &calib;
	ks_err_clear(&err);
	memset(sum, 0, sizeof(*sum));
	if (ks_simpost_write(rd, &po, sum, &err)) {
		ks_error("%s", err.msg);
		return -1;
	}
	print_summary(sum, clock_hz, metrics ? metrics : KS_SIM_METRIC_ALL, rd->path);
	return 0;
}

int ks_op_simulate_export(const char *dir, const char *raw_name, const char *output,
			  double clock_ghz, unsigned metrics)
{
	struct ks_simpost_summary sum;
	struct ks_rundir rd = { 0 };
	struct ks_err err;
	char raw[PATH_MAX + 300];
	double clock_hz = machine_clock(clock_ghz);

	ks_err_clear(&err);
	if (!realpath(dir, raw) || strlen(raw) + strlen(raw_name) + 2 > sizeof(raw)) {
		ks_error("--export %s: %s", dir, strerror(errno ? errno : ENAMETOOLONG));
		return KS_EXIT_USAGE;
	}
	strcat(raw, "/");
	strcat(raw, raw_name);
	if (ks_rundir_create(output, "simulate", 0, &rd, &err)) {
		ks_error("%s", err.msg);
		return KS_EXIT_FAIL;
	}
	ks_info("op --simulate --export: the deliverables of %s, into %s", raw, rd.path);
	if (write_deliverables(&rd, raw, clock_hz, metrics, NULL, &sum)) {
		ks_rundir_discard(&rd);
		return KS_EXIT_FAIL;
	}
	ks_rundir_close(&rd);
	return KS_EXIT_OK;
}

int ks_op_simulate(const struct ks_op_sim_args *a)
{
	struct geometry g;
	struct ks_vg vg = { 0 };
	struct ks_argv av = { 0 };
	struct ks_rundir rd = { 0 };
	struct ks_simpost_summary sum;
	struct ks_err err;
	char raw[PATH_MAX + 64], *prog = NULL;
	double clock_hz;
	pid_t pid = 0;
	int status, code = KS_EXIT_FAIL, prog_code;
	bool have_rd = false;

	ks_err_clear(&err);
	if (a->cache ? parse_cache(a->cache, &g, &err) : machine_geometry(&g, &err)) {
		ks_error("%s", err.msg);
		return a->cache ? KS_EXIT_USAGE : KS_EXIT_FAIL;
	}
	if (ks_find_program(a->program[0], &prog, &err)) {
		ks_error("%s", err.msg);
		return KS_EXIT_USAGE;
	}
	clock_hz = machine_clock(a->clock_ghz);
	if (ks_vg_open(&vg, &err) || ks_rundir_create(a->output, "simulate", 0, &rd, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	have_rd = true;
	if (build_argv(a, &g, clock_hz, vg.valgrind, rd.path, &av)) {
		ks_error("out of memory");
		goto out;
	}
	ks_info("op --simulate: running %s on kscope's Valgrind tool (expect it to "
		"run 50 to 150 times slower); results in %s", prog, rd.path);
	/* The calibration the roofline reads is found by the machine's key,
	 * which lists the OpenCL devices: listed while the program runs. */
	ks_calib_prefetch();
	timed_out = 0;
	arm_timeout(a);
	if (a->kernel_lines) {
		char *owned[3] = { NULL, NULL, NULL }, **env;

		env = kernel_lines_env(vg.envp, rd.path, owned);
		if (!env) {
			for (int i = 0; i < 3; i++)
				free(owned[i]);
			ks_error("--kernel-lines: cannot make %s/pocl-cache: %s", rd.path,
				 strerror(errno ? errno : ENOMEM));
			ks_vg_close(&vg);
			goto out;
		}
		ks_info("--kernel-lines: OpenCL kernels are built by PoCL with -g "
			"-cl-opt-disable: the cycles are those of unoptimized kernels");
		status = ks_run_program(av.v, env, &pid, &err);
		free(env);
		for (int i = 0; i < 3; i++)
			free(owned[i]);
	} else {
		status = ks_run_program(av.v, vg.envp, &pid, &err);
	}
	disarm_timeout();
	ks_vg_close(&vg);
	if (timed_out)
		ks_warn("--timeout %" PRId64 " minute%s reached: the program was stopped "
			"(SIGINT); the deliverables show what was simulated until then",
			a->timeout_min, a->timeout_min == 1 ? "" : "s");
	if (status < 0) {
		ks_error("%s", err.msg);
		goto out;
	}
	prog_code = ks_exit_status(status);
	if (WIFSIGNALED(status))
		ks_info("the program was ended by signal %d (%s); writing what was "
			"simulated", WTERMSIG(status), strsignal(WTERMSIG(status)));
	snprintf(raw, sizeof(raw), "%s/hotspot.%d.raw", rd.path, (int)pid);
	if (access(raw, R_OK) != 0) {
		ks_error("kscope's Valgrind tool wrote no results (see %s/valgrind.log)",
			 rd.path);
		goto out;
	}
	ks_info("op --simulate: writing the deliverables");
	if (write_deliverables(&rd, raw, clock_hz, a->metrics, a->soc, &sum))
		goto out;
	/* Read-only, like every deliverable; or gone with --dump off. */
	if (!a->dump) {
		if (unlinkat(rd.dirfd, strrchr(raw, '/') + 1, 0) == 0)
			ks_info("--dump off: %s removed (--export cannot rebuild this "
				"run)", strrchr(raw, '/') + 1);
		else
			ks_warn("--dump off: %s: %s", raw, strerror(errno));
	} else {
		fchmodat(rd.dirfd, strrchr(raw, '/') + 1, KS_DELIVERABLE_MODE, 0);
	}
	fchmodat(rd.dirfd, "valgrind.log", KS_DELIVERABLE_MODE, 0);
	code = prog_code;
	if (sum.instrs == 0) {
		if (a->kernel_name)
			ks_error("no instruction was counted: the program never called a "
				 "function matching --kernel-name '%s' (on the threads "
				 "simulated)", a->kernel_name);
		else
			ks_error("no instruction was counted");
		if (code == 0)
			code = KS_EXIT_FAIL;
	}
out:
	ks_vg_close(&vg);
	if (have_rd)
		ks_rundir_close(&rd);
	ks_argv_free(&av);
	free(prog);
	return code;
}
