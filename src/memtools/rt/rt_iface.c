/*
 * ThreadSanitizer's instrumentation interface, but the atomics
 * (rt_atomic.c): what the compiler calls at every plain memory access,
 * function entry and exit, plus the annotations of the public
 * <sanitizer/tsan_interface.h>.  Each access becomes one call of
 * rt_access (rt_int.h) with the caller's return address as its site:
 * the instrumented instruction's place in the program.  The families of
 * one size do the same (volatile, unaligned: the core handles an access
 * crossing lines); a compound read-modify-write (clang's
 * __tsan_read_write*) is a read then a write, as the Valgrind tool counts
 * `x += y`.
 */
#include <string.h>

#include "rt_int.h"

/* ------------------------------------------------------------------ */
/* Calls                                                               */
/* ------------------------------------------------------------------ */

RT_EXPORT void __tsan_func_entry(void *caller_pc)
{
	struct rt_thread *t = rt_self;
	struct rt_stack *s;

	if (RT_UNLIKELY(!t) && !(t = rt_thread_adopt()))
		return;
	s = t->stk;
	s->pc[s->depth & (RT_STACK_N - 1)] = (uintptr_t)caller_pc;
	s->depth++;
}

RT_EXPORT void __tsan_func_exit(void)
{
	struct rt_thread *t = rt_self;

	if (RT_LIKELY(t != NULL) && t->stk->depth)
		t->stk->depth--;
}

RT_EXPORT void __tsan_ignore_thread_begin(void)
{
	struct rt_thread *t = rt_self ? rt_self : rt_thread_adopt();

	if (t) {
		t->ignore++;
		rt_thread_divert(t);
	}
}

RT_EXPORT void __tsan_ignore_thread_end(void)
{
	struct rt_thread *t = rt_self;

	if (t && t->ignore > 0) {
		t->ignore--;
		rt_thread_divert(t);
	}
}

/* ------------------------------------------------------------------ */
/* Plain accesses                                                      */
/* ------------------------------------------------------------------ */

#define RT_ACCESS(name, size, write)                                               \
	RT_EXPORT void name(void *addr)                                            \
	{                                                                          \
		rt_access((uintptr_t)addr, size, write, RT_PC());                  \
	}
#define RT_RMW(name, size, unused)                                                 \
	RT_EXPORT void name(void *addr)                                            \
	{                                                                          \
		uintptr_t pc = RT_PC();                                            \
		rt_access((uintptr_t)addr, size, false, pc);                       \
		rt_access((uintptr_t)addr, size, true, pc);                        \
	}
