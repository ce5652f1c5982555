/*
 * The heap of the program under test, as kscope's Valgrind tool sees it:
 * malloc, calloc, realloc, memalign and C++ new/delete are replaced
 * (through Valgrind's malloc replacement and the vgpreload library), so
 * every block comes from Valgrind's client arena with a redzone on each
 * side and the program's own allocator never touches client memory.
 *
 * Every analysis needs the blocks: memcheck for its byte states,
 * quarantine and leak check, contention and falseshare to name a data
 * object by its allocation stack.  Live and quarantined blocks sit in two
 * ordered sets keyed by address, so "which block holds this address" is
 * a tree lookup.
 */
#include "pub_tool_basics.h"
#include "pub_tool_aspacemgr.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcsetjmp.h"
#include "pub_tool_machine.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_oset.h"
#include "pub_tool_replacemalloc.h"
#include "pub_tool_signals.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_vki.h"

#include "kst_int.h"

static OSet *live;      /* struct kst_block, by start address */
static OSet *freed;     /* quarantined blocks (memcheck) */
static struct kst_block *fq_head, *fq_tail;
static Long fq_volume;

ULong kst_heap_allocs, kst_heap_frees, kst_heap_bytes;
static ULong in_use_bytes, in_use_blocks;

/* An address is "in" a block when start <= a < start + size; a block of
 * size 0 holds its start address so that it can be found and freed. */
