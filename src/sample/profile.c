/*
 * The profile model of profile.h: growable arrays and the lookup tables
 * that make strings, frames and call-path nodes unique.  The tables are
 * open-addressing hash tables of ids, rebuilt at twice the size when half
 * full; ids index the profile's arrays, so the tables hold no copies.
 */
#include "profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct idtab {
	uint32_t *slot;        /* id + 1; 0 = empty */
	size_t cap;            /* power of two */
	size_t used;
};

struct intern {
	struct idtab strings, frames, nodes;
};

/* ------------------------------------------------------------------ */
/* Hashing                                                             */
/* ------------------------------------------------------------------ */

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return mix(h);
}

static uint64_t hash_frame(const struct ks_pframe *f)
{
	uint64_t h = f->function;

	h = h * 31 + f->file;
	h = h * 31 + f->line;
	h = h * 31 + f->module;
	h = h * 31 + f->address;
	h = h * 31 + f->inlined;
	return mix(h);
}

static uint64_t hash_node(uint32_t parent, uint32_t frame)
{
	return mix(((uint64_t)parent << 32) ^ frame);
}

static bool frame_eq(const struct ks_pframe *a, const struct ks_pframe *b)
{
	return a->function == b->function && a->file == b->file &&
	       a->line == b->line && a->module == b->module &&
	       a->address == b->address && a->inlined == b->inlined;
}

/* ------------------------------------------------------------------ */
/* Id tables                                                           */
/* ------------------------------------------------------------------ */

typedef uint64_t (*rehash_fn)(const struct ks_profile *p, uint32_t id);

static uint64_t rehash_string(const struct ks_profile *p, uint32_t id)
{
	return hash_str(p->strings[id]);
}

static uint64_t rehash_frame(const struct ks_profile *p, uint32_t id)
{
	return hash_frame(&p->frames[id]);
}

static uint64_t rehash_node(const struct ks_profile *p, uint32_t id)
{
	return hash_node(p->nodes[id].parent, p->nodes[id].frame);
}

/* Makes room for one more id; false when out of memory. */
static bool idtab_reserve(struct idtab *t, const struct ks_profile *p, rehash_fn fn)
{
	size_t cap;
	uint32_t *slot;

	if ((t->used + 1) * 2 <= t->cap)
		return true;
	cap = t->cap ? t->cap * 2 : 1024;
	slot = calloc(cap, sizeof(*slot));
	if (!slot)
		return false;
	for (size_t i = 0; i < t->cap; i++) {
		uint32_t v = t->slot[i];
		size_t j;

		if (!v)
			continue;
		for (j = fn(p, v - 1) & (cap - 1); slot[j]; j = (j + 1) & (cap - 1))
			;
		slot[j] = v;
	}
	free(t->slot);
	t->slot = slot;
	t->cap = cap;
	return true;
}

/* ------------------------------------------------------------------ */
/* Public functions                                                    */
/* ------------------------------------------------------------------ */

void *ks_profile_grow(void **array, size_t *n, size_t *cap, size_t elem)
{
	char *a = *array;

	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;

		a = realloc(a, ncap * elem);
		if (!a)
			return NULL;
		*array = a;
		*cap = ncap;
	}
	memset(a + *n * elem, 0, elem);
	return a + (*n)++ * elem;
}

