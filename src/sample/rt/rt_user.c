/*
 * The kscope user API (include/kscope/user.h) with real behaviour.
 * libkscope.so is preloaded, so these definitions take precedence over the
 * no-op ones in libkscope-user.so that the program linked against.
 *
 * Regions, marks and ranges are records of the calling thread
 * (rt_record.c).  Pause and resume act on the whole process: they set or
 * clear a gate the sampling handler checks, and are recorded on the
 * calling thread.  Every function keeps errno and does nothing when the
 * runtime is off.
 *
 * With time windows (rt_window_async.c), a mark, a region or a range is
 * recorded only if it begins inside a window; a region's pop and a
 * range's end are recorded exactly when their beginning was, so that what
 * the file holds stays balanced.  Pause and resume are always recorded:
 * they say when sampling was off, not what the program did.
 */
#include <errno.h>

#include "kscope/user.h"
#include "rt_int.h"

/* Set in the id of a range whose start was not recorded (outside the
 * windows): its end is not recorded either.  Range ids count from 1, so
 * the bit is never set otherwise. */
#define RANGE_UNRECORDED (1ull << 63)

static bool window_open_now(void)
{
	return !ks_rt_windowed() || ks_rt_window_open(ks_rt_now());
}

/* Whether a push at the calling thread's next level is recorded. */
static bool region_enter(void)
{
	struct ks_rt_thread *t;
	uint32_t d;
	bool keep;

	if (!ks_rt_windowed())
		return true;
	if (!(t = ks_rt_thread_adopt()))
		return false;
	d = t->region_depth++;
	keep = d < KS_RT_REGION_LEVELS && ks_rt_window_open(ks_rt_now());
	if (d < KS_RT_REGION_LEVELS) {
		if (keep)
			t->region_kept[d / 64] |= 1ull << (d % 64);
		else
			t->region_kept[d / 64] &= ~(1ull << (d % 64));
	}
	return keep;
}

/* Whether the pop of the calling thread's innermost region is recorded:
 * if its push was, or, for a pop without a push, if a window is open. */
static bool region_leave(void)
{
	struct ks_rt_thread *t;
	uint32_t d;

	if (!ks_rt_windowed())
		return true;
	if (!(t = ks_rt_thread_adopt()))
		return false;
	if (t->region_depth == 0)
		return ks_rt_window_open(ks_rt_now());
	d = --t->region_depth;
	return d < KS_RT_REGION_LEVELS && (t->region_kept[d / 64] >> (d % 64) & 1);
}

KS_RT_EXPORT void kscope_region_push(const char *name)
{
	int saved = errno;

	if (ks_rt_on() && region_enter())
		ks_rt_record_named(KS_RAW_REGION_PUSH, name, 0);
	errno = saved;
}

KS_RT_EXPORT void kscope_region_pop(void)
{
	int saved = errno;

	if (ks_rt_on() && region_leave())
		ks_rt_record_named(KS_RAW_REGION_POP, NULL, 0);
	errno = saved;
}

KS_RT_EXPORT void kscope_pause(void)
{
	int saved = errno;

	if (ks_rt_on()) {
		atomic_fetch_or(&ks_rt.gate, KS_RT_GATE_PAUSED);
		ks_rt_record_named(KS_RAW_PAUSE, NULL, 0);
	}
	errno = saved;
}

KS_RT_EXPORT void kscope_resume(void)
{
	int saved = errno;

	if (ks_rt_on()) {
		ks_rt_record_named(KS_RAW_RESUME, NULL, 0);
		atomic_fetch_and(&ks_rt.gate, ~(unsigned)KS_RT_GATE_PAUSED);
	}
	errno = saved;
}

KS_RT_EXPORT void kscope_mark(const char *name)
{
	int saved = errno;

	if (ks_rt_on() && window_open_now())
		ks_rt_record_named(KS_RAW_MARK, name, 0);
	errno = saved;
}

KS_RT_EXPORT uint64_t kscope_range_start(const char *name)
{
	int saved = errno;
	uint64_t id = 0;

	if (ks_rt_on()) {
		id = atomic_fetch_add(&ks_rt.next_range, 1);
		if (window_open_now())
			ks_rt_record_named(KS_RAW_RANGE_START, name, id);
		else
			id |= RANGE_UNRECORDED;
	}
	errno = saved;
	return id;
}

KS_RT_EXPORT void kscope_range_end(uint64_t id)
{
	int saved = errno;

	if (ks_rt_on() && id != 0 && !(id & RANGE_UNRECORDED))
		ks_rt_record_named(KS_RAW_RANGE_END, NULL, id);
	errno = saved;
}
