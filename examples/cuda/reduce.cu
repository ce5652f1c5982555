/*
 * A reduction with atomics: `reduce_sum` sums n 32-bit integers, each
 * block through shared memory, then one atomicAdd per block into a
 * 64-bit total; `histogram` counts values into 64 bins with atomicAdd.
 * Integers, so the result does not depend on the order the atomics land
 * in: it is exact and equal to the CPU's.  The output buffers are zeroed
 * by the program before each kernel (a replay must restore them, or the
 * program's own launch would add to the replay's total).
 *
 *   reduce [N]   N integers (default 4194304)
 */
#include "cux.h"

#define BINS 64

__global__ void reduce_sum(const int *x, int n, unsigned long long *total)
{
	__shared__ unsigned long long part[256];
	unsigned long long s = 0;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		s += (unsigned long long)x[i];
	part[threadIdx.x] = s;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (threadIdx.x < w)
			part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		atomicAdd(total, part[0]);
}

__global__ void histogram(const int *x, int n, unsigned int *bins)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		atomicAdd(&bins[x[i] % BINS], 1u);
}

int main(int argc, char **argv)
{
	int n = (int)cux_arg(argc, argv, 1, 1 << 22), ok;
	int *x = (int *)malloc((size_t)n * sizeof(int)), *dx;
	unsigned long long total = 0, ref = 0, *dtotal;
	unsigned int bins[BINS], rbins[BINS] = { 0 }, *dbins;
	uint64_t sum;

	cux_init("reduce");
	for (int i = 0; i < n; i++) {
		x[i] = (i * 2654435761u) % 1000;
		ref += (unsigned long long)x[i];
		rbins[x[i] % BINS]++;
	}
	CUX(cudaMalloc(&dx, (size_t)n * sizeof(int)));
	CUX(cudaMalloc(&dtotal, sizeof(*dtotal)));
	CUX(cudaMalloc(&dbins, sizeof(bins)));
	CUX(cudaMemcpy(dx, x, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
	CUX(cudaMemset(dtotal, 0, sizeof(*dtotal)));
	CUX(cudaMemset(dbins, 0, sizeof(bins)));
	reduce_sum<<<256, 256>>>(dx, n, dtotal);
	CUX(cudaGetLastError());
	histogram<<<256, 256>>>(dx, n, dbins);
	CUX(cudaGetLastError());
	CUX(cudaMemcpy(&total, dtotal, sizeof(total), cudaMemcpyDeviceToHost));
	CUX(cudaMemcpy(bins, dbins, sizeof(bins), cudaMemcpyDeviceToHost));
	ok = total == ref;
	for (int b = 0; b < BINS; b++)
		ok &= bins[b] == rbins[b];
	printf("reduce: total %llu\n", total);
	sum = cux_fnv(cux_fnv(CUX_FNV0, &total, sizeof(total)), bins, sizeof(bins));
	cudaFree(dx);
	cudaFree(dtotal);
	cudaFree(dbins);
	return cux_finish("reduce", ok, sum);
}
