/*
 * kscope calibrate: measures this machine's roofline ceilings (memory
 * bandwidth per cache level and DRAM, peak FLOP/s of the CPU, of the
 * first OpenCL device and of CUDA device 0) and caches them per machine for kscope op, which
 * places each kernel against them; and measures one core as the host
 * chip of kscope predict (host.json).  The measurements are in
 * src/op/calib (calib.h); this file decides what to measure (no cached
 * file, a damaged one, another machine's chip, --force, or a quick file
 * when a full one is asked for), shows the progress on stderr and prints
 * the ceilings as a table on stdout.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calib.h"
#include "cli.h"
#include "log.h"

struct calibrate_opts {
	struct ks_common_opts common;
	bool quick;
	bool force;
	int64_t threads;
	bool no_opencl;
	bool no_cuda;
	bool no_chip;
};

#define OPT(f) .offset = offsetof(struct calibrate_opts, f)

static const struct ks_opt calibrate_opts[] = {
	{ .name = "quick", .type = KS_OPT_FLAG, .env = "KSCOPE_CALIBRATE_QUICK",
	  .help = "reduced sweeps of a few seconds instead of about 45 seconds",
	  OPT(quick) },
	{ .name = "force", .type = KS_OPT_FLAG, .env = "KSCOPE_CALIBRATE_FORCE",
	  .help = "measure again even if this machine's calibration is cached",
	  OPT(force) },
	{ .name = "threads", .type = KS_OPT_INT, .metavar = "N",
	  .env = "KSCOPE_CALIBRATE_THREADS",
	  .help = "CPU threads to measure with (default: one per CPU kscope may "
		  "run on)",
	  OPT(threads), .min = 1, .max = 4096 },
	{ .name = "no-opencl", .type = KS_OPT_FLAG, .env = "KSCOPE_CALIBRATE_NO_OPENCL",
	  .help = "do not measure the OpenCL device (the file's \"opencl\" is null)",
	  OPT(no_opencl) },
	{ .name = "no-cuda", .type = KS_OPT_FLAG, .env = "KSCOPE_CALIBRATE_NO_CUDA",
	  .help = "do not measure the CUDA device (the file's \"cuda\" is null)",
	  OPT(no_cuda) },
	{ .name = "no-chip", .type = KS_OPT_FLAG, .env = "KSCOPE_CALIBRATE_NO_CHIP",
	  .help = "do not measure the host chip of kscope predict (host.json)",
	  OPT(no_chip) },
	KS_COMMON_OPTS(struct calibrate_opts),
	KS_OPT_END
};

/* ---------------------------------------------------------------------
 * Progress and notes on stderr
 * --------------------------------------------------------------------- */

struct progress {
	bool show;            /* the log level lets info through */
	bool tty;             /* stderr is a terminal: one line, redrawn */
	bool line_open;       /* a redrawn line is on the screen */
	char phase[16];
};

static const char *phase_title(const char *phase)
{
	if (strcmp(phase, "memory") == 0)
		return "memory bandwidth (working-set sweep)";
	if (strcmp(phase, "compute") == 0)
		return "peak CPU FLOP/s (FMA chains)";
	if (strcmp(phase, "opencl") == 0)
		return "the OpenCL device";
	if (strcmp(phase, "cuda") == 0)
		return "the CUDA device";
	if (strcmp(phase, "chip") == 0)
		return "the host chip for kscope predict (one core)";
	return phase;
}

static void progress_end(struct progress *pr)
{
	if (pr->line_open) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		pr->line_open = false;
	}
}

static void on_progress(void *arg, const char *phase, const char *what, int step,
			int steps)
{
	struct progress *pr = arg;

	if (!pr->show)
		return;
	if (pr->tty) {
		fprintf(stderr, "\r\033[Kkscope: calibrating %s: %s (%d/%d)",
			phase_title(phase), what, step, steps);
		fflush(stderr);
		pr->line_open = true;
	} else if (strcmp(pr->phase, phase) != 0) {
		ks_info("calibrating %s", phase_title(phase));
	}
	snprintf(pr->phase, sizeof(pr->phase), "%s", phase);
}

static void on_note(void *arg, bool warn, const char *msg)
{
	progress_end(arg);
	if (warn)
		ks_warn("%s", msg);
	else
		ks_info("%s", msg);
}

/* ---------------------------------------------------------------------
 * The table
 * --------------------------------------------------------------------- */

