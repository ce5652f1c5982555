/*
 * The OpenCL ceilings: peak FP32 FLOP/s and read bandwidth of the first
 * OpenCL GPU (else CPU) device, and the list of devices that goes into the
 * machine key.
 *
 * kscope does not link OpenCL: libOpenCL.so.1 (the ICD loader) is opened
 * at run time, so kscope runs, and calibrates its CPU, where OpenCL is not
 * installed.  And kscope never opens it in its own process: listing the
 * devices and measuring run in a child process (fork) that sends its
 * answers back through a pipe and exits.  A vendor driver starts threads
 * as soon as its devices are listed, keeps memory to the end, may crash
 * or hang; in a child, none of that reaches kscope (a crash or a hang
 * becomes a note, after a time limit), kscope op keeps no driver threads
 * in the process that starts the program, and the sanitizer build does
 * not check the driver's memory.  (calib_child.c runs the child.)
 *
 * The device runs two kernels built from source here, timed with the
 * queue's profiling events (best of a few launches):
 *   ks_fma   eight chains of fma() per work-item (mad() where the device
 *            has no hardware FMA), in vectors of the device's native
 *            width: the OpenCL counterpart of the C FMA chains;
 *   ks_read  the sum of a buffer several times the last-level cache.  On a
 *            GPU, neighbouring work-items read neighbouring float4s
 *            (coalesced); on a CPU device each work-group of one item reads
 *            a contiguous block of float16s with four accumulators, the
 *            pattern a CPU streams best.
 * Both results are read back and checked (the read sums to the element
 * count exactly), so a broken driver cannot pass off a fast wrong answer.
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "calib_int.h"

#define MIB (1024ull * 1024)
#define MAX_PLATFORMS 16
#define MAX_DEVICES 16
#define FMA_CHAINS 8          /* vector chains per work-item in ks_fma */

/* The OpenCL entry points kscope calls, from libOpenCL.so.1. */
struct ocl_api {
	__typeof__(&clGetPlatformIDs) GetPlatformIDs;
	__typeof__(&clGetDeviceIDs) GetDeviceIDs;
	__typeof__(&clGetDeviceInfo) GetDeviceInfo;
	__typeof__(&clCreateContext) CreateContext;
	__typeof__(&clCreateCommandQueue) CreateCommandQueue;
	__typeof__(&clCreateProgramWithSource) CreateProgramWithSource;
	__typeof__(&clBuildProgram) BuildProgram;
	__typeof__(&clGetProgramBuildInfo) GetProgramBuildInfo;
	__typeof__(&clCreateKernel) CreateKernel;
	__typeof__(&clSetKernelArg) SetKernelArg;
	__typeof__(&clCreateBuffer) CreateBuffer;
	__typeof__(&clEnqueueWriteBuffer) EnqueueWriteBuffer;
	__typeof__(&clEnqueueReadBuffer) EnqueueReadBuffer;
	__typeof__(&clEnqueueNDRangeKernel) EnqueueNDRangeKernel;
	__typeof__(&clWaitForEvents) WaitForEvents;
	__typeof__(&clGetEventProfilingInfo) GetEventProfilingInfo;
	__typeof__(&clReleaseEvent) ReleaseEvent;
	__typeof__(&clReleaseKernel) ReleaseKernel;
	__typeof__(&clReleaseProgram) ReleaseProgram;
	__typeof__(&clReleaseMemObject) ReleaseMemObject;
	__typeof__(&clReleaseCommandQueue) ReleaseCommandQueue;
	__typeof__(&clReleaseContext) ReleaseContext;
	__typeof__(&clFinish) Finish;
};

/* Built with -DKS_VEC=<floatW> -DKS_W=<W> -DKS_FMA=<fma|mad>, and
 * -DKS_CONTIGUOUS on a CPU device (see build()). */
