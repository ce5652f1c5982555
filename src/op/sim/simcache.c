/*
 * The cache deliverables of kscope op --simulate: per cache set of one
 * level (the raw file's `set` records) and per hot data cache line (`hl`,
 * `hlwb`, `hlother`), each written as a visualize_data.bin block and a
 * CSV file with the same figures:
 *
 *   0x0B cache records   one 32-byte CacheRecord per set of the second
 *                        level (the design's "L2Cache" graph; of the only
 *                        level when there is one), counts saturated at
 *                        UINT32_MAX; cache_sets.csv has the exact counts
 *   0x0E cache-line heat the SIM_HOT_LINES lines with the most first-level
 *                        misses, with the instruction that missed most on
 *                        each, the rest summed in "other"; cache_lines.csv
 *
 * docs/simulate.md ("Cache sets and lines") says what each figure counts
 * and docs/formats.md gives the 0x0E fields.  A raw file from an older
 * tool has none of these records and gets none of these deliverables.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kscope/vizbin.h>

#include "simpost_int.h"

/* Lines listed in 0x0E and cache_lines.csv; the others are summed. */
#define SIM_HOT_LINES 1000
/* Up to this many sets, 0x0B and cache_sets.csv list every set (a full
 * strip for the viewer); a level with more lists the accessed ones. */
#define SIM_ALL_SETS 65536

static uint32_t sat32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static void put_u32le(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static bool set_listed(const struct sim *s, uint64_t i)
{
	const uint64_t *v = s->setv + i * CS_N;

	return s->nsets <= SIM_ALL_SETS || v[CS_LOAD] || v[CS_STORE] || v[CS_ALLOC];
}

/* ------------------------------------------------------------------ */
/* Cache sets                                                          */
/* ------------------------------------------------------------------ */

static int sets_block(struct ks_vb_writer *w, const struct sim *s, struct ks_err *err)
{
	struct ks_vb_error verr = { 0 };
	unsigned char rec[KS_VB_CACHE_RECORD_SIZE];
	int rc = ks_vb_begin(w, KS_VB_CACHE_RECORDS, KS_VB_VERSION, NULL, &verr);

	for (uint64_t i = 0; !rc && i < s->nsets; i++) {
		const uint64_t *v = s->setv + i * CS_N;

		if (!set_listed(s, i))
			continue;
		/* The design's CacheRecord order. */
		put_u32le(rec + 0, sat32(v[CS_LOAD]));
		put_u32le(rec + 4, sat32(v[CS_STORE]));
		put_u32le(rec + 8, sat32(i));
		put_u32le(rec + 12, sat32(v[CS_HIT]));
		put_u32le(rec + 16, sat32(v[CS_MISS]));
		put_u32le(rec + 20, sat32(v[CS_ALLOC]));
		put_u32le(rec + 24, sat32(v[CS_EVW]));
		put_u32le(rec + 28, sat32(v[CS_EVWO]));
		rc = ks_vb_append(w, rec, sizeof(rec), &verr);
	}
	if (!rc)
		rc = ks_vb_end(w, &verr);
	if (rc)
		return ks_err_set(err, rc, "visualize_data.bin: %s", verr.msg);
	return 0;
}

int sim_write_cache_sets(struct ks_rundir *run, struct ks_vb_writer *w,
			 const struct sim *s, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc;

	if (!s->have_sets)
		return 0;
	rc = sets_block(w, s, err);
	if (rc || (rc = sim_open(run, "cache_sets.csv", &of, &t, err)))
		return rc;
	ks_csv_str(&t, true, "Level");
	ks_text_puts(&t, ",Set,Loads,Stores,Hits,Misses,Miss Rate,Allocations,"
		     "Evictions With Write-back,Evictions Without Write-back\n");
	for (uint64_t i = 0; i < s->nsets; i++) {
		const uint64_t *v = s->setv + i * CS_N;
		uint64_t acc = v[CS_LOAD] + v[CS_STORE];

		if (!set_listed(s, i))
			continue;
		ks_csv_str(&t, true, s->cache[s->set_level].name);
		ks_csv_u64(&t, i);
		for (unsigned k = CS_LOAD; k <= CS_MISS; k++)
			ks_csv_u64(&t, v[k]);
		ks_csv_num(&t, acc ? (double)v[CS_MISS] / (double)acc : NAN, 4);
		ks_csv_u64(&t, v[CS_ALLOC]);
		ks_csv_u64(&t, v[CS_EVW]);
		ks_csv_u64(&t, v[CS_EVWO]);
		ks_csv_end(&t);
	}
	return sim_commit(&of, &t, err);
}

/* ------------------------------------------------------------------ */
/* Hot lines                                                           */
/* ------------------------------------------------------------------ */

/* One line: the sums of its pairs and its top instruction. */
struct cline {
	uint64_t addr, ld, st, wb;
	uint64_t miss[KS_SIM_MAX_LEVELS];
	uint32_t top;            /* ins index, SIM_NONE: none missed */
	uint64_t top_miss;       /* its level-0 misses on the line */
};

static int hl_addr_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct sim_hl *h = ctx;
	uint64_t a = h[*(const uint32_t *)pa].addr, b = h[*(const uint32_t *)pb].addr;

	return a < b ? -1 : a > b;
}

