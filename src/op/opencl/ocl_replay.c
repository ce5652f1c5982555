/*
 * The OpenCL side of replays (the operations of struct ks_oprt_backend
 * the neutral drivers in src/op/rt call): the program's own launch, with
 * or without timing; draining the program's queues; flushing the caches;
 * and the replay object, an ordered list of captured launches with the
 * buffers they use.
 *
 * A captured launch runs a fresh kernel object made from the program by
 * name, with the arguments the program had set, so the program's own
 * kernel object (and the arguments it may set next) is never touched.
 * It runs on the program's queue when that has profiling (where the
 * program itself would time it), else on a queue of our own, in order and
 * with profiling, on the same context and device, so the program's
 * queues need no profiling (and launches kscope does not collect pay
 * nothing for it).  The program's buffers, queues and our kernels and
 * queues are retained while the replay lives.
 *
 * Backups are device-side copies (clEnqueueCopyBuffer into buffers of our
 * own): they work whatever host access the program's buffer allows
 * (CL_MEM_HOST_NO_ACCESS included) and cost no host memory or transfer on
 * a GPU.  When the device has no room for a copy, the backup is read into
 * host memory instead, if the buffer's host access allows it.
 *
 * Draining the program's queues before a replay uses a marker per queue
 * and a bounded wait, so that a command waiting for a user event the
 * program sets later cannot hang the program.  The launches of a range are
 * enqueued behind a user event opened once all are in, so a pass times
 * the device, not the host's enqueueing.
 *
 * Every call runs with the replay lock held exclusively: no program thread
 * launches, finishes or releases anything meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ocl_int.h"

#define R ks_ocl_real

/* One captured launch. */
struct rlaunch {
	struct ks_oprt_name *nm;
	uint64_t index;
	cl_command_queue q;               /* the program's (retained) */
	cl_command_queue rq;              /* runs the replay: q when it
	                                     profiles, else ours (retained) */
	cl_context ctx;
	cl_device_id dev;
	bool out_of_order, profiling_by_program;
	cl_program prog;
	struct ks_ocl_pinfo *pinfo;       /* a reference (never NULL) */
	cl_kernel k;                      /* ours: a fresh kernel */
	cl_uint dim;
	size_t offset[3], global[3], local[3];
	bool has_offset, has_local;
	cl_uint nargs;
	struct ks_ocl_carg *args;
	cl_event ev;                      /* of the current run */
};

/* One buffer the captured launches use. */
struct rbuf {
	cl_mem mem;                       /* retained */
	cl_command_queue q;               /* its copies go through this queue */
	cl_context ctx;
	size_t size;
	cl_mem_flags flags;
	cl_mem snap[2];                   /* device copies per slot */
	unsigned char *host[2];           /* host copies per slot */
};

struct rep {
	struct rlaunch *l;
	size_t nl, capl;
	struct rbuf *b;
	struct ks_oprt_buf *info;         /* parallel to b */
	size_t nb, capb;
};

/* ------------------------------------------------------------------ */
/* The program's own launch                                            */
/* ------------------------------------------------------------------ */

/* A queue of our own on ctx and dev: in order, with profiling. */
static cl_command_queue own_queue(cl_context ctx, cl_device_id dev, cl_int *e)
{
	if (R.clCreateCommandQueue)
		return R.clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, e);
	if (R.clCreateCommandQueueWithProperties) {
		const cl_queue_properties props[] = { CL_QUEUE_PROPERTIES,
						      CL_QUEUE_PROFILING_ENABLE, 0 };

		return R.clCreateCommandQueueWithProperties(ctx, dev, props, e);
	}
	*e = CL_INVALID_OPERATION;
	return NULL;
}

/* Whether q was made with profiling. */
static bool queue_profiles(cl_command_queue q)
{
	cl_command_queue_properties p = 0;

	return R.clGetCommandQueueInfo(q, CL_QUEUE_PROPERTIES, sizeof(p), &p, NULL) ==
		       CL_SUCCESS &&
	       (p & CL_QUEUE_PROFILING_ENABLE);
}

/* The context and device of queue q. */
static cl_int queue_where(cl_command_queue q, cl_context *ctx, cl_device_id *dev)
{
	cl_int e = R.clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(*ctx), ctx, NULL);

	if (e == CL_SUCCESS)
		e = R.clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof(*dev), dev, NULL);
	return e;
}

/* END - START of ev. */
static cl_int event_times(cl_event ev, cl_ulong *start, cl_ulong *end)
{
	cl_int e = R.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(*start),
					     start, NULL);

	if (e == CL_SUCCESS)
		e = R.clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(*end), end,
					      NULL);
	return e;
}