static const char kernel_source[] =
	"__kernel void ks_fma(__global float *out, const float m, const float c,\n"
	"                     const int iters)\n"
	"{\n"
	"  size_t gid = get_global_id(0);\n"
	"  KS_VEC a0 = (KS_VEC)(0.001f * (float)(gid & 15));\n"
	"  /* Lanes start apart, so no compiler can run one lane for all. */\n"
	"  for (int l = 0; l < KS_W; l++)\n"
	"    ((float *)&a0)[l] += 0.0001f * (float)l;\n"
	"  KS_VEC a1 = a0 + 0.1f, a2 = a0 + 0.2f, a3 = a0 + 0.3f;\n"
	"  KS_VEC a4 = a0 + 0.4f, a5 = a0 + 0.5f, a6 = a0 + 0.6f, a7 = a0 + 0.7f;\n"
	"  for (int i = 0; i < iters; i++) {\n"
	"    a0 = KS_FMA(a0, m, c); a1 = KS_FMA(a1, m, c);\n"
	"    a2 = KS_FMA(a2, m, c); a3 = KS_FMA(a3, m, c);\n"
	"    a4 = KS_FMA(a4, m, c); a5 = KS_FMA(a5, m, c);\n"
	"    a6 = KS_FMA(a6, m, c); a7 = KS_FMA(a7, m, c);\n"
	"  }\n"
	"  KS_VEC s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));\n"
	"  float t = 0.0f;\n"
	"  for (int l = 0; l < KS_W; l++)\n"
	"    t += ((float *)&s)[l];\n"
	"  out[gid] = t;\n"
	"}\n"
	"\n"
	"#ifdef KS_CONTIGUOUS\n"
	"/* n float16 elements; each work-item sums its own block with four\n"
	" * accumulators (its block is a multiple of 4 elements). */\n"
	"__kernel void ks_read(__global const float16 *in, __global float *out,\n"
	"                      const uint n)\n"
	"{\n"
	"  size_t gid = get_global_id(0), per = n / get_global_size(0);\n"
	"  __global const float16 *p = in + gid * per;\n"
	"  float16 s0 = (float16)(0.0f), s1 = s0, s2 = s0, s3 = s0;\n"
	"  for (size_t k = 0; k < per; k += 4) {\n"
	"    s0 += p[k]; s1 += p[k + 1]; s2 += p[k + 2]; s3 += p[k + 3];\n"
	"  }\n"
	"  float16 s = (s0 + s1) + (s2 + s3);\n"
	"  float t = 0.0f;\n"
	"  for (int l = 0; l < 16; l++)\n"
	"    t += ((float *)&s)[l];\n"
	"  out[gid] = t;\n"
	"}\n"
	"#else\n"
	"/* n float4 elements; neighbouring work-items read neighbours. */\n"
	"__kernel void ks_read(__global const float4 *in, __global float *out,\n"
	"                      const uint n)\n"
	"{\n"
	"  size_t gid = get_global_id(0), gs = get_global_size(0);\n"
	"  float4 s = (float4)(0.0f);\n"
	"  for (size_t k = gid; k < n; k += gs)\n"
	"    s += in[k];\n"
	"  out[gid] = (s.x + s.y) + (s.z + s.w);\n"
	"}\n"
	"#endif\n";

