/*
 * Private header of kscope op's CUDA backend (the driver-API wrappers of
 * libkscope-op.so and the operations of struct ks_oprt_backend).
 *
 * How the parts fit together:
 *   cuda_real.c     the real driver: dlopen("libcuda.so.1") on first use
 *                   (the library never links libcuda, so it loads on a
 *                   machine without a driver), the real entry points
 *   cuda_hook.c     how programs reach the wrappers: dlsym (static and
 *                   dynamic cudart, Triton, ... dlopen libcuda and look
 *                   up cuGetProcAddress_v2) and cuGetProcAddress (which
 *                   hands out every other entry point)
 *   cuda_wrap.c     the wrapped entry points: allocations, modules and
 *                   libraries, streams, events, launches
 *   cuda_objects.c  the records: allocations (cuda_allocs.c's map),
 *                   kernel names and parameter layouts
 *   cuda_graph.c    CUDA graphs: kscope's copy of each graph, and graph
 *                   launches run node by node when a kernel in them is
 *                   collected (cuda_gorder.c orders the nodes)
 *   cuda_replay.c   the operations of the backend table (capture,
 *                   backups, the flush, timing with events after a hold
 *                   kernel), kscope's own kernels in cuda_ptx.h
 *   cuda_cupti.c    hardware counters of a replay (CUPTI range profiler)
 *   cuda_nvml.c     the GPU's clocks and driver version (NVML)
 *   cuda_backend.c  the operations table, and what to say at exit when
 *                   the program is a CUDA program that CUDA never reached
 *   cuda_logic.h    what needs no driver: names, the allocation map,
 *                   parameter classification, ELF sections (unit-tested)
 */
#ifndef KS_CUDA_INT_H
#define KS_CUDA_INT_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_logic.h"
#include "oprt.h"

/* ------------------------------------------------------------------ */
/* The real driver (cuda_real.c)                                       */
/* ------------------------------------------------------------------ */

/* cuGetProcAddress before CUDA 12 (no status argument): still exported. */
typedef CUresult (*ks_cu_getproc_v1_fn)(const char *symbol, void **pfn, int version,
					cuuint64_t flags);

/* The wrapped entry points: X(exported symbol, the declaration whose type
 * it has).  Per-thread-default-stream variants (_ptsz) have the type of
 * the plain ones. */
