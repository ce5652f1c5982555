/*
 * memcheck: heap memory defects of unmodified programs.
 *
 * Every heap byte has a state in the core's heap shadow (unaddressable,
 * undefined, defined, freed); memory that is not heap is not tracked and
 * counts as defined.  Loads and stores of the program are checked
 * against those states (invalid read/write, use after free), and the
 * definedness of each value is followed through registers and
 * temporaries with a shadow value per value ("V bits": a 1 bit is
 * undefined), so an uninitialized value is reported where it is used --
 * a conditional branch, a memory address, a system call argument -- and
 * copying a partly initialized struct is not an error.
 *
 * The V-bit rules are simpler than Valgrind's memcheck: exact for moves,
 * widening and narrowing, bitwise logic (with the usual "a defined 0 in
 * an AND decides the bit" improvement), shifts by constants, lane-wise
 * vector compares and min/max, equality tests and count-trailing-zeros;
 * everything else makes the result wholly undefined if any input bit is
 * undefined.  Values stored to the stack or to globals are not tracked
 * (such memory is never heap), so a spilled undefined value becomes
 * defined: kscope can miss such a use, but never reports one that is
 * not there.
 */
#include "pub_tool_basics.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"

#include "kst_int.h"

struct ks_hs *kst_hs;

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

enum kst_err_kind {
	E_INVALID_READ, E_INVALID_WRITE, E_UAF_READ, E_UAF_WRITE,
	E_UNINIT_COND, E_UNINIT_ADDR, E_UNINIT_SYSCALL,
	E_DOUBLE_FREE, E_INVALID_FREE, E_SYSCALL_NOACCESS
};

struct kst_err {
	struct kst_err *next;
	UWord key;             /* ECU << 16 | kind << 8 | size */
	enum kst_err_kind kind;
	ThreadId tid;
	ExeContext *where;
	ULong count;
	Addr addr;
	SizeT size;
	Bool have_block;
	Addr b_start;
	SizeT b_size;
	Bool b_freed;
	ExeContext *b_alloc, *b_free;
	HChar *syscall, *param; /* E_UNINIT_SYSCALL, E_SYSCALL_NOACCESS */
	UInt seq;               /* order of first occurrence */
};

static VgHashTable *errors;
static UInt n_errors;
static ULong n_error_occurrences;
#define KST_MAX_ERROR_CONTEXTS 100000

static ULong n_suppressed;

/* The C library's hand-written string routines (assembly, files *.S)
 * compare whole vectors that may extend past a terminator into bytes
 * never written, and then ignore those lanes: a use of undefined bits
 * whose outcome does not depend on them.  Uses of undefined values
 * whose innermost frame is such a routine are not reported (Valgrind's
 * own default suppressions do the same for the routines its
 * replacements miss). */
static Bool in_libc_asm(Addr ip)
{
	DiEpoch ep = VG_(current_DiEpoch)();
	const HChar *file, *obj;
	SizeT n;
	if (!VG_(get_filename)(ep, ip, &file) || !VG_(get_objname)(ep, ip, &obj))
		return False;
	n = VG_(strlen)(file);
	return n > 2 && file[n - 2] == '.' && file[n - 1] == 'S' &&
	       VG_(strstr)(obj, "/libc.so") != NULL;
}

static struct kst_err *record_error(enum kst_err_kind kind, ThreadId tid,
				    ExeContext *where, Addr a, SizeT size)
{
	UWord key = ((UWord)VG_(get_ECU_from_ExeContext)(where) << 16) |
		    ((UWord)kind << 8) | (size > 255 ? 255 : size);
	struct kst_err *e = VG_(HT_lookup)(errors, key);

	n_error_occurrences++;
	if (e) {
		e->count++;
		return NULL;
	}
	if (n_errors >= KST_MAX_ERROR_CONTEXTS)
		return NULL;
	e = VG_(calloc)("kst.err", 1, sizeof(*e));
	e->key = key;
	e->kind = kind;
	e->tid = tid;
	e->where = where;
	e->count = 1;
	e->addr = a;
	e->size = size;
	e->seq = n_errors++;
	VG_(HT_add_node)(errors, e);
	return e;
}

static void describe_block(struct kst_err *e, Addr a)
{
	Bool was_freed = False;
	struct kst_block *b = kst_heap_describe(a, &was_freed);
	if (!b)
		return;
	e->have_block = True;
	e->b_start = b->start;
	e->b_size = b->size;
	e->b_freed = was_freed;
	e->b_alloc = b->alloc_ec;
	e->b_free = b->free_ec;
}

static void access_error(Bool write, enum ks_hs_state st, Addr a, SizeT size,
			 Addr iaddr)
{
	ThreadId tid = VG_(get_running_tid)();
	enum kst_err_kind kind;
	struct kst_err *e;

	if (st == KS_HS_FREED)
		kind = write ? E_UAF_WRITE : E_UAF_READ;
	else
		kind = write ? E_INVALID_WRITE : E_INVALID_READ;
	e = record_error(kind, tid, kst_stack_here(tid, iaddr), a, size);
	if (e)
		describe_block(e, a);
}

void kst_mc_error_free(ThreadId tid, Addr p, Bool double_free,
		       struct kst_block *b)
{
	struct kst_err *e = record_error(double_free ? E_DOUBLE_FREE : E_INVALID_FREE,
					 tid, VG_(record_ExeContext)(tid, 0), p, 0);
	if (e)
		describe_block(e, p);
}

/* ------------------------------------------------------------------ */
/* Run-time helpers called from instrumented code                      */
/* ------------------------------------------------------------------ */

/* Bit i of a byte mask -> byte i of a V-bit word. */
static inline ULong bytes_to_vbits(uint64_t m)
{
	ULong v = 0;
	UInt i;
	for (i = 0; m && i < 8; i++, m >>= 1)
		if (m & 1)
			v |= 0xFFULL << (8 * i);
	return v;
}

static inline uint64_t vbits_to_bytes(ULong v, UInt n)
{
	uint64_t m = 0;
	UInt i;
	for (i = 0; v && i < n; i++, v >>= 8)
		if (v & 0xFF)
			m |= 1ULL << i;
	return m;
}

/* info: bits 0-7 this part's size, 8-15 the whole access's size, 16-23
 * this part's offset in it, 24-63 the instruction's address (one argument
 * less to pass).  Wide accesses come in 8-byte parts; the part holding
 * the first bad byte of the whole access reports it, once. */
#define MC_INFO(part, total, off, iaddr) \
	((UWord)(part) | ((UWord)(total) << 8) | ((UWord)(off) << 16) | ((UWord)(iaddr) << 24))
#define MC_IADDR_MAX (1ULL << 40) /* instruction addresses that fit */
#define MC_IADDR_FIT(iaddr) ((ULong)(iaddr) < MC_IADDR_MAX ? (iaddr) : 0)

/* The instruction of an access; the guest's own, which Valgrind keeps
 * exact at memory accesses, for code above 2^40 (never seen on amd64). */
static Addr info_iaddr(UWord info)
{
	Addr ia = (Addr)(info >> 24);
	return ia ? ia : VG_(get_IP)(VG_(get_running_tid)());
}

/* Whether the part at a (offset off of a total-byte access) must report
 * the bad access, and as which state. */
static enum ks_hs_state whole_access_bad(Addr a, UInt part, UInt total, UInt off,
					 Bool load)
{
	uint64_t u;
	unsigned bad = 0;
	Addr start = a - off;
	enum ks_hs_state st = ks_hs_load(kst_hs, start, total, &u, &bad);
	if (st < KS_HS_NOACCESS || bad < off || bad >= off + part)
		return KS_HS_UNTRACKED;
	/* Naturally aligned loads of 8 bytes or more that are partly
	 * addressable are how optimized string and memory functions scan;
	 * like Valgrind's memcheck, they are not errors, and the bytes
	 * outside read as undefined. */
	if (load && total >= 8 && (start & (total - 1)) == 0) {
		UInt i;
		for (i = 0; i < total; i++) {
			uint64_t u1;
			unsigned b1;
			if (ks_hs_load(kst_hs, start + i, 1, &u1, &b1) < KS_HS_NOACCESS)
				return KS_HS_UNTRACKED; /* some byte is addressable */
		}
	}
	return st;
}

static VG_REGPARM(2) ULong mc_load(Addr a, UWord info)
{
	UInt part = info & 0xFF, total = (info >> 8) & 0xFF, off = (info >> 16) & 0xFF;
	uint64_t undef = 0;
	unsigned bad = 0;
	enum ks_hs_state st = ks_hs_load(kst_hs, a, part, &undef, &bad);

	if (st >= KS_HS_NOACCESS) {
		enum ks_hs_state wst = whole_access_bad(a, part, total, off, True);
		UInt i;
		if (wst >= KS_HS_NOACCESS)
			access_error(False, wst, a - off, total, info_iaddr(info));
		/* Unaddressable bytes read as undefined. */
		for (i = 0; i < part; i++) {
			uint64_t u1;
			unsigned b1;
			if (ks_hs_load(kst_hs, a + i, 1, &u1, &b1) >= KS_HS_NOACCESS)
				undef |= 1ULL << i;
		}
	}
	return undef ? bytes_to_vbits(undef) : 0;
}

