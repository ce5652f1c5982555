/*
 * Blocking calls that a sampling signal must not cut short.
 *
 * A handled signal makes some blocking calls fail with EINTR even under
 * SA_RESTART: poll, select, epoll_wait, the sleeps, sigsuspend, pause,
 * sigtimedwait and System V semaphore and message calls (signal(7)).  The
 * real-time sampler signals every thread, sleeping or not, so without this
 * file sleep(1) would return after one sampling period; the CPU-time
 * sampler can do it too when its signal is raised while the thread is in
 * the kernel.  The program would see EINTRs it would never see without
 * kscope.
 *
 * So these functions are wrapped: when the call fails with EINTR, and
 * since it started this thread took a kscope sampling signal
 * (ks_rt_tls.ours) but ran no handler of the program (ks_rt_tls.theirs;
 * every program handler is called through kscope's, see rt_signal.c), the
 * call is made again with what is left of its timeout.  Any other EINTR
 * reaches the program as before.  errno is as the last real call left it,
 * or as it was on entry if the call succeeded after a restart.
 *
 * Programs built with _FORTIFY_SOURCE call __poll_chk and __ppoll_chk, so
 * those are wrapped too.  Calls made inside glibc (not through the PLT)
 * are not seen; glibc retries those itself where it matters.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <time.h>
#include <unistd.h>

#include "rt_int.h"

/* The calls below, declared by glibc only under _FORTIFY_SOURCE. */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
		const sigset_t *mask, size_t fdslen);

struct mark {
	unsigned ours, theirs;
	int err;           /* errno on entry */
};

static struct mark mark_now(void)
{
	struct mark m = { ks_rt_tls.ours, ks_rt_tls.theirs, errno };

	return m;
}

/* Whether a call that failed with err should be made again: only kscope's
 * signals came since m.  Also puts back the entry errno for the retry. */
static bool again(int err, struct mark *m)
{
	if (err != EINTR || ks_rt_tls.theirs != m->theirs || ks_rt_tls.ours == m->ours)
		return false;
	m->ours = ks_rt_tls.ours;
	errno = m->err;
	return true;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

/* What is left until deadline (CLOCK_MONOTONIC ns), as a timespec. */
static struct timespec left_ts(uint64_t deadline)
{
	uint64_t now = ks_rt_now(), left = now < deadline ? deadline - now : 0;
	struct timespec ts = { (time_t)(left / 1000000000u), (long)(left % 1000000000u) };

	return ts;
}

/* The same in milliseconds, rounded up, for poll and epoll_wait. */
static int left_ms(uint64_t deadline)
{
	uint64_t now = ks_rt_now(), left = now < deadline ? deadline - now : 0;

	return (int)((left + 999999u) / 1000000u);
}

static uint64_t deadline_ms(int ms)
{
	return ms > 0 ? ks_rt_now() + (uint64_t)ms * 1000000u : 0;
}

static uint64_t deadline_ts(const struct timespec *ts)
{
	return ts ? ks_rt_now() + ts_ns(ts) : 0;
}

/* ------------------------------------------------------------------ */
/* poll, select, epoll                                                */
/* ------------------------------------------------------------------ */

KS_RT_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ms(timeout);
	int r;

	while ((r = KS_RT_REAL(poll)(fds, n, timeout)) < 0 && again(errno, &m))
		if (timeout > 0)
			timeout = left_ms(deadline);
	return r;
}

KS_RT_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ms(timeout);
	int r;

	while ((r = KS_RT_REAL(__poll_chk)(fds, n, timeout, fdslen)) < 0 && again(errno, &m))
		if (timeout > 0)
			timeout = left_ms(deadline);
	return r;
}

KS_RT_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
		       const sigset_t *mask)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ts(tmo);
	struct timespec left;
	int r;

	while ((r = KS_RT_REAL(ppoll)(fds, n, tmo, mask)) < 0 && again(errno, &m))
		if (tmo) {
			left = left_ts(deadline);
			tmo = &left;
		}
	return r;
}

KS_RT_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo,
			     const sigset_t *mask, size_t fdslen)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ts(tmo);
	struct timespec left;
	int r;

	while ((r = KS_RT_REAL(__ppoll_chk)(fds, n, tmo, mask, fdslen)) < 0 &&
	       again(errno, &m))
		if (tmo) {
			left = left_ts(deadline);
			tmo = &left;
		}
	return r;
}

/* Linux leaves the sets as they were and the timeout at what is left when
 * select fails, so the same arguments go again. */
KS_RT_EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	struct mark m = mark_now();
	int r;

	while ((r = KS_RT_REAL(select)(nfds, rd, wr, ex, tv)) < 0 && again(errno, &m))
		;
	return r;
}

KS_RT_EXPORT int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex,
			 const struct timespec *tmo, const sigset_t *mask)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ts(tmo);
	struct timespec left;
	int r;

	while ((r = KS_RT_REAL(pselect)(nfds, rd, wr, ex, tmo, mask)) < 0 && again(errno, &m))
		if (tmo) {
			left = left_ts(deadline);
			tmo = &left;
		}
	return r;
}

KS_RT_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ms(timeout);
	int r;

	while ((r = KS_RT_REAL(epoll_wait)(epfd, ev, max, timeout)) < 0 && again(errno, &m))
		if (timeout > 0)
			timeout = left_ms(deadline);
	return r;
}

