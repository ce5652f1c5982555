/*
 * The CUDA ceilings: read bandwidth and FP32, FP16 and BF16 FMA FLOP/s of
 * CUDA device 0, and the list of NVIDIA GPUs that goes into the machine
 * key.  The CUDA counterpart of calib_ocl.c, and built the same way.
 *
 * kscope does not link libcuda: libcuda.so.1 (the driver) is opened at
 * run time, in a child process (calib_child.c) that sends its answers
 * back through a pipe and exits, so that the driver's threads, memory,
 * crashes and hangs never reach kscope (a crash or a hang becomes a note
 * after a time limit).  Where no driver is installed, where libcuda.so.1
 * is the toolkit's stub (every call fails with CUDA_ERROR_STUB_LIBRARY),
 * or where there is no device, the measurement ends with a one-line why,
 * never a failed calibration.  The machine key's list comes from
 * /proc/driver/nvidia instead, which costs no driver start: kscope op
 * computes the key on every run, and starting the CUDA driver takes
 * seconds on some machines.
 *
 * The device runs the PTX kernels of calib_cuda_ptx.c, which the driver
 * compiles for it, each launch timed with events (best of several):
 *   ks_read      the sum of a buffer of 8 times the L2 cache and at least
 *                1 GiB (--quick: 256 MiB), within half the free memory,
 *                filled with cuMemsetD32 so that the exact sum is known,
 *                read passes times over per launch so that a launch lasts
 *                about 50 ms (--quick: 10 ms); every launch's sum is
 *                checked;
 *   ks_fma_TYPE  KS_CALIB_PTX_CHAINS chains of fma per thread, FP32,
 *                FP16x2 and BF16x2 (BF16 on sm_80 and later), one full
 *                wave of blocks on every SM (the occupancy the driver
 *                reports), rounds grown until a launch lasts 50 ms
 *                (--quick: 10 ms); every thread's result is read back and
 *                checked to lie where the chains must end.
 * FLOPs are two per fma per lane (f16x2 and bf16x2: two lanes).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calib_int.h"

#define MIB (1024ull * 1024)
#define GIB (1024ull * MIB)
#define NVIDIA_PROC "/proc/driver/nvidia"
#define READ_PATTERN 3u        /* every 32-bit word of ks_read's buffer */

/* ---------------------------------------------------------------------
 * The driver API, as far as kscope uses it
 *
 * Declared here rather than taken from the toolkit's cuda.h, so that the
 * calibration builds where the toolkit is not installed.  The types and
 * values are the driver's stable ABI (cuda.h of CUDA 13.0 has them so);
 * the entry points are the exported names that cuda.h's macros map to
 * (cuMemAlloc is cuMemAlloc_v2, and so on).
 * --------------------------------------------------------------------- */

typedef int cu_result;
typedef int cu_device;
typedef unsigned long long cu_ptr;
typedef struct cu_ctx_st *cu_ctx;
typedef struct cu_mod_st *cu_module;
typedef struct cu_func_st *cu_function;
typedef struct cu_event_st *cu_event;
typedef struct cu_stream_st *cu_stream;

enum {
	CU_SUCCESS = 0,
	CU_ERROR_STUB_LIBRARY = 34,
	CU_ERROR_NO_DEVICE = 100,
	CU_ATTR_MULTIPROCESSOR_COUNT = 16,
	CU_ATTR_L2_CACHE_SIZE = 38,
	CU_ATTR_MAX_THREADS_PER_SM = 39,
	CU_ATTR_CC_MAJOR = 75,
	CU_ATTR_CC_MINOR = 76,
};

struct cu_api {
	cu_result (*Init)(unsigned int flags);
	cu_result (*DriverGetVersion)(int *version);
	cu_result (*DeviceGetCount)(int *count);
	cu_result (*DeviceGet)(cu_device *dev, int ordinal);
	cu_result (*DeviceGetName)(char *name, int len, cu_device dev);
	cu_result (*DeviceGetAttribute)(int *v, int attr, cu_device dev);
	cu_result (*DevicePrimaryCtxRetain)(cu_ctx *ctx, cu_device dev);
	cu_result (*DevicePrimaryCtxRelease)(cu_device dev);
	cu_result (*CtxSetCurrent)(cu_ctx ctx);
	cu_result (*CtxSynchronize)(void);
	cu_result (*ModuleLoadData)(cu_module *mod, const void *image);
	cu_result (*ModuleUnload)(cu_module mod);
	cu_result (*ModuleGetFunction)(cu_function *f, cu_module mod, const char *name);
	cu_result (*MemGetInfo)(size_t *free_bytes, size_t *total);
	cu_result (*MemAlloc)(cu_ptr *p, size_t bytes);
	cu_result (*MemFree)(cu_ptr p);
	cu_result (*MemsetD32)(cu_ptr p, unsigned int v, size_t n);
	cu_result (*MemcpyDtoH)(void *dst, cu_ptr src, size_t bytes);
	cu_result (*LaunchKernel)(cu_function f, unsigned int gx, unsigned int gy,
				  unsigned int gz, unsigned int bx, unsigned int by,
				  unsigned int bz, unsigned int shared, cu_stream s,
				  void **params, void **extra);
	cu_result (*OccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks, cu_function f,
								int block, size_t shared);
	cu_result (*EventCreate)(cu_event *e, unsigned int flags);
	cu_result (*EventRecord)(cu_event e, cu_stream s);
	cu_result (*EventSynchronize)(cu_event e);
	cu_result (*EventElapsedTime)(float *ms, cu_event start, cu_event end);
	cu_result (*EventDestroy)(cu_event e);
	cu_result (*GetErrorName)(cu_result rc, const char **name); /* or NULL */
	char path[PATH_MAX];  /* the library's real path, or "" */
};