static VG_REGPARM(3) void mc_store(Addr a, UWord info, ULong vbits)
{
	UInt part = info & 0xFF, total = (info >> 8) & 0xFF, off = (info >> 16) & 0xFF;
	unsigned bad = 0;
	enum ks_hs_state st = ks_hs_store(kst_hs, a, part,
					  vbits ? vbits_to_bytes(vbits, part) : 0, &bad);

	if (st >= KS_HS_NOACCESS) {
		enum ks_hs_state wst = whole_access_bad(a, part, total, off, False);
		if (wst >= KS_HS_NOACCESS)
			access_error(True, wst, a - off, total, info_iaddr(info));
	}
}

/* An undefined value decided something at iaddr: kind E_UNINIT_*. */
static void uninit_used(enum kst_err_kind kind, Addr iaddr)
{
	ThreadId tid = VG_(get_running_tid)();
	if (in_libc_asm(iaddr)) {
		n_suppressed++;
		return;
	}
	record_error(kind, tid, kst_stack_here(tid, iaddr), 0, 0);
}

static VG_REGPARM(1) void mc_err_cond(Addr iaddr)
{
	uninit_used(E_UNINIT_COND, iaddr);
}

static VG_REGPARM(1) void mc_err_addr(Addr iaddr)
{
	uninit_used(E_UNINIT_ADDR, iaddr);
}

/* A dirty helper wrote size bytes at a (fxsave and the like). */
static VG_REGPARM(2) void mc_make_defined(Addr a, UWord size)
{
	unsigned bad;
	while (size > 0) {
		UInt n = size > 64 ? 64 : (UInt)size;
		(void)ks_hs_store(kst_hs, a, n, 0, &bad);
		a += n;
		size -= n;
	}
}

/* ------------------------------------------------------------------ */
/* System calls                                                        */
/* ------------------------------------------------------------------ */

static void split_syscall_name(struct kst_err *e, const HChar *s)
{
	const HChar *p = VG_(strchr)(s, '(');
	if (p) {
		SizeT n = p - s;
		const HChar *q = VG_(strchr)(p + 1, ')');
		e->syscall = VG_(malloc)("kst.sys", n + 1);
		VG_(memcpy)(e->syscall, s, n);
		e->syscall[n] = 0;
		n = q ? (SizeT)(q - p - 1) : VG_(strlen)(p + 1);
		e->param = VG_(malloc)("kst.sys", n + 1);
		VG_(memcpy)(e->param, p + 1, n);
		e->param[n] = 0;
	} else {
		e->syscall = VG_(strdup)("kst.sys", s);
		e->param = VG_(strdup)("kst.sys", "");
	}
}

static void syscall_error(enum kst_err_kind kind, ThreadId tid, const HChar *s,
			  Addr a, SizeT size)
{
	struct kst_err *e = record_error(kind, tid, VG_(record_ExeContext)(tid, 0), a, size);
	if (!e)
		return;
	split_syscall_name(e, s);
	if (a)
		describe_block(e, a);
}

static void mc_pre_reg_read(CorePart part, ThreadId tid, const HChar *s,
			    PtrdiffT off, SizeT size)
{
	UChar buf[64];
	SizeT i;
	if (size > sizeof(buf))
		size = sizeof(buf);
	VG_(get_shadow_regs_area)(tid, buf, 1, off, size);
	for (i = 0; i < size; i++)
		if (buf[i]) {
			syscall_error(E_UNINIT_SYSCALL, tid, s, 0, 0);
			return;
		}
}

static void mc_check_range(ThreadId tid, const HChar *s, Addr a, SizeT size,
			   Bool write)
{
	while (size > 0) {
		UInt n = size > 64 ? 64 : (UInt)size;
		uint64_t undef = 0;
		unsigned bad = 0;
		enum ks_hs_state st = ks_hs_load(kst_hs, a, n, &undef, &bad);
		if (st >= KS_HS_NOACCESS) {
			syscall_error(E_SYSCALL_NOACCESS, tid, s, a + bad, 0);
			return;
		}
		if (!write && undef) {
			syscall_error(E_UNINIT_SYSCALL, tid, s, a + __builtin_ctzll(undef), 0);
			return;
		}
		a += n;
		size -= n;
	}
}

static void mc_pre_mem_read(CorePart part, ThreadId tid, const HChar *s,
			    Addr a, SizeT size)
{
	mc_check_range(tid, s, a, size, False);
}

static void mc_pre_mem_write(CorePart part, ThreadId tid, const HChar *s,
			     Addr a, SizeT size)
{
	mc_check_range(tid, s, a, size, True);
}

static void mc_pre_mem_read_asciiz(CorePart part, ThreadId tid, const HChar *s,
				   Addr a)
{
	SizeT n;
	/* Up to and including the terminating NUL, checked a byte at a
	 * time only while in tracked (heap) memory. */
	for (n = 0; n < (1u << 20); n++) {
		enum ks_hs_state st = ks_hs_get(kst_hs, a + n);
		if (st == KS_HS_UNTRACKED)
			return;
		if (st >= KS_HS_NOACCESS) {
			syscall_error(E_SYSCALL_NOACCESS, tid, s, a + n, 0);
			return;
		}
		if (st == KS_HS_UNDEF) {
			syscall_error(E_UNINIT_SYSCALL, tid, s, a + n, 0);
			return;
		}
		if (*(const HChar *)(a + n) == 0)
			return;
	}
}

static void mc_post_mem_write(CorePart part, ThreadId tid, Addr a, SizeT size)
{
	mc_make_defined(a, size);
}

static void mc_post_reg_write(CorePart part, ThreadId tid, PtrdiffT off, SizeT size)
{
	UChar zeros[512];
	VG_(memset)(zeros, 0, sizeof(zeros));
	while (size > 0) {
		SizeT n = size > sizeof(zeros) ? sizeof(zeros) : size;
		VG_(set_shadow_regs_area)(tid, 1, off, n, zeros);
		off += n;
		size -= n;
	}
}

static void mc_post_reg_write_clientcall(ThreadId tid, PtrdiffT off, SizeT size,
					 Addr f)
{
	mc_post_reg_write(Vg_CoreClientReq, tid, off, size);
}

/* ------------------------------------------------------------------ */
/* Instrumentation: building shadow IR                                 */
/* ------------------------------------------------------------------ */

struct mce {
	IRSB *sb;        /* the block being built */
	IRTemp *shadow;  /* shadow temporary of each input temporary */
	IRExpr **def;    /* what defined each input temporary, or NULL */
	Int n_in;        /* input temporaries */
	Int sh_off;      /* offset of the shadow guest state */
	Addr iaddr;      /* guest address of the current instruction */
	struct kst_sp sp;
	/* The last plain load of this instruction and its common-case
	 * test: x += y stores where it loaded, and nothing in between can
	 * change the bytes' states, so the store reuses the test. */
	IRAtom *memo_addr, *memo_ok;
	UInt memo_part;
	/* The address whose definedness this instruction already checked:
	 * x += y uses one address twice, and its shadow cannot change. */
	IRAtom *checked_addr;
};

static IRType shty(IRType t)
{
	switch (t) {
	case Ity_I1: case Ity_I8: case Ity_I16: case Ity_I32: case Ity_I64:
	case Ity_I128: case Ity_V128: case Ity_V256:
		return t;
	case Ity_F16: return Ity_I16;
	case Ity_F32: case Ity_D32: return Ity_I32;
	case Ity_F64: case Ity_D64: return Ity_I64;
	case Ity_F128: case Ity_D128: return Ity_I128;
	default:
		VG_(tool_panic)("kscope: shadow type of an unknown IR type");
	}
}

static IRAtom *assign(struct mce *m, IRType ty, IRExpr *e)
{
	IRTemp t = newIRTemp(m->sb->tyenv, ty);
	addStmtToIRSB(m->sb, IRStmt_WrTmp(t, e));
	return IRExpr_RdTmp(t);
}

static IRAtom *unop(struct mce *m, IRType ty, IROp op, IRAtom *a)
{
	return assign(m, ty, IRExpr_Unop(op, a));
}

static IRAtom *binop(struct mce *m, IRType ty, IROp op, IRAtom *a, IRAtom *b)
{
	return assign(m, ty, IRExpr_Binop(op, a, b));
}