/* Opens libOpenCL.so.1 and finds every entry point in api. */
static int ocl_load(struct ocl_api *api, struct ks_err *err)
{
	void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;

	if (!lib)
		return ks_err_set(err, -ENOENT, "cannot load "
				  "libOpenCL.so.1 (%s)", dlerror());
	/* POSIX guarantees that dlsym's void * holds a function pointer. */
#define SYM(f)                                                              \
	do {                                                                \
		void *sym_ = dlsym(lib, "cl" #f);                           \
		memcpy(&api->f, &sym_, sizeof(sym_));                       \
		if (!sym_ && !missing)                                      \
			missing = "cl" #f;                                  \
	} while (0)
	SYM(GetPlatformIDs); SYM(GetDeviceIDs); SYM(GetDeviceInfo);
	SYM(CreateContext); SYM(CreateCommandQueue); SYM(CreateProgramWithSource);
	SYM(BuildProgram); SYM(GetProgramBuildInfo); SYM(CreateKernel);
	SYM(SetKernelArg); SYM(CreateBuffer); SYM(EnqueueWriteBuffer);
	SYM(EnqueueReadBuffer); SYM(EnqueueNDRangeKernel); SYM(WaitForEvents);
	SYM(GetEventProfilingInfo); SYM(ReleaseEvent); SYM(ReleaseKernel);
	SYM(ReleaseProgram); SYM(ReleaseMemObject); SYM(ReleaseCommandQueue);
	SYM(ReleaseContext); SYM(Finish);
#undef SYM
	/* lib stays open on purpose (see the top of the file). */
	if (missing)
		return ks_err_set(err, -ENOSYS, "libOpenCL.so.1 lacks %s",
				  missing);
	return 0;
}

/* A device's string property, made printable. */
static void device_string(const struct ocl_api *api, cl_device_id d,
			  cl_device_info what, char *buf, size_t size)
{
	size_t got = 0;

	buf[0] = '\0';
	if (api->GetDeviceInfo(d, what, size - 1, buf, &got) != CL_SUCCESS)
		snprintf(buf, size, "?");
	buf[size - 1] = '\0';
	for (char *p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
	/* Drivers pad some names with blanks. */
	for (size_t n = strlen(buf); n > 0 && buf[n - 1] == ' '; n--)
		buf[n - 1] = '\0';
}

/* Every device of every platform, in the loader's order. */
static size_t all_devices(const struct ocl_api *api, cl_device_id *out, size_t max)
{
	cl_platform_id plats[MAX_PLATFORMS];
	cl_uint np = 0;
	size_t n = 0;

	if (api->GetPlatformIDs(MAX_PLATFORMS, plats, &np) != CL_SUCCESS)
		return 0;
	for (cl_uint p = 0; p < np && p < MAX_PLATFORMS; p++) {
		cl_device_id devs[MAX_DEVICES];
		cl_uint nd = 0;

		if (api->GetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, MAX_DEVICES, devs,
				      &nd) != CL_SUCCESS)
			continue;
		for (cl_uint d = 0; d < nd && d < MAX_DEVICES && n < max; d++)
			out[n++] = devs[d];
	}
	return n;
}

/* ---------------------------------------------------------------------
 * Measuring one device
 * --------------------------------------------------------------------- */

struct ocl_run {
	const struct ocl_api *api;
	cl_device_id dev;
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	cl_kernel kfma, kread;
	cl_mem out, in;
	bool gpu;
	cl_uint units;
	cl_uint width;        /* floats per vector in ks_fma */
	bool fused;           /* ks_fma uses fma(), else mad() */
	char name[128], driver[128];
};

#define CL_TRY(call, what)                                                  \
	do {                                                                \
		cl_int cl_rc_ = (call);                                     \
		if (cl_rc_ != CL_SUCCESS)                                   \
			return ks_err_set(err, -EIO, "%s failed "   \
					  "(error %d)", what, (int)cl_rc_); \
	} while (0)

/* How ks_fma is built for r->dev: its native float vector width (a
 * power of two up to 16) and whether fma() is done in hardware. */
static int device_fma(struct ocl_run *r, struct ks_err *err)
{
	cl_device_fp_config fp = 0;
	cl_uint w = 1;

	CL_TRY(r->api->GetDeviceInfo(r->dev, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT,
				     sizeof(w), &w, NULL),
	       "clGetDeviceInfo(CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT)");
	CL_TRY(r->api->GetDeviceInfo(r->dev, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp),
				     &fp, NULL),
	       "clGetDeviceInfo(CL_DEVICE_SINGLE_FP_CONFIG)");
	for (r->width = 1; r->width * 2 <= w && r->width < 16; r->width *= 2)
		;
	r->fused = (fp & CL_FP_FMA) != 0;
	return 0;
}

