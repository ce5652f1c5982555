/*
 * The OpenCL entry points libkscope-op.so wraps.  The program's calls
 * reach these (the library is preloaded); each forwards to the runtime's
 * real entry point (ocl_real.c) and, when the runtime is on, records what
 * kscope op needs:
 *
 *   clCreateBuffer, clCreateBufferWithProperties, clCreateSubBuffer
 *                       buffers, to know a cl_mem argument when it is set
 *   clCreateProgramWithSource / WithBinary / WithIL, clBuildProgram
 *                       the program as given, and its build options
 *   clCreateKernel, clCreateKernelsInProgram, clCloneKernel, clSetKernelArg
 *                       kernels: name, program, and the arguments as last
 *                       set, for the kernels kscope may replay
 *   clCreateCommandQueue, clCreateCommandQueueWithProperties
 *                       queues: their context, device and properties; in
 *                       application replay, with profiling turned on (the
 *                       program's own launch is timed from its event), and
 *                       the record remembers whether the program asked for
 *                       it.  Otherwise left as the program made them: the
 *                       replays run on queues of kscope's own.
 *   clEnqueueNDRangeKernel
 *                       the launch: the filters decide, kscope answers
 *   clFinish, clRelease{MemObject,Kernel,Program,CommandQueue}
 *                       held off while a replay runs (they hold the replay
 *                       lock shared), so the program never sees a replay's
 *                       intermediate memory nor frees what it uses
 *   clRetain{MemObject,Kernel,Program,CommandQueue} and the releases
 *                       count the program's references, to drop a record
 *                       when the program's last reference goes
 *
 * When the runtime is off, every wrapper only forwards.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_int.h"

#define R ks_ocl_real

/* The first device the program used, announced to kscope once. */
static atomic_bool announced;

static void note_device(cl_device_id dev)
{
	if (dev && !atomic_load_explicit(&announced, memory_order_relaxed) &&
	    !atomic_exchange(&announced, true))
		ks_ocl_announce(dev);
}

static void note_context(cl_context ctx)
{
	if (!atomic_load_explicit(&announced, memory_order_relaxed))
		note_device(ks_ocl_context_device(ctx));
}

/* For an entry point the loader lacks (an older OpenCL): the error the
 * program gets. */
static void *missing(cl_int *errcode_ret)
{
	if (errcode_ret)
		*errcode_ret = CL_INVALID_OPERATION;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Buffers                                                             */
/* ------------------------------------------------------------------ */

cl_mem CL_API_CALL clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size,
				  void *host_ptr, cl_int *errcode_ret)
{
	cl_mem m;

	ks_ocl_resolve();
	if (!R.clCreateBuffer)
		return missing(errcode_ret);
	m = R.clCreateBuffer(context, flags, size, host_ptr, errcode_ret);
	if (m && ks_ocl_on()) {
		note_context(context);
		ks_ocl_mem_add(m, context, size, flags, NULL, 0);
	}
	return m;
}

cl_mem CL_API_CALL clCreateBufferWithProperties(cl_context context,
						const cl_mem_properties *properties,
						cl_mem_flags flags, size_t size, void *host_ptr,
						cl_int *errcode_ret)
{
	cl_mem m;

	ks_ocl_resolve();
	if (!R.clCreateBufferWithProperties)
		return missing(errcode_ret);
	m = R.clCreateBufferWithProperties(context, properties, flags, size, host_ptr,
					   errcode_ret);
	if (m && ks_ocl_on()) {
		note_context(context);
		ks_ocl_mem_add(m, context, size, flags, NULL, 0);
	}
	return m;
}

