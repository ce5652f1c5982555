/*
 * The program's heap, seen from the allocation functions, and the data
 * objects events are charged to.  malloc, calloc, realloc,
 * reallocarray, free, posix_memalign, aligned_alloc, memalign, valloc
 * and pvalloc are wrapped, not replaced: each calls the next definition
 * (the C library's, or the program's own allocator), so blocks are where
 * they would be without kscope, and the wrapper records the block with
 * the stack that allocated it (C++'s operator new calls malloc, so its
 * blocks are recorded too).
 *
 * Live blocks sit in treaps keyed by start address, one per group of
 * 1-MiB regions (64 groups, each with its lock, so threads allocating
 * in their own arenas seldom meet) plus one for blocks of 1 MiB and more:
 * a block under 1 MiB holding address a starts in a's region or the one
 * before, so "which block holds a" is two predecessor searches and the
 * big blocks' one.
 *
 * A data object is the heap blocks of one allocation stack, or a global
 * variable (a symbol of a loaded module, rt_sym.c), as in kscope's
 * Valgrind tool.  Objects are found without a lock (a chained hash whose
 * nodes are published whole and never freed) and made under one.
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_int.h"

/* ------------------------------------------------------------------ */
/* The next definitions of the allocation functions                    */
/* ------------------------------------------------------------------ */

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef void (*free_fn)(void *);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef void *(*valloc_fn)(size_t);

static struct {
	malloc_fn malloc;
	calloc_fn calloc;
	realloc_fn realloc;
	reallocarray_fn reallocarray;
	free_fn free;
	posix_memalign_fn posix_memalign;
	memalign_fn aligned_alloc, memalign;
	valloc_fn valloc, pvalloc;
} real;

/* dlsym may allocate (its error state) before the real calloc is known:
 * those few blocks come from here and are never freed. */
static char boot_buf[4096] __attribute__((aligned(16)));
static size_t boot_used;
static int resolving;

static void *boot_alloc(size_t n)
{
	size_t at = __atomic_fetch_add(&boot_used, (n + 15) & ~(size_t)15, __ATOMIC_RELAXED);

	if (at + n > sizeof(boot_buf))
		return NULL;
	return boot_buf + at; /* static: zero */
}

static bool is_boot(const void *p)
{
	return (const char *)p >= boot_buf && (const char *)p < boot_buf + sizeof(boot_buf);
}

void rt_heap_init(void)
{
	if (real.malloc || resolving)
		return;
	resolving = 1;
	real.calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
	real.malloc = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
	real.realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
	real.reallocarray = (reallocarray_fn)dlsym(RTLD_NEXT, "reallocarray");
	real.free = (free_fn)dlsym(RTLD_NEXT, "free");
	real.posix_memalign = (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
	real.aligned_alloc = (memalign_fn)dlsym(RTLD_NEXT, "aligned_alloc");
	real.memalign = (memalign_fn)dlsym(RTLD_NEXT, "memalign");
	real.valloc = (valloc_fn)dlsym(RTLD_NEXT, "valloc");
	real.pvalloc = (valloc_fn)dlsym(RTLD_NEXT, "pvalloc");
	resolving = 0;
}

/* ------------------------------------------------------------------ */
/* Live blocks                                                         */
/* ------------------------------------------------------------------ */

#define REGION_SHIFT 20
#define NSHARDS 64
#define BIG ((size_t)1 << REGION_SHIFT)

struct block {
	uintptr_t start;
	size_t size;
	struct rt_ctx *ctx;
	uint32_t prio;
	uint32_t align;            /* asked of posix_memalign and friends; 0: malloc's */
	struct block *l, *r;
};

/* The blocks freed last in a shard, newest at grave_next - 1: the reports
 * name the lines of a block the program freed before it ended by them
 * (heap_lookup). */
#define GRAVE_N 32u

/* A block as the lookups give it, and as a shard keeps the ones freed. */
struct grave {
	uintptr_t start;
	size_t size;
	struct rt_ctx *ctx;
	size_t align;
};

struct shard {
	struct rt_lock lock;
	struct block *root;
	uint32_t seed;
	char pad[64 - sizeof(struct rt_lock) - sizeof(void *) - sizeof(uint32_t)];
	uint32_t grave_next;       /* under lock */
	struct grave grave[GRAVE_N];
} __attribute__((aligned(64)));

static struct shard shards[NSHARDS + 1]; /* the last: big blocks */
static struct rt_heap_stats stats;

static struct shard *shard_of(uintptr_t start, size_t size)
{
	if (size >= BIG)
		return &shards[NSHARDS];
	return &shards[(start >> REGION_SHIFT) % NSHARDS];
}

/* Splits t into the blocks starting below key and the rest. */
static void split(struct block *t, uintptr_t key, struct block **lo, struct block **hi)
{
	if (!t) {
		*lo = *hi = NULL;
	} else if (t->start < key) {
		split(t->r, key, &t->r, hi);
		*lo = t;
	} else {
		split(t->l, key, lo, &t->l);
		*hi = t;
	}
}

/* Joins two treaps, every start of a below every start of b. */
static struct block *merge(struct block *a, struct block *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio > b->prio) {
		a->r = merge(a->r, b);
		return a;
	}
	b->l = merge(a, b->l);
	return b;
}

