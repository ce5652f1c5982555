/*
 * A small OpenCL program for the tests of libkscope-op.so (test_rt.py).
 * Its kernels accumulate into their outputs (y += a*x, out += block
 * sums), so a replay that did not restore memory changes what it prints;
 * it checks every result against the same arithmetic on the CPU (exact:
 * small integers and halves), prints "ok" or "FAILED" lines with checksums
 * of the results, and exits 1 on a wrong result.
 *
 *   rt_prog basic     three kernels, seven launches: a sub-buffer, a
 *                     __constant and a __local argument, a host-no-access
 *                     output, an event and a wait list, a queue made with
 *                     clCreateCommandQueue
 *   rt_prog threads   two threads, each with its own queue and kernel,
 *                     launching axpy 12 times on its own output
 *   rt_prog range     user ranges (kscope_range_start/end) around the
 *                     launches: "setup", then "step" three times
 *   rt_prog userevent a launch waiting for a user event that the program
 *                     sets after the launch returns, then one more
 *   rt_prog queues    two queues made without profiling, one with each
 *                     creation call: prints whether each profiles, then
 *                     launches axpy once on each
 *   rt_prog fork      forks a child that exits at once, then runs basic
 *   rt_prog forkcl    forks a child that runs basic (its first OpenCL
 *                     use), waits for it, then runs basic itself
 *   rt_prog nocl      prints a line and never uses OpenCL
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kscope/user.h"

#define N 4096
#define LOCAL 64

static const char *source =
	"__kernel void axpy(__global float *y, __global const float *x, const float a,\n"
	"                   const uint n)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	if (i < n)\n"
	"		y[i] += a * x[i];\n"
	"}\n"
	"__kernel void scale(__global float *v, const float s, const uint n)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	if (i < n)\n"
	"		v[i] = v[i] * s + 1.0f;\n"
	"}\n"
	"__kernel void blocksum(__global float *out, __global const float *in,\n"
	"                       __constant float *w, __local float *tmp, const uint n)\n"
	"{\n"
	"	size_t g = get_global_id(0), l = get_local_id(0);\n"
	"	tmp[l] = g < n ? in[g] * w[0] : 0.0f;\n"
	"	barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	if (l == 0) {\n"
	"		float s = 0.0f;\n"
	"		for (size_t k = 0; k < get_local_size(0); k++)\n"
	"			s += tmp[k];\n"
	"		out[get_group_id(0)] += s;\n"
	"	}\n"
	"}\n";

static void die(const char *what, cl_int e)
{
	fprintf(stderr, "rt_prog: %s failed: %d\n", what, (int)e);
	exit(2);
}

#define CHECK(call)                                  \
	do {                                         \
		cl_int e_ = (call);                  \
		if (e_ != CL_SUCCESS)                \
			die(#call, e_);              \
	} while (0)

struct cl {
	cl_context ctx;
	cl_device_id dev;
	cl_program prog;
};

static void cl_setup(struct cl *c)
{
	cl_platform_id plat;
	cl_int e;

	CHECK(clGetPlatformIDs(1, &plat, NULL));
	CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &c->dev, NULL));
	c->ctx = clCreateContext(NULL, 1, &c->dev, NULL, NULL, &e);
	if (!c->ctx)
		die("clCreateContext", e);
	c->prog = clCreateProgramWithSource(c->ctx, 1, &source, NULL, &e);
	if (!c->prog)
		die("clCreateProgramWithSource", e);
	e = clBuildProgram(c->prog, 1, &c->dev, "-cl-std=CL1.2", NULL, NULL);
	if (e != CL_SUCCESS) {
		char log[4096] = "";

		clGetProgramBuildInfo(c->prog, c->dev, CL_PROGRAM_BUILD_LOG, sizeof(log), log, NULL);
		fprintf(stderr, "%s\n", log);
		die("clBuildProgram", e);
	}
}

static cl_kernel kernel(struct cl *c, const char *name)
{
	cl_int e;
	cl_kernel k = clCreateKernel(c->prog, name, &e);

	if (!k)
		die("clCreateKernel", e);
	return k;
}

static cl_mem buffer(struct cl *c, cl_mem_flags flags, size_t bytes, void *init)
{
	cl_int e;
	cl_mem m = clCreateBuffer(c->ctx, flags | (init ? CL_MEM_COPY_HOST_PTR : 0), bytes, init,
				  &e);

	if (!m)
		die("clCreateBuffer", e);
	return m;
}

/* Sets all four arguments of axpy (y += a * x over n elements). */
static void axpy_args(cl_kernel k, cl_mem y, cl_mem x, float a, cl_uint n)
{
	CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &y));
	CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &x));
	CHECK(clSetKernelArg(k, 2, sizeof(float), &a));
	CHECK(clSetKernelArg(k, 3, sizeof(cl_uint), &n));
}