int ks_ocl_launch_original(void *launch, bool timed, uint64_t *ns, bool *have_ns)
{
	const struct ks_ocl_launch *o = launch;
	cl_event own = NULL, *evp = o->ev ? o->ev : &own;
	cl_command_queue q = o->q, ours = NULL;
	cl_context ctx;
	cl_device_id dev;
	cl_ulong s, e;
	cl_int r;

	*have_ns = false;
	*ns = 0;
	/* Timed on the program's queue when it profiles.  Otherwise, when the
	 * program asked for no event (which would name the queue), on a
	 * profiling queue of ours: every queue of the program is drained and
	 * the launch is waited for, so the order the program sees is the
	 * same.  Otherwise it is not timed. */
	if (timed && !queue_profiles(o->q)) {
		if (o->ev || queue_where(o->q, &ctx, &dev) != CL_SUCCESS ||
		    !(ours = own_queue(ctx, dev, &r)))
			timed = false;
		else
			q = ours;
	}
	if (!timed)
		return R.clEnqueueNDRangeKernel(o->q, o->k, o->dim, o->offset, o->global, o->local,
						o->nev, o->evs, o->ev);
	r = R.clEnqueueNDRangeKernel(q, o->k, o->dim, o->offset, o->global, o->local, o->nev,
				     o->evs, evp);
	if (r != CL_SUCCESS && ours) {
		/* As the program's own queue would have said. */
		R.clReleaseCommandQueue(ours);
		return R.clEnqueueNDRangeKernel(o->q, o->k, o->dim, o->offset, o->global,
						o->local, o->nev, o->evs, o->ev);
	}
	if (r != CL_SUCCESS)
		return r;
	if (R.clWaitForEvents(1, evp) == CL_SUCCESS && event_times(*evp, &s, &e) == CL_SUCCESS &&
	    e >= s) {
		*ns = e - s;
		*have_ns = true;
	}
	if (own)
		R.clReleaseEvent(own);
	if (ours)
		R.clReleaseCommandQueue(ours);
	return r;
}

/* ------------------------------------------------------------------ */
/* Draining and flushing                                               */
/* ------------------------------------------------------------------ */

/* How long draining may take before the replay gives up: commands that
 * wait for a user event the program sets only after this launch returns
 * would otherwise never finish, and the program would hang. */
#define DRAIN_LIMIT_NS (60 * 1000000000ull)

/* Whether ev is done (or failed, which is as final). */
static cl_int event_done(cl_event ev, bool *done)
{
	cl_int st = CL_QUEUED;
	cl_int e = R.clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);

	*done = e == CL_SUCCESS && st <= CL_COMPLETE;
	return e;
}

/* Waits for every event in evs (n of them) within DRAIN_LIMIT_NS. */
static int wait_bounded(const cl_event *evs, size_t n, struct ks_err *err)
{
	uint64_t start = ks_oprt_now();
	long pause_ns = 10000;

	for (size_t i = 0; i < n;) {
		bool done;
		cl_int e = event_done(evs[i], &done);

		if (e != CL_SUCCESS)
			return ks_ocl_err(err, "clGetEventInfo", e);
		if (done) {
			i++;
			continue;
		}
		if (ks_oprt_now() - start > DRAIN_LIMIT_NS)
			return ks_err_set(err, -ETIMEDOUT,
					  "the program's queued commands did not finish within %llu s "
					  "(waiting for a user event?): not replayed",
					  DRAIN_LIMIT_NS / 1000000000ull);
		nanosleep(&(struct timespec){ 0, pause_ns }, NULL);
		if (pause_ns < 1000000)
			pause_ns *= 2;
	}
	return 0;
}

int ks_ocl_quiesce(void *launch, struct ks_err *err)
{
	const struct ks_ocl_launch *o = launch;
	cl_command_queue *qs;
	cl_event *marks;
	size_t n, nm = 0;
	cl_int e = CL_SUCCESS;
	int rc = 0;

	/* A user event the program has not set yet can only be set after
	 * this launch returns: waiting for it here would never end. */
	for (cl_uint i = 0; o && i < o->nev; i++) {
		cl_command_type type = 0;
		bool done;

		if (R.clGetEventInfo(o->evs[i], CL_EVENT_COMMAND_TYPE, sizeof(type), &type,
				     NULL) == CL_SUCCESS && type == CL_COMMAND_USER &&
		    event_done(o->evs[i], &done) == CL_SUCCESS && !done)
			return ks_err_set(err, -EAGAIN,
					  "the launch waits for a user event the program has not "
					  "set yet: not replayed");
	}
	if (o && o->nev && (rc = wait_bounded(o->evs, o->nev, err)) != 0)
		return rc;
	/* Every queue the program holds, the launch's own included: their
	 * work would otherwise run during the passes, or touch the buffers
	 * being backed up.  A marker per queue, so the wait is bounded. */
	qs = ks_ocl_queues(&n);
	marks = calloc(n + 1, sizeof(*marks));
	if (!qs || !marks) {
		free(qs);
		free(marks);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	if (o) {
		bool known = false;

		for (size_t i = 0; i < n && !known; i++)
			known = qs[i] == o->q;
		if (!known)
			qs[n++] = o->q;
	}
	for (size_t i = 0; i < n && e == CL_SUCCESS; i++) {
		e = R.clEnqueueMarkerWithWaitList(qs[i], 0, NULL, &marks[nm]);
		if (e == CL_SUCCESS) {
			nm++;
			e = R.clFlush(qs[i]);
		}
	}
	if (e != CL_SUCCESS)
		rc = ks_ocl_err(err, "clEnqueueMarkerWithWaitList", e);
	else
		rc = wait_bounded(marks, nm, err);
	for (size_t i = 0; i < nm; i++)
		R.clReleaseEvent(marks[i]);
	free(marks);
	free(qs);
	return rc;
}

/* The host's last-level cache in bytes (the largest cache cpu0 lists). */
static uint64_t host_llc(void)
{
	uint64_t best = 0;

	for (int i = 0; i < 16; i++) {
		char path[96], buf[64], *end;
		unsigned long long v;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			v = strtoull(buf, &end, 10);
			if (*end == 'K')
				v <<= 10;
			else if (*end == 'M')
				v <<= 20;
			else if (*end == 'G')
				v <<= 30;
			if (v > best)
				best = v;
		}
		fclose(f);
	}
	return best;
}

