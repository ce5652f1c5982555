/*
 * Two threads sharing one OpenCL context, each with its own command queue
 * (thread 0's made with clCreateCommandQueue, thread 1's with
 * clCreateCommandQueueWithProperties), its own kernel objects and its own
 * buffers.  Each thread runs R rounds (default 20) of three kernels on
 * its buffers x and y:
 *
 *   scale   x = x * 0.5
 *   offset  x = x + 1
 *   saxpy   y = 2 * x + y
 *
 * so the two threads' launches interleave in time.  Every operation is
 * one IEEE rounding (the product 2 * x is exact, so a fused multiply-add
 * rounds the same way), so the device's result must equal the same
 * arithmetic done on the CPU bit for bit.  After both threads are done
 * the main thread prints, in a fixed order, each thread's verdict and
 * checksum, then "threads2: ok" or "threads2: FAILED" and the checksum
 * of all results; exits 1 on a wrong result.
 *
 *   threads2 [R [N]]    R rounds (default 20), N elements (default 65536)
 */
#include <pthread.h>

#include "clx.h"

static const char *const source =
	"__kernel void scale(__global float *x, const float s)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	x[i] = x[i] * s;\n"
	"}\n"
	"__kernel void offset(__global float *x, const float d)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	x[i] = x[i] + d;\n"
	"}\n"
	"__kernel void saxpy(__global const float *x, __global float *y, const float a)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	y[i] = a * x[i] + y[i];\n"
	"}\n";

struct worker {
	int id;                 /* 0 or 1: which queue constructor it uses */
	cl_context ctx;
	cl_device_id dev;
	cl_program prog;        /* shared, built once by main */
	size_t n, rounds;
	float *x, *y;           /* results read back from the device */
	size_t bad;             /* elements differing from the CPU reference */
	uint32_t hash;          /* FNV-1a of x then y */
};

