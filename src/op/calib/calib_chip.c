/*
 * The host chip of kscope predict: one core of this machine, measured by
 * `kscope calibrate` (calib_chip_file.c turns the figures into the chip
 * file, $XDG_DATA_HOME/kscope/chips/host.json; docs/predict.md, "The
 * chips", describes the chip).
 *
 * What is measured, on one thread pinned to one CPU (a kernel of kscope
 * predict runs on one core):
 *  - GM->UB and UB->GM: bytes per cycle of a streaming read (the widest
 *    read kernel of calib_kernels.c) and a streaming store
 *    (calib_chip_kernels.c) over footprints from 4 KiB to four times the
 *    last-level cache.  On a CPU how fast data moves depends on where it
 *    lives, which the footprint decides.
 *  - Each vector instruction of predict.h (and vadds, vmuls), for fp32,
 *    fp64 and int32: elements per cycle of the plain C loop at 16 to 4096
 *    elements, operands in L1 (or L2 for the largest).
 *  - mmad: multiply-adds per cycle of the C tile loop on square tiles of
 *    4 to 128, by m*k*n.
 *  - scalar: cycles per operation of a chain of dependent integer
 *    operations.
 *
 * How: every figure is a point with its kernel, sized once so that a
 * trial lasts at least a millisecond; then the points are measured in
 * turn, round after round, until the time budget is spent, and each
 * figure is the median of its rounds (of those in which the thread had
 * its CPU).  Taking the points in turn spreads every figure over the whole
 * measurement: on a shared machine a core runs at two speeds or more (a
 * core whose other hardware thread runs someone else's work is up to
 * twice as slow), which change over seconds, and figures measured one
 * after the other would each catch one speed by chance, making a chip
 * whose tables disagree with one another.  The median, not the best
 * trial that calib_mem.c keeps for a ceiling: a chip predicts a kernel's
 * usual time.  Times become cycles at the clock /proc/cpuinfo reports.
 * The full measurement takes about 15 seconds, --quick about 2.
 */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib_int.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define MAX_ROUNDS 64

/* The measurement's settings, full and --quick. */
struct plan {
	double min_trial;      /* seconds a trial lasts at least */
	double budget;         /* seconds of rounds */
	int min_rounds;
	const size_t *vec;     /* elements of the vector tables */
	size_t nvec;
	const size_t *mmad;    /* sides of the mmad tiles */
	size_t nmmad;
	int fp_step;           /* footprints grow by this factor */
};

static const size_t full_vec[] = { 16, 64, 256, 1024, 4096 };
static const size_t quick_vec[] = { 64, 1024, 4096 };
static const size_t full_mmad[] = { 4, 8, 16, 32, 48, 64, 96, 128 };
static const size_t quick_mmad[] = { 8, 32, 64, 128 };
#define VEC_MAX 4096
#define MMAD_MAX 128

static const struct plan full_plan = { 0.001, 12.0, 7, full_vec, 5, full_mmad, 8, 2 };
static const struct plan quick_plan = { 0.0005, 1.2, 3, quick_vec, 3, quick_mmad, 4, 4 };

/* Operands lie this far apart modulo 4 KiB, so that a store to one is
 * never taken for a store to a later load's address (4K aliasing). */
#define OPERAND_SKEW 1344
/* A point whose call is shorter gets an untimed call before each trial:
 * the other points have since pushed its data out of the caches. */
#define WARM_BELOW 0.0005

/* ---------------------------------------------------------------------
 * Points: a kernel, how to call it, and its rounds
 * --------------------------------------------------------------------- */

enum job_kind { J_READ, J_WRITE, J_VEC, J_MMAD, J_SCALAR };

struct point {
	enum job_kind kind;
	long reps;             /* calls (passes, operations) per trial */
	double units;          /* bytes, elements, multiply-adds or operations
				* per call */
	bool warm;             /* an untimed call before each trial */
	/* the kernel and its operands */
	const struct ks_calib_read_kernel *rk;
	const struct ks_calib_write_kernel *wk;
	ks_calib_vec_fn *vf;
	ks_calib_mmad_fn *mf;
	double *buf;           /* read, write: n doubles, all 1.0 */
	void *z;               /* vector: output; mmad: c */
	const void *x, *y;     /* vector: inputs; mmad: a, b */
	size_t n;              /* read, write, vector: elements; mmad: side */
	double sum;            /* what the last read returned */
	uint64_t acc;          /* scalar: the chain's value */
	/* where the figure goes */
	struct ks_calib_chip_table *table;  /* NULL: scalar */
	double size;
	/* rates (units per second) of the rounds */
	int nclean, nall;
	double clean[MAX_ROUNDS], all[MAX_ROUNDS];
};