static IRAtom *zero_of(struct mce *m, IRType ty)
{
	switch (ty) {
	case Ity_I1: return IRExpr_Const(IRConst_U1(False));
	case Ity_I8: return IRExpr_Const(IRConst_U8(0));
	case Ity_I16: return IRExpr_Const(IRConst_U16(0));
	case Ity_I32: return IRExpr_Const(IRConst_U32(0));
	case Ity_I64: return IRExpr_Const(IRConst_U64(0));
	case Ity_V128: return IRExpr_Const(IRConst_V128(0));
	case Ity_V256: return IRExpr_Const(IRConst_V256(0));
	case Ity_I128:
		return binop(m, Ity_I128, Iop_64HLto128, IRExpr_Const(IRConst_U64(0)),
			     IRExpr_Const(IRConst_U64(0)));
	default:
		VG_(tool_panic)("kscope: zero of an unknown shadow type");
	}
}

static Bool is_zero_const(IRAtom *a)
{
	if (a->tag != Iex_Const)
		return False;
	switch (a->Iex.Const.con->tag) {
	case Ico_U1: return !a->Iex.Const.con->Ico.U1;
	case Ico_U8: return a->Iex.Const.con->Ico.U8 == 0;
	case Ico_U16: return a->Iex.Const.con->Ico.U16 == 0;
	case Ico_U32: return a->Iex.Const.con->Ico.U32 == 0;
	case Ico_U64: return a->Iex.Const.con->Ico.U64 == 0;
	case Ico_V128: return a->Iex.Const.con->Ico.V128 == 0;
	case Ico_V256: return a->Iex.Const.con->Ico.V256 == 0;
	default: return False;
	}
}

static IRType type_of(struct mce *m, IRExpr *e)
{
	return typeOfIRExpr(m->sb->tyenv, e);
}

/* Shadow of an input atom. */
static IRAtom *sh_atom(struct mce *m, IRAtom *a)
{
	if (a->tag == Iex_Const)
		return zero_of(m, shty(type_of(m, a)));
	tl_assert(a->tag == Iex_RdTmp);
	{
		IRTemp t = a->Iex.RdTmp.tmp;
		tl_assert(t < m->n_in);
		if (m->shadow[t] == IRTemp_INVALID) /* defined by a statement we treat as defined */
			return zero_of(m, shty(typeOfIRTemp(m->sb->tyenv, t)));
		return IRExpr_RdTmp(m->shadow[t]);
	}
}

/* Any undefined bit -> I1 1. */
static IRAtom *to_bit(struct mce *m, IRType ty, IRAtom *v)
{
	if (is_zero_const(v))
		return IRExpr_Const(IRConst_U1(False));
	switch (ty) {
	case Ity_I1: return v;
	case Ity_I8: return binop(m, Ity_I1, Iop_CmpNE8, v, IRExpr_Const(IRConst_U8(0)));
	case Ity_I16: return binop(m, Ity_I1, Iop_CmpNE16, v, IRExpr_Const(IRConst_U16(0)));
	case Ity_I32: return binop(m, Ity_I1, Iop_CmpNE32, v, IRExpr_Const(IRConst_U32(0)));
	case Ity_I64: return binop(m, Ity_I1, Iop_CmpNE64, v, IRExpr_Const(IRConst_U64(0)));
	case Ity_I128: {
		IRAtom *o = binop(m, Ity_I64, Iop_Or64, unop(m, Ity_I64, Iop_128HIto64, v),
				  unop(m, Ity_I64, Iop_128to64, v));
		return to_bit(m, Ity_I64, o);
	}
	case Ity_V128: {
		IRAtom *o = binop(m, Ity_I64, Iop_Or64, unop(m, Ity_I64, Iop_V128HIto64, v),
				  unop(m, Ity_I64, Iop_V128to64, v));
		return to_bit(m, Ity_I64, o);
	}
	case Ity_V256: {
		IRAtom *o = binop(m, Ity_V128, Iop_OrV128,
				  unop(m, Ity_V128, Iop_V256toV128_0, v),
				  unop(m, Ity_V128, Iop_V256toV128_1, v));
		return to_bit(m, Ity_V128, o);
	}
	default:
		VG_(tool_panic)("kscope: to_bit of an unknown shadow type");
	}
}

/* I1 -> all bits of ty. */
static IRAtom *from_bit(struct mce *m, IRType ty, IRAtom *b)
{
	IRAtom *x;
	if (is_zero_const(b))
		return zero_of(m, ty);
	switch (ty) {
	case Ity_I1: return b;
	case Ity_I8: return unop(m, Ity_I8, Iop_1Sto8, b);
	case Ity_I16: return unop(m, Ity_I16, Iop_1Sto16, b);
	case Ity_I32: return unop(m, Ity_I32, Iop_1Sto32, b);
	case Ity_I64: return unop(m, Ity_I64, Iop_1Sto64, b);
	case Ity_I128:
		x = unop(m, Ity_I64, Iop_1Sto64, b);
		return binop(m, Ity_I128, Iop_64HLto128, x, x);
	case Ity_V128:
		x = unop(m, Ity_I64, Iop_1Sto64, b);
		return binop(m, Ity_V128, Iop_64HLtoV128, x, x);
	case Ity_V256:
		x = from_bit(m, Ity_V128, b);
		return binop(m, Ity_V256, Iop_V128HLtoV256, x, x);
	default:
		VG_(tool_panic)("kscope: from_bit of an unknown shadow type");
	}
}

static IRAtom *pcast(struct mce *m, IRType from, IRAtom *v, IRType to)
{
	return from_bit(m, to, to_bit(m, from, v));
}

static IROp op_for(IRType ty, IROp op8)
{
	/* op8 is the 8-bit member of a family laid out 8, 16, 32, 64. */
	switch (ty) {
	case Ity_I8: return op8;
	case Ity_I16: return op8 + 1;
	case Ity_I32: return op8 + 2;
	case Ity_I64: return op8 + 3;
	default: return Iop_INVALID;
	}
}

/* Undefined if either is. */
static IRAtom *uifu(struct mce *m, IRType ty, IRAtom *a, IRAtom *b)
{
	if (is_zero_const(a))
		return b;
	if (is_zero_const(b))
		return a;
	switch (ty) {
	case Ity_I1: return binop(m, ty, Iop_Or1, a, b);
	case Ity_I8: case Ity_I16: case Ity_I32: case Ity_I64:
		return binop(m, ty, op_for(ty, Iop_Or8), a, b);
	case Ity_V128: return binop(m, ty, Iop_OrV128, a, b);
	case Ity_V256: return binop(m, ty, Iop_OrV256, a, b);
	case Ity_I128: {
		IRAtom *hi = binop(m, Ity_I64, Iop_Or64, unop(m, Ity_I64, Iop_128HIto64, a),
				   unop(m, Ity_I64, Iop_128HIto64, b));
		IRAtom *lo = binop(m, Ity_I64, Iop_Or64, unop(m, Ity_I64, Iop_128to64, a),
				   unop(m, Ity_I64, Iop_128to64, b));
		return binop(m, ty, Iop_64HLto128, hi, lo);
	}
	default:
		VG_(tool_panic)("kscope: uifu of an unknown shadow type");
	}
}

/* Whole-value pessimism over n arguments. */
static IRAtom *pessimistic(struct mce *m, IRExpr **args, Int n, UInt skip_mask,
			   IRType rty)
{
	IRAtom *acc = IRExpr_Const(IRConst_U1(False));
	Int i;
	for (i = 0; i < n; i++) {
		IRAtom *s;
		if (skip_mask & (1u << i))
			continue;
		if (is_IRExpr_VECRET_or_GSPTR(args[i]))
			continue;
		s = sh_atom(m, args[i]);
		acc = uifu(m, Ity_I1, acc, to_bit(m, shty(type_of(m, args[i])), s));
	}
	return from_bit(m, shty(rty), acc);
}

/* a AND b: a bit is defined when both are defined or either is a
 * defined 0.  OR: likewise with a defined 1. */
static IRAtom *and_or(struct mce *m, IRType ty, Bool is_and, IRAtom *a,
		      IRAtom *b, IRAtom *sa, IRAtom *sb)
{
	IROp o_or, o_and, o_not;
	IRAtom *u, *ia, *ib;
	switch (ty) {
	case Ity_V128: o_or = Iop_OrV128; o_and = Iop_AndV128; o_not = Iop_NotV128; break;
	case Ity_V256: o_or = Iop_OrV256; o_and = Iop_AndV256; o_not = Iop_NotV256; break;
	case Ity_I1: o_or = Iop_Or1; o_and = Iop_And1; o_not = Iop_Not1; break;
	default:
		o_or = op_for(ty, Iop_Or8);
		o_and = op_for(ty, Iop_And8);
		o_not = op_for(ty, Iop_Not8);
		break;
	}
	if (is_zero_const(sa) && is_zero_const(sb))
		return sa;
	u = binop(m, ty, o_or, sa, sb);
	if (is_and) {
		ia = binop(m, ty, o_or, a, sa);  /* 0 where a is a defined 0 */
		ib = binop(m, ty, o_or, b, sb);
	} else {
		ia = binop(m, ty, o_or, unop(m, ty, o_not, a), sa); /* 0 where a is a defined 1 */
		ib = binop(m, ty, o_or, unop(m, ty, o_not, b), sb);
	}
	return binop(m, ty, o_and, binop(m, ty, o_and, u, ia), ib);
}