static uint32_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static int report(const char *what, const float *got, const float *want, size_t n)
{
	int ok = memcmp(got, want, n * sizeof(float)) == 0;

	printf("%s: %s %08x\n", what, ok ? "ok" : "FAILED", fnv(got, n * sizeof(float)));
	fflush(stdout);
	return ok;
}

/* ------------------------------------------------------------------ */
/* basic                                                               */
/* ------------------------------------------------------------------ */

static void ref_axpy(float *y, const float *x, float a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] += a * x[i];
}

static void ref_scale(float *v, float s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = v[i] * s + 1.0f;
}

static void ref_blocksum(float *out, const float *in, float w, size_t n)
{
	for (size_t g = 0; g < n / LOCAL; g++) {
		float s = 0.0f;

		for (size_t k = 0; k < LOCAL; k++)
			s += in[g * LOCAL + k] * w;
		out[g] += s;
	}
}

static int run_basic(void)
{
	static float x[N], y[N], out[N / LOCAL], ry[N], rout[N / LOCAL];
	float w = 0.5f;
	const cl_uint n = N, half = N / 2;
	const size_t gn = N, ghalf = N / 2, lsz = LOCAL;
	struct cl c;
	cl_command_queue q;
	cl_kernel axpy, scale, bsum;
	cl_mem dx, dy, dysub, dw, dout, dread;
	cl_buffer_region region = { N / 2 * sizeof(float), N / 2 * sizeof(float) };
	cl_event ev;
	cl_int e;
	float a = 0.5f, s = 2.0f;
	int ok = 1;

	for (size_t i = 0; i < N; i++) {
		x[i] = (float)(i % 7);
		y[i] = ry[i] = (float)(i % 5);
	}
	memset(out, 0, sizeof(out));
	memset(rout, 0, sizeof(rout));
	cl_setup(&c);
	q = clCreateCommandQueue(c.ctx, c.dev, 0, &e);
	if (!q)
		die("clCreateCommandQueue", e);
	axpy = kernel(&c, "axpy");
	scale = kernel(&c, "scale");
	bsum = kernel(&c, "blocksum");
	dx = buffer(&c, CL_MEM_READ_ONLY, sizeof(x), x);
	dy = buffer(&c, CL_MEM_READ_WRITE, sizeof(y), y);
	dw = buffer(&c, CL_MEM_READ_ONLY, sizeof(w), &w);
	dout = buffer(&c, CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS, sizeof(out), NULL);
	dread = buffer(&c, CL_MEM_READ_WRITE, sizeof(out), NULL);
	dysub = clCreateSubBuffer(dy, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &e);
	if (!dysub)
		die("clCreateSubBuffer", e);
	{
		float zero = 0.0f;

		CHECK(clEnqueueFillBuffer(q, dout, &zero, sizeof(zero), 0, sizeof(out), 0, NULL,
					  NULL));
	}
	/* The program sets the arguments it changes only: kscope must use
	 * what was set last, in any order. */
	axpy_args(axpy, dy, dx, a, n);
	CHECK(clEnqueueNDRangeKernel(q, axpy, 1, NULL, &gn, NULL, 0, NULL, NULL));   /* 0 */
	ref_axpy(ry, x, a, N);
	a = 1.5f;
	CHECK(clSetKernelArg(axpy, 2, sizeof(float), &a));
	CHECK(clEnqueueNDRangeKernel(q, axpy, 1, NULL, &gn, NULL, 0, NULL, NULL));   /* 1 */
	ref_axpy(ry, x, a, N);
	CHECK(clSetKernelArg(scale, 0, sizeof(cl_mem), &dysub));
	CHECK(clSetKernelArg(scale, 1, sizeof(float), &s));
	CHECK(clSetKernelArg(scale, 2, sizeof(cl_uint), &half));
	CHECK(clEnqueueNDRangeKernel(q, scale, 1, NULL, &ghalf, NULL, 0, NULL, NULL)); /* 2 */
	ref_scale(ry + N / 2, s, N / 2);
	CHECK(clSetKernelArg(bsum, 0, sizeof(cl_mem), &dout));
	CHECK(clSetKernelArg(bsum, 1, sizeof(cl_mem), &dy));
	CHECK(clSetKernelArg(bsum, 2, sizeof(cl_mem), &dw));
	CHECK(clSetKernelArg(bsum, 3, LOCAL * sizeof(float), NULL));
	CHECK(clSetKernelArg(bsum, 4, sizeof(cl_uint), &n));
	CHECK(clEnqueueNDRangeKernel(q, bsum, 1, NULL, &gn, &lsz, 0, NULL, NULL));   /* 3 */
	ref_blocksum(rout, ry, w, N);
	CHECK(clEnqueueNDRangeKernel(q, axpy, 1, NULL, &gn, NULL, 0, NULL, &ev));    /* 4 */
	ref_axpy(ry, x, a, N);
	CHECK(clSetKernelArg(scale, 0, sizeof(cl_mem), &dy));
	CHECK(clSetKernelArg(scale, 2, sizeof(cl_uint), &n));
	CHECK(clEnqueueNDRangeKernel(q, scale, 1, NULL, &gn, NULL, 1, &ev, NULL));   /* 5 */
	ref_scale(ry, s, N);
	CHECK(clEnqueueNDRangeKernel(q, bsum, 1, NULL, &gn, &lsz, 0, NULL, NULL));   /* 6 */
	ref_blocksum(rout, ry, w, N);
	CHECK(clEnqueueCopyBuffer(q, dout, dread, 0, 0, sizeof(out), 0, NULL, NULL));
	CHECK(clEnqueueReadBuffer(q, dy, CL_TRUE, 0, sizeof(y), y, 0, NULL, NULL));
	CHECK(clEnqueueReadBuffer(q, dread, CL_TRUE, 0, sizeof(out), out, 0, NULL, NULL));
	ok &= report("basic y", y, ry, N);
	ok &= report("basic out", out, rout, N / LOCAL);
	CHECK(clReleaseEvent(ev));
	CHECK(clReleaseMemObject(dysub));
	CHECK(clReleaseMemObject(dx));
	CHECK(clReleaseMemObject(dy));
	CHECK(clReleaseMemObject(dw));
	CHECK(clReleaseMemObject(dout));
	CHECK(clReleaseMemObject(dread));
	CHECK(clReleaseKernel(axpy));
	CHECK(clReleaseKernel(scale));
	CHECK(clReleaseKernel(bsum));
	CHECK(clReleaseProgram(c.prog));
	CHECK(clReleaseCommandQueue(q));
	CHECK(clReleaseContext(c.ctx));
	return ok;
}

