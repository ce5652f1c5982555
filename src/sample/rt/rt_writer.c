/*
 * The writer thread: the one thread that normally writes the raw file, so
 * that the program's threads never wait on disk.  It wakes when a buffer
 * is queued (sem_post from rt_buffer_async.c) and every 100 ms, and then
 *  - writes the queued chunks and gives their buffers back,
 *  - every 100 ms: a KS_RAW_COUNTER record of the process's resident set
 *    size and one of its CPU use since the last one, and a poll for newly
 *    loaded modules,
 *  - every second: flushes each thread's partly filled buffer (so a process
 *    killed by SIGKILL loses at most about a second of samples) and writes
 *    KS_RAW_DROPPED if samples were lost.
 *
 * The thread blocks every signal, so signals meant for the program are
 * never delivered to it, and it is not a recorded thread.  It stops when
 * the final flush has run; fork starts a new one in the child.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt_int.h"

#define KS_RT_TICK_NS   100000000ull   /* counters, module poll */
#define KS_RT_FLUSH_NS 1000000000ull   /* partial buffers, dropped */

struct writer {
	uint64_t last_wall, last_cpu;  /* for CPU % */
	long page;
};

static void counter_write(uint32_t kind, double value, uint64_t ts)
{
	struct ks_raw_counter c;

	memset(&c, 0, sizeof(c));
	c.h.type = KS_RAW_COUNTER;
	c.h.size = sizeof(c);
	c.ts = ts;
	c.kind = kind;
	c.value = value;
	ks_rt_file_write(&c, sizeof(c));
}

/* file lock held.  Outside the time windows the values are read (CPU %
 * needs the last one) but not recorded. */
static void counters_sample(struct writer *w, uint64_t now)
{
	struct timespec ts;
	uint64_t cpu;
	char buf[128];
	bool open = ks_rt_window_open(now);

	if (open && ks_rt_fd_is(ks_rt.statm_fd, ks_rt.statm_dev, ks_rt.statm_ino)) {
		ssize_t n = pread(ks_rt.statm_fd, buf, sizeof(buf) - 1, 0);
		char *p;
		unsigned long long rss;

		if (n > 0) {
			buf[n] = '\0';
			/* "size resident shared ..." in pages */
			(void)strtoull(buf, &p, 10);
			rss = strtoull(p, &p, 10);
			if (*p == ' ')
				counter_write(KS_RAW_COUNTER_RSS, (double)rss * (double)w->page, now);
		}
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (open && w->last_wall && now > w->last_wall)
		counter_write(KS_RAW_COUNTER_CPU_PCT,
			      100.0 * (double)(cpu - w->last_cpu) / (double)(now - w->last_wall), now);
	w->last_wall = now;
	w->last_cpu = cpu;
}

/* Normal context: makes sure t has a spare buffer to swap in. */
static void give_spare(struct ks_rt_thread *t)
{
	struct ks_rt_buf *none = NULL, *b;

	if (atomic_load(&t->spare))
		return;
	b = ks_rt_pool_get();
	if (b && !atomic_compare_exchange_strong(&t->spare, &none, b))
		ks_rt_pool_put(b); /* the thread got one meanwhile */
}

/* file lock held: every live thread's records so far reach the file.  A
 * thread's busy flag is held only to swap its buffer for its spare, never
 * across I/O: a sample that arrives while the flag is held is dropped,
 * and the writer may be preempted in the middle of a write.  The swapped
 * out buffers go through the queue like full ones (the caller drains it). */
static void flush_partial(void)
{
	for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next) {
		if (atomic_load(&t->state) != KS_RT_T_LIVE)
			continue;
		give_spare(t);
		if (!ks_rt_busy_try(t))
			continue;
		if (t->cur && t->cur->used > sizeof(struct ks_raw_chunk) &&
		    atomic_load(&t->spare))
			ks_rt_buf_handoff(t);
		ks_rt_busy_release(t);
	}
}

static void *writer_main(void *arg)
{
	struct writer w;
	uint64_t next_tick, next_flush;

	(void)arg;
	memset(&w, 0, sizeof(w));
	w.page = sysconf(_SC_PAGESIZE);
	next_tick = ks_rt_now();
	next_flush = next_tick + KS_RT_FLUSH_NS;
	for (;;) {
		struct timespec dl;
		uint64_t now;
		bool tick = false;
		int st, lk;

		dl.tv_sec = (time_t)(next_tick / 1000000000u);
		dl.tv_nsec = (long)(next_tick % 1000000000u);
		while (sem_clockwait(&ks_rt.wake, CLOCK_MONOTONIC, &dl) == 0)
			if (atomic_load(&ks_rt.queue) == NULL && !atomic_load(&ks_rt.rt_rebudget))
				continue; /* extra posts: keep waiting */
			else
				break;
		if (atomic_load(&ks_rt.writer_stop))
			break;
		st = atomic_load(&ks_rt.state);
		if (st == KS_RT_FINISHING || st == KS_RT_FINISHED || st == KS_RT_OFF)
			break;
		lk = ks_rt_file_lock(100);
		if (lk != 1)
			continue;
		if (atomic_load(&ks_rt.state) != KS_RT_RUNNING) {
			ks_rt_file_unlock();
			continue;
		}
		ks_rt_flush_queue(true);
		now = ks_rt_now();
		tick = now >= next_tick;
		if (tick) {
			counters_sample(&w, now);
			ks_rt_modules_poll();
			next_tick += KS_RT_TICK_NS;
			if (next_tick <= now)
				next_tick = now + KS_RT_TICK_NS;
		}
		if (now >= next_flush) {
			flush_partial();
			ks_rt_flush_queue(true);
			ks_rt_write_dropped();
			next_flush = now + KS_RT_FLUSH_NS;
		}
		ks_rt_file_unlock();
		/* Outside the file lock: it takes the threads' timer locks. */
		if (atomic_exchange(&ks_rt.rt_rebudget, false) || tick)
			ks_rt_realtime_rebudget();
	}
	return NULL;
}

int ks_rt_writer_start(void)
{
	sigset_t all, old;
	int rc;

	sigfillset(&all);
	KS_RT_REAL(pthread_sigmask)(SIG_SETMASK, &all, &old);
	atomic_store(&ks_rt.writer_stop, false);
	rc = KS_RT_REAL(pthread_create)(&ks_rt.writer, NULL, writer_main, NULL);
	KS_RT_REAL(pthread_sigmask)(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -rc;
	pthread_setname_np(ks_rt.writer, "kscope-writer");
	pthread_detach(ks_rt.writer);
	ks_rt.writer_started = true;
	return 0;
}