static void print_machine(const struct ks_calib_machine *m)
{
	char size[32];

	printf("machine: %s, %d CPU%s", m->cpu, m->cpus, m->cpus == 1 ? "" : "s");
	for (size_t i = 0; i < m->ncaches; i++) {
		uint64_t b = m->caches[i].bytes;

		if (b % (1024 * 1024) == 0)
			snprintf(size, sizeof(size), "%llu MiB", (unsigned long long)(b >> 20));
		else if (b % 1024 == 0 && b < (16u << 20))
			snprintf(size, sizeof(size), "%llu KiB", (unsigned long long)(b >> 10));
		else
			snprintf(size, sizeof(size), "%.1f MiB", (double)b / (1 << 20));
		printf(", L%d %s", m->caches[i].level, size);
	}
	printf(", %.1f GiB memory\n", (double)m->memory_bytes / (1u << 30));
}

static void fmt_ws(uint64_t b, char *buf, size_t size)
{
	if (b == 0)
		snprintf(buf, size, "-");
	else if (b >= (1u << 20))
		snprintf(buf, size, "%.1f MiB", (double)b / (1u << 20));
	else
		snprintf(buf, size, "%.0f KiB", (double)b / 1024);
}

static void print_table(const struct ks_calib *c)
{
	int wm = (int)strlen("memory"), wc = (int)strlen("compute");
	char ws[32];

	for (size_t i = 0; i < c->nmem; i++)
		if ((int)strlen(c->mem[i].name) > wm)
			wm = (int)strlen(c->mem[i].name);
	for (size_t i = 0; i < c->ncompute; i++)
		if ((int)strlen(c->compute[i].name) > wc)
			wc = (int)strlen(c->compute[i].name);

	print_machine(&c->machine);
	printf("\n  %-*s  %14s  %11s  %s\n", wm, "memory", "bandwidth", "working set",
	       "how");
	for (size_t i = 0; i < c->nmem; i++) {
		fmt_ws(c->mem[i].working_set, ws, sizeof(ws));
		printf("  %-*s  %9.1f GB/s  %11s  %s\n", wm, c->mem[i].name,
		       c->mem[i].per_s / 1e9, ws, c->mem[i].how);
	}
	printf("\n  %-*s  %14s  %s\n", wc, "compute", "peak", "how");
	for (size_t i = 0; i < c->ncompute; i++)
		printf("  %-*s  %7.1f GFLOP/s  %s\n", wc, c->compute[i].name,
		       c->compute[i].per_s / 1e9, c->compute[i].how);
	printf("\n");
	if (c->have_opencl)
		printf("OpenCL: %s%s%s: %.1f GFLOP/s FP32, %.1f GB/s read\n",
		       c->opencl_device, c->opencl_driver[0] ? ", driver " : "",
		       c->opencl_driver, c->opencl_flops_per_s / 1e9,
		       c->opencl_bytes_per_s / 1e9);
	else
		printf("OpenCL: not measured\n");
	if (c->have_cuda) {
		const struct ks_calib_cuda *d = &c->cuda;
		char bf16[48] = "";

		if (d->bf16 > 0)
			snprintf(bf16, sizeof(bf16), ", %.1f BF16", d->bf16 / 1e9);
		printf("CUDA: %s%s%s%s%s: %.1f GFLOP/s FP32, %.1f FP16%s, %.1f GB/s read\n",
		       d->device, d->cc[0] ? ", compute capability " : "", d->cc,
		       d->driver[0] ? ", driver " : "", d->driver, d->fp32 / 1e9,
		       d->fp16 / 1e9, bf16, d->bytes_per_s / 1e9);
	} else {
		printf("CUDA: not measured\n");
	}
	printf("file: %s\n", c->path);
}

/* The host chip in three lines: how it came about, its figures, its file. */
static void print_chip(const struct ks_calib_chip *h, double seconds)
{
	char small[32], large[32];

	if (seconds >= 0)
		printf("host chip (kscope predict --chip host): measured in %.1f s, %s\n",
		       seconds, h->quick ? "quick" : "full");
	else
		printf("host chip (kscope predict --chip host): cached (measured %s, %s; "
		       "--force measures again)\n", h->created, h->quick ? "quick" : "full");
	fmt_ws(h->small_fp, small, sizeof(small));
	fmt_ws(h->large_fp, large, sizeof(large));
	printf("  one core at %.2f GHz; GM->UB %.1f GB/s at %s to %.1f GB/s at %s; "
	       "UB->GM %.1f to %.1f GB/s; %zu instructions\n", h->clock_hz / 1e9,
	       h->read_small / 1e9, small, h->read_large / 1e9, large,
	       h->write_small / 1e9, h->write_large / 1e9, h->ninstr);
	printf("chip: %s\n", h->path);
}

