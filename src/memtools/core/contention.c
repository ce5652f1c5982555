/*
 * The line shadow's life cycle and the paper's bitmap method: one SMU per
 * cache line records which threads hold a copy, and every access of the
 * program under test (ks_mt_access) turns into cold misses, misses and
 * invalidations counted per thread, per site and per line.  This is the
 * hottest code of the memory tools, so the common case, a thread touching
 * a line it already holds (alone, for a write), is a table load, one
 * compare and the counter increments; everything else is out of line.
 * The falseshare bookkeeping of a line's first thread is inline here too;
 * shared lines go to falseshare.c.  Freestanding: no library calls.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mtcore_int.h"

_Static_assert(sizeof(void *) != 8 || sizeof(struct ks_mt_smu) == 24,
	       "contention SMU is 24 bytes on 64-bit hosts");
_Static_assert(sizeof(void *) != 8 || sizeof(struct ks_mt_smu_fs) == 64,
	       "falseshare SMU is one cache line on 64-bit hosts");
_Static_assert(offsetof(struct ks_mt_smu, own) == 0,
	       "the ownership word starts the SMU (ks_mt_own_find)");
_Static_assert(KS_MT_NFIELDS * sizeof(uint64_t) <= 64,
	       "a thread's counters fit its 64-byte block");
_Static_assert(KS_MT_MAX_THREADS <= (1u << 12),
	       "the first thread's tid fits bits 48..59 of ks_mt_smu_fs.rt");

/* Events internal to this file: the line could not be recorded (out of
 * memory), so nothing else may look at it.  Never returned. */
#define KS_MT_EV_LOST 0x100u

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

static unsigned log2u(unsigned v)
{
	unsigned n = 0;

	while (v > 1) {
		v >>= 1;
		n++;
	}
	return n;
}

/* Frees what SMUs of one chunk point to, before the chunk goes. */
static void smu_chunk_free(void *arg, uintptr_t cidx, void *chunk)
{
	struct ks_mt *m = arg;
	unsigned char *p = chunk;
	uintptr_t i, n = m->lc_mask + 1;

	(void)cidx;
	for (i = 0; i < n; i++, p += m->smu_size) {
		struct ks_mt_smu *s = (struct ks_mt_smu *)(void *)p;

		if (s->ext)
			ks_mt_mem_free(&m->alloc, &m->bytes, s->ext,
				       (m->ext_words + 1) * sizeof(uint64_t));
		if (m->cfg.falseshare)
			ks_mt_fs_free(m, (struct ks_mt_smu_fs *)(void *)p);
	}
}

