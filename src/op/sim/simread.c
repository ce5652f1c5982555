/*
 * The reader of the raw file of kscope's Valgrind tool (simraw.h) into the
 * in-memory tables of struct sim.
 *
 * The file comes from a program kscope does not trust and may have been
 * cut short by a killed tool, so every field is checked: the number of
 * fields of each record, every number (decimal, or "0x" hex for
 * addresses, with no sign, space or overflow), every ID (defined once,
 * before it is used) and every string escape.  A damaged record is an
 * error naming the file and line.  A file without its `end` record is
 * not: the tables hold what was read, and a last line without its newline
 * (the tool stopped while writing it) is dropped with a warning.
 *
 * The file is read line by line (getline), never whole: a raw file of two
 * million `x` records is some 100 MB.  IDs are mapped to table indexes
 * through hash maps, so reading is linear in the file's size.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpost_int.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

void sim_warnf(const struct sim *s, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!s->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->warn(s->warn_ctx, msg);
}

/* Makes room for need elements of elem bytes in *p (capacity *cap). */
static int grow(void *p, size_t *cap, size_t need, size_t elem)
{
	void **pp = p;
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	q = realloc(*pp, n * elem);
	if (!q)
		return -ENOMEM;
	*pp = q;
	*cap = n;
	return 0;
}

/* ---- the ID maps ---- */

static size_t map_slot(const struct sim_map *m, uint32_t key)
{
	uint32_t h = key * 2654435761u;

	return (size_t)(h ^ h >> 15) & (m->cap - 1);
}

static bool map_get(const struct sim_map *m, uint32_t key, uint32_t *val)
{
	if (!m->cap)
		return false;
	for (size_t i = map_slot(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i])
			return false;
		if (m->keys[i] == key + 1) {
			*val = m->vals[i];
			return true;
		}
	}
}

/* -EEXIST when key is there already; key < UINT32_MAX. */
static int map_put(struct sim_map *m, uint32_t key, uint32_t val)
{
	uint32_t dummy;

	if (map_get(m, key, &dummy))
		return -EEXIST;
	if (2 * (m->n + 1) > m->cap) {
		struct sim_map bigger = { .cap = m->cap ? 2 * m->cap : 64 };

		bigger.keys = calloc(bigger.cap, sizeof(*bigger.keys));
		bigger.vals = calloc(bigger.cap, sizeof(*bigger.vals));
		if (!bigger.keys || !bigger.vals) {
			free(bigger.keys);
			free(bigger.vals);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i])
				map_put(&bigger, m->keys[i] - 1, m->vals[i]);
		free(m->keys);
		free(m->vals);
		*m = bigger;
	}
	for (size_t i = map_slot(m, key);; i = (i + 1) & (m->cap - 1))
		if (!m->keys[i]) {
			m->keys[i] = key + 1;
			m->vals[i] = val;
			m->n++;
			return 0;
		}
}

