/*
 * Writing the raw file, and the final flush.
 *
 * The file is written only by whoever holds the file lock: normally the
 * writer thread, but at the end a thread that exits, execs or dies by a
 * signal takes the lock and writes everything that is left itself, because
 * it cannot count on the writer thread running again.  The lock is an
 * atomic owner tid with a polling wait (nanosleep), so it can be taken in a
 * signal handler; a flush in a handler waits a bounded time and gives up
 * rather than hang a dying process.
 *
 * The final flush (ks_rt_finish) stops sampling, takes every thread's busy
 * flag so no record is half-written, writes the queued chunks, adds
 * THREAD_END for threads still alive, writes each thread's current buffer,
 * then DROPPED and END.  For exec the flush is undone if exec fails: the
 * file is cut back to before END and recording goes on.
 *
 * Everything reachable from ks_rt_finish(..., from_signal = true) is
 * async-signal-safe: pwrite(2), fstat, open, nanosleep and atomics only.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "rt_int.h"

#define KS_RT_WRITEV_MAX 64   /* buffers per pwritev */

/* Budgets for a flush that must not hang (signal context). */
#define KS_RT_LOCK_WAIT_MS  2000
#define KS_RT_BUSY_WAIT_MS  200
#define KS_RT_FINISH_WAIT_MS 2000

/* async-signal-safe */
static void sleep_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, NULL);
}

/* async-signal-safe: the descriptor must still be our file.  A program
 * may close descriptors it does not know (daemons close them all) and
 * reuse the number: then the file is opened again by its path, and the
 * number is left to the program. */
static void file_check(void)
{
	struct stat st;
	int fd;

	if (ks_rt.fd < 0 || ks_rt.fd_broken ||
	    ks_rt_fd_is(ks_rt.fd, ks_rt.fd_dev, ks_rt.fd_ino))
		return;
	ks_rt.fd_broken = true;
	fd = open(ks_rt.path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || st.st_dev != ks_rt.fd_dev || st.st_ino != ks_rt.fd_ino) {
		close(fd);
		return;
	}
	ks_rt.fd = fd;
	ks_rt.fd_broken = false;
}

/* async-signal-safe */
int ks_rt_file_lock(int timeout_ms)
{
	pid_t me = ks_rt_gettid();
	long waited_us = 0;

	if (atomic_load(&ks_rt.file_owner) == me)
		return 2;
	for (;;) {
		pid_t none = 0;

		if (atomic_compare_exchange_strong(&ks_rt.file_owner, &none, me))
			return 1;
		if (timeout_ms >= 0 && waited_us >= (long)timeout_ms * 1000)
			return 0;
		sleep_us(100);
		waited_us += 100;
	}
}

/* async-signal-safe */
void ks_rt_file_unlock(void)
{
	atomic_store(&ks_rt.file_owner, 0);
}

/* async-signal-safe; file lock held */
int ks_rt_file_write(const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n > 0) {
		ssize_t w;

		/* Checked before every write, and written with pwrite at our
		 * own offset: should the program take the number over all the
		 * same, a pipe, socket or terminal refuses pwrite. */
		file_check();
		if (ks_rt.fd < 0 || ks_rt.fd_broken)
			return -EBADF;
		w = pwrite(ks_rt.fd, c, n, (off_t)ks_rt.fd_off);
		if (w < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			ks_rt.fd_broken = true;
			return -err;
		}
		c += w;
		n -= (size_t)w;
		ks_rt.fd_off += (uint64_t)w;
	}
	return 0;
}

/* async-signal-safe; file lock held */
int ks_rt_write_buf(struct ks_rt_buf *b)
{
	return ks_rt_file_write(&b->chunk, b->used);
}

/* Normal context only (the pool takes a mutex). */
void ks_rt_buf_return(struct ks_rt_buf *b)
{
	struct ks_rt_thread *t = b->owner;
	struct ks_rt_buf *none = NULL;

	b->used = sizeof(struct ks_raw_chunk);
	b->next = NULL;
	if (t && atomic_compare_exchange_strong(&t->spare, &none, b))
		return;
	ks_rt_pool_put(b);
}

