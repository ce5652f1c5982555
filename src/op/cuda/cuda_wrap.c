/*
 * The wrapped CUDA driver entry points of libkscope-op.so.  They are
 * named ks_cuw_<exported symbol> and reach the program only through
 * cuda_hook.c (dlsym, cuGetProcAddress), which hands them out in place of
 * the driver's.  Each forwards to the driver; around that:
 *
 *   cuInit                 its status, for the message at exit
 *   allocations and frees  the map of live allocations (cuda_objects.c)
 *   module/library unload  the kernel records are forgotten
 *   frees, unloads, stream and event destruction: the replay lock held
 *                          shared, so that nothing a replay uses goes away
 *                          under it
 *   launches               the launch filters (ks_oprt_launch_decide), and
 *                          a replay when kscope says collect
 *
 * While the runtime is off (or another backend is the process's), every
 * wrapper only forwards.
 */
#include <stdio.h>

#include "cuda_int.h"

#define R ks_cu_real

int ks_cu_init_status;
bool ks_cu_init_seen;

/* Forwards call with the replay lock held shared when the backend is on;
 * r receives its status. */
#define LOCKED(r, call)                                                        \
	do {                                                                   \
		if (ks_cu_on()) {                                              \
			ks_oprt_shared_lock();                                 \
			(r) = (call);                                          \
			ks_oprt_shared_unlock();                               \
		} else {                                                       \
			(r) = (call);                                          \
		}                                                              \
	} while (0)

/* Declarations (the definitions below are used through cuda_hook.c's
 * table only). */
#define KS_CU_DECL(sym, decl) __typeof__(decl) ks_cuw_##sym;
KS_CU_WRAPPED(KS_CU_DECL)
#undef KS_CU_DECL
CUresult ks_cuw_cuGetProcAddress(const char *symbol, void **pfn, int version,
				 cuuint64_t flags);

/* ------------------------------------------------------------------ */
/* Initialization and lookups                                          */
/* ------------------------------------------------------------------ */

CUresult ks_cuw_cuInit(unsigned int flags)
{
	CUresult r = R.cuInit(flags);

	if (!__atomic_exchange_n(&ks_cu_init_seen, true, __ATOMIC_ACQ_REL))
		ks_cu_init_status = (int)r;
	if (r == CUDA_SUCCESS)
		(void)ks_cu_on();         /* CUDA becomes the process's backend */
	return r;
}

CUresult ks_cuw_cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
				    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	CUresult r = R.cuGetProcAddress_v2(symbol, pfn, version, flags, status);

	if (r == CUDA_SUCCESS && pfn)
		*pfn = ks_cu_substitute(NULL, *pfn);
	return r;
}

CUresult ks_cuw_cuGetProcAddress(const char *symbol, void **pfn, int version,
				 cuuint64_t flags)
{
	CUresult r = R.getproc_v1(symbol, pfn, version, flags);

	if (r == CUDA_SUCCESS && pfn)
		*pfn = ks_cu_substitute(NULL, *pfn);
	return r;
}

/* ------------------------------------------------------------------ */
/* Allocations                                                         */
/* ------------------------------------------------------------------ */

static void noted(CUresult r, const CUdeviceptr *p, uint64_t size, enum ks_cu_alloc_kind kind)
{
	if (r == CUDA_SUCCESS && p && size && ks_cu_on())
		ks_cu_alloc_note(*p, size, kind);
}

static CUresult freed(CUresult r, CUdeviceptr p)
{
	if (r == CUDA_SUCCESS && p && ks_cu_on())
		ks_cu_alloc_forget(p);
	return r;
}

CUresult ks_cuw_cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
	CUresult r = R.cuMemAlloc_v2(dptr, size);

	noted(r, dptr, size, KS_CU_ALLOC_DEVICE);
	return r;
}

CUresult ks_cuw_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
				   size_t height, unsigned int elem)
{
	CUresult r = R.cuMemAllocPitch_v2(dptr, pitch, width, height, elem);

	if (r == CUDA_SUCCESS && pitch)
		noted(r, dptr, (uint64_t)*pitch * height, KS_CU_ALLOC_DEVICE);
	return r;
}

