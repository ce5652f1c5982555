/*
 * The scheduler (docs/predict.md, "The scheduler"; seed 004, 4.4.1): one
 * FIFO queue per pipe; among the pipes whose head can run, the head that
 * would end first runs, ties to the pipe listed first.  Runnable heads
 * wait in a binary heap keyed by (end, pipe); a blocked head waits on
 * one instruction, in that instruction's waiter list, and takes up its
 * dependencies (deps.c) where it left off when that one ends, so N
 * instructions on P pipes cost O(N log P) plus the dependency edges.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pred_int.h"

struct heap_ent {
	double end;
	int pipe;
};

struct sched {
	struct ks_pred_model *m;
	size_t np;
	int32_t *queue;        /* all instruction ids, grouped by pipe */
	size_t qstart[PRED_MAX_PIPES + 1], head[PRED_MAX_PIPES];
	double clock[PRED_MAX_PIPES];
	struct heap_ent heap[PRED_MAX_PIPES];
	size_t nheap;
	int32_t *wait_head;    /* per instruction: first pipe waiting on it */
	int wait_next[PRED_MAX_PIPES];
	double cand_start[PRED_MAX_PIPES];
	uint32_t dpos[PRED_MAX_PIPES];  /* the head's next dependency to look at */
	double dready[PRED_MAX_PIPES];  /* when those before it had ended */
};

static bool heap_less(const struct heap_ent *a, const struct heap_ent *b)
{
	return a->end < b->end || (a->end == b->end && a->pipe < b->pipe);
}

static void heap_push(struct sched *s, double end, int pipe)
{
	size_t i = s->nheap++;

	s->heap[i] = (struct heap_ent){ end, pipe };
	while (i > 0) {
		size_t p = (i - 1) / 2;
		struct heap_ent t;

		if (!heap_less(&s->heap[i], &s->heap[p]))
			break;
		t = s->heap[i];
		s->heap[i] = s->heap[p];
		s->heap[p] = t;
		i = p;
	}
}

static struct heap_ent heap_pop(struct sched *s)
{
	struct heap_ent top = s->heap[0];
	size_t i = 0;

	s->heap[0] = s->heap[--s->nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, b = i;
		struct heap_ent t;

		if (l < s->nheap && heap_less(&s->heap[l], &s->heap[b]))
			b = l;
		if (r < s->nheap && heap_less(&s->heap[r], &s->heap[b]))
			b = r;
		if (b == i)
			break;
		t = s->heap[i];
		s->heap[i] = s->heap[b];
		s->heap[b] = t;
		i = b;
	}
	return top;
}

/* Looks at pipe p's head: into the heap when it can run, else onto the
 * waiter list of the instruction it needs; nothing when it needs one that
 * never comes. */
static void arm(struct sched *s, int p)
{
	const struct ks_pred_model *m = s->m;
	double ready;
	uint32_t k, end;
	int32_t id;

	if (s->head[p] >= s->qstart[p + 1])
		return;
	id = s->queue[s->head[p]];
	ready = s->dready[p];
	end = m->dstart[id + 1];
	for (k = s->dpos[p]; k < end; k++) {
		int32_t d = m->dep[k].id;

		if (d == PRED_NEVER)
			break;
		if (m->in[d].end < 0) {
			s->wait_next[p] = s->wait_head[d];
			s->wait_head[d] = p;
			break;
		}
		if (m->in[d].end > ready)
			ready = m->in[d].end;
	}
	s->dpos[p] = k;
	s->dready[p] = ready;
	if (k < end)
		return;
	s->cand_start[p] = ready;
	heap_push(s, ready + m->in[id].cost, p);
}

/* Pipe p's head is the next in its queue: its dependencies from the first,
 * its start from the pipe's clock. */
static void new_head(struct sched *s, int p)
{
	if (s->head[p] < s->qstart[p + 1])
		s->dpos[p] = s->m->dstart[s->queue[s->head[p]]];
	s->dready[p] = s->clock[p];
}

/* What blocked pipe p waits for, after "pipe P waits at #I ... ". */
static size_t why_blocked(const struct sched *s, int p, const struct pred_dep *dp, char *msg,
			  size_t size)
{
	const struct ks_pred_model *m = s->m;
	char d2[256];
	int n;

	if (dp->kind == DEP_FLAG) {
		const struct pred_instr *w = &m->in[dp->what];
		const char *src = m->chip.pipes[w->flag % PRED_MAX_PIPES];

		if (dp->id == PRED_NEVER)
			n = snprintf(msg, size, " for set_flag(%s, %s, %d), which nothing sets "
				     "(each wait_flag takes one set_flag of its pipes and event, in "
				     "program order)", src, m->chip.pipes[p],
				     w->flag / PRED_MAX_PIPES);
		else
			n = snprintf(msg, size, " for set_flag(%s, %s, %d) %s, which has not run",
				     src, m->chip.pipes[p], w->flag / PRED_MAX_PIPES,
				     pred_instr_desc(m, dp->id, d2, sizeof(d2)));
	} else if (dp->id == PRED_NEVER) {
		n = snprintf(msg, size, " for %s, which nothing writes (%s does not start ready)",
			     pred_tensor_name(m, dp->what),
			     m->chip.spaces[m->t[dp->what].space].name);
	} else {
		const char *pipe = m->chip.pipes[m->in[dp->id].pipe];

		pred_instr_desc(m, dp->id, d2, sizeof(d2));
		if (dp->kind == DEP_RAW)
			n = snprintf(msg, size, " for %s, written by %s on %s, which has not run",
				     pred_tensor_name(m, dp->what), d2, pipe);
		else
			n = snprintf(msg, size, " to write %s until %s on %s, which %s it before, "
				     "has run; it has not", pred_tensor_name(m, dp->what), d2, pipe,
				     dp->kind == DEP_WAR ? "reads" : "writes");
	}
	return n < 0 ? 0 : (size_t)n;
}

