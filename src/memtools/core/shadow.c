/*
 * The two-level table under both shadows of the memory-tool core: a
 * directly indexed array of chunk pointers for client addresses below
 * 2^37, allocated once (it is mostly never touched, so it costs address
 * space, not memory), and a growable open-addressing hash table of chunk
 * pointers above, so that any 64-bit address has a shadow.  Chunks are
 * allocated zeroed on first touch and live until the table is finished.
 * Also the counted allocation helpers every allocation of the core goes
 * through.  Freestanding: no library calls.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mtcore_int.h"

/* ------------------------------------------------------------------ */
/* Counted allocation                                                  */
/* ------------------------------------------------------------------ */

/* The count is updated atomically: a front-end with parallel threads
 * allocates for different lines at once (mtcore.h, Concurrency). */
void *ks_mt_mem_zalloc(const struct ks_mt_alloc *a, size_t *bytes, size_t size)
{
	void *p = a->zalloc(a->ctx, size);

	if (p)
		__atomic_fetch_add(bytes, size, __ATOMIC_RELAXED);
	return p;
}

void ks_mt_mem_free(const struct ks_mt_alloc *a, size_t *bytes, void *p,
		    size_t size)
{
	if (!p)
		return;
	a->free(a->ctx, p, size);
	__atomic_fetch_sub(bytes, size, __ATOMIC_RELAXED);
}

/* Room for the allocator's pointer below the aligned block plus the worst
 * misalignment. */
#define KS_MT_ALIGN_EXTRA (64 + sizeof(void *))

