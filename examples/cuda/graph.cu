/*
 * A CUDA graph: a stream capture of `fill` then two `axpb` launches
 * (v = a * v + b), instantiated once and launched five times.  Launches
 * inside a graph do not go through cuLaunchKernel when the graph runs
 * (the driver launches the graph as a whole), which is what this example
 * is for: docs/op.md says what kscope op sees of it.  Exact results.
 *
 *   graph [N]   N elements (default 1048576)
 */
#include "cux.h"

__global__ void fill(float *v, int n, float x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] = x + (float)(i % 3);
}

__global__ void axpb(float *v, int n, float a, float b)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] = a * v[i] + b;
}

int main(int argc, char **argv)
{
	int n = (int)cux_arg(argc, argv, 1, 1 << 20), ok = 1, blocks = (n + 255) / 256;
	size_t bytes = (size_t)n * sizeof(float);
	float *h = (float *)malloc(bytes), *acc = (float *)calloc((size_t)n, sizeof(float)), *d;
	cudaStream_t st;
	cudaGraph_t g;
	cudaGraphExec_t ge;

	cux_init("graph");
	CUX(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CUX(cudaMalloc(&d, bytes));
	CUX(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
	fill<<<blocks, 256, 0, st>>>(d, n, 1.0f);
	axpb<<<blocks, 256, 0, st>>>(d, n, 2.0f, 1.0f);
	axpb<<<blocks, 256, 0, st>>>(d, n, 0.5f, 3.0f);
	CUX(cudaStreamEndCapture(st, &g));
	CUX(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < 5; r++) {
		CUX(cudaGraphLaunch(ge, st));
		CUX(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, st));
		CUX(cudaStreamSynchronize(st));
		for (int i = 0; i < n; i++)
			acc[i] += h[i];
	}
	for (int i = 0; i < n && ok; i++) {
		float v = 1.0f + (float)(i % 3);

		ok = acc[i] == 5.0f * (0.5f * (2.0f * v + 1.0f) + 3.0f);
	}
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	cudaFree(d);
	cudaStreamDestroy(st);
	return cux_finish("graph", ok, cux_fnv(CUX_FNV0, acc, bytes));
}
