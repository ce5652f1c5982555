/*
 * The heap map of kscope memcheck --heap-map: what libkscope-mcheap.so
 * (mcheap.c), preloaded into the program under Memcheck, writes, and what
 * kscope reads back (src/memtools/mcxml/mcx_heapmap.c).  Both sides
 * include this header; it is the whole contract between them.
 *
 * Each process image writes RUN/heapmap.<pid>.log: a header record, then
 * one record per change of the heap (a block allocated, a block freed),
 * in the order the changes took effect, numbered by event (a realloc that
 * moves a block is one event of two records: the free, then the
 * allocation).  The file grows in chunks and ends with zeros: a record of
 * sequence number 0 is the end (the last slot of each chunk holds NEXT,
 * or LOST).  A LOST record says that the events from
 * its number on are not in the log (the file could not grow).
 *
 * Into Memcheck's XML the library writes markers with VALGRIND_PRINTF, in
 * order with Memcheck's <error> elements (Memcheck writes both as they
 * happen, on one stream):
 *
 *     <clientmsg><tid>T</tid><text>kscope-heapmap PID SEQ b</text></clientmsg>
 *         the errors since the previous marker happened with the heap as
 *         the events before SEQ left it;
 *     ... PID SEQ d
 *         the errors since the previous marker happened while thread T was
 *         in allocation function call SEQ: those of thread T itself before
 *         its change (Memcheck checks a call before it acts on it), those
 *         of another thread before or after it;
 *     ... PID SEQ u
 *         the errors so far happened before the log started (in the
 *         dynamic linker or the C library's start-up): the heap then is
 *         not known.
 *
 * Errors after the last marker happened with the heap as the whole log
 * leaves it.  docs/memtools.md ("Heap map") says why this is exact.
 */
#ifndef KS_MCHEAP_H
#define KS_MCHEAP_H

#include <stdint.h>

#define KS_MCHEAP_MAGIC "kscope-heapmap"   /* the markers' first word */
#define KS_MCHEAP_MAGIC64 0x70616d686563736bull /* the header's caller: "kscehmap" */
#define KS_MCHEAP_VERSION 1
#define KS_MCHEAP_ENV "KSCOPE_MC_HEAPMAP"  /* "1": the library logs */
/* Records per chunk: the file grows by this many at a time (a multiple of
 * 512, so that every chunk starts on a page). */
#define KS_MCHEAP_CHUNK_RECS 65536u

enum ks_mcheap_type {
	KS_MCHEAP_HEADER = 1,  /* the first record: seq 0, addr = pid, size = version,
				* caller = KS_MCHEAP_MAGIC64 */
	KS_MCHEAP_ALLOC,       /* addr, size, caller, fn */
	KS_MCHEAP_FREE,        /* addr (a block's start, or anything a program freed), fn */
	KS_MCHEAP_LOST,        /* the events from seq on were not logged: fn says
				* why (enum ks_mcheap_lost), size which function */
	KS_MCHEAP_NEXT,        /* a chunk's last slot: the log goes on in the next chunk */
};

/* Why a log is LOST from an event on. */
enum ks_mcheap_lost {
	KS_MCHEAP_LOST_FULL,   /* the file could not grow */
	KS_MCHEAP_LOST_EARLY,  /* more events before the log began than were kept */
	KS_MCHEAP_LOST_OWN,    /* the program defines its own allocation function,
				* KS_MCHEAP_NAMES' size-th: its calls never reach
				* the wrappers (a record at seq 1) */
};

/* The functions wrapped, by their exported names (the C++ operators'
 * LP64 manglings): X(name) for each, in a fixed order. */
