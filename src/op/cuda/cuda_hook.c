/*
 * How programs reach kscope op's CUDA wrappers.  Almost no program calls
 * the driver by its exported names: nvcc's static cudart, PyTorch's
 * libcudart, Triton and CuPy dlopen libcuda.so.1, look up
 * cuGetProcAddress_v2 with dlsym, and get every other entry point from
 * it.  So kscope wraps both:
 *
 *   dlsym          glibc's dlsym is interposed (the library is preloaded);
 *                  a lookup by handle (not RTLD_NEXT or RTLD_DEFAULT) of a
 *                  wrapped cu* name that finds the driver's definition
 *                  returns the wrapper instead;
 *   cuGetProcAddress  the pointer the driver hands out is compared with
 *                  the driver's exported definitions of the wrapped entry
 *                  points, and the matching wrapper is handed out instead
 *                  (by address, so that the wrapper always has the ABI of
 *                  what it replaces: _v2 and _ptsz variants included).
 *
 * Only while the runtime is on (kscope op runs the program): otherwise
 * lookups are answered as without kscope.
 *
 * dlsym(RTLD_NEXT, ...) depends on its caller (the object after the one
 * that calls), so it must reach glibc's dlsym with the program's return
 * address: the exported dlsym is a few instructions of assembly that
 * jump (not call) to glibc's for RTLD_NEXT and to the hook for the rest.
 * x86-64 only for now; on other machines there is no dlsym hook (and
 * CUDA programs are not intercepted).  Programs linked directly against
 * libcuda that never use cuGetProcAddress are not intercepted either:
 * the library does not export the cu* names (it must not stand in for a
 * driver that is not there).
 */
#include <dlfcn.h>
#include <string.h>

#include "cuda_int.h"

/* glibc's dlsym: found with dlvsym, which is not interposed.  Read by the
 * assembly below, hence not static; hidden like everything else. */
void *(*ks_cu_glibc_dlsym)(void *, const char *);
void ks_cu_dlsym_resolve(void);
void *ks_cu_dlsym_hook(void *handle, const char *name);

void ks_cu_dlsym_resolve(void)
{
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");

	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	__atomic_store_n(&ks_cu_glibc_dlsym, (void *(*)(void *, const char *))p,
			 __ATOMIC_RELEASE);
}

void *ks_cu_real_dlsym(void *handle, const char *name)
{
	if (!ks_cu_glibc_dlsym)
		ks_cu_dlsym_resolve();
	return ks_cu_glibc_dlsym ? ks_cu_glibc_dlsym(handle, name) : NULL;
}

/* ------------------------------------------------------------------ */
/* The wrappers by name and by address                                 */
/* ------------------------------------------------------------------ */

/* The wrappers are defined in cuda_wrap.c with the names ks_cuw_<sym>. */
#define KS_CU_DECL(sym, decl) extern __typeof__(decl) ks_cuw_##sym;
KS_CU_WRAPPED(KS_CU_DECL)
#undef KS_CU_DECL
extern CUresult ks_cuw_cuGetProcAddress(const char *symbol, void **pfn, int version,
					cuuint64_t flags);

struct entry {
	const char *sym;
	void *wrapper;
	void **real;                      /* the slot in ks_cu_real */
};

/* Function pointers are stored as void * (POSIX guarantees the round trip,
 * which dlsym itself relies on). */
static const struct entry entries[] = {
#define KS_CU_ENTRY(sym, decl) { #sym, (void *)ks_cuw_##sym, (void **)&ks_cu_real.sym },
	KS_CU_WRAPPED(KS_CU_ENTRY)
#undef KS_CU_ENTRY
	{ "cuGetProcAddress", (void *)ks_cuw_cuGetProcAddress,
	  (void **)&ks_cu_real.getproc_v1 },
};

void *ks_cu_substitute(const char *sym, void *pfn)
{
	if (!pfn || !ks_oprt_active() || !ks_cu_resolve())
		return pfn;
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		if (sym && strcmp(sym, entries[i].sym) != 0)
			continue;
		/* Only the driver's own definition is replaced: a lookup of the
		 * same name in another library is none of kscope's business. */
		if (*entries[i].real == pfn)
			return entries[i].wrapper;
		if (sym)
			break;
	}
	return pfn;
}

void *ks_cu_dlsym_hook(void *handle, const char *name)
{
	void *p = ks_cu_real_dlsym(handle, name);

	if (p && name && name[0] == 'c' && name[1] == 'u')
		return ks_cu_substitute(name, p);
	return p;
}

/* ------------------------------------------------------------------ */
/* The exported dlsym                                                  */
/* ------------------------------------------------------------------ */

#if defined(__x86_64__)
/* RTLD_NEXT ((void *)-1) and RTLD_DEFAULT (NULL) go straight to glibc's:
 * what they find depends on the caller (the object after it, or the
 * caller's own local scope for a library dlopen'd RTLD_LOCAL), so only a
 * jump keeps their meaning; the CUDA runtimes look the driver up by the
 * handle dlopen gave them, which the hook sees.  The slow path (glibc's
 * dlsym not found yet: a lookup before this library's constructors)
 * resolves it keeping the arguments, then jumps as the fast path does; it
 * returns NULL if glibc has none (it always has). */
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"	cmpq $-1, %rdi\n"
	"	je 4f\n"
	"	testq %rdi, %rdi\n"
	"	jne 2f\n"
	"4:	movq ks_cu_glibc_dlsym(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	jmp *%rax\n"
	"1:	pushq %rdi\n"
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	call ks_cu_dlsym_resolve\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	movq ks_cu_glibc_dlsym(%rip), %rax\n"
	"	testq %rax, %rax\n"
	"	jz 3f\n"
	"	jmp *%rax\n"
	"3:	ret\n"
	"2:	jmp ks_cu_dlsym_hook\n"
	".size dlsym, .-dlsym\n");
#endif