void *ks_mt_mem_zalloc64(const struct ks_mt_alloc *a, size_t *bytes, size_t size)
{
	unsigned char *raw;
	uintptr_t al;

	if (size > SIZE_MAX - KS_MT_ALIGN_EXTRA)
		return NULL;
	raw = ks_mt_mem_zalloc(a, bytes, size + KS_MT_ALIGN_EXTRA);
	if (!raw)
		return NULL;
	al = ((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63;
	((void **)al)[-1] = raw;
	return (void *)al;
}

void ks_mt_mem_free64(const struct ks_mt_alloc *a, size_t *bytes, void *p,
		      size_t size)
{
	if (!p)
		return;
	ks_mt_mem_free(a, bytes, ((void **)p)[-1], size + KS_MT_ALIGN_EXTRA);
}

/* ------------------------------------------------------------------ */
/* Table                                                               */
/* ------------------------------------------------------------------ */

int ks_mt_tab_init(struct ks_mt_tab *t, const struct ks_mt_alloc *a,
		   size_t *bytes, unsigned shift, size_t chunk_bytes,
		   unsigned direct_bits)
{
	unsigned dbits = direct_bits;
	size_t pages;

	/* On a 32-bit host the direct array covers everything. */
	if (dbits > sizeof(uintptr_t) * 8)
		dbits = sizeof(uintptr_t) * 8;
	t->alloc = a;
	t->bytes = bytes;
	t->shift = shift;
	t->chunk_bytes = chunk_bytes;
	t->h = NULL;
	t->hcap = 0;
	t->hn = 0;
	t->l1_n = (uintptr_t)1 << (dbits - shift);
	pages = (t->l1_n + KS_MT_TAB_PAGE - 1) / KS_MT_TAB_PAGE;
	t->l1_used_words = (pages + 63) / 64;
	t->l1_used = ks_mt_mem_zalloc(a, bytes, t->l1_used_words * sizeof(uint64_t));
	if (!t->l1_used)
		return -12;
	t->l1 = ks_mt_mem_zalloc(a, bytes, t->l1_n * sizeof(void *));
	return t->l1 ? 0 : -12;
}

/* Whether the page of l1 holding entry i may hold a chunk pointer. */
static bool tab_page_used(const struct ks_mt_tab *t, uintptr_t i)
{
	uintptr_t p = i / KS_MT_TAB_PAGE;

	return (__atomic_load_n(&t->l1_used[p / 64], __ATOMIC_RELAXED) >> (p % 64)) & 1;
}

/* Fibonacci hashing: chunk indexes of neighbouring regions are
 * consecutive, and the multiply spreads them over the top bits. */
static size_t tab_slot(size_t cap, uintptr_t key)
{
	uint64_t hv = (uint64_t)key * UINT64_C(0x9E3779B97F4A7C15);

	return (size_t)(hv ^ (hv >> 32)) & (cap - 1);
}

void *ks_mt_tab_hget(const struct ks_mt_tab *t, uintptr_t cidx)
{
	size_t i;

	if (t->hn == 0)
		return NULL;
	for (i = tab_slot(t->hcap, cidx);; i = (i + 1) & (t->hcap - 1)) {
		if (t->h[i].key == cidx)
			return t->h[i].chunk;
		if (t->h[i].key == 0)
			return NULL;
	}
}

/* Inserts a key known to be absent into h (cap slots, not full). */
static void tab_hput(struct ks_mt_tab_ent *h, size_t cap, uintptr_t key,
		     void *chunk)
{
	size_t i;

	for (i = tab_slot(cap, key); h[i].key != 0; i = (i + 1) & (cap - 1))
		;
	h[i].key = key;
	h[i].chunk = chunk;
}

/* Doubles the hash table (or creates it); keeps it at most half full so
 * that probes stay short. */
static int tab_hgrow(struct ks_mt_tab *t)
{
	size_t ocap = t->hcap, ncap = ocap ? ocap * 2 : 16, i;
	struct ks_mt_tab_ent *oh = t->h, *nh;

	if (ncap > SIZE_MAX / sizeof(*nh))
		return -12;
	nh = ks_mt_mem_zalloc(t->alloc, t->bytes, ncap * sizeof(*nh));
	if (!nh)
		return -12;
	t->h = nh;
	t->hcap = ncap;
	for (i = 0; i < ocap; i++)
		if (oh[i].key != 0)
			tab_hput(nh, ncap, oh[i].key, oh[i].chunk);
	ks_mt_mem_free(t->alloc, t->bytes, oh, ocap * sizeof(*oh));
	return 0;
}

void *ks_mt_tab_make(struct ks_mt_tab *t, uintptr_t cidx)
{
	void *ch = ks_mt_tab_get(t, cidx);

	if (ch)
		return ch;
	if (cidx >= t->l1_n && (t->hn + 1) * 2 > t->hcap && tab_hgrow(t) != 0)
		return NULL;
	ch = ks_mt_mem_zalloc64(t->alloc, t->bytes, t->chunk_bytes);
	if (!ch)
		return NULL;
	if (cidx < t->l1_n) {
		void *seen = NULL;
		uintptr_t p = cidx / KS_MT_TAB_PAGE;

		/* Another thread may be making the same chunk: the first
		 * one published wins, the other is given back. */
		if (!__atomic_compare_exchange_n(&t->l1[cidx], &seen, ch, false,
						 __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
			ks_mt_mem_free64(t->alloc, t->bytes, ch, t->chunk_bytes);
			return seen;
		}
		__atomic_fetch_or(&t->l1_used[p / 64], UINT64_C(1) << (p % 64),
				  __ATOMIC_RELAXED);
	} else {
		tab_hput(t->h, t->hcap, cidx, ch);
		t->hn++;
	}
	return ch;
}

void ks_mt_tab_fini(struct ks_mt_tab *t,
		    void (*fn)(void *arg, uintptr_t cidx, void *chunk), void *arg)
{
	uintptr_t i;
	size_t j;

	if (t->l1) {
		for (i = 0; i < t->l1_n; i++) {
			if (i % KS_MT_TAB_PAGE == 0 && !tab_page_used(t, i)) {
				i += KS_MT_TAB_PAGE - 1;
				continue;
			}
			if (!t->l1[i])
				continue;
			if (fn)
				fn(arg, i, t->l1[i]);
			ks_mt_mem_free64(t->alloc, t->bytes, t->l1[i], t->chunk_bytes);
		}
		ks_mt_mem_free(t->alloc, t->bytes, t->l1, t->l1_n * sizeof(void *));
		t->l1 = NULL;
	}
	ks_mt_mem_free(t->alloc, t->bytes, t->l1_used, t->l1_used_words * sizeof(uint64_t));
	t->l1_used = NULL;
	for (j = 0; j < t->hcap; j++) {
		if (t->h[j].key == 0)
			continue;
		if (fn)
			fn(arg, t->h[j].key, t->h[j].chunk);
		ks_mt_mem_free64(t->alloc, t->bytes, t->h[j].chunk, t->chunk_bytes);
	}
	ks_mt_mem_free(t->alloc, t->bytes, t->h, t->hcap * sizeof(*t->h));
	t->h = NULL;
	t->hcap = t->hn = 0;
}

/* Heapsort of the hash entries by key: no recursion and no extra memory,
 * and the core has no qsort. */
static void ent_sift(struct ks_mt_tab_ent *e, size_t root, size_t n)
{
	struct ks_mt_tab_ent tmp;
	size_t child;

	while ((child = 2 * root + 1) < n) {
		if (child + 1 < n && e[child + 1].key > e[child].key)
			child++;
		if (e[root].key >= e[child].key)
			return;
		tmp = e[root];
		e[root] = e[child];
		e[child] = tmp;
		root = child;
	}
}

static void ent_sort(struct ks_mt_tab_ent *e, size_t n)
{
	struct ks_mt_tab_ent tmp;
	size_t i;

	for (i = n / 2; i-- > 0;)
		ent_sift(e, i, n);
	for (i = n; i-- > 1;) {
		tmp = e[0];
		e[0] = e[i];
		e[i] = tmp;
		ent_sift(e, 0, i);
	}
}

void ks_mt_tab_for_each(const struct ks_mt_tab *t,
			void (*fn)(void *arg, uintptr_t cidx, void *chunk),
			void *arg)
{
	struct ks_mt_tab_ent *tmp;
	uintptr_t i, prev;
	size_t j, k, n = 0;
	size_t bytes = 0; /* the temporary copy is not shadow memory */

	for (i = 0; i < t->l1_n; i++) {
		if (i % KS_MT_TAB_PAGE == 0 && !tab_page_used(t, i)) {
			i += KS_MT_TAB_PAGE - 1;
			continue;
		}
		if (t->l1[i])
			fn(arg, i, t->l1[i]);
	}
	if (t->hn == 0)
		return;
	tmp = ks_mt_mem_zalloc(t->alloc, &bytes, t->hn * sizeof(*tmp));
	if (tmp) {
		for (j = 0; j < t->hcap; j++)
			if (t->h[j].key != 0)
				tmp[n++] = t->h[j];
		ent_sort(tmp, n);
		for (j = 0; j < n; j++)
			fn(arg, tmp[j].key, tmp[j].chunk);
		ks_mt_mem_free(t->alloc, &bytes, tmp, t->hn * sizeof(*tmp));
		return;
	}
	/* Out of memory for the copy: pick the next larger key each time,
	 * quadratic but still in order. */
	prev = 0;
	for (k = 0; k < t->hn; k++) {
		size_t best = t->hcap;

		for (j = 0; j < t->hcap; j++)
			if (t->h[j].key > prev &&
			    (best == t->hcap || t->h[j].key < t->h[best].key))
				best = j;
		if (best == t->hcap)
			return;
		prev = t->h[best].key;
		fn(arg, t->h[best].key, t->h[best].chunk);
	}
}
