/*
 * What each instruction waits for (docs/predict.md, "Readiness"): one pass
 * over the instructions in program order, keeping per tensor its latest
 * writer and its readers since, gives every read-after-write,
 * write-after-read and write-after-write hazard between tensors that
 * overlap (a tensor, its ancestors, its pieces, and pieces of another
 * split of the same tensor when their boxes meet); set_flag/wait_flag
 * pairs are matched per (source pipe, destination pipe, event).  Each
 * instruction keeps at most one dependency per pipe, the latest in that
 * pipe's queue: a pipe runs its queue in order, so the others are implied.
 * The result goes to m->dep and m->dstart, for the scheduler (sched.c),
 * the deadlock message and the trace's flow arrows.
 *
 * Why hazards on boxes: a tensor is a box of its root tensor, the splits
 * say which.  A write to a piece overlaps its parent and not its sibling;
 * a write to the parent overlaps every piece.  The traversal from the root
 * visits only the pieces whose box meets the accessed one (an index range
 * per split, not a scan) and skips subtrees whose latest access comes
 * before the latest write that covers the accessed tensor: that write
 * waited for them already, and so does whatever waits for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pred_int.h"

/* A reader of a tensor since its last write: the latest on one pipe. */
struct reader {
	int32_t id;            /* the latest reader on pipe */
	int32_t stamp;         /* when it read, in program order (see below) */
	int32_t next;
	int32_t pipe;
};

/* A read that waits for a later writer (docs/predict.md: "Otherwise, the
 * first later writer"): it reads that writer's data, so for the hazards it
 * happens just after that writer, not where it stands. */
struct deferred {
	int32_t id, tensor, next;
};

struct frame {
	int32_t t;
	int64_t lo[KS_PRED_MAX_DIMS]; /* its box's corner in its root */
};

struct deps {
	struct ks_pred_model *m;
	/* per tensor */
	int32_t *lw;           /* latest writer so far, PRED_NONE */
	int32_t *stamp;        /* latest access to it or a piece of it, -1 */
	int32_t *rhead;        /* its readers since its last write */
	uint8_t *cov;          /* wholly written so far */
	int32_t *ncov;         /* per split: pieces wholly written */
	struct reader *r;
	size_t nr, capr;
	int32_t *dhead;        /* per instruction: deferred reads after it */
	struct deferred *d;
	size_t nd, capd;
	struct frame *stack;
	size_t capstack;
	/* the instruction being done: one candidate per pipe, and one that
	 * never comes */
	struct pred_dep cand[PRED_MAX_PIPES];
	struct pred_dep never;
	int32_t cur, cur_pipe;
	size_t ndep, capdep;
};

/* ------------------------------------------------------------------ */
/* Candidates                                                          */
/* ------------------------------------------------------------------ */

static void cand_add(struct deps *d, int32_t id, int32_t what, uint8_t kind)
{
	const struct ks_pred_model *m = d->m;
	int p;

	if (id == PRED_NEVER) {
		if (d->never.id != PRED_NEVER)
			d->never = (struct pred_dep){ PRED_NEVER, what, kind };
		return;
	}
	if (id < 0 || id == d->cur)
		return;
	p = m->in[id].pipe;
	/* Earlier on its own pipe: the queue's order says it already. */
	if (p == d->cur_pipe && id < d->cur)
		return;
	if (d->cand[p].id < 0 || id > d->cand[p].id)
		d->cand[p] = (struct pred_dep){ id, what, kind };
}

/* ------------------------------------------------------------------ */
/* Tensors as boxes                                                    */
/* ------------------------------------------------------------------ */

static int root_of(const struct ks_pred_model *m, int t, int64_t *lo)
{
	const struct pred_tensor *x = &m->t[t];

	if (lo)
		memset(lo, 0, sizeof(int64_t) * KS_PRED_MAX_DIMS);
	while (x->parent >= 0) {
		const struct pred_split *s = &m->splits[x->piece_of];

		if (lo)
			lo[s->axis] += (int64_t)(t - s->first) * s->chunk;
		t = x->parent;
		x = &m->t[t];
	}
	return t;
}

