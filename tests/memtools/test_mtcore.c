/*
 * Unit tests for the freestanding core of kscope's memory tools
 * (src/memtools/core): the bitmap method's cold misses, misses and
 * invalidations on the paper's sequences, lines crossed by one access,
 * hundreds of threads and thread ids past the inline word, addresses past
 * the direct table up to the top of the address space, the ablation
 * switches (which must not change any count), false-sharing verdicts,
 * word masks, per-site entries with their overflow and contexts, and
 * report order.  A reference model written the obvious way checks long random runs, and
 * a counting allocator checks that every byte is accounted for and freed.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mtcore.h"

#define EV_C KS_MT_EV_COLD
#define EV_M KS_MT_EV_MISS
#define EV_I KS_MT_EV_INVAL
#define TOP ((uintptr_t)UINTPTR_MAX)
#define HIGH ((uintptr_t)1 << 37) /* first address past the direct table */

/* ------------------------------------------------------------------ */
/* A counting allocator                                                */
/* ------------------------------------------------------------------ */

/* Each block carries its size in front, so frees are checked against it.
 * With use_mmap the blocks are page-aligned mappings that a test can
 * write-protect. */
#define HDR 16

struct tracker {
	size_t outstanding;   /* bytes handed out, not yet freed */
	size_t allocs;        /* successful allocations */
	long fail_after;      /* allocations still allowed; < 0: unlimited */
	bool use_mmap;
	struct {
		unsigned char *base;
		size_t len;
	} maps[32];
	unsigned nmaps;
};

static void tracker_init(struct tracker *t)
{
	memset(t, 0, sizeof(*t));
	t->fail_after = -1;
}

static void *t_zalloc(void *ctx, size_t size)
{
	struct tracker *t = ctx;
	unsigned char *p;

	if (t->fail_after == 0)
		return NULL;
	if (t->fail_after > 0)
		t->fail_after--;
	if (t->use_mmap) {
		size_t len = (size + HDR + 4095) & ~(size_t)4095;

		assert_true(t->nmaps < 32);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(p != MAP_FAILED);
		t->maps[t->nmaps].base = p;
		t->maps[t->nmaps].len = len;
		t->nmaps++;
	} else {
		p = calloc(1, size + HDR);
		assert_non_null(p);
	}
	((size_t *)(void *)p)[0] = size;
	((size_t *)(void *)p)[1] = t->use_mmap;
	t->outstanding += size;
	t->allocs++;
	return p + HDR;
}

static void t_free(void *ctx, void *q, size_t size)
{
	struct tracker *t = ctx;
	unsigned char *p;
	unsigned i;

	assert_non_null(q);
	p = (unsigned char *)q - HDR;
	assert_int_equal(((size_t *)(void *)p)[0], size);
	assert_true(t->outstanding >= size);
	t->outstanding -= size;
	if (!((size_t *)(void *)p)[1]) {
		free(p);
		return;
	}
	for (i = 0; i < t->nmaps; i++) {
		if (t->maps[i].base == p) {
			munmap(p, t->maps[i].len);
			t->maps[i] = t->maps[--t->nmaps];
			return;
		}
	}
	fail_msg("freeing a mapping that was not handed out");
}

static struct ks_mt_alloc alloc_of(struct tracker *t)
{
	struct ks_mt_alloc a = { t_zalloc, t_free, t };

	return a;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static struct ks_mt_config cfg_make(unsigned line, unsigned maxthr, bool fs)
{
	struct ks_mt_config c;

	memset(&c, 0, sizeof(c));
	c.line_size = line;
	c.max_threads = maxthr;
	c.falseshare = fs;
	c.min_write = c.pad_smu = c.thread_isolation = true;
	return c;
}

static struct ks_mt *mt_new(struct tracker *t, const struct ks_mt_config *c)
{
	struct ks_mt_alloc a = alloc_of(t);
	struct ks_mt *m = NULL;

	assert_int_equal(ks_mt_init(&m, c, &a), 0);
	assert_non_null(m);
	assert_int_equal(ks_mt_shadow_bytes(m), t->outstanding);
	return m;
}

static void mt_done(struct tracker *t, struct ks_mt *m)
{
	assert_int_equal(ks_mt_shadow_bytes(m), t->outstanding);
	ks_mt_fini(m);
	assert_int_equal(t->outstanding, 0);
}

#define CHECK_COUNTS(c, a, r, w, co, mi, in)                                   \
	do {                                                                   \
		assert_int_equal((c).accesses, (a));                           \
		assert_int_equal((c).reads, (r));                              \
		assert_int_equal((c).writes, (w));                             \
		assert_int_equal((c).cold_misses, (co));                       \
		assert_int_equal((c).misses, (mi));                            \
		assert_int_equal((c).invalidations, (in));                     \
	} while (0)

static struct ks_mt_counts tcounts(const struct ks_mt *m, unsigned tid)
{
	struct ks_mt_counts c;

	memset(&c, 0xa5, sizeof(c)); /* must all be overwritten */
	ks_mt_thread_counts(m, tid, &c);
	return c;
}

static struct ks_mt_counts totals(const struct ks_mt *m)
{
	struct ks_mt_counts c;

	memset(&c, 0xa5, sizeof(c));
	ks_mt_total_counts(m, &c);
	return c;
}

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic across runs and hosts */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * UINT64_C(2685821657736338717);
}

/* A deep copy of the lines a ks_mt_for_each_shared_line call reports. */
struct got_line {
	struct ks_mt_line_info li;
	struct ks_mt_line_thread *thr;
	struct ks_mt_line_site *site;
};

struct got {
	struct got_line *l;
	unsigned n, cap;
};

static void got_fn(void *arg, const struct ks_mt_line_info *li)
{
	struct got *g = arg;
	struct got_line *gl;

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		g->l = realloc(g->l, g->cap * sizeof(*g->l));
		assert_non_null(g->l);
	}
	gl = &g->l[g->n++];
	gl->li = *li;
	gl->thr = malloc((li->nthreads + 1) * sizeof(*gl->thr));
	gl->site = malloc((li->nsites + 1) * sizeof(*gl->site));
	assert_non_null(gl->thr);
	assert_non_null(gl->site);
	memcpy(gl->thr, li->threads, li->nthreads * sizeof(*gl->thr));
	memcpy(gl->site, li->sites, li->nsites * sizeof(*gl->site));
}

static void got_collect(struct ks_mt *m, struct got *g)
{
	unsigned i;

	memset(g, 0, sizeof(*g));
	ks_mt_for_each_shared_line(m, got_fn, g);
	for (i = 1; i < g->n; i++)
		assert_true(g->l[i - 1].li.line_addr < g->l[i].li.line_addr);
}

static void got_free(struct got *g)
{
	unsigned i;

	for (i = 0; i < g->n; i++) {
		free(g->l[i].thr);
		free(g->l[i].site);
	}
	free(g->l);
	memset(g, 0, sizeof(*g));
}

