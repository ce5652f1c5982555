/*
 * The replay operations of kscope op's CUDA backend (struct
 * ks_oprt_backend, oprt.h), the CUDA counterpart of ocl_replay.c:
 * capturing a launch (its packed parameter image, copied from the
 * program's kernelParams or `extra` buffer, and the allocations its
 * parameters point into), backups of those allocations in device memory,
 * the L2 flush, timed passes with CUDA events, counting the bytes a
 * pass wrote, and one more run under CUPTI's counters (cuda_cupti.c).
 * Checked against ncu on an H200 by tests/gpu/run.sh (docs/performance.md).
 *
 * Simplifications, each said in docs/op.md: every allocation a parameter
 * points into is taken as read and possibly written (CUDA tells nothing
 * of access); times come from CUDA events (resolution about 0.5 us)
 * queued behind a hold kernel, and each pass's start is the host's clock; the program's memory and the
 * replays use the program's current context and the launch's stream,
 * and a pass waits for the whole context (cuCtxSynchronize) before it
 * starts, as a replay must run alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"
#include "cuda_ptx.h"

#define R ks_cu_real

static const char *const READ_ALL = "whole allocation (CUDA gives no access qualifiers)";
static const char *const WRITE_MAYBE = "not measured (the replay stopped first)";
static const char *const WRITE_CHANGED = "bytes changed by the launch";
static const char *const READ_NOT_ARG = "not known: reached by no argument (--backup all)";

/* One captured launch. */
struct rlaunch {
	enum ks_cu_launch_kind kind;
	bool ptsz;
	CUfunction f;
	char *driver_name;                /* owned copy */
	const char *name;                 /* interned base name */
	unsigned grid[3], block[3], shmem;
	CUstream stream;
	CUlaunchConfig config;            /* KS_CU_LAUNCH_EX, attrs owned */
	uint64_t index;
	unsigned nparams;
	struct ks_cu_param *params;       /* owned */
	unsigned char *image;             /* owned, image_len bytes */
	uint32_t image_len;
	void **argv;                      /* into image, one per parameter */
	struct ks_cu_ptr *ptrs;           /* owned */
	size_t nptrs;
};

/* One allocation a replay backs up. */
struct rbuf {
	uint64_t base, size;
	enum ks_cu_alloc_kind kind;
	CUdeviceptr copy[2];              /* per slot; 0: none */
};

struct rep {
	struct rlaunch *l;
	size_t nl;
	struct rbuf *b;
	struct ks_oprt_buf *pub;          /* parallel to b */
	size_t nb;
	CUevent ev[2];
};

static int cu_fail(struct ks_err *err, const char *call, CUresult r)
{
	return ks_err_set(err, -EIO, "%s returned %s", call, ks_cu_status_name(r));
}

/* ------------------------------------------------------------------ */
/* The program's launch                                                */
/* ------------------------------------------------------------------ */

int ks_cu_quiesce(void *launch, struct ks_err *err)
{
	CUresult r;

	(void)launch;
	r = R.cuCtxSynchronize();
	return r == CUDA_SUCCESS ? 0 : cu_fail(err, "cuCtxSynchronize", r);
}

/* The hold: a one-thread kernel that spins on the GPU's global timer for
 * HOLD_NS, launched before a pass's first event so that the event, the
 * launch and the last event are all queued before the GPU reaches them.
 * Without it the first event completes at once on an idle stream and the
 * pass includes the host's time to submit the launch: on an H200, passes
 * read about 5 us above ncu's gpu__time_duration without it, and 1.1 to
 * 1.7 us above with it (docs/performance.md).  PTX (cuda_ptx.h),
 * compiled by the driver for the device in the program's context. */
#define HOLD_NS 50000u

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
enum { K_HOLD, K_FLUSH_READ, K_N };
static const char *const kernel_names[K_N] = { "ks_hold", "ks_flush_read" };
static CUcontext hold_ctx;
static CUfunction hold_fns[K_N];

/* kscope's kernel `which` in the current context; NULL when it cannot be
 * had (a pass is then timed without the hold, the flush only writes). */
