/*
 * Private interface between the files of kscope's Valgrind tool: its
 * options, the heap block table, the findings writer and the three
 * instrumenters.  Nothing outside src/memtools/vg includes this.
 *
 * The tool runs inside Valgrind, which runs one guest thread at a time,
 * so the tool's state needs no locks.  It is global because Valgrind's
 * tool interface is a set of callbacks with no context argument.
 */
#ifndef KST_INT_H
#define KST_INT_H

#include "pub_tool_basics.h"
#include "pub_tool_execontext.h"
#include "pub_tool_tooliface.h"

#include "mtcore.h"
#include "simraw.h"

/* An IR expression that is a temporary or a constant (flat IR). */
typedef IRExpr IRAtom;

enum kst_analysis { KST_CONTENTION, KST_FALSESHARE, KST_HOTSPOT };

/* One cache of the hotspot analysis, as the options give it. */
struct kst_hot_cache_opt {
	HChar name[16];
	ULong size;               /* bytes */
	UInt assoc, line, latency;
};

/* The hotspot analysis' options (kst_hot.c parses the values). */
struct kst_hot_opts {
	UInt nlevels;             /* 0 until --cache is seen: the default then */
	struct kst_hot_cache_opt level[KS_SIM_MAX_LEVELS];
	struct kst_hot_cache_opt icache;
	Bool icache_set;          /* else level 0's geometry */
	const HChar *icache_arg;  /* the --icache option, for late messages */
	UInt mem_latency;
	const HChar *region;      /* function-name filter; NULL: everything */
	UInt *threads;            /* --threads: sorted Valgrind ids; NULL: all */
	UInt nthreads;
	ULong interval;           /* bandwidth bucket, simulated cycles */
	ULong trace_limit;
};

/* Tool options (see kst_main.c for their command-line names). */
struct kst_opts {
	enum kst_analysis analysis;
	const HChar *out;         /* findings file; "%p" becomes the pid */
	UInt line_size;           /* contention, falseshare */
	Bool min_write, pad_smu, thread_isolation;
	UInt min_accesses;        /* falseshare: accesses per thread for a line to count */
	UInt min_writes;          /* falseshare: writes by each of two threads for "false" */
	struct kst_hot_opts hot;
};
extern struct kst_opts kst_clo;

/* ---- the allocator behind the core's shadow tables (kst_main.c) ---- */
extern const struct ks_mt_alloc kst_core_alloc;

/* ---- heap blocks (kst_heap.c) ---- */
struct kst_block {
	Addr start;               /* payload */
	SizeT size;
	SizeT align;              /* asked of memalign and friends; 0: malloc's */
	ExeContext *alloc_ec;
};
void kst_heap_init(void);
/* Live block containing a (payload only), or NULL. */
struct kst_block *kst_heap_find_live(Addr a);
/* A block freed since, among the last 256 freed (newest first), or NULL. */
struct kst_block *kst_heap_find_freed(Addr a);
void kst_heap_write_summary(void); /* the "heap" member of the end record */

/* ---- findings file (kst_out.c) ---- */
Bool kst_out_open(void);
void kst_out_close(void);
void kst_out_flush(void);
/* Follows fork: the child opens its own file (VG_(atfork)). */
void kst_out_init_fork(void);
/* The image is about to exec: writes end_record (a whole line) and
 * flushes; if the exec fails, the next record starts a new segment. */
void kst_out_exec(const HChar *end_record);
/* kst_main.c: the start record of this process image. */
void kst_write_start(void);
void kst_out_printf(const HChar *fmt, ...) PRINTF_CHECK(1, 2);
void kst_out_str(const HChar *s);          /* a JSON string, quoted and escaped */
UInt kst_out_stack(ExeContext *ec);         /* writes the stack record once; its id */
UInt kst_out_stack_ip(Addr ip);             /* a one-frame stack */
/* A stack made of the current thread's stack with its innermost frame
 * replaced by ip (the instruction being executed: the guest state's IP
 * may lag behind inside a translation). */
ExeContext *kst_stack_here(ThreadId tid, Addr ip);

/* ---- contention and falseshare (kst_cache.c) ---- */
void kst_cache_init(void);
IRSB *kst_cache_instrument(IRSB *in, const VexGuestLayout *layout,
			   IRType gWordTy, IRType hWordTy);
void kst_cache_fini(void);
/* A thread is being created (called from kst_main.c's one handler). */
void kst_cache_thread_create(ThreadId parent, ThreadId child);

/* ---- hotspot: instruction counts and cache simulation (kst_hot.c) ---- */
/* Option values; each reports a bad value with VG_(fmsg_bad_option),
 * which exits. */
void kst_hot_opt_cache(const HChar *arg, const HChar *val);
void kst_hot_opt_icache(const HChar *arg, const HChar *val);
void kst_hot_opt_region(const HChar *arg, const HChar *val);
void kst_hot_opt_threads(const HChar *arg, const HChar *val);
void kst_hot_init(void);
IRSB *kst_hot_instrument(IRSB *in, const VexGuestLayout *layout,
			 IRType gWordTy, IRType hWordTy);
