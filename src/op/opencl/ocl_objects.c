/*
 * Records of the program's OpenCL objects, in hash tables keyed by handle
 * (open addressing, linear probing, deletion by backward shift), all under
 * one mutex: buffers (to tell a cl_mem argument from a scalar), programs
 * (their source, binary or IL and build options), kernels (name, program,
 * the arguments as last set), queues (context, device, properties) and
 * contexts (the cache-flush buffer).
 *
 * A record is dropped when the program releases its last reference to
 * the object (ocl_int.h says why the records count the program's
 * references rather than ask the runtime).  Objects made by calls kscope
 * does not wrap have no record (kernels get one on first use); a record
 * replaced by a new object of the same handle would mean the program
 * released an object more often than it held it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_int.h"

pthread_mutex_t ks_ocl_lock = PTHREAD_MUTEX_INITIALIZER;

/* ------------------------------------------------------------------ */
/* Hash tables                                                         */
/* ------------------------------------------------------------------ */

struct map {
	const void **keys;               /* NULL: free slot */
	void **vals;
	size_t cap, n;                   /* cap: a power of two, or 0 */
};

static size_t slot_of(const struct map *m, const void *key)
{
	uint64_t h = (uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15u;

	return (size_t)(h >> 32) & (m->cap - 1);
}

static void *map_get(const struct map *m, const void *key)
{
	if (!m->cap)
		return NULL;
	for (size_t i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key)
			return m->vals[i];
		if (!m->keys[i])
			return NULL;
	}
}

static int map_grow(struct map *m)
{
	struct map g = { .cap = m->cap ? m->cap * 2 : 64 };

	g.keys = calloc(g.cap, sizeof(*g.keys));
	g.vals = calloc(g.cap, sizeof(*g.vals));
	if (!g.keys || !g.vals) {
		free(g.keys);
		free(g.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t s;

		if (!m->keys[i])
			continue;
		for (s = slot_of(&g, m->keys[i]); g.keys[s]; s = (s + 1) & (g.cap - 1))
			;
		g.keys[s] = m->keys[i];
		g.vals[s] = m->vals[i];
		g.n++;
	}
	free(m->keys);
	free(m->vals);
	*m = g;
	return 0;
}

/* Sets key's value; *old: the value it replaced, or NULL. */
static int map_put(struct map *m, const void *key, void *val, void **old)
{
	size_t i;

	*old = NULL;
	if ((m->n + 1) * 2 > m->cap && map_grow(m) != 0)
		return -ENOMEM;
	for (i = slot_of(m, key); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			*old = m->vals[i];
			m->vals[i] = val;
			return 0;
		}
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return 0;
}

/* Removes key; its value, or NULL. */
static void *map_del(struct map *m, const void *key)
{
	size_t i, j;
	void *val;

	if (!m->cap)
		return NULL;
	for (i = slot_of(m, key); m->keys[i] != key; i = (i + 1) & (m->cap - 1))
		if (!m->keys[i])
			return NULL;
	val = m->vals[i];
	/* Backward shift: move later members of the cluster into the hole
	 * when their home slot does not lie between the hole and them. */
	for (j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
		size_t home = slot_of(m, m->keys[j]);

		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->keys[i] = NULL;
	m->vals[i] = NULL;
	m->n--;
	return val;
}

static void map_clear(struct map *m, void (*free_val)(void *))
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i] && free_val)
			free_val(m->vals[i]);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static struct map mems, programs, kernels, queues, contexts;

/* Changes whenever a kernel record goes (dropped or replaced): the
 * per-thread name caches are then stale. */
static atomic_uint kernel_gen;

static KS_OPRT_TLS struct {
	cl_kernel h;
	struct ks_oprt_name *nm;
	unsigned gen;
} kernel_cache;

/* ------------------------------------------------------------------ */
/* Program information                                                 */
/* ------------------------------------------------------------------ */

struct ks_ocl_pinfo *ks_ocl_pinfo_new(void)
{
	struct ks_ocl_pinfo *p = calloc(1, sizeof(*p));

	if (p)
		p->refs = 1;
	return p;
}