static void run_point(void *arg, int tid)
{
	struct point *p = arg;

	(void)tid;
	switch (p->kind) {
	case J_READ:
		p->sum = p->rk->sum(p->buf, p->n, p->reps);
		break;
	case J_WRITE:
		for (long r = 0; r < p->reps; r++)
			p->wk->fill(p->buf, p->n, 1.0);
		break;
	case J_VEC:
		for (long r = 0; r < p->reps; r++)
			p->vf(p->z, p->x, p->y, p->n);
		break;
	case J_MMAD:
		for (long r = 0; r < p->reps; r++)
			p->mf(p->z, p->x, p->y, p->n, p->n, p->n);
		break;
	case J_SCALAR:
		p->acc = ks_calib_scalar_chain(p->acc, p->reps);
		break;
	}
}

/* One run of p (reps calls); checks what a read returned (all elements
 * are 1.0, so the sum is exact) to be sure the kernel read it all. */
static int run_once(struct ks_calib_team *team, struct point *p, double *seconds,
		    struct ks_err *err)
{
	*seconds = ks_calib_team_run(team, run_point, p);
	if (p->kind == J_READ && p->sum != (double)p->n * (double)p->reps)
		return ks_err_set(err, -EIO, "the %s read kernel summed %.17g instead of "
				  "%.17g: the measurement cannot be trusted", p->rk->isa,
				  p->sum, (double)p->n * (double)p->reps);
	return 0;
}

/* Enough calls for a trial of min_trial seconds (scalar: a multiple of 4
 * operations); returns the seconds of one trial. */
static int size_point(struct ks_calib_team *team, struct point *p, double min_trial,
		      double *trial, struct ks_err *err)
{
	double t = 0;
	int rc;

	p->reps = p->kind == J_SCALAR ? 4096 : 1;
	for (int tries = 0; tries < 16; tries++) {
		if ((rc = run_once(team, p, &t, err)) != 0)
			return rc;
		if (t >= min_trial)
			break;
		p->reps = (long)((double)p->reps * 1.3 * min_trial / (t > 1e-7 ? t : 1e-7)) + 1;
		if (p->kind == J_SCALAR)
			p->reps = (p->reps + 3) / 4 * 4;
	}
	p->warm = t / (double)p->reps < WARM_BELOW && p->kind != J_SCALAR;
	*trial = t * (p->warm ? 1.0 + 1.0 / (double)p->reps : 1.0);
	return 0;
}

static int trial(struct ks_calib_team *team, struct point *p, struct ks_err *err)
{
	long reps = p->reps;
	double t;
	int rc;

	if (p->warm) {
		p->reps = 1;
		rc = run_once(team, p, &t, err);
		p->reps = reps;
		if (rc)
			return rc;
	}
	if ((rc = run_once(team, p, &t, err)) != 0)
		return rc;
	if (!(t > 0))
		return ks_err_set(err, -EIO, "a measurement of the host chip took no time: "
				  "the clock cannot be trusted");
	assert(p->nall < MAX_ROUNDS);
	p->all[p->nall++] = p->units * (double)p->reps / t;
	if (ks_calib_team_cpu_share(team) >= KS_CALIB_UNDISTURBED)
		p->clean[p->nclean++] = p->all[p->nall - 1];
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median rate of p's undisturbed rounds, else of all (*busy). */
static double median_rate(struct point *p, bool *busy)
{
	double *v = p->nclean ? p->clean : p->all;
	int n = p->nclean ? p->nclean : p->nall;

	*busy = p->nclean == 0;
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---------------------------------------------------------------------
 * What is measured
 * --------------------------------------------------------------------- */

/* "cpu MHz" of the first CPU in /proc/cpuinfo, else cpufreq's maximum,
 * else 1 GHz (then a cycle is a nanosecond); how says which. */
static double find_clock(char *how, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[256];
	double mhz = 0;
	unsigned long khz = 0;

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "cpu MHz", 7) == 0) {
			const char *colon = strchr(line, ':');

			if (colon)
				mhz = strtod(colon + 1, NULL);
			break;
		}
	if (f)
		fclose(f);
	/* To 0.1 MHz: the file keeps six digits, and a clock read back must
	 * be the clock written. */
	if (mhz > 0 && isfinite(mhz)) {
		snprintf(how, size, "\"cpu MHz\" in /proc/cpuinfo");
		return round(mhz * 10) * 1e5;
	}
	f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "re");
	if (f && fscanf(f, "%lu", &khz) == 1 && khz > 0) {
		fclose(f);
		snprintf(how, size, "cpufreq's cpuinfo_max_freq");
		return (double)khz * 1e3;
	}
	if (f)
		fclose(f);
	snprintf(how, size, "unknown: 1 GHz assumed");
	return 1e9;
}

