/*
 * Kernels inside and outside user ranges, for range replay
 * (`kscope op --replay-mode range --mstx on`).  Uses kscope's user API
 * (include/kscope/user.h), linked against libkscope-user.so, whose
 * functions do nothing, so the program runs the same without kscope.
 *
 * The sequence, on three buffers a, b, c of N ints (default 65536):
 *
 *   prep                       a = i % 100          (outside any range)
 *   range "step", twice:
 *     stage_scale              b = 2 * a
 *     stage_add                c = b + a
 *     stage_mod                a = c - b + 1        (so a grows by 1)
 *   between the two ranges:
 *     probe                    b = a                (outside any range)
 *   range "tail":
 *     finish                   c = a * a
 *
 * A replayed range must leave memory as the program's own run of it did:
 * after the two "step" ranges a[i] = i % 100 + 2.  Checks a, b and c
 * against that, prints "ranges: ok" or "ranges: FAILED" and an FNV-1a
 * checksum of the three buffers; exits 1 on a wrong result.
 *
 *   ranges [N]
 */
#include "clx.h"
#include "kscope/user.h"

static const char *const source =
	"__kernel void prep(__global int *a)\n"
	"{ size_t i = get_global_id(0); a[i] = (int)(i % 100); }\n"
	"__kernel void stage_scale(__global const int *a, __global int *b)\n"
	"{ size_t i = get_global_id(0); b[i] = 2 * a[i]; }\n"
	"__kernel void stage_add(__global const int *a, __global const int *b,\n"
	"                        __global int *c)\n"
	"{ size_t i = get_global_id(0); c[i] = b[i] + a[i]; }\n"
	"__kernel void stage_mod(__global int *a, __global const int *b,\n"
	"                        __global const int *c)\n"
	"{ size_t i = get_global_id(0); a[i] = c[i] - b[i] + 1; }\n"
	"__kernel void probe(__global const int *a, __global int *b)\n"
	"{ size_t i = get_global_id(0); b[i] = a[i]; }\n"
	"__kernel void finish(__global const int *a, __global int *c)\n"
	"{ size_t i = get_global_id(0); c[i] = a[i] * a[i]; }\n";

struct ctx {
	cl_command_queue q;
	cl_program prog;
	size_t n;
};

/* Launches kernel name on the given buffer arguments and waits for it.
 * A kernel object per launch, as some programs do. */
static void launch(const struct ctx *c, const char *name, int nargs, const cl_mem *args)
{
	cl_kernel k = clx_kernel(c->prog, name);

	for (int i = 0; i < nargs; i++)
		CLX_CHECK(clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), &args[i]));
	CLX_CHECK(clEnqueueNDRangeKernel(c->q, k, 1, NULL, &c->n, NULL, 0, NULL, NULL));
	CLX_CHECK(clFinish(c->q));
	clReleaseKernel(k);
}

int main(int argc, char **argv)
{
	const char *usage = "ranges [N]  (N elements, 1 to 16777216, default 65536)";
	struct ctx c;
	cl_device_id dev;
	cl_context ctx;
	cl_int err;
	cl_mem a, b, cc;
	int *ha, *hb, *hc;
	size_t bad = 0;
	uint32_t h;

	if (argc > 2) {
		fprintf(stderr, "usage: %s\n", usage);
		return 2;
	}
	c.n = clx_arg(argc > 1 ? argv[1] : NULL, 65536, 16777216, usage);
	dev = clx_device(NULL);
	ctx = clx_context(dev);
	c.q = clCreateCommandQueue(ctx, dev, 0, &err);
	clx_check_create("clCreateCommandQueue", err);
	c.prog = clx_build(ctx, dev, source, NULL);
	a = clx_buffer(ctx, CL_MEM_READ_WRITE, c.n * sizeof(int), NULL);
	b = clx_buffer(ctx, CL_MEM_READ_WRITE, c.n * sizeof(int), NULL);
	cc = clx_buffer(ctx, CL_MEM_READ_WRITE, c.n * sizeof(int), NULL);
	printf("ranges: n=%zu\n", c.n);
	fflush(stdout);

	launch(&c, "prep", 1, (cl_mem[]){ a });
	for (int r = 0; r < 2; r++) {
		uint64_t id = kscope_range_start("step");

		launch(&c, "stage_scale", 2, (cl_mem[]){ a, b });
		launch(&c, "stage_add", 3, (cl_mem[]){ a, b, cc });
		launch(&c, "stage_mod", 3, (cl_mem[]){ a, b, cc });
		kscope_range_end(id);
		printf("ranges: step %d done\n", r);
		fflush(stdout);
		if (r == 0)
			launch(&c, "probe", 2, (cl_mem[]){ a, b });
	}
	{
		uint64_t id = kscope_range_start("tail");

		launch(&c, "finish", 2, (cl_mem[]){ a, cc });
		kscope_range_end(id);
	}

	ha = clx_alloc(c.n * sizeof(int));
	hb = clx_alloc(c.n * sizeof(int));
	hc = clx_alloc(c.n * sizeof(int));
	CLX_CHECK(clEnqueueReadBuffer(c.q, a, CL_TRUE, 0, c.n * sizeof(int), ha, 0, NULL, NULL));
	CLX_CHECK(clEnqueueReadBuffer(c.q, b, CL_TRUE, 0, c.n * sizeof(int), hb, 0, NULL, NULL));
	CLX_CHECK(clEnqueueReadBuffer(c.q, cc, CL_TRUE, 0, c.n * sizeof(int), hc, 0, NULL, NULL));
	for (size_t i = 0; i < c.n; i++) {
		int want_a = (int)(i % 100) + 2;

		/* b and c as the last launches that wrote them left them:
		 * stage_scale of the second step (b = 2 * (a - 1)), finish. */
		if (ha[i] != want_a || hb[i] != 2 * (want_a - 1) || hc[i] != want_a * want_a)
			bad++;
	}
	h = clx_fnv1a(CLX_FNV_INIT, ha, c.n * sizeof(int));
	h = clx_fnv1a(h, hb, c.n * sizeof(int));
	h = clx_fnv1a(h, hc, c.n * sizeof(int));
	if (bad)
		printf("ranges: FAILED (%zu elements wrong)\n", bad);
	else
		printf("ranges: ok\n");
	printf("checksum: fnv1a=%08x\n", (unsigned)h);

	clReleaseMemObject(a);
	clReleaseMemObject(b);
	clReleaseMemObject(cc);
	clReleaseProgram(c.prog);
	clReleaseCommandQueue(c.q);
	clReleaseContext(ctx);
	free(ha);
	free(hb);
	free(hc);
	return bad ? 1 : 0;
}