static void block_insert(struct shard *s, struct block *n)
{
	struct block *lo, *hi;

	s->seed = s->seed * 1664525u + 1013904223u;
	n->prio = s->seed ^ (uint32_t)(n->start >> 4);
	split(s->root, n->start, &lo, &hi);
	s->root = merge(merge(lo, n), hi);
}

/* Removes the block starting at key; it or NULL. */
static struct block *block_remove(struct shard *s, uintptr_t key)
{
	struct block *lo, *mid, *hi;

	split(s->root, key, &lo, &hi);
	split(hi, key + 1, &mid, &hi);
	s->root = merge(lo, hi);
	return mid;
}

/* The block with the greatest start <= a. */
static struct block *block_pred(struct shard *s, uintptr_t a)
{
	struct block *t = s->root, *best = NULL;

	while (t) {
		if (t->start <= a) {
			best = t;
			t = t->r;
		} else {
			t = t->l;
		}
	}
	return best;
}

static bool holds(const struct block *b, uintptr_t a)
{
	return b && a >= b->start && a - b->start < (b->size ? b->size : 1);
}

/* align: the alignment the program asked for (posix_memalign,
 * aligned_alloc, memalign, valloc), 0 for malloc's own. */
static void heap_add(void *p, size_t size, uintptr_t pc, size_t align)
{
	struct rt_thread *t = rt_self;
	struct block *b;
	struct shard *s;

	__atomic_fetch_add(&stats.allocs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&stats.bytes, size, __ATOMIC_RELAXED);
	__atomic_fetch_add(&stats.in_use_bytes, size, __ATOMIC_RELAXED);
	__atomic_fetch_add(&stats.in_use_blocks, 1, __ATOMIC_RELAXED);
	if (!t || t->in_rt || !(b = rt_zalloc(sizeof(*b))))
		return;
	t->in_rt++;
	b->start = (uintptr_t)p;
	b->size = size;
	/* Only a power of two above malloc's 16 says more than malloc's. */
	b->align = align > 16 && align <= UINT32_MAX && !(align & (align - 1)) ? (uint32_t)align : 0;
	b->ctx = rt_ctx_here(t, pc);
	s = shard_of(b->start, size);
	rt_lock_take(&s->lock);
	block_insert(s, b);
	rt_lock_give(&s->lock);
	t->in_rt--;
}

static void heap_remove(void *p)
{
	uintptr_t a = (uintptr_t)p;
	struct block *b;

	/* Small or big: look in both places (the size is not known). */
	for (int k = 0; k < 2; k++) {
		struct shard *s = k ? &shards[NSHARDS] : shard_of(a, 0);

		rt_lock_take(&s->lock);
		b = block_remove(s, a);
		if (b) {
			struct grave *g = &s->grave[s->grave_next++ % GRAVE_N];

			g->start = b->start;
			g->size = b->size;
			g->ctx = b->ctx;
			g->align = b->align;
		}
		rt_lock_give(&s->lock);
		if (b) {
			__atomic_fetch_add(&stats.frees, 1, __ATOMIC_RELAXED);
			__atomic_fetch_sub(&stats.in_use_bytes, b->size, __ATOMIC_RELAXED);
			__atomic_fetch_sub(&stats.in_use_blocks, 1, __ATOMIC_RELAXED);
			rt_free(b, sizeof(*b));
			return;
		}
	}
}

/* The block holding a, live or (freed) among the last GRAVE_N freed in
 * its shard, newest first, into *out.  A block lives in the shard of its
 * start: the big blocks', a's own, or the one before (a small block may
 * start up to BIG below a). */
static bool heap_lookup(uintptr_t a, bool freed, struct grave *out)
{
	struct shard *cand[3] = { &shards[NSHARDS], shard_of(a, 0),
				  shard_of(a - (uintptr_t)BIG, 0) };
	bool found = false;

	for (int k = 0; k < 3 && !found; k++) {
		struct shard *sh = cand[k];

		if (k == 2 && cand[2] == cand[1])
			break;
		rt_lock_take(&sh->lock);
		if (!freed) {
			const struct block *b = block_pred(sh, a);

			if ((found = holds(b, a))) {
				out->start = b->start;
				out->size = b->size;
				out->ctx = b->ctx;
				out->align = b->align;
			}
		}
		for (uint32_t i = 0; freed && i < GRAVE_N && i < sh->grave_next && !found; i++) {
			const struct grave *g = &sh->grave[(sh->grave_next - 1 - i) % GRAVE_N];

			if ((found = a >= g->start && a - g->start < (g->size ? g->size : 1)))
				*out = *g;
		}
		rt_lock_give(&sh->lock);
	}
	return found;
}