/* Opens libcuda.so.1 and finds every entry point in api. */
static int cu_load(struct cu_api *api, struct ks_err *err)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	struct link_map *lm = NULL;
	const char *missing = NULL;

	if (!lib)
		return ks_err_set(err, -ENOENT, "no NVIDIA driver: cannot load "
				  "libcuda.so.1 (%s)", dlerror());
	api->path[0] = '\0';
	if (dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name ||
	    !realpath(lm->l_name, api->path))
		api->path[0] = '\0';
	/* POSIX guarantees that dlsym's void * holds a function pointer. */
#define SYM_AS(f, name, need)                                               \
	do {                                                                \
		void *sym_ = dlsym(lib, name);                              \
		memcpy(&api->f, &sym_, sizeof(sym_));                       \
		if (!sym_ && (need) && !missing)                            \
			missing = name;                                     \
	} while (0)
#define SYM(f) SYM_AS(f, "cu" #f, true)
	SYM(Init); SYM(DriverGetVersion); SYM(DeviceGetCount); SYM(DeviceGet);
	SYM(DeviceGetName); SYM(DeviceGetAttribute); SYM(DevicePrimaryCtxRetain);
	SYM_AS(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", true);
	SYM(CtxSetCurrent); SYM(CtxSynchronize); SYM(ModuleLoadData);
	SYM(ModuleUnload); SYM(ModuleGetFunction);
	SYM_AS(MemGetInfo, "cuMemGetInfo_v2", true);
	SYM_AS(MemAlloc, "cuMemAlloc_v2", true);
	SYM_AS(MemFree, "cuMemFree_v2", true);
	SYM_AS(MemsetD32, "cuMemsetD32_v2", true);
	SYM_AS(MemcpyDtoH, "cuMemcpyDtoH_v2", true);
	SYM(LaunchKernel); SYM(OccupancyMaxActiveBlocksPerMultiprocessor);
	SYM(EventCreate); SYM(EventRecord); SYM(EventSynchronize);
	/* cuda.h maps cuEventElapsedTime to _v2 since CUDA 12.8; older
	 * drivers export the first version only, with the same arguments. */
	SYM_AS(EventElapsedTime, "cuEventElapsedTime_v2", false);
	if (!api->EventElapsedTime)
		SYM(EventElapsedTime);
	SYM_AS(EventDestroy, "cuEventDestroy_v2", true);
	SYM_AS(GetErrorName, "cuGetErrorName", false);
#undef SYM
#undef SYM_AS
	/* lib stays open on purpose: the child exits with it. */
	if (missing)
		return ks_err_set(err, -ENOSYS, "libcuda.so.1%s%s%s lacks %s (a driver "
				  "older than kscope supports)", api->path[0] ? " (" : "",
				  api->path, api->path[0] ? ")" : "", missing);
	return 0;
}

/* "CUDA_ERROR_OUT_OF_MEMORY (2)", or the number alone. */
static void cu_name(const struct cu_api *api, cu_result rc, char *buf, size_t size)
{
	const char *name = NULL;

	if (api->GetErrorName && api->GetErrorName(rc, &name) == CU_SUCCESS && name)
		snprintf(buf, size, "%s (%d)", name, rc);
	else
		snprintf(buf, size, "error %d", rc);
}

/* -EIO with "what failed: CUDA_ERROR_... (n)" when rc is not success. */
static int cu_check(const struct cu_api *api, cu_result rc, const char *what,
		    struct ks_err *err)
{
	char n[96];

	if (rc == CU_SUCCESS)
		return 0;
	cu_name(api, rc, n, sizeof(n));
	return ks_err_set(err, -EIO, "%s failed: %s", what, n);
}

