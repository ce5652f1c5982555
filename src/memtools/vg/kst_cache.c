/*
 * contention and falseshare: the Valgrind front-end of the core's
 * line shadow (src/memtools/core).  Every load and store of the program
 * calls ks_mt_access with the running thread and a site -- one per
 * memory-access instruction, made when the instruction is first
 * translated -- and the events it returns (misses, invalidations) are
 * charged to the data object the address belongs to: a heap block (named
 * by its allocation stack) or a global (named by its symbol).
 *
 * Accesses addressed relative to the stack pointer are thread-private
 * stack traffic; they are counted (so the figure "contention accesses /
 * all memory accesses" has the right denominator) but not simulated.
 */
#include "pub_tool_basics.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"

#include "kst_int.h"

static struct ks_mt *mt;
static VgHashTable *sites;   /* guest address * 4 + index -> struct site */
static VgHashTable *objects; /* object key -> struct object */
static UInt next_site_id = 1, next_var_id = 1;
static ULong stack_accesses; /* stack-pointer-relative accesses, not simulated */
static ULong lines_quiet;    /* shared lines below --min-accesses */
static ULong lines_read_mostly; /* false but below --min-writes (mtcore.h) */

/* Threads by creation order (the main thread is 1): Valgrind gives a
 * new thread the number of one that ended, which would merge threads
 * that never ran at the same time into one row and one bitmap bit.  A
 * program that creates more than KS_MT_MAX_THREADS-1 threads over its
 * life falls back to Valgrind's numbers for the rest. */
static UInt *serial_of;    /* Valgrind thread id -> serial */
static ThreadId *vg_of;    /* serial -> Valgrind thread id (while alive) */
static UInt next_serial = 2;

void kst_cache_thread_create(ThreadId parent, ThreadId child)
{
	UInt s;

	/* Valgrind announces the main thread too (no parent), after the
	 * tool's initialization gave it serial 1. */
	if (parent == VG_INVALID_THREADID && child == 1)
		return;
	s = next_serial < KS_MT_MAX_THREADS ? next_serial++ : child;
	serial_of[child] = s;
	vg_of[s] = child;
}

static inline UInt serial(ThreadId tid)
{
	return serial_of[tid];
}

/* Repeated accesses resolved by the instrumented code itself.  Valgrind
 * runs one thread at a time, so between two thread switches no other
 * thread touches a line: once the analysis says (ks_mt_quiet) that the
 * running thread may read, or write, a line again with nothing changing
 * but counts (and, for falseshare, the words touched), further such
 * accesses from the same site only need recording those.  The quiet
 * table holds (line, site) pairs, found by a multiplicative hash of
 * key = line << 20 | site id; the generated code compares the key,
 * counts into the entry (for falseshare, also or's in the words
 * touched) and calls the analysis only when the key does not match.
 * The counts and words go to the analysis (ks_mt_add_quiet) when an
 * entry is replaced and when another thread starts running.  This is
 * the paper's test-before-write (min-write) taken into the generated
 * code: with --no-min-write the table stays empty. */
#define QF_BITS 16
#define QF_N (1u << QF_BITS)
#define QF_SID_BITS 20
#define QF_MUL 0x9E3779B97F4A7C15ULL
#define QF_NONE (~0ULL)

struct site;
struct qent {
	ULong key;          /* QF_NONE: empty */
	ULong words;        /* words touched (falseshare) */
	ULong n;            /* accesses taken, not yet credited */
	struct site *site;
};
static struct qent qf[QF_N];
static UInt qf_used[QF_N];  /* slots filled since the last flush */
static UInt qf_nused;
static UInt qf_tid;         /* the thread the entries belong to */
static UInt line_shift;
/* Keys are exact for addresses below 2^qf_addr_bits (line < 2^44):
 * all of user space for lines of 16 bytes or more. */
static UInt qf_addr_bits;

struct site {
	struct site *next;
	UWord key;
	Addr ip;
	Bool write;
	Bool rmw;           /* a read and a write of the same bytes (x += y) */
	UWord info;         /* what cache_access needs to know (see there) */
	struct ks_mt_site s;
};

static inline UInt qf_slot(ULong key)
{
	return (UInt)((key * QF_MUL) >> (64 - QF_BITS));
}

static void qf_credit(struct qent *e)
{
	if (e->n && e->key != QF_NONE) {
		Addr a = (Addr)((e->key >> QF_SID_BITS) << line_shift);
		if (e->site->rmw)
			ks_mt_add_quiet(mt, qf_tid, a, False, &e->site->s, e->n, e->words);
		ks_mt_add_quiet(mt, qf_tid, a, e->site->write, &e->site->s, e->n, e->words);
	}
	e->n = 0;
}

static void qf_flush(void)
{
	UInt i;
	for (i = 0; i < qf_nused; i++) {
		struct qent *e = &qf[qf_used[i]];
		qf_credit(e);
		e->key = QF_NONE;
	}
	qf_nused = 0;
}