/* The first GPU, else the first CPU device. */
static int pick_device(struct ocl_run *r, struct ks_err *err)
{
	const struct ocl_api *api = r->api;
	cl_device_id devs[MAX_PLATFORMS * MAX_DEVICES];
	size_t n = all_devices(api, devs, MAX_PLATFORMS * MAX_DEVICES);
	cl_device_type want[] = { CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_CPU };

	for (size_t w = 0; w < 2; w++)
		for (size_t i = 0; i < n; i++) {
			cl_device_type t = 0;

			if (api->GetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof(t), &t,
					       NULL) != CL_SUCCESS || !(t & want[w]))
				continue;
			r->dev = devs[i];
			r->gpu = w == 0;
			device_string(api, r->dev, CL_DEVICE_NAME, r->name,
				      sizeof(r->name));
			device_string(api, r->dev, CL_DRIVER_VERSION, r->driver,
				      sizeof(r->driver));
			CL_TRY(api->GetDeviceInfo(r->dev, CL_DEVICE_MAX_COMPUTE_UNITS,
						  sizeof(r->units), &r->units, NULL),
			       "clGetDeviceInfo(CL_DEVICE_MAX_COMPUTE_UNITS)");
			if (r->units < 1)
				r->units = 1;
			return device_fma(r, err);
		}
	return ks_err_set(err, -ENODEV, "no OpenCL GPU or CPU device%s",
			  n ? "" : " (no OpenCL platform is installed)");
}

static int build(struct ocl_run *r, struct ks_err *err)
{
	const struct ocl_api *api = r->api;
	const char *src = kernel_source;
	char options[128], vec[16];
	cl_int rc;

	r->ctx = api->CreateContext(NULL, 1, &r->dev, NULL, NULL, &rc);
	CL_TRY(rc, "clCreateContext");
	r->q = api->CreateCommandQueue(r->ctx, r->dev, CL_QUEUE_PROFILING_ENABLE, &rc);
	CL_TRY(rc, "clCreateCommandQueue");
	r->prog = api->CreateProgramWithSource(r->ctx, 1, &src, NULL, &rc);
	CL_TRY(rc, "clCreateProgramWithSource");
	if (r->width > 1)
		snprintf(vec, sizeof(vec), "float%u", r->width);
	else
		snprintf(vec, sizeof(vec), "float");
	snprintf(options, sizeof(options), "-DKS_VEC=%s -DKS_W=%u -DKS_FMA=%s%s", vec,
		 r->width, r->fused ? "fma" : "mad", r->gpu ? "" : " -DKS_CONTIGUOUS=1");
	rc = api->BuildProgram(r->prog, 1, &r->dev, options, NULL, NULL);
	if (rc != CL_SUCCESS) {
		char log[512] = "";

		api->GetProgramBuildInfo(r->prog, r->dev, CL_PROGRAM_BUILD_LOG,
					 sizeof(log) - 1, log, NULL);
		log[sizeof(log) - 1] = '\0';
		log[strcspn(log, "\n")] = '\0';
		return ks_err_set(err, -EIO, "building the calibration kernels "
				  "failed (error %d)%s%s", (int)rc, log[0] ? ": " : "",
				  log);
	}
	r->kfma = api->CreateKernel(r->prog, "ks_fma", &rc);
	CL_TRY(rc, "clCreateKernel(ks_fma)");
	r->kread = api->CreateKernel(r->prog, "ks_read", &rc);
	CL_TRY(rc, "clCreateKernel(ks_read)");
	return 0;
}

/* Launches k over global work-items (in work-groups of local, 0: the
 * driver's choice) once and returns its event time. */
static int launch(struct ocl_run *r, cl_kernel k, size_t global, size_t local,
		  double *seconds, struct ks_err *err)
{
	const struct ocl_api *api = r->api;
	cl_ulong t0 = 0, t1 = 0;
	cl_event ev;
	cl_int rc;

	CL_TRY(api->EnqueueNDRangeKernel(r->q, k, 1, NULL, &global, local ? &local : NULL,
					 0, NULL, &ev),
	       "clEnqueueNDRangeKernel");
	rc = api->WaitForEvents(1, &ev);
	if (rc == CL_SUCCESS)
		rc = api->GetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START,
						sizeof(t0), &t0, NULL);
	if (rc == CL_SUCCESS)
		rc = api->GetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END,
						sizeof(t1), &t1, NULL);
	api->ReleaseEvent(ev);
	CL_TRY(rc, "timing a calibration kernel");
	*seconds = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0;
	return 0;
}

