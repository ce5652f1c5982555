/*
 * Records of kscope op's CUDA backend: the program's live device
 * allocations (cuda_allocs.c's map) and what kscope knows of each kernel
 * handle the program launches (its names and parameter layout, asked of
 * the driver once).  Everything under one mutex; kernel records are
 * found through a hash table and kept until a module or library is
 * unloaded (the handles may then be reused), when they move to a list of
 * retired records freed at exit (a wrapper may still hold one).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ks_cu_allocs allocs;

#define FUNC_BUCKETS 1024

struct func_node {
	struct ks_cu_func f;
	struct func_node *next;
};

static struct func_node *funcs[FUNC_BUCKETS];
static struct func_node *retired;
atomic_uint ks_cu_funcs_gen;

/* ------------------------------------------------------------------ */
/* Allocations                                                         */
/* ------------------------------------------------------------------ */

void ks_cu_alloc_note(uint64_t base, uint64_t size, enum ks_cu_alloc_kind kind)
{
	pthread_mutex_lock(&lock);
	/* Out of memory: the allocation is found later through the driver. */
	(void)ks_cu_allocs_add(&allocs, base, size, kind);
	pthread_mutex_unlock(&lock);
}

void ks_cu_alloc_forget(uint64_t base)
{
	pthread_mutex_lock(&lock);
	ks_cu_allocs_remove(&allocs, base);
	pthread_mutex_unlock(&lock);
}

size_t ks_cu_alloc_snapshot(struct ks_cu_alloc **out)
{
	size_t n;

	pthread_mutex_lock(&lock);
	n = allocs.n;
	*out = n ? malloc(n * sizeof(**out)) : NULL;
	if (*out)
		memcpy(*out, allocs.a, n * sizeof(**out));
	else
		n = 0;
	pthread_mutex_unlock(&lock);
	return n;
}

bool ks_cu_alloc_lookup(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size,
			enum ks_cu_alloc_kind *kind)
{
	const struct ks_cu_alloc *a;
	CUdeviceptr b = 0;
	size_t s = 0;
	bool found = false;

	(void)ctx;
	pthread_mutex_lock(&lock);
	a = ks_cu_allocs_find(&allocs, addr);
	if (a) {
		*base = a->base;
		*size = a->size;
		*kind = a->kind;
		found = true;
	}
	pthread_mutex_unlock(&lock);
	if (found)
		return true;
	/* Memory the wrappers did not see (cuMemCreate + cuMemMap, memory
	 * allocated before a wrapper was handed out). */
	if (ks_cu_real.cuMemGetAddressRange_v2 &&
	    ks_cu_real.cuMemGetAddressRange_v2(&b, &s, (CUdeviceptr)addr) == CUDA_SUCCESS && s) {
		*base = b;
		*size = s;
		*kind = KS_CU_ALLOC_FOUND;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Kernels                                                             */
/* ------------------------------------------------------------------ */

/* Asks the driver for f's names and parameter layout.  handle may be a
 * CUkernel (cudart 12 launches those in place of CUfunctions): the
 * CUfunction entry points are tried first, then the CUkernel ones. */
static void func_describe(struct ks_cu_func *f)
{
	const struct ks_cu_real *r = &ks_cu_real;
	const char *name = NULL;
	char base[256];
	bool kernel = false;

	if (r->cuFuncGetName(&name, (CUfunction)f->handle) != CUDA_SUCCESS || !name) {
		name = NULL;
		if (r->cuKernelGetName &&
		    r->cuKernelGetName(&name, (CUkernel)f->handle) == CUDA_SUCCESS && name)
			kernel = true;
		else
			name = NULL;
	}
	f->driver_name = strdup(name ? name : "unknown_kernel");
	ks_cu_base_name(f->driver_name ? f->driver_name : "unknown_kernel", base, sizeof(base));
	f->name = ks_oprt_name_get(base);

	if (!(kernel ? r->cuKernelGetParamInfo != NULL : r->cuFuncGetParamInfo != NULL)) {
		snprintf(f->params_why, sizeof(f->params_why),
			 "the driver has no cu%sGetParamInfo (CUDA 12.4 or later)",
			 kernel ? "Kernel" : "Func");
		return;
	}
	f->params = calloc(KS_CU_MAX_PARAMS, sizeof(*f->params));
	if (!f->params) {
		snprintf(f->params_why, sizeof(f->params_why), "out of memory");
		return;
	}
	for (unsigned i = 0; i < KS_CU_MAX_PARAMS; i++) {
		size_t off = 0, size = 0;
		CUresult st = kernel ? r->cuKernelGetParamInfo((CUkernel)f->handle, i, &off, &size)
				     : r->cuFuncGetParamInfo((CUfunction)f->handle, i, &off, &size);

		if (st != CUDA_SUCCESS)
			break;            /* past the last parameter */
		f->params[i].offset = (uint32_t)off;
		f->params[i].size = (uint32_t)size;
		f->nparams = i + 1;
		if (off + size > f->image_len)
			f->image_len = (uint32_t)(off + size);
	}
	f->have_params = true;
}

struct ks_cu_func *ks_cu_func_get(void *handle)
{
	size_t h = ((uintptr_t)handle >> 4) % FUNC_BUCKETS;
	struct func_node *n;

	pthread_mutex_lock(&lock);
	for (n = funcs[h]; n; n = n->next)
		if (n->f.handle == handle)
			goto out;
	n = calloc(1, sizeof(*n));
	if (!n)
		goto out;
	n->f.handle = handle;
	func_describe(&n->f);
	if (!n->f.name) {
		free(n->f.driver_name);
		free(n->f.params);
		free(n);
		n = NULL;
		goto out;
	}
	n->next = funcs[h];
	funcs[h] = n;
out:
	pthread_mutex_unlock(&lock);
	return n ? &n->f : NULL;
}

void ks_cu_funcs_forget(void)
{
	pthread_mutex_lock(&lock);
	atomic_fetch_add(&ks_cu_funcs_gen, 1);
	for (size_t h = 0; h < FUNC_BUCKETS; h++) {
		struct func_node *n = funcs[h], *next;

		for (; n; n = next) {
			next = n->next;
			n->next = retired;
			retired = n;
		}
		funcs[h] = NULL;
	}
	pthread_mutex_unlock(&lock);
}

void ks_cu_records_clear(void)
{
	ks_cu_funcs_forget();
	pthread_mutex_lock(&lock);
	while (retired) {
		struct func_node *n = retired;

		retired = n->next;
		free(n->f.driver_name);
		free(n->f.params);
		free(n);
	}
	ks_cu_allocs_free(&allocs);
	pthread_mutex_unlock(&lock);
}
