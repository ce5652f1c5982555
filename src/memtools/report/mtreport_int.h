/*
 * Private to src/memtools/report: the in-memory model of a findings.jsonl
 * file (docs/formats.md, "Memory-tool run directories") and the helpers
 * the three writers share.  mtreport_read.c fills struct ks_mtr_run, checking
 * every field; mtreport_views.c derives what more than one writer prints
 * (the false-sharing objects and views, sorted contention tables); the
 * writers (mtreport_text.c, _json.c, _sarif.c) only read.  No
 * other module includes this file.
 *
 * Records refer to each other by id (stacks, vars) or address (lines);
 * the reader turns every reference into an index into the arrays below,
 * so the writers never search.  All strings and stack frames live in one
 * arena owned by the run and freed with it.
 */
#ifndef KS_MTREPORT_INT_H
#define KS_MTREPORT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "mtreport.h"
#include "utf8.h"

#define MTR_NONE UINT32_MAX /* an absent index */
#define MTR_TOP_TEXT 20     /* rows per table in report.txt; report.json has all */

/* ------------------------------------------------------------------ */
/* Arena, id map, growing arrays                                       */
/* ------------------------------------------------------------------ */

struct ks_mtr_arena_chunk;

struct ks_mtr_arena {
	struct ks_mtr_arena_chunk *head; /* newest chunk first */
	size_t used, size;            /* in head */
};

/* size bytes aligned for any type, NULL if out of memory; freed with the
 * arena. */
void *ks_mtr_arena_alloc(struct ks_mtr_arena *a, size_t size);
char *ks_mtr_arena_strdup(struct ks_mtr_arena *a, const char *s);
void ks_mtr_arena_free(struct ks_mtr_arena *a);

/* An open-addressing hash map from a 64-bit key to a 32-bit value. */
struct ks_mtr_map {
	uint64_t *keys;
	uint32_t *vals;     /* MTR_NONE marks an empty slot */
	size_t cap, count;  /* cap is 0 or a power of two */
};

/* The value stored for key, or MTR_NONE. */
uint32_t ks_mtr_map_get(const struct ks_mtr_map *m, uint64_t key);
/* Stores key -> val (val != MTR_NONE); replaces an existing value.
 * 0 or -ENOMEM. */
int ks_mtr_map_put(struct ks_mtr_map *m, uint64_t key, uint32_t val);
void ks_mtr_map_free(struct ks_mtr_map *m);

/* Makes room for one more element in the array *p of *n elements (of
 * size elem, capacity *cap).  Returns the new (zeroed) element, NULL if
 * out of memory; *n is incremented. */
void *ks_mtr_vec_push(void *p, size_t *n, size_t *cap, size_t elem);

/* ------------------------------------------------------------------ */
/* The model                                                           */
/* ------------------------------------------------------------------ */

enum ks_mtr_analysis { MTR_MEMCHECK, MTR_CONTENTION, MTR_FALSESHARE };

struct ks_mtr_frame {
	uint64_t ip;
	const char *fn, *obj, *file, *dir; /* NULL when absent */
	unsigned long line;                /* 0 when absent */
};

struct ks_mtr_stack {
	long long id;               /* as in the file */
	uint32_t nframes;           /* >= 1 */
	struct ks_mtr_frame *frames;   /* innermost first; in the arena */
};

