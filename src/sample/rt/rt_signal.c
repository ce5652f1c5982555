/*
 * kscope's signals, and the program's view of them.
 *
 * kscope installs handlers on two kinds of signals:
 *  - the sampling signals (SIGRTMIN+4 for CPU time, SIGRTMIN+5 for real
 *    time by default), which its timers send;
 *  - fatal and terminating signals whose action is the default (SIGSEGV,
 *    SIGINT, SIGTERM, ...), so that a process that dies by one still
 *    flushes what it collected before it dies the same way
 *    (rt_signal_async.c).
 *
 * The program must not notice.  So sigaction() and signal() are wrapped:
 * for these signals, and for every signal the program sets a handler on,
 * kscope keeps the disposition the program asked for (struct
 * ks_rt_sigtrack) and reports it back, and the handler kscope installs
 * calls the program's handler as the kernel would have.  Calling every
 * program handler through kscope's lets kscope count them per thread, so
 * that a blocking call that only kscope's signals interrupted can be
 * restarted (rt_restart.c).
 *
 * When the program installs a handler (or SIG_IGN) on a sampling signal,
 * the sampler moves to a free real-time signal in SIGRTMIN+6..SIGRTMAX-2
 * and the program gets its signal; with none free, sampling stops with a
 * warning.
 * A program that blocks a sampling signal by name (to sigwait for it)
 * gets it the same way; one that blocks every signal does not block the
 * sampling signals, so threads that block "all signals" are still sampled.
 *
 * Normal context; changes are serialized by ks_rt.sig_lock.  The tracked
 * dispositions are double-buffered (two slots and an index) so that a
 * handler reading one never sees it half-written.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "rt_int.h"

static const int term_signals[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGABRT, SIGBUS, SIGFPE, SIGUSR1,
	SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM, SIGXCPU, SIGXFSZ, SIGSYS,
};

static bool is_handler(const struct sigaction *a)
{
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* sig_lock held: the program's disposition of sig becomes *a. */
static void prog_set(int sig, const struct sigaction *a)
{
	struct ks_rt_sigtrack *tr = &ks_rt.sigs[sig];
	int next = !atomic_load(&tr->slot);

	tr->prog[next] = *a;
	atomic_store(&tr->slot, next);
}

static const struct sigaction *prog_get(int sig)
{
	struct ks_rt_sigtrack *tr = &ks_rt.sigs[sig];

	return &tr->prog[atomic_load(&tr->slot)];
}

static int install_sampler(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ks_rt_on_sample;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	/* One sample at a time per thread: the other sampler waits. */
	sigemptyset(&sa.sa_mask);
	for (int w = 0; w < 2; w++)
		if (atomic_load(&ks_rt.sig[w]) > 0)
			sigaddset(&sa.sa_mask, atomic_load(&ks_rt.sig[w]));
	return KS_RT_REAL(sigaction)(sig, &sa, NULL);
}

/* Installs kscope's dispatching handler on sig: for a program's handler
 * with the program's flags (SA_RESTART, SA_ONSTACK, SIGCHLD's
 * SA_NOCLDSTOP and SA_NOCLDWAIT...) and mask, except the two the handler
 * emulates (SA_RESETHAND, SA_NODEFER); for a fatal signal left at its
 * default with everything blocked while flushing on death. */
static int install_dispatch(int sig, const struct sigaction *prog)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ks_rt_on_term;
	if (is_handler(prog)) {
		sa.sa_flags = SA_SIGINFO | (prog->sa_flags & ~(SA_RESETHAND | SA_NODEFER));
		sa.sa_mask = prog->sa_mask;
	} else {
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigfillset(&sa.sa_mask);
	}
	return KS_RT_REAL(sigaction)(sig, &sa, NULL);
}

/* Signals a program may handle: not SIGKILL/SIGSTOP, not glibc's own
 * (between 31 and SIGRTMIN). */
static bool trackable(int sig)
{
	return sig > 0 && sig < NSIG && sig != SIGKILL && sig != SIGSTOP &&
	       (sig < 32 || (sig >= SIGRTMIN && sig <= SIGRTMAX));
}

/* Whether nobody uses sig: kscope tracks nothing there and its action is
 * the default. */
static bool sig_free(int sig)
{
	struct sigaction cur;

	if (atomic_load(&ks_rt.sigs[sig].role) != KS_RT_SIG_NONE)
		return false;
	for (int w = 0; w < 2; w++)
		if (atomic_load(&ks_rt.sig[w]) == sig)
			return false;
	if (KS_RT_REAL(sigaction)(sig, NULL, &cur) != 0)
		return false;
	return cur.sa_handler == SIG_DFL;
}

static int find_free_signal(void)
{
	for (int s = SIGRTMIN + 6; s <= SIGRTMAX - 2; s++)
		if (sig_free(s))
			return s;
	return -1;
}

