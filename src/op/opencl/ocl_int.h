/*
 * Private header of kscope op's OpenCL backend (the wrapped entry points
 * of libkscope-op.so and the operations of struct ks_oprt_backend).
 *
 * How the parts fit together:
 *   ocl_real.c      the runtime's real entry points, found once with
 *                   dlsym(RTLD_NEXT): the library does not link libOpenCL,
 *                   so a program that never uses OpenCL never loads it
 *   ocl_objects.c   records of the program's objects (buffers, programs,
 *                   kernels with their arguments, queues, contexts) in
 *                   hash tables keyed by handle, under one mutex
 *   ocl_wrap.c      the wrapped entry points the program calls
 *   ocl_replay.c    replays: fresh kernels, backups, flushing, timing
 *   ocl_describe.c  the launch in context.json; names of errors and flags
 *   ocl_backend.c   the operations table
 *
 * Every record is read and written under ks_ocl_lock; what a replay needs
 * beyond the lock's hold is copied out.  The one exception is the
 * per-thread cache of kernel names (ks_ocl_kernel_name), which holds only
 * interned names, never freed.
 */
#ifndef KS_OCL_INT_H
#define KS_OCL_INT_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
/* The wrapped entry points are declared by the header; declared with
 * default visibility, their definitions here are exported. */
#pragma GCC visibility push(default)
#include <CL/cl.h>
#pragma GCC visibility pop

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "oprt.h"

/* ------------------------------------------------------------------ */
/* The real entry points (ocl_real.c)                                  */
/* ------------------------------------------------------------------ */

#define KS_OCL_FUNCS(X) \
	X(clCreateBuffer) X(clCreateBufferWithProperties) X(clCreateSubBuffer) \
	X(clCreateProgramWithSource) X(clCreateProgramWithBinary) \
	X(clCreateProgramWithIL) X(clBuildProgram) X(clCreateKernel) \
	X(clCreateKernelsInProgram) X(clCloneKernel) X(clSetKernelArg) \
	X(clCreateCommandQueue) X(clCreateCommandQueueWithProperties) \
	X(clEnqueueNDRangeKernel) X(clFinish) X(clReleaseMemObject) \
	X(clReleaseKernel) X(clReleaseProgram) X(clReleaseCommandQueue) \
	X(clRetainMemObject) X(clRetainCommandQueue) X(clRetainKernel) \
	X(clRetainProgram) X(clRetainContext) \
	X(clReleaseContext) X(clGetKernelInfo) X(clGetKernelArgInfo) \
	X(clGetProgramInfo) X(clGetProgramBuildInfo) X(clGetMemObjectInfo) \
	X(clGetCommandQueueInfo) X(clGetContextInfo) X(clGetDeviceInfo) \
	X(clGetPlatformInfo) X(clGetEventProfilingInfo) X(clWaitForEvents) \
	X(clReleaseEvent) X(clEnqueueCopyBuffer) X(clEnqueueReadBuffer) \
	X(clEnqueueWriteBuffer) X(clEnqueueFillBuffer) X(clEnqueueMarkerWithWaitList) \
	X(clGetEventInfo) X(clFlush) X(clCreateUserEvent) X(clSetUserEventStatus)

struct ks_ocl_real {
#define KS_OCL_PTR(f) __typeof__(f) *f;
	KS_OCL_FUNCS(KS_OCL_PTR)
#undef KS_OCL_PTR
};

extern struct ks_ocl_real ks_ocl_real;

/* Finds the real entry points, once (thread-safe).  Returns whether the
 * ones the backend needs beyond the wrapped call itself were all found;
 * when not, the wrappers only forward.  Every wrapped call asks, so after
 * the first it is one load (ks_ocl_resolved: 1 usable, -1 not, 0 not
 * resolved yet). */
extern atomic_int ks_ocl_resolved;
int ks_ocl_resolve_slow(void);

static inline bool ks_ocl_resolve(void)
{
	int r = atomic_load_explicit(&ks_ocl_resolved, memory_order_acquire);

	return r ? r > 0 : ks_ocl_resolve_slow();
}

/* Whether wrappers should do more than forward: the runtime is on, the
 * real entry points were found, and OpenCL is the process's backend (the
 * first accelerator runtime the program called). */
static inline bool ks_ocl_on(void)
{
	return ks_oprt_active() && ks_ocl_resolve() &&
	       ks_oprt_backend_use(&ks_oprt_opencl_backend);
}

/* ------------------------------------------------------------------ */
/* Records (ocl_objects.c)                                             */
/* ------------------------------------------------------------------ */

enum ks_ocl_origin { KS_OCL_UNKNOWN, KS_OCL_SOURCE, KS_OCL_BINARY, KS_OCL_IL };

/* What kscope knows of a program as the program gave it.  Shared by the
 * program's record and the records of kernels made from it, which may
 * outlive it; freed with the last of them. */