/* Most level-0 misses first, then most write-backs, then by address. */
static int cline_cmp(const void *pa, const void *pb)
{
	const struct cline *a = pa, *b = pb;

	if (a->miss[0] != b->miss[0])
		return a->miss[0] > b->miss[0] ? -1 : 1;
	if (a->wb != b->wb)
		return a->wb > b->wb ? -1 : 1;
	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* The lines of s->hl, hottest first, into *out (*n of them). */
static int lines_of(const struct sim *s, struct cline **out, size_t *n, struct ks_err *err)
{
	uint32_t *idx = malloc((s->nhl ? s->nhl : 1) * sizeof(*idx));
	struct cline *l = calloc(s->nhl ? s->nhl : 1, sizeof(*l));
	size_t nl = 0;

	if (!idx || !l) {
		free(idx);
		free(l);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nhl; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, s->nhl, sizeof(*idx), hl_addr_cmp, (void *)s->hl);
	for (size_t i = 0; i < s->nhl;) {
		struct cline *c = &l[nl++];

		c->addr = s->hl[idx[i]].addr;
		c->top = SIM_NONE;
		for (; i < s->nhl && s->hl[idx[i]].addr == c->addr; i++) {
			const struct sim_hl *h = &s->hl[idx[i]];

			c->ld += h->ld;
			c->st += h->st;
			c->wb += h->wb;
			for (unsigned k = 0; k < s->levels; k++)
				c->miss[k] += h->miss[k];
			if (h->ins != SIM_NONE && h->miss[0] &&
			    (c->top == SIM_NONE || h->miss[0] > c->top_miss ||
			     (h->miss[0] == c->top_miss &&
			      s->ins[h->ins].addr < s->ins[c->top].addr))) {
				c->top = h->ins;
				c->top_miss = h->miss[0];
			}
		}
	}
	free(idx);
	qsort(l, nl, sizeof(*l), cline_cmp);
	*out = l;
	*n = nl;
	return 0;
}

/* The lines past SIM_HOT_LINES and the dropped pairs, summed. */
static struct cline other_of(const struct sim *s, const struct cline *l, size_t n)
{
	struct cline o;

	memset(&o, 0, sizeof(o));
	o.ld = s->hl_other.ld;
	o.st = s->hl_other.st;
	o.wb = s->hl_other.wb;
	memcpy(o.miss, s->hl_other.miss, sizeof(o.miss));
	for (size_t i = SIM_HOT_LINES; i < n; i++) {
		o.ld += l[i].ld;
		o.st += l[i].st;
		o.wb += l[i].wb;
		for (unsigned k = 0; k < s->levels; k++)
			o.miss[k] += l[i].miss[k];
	}
	o.addr = n > SIM_HOT_LINES ? n - SIM_HOT_LINES : 0; /* lines, not an address */
	return o;
}

static void json_counts(struct ks_text *t, const struct sim *s, const struct cline *c)
{
	ks_text_puts(t, "\"misses\":[");
	for (unsigned k = 0; k < s->levels; k++)
		ks_text_printf(t, "%s%llu", k ? "," : "", (unsigned long long)c->miss[k]);
	ks_text_printf(t, "],\"load_misses\":%llu,\"store_misses\":%llu,\"writebacks\":%llu",
		       (unsigned long long)c->ld, (unsigned long long)c->st,
		       (unsigned long long)c->wb);
}

static void json_line(struct ks_text *t, const struct sim *s, const struct cline *c)
{
	ks_text_printf(t, "{\"address\":\"0x%llx\",", (unsigned long long)c->addr);
	json_counts(t, s, c);
	ks_text_puts(t, ",\"top_instruction\":");
	if (c->top == SIM_NONE) {
		ks_text_puts(t, "null}");
		return;
	}
	{
		const struct sim_ins *in = &s->ins[c->top];

		ks_text_printf(t, "{\"address\":\"0x%llx\",\"misses\":%llu,\"function\":",
			       (unsigned long long)in->addr, (unsigned long long)c->top_miss);
		ks_text_json_str(t, sim_fn_name(s, in->fn));
		ks_text_puts(t, ",\"file\":");
		ks_text_json_str(t, sim_file_name(s, in->file));
		ks_text_printf(t, ",\"line\":%u,\"source\":", in->line);
		ks_text_json_str(t, s->text ? sim_dis(s, in) : "");
		ks_text_puts(t, "}}");
	}
}

static int lines_block(struct ks_vb_writer *w, const struct sim *s, const struct cline *l,
		       size_t n, const struct cline *o, struct ks_err *err)
{
	struct sim_vb v = { .w = w };
	struct ks_text t;
	int rc = sim_vb_begin(&v, &t, KS_VB_CACHELINE_HEAT, KS_VB_VERSION, err);

	if (rc)
		return rc;
	ks_text_printf(&t, "{\"line_size\":%llu,\"levels\":[",
		       (unsigned long long)s->cache[0].line);
	for (unsigned k = 0; k < s->levels; k++) {
		ks_text_puts(&t, k ? "," : "");
		ks_text_json_str(&t, s->cache[k].name);
	}
	ks_text_puts(&t, "],\"cache_lines\":[");
	for (size_t i = 0; i < n && i < SIM_HOT_LINES; i++) {
		ks_text_puts(&t, i ? ",\n" : "\n");
		json_line(&t, s, &l[i]);
	}
	ks_text_printf(&t, "\n],\"other\":{\"lines\":%llu,\"dropped_pairs\":%llu,",
		       (unsigned long long)o->addr, (unsigned long long)s->hl_dropped);
	json_counts(&t, s, o);
	ks_text_puts(&t, "}}\n");
	return sim_vb_end(&v, &t, err);
}

static void csv_counts(struct ks_text *t, const struct sim *s, const struct cline *c)
{
	for (unsigned k = 0; k < s->levels; k++)
		ks_csv_u64(t, c->miss[k]);
	ks_csv_u64(t, c->ld);
	ks_csv_u64(t, c->st);
	ks_csv_u64(t, c->wb);
}

static int lines_csv(struct ks_rundir *run, const struct sim *s, const struct cline *l,
		     size_t n, const struct cline *o, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc = sim_open(run, "cache_lines.csv", &of, &t, err);

	if (rc)
		return rc;
	ks_csv_str(&t, true, "Address");
	for (unsigned k = 0; k < s->levels; k++) {
		char col[64];

		snprintf(col, sizeof(col), "%s Misses", s->cache[k].name);
		ks_csv_str(&t, false, col);
	}
	ks_text_puts(&t, ",Load Misses,Store Misses,Write-backs,Top Instruction,"
		     "Top Instruction Misses,Function,File,Line\n");
	for (size_t i = 0; i < n && i < SIM_HOT_LINES; i++) {
		const struct sim_ins *in = l[i].top != SIM_NONE ? &s->ins[l[i].top] : NULL;
		char a[32];

		snprintf(a, sizeof(a), "0x%llx", (unsigned long long)l[i].addr);
		ks_csv_str(&t, true, a);
		csv_counts(&t, s, &l[i]);
		if (in) {
			snprintf(a, sizeof(a), "0x%llx", (unsigned long long)in->addr);
			ks_csv_str(&t, false, a);
			ks_csv_u64(&t, l[i].top_miss);
			ks_csv_str(&t, false, sim_fn_name(s, in->fn));
			ks_csv_str(&t, false, sim_file_name(s, in->file));
			ks_csv_u64(&t, in->line);
		} else {
			ks_text_puts(&t, ",,,,,");
		}
		ks_csv_end(&t);
	}
	/* The rest, as docs/simulate.md says: Address "other". */
	ks_csv_str(&t, true, "other");
	csv_counts(&t, s, o);
	ks_text_puts(&t, ",,,,,");
	ks_csv_end(&t);
	return sim_commit(&of, &t, err);
}

int sim_write_cache_lines(struct ks_rundir *run, struct ks_vb_writer *w,
			  const struct sim *s, struct ks_err *err)
{
	struct cline *l = NULL, o;
	size_t n = 0;
	int rc;

	if (!s->nhl && !s->have_hl_other)
		return 0;
	rc = lines_of(s, &l, &n, err);
	if (rc)
		return rc;
	o = other_of(s, l, n);
	rc = lines_block(w, s, l, n, &o, err);
	if (!rc)
		rc = lines_csv(run, s, l, n, &o, err);
	free(l);
	return rc;
}
