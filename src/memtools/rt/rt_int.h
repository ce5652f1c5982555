/*
 * Private interface between the files of libkscope-mt.so (mtrt.h says
 * what the library is): its state, the per-thread state with the shadow
 * call stack and the quiet cache, the line locks, the internal
 * allocator, contexts, sites, heap blocks, data objects, module symbols
 * and the findings writer.  Nothing outside src/memtools/rt includes it.
 *
 * The state is global (struct rt_state rt, rt_self per thread): the
 * instrumentation interface is a set of functions the compiler calls with
 * no context argument, and a preloaded library has no other place for it.
 *
 * Locks, in the order they may be taken: a line lock (two for an access
 * crossing lines, lower index first), then the context, object, heap,
 * module or registry lock, then the allocator's.  Nothing takes a line
 * lock while it holds any other.
 */
#ifndef KS_RT_INT_H
#define KS_RT_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "mtcore.h"
#include "mtrt.h"

#define RT_EXPORT __attribute__((visibility("default")))
/* The runtime's own globals: reached directly, not through the GOT. */
#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_LIKELY(x) __builtin_expect(!!(x), 1)
#define RT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RT_PC() ((uintptr_t)__builtin_return_address(0))

/* User space: below 2^47 on amd64 (4-level page tables), 2^48 on arm64.
 * All of it is the core's direct range (mtcore.h, Concurrency); an
 * access above (a mapping the program asked for there, on a 5-level
 * machine) is counted, not simulated. */
_Static_assert(sizeof(void *) == 8, "the compiled front end runs 64-bit programs");
#if defined(__x86_64__)
#define RT_DIRECT_BITS 47
#else
#define RT_DIRECT_BITS 48
#endif

/* ------------------------------------------------------------------ */
/* Locks                                                               */
/* ------------------------------------------------------------------ */

/* A spin lock that yields the processor after a while: threads may
 * outnumber cores (300 threads on 2), and a holder that was preempted
 * must get to run. */
struct rt_lock {
	int v;
};

void rt_lock_spin(struct rt_lock *l);

static inline void rt_lock_take(struct rt_lock *l)
{
	if (RT_UNLIKELY(__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE)))
		rt_lock_spin(l);
}

static inline void rt_lock_give(struct rt_lock *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}

/* Takes the lock unless that takes longer than about a second (a holder
 * that will never give it back: the thread finishing the process
 * interrupted it).  Whether it was taken. */
bool rt_lock_take_bounded(struct rt_lock *l);

/* The line locks: a line's SMU and falseshare detail are changed under
 * the lock of its group (mtcore.h, Concurrency).  Each lock has a cache
 * line of its own, so that the locks do not share lines themselves. */
#define RT_NLOCK_BITS 10
#define RT_NLOCKS (1u << RT_NLOCK_BITS)

struct rt_line_lock {
	struct rt_lock l;
	char pad[64 - sizeof(struct rt_lock)];
} __attribute__((aligned(64)));

extern RT_HIDDEN struct rt_line_lock rt_line_locks[RT_NLOCKS];

static inline unsigned rt_lock_index(uintptr_t line)
{
	return (unsigned)(((uint64_t)line * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - RT_NLOCK_BITS));
}

/* ------------------------------------------------------------------ */
/* Internal allocator (rt_alloc.c)                                     */
/* ------------------------------------------------------------------ */

/* Zeroed memory that never comes from the program's malloc (which the
 * runtime wraps, rt_heap.c), or NULL.  rt_free takes the size back. */
void *rt_zalloc(size_t size);
void rt_free(void *p, size_t size);
char *rt_strdup(const char *s);
void rt_alloc_lock_all(void);   /* around fork */
void rt_alloc_unlock_all(void);
/* The core's allocator (struct ks_mt_alloc) on top of these. */
extern RT_HIDDEN const struct ks_mt_alloc rt_core_alloc;

/* ------------------------------------------------------------------ */
/* Configuration and the process                                       */
/* ------------------------------------------------------------------ */

enum rt_analysis { RT_CONTENTION, RT_FALSESHARE };