/* The flush buffer of ctx, made on first use: at least twice the larger
 * of the device's global memory cache and the host's last-level cache
 * (so a CPU device's caches are covered either way), within the device's
 * largest allocation.  *own: not kept in a context record (to release
 * after use). */
static int flush_buffer(cl_context ctx, cl_device_id dev, cl_mem *fb, size_t *bytes,
			cl_uint *pattern, bool *own, struct ks_err *err)
{
	struct ks_ocl_context *c;
	cl_ulong dcache = 0, maxalloc = 0;
	uint64_t size;
	cl_int e;

	*own = false;
	pthread_mutex_lock(&ks_ocl_lock);
	c = ks_ocl_context_get(ctx);
	if (c && c->flush) {
		*fb = c->flush;
		*bytes = c->flush_bytes;
		*pattern = ++c->pattern;
		pthread_mutex_unlock(&ks_ocl_lock);
		return 0;
	}
	pthread_mutex_unlock(&ks_ocl_lock);
	R.clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof(dcache), &dcache, NULL);
	R.clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(maxalloc), &maxalloc, NULL);
	size = 2 * (dcache > host_llc() ? dcache : host_llc());
	if (size < (8u << 20))
		size = 8u << 20;
	if (maxalloc && size > maxalloc)
		size = maxalloc;
	*fb = R.clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS, (size_t)size,
			       NULL, &e);
	if (!*fb)
		return ks_ocl_err(err, "clCreateBuffer (the cache-flush buffer)", e);
	*bytes = (size_t)size;
	*pattern = 1;
	pthread_mutex_lock(&ks_ocl_lock);
	c = ks_ocl_context_get(ctx);
	if (c) {
		c->flush = *fb;
		c->flush_bytes = *bytes;
		c->pattern = 1;
	} else {
		*own = true;
	}
	pthread_mutex_unlock(&ks_ocl_lock);
	return 0;
}

static int flush_on(cl_command_queue q, cl_context ctx, cl_device_id dev, uint64_t *bytes,
		    struct ks_err *err)
{
	cl_mem fb = NULL;
	size_t size = 0;
	cl_uint pattern = 0;
	bool own = false;
	cl_int e;
	int rc = flush_buffer(ctx, dev, &fb, &size, &pattern, &own, err);

	if (rc)
		return rc;
	/* A new pattern each time: every byte is written again. */
	e = R.clEnqueueFillBuffer(q, fb, &pattern, sizeof(pattern), 0, size, 0, NULL, NULL);
	if (e == CL_SUCCESS)
		e = R.clFinish(q);
	if (own)
		R.clReleaseMemObject(fb);
	if (e != CL_SUCCESS)
		return ks_ocl_err(err, "clEnqueueFillBuffer (flushing the caches)", e);
	*bytes = size;
	return 0;
}

int ks_ocl_flush(void *launch, uint64_t *bytes, struct ks_err *err)
{
	const struct ks_ocl_launch *o = launch;
	cl_context ctx;
	cl_device_id dev;
	cl_int e = queue_where(o->q, &ctx, &dev);

	if (e != CL_SUCCESS)
		return ks_ocl_err(err, "clGetCommandQueueInfo", e);
	return flush_on(o->q, ctx, dev, bytes, err);
}

int ks_ocl_rep_flush(void *rep, uint64_t *bytes, struct ks_err *err)
{
	struct rep *r = rep;

	if (!r->nl)
		return 0;
	return flush_on(r->l[0].q, r->l[0].ctx, r->l[0].dev, bytes, err);
}

/* ------------------------------------------------------------------ */
/* Capturing launches                                                  */
/* ------------------------------------------------------------------ */

/* Releases what L holds (any part may be missing). */
static void rlaunch_free(struct rlaunch *L)
{
	if (L->k)
		R.clReleaseKernel(L->k);
	if (L->q)
		R.clReleaseCommandQueue(L->q);
	if (L->rq)
		R.clReleaseCommandQueue(L->rq);
	if (L->ev)
		R.clReleaseEvent(L->ev);
	for (cl_uint i = 0; L->args && i < L->nargs; i++)
		ks_ocl_arg_free(&L->args[i].val);
	free(L->args);
	pthread_mutex_lock(&ks_ocl_lock);
	ks_ocl_pinfo_unref(L->pinfo);
	pthread_mutex_unlock(&ks_ocl_lock);
	memset(L, 0, sizeof(*L));
}

void *ks_ocl_rep_new(void)
{
	return calloc(1, sizeof(struct rep));
}

