/*
 * The hotspot analysis of kscope's Valgrind tool (--analysis=hotspot),
 * behind `kscope op --simulate`: it counts every guest instruction the
 * program executes, per thread and instruction, runs each instruction
 * fetch and data access through a simulated cache hierarchy
 * (kst_hotcache.c), charges simulated cycles, and at the end writes the
 * raw file src/op/sim/simraw.h describes, which src/op/sim turns into
 * deliverables.  It counts what callgrind and cachegrind count
 * (instructions per IMark, data accesses per load, store or modify), and
 * replaces nothing in the program: kst_main.c keeps the preload library
 * out of it.
 *
 * Cost model (docs/simulate.md repeats it):
 *
 *   BASE   cycles of one execution of an instruction: 1, plus 13 when
 *          its IR divides or takes a square root in floating point
 *          (scalar or any SIMD lane).
 *   CYCLES of one execution: BASE, plus for the instruction fetch and
 *          for each data access that missed level 0 the LATENCY of the
 *          level that served it (--cache, --icache), or --mem-latency
 *          when no level held it.  An access touching several lines
 *          costs the latency of the deepest level any of its lines came
 *          from.
 *   CLOCK  each thread has a simulated clock that advances by the
 *          cycles of every instruction it executes while counting
 *          (inside the --region, or always): the bandwidth buckets and
 *          the trace's START and END are read on it.
 *   FLOPS  per execution, from the instruction's IR: one per scalar or
 *          lane-0 add, subtract, multiply, divide or square root, one
 *          per lane of a SIMD one, two per fused multiply-add (per
 *          lane); min/max, compares, conversions, negation and abs count
 *          nothing.
 *
 * The caches are simulated for every instruction of the selected
 * threads; only the counting (instructions, cache counts, cycles,
 * bandwidth, trace) stops outside the region.  The region of a thread
 * starts when it executes the first instruction of a function whose name
 * matches --region and ends when its stack pointer rises above the value
 * it had there (the function returned or was left by longjmp), checked
 * at the start of each superblock; nested entries keep the outermost.
 *
 * Run-time cost: one helper call per superblock (trace, region exit),
 * one per instruction with data accesses, merged with its first access,
 * one per further access, and one per run of up to three instructions
 * without; per-instruction facts are precomputed structures passed as
 * constants, per-thread counters are arrays indexed by the instruction's
 * number (each instruction remembers the counters its last thread used),
 * and the common cases (a fetch from the line fetched last, an access to
 * the most recently used line of its level-0 set) stay in the helpers.
 * Only a level-0 miss, in the slow path, also counts the sets of the
 * second level and the hot lines (one bucket of a small table): the
 * hits cost nothing more (with one level, whose sets count every
 * access, every access takes the slow path).
 */
#include "pub_tool_basics.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vki.h"
#include "pub_tool_vkiscnums.h"

#include "glob.h"
#include "kst_int.h"

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Cycles added to BASE by a floating-point divide or square root. */
#define KST_HOT_DIV_CYCLES 13
/* Default latencies of data levels 0..3. */
static const UInt default_latency[KS_SIM_MAX_LEVELS] = { 4, 14, 50, 80 };
#define KST_HOT_DEFAULT_CACHE "L1=32k:8:64,LL=8m:16:64"

/* Per-thread counters of one instruction, `stride` ULongs:
 * executions, cycles, bytes loaded, bytes stored, instruction-cache
 * misses, then accesses and misses of each data level. */
enum { X_EXECS, X_CYCLES, X_LOADB, X_STOREB, X_IMISS, X_LEVELS };
#define X_ACC(k) (X_LEVELS + 2 * (k))
#define X_MISS(k) (X_LEVELS + 2 * (k) + 1)
/* Instructions per counter chunk. */
#define CHUNK_BITS 10
#define CHUNK_INS (1u << CHUNK_BITS)

/* Data-access descriptor passed to the helpers as one word: bytes the
 * cache simulation covers (bits 0-15), read and write (16, 17), bytes
 * the instruction really moves (18 up). */
#define ACC_RD (1u << 16)
#define ACC_WR (1u << 17)
#define ACC_SIM(info) ((UInt)((info) & 0xFFFF))
#define ACC_BYTES(info) ((ULong)(info) >> 18)

/* The tool's state is global: Valgrind's callbacks carry no context, and
 * it runs one guest thread at a time, so nothing here needs a lock. */

/* ------------------------------------------------------------------ */
/* Configuration                                                       */
/* ------------------------------------------------------------------ */

static UInt nlev;                 /* data levels */
static UInt stride;               /* ULongs per instruction counter */
static UInt bw_width;             /* ULongs per bandwidth bucket: 2 (levels + 1) */
/* Extra cycles of an access served by level r (0: level 0 or the
 * instruction cache, nlev: memory). */
static ULong lat_of[KS_SIM_MAX_LEVELS + 1];
static UInt min_line;             /* level 0's line: accesses wider are cut */
static struct kst_hc *shared_last; /* the last level, one for all threads */
static Int sp_offset = -1;        /* guest state offset of the stack pointer */
static Bool region_on;
static ULong interval;            /* bandwidth bucket width, doubles */
/* The pipeline chart starts where the user looks: with --region, inside
 * it (blocks are traced only while counting); without, at the first
 * entry of `main`, so that the dynamic loader and the C library's start
 * do not fill --trace-limit.  trace_open: blocks are traced; trace_tid
 * and trace_clock: the thread that entered main, and its clock then. */
static Bool trace_open, trace_gate_main, trace_opened_at_main;
static UInt trace_tid;
static ULong trace_clock;
/* The per-set counters (KST_SET_N per set) of level set_level: the
 * second level, or the only one; summed over threads (one runs at a
 * time).  Counted by the cache model on the accesses that reach that
 * level (struct kst_hc_obs), so level-0 hits cost nothing. */
static UInt set_level;
static UWord set_count;
static ULong *set_ctrs;
static UInt l0_line_bits;         /* level 0's line is 2^l0_line_bits bytes */
/* With one level, the sets of level 0 count every access: do_data's
 * fast path is given this set, which no line matches. */
static UWord no_line_set[1] = { KST_HC_EMPTY };

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

/* A decimal number; False when there is none or it overflows. */
static Bool parse_num(const HChar **p, ULong *out)
{
	ULong v = 0;
	const HChar *s = *p;

	if (*s < '0' || *s > '9')
		return False;
	while (*s >= '0' && *s <= '9') {
		if (v > (~0ULL - 9) / 10)
			return False;
		v = v * 10 + (ULong)(*s - '0');
		s++;
	}
	*p = s;
	*out = v;
	return True;
}

#define GEOMETRY_HELP                                                          \
	"SIZE in bytes or with a k, m or g suffix (1024-based), ASSOC ways "   \
	"(1 or more), LINE a power of two from 16 bytes, SIZE a multiple of "  \
	"ASSOC*LINE and SIZE/(ASSOC*LINE) sets a power of two"

/* SIZE:ASSOC:LINE[:LATENCY] at *p into c; stops at ',' or the end.  The
 * option parsers report a bad value with VG_(fmsg_bad_option), which
 * exits while Valgrind reads the command line. */
static void parse_geometry(const HChar *arg, const HChar **p, struct kst_hot_cache_opt *c,
			   Bool latency_ok, const HChar *what)
{
	ULong size = 0, assoc = 0, line = 0, lat, sets;
	const HChar *s = *p;

	if (!parse_num(&s, &size))
		VG_(fmsg_bad_option)(arg, "%s: expected SIZE:ASSOC:LINE%s; " GEOMETRY_HELP "\n",
				     what, latency_ok ? "[:LATENCY]" : "");
	if (*s == 'k' || *s == 'K' || *s == 'm' || *s == 'M' || *s == 'g' || *s == 'G') {
		UInt shift = (*s == 'k' || *s == 'K') ? 10 : (*s == 'm' || *s == 'M') ? 20 : 30;
		if (size > (1ULL << (60 - shift)))
			VG_(fmsg_bad_option)(arg, "%s: the size is too large\n", what);
		size <<= shift;
		s++;
	}
	if (*s != ':' || (s++, !parse_num(&s, &assoc)) || *s != ':' ||
	    (s++, !parse_num(&s, &line)))
		VG_(fmsg_bad_option)(arg, "%s: expected SIZE:ASSOC:LINE%s; " GEOMETRY_HELP "\n",
				     what, latency_ok ? "[:LATENCY]" : "");
	lat = 0;
	if (*s == ':' && latency_ok) {
		s++;
		if (!parse_num(&s, &lat) || lat > 1000000)
			VG_(fmsg_bad_option)(arg, "%s: LATENCY must be a number of cycles from 0 "
					     "to 1000000\n", what);
		c->latency = (UInt)lat;
	}
	if (*s != ',' && *s != '\0')
		VG_(fmsg_bad_option)(arg, "%s: unexpected '%c'; expected SIZE:ASSOC:LINE%s\n",
				     what, *s, latency_ok ? "[:LATENCY]" : "");
	if (assoc < 1 || assoc > 1024)
		VG_(fmsg_bad_option)(arg, "%s: ASSOC must be from 1 to 1024 ways\n", what);
	if (line < KST_HC_MIN_LINE || line > 65536 || (line & (line - 1)))
		VG_(fmsg_bad_option)(arg, "%s: LINE must be a power of two from %u to 65536 "
				     "bytes\n", what, KST_HC_MIN_LINE);
	if (size == 0 || size % (assoc * line) != 0)
		VG_(fmsg_bad_option)(arg, "%s: SIZE must be a positive multiple of ASSOC*LINE "
				     "(%llu bytes)\n", what, assoc * line);
	sets = size / (assoc * line);
	if (sets & (sets - 1))
		VG_(fmsg_bad_option)(arg, "%s: SIZE/(ASSOC*LINE) = %llu sets is not a power "
				     "of two\n", what, sets);
	if (sets * assoc > (1ULL << 28))
		VG_(fmsg_bad_option)(arg, "%s: more than 2^28 lines\n", what);
	c->size = size;
	c->assoc = (UInt)assoc;
	c->line = (UInt)line;
	*p = s;
}

void kst_hot_opt_cache(const HChar *arg, const HChar *val)
{
	struct kst_hot_opts *o = &kst_clo.hot;
	const HChar *s = val;
	UInt n = 0, k;

	for (;;) {
		struct kst_hot_cache_opt *c;
		UInt len = 0;
		if (n == KS_SIM_MAX_LEVELS)
			VG_(fmsg_bad_option)(arg, "at most %d cache levels\n", KS_SIM_MAX_LEVELS);
		c = &o->level[n];
		VG_(memset)(c, 0, sizeof(*c));
		while (s[len] && s[len] != '=' && s[len] != ',' && s[len] != ':')
			len++;
		if (len == 0 || s[len] != '=')
			VG_(fmsg_bad_option)(arg, "expected NAME=SIZE:ASSOC:LINE[:LATENCY],... "
					     "(1 to %d data-cache levels, closest to the core "
					     "first, e.g. " KST_HOT_DEFAULT_CACHE ")\n",
					     KS_SIM_MAX_LEVELS);
		if (len >= sizeof(c->name))
			VG_(fmsg_bad_option)(arg, "a level name has at most %u characters\n",
					     (UInt)sizeof(c->name) - 1);
		for (k = 0; k < len; k++) {
			HChar ch = s[k];
			if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
				VG_(fmsg_bad_option)(arg, "a level name is made of letters, "
						     "digits, '_' and '-'\n");
			c->name[k] = ch;
		}
		c->latency = default_latency[n];
		s += len + 1;
		parse_geometry(arg, &s, c, True, c->name);
		if (n > 0 && c->line < o->level[n - 1].line)
			VG_(fmsg_bad_option)(arg, "the line of %s (%u bytes) is smaller than the "
					     "line of %s (%u bytes): lines must not shrink "
					     "going away from the core\n",
					     c->name, c->line, o->level[n - 1].name,
					     o->level[n - 1].line);
		n++;
		if (*s == '\0')
			break;
		s++; /* ',' */
	}
	o->nlevels = n;
}

