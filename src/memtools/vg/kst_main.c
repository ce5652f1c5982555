/*
 * kscope's Valgrind tool: the entry points Valgrind calls (initialization,
 * options, instrumentation, exit) for its three analyses: contention
 * (cache-line ownership) and falseshare (word-level sharing), which share
 * one pass over the instruction stream, and hotspot (instruction counts
 * and a simulated cache hierarchy, for `kscope op --simulate`).
 * `kscope contention|falseshare` starts it as `valgrind --tool=kscope
 * --analysis=...` and reads back the findings file it writes; hotspot
 * writes the raw file of src/op/sim/simraw.h instead.
 *
 * The analysis state machines themselves are freestanding C in
 * src/memtools/core; this directory is the Valgrind front-end around
 * them.
 */
#include "pub_tool_basics.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_clientstate.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_xarray.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_replacemalloc.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vkiscnums.h"

#include "kst_int.h"

struct kst_opts kst_clo = {
	.analysis = KST_CONTENTION,
	.out = "findings.%p.jsonl",
	.line_size = 64,
	.min_write = True,
	.pad_smu = True,
	.thread_isolation = True,
	.min_accesses = 100,
	.min_writes = 100,
	.hot = {
		.mem_latency = 200,
		.interval = 1000,
		.trace_limit = KS_SIM_DEFAULT_TRACE_LIMIT,
	},
};
/* hotspot asked for at start-up (and its preload library kept out). */
static Bool hot_args;
/* Highest thread id the program used (Valgrind reuses the ids of threads
 * that ended, so this is the most threads alive at once, roughly). */
static UInt threads_seen = 1;

static void kst_thread_create(ThreadId parent, ThreadId child)
{
	if (child > threads_seen)
		threads_seen = child;
	if (kst_clo.analysis == KST_HOTSPOT)
		kst_hot_thread_create(parent, child);
	else
		kst_cache_thread_create(parent, child);
}

/* ------------------------------------------------------------------ */
/* Memory for the core's shadow tables                                 */
/* ------------------------------------------------------------------ */

/* Large tables come straight from fresh anonymous mappings, so pages
 * never touched cost nothing; small ones from Valgrind's own heap. */
#define KST_BIG_ALLOC (64 * 1024)

static void *core_zalloc(void *ctx, size_t size)
{
	if (size >= KST_BIG_ALLOC) {
		SizeT len = VG_PGROUNDUP(size);
		return VG_(am_shadow_alloc)(len);
	}
	return VG_(calloc)("kst.core", 1, size);
}

static void core_free(void *ctx, void *p, size_t size)
{
	if (!p)
		return;
	if (size >= KST_BIG_ALLOC) {
		(void)VG_(am_munmap_valgrind)((Addr)p, VG_PGROUNDUP(size));
		return;
	}
	VG_(free)(p);
}

const struct ks_mt_alloc kst_core_alloc = { core_zalloc, core_free, NULL };

/* ------------------------------------------------------------------ */
/* Stack-pointer-relative addresses                                    */
/* ------------------------------------------------------------------ */

void kst_sp_begin(struct kst_sp *s, IRSB *in, const VexGuestLayout *layout)
{
	s->n = in->tyenv->types_used;
	s->is_sp = s->n ? VG_(calloc)("kst.sp", s->n, 1) : NULL;
	s->sp_off = layout->offset_SP;
}

void kst_sp_note(struct kst_sp *s, IRStmt *st)
{
	IRExpr *e;
	if (st->tag != Ist_WrTmp)
		return;
	e = st->Ist.WrTmp.data;
	if (e->tag == Iex_Get && e->Iex.Get.offset == s->sp_off) {
		s->is_sp[st->Ist.WrTmp.tmp] = 1;
		return;
	}
	if (e->tag == Iex_Binop &&
	    (e->Iex.Binop.op == Iop_Add64 || e->Iex.Binop.op == Iop_Sub64 ||
	     e->Iex.Binop.op == Iop_Add32 || e->Iex.Binop.op == Iop_Sub32) &&
	    e->Iex.Binop.arg1->tag == Iex_RdTmp &&
	    s->is_sp[e->Iex.Binop.arg1->Iex.RdTmp.tmp] &&
	    e->Iex.Binop.arg2->tag == Iex_Const)
		s->is_sp[st->Ist.WrTmp.tmp] = 1;
}