/* Footprints of the path tables: 4 KiB, growing by step, to four times
 * the last-level cache (256 MiB when unknown), within limit bytes. */
static size_t footprints(const struct ks_calib_machine *m, int step, uint64_t limit,
			 uint64_t *fp)
{
	uint64_t llc = ks_calib_llc_total(m), top = llc ? 4 * llc : 256 * MIB;
	size_t n = 0;

	if (top > limit)
		top = limit;
	top = top / (4 * KIB) * (4 * KIB);
	for (uint64_t s = 4 * KIB; s < top && n < KS_CALIB_CHIP_MAX_ENTRIES - 1;
	     s *= (uint64_t)step)
		fp[n++] = s;
	if (top >= 4 * KIB)
		fp[n++] = top;
	return n;
}

/* Memory that can be used without pushing the machine into swapping: a
 * quarter of what is free. */
static uint64_t mem_limit(void)
{
	long pages = sysconf(_SC_AVPHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	return pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize / 4 : 256 * MIB;
}

/* Operand values that keep every instruction finite and exact enough:
 * positive (vln), small (vexp, int32 products), non-zero (vdiv). */
static void fill_operands(int dt, void *x, void *y, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		double a = 1.0 + (double)(i % 7) * 0.125, b = 2.0 + (double)(i % 5) * 0.25;

		switch (dt) {
		case KS_CALIB_FP32:
			((float *)x)[i] = (float)a;
			((float *)y)[i] = (float)b;
			break;
		case KS_CALIB_FP64:
			((double *)x)[i] = a;
			((double *)y)[i] = b;
			break;
		default:
			((int32_t *)x)[i] = (int32_t)(1 + i % 100);
			((int32_t *)y)[i] = (int32_t)(1 + i % 7);
			break;
		}
	}
}

/* Ones in a and b, zeros in c: c grows by k a call, and all the calls of
 * a measurement (a few million multiply-adds per element at most) stay
 * far from overflowing an int32. */
static void fill_mmad(int dt, void *a, void *b, void *c, size_t e)
{
	for (size_t q = 0; q < e; q++)
		switch (dt) {
		case KS_CALIB_FP32:
			((float *)a)[q] = ((float *)b)[q] = 1.0f;
			((float *)c)[q] = 0.0f;
			break;
		case KS_CALIB_FP64:
			((double *)a)[q] = ((double *)b)[q] = 1.0;
			((double *)c)[q] = 0.0;
			break;
		default:
			((int32_t *)a)[q] = ((int32_t *)b)[q] = 1;
			((int32_t *)c)[q] = 0;
			break;
		}
}

/* Buffers the points use, freed together. */
struct buffers {
	double *mem;           /* the footprints' block */
	char *vec[KS_CALIB_NDT];   /* x, y, z per data type */
	char *mm[KS_CALIB_NDT];    /* a, b, c per data type */
};

static void buffers_free(struct buffers *b)
{
	free(b->mem);
	for (int dt = 0; dt < KS_CALIB_NDT; dt++) {
		free(b->vec[dt]);
		free(b->mm[dt]);
	}
}

#define VEC_STRIDE (VEC_MAX * sizeof(double) + OPERAND_SKEW)
#define MM_STRIDE (MMAD_MAX * MMAD_MAX * sizeof(double) + OPERAND_SKEW)

