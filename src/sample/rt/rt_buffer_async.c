/*
 * Appending records to a thread's sample buffer, and the queue that carries
 * full buffers to the writer thread.  The sampling signal handler appends
 * samples here, so everything in this file is async-signal-safe: no locks,
 * no allocation, only atomics and sem_post.
 *
 * Each thread state has a `busy` flag.  Whoever writes the thread's current
 * buffer holds it: the thread's own code (region push, MPI record...), its
 * signal handler, or a flusher on another thread.  The handler only tries
 * once and drops the sample if the flag is taken (counted in ks_rt.dropped),
 * which is what keeps it lock-free: it may have interrupted its own thread
 * in the middle of a write.
 *
 * The queue is a Treiber stack: producers (any thread, any handler) push
 * with compare-and-swap; the single consumer takes the whole stack with one
 * exchange and reverses it, so no pop ever races with a push (no ABA).
 */
#include <errno.h>
#include <sched.h>
#include <semaphore.h>

#include "rt_int.h"

/* async-signal-safe */
bool ks_rt_busy_try(struct ks_rt_thread *t)
{
	int expected = 0;

	return atomic_compare_exchange_strong_explicit(&t->busy, &expected, 1,
						       memory_order_acquire,
						       memory_order_relaxed);
}

/* Normal context (not signal-safe: it may wait): the holder is a handler that has finished by the time we
 * run again, the writer's periodic flush, or a flusher.  A final flush
 * never lets go, so give up once the runtime is ending. */
bool ks_rt_busy_wait(struct ks_rt_thread *t)
{
	for (;;) {
		int s;

		if (ks_rt_busy_try(t))
			return true;
		s = atomic_load_explicit(&ks_rt.state, memory_order_acquire);
		if (s == KS_RT_OFF || s >= KS_RT_FINISHING)
			return false;
		sched_yield();
	}
}

/* async-signal-safe */
void ks_rt_busy_release(struct ks_rt_thread *t)
{
	atomic_store_explicit(&t->busy, 0, memory_order_release);
}

/* async-signal-safe */
void ks_rt_queue_push(struct ks_rt_buf *b)
{
	struct ks_rt_buf *old = atomic_load_explicit(&ks_rt.queue, memory_order_relaxed);

	do {
		b->next = old;
	} while (!atomic_compare_exchange_weak_explicit(&ks_rt.queue, &old, b,
							memory_order_release,
							memory_order_relaxed));
}

/* async-signal-safe */
struct ks_rt_buf *ks_rt_queue_take(void)
{
	struct ks_rt_buf *list = atomic_exchange_explicit(&ks_rt.queue, NULL,
							  memory_order_acquire);
	struct ks_rt_buf *rev = NULL;

	while (list) {
		struct ks_rt_buf *next = list->next;

		list->next = rev;
		rev = list;
		list = next;
	}
	return rev;
}

/* Fills the chunk header of t's current buffer and gives it the thread's
 * next sequence number; false if the buffer holds no record (nothing to
 * write).  async-signal-safe; t->busy held */
bool ks_rt_buf_seal(struct ks_rt_thread *t)
{
	struct ks_rt_buf *b = t->cur;

	if (!b || b->used <= sizeof(struct ks_raw_chunk))
		return false;
	b->chunk.h.type = KS_RAW_CHUNK;
	b->chunk.h.flags = 0;
	b->chunk.h.size = b->used;
	b->chunk.tid = t->tid;
	b->chunk.seq = t->seq++;
	return true;
}

/* async-signal-safe; t->busy held */
void ks_rt_buf_send(struct ks_rt_thread *t)
{
	struct ks_rt_buf *b = t->cur;

	if (!ks_rt_buf_seal(t))
		return;
	b->owner = t;
	t->cur = NULL;
	ks_rt_queue_push(b);
	sem_post(&ks_rt.wake);
}

/* t->busy held */
void ks_rt_buf_send_last(struct ks_rt_thread *t)
{
	struct ks_rt_buf *b = t->cur;

	if (!ks_rt_buf_seal(t))
		return;
	b->owner = t;
	t->cur = NULL;
	ks_rt_queue_push(b);
	if (atomic_fetch_add_explicit(&ks_rt.queued_lazy, 1, memory_order_relaxed) + 1 >=
	    KS_RT_LAZY_WAKE) {
		atomic_store_explicit(&ks_rt.queued_lazy, 0, memory_order_relaxed);
		sem_post(&ks_rt.wake);
	}
}

/* async-signal-safe; t->busy held */
bool ks_rt_buf_handoff(struct ks_rt_thread *t)
{
	ks_rt_buf_send(t);
	if (!t->cur) {
		t->cur = atomic_exchange_explicit(&t->spare, NULL, memory_order_acquire);
		if (t->cur)
			t->cur->used = sizeof(struct ks_raw_chunk);
	}
	return t->cur != NULL;
}

/* async-signal-safe; t->busy held */
void *ks_rt_buf_reserve(struct ks_rt_thread *t, uint32_t size)
{
	struct ks_rt_buf *b = t->cur;

	if (!b || b->cap - b->used < size) {
		if (!ks_rt_buf_handoff(t))
			return NULL;
		b = t->cur;
		if (b->cap - b->used < size)
			return NULL;
	}
	return (unsigned char *)&b->chunk + b->used;
}

/* async-signal-safe; t->busy held, after a successful reserve */
void ks_rt_buf_commit(struct ks_rt_thread *t, uint32_t size)
{
	t->cur->used += KS_RAW_ALIGN(size);
}