Bool kst_sp_atom(const struct kst_sp *s, IRExpr *a)
{
	return a->tag == Iex_RdTmp && a->Iex.RdTmp.tmp < s->n &&
	       s->is_sp[a->Iex.RdTmp.tmp];
}

void kst_sp_end(struct kst_sp *s)
{
	if (s->is_sp)
		VG_(free)(s->is_sp);
	s->is_sp = NULL;
}

Int kst_rmw_store(const IRSB *in, Int i, Bool strict)
{
	const IRExpr *ld = in->stmts[i]->Ist.WrTmp.data;
	Int j;

	for (j = i + 1; j < in->stmts_used; j++) {
		const IRStmt *st = in->stmts[j];

		switch (st->tag) {
		case Ist_IMark:
		case Ist_Exit:
		case Ist_CAS:
		case Ist_LLSC:
		case Ist_StoreG:
		case Ist_LoadG:
			return -1;
		case Ist_MBE:
			if (strict)
				return -1;
			break;
		case Ist_Dirty:
			if (strict || st->Ist.Dirty.details->mFx != Ifx_None)
				return -1;
			break;
		case Ist_WrTmp:
			if (st->Ist.WrTmp.data->tag == Iex_Load)
				return -1;
			break;
		case Ist_Store:
			if (eqIRAtom(st->Ist.Store.addr, ld->Iex.Load.addr) &&
			    typeOfIRExpr(in->tyenv, st->Ist.Store.data) == ld->Iex.Load.ty)
				return j;
			return -1;
		default:
			break;
		}
	}
	return -1;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */
/* ------------------------------------------------------------------ */

static Bool kst_process_cmd_line_option(const HChar *arg)
{
	const HChar *s;
	Long v = 0; /* not "n": Valgrind's option macros declare an n inside */

	if (VG_STR_CLO(arg, "--analysis", s)) {
		if (VG_(strcmp)(s, "contention") == 0)
			kst_clo.analysis = KST_CONTENTION;
		else if (VG_(strcmp)(s, "falseshare") == 0)
			kst_clo.analysis = KST_FALSESHARE;
		else if (VG_(strcmp)(s, "hotspot") == 0)
			kst_clo.analysis = KST_HOTSPOT;
		else
			VG_(fmsg_bad_option)(arg, "expected contention, falseshare or hotspot\n");
	} else if (VG_STR_CLO(arg, "--out", kst_clo.out)) {
	} else if (VG_BINT_CLO(arg, "--line-size", v, 16, 4096)) {
		if (v & (v - 1))
			VG_(fmsg_bad_option)(arg, "the line size must be a power of two\n");
		kst_clo.line_size = (UInt)v;
	} else if (VG_BINT_CLO(arg, "--min-accesses", v, 1, 1000000000)) {
		kst_clo.min_accesses = (UInt)v;
	} else if (VG_BINT_CLO(arg, "--min-writes", v, 0, 1000000000)) {
		kst_clo.min_writes = (UInt)v;
	} else if (VG_BOOL_CLO(arg, "--min-write", kst_clo.min_write)) {
	} else if (VG_BOOL_CLO(arg, "--pad-smu", kst_clo.pad_smu)) {
	} else if (VG_BOOL_CLO(arg, "--thread-isolation", kst_clo.thread_isolation)) {
	} else if (VG_STR_CLO(arg, "--cache", s)) {
		kst_hot_opt_cache(arg, s);
	} else if (VG_STR_CLO(arg, "--icache", s)) {
		kst_hot_opt_icache(arg, s);
	} else if (VG_BINT_CLO(arg, "--mem-latency", v, 0, 1000000)) {
		kst_clo.hot.mem_latency = (UInt)v;
	} else if (VG_STR_CLO(arg, "--region", s)) {
		kst_hot_opt_region(arg, s);
	} else if (VG_STR_CLO(arg, "--threads", s)) {
		kst_hot_opt_threads(arg, s);
	} else if (VG_BINT_CLO(arg, "--interval", v, 1, (Long)1 << 40)) {
		kst_clo.hot.interval = (ULong)v;
	} else if (VG_BINT_CLO(arg, "--trace-limit", v, 0, 1000000000)) {
		kst_clo.hot.trace_limit = (ULong)v;
	} else {
		return VG_(replacement_malloc_process_cmd_line_option)(arg);
	}
	return True;
}

static void kst_print_usage(void)
{
	VG_(printf)(
"    --analysis=contention|falseshare|hotspot  what to look for [contention]\n"
"    --out=FILE                findings file, %%p is the pid [findings.%%p.jsonl]\n"
"    --line-size=N             cache line size, bytes [64]\n"
"    --min-accesses=N          falseshare: a shared line counts when two threads\n"
"                              each accessed it N times [100]\n"
"    --min-writes=N            falseshare: a line of threads on different bytes\n"
"                              is false sharing when one thread wrote it N times\n"
"                              and another came back to it N times, else\n"
"                              read-mostly; 0: no such test [100]\n"
"    --min-write=yes|no        test shadow words before writing them [yes]\n"
"    --pad-smu=yes|no          pad shadow units to a cache line [yes]\n"
"    --thread-isolation=yes|no per-thread counters merged at exit [yes]\n"
"  hotspot (writes the raw file of kscope op --simulate to --out):\n"
"    --cache=NAME=SIZE:ASSOC:LINE[:LATENCY],...  data-cache levels, closest\n"
"                              first (1 to %d; SIZE with k/m/g; the last level\n"
"                              is shared by all threads, the others are private;\n"
"                              latencies default to 4, 14, 50, 80 by position)\n"
"                              [" "L1=32k:8:64,LL=8m:16:64" "]\n"
"    --icache=SIZE:ASSOC:LINE  instruction cache beside level 0 [level 0's]\n"
"    --mem-latency=N           cycles of an access no level holds [200]\n"
"    --region=PATTERN          count only inside calls of the functions whose\n"
"                              names match (NAME|NAME..., '*' any run) [all]\n"
"    --threads=LIST            Valgrind thread ids to simulate (1 = main) [all]\n"
"    --interval=CYCLES         bandwidth bucket width [1000]\n"
"    --trace-limit=N           superblock executions traced [%d]\n",
		KS_SIM_MAX_LEVELS, KS_SIM_DEFAULT_TRACE_LIMIT);
}

static void kst_print_debug_usage(void)
{
	VG_(printf)("    (none)\n");
}

/* ------------------------------------------------------------------ */
/* Keeping the preload library out of hotspot runs                     */
/* ------------------------------------------------------------------ */

/* Whether --analysis=hotspot is the analysis the command line asks for
 * (the last --analysis wins, as in option processing).  Valgrind calls
 * kst_pre_clo_init before it hands the tool its options, but the
 * decisions below must be taken there. */
static Bool args_ask_hotspot(void)
{
	Bool hot = False;
	Word i;

	if (!VG_(args_for_valgrind))
		return False;
	for (i = 0; i < VG_(sizeXA)(VG_(args_for_valgrind)); i++) {
		const HChar *a = *(HChar **)VG_(indexXA)(VG_(args_for_valgrind), i);
		if (VG_(strncmp)(a, "--kscope:", 9) == 0)
			a += 7; /* "--kscope:--analysis=..." -> "--analysis=..." */
		if (VG_(strncmp)(a, "--analysis=", 11) == 0)
			hot = VG_(strcmp)(a + 11, "hotspot") == 0;
	}
	return hot;
}

/* The program's environment as Valgrind built it, on the program's
 * initial stack (coregrind's pub_core_clientstate.h; the tool interface
 * does not offer it).  It is ready when kst_pre_clo_init runs: Valgrind
 * builds the initial image before it initializes the tool, and the
 * program's dynamic linker reads LD_PRELOAD only when it starts. */
extern HChar **VG_(client_envp);

/* Removes kscope's preload library (vgpreload_kscope-<platform>.so,
 * which Valgrind adds to LD_PRELOAD for --tool=kscope when it finds it)
 * from the program's LD_PRELOAD, in place: with it, malloc and the
 * string functions would run kscope's replacements (Valgrind redirects
 * them whatever the tool asks for) and the instruction counts would not
 * be the program's. */
static void drop_own_preload(void)
{
	static const HChar ld[] = "LD_PRELOAD=";
	static const HChar own[] = "vgpreload_kscope-";
	HChar **e;

	for (e = VG_(client_envp); e && *e; e++) {
		HChar *p, *start;
		if (VG_(strncmp)(*e, ld, sizeof(ld) - 1) != 0)
			continue;
		start = *e + sizeof(ld) - 1;
		for (p = start; *p;) {
			HChar *end = VG_(strchr)(p, ':'), *base = p, *q;
			SizeT len = end ? (SizeT)(end - p) : VG_(strlen)(p);
			for (q = p; q < p + len; q++)
				if (*q == '/')
					base = q + 1;
			if ((SizeT)(p + len - base) >= sizeof(own) - 1 &&
			    VG_(strncmp)(base, own, sizeof(own) - 1) == 0) {
				/* Cut the entry and one ':' next to it. */
				HChar *from = end ? end + 1 : p + len;
				HChar *to = p;
				if (!end && p > start)
					to = p - 1;
				VG_(memmove)(to, from, VG_(strlen)(from) + 1);
				return;
			}
			if (!end)
				break;
			p = end + 1;
		}
	}
}

/* Superblocks whose instructions all run when the block runs to its
 * end: the translator must not follow conditional branches (it would
 * merge short branch-over paths into the block, with their instructions'
 * marks present even when the branch skips them) nor unroll loops.
 * callgrind asks the same, so the instruction counts are comparable.
 * Set before and after the options, which could change them. */
static void hot_exact_blocks(void)
{
	VG_(clo_vex_control).guest_chase = False;
	VG_(clo_vex_control).iropt_unroll_thresh = 0;
}

/* ------------------------------------------------------------------ */
/* Tool life cycle                                                     */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* Processes: the start record, fork, exec, exit                       */
/* ------------------------------------------------------------------ */

void kst_write_start(void)
{
	kst_out_printf("{\"rec\":\"start\",\"analysis\":\"%s\",\"format\":1,\"pid\":%d,"
		       "\"ppid\":%d,\"exe\":",
		       kst_clo.analysis == KST_CONTENTION ? "contention" : "falseshare",
		       VG_(getpid)(), VG_(getppid)());
	kst_out_str(VG_(args_the_exename));
	kst_out_printf(",\"argv\":[");
	kst_out_str(VG_(args_the_exename));
	{
		Word i;
		for (i = 0; i < VG_(sizeXA)(VG_(args_for_client)); i++) {
			kst_out_printf(",");
			kst_out_str(*(HChar **)VG_(indexXA)(VG_(args_for_client), i));
		}
	}
	kst_out_printf("],\"line_size\":%u,\"word_size\":%u,\"options\":{\"min_write\":%s,"
		       "\"pad_smu\":%s,\"thread_isolation\":%s}}\n",
		       kst_clo.line_size,
		       /* ks_mt_word_size's rule: bytes up to 64-byte lines */
		       kst_clo.line_size / 64 > 1 ? kst_clo.line_size / 64 : 1,
		       kst_clo.min_write ? "true" : "false",
		       kst_clo.pad_smu ? "true" : "false",
		       kst_clo.thread_isolation ? "true" : "false");
}

void kst_exit_note(struct kst_exit_seen *x, UInt sysno, const UWord *args)
{
	Int pid = VG_(getpid)();

	if (sysno == __NR_exit_group) {
		x->group_seen = True;
		x->group_code = (Int)(args[0] & 0xFF);
	} else if (sysno == __NR_exit) {
		/* The last thread's exit ends the program with its status. */
		x->exit_seen = True;
		x->exit_code = (Int)(args[0] & 0xFF);
	} else if (sysno == __NR_kill && ((Int)args[0] == pid || args[0] == 0) && args[1]) {
		x->self_signal = (Int)args[1];
	} else if (sysno == __NR_tgkill && (Int)args[0] == pid && args[2]) {
		x->self_signal = (Int)args[2];
	} else if (sysno == __NR_tkill && args[1]) {
		x->self_signal = (Int)args[1];
	}
}

/* How the program ended (kst_exit_note). */
static struct kst_exit_seen ended;

static void kst_pre_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs)
{
	kst_exit_note(&ended, sysno, args);
	if (sysno == __NR_execve
#ifdef __NR_execveat
		   || sysno == __NR_execveat
#endif
	) {
		/* With --trace-children=yes the new image runs under this tool
		 * again and appends to this process's file: this image's
		 * segment ends here.  (contention's and falseshare's counts of
		 * an image that execs are not written: they are not findings.) */
		kst_out_exec("{\"rec\":\"end\",\"exit\":{\"how\":\"exec\"}}\n");
	}
}