static void qf_switch(ThreadId vtid, ULong blocks_done)
{
	UInt tid = serial(vtid);
	if (tid != qf_tid) {
		qf_flush();
		qf_tid = tid;
	}
}

/* A data object: a heap allocation stack or a global symbol. */
struct object {
	struct object *next;
	UWord key;              /* allocation ExeContext, or symbol start | 1 */
	UInt id;
	Bool heap;
	Addr addr;              /* first block seen / symbol start */
	SizeT size;
	SizeT align;            /* heap: the alignment asked for, 0: malloc's */
	ExeContext *alloc_ec;
	HChar *name, *objname;  /* globals */
	ULong cold, misses, invals;
	Bool written;           /* var record already in the file */
};

/* ------------------------------------------------------------------ */
/* Data objects                                                        */
/* ------------------------------------------------------------------ */

/* The extent of the global symbol holding a, found by asking for the
 * symbol at growing offsets (the tool interface gives names, not
 * sizes). */
static SizeT global_size(DiEpoch ep, Addr start, const HChar *name)
{
	SizeT lo = 1, hi;
	const HChar *n2;
	PtrdiffT off;
	/* Exponential search for an offset outside the symbol, then bisect. */
	hi = 1;
	while (hi < (1u << 24)) {
		if (!VG_(get_datasym_and_offset)(ep, start + hi, &n2, &off) ||
		    VG_(strcmp)(n2, name) != 0 || (Addr)(start + hi - off) != start)
			break;
		lo = hi + 1;
		hi *= 2;
	}
	while (lo < hi) {
		SizeT mid = lo + (hi - lo) / 2;
		if (VG_(get_datasym_and_offset)(ep, start + mid, &n2, &off) &&
		    VG_(strcmp)(n2, name) == 0 && (Addr)(start + mid - off) == start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The object of key, made (with its number, the rest zero: the caller
 * fills it in) if new. */
static struct object *object_get(UWord key, Bool *fresh)
{
	struct object *o = VG_(HT_lookup)(objects, key);

	*fresh = o == NULL;
	if (o)
		return o;
	o = VG_(calloc)("kst.obj", 1, sizeof(*o));
	o->key = key;
	o->id = next_var_id++;
	VG_(HT_add_node)(objects, o);
	return o;
}

/* The object of heap block b: one per allocation context, made if new
 * (with the first block seen). */
static struct object *heap_object(const struct kst_block *b)
{
	Bool fresh;
	struct object *o = object_get((UWord)b->alloc_ec, &fresh);

	if (fresh) {
		o->heap = True;
		o->addr = b->start;
		o->size = b->size;
		o->align = b->align;
		o->alloc_ec = b->alloc_ec;
	}
	return o;
}

static struct object *object_of(Addr a)
{
	struct kst_block *b = kst_heap_find_live(a);
	struct object *o;
	Bool fresh;

	if (b)
		return heap_object(b);
	{
		DiEpoch ep = VG_(current_DiEpoch)();
		const HChar *name;
		PtrdiffT off;
		if (!VG_(get_datasym_and_offset)(ep, a, &name, &off))
			return NULL;
		o = object_get((UWord)(a - off) | 1, &fresh);
		if (!fresh)
			return o;
		o->addr = a - off;
		o->name = VG_(strdup)("kst.obj", name);
		{
			const HChar *objname;
			if (VG_(get_objname)(ep, a, &objname))
				o->objname = VG_(strdup)("kst.obj", objname);
		}
		o->size = global_size(ep, o->addr, o->name);
		return o;
	}
}

/* The object of a line at the end of the run: as object_of, or else a
 * heap object seen earlier (at a miss or invalidation on the line) whose
 * block has been freed since. */
static struct object *object_of_line(Addr a)
{
	struct object *o = object_of(a);
	if (o)
		return o;
	VG_(HT_ResetIter)(objects);
	while ((o = VG_(HT_Next)(objects)))
		if (o->heap && a >= o->addr && a < o->addr + (o->size ? o->size : 1))
			return o;
	{
		/* A block freed since, among the last ones. */
		struct kst_block *b = kst_heap_find_freed(a);
		return b ? heap_object(b) : NULL;
	}
}

static void write_var(struct object *o)
{
	if (o->written)
		return;
	o->written = True;
	if (o->heap) {
		UInt aid = kst_out_stack(o->alloc_ec);
		kst_out_printf("{\"rec\":\"var\",\"id\":%u,\"kind\":\"heap\",\"addr\":\"%#lx\","
			       "\"size\":%lu,\"alloc_stack\":%u", o->id, o->addr, o->size, aid);
		if (o->align)
			kst_out_printf(",\"align\":%lu", o->align);
		kst_out_printf("}\n");
	} else {
		kst_out_printf("{\"rec\":\"var\",\"id\":%u,\"kind\":\"global\",\"addr\":\"%#lx\","
			       "\"size\":%lu,\"name\":",
			       o->id, o->addr, o->size);
		kst_out_str(o->name);
		if (o->objname) {
			kst_out_printf(",\"obj\":");
			kst_out_str(o->objname);
		}
		kst_out_printf("}\n");
	}
}

/* ------------------------------------------------------------------ */
/* Run-time helpers                                                    */
/* ------------------------------------------------------------------ */

/* info: access size in bits 0-15, 1 << 16 for a write, QF_INLINE when
 * the generated code tried the quiet table (and counted into the slot),
 * QF_RMW for a read then a write of the same bytes by one instruction. */
#define QF_INLINE (1u << 17)
#define QF_RMW (1u << 18)

static void charge(Addr a, unsigned ev)
{
	if (ev & (KS_MT_EV_MISS | KS_MT_EV_INVAL)) {
		struct object *o = object_of(a);
		if (o) {
			if (ev & KS_MT_EV_MISS)
				o->misses++;
			if (ev & KS_MT_EV_INVAL)
				o->invals++;
		}
	}
}

static VG_REGPARM(3) void cache_access(Addr a, UWord info, struct site *s)
{
	UInt tid = serial(VG_(get_running_tid)());
	UInt size = info & 0xFFFF;
	Bool write = (info >> 16) & 1;
	ULong key = 0;
	UInt slot = 0;

	if (info & QF_INLINE) {
		/* The generated code counted this access into its slot. */
		key = ((ULong)(a >> line_shift) << QF_SID_BITS) | s->s.id;
		slot = qf_slot(key);
		qf[slot].n--;
	}
	if (tid != qf_tid) { /* a thread's first access since it started */
		qf_flush();
		qf_tid = tid;
	}
	if (info & QF_RMW)
		charge(a, ks_mt_access(mt, tid, a, size, False, &s->s));
	charge(a, ks_mt_access(mt, tid, a, size, write, &s->s));
	if ((info & QF_INLINE) && (a >> qf_addr_bits) == 0 &&
	    (a & (kst_clo.line_size - 1)) + size <= kst_clo.line_size &&
	    ks_mt_quiet(mt, tid, a, write) &&
	    (!(info & QF_RMW) || ks_mt_quiet(mt, tid, a, False))) {
		{
			struct qent *e = &qf[slot];
			if (e->key == QF_NONE)
				qf_used[qf_nused++] = slot;
			else
				qf_credit(e);
			e->key = key;
			e->words = 0;
			e->n = 0;
			e->site = s;
		}
	}
}

/* The same, with the info kept in the site (one argument less to pass). */
static VG_REGPARM(2) void cache_access_site(Addr a, struct site *s)
{
	cache_access(a, s->info, s);
}

/* Stack accesses made by the running thread since the last count:
 * reads in the low 32 bits, writes in the high ones.  They are hits for
 * the analysis (the stack is the thread's own) but count as accesses. */
static VG_REGPARM(1) void count_stack(UWord rw)
{
	ULong r = rw & 0xFFFFFFFFu, w = rw >> 32;
	stack_accesses += r + w;
	ks_mt_add_hits(mt, serial(VG_(get_running_tid)()), r, w);
}

/* The access context of a (thread, site) entry on a shared line. */
static void *site_context(void *ctx, unsigned tid, struct ks_mt_site *ms)
{
	struct site *s = ms->user;
	ThreadId vt = tid < KS_MT_MAX_THREADS ? vg_of[tid] : 0;
	/* The thread's own stack if it is still alive under that number,
	 * else the running thread's; the innermost frame is the site. */
	if (!vt || serial_of[vt] != tid)
		vt = VG_(get_running_tid)();
	return kst_stack_here(vt, s ? s->ip : 0);
}

/* ------------------------------------------------------------------ */
/* Instrumentation                                                     */
/* ------------------------------------------------------------------ */

static struct site *site_for(Addr ip, UInt idx)
{
	UWord key = ip * 64 + (idx & 63);
	struct site *s = VG_(HT_lookup)(sites, key);
	if (s)
		return s;
	s = VG_(calloc)("kst.site", 1, sizeof(*s));
	s->key = key;
	s->ip = ip;
	s->s.user = s;
	s->s.id = next_site_id++;
	VG_(HT_add_node)(sites, s);
	return s;
}

static IRAtom *cassign(IRSB *sb, IRType ty, IRExpr *e)
{
	IRTemp t = newIRTemp(sb->tyenv, ty);
	addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
	return IRExpr_RdTmp(t);
}

static IRAtom *cbin(IRSB *sb, IRType ty, IROp op, IRAtom *x, IRAtom *y)
{
	return cassign(sb, ty, IRExpr_Binop(op, x, y));
}

static IRExpr *c64(ULong v)
{
	return IRExpr_Const(IRConst_U64(v));
}

/* The quiet-table test in the generated code (see struct qent): counts
 * the access into its slot and returns the I1 "not taken", the guard of
 * the call.  The conditions are or'ed together as 64-bit values, each
 * zero when it holds, so the code tests once. */
static IRAtom *qf_test(IRSB *sb, IRAtom *addr, Int size, struct site *s)
{
	IRAtom *line, *key, *slot, *ea, *x, *np, *miss;

	line = cbin(sb, Ity_I64, Iop_Shr64, addr, IRExpr_Const(IRConst_U8(line_shift)));
	key = cbin(sb, Ity_I64, Iop_Or64,
		   cbin(sb, Ity_I64, Iop_Shl64, line, IRExpr_Const(IRConst_U8(QF_SID_BITS))),
		   c64(s->s.id));
	slot = cbin(sb, Ity_I64, Iop_Shr64, cbin(sb, Ity_I64, Iop_Mul64, key, c64(QF_MUL)),
		    IRExpr_Const(IRConst_U8(64 - QF_BITS)));
	ea = cbin(sb, Ity_I64, Iop_Add64,
		  cbin(sb, Ity_I64, Iop_Shl64, slot, IRExpr_Const(IRConst_U8(5))),
		  c64((ULong)(UWord)qf));
	/* The entry's key differs from this access's. */
	x = cbin(sb, Ity_I64, Iop_Xor64,
		 cassign(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, ea)), key);
	/* The address is at or above the limit where keys are exact. */
	x = cbin(sb, Ity_I64, Iop_Or64, x,
		 cbin(sb, Ity_I64, Iop_Shr64, addr, IRExpr_Const(IRConst_U8(qf_addr_bits))));
	if (size > 1 && size <= 8) /* not naturally aligned (rare) */
		x = cbin(sb, Ity_I64, Iop_Or64, x,
			 cbin(sb, Ity_I64, Iop_And64, addr, c64((ULong)size - 1)));
	else if (size > 8) /* the last byte is on another line */
		x = cbin(sb, Ity_I64, Iop_Or64, x,
			 cbin(sb, Ity_I64, Iop_Shr64,
			      cbin(sb, Ity_I64, Iop_Xor64, addr,
				   cbin(sb, Ity_I64, Iop_Add64, addr, c64((ULong)size - 1))),
			      IRExpr_Const(IRConst_U8(line_shift))));
	miss = cbin(sb, Ity_I1, Iop_CmpNE64, x, c64(0));
	if (kst_clo.analysis == KST_FALSESHARE) {
		/* The words touched, first..last, or'ed into the entry (on a
		 * miss the slot holds another line's entry: nothing). */
		UInt ws = 0;
		IRAtom *off, *first, *bits, *wp;
		while ((1u << ws) < ks_mt_word_size(mt))
			ws++;
		off = cbin(sb, Ity_I64, Iop_And64, addr, c64(kst_clo.line_size - 1));
		first = cassign(sb, Ity_I8, IRExpr_Unop(Iop_64to8,
			cbin(sb, Ity_I64, Iop_Shr64, off, IRExpr_Const(IRConst_U8(ws)))));
		if (size <= 8) {
			/* Aligned (tested above): one word, or whole words. */
			UInt nw = (UInt)size > (1u << ws) ? (UInt)size >> ws : 1;
			bits = cbin(sb, Ity_I64, Iop_Shl64, c64((1ULL << nw) - 1), first);
		} else {
			IRAtom *last = cassign(sb, Ity_I8, IRExpr_Unop(Iop_64to8,
				cbin(sb, Ity_I64, Iop_Shr64,
				     cbin(sb, Ity_I64, Iop_Add64, off, c64((ULong)size - 1)),
				     IRExpr_Const(IRConst_U8(ws)))));
			/* (2 << last) - (1 << first); 2 << 63 wraps to 0, as
			 * wanted; a last word past the line was caught above. */
			bits = cbin(sb, Ity_I64, Iop_Sub64, cbin(sb, Ity_I64, Iop_Shl64, c64(2), last),
				    cbin(sb, Ity_I64, Iop_Shl64, c64(1), first));
		}
		wp = cbin(sb, Ity_I64, Iop_Add64, ea, c64(8));
		addStmtToIRSB(sb, IRStmt_Store(Iend_LE, wp,
			cbin(sb, Ity_I64, Iop_Or64,
			     cassign(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, wp)),
			     cassign(sb, Ity_I64, IRExpr_ITE(miss, c64(0), bits)))));
	}
	/* n += 1 whatever the outcome; the call takes it back on a miss. */
	np = cbin(sb, Ity_I64, Iop_Add64, ea, c64(16));
	addStmtToIRSB(sb, IRStmt_Store(Iend_LE, np,
		cbin(sb, Ity_I64, Iop_Add64,
		     cassign(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, np)), c64(1))));
	return miss;
}