int ks_profile_init(struct ks_profile *p, struct ks_err *err)
{
	memset(p, 0, sizeof(*p));
	p->intern = calloc(1, sizeof(struct intern));
	if (!p->intern || ks_profile_intern(p, "") != 0) {
		ks_profile_free(p);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

void ks_profile_free(struct ks_profile *p)
{
	struct intern *in = p->intern;

	for (size_t i = 0; i < p->n_strings; i++)
		free(p->strings[i]);
	free(p->strings);
	free(p->frames);
	free(p->nodes);
	free(p->processes);
	free(p->threads);
	free(p->samples);
	free(p->slices);
	free(p->counters);
	free(p->counter_values);
	free(p->counter_names);
	free(p->meta);
	free(p->modules);
	if (in) {
		free(in->strings.slot);
		free(in->frames.slot);
		free(in->nodes.slot);
		free(in);
	}
	memset(p, 0, sizeof(*p));
}

uint32_t ks_profile_intern(struct ks_profile *p, const char *s)
{
	struct intern *in = p->intern;
	struct idtab *t = &in->strings;
	char **slot;
	size_t j;

	if (!idtab_reserve(t, p, rehash_string))
		return KS_NONE;
	for (j = hash_str(s) & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1))
		if (strcmp(p->strings[t->slot[j] - 1], s) == 0)
			return t->slot[j] - 1;
	slot = ks_profile_push(p, strings);
	if (!slot)
		return KS_NONE;
	*slot = strdup(s);
	if (!*slot) {
		p->n_strings--;
		return KS_NONE;
	}
	t->slot[j] = (uint32_t)p->n_strings;
	t->used++;
	return (uint32_t)p->n_strings - 1;
}

uint32_t ks_profile_frame(struct ks_profile *p, const struct ks_pframe *f)
{
	struct intern *in = p->intern;
	struct idtab *t = &in->frames;
	struct ks_pframe *nf;
	size_t j;

	if (!idtab_reserve(t, p, rehash_frame))
		return KS_NONE;
	for (j = hash_frame(f) & (t->cap - 1); t->slot[j]; j = (j + 1) & (t->cap - 1))
		if (frame_eq(&p->frames[t->slot[j] - 1], f))
			return t->slot[j] - 1;
	nf = ks_profile_push(p, frames);
	if (!nf)
		return KS_NONE;
	*nf = *f;
	t->slot[j] = (uint32_t)p->n_frames;
	t->used++;
	return (uint32_t)p->n_frames - 1;
}

uint32_t ks_profile_node(struct ks_profile *p, uint32_t parent, uint32_t frame)
{
	struct intern *in = p->intern;
	struct idtab *t = &in->nodes;
	struct ks_pnode *nn;
	size_t j;

	if (!idtab_reserve(t, p, rehash_node))
		return KS_NONE;
	for (j = hash_node(parent, frame) & (t->cap - 1); t->slot[j];
	     j = (j + 1) & (t->cap - 1)) {
		const struct ks_pnode *n = &p->nodes[t->slot[j] - 1];

		if (n->parent == parent && n->frame == frame)
			return t->slot[j] - 1;
	}
	nn = ks_profile_push(p, nodes);
	if (!nn)
		return KS_NONE;
	nn->parent = parent;
	nn->frame = frame;
	t->slot[j] = (uint32_t)p->n_nodes;
	t->used++;
	return (uint32_t)p->n_nodes - 1;
}

int ks_profile_meta(struct ks_profile *p, const char *key, const char *value)
{
	uint32_t k = ks_profile_intern(p, key), v = ks_profile_intern(p, value);
	struct ks_pmeta *m;

	if (k == KS_NONE || v == KS_NONE || !(m = ks_profile_push(p, meta)))
		return -ENOMEM;
	m->key = k;
	m->value = v;
	return 0;
}

int ks_profile_node_counts(const struct ks_profile *p, uint32_t thread,
			   uint64_t **self, uint64_t **total)
{
	uint64_t *s = calloc(p->n_nodes + 1, sizeof(*s));
	uint64_t *t = calloc(p->n_nodes + 1, sizeof(*t));

	if (!s || !t) {
		free(s);
		free(t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *smp = &p->samples[i];

		if (thread != KS_NONE && smp->thread != thread)
			continue;
		if (smp->node == KS_NONE)
			continue;
		s[smp->node]++;
	}
	/* Children always have larger ids than their parents (a node is
	 * added after its parent), so one backwards pass sums subtrees. */
	for (size_t i = p->n_nodes; i-- > 0;) {
		t[i] += s[i];
		if (p->nodes[i].parent != KS_NONE)
			t[p->nodes[i].parent] += t[i];
	}
	*self = s;
	*total = t;
	return 0;
}