static void map_free(struct sim_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------------ */
/* Fields                                                              */
/* ------------------------------------------------------------------ */

struct reader {
	struct sim *s;
	struct ks_err *err;
	size_t lineno;
	char **f;                /* the fields of the current line */
	size_t nf, capf;
	bool counting;           /* a thread, x, bw or tr record was read */
	size_t after_end;        /* 1 after the end record, then counts on */
	size_t unknown;          /* records of unknown kinds */
};

/* An error about the current line. */
static int bad(struct reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int bad(struct reader *r, const char *fmt, ...)
{
	char msg[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ks_err_set(r->err, -EINVAL, "%s:%zu: %s", r->s->raw_path, r->lineno, msg);
}

static int need_fields(struct reader *r, size_t n)
{
	if (r->nf != n)
		return bad(r, "a '%s' record has %zu fields where %zu are expected", r->f[0],
			   r->nf, n);
	return 0;
}

static int get_u64(struct reader *r, size_t i, uint64_t *v)
{
	const char *p = r->f[i];
	uint64_t x = 0;

	if (!*p)
		return bad(r, "field %zu of '%s' is empty, not a number", i + 1, r->f[0]);
	for (; *p; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (d > 9)
			return bad(r, "field %zu of '%s' is not a number: '%.40s'", i + 1,
				   r->f[0], r->f[i]);
		if (x > (UINT64_MAX - d) / 10)
			return bad(r, "field %zu of '%s' is too large: '%.40s'", i + 1,
				   r->f[0], r->f[i]);
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static int get_u32(struct reader *r, size_t i, uint32_t *v)
{
	uint64_t x;
	int rc = get_u64(r, i, &x);

	if (rc)
		return rc;
	if (x >= UINT32_MAX)
		return bad(r, "field %zu of '%s' is too large: '%.40s'", i + 1, r->f[0],
			   r->f[i]);
	*v = (uint32_t)x;
	return 0;
}

static int get_addr(struct reader *r, size_t i, uint64_t *v)
{
	const char *p = r->f[i];
	uint64_t x = 0;
	size_t n = 0;

	if (p[0] != '0' || p[1] != 'x' || !p[2])
		return bad(r, "field %zu of '%s' is not an address (0x...): '%.40s'", i + 1,
			   r->f[0], p);
	for (p += 2; *p; p++, n++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ?
			*p - 'a' + 10 : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10 : -1;

		if (d < 0 || n == 16)
			return bad(r, "field %zu of '%s' is not an address (0x...): '%.40s'",
				   i + 1, r->f[0], r->f[i]);
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return 0;
}

/* An ID field naming a record of map (or -1 when may_be_unknown). */
static int get_ref(struct reader *r, size_t i, const struct sim_map *m, const char *what,
		   bool may_be_unknown, int64_t *index)
{
	uint32_t id, val;
	int rc;

	if (may_be_unknown && strcmp(r->f[i], "-1") == 0) {
		*index = -1;
		return 0;
	}
	rc = get_u32(r, i, &id);
	if (rc)
		return rc;
	if (!map_get(m, id, &val))
		return bad(r, "'%s' refers to %s %u, which no earlier record defines",
			   r->f[0], what, id);
	*index = val;
	return 0;
}

/* Undoes the escapes of a string field in place. */
static int unescape(struct reader *r, size_t i)
{
	char *in = r->f[i], *out = in;

	for (; *in; in++) {
		if (*in != '\\') {
			*out++ = *in;
			continue;
		}
		switch (*++in) {
		case '\\': *out++ = '\\'; break;
		case 't': *out++ = '\t'; break;
		case 'n': *out++ = '\n'; break;
		default:
			return bad(r, "field %zu of '%s' has a bad escape '\\%c'", i + 1,
				   r->f[0], *in ? *in : ' ');
		}
	}
	*out = '\0';
	return 0;
}

static int get_str(struct reader *r, size_t i, char **out)
{
	int rc = unescape(r, i);

	if (rc)
		return rc;
	free(*out);
	*out = strdup(r->f[i]);
	return *out ? 0 : ks_err_set(r->err, -ENOMEM, "out of memory");
}

static int nomem(struct reader *r)
{
	return ks_err_set(r->err, -ENOMEM, "%s: out of memory at line %zu", r->s->raw_path,
			  r->lineno);
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

static int rec_cache(struct reader *r)
{
	struct sim *s = r->s;
	struct sim_cache *c;
	uint64_t level;
	int rc = need_fields(r, 8);

	if (!rc)
		rc = get_u64(r, 1, &level);
	if (rc)
		return rc;
	if (r->counting)
		return bad(r, "a 'cache' record after the counts");
	if (level != s->levels)
		return bad(r, "cache level %llu where level %u was expected",
			   (unsigned long long)level, s->levels);
	if (level >= KS_SIM_MAX_LEVELS)
		return bad(r, "more than %d cache levels", KS_SIM_MAX_LEVELS);
	c = &s->cache[level];
	if ((rc = get_u64(r, 2, &c->size)) || (rc = get_u64(r, 3, &c->assoc)) ||
	    (rc = get_u64(r, 4, &c->line)) || (rc = get_u64(r, 5, &c->latency)) ||
	    (rc = unescape(r, 7)))
		return rc;
	if (c->line == 0)
		return bad(r, "cache level %llu has lines of 0 bytes", (unsigned long long)level);
	if (strcmp(r->f[6], "private") && strcmp(r->f[6], "shared"))
		return bad(r, "cache scope '%.40s' is neither 'private' nor 'shared'", r->f[6]);
	c->shared = strcmp(r->f[6], "shared") == 0;
	/* Names are the user's ("L1", "LL"); longer ones are cut. */
	snprintf(c->name, sizeof(c->name), "%s", r->f[7]);
	s->levels++;
	return 0;
}

static int rec_named(struct reader *r, char ***tab, size_t *n, size_t *cap,
		     struct sim_map *ids)
{
	uint32_t id;
	int rc = need_fields(r, 3);

	if (!rc)
		rc = get_u32(r, 1, &id);
	if (!rc)
		rc = unescape(r, 2);
	if (rc)
		return rc;
	if (grow(tab, cap, *n + 1, sizeof(**tab)))
		return nomem(r);
	rc = map_put(ids, id, (uint32_t)*n);
	if (rc == -EEXIST)
		return bad(r, "'%s' %u is defined twice", r->f[0], id);
	if (rc)
		return nomem(r);
	(*tab)[*n] = strdup(r->f[2]);
	if (!(*tab)[*n])
		return nomem(r);
	(*n)++;
	return 0;
}

static int rec_ins(struct reader *r)
{
	static const char *const pipes[] = KS_SIM_PIPE_NAMES;
	struct sim *s = r->s;
	struct sim_ins in;
	uint64_t len;
	int64_t file, fn;
	uint32_t id;
	/* 13 fields since VLANES and VELEM; older files have 11. */
	int rc = r->nf == 13 ? 0 : need_fields(r, 11);

	memset(&in, 0, sizeof(in));
	if (rc || (rc = get_u32(r, 1, &id)) || (rc = get_addr(r, 2, &in.addr)) ||
	    (rc = get_u64(r, 3, &len)))
		return rc;
	if (len < 1 || len > KS_SIM_MAX_INS_LEN)
		return bad(r, "instruction %u has %llu bytes (1 to %d)", id,
			   (unsigned long long)len, KS_SIM_MAX_INS_LEN);
	in.len = (uint8_t)len;
	if (len > KS_SIM_MAX_INS_BYTES)
		len = KS_SIM_MAX_INS_BYTES;
	if (strlen(r->f[4]) != 2 * len)
		return bad(r, "instruction %u: BYTES has %zu hex digits, not %u", id,
			   strlen(r->f[4]), 2 * (unsigned)len);
	for (size_t i = 0; i < len; i++) {
		unsigned v;

		if (sscanf(r->f[4] + 2 * i, "%2x", &v) != 1 ||
		    !strchr("0123456789abcdefABCDEF", r->f[4][2 * i]) ||
		    !strchr("0123456789abcdefABCDEF", r->f[4][2 * i + 1]))
			return bad(r, "instruction %u: BYTES is not hex: '%.40s'", id, r->f[4]);
		in.bytes[i] = (uint8_t)v;
	}
	if ((rc = get_ref(r, 5, &s->file_ids, "file", true, &file)) ||
	    (rc = get_u32(r, 6, &in.line)) ||
	    (rc = get_ref(r, 7, &s->fn_ids, "function", true, &fn)))
		return rc;
	in.file = (int32_t)file;
	in.fn = (int32_t)fn;
	in.pipe = KS_SIM_PIPE_COUNT;
	for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++)
		if (strcmp(r->f[8], pipes[p]) == 0)
			in.pipe = (uint8_t)p;
	if (in.pipe == KS_SIM_PIPE_COUNT)
		return bad(r, "instruction %u: unknown pipe '%.40s'", id, r->f[8]);
	if ((rc = get_u32(r, 9, &in.flops)) || (rc = get_u32(r, 10, &in.base)))
		return rc;
	if (r->nf == 13) {
		uint32_t lanes, elem;

		if ((rc = get_u32(r, 11, &lanes)) || (rc = get_u32(r, 12, &elem)))
			return rc;
		if (elem ? (elem != 8 && elem != 16 && elem != 32 && elem != 64) || !lanes ||
			   lanes > KS_SIM_VECTOR_BITS / elem : lanes != 0)
			return bad(r, "instruction %u: %u vector lanes of %u bits (lanes of 8, "
				   "16, 32 or 64 bits, up to %d bits in all)", id, lanes, elem,
				   KS_SIM_VECTOR_BITS);
		in.vlanes = (uint8_t)lanes;
		in.velem = (uint8_t)elem;
	}
	in.lineid = SIM_NONE;
	if (grow(&s->ins, &s->cap_ins, s->nins + 1, sizeof(*s->ins)))
		return nomem(r);
	rc = map_put(&s->ins_ids, id, (uint32_t)s->nins);
	if (rc == -EEXIST)
		return bad(r, "instruction %u is defined twice", id);
	if (rc)
		return nomem(r);
	s->ins[s->nins++] = in;
	return 0;
}

static int rec_sb(struct reader *r)
{
	struct sim *s = r->s;
	uint64_t count;
	uint32_t id;
	int rc;

	if (r->nf < 3)
		return need_fields(r, 3);
	if ((rc = get_u32(r, 1, &id)) || (rc = get_u64(r, 2, &count)))
		return rc;
	if (count != r->nf - 3)
		return bad(r, "block %u: COUNT is %llu but %zu instructions follow", id,
			   (unsigned long long)count, r->nf - 3);
	if (grow(&s->sbs, &s->cap_sbs, s->nsbs + 1, sizeof(*s->sbs)) ||
	    grow(&s->sb_ins, &s->cap_sb_ins, s->nsb_ins + count, sizeof(*s->sb_ins)))
		return nomem(r);
	for (size_t i = 0; i < count; i++) {
		int64_t ins;

		rc = get_ref(r, 3 + i, &s->ins_ids, "instruction", false, &ins);
		if (rc)
			return rc;
		s->sb_ins[s->nsb_ins + i] = (uint32_t)ins;
	}
	rc = map_put(&s->sb_ids, id, (uint32_t)s->nsbs);
	if (rc == -EEXIST)
		return bad(r, "block %u is defined twice", id);
	if (rc)
		return nomem(r);
	s->sbs[s->nsbs].first = (uint32_t)s->nsb_ins;
	s->sbs[s->nsbs].count = (uint32_t)count;
	s->nsbs++;
	s->nsb_ins += count;
	return 0;
}

static int rec_thread(struct reader *r)
{
	struct sim *s = r->s;
	struct sim_thread t = { .core = SIM_NONE };
	int rc = need_fields(r, 4);

	if (rc || (rc = get_u32(r, 1, &t.tid)) || (rc = get_u64(r, 2, &t.instrs)) ||
	    (rc = get_u64(r, 3, &t.cycles)))
		return rc;
	if (grow(&s->threads, &s->cap_threads, s->nthreads + 1, sizeof(*s->threads)))
		return nomem(r);
	rc = map_put(&s->tids, t.tid, (uint32_t)s->nthreads);
	if (rc == -EEXIST)
		return bad(r, "thread %u is listed twice", t.tid);
	if (rc)
		return nomem(r);
	s->threads[s->nthreads++] = t;
	return 0;
}

static int rec_x(struct reader *r)
{
	struct sim *s = r->s;
	size_t w = XW(s);
	int64_t th, ins;
	uint64_t *v;
	int rc = need_fields(r, 3 + w);

	if (rc || (rc = get_ref(r, 1, &s->tids, "thread", false, &th)) ||
	    (rc = get_ref(r, 2, &s->ins_ids, "instruction", false, &ins)))
		return rc;
	if (s->nx == s->cap_x) {
		size_t cap = s->cap_x;

		if (grow(&s->x, &cap, s->nx + 1, sizeof(*s->x)))
			return nomem(r);
		if (cap > SIZE_MAX / w / sizeof(*s->xv))
			return nomem(r);
		v = realloc(s->xv, cap * w * sizeof(*s->xv));
		if (!v)
			return nomem(r);
		s->xv = v;
		s->cap_x = cap;
	}
	v = s->xv + s->nx * w;
	for (size_t i = 0; i < w; i++)
		if ((rc = get_u64(r, 3 + i, &v[i])))
			return rc;
	for (unsigned k = 0; k < s->levels; k++)
		if (v[XM(k)] > v[XA(k)])
			return bad(r, "level %u has more misses (%llu) than accesses (%llu)", k,
				   (unsigned long long)v[XM(k)], (unsigned long long)v[XA(k)]);
	s->x[s->nx].th = (uint32_t)th;
	s->x[s->nx].ins = (uint32_t)ins;
	s->ins[ins].executed = true;
	s->nx++;
	return 0;
}

static int rec_bw(struct reader *r)
{
	struct sim *s = r->s;
	size_t w = BW(s);
	int64_t th;
	uint64_t *v;
	int rc = need_fields(r, 3 + w);

	if (rc || (rc = get_ref(r, 1, &s->tids, "thread", false, &th)))
		return rc;
	if (!s->interval)
		return bad(r, "a 'bw' record before the 'interval' record");
	if (s->nbw == s->cap_bw) {
		size_t cap = s->cap_bw;

		if (grow(&s->bw, &cap, s->nbw + 1, sizeof(*s->bw)))
			return nomem(r);
		v = realloc(s->bwv, cap * w * sizeof(*s->bwv));
		if (!v)
			return nomem(r);
		s->bwv = v;
		s->cap_bw = cap;
	}
	if ((rc = get_u64(r, 2, &s->bw[s->nbw].bucket)))
		return rc;
	v = s->bwv + s->nbw * w;
	for (size_t i = 0; i < w; i++)
		if ((rc = get_u64(r, 3 + i, &v[i])))
			return rc;
	s->bw[s->nbw].th = (uint32_t)th;
	s->nbw++;
	return 0;
}

/* trace <from> <thread> <cycle>: where the pipeline chart starts. */
static int rec_trace(struct reader *r)
{
	struct sim *s = r->s;
	uint64_t tid;
	int rc = need_fields(r, 4);

	if (rc || (rc = get_u64(r, 2, &tid)) || (rc = get_u64(r, 3, &s->trace_clock)))
		return rc;
	if (strcmp(r->f[1], "region") && strcmp(r->f[1], "main") && strcmp(r->f[1], "never"))
		return bad(r, "the trace starts at '%.20s', not region, main or never", r->f[1]);
	if (tid > UINT32_MAX)
		return bad(r, "thread %llu is out of range", (unsigned long long)tid);
	s->trace_tid = (uint32_t)tid;
	snprintf(s->trace_from, sizeof(s->trace_from), "%s", r->f[1]);
	return 0;
}

static int rec_tr(struct reader *r)
{
	struct sim *s = r->s;
	struct sim_tr t;
	int64_t th, sb;
	int rc = need_fields(r, 6);

	if (rc || (rc = get_ref(r, 1, &s->tids, "thread", false, &th)) ||
	    (rc = get_ref(r, 2, &s->sb_ids, "block", false, &sb)) ||
	    (rc = get_u32(r, 3, &t.executed)) || (rc = get_u64(r, 4, &t.start)) ||
	    (rc = get_u64(r, 5, &t.end)))
		return rc;
	if (t.executed > s->sbs[sb].count)
		return bad(r, "%u instructions executed of a block of %u", t.executed,
			   s->sbs[sb].count);
	if (t.end < t.start)
		return bad(r, "the block ends (cycle %llu) before it starts (cycle %llu)",
			   (unsigned long long)t.end, (unsigned long long)t.start);
	t.th = (uint32_t)th;
	t.sb = (uint32_t)sb;
	if (grow(&s->tr, &s->cap_tr, s->ntr + 1, sizeof(*s->tr)))
		return nomem(r);
	s->tr[s->ntr++] = t;
	return 0;
}

/* sets LEVEL NSETS: NSETS must be the level's (and so is bounded). */
static int rec_sets(struct reader *r)
{
	struct sim *s = r->s;
	uint64_t level, n;
	const struct sim_cache *c;
	int rc = need_fields(r, 3);

	if (rc || (rc = get_u64(r, 1, &level)) || (rc = get_u64(r, 2, &n)))
		return rc;
	r->counting = true;      /* no cache record may follow */
	if (s->have_sets)
		return bad(r, "a second 'sets' record");
	if (level >= s->levels)
		return bad(r, "the sets of cache level %llu, of %u levels",
			   (unsigned long long)level, s->levels);
	c = &s->cache[level];
	/* The tool simulates at most 2^28 lines. */
	if (!c->assoc || c->assoc > (1u << 28) || n != c->size / (c->assoc * c->line) ||
	    n == 0 || n > (1u << 28))
		return bad(r, "%llu sets, but cache level %llu has %llu",
			   (unsigned long long)n, (unsigned long long)level,
			   (unsigned long long)(c->assoc ? c->size / (c->assoc * c->line) : 0));
	s->setv = calloc(n, CS_N * sizeof(*s->setv));
	if (!s->setv)
		return nomem(r);
	s->have_sets = true;
	s->set_level = (unsigned)level;
	s->nsets = n;
	return 0;
}

static int rec_set(struct reader *r)
{
	struct sim *s = r->s;
	uint64_t i, *v;
	int rc = need_fields(r, 2 + CS_N);

	if (rc || (rc = get_u64(r, 1, &i)))
		return rc;
	if (!s->have_sets)
		return bad(r, "a 'set' record before the 'sets' record");
	if (i >= s->nsets)
		return bad(r, "set %llu of %llu", (unsigned long long)i,
			   (unsigned long long)s->nsets);
	v = s->setv + i * CS_N;
	for (size_t k = 0; k < CS_N; k++)
		if ((rc = get_u64(r, 2 + k, &v[k])))
			return rc;
	if (v[CS_HIT] + v[CS_MISS] != v[CS_LOAD] + v[CS_STORE])
		return bad(r, "set %llu: hits and misses do not add up to its accesses",
			   (unsigned long long)i);
	return 0;
}

/* hl ADDR INS LOADS STORES MISS0.., hlwb ADDR COUNT, hlother PAIRS
 * LOADS STORES WB MISS0.. */
static int rec_hl(struct reader *r)
{
	struct sim *s = r->s;
	struct sim_hl h;
	bool wb = strcmp(r->f[0], "hlwb") == 0, other = strcmp(r->f[0], "hlother") == 0;
	size_t f = 1;
	int64_t ins;
	int rc = need_fields(r, wb ? 3 : 5 + s->levels);

	memset(&h, 0, sizeof(h));
	h.ins = SIM_NONE;
	if (rc)
		return rc;
	r->counting = true;      /* no cache record may follow */
	if (!s->levels)
		return bad(r, "a '%s' record before the 'cache' records", r->f[0]);
	if (other) {
		if ((rc = get_u64(r, f++, &s->hl_dropped)))
			return rc;
	} else if ((rc = get_addr(r, f++, &h.addr))) {
		return rc;
	}
	if (wb)
		rc = get_u64(r, f++, &h.wb);
	else if (!other && !(rc = get_ref(r, f++, &s->ins_ids, "instruction", false, &ins)))
		h.ins = (uint32_t)ins;
	if (!rc && !wb && !(rc = get_u64(r, f++, &h.ld)))
		rc = get_u64(r, f++, &h.st);
	if (!rc && other)
		rc = get_u64(r, f++, &h.wb);
	for (unsigned k = 0; !rc && !wb && k < s->levels; k++)
		rc = get_u64(r, f++, &h.miss[k]);
	if (rc)
		return rc;
	if (!wb && h.miss[0] != h.ld + h.st)
		return bad(r, "level-0 misses are not its loads and stores that missed");
	for (unsigned k = 1; !wb && k < s->levels; k++)
		if (h.miss[k] > h.miss[k - 1])
			return bad(r, "more misses of level %u than of level %u", k, k - 1);
	if (other) {
		s->hl_other = h;
		s->have_hl_other = true;
		return 0;
	}
	if (grow(&s->hl, &s->cap_hl, s->nhl + 1, sizeof(*s->hl)))
		return nomem(r);
	s->hl[s->nhl++] = h;
	return 0;
}

static int rec_end(struct reader *r)
{
	struct sim *s = r->s;
	const char *code = r->f[2];
	long long c = 0;
	bool neg;
	int rc = need_fields(r, 4);

	if (rc)
		return rc;
	if (strcmp(r->f[1], "exit") && strcmp(r->f[1], "signal"))
		return bad(r, "the end is '%.40s', neither 'exit' nor 'signal'", r->f[1]);
	neg = code[0] == '-';
	code += neg;
	if (!*code || strspn(code, "0123456789") != strlen(code) || strlen(code) > 9)
		return bad(r, "field 3 of 'end' is not a number: '%.40s'", r->f[2]);
	c = strtoll(code, NULL, 10);
	if ((rc = get_u64(r, 3, &s->dropped)))
		return rc;
	snprintf(s->end_how, sizeof(s->end_how), "%s", r->f[1]);
	s->end_code = (int)(neg ? -c : c);
	s->have_end = true;
	return 0;
}

/* One whole line (without its newline), split into r->f. */
static int record(struct reader *r, char *line)
{
	struct sim *s = r->s;
	const char *k;
	uint64_t v;
	int rc = 0;

	r->nf = 0;
	for (char *p = line;;) {
		char *tab = strchr(p, '\t');

		if (grow(&r->f, &r->capf, r->nf + 1, sizeof(*r->f)))
			return nomem(r);
		r->f[r->nf++] = p;
		if (!tab)
			break;
		*tab = '\0';
		p = tab + 1;
	}
	k = r->f[0];
	if (r->lineno == 1) {
		if (strcmp(k, KS_SIM_MAGIC) != 0)
			return bad(r, "not a raw file of kscope's Valgrind tool (it starts "
				   "with '%.40s', not '" KS_SIM_MAGIC "')", k);
		if ((rc = need_fields(r, 2)) || (rc = get_u64(r, 1, &v)))
			return rc;
		if (v != KS_SIM_FORMAT)
			return bad(r, "format %llu; this kscope reads format %d",
				   (unsigned long long)v, KS_SIM_FORMAT);
		return 0;
	}
	if (r->after_end) {
		if (r->after_end++ == 1)
			sim_warnf(s, "%s:%zu: records after the 'end' record are ignored",
				  s->raw_path, r->lineno);
		return 0;
	}
	if (!*k)
		return bad(r, "an empty record");
	if (strcmp(k, "thread") == 0 || strcmp(k, "x") == 0 || strcmp(k, "bw") == 0 ||
	    strcmp(k, "tr") == 0)
		r->counting = true;
	if (strcmp(k, "pid") == 0) {
		if (!(rc = need_fields(r, 2)) && !(rc = get_u64(r, 1, &v)))
			s->pid = v > INT32_MAX ? -1 : (long long)v;
	} else if (strcmp(k, "exe") == 0) {
		if (!(rc = need_fields(r, 2)))
			rc = get_str(r, 1, &s->exe);
	} else if (strcmp(k, "region") == 0) {
		if (!(rc = need_fields(r, 2)))
			rc = get_str(r, 1, &s->region);
	} else if (strcmp(k, "cache") == 0) {
		rc = rec_cache(r);
	} else if (strcmp(k, "icache") == 0) {
		if (!(rc = need_fields(r, 4)) && !(rc = get_u64(r, 1, &s->icache[0])) &&
		    !(rc = get_u64(r, 2, &s->icache[1])) && !(rc = get_u64(r, 3, &s->icache[2])))
			s->have_icache = true;
	} else if (strcmp(k, "memory") == 0) {
		if (!(rc = need_fields(r, 2)))
			rc = get_u64(r, 1, &s->mem_latency);
	} else if (strcmp(k, "interval") == 0) {
		if (!(rc = need_fields(r, 2)) && !(rc = get_u64(r, 1, &s->interval)) &&
		    s->interval == 0)
			rc = bad(r, "an interval of 0 cycles");
	} else if (strcmp(k, "file") == 0) {
		rc = rec_named(r, &s->files, &s->nfiles, &s->cap_files, &s->file_ids);
	} else if (strcmp(k, "fn") == 0) {
		rc = rec_named(r, &s->fns, &s->nfns, &s->cap_fns, &s->fn_ids);
	} else if (strcmp(k, "ins") == 0) {
		rc = rec_ins(r);
	} else if (strcmp(k, "sb") == 0) {
		rc = rec_sb(r);
	} else if (strcmp(k, "thread") == 0) {
		rc = rec_thread(r);
	} else if (strcmp(k, "x") == 0) {
		rc = rec_x(r);
	} else if (strcmp(k, "bw") == 0) {
		rc = rec_bw(r);
	} else if (strcmp(k, "trace") == 0) {
		rc = rec_trace(r);
	} else if (strcmp(k, "tr") == 0) {
		rc = rec_tr(r);
	} else if (strcmp(k, "sets") == 0) {
		rc = rec_sets(r);
	} else if (strcmp(k, "set") == 0) {
		rc = rec_set(r);
	} else if (strcmp(k, "hl") == 0 || strcmp(k, "hlwb") == 0 ||
		   strcmp(k, "hlother") == 0) {
		rc = rec_hl(r);
	} else if (strcmp(k, "end") == 0) {
		rc = rec_end(r);
		r->after_end = rc == 0;
	} else if (r->unknown++ == 0) {
		/* A newer tool's record: the rest of the file is still good. */
		sim_warnf(s, "%s:%zu: unknown record '%.40s' ignored", s->raw_path, r->lineno,
			  k);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* The file                                                            */
/* ------------------------------------------------------------------ */

int sim_read(struct sim *s, struct ks_err *err)
{
	struct reader r = { .s = s, .err = err };
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *fp = fopen(s->raw_path, "re");
	int rc = 0;

	if (!fp)
		return ks_err_set(err, -errno, "cannot open %s: %s", s->raw_path,
				  strerror(errno));
	s->pid = -1;
	while ((n = getline(&line, &cap, fp)) > 0) {
		r.lineno++;
		if (line[n - 1] != '\n') {
			sim_warnf(s, "%s:%zu: the last line is cut short (no newline): "
				  "ignored", s->raw_path, r.lineno);
			r.lineno--;
			break;
		}
		line[--n] = '\0';
		if (memchr(line, '\0', (size_t)n)) {
			rc = bad(&r, "a NUL byte in the line");
			break;
		}
		rc = record(&r, line);
		if (rc)
			break;
	}
	if (!rc && ferror(fp))
		rc = ks_err_set(err, -EIO, "reading %s failed after line %zu", s->raw_path,
				r.lineno);
	fclose(fp);
	free(line);
	free(r.f);
	if (rc)
		return rc;
	if (r.lineno == 0)
		return ks_err_set(err, -EINVAL, "%s is empty: kscope's Valgrind tool wrote "
				  "nothing (it did not finish its start-up?)", s->raw_path);
	if (r.unknown > 1)
		sim_warnf(s, "%s: %zu records of unknown kinds were ignored", s->raw_path,
			  r.unknown);
	if (!s->have_end)
		sim_warnf(s, "%s has no 'end' record: kscope's Valgrind tool did not "
			  "finish (was it killed?); the deliverables show what it wrote "
			  "up to line %zu", s->raw_path, r.lineno);
	if (!(s->metrics & KS_SIM_METRIC_PIPE))
		return 0;  /* no pipeline chart asked for: nothing to say of it */
	if (s->dropped)
		sim_warnf(s, "the pipeline chart shows the first block executions%s only: "
			  "%llu more were past the trace limit",
			  strcmp(s->trace_from, "main") == 0 ? " from main" :
			  strcmp(s->trace_from, "region") == 0 ? " in the region" : "",
			  (unsigned long long)s->dropped);
	if (strcmp(s->trace_from, "never") == 0)
		sim_warnf(s, "the pipeline chart is empty: the program never entered main, "
			  "or main has no symbol (a stripped program); --kernel-name names the "
			  "functions to start from");
	return 0;
}

void sim_free(struct sim *s)
{
	for (size_t i = 0; i < s->nfiles; i++)
		free(s->files[i]);
	for (size_t i = 0; i < s->nfns; i++)
		free(s->fns[i]);
	free(s->files);
	free(s->fns);
	free(s->exe);
	free(s->region);
	free(s->ins);
	free(s->sbs);
	free(s->sb_ins);
	free(s->threads);
	free(s->x);
	free(s->xv);
	free(s->bw);
	free(s->bwv);
	free(s->tr);
	free(s->setv);
	free(s->hl);
	map_free(&s->file_ids);
	map_free(&s->fn_ids);
	map_free(&s->ins_ids);
	map_free(&s->sb_ids);
	map_free(&s->tids);
	free(s->text);
	free(s->cores);
	free(s->lines);
	memset(s, 0, sizeof(*s));
}