CUresult ks_cuw_cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
	CUresult r = R.cuMemAllocManaged(dptr, size, flags);

	noted(r, dptr, size, KS_CU_ALLOC_MANAGED);
	return r;
}

CUresult ks_cuw_cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
	CUresult r = R.cuMemAllocAsync(dptr, size, s);

	noted(r, dptr, size, KS_CU_ALLOC_ASYNC);
	return r;
}

CUresult ks_cuw_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s)
{
	CUresult r = R.cuMemAllocAsync_ptsz(dptr, size, s);

	noted(r, dptr, size, KS_CU_ALLOC_ASYNC);
	return r;
}

CUresult ks_cuw_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
					CUstream s)
{
	CUresult r = R.cuMemAllocFromPoolAsync(dptr, size, pool, s);

	noted(r, dptr, size, KS_CU_ALLOC_ASYNC);
	return r;
}

CUresult ks_cuw_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size,
					     CUmemoryPool pool, CUstream s)
{
	CUresult r = R.cuMemAllocFromPoolAsync_ptsz(dptr, size, pool, s);

	noted(r, dptr, size, KS_CU_ALLOC_ASYNC);
	return r;
}

CUresult ks_cuw_cuMemFree_v2(CUdeviceptr p)
{
	CUresult r;

	LOCKED(r, R.cuMemFree_v2(p));
	return freed(r, p);
}

CUresult ks_cuw_cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	CUresult r;

	LOCKED(r, R.cuMemFreeAsync(p, s));
	return freed(r, p);
}

CUresult ks_cuw_cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
	CUresult r;

	LOCKED(r, R.cuMemFreeAsync_ptsz(p, s));
	return freed(r, p);
}

/* ------------------------------------------------------------------ */
/* Modules and libraries                                               */
/* ------------------------------------------------------------------ */

CUresult ks_cuw_cuModuleLoad(CUmodule *m, const char *fname)
{
	return R.cuModuleLoad(m, fname);
}

CUresult ks_cuw_cuModuleLoadData(CUmodule *m, const void *image)
{
	return R.cuModuleLoadData(m, image);
}

CUresult ks_cuw_cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n,
				   CUjit_option *options, void **values)
{
	return R.cuModuleLoadDataEx(m, image, n, options, values);
}

CUresult ks_cuw_cuModuleLoadFatBinary(CUmodule *m, const void *fatbin)
{
	return R.cuModuleLoadFatBinary(m, fatbin);
}

CUresult ks_cuw_cuModuleUnload(CUmodule m)
{
	CUresult r;

	LOCKED(r, R.cuModuleUnload(m));
	if (r == CUDA_SUCCESS && ks_cu_on())
		ks_cu_funcs_forget();
	return r;
}

CUresult ks_cuw_cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo,
				  void **jv, unsigned int njo, CUlibraryOption *lo, void **lv,
				  unsigned int nlo)
{
	return R.cuLibraryLoadData(lib, code, jo, jv, njo, lo, lv, nlo);
}

CUresult ks_cuw_cuLibraryLoadFromFile(CUlibrary *lib, const char *file, CUjit_option *jo,
				      void **jv, unsigned int njo, CUlibraryOption *lo,
				      void **lv, unsigned int nlo)
{
	return R.cuLibraryLoadFromFile(lib, file, jo, jv, njo, lo, lv, nlo);
}

CUresult ks_cuw_cuLibraryUnload(CUlibrary lib)
{
	CUresult r;

	LOCKED(r, R.cuLibraryUnload(lib));
	if (r == CUDA_SUCCESS && ks_cu_on())
		ks_cu_funcs_forget();
	return r;
}

/* ------------------------------------------------------------------ */
/* Streams and events                                                  */
/* ------------------------------------------------------------------ */

CUresult ks_cuw_cuStreamCreate(CUstream *s, unsigned int flags)
{
	return R.cuStreamCreate(s, flags);
}

CUresult ks_cuw_cuStreamCreateWithPriority(CUstream *s, unsigned int flags, int prio)
{
	return R.cuStreamCreateWithPriority(s, flags, prio);
}