void ks_ocl_pinfo_ref(struct ks_ocl_pinfo *p)
{
	if (p)
		p->refs++;
}

void ks_ocl_pinfo_unref(struct ks_ocl_pinfo *p)
{
	if (!p || --p->refs > 0)
		return;
	free(p->data);
	for (cl_uint i = 0; p->bins && i < p->ndev; i++)
		free(p->bins[i]);
	free(p->bins);
	free(p->bin_len);
	free(p->devs);
	free(p->options);
	free(p);
}

/* ------------------------------------------------------------------ */
/* Arguments                                                           */
/* ------------------------------------------------------------------ */

int ks_ocl_arg_set(struct ks_ocl_arg *a, size_t size, const void *value)
{
	a->size = size;
	a->null_value = value == NULL;
	a->set = true;
	if (!value)
		return 0;
	if (size <= KS_OCL_ARG_INLINE) {
		memcpy(a->small, value, size);
		return 0;
	}
	if (a->big_cap < size) {
		unsigned char *b = realloc(a->big, size);

		if (!b) {
			a->set = false;
			return -ENOMEM;
		}
		a->big = b;
		a->big_cap = size;
	}
	memcpy(a->big, value, size);
	return 0;
}

void ks_ocl_arg_free(struct ks_ocl_arg *a)
{
	free(a->big);
	a->big = NULL;
	a->big_cap = 0;
	a->set = false;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

static void kernel_free(void *v)
{
	struct ks_ocl_kernel *k = v;

	atomic_fetch_add_explicit(&kernel_gen, 1, memory_order_release);
	for (cl_uint i = 0; i < k->nargs; i++)
		ks_ocl_arg_free(&k->args[i]);
	free(k->args);
	ks_ocl_pinfo_unref(k->pinfo);
	free(k);
}

static void program_free(void *v)
{
	struct ks_ocl_program *p = v;

	ks_ocl_pinfo_unref(p->pinfo);
	free(p);
}

struct ks_ocl_kernel *ks_ocl_kernel_get(cl_kernel h)
{
	return map_get(&kernels, h);
}

struct ks_ocl_program *ks_ocl_program_get(cl_program h)
{
	return map_get(&programs, h);
}

struct ks_ocl_queue *ks_ocl_queue_get(cl_command_queue h)
{
	return map_get(&queues, h);
}

struct ks_ocl_mem *ks_ocl_mem_get(cl_mem h)
{
	return map_get(&mems, h);
}

struct ks_ocl_context *ks_ocl_context_get(cl_context h)
{
	return map_get(&contexts, h);
}

void ks_ocl_mem_add(cl_mem h, cl_context ctx, size_t size, cl_mem_flags flags,
		    cl_mem parent, size_t origin)
{
	struct ks_ocl_mem *m = malloc(sizeof(*m));
	void *old = NULL;

	if (!m)
		return;
	*m = (struct ks_ocl_mem){ 1, h, ctx, size, flags, parent, origin };
	pthread_mutex_lock(&ks_ocl_lock);
	if (map_put(&mems, h, m, &old) != 0)
		free(m);
	free(old);
	pthread_mutex_unlock(&ks_ocl_lock);
}

void ks_ocl_program_add(cl_program h, cl_context ctx, struct ks_ocl_pinfo *pinfo)
{
	struct ks_ocl_program *p = malloc(sizeof(*p));
	void *old = NULL;

	pthread_mutex_lock(&ks_ocl_lock);
	if (!p) {
		ks_ocl_pinfo_unref(pinfo);
		goto out;
	}
	p->refs = 1;
	p->h = h;
	p->ctx = ctx;
	p->pinfo = pinfo;
	if (map_put(&programs, h, p, &old) != 0)
		program_free(p);
	if (old)
		program_free(old);
out:
	pthread_mutex_unlock(&ks_ocl_lock);
}

/* Makes and stores a kernel record.  ks_ocl_lock held. */
static struct ks_ocl_kernel *kernel_add_locked(cl_kernel h, const char *name, cl_program prog,
					       struct ks_ocl_pinfo *pinfo, cl_uint nargs)
{
	struct ks_ocl_kernel *k = calloc(1, sizeof(*k));
	void *old = NULL;

	if (k && nargs)
		k->args = calloc(nargs, sizeof(*k->args));
	if (!k || (nargs && !k->args)) {
		free(k);
		ks_ocl_pinfo_unref(pinfo);
		return NULL;
	}
	k->h = h;
	k->nm = ks_oprt_name_get(name);
	k->prog = prog;
	k->pinfo = pinfo;
	k->refs = 1;
	k->nargs = nargs;
	if (map_put(&kernels, h, k, &old) != 0) {
		kernel_free(k);
		return NULL;
	}
	if (old)
		kernel_free(old);
	return k;
}

void ks_ocl_kernel_add(cl_kernel h, const char *name, cl_program prog,
		       struct ks_ocl_pinfo *pinfo, cl_uint nargs)
{
	pthread_mutex_lock(&ks_ocl_lock);
	kernel_add_locked(h, name, prog, pinfo, nargs);
	pthread_mutex_unlock(&ks_ocl_lock);
}

struct ks_ocl_kernel *ks_ocl_kernel_lazy(cl_kernel h)
{
	const struct ks_ocl_real *r = &ks_ocl_real;
	struct ks_ocl_program *p;
	char name[512];
	cl_program prog = NULL;
	cl_uint nargs = 0;

	if (r->clGetKernelInfo(h, CL_KERNEL_FUNCTION_NAME, sizeof(name), name, NULL) != CL_SUCCESS)
		return NULL;
	name[sizeof(name) - 1] = '\0';
	if (r->clGetKernelInfo(h, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, NULL) != CL_SUCCESS)
		nargs = 0;
	if (r->clGetKernelInfo(h, CL_KERNEL_PROGRAM, sizeof(prog), &prog, NULL) != CL_SUCCESS)
		prog = NULL;
	p = prog ? ks_ocl_program_get(prog) : NULL;
	if (p)
		ks_ocl_pinfo_ref(p->pinfo);
	return kernel_add_locked(h, name, prog, p ? p->pinfo : NULL, nargs);
}

struct ks_oprt_name *ks_ocl_kernel_name(cl_kernel h)
{
	unsigned gen = atomic_load_explicit(&kernel_gen, memory_order_acquire);
	struct ks_ocl_kernel *k;
	struct ks_oprt_name *nm;

	if (kernel_cache.h == h && kernel_cache.gen == gen && h)
		return kernel_cache.nm;
	pthread_mutex_lock(&ks_ocl_lock);
	k = ks_ocl_kernel_get(h);
	if (!k)
		k = ks_ocl_kernel_lazy(h);
	nm = k ? k->nm : NULL;
	pthread_mutex_unlock(&ks_ocl_lock);
	if (nm) {
		kernel_cache.h = h;
		kernel_cache.nm = nm;
		kernel_cache.gen = gen;
	}
	return nm;
}

void ks_ocl_kernel_clone(cl_kernel src, cl_kernel clone)
{
	struct ks_ocl_kernel *s, *d;

	pthread_mutex_lock(&ks_ocl_lock);
	s = ks_ocl_kernel_get(src);
	if (!s)
		s = ks_ocl_kernel_lazy(src);
	if (!s)
		goto out;
	ks_ocl_pinfo_ref(s->pinfo);
	d = kernel_add_locked(clone, s->nm ? s->nm->name : "", s->prog, s->pinfo, s->nargs);
	for (cl_uint i = 0; d && i < s->nargs; i++)
		if (s->args[i].set)
			ks_ocl_arg_set(&d->args[i], s->args[i].size, ks_ocl_arg_value(&s->args[i]));
out:
	pthread_mutex_unlock(&ks_ocl_lock);
}

void ks_ocl_queue_add(cl_command_queue h, cl_context ctx, cl_device_id dev,
		      bool out_of_order, bool profiling_by_program)
{
	struct ks_ocl_queue *q = malloc(sizeof(*q));
	struct ks_ocl_context *c;
	void *old = NULL;

	if (!q)
		return;
	*q = (struct ks_ocl_queue){ 1, h, ctx, dev, out_of_order, profiling_by_program };
	pthread_mutex_lock(&ks_ocl_lock);
	c = map_get(&contexts, ctx);
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (c) {
			void *none;

			c->h = ctx;
			if (map_put(&contexts, ctx, c, &none) != 0) {
				free(c);
				c = NULL;
			}
		}
	}
	if (!c || map_put(&queues, h, q, &old) != 0) {
		free(q);
		goto out;
	}
	if (old) {
		struct ks_ocl_context *oc = map_get(&contexts, ((struct ks_ocl_queue *)old)->ctx);

		if (oc && oc->nqueues)
			oc->nqueues--;
		free(old);
	}
	c->nqueues++;
out:
	pthread_mutex_unlock(&ks_ocl_lock);
}