/* a == b or a != b is defined when some bit is defined in both and
 * differs. */
static IRAtom *cmp_eq_ne(struct mce *m, IRType ty, IRAtom *a, IRAtom *b,
			 IRAtom *sa, IRAtom *sb)
{
	IRAtom *u, *naive, *diff, *ddef;
	if (is_zero_const(sa) && is_zero_const(sb))
		return IRExpr_Const(IRConst_U1(False));
	u = uifu(m, ty, sa, sb);
	naive = to_bit(m, ty, u);
	diff = binop(m, ty, op_for(ty, Iop_And8), binop(m, ty, op_for(ty, Iop_Xor8), a, b),
		     unop(m, ty, op_for(ty, Iop_Not8), u));
	ddef = to_bit(m, ty, diff);
	return binop(m, Ity_I1, Iop_And1, naive, unop(m, Ity_I1, Iop_Not1, ddef));
}

/* x != 0 is defined when x has a defined 1. */
static IRAtom *cmp_nez(struct mce *m, IRType ty, IRAtom *a, IRAtom *sa)
{
	return cmp_eq_ne(m, ty, a, zero_of(m, ty), sa, zero_of(m, ty));
}

/* Count trailing zeros: defined when every bit up to and including the
 * lowest defined 1 is defined. */
static IRAtom *ctz(struct mce *m, IRType ty, IRAtom *a, IRAtom *sa)
{
	IROp o_and = ty == Ity_I64 ? Iop_And64 : Iop_And32;
	IROp o_not = ty == Ity_I64 ? Iop_Not64 : Iop_Not32;
	IROp o_xor = ty == Ity_I64 ? Iop_Xor64 : Iop_Xor32;
	IROp o_sub = ty == Ity_I64 ? Iop_Sub64 : Iop_Sub32;
	IRAtom *one = ty == Ity_I64 ? IRExpr_Const(IRConst_U64(1)) : IRExpr_Const(IRConst_U32(1));
	IRAtom *d1 = binop(m, ty, o_and, a, unop(m, ty, o_not, sa));
	IRAtom *mask = binop(m, ty, o_xor, d1, binop(m, ty, o_sub, d1, one));
	return pcast(m, ty, binop(m, ty, o_and, sa, mask), ty);
}

static IROp vec_cmpnez_for(IROp op, IRType ty)
{
	switch (op) {
	case Iop_CmpEQ8x16: case Iop_CmpGT8Sx16: case Iop_CmpGT8Ux16:
	case Iop_Add8x16: case Iop_Sub8x16: case Iop_Min8Ux16: case Iop_Max8Ux16:
	case Iop_Min8Sx16: case Iop_Max8Sx16: case Iop_QAdd8Ux16: case Iop_QSub8Ux16:
	case Iop_QAdd8Sx16: case Iop_QSub8Sx16: case Iop_Avg8Ux16:
		return Iop_CmpNEZ8x16;
	case Iop_CmpEQ16x8: case Iop_CmpGT16Sx8: case Iop_Add16x8: case Iop_Sub16x8:
	case Iop_Min16Sx8: case Iop_Max16Sx8: case Iop_Min16Ux8: case Iop_Max16Ux8:
	case Iop_Mul16x8: case Iop_QAdd16Ux8: case Iop_QSub16Ux8: case Iop_QAdd16Sx8:
	case Iop_QSub16Sx8: case Iop_Avg16Ux8:
		return Iop_CmpNEZ16x8;
	case Iop_CmpEQ32x4: case Iop_CmpGT32Sx4: case Iop_Add32x4: case Iop_Sub32x4:
	case Iop_Min32Sx4: case Iop_Max32Sx4: case Iop_Min32Ux4: case Iop_Max32Ux4:
	case Iop_Mul32x4:
		return Iop_CmpNEZ32x4;
	case Iop_CmpEQ64x2: case Iop_CmpGT64Sx2: case Iop_Add64x2: case Iop_Sub64x2:
		return Iop_CmpNEZ64x2;
	case Iop_CmpEQ8x32: case Iop_CmpGT8Sx32: case Iop_Add8x32: case Iop_Sub8x32:
	case Iop_Min8Ux32: case Iop_Max8Ux32: case Iop_Min8Sx32: case Iop_Max8Sx32:
		return Iop_CmpNEZ8x32;
	case Iop_CmpEQ16x16: case Iop_CmpGT16Sx16: case Iop_Add16x16: case Iop_Sub16x16:
		return Iop_CmpNEZ16x16;
	case Iop_CmpEQ32x8: case Iop_CmpGT32Sx8: case Iop_Add32x8: case Iop_Sub32x8:
		return Iop_CmpNEZ32x8;
	case Iop_CmpEQ64x4: case Iop_CmpGT64Sx4: case Iop_Add64x4: case Iop_Sub64x4:
		return Iop_CmpNEZ64x4;
	default:
		return Iop_INVALID;
	}
}

static IRAtom *sh_unop(struct mce *m, IROp op, IRAtom *a, IRType rty)
{
	IRType aty = type_of(m, a);
	IRAtom *sa = sh_atom(m, a);
	IRType srty = shty(rty);

	if (is_zero_const(sa))
		return zero_of(m, srty);
	switch (op) {
	/* Value-preserving moves of bits: the same operation on the shadow. */
	case Iop_8Uto16: case Iop_8Uto32: case Iop_8Uto64: case Iop_16Uto32:
	case Iop_16Uto64: case Iop_32Uto64: case Iop_8Sto16: case Iop_8Sto32:
	case Iop_8Sto64: case Iop_16Sto32: case Iop_16Sto64: case Iop_32Sto64:
	case Iop_1Uto8: case Iop_1Uto32: case Iop_1Uto64: case Iop_1Sto8:
	case Iop_1Sto16: case Iop_1Sto32: case Iop_1Sto64:
	case Iop_64to32: case Iop_64to16: case Iop_64to8: case Iop_32to16:
	case Iop_32to8: case Iop_16to8: case Iop_64HIto32: case Iop_32HIto16:
	case Iop_16HIto8: case Iop_128to64: case Iop_128HIto64: case Iop_V128to64:
	case Iop_V128HIto64: case Iop_V256toV128_0: case Iop_V256toV128_1:
	case Iop_V128to32: case Iop_64to1: case Iop_32to1: case Iop_32UtoV128:
	case Iop_64UtoV128: case Iop_Dup8x16: case Iop_Dup16x8: case Iop_Dup32x4:
	case Iop_Left8: case Iop_Left16: case Iop_Left32: case Iop_Left64:
		return unop(m, srty, op, sa);
	case Iop_Not1: case Iop_Not8: case Iop_Not16: case Iop_Not32: case Iop_Not64:
	case Iop_NotV128: case Iop_NotV256:
	case Iop_ReinterpF64asI64: case Iop_ReinterpI64asF64:
	case Iop_ReinterpF32asI32: case Iop_ReinterpI32asF32:
		return sa;
	case Iop_Ctz32: case Iop_Ctz64:
		return ctz(m, aty, a, sa);
	case Iop_CmpNEZ8: case Iop_CmpNEZ16: case Iop_CmpNEZ32: case Iop_CmpNEZ64:
		return cmp_nez(m, aty, a, sa);
	case Iop_CmpwNEZ32: case Iop_CmpwNEZ64:
		return from_bit(m, srty, cmp_nez(m, aty, a, sa));
	case Iop_CmpNEZ8x16: case Iop_CmpNEZ16x8: case Iop_CmpNEZ32x4: case Iop_CmpNEZ64x2:
	case Iop_CmpNEZ8x32: case Iop_CmpNEZ16x16: case Iop_CmpNEZ32x8: case Iop_CmpNEZ64x4:
		return unop(m, srty, op, sa);
	case Iop_GetMSBs8x16:
		return unop(m, srty, op, sa);
	default: {
		IRExpr *args[1] = { a };
		return pessimistic(m, args, 1, 0, rty);
	}
	}
}