/* Returns from the calling function when call fails (nothing to free). */
#define CU_TRY(api, call, what)                                             \
	do {                                                                \
		int cu_try_ = cu_check((api), (call), (what), err);         \
		if (cu_try_)                                                \
			return cu_try_;                                     \
	} while (0)

/* ---------------------------------------------------------------------
 * The NVIDIA driver's version and GPUs, from /proc
 * --------------------------------------------------------------------- */

/* The kernel module's version ("580.159.04") from root/version, whose
 * first line reads "NVRM version: NVIDIA UNIX ... Kernel Module  580.159.04
 * Release Build ..."; "" when unknown. */
static void module_version(const char *root, char *out, size_t size)
{
	char path[PATH_MAX], line[512];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/version", root);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) && strncmp(line, "NVRM version:", 13) == 0) {
		/* The first word after "Module" that starts with a digit. */
		char *p = strstr(line, "Module");

		for (char *tok = p ? strtok(p, " \t\n") : NULL; tok;
		     tok = strtok(NULL, " \t\n"))
			if (tok[0] >= '0' && tok[0] <= '9' && strchr(tok, '.')) {
				snprintf(out, size, "%s", tok);
				break;
			}
	}
	fclose(f);
}

/* Keeps printable ASCII, drops trailing blanks. */
static void printable(char *s)
{
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	for (size_t n = strlen(s); n > 0 && s[n - 1] == ' '; n--)
		s[n - 1] = '\0';
}

static int not_dot(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

size_t ks_calib_cuda_device_ids(const char *root, char ids[][256], size_t max)
{
	struct dirent **ents = NULL;
	char dir[PATH_MAX], version[64];
	size_t n = 0;
	int nents;

	snprintf(dir, sizeof(dir), "%s/gpus", root);
	nents = scandir(dir, &ents, not_dot, alphasort);
	if (nents <= 0) {
		free(ents);
		return 0;
	}
	module_version(root, version, sizeof(version));
	for (int i = 0; i < nents; i++) {
		char path[PATH_MAX + 300], line[512], model[160] = "";
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s/information", dir, ents[i]->d_name);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f))
			if (strncmp(line, "Model:", 6) == 0) {
				char *v = line + 6;

				v += strspn(v, " \t");
				v[strcspn(v, "\n")] = '\0';
				snprintf(model, sizeof(model), "%s", v);
				break;
			}
		if (f)
			fclose(f);
		printable(model);
		if (model[0] && n < max)
			snprintf(ids[n++], 256, "%s | %s", model,
				 version[0] ? version : "unknown driver");
		free(ents[i]);
	}
	free(ents);
	return n;
}

/* ---------------------------------------------------------------------
 * Measuring device 0
 * --------------------------------------------------------------------- */

struct cu_run {
	const struct cu_api *api;
	cu_device dev;
	cu_ctx ctx;
	bool have_ctx;
	cu_event start, stop;
	bool quick;
	int sms, cc_major, cc_minor, max_threads_sm, l2;
	char name[128];
};

/* One launch of f over blocks blocks of KS_CALIB_PTX_BLOCK threads,
 * timed with the events. */
static int launch(struct cu_run *r, cu_function f, unsigned int blocks, void **params,
		  double *seconds, struct ks_err *err)
{
	const struct cu_api *api = r->api;
	float ms = 0;

	CU_TRY(api, api->EventRecord(r->start, NULL), "cuEventRecord");
	CU_TRY(api, api->LaunchKernel(f, blocks, 1, 1, KS_CALIB_PTX_BLOCK, 1, 1, 0, NULL,
				      params, NULL), "cuLaunchKernel");
	CU_TRY(api, api->EventRecord(r->stop, NULL), "cuEventRecord");
	CU_TRY(api, api->EventSynchronize(r->stop), "running a calibration kernel");
	CU_TRY(api, api->EventElapsedTime(&ms, r->start, r->stop), "cuEventElapsedTime");
	*seconds = ms > 0 ? (double)ms * 1e-3 : 0;
	return 0;
}

/* Loads kernel k (the driver compiles its PTX) into *mod and *f, and the
 * blocks of one full wave on every SM into *blocks. */
static int load_kernel(struct cu_run *r, enum ks_calib_ptx k, cu_module *mod,
		       cu_function *f, unsigned int *blocks, struct ks_err *err)
{
	const struct cu_api *api = r->api;
	char text[KS_CALIB_PTX_MAX];
	int per_sm = 0;
	cu_result rc;

	if (ks_calib_ptx_text(k, text, sizeof(text)) < 0)
		return ks_err_set(err, -ENOSPC, "the PTX of %s does not fit",
				  ks_calib_ptx_info[k].entry);
	rc = api->ModuleLoadData(mod, text);
	if (rc != CU_SUCCESS) {
		char n[96];

		cu_name(api, rc, n, sizeof(n));
		return ks_err_set(err, -EIO, "the driver could not compile the PTX of %s "
				  "(.target %s) for sm_%d%d: %s", ks_calib_ptx_info[k].entry,
				  ks_calib_ptx_info[k].target, r->cc_major, r->cc_minor, n);
	}
	rc = api->ModuleGetFunction(f, *mod, ks_calib_ptx_info[k].entry);
	if (rc != CU_SUCCESS)
		return cu_check(api, rc, "cuModuleGetFunction", err); /* caller unloads */
	/* Every thread does the same work: exactly the blocks that fit at
	 * once run in one wave, with no half-empty second wave. */
	if (api->OccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, *f, KS_CALIB_PTX_BLOCK,
							   0) != CU_SUCCESS || per_sm < 1)
		per_sm = r->max_threads_sm > 0 ? r->max_threads_sm / KS_CALIB_PTX_BLOCK : 4;
	if (per_sm < 1)
		per_sm = 1;
	*blocks = (unsigned int)(r->sms * per_sm);
	return 0;
}

