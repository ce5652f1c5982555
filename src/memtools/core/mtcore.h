/*
 * The freestanding analysis core of kscope's memory tools: shadow memory
 * and the per-line state machines behind `kscope contention` and
 * `kscope falseshare`.
 *
 * It is plain C11 with no library calls at all (not even memset or
 * memcpy: the Valgrind tool that hosts it cannot use libc), so the same
 * code can sit behind any instrumentation front-end: kscope's Valgrind
 * tool today, a compile-time instrumentation runtime later.  Memory comes
 * from the front-end through struct ks_mt_alloc; the core never prints.
 *
 * The line shadow (struct ks_mt) holds one shadow memory unit (SMU) per
 * cache line, in a two-level table whose second-level chunks are allocated
 * on first touch.  An SMU that was never touched is the paper's
 * "initialization probe": its first access is a cold miss.  Each SMU holds
 * the thread-ownership bitmap of the contention analysis and, for false
 * sharing, which words of the line each thread read and wrote (a word is
 * one byte on lines of up to 64 bytes; see ks_mt_word_size).
 *
 * Threads are small integers (the front-end's thread ids, 1-based in
 * Valgrind); any id below ks_mt_config.max_threads works, so there is no
 * 32- or 64-thread limit.
 *
 * Concurrency.  The core has no locks.  Under Valgrind one thread runs at
 * a time.  A front-end whose threads really run in parallel (kscope's
 * compiled front-end, src/memtools/rt) may call ks_mt_access,
 * ks_mt_add_quiet and ks_mt_add_hits from several threads at once when:
 *  - calls that touch the same line are serialized by the front-end (a
 *    lock per line, or per group of lines; an access crossing lines holds
 *    both);
 *  - thread tid's calls come from one thread at a time (its counter
 *    block is updated without atomics);
 *  - a struct ks_mt_site is used by one thread only (its counts likewise);
 *  - every address is below 2^direct_bits (a chunk of the direct table is
 *    published by compare-and-swap; the hash table above is not safe);
 *  - the allocator is thread-safe.
 * The thread count and the shadow-byte count are kept atomically; the
 * ownership word of a line may be read without the lock through
 * ks_mt_own_word.  Reporting (the counts, ks_mt_for_each_shared_line) is
 * for when every thread is stopped or holds still.
 */
#ifndef KS_MTCORE_H
#define KS_MTCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Memory for shadow tables.  zalloc returns zero-filled memory or NULL;
 * free gets back the same size it was allocated with. */
struct ks_mt_alloc {
	void *(*zalloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *p, size_t size);
	void *ctx;
};

/* ------------------------------------------------------------------ */
/* Line shadow: contention and false sharing                           */
/* ------------------------------------------------------------------ */

#define KS_MT_MAX_THREADS 4096 /* largest accepted max_threads */
#define KS_MT_MAX_DIRECT_BITS 48 /* largest accepted direct_bits */

struct ks_mt_site;

struct ks_mt_config {
	unsigned line_size;    /* bytes per line: a power of two, 16..4096 */
	unsigned max_threads;  /* thread ids are 0..max_threads-1; <= KS_MT_MAX_THREADS */
	bool falseshare;       /* keep per-word read/write state and per-site entries */
	/* The paper's three optimizations, switchable for the ablation
	 * benchmark (all true in normal use). */
	bool min_write;        /* test a shadow word before writing it */
	bool pad_smu;          /* round each SMU up to a multiple of 64 bytes */
	bool thread_isolation; /* per-thread counter blocks, each on its own
				  cache lines; false: counters of all threads
				  interleaved field by field */
	/* Sustained sharing: a line whose pairs say "false" is falsely
	 * shared only when one thread wrote it min_writes times and another
	 * accessed it as often; otherwise its verdict is KS_MT_READ_MOSTLY.
	 * 0: no such test (as before the option). */
	uint32_t min_writes;
	/* Called (from inside ks_mt_access) when the first access by a thread
	 * at a site to a line shared by two or more threads is seen, so the
	 * front-end can capture the access context (a call stack).  May be
	 * NULL; the returned pointer is stored in the entry as `context`. */
	void *(*context)(void *ctx, unsigned tid, struct ks_mt_site *site);
	void *context_ctx;
	/* Client addresses below 2^direct_bits find their shadow through one
	 * directly indexed table (8 bytes of address space per 256 KiB of
	 * client address, touched only where the client is); above, through
	 * a hash table.  0 means 37 (Valgrind's amd64 client space); a native
	 * amd64 process needs 47.  18..KS_MT_MAX_DIRECT_BITS. */
	unsigned direct_bits;
};