static IRAtom *sh_binop(struct mce *m, IROp op, IRAtom *a, IRAtom *b, IRType rty)
{
	IRType aty = type_of(m, a);
	IRAtom *sa = sh_atom(m, a), *sb = sh_atom(m, b);
	IRType srty = shty(rty);
	IROp lane;

	if (is_zero_const(sa) && is_zero_const(sb))
		return zero_of(m, srty);
	switch (op) {
	case Iop_Add8: case Iop_Add16: case Iop_Add32: case Iop_Add64:
	case Iop_Sub8: case Iop_Sub16: case Iop_Sub32: case Iop_Sub64: {
		/* Carries move undefinedness towards the top only. */
		IROp left = aty == Ity_I8 ? Iop_Left8 : aty == Ity_I16 ? Iop_Left16
			  : aty == Ity_I32 ? Iop_Left32 : Iop_Left64;
		return unop(m, srty, left, uifu(m, srty, sa, sb));
	}
	case Iop_Xor8: case Iop_Xor16: case Iop_Xor32: case Iop_Xor64:
	case Iop_XorV128: case Iop_XorV256:
		return uifu(m, srty, sa, sb);
	case Iop_And1: case Iop_And8: case Iop_And16: case Iop_And32: case Iop_And64:
	case Iop_AndV128: case Iop_AndV256:
		return and_or(m, srty, True, a, b, sa, sb);
	case Iop_Or1: case Iop_Or8: case Iop_Or16: case Iop_Or32: case Iop_Or64:
	case Iop_OrV128: case Iop_OrV256:
		return and_or(m, srty, False, a, b, sa, sb);
	case Iop_Shl8: case Iop_Shl16: case Iop_Shl32: case Iop_Shl64:
	case Iop_Shr8: case Iop_Shr16: case Iop_Shr32: case Iop_Shr64:
	case Iop_Sar8: case Iop_Sar16: case Iop_Sar32: case Iop_Sar64:
	case Iop_ShlN8x16: case Iop_ShlN16x8: case Iop_ShlN32x4: case Iop_ShlN64x2:
	case Iop_ShrN16x8: case Iop_ShrN32x4: case Iop_ShrN64x2:
	case Iop_SarN16x8: case Iop_SarN32x4:
	case Iop_ShlV128: case Iop_ShrV128: {
		IRAtom *r = binop(m, srty, op, sa, b);
		if (is_zero_const(sb))
			return r;
		return uifu(m, srty, r, pcast(m, shty(type_of(m, b)), sb, srty));
	}
	case Iop_CmpEQ8: case Iop_CmpEQ16: case Iop_CmpEQ32: case Iop_CmpEQ64:
	case Iop_CmpNE8: case Iop_CmpNE16: case Iop_CmpNE32: case Iop_CmpNE64:
	case Iop_CasCmpEQ8: case Iop_CasCmpEQ16: case Iop_CasCmpEQ32: case Iop_CasCmpEQ64:
	case Iop_CasCmpNE8: case Iop_CasCmpNE16: case Iop_CasCmpNE32: case Iop_CasCmpNE64:
	case Iop_ExpCmpNE8: case Iop_ExpCmpNE16: case Iop_ExpCmpNE32: case Iop_ExpCmpNE64:
		return cmp_eq_ne(m, aty, a, b, sa, sb);
	case Iop_8HLto16: case Iop_16HLto32: case Iop_32HLto64: case Iop_64HLto128:
	case Iop_64HLtoV128: case Iop_V128HLtoV256: case Iop_SetV128lo64:
	case Iop_SetV128lo32:
	case Iop_InterleaveLO8x16: case Iop_InterleaveHI8x16:
	case Iop_InterleaveLO16x8: case Iop_InterleaveHI16x8:
	case Iop_InterleaveLO32x4: case Iop_InterleaveHI32x4:
	case Iop_InterleaveLO64x2: case Iop_InterleaveHI64x2:
		return binop(m, srty, op, sa, sb);
	case Iop_Perm8x16:
		return uifu(m, srty, binop(m, srty, op, sa, b),
			    unop(m, srty, Iop_CmpNEZ8x16, sb));
	default:
		break;
	}
	lane = vec_cmpnez_for(op, rty);
	if (lane != Iop_INVALID)
		return unop(m, srty, lane, uifu(m, srty, sa, sb));
	{
		IRExpr *args[2] = { a, b };
		return pessimistic(m, args, 2, 0, rty);
	}
}

/* ---- memory ---- */

static void complain_if_undefined(struct mce *m, IRAtom *sh, IRType ty,
				  void *helper, const HChar *name)
{
	IRDirty *d;
	IRAtom *bit;
	if (is_zero_const(sh))
		return;
	bit = to_bit(m, ty, sh);
	d = unsafeIRDirty_0_N(1, name, VG_(fnptr_to_fnentry)(helper),
			      mkIRExprVec_1(IRExpr_Const(IRConst_U64(m->iaddr))));
	d->guard = bit;
	addStmtToIRSB(m->sb, IRStmt_Dirty(d));
}

/* Stands for an absent (untracked) chunk in the generated code, so the
 * states can be loaded without a branch: all "defined". */
static UChar *defined_chunk;

/* The common case, tested in the generated code (where Valgrind's
 * memcheck tests it in its helpers): a naturally aligned access of 1, 2,
 * 4 or 8 bytes in the heap shadow's direct table (ks_hs_direct_table)
 * to memory that is untracked or whose heap bytes are all defined: a
 * load's value is then defined, and no call is needed.  vbits: for a
 * store, the V-bits of the data stored (NULL for a load); a store of
 * defined data over heap bytes that are defined or undefined (the first
 * write of a fresh block) is also the common case, and the generated
 * code marks the bytes defined itself.  Returns the I1 "common case". */
static IRAtom *all_defined(struct mce *m, IRAtom *ea, UInt part, IRAtom *vbits)
{
	struct ks_hs_direct dt = ks_hs_direct_table(kst_hs);
	IRAtom *idx, *ch, *bad, *pat, *raw, *sa, *ok;
	IRType lty;
	ULong def;
	UInt nbits = 0;

	switch (part) {
	case 1: lty = Ity_I8; def = KS_HS_DEFINED; break;
	case 2: lty = Ity_I16; def = 0x0101u * KS_HS_DEFINED; break;
	case 4: lty = Ity_I32; def = 0x01010101u * KS_HS_DEFINED; break;
	case 8: lty = Ity_I64; def = 0x0101010101010101ULL * KS_HS_DEFINED; break;
	default: return NULL;
	}
	while (((uintptr_t)1 << nbits) < dt.n)
		nbits++;
	if (((uintptr_t)1 << nbits) != dt.n)
		return NULL; /* the masking below needs a power of two */
	if (!defined_chunk) {
		defined_chunk = VG_(malloc)("kst.mc.defined", (SizeT)1 << dt.shift);
		VG_(memset)(defined_chunk, KS_HS_DEFINED, (SizeT)1 << dt.shift);
	}
	/* chunk = chunks[idx mod n] (the bound is tested below), and the
	 * defined chunk for NULL, so the states load needs no branch. */
	idx = binop(m, Ity_I64, Iop_Shr64, ea, IRExpr_Const(IRConst_U8(dt.shift)));
	ch = assign(m, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64,
		binop(m, Ity_I64, Iop_Add64, IRExpr_Const(IRConst_U64((ULong)(UWord)dt.chunks)),
		      binop(m, Ity_I64, Iop_Shl64,
			    binop(m, Ity_I64, Iop_And64, idx, IRExpr_Const(IRConst_U64(dt.n - 1))),
			    IRExpr_Const(IRConst_U8(3))))));
	ch = assign(m, Ity_I64, IRExpr_ITE(binop(m, Ity_I1, Iop_CmpEQ64, ch, IRExpr_Const(IRConst_U64(0))),
					   IRExpr_Const(IRConst_U64((ULong)(UWord)defined_chunk)), ch));
	/* Offset rounded down to the access size, so that even a misaligned
	 * access (sent to the helper below) reads and writes inside the
	 * chunk. */
	sa = binop(m, Ity_I64, Iop_Add64, ch,
		   binop(m, Ity_I64, Iop_And64, ea,
			 IRExpr_Const(IRConst_U64((((ULong)1 << dt.shift) - 1) & ~(ULong)(part - 1)))));
	pat = raw = assign(m, lty, IRExpr_Load(Iend_LE, lty, sa));
	if (part < 8)
		pat = unop(m, Ity_I64, part == 4 ? Iop_32Uto64 : part == 2 ? Iop_16Uto64 : Iop_8Uto64, pat);
	/* Everything that must hold, or'ed as "bad" bits: the states all
	 * defined, the chunk in the direct table, the access aligned (so
	 * within one chunk). */
	if (!vbits) {
		bad = binop(m, Ity_I64, Iop_Xor64, pat, IRExpr_Const(IRConst_U64(def)));
	} else {
		/* Every state byte DEFINED (1) or UNDEF (2): minus 1, each is
		 * 0 or 1 (0, 3 and 4 leave other bits set); and the data
		 * defined. */
		bad = binop(m, Ity_I64, Iop_And64,
			    binop(m, Ity_I64, Iop_Sub64, pat, IRExpr_Const(IRConst_U64(def))),
			    IRExpr_Const(IRConst_U64(def * 0xFE)));
		if (!is_zero_const(vbits))
			bad = binop(m, Ity_I64, Iop_Or64, bad, vbits);
	}
	bad = binop(m, Ity_I64, Iop_Or64, bad,
		    binop(m, Ity_I64, Iop_Shr64, idx, IRExpr_Const(IRConst_U8(nbits))));
	if (part > 1)
		bad = binop(m, Ity_I64, Iop_Or64, bad,
			    binop(m, Ity_I64, Iop_And64, ea, IRExpr_Const(IRConst_U64(part - 1))));
	ok = binop(m, Ity_I1, Iop_CmpEQ64, bad, IRExpr_Const(IRConst_U64(0)));
	/* The states written back: all defined, or as they were (the
	 * defined chunk stands for untracked memory and stays all defined). */
	if (vbits)
		addStmtToIRSB(m->sb, IRStmt_Store(Iend_LE, sa,
			assign(m, lty, IRExpr_ITE(ok,
				part == 8 ? IRExpr_Const(IRConst_U64(def))
				: part == 4 ? IRExpr_Const(IRConst_U32((UInt)def))
				: part == 2 ? IRExpr_Const(IRConst_U16((UShort)def))
				: IRExpr_Const(IRConst_U8((UChar)def)), raw))));
	return ok;
}

