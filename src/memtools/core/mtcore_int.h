/*
 * Private declarations of the memory-tool core (src/memtools/core), shared
 * by its files and included by nothing else: the counted allocation
 * helpers, the two-level table both shadows are built on, the line
 * shadow's SMU layout and struct ks_mt itself.  Like the rest of the core
 * it is freestanding: no libc beyond <stddef.h>, <stdint.h>, <stdbool.h>.
 */
#ifndef KS_MTCORE_INT_H
#define KS_MTCORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mtcore.h"

/* Keeps a slow path out of the function that calls it, so that the
 * caller's fast path does not pay for the slow path's registers. */
#if defined(__GNUC__)
#define KS_MT_NOINLINE __attribute__((noinline))
#else
#define KS_MT_NOINLINE
#endif

/* ------------------------------------------------------------------ */
/* Allocation, counted                                                 */
/* ------------------------------------------------------------------ */

/* Every allocation of the core goes through these so that *bytes always
 * holds what is outstanding (ks_mt_shadow_bytes). */
void *ks_mt_mem_zalloc(const struct ks_mt_alloc *a, size_t *bytes, size_t size);
void ks_mt_mem_free(const struct ks_mt_alloc *a, size_t *bytes, void *p,
		    size_t size);
/* The same with the returned block aligned to 64 bytes, so that what it
 * holds starts a cache line (padded SMUs, isolated counters).  The
 * allocator promises no alignment, so these over-allocate and keep the
 * allocator's pointer just below the aligned one. */
void *ks_mt_mem_zalloc64(const struct ks_mt_alloc *a, size_t *bytes, size_t size);
void ks_mt_mem_free64(const struct ks_mt_alloc *a, size_t *bytes, void *p,
		      size_t size);

/* ------------------------------------------------------------------ */
/* Two-level table (shadow.c)                                          */
/* ------------------------------------------------------------------ */

/* Client addresses below 2^37 (where Valgrind places amd64 clients, and
 * memcheck's primary map ends) are found through one directly indexed
 * array; anything above through a small hash table, so that any address
 * works.  A chunk covers 2^shift bytes of client address; its index is
 * addr >> shift.  A front-end whose program lives anywhere in user space
 * (native processes: 2^47 on amd64) asks for a larger direct range
 * (ks_mt_config.direct_bits); the array is then large in address space
 * but only its pages holding chunk pointers are ever touched, and the
 * summary bitmap l1_used (one bit per KS_MT_TAB_PAGE entries) lets the
 * walks skip the rest. */
#define KS_MT_TAB_DIRECT_BITS 37
#define KS_MT_TAB_PAGE 512u /* l1 entries per bit of l1_used: 4 KiB of pointers */

struct ks_mt_tab_ent {
	uintptr_t key;  /* chunk index; 0 = empty slot (index 0 is always direct) */
	void *chunk;
};

struct ks_mt_tab {
	void **l1;                 /* l1_n chunk pointers, NULL = absent; set
				      once, by compare-and-swap */
	uintptr_t l1_n;            /* chunk indexes below this are direct */
	uint64_t *l1_used;         /* bit p: some l1[p * KS_MT_TAB_PAGE ...] set */
	size_t l1_used_words;
	struct ks_mt_tab_ent *h;   /* open addressing, linear probing */
	size_t hcap, hn;           /* slots (a power of two, or 0) and used */
	unsigned shift;            /* log2 of client bytes per chunk */
	size_t chunk_bytes;        /* shadow bytes per chunk (64-byte aligned) */
	const struct ks_mt_alloc *alloc;
	size_t *bytes;             /* the owner's shadow-byte count */
};

/* 0 or -12.  The direct array (client addresses below 2^direct_bits) is
 * allocated here, once. */
int ks_mt_tab_init(struct ks_mt_tab *t, const struct ks_mt_alloc *a,
		   size_t *bytes, unsigned shift, size_t chunk_bytes,
		   unsigned direct_bits);
/* fn (may be NULL) sees each chunk before it is freed, in no order. */
void ks_mt_tab_fini(struct ks_mt_tab *t,
		    void (*fn)(void *arg, uintptr_t cidx, void *chunk), void *arg);
/* The chunk of a chunk index above the direct range, or NULL. */
void *ks_mt_tab_hget(const struct ks_mt_tab *t, uintptr_t cidx);
/* The chunk of cidx, allocated (zeroed) if absent; NULL when out of
 * memory.  Within the direct range several threads may call it at once
 * (the chunk is published by compare-and-swap; a loser frees its own);
 * the hash range is single-threaded. */
void *ks_mt_tab_make(struct ks_mt_tab *t, uintptr_t cidx);
/* Calls fn for every chunk in increasing index (= address) order. */
void ks_mt_tab_for_each(const struct ks_mt_tab *t,
			void (*fn)(void *arg, uintptr_t cidx, void *chunk),
			void *arg);

/* A direct chunk pointer (cidx < l1_n), or NULL.  An acquire load: a
 * chunk published by another thread is seen zeroed, not half made (a
 * plain load on amd64). */
static inline void *ks_mt_tab_direct(const struct ks_mt_tab *t, uintptr_t cidx)
{
	return __atomic_load_n(&t->l1[cidx], __ATOMIC_ACQUIRE);
}

/* The lookup on every access: one compare and one load for the direct
 * range. */
static inline void *ks_mt_tab_get(const struct ks_mt_tab *t, uintptr_t cidx)
{
	if (cidx < t->l1_n)
		return ks_mt_tab_direct(t, cidx);
	return ks_mt_tab_hget(t, cidx);
}