CUresult ks_cuw_cuStreamDestroy_v2(CUstream s)
{
	CUresult r;

	LOCKED(r, R.cuStreamDestroy_v2(s));
	return r;
}

CUresult ks_cuw_cuEventCreate(CUevent *e, unsigned int flags)
{
	return R.cuEventCreate(e, flags);
}

CUresult ks_cuw_cuEventDestroy_v2(CUevent e)
{
	CUresult r;

	LOCKED(r, R.cuEventDestroy_v2(e));
	return r;
}

/* ------------------------------------------------------------------ */
/* Launches                                                            */
/* ------------------------------------------------------------------ */

CUresult ks_cu_forward(const struct ks_cu_launch *l)
{
	switch (l->kind) {
	case KS_CU_LAUNCH_EX:
		return (l->ptsz ? R.cuLaunchKernelEx_ptsz : R.cuLaunchKernelEx)(l->config, l->f,
										 l->params, l->extra);
	case KS_CU_LAUNCH_COOP:
		return (l->ptsz ? R.cuLaunchCooperativeKernel_ptsz : R.cuLaunchCooperativeKernel)(
			l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
			l->block[2], l->shmem, l->stream, l->params);
	case KS_CU_LAUNCH:
		break;
	}
	return (l->ptsz ? R.cuLaunchKernel_ptsz : R.cuLaunchKernel)(
		l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
		l->shmem, l->stream, l->params, l->extra);
}

/* `cuda platform=... device=... driver=...` once, from the first launch
 * (the context exists by then). */
void ks_cu_announce(void)
{
	static atomic_bool done;
	char dev[256] = "unknown device", drv[32] = "unknown";
	CUdevice d;
	int v = 0;

	if (atomic_load_explicit(&done, memory_order_relaxed) || atomic_exchange(&done, true))
		return;
	if (R.cuCtxGetDevice(&d) != CUDA_SUCCESS ||
	    R.cuDeviceGetName(dev, (int)sizeof(dev), d) != CUDA_SUCCESS)
		snprintf(dev, sizeof(dev), "unknown device");
	if (R.cuDriverGetVersion(&v) == CUDA_SUCCESS)
		snprintf(drv, sizeof(drv), "%d.%d", v / 1000, v % 1000 / 10);
	ks_oprt_runtime_used("NVIDIA CUDA", dev, drv);
}

/* The record of handle, through a per-thread one-entry cache (the common
 * case: a loop launching one kernel) invalidated when records are
 * forgotten. */
struct ks_cu_func *ks_cu_func_of(CUfunction f)
{
	static KS_OPRT_TLS void *last_handle;
	static KS_OPRT_TLS struct ks_cu_func *last;
	static KS_OPRT_TLS unsigned last_gen;
	unsigned gen = atomic_load_explicit(&ks_cu_funcs_gen, memory_order_acquire);

	if (last && last_handle == (void *)f && last_gen == gen)
		return last;
	last = ks_cu_func_get((void *)f);
	last_handle = (void *)f;
	last_gen = gen;
	return last;
}

/* Whether work put into stream s is being captured into a graph: a
 * launch then runs nothing (the graph runs it later), and the context
 * must not be synchronized (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and
 * the capture is invalidated). */
static bool stream_capturing(CUstream s, bool ptsz)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	__typeof__(cuStreamIsCapturing) *is = ptsz ? R.cuStreamIsCapturing_ptsz
						  : R.cuStreamIsCapturing;

	if (!is || is(s, &st) != CUDA_SUCCESS)
		return false;
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static bool capturing(const struct ks_cu_launch *cl)
{
	return stream_capturing(cl->stream, cl->ptsz);
}