static void init_values(const struct worker *w, float *x, float *y)
{
	for (size_t i = 0; i < w->n; i++) {
		x[i] = (float)(i % 97) + (float)w->id;
		y[i] = (float)(i % 13);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	size_t bytes = w->n * sizeof(float);
	float *rx = clx_alloc(bytes), *ry = clx_alloc(bytes);
	const float half = 0.5f, one = 1.0f, two = 2.0f;
	cl_command_queue q;
	cl_kernel scale, offset, saxpy;
	cl_mem dx, dy;
	cl_int err;

	if (w->id == 0) {
		q = clCreateCommandQueue(w->ctx, w->dev, 0, &err);
	} else {
		const cl_queue_properties props[] = { 0 };

		q = clCreateCommandQueueWithProperties(w->ctx, w->dev, props, &err);
	}
	clx_check_create("command queue", err);
	/* Kernel objects are not safe to set arguments on from two threads:
	 * each thread makes its own from the shared program. */
	scale = clx_kernel(w->prog, "scale");
	offset = clx_kernel(w->prog, "offset");
	saxpy = clx_kernel(w->prog, "saxpy");
	init_values(w, w->x, w->y);
	dx = clx_buffer(w->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, w->x);
	dy = clx_buffer(w->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, bytes, w->y);
	CLX_CHECK(clSetKernelArg(scale, 0, sizeof(cl_mem), &dx));
	CLX_CHECK(clSetKernelArg(scale, 1, sizeof(float), &half));
	CLX_CHECK(clSetKernelArg(offset, 0, sizeof(cl_mem), &dx));
	CLX_CHECK(clSetKernelArg(offset, 1, sizeof(float), &one));
	CLX_CHECK(clSetKernelArg(saxpy, 0, sizeof(cl_mem), &dx));
	CLX_CHECK(clSetKernelArg(saxpy, 1, sizeof(cl_mem), &dy));
	CLX_CHECK(clSetKernelArg(saxpy, 2, sizeof(float), &two));

	for (size_t r = 0; r < w->rounds; r++) {
		CLX_CHECK(clEnqueueNDRangeKernel(q, scale, 1, NULL, &w->n, NULL, 0, NULL, NULL));
		CLX_CHECK(clEnqueueNDRangeKernel(q, offset, 1, NULL, &w->n, NULL, 0, NULL, NULL));
		CLX_CHECK(clEnqueueNDRangeKernel(q, saxpy, 1, NULL, &w->n, NULL, 0, NULL, NULL));
		if (r % 5 == 4)
			CLX_CHECK(clFinish(q));
	}
	CLX_CHECK(clEnqueueReadBuffer(q, dx, CL_TRUE, 0, bytes, w->x, 0, NULL, NULL));
	CLX_CHECK(clEnqueueReadBuffer(q, dy, CL_TRUE, 0, bytes, w->y, 0, NULL, NULL));

	/* The CPU reference, one rounding per operation as on the device. */
	init_values(w, rx, ry);
	for (size_t r = 0; r < w->rounds; r++)
		for (size_t i = 0; i < w->n; i++) {
			volatile float t = rx[i] * half;

			rx[i] = t + one;
			t = two * rx[i];
			ry[i] = t + ry[i];
		}
	w->bad = 0;
	for (size_t i = 0; i < w->n; i++)
		if (w->x[i] != rx[i] || w->y[i] != ry[i])
			w->bad++;
	w->hash = clx_fnv1a(clx_fnv1a(CLX_FNV_INIT, w->x, bytes), w->y, bytes);

	clReleaseMemObject(dx);
	clReleaseMemObject(dy);
	clReleaseKernel(scale);
	clReleaseKernel(offset);
	clReleaseKernel(saxpy);
	clReleaseCommandQueue(q);
	free(rx);
	free(ry);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *usage = "threads2 [R [N]]  (R rounds, 1 to 100000, default 20; "
			    "N elements, 1 to 67108864, default 65536)";
	struct worker w[2];
	pthread_t th[2];
	cl_device_id dev;
	cl_context ctx;
	cl_program prog;
	size_t rounds, n, bad = 0;
	uint32_t h = CLX_FNV_INIT;

	if (argc > 3) {
		fprintf(stderr, "usage: %s\n", usage);
		return 2;
	}
	rounds = clx_arg(argc > 1 ? argv[1] : NULL, 20, 100000, usage);
	n = clx_arg(argc > 2 ? argv[2] : NULL, 65536, 67108864, usage);
	dev = clx_device(NULL);
	ctx = clx_context(dev);
	prog = clx_build(ctx, dev, source, NULL);
	printf("threads2: 2 threads, %zu rounds of scale, offset, saxpy on %zu elements\n",
	       rounds, n);
	fflush(stdout);

	for (int t = 0; t < 2; t++) {
		w[t] = (struct worker){ .id = t, .ctx = ctx, .dev = dev, .prog = prog,
					.n = n, .rounds = rounds };
		w[t].x = clx_alloc(n * sizeof(float));
		w[t].y = clx_alloc(n * sizeof(float));
		if (pthread_create(&th[t], NULL, worker_main, &w[t]) != 0) {
			fprintf(stderr, "threads2: pthread_create failed\n");
			return 3;
		}
	}
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < 2; t++) {
		printf("thread %d: %s fnv1a=%08x\n", t, w[t].bad ? "FAILED" : "ok",
		       (unsigned)w[t].hash);
		bad += w[t].bad;
		h = clx_fnv1a(clx_fnv1a(h, w[t].x, n * sizeof(float)), w[t].y,
			      n * sizeof(float));
		free(w[t].x);
		free(w[t].y);
	}
	if (bad)
		printf("threads2: FAILED (%zu elements wrong)\n", bad);
	else
		printf("threads2: ok\n");
	printf("checksum: fnv1a=%08x\n", (unsigned)h);
	clReleaseProgram(prog);
	clReleaseContext(ctx);
	return bad ? 1 : 0;
}