cl_mem CL_API_CALL clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags,
				     cl_buffer_create_type type, const void *info,
				     cl_int *errcode_ret)
{
	cl_mem m;

	ks_ocl_resolve();
	if (!R.clCreateSubBuffer)
		return missing(errcode_ret);
	m = R.clCreateSubBuffer(buffer, flags, type, info, errcode_ret);
	if (m && ks_ocl_on()) {
		cl_context ctx = NULL;
		cl_mem_flags f = flags;
		size_t origin = 0, size = 0;

		if (type == CL_BUFFER_CREATE_TYPE_REGION && info) {
			origin = ((const cl_buffer_region *)info)->origin;
			size = ((const cl_buffer_region *)info)->size;
		}
		/* A sub-buffer inherits the flags it does not give. */
		R.clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof(f), &f, NULL);
		R.clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof(ctx), &ctx, NULL);
		ks_ocl_mem_add(m, ctx, size, f, buffer, origin);
	}
	return m;
}

/* ------------------------------------------------------------------ */
/* Programs                                                            */
/* ------------------------------------------------------------------ */

cl_program CL_API_CALL clCreateProgramWithSource(cl_context context, cl_uint count,
						 const char **strings, const size_t *lengths,
						 cl_int *errcode_ret)
{
	struct ks_ocl_pinfo *pi;
	cl_program p;
	size_t total = 0;

	ks_ocl_resolve();
	if (!R.clCreateProgramWithSource)
		return missing(errcode_ret);
	p = R.clCreateProgramWithSource(context, count, strings, lengths, errcode_ret);
	if (!p || !ks_ocl_on())
		return p;
	note_context(context);
	pi = ks_ocl_pinfo_new();
	if (!pi)
		return p;
	pi->origin = KS_OCL_SOURCE;
	/* The strings as the runtime compiles them: concatenated, each of
	 * its length or up to its NUL. */
	for (cl_uint i = 0; i < count; i++)
		total += lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
	pi->data = malloc(total + 1);
	if (pi->data) {
		for (cl_uint i = 0; i < count; i++) {
			size_t n = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);

			memcpy(pi->data + pi->len, strings[i], n);
			pi->len += n;
		}
		pi->data[pi->len] = '\0';
	} else {
		pi->origin = KS_OCL_UNKNOWN;
	}
	ks_ocl_program_add(p, context, pi);
	return p;
}

cl_program CL_API_CALL clCreateProgramWithBinary(cl_context context, cl_uint num_devices,
						 const cl_device_id *device_list,
						 const size_t *lengths,
						 const unsigned char **binaries,
						 cl_int *binary_status, cl_int *errcode_ret)
{
	struct ks_ocl_pinfo *pi;
	cl_program p;

	ks_ocl_resolve();
	if (!R.clCreateProgramWithBinary)
		return missing(errcode_ret);
	p = R.clCreateProgramWithBinary(context, num_devices, device_list, lengths, binaries,
					binary_status, errcode_ret);
	if (!p || !ks_ocl_on())
		return p;
	note_context(context);
	pi = ks_ocl_pinfo_new();
	if (!pi)
		return p;
	pi->origin = KS_OCL_BINARY;
	pi->devs = calloc(num_devices, sizeof(*pi->devs));
	pi->bins = calloc(num_devices, sizeof(*pi->bins));
	pi->bin_len = calloc(num_devices, sizeof(*pi->bin_len));
	if (pi->devs && pi->bins && pi->bin_len) {
		pi->ndev = num_devices;
		for (cl_uint i = 0; i < num_devices; i++) {
			pi->devs[i] = device_list[i];
			pi->bins[i] = malloc(lengths[i] ? lengths[i] : 1);
			if (pi->bins[i]) {
				memcpy(pi->bins[i], binaries[i], lengths[i]);
				pi->bin_len[i] = lengths[i];
			}
		}
	}
	ks_ocl_program_add(p, context, pi);
	return p;
}