/* The values of the FMA kernels: m just below one and c with c / (1 - m)
 * about 1, both exact in the kernel's type, as two lanes where it has
 * two. */
struct fma_args {
	unsigned int m, c;    /* the bits the kernel takes */
	int lanes;
	double fix;           /* c / (1 - m) */
};

static void fma_args(enum ks_calib_ptx k, struct fma_args *a)
{
	float m = 0.999f, c = 0.001f;

	a->lanes = ks_calib_ptx_info[k].lanes;
	switch (k) {
	case KS_CALIB_PTX_FP16:
		a->m = 0x3bfe3bfeu;   /* 1 - 2^-10 in each half */
		a->c = 0x14001400u;   /* 2^-10 */
		a->fix = 1;
		return;
	case KS_CALIB_PTX_BF16:
		a->m = 0x3f7f3f7fu;   /* 1 - 2^-8 */
		a->c = 0x3b803b80u;   /* 2^-8 */
		a->fix = 1;
		return;
	default:
		memcpy(&a->m, &m, sizeof(m));
		memcpy(&a->c, &c, sizeof(c));
		a->fix = (double)c / (1 - (double)m);
		return;
	}
}

/* Whether thread t's result v is where the chains end: each chain starts
 * below the fixed point and moves towards it without passing it (a * m +
 * c lies between a and the fixed point, and rounding keeps it there), so
 * the sum lies between the sum of the starts and the chains times the
 * fixed point; FP32 converges, so after many rounds it is that. */
static bool fma_result_ok(const struct fma_args *a, unsigned int t, double v,
			  double fmas_per_chain, bool fp32)
{
	double start = 0, top = KS_CALIB_PTX_CHAINS * a->lanes * a->fix;

	for (int i = 0; i < KS_CALIB_PTX_CHAINS; i++)
		for (int l = 0; l < a->lanes; l++)
			start += 0.001 * (double)(t & 15) + 0.1 * i + 0.05 * l;
	if (!isfinite(v) || v < start * 0.98 || v > top * 1.01)
		return false;
	if (fp32 && fmas_per_chain >= 20000)
		return fabs(v - top) <= top * 1e-3;
	return true;
}

/* FLOP/s of kernel k: rounds grown until a launch lasts about target
 * seconds, then the best of trials launches; the results checked. */