/* ------------------------------------------------------------------ */
/* queues                                                              */
/* ------------------------------------------------------------------ */

static int run_queues(void)
{
	static float x[N], y[N], ry[N];
	const cl_uint n = N;
	const size_t gn = N;
	struct cl c;
	cl_command_queue q[2];
	cl_kernel axpy;
	cl_mem dx, dy;
	cl_int e;
	float a = 0.25f;
	int ok;

	for (size_t i = 0; i < N; i++) {
		x[i] = (float)(i % 3);
		y[i] = ry[i] = (float)(i % 4);
	}
	cl_setup(&c);
	q[0] = clCreateCommandQueue(c.ctx, c.dev, 0, &e);
	if (!q[0])
		die("clCreateCommandQueue", e);
	q[1] = clCreateCommandQueueWithProperties(c.ctx, c.dev, NULL, &e);
	if (!q[1])
		die("clCreateCommandQueueWithProperties", e);
	axpy = kernel(&c, "axpy");
	dx = buffer(&c, CL_MEM_READ_ONLY, sizeof(x), x);
	dy = buffer(&c, CL_MEM_READ_WRITE, sizeof(y), y);
	axpy_args(axpy, dy, dx, a, n);
	for (int i = 0; i < 2; i++) {
		cl_command_queue_properties props = 0;

		CHECK(clGetCommandQueueInfo(q[i], CL_QUEUE_PROPERTIES, sizeof(props), &props,
					    NULL));
		printf("queue %d profiling: %s\n", i,
		       props & CL_QUEUE_PROFILING_ENABLE ? "on" : "off");
		CHECK(clEnqueueNDRangeKernel(q[i], axpy, 1, NULL, &gn, NULL, 0, NULL, NULL));
		CHECK(clFinish(q[i]));
		ref_axpy(ry, x, a, N);
	}
	CHECK(clEnqueueReadBuffer(q[0], dy, CL_TRUE, 0, sizeof(y), y, 0, NULL, NULL));
	ok = report("queues y", y, ry, N);
	CHECK(clReleaseMemObject(dx));
	CHECK(clReleaseMemObject(dy));
	CHECK(clReleaseKernel(axpy));
	CHECK(clReleaseProgram(c.prog));
	CHECK(clReleaseCommandQueue(q[0]));
	CHECK(clReleaseCommandQueue(q[1]));
	CHECK(clReleaseContext(c.ctx));
	return ok;
}

