/*
 * Peak CPU FLOP/s: chains of fused multiply-adds on every thread at once.
 *
 * The kernel (calib_kernels.c) runs KS_CALIB_FMA_CHAINS independent chains
 * of a = a * m + c in the widest vectors the CPU has; each a * m + c counts
 * as two floating-point operations per lane, as in the Empirical Roofline
 * Toolkit.  The number of rounds is grown until one trial lasts long
 * enough to time well, then the best of several trials is kept.  With m
 * just below one the values converge instead of overflowing, and they stay
 * far from the subnormal range, which is slow on some CPUs.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib_int.h"

struct flops_job {
	const struct ks_calib_fma_kernel *k;
	bool f64;
	long iters;
	float m32, c32;
	double m64, c64;
	double *result;       /* per thread, spaced a cache line apart */
};

#define RESULT_STRIDE 8       /* doubles: one cache line per thread */

static void job_fma(void *arg, int tid)
{
	struct flops_job *j = arg;

	j->result[tid * RESULT_STRIDE] =
		j->f64 ? j->k->f64(j->iters, j->m64, j->c64)
		       : j->k->f32(j->iters, j->m32, j->c32);
}

/* The best FLOP/s of one precision, over the undisturbed trials if there
 * are any (else over all, and *busy). */
static int measure(struct ks_calib_team *team, struct flops_job *j, bool quick,
		   double *best, bool *busy, struct ks_err *err)
{
	double clean = 0, any = 0;
	int threads = ks_calib_team_size(team);
	/* Many short trials rather than a few long ones: on a shared machine
	 * the best of them is more likely to have had the CPUs alone. */
	double target = quick ? 0.01 : 0.05, t;
	int trials = quick ? 8 : 24;
	double flops;

	/* Values the compiler cannot know. */
	j->m32 = (float)(1.0 - 1.0 / (1000.0 + threads));
	j->c32 = 0.001f;
	j->m64 = 1.0 - 1.0 / (1000.0 + threads);
	j->c64 = 0.001;
	j->iters = 1000;
	for (int tries = 0; tries < 12; tries++) {
		t = ks_calib_team_run(team, job_fma, j);
		if (t >= target * 0.5)
			break;
		/* A multiple of 4, as the kernels want. */
		j->iters = ((long)((double)j->iters * target / (t > 1e-6 ? t : 1e-6)) +
			    4) / 4 * 4;
	}
	flops = 2.0 * KS_CALIB_FMA_CHAINS * (j->f64 ? j->k->lanes64 : j->k->lanes32) *
		(double)j->iters * threads;
	for (int i = 0; i < trials; i++) {
		t = ks_calib_team_run(team, job_fma, j);
		for (int th = 0; th < threads; th++) {
			double r = j->result[th * RESULT_STRIDE];

			if (!isfinite(r) || r <= 0)
				return ks_err_set(err, -EIO, "the %s kernel returned "
						  "%g on thread %d: the measurement "
						  "cannot be trusted", j->k->isa, r, th);
		}
		if (t > 0 && flops / t > any)
			any = flops / t;
		if (t > 0 && flops / t > clean &&
		    ks_calib_team_cpu_share(team) >= KS_CALIB_UNDISTURBED)
			clean = flops / t;
	}
	*best = clean > 0 ? clean : any;
	*busy = clean == 0;
	return 0;
}

int ks_calib_flops_measure(const struct ks_calib_opts *o,
			   const struct ks_calib_plan *plan,
			   struct ks_calib_team *team, struct ks_calib *c,
			   struct ks_err *err)
{
	int threads = ks_calib_team_size(team), rc = 0;
	struct flops_job j;

	memset(&j, 0, sizeof(j));
	j.k = ks_calib_fma_kernel_best();
	j.result = calloc((size_t)threads * RESULT_STRIDE, sizeof(double));
	if (!j.result)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (int p = 0; p < 2 && c->ncompute < KS_CALIB_MAX; p++) {
		struct ks_calib_ceiling *ce = &c->compute[c->ncompute];
		double best = 0;
		bool busy = false;

		j.f64 = p == 1;
		ks_calib_progress(o, "compute", j.f64 ? "CPU FP64" : "CPU FP32", p + 1, 2);
		rc = measure(team, &j, plan->quick, &best, &busy, err);
		if (rc)
			break;
		if (busy)
			ks_calib_note(o, true, "other programs kept the CPUs busy during "
				      "every trial of CPU %s: that ceiling may be low; "
				      "run 'kscope calibrate --force' when the machine "
				      "is idle", j.f64 ? "FP64" : "FP32");
		memset(ce, 0, sizeof(*ce));
		snprintf(ce->name, sizeof(ce->name), "CPU %s %s", j.f64 ? "FP64" : "FP32",
			 j.k->fused ? "FMA" : "mul+add");
		ce->per_s = best;
		snprintf(ce->how, sizeof(ce->how), "C, %s, %d chains, %d thread%s",
			 j.k->isa, KS_CALIB_FMA_CHAINS, threads, threads == 1 ? "" : "s");
		c->ncompute++;
	}
	free(j.result);
	return rc;
}
