/*
 * Declarations of ThreadSanitizer's instrumentation interface as gcc 12
 * and clang 14 call it with -fsanitize=thread, and of the functions of
 * the public <sanitizer/tsan_interface.h> a program may call itself,
 * written from the compilers' documentation and the symbols their
 * instrumented objects reference (docs/memtools.md, "The compiled front
 * end", lists how the list was checked).  libkscope-mt.so defines every
 * one of them (rt_iface.c, rt_atomic.c); nothing else here.
 *
 * The atomic operations take and return integers of 1, 2, 4, 8 and 16
 * bytes; the memory order is C11's (0 relaxed ... 5 seq_cst), possibly
 * with gcc's extra bits above (__ATOMIC_HLE_*, its __sync marker), which
 * the runtime drops.
 */
#ifndef KS_RT_TSAN_H
#define KS_RT_TSAN_H

#include <stddef.h>

typedef unsigned char rt_a8;
typedef unsigned short rt_a16;
typedef unsigned int rt_a32;
typedef unsigned long long rt_a64;
typedef unsigned __int128 rt_a128;

/* Start-up and calls. */
void __tsan_init(void);
void __tsan_func_entry(void *caller_pc);
void __tsan_func_exit(void);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);

/* Plain accesses: every family, every size. */
#define RT_TSAN_DECL_SIZES(fam)                                                    \
	void __tsan_##fam##1(void *addr);                                          \
	void __tsan_##fam##2(void *addr);                                          \
	void __tsan_##fam##4(void *addr);                                          \
	void __tsan_##fam##8(void *addr);                                          \
	void __tsan_##fam##16(void *addr);
RT_TSAN_DECL_SIZES(read)
RT_TSAN_DECL_SIZES(write)
RT_TSAN_DECL_SIZES(unaligned_read)
RT_TSAN_DECL_SIZES(unaligned_write)
RT_TSAN_DECL_SIZES(volatile_read)
RT_TSAN_DECL_SIZES(volatile_write)
RT_TSAN_DECL_SIZES(unaligned_volatile_read)
RT_TSAN_DECL_SIZES(unaligned_volatile_write)
RT_TSAN_DECL_SIZES(read_write)
RT_TSAN_DECL_SIZES(unaligned_read_write)
#undef RT_TSAN_DECL_SIZES

/* The same with the caller's pc given (external instrumentation). */
#define RT_TSAN_DECL_PC(fam)                                                       \
	void __tsan_##fam##1_pc(void *addr, void *pc);                             \
	void __tsan_##fam##2_pc(void *addr, void *pc);                             \
	void __tsan_##fam##4_pc(void *addr, void *pc);                             \
	void __tsan_##fam##8_pc(void *addr, void *pc);                             \
	void __tsan_##fam##16_pc(void *addr, void *pc);
RT_TSAN_DECL_PC(read)
RT_TSAN_DECL_PC(write)
#undef RT_TSAN_DECL_PC

/* Ranges (gcc's lowering of __builtin_memcpy and the like), and the
 * memory functions newer clangs call instead of the plain ones. */
void __tsan_read_range(void *addr, unsigned long size);
void __tsan_write_range(void *addr, unsigned long size);
void __tsan_read_range_pc(void *addr, unsigned long size, void *pc);
void __tsan_write_range_pc(void *addr, unsigned long size, void *pc);
void *__tsan_memcpy(void *dst, const void *src, size_t size);
void *__tsan_memmove(void *dst, const void *src, size_t size);
void *__tsan_memset(void *dst, int c, size_t size);

/* C++ virtual table pointers. */
void __tsan_vptr_update(void **vptr_p, void *new_val);
void __tsan_vptr_read(void **vptr_p);

/* Atomics. */
#define RT_TSAN_DECL_ATOMIC(n)                                                     \
	rt_a##n __tsan_atomic##n##_load(const volatile rt_a##n *a, int mo);        \
	void __tsan_atomic##n##_store(volatile rt_a##n *a, rt_a##n v, int mo);     \
	rt_a##n __tsan_atomic##n##_exchange(volatile rt_a##n *a, rt_a##n v, int mo); \
	rt_a##n __tsan_atomic##n##_fetch_add(volatile rt_a##n *a, rt_a##n v, int mo); \
	rt_a##n __tsan_atomic##n##_fetch_sub(volatile rt_a##n *a, rt_a##n v, int mo); \
	rt_a##n __tsan_atomic##n##_fetch_and(volatile rt_a##n *a, rt_a##n v, int mo); \
	rt_a##n __tsan_atomic##n##_fetch_or(volatile rt_a##n *a, rt_a##n v, int mo); \
	rt_a##n __tsan_atomic##n##_fetch_xor(volatile rt_a##n *a, rt_a##n v, int mo); \
	rt_a##n __tsan_atomic##n##_fetch_nand(volatile rt_a##n *a, rt_a##n v, int mo); \
	int __tsan_atomic##n##_compare_exchange_strong(volatile rt_a##n *a, rt_a##n *c, \
						       rt_a##n v, int mo, int fmo); \
	int __tsan_atomic##n##_compare_exchange_weak(volatile rt_a##n *a, rt_a##n *c, \
						     rt_a##n v, int mo, int fmo); \
	rt_a##n __tsan_atomic##n##_compare_exchange_val(volatile rt_a##n *a, rt_a##n c, \
							rt_a##n v, int mo, int fmo);
RT_TSAN_DECL_ATOMIC(8)
RT_TSAN_DECL_ATOMIC(16)
RT_TSAN_DECL_ATOMIC(32)
RT_TSAN_DECL_ATOMIC(64)
RT_TSAN_DECL_ATOMIC(128)
#undef RT_TSAN_DECL_ATOMIC
void __tsan_atomic_thread_fence(int mo);
void __tsan_atomic_signal_fence(int mo);

/* <sanitizer/tsan_interface.h>: annotations of synchronization the
 * program makes itself (the analyses do not model happens-before, so
 * they are accepted and change nothing), C++ library containers,
 * fibers. */
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_mutex_create(void *addr, unsigned flags);
void __tsan_mutex_destroy(void *addr, unsigned flags);
void __tsan_mutex_pre_lock(void *addr, unsigned flags);
void __tsan_mutex_post_lock(void *addr, unsigned flags, int recursion);
int __tsan_mutex_pre_unlock(void *addr, unsigned flags);
void __tsan_mutex_post_unlock(void *addr, unsigned flags);
void __tsan_mutex_pre_signal(void *addr, unsigned flags);
void __tsan_mutex_post_signal(void *addr, unsigned flags);
void __tsan_mutex_pre_divert(void *addr, unsigned flags);
void __tsan_mutex_post_divert(void *addr, unsigned flags);
void *__tsan_external_register_tag(const char *object_type);
void __tsan_external_register_header(void *tag, const char *header);
void __tsan_external_assign_tag(void *addr, void *tag);
void __tsan_external_read(void *addr, void *caller_pc, void *tag);
void __tsan_external_write(void *addr, void *caller_pc, void *tag);
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
void __tsan_set_fiber_name(void *fiber, const char *name);
void __tsan_flush_memory(void);

/* Hooks the program may define; the runtime calls them when it starts
 * and when the process finishes. */
void __tsan_on_initialize(void) __attribute__((weak));
int __tsan_on_finalize(int failed) __attribute__((weak));

#endif
