/*
 * Stack walks for samples, from the context the kernel handed the signal
 * handler.  frames[0] is always the interrupted PC, then return addresses
 * outwards.  Two walkers:
 *
 *  - libunwind (the default): unw_init_local2 on the signal's ucontext
 *    with UNW_INIT_SIGNAL_FRAME, then unw_step.  It reads DWARF unwind
 *    tables, so it walks code built without frame pointers.  libunwind is
 *    set to a per-thread cache, the mode its documentation gives for use
 *    in signal handlers (no locks; its per-thread state is static TLS,
 *    as libunwind.so is loaded at start with us), and one walk at start,
 *    outside any handler, runs its one-time global set-up.  (Walking
 *    once in every new thread as well cost about 150 us per thread, which
 *    programs that start many short threads would feel.)
 *  - frame pointers (KSCOPE_UNWIND=fp): follows the rbp chain, cheap but
 *    only right for code built with -fno-omit-frame-pointer.  Every
 *    address read is checked against the thread's stack bounds and must
 *    lie above the interrupted stack pointer, so a garbage rbp never makes
 *    the walk read unmapped memory.
 *
 * Everything here is async-signal-safe except ks_rt_unwind_init, which
 * runs in normal context.
 */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <ucontext.h>

#include "rt_int.h"

/* Normal context (dl_iterate_phdr callback). */
static int range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t base = *(uintptr_t *)data, lo = UINTPTR_MAX, hi = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (lo != base)
		return 0;
	ks_rt.unwind_lo = lo;
	ks_rt.unwind_hi = hi;
	return 1;
}

/* libunwind blocks all signals with sigprocmask around its locks; kscope
 * must not unblock its sampling signals there, or its handler could
 * re-enter libunwind under a held lock.  So remember where libunwind's
 * code is (rt_signal.c checks the caller). */
static void unwind_range(void)
{
	Dl_info info;
	uintptr_t base;

	if (!dladdr((void *)(uintptr_t)unw_step, &info) || !info.dli_fbase)
		return;
	base = (uintptr_t)info.dli_fbase;
	dl_iterate_phdr(range_cb, &base);
}

/* Normal context, once at start. */
void ks_rt_unwind_init(void)
{
	unw_context_t ctx;
	unw_cursor_t cursor;

	unwind_range();
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	if (unw_getcontext(&ctx) == 0 && unw_init_local(&cursor, &ctx) == 0)
		for (int i = 0; i < 8 && unw_step(&cursor) > 0; i++)
			;
}

/* async-signal-safe */
static int unwind_fp(const struct ks_rt_thread *t, const ucontext_t *uc,
		     uint64_t *frames, int max)
{
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	uintptr_t lo = t->stack_lo, hi = t->stack_hi;
	int n = 1;

	/* On a stack we do not know (sigaltstack, coroutines) only the PC
	 * is safe to report. */
	if (sp < lo || sp >= hi || hi - lo < 16)
		return n;
	lo = sp;
	while (n < max) {
		const uintptr_t *f;
		uintptr_t ret, next;

		if (fp < lo || fp > hi - 16 || (fp & 7))
			break;
		f = (const uintptr_t *)fp;
		next = f[0];
		ret = f[1];
		if (ret < 4096)
			break;
		frames[n++] = ret;
		if (next <= fp)
			break;
		lo = fp + 16;
		fp = next;
	}
	return n;
}

/* async-signal-safe */
static int unwind_libunwind(ucontext_t *uc, uint64_t *frames, int max)
{
	unw_cursor_t cursor;
	int n = 1;

	if (unw_init_local2(&cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
		return n;
	while (n < max && unw_step(&cursor) > 0) {
		unw_word_t ip;

		if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0)
			break;
		frames[n++] = ip;
	}
	return n;
}

/* async-signal-safe */
int ks_rt_unwind(const struct ks_rt_thread *t, void *ucv, uint64_t *frames, int max)
{
	ucontext_t *uc = ucv;

	if (max <= 0)
		return 0;
	frames[0] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if (ks_rt.opts.unwind_fp)
		return unwind_fp(t, uc, frames, max);
	return unwind_libunwind(uc, frames, max);
}
