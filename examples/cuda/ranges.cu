/*
 * NVTX ranges around kernel launches, for kscope op's range replay
 * (--mstx on --replay-mode range): `fill` outside any range, then three
 * rounds of a range "step" holding two launches of `axpy`
 * (y = a * x + y), pushed and popped with NVTX v3 (header-only, from the
 * CUDA toolkit).  Exact results: small integers in floats.
 *
 *   ranges [N]   N elements (default 1048576)
 */
#include <nvtx3/nvToolsExt.h>

#include "cux.h"

__global__ void fill(float *v, int n, float x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] = x;
}

__global__ void axpy(float *y, const float *x, int n, float a)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] += a * x[i];
}

int main(int argc, char **argv)
{
	int n = (int)cux_arg(argc, argv, 1, 1 << 20), ok = 1, blocks = (n + 255) / 256;
	size_t bytes = (size_t)n * sizeof(float);
	float *x, *y, *h;

	cux_init("ranges");
	h = (float *)malloc(bytes);
	CUX(cudaMalloc(&x, bytes));
	CUX(cudaMalloc(&y, bytes));
	fill<<<blocks, 256>>>(x, n, 1.0f);
	fill<<<blocks, 256>>>(y, n, 0.0f);
	CUX(cudaGetLastError());
	for (int r = 0; r < 3; r++) {
		nvtxRangePushA("step");
		axpy<<<blocks, 256>>>(y, x, n, 2.0f);
		axpy<<<blocks, 256>>>(y, x, n, 3.0f);
		CUX(cudaGetLastError());
		CUX(cudaDeviceSynchronize());
		nvtxRangePop();
	}
	CUX(cudaMemcpy(h, y, bytes, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n && ok; i++)
		ok = h[i] == 15.0f;
	uint64_t sum = cux_fnv(CUX_FNV0, h, bytes);
	cudaFree(x);
	cudaFree(y);
	free(h);
	return cux_finish("ranges", ok, sum);
}