cl_program CL_API_CALL clCreateProgramWithIL(cl_context context, const void *il, size_t length,
					     cl_int *errcode_ret)
{
	struct ks_ocl_pinfo *pi;
	cl_program p;

	ks_ocl_resolve();
	if (!R.clCreateProgramWithIL)
		return missing(errcode_ret);
	p = R.clCreateProgramWithIL(context, il, length, errcode_ret);
	if (!p || !ks_ocl_on())
		return p;
	note_context(context);
	pi = ks_ocl_pinfo_new();
	if (!pi)
		return p;
	pi->origin = KS_OCL_IL;
	pi->data = malloc(length ? length : 1);
	if (pi->data) {
		memcpy(pi->data, il, length);
		pi->len = length;
	} else {
		pi->origin = KS_OCL_UNKNOWN;
	}
	ks_ocl_program_add(p, context, pi);
	return p;
}

/*
 * kscope adds -cl-kernel-arg-info to the build options of programs built
 * from source or IL.  Without it PoCL (and other runtimes) answer
 * clGetKernelArgInfo with CL_KERNEL_ARG_INFO_NOT_AVAILABLE, and kscope
 * would not know the arguments' names (--flops expressions use them),
 * their types (to decode scalar values), nor which buffers are __constant
 * or const-qualified (so need no backup).  The option only keeps argument
 * metadata; it does not change the code generated.  context.json gives
 * the program's own options.
 */
#define ARG_INFO_OPTION "-cl-kernel-arg-info"

cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices,
				  const cl_device_id *device_list, const char *options,
				  void(CL_CALLBACK *pfn_notify)(cl_program, void *),
				  void *user_data)
{
	struct ks_ocl_program *rec;
	char *opts = NULL;
	bool add = false;
	cl_int r;

	ks_ocl_resolve();
	if (!R.clBuildProgram)
		return CL_INVALID_OPERATION;
	if (!ks_ocl_on())
		return R.clBuildProgram(program, num_devices, device_list, options, pfn_notify,
					user_data);
	pthread_mutex_lock(&ks_ocl_lock);
	rec = ks_ocl_program_get(program);
	if (rec && rec->pinfo) {
		free(rec->pinfo->options);
		rec->pinfo->options = options ? strdup(options) : NULL;
		add = (rec->pinfo->origin == KS_OCL_SOURCE || rec->pinfo->origin == KS_OCL_IL) &&
		      !(options && strstr(options, ARG_INFO_OPTION));
	}
	pthread_mutex_unlock(&ks_ocl_lock);
	if (add) {
		size_t n = options ? strlen(options) : 0;

		opts = malloc(n + sizeof(ARG_INFO_OPTION) + 1);
		if (opts) {
			memcpy(opts, options ? options : "", n);
			opts[n] = ' ';
			memcpy(opts + n + (n ? 1 : 0), ARG_INFO_OPTION, sizeof(ARG_INFO_OPTION));
		}
	}
	r = R.clBuildProgram(program, num_devices, device_list, opts ? opts : options,
			     pfn_notify, user_data);
	if (opts && r == CL_INVALID_BUILD_OPTIONS) {
		/* A runtime that does not take the option: build as asked. */
		free(opts);
		opts = NULL;
		r = R.clBuildProgram(program, num_devices, device_list, options, pfn_notify,
				     user_data);
	}
	if (opts) {
		pthread_mutex_lock(&ks_ocl_lock);
		rec = ks_ocl_program_get(program);
		if (rec && rec->pinfo)
			rec->pinfo->arg_info_added = true;
		pthread_mutex_unlock(&ks_ocl_lock);
	}
	free(opts);
	return r;
}

/* ------------------------------------------------------------------ */
/* Kernels                                                             */
/* ------------------------------------------------------------------ */

