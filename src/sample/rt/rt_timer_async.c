/*
 * The samplers: per-thread POSIX timers and the signal handler that turns
 * each timer signal into a KS_RAW_SAMPLE record.
 *
 * Each recorded thread gets up to two timers, both delivering to that
 * thread only (SIGEV_THREAD_ID): the CPU-time sampler on the thread's own
 * CPU clock (so it fires in proportion to the CPU the thread uses) and the
 * real-time sampler on CLOCK_MONOTONIC (so it also sees time spent
 * waiting).  Every timer signal carries KS_RT_TIMER_MAGIC in its value, so
 * the handler can tell its own signals from a kill() by the program.
 *
 * The handler is async-signal-safe: it saves errno, checks the gates
 * (pause, flush, the time windows of rt_window_async.c), takes the thread's
 * busy flag without waiting (a sample that would have to wait is dropped
 * and counted), fills the record in place and returns.  Timer creation and
 * deletion are normal code, under the thread state's timer_lock.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "rt_int.h"

/* ------------------------------------------------------------------ */
/* Timers (normal context)                                            */
/* ------------------------------------------------------------------ */

static void take_sample(struct ks_rt_thread *t, int which, uint64_t now, int overrun,
			void *uc);

/* async-signal-safe */
static uint32_t sampler_freq(int which)
{
	return which == KS_RT_CPU ? ks_rt.opts.cputime_freq : ks_rt.opts.realtime_freq;
}

/* A uniform random first expiry in [1, period] ns (normal context).
 *
 * A timer whose first expiry is one whole period away never fires in a
 * thread that uses less than a period of CPU: thousands of short threads
 * would be invisible however much CPU they used together.  With the first
 * expiry uniform over one period, a thread that uses c < period is
 * sampled with probability c / period, and every thread's expected
 * number of periods is its CPU time / period, however short it is.  The
 * generator is the runtime's own (splitmix64 over a shared counter, mixed
 * with the time and the tid), so the program's rand() sequence is
 * untouched. */
static uint64_t first_expiry(uint64_t period, pid_t tid)
{
	uint64_t z = atomic_fetch_add_explicit(&ks_rt.phase_seq, 0x9e3779b97f4a7c15ull,
					       memory_order_relaxed);

	z ^= ks_rt_now() ^ ((uint64_t)(uint32_t)tid << 32);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return 1 + z % period;
}

/* The real-time slowdown that n live timers call for. */
static uint32_t mult_for(uint32_t n)
{
	uint64_t want = (uint64_t)n * ks_rt.opts.realtime_freq;

	return want <= KS_RAW_REALTIME_BUDGET ? 1 :
		(uint32_t)((want + KS_RAW_REALTIME_BUDGET - 1) / KS_RAW_REALTIME_BUDGET);
}

/* Raises ks_rt.rt_mult to at least m. */
static void mult_raise(uint32_t m)
{
	uint32_t cur = atomic_load(&ks_rt.rt_mult), mx;

	while (cur < m && !atomic_compare_exchange_weak(&ks_rt.rt_mult, &cur, m))
		;
	mx = atomic_load(&ks_rt.rt_mult_max);
	while (mx < m && !atomic_compare_exchange_weak(&ks_rt.rt_mult_max, &mx, m))
		;
}