static void header_signals(void)
{
	ks_rt.hdr.signal_cpu = atomic_load(&ks_rt.sampler_on[KS_RT_CPU])
				       ? (uint32_t)atomic_load(&ks_rt.sig[KS_RT_CPU]) : 0;
	ks_rt.hdr.signal_real = atomic_load(&ks_rt.sampler_on[KS_RT_REAL])
					? (uint32_t)atomic_load(&ks_rt.sig[KS_RT_REAL]) : 0;
}

/* sig_lock held: makes sampler `which` use signal `sig` on every thread. */
static void retarget(int which, int sig)
{
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	atomic_store(&ks_rt.sigs[sig].role, KS_RT_SIG_SAMPLER);
	prog_set(sig, &dfl);
	atomic_store(&ks_rt.sig[which], sig);
	install_sampler(sig);
	for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next) {
		pthread_mutex_lock(&t->timer_lock);
		if (t->has_timer[which]) {
			ks_rt_timer_stop(t, which);
			ks_rt_timer_start(t, which);
		}
		pthread_mutex_unlock(&t->timer_lock);
	}
}

/* sig_lock held: the program takes `taken`, used by sampler `which`. */
static void sampler_move(int which, int taken)
{
	int sig = find_free_signal();

	if (sig < 0) {
		ks_rt_log(KS_RT_LOG_WARN, "the program uses signal %d; sampling stopped", taken);
		atomic_store(&ks_rt.sampler_on[which], false);
		for (struct ks_rt_thread *t = atomic_load(&ks_rt.threads); t; t = t->all_next) {
			pthread_mutex_lock(&t->timer_lock);
			ks_rt_timer_stop(t, which);
			pthread_mutex_unlock(&t->timer_lock);
		}
	} else {
		ks_rt_log(KS_RT_LOG_DEBUG, "the program uses signal %d; sampling moved to signal %d",
			  taken, sig);
		retarget(which, sig);
	}
	header_signals();
	ks_rt_header_update();
}

static int sampler_of(int sig)
{
	for (int w = 0; w < 2; w++)
		if (atomic_load(&ks_rt.sig[w]) == sig)
			return w;
	return -1;
}

/* The program's new disposition of a signal it shares with kscope. */
static int prog_install(int sig, int role, const struct sigaction *act)
{
	if (is_handler(act) || (role == KS_RT_SIG_TERM && act->sa_handler == SIG_DFL))
		return install_dispatch(sig, act);
	return KS_RT_REAL(sigaction)(sig, act, NULL);
}

/* The sigaction of a tracked signal, as the program sees it. */
static int tracked_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction prev;
	int role = atomic_load(&ks_rt.sigs[sig].role);
	int rc = 0, which;

	prev = *prog_get(sig);
	if (!act)
		goto out;
	if (role == KS_RT_SIG_SAMPLER) {
		which = sampler_of(sig);
		if (act->sa_handler == SIG_DFL) {
			prog_set(sig, act); /* kscope keeps it; the default is what
					     * a foreign signal still gets */
			goto out;
		}
		/* The program wants this signal: give it up. */
		atomic_store(&ks_rt.sigs[sig].role, KS_RT_SIG_PROG);
		if (which >= 0)
			sampler_move(which, sig);
		role = KS_RT_SIG_PROG;
	}
	rc = prog_install(sig, role, act);
	if (rc == 0)
		prog_set(sig, act);
out:
	if (rc == 0 && old)
		*old = prev;
	return rc;
}

KS_RT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int rc, saved = errno;

	if (!trackable(sig) || atomic_load(&ks_rt.state) == KS_RT_OFF ||
	    (atomic_load(&ks_rt.sigs[sig].role) == KS_RT_SIG_NONE && !(act && is_handler(act))))
		return KS_RT_REAL(sigaction)(sig, act, old);
	pthread_mutex_lock(&ks_rt.sig_lock);
	if (atomic_load(&ks_rt.sigs[sig].role) == KS_RT_SIG_NONE) {
		struct sigaction cur;

		/* A handler on a signal kscope has not touched: from now on
		 * it is called through kscope's, which counts it (see
		 * rt_restart.c). */
		if (!(act && is_handler(act)) || KS_RT_REAL(sigaction)(sig, NULL, &cur) != 0) {
			pthread_mutex_unlock(&ks_rt.sig_lock);
			return KS_RT_REAL(sigaction)(sig, act, old);
		}
		prog_set(sig, &cur);
		atomic_store(&ks_rt.sigs[sig].role, KS_RT_SIG_PROG);
	}
	rc = tracked_sigaction(sig, act, old);
	pthread_mutex_unlock(&ks_rt.sig_lock);
	if (rc == 0)
		errno = saved;
	return rc;
}

