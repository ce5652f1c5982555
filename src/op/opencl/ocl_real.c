/*
 * The OpenCL runtime's real entry points, found with dlsym(RTLD_NEXT) on
 * the first wrapped call (by then the program has loaded the ICD loader,
 * libOpenCL), once for all threads.  libkscope-op.so does not link
 * libOpenCL itself, so that a program that never uses OpenCL does not
 * load it because of kscope.
 *
 * Entry points of later OpenCL versions may be missing from an older
 * loader; only the ones the backend calls on its own are required.
 */
#include <dlfcn.h>

#include "ocl_int.h"

struct ks_ocl_real ks_ocl_real;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool usable;
/* Set once resolve() has run: ks_ocl_resolve() then costs one load. */
atomic_int ks_ocl_resolved;

static void resolve(void)
{
	struct ks_ocl_real *r = &ks_ocl_real;

#define KS_OCL_SYM(f) r->f = (__typeof__(r->f))dlsym(RTLD_NEXT, #f);
	KS_OCL_FUNCS(KS_OCL_SYM)
#undef KS_OCL_SYM
	usable = r->clCreateKernel && r->clSetKernelArg && r->clEnqueueNDRangeKernel &&
		 r->clFinish && r->clReleaseKernel && r->clReleaseMemObject &&
		 r->clRetainMemObject && r->clRetainCommandQueue &&
		 r->clReleaseCommandQueue && r->clRetainContext && r->clReleaseContext &&
		 r->clCreateBuffer && r->clGetKernelInfo && r->clGetKernelArgInfo &&
		 r->clGetProgramInfo && r->clGetProgramBuildInfo && r->clGetMemObjectInfo &&
		 r->clGetCommandQueueInfo && r->clGetContextInfo && r->clGetDeviceInfo &&
		 r->clGetPlatformInfo && r->clGetEventProfilingInfo && r->clWaitForEvents &&
		 r->clReleaseEvent && r->clEnqueueCopyBuffer && r->clEnqueueReadBuffer &&
		 r->clEnqueueWriteBuffer && r->clEnqueueFillBuffer &&
		 r->clEnqueueMarkerWithWaitList && r->clGetEventInfo && r->clFlush &&
		 r->clCreateUserEvent && r->clSetUserEventStatus;
}

int ks_ocl_resolve_slow(void)
{
	pthread_once(&once, resolve);
	atomic_store_explicit(&ks_ocl_resolved, usable ? 1 : -1, memory_order_release);
	return usable;
}
