/*
 * Single-precision matrix multiply C = A * B (A is M x K, B is K x N), in
 * two OpenCL kernels: `mm_naive`, one work-item per element of C reading
 * its row and column straight from global memory, and `mm_tiled`, which
 * stages 16 x 16 tiles of A and B in local memory (local size 16 x 16,
 * global size rounded up to a multiple of 16).  Both take the sizes as
 * scalar int arguments named M, N and K, so `kscope op --flops 2*M*N*K`
 * can compute their FLOPs.  The program runs naive, tiled, naive, tiled
 * (two rounds), each into its own result buffer, and checks both results
 * against a CPU reference.  The inputs are small integers, so every sum
 * is exact in float and the results must match bit for bit.  Prints
 * "matmul: ok" or "matmul: FAILED" and an FNV-1a checksum of both
 * results; exits 1 on a wrong result.
 *
 *   matmul [SIZE]     M = N = K = SIZE (default 256)
 *   matmul M N K
 *
 * Output is deterministic, one flushed line per launch.
 */
#include "clx.h"

#define TS 16     /* tile edge of mm_tiled: its local size is TS x TS */
#define ROUNDS 2

static const char *const source =
	"#define TS 16\n"
	"__kernel void mm_naive(__global const float *A, __global const float *B,\n"
	"                       __global float *C, const int M, const int N, const int K)\n"
	"{\n"
	"	int col = get_global_id(0), row = get_global_id(1);\n"
	"	float acc = 0.0f;\n"
	"	if (row >= M || col >= N)\n"
	"		return;\n"
	"	for (int k = 0; k < K; k++)\n"
	"		acc += A[row * K + k] * B[k * N + col];\n"
	"	C[row * N + col] = acc;\n"
	"}\n"
	"\n"
	"__kernel void mm_tiled(__global const float *A, __global const float *B,\n"
	"                       __global float *C, const int M, const int N, const int K)\n"
	"{\n"
	"	__local float As[TS][TS];\n"
	"	__local float Bs[TS][TS];\n"
	"	int col = get_global_id(0), row = get_global_id(1);\n"
	"	int lc = get_local_id(0), lr = get_local_id(1);\n"
	"	float acc = 0.0f;\n"
	"	for (int t = 0; t < K; t += TS) {\n"
	"		As[lr][lc] = (row < M && t + lc < K) ? A[row * K + t + lc] : 0.0f;\n"
	"		Bs[lr][lc] = (t + lr < K && col < N) ? B[(t + lr) * N + col] : 0.0f;\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"		for (int k = 0; k < TS; k++)\n"
	"			acc += As[lr][k] * Bs[k][lc];\n"
	"		barrier(CLK_LOCAL_MEM_FENCE);\n"
	"	}\n"
	"	if (row < M && col < N)\n"
	"		C[row * N + col] = acc;\n"
	"}\n";

static size_t round_up(size_t v, size_t m)
{
	return (v + m - 1) / m * m;
}

static void set_args(cl_kernel k, cl_mem a, cl_mem b, cl_mem c, cl_int m, cl_int n,
		     cl_int kk)
{
	CLX_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &a));
	CLX_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &b));
	CLX_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &c));
	CLX_CHECK(clSetKernelArg(k, 3, sizeof(cl_int), &m));
	CLX_CHECK(clSetKernelArg(k, 4, sizeof(cl_int), &n));
	CLX_CHECK(clSetKernelArg(k, 5, sizeof(cl_int), &kk));
}

/* How many elements of got differ from want. */
static size_t count_wrong(const float *got, const float *want, size_t n)
{
	size_t bad = 0;

	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			bad++;
	return bad;
}