#define KS_CU_WRAPPED(X) \
	X(cuInit, cuInit) \
	X(cuGetProcAddress_v2, cuGetProcAddress_v2) \
	X(cuMemAlloc_v2, cuMemAlloc_v2) \
	X(cuMemAllocPitch_v2, cuMemAllocPitch_v2) \
	X(cuMemAllocManaged, cuMemAllocManaged) \
	X(cuMemFree_v2, cuMemFree_v2) \
	X(cuMemAllocAsync, cuMemAllocAsync) \
	X(cuMemAllocAsync_ptsz, cuMemAllocAsync) \
	X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync) \
	X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync) \
	X(cuMemFreeAsync, cuMemFreeAsync) \
	X(cuMemFreeAsync_ptsz, cuMemFreeAsync) \
	X(cuModuleLoad, cuModuleLoad) \
	X(cuModuleLoadData, cuModuleLoadData) \
	X(cuModuleLoadDataEx, cuModuleLoadDataEx) \
	X(cuModuleLoadFatBinary, cuModuleLoadFatBinary) \
	X(cuModuleUnload, cuModuleUnload) \
	X(cuLibraryLoadData, cuLibraryLoadData) \
	X(cuLibraryLoadFromFile, cuLibraryLoadFromFile) \
	X(cuLibraryUnload, cuLibraryUnload) \
	X(cuStreamCreate, cuStreamCreate) \
	X(cuStreamCreateWithPriority, cuStreamCreateWithPriority) \
	X(cuStreamDestroy_v2, cuStreamDestroy_v2) \
	X(cuEventCreate, cuEventCreate) \
	X(cuEventDestroy_v2, cuEventDestroy_v2) \
	X(cuLaunchKernel, cuLaunchKernel) \
	X(cuLaunchKernel_ptsz, cuLaunchKernel) \
	X(cuLaunchKernelEx, cuLaunchKernelEx) \
	X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx) \
	X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel) \
	X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel) \
	X(cuGraphLaunch, cuGraphLaunch) \
	X(cuGraphLaunch_ptsz, cuGraphLaunch) \
	X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags) \
	X(cuGraphInstantiateWithParams, cuGraphInstantiateWithParams) \
	X(cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams) \
	X(cuGraphExecDestroy, cuGraphExecDestroy) \
	X(cuGraphExecUpdate_v2, cuGraphExecUpdate_v2) \
	X(cuGraphExecKernelNodeSetParams_v2, cuGraphExecKernelNodeSetParams_v2) \
	X(cuGraphExecNodeSetParams, cuGraphExecNodeSetParams) \
	X(cuGraphExecMemcpyNodeSetParams, cuGraphExecMemcpyNodeSetParams) \
	X(cuGraphExecMemsetNodeSetParams, cuGraphExecMemsetNodeSetParams) \
	X(cuGraphExecHostNodeSetParams, cuGraphExecHostNodeSetParams) \
	X(cuGraphExecChildGraphNodeSetParams, cuGraphExecChildGraphNodeSetParams) \
	X(cuGraphExecEventRecordNodeSetEvent, cuGraphExecEventRecordNodeSetEvent) \
	X(cuGraphExecEventWaitNodeSetEvent, cuGraphExecEventWaitNodeSetEvent) \
	X(cuGraphNodeSetEnabled, cuGraphNodeSetEnabled)

/* Entry points the backend calls itself, not wrapped.  The ones marked
 * optional in cuda_real.c may be missing from an older driver. */
#define KS_CU_CALLED(X) \
	X(cuGetErrorName) X(cuDriverGetVersion) X(cuCtxGetDevice) X(cuDeviceGetName) \
	X(cuDeviceGetAttribute) X(cuCtxSynchronize) X(cuStreamSynchronize) \
	X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) \
	X(cuMemcpyDtoD_v2) X(cuMemcpyDtoH_v2) X(cuMemsetD8_v2) \
	X(cuMemGetAddressRange_v2) X(cuFuncGetName) X(cuFuncGetParamInfo) \
	X(cuKernelGetName) X(cuKernelGetParamInfo) X(cuCtxGetCurrent) X(cuDeviceTotalMem_v2) \
	X(cuDeviceGetPCIBusId) X(cuModuleGetFunction) X(cuStreamIsCapturing) \
	X(cuGraphClone) X(cuGraphDestroy) X(cuGraphGetNodes) X(cuGraphGetEdges_v2) \
	X(cuGraphNodeGetType) X(cuGraphKernelNodeGetParams_v2) X(cuGraphKernelNodeGetAttribute) \
	X(cuGraphMemcpyNodeGetParams) X(cuGraphMemsetNodeGetParams) X(cuGraphHostNodeGetParams) \
	X(cuGraphChildGraphNodeGetGraph) X(cuGraphEventRecordNodeGetEvent) \
	X(cuGraphEventWaitNodeGetEvent) X(cuMemcpy3DAsync_v2) X(cuMemsetD8Async) \
	X(cuMemsetD16Async) X(cuMemsetD32Async) X(cuMemsetD2D8Async) X(cuMemsetD2D16Async) \
	X(cuMemsetD2D32Async) X(cuLaunchHostFunc) X(cuStreamWaitEvent)

struct ks_cu_real {
#define KS_CU_PTR_W(sym, decl) __typeof__(decl) *sym;
#define KS_CU_PTR_C(sym) __typeof__(sym) *sym;
	KS_CU_WRAPPED(KS_CU_PTR_W)
	KS_CU_CALLED(KS_CU_PTR_C)
#undef KS_CU_PTR_W
#undef KS_CU_PTR_C
	ks_cu_getproc_v1_fn getproc_v1;     /* cuGetProcAddress (a macro for _v2) */
	__typeof__(cuStreamIsCapturing) *cuStreamIsCapturing_ptsz;
};