static const struct ks_mt_line_thread *got_thread(const struct got_line *gl,
						  unsigned tid)
{
	unsigned i;

	for (i = 0; i < gl->li.nthreads; i++)
		if (gl->thr[i].tid == tid)
			return &gl->thr[i];
	fail_msg("thread %u not on the line", tid);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

static void test_bad_config(void **state)
{
	static const unsigned bad_lines[] = { 0, 1, 8, 15, 24, 48, 96, 8192, 1u << 31 };
	struct tracker t;
	struct ks_mt_alloc a, bad;
	struct ks_mt_config c;
	struct ks_mt *m;
	unsigned i, j;

	(void)state;
	tracker_init(&t);
	a = alloc_of(&t);
	c = cfg_make(64, 8, false);
	for (i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
		c.line_size = bad_lines[i];
		m = (struct ks_mt *)&c;
		assert_int_equal(ks_mt_init(&m, &c, &a), -22);
		assert_null(m);
	}
	c.line_size = 64;
	c.max_threads = 0;
	assert_int_equal(ks_mt_init(&m, &c, &a), -22);
	c.max_threads = KS_MT_MAX_THREADS + 1;
	assert_int_equal(ks_mt_init(&m, &c, &a), -22);
	c.max_threads = ~0u;
	assert_int_equal(ks_mt_init(&m, &c, &a), -22);
	c.max_threads = 8;
	assert_int_equal(ks_mt_init(NULL, &c, &a), -22);
	assert_int_equal(ks_mt_init(&m, NULL, &a), -22);
	assert_int_equal(ks_mt_init(&m, &c, NULL), -22);
	bad = a;
	bad.zalloc = NULL;
	assert_int_equal(ks_mt_init(&m, &c, &bad), -22);
	bad = a;
	bad.free = NULL;
	assert_int_equal(ks_mt_init(&m, &c, &bad), -22);
	assert_int_equal(t.allocs, 0); /* rejected before allocating */

	/* The limits themselves are fine, in every mode. */
	for (i = 16; i <= 4096; i *= 2) {
		for (j = 0; j < 4; j++) {
			c = cfg_make(i, j & 1 ? KS_MT_MAX_THREADS : 1, j & 2);
			c.thread_isolation = j == 1;
			m = mt_new(&t, &c);
			assert_int_equal(ks_mt_threads_seen(m), 0);
			mt_done(&t, m);
		}
	}
}

/* Every allocation of init failing in turn: -12 and nothing leaked. */
static void test_init_oom(void **state)
{
	struct tracker t;
	struct ks_mt_alloc a;
	struct ks_mt_config c;
	struct ks_mt *m;
	unsigned mode;
	long n;
	int rc;

	(void)state;
	for (mode = 0; mode < 4; mode++) {
		c = cfg_make(64, 100, mode & 1);
		c.thread_isolation = mode & 2;
		for (n = 0;; n++) {
			tracker_init(&t);
			a = alloc_of(&t);
			t.fail_after = n;
			rc = ks_mt_init(&m, &c, &a);
			if (rc == 0) {
				mt_done(&t, m);
				break;
			}
			assert_int_equal(rc, -12);
			assert_null(m);
			assert_int_equal(t.outstanding, 0);
		}
		assert_true(n >= 3); /* itself, the direct table, the counters */
	}
}

/* ------------------------------------------------------------------ */
/* The bitmap method                                                   */
/* ------------------------------------------------------------------ */

static void test_paper_sequence(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct ks_mt_site s0, s1;
	struct ks_mt_counts k;
	const uintptr_t x = 0x10000;
	unsigned mode;

	(void)state;
	for (mode = 0; mode < 4; mode++) {
		tracker_init(&t);
		c = cfg_make(64, 4, mode & 1);
		c.thread_isolation = mode & 2;
		m = mt_new(&t, &c);
		memset(&s0, 0, sizeof(s0));
		memset(&s1, 0, sizeof(s1));

		assert_int_equal(ks_mt_access(m, 0, x, 4, false, &s0), EV_C);
		assert_int_equal(ks_mt_access(m, 0, x + 8, 4, false, &s0), 0);
		/* T1 reads the line T0 holds: a miss, both hold it. */
		assert_int_equal(ks_mt_access(m, 1, x + 32, 8, false, &s1), EV_M);
		/* T0 writes: it has a copy, T1's is invalidated. */
		assert_int_equal(ks_mt_access(m, 0, x, 4, true, &s0), EV_I);
		assert_int_equal(ks_mt_access(m, 0, x, 4, true, &s0), 0);
		/* T1 lost its copy. */
		assert_int_equal(ks_mt_access(m, 1, x + 32, 8, false, &s1), EV_M);
		assert_int_equal(ks_mt_access(m, 1, x + 32, 8, true, &s1), EV_I);
		assert_int_equal(ks_mt_access(m, 0, x, 4, true, &s0), EV_M | EV_I);
		assert_int_equal(ks_mt_access(m, 2, x + 60, 4, true, NULL), EV_M | EV_I);
		assert_int_equal(ks_mt_access(m, 2, x + 60, 4, false, NULL), 0);
		/* A cold write has nobody to invalidate. */
		assert_int_equal(ks_mt_access(m, 3, x + 64, 4, true, NULL), EV_C);

		k = tcounts(m, 0);
		CHECK_COUNTS(k, 5, 2, 3, 1, 1, 2);
		CHECK_COUNTS(s0.c, 5, 2, 3, 1, 1, 2);
		k = tcounts(m, 1);
		CHECK_COUNTS(k, 3, 2, 1, 0, 2, 1);
		CHECK_COUNTS(s1.c, 3, 2, 1, 0, 2, 1);
		k = tcounts(m, 2);
		CHECK_COUNTS(k, 2, 1, 1, 0, 1, 1);
		k = tcounts(m, 3);
		CHECK_COUNTS(k, 1, 0, 1, 1, 0, 0);
		k = tcounts(m, 4); /* past max_threads */
		CHECK_COUNTS(k, 0, 0, 0, 0, 0, 0);
		k = totals(m);
		CHECK_COUNTS(k, 11, 5, 6, 2, 4, 4);
		assert_int_equal(ks_mt_threads_seen(m), 4);
		mt_done(&t, m);
	}
}

static void test_outside_contract(void **state)
{
	struct tracker t;
	struct ks_mt_config c = cfg_make(64, 4, true);
	struct ks_mt *m;
	struct ks_mt_counts k;
	struct ks_mt_site s;

	(void)state;
	tracker_init(&t);
	m = mt_new(&t, &c);
	memset(&s, 0, sizeof(s));
	assert_int_equal(ks_mt_access(m, 4, 0x1000, 4, true, &s), 0);
	assert_int_equal(ks_mt_access(m, 1000, 0x1000, 4, true, &s), 0);
	assert_int_equal(ks_mt_access(m, 1, 0x1000, 0, true, &s), 0);
	k = totals(m);
	CHECK_COUNTS(k, 0, 0, 0, 0, 0, 0);
	CHECK_COUNTS(s.c, 0, 0, 0, 0, 0, 0);
	assert_int_equal(ks_mt_threads_seen(m), 0);
	/* The line was not touched: still cold. */
	assert_int_equal(ks_mt_access(m, 1, 0x1000, 4, true, &s), EV_C);
	assert_int_equal(ks_mt_threads_seen(m), 2);
	mt_done(&t, m);
}

static void test_line_crossing(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct ks_mt_counts k;
	struct ks_mt_site s;
	const uintptr_t x = 0x20000;

	(void)state;
	tracker_init(&t);
	c = cfg_make(64, 4, false);
	m = mt_new(&t, &c);
	memset(&s, 0, sizeof(s));
	assert_int_equal(ks_mt_access(m, 0, x + 60, 8, false, &s), EV_C);
	k = tcounts(m, 0);
	CHECK_COUNTS(k, 1, 1, 0, 2, 0, 0); /* one access, two cold lines */
	CHECK_COUNTS(s.c, 1, 1, 0, 2, 0, 0);
	assert_int_equal(ks_mt_access(m, 1, x + 62, 4, false, NULL), EV_M);
	k = tcounts(m, 1);
	CHECK_COUNTS(k, 1, 1, 0, 0, 2, 0);
	/* The second line only: T0's copy there goes. */
	assert_int_equal(ks_mt_access(m, 1, x + 64, 4, true, NULL), EV_I);
	assert_int_equal(ks_mt_access(m, 0, x + 56, 16, false, NULL), EV_M);
	k = tcounts(m, 0);
	CHECK_COUNTS(k, 2, 2, 0, 2, 1, 0);
	/* A write over both lines, which T0 and T1 both hold: two
	 * invalidations, no miss. */
	assert_int_equal(ks_mt_access(m, 1, x + 48, 32, true, NULL), EV_I);
	k = tcounts(m, 1);
	CHECK_COUNTS(k, 3, 1, 2, 0, 2, 3);
	/* An access spanning three lines and a cold one at the end. */
	assert_int_equal(ks_mt_access(m, 2, x + 63, 66, false, NULL), EV_C | EV_M);
	k = tcounts(m, 2);
	CHECK_COUNTS(k, 1, 1, 0, 1, 2, 0);
	mt_done(&t, m);

	/* 16-byte lines: a 64-byte access touches 5 of them. */
	c = cfg_make(16, 4, true);
	m = mt_new(&t, &c);
	assert_int_equal(ks_mt_access(m, 0, x + 8, 64, false, NULL), EV_C);
	k = tcounts(m, 0);
	CHECK_COUNTS(k, 1, 1, 0, 5, 0, 0);
	mt_done(&t, m);
}

static void test_top_of_address_space(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct ks_mt_counts k;
	unsigned fs;

	(void)state;
	for (fs = 0; fs < 2; fs++) {
		tracker_init(&t);
		c = cfg_make(64, 4, fs);
		m = mt_new(&t, &c);
		/* Would wrap: clipped to the last line. */
		assert_int_equal(ks_mt_access(m, 0, TOP - 3, 8, true, NULL), EV_C);
		k = tcounts(m, 0);
		CHECK_COUNTS(k, 1, 0, 1, 1, 0, 0);
		assert_int_equal(ks_mt_access(m, 0, TOP - 63, 1, false, NULL), 0);
		assert_int_equal(ks_mt_access(m, 1, TOP, 1, false, NULL), EV_M);
		/* A cold line below and a hit on the top one. */
		assert_int_equal(ks_mt_access(m, 1, TOP - 64, 2, false, NULL), EV_C);
		/* Line 0 is a different line. */
		assert_int_equal(ks_mt_access(m, 0, 0, 1, false, NULL), EV_C);
		/* Both sides of 2^37 and far above. */
		assert_int_equal(ks_mt_access(m, 0, HIGH - 4, 8, false, NULL), EV_C);
		k = tcounts(m, 0);
		assert_int_equal(k.cold_misses, 4);
		assert_int_equal(ks_mt_access(m, 1, HIGH, 4, true, NULL), EV_M | EV_I);
		assert_int_equal(ks_mt_access(m, 1, HIGH - 1, 1, true, NULL), EV_M | EV_I);
		assert_int_equal(ks_mt_access(m, 1, (uintptr_t)0xffff800000000000u, 8, true, NULL),
				 EV_C);
		mt_done(&t, m);
	}
}

/* Threads past 63 keep their copies in the extension bitmap; 300 threads
 * on one line, and the largest tid. */
static void test_many_threads(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct ks_mt_counts k;
	struct got g;
	const uintptr_t x = 0x30000;
	unsigned mode, i;

	(void)state;
	for (mode = 0; mode < 8; mode++) {
		tracker_init(&t);
		c = cfg_make(64, 300, mode & 1);
		c.min_write = mode & 2;
		c.pad_smu = mode & 4;
		m = mt_new(&t, &c);
		for (i = 0; i < 300; i++)
			assert_int_equal(ks_mt_access(m, i, x + (i % 16) * 4, 4, false, NULL),
					 i == 0 ? EV_C : EV_M);
		k = totals(m);
		CHECK_COUNTS(k, 300, 300, 0, 1, 299, 0);
		for (i = 0; i < 300; i++) /* everybody holds it */
			assert_int_equal(ks_mt_access(m, i, x, 4, false, NULL), 0);
		assert_int_equal(ks_mt_access(m, 299, x, 4, true, NULL), EV_I);
		assert_int_equal(ks_mt_access(m, 299, x, 4, true, NULL), 0);
		assert_int_equal(ks_mt_access(m, 0, x, 4, true, NULL), EV_M | EV_I);
		assert_int_equal(ks_mt_access(m, 299, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 100, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 100, x, 4, true, NULL), EV_I);
		assert_int_equal(ks_mt_access(m, 100, x, 4, true, NULL), 0);
		assert_int_equal(ks_mt_access(m, 5, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 200, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 100, x, 4, true, NULL), EV_I);
		assert_int_equal(ks_mt_access(m, 100, x, 4, true, NULL), 0);
		assert_int_equal(ks_mt_access(m, 100, x, 4, false, NULL), 0);
		assert_int_equal(ks_mt_access(m, 200, x, 4, true, NULL), EV_M | EV_I);
		assert_int_equal(ks_mt_access(m, 62, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 63, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 62, x, 4, true, NULL), EV_I);
		assert_int_equal(ks_mt_access(m, 63, x, 4, true, NULL), EV_M | EV_I);
		assert_int_equal(ks_mt_access(m, 63, x, 4, true, NULL), 0);
		assert_int_equal(ks_mt_access(m, 64, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 63, x, 4, false, NULL), 0);
		assert_int_equal(ks_mt_access(m, 64, x, 4, true, NULL), EV_I);
		assert_int_equal(ks_mt_access(m, 63, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 1, x, 4, false, NULL), EV_M);
		assert_int_equal(ks_mt_access(m, 64, x, 4, true, NULL), EV_I);
		assert_int_equal(ks_mt_access(m, 64, x, 4, true, NULL), 0);
		assert_int_equal(ks_mt_threads_seen(m), 300);
		k = totals(m);
		assert_int_equal(k.misses, 299 + 12);
		assert_int_equal(k.invalidations, 9);
		if (c.falseshare) {
			got_collect(m, &g);
			assert_int_equal(g.n, 1);
			assert_int_equal(g.l[0].li.nthreads, 300);
			assert_int_equal(g.l[0].li.misses, k.misses);
			assert_int_equal(g.l[0].li.invalidations, k.invalidations);
			for (i = 0; i < 300; i++)
				assert_int_equal(g.l[0].thr[i].tid, i);
			assert_int_equal(g.l[0].li.verdict, KS_MT_TRUE);
			got_free(&g);
		}
		mt_done(&t, m);
	}

	/* The largest tid and its neighbours at word boundaries. */
	tracker_init(&t);
	c = cfg_make(64, KS_MT_MAX_THREADS, true);
	m = mt_new(&t, &c);
	assert_int_equal(ks_mt_access(m, 4095, x, 4, false, NULL), EV_C);
	assert_int_equal(ks_mt_access(m, 4032, x, 4, false, NULL), EV_M);
	assert_int_equal(ks_mt_access(m, 4095, x, 4, false, NULL), 0);
	assert_int_equal(ks_mt_access(m, 4095, x, 4, true, NULL), EV_I);
	assert_int_equal(ks_mt_access(m, 4032, x, 4, false, NULL), EV_M);
	assert_int_equal(ks_mt_access(m, 127, x, 4, true, NULL), EV_M | EV_I);
	assert_int_equal(ks_mt_access(m, 128, x, 4, true, NULL), EV_M | EV_I);
	assert_int_equal(ks_mt_access(m, 128, x + 4, 4, true, NULL), 0);
	assert_int_equal(ks_mt_threads_seen(m), 4096);
	k = tcounts(m, 4095);
	CHECK_COUNTS(k, 3, 2, 1, 1, 0, 1);
	mt_done(&t, m);
}

/* ------------------------------------------------------------------ */
/* A reference model, and random runs against it                       */
/* ------------------------------------------------------------------ */

/* The bitmap method and the word masks written the obvious way: a flag
 * per thread per line. */
struct rline {
	uintptr_t line;
	bool touched;
	unsigned char *hold;
	uint64_t *rmask, *wmask, *reads, *writes;
	uint64_t misses, invals;
};

struct ref {
	unsigned ls, ws, nthr;
	struct rline *l;
	unsigned n, cap;
	uint64_t cnt[KS_MT_MAX_THREADS][6];
	uint64_t sitecnt[8][6];
	unsigned seen;
};

static struct rline *ref_line(struct ref *r, uintptr_t line)
{
	struct rline *x;
	unsigned i;

	for (i = 0; i < r->n; i++)
		if (r->l[i].line == line)
			return &r->l[i];
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 32;
		r->l = realloc(r->l, r->cap * sizeof(*r->l));
		assert_non_null(r->l);
	}
	x = &r->l[r->n++];
	memset(x, 0, sizeof(*x));
	x->line = line;
	x->hold = calloc(r->nthr, 1);
	x->rmask = calloc(r->nthr, 8);
	x->wmask = calloc(r->nthr, 8);
	x->reads = calloc(r->nthr, 8);
	x->writes = calloc(r->nthr, 8);
	assert_true(x->hold && x->rmask && x->wmask && x->reads && x->writes);
	return x;
}