enum ks_mtr_ekind {
	MTR_E_INVALID_READ,
	MTR_E_INVALID_WRITE,
	MTR_E_USE_AFTER_FREE,
	MTR_E_UNINIT_COND,
	MTR_E_UNINIT_ADDR,
	MTR_E_UNINIT_SYSCALL,
	MTR_E_DOUBLE_FREE,
	MTR_E_INVALID_FREE,
	MTR_E_LEAK_DEFINITE,  /* leak records */
	MTR_E_LEAK_POSSIBLE,
	/* Only from Memcheck's XML (src/memtools/mcxml); after the kinds
	 * above, which findings.jsonl uses, so its reader is unchanged. */
	MTR_E_LEAK_INDIRECT,  /* leak records */
	MTR_E_LEAK_REACHABLE,
	MTR_E_MISMATCHED_FREE,
	MTR_E_UNINIT_VALUE,
	MTR_E_INVALID_SYSCALL, /* a system call given unaddressable memory */
	MTR_E_OVERLAP,
	MTR_E_FISHY_VALUE,
	MTR_E_CLIENT_CHECK,
	MTR_E_INVALID_JUMP,
	MTR_E_INVALID_MEMPOOL,
	MTR_E_OTHER,          /* a Memcheck kind kscope has no name for (xml_kind says) */
	MTR_E_COUNT
};

static inline bool ks_mtr_is_leak(enum ks_mtr_ekind k)
{
	return k == MTR_E_LEAK_DEFINITE || k == MTR_E_LEAK_POSSIBLE ||
	       k == MTR_E_LEAK_INDIRECT || k == MTR_E_LEAK_REACHABLE;
}

/* One of Memcheck's auxiliary descriptions of an error and the stack
 * after it ("Address 0x... is 0 bytes inside a block of size 4 free'd"
 * and the free stack; "Block was alloc'd at" and the allocation stack;
 * an origin under --track-origins). */
struct ks_mtr_aux {
	const char *what;     /* NULL: a stack alone */
	uint32_t stack;       /* MTR_NONE: none */
};

struct ks_mtr_block {
	uint64_t addr, size;
	long long offset;    /* address - block start; negative before it */
	bool freed;          /* state "freed" (else "alloc") */
	uint32_t alloc_stack;
	uint32_t free_stack; /* MTR_NONE if absent */
};

/* kscope memcheck: what is said of an address Memcheck related to no
 * block (beyond its redzones).  With --heap-map the live blocks nearest
 * to it at the moment of the error, or why that is not known; without,
 * a suggestion to use it. */
enum ks_mtr_hm {
	MTR_HM_NONE,          /* nothing: not such an error */
	MTR_HM_HINT,          /* suggest --heap-map */
	MTR_HM_FOUND,         /* hm_below and/or hm_above */
	MTR_HM_NOTHING,       /* no live block within MTR_HM_NEAR_MAX */
	MTR_HM_UNKNOWN,       /* hm_why */
};

#define MTR_HM_NEAR_MAX ((uint64_t)1 << 20) /* KS_MCX_NEAR_MAX */

struct ks_mtr_near {
	bool present;
	uint64_t addr, size;
	uint64_t alloc_no;    /* the process image's n-th allocation, from 1 */
	const char *fn;       /* "malloc", "operator new[]"... */
};

struct ks_mtr_error {
	enum ks_mtr_ekind kind;
	uint32_t proc;        /* index into the run's procs */
	long long tid;
	uint64_t count;       /* >= 1 */
	uint32_t stack;
	bool has_size, has_addr, has_block;
	bool write;           /* use-after-free: the access was a write */
	uint64_t size, addr;
	struct ks_mtr_block block;
	const char *syscall, *param; /* uninit-syscall */
	bool filtered;        /* dropped by the filter: reported nowhere */
	/* From Memcheck's XML only (NULL, 0 otherwise): its own wording
	 * and kind, and its auxiliary descriptions in order. */
	const char *what, *xml_kind;
	struct ks_mtr_aux *aux;  /* in the arena */
	uint32_t naux;
	enum ks_mtr_hm hm;       /* memcheck: the heap map's word on addr */
	struct ks_mtr_near hm_below, hm_above;
	const char *hm_why;      /* MTR_HM_UNKNOWN */
};

struct ks_mtr_leak {
	enum ks_mtr_ekind kind;  /* MTR_E_LEAK_* */
	uint32_t proc;
	uint64_t bytes, blocks;
	uint32_t stack;
	const char *what;        /* Memcheck's wording, or NULL */
	bool not_error;          /* listed, not counted as an error (Memcheck's
				  * --errors-for-leak-kinds leaves its kind out) */
	bool filtered;           /* dropped by the filter: reported nowhere */
};