static const char *const READ_ALL = "whole buffer (not write-only)";
static const char *const READ_NONE = "none (CL_MEM_WRITE_ONLY)";
static const char *const WRITE_CHANGED = "bytes changed by the launch";
static const char *const WRITE_CHANGED_RANGE = "bytes changed by the range";
static const char *const WRITE_UNKNOWN = "not measured (the replay stopped first)";
static const char *const WRITE_RO = "none (CL_MEM_READ_ONLY)";
static const char *const WRITE_CONSTANT = "none (__constant argument)";
static const char *const WRITE_CONST = "none (const-qualified pointer)";

/* The buffer mem in r (added when new); NULL when out of memory. */
static struct rbuf *buffer_of(struct rep *r, const struct ks_ocl_carg *a, cl_command_queue q,
			      cl_context ctx, unsigned launch, unsigned arg, size_t *at)
{
	struct rbuf *b;

	for (size_t i = 0; i < r->nb; i++)
		if (r->b[i].mem == a->mem) {
			*at = i;
			return &r->b[i];
		}
	if (r->nb == r->capb) {
		size_t cap = r->capb ? r->capb * 2 : 8;
		struct rbuf *nb = realloc(r->b, cap * sizeof(*nb));
		struct ks_oprt_buf *ni;

		if (!nb)
			return NULL;
		r->b = nb;
		ni = realloc(r->info, cap * sizeof(*ni));
		if (!ni)
			return NULL;
		r->info = ni;
		r->capb = cap;
	}
	if (R.clRetainMemObject(a->mem) != CL_SUCCESS)
		return NULL;
	*at = r->nb;
	b = &r->b[r->nb];
	memset(b, 0, sizeof(*b));
	b->mem = a->mem;
	b->q = q;
	b->ctx = ctx;
	b->size = a->mem_size;
	b->flags = a->mem_flags;
	r->info[r->nb] = (struct ks_oprt_buf){
		.launch = launch, .arg = arg, .bytes = a->mem_size,
		.read_basis = READ_NONE, .write_basis = WRITE_RO,
	};
	r->nb++;
	return b;
}

static const char *const sampler_type = "sampler_t";

/* Classifies argument i of the launch: its kind, and for memory objects
 * what the runtime says of them. */
static int arg_classify(struct ks_ocl_carg *a, cl_uint i, struct ks_err *err)
{
	const void *v = ks_ocl_arg_value(&a->val);
	cl_mem_object_type type = 0;
	cl_int e;
	bool memarg;

	if (!a->val.set) {
		a->kind = KS_OCL_ARG_UNSET;
		return ks_err_set(err, -EINVAL,
				  "argument %u was not set with clSetKernelArg (an SVM pointer, or "
				  "set before kscope saw the kernel): the kernel cannot be replayed",
				  i);
	}
	if (a->info.known) {
		if (a->info.address == CL_KERNEL_ARG_ADDRESS_LOCAL) {
			a->kind = KS_OCL_ARG_LOCAL;
			return 0;
		}
		if (strcmp(a->info.type_name, sampler_type) == 0) {
			a->kind = KS_OCL_ARG_SAMPLER;
			return 0;
		}
		memarg = a->info.address == CL_KERNEL_ARG_ADDRESS_GLOBAL ||
			 a->info.address == CL_KERNEL_ARG_ADDRESS_CONSTANT;
	} else {
		if (a->val.null_value) {
			a->kind = KS_OCL_ARG_LOCAL;
			return 0;
		}
		memarg = false;
		if (a->val.size == sizeof(cl_mem)) {
			cl_mem m;

			memcpy(&m, v, sizeof(m));
			pthread_mutex_lock(&ks_ocl_lock);
			memarg = m && ks_ocl_mem_get(m) != NULL;
			pthread_mutex_unlock(&ks_ocl_lock);
		}
	}
	if (!memarg) {
		a->kind = KS_OCL_ARG_SCALAR;
		return 0;
	}
	if (a->val.null_value || a->val.size != sizeof(cl_mem)) {
		a->kind = KS_OCL_ARG_NULL;
		return 0;
	}
	memcpy(&a->mem, v, sizeof(a->mem));
	if (!a->mem) {
		a->kind = KS_OCL_ARG_NULL;
		return 0;
	}
	if ((e = R.clGetMemObjectInfo(a->mem, CL_MEM_TYPE, sizeof(type), &type, NULL)) !=
	    CL_SUCCESS)
		return ks_ocl_err(err, "clGetMemObjectInfo", e);
	if (type != CL_MEM_OBJECT_BUFFER) {
		a->kind = KS_OCL_ARG_MEMOBJ;
		if (a->info.known && a->info.access == CL_KERNEL_ARG_ACCESS_READ_ONLY)
			return 0;
		return ks_err_set(err, -ENOTSUP,
				  "argument %u is an image or pipe the kernel may write: kernel "
				  "replay backs up buffers only", i);
	}
	a->kind = KS_OCL_ARG_BUFFER;
	if ((e = R.clGetMemObjectInfo(a->mem, CL_MEM_SIZE, sizeof(a->mem_size), &a->mem_size,
				      NULL)) != CL_SUCCESS ||
	    (e = R.clGetMemObjectInfo(a->mem, CL_MEM_FLAGS, sizeof(a->mem_flags), &a->mem_flags,
				      NULL)) != CL_SUCCESS)
		return ks_ocl_err(err, "clGetMemObjectInfo", e);
	if (R.clGetMemObjectInfo(a->mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(a->parent),
				 &a->parent, NULL) != CL_SUCCESS)
		a->parent = NULL;
	if (a->parent && R.clGetMemObjectInfo(a->mem, CL_MEM_OFFSET, sizeof(a->origin),
					      &a->origin, NULL) != CL_SUCCESS)
		a->origin = 0;
	return 0;
}