void kst_hot_fini(void);
void kst_hot_thread_create(ThreadId parent, ThreadId child);
/* How the program ended, as its system calls say: Valgrind's exit
 * handler is always told 0, and a fatal signal makes no exit call. */
struct kst_exit_seen {
	Bool group_seen, exit_seen; /* exit_group, and a thread's exit */
	Int group_code, exit_code;
	Int self_signal;            /* last signal the program sent itself */
};
/* Notes an exit, exit_group, or a signal the process sends itself. */
void kst_exit_note(struct kst_exit_seen *x, UInt sysno, const UWord *args);
/* The program's exit status, from its exit system calls. */
void kst_hot_pre_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs);
void kst_hot_post_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs,
			  SysRes res);

/* ---- hotspot: the cache simulator (kst_hotcache.c) ---- */
#define KST_HC_MIN_LINE 16
#define KST_HC_EMPTY (~(UWord)0)
/* One set-associative cache.  Each set's entries run from the most to
 * the least recently used; an entry is line << 1 | dirty, or
 * KST_HC_EMPTY. */
struct kst_hc {
	UWord *tags;
	UWord set_mask;           /* sets - 1 */
	UInt assoc;
	UInt line_bits;
};
/* The caches one thread sees: its instruction cache and its data levels
 * (the last one shared by all threads). */
struct kst_hier {
	struct kst_hc *ic;
	struct kst_hc *lv[KS_SIM_MAX_LEVELS];
	UInt n;                   /* data levels */
};
void kst_hc_init(struct kst_hc *c, ULong size, UInt assoc, UInt line);
/* One data access of size bytes at a (a store when write).  Returns the
 * level that served it: 0 when level 0 held every line, h->n for memory;
 * the access missed every level above that one.  bw, when not NULL,
 * receives the lines filled and written back: bw[2k] and bw[2k+1] are
 * the bytes read and written across boundary k (boundary 0, the
 * register side, is the caller's). */
/* An access spans at most this many lines of any level: accesses are at
 * most 32 bytes (wider ones are cut to level 0's line by the
 * instrumenter) and lines are at least KST_HC_MIN_LINE bytes. */
#define KST_HC_MAX_LINES 4
/* The per-set counters of one level (the raw file's `cset` records, in
 * this order), KST_SET_N per set. */
enum { KST_SET_LOAD, KST_SET_STORE, KST_SET_HIT, KST_SET_MISS, KST_SET_ALLOC,
       KST_SET_EVW, KST_SET_EVWO, KST_SET_N };
/* What a counted data access did beyond its level, for the per-set and
 * per-line figures; only accesses that miss level 0 get here, so hits
 * cost nothing.  An access touching several lines counts once in the
 * sets, in the set of its first line that missed the level (or of its
 * first line when all hit), so that the sets sum to the level's
 * accesses and misses; allocations and evictions count per line. */
struct kst_hc_obs {
	ULong *sets;              /* in: KST_SET_N counters per set of level
				   * sets_level (summed over threads), or NULL */
	UInt sets_level;
	UWord first_miss;         /* out: the first level-0 line that missed */
	UWord wb[KST_HC_MAX_LINES]; /* out: dirty level-0 lines written back */
	UInt nwb;
};
UInt kst_hc_data(const struct kst_hier *h, Addr a, UInt size, Bool write, ULong *bw,
		 struct kst_hc_obs *obs);
/* One instruction fetch; the same, 0 meaning an instruction-cache hit. */
UInt kst_hc_fetch(const struct kst_hier *h, Addr a, UInt size, ULong *bw);

/* ---- IR helpers shared by both instrumenters (kst_main.c) ---- */
/* Which temporaries of a (flat) input block hold the stack pointer plus
 * a constant: accesses through them are thread-private stack traffic,
 * never heap, and the instrumenters leave them alone.  Feed every
 * statement to kst_sp_note in order. */
struct kst_sp {
	UChar *is_sp; /* per temporary */
	Int n;
	Int sp_off;   /* guest state offset of the stack pointer */
};
void kst_sp_begin(struct kst_sp *s, IRSB *in, const VexGuestLayout *layout);
void kst_sp_note(struct kst_sp *s, IRStmt *st);
Bool kst_sp_atom(const struct kst_sp *s, IRExpr *a);
void kst_sp_end(struct kst_sp *s);

/* The store in in->stmts[i+1..] that writes back the bytes the load at
 * stmts[i] (a WrTmp of an Iex_Load) read, of the same type and address,
 * within the same instruction and with no other memory access or exit in
 * between: a read-modify-write such as x += y.  Its index, or -1.
 * strict: any dirty call or memory barrier in between also rules it out
 * (contention, falseshare); otherwise only dirty calls that touch memory
 * do (hotspot, which counts a modify as cachegrind does). */
Int kst_rmw_store(const IRSB *in, Int i, Bool strict);

#endif