/* An address's definedness is checked once: after the check its
 * temporary, and the base register value it is an offset from, count as
 * defined (as in Valgrind's memcheck, which reports an undefined value
 * once, where it is first used), so the next field of the same struct
 * needs no check of its own. */
static void check_addr(struct mce *m, IRAtom *addr)
{
	IRTemp t, base = IRTemp_INVALID;
	IRExpr *e;

	if (m->checked_addr && eqIRAtom(m->checked_addr, addr))
		return;
	m->checked_addr = addr;
	if (addr->tag != Iex_RdTmp) {
		complain_if_undefined(m, sh_atom(m, addr), Ity_I64, mc_err_addr, "mc_err_addr");
		return;
	}
	t = addr->Iex.RdTmp.tmp;
	e = t < m->n_in ? m->def[t] : NULL;
	/* base + constant: the address is undefined exactly when base is. */
	if (e && e->tag == Iex_Binop && (e->Iex.Binop.op == Iop_Add64 || e->Iex.Binop.op == Iop_Sub64) &&
	    e->Iex.Binop.arg1->tag == Iex_RdTmp && e->Iex.Binop.arg2->tag == Iex_Const)
		base = e->Iex.Binop.arg1->Iex.RdTmp.tmp;
	if (base != IRTemp_INVALID && base < m->n_in) {
		complain_if_undefined(m, sh_atom(m, e->Iex.Binop.arg1), Ity_I64, mc_err_addr,
				      "mc_err_addr");
		m->shadow[base] = IRTemp_INVALID;
	} else {
		complain_if_undefined(m, sh_atom(m, addr), Ity_I64, mc_err_addr, "mc_err_addr");
	}
	m->shadow[t] = IRTemp_INVALID;
}

static IRAtom *load_part(struct mce *m, IRAtom *addr, Int off, UInt part,
			 UInt total, IRAtom *guard)
{
	IRTemp t = newIRTemp(m->sb->tyenv, Ity_I64);
	IRAtom *ea = off ? binop(m, Ity_I64, Iop_Add64, addr, IRExpr_Const(IRConst_U64(off)))
			 : addr;
	IRAtom *ok = guard ? NULL : all_defined(m, ea, part, NULL);
	IRDirty *d;

	m->memo_addr = NULL;
	if (ok && off == 0 && part == total) {
		m->memo_addr = addr;
		m->memo_ok = ok;
		m->memo_part = part;
	}
	d = unsafeIRDirty_1_N(t, 2, "mc_load", VG_(fnptr_to_fnentry)(mc_load),
				       mkIRExprVec_2(ea, IRExpr_Const(IRConst_U64(MC_INFO(part, total, off, MC_IADDR_FIT(m->iaddr))))));
	if (guard)
		d->guard = guard;
	else if (ok)
		d->guard = unop(m, Ity_I1, Iop_Not1, ok);
	addStmtToIRSB(m->sb, IRStmt_Dirty(d));
	if (ok) /* a call not made leaves 0x5555...: the value is defined */
		return assign(m, Ity_I64, IRExpr_ITE(ok, IRExpr_Const(IRConst_U64(0)),
						     IRExpr_RdTmp(t)));
	return IRExpr_RdTmp(t);
}

/* Shadow of a load of type ty from addr. */
static IRAtom *sh_load(struct mce *m, IRType ty, IRAtom *addr, IRAtom *guard)
{
	IRType sty = shty(ty);
	Int size = sizeofIRType(ty);
	IRAtom *v, *lo, *hi;

	if (kst_sp_atom(&m->sp, addr))
		return zero_of(m, sty);
	check_addr(m, addr);
	switch (size) {
	case 1: case 2: case 4: case 8:
		v = load_part(m, addr, 0, size, size, guard);
		if (guard) /* a false guard leaves the result undefined: make it 0 */
			v = assign(m, Ity_I64, IRExpr_ITE(guard, v, IRExpr_Const(IRConst_U64(0))));
		switch (sty) {
		case Ity_I8: return unop(m, sty, Iop_64to8, v);
		case Ity_I16: return unop(m, sty, Iop_64to16, v);
		case Ity_I32: return unop(m, sty, Iop_64to32, v);
		default: return v;
		}
	case 16:
		lo = load_part(m, addr, 0, 8, 16, guard);
		hi = load_part(m, addr, 8, 8, 16, guard);
		if (guard) {
			lo = assign(m, Ity_I64, IRExpr_ITE(guard, lo, IRExpr_Const(IRConst_U64(0))));
			hi = assign(m, Ity_I64, IRExpr_ITE(guard, hi, IRExpr_Const(IRConst_U64(0))));
		}
		return binop(m, sty, sty == Ity_V128 ? Iop_64HLtoV128 : Iop_64HLto128, hi, lo);
	case 32: {
		IRAtom *p[4];
		Int i;
		for (i = 0; i < 4; i++) {
			p[i] = load_part(m, addr, 8 * i, 8, 32, guard);
			if (guard)
				p[i] = assign(m, Ity_I64, IRExpr_ITE(guard, p[i], IRExpr_Const(IRConst_U64(0))));
		}
		return binop(m, Ity_V256, Iop_V128HLtoV256,
			     binop(m, Ity_V128, Iop_64HLtoV128, p[3], p[2]),
			     binop(m, Ity_V128, Iop_64HLtoV128, p[1], p[0]));
	}
	default:
		return zero_of(m, sty);
	}
}

static void store_part(struct mce *m, IRAtom *addr, Int off, UInt part, UInt total,
		       IRAtom *vbits64, IRAtom *guard)
{
	IRAtom *ea = off ? binop(m, Ity_I64, Iop_Add64, addr, IRExpr_Const(IRConst_U64(off)))
			 : addr;
	IRAtom *ok;
	IRDirty *d;

	if (!guard && off == 0 && part == total && m->memo_addr &&
	    eqIRAtom(m->memo_addr, addr) && m->memo_part == part) {
		ok = m->memo_ok; /* all defined; and the data stored must be */
		if (!is_zero_const(vbits64))
			ok = binop(m, Ity_I1, Iop_And1, ok,
				   binop(m, Ity_I1, Iop_CmpEQ64, vbits64, IRExpr_Const(IRConst_U64(0))));
	} else {
		ok = guard ? NULL : all_defined(m, ea, part, vbits64);
	}
	m->memo_addr = NULL; /* this store may change states */
	d = unsafeIRDirty_0_N(3, "mc_store", VG_(fnptr_to_fnentry)(mc_store),
				       mkIRExprVec_3(ea, IRExpr_Const(IRConst_U64(MC_INFO(part, total, off, MC_IADDR_FIT(m->iaddr)))),
						     vbits64));
	if (guard)
		d->guard = guard;
	else if (ok)
		d->guard = unop(m, Ity_I1, Iop_Not1, ok);
	addStmtToIRSB(m->sb, IRStmt_Dirty(d));
}

