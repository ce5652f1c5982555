/*
 * The cache simulator of the hotspot analysis (kst_hot.c): set-associative
 * caches with least-recently-used replacement, write-allocate, and a
 * dirty bit per line, chained into the hierarchy one thread sees (an
 * instruction cache and data level 0 in front, private levels, the last
 * level shared).  The model is the one kscope's docs/simulate.md
 * describes:
 *
 *   - a line's set is its line number modulo the number of sets;
 *   - an access touching several lines of a level is one access of that
 *     level, and one miss if any of its lines missed;
 *   - the lines an access missed in level k are looked up in level k+1
 *     (one access of level k+1), and so on down to memory; each line
 *     missed in level k is filled from below, which is traffic across
 *     boundary k+1;
 *   - a store marks its line dirty in level 0 (write-allocate: a store
 *     that misses fills the line first); evicting a dirty line from
 *     level k writes it back across boundary k+1.  The write-back marks
 *     the line dirty in level k+1 when level k+1 holds it and allocates
 *     nothing there: a line level k+1 no longer holds goes on to memory
 *     only as the bytes counted at boundary k+1, which keeps the model
 *     simple and the misses those of a read-allocate lookup;
 *   - instruction fetches go through the instruction cache; its misses
 *     are accesses of level 1 (memory when there is one level) and fill
 *     across boundary 1, like level 0's.
 *
 * Line sizes never shrink going down (the option parser checks it), so a
 * line of level k lies in exactly one line of level k+1.
 */
#include "pub_tool_basics.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_mallocfree.h"

#include "kst_int.h"

void kst_hc_init(struct kst_hc *c, ULong size, UInt assoc, UInt line)
{
	UWord sets = (UWord)(size / ((ULong)assoc * line)), i, n;

	tl_assert(sets > 0 && (sets & (sets - 1)) == 0);
	tl_assert(line >= KST_HC_MIN_LINE && (line & (line - 1)) == 0);
	c->assoc = assoc;
	c->set_mask = sets - 1;
	c->line_bits = 0;
	while ((1u << c->line_bits) < line)
		c->line_bits++;
	n = sets * assoc;
	c->tags = VG_(malloc)("kst.hot.cache", n * sizeof(*c->tags));
	for (i = 0; i < n; i++)
		c->tags[i] = KST_HC_EMPTY;
}

/* Looks line up in its set.  A hit makes it the most recently used line
 * (and dirty when write); a miss installs it so, evicting the least
 * recently used line.  Returns True on a miss; *victim is the evicted
 * line when it was dirty, else KST_HC_EMPTY. */
static inline Bool set_ref(struct kst_hc *c, UWord line, Bool write, UWord *victim)
{
	UWord *set = c->tags + (line & c->set_mask) * c->assoc;
	UWord e = set[0];
	UInt i, j;

	*victim = KST_HC_EMPTY;
	if ((e >> 1) == line) {
		set[0] = e | write;
		return False;
	}
	for (i = 1; i < c->assoc; i++) {
		e = set[i];
		if ((e >> 1) == line) {
			for (j = i; j > 0; j--)
				set[j] = set[j - 1];
			set[0] = e | write;
			return False;
		}
	}
	e = set[c->assoc - 1];
	if (e != KST_HC_EMPTY && (e & 1))
		*victim = e >> 1;
	for (j = c->assoc - 1; j > 0; j--)
		set[j] = set[j - 1];
	set[0] = (line << 1) | write;
	return True;
}

/* Marks line dirty if the cache holds it; the order is left alone. */
static void mark_dirty(struct kst_hc *c, UWord line)
{
	UWord *set = c->tags + (line & c->set_mask) * c->assoc;
	UInt i;

	for (i = 0; i < c->assoc; i++)
		if ((set[i] >> 1) == line) {
			set[i] |= 1;
			return;
		}
}

/* A dirty line of level k was evicted: written back across boundary k+1. */
static void write_back(const struct kst_hier *h, UInt k, UWord line, ULong *bw)
{
	const struct kst_hc *c = h->lv[k];

	if (bw)
		bw[2 * (k + 1) + 1] += 1ULL << c->line_bits;
	if (k + 1 < h->n)
		mark_dirty(h->lv[k + 1], line >> (h->lv[k + 1]->line_bits - c->line_bits));
}

/* ---- the per-set counters (struct kst_hc_obs) ---- */

/* The least recently used entry of line l's set: what a miss evicts. */
static inline UWord lru_of(const struct kst_hc *c, UWord l)
{
	return c->tags[(l & c->set_mask) * c->assoc + c->assoc - 1];
}

static inline ULong *set_ctr(const struct kst_hc_obs *o, const struct kst_hc *c, UWord l)
{
	return o->sets + (l & c->set_mask) * KST_SET_N;
}

