/*
 * Kernels inside NVTX ranges, for `kscope op --mstx on` (NVTX ranges
 * count as user ranges: docs/op.md, "range").  Uses NVTX v3 as NVIDIA's
 * programs do: the header-only nvtx3/nvToolsExt.h (from the CUDA
 * toolkit), which does nothing unless a tool injects itself through
 * NVTX_INJECTION64_PATH, so the program runs the same without kscope.
 *
 * The sequence, on three buffers a, b, c of N ints (default 65536):
 *
 *   prep                       a = i % 100          (outside any range)
 *   nvtxRangePushA "outer":
 *     nvtxRangeStartA "step" ... nvtxRangeEnd, twice:
 *       stage_scale            b = 2 * a
 *       stage_add              c = b + a
 *       stage_mod              a = c - b + 1        (so a grows by 1)
 *     nvtxDomainRangePushEx "inner" (domain "kscope.example", a
 *     registered string) ... nvtxDomainRangePop:
 *       finish                 c = a * a
 *   nvtxRangePop
 *   probe                      b = a                (outside any range)
 *
 * Launch indexes: prep 0, stage_scale 1, stage_add 2, stage_mod 3,
 * stage_scale 4, stage_add 5, stage_mod 6, finish 7, probe 8.  Ranges in
 * start order: outer, step, step, inner.  A replayed range must leave
 * memory as the program's own run of it did: at the end a[i] = i % 100 + 2,
 * b = a and c = a * a.  Checks that, prints "nvtx: ok" or "nvtx: FAILED"
 * and an FNV-1a checksum of the three buffers; exits 1 on a wrong result.
 *
 *   nvtx [N]
 */
#include "clx.h"

#include <nvtx3/nvToolsExt.h>

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
	"__kernel void finish(__global const int *a, __global int *c)\n"
	"{ size_t i = get_global_id(0); c[i] = a[i] * a[i]; }\n"
	"__kernel void probe(__global const int *a, __global int *b)\n"
	"{ size_t i = get_global_id(0); b[i] = a[i]; }\n";

struct ctx {
	cl_command_queue q;
	cl_program prog;
	size_t n;
};

/* Launches kernel name on the given buffer arguments and waits for it. */
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
	const char *usage = "nvtx [N]  (N elements, 1 to 16777216, default 65536)";
	nvtxDomainHandle_t domain;
	nvtxEventAttributes_t inner = { 0 };
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
	printf("nvtx: n=%zu\n", c.n);
	fflush(stdout);

	/* A domain and a registered string, as libraries use them. */
	domain = nvtxDomainCreateA("kscope.example");
	inner.version = NVTX_VERSION;
	inner.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	inner.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	inner.message.registered = nvtxDomainRegisterStringA(domain, "inner");

	launch(&c, "prep", 1, (cl_mem[]){ a });
	nvtxRangePushA("outer");
	for (int r = 0; r < 2; r++) {
		nvtxRangeId_t id = nvtxRangeStartA("step");

		launch(&c, "stage_scale", 2, (cl_mem[]){ a, b });
		launch(&c, "stage_add", 3, (cl_mem[]){ a, b, cc });
		launch(&c, "stage_mod", 3, (cl_mem[]){ a, b, cc });
		nvtxRangeEnd(id);
		printf("nvtx: step %d done\n", r);
		fflush(stdout);
	}
	nvtxDomainRangePushEx(domain, &inner);
	launch(&c, "finish", 2, (cl_mem[]){ a, cc });
	nvtxDomainRangePop(domain);
	nvtxRangePop();
	launch(&c, "probe", 2, (cl_mem[]){ a, b });

	ha = clx_alloc(c.n * sizeof(int));
	hb = clx_alloc(c.n * sizeof(int));
	hc = clx_alloc(c.n * sizeof(int));
	CLX_CHECK(clEnqueueReadBuffer(c.q, a, CL_TRUE, 0, c.n * sizeof(int), ha, 0, NULL, NULL));
	CLX_CHECK(clEnqueueReadBuffer(c.q, b, CL_TRUE, 0, c.n * sizeof(int), hb, 0, NULL, NULL));
	CLX_CHECK(clEnqueueReadBuffer(c.q, cc, CL_TRUE, 0, c.n * sizeof(int), hc, 0, NULL, NULL));
	for (size_t i = 0; i < c.n; i++) {
		int want_a = (int)(i % 100) + 2;

		if (ha[i] != want_a || hb[i] != want_a || hc[i] != want_a * want_a)
			bad++;
	}
	h = clx_fnv1a(CLX_FNV_INIT, ha, c.n * sizeof(int));
	h = clx_fnv1a(h, hb, c.n * sizeof(int));
	h = clx_fnv1a(h, hc, c.n * sizeof(int));
	if (bad)
		printf("nvtx: FAILED (%zu elements wrong)\n", bad);
	else
		printf("nvtx: ok\n");
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
