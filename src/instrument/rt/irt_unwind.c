/*
 * Unwinding through instrumented frames: the wrappers of libgcc's
 * _Unwind_RaiseException, _Unwind_ForcedUnwind (pthread_exit,
 * pthread_cancel) and _Unwind_Backtrace (backtrace()), which this
 * library interposes on when preloaded; when kscope attaches to a
 * running process (--pid), it points the loaded objects' GOT entries of
 * those functions at them instead (irt_unwind_hook).
 *
 * An unwinder reads return addresses from the stack, and where kscope
 * put its exit thunk there it would find no unwind information and stop
 * (a C++ exception would end in std::terminate).  So before the real
 * function runs, every return address of the calling thread that kscope
 * replaced is put back.  Those calls then return (or are unwound)
 * without passing the exit thunk; each is closed when a later entry or
 * exit on the thread sees that its stack slot has been left or reused,
 * as after a longjmp (irt_hook_async.c): counts stay exact, and their end
 * times are those of the next instrumented event on the thread.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <unwind.h>

#include "irt_int.h"

/* Puts back the original return addresses of the calling thread's open
 * calls.  Shadow frames below this function's own frame belong to calls
 * a longjmp left: their slots may now be this very call chain's stack,
 * so they are closed, never written. */
__attribute__((noinline)) static void restore_returns(void)
{
	struct irt_thread *t = irt_self_get();
	uint64_t now;
	int64_t off;

	if (!t)
		return;
	now = irt_now_off(t, &off);
	irt_thread_pop_below(t, (uintptr_t)__builtin_frame_address(0), now, off);
	for (uint32_t k = 0; k < t->depth; k++) {
		struct irt_frame *f = &t->stack[k];

		if (*f->slot == irt_g.exit_addr)
			*f->slot = f->ret;
	}
}

/* The wrapped functions, in this order everywhere below. */
static const char *const unwind_names[3] = {
	"_Unwind_RaiseException", "_Unwind_ForcedUnwind", "_Unwind_Backtrace",
};

/* The real functions, when irt_unwind_hook found them (attached). */
static void *unwind_real[3];

/* The real definition: the unwinder's own (libgcc_s's), after this
 * library's when it is preloaded. */
static void *next_fn(int i)
{
	return unwind_real[i] ? unwind_real[i] : dlsym(RTLD_NEXT, unwind_names[i]);
}

static _Unwind_Reason_Code wrap_raise(struct _Unwind_Exception *e)
{
	_Unwind_Reason_Code (*real)(struct _Unwind_Exception *);

	*(void **)&real = next_fn(0);
	restore_returns();
	return real ? real(e) : _URC_FATAL_PHASE1_ERROR;
}

static _Unwind_Reason_Code wrap_forced(struct _Unwind_Exception *e, _Unwind_Stop_Fn stop,
				       void *arg)
{
	_Unwind_Reason_Code (*real)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *);

	*(void **)&real = next_fn(1);
	restore_returns();
	return real ? real(e, stop, arg) : _URC_FATAL_PHASE1_ERROR;
}

static _Unwind_Reason_Code wrap_backtrace(_Unwind_Trace_Fn fn, void *arg)
{
	_Unwind_Reason_Code (*real)(_Unwind_Trace_Fn, void *);

	*(void **)&real = next_fn(2);
	restore_returns();
	return real ? real(fn, arg) : _URC_END_OF_STACK;
}

/* Preloaded, the program's calls find these first. */
__attribute__((visibility("default"), alias("wrap_raise"))) _Unwind_Reason_Code
_Unwind_RaiseException(struct _Unwind_Exception *e);
__attribute__((visibility("default"), alias("wrap_forced"))) _Unwind_Reason_Code
_Unwind_ForcedUnwind(struct _Unwind_Exception *e, _Unwind_Stop_Fn stop, void *arg);
__attribute__((visibility("default"), alias("wrap_backtrace"))) _Unwind_Reason_Code
_Unwind_Backtrace(_Unwind_Trace_Fn fn, void *arg);