KS_RT_EXPORT void (*signal(int sig, void (*handler)(int)))(int)
{
	struct sigaction act, old;

	if (!trackable(sig) || atomic_load(&ks_rt.state) == KS_RT_OFF ||
	    (atomic_load(&ks_rt.sigs[sig].role) == KS_RT_SIG_NONE &&
	     (handler == SIG_DFL || handler == SIG_IGN || handler == SIG_ERR)))
		return KS_RT_REAL(signal)(sig, handler);
	/* glibc's signal(): BSD semantics. */
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	act.sa_flags = SA_RESTART;
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* Whether set holds every real-time signal: "block everything", as
 * opposed to a program blocking the signals it means to use. */
static bool all_rt(const sigset_t *set)
{
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		if (!sigismember(set, s))
			return false;
	return true;
}

/* The program blocks a sampling signal by name, to wait for it with
 * sigwait or signalfd: it is the program's now.  The sampler moves and the
 * signal gets the default action the program believes it has.  Skipped if
 * sig_lock is busy (sigprocmask may be called in a handler). */
static void sampler_yield(int which, int sig)
{
	struct sigaction dfl;

	if (pthread_mutex_trylock(&ks_rt.sig_lock) != 0)
		return;
	if (atomic_load(&ks_rt.sig[which]) == sig && atomic_load(&ks_rt.sampler_on[which])) {
		atomic_store(&ks_rt.sigs[sig].role, KS_RT_SIG_PROG);
		sampler_move(which, sig);
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		KS_RT_REAL(sigaction)(sig, &dfl, NULL);
	}
	pthread_mutex_unlock(&ks_rt.sig_lock);
}

/* The set without the sampling signals when it blocks every signal, so
 * that threads which block everything are still sampled. */
static const sigset_t *strip_samplers(const sigset_t *set, sigset_t *copy, void *caller)
{
	uintptr_t c = (uintptr_t)caller;
	bool all;

	/* libunwind blocks everything around its locks, and puts back masks
	 * it saved in kscope's handler: those are not the program's. */
	if (!set || atomic_load(&ks_rt.state) == KS_RT_OFF || ks_rt_tls.in_sample ||
	    (c >= ks_rt.unwind_lo && c < ks_rt.unwind_hi))
		return set;
	*copy = *set;
	all = all_rt(set);
	for (int w = 0; w < 2; w++) {
		int sig = atomic_load(&ks_rt.sig[w]);

		if (!atomic_load(&ks_rt.sampler_on[w]) || !sigismember(set, sig))
			continue;
		if (all)
			sigdelset(copy, sig);
		else
			sampler_yield(w, sig);
	}
	return copy;
}

KS_RT_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	if (how != SIG_UNBLOCK)
		set = strip_samplers(set, &copy, __builtin_return_address(0));
	return KS_RT_REAL(pthread_sigmask)(how, set, old);
}

KS_RT_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	if (how != SIG_UNBLOCK)
		set = strip_samplers(set, &copy, __builtin_return_address(0));
	return KS_RT_REAL(sigprocmask)(how, set, old);
}

/* Picks the signal of a sampler at start: the default if nobody uses it,
 * else a free one. */
static void sampler_init(int which, int preferred)
{
	int sig = sig_free(preferred) ? preferred : find_free_signal();

	if (sig < 0) {
		ks_rt_log(KS_RT_LOG_WARN, "the program uses signal %d; sampling stopped", preferred);
		atomic_store(&ks_rt.sampler_on[which], false);
		return;
	}
	atomic_store(&ks_rt.sig[which], sig);
	atomic_store(&ks_rt.sampler_on[which], true);
}

void ks_rt_signals_init(void)
{
	struct sigaction cur, dfl;

	pthread_mutex_lock(&ks_rt.sig_lock);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	if (ks_rt.opts.cputime_freq)
		sampler_init(KS_RT_CPU, SIGRTMIN + 4);
	if (ks_rt.opts.realtime_freq)
		sampler_init(KS_RT_REAL, SIGRTMIN + 5);
	for (int w = 0; w < 2; w++) {
		int sig = atomic_load(&ks_rt.sig[w]);

		if (!atomic_load(&ks_rt.sampler_on[w]))
			continue;
		prog_set(sig, &dfl);
		atomic_store(&ks_rt.sigs[sig].role, KS_RT_SIG_SAMPLER);
		install_sampler(sig);
	}
	for (size_t i = 0; i < sizeof(term_signals) / sizeof(term_signals[0]); i++) {
		int sig = term_signals[i];

		if (KS_RT_REAL(sigaction)(sig, NULL, &cur) != 0)
			continue;
		/* Ignored (nohup, background jobs) or already handled by
		 * someone loaded before us: leave the kernel's action, but
		 * track it so the program's later changes go through us. */
		prog_set(sig, &cur);
		atomic_store(&ks_rt.sigs[sig].role, KS_RT_SIG_TERM);
		if (cur.sa_handler == SIG_DFL)
			install_dispatch(sig, &cur);
	}
	header_signals();
	pthread_mutex_unlock(&ks_rt.sig_lock);
}
