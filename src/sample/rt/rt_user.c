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
 */
#include <errno.h>

#include "kscope/user.h"
#include "rt_int.h"

KS_RT_EXPORT void kscope_region_push(const char *name)
{
	int saved = errno;

	if (ks_rt_on())
		ks_rt_record_named(KS_RAW_REGION_PUSH, name, 0);
	errno = saved;
}

KS_RT_EXPORT void kscope_region_pop(void)
{
	int saved = errno;

	if (ks_rt_on())
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

	if (ks_rt_on())
		ks_rt_record_named(KS_RAW_MARK, name, 0);
	errno = saved;
}

KS_RT_EXPORT uint64_t kscope_range_start(const char *name)
{
	int saved = errno;
	uint64_t id = 0;

	if (ks_rt_on()) {
		id = atomic_fetch_add(&ks_rt.next_range, 1);
		ks_rt_record_named(KS_RAW_RANGE_START, name, id);
	}
	errno = saved;
	return id;
}

KS_RT_EXPORT void kscope_range_end(uint64_t id)
{
	int saved = errno;

	if (ks_rt_on() && id != 0)
		ks_rt_record_named(KS_RAW_RANGE_END, NULL, id);
	errno = saved;
}
