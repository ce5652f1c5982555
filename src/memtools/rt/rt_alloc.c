/*
 * The runtime's own memory.  The program's malloc is wrapped (rt_heap.c)
 * and may be replaced by the program, so the runtime never calls it: its
 * tables, sites, contexts and the core's shadow come from anonymous
 * mappings here.  Small sizes are rounded up to a power of two and served
 * from per-size free lists refilled a slab at a time; from 64 KiB up each
 * block is a mapping of its own, reserved without swap (MAP_NORESERVE),
 * so that the core's direct table -- gigabytes of address space of which
 * a few pages are ever touched -- costs what is touched (and, without
 * transparent huge pages, no more).
 */
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rt_int.h"

#define CLASS_MIN 4      /* 16 bytes */
#define CLASS_MAX 16     /* 64 KiB: larger blocks are mappings of their own */
#define SLAB_BYTES (256u * 1024)

struct free_block {
	struct free_block *next;
};

struct size_class {
	struct rt_lock lock;
	struct free_block *free;
	char *slab, *slab_end;     /* not yet carved */
};

static struct size_class classes[CLASS_MAX + 1];

static unsigned class_of(size_t size)
{
	unsigned c = CLASS_MIN;

	while (((size_t)1 << c) < size)
		c++;
	return c;
}

/* No transparent huge pages: the shadow is touched sparsely (the direct
 * table in a few places of its gigabytes), and one touched byte would
 * otherwise cost 2 MiB. */
static void *map_zeroed(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, len, MADV_NOHUGEPAGE);
	return p;
}

static size_t page_round(size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (size + pg - 1) & ~(pg - 1);
}

void *rt_zalloc(size_t size)
{
	struct size_class *sc;
	size_t bsize;
	void *p;
	unsigned c;

	if (size == 0)
		size = 1;
	if (size > ((size_t)1 << CLASS_MAX))
		return size > SIZE_MAX / 2 ? NULL : map_zeroed(page_round(size));
	c = class_of(size);
	bsize = (size_t)1 << c;
	sc = &classes[c];
	rt_lock_take(&sc->lock);
	if (sc->free) {
		p = sc->free;
		sc->free = sc->free->next;
		rt_lock_give(&sc->lock);
		memset(p, 0, bsize);
		return p;
	}
	if ((size_t)(sc->slab_end - sc->slab) < bsize) {
		size_t len = bsize > SLAB_BYTES ? bsize * 4 : SLAB_BYTES;
		char *s = map_zeroed(len);

		if (!s) {
			rt_lock_give(&sc->lock);
			return NULL;
		}
		/* What remains of the old slab is dropped: a few bytes. */
		sc->slab = s;
		sc->slab_end = s + len;
	}
	p = sc->slab;
	sc->slab += bsize;
	rt_lock_give(&sc->lock);
	return p; /* fresh from the mapping: zero */
}

void rt_free(void *p, size_t size)
{
	struct size_class *sc;
	struct free_block *b = p;

	if (!p)
		return;
	if (size == 0)
		size = 1;
	if (size > ((size_t)1 << CLASS_MAX)) {
		munmap(p, page_round(size));
		return;
	}
	sc = &classes[class_of(size)];
	rt_lock_take(&sc->lock);
	b->next = sc->free;
	sc->free = b;
	rt_lock_give(&sc->lock);
}

char *rt_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = rt_zalloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

void rt_alloc_lock_all(void)
{
	for (unsigned c = CLASS_MIN; c <= CLASS_MAX; c++)
		rt_lock_take(&classes[c].lock);
}

void rt_alloc_unlock_all(void)
{
	for (unsigned c = CLASS_MIN; c <= CLASS_MAX; c++)
		rt_lock_give(&classes[c].lock);
}

static void *core_zalloc(void *ctx, size_t size)
{
	(void)ctx;
	return rt_zalloc(size);
}

static void core_free(void *ctx, void *p, size_t size)
{
	(void)ctx;
	rt_free(p, size);
}

const struct ks_mt_alloc rt_core_alloc = { core_zalloc, core_free, NULL };

/* ------------------------------------------------------------------ */
/* Locks                                                               */
/* ------------------------------------------------------------------ */

void rt_lock_spin(struct rt_lock *l)
{
	unsigned spins = 0;

	do {
		while (__atomic_load_n(&l->v, __ATOMIC_RELAXED)) {
			if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
				__builtin_ia32_pause();
#endif
			} else {
				/* The holder may not be running: let it. */
				sched_yield();
			}
		}
	} while (__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE));
}

bool rt_lock_take_bounded(struct rt_lock *l)
{
	struct timespec ts = { 0, 5000 };

	for (unsigned i = 0; i < 200000; i++) {
		if (!__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE))
			return true;
		if (i > 64)
			nanosleep(&ts, NULL);
	}
	return false;
}
