/*
 * Which launches kscope op looks at: the kernel names (interned once), the
 * ordinals that let application replay find a launch again in later runs,
 * and the filter state machine.  Filters apply in this order:
 *
 *   skip   the first `skip` launches of the program pass (any kernel, any
 *          process: kscope counts them, asked with `skip` until it says
 *          that none is any more)
 *   range  with mstx=1, only launches while an included range is open
 *   name   only kernels whose name passes kernel_name
 *   then kscope is asked (`launch`), and answers collect or pass; it
 *   applies --launch-count and --kill itself, and says `pass final=1` when
 *   nothing more will be collected, after which nobody is asked again.
 *
 * The common case, a launch that no filter lets through, costs an atomic
 * increment and a few loads: no lock held for long, no allocation, no
 * message.  Only the first launch of each kernel name sends `kernel`.
 * Ordinals are counted for the names that can be collected or timed
 * (those that pass kernel_name, or are named in the targets file), under
 * the names lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oprt_int.h"

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

#define NAME_BUCKETS 1024

/* Interned names; entries are never freed (wrappers keep pointers to them
 * without a lock). */
static struct ks_oprt_name *names[NAME_BUCKETS];

static size_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211u;
	return (size_t)(h % NAME_BUCKETS);
}

struct ks_oprt_name *ks_oprt_name_get(const char *name)
{
	size_t h = str_hash(name);
	struct ks_oprt_name *nm;
	char *copy;

	pthread_mutex_lock(&ks_oprt.names_lock);
	for (nm = names[h]; nm; nm = nm->next)
		if (strcmp(nm->name, name) == 0)
			goto out;
	nm = calloc(1, sizeof(*nm));
	copy = strdup(name);
	if (!nm || !copy) {
		free(nm);
		free(copy);
		nm = NULL;
		goto out;
	}
	nm->name = copy;
	nm->match = ks_op_filter_match(ks_oprt.cfg.kernel_name, name);
	nm->capture = ks_oprt.cfg.mode == KS_OPRT_MODE_RANGE ||
		      (nm->match && !ks_oprt.cfg.timing_run);
	atomic_init(&nm->announced, false);
	nm->next = names[h];
	names[h] = nm;
out:
	pthread_mutex_unlock(&ks_oprt.names_lock);
	return nm;
}

/* ------------------------------------------------------------------ */
/* Ordinals                                                            */
/* ------------------------------------------------------------------ */

/* The launches so far of one name with one global size. */
struct ks_oprt_ordinals {
	uint64_t g[3];
	uint64_t count;
	struct ks_oprt_ordinals *next;
};

/* The ordinal of this launch of nm with global size g, counted from 0;
 * UINT64_MAX when out of memory.  Names lock held. */
static uint64_t ordinal_next(struct ks_oprt_name *nm, const uint64_t g[3])
{
	struct ks_oprt_ordinals *o, **prev = &nm->ord;

	for (o = nm->ord; o; prev = &o->next, o = o->next)
		if (o->g[0] == g[0] && o->g[1] == g[1] && o->g[2] == g[2]) {
			/* Keep the most used sizes near the front. */
			if (prev != &nm->ord) {
				*prev = o->next;
				o->next = nm->ord;
				nm->ord = o;
			}
			return o->count++;
		}
	o = calloc(1, sizeof(*o));
	if (!o)
		return UINT64_MAX;
	memcpy(o->g, g, sizeof(o->g));
	o->count = 1;
	o->next = nm->ord;
	nm->ord = o;
	return 0;
}

uint64_t ks_oprt_ordinal(struct ks_oprt_name *nm, const uint64_t g[3])
{
	uint64_t k;

	pthread_mutex_lock(&ks_oprt.names_lock);
	k = ordinal_next(nm, g);
	pthread_mutex_unlock(&ks_oprt.names_lock);
	return k;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

void ks_oprt_gsize_str(const uint64_t g[3], char *out, size_t size)
{
	snprintf(out, size, "%" PRIu64 ":%" PRIu64 ":%" PRIu64, g[0], g[1], g[2]);
}

bool ks_oprt_rel_ok(const char *rel)
{
	const char *p = rel;

	if (!*rel || *rel == '/' || strlen(rel) > 400)
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/')
			p++;
	}
	return p[-1] != '/';
}

void ks_oprt_names_fork_reset(void)
{
	for (size_t h = 0; h < NAME_BUCKETS; h++)
		for (struct ks_oprt_name *nm = names[h]; nm; nm = nm->next) {
			struct ks_oprt_ordinals *o = nm->ord;

			while (o) {
				struct ks_oprt_ordinals *next = o->next;

				free(o);
				o = next;
			}
			nm->ord = NULL;
			atomic_store(&nm->announced, false);
		}
}

bool ks_oprt_skip_ask(void)
{
	const struct ks_op_msg *a;
	bool skipped = false;

	if (ks_oprt.cfg.skip == 0 || atomic_load(&ks_oprt.skip_done))
		return false;
	if (!ks_oprt_chan_begin("skip"))
		return false;
	a = ks_oprt_chan_request();
	if (a && ks_op_msg_is(a, "skip"))
		skipped = ks_op_msg_getu(a, "more", 0) == 1;
	if (!skipped)
		atomic_store(&ks_oprt.skip_done, true);
	ks_oprt_chan_end();
	return skipped;
}

