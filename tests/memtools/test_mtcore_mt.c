/*
 * Unit tests of the analysis core (src/memtools/core) used the way the
 * compiled front end uses it (mtcore.h, Concurrency): a direct table over
 * all of a native process's address space (direct_bits 47), lines locked
 * by the caller, threads calling ks_mt_access and ks_mt_add_quiet at once
 * on real heap addresses, the ownership word read without a lock
 * (ks_mt_own_word).  Every count must come out as if the threads had run
 * one at a time, and every byte allocated must be given back.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "mtcore.h"

#define NTHREADS 4
#define ROUNDS 20000
#define NLOCKS 64

/* ------------------------------------------------------------------ */
/* A thread-safe counting allocator (mappings for large blocks)        */
/* ------------------------------------------------------------------ */

static size_t outstanding;

static void *z_alloc(void *ctx, size_t size)
{
	void *p;

	(void)ctx;
	if (size >= 1 << 20) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
	} else {
		p = calloc(1, size);
	}
	if (p)
		__atomic_fetch_add(&outstanding, size, __ATOMIC_RELAXED);
	return p;
}

static void z_free(void *ctx, void *p, size_t size)
{
	(void)ctx;
	__atomic_fetch_sub(&outstanding, size, __ATOMIC_RELAXED);
	if (size >= 1 << 20)
		munmap(p, size);
	else
		free(p);
}

static const struct ks_mt_alloc zalloc = { z_alloc, z_free, NULL };

/* ------------------------------------------------------------------ */
/* The front end's side: line locks                                    */
/* ------------------------------------------------------------------ */

struct world {
	struct ks_mt *m;
	pthread_mutex_t locks[NLOCKS];
	unsigned char *buf;           /* NTHREADS private lines, then a shared one */
	pthread_barrier_t start;
};

struct job {
	struct world *w;
	unsigned tid;
	struct ks_mt_site site;       /* this thread's own (mtcore.h) */
	uint64_t quiet;               /* accesses credited through ks_mt_add_quiet */
};

static pthread_mutex_t *lock_of(struct world *w, uintptr_t a)
{
	return &w->locks[(a >> 6) % NLOCKS];
}

static void *worker(void *arg)
{
	struct job *j = arg;
	struct world *w = j->w;
	uintptr_t mine = (uintptr_t)(w->buf + 64 * (j->tid - 1));
	uintptr_t shared = (uintptr_t)(w->buf + 64 * NTHREADS) + 4 * j->tid;
	uint64_t pending = 0;

	pthread_barrier_wait(&w->start);
	for (int i = 0; i < ROUNDS; i++) {
		const uint64_t *own = ks_mt_own_word(w->m, mine);

		/* Private line: after the first write the thread holds it
		 * alone; accesses are then taken on the quiet side, as the
		 * front end does, and credited in batches. */
		if (own && __atomic_load_n(own, __ATOMIC_RELAXED) == (UINT64_C(1) << j->tid)) {
			pending++;
		} else {
			pthread_mutex_lock(lock_of(w, mine));
			ks_mt_access(w->m, j->tid, mine, 4, true, &j->site);
			pthread_mutex_unlock(lock_of(w, mine));
		}
		if (pending == 100 || i == ROUNDS - 1) {
			pthread_mutex_lock(lock_of(w, mine));
			ks_mt_add_quiet(w->m, j->tid, mine, true, &j->site, pending, 1);
			pthread_mutex_unlock(lock_of(w, mine));
			j->quiet += pending;
			pending = 0;
		}
		/* Shared line, each thread its own word: every access under
		 * the lock. */
		pthread_mutex_lock(lock_of(w, shared));
		ks_mt_access(w->m, j->tid, shared, 4, true, &j->site);
		pthread_mutex_unlock(lock_of(w, shared));
	}
	return NULL;
}

struct seen {
	unsigned false_lines, lines;
	uint64_t writes;
};

static void line_cb(void *arg, const struct ks_mt_line_info *li)
{
	struct seen *s = arg;

	s->lines++;
	if (li->verdict == KS_MT_FALSE)
		s->false_lines++;
	for (unsigned i = 0; i < li->nthreads; i++)
		s->writes += li->threads[i].writes;
}

