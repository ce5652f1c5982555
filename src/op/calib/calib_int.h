/*
 * Private to src/op/calib: what the calibration's files share.  The team
 * of pinned threads that runs a kernel on every CPU at once, the memory
 * and compute kernels and measurements, the child processes that talk to
 * GPU drivers, the OpenCL and CUDA parts, the host chip's
 * kernels and figures, and small helpers (among them writing kscope's
 * private files).  The tests of src/op/calib include it too, to test the
 * level assignment and each kernel on its own.
 */
#ifndef KS_CALIB_INT_H
#define KS_CALIB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "calib.h"

/* x86-64 instruction sets the calibration kernels use: whether the CPU has
 * them and the kernel saves their registers (calib_kernels.c). */
enum ks_calib_cpu_feature { KS_CPU_AVX2, KS_CPU_FMA, KS_CPU_AVX512F };
bool ks_calib_cpu_has(enum ks_calib_cpu_feature f);

/* CLOCK_MONOTONIC in seconds. */
double ks_calib_now(void);

/* Reports progress and notes through the caller's callbacks, if any. */
void ks_calib_progress(const struct ks_calib_opts *o, const char *phase,
		       const char *what, int step, int steps);
void ks_calib_note(const struct ks_calib_opts *o, bool warn, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* "32 KiB", "1.5 MiB": a byte count for people. */
void ks_calib_fmt_bytes(uint64_t bytes, char *buf, size_t size);

/* ---- kscope's private files (calib_file.c) ---- */

/* Creates dir and its missing parents, 0700 each. */
int ks_calib_mkdir_p(const char *dir, struct ks_err *err);
/* -EPERM unless dir is the user's and not writable by others (-ENOTDIR,
 * or the stat error, when it is not a directory). */
int ks_calib_check_dir(const char *dir, struct ks_err *err);
/* Writes text and a newline to path in one step: a temporary file in the
 * same directory (mode 0600), flushed to disk, renamed over path. */
int ks_calib_write_atomic(const char *path, const char *text, struct ks_err *err);

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

/* ---- the host chip's kernels (calib_chip_kernels.c) ---- */

/* The data types the host chip's instruction tables cover. */
enum ks_calib_dt { KS_CALIB_FP32, KS_CALIB_FP64, KS_CALIB_INT32, KS_CALIB_NDT };
extern const char *const ks_calib_dt_names[KS_CALIB_NDT]; /* "fp32", ... */
extern const size_t ks_calib_dt_bytes[KS_CALIB_NDT];

/* A streaming store: v into n doubles at p (64-byte aligned, n a multiple
 * of granule). */
struct ks_calib_write_kernel {
	const char *isa;
	bool (*supported)(void);
	void (*fill)(double *p, size_t n, double v);
	size_t granule;        /* doubles per loop iteration */
};
/* Best first, ending with an entry whose isa is NULL. */
extern const struct ks_calib_write_kernel ks_calib_write_kernels[];
const struct ks_calib_write_kernel *ks_calib_write_kernel_best(void);

/* One vector instruction over n elements: z from x (and y). */
typedef void ks_calib_vec_fn(void *z, const void *x, const void *y, size_t n);
enum ks_calib_vec_shape {
	KS_CALIB_VEC_BINARY,   /* z[i] = x[i] op y[i] */
	KS_CALIB_VEC_SCALAR,   /* z[i] = x[i] op y[0] */
	KS_CALIB_VEC_UNARY,    /* z[i] = op(x[i]) */
	KS_CALIB_VEC_CONV,     /* z[i] = x[i] as conv_to */
	KS_CALIB_VEC_REDUCE,   /* z[0] = op over x[0..n-1] */
};
struct ks_calib_vec_kernel {
	const char *name;      /* the instruction's name in the chip file */
	enum ks_calib_vec_shape shape;
	ks_calib_vec_fn *fn[KS_CALIB_NDT]; /* per input type; NULL: none */
	int conv_to[KS_CALIB_NDT];         /* vconv: the output's type */
};
/* Ends with an entry whose name is NULL. */
extern const struct ks_calib_vec_kernel ks_calib_vec_kernels[];

/* c[m][n] += a[m][k] * b[k][n], row-major, of one data type. */
typedef void ks_calib_mmad_fn(void *c, const void *a, const void *b, size_t m,
			      size_t k, size_t n);
extern ks_calib_mmad_fn *const ks_calib_mmad_kernels[KS_CALIB_NDT];

/* ops dependent integer operations (a multiple of 4), starting from x. */
uint64_t ks_calib_scalar_chain(uint64_t x, long ops);

/* ---- the host chip: its figures (calib_chip.c), its file
 * (calib_chip_file.c) ---- */

#define KS_CALIB_CHIP_MAX_ENTRIES 40 /* of one table */
#define KS_CALIB_CHIP_MAX_VEC 32     /* vector instructions */

/* One measured table: sizes increasing, throughputs per cycle. */
struct ks_calib_chip_table {
	size_t n;
	double size[KS_CALIB_CHIP_MAX_ENTRIES], tput[KS_CALIB_CHIP_MAX_ENTRIES];
};

/* What a measurement of the host chip produced. */
struct ks_calib_chip_figures {
	double clock_hz;
	char clock_how[96];            /* where the clock came from */
	const char *read_isa, *write_isa;
	struct ks_calib_chip_table read, write;  /* GM->UB, UB->GM by footprint */
	struct ks_calib_chip_table vec[KS_CALIB_CHIP_MAX_VEC][KS_CALIB_NDT];
					/* by ks_calib_vec_kernels index */
	struct ks_calib_chip_table mmad[KS_CALIB_NDT];
	double scalar_cpo;             /* cycles per scalar operation */
	int rounds;                    /* trials of each figure */
	int figures, busy;             /* figures, and those disturbed in every
					* trial */
};

/* The machine key of the host chip: calib_machine.c's facts without the
 * OpenCL devices. */
void ks_calib_chip_key(const struct ks_calib_machine *m, char key[17]);
/* The chip file's text for figures f of machine m, into h->json (and
 * h's summary, key, date and quick).  Fails only when out of memory or
 * when a table is not one kscope predict accepts. */
int ks_calib_chip_build(const struct ks_calib_opts *o, const struct ks_calib_machine *m,
			const struct ks_calib_chip_figures *f, struct ks_calib_chip *h,
			struct ks_err *err);

/* ---- the machine's key (calib_machine.c) ---- */

/* Sets m->key: the 64-bit FNV-1a hash of m's identifying facts as text.
 * Without CUDA devices (m->ncuda 0) the text, and so the key, is what it
 * was before kscope measured CUDA devices: old files stay valid. */
void ks_calib_machine_key(struct ks_calib_machine *m);

/* ---- child processes for GPU drivers (calib_child.c) ---- */

typedef void ks_calib_child_fn(void *arg, int fd);

/* Runs fn(arg, fd) in a child process (the caller's signal handlers, mask
 * and other descriptors dropped) that writes its answers to fd and exits
 * with _exit; *rfd is the read end of its pipe, *pid the child. */
int ks_calib_child_start(ks_calib_child_fn *fn, void *arg, pid_t *pid, int *rfd,
			 struct ks_err *err);
/* One whole message of size bytes (at most PIPE_BUF) to fd. */
void ks_calib_child_write(int fd, const void *m, size_t size);
/* Reads one whole message before deadline (ks_calib_now() seconds): 1, 0
 * at end of file, or a negative code (-ETIMEDOUT). */
int ks_calib_child_read(int fd, void *buf, size_t size, double deadline);
/* Closes fd and waits for the child, killing it first if asked; returns
 * its wait status. */
int ks_calib_child_end(pid_t pid, int fd, bool kill_it);
/* Why the child ended without an answer (rc from ks_calib_child_read,
 * status from ks_calib_child_end, timeout the limit in seconds), into err. */
int ks_calib_child_failed(int rc, int status, int timeout, struct ks_err *err);

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

/* ---- CUDA (calib_cuda.c, calib_cuda_ptx.c) ---- */

/* The NVIDIA GPUs' "name | driver version", for the machine key, read from
 * root (/proc/driver/nvidia: gpus/<PCI address>/information and version)
 * in PCI order, without loading libcuda or starting the driver; none when
 * root is missing (no NVIDIA driver loaded). */
size_t ks_calib_cuda_device_ids(const char *root, char ids[][256], size_t max);
/* Measures CUDA device 0's read bandwidth and FP32, FP16 and BF16 FMA
 * FLOP/s into c->cuda and three compute ceilings.  Returns 0 and sets
 * c->have_cuda, or a negative code with why in err (no driver, the
 * toolkit's stub library, no device, a call that failed): never fatal to
 * the calibration.  A skipped BF16 (a device before sm_80) is a note. */
int ks_calib_cuda_measure(const struct ks_calib_opts *o,
			  const struct ks_calib_plan *plan, struct ks_calib *c,
			  struct ks_err *err);

/* The calibration's PTX kernels, each a module of one entry point. */
enum ks_calib_ptx {
	KS_CALIB_PTX_READ,     /* ks_read: the sum of a buffer */
	KS_CALIB_PTX_FP32,     /* ks_fma_fp32: fma.rn.f32 chains */
	KS_CALIB_PTX_FP16,     /* ks_fma_fp16: fma.rn.f16x2 chains */
	KS_CALIB_PTX_BF16,     /* ks_fma_bf16: fma.rn.bf16x2 chains (sm_80) */
	KS_CALIB_NPTX
};
#define KS_CALIB_PTX_BLOCK 256     /* threads per block, every kernel */
#define KS_CALIB_PTX_CHAINS 8      /* independent chains per thread */
#define KS_CALIB_PTX_UNROLL 16     /* fma of each chain per loop round */
#define KS_CALIB_PTX_READ_UNROLL 4 /* 16-byte loads per thread per round */
struct ks_calib_ptx_info {
	const char *entry;     /* "ks_read", "ks_fma_fp32", ... */
	const char *target;    /* "sm_75" or "sm_80": the oldest it runs on */
	int lanes;             /* values per register: 1 (f32) or 2 (x2) */
};
extern const struct ks_calib_ptx_info ks_calib_ptx_info[KS_CALIB_NPTX];
/* The PTX text of kernel k, NUL-terminated, into buf (size bytes);
 * returns its length, or -ENOSPC when buf is too small (KS_CALIB_PTX_MAX
 * bytes is enough for each). */
#define KS_CALIB_PTX_MAX 16384
int ks_calib_ptx_text(enum ks_calib_ptx k, char *buf, size_t size);

#endif