/* flags: QF_RMW for a read and a write of the same bytes. */
static void add_access(IRSB *sb, IRAtom *addr, Int size, Bool write, Addr ip,
		       UInt *idx, IRAtom *guard, UWord flags)
{
	struct site *s = site_for(ip, (*idx)++);
	UWord info = (UWord)size | ((UWord)write << 16) | flags;
	/* The table serves unconditional accesses of at most a line
	 * (guarded ones are rare: they always take the call). */
	Bool inl = !guard && size > 0 && (ULong)size <= kst_clo.line_size &&
		   s->s.id < (1u << QF_SID_BITS);
	IRDirty *d;

	if (inl)
		info |= QF_INLINE;
	if (!s->info) { /* first translation */
		s->write = write;
		s->rmw = (flags & QF_RMW) != 0;
		s->info = info;
	}
	/* An instruction is translated the same way every time, so its
	 * sites' info stays right; only the 64th access of one instruction
	 * would share a site: it gets the plain call, with its info. */
	if (s->info == info) {
		d = unsafeIRDirty_0_N(2, "cache_access_site", VG_(fnptr_to_fnentry)(cache_access_site),
				      mkIRExprVec_2(addr, c64((ULong)(UWord)s)));
		if (inl)
			d->guard = qf_test(sb, addr, size, s);
	} else {
		d = unsafeIRDirty_0_N(3, "cache_access", VG_(fnptr_to_fnentry)(cache_access),
				      mkIRExprVec_3(addr, c64(info & ~(UWord)QF_INLINE), c64((ULong)(UWord)s)));
	}
	if (guard)
		d->guard = guard;
	addStmtToIRSB(sb, IRStmt_Dirty(d));
}

