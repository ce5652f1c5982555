/*
 * This machine's roofline ceilings: measured by `kscope calibrate`, cached
 * per machine, read by `kscope op` to place kernels on the roofline.
 *
 * The cache file is $XDG_CACHE_HOME/kscope/calibration-<key>.json
 * ($HOME/.cache when XDG_CACHE_HOME is unset), where <key> is 16 hex
 * digits hashing what identifies the machine (CPU model, logical CPUs,
 * cache sizes, memory size, the OpenCL devices' names and driver
 * versions, and the NVIDIA GPUs' names and driver version when the NVIDIA
 * driver is loaded).  Its JSON:
 *
 *   { "kscope_calibration": 1, "created": "2026-11-22T10:00:00Z",
 *     "machine": { "key": "...", "cpu": "...", "cpus": 2,
 *                  "caches": [ {"level": 1, "bytes": 32768}, ... ],
 *                  "memory_bytes": N },
 *     "memory": [ { "name": "L1", "bytes_per_s": B, "working_set": N }, ...
 *                 { "name": "DRAM", ... } ],      (fastest first)
 *     "compute": [ { "name": "CPU FP32 FMA", "flops_per_s": F,
 *                    "how": "C, AVX2 FMA, 2 threads" }, ...
 *                  { "name": "OpenCL FP32 (<device>)", ... },
 *                  { "name": "CUDA FP32 FMA (<device>)", ... },
 *                  { "name": "CUDA FP16 FMA (<device>)", ... },
 *                  { "name": "CUDA BF16 FMA (<device>)", ... } ],
 *     "opencl": { "device": "...", "bytes_per_s": B, "flops_per_s": F }
 *               or null when no OpenCL device was usable,
 *     "cuda": { "device": "NVIDIA H200", "driver": "580.159.04, CUDA 13.0",
 *               "compute_capability": "9.0", "sms": 132,
 *               "bytes_per_s": B, "bytes_how": "...",
 *               "fp32_flops_per_s": F, "fp32_how": "...",
 *               "fp16_flops_per_s": F, "fp16_how": "...",
 *               "bf16_flops_per_s": F, "bf16_how": "..." }
 *             or null when no CUDA device was measured }
 *
 * The CUDA device's read bandwidth is not in "memory": that list is the
 * CPU's hierarchy, which a CPU kernel's roofline draws in full; kscope op
 * takes a CUDA kernel's memory ceiling from "cuda" instead.
 *
 * Keys added since (readers ignore keys they do not know; all optional
 * when reading): "quick": true when measured by `kscope calibrate --quick`;
 * "threads": the CPU threads the measurement used; in "machine", each
 * cache's "type" ("Data" or "Unified") and "shared_cpus", and
 * "opencl_devices" (the "name | driver" strings the key hashes); in each
 * memory ceiling, "how"; in "opencl", "driver"; "cuda" and, in
 * "machine", "cuda_devices" (the "name | driver" strings the key hashes;
 * absent or empty when the machine has no NVIDIA driver loaded, whose key
 * is then what it was before CUDA was measured).  In "cuda", "device",
 * "bytes_per_s" and "fp32_flops_per_s" are required; a missing
 * "bf16_flops_per_s" means BF16 was not measured (a device before sm_80).
 *
 * The first part (path, load) is what `kscope op` needs.  The second part
 * (probe, prepare, measure, save) is `kscope calibrate`'s.  Probing the
 * machine lists its OpenCL devices, and measuring uses one: both run in a
 * short-lived child process (fork; libOpenCL.so.1, and libcuda.so.1 for
 * the CUDA measurement, are opened there, never in the caller), which the
 * call waits for by its pid.  The CUDA devices of the key are read from
 * /proc/driver/nvidia, without starting the driver.  So call these
 * from kscope itself, never from a program under test, and not while a
 * SIGCHLD handler or a waitpid(-1) loop of the caller could reap that
 * child.  Listing the devices takes a few tens of milliseconds.
 */