KS_RT_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout,
			     const sigset_t *mask)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ms(timeout);
	int r;

	while ((r = KS_RT_REAL(epoll_pwait)(epfd, ev, max, timeout, mask)) < 0 &&
	       again(errno, &m))
		if (timeout > 0)
			timeout = left_ms(deadline);
	return r;
}

KS_RT_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max,
			      const struct timespec *tmo, const sigset_t *mask)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ts(tmo);
	struct timespec left;
	int r;

	while ((r = KS_RT_REAL(epoll_pwait2)(epfd, ev, max, tmo, mask)) < 0 &&
	       again(errno, &m))
		if (tmo) {
			left = left_ts(deadline);
			tmo = &left;
		}
	return r;
}

/* ------------------------------------------------------------------ */
/* Sleeps                                                             */
/* ------------------------------------------------------------------ */

/* nanosleep, going on after kscope's signals; rem as nanosleep fills it. */
static int sleep_rel(const struct timespec *req, struct timespec *rem)
{
	struct mark m = mark_now();
	struct timespec cur = *req, left;
	int r;

	while ((r = KS_RT_REAL(nanosleep)(&cur, &left)) < 0 && again(errno, &m))
		cur = left;
	if (r < 0 && rem && errno == EINTR)
		*rem = left;
	return r;
}

KS_RT_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (!req)
		return KS_RT_REAL(nanosleep)(req, rem);
	return sleep_rel(req, rem);
}

/* clock_nanosleep returns the error instead of setting errno. */
KS_RT_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
				 struct timespec *rem)
{
	struct mark m = mark_now();
	struct timespec cur, left;
	int r;

	if (!req)
		return KS_RT_REAL(clock_nanosleep)(clk, flags, req, rem);
	cur = *req;
	while ((r = KS_RT_REAL(clock_nanosleep)(clk, flags, &cur, &left)) != 0 &&
	       again(r, &m))
		if (!(flags & TIMER_ABSTIME))
			cur = left;
	if (r == EINTR && rem && !(flags & TIMER_ABSTIME))
		*rem = left;
	return r;
}

/* As glibc's: nanosleep, and on interruption the whole seconds left. */
KS_RT_EXPORT unsigned int sleep(unsigned int seconds)
{
	struct timespec ts = { (time_t)seconds, 0 }, rem = { 0, 0 };
	int saved = errno;

	if (sleep_rel(&ts, &rem) < 0)
		return (unsigned int)rem.tv_sec;
	errno = saved;
	return 0;
}

KS_RT_EXPORT int usleep(useconds_t us)
{
	struct timespec ts = { (time_t)(us / 1000000u), (long)(us % 1000000u) * 1000 };

	return sleep_rel(&ts, NULL);
}

/* ------------------------------------------------------------------ */
/* Waiting for signals                                                */
/* ------------------------------------------------------------------ */

KS_RT_EXPORT int sigsuspend(const sigset_t *mask)
{
	struct mark m = mark_now();
	int r;

	while ((r = KS_RT_REAL(sigsuspend)(mask)) < 0 && again(errno, &m))
		;
	return r;
}

KS_RT_EXPORT int pause(void)
{
	struct mark m = mark_now();
	int r;

	while ((r = KS_RT_REAL(pause)()) < 0 && again(errno, &m))
		;
	return r;
}

KS_RT_EXPORT int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *tmo)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ts(tmo);
	struct timespec left;
	int r;

	while ((r = KS_RT_REAL(sigtimedwait)(set, info, tmo)) < 0 && again(errno, &m))
		if (tmo) {
			left = left_ts(deadline);
			tmo = &left;
		}
	return r;
}

KS_RT_EXPORT int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	struct mark m = mark_now();
	int r;

	while ((r = KS_RT_REAL(sigwaitinfo)(set, info)) < 0 && again(errno, &m))
		;
	return r;
}

/* ------------------------------------------------------------------ */
/* System V IPC                                                       */
/* ------------------------------------------------------------------ */

KS_RT_EXPORT int semop(int id, struct sembuf *ops, size_t n)
{
	struct mark m = mark_now();
	int r;

	while ((r = KS_RT_REAL(semop)(id, ops, n)) < 0 && again(errno, &m))
		;
	return r;
}

KS_RT_EXPORT int semtimedop(int id, struct sembuf *ops, size_t n, const struct timespec *tmo)
{
	struct mark m = mark_now();
	uint64_t deadline = deadline_ts(tmo);
	struct timespec left;
	int r;

	while ((r = KS_RT_REAL(semtimedop)(id, ops, n, tmo)) < 0 && again(errno, &m))
		if (tmo) {
			left = left_ts(deadline);
			tmo = &left;
		}
	return r;
}

KS_RT_EXPORT ssize_t msgrcv(int id, void *msg, size_t size, long type, int flags)
{
	struct mark m = mark_now();
	ssize_t r;

	while ((r = KS_RT_REAL(msgrcv)(id, msg, size, type, flags)) < 0 && again(errno, &m))
		;
	return r;
}

KS_RT_EXPORT int msgsnd(int id, const void *msg, size_t size, int flags)
{
	struct mark m = mark_now();
	int r;

	while ((r = KS_RT_REAL(msgsnd)(id, msg, size, flags)) < 0 && again(errno, &m))
		;
	return r;
}