static CUresult launch(struct ks_cu_launch *cl)
{
	struct ks_oprt_launch l;          /* not zeroed: this is the hot path */
	struct ks_oprt_decision d;
	CUresult r;

	if (!ks_cu_on())
		return ks_cu_forward(cl);
	if (!ks_oprt_shared_lock()) {
		/* Called back from inside the driver: only forward. */
		r = ks_cu_forward(cl);
		ks_oprt_shared_unlock();
		return r;
	}
	cl->func = ks_cu_func_of(cl->f);
	if (cl->func)
		ks_cu_announce();
	if (!cl->func || capturing(cl)) {
		r = ks_cu_forward(cl);
		ks_oprt_shared_unlock();
		return r;
	}
	l.be = cl;
	l.name = cl->func->name;
	l.dim = cl->grid[2] * cl->block[2] > 1 ? 3 : cl->grid[1] * cl->block[1] > 1 ? 2 : 1;
	for (unsigned i = 0; i < 3; i++)
		l.gsize[i] = (uint64_t)cl->grid[i] * cl->block[i];
	if (ks_oprt_launch_decide(&l, &d) == KS_OPRT_PASS) {
		r = ks_cu_forward(cl);
		ks_oprt_shared_unlock();
		return r;
	}
	ks_oprt_shared_unlock();
	return (CUresult)ks_oprt_launch_handle(&l, &d);
}

static CUresult launch_plain(bool ptsz, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			     unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
			     void **params, void **extra)
{
	struct ks_cu_launch cl = {
		.kind = KS_CU_LAUNCH, .ptsz = ptsz, .f = f, .grid = { gx, gy, gz },
		.block = { bx, by, bz }, .shmem = shmem, .stream = s, .params = params,
		.extra = extra,
	};

	return launch(&cl);
}

CUresult ks_cuw_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			       unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
			       void **params, void **extra)
{
	return launch_plain(false, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

CUresult ks_cuw_cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				    unsigned bx, unsigned by, unsigned bz, unsigned shmem,
				    CUstream s, void **params, void **extra)
{
	return launch_plain(true, f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

static CUresult launch_ex(bool ptsz, const CUlaunchConfig *c, CUfunction f, void **params,
			  void **extra)
{
	struct ks_cu_launch cl = {
		.kind = KS_CU_LAUNCH_EX, .ptsz = ptsz, .f = f, .params = params,
		.extra = extra, .config = c,
	};

	if (!c)                           /* the driver's error to report */
		return (ptsz ? R.cuLaunchKernelEx_ptsz : R.cuLaunchKernelEx)(c, f, params, extra);
	cl.grid[0] = c->gridDimX;
	cl.grid[1] = c->gridDimY;
	cl.grid[2] = c->gridDimZ;
	cl.block[0] = c->blockDimX;
	cl.block[1] = c->blockDimY;
	cl.block[2] = c->blockDimZ;
	cl.shmem = c->sharedMemBytes;
	cl.stream = c->hStream;
	return launch(&cl);
}

CUresult ks_cuw_cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
				 void **extra)
{
	return launch_ex(false, c, f, params, extra);
}

CUresult ks_cuw_cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
				      void **extra)
{
	return launch_ex(true, c, f, params, extra);
}

static CUresult launch_coop(bool ptsz, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
			    unsigned bx, unsigned by, unsigned bz, unsigned shmem, CUstream s,
			    void **params)
{
	struct ks_cu_launch cl = {
		.kind = KS_CU_LAUNCH_COOP, .ptsz = ptsz, .f = f, .grid = { gx, gy, gz },
		.block = { bx, by, bz }, .shmem = shmem, .stream = s, .params = params,
	};

	return launch(&cl);
}

CUresult ks_cuw_cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
					  unsigned bx, unsigned by, unsigned bz, unsigned shmem,
					  CUstream s, void **params)
{
	return launch_coop(false, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

CUresult ks_cuw_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
					       unsigned gz, unsigned bx, unsigned by, unsigned bz,
					       unsigned shmem, CUstream s, void **params)
{
	return launch_coop(true, f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

/* Graphs (cuda_graph.c): kscope keeps a copy of each graph instantiated,
 * and learns when the executable graph changes or goes. */
CUresult ks_cuw_cuGraphLaunch(CUgraphExec g, CUstream s)
{
	if (!ks_cu_on())
		return R.cuGraphLaunch(g, s);
	return ks_cu_graph_launch(g, s, false, stream_capturing(s, false));
}

CUresult ks_cuw_cuGraphLaunch_ptsz(CUgraphExec g, CUstream s)
{
	if (!ks_cu_on())
		return R.cuGraphLaunch_ptsz(g, s);
	return ks_cu_graph_launch(g, s, true, stream_capturing(s, true));
}

/* What an instantiation returned, after kscope copied the graph. */
static CUresult instantiated(CUresult r, const CUgraphExec *e, CUgraph g)
{
	if (r == CUDA_SUCCESS && e && ks_cu_on())
		ks_cu_graph_instantiated(*e, g);
	return r;
}

CUresult ks_cuw_cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
	return instantiated(R.cuGraphInstantiateWithFlags(e, g, flags), e, g);
}

CUresult ks_cuw_cuGraphInstantiateWithParams(CUgraphExec *e, CUgraph g,
					     CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return instantiated(R.cuGraphInstantiateWithParams(e, g, p), e, g);
}

CUresult ks_cuw_cuGraphInstantiateWithParams_ptsz(CUgraphExec *e, CUgraph g,
						  CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
	return instantiated(R.cuGraphInstantiateWithParams_ptsz(e, g, p), e, g);
}

CUresult ks_cuw_cuGraphExecDestroy(CUgraphExec e)
{
	ks_cu_graph_destroyed(e);
	return R.cuGraphExecDestroy(e);
}

/* Changes to an executable graph: kscope's copy no longer matches it. */
#define CHANGED(e, call)                                                       \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ == CUDA_SUCCESS)                                        \
			ks_cu_graph_changed(e);                                \
		return r_;                                                     \
	} while (0)

/* An update that succeeded makes the executable graph a snapshot of g:
 * kscope copies g anew. */
CUresult ks_cuw_cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *i)
{
	CUresult r = R.cuGraphExecUpdate_v2(e, g, i);

	if (r == CUDA_SUCCESS && ks_cu_on())
		ks_cu_graph_instantiated(e, g);
	else if (r == CUDA_SUCCESS)
		ks_cu_graph_changed(e);
	return r;
}