void rt_heap_stats(struct rt_heap_stats *s)
{
	s->allocs = __atomic_load_n(&stats.allocs, __ATOMIC_RELAXED);
	s->frees = __atomic_load_n(&stats.frees, __ATOMIC_RELAXED);
	s->bytes = __atomic_load_n(&stats.bytes, __ATOMIC_RELAXED);
	s->in_use_bytes = __atomic_load_n(&stats.in_use_bytes, __ATOMIC_RELAXED);
	s->in_use_blocks = __atomic_load_n(&stats.in_use_blocks, __ATOMIC_RELAXED);
}

void rt_heap_lock_all(void)
{
	for (int i = 0; i <= NSHARDS; i++)
		rt_lock_take(&shards[i].lock);
}

void rt_heap_unlock_all(void)
{
	for (int i = 0; i <= NSHARDS; i++)
		rt_lock_give(&shards[i].lock);
}

/* ------------------------------------------------------------------ */
/* The wrappers                                                        */
/* ------------------------------------------------------------------ */

/* Whether blocks are recorded: part of a run, and not the runtime's own
 * doing (dlsym, the symbol reader...). */
static inline bool tracking(void)
{
	return rt.armed && rt_self && !rt_self->in_rt;
}

RT_EXPORT void *malloc(size_t n)
{
	void *p;

	if (RT_UNLIKELY(!real.malloc)) {
		if (resolving)
			return boot_alloc(n);
		rt_heap_init();
		if (!real.malloc)
			return NULL;
	}
	p = real.malloc(n);
	if (p && tracking())
		heap_add(p, n, RT_PC(), 0);
	return p;
}

RT_EXPORT void *calloc(size_t n, size_t size)
{
	void *p;

	if (RT_UNLIKELY(!real.calloc)) {
		if (resolving) {
			if (size && n > SIZE_MAX / size)
				return NULL;
			return boot_alloc(n * size);
		}
		rt_heap_init();
		if (!real.calloc)
			return NULL;
	}
	p = real.calloc(n, size);
	if (p && tracking())
		heap_add(p, n * size, RT_PC(), 0);
	return p;
}

RT_EXPORT void free(void *p)
{
	if (!p || is_boot(p))
		return;
	if (RT_UNLIKELY(!real.free)) {
		rt_heap_init();
		if (!real.free)
			return;
	}
	if (rt.armed)
		heap_remove(p);
	real.free(p);
}

RT_EXPORT void *realloc(void *old, size_t n)
{
	void *p;

	if (is_boot(old)) {
		/* A boot block moves to the real heap. */
		p = malloc(n);
		if (p)
			memcpy(p, old, n < sizeof(boot_buf) ? n : sizeof(boot_buf));
		return p;
	}
	if (RT_UNLIKELY(!real.realloc)) {
		rt_heap_init();
		if (!real.realloc)
			return NULL;
	}
	p = real.realloc(old, n);
	if (!rt.armed)
		return p;
	/* realloc(p, 0) may free p and return NULL; a failed realloc keeps
	 * the old block. */
	if (old && (p || n == 0))
		heap_remove(old);
	if (p && tracking())
		heap_add(p, n, RT_PC(), 0);
	return p;
}

RT_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	if (RT_UNLIKELY(!real.realloc)) {
		rt_heap_init();
		if (!real.realloc)
			return NULL;
	}
	p = real.realloc(old, n * size);
	if (!rt.armed)
		return p;
	if (old && (p || n * size == 0))
		heap_remove(old);
	if (p && tracking())
		heap_add(p, n * size, RT_PC(), 0);
	return p;
}

RT_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	int rc;

	if (RT_UNLIKELY(!real.posix_memalign)) {
		rt_heap_init();
		if (!real.posix_memalign)
			return ENOMEM;
	}
	rc = real.posix_memalign(out, align, n);
	if (rc == 0 && *out && tracking())
		heap_add(*out, n, RT_PC(), align);
	return rc;
}

#define RT_ALIGNED(name, field)                                                    \
	RT_EXPORT void *name(size_t align, size_t n)                               \
	{                                                                          \
		void *p;                                                           \
		if (RT_UNLIKELY(!real.field)) {                                    \
			rt_heap_init();                                            \
			if (!real.field)                                           \
				return NULL;                                       \
		}                                                                  \
		p = real.field(align, n);                                          \
		if (p && tracking())                                               \
			heap_add(p, n, RT_PC(), align);                            \
		return p;                                                          \
	}
