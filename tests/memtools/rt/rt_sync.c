/*
 * C11 atomics of every width (1, 2, 4, 8 and 16 bytes) and every memory
 * order, pthread mutexes and condition variables, for the compiled front
 * end's test (test_rt.py): built instrumented and not, it must print the
 * same lines and exit 0 either way.  4 threads each do N rounds
 * (argv[1], default 20000) of: every read-modify-write of every width on
 * shared atomics with a rotating memory order, loads and stores, a
 * compare-exchange loop (strong and weak), fences, a mutex-protected
 * counter, and a producer/consumer hand-off through a condition
 * variable.  Every result is checked against what the operations must
 * give whatever the interleaving; a wrong one prints "BAD ..." and exits
 * 1.  The shared atomics sit together in one struct (one or two cache
 * lines): true sharing the report must find (SHARED SYNC).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4

struct shared {
	_Atomic uint8_t a8;
	_Atomic uint16_t a16;
	_Atomic uint32_t a32;
	_Atomic uint64_t a64;
	_Atomic uint32_t bits;          /* or/and/xor traffic */
	_Atomic uint64_t cas_counter;   /* incremented by compare-exchange loops */
	_Atomic int ready;              /* release/acquire flag */
};

static _Alignas(64) struct shared sh;
#if defined(__SIZEOF_INT128__) && defined(KS_TEST_INT128)
static _Alignas(16) _Atomic unsigned __int128 a128;
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long locked_counter;
static long mailbox;        /* one item at a time, under lock */
static int mailbox_full;
static long consumed_sum;
static long rounds = 20000;

static const memory_order rmw_orders[] = {
	memory_order_relaxed, memory_order_consume, memory_order_acquire,
	memory_order_release, memory_order_acq_rel, memory_order_seq_cst
};
static const memory_order load_orders[] = {
	memory_order_relaxed, memory_order_consume, memory_order_acquire, memory_order_seq_cst
};
static const memory_order store_orders[] = {
	memory_order_relaxed, memory_order_release, memory_order_seq_cst
};

static void bad(const char *what, unsigned long long got, unsigned long long want)
{
	printf("BAD %s: %llu, expected %llu\n", what, got, want);
	exit(1);
}