/* Records kernel k of program prog (name known or asked). */
static void kernel_record(cl_kernel k, cl_program prog, const char *name)
{
	struct ks_ocl_program *p;
	struct ks_ocl_pinfo *pi = NULL;
	char buf[512];
	cl_uint nargs = 0;

	if (!name) {
		if (R.clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof(buf), buf, NULL) !=
		    CL_SUCCESS)
			return;
		buf[sizeof(buf) - 1] = '\0';
		name = buf;
	}
	if (R.clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, NULL) != CL_SUCCESS)
		nargs = 0;
	pthread_mutex_lock(&ks_ocl_lock);
	p = ks_ocl_program_get(prog);
	if (p && p->pinfo) {
		pi = p->pinfo;
		ks_ocl_pinfo_ref(pi);
	}
	pthread_mutex_unlock(&ks_ocl_lock);
	ks_ocl_kernel_add(k, name, prog, pi, nargs);
}

cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char *kernel_name,
				     cl_int *errcode_ret)
{
	cl_kernel k;

	ks_ocl_resolve();
	if (!R.clCreateKernel)
		return missing(errcode_ret);
	k = R.clCreateKernel(program, kernel_name, errcode_ret);
	if (k && ks_ocl_on())
		kernel_record(k, program, kernel_name);
	return k;
}

cl_int CL_API_CALL clCreateKernelsInProgram(cl_program program, cl_uint num_kernels,
					    cl_kernel *kernels, cl_uint *num_kernels_ret)
{
	cl_uint n = 0;
	cl_int r;

	ks_ocl_resolve();
	if (!R.clCreateKernelsInProgram)
		return CL_INVALID_OPERATION;
	r = R.clCreateKernelsInProgram(program, num_kernels, kernels, &n);
	if (num_kernels_ret)
		*num_kernels_ret = n;
	if (r == CL_SUCCESS && kernels && ks_ocl_on())
		for (cl_uint i = 0; i < n && i < num_kernels; i++)
			kernel_record(kernels[i], program, NULL);
	return r;
}

cl_kernel CL_API_CALL clCloneKernel(cl_kernel source_kernel, cl_int *errcode_ret)
{
	cl_kernel k;

	ks_ocl_resolve();
	if (!R.clCloneKernel)
		return missing(errcode_ret);
	k = R.clCloneKernel(source_kernel, errcode_ret);
	if (k && ks_ocl_on())
		ks_ocl_kernel_clone(source_kernel, k);
	return k;
}

cl_int CL_API_CALL clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size,
				  const void *arg_value)
{
	struct ks_ocl_kernel *k;
	struct ks_oprt_name *nm;
	cl_int r;

	ks_ocl_resolve();
	if (!R.clSetKernelArg)
		return CL_INVALID_OPERATION;
	r = R.clSetKernelArg(kernel, arg_index, arg_size, arg_value);
	if (r != CL_SUCCESS || !ks_ocl_on())
		return r;
	/* Only the arguments of kernels kscope may replay are kept. */
	nm = ks_ocl_kernel_name(kernel);
	if (!nm || !nm->capture)
		return r;
	pthread_mutex_lock(&ks_ocl_lock);
	k = ks_ocl_kernel_get(kernel);
	if (!k)
		k = ks_ocl_kernel_lazy(kernel);
	if (k && arg_index < k->nargs)
		ks_ocl_arg_set(&k->args[arg_index], arg_size, arg_value);
	pthread_mutex_unlock(&ks_ocl_lock);
	return r;
}

/* ------------------------------------------------------------------ */
/* Queues                                                              */
/* ------------------------------------------------------------------ */

cl_command_queue CL_API_CALL clCreateCommandQueue(cl_context context, cl_device_id device,
						  cl_command_queue_properties properties,
						  cl_int *errcode_ret)
{
	cl_command_queue_properties add;
	cl_command_queue q;

	ks_ocl_resolve();
	if (!R.clCreateCommandQueue)
		return missing(errcode_ret);
	if (!ks_ocl_on())
		return R.clCreateCommandQueue(context, device, properties, errcode_ret);
	add = ks_oprt_profile_program_queues() ? CL_QUEUE_PROFILING_ENABLE : 0;
	q = R.clCreateCommandQueue(context, device, properties | add, errcode_ret);
	if (!q && (add & ~properties))
		/* A device that cannot profile: the program's queue as asked. */
		q = R.clCreateCommandQueue(context, device, properties, errcode_ret);
	if (q) {
		note_device(device);
		ks_ocl_queue_add(q, context, device,
				 properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
				 properties & CL_QUEUE_PROFILING_ENABLE);
	}
	return q;
}

