/*
 * kscope memcheck --heap-map: which live heap block lay nearest to an
 * invalid access that Memcheck related to no block, as the heap was at
 * the moment of the access.
 *
 * libkscope-mcheap.so logged every change of the process image's heap
 * (heapmap.<pid>.log) and put markers into Memcheck's XML, in order with
 * its errors (src/memtools/mcexec/mcheap.h); mcx_read.c keeps the markers
 * with the document.  An error belongs to the first marker after it,
 * which names the point of the log it happened at; errors after the last
 * marker happened with the heap as the whole log leaves it.  The log is
 * replayed once, from the start, into an ordered set of live blocks (a
 * treap keyed by address), and each error's question is answered when
 * the replay reaches its point: the live block at or below the address
 * and the one above it, each if it is within KS_MCX_NEAR_MAX.
 *
 * A marker of phase "d" says that its errors happened while one thread's
 * allocation call was under way: an error of that thread happened before
 * the call's change (Memcheck checks a call before acting on it), one of
 * another thread before or after it.  Such an error is answered with both
 * heaps; when they differ the answer is "not known", never a guess.  So
 * is every question the log cannot answer (cut short, damaged, or the
 * error came before the log began), with the reason.
 *
 * The file is read through a read-only mapping and checked record by
 * record as the replay goes (mcheap.h's check values, event numbers that
 * only grow by one): what follows a bad record is not trusted.
 */
#include "mcxml.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcheap.h"

struct ks_mcx_heapmap {
	const struct ks_mcheap_rec *recs;  /* after the header */
	size_t nrecs;
	void *map;                         /* the file's mapping, or NULL (a buffer) */
	size_t map_size;
	long long pid;                     /* from the header */
};

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

static int heapmap_init(struct ks_mcx_heapmap *h, const void *data, size_t size,
			const char *name, struct ks_err *err)
{
	const struct ks_mcheap_rec *head = data;

	if (size < sizeof(*head) || head->type != KS_MCHEAP_HEADER || head->seq != 0 ||
	    head->caller != KS_MCHEAP_MAGIC64 || head->check != ks_mcheap_check(head))
		return ks_err_set(err, -EBADMSG, "%s: not a heap map log of kscope memcheck",
				  name);
	if (head->size != KS_MCHEAP_VERSION)
		return ks_err_set(err, -EBADMSG, "%s: heap map log version %" PRIu64 "; this "
				  "kscope reads version %d", name, head->size, KS_MCHEAP_VERSION);
	h->pid = (long long)head->addr;
	h->recs = head + 1;
	h->nrecs = size / sizeof(*head) - 1;
	return 0;
}