/* Reads back the n floats of r->out and sums them. */
static int out_sum(struct ocl_run *r, size_t n, double *sum, bool *finite,
		   struct ks_err *err)
{
	float *host = malloc(n * sizeof(float));
	cl_int rc;

	if (!host)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = r->api->EnqueueReadBuffer(r->q, r->out, CL_TRUE, 0, n * sizeof(float),
				       host, 0, NULL, NULL);
	*sum = 0;
	*finite = true;
	for (size_t i = 0; rc == CL_SUCCESS && i < n; i++) {
		*sum += host[i];
		if (!isfinite(host[i]))
			*finite = false;
	}
	free(host);
	CL_TRY(rc, "clEnqueueReadBuffer");
	return 0;
}

static int measure_fma(struct ocl_run *r, bool quick, double *flops_per_s,
		       struct ks_err *err)
{
	const struct ocl_api *api = r->api;
	size_t global = (size_t)r->units * (r->gpu ? 4096 : 256);
	float m = 0.999f, c = 0.001f;
	double target = quick ? 0.01 : 0.05, t = 0, best = 0, sum;
	cl_int iters = 256;
	int trials = quick ? 5 : 20;
	bool finite;
	cl_int rc;

	r->out = api->CreateBuffer(r->ctx, CL_MEM_READ_WRITE, global * sizeof(float),
				   NULL, &rc);
	CL_TRY(rc, "clCreateBuffer");
	CL_TRY(api->SetKernelArg(r->kfma, 0, sizeof(cl_mem), &r->out), "clSetKernelArg");
	CL_TRY(api->SetKernelArg(r->kfma, 1, sizeof(m), &m), "clSetKernelArg");
	CL_TRY(api->SetKernelArg(r->kfma, 2, sizeof(c), &c), "clSetKernelArg");
	/* Grow the rounds until a launch lasts about target seconds. */
	for (int tries = 0; tries < 10; tries++) {
		int rc2;

		CL_TRY(api->SetKernelArg(r->kfma, 3, sizeof(iters), &iters),
		       "clSetKernelArg");
		rc2 = launch(r, r->kfma, global, 0, &t, err);
		if (rc2)
			return rc2;
		if (t >= target * 0.5 || iters >= (1 << 26))
			break;
		double scale = target / (t > 1e-6 ? t : 1e-6);

		iters = scale * iters > (double)(1 << 26) ? (1 << 26)
			: (cl_int)(scale * iters) + 1;
	}
	for (int i = 0; i < trials; i++) {
		int rc2 = launch(r, r->kfma, global, 0, &t, err);

		if (rc2)
			return rc2;
		if (t > 0) {
			double f = 2.0 * FMA_CHAINS * r->width * (double)iters *
				   (double)global / t;

			if (f > best)
				best = f;
		}
	}
	rc = out_sum(r, global, &sum, &finite, err);
	if (rc)
		return rc;
	if (!finite || sum <= 0)
		return ks_err_set(err, -EIO, "the FMA kernel computed a wrong "
				  "result on %s", r->name);
	*flops_per_s = best;
	return 0;
}

