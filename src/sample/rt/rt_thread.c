/*
 * The table of thread states: one struct ks_rt_thread per thread that
 * records, found by the thread through ks_rt_self and by flushes through a
 * list.  The list only grows (entries are never freed, so a flush in a
 * signal handler can walk it without a lock) but entries are reused: a
 * thread that ends marks its entry dead, and the next thread to start
 * claims it with compare-and-swap, together with its spare buffer.  So the
 * table has no fixed size, and its size follows the largest number of
 * threads alive at once, not the number ever started.
 *
 * This file also starts and ends a thread's recording: THREAD_BEGIN and
 * THREAD_END records, the per-thread perf_event counters, the stack bounds
 * used by frame-pointer walks, and the timers (rt_timer_async.c).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "counters.h"
#include "rt_int.h"

__thread struct ks_rt_thread *ks_rt_self __attribute__((tls_model("initial-exec")));
__thread struct ks_rt_tls ks_rt_tls __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------------ */
/* Per-sample counters                                                */
/* ------------------------------------------------------------------ */

/* A counter of the calling thread, opened as counters.c opens every
 * counter (the table `kscope avail` and the checker use); -errno on
 * failure. */
static int counter_open(uint32_t i, uint64_t *id)
{
	int fd = ks_counter_open(ks_rt.counter_def[i], false, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return fd;
	if (ioctl(fd, PERF_EVENT_IOC_ID, id) != 0) {
		close(fd);
		return -ENOTTY;
	}
	return ks_rt_fd_high(fd);
}

void ks_rt_counters_init(void)
{
	int saved = errno;

	ks_rt.counter_mask = 0;
	for (uint32_t i = 0; i < ks_rt.opts.ncounters; i++) {
		uint64_t id;
		int fd;

		/* spec.c accepted only names of the table. */
		ks_rt.counter_def[i] = ks_counter_find(ks_rt.opts.counters[i]);
		if (!ks_rt.counter_def[i]) {
			ks_rt.counter_errno[i] = ENOENT;
			continue;
		}
		fd = counter_open(i, &id);
		if (fd < 0) {
			ks_rt.counter_errno[i] = -fd;
			ks_rt_log(KS_RT_LOG_DEBUG, "counter %s is not supported here (%s)",
				  ks_rt.opts.counters[i], strerror(-fd));
			continue;
		}
		close(fd);
		ks_rt.counter_errno[i] = 0;
		ks_rt.counter_mask |= 1u << i;
	}
	errno = saved;
}

static void counters_open(struct ks_rt_thread *t)
{
	for (uint32_t i = 0; i < KS_RAW_MAX_COUNTERS; i++) {
		t->counter_fd[i] = -1;
		if (i < ks_rt.opts.ncounters && (ks_rt.counter_mask & (1u << i))) {
			int fd = counter_open(i, &t->counter_id[i]);

			t->counter_fd[i] = fd < 0 ? -1 : fd;
		}
	}
}

static void counters_close(struct ks_rt_thread *t)
{
	for (uint32_t i = 0; i < KS_RAW_MAX_COUNTERS; i++) {
		if (ks_rt_perf_fd_is(t->counter_fd[i], t->counter_id[i]))
			close(t->counter_fd[i]);
		t->counter_fd[i] = -1;
	}
}

/* ------------------------------------------------------------------ */
/* The table                                                          */
/* ------------------------------------------------------------------ */

/* A dead entry to reuse, or a new one; state CLAIMED.  NULL if out of
 * memory. */
static struct ks_rt_thread *thread_claim(void)
{
	struct ks_rt_thread *t;

	for (t = atomic_load(&ks_rt.threads); t; t = t->all_next) {
		int dead = KS_RT_T_DEAD;

		if (atomic_compare_exchange_strong(&t->state, &dead, KS_RT_T_CLAIMED))
			return t;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->timer_lock, NULL);
	for (int i = 0; i < KS_RAW_MAX_COUNTERS; i++)
		t->counter_fd[i] = -1;
	atomic_store(&t->state, KS_RT_T_CLAIMED);
	t->all_next = atomic_load(&ks_rt.threads);
	while (!atomic_compare_exchange_weak(&ks_rt.threads, &t->all_next, t))
		;
	return t;
}

static void stack_bounds(struct ks_rt_thread *t)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	t->stack_lo = t->stack_hi = 0;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		t->stack_lo = (uintptr_t)addr;
		t->stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

/* Sets up t for the calling thread and records THREAD_BEGIN. */
static void thread_setup(struct ks_rt_thread *t, pid_t creator_tid, uint32_t index)
{
	struct ks_raw_thread_begin b;

	t->tid = ks_rt_gettid();
	t->index = index;
	t->selected = ks_rt_tid_selected(&ks_rt.opts, index);
	t->ended = false;
	t->seq = 0;
	t->has_timer[0] = t->has_timer[1] = false;
	if (!t->cur)
		t->cur = atomic_exchange(&t->spare, NULL);
	if (!t->cur)
		t->cur = ks_rt_pool_get();
	if (t->cur)
		t->cur->used = sizeof(struct ks_raw_chunk);
	memset(t->name, 0, sizeof(t->name));
	prctl(PR_GET_NAME, t->name, 0, 0, 0);
	t->name[sizeof(t->name) - 1] = '\0';
	if (ks_rt.opts.unwind_fp)
		stack_bounds(t);
	counters_open(t);
	atomic_store(&t->state, KS_RT_T_LIVE);
	ks_rt_self = t;
	pthread_setspecific(ks_rt.key, t);

	memset(&b, 0, sizeof(b));
	b.h.type = KS_RAW_THREAD_BEGIN;
	b.h.size = sizeof(b);
	b.ts = ks_rt_now();
	b.tid = t->tid;
	b.creator_tid = creator_tid;
	memcpy(b.name, t->name, sizeof(b.name));
	ks_rt_record(&b, sizeof(b));

	ks_rt_timers_start(t);
}

struct ks_rt_thread *ks_rt_thread_begin(pid_t creator_tid, uint32_t index)
{
	struct ks_rt_thread *t;
	int saved = errno;

	if (!ks_rt_on() || ks_rt_self)
		return ks_rt_self_get();
	t = thread_claim();
	if (t)
		thread_setup(t, creator_tid, index);
	errno = saved;
	return t;
}

struct ks_rt_thread *ks_rt_thread_adopt(void)
{
	struct ks_rt_thread *t = ks_rt_self;

	if (t == KS_RT_SELF_ENDED)
		return NULL;
	if (t || !ks_rt_on())
		return t;
	/* A thread kscope did not see start, or a child of a fork kscope
	 * did not see (vfork, clone): only the former may record. */
	if (getpid() != ks_rt.pid)
		return NULL;
	return ks_rt_thread_begin(0, atomic_fetch_add(&ks_rt.next_index, 1));
}

void ks_rt_thread_end(void)
{
	struct ks_rt_thread *t = ks_rt_self;
	int saved = errno;

	if (!t || t == KS_RT_SELF_ENDED)
		return;
	ks_rt_timers_end(t);
	/* From here on a late timer signal finds no state and is ignored. */
	ks_rt_self = KS_RT_SELF_ENDED;
	pthread_setspecific(ks_rt.key, NULL);
	counters_close(t);
	if (ks_rt_busy_wait(t)) {
		if (!t->ended) {
			struct ks_raw_thread_end e;
			void *p;

			ks_rt_thread_end_rec(t, &e, true);
			p = ks_rt_buf_reserve(t, sizeof(e));
			if (p) {
				memcpy(p, &e, sizeof(e));
				ks_rt_buf_commit(t, sizeof(e));
			}
			t->ended = true;
		}
		ks_rt_buf_send_last(t);
		ks_rt_busy_release(t);
	}
	atomic_store(&t->state, KS_RT_T_DEAD);
	errno = saved;
}

void ks_rt_threads_atfork_child(void)
{
	struct ks_rt_thread *self = ks_rt_self_get();

	for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next) {
		/* Timers are not inherited; counters are, but count the
		 * parent's threads.  Locks may have been held by threads
		 * that do not exist here. */
		pthread_mutex_init(&t->timer_lock, NULL);
		t->has_timer[0] = t->has_timer[1] = false;
		counters_close(t);
		atomic_store(&t->busy, 0);
		if (t->cur)
			t->cur->used = sizeof(struct ks_raw_chunk);
		if (t != self && atomic_load(&t->state) != KS_RT_T_FREE)
			atomic_store(&t->state, KS_RT_T_DEAD);
	}
	atomic_store(&ks_rt.next_index, 1);
	atomic_store(&ks_rt.rt_timers, 0);
	if (self) {
		/* The forking thread is the child's main thread: a new
		 * thread as far as the child's file is concerned. */
		ks_rt_self = NULL;
		atomic_store(&self->state, KS_RT_T_CLAIMED);
		thread_setup(self, 0, 0);
	} else if (ks_rt_self != KS_RT_SELF_ENDED) {
		ks_rt_thread_begin(0, 0);
	}
}