cl_command_queue CL_API_CALL clCreateCommandQueueWithProperties(
	cl_context context, cl_device_id device, const cl_queue_properties *properties,
	cl_int *errcode_ret)
{
	cl_queue_properties *props = NULL, asked = 0;
	cl_command_queue q;
	size_t n = 0, at = SIZE_MAX;

	ks_ocl_resolve();
	if (!R.clCreateCommandQueueWithProperties)
		return missing(errcode_ret);
	if (!ks_ocl_on())
		return R.clCreateCommandQueueWithProperties(context, device, properties,
							    errcode_ret);
	for (; properties && properties[n]; n += 2)
		if (properties[n] == CL_QUEUE_PROPERTIES) {
			at = n + 1;
			asked = properties[n + 1];
		}
	/* Queues on the device are not the program's host-side queues:
	 * left as they are. */
	if (!(asked & CL_QUEUE_ON_DEVICE) && ks_oprt_profile_program_queues()) {
		props = malloc((n + 3) * sizeof(*props));
		if (props) {
			if (n)
				memcpy(props, properties, n * sizeof(*props));
			if (at == SIZE_MAX) {
				props[n] = CL_QUEUE_PROPERTIES;
				props[n + 1] = CL_QUEUE_PROFILING_ENABLE;
				props[n + 2] = 0;
			} else {
				props[at] |= CL_QUEUE_PROFILING_ENABLE;
				props[n] = 0;
			}
		}
	}
	q = R.clCreateCommandQueueWithProperties(context, device, props ? props : properties,
						 errcode_ret);
	if (!q && props && !(asked & CL_QUEUE_PROFILING_ENABLE))
		q = R.clCreateCommandQueueWithProperties(context, device, properties,
							 errcode_ret);
	free(props);
	if (q && !(asked & CL_QUEUE_ON_DEVICE)) {
		note_device(device);
		ks_ocl_queue_add(q, context, device, asked & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
				 asked & CL_QUEUE_PROFILING_ENABLE);
	}
	return q;
}

/* ------------------------------------------------------------------ */
/* Launches                                                            */
/* ------------------------------------------------------------------ */