static int buffers_alloc(struct buffers *b, uint64_t mem_bytes, struct ks_err *err)
{
	char human[32];
	void *p = NULL;

	memset(b, 0, sizeof(*b));
	if (posix_memalign(&p, 4096, mem_bytes) != 0) {
		ks_calib_fmt_bytes(mem_bytes, human, sizeof(human));
		return ks_err_set(err, -ENOMEM, "cannot allocate %s for the host chip's "
				  "memory paths", human);
	}
	b->mem = p;
	for (size_t i = 0; i < mem_bytes / sizeof(double); i++)
		b->mem[i] = 1.0;
	for (int dt = 0; dt < KS_CALIB_NDT; dt++) {
		if (posix_memalign(&p, 4096, 3 * VEC_STRIDE) != 0)
			goto oom;
		b->vec[dt] = p;
		memset(p, 0, 3 * VEC_STRIDE);
		fill_operands(dt, b->vec[dt], b->vec[dt] + VEC_STRIDE, VEC_MAX);
		if (posix_memalign(&p, 4096, 3 * MM_STRIDE) != 0)
			goto oom;
		b->mm[dt] = p;
		fill_mmad(dt, b->mm[dt], b->mm[dt] + MM_STRIDE, b->mm[dt] + 2 * MM_STRIDE,
			  MMAD_MAX * MMAD_MAX);
	}
	return 0;
oom:
	buffers_free(b);
	return ks_err_set(err, -ENOMEM, "out of memory");
}

/* Every point of the measurement, into pts (max entries); returns how
 * many. */
static size_t make_points(const struct plan *pl, const uint64_t *fp, size_t nfp,
			  struct buffers *b, struct ks_calib_chip_figures *f,
			  struct point *pts, size_t max)
{
	const struct ks_calib_read_kernel *rk = ks_calib_read_kernel_best();
	const struct ks_calib_write_kernel *wk = ks_calib_write_kernel_best();
	size_t n = 0;

	f->read_isa = rk->isa;
	f->write_isa = wk->isa;
	for (int dir = 0; dir < 2; dir++)
		for (size_t i = 0; i < nfp && n < max; i++) {
			struct point *p = &pts[n];
			size_t granule = dir == 0 ? rk->granule : wk->granule;

			memset(p, 0, sizeof(*p));
			p->kind = dir == 0 ? J_READ : J_WRITE;
			p->rk = rk;
			p->wk = wk;
			p->buf = b->mem;
			p->n = (size_t)(fp[i] / sizeof(double));
			p->n -= p->n % granule;
			if (p->n == 0)
				continue;
			p->units = (double)p->n * sizeof(double);
			p->table = dir == 0 ? &f->read : &f->write;
			p->size = p->units;
			n++;
		}
	for (size_t k = 0; ks_calib_vec_kernels[k].name; k++)
		for (int dt = 0; dt < KS_CALIB_NDT; dt++)
			for (size_t i = 0; i < pl->nvec && ks_calib_vec_kernels[k].fn[dt] &&
					   n < max; i++) {
				struct point *p = &pts[n++];

				memset(p, 0, sizeof(*p));
				p->kind = J_VEC;
				p->vf = ks_calib_vec_kernels[k].fn[dt];
				p->x = b->vec[dt];
				p->y = b->vec[dt] + VEC_STRIDE;
				p->z = b->vec[dt] + 2 * VEC_STRIDE;
				p->n = pl->vec[i];
				p->units = (double)p->n;
				p->table = &f->vec[k][dt];
				p->size = p->units;
			}
	for (int dt = 0; dt < KS_CALIB_NDT; dt++)
		for (size_t i = 0; i < pl->nmmad && n < max; i++) {
			struct point *p = &pts[n++];
			size_t s = pl->mmad[i];

			memset(p, 0, sizeof(*p));
			p->kind = J_MMAD;
			p->mf = ks_calib_mmad_kernels[dt];
			p->x = b->mm[dt];
			p->y = b->mm[dt] + MM_STRIDE;
			p->z = b->mm[dt] + 2 * MM_STRIDE;
			p->n = s;
			p->units = (double)(s * s * s);
			p->table = &f->mmad[dt];
			p->size = p->units;
		}
	if (n < max) {
		memset(&pts[n], 0, sizeof(pts[n]));
		pts[n].kind = J_SCALAR;
		pts[n].acc = 12345;
		pts[n].units = 1;
		n++;
	}
	return n;
}