/* ------------------------------------------------------------------ */
/* Attached: the objects' GOT entries                                  */
/* ------------------------------------------------------------------ */

struct hook_ctx {
	uintptr_t self;   /* this library's load address */
	long page;
	int failed;
};

/* A dynamic-section address: glibc relocates them in place, the vDSO's
 * are not (it is skipped anyway); an offset is taken as one. */
static uintptr_t dyn_addr(uintptr_t bias, uintptr_t v)
{
	return v < bias ? v + bias : v;
}

/* Points slot at fn; a slot in the object's read-only-after-relocation
 * part (relro) is made writable for the write and read-only again. */
static int slot_write(struct hook_ctx *c, void **slot, void *fn, bool relro)
{
	uintptr_t pg = (uintptr_t)slot & ~((uintptr_t)c->page - 1);

	if (relro && mprotect((void *)pg, (size_t)c->page, PROT_READ | PROT_WRITE) != 0)
		return -1;
	__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	if (relro)
		mprotect((void *)pg, (size_t)c->page, PROT_READ);
	return 0;
}

static int hook_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	static void *const wrappers[3] = {
		(void *)wrap_raise, (void *)wrap_forced, (void *)wrap_backtrace,
	};
	struct hook_ctx *c = arg;
	uintptr_t bias = info->dlpi_addr, relro_lo = 0, relro_hi = 0;
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *tabs[2] = { NULL, NULL };
	size_t lens[2] = { 0, 0 };

	(void)size;
	if (bias == c->self || (info->dlpi_name && strstr(info->dlpi_name, "linux-vdso")))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(bias + p->p_vaddr);
		else if (p->p_type == PT_GNU_RELRO) {
			relro_lo = bias + p->p_vaddr;
			relro_hi = relro_lo + p->p_memsz;
		}
	}
	if (!dyn)
		return 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = (uintptr_t)dyn->d_un.d_ptr;

		switch (dyn->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_addr(bias, v); break;
		case DT_STRTAB: strtab = (const char *)dyn_addr(bias, v); break;
		case DT_JMPREL: tabs[0] = (const ElfW(Rela) *)dyn_addr(bias, v); break;
		case DT_PLTRELSZ: lens[0] = dyn->d_un.d_val / sizeof(ElfW(Rela)); break;
		case DT_RELA: tabs[1] = (const ElfW(Rela) *)dyn_addr(bias, v); break;
		case DT_RELASZ: lens[1] = dyn->d_un.d_val / sizeof(ElfW(Rela)); break;
		default: break;
		}
	}
	if (!symtab || !strtab)
		return 0;
	for (int t = 0; t < 2; t++) {
		for (size_t k = 0; tabs[t] && k < lens[t]; k++) {
			const ElfW(Rela) *r = &tabs[t][k];
			uint32_t type = (uint32_t)ELF64_R_TYPE(r->r_info);
			const char *name;

			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
			    !ELF64_R_SYM(r->r_info))
				continue;
			name = strtab + symtab[ELF64_R_SYM(r->r_info)].st_name;
			if (strncmp(name, "_Unwind_", 8))
				continue;
			for (int w = 0; w < 3; w++) {
				uintptr_t slot = bias + r->r_offset;

				if (!unwind_real[w] || strcmp(name, unwind_names[w]))
					continue;
				if (slot_write(c, (void **)slot, wrappers[w],
					       slot >= relro_lo && slot < relro_hi))
					c->failed = -1;
			}
		}
	}
	return 0;
}

int irt_unwind_hook(void)
{
	struct hook_ctx c = { .page = sysconf(_SC_PAGESIZE) };
	Dl_info self;

	if (!dladdr((void *)irt_unwind_hook, &self))
		return -1;
	c.self = (uintptr_t)self.dli_fbase;
	/* This library was loaded on its own (RTLD_LOCAL): the first
	 * definition in the process's scope is the unwinder's. */
	for (int w = 0; w < 3; w++)
		unwind_real[w] = dlsym(RTLD_DEFAULT, unwind_names[w]);
	dl_iterate_phdr(hook_object, &c);
	return c.failed;
}
