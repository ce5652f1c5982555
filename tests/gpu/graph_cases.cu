/*
 * CUDA graphs kscope op runs node by node, and graphs it must launch
 * whole, for tests/gpu/run.sh.  Each case checks its results exactly and
 * prints a checksum, like examples/cuda.
 *
 *   graph_cases child    a graph holding a child graph, an event record
 *                        node and an event wait node (run node by node)
 *   graph_cases alloc    a graph that allocates and frees memory itself
 *                        (cudaMallocAsync captured: launched whole)
 *   graph_cases update   an executable graph whose kernel node the
 *                        program changes after instantiation (launched
 *                        whole from then on)
 *   graph_cases reupdate an executable graph updated to another graph
 *                        with cudaGraphExecUpdate (run node by node, with
 *                        the new graph's arguments)
 */
#include <string.h>

#include "../../examples/cuda/cux.h"

#define N (1 << 16)

__global__ void add(float *v, int n, float x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] += x;
}

__global__ void twice(float *v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] *= 2.0f;
}

static int check(const float *d, float want, const char *what)
{
	static float h[N];

	CUX(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++)
		if (h[i] != want) {
			fprintf(stderr, "graph_cases %s: v[%d] = %g, not %g\n", what, i, h[i], want);
			return 0;
		}
	return 1;
}

/* A kernel node's parameters: N threads in blocks of 256. */
static cudaKernelNodeParams kparams(void *func, void **args)
{
	cudaKernelNodeParams kp;

	memset(&kp, 0, sizeof(kp));
	kp.gridDim = dim3(N / 256);
	kp.blockDim = dim3(256);
	kp.func = func;
	kp.kernelParams = args;
	return kp;
}

/* child: [add 1] -> child{[twice] -> [add 3]} -> record e; a second
 * graph: wait e -> [twice].  Per launch of both: v = 2 * (2 * (v + 1) + 3). */
static int child(float *d, uint64_t *sum)
{
	cudaGraph_t g, c, g2;
	cudaGraphExec_t ge, ge2;
	cudaGraphNode_t a, ch, rec, w, t;
	cudaKernelNodeParams kp;
	cudaEvent_t e;
	float one = 1.0f, three = 3.0f;
	int n = N;
	void *args1[] = { &d, &n, &one }, *args3[] = { &d, &n, &three }, *args2[] = { &d, &n };
	float v = 0.0f;
	int ok;

	CUX(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	CUX(cudaGraphCreate(&c, 0));
	kp = kparams((void *)twice, args2);
	CUX(cudaGraphAddKernelNode(&t, c, NULL, 0, &kp));
	kp = kparams((void *)add, args3);
	CUX(cudaGraphAddKernelNode(&a, c, &t, 1, &kp));
	CUX(cudaGraphCreate(&g, 0));
	kp = kparams((void *)add, args1);
	CUX(cudaGraphAddKernelNode(&a, g, NULL, 0, &kp));
	CUX(cudaGraphAddChildGraphNode(&ch, g, &a, 1, c));
	CUX(cudaGraphAddEventRecordNode(&rec, g, &ch, 1, e));
	CUX(cudaGraphCreate(&g2, 0));
	CUX(cudaGraphAddEventWaitNode(&w, g2, NULL, 0, e));
	kp = kparams((void *)twice, args2);
	CUX(cudaGraphAddKernelNode(&t, g2, &w, 1, &kp));
	CUX(cudaGraphInstantiate(&ge, g, 0));
	CUX(cudaGraphInstantiate(&ge2, g2, 0));
	CUX(cudaMemset(d, 0, N * sizeof(float)));
	for (int r = 0; r < 3; r++) {
		CUX(cudaGraphLaunch(ge, 0));
		CUX(cudaGraphLaunch(ge2, 0));
		v = 2.0f * (2.0f * (v + 1.0f) + 3.0f);
	}
	CUX(cudaDeviceSynchronize());
	ok = check(d, v, "child");
	*sum = cux_fnv(*sum, &v, sizeof(v));
	cudaGraphExecDestroy(ge);
	cudaGraphExecDestroy(ge2);
	cudaGraphDestroy(g);
	cudaGraphDestroy(g2);
	cudaGraphDestroy(c);
	cudaEventDestroy(e);
	return ok;
}

/* alloc: the graph allocates a scratch buffer, fills it, adds it into
 * d and frees it.  Per launch: v = v + 5. */
__global__ void fill(float *v, int n, float x)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] = x;
}

