/*
 * Matrix multiply C = A * B (n x n floats), twice: `mm_naive` (one
 * thread per element, straight from global memory) and `mm_tiled<16>`
 * (a template: TILE x TILE tiles through shared memory, so its name is
 * mangled with a template argument).  Both results are checked against a
 * CPU product (within 1e-3 relative: the GPU's FMAs round differently);
 * the checksum covers both GPU results bit for bit.
 *
 *   matmul [N]   N x N matrices (default 512; any N)
 */
#include <math.h>

#include "cux.h"

__global__ void mm_naive(const float *a, const float *b, float *c, int n)
{
	int row = blockIdx.y * blockDim.y + threadIdx.y;
	int col = blockIdx.x * blockDim.x + threadIdx.x;
	float s = 0;

	if (row >= n || col >= n)
		return;
	for (int k = 0; k < n; k++)
		s += a[row * n + k] * b[k * n + col];
	c[row * n + col] = s;
}

template <int TILE>
__global__ void mm_tiled(const float *a, const float *b, float *c, int n)
{
	__shared__ float ta[TILE][TILE], tb[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y;
	int col = blockIdx.x * TILE + threadIdx.x;
	float s = 0;

	for (int t = 0; t < n; t += TILE) {
		ta[threadIdx.y][threadIdx.x] =
			row < n && t + threadIdx.x < n ? a[row * n + t + threadIdx.x] : 0;
		tb[threadIdx.y][threadIdx.x] =
			col < n && t + threadIdx.y < n ? b[(t + threadIdx.y) * n + col] : 0;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			s += ta[threadIdx.y][k] * tb[k][threadIdx.x];
		__syncthreads();
	}
	if (row < n && col < n)
		c[row * n + col] = s;
}

static int check(const float *got, const float *ref, int n)
{
	for (int i = 0; i < n * n; i++)
		if (fabsf(got[i] - ref[i]) > 1e-3f * fmaxf(1.0f, fabsf(ref[i])))
			return 0;
	return 1;
}

int main(int argc, char **argv)
{
	int n = (int)cux_arg(argc, argv, 1, 512);
	size_t bytes = (size_t)n * n * sizeof(float);
	float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes);
	float *ref = (float *)calloc((size_t)n * n, sizeof(float));
	float *c1 = (float *)malloc(bytes), *c2 = (float *)malloc(bytes);
	float *da, *db, *dc;
	dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
	uint64_t sum;
	int ok;

	cux_init("matmul");
	for (int i = 0; i < n * n; i++) {
		a[i] = (float)((i * 7) % 11) / 8.0f - 0.5f;
		b[i] = (float)((i * 5) % 13) / 8.0f - 0.75f;
	}
	for (int i = 0; i < n; i++)
		for (int k = 0; k < n; k++)
			for (int j = 0; j < n; j++)
				ref[i * n + j] += a[i * n + k] * b[k * n + j];
	CUX(cudaMalloc(&da, bytes));
	CUX(cudaMalloc(&db, bytes));
	CUX(cudaMalloc(&dc, bytes));
	CUX(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
	CUX(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
	mm_naive<<<grid, block>>>(da, db, dc, n);
	CUX(cudaGetLastError());
	CUX(cudaMemcpy(c1, dc, bytes, cudaMemcpyDeviceToHost));
	CUX(cudaMemset(dc, 0, bytes));
	mm_tiled<16><<<grid, block>>>(da, db, dc, n);
	CUX(cudaGetLastError());
	CUX(cudaMemcpy(c2, dc, bytes, cudaMemcpyDeviceToHost));
	ok = check(c1, ref, n) && check(c2, ref, n);
	printf("matmul: naive %s, tiled %s\n", check(c1, ref, n) ? "ok" : "wrong",
	       check(c2, ref, n) ? "ok" : "wrong");
	sum = cux_fnv(cux_fnv(CUX_FNV0, c1, bytes), c2, bytes);
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	return cux_finish("matmul", ok, sum);
}