static struct ref *ref_new(unsigned line_size, unsigned nthr)
{
	struct ref *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->ls = (unsigned)__builtin_ctz(line_size);
	r->ws = line_size / 64 > 1 ? line_size / 64 : 1;
	r->nthr = nthr;
	return r;
}

static void ref_free(struct ref *r)
{
	unsigned i;

	for (i = 0; i < r->n; i++) {
		free(r->l[i].hold);
		free(r->l[i].rmask);
		free(r->l[i].wmask);
		free(r->l[i].reads);
		free(r->l[i].writes);
	}
	free(r->l);
	free(r);
}

static unsigned ref_access(struct ref *r, unsigned tid, uintptr_t addr,
			   unsigned size, bool write, int site)
{
	uintptr_t last = addr + size - 1, line, lmask = ((uintptr_t)1 << r->ls) - 1;
	unsigned ev = 0, ncold = 0, nmiss = 0, ninv = 0, t, lo, hi, f;
	bool others;

	if (last < addr)
		last = TOP;
	for (line = addr >> r->ls;; line++) {
		struct rline *x = ref_line(r, line);

		if (!x->touched) {
			x->touched = true;
			ev |= EV_C;
			ncold++;
		} else {
			if (!x->hold[tid]) {
				ev |= EV_M;
				nmiss++;
				x->misses++;
			}
			others = false;
			for (t = 0; t < r->nthr; t++)
				if (t != tid && x->hold[t])
					others = true;
			if (write && others) {
				ev |= EV_I;
				ninv++;
				x->invals++;
			}
		}
		if (write)
			memset(x->hold, 0, r->nthr);
		x->hold[tid] = 1;
		lo = (addr >> r->ls) == line ? (unsigned)(addr & lmask) : 0;
		hi = (last >> r->ls) == line ? (unsigned)(last & lmask) : (unsigned)lmask;
		for (f = lo / r->ws; f <= hi / r->ws; f++) {
			if (write)
				x->wmask[tid] |= UINT64_C(1) << f;
			else
				x->rmask[tid] |= UINT64_C(1) << f;
		}
		if (write)
			x->writes[tid]++;
		else
			x->reads[tid]++;
		if (line == last >> r->ls)
			break;
	}
	{
		uint64_t add[6] = { 1, !write, write, ncold, nmiss, ninv };

		for (f = 0; f < 6; f++) {
			r->cnt[tid][f] += add[f];
			if (site >= 0)
				r->sitecnt[site][f] += add[f];
		}
	}
	if (tid >= r->seen)
		r->seen = tid + 1;
	return ev;
}