int ks_calib_chip_measure(const struct ks_calib_opts *o, const struct ks_calib_machine *m,
			  struct ks_calib_chip *h, struct ks_err *err)
{
	const struct plan *pl = o->quick ? &quick_plan : &full_plan;
	uint64_t fp[KS_CALIB_CHIP_MAX_ENTRIES];
	struct ks_calib_team *team = NULL;
	struct ks_calib_chip_figures *f;
	struct point *pts = NULL;
	struct buffers bufs;
	size_t nfp, npts, max;
	double round_s = 0;
	int rounds, rc;
	char what[96];

	nfp = footprints(m, pl->fp_step, mem_limit(), fp);
	if (nfp == 0)
		return ks_err_set(err, -ENOMEM, "no memory to measure the host chip with");
	f = calloc(1, sizeof(*f));
	max = 2 * nfp + KS_CALIB_CHIP_MAX_VEC * KS_CALIB_NDT * pl->nvec +
	      KS_CALIB_NDT * pl->nmmad + 1;
	pts = calloc(max, sizeof(*pts));
	if (!f || !pts) {
		free(f);
		free(pts);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t k = 0; ks_calib_vec_kernels[k].name; k++)
		assert(k < KS_CALIB_CHIP_MAX_VEC);
	f->clock_hz = find_clock(f->clock_how, sizeof(f->clock_how));
	rc = buffers_alloc(&bufs, fp[nfp - 1], err);
	if (rc) {
		free(f);
		free(pts);
		return rc;
	}
	npts = make_points(pl, fp, nfp, &bufs, f, pts, max);

	rc = ks_calib_team_start(&team, 1, err);
	if (rc)
		goto out;
	/* Sizing: the calls of each point's trial, and how long a round of
	 * all the points takes, which sets the rounds. */
	for (size_t i = 0; i < npts && !rc; i++) {
		double t = 0;

		snprintf(what, sizeof(what), "sizing figure %zu of %zu", i + 1, npts);
		ks_calib_progress(o, "chip", what, (int)i + 1, (int)npts + MAX_ROUNDS);
		rc = size_point(team, &pts[i], pl->min_trial, &t, err);
		round_s += t;
	}
	rounds = round_s > 0 ? (int)(pl->budget / round_s) : MAX_ROUNDS;
	rounds = rounds < pl->min_rounds ? pl->min_rounds
		 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
	for (int r = 0; r < rounds && !rc; r++) {
		snprintf(what, sizeof(what), "round %d of %d over %zu figures", r + 1, rounds,
			 npts);
		ks_calib_progress(o, "chip", what, (int)npts + r + 1, (int)npts + rounds);
		for (size_t i = 0; i < npts && !rc; i++)
			rc = trial(team, &pts[i], err);
	}
	ks_calib_team_stop(team);
	if (rc)
		goto out;

	f->rounds = rounds;
	for (size_t i = 0; i < npts; i++) {
		struct point *p = &pts[i];
		bool busy;
		double rate = median_rate(p, &busy);

		f->figures++;
		f->busy += busy;
		if (!p->table) {
			f->scalar_cpo = f->clock_hz / rate;
			continue;
		}
		assert(p->table->n < KS_CALIB_CHIP_MAX_ENTRIES);
		p->table->size[p->table->n] = p->size;
		p->table->tput[p->table->n++] = rate / f->clock_hz;
	}
	if (fp[nfp - 1] < 2 * ks_calib_llc_total(m))
		ks_calib_note(o, true, "the host chip's memory paths stop at a footprint "
			      "within reach of the last-level cache (a quarter of the free "
			      "memory may be used): DRAM-resident data will be predicted "
			      "too fast");
	if (f->busy)
		ks_calib_note(o, true, "other programs kept the CPU busy during every trial "
			      "of %d of the host chip's %d figures: they may be low; run "
			      "'kscope calibrate --force' when the machine is idle",
			      f->busy, f->figures);
	rc = ks_calib_chip_build(o, m, f, h, err);
out:
	buffers_free(&bufs);
	free(pts);
	free(f);
	return rc;
}