int ks_mt_init(struct ks_mt **out, const struct ks_mt_config *cfg,
	       const struct ks_mt_alloc *alloc)
{
	struct ks_mt *m;
	unsigned ls;
	size_t smu;
	int rc;

	if (!out)
		return -22;
	*out = NULL;
	if (!cfg || !alloc || !alloc->zalloc || !alloc->free)
		return -22;
	if (cfg->line_size < 16 || cfg->line_size > 4096 ||
	    (cfg->line_size & (cfg->line_size - 1)) != 0)
		return -22;
	if (cfg->max_threads == 0 || cfg->max_threads > KS_MT_MAX_THREADS)
		return -22;
	if (cfg->direct_bits != 0 &&
	    (cfg->direct_bits < KS_MT_CHUNK_SHIFT || cfg->direct_bits > KS_MT_MAX_DIRECT_BITS))
		return -22;

	m = alloc->zalloc(alloc->ctx, sizeof(*m));
	if (!m)
		return -12;
	/* Field by field: a struct copy may become a memcpy call. */
	m->alloc.zalloc = alloc->zalloc;
	m->alloc.free = alloc->free;
	m->alloc.ctx = alloc->ctx;
	m->bytes = sizeof(*m);
	m->cfg.line_size = cfg->line_size;
	m->cfg.max_threads = cfg->max_threads;
	m->cfg.falseshare = cfg->falseshare;
	m->cfg.min_write = cfg->min_write;
	m->cfg.min_writes = cfg->min_writes;
	m->cfg.pad_smu = cfg->pad_smu;
	m->cfg.thread_isolation = cfg->thread_isolation;
	m->cfg.context = cfg->context;
	m->cfg.context_ctx = cfg->context_ctx;
	m->cfg.direct_bits = cfg->direct_bits ? cfg->direct_bits : KS_MT_TAB_DIRECT_BITS;

	ls = log2u(cfg->line_size);
	m->line_shift = ls;
	/* Bytes, or line_size / 64 so that a line has at most 64 words and
	 * a word mask stays one uint64_t: byte granularity costs no shadow
	 * memory on lines of up to 64 bytes (mtcore.h, ks_mt_word_size). */
	m->word_shift = ls > 6 ? ls - 6 : 0;
	m->lc_shift = KS_MT_CHUNK_SHIFT - ls;
	m->lc_mask = ((uintptr_t)1 << m->lc_shift) - 1;
	smu = cfg->falseshare ? sizeof(struct ks_mt_smu_fs) : sizeof(struct ks_mt_smu);
	if (cfg->pad_smu)
		smu = (smu + 63) & ~(size_t)63;
	m->smu_size = smu;
	m->ext_words = (cfg->max_threads + 63) / 64;

	rc = ks_mt_tab_init(&m->tab, &m->alloc, &m->bytes, KS_MT_CHUNK_SHIFT,
			    smu << m->lc_shift, m->cfg.direct_bits);
	if (rc != 0)
		goto out;
	rc = -12;
	if (cfg->thread_isolation) {
		m->blk = ks_mt_mem_zalloc(&m->alloc, &m->bytes,
					  cfg->max_threads * sizeof(uint64_t *));
		if (!m->blk)
			goto out;
		m->stride = 1;
	} else {
		m->ileave = ks_mt_mem_zalloc(&m->alloc, &m->bytes,
					     (size_t)KS_MT_NFIELDS * cfg->max_threads *
						     sizeof(uint64_t));
		if (!m->ileave)
			goto out;
		m->stride = cfg->max_threads;
	}
	*out = m;
	return 0;
out:
	ks_mt_fini(m);
	return rc;
}

void ks_mt_fini(struct ks_mt *m)
{
	unsigned t;

	if (!m)
		return;
	ks_mt_tab_fini(&m->tab, smu_chunk_free, m);
	if (m->blk) {
		for (t = 0; t < m->cfg.max_threads; t++)
			ks_mt_mem_free64(&m->alloc, &m->bytes, m->blk[t], 64);
		ks_mt_mem_free(&m->alloc, &m->bytes, m->blk,
			       m->cfg.max_threads * sizeof(uint64_t *));
	}
	ks_mt_mem_free(&m->alloc, &m->bytes, m->ileave,
		       (size_t)KS_MT_NFIELDS * m->cfg.max_threads * sizeof(uint64_t));
	m->alloc.free(m->alloc.ctx, m, sizeof(*m));
}

/* ------------------------------------------------------------------ */
/* The bitmap method                                                   */
/* ------------------------------------------------------------------ */

/* An extension bitmap is ext_words words, one bit per tid, followed by a
 * word counting the bits set, so that "does anyone else hold it?" needs
 * no scan.  Makes it hold exactly tid (or nobody when w == ext_words). */
static void ext_set_only(struct ks_mt *m, uint64_t *ext, unsigned w, uint64_t xbit)
{
	unsigned i, n = m->ext_words;
	uint64_t want;

	for (i = 0; i < n; i++) {
		want = i == w ? xbit : 0;
		if (!m->cfg.min_write || ext[i] != want)
			ext[i] = want;
	}
	want = w < n ? 1 : 0;
	if (!m->cfg.min_write || ext[n] != want)
		ext[n] = want;
}

/* Everything but a hit by a thread below 63: cold lines, misses,
 * invalidations, and any access by a thread >= 63 (whose copy lives in the
 * extension bitmap). */
