/*
 * The time windows: --delay, --duration and the --periods of the design's
 * constraint model (clock:delay:duration:cycles, spec.h).
 *
 * The periods run one after the other, from the end of --delay: period
 * i + 1 starts when period i has run its cycles, and --duration, if
 * given, closes everything that long after the delay.  Each period is
 * measured on its own clock.  When a period follows one on the same
 * clock, it starts exactly where that one ended; after one on another
 * clock, it starts when the runtime sees the previous one end: at the
 * next sample, record or writer tick (every 100 ms), so at most about
 * 100 ms late.
 *
 * ks_rt_window_open is called from signal handlers of any thread, so the
 * sequence's state is a few atomics: the period running (win_cur) and the
 * start of each period on its clock (win_start, KS_RT_WIN_UNSET until
 * known).  Whoever first sees period i end writes period i + 1's start,
 * then moves win_cur on; a racing thread computes the same start, or one a
 * few microseconds later, and loses the compare-and-swap.
 */
#include <time.h>

#include "rt_int.h"

#define KS_RT_WIN_UNSET UINT64_MAX

/* async-signal-safe: clock c of ks_spec_clocks, in ns. */
static uint64_t clock_ns(int c)
{
	struct timespec ts;

	clock_gettime((clockid_t)ks_spec_clocks[c].id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Constructor: period 0's start, where it is known before it begins. */
void ks_rt_windows_init(void)
{
	const struct ks_rt_opts *o = &ks_rt.opts;

	atomic_store(&ks_rt.win_cur, 0);
	for (size_t i = 0; i < KS_SPEC_MAX_PERIODS; i++)
		atomic_store(&ks_rt.win_start[i], KS_RT_WIN_UNSET);
	if (o->nperiods == 0)
		return;
	/* An elapsed-time clock runs with CLOCK_MONOTONIC, on which the
	 * delay is measured; a CPU clock's value at the delay's end is
	 * known only if there is no delay. */
	if (!ks_spec_clocks[o->periods[0].clock].cpu)
		atomic_store(&ks_rt.win_start[0], clock_ns(o->periods[0].clock) + o->delay_ns);
	else if (o->delay_ns == 0)
		atomic_store(&ks_rt.win_start[0], clock_ns(o->periods[0].clock));
}

/* The child's process CPU time starts near 0, unrelated to the parent's:
 * the period running on a CPU clock starts afresh on the child's, and
 * later periods on CPU clocks start when they come.  Elapsed-time periods
 * are shared with the parent as they are. */
void ks_rt_windows_atfork_child(void)
{
	const struct ks_rt_opts *o = &ks_rt.opts;
	uint32_t cur = atomic_load(&ks_rt.win_cur);

	for (uint32_t i = cur; i < o->nperiods; i++) {
		if (!ks_spec_clocks[o->periods[i].clock].cpu)
			continue;
		if (i == cur && atomic_load(&ks_rt.win_start[i]) != KS_RT_WIN_UNSET)
			atomic_store(&ks_rt.win_start[i], clock_ns(o->periods[i].clock));
		else if (i > cur)
			atomic_store(&ks_rt.win_start[i], KS_RT_WIN_UNSET);
	}
}

bool ks_rt_windowed(void)
{
	const struct ks_rt_opts *o = &ks_rt.opts;

	return o->delay_ns || o->duration_ns || o->nperiods;
}

/* async-signal-safe: period i's start, set now if nobody has yet. */
static uint64_t start_of(size_t i, uint64_t now_on_clock)
{
	uint64_t s = atomic_load(&ks_rt.win_start[i]), unset = KS_RT_WIN_UNSET;

	if (s != KS_RT_WIN_UNSET)
		return s;
	if (atomic_compare_exchange_strong(&ks_rt.win_start[i], &unset, now_on_clock))
		return now_on_clock;
	return unset;
}

/* async-signal-safe.  now_ns may be a little in the past (an MPI call's
 * start): elapsed-time clocks are read back by as much; a CPU clock
 * cannot be, and is read as it is now. */
bool ks_rt_window_open(uint64_t now_ns)
{
	const struct ks_rt_opts *o = &ks_rt.opts;
	uint64_t t = now_ns - ks_rt.origin_ns, mono, lag;

	if (now_ns < ks_rt.origin_ns || t < o->delay_ns)
		return false;
	if (o->duration_ns && t - o->delay_ns >= o->duration_ns)
		return false;
	if (o->nperiods == 0)
		return true;
	mono = ks_rt_now();
	lag = mono > now_ns ? mono - now_ns : 0;
	for (;;) {
		uint32_t i = atomic_load(&ks_rt.win_cur);
		const struct ks_spec_period *p;
		uint64_t v, start, el, len, cycle;

		if (i >= o->nperiods)
			return false;
		p = &o->periods[i];
		v = clock_ns(p->clock);
		if (!ks_spec_clocks[p->clock].cpu)
			v -= lag;
		start = start_of(i, v);
		el = v > start ? v - start : 0; /* realtime may be set back */
		len = ks_spec_period_len(p);
		if (el < len) {
			cycle = p->delay_ns + p->dur_ns;
			return el % cycle >= p->delay_ns;
		}
		/* Period i has ended: start the next one where it ended if
		 * it runs on the same clock, else now on its own. */
		if (i + 1 < o->nperiods) {
			const struct ks_spec_period *q = &o->periods[i + 1];
			uint64_t unset = KS_RT_WIN_UNSET;
			uint64_t next = q->clock == p->clock ? start + len : clock_ns(q->clock);

			atomic_compare_exchange_strong(&ks_rt.win_start[i + 1], &unset, next);
		}
		atomic_compare_exchange_strong(&ks_rt.win_cur, &i, i + 1);
	}
}