CUresult ks_cuw_cuGraphExecKernelNodeSetParams_v2(CUgraphExec e, CUgraphNode n,
						  const CUDA_KERNEL_NODE_PARAMS *p)
{
	CHANGED(e, R.cuGraphExecKernelNodeSetParams_v2(e, n, p));
}

CUresult ks_cuw_cuGraphExecNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraphNodeParams *p)
{
	CHANGED(e, R.cuGraphExecNodeSetParams(e, n, p));
}

CUresult ks_cuw_cuGraphExecMemcpyNodeSetParams(CUgraphExec e, CUgraphNode n,
					       const CUDA_MEMCPY3D *p, CUcontext c)
{
	CHANGED(e, R.cuGraphExecMemcpyNodeSetParams(e, n, p, c));
}

CUresult ks_cuw_cuGraphExecMemsetNodeSetParams(CUgraphExec e, CUgraphNode n,
					       const CUDA_MEMSET_NODE_PARAMS *p, CUcontext c)
{
	CHANGED(e, R.cuGraphExecMemsetNodeSetParams(e, n, p, c));
}

CUresult ks_cuw_cuGraphExecHostNodeSetParams(CUgraphExec e, CUgraphNode n,
					     const CUDA_HOST_NODE_PARAMS *p)
{
	CHANGED(e, R.cuGraphExecHostNodeSetParams(e, n, p));
}

CUresult ks_cuw_cuGraphExecChildGraphNodeSetParams(CUgraphExec e, CUgraphNode n, CUgraph g)
{
	CHANGED(e, R.cuGraphExecChildGraphNodeSetParams(e, n, g));
}

CUresult ks_cuw_cuGraphExecEventRecordNodeSetEvent(CUgraphExec e, CUgraphNode n, CUevent ev)
{
	CHANGED(e, R.cuGraphExecEventRecordNodeSetEvent(e, n, ev));
}

CUresult ks_cuw_cuGraphExecEventWaitNodeSetEvent(CUgraphExec e, CUgraphNode n, CUevent ev)
{
	CHANGED(e, R.cuGraphExecEventWaitNodeSetEvent(e, n, ev));
}

CUresult ks_cuw_cuGraphNodeSetEnabled(CUgraphExec e, CUgraphNode n, unsigned enabled)
{
	CHANGED(e, R.cuGraphNodeSetEnabled(e, n, enabled));
}