static void announce(struct ks_oprt_name *nm)
{
	struct ks_op_msg *m;

	if (atomic_exchange(&nm->announced, true))
		return;
	m = ks_oprt_chan_begin("kernel");
	if (!m)
		return;
	ks_op_msg_add(m, "name", nm->name);
	ks_oprt_chan_send();
}

/* Sends `launch` and reads the answer into d. */
static enum ks_oprt_verdict ask(struct ks_oprt_launch *l, struct ks_oprt_decision *d)
{
	const struct ks_op_msg *a;
	struct ks_op_msg *m = ks_oprt_chan_begin("launch");
	char g[80];

	if (!m)
		return KS_OPRT_PASS;
	ks_oprt_gsize_str(l->gsize, g, sizeof(g));
	ks_op_msg_add(m, "name", l->name->name);
	ks_op_msg_addu(m, "index", l->index);
	ks_op_msg_add(m, "gsize", g);
	ks_op_msg_addu(m, "ordinal", l->ordinal);
	if (l->range[0])
		ks_op_msg_add(m, "range", l->range);
	a = ks_oprt_chan_request();
	d->verdict = KS_OPRT_PASS;
	if (!a)
		goto out;
	if (ks_op_msg_is(a, "collect")) {
		if (ks_op_msg_get(a, "dir", NULL, d->dir, sizeof(d->dir)) && ks_oprt_rel_ok(d->dir))
			d->verdict = KS_OPRT_COLLECT;
	} else if (ks_op_msg_is(a, "pass")) {
		if (ks_op_msg_getu(a, "final", 0) == 1)
			atomic_store(&ks_oprt.final, true);
	}
out:
	ks_oprt_chan_end();
	return d->verdict;
}

/* ------------------------------------------------------------------ */
/* The decision                                                        */
/* ------------------------------------------------------------------ */

atomic_ullong ks_oprt_launch_index;
int ks_oprt_fast_rule;

/* The rules of ks_oprt_launch_decide below by which a launch can only
 * pass, for ks_oprt_launch_fast_pass: none in range replay, nor with a
 * skip (it counts every launch); in a timing run a name without target,
 * else an unmatched name. */
void ks_oprt_launch_configured(void)
{
	const struct ks_oprt_config *c = &ks_oprt.cfg;

	ks_oprt_fast_rule = c->mode == KS_OPRT_MODE_RANGE ? KS_OPRT_FAST_NONE
			    : c->timing_run ? KS_OPRT_FAST_NO_TARGET
			    : c->skip == 0 ? KS_OPRT_FAST_NO_MATCH
			    : KS_OPRT_FAST_NONE;
}

enum ks_oprt_verdict ks_oprt_launch_decide(struct ks_oprt_launch *l,
					   struct ks_oprt_decision *d)
{
	const struct ks_oprt_config *c = &ks_oprt.cfg;
	struct ks_oprt_name *nm = l->name;
	bool skipped;

	d->verdict = KS_OPRT_PASS;
	l->index = atomic_fetch_add_explicit(&ks_oprt_launch_index, 1, memory_order_relaxed);
	l->ordinal = 0;
	l->range[0] = '\0';
	if (!nm)
		return KS_OPRT_PASS;
	if (!atomic_load_explicit(&nm->announced, memory_order_relaxed))
		announce(nm);
	if (c->mode == KS_OPRT_MODE_RANGE)
		return ks_oprt_range_recording() ? (d->verdict = KS_OPRT_RECORD) : KS_OPRT_PASS;
	if (c->timing_run) {
		bool hit;

		if (!nm->target)
			return KS_OPRT_PASS;
		pthread_mutex_lock(&ks_oprt.names_lock);
		l->ordinal = ordinal_next(nm, l->gsize);
		hit = ks_oprt_target_is(nm, l->gsize, l->ordinal);
		pthread_mutex_unlock(&ks_oprt.names_lock);
		return hit ? (d->verdict = KS_OPRT_TIME) : KS_OPRT_PASS;
	}
	/* Kernel replay, application run 0.  The skip counts every launch,
	 * before the name filter. */
	skipped = ks_oprt_skip_ask();
	if (!nm->match)
		return KS_OPRT_PASS;
	l->ordinal = ks_oprt_ordinal(nm, l->gsize);
	if (l->ordinal == UINT64_MAX || atomic_load(&ks_oprt.final) || skipped)
		return KS_OPRT_PASS;
	if (c->mstx) {
		if (atomic_load(&ks_oprt.open_included) <= 0)
			return KS_OPRT_PASS;
		ks_oprt_range_innermost(l->range, sizeof(l->range));
	}
	return ask(l, d);
}

int ks_oprt_launch_handle(struct ks_oprt_launch *l, const struct ks_oprt_decision *d)
{
	switch (d->verdict) {
	case KS_OPRT_COLLECT:
		return ks_oprt_collect(l, d->dir);
	case KS_OPRT_TIME:
		return ks_oprt_time_target(l);
	case KS_OPRT_RECORD:
		return ks_oprt_range_record(l);
	case KS_OPRT_PASS:
		break;
	}
	/* Not reached by a correct backend: make the launch as it was. */
	{
		uint64_t ns;
		bool have;

		return ks_oprt_be()->launch_original(l->be, false, &ns, &have);
	}
}
