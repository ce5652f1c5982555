/*
 * The kscope user API: calls a program makes to mark up its own timeline
 * for `kscope sample` (regions, instants and ranges) and to pause and
 * resume sampling.  Usable from C and C++.
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

#ifdef __cplusplus
}
#endif

#endif