static CUfunction hold_kernel(int which)
{
	CUcontext ctx = NULL;
	CUmodule m = NULL;
	CUfunction f;

	if (!R.cuCtxGetCurrent || !R.cuModuleGetFunction ||
	    R.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
		return NULL;
	pthread_mutex_lock(&hold_lock);
	if (ctx != hold_ctx) {
		hold_ctx = ctx;
		memset(hold_fns, 0, sizeof(hold_fns));
		if (R.cuModuleLoadData(&m, ks_cu_ptx) == CUDA_SUCCESS)
			for (int k = 0; k < K_N; k++)
				if (R.cuModuleGetFunction(&hold_fns[k], m, kernel_names[k]) !=
				    CUDA_SUCCESS)
					hold_fns[k] = NULL;
	}
	f = hold_fns[which];
	pthread_mutex_unlock(&hold_lock);
	return f;
}

static bool hold(CUstream stream, bool ptsz)
{
	CUfunction f = hold_kernel(K_HOLD);
	unsigned long long ns = HOLD_NS;
	void *args[] = { &ns };

	return f && (ptsz ? R.cuLaunchKernel_ptsz : R.cuLaunchKernel)(
			    f, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL) == CUDA_SUCCESS;
}

/* Events around the launch on its stream, behind the hold; *ns from
 * cuEventElapsedTime (milliseconds as a float, about 0.5 us resolution). */
int ks_cu_launch_original(void *launch, bool timed, uint64_t *ns, bool *have_ns)
{
	const struct ks_cu_launch *l = launch;
	CUevent e0 = NULL, e1 = NULL;
	CUresult r;
	float ms = 0;

	*have_ns = false;
	if (!timed || R.cuEventCreate(&e0, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
	    R.cuEventCreate(&e1, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
	    (hold(l->stream, l->ptsz), R.cuEventRecord(e0, l->stream) != CUDA_SUCCESS)) {
		r = ks_cu_forward(l);
		goto out;
	}
	r = ks_cu_forward(l);
	if (r == CUDA_SUCCESS && R.cuEventRecord(e1, l->stream) == CUDA_SUCCESS &&
	    R.cuEventSynchronize(e1) == CUDA_SUCCESS &&
	    R.cuEventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS) {
		*ns = (uint64_t)((double)ms * 1e6);
		*have_ns = true;
	}
out:
	if (e0)
		R.cuEventDestroy_v2(e0);
	if (e1)
		R.cuEventDestroy_v2(e1);
	return (int)r;
}

/* ------------------------------------------------------------------ */
/* The flush                                                           */
/* ------------------------------------------------------------------ */

static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static CUdeviceptr flush_buf;
static uint64_t flush_bytes;
static unsigned char flush_value;

/* Reads three times the device's L2 (at least 64 MiB) with
 * ks_flush_read, so that no line of the program's data is left in L2 and
 * what is left is clean: a pass then neither finds its data in L2 nor
 * pays for writing back lines it did not write, as after ncu's cache
 * control.  The buffer is made once (filled with one byte) and kept;
 * without kscope's kernels, the flush writes it instead. */
int ks_cu_flush(void *launch, uint64_t *bytes, struct ks_err *err)
{
	CUdevice dev;
	CUfunction f;
	CUresult r;
	int l2 = 0, rc = 0;

	(void)launch;
	pthread_mutex_lock(&flush_lock);
	if (!flush_buf) {
		if ((r = R.cuCtxGetDevice(&dev)) != CUDA_SUCCESS ||
		    (r = R.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev)) !=
			    CUDA_SUCCESS) {
			rc = cu_fail(err, "cuDeviceGetAttribute(L2_CACHE_SIZE)", r);
			goto out;
		}
		flush_bytes = 3 * (uint64_t)l2;
		if (flush_bytes < (64u << 20))
			flush_bytes = 64u << 20;
		if ((r = R.cuMemAlloc_v2(&flush_buf, flush_bytes)) != CUDA_SUCCESS) {
			flush_buf = 0;
			rc = cu_fail(err, "cuMemAlloc (the flush buffer)", r);
			goto out;
		}
		flush_value = 0x5a;
		if ((r = R.cuMemsetD8_v2(flush_buf, flush_value, flush_bytes)) != CUDA_SUCCESS) {
			rc = cu_fail(err, "cuMemsetD8 (the flush buffer)", r);
			goto out;
		}
	}
	if ((f = hold_kernel(K_FLUSH_READ))) {
		CUdeviceptr buf = flush_buf;
		unsigned long long n = flush_bytes / 16;
		void *args[] = { &buf, &n };

		r = R.cuLaunchKernel(f, 1024, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
	} else {
		r = R.cuMemsetD8_v2(flush_buf, ++flush_value, flush_bytes);
	}
	if (r != CUDA_SUCCESS || (r = R.cuCtxSynchronize()) != CUDA_SUCCESS) {
		rc = cu_fail(err, "the flush", r);
		goto out;
	}
	*bytes = flush_bytes;
out:
	pthread_mutex_unlock(&flush_lock);
	return rc;
}

int ks_cu_rep_flush(void *rep, uint64_t *bytes, struct ks_err *err)
{
	(void)rep;
	return ks_cu_flush(NULL, bytes, err);
}

/* At exit the driver may be gone already: the buffer is left to the
 * process's end. */
void ks_cu_replay_fini(void)
{
	flush_buf = 0;
}

/* ------------------------------------------------------------------ */
/* Capture                                                             */
/* ------------------------------------------------------------------ */

void *ks_cu_rep_new(void)
{
	return calloc(1, sizeof(struct rep));
}

/* The parameter image of the program's launch into rl->image. */
static int copy_image(struct rlaunch *rl, const struct ks_cu_launch *l, struct ks_err *err)
{
	if (l->params) {
		for (unsigned i = 0; i < rl->nparams; i++)
			if (l->params[i])
				memcpy(rl->image + rl->params[i].offset, l->params[i],
				       rl->params[i].size);
		return 0;
	}
	if (l->extra) {
		const void *buf = NULL;
		size_t len = 0;

		for (void **e = l->extra; *e != CU_LAUNCH_PARAM_END; e += 2) {
			if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER)
				buf = e[1];
			else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE && e[1])
				len = *(const size_t *)e[1];
			else
				return ks_err_set(err, -ENOTSUP, "an `extra` option kscope does "
						  "not know");
		}
		if (buf)
			memcpy(rl->image, buf, len < rl->image_len ? len : rl->image_len);
		return 0;
	}
	return rl->nparams ? ks_err_set(err, -EINVAL, "the launch gave no parameters") : 0;
}

static int add_buffer(struct rep *rep, const struct ks_cu_ptr *p, unsigned launch)
{
	struct rbuf *b;
	struct ks_oprt_buf *pub;

	for (size_t i = 0; i < rep->nb; i++)
		if (rep->b[i].base == p->base)
			return 0;
	b = realloc(rep->b, (rep->nb + 1) * sizeof(*b));
	if (!b)
		return -ENOMEM;
	rep->b = b;
	pub = realloc(rep->pub, (rep->nb + 1) * sizeof(*pub));
	if (!pub)
		return -ENOMEM;
	rep->pub = pub;
	rep->b[rep->nb] = (struct rbuf){ .base = p->base, .size = p->size, .kind = p->kind };
	rep->pub[rep->nb] = (struct ks_oprt_buf){
		.launch = launch, .arg = p->param, .bytes = p->size, .may_read = true,
		.may_write = true, .bytes_read = p->size, .read_basis = READ_ALL,
		.write_basis = WRITE_MAYBE,
	};
	rep->nb++;
	return 0;
}

/* --backup all: every live allocation the arguments do not point into,
 * backed up and restored like theirs, and diffed for the bytes written;
 * none is counted as read. */
static int add_others(struct rep *rep, unsigned launch)
{
	struct ks_cu_alloc *a = NULL;
	size_t n = ks_cu_alloc_snapshot(&a);
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		struct ks_cu_ptr p = { .base = a[i].base, .size = a[i].size, .kind = a[i].kind };
		size_t before = rep->nb;

		rc = add_buffer(rep, &p, launch);
		if (!rc && rep->nb > before) {
			struct ks_oprt_buf *pub = &rep->pub[rep->nb - 1];

			pub->not_arg = true;
			pub->base = a[i].base;
			pub->arg = 0;
			pub->may_read = false;
			pub->bytes_read = 0;
			pub->read_basis = READ_NOT_ARG;
		}
	}
	free(a);
	return rc;
}

