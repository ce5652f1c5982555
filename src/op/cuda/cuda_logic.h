/*
 * The pure logic of kscope op's CUDA backend: what needs no CUDA header,
 * no driver and no GPU, so that tests/op/cuda unit-tests it on any
 * machine.  Kernel names (the base name kscope's filters match, from a
 * mangled or demangled name), the map of device allocations, the
 * classification of a launch's parameters (which words point into which
 * allocation), and whether an ELF file carries CUDA device code.
 *
 * Device addresses are plain uint64_t here (CUdeviceptr is an unsigned
 * 64-bit integer on every 64-bit platform CUDA supports).
 */
#ifndef KS_CUDA_LOGIC_H
#define KS_CUDA_LOGIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* Names (cuda_names.c)                                                */
/* ------------------------------------------------------------------ */

/* The base name of a kernel, which --kernel-name matches and the launch
 * directories are named after: the function's own identifier, without
 * namespaces, template arguments, parameters or return type, as ncu's
 * default `--kernel-name-base function` shows it.  name is the name the
 * driver gives (cuFuncGetName: mangled for C++ kernels, plain for
 * extern "C" ones) or a demangled one.
 *   _Z8mm_naivePKfS0_Pfi                      -> mm_naive
 *   _Z8mm_tiledILi16EEvPKfS1_Pfi              -> mm_tiled
 *   _ZN2ns3fooIfEEvPT_                        -> foo
 *   void ns::mm_tiled<16>(float const*, int)  -> mm_tiled
 *   vadd                                      -> vadd
 * A name the rules do not cover is copied whole.  Writes at most size
 * bytes (NUL included) into out. */
void ks_cu_base_name(const char *name, char *out, size_t size);

/* ------------------------------------------------------------------ */
/* Allocations (cuda_allocs.c)                                         */
/* ------------------------------------------------------------------ */

enum ks_cu_alloc_kind {
	KS_CU_ALLOC_DEVICE,               /* cuMemAlloc, cuMemAllocPitch */
	KS_CU_ALLOC_ASYNC,                /* cuMemAllocAsync, ...FromPoolAsync */
	KS_CU_ALLOC_MANAGED,              /* cuMemAllocManaged */
	KS_CU_ALLOC_FOUND,                /* not seen: cuMemGetAddressRange */
};

struct ks_cu_alloc {
	uint64_t base, size;
	enum ks_cu_alloc_kind kind;
};

/* The live allocations, sorted by base, not overlapping.  Not locked:
 * the backend holds its own lock around every call. */
struct ks_cu_allocs {
	struct ks_cu_alloc *a;            /* owned */
	size_t n, cap;
};

/* Records [base, base + size).  An allocation that overlaps older ones
 * replaces them (the driver reused the range: their frees were not
 * seen).  -ENOMEM, or -EINVAL for size 0. */
int ks_cu_allocs_add(struct ks_cu_allocs *m, uint64_t base, uint64_t size,
		     enum ks_cu_alloc_kind kind);
/* Forgets the allocation starting at base; whether there was one. */
bool ks_cu_allocs_remove(struct ks_cu_allocs *m, uint64_t base);
/* The allocation containing addr, or NULL.  Valid until the next add or
 * remove. */
const struct ks_cu_alloc *ks_cu_allocs_find(const struct ks_cu_allocs *m, uint64_t addr);
void ks_cu_allocs_free(struct ks_cu_allocs *m);

/* ------------------------------------------------------------------ */
/* Parameters (cuda_params.c)                                          */
/* ------------------------------------------------------------------ */

/* One parameter of a kernel, as cuFuncGetParamInfo gives it. */
struct ks_cu_param {
	uint32_t offset, size;            /* in the packed parameter image */
};

/* One word of the parameter image that points into a device allocation. */
struct ks_cu_ptr {
	unsigned param;                   /* which parameter */
	uint32_t at;                      /* its byte offset inside that
	                                     parameter (0 for a plain pointer;
	                                     more inside a structure) */
	uint64_t value;                   /* the address */
	uint64_t base, size;              /* the allocation it points into */
	enum ks_cu_alloc_kind kind;
};

/* Finds the allocation containing addr: *base, *size, *kind; false when
 * none.  The backend's lookup consults its map, then the driver. */
typedef bool (*ks_cu_lookup_fn)(void *ctx, uint64_t addr, uint64_t *base, uint64_t *size,
				enum ks_cu_alloc_kind *kind);

/* Classifies a launch's parameters: every 8-byte-aligned 8-byte word of
 * every parameter at least 8 bytes long (the image's offsets are the
 * device's: pointers inside structures are 8-byte aligned there) whose
 * value lookup() places in an allocation.  Null and small values are not
 * looked up.  Writes up to max entries into out and returns how many
 * there were in all (more than max: out holds the first max).  -EINVAL
 * when a parameter lies outside the image. */
long ks_cu_params_classify(const struct ks_cu_param *params, unsigned nparams,
			   const unsigned char *image, size_t image_len, ks_cu_lookup_fn lookup,
			   void *ctx, struct ks_cu_ptr *out, size_t max);

/* The distinct allocations of ptrs (n entries) into bases (their
 * indexes into ptrs of the first pointer into each, in order of first
 * appearance); returns how many. */
size_t ks_cu_ptrs_distinct(const struct ks_cu_ptr *ptrs, size_t n, size_t *first);

/* ------------------------------------------------------------------ */
/* Executables (cuda_elf.c)                                            */
/* ------------------------------------------------------------------ */

/* Whether the ELF file path has a section called name (".nv_fatbin":
 * nvcc's device code, so the program is a CUDA program).  0 no, 1 yes,
 * negative errno when the file cannot be read or is not a 64-bit ELF
 * file. */
int ks_cu_elf_has_section(const char *path, const char *name);

/* ------------------------------------------------------------------ */
/* Graphs (cuda_gorder.c)                                              */
/* ------------------------------------------------------------------ */

/* An order in which a CUDA graph's n nodes can run one after another:
 * every edge's from-node before its to-node (m edges, as node indexes).
 * Ties go to the lower index, so nodes keep the driver's order where the
 * edges allow.  Writes the node indexes into order[0..n) and returns 0;
 * -1 when an edge names no node, the edges make a cycle, or memory runs
 * out. */
int ks_cu_graph_order(size_t n, const size_t *from, const size_t *to, size_t m,
		      size_t *order);

#endif