/* ------------------------------------------------------------------ */
/* threads                                                             */
/* ------------------------------------------------------------------ */

#define THREAD_LAUNCHES 12

struct worker {
	struct cl *c;
	cl_mem dx;
	float a;
	float y[N], ry[N];
};

static void *worker_main(void *p)
{
	struct worker *w = p;
	const cl_queue_properties props[] = { 0 };
	const cl_uint n = N;
	const size_t gn = N;
	cl_command_queue q;
	cl_kernel k = kernel(w->c, "axpy");
	cl_mem dy;
	cl_int e;
	float x[N];

	for (size_t i = 0; i < N; i++) {
		x[i] = (float)(i % 7);
		w->y[i] = w->ry[i] = (float)(i % 3);
	}
	q = clCreateCommandQueueWithProperties(w->c->ctx, w->c->dev, props, &e);
	if (!q)
		die("clCreateCommandQueueWithProperties", e);
	dy = buffer(w->c, CL_MEM_READ_WRITE, sizeof(w->y), w->y);
	axpy_args(k, dy, w->dx, w->a, n);
	for (int i = 0; i < THREAD_LAUNCHES; i++) {
		CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gn, NULL, 0, NULL, NULL));
		ref_axpy(w->ry, x, w->a, N);
		if (i % 4 == 3)
			CHECK(clFinish(q));
	}
	CHECK(clEnqueueReadBuffer(q, dy, CL_TRUE, 0, sizeof(w->y), w->y, 0, NULL, NULL));
	CHECK(clReleaseMemObject(dy));
	CHECK(clReleaseKernel(k));
	CHECK(clReleaseCommandQueue(q));
	return NULL;
}

static int run_threads(void)
{
	static float x[N];
	static struct worker w[2];
	pthread_t th[2];
	struct cl c;
	int ok = 1;

	for (size_t i = 0; i < N; i++)
		x[i] = (float)(i % 7);
	cl_setup(&c);
	for (int t = 0; t < 2; t++) {
		w[t].c = &c;
		w[t].a = t ? 0.5f : 2.0f;
		w[t].dx = buffer(&c, CL_MEM_READ_ONLY, sizeof(x), x);
	}
	for (int t = 0; t < 2; t++)
		if (pthread_create(&th[t], NULL, worker_main, &w[t]) != 0)
			die("pthread_create", 0);
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	ok &= report("threads y0", w[0].y, w[0].ry, N);
	ok &= report("threads y1", w[1].y, w[1].ry, N);
	for (int t = 0; t < 2; t++)
		CHECK(clReleaseMemObject(w[t].dx));
	CHECK(clReleaseProgram(c.prog));
	CHECK(clReleaseContext(c.ctx));
	return ok;
}

/* ------------------------------------------------------------------ */
/* range                                                               */
/* ------------------------------------------------------------------ */

