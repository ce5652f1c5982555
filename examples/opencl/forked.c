/*
 * A program that forks without exec, as Python's multiprocessing does by
 * default: the parent forks one child before either has used OpenCL, and
 * both then use OpenCL on their own, at the same time.  Each process
 * launches the kernel `scale2` (y = 2 * x + k over n floats) twice, with
 * k = 1 then k = 2 (the child) or k = 3 then k = 4 (the parent), the
 * second launch reading the first one's result, and checks its result
 * against the CPU (exact: small multiples of 0.5).
 *
 *   forked [N [LINGER]]   N elements (default 65536); with LINGER, the
 *                         child stays LINGER seconds after its work
 *                         (standard streams closed) and the parent exits
 *                         without waiting for it: a child that outlives
 *                         the program
 *
 * The child prints its lines and exits; the parent prints its own only
 * after the child has ended (or, with LINGER, after its own work), so
 * the output is deterministic: "child: ok", "child checksum: ...",
 * "parent: ok", "forked: ok" and "checksum: fnv1a=..." over both results.
 * Exit status 1 when a result is wrong, 3 when OpenCL fails.
 */
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clx.h"

static const char *const source =
	"__kernel void scale2(__global const float *x, __global float *y,\n"
	"                     const float k, const uint n)\n"
	"{\n"
	"	size_t i = get_global_id(0);\n"
	"	if (i < n)\n"
	"		y[i] = 2.0f * x[i] + k;\n"
	"}\n";

/* Runs the two launches with k0 and k0 + 1 into out (n floats); whether
 * the result is the CPU's. */
static int work(size_t n, float k0, float *out)
{
	size_t bytes = n * sizeof(float), gsize = n;
	float *x = clx_alloc(bytes);
	cl_device_id dev = clx_device(NULL);
	cl_context ctx = clx_context(dev);
	cl_int err;
	cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
	cl_program prog;
	cl_kernel k;
	cl_mem dx, dy, dz;
	cl_uint nn = (cl_uint)n;
	int ok = 1;

	clx_check_create("clCreateCommandQueue", err);
	for (size_t i = 0; i < n; i++)
		x[i] = (float)(i % 100) * 0.5f;
	prog = clx_build(ctx, dev, source, NULL);
	k = clx_kernel(prog, "scale2");
	dx = clx_buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, x);
	dy = clx_buffer(ctx, CL_MEM_READ_WRITE, bytes, NULL);
	dz = clx_buffer(ctx, CL_MEM_READ_WRITE, bytes, NULL);
	for (int l = 0; l < 2; l++) {
		float kk = k0 + (float)l;

		CLX_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), l ? &dy : &dx));
		CLX_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), l ? &dz : &dy));
		CLX_CHECK(clSetKernelArg(k, 2, sizeof(float), &kk));
		CLX_CHECK(clSetKernelArg(k, 3, sizeof(cl_uint), &nn));
		CLX_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &gsize, NULL, 0, NULL, NULL));
	}
	CLX_CHECK(clEnqueueReadBuffer(q, dz, CL_TRUE, 0, bytes, out, 0, NULL, NULL));
	for (size_t i = 0; i < n; i++)
		ok &= out[i] == 2.0f * (2.0f * x[i] + k0) + k0 + 1.0f;
	clReleaseMemObject(dx);
	clReleaseMemObject(dy);
	clReleaseMemObject(dz);
	clReleaseKernel(k);
	clReleaseProgram(prog);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	free(x);
	return ok;
}

int main(int argc, char **argv)
{
	const char *usage = "forked [N [LINGER]]  (N elements, 1 to 16777216, default 65536; "
			    "LINGER seconds, 1 to 3600)";
	size_t n = clx_arg(argc > 1 ? argv[1] : NULL, 65536, 16777216, usage);
	unsigned linger = (unsigned)clx_arg(argc > 2 ? argv[2] : NULL, 0, 3600, usage);
	float *mine = clx_alloc(n * sizeof(float)), *theirs = clx_alloc(n * sizeof(float));
	uint32_t h;
	int ok, st;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 3;
	}
	if (pid == 0) {
		ok = work(n, 1.0f, theirs);
		printf("child: %s\nchild checksum: fnv1a=%08x\n", ok ? "ok" : "FAILED",
		       clx_fnv1a(CLX_FNV_INIT, theirs, n * sizeof(float)));
		fflush(stdout);
		if (linger) {
			/* Outlive the parent without holding its output open. */
			fclose(stdout);
			fclose(stderr);
			sleep(linger);
		}
		exit(ok ? 0 : 1);
	}
	ok = work(n, 3.0f, mine);
	if (!linger && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)) {
		printf("forked: the child failed\n");
		ok = 0;
	}
	/* The child's result, recomputed, joins the checksum. */
	for (size_t i = 0; i < n; i++) {
		float x = (float)(i % 100) * 0.5f;

		theirs[i] = 2.0f * (2.0f * x + 1.0f) + 2.0f;
	}
	h = clx_fnv1a(CLX_FNV_INIT, theirs, n * sizeof(float));
	h = clx_fnv1a(h, mine, n * sizeof(float));
	printf("parent: %s\nforked: %s\nchecksum: fnv1a=%08x\n", ok ? "ok" : "FAILED",
	       ok ? "ok" : "FAILED", h);
	free(mine);
	free(theirs);
	return ok ? 0 : 1;
}