void kst_hot_opt_icache(const HChar *arg, const HChar *val)
{
	const HChar *s = val;

	parse_geometry(arg, &s, &kst_clo.hot.icache, False, "--icache");
	if (*s != '\0')
		VG_(fmsg_bad_option)(arg, "expected SIZE:ASSOC:LINE (one instruction cache)\n");
	kst_clo.hot.icache_set = True;
	kst_clo.hot.icache_arg = arg;
}

void kst_hot_opt_region(const HChar *arg, const HChar *val)
{
	const HChar *s = val;

	/* Alternatives separated by '|', none empty, each a prefix glob. */
	if (*s == '\0')
		VG_(fmsg_bad_option)(arg, "expected function names or prefix globs "
				     "separated by '|' (e.g. dot|mat*mul)\n");
	for (; *s; s++) {
		if (*s == '|' && (s == val || s[1] == '\0' || s[1] == '|'))
			VG_(fmsg_bad_option)(arg, "an alternative of the pattern is empty; "
					     "expected NAME|NAME... with '*' for any run of "
					     "characters\n");
		if ((UChar)*s < 0x20)
			VG_(fmsg_bad_option)(arg, "control characters are not allowed\n");
	}
	kst_clo.hot.region = val;
}

static Int cmp_uint(const void *a, const void *b)
{
	UInt x = *(const UInt *)a, y = *(const UInt *)b;
	return x < y ? -1 : x > y;
}

void kst_hot_opt_threads(const HChar *arg, const HChar *val)
{
	struct kst_hot_opts *o = &kst_clo.hot;
	const HChar *s = val;
	UInt n = 1, i, j;

	for (i = 0; s[i]; i++)
		n += s[i] == ',';
	if (o->threads)
		VG_(free)(o->threads);
	o->threads = VG_(malloc)("kst.hot.threads", n * sizeof(*o->threads));
	for (i = 0; i < n; i++) {
		ULong v = 0;
		if (!parse_num(&s, &v) || v < 1 || v > 100000 || (*s != ',' && *s != '\0'))
			VG_(fmsg_bad_option)(arg, "expected a comma-separated list of Valgrind "
					     "thread ids (1 is the main thread)\n");
		o->threads[i] = (UInt)v;
		if (*s == ',')
			s++;
	}
	VG_(ssort)(o->threads, n, sizeof(*o->threads), cmp_uint);
	for (i = j = 0; i < n; i++)
		if (j == 0 || o->threads[j - 1] != o->threads[i])
			o->threads[j++] = o->threads[i];
	o->nthreads = j;
}