IRSB *kst_cache_instrument(IRSB *in, const VexGuestLayout *layout,
			   IRType gWordTy, IRType hWordTy)
{
	IRSB *sb = deepCopyIRSBExceptStmts(in);
	struct kst_sp sp;
	Addr ip = 0;
	UInt idx = 0;
	ULong nstack = 0; /* reads + (writes << 32) */
	Bool skip = False;
	Int i, rmw_at = -1; /* the store already instrumented with its load */

	kst_sp_begin(&sp, in, layout);
	for (i = 0; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];
		if (skip && st->tag != Ist_IMark) {
			if (st->tag == Ist_WrTmp)
				kst_sp_note(&sp, st);
			addStmtToIRSB(sb, st);
			continue;
		}
		switch (st->tag) {
		case Ist_IMark: {
			const HChar *obj;
			ip = st->Ist.IMark.addr + st->Ist.IMark.delta;
			idx = 0;
			/* Valgrind's and kscope's preloaded code (malloc
			 * replacement, string functions) is the tool's, not the
			 * program's: its bookkeeping is not program sharing. */
			skip = VG_(get_objname)(VG_(current_DiEpoch)(), ip, &obj) &&
			       VG_(strstr)(obj, "/vgpreload_") != NULL;
			break;
		}
		case Ist_WrTmp: {
			IRExpr *e = st->Ist.WrTmp.data;
			kst_sp_note(&sp, st);
			if (e->tag == Iex_Load) {
				if (kst_sp_atom(&sp, e->Iex.Load.addr)) {
					nstack += 1;
				} else if ((rmw_at = kst_rmw_store(in, i, True)) >= 0) {
					/* Load and store of x += y: one test. */
					add_access(sb, e->Iex.Load.addr, sizeofIRType(e->Iex.Load.ty),
						   True, ip, &idx, NULL, QF_RMW);
				} else {
					add_access(sb, e->Iex.Load.addr, sizeofIRType(e->Iex.Load.ty),
						   False, ip, &idx, NULL, 0);
				}
			}
			break;
		}
		case Ist_Store: {
			IRType ty = typeOfIRExpr(in->tyenv, st->Ist.Store.data);
			if (i == rmw_at)
				rmw_at = -1; /* counted with its load */
			else if (kst_sp_atom(&sp, st->Ist.Store.addr))
				nstack += 1ULL << 32;
			else
				add_access(sb, st->Ist.Store.addr, sizeofIRType(ty), True, ip,
					   &idx, NULL, 0);
			break;
		}
		case Ist_StoreG: {
			IRStoreG *g = st->Ist.StoreG.details;
			add_access(sb, g->addr, sizeofIRType(typeOfIRExpr(in->tyenv, g->data)),
				   True, ip, &idx, g->guard, 0);
			break;
		}
		case Ist_LoadG: {
			IRLoadG *g = st->Ist.LoadG.details;
			IRType rty, lty;
			typeOfIRLoadGOp(g->cvt, &rty, &lty);
			add_access(sb, g->addr, sizeofIRType(lty), False, ip, &idx, g->guard, 0);
			break;
		}
		case Ist_CAS: {
			IRCAS *c = st->Ist.CAS.details;
			Int sz = sizeofIRType(typeOfIRExpr(in->tyenv, c->dataLo));
			if (c->dataHi)
				sz *= 2;
			/* A locked read-modify-write: one write (it needs the
			 * line exclusively), whether or not it succeeds. */
			add_access(sb, c->addr, sz, True, ip, &idx, NULL, 0);
			break;
		}
		case Ist_LLSC:
			add_access(sb, st->Ist.LLSC.addr,
				   sizeofIRType(st->Ist.LLSC.storedata
							? typeOfIRExpr(in->tyenv, st->Ist.LLSC.storedata)
							: typeOfIRTemp(in->tyenv, st->Ist.LLSC.result)),
				   st->Ist.LLSC.storedata != NULL, ip, &idx, NULL, 0);
			break;
		case Ist_Dirty: {
			IRDirty *d = st->Ist.Dirty.details;
			if (d->mFx != Ifx_None) {
				Int sz = d->mSize;
				while (sz > 0) {
					Int n = sz > 64 ? 64 : sz;
					add_access(sb, d->mAddr, n, d->mFx != Ifx_Read, ip, &idx,
						   d->guard, 0);
					sz -= n;
					break; /* the first 64 bytes stand for the block */
				}
			}
			break;
		}
		case Ist_Exit:
			if (nstack) {
				/* Count the stack accesses made so far before
				 * a possible side exit. */
				IRDirty *d = unsafeIRDirty_0_N(1, "count_stack",
							       VG_(fnptr_to_fnentry)(count_stack),
							       mkIRExprVec_1(IRExpr_Const(IRConst_U64(nstack))));
				addStmtToIRSB(sb, IRStmt_Dirty(d));
				nstack = 0;
			}
			break;
		default:
			break;
		}
		addStmtToIRSB(sb, st);
	}
	if (nstack) {
		IRDirty *d = unsafeIRDirty_0_N(1, "count_stack", VG_(fnptr_to_fnentry)(count_stack),
					       mkIRExprVec_1(IRExpr_Const(IRConst_U64(nstack))));
		addStmtToIRSB(sb, IRStmt_Dirty(d));
	}
	kst_sp_end(&sp);
	return sb;
}

