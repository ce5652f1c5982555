/*
 * The real CUDA driver for kscope op's CUDA backend.  libkscope-op.so
 * does not link libcuda: it is preloaded into every program kscope op
 * runs, most of which never use CUDA, and it must load on machines
 * without an NVIDIA driver.  On first need it loads the driver with
 * dlopen("libcuda.so.1") (already loaded, in a CUDA program, by the time
 * a wrapper runs) and finds the real entry points in it with glibc's own
 * dlsym, once for all threads.
 *
 * Entry points of later drivers (cuFuncGetParamInfo: 12.4) may be
 * missing from an older one; only those the backend cannot do without
 * are required.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_int.h"

struct ks_cu_real ks_cu_real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool usable;
static void *driver;
static char why[400];

static void resolve(void)
{
	struct ks_cu_real *r = &ks_cu_real;
	const char *e;

	driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!driver) {
		e = dlerror();
		snprintf(why, sizeof(why), "no libcuda.so.1 (the NVIDIA driver is not installed): %s",
			 e ? e : "not found");
		return;
	}
#define KS_CU_SYM_W(sym, decl) r->sym = (__typeof__(r->sym))ks_cu_real_dlsym(driver, #sym);
#define KS_CU_SYM_C(sym) r->sym = (__typeof__(r->sym))ks_cu_real_dlsym(driver, #sym);
	KS_CU_WRAPPED(KS_CU_SYM_W)
	KS_CU_CALLED(KS_CU_SYM_C)
#undef KS_CU_SYM_W
#undef KS_CU_SYM_C
	r->getproc_v1 = (ks_cu_getproc_v1_fn)ks_cu_real_dlsym(driver, "cuGetProcAddress");
	r->cuStreamIsCapturing_ptsz = (__typeof__(r->cuStreamIsCapturing_ptsz))ks_cu_real_dlsym(
		driver, "cuStreamIsCapturing_ptsz");
	usable = r->cuInit && r->cuGetErrorName && r->cuDriverGetVersion && r->cuCtxGetDevice &&
		 r->cuDeviceGetName && r->cuDeviceGetAttribute && r->cuCtxSynchronize &&
		 r->cuStreamSynchronize && r->cuEventCreate && r->cuEventRecord &&
		 r->cuEventSynchronize && r->cuEventElapsedTime && r->cuEventDestroy_v2 &&
		 r->cuMemAlloc_v2 && r->cuMemFree_v2 && r->cuMemcpyDtoD_v2 &&
		 r->cuMemcpyDtoH_v2 && r->cuMemsetD8_v2 && r->cuMemGetAddressRange_v2 &&
		 r->cuFuncGetName && r->cuLaunchKernel;
	if (!usable)
		snprintf(why, sizeof(why), "libcuda.so.1 lacks entry points kscope needs "
			 "(a driver older than CUDA 12)");
}

bool ks_cu_resolve(void)
{
	pthread_once(&once, resolve);
	return usable;
}

const char *ks_cu_driver_why(void)
{
	ks_cu_resolve();
	return usable ? NULL : why;
}

void *ks_cu_driver_handle(void)
{
	return driver;
}

bool ks_cu_on(void)
{
	return ks_oprt_active() && ks_cu_resolve() && ks_oprt_backend_use(&ks_oprt_cuda_backend);
}

const char *ks_cu_status_name(CUresult status)
{
	static KS_OPRT_TLS char buf[40];
	const char *name = NULL;

	if (ks_cu_real.cuGetErrorName && ks_cu_real.cuGetErrorName(status, &name) == CUDA_SUCCESS &&
	    name)
		return name;
	snprintf(buf, sizeof(buf), "CUDA error %d", (int)status);
	return buf;
}
