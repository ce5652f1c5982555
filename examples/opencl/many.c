/*
 * The workload of bench/op.sh: many small kernel launches, and optionally
 * one mid-size kernel timed by the program itself.
 *
 *   many [N] [--time]
 *
 * Enqueues N (default 10000, 0 allowed) launches of the kernel `small`
 * (x = x + y over 1024 ints) with a clFinish every 100, the pattern whose
 * cost under `kscope op` with a filter matching nothing is kscope's
 * overhead.  Checks x against the CPU, prints "many: ok" or "many:
 * FAILED" and an FNV-1a checksum.
 *
 * With --time it then launches the kernel `work` (a chain of
 * multiply-adds per element of a 64 Ki-float buffer, a few milliseconds
 * on a CPU device) WORK_WARMUPS times unmeasured and WORK_RUNS times
 * measured on a queue of its own with profiling enabled, each launch
 * waited for, and prints the median of the measured launches' event
 * times (END - START) on stderr as "many: work median_ns=N": the kernel's
 * time in an unprofiled run, which bench/op.sh compares with what kscope
 * op's replay measures.  The result of `work` joins the checksum; the
 * time is the only output that varies from run to run, and it goes to
 * stderr.
 */
#include "clx.h"

#define SMALL_N 1024       /* elements per `small` launch */
#define FINISH_EVERY 100
#define WORK_N 65536       /* elements of `work`'s buffer */
#define WORK_ITERS 100     /* multiply-adds per element */
#define WORK_WARMUPS 5
#define WORK_RUNS 15

static const char *const source =
	"__kernel void small(__global int *x, __global const int *y)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	x[i] = x[i] + y[i];\n"
	"}\n"
	"__kernel void work(__global float *v, const int iters)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	float a = v[i];\n"
	"	for (int k = 0; k < iters; k++)\n"
	"		a = a * 0.999f + 0.001f;\n"
	"	v[i] = a;\n"
	"}\n";

static int cmp_ulong(const void *a, const void *b)
{
	cl_ulong x = *(const cl_ulong *)a, y = *(const cl_ulong *)b;

	return x < y ? -1 : x > y;
}

/* Runs `work` as the file comment says; prints its median event time on
 * stderr and returns the FNV-1a of its buffer afterwards, continuing h. */
static uint32_t time_work(cl_context ctx, cl_device_id dev, cl_program prog, uint32_t h)
{
	const cl_queue_properties props[] = { CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE,
					      0 };
	size_t n = WORK_N;
	cl_int err, iters = WORK_ITERS;
	cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, props, &err);
	cl_kernel k;
	cl_mem v;
	cl_ulong ns[WORK_RUNS];
	float *hv = clx_alloc(n * sizeof(float));

	clx_check_create("clCreateCommandQueueWithProperties", err);
	for (size_t i = 0; i < n; i++)
		hv[i] = (float)(i % 100) * 0.01f;
	v = clx_buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(float), hv);
	k = clx_kernel(prog, "work");
	CLX_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &v));
	CLX_CHECK(clSetKernelArg(k, 1, sizeof(cl_int), &iters));
	for (int r = 0; r < WORK_WARMUPS + WORK_RUNS; r++) {
		cl_event ev;
		cl_ulong start, end;

		CLX_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, &ev));
		CLX_CHECK(clWaitForEvents(1, &ev));
		CLX_CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(start),
						  &start, NULL));
		CLX_CHECK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(end),
						  &end, NULL));
		CLX_CHECK(clReleaseEvent(ev));
		if (r >= WORK_WARMUPS)
			ns[r - WORK_WARMUPS] = end - start;
	}
	qsort(ns, WORK_RUNS, sizeof(ns[0]), cmp_ulong);
	fprintf(stderr, "many: work median_ns=%llu\n", (unsigned long long)ns[WORK_RUNS / 2]);
	CLX_CHECK(clEnqueueReadBuffer(q, v, CL_TRUE, 0, n * sizeof(float), hv, 0, NULL, NULL));
	h = clx_fnv1a(h, hv, n * sizeof(float));
	clReleaseMemObject(v);
	clReleaseKernel(k);
	clReleaseCommandQueue(q);
	free(hv);
	return h;
}

int main(int argc, char **argv)
{
	const char *usage = "many [N] [--time]  (N launches of `small`, 0 to 10000000, "
			    "default 10000)";
	unsigned long launches = 10000;
	int timed = 0, have_n = 0;
	size_t n = SMALL_N, bad = 0;
	int hx[SMALL_N], hy[SMALL_N];
	cl_device_id dev;
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	cl_kernel k;
	cl_mem x, y;
	cl_int err;
	uint32_t h;

	for (int i = 1; i < argc; i++) {
		char *end;

		if (strcmp(argv[i], "--time") == 0 && !timed) {
			timed = 1;
		} else if (!have_n && argv[i][0] >= '0' && argv[i][0] <= '9') {
			launches = strtoul(argv[i], &end, 10);
			if (*end || launches > 10000000) {
				fprintf(stderr, "usage: %s\n", usage);
				return 2;
			}
			have_n = 1;
		} else {
			fprintf(stderr, "usage: %s\n", usage);
			return 2;
		}
	}
	for (size_t i = 0; i < n; i++) {
		hx[i] = (int)i;
		hy[i] = (int)(i % 5) - 2;
	}
	dev = clx_device(NULL);
	ctx = clx_context(dev);
	q = clCreateCommandQueue(ctx, dev, 0, &err);
	clx_check_create("clCreateCommandQueue", err);
	prog = clx_build(ctx, dev, source, NULL);
	k = clx_kernel(prog, "small");
	x = clx_buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(hx), hx);
	y = clx_buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(hy), hy);
	CLX_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &x));
	CLX_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &y));
	printf("many: %lu launches of small\n", launches);
	fflush(stdout);

	for (unsigned long i = 0; i < launches; i++) {
		CLX_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
		if (i % FINISH_EVERY == FINISH_EVERY - 1)
			CLX_CHECK(clFinish(q));
	}
	CLX_CHECK(clEnqueueReadBuffer(q, x, CL_TRUE, 0, sizeof(hx), hx, 0, NULL, NULL));
	for (size_t i = 0; i < n; i++)
		if ((long long)hx[i] != (long long)i + (long long)launches * ((int)(i % 5) - 2))
			bad++;
	h = clx_fnv1a(CLX_FNV_INIT, hx, sizeof(hx));
	if (timed)
		h = time_work(ctx, dev, prog, h);
	if (bad)
		printf("many: FAILED (%zu of %zu elements wrong)\n", bad, n);
	else
		printf("many: ok\n");
	printf("checksum: fnv1a=%08x\n", (unsigned)h);

	clReleaseMemObject(x);
	clReleaseMemObject(y);
	clReleaseKernel(k);
	clReleaseProgram(prog);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	return bad ? 1 : 0;
}