int ks_mcx_heapmap_open(struct ks_mcx_heapmap **out, const char *path, struct ks_err *err)
{
	struct ks_mcx_heapmap *h = calloc(1, sizeof(*h));
	struct stat st;
	int fd = -1, rc;

	*out = NULL;
	if (!h)
		return ks_err_set(err, -ENOMEM, "out of memory");
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st)) {
		rc = ks_err_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	if (st.st_size < (off_t)sizeof(struct ks_mcheap_rec)) {
		rc = ks_err_set(err, -EBADMSG, "%s: not a heap map log of kscope memcheck "
				"(%lld bytes)", path, (long long)st.st_size);
		goto out;
	}
	h->map_size = (size_t)st.st_size;
	h->map = mmap(NULL, h->map_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (h->map == MAP_FAILED) {
		h->map = NULL;
		rc = ks_err_set(err, -errno, "cannot map %s: %s", path, strerror(errno));
		goto out;
	}
	rc = heapmap_init(h, h->map, h->map_size, path, err);
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		ks_mcx_heapmap_free(h);
	else
		*out = h;
	return rc;
}

int ks_mcx_heapmap_mem(struct ks_mcx_heapmap **out, const void *data, size_t size,
		       struct ks_err *err)
{
	struct ks_mcx_heapmap *h = calloc(1, sizeof(*h));
	int rc;

	*out = NULL;
	if (!h)
		return ks_err_set(err, -ENOMEM, "out of memory");
	/* The records are read in place: the buffer must hold them aligned. */
	if ((uintptr_t)data % _Alignof(struct ks_mcheap_rec)) {
		free(h);
		return ks_err_set(err, -EINVAL, "the heap map buffer is not aligned");
	}
	rc = heapmap_init(h, data, size, "the heap map", err);
	if (rc)
		free(h);
	else
		*out = h;
	return rc;
}

void ks_mcx_heapmap_free(struct ks_mcx_heapmap *h)
{
	if (!h)
		return;
	if (h->map)
		munmap(h->map, h->map_size);
	free(h);
}

long long ks_mcx_heapmap_pid(const struct ks_mcx_heapmap *h)
{
	return h->pid;
}

const char *ks_mcx_heapmap_fn_name(int fn)
{
	static const char *const names[KS_MCHEAP_NFN] = {
		[KS_MCHEAP_MALLOC] = "malloc",
		[KS_MCHEAP_CALLOC] = "calloc",
		[KS_MCHEAP_REALLOC] = "realloc",
		[KS_MCHEAP_REALLOCARRAY] = "reallocarray",
		[KS_MCHEAP_MEMALIGN] = "memalign",
		[KS_MCHEAP_POSIX_MEMALIGN] = "posix_memalign",
		[KS_MCHEAP_ALIGNED_ALLOC] = "aligned_alloc",
		[KS_MCHEAP_VALLOC] = "valloc",
		[KS_MCHEAP_PVALLOC] = "pvalloc",
		[KS_MCHEAP_FREE_FN] = "free",
		[KS_MCHEAP_NEW] = "operator new",
		[KS_MCHEAP_NEW_ARRAY] = "operator new[]",
		[KS_MCHEAP_DELETE] = "operator delete",
		[KS_MCHEAP_DELETE_ARRAY] = "operator delete[]",
	};

	return fn >= 0 && fn < KS_MCHEAP_NFN && names[fn] ? names[fn] : "an allocation function";
}

/* Why a LOST record stops the log, for the reports. */
static void lost_why(const struct ks_mcheap_rec *r, char *buf, size_t size)
{
	static const char *const names[] = {
#define NAME_STR(name) #name,
		KS_MCHEAP_NAMES(NAME_STR)
#undef NAME_STR
	};

	switch (r->fn) {
	case KS_MCHEAP_LOST_OWN:
		snprintf(buf, size, "the program has an allocation function of its own (%s), "
			 "whose blocks the heap map does not see",
			 r->size < sizeof(names) / sizeof(names[0]) ? names[r->size] : "?");
		break;
	case KS_MCHEAP_LOST_EARLY:
		snprintf(buf, size, "the program allocated too much before the heap map "
			 "began");
		break;
	default:
		snprintf(buf, size, "the heap map log stops at event %" PRIu64 " (its file "
			 "could not grow)", r->seq);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Which errors ask                                                    */
/* ------------------------------------------------------------------ */

bool ks_mcx_error_unrelated(const struct ks_mcx_error *e, uint64_t *addr)
{
	static const char arena[] = " in arena \"client\"";
	const char *a = e->naux ? e->aux[0].what : NULL;
	size_t n = a ? strlen(a) : 0;
	char *end;

	if (!a || strncmp(a, "Address 0x", 10) || !e->kind || !strcmp(e->kind, "InvalidJump"))
		return false;
	*addr = strtoull(a + 8, &end, 16);
	/* The first 64 KiB are never mapped: a null pointer, not a heap
	 * overflow. */
	if (*addr < 0x10000 || strncmp(end, " is ", 4))
		return false;
	return !strncmp(end, " is not stack'd, malloc'd or ", 29) ||
	       (n > sizeof(arena) - 1 && !strcmp(a + n - (sizeof(arena) - 1), arena));
}

/* ------------------------------------------------------------------ */
/* The live blocks: a treap ordered by address                         */
/* ------------------------------------------------------------------ */

/* Written here rather than taken from a library: kscope depends on no
 * container library, and the replay needs only insert, delete and the
 * neighbours of an address (docs/architecture.md). */
struct node {
	struct ks_mcx_block b;
	uint32_t prio;
	uint32_t left, right;   /* NIL: none */
};

#define NIL UINT32_MAX

struct live {
	struct node *v;
	size_t n, cap;
	uint32_t root, free_list;   /* free nodes are chained through left */
	uint32_t rng;
};

static uint32_t live_rand(struct live *l)
{
	/* xorshift32: the priorities only need to look random */
	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 17;
	l->rng ^= l->rng << 5;
	return l->rng;
}

static uint32_t node_new(struct live *l, const struct ks_mcx_block *b)
{
	uint32_t i;

	if (l->free_list != NIL) {
		i = l->free_list;
		l->free_list = l->v[i].left;
	} else {
		if (l->n == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 1024;
			struct node *v;

			if (cap >= NIL || !(v = realloc(l->v, cap * sizeof(*v))))
				return NIL;
			l->v = v;
			l->cap = cap;
		}
		i = (uint32_t)l->n++;
	}
	l->v[i].b = *b;
	l->v[i].prio = live_rand(l);
	l->v[i].left = l->v[i].right = NIL;
	return i;
}

/* Splits the tree t into keys < addr (*lo) and keys >= addr (*hi). */
static void split(struct live *l, uint32_t t, uint64_t addr, uint32_t *lo, uint32_t *hi)
{
	/* Iterative: a tree of a million blocks may be deep enough for the
	 * stack to matter if its priorities were unlucky. */
	uint32_t *pl = lo, *ph = hi;

	while (t != NIL) {
		if (l->v[t].b.addr < addr) {
			*pl = t;
			pl = &l->v[t].right;
			t = l->v[t].right;
		} else {
			*ph = t;
			ph = &l->v[t].left;
			t = l->v[t].left;
		}
	}
	*pl = *ph = NIL;
}

/* Joins a and b, every key of a below every key of b. */
static uint32_t merge(struct live *l, uint32_t a, uint32_t b)
{
	uint32_t root = NIL, *link = &root;

	while (a != NIL && b != NIL) {
		if (l->v[a].prio > l->v[b].prio) {
			*link = a;
			link = &l->v[a].right;
			a = l->v[a].right;
		} else {
			*link = b;
			link = &l->v[b].left;
			b = l->v[b].left;
		}
	}
	*link = a != NIL ? a : b;
	return root;
}

/* Removes the block at addr, if one is live there. */
static void live_remove(struct live *l, uint64_t addr)
{
	uint32_t lo, mid, hi;

	split(l, l->root, addr, &lo, &mid);
	split(l, mid, addr + 1, &mid, &hi);
	if (mid != NIL) {
		/* one key per address: mid is a single node */
		l->v[mid].left = l->free_list;
		l->free_list = mid;
	}
	l->root = merge(l, lo, hi);
}

/* Adds b (a block already live at its address is replaced). */
static int live_add(struct live *l, const struct ks_mcx_block *b)
{
	uint32_t lo, hi, i;

	live_remove(l, b->addr);
	if ((i = node_new(l, b)) == NIL)
		return -ENOMEM;
	split(l, l->root, b->addr, &lo, &hi);
	l->root = merge(l, merge(l, lo, i), hi);
	return 0;
}

/* The live block with the greatest address <= a (below) and the one with
 * the least address > a (above), or NULL. */
static void live_around(const struct live *l, uint64_t a, const struct ks_mcx_block **below,
			const struct ks_mcx_block **above)
{
	uint32_t t = l->root;

	*below = *above = NULL;
	while (t != NIL) {
		if (l->v[t].b.addr <= a) {
			*below = &l->v[t].b;
			t = l->v[t].right;
		} else {
			*above = &l->v[t].b;
			t = l->v[t].left;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Questions and the replay                                            */
/* ------------------------------------------------------------------ */

/* One error's question: the heap after the events before seq (after:
 * up to seq included), or at the log's end (seq UINT64_MAX). */
struct question {
	size_t error;
	uint64_t addr;
	uint64_t seq;
	bool after;
	/* The second half of an ambiguous question (after = true) and its
	 * first (after = false) are answered apart, then compared. */
	bool ambiguous;
	struct ks_mcx_near ans;
};

static int cmp_question(const void *pa, const void *pb)
{
	const struct question *a = pa, *b = pb;

	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	if (a->after != b->after)
		return a->after ? 1 : -1;
	return a->error < b->error ? -1 : a->error > b->error;
}

static int cmp_error(const void *pa, const void *pb)
{
	const struct question *a = pa, *b = pb;

	if (a->error != b->error)
		return a->error < b->error ? -1 : 1;
	return a->after - b->after;
}

static void answer(const struct live *l, struct question *q)
{
	const struct ks_mcx_block *below, *above;

	live_around(l, q->addr, &below, &above);
	memset(&q->ans, 0, sizeof(q->ans));
	if (below && (q->addr - below->addr < below->size ||
		      q->addr - below->addr - below->size <= KS_MCX_NEAR_MAX))
		q->ans.below = *below;
	/* Inside a live block (Memcheck said otherwise: a client request
	 * made part of it unaddressable), that block is the answer. */
	if (above && !(below && q->addr - below->addr < below->size) &&
	    above->addr - q->addr <= KS_MCX_NEAR_MAX)
		q->ans.above = *above;
	q->ans.status = q->ans.below.present || q->ans.above.present ? MCX_NEAR_FOUND
								     : MCX_NEAR_NOTHING;
}

static void unknown(struct question *q, const char *why)
{
	memset(&q->ans, 0, sizeof(q->ans));
	q->ans.status = MCX_NEAR_UNKNOWN;
	snprintf(q->ans.why, sizeof(q->ans.why), "%s", why);
}

/* The questions of d: one per error that asks (two for an ambiguous
 * one), with the point of the log its marker names.  *n of them. */
static int questions(const struct ks_mcx_doc *d, struct question **out, size_t *n)
{
	struct question *v = calloc(2 * (d->nerrors ? d->nerrors : 1), sizeof(*v));
	size_t k = 0, m = 0;

	*out = NULL;
	*n = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < d->nerrors; i++) {
		const struct ks_mcx_error *e = &d->errors[i];
		const struct ks_mcx_hmark *mk;
		uint64_t addr;

		if (!ks_mcx_error_unrelated(e, &addr))
			continue;
		while (m < d->nhmarks && d->hmarks[m].nerrors <= i)
			m++;
		mk = m < d->nhmarks ? &d->hmarks[m] : NULL;
		v[k] = (struct question){ .error = i, .addr = addr,
					  .seq = mk ? mk->seq : UINT64_MAX };
		if (mk && mk->phase == 'u') {
			unknown(&v[k], "the error happened before the heap map began (while the "
				"program was being loaded)");
			v[k].seq = 0; /* answered already: kept out of the replay */
		} else if (mk && mk->phase == 'd' && e->tid != mk->tid) {
			v[k].ambiguous = true;
			v[k + 1] = v[k];
			v[++k].after = true;
		}
		k++;
	}
	*out = v;
	*n = k;
	return 0;
}

/* Whether two answers name the same blocks. */
static bool same_answer(const struct ks_mcx_near *a, const struct ks_mcx_near *b)
{
	return a->status == b->status && a->below.present == b->below.present &&
	       a->above.present == b->above.present &&
	       (!a->below.present || a->below.addr == b->below.addr) &&
	       (!a->above.present || a->above.addr == b->above.addr);
}

int ks_mcx_heapmap_near(const struct ks_mcx_heapmap *h, const struct ks_mcx_doc *d,
			struct ks_mcx_near *near, struct ks_err *err)
{
	struct live l = { .root = NIL, .free_list = NIL, .rng = 2463534242u };
	struct question *q = NULL;
	size_t nq = 0, next = 0;
	uint64_t prev = 0, nalloc = 0;
	char why[160] = "";
	int rc;

	memset(near, 0, d->nerrors * sizeof(*near));
	if ((rc = questions(d, &q, &nq)))
		return ks_err_set(err, rc, "out of memory");
	if (!h) {
		for (size_t i = 0; i < nq; i++)
			if (q[i].ans.status != MCX_NEAR_UNKNOWN)
				unknown(&q[i], "kscope has no heap map of this process image "
					"(libkscope-mcheap.so did not run in it)");
		next = nq;
		goto done;
	}
	qsort(q, nq, sizeof(*q), cmp_question);
	/* Questions answered already (before the log began) sort first. */
	while (next < nq && q[next].ans.status == MCX_NEAR_UNKNOWN)
		next++;
	for (size_t i = 0; i < h->nrecs; i++) {
		const struct ks_mcheap_rec *r = &h->recs[i];
		struct ks_mcx_block b;
		bool last;

		if (r->seq == 0 && r->type == 0)
			break; /* the end of what was written */
		/* A chunk's last slot (the file's record i + 1) holds NEXT or
		 * LOST, no other does NEXT. */
		last = (i + 2) % KS_MCHEAP_CHUNK_RECS == 0;
		if (r->check != ks_mcheap_check(r) || r->seq < prev || r->seq > prev + 1 ||
		    r->seq == 0 ||
		    (last ? r->type != KS_MCHEAP_NEXT && r->type != KS_MCHEAP_LOST
			  : r->type == KS_MCHEAP_NEXT)) {
			snprintf(why, sizeof(why), "the heap map log is damaged after event %" PRIu64,
				 prev);
			break;
		}
		/* A log lost from its start because the program has its own
		 * allocator, or allocated too much before it began, never held
		 * the whole heap: nothing is answered from it. */
		if (r->type == KS_MCHEAP_LOST && r->fn != KS_MCHEAP_LOST_FULL) {
			lost_why(r, why, sizeof(why));
			break;
		}
		/* Every question about the heap before this record's event
		 * (or, after: up to the event before it) is answered now. */
		while (next < nq && (q[next].after ? q[next].seq < r->seq : q[next].seq <= r->seq))
			answer(&l, &q[next++]);
		if (r->type == KS_MCHEAP_LOST) {
			lost_why(r, why, sizeof(why));
			break;
		}
		if (r->type == KS_MCHEAP_NEXT)
			continue;
		prev = r->seq;
		switch (r->type) {
		case KS_MCHEAP_ALLOC:
			b = (struct ks_mcx_block){ .present = true, .addr = KS_MCHEAP_HIDE(r->addr),
						   .size = r->size,
						   .alloc_no = ++nalloc, .caller = r->caller,
						   .fn = r->fn };
			if (live_add(&l, &b)) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			break;
		case KS_MCHEAP_FREE:
			live_remove(&l, KS_MCHEAP_HIDE(r->addr));
			break;
		default:
			snprintf(why, sizeof(why), "the heap map log is damaged after event %" PRIu64,
				 prev);
			goto cut;
		}
	}
cut:
	/* At the end of a whole log: the questions about the heap at its
	 * end, or after the last event; the others cannot be answered. */
	for (; next < nq; next++) {
		if (!why[0] && (q[next].seq == UINT64_MAX || q[next].seq <= prev + 1))
			answer(&l, &q[next]);
		else
			unknown(&q[next], why[0] ? why : "the heap map log ends before the error");
	}
done:
	/* Back in the errors' order, an ambiguous question's halves side by
	 * side (the one before the call first). */
	qsort(q, nq, sizeof(*q), cmp_error);
	for (size_t i = 0; i < nq; i++) {
		struct ks_mcx_near *dst = &near[q[i].error];
		const struct question *other = q[i].ambiguous && i + 1 < nq ? &q[i + 1] : NULL;

		*dst = q[i].ans;
		if (!q[i].ambiguous)
			continue;
		i++; /* the second half */
		if (dst->status == MCX_NEAR_UNKNOWN || !other)
			continue;
		if (other->ans.status == MCX_NEAR_UNKNOWN) {
			*dst = other->ans;
		} else if (!same_answer(dst, &other->ans)) {
			memset(dst, 0, sizeof(*dst));
			dst->status = MCX_NEAR_UNKNOWN;
			snprintf(dst->why, sizeof(dst->why), "another thread's allocation call "
				 "(event %" PRIu64 ") changed the heap at the moment of the error",
				 other->seq);
		}
	}
	rc = 0;
out:
	free(q);
	free(l.v);
	return rc;
}