#ifndef KS_OP_CALIB_H
#define KS_OP_CALIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define KS_CALIB_MAX 16
#define KS_CALIB_VERSION 1
#define KS_CALIB_MAX_CACHES 8   /* data and unified cache levels kept */
#define KS_CALIB_MAX_DEVICES 8  /* OpenCL (and CUDA) devices the key hashes */

struct ks_calib_ceiling {
	char name[96];
	double per_s;        /* bytes/s (memory) or FLOP/s (compute) */
	char how[96];        /* how it was measured, or "" */
	uint64_t working_set; /* memory: total bytes of the best working set;
			       * 0 for compute */
};

/* One data or unified cache level of CPU 0, from sysfs. */
struct ks_calib_cache {
	int level;
	char type[16];       /* "Data" or "Unified" */
	uint64_t bytes;      /* one instance */
	int shared_cpus;     /* logical CPUs sharing one instance */
};

/* What identifies the machine; its hash is the key. */
struct ks_calib_machine {
	char key[17];
	char cpu[128];       /* model name */
	int cpus;            /* logical CPUs configured */
	size_t ncaches;
	struct ks_calib_cache caches[KS_CALIB_MAX_CACHES]; /* by level */
	uint64_t memory_bytes;
	size_t ndevices;
	char devices[KS_CALIB_MAX_DEVICES][256]; /* "name | driver version" */
	size_t ncuda;
	char cuda_devices[KS_CALIB_MAX_DEVICES][256]; /* NVIDIA GPUs, "name |
							* driver version" */
};

/* The CUDA device kscope calibrate measured (device 0). */
struct ks_calib_cuda {
	char device[128];    /* cuDeviceGetName */
	char driver[128];    /* "580.159.04, CUDA 13.0", or "" */
	char cc[16];         /* compute capability, "9.0", or "" */
	int sms;             /* multiprocessors, 0 if not known */
	double bytes_per_s;  /* DRAM read bandwidth */
	double fp32, fp16, bf16; /* FMA FLOP/s; bf16 0: not measured */
	char bytes_how[96], fp32_how[96], fp16_how[96], bf16_how[96];
};

struct ks_calib {
	char path[4096];     /* the cache file */
	char key[17];
	char created[32];
	size_t nmem, ncompute;
	struct ks_calib_ceiling mem[KS_CALIB_MAX];     /* fastest first */
	struct ks_calib_ceiling compute[KS_CALIB_MAX];
	int have_opencl;
	char opencl_device[128];
	double opencl_bytes_per_s, opencl_flops_per_s;
	/* Added with the measurement; filled by load when the file has them. */
	bool quick;          /* a --quick measurement */
	int threads;         /* CPU threads used, 0 if not known */
	char opencl_driver[128];
	struct ks_calib_machine machine;
	bool have_cuda;
	struct ks_calib_cuda cuda;
};

/* The cache file's path for this machine, into path (size bytes). */
int ks_calib_path(char *path, size_t size, struct ks_err *err);
/* Reads this machine's cached calibration.  -ENOENT when there is none
 * (err says to run `kscope calibrate`), -EINVAL when the file is damaged
 * (err names it and what is wrong).  Also -EPERM when the cache directory
 * is another user's or writable by others, and other negative errno codes
 * when the file cannot be read.  On failure c holds only path and machine.
 * Memory ceilings come out fastest first, whatever the file's order. */
int ks_calib_load(struct ks_calib *c, struct ks_err *err);
/* Starts listing this machine's OpenCL devices (part of its key) in a
 * child process, for the next ks_calib_load or ks_calib_machine_probe of
 * this process to use: a caller that will load the calibration after a
 * long wait (a program running under kscope) calls it before the wait,
 * so that the listing (tens of milliseconds, the driver loaded) overlaps
 * it.  A listing that fails or was stopped is done again when used. */
void ks_calib_prefetch(void);

/* ---- measuring (kscope calibrate) ---- */

/* Fills m with this machine's identity and its key. */
int ks_calib_machine_probe(struct ks_calib_machine *m, struct ks_err *err);

/* Starts a new calibration in c: probes the machine, sets key and path,
 * and creates the cache directory (0700, with a missing $XDG_CACHE_HOME)
 * or checks that the existing one belongs to the user and is not writable
 * by others, so that a measurement never ends unable to save. */
