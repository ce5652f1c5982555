/*
 * This machine's roofline ceilings: measured by `kscope calibrate`, cached
 * per machine, read by `kscope op` to place kernels on the roofline.
 *
 * The cache file is $XDG_CACHE_HOME/kscope/calibration-<key>.json
 * ($HOME/.cache when XDG_CACHE_HOME is unset), where <key> is 16 hex
 * digits hashing what identifies the machine (CPU model, logical CPUs,
 * cache sizes, memory size, and the OpenCL devices' names and driver
 * versions).  Its JSON:
 *
 *   { "kscope_calibration": 1, "created": "2026-11-22T10:00:00Z",
 *     "machine": { "key": "...", "cpu": "...", "cpus": 2,
 *                  "caches": [ {"level": 1, "bytes": 32768}, ... ],
 *                  "memory_bytes": N },
 *     "memory": [ { "name": "L1", "bytes_per_s": B, "working_set": N }, ...
 *                 { "name": "DRAM", ... } ],      (fastest first)
 *     "compute": [ { "name": "CPU FP32 FMA", "flops_per_s": F,
 *                    "how": "C, AVX2 FMA, 2 threads" }, ...
 *                  { "name": "OpenCL FP32 (<device>)", ... } ],
 *     "opencl": { "device": "...", "bytes_per_s": B, "flops_per_s": F }
 *               or null when no OpenCL device was usable }
 */
#ifndef KS_OP_CALIB_H
#define KS_OP_CALIB_H

#include <stddef.h>

#include "err.h"

#define KS_CALIB_MAX 16

struct ks_calib_ceiling {
	char name[96];
	double per_s;        /* bytes/s (memory) or FLOP/s (compute) */
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
};

/* The cache file's path for this machine, into path (size bytes). */
int ks_calib_path(char *path, size_t size, struct ks_err *err);
/* Reads this machine's cached calibration.  -ENOENT when there is none
 * (err says to run `kscope calibrate`), -EINVAL when the file is damaged
 * (err names it and what is wrong). */
int ks_calib_load(struct ks_calib *c, struct ks_err *err);

#endif