struct ks_ocl_pinfo {
	unsigned refs;
	enum ks_ocl_origin origin;
	unsigned char *data;              /* source (strings concatenated), IL */
	size_t len;
	cl_uint ndev;                     /* binaries: one per device */
	cl_device_id *devs;
	unsigned char **bins;
	size_t *bin_len;
	char *options;                    /* clBuildProgram's, or NULL */
	bool arg_info_added;              /* kscope added -cl-kernel-arg-info */
};

#define KS_OCL_ARG_INLINE 16

/* One argument as the program last set it with clSetKernelArg. */
struct ks_ocl_arg {
	bool set;
	bool null_value;                  /* arg_value was NULL */
	size_t size;
	unsigned char small[KS_OCL_ARG_INLINE];
	unsigned char *big;               /* size > KS_OCL_ARG_INLINE */
	size_t big_cap;
};

static inline const void *ks_ocl_arg_value(const struct ks_ocl_arg *a)
{
	return a->null_value ? NULL : a->size > KS_OCL_ARG_INLINE ? a->big : a->small;
}

/* Each record counts the references the program holds (its create, then
 * its retains and releases): the runtime's own reference count cannot
 * say when the program's last one goes, because it counts the runtime's
 * references too (with PoCL, a kernel holds its program and a command in
 * flight holds its kernel, buffers and queue).  The record is dropped
 * when the program's count reaches 0, before the release is forwarded, so
 * that a new object the runtime gives the same handle is never mistaken
 * for the old one. */
struct ks_ocl_kernel {
	unsigned refs;
	cl_kernel h;
	struct ks_oprt_name *nm;
	cl_program prog;
	struct ks_ocl_pinfo *pinfo;       /* a reference, or NULL */
	cl_uint nargs;
	struct ks_ocl_arg *args;
};

struct ks_ocl_program {
	unsigned refs;
	cl_program h;
	cl_context ctx;
	struct ks_ocl_pinfo *pinfo;       /* a reference */
};

struct ks_ocl_queue {
	unsigned refs;
	cl_command_queue h;
	cl_context ctx;
	cl_device_id dev;
	bool out_of_order;
	bool profiling_by_program;        /* the program asked for profiling */
};

struct ks_ocl_mem {
	unsigned refs;
	cl_mem h;
	cl_context ctx;
	size_t size;
	cl_mem_flags flags;
	cl_mem parent;                    /* sub-buffers */
	size_t origin;
};

/* Per context: the buffer streamed through to flush the caches, made on
 * first use, released with the context's last queue. */
struct ks_ocl_context {
	cl_context h;
	unsigned nqueues;                 /* queue records */
	cl_mem flush;
	size_t flush_bytes;
	cl_uint pattern;                  /* changes per flush */
};

extern pthread_mutex_t ks_ocl_lock;

/* Lookups: the record, or NULL.  ks_ocl_lock held. */
struct ks_ocl_kernel *ks_ocl_kernel_get(cl_kernel h);
struct ks_ocl_program *ks_ocl_program_get(cl_program h);
struct ks_ocl_queue *ks_ocl_queue_get(cl_command_queue h);
struct ks_ocl_mem *ks_ocl_mem_get(cl_mem h);
struct ks_ocl_context *ks_ocl_context_get(cl_context h);

/* Records a new object, replacing any stale record of the same handle (a
 * handle the runtime reuses after the object died unseen).  ks_ocl_lock
 * NOT held; out of memory leaves the object unrecorded. */
void ks_ocl_mem_add(cl_mem h, cl_context ctx, size_t size, cl_mem_flags flags,
		    cl_mem parent, size_t origin);
void ks_ocl_program_add(cl_program h, cl_context ctx, struct ks_ocl_pinfo *pinfo);
/* pinfo: a reference taken for the kernel (NULL if unknown). */
void ks_ocl_kernel_add(cl_kernel h, const char *name, cl_program prog,
		       struct ks_ocl_pinfo *pinfo, cl_uint nargs);
void ks_ocl_queue_add(cl_command_queue h, cl_context ctx, cl_device_id dev,
		      bool out_of_order, bool profiling_by_program);
/* The name of kernel h, from a per-thread cache of the last kernel looked
 * up (the common case: the program launches the kernel it just set the
 * arguments of), else from its record (made if missing).  NULL when the
 * runtime does not say.  ks_ocl_lock NOT held. */
struct ks_oprt_name *ks_ocl_kernel_name(cl_kernel h);
/* The record of clone, a copy of src's (name, program, arguments). */
void ks_ocl_kernel_clone(cl_kernel src, cl_kernel clone);
/* The kernel's record, made from the runtime's answers when the kernel
 * came from a call kscope does not wrap.  ks_ocl_lock held. */
struct ks_ocl_kernel *ks_ocl_kernel_lazy(cl_kernel h);

enum ks_ocl_kind { KS_OCL_MEM, KS_OCL_PROGRAM, KS_OCL_KERNEL, KS_OCL_QUEUE };

/* The program retained h.  ks_ocl_lock NOT held. */
void ks_ocl_retain(enum ks_ocl_kind kind, const void *h);
/* The program is releasing h: drops its record when that was the
 * program's last reference.  For a queue, returns the context's flush
 * buffer when the context lost its last queue (to release after the
 * queue), else NULL.  ks_ocl_lock NOT held. */
