/*
 * The kscope user API: calls a program makes to mark up its own timeline
 * for `kscope sample` (regions, instants and ranges), to pause and
 * resume sampling, and to mark its progress for `kscope causal`.  Usable
 * from C and C++.
 *
 * Link the program with -lkscope-user (libkscope-user.so), whose
 * functions do nothing, so the program runs normally without kscope.
 * Under `kscope sample` the preloaded libkscope.so defines the same
 * functions and the dynamic linker binds the program's calls to them.
 *
 * Names are copied; names longer than 255 bytes are cut.  Every function
 * is thread-safe; regions nest per thread; a range may end on another
 * thread than the one that started it.
 */
#ifndef KSCOPE_USER_H
#define KSCOPE_USER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enters a region called name on the calling thread; regions nest. */
void kscope_region_push(const char *name);
/* Leaves the calling thread's innermost region. */
void kscope_region_pop(void);
/* Stops sampling in every thread until kscope_resume(). */
void kscope_pause(void);
/* Starts sampling again after kscope_pause(). */
void kscope_resume(void);
/* Records an instant called name on the calling thread. */
void kscope_mark(const char *name);
/* Starts a range called name and returns its id (0 without kscope). */
uint64_t kscope_range_start(const char *name);
/* Ends the range with that id, possibly on another thread. */
void kscope_range_end(uint64_t id);

/* Progress points for `kscope causal` (docs/causal.md): what the
 * program's speed is measured by.  A throughput point counts visits
 * (a request served, an item done); a latency point is the time between
 * kscope_begin(name) and kscope_end(name) of the same name.  Under
 * `kscope causal` the preloaded libkscope-causal.so counts them; programs
 * annotated with coz's COZ_PROGRESS, COZ_BEGIN and COZ_END report to it
 * unchanged.  Names are compared up to 127 bytes. */
void kscope_progress(const char *name);
void kscope_begin(const char *name);
void kscope_end(const char *name);

/* The same as macros, which compile to nothing when KSCOPE_NO_PROGRESS is
 * defined (a build that must not make the calls at all). */
#ifdef KSCOPE_NO_PROGRESS
#define KSCOPE_PROGRESS(name) ((void)0)
#define KSCOPE_BEGIN(name) ((void)0)
#define KSCOPE_END(name) ((void)0)
#else
#define KSCOPE_PROGRESS(name) kscope_progress(name)
#define KSCOPE_BEGIN(name) kscope_begin(name)
#define KSCOPE_END(name) kscope_end(name)
#endif

#ifdef __cplusplus
}
#endif

#endif