RT_ALIGNED(aligned_alloc, aligned_alloc)
RT_ALIGNED(memalign, memalign)
#undef RT_ALIGNED

#define RT_PAGED(name, field)                                                      \
	RT_EXPORT void *name(size_t n)                                             \
	{                                                                          \
		void *p;                                                           \
		if (RT_UNLIKELY(!real.field)) {                                    \
			rt_heap_init();                                            \
			if (!real.field)                                           \
				return NULL;                                       \
		}                                                                  \
		p = real.field(n);                                                 \
		if (p && tracking())                                               \
			heap_add(p, n, RT_PC(), (size_t)sysconf(_SC_PAGESIZE)); \
		return p;                                                          \
	}
RT_PAGED(valloc, valloc)
RT_PAGED(pvalloc, pvalloc)
#undef RT_PAGED

/* ------------------------------------------------------------------ */
/* Data objects                                                        */
/* ------------------------------------------------------------------ */

#define OBJ_BITS 14

static struct rt_obj *obj_tab[1u << OBJ_BITS];
static struct rt_obj *heap_objs;  /* their next_heap list */
static struct rt_lock obj_lock;
static uint32_t obj_next = 1;

static struct rt_obj **obj_bucket(uintptr_t key)
{
	return &obj_tab[((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - OBJ_BITS)];
}

static struct rt_obj *obj_find(uintptr_t key)
{
	for (struct rt_obj *o = __atomic_load_n(obj_bucket(key), __ATOMIC_ACQUIRE); o;
	     o = __atomic_load_n(&o->next, __ATOMIC_ACQUIRE))
		if (o->key == key)
			return o;
	return NULL;
}

/* The object of key, made from the template if new. */
static struct rt_obj *obj_get(const struct rt_obj *tmpl)
{
	struct rt_obj *o = obj_find(tmpl->key), **b;

	if (o)
		return o;
	rt_lock_take(&obj_lock);
	if (!(o = obj_find(tmpl->key)) && (o = rt_zalloc(sizeof(*o)))) {
		*o = *tmpl;
		o->id = obj_next++;
		b = obj_bucket(tmpl->key);
		o->next = *b;
		if (o->heap) {
			o->next_heap = heap_objs;
			__atomic_store_n(&heap_objs, o, __ATOMIC_RELEASE);
		}
		__atomic_store_n(b, o, __ATOMIC_RELEASE);
	}
	rt_lock_give(&obj_lock);
	return o;
}

/* The object of heap block g: one per allocation context (blocks made
 * before any stack was known share key 0), made if new. */
static struct rt_obj *heap_obj(const struct grave *g)
{
	struct rt_obj tmpl;

	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.key = (uintptr_t)g->ctx;
	tmpl.heap = true;
	tmpl.addr = g->start;
	tmpl.size = g->size;
	tmpl.align = g->align;
	tmpl.alloc = g->ctx;
	return obj_get(&tmpl);
}

struct rt_obj *rt_obj_of(uintptr_t a)
{
	struct rt_obj tmpl;
	struct grave g;
	uintptr_t start;
	size_t size;
	const char *name, *objname;

	if (heap_lookup(a, false, &g))
		return heap_obj(&g);
	if (rt_sym_data(a, &start, &size, &name, &objname)) {
		memset(&tmpl, 0, sizeof(tmpl));
		tmpl.key = start | 1;
		tmpl.addr = start;
		tmpl.size = size;
		tmpl.name = name;
		tmpl.objname = objname;
		return obj_get(&tmpl);
	}
	return NULL;
}

struct rt_obj *rt_obj_of_line(uintptr_t a)
{
	struct rt_obj *o = rt_obj_of(a);
	struct grave g;

	if (o)
		return o;
	for (o = __atomic_load_n(&heap_objs, __ATOMIC_ACQUIRE); o; o = o->next_heap)
		if (a >= o->addr && a - o->addr < (o->size ? o->size : 1))
			return o;
	/* A block freed since, among the last ones of its shard. */
	return heap_lookup(a, true, &g) ? heap_obj(&g) : NULL;
}

void rt_obj_for_each(void (*fn)(void *arg, struct rt_obj *o), void *arg)
{
	for (size_t i = 0; i < (1u << OBJ_BITS); i++)
		for (struct rt_obj *o = obj_tab[i]; o; o = o->next)
			fn(arg, o);
}

void rt_obj_lock(void)
{
	rt_lock_take(&obj_lock);
}

void rt_obj_unlock(void)
{
	rt_lock_give(&obj_lock);
}