struct rt_state {
	/* From KSCOPE_MT_DIR and KSCOPE_MT_OPTIONS (mtrt.h). */
	enum rt_analysis analysis;
	unsigned line_size, line_shift;
	uintptr_t line_mask;       /* line_size - 1 */
	unsigned word_shift;       /* log2 of the falseshare word */
	unsigned min_accesses, num_callers;
	unsigned min_writes;       /* ks_mt_config.min_writes */
	bool min_write, pad_smu, thread_isolation;
	bool falseshare;
	char dir[PATH_MAX];

	bool armed;                /* the variables were there: part of a run */
	bool active;               /* instrumented code called __tsan_init */
	bool finished;             /* the process's findings are written */
	bool segment_open;         /* a start record without its end record */
	struct ks_mt *mt;          /* the analysis core, once active */
	struct ks_mt_own_map own_map; /* where the core's ownership words are
					 (rt_access), once active */
	pid_t pid, ppid;
	char *exe;                 /* /proc/self/exe */
	char **argv;               /* /proc/self/cmdline, internal memory */
	int argc;
	int exit_code;             /* exit status, when exit_seen */
	bool exit_seen;
};

extern RT_HIDDEN struct rt_state rt;

/* Reads the configuration and registers the main thread; called once,
 * from the library's constructor or from whichever entry point comes
 * first. */
void rt_init(void);
/* Makes the analysis run (__tsan_init): the core, the start record. */
void rt_activate(void);
/* Writes the rest of the process's findings, once: at exit, _exit,
 * _Exit and quick_exit (rt_main.c). */
void rt_finish(void);
/* The findings file of this process, open for appending; -1 on error. */
int rt_open_findings(void);

/* ------------------------------------------------------------------ */
/* Threads and the shadow call stack (rt_thread.c)                     */
/* ------------------------------------------------------------------ */

/* The shadow call stack: the return address given to each
 * __tsan_func_entry, a ring of the innermost RT_STACK_N frames (deeper
 * recursion overwrites the outermost ones; contexts need at most 64). */
#define RT_STACK_BITS 8
#define RT_STACK_N (1u << RT_STACK_BITS)
struct rt_stack {
	unsigned depth;
	uintptr_t pc[RT_STACK_N];
};

/* The quiet cache: per thread, entries that the analysis said the thread
 * may repeat with nothing changing but counts, as long as the line's
 * ownership word says it still holds the line (ks_mt_own_word): found
 * inline from the address through the core's own map
 * (ks_mt_own_find), not kept in the entry, so that the word's load does
 * not wait for the entry's.  Contention's counts are the thread's and the
 * site's alone, so its entries are (site, read or write): one per access
 * instruction, whatever lines it touches, a table that stays small and in
 * cache.  Falseshare also needs each line's words and, on a shared line,
 * the counts of each (thread, site): its entries are (line, read or
 * write, site), in slots chosen so that one instruction's successive
 * lines sit in successive slots (a thread streaming through memory walks
 * its table in order instead of missing the cache and the TLB at every
 * line).  The table is made of sets of two entries (one cache line):
 * a new entry takes a set's first way and pushes the first way's entry
 * to the second, so two entries that meet in one set (two sites
 * streaming in step) both stay.  A hit costs the set, two loads for the
 * shared word and two stores into the thread's own memory; the counts go to the core (for
 * falseshare through the pending log) when the entry is replaced.  The
 * table starts at RT_QN_MIN entries and doubles, up to RT_QN_MAX (and
 * RT_QBYTES_MAX for all threads), each time the thread has replaced as
 * many entries as it has: a thread that keeps coming back to a working set
 * larger than its table (a matrix tile, an unrolled loop's many
 * instructions on the same lines) gets one that holds it. */
#define RT_QN_MIN 2048u
#define RT_QN_MAX 262144u
/* All threads' tables together grow no further than this: a program of
 * many threads that each sweep large data must not pay 8 MiB a thread. */
