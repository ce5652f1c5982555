/*
 * The slow path of every memory access of the program, and what it
 * needs: the line locks that make the analysis core safe for threads
 * running in parallel (mtcore.h, Concurrency), the per-thread sites (one
 * per access instruction and thread, so the core's site counters have one
 * writer), the interned stacks (contexts) made from the shadow call
 * stack, and the quiet cache's entries: an access that the core says
 * changes nothing but counts (ks_mt_quiet) leaves an entry that the next
 * accesses of the same instruction to the same line (for contention, to
 * any line) hit inline (rt_access in rt_int.h) for as long as the line's
 * ownership word says the thread still holds it.  Their counts are credited to the core
 * under the line's lock when the entry is replaced or the thread ends;
 * the misses and invalidations all happen here, under the lock, in the
 * order the threads took it.
 *
 * Events (misses, invalidations) are charged to the data object of the
 * address after the line lock is given back: naming an object may take
 * the heap's locks and the dynamic loader's.
 */
#include <string.h>

#include "rt_int.h"

struct rt_line_lock rt_line_locks[RT_NLOCKS];

/* ------------------------------------------------------------------ */
/* Contexts                                                            */
/* ------------------------------------------------------------------ */

#define CTX_BITS 16
#define CTX_MAX_FRAMES 64

static struct rt_ctx *ctx_tab[1u << CTX_BITS];
static struct rt_lock ctx_lock;
static uint32_t ctx_next = 1;

static uint64_t frames_hash(const uintptr_t *f, unsigned n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325) ^ n;

	for (unsigned i = 0; i < n; i++) {
		h ^= f[i];
		h *= UINT64_C(0x100000001b3);
		h ^= h >> 29;
	}
	return h;
}

static struct rt_ctx *ctx_find(struct rt_ctx *c, uint64_t h, const uintptr_t *f, unsigned n)
{
	for (; c; c = __atomic_load_n(&c->next, __ATOMIC_ACQUIRE))
		if (c->hash == h && c->n == n && !memcmp(c->pc, f, n * sizeof(*f)))
			return c;
	return NULL;
}

struct rt_ctx *rt_ctx_here(struct rt_thread *t, uintptr_t pc)
{
	uintptr_t f[CTX_MAX_FRAMES];
	struct rt_stack *s = t->stk;
	unsigned n = 0, max = rt.num_callers, d = s->depth;
	struct rt_ctx **b, *c;
	uint64_t h;

	if (max > CTX_MAX_FRAMES)
		max = CTX_MAX_FRAMES;
	f[n++] = pc;
	for (unsigned i = 1; n < max && i <= d && i <= RT_STACK_N; i++)
		f[n++] = s->pc[(d - i) & (RT_STACK_N - 1)];
	h = frames_hash(f, n);
	b = &ctx_tab[h >> (64 - CTX_BITS)];
	if ((c = ctx_find(__atomic_load_n(b, __ATOMIC_ACQUIRE), h, f, n)))
		return c;
	rt_lock_take(&ctx_lock);
	if (!(c = ctx_find(*b, h, f, n))) {
		c = rt_zalloc(sizeof(*c) + n * sizeof(uintptr_t));
		if (c) {
			c->hash = h;
			c->n = n;
			c->id = ctx_next++;
			memcpy(c->pc, f, n * sizeof(*f));
			c->next = *b;
			__atomic_store_n(b, c, __ATOMIC_RELEASE);
		}
	}
	rt_lock_give(&ctx_lock);
	return c;
}

void rt_ctx_for_each(void (*fn)(void *arg, struct rt_ctx *c), void *arg)
{
	for (size_t i = 0; i < (1u << CTX_BITS); i++)
		for (struct rt_ctx *c = ctx_tab[i]; c; c = c->next)
			fn(arg, c);
}

uint32_t rt_ctx_count(void)
{
	return __atomic_load_n(&ctx_next, __ATOMIC_RELAXED) - 1;
}

void rt_ctx_lock(void)
{
	rt_lock_take(&ctx_lock);
}

void rt_ctx_unlock(void)
{
	rt_lock_give(&ctx_lock);
}

