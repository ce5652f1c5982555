/*
 * Vector add, the smallest CUDA program kscope op has to handle: kernel
 * `vadd` (c = a + b over n floats) launched four times, each launch
 * adding b once more to the previous result.  Exact on the CPU too (the
 * values are multiples of 0.25 far below float's mantissa).
 *
 *   vadd [N]     N elements (default 1048576)
 */
#include "cux.h"

__global__ void vadd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

int main(int argc, char **argv)
{
	int n = (int)cux_arg(argc, argv, 1, 1 << 20), ok = 1;
	size_t bytes = (size_t)n * sizeof(float);
	float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
	float *da, *db, *dc[2];

	cux_init("vadd");
	for (int i = 0; i < n; i++) {
		a[i] = (float)(i % 1000) * 0.25f;
		b[i] = (float)(i % 7) * 0.5f;
	}
	CUX(cudaMalloc(&da, bytes));
	CUX(cudaMalloc(&db, bytes));
	CUX(cudaMalloc(&dc[0], bytes));
	CUX(cudaMalloc(&dc[1], bytes));
	CUX(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
	CUX(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
	for (int l = 0; l < 4; l++) {
		vadd<<<(n + 255) / 256, 256>>>(l ? dc[(l + 1) % 2] : da, db, dc[l % 2], n);
		CUX(cudaGetLastError());
	}
	CUX(cudaMemcpy(c, dc[1], bytes, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n && ok; i++)
		ok = c[i] == a[i] + 4 * b[i];
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc[0]);
	cudaFree(dc[1]);
	return cux_finish("vadd", ok, cux_fnv(CUX_FNV0, c, bytes));
}