#define RT_QBYTES_MAX ((size_t)256 << 20)
/* An empty entry: pc 0, which no instruction has.  So a fresh table is
 * zero memory, whose pages cost nothing until a thread's accesses spread
 * over them. */
#define RT_QNONE 0

struct rt_site;

/* Half a cache line: a set is two. */
struct rt_qent {
	uintptr_t key;             /* rt_qkey */
	uintptr_t pc;              /* the site; RT_QNONE: empty */
	uint64_t n;                /* accesses taken, not yet credited */
	uint64_t words;            /* words they touched (falseshare) */
};

/* An entry's key: the line (falseshare; 0 for contention, whose entries
 * are per site) and whether it writes. */
static inline uintptr_t rt_qkey(uintptr_t line, bool write)
{
	return line << 1 | (uintptr_t)write;
}

/* The pending log: per thread, the counts of quiet entries that left the
 * quiet cache, handed to the core a batch at a time -- sorted by line
 * lock, each lock taken once per batch (none at all for contention,
 * whose quiet counts are the thread's and the site's own).  Deferring
 * them changes nothing the core decides: misses and invalidations come
 * from the ownership words alone, and the counts and word masks are only
 * read for the report.  Appending is a sequential write, cheap even when
 * a thread streams through memory and every line leaves the cache. */
#define RT_PN 4096u

struct rt_pend {
	uintptr_t line;
	uintptr_t pc;
	struct rt_site *site;
	uint64_t words;
	uint64_t n;                /* accesses; 0 once credited */
	uint32_t write;
	uint32_t unused;
};

struct rt_thread {
	struct rt_qent *q;         /* qmask + 1 entries, or rt_q_none */
	struct rt_qent *own_q;     /* the thread's table (q unless diverted) */
	uintptr_t qmask;           /* slots - 1 (sets of 2); read before q
				      (growth) */
	uint64_t qevict;           /* entries replaced since the last growth */
	struct rt_stack *stk;      /* the current shadow stack (a fiber's) */
	uint64_t bit;              /* 1 << tid for tid < 63, else 0 */
	unsigned tid;
	int ignore;                /* __tsan_ignore_thread_begin nesting */
	int in_rt;                 /* inside the slow path (signal handlers) */
	bool dead;
	uint64_t deferred_r, deferred_w; /* accesses of signal handlers
					    that interrupted the slow path */
	struct rt_site **smap;     /* sites by pc, open addressing */
	size_t scap, sn;
	struct rt_pend *pend;      /* RT_PN entries, made on first need */
	unsigned pn;               /* entries used */
	bool crediting;            /* the core is being given pending counts */
	struct rt_thread *next;    /* every thread of the process */
	struct rt_stack own_stk;
};

extern __thread struct rt_thread *rt_self __attribute__((tls_model("initial-exec")));

/* Sets up the thread registry (from rt_init, single-threaded). */
void rt_threads_init(void);
/* The calling thread's state, registered now if it is not (a thread the
 * program made without pthread_create); NULL when not armed or out of
 * memory. */
struct rt_thread *rt_thread_adopt(void);
/* A new thread's state, numbered in creation order; NULL out of memory. */
struct rt_thread *rt_thread_new(void);
/* The thread is ending: its quiet cache is credited and dropped. */
void rt_thread_end(struct rt_thread *t);
/* Credits every pending entry of t's quiet cache. */
void rt_thread_flush(struct rt_thread *t);
/* Every thread, for reporting (the list only grows). */
struct rt_thread *rt_threads(void);
unsigned rt_threads_made(void);
/* Points q at rt_q_none or back at the thread's table as ignore and
 * dead say. */
void rt_thread_divert(struct rt_thread *t);
void rt_threads_lock(void);
void rt_threads_unlock(void);
/* In a forked child: only the calling thread lives. */
void rt_threads_after_fork(void);

/* ------------------------------------------------------------------ */
/* Contexts and sites (rt_access.c)                                    */
/* ------------------------------------------------------------------ */