/* Normal context, t->timer_lock held. */
int ks_rt_timer_start(struct ks_rt_thread *t, int which)
{
	struct sigevent sev;
	struct itimerspec its;
	uint32_t freq = sampler_freq(which);
	uint64_t period, first;
	clockid_t clk;
	int err = 0, saved = errno;

	if (freq == 0 || t->has_timer[which])
		return 0;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = atomic_load(&ks_rt.sig[which]);
	sev.sigev_value.sival_ptr = (void *)(uintptr_t)(KS_RT_TIMER_MAGIC | (unsigned)which);
	sev._sigev_un._tid = t->tid;
	/* The per-thread CPU clock by tid, so that a thread can re-create
	 * another thread's timer when the signal moves. */
	clk = which == KS_RT_CPU ? ks_rt_thread_clock(t->tid) : CLOCK_MONOTONIC;
	if (timer_create(clk, &sev, &t->timer[which]) != 0) {
		err = -errno;
		goto out;
	}
	period = 1000000000u / freq;
	if (period == 0)
		period = 1;
	if (which == KS_RT_REAL) {
		/* A new thread may call for a larger slowdown at once; the
		 * writer's tick slows the others and eases off again. */
		uint32_t m = mult_for(atomic_load(&ks_rt.rt_timers) + 1);

		mult_raise(m);
		m = atomic_load(&ks_rt.rt_mult);
		atomic_store(&t->rt_mult, m);
		period *= m;
		/* Twice the slowdown the others run at: have the writer
		 * slow them now rather than at its next tick. */
		if (m >= 2 * atomic_load(&ks_rt.rt_mult_applied) &&
		    !atomic_exchange(&ks_rt.rt_rebudget, true))
			sem_post(&ks_rt.wake);
	}
	its.it_interval.tv_sec = (time_t)(period / 1000000000u);
	its.it_interval.tv_nsec = (long)(period % 1000000000u);
	first = first_expiry(period, t->tid);
	its.it_value.tv_sec = (time_t)(first / 1000000000u);
	its.it_value.tv_nsec = (long)(first % 1000000000u);
	if (which == KS_RT_CPU) {
		/* Read just before arming: the kernel's start is at most a
		 * few microseconds later. */
		t->cpu_first_ns = ks_rt_thread_cpu_ns(t->tid) + first;
		t->cpu_period_ns = period;
		t->cpu_periods_seen = 0;
	}
	if (timer_settime(t->timer[which], 0, &its, NULL) != 0) {
		err = -errno;
		timer_delete(t->timer[which]);
		goto out;
	}
	t->has_timer[which] = true;
	if (which == KS_RT_REAL)
		atomic_fetch_add(&ks_rt.rt_timers, 1);
out:
	errno = saved;
	return err;
}

/* Normal context, t->timer_lock held. */
void ks_rt_timer_stop(struct ks_rt_thread *t, int which)
{
	int saved = errno;

	if (t->has_timer[which]) {
		timer_delete(t->timer[which]);
		if (which == KS_RT_REAL)
			atomic_fetch_sub(&ks_rt.rt_timers, 1);
	}
	t->has_timer[which] = false;
	errno = saved;
}

/* Normal context (the writer's tick, or sooner when a new thread asks).
 * Slows every real-time timer down
 * at once when the live threads call for more than the current slowdown,
 * and speeds them up again only when they call for half of it or less,
 * so that a count of threads hovering at a boundary does not re-arm
 * every timer at every tick. */
void ks_rt_realtime_rebudget(void)
{
	uint32_t cur = atomic_load(&ks_rt.rt_mult);
	uint32_t m = mult_for(atomic_load(&ks_rt.rt_timers));

	if (!ks_rt.opts.realtime_freq)
		return;
	if (m < cur && m > cur / 2)
		m = cur;
	atomic_store(&ks_rt.rt_mult, m);
	atomic_store(&ks_rt.rt_mult_applied, m);
	mult_raise(m);
	/* Threads started while the slowdown grew run at the one of their
	 * start: all move to m. */
	for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next) {
		if (atomic_load(&t->state) != KS_RT_T_LIVE || atomic_load(&t->rt_mult) == m)
			continue;
		pthread_mutex_lock(&t->timer_lock);
		if (t->has_timer[KS_RT_REAL] && atomic_load(&t->rt_mult) != m) {
			ks_rt_timer_stop(t, KS_RT_REAL);
			ks_rt_timer_start(t, KS_RT_REAL);
		}
		pthread_mutex_unlock(&t->timer_lock);
	}
}