/* Adds the buffer of argument i of launch li to r and merges what the
 * argument says about reading and writing it. */
static int arg_buffer(struct rep *r, struct rlaunch *L, unsigned li, cl_uint i,
		      struct ks_err *err)
{
	const struct ks_ocl_carg *a = &L->args[i];
	struct ks_oprt_buf *info;
	size_t at;
	bool w = true;
	const char *why = NULL;

	if (!buffer_of(r, a, L->q, L->ctx, li, i, &at))
		return ks_err_set(err, -ENOMEM, "out of memory");
	info = &r->info[at];
	if (a->info.known && a->info.address == CL_KERNEL_ARG_ADDRESS_CONSTANT)
		w = false, why = WRITE_CONSTANT;
	else if (a->info.known && (a->info.type_qual & CL_KERNEL_ARG_TYPE_CONST))
		w = false, why = WRITE_CONST;
	else if (a->mem_flags & CL_MEM_READ_ONLY)
		w = false, why = WRITE_RO;
	if (w && !info->may_write) {
		info->may_write = true;
		info->write_basis = WRITE_UNKNOWN;
	} else if (!w && !info->may_write) {
		info->write_basis = why;
	}
	if (!(a->mem_flags & CL_MEM_WRITE_ONLY)) {
		info->may_read = true;
		info->read_basis = READ_ALL;
		info->bytes_read = info->bytes;
	}
	return 0;
}

/* A program record for a kernel whose program kscope did not see made:
 * what the runtime still says of it. */
static struct ks_ocl_pinfo *pinfo_query(cl_program prog)
{
	struct ks_ocl_pinfo *p = ks_ocl_pinfo_new();
	size_t n = 0;

	if (!p)
		return NULL;
	if (prog && R.clGetProgramInfo(prog, CL_PROGRAM_SOURCE, 0, NULL, &n) == CL_SUCCESS &&
	    n > 1) {
		p->data = malloc(n);
		if (p->data &&
		    R.clGetProgramInfo(prog, CL_PROGRAM_SOURCE, n, p->data, NULL) == CL_SUCCESS) {
			p->len = strnlen((const char *)p->data, n);
			p->origin = KS_OCL_SOURCE;
		}
	}
	return p;
}

int ks_ocl_rep_add(void *rep, void *launch, uint64_t index, struct ks_err *err)
{
	const struct ks_ocl_launch *o = launch;
	struct rep *r = rep;
	struct ks_ocl_kernel *k;
	struct ks_ocl_queue *q;
	struct rlaunch *L;
	cl_int e = CL_SUCCESS;
	int rc;

	if (r->nl == r->capl) {
		size_t cap = r->capl ? r->capl * 2 : 4;
		struct rlaunch *nl = realloc(r->l, cap * sizeof(*nl));

		if (!nl)
			return ks_err_set(err, -ENOMEM, "out of memory");
		r->l = nl;
		r->capl = cap;
	}
	L = &r->l[r->nl];
	memset(L, 0, sizeof(*L));
	L->index = index;
	L->dim = o->dim;
	for (cl_uint d = 0; d < o->dim; d++) {
		L->global[d] = o->global[d];
		L->offset[d] = o->offset ? o->offset[d] : 0;
		L->local[d] = o->local ? o->local[d] : 0;
	}
	L->has_offset = o->offset != NULL;
	L->has_local = o->local != NULL;

	/* What the records say: name, program, arguments, queue. */
	pthread_mutex_lock(&ks_ocl_lock);
	k = ks_ocl_kernel_get(o->k);
	if (!k)
		k = ks_ocl_kernel_lazy(o->k);
	if (k) {
		L->nm = k->nm;
		L->prog = k->prog;
		L->pinfo = k->pinfo;
		ks_ocl_pinfo_ref(L->pinfo);
		L->nargs = k->nargs;
		L->args = calloc(k->nargs ? k->nargs : 1, sizeof(*L->args));
		for (cl_uint i = 0; L->args && i < k->nargs; i++)
			if (k->args[i].set &&
			    ks_ocl_arg_set(&L->args[i].val, k->args[i].size,
					   ks_ocl_arg_value(&k->args[i])) != 0)
				L->args[i].val.set = false;
	}
	q = ks_ocl_queue_get(o->q);
	if (q) {
		L->ctx = q->ctx;
		L->dev = q->dev;
		L->out_of_order = q->out_of_order;
		L->profiling_by_program = q->profiling_by_program;
	}
	pthread_mutex_unlock(&ks_ocl_lock);
	if (!k || !L->nm) {
		rlaunch_free(L);
		return ks_err_set(err, -ENOENT, "the kernel is not known to kscope");
	}
	if (!L->args)
		goto nomem;
	if (!q && (e = queue_where(o->q, &L->ctx, &L->dev)) != CL_SUCCESS)
		goto cl_fail;
	if (!L->prog &&
	    (e = R.clGetKernelInfo(o->k, CL_KERNEL_PROGRAM, sizeof(L->prog), &L->prog, NULL)) !=
		    CL_SUCCESS)
		goto cl_fail;
	if (!L->pinfo && !(L->pinfo = pinfo_query(L->prog)))
		goto nomem;
	if ((e = R.clRetainCommandQueue(o->q)) != CL_SUCCESS)
		goto cl_fail;
	L->q = o->q;
	r->nl++;                          /* from here, rep_free cleans up L */

	/* The replay's queue: the program's own when it profiles, else ours
	 * (the one of an earlier launch from the same queue, or a new one). */
	if (queue_profiles(L->q) && R.clRetainCommandQueue(L->q) == CL_SUCCESS)
		L->rq = L->q;
	for (size_t i = 0; i + 1 < r->nl && !L->rq; i++)
		if (r->l[i].q == L->q && R.clRetainCommandQueue(r->l[i].rq) == CL_SUCCESS)
			L->rq = r->l[i].rq;
	if (!L->rq && !(L->rq = own_queue(L->ctx, L->dev, &e)))
		return ks_ocl_err(err, "clCreateCommandQueue (the replay's queue)", e);

	/* The fresh kernel and its arguments. */
	L->k = R.clCreateKernel(L->prog, L->nm->name, &e);
	if (!L->k)
		return ks_ocl_err(err, "clCreateKernel (the replay's kernel)", e);
	for (cl_uint i = 0; i < L->nargs; i++)
		ks_ocl_arginfo_get(L->k, i, &L->args[i].info);
	for (cl_uint i = 0; i < L->nargs; i++) {
		struct ks_ocl_carg *a = &L->args[i];

		if ((rc = arg_classify(a, i, err)) != 0)
			return rc;
		e = R.clSetKernelArg(L->k, i, a->val.size, ks_ocl_arg_value(&a->val));
		if (e != CL_SUCCESS) {
			char what[64];

			snprintf(what, sizeof(what), "clSetKernelArg (argument %u)", i);
			return ks_ocl_err(err, what, e);
		}
		if (a->kind == KS_OCL_ARG_BUFFER &&
		    (rc = arg_buffer(r, L, (unsigned)(r->nl - 1), i, err)) != 0)
			return rc;
	}
	return 0;
nomem:
	rlaunch_free(L);
	return ks_err_set(err, -ENOMEM, "out of memory");
cl_fail:
	rlaunch_free(L);
	return ks_ocl_err(err, "capturing the launch", e);
}