/* An interned stack: the innermost frame first.  Never freed. */
struct rt_ctx {
	struct rt_ctx *next;       /* hash chain */
	uint64_t hash;
	uint32_t id;               /* 1, 2, ...: its stack record's id */
	uint32_t n;
	int written;               /* its stack record is in the file */
	uintptr_t pc[];
};

/* The calling thread's current stack with pc as its innermost frame,
 * at most num_callers frames; NULL out of memory. */
struct rt_ctx *rt_ctx_here(struct rt_thread *t, uintptr_t pc);
/* Every context, in no order. */
void rt_ctx_for_each(void (*fn)(void *arg, struct rt_ctx *c), void *arg);
uint32_t rt_ctx_count(void);

/* A memory-access instruction of the program, per thread (so that the
 * core's per-site counts are only ever changed by one thread). */
struct rt_site {
	struct ks_mt_site s;       /* s.user = this */
	uintptr_t pc;
	struct rt_ctx *first;      /* the stack of its first access */
	struct rt_thread *thr;
};

/* The slow path of every access: the core, the quiet cache, the charge
 * to the data object.  t may be NULL (not registered yet). */
void rt_access_slow(struct rt_thread *t, uintptr_t a, unsigned size, bool write,
		    uintptr_t pc);
/* An access of any size, one call per line it covers, never cached. */
void rt_access_range(uintptr_t a, size_t size, bool write, uintptr_t pc);
/* Moves one quiet entry's counts into its thread's pending table (or,
 * for contention, to the core) and zeroes them. */
void rt_qent_credit(struct rt_thread *t, struct rt_qent *e);

/* Hands t's pending counts to the core and empties the log (t may be
 * another thread: at the end, or in a forked child). */
void rt_pend_flush(struct rt_thread *t);
void rt_lines_lock_all(void);   /* around fork and reporting */
void rt_lines_unlock_all(void);
void rt_ctx_lock(void);
void rt_ctx_unlock(void);
/* The core's context callback (ks_mt_config.context). */
void *rt_site_context(void *ctx, unsigned tid, struct ks_mt_site *site);

/* Word bits first..last of an access of size bytes at line offset off. */
static inline uint64_t rt_words(uintptr_t off, unsigned size)
{
	unsigned a = (unsigned)(off >> rt.word_shift);
	unsigned b = (unsigned)((off + size - 1) >> rt.word_shift);

	return (~UINT64_C(0) >> (63 - b)) & (~UINT64_C(0) << a);
}

/* The first slot of (key, pc)'s set: a hash of the site and of the
 * key's run of RT_QRUN keys (32 lines: 2 KiB of data, 4 KiB of table),
 * plus the key's place in its run, so that a site's entries for successive lines are
 * neighbours (the read and the write entry of one line too) while runs
 * land anywhere (whole windows of two sites streaming in step never
 * overlap systematically).  Contention's keys are 0 and 1: a slot per
 * site, and its neighbour. */
#define RT_QRUN 64u
static inline uintptr_t rt_qslot(uintptr_t key, uintptr_t pc, uintptr_t mask)
{
	uint64_t h = (uint64_t)pc * UINT64_C(0x9E3779B97F4A7C15) ^
		     (uint64_t)(key / RT_QRUN) * UINT64_C(0xC2B2AE3D27D4EB4F);

	return (((uintptr_t)(h >> 32) + (key & (RT_QRUN - 1))) << 1) & mask;
}

/* Every plain access: the quiet cache, else the slow path. */
static inline __attribute__((always_inline)) void rt_access(uintptr_t a, unsigned size,
							   bool write, uintptr_t pc)
{
	struct rt_thread *t = rt_self;

	if (RT_LIKELY(t != NULL)) {
		uintptr_t line = a >> rt.line_shift, off = a & rt.line_mask;
		uintptr_t key = rt_qkey(rt.falseshare ? line : 0, write);
		uintptr_t mask = __atomic_load_n(&t->qmask, __ATOMIC_ACQUIRE);
		struct rt_qent *e = &t->q[rt_qslot(key, pc, mask)];
		const uint64_t *ow = ks_mt_own_find(&rt.own_map, line);

		if (e->key != key || e->pc != pc)
			e++; /* the set's second way */
		if (e->key == key && e->pc == pc && off + size <= rt.line_size && ow) {
			uint64_t own = __atomic_load_n(ow, __ATOMIC_RELAXED);

			if (write ? own == t->bit : (own & t->bit) != 0) {
				e->n++;
				if (rt.falseshare)
					e->words |= rt_words(off, size);
				return;
			}
		}
	}
	rt_access_slow(t, a, size, write, pc);
}