static void kst_post_syscall(ThreadId tid, UInt sysno, UWord *args, UInt nargs,
			     SysRes res)
{
}

static void kst_post_clo_init(void)
{
	if (kst_clo.analysis == KST_HOTSPOT) {
		hot_exact_blocks();
		/* The raw file is written at the end (kst_hot_fini), when the
		 * pid of a forked child is its own. */
		VG_(track_pre_thread_ll_create)(kst_thread_create);
		kst_hot_init();
		return;
	}
	/* Both read the same options: the start-up decision holds. */
	tl_assert(!hot_args);
	if (!kst_out_open())
		VG_(exit)(1);
	kst_write_start();
	kst_out_init_fork();
	VG_(track_pre_thread_ll_create)(kst_thread_create);
	kst_cache_init();
}

static IRSB *kst_instrument(VgCallbackClosure *closure, IRSB *in,
			    const VexGuestLayout *layout,
			    const VexGuestExtents *vge,
			    const VexArchInfo *archinfo_host, IRType gWordTy,
			    IRType hWordTy)
{
	if (kst_clo.analysis == KST_HOTSPOT)
		return kst_hot_instrument(in, layout, gWordTy, hWordTy);
	return kst_cache_instrument(in, layout, gWordTy, hWordTy);
}

static void kst_fini(Int exitcode)
{
	if (kst_clo.analysis == KST_HOTSPOT) {
		kst_hot_fini();
		return;
	}
	kst_cache_fini();
	/* exitcode is always 0 here: what the system calls said instead. */
	if (ended.group_seen || ended.exit_seen)
		kst_out_printf("{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":%d},",
			       ended.group_seen ? ended.group_code : ended.exit_code);
	else if (ended.self_signal)
		kst_out_printf("{\"rec\":\"end\",\"exit\":{\"how\":\"signal\",\"signal\":%d},",
			       ended.self_signal);
	else
		kst_out_printf("{\"rec\":\"end\",\"exit\":{\"how\":\"unknown\"},");
	kst_heap_write_summary();
	kst_out_printf(",\"threads\":%u}\n", threads_seen);
	kst_out_close();
}