/* The latest write to t or an ancestor: it covers t. */
static int32_t covering_writer(const struct deps *d, int t)
{
	int32_t c = PRED_NONE;

	for (; t >= 0; t = d->m->t[t].parent)
		if (d->lw[t] > c)
			c = d->lw[t];
	return c;
}

static bool covered(const struct deps *d, int t)
{
	const struct ks_pred_model *m = d->m;

	for (; t >= 0; t = m->t[t].parent) {
		if (d->cov[t])
			return true;
		if (m->t[t].parent < 0 && m->chip.spaces[m->t[t].space].ready)
			return true;
	}
	return false;
}

/* Visits every tensor whose box meets t's and that was accessed at or
 * after floor: its latest writer goes in as kind wkind, and, when readers
 * is set, its readers as DEP_WAR. */
static int visit(struct deps *d, int t, int32_t floor, uint8_t wkind, bool readers)
{
	const struct ks_pred_model *m = d->m;
	int64_t lo[KS_PRED_MAX_DIMS], hi[KS_PRED_MAX_DIMS];
	size_t sp = 0;
	int root;

	if (floor < 0)
		floor = 0;
	/* Most tensors are never split: only their own state counts. */
	if (m->t[t].parent < 0 && m->t[t].splits < 0) {
		if (d->lw[t] >= floor)
			cand_add(d, d->lw[t], t, wkind);
		if (readers)
			for (int32_t r = d->rhead[t]; r >= 0; r = d->r[r].next)
				if (d->r[r].stamp >= floor)
					cand_add(d, d->r[r].id, t, DEP_WAR);
		return 0;
	}
	root = root_of(m, t, lo);
	for (int k = 0; k < m->t[t].ndim; k++)
		hi[k] = lo[k] + m->t[t].shape[k];
	if (!pred_grow((void **)&d->stack, &d->capstack, 1, sizeof(*d->stack)))
		return -ENOMEM;
	d->stack[sp].t = root;
	memset(d->stack[sp].lo, 0, sizeof(d->stack[sp].lo));
	sp++;
	while (sp) {
		struct frame f = d->stack[--sp];
		const struct pred_tensor *x = &m->t[f.t];

		if (d->lw[f.t] >= floor)
			cand_add(d, d->lw[f.t], t, wkind);
		if (readers)
			for (int32_t r = d->rhead[f.t]; r >= 0; r = d->r[r].next)
				if (d->r[r].stamp >= floor)
					cand_add(d, d->r[r].id, t, DEP_WAR);
		for (int32_t si = x->splits; si >= 0; si = m->splits[si].next) {
			const struct pred_split *s = &m->splits[si];
			int a = s->axis;
			int64_t from = lo[a] - f.lo[a], to = hi[a] - f.lo[a];
			int64_t k0, k1;

			if (from < 0)
				from = 0;
			if (to > x->shape[a])
				to = x->shape[a];
			if (from >= to)
				continue;
			k0 = from / s->chunk;
			k1 = (to - 1) / s->chunk;
			if (k1 > s->parts - 1)
				k1 = s->parts - 1;
			for (int64_t k = k0; k <= k1; k++) {
				int32_t p = s->first + (int32_t)k;

				if (d->stamp[p] < floor)
					continue;
				if (!pred_grow((void **)&d->stack, &d->capstack, sp + 1,
					      sizeof(*d->stack)))
					return -ENOMEM;
				d->stack[sp].t = p;
				memcpy(d->stack[sp].lo, f.lo, sizeof(f.lo));
				d->stack[sp].lo[a] += k * s->chunk;
				sp++;
			}
		}
	}
	return 0;
}

