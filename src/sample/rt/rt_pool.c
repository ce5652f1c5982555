/*
 * The pool of sample buffers.  Each buffer is its own anonymous mapping big
 * enough for KSCOPE_BUFFER_SAMPLES samples of the largest size; pages are
 * touched only as records fill them, so a thread that records little costs
 * little memory.  Buffers are never unmapped: a thread that ends gives its
 * buffers back (through the writer) and the next thread reuses them, so
 * the number of buffers follows the number of threads alive at once, not
 * the number ever created.
 *
 * Only normal code uses the pool (thread start, the writer thread), so a
 * mutex protects it; signal handlers never take buffers from it.  fork()
 * holds the lock across the fork so the child's copy is consistent.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rt_int.h"

/* Buffers mapped ahead at start, so the first threads do not map. */
#define KS_RT_POOL_PREMAP 4

static struct ks_rt_buf *buf_map(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = offsetof(struct ks_rt_buf, chunk) + ks_rt.buf_bytes;
	struct ks_rt_buf *b;

	size = (size + page - 1) / page * page;
	b = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED)
		return NULL;
	b->map_size = size;
	b->cap = ks_rt.buf_bytes;
	b->used = sizeof(struct ks_raw_chunk);
	return b;
}

int ks_rt_pool_init(void)
{
	uint64_t bytes = sizeof(struct ks_raw_chunk) +
			 (uint64_t)ks_rt.opts.buffer_samples * KS_RT_SAMPLE_MAX;

	if (bytes > UINT32_MAX - 4096)
		bytes = UINT32_MAX - 4096;
	ks_rt.buf_bytes = (uint32_t)(bytes & ~(uint64_t)7);
	for (int i = 0; i < KS_RT_POOL_PREMAP; i++) {
		struct ks_rt_buf *b = buf_map();

		if (!b)
			return -ENOMEM;
		ks_rt_pool_put(b);
	}
	return 0;
}

struct ks_rt_buf *ks_rt_pool_get(void)
{
	struct ks_rt_buf *b;

	pthread_mutex_lock(&ks_rt.pool_lock);
	b = ks_rt.pool;
	if (b)
		ks_rt.pool = b->next;
	pthread_mutex_unlock(&ks_rt.pool_lock);
	if (!b)
		b = buf_map();
	if (b) {
		b->next = NULL;
		b->owner = NULL;
		b->used = sizeof(struct ks_raw_chunk);
	}
	return b;
}

void ks_rt_pool_put(struct ks_rt_buf *b)
{
	pthread_mutex_lock(&ks_rt.pool_lock);
	b->next = ks_rt.pool;
	b->owner = NULL;
	ks_rt.pool = b;
	pthread_mutex_unlock(&ks_rt.pool_lock);
}

void ks_rt_pool_lock(void)
{
	pthread_mutex_lock(&ks_rt.pool_lock);
}

void ks_rt_pool_unlock(void)
{
	pthread_mutex_unlock(&ks_rt.pool_lock);
}

void ks_rt_pool_atfork_child(void)
{
	/* The lock was held across fork by the forking thread, which is the
	 * child's only thread: a fresh mutex is the unlocked state. */
	pthread_mutex_init(&ks_rt.pool_lock, NULL);
}