static void test_parallel(void **state)
{
	struct ks_mt_config cfg;
	struct world w;
	struct job jobs[NTHREADS];
	pthread_t t[NTHREADS];
	struct ks_mt_counts tot, c;
	struct seen seen = { 0 };

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.line_size = 64;
	cfg.max_threads = KS_MT_MAX_THREADS;
	cfg.falseshare = true;
	cfg.min_write = cfg.pad_smu = cfg.thread_isolation = true;
	cfg.direct_bits = 47;
	memset(&w, 0, sizeof(w));
	assert_int_equal(ks_mt_init(&w.m, &cfg, &zalloc), 0);
	/* A native heap address, far above Valgrind's 2^37. */
	w.buf = aligned_alloc(64, 64 * (NTHREADS + 1));
	assert_non_null(w.buf);
	assert_null(ks_mt_own_word(w.m, (uintptr_t)w.buf)); /* no shadow yet */
	for (int i = 0; i < NLOCKS; i++)
		pthread_mutex_init(&w.locks[i], NULL);
	pthread_barrier_init(&w.start, NULL, NTHREADS);
	for (unsigned i = 0; i < NTHREADS; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].w = &w;
		jobs[i].tid = i + 1;
		assert_int_equal(pthread_create(&t[i], NULL, worker, &jobs[i]), 0);
	}
	for (unsigned i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);

	/* Every access counted once, whatever ran in parallel. */
	ks_mt_total_counts(w.m, &tot);
	assert_int_equal(tot.accesses, (uint64_t)NTHREADS * ROUNDS * 2);
	assert_int_equal(tot.writes, (uint64_t)NTHREADS * ROUNDS * 2);
	assert_int_equal(ks_mt_threads_seen(w.m), NTHREADS + 1);
	for (unsigned i = 0; i < NTHREADS; i++) {
		ks_mt_thread_counts(w.m, i + 1, &c);
		assert_int_equal(c.accesses, (uint64_t)ROUNDS * 2);
		assert_true(jobs[i].quiet > ROUNDS / 2); /* the quiet side was taken */
		assert_int_equal(jobs[i].site.c.accesses, (uint64_t)ROUNDS * 2);
		/* Its own line: one cold miss, never taken away. */
		assert_ptr_equal(ks_mt_own_word(w.m, (uintptr_t)(w.buf + 64 * i)),
				 ks_mt_own_word(w.m, (uintptr_t)(w.buf + 64 * i) + 60));
		assert_int_equal(*ks_mt_own_word(w.m, (uintptr_t)(w.buf + 64 * i)),
				 UINT64_C(1) << (i + 1));
	}
	ks_mt_for_each_shared_line(w.m, line_cb, &seen);
	/* Only the shared line has two threads; each wrote its own word. */
	assert_int_equal(seen.lines, 1);
	assert_int_equal(seen.false_lines, 1);
	assert_int_equal(seen.writes, (uint64_t)NTHREADS * ROUNDS);
	/* The private lines: no thread ever took another's. */
	assert_true(tot.invalidations <= (uint64_t)NTHREADS * ROUNDS);
	ks_mt_fini(w.m);
	assert_int_equal(outstanding, 0);
	free(w.buf);
}

static void test_direct_bits(void **state)
{
	struct ks_mt_config cfg;
	struct ks_mt *m = NULL;
	uintptr_t a = (uintptr_t)1 << 46; /* a native mmap address */

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	cfg.line_size = 64;
	cfg.max_threads = 8;
	cfg.min_write = true;
	cfg.direct_bits = 17; /* below a chunk */
	assert_int_equal(ks_mt_init(&m, &cfg, &zalloc), -22);
	cfg.direct_bits = KS_MT_MAX_DIRECT_BITS + 1;
	assert_int_equal(ks_mt_init(&m, &cfg, &zalloc), -22);
	cfg.direct_bits = 47;
	assert_int_equal(ks_mt_init(&m, &cfg, &zalloc), 0);
	assert_int_equal(ks_mt_access(m, 1, a, 8, true, NULL), KS_MT_EV_COLD);
	assert_non_null(ks_mt_own_word(m, a));
	assert_int_equal(*ks_mt_own_word(m, a), UINT64_C(1) << 1);
	assert_true(ks_mt_quiet(m, 1, a, true));
	assert_int_equal(ks_mt_access(m, 2, a, 8, false, NULL), KS_MT_EV_MISS);
	assert_int_equal(*ks_mt_own_word(m, a), (UINT64_C(1) << 1) | (UINT64_C(1) << 2));
	assert_false(ks_mt_quiet(m, 1, a, true));
	assert_true(ks_mt_quiet(m, 1, a, false));
	/* The untouched gigabytes of the direct table are not resident. */
	assert_true(ks_mt_shadow_bytes(m) > ((size_t)1 << 31));
	assert_true(ks_mt_shadow_resident(m) < ((size_t)1 << 20));
	ks_mt_fini(m);
	assert_int_equal(outstanding, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct_bits),
		cmocka_unit_test(test_parallel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