/* async-signal-safe; file lock held.  Writes the n buffers from b on in
 * one pwritev where it can (many short threads end with a small buffer
 * each), else one by one. */
static void write_bufs(struct ks_rt_buf *b, int n)
{
	struct iovec iov[KS_RT_WRITEV_MAX];
	size_t total = 0;
	ssize_t w;
	int k = 0;

	for (struct ks_rt_buf *x = b; x && k < n; x = x->next, k++) {
		iov[k].iov_base = &x->chunk;
		iov[k].iov_len = x->used;
		total += x->used;
	}
	if (k > 1) {
		file_check();
		if (ks_rt.fd < 0 || ks_rt.fd_broken)
			return;
		do
			w = pwritev(ks_rt.fd, iov, k, (off_t)ks_rt.fd_off);
		while (w < 0 && errno == EINTR);
		if (w == (ssize_t)total) {
			ks_rt.fd_off += total;
			return;
		}
		if (w < 0) {
			ks_rt.fd_broken = true;
			return;
		}
		/* A short write: the rest one by one, from where it stopped. */
		ks_rt.fd_off += (uint64_t)w;
		for (int i = 0; i < k; i++) {
			size_t len = iov[i].iov_len;

			if ((size_t)w >= len) {
				w -= (ssize_t)len;
				continue;
			}
			ks_rt_file_write((unsigned char *)iov[i].iov_base + w, len - (size_t)w);
			w = 0;
		}
		return;
	}
	for (struct ks_rt_buf *x = b; x && n-- > 0; x = x->next)
		ks_rt_write_buf(x);
}

/* async-signal-safe if !give_back; file lock held */
void ks_rt_flush_queue(bool give_back)
{
	struct ks_rt_buf *b = ks_rt_queue_take();

	while (b) {
		struct ks_rt_buf *last = b, *next;
		int n = 1;

		while (n < KS_RT_WRITEV_MAX && last->next) {
			last = last->next;
			n++;
		}
		next = last->next;
		write_bufs(b, n);
		if (give_back) {
			for (int i = 0; i < n; i++) {
				struct ks_rt_buf *x = b->next;

				ks_rt_buf_return(b);
				b = x;
			}
		}
		b = next;
	}
}

/* async-signal-safe; file lock held */
void ks_rt_write_dropped(void)
{
	struct ks_raw_dropped d;
	uint64_t n = atomic_exchange(&ks_rt.dropped, 0);

	if (n == 0)
		return;
	memset(&d, 0, sizeof(d));
	d.h.type = KS_RAW_DROPPED;
	d.h.size = sizeof(d);
	d.samples = n;
	ks_rt_file_write(&d, sizeof(d));
}

/* ------------------------------------------------------------------ */
/* The final flush                                                    */
/* ------------------------------------------------------------------ */

/* async-signal-safe: t's busy flag, waiting a bounded time. */
static bool busy_grab(struct ks_rt_thread *t, long *budget_us)
{
	long waited = 0;

	for (;;) {
		if (ks_rt_busy_try(t))
			return true;
		if (waited >= KS_RT_BUSY_WAIT_MS * 1000L || *budget_us <= 0)
			return false;
		sleep_us(50);
		waited += 50;
		*budget_us -= 50;
	}
}

/* async-signal-safe; busy held: cur written as a chunk, then emptied. */
static void write_cur(struct ks_rt_thread *t)
{
	struct ks_rt_buf *b = t->cur;

	if (!ks_rt_buf_seal(t))
		return;
	ks_rt_write_buf(b);
	b->used = sizeof(struct ks_raw_chunk);
}

/* async-signal-safe; busy held */
static void append_end(struct ks_rt_thread *t, bool self)
{
	struct ks_raw_thread_end e;
	void *p;

	if (t->ended || atomic_load(&t->state) != KS_RT_T_LIVE)
		return;
	ks_rt_thread_end_rec(t, &e, self);
	p = ks_rt_buf_reserve(t, sizeof(e));
	if (p) {
		memcpy(p, &e, sizeof(e));
		ks_rt_buf_commit(t, sizeof(e));
	}
	t->ended = true;
}

