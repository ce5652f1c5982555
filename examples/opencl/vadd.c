/*
 * Vector add, the smallest OpenCL program kscope op has to handle: the
 * kernel `vadd` (c = a + b over n floats) launched four times, each
 * launch adding b once more to the previous result (the two result
 * buffers take turns as input and output).  Checks the result against
 * the same sums on the CPU (exact: the values are multiples of 0.25 far
 * below float's 24-bit mantissa), prints "vadd: ok" or "vadd: FAILED"
 * and an FNV-1a checksum of the result, and exits 1 on a wrong result.
 *
 *   vadd [N]     N elements (default 1048576)
 *
 * Output is deterministic.  A line is printed and flushed after each
 * launch, so a run stopped part-way leaves a prefix of the full output.
 */
#include "clx.h"

#define LAUNCHES 4

static const char *const source =
	"__kernel void vadd(__global const float *a, __global const float *b,\n"
	"                   __global float *c, const uint n)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	if (i < n)\n"
	"		c[i] = a[i] + b[i];\n"
	"}\n";

int main(int argc, char **argv)
{
	const char *usage = "vadd [N]  (N elements, 1 to 268435456, default 1048576)";
	size_t n, bytes;
	float *a, *b, *out;
	cl_device_id dev;
	cl_context ctx;
	cl_int err;
	cl_command_queue q;
	cl_program prog;
	cl_kernel k;
	cl_mem da, db, dc[2];
	cl_uint nn;
	size_t bad = 0;
	uint32_t h;

	if (argc > 2) {
		fprintf(stderr, "usage: %s\n", usage);
		return 2;
	}
	n = clx_arg(argc > 1 ? argv[1] : NULL, 1048576, 268435456, usage);
	bytes = n * sizeof(float);
	nn = (cl_uint)n;
	a = clx_alloc(bytes);
	b = clx_alloc(bytes);
	out = clx_alloc(bytes);
	dev = clx_device(NULL);
	ctx = clx_context(dev);
	q = clCreateCommandQueue(ctx, dev, 0, &err);
	clx_check_create("clCreateCommandQueue", err);
	for (size_t i = 0; i < n; i++) {
		a[i] = (float)(i % 1000) * 0.25f;
		b[i] = (float)(i % 7) * 1.5f;
	}
	prog = clx_build(ctx, dev, source, NULL);
	k = clx_kernel(prog, "vadd");
	da = clx_buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, a);
	db = clx_buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, b);
	dc[0] = clx_buffer(ctx, CL_MEM_READ_WRITE, bytes, NULL);
	dc[1] = clx_buffer(ctx, CL_MEM_READ_WRITE, bytes, NULL);
	printf("vadd: n=%zu launches=%d\n", n, LAUNCHES);
	fflush(stdout);

	/* Launch i: dc[i % 2] = (i ? dc[(i + 1) % 2] : a) + b. */
	for (int i = 0; i < LAUNCHES; i++) {
		cl_mem in = i ? dc[(i + 1) % 2] : da;

		CLX_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &in));
		CLX_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &db));
		CLX_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &dc[i % 2]));
		CLX_CHECK(clSetKernelArg(k, 3, sizeof(cl_uint), &nn));
		CLX_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
		CLX_CHECK(clFinish(q));
		printf("vadd: launch %d done\n", i);
		fflush(stdout);
	}

	CLX_CHECK(clEnqueueReadBuffer(q, dc[(LAUNCHES - 1) % 2], CL_TRUE, 0, bytes, out, 0,
				      NULL, NULL));
	for (size_t i = 0; i < n; i++)
		if (out[i] != a[i] + (float)LAUNCHES * b[i])
			bad++;
	h = clx_fnv1a(CLX_FNV_INIT, out, bytes);
	if (bad)
		printf("vadd: FAILED (%zu of %zu elements wrong)\n", bad, n);
	else
		printf("vadd: ok\n");
	printf("checksum: fnv1a=%08x\n", (unsigned)h);

	clReleaseMemObject(da);
	clReleaseMemObject(db);
	clReleaseMemObject(dc[0]);
	clReleaseMemObject(dc[1]);
	clReleaseKernel(k);
	clReleaseProgram(prog);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	free(a);
	free(b);
	free(out);
	return bad ? 1 : 0;
}