static int measure_read(struct ocl_run *r, bool quick, uint64_t llc_total,
			double *bytes_per_s, struct ks_err *err)
{
	const struct ocl_api *api = r->api;
	size_t global = (size_t)r->units * (r->gpu ? 4096 : 16);
	cl_ulong max_alloc = 0, global_mem = 0;
	uint64_t bytes = llc_total ? 4 * llc_total : 256 * MIB;
	size_t chunk = 16 * MIB, nel, elem = r->gpu ? 16 : 64;
	size_t per = r->gpu ? global : 4 * global; /* n is a multiple of it */
	float *ones;
	double t, best = 0, sum;
	int trials = quick ? 5 : 20;
	bool finite;
	cl_uint n;
	cl_int rc;

	if (!quick && bytes < 256 * MIB)
		bytes = 256 * MIB;
	CL_TRY(api->GetDeviceInfo(r->dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc),
				  &max_alloc, NULL), "clGetDeviceInfo");
	CL_TRY(api->GetDeviceInfo(r->dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(global_mem),
				  &global_mem, NULL), "clGetDeviceInfo");
	if (bytes > max_alloc)
		bytes = max_alloc;
	if (bytes > global_mem / 4)
		bytes = global_mem / 4;
	/* Vector elements, whole blocks per work-item, within a cl_uint. */
	nel = (size_t)(bytes / elem) / per * per;
	if (nel > 0xffffff00u / per * per)
		nel = 0xffffff00u / per * per;
	if (nel == 0)
		return ks_err_set(err, -ENOMEM, "%s has too little memory "
				  "to measure its bandwidth", r->name);
	bytes = (uint64_t)nel * elem;
	r->in = api->CreateBuffer(r->ctx, CL_MEM_READ_ONLY, bytes, NULL, &rc);
	CL_TRY(rc, "clCreateBuffer");
	ones = malloc(chunk);
	if (!ones)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < chunk / sizeof(float); i++)
		ones[i] = 1.0f;
	rc = CL_SUCCESS;
	for (uint64_t off = 0; rc == CL_SUCCESS && off < bytes; off += chunk)
		rc = api->EnqueueWriteBuffer(r->q, r->in, CL_FALSE, off,
					     bytes - off < chunk ? bytes - off : chunk,
					     ones, 0, NULL, NULL);
	if (rc == CL_SUCCESS)
		rc = api->Finish(r->q);
	free(ones);
	CL_TRY(rc, "clEnqueueWriteBuffer");

	n = (cl_uint)nel;
	CL_TRY(api->ReleaseMemObject(r->out), "clReleaseMemObject");
	r->out = api->CreateBuffer(r->ctx, CL_MEM_READ_WRITE, global * sizeof(float),
				   NULL, &rc);
	CL_TRY(rc, "clCreateBuffer");
	CL_TRY(api->SetKernelArg(r->kread, 0, sizeof(cl_mem), &r->in), "clSetKernelArg");
	CL_TRY(api->SetKernelArg(r->kread, 1, sizeof(cl_mem), &r->out), "clSetKernelArg");
	CL_TRY(api->SetKernelArg(r->kread, 2, sizeof(n), &n), "clSetKernelArg");
	/* The first launch warms up (and on a CPU device compiles). */
	for (int i = 0; i <= trials; i++) {
		rc = launch(r, r->kread, global, r->gpu ? 0 : 1, &t, err);
		if (rc)
			return rc;
		if (i > 0 && t > 0 && (double)bytes / t > best)
			best = (double)bytes / t;
	}
	rc = out_sum(r, global, &sum, &finite, err);
	if (rc)
		return rc;
	if (sum != (double)bytes / sizeof(float))
		return ks_err_set(err, -EIO, "the read kernel summed %.17g "
				  "instead of %.17g on %s", sum,
				  (double)bytes / sizeof(float), r->name);
	*bytes_per_s = best;
	return 0;
}

static void release(struct ocl_run *r)
{
	const struct ocl_api *api = r->api;

	if (r->in)
		api->ReleaseMemObject(r->in);
	if (r->out)
		api->ReleaseMemObject(r->out);
	if (r->kfma)
		api->ReleaseKernel(r->kfma);
	if (r->kread)
		api->ReleaseKernel(r->kread);
	if (r->prog)
		api->ReleaseProgram(r->prog);
	if (r->q)
		api->ReleaseCommandQueue(r->q);
	if (r->ctx)
		api->ReleaseContext(r->ctx);
}

/* ---------------------------------------------------------------------
 * The child process
 * --------------------------------------------------------------------- */

enum { MSG_PROGRESS = 1, MSG_DONE = 2 };

/* What the child sends: progress, then one MSG_DONE with the result.
 * Smaller than PIPE_BUF, so each write arrives whole. */
struct ocl_msg {
	int kind;
	int step, steps;          /* MSG_PROGRESS */
	char what[64];
	int rc;                   /* MSG_DONE: 0 or a negative code */
	char error[512];          /*   why, when rc != 0 */
	char name[128], driver[128];
	double flops, bytes_per_s;
	unsigned units, width;
	int fused;
};

