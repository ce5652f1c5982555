/*
 * libkscope-causal.so's sampling signal: each thread's CPU-time sampler
 * fires every period; the handler finds the source line of the
 * interrupted instruction, counts the sample, adds the virtual speedup's
 * delay when the line is the experiment's, and makes the thread pause for
 * the delays it owes.  Everything here is async-signal-safe: atomics,
 * initial-exec TLS, ioctl, timer_getoverrun, clock_gettime and
 * clock_nanosleep.
 *
 * The sampler is perf's task-clock event where the kernel allows it: an
 * hrtimer, so a thread is sampled after each period of its CPU time.  A
 * POSIX CPU-time timer is checked only at the scheduler's tick (every
 * 4 ms at HZ=250), so its samples come several periods at once, and the
 * delays with them: the threads then pay them in lumps of the tick, and
 * the predictions of programs whose threads meet more often than that
 * are off (docs/causal.md).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <stdint.h>
#include <time.h>
#include <ucontext.h>

#include "causal_rt_int.h"

/* async-signal-safe */
uint64_t ks_crt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Pauses the thread for ns, whatever signals interrupt the sleep.
 * async-signal-safe */
void ks_crt_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/* The line id of run-time address pc, or -1 outside the ranges.
 * async-signal-safe */
static int64_t line_of(uint64_t pc)
{
	size_t lo = 0, hi = ks_crt.nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ks_crt_range *r = &ks_crt.ranges[mid];

		if (pc < r->lo)
			hi = mid;
		else if (pc >= r->hi)
			lo = mid + 1;
		else
			return r->line;
	}
	return -1;
}

/* Pauses the thread for what it owes: the global delay count less its
 * own.  It is credited with the time it actually slept, which the
 * kernel's timer slack makes longer than asked: a thread that overpaid is
 * ahead, and pays that much less next time.
 *
 * While it sleeps, the selected line goes on adding delays on the
 * threads that run it, so the thread wakes owing again.  It pays again,
 * until it has caught up: a thread that pays before waking another (the
 * wrappers' catch_up) must not wake it early, as it would not in the sped
 * up program; at balance's point of balance a single payment read the
 * program speedup 3 points low (docs/causal.md).  The rounds are bounded:
 * at most KS_CRT_PAY_ROUNDS, and only while the debt shrinks.  A line
 * that adds delay as fast as it is paid (a speedup of 100%, or the line
 * on several threads at once) would otherwise keep the thread paused for
 * ever.
 *
 * Called outside the handler (a wrapped call that wakes another thread),
 * it can be interrupted by the thread's own sampling signal.  While it
 * pays, t->paying tells the handler not to pay as well: a handler paying
 * between this function's reading of what is owed and its sleep would
 * leave the thread ahead of the count it read, and the difference
 * computed from a second reading would wrap to a sleep of centuries.
 * What is owed is read once per round, for the same reason.
 * async-signal-safe */
void ks_crt_pay(struct ks_crt_thread *t)
{
	uint64_t g, l, t0, owed, last = UINT64_MAX;

	t->paying = true;
	atomic_signal_fence(memory_order_seq_cst);
	for (int round = 0; round < KS_CRT_PAY_ROUNDS; round++) {
		g = atomic_load_explicit(&ks_crt.global_delay, memory_order_relaxed);
		l = atomic_load_explicit(&t->local_delay, memory_order_relaxed);
		if (l >= g)
			break;
		owed = g - l;
		if (owed >= last)
			break;
		last = owed;
		t0 = ks_crt_now_ns();
		ks_crt_sleep_ns(owed);
		atomic_fetch_add_explicit(&t->local_delay, ks_crt_now_ns() - t0,
					  memory_order_relaxed);
	}
	atomic_signal_fence(memory_order_seq_cst);
	t->paying = false;
}

/* The sampling signal's handler.  async-signal-safe */
void ks_crt_on_sample(int sig, siginfo_t *si, void *ucontext)
{
	struct ks_crt_thread *t = &ks_crt_self;
	const ucontext_t *uc = ucontext;
	int saved = errno, over;
	uint64_t n;
	int64_t line;

	(void)sig;
	(void)si;
	if (!ks_crt.active || !t->sampled)
		goto out;
	/* Periods that passed while the signal was pending count too. */
	over = t->perf_fd >= 0 ? 0 : timer_getoverrun(t->timer);
	n = 1 + (uint64_t)(over > 0 ? over : 0);
#if defined(__x86_64__)
	line = line_of((uint64_t)uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
	line = line_of((uint64_t)uc->uc_mcontext.pc);
#else
#error "kscope causal's runtime reads the interrupted address on x86-64 and AArch64 only"
#endif
	if (line >= 0) {
		uint64_t k = atomic_fetch_add_explicit(&ks_crt.nrecent, 1, memory_order_relaxed);

		atomic_fetch_add_explicit(&ks_crt.line_samples[line], n, memory_order_relaxed);
		atomic_store_explicit(&ks_crt.recent[k % KS_CRT_RECENT], (uint32_t)line,
				      memory_order_relaxed);
		if (line == atomic_load_explicit(&ks_crt.selected, memory_order_acquire)) {
			uint64_t d = n * atomic_load_explicit(&ks_crt.sample_delay,
							      memory_order_relaxed);

			atomic_fetch_add_explicit(&ks_crt.selected_samples, n,
						  memory_order_relaxed);
			atomic_fetch_add_explicit(&ks_crt.global_delay, d, memory_order_relaxed);
			t->local_delay += d;
		}
	}
	/* Unless the signal interrupted the thread paying already. */
	if (!t->paying)
		ks_crt_pay(t);
	/* The event stopped at its overflow: the next period starts now. */
	if (t->perf_fd >= 0)
		ioctl(t->perf_fd, PERF_EVENT_IOC_REFRESH, 1);
out:
	errno = saved;
}