/* Line l missed the observed level c and was allocated, evicting last. */
static void obs_alloc(const struct kst_hc_obs *o, const struct kst_hc *c, UWord l,
		      UWord last)
{
	ULong *s = set_ctr(o, c, l);

	s[KST_SET_ALLOC]++;
	if (last != KST_HC_EMPTY)
		s[(last & 1) ? KST_SET_EVW : KST_SET_EVWO]++;
}

/* One access of the observed level c: first is its first line, missed
 * its first line that missed (KST_HC_EMPTY: all hit). */
static void obs_access(const struct kst_hc_obs *o, const struct kst_hc *c, UWord first,
		       UWord missed, Bool write)
{
	ULong *s = set_ctr(o, c, missed != KST_HC_EMPTY ? missed : first);

	s[write ? KST_SET_STORE : KST_SET_LOAD]++;
	s[missed != KST_HC_EMPTY ? KST_SET_MISS : KST_SET_HIT]++;
}

/* lines[0..n) (of 2^bits bytes, in increasing order) missed level k-1
 * (or the instruction cache when k is 1): they are filled across
 * boundary k from level k, whose misses go on down.  Returns the level
 * that served the access (h->n: memory).  Overwrites lines.  obs, when
 * not NULL, observes a data access (a store when write). */
static UInt go_below(const struct kst_hier *h, UInt k, UWord *lines, UInt n,
		     UInt bits, ULong *bw, const struct kst_hc_obs *obs, Bool write)
{
	UWord next[KST_HC_MAX_LINES], victim, prev, last = 0;
	UInt i, nn;
	struct kst_hc *c;
	Bool watch;

	for (;;) {
		if (bw)
			bw[2 * k] += (ULong)n << bits;
		if (k == h->n)
			return k;
		c = h->lv[k];
		nn = 0;
		prev = KST_HC_EMPTY;
		watch = obs && obs->sets && k == obs->sets_level;
		for (i = 0; i < n; i++) {
			UWord l = lines[i] >> (c->line_bits - bits);
			if (l == prev)
				continue;
			prev = l;
			if (watch)
				last = lru_of(c, l);
			if (set_ref(c, l, False, &victim)) {
				next[nn++] = l;
				if (watch)
					obs_alloc(obs, c, l, last);
			}
			if (victim != KST_HC_EMPTY)
				write_back(h, k, victim, bw);
		}
		if (watch)
			obs_access(obs, c, lines[0] >> (c->line_bits - bits),
				   nn ? next[0] : KST_HC_EMPTY, write);
		if (nn == 0)
			return k;
		for (i = 0; i < nn; i++)
			lines[i] = next[i];
		n = nn;
		bits = c->line_bits;
		k++;
	}
}

UInt kst_hc_data(const struct kst_hier *h, Addr a, UInt size, Bool write, ULong *bw,
		 struct kst_hc_obs *obs)
{
	struct kst_hc *c = h->lv[0];
	UWord miss[KST_HC_MAX_LINES], first, last, l, victim, lru = 0;
	UInt n = 0;
	Bool watch = obs && obs->sets && obs->sets_level == 0;

	first = a >> c->line_bits;
	last = (a + (size ? size : 1) - 1) >> c->line_bits;
	if (last - first >= KST_HC_MAX_LINES)
		last = first + KST_HC_MAX_LINES - 1;
	if (obs) {
		obs->first_miss = KST_HC_EMPTY;
		obs->nwb = 0;
	}
	for (l = first; l <= last; l++) {
		if (watch)
			lru = lru_of(c, l);
		if (set_ref(c, l, write, &victim)) {
			miss[n++] = l;
			if (watch)
				obs_alloc(obs, c, l, lru);
		}
		if (victim != KST_HC_EMPTY) {
			write_back(h, 0, victim, bw);
			if (obs)
				obs->wb[obs->nwb++] = victim;
		}
	}
	if (watch)
		obs_access(obs, c, first, n ? miss[0] : KST_HC_EMPTY, write);
	if (n == 0)
		return 0;
	if (obs)
		obs->first_miss = miss[0];
	return go_below(h, 1, miss, n, c->line_bits, bw, obs, write);
}

UInt kst_hc_fetch(const struct kst_hier *h, Addr a, UInt size, ULong *bw)
{
	struct kst_hc *c = h->ic;
	UWord miss[KST_HC_MAX_LINES], first, last, l, victim;
	UInt n = 0;

	first = a >> c->line_bits;
	last = (a + (size ? size : 1) - 1) >> c->line_bits;
	if (last - first >= KST_HC_MAX_LINES)
		last = first + KST_HC_MAX_LINES - 1;
	for (l = first; l <= last; l++)
		if (set_ref(c, l, False, &victim)) /* never dirty: no victim */
			miss[n++] = l;
	if (n == 0)
		return 0;
	return go_below(h, 1, miss, n, c->line_bits, bw, NULL, False);
}