/* ------------------------------------------------------------------ */
/* Set-up and results                                                  */
/* ------------------------------------------------------------------ */

void kst_cache_init(void)
{
	struct ks_mt_config cfg = {
		.line_size = kst_clo.line_size,
		.max_threads = KS_MT_MAX_THREADS,
		.falseshare = kst_clo.analysis == KST_FALSESHARE,
		.min_write = kst_clo.min_write,
		.min_writes = kst_clo.min_writes,
		.pad_smu = kst_clo.pad_smu,
		.thread_isolation = kst_clo.thread_isolation,
		.context = site_context,
		.context_ctx = NULL,
	};
	serial_of = VG_(calloc)("kst.serial", VG_N_THREADS + 1, sizeof(*serial_of));
	vg_of = VG_(calloc)("kst.serial", KS_MT_MAX_THREADS, sizeof(*vg_of));
	serial_of[1] = 1; /* the main thread */
	vg_of[1] = 1;

	{
		int rc = ks_mt_init(&mt, &cfg, &kst_core_alloc);
		if (rc != 0) {
			VG_(umsg)("kscope: cannot set up the line shadow (error %d)\n", rc);
			VG_(exit)(1);
		}
	}
	sites = VG_(HT_construct)("kst.sites");
	while ((1u << line_shift) < kst_clo.line_size)
		line_shift++;
	qf_addr_bits = 64 - QF_SID_BITS + line_shift;
	if (qf_addr_bits > 63)
		qf_addr_bits = 63;
	{
		UInt i;
		for (i = 0; i < QF_N; i++)
			qf[i].key = QF_NONE;
	}
	VG_(track_start_client_code)(qf_switch);
	objects = VG_(HT_construct)("kst.objects");
}