/* ------------------------------------------------------------------ */
/* Heap blocks and data objects (rt_heap.c)                            */
/* ------------------------------------------------------------------ */

struct rt_heap_stats {
	uint64_t allocs, frees, bytes, in_use_bytes, in_use_blocks;
};

void rt_heap_stats(struct rt_heap_stats *s);
void rt_heap_lock_all(void);
void rt_heap_unlock_all(void);
/* Resolves the allocation functions (once, before anything else). */
void rt_heap_init(void);

/* A data object: the heap blocks of one allocation context, or a global
 * (a symbol of a loaded module). */
struct rt_obj {
	struct rt_obj *next;       /* hash chain */
	struct rt_obj *next_heap;  /* every heap object, newest first */
	uintptr_t key;             /* allocation context, or symbol start | 1 */
	uint32_t id;
	bool heap;
	bool written;              /* its var record is in the file */
	uintptr_t addr;            /* first block seen, or the symbol */
	size_t size;
	size_t align;              /* heap: the alignment asked for, 0: malloc's */
	struct rt_ctx *alloc;      /* heap */
	const char *name, *objname; /* globals */
	uint64_t misses, invals;   /* charged at the events (atomic) */
};

/* The object of address a, made if new; NULL when a is in neither a
 * live block nor a known symbol. */
struct rt_obj *rt_obj_of(uintptr_t a);
/* The object of a line at the end: rt_obj_of, or a heap object whose
 * first block held a (freed since). */
struct rt_obj *rt_obj_of_line(uintptr_t a);
void rt_obj_for_each(void (*fn)(void *arg, struct rt_obj *o), void *arg);
void rt_obj_lock(void);
void rt_obj_unlock(void);

/* ------------------------------------------------------------------ */
/* Modules and their symbols (rt_sym.c)                                */
/* ------------------------------------------------------------------ */

/* The global data symbol holding a: its start, size, name and module
 * path (the strings live as long as the process).  Whether there is
 * one. */
bool rt_sym_data(uintptr_t a, uintptr_t *start, size_t *size, const char **name,
		 const char **obj);
/* The module holding code address pc: its path and pc's address in the
 * file (pc less the load bias).  Whether there is one. */
bool rt_sym_module(uintptr_t pc, const char **path, uintptr_t *off);
void rt_sym_lock(void);
void rt_sym_unlock(void);

/* ------------------------------------------------------------------ */
/* The findings file (rt_out.c)                                        */
/* ------------------------------------------------------------------ */

/* A buffered writer onto a descriptor. */
struct rt_out {
	int fd;
	size_t len;
	bool failed;
	char buf[65536];
};

void rt_out_printf(struct rt_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void rt_out_str(struct rt_out *o, const char *s); /* quoted, escaped */
void rt_out_flush(struct rt_out *o);
/* The stack record of c, once per segment; its id. */
uint32_t rt_out_stack(struct rt_out *o, struct rt_ctx *c);
/* A one-frame stack record at pc (a site); its id. */
uint32_t rt_out_stack_pc(struct rt_out *o, uintptr_t pc);
/* The records of the whole run so far: threads, sites, objects, lines,
 * the total (rt_main.c writes start and end around them). */
void rt_out_results(struct rt_out *o);
/* Forgets which stacks are written (a new segment). */
void rt_out_reset(void);

/* ------------------------------------------------------------------ */
/* The instrumentation interface's declarations (rt_iface.c,          */
/* rt_atomic.c), from the compilers' documented interface              */
/* ------------------------------------------------------------------ */

#include "rt_tsan.h"

#endif