static void sh_store(struct mce *m, IRAtom *addr, IRAtom *data, IRAtom *guard)
{
	IRType ty = type_of(m, data);
	IRType sty = shty(ty);
	Int size = sizeofIRType(ty);
	IRAtom *sd;

	if (kst_sp_atom(&m->sp, addr))
		return;
	check_addr(m, addr);
	sd = sh_atom(m, data);
	switch (size) {
	case 1: case 2: case 4: case 8: {
		IRAtom *w;
		switch (sty) {
		case Ity_I8: w = is_zero_const(sd) ? zero_of(m, Ity_I64) : unop(m, Ity_I64, Iop_8Uto64, sd); break;
		case Ity_I16: w = is_zero_const(sd) ? zero_of(m, Ity_I64) : unop(m, Ity_I64, Iop_16Uto64, sd); break;
		case Ity_I32: w = is_zero_const(sd) ? zero_of(m, Ity_I64) : unop(m, Ity_I64, Iop_32Uto64, sd); break;
		default: w = sd; break;
		}
		store_part(m, addr, 0, size, size, w, guard);
		return;
	}
	case 16: {
		IRAtom *lo, *hi;
		if (is_zero_const(sd)) {
			lo = hi = zero_of(m, Ity_I64);
		} else if (sty == Ity_V128) {
			lo = unop(m, Ity_I64, Iop_V128to64, sd);
			hi = unop(m, Ity_I64, Iop_V128HIto64, sd);
		} else {
			lo = unop(m, Ity_I64, Iop_128to64, sd);
			hi = unop(m, Ity_I64, Iop_128HIto64, sd);
		}
		store_part(m, addr, 0, 8, 16, lo, guard);
		store_part(m, addr, 8, 8, 16, hi, guard);
		return;
	}
	case 32: {
		Int i;
		for (i = 0; i < 4; i++) {
			IRAtom *w;
			if (is_zero_const(sd)) {
				w = zero_of(m, Ity_I64);
			} else {
				IRAtom *half = unop(m, Ity_V128, i < 2 ? Iop_V256toV128_0 : Iop_V256toV128_1, sd);
				w = unop(m, Ity_I64, (i & 1) ? Iop_V128HIto64 : Iop_V128to64, half);
			}
			store_part(m, addr, 8 * i, 8, 32, w, guard);
		}
		return;
	}
	default:
		return;
	}
}

static IRAtom *sh_expr(struct mce *m, IRExpr *e, IRType ety)
{
	IRType sty = shty(ety);
	switch (e->tag) {
	case Iex_Const:
	case Iex_RdTmp:
		return sh_atom(m, e);
	case Iex_Get:
		return assign(m, sty, IRExpr_Get(e->Iex.Get.offset + m->sh_off, sty));
	case Iex_GetI: {
		IRRegArray *d = e->Iex.GetI.descr;
		IRRegArray *sd = mkIRRegArray(d->base + m->sh_off, shty(d->elemTy), d->nElems);
		return assign(m, sty, IRExpr_GetI(sd, e->Iex.GetI.ix, e->Iex.GetI.bias));
	}
	case Iex_Load:
		return sh_load(m, e->Iex.Load.ty, e->Iex.Load.addr, NULL);
	case Iex_Unop:
		return sh_unop(m, e->Iex.Unop.op, e->Iex.Unop.arg, ety);
	case Iex_Binop:
		return sh_binop(m, e->Iex.Binop.op, e->Iex.Binop.arg1, e->Iex.Binop.arg2, ety);
	case Iex_Triop: {
		IRTriop *t = e->Iex.Triop.details;
		IRExpr *args[3] = { t->arg1, t->arg2, t->arg3 };
		return pessimistic(m, args, 3, 0, ety);
	}
	case Iex_Qop: {
		IRQop *q = e->Iex.Qop.details;
		IRExpr *args[4] = { q->arg1, q->arg2, q->arg3, q->arg4 };
		return pessimistic(m, args, 4, 0, ety);
	}
	case Iex_ITE: {
		IRAtom *sc = sh_atom(m, e->Iex.ITE.cond);
		IRAtom *st = sh_atom(m, e->Iex.ITE.iftrue);
		IRAtom *sf = sh_atom(m, e->Iex.ITE.iffalse);
		IRAtom *sel = (is_zero_const(st) && is_zero_const(sf))
				      ? zero_of(m, sty)
				      : assign(m, sty, IRExpr_ITE(e->Iex.ITE.cond, st, sf));
		return uifu(m, sty, sel, from_bit(m, sty, sc));
	}
	case Iex_CCall: {
		Int n = 0;
		while (e->Iex.CCall.args[n])
			n++;
		return pessimistic(m, e->Iex.CCall.args, n, e->Iex.CCall.cee->mcx_mask, ety);
	}
	default:
		return zero_of(m, sty);
	}
}

static void put_zero_range(struct mce *m, Int off, Int size)
{
	while (size >= 8) {
		addStmtToIRSB(m->sb, IRStmt_Put(off + m->sh_off, IRExpr_Const(IRConst_U64(0))));
		off += 8;
		size -= 8;
	}
	if (size >= 4) {
		addStmtToIRSB(m->sb, IRStmt_Put(off + m->sh_off, IRExpr_Const(IRConst_U32(0))));
		off += 4;
		size -= 4;
	}
	if (size >= 2) {
		addStmtToIRSB(m->sb, IRStmt_Put(off + m->sh_off, IRExpr_Const(IRConst_U16(0))));
		off += 2;
		size -= 2;
	}
	if (size >= 1)
		addStmtToIRSB(m->sb, IRStmt_Put(off + m->sh_off, IRExpr_Const(IRConst_U8(0))));
}

static void set_shadow(struct mce *m, IRTemp t, IRAtom *sh)
{
	IRType sty = shty(typeOfIRTemp(m->sb->tyenv, t));
	IRTemp st = newIRTemp(m->sb->tyenv, sty);
	addStmtToIRSB(m->sb, IRStmt_WrTmp(st, sh));
	m->shadow[t] = st;
}

static void instrument_dirty(struct mce *m, IRDirty *d)
{
	Int i, r;
	/* Results of helpers (cpuid, rdtsc, x87 and string-compare helpers)
	 * are taken as defined. */
	for (i = 0; i < d->nFxState; i++) {
		if (d->fxState[i].fx == Ifx_Read)
			continue;
		for (r = 0; r <= d->fxState[i].nRepeats; r++)
			put_zero_range(m, d->fxState[i].offset + r * d->fxState[i].repeatLen,
				       d->fxState[i].size);
	}
}

static void instrument_dirty_after(struct mce *m, IRDirty *d)
{
	if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify) {
		IRDirty *h = unsafeIRDirty_0_N(2, "mc_make_defined",
					       VG_(fnptr_to_fnentry)(mc_make_defined),
					       mkIRExprVec_2(d->mAddr,
							     IRExpr_Const(IRConst_U64(d->mSize))));
		h->guard = d->guard;
		addStmtToIRSB(m->sb, IRStmt_Dirty(h));
	}
}