extern struct ks_cu_real ks_cu_real;

/* Loads libcuda.so.1 and finds the real entry points, once
 * (thread-safe).  Whether the driver is usable by the backend; when not,
 * ks_cu_driver_why() says why ("no libcuda.so.1: ..."). */
bool ks_cu_resolve(void);
const char *ks_cu_driver_why(void);
/* The driver's handle (NULL before ks_cu_resolve() or without driver). */
void *ks_cu_driver_handle(void);
/* glibc's dlsym (cuda_hook.c): lookups that must not come back to the
 * hook. */
void *ks_cu_real_dlsym(void *handle, const char *name);

/* The driver's name of status (cuGetErrorName), or "CUDA error N". */
const char *ks_cu_status_name(CUresult status);

/* Whether the CUDA backend is the one this process profiles: the runtime
 * is on, the driver resolved, and the program's first accelerator
 * runtime was CUDA (oprt.h: ks_oprt_backend_use). */
bool ks_cu_on(void);

/* ------------------------------------------------------------------ */
/* Substitution (cuda_hook.c)                                          */
/* ------------------------------------------------------------------ */

/* The wrapper for real entry point pfn (exported by libcuda as sym, or
 * sym NULL: by address), or pfn itself when it is not wrapped. */
void *ks_cu_substitute(const char *sym, void *pfn);

/* ------------------------------------------------------------------ */
/* Records (cuda_objects.c)                                            */
/* ------------------------------------------------------------------ */

#define KS_CU_MAX_PARAMS 512

/* What kscope knows of a kernel handle (a CUfunction, or a CUkernel a
 * program passed in its place): interned once, never freed while the
 * handle is known (module and library unloads forget every record). */
struct ks_cu_func {
	void *handle;
	struct ks_oprt_name *name;        /* the base name (cuda_names.c) */
	char *driver_name;                /* as the driver gives it (mangled) */
	bool have_params;                 /* cuFuncGetParamInfo answered */
	unsigned nparams;
	struct ks_cu_param *params;
	uint32_t image_len;               /* end of the last parameter */
	char params_why[160];             /* !have_params: why */
};

/* The record of handle, made on first use (NULL when out of memory).
 * Takes the records lock. */
struct ks_cu_func *ks_cu_func_get(void *handle);
/* A module or library was unloaded: handles may be reused.  Bumps
 * ks_cu_funcs_gen, which per-thread caches of records compare. */
void ks_cu_funcs_forget(void);
extern atomic_uint ks_cu_funcs_gen;

void ks_cu_alloc_note(uint64_t base, uint64_t size, enum ks_cu_alloc_kind kind);
void ks_cu_alloc_forget(uint64_t base);
/* A copy of the live allocations kscope saw (malloc'd into *out, the
 * caller frees it); their number (0 when out of memory). */
size_t ks_cu_alloc_snapshot(struct ks_cu_alloc **out);
/* ks_cu_lookup_fn for the records: the map, then cuMemGetAddressRange. */
bool ks_cu_alloc_lookup(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size,
			enum ks_cu_alloc_kind *kind);
void ks_cu_records_clear(void);

/* ------------------------------------------------------------------ */
/* Launches (cuda_wrap.c, cuda_replay.c)                               */
/* ------------------------------------------------------------------ */

enum ks_cu_launch_kind { KS_CU_LAUNCH, KS_CU_LAUNCH_EX, KS_CU_LAUNCH_COOP };

/* One launch the program is making (the backend's half of struct
 * ks_oprt_launch), pointing at the program's own arguments. */