static void kst_pre_clo_init(void)
{
	VG_(details_name)("kscope");
	VG_(details_version)(NULL);
	VG_(details_description)("kscope's memory-access analyses");
	VG_(details_copyright_author)("kscope's authors");
	VG_(details_bug_reports_to)("the kscope issue tracker");
	VG_(details_avg_translation_sizeB)(640);
	VG_(basic_tool_funcs)(kst_post_clo_init, kst_instrument, kst_fini);
	VG_(needs_command_line_options)(kst_process_cmd_line_option,
					kst_print_usage, kst_print_debug_usage);
	hot_args = args_ask_hotspot();
	if (hot_args) {
		/* hotspot must see the program run as it does under callgrind:
		 * its own malloc and string functions, no exit-time freeres
		 * calls.  The syscall hook gives it the exit status. */
		drop_own_preload();
		VG_(needs_syscall_wrapper)(kst_hot_pre_syscall, kst_hot_post_syscall);
		hot_exact_blocks();
		return;
	}
	VG_(needs_libc_freeres)();
	VG_(needs_cxx_freeres)();
	VG_(needs_syscall_wrapper)(kst_pre_syscall, kst_post_syscall);
	kst_heap_init();
}

VG_DETERMINE_INTERFACE_VERSION(kst_pre_clo_init)