/* ---------------------------------------------------------------------
 * The command
 * --------------------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether the cached calibration answers this request; if not, says why
 * it is measured again. */
static bool cached_is_enough(const struct calibrate_opts *o, bool threads_given,
			     const struct ks_calib *cached)
{
	if (cached->quick && !o->quick) {
		ks_info("the cached calibration is a --quick one; measuring in full");
		return false;
	}
	if (threads_given && cached->threads != (int)o->threads) {
		ks_info("the cached calibration used %d thread%s; measuring with %d",
			cached->threads, cached->threads == 1 ? "" : "s",
			(int)o->threads);
		return false;
	}
	return true;
}

/* Whether the cached host chip answers this request (rc: what loading
 * it returned, never -EPERM, which the caller stops on); if not, says
 * why it is measured again. */
static bool chip_is_enough(const struct calibrate_opts *o, int rc,
			   const struct ks_calib_chip *h, const struct ks_err *err)
{
	if (rc == -EINVAL)
		ks_warn("%s; measuring it again to replace it", err->msg);
	else if (rc == -ESTALE)
		ks_info("%s; measuring it again", err->msg);
	else if (rc != 0 && rc != -ENOENT)
		ks_warn("%s; measuring it again", err->msg);
	if (rc != 0)
		return false;
	if (o->force)
		return false;
	if (h->quick && !o->quick) {
		ks_info("the host chip is a --quick one; measuring it in full");
		return false;
	}
	return true;
}

static int calibrate_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	const struct calibrate_opts *o = p->opts;
	bool threads_given = p->given[ks_opt_find(calibrate_opts, "threads") -
				      calibrate_opts];
	bool need_calib, need_chip = false;
	struct ks_calib cached, c;
	struct ks_calib_chip chip;
	struct ks_calib_opts mo;
	struct progress pr;
	struct ks_err err, cerr;
	double t0, t1, chip_s = -1;
	int rc, crc = 0, status = KS_EXIT_FAIL;

	(void)cmd;
	ks_err_clear(&err);
	memset(&chip, 0, sizeof(chip));
	rc = ks_calib_load(&cached, &err);
	if (rc == -EPERM) {
		/* An unsafe cache directory: measuring could not be saved. */
		ks_error("%s", err.msg);
		return KS_EXIT_FAIL;
	}
	need_calib = !(rc == 0 && !o->force && cached_is_enough(o, threads_given, &cached));
	if (!o->no_chip) {
		/* cached.machine is filled whether or not the file was read. */
		crc = ks_calib_chip_load(&chip, &cached.machine, &cerr);
		if (crc == -EPERM) {
			ks_error("%s", cerr.msg);
			return KS_EXIT_FAIL;
		}
		need_chip = !chip_is_enough(o, crc, &chip, &cerr);
	}

	if (!need_calib && !need_chip) {
		char threads[32] = "";

		if (cached.threads > 0)
			snprintf(threads, sizeof(threads), ", %d thread%s", cached.threads,
				 cached.threads == 1 ? "" : "s");
		printf("kscope calibrate: cached ceilings of this machine (measured "
		       "%s, %s sweep%s; --force measures again)\n", cached.created,
		       cached.quick ? "quick" : "full", threads);
		print_table(&cached);
		if (!o->no_chip)
			print_chip(&chip, -1);
		if (!cached.have_opencl && !o->no_opencl)
			ks_info("the cached calibration has no OpenCL ceilings; "
				"'kscope calibrate --force' measures them again");
		/* Only where the NVIDIA driver shows GPUs: elsewhere there is
		 * nothing to measure, and the line would be noise. */
		if (!cached.have_cuda && !o->no_cuda && cached.machine.ncuda > 0)
			ks_info("the cached calibration has no CUDA ceilings; "
				"'kscope calibrate --force' measures them again");
		return KS_EXIT_OK;
	}
	if (need_calib && rc == -EINVAL)
		ks_warn("%s; measuring again to replace it", err.msg);
	else if (need_calib && rc != 0 && rc != -ENOENT)
		ks_warn("%s; measuring again", err.msg);

	/* Both directories are made and checked before anything is measured,
	 * so that a measurement never ends unable to save. */
	if (need_calib && ks_calib_prepare(&c, &err) != 0) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (need_chip && ks_calib_chip_prepare(&chip, &cerr) != 0) {
		ks_error("%s", cerr.msg);
		goto out;
	}
	memset(&pr, 0, sizeof(pr));
	pr.show = ks_log_get_level() >= KS_LOG_INFO;
	pr.tty = isatty(STDERR_FILENO);
	memset(&mo, 0, sizeof(mo));
	mo.quick = o->quick;
	mo.threads = (int)o->threads;
	mo.opencl = !o->no_opencl;
	mo.cuda = !o->no_cuda;
	mo.progress = on_progress;
	mo.note = on_note;
	mo.arg = &pr;
	if (need_calib && o->no_opencl)
		ks_info("OpenCL not measured (--no-opencl): the file's \"opencl\" "
			"is null");
	if (need_calib && o->no_cuda)
		ks_info("CUDA not measured (--no-cuda): the file's \"cuda\" is null");

	t0 = t1 = now_s();
	if (need_calib) {
		rc = ks_calib_measure(&mo, &c, &err);
		progress_end(&pr);
		if (rc != 0) {
			ks_error("calibration failed: %s", err.msg);
			goto out;
		}
		t1 = now_s();
		if (ks_calib_save(&c, &err) != 0) {
			ks_error("%s", err.msg);
			goto out;
		}
	}
	if (need_chip) {
		double c0 = now_s();

		rc = ks_calib_chip_measure(&mo, &cached.machine, &chip, &cerr);
		progress_end(&pr);
		if (rc != 0) {
			ks_error("measuring the host chip failed: %s", cerr.msg);
			goto out;
		}
		chip_s = now_s() - c0;
		if (ks_calib_chip_save(&chip, &cerr) != 0) {
			ks_error("%s", cerr.msg);
			goto out;
		}
	}
	if (need_calib) {
		printf("kscope calibrate: ceilings of this machine (measured in %.1f s, "
		       "%s sweep, %d thread%s)\n", t1 - t0, c.quick ? "quick" : "full",
		       c.threads, c.threads == 1 ? "" : "s");
		print_table(&c);
	} else {
		printf("kscope calibrate: cached ceilings of this machine (measured %s, "
		       "%s sweep; --force measures again)\n", cached.created,
		       cached.quick ? "quick" : "full");
		print_table(&cached);
	}
	if (!o->no_chip)
		print_chip(&chip, need_chip ? chip_s : -1);
	status = KS_EXIT_OK;