/* ------------------------------------------------------------------ */
/* Backups                                                             */
/* ------------------------------------------------------------------ */

static bool host_readable(cl_mem_flags f)
{
	return !(f & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS));
}

static bool host_writable(cl_mem_flags f)
{
	return !(f & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS));
}

/* Copies b into slot: on the device, else into host memory. */
static int backup_one(struct rbuf *b, int slot, struct ks_err *err)
{
	cl_int e;

	b->snap[slot] = R.clCreateBuffer(b->ctx, CL_MEM_READ_WRITE, b->size, NULL, &e);
	if (b->snap[slot]) {
		e = R.clEnqueueCopyBuffer(b->q, b->mem, b->snap[slot], 0, 0, b->size, 0, NULL,
					  NULL);
		if (e == CL_SUCCESS)
			e = R.clFinish(b->q);
		if (e == CL_SUCCESS)
			return 0;
		R.clReleaseMemObject(b->snap[slot]);
		b->snap[slot] = NULL;
		return ks_ocl_err(err, "clEnqueueCopyBuffer (backing up a buffer)", e);
	}
	if (!host_readable(b->flags) || !host_writable(b->flags))
		return ks_ocl_err(err, "clCreateBuffer (a backup copy)", e);
	b->host[slot] = malloc(b->size);
	if (!b->host[slot])
		return ks_err_set(err, -ENOMEM, "out of memory for a %zu-byte backup", b->size);
	e = R.clEnqueueReadBuffer(b->q, b->mem, CL_TRUE, 0, b->size, b->host[slot], 0, NULL, NULL);
	if (e != CL_SUCCESS) {
		free(b->host[slot]);
		b->host[slot] = NULL;
		return ks_ocl_err(err, "clEnqueueReadBuffer (backing up a buffer)", e);
	}
	return 0;
}

int ks_ocl_rep_backup(void *rep, int slot, struct ks_err *err)
{
	struct rep *r = rep;
	int rc;

	for (size_t i = 0; i < r->nb; i++) {
		struct rbuf *b = &r->b[i];

		if (!r->info[i].may_write || b->snap[slot] || b->host[slot])
			continue;
		if ((rc = backup_one(b, slot, err)) != 0)
			return rc;
		r->info[i].backed_up = true;
	}
	return 0;
}

int ks_ocl_rep_restore(void *rep, int slot, struct ks_err *err)
{
	struct rep *r = rep;
	cl_int e;

	for (size_t i = 0; i < r->nb; i++) {
		struct rbuf *b = &r->b[i];

		if (b->snap[slot])
			e = R.clEnqueueCopyBuffer(b->q, b->snap[slot], b->mem, 0, 0, b->size, 0,
						  NULL, NULL);
		else if (b->host[slot])
			e = R.clEnqueueWriteBuffer(b->q, b->mem, CL_FALSE, 0, b->size,
						   b->host[slot], 0, NULL, NULL);
		else
			continue;
		if (e != CL_SUCCESS)
			return ks_ocl_err(err, "restoring a buffer", e);
	}
	/* Every queue a restore went through. */
	for (size_t i = 0; i < r->nb; i++) {
		struct rbuf *b = &r->b[i];
		bool seen = false;

		if (!b->snap[slot] && !b->host[slot])
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = r->b[k].q == b->q && (r->b[k].snap[slot] || r->b[k].host[slot]);
		if (!seen && (e = R.clFinish(b->q)) != CL_SUCCESS)
			return ks_ocl_err(err, "clFinish (restoring buffers)", e);
	}
	return 0;
}