static Bool thread_selected(ThreadId tid)
{
	const struct kst_hot_opts *o = &kst_clo.hot;
	UInt lo = 0, hi;

	if (!o->threads)
		return True;
	hi = o->nthreads;
	while (lo < hi) {
		UInt mid = (lo + hi) / 2;
		if (o->threads[mid] == tid)
			return True;
		if (o->threads[mid] < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return False;
}

static Bool region_match(const HChar *name)
{
	const HChar *p = kst_clo.hot.region;

	for (;;) {
		const HChar *bar = VG_(strchr)(p, '|');
		long len = bar ? (long)(bar - p) : (long)VG_(strlen)(p);
		if (ks_glob_prefix(p, len, name))
			return True;
		if (!bar)
			return False;
		p = bar + 1;
	}
}

/* ------------------------------------------------------------------ */
/* Instructions, superblocks, names                                    */
/* ------------------------------------------------------------------ */

/* One instruction, made when it is first translated and never freed: the
 * helpers get its address as a constant. */
struct hins {
	/* used at run time */
	UWord ic_key;             /* its instruction-cache line; never a line
				   * number when its bytes span two lines */
	UInt id;
	UInt base;                /* base cycles */
	/* The counters of the thread that ran it last (one thread runs
	 * most code: this saves looking them up). */
	const struct hthread *ctr_thread;
	ULong *ctr;
	UChar len;
	/* for the file */
	UChar pipe;
	UChar bytes[16];
	Addr addr;
	UInt flops;
	UChar vlanes, velem;      /* vector lanes used and their bits, 0 0
				   * without lane-wise vector work */
	Int file, fn;             /* -1: unknown */
	UInt line;                /* 0: unknown */
	struct hins *hnext;       /* hash chain, by (addr, len) */
};

/* One translation of a superblock: its instructions in order. */
struct hsb {
	UInt id;
	UInt n;
	UInt ins[0];
};

static struct hins **ins_hash;   /* (addr, len) -> instruction */
#define INS_HASH_BITS 16
static struct hins **ins_by_id;  /* id -> instruction */
static UInt n_ins, cap_ins;
static struct hsb **sbs;
static UInt n_sbs, cap_sbs;

/* Interned strings (source paths, function names) by id. */
struct hstr {
	struct hstr *next;
	UInt id;
	HChar s[0];
};
struct strtab {
	struct hstr **hash;
	struct hstr **by_id;
	UInt n, cap;
};
#define STR_HASH_BITS 12
static struct strtab files, fns;

static void *grow(void *arr, UInt *cap, UInt need, SizeT elem)
{
	UInt c = *cap ? *cap : 1024;

	if (need <= *cap)
		return arr;
	while (c < need)
		c *= 2;
	arr = VG_(realloc)("kst.hot.arr", arr, (SizeT)c * elem);
	*cap = c;
	return arr;
}

static UInt str_hash(const HChar *s)
{
	UInt h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (UChar)*s) * 16777619u;
	return h;
}

static Int str_intern(struct strtab *t, const HChar *s)
{
	UInt h = str_hash(s) & ((1u << STR_HASH_BITS) - 1);
	struct hstr *e;
	SizeT len;

	if (!t->hash)
		t->hash = VG_(calloc)("kst.hot.str", 1u << STR_HASH_BITS, sizeof(*t->hash));
	for (e = t->hash[h]; e; e = e->next)
		if (VG_(strcmp)(e->s, s) == 0)
			return (Int)e->id;
	len = VG_(strlen)(s);
	e = VG_(malloc)("kst.hot.str", sizeof(*e) + len + 1);
	VG_(memcpy)(e->s, s, len + 1);
	e->id = t->n;
	e->next = t->hash[h];
	t->hash[h] = e;
	t->by_id = grow(t->by_id, &t->cap, t->n + 1, sizeof(*t->by_id));
	t->by_id[t->n++] = e;
	return (Int)e->id;
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

struct hthread {
	ULong clock;              /* simulated cycles while counting */
	Bool active;              /* counting: in the region, or no region */
	Addr entry_sp;            /* stack pointer at the region's entry */
	UWord last_iline;         /* instruction-cache line fetched last */
	/* level 0, copied here for the accesses that hit its most
	 * recently used line */
	UWord *l0_tags;
	UWord l0_mask;
	UInt l0_assoc, l0_bits;
	ULong **chunks;           /* counters, CHUNK_INS instructions each */
	UInt nchunks;
	struct kst_hier hier;
	/* bandwidth */
	ULong *bw;                /* bw_cap buckets of bw_width ULongs */
	UInt bw_cap, bw_used;     /* buckets allocated, buckets touched */
	ULong *bw_row;            /* the bucket the clock is in, or NULL */
	ULong bw_end;             /* clock where bw_row's bucket ends */
	/* the superblock execution being traced */
	UInt tr_sb;
	UInt tr_n;                /* instructions counted since it started */
	ULong tr_start;
	ThreadId tid;
};

static struct hthread **threads;  /* by Valgrind thread id */
static UInt n_threads_slots;
/* The running thread's state; NULL when it is not simulated. */
static struct hthread *cur;

struct htr {
	UInt tid, sb, executed;
	ULong start, end;
};
static struct htr *trace;
static UInt n_trace, cap_trace;
static ULong trace_dropped;
static Bool trace_full;           /* n_trace reached --trace-limit */

/* How the program ended.  Valgrind tells the tool neither the exit
 * status nor the signal that ended the program: the status comes from
 * the program's exit system calls, the signal from the ones it sent
 * itself (abort, raise) or from the terminating signals found pending
 * when its code stopped running (Valgrind holds signals blocked while
 * the program's code runs and takes them when the time slice ends, so a
 * signal from outside that ends a running program shows up there; one
 * that arrives during a blocking system call does not, and is reported
 * as signal 0). */
static struct kst_exit_seen ended;
static Int pending_signal;        /* last terminating signal seen pending */

static struct hthread *thread_new(ThreadId tid)
{
	struct hthread *t = VG_(calloc)("kst.hot.thread", 1, sizeof(*t));
	const struct kst_hot_opts *o = &kst_clo.hot;
	UInt k;

	t->tid = tid;
	t->active = !region_on;
	t->last_iline = KST_HC_EMPTY;
	t->hier.n = nlev;
	t->hier.ic = VG_(malloc)("kst.hot.cache", sizeof(struct kst_hc));
	kst_hc_init(t->hier.ic, o->icache.size, o->icache.assoc, o->icache.line);
	for (k = 0; k + 1 < nlev; k++) {
		t->hier.lv[k] = VG_(malloc)("kst.hot.cache", sizeof(struct kst_hc));
		kst_hc_init(t->hier.lv[k], o->level[k].size, o->level[k].assoc,
			    o->level[k].line);
	}
	t->hier.lv[nlev - 1] = shared_last;
	t->l0_tags = t->hier.lv[0]->tags;
	t->l0_mask = t->hier.lv[0]->set_mask;
	t->l0_assoc = t->hier.lv[0]->assoc;
	t->l0_bits = t->hier.lv[0]->line_bits;
	if (set_level == 0) {
		/* One level: its sets are counted, hits too, so every access
		 * takes the slow path (a set no line matches). */
		t->l0_tags = no_line_set;
		t->l0_mask = 0;
		t->l0_assoc = 0;
	}
	return t;
}

static struct hthread *thread_of(ThreadId tid)
{
	if (!thread_selected(tid))
		return NULL;
	if (tid >= n_threads_slots) {
		UInt n = n_threads_slots, i;
		while (n <= tid)
			n *= 2;
		threads = VG_(realloc)("kst.hot.threads", threads, n * sizeof(*threads));
		for (i = n_threads_slots; i < n; i++)
			threads[i] = NULL;
		n_threads_slots = n;
	}
	if (!threads[tid])
		threads[tid] = thread_new(tid);
	return threads[tid];
}

static void start_client_code(ThreadId tid, ULong blocks_done)
{
	cur = thread_of(tid);
}

/* Valgrind's raw system call (coregrind's pub_core_syscall.h): the tool
 * interface has no sigpending. */
extern SysRes VG_(do_syscall)(UWord sysno, RegWord a1, RegWord a2, RegWord a3, RegWord a4,
			      RegWord a5, RegWord a6, RegWord a7, RegWord a8);

/* Whether signal s, not handled, ends the program. */
static Bool terminating(Int s)
{
	switch (s) {
	case VKI_SIGCHLD: case VKI_SIGCONT: case VKI_SIGSTOP: case VKI_SIGTSTP:
	case VKI_SIGTTIN: case VKI_SIGTTOU: case VKI_SIGURG: case VKI_SIGWINCH:
		return False;
	default:
		return s >= 1 && s <= 64;
	}
}

static void stop_client_code(ThreadId tid, ULong blocks_done)
{
	vki_sigset_t set;
	SysRes r = VG_(do_syscall)(__NR_rt_sigpending, (RegWord)&set, sizeof(set), 0, 0, 0, 0,
				   0, 0);
	Int s;

	if (sr_isError(r))
		return;
	for (s = 1; s <= 64; s++)
		if (((set.sig[(s - 1) / (8 * sizeof(set.sig[0]))] >>
		      ((s - 1) % (8 * sizeof(set.sig[0])))) & 1) &&
		    terminating(s)) {
			pending_signal = s;
			return;
		}
}

/* A signal the program handles did not end it. */
static void pre_deliver_signal(ThreadId tid, Int sig, Bool alt_stack)
{
	if (sig == pending_signal)
		pending_signal = 0;
	if (sig == ended.self_signal)
		ended.self_signal = 0;
}

void kst_hot_thread_create(ThreadId parent, ThreadId child)
{
	/* Valgrind reuses the number of a thread that ended: the new thread
	 * continues its counters but starts outside the region. */
	if (child < n_threads_slots && threads[child]) {
		struct hthread *t = threads[child];
		t->active = !region_on;
		t->tr_n = 0;
	}
}

/* Counters of instruction id in thread t, made on first use. */
static __attribute__((noinline)) ULong *ctr_slow(struct hthread *t, UInt id)
{
	UInt ch = id >> CHUNK_BITS;

	if (ch >= t->nchunks) {
		UInt n = t->nchunks ? t->nchunks : 64, i;
		while (n <= ch)
			n *= 2;
		t->chunks = VG_(realloc)("kst.hot.chunks", t->chunks, n * sizeof(*t->chunks));
		for (i = t->nchunks; i < n; i++)
			t->chunks[i] = NULL;
		t->nchunks = n;
	}
	if (!t->chunks[ch])
		t->chunks[ch] = VG_(calloc)("kst.hot.ctr", (SizeT)CHUNK_INS * stride,
					    sizeof(ULong));
	return t->chunks[ch] + (id & (CHUNK_INS - 1)) * stride;
}

/* Chunks never move once made, so the pointer stays good. */
static inline ULong *ctr(struct hthread *t, struct hins *in)
{
	if (LIKELY(in->ctr_thread == t))
		return in->ctr;
	in->ctr = ctr_slow(t, in->id);
	in->ctr_thread = t;
	return in->ctr;
}

/* ------------------------------------------------------------------ */
/* Bandwidth and trace                                                 */
/* ------------------------------------------------------------------ */

/* The interval doubles for every thread: bucket i is the sum of buckets
 * 2i and 2i+1 of the old interval. */
static void bw_double(void)
{
	UInt i, j, k;

	interval *= 2;
	for (i = 0; i < n_threads_slots; i++) {
		struct hthread *t = threads[i];
		if (!t || !t->bw)
			continue;
		for (j = 0; j < t->bw_used; j++) {
			ULong *dst = t->bw + (j / 2) * bw_width, *src = t->bw + j * bw_width;
			for (k = 0; k < bw_width; k++) {
				ULong v = src[k];
				if (j % 2 == 0)
					dst[k] = v;
				else
					dst[k] += v;
			}
		}
		t->bw_used = (t->bw_used + 1) / 2;
		VG_(memset)(t->bw + t->bw_used * bw_width, 0,
			    (SizeT)(t->bw_cap - t->bw_used) * bw_width * sizeof(ULong));
		t->bw_row = NULL;
		t->bw_end = 0;
	}
}

static __attribute__((noinline)) ULong *bw_row_slow(struct hthread *t)
{
	ULong b = t->clock / interval;

	while (b >= KS_SIM_MAX_BUCKETS) {
		bw_double();
		b = t->clock / interval;
	}
	if (b >= t->bw_cap) {
		UInt old = t->bw_cap, n = old ? old : 256;
		while (n <= b)
			n *= 2;
		if (n > KS_SIM_MAX_BUCKETS)
			n = KS_SIM_MAX_BUCKETS;
		t->bw = VG_(realloc)("kst.hot.bw", t->bw, (SizeT)n * bw_width * sizeof(ULong));
		VG_(memset)(t->bw + (SizeT)old * bw_width, 0,
			    (SizeT)(n - old) * bw_width * sizeof(ULong));
		t->bw_cap = n;
	}
	if (b + 1 > t->bw_used)
		t->bw_used = (UInt)b + 1;
	t->bw_row = t->bw + b * bw_width;
	t->bw_end = (b + 1) * interval;
	return t->bw_row;
}

/* The bandwidth bucket of the thread's clock now. */
static inline ULong *bw_row(struct hthread *t)
{
	if (LIKELY(t->bw_row && t->clock < t->bw_end))
		return t->bw_row;
	return bw_row_slow(t);
}

static __attribute__((noinline)) void trace_close(struct hthread *t)
{
	if (n_trace < kst_clo.hot.trace_limit) {
		struct htr *r;
		trace = grow(trace, &cap_trace, n_trace + 1, sizeof(*trace));
		r = &trace[n_trace++];
		r->tid = t->tid;
		r->sb = t->tr_sb;
		r->executed = t->tr_n;
		r->start = t->tr_start;
		r->end = t->clock;
		trace_full = n_trace == kst_clo.hot.trace_limit;
	} else {
		trace_dropped++;
		trace_full = True;
	}
	t->tr_n = 0;
}

/* ------------------------------------------------------------------ */
/* Cache sets and hot lines                                            */
/* ------------------------------------------------------------------ */

/* The hot lines: per (level-0 line, instruction), the accesses of that
 * instruction that missed level 0 on that line (the first line that
 * missed, for an access touching two), and per line its dirty
 * write-backs from level 0 (ins HL_WB).  Counted only on level-0
 * misses.  The pairs live in a set-associative table of HL_BUCKETS
 * buckets of HL_WAYS pairs, small enough to stay in the host's caches
 * (a bigger table, or one pruned by sweeps, slowed streaming programs,
 * which miss on a new line at every step, by some 10%): a new pair that
 * finds its bucket full replaces the pair of the bucket with the fewest
 * level-0 misses (write-backs for HL_WB), whose counts go to hl_other.
 * The hot pairs stay, every count is in the table or in hl_other, and
 * each access costs one bucket. */
struct hline {
	UWord line;               /* KST_HC_EMPTY: a free slot */
	UInt ins;                 /* instruction id, or HL_WB */
	ULong ld, st;             /* loads, stores that missed level 0;
				   * HL_WB: ld counts the write-backs */
	ULong miss[KS_SIM_MAX_LEVELS]; /* misses of each level */
};
#define HL_WB (~0u)
#define HL_WAYS 4
#define HL_BUCKETS (1u << 11)
static struct hline *hl;          /* HL_BUCKETS * HL_WAYS pairs */
static struct hline hl_other;     /* the sums of the replaced pairs */
static ULong hl_other_wb;         /* and of the replaced write-backs */
static ULong hl_dropped;          /* pairs replaced */

static void hl_init(void)
{
	UInt i;

	hl = VG_(malloc)("kst.hot.lines", (SizeT)HL_BUCKETS * HL_WAYS * sizeof(*hl));
	for (i = 0; i < HL_BUCKETS * HL_WAYS; i++)
		hl[i].line = KST_HC_EMPTY;
}

static inline ULong hl_weight(const struct hline *e)
{
	return e->ins == HL_WB ? e->ld : e->miss[0];
}

/* The pair (line, ins), made (replacing the coldest of its bucket when
 * the bucket is full) if absent.  Pairs are never removed, only
 * replaced, so a bucket's free slots are at its end. */
static struct hline *hl_get(UWord line, UInt ins)
{
	ULong h = ((ULong)line ^ ((ULong)ins << 40)) * 0x9E3779B97F4A7C15ULL;
	struct hline *b = hl + ((UInt)(h >> 40) & (HL_BUCKETS - 1)) * HL_WAYS, *v = b;
	UInt i, k;

	for (i = 0; i < HL_WAYS; i++) {
		if (b[i].line == line && b[i].ins == ins)
			return &b[i];
		if (b[i].line == KST_HC_EMPTY) {
			v = &b[i];
			goto fill;
		}
		if (hl_weight(&b[i]) < hl_weight(v))
			v = &b[i];
	}
	if (v->ins == HL_WB) {
		hl_other_wb += v->ld;
	} else {
		hl_other.ld += v->ld;
		hl_other.st += v->st;
		for (k = 0; k < KS_SIM_MAX_LEVELS; k++)
			hl_other.miss[k] += v->miss[k];
	}
	hl_dropped++;
fill:
	VG_(memset)(v, 0, sizeof(*v));
	v->line = line;
	v->ins = ins;
	return v;
}

/* A counted data access of instruction in missed level 0 (a store when
 * write), served by level r >= 1; obs says which lines. */
static __attribute__((noinline)) void heat_note(const struct hins *in, Bool write, UInt r,
						const struct kst_hc_obs *obs)
{
	struct hline *e;
	UInt k;

	if (r) {
		e = hl_get(obs->first_miss, in->id);
		if (write)
			e->st++;
		else
			e->ld++;
		for (k = 0; k < r; k++)
			e->miss[k]++;
	}
	for (k = 0; k < obs->nwb; k++)
		hl_get(obs->wb[k], HL_WB)->ld++;
}

/* ------------------------------------------------------------------ */
/* Run-time helpers                                                    */
/* ------------------------------------------------------------------ */

/* A superblock starts: the previous one of this thread is traced, and
 * the region ends when the stack pointer rose above its entry value. */
static VG_REGPARM(2) void h_sb(UWord sb, UWord sp)
{
	struct hthread *t = cur;

	if (!t)
		return;
	if (t->tr_n) {
		if (UNLIKELY(!trace_open)) {
			t->tr_n = 0;      /* before main: not a dropped block */
		} else if (LIKELY(trace_full)) {
			trace_dropped++;
			t->tr_n = 0;
		} else {
			trace_close(t);
		}
	}
	if (region_on && t->active && sp > t->entry_sp)
		t->active = False;
	t->tr_sb = (UInt)sb;
	t->tr_start = t->clock;
}

/* The first instruction of `main` (no --region): the trace opens, the
 * instructions of main's block before this one left out. */
static VG_REGPARM(1) void h_main(UWord unused)
{
	struct hthread *t = cur;

	(void)unused;
	if (trace_open || !t)
		return;
	trace_open = True;
	trace_opened_at_main = True;
	trace_tid = t->tid;
	trace_clock = t->clock;
	t->tr_n = 0;
	t->tr_start = t->clock;
}

/* The first instruction of a function the region names. */
static VG_REGPARM(1) void h_enter(UWord sp)
{
	struct hthread *t = cur;

	if (t && !t->active) {
		t->active = True;
		t->entry_sp = sp;
	}
}

/* The fetch of an instruction: 0 on an instruction-cache hit, else the
 * level that served it.  The line fetched last is the most recently used
 * of its set (only this thread's fetches touch its instruction cache),
 * so fetching it again is a hit that changes nothing. */
static __attribute__((noinline)) UInt fetch_slow(struct hthread *t, const struct hins *in)
{
	const struct kst_hc *ic = t->hier.ic;
	UInt r = 0;

	/* Most others hit the most recently used line of their set. */
	if (in->ic_key == KST_HC_EMPTY - 1 ||
	    (ic->tags[(in->ic_key & ic->set_mask) * ic->assoc] >> 1) != in->ic_key)
		r = kst_hc_fetch(&t->hier, in->addr, in->len, t->active ? bw_row(t) : NULL);
	t->last_iline = (in->addr + in->len - 1) >> ic->line_bits;
	return r;
}

static inline UInt do_fetch(struct hthread *t, struct hins *in)
{
	if (LIKELY(in->ic_key == t->last_iline))
		return 0;
	return fetch_slow(t, in);
}

/* One execution of an instruction whose fetch was served by level r.
 * X_CYCLES gathers the latencies only: the file gets BASE * EXECS added
 * at the end. */
static inline void count_ins(struct hthread *t, struct hins *in, UInt r)
{
	ULong *c = ctr(t, in);

	c[X_EXECS]++;
	t->clock += in->base;
	t->tr_n++;
	if (UNLIKELY(r)) {
		c[X_IMISS]++;
		c[X_CYCLES] += lat_of[r];
		t->clock += lat_of[r];
	}
}

/* The counts of one data access, served by level r. */
static inline void count_data(struct hthread *t, struct hins *in, UWord info, UInt r,
			      ULong *bw)
{
	ULong bytes = ACC_BYTES(info), *c = ctr(t, in);
	UInt k;

	if (info & ACC_RD) {
		c[X_LOADB] += bytes;
		bw[0] += bytes;
	}
	if (info & ACC_WR) {
		c[X_STOREB] += bytes;
		bw[1] += bytes;
	}
	c[X_ACC(0)]++;
	if (LIKELY(r == 0))
		return;
	for (k = 0; k < r; k++) {
		c[X_MISS(k)]++;
		if (k + 1 < nlev)
			c[X_ACC(k + 1)]++;
	}
	c[X_CYCLES] += lat_of[r];
	t->clock += lat_of[r];
}

/* An access that is not a hit on the most recently used line of its set
 * in level 0. */
static __attribute__((noinline)) void data_slow(struct hthread *t, struct hins *in,
						Addr a, UWord info)
{
	ULong *bw = t->active ? bw_row(t) : NULL;
	struct kst_hc_obs obs;
	UInt r;

	obs.sets = set_ctrs;
	obs.sets_level = set_level;
	r = kst_hc_data(&t->hier, a, ACC_SIM(info), (info & ACC_WR) != 0, bw,
			t->active ? &obs : NULL);
	if (t->active) {
		count_data(t, in, info, r, bw);
		if (r || obs.nwb)
			heat_note(in, (info & ACC_WR) != 0, r, &obs);
	}
}

static inline __attribute__((always_inline)) void do_data(struct hthread *t,
							  struct hins *in, Addr a,
							  UWord info)
{
	UWord line = a >> t->l0_bits;
	UWord *set;

	if (LIKELY(((a + ACC_SIM(info) - 1) >> t->l0_bits) == line)) {
		set = t->l0_tags + (line & t->l0_mask) * t->l0_assoc;
		if (LIKELY((set[0] >> 1) == line)) {
			set[0] |= (info & ACC_WR) != 0;
			if (t->active)
				count_data(t, in, info, 0, bw_row(t));
			return;
		}
	}
	data_slow(t, in, a, info);
}

/* An instruction without data access, or whose first one is guarded. */
static VG_REGPARM(1) void h_i(struct hins *in)
{
	struct hthread *t = cur;
	UInt r;

	if (!t)
		return;
	r = do_fetch(t, in);
	if (t->active)
		count_ins(t, in, r);
}

/* Two and three instructions without data accesses in a row.  The
 * common case, all fetches hitting the last line, counts them at once. */
static VG_REGPARM(2) void h_i2(struct hins *a, struct hins *b)
{
	struct hthread *t = cur;

	if (!t)
		return;
	if (LIKELY(a->ic_key == t->last_iline && b->ic_key == t->last_iline)) {
		if (LIKELY(t->active)) {
			ctr(t, a)[X_EXECS]++;
			ctr(t, b)[X_EXECS]++;
			t->clock += a->base + b->base;
			t->tr_n += 2;
		}
		return;
	}
	h_i(a);
	h_i(b);
}

static VG_REGPARM(3) void h_i3(struct hins *a, struct hins *b,
				struct hins *c)
{
	struct hthread *t = cur;

	if (!t)
		return;
	if (LIKELY(a->ic_key == t->last_iline && b->ic_key == t->last_iline &&
		   c->ic_key == t->last_iline)) {
		if (LIKELY(t->active)) {
			ctr(t, a)[X_EXECS]++;
			ctr(t, b)[X_EXECS]++;
			ctr(t, c)[X_EXECS]++;
			t->clock += a->base + b->base + c->base;
			t->tr_n += 3;
		}
		return;
	}
	h_i(a);
	h_i(b);
	h_i(c);
}

/* An instruction and its first data access. */
static VG_REGPARM(3) void h_id(struct hins *in, Addr a, UWord info)
{
	struct hthread *t = cur;
	UInt r;

	if (!t)
		return;
	r = do_fetch(t, in);
	if (t->active)
		count_ins(t, in, r);
	do_data(t, in, a, info);
}

/* A further data access of an instruction. */
static VG_REGPARM(3) void h_d(struct hins *in, Addr a, UWord info)
{
	struct hthread *t = cur;

	if (!t)
		return;
	do_data(t, in, a, info);
}

/* ------------------------------------------------------------------ */
/* What an instruction's IR does                                       */
/* ------------------------------------------------------------------ */

struct facts {
	UInt flops;
	UInt vbits;               /* lane-wise vector work: lanes x element bits,
				   * summed over the operations (op_lanes) */
	UInt vwide, velem;        /* the widest such operation's lanes x bits,
				   * and its element bits */
	Bool divsqrt, vector, load, store;
};

/* Floating-point operations of one IR operation (see the cost model). */
static UInt op_flops(IROp op, Bool *divsqrt)
{
	switch (op) {
	case Iop_AddF16: case Iop_SubF16:
	case Iop_AddF32: case Iop_SubF32: case Iop_MulF32:
	case Iop_AddF64: case Iop_SubF64: case Iop_MulF64:
	case Iop_AddF64r32: case Iop_SubF64r32: case Iop_MulF64r32:
	case Iop_AddF128: case Iop_SubF128: case Iop_MulF128:
	case Iop_AddD64: case Iop_SubD64: case Iop_MulD64:
	case Iop_AddD128: case Iop_SubD128: case Iop_MulD128:
	case Iop_Add32F0x4: case Iop_Sub32F0x4: case Iop_Mul32F0x4:
	case Iop_Add64F0x2: case Iop_Sub64F0x2: case Iop_Mul64F0x2:
		return 1;
	case Iop_DivF32: case Iop_DivF64: case Iop_DivF64r32: case Iop_DivF128:
	case Iop_DivD64: case Iop_DivD128:
	case Iop_SqrtF16: case Iop_SqrtF32: case Iop_SqrtF64: case Iop_SqrtF128:
	case Iop_Div32F0x4: case Iop_Div64F0x2: case Iop_Sqrt32F0x4: case Iop_Sqrt64F0x2:
		*divsqrt = True;
		return 1;
	case Iop_Add32Fx2: case Iop_Sub32Fx2: case Iop_Mul32Fx2: case Iop_PwAdd32Fx2:
	case Iop_Add64Fx2: case Iop_Sub64Fx2: case Iop_Mul64Fx2:
		return 2;
	case Iop_Div64Fx2: case Iop_Sqrt64Fx2:
		*divsqrt = True;
		return 2;
	case Iop_Add32Fx4: case Iop_Sub32Fx4: case Iop_Mul32Fx4:
	case Iop_Add64Fx4: case Iop_Sub64Fx4: case Iop_Mul64Fx4:
		return 4;
	case Iop_Div32Fx4: case Iop_Sqrt32Fx4: case Iop_Div64Fx4: case Iop_Sqrt64Fx4:
		*divsqrt = True;
		return 4;
	case Iop_Add32Fx8: case Iop_Sub32Fx8: case Iop_Mul32Fx8:
	case Iop_Add16Fx8: case Iop_Sub16Fx8:
		return 8;
	case Iop_Div32Fx8: case Iop_Sqrt32Fx8: case Iop_Sqrt16Fx8:
		*divsqrt = True;
		return 8;
	case Iop_MAddF32: case Iop_MSubF32: case Iop_MAddF64: case Iop_MSubF64:
	case Iop_MAddF64r32: case Iop_MSubF64r32:
	case Iop_MAddF128: case Iop_MSubF128: case Iop_NegMAddF128: case Iop_NegMSubF128:
		return 2;
	default:
		return 0;
	}
}

static Bool fp_or_simd_type(IRType ty)
{
	switch (ty) {
	case Ity_F16: case Ity_F32: case Ity_F64: case Ity_F128:
	case Ity_D32: case Ity_D64: case Ity_D128:
	case Ity_V128: case Ity_V256:
		return True;
	default:
		return False;
	}
}

/* An operation of the floating-point or SIMD units: on floating-point or
 * vector values (arithmetic, compares, conversions, shuffles), except the
 * ones that only move bits between a vector register's low part and an
 * integer register or memory, which plain loads, stores and moves are
 * made of. */
static Bool op_is_vector(IROp op)
{
	IRType d, a1, a2, a3, a4;

	switch (op) {
	case Iop_ReinterpF64asI64: case Iop_ReinterpI64asF64:
	case Iop_ReinterpF32asI32: case Iop_ReinterpI32asF32:
	case Iop_ReinterpF128asI128: case Iop_ReinterpI128asF128:
	case Iop_ReinterpD64asI64: case Iop_ReinterpI64asD64:
	case Iop_ReinterpI128asV128: case Iop_ReinterpV128asI128:
	case Iop_32UtoV128: case Iop_64UtoV128:
	case Iop_V128to32: case Iop_V128to64: case Iop_V128HIto64:
	case Iop_SetV128lo32: case Iop_SetV128lo64:
	case Iop_ZeroHI64ofV128: case Iop_ZeroHI96ofV128:
	case Iop_ZeroHI112ofV128: case Iop_ZeroHI120ofV128:
	case Iop_V128HLtoV256: case Iop_V256toV128_0: case Iop_V256toV128_1:
		return False;
	default:
		break;
	}
	typeOfPrimop(op, &d, &a1, &a2, &a3, &a4);
	return fp_or_simd_type(d) || fp_or_simd_type(a1) || fp_or_simd_type(a2) ||
	       fp_or_simd_type(a3) || fp_or_simd_type(a4);
}

/* The lanes a lane-wise operation works on, and in *elem their bits; 0
 * for any other.  Lane-wise: arithmetic, minimum and maximum, averages,
 * compares, absolute value and negation, and per-lane shifts, on
 * floating-point or integer vectors of 64 to 256 bits (a "scalar in a
 * vector" operation such as addss's Add32F0x4 works on one lane), and
 * any scalar floating-point operation (one lane of its widest F16, F32
 * or F64 operand: x87 arithmetic, conversions, the per-lane MAddF32 of
 * which the front end builds packed FMAs).  Bitwise logic, shuffles,
 * permutes, packs, widening and pairwise operations have no lanes here:
 * an instruction made only of them has no vector utilisation. */
#define LANES(l, b) (*elem = (b), (UInt)(l))
static UInt op_lanes(IROp op, UInt *elem)
{
	IRType ty[5];
	UInt bits = 0, k;

	switch (op) {
	case Iop_Abs8x8: case Iop_Add8x8: case Iop_Avg8Ux8: case Iop_CmpEQ8x8:
	case Iop_CmpGT8Sx8: case Iop_CmpGT8Ux8: case Iop_Max8Sx8: case Iop_Max8Ux8:
	case Iop_Min8Sx8: case Iop_Min8Ux8: case Iop_Mul8x8: case Iop_QAdd8Sx8:
	case Iop_QAdd8Ux8: case Iop_QSub8Sx8: case Iop_QSub8Ux8: case Iop_Sar8x8:
	case Iop_SarN8x8: case Iop_Shl8x8: case Iop_ShlN8x8: case Iop_Shr8x8:
	case Iop_ShrN8x8: case Iop_Sub8x8:
		return LANES(8, 8);
	case Iop_Abs8x16: case Iop_Add8x16: case Iop_Avg8Sx16: case Iop_Avg8Ux16:
	case Iop_CmpEQ8x16: case Iop_CmpGT8Sx16: case Iop_CmpGT8Ux16: case Iop_Max8Sx16:
	case Iop_Max8Ux16: case Iop_Min8Sx16: case Iop_Min8Ux16: case Iop_Mul8x16:
	case Iop_MulHi8Sx16: case Iop_MulHi8Ux16: case Iop_QAdd8Sx16: case Iop_QAdd8Ux16:
	case Iop_QSub8Sx16: case Iop_QSub8Ux16: case Iop_Sar8x16: case Iop_SarN8x16:
	case Iop_Shl8x16: case Iop_ShlN8x16: case Iop_Shr8x16: case Iop_ShrN8x16:
	case Iop_Sub8x16:
		return LANES(16, 8);
	case Iop_Add8x32: case Iop_Avg8Ux32: case Iop_CmpEQ8x32: case Iop_CmpGT8Sx32:
	case Iop_Max8Sx32: case Iop_Max8Ux32: case Iop_Min8Sx32: case Iop_Min8Ux32:
	case Iop_QAdd8Sx32: case Iop_QAdd8Ux32: case Iop_QSub8Sx32: case Iop_QSub8Ux32:
	case Iop_Sub8x32:
		return LANES(32, 8);
	case Iop_Abs16x4: case Iop_Add16x4: case Iop_Avg16Ux4: case Iop_CmpEQ16x4:
	case Iop_CmpGT16Sx4: case Iop_CmpGT16Ux4: case Iop_Max16Sx4: case Iop_Max16Ux4:
	case Iop_Min16Sx4: case Iop_Min16Ux4: case Iop_Mul16x4: case Iop_MulHi16Sx4:
	case Iop_MulHi16Ux4: case Iop_QAdd16Sx4: case Iop_QAdd16Ux4: case Iop_QSub16Sx4:
	case Iop_QSub16Ux4: case Iop_Sar16x4: case Iop_SarN16x4: case Iop_Shl16x4:
	case Iop_ShlN16x4: case Iop_Shr16x4: case Iop_ShrN16x4: case Iop_Sub16x4:
		return LANES(4, 16);
	case Iop_Abs16Fx8: case Iop_Abs16x8: case Iop_Add16Fx8: case Iop_Add16x8:
	case Iop_Avg16Sx8: case Iop_Avg16Ux8: case Iop_CmpEQ16Fx8: case Iop_CmpEQ16x8:
	case Iop_CmpGT16Sx8: case Iop_CmpGT16Ux8: case Iop_CmpLE16Fx8: case Iop_CmpLT16Fx8:
	case Iop_Max16Sx8: case Iop_Max16Ux8: case Iop_Min16Sx8: case Iop_Min16Ux8:
	case Iop_Mul16x8: case Iop_MulHi16Sx8: case Iop_MulHi16Ux8: case Iop_Neg16Fx8:
	case Iop_QAdd16Sx8: case Iop_QAdd16Ux8: case Iop_QSub16Sx8: case Iop_QSub16Ux8:
	case Iop_Sar16x8: case Iop_SarN16x8: case Iop_Shl16x8: case Iop_ShlN16x8:
	case Iop_Shr16x8: case Iop_ShrN16x8: case Iop_Sqrt16Fx8: case Iop_Sub16Fx8:
	case Iop_Sub16x8:
		return LANES(8, 16);
	case Iop_Add16x16: case Iop_Avg16Ux16: case Iop_CmpEQ16x16: case Iop_CmpGT16Sx16:
	case Iop_Max16Sx16: case Iop_Max16Ux16: case Iop_Min16Sx16: case Iop_Min16Ux16:
	case Iop_Mul16x16: case Iop_MulHi16Sx16: case Iop_MulHi16Ux16: case Iop_QAdd16Sx16:
	case Iop_QAdd16Ux16: case Iop_QSub16Sx16: case Iop_QSub16Ux16: case Iop_SarN16x16:
	case Iop_ShlN16x16: case Iop_ShrN16x16: case Iop_Sub16x16:
		return LANES(16, 16);
	case Iop_Add32F0x4: case Iop_CmpEQ32F0x4: case Iop_CmpLE32F0x4: case Iop_CmpLT32F0x4:
	case Iop_CmpUN32F0x4: case Iop_Div32F0x4: case Iop_Max32F0x4: case Iop_Min32F0x4:
	case Iop_Mul32F0x4: case Iop_RSqrtEst32F0x4: case Iop_RecipEst32F0x4:
	case Iop_Sqrt32F0x4: case Iop_Sub32F0x4:
		return LANES(1, 32);
	case Iop_Abs32Fx2: case Iop_Abs32x2: case Iop_Add32Fx2: case Iop_Add32x2:
	case Iop_CmpEQ32Fx2: case Iop_CmpEQ32x2: case Iop_CmpGE32Fx2: case Iop_CmpGT32Fx2:
	case Iop_CmpGT32Sx2: case Iop_CmpGT32Ux2: case Iop_Max32Fx2: case Iop_Max32Sx2:
	case Iop_Max32Ux2: case Iop_Min32Fx2: case Iop_Min32Sx2: case Iop_Min32Ux2:
	case Iop_Mul32Fx2: case Iop_Mul32x2: case Iop_Neg32Fx2: case Iop_QAdd32Sx2:
	case Iop_QAdd32Ux2: case Iop_QSub32Sx2: case Iop_QSub32Ux2: case Iop_RSqrtEst32Fx2:
	case Iop_RSqrtEst32Ux2: case Iop_RecipEst32Fx2: case Iop_RecipEst32Ux2:
	case Iop_Sar32x2: case Iop_SarN32x2: case Iop_Shl32x2: case Iop_ShlN32x2:
	case Iop_Shr32x2: case Iop_ShrN32x2: case Iop_Sub32Fx2: case Iop_Sub32x2:
		return LANES(2, 32);
	case Iop_Abs32Fx4: case Iop_Abs32x4: case Iop_Add32Fx4: case Iop_Add32x4:
	case Iop_Avg32Sx4: case Iop_Avg32Ux4: case Iop_CmpEQ32Fx4: case Iop_CmpEQ32x4:
	case Iop_CmpGE32Fx4: case Iop_CmpGT32Fx4: case Iop_CmpGT32Sx4: case Iop_CmpGT32Ux4:
	case Iop_CmpLE32Fx4: case Iop_CmpLT32Fx4: case Iop_CmpUN32Fx4: case Iop_Div32Fx4:
	case Iop_Max32Fx4: case Iop_Max32Sx4: case Iop_Max32Ux4: case Iop_Min32Fx4:
	case Iop_Min32Sx4: case Iop_Min32Ux4: case Iop_Mul32Fx4: case Iop_Mul32x4:
	case Iop_MulHi32Sx4: case Iop_MulHi32Ux4: case Iop_Neg32Fx4: case Iop_QAdd32Sx4:
	case Iop_QAdd32Ux4: case Iop_QSub32Sx4: case Iop_QSub32Ux4: case Iop_RSqrtEst32Fx4:
	case Iop_RSqrtEst32Ux4: case Iop_RecipEst32Fx4: case Iop_RecipEst32Ux4:
	case Iop_Sar32x4: case Iop_SarN32x4: case Iop_Shl32x4: case Iop_ShlN32x4:
	case Iop_Shr32x4: case Iop_ShrN32x4: case Iop_Sqrt32Fx4: case Iop_Sub32Fx4:
	case Iop_Sub32x4:
		return LANES(4, 32);
	case Iop_Add32Fx8: case Iop_Add32x8: case Iop_CmpEQ32x8: case Iop_CmpGT32Sx8:
	case Iop_Div32Fx8: case Iop_Max32Fx8: case Iop_Max32Sx8: case Iop_Max32Ux8:
	case Iop_Min32Fx8: case Iop_Min32Sx8: case Iop_Min32Ux8: case Iop_Mul32Fx8:
	case Iop_Mul32x8: case Iop_RSqrtEst32Fx8: case Iop_RecipEst32Fx8: case Iop_SarN32x8:
	case Iop_ShlN32x8: case Iop_ShrN32x8: case Iop_Sqrt32Fx8: case Iop_Sub32Fx8:
	case Iop_Sub32x8:
		return LANES(8, 32);
	case Iop_Add64F0x2: case Iop_CmpEQ64F0x2: case Iop_CmpLE64F0x2: case Iop_CmpLT64F0x2:
	case Iop_CmpUN64F0x2: case Iop_Div64F0x2: case Iop_Max64F0x2: case Iop_Min64F0x2:
	case Iop_Mul64F0x2: case Iop_QAdd64Sx1: case Iop_QAdd64Ux1: case Iop_QSub64Sx1:
	case Iop_QSub64Ux1: case Iop_Sqrt64F0x2: case Iop_Sub64F0x2:
		return LANES(1, 64);
	case Iop_Abs64Fx2: case Iop_Abs64x2: case Iop_Add64Fx2: case Iop_Add64x2:
	case Iop_Avg64Sx2: case Iop_Avg64Ux2: case Iop_CmpEQ64Fx2: case Iop_CmpEQ64x2:
	case Iop_CmpGT64Sx2: case Iop_CmpGT64Ux2: case Iop_CmpLE64Fx2: case Iop_CmpLT64Fx2:
	case Iop_CmpUN64Fx2: case Iop_Div64Fx2: case Iop_Max64Fx2: case Iop_Max64Sx2:
	case Iop_Max64Ux2: case Iop_Min64Fx2: case Iop_Min64Sx2: case Iop_Min64Ux2:
	case Iop_Mul64Fx2: case Iop_Neg64Fx2: case Iop_QAdd64Sx2: case Iop_QAdd64Ux2:
	case Iop_QSub64Sx2: case Iop_QSub64Ux2: case Iop_RSqrtEst64Fx2:
	case Iop_RecipEst64Fx2: case Iop_Sar64x2: case Iop_SarN64x2: case Iop_Shl64x2:
	case Iop_ShlN64x2: case Iop_Shr64x2: case Iop_ShrN64x2: case Iop_Sqrt64Fx2:
	case Iop_Sub64Fx2: case Iop_Sub64x2:
		return LANES(2, 64);
	case Iop_Add64Fx4: case Iop_Add64x4: case Iop_CmpEQ64x4: case Iop_CmpGT64Sx4:
	case Iop_Div64Fx4: case Iop_Max64Fx4: case Iop_Min64Fx4: case Iop_Mul64Fx4:
	case Iop_ShlN64x4: case Iop_ShrN64x4: case Iop_Sqrt64Fx4: case Iop_Sub64Fx4:
	case Iop_Sub64x4:
		return LANES(4, 64);
	default:
		break;
	}
	typeOfPrimop(op, &ty[0], &ty[1], &ty[2], &ty[3], &ty[4]);
	for (k = 0; k < 5; k++) {
		if (ty[k] == Ity_V128 || ty[k] == Ity_V256)
			return 0;
		if (ty[k] == Ity_F16 && bits < 16)
			bits = 16;
		if (ty[k] == Ity_F32 && bits < 32)
			bits = 32;
		if (ty[k] == Ity_F64 && bits < 64)
			bits = 64;
	}
	return bits ? LANES(1, bits) : 0;
}
#undef LANES

static void note_op(struct facts *f, IROp op)
{
	UInt elem = 0, lanes;

	f->flops += op_flops(op, &f->divsqrt);
	if (!op_is_vector(op))
		return;
	f->vector = True;
	lanes = op_lanes(op, &elem);
	if (lanes) {
		f->vbits += lanes * elem;
		if (lanes * elem > f->vwide) {
			f->vwide = lanes * elem;
			f->velem = elem;
		}
	}
}

static void scan_expr(struct facts *f, const IRExpr *e)
{
	Int i;

	if (!e)
		return;
	switch (e->tag) {
	case Iex_Unop:
		note_op(f, e->Iex.Unop.op);
		scan_expr(f, e->Iex.Unop.arg);
		break;
	case Iex_Binop:
		note_op(f, e->Iex.Binop.op);
		scan_expr(f, e->Iex.Binop.arg1);
		scan_expr(f, e->Iex.Binop.arg2);
		break;
	case Iex_Triop:
		note_op(f, e->Iex.Triop.details->op);
		scan_expr(f, e->Iex.Triop.details->arg1);
		scan_expr(f, e->Iex.Triop.details->arg2);
		scan_expr(f, e->Iex.Triop.details->arg3);
		break;
	case Iex_Qop:
		note_op(f, e->Iex.Qop.details->op);
		scan_expr(f, e->Iex.Qop.details->arg1);
		scan_expr(f, e->Iex.Qop.details->arg2);
		scan_expr(f, e->Iex.Qop.details->arg3);
		scan_expr(f, e->Iex.Qop.details->arg4);
		break;
	case Iex_Load:
		f->load = True;
		scan_expr(f, e->Iex.Load.addr);
		break;
	case Iex_ITE:
		scan_expr(f, e->Iex.ITE.cond);
		scan_expr(f, e->Iex.ITE.iftrue);
		scan_expr(f, e->Iex.ITE.iffalse);
		break;
	case Iex_CCall:
		for (i = 0; e->Iex.CCall.args[i]; i++)
			scan_expr(f, e->Iex.CCall.args[i]);
		break;
	case Iex_GetI:
		scan_expr(f, e->Iex.GetI.ix);
		break;
	default:
		break;
	}
}

static void scan_stmt(struct facts *f, const IRStmt *st)
{
	Int i;

	switch (st->tag) {
	case Ist_WrTmp:
		scan_expr(f, st->Ist.WrTmp.data);
		break;
	case Ist_Put:
		scan_expr(f, st->Ist.Put.data);
		break;
	case Ist_PutI:
		scan_expr(f, st->Ist.PutI.details->ix);
		scan_expr(f, st->Ist.PutI.details->data);
		break;
	case Ist_Store:
		f->store = True;
		scan_expr(f, st->Ist.Store.addr);
		scan_expr(f, st->Ist.Store.data);
		break;
	case Ist_StoreG:
		f->store = True;
		scan_expr(f, st->Ist.StoreG.details->data);
		break;
	case Ist_LoadG:
		f->load = True;
		break;
	case Ist_CAS:
		f->load = f->store = True;
		break;
	case Ist_LLSC:
		if (st->Ist.LLSC.storedata)
			f->store = True;
		else
			f->load = True;
		break;
	case Ist_Dirty: {
		const IRDirty *d = st->Ist.Dirty.details;
		if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
			f->load = True;
		if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
			f->store = True;
		for (i = 0; d->args[i]; i++)
			scan_expr(f, d->args[i]);
		break;
	}
	case Ist_Exit:
		scan_expr(f, st->Ist.Exit.guard);
		break;
	default:
		break;
	}
}

static Addr const_addr(const IRConst *c, Bool *ok)
{
	*ok = True;
	switch (c->tag) {
	case Ico_U64:
		return (Addr)c->Ico.U64;
	case Ico_U32:
		return (Addr)c->Ico.U32;
	default:
		*ok = False;
		return 0;
	}
}

/* The pipe class of the instruction at in->stmts[from..to) (to: the next
 * IMark or the end), whose address and length are addr and len. */
static UInt classify(const IRSB *in, Int from, Int to, Addr addr, UInt len,
		     const struct facts *f)
{
	Bool transfer = False, self = False, ok;
	Addr next = addr + len, dst;
	Int i;

	for (i = from; i < to; i++) {
		const IRStmt *st = in->stmts[i];
		IRJumpKind jk;
		if (st->tag != Ist_Exit)
			continue;
		jk = st->Ist.Exit.jk;
		if (jk != Ijk_Boring && jk != Ijk_Call && jk != Ijk_Ret)
			continue; /* a fault or an emulation warning, not a jump */
		dst = const_addr(st->Ist.Exit.dst, &ok);
		if (ok && dst == addr)
			self = True; /* a rep-prefixed string instruction */
		else
			transfer = True;
	}
	if (to < in->stmts_used) {
		/* Not the last: the next instruction is where control went
		 * (the translator follows unconditional jumps and calls). */
		dst = in->stmts[to]->Ist.IMark.addr;
		if (dst == addr)
			self = True;
		else if (dst != next)
			transfer = True;
	} else if (in->jumpkind == Ijk_Call || in->jumpkind == Ijk_Ret) {
		transfer = True;
	} else if (in->jumpkind == Ijk_Boring) {
		if (in->next->tag != Iex_Const) {
			transfer = True;
		} else {
			dst = const_addr(in->next->Iex.Const.con, &ok);
			if (ok && dst == addr)
				self = True;
			else if (!ok || dst != next)
				transfer = True;
		}
	}
	if (transfer && !self)
		return KS_SIM_PIPE_BRANCH;
	if (f->vector || f->flops)
		return KS_SIM_PIPE_VECTOR;
	if (f->store)
		return KS_SIM_PIPE_STORE;
	if (f->load)
		return KS_SIM_PIPE_LOAD;
	return KS_SIM_PIPE_SCALAR;
}

/* The instruction at addr of len bytes, made (from in->stmts[from..to))
 * when first seen. */
static struct hins *ins_get(const IRSB *in, Int from, Int to, Addr addr, UInt len)
{
	UInt h = (UInt)(((addr * 0x9E3779B97F4A7C15ULL) ^ len) >> (64 - INS_HASH_BITS));
	struct hins *x;
	struct facts f;
	DiEpoch ep;
	const HChar *file, *dir, *fn;
	UInt line, i, ic_bits = 0;
	Int j;

	for (x = ins_hash[h]; x; x = x->hnext)
		if (x->addr == addr && x->len == len)
			return x;
	x = VG_(calloc)("kst.hot.ins", 1, sizeof(*x));
	x->addr = addr;
	x->len = (UChar)len;
	x->id = n_ins;
	while ((1u << ic_bits) < kst_clo.hot.icache.line)
		ic_bits++;
	x->ic_key = addr >> ic_bits;
	if (((addr + len - 1) >> ic_bits) != x->ic_key)
		x->ic_key = KST_HC_EMPTY - 1;
	VG_(memset)(&f, 0, sizeof(f));
	for (j = from; j < to; j++)
		scan_stmt(&f, in->stmts[j]);
	x->flops = f.flops;
	x->base = 1 + (f.divsqrt ? KST_HOT_DIV_CYCLES : 0);
	x->pipe = (UChar)classify(in, from, to, addr, len, &f);
	/* Lanes: the bits of lane-wise work over the element size of its
	 * widest operation (two V128 halves of a 256-bit operation, or the
	 * eight MAddF32 of a vfmadd ymm, add up), at most the widest vector
	 * the engine runs. */
	if (x->pipe == KS_SIM_PIPE_VECTOR && f.velem) {
		UInt lanes = f.vbits / f.velem, most = KS_SIM_VECTOR_BITS / f.velem;

		x->vlanes = (UChar)(lanes < 1 ? 1 : lanes > most ? most : lanes);
		x->velem = (UChar)f.velem;
	}
	/* The bytes: the translator has just read them from guest memory. */
	for (i = 0; i < len && i < sizeof(x->bytes); i++)
		x->bytes[i] = ((const UChar *)addr)[i];
	ep = VG_(current_DiEpoch)();
	x->file = x->fn = -1;
	if (VG_(get_filename_linenum)(ep, addr, &file, &dir, &line)) {
		/* A file named by its absolute path (clang's DWARF 5 line
		 * tables) is not under the directory beside it. */
		if (dir && dir[0] && file[0] != '/') {
			SizeT dl = VG_(strlen)(dir), fl = VG_(strlen)(file);
			HChar *path = VG_(malloc)("kst.hot.path", dl + fl + 2);
			VG_(memcpy)(path, dir, dl);
			path[dl] = '/';
			VG_(memcpy)(path + dl + 1, file, fl + 1);
			x->file = str_intern(&files, path);
			VG_(free)(path);
		} else {
			x->file = str_intern(&files, file);
		}
		x->line = line;
	}
	if (VG_(get_fnname)(ep, addr, &fn))
		x->fn = str_intern(&fns, fn);
	x->hnext = ins_hash[h];
	ins_hash[h] = x;
	ins_by_id = grow(ins_by_id, &cap_ins, n_ins + 1, sizeof(*ins_by_id));
	ins_by_id[n_ins++] = x;
	return x;
}

/* ------------------------------------------------------------------ */
/* Instrumentation                                                     */
/* ------------------------------------------------------------------ */

/* Instructions whose fetch is not in the code yet, at most this many:
 * consecutive instructions without data accesses share one call, placed
 * before the next exit, data access or region entry. */
#define MAX_PENDING 3

struct ist {
	IRSB *out;
	IRType word;
	struct hins *ins;         /* the instruction being copied */
	struct hins *pending[MAX_PENDING];
	UInt npending;
};

static IRAtom *get_sp(struct ist *s)
{
	IRTemp t = newIRTemp(s->out->tyenv, s->word);
	addStmtToIRSB(s->out, IRStmt_WrTmp(t, IRExpr_Get(sp_offset, s->word)));
	return IRExpr_RdTmp(t);
}

static void add_call(struct ist *s, Int regparms, const HChar *name, void *fn,
		     IRExpr **args, IRAtom *guard)
{
	IRDirty *d = unsafeIRDirty_0_N(regparms, name, VG_(fnptr_to_fnentry)(fn), args);
	if (guard)
		d->guard = guard;
	addStmtToIRSB(s->out, IRStmt_Dirty(d));
}

/* Calls for the pending fetches but the last `keep` ones. */
static void flush_fetches(struct ist *s, UInt keep)
{
	UInt i = 0, n = s->npending - keep;

	while (n - i >= 3) {
		add_call(s, 3, "h_i3", h_i3,
			 mkIRExprVec_3(mkIRExpr_HWord((HWord)s->pending[i]),
				       mkIRExpr_HWord((HWord)s->pending[i + 1]),
				       mkIRExpr_HWord((HWord)s->pending[i + 2])), NULL);
		i += 3;
	}
	if (n - i == 2)
		add_call(s, 2, "h_i2", h_i2,
			 mkIRExprVec_2(mkIRExpr_HWord((HWord)s->pending[i]),
				       mkIRExpr_HWord((HWord)s->pending[i + 1])), NULL);
	else if (n - i == 1)
		add_call(s, 1, "h_i", h_i, mkIRExprVec_1(mkIRExpr_HWord((HWord)s->pending[i])),
			 NULL);
	for (i = 0; i < keep; i++)
		s->pending[i] = s->pending[n + i];
	s->npending = keep;
}

static void flush_fetch(struct ist *s)
{
	flush_fetches(s, 0);
}

static Bool guard_is_true(const IRExpr *g)
{
	return !g || (g->tag == Iex_Const && g->Iex.Const.con->tag == Ico_U1 &&
		      g->Iex.Const.con->Ico.U1);
}

/* One data access of the current instruction: bytes moved, rw ACC_RD
 * and/or ACC_WR; sim_cut: the simulation covers at most level 0's line
 * (what the machine's wide block moves do is not modelled line by
 * line). */
static void add_access(struct ist *s, IRAtom *addr, Int bytes, UWord rw, IRAtom *guard,
		       Bool sim_cut)
{
	UWord sim = (UWord)bytes, info;

	if (bytes <= 0)
		return;
	if (sim_cut && sim > min_line)
		sim = min_line;
	if (sim > 0xFFFF)
		sim = 0xFFFF;
	info = sim | rw | ((UWord)bytes << 18);
	if (!guard_is_true(guard)) {
		flush_fetch(s);
		add_call(s, 3, "h_d", h_d,
			 mkIRExprVec_3(mkIRExpr_HWord((HWord)s->ins), addr, mkIRExpr_HWord(info)),
			 guard);
	} else if (s->npending && s->pending[s->npending - 1] == s->ins) {
		/* The earlier instructions first, then this one with its
		 * first access. */
		flush_fetches(s, 1);
		add_call(s, 3, "h_id", h_id,
			 mkIRExprVec_3(mkIRExpr_HWord((HWord)s->ins), addr, mkIRExpr_HWord(info)),
			 NULL);
		s->npending = 0;
	} else {
		add_call(s, 3, "h_d", h_d,
			 mkIRExprVec_3(mkIRExpr_HWord((HWord)s->ins), addr, mkIRExpr_HWord(info)),
			 NULL);
	}
}

static struct hsb *sb_new(const IRSB *in, Int first)
{
	UInt n = 0;
	Int i;
	struct hsb *b;

	for (i = first; i < in->stmts_used; i++)
		n += in->stmts[i]->tag == Ist_IMark;
	b = VG_(malloc)("kst.hot.sb", sizeof(*b) + n * sizeof(b->ins[0]));
	b->id = n_sbs;
	b->n = 0;
	sbs = grow(sbs, &cap_sbs, n_sbs + 1, sizeof(*sbs));
	sbs[n_sbs++] = b;
	return b;
}

IRSB *kst_hot_instrument(IRSB *in, const VexGuestLayout *layout, IRType gWordTy,
			 IRType hWordTy)
{
	struct ist s;
	struct hsb *b;
	Int i, first, merged = -1;

	if (gWordTy != hWordTy)
		VG_(tool_panic)("kscope hotspot: host and guest word sizes differ");
	sp_offset = layout->offset_SP;
	VG_(memset)(&s, 0, sizeof(s));
	s.out = deepCopyIRSBExceptStmts(in);
	s.word = gWordTy;
	for (first = 0; first < in->stmts_used && in->stmts[first]->tag != Ist_IMark; first++)
		addStmtToIRSB(s.out, in->stmts[first]);
	if (first == in->stmts_used)
		return s.out;
	b = sb_new(in, first);
	add_call(&s, 2, "h_sb", h_sb, mkIRExprVec_2(mkIRExpr_HWord(b->id), get_sp(&s)), NULL);

	for (i = first; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];
		switch (st->tag) {
		case Ist_IMark: {
			Addr a = st->Ist.IMark.addr + st->Ist.IMark.delta;
			UInt len = st->Ist.IMark.len ? st->Ist.IMark.len : 1;
			Int end = i + 1;
			const HChar *fn;
			if (s.npending == MAX_PENDING)
				flush_fetch(&s);
			while (end < in->stmts_used && in->stmts[end]->tag != Ist_IMark)
				end++;
			s.ins = ins_get(in, i + 1, end, a, len);
			b->ins[b->n++] = s.ins->id;
			if ((region_on || trace_gate_main) &&
			    VG_(get_fnname_if_entry)(VG_(current_DiEpoch)(), a, &fn)) {
				if (region_on && region_match(fn)) {
					/* Instructions before the entry count outside. */
					flush_fetch(&s);
					add_call(&s, 1, "h_enter", h_enter,
						 mkIRExprVec_1(get_sp(&s)), NULL);
				} else if (trace_gate_main && VG_(strcmp)(fn, "main") == 0) {
					flush_fetch(&s);
					add_call(&s, 1, "h_main", h_main,
						 mkIRExprVec_1(mkIRExpr_HWord(0)), NULL);
				}
			}
			s.pending[s.npending++] = s.ins;
			break;
		}
		case Ist_WrTmp: {
			IRExpr *e = st->Ist.WrTmp.data;
			if (e->tag == Iex_Load) {
				Int sz = sizeofIRType(e->Iex.Load.ty);
				merged = kst_rmw_store(in, i, False);
				add_access(&s, e->Iex.Load.addr, sz,
					   merged >= 0 ? ACC_RD | ACC_WR : ACC_RD, NULL, False);
			}
			break;
		}
		case Ist_Store:
			if (i == merged)
				merged = -1; /* counted with its load */
			else
				add_access(&s, st->Ist.Store.addr,
					   sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.Store.data)),
					   ACC_WR, NULL, False);
			break;
		case Ist_StoreG: {
			IRStoreG *g = st->Ist.StoreG.details;
			add_access(&s, g->addr, sizeofIRType(typeOfIRExpr(in->tyenv, g->data)),
				   ACC_WR, g->guard, False);
			break;
		}
		case Ist_LoadG: {
			IRLoadG *g = st->Ist.LoadG.details;
			IRType wide, ty;
			typeOfIRLoadGOp(g->cvt, &wide, &ty);
			add_access(&s, g->addr, sizeofIRType(ty), ACC_RD, g->guard, False);
			break;
		}
		case Ist_CAS: {
			IRCAS *c = st->Ist.CAS.details;
			Int sz = sizeofIRType(typeOfIRExpr(in->tyenv, c->dataLo));
			if (c->dataHi)
				sz *= 2;
			add_access(&s, c->addr, sz, ACC_RD | ACC_WR, NULL, True);
			break;
		}
		case Ist_LLSC:
			if (st->Ist.LLSC.storedata)
				add_access(&s, st->Ist.LLSC.addr,
					   sizeofIRType(typeOfIRExpr(in->tyenv, st->Ist.LLSC.storedata)),
					   ACC_WR, NULL, False);
			else
				add_access(&s, st->Ist.LLSC.addr,
					   sizeofIRType(typeOfIRTemp(in->tyenv, st->Ist.LLSC.result)),
					   ACC_RD, NULL, False);
			break;
		case Ist_Dirty: {
			IRDirty *d = st->Ist.Dirty.details;
			UWord rw = 0;
			if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
				rw |= ACC_RD;
			if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
				rw |= ACC_WR;
			if (rw)
				add_access(&s, d->mAddr, d->mSize, rw, d->guard, True);
			break;
		}
		case Ist_Exit:
			/* The instruction ran even if it leaves here. */
			flush_fetch(&s);
			break;
		default:
			break;
		}
		addStmtToIRSB(s.out, st);
	}
	flush_fetch(&s);
	return s.out;
}