static unsigned own_update(struct ks_mt *m, struct ks_mt_smu *s, unsigned tid,
			   bool write)
{
	uint64_t own = ks_mt_own_load(s), nown, bit = 0, xbit = 0;
	uint64_t *ext = s->ext;
	bool inl = tid < KS_MT_INLINE_TIDS, has, others = false;
	unsigned w = tid >> 6, ev;

	if (inl) {
		bit = UINT64_C(1) << tid;
	} else {
		xbit = UINT64_C(1) << (tid & 63);
		if (!ext) {
			ext = ks_mt_mem_zalloc(&m->alloc, &m->bytes,
					       (m->ext_words + 1) * sizeof(uint64_t));
			if (!ext)
				return KS_MT_EV_LOST;
			s->ext = ext;
		}
	}

	if (own == 0) {
		/* Never touched: the initialization probe. */
		ev = KS_MT_EV_COLD;
		has = false;
	} else {
		if (inl)
			has = (own & bit) != 0;
		else
			has = (own & KS_MT_OWN_EXT) && (ext[w] & xbit);
		ev = has ? 0 : KS_MT_EV_MISS;
		if (write) {
			if (inl)
				others = (own & ~bit) != 0;
			else
				others = (own & ~KS_MT_OWN_EXT) != 0 ||
					 ext[m->ext_words] > (has ? 1u : 0u);
		}
	}

	if (write) {
		if (others)
			ev |= KS_MT_EV_INVAL;
		if (inl) {
			nown = bit;
			/* ext holds copies only while the summary bit says so. */
			if (own & KS_MT_OWN_EXT)
				ext_set_only(m, ext, m->ext_words, 0);
		} else {
			nown = KS_MT_OWN_EXT;
			if (!has || ext[m->ext_words] != 1 || !m->cfg.min_write)
				ext_set_only(m, ext, w, xbit);
		}
	} else if (!has) {
		if (inl) {
			nown = own | bit;
		} else {
			nown = own | KS_MT_OWN_EXT;
			ext[w] |= xbit;
			ext[m->ext_words]++;
		}
	} else {
		nown = own;
	}
	if (nown != own || !m->cfg.min_write) /* the ablation, as on the hit path */
		ks_mt_own_store(s, nown);
	if ((ev & KS_MT_EV_MISS) && s->misses != UINT32_MAX)
		s->misses++;
	if ((ev & KS_MT_EV_INVAL) && s->invals != UINT32_MAX)
		s->invals++;
	return ev;
}

/* Bits a..b (a <= b <= 63). */
static inline uint64_t word_mask(unsigned a, unsigned b)
{
	return (~UINT64_C(0) >> (63 - b)) & (~UINT64_C(0) << a);
}

/* The line's first (and so far only) thread touched the words in mask. */
static inline void fs_owner(struct ks_mt *m, struct ks_mt_smu_fs *f, bool write,
			    uint64_t mask)
{
	if (write) {
		if (!m->cfg.min_write || (f->wmask & mask) != mask)
			f->wmask |= mask;
		f->writes++;
	} else {
		if (!m->cfg.min_write || (f->rmask & mask) != mask)
			f->rmask |= mask;
		if ((f->rt & KS_MT_FS_READS) != KS_MT_FS_READS)
			f->rt++;
	}
}

/* The false-sharing record of one line access; ev is what the bitmap
 * method saw.  The line's first thread is handled here (it is most of the
 * accesses); a line with a second thread goes to falseshare.c. */