/* Reads b's current content into host memory (owned by the caller). */
static int read_now(struct rbuf *b, unsigned char **out, struct ks_err *err)
{
	cl_mem src = b->mem, tmp = NULL;
	cl_int e;

	*out = malloc(b->size);
	if (!*out)
		return ks_err_set(err, -ENOMEM, "out of memory");
	if (!host_readable(b->flags)) {
		tmp = R.clCreateBuffer(b->ctx, CL_MEM_READ_WRITE, b->size, NULL, &e);
		if (!tmp)
			goto fail;
		e = R.clEnqueueCopyBuffer(b->q, b->mem, tmp, 0, 0, b->size, 0, NULL, NULL);
		if (e != CL_SUCCESS)
			goto fail;
		src = tmp;
	}
	e = R.clEnqueueReadBuffer(b->q, src, CL_TRUE, 0, b->size, *out, 0, NULL, NULL);
	if (e != CL_SUCCESS)
		goto fail;
	if (tmp)
		R.clReleaseMemObject(tmp);
	return 0;
fail:
	if (tmp)
		R.clReleaseMemObject(tmp);
	free(*out);
	*out = NULL;
	return ks_ocl_err(err, "reading a buffer back", e);
}

int ks_ocl_rep_diff(void *rep, int slot, struct ks_err *err)
{
	struct rep *r = rep;
	int rc;

	for (size_t i = 0; i < r->nb; i++) {
		struct rbuf *b = &r->b[i];
		unsigned char *now = NULL, *then = b->host[slot], *tmp = NULL;
		uint64_t diff = 0;
		cl_int e;

		if (!b->snap[slot] && !b->host[slot])
			continue;
		if ((rc = read_now(b, &now, err)) != 0)
			return rc;
		if (!then) {
			tmp = malloc(b->size);
			if (!tmp) {
				free(now);
				return ks_err_set(err, -ENOMEM, "out of memory");
			}
			e = R.clEnqueueReadBuffer(b->q, b->snap[slot], CL_TRUE, 0, b->size, tmp, 0,
						  NULL, NULL);
			if (e != CL_SUCCESS) {
				free(now);
				free(tmp);
				return ks_ocl_err(err, "reading a backup", e);
			}
			then = tmp;
		}
		for (size_t k = 0; k < b->size; k++)
			diff += now[k] != then[k];
		free(now);
		free(tmp);
		r->info[i].bytes_written = diff;
		r->info[i].written_known = true;
		r->info[i].write_basis = r->nl > 1 ? WRITE_CHANGED_RANGE : WRITE_CHANGED;
	}
	return 0;
}

struct ks_oprt_buf *ks_ocl_rep_bufs(void *rep, size_t *n)
{
	struct rep *r = rep;

	*n = r->nb;
	return r->info;
}

/* ------------------------------------------------------------------ */
/* Running                                                             */
/* ------------------------------------------------------------------ */

/* Whether every launch of r is in one context (so one event can gate
 * them all). */
static bool one_context(const struct rep *r)
{
	for (size_t i = 1; i < r->nl; i++)
		if (r->l[i].ctx != r->l[0].ctx)
			return false;
	return true;
}