/* The devices' ids, for the machine key. */
struct ocl_ids {
	unsigned n;
	char ids[KS_CALIB_MAX_DEVICES][256];
};

_Static_assert(sizeof(struct ocl_msg) < 4096 && sizeof(struct ocl_ids) < 4096,
	       "a message must fit in one atomic pipe write (PIPE_BUF)");

/* ---------------------------------------------------------------------
 * The device list (for the key) and the measurement
 * --------------------------------------------------------------------- */

#define LIST_TIMEOUT 60       /* seconds to list the devices */
#define MEASURE_TIMEOUT 600   /* seconds for the whole measurement */

static void child_list(void *arg, int fd)
{
	cl_device_id devs[MAX_PLATFORMS * MAX_DEVICES];
	struct ocl_ids ids;
	struct ocl_api api;
	size_t n = 0;

	(void)arg;
	memset(&ids, 0, sizeof(ids));
	if (ocl_load(&api, NULL) == 0)
		n = all_devices(&api, devs, KS_CALIB_MAX_DEVICES);
	for (size_t i = 0; i < n; i++) {
		char name[160], driver[64];

		device_string(&api, devs[i], CL_DEVICE_NAME, name, sizeof(name));
		device_string(&api, devs[i], CL_DRIVER_VERSION, driver, sizeof(driver));
		snprintf(ids.ids[i], sizeof(ids.ids[i]), "%s | %s", name, driver);
	}
	ids.n = (unsigned)n;
	ks_calib_child_write(fd, &ids, sizeof(ids));
}

/* The listing ks_calib_prefetch started, if any (pid 0: none). */
static pid_t prefetch_pid;
static int prefetch_fd = -1;

void ks_calib_prefetch(void)
{
	if (prefetch_pid == 0 &&
	    ks_calib_child_start(child_list, NULL, &prefetch_pid, &prefetch_fd, NULL) != 0)
		prefetch_pid = 0;
}

/* The answer of the listing child pid (reading fd), which then ends:
 * ks_calib_child_read's result. */
static int list_answer(pid_t pid, int fd, struct ocl_ids *got)
{
	int rc = ks_calib_child_read(fd, got, sizeof(*got), ks_calib_now() + LIST_TIMEOUT);

	ks_calib_child_end(pid, fd, rc != 1);
	return rc;
}

size_t ks_calib_ocl_device_ids(char ids[][256], size_t max)
{
	struct ocl_ids got;
	pid_t pid;
	int fd, rc = 0;

	if (prefetch_pid) {
		/* Taken once.  A listing that ended without an answer (a
		 * signal meant for the program reached it too) is done again;
		 * one that hung is not waited for twice. */
		rc = list_answer(prefetch_pid, prefetch_fd, &got);
		prefetch_pid = 0;
		prefetch_fd = -1;
	}
	if (rc != 1 && rc != -ETIMEDOUT) {
		if (ks_calib_child_start(child_list, NULL, &pid, &fd, NULL) != 0)
			return 0;
		rc = list_answer(pid, fd, &got);
	}
	/* A crash or a hang lists no device: the key is then that of a
	 * machine without OpenCL, and calibrate says why it found none. */
	if (rc != 1)
		return 0;
	if (got.n > KS_CALIB_MAX_DEVICES)
		got.n = KS_CALIB_MAX_DEVICES;
	for (unsigned i = 0; i < got.n && i < max; i++) {
		got.ids[i][sizeof(got.ids[i]) - 1] = '\0';
		memcpy(ids[i], got.ids[i], sizeof(got.ids[i]));
	}
	return got.n < max ? got.n : max;
}

struct measure_arg {
	bool quick;
	uint64_t llc_total;
};

static void progress(int fd, const char *what, int step, int steps)
{
	struct ocl_msg m;

	memset(&m, 0, sizeof(m));
	m.kind = MSG_PROGRESS;
	m.step = step;
	m.steps = steps;
	snprintf(m.what, sizeof(m.what), "%s", what);
	ks_calib_child_write(fd, &m, sizeof(m));
}

