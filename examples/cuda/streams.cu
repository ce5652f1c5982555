/*
 * Two streams: each runs its own chain (copy in, `scale` three times,
 * copy out) on half of the data, with pinned host memory and
 * cudaMemcpyAsync, so launches of the same kernel come from two streams
 * and may overlap.  Exact results (powers of two).
 *
 *   streams [N]   N elements in all (default 2097152, even)
 */
#include "cux.h"

__global__ void scale(float *v, int n, float k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] *= k;
}

int main(int argc, char **argv)
{
	int n = (int)cux_arg(argc, argv, 1, 1 << 21) & ~1, half = n / 2, ok = 1;
	size_t hb = (size_t)half * sizeof(float);
	cudaStream_t st[2];
	float *h, *d[2];

	cux_init("streams");
	CUX(cudaMallocHost(&h, 2 * hb));
	for (int i = 0; i < n; i++)
		h[i] = (float)(i % 100);
	for (int s = 0; s < 2; s++) {
		CUX(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
		CUX(cudaMalloc(&d[s], hb));
	}
	for (int s = 0; s < 2; s++) {
		CUX(cudaMemcpyAsync(d[s], h + (size_t)s * half, hb, cudaMemcpyHostToDevice, st[s]));
		for (int k = 0; k < 3; k++)
			scale<<<(half + 255) / 256, 256, 0, st[s]>>>(d[s], half, s ? 4.0f : 2.0f);
		CUX(cudaGetLastError());
		CUX(cudaMemcpyAsync(h + (size_t)s * half, d[s], hb, cudaMemcpyDeviceToHost, st[s]));
	}
	for (int s = 0; s < 2; s++)
		CUX(cudaStreamSynchronize(st[s]));
	for (int i = 0; i < n && ok; i++)
		ok = h[i] == (float)(i % 100) * (i < half ? 8.0f : 64.0f);
	uint64_t sum = cux_fnv(CUX_FNV0, h, 2 * hb);
	for (int s = 0; s < 2; s++) {
		cudaFree(d[s]);
		cudaStreamDestroy(st[s]);
	}
	cudaFreeHost(h);
	return cux_finish("streams", ok, sum);
}
