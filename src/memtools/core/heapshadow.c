/*
 * The heap shadow of kscope memcheck: one state byte (enum ks_hs_state)
 * per byte of client memory, in the same two-level table as the line
 * shadow with 64 KiB chunks.  A chunk exists only once something in it
 * was marked with a state other than KS_HS_UNTRACKED, so the loads and
 * stores of the program's non-heap memory cost one table lookup per
 * chunk touched and nothing else.  Freestanding: no library calls.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mtcore_int.h"

#define KS_HS_SHIFT 16
#define KS_HS_CHUNK ((uintptr_t)1 << KS_HS_SHIFT)
#define KS_HS_MASK (KS_HS_CHUNK - 1)
#define KS_HS_MAX_ACCESS 64u /* bytes of one load or store: one undef bit each */

struct ks_hs {
	struct ks_mt_alloc alloc;
	size_t bytes;            /* shadow bytes outstanding */
	struct ks_mt_tab tab;    /* chunks of KS_HS_CHUNK state bytes */
};

int ks_hs_init(struct ks_hs **out, const struct ks_mt_alloc *alloc)
{
	struct ks_hs *h;
	int rc;

	if (!out)
		return -22;
	*out = NULL;
	if (!alloc || !alloc->zalloc || !alloc->free)
		return -22;
	h = alloc->zalloc(alloc->ctx, sizeof(*h));
	if (!h)
		return -12;
	h->alloc.zalloc = alloc->zalloc;
	h->alloc.free = alloc->free;
	h->alloc.ctx = alloc->ctx;
	h->bytes = sizeof(*h);
	rc = ks_mt_tab_init(&h->tab, &h->alloc, &h->bytes, KS_HS_SHIFT, KS_HS_CHUNK);
	if (rc != 0) {
		ks_hs_fini(h);
		return rc;
	}
	*out = h;
	return 0;
}

void ks_hs_fini(struct ks_hs *h)
{
	if (!h)
		return;
	ks_mt_tab_fini(&h->tab, NULL, NULL);
	h->alloc.free(h->alloc.ctx, h, sizeof(*h));
}

size_t ks_hs_shadow_bytes(const struct ks_hs *h)
{
	return h->bytes;
}

/* Bytes from a to the top of the address space (SIZE_MAX for a == 0,
 * one short of 2^64): ranges are clipped there instead of wrapping. */
static size_t room(uintptr_t a)
{
	return a == 0 ? SIZE_MAX : (size_t)(0 - a);
}

static size_t min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

void ks_hs_set(struct ks_hs *h, uintptr_t addr, size_t len, enum ks_hs_state st)
{
	unsigned char *ch;
	size_t off, n, i;

	if ((unsigned)st > KS_HS_FREED) /* not a state: ignored */
		return;
	len = min_size(len, room(addr));
	while (len > 0) {
		off = addr & KS_HS_MASK;
		n = min_size(KS_HS_CHUNK - off, len);
		ch = ks_mt_tab_get(&h->tab, addr >> KS_HS_SHIFT);
		/* An absent chunk is all untracked already; one that cannot
		 * be allocated stays untracked (defined), the safe side. */
		if (!ch && st != KS_HS_UNTRACKED)
			ch = ks_mt_tab_make(&h->tab, addr >> KS_HS_SHIFT);
		if (ch)
			for (i = 0; i < n; i++)
				ch[off + i] = (unsigned char)st;
		addr += n;
		len -= n;
	}
}

enum ks_hs_state ks_hs_get(const struct ks_hs *h, uintptr_t addr)
{
	const unsigned char *ch = ks_mt_tab_get(&h->tab, addr >> KS_HS_SHIFT);

	return ch ? (enum ks_hs_state)ch[addr & KS_HS_MASK] : KS_HS_UNTRACKED;
}

/* The walk behind loads and stores: classifies the size bytes at addr
 * (before any change) and, if store, rewrites the addressable heap bytes
 * from undef_in.  h is const because the table does not change; the
 * chunks it points to are what a store changes, and only ks_hs_store asks
 * for that.  Like the line shadow, an access is clipped at the top of the
 * address space rather than wrapping to address 0. */
/* Views of state bytes as words (chunks are 64-byte aligned, so an
 * aligned client address gives an aligned view). */
typedef uint16_t __attribute__((may_alias)) ks_u16a;
typedef uint32_t __attribute__((may_alias)) ks_u32a;
typedef uint64_t __attribute__((may_alias)) ks_u64a;