int ks_ocl_rep_run(void *rep, uint64_t *start_ns, uint64_t *dur_ns, struct ks_err *err)
{
	struct rep *r = rep;
	cl_ulong s0 = 0, s, e_end = 0;
	cl_int e = CL_SUCCESS;
	const char *what = "clEnqueueNDRangeKernel";
	cl_event gate = NULL;
	int rc = 0;

	/* Several launches (a range): all are enqueued behind a user event
	 * that is set once the last is in, so that the time from the first
	 * START to the last END is the device's, not the host's enqueueing. */
	if (r->nl > 1 && one_context(r)) {
		gate = R.clCreateUserEvent(r->l[0].ctx, &e);
		if (!gate)
			return ks_ocl_err(err, "clCreateUserEvent", e);
	}
	for (size_t i = 0; i < r->nl; i++) {
		struct rlaunch *L = &r->l[i];
		const cl_event *wait = NULL;
		cl_uint nwait = 0;

		if (i == 0 && gate) {
			wait = &gate;
			nwait = 1;
		} else if (i > 0) {
			if (r->l[i - 1].ctx == L->ctx) {
				/* In order, even across queues. */
				wait = &r->l[i - 1].ev;
				nwait = 1;
			} else if ((e = R.clWaitForEvents(1, &r->l[i - 1].ev)) != CL_SUCCESS) {
				what = "clWaitForEvents";
				break;
			}
		}
		if (ks_oprt_test_fail_replay(L->nm->name)) {
			e = CL_OUT_OF_RESOURCES;   /* the test hook (oprt_main.c) */
			break;
		}
		e = R.clEnqueueNDRangeKernel(L->rq, L->k, L->dim, L->has_offset ? L->offset : NULL,
					     L->global, L->has_local ? L->local : NULL, nwait, wait,
					     &L->ev);
		if (e != CL_SUCCESS) {
			L->ev = NULL;
			break;
		}
		if (gate)
			R.clFlush(L->rq);
	}
	if (gate) {
		/* Opened even after a failure, so what was enqueued can finish. */
		R.clSetUserEventStatus(gate, CL_COMPLETE);
		R.clReleaseEvent(gate);
	}
	if (e == CL_SUCCESS && r->nl) {
		what = "clWaitForEvents";
		e = R.clWaitForEvents(1, &r->l[r->nl - 1].ev);
		if (e == CL_SUCCESS) {
			what = "clGetEventProfilingInfo";
			e = event_times(r->l[0].ev, &s0, &s);
			if (e == CL_SUCCESS)
				e = event_times(r->l[r->nl - 1].ev, &s, &e_end);
		}
	} else if (e != CL_SUCCESS) {
		/* Let what was enqueued finish before anything is restored. */
		for (size_t i = 0; i < r->nl; i++)
			if (r->l[i].ev)
				R.clWaitForEvents(1, &r->l[i].ev);
	}
	for (size_t i = 0; i < r->nl; i++)
		if (r->l[i].ev) {
			R.clReleaseEvent(r->l[i].ev);
			r->l[i].ev = NULL;
		}
	if (e != CL_SUCCESS)
		rc = ks_ocl_err(err, what, e);
	else if (e_end < s0)
		rc = ks_err_set(err, -EIO, "the runtime's event times run backwards");
	*start_ns = s0;
	*dur_ns = rc ? 0 : e_end - s0;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Describing and freeing                                              */
/* ------------------------------------------------------------------ */

static void work_json(const struct rlaunch *L, struct ks_oprt_json *j)
{
	ks_oprt_json_obj_open(j, "work");
	ks_oprt_json_u64(j, "dim", L->dim);
	ks_oprt_json_arr_open(j, "global");
	for (cl_uint d = 0; d < L->dim; d++)
		ks_oprt_json_u64(j, NULL, L->global[d]);
	ks_oprt_json_arr_close(j);
	if (L->has_local) {
		ks_oprt_json_arr_open(j, "local");
		for (cl_uint d = 0; d < L->dim; d++)
			ks_oprt_json_u64(j, NULL, L->local[d]);
		ks_oprt_json_arr_close(j);
	} else {
		ks_oprt_json_null(j, "local");
	}
	if (L->has_offset) {
		ks_oprt_json_arr_open(j, "offset");
		for (cl_uint d = 0; d < L->dim; d++)
			ks_oprt_json_u64(j, NULL, L->offset[d]);
		ks_oprt_json_arr_close(j);
	} else {
		ks_oprt_json_null(j, "offset");
	}
	ks_oprt_json_obj_close(j);
}

void ks_ocl_rep_describe(void *rep, bool range, struct ks_oprt_json *j)
{
	struct rep *r = rep;
	const struct rlaunch *L0 = r->nl ? &r->l[0] : NULL;

	if (!L0)
		return;
	ks_ocl_describe_device(L0->dev, j);
	ks_ocl_describe_program(L0->pinfo, L0->dev, j);
	if (!range) {
		work_json(L0, j);
		ks_ocl_describe_args(L0->args, L0->nargs, j);
	}
	ks_oprt_json_obj_open(j, "queue");
	ks_oprt_json_bool(j, "out_of_order", L0->out_of_order);
	ks_oprt_json_bool(j, "profiling_by_program", L0->profiling_by_program);
	ks_oprt_json_obj_close(j);
	if (!range)
		return;
	ks_oprt_json_arr_open(j, "launches");
	for (size_t i = 0; i < r->nl; i++) {
		const struct rlaunch *L = &r->l[i];

		ks_oprt_json_obj_open(j, NULL);
		ks_oprt_json_str(j, "name", L->nm->name);
		ks_oprt_json_u64(j, "index", L->index);
		work_json(L, j);
		ks_ocl_describe_args(L->args, L->nargs, j);
		ks_oprt_json_obj_close(j);
	}
	ks_oprt_json_arr_close(j);
}

void ks_ocl_rep_program(void *rep, const char **file, const void **data, size_t *len)
{
	struct rep *r = rep;

	*file = NULL;
	*data = NULL;
	*len = 0;
	if (r->nl)
		ks_ocl_program_file(r->l[0].pinfo, r->l[0].dev, file, data, len);
}

void ks_ocl_rep_free(void *rep)
{
	struct rep *r = rep;

	if (!r)
		return;
	for (size_t i = 0; i < r->nb; i++) {
		struct rbuf *b = &r->b[i];

		for (int s = 0; s < 2; s++) {
			if (b->snap[s])
				R.clReleaseMemObject(b->snap[s]);
			free(b->host[s]);
		}
		R.clReleaseMemObject(b->mem);
	}
	for (size_t i = 0; i < r->nl; i++)
		rlaunch_free(&r->l[i]);
	free(r->l);
	free(r->b);
	free(r->info);
	free(r);
}