#define KS_MCHEAP_NAMES(X)                                                        \
	X(malloc) X(calloc) X(realloc) X(reallocarray) X(free) X(memalign)         \
	X(posix_memalign) X(aligned_alloc) X(valloc) X(pvalloc)                   \
	X(_Znwm) X(_ZnwmRKSt9nothrow_t) X(_ZnwmSt11align_val_t)                    \
	X(_ZnwmSt11align_val_tRKSt9nothrow_t) X(_Znam) X(_ZnamRKSt9nothrow_t)      \
	X(_ZnamSt11align_val_t) X(_ZnamSt11align_val_tRKSt9nothrow_t)              \
	X(_ZdlPv) X(_ZdlPvRKSt9nothrow_t) X(_ZdlPvSt11align_val_t)                 \
	X(_ZdlPvSt11align_val_tRKSt9nothrow_t) X(_ZdlPvm) X(_ZdlPvmSt11align_val_t) \
	X(_ZdaPv) X(_ZdaPvRKSt9nothrow_t) X(_ZdaPvSt11align_val_t)                 \
	X(_ZdaPvSt11align_val_tRKSt9nothrow_t) X(_ZdaPvm) X(_ZdaPvmSt11align_val_t)

/* The allocation functions, as the reports name them. */
enum ks_mcheap_fn {
	KS_MCHEAP_MALLOC,
	KS_MCHEAP_CALLOC,
	KS_MCHEAP_REALLOC,
	KS_MCHEAP_REALLOCARRAY,
	KS_MCHEAP_MEMALIGN,
	KS_MCHEAP_POSIX_MEMALIGN,
	KS_MCHEAP_ALIGNED_ALLOC,
	KS_MCHEAP_VALLOC,
	KS_MCHEAP_PVALLOC,
	KS_MCHEAP_FREE_FN,
	KS_MCHEAP_NEW,            /* operator new, any variant */
	KS_MCHEAP_NEW_ARRAY,      /* operator new[], any variant */
	KS_MCHEAP_DELETE,
	KS_MCHEAP_DELETE_ARRAY,
	KS_MCHEAP_NFN
};

/* One record (the file's byte order is the machine's). */
struct ks_mcheap_rec {
	uint64_t seq;     /* event number from 1; 0 in the header, and past the end */
	uint64_t addr;    /* ALLOC, FREE: KS_MCHEAP_HIDE(the block's address) */
	uint64_t size;
	uint64_t caller;  /* ALLOC: the return address into the allocation's caller */
	uint16_t type;    /* enum ks_mcheap_type */
	uint16_t fn;      /* enum ks_mcheap_fn */
	uint32_t check;   /* ks_mcheap_check() of the fields above */
};

/* The log holds no pointer to a block: Memcheck's leak check reads all
 * the program's memory, the log's mapping included, and a block whose
 * address were there would never be lost.  So addresses are stored
 * complemented (no heap address complemented is one). */
#define KS_MCHEAP_HIDE(a) (~(uint64_t)(a))

_Static_assert(sizeof(struct ks_mcheap_rec) == 40, "heap map records are 40 bytes");
_Static_assert((KS_MCHEAP_CHUNK_RECS * sizeof(struct ks_mcheap_rec)) % 4096 == 0,
	       "chunks start on a page");

/* A record's check value: a stray write of the program into the log's
 * mapping (a far overflow can reach anything mapped) shows as a
 * mismatch, and the reader stops trusting the log there. */
static inline uint32_t ks_mcheap_check(const struct ks_mcheap_rec *r)
{
	uint64_t h = 0x9e3779b97f4a7c15ull;

	h = (h ^ r->seq) * 0xff51afd7ed558ccdull;
	h = (h ^ r->addr) * 0xc4ceb9fe1a85ec53ull;
	h = (h ^ r->size) * 0xff51afd7ed558ccdull;
	h = (h ^ r->caller) * 0xc4ceb9fe1a85ec53ull;
	h = (h ^ ((uint64_t)r->type << 16 | r->fn)) * 0xff51afd7ed558ccdull;
	return (uint32_t)(h ^ (h >> 32)) | 1u; /* never 0: a zeroed record fails */
}

#endif