cl_int CL_API_CALL clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel,
					  cl_uint work_dim, const size_t *global_work_offset,
					  const size_t *global_work_size,
					  const size_t *local_work_size,
					  cl_uint num_events_in_wait_list,
					  const cl_event *event_wait_list, cl_event *event)
{
	struct ks_ocl_launch ol;
	struct ks_oprt_launch l;          /* not zeroed: this is the hot path */
	struct ks_oprt_decision d;
	cl_int r;

	ks_ocl_resolve();
	if (!R.clEnqueueNDRangeKernel)
		return CL_INVALID_OPERATION;
	/* Invalid work sizes are the runtime's to report. */
	if (!ks_ocl_on() || work_dim < 1 || work_dim > 3 || !global_work_size)
		return R.clEnqueueNDRangeKernel(queue, kernel, work_dim, global_work_offset,
						global_work_size, local_work_size,
						num_events_in_wait_list, event_wait_list, event);
	if (!ks_oprt_shared_lock()) {
		/* Called back from inside the runtime: only forward. */
		r = R.clEnqueueNDRangeKernel(queue, kernel, work_dim, global_work_offset,
					     global_work_size, local_work_size,
					     num_events_in_wait_list, event_wait_list, event);
		ks_oprt_shared_unlock();
		return r;
	}
	l.name = ks_ocl_kernel_name(kernel);
	/* Most launches are not collected: one that can only pass is
	 * counted and forwarded at once (ks_oprt_launch_fast_pass), without
	 * the launch record. */
	if (!atomic_load_explicit(&announced, memory_order_relaxed) ||
	    !ks_oprt_launch_fast_pass(l.name)) {
		ol = (struct ks_ocl_launch){
			queue, kernel, work_dim, global_work_offset, global_work_size,
			local_work_size, num_events_in_wait_list, event_wait_list, event,
		};
		l.be = &ol;
		l.dim = work_dim;
		for (unsigned i = 0; i < 3; i++)
			l.gsize[i] = i < work_dim ? global_work_size[i] : 1;
		if (!atomic_load_explicit(&announced, memory_order_relaxed)) {
			cl_device_id dev = NULL;

			if (R.clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(dev), &dev,
						    NULL) == CL_SUCCESS)
				note_device(dev);
		}
		if (ks_oprt_launch_decide(&l, &d) != KS_OPRT_PASS) {
			ks_oprt_shared_unlock();
			return ks_oprt_launch_handle(&l, &d);
		}
	}
	r = R.clEnqueueNDRangeKernel(queue, kernel, work_dim, global_work_offset,
				     global_work_size, local_work_size,
				     num_events_in_wait_list, event_wait_list, event);
	ks_oprt_shared_unlock();
	return r;
}

cl_int CL_API_CALL clFinish(cl_command_queue queue)
{
	cl_int r;

	ks_ocl_resolve();
	if (!R.clFinish)
		return CL_INVALID_OPERATION;
	if (!ks_ocl_on())
		return R.clFinish(queue);
	ks_oprt_shared_lock();
	r = R.clFinish(queue);
	ks_oprt_shared_unlock();
	return r;
}

/* ------------------------------------------------------------------ */
/* Retains and releases                                                */
/* ------------------------------------------------------------------ */

/* The release wrappers hold the replay lock shared, so that a replay
 * never sees an object it uses die, and drop the record before the
 * release is forwarded (ocl_int.h). */
#define RETAIN_RELEASE(type, what, kind, retain, release)                         \
	cl_int CL_API_CALL retain(type what)                                      \
	{                                                                         \
		cl_int r;                                                         \
                                                                                  \
		ks_ocl_resolve();                                                 \
		if (!R.retain)                                                    \
			return CL_INVALID_OPERATION;                              \
		r = R.retain(what);                                               \
		if (r == CL_SUCCESS && ks_ocl_on())                               \
			ks_ocl_retain(kind, what);                                \
		return r;                                                         \
	}                                                                         \
	cl_int CL_API_CALL release(type what)                                     \
	{                                                                         \
		cl_mem flush;                                                     \
		cl_int r;                                                         \
                                                                                  \
		ks_ocl_resolve();                                                 \
		if (!R.release)                                                   \
			return CL_INVALID_OPERATION;                              \
		if (!ks_ocl_on())                                                 \
			return R.release(what);                                   \
		ks_oprt_shared_lock();                                            \
		flush = ks_ocl_release(kind, what);                               \
		r = R.release(what);                                              \
		if (flush)                                                        \
			R.clReleaseMemObject(flush);                              \
		ks_oprt_shared_unlock();                                          \
		return r;                                                         \
	}

RETAIN_RELEASE(cl_mem, memobj, KS_OCL_MEM, clRetainMemObject, clReleaseMemObject)
RETAIN_RELEASE(cl_program, program, KS_OCL_PROGRAM, clRetainProgram, clReleaseProgram)
RETAIN_RELEASE(cl_kernel, kernel, KS_OCL_KERNEL, clRetainKernel, clReleaseKernel)
RETAIN_RELEASE(cl_command_queue, queue, KS_OCL_QUEUE, clRetainCommandQueue,
	       clReleaseCommandQueue)