/* Event counts.  `accesses` counts accesses (an access spanning two lines
 * counts once); misses and invalidations are per line touched. */
struct ks_mt_counts {
	uint64_t accesses, reads, writes;
	uint64_t cold_misses;   /* first access to a line by any thread */
	uint64_t misses;        /* a thread without a copy reads or writes a line (not cold) */
	uint64_t invalidations; /* a write to a line other threads hold a copy of */
};

/* One memory-access instruction of the program.  The front-end allocates
 * it (zeroed) when it instruments the instruction and passes it to every
 * ks_mt_access from that instruction; the core adds into `c`. */
struct ks_mt_site {
	struct ks_mt_counts c;  /* all threads together */
	void *user;             /* front-end data: address, location */
	uint32_t id;            /* front-end numbering, not used by the core */
};

/* Events of one access, or'ed over the lines it touched. */
#define KS_MT_EV_COLD  1u
#define KS_MT_EV_MISS  2u
#define KS_MT_EV_INVAL 4u

struct ks_mt;

/* 0, or -22 (EINVAL) for a bad configuration, -12 (ENOMEM). */
int ks_mt_init(struct ks_mt **out, const struct ks_mt_config *cfg,
	       const struct ks_mt_alloc *alloc);
void ks_mt_fini(struct ks_mt *m);

/* The paper's bitmap method for one access of `size` bytes (>= 1; an
 * access crossing lines touches each line).  tid < max_threads.  site may
 * be NULL.  Returns the KS_MT_EV_* that happened.
 *  read:  the thread has no copy -> miss (cold if no thread ever touched
 *         the line); then it gets a copy (bitmap |= 1 << tid).
 *  write: no copy -> miss as above; other threads hold copies ->
 *         invalidation; afterwards only the writer holds it (bitmap =
 *         1 << tid).
 * With falseshare, also records the words touched per thread, read and
 * write counts per thread and, once the line is shared, per (thread,
 * site) entries. */
unsigned ks_mt_access(struct ks_mt *m, unsigned tid, uintptr_t addr,
		      unsigned size, bool write, struct ks_mt_site *site);

/* Credits a thread with accesses that count but are not simulated, as
 * hits that change nothing, to no line and no site (kscope's Valgrind
 * tool: accesses relative to the stack pointer).  Accesses to simulated
 * lines that a front-end resolves itself go through ks_mt_add_quiet. */
void ks_mt_add_hits(struct ks_mt *m, unsigned tid, uint64_t reads, uint64_t writes);

/* For front-ends that resolve repeated accesses themselves (kscope's
 * Valgrind tool keeps a table of them in generated code): whether tid
 * may now read (write false) or write (write true) addr's line any
 * number of times with nothing changing but counts and, with falseshare,
 * the words it touched, as long as no other thread accesses the line in
 * between: the thread holds the line (holds it alone, for a write).
 * Always false for threads >= 63 and with min_write off: testing before
 * updating is that optimization. */
bool ks_mt_quiet(const struct ks_mt *m, unsigned tid, uintptr_t addr, bool write);
/* The ownership word of addr's line (bit t: thread t < 63 holds a copy;
 * see ks_mt_access), or NULL while the line has no shadow yet.  The
 * pointer stays valid until ks_mt_fini.  For front-ends that keep
 * ks_mt_quiet's answer and test it again without the line's lock: read
 * it with an atomic load; the thread still holds the line for a read
 * while its bit is set, alone for a write while the word equals its bit
 * (tid < 63 only). */
