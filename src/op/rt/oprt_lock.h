/*
 * The replay lock of libkscope-op.so (oprt_main.c): a reader-writer lock
 * whose shared side is one atomic add to take and one to release, with no
 * call into the C library, because every wrapped call of the program takes
 * it (every launch of a program kscope op profiles pays for it).  Writers
 * (a replay, a fork) are rare and preferred: a writer sets KS_RWL_WRITER,
 * which turns new readers away until it is done, and sleeps on a futex
 * until the readers inside have left; the last of them wakes it.  Writers
 * are serialized by a mutex.  Not recursive: the runtime counts its depth
 * per thread and takes the lock once (oprt_main.c).
 */
#ifndef KS_OPRT_LOCK_H
#define KS_OPRT_LOCK_H

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

struct ks_rwl {
	atomic_uint state;          /* readers inside, + KS_RWL_WRITER */
	pthread_mutex_t writers;
};

#define KS_RWL_WRITER 0x80000000u
#define KS_RWL_INITIALIZER { 0, PTHREAD_MUTEX_INITIALIZER }

static inline void ks_rwl_wait(struct ks_rwl *l, unsigned seen)
{
	syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

static inline void ks_rwl_wake(struct ks_rwl *l)
{
	syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* A reader leaves: the last one out while a writer waits wakes it. */
static inline void ks_rwl_rdunlock(struct ks_rwl *l)
{
	if (atomic_fetch_sub_explicit(&l->state, 1, memory_order_release) == KS_RWL_WRITER + 1)
		ks_rwl_wake(l);
}

static inline void ks_rwl_rdlock(struct ks_rwl *l)
{
	unsigned s;

	while (atomic_fetch_add_explicit(&l->state, 1, memory_order_acquire) & KS_RWL_WRITER) {
		/* A writer waits or holds it: step back out, wait it out. */
		ks_rwl_rdunlock(l);
		while ((s = atomic_load_explicit(&l->state, memory_order_acquire)) & KS_RWL_WRITER)
			ks_rwl_wait(l, s);
	}
}

static inline void ks_rwl_wrlock(struct ks_rwl *l)
{
	unsigned s;

	pthread_mutex_lock(&l->writers);
	s = atomic_fetch_or_explicit(&l->state, KS_RWL_WRITER, memory_order_acquire) |
	    KS_RWL_WRITER;
	while (s != KS_RWL_WRITER) {
		ks_rwl_wait(l, s);
		s = atomic_load_explicit(&l->state, memory_order_acquire);
	}
}

/* Without waiting: false when a reader or another writer is in. */
static inline bool ks_rwl_trywrlock(struct ks_rwl *l)
{
	unsigned zero = 0;

	if (pthread_mutex_trylock(&l->writers) != 0)
		return false;
	if (atomic_compare_exchange_strong_explicit(&l->state, &zero, KS_RWL_WRITER,
						    memory_order_acquire, memory_order_relaxed))
		return true;
	pthread_mutex_unlock(&l->writers);
	return false;
}

static inline void ks_rwl_wrunlock(struct ks_rwl *l)
{
	atomic_fetch_and_explicit(&l->state, ~KS_RWL_WRITER, memory_order_release);
	ks_rwl_wake(l);
	pthread_mutex_unlock(&l->writers);
}

/* In a forked child (one thread): free again, whatever the parent held. */
static inline void ks_rwl_reinit(struct ks_rwl *l)
{
	pthread_mutex_init(&l->writers, NULL);
	atomic_store(&l->state, 0);
}

#endif