int main(int argc, char **argv)
{
	const char *usage = "matmul [SIZE] | matmul M N K  (each 1 to 4096, default 256)";
	size_t m, n, k;
	float *a, *b, *ref, *out;
	cl_device_id dev;
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	cl_kernel naive, tiled;
	cl_mem da, db, dc_naive, dc_tiled;
	cl_int err;
	size_t g_naive[2], g_tiled[2], l_tiled[2] = { TS, TS };
	size_t bad_naive, bad_tiled;
	uint32_t h;

	if (argc != 1 && argc != 2 && argc != 4) {
		fprintf(stderr, "usage: %s\n", usage);
		return 2;
	}
	m = clx_arg(argc > 1 ? argv[1] : NULL, 256, 4096, usage);
	n = argc == 4 ? clx_arg(argv[2], 256, 4096, usage) : m;
	k = argc == 4 ? clx_arg(argv[3], 256, 4096, usage) : m;

	a = clx_alloc(m * k * sizeof(float));
	b = clx_alloc(k * n * sizeof(float));
	ref = clx_alloc(m * n * sizeof(float));
	out = clx_alloc(m * n * sizeof(float));
	/* Values in -2..2: every partial sum is an integer of at most 4 * K,
	 * exact in float whatever the order of the additions. */
	for (size_t i = 0; i < m * k; i++)
		a[i] = (float)((int)((i * 7) % 5) - 2);
	for (size_t i = 0; i < k * n; i++)
		b[i] = (float)((int)((i * 3) % 5) - 2);
	for (size_t r = 0; r < m; r++)
		for (size_t c = 0; c < n; c++) {
			float acc = 0.0f;

			for (size_t i = 0; i < k; i++)
				acc += a[r * k + i] * b[i * n + c];
			ref[r * n + c] = acc;
		}

	dev = clx_device(NULL);
	ctx = clx_context(dev);
	q = clCreateCommandQueue(ctx, dev, 0, &err);
	clx_check_create("clCreateCommandQueue", err);
	prog = clx_build(ctx, dev, source, NULL);
	naive = clx_kernel(prog, "mm_naive");
	tiled = clx_kernel(prog, "mm_tiled");
	da = clx_buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, m * k * sizeof(float), a);
	db = clx_buffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, k * n * sizeof(float), b);
	dc_naive = clx_buffer(ctx, CL_MEM_WRITE_ONLY, m * n * sizeof(float), NULL);
	dc_tiled = clx_buffer(ctx, CL_MEM_WRITE_ONLY, m * n * sizeof(float), NULL);
	set_args(naive, da, db, dc_naive, (cl_int)m, (cl_int)n, (cl_int)k);
	set_args(tiled, da, db, dc_tiled, (cl_int)m, (cl_int)n, (cl_int)k);
	g_naive[0] = n;
	g_naive[1] = m;
	g_tiled[0] = round_up(n, TS);
	g_tiled[1] = round_up(m, TS);
	printf("matmul: M=%zu N=%zu K=%zu\n", m, n, k);
	fflush(stdout);

	for (int r = 0; r < ROUNDS; r++) {
		CLX_CHECK(clEnqueueNDRangeKernel(q, naive, 2, NULL, g_naive, NULL, 0, NULL,
						 NULL));
		CLX_CHECK(clFinish(q));
		printf("matmul: round %d mm_naive done\n", r);
		fflush(stdout);
		CLX_CHECK(clEnqueueNDRangeKernel(q, tiled, 2, NULL, g_tiled, l_tiled, 0, NULL,
						 NULL));
		CLX_CHECK(clFinish(q));
		printf("matmul: round %d mm_tiled done\n", r);
		fflush(stdout);
	}

	CLX_CHECK(clEnqueueReadBuffer(q, dc_naive, CL_TRUE, 0, m * n * sizeof(float), out, 0,
				      NULL, NULL));
	bad_naive = count_wrong(out, ref, m * n);
	h = clx_fnv1a(CLX_FNV_INIT, out, m * n * sizeof(float));
	CLX_CHECK(clEnqueueReadBuffer(q, dc_tiled, CL_TRUE, 0, m * n * sizeof(float), out, 0,
				      NULL, NULL));
	bad_tiled = count_wrong(out, ref, m * n);
	h = clx_fnv1a(h, out, m * n * sizeof(float));
	if (bad_naive || bad_tiled)
		printf("matmul: FAILED (mm_naive: %zu, mm_tiled: %zu of %zu elements wrong)\n",
		       bad_naive, bad_tiled, m * n);
	else
		printf("matmul: ok\n");
	printf("checksum: fnv1a=%08x\n", (unsigned)h);

	clReleaseMemObject(da);
	clReleaseMemObject(db);
	clReleaseMemObject(dc_naive);
	clReleaseMemObject(dc_tiled);
	clReleaseKernel(naive);
	clReleaseKernel(tiled);
	clReleaseProgram(prog);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	free(a);
	free(b);
	free(ref);
	free(out);
	return bad_naive || bad_tiled ? 1 : 0;
}