static void counts_out(const struct ks_mt_counts *c)
{
	kst_out_printf("\"accesses\":%llu,\"reads\":%llu,\"writes\":%llu,\"cold_misses\":%llu,"
		       "\"misses\":%llu,\"invalidations\":%llu",
		       (ULong)c->accesses, (ULong)c->reads, (ULong)c->writes,
		       (ULong)c->cold_misses, (ULong)c->misses, (ULong)c->invalidations);
}

/* What becomes of a shared line: reported when two threads each came
 * back to it --min-accesses times, one of them writing (sharing matters
 * when threads keep coming back: a line two threads touched a few times
 * -- start-up, relocation, a result read once -- cannot cost much,
 * whatever its pattern), and its verdict is false, true or mixed; quiet
 * when they did not; read-mostly lines (threads on different bytes, but
 * too few writes to keep the line moving) are counted, not reported;
 * others (read) are neither. */
enum line_fate { LINE_OTHER, LINE_QUIET, LINE_READ_MOSTLY, LINE_REPORTED };

static enum line_fate line_fate(const struct ks_mt_line_info *li)
{
	unsigned i, busy = 0;
	Bool busy_writer = False;

	if (li->verdict != KS_MT_FALSE && li->verdict != KS_MT_TRUE &&
	    li->verdict != KS_MT_MIXED && li->verdict != KS_MT_READ_MOSTLY)
		return LINE_OTHER;
	for (i = 0; i < li->nthreads; i++)
		if (li->threads[i].reads + li->threads[i].writes >= kst_clo.min_accesses) {
			busy++;
			if (li->threads[i].writes)
				busy_writer = True;
		}
	if (busy < 2 || !busy_writer)
		return LINE_QUIET;
	return li->verdict == KS_MT_READ_MOSTLY ? LINE_READ_MOSTLY : LINE_REPORTED;
}

