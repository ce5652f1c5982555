/*
 * A kernel whose source kscope cannot know: builds a program from source,
 * launches its kernel `twice` once (x = 2 * x), then takes the program's
 * binary (CL_PROGRAM_BINARIES), creates a second program from that binary
 * alone (clCreateProgramWithBinary), builds it and launches `twice` from
 * it on the same buffer.  Under kscope op the first launch has its source
 * (context.json program.origin "source", kernel.cl) and the second has
 * only the binary (origin "binary", no kernel.cl).  Checks that x = 4 *
 * its initial value, prints "binprog: ok" or "binprog: FAILED" and an
 * FNV-1a checksum of x; exits 1 on a wrong result.
 *
 *   binprog [N]    N elements (default 4096)
 */
#include "clx.h"

static const char *const source =
	"__kernel void twice(__global int *x)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	x[i] = 2 * x[i];\n"
	"}\n";

static void run_twice(cl_command_queue q, cl_program prog, cl_mem x, size_t n)
{
	cl_kernel k = clx_kernel(prog, "twice");

	CLX_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &x));
	CLX_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
	CLX_CHECK(clFinish(q));
	clReleaseKernel(k);
}

int main(int argc, char **argv)
{
	const char *usage = "binprog [N]  (N elements, 1 to 16777216, default 4096)";
	size_t n, bin_size = 0, bad = 0;
	unsigned char *bin;
	const unsigned char *bins[1];
	cl_device_id dev;
	cl_context ctx;
	cl_command_queue q;
	cl_program from_src, from_bin;
	cl_mem x;
	cl_int err, status;
	int *hx;

	if (argc > 2) {
		fprintf(stderr, "usage: %s\n", usage);
		return 2;
	}
	n = clx_arg(argc > 1 ? argv[1] : NULL, 4096, 16777216, usage);
	hx = clx_alloc(n * sizeof(int));
	for (size_t i = 0; i < n; i++)
		hx[i] = (int)(i % 1000) - 500;
	dev = clx_device(NULL);
	ctx = clx_context(dev);
	q = clCreateCommandQueue(ctx, dev, 0, &err);
	clx_check_create("clCreateCommandQueue", err);
	x = clx_buffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * sizeof(int), hx);

	from_src = clx_build(ctx, dev, source, NULL);
	run_twice(q, from_src, x, n);
	printf("binprog: launch from source done\n");

	/* One device, so one binary. */
	CLX_CHECK(clGetProgramInfo(from_src, CL_PROGRAM_BINARY_SIZES, sizeof(bin_size),
				   &bin_size, NULL));
	if (bin_size == 0) {
		fprintf(stderr, "binprog: the runtime gave no program binary\n");
		return 3;
	}
	bin = clx_alloc(bin_size);
	CLX_CHECK(clGetProgramInfo(from_src, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL));
	bins[0] = bin;
	from_bin = clCreateProgramWithBinary(ctx, 1, &dev, &bin_size, bins, &status, &err);
	clx_check_create("clCreateProgramWithBinary", err);
	clx_check_create("clCreateProgramWithBinary (binary status)", status);
	CLX_CHECK(clBuildProgram(from_bin, 1, &dev, NULL, NULL, NULL));
	run_twice(q, from_bin, x, n);
	printf("binprog: launch from binary done\n");

	CLX_CHECK(clEnqueueReadBuffer(q, x, CL_TRUE, 0, n * sizeof(int), hx, 0, NULL, NULL));
	for (size_t i = 0; i < n; i++)
		if (hx[i] != 4 * ((int)(i % 1000) - 500))
			bad++;
	if (bad)
		printf("binprog: FAILED (%zu of %zu elements wrong)\n", bad, n);
	else
		printf("binprog: ok\n");
	printf("checksum: fnv1a=%08x\n", (unsigned)clx_fnv1a(CLX_FNV_INIT, hx, n * sizeof(int)));

	clReleaseMemObject(x);
	clReleaseProgram(from_src);
	clReleaseProgram(from_bin);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	free(bin);
	free(hx);
	return bad ? 1 : 0;
}