static int measure_fma(struct cu_run *r, enum ks_calib_ptx k, double *flops_per_s,
		       unsigned int *threads_out, struct ks_err *err)
{
	const struct cu_api *api = r->api;
	double target = r->quick ? 0.01 : 0.05, t = 0, best = 0, per_launch;
	int trials = r->quick ? 5 : 20, rc = 0;
	unsigned int blocks, threads, rounds = 64;
	struct fma_args a;
	cu_module mod = NULL;
	cu_function f;
	cu_ptr out = 0;
	float *host = NULL;
	void *params[4];

	fma_args(k, &a);
	rc = load_kernel(r, k, &mod, &f, &blocks, err);
	if (rc)
		goto out;
	threads = blocks * KS_CALIB_PTX_BLOCK;
	if (api->MemAlloc(&out, (size_t)threads * sizeof(float)) != CU_SUCCESS) {
		out = 0;
		rc = ks_err_set(err, -ENOMEM, "cuMemAlloc of %u floats failed", threads);
		goto out;
	}
	params[0] = &out;
	params[1] = &rounds;
	params[2] = &a.m;
	params[3] = &a.c;
	/* A first launch compiles and warms up; then grow the rounds. */
	for (int tries = 0; tries < 12; tries++) {
		rc = launch(r, f, blocks, params, &t, err);
		if (rc)
			goto out;
		if (tries > 0 && (t >= target * 0.5 || rounds >= (1u << 24)))
			break;
		double scale = target / (t > 1e-6 ? t : 1e-6);

		if (tries > 0)
			rounds = scale * rounds > (double)(1u << 24) ? (1u << 24)
				 : (unsigned int)(scale * rounds) + 1;
	}
	per_launch = 2.0 * KS_CALIB_PTX_CHAINS * KS_CALIB_PTX_UNROLL * a.lanes *
		     (double)rounds * (double)threads;
	for (int i = 0; i < trials; i++) {
		rc = launch(r, f, blocks, params, &t, err);
		if (rc)
			goto out;
		if (t > 0 && per_launch / t > best)
			best = per_launch / t;
	}
	host = malloc((size_t)threads * sizeof(float));
	if (!host) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (api->MemcpyDtoH(host, out, (size_t)threads * sizeof(float)) != CU_SUCCESS) {
		rc = ks_err_set(err, -EIO, "cuMemcpyDtoH of the FMA results failed");
		goto out;
	}
	for (unsigned int i = 0; i < threads; i++)
		if (!fma_result_ok(&a, i, host[i], (double)rounds * KS_CALIB_PTX_UNROLL,
				   k == KS_CALIB_PTX_FP32)) {
			rc = ks_err_set(err, -EIO, "%s computed a wrong result on %s "
					"(thread %u: %g)", ks_calib_ptx_info[k].entry,
					r->name, i, (double)host[i]);
			goto out;
		}
	if (best <= 0) {
		rc = ks_err_set(err, -EIO, "%s took no measurable time",
				ks_calib_ptx_info[k].entry);
		goto out;
	}
	*flops_per_s = best;
	*threads_out = threads;
out:
	free(host);
	if (out)
		api->MemFree(out);
	if (mod)
		api->ModuleUnload(mod);
	return rc;
}

/* What the read measurement used, for its "how". */
struct read_shape {
	uint64_t bytes;       /* the buffer */
	unsigned int threads, passes;
};

static int measure_read(struct cu_run *r, double *bytes_per_s, struct read_shape *sh,
			struct ks_err *err)
{
	const struct cu_api *api = r->api;
	double target = r->quick ? 0.01 : 0.05, t = 0, best = 0;
	int trials = r->quick ? 5 : 20, rc = 0;
	uint64_t bytes, per_round, l2 = r->l2 > 0 ? (uint64_t)r->l2 : 0;
	unsigned long long rounds, sum = 0;
	unsigned int blocks, threads, passes = 1;
	size_t free_b = 0, total = 0;
	cu_module mod = NULL;
	cu_function f;
	cu_ptr in = 0, out = 0;
	void *params[4];

	rc = load_kernel(r, KS_CALIB_PTX_READ, &mod, &f, &blocks, err);
	if (rc)
		goto out;
	threads = blocks * KS_CALIB_PTX_BLOCK;
	/* Eight times the L2, so that the L2 holds an eighth of it at most,
	 * and at least 1 GiB (--quick: 256 MiB); within half the free
	 * memory. */
	bytes = 8 * l2;
	if (bytes < (r->quick ? 256 * MIB : GIB))
		bytes = r->quick ? 256 * MIB : GIB;
	if (api->MemGetInfo(&free_b, &total) == CU_SUCCESS && bytes > free_b / 2)
		bytes = free_b / 2;
	per_round = (uint64_t)threads * KS_CALIB_PTX_READ_UNROLL * 16;
	rounds = bytes / per_round;
	if (rounds < 1) {
		rc = ks_err_set(err, -ENOMEM, "%s has too little free memory to measure "
				"its bandwidth (%zu bytes)", r->name, free_b);
		goto out;
	}
	bytes = rounds * per_round;
	if (api->MemAlloc(&in, bytes) != CU_SUCCESS) {
		in = 0;
		rc = ks_err_set(err, -ENOMEM, "cuMemAlloc of %llu bytes failed",
				(unsigned long long)bytes);
		goto out;
	}
	if (api->MemAlloc(&out, sizeof(unsigned long long)) != CU_SUCCESS) {
		out = 0;
		rc = ks_err_set(err, -ENOMEM, "cuMemAlloc failed");
		goto out;
	}
	rc = cu_check(api, api->MemsetD32(in, READ_PATTERN, bytes / 4), "cuMemsetD32", err);
	if (!rc)
		rc = cu_check(api, api->CtxSynchronize(), "cuCtxSynchronize", err);
	if (rc)
		goto out;
	params[0] = &in;
	params[1] = &rounds;
	params[2] = &passes;
	params[3] = &out;
	/* A warm-up launch that also sizes the passes; each later launch is
	 * checked: the 32-bit sum of a warp must not wrap. */
	for (int i = -1; i < trials; i++) {
		unsigned long long want;

		rc = cu_check(api, api->MemsetD32(out, 0, 2), "cuMemsetD32", err);
		if (!rc)
			rc = launch(r, f, blocks, params, &t, err);
		if (!rc)
			rc = cu_check(api, api->MemcpyDtoH(&sum, out, sizeof(sum)),
				      "cuMemcpyDtoH", err);
		if (rc)
			goto out;
		want = (unsigned long long)READ_PATTERN * (bytes / 4) * passes;
		if (sum != want) {
			rc = ks_err_set(err, -EIO, "ks_read summed %llu instead of %llu on "
					"%s", sum, want, r->name);
			goto out;
		}
		if (i < 0) {
			double scale = target / (t > 1e-6 ? t : 1e-6);
			/* Per thread 4 words of READ_PATTERN a load, a warp 32
			 * threads: below 2^32. */
			double cap = 4294967295.0 / (32.0 * 4 * KS_CALIB_PTX_READ_UNROLL *
						     READ_PATTERN * (double)rounds);

			passes = scale < 1 ? 1 : (unsigned int)(scale < cap ? scale : cap);
			if (passes < 1)
				passes = 1;
			continue;
		}
		if (t > 0 && (double)bytes * passes / t > best)
			best = (double)bytes * passes / t;
	}
	if (best <= 0) {
		rc = ks_err_set(err, -EIO, "ks_read took no measurable time");
		goto out;
	}
	*bytes_per_s = best;
	sh->bytes = bytes;
	sh->threads = threads;
	sh->passes = passes;
out:
	if (in)
		api->MemFree(in);
	if (out)
		api->MemFree(out);
	if (mod)
		api->ModuleUnload(mod);
	return rc;
}