struct ks_mtr_counts {
	uint64_t accesses, reads, writes, cold_misses, misses, invalidations;
};

struct ks_mtr_thread {
	uint32_t proc;
	long long tid;
	struct ks_mtr_counts c;
};

struct ks_mtr_site {
	uint32_t proc;
	uint32_t stack;
	struct ks_mtr_counts c;
};

enum ks_mtr_vkind { MTR_V_HEAP, MTR_V_GLOBAL, MTR_V_STACK, MTR_V_UNKNOWN };

struct ks_mtr_var {
	long long id;
	enum ks_mtr_vkind kind;
	uint64_t addr, size;
	const char *name, *obj;  /* NULL when absent */
	uint32_t alloc_stack;    /* MTR_NONE when absent */
	uint64_t align;          /* the alignment its start is sure to have: the
				  * record's "align" (a heap block's requested
				  * one), else from DWARF (mtreport_parts.c); 0
				  * when not known */
};

struct ks_mtr_object {
	uint32_t proc;
	long long var_id;
	uint32_t var;            /* resolved after reading */
	uint64_t cold_misses, misses, invalidations;
	unsigned long lineno;    /* of its record, for messages */
};

enum ks_mtr_verdict { MTR_FALSE, MTR_TRUE, MTR_MIXED };

struct ks_mtr_lthread {
	long long tid;
	uint64_t *read, *write;  /* word masks, bit i = word i; nmask words each */
	uint64_t reads, writes;
};

/* A run of touched words of a line that belong to one variable and, as
 * far as kscope can tell, one member or element of it (mtreport_parts.c). */
struct ks_mtr_part {
	uint32_t var;            /* MTR_NONE: no known variable */
	unsigned first, nwords;  /* words of the line */
	uint64_t var_off;        /* offset of its first byte in var */
	const char *name;        /* "st.b", "counters[2]", "block+48"; in the arena */
	bool dwarf;              /* name is a member or element path from DWARF */
};

struct ks_mtr_line {
	uint32_t proc;
	uint64_t addr;
	bool has_var;
	long long var_id;
	uint32_t var;            /* resolved, or MTR_NONE */
	long long *var_ids;      /* "vars": every variable touched, in the arena */
	uint32_t *vars;          /* resolved: var_ids, else var alone */
	uint32_t nvars;
	struct ks_mtr_part *parts; /* in the arena; nparts 0 until named */
	uint32_t nparts;
	enum ks_mtr_verdict verdict;
	unsigned word_size;
	unsigned nwords;         /* line_size / word_size */
	unsigned nmask;          /* 64-bit words per mask */
	uint32_t nthreads;
	struct ks_mtr_lthread *threads; /* in the arena */
	uint64_t misses, invalidations, potential;
	unsigned long lineno;
};

struct ks_mtr_access {
	uint32_t proc;
	uint64_t line_addr;
	uint32_t line;           /* resolved */
	bool has_var;
	long long var_id;
	uint32_t var;            /* resolved, or MTR_NONE */
	long long tid;
	uint32_t context;        /* stack index */
	uint64_t reads, writes;
	bool has_words;
	uint64_t words;          /* the words of the line it touched (bit w: word w) */
	unsigned long lineno;
};

struct ks_mtr_total {
	bool present;
	struct ks_mtr_counts c;
	uint64_t contention_accesses;
	bool has_stack, has_quiet;       /* the optional fields below were given */
	uint64_t stack_accesses;         /* counted, not simulated */
	uint64_t quiet_lines, min_accesses; /* falseshare: shared lines left out */
	bool has_read_mostly;            /* read_mostly_lines and min_writes given */
	uint64_t read_mostly_lines;      /* falseshare: false but below --min-writes */
	uint64_t min_writes;
	uint64_t near_dropped;           /* falseshare: near lines past the front
					  * end's limit, not recorded */
};