#define RT_SIZES(mac, fam, arg)                                                    \
	mac(__tsan_##fam##1, 1, arg)                                               \
	mac(__tsan_##fam##2, 2, arg)                                               \
	mac(__tsan_##fam##4, 4, arg)                                               \
	mac(__tsan_##fam##8, 8, arg)                                               \
	mac(__tsan_##fam##16, 16, arg)

RT_SIZES(RT_ACCESS, read, false)
RT_SIZES(RT_ACCESS, write, true)
RT_SIZES(RT_ACCESS, unaligned_read, false)
RT_SIZES(RT_ACCESS, unaligned_write, true)
RT_SIZES(RT_ACCESS, volatile_read, false)
RT_SIZES(RT_ACCESS, volatile_write, true)
RT_SIZES(RT_ACCESS, unaligned_volatile_read, false)
RT_SIZES(RT_ACCESS, unaligned_volatile_write, true)
RT_SIZES(RT_RMW, read_write, 0)
RT_SIZES(RT_RMW, unaligned_read_write, 0)

#define RT_ACCESS_PC(name, size, write)                                            \
	RT_EXPORT void name(void *addr, void *pc)                                  \
	{                                                                          \
		rt_access((uintptr_t)addr, size, write, (uintptr_t)pc);            \
	}
RT_ACCESS_PC(__tsan_read1_pc, 1, false)
RT_ACCESS_PC(__tsan_read2_pc, 2, false)
RT_ACCESS_PC(__tsan_read4_pc, 4, false)
RT_ACCESS_PC(__tsan_read8_pc, 8, false)
RT_ACCESS_PC(__tsan_read16_pc, 16, false)
RT_ACCESS_PC(__tsan_write1_pc, 1, true)
RT_ACCESS_PC(__tsan_write2_pc, 2, true)
RT_ACCESS_PC(__tsan_write4_pc, 4, true)
RT_ACCESS_PC(__tsan_write8_pc, 8, true)
RT_ACCESS_PC(__tsan_write16_pc, 16, true)

/* ------------------------------------------------------------------ */
/* Ranges and memory functions                                         */
/* ------------------------------------------------------------------ */

RT_EXPORT void __tsan_read_range(void *addr, unsigned long size)
{
	rt_access_range((uintptr_t)addr, size, false, RT_PC());
}

RT_EXPORT void __tsan_write_range(void *addr, unsigned long size)
{
	rt_access_range((uintptr_t)addr, size, true, RT_PC());
}

RT_EXPORT void __tsan_read_range_pc(void *addr, unsigned long size, void *pc)
{
	rt_access_range((uintptr_t)addr, size, false, (uintptr_t)pc);
}

RT_EXPORT void __tsan_write_range_pc(void *addr, unsigned long size, void *pc)
{
	rt_access_range((uintptr_t)addr, size, true, (uintptr_t)pc);
}

RT_EXPORT void *__tsan_memcpy(void *dst, const void *src, size_t size)
{
	uintptr_t pc = RT_PC();

	rt_access_range((uintptr_t)src, size, false, pc);
	rt_access_range((uintptr_t)dst, size, true, pc);
	return memcpy(dst, src, size);
}

RT_EXPORT void *__tsan_memmove(void *dst, const void *src, size_t size)
{
	uintptr_t pc = RT_PC();

	rt_access_range((uintptr_t)src, size, false, pc);
	rt_access_range((uintptr_t)dst, size, true, pc);
	return memmove(dst, src, size);
}

RT_EXPORT void *__tsan_memset(void *dst, int c, size_t size)
{
	rt_access_range((uintptr_t)dst, size, true, RT_PC());
	return memset(dst, c, size);
}

/* ------------------------------------------------------------------ */
/* C++ virtual table pointers                                          */
/* ------------------------------------------------------------------ */

/* A constructor or destructor storing the pointer it already holds (each
 * base class's in turn) reads it; only a change writes. */
RT_EXPORT void __tsan_vptr_update(void **vptr_p, void *new_val)
{
	uintptr_t pc = RT_PC();
	void *cur = __atomic_load_n(vptr_p, __ATOMIC_RELAXED);

	rt_access((uintptr_t)vptr_p, sizeof(void *), cur != new_val, pc);
}

RT_EXPORT void __tsan_vptr_read(void **vptr_p)
{
	rt_access((uintptr_t)vptr_p, sizeof(void *), false, RT_PC());
}

/* ------------------------------------------------------------------ */
/* <sanitizer/tsan_interface.h>                                        */
/* ------------------------------------------------------------------ */

/* Synchronization the program declares itself: the analyses count
 * cache-line traffic, not happens-before, so there is nothing to do. */
RT_EXPORT void __tsan_acquire(void *addr)
{
	(void)addr;
}

RT_EXPORT void __tsan_release(void *addr)
{
	(void)addr;
}

#define RT_MUTEX_NOTE(name)                                                        \
	RT_EXPORT void name(void *addr, unsigned flags)                            \
	{                                                                          \
		(void)addr;                                                        \
		(void)flags;                                                       \
	}
RT_MUTEX_NOTE(__tsan_mutex_create)
RT_MUTEX_NOTE(__tsan_mutex_destroy)
RT_MUTEX_NOTE(__tsan_mutex_pre_lock)
RT_MUTEX_NOTE(__tsan_mutex_post_unlock)
RT_MUTEX_NOTE(__tsan_mutex_pre_signal)
RT_MUTEX_NOTE(__tsan_mutex_post_signal)
RT_MUTEX_NOTE(__tsan_mutex_pre_divert)
RT_MUTEX_NOTE(__tsan_mutex_post_divert)
#undef RT_MUTEX_NOTE

RT_EXPORT void __tsan_mutex_post_lock(void *addr, unsigned flags, int recursion)
{
	(void)addr;
	(void)flags;
	(void)recursion;
}

/* The recursion count ThreadSanitizer would give back to post_lock:
 * kscope keeps none. */
RT_EXPORT int __tsan_mutex_pre_unlock(void *addr, unsigned flags)
{
	(void)addr;
	(void)flags;
	return 0;
}

/* Accesses to objects of a library's own types (containers): counted as
 * one-byte accesses at the object's address, from the caller's pc. */
RT_EXPORT void *__tsan_external_register_tag(const char *object_type)
{
	/* Any non-NULL token: tags only name types in race reports. */
	return (void *)(uintptr_t)object_type;
}

RT_EXPORT void __tsan_external_register_header(void *tag, const char *header)
{
	(void)tag;
	(void)header;
}

RT_EXPORT void __tsan_external_assign_tag(void *addr, void *tag)
{
	(void)addr;
	(void)tag;
}

RT_EXPORT void __tsan_external_read(void *addr, void *caller_pc, void *tag)
{
	(void)tag;
	rt_access((uintptr_t)addr, 1, false, (uintptr_t)caller_pc);
}

RT_EXPORT void __tsan_external_write(void *addr, void *caller_pc, void *tag)
{
	(void)tag;
	rt_access((uintptr_t)addr, 1, true, (uintptr_t)caller_pc);
}

/* ThreadSanitizer lets go of its shadow memory here; the analyses'
 * shadow is their result, kept until the process ends. */
RT_EXPORT void __tsan_flush_memory(void)
{
}