static enum ks_mt_verdict ref_verdict(const struct rline *x, unsigned nthr)
{
	unsigned i, j, users = 0;
	uint64_t tru = 0, fal = 0;
	bool any = false;

	for (i = 0; i < nthr; i++) {
		uint64_t ai = x->reads[i] + x->writes[i];
		if (!ai)
			continue;
		users++;
		for (j = i + 1; j < nthr; j++) {
			uint64_t aj = x->reads[j] + x->writes[j], w;
			if (!aj)
				continue;
			if (!x->wmask[i] && !x->wmask[j])
				continue;
			any = true;
			w = ai < aj ? ai : aj;
			if ((x->wmask[i] & (x->rmask[j] | x->wmask[j])) ||
			    (x->wmask[j] & (x->rmask[i] | x->wmask[i])))
				tru += w;
			else
				fal += w;
		}
	}
	if (users < 2)
		return KS_MT_PRIVATE;
	if (!any)
		return KS_MT_READ;
	/* A kind of pair decides alone when it weighs 8 times the other. */
	if (tru == 0 || (fal >= 8 * tru && fal >= 8))
		return KS_MT_FALSE;
	if (fal == 0 || (tru >= 8 * fal && tru >= 8))
		return KS_MT_TRUE;
	return KS_MT_MIXED;
}

static unsigned ref_users(const struct rline *x, unsigned nthr)
{
	unsigned i, n = 0;

	for (i = 0; i < nthr; i++)
		n += (x->reads[i] + x->writes[i]) != 0;
	return n;
}

/* Compares everything the core reports with the model. */
static void ref_check(struct ref *r, struct ks_mt *m, const struct ks_mt_site *sites,
		      bool fs)
{
	struct ks_mt_counts k;
	struct got g;
	unsigned i, j, t, nshared = 0;

	for (t = 0; t < r->nthr; t++) {
		k = tcounts(m, t);
		CHECK_COUNTS(k, r->cnt[t][0], r->cnt[t][1], r->cnt[t][2],
			     r->cnt[t][3], r->cnt[t][4], r->cnt[t][5]);
	}
	for (i = 0; i < 8; i++)
		CHECK_COUNTS(sites[i].c, r->sitecnt[i][0], r->sitecnt[i][1],
			     r->sitecnt[i][2], r->sitecnt[i][3], r->sitecnt[i][4],
			     r->sitecnt[i][5]);
	assert_int_equal(ks_mt_threads_seen(m), r->seen);
	if (!fs)
		return;

	got_collect(m, &g);
	for (i = 0; i < r->n; i++)
		nshared += ref_users(&r->l[i], r->nthr) >= 2;
	assert_int_equal(g.n, nshared);
	for (i = 0; i < g.n; i++) {
		const struct got_line *gl = &g.l[i];
		struct rline *x = ref_line(r, gl->li.line_addr >> r->ls);
		uint64_t pot = 0, sr, sw;
		unsigned named = 0;

		assert_int_equal(gl->li.line_addr & (((uintptr_t)1 << r->ls) - 1), 0);
		assert_int_equal(gl->li.word_size, r->ws);
		assert_int_equal(gl->li.nthreads, ref_users(x, r->nthr));
		assert_int_equal(gl->li.verdict, ref_verdict(x, r->nthr));
		assert_int_equal(gl->li.misses, x->misses);
		assert_int_equal(gl->li.invalidations, x->invals);
		for (j = 0; j < gl->li.nthreads; j++) {
			const struct ks_mt_line_thread *lt = &gl->thr[j];

			if (j > 0)
				assert_true(gl->thr[j - 1].tid < lt->tid);
			assert_int_equal(lt->rmask, x->rmask[lt->tid]);
			assert_int_equal(lt->wmask, x->wmask[lt->tid]);
			assert_int_equal(lt->reads, x->reads[lt->tid]);
			assert_int_equal(lt->writes, x->writes[lt->tid]);
			pot += lt->writes;
			/* The thread's site entries add up to what it did. */
			sr = sw = 0;
			for (t = 0; t < gl->li.nsites; t++) {
				if (gl->site[t].tid != lt->tid)
					continue;
				sr += gl->site[t].reads;
				sw += gl->site[t].writes;
			}
			assert_int_equal(sr, lt->reads);
			assert_int_equal(sw, lt->writes);
		}
		assert_int_equal(gl->li.potential_invalidations, pot);
		for (t = 0; t < gl->li.nsites; t++) {
			if (t > 0)
				assert_true(gl->site[t - 1].tid <= gl->site[t].tid);
			named += gl->site[t].site != NULL;
			for (j = t + 1; j < gl->li.nsites; j++)
				assert_false(gl->site[j].tid == gl->site[t].tid &&
					     gl->site[j].site == gl->site[t].site);
		}
		assert_true(named <= KS_MT_MAX_LINE_SITES);
	}
	got_free(&g);
}

/* Accesses around the interesting places: a chunk boundary, both sides of
 * 2^37, the hash part, and the top of the address space (where accesses
 * get clipped). */
static void random_run(const struct ks_mt_config *c, uint64_t seed, unsigned nops)
{
	static const unsigned sizes[] = { 1, 2, 4, 8, 16, 64 };
	uintptr_t L = c->line_size;
	const uintptr_t bases[] = { 0x10000, 0x40000 - 2 * L, HIGH - L,
				    HIGH + 0x40000 - L, (uintptr_t)0x7ffff0000000,
				    TOP - 3 * L + 1 };
	struct ks_mt_site sites[8];
	struct tracker t;
	struct ks_mt *m;
	struct ref *r;
	unsigned i, tid, size, ev, pick;
	uintptr_t addr;
	bool write;
	int site;

	tracker_init(&t);
	m = mt_new(&t, c);
	r = ref_new(c->line_size, c->max_threads);
	memset(sites, 0, sizeof(sites));
	rng_state = seed;
	for (i = 0; i < nops; i++) {
		addr = bases[rnd() % 6] + rnd() % (3 * L);
		size = sizes[rnd() % 6];
		pick = rnd() % 10;
		if (pick < 6)
			tid = rnd() % 4;
		else if (pick < 8)
			tid = 60 + rnd() % 8;
		else
			tid = rnd() % c->max_threads;
		tid %= c->max_threads;
		write = rnd() % 5 < 2;
		site = (int)(rnd() % 9) - 1;
		ev = ks_mt_access(m, tid, addr, size, write, site >= 0 ? &sites[site] : NULL);
		assert_int_equal(ev, ref_access(r, tid, addr, size, write, site));
	}
	ref_check(r, m, sites, c->falseshare);
	mt_done(&t, m);
	ref_free(r);
}

/* A front-end that resolves repeated accesses itself, as kscope's
 * Valgrind tool does: entries (line, site, kind) that ks_mt_quiet
 * allowed, with the accesses taken and the words they touched, credited
 * with ks_mt_add_quiet when evicted or when another thread runs.  Every
 * count, mask and verdict must come out as in the model, which sees
 * every access. */
struct qent {
	bool used, write;
	uintptr_t line;
	int site;
	uint64_t words, n;
};

static void qflush(struct ks_mt *m, unsigned tid, struct qent *e, unsigned ls,
		   struct ks_mt_site *sites)
{
	if (e->used && e->n)
		ks_mt_add_quiet(m, tid, e->line << ls, e->write,
				e->site >= 0 ? &sites[e->site] : NULL, e->n, e->words);
	e->used = false;
	e->n = 0;
}