static void fs_line(struct ks_mt *m, struct ks_mt_smu *s, unsigned ev,
		    unsigned tid, bool write, struct ks_mt_site *site,
		    uintptr_t line, uintptr_t addr, uintptr_t last)
{
	struct ks_mt_smu_fs *f = (struct ks_mt_smu_fs *)(void *)s;
	uintptr_t lmask = ((uintptr_t)1 << m->line_shift) - 1;
	unsigned lo = 0, hi = (unsigned)lmask;
	uint64_t mask;

	if ((addr >> m->line_shift) == line)
		lo = (unsigned)(addr & lmask);
	if ((last >> m->line_shift) == line)
		hi = (unsigned)(last & lmask);
	mask = word_mask(lo >> m->word_shift, hi >> m->word_shift);

	if (ev & KS_MT_EV_COLD) {
		f->rt = ((uint64_t)tid << KS_MT_FS_TID_SHIFT) | (write ? 0u : 1u);
		f->writes = write ? 1u : 0u;
		f->rmask = write ? 0 : mask;
		f->wmask = write ? mask : 0;
		f->u.site = site;
		return;
	}
	/* The shared flag is above the tid, so a shared line never matches. */
	if ((f->rt >> KS_MT_FS_TID_SHIFT) != tid) {
		ks_mt_fs_record(m, f, tid, write, mask, site);
		return;
	}
	fs_owner(m, f, write, mask);
}

/* One line of an access: the bitmap method, then false sharing. */
static inline unsigned line_access(struct ks_mt *m, unsigned tid, uintptr_t line,
				   bool write, struct ks_mt_site *site,
				   uintptr_t addr, uintptr_t last)
{
	uintptr_t cidx = line >> m->lc_shift;
	unsigned char *ch;
	struct ks_mt_smu *s;
	uint64_t own;
	unsigned ev;

	if (cidx >= m->tab.l1_n || (ch = ks_mt_tab_direct(&m->tab, cidx)) == NULL) {
		ch = ks_mt_tab_make(&m->tab, cidx);
		if (!ch)
			return 0;
	}
	s = (struct ks_mt_smu *)(void *)(ch + (line & m->lc_mask) * m->smu_size);
	own = ks_mt_own_load(s);
	if (tid < KS_MT_INLINE_TIDS &&
	    (write ? own == (UINT64_C(1) << tid) : (own >> tid) & 1)) {
		/* The hit: nothing changes.  Without min_write the ablation
		 * stores the word anyway, as a naive tool would (an atomic
		 * store, which the compiler keeps although the value is the
		 * one just loaded). */
		ev = 0;
		if (!m->cfg.min_write)
			ks_mt_own_store(s, own);
	} else {
		ev = own_update(m, s, tid, write);
		if (ev & KS_MT_EV_LOST)
			return 0;
	}
	if (m->cfg.falseshare)
		fs_line(m, s, ev, tid, write, site, line, addr, last);
	return ev;
}

/* Counts tid as seen.  Threads of a parallel front-end get here at the
 * same time, for different lines: an atomic maximum. */