/* The objects of the n words of step bytes from base (those whose bit is
 * set in *touched, or all when touched is NULL), in address order, at
 * most 64, their var records written; returns how many. */
static unsigned objects_at(Addr base, unsigned step, unsigned n, const uint64_t *touched,
			   struct object *obs[64])
{
	unsigned i, nobs = 0;

	for (i = 0; i < n && nobs < 64; i++) {
		Addr a = base + (Addr)i * step;
		struct object *x;
		if (touched && !(*touched >> i & 1))
			continue;
		if (nobs && a >= obs[nobs - 1]->addr &&
		    a < obs[nobs - 1]->addr + (obs[nobs - 1]->size ? obs[nobs - 1]->size : 1))
			continue;
		if ((x = object_of_line(a)) && (!nobs || obs[nobs - 1] != x)) {
			write_var(x);
			obs[nobs++] = x;
		}
	}
	return nobs;
}

/* The objects of a line's touched words (the line's "var" is the first,
 * where its lowest touched word is). */
static unsigned line_objects(const struct ks_mt_line_info *li, struct object *obs[64])
{
	uint64_t touched = 0;
	unsigned i;

	for (i = 0; i < li->nthreads; i++)
		touched |= li->threads[i].rmask | li->threads[i].wmask;
	return objects_at(li->line_addr, li->word_size, 64, &touched, obs);
}

/* "var":N,"vars":[...], for a line's objects. */
static void line_vars_out(struct object *const *obs, unsigned nobs)
{
	unsigned i;

	if (nobs)
		kst_out_printf("\"var\":%u,", obs[0]->id);
	if (nobs > 1) {
		kst_out_printf("\"vars\":[");
		for (i = 0; i < nobs; i++)
			kst_out_printf("%s%u", i ? "," : "", obs[i]->id);
		kst_out_printf("],");
	}
}

static void threads_out(const struct ks_mt_line_info *li)
{
	unsigned i;

	kst_out_printf("\"threads\":[");
	for (i = 0; i < li->nthreads; i++) {
		const struct ks_mt_line_thread *t = &li->threads[i];
		kst_out_printf("%s{\"tid\":%u,\"read\":\"%#llx\",\"write\":\"%#llx\","
			       "\"reads\":%llu,\"writes\":%llu}",
			       i ? "," : "", t->tid, (ULong)t->rmask, (ULong)t->wmask,
			       (ULong)t->reads, (ULong)t->writes);
	}
	kst_out_printf("]");
}

/* A line near another thread's (ks_mt_for_each_line_near_others) that
 * is not reported: a "near" record, for the layout prediction. */
#define MAX_NEARS 4096
static ULong nears_written, nears_dropped; /* lines past MAX_NEARS */

static void near_out(void *arg, const struct ks_mt_line_info *li)
{
	struct object *obs[64];
	unsigned nobs;

	(void)arg;
	if (line_fate(li) == LINE_REPORTED)
		return;
	if (nears_written >= MAX_NEARS) {
		nears_dropped++;
		return;
	}
	nears_written++;
	nobs = line_objects(li, obs);
	kst_out_printf("{\"rec\":\"near\",\"addr\":\"%#lx\",", (Addr)li->line_addr);
	line_vars_out(obs, nobs);
	kst_out_printf("\"word_size\":%u,", li->word_size);
	threads_out(li);
	kst_out_printf("}\n");
}

