/*
 * What every OpenCL example under examples/opencl shares: picking the
 * first device of the first platform, building a program from a source
 * string (printing the build log when it fails), checking OpenCL return
 * codes, and the FNV-1a checksum each example prints over its result
 * buffers.  The examples are small programs for people to read, so the
 * helpers stop the program with a message on any OpenCL error rather
 * than handing errors back.
 *
 * Header-only (static functions): each example is one C file plus this.
 */
#ifndef KS_EXAMPLES_CLX_H
#define KS_EXAMPLES_CLX_H

#define CL_TARGET_OPENCL_VERSION 300
/* clCreateCommandQueue is deprecated in OpenCL 2.0 but still what most
 * programs call; the examples use it and its successor both. */
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stops the program when an OpenCL call failed: prints the call and its
 * code.  Exit status 3 tells a missing or failing OpenCL apart from a
 * wrong result (1). */
#define CLX_CHECK(call)                                                       \
	do {                                                                  \
		cl_int clx_err_ = (call);                                     \
		if (clx_err_ != CL_SUCCESS)                                   \
			clx_die(#call, clx_err_, __FILE__, __LINE__);         \
	} while (0)

__attribute__((noreturn)) static inline void clx_die(const char *what, cl_int err,
						     const char *file, int line)
{
	fprintf(stderr, "%s:%d: %s failed: OpenCL error %d\n", file, line, what,
		(int)err);
	exit(3);
}

/* An OpenCL object creator's error code: dies when it is not CL_SUCCESS. */
static inline void clx_check_create(const char *what, cl_int err)
{
	if (err != CL_SUCCESS)
		clx_die(what, err, __FILE__, __LINE__);
}

/* The first device of the first platform, of any type. */
static inline cl_device_id clx_device(cl_platform_id *platform_out)
{
	cl_platform_id platform;
	cl_device_id device;
	cl_uint n = 0;

	if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0) {
		fprintf(stderr, "no OpenCL platform found\n");
		exit(3);
	}
	CLX_CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL));
	if (platform_out)
		*platform_out = platform;
	return device;
}

static inline cl_context clx_context(cl_device_id device)
{
	cl_int err;
	cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);

	clx_check_create("clCreateContext", err);
	return ctx;
}

/* A program built for device from one source string; on a build error
 * the log goes to stderr and the program stops. */
static inline cl_program clx_build(cl_context ctx, cl_device_id device, const char *src,
				   const char *options)
{
	cl_int err;
	cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);

	clx_check_create("clCreateProgramWithSource", err);
	err = clBuildProgram(prog, 1, &device, options, NULL, NULL);
	if (err != CL_SUCCESS) {
		size_t len = 0;
		char *log;

		clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
		log = calloc(1, len + 1);
		if (log && clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, len,
						 log, NULL) == CL_SUCCESS)
			fprintf(stderr, "build log:\n%s\n", log);
		free(log);
		clx_die("clBuildProgram", err, __FILE__, __LINE__);
	}
	return prog;
}

static inline cl_kernel clx_kernel(cl_program prog, const char *name)
{
	cl_int err;
	cl_kernel k = clCreateKernel(prog, name, &err);

	clx_check_create(name, err);
	return k;
}

static inline cl_mem clx_buffer(cl_context ctx, cl_mem_flags flags, size_t bytes,
				void *host)
{
	cl_int err;
	cl_mem m = clCreateBuffer(ctx, flags, bytes, host, &err);

	clx_check_create("clCreateBuffer", err);
	return m;
}

static inline void *clx_alloc(size_t bytes)
{
	void *p = malloc(bytes ? bytes : 1);

	if (!p) {
		fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
		exit(3);
	}
	return p;
}

/* FNV-1a (32 bits) over bytes, continuing from h (start with
 * CLX_FNV_INIT): the checksum line each example prints. */
#define CLX_FNV_INIT 2166136261u

static inline uint32_t clx_fnv1a(uint32_t h, const void *bytes, size_t n)
{
	const unsigned char *p = bytes;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

/* A positive decimal argument no larger than max, or def when absent;
 * anything else stops the program with a usage message. */
static inline unsigned long clx_arg(const char *s, unsigned long def, unsigned long max,
				    const char *usage)
{
	char *end;
	unsigned long v;

	if (!s)
		return def;
	v = strtoul(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || v == 0 || v > max) {
		fprintf(stderr, "usage: %s\n", usage);
		exit(2);
	}
	return v;
}

#endif