static enum ks_hs_state hs_access(const struct ks_hs *h, uintptr_t addr,
				  unsigned size, bool store, uint64_t undef_in,
				  uint64_t *undef, unsigned *bad_off)
{
	enum ks_hs_state res = KS_HS_UNTRACKED, bad = KS_HS_UNTRACKED;
	unsigned i = 0, j, n, badi = 0;
	uint64_t u = 0;
	unsigned char *ch, b, nb;
	uintptr_t a, off;

	/* The common case first: a naturally aligned access of up to 8
	 * bytes to untracked memory, or to heap bytes all defined that stay
	 * defined -- one table lookup and one compare. */
	if ((size == 1 || size == 2 || size == 4 || size == 8) &&
	    (addr & (size - 1)) == 0 && (!store || undef_in == 0)) {
		const unsigned char *p;
		bool all_defined;

		ch = ks_mt_tab_get(&h->tab, addr >> KS_HS_SHIFT);
		if (!ch) {
			if (undef)
				*undef = 0;
			if (bad_off)
				*bad_off = 0;
			return KS_HS_UNTRACKED;
		}
		p = ch + (addr & KS_HS_MASK);
		switch (size) {
		case 1: all_defined = *p == KS_HS_DEFINED; break;
		case 2: all_defined = *(const ks_u16a *)p == 0x0101u * KS_HS_DEFINED; break;
		case 4: all_defined = *(const ks_u32a *)p == 0x01010101u * KS_HS_DEFINED; break;
		default:
			all_defined = *(const ks_u64a *)p ==
				      UINT64_C(0x0101010101010101) * KS_HS_DEFINED;
			break;
		}
		if (all_defined) {
			if (undef)
				*undef = 0;
			if (bad_off)
				*bad_off = 0;
			return KS_HS_DEFINED;
		}
		if (store) {
			/* Writing defined data over heap bytes (the first
			 * write of a fresh block): all of them become
			 * defined, unless one is unaddressable or untracked. */
			unsigned k;
			for (k = 0; k < size; k++)
				if (p[k] != KS_HS_DEFINED && p[k] != KS_HS_UNDEF)
					break;
			if (k == size) {
				unsigned char *w = ch + (addr & KS_HS_MASK);
				for (k = 0; k < size; k++)
					w[k] = KS_HS_DEFINED;
				if (bad_off)
					*bad_off = 0;
				return KS_HS_DEFINED;
			}
		}
	}
	if (size > KS_HS_MAX_ACCESS)
		size = KS_HS_MAX_ACCESS;
	if (size > room(addr))
		size = (unsigned)room(addr);
	while (i < size) {
		a = addr + i;
		off = a & KS_HS_MASK;
		n = size - i;
		if (n > KS_HS_CHUNK - off)
			n = (unsigned)(KS_HS_CHUNK - off);
		ch = ks_mt_tab_get(&h->tab, a >> KS_HS_SHIFT);
		if (!ch) { /* untracked: addressable and defined */
			i += n;
			continue;
		}
		for (j = 0; j < n; j++, i++) {
			b = ch[off + j];
			switch (b) {
			case KS_HS_UNTRACKED:
				continue;
			case KS_HS_UNDEF:
				u |= UINT64_C(1) << i;
				/* fall through */
			case KS_HS_DEFINED:
				res = KS_HS_DEFINED;
				if (store) {
					nb = (undef_in >> i) & 1 ? KS_HS_UNDEF : KS_HS_DEFINED;
					if (nb != b)
						ch[off + j] = nb;
				}
				continue;
			default: /* NOACCESS, FREED */
				if (bad == KS_HS_UNTRACKED) {
					bad = (enum ks_hs_state)b;
					badi = i;
				}
				continue;
			}
		}
	}
	if (undef)
		*undef = u;
	if (bad_off)
		*bad_off = bad != KS_HS_UNTRACKED ? badi : 0;
	return bad != KS_HS_UNTRACKED ? bad : res;
}

enum ks_hs_state ks_hs_load(const struct ks_hs *h, uintptr_t addr,
			    unsigned size, uint64_t *undef, unsigned *bad_off)
{
	return hs_access(h, addr, size, false, 0, undef, bad_off);
}

enum ks_hs_state ks_hs_store(struct ks_hs *h, uintptr_t addr, unsigned size,
			     uint64_t undef, unsigned *bad_off)
{
	return hs_access(h, addr, size, true, undef, NULL, bad_off);
}

/* Copies n states from s to d, both inside one chunk each; backwards when
 * the ranges overlap with d above s. */
static void copy_seg(struct ks_hs *h, uintptr_t d, uintptr_t s, size_t n,
		     bool backward)
{
	unsigned char *sc = ks_mt_tab_get(&h->tab, s >> KS_HS_SHIFT);
	unsigned char *dc = ks_mt_tab_get(&h->tab, d >> KS_HS_SHIFT);
	size_t so = s & KS_HS_MASK, dof = d & KS_HS_MASK, i;

	if (!sc) {
		/* Untracked source: the destination becomes untracked. */
		if (dc)
			for (i = 0; i < n; i++)
				dc[dof + i] = KS_HS_UNTRACKED;
		return;
	}
	if (!dc) {
		for (i = 0; i < n && sc[so + i] == KS_HS_UNTRACKED; i++)
			;
		if (i == n)
			return;
		dc = ks_mt_tab_make(&h->tab, d >> KS_HS_SHIFT);
		if (!dc)
			return;
	}
	if (backward)
		for (i = n; i-- > 0;)
			dc[dof + i] = sc[so + i];
	else
		for (i = 0; i < n; i++)
			dc[dof + i] = sc[so + i];
}

void ks_hs_copy(struct ks_hs *h, uintptr_t dst, uintptr_t src, size_t len)
{
	uintptr_t se, de;
	size_t n;

	len = min_size(len, min_size(room(src), room(dst)));
	if (dst == src)
		return;
	if (dst < src) {
		/* Forwards: every byte is read before the copy overwrites it. */
		while (len > 0) {
			n = min_size(len, KS_HS_CHUNK - (src & KS_HS_MASK));
			n = min_size(n, KS_HS_CHUNK - (dst & KS_HS_MASK));
			copy_seg(h, dst, src, n, false);
			src += n;
			dst += n;
			len -= n;
		}
	} else {
		/* Backwards from the end, segment by segment. */
		while (len > 0) {
			se = src + len;
			de = dst + len;
			n = min_size(len, ((se - 1) & KS_HS_MASK) + 1);
			n = min_size(n, ((de - 1) & KS_HS_MASK) + 1);
			copy_seg(h, de - n, se - n, n, true);
			len -= n;
		}
	}
}

struct ks_hs_direct ks_hs_direct_table(const struct ks_hs *h)
{
	struct ks_hs_direct d;

	d.chunks = (unsigned char *const *)h->tab.l1;
	d.n = h->tab.l1_n;
	d.shift = KS_HS_SHIFT;
	return d;
}