static void random_run_quiet(const struct ks_mt_config *c, uint64_t seed, unsigned nops)
{
	static const unsigned sizes[] = { 1, 2, 4, 8, 16 };
	uintptr_t L = c->line_size;
	unsigned ls = 0, ws;
	struct ks_mt_site sites[8];
	struct qent q[16];
	struct tracker t;
	struct ks_mt *m;
	struct ref *r;
	unsigned i, j, tid = 0, cur = ~0u, size, ev, next = 0;
	uint64_t taken = 0;
	uintptr_t addr, off, last;
	bool write;
	int site;

	while (((uintptr_t)1 << ls) < L)
		ls++;
	tracker_init(&t);
	m = mt_new(&t, c);
	ws = ks_mt_word_size(m);
	r = ref_new(c->line_size, c->max_threads);
	memset(sites, 0, sizeof(sites));
	memset(q, 0, sizeof(q));
	rng_state = seed;
	for (i = 0; i < nops; i++) {
		/* Threads run in bursts over a few lines, as they do. */
		if (rnd() % 30 == 0)
			tid = rnd() % 4 == 0 ? 60 + rnd() % 8 : rnd() % 4;
		tid %= c->max_threads;
		/* Mostly a thread's own lines, which another thread's visit
		 * later makes shared, and some lines everybody uses. */
		if (rnd() % 4 == 0)
			addr = 0x10000 + rnd() % (2 * L);
		else
			addr = 0x100000 + (rnd() % 50 == 0 ? rnd() % 70 : tid) * 4 * L +
			       rnd() % (2 * L);
		size = sizes[rnd() % 5];
		site = (int)(rnd() % 5) - 1;
		write = site == 0 || (site < 0 && rnd() % 2);
		if (tid != cur) {
			for (j = 0; j < 16; j++)
				qflush(m, cur, &q[j], ls, sites);
			cur = tid;
		}
		off = addr & (L - 1);
		last = off + size - 1;
		for (j = 0; j < 16; j++)
			if (q[j].used && q[j].line == addr >> ls && q[j].site == site &&
			    q[j].write == write && last < L)
				break;
		if (j < 16) {
			q[j].words |= (UINT64_C(2) << (last / ws)) - (UINT64_C(1) << (off / ws));
			q[j].n++;
			taken++;
			assert_int_equal(ref_access(r, tid, addr, size, write, site), 0);
			continue;
		}
		ev = ks_mt_access(m, tid, addr, size, write, site >= 0 ? &sites[site] : NULL);
		assert_int_equal(ev, ref_access(r, tid, addr, size, write, site));
		if (last < L) {
			bool quiet = ks_mt_quiet(m, tid, addr, write);

			/* The access just made is always allowed again, except
			 * where the optimization is off or the thread has no
			 * inline bit. */
			assert_int_equal(quiet, c->min_write && tid < 63);
			if (quiet) {
				j = next++ % 16;
				qflush(m, tid, &q[j], ls, sites);
				q[j] = (struct qent){ true, write, addr >> ls, site, 0, 0 };
			}
		}
	}
	for (j = 0; j < 16; j++)
		qflush(m, cur, &q[j], ls, sites);
	/* The test means something only if many accesses took the filter. */
	if (c->min_write)
		assert_true(taken > nops / 3);
	ref_check(r, m, sites, c->falseshare);
	mt_done(&t, m);
	ref_free(r);
}

static void test_quiet_filter(void **state)
{
	struct ks_mt_config c;
	unsigned mode;

	(void)state;
	for (mode = 0; mode < 8; mode++) {
		c = cfg_make(mode & 4 ? 256 : 64, 70, mode & 1);
		c.min_write = !(mode & 2);
		random_run_quiet(&c, 77 + mode, 20000);
	}
}

/* The ablation switches change how the shadow is stored, never a count. */
static void test_random_all_modes(void **state)
{
	struct ks_mt_config c;
	unsigned mode;

	(void)state;
	for (mode = 0; mode < 16; mode++) {
		c = cfg_make(64, 300, mode & 1);
		c.min_write = mode & 2;
		c.pad_smu = mode & 4;
		c.thread_isolation = mode & 8;
		random_run(&c, 42, 6000);
	}
}

static void test_random_line_sizes(void **state)
{
	static const unsigned lines[] = { 16, 32, 128, 256, 512, 4096 };
	struct ks_mt_config c;
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		c = cfg_make(lines[i], 70, true);
		c.pad_smu = i & 1;
		random_run(&c, 1000 + i, 4000);
	}
	c = cfg_make(64, KS_MT_MAX_THREADS, true);
	random_run(&c, 7, 4000);
	c = cfg_make(64, 1, true);
	random_run(&c, 8, 1000);
}

/* Padding and isolation change the memory used, as they should. */
static void test_layout_costs(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	size_t before, packed, padded;

	(void)state;
	tracker_init(&t);
	c = cfg_make(64, 64, false);
	c.pad_smu = false;
	m = mt_new(&t, &c);
	before = ks_mt_shadow_bytes(m);
	ks_mt_access(m, 0, 0x1000, 4, false, NULL);
	packed = ks_mt_shadow_bytes(m) - before;
	mt_done(&t, m);
	c.pad_smu = true;
	m = mt_new(&t, &c);
	before = ks_mt_shadow_bytes(m);
	ks_mt_access(m, 0, 0x1000, 4, false, NULL);
	padded = ks_mt_shadow_bytes(m) - before;
	mt_done(&t, m);
	assert_true(padded > packed);
	/* A 256 KiB chunk of 64-byte lines: 4096 SMUs (plus the thread's
	 * counter block). */
	assert_true(packed >= 4096 * 16 && packed < 4096 * 32 + 256);
	assert_true(padded >= 4096 * 64 && padded < 4096 * 64 + 256);

	/* Isolation allocates a thread's counters on its first access;
	 * interleaved counters exist from the start. */
	c = cfg_make(64, 64, false);
	m = mt_new(&t, &c);
	ks_mt_access(m, 0, 0x1000, 4, false, NULL);
	before = ks_mt_shadow_bytes(m);
	ks_mt_access(m, 1, 0x1000, 4, false, NULL);
	assert_true(ks_mt_shadow_bytes(m) >= before + 64);
	before = ks_mt_shadow_bytes(m);
	ks_mt_access(m, 1, 0x1000, 4, false, NULL);
	assert_int_equal(ks_mt_shadow_bytes(m), before);
	mt_done(&t, m);
	c.thread_isolation = false;
	m = mt_new(&t, &c);
	ks_mt_access(m, 0, 0x1000, 4, false, NULL);
	before = ks_mt_shadow_bytes(m);
	ks_mt_access(m, 1, 0x1000, 4, false, NULL);
	assert_int_equal(ks_mt_shadow_bytes(m), before);
	mt_done(&t, m);
}

/* With min_write a hit does not store into the SMU, so a write-protected
 * chunk survives it; without, the unconditional store faults.  Run in a
 * child, which the fault kills. */
static int hit_in_child(bool min_write)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	pid_t pid;
	int status;
	unsigned i;

	tracker_init(&t);
	c = cfg_make(64, 4, false);
	c.thread_isolation = false; /* counters allocated by init, not mmapped */
	c.min_write = min_write;
	m = mt_new(&t, &c);
	t.use_mmap = true;
	assert_int_equal(ks_mt_access(m, 0, 0x1000, 4, true, NULL), EV_C);
	assert_int_equal(ks_mt_access(m, 1, 0x1040, 4, false, NULL), EV_C);
	t.use_mmap = false;
	assert_int_equal(t.nmaps, 1); /* the chunk, nothing else */
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		for (i = 0; i < t.nmaps; i++)
			mprotect(t.maps[i].base, t.maps[i].len, PROT_READ);
		ks_mt_access(m, 0, 0x1000, 4, true, NULL);
		ks_mt_access(m, 0, 0x1004, 4, false, NULL);
		ks_mt_access(m, 1, 0x1040, 4, false, NULL);
		_exit(ks_mt_access(m, 0, 0x1000, 4, true, NULL) == 0 ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	mt_done(&t, m);
	return status;
}