static Word block_cmp(const void *key, const void *elem)
{
	Addr a = *(const Addr *)key;
	const struct kst_block *b = elem;
	SizeT sz = b->size ? b->size : 1;
	if (a < b->start)
		return -1;
	if (a >= b->start + sz)
		return 1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Allocation                                                          */
/* ------------------------------------------------------------------ */

static void *new_block(ThreadId tid, SizeT size, SizeT align, Bool zero)
{
	struct kst_block *b;
	void *p;

	if ((SSizeT)size < 0)
		return NULL; /* a negative size passed as size_t: fails like malloc */
	p = VG_(cli_malloc)(align, size);
	if (!p)
		return NULL;
	if (zero)
		VG_(memset)(p, 0, size);
	b = VG_(OSetGen_AllocNode)(live, sizeof(*b));
	b->start = (Addr)p;
	b->size = size;
	b->alloc_ec = VG_(record_ExeContext)(tid, 0);
	b->free_ec = NULL;
	b->fq_next = NULL;
	VG_(OSetGen_Insert)(live, b);
	kst_heap_allocs++;
	kst_heap_bytes += size;
	in_use_bytes += size;
	in_use_blocks++;
	if (kst_hs) {
		ks_hs_set(kst_hs, (uintptr_t)p - kst_redzone, kst_redzone, KS_HS_NOACCESS);
		ks_hs_set(kst_hs, (uintptr_t)p, size, zero ? KS_HS_DEFINED : KS_HS_UNDEF);
		ks_hs_set(kst_hs, (uintptr_t)p + size, kst_redzone, KS_HS_NOACCESS);
	}
	return p;
}

/* Gives a quarantined block back to the arena; its bytes stay
 * unaddressable until a new block covers them. */
static void release_block(struct kst_block *b)
{
	Addr key = b->start;
	VG_(OSetGen_Remove)(freed, &key);
	if (kst_hs)
		ks_hs_set(kst_hs, b->start - kst_redzone, b->size + 2 * kst_redzone,
			  KS_HS_NOACCESS);
	VG_(cli_free)((void *)b->start);
	VG_(OSetGen_FreeNode)(freed, b);
}

static void free_block(ThreadId tid, void *p)
{
	Addr key = (Addr)p;
	struct kst_block *b;

	if (!p)
		return;
	b = VG_(OSetGen_Lookup)(live, &key);
	if (!b || b->start != key) {
		Bool was_freed = False;
		struct kst_block *fb = kst_heap_describe(key, &was_freed);
		if (kst_clo.analysis == KST_MEMCHECK)
			kst_mc_error_free(tid, key, fb && was_freed && fb->start == key, fb);
		return; /* never hand a bad pointer to the arena */
	}
	VG_(OSetGen_Remove)(live, &key);
	kst_heap_frees++;
	in_use_bytes -= b->size;
	in_use_blocks--;
	if (kst_clo.analysis != KST_MEMCHECK) {
		VG_(cli_free)(p);
		VG_(OSetGen_FreeNode)(live, b);
		return;
	}
	b->free_ec = VG_(record_ExeContext)(tid, 0);
	ks_hs_set(kst_hs, b->start, b->size, KS_HS_FREED);
	VG_(OSetGen_Insert)(freed, b);
	if (fq_tail)
		fq_tail->fq_next = b;
	else
		fq_head = b;
	fq_tail = b;
	fq_volume += b->size;
	while (fq_head && fq_volume > kst_clo.freelist_vol) {
		struct kst_block *old = fq_head;
		fq_head = old->fq_next;
		if (!fq_head)
			fq_tail = NULL;
		fq_volume -= old->size;
		release_block(old);
	}
}

static void *kst_malloc(ThreadId tid, SizeT n)
{
	return new_block(tid, n, VG_(clo_alignment), False);
}

static void *kst_memalign(ThreadId tid, SizeT align, SizeT n)
{
	return new_block(tid, n, align, False);
}

static void *kst_new_aligned(ThreadId tid, SizeT n, SizeT align)
{
	return new_block(tid, n, align, False);
}

static void *kst_calloc(ThreadId tid, SizeT nmemb, SizeT size)
{
	ULong total = (ULong)nmemb * size;
	if (size && total / size != nmemb)
		return NULL; /* overflow */
	return new_block(tid, (SizeT)total, VG_(clo_alignment), True);
}

static void kst_free(ThreadId tid, void *p)
{
	free_block(tid, p);
}

static void kst_free_aligned(ThreadId tid, void *p, SizeT align)
{
	free_block(tid, p);
}

static void *kst_realloc(ThreadId tid, void *p, SizeT n)
{
	Addr key = (Addr)p;
	struct kst_block *b;
	void *q;

	if (!p)
		return kst_malloc(tid, n);
	b = VG_(OSetGen_Lookup)(live, &key);
	if (!b || b->start != key) {
		free_block(tid, p); /* reports the bad pointer */
		return NULL;
	}
	if (n == 0) {
		free_block(tid, p);
		return NULL;
	}
	q = new_block(tid, n, VG_(clo_alignment), False);
	if (!q)
		return NULL; /* the old block stays valid, as with realloc */
	VG_(memcpy)(q, p, n < b->size ? n : b->size);
	if (kst_hs)
		ks_hs_copy(kst_hs, (uintptr_t)q, (uintptr_t)p, n < b->size ? n : b->size);
	free_block(tid, p);
	return q;
}

static SizeT kst_usable_size(ThreadId tid, void *p)
{
	Addr key = (Addr)p;
	struct kst_block *b = VG_(OSetGen_Lookup)(live, &key);
	return b && b->start == key ? b->size : 0;
}

void kst_heap_init(void)
{
	VG_(needs_malloc_replacement)(kst_malloc, kst_malloc, kst_new_aligned,
				      kst_malloc, kst_new_aligned, kst_memalign,
				      kst_calloc, kst_free, kst_free,
				      kst_free_aligned, kst_free, kst_free_aligned,
				      kst_realloc, kst_usable_size, 16);
	live = VG_(OSetGen_Create)(offsetof(struct kst_block, start), block_cmp,
				   VG_(malloc), "kst.live", VG_(free));
	freed = VG_(OSetGen_Create)(offsetof(struct kst_block, start), block_cmp,
				    VG_(malloc), "kst.freed", VG_(free));
}

/* ------------------------------------------------------------------ */
/* Lookups                                                             */
/* ------------------------------------------------------------------ */

struct kst_block *kst_heap_find_live(Addr a)
{
	return VG_(OSetGen_Lookup)(live, &a);
}

static struct kst_block *lookup_any(Addr a, Bool *is_freed)
{
	struct kst_block *b = VG_(OSetGen_Lookup)(live, &a);
	if (b) {
		*is_freed = False;
		return b;
	}
	b = VG_(OSetGen_Lookup)(freed, &a);
	if (b)
		*is_freed = True;
	return b;
}

struct kst_block *kst_heap_describe(Addr a, Bool *is_freed)
{
	struct kst_block *b = lookup_any(a, is_freed);
	SizeT d;

	if (b)
		return b;
	/* In a redzone: the nearest block within one redzone either side. */
	for (d = 1; d <= kst_redzone; d++) {
		b = lookup_any(a + d, is_freed);
		if (b && b->start > a)
			return b;
		if (a >= d) {
			b = lookup_any(a - d, is_freed);
			if (b)
				return b;
		}
	}
	return NULL;
}

void kst_heap_write_summary(void)
{
	kst_out_printf("\"heap\":{\"allocs\":%llu,\"frees\":%llu,\"bytes_allocated\":%llu,"
		       "\"in_use_bytes\":%llu,\"in_use_blocks\":%llu}",
		       kst_heap_allocs, kst_heap_frees, kst_heap_bytes,
		       in_use_bytes, in_use_blocks);
}

/* ------------------------------------------------------------------ */
/* Leak check                                                          */
/* ------------------------------------------------------------------ */

/* Mark and sweep over the live blocks: the roots are the client's
 * readable memory outside the heap (data, bss, mappings), each thread's
 * stack from its stack pointer up, and the threads' registers.  A block
 * no pointer reaches is definitely lost; one reached only through
 * pointers into its interior is possibly lost. */

enum { LC_UNREACHED = 0, LC_INTERIOR = 1, LC_START = 2 };

static struct kst_block **lc_blocks;
static UChar *lc_state;
static Int lc_n;
static Addr lc_min, lc_max;
static Int *lc_stack;
static Int lc_sp;

static Int lc_find(Addr a)
{
	Int lo = 0, hi = lc_n - 1;
	while (lo <= hi) {
		Int mid = lo + (hi - lo) / 2;
		struct kst_block *b = lc_blocks[mid];
		SizeT sz = b->size ? b->size : 1;
		if (a < b->start)
			hi = mid - 1;
		else if (a >= b->start + sz)
			lo = mid + 1;
		else
			return mid;
	}
	return -1;
}

static void lc_point(Addr w)
{
	Int i;
	UChar st;
	if (w < lc_min || w >= lc_max)
		return;
	i = lc_find(w);
	if (i < 0)
		return;
	st = w == lc_blocks[i]->start ? LC_START : LC_INTERIOR;
	if (lc_state[i] >= st)
		return;
	if (lc_state[i] == LC_UNREACHED)
		lc_stack[lc_sp++] = i;
	lc_state[i] = st;
}

static VG_MINIMAL_JMP_BUF(lc_jmp);

static void lc_fault(Int sig, Addr addr)
{
	if (sig == VKI_SIGSEGV || sig == VKI_SIGBUS)
		VG_MINIMAL_LONGJMP(lc_jmp);
}

/* Scans [lo, hi) for aligned words that point into blocks; a page that
 * faults is skipped. */
static void lc_scan(Addr lo, Addr hi)
{
	volatile Addr a = VG_ROUNDUP(lo, sizeof(UWord));
	while (a + sizeof(UWord) <= hi) {
		Addr page_end = VG_PGROUNDDN(a) + VKI_PAGE_SIZE;
		if (page_end > hi)
			page_end = hi;
		if (VG_MINIMAL_SETJMP(lc_jmp) != 0) {
			a = page_end; /* faulted: skip the rest of the page */
			continue;
		}
		for (; a + sizeof(UWord) <= page_end; a += sizeof(UWord))
			lc_point(*(const UWord *)a);
		a = page_end;
	}
}

static void lc_reg(ThreadId tid, const HChar *name, UWord val)
{
	lc_point(val);
}

struct leak_node {
	struct leak_node *next;
	UWord key;          /* ECU of the allocation stack | kind */
	ExeContext *ec;
	ULong bytes, blocks;
};

void kst_heap_leak_check(void)
{
	Addr *stk_lo, *stk_hi;
	Int nstk = 0, i, nseg;
	Addr *starts;
	ThreadId tid;
	Addr smin, smax;
	struct kst_block *b;
	fault_catcher_t prev;
	VgHashTable *leaks;
	struct leak_node *ln;

	lc_n = (Int)VG_(OSetGen_Size)(live);
	if (lc_n == 0)
		return;
	lc_blocks = VG_(malloc)("kst.lc", lc_n * sizeof(*lc_blocks));
	lc_state = VG_(calloc)("kst.lc", lc_n, 1);
	lc_stack = VG_(malloc)("kst.lc", lc_n * sizeof(*lc_stack));
	lc_sp = 0;
	i = 0;
	VG_(OSetGen_ResetIter)(live);
	while ((b = VG_(OSetGen_Next)(live)))
		lc_blocks[i++] = b;
	lc_min = lc_blocks[0]->start;
	lc_max = lc_blocks[lc_n - 1]->start + lc_blocks[lc_n - 1]->size + 1;

	stk_lo = VG_(malloc)("kst.lc", VG_N_THREADS * sizeof(Addr));
	stk_hi = VG_(malloc)("kst.lc", VG_N_THREADS * sizeof(Addr));
	prev = VG_(set_fault_catcher)(lc_fault);

	/* Thread stacks, from the stack pointer (less the amd64 red zone) up. */
	VG_(thread_stack_reset_iter)(&tid);
	while (VG_(thread_stack_next)(&tid, &smin, &smax) && nstk < (Int)VG_N_THREADS) {
		Addr sp = VG_(get_SP)(tid);
		Addr lo = sp > 128 ? sp - 128 : 0;
		if (lo < smin)
			lo = smin;
		stk_lo[nstk] = smin;
		stk_hi[nstk] = smax;
		nstk++;
		lc_scan(lo, smax + 1);
	}
	VG_(apply_to_GP_regs)(lc_reg);

	/* Every other readable client mapping except the heap arena. */
	nseg = 256;
	for (;;) {
		Int got;
		starts = VG_(malloc)("kst.lc", nseg * sizeof(Addr));
		got = VG_(am_get_segment_starts)(SkFileC | SkAnonC | SkShmC, starts, nseg);
		if (got >= 0) {
			nseg = got;
			break;
		}
		VG_(free)(starts);
		nseg = -got + 16;
	}
	for (i = 0; i < nseg; i++) {
		const NSegment *seg = VG_(am_find_nsegment)(starts[i]);
		Int k;
		Bool is_stack = False;
		if (!seg || !seg->hasR || seg->isCH)
			continue;
		if (seg->kind == SkFileC && !seg->hasW)
			continue; /* read-only file mappings (code, rodata) */
		for (k = 0; k < nstk; k++)
			if (seg->start <= stk_hi[k] && stk_lo[k] <= seg->end)
				is_stack = True;
		if (is_stack)
			continue; /* scanned above, from the stack pointer */
		lc_scan(seg->start, seg->end + 1);
	}
	VG_(free)(starts);
	VG_(free)(stk_lo);
	VG_(free)(stk_hi);

	/* Everything reached is scanned in turn. */
	while (lc_sp > 0) {
		b = lc_blocks[lc_stack[--lc_sp]];
		lc_scan(b->start, b->start + b->size);
	}
	VG_(set_fault_catcher)(prev);

	leaks = VG_(HT_construct)("kst.leaks");
	for (i = 0; i < lc_n; i++) {
		UWord kind;
		if (lc_state[i] == LC_START)
			continue;
		b = lc_blocks[i];
		kind = lc_state[i] == LC_UNREACHED ? 0 : 1;
		ln = VG_(HT_lookup)(leaks, VG_(get_ECU_from_ExeContext)(b->alloc_ec) | kind);
		if (!ln) {
			ln = VG_(calloc)("kst.leak", 1, sizeof(*ln));
			ln->key = VG_(get_ECU_from_ExeContext)(b->alloc_ec) | kind;
			ln->ec = b->alloc_ec;
			VG_(HT_add_node)(leaks, ln);
		}
		ln->bytes += b->size;
		ln->blocks++;
	}
	VG_(HT_ResetIter)(leaks);
	while ((ln = VG_(HT_Next)(leaks))) {
		UInt sid = kst_out_stack(ln->ec);
		kst_out_printf("{\"rec\":\"leak\",\"kind\":\"%s\",\"bytes\":%llu,"
			       "\"blocks\":%llu,\"stack\":%u}\n",
			       (ln->key & 1) ? "leak-possible" : "leak-definite",
			       ln->bytes, ln->blocks, sid);
	}
	VG_(free)(lc_blocks);
	VG_(free)(lc_state);
	VG_(free)(lc_stack);
}