struct ks_cu_launch {
	enum ks_cu_launch_kind kind;
	bool ptsz;                        /* the per-thread-stream entry point */
	struct ks_cu_func *func;
	CUfunction f;
	unsigned grid[3], block[3], shmem;
	CUstream stream;
	void **params, **extra;
	const CUlaunchConfig *config;     /* KS_CU_LAUNCH_EX */
};

/* The program's launch, forwarded unchanged. */
CUresult ks_cu_forward(const struct ks_cu_launch *l);

int ks_cu_quiesce(void *launch, struct ks_err *err);
int ks_cu_flush(void *launch, uint64_t *bytes, struct ks_err *err);
int ks_cu_launch_original(void *launch, bool timed, uint64_t *ns, bool *have_ns);
void *ks_cu_rep_new(void);
int ks_cu_rep_add(void *rep, void *launch, uint64_t index, struct ks_err *err);
int ks_cu_rep_backup(void *rep, int slot, struct ks_err *err);
int ks_cu_rep_restore(void *rep, int slot, struct ks_err *err);
int ks_cu_rep_flush(void *rep, uint64_t *bytes, struct ks_err *err);
int ks_cu_rep_run(void *rep, uint64_t *start_ns, uint64_t *dur_ns, struct ks_err *err);
int ks_cu_rep_diff(void *rep, int slot, struct ks_err *err);
struct ks_oprt_buf *ks_cu_rep_bufs(void *rep, size_t *n);
void ks_cu_rep_describe(void *rep, bool range, struct ks_oprt_json *j);
void ks_cu_rep_program(void *rep, const char **file, const void **data, size_t *len);
void ks_cu_rep_free(void *rep);
/* At exit: frees the replays' device buffers that outlive a replay. */
void ks_cu_replay_fini(void);

/* The record of kernel handle f through a per-thread cache, and the
 * `cuda platform=...` line to kscope once (cuda_wrap.c). */
struct ks_cu_func *ks_cu_func_of(CUfunction f);
void ks_cu_announce(void);

/* CUDA graphs (cuda_graph.c): instantiations, changes and destruction of
 * executable graphs, and their launches (run node by node when a kernel
 * in them is collected). */
void ks_cu_graph_instantiated(CUgraphExec exec, CUgraph graph);
void ks_cu_graph_changed(CUgraphExec exec);
void ks_cu_graph_destroyed(CUgraphExec exec);
CUresult ks_cu_graph_launch(CUgraphExec e, CUstream s, bool ptsz, bool capturing);
/* Graph launches, and those whose kernels kscope could not see (their
 * graph ran as a whole: ks_cu_graph_unseen_why() says why, for the
 * first). */
extern atomic_ulong ks_cu_graph_launches, ks_cu_graph_unseen;
const char *ks_cu_graph_unseen_why(void);

/* The device's clocks and the driver's version from NVML
 * (cuda_nvml.c); false without NVML or when it does not know d. */
struct ks_cu_clocks {
	bool have_sm, have_mem, have_sm_max, have_mem_max;
	unsigned sm_mhz, mem_mhz, sm_max_mhz, mem_max_mhz;
	char driver[80];
};
bool ks_cu_nvml_read(CUdevice d, struct ks_cu_clocks *c);

/* Hardware counters through CUPTI's range profiler (cuda_cupti.c). */
#define KS_CU_HW_NMETRICS 4
extern const char *ks_cu_hw_metrics[KS_CU_HW_NMETRICS];
struct ks_cu_hw {
	bool have;
	double value[KS_CU_HW_NMETRICS];  /* as ks_cu_hw_metrics names them */
	char source[600];
	char why[400];
};
/* Calls launch(arg) once, in the current context, under the range
 * profiler; 0, or -1 with hw->why. */
int ks_cu_hw_measure(int (*launch)(void *), void *arg, struct ks_cu_hw *hw);
int ks_cu_rep_hw(void *rep, struct ks_oprt_hw *hw);

/* What cuInit returned the first time (cuda_wrap.c): 0 before. */
extern int ks_cu_init_status;
extern bool ks_cu_init_seen;

#endif