static void line_out(void *arg, const struct ks_mt_line_info *li)
{
	struct object *obs[64];
	unsigned i, nobs;

	(void)arg;
	switch (line_fate(li)) {
	case LINE_OTHER:
		return;
	case LINE_QUIET:
		lines_quiet++;
		return;
	case LINE_READ_MOSTLY:
		lines_read_mostly++;
		return;
	case LINE_REPORTED:
		break;
	}
	nobs = line_objects(li, obs);
	for (i = 0; i < li->nsites; i++)
		if (li->sites[i].context)
			(void)kst_out_stack(li->sites[i].context);
	kst_out_printf("{\"rec\":\"line\",\"addr\":\"%#lx\",", (Addr)li->line_addr);
	line_vars_out(obs, nobs);
	kst_out_printf("\"verdict\":\"%s\",\"word_size\":%u,",
		       ks_mt_verdict_name(li->verdict), li->word_size);
	threads_out(li);
	kst_out_printf(",\"misses\":%llu,\"invalidations\":%llu,\"potential_invalidations\":%llu}\n",
		       (ULong)li->misses, (ULong)li->invalidations,
		       (ULong)li->potential_invalidations);
	for (i = 0; i < li->nsites; i++) {
		const struct ks_mt_line_site *s = &li->sites[i];
		/* The entry collecting a thread's accesses beyond
		 * KS_MT_MAX_LINE_SITES sites has no context of its own; the
		 * record format requires one, so it gets the empty place 0x0. */
		UInt cid = s->context ? kst_out_stack(s->context) : kst_out_stack_ip(0);
		kst_out_printf("{\"rec\":\"access\",\"line\":\"%#lx\",", (Addr)li->line_addr);
		if (nobs)
			kst_out_printf("\"var\":%u,", obs[0]->id);
		kst_out_printf("\"tid\":%u,\"context\":%u,", s->tid, cid);
		kst_out_printf("\"reads\":%llu,\"writes\":%llu,\"words\":\"%#llx\"}\n",
			       (ULong)s->reads, (ULong)s->writes, (ULong)s->words);
	}
}

/* The contention report's lines: at most MAX_CLINES, those with the most
 * misses + invalidations (the threshold doubles until they fit). */
#define MAX_CLINES 1000

static void cline_out(void *arg, uintptr_t line, uint64_t misses, uint64_t invals)
{
	struct object *obs[64];
	/* Which words the threads touched is not kept for contention:
	 * every object of the line, looked up every 8 bytes. */
	unsigned nobs = objects_at(line, 8, kst_clo.line_size / 8, NULL, obs);

	(void)arg;
	kst_out_printf("{\"rec\":\"cline\",\"addr\":\"%#lx\",", (Addr)line);
	line_vars_out(obs, nobs);
	kst_out_printf("\"misses\":%llu,\"invalidations\":%llu}\n", (ULong)misses,
		       (ULong)invals);
}

static void clines_out(void)
{
	ULong min = 1;

	while (ks_mt_for_each_contended_line(mt, min, NULL, NULL) > MAX_CLINES &&
	       min < (1ULL << 40))
		min *= 2;
	(void)ks_mt_for_each_contended_line(mt, min, cline_out, NULL);
}

void kst_cache_fini(void)
{
	struct ks_mt_counts c, tot;
	unsigned t, nt = ks_mt_threads_seen(mt);
	struct site *s;
	struct object *o;

	qf_flush();
	nt = ks_mt_threads_seen(mt);
	for (t = 0; t < nt; t++) {
		ks_mt_thread_counts(mt, t, &c);
		if (!c.accesses)
			continue;
		kst_out_printf("{\"rec\":\"thread\",\"tid\":%u,", t);
		counts_out(&c);
		kst_out_printf("}\n");
	}
	VG_(HT_ResetIter)(sites);
	while ((s = VG_(HT_Next)(sites))) {
		UInt sid;
		if (!s->s.c.misses && !s->s.c.invalidations)
			continue;
		sid = kst_out_stack_ip(s->ip);
		kst_out_printf("{\"rec\":\"site\",\"stack\":%u,", sid);
		counts_out(&s->s.c);
		kst_out_printf("}\n");
	}
	VG_(HT_ResetIter)(objects);
	while ((o = VG_(HT_Next)(objects))) {
		if (!o->misses && !o->invals)
			continue;
		write_var(o);
		kst_out_printf("{\"rec\":\"object\",\"var\":%u,\"cold_misses\":%llu,\"misses\":%llu,"
			       "\"invalidations\":%llu}\n",
			       o->id, o->cold, o->misses, o->invals);
	}
	clines_out();
	if (kst_clo.analysis == KST_FALSESHARE) {
		ks_mt_for_each_shared_line(mt, line_out, NULL);
		ks_mt_for_each_line_near_others(mt, kst_clo.min_writes, near_out, NULL);
	}
	ks_mt_total_counts(mt, &tot);
	kst_out_printf("{\"rec\":\"total\",");
	counts_out(&tot);
	kst_out_printf(",\"stack_accesses\":%llu,\"contention_accesses\":%llu,\"shadow_bytes\":%lu,"
		       "\"quiet_lines\":%llu,\"min_accesses\":%u",
		       stack_accesses, (ULong)(tot.misses + tot.invalidations),
		       (unsigned long)ks_mt_shadow_bytes(mt), lines_quiet, kst_clo.min_accesses);
	if (kst_clo.analysis == KST_FALSESHARE)
		kst_out_printf(",\"read_mostly_lines\":%llu,\"min_writes\":%u,\"near_dropped\":%llu",
			       lines_read_mostly, kst_clo.min_writes, nears_dropped);
	kst_out_printf("}\n");
}
