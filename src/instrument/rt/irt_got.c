/*
 * The functions the runtime wraps (struct irt_wrap): the unwinder's
 * (irt_unwind.c) and the exec family (irt_exec.c).  Preloaded, the
 * program finds the wrappers first, by name.  Attached to a running
 * process (kscope instrument --pid), the runtime was loaded on its own
 * (dlopen, RTLD_LOCAL) and the objects' calls are bound already; so
 * irt_got_hook points the GOT entries of those functions, in every
 * object loaded then, at the wrappers, and finds the real functions.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "irt_int.h"

struct irt_wrap irt_wraps[IRT_NWRAPS] = {
	[IRT_W_RAISE] = { "_Unwind_RaiseException", (void *)irt_wrap_raise, NULL },
	[IRT_W_FORCED] = { "_Unwind_ForcedUnwind", (void *)irt_wrap_forced, NULL },
	[IRT_W_BACKTRACE] = { "_Unwind_Backtrace", (void *)irt_wrap_backtrace, NULL },
	[IRT_W_EXECVE] = { "execve", (void *)irt_wrap_execve, NULL },
	[IRT_W_EXECV] = { "execv", (void *)irt_wrap_execv, NULL },
	[IRT_W_EXECVPE] = { "execvpe", (void *)irt_wrap_execvpe, NULL },
	[IRT_W_EXECVP] = { "execvp", (void *)irt_wrap_execvp, NULL },
	[IRT_W_FEXECVE] = { "fexecve", (void *)irt_wrap_fexecve, NULL },
	[IRT_W_EXECL] = { "execl", (void *)irt_wrap_execl, NULL },
	[IRT_W_EXECLP] = { "execlp", (void *)irt_wrap_execlp, NULL },
	[IRT_W_EXECLE] = { "execle", (void *)irt_wrap_execle, NULL },
};

void *irt_real(int w)
{
	void *f = __atomic_load_n(&irt_wraps[w].real, __ATOMIC_RELAXED);

	if (!f) {
		f = dlsym(RTLD_NEXT, irt_wraps[w].name);
		__atomic_store_n(&irt_wraps[w].real, f, __ATOMIC_RELAXED);
	}
	return f;
}

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
			if (strncmp(name, "_Unwind_", 8) && strncmp(name, "exec", 4) &&
			    strcmp(name, "fexecve"))
				continue;
			for (int w = 0; w < IRT_NWRAPS; w++) {
				uintptr_t slot = bias + r->r_offset;

				if (!irt_wraps[w].real || strcmp(name, irt_wraps[w].name))
					continue;
				if (slot_write(c, (void **)slot, irt_wraps[w].wrapper,
					       slot >= relro_lo && slot < relro_hi))
					c->failed = -1;
			}
		}
	}
	return 0;
}

int irt_got_hook(void)
{
	struct hook_ctx c = { .page = sysconf(_SC_PAGESIZE) };
	Dl_info self;

	if (!dladdr((void *)irt_got_hook, &self))
		return -1;
	c.self = (uintptr_t)self.dli_fbase;
	/* This library was loaded on its own (RTLD_LOCAL): the first
	 * definition in the process's scope is the real one (the
	 * unwinder's, the C library's).  A function no object defines is
	 * called by none. */
	for (int w = 0; w < IRT_NWRAPS; w++)
		irt_wraps[w].real = dlsym(RTLD_DEFAULT, irt_wraps[w].name);
	dl_iterate_phdr(hook_object, &c);
	return c.failed;
}