__global__ void addv(float *v, const float *w, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] += w[i];
}

static int alloc(float *d, uint64_t *sum)
{
	cudaStream_t st;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	float *tmp, v;
	int ok;

	CUX(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CUX(cudaMemset(d, 0, N * sizeof(float)));
	CUX(cudaDeviceSynchronize());
	CUX(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
	CUX(cudaMallocAsync((void **)&tmp, N * sizeof(float), st));
	fill<<<N / 256, 256, 0, st>>>(tmp, N, 5.0f);
	addv<<<N / 256, 256, 0, st>>>(d, tmp, N);
	CUX(cudaFreeAsync(tmp, st));
	CUX(cudaStreamEndCapture(st, &g));
	CUX(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < 4; r++)
		CUX(cudaGraphLaunch(ge, st));
	CUX(cudaStreamSynchronize(st));
	v = 20.0f;
	ok = check(d, v, "alloc");
	*sum = cux_fnv(*sum, &v, sizeof(v));
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	cudaStreamDestroy(st);
	return ok;
}

/* update: [add x]; launched with x = 1, then the executable graph's node
 * is set to x = 10 and launched twice more: v = 21. */
static int update(float *d, uint64_t *sum)
{
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaGraphNode_t a;
	cudaKernelNodeParams kp;
	float x = 1.0f, v;
	int n = N, ok;
	void *args[] = { &d, &n, &x };

	kp = kparams((void *)add, args);
	CUX(cudaGraphCreate(&g, 0));
	CUX(cudaGraphAddKernelNode(&a, g, NULL, 0, &kp));
	CUX(cudaGraphInstantiate(&ge, g, 0));
	CUX(cudaMemset(d, 0, N * sizeof(float)));
	CUX(cudaGraphLaunch(ge, 0));
	x = 10.0f;                        /* read when the params are set */
	CUX(cudaGraphExecKernelNodeSetParams(ge, a, &kp));
	CUX(cudaGraphLaunch(ge, 0));
	CUX(cudaGraphLaunch(ge, 0));
	CUX(cudaDeviceSynchronize());
	v = 21.0f;
	ok = check(d, v, "update");
	*sum = cux_fnv(*sum, &v, sizeof(v));
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	return ok;
}

/* reupdate: [add 1] launched, then updated to [add 7] and launched
 * twice: v = 15. */
static int reupdate(float *d, uint64_t *sum)
{
	cudaGraph_t g, g2;
	cudaGraphExec_t ge;
	cudaGraphNode_t a;
	cudaGraphExecUpdateResultInfo info;
	cudaKernelNodeParams kp;
	float x = 1.0f, v;
	int n = N, ok;
	void *args[] = { &d, &n, &x };

	kp = kparams((void *)add, args);
	CUX(cudaGraphCreate(&g, 0));
	CUX(cudaGraphAddKernelNode(&a, g, NULL, 0, &kp));
	x = 7.0f;
	CUX(cudaGraphCreate(&g2, 0));
	CUX(cudaGraphAddKernelNode(&a, g2, NULL, 0, &kp));
	CUX(cudaGraphInstantiate(&ge, g, 0));
	CUX(cudaMemset(d, 0, N * sizeof(float)));
	CUX(cudaGraphLaunch(ge, 0));
	CUX(cudaGraphExecUpdate(ge, g2, &info));
	CUX(cudaGraphLaunch(ge, 0));
	CUX(cudaGraphLaunch(ge, 0));
	CUX(cudaDeviceSynchronize());
	v = 15.0f;
	ok = check(d, v, "reupdate");
	*sum = cux_fnv(*sum, &v, sizeof(v));
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	cudaGraphDestroy(g2);
	return ok;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "child";
	uint64_t sum = CUX_FNV0;
	float *d;
	int ok;

	cux_init("graph_cases");
	CUX(cudaMalloc(&d, N * sizeof(float)));
	if (!strcmp(c, "child"))
		ok = child(d, &sum);
	else if (!strcmp(c, "alloc"))
		ok = alloc(d, &sum);
	else if (!strcmp(c, "update"))
		ok = update(d, &sum);
	else if (!strcmp(c, "reupdate"))
		ok = reupdate(d, &sum);
	else {
		fprintf(stderr, "graph_cases: unknown case '%s' (child, alloc, update, "
			"reupdate)\n", c);
		return 2;
	}
	cudaFree(d);
	return cux_finish("graph_cases", ok, sum);
}