/* ------------------------------------------------------------------ */
/* The line shadow                                                     */
/* ------------------------------------------------------------------ */

/* Client bytes per line-shadow chunk: 256 KiB, so the direct array is
 * 2^(37-18) pointers = 4 MiB and a chunk holds 16..16384 SMUs. */
#define KS_MT_CHUNK_SHIFT 18

/* Thread ids 0..62 own a bit of the inline word; bit 63 says that some
 * thread >= 63 holds a copy, recorded in the extension bitmap.  So the
 * common test ("do I hold it alone?") stays one compare whatever the
 * number of threads, and the ext summary bit keeps it correct. */
#define KS_MT_INLINE_TIDS 63u
#define KS_MT_OWN_EXT (UINT64_C(1) << 63)

/* The contention part of an SMU: 24 bytes. */
struct ks_mt_smu {
	uint64_t own;      /* copies: bit t for t < 63, bit 63 = see ext */
	uint64_t *ext;     /* ext_words words, bit t = thread t (t >= 63 used);
			      NULL until a thread >= 63 touches the line */
	uint32_t misses;   /* bitmap-method misses on this line, saturating */
	uint32_t invals;   /* invalidations, saturating */
};

/* The ownership word of an SMU.  Front-ends with parallel threads read it
 * without the line's lock (ks_mt_own_word), so it is always stored and,
 * outside the hit test, loaded atomically (relaxed: plain moves on amd64
 * and arm64). */
static inline uint64_t ks_mt_own_load(const struct ks_mt_smu *s)
{
	return __atomic_load_n(&s->own, __ATOMIC_RELAXED);
}

static inline void ks_mt_own_store(struct ks_mt_smu *s, uint64_t v)
{
	__atomic_store_n(&s->own, v, __ATOMIC_RELAXED);
}

struct ks_mt_detail;

/* With falseshare the SMU also holds what the first thread did until a
 * second thread arrives; then a struct ks_mt_detail takes over and the
 * owner fields are dead.  64 bytes: the owner's tid is packed above its
 * read count rather than spending a word on it. */
struct ks_mt_smu_fs {
	struct ks_mt_smu c;
	uint64_t rmask, wmask;  /* words the first thread read / wrote */
	uint64_t rt;            /* bits 0..47: its reads (saturating); 48..59:
				   its tid; bit 63: KS_MT_FS_SHARED */
	uint64_t writes;        /* its writes */
	union {
		struct ks_mt_site *site;   /* its first site (not shared) */
		struct ks_mt_detail *d;    /* shared: everything per thread */
	} u;
};

#define KS_MT_FS_READS ((UINT64_C(1) << 48) - 1)
#define KS_MT_FS_TID_SHIFT 48
#define KS_MT_FS_SHARED (UINT64_C(1) << 63)

/* Per-line state of a line two or more threads touched.  Both arrays are
 * kept in the order the report wants (threads by tid; sites by tid, then
 * first seen), so reporting needs no sorting. */
struct ks_mt_detail {
	struct ks_mt_line_thread *thr;
	unsigned nthr, cthr;        /* used, capacity */
	struct ks_mt_line_site *site;
	unsigned nsite, csite;
	unsigned nnamed;            /* entries with a site: <= KS_MT_MAX_LINE_SITES */
	unsigned thint, shint;      /* last entries used: threads repeat */
};

/* Counter fields of one thread, in struct ks_mt_counts order. */
enum { KS_MT_F_ACC, KS_MT_F_RD, KS_MT_F_WR, KS_MT_F_COLD, KS_MT_F_MISS,
       KS_MT_F_INV, KS_MT_NFIELDS };

struct ks_mt {
	struct ks_mt_alloc alloc;
	size_t bytes;              /* shadow bytes outstanding */
	struct ks_mt_tab tab;
	struct ks_mt_config cfg;
	unsigned line_shift;       /* log2 line_size */
	unsigned word_shift;       /* log2 word size */
	unsigned lc_shift;         /* log2 lines per chunk */
	uintptr_t lc_mask;         /* lines per chunk - 1 */
	size_t smu_size;           /* bytes per SMU, padded or not */
	unsigned ext_words;        /* uint64_t words of an extension bitmap */
	unsigned nseen;            /* highest tid seen + 1 */
	/* Thread counters: thread t's field f is cnt[t][f * stride] where
	 * cnt[t] = blk[t] (isolation, stride 1) or ileave + t (interleaved,
	 * stride max_threads). */
	uint64_t **blk;            /* isolation: per-thread 64-byte blocks */
	uint64_t *ileave;          /* interleaved: NFIELDS * max_threads */
	size_t stride;
};

/* falseshare.c: what tid did to a line whose SMU is shared or becomes
 * shared by this access (f's owner is not tid).  mask = words touched. */
void ks_mt_fs_record(struct ks_mt *m, struct ks_mt_smu_fs *f, unsigned tid,
		     bool write, uint64_t mask, struct ks_mt_site *site);
/* falseshare.c: ks_mt_add_quiet for a shared line. */
void ks_mt_fs_add(struct ks_mt *m, struct ks_mt_smu_fs *f, unsigned tid,
		  bool write, struct ks_mt_site *site, uint64_t n, uint64_t words);
/* falseshare.c: frees f's detail, if any. */
void ks_mt_fs_free(struct ks_mt *m, struct ks_mt_smu_fs *f);

#endif
