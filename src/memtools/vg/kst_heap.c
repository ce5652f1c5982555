/*
 * The heap of the program under test, as kscope's Valgrind tool sees it:
 * malloc, calloc, realloc, memalign and C++ new/delete are replaced
 * (through Valgrind's malloc replacement and the vgpreload library), so
 * every block comes from Valgrind's client arena and carries the stack
 * that allocated it.
 *
 * contention and falseshare need the blocks to name a data object by its
 * allocation stack.  Live blocks sit in an ordered set keyed by address,
 * so "which block holds this address" is a tree lookup; a freed block is
 * given back to the arena at once.
 */
#include "pub_tool_basics.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_oset.h"
#include "pub_tool_replacemalloc.h"

#include "kst_int.h"

static OSet *live;      /* struct kst_block, by start address */

static ULong heap_allocs, heap_frees, heap_bytes, in_use_bytes, in_use_blocks;

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

/* align: what the program asked for (memalign, aligned new...), or 0
 * for malloc's own alignment. */
static void *new_block(ThreadId tid, SizeT size, SizeT align, Bool zero)
{
	SizeT asked = align;
	struct kst_block *b;
	void *p;

	if ((SSizeT)size < 0)
		return NULL; /* a negative size passed as size_t: fails like malloc */
	if (!align)
		align = VG_(clo_alignment);
	p = VG_(cli_malloc)(align, size);
	if (!p)
		return NULL;
	if (zero)
		VG_(memset)(p, 0, size);
	b = VG_(OSetGen_AllocNode)(live, sizeof(*b));
	b->start = (Addr)p;
	b->size = size;
	b->align = asked > VG_(clo_alignment) && !(asked & (asked - 1)) ? asked : 0;
	b->alloc_ec = VG_(record_ExeContext)(tid, 0);
	VG_(OSetGen_Insert)(live, b);
	heap_allocs++;
	heap_bytes += size;
	in_use_bytes += size;
	in_use_blocks++;
	return p;
}

/* The blocks freed last, newest at grave_next - 1: the reports name the
 * lines of a block the program freed before it ended by them
 * (kst_heap_find_freed). */
#define GRAVE_N 256u
static struct kst_block grave[GRAVE_N];
static UInt grave_next;

struct kst_block *kst_heap_find_freed(Addr a)
{
	UInt i;

	for (i = 0; i < GRAVE_N && i < grave_next; i++) {
		struct kst_block *g = &grave[(grave_next - 1 - i) % GRAVE_N];
		if (a >= g->start && a - g->start < (g->size ? g->size : 1))
			return g;
	}
	return NULL;
}

static void free_block(ThreadId tid, void *p)
{
	Addr key = (Addr)p;
	struct kst_block *b;

	if (!p)
		return;
	b = VG_(OSetGen_Lookup)(live, &key);
	if (!b || b->start != key)
		return; /* never hand a bad pointer to the arena */
	VG_(OSetGen_Remove)(live, &key);
	grave[grave_next++ % GRAVE_N] = *b;
	heap_frees++;
	in_use_bytes -= b->size;
	in_use_blocks--;
	VG_(cli_free)(p);
	VG_(OSetGen_FreeNode)(live, b);
}

static void *kst_malloc(ThreadId tid, SizeT n)
{
	return new_block(tid, n, 0, False);
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
	return new_block(tid, (SizeT)total, 0, True);
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
		return NULL; /* a bad pointer: left alone, as free_block does */
	}
	if (n == 0) {
		free_block(tid, p);
		return NULL;
	}
	q = new_block(tid, n, 0, False);
	if (!q)
		return NULL; /* the old block stays valid, as with realloc */
	VG_(memcpy)(q, p, n < b->size ? n : b->size);
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
				      kst_realloc, kst_usable_size,
				      /* Valgrind's default client redzone: it
				       * spaces the blocks apart as the program
				       * sees them under any tool. */
				      16);
	live = VG_(OSetGen_Create)(offsetof(struct kst_block, start), block_cmp,
				   VG_(malloc), "kst.live", VG_(free));
}

/* ------------------------------------------------------------------ */
/* Lookups                                                             */
/* ------------------------------------------------------------------ */

struct kst_block *kst_heap_find_live(Addr a)
{
	return VG_(OSetGen_Lookup)(live, &a);
}

void kst_heap_write_summary(void)
{
	kst_out_printf("\"heap\":{\"allocs\":%llu,\"frees\":%llu,\"bytes_allocated\":%llu,"
		       "\"in_use_bytes\":%llu,\"in_use_blocks\":%llu}",
		       heap_allocs, heap_frees, heap_bytes,
		       in_use_bytes, in_use_blocks);
}