/* memcheck's `suppressed` records, summed. */
struct ks_mtr_suppressed {
	uint64_t count;
	const char *reason;              /* the first record's, or NULL */
};

struct ks_mtr_end {
	bool present;
	bool signaled;           /* how: "signal" (else "exit") */
	bool exec;               /* how: "exec": the image replaced itself */
	bool unknown;            /* how: "unknown": no exit call seen (a signal
				  * the tool could not name, unless kscope
				  * saw it: ks_mtr_opts.exits) */
	bool no_code;            /* it exited, with a status nobody saw (a
				  * child's, from Memcheck's XML) */
	long long code;          /* exit code or signal number */
	bool has_heap;
	uint64_t allocs, frees, bytes_allocated, in_use_bytes, in_use_blocks;
	bool has_shadow, has_threads;
	uint64_t shadow_bytes, threads;
};

struct ks_mtr_start {
	enum ks_mtr_analysis analysis;
	long long pid;
	long long ppid;          /* -1 when the record has none */
	const char *exe;
	const char **argv;       /* argc entries, in the arena */
	size_t argc;
	unsigned line_size, word_size;
	bool has_redzone, has_freelist;
	uint64_t redzone, freelist_vol;
	int min_write, pad_smu, thread_isolation; /* -1 absent, 0, 1 */
	/* contention, falseshare: "valgrind" (kscope's Valgrind tool, also
	 * when the record does not say) or "compiled" (libkscope-mt.so) */
	const char *front_end;
};

struct ks_mtr_fctx {
	uint32_t stack;
	uint64_t count;          /* reads + writes from this context */
};

/* A falsely shared object: a variable (or, for lines without one, the
 * line itself) with at least one line whose verdict is false or mixed. */
struct ks_mtr_fobj {
	uint32_t var;            /* MTR_NONE: no variable, see line */
	uint32_t line;           /* var == MTR_NONE: the line it stands for */
	uint32_t *lines;         /* its false or mixed lines, ascending address */
	size_t nlines, cap_lines;
	enum ks_mtr_verdict verdict; /* MTR_MIXED if any line is mixed */
	uint64_t potential, misses, invalidations; /* summed over its lines */
	uint64_t count;          /* reads + writes of its access records */
	struct ks_mtr_fctx *contexts; /* distinct context stacks, by count descending */
	size_t ncontexts, cap_contexts;
	const struct ks_mtr_frame **srclines; /* distinct file:line of the contexts' first
					      frames with a line, in context order */
	size_t nsrclines;
};

/* One row of the false-sharing views: (variable, context), summed over
 * access records (and, for the per-thread view, one thread). */
struct ks_mtr_fentry {
	uint32_t proc;           /* per-thread view; 0 otherwise */
	long long tid;           /* per-thread view; 0 otherwise */
	uint32_t fobj, context;
	uint64_t reads, writes;
};

/* One process image: a segment of a findings file from its start record
 * to its end record.  A process that execs continues its file with the
 * new image's segment; a forked child has its own file. */
struct ks_mtr_proc {
	struct ks_mtr_start start;
	struct ks_mtr_end end;
	bool truncated;           /* no end record */
	uint32_t image;           /* 0 for a process's first image, 1 after its first exec... */
	uint32_t parent;          /* the parent process's last image, or MTR_NONE */
};

struct ks_mtr_run {
	const char *path;         /* the findings file being read */
	struct ks_mtr_proc *procs; size_t nprocs, cap_procs; /* procs[0]: the program */
	uint32_t root_last;       /* the program's last image (its exit) */
	/* Where the segment being read began in the arrays below. */
	size_t seg_objects, seg_lines, seg_accesses, seg_nears, seg_clines;
	struct ks_mtr_arena arena;
	struct ks_mtr_start start;
	bool started;
	struct ks_mtr_end end;
	bool truncated;           /* no end record */
	const char *incomplete;   /* memcheck: why the results are incomplete (the
				   * engine died...), said by every report; NULL */
	bool partial_last;        /* an unterminated last line was dropped */

