/*
 * libkscope-user.so: the kscope user API (include/kscope/user.h) doing
 * nothing.  Programs link against it so that they run normally without
 * kscope, at the cost of a call that returns at once (bench/user_api.sh
 * measures it).  Under `kscope sample`, libkscope.so is preloaded and
 * defines the same symbols with real behaviour, as libkscope-causal.so
 * does the progress points under `kscope causal`; the dynamic linker
 * binds the program's calls to the preloaded definitions first.
 */
#include "kscope/user.h"

#define KS_USER_EXPORT __attribute__((visibility("default")))

KS_USER_EXPORT void kscope_region_push(const char *name)
{
	(void)name;
}

KS_USER_EXPORT void kscope_region_pop(void)
{
}

KS_USER_EXPORT void kscope_pause(void)
{
}

KS_USER_EXPORT void kscope_resume(void)
{
}

KS_USER_EXPORT void kscope_mark(const char *name)
{
	(void)name;
}

KS_USER_EXPORT uint64_t kscope_range_start(const char *name)
{
	(void)name;
	return 0;
}

KS_USER_EXPORT void kscope_range_end(uint64_t id)
{
	(void)id;
}

KS_USER_EXPORT void kscope_progress(const char *name)
{
	(void)name;
}

KS_USER_EXPORT void kscope_begin(const char *name)
{
	(void)name;
}

KS_USER_EXPORT void kscope_end(const char *name)
{
	(void)name;
}