static void test_min_write_stores(void **state)
{
	int st;

	(void)state;
	st = hit_in_child(true);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	st = hit_in_child(false);
	assert_false(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Allocation failures in the middle of a run lose data, never memory. */
static void test_access_oom(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct ks_mt_site site;
	struct got g;
	unsigned fail, i;

	(void)state;
	for (fail = 0; fail < 40; fail++) {
		tracker_init(&t);
		c = cfg_make(64, 300, true);
		c.thread_isolation = fail & 1;
		m = mt_new(&t, &c);
		memset(&site, 0, sizeof(site));
		t.fail_after = fail;
		rng_state = fail + 1;
		for (i = 0; i < 3000; i++)
			ks_mt_access(m, (unsigned)(rnd() % 300),
				     (rnd() & 1 ? HIGH : 0x1000) + rnd() % 0x100000,
				     (unsigned)(rnd() % 16 + 1), rnd() & 1, &site);
		got_collect(m, &g);
		got_free(&g);
		mt_done(&t, m);
	}
}

/* ------------------------------------------------------------------ */
/* False sharing                                                       */
/* ------------------------------------------------------------------ */

static void test_false_sharing(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct ks_mt_counts k;
	struct got g;
	const uintptr_t x = 0x50000;
	unsigned mode, i, r;

	(void)state;
	for (mode = 0; mode < 8; mode++) {
		tracker_init(&t);
		c = cfg_make(64, 8, true);
		c.min_write = mode & 1;
		c.pad_smu = mode & 2;
		c.thread_isolation = mode & 4;
		m = mt_new(&t, &c);
		assert_int_equal(ks_mt_word_size(m), 1);
		/* Four threads, each its own 4-byte counter in one line. */
		for (r = 0; r < 10; r++) {
			for (i = 0; i < 4; i++) {
				ks_mt_access(m, i, x + 4 * i, 4, false, NULL);
				ks_mt_access(m, i, x + 4 * i, 4, true, NULL);
			}
		}
		got_collect(m, &g);
		assert_int_equal(g.n, 1);
		assert_int_equal(g.l[0].li.line_addr, x);
		assert_int_equal(g.l[0].li.word_size, 1);
		assert_int_equal(g.l[0].li.verdict, KS_MT_FALSE);
		assert_string_equal(ks_mt_verdict_name(g.l[0].li.verdict), "false");
		assert_int_equal(g.l[0].li.nthreads, 4);
		for (i = 0; i < 4; i++) {
			assert_int_equal(g.l[0].thr[i].tid, i);
			assert_int_equal(g.l[0].thr[i].rmask, UINT64_C(0xf) << 4 * i);
			assert_int_equal(g.l[0].thr[i].wmask, UINT64_C(0xf) << 4 * i);
			assert_int_equal(g.l[0].thr[i].reads, 10);
			assert_int_equal(g.l[0].thr[i].writes, 10);
		}
		assert_int_equal(g.l[0].li.potential_invalidations, 40);
		k = totals(m);
		/* Round robin: after the first round every read misses and
		 * every write invalidates the previous writer. */
		assert_int_equal(k.cold_misses, 1);
		assert_int_equal(k.misses, 3 + 36 + 0);
		assert_int_equal(k.invalidations, 39);
		assert_int_equal(g.l[0].li.misses, k.misses);
		assert_int_equal(g.l[0].li.invalidations, k.invalidations);
		got_free(&g);
		mt_done(&t, m);
	}
}

/* Runs accesses given as {tid, offset, size, write} and returns the one
 * shared line's verdict (or -1 when no line is reported). */
struct acc {
	unsigned tid, off, size;
	bool write;
};

static int verdict_of(unsigned line, const struct acc *a, unsigned n,
		      struct got *g)
{
	struct tracker t;
	struct ks_mt_config c = cfg_make(line, 16, true);
	struct ks_mt *m;
	unsigned i;
	int v;

	tracker_init(&t);
	m = mt_new(&t, &c);
	for (i = 0; i < n; i++)
		ks_mt_access(m, a[i].tid, 0x80000 + a[i].off, a[i].size, a[i].write, NULL);
	got_collect(m, g);
	v = g->n == 1 ? (int)g->l[0].li.verdict : -1;
	mt_done(&t, m);
	return v;
}

static void test_verdicts(void **state)
{
	static const struct acc tru[] = { { 0, 0, 4, 1 }, { 1, 0, 4, 1 }, { 2, 0, 4, 1 },
					  { 3, 0, 4, 1 } };
	static const struct acc mixed[] = { { 0, 0, 4, 1 }, { 1, 0, 4, 0 }, { 2, 20, 4, 1 } };
	static const struct acc one_writer[] = { { 0, 0, 4, 1 }, { 1, 4, 4, 0 },
						 { 2, 8, 8, 0 } };
	static const struct acc readers[] = { { 0, 0, 8, 0 }, { 1, 0, 8, 0 }, { 2, 4, 4, 0 } };
	static const struct acc padded[] = { { 0, 0, 8, 1 }, { 1, 64, 8, 1 }, { 2, 128, 8, 1 },
					     { 0, 0, 8, 1 }, { 1, 64, 8, 0 } };
	static const struct acc wide128[] = { { 0, 0, 4, 1 }, { 1, 124, 4, 1 } };
	static const struct acc wide4k[] = { { 0, 4032, 4, 1 }, { 1, 0, 64, 1 },
					     { 2, 60, 8, 1 } };
	/* Bytes 6..9 written, 8..11 read: bytes 8 and 9 are shared. */
	static const struct acc straddle[] = { { 0, 6, 4, 1 }, { 1, 8, 4, 0 } };
	struct got g;

	(void)state;
	{
		/* Four workers write their own counter 100 times each; the
		 * main thread (tid 4) then reads all four once: the
		 * one-off true pairs do not outweigh the workers' false
		 * ones. */
		struct acc busy[4 * 100 + 4];
		unsigned k = 0, w, r;
		for (r = 0; r < 100; r++)
			for (w = 0; w < 4; w++)
				busy[k++] = (struct acc){ w, 4 * w, 4, 1 };
		for (w = 0; w < 4; w++)
			busy[k++] = (struct acc){ 4, 4 * w, 4, 0 };
		assert_int_equal(verdict_of(64, busy, k, &g), KS_MT_FALSE);
		got_free(&g);
		/* The same reader reading as often as the workers write
		 * makes it a real mix. */
		for (r = 0; r < 100; r++)
			for (w = 0; w < 4; w++)
				busy[r * 4 + w] = (struct acc){ r % 2 ? 4 : w, 4 * w, 4, r % 2 == 0 };
		assert_int_equal(verdict_of(64, busy, 400, &g), KS_MT_MIXED);
		got_free(&g);
	}
	assert_int_equal(verdict_of(64, tru, 4, &g), KS_MT_TRUE);
	assert_int_equal(g.l[0].thr[2].wmask, 0xf);
	got_free(&g);
	assert_int_equal(verdict_of(64, mixed, 3, &g), KS_MT_MIXED);
	assert_int_equal(got_thread(&g.l[0], 2)->wmask, UINT64_C(0xf) << 20);
	got_free(&g);
	assert_int_equal(verdict_of(64, one_writer, 3, &g), KS_MT_FALSE);
	assert_int_equal(got_thread(&g.l[0], 2)->rmask, 0xff00);
	assert_int_equal(g.l[0].li.potential_invalidations, 1);
	got_free(&g);
	/* Read-only sharing is reported too; the caller filters it. */
	assert_int_equal(verdict_of(64, readers, 3, &g), KS_MT_READ);
	assert_int_equal(g.l[0].li.potential_invalidations, 0);
	assert_string_equal(ks_mt_verdict_name(KS_MT_READ), "read");
	got_free(&g);
	/* One counter per line: nothing shared. */
	assert_int_equal(verdict_of(64, padded, 5, &g), -1);
	assert_int_equal(g.n, 0);
	got_free(&g);
	assert_int_equal(verdict_of(128, wide128, 2, &g), KS_MT_FALSE);
	assert_int_equal(g.l[0].li.word_size, 2);
	assert_int_equal(got_thread(&g.l[0], 0)->wmask, 3);
	assert_int_equal(got_thread(&g.l[0], 1)->wmask, UINT64_C(3) << 62);
	got_free(&g);
	assert_int_equal(verdict_of(4096, wide4k, 3, &g), KS_MT_MIXED);
	assert_int_equal(g.l[0].li.word_size, 64);
	assert_int_equal(got_thread(&g.l[0], 0)->wmask, UINT64_C(1) << 63);
	assert_int_equal(got_thread(&g.l[0], 1)->wmask, 1);
	assert_int_equal(got_thread(&g.l[0], 2)->wmask, 3);
	got_free(&g);
	assert_int_equal(verdict_of(64, straddle, 2, &g), KS_MT_TRUE);
	assert_int_equal(got_thread(&g.l[0], 0)->wmask, 0x3c0);
	assert_int_equal(got_thread(&g.l[0], 1)->rmask, 0xf00);
	got_free(&g);
	assert_string_equal(ks_mt_verdict_name(KS_MT_PRIVATE), "private");
	assert_string_equal(ks_mt_verdict_name(KS_MT_TRUE), "true");
	assert_string_equal(ks_mt_verdict_name(KS_MT_MIXED), "mixed");
}

static void test_word_sizes(void **state)
{
	static const unsigned lines[] = { 16, 32, 64, 128, 256, 512, 1024, 2048, 4096 };
	static const unsigned words[] = { 1, 1, 1, 2, 4, 8, 16, 32, 64 };
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct got g;
	unsigned i;

	(void)state;
	tracker_init(&t);
	for (i = 0; i < 9; i++) {
		c = cfg_make(lines[i], 2, true);
		m = mt_new(&t, &c);
		assert_int_equal(ks_mt_word_size(m), words[i]);
		/* The last byte of the line is in word line/ws - 1. */
		ks_mt_access(m, 0, 0x90000 + lines[i] - 1, 1, true, NULL);
		ks_mt_access(m, 1, 0x90000, 1, true, NULL);
		got_collect(m, &g);
		assert_int_equal(g.n, 1);
		assert_int_equal(g.l[0].thr[0].wmask, UINT64_C(1) << (lines[i] / words[i] - 1));
		assert_int_equal(g.l[0].thr[1].wmask, 1);
		got_free(&g);
		mt_done(&t, m);
	}
	/* 16-byte lines: an 8-byte write at 12 is bytes 12..15 of one line
	 * and 0..3 of the next. */
	c = cfg_make(16, 2, true);
	m = mt_new(&t, &c);
	ks_mt_access(m, 0, 0x9000c, 8, true, NULL);
	ks_mt_access(m, 1, 0x90000, 16, false, NULL);
	ks_mt_access(m, 1, 0x90010, 16, false, NULL);
	got_collect(m, &g);
	assert_int_equal(g.n, 2);
	assert_int_equal(got_thread(&g.l[0], 0)->wmask, 0xf000);
	assert_int_equal(got_thread(&g.l[1], 0)->wmask, 0xf);
	assert_int_equal(got_thread(&g.l[1], 1)->rmask, 0xffff);
	got_free(&g);
	mt_done(&t, m);
}

/* Byte granularity: four threads each writing its own byte of a line
 * (char flags[4]) share no byte, so the line is falsely shared; four
 * threads writing the same byte truly share it; an int written by one
 * thread and a byte of it by another overlap.  The masks cost nothing:
 * the shadow of the byte flags is as large as that of int counters. */
static void test_byte_granularity(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct got g;
	const uintptr_t x = 0xa0000;
	size_t bytes_flags, bytes_ints;
	unsigned i, r;

	(void)state;
	tracker_init(&t);
	c = cfg_make(64, 8, true);
	m = mt_new(&t, &c);
	for (r = 0; r < 50; r++)
		for (i = 0; i < 4; i++)
			ks_mt_access(m, i, x + 8 + i, 1, true, NULL);
	got_collect(m, &g);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.l[0].li.word_size, 1);
	assert_int_equal(g.l[0].li.verdict, KS_MT_FALSE);
	for (i = 0; i < 4; i++) {
		assert_int_equal(g.l[0].thr[i].wmask, UINT64_C(1) << (8 + i));
		assert_int_equal(g.l[0].thr[i].writes, 50);
	}
	got_free(&g);
	bytes_flags = ks_mt_shadow_bytes(m);
	mt_done(&t, m);

	/* The same with 4-byte counters: the same shadow bytes. */
	m = mt_new(&t, &c);
	for (r = 0; r < 50; r++)
		for (i = 0; i < 4; i++)
			ks_mt_access(m, i, x + 4 * i, 4, true, NULL);
	bytes_ints = ks_mt_shadow_bytes(m);
	assert_int_equal(bytes_flags, bytes_ints);
	mt_done(&t, m);

	/* The same byte by all four: true sharing. */
	m = mt_new(&t, &c);
	for (r = 0; r < 50; r++)
		for (i = 0; i < 4; i++)
			ks_mt_access(m, i, x + 9, 1, true, NULL);
	got_collect(m, &g);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.l[0].li.verdict, KS_MT_TRUE);
	for (i = 0; i < 4; i++)
		assert_int_equal(g.l[0].thr[i].wmask, UINT64_C(1) << 9);
	got_free(&g);
	mt_done(&t, m);

	/* A 4-byte write by one thread, a byte of it read by another. */
	m = mt_new(&t, &c);
	for (r = 0; r < 50; r++) {
		ks_mt_access(m, 0, x + 16, 4, true, NULL);
		ks_mt_access(m, 1, x + 18, 1, false, NULL);
	}
	got_collect(m, &g);
	assert_int_equal(g.l[0].li.verdict, KS_MT_TRUE);
	assert_int_equal(g.l[0].thr[0].wmask, UINT64_C(0xf) << 16);
	assert_int_equal(g.l[0].thr[1].rmask, UINT64_C(1) << 18);
	got_free(&g);
	mt_done(&t, m);

	/* The quiet path credits byte masks too (ks_mt_add_quiet): thread 0
	 * holds the line alone after its write, and its further writes to
	 * byte 3 are credited at once. */
	m = mt_new(&t, &c);
	ks_mt_access(m, 0, x + 3, 1, true, NULL);
	ks_mt_access(m, 1, x + 2, 1, true, NULL);
	ks_mt_access(m, 0, x + 3, 1, true, NULL);
	assert_true(ks_mt_quiet(m, 0, x + 3, true));
	ks_mt_add_quiet(m, 0, x, true, NULL, 10, UINT64_C(1) << 3);
	got_collect(m, &g);
	assert_int_equal(g.l[0].li.verdict, KS_MT_FALSE);
	assert_int_equal(got_thread(&g.l[0], 0)->wmask, UINT64_C(1) << 3);
	assert_int_equal(got_thread(&g.l[0], 0)->writes, 12);
	assert_int_equal(got_thread(&g.l[0], 1)->wmask, UINT64_C(1) << 2);
	got_free(&g);
	mt_done(&t, m);
}