	struct ks_mtr_stack *stacks;  size_t nstacks, cap_stacks;
	struct ks_mtr_map stack_ids;  /* id -> index */
	struct ks_mtr_var *vars;      size_t nvars, cap_vars;
	struct ks_mtr_map var_ids;
	struct ks_mtr_error *errors;  size_t nerrors, cap_errors;
	struct ks_mtr_leak *leaks;    size_t nleaks, cap_leaks;
	struct ks_mtr_thread *threads; size_t nthreads, cap_threads;
	struct ks_mtr_map thread_ids;
	struct ks_mtr_site *sites;    size_t nsites, cap_sites;
	struct ks_mtr_object *objects; size_t nobjects, cap_objects;
	struct ks_mtr_total total;
	struct ks_mtr_suppressed suppressed;
	struct ks_mtr_line *lines;    size_t nlines, cap_lines;
	struct ks_mtr_map line_addrs;
	/* "near" records: lines not reported that lie next to another
	 * thread's (verdict, misses... unused), for the layout prediction. */
	struct ks_mtr_line *nears;    size_t nnears, cap_nears;
	/* "cline" records: the lines with the most misses + invalidations
	 * (addr, var, vars, misses, invalidations; no threads). */
	struct ks_mtr_line *clines;   size_t nclines, cap_clines;
	struct ks_mtr_access *accesses; size_t naccesses, cap_accesses;

	/* Derived (mtreport_views.c). */
	unsigned long nreported;   /* memcheck error contexts not filtered, and
				    * the leaks counted as errors */
	unsigned long nreported_errors; /* the error contexts alone */
	unsigned long nfiltered;   /* errors and leaks dropped by the filter */
	size_t nleaks_shown;       /* leaks not filtered: leak_order's first ones */
	uint64_t occurrences;      /* their counts summed, plus one per leak */
	uint32_t *leak_order;      /* leaks, bytes ascending (as Valgrind) */
	uint32_t *site_order, *object_order; /* by misses + invalidations, descending */
	uint32_t *cline_order;     /* likewise */
	struct ks_mtr_counts sum;     /* the total record, or threads summed */
	bool has_contention;       /* sum came with contention_accesses */
	uint64_t contention_accesses;
	struct ks_mtr_fobj *fobjs;    size_t nfobjs; /* sorted, see mtreport_views.c */
	struct ks_mtr_fentry *global; size_t nglobal;   /* global-all-threads-info */
	struct ks_mtr_fentry *per_thread; size_t nper_thread; /* by tid, then count */
	uint32_t *compact; /* fobj indexes, by count descending (compact view) */
	uint32_t *true_lines; size_t ntrue; /* lines with verdict true */
	struct ks_mtr_layout *layouts; size_t nlayouts, cap_layouts; /* in var order */
	unsigned long false_lines;
};

/* falseshare's layout prediction of an object two threads came back to
 * (mtreport_layout.c): whether false sharing would appear at another
 * start offset in a line, or with lines twice as long.  Index k: 0 for
 * lines of the run's line size, 1 for twice it. */
struct ks_mtr_layout {
	uint32_t var;
	uint64_t align;          /* what its start is sure to be a multiple of */
	unsigned line_size;      /* the run's */
	unsigned start[2];       /* its start offset in a line, as laid out */
	bool now[2];             /* falsely shared as laid out */
	uint64_t false_at[2][2]; /* bit b: falsely shared from start offset
				  * b * ks_mtr_layout_step(k) */
	bool latent;             /* not now[0], but at another offset or with
				  * the longer lines */
};

/* The start offsets tried for lines k: multiples of the object's
 * alignment, at most 128 of them. */