static int run_range(void)
{
	static float x[N], y[N], ry[N];
	const cl_uint n = N;
	const size_t gn = N;
	float a = 0.5f, s = 0.5f;
	struct cl c;
	cl_command_queue q;
	cl_kernel axpy, scale;
	cl_mem dx, dy;
	uint64_t id;
	cl_int e;

	for (size_t i = 0; i < N; i++) {
		x[i] = (float)(i % 7);
		y[i] = ry[i] = (float)(i % 5);
	}
	id = kscope_range_start("setup");
	cl_setup(&c);
	q = clCreateCommandQueue(c.ctx, c.dev, 0, &e);
	if (!q)
		die("clCreateCommandQueue", e);
	axpy = kernel(&c, "axpy");
	scale = kernel(&c, "scale");
	dx = buffer(&c, CL_MEM_READ_ONLY, sizeof(x), x);
	dy = buffer(&c, CL_MEM_READ_WRITE, sizeof(y), y);
	axpy_args(axpy, dy, dx, a, n);
	CHECK(clSetKernelArg(scale, 0, sizeof(cl_mem), &dy));
	CHECK(clSetKernelArg(scale, 1, sizeof(float), &s));
	CHECK(clSetKernelArg(scale, 2, sizeof(cl_uint), &n));
	CHECK(clEnqueueNDRangeKernel(q, scale, 1, NULL, &gn, NULL, 0, NULL, NULL));
	ref_scale(ry, s, N);
	kscope_range_end(id);
	for (int step = 0; step < 3; step++) {
		id = kscope_range_start("step");
		CHECK(clEnqueueNDRangeKernel(q, axpy, 1, NULL, &gn, NULL, 0, NULL, NULL));
		ref_axpy(ry, x, a, N);
		CHECK(clEnqueueNDRangeKernel(q, scale, 1, NULL, &gn, NULL, 0, NULL, NULL));
		ref_scale(ry, s, N);
		CHECK(clEnqueueNDRangeKernel(q, axpy, 1, NULL, &gn, NULL, 0, NULL, NULL));
		ref_axpy(ry, x, a, N);
		kscope_range_end(id);
	}
	/* Outside every range. */
	CHECK(clEnqueueNDRangeKernel(q, scale, 1, NULL, &gn, NULL, 0, NULL, NULL));
	ref_scale(ry, s, N);
	CHECK(clEnqueueReadBuffer(q, dy, CL_TRUE, 0, sizeof(y), y, 0, NULL, NULL));
	return report("range y", y, ry, N);
}

/* ------------------------------------------------------------------ */
/* userevent                                                           */
/* ------------------------------------------------------------------ */

/* A launch that waits for a user event the program sets only after the
 * launch returns. */
static int run_userevent(void)
{
	static float x[N], y[N], ry[N];
	const cl_uint n = N;
	const size_t gn = N;
	float a = 2.0f;
	struct cl c;
	cl_command_queue q;
	cl_kernel axpy;
	cl_mem dx, dy;
	cl_event ue;
	cl_int e;

	for (size_t i = 0; i < N; i++) {
		x[i] = (float)(i % 7);
		y[i] = ry[i] = (float)(i % 5);
	}
	cl_setup(&c);
	q = clCreateCommandQueue(c.ctx, c.dev, 0, &e);
	if (!q)
		die("clCreateCommandQueue", e);
	axpy = kernel(&c, "axpy");
	dx = buffer(&c, CL_MEM_READ_ONLY, sizeof(x), x);
	dy = buffer(&c, CL_MEM_READ_WRITE, sizeof(y), y);
	ue = clCreateUserEvent(c.ctx, &e);
	if (!ue)
		die("clCreateUserEvent", e);
	axpy_args(axpy, dy, dx, a, n);
	CHECK(clEnqueueNDRangeKernel(q, axpy, 1, NULL, &gn, NULL, 1, &ue, NULL));
	ref_axpy(ry, x, a, N);
	CHECK(clSetUserEventStatus(ue, CL_COMPLETE));
	CHECK(clEnqueueNDRangeKernel(q, axpy, 1, NULL, &gn, NULL, 0, NULL, NULL));
	ref_axpy(ry, x, a, N);
	CHECK(clEnqueueReadBuffer(q, dy, CL_TRUE, 0, sizeof(y), y, 0, NULL, NULL));
	CHECK(clReleaseEvent(ue));
	return report("userevent y", y, ry, N);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "basic";
	int ok;

	if (strcmp(mode, "nocl") == 0) {
		printf("nocl: ok\n");
		return 0;
	}
	if (strcmp(mode, "fork") == 0) {
		pid_t pid = fork();
		int st;

		if (pid < 0)
			die("fork", 0);
		if (pid == 0) {
			printf("child: ok\n");
			exit(0);
		}
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die("the child", 0);
		mode = "basic";
	}
	if (strcmp(mode, "forkcl") == 0) {
		pid_t pid;
		int st;

		fflush(stdout);
		pid = fork();
		if (pid < 0)
			die("fork", 0);
		if (pid == 0)
			exit(run_basic() ? 0 : 1);
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die("the child", 0);
		mode = "basic";
	}
	if (strcmp(mode, "basic") == 0)
		ok = run_basic();
	else if (strcmp(mode, "threads") == 0)
		ok = run_threads();
	else if (strcmp(mode, "range") == 0)
		ok = run_range();
	else if (strcmp(mode, "userevent") == 0)
		ok = run_userevent();
	else if (strcmp(mode, "queues") == 0)
		ok = run_queues();
	else {
		fprintf(stderr, "usage: rt_prog basic|threads|range|userevent|queues|fork|forkcl|nocl\n");
		return 2;
	}
	return ok ? 0 : 1;
}