/* ------------------------------------------------------------------ */
/* Sites                                                               */
/* ------------------------------------------------------------------ */

static size_t pc_slot(uintptr_t pc, size_t cap)
{
	return (size_t)(((uint64_t)pc * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (cap - 1);
}

static bool sites_grow(struct rt_thread *t)
{
	size_t ncap = t->scap ? t->scap * 2 : 256;
	struct rt_site **n = rt_zalloc(ncap * sizeof(*n));

	if (!n)
		return false;
	for (size_t i = 0; i < t->scap; i++) {
		struct rt_site *s = t->smap[i];
		size_t j;

		if (!s)
			continue;
		for (j = pc_slot(s->pc, ncap); n[j]; j = (j + 1) & (ncap - 1))
			;
		n[j] = s;
	}
	rt_free(t->smap, t->scap * sizeof(*t->smap));
	t->smap = n;
	t->scap = ncap;
	return true;
}

/* The thread's site at pc, or NULL.  Only t's thread adds to its map;
 * another thread may look (crediting t's quiet cache at the end, when t
 * holds still). */
static struct rt_site *site_find(struct rt_thread *t, uintptr_t pc)
{
	struct rt_site *s;
	size_t j;

	if (t->scap) {
		for (j = pc_slot(pc, t->scap); (s = t->smap[j]); j = (j + 1) & (t->scap - 1))
			if (s->pc == pc)
				return s;
	}
	return NULL;
}

/* The thread's site at pc, made if new (only its thread looks at its
 * map, so no lock); NULL out of memory. */
static struct rt_site *site_get(struct rt_thread *t, uintptr_t pc)
{
	struct rt_site *s = site_find(t, pc);
	size_t j;

	if (s)
		return s;
	if ((t->sn + 1) * 2 > t->scap && !sites_grow(t))
		return NULL;
	s = rt_zalloc(sizeof(*s));
	if (!s)
		return NULL;
	s->pc = pc;
	s->thr = t;
	s->s.user = s;
	s->s.id = (uint32_t)t->sn;
	s->first = rt_ctx_here(t, pc);
	for (j = pc_slot(pc, t->scap); t->smap[j]; j = (j + 1) & (t->scap - 1))
		;
	/* The finishing thread reads other threads' maps: publish whole. */
	__atomic_store_n(&t->smap[j], s, __ATOMIC_RELEASE);
	t->sn++;
	return s;
}

void *rt_site_context(void *ctx, unsigned tid, struct ks_mt_site *ms)
{
	struct rt_site *s = ms->user;
	struct rt_thread *t = rt_self;
	struct rt_ctx *c = NULL;

	(void)ctx;
	/* The accessing thread's first access from this site to a shared
	 * line: its stack now.  Another thread's entry (the line's first
	 * thread, when a second one arrives), or counts handed over later
	 * from the pending table: the stack of the site's first access, all
	 * that is known of it here. */
	if (t && t->tid == tid && s->thr == t && !t->crediting)
		c = rt_ctx_here(t, s->pc);
	return c ? c : s->first;
}

/* ------------------------------------------------------------------ */
/* Line locks                                                          */
/* ------------------------------------------------------------------ */

void rt_lines_lock_all(void)
{
	for (unsigned i = 0; i < RT_NLOCKS; i++)
		rt_lock_take(&rt_line_locks[i].l);
}

void rt_lines_unlock_all(void)
{
	for (unsigned i = 0; i < RT_NLOCKS; i++)
		rt_lock_give(&rt_line_locks[i].l);
}

/* ------------------------------------------------------------------ */
/* Accesses                                                            */
/* ------------------------------------------------------------------ */

static void charge(uintptr_t a, unsigned ev)
{
	struct rt_obj *o = rt_obj_of(a);

	if (!o)
		return;
	if (ev & KS_MT_EV_MISS)
		__atomic_fetch_add(&o->misses, 1, __ATOMIC_RELAXED);
	if (ev & KS_MT_EV_INVAL)
		__atomic_fetch_add(&o->invals, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ */
/* The pending table                                                   */
/* ------------------------------------------------------------------ */

/* Gives one entry's counts to the core; the line's lock is held (for
 * falseshare). */
static void pend_credit(struct rt_thread *t, struct rt_pend *e)
{
	uint64_t n = __atomic_exchange_n(&e->n, 0, __ATOMIC_ACQ_REL);

	if (n)
		ks_mt_add_quiet(rt.mt, t->tid, e->line << rt.line_shift, e->write, &e->site->s,
				n, e->words);
}

void rt_pend_flush(struct rt_thread *t)
{
	struct rt_pend *p = t->pend;
	unsigned k = t->pn;
	uint32_t *order, count[RT_NLOCKS + 1];

	if (!p || !k)
		return;
	t->crediting = true;
	if (!rt.falseshare) {
		/* Contention's quiet counts are the thread's and its sites':
		 * no lock. */
		for (unsigned i = 0; i < k; i++)
			pend_credit(t, &p[i]);
		goto done;
	}
	/* By line lock (a counting sort): each lock once per batch.  The
	 * order array is the caller's own, in case t's thread is flushing
	 * too (the end of the process). */
	order = rt_zalloc(k * sizeof(*order));
	if (!order) {
		for (unsigned i = 0; i < k; i++) {
			struct rt_lock *l = &rt_line_locks[rt_lock_index(p[i].line)].l;

			rt_lock_take(l);
			pend_credit(t, &p[i]);
			rt_lock_give(l);
		}
		goto done;
	}
	memset(count, 0, sizeof(count));
	for (unsigned i = 0; i < k; i++)
		count[rt_lock_index(p[i].line) + 1]++;
	for (unsigned g = 0; g < RT_NLOCKS; g++)
		count[g + 1] += count[g];
	for (unsigned i = 0; i < k; i++)
		order[count[rt_lock_index(p[i].line)]++] = i;
	for (unsigned j = 0; j < k;) {
		unsigned g = rt_lock_index(p[order[j]].line);
		struct rt_lock *l = &rt_line_locks[g].l;

		rt_lock_take(l);
		for (; j < k && rt_lock_index(p[order[j]].line) == g; j++)
			pend_credit(t, &p[order[j]]);
		rt_lock_give(l);
	}
	rt_free(order, k * sizeof(*order));
done:
	t->crediting = false;
	t->pn = 0;
}

/* Appends counts to t's pending log, handed to the core when full. */
static void pend_add(struct rt_thread *t, uintptr_t line, uintptr_t pc, uint32_t write,
		     struct rt_site *site, uint64_t n, uint64_t words)
{
	struct rt_pend *e;

	if (!t->pend && !(t->pend = rt_zalloc(RT_PN * sizeof(*t->pend)))) {
		/* No log: credit this one at once. */
		struct rt_lock *l = &rt_line_locks[rt_lock_index(line)].l;

		rt_lock_take(l);
		t->crediting = true;
		ks_mt_add_quiet(rt.mt, t->tid, line << rt.line_shift, write, &site->s, n, words);
		t->crediting = false;
		rt_lock_give(l);
		return;
	}
	e = &t->pend[t->pn];
	e->line = line;
	e->pc = pc;
	e->site = site;
	e->words = words;
	e->write = write;
	__atomic_store_n(&e->n, n, __ATOMIC_RELEASE);
	if (++t->pn == RT_PN)
		rt_pend_flush(t);
}

void rt_qent_credit(struct rt_thread *t, struct rt_qent *e)
{
	uint64_t n = e->n;
	struct rt_site *s;

	e->n = 0;
	/* An entry is made after its site, which lives as long as the
	 * process: found. */
	if (!n || e->pc == RT_QNONE || !(s = site_find(t, e->pc)))
		return;
	if (!rt.falseshare) {
		/* Contention's quiet counts are the thread's and its site's
		 * own (no line: the key has none): straight to the core, no
		 * lock, no log. */
		t->crediting = true;
		ks_mt_add_quiet(rt.mt, t->tid, 0, e->key & 1, &s->s, n, 0);
		t->crediting = false;
		return;
	}
	pend_add(t, e->key >> 1, e->pc, e->key & 1, s, n, e->words);
}

/* Puts entry x (not in the table) into set e of table q: the set's
 * first way, the first way's entry moving to the second, whose entry, if
 * any, is credited (most recently made first; a hit in either way is a
 * hit).  Whether an entry was replaced. */
static bool qset_put(struct rt_thread *t, struct rt_qent *e, const struct rt_qent *x)
{
	bool replaced = false;

	if (e[0].pc != RT_QNONE) {
		if (e[1].pc != RT_QNONE) {
			rt_qent_credit(t, &e[1]);
			replaced = true;
		}
		e[1] = e[0];
	}
	e[0] = *x;
	return replaced;
}

/* Doubles t's quiet cache (entries that do not fit in the new one have
 * their counts credited).  The old table is not given back: a signal
 * handler on the thread, or the thread finishing the process, may still
 * be reading it; the tables a thread ever had add up to less than twice
 * its last one. */
static void qent_grow(struct rt_thread *t)
{
	static size_t grown; /* bytes of the tables grown so far, all threads */
	uintptr_t omask = t->qmask, nmask = omask * 2 + 1;
	size_t bytes = (nmask + 1) * sizeof(struct rt_qent);
	struct rt_qent *o = t->own_q, *n;

	t->qevict = 0;
	if (nmask + 1 > RT_QN_MAX ||
	    __atomic_add_fetch(&grown, bytes, __ATOMIC_RELAXED) > RT_QBYTES_MAX ||
	    !(n = rt_zalloc(bytes)))
		return;
	/* Second ways first, so that first ways stay first. */
	for (unsigned way = 2; way-- > 0;)
		for (uintptr_t i = way; i <= omask; i += 2)
			if (o[i].pc != RT_QNONE)
				qset_put(t, &n[rt_qslot(o[i].key, o[i].pc, nmask)], &o[i]);
	t->own_q = n;
	if (t->q == o)
		__atomic_store_n(&t->q, n, __ATOMIC_RELEASE);
	__atomic_store_n(&t->qmask, nmask, __ATOMIC_RELEASE);
}

/* Puts the entry of (line, write, site) -- (write, site) for
 * contention -- into t's table, made anew if its set holds neither way
 * (an entry replaced has its counts credited): n accesses taken,
 * touching words.  The site exists (site_get). */
static void qent_install(struct rt_thread *t, uintptr_t line, uintptr_t pc, bool write,
			 uint64_t n, uint64_t words)
{
	uintptr_t key = rt_qkey(rt.falseshare ? line : 0, write);
	struct rt_qent *e = &t->own_q[rt_qslot(key, pc, t->qmask)], x;

	if (e[0].key != key || e[0].pc != pc) {
		if (e[1].key == key && e[1].pc == pc) {
			e++;
		} else {
			x.key = key;
			x.pc = pc;
			x.n = 0;
			x.words = 0;
			if (qset_put(t, e, &x) && ++t->qevict > t->qmask &&
			    t->qmask + 1 < RT_QN_MAX) {
				/* As many replaced as there are entries: a
				 * working set larger than the table. */
				qent_grow(t);
				e = &t->own_q[rt_qslot(key, pc, t->qmask)];
				if (e[0].key != key || e[0].pc != pc)
					e++;
			}
		}
	}
	e->n += n;
	e->words |= words;
}

/* One access within at most two lines: the core under the lines' locks,
 * then the charge and, when cache allows and the core says so, a quiet
 * entry for the next ones. */
static void record(struct rt_thread *t, uintptr_t a, unsigned size, bool write,
		   uintptr_t pc, bool cache)
{
	struct rt_site *s = site_get(t, pc);
	uintptr_t line = a >> rt.line_shift, lline = (a + size - 1) >> rt.line_shift;
	unsigned i1 = rt_lock_index(line), i2 = rt_lock_index(lline), ev;
	bool quiet = false;

	if (!s)
		return;
	if (RT_UNLIKELY((a + size - 1) >> RT_DIRECT_BITS)) {
		ks_mt_add_hits(rt.mt, t->tid, write ? 0 : 1, write ? 1 : 0);
		return;
	}
	if (i1 > i2) {
		unsigned x = i1;

		i1 = i2;
		i2 = x;
	}
	rt_lock_take(&rt_line_locks[i1].l);
	if (i2 != i1)
		rt_lock_take(&rt_line_locks[i2].l);
	ev = ks_mt_access(rt.mt, t->tid, a, size, write, &s->s);
	if (cache && line == lline && rt.min_write && t->q == t->own_q && t->bit &&
	    ks_mt_quiet(rt.mt, t->tid, a, write))
		quiet = true;
	if (i2 != i1)
		rt_lock_give(&rt_line_locks[i2].l);
	rt_lock_give(&rt_line_locks[i1].l);
	if (ev & (KS_MT_EV_MISS | KS_MT_EV_INVAL))
		charge(a, ev);
	if (quiet)
		qent_install(t, line, pc, write, 0, 0);
}

/* What signal handlers did while this thread was inside the runtime:
 * counted as accesses, not simulated (the handler could not take the
 * locks the thread it interrupted might hold). */
static void deferred_flush(struct rt_thread *t)
{
	uint64_t r = __atomic_exchange_n(&t->deferred_r, 0, __ATOMIC_RELAXED);
	uint64_t w = __atomic_exchange_n(&t->deferred_w, 0, __ATOMIC_RELAXED);

	if (r | w)
		ks_mt_add_hits(rt.mt, t->tid, r, w);
}

/* The thread, if accesses are recorded now: registered, the analysis
 * running, not ignoring, not interrupting itself (then counted only). */
static struct rt_thread *enter(struct rt_thread *t, bool write)
{
	if (RT_UNLIKELY(!t) && !(t = rt_thread_adopt()))
		return NULL;
	if (!__atomic_load_n(&rt.active, __ATOMIC_ACQUIRE) || t->ignore > 0)
		return NULL;
	if (t->in_rt) {
		__atomic_fetch_add(write ? &t->deferred_w : &t->deferred_r, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	t->in_rt = 1;
	return t;
}

static void leave(struct rt_thread *t)
{
	if (RT_UNLIKELY(t->deferred_r | t->deferred_w))
		deferred_flush(t);
	t->in_rt = 0;
}

/* The medium path: the quiet cache has no entry for this (line, site),
 * but the line's ownership word says the thread holds it (for a write,
 * alone), so the access changes nothing but counts, as a hit in the
 * core would: a new entry takes it, without any lock.  Whether it did. */
static bool medium(struct rt_thread *t, uintptr_t a, unsigned size, bool write, uintptr_t pc)
{
	uintptr_t line = a >> rt.line_shift, off = a & rt.line_mask;
	const uint64_t *own;
	struct rt_site *s;
	uint64_t o;

	if (!rt.min_write || !t->bit || t->q != t->own_q || off + size > rt.line_size ||
	    !(own = ks_mt_own_find(&rt.own_map, line)))
		return false;
	o = __atomic_load_n(own, __ATOMIC_RELAXED);
	if (write ? o != t->bit : !(o & t->bit))
		return false;
	if (!(s = site_get(t, pc)))
		return false;
	qent_install(t, line, pc, write, 1, rt.falseshare ? rt_words(off, size) : 0);
	return true;
}

void rt_access_slow(struct rt_thread *t, uintptr_t a, unsigned size, bool write,
		    uintptr_t pc)
{
	if (!(t = enter(t, write)))
		return;
	if (!medium(t, a, size, write, pc))
		record(t, a, size, write, pc, true);
	leave(t);
}

void rt_access_range(uintptr_t a, size_t size, bool write, uintptr_t pc)
{
	struct rt_thread *t;

	if (size == 0 || !(t = enter(rt_self, write)))
		return;
	while (size) {
		size_t room = rt.line_size - (a & rt.line_mask);
		unsigned n = (unsigned)(size < room ? size : room);

		record(t, a, n, write, pc, false);
		if (a + n < a)
			break; /* the top of the address space */
		a += n;
		size -= n;
	}
	leave(t);
}