/* ------------------------------------------------------------------ */
/* Set-up                                                              */
/* ------------------------------------------------------------------ */

void kst_hot_init(void)
{
	struct kst_hot_opts *o = &kst_clo.hot;
	UInt k;

	if (o->nlevels == 0)
		kst_hot_opt_cache("--cache=" KST_HOT_DEFAULT_CACHE, KST_HOT_DEFAULT_CACHE);
	nlev = o->nlevels;
	if (!o->icache_set) {
		o->icache = o->level[0];
	} else if (nlev > 1 && o->icache.line > o->level[1].line) {
		/* Options are checked one by one; this pair only now (and
		 * VG_(fmsg_bad_option) no longer exits). */
		VG_(fmsg)("Bad option: %s\n", o->icache_arg);
		VG_(fmsg)("the instruction cache's line (%u bytes) is larger than the line "
			  "of %s (%u bytes), which serves its misses\n",
			  o->icache.line, o->level[1].name, o->level[1].line);
		VG_(exit)(1);
	}
	stride = X_LEVELS + 2 * nlev;
	bw_width = 2 * (nlev + 1);
	lat_of[0] = 0;
	for (k = 1; k < nlev; k++)
		lat_of[k] = o->level[k].latency;
	lat_of[nlev] = o->mem_latency;
	min_line = o->level[0].line;
	shared_last = VG_(malloc)("kst.hot.cache", sizeof(*shared_last));
	kst_hc_init(shared_last, o->level[nlev - 1].size, o->level[nlev - 1].assoc,
		    o->level[nlev - 1].line);
	set_level = nlev >= 2 ? 1 : 0;
	set_count = (UWord)(o->level[set_level].size /
			    ((ULong)o->level[set_level].assoc * o->level[set_level].line));
	set_ctrs = VG_(calloc)("kst.hot.sets", set_count * KST_SET_N, sizeof(ULong));
	while ((1u << l0_line_bits) < o->level[0].line)
		l0_line_bits++;
	hl_init();
	region_on = o->region != NULL;
	trace_gate_main = !region_on;
	trace_open = region_on;
	interval = o->interval;
	trace_full = o->trace_limit == 0;
	n_threads_slots = 64;
	threads = VG_(calloc)("kst.hot.threads", n_threads_slots, sizeof(*threads));
	ins_hash = VG_(calloc)("kst.hot.ins", 1u << INS_HASH_BITS, sizeof(*ins_hash));
	VG_(track_start_client_code)(start_client_code);
	VG_(track_stop_client_code)(stop_client_code);
	VG_(track_pre_deliver_signal)(pre_deliver_signal);
}