static void touch(struct deps *d, int t, int32_t stamp)
{
	for (; t >= 0; t = d->m->t[t].parent)
		if (d->stamp[t] < stamp)
			d->stamp[t] = stamp;
}

static int add_reader(struct deps *d, int t, int32_t id, int32_t stamp)
{
	int32_t pipe = d->m->in[id].pipe;

	touch(d, t, stamp);
	for (int32_t r = d->rhead[t]; r >= 0; r = d->r[r].next)
		if (d->r[r].pipe == pipe) {
			if (id > d->r[r].id)
				d->r[r].id = id;
			if (stamp > d->r[r].stamp)
				d->r[r].stamp = stamp;
			return 0;
		}
	if (!pred_grow((void **)&d->r, &d->capr, d->nr + 1, sizeof(*d->r)))
		return -ENOMEM;
	d->r[d->nr] = (struct reader){ id, stamp, d->rhead[t], pipe };
	d->rhead[t] = (int32_t)d->nr++;
	return 0;
}

static void add_write(struct deps *d, int t, int32_t id)
{
	const struct ks_pred_model *m = d->m;

	d->lw[t] = id;
	/* Its readers so far are this write's to wait for; later writers wait
	 * for this one. */
	d->rhead[t] = PRED_NONE;
	touch(d, t, id);
	/* Wholly written: so is a parent whose pieces of one split all are. */
	while (!d->cov[t]) {
		const struct pred_split *s;

		d->cov[t] = 1;
		if (m->t[t].parent < 0)
			break;
		s = &m->splits[m->t[t].piece_of];
		if (++d->ncov[m->t[t].piece_of] < s->parts)
			break;
		t = s->parent;
	}
}

/* ------------------------------------------------------------------ */
/* Reads that wait for a later writer                                  */
/* ------------------------------------------------------------------ */

int32_t pred_first_writer_after(const struct ks_pred_model *m, int t, int32_t id)
{
	int32_t best = PRED_NEVER;

	for (; t >= 0; t = m->t[t].parent)
		for (int32_t w = m->t[t].writers; w >= 0; w = m->wnext[w])
			if (m->wid[w] > id && (best == PRED_NEVER || m->wid[w] < best))
				best = m->wid[w];
	return best;
}

/* t is not wholly written before id: it waits for the first later writer
 * of t or an ancestor; failing that, for the first later writer of each
 * piece of one of t's splits not yet written (a read of a buffer before
 * the loads into its pieces).  Returns the latest of them, PRED_NEVER
 * (given as a candidate) when nothing will write it. */
static int32_t forward(struct deps *d, int t)
{
	const struct ks_pred_model *m = d->m;
	int32_t f = pred_first_writer_after(m, t, d->cur);

	if (f != PRED_NEVER) {
		cand_add(d, f, t, DEP_RAW);
		return f;
	}
	for (int32_t si = m->t[t].splits; si >= 0; si = m->splits[si].next) {
		const struct pred_split *s = &m->splits[si];
		int32_t latest = PRED_NONE, k;

		for (k = 0; k < s->parts; k++) {
			int32_t p = s->first + k, w;

			if (d->cov[p])
				continue;
			w = pred_first_writer_after(m, p, d->cur);
			if (w == PRED_NEVER)
				break;
			if (w > latest)
				latest = w;
		}
		if (k < s->parts)
			continue;
		for (k = 0; k < s->parts; k++)
			if (!d->cov[s->first + k])
				cand_add(d, pred_first_writer_after(m, s->first + k, d->cur),
					 t, DEP_RAW);
		return latest;
	}
	cand_add(d, PRED_NEVER, t, DEP_RAW);
	return PRED_NEVER;
}