/* Normal context: starts the timers t should have. */
void ks_rt_timers_start(struct ks_rt_thread *t)
{
	if (!t->selected)
		return;
	pthread_mutex_lock(&t->timer_lock);
	for (int w = 0; w < 2; w++)
		if (atomic_load(&ks_rt.sampler_on[w]))
			ks_rt_timer_start(t, w);
	pthread_mutex_unlock(&t->timer_lock);
}

/* Normal context. */
void ks_rt_timers_stop(struct ks_rt_thread *t)
{
	pthread_mutex_lock(&t->timer_lock);
	ks_rt_timer_stop(t, KS_RT_CPU);
	ks_rt_timer_stop(t, KS_RT_REAL);
	pthread_mutex_unlock(&t->timer_lock);
}

/* Normal context, on t's own thread as it ends.
 *
 * The kernel checks a CPU-time timer only at a scheduler tick that finds
 * the thread running (every 4 ms at CONFIG_HZ=250).  The periods that
 * expire after the last such tick are never signalled if the thread ends
 * first: a thread that uses less CPU than a tick would be seen in
 * proportion to its CPU time squared, not its CPU time.  So at the end
 * the periods due by the thread's CPU time, less those its signals stood
 * for, are recorded as one sample without frames: the thread's CPU time
 * is all counted, and the reports say that this part has no call path. */
void ks_rt_timers_end(struct ks_rt_thread *t)
{
	uint64_t cpu, due, seen, now;
	bool had;
	int saved = errno;

	pthread_mutex_lock(&t->timer_lock);
	had = t->has_timer[KS_RT_CPU];
	ks_rt_timer_stop(t, KS_RT_CPU);
	ks_rt_timer_stop(t, KS_RT_REAL);
	pthread_mutex_unlock(&t->timer_lock);
	/* The timer is gone: a signal it had queued was delivered on the way
	 * out of timer_delete, so cpu_periods_seen is final. */
	if (!had || !t->cpu_period_ns)
		goto out;
	cpu = ks_rt_thread_cpu_ns(t->tid);
	seen = t->cpu_periods_seen;
	if (cpu < t->cpu_first_ns)
		goto out;
	due = (cpu - t->cpu_first_ns) / t->cpu_period_ns + 1;
	if (due <= seen)
		goto out;
	now = ks_rt_now();
	if (atomic_load(&ks_rt.gate) || !atomic_load(&ks_rt.sampler_on[KS_RT_CPU]) ||
	    !ks_rt_window_open(now) || !ks_rt_busy_wait(t))
		goto out;
	if (!t->ended) {
		uint64_t owed = due - seen - 1;

		take_sample(t, KS_RT_CPU, now, owed > INT32_MAX ? INT32_MAX : (int)owed, NULL);
	}
	ks_rt_busy_release(t);
out:
	errno = saved;
}

/* ------------------------------------------------------------------ */
/* The handler (async-signal-safe)                                    */
/* ------------------------------------------------------------------ */

/* async-signal-safe; t->busy held.  overrun: the timer periods that
 * expired while this signal was pending or the kernel had not yet
 * checked the timer, as it reports them (si_overrun).  A thread that gets
 * the CPU in slices between the kernel's ticks, or waits for a CPU with
 * its signal pending, sees one signal for several periods; the sample
 * then stands for all of them.  uc NULL: the periods owed at the thread's
 * end (ks_rt_timers_end), recorded without frames. */