/* async-signal-safe */
static void wait_finished(void)
{
	for (long w = 0; w < KS_RT_FINISH_WAIT_MS * 1000L; w += 500) {
		if (atomic_load(&ks_rt.state) != KS_RT_FINISHING)
			return;
		sleep_us(500);
	}
}

/* async-signal-safe when from_signal (no module scan, no buffer given
 * back, bounded waits); normal context otherwise. */
void ks_rt_finish(uint32_t reason, int32_t status, bool from_signal)
{
	int saved = errno;
	int expected = KS_RT_RUNNING;
	int target = reason == KS_RAW_END_EXEC ? KS_RT_EXECFLUSH : KS_RT_FINISHING;
	struct ks_rt_thread *self = ks_rt_self_get();
	long budget_us = KS_RT_LOCK_WAIT_MS * 1000L;
	struct ks_raw_end end;

	/* A child kscope did not see being made (vfork, _Fork, clone) shares
	 * or copies our state but must not write to our file; with vfork
	 * its memory is ours, so do not even change state. */
	if (getpid() != ks_rt.pid)
		goto out;
	if (!atomic_compare_exchange_strong(&ks_rt.state, &expected, target)) {
		/* Another thread is ending the process: let it finish
		 * before this one dies. */
		if (from_signal && expected == KS_RT_FINISHING)
			wait_finished();
		goto out;
	}
	atomic_fetch_or(&ks_rt.gate, KS_RT_GATE_STOPPED);
	if (!from_signal) {
		ks_rt_modules_scan();
		if (ks_rt_file_lock(-1) == 0)
			goto out;
	} else if (ks_rt_file_lock(KS_RT_LOCK_WAIT_MS) == 0) {
		goto out;
	}

	/* Nobody writes a thread's buffer while we hold its flag.  This
	 * thread's own flag may be held by the code the signal interrupted;
	 * its buffer is still consistent up to `used` (records are committed
	 * after they are complete), so it is written anyway. */
	for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next) {
		if (t == self && from_signal) {
			(void)ks_rt_busy_try(t);
			t->flush_held = true;
		} else
			t->flush_held = busy_grab(t, &budget_us);
	}
	if (reason != KS_RAW_END_EXEC)
		for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next)
			if (t->flush_held)
				append_end(t, t == self);
	ks_rt_flush_queue(!from_signal);
	for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next)
		if (t->flush_held)
			write_cur(t);
	ks_rt_write_dropped();

	ks_rt.exec_off = ks_rt.fd_off;
	memset(&end, 0, sizeof(end));
	end.h.type = KS_RAW_END;
	end.h.size = sizeof(end);
	end.ts = ks_rt_now();
	end.reason = reason;
	end.status = status;
	ks_rt_file_write(&end, sizeof(end));

	if (reason == KS_RAW_END_EXEC) {
		/* Threads go on until exec replaces them: let them record
		 * (their records are lost if exec succeeds).  The file lock
		 * stays held so nothing follows END. */
		for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next)
			if (t->flush_held && !(t == self && from_signal))
				ks_rt_busy_release(t);
		goto out;
	}
	/* Final: flags and the file lock stay held for good, so any record
	 * made after this point is dropped rather than written after END. */
	atomic_store(&ks_rt.state, KS_RT_FINISHED);
out:
	errno = saved;
}

/* Normal context: after a failed exec. */
void ks_rt_exec_failed(void)
{
	int saved = errno;

	if (atomic_load(&ks_rt.state) != KS_RT_EXECFLUSH)
		return;
	if (!ks_rt.fd_broken && ks_rt_fd_is(ks_rt.fd, ks_rt.fd_dev, ks_rt.fd_ino)) {
		if (ftruncate(ks_rt.fd, (off_t)ks_rt.exec_off) == 0)
			ks_rt.fd_off = ks_rt.exec_off;
		else
			ks_rt.fd_broken = true;
	}
	atomic_fetch_and(&ks_rt.gate, ~(unsigned)KS_RT_GATE_STOPPED);
	atomic_store(&ks_rt.state, KS_RT_RUNNING);
	ks_rt_file_unlock();
	errno = saved;
}