static int defer_read(struct deps *d, int32_t after, int t)
{
	size_t ni = d->m->ni;

	if (!d->dhead) {
		d->dhead = malloc(ni * sizeof(*d->dhead));
		if (!d->dhead)
			return -ENOMEM;
		for (size_t i = 0; i < ni; i++)
			d->dhead[i] = PRED_NONE;
	}
	if (!pred_grow((void **)&d->d, &d->capd, d->nd + 1, sizeof(*d->d)))
		return -ENOMEM;
	d->d[d->nd] = (struct deferred){ d->cur, t, d->dhead[after] };
	d->dhead[after] = (int32_t)d->nd++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Flags                                                               */
/* ------------------------------------------------------------------ */

struct flag_ent {
	uint64_t key;          /* (event, source pipe, destination pipe) */
	int32_t id;
};

static uint64_t flag_key(const struct pred_instr *in)
{
	int set = in->op == OP_SET_FLAG;
	uint64_t src = set ? (uint64_t)in->pipe : (uint64_t)(in->flag % PRED_MAX_PIPES);
	uint64_t dst = set ? (uint64_t)(in->flag % PRED_MAX_PIPES) : (uint64_t)in->pipe;

	return ((uint64_t)(in->flag / PRED_MAX_PIPES) * PRED_MAX_PIPES + src) * PRED_MAX_PIPES +
	       dst;
}

static int flag_cmp(const void *a, const void *b)
{
	const struct flag_ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* match[w] for each wait_flag w: the set_flag it waits for, PRED_NEVER
 * when there is none.  The k-th wait on (source, destination, event) in
 * program order waits for the k-th set on it.  Sets left over are
 * warned about. */
static int match_flags(struct ks_pred_model *m, int32_t **match_out)
{
	struct flag_ent *f = NULL;
	int32_t *match = NULL;
	size_t n = 0;

	*match_out = NULL;
	for (size_t i = 0; i < m->ni; i++)
		n += m->in[i].flag >= 0;
	if (!n)
		return 0;
	f = malloc(n * sizeof(*f));
	match = malloc(m->ni * sizeof(*match));
	if (!f || !match) {
		free(f);
		free(match);
		return -ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < m->ni; i++)
		if (m->in[i].flag >= 0)
			f[n++] = (struct flag_ent){ flag_key(&m->in[i]), (int32_t)i };
	qsort(f, n, sizeof(*f), flag_cmp);
	for (size_t g = 0; g < n;) {
		size_t e = g, ns = 0, nw = 0, si = g;

		while (e < n && f[e].key == f[g].key)
			e++;
		for (size_t k = g; k < e; k++) {
			if (m->in[f[k].id].op == OP_SET_FLAG) {
				ns++;
				continue;
			}
			nw++;
			/* the next set not yet taken */
			while (si < e && m->in[f[si].id].op != OP_SET_FLAG)
				si++;
			match[f[k].id] = si < e ? f[si++].id : PRED_NEVER;
		}
		if (ns > nw) {
			const struct pred_instr *in = &m->in[f[g].id];
			int set = in->op == OP_SET_FLAG;
			int src = set ? in->pipe : in->flag % PRED_MAX_PIPES;
			int dst = set ? in->flag % PRED_MAX_PIPES : in->pipe;

			pred_warn(m, "set_flag(%s, %s, %d) is set %zu time%s but waited for %zu "
				  "time%s: the sets left over order nothing", m->chip.pipes[src],
				  m->chip.pipes[dst], in->flag / PRED_MAX_PIPES, ns,
				  ns == 1 ? "" : "s", nw, nw == 1 ? "" : "s");
		}
		g = e;
	}
	free(f);
	*match_out = match;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The pass                                                            */
/* ------------------------------------------------------------------ */

static int emit(struct deps *d)
{
	struct ks_pred_model *m = d->m;
	size_t need = d->ndep + (size_t)m->chip.npipes + 1;

	if (!pred_grow((void **)&m->dep, &d->capdep, need, sizeof(*m->dep)))
		return -ENOMEM;
	if (d->never.id == PRED_NEVER)
		m->dep[d->ndep++] = d->never;
	for (size_t p = 0; p < m->chip.npipes; p++)
		if (d->cand[p].id >= 0)
			m->dep[d->ndep++] = d->cand[p];
	if (d->ndep > UINT32_MAX)
		return -E2BIG;
	m->dstart[d->cur + 1] = (uint32_t)d->ndep;
	return 0;
}

static int pass(struct deps *d, const int32_t *match)
{
	struct ks_pred_model *m = d->m;
	int rc;

	for (size_t i = 0; i < m->ni; i++) {
		const struct pred_instr *in = &m->in[i];
		/* NULL when no instruction has operands (scalar work only) */
		const int32_t *ops = m->operands ? m->operands + in->operand : NULL;

		d->cur = (int32_t)i;
		d->cur_pipe = in->pipe;
		d->never.id = PRED_NONE;
		for (size_t p = 0; p < m->chip.npipes; p++)
			d->cand[p].id = PRED_NONE;
		if (in->op == OP_WAIT_FLAG)
			cand_add(d, match[i], (int32_t)i, DEP_FLAG);
		/* Reads: the latest writers of what overlaps, at or after the
		 * write that covers it, which is one of them. */
		for (unsigned k = 0; k < in->nin; k++)
			if ((rc = visit(d, ops[k], covering_writer(d, ops[k]), DEP_RAW, false)))
				return rc;
		/* Writes: those and the readers since. */
		for (unsigned k = in->nin; k < (unsigned)in->nin + in->nout; k++)
			if ((rc = visit(d, ops[k], covering_writer(d, ops[k]), DEP_WAW, true)))
				return rc;
		/* Reads of what nothing before wrote wholly: a later writer. */
		for (unsigned k = 0; k < in->nin; k++) {
			int32_t f = covered(d, ops[k]) ? PRED_NONE : forward(d, ops[k]);

			if (f >= 0)
				rc = defer_read(d, f, ops[k]);
			else
				rc = add_reader(d, ops[k], (int32_t)i, (int32_t)i);
			if (rc)
				return rc;
		}
		if ((rc = emit(d)))
			return rc;
		for (unsigned k = in->nin; k < (unsigned)in->nin + in->nout; k++)
			add_write(d, ops[k], (int32_t)i);
		if (d->dhead)
			for (int32_t e = d->dhead[i]; e >= 0; e = d->d[e].next)
				if ((rc = add_reader(d, d->d[e].tensor, d->d[e].id, (int32_t)i)))
					return rc;
	}
	return 0;
}

int pred_deps(struct ks_pred_model *m)
{
	struct deps d;
	int32_t *match = NULL;
	size_t nt = m->nt ? m->nt : 1;
	int rc;

	memset(&d, 0, sizeof(d));
	d.m = m;
	free(m->dep);
	free(m->dstart);
	m->dep = NULL;
	m->dstart = calloc(m->ni + 1, sizeof(*m->dstart));
	d.lw = malloc(nt * sizeof(*d.lw));
	d.stamp = malloc(nt * sizeof(*d.stamp));
	d.rhead = malloc(nt * sizeof(*d.rhead));
	d.cov = calloc(nt, sizeof(*d.cov));
	d.ncov = calloc(m->nsplits ? m->nsplits : 1, sizeof(*d.ncov));
	if (!m->dstart || !d.lw || !d.stamp || !d.rhead || !d.cov || !d.ncov) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t t = 0; t < m->nt; t++) {
		d.lw[t] = PRED_NONE;
		d.stamp[t] = -1;
		d.rhead[t] = PRED_NONE;
	}
	if ((rc = match_flags(m, &match)))
		goto out;
	rc = pass(&d, match);
out:
	free(match);
	free(d.lw);
	free(d.stamp);
	free(d.rhead);
	free(d.cov);
	free(d.ncov);
	free(d.r);
	free(d.dhead);
	free(d.d);
	free(d.stack);
	if (rc)
		return pred_fail(m, rc, "out of memory");
	return 0;
}