static void child_measure(void *arg, int fd)
{
	const struct measure_arg *a = arg;
	struct ocl_msg m;
	struct ocl_api api;
	struct ocl_run r;
	struct ks_err err;
	double flops = 0, bw = 0;
	int rc;

	memset(&m, 0, sizeof(m));
	memset(&r, 0, sizeof(r));
	ks_err_clear(&err);
	rc = ocl_load(&api, &err);
	if (!rc) {
		r.api = &api;
		progress(fd, "finding a device", 0, 3);
		rc = pick_device(&r, &err);
	}
	if (!rc) {
		progress(fd, "building the kernels", 1, 3);
		rc = build(&r, &err);
	}
	if (!rc) {
		progress(fd, "FP32 FLOP/s", 2, 3);
		rc = measure_fma(&r, a->quick, &flops, &err);
	}
	if (!rc) {
		progress(fd, "read bandwidth", 3, 3);
		rc = measure_read(&r, a->quick, a->llc_total, &bw, &err);
	}
	if (r.api)
		release(&r);
	m.kind = MSG_DONE;
	m.rc = rc;
	snprintf(m.error, sizeof(m.error), "%.511s", err.msg);
	snprintf(m.name, sizeof(m.name), "%s", r.name);
	snprintf(m.driver, sizeof(m.driver), "%s", r.driver);
	m.flops = flops;
	m.bytes_per_s = bw;
	m.units = r.units;
	m.width = r.width;
	m.fused = r.fused;
	ks_calib_child_write(fd, &m, sizeof(m));
}

int ks_calib_ocl_measure(const struct ks_calib_opts *o,
			 const struct ks_calib_plan *plan, uint64_t llc_total,
			 struct ks_calib *c, struct ks_err *err)
{
	struct measure_arg a = { .quick = plan->quick, .llc_total = llc_total };
	double deadline = ks_calib_now() + MEASURE_TIMEOUT;
	struct ocl_msg m;
	char width[16];
	pid_t pid;
	int fd, rc, status;

	rc = ks_calib_child_start(child_measure, &a, &pid, &fd, err);
	if (rc)
		return rc;
	while ((rc = ks_calib_child_read(fd, &m, sizeof(m), deadline)) == 1 &&
	       m.kind == MSG_PROGRESS) {
		m.what[sizeof(m.what) - 1] = '\0';
		ks_calib_progress(o, "opencl", m.what, m.step, m.steps);
	}
	status = ks_calib_child_end(pid, fd, rc != 1);
	if (rc != 1 || m.kind != MSG_DONE)
		return ks_calib_child_failed(rc, status, MEASURE_TIMEOUT, err);
	m.error[sizeof(m.error) - 1] = '\0';
	m.name[sizeof(m.name) - 1] = '\0';
	m.driver[sizeof(m.driver) - 1] = '\0';
	if (m.rc)
		return ks_err_set(err, m.rc < 0 ? m.rc : -EIO, "%s", m.error);

	snprintf(width, sizeof(width), "%u", m.width);
	c->have_opencl = 1;
	snprintf(c->opencl_device, sizeof(c->opencl_device), "%s", m.name);
	snprintf(c->opencl_driver, sizeof(c->opencl_driver), "%s", m.driver);
	c->opencl_flops_per_s = m.flops;
	c->opencl_bytes_per_s = m.bytes_per_s;
	if (c->ncompute < KS_CALIB_MAX) {
		struct ks_calib_ceiling *ce = &c->compute[c->ncompute++];

		memset(ce, 0, sizeof(*ce));
		/* The name must fit: shorten a long device name. */
		snprintf(ce->name, sizeof(ce->name), "OpenCL FP32 (%.*s)",
			 (int)(sizeof(ce->name) - sizeof("OpenCL FP32 ()")), m.name);
		ce->per_s = m.flops;
		snprintf(ce->how, sizeof(ce->how), "OpenCL, %d chains of %s%s%s, "
			 "%u compute unit%s", FMA_CHAINS, m.fused ? "fma" : "mad",
			 m.width > 1 ? " on float" : "", m.width > 1 ? width : "",
			 m.units, m.units == 1 ? "" : "s");
	}
	return 0;
}
