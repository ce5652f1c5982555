/*
 * A CUDA graph: a stream capture of a memset, `fill`, `axpb`, a
 * device-to-device copy, another `axpb` (v = a * v + b) and a host
 * function, instantiated once and launched five times.  The graph's
 * kernels do not go through cuLaunchKernel when the graph runs (the
 * driver launches the graph as a whole); kscope op runs such a graph
 * node by node when it collects one of its kernels (docs/op.md, CUDA
 * graphs), which is what this example is for.  Exact results: the
 * copy's contents, the final values and the host function's count are
 * all checked.
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

static void CUDART_CB count_run(void *arg)
{
	++*(int *)arg;
}

int main(int argc, char **argv)
{
	int n = (int)cux_arg(argc, argv, 1, 1 << 20), ok = 1, blocks = (n + 255) / 256, runs = 0;
	size_t bytes = (size_t)n * sizeof(float);
	float *h = (float *)malloc(bytes), *h2 = (float *)malloc(bytes);
	float *acc = (float *)calloc((size_t)n, sizeof(float)), *d, *d2;
	uint64_t sum = CUX_FNV0;
	cudaStream_t st;
	cudaGraph_t g;
	cudaGraphExec_t ge;

	cux_init("graph");
	CUX(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CUX(cudaMalloc(&d, bytes));
	CUX(cudaMalloc(&d2, bytes));
	CUX(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
	CUX(cudaMemsetAsync(d2, 0xff, bytes, st));
	fill<<<blocks, 256, 0, st>>>(d, n, 1.0f);
	axpb<<<blocks, 256, 0, st>>>(d, n, 2.0f, 1.0f);
	CUX(cudaMemcpyAsync(d2, d, bytes, cudaMemcpyDeviceToDevice, st));
	axpb<<<blocks, 256, 0, st>>>(d, n, 0.5f, 3.0f);
	CUX(cudaLaunchHostFunc(st, count_run, &runs));
	CUX(cudaStreamEndCapture(st, &g));
	CUX(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < 5; r++) {
		CUX(cudaGraphLaunch(ge, st));
		CUX(cudaMemcpyAsync(h, d, bytes, cudaMemcpyDeviceToHost, st));
		CUX(cudaMemcpyAsync(h2, d2, bytes, cudaMemcpyDeviceToHost, st));
		CUX(cudaStreamSynchronize(st));
		for (int i = 0; i < n; i++) {
			acc[i] += h[i];
			ok &= h2[i] == 2.0f * (1.0f + (float)(i % 3)) + 1.0f;
		}
		sum = cux_fnv(sum, h2, bytes);
	}
	for (int i = 0; i < n && ok; i++) {
		float v = 1.0f + (float)(i % 3);

		ok = acc[i] == 5.0f * (0.5f * (2.0f * v + 1.0f) + 3.0f);
	}
	if (runs != 5) {
		fprintf(stderr, "graph: the host function ran %d times, not 5\n", runs);
		ok = 0;
	}
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	cudaFree(d);
	cudaFree(d2);
	cudaStreamDestroy(st);
	return cux_finish("graph", ok, cux_fnv(sum, acc, bytes));
}