void kst_hot_pre_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs)
{
	kst_exit_note(&ended, sysno, args);
}

void kst_hot_post_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs, SysRes res)
{
}

/* ------------------------------------------------------------------ */
/* The raw file                                                        */
/* ------------------------------------------------------------------ */

static VgFile *out;

/* A string field: always the last of its record. */
static void put_str(const HChar *s)
{
	HChar buf[512];
	UInt n = 0;

	for (; *s; s++) {
		if (n > sizeof(buf) - 4) {
			buf[n] = 0;
			VG_(fprintf)(out, "%s", buf);
			n = 0;
		}
		if (*s == '\\') {
			buf[n++] = '\\';
			buf[n++] = '\\';
		} else if (*s == '\t') {
			buf[n++] = '\\';
			buf[n++] = 't';
		} else if (*s == '\n') {
			buf[n++] = '\\';
			buf[n++] = 'n';
		} else {
			buf[n++] = *s;
		}
	}
	buf[n] = 0;
	VG_(fprintf)(out, "%s\n", buf);
}

static void write_ins(const struct hins *x)
{
	static const HChar *const pipes[] = KS_SIM_PIPE_NAMES;
	static const HChar hex[] = "0123456789abcdef";
	HChar bytes[2 * sizeof(x->bytes) + 1];
	UInt i, n = x->len < sizeof(x->bytes) ? x->len : sizeof(x->bytes);

	for (i = 0; i < n; i++) {
		bytes[2 * i] = hex[x->bytes[i] >> 4];
		bytes[2 * i + 1] = hex[x->bytes[i] & 15];
	}
	bytes[2 * n] = 0;
	VG_(fprintf)(out, "ins\t%u\t%#lx\t%u\t%s\t%d\t%u\t%d\t%s\t%u\t%u\t%u\t%u\n", x->id,
		     x->addr, (UInt)x->len, bytes, x->file, x->file >= 0 ? x->line : 0, x->fn,
		     pipes[x->pipe], x->flops, x->base, (UInt)x->vlanes, (UInt)x->velem);
}