int ks_calib_prepare(struct ks_calib *c, struct ks_err *err);

struct ks_calib_opts {
	bool quick;          /* a reduced sweep of a few seconds */
	int threads;         /* CPU threads; 0: one per CPU kscope may use */
	bool opencl;         /* also measure the first OpenCL GPU or CPU device */
	bool cuda;           /* also measure CUDA device 0 */
	/* Called as the measurement advances: phase is "memory", "compute",
	 * "opencl" or "cuda", what the current step measures, step of steps. */
	void (*progress)(void *arg, const char *phase, const char *what,
			 int step, int steps);
	/* Something the user should hear (why OpenCL was not measured, a
	 * level that could not be measured); warn: it makes a ceiling
	 * missing or less trustworthy. */
	void (*note)(void *arg, bool warn, const char *msg);
	void *arg;
};

/* Measures the ceilings into c (after ks_calib_prepare): memory
 * bandwidth per cache level and DRAM, peak CPU FLOP/s, the OpenCL
 * device's and the CUDA device's.  Fails only when the CPU measurement
 * itself fails; a missing OpenCL or CUDA is a note. */
int ks_calib_measure(const struct ks_calib_opts *o, struct ks_calib *c,
		     struct ks_err *err);

/* Writes c to c->path atomically (temporary name, then rename over any
 * older file), mode 0600. */
int ks_calib_save(const struct ks_calib *c, struct ks_err *err);

/* ---- the host chip of kscope predict (calib_chip.c) ---- */

/*
 * `kscope calibrate` also measures one core of this machine as a chip
 * for kscope predict (docs/predict.md, "The chips") and writes it to
 * $XDG_DATA_HOME/kscope/chips/host.json ($HOME/.local/share when
 * XDG_DATA_HOME is unset or relative), where kscope predict finds the
 * chip "host".  Its provenance says "kscope calibrate", the date, whether
 * the run was --quick, and the machine, whose "key" hashes the CPU part
 * of the machine's identity (CPU model, logical CPUs, caches, memory
 * size; not the OpenCL devices, which the chip does not depend on).
 */
struct ks_calib_chip {
	char path[4096];     /* host.json */
	char key[17];        /* the machine key it was measured for */
	char created[32];    /* provenance.date */
	bool quick;          /* measured by a --quick run */
	double clock_hz;
	/* For the summary: bytes per second of the GM->UB (read) and UB->GM
	 * (write) paths at their smallest and largest footprints. */
	double read_small, read_large, write_small, write_large;
	uint64_t small_fp, large_fp; /* those footprints, bytes */
	size_t ninstr;       /* instructions with at least one table */
	char *json;          /* the file's text; owned, see ks_calib_chip_free */
};

/* host.json's path, into path (size bytes). */
int ks_calib_chip_path(char *path, size_t size, struct ks_err *err);
/* Reads host.json and checks that it is kscope calibrate's for machine m:
 * -ENOENT when there is none, -EINVAL when it is damaged or not written
 * by kscope calibrate, -ESTALE when it was measured on another machine
 * (err says which), -EPERM when its directory is another user's or
 * writable by others.  h->path is set in every case. */
int ks_calib_chip_load(struct ks_calib_chip *h, const struct ks_calib_machine *m,
		       struct ks_err *err);
/* Sets h->path, and creates its directory (0700, parents too) or checks
 * that it is the user's and not writable by others. */
int ks_calib_chip_prepare(struct ks_calib_chip *h, struct ks_err *err);
/* Measures the host chip of machine m on one pinned thread into h (after
 * ks_calib_chip_prepare), reporting progress as phase "chip".  o->quick
 * shortens it to a few seconds; o->threads and o->opencl do not apply. */
int ks_calib_chip_measure(const struct ks_calib_opts *o, const struct ks_calib_machine *m,
			  struct ks_calib_chip *h, struct ks_err *err);
/* Writes h->json to h->path atomically, mode 0600. */
int ks_calib_chip_save(const struct ks_calib_chip *h, struct ks_err *err);
void ks_calib_chip_free(struct ks_calib_chip *h);

#endif