const uint64_t *ks_mt_own_word(const struct ks_mt *m, uintptr_t addr);
/* The same lookup without a call, for a front-end's inline fast path:
 * ks_mt_own_map fills a copy of where the direct range's shadow is (valid
 * until ks_mt_fini; the direct table never moves), and ks_mt_own_find
 * gives the ownership word of a line below 2^direct_bits whose chunk
 * exists, else NULL (then ks_mt_own_word or ks_mt_access decide).  Two
 * dependent loads: the chunk pointer (one per 256 KiB of client address,
 * so it stays in cache) and the word, at the start of the line's SMU --
 * neighbouring lines have neighbouring SMUs, so a thread streaming
 * through memory streams through its shadow. */
struct ks_mt_own_map {
	void *const *l1;       /* chunk pointers, NULL = absent */
	uintptr_t l1_n;        /* chunk indexes below this are direct */
	unsigned lc_shift;     /* log2 lines per chunk */
	uintptr_t lc_mask;     /* lines per chunk - 1 */
	size_t smu_size;       /* bytes per SMU */
};
void ks_mt_own_map(const struct ks_mt *m, struct ks_mt_own_map *map);

static inline const uint64_t *ks_mt_own_find(const struct ks_mt_own_map *map,
					     uintptr_t line)
{
	uintptr_t cidx = line >> map->lc_shift;
	const unsigned char *ch;

	if (cidx >= map->l1_n)
		return NULL;
	ch = (const unsigned char *)__atomic_load_n(&map->l1[cidx], __ATOMIC_ACQUIRE);
	if (!ch)
		return NULL;
	return (const uint64_t *)(const void *)(ch + (line & map->lc_mask) * map->smu_size);
}

/* Credits n such accesses within addr's line to tid, the site (may be
 * NULL) and, with falseshare, the line, where they touched the words in
 * `words` (bit w: word w, see ks_mt_word_size): the same result as n
 * calls of ks_mt_access.  The front-end must credit them before another
 * thread accesses the line. */
void ks_mt_add_quiet(struct ks_mt *m, unsigned tid, uintptr_t addr, bool write,
		     struct ks_mt_site *site, uint64_t n, uint64_t words);

/* Counts of one thread (all zero for a thread never seen). */
void ks_mt_thread_counts(const struct ks_mt *m, unsigned tid,
			 struct ks_mt_counts *out);
/* Sum over threads. */
void ks_mt_total_counts(const struct ks_mt *m, struct ks_mt_counts *out);
/* Highest thread id seen + 1 (0 if none). */
unsigned ks_mt_threads_seen(const struct ks_mt *m);
/* Bytes of shadow memory allocated (tables, SMUs, entries). */
size_t ks_mt_shadow_bytes(const struct ks_mt *m);
/* The same, counting of the direct table only its pages that hold chunk
 * pointers: with a large direct_bits the table is gigabytes of address
 * space of which a few pages are ever touched. */
size_t ks_mt_shadow_resident(const struct ks_mt *m);

/* ---- false sharing: the verdict per line ---- */

/* A line's verdict from which words each thread touched, which does not
 * depend on how threads were interleaved:
 *  PRIVATE   one thread touched it;
 *  READ      several threads, nobody wrote;
 *  FALSE     several threads, at least one writes, and the pairs of
 *            threads (one of them writing) touched disjoint words;
 *  TRUE      such pairs share a word one of them writes;
 *  MIXED     both kinds of pairs, neither dominating;
 *  READ_MOSTLY  what would be FALSE, but fewer than two threads each
 *            wrote the line ks_mt_config.min_writes times (threads
 *            reading a table next to a slot each writes once): the
 *            writes are too few for the line to bounce between caches.
 * Words are bytes on lines of up to 64 bytes, so threads writing
 * adjacent bytes (char flags[4]) are FALSE and threads writing the same
 * byte are TRUE.
 * A pair weighs the accesses of its less active thread; a kind of pair
 * decides the line when it weighs 8 times the other kind (so one thread
 * reading all results once after the workers finish does not make a
 * falsely shared line "mixed"). */