cl_mem ks_ocl_release(enum ks_ocl_kind kind, const void *h);

/* The queues recorded (for draining): *n of them, in a new array with
 * room for one more. */
cl_command_queue *ks_ocl_queues(size_t *n);

struct ks_ocl_pinfo *ks_ocl_pinfo_new(void);
/* ks_ocl_lock held for both. */
void ks_ocl_pinfo_ref(struct ks_ocl_pinfo *p);
void ks_ocl_pinfo_unref(struct ks_ocl_pinfo *p);

/* Stores an argument's value.  ks_ocl_lock held.  -ENOMEM. */
int ks_ocl_arg_set(struct ks_ocl_arg *a, size_t size, const void *value);
void ks_ocl_arg_free(struct ks_ocl_arg *a);

/* Forgets every record (the backend's fini). */
void ks_ocl_records_clear(void);

/* ------------------------------------------------------------------ */
/* Launches and replays (ocl_replay.c)                                  */
/* ------------------------------------------------------------------ */

/* One clEnqueueNDRangeKernel call as the program made it. */
struct ks_ocl_launch {
	cl_command_queue q;
	cl_kernel k;
	cl_uint dim;
	const size_t *offset, *global, *local;
	cl_uint nev;
	const cl_event *evs;
	cl_event *ev;
};

int ks_ocl_quiesce(void *launch, struct ks_err *err);
int ks_ocl_flush(void *launch, uint64_t *bytes, struct ks_err *err);
int ks_ocl_launch_original(void *launch, bool timed, uint64_t *ns, bool *have_ns);
void *ks_ocl_rep_new(void);
int ks_ocl_rep_add(void *rep, void *launch, uint64_t index, struct ks_err *err);
int ks_ocl_rep_backup(void *rep, int slot, struct ks_err *err);
int ks_ocl_rep_restore(void *rep, int slot, struct ks_err *err);
int ks_ocl_rep_flush(void *rep, uint64_t *bytes, struct ks_err *err);
int ks_ocl_rep_run(void *rep, uint64_t *start_ns, uint64_t *dur_ns, struct ks_err *err);
int ks_ocl_rep_diff(void *rep, int slot, struct ks_err *err);
struct ks_oprt_buf *ks_ocl_rep_bufs(void *rep, size_t *n);
void ks_ocl_rep_describe(void *rep, bool range, struct ks_oprt_json *j);
void ks_ocl_rep_program(void *rep, const char **file, const void **data, size_t *len);
void ks_ocl_rep_free(void *rep);

/* ------------------------------------------------------------------ */
/* Describing (ocl_describe.c)                                          */
/* ------------------------------------------------------------------ */

/* "CL_INVALID_VALUE", or "OpenCL error -N" for codes it does not know
 * (into a static buffer for those: a rare path). */
const char *ks_ocl_error_name(cl_int e);
/* Sets err to "<call> returned <name>" and returns -EIO. */
int ks_ocl_err(struct ks_err *err, const char *call, cl_int e);

/* What clGetKernelArgInfo says of one argument (when it says anything). */
struct ks_ocl_arginfo {
	bool known;
	char name[128], type_name[128];
	cl_kernel_arg_address_qualifier address;
	cl_kernel_arg_access_qualifier access;
	cl_kernel_arg_type_qualifier type_qual;
};

void ks_ocl_arginfo_get(cl_kernel k, cl_uint i, struct ks_ocl_arginfo *ai);

/* One captured launch's argument, as context.json shows it. */
struct ks_ocl_carg {
	struct ks_ocl_arg val;            /* a copy of the value */
	struct ks_ocl_arginfo info;
	enum { KS_OCL_ARG_UNSET, KS_OCL_ARG_BUFFER, KS_OCL_ARG_LOCAL, KS_OCL_ARG_SCALAR,
	       KS_OCL_ARG_NULL, KS_OCL_ARG_SAMPLER, KS_OCL_ARG_MEMOBJ } kind;
	cl_mem mem;                       /* buffers */
	size_t mem_size;
	cl_mem_flags mem_flags;
	cl_mem parent;
	size_t origin;
};

void ks_ocl_describe_device(cl_device_id dev, struct ks_oprt_json *j);
void ks_ocl_describe_args(const struct ks_ocl_carg *args, cl_uint n, struct ks_oprt_json *j);
/* The program members of context.json ("program"). */
void ks_ocl_describe_program(const struct ks_ocl_pinfo *p, cl_device_id dev,
			     struct ks_oprt_json *j);
/* The program's file for p and dev: name, bytes (p's) or all NULL. */
void ks_ocl_program_file(const struct ks_ocl_pinfo *p, cl_device_id dev, const char **file,
			 const void **data, size_t *len);
/* Device, platform and driver names, for the runtime-used message. */
void ks_ocl_announce(cl_device_id dev);
/* The first device of ctx, or NULL. */
cl_device_id ks_ocl_context_device(cl_context ctx);

#endif