/* ---------------------------------------------------------------------
 * The child process and the parent's side
 * --------------------------------------------------------------------- */

#define MEASURE_TIMEOUT 600   /* seconds for the whole measurement */

enum { MSG_PROGRESS = 1, MSG_DONE = 2 };

/* What the child sends: progress, then one MSG_DONE with the result.
 * Smaller than PIPE_BUF, so each write arrives whole. */
struct cu_msg {
	int kind;
	int step, steps;          /* MSG_PROGRESS */
	char what[64];
	int rc;                   /* MSG_DONE: 0 or a negative code */
	char error[512];          /*   why, when rc != 0 */
	char name[128];
	int cuda_version, ndevices, sms, cc_major, cc_minor, l2;
	double bytes_per_s, fp32, fp16, bf16;  /* bf16 0: not measured */
	char bf16_why[256];
	unsigned int read_threads, read_passes, fma_threads[3];
	unsigned long long read_bytes;
};

_Static_assert(sizeof(struct cu_msg) < 4096,
	       "a message must fit in one atomic pipe write (PIPE_BUF)");

struct measure_arg {
	bool quick;
};

static void progress(int fd, const char *what, int step, int steps)
{
	struct cu_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = MSG_PROGRESS;
	m.step = step;
	m.steps = steps;
	snprintf(m.what, sizeof(m.what), "%s", what);
	ks_calib_child_write(fd, &m, sizeof(m));
}