int ks_cu_rep_add(void *rep_, void *launch, uint64_t index, struct ks_err *err)
{
	struct rep *rep = rep_;
	const struct ks_cu_launch *l = launch;
	const struct ks_cu_func *f = l->func;
	struct rlaunch *rl, *grown;
	long n;
	int rc;

	if (!f->have_params)
		return ks_err_set(err, -ENOTSUP, "cannot capture the arguments of %s: %s",
				  f->name->name, f->params_why);
	grown = realloc(rep->l, (rep->nl + 1) * sizeof(*grown));
	if (!grown)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rep->l = grown;
	rl = &rep->l[rep->nl++];
	*rl = (struct rlaunch){
		.kind = l->kind, .ptsz = l->ptsz, .f = l->f, .name = f->name->name,
		.shmem = l->shmem, .stream = l->stream, .index = index, .nparams = f->nparams,
		.image_len = f->image_len,
	};
	memcpy(rl->grid, l->grid, sizeof(rl->grid));
	memcpy(rl->block, l->block, sizeof(rl->block));
	rl->driver_name = strdup(f->driver_name ? f->driver_name : "");
	rl->params = malloc((f->nparams + 1) * sizeof(*rl->params));
	rl->image = calloc(1, f->image_len + 8u);
	rl->argv = calloc(f->nparams + 1, sizeof(*rl->argv));
	if (!rl->driver_name || !rl->params || !rl->image || !rl->argv)
		return ks_err_set(err, -ENOMEM, "out of memory");
	memcpy(rl->params, f->params, f->nparams * sizeof(*rl->params));
	for (unsigned i = 0; i < f->nparams; i++)
		rl->argv[i] = rl->image + f->params[i].offset;
	if (l->kind == KS_CU_LAUNCH_EX) {
		rl->config = *l->config;
		rl->config.attrs = NULL;
		if (l->config->numAttrs) {
			rl->config.attrs = malloc(l->config->numAttrs * sizeof(CUlaunchAttribute));
			if (!rl->config.attrs)
				return ks_err_set(err, -ENOMEM, "out of memory");
			memcpy(rl->config.attrs, l->config->attrs,
			       l->config->numAttrs * sizeof(CUlaunchAttribute));
		}
	}
	if ((rc = copy_image(rl, l, err)) != 0)
		return rc;
	n = ks_cu_params_classify(rl->params, rl->nparams, rl->image, rl->image_len,
				  ks_cu_alloc_lookup, NULL, NULL, 0);
	if (n < 0)
		return ks_err_set(err, -EINVAL, "the driver's parameter layout of %s is "
				  "inconsistent", rl->name);
	rl->ptrs = calloc((size_t)n + 1, sizeof(*rl->ptrs));
	if (!rl->ptrs)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rl->nptrs = (size_t)ks_cu_params_classify(rl->params, rl->nparams, rl->image,
						  rl->image_len, ks_cu_alloc_lookup, NULL,
						  rl->ptrs, (size_t)n);
	if (rl->nptrs > (size_t)n)
		rl->nptrs = (size_t)n;    /* freed meanwhile by another thread */
	for (size_t i = 0; i < rl->nptrs; i++)
		if (add_buffer(rep, &rl->ptrs[i], (unsigned)(rep->nl - 1)) != 0)
			return ks_err_set(err, -ENOMEM, "out of memory");
	if (ks_oprt_backup_all() && add_others(rep, (unsigned)(rep->nl - 1)) != 0)
		return ks_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Backups                                                             */
/* ------------------------------------------------------------------ */

int ks_cu_rep_backup(void *rep_, int slot, struct ks_err *err)
{
	struct rep *rep = rep_;
	CUresult r;

	for (size_t i = 0; i < rep->nb; i++) {
		struct rbuf *b = &rep->b[i];

		if (b->copy[slot])
			continue;
		if ((r = R.cuMemAlloc_v2(&b->copy[slot], b->size)) != CUDA_SUCCESS) {
			b->copy[slot] = 0;
			return cu_fail(err, "cuMemAlloc (a backup)", r);
		}
		if ((r = R.cuMemcpyDtoD_v2(b->copy[slot], b->base, b->size)) != CUDA_SUCCESS)
			return cu_fail(err, "cuMemcpyDtoD (a backup)", r);
		rep->pub[i].backed_up = true;
	}
	/* cuMemcpyDtoD may return before the copy is done. */
	r = R.cuCtxSynchronize();
	return r == CUDA_SUCCESS ? 0 : cu_fail(err, "cuCtxSynchronize", r);
}

int ks_cu_rep_restore(void *rep_, int slot, struct ks_err *err)
{
	struct rep *rep = rep_;
	CUresult r;

	for (size_t i = 0; i < rep->nb; i++) {
		struct rbuf *b = &rep->b[i];

		if (b->copy[slot] &&
		    (r = R.cuMemcpyDtoD_v2(b->base, b->copy[slot], b->size)) != CUDA_SUCCESS)
			return cu_fail(err, "cuMemcpyDtoD (a restore)", r);
	}
	r = R.cuCtxSynchronize();
	return r == CUDA_SUCCESS ? 0 : cu_fail(err, "cuCtxSynchronize", r);
}

#define DIFF_CHUNK (64u << 20)

int ks_cu_rep_diff(void *rep_, int slot, struct ks_err *err)
{
	struct rep *rep = rep_;
	unsigned char *now = NULL, *then = NULL;
	CUresult r;
	int rc = 0;

	for (size_t i = 0; i < rep->nb && !rc; i++) {
		struct rbuf *b = &rep->b[i];
		uint64_t changed = 0;

		if (!b->copy[slot])
			continue;
		if (!now && (!(now = malloc(DIFF_CHUNK)) || !(then = malloc(DIFF_CHUNK)))) {
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		for (uint64_t off = 0; off < b->size; off += DIFF_CHUNK) {
			size_t len = b->size - off < DIFF_CHUNK ? (size_t)(b->size - off) : DIFF_CHUNK;

			if ((r = R.cuMemcpyDtoH_v2(now, b->base + off, len)) != CUDA_SUCCESS ||
			    (r = R.cuMemcpyDtoH_v2(then, b->copy[slot] + off, len)) !=
				    CUDA_SUCCESS) {
				rc = cu_fail(err, "cuMemcpyDtoH (counting written bytes)", r);
				break;
			}
			for (size_t k = 0; k < len; k++)
				changed += now[k] != then[k];
		}
		rep->pub[i].written_known = !rc;
		rep->pub[i].bytes_written = changed;
		rep->pub[i].write_basis = WRITE_CHANGED;
	}
	free(now);
	free(then);
	return rc;
}

struct ks_oprt_buf *ks_cu_rep_bufs(void *rep_, size_t *n)
{
	struct rep *rep = rep_;

	*n = rep->nb;
	return rep->pub;
}

/* ------------------------------------------------------------------ */
/* Passes                                                              */
/* ------------------------------------------------------------------ */

static CUresult run_one(const struct rlaunch *rl)
{
	if (ks_oprt_test_fail_replay(rl->name))
		return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
	switch (rl->kind) {
	case KS_CU_LAUNCH_EX:
		return (rl->ptsz ? R.cuLaunchKernelEx_ptsz : R.cuLaunchKernelEx)(
			&rl->config, rl->f, rl->argv, NULL);
	case KS_CU_LAUNCH_COOP:
		return (rl->ptsz ? R.cuLaunchCooperativeKernel_ptsz : R.cuLaunchCooperativeKernel)(
			rl->f, rl->grid[0], rl->grid[1], rl->grid[2], rl->block[0], rl->block[1],
			rl->block[2], rl->shmem, rl->stream, rl->argv);
	case KS_CU_LAUNCH:
		break;
	}
	return (rl->ptsz ? R.cuLaunchKernel_ptsz : R.cuLaunchKernel)(
		rl->f, rl->grid[0], rl->grid[1], rl->grid[2], rl->block[0], rl->block[1],
		rl->block[2], rl->shmem, rl->stream, rl->argv, NULL);
}

/* The launches in order, each on its own stream; between launches on
 * different streams the context is drained (the program's order across
 * streams is not known, its capture order is kept). */
int ks_cu_rep_run(void *rep_, uint64_t *start_ns, uint64_t *dur_ns, struct ks_err *err)
{
	struct rep *rep = rep_;
	CUresult r;
	float ms = 0;

	if (rep->nl == 0)
		return ks_err_set(err, -EINVAL, "nothing to replay");
	for (int k = 0; k < 2; k++)
		if (!rep->ev[k] && (r = R.cuEventCreate(&rep->ev[k], CU_EVENT_DEFAULT)) !=
					   CUDA_SUCCESS) {
			rep->ev[k] = NULL;
			return cu_fail(err, "cuEventCreate", r);
		}
	hold(rep->l[0].stream, rep->l[0].ptsz);
	*start_ns = ks_oprt_now();
	if ((r = R.cuEventRecord(rep->ev[0], rep->l[0].stream)) != CUDA_SUCCESS)
		return cu_fail(err, "cuEventRecord", r);
	for (size_t i = 0; i < rep->nl; i++) {
		if (i > 0 && rep->l[i].stream != rep->l[i - 1].stream &&
		    (r = R.cuCtxSynchronize()) != CUDA_SUCCESS)
			return cu_fail(err, "cuCtxSynchronize", r);
		if ((r = run_one(&rep->l[i])) != CUDA_SUCCESS)
			return ks_err_set(err, -EIO, "replaying %s: the launch returned %s",
					  rep->l[i].name, ks_cu_status_name(r));
	}
	if ((r = R.cuEventRecord(rep->ev[1], rep->l[rep->nl - 1].stream)) != CUDA_SUCCESS ||
	    (r = R.cuEventSynchronize(rep->ev[1])) != CUDA_SUCCESS ||
	    (r = R.cuEventElapsedTime(&ms, rep->ev[0], rep->ev[1])) != CUDA_SUCCESS)
		return cu_fail(err, "timing with events", r);
	*dur_ns = (uint64_t)((double)ms * 1e6);
	return 0;
}

/* rep's one launch, waited for (ks_cu_hw_measure's callback). */
static int hw_launch(void *arg)
{
	const struct rep *rep = arg;

	if (run_one(&rep->l[0]) != CUDA_SUCCESS)
		return -1;
	return R.cuCtxSynchronize() == CUDA_SUCCESS ? 0 : -1;
}

int ks_cu_rep_hw(void *rep_, struct ks_oprt_hw *hw)
{
	struct rep *rep = rep_;
	struct ks_cu_hw h;

	const char *off = getenv("KSCOPE_OP_CUDA_HW");

	if (off && strcmp(off, "0") == 0) {
		snprintf(hw->why, sizeof(hw->why), "turned off (KSCOPE_OP_CUDA_HW=0)");
		return -1;
	}
	if (rep->nl != 1) {
		snprintf(hw->why, sizeof(hw->why), "not measured for ranges of several launches");
		return -1;
	}
	if (ks_cu_hw_measure(hw_launch, rep, &h) != 0) {
		snprintf(hw->why, sizeof(hw->why), "%s", h.why);
		return -1;
	}
	hw->have = true;
	snprintf(hw->source, sizeof(hw->source), "%s", h.source);
	hw->n = KS_CU_HW_NMETRICS;
	for (size_t i = 0; i < KS_CU_HW_NMETRICS; i++) {
		hw->names[i] = ks_cu_hw_metrics[i];
		hw->values[i] = h.value[i];
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* context.json                                                        */
/* ------------------------------------------------------------------ */

static const char *alloc_kind_name(enum ks_cu_alloc_kind k)
{
	switch (k) {
	case KS_CU_ALLOC_DEVICE:
		return "device";
	case KS_CU_ALLOC_ASYNC:
		return "async";
	case KS_CU_ALLOC_MANAGED:
		return "managed";
	case KS_CU_ALLOC_FOUND:
		break;
	}
	return "found by address";
}

static void describe_launch(const struct rlaunch *rl, struct ks_oprt_json *j)
{
	char hex[32];
	int dim = rl->grid[2] * rl->block[2] > 1 ? 3 : rl->grid[1] * rl->block[1] > 1 ? 2 : 1;

	/* OpenCL's shape: as many sizes as dimensions (cuda.grid and
	 * cuda.block below keep all three). */
	ks_oprt_json_obj_open(j, "work");
	ks_oprt_json_u64(j, "dim", (uint64_t)dim);
	ks_oprt_json_arr_open(j, "global");
	for (int k = 0; k < dim; k++)
		ks_oprt_json_u64(j, NULL, (uint64_t)rl->grid[k] * rl->block[k]);
	ks_oprt_json_arr_close(j);
	ks_oprt_json_arr_open(j, "local");
	for (int k = 0; k < dim; k++)
		ks_oprt_json_u64(j, NULL, rl->block[k]);
	ks_oprt_json_arr_close(j);
	ks_oprt_json_obj_close(j);
	ks_oprt_json_obj_open(j, "cuda");
	ks_oprt_json_str(j, "mangled_name", rl->driver_name);
	ks_oprt_json_arr_open(j, "grid");
	for (int k = 0; k < 3; k++)
		ks_oprt_json_u64(j, NULL, rl->grid[k]);
	ks_oprt_json_arr_close(j);
	ks_oprt_json_arr_open(j, "block");
	for (int k = 0; k < 3; k++)
		ks_oprt_json_u64(j, NULL, rl->block[k]);
	ks_oprt_json_arr_close(j);
	ks_oprt_json_u64(j, "dynamic_shared_bytes", rl->shmem);
	snprintf(hex, sizeof(hex), "%#" PRIxPTR, (uintptr_t)rl->stream);
	ks_oprt_json_str(j, "stream", hex);
	ks_oprt_json_str(j, "entry_point", rl->kind == KS_CU_LAUNCH_EX     ? "cuLaunchKernelEx"
					   : rl->kind == KS_CU_LAUNCH_COOP ? "cuLaunchCooperativeKernel"
									   : "cuLaunchKernel");
	ks_oprt_json_obj_close(j);
	ks_oprt_json_arr_open(j, "args");
	for (unsigned i = 0; i < rl->nparams; i++) {
		const struct ks_cu_ptr *first = NULL;
		char name[32];

		for (size_t k = 0; k < rl->nptrs && !first; k++)
			if (rl->ptrs[k].param == i)
				first = &rl->ptrs[k];
		ks_oprt_json_obj_open(j, NULL);
		ks_oprt_json_u64(j, "index", i);
		snprintf(name, sizeof(name), "arg%u", i);
		ks_oprt_json_str(j, "name", name);
		ks_oprt_json_u64(j, "offset", rl->params[i].offset);
		ks_oprt_json_u64(j, "size", rl->params[i].size);
		ks_oprt_json_str(j, "kind", !first ? "value"
					    : rl->params[i].size == 8 ? "buffer" : "struct with pointers");
		if (first) {
			ks_oprt_json_obj_open(j, "buffer");
			ks_oprt_json_u64(j, "bytes", first->size);
			snprintf(hex, sizeof(hex), "%#" PRIx64, first->base);
			ks_oprt_json_str(j, "base", hex);
			ks_oprt_json_u64(j, "offset", first->value - first->base);
			ks_oprt_json_u64(j, "at", first->at);
			ks_oprt_json_str(j, "allocation", alloc_kind_name(first->kind));
			ks_oprt_json_obj_close(j);
		}
		ks_oprt_json_obj_close(j);
	}
	ks_oprt_json_arr_close(j);
}

static int dev_attr(CUdevice d, CUdevice_attribute a)
{
	int v = -1;

	return R.cuDeviceGetAttribute(&v, a, d) == CUDA_SUCCESS ? v : -1;
}

/* platform and device: the names, the compute capability as the device's
 * version, its size and clocks (NVML's current and maximum clocks when
 * NVML is there: the clocks the passes ran at, within the driver's own
 * changes). */
static void describe_device(struct ks_oprt_json *j)
{
	char dev[256] = "unknown device", ver[32];
	struct ks_cu_clocks c;
	size_t mem = 0;
	CUdevice d;
	int v = 0, major, minor, n;
	bool have_dev;

	have_dev = R.cuCtxGetDevice(&d) == CUDA_SUCCESS;
	if (!have_dev || R.cuDeviceGetName(dev, (int)sizeof(dev), d) != CUDA_SUCCESS)
		snprintf(dev, sizeof(dev), "unknown device");
	ks_oprt_json_obj_open(j, "platform");
	ks_oprt_json_str(j, "name", "NVIDIA CUDA");
	if (R.cuDriverGetVersion(&v) == CUDA_SUCCESS) {
		snprintf(ver, sizeof(ver), "CUDA %d.%d", v / 1000, v % 1000 / 10);
		ks_oprt_json_str(j, "version", ver);
	}
	ks_oprt_json_obj_close(j);
	ks_oprt_json_obj_open(j, "device");
	ks_oprt_json_str(j, "name", dev);
	ks_oprt_json_str(j, "vendor", "NVIDIA");
	ks_oprt_json_str(j, "type", "GPU");
	if (!have_dev) {
		ks_oprt_json_obj_close(j);
		return;
	}
	major = dev_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
	minor = dev_attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
	if (major >= 0 && minor >= 0) {
		snprintf(ver, sizeof(ver), "sm_%d%d", major, minor);
		ks_oprt_json_str(j, "version", ver);
	}
	if ((n = dev_attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)) > 0)
		ks_oprt_json_u64(j, "compute_units", (uint64_t)n);
	if (R.cuDeviceTotalMem_v2 && R.cuDeviceTotalMem_v2(&mem, d) == CUDA_SUCCESS)
		ks_oprt_json_u64(j, "global_mem_bytes", mem);
	if ((n = dev_attr(d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)) > 0)
		ks_oprt_json_u64(j, "global_mem_cache_bytes", (uint64_t)n);
	if ((n = dev_attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)) > 0)
		ks_oprt_json_u64(j, "local_mem_bytes", (uint64_t)n);
	if (ks_cu_nvml_read(d, &c)) {
		if (c.driver[0])
			ks_oprt_json_str(j, "driver_version", c.driver);
		if (c.have_sm_max)
			ks_oprt_json_u64(j, "max_clock_mhz", c.sm_max_mhz);
		ks_oprt_json_obj_open(j, "clocks");
		ks_oprt_json_str(j, "source", "NVML");
		if (c.have_sm)
			ks_oprt_json_u64(j, "sm_mhz", c.sm_mhz);
		if (c.have_mem)
			ks_oprt_json_u64(j, "mem_mhz", c.mem_mhz);
		if (c.have_sm_max)
			ks_oprt_json_u64(j, "sm_max_mhz", c.sm_max_mhz);
		if (c.have_mem_max)
			ks_oprt_json_u64(j, "mem_max_mhz", c.mem_max_mhz);
		ks_oprt_json_obj_close(j);
	} else {
		ks_oprt_json_obj_open(j, "clocks");
		ks_oprt_json_str(j, "source", "none: NVML (libnvidia-ml.so.1) not usable");
		ks_oprt_json_obj_close(j);
	}
	ks_oprt_json_obj_close(j);
}

void ks_cu_rep_describe(void *rep_, bool range, struct ks_oprt_json *j)
{
	struct rep *rep = rep_;

	describe_device(j);
	ks_oprt_json_obj_open(j, "timing");
	ks_oprt_json_str(j, "method", hold_kernel(K_HOLD)
				? "CUDA events around the launches, queued behind a hold kernel"
				: "CUDA events around the launches (no hold kernel: the time "
				  "includes the host's submission of the launch)");
	ks_oprt_json_obj_close(j);
	if (!range) {
		if (rep->nl)
			describe_launch(&rep->l[0], j);
		return;
	}
	ks_oprt_json_arr_open(j, "launches");
	for (size_t i = 0; i < rep->nl; i++) {
		ks_oprt_json_obj_open(j, NULL);
		ks_oprt_json_str(j, "name", rep->l[i].name);
		ks_oprt_json_u64(j, "index", rep->l[i].index);
		describe_launch(&rep->l[i], j);
		ks_oprt_json_obj_close(j);
	}
	ks_oprt_json_arr_close(j);
}

/* The module's image is not kept (yet): no program file. */
void ks_cu_rep_program(void *rep, const char **file, const void **data, size_t *len)
{
	(void)rep;
	*file = NULL;
	*data = NULL;
	*len = 0;
}

void ks_cu_rep_free(void *rep_)
{
	struct rep *rep = rep_;

	if (!rep)
		return;
	for (size_t i = 0; i < rep->nb; i++)
		for (int s = 0; s < 2; s++)
			if (rep->b[i].copy[s])
				R.cuMemFree_v2(rep->b[i].copy[s]);
	for (int k = 0; k < 2; k++)
		if (rep->ev[k])
			R.cuEventDestroy_v2(rep->ev[k]);
	for (size_t i = 0; i < rep->nl; i++) {
		free(rep->l[i].driver_name);
		free(rep->l[i].params);
		free(rep->l[i].image);
		free(rep->l[i].argv);
		free(rep->l[i].ptrs);
		free(rep->l[i].config.attrs);
	}
	free(rep->l);
	free(rep->b);
	free(rep->pub);
	free(rep);
}
