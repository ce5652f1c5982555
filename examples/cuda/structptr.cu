/*
 * A kernel whose only pointer parameters hide inside a structure passed
 * by value: `saxpy_soa(struct soa s, float k)` reads s.x and writes s.y
 * (y = k * x + y, twice).  The parameter is one 32-byte blob, so a tool
 * that looks for device pointers only among 8-byte parameters finds
 * none; kscope's classification looks at every aligned 8-byte word of
 * every parameter (docs/op.md), and `--backup all` covers what it cannot
 * see.  Exact results (multiples of 0.5, small).
 *
 *   structptr [N]   N elements (default 1048576)
 */
#include "cux.h"

struct soa {
	const float *x;
	float *y;
	int n;
	int pad;
	long long tag;           /* not a pointer: a value that must stay one */
};

__global__ void saxpy_soa(struct soa s, float k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < s.n)
		s.y[i] = k * s.x[i] + s.y[i] + (float)(s.tag & 1);
}

int main(int argc, char **argv)
{
	int n = (int)cux_arg(argc, argv, 1, 1 << 20), ok = 1;
	size_t bytes = (size_t)n * sizeof(float);
	float *x = (float *)malloc(bytes), *y = (float *)malloc(bytes), *dx, *dy;
	struct soa s;

	cux_init("structptr");
	for (int i = 0; i < n; i++) {
		x[i] = (float)(i % 17) * 0.5f;
		y[i] = (float)(i % 5);
	}
	CUX(cudaMalloc(&dx, bytes));
	CUX(cudaMalloc(&dy, bytes));
	CUX(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
	CUX(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice));
	s.x = dx;
	s.y = dy;
	s.n = n;
	s.pad = 0;
	s.tag = 2;
	for (int l = 0; l < 2; l++) {
		saxpy_soa<<<(n + 255) / 256, 256>>>(s, 2.0f);
		CUX(cudaGetLastError());
	}
	float *out = (float *)malloc(bytes);
	CUX(cudaMemcpy(out, dy, bytes, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n && ok; i++)
		ok = out[i] == y[i] + 4.0f * x[i];
	cudaFree(dx);
	cudaFree(dy);
	return cux_finish("structptr", ok, cux_fnv(CUX_FNV0, out, bytes));
}
