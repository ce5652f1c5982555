/*
 * The handler kscope installs on fatal and terminating signals (SIGSEGV,
 * SIGINT, SIGTERM, ...; the list is in rt_signal.c) and on every signal
 * the program sets a handler on.
 *
 * If the program set a handler for the signal, kscope's handler counts the
 * call (ks_rt_tls.theirs, for rt_restart.c) and calls it
 * the way the kernel would have: with the program's mask (plus the signal
 * itself unless SA_NODEFER), with one or three arguments (SA_SIGINFO),
 * and resetting the disposition first under SA_RESETHAND.  The kernel
 * restores the interrupted mask when the handler returns, as it would
 * after the program's own handler.
 *
 * If the program left the default action, the process is about to die:
 * the handler flushes what was collected (ks_rt_finish, END reason
 * SIGNAL), restores the default action and re-raises, so the process ends
 * by the same signal, with the same status (and core dump) as without
 * kscope.
 *
 * Everything here is async-signal-safe.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "rt_int.h"

/* async-signal-safe */
void ks_rt_die_by_signal(int sig)
{
	struct sigaction dfl;

	ks_rt_finish(KS_RAW_END_SIGNAL, sig, true);
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	KS_RT_REAL(sigaction)(sig, &dfl, NULL);
	/* Pending until this handler returns and the mask is restored; a
	 * fault (SIGSEGV...) instead recurs on return and is fatal now. */
	raise(sig);
}

/* async-signal-safe: the default action of sig, for a signal whose
 * disposition the program left (or reset) to the default. */
static void default_action(int sig)
{
	struct sigaction dfl;

	switch (sig) {
	case SIGCHLD: case SIGCONT: case SIGURG: case SIGWINCH:
		return; /* ignored by default */
	case SIGTSTP: case SIGTTIN: case SIGTTOU:
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		KS_RT_REAL(sigaction)(sig, &dfl, NULL);
		raise(sig); /* stops the process once this handler returns */
		return;
	default:
		ks_rt_die_by_signal(sig);
	}
}

/* async-signal-safe */
void ks_rt_on_term(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	struct ks_rt_sigtrack *tr;
	struct sigaction act;
	ucontext_t *uc = ucv;
	sigset_t mask;

	if (sig <= 0 || sig >= NSIG)
		return;
	tr = &ks_rt.sigs[sig];
	act = tr->prog[atomic_load(&tr->slot)];
	if (act.sa_handler == SIG_IGN) {
		errno = saved;
		return;
	}
	if (act.sa_handler == SIG_DFL) {
		default_action(sig);
		errno = saved;
		return;
	}
	ks_rt_tls.theirs++;
	if (act.sa_flags & SA_RESETHAND) {
		/* Only this handler writes the slot outside sig_lock, and
		 * it writes the one not in use. */
		int next = !atomic_load(&tr->slot);

		memset(&tr->prog[next], 0, sizeof(tr->prog[next]));
		tr->prog[next].sa_handler = SIG_DFL;
		atomic_store(&tr->slot, next);
	}
	mask = uc->uc_sigmask;
	sigorset(&mask, &mask, &act.sa_mask);
	if (act.sa_flags & SA_NODEFER)
		sigdelset(&mask, sig);
	else
		sigaddset(&mask, sig);
	KS_RT_REAL(pthread_sigmask)(SIG_SETMASK, &mask, NULL);
	errno = saved;
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, si, ucv);
	else
		act.sa_handler(sig);
}