static int deadlock(struct sched *s, size_t left)
{
	struct ks_pred_model *m = s->m;
	char msg[900], d1[256];
	size_t off;
	int shown = 0;

	off = (size_t)snprintf(msg, sizeof(msg), "the model deadlocks: %zu instruction%s "
			       "cannot run;", left, left == 1 ? "" : "s");
	for (size_t p = 0; p < s->np && off < sizeof(msg); p++) {
		int32_t id;

		if (s->head[p] >= s->qstart[p + 1])
			continue;
		id = s->queue[s->head[p]];
		for (uint32_t k = m->dstart[id]; k < m->dstart[id + 1]; k++) {
			const struct pred_dep *dp = &m->dep[k];

			if (dp->id >= 0 && m->in[dp->id].end >= 0)
				continue;
			off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s pipe %s waits at %s",
						shown ? ";" : "", m->chip.pipes[p],
						pred_instr_desc(m, id, d1, sizeof(d1)));
			if (off < sizeof(msg))
				off += why_blocked(s, (int)p, dp, msg + off, sizeof(msg) - off);
			shown++;
			break;
		}
	}
	return pred_fail(m, -EDEADLK, "%s", msg);
}

int pred_schedule(struct ks_pred_model *m)
{
	struct sched s;
	size_t done = 0;
	int rc = 0;

	memset(&s, 0, sizeof(s));
	s.m = m;
	s.np = m->chip.npipes;
	/* The footprint, and the loads costed by it. */
	m->footprint = 0;
	for (size_t i = 0; i < m->nt; i++)
		if (m->t[i].parent < 0 && m->chip.spaces[m->t[i].space].ready)
			m->footprint += (double)m->t[i].elements * pred_dtype_bytes[m->t[i].dtype];
	for (size_t i = 0; i < m->ni; i++) {
		struct pred_instr *in = &m->in[i];
		const struct pred_path *p;
		const struct pred_curve *c;

		if (in->path < 0)
			continue;
		p = &m->chip.paths[in->path / PRED_PATH_STRIDE];
		c = in->path % PRED_PATH_STRIDE ? &p->conv[in->path % PRED_PATH_STRIDE - 1].c
						: &p->c;
		in->cost = in->bytes / 2 / pred_curve_at(c, m->footprint);
	}
	/* The cache hit ratio: a load out of a cached space moves its bytes at
	 * the cache's bandwidth (speedup s times the memory's) for the hits
	 * and at the memory's for the misses; the tables describe the chip's
	 * own ratio r0, so the cost scales by (1 - r + r/s) / (1 - r0 + r0/s)
	 * (docs/predict.md, "The cache hit ratio"). */
	if (m->cache_set) {
		double f[PRED_MAX_SPACES];

		for (size_t k = 0; k < m->chip.nspaces; k++) {
			const struct pred_space *sp = &m->chip.spaces[k];
			double r = m->cache_hit_ratio, r0 = sp->cache_base, s1 = sp->cache_speedup;

			f[k] = s1 > 0 ? (1 - r + r / s1) / (1 - r0 + r0 / s1) : 1;
		}
		for (size_t i = 0; i < m->ni; i++) {
			struct pred_instr *in = &m->in[i];

			if (in->op == OP_LOAD)
				in->cost *= f[m->t[m->operands[in->operand]].space];
		}
	}
	/* What each instruction waits for. */
	if ((rc = pred_deps(m)))
		return rc;
	/* The queues: counting sort by pipe keeps creation order. */
	s.queue = malloc((m->ni ? m->ni : 1) * sizeof(*s.queue));
	s.wait_head = malloc((m->ni ? m->ni : 1) * sizeof(*s.wait_head));
	if (!s.queue || !s.wait_head) {
		rc = pred_fail(m, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < m->ni; i++) {
		s.qstart[m->in[i].pipe + 1]++;
		s.wait_head[i] = -1;
		m->in[i].end = -1;
	}
	for (size_t p = 0; p < s.np; p++) {
		s.qstart[p + 1] += s.qstart[p];
		s.head[p] = s.qstart[p];
	}
	for (size_t i = 0; i < m->ni; i++)
		s.queue[s.head[m->in[i].pipe]++] = (int32_t)i;
	for (size_t p = 0; p < s.np; p++) {
		s.head[p] = s.qstart[p];
		s.clock[p] = 0;
		new_head(&s, (int)p);
	}
	for (size_t p = 0; p < s.np; p++)
		arm(&s, (int)p);
	m->total = 0;
	while (s.nheap) {
		struct heap_ent e = heap_pop(&s);
		int p = e.pipe;
		int32_t id = s.queue[s.head[p]], w;
		struct pred_instr *in = &m->in[id];

		in->start = s.cand_start[p];
		in->end = e.end;
		s.clock[p] = e.end;
		if (e.end > m->total)
			m->total = e.end;
		s.head[p]++;
		new_head(&s, p);
		done++;
		w = s.wait_head[id];
		s.wait_head[id] = -1;
		while (w >= 0) {
			int next = s.wait_next[w];

			arm(&s, w);
			w = next;
		}
		arm(&s, p);
	}
	if (done < m->ni)
		rc = deadlock(&s, m->ni - done);
out:
	free(s.queue);
	free(s.wait_head);
	return rc;
}