/* min_writes: a line whose threads touch different bytes is falsely
 * shared only when two threads each wrote it min_writes times; a table
 * read by every thread next to a slot each writes once is read-mostly.
 * True and mixed lines are not affected. */
static void test_min_writes(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct got g;
	const uintptr_t x = 0xb0000;
	unsigned i, r, mw;

	(void)state;
	tracker_init(&t);
	for (mw = 0; mw <= 200; mw += 100) {
		c = cfg_make(64, 8, true);
		c.min_writes = mw;
		/* Table of 4 longs at x, done[4] at x + 32: each of four
		 * threads reads the table 500 times, then writes done[i]
		 * once. */
		m = mt_new(&t, &c);
		for (r = 0; r < 500; r++)
			for (i = 0; i < 4; i++)
				ks_mt_access(m, i, x + 8 * (r % 4), 8, false, NULL);
		for (i = 0; i < 4; i++)
			ks_mt_access(m, i, x + 32 + 8 * i, 8, true, NULL);
		got_collect(m, &g);
		assert_int_equal(g.n, 1);
		assert_int_equal(g.l[0].li.verdict, mw ? KS_MT_READ_MOSTLY : KS_MT_FALSE);
		got_free(&g);
		mt_done(&t, m);

		/* Per-thread counters written 150 times each: false sharing
		 * at 0 and 100, read-mostly at 200. */
		m = mt_new(&t, &c);
		for (r = 0; r < 150; r++)
			for (i = 0; i < 4; i++)
				ks_mt_access(m, i, x + 8 * i, 8, true, NULL);
		got_collect(m, &g);
		assert_int_equal(g.l[0].li.verdict, mw > 150 ? KS_MT_READ_MOSTLY : KS_MT_FALSE);
		got_free(&g);
		mt_done(&t, m);

		/* One busy writer and one busy reader of other bytes: false
		 * sharing (the writer keeps invalidating the reader's copy)
		 * whenever both came back 500 times, so at 0, 100 and 200. */
		m = mt_new(&t, &c);
		for (r = 0; r < 500; r++) {
			ks_mt_access(m, 0, x, 8, true, NULL);
			ks_mt_access(m, 1, x + 8, 8, false, NULL);
		}
		got_collect(m, &g);
		assert_int_equal(g.l[0].li.verdict, KS_MT_FALSE);
		got_free(&g);
		mt_done(&t, m);

		/* A busy writer and a reader that came by 50 times: false
		 * only without the threshold, read-mostly at 100 and 200. */
		m = mt_new(&t, &c);
		for (r = 0; r < 500; r++) {
			ks_mt_access(m, 0, x, 8, true, NULL);
			if (r < 50)
				ks_mt_access(m, 1, x + 8, 8, false, NULL);
		}
		got_collect(m, &g);
		assert_int_equal(g.l[0].li.verdict, mw ? KS_MT_READ_MOSTLY : KS_MT_FALSE);
		got_free(&g);
		mt_done(&t, m);

		/* The same byte written once by each: true whatever mw. */
		m = mt_new(&t, &c);
		for (i = 0; i < 4; i++)
			ks_mt_access(m, i, x, 1, true, NULL);
		got_collect(m, &g);
		assert_int_equal(g.l[0].li.verdict, KS_MT_TRUE);
		got_free(&g);
		mt_done(&t, m);
	}
	assert_string_equal(ks_mt_verdict_name(KS_MT_READ_MOSTLY), "read-mostly");
}

/* The context callback's log. */
struct ctxlog {
	unsigned n;
	unsigned tid[256];
	struct ks_mt_site *site[256];
};

static void *ctx_cb(void *arg, unsigned tid, struct ks_mt_site *site)
{
	struct ctxlog *l = arg;

	assert_true(l->n < 256);
	assert_non_null(site);
	l->tid[l->n] = tid;
	l->site[l->n] = site;
	return (void *)(uintptr_t)(0x1000 + l->n++);
}