static void seen_add(struct ks_mt *m, unsigned tid)
{
	unsigned seen = __atomic_load_n(&m->nseen, __ATOMIC_RELAXED);

	while (tid >= seen &&
	       !__atomic_compare_exchange_n(&m->nseen, &seen, tid + 1, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* A thread's counter block, allocated on its first access. */
static uint64_t *thread_block(struct ks_mt *m, unsigned tid)
{
	uint64_t *b = ks_mt_mem_zalloc64(&m->alloc, &m->bytes, 64);

	if (b)
		m->blk[tid] = b;
	return b;
}

/* A thread's counters (field f at c[f * *st]), its block allocated on
 * its first access, and the thread counted as seen; NULL when out of
 * memory. */
static uint64_t *thread_counters(struct ks_mt *m, unsigned tid, size_t *st)
{
	uint64_t *c;

	if (m->blk) {
		c = m->blk[tid];
		if (!c && !(c = thread_block(m, tid)))
			return NULL;
		*st = 1;
	} else {
		c = m->ileave + tid;
		*st = m->stride;
	}
	seen_add(m, tid);
	return c;
}

void ks_mt_add_hits(struct ks_mt *m, unsigned tid, uint64_t reads, uint64_t writes)
{
	uint64_t *c;
	size_t st;

	if (tid >= m->cfg.max_threads || (reads | writes) == 0)
		return;
	c = thread_counters(m, tid, &st);
	if (!c)
		return;
	c[KS_MT_F_ACC * st] += reads + writes;
	c[KS_MT_F_RD * st] += reads;
	c[KS_MT_F_WR * st] += writes;
}

/* Adds one access and its events to a thread's counters and its site. */
static inline void count(uint64_t *c, size_t st, struct ks_mt_site *site,
			 bool write, unsigned ncold, unsigned nmiss, unsigned ninv)
{
	c[KS_MT_F_ACC * st]++;
	c[(write ? KS_MT_F_WR : KS_MT_F_RD) * st]++;
	if (ncold | nmiss | ninv) {
		c[KS_MT_F_COLD * st] += ncold;
		c[KS_MT_F_MISS * st] += nmiss;
		c[KS_MT_F_INV * st] += ninv;
	}
	if (site) {
		site->c.accesses++;
		if (write)
			site->c.writes++;
		else
			site->c.reads++;
		if (ncold | nmiss | ninv) {
			site->c.cold_misses += ncold;
			site->c.misses += nmiss;
			site->c.invalidations += ninv;
		}
	}
}

/* Every access the hit path of ks_mt_access does not take: several
 * lines, events, a thread's first access, threads >= 63, shared lines.
 * Kept out of line so that the hit path stays small. */
KS_MT_NOINLINE
static unsigned access_general(struct ks_mt *m, unsigned tid, uintptr_t addr,
			       unsigned size, bool write, struct ks_mt_site *site)
{
	uint64_t *c;
	size_t st;
	uintptr_t last, line, lline;
	unsigned ev, evs = 0, ncold = 0, nmiss = 0, ninv = 0;

	c = thread_counters(m, tid, &st);
	if (!c)
		return 0;

	last = addr + (size - 1);
	if (last < addr) /* wraps past the top of the address space */
		last = UINTPTR_MAX;
	line = addr >> m->line_shift;
	lline = last >> m->line_shift;
	for (;;) {
		ev = line_access(m, tid, line, write, site, addr, last);
		if (ev) {
			evs |= ev;
			ncold += ev & KS_MT_EV_COLD;
			nmiss += (ev >> 1) & 1;
			ninv += (ev >> 2) & 1;
		}
		if (line == lline)
			break;
		line++;
	}
	count(c, st, site, write, ncold, nmiss, ninv);
	return evs;
}

/* The hit path: one line, a thread below 63 that already holds the line
 * (alone, for a write) and, with falseshare, is the line's only thread.
 * Nothing changes in the SMU but the first thread's masks and counts. */
unsigned ks_mt_access(struct ks_mt *m, unsigned tid, uintptr_t addr,
		      unsigned size, bool write, struct ks_mt_site *site)
{
	uintptr_t line, cidx, off, lmask;
	unsigned char *ch;
	struct ks_mt_smu *s;
	struct ks_mt_smu_fs *f;
	uint64_t *c, own, mask;
	size_t st;

	/* Outside the contract: dropped rather than corrupting memory. */
	if (tid >= m->cfg.max_threads || size == 0)
		return 0;
	if (tid >= KS_MT_INLINE_TIDS || tid >= __atomic_load_n(&m->nseen, __ATOMIC_RELAXED))
		goto general;
	if (m->blk) {
		c = m->blk[tid];
		if (!c)
			goto general;
		st = 1;
	} else {
		c = m->ileave + tid;
		st = m->stride;
	}
	lmask = ((uintptr_t)1 << m->line_shift) - 1;
	off = addr & lmask;
	if (off + (size - 1) > lmask) /* crosses a line (or wraps) */
		goto general;
	line = addr >> m->line_shift;
	cidx = line >> m->lc_shift;
	if (cidx >= m->tab.l1_n || (ch = ks_mt_tab_direct(&m->tab, cidx)) == NULL)
		goto general;
	s = (struct ks_mt_smu *)(void *)(ch + (line & m->lc_mask) * m->smu_size);
	own = ks_mt_own_load(s);
	if (write ? own != (UINT64_C(1) << tid) : !((own >> tid) & 1))
		goto general;
	if (m->cfg.falseshare) {
		f = (struct ks_mt_smu_fs *)(void *)s;
		/* The shared flag is above the tid: a shared line never
		 * matches. */
		if ((f->rt >> KS_MT_FS_TID_SHIFT) != tid)
			goto general;
		mask = word_mask((unsigned)(off >> m->word_shift),
				 (unsigned)((off + size - 1) >> m->word_shift));
		fs_owner(m, f, write, mask);
	}
	/* Without min_write the ablation stores the word anyway, as a naive
	 * tool would (an atomic store: the compiler keeps it). */
	if (!m->cfg.min_write)
		ks_mt_own_store(s, own);
	count(c, st, site, write, 0, 0, 0);
	return 0;
general:
	return access_general(m, tid, addr, size, write, site);
}

bool ks_mt_quiet(const struct ks_mt *m, unsigned tid, uintptr_t addr, bool write)
{
	uintptr_t line = addr >> m->line_shift;
	const unsigned char *ch;
	const struct ks_mt_smu *s;
	uint64_t own;

	if (tid >= KS_MT_INLINE_TIDS || !m->cfg.min_write ||
	    (ch = ks_mt_tab_get(&m->tab, line >> m->lc_shift)) == NULL)
		return false;
	s = (const struct ks_mt_smu *)(const void *)(ch + (line & m->lc_mask) * m->smu_size);
	own = ks_mt_own_load(s);
	/* With falseshare, holding the line means the thread is its first
	 * thread or has an entry in its detail: ks_mt_add_quiet finds it. */
	return write ? own == (UINT64_C(1) << tid) : ((own >> tid) & 1) != 0;
}

const uint64_t *ks_mt_own_word(const struct ks_mt *m, uintptr_t addr)
{
	uintptr_t line = addr >> m->line_shift;
	const unsigned char *ch = ks_mt_tab_get(&m->tab, line >> m->lc_shift);

	if (!ch)
		return NULL;
	return &((const struct ks_mt_smu *)(const void *)(ch + (line & m->lc_mask) *
							   m->smu_size))->own;
}

void ks_mt_own_map(const struct ks_mt *m, struct ks_mt_own_map *map)
{
	map->l1 = (void *const *)m->tab.l1;
	map->l1_n = m->tab.l1_n;
	map->lc_shift = m->lc_shift;
	map->lc_mask = m->lc_mask;
	map->smu_size = m->smu_size;
}

void ks_mt_add_quiet(struct ks_mt *m, unsigned tid, uintptr_t addr, bool write,
		     struct ks_mt_site *site, uint64_t n, uint64_t words)
{
	uintptr_t line = addr >> m->line_shift;
	unsigned char *ch;
	struct ks_mt_smu_fs *f;
	uint64_t r;

	if (tid >= m->cfg.max_threads || n == 0)
		return;
	ks_mt_add_hits(m, tid, write ? 0 : n, write ? n : 0);
	if (site) {
		site->c.accesses += n;
		if (write)
			site->c.writes += n;
		else
			site->c.reads += n;
	}
	if (!m->cfg.falseshare ||
	    (ch = ks_mt_tab_get(&m->tab, line >> m->lc_shift)) == NULL)
		return;
	f = (struct ks_mt_smu_fs *)(void *)(ch + (line & m->lc_mask) * m->smu_size);
	if (f->rt & KS_MT_FS_SHARED) {
		ks_mt_fs_add(m, f, tid, write, site, n, words);
	} else if ((f->rt >> KS_MT_FS_TID_SHIFT) == tid) {
		if (write) {
			f->wmask |= words;
			f->writes += n;
		} else {
			f->rmask |= words;
			/* The read count saturates, as on the access path. */
			r = (f->rt & KS_MT_FS_READS) + n;
			if (r > KS_MT_FS_READS || r < n)
				r = KS_MT_FS_READS;
			f->rt = (f->rt & ~KS_MT_FS_READS) | r;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Counts                                                              */
/* ------------------------------------------------------------------ */

void ks_mt_thread_counts(const struct ks_mt *m, unsigned tid,
			 struct ks_mt_counts *out)
{
	const uint64_t *c = NULL;
	size_t st = 1;

	if (tid < m->cfg.max_threads) {
		if (m->blk) {
			c = m->blk[tid];
		} else {
			c = m->ileave + tid;
			st = m->stride;
		}
	}
	out->accesses = c ? c[KS_MT_F_ACC * st] : 0;
	out->reads = c ? c[KS_MT_F_RD * st] : 0;
	out->writes = c ? c[KS_MT_F_WR * st] : 0;
	out->cold_misses = c ? c[KS_MT_F_COLD * st] : 0;
	out->misses = c ? c[KS_MT_F_MISS * st] : 0;
	out->invalidations = c ? c[KS_MT_F_INV * st] : 0;
}

void ks_mt_total_counts(const struct ks_mt *m, struct ks_mt_counts *out)
{
	struct ks_mt_counts t;
	unsigned tid;

	out->accesses = out->reads = out->writes = 0;
	out->cold_misses = out->misses = out->invalidations = 0;
	for (tid = 0; tid < ks_mt_threads_seen(m); tid++) {
		ks_mt_thread_counts(m, tid, &t);
		out->accesses += t.accesses;
		out->reads += t.reads;
		out->writes += t.writes;
		out->cold_misses += t.cold_misses;
		out->misses += t.misses;
		out->invalidations += t.invalidations;
	}
}

unsigned ks_mt_threads_seen(const struct ks_mt *m)
{
	return __atomic_load_n(&m->nseen, __ATOMIC_RELAXED);
}

size_t ks_mt_shadow_bytes(const struct ks_mt *m)
{
	return m->bytes;
}

size_t ks_mt_shadow_resident(const struct ks_mt *m)
{
	size_t pages = 0, table = m->tab.l1_n * sizeof(void *);

	for (size_t i = 0; i < m->tab.l1_used_words; i++)
		pages += (size_t)__builtin_popcountll(
			__atomic_load_n(&m->tab.l1_used[i], __ATOMIC_RELAXED));
	return ks_mt_shadow_bytes(m) - table + pages * KS_MT_TAB_PAGE * sizeof(void *);
}

unsigned ks_mt_word_size(const struct ks_mt *m)
{
	return 1u << m->word_shift;
}

struct contended_arg {
	const struct ks_mt *m;
	uint64_t min;
	ks_mt_count_fn fn;
	void *arg;
	size_t n;
};

static void contended_chunk(void *arg, uintptr_t cidx, void *chunk)
{
	struct contended_arg *a = arg;
	const struct ks_mt *m = a->m;
	const unsigned char *p = chunk;

	for (uintptr_t i = 0; i <= m->lc_mask; i++, p += m->smu_size) {
		const struct ks_mt_smu *s = (const struct ks_mt_smu *)(const void *)p;
		uint64_t misses = __atomic_load_n(&s->misses, __ATOMIC_RELAXED);
		uint64_t invals = __atomic_load_n(&s->invals, __ATOMIC_RELAXED);

		if (!misses && !invals)
			continue;
		if (misses + invals < a->min)
			continue;
		a->n++;
		if (a->fn)
			a->fn(a->arg, ((cidx << m->lc_shift) | i) << m->line_shift, misses, invals);
	}
}

size_t ks_mt_for_each_contended_line(const struct ks_mt *m, uint64_t min, ks_mt_count_fn fn,
				     void *arg)
{
	struct contended_arg a = { .m = m, .min = min ? min : 1, .fn = fn, .arg = arg };

	ks_mt_tab_for_each(&m->tab, contended_chunk, &a);
	return a.n;
}