out:
	ks_calib_chip_free(&chip);
	return status;
}

const struct ks_cmd ks_cmd_calibrate = {
	.name = "calibrate",
	.summary = "measure this machine's roofline ceilings for kscope op",
	.usage = "[--quick] [--force] [--threads N] [--no-opencl] [--no-cuda] [--no-chip]",
	.description =
		"Measures the ceilings of this machine's roofline the way empirical\n"
		"roofline tools do, and keeps them for kscope op, which places each\n"
		"kernel against them:\n"
		"  memory   the bandwidth of each cache level and of DRAM: every CPU\n"
		"           reads its own block, for working sets from 16 KiB to four\n"
		"           times the last-level cache and more (sizes from sysfs)\n"
		"  compute  the peak FP32 and FP64 FLOP/s of vector FMA chains on\n"
		"           every CPU, the FP32 FLOP/s and read bandwidth of the\n"
		"           first OpenCL GPU (else CPU) device, and the FP32, FP16\n"
		"           and BF16 FMA FLOP/s and read bandwidth of CUDA device 0\n"
		"  chip     one core as a chip for kscope predict: how fast data moves\n"
		"           between memory and the core by footprint, and the vector\n"
		"           instructions, mmad and scalar work as compiled C loops\n"
		"\n"
		"The ceilings are printed and written to\n"
		"$XDG_CACHE_HOME/kscope/calibration-<key>.json (~/.cache when\n"
		"XDG_CACHE_HOME is unset); <key> identifies the machine (CPU, caches,\n"
		"memory, OpenCL devices and drivers, NVIDIA GPUs and driver).  Run\n"
		"again, kscope calibrate prints the cached ceilings; --force\n"
		"measures again.  A damaged file is measured again and replaced.\n"
		"The host chip is written to $XDG_DATA_HOME/kscope/chips/host.json\n"
		"(~/.local/share when XDG_DATA_HOME is unset), where kscope predict\n"
		"--chip host finds it.  The full run takes about 45 seconds, --quick\n"
		"a few seconds.\n"
		"docs/calibrate.md has the details.",
	.args = { .opts = calibrate_opts, .opts_size = sizeof(struct calibrate_opts),
		  .takes_program = false },
	.run = calibrate_run,
};