/* Starts the driver and opens device 0's primary context. */
static int open_device(struct cu_run *r, struct cu_msg *m, struct ks_err *err)
{
	const struct cu_api *api = r->api;
	cu_result rc = api->Init(0);
	char n[96];

	if (rc == CU_ERROR_STUB_LIBRARY || (rc != CU_SUCCESS && strstr(api->path, "/stubs/")))
		return ks_err_set(err, -ENODEV, "libcuda.so.1 is the CUDA toolkit's stub "
				  "library (%s), not an NVIDIA driver",
				  api->path[0] ? api->path : "path unknown");
	if (rc == CU_ERROR_NO_DEVICE)
		return ks_err_set(err, -ENODEV, "no CUDA device (cuInit: "
				  "CUDA_ERROR_NO_DEVICE)");
	if (rc != CU_SUCCESS) {
		cu_name(api, rc, n, sizeof(n));
		return ks_err_set(err, -EIO, "cuInit failed: %s", n);
	}
	if (api->DriverGetVersion(&m->cuda_version) != CU_SUCCESS)
		m->cuda_version = 0;
	CU_TRY(api, api->DeviceGetCount(&m->ndevices), "cuDeviceGetCount");
	if (m->ndevices < 1)
		return ks_err_set(err, -ENODEV, "no CUDA device");
	CU_TRY(api, api->DeviceGet(&r->dev, 0), "cuDeviceGet");
	CU_TRY(api, api->DeviceGetName(r->name, (int)sizeof(r->name) - 1, r->dev),
	       "cuDeviceGetName");
	r->name[sizeof(r->name) - 1] = '\0';
	printable(r->name);
	CU_TRY(api, api->DeviceGetAttribute(&r->sms, CU_ATTR_MULTIPROCESSOR_COUNT, r->dev),
	       "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
	CU_TRY(api, api->DeviceGetAttribute(&r->cc_major, CU_ATTR_CC_MAJOR, r->dev),
	       "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
	CU_TRY(api, api->DeviceGetAttribute(&r->cc_minor, CU_ATTR_CC_MINOR, r->dev),
	       "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
	if (api->DeviceGetAttribute(&r->l2, CU_ATTR_L2_CACHE_SIZE, r->dev) != CU_SUCCESS)
		r->l2 = 0;
	if (api->DeviceGetAttribute(&r->max_threads_sm, CU_ATTR_MAX_THREADS_PER_SM,
				    r->dev) != CU_SUCCESS)
		r->max_threads_sm = 0;
	if (r->sms < 1)
		return ks_err_set(err, -EIO, "%s reports no multiprocessor", r->name);
	CU_TRY(api, api->DevicePrimaryCtxRetain(&r->ctx, r->dev),
	       "cuDevicePrimaryCtxRetain");
	r->have_ctx = true;
	CU_TRY(api, api->CtxSetCurrent(r->ctx), "cuCtxSetCurrent");
	CU_TRY(api, api->EventCreate(&r->start, 0), "cuEventCreate");
	CU_TRY(api, api->EventCreate(&r->stop, 0), "cuEventCreate");
	return 0;
}

static void child_measure(void *arg, int fd)
{
	const struct measure_arg *a = arg;
	struct read_shape sh;
	struct cu_msg m;
	struct cu_api api;
	struct cu_run r;
	struct ks_err err;
	int rc;

	memset(&m, 0, sizeof(m));
	memset(&r, 0, sizeof(r));
	memset(&sh, 0, sizeof(sh));
	ks_err_clear(&err);
	r.quick = a->quick;
	rc = cu_load(&api, &err);
	if (!rc) {
		r.api = &api;
		progress(fd, "finding a device", 0, 5);
		rc = open_device(&r, &m, &err);
	}
	if (!rc) {
		progress(fd, "read bandwidth", 1, 5);
		rc = measure_read(&r, &m.bytes_per_s, &sh, &err);
	}
	if (!rc) {
		progress(fd, "FP32 FMA", 2, 5);
		rc = measure_fma(&r, KS_CALIB_PTX_FP32, &m.fp32, &m.fma_threads[0], &err);
	}
	if (!rc) {
		progress(fd, "FP16 FMA", 3, 5);
		rc = measure_fma(&r, KS_CALIB_PTX_FP16, &m.fp16, &m.fma_threads[1], &err);
	}
	if (!rc && r.cc_major < 8) {
		snprintf(m.bf16_why, sizeof(m.bf16_why), "BF16 FMA (fma.rn.bf16x2) needs "
			 "sm_80 or later; %s is sm_%d%d", r.name, r.cc_major, r.cc_minor);
	} else if (!rc) {
		progress(fd, "BF16 FMA", 4, 5);
		rc = measure_fma(&r, KS_CALIB_PTX_BF16, &m.bf16, &m.fma_threads[2], &err);
	}
	if (r.start)
		api.EventDestroy(r.start);
	if (r.stop)
		api.EventDestroy(r.stop);
	if (r.have_ctx)
		api.DevicePrimaryCtxRelease(r.dev);
	m.kind = MSG_DONE;
	m.rc = rc;
	snprintf(m.error, sizeof(m.error), "%.511s", err.msg);
	snprintf(m.name, sizeof(m.name), "%s", r.name);
	m.sms = r.sms;
	m.cc_major = r.cc_major;
	m.cc_minor = r.cc_minor;
	m.l2 = r.l2;
	m.read_bytes = sh.bytes;
	m.read_threads = sh.threads;
	m.read_passes = sh.passes;
	ks_calib_child_write(fd, &m, sizeof(m));
}

/* Appends compute ceiling "CUDA <type> FMA (<device>)". */
static void add_ceiling(struct ks_calib *c, const char *type, double flops,
			const char *how)
{
	struct ks_calib_ceiling *ce;
	int room;

	if (c->ncompute >= KS_CALIB_MAX)
		return;
	ce = &c->compute[c->ncompute++];
	memset(ce, 0, sizeof(*ce));
	/* The name must fit: shorten a long device name. */
	room = (int)(sizeof(ce->name) - sizeof("CUDA FP32 FMA ()"));
	snprintf(ce->name, sizeof(ce->name), "CUDA %s FMA (%.*s)", type, room,
		 c->cuda.device);
	ce->per_s = flops;
	snprintf(ce->how, sizeof(ce->how), "%s", how);
}

int ks_calib_cuda_measure(const struct ks_calib_opts *o,
			  const struct ks_calib_plan *plan, struct ks_calib *c,
			  struct ks_err *err)
{
	struct measure_arg a = { .quick = plan->quick };
	double deadline = ks_calib_now() + MEASURE_TIMEOUT;
	struct ks_calib_cuda *cu = &c->cuda;
	char module[64], size[32];
	struct cu_msg m;
	pid_t pid;
	int fd, rc, status;

	rc = ks_calib_child_start(child_measure, &a, &pid, &fd, err);
	if (rc)
		return rc;
	while ((rc = ks_calib_child_read(fd, &m, sizeof(m), deadline)) == 1 &&
	       m.kind == MSG_PROGRESS) {
		m.what[sizeof(m.what) - 1] = '\0';
		ks_calib_progress(o, "cuda", m.what, m.step, m.steps);
	}
	status = ks_calib_child_end(pid, fd, rc != 1);
	if (rc != 1 || m.kind != MSG_DONE)
		return ks_calib_child_failed(rc, status, MEASURE_TIMEOUT, err);
	m.error[sizeof(m.error) - 1] = '\0';
	m.name[sizeof(m.name) - 1] = '\0';
	m.bf16_why[sizeof(m.bf16_why) - 1] = '\0';
	if (m.rc)
		return ks_err_set(err, m.rc < 0 ? m.rc : -EIO, "%s", m.error);
	if (!(m.bytes_per_s > 0 && m.fp32 > 0 && m.fp16 > 0 && isfinite(m.bytes_per_s) &&
	      isfinite(m.fp32) && isfinite(m.fp16) && isfinite(m.bf16) && m.bf16 >= 0))
		return ks_err_set(err, -EIO, "the measurement sent no usable rates");

	memset(cu, 0, sizeof(*cu));
	snprintf(cu->device, sizeof(cu->device), "%s", m.name);
	module_version(NVIDIA_PROC, module, sizeof(module));
	if (module[0] && m.cuda_version > 0)
		snprintf(cu->driver, sizeof(cu->driver), "%s, CUDA %d.%d", module,
			 m.cuda_version / 1000, m.cuda_version % 1000 / 10);
	else if (m.cuda_version > 0)
		snprintf(cu->driver, sizeof(cu->driver), "CUDA %d.%d",
			 m.cuda_version / 1000, m.cuda_version % 1000 / 10);
	snprintf(cu->cc, sizeof(cu->cc), "%d.%d", m.cc_major, m.cc_minor);
	cu->sms = m.sms;
	cu->bytes_per_s = m.bytes_per_s;
	cu->fp32 = m.fp32;
	cu->fp16 = m.fp16;
	cu->bf16 = m.bf16;
	ks_calib_fmt_bytes(m.read_bytes, size, sizeof(size));
	snprintf(cu->bytes_how, sizeof(cu->bytes_how), "PTX, ld.global.v4.u32 sum of %s, "
		 "%u threads, %u pass%s", size, m.read_threads, m.read_passes,
		 m.read_passes == 1 ? "" : "es");
	snprintf(cu->fp32_how, sizeof(cu->fp32_how), "PTX, %d chains of fma.rn.f32, "
		 "%u threads on %d SMs", KS_CALIB_PTX_CHAINS, m.fma_threads[0], m.sms);
	snprintf(cu->fp16_how, sizeof(cu->fp16_how), "PTX, %d chains of fma.rn.f16x2, "
		 "%u threads on %d SMs", KS_CALIB_PTX_CHAINS, m.fma_threads[1], m.sms);
	if (m.bf16 > 0)
		snprintf(cu->bf16_how, sizeof(cu->bf16_how), "PTX, %d chains of "
			 "fma.rn.bf16x2, %u threads on %d SMs", KS_CALIB_PTX_CHAINS,
			 m.fma_threads[2], m.sms);
	c->have_cuda = true;
	add_ceiling(c, "FP32", cu->fp32, cu->fp32_how);
	add_ceiling(c, "FP16", cu->fp16, cu->fp16_how);
	if (cu->bf16 > 0)
		add_ceiling(c, "BF16", cu->bf16, cu->bf16_how);
	else if (m.bf16_why[0])
		ks_calib_note(o, false, "CUDA BF16 not measured: %s", m.bf16_why);
	if (m.ndevices > 1)
		ks_calib_note(o, false, "CUDA: measured device 0 (%s) of %d", cu->device,
			      m.ndevices);
	return 0;
}
