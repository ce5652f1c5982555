/*
 * view_timeline.c: kscope view's timeline model -- the builder that
 * collects slices, names and flows (kv_tl_*, view.h), kv_tl_finish that
 * sorts, nests and indexes them once, and the read-only queries the
 * timeline handlers answer from (view_tl_int.h).
 *
 * Memory is what limits a timeline of millions of slices, so a slice is
 * 56 bytes (struct kv_tl_slice): names, categories and colours are
 * interned once in a string table, args texts sit one after another in
 * one arena, and the slice's id is its index in the finished array, not a
 * stored field.  Queries never allocate into the model: the server answers
 * requests from several threads at once on the same timeline.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_tl_int.h"

/* Slice ids are 32-bit inside (flow index keys, thread ranges). */
#define KV_TL_MAX_SLICES (UINT32_MAX - 1u)

/* ------------------------------------------------------------------ */
/* Growing arrays                                                      */
/* ------------------------------------------------------------------ */

/* Makes room for one more element in *p (n used, *cap allocated). */
static int grow(void **p, uint64_t n, uint64_t *cap, size_t size)
{
	uint64_t nc;
	void *q;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	if (nc > SIZE_MAX / size)
		return -ENOMEM;
	q = realloc(*p, (size_t)nc * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

static int grow32(void **p, uint32_t n, uint32_t *cap, size_t size)
{
	uint64_t c = *cap;
	int rc;

	if (n >= UINT32_MAX - 1)
		return -ENOMEM;
	rc = grow(p, n, &c, size);
	if (!rc)
		*cap = c > UINT32_MAX ? UINT32_MAX : (uint32_t)c;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Strings                                                             */
/* ------------------------------------------------------------------ */

static uint32_t str_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

/* Copies len bytes to dst, each byte of an invalid UTF-8 sequence (and
 * NUL) replaced by '?': the API hands these texts to jansson, which
 * refuses strings that are not UTF-8, and the copy keeps the length the
 * string table and the args arena have made room for. */
static void copy_utf8(char *dst, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i = 0;

	while (i < len) {
		size_t k = s[i] ? ks_utf8_len(s + i, len - i) : 0;

		if (!k) {
			dst[i++] = '?';
			continue;
		}
		memcpy(dst + i, s + i, k);
		i += k;
	}
}

static int strtab_rehash(struct kv_tl_strtab *t)
{
	uint32_t cap = t->hcap ? t->hcap * 2 : 1024;
	uint32_t *h = calloc(cap, sizeof(*h));

	if (!h || cap < t->hcap)
		return free(h), -ENOMEM;
	for (uint32_t id = 0; id < t->n; id++) {
		const char *s = t->buf + t->off[id];
		uint32_t i = str_hash(s, strlen(s)) & (cap - 1);

		while (h[i])
			i = (i + 1) & (cap - 1);
		h[i] = id + 1;
	}
	free(t->hash);
	t->hash = h;
	t->hcap = cap;
	return 0;
}

/* The id of s[0..len), or KV_TL_NONE if it is not in the table. */
static uint32_t strtab_find(const struct kv_tl_strtab *t, const char *s, size_t len)
{
	uint32_t i;

	if (!t->hcap)
		return KV_TL_NONE;
	i = str_hash(s, len) & (t->hcap - 1);
	while (t->hash[i]) {
		uint32_t id = t->hash[i] - 1;
		const char *c = t->buf + t->off[id];

		if (strncmp(c, s, len) == 0 && c[len] == '\0')
			return id;
		i = (i + 1) & (t->hcap - 1);
	}
	return KV_TL_NONE;
}

/* The id of s (interned on first sight); KV_TL_NONE when out of memory.
 * NULL and "" are id 0. */
static uint32_t strtab_add(struct kv_tl_strtab *t, const char *s)
{
	size_t len;
	uint32_t id, i;

	if (!s || !*s)
		return 0;
	len = strlen(s);
	id = strtab_find(t, s, len);
	if (id != KV_TL_NONE)
		return id;
	if ((uint64_t)(t->n + 1) * 2 > t->hcap && strtab_rehash(t) < 0)
		return KV_TL_NONE;
	if (grow32((void **)&t->off, t->n, &t->ncap, sizeof(*t->off)) < 0)
		return KV_TL_NONE;
	while (t->len + len + 1 > t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 65536;
		char *b = realloc(t->buf, nc);

		if (!b)
			return KV_TL_NONE;
		t->buf = b;
		t->cap = nc;
	}
	id = t->n++;
	t->off[id] = t->len;
	copy_utf8(t->buf + t->len, s, len);
	t->buf[t->len + len] = '\0';
	t->len += len + 1;
	i = str_hash(s, len) & (t->hcap - 1);
	while (t->hash[i])
		i = (i + 1) & (t->hcap - 1);
	t->hash[i] = id + 1;
	return id;
}

static int strtab_init(struct kv_tl_strtab *t)
{
	memset(t, 0, sizeof(*t));
	/* id 0 is "" */
	t->buf = malloc(65536);
	t->off = malloc(16 * sizeof(*t->off));
	if (!t->buf || !t->off)
		return -ENOMEM;
	t->cap = 65536;
	t->ncap = 16;
	t->buf[0] = '\0';
	t->len = 1;
	t->off[0] = 0;
	t->n = 1;
	return strtab_rehash(t);
}

/* ------------------------------------------------------------------ */
/* Processes and threads                                               */
/* ------------------------------------------------------------------ */

struct kv_timeline *kv_tl_new(void)
{
	struct kv_timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	if (strtab_init(&tl->strs) < 0) {
		kv_tl_free(tl);
		return NULL;
	}
	tl->last_thread = KV_TL_NONE;
	return tl;
}

void kv_tl_free(struct kv_timeline *tl)
{
	if (!tl)
		return;
	free(tl->strs.buf);
	free(tl->strs.off);
	free(tl->strs.hash);
	free(tl->slices);
	free(tl->args);
	for (uint32_t i = 0; i < tl->nthreads; i++)
		free(tl->threads[i].depth_off);
	free(tl->threads);
	for (uint32_t i = 0; i < tl->nprocesses; i++) {
		free(tl->processes[i].threads);
		free(tl->processes[i].busy);
	}
	free(tl->processes);
	free(tl->proc_order);
	free(tl->tkeys);
	free(tl->tvals);
	free(tl->pmap);
	free(tl->flows);
	free(tl->flow_index);
	for (uint32_t i = 0; i < tl->ncounters; i++) {
		free(tl->counters[i].series);
		free(tl->counters[i].ts);
		free(tl->counters[i].vals);
	}
	free(tl->counters);
	free(tl->counter_order);
	free(tl->ctr_map);
	free(tl);
}

static uint32_t pmap_get(const struct kv_timeline *tl, uint32_t pid)
{
	return pid < tl->pmapcap && tl->pmap[pid] ? tl->pmap[pid] - 1 : KV_TL_NONE;
}

/* The process of pid string id (created on first sight). */
static uint32_t process_get(struct kv_timeline *tl, uint32_t pid)
{
	uint32_t p = pmap_get(tl, pid);

	if (p != KV_TL_NONE)
		return p;
	if (pid >= tl->pmapcap) {
		uint32_t nc = tl->pmapcap ? tl->pmapcap : 64;
		uint32_t *m;

		while (nc <= pid)
			nc *= 2;
		m = realloc(tl->pmap, (size_t)nc * sizeof(*m));
		if (!m)
			return KV_TL_NONE;
		memset(m + tl->pmapcap, 0, (size_t)(nc - tl->pmapcap) * sizeof(*m));
		tl->pmap = m;
		tl->pmapcap = nc;
	}
	if (grow32((void **)&tl->processes, tl->nprocesses, &tl->prcap,
		   sizeof(*tl->processes)) < 0)
		return KV_TL_NONE;
	p = tl->nprocesses++;
	memset(&tl->processes[p], 0, sizeof(tl->processes[p]));
	tl->processes[p].pid = pid;
	tl->pmap[pid] = p + 1;
	return p;
}

static uint64_t tkey_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

static uint32_t tmap_get(const struct kv_timeline *tl, uint64_t key)
{
	uint64_t i;

	if (!tl->tmapcap)
		return KV_TL_NONE;
	i = tkey_hash(key) & (tl->tmapcap - 1);
	while (tl->tvals[i]) {
		if (tl->tkeys[i] == key)
			return tl->tvals[i] - 1;
		i = (i + 1) & (tl->tmapcap - 1);
	}
	return KV_TL_NONE;
}

static int tmap_put(struct kv_timeline *tl, uint64_t key, uint32_t val)
{
	uint64_t i;

	if ((uint64_t)(tl->tmapn + 1) * 2 > tl->tmapcap) {
		uint32_t nc = tl->tmapcap ? tl->tmapcap * 2 : 256;
		uint64_t *k = calloc(nc, sizeof(*k));
		uint32_t *v = calloc(nc, sizeof(*v));

		if (!k || !v || nc < tl->tmapcap) {
			free(k);
			free(v);
			return -ENOMEM;
		}
		for (uint32_t j = 0; j < tl->tmapcap; j++) {
			if (!tl->tvals[j])
				continue;
			i = tkey_hash(tl->tkeys[j]) & (nc - 1);
			while (v[i])
				i = (i + 1) & (nc - 1);
			k[i] = tl->tkeys[j];
			v[i] = tl->tvals[j];
		}
		free(tl->tkeys);
		free(tl->tvals);
		tl->tkeys = k;
		tl->tvals = v;
		tl->tmapcap = nc;
	}
	i = tkey_hash(key) & (tl->tmapcap - 1);
	while (tl->tvals[i])
		i = (i + 1) & (tl->tmapcap - 1);
	tl->tkeys[i] = key;
	tl->tvals[i] = val + 1;
	tl->tmapn++;
	return 0;
}

/* The thread (pid, tid), created with its process on first sight;
 * KV_TL_NONE when out of memory. */
static uint32_t thread_get(struct kv_timeline *tl, const char *pid, const char *tid)
{
	uint32_t ps, ts, th, pr;
	uint64_t key;

	if (!pid)
		pid = "";
	if (!tid)
		tid = "";
	if (tl->last_thread != KV_TL_NONE &&
	    strcmp(kv_tl_str(tl, tl->last_pid), pid) == 0 &&
	    strcmp(kv_tl_str(tl, tl->last_tid), tid) == 0)
		return tl->last_thread;
	ps = strtab_add(&tl->strs, pid);
	ts = strtab_add(&tl->strs, tid);
	if (ps == KV_TL_NONE || ts == KV_TL_NONE)
		return KV_TL_NONE;
	key = (uint64_t)ps << 32 | ts;
	th = tmap_get(tl, key);
	if (th == KV_TL_NONE) {
		struct kv_tl_process *p;

		pr = process_get(tl, ps);
		if (pr == KV_TL_NONE)
			return KV_TL_NONE;
		p = &tl->processes[pr];
		if (grow32((void **)&tl->threads, tl->nthreads, &tl->thcap,
			   sizeof(*tl->threads)) < 0 ||
		    grow32((void **)&p->threads, p->nthreads, &p->cap,
			   sizeof(*p->threads)) < 0)
			return KV_TL_NONE;
		th = tl->nthreads;
		if (tmap_put(tl, key, th) < 0)
			return KV_TL_NONE;
		tl->nthreads++;
		memset(&tl->threads[th], 0, sizeof(tl->threads[th]));
		tl->threads[th].process = pr;
		tl->threads[th].tid = ts;
		p->threads[p->nthreads++] = th;
	}
	tl->last_thread = th;
	tl->last_pid = ps;
	tl->last_tid = ts;
	return th;
}

/* name NULL keeps the name given before; sort_index 0 (the default)
 * keeps the index given before, so "process_name" and
 * "process_sort_index" records can come separately, in any order. */
int kv_tl_process_name(struct kv_timeline *tl, const char *pid, const char *name,
		       int sort_index)
{
	uint32_t ps, pr;

	if (tl->finished)
		return -EINVAL;
	ps = strtab_add(&tl->strs, pid ? pid : "");
	if (ps == KV_TL_NONE || (pr = process_get(tl, ps)) == KV_TL_NONE)
		return -ENOMEM;
	if (name) {
		uint32_t n = strtab_add(&tl->strs, name);

		if (n == KV_TL_NONE)
			return -ENOMEM;
		tl->processes[pr].name = n;
	}
	if (sort_index)
		tl->processes[pr].sort = sort_index;
	return 0;
}

int kv_tl_thread_name(struct kv_timeline *tl, const char *pid, const char *tid,
		      const char *name, int sort_index)
{
	uint32_t th;

	if (tl->finished)
		return -EINVAL;
	th = thread_get(tl, pid, tid);
	if (th == KV_TL_NONE)
		return -ENOMEM;
	if (name) {
		uint32_t n = strtab_add(&tl->strs, name);

		if (n == KV_TL_NONE)
			return -ENOMEM;
		tl->threads[th].name = n;
	}
	if (sort_index)
		tl->threads[th].sort = sort_index;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Slices and flows                                                    */
/* ------------------------------------------------------------------ */

int kv_tl_slice(struct kv_timeline *tl, const char *pid, const char *tid,
		const char *name, const char *cat, const char *cname,
		int64_t start_ns, uint64_t dur_ns, const char *args_json,
		size_t args_len)
{
	struct kv_tl_slice *s;
	uint32_t th, n, c, cn;

	if (tl->finished)
		return -EINVAL;
	if (dur_ns > (uint64_t)INT64_MAX || (start_ns > 0 && (int64_t)dur_ns > INT64_MAX - start_ns))
		return -ERANGE;
	if (tl->nslices >= KV_TL_MAX_SLICES || args_len > UINT32_MAX)
		return -E2BIG;
	th = thread_get(tl, pid, tid);
	n = strtab_add(&tl->strs, name);
	c = strtab_add(&tl->strs, cat);
	cn = strtab_add(&tl->strs, cname);
	if (th == KV_TL_NONE || n == KV_TL_NONE || c == KV_TL_NONE || cn == KV_TL_NONE)
		return -ENOMEM;
	if (grow((void **)&tl->slices, tl->nslices, &tl->slcap, sizeof(*tl->slices)) < 0)
		return -ENOMEM;
	if (!args_json)
		args_len = 0;
	while (tl->args_len + args_len > tl->args_cap) {
		uint64_t nc = tl->args_cap ? tl->args_cap * 2 : 1u << 20;
		char *a = realloc(tl->args, nc);

		if (!a)
			return -ENOMEM;
		tl->args = a;
		tl->args_cap = nc;
	}
	s = &tl->slices[tl->nslices];
	s->start = start_ns;
	s->end = start_ns + (int64_t)dur_ns;
	s->args = tl->args_len;
	s->args_len = (uint32_t)args_len;
	s->name = n;
	s->cat = c;
	s->cname = cn;
	s->depth = (uint32_t)tl->nslices;  /* the sequence, until kv_tl_finish */
	s->thread = th;
	s->brief = false;
	if (args_len)
		copy_utf8(tl->args + tl->args_len, args_json, args_len);
	tl->args_len += args_len;
	tl->nslices++;
	return 0;
}

void kv_tl_mark_brief(struct kv_timeline *tl)
{
	if (!tl->finished && tl->nslices)
		tl->slices[tl->nslices - 1].brief = true;
}

int kv_tl_flow(struct kv_timeline *tl, const char *id, const char *cat,
	       const char *name, const char *pid, const char *tid, int64_t from_ns,
	       const char *pid2, const char *tid2, int64_t to_ns)
{
	struct kv_tl_flow *f;
	uint32_t t0, t1, i, c, n;

	if (tl->finished)
		return -EINVAL;
	t0 = thread_get(tl, pid, tid);
	t1 = thread_get(tl, pid2, tid2);
	i = strtab_add(&tl->strs, id);
	c = strtab_add(&tl->strs, cat);
	n = strtab_add(&tl->strs, name);
	if (t0 == KV_TL_NONE || t1 == KV_TL_NONE || i == KV_TL_NONE || c == KV_TL_NONE ||
	    n == KV_TL_NONE)
		return -ENOMEM;
	if (tl->nflows >= UINT32_MAX - 1)
		return -E2BIG;
	if (grow((void **)&tl->flows, tl->nflows, &tl->flcap, sizeof(*tl->flows)) < 0)
		return -ENOMEM;
	f = &tl->flows[tl->nflows++];
	f->id = i;
	f->cat = c;
	f->name = n;
	f->thread[0] = t0;
	f->thread[1] = t1;
	f->ts[0] = from_ns;
	f->ts[1] = to_ns;
	f->slice[0] = f->slice[1] = KV_TL_NONE;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Counters                                                            */
/* ------------------------------------------------------------------ */

/* The string that names counter (pid, tid, name) in the string table,
 * malloc'ed; NULL when out of memory. */
static char *counter_key(const char *pid, const char *tid, const char *name)
{
	size_t n = strlen(pid) + strlen(tid) + strlen(name) + 3;
	char *k = malloc(n);

	if (k)
		snprintf(k, n, "%s\x1f%s\x1f%s", pid, tid, name);
	return k;
}

/* The counter of key string id key, created on first sight; KV_TL_NONE
 * when out of memory or past KV_TL_MAX_COUNTERS (*rc says which). */
static uint32_t counter_get(struct kv_timeline *tl, uint32_t key, const char *pid,
			    const char *tid, const char *name, int *rc)
{
	struct kv_tl_counter *c;
	uint32_t p, ti, n;

	if (key < tl->ctr_mapcap && tl->ctr_map[key])
		return tl->ctr_map[key] - 1;
	*rc = -E2BIG;
	if (tl->ncounters >= KV_TL_MAX_COUNTERS)
		return KV_TL_NONE;
	*rc = -ENOMEM;
	if (key >= tl->ctr_mapcap) {
		uint32_t nc = tl->ctr_mapcap ? tl->ctr_mapcap : 64;
		uint32_t *m;

		while (nc <= key && nc < UINT32_MAX / 2)
			nc *= 2;
		if (nc <= key)
			return KV_TL_NONE;
		m = realloc(tl->ctr_map, (size_t)nc * sizeof(*m));
		if (!m)
			return KV_TL_NONE;
		memset(m + tl->ctr_mapcap, 0, (size_t)(nc - tl->ctr_mapcap) * sizeof(*m));
		tl->ctr_map = m;
		tl->ctr_mapcap = nc;
	}
	p = strtab_add(&tl->strs, pid);
	ti = strtab_add(&tl->strs, tid);
	n = strtab_add(&tl->strs, name);
	if (p == KV_TL_NONE || ti == KV_TL_NONE || n == KV_TL_NONE ||
	    grow32((void **)&tl->counters, tl->ncounters, &tl->ctrcap,
		   sizeof(*tl->counters)) < 0)
		return KV_TL_NONE;
	c = &tl->counters[tl->ncounters];
	memset(c, 0, sizeof(*c));
	c->pid = p;
	c->tid = ti;
	c->name = n;
	tl->ctr_map[key] = ++tl->ncounters;
	*rc = 0;
	return tl->ncounters - 1;
}

/* The index of series s of c, added (every sample so far 0 in it) on
 * first sight; -1 when out of memory. */
static int64_t counter_series(struct kv_tl_counter *c, uint32_t s)
{
	uint32_t *ns;
	double *nv = NULL;
	uint32_t k = c->nseries;

	for (uint32_t i = 0; i < k; i++)
		if (c->series[i] == s)
			return i;
	if (k >= 4096)
		return -1;
	ns = realloc(c->series, ((size_t)k + 1) * sizeof(*ns));
	if (!ns)
		return -1;
	c->series = ns;
	if (c->cap) {
		/* a new column: the rows are laid out again, wider */
		nv = calloc(c->cap * ((size_t)k + 1), sizeof(*nv));
		if (!nv)
			return -1;
		for (uint64_t r = 0; r < c->n; r++)
			memcpy(nv + r * (k + 1), c->vals + r * k, k * sizeof(*nv));
		free(c->vals);
		c->vals = nv;
	}
	c->series[k] = s;
	c->nseries = k + 1;
	return k;
}

int kv_tl_counter(struct kv_timeline *tl, const char *pid, const char *tid,
		  const char *name, int64_t ts_ns, size_t n, const char *const *series,
		  const double *values)
{
	struct kv_tl_counter *c;
	char *k;
	uint32_t key, ci;
	uint64_t cap;
	int rc = -ENOMEM;

	if (tl->finished)
		return -EINVAL;
	pid = pid ? pid : "";
	tid = tid ? tid : "";
	name = name ? name : "";
	k = counter_key(pid, tid, name);
	if (!k)
		return -ENOMEM;
	key = strtab_add(&tl->strs, k);
	free(k);
	if (key == KV_TL_NONE)
		return -ENOMEM;
	ci = counter_get(tl, key, pid, tid, name, &rc);
	if (ci == KV_TL_NONE)
		return rc;
	c = &tl->counters[ci];
	for (size_t i = 0; i < n; i++) {
		uint32_t s = strtab_add(&tl->strs, series[i]);

		if (s == KV_TL_NONE || counter_series(c, s) < 0)
			return -ENOMEM;
	}
	cap = c->cap;
	if (grow((void **)&c->ts, c->n, &cap, sizeof(*c->ts)) < 0)
		return -ENOMEM;
	if (cap != c->cap) {
		double *v = realloc(c->vals, (size_t)cap * (c->nseries ? c->nseries : 1) *
				    sizeof(*v));

		if (!v)
			return -ENOMEM;  /* c->cap stays that of vals; ts has more */
		c->vals = v;
		c->cap = cap;
	}
	c->ts[c->n] = ts_ns;
	memset(c->vals + c->n * c->nseries, 0, c->nseries * sizeof(*c->vals));
	for (size_t i = 0; i < n; i++) {
		uint32_t s = strtab_add(&tl->strs, series[i]);

		c->vals[c->n * c->nseries + (uint64_t)counter_series(c, s)] = values[i];
	}
	c->n++;
	return 0;
}

uint32_t kv_tl_counter_find(const struct kv_timeline *tl, const char *pid,
			    const char *tid, const char *name)
{
	char *k = counter_key(pid, tid, name);
	uint32_t key;

	if (!k)
		return KV_TL_NONE;
	key = strtab_find(&tl->strs, k, strlen(k));
	free(k);
	if (key == KV_TL_NONE || key >= tl->ctr_mapcap || !tl->ctr_map[key])
		return KV_TL_NONE;
	return tl->ctr_map[key] - 1;
}

uint64_t kv_tl_slices(const struct kv_timeline *tl)
{
	return tl->nslices;
}

/* ------------------------------------------------------------------ */
/* Finishing: sort, nest, index                                        */
/* ------------------------------------------------------------------ */

/* Thread, then start, then a slice under 1 ns first (it ended before
 * the others of its nanosecond began), then longer first, then the order
 * of adding: slices of equal extent nest in the order they were added,
 * the first outermost, and ids are the same on every import of the same
 * input. */
static int slice_cmp(const void *pa, const void *pb)
{
	const struct kv_tl_slice *a = pa, *b = pb;

	if (a->thread != b->thread)
		return a->thread < b->thread ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->brief != b->brief)
		return a->brief ? -1 : 1;
	if (a->end != b->end)
		return a->end > b->end ? -1 : 1;
	return a->depth < b->depth ? -1 : a->depth > b->depth;
}

static int span_cmp(const void *pa, const void *pb)
{
	const struct kv_tl_span *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->end < b->end ? -1 : a->end > b->end;
}

static int u64_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* Display order: sort_index, then first appearance (the index). */
static int thread_order_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct kv_timeline *tl = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	int sa = tl->threads[a].sort, sb = tl->threads[b].sort;

	if (sa != sb)
		return sa < sb ? -1 : 1;
	return a < b ? -1 : a > b;
}

static int process_order_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct kv_timeline *tl = ctx;
	uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
	int sa = tl->processes[a].sort, sb = tl->processes[b].sort;

	if (sa != sb)
		return sa < sb ? -1 : 1;
	return a < b ? -1 : a > b;
}

/*
 * Depths of one thread's slices, sorted by slice_cmp: a slice goes one
 * level below the innermost slice still open at its start.  A slice is
 * open at t while its end is after t, so a slice ending where the next
 * starts is a sibling, and a zero-length slice at a slice's start is its
 * child -- unless it is brief (under 1 ns, not an instant), which sorts
 * before the slices of its start and so ends up beside them.
 *
 * A slice that starts inside an open slice but ends after it (a bad nesting,
 * which B/E pairs of different names or rounded X events can give) is put
 * one level deeper, not clipped: its times stay as recorded, the open
 * slice stays open under it until it ends, and no two slices of one depth
 * ever overlap (a depth's next slice is only placed once everything at or
 * below that depth has ended), which is what the queries' binary searches
 * rely on.
 *
 * Also appends the thread's busy intervals (the union of its slices) to
 * *spans.  Returns the number of depths.
 */
static uint32_t nest_thread(struct kv_tl_slice *s, uint64_t n, uint64_t *stack,
			    struct kv_tl_span *spans, uint64_t *nspans)
{
	uint64_t top = 0;
	uint32_t ndepth = 0;
	struct kv_tl_span cur = { 0, 0 };
	bool have = false;

	for (uint64_t i = 0; i < n; i++) {
		while (top && s[stack[top - 1]].end <= s[i].start)
			top--;
		assert(top < UINT32_MAX);
		s[i].depth = (uint32_t)top;
		stack[top++] = i;
		if (top > ndepth)
			ndepth = (uint32_t)top;
		if (have && s[i].start <= cur.end) {
			if (s[i].end > cur.end)
				cur.end = s[i].end;
		} else {
			if (have)
				spans[(*nspans)++] = cur;
			cur.start = s[i].start;
			cur.end = s[i].end;
			have = true;
		}
	}
	if (have)
		spans[(*nspans)++] = cur;
	return ndepth;
}

/* Index of the first slice in [lo, hi) whose end is >= t (ends of one
 * depth are sorted). */
static uint64_t first_end_ge(const struct kv_tl_slice *s, uint64_t lo, uint64_t hi,
			     int64_t t)
{
	while (lo < hi) {
		uint64_t m = lo + (hi - lo) / 2;

		if (s[m].end < t)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* Index of the first slice in [lo, hi) whose start is > t. */
static uint64_t first_start_gt(const struct kv_tl_slice *s, uint64_t lo, uint64_t hi,
			       int64_t t)
{
	while (lo < hi) {
		uint64_t m = lo + (hi - lo) / 2;

		if (s[m].start <= t)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* The slice of thread th a flow at time t binds to: the deepest slice
 * enclosing t; if none, the first top-level slice starting after t (where
 * Chrome binds a flow end without "bp":"e"); KV_TL_NONE if neither. */
static uint32_t bind_time(const struct kv_timeline *tl, uint32_t th, int64_t t)
{
	const struct kv_tl_thread *h = &tl->threads[th];
	const struct kv_tl_slice *s = tl->slices;

	for (uint32_t d = h->ndepth; d-- > 0;) {
		uint64_t lo = h->depth_off[d], hi = h->depth_off[d + 1];
		uint64_t k = first_start_gt(s, lo, hi, t);

		if (k > lo && s[k - 1].end >= t)
			return (uint32_t)(k - 1);
	}
	if (h->ndepth) {
		uint64_t k = first_start_gt(s, h->depth_off[0], h->depth_off[1], t);

		if (k < h->depth_off[1])
			return (uint32_t)k;
	}
	return KV_TL_NONE;
}

static int ts_idx_cmp(const void *pa, const void *pb, void *ctx)
{
	const int64_t *ts = ctx;
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	if (ts[a] != ts[b])
		return ts[a] < ts[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Sorts counter c's samples by time (those of equal time keep their
 * order: the last one holds), makes them relative to the origin and
 * drops those before it but the one in force there, moved to 0. */
static int finish_counter(struct kv_timeline *tl, struct kv_tl_counter *c)
{
	uint64_t k = 0, w = c->nseries;
	bool sorted = true;

	for (uint64_t i = 1; i < c->n && sorted; i++)
		sorted = c->ts[i - 1] <= c->ts[i];
	if (!sorted) {
		uint64_t *idx = malloc(c->n * sizeof(*idx));
		int64_t *ts = malloc(c->n * sizeof(*ts));
		double *v = malloc(c->n * (w ? w : 1) * sizeof(*v));

		if (!idx || !ts || !v) {
			free(idx);
			free(ts);
			free(v);
			return -ENOMEM;
		}
		for (uint64_t i = 0; i < c->n; i++)
			idx[i] = i;
		qsort_r(idx, c->n, sizeof(*idx), ts_idx_cmp, c->ts);
		for (uint64_t i = 0; i < c->n; i++) {
			ts[i] = c->ts[idx[i]];
			memcpy(v + i * w, c->vals + idx[i] * w, w * sizeof(*v));
		}
		free(idx);
		free(c->ts);
		free(c->vals);
		c->ts = ts;
		c->vals = v;
		c->cap = c->n;
	}
	for (uint64_t i = 0; i < c->n; i++)
		c->ts[i] = c->ts[i] < tl->origin ? -1 : c->ts[i] - tl->origin;
	while (k < c->n && c->ts[k] < 0)
		k++;
	if (k && (k == c->n || c->ts[k] > 0)) {
		k--;
		c->ts[k] = 0;
	}
	if (k) {
		memmove(c->ts, c->ts + k, (c->n - k) * sizeof(*c->ts));
		memmove(c->vals, c->vals + k * w, (c->n - k) * w * sizeof(*c->vals));
		c->n -= k;
	}
	c->max = 0;
	for (uint64_t i = 0; i < c->n * w; i++)
		if (c->vals[i] > c->max)
			c->max = c->vals[i];
	if (c->n && c->ts[c->n - 1] > tl->counter_end)
		tl->counter_end = c->ts[c->n - 1];
	return 0;
}

static int finish_counters(struct kv_timeline *tl)
{
	uint64_t *rank;
	uint32_t m = 0, *prank;

	tl->counter_end = 0;
	tl->counter_order = malloc(((size_t)tl->ncounters + 1) * sizeof(*tl->counter_order));
	if (!tl->counter_order)
		return -ENOMEM;
	for (uint32_t i = 0; i < tl->ncounters; i++)
		if (finish_counter(tl, &tl->counters[i]) < 0)
			return -ENOMEM;
	/* by the rank of their process (none: last), then first sight */
	rank = malloc(((size_t)tl->ncounters + 1) * sizeof(*rank));
	prank = malloc(((size_t)tl->nprocesses + 1) * sizeof(*prank));
	if (!rank || !prank) {
		free(rank);
		free(prank);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < tl->nprocesses; k++)
		prank[tl->proc_order[k]] = k;
	for (uint32_t i = 0; i < tl->ncounters; i++) {
		uint32_t p = pmap_get(tl, tl->counters[i].pid);

		rank[i] = (uint64_t)(p == KV_TL_NONE ? tl->nprocesses : prank[p]) << 32 | i;
	}
	if (tl->ncounters > 1)
		qsort(rank, tl->ncounters, sizeof(*rank), u64_cmp);
	for (; m < tl->ncounters; m++)
		tl->counter_order[m] = (uint32_t)(rank[m] & UINT32_MAX);
	free(rank);
	free(prank);
	return 0;
}

int kv_tl_finish(struct kv_timeline *tl, struct ks_err *err)
{
	struct kv_tl_slice *s = tl->slices, *tmp = NULL;
	struct kv_tl_span *spans = NULL;
	uint64_t *stack = NULL, *span_off = NULL, nspans = 0, maxn = 0;
	int rc = -ENOMEM;

	if (tl->finished)
		return ks_err_set(err, -EINVAL, "the timeline is already finished");
	/* The origin: the earliest event. */
	tl->origin = INT64_MAX;
	for (uint64_t i = 0; i < tl->nslices; i++)
		if (s[i].start < tl->origin)
			tl->origin = s[i].start;
	for (uint64_t i = 0; i < tl->nflows; i++)
		for (int k = 0; k < 2; k++)
			if (tl->flows[i].ts[k] < tl->origin)
				tl->origin = tl->flows[i].ts[k];
	/* Counters do not move it (a trace's span is its slices', as the
	 * Perfetto reader, which skips counters, gives it too), unless the
	 * trace has nothing else. */
	if (tl->origin == INT64_MAX)
		for (uint32_t c = 0; c < tl->ncounters; c++)
			for (uint64_t i = 0; i < tl->counters[c].n; i++)
				if (tl->counters[c].ts[i] < tl->origin)
					tl->origin = tl->counters[c].ts[i];
	if (tl->origin == INT64_MAX)
		tl->origin = 0;
	tl->last_end = 0;
	for (uint64_t i = 0; i < tl->nslices; i++) {
		/* start - origin cannot overflow: both lie in the int64 range
		 * and start >= origin; end - origin may if the trace spans more
		 * than 292 years, which the loaders' range checks exclude. */
		if (s[i].end - tl->origin < s[i].start - tl->origin)
			return ks_err_set(err, -ERANGE, "the timeline spans more than 2^63 ns");
		s[i].start -= tl->origin;
		s[i].end -= tl->origin;
		if (s[i].end > tl->last_end)
			tl->last_end = s[i].end;
	}
	for (uint64_t i = 0; i < tl->nflows; i++)
		for (int k = 0; k < 2; k++)
			tl->flows[i].ts[k] -= tl->origin;

	if (tl->nslices > 1)
		qsort(s, tl->nslices, sizeof(*s), slice_cmp);
	/* Each thread's range. */
	for (uint64_t i = 0; i < tl->nslices;) {
		uint64_t j = i;

		while (j < tl->nslices && s[j].thread == s[i].thread)
			j++;
		tl->threads[s[i].thread].first = i;
		tl->threads[s[i].thread].n = j - i;
		if (j - i > maxn)
			maxn = j - i;
		i = j;
	}
	stack = malloc((maxn ? maxn : 1) * sizeof(*stack));
	tmp = malloc((maxn ? maxn : 1) * sizeof(*tmp));
	spans = malloc((tl->nslices ? tl->nslices : 1) * sizeof(*spans));
	span_off = calloc((size_t)tl->nthreads + 1, sizeof(*span_off));
	if (!stack || !tmp || !spans || !span_off)
		goto nomem;
	for (uint32_t t = 0; t < tl->nthreads; t++) {
		struct kv_tl_thread *h = &tl->threads[t];
		struct kv_tl_slice *ts;

		span_off[t] = nspans;
		if (!h->n) {
			h->first = 0;
			continue;  /* (a thread only flows name has no slice; s may be NULL) */
		}
		ts = s + h->first;
		h->ndepth = nest_thread(ts, h->n, stack, spans, &nspans);
		h->depth_off = calloc((size_t)h->ndepth + 1, sizeof(*h->depth_off));
		if (!h->depth_off)
			goto nomem;
		/* Counting sort by depth, stable: each depth keeps start order. */
		for (uint64_t i = 0; i < h->n; i++)
			h->depth_off[ts[i].depth + 1]++;
		for (uint32_t d = 0; d < h->ndepth; d++)
			h->depth_off[d + 1] += h->depth_off[d];
		{
			uint64_t *fill = stack; /* reused: the next free slot per depth */

			for (uint32_t d = 0; d < h->ndepth; d++)
				fill[d] = h->depth_off[d];
			for (uint64_t i = 0; i < h->n; i++)
				tmp[fill[ts[i].depth]++] = ts[i];
		}
		memcpy(ts, tmp, h->n * sizeof(*ts));
		for (uint32_t d = 0; d <= h->ndepth; d++)
			h->depth_off[d] += h->first;
	}
	span_off[tl->nthreads] = nspans;
	free(tmp);
	tmp = NULL;

	/* Busy intervals per process: its threads' unions, merged. */
	for (uint32_t p = 0; p < tl->nprocesses; p++) {
		struct kv_tl_process *pr = &tl->processes[p];
		uint64_t n = 0, m = 0;

		for (uint32_t k = 0; k < pr->nthreads; k++) {
			uint32_t t = pr->threads[k];

			n += span_off[t + 1] - span_off[t];
		}
		if (!n)
			continue;
		pr->busy = malloc(n * sizeof(*pr->busy));
		if (!pr->busy)
			goto nomem;
		for (uint32_t k = 0; k < pr->nthreads; k++) {
			uint32_t t = pr->threads[k];

			memcpy(pr->busy + m, spans + span_off[t],
			       (span_off[t + 1] - span_off[t]) * sizeof(*spans));
			m += span_off[t + 1] - span_off[t];
		}
		if (pr->nthreads > 1)
			qsort(pr->busy, n, sizeof(*pr->busy), span_cmp);
		m = 0;
		for (uint64_t i = 0; i < n; i++) {
			if (m && pr->busy[i].start <= pr->busy[m - 1].end) {
				if (pr->busy[i].end > pr->busy[m - 1].end)
					pr->busy[m - 1].end = pr->busy[i].end;
			} else {
				pr->busy[m++] = pr->busy[i];
			}
		}
		pr->nbusy = m;
	}
	free(spans);
	spans = NULL;

	/* Display order. */
	for (uint32_t p = 0; p < tl->nprocesses; p++)
		if (tl->processes[p].nthreads > 1)
			qsort_r(tl->processes[p].threads, tl->processes[p].nthreads,
				sizeof(uint32_t), thread_order_cmp, tl);
	tl->proc_order = malloc(((size_t)tl->nprocesses + 1) * sizeof(*tl->proc_order));
	if (!tl->proc_order)
		goto nomem;
	for (uint32_t p = 0; p < tl->nprocesses; p++)
		tl->proc_order[p] = p;
	qsort_r(tl->proc_order, tl->nprocesses, sizeof(uint32_t), process_order_cmp, tl);
	if (finish_counters(tl) < 0)
		goto nomem;

	/* Flows: bind both ends, index them by slice. */
	tl->flow_index = malloc((tl->nflows * 2 + 1) * sizeof(*tl->flow_index));
	if (!tl->flow_index)
		goto nomem;
	for (uint64_t i = 0; i < tl->nflows; i++) {
		struct kv_tl_flow *f = &tl->flows[i];

		for (int k = 0; k < 2; k++) {
			f->slice[k] = bind_time(tl, f->thread[k], f->ts[k]);
			if (f->slice[k] != KV_TL_NONE && (k == 0 || f->slice[1] != f->slice[0]))
				tl->flow_index[tl->nflow_index++] =
					(uint64_t)f->slice[k] << 32 | i;
		}
	}
	if (tl->nflow_index > 1)
		qsort(tl->flow_index, tl->nflow_index, sizeof(uint64_t), u64_cmp);
	tl->finished = 1;
	rc = 0;
	goto out;
nomem:
	ks_err_set(err, rc, "out of memory while indexing a timeline of %llu slices",
		   (unsigned long long)tl->nslices);
out:
	free(stack);
	free(tmp);
	free(spans);
	free(span_off);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Queries (read-only: called from several threads at once)            */
/* ------------------------------------------------------------------ */

uint32_t kv_tl_process_find(const struct kv_timeline *tl, const char *pid)
{
	uint32_t ps = strtab_find(&tl->strs, pid, strlen(pid));

	if (!*pid)
		ps = 0;
	return ps == KV_TL_NONE ? KV_TL_NONE : pmap_get(tl, ps);
}

uint32_t kv_tl_thread_find(const struct kv_timeline *tl, const char *pid,
			   const char *tid)
{
	uint32_t ps = *pid ? strtab_find(&tl->strs, pid, strlen(pid)) : 0;
	uint32_t ts = *tid ? strtab_find(&tl->strs, tid, strlen(tid)) : 0;

	if (ps == KV_TL_NONE || ts == KV_TL_NONE)
		return KV_TL_NONE;
	return tmap_get(tl, (uint64_t)ps << 32 | ts);
}

/* Appends an item to *out, growing it. */
static int item_push(struct kv_tl_item **out, size_t *n, size_t *cap,
		     const struct kv_tl_item *it)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 256;
		struct kv_tl_item *q = realloc(*out, nc * sizeof(*q));

		if (!q)
			return -ENOMEM;
		*out = q;
		*cap = nc;
	}
	(*out)[(*n)++] = *it;
	return 0;
}

/* The most common name among slices [i, j], ties to the one whose first
 * slice comes first.  counts (one per string id) is all zero on entry and
 * on return. */
static uint32_t common_name(const struct kv_tl_slice *s, uint64_t i, uint64_t j,
			    uint32_t *counts)
{
	uint32_t best = 0, name = s[i].name;

	for (uint64_t k = i; k <= j; k++)
		if (++counts[s[k].name] > best)
			best = counts[s[k].name];
	for (uint64_t k = i; k <= j; k++) {
		if (counts[s[k].name] == best) {
			name = s[k].name;
			break;
		}
	}
	for (uint64_t k = i; k <= j; k++)
		counts[s[k].name] = 0;
	return name;
}

/*
 * Per depth, the slices overlapping the window, cut into items from left
 * to right: an item starts at the first slice not yet taken, at gs, and
 * takes every following slice that ends before gs + time_per_px (found by
 * binary search, since a depth's ends are sorted).  A slice a pixel wide
 * or more is an item of its own.  The next item's first slice ends at
 * gs + time_per_px or later, and the one after starts after that, so
 * there are at most two items per pixel and depth, and the work is
 * O(items log n) plus one pass over merged slices to find their most
 * common name.
 */
int kv_tl_query(const struct kv_timeline *tl, uint32_t th, int64_t ws, int64_t we,
		double time_per_px, struct kv_tl_item **out, size_t *n)
{
	const struct kv_tl_thread *h = &tl->threads[th];
	const struct kv_tl_slice *s = tl->slices;
	uint32_t *counts = NULL;
	size_t cap = 0;
	int rc = 0;

	*out = NULL;
	*n = 0;
	for (uint32_t d = 0; d < h->ndepth && !rc; d++) {
		uint64_t lo = h->depth_off[d], hi = h->depth_off[d + 1];
		uint64_t i = first_end_ge(s, lo, hi, ws);
		uint64_t e = first_start_gt(s, i, hi, we);

		while (i < e) {
			int64_t gs = s[i].start;
			struct kv_tl_item it;
			uint64_t a = i, b = e, j;

			/* first k in [i, e) with end - gs >= time_per_px */
			while (a < b) {
				uint64_t m = a + (b - a) / 2;

				if ((double)(s[m].end - gs) < time_per_px)
					a = m + 1;
				else
					b = m;
			}
			j = a > i ? a - 1 : i;
			it.id = i;
			it.start = gs;
			it.end = s[j].end;
			it.count = j - i + 1;
			it.cname = s[i].cname;
			it.depth = d;
			it.name = s[i].name;
			if (j > i) {
				if (!counts) {
					counts = calloc(tl->strs.n, sizeof(*counts));
					if (!counts) {
						rc = -ENOMEM;
						break;
					}
				}
				it.name = common_name(s, i, j, counts);
			}
			if (item_push(out, n, &cap, &it) < 0) {
				rc = -ENOMEM;
				break;
			}
			i = j + 1;
		}
	}
	free(counts);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* Index of the first span in [lo, hi) whose start is >= t (or > t). */
static uint64_t span_first_start(const struct kv_tl_span *b, uint64_t lo, uint64_t hi,
				 double t, bool strict)
{
	while (lo < hi) {
		uint64_t m = lo + (hi - lo) / 2;

		if (strict ? (double)b[m].start <= t : (double)b[m].start < t)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/*
 * Like kv_tl_query's items: from the first span not yet taken, repeatedly
 * jump to the last span starting less than a pixel after the merged end
 * so far.  Every second jump moves the end by a pixel or more, so the
 * work is O(pixels log n).
 */
int kv_tl_busy(const struct kv_timeline *tl, uint32_t pr, int64_t ws, int64_t we,
	       double time_per_px, struct kv_tl_span **out, size_t *n)
{
	const struct kv_tl_process *p = &tl->processes[pr];
	const struct kv_tl_span *b = p->busy;
	uint64_t i, e, lo = 0, hi = p->nbusy;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	/* first span whose end is >= ws (ends are sorted too) */
	while (lo < hi) {
		uint64_t m = lo + (hi - lo) / 2;

		if (b[m].end < ws)
			lo = m + 1;
		else
			hi = m;
	}
	i = lo;
	e = span_first_start(b, i, p->nbusy, (double)we, true);
	while (i < e) {
		int64_t end = b[i].end;
		uint64_t j = i;
		struct kv_tl_span sp;

		for (;;) {
			uint64_t k = span_first_start(b, j + 1, e, (double)end + time_per_px,
						      false);

			if (k <= j + 1)
				break;
			j = k - 1;
			end = b[j].end;
		}
		sp.start = b[i].start < ws ? ws : b[i].start;
		sp.end = end > we ? we : end;
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct kv_tl_span *q = realloc(*out, nc * sizeof(*q));

			if (!q) {
				free(*out);
				*out = NULL;
				*n = 0;
				return -ENOMEM;
			}
			*out = q;
			cap = nc;
		}
		(*out)[(*n)++] = sp;
		i = j + 1;
	}
	return 0;
}

int kv_tl_flows_of(const struct kv_timeline *tl, uint64_t slice, uint64_t **out,
		   size_t *n)
{
	uint64_t lo = 0, hi = tl->nflow_index, key = slice << 32, k;

	*out = NULL;
	*n = 0;
	while (lo < hi) {
		uint64_t m = lo + (hi - lo) / 2;

		if (tl->flow_index[m] < key)
			lo = m + 1;
		else
			hi = m;
	}
	for (k = lo; k < tl->nflow_index && tl->flow_index[k] >> 32 == slice; k++)
		;
	if (k == lo)
		return 0;
	*out = malloc((k - lo) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint64_t i = lo; i < k; i++)
		(*out)[(*n)++] = tl->flow_index[i] & UINT32_MAX;
	return 0;
}

int64_t kv_tl_self_time(const struct kv_timeline *tl, uint64_t slice)
{
	const struct kv_tl_slice *s = tl->slices, *x = &s[slice];
	const struct kv_tl_thread *h = &tl->threads[x->thread];
	int64_t self = x->end - x->start;
	uint64_t lo, hi, i;

	if (x->depth + 1 >= h->ndepth)
		return self;
	lo = h->depth_off[x->depth + 1];
	hi = h->depth_off[x->depth + 2];
	for (i = first_end_ge(s, lo, hi, x->start + 1); i < hi && s[i].start < x->end; i++) {
		int64_t a = s[i].start > x->start ? s[i].start : x->start;
		int64_t b = s[i].end < x->end ? s[i].end : x->end;

		if (b > a)
			self -= b - a;
	}
	return self < 0 ? 0 : self;
}

/*
 * The samples of a counter in a window, cut into items as kv_tl_query
 * cuts a depth: an item takes the samples starting less than a pixel
 * after its first, so the next item starts a pixel or more later.
 */
int kv_tl_counter_query(const struct kv_timeline *tl, uint32_t c, int64_t ws, int64_t we,
			double time_per_px, struct kv_tl_citem **out, size_t *n)
{
	const struct kv_tl_counter *k = &tl->counters[c];
	uint64_t lo = 0, hi = k->n, i, e;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	/* i: the first sample after ws; the one before it is in force at ws */
	while (lo < hi) {
		uint64_t m = lo + (hi - lo) / 2;

		if (k->ts[m] <= ws)
			lo = m + 1;
		else
			hi = m;
	}
	i = lo ? lo - 1 : 0;
	lo = i;
	hi = k->n;
	while (lo < hi) {
		uint64_t m = lo + (hi - lo) / 2;

		if (k->ts[m] <= we)
			lo = m + 1;
		else
			hi = m;
	}
	e = lo;
	while (i < e) {
		/* the first sample in (i, e) a pixel or more after sample i */
		double lim = (double)k->ts[i] + time_per_px;
		uint64_t a = i + 1, b = e;

		while (a < b) {
			uint64_t m = a + (b - a) / 2;

			if ((double)k->ts[m] < lim)
				a = m + 1;
			else
				b = m;
		}
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct kv_tl_citem *q = realloc(*out, nc * sizeof(*q));

			if (!q) {
				free(*out);
				*out = NULL;
				*n = 0;
				return -ENOMEM;
			}
			*out = q;
			cap = nc;
		}
		(*out)[*n].first = i;
		(*out)[*n].count = a - i;
		(*n)++;
		i = a;
	}
	return 0;
}
