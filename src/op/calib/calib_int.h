/*
 * Private to src/op/calib: what the calibration's files share.  The team
 * of pinned threads that runs a kernel on every CPU at once, the memory
 * and compute kernels and measurements, the OpenCL part, and small
 * helpers.  The tests of src/op/calib include it too, to test the level
 * assignment and each instruction set's kernels on their own.
 */
#ifndef KS_CALIB_INT_H
#define KS_CALIB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "calib.h"

/* CLOCK_MONOTONIC in seconds. */
double ks_calib_now(void);

/* Reports progress and notes through the caller's callbacks, if any. */
void ks_calib_progress(const struct ks_calib_opts *o, const char *phase,
		       const char *what, int step, int steps);
void ks_calib_note(const struct ks_calib_opts *o, bool warn, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "32 KiB", "1.5 MiB": a byte count for people. */
void ks_calib_fmt_bytes(uint64_t bytes, char *buf, size_t size);

/* ---- the team (calib_team.c) ---- */

/* nthreads threads, each pinned to one of the CPUs kscope may run on in
 * turn; thread 0 is the caller's own thread, so a team of N keeps N CPUs
 * busy and no more. */
struct ks_calib_team;

typedef void ks_calib_job_fn(void *arg, int tid);

int ks_calib_team_start(struct ks_calib_team **team, int nthreads,
			struct ks_err *err);
int ks_calib_team_size(const struct ks_calib_team *team);
/* Runs job(arg, tid) on every thread at once and returns the seconds from
 * the start to the end of the last thread's part. */
double ks_calib_team_run(struct ks_calib_team *team, ks_calib_job_fn *job,
			 void *arg);
/* The smallest share of its elapsed time that a member of the last job
 * had a CPU for (1: no member was interrupted). */
double ks_calib_team_cpu_share(const struct ks_calib_team *team);
/* A trial whose members had their CPU less than this share of the time
 * was disturbed by other work on the machine. */
#define KS_CALIB_UNDISTURBED 0.9
/* Ends the threads and gives the caller back its own CPU affinity. */
void ks_calib_team_stop(struct ks_calib_team *team);
/* How many CPUs kscope may run on (its affinity mask). */
int ks_calib_cpus_allowed(void);

/* ---- the kernels (calib_kernels.c) ---- */

/* A read-only streaming kernel: the sum of n doubles at p (64-byte
 * aligned, n a multiple of granule), read passes times over. */
struct ks_calib_read_kernel {
	const char *isa;       /* "AVX-512F", "AVX2", "SSE2", "generic" */
	bool (*supported)(void);
	double (*sum)(const double *p, size_t n, long passes);
	size_t granule;        /* doubles per loop iteration */
};
/* Chains of a = a * m + c: iters rounds (a multiple of 4) over
 * KS_CALIB_FMA_CHAINS independent vectors; returns the sum of the final
 * values. */
struct ks_calib_fma_kernel {
	const char *isa;       /* "AVX-512F FMA", "AVX2 FMA", "SSE2 mul+add" */
	bool fused;            /* one FMA instruction per a * m + c */
	bool (*supported)(void);
	double (*f32)(long iters, float m, float c);
	double (*f64)(long iters, double m, double c);
	int lanes32, lanes64;  /* floats and doubles per vector */
};
#define KS_CALIB_FMA_CHAINS 12

/* Best first, ending with an entry whose isa is NULL; the last real entry
 * runs everywhere. */
extern const struct ks_calib_read_kernel ks_calib_read_kernels[];
extern const struct ks_calib_fma_kernel ks_calib_fma_kernels[];
const struct ks_calib_read_kernel *ks_calib_read_kernel_best(void);
const struct ks_calib_fma_kernel *ks_calib_fma_kernel_best(void);

/* ---- the measurements ---- */

/* What the sweeps run: quick or full, and how many threads. */
struct ks_calib_plan {
	bool quick;
	int threads;
	uint64_t mem_limit;   /* most bytes the memory sweep may allocate */
};

/* The working-set sweep (calib_mem.c): fills c->mem, fastest first. */
int ks_calib_mem_measure(const struct ks_calib_opts *o,
			 const struct ks_calib_plan *plan,
			 struct ks_calib_team *team, struct ks_calib *c,
			 struct ks_err *err);

struct ks_calib_mem_point {
	uint64_t total;       /* working set of all threads, bytes */
	double bytes_per_s;   /* best of the trials */
	bool busy;            /* every trial was disturbed by other work */
};
/* Where a level's bandwidth is read from the sweep. */
struct ks_calib_level {
	char name[16];        /* "L1", ..., "DRAM" */
	uint64_t lo, hi;      /* per-thread share that fits with margin: the
			       * level's points, bounds included */
	uint64_t prev_cap, cap; /* per-thread capacity of the level below and
				 * of this one: the wider window used when no
				 * point lies in [lo, hi] */
	uint64_t total_min;   /* DRAM: smallest total working set (others 0) */
};
/* The levels of machine m for threads threads, fastest first, DRAM last;
 * returns how many (at most KS_CALIB_MAX_CACHES + 1). */
size_t ks_calib_mem_levels(const struct ks_calib_machine *m, int threads,
			   struct ks_calib_level *levels);
/* Bytes of the last-level cache over all its instances, 0 if unknown. */
uint64_t ks_calib_llc_total(const struct ks_calib_machine *m);
/* The working sets the sweep measures, ascending; returns how many. */
size_t ks_calib_mem_sizes(const struct ks_calib_machine *m,
			  const struct ks_calib_plan *plan, uint64_t *sizes,
			  size_t max);
/* Index of the best point of level, or -1 if none lies in its window. */
int ks_calib_mem_pick(const struct ks_calib_level *level, int threads,
		      const struct ks_calib_mem_point *pts, size_t npts);

/* Peak FLOP/s with vector FMA chains (calib_flops.c): appends the FP32
 * and FP64 ceilings to c->compute. */
int ks_calib_flops_measure(const struct ks_calib_opts *o,
			   const struct ks_calib_plan *plan,
			   struct ks_calib_team *team, struct ks_calib *c,
			   struct ks_err *err);

/* ---- OpenCL (calib_ocl.c) ---- */

/* The OpenCL devices' "name | driver version", for the machine key; none
 * when libOpenCL.so.1 or a platform is missing. */
size_t ks_calib_ocl_device_ids(char ids[][256], size_t max);
/* Measures the first GPU (else CPU) device's FLOP/s and read bandwidth
 * into c->opencl_* and a compute ceiling.  Returns 0 and sets
 * c->have_opencl, or a negative code with why in err (no OpenCL, or a
 * call that failed): never fatal to the calibration. */
int ks_calib_ocl_measure(const struct ks_calib_opts *o,
			 const struct ks_calib_plan *plan, uint64_t llc_total,
			 struct ks_calib *c, struct ks_err *err);

#endif