static inline uint64_t ks_mtr_layout_step(const struct ks_mtr_layout *l, int k)
{
	uint64_t lz = (uint64_t)l->line_size << k, s = l->align < lz ? l->align : lz;

	return s < lz / 128 ? lz / 128 : s ? s : 1;
}

/* Computes r->layouts (after the parts: they give globals' alignment). */
int ks_mtr_layouts(struct ks_mtr_run *r);

/* Reads and checks one findings file, adding its process images to the
 * run (call it for the program's file first, then its children's); on
 * failure err says which line and why. */
int ks_mtr_read(struct ks_mtr_run *r, const char *path, struct ks_err *err);
/* After the last file: links each process to its parent, applies what
 * kscope saw of how processes ended (o->exits), and sets start, end and
 * truncated to the program's. */
void ks_mtr_procs_done(struct ks_mtr_run *r, const struct ks_mtr_opts *o);
/* "exited with code 3", "was killed by signal 11 (SIGSEGV)", "replaced
 * itself (exec)", "did not finish (no end record)"... of procs[i]. */
void ks_mtr_proc_exit_text(const struct ks_mtr_run *r, uint32_t i, char *buf, size_t size);
/* The pid of procs[i]. */
static inline long long ks_mtr_pid(const struct ks_mtr_run *r, uint32_t i)
{
	return r->procs[i].start.pid;
}
/* Computes the derived fields; o->filter marks filtered errors. */
int ks_mtr_views(struct ks_mtr_run *r, const struct ks_mtr_opts *o, struct ks_err *err);
/* The parts of every line (called by ks_mtr_views): the variables' members
 * and elements named from their modules' DWARF when o->field_names. */
int ks_mtr_parts(struct ks_mtr_run *r, const struct ks_mtr_opts *o);
void ks_mtr_run_free(struct ks_mtr_run *r);

/* ------------------------------------------------------------------ */
/* Buffered output                                                     */
/* ------------------------------------------------------------------ */

/* Collects output and hands it to the outfile (and the tee, if any) in
 * large writes: report.json of 100k errors is millions of small pieces. */
struct ks_mtr_out {
	struct ks_outfile *of;
	FILE *tee;                /* also written here (report.txt), or NULL */
	char buf[65536];
	size_t len;
	int error;                /* first failure of tee; of keeps its own */
};

void ks_mtr_put_slow(struct ks_mtr_out *o, const char *s, size_t len);

/* Appends len bytes: a copy into the buffer unless it is full.  Inline
 * because the writers call it for every few bytes. */
static inline void ks_mtr_put(struct ks_mtr_out *o, const char *s, size_t len)
{
	if (len <= sizeof(o->buf) - o->len) {
		memcpy(o->buf + o->len, s, len);
		o->len += len;
	} else {
		ks_mtr_put_slow(o, s, len);
	}
}

static inline void ks_mtr_puts(struct ks_mtr_out *o, const char *s)
{
	ks_mtr_put(o, s, strlen(s));
}