void kst_hot_fini(void)
{
	const struct kst_hot_opts *o = &kst_clo.hot;
	HChar *path;
	UInt i, k, files_done = 0, fns_done = 0, ins_done = 0;

	/* The superblock each thread was in. */
	for (i = 0; i < n_threads_slots; i++)
		if (threads[i] && threads[i]->tr_n)
			trace_close(threads[i]);

	path = VG_(expand_file_name)("--out", kst_clo.out);
	out = VG_(fopen)(path, VKI_O_CREAT | VKI_O_WRONLY | VKI_O_TRUNC,
			 VKI_S_IRUSR | VKI_S_IWUSR);
	if (!out) {
		VG_(umsg)("kscope: cannot create the hotspot file %s\n", path);
		VG_(free)(path);
		return;
	}
	VG_(free)(path);

	VG_(fprintf)(out, "%s\t%d\n", KS_SIM_MAGIC, KS_SIM_FORMAT);
	VG_(fprintf)(out, "pid\t%d\n", VG_(getpid)());
	VG_(fprintf)(out, "exe\t");
	put_str(VG_(args_the_exename) ? VG_(args_the_exename) : "");
	for (k = 0; k < nlev; k++) {
		VG_(fprintf)(out, "cache\t%u\t%llu\t%u\t%u\t%u\t%s\t", k, o->level[k].size,
			     o->level[k].assoc, o->level[k].line, o->level[k].latency,
			     k + 1 == nlev ? "shared" : "private");
		put_str(o->level[k].name);
	}
	VG_(fprintf)(out, "icache\t%llu\t%u\t%u\n", o->icache.size, o->icache.assoc,
		     o->icache.line);
	VG_(fprintf)(out, "memory\t%u\n", o->mem_latency);
	VG_(fprintf)(out, "region\t");
	put_str(o->region ? o->region : "*");

	/* Instructions with their names, then the superblocks. */
	for (i = 0; i < n_ins; i++) {
		const struct hins *x = ins_by_id[i];
		while (x->file >= (Int)files_done) {
			VG_(fprintf)(out, "file\t%u\t", files_done);
			put_str(files.by_id[files_done++]->s);
		}
		while (x->fn >= (Int)fns_done) {
			VG_(fprintf)(out, "fn\t%u\t", fns_done);
			put_str(fns.by_id[fns_done++]->s);
		}
		write_ins(x);
		ins_done++;
	}
	for (i = 0; i < n_sbs; i++) {
		const struct hsb *b = sbs[i];
		VG_(fprintf)(out, "sb\t%u\t%u", b->id, b->n);
		for (k = 0; k < b->n; k++)
			VG_(fprintf)(out, "\t%u", b->ins[k]);
		VG_(fprintf)(out, "\n");
	}

	/* Threads and their counters. */
	for (i = 0; i < n_threads_slots; i++) {
		const struct hthread *t = threads[i];
		ULong instrs = 0;
		UInt ch, j;
		if (!t)
			continue;
		for (ch = 0; ch < t->nchunks; ch++)
			if (t->chunks[ch])
				for (j = 0; j < CHUNK_INS; j++)
					instrs += t->chunks[ch][j * stride + X_EXECS];
		if (instrs)
			VG_(fprintf)(out, "thread\t%u\t%llu\t%llu\n", i, instrs, t->clock);
	}
	for (i = 0; i < n_threads_slots; i++) {
		const struct hthread *t = threads[i];
		UInt ch, j, f;
		if (!t)
			continue;
		for (ch = 0; ch < t->nchunks; ch++) {
			if (!t->chunks[ch])
				continue;
			for (j = 0; j < CHUNK_INS; j++) {
				const ULong *c = t->chunks[ch] + j * stride;
				if (!c[X_EXECS])
					continue;
				VG_(fprintf)(out, "x\t%u\t%u", i, (ch << CHUNK_BITS) + j);
				for (f = 0; f < stride; f++)
					VG_(fprintf)(out, "\t%llu",
						     f == X_CYCLES
							     ? c[f] + c[X_EXECS] *
								      ins_by_id[(ch << CHUNK_BITS) + j]->base
							     : c[f]);
				VG_(fprintf)(out, "\n");
			}
		}
	}

	VG_(fprintf)(out, "interval\t%llu\n", interval);
	for (i = 0; i < n_threads_slots; i++) {
		const struct hthread *t = threads[i];
		UInt bk, f;
		if (!t)
			continue;
		for (bk = 0; bk < t->bw_used; bk++) {
			const ULong *row = t->bw + (SizeT)bk * bw_width;
			Bool any = False;
			for (f = 0; f < bw_width; f++)
				any |= row[f] != 0;
			if (!any)
				continue;
			VG_(fprintf)(out, "bw\t%u\t%u", i, bk);
			for (f = 0; f < bw_width; f++)
				VG_(fprintf)(out, "\t%llu", row[f]);
			VG_(fprintf)(out, "\n");
		}
	}
	/* Where the trace starts: in the region, at main (thread, cycle), or
	 * nowhere (main never ran, or has no symbol). */
	if (region_on)
		VG_(fprintf)(out, "trace\tregion\t0\t0\n");
	else if (trace_opened_at_main)
		VG_(fprintf)(out, "trace\tmain\t%u\t%llu\n", trace_tid, trace_clock);
	else
		VG_(fprintf)(out, "trace\tnever\t0\t0\n");
	for (i = 0; i < n_trace; i++)
		VG_(fprintf)(out, "tr\t%u\t%u\t%u\t%llu\t%llu\n", trace[i].tid, trace[i].sb,
			     trace[i].executed, trace[i].start, trace[i].end);

	/* The sets of the observed level, then the hot lines by
	 * (line, instruction), their write-backs, and what was dropped. */
	VG_(fprintf)(out, "sets\t%u\t%lu\n", set_level, set_count);
	for (i = 0; i < set_count; i++) {
		const ULong *c = set_ctrs + (SizeT)i * KST_SET_N;
		if (!c[KST_SET_LOAD] && !c[KST_SET_STORE] && !c[KST_SET_ALLOC])
			continue;
		VG_(fprintf)(out, "set\t%u", i);
		for (k = 0; k < KST_SET_N; k++)
			VG_(fprintf)(out, "\t%llu", c[k]);
		VG_(fprintf)(out, "\n");
	}
	for (i = 0; i < HL_BUCKETS * HL_WAYS; i++) {
		const struct hline *e = &hl[i];
		if (e->line == KST_HC_EMPTY)
			continue;
		if (e->ins == HL_WB) {
			VG_(fprintf)(out, "hlwb\t%#lx\t%llu\n", e->line << l0_line_bits,
				     e->ld);
			continue;
		}
		VG_(fprintf)(out, "hl\t%#lx\t%u\t%llu\t%llu", e->line << l0_line_bits,
			     e->ins, e->ld, e->st);
		for (k = 0; k < nlev; k++)
			VG_(fprintf)(out, "\t%llu", e->miss[k]);
		VG_(fprintf)(out, "\n");
	}
	VG_(fprintf)(out, "hlother\t%llu\t%llu\t%llu\t%llu", hl_dropped, hl_other.ld,
		     hl_other.st, hl_other_wb);
	for (k = 0; k < nlev; k++)
		VG_(fprintf)(out, "\t%llu", hl_other.miss[k]);
	VG_(fprintf)(out, "\n");

	/* A thread's exit is the program's only when it was the last one:
	 * evidence of a signal wins over it. */
	if (ended.group_seen)
		VG_(fprintf)(out, "end\texit\t%d\t%llu\n", ended.group_code, trace_dropped);
	else if (ended.self_signal || pending_signal)
		VG_(fprintf)(out, "end\tsignal\t%d\t%llu\n",
			     ended.self_signal ? ended.self_signal : pending_signal, trace_dropped);
	else if (ended.exit_seen)
		VG_(fprintf)(out, "end\texit\t%d\t%llu\n", ended.exit_code, trace_dropped);
	else
		VG_(fprintf)(out, "end\tsignal\t0\t%llu\n", trace_dropped);
	VG_(fclose)(out);
	out = NULL;
	(void)ins_done;
}