static void *worker(void *arg)
{
	long id = (long)arg;

	for (long i = 0; i < rounds; i++) {
		memory_order mo = rmw_orders[i % 6];
		memory_order lo = load_orders[i % 4], so = store_orders[i % 3];
		uint64_t seen;

		/* Each thread adds and subtracts; the sums are known at the end. */
		atomic_fetch_add_explicit(&sh.a8, 1, mo);                  /* SHARED SYNC */
		atomic_fetch_add_explicit(&sh.a16, 2, mo);
		atomic_fetch_add_explicit(&sh.a32, 3, mo);
		atomic_fetch_add_explicit(&sh.a64, 5, mo);
		atomic_fetch_sub_explicit(&sh.a64, 1, mo);
		atomic_fetch_or_explicit(&sh.bits, 1u << id, mo);
		atomic_fetch_xor_explicit(&sh.bits, 1u << (8 + id), mo);
		atomic_fetch_and_explicit(&sh.bits, ~(1u << (16 + id)), mo);
		(void)atomic_exchange_explicit(&sh.ready, 1, mo);
		/* compare-exchange loops, strong then weak, every order pair */
		seen = atomic_load_explicit(&sh.cas_counter, lo);
		while (!atomic_compare_exchange_strong_explicit(&sh.cas_counter, &seen, seen + 1,
								 mo, memory_order_relaxed))
			;
		seen = atomic_load_explicit(&sh.cas_counter, memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(&sh.cas_counter, &seen, seen + 1,
							       memory_order_seq_cst, lo))
			;
		atomic_thread_fence(mo);
		atomic_signal_fence(mo);
		(void)atomic_load_explicit(&sh.a8, lo);
		(void)atomic_load_explicit(&sh.a16, lo);
		(void)atomic_load_explicit(&sh.a32, lo);
		if (i % 1000 == 0)
			atomic_store_explicit(&sh.ready, 0, so);
#if defined(__SIZEOF_INT128__) && defined(KS_TEST_INT128)
		atomic_fetch_add_explicit(&a128, (unsigned __int128)1 << 64 | 1, mo);
#endif
		pthread_mutex_lock(&lock);
		locked_counter += id + 1;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

/* Thread 0 of the hand-off produces 1..n, the consumer adds them up. */
static void *producer(void *arg)
{
	long n = (long)arg;

	for (long v = 1; v <= n; v++) {
		pthread_mutex_lock(&lock);
		while (mailbox_full)
			pthread_cond_wait(&cond, &lock);
		mailbox = v;
		mailbox_full = 1;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long n = (long)arg;

	for (long k = 0; k < n; k++) {
		pthread_mutex_lock(&lock);
		while (!mailbox_full)
			pthread_cond_wait(&cond, &lock);
		consumed_sum += mailbox;
		mailbox_full = 0;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS + 2];
	long handoff;
	unsigned long long r = 0;

	if (argc > 1)
		rounds = atol(argv[1]);
	if (rounds < 1)
		return 2;
	handoff = rounds / 10 + 1;
	atomic_store(&sh.bits, 0xffff0000u);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 1;
	if (pthread_create(&t[NTHREADS], NULL, producer, (void *)handoff) != 0 ||
	    pthread_create(&t[NTHREADS + 1], NULL, consumer, (void *)handoff) != 0)
		return 1;
	for (int i = 0; i < NTHREADS + 2; i++)
		pthread_join(t[i], NULL);

	if (atomic_load(&sh.a8) != (uint8_t)(NTHREADS * rounds))
		bad("a8", atomic_load(&sh.a8), (uint8_t)(NTHREADS * rounds));
	if (atomic_load(&sh.a16) != (uint16_t)(2 * NTHREADS * rounds))
		bad("a16", atomic_load(&sh.a16), (uint16_t)(2 * NTHREADS * rounds));
	if (atomic_load(&sh.a32) != (uint32_t)(3 * NTHREADS * rounds))
		bad("a32", atomic_load(&sh.a32), (uint32_t)(3 * NTHREADS * rounds));
	if (atomic_load(&sh.a64) != (uint64_t)(4 * NTHREADS * rounds))
		bad("a64", atomic_load(&sh.a64), (uint64_t)(4 * NTHREADS * rounds));
	/* or sets bits 0-3; xor flips bits 8-11 once per round; and clears
	 * bits 16-19, leaving 20-31 set. */
	r = (unsigned long long)(0xfff00000u | 0xfu | (rounds % 2 ? 0xf00u : 0));
	if (atomic_load(&sh.bits) != r)
		bad("bits", atomic_load(&sh.bits), r);
	if (atomic_load(&sh.cas_counter) != (uint64_t)(2 * NTHREADS * rounds))
		bad("cas_counter", atomic_load(&sh.cas_counter), 2 * NTHREADS * rounds);
#if defined(__SIZEOF_INT128__) && defined(KS_TEST_INT128)
	{
		unsigned __int128 v = atomic_load(&a128);

		if ((uint64_t)v != (uint64_t)(NTHREADS * rounds) ||
		    (uint64_t)(v >> 64) != (uint64_t)(NTHREADS * rounds))
			bad("a128", (uint64_t)v, NTHREADS * rounds);
	}
#endif
	if (locked_counter != rounds * (NTHREADS * (NTHREADS + 1) / 2))
		bad("locked_counter", (unsigned long long)locked_counter,
		    (unsigned long long)(rounds * (NTHREADS * (NTHREADS + 1) / 2)));
	if (consumed_sum != handoff * (handoff + 1) / 2)
		bad("handoff", (unsigned long long)consumed_sum,
		    (unsigned long long)(handoff * (handoff + 1) / 2));
	printf("atomics a8 %u a16 %u a32 %u a64 %llu bits %#x cas %llu\n",
	       (unsigned)atomic_load(&sh.a8), (unsigned)atomic_load(&sh.a16),
	       (unsigned)atomic_load(&sh.a32), (unsigned long long)atomic_load(&sh.a64),
	       (unsigned)atomic_load(&sh.bits), (unsigned long long)atomic_load(&sh.cas_counter));
	printf("mutex %ld handoff %ld\n", locked_counter, consumed_sum);
	return 0;
}