enum ks_mt_verdict {
	KS_MT_PRIVATE, KS_MT_READ, KS_MT_FALSE, KS_MT_TRUE, KS_MT_MIXED,
	KS_MT_READ_MOSTLY
};

/* What one thread did to a line (all of it, from the first access). */
struct ks_mt_line_thread {
	unsigned tid;
	uint64_t rmask, wmask;  /* bit w: word w read / written */
	uint64_t reads, writes;
};

/* Accesses by one thread from one site, counted once the line was shared
 * (accesses from before are in an entry whose site is the thread's first
 * site on the line).  site NULL collects what did not fit (more than
 * KS_MT_MAX_LINE_SITES entries). */
#define KS_MT_MAX_LINE_SITES 64
struct ks_mt_line_site {
	unsigned tid;
	struct ks_mt_site *site;
	void *context;          /* from ks_mt_config.context */
	uint64_t reads, writes;
	uint64_t words;         /* the words of the line it touched (bit w: word w) */
};

struct ks_mt_line_info {
	uintptr_t line_addr;            /* first byte of the line */
	unsigned word_size;             /* bytes per word (see ks_mt_word_size) */
	enum ks_mt_verdict verdict;
	unsigned nthreads;
	const struct ks_mt_line_thread *threads; /* sorted by tid */
	unsigned nsites;
	const struct ks_mt_line_site *sites;     /* sorted by tid, then first seen */
	uint64_t misses, invalidations; /* bitmap-method counts on this line */
	/* Writes by all threads to the line while two or more threads use it:
	 * each is a potential invalidation of another thread's copy. */
	uint64_t potential_invalidations;
};

/* Word size of a line for the word masks: 1 byte, or line_size / 64 when
 * that is larger (at most 64 words per line, so a mask is one uint64_t).
 * Byte granularity is what tells threads writing adjacent chars apart
 * (false sharing) from threads writing the same char (true sharing); on
 * lines of up to 64 bytes it costs no shadow memory over 4-byte words,
 * since the masks are 64 bits either way.  Lines of 128 bytes and more
 * keep line_size / 64-byte words: there, two threads writing bytes of
 * the same word count as sharing it. */
unsigned ks_mt_word_size(const struct ks_mt *m);

/* Calls fn for every line touched by two or more threads, in address
 * order.  Only meaningful with cfg.falseshare.  The info and its arrays
 * are valid during the call only. */
typedef void (*ks_mt_line_fn)(void *arg, const struct ks_mt_line_info *li);
void ks_mt_for_each_shared_line(struct ks_mt *m, ks_mt_line_fn fn, void *arg);
/* With falseshare, for the layout prediction: calls fn for every line,
 * private (one thread: verdict KS_MT_PRIVATE, no sites) or shared, on
 * which a thread made min accesses or more while a thread other than it
 * did as much on an adjacent line, one of the two writing its line min
 * times or more: the lines where another start offset of an object, or
 * a longer cache line, could bring two threads' data together. */
void ks_mt_for_each_line_near_others(struct ks_mt *m, uint64_t min, ks_mt_line_fn fn,
				     void *arg);

/* The lines with min misses + invalidations or more (at least 1), for the
 * contention report's lines: calls fn (when not NULL) with each line's
 * address and counts (saturated at 2^32 - 1 each), in no particular
 * order; returns how many there are. */
typedef void (*ks_mt_count_fn)(void *arg, uintptr_t line_addr, uint64_t misses,
			       uint64_t invalidations);
size_t ks_mt_for_each_contended_line(const struct ks_mt *m, uint64_t min, ks_mt_count_fn fn,
				     void *arg);

/* "private", "read", "false", "true", "mixed", "read-mostly" */
const char *ks_mt_verdict_name(enum ks_mt_verdict v);

#endif