static void take_sample(struct ks_rt_thread *t, int which, uint64_t now, int overrun,
			void *uc)
{
	uint32_t nc = ks_rt.opts.ncounters;
	uint32_t max = KS_RAW_ALIGN((uint32_t)(sizeof(struct ks_raw_sample) +
					       8u * (nc + KS_RAW_MAX_FRAMES)));
	struct ks_raw_sample *s = ks_rt_buf_reserve(t, max);
	struct timespec ts;
	struct rusage ru;
	int n;

	if (!s) {
		atomic_fetch_add_explicit(&ks_rt.dropped, 1, memory_order_relaxed);
		return;
	}
	s->ts = now;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	s->cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	/* getrusage is a plain system call, not on POSIX's list but free of
	 * locks and allocation in glibc. */
	if (getrusage(RUSAGE_THREAD, &ru) == 0) {
		s->minflt = (uint32_t)ru.ru_minflt;
		s->majflt = (uint32_t)ru.ru_majflt;
	} else {
		s->minflt = s->majflt = 0;
	}
	for (uint32_t i = 0; i < nc; i++) {
		uint64_t v = 0;

		/* Only if the descriptor is still ours: a program that closed
		 * it may have reused the number for something we must not
		 * read (a pipe, a socket). */
		if (ks_rt_perf_fd_is(t->counter_fd[i], t->counter_id[i])) {
			if (read(t->counter_fd[i], &v, sizeof(v)) != sizeof(v))
				v = 0;
		} else {
			t->counter_fd[i] = -1;
		}
		s->data[i] = v;
	}
	n = uc ? ks_rt_unwind(t, uc, &s->data[nc], KS_RAW_MAX_FRAMES) : 0;
	s->ncounters = (uint16_t)nc;
	s->nframes = (uint16_t)n;
	s->overrun = overrun > 0 ? (uint32_t)overrun : 0;
	s->h.type = KS_RAW_SAMPLE;
	s->h.flags = (uint16_t)(uc ? which : which | KS_RAW_SAMPLE_AT_END);
	s->h.size = (uint32_t)(sizeof(*s) + 8u * (nc + (uint32_t)n));
	ks_rt_buf_commit(t, s->h.size);
}

/* async-signal-safe */
void ks_rt_on_sample(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	uintptr_t v = (uintptr_t)si->si_value.sival_ptr;
	struct ks_rt_thread *t;
	uint64_t now;
	int which;

	if (si->si_code != SI_TIMER || (v & ~(uintptr_t)1) != KS_RT_TIMER_MAGIC) {
		/* Not a kscope timer: the program (or someone) sent the
		 * signal, and the program left it at its default action,
		 * which for a real-time signal ends the process. */
		ks_rt_die_by_signal(sig);
		goto out;
	}
	ks_rt_tls.ours++;
	ks_rt_tls.in_sample++;
	which = (int)(v & 1);
	t = ks_rt_self_get();
	/* Every period the signal stands for, sampled or not (gates,
	 * windows, a busy buffer): what ks_rt_timers_end must not count
	 * again. */
	if (t && which == KS_RT_CPU)
		t->cpu_periods_seen += 1 + (uint64_t)(si->si_overrun > 0 ? si->si_overrun : 0);
	if (!t || !t->selected || atomic_load_explicit(&ks_rt.gate, memory_order_relaxed) ||
	    !atomic_load_explicit(&ks_rt.sampler_on[which], memory_order_relaxed))
		goto out_counted;
	now = ks_rt_now();
	if (!ks_rt_window_open(now))
		goto out_counted;
	if (!ks_rt_busy_try(t)) {
		atomic_fetch_add_explicit(&ks_rt.dropped, 1, memory_order_relaxed);
		goto out_counted;
	}
	if (!t->ended) {
		int64_t over = si->si_overrun > 0 ? si->si_overrun : 0;
		uint32_t m = which == KS_RT_REAL ? atomic_load_explicit(&t->rt_mult,
							  memory_order_relaxed) : 1;

		/* A slowed real-time timer's period is m requested ones. */
		if (m > 1)
			over = (over + 1) * m - 1;
		take_sample(t, which | (m > 1 ? KS_RAW_SAMPLE_SLOWED : 0), now,
			    over > INT32_MAX ? INT32_MAX : (int)over, uc);
	}
	ks_rt_busy_release(t);
out_counted:
	ks_rt_tls.in_sample--;
out:
	errno = saved;
}