void ks_mtr_printf(struct ks_mtr_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void ks_mtr_flush(struct ks_mtr_out *o);
/* Writes s with control characters as \xNN (text report). */
void ks_mtr_put_text(struct ks_mtr_out *o, const char *s);

/* A streaming JSON writer in jansson's layout (indent 2, "key": value):
 * containers are opened and closed here and scalars written directly, so
 * a report of any size never exists as one tree (100k errors with their
 * stacks would be millions of jansson objects).  Small subtrees can still
 * be built with jansson and put in place.  A container opened "flat" is
 * written on one line with everything inside it (a stack frame, a SARIF
 * result), as ", " and ": " or, tight, "," and ":". */
#define MTR_JW_DEPTH 16
struct ks_mtr_jw {
	struct ks_mtr_out *o;
	int depth;
	bool first[MTR_JW_DEPTH]; /* nothing written yet at this level */
	bool array[MTR_JW_DEPTH];
	bool flat[MTR_JW_DEPTH];
	bool tight;               /* flat containers without spaces (SARIF) */
};

void ks_mtr_jw_init(struct ks_mtr_jw *w, struct ks_mtr_out *o); /* opens the top object */
void ks_mtr_jw_finish(struct ks_mtr_jw *w);                    /* closes it, newline */
/* key is a literal identifier (written as is) or NULL inside arrays. */
void ks_mtr_jw_object(struct ks_mtr_jw *w, const char *key);
void ks_mtr_jw_array(struct ks_mtr_jw *w, const char *key);
void ks_mtr_jw_object_flat(struct ks_mtr_jw *w, const char *key);
void ks_mtr_jw_array_flat(struct ks_mtr_jw *w, const char *key);
void ks_mtr_jw_end(struct ks_mtr_jw *w);
/* Writes v (a reference is stolen; NULL writes null: jansson's
 * constructors return NULL only when out of memory, which then shows as
 * a null rather than a crash). */
void ks_mtr_jw_put(struct ks_mtr_jw *w, const char *key, json_t *v);
void ks_mtr_jw_str(struct ks_mtr_jw *w, const char *key, const char *s); /* NULL: null */
void ks_mtr_jw_uint(struct ks_mtr_jw *w, const char *key, uint64_t v);
void ks_mtr_jw_int(struct ks_mtr_jw *w, const char *key, long long v);
void ks_mtr_jw_bool(struct ks_mtr_jw *w, const char *key, bool v);
void ks_mtr_jw_addr(struct ks_mtr_jw *w, const char *key, uint64_t v); /* "0x..." */

/* ------------------------------------------------------------------ */
/* Shared wording and helpers                                          */
/* ------------------------------------------------------------------ */

extern const char *const ks_mtr_analysis_names[3];
extern const char *const ks_mtr_ekind_names[MTR_E_COUNT];   /* the file's kinds */
extern const char *const ks_mtr_verdict_names[3];
extern const char *const ks_mtr_vkind_names[4];

/* "0x4a5b0a8" */
void ks_mtr_hex(char buf[19], uint64_t v);
/* JSON integer of a count (json_int_t; counts are read as such). */
json_t *ks_mtr_json_u64(uint64_t v);
/* The primary description of an error (Valgrind's wording), e.g.
 * "Invalid read of size 4"; buf of at least 256 bytes. */
void ks_mtr_error_what(const struct ks_mtr_error *e, char *buf, size_t size);
/* Valgrind's block description without the leading space: "Address
 * 0x... is 4 bytes after a block of size 40 alloc'd", or, with no block,
 * "Address 0x... is not inside a known heap block"; "" when the error has
 * no address. */
void ks_mtr_error_where(const struct ks_mtr_error *e, char *buf, size_t size);
/* The heap map's sentences on an error (hm), one per line, each without
 * a leading space, into buf (at least 512 bytes): k = 0, 1 (a second only
 * when both a block below and one above are named).  Returns false when
 * there is no sentence k.  "Heap map: address 0x4a484ea is 3,000 bytes
 * after the block of 50 bytes at 0x4a47900 (allocated by malloc,
 * allocation #4)", "Heap map: no live block within 1 MiB...", "Heap map:
 * not known: ...", or the hint to use --heap-map. */
bool ks_mtr_heap_map_line(const struct ks_mtr_error *e, int k, char *buf, size_t size);
/* What the relation of address a to a named block is: "after", "before"
 * or "inside", and how many bytes (after: from the block's end). */
const char *ks_mtr_near_relation(const struct ks_mtr_near *b, uint64_t a, uint64_t *distance);

/* Valgrind's XML <kind> of an error or leak. */
const char *ks_mtr_xml_kind(enum ks_mtr_ekind k, bool write);
/* "17 bytes in 1 blocks are definitely lost" */
void ks_mtr_leak_what(const struct ks_mtr_leak *l, char *buf, size_t size);
/* The first frame with a line number, or NULL. */
const struct ks_mtr_frame *ks_mtr_stack_line_frame(const struct ks_mtr_stack *s);
/* True for a frame of Valgrind's own replacement code (malloc, memcpy...
 * in a vgpreload_* object, vg_replace_* and _vgr* functions). */
bool ks_mtr_frame_is_replacement(const struct ks_mtr_frame *f);
/* Where a finding is in the user's code: the first frame with a file and
 * a line that is neither Valgrind's replacement code nor in a system
 * library (/lib, /usr/lib...); else the first frame with a line; NULL
 * when no frame has one.  The primary location in text and SARIF. */
const struct ks_mtr_frame *ks_mtr_stack_user_frame(const struct ks_mtr_stack *s);
/* Memcheck's XML kind of an error: its own when it came from Memcheck. */
const char *ks_mtr_error_xml_kind(const struct ks_mtr_error *e);
/* "counter (global, 8 bytes)", "heap block of 64 bytes allocated at
 * make (c.c:8)"; a variable-less object: "unknown object on line 0x..". */
void ks_mtr_fobj_name(const struct ks_mtr_run *r, const struct ks_mtr_fobj *f,
		      char *buf, size_t size);
void ks_mtr_var_name(const struct ks_mtr_run *r, const struct ks_mtr_var *v,
		     char *buf, size_t size);
/* "fn (file:line)", "fn (in obj)", "???" */
void ks_mtr_frame_where(const struct ks_mtr_frame *f, char *buf, size_t size);
/* Where a context stack points: its first frame with a line, else its
 * first frame, as "0xIP: " and what ks_mtr_frame_where says. */
void ks_mtr_context_where(const struct ks_mtr_run *r, uint32_t stack, char *buf,
			  size_t size);
/* "Process 1234 exited with code 0", "... was killed by signal 11
 * (SIGSEGV)", or, without an end record, "... did not finish ...". */
void ks_mtr_exit_text(const struct ks_mtr_run *r, char *buf, size_t size);
/* The address range an object covers. */
void ks_mtr_fobj_range(const struct ks_mtr_run *r, const struct ks_mtr_fobj *f,
		       uint64_t *addr, uint64_t *size);
/* The file name for locations: dir/file when dir is known and file is
 * relative, else file; NULL when the frame has no file. */
char *ks_mtr_frame_path(const struct ks_mtr_frame *f, char *buf, size_t size);
uint64_t ks_mtr_score(const struct ks_mtr_counts *c); /* misses + invalidations */

/* The writers.  Each returns 0 or a negative errno with err set; they
 * commit their file or leave nothing behind. */
int ks_mtr_write_text(const struct ks_mtr_run *r, const struct ks_mtr_opts *o,
		      struct ks_rundir *rd, FILE *text, struct ks_err *err);
int ks_mtr_write_json(const struct ks_mtr_run *r, const struct ks_mtr_opts *o,
		      struct ks_rundir *rd, struct ks_err *err);
int ks_mtr_write_sarif(const struct ks_mtr_run *r, const struct ks_mtr_opts *o,
		       struct ks_rundir *rd, struct ks_err *err);

/* The summary of a run whose views are built, then (rd not NULL)
 * report.txt (also to text), report.json and findings.sarif: what
 * findings.jsonl and Memcheck's XML end in alike. */
int ks_mtr_finish(const struct ks_mtr_run *r, const struct ks_mtr_opts *o,
		  struct ks_rundir *rd, FILE *text, struct ks_mtr_summary *sum,
		  struct ks_err *err);

/* Opens name in rd with o writing to it; commit closes it for good. */
int ks_mtr_out_open(struct ks_mtr_out *o, struct ks_outfile *of, FILE *tee,
		    struct ks_rundir *rd, const char *name, struct ks_err *err);
int ks_mtr_out_commit(struct ks_mtr_out *o, struct ks_err *err);

#endif