static void test_sites_and_contexts(void **state)
{
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct ks_mt_site A, B, C, D, S[70];
	struct ctxlog log;
	struct got g;
	const struct got_line *gl;
	const uintptr_t x = 0xa0000;
	unsigned i;

	(void)state;
	tracker_init(&t);
	memset(&log, 0, sizeof(log));
	memset(&A, 0, sizeof(A));
	memset(&B, 0, sizeof(B));
	memset(&C, 0, sizeof(C));
	memset(&D, 0, sizeof(D));
	memset(S, 0, sizeof(S));
	c = cfg_make(64, 8, true);
	c.context = ctx_cb;
	c.context_ctx = &log;
	m = mt_new(&t, &c);

	/* Private: no entries, no contexts. */
	ks_mt_access(m, 0, x, 4, false, &A);
	ks_mt_access(m, 0, x, 4, true, &A);
	ks_mt_access(m, 0, x + 4, 4, false, &B);
	assert_int_equal(log.n, 0);
	got_collect(m, &g);
	assert_int_equal(g.n, 0);
	got_free(&g);
	/* Shared: T0's accesses so far go to (0, A), then (1, B). */
	ks_mt_access(m, 1, x + 8, 4, true, &B);
	assert_int_equal(log.n, 2);
	assert_int_equal(log.tid[0], 0);
	assert_ptr_equal(log.site[0], &A);
	assert_int_equal(log.tid[1], 1);
	assert_ptr_equal(log.site[1], &B);
	ks_mt_access(m, 0, x, 4, false, &C);
	assert_int_equal(log.n, 3);
	ks_mt_access(m, 0, x, 4, false, &A);
	ks_mt_access(m, 1, x + 8, 4, true, &B);
	assert_int_equal(log.n, 3);
	/* 70 sites of T2: 61 fit (64 with the three above), 9 overflow. */
	for (i = 0; i < 70; i++)
		ks_mt_access(m, 2, x + 12, 4, false, &S[i]);
	assert_int_equal(log.n, 64);
	ks_mt_access(m, 2, x + 12, 4, false, &S[0]);
	ks_mt_access(m, 2, x + 12, 4, false, &S[65]);
	/* No site, and a new site past the limit: T1's (1, NULL). */
	ks_mt_access(m, 1, x + 8, 4, false, NULL);
	ks_mt_access(m, 1, x + 8, 4, false, &D);
	assert_int_equal(log.n, 64);

	got_collect(m, &g);
	assert_int_equal(g.n, 1);
	gl = &g.l[0];
	assert_int_equal(gl->li.nthreads, 3);
	assert_int_equal(gl->thr[0].rmask, 0xff);
	assert_int_equal(gl->thr[0].wmask, 0xf);
	assert_int_equal(gl->thr[0].reads, 4);
	assert_int_equal(gl->thr[0].writes, 1);
	assert_int_equal(gl->thr[1].rmask, 0xf00);
	assert_int_equal(gl->thr[1].wmask, 0xf00);
	assert_int_equal(gl->thr[1].reads, 2);
	assert_int_equal(gl->thr[1].writes, 2);
	assert_int_equal(gl->thr[2].rmask, 0xf000);
	assert_int_equal(gl->thr[2].reads, 72);
	assert_int_equal(gl->li.verdict, KS_MT_FALSE);
	assert_int_equal(gl->li.potential_invalidations, 3);
	assert_int_equal(gl->li.misses, 3);
	assert_int_equal(gl->li.invalidations, 2);

	assert_int_equal(gl->li.nsites, 2 + 2 + 62);
	/* T0: (A) with its private accesses and one more, then (C). */
	assert_int_equal(gl->site[0].tid, 0);
	assert_ptr_equal(gl->site[0].site, &A);
	assert_ptr_equal(gl->site[0].context, (void *)0x1000);
	assert_int_equal(gl->site[0].reads, 3);
	assert_int_equal(gl->site[0].writes, 1);
	assert_int_equal(gl->site[1].tid, 0);
	assert_ptr_equal(gl->site[1].site, &C);
	assert_ptr_equal(gl->site[1].context, (void *)0x1002);
	assert_int_equal(gl->site[1].reads, 1);
	/* T1: (B), then the NULL entry with no context. */
	assert_int_equal(gl->site[2].tid, 1);
	assert_ptr_equal(gl->site[2].site, &B);
	assert_ptr_equal(gl->site[2].context, (void *)0x1001);
	assert_int_equal(gl->site[2].writes, 2);
	assert_int_equal(gl->site[3].tid, 1);
	assert_null(gl->site[3].site);
	assert_null(gl->site[3].context);
	assert_int_equal(gl->site[3].reads, 2);
	/* T2: S[0..60] in the order first seen, then the overflow. */
	for (i = 0; i < 61; i++) {
		assert_int_equal(gl->site[4 + i].tid, 2);
		assert_ptr_equal(gl->site[4 + i].site, &S[i]);
		assert_ptr_equal(gl->site[4 + i].context, (void *)(uintptr_t)(0x1003 + i));
		assert_int_equal(gl->site[4 + i].reads, i == 0 ? 2 : 1);
	}
	assert_int_equal(gl->site[65].tid, 2);
	assert_null(gl->site[65].site);
	assert_int_equal(gl->site[65].reads, 10);
	got_free(&g);
	mt_done(&t, m);
}

/* Report order follows addresses across the direct table and the hash
 * part, whatever the order of first touch. */
static int cmp_addr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

static void test_report_order(void **state)
{
	enum { N = 1200 };
	struct tracker t;
	struct ks_mt_config c;
	struct ks_mt *m;
	struct got g;
	static uintptr_t addrs[N], sorted[N];
	uintptr_t tmp;
	unsigned i, j;

	(void)state;
	tracker_init(&t);
	c = cfg_make(64, 4, true);
	m = mt_new(&t, &c);
	i = 0;
	addrs[i++] = 0x1000;
	addrs[i++] = 0x40000;
	addrs[i++] = HIGH - 64;
	addrs[i++] = HIGH;
	addrs[i++] = (uintptr_t)1 << 40;
	addrs[i++] = (uintptr_t)0x7fff00000000;
	addrs[i++] = TOP - 63;
	addrs[i++] = (uintptr_t)0xffff800000000000u;
	rng_state = 99;
	/* Many chunks above 2^37 so that the hash table grows. */
	while (i < N)
		addrs[i++] = (HIGH + (rnd() % 0x100000) * 0x40000 + (rnd() % 4096) * 64);
	/* Distinct addresses only. */
	memcpy(sorted, addrs, sizeof(addrs));
	qsort(sorted, N, sizeof(sorted[0]), cmp_addr);
	for (i = 1; i < N; i++)
		assert_true(sorted[i - 1] != sorted[i]);
	for (i = N - 1; i > 0; i--) { /* shuffled */
		j = (unsigned)(rnd() % (i + 1));
		tmp = addrs[i];
		addrs[i] = addrs[j];
		addrs[j] = tmp;
	}
	for (i = 0; i < N; i++)
		assert_int_equal(ks_mt_access(m, 0, addrs[i], 4, true, NULL), EV_C);
	for (i = 0; i < N; i++)
		assert_int_equal(ks_mt_access(m, 0, addrs[i], 4, true, NULL), 0);
	/* A private line in between is not reported. */
	ks_mt_access(m, 2, 0x2000, 4, true, NULL);
	for (i = 0; i < N; i++)
		assert_int_equal(ks_mt_access(m, 1, addrs[i], 4, false, NULL), EV_M);
	got_collect(m, &g);
	assert_int_equal(g.n, N);
	for (i = 0; i < N; i++) {
		assert_int_equal(g.l[i].li.line_addr, sorted[i]);
		assert_int_equal(g.l[i].li.verdict, KS_MT_TRUE);
	}
	got_free(&g);
	mt_done(&t, m);

	/* Contention mode keeps no per-line detail: nothing to report. */
	c.falseshare = false;
	m = mt_new(&t, &c);
	ks_mt_access(m, 0, 0x1000, 4, true, NULL);
	ks_mt_access(m, 1, 0x1000, 4, true, NULL);
	got_collect(m, &g);
	assert_int_equal(g.n, 0);
	got_free(&g);
	mt_done(&t, m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_config),
		cmocka_unit_test(test_init_oom),
		cmocka_unit_test(test_paper_sequence),
		cmocka_unit_test(test_outside_contract),
		cmocka_unit_test(test_line_crossing),
		cmocka_unit_test(test_top_of_address_space),
		cmocka_unit_test(test_many_threads),
		cmocka_unit_test(test_random_all_modes),
		cmocka_unit_test(test_random_line_sizes),
		cmocka_unit_test(test_quiet_filter),
		cmocka_unit_test(test_layout_costs),
		cmocka_unit_test(test_min_write_stores),
		cmocka_unit_test(test_access_oom),
		cmocka_unit_test(test_false_sharing),
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_word_sizes),
		cmocka_unit_test(test_byte_granularity),
		cmocka_unit_test(test_min_writes),
		cmocka_unit_test(test_sites_and_contexts),
		cmocka_unit_test(test_report_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