IRSB *kst_mc_instrument(IRSB *in, const VexGuestLayout *layout,
			IRType gWordTy, IRType hWordTy)
{
	struct mce m;
	Int i;

	if (gWordTy != hWordTy || gWordTy != Ity_I64)
		VG_(tool_panic)("kscope: only 64-bit guests on 64-bit hosts are supported");
	m.sb = deepCopyIRSBExceptStmts(in);
	m.n_in = in->tyenv->types_used;
	m.shadow = VG_(malloc)("kst.mce", (m.n_in ? m.n_in : 1) * sizeof(IRTemp));
	m.def = VG_(calloc)("kst.mce", m.n_in ? m.n_in : 1, sizeof(IRExpr *));
	for (i = 0; i < m.n_in; i++)
		m.shadow[i] = IRTemp_INVALID;
	m.sh_off = layout->total_sizeB;
	m.memo_addr = NULL;
	m.checked_addr = NULL;
	m.iaddr = 0;
	kst_sp_begin(&m.sp, in, layout);

	for (i = 0; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];
		switch (st->tag) {
		case Ist_IMark:
			m.iaddr = st->Ist.IMark.addr + st->Ist.IMark.delta;
			m.memo_addr = NULL;
			m.checked_addr = NULL;
			break;
		case Ist_WrTmp: {
			IRTemp t = st->Ist.WrTmp.tmp;
			IRType ty = typeOfIRTemp(in->tyenv, t);
			m.def[t] = st->Ist.WrTmp.data;
			addStmtToIRSB(m.sb, st);
			kst_sp_note(&m.sp, st);
			set_shadow(&m, t, sh_expr(&m, st->Ist.WrTmp.data, ty));
			continue;
		}
		case Ist_Put: {
			IRAtom *s = sh_atom(&m, st->Ist.Put.data);
			addStmtToIRSB(m.sb, IRStmt_Put(st->Ist.Put.offset + m.sh_off, s));
			break;
		}
		case Ist_PutI: {
			IRPutI *p = st->Ist.PutI.details;
			IRRegArray *d = p->descr;
			IRRegArray *sd = mkIRRegArray(d->base + m.sh_off, shty(d->elemTy), d->nElems);
			addStmtToIRSB(m.sb, IRStmt_PutI(mkIRPutI(sd, p->ix, p->bias,
								  sh_atom(&m, p->data))));
			break;
		}
		case Ist_Store:
			sh_store(&m, st->Ist.Store.addr, st->Ist.Store.data, NULL);
			break;
		case Ist_StoreG: {
			IRStoreG *sg = st->Ist.StoreG.details;
			sh_store(&m, sg->addr, sg->data, sg->guard);
			break;
		}
		case Ist_LoadG: {
			IRLoadG *lg = st->Ist.LoadG.details;
			IRType lty = Ity_INVALID, rty = Ity_INVALID;
			IRAtom *raw, *conv, *alt;
			typeOfIRLoadGOp(lg->cvt, &rty, &lty);
			addStmtToIRSB(m.sb, st);
			raw = sh_load(&m, lty, lg->addr, lg->guard);
			switch (lg->cvt) {
			case ILGop_IdentV128: case ILGop_Ident64: case ILGop_Ident32:
				conv = raw;
				break;
			case ILGop_16Uto32: conv = unop(&m, Ity_I32, Iop_16Uto32, raw); break;
			case ILGop_16Sto32: conv = unop(&m, Ity_I32, Iop_16Sto32, raw); break;
			case ILGop_8Uto32: conv = unop(&m, Ity_I32, Iop_8Uto32, raw); break;
			case ILGop_8Sto32: conv = unop(&m, Ity_I32, Iop_8Sto32, raw); break;
			default: conv = pcast(&m, shty(lty), raw, shty(rty)); break;
			}
			alt = sh_atom(&m, lg->alt);
			set_shadow(&m, lg->dst,
				   assign(&m, shty(rty), IRExpr_ITE(lg->guard, conv, alt)));
			continue;
		}
		case Ist_CAS: {
			IRCAS *c = st->Ist.CAS.details;
			IRType ty = type_of(&m, c->dataLo);
			Int sz = sizeofIRType(ty);
			IRAtom *oldlo = sh_load(&m, ty, c->addr, NULL);
			IRAtom *oldhi = c->oldHi != IRTemp_INVALID
					? sh_load(&m, ty, binop(&m, Ity_I64, Iop_Add64, c->addr,
								 IRExpr_Const(IRConst_U64(sz))), NULL)
					: NULL;
			IRAtom *ok;
			IROp eq = ty == Ity_I8 ? Iop_CasCmpEQ8 : ty == Ity_I16 ? Iop_CasCmpEQ16
				: ty == Ity_I32 ? Iop_CasCmpEQ32 : Iop_CasCmpEQ64;
			addStmtToIRSB(m.sb, st);
			set_shadow(&m, c->oldLo, oldlo);
			if (oldhi)
				set_shadow(&m, c->oldHi, oldhi);
			ok = binop(&m, Ity_I1, eq, IRExpr_RdTmp(c->oldLo), c->expdLo);
			if (c->oldHi != IRTemp_INVALID)
				ok = binop(&m, Ity_I1, Iop_And1, ok,
					   binop(&m, Ity_I1, eq, IRExpr_RdTmp(c->oldHi), c->expdHi));
			sh_store(&m, c->addr, c->dataLo, ok);
			if (c->dataHi)
				sh_store(&m, binop(&m, Ity_I64, Iop_Add64, c->addr,
						   IRExpr_Const(IRConst_U64(sz))),
					 c->dataHi, ok);
			continue;
		}
		case Ist_LLSC: {
			if (st->Ist.LLSC.storedata == NULL) {
				IRTemp t = st->Ist.LLSC.result;
				IRAtom *s = sh_load(&m, typeOfIRTemp(in->tyenv, t), st->Ist.LLSC.addr, NULL);
				addStmtToIRSB(m.sb, st);
				set_shadow(&m, t, s);
			} else {
				sh_store(&m, st->Ist.LLSC.addr, st->Ist.LLSC.storedata, NULL);
				addStmtToIRSB(m.sb, st);
			}
			continue;
		}
		case Ist_Dirty:
			m.memo_addr = NULL;
			addStmtToIRSB(m.sb, st);
			instrument_dirty(&m, st->Ist.Dirty.details);
			instrument_dirty_after(&m, st->Ist.Dirty.details);
			continue;
		case Ist_Exit:
			complain_if_undefined(&m, sh_atom(&m, st->Ist.Exit.guard), Ity_I1,
					      mc_err_cond, "mc_err_cond");
			break;
		default:
			break;
		}
		addStmtToIRSB(m.sb, st);
	}
	kst_sp_end(&m.sp);
	VG_(free)(m.shadow);
	VG_(free)(m.def);
	return m.sb;
}

/* ------------------------------------------------------------------ */
/* Set-up and results                                                  */
/* ------------------------------------------------------------------ */

void kst_mc_init(void)
{
	if (ks_hs_init(&kst_hs, &kst_core_alloc) != 0)
		VG_(tool_panic)("kscope: cannot allocate the heap shadow");
	errors = VG_(HT_construct)("kst.errors");
	VG_(track_pre_reg_read)(mc_pre_reg_read);
	VG_(track_post_reg_write)(mc_post_reg_write);
	VG_(track_post_reg_write_clientcall_return)(mc_post_reg_write_clientcall);
	VG_(track_pre_mem_read)(mc_pre_mem_read);
	VG_(track_pre_mem_read_asciiz)(mc_pre_mem_read_asciiz);
	VG_(track_pre_mem_write)(mc_pre_mem_write);
	VG_(track_post_mem_write)(mc_post_mem_write);
}

static const HChar *kind_name(enum kst_err_kind k)
{
	switch (k) {
	case E_INVALID_READ: return "invalid-read";
	case E_INVALID_WRITE: return "invalid-write";
	case E_UAF_READ: case E_UAF_WRITE: return "use-after-free";
	case E_UNINIT_COND: return "uninit-cond";
	case E_UNINIT_ADDR: return "uninit-addr";
	case E_UNINIT_SYSCALL: return "uninit-syscall";
	case E_DOUBLE_FREE: return "double-free";
	case E_INVALID_FREE: return "invalid-free";
	case E_SYSCALL_NOACCESS: return "invalid-read";
	}
	return "unknown";
}

static Int err_cmp(const void *a, const void *b)
{
	const struct kst_err *x = *(const struct kst_err *const *)a;
	const struct kst_err *y = *(const struct kst_err *const *)b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Forgets the errors recorded so far (after they were written, or in a
 * forked child, where they are the parent's). */
void kst_mc_reset_errors(void)
{
	VG_(HT_destruct)(errors, VG_(free));
	errors = VG_(HT_construct)("kst.errors");
	n_errors = 0;
	n_error_occurrences = 0;
	n_suppressed = 0;
}

void kst_mc_write_errors(void)
{
	struct kst_err **all, *e;
	UInt i, n = 0;

	all = VG_(malloc)("kst.errs", (n_errors ? n_errors : 1) * sizeof(*all));
	VG_(HT_ResetIter)(errors);
	while ((e = VG_(HT_Next)(errors)))
		all[n++] = e;
	VG_(ssort)(all, n, sizeof(*all), err_cmp);
	for (i = 0; i < n; i++) {
		UInt sid, aid = 0, fid = 0;
		e = all[i];
		sid = kst_out_stack(e->where);
		if (e->have_block) {
			aid = kst_out_stack(e->b_alloc);
			if (e->b_free)
				fid = kst_out_stack(e->b_free);
		}
		kst_out_printf("{\"rec\":\"error\",\"kind\":\"%s\",\"tid\":%u,\"stack\":%u,"
			       "\"count\":%llu",
			       kind_name(e->kind), e->tid, sid, e->count);
		if (e->kind == E_UAF_READ || e->kind == E_UAF_WRITE)
			kst_out_printf(",\"access\":\"%s\"", e->kind == E_UAF_READ ? "read" : "write");
		if (e->size)
			kst_out_printf(",\"size\":%lu", e->size);
		if (e->addr)
			kst_out_printf(",\"addr\":\"%#lx\"", e->addr);
		if (e->have_block) {
			kst_out_printf(",\"block\":{\"addr\":\"%#lx\",\"size\":%lu,\"offset\":%ld,"
				       "\"state\":\"%s\",\"alloc_stack\":%u",
				       e->b_start, e->b_size, (long)(e->addr - e->b_start),
				       e->b_freed ? "freed" : "alloc", aid);
			if (fid)
				kst_out_printf(",\"free_stack\":%u", fid);
			kst_out_printf("}");
		}
		if (e->syscall) {
			kst_out_printf(",\"syscall\":");
			kst_out_str(e->syscall);
			kst_out_printf(",\"param\":");
			kst_out_str(e->param);
		}
		kst_out_printf("}\n");
	}
	VG_(free)(all);
	kst_out_printf("{\"rec\":\"suppressed\",\"count\":%llu,\"reason\":"
		       "\"uses of undefined bytes inside the C library's assembly string routines\"}\n",
		       n_suppressed);
}

void kst_mc_fini(void)
{
	kst_mc_write_errors();
	if (kst_clo.leak_check)
		kst_heap_leak_check();
}