static struct map *map_of(enum ks_ocl_kind kind)
{
	switch (kind) {
	case KS_OCL_MEM:
		return &mems;
	case KS_OCL_PROGRAM:
		return &programs;
	case KS_OCL_KERNEL:
		return &kernels;
	case KS_OCL_QUEUE:
		break;
	}
	return &queues;
}

/* The program's reference count in a record of kind. */
static unsigned *refs_of(enum ks_ocl_kind kind, void *rec)
{
	switch (kind) {
	case KS_OCL_MEM:
		return &((struct ks_ocl_mem *)rec)->refs;
	case KS_OCL_PROGRAM:
		return &((struct ks_ocl_program *)rec)->refs;
	case KS_OCL_KERNEL:
		return &((struct ks_ocl_kernel *)rec)->refs;
	case KS_OCL_QUEUE:
		break;
	}
	return &((struct ks_ocl_queue *)rec)->refs;
}

void ks_ocl_retain(enum ks_ocl_kind kind, const void *h)
{
	void *rec;

	pthread_mutex_lock(&ks_ocl_lock);
	rec = map_get(map_of(kind), h);
	if (rec)
		(*refs_of(kind, rec))++;
	pthread_mutex_unlock(&ks_ocl_lock);
}

cl_mem ks_ocl_release(enum ks_ocl_kind kind, const void *h)
{
	struct ks_ocl_context *c;
	cl_mem flush = NULL;
	void *rec;

	pthread_mutex_lock(&ks_ocl_lock);
	rec = map_get(map_of(kind), h);
	if (!rec || --*refs_of(kind, rec) > 0)
		goto out;
	map_del(map_of(kind), h);
	switch (kind) {
	case KS_OCL_MEM:
		free(rec);
		break;
	case KS_OCL_PROGRAM:
		program_free(rec);
		break;
	case KS_OCL_KERNEL:
		kernel_free(rec);
		break;
	case KS_OCL_QUEUE:
		c = map_get(&contexts, ((struct ks_ocl_queue *)rec)->ctx);
		if (c && c->nqueues && --c->nqueues == 0) {
			flush = c->flush;
			map_del(&contexts, c->h);
			free(c);
		}
		free(rec);
		break;
	}
out:
	pthread_mutex_unlock(&ks_ocl_lock);
	return flush;
}

cl_command_queue *ks_ocl_queues(size_t *n)
{
	cl_command_queue *v;

	pthread_mutex_lock(&ks_ocl_lock);
	*n = 0;
	v = malloc((queues.n + 1) * sizeof(*v));   /* room for one more */
	for (size_t i = 0; v && i < queues.cap; i++)
		if (queues.keys[i])
			v[(*n)++] = (cl_command_queue)(uintptr_t)queues.keys[i];
	pthread_mutex_unlock(&ks_ocl_lock);
	return v;
}

void ks_ocl_records_clear(void)
{
	pthread_mutex_lock(&ks_ocl_lock);
	map_clear(&kernels, kernel_free);
	map_clear(&programs, program_free);
	map_clear(&mems, free);
	map_clear(&queues, free);
	map_clear(&contexts, free);
	pthread_mutex_unlock(&ks_ocl_lock);
}
