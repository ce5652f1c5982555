/*
 * The small machinery under the memory-tool reports (mtreport_int.h): an
 * arena for strings and frames, a 64-bit-key hash map and growing arrays
 * (so 100k records are read in linear time), the buffered output every
 * writer goes through, a streaming JSON writer on top of jansson, and the
 * wording more than one report shares (Valgrind's error descriptions,
 * object names, frame locations).
 */
#include "mtreport_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Arena                                                               */
/* ------------------------------------------------------------------ */

struct ks_mtr_arena_chunk {
	struct ks_mtr_arena_chunk *next;
	alignas(max_align_t) unsigned char data[];
};

#define ARENA_CHUNK (256 * 1024)

void *ks_mtr_arena_alloc(struct ks_mtr_arena *a, size_t size)
{
	const size_t align = alignof(max_align_t);
	size_t need = (size + align - 1) & ~(align - 1);
	struct ks_mtr_arena_chunk *c;

	if (need < size)
		return NULL;
	if (!a->head || a->size - a->used < need) {
		size_t cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = a->head;
		a->head = c;
		a->used = 0;
		a->size = cap;
	}
	c = a->head;
	a->used += need;
	return c->data + a->used - need;
}

char *ks_mtr_arena_strdup(struct ks_mtr_arena *a, const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = ks_mtr_arena_alloc(a, n);

	if (p)
		memcpy(p, s, n);
	return p;
}

void ks_mtr_arena_free(struct ks_mtr_arena *a)
{
	while (a->head) {
		struct ks_mtr_arena_chunk *next = a->head->next;

		free(a->head);
		a->head = next;
	}
	a->used = a->size = 0;
}

/* ------------------------------------------------------------------ */
/* Hash map and arrays                                                 */
/* ------------------------------------------------------------------ */

static size_t map_slot(uint64_t key, size_t cap)
{
	/* A 64-bit mix (splitmix64's finalizer): ids and addresses are far
	 * from random and must not cluster. */
	key ^= key >> 30;
	key *= 0xbf58476d1ce4e5b9ULL;
	key ^= key >> 27;
	key *= 0x94d049bb133111ebULL;
	key ^= key >> 31;
	return (size_t)key & (cap - 1);
}

uint32_t ks_mtr_map_get(const struct ks_mtr_map *m, uint64_t key)
{
	if (!m->cap)
		return MTR_NONE;
	for (size_t i = map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->vals[i] == MTR_NONE)
			return MTR_NONE;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

static int map_grow(struct ks_mtr_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	uint64_t *keys = malloc(cap * sizeof(*keys));
	uint32_t *vals = malloc(cap * sizeof(*vals));

	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	memset(vals, 0xff, cap * sizeof(*vals)); /* MTR_NONE everywhere */
	for (size_t i = 0; i < m->cap; i++) {
		if (m->vals[i] == MTR_NONE)
			continue;
		size_t j = map_slot(m->keys[i], cap);

		while (vals[j] != MTR_NONE)
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int ks_mtr_map_put(struct ks_mtr_map *m, uint64_t key, uint32_t val)
{
	size_t i;

	/* Load factor at most 1/2 keeps probes short. */
	if ((m->count + 1) * 2 > m->cap && map_grow(m) != 0)
		return -ENOMEM;
	for (i = map_slot(key, m->cap); m->vals[i] != MTR_NONE; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
	m->keys[i] = key;
	m->vals[i] = val;
	m->count++;
	return 0;
}

void ks_mtr_map_free(struct ks_mtr_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

void *ks_mtr_vec_push(void *p, size_t *n, size_t *cap, size_t elem)
{
	void **pp = p;
	unsigned char *base = *pp;

	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;

		if (ncap > SIZE_MAX / elem)
			return NULL;
		base = realloc(base, ncap * elem);
		if (!base)
			return NULL;
		*pp = base;
		*cap = ncap;
	}
	memset(base + *n * elem, 0, elem);
	return base + (*n)++ * elem;
}

/* ------------------------------------------------------------------ */
/* Buffered output                                                     */
/* ------------------------------------------------------------------ */

void ks_mtr_flush(struct ks_mtr_out *o)
{
	if (!o->len)
		return;
	ks_outfile_write(o->of, o->buf, o->len);
	if (o->tee && !o->error && fwrite(o->buf, 1, o->len, o->tee) != o->len)
		o->error = -EIO;
	o->len = 0;
}

void ks_mtr_put_slow(struct ks_mtr_out *o, const char *s, size_t len)
{
	ks_mtr_flush(o);
	if (len > sizeof(o->buf)) {
		ks_outfile_write(o->of, s, len);
		if (o->tee && !o->error && fwrite(s, 1, len, o->tee) != len)
			o->error = -EIO;
		return;
	}
	memcpy(o->buf, s, len);
	o->len = len;
}

void ks_mtr_printf(struct ks_mtr_out *o, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		ks_mtr_put(o, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);

	if (!big) {
		o->of->error = o->of->error ? o->of->error : -ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ks_mtr_put(o, big, (size_t)n);
	free(big);
}

void ks_mtr_put_text(struct ks_mtr_out *o, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c != 0x7f)
			continue;
		ks_mtr_put(o, run, (size_t)(s - run));
		ks_mtr_printf(o, "\\x%02x", c);
		run = s + 1;
	}
	ks_mtr_put(o, run, (size_t)(s - run));
}

int ks_mtr_out_open(struct ks_mtr_out *o, struct ks_outfile *of, FILE *tee,
		    struct ks_rundir *rd, const char *name, struct ks_err *err)
{
	o->of = of;
	o->tee = tee;
	o->len = 0;
	o->error = 0;
	return ks_outfile_open(rd, name, of, err);
}

int ks_mtr_out_commit(struct ks_mtr_out *o, struct ks_err *err)
{
	ks_mtr_flush(o);
	if (o->tee && !o->error && fflush(o->tee) != 0)
		o->error = -EIO;
	return ks_outfile_commit(o->of, KS_DELIVERABLE_MODE, err);
}

/* ------------------------------------------------------------------ */
/* Streaming JSON                                                      */
/* ------------------------------------------------------------------ */

/* json_dump_callback's sink: copies a dumped value, indenting every line
 * after the first by the writer's depth.  A newline never occurs inside
 * a dumped string (jansson escapes it), so each one starts a line. */
struct jw_dump {
	struct ks_mtr_out *o;
	int depth;
};

static void jw_indent(struct ks_mtr_out *o, int depth)
{
	static const char spaces[] = "                                ";

	for (int n = depth * 2; n > 0; n -= (int)sizeof(spaces) - 1)
		ks_mtr_put(o, spaces, n < (int)sizeof(spaces) - 1 ? (size_t)n
							     : sizeof(spaces) - 1);
}

static int jw_dump_cb(const char *buf, size_t size, void *data)
{
	struct jw_dump *d = data;
	const char *nl;

	while (size && (nl = memchr(buf, '\n', size))) {
		size_t n = (size_t)(nl - buf) + 1;

		ks_mtr_put(d->o, buf, n);
		jw_indent(d->o, d->depth);
		buf += n;
		size -= n;
	}
	ks_mtr_put(d->o, buf, size);
	return 0;
}

/* Separator and key before a member or element at the current level. */
static void jw_lead(struct ks_mtr_jw *w, const char *key)
{
	int d = w->depth;

	if (w->flat[d]) {
		if (!w->first[d])
			ks_mtr_put(w->o, ", ", w->tight ? 1 : 2);
	} else {
		ks_mtr_puts(w->o, w->first[d] ? "\n" : ",\n");
		jw_indent(w->o, d);
	}
	w->first[d] = false;
	if (key && !w->array[d]) {
		ks_mtr_put(w->o, "\"", 1);
		ks_mtr_puts(w->o, key);
		ks_mtr_put(w->o, "\": ", w->flat[d] && w->tight ? 2 : 3);
	}
}

static void jw_open(struct ks_mtr_jw *w, const char *key, bool array, bool flat)
{
	bool parent_flat = w->flat[w->depth];

	jw_lead(w, key);
	ks_mtr_put(w->o, array ? "[" : "{", 1);
	/* Deeper than any report goes; stay in bounds regardless. */
	if (w->depth + 1 < MTR_JW_DEPTH)
		w->depth++;
	w->first[w->depth] = true;
	w->array[w->depth] = array;
	w->flat[w->depth] = flat || parent_flat;
}

void ks_mtr_jw_init(struct ks_mtr_jw *w, struct ks_mtr_out *o)
{
	memset(w, 0, sizeof(*w));
	w->o = o;
	ks_mtr_put(o, "{", 1);
	w->depth = 1;
	w->first[1] = true;
}

void ks_mtr_jw_object(struct ks_mtr_jw *w, const char *key)
{
	jw_open(w, key, false, false);
}

void ks_mtr_jw_array(struct ks_mtr_jw *w, const char *key)
{
	jw_open(w, key, true, false);
}

void ks_mtr_jw_object_flat(struct ks_mtr_jw *w, const char *key)
{
	jw_open(w, key, false, true);
}

void ks_mtr_jw_array_flat(struct ks_mtr_jw *w, const char *key)
{
	jw_open(w, key, true, true);
}

void ks_mtr_jw_end(struct ks_mtr_jw *w)
{
	int d = w->depth;
	bool array = w->array[d], empty = w->first[d], flat = w->flat[d];

	if (w->depth > 0)
		w->depth--;
	if (!empty && !flat) {
		ks_mtr_put(w->o, "\n", 1);
		jw_indent(w->o, w->depth);
	}
	ks_mtr_put(w->o, array ? "]" : "}", 1);
}

void ks_mtr_jw_finish(struct ks_mtr_jw *w)
{
	while (w->depth > 0)
		ks_mtr_jw_end(w);
	ks_mtr_put(w->o, "\n", 1);
}

void ks_mtr_jw_put(struct ks_mtr_jw *w, const char *key, json_t *v)
{
	struct jw_dump d = { w->o, w->flat[w->depth] ? 0 : w->depth };
	size_t flags = JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6);

	jw_lead(w, key);
	if (!v) {
		ks_mtr_puts(w->o, "null");
		return;
	}
	flags |= w->flat[w->depth] ? JSON_COMPACT : JSON_INDENT(2);
	json_dump_callback(v, jw_dump_cb, &d, flags);
	json_decref(v);
}

/* A JSON string the way jansson dumps one (quote, backslash and control
 * characters escaped, UTF-8 as is), written directly: jansson escapes
 * only values it owns, and a json_t per string would be an allocation
 * for each of the millions of names in a large report.  Names came
 * through jansson's parser and are valid UTF-8; the kscope command line
 * and texts cut to a buffer may not be, so a byte that starts no valid
 * sequence becomes U+FFFD. */
static void jw_string(struct ks_mtr_out *o, const char *s)
{
	const char *run = s;

	ks_mtr_put(o, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[8];

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\')
			continue;
		if (c >= 0x80) {
			size_t n = ks_utf8_len((const unsigned char *)s, SIZE_MAX);

			if (n) {
				s += n - 1;
				continue;
			}
		}
		ks_mtr_put(o, run, (size_t)(s - run));
		switch (c) {
		case '"': ks_mtr_put(o, "\\\"", 2); break;
		case '\\': ks_mtr_put(o, "\\\\", 2); break;
		case '\b': ks_mtr_put(o, "\\b", 2); break;
		case '\f': ks_mtr_put(o, "\\f", 2); break;
		case '\n': ks_mtr_put(o, "\\n", 2); break;
		case '\r': ks_mtr_put(o, "\\r", 2); break;
		case '\t': ks_mtr_put(o, "\\t", 2); break;
		default:
			if (c >= 0x80) {
				ks_mtr_put(o, "\xef\xbf\xbd", 3); /* U+FFFD */
			} else {
				snprintf(esc, sizeof(esc), "\\u%04X", c);
				ks_mtr_put(o, esc, 6);
			}
			break;
		}
		run = s + 1;
	}
	ks_mtr_put(o, run, (size_t)(s - run));
	ks_mtr_put(o, "\"", 1);
}

void ks_mtr_jw_str(struct ks_mtr_jw *w, const char *key, const char *s)
{
	jw_lead(w, key);
	if (s)
		jw_string(w->o, s);
	else
		ks_mtr_puts(w->o, "null");
}

/* Decimal digits of v, without printf (the hot path of large reports). */
static void jw_digits(struct ks_mtr_out *o, uint64_t v, bool negative)
{
	char buf[24], *p = buf + sizeof(buf);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (negative)
		*--p = '-';
	ks_mtr_put(o, p, (size_t)(buf + sizeof(buf) - p));
}

void ks_mtr_jw_uint(struct ks_mtr_jw *w, const char *key, uint64_t v)
{
	jw_lead(w, key);
	/* Counts were read as json_int_t; sums are clamped to stay one. */
	jw_digits(w->o, v > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : v, false);
}

void ks_mtr_jw_int(struct ks_mtr_jw *w, const char *key, long long v)
{
	jw_lead(w, key);
	jw_digits(w->o, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void ks_mtr_jw_bool(struct ks_mtr_jw *w, const char *key, bool v)
{
	jw_lead(w, key);
	ks_mtr_puts(w->o, v ? "true" : "false");
}

void ks_mtr_jw_addr(struct ks_mtr_jw *w, const char *key, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char buf[24], *p = buf + sizeof(buf);

	jw_lead(w, key);
	*--p = '"';
	do {
		*--p = hex[v & 15];
		v >>= 4;
	} while (v);
	*--p = 'x';
	*--p = '0';
	*--p = '"';
	ks_mtr_put(w->o, p, (size_t)(buf + sizeof(buf) - p));
}

json_t *ks_mtr_json_u64(uint64_t v)
{
	/* Counts were read as json_int_t, so they fit; sums are clamped. */
	return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* ------------------------------------------------------------------ */
/* Wording                                                             */
/* ------------------------------------------------------------------ */

const char *const ks_mtr_analysis_names[3] = { "memcheck", "contention", "falseshare" };
const char *const ks_mtr_ekind_names[MTR_E_COUNT] = {
	"invalid-read", "invalid-write", "use-after-free", "uninit-cond",
	"uninit-addr", "uninit-syscall", "double-free", "invalid-free",
	"leak-definite", "leak-possible", "leak-indirect", "leak-reachable",
	"mismatched-free", "uninit-value", "invalid-syscall", "overlap", "fishy-value",
	"client-check", "invalid-jump", "invalid-mempool", "other",
};
const char *const ks_mtr_verdict_names[3] = { "false", "true", "mixed" };
const char *const ks_mtr_vkind_names[4] = { "heap", "global", "stack", "unknown" };

void ks_mtr_hex(char buf[19], uint64_t v)
{
	snprintf(buf, 19, "0x%" PRIx64, v);
}

void ks_mtr_error_what(const struct ks_mtr_error *e, char *buf, size_t size)
{
	if (e->what) {
		snprintf(buf, size, "%s", e->what);
		return;
	}
	switch (e->kind) {
	case MTR_E_INVALID_READ:
	case MTR_E_INVALID_WRITE:
	case MTR_E_USE_AFTER_FREE: {
		bool write = e->kind == MTR_E_INVALID_WRITE ||
			     (e->kind == MTR_E_USE_AFTER_FREE && e->write);

		snprintf(buf, size, "Invalid %s of size %" PRIu64, write ? "write" : "read",
			 e->size);
		break;
	}
	case MTR_E_UNINIT_COND:
		snprintf(buf, size, "Conditional jump or move depends on uninitialised value(s)");
		break;
	case MTR_E_UNINIT_ADDR:
		if (e->has_size)
			snprintf(buf, size, "Use of uninitialised value of size %" PRIu64
				 " as a memory address", e->size);
		else
			snprintf(buf, size, "Use of uninitialised value as a memory address");
		break;
	case MTR_E_UNINIT_SYSCALL:
		/* Valgrind says "points to" for a buffer the call reads and
		 * "contains" for an argument itself. */
		snprintf(buf, size, "Syscall param %s(%s) %s uninitialised byte(s)", e->syscall,
			 e->param, e->has_addr ? "points to" : "contains");
		break;
	case MTR_E_DOUBLE_FREE:
		snprintf(buf, size, "Invalid free() / delete / delete[] / realloc() (double free)");
		break;
	case MTR_E_INVALID_FREE:
	default:
		snprintf(buf, size, "Invalid free() / delete / delete[] / realloc()");
		break;
	}
}

void ks_mtr_error_where(const struct ks_mtr_error *e, char *buf, size_t size)
{
	char a[19];
	const struct ks_mtr_block *b = &e->block;

	buf[0] = '\0';
	/* Memcheck's own sentence when it gave one about a block or an
	 * address. */
	if (e->naux && e->aux[0].what && !strncmp(e->aux[0].what, "Address ", 8)) {
		snprintf(buf, size, "%s", e->aux[0].what);
		return;
	}
	if (!e->has_addr)
		return;
	ks_mtr_hex(a, e->addr);
	if (!e->has_block) {
		snprintf(buf, size, "Address %s is not inside a known heap block", a);
		return;
	}
	const char *state = b->freed ? "free'd" : "alloc'd";

	if (b->offset < 0)
		snprintf(buf, size, "Address %s is %llu bytes before a block of size %" PRIu64
			 " %s", a, -(unsigned long long)b->offset, b->size, state);
	else if ((uint64_t)b->offset < b->size)
		snprintf(buf, size, "Address %s is %lld bytes inside a block of size %" PRIu64
			 " %s", a, b->offset, b->size, state);
	else
		snprintf(buf, size, "Address %s is %" PRIu64 " bytes after a block of size %"
			 PRIu64 " %s", a, (uint64_t)b->offset - b->size, b->size, state);
}

/* n with a comma every three digits, as Memcheck writes sizes. */
static void grouped(char buf[32], uint64_t n)
{
	char raw[24];
	int len = snprintf(raw, sizeof(raw), "%" PRIu64, n), o = 0;

	for (int i = 0; i < len; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = '\0';
}

const char *ks_mtr_near_relation(const struct ks_mtr_near *b, uint64_t a, uint64_t *distance)
{
	if (a < b->addr) {
		*distance = b->addr - a;
		return "before";
	}
	if (a - b->addr < b->size) {
		*distance = a - b->addr;
		return "inside";
	}
	*distance = a - b->addr - b->size;
	return "after";
}

bool ks_mtr_heap_map_line(const struct ks_mtr_error *e, int k, char *buf, size_t size)
{
	const struct ks_mtr_near *b = NULL;
	char a[19], at[19], dist[32], bytes[32];
	uint64_t d;
	const char *rel;

	buf[0] = '\0';
	ks_mtr_hex(a, e->addr);
	switch (e->hm) {
	case MTR_HM_HINT:
		if (k)
			return false;
		snprintf(buf, size, "Hint: Memcheck relates %s to no block; run kscope memcheck "
			 "--heap-map to name the heap block nearest to it at the moment of the "
			 "access, or rebuild with -fsanitize=address (--engine asan), whose "
			 "allocator names it", a);
		return true;
	case MTR_HM_NOTHING:
		if (k)
			return false;
		snprintf(buf, size, "Heap map: no live block within %" PRIu64 " MiB of %s at "
			 "that moment", MTR_HM_NEAR_MAX >> 20, a);
		return true;
	case MTR_HM_UNKNOWN:
		if (k)
			return false;
		snprintf(buf, size, "Heap map: the nearest block is not known: %s",
			 e->hm_why ? e->hm_why : "no reason given");
		return true;
	case MTR_HM_FOUND:
		if (k == 0)
			b = e->hm_below.present ? &e->hm_below : &e->hm_above;
		else if (k == 1 && e->hm_below.present && e->hm_above.present)
			b = &e->hm_above;
		if (!b || !b->present)
			return false;
		rel = ks_mtr_near_relation(b, e->addr, &d);
		grouped(dist, d);
		grouped(bytes, b->size);
		ks_mtr_hex(at, b->addr);
		snprintf(buf, size, "Heap map: address %s is %s bytes %s the block of %s bytes "
			 "at %s (allocated by %s, allocation #%" PRIu64 ")", a, dist, rel, bytes,
			 at, b->fn ? b->fn : "?", b->alloc_no);
		return true;
	default:
		return false;
	}
}

const char *ks_mtr_xml_kind(enum ks_mtr_ekind k, bool write)
{
	switch (k) {
	case MTR_E_INVALID_READ: return "InvalidRead";
	case MTR_E_INVALID_WRITE: return "InvalidWrite";
	case MTR_E_USE_AFTER_FREE: return write ? "InvalidWrite" : "InvalidRead";
	case MTR_E_UNINIT_COND: return "UninitCondition";
	case MTR_E_UNINIT_ADDR: return "UninitValue";
	case MTR_E_UNINIT_SYSCALL: return "SyscallParam";
	case MTR_E_DOUBLE_FREE:
	case MTR_E_INVALID_FREE: return "InvalidFree";
	case MTR_E_LEAK_DEFINITE: return "Leak_DefinitelyLost";
	case MTR_E_LEAK_POSSIBLE: return "Leak_PossiblyLost";
	case MTR_E_LEAK_INDIRECT: return "Leak_IndirectlyLost";
	case MTR_E_LEAK_REACHABLE: return "Leak_StillReachable";
	case MTR_E_MISMATCHED_FREE: return "MismatchedFree";
	case MTR_E_UNINIT_VALUE: return "UninitValue";
	case MTR_E_INVALID_SYSCALL: return "SyscallParam";
	case MTR_E_OVERLAP: return "Overlap";
	case MTR_E_FISHY_VALUE: return "FishyValue";
	case MTR_E_CLIENT_CHECK: return "ClientCheck";
	case MTR_E_INVALID_JUMP: return "InvalidJump";
	case MTR_E_INVALID_MEMPOOL: return "InvalidMemPool";
	default: return "Unknown";
	}
}

const char *ks_mtr_error_xml_kind(const struct ks_mtr_error *e)
{
	return e->xml_kind ? e->xml_kind : ks_mtr_xml_kind(e->kind, e->write);
}

void ks_mtr_leak_what(const struct ks_mtr_leak *l, char *buf, size_t size)
{
	const char *how = l->kind == MTR_E_LEAK_POSSIBLE   ? "possibly lost"
			  : l->kind == MTR_E_LEAK_INDIRECT ? "indirectly lost"
			  : l->kind == MTR_E_LEAK_REACHABLE ? "still reachable"
							    : "definitely lost";

	if (l->what)
		snprintf(buf, size, "%s", l->what);
	else
		snprintf(buf, size, "%" PRIu64 " bytes in %" PRIu64 " blocks are %s", l->bytes,
			 l->blocks, how);
}

const struct ks_mtr_frame *ks_mtr_stack_line_frame(const struct ks_mtr_stack *s)
{
	for (uint32_t i = 0; i < s->nframes; i++)
		if (s->frames[i].line && s->frames[i].file)
			return &s->frames[i];
	return NULL;
}

bool ks_mtr_frame_is_replacement(const struct ks_mtr_frame *f)
{
	const char *base = f->obj ? strrchr(f->obj, '/') : NULL;

	base = base ? base + 1 : f->obj;
	return (base && !strncmp(base, "vgpreload_", 10)) ||
	       (f->fn && (!strncmp(f->fn, "vg_replace_", 11) || !strncmp(f->fn, "_vgr", 4)));
}

/* True for a frame in the system's libraries (the C library, the loader,
 * libstdc++...) or in Valgrind's own files: code the user did not write. */
static bool frame_is_system(const struct ks_mtr_frame *f)
{
	static const char *const dirs[] = { "/lib/", "/lib32/", "/lib64/", "/libx32/",
					    "/usr/lib/", "/usr/lib32/", "/usr/lib64/",
					    "/usr/libx32/", "/usr/libexec/valgrind/" };

	if (ks_mtr_frame_is_replacement(f))
		return true;
	for (size_t i = 0; f->obj && i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!strncmp(f->obj, dirs[i], strlen(dirs[i])))
			return true;
	return false;
}

const struct ks_mtr_frame *ks_mtr_stack_user_frame(const struct ks_mtr_stack *s)
{
	for (uint32_t i = 0; i < s->nframes; i++)
		if (s->frames[i].line && s->frames[i].file && !frame_is_system(&s->frames[i]))
			return &s->frames[i];
	return ks_mtr_stack_line_frame(s);
}

void ks_mtr_frame_where(const struct ks_mtr_frame *f, char *buf, size_t size)
{
	const char *fn = f->fn ? f->fn : "???";

	if (f->file && f->line)
		snprintf(buf, size, "%s (%s:%lu)", fn, f->file, f->line);
	else if (f->obj)
		snprintf(buf, size, "%s (in %s)", fn, f->obj);
	else if (f->file)
		snprintf(buf, size, "%s (%s)", fn, f->file);
	else
		snprintf(buf, size, "%s", fn);
}

void ks_mtr_context_where(const struct ks_mtr_run *r, uint32_t stack, char *buf,
			  size_t size)
{
	const struct ks_mtr_stack *s = &r->stacks[stack];
	const struct ks_mtr_frame *f = ks_mtr_stack_line_frame(s);
	int n;

	/* The address tells apart two contexts on one source line (a load
	 * and a store of the same statement). */
	f = f ? f : &s->frames[0];
	n = snprintf(buf, size, "0x%" PRIx64 ": ", f->ip);
	if (n > 0 && (size_t)n < size)
		ks_mtr_frame_where(f, buf + n, size - (size_t)n);
}

void ks_mtr_proc_exit_text(const struct ks_mtr_run *r, uint32_t i, char *buf,
			   size_t size)
{
	const struct ks_mtr_end *e = &r->procs[i].end;

	if (!e->present && r->start.analysis == MTR_MEMCHECK) {
		snprintf(buf, size, "did not finish normally: Memcheck's output of it ends "
			 "early, so these results are incomplete");
	} else if (!e->present) {
		snprintf(buf, size, "did not finish normally: its findings file has no end "
			 "record, so these results are incomplete");
	} else if (e->exec) {
		snprintf(buf, size, "replaced itself (exec)");
	} else if (e->no_code) {
		snprintf(buf, size, "exited");
	} else if (e->unknown) {
		snprintf(buf, size, "was killed by a signal");
	} else if (e->signaled) {
		const char *abbrev = e->code > 0 && e->code < 128 ? sigabbrev_np((int)e->code)
								  : NULL;

		if (abbrev)
			snprintf(buf, size, "was killed by signal %lld (SIG%s)", e->code, abbrev);
		else
			snprintf(buf, size, "was killed by signal %lld", e->code);
	} else {
		snprintf(buf, size, "exited with code %lld", e->code);
	}
}

void ks_mtr_exit_text(const struct ks_mtr_run *r, char *buf, size_t size)
{
	char how[200];

	ks_mtr_proc_exit_text(r, r->root_last, how, sizeof(how));
	snprintf(buf, size, "Process %lld %s", r->start.pid, how);
}

char *ks_mtr_frame_path(const struct ks_mtr_frame *f, char *buf, size_t size)
{
	if (!f->file)
		return NULL;
	if (f->dir && f->dir[0] && f->file[0] != '/')
		snprintf(buf, size, "%s%s%s", f->dir,
			 f->dir[strlen(f->dir) - 1] == '/' ? "" : "/", f->file);
	else
		snprintf(buf, size, "%s", f->file);
	return buf;
}

void ks_mtr_var_name(const struct ks_mtr_run *r, const struct ks_mtr_var *v, char *buf,
		     size_t size)
{
	char a[19], where[512];

	ks_mtr_hex(a, v->addr);
	switch (v->kind) {
	case MTR_V_HEAP: {
		const struct ks_mtr_frame *f = NULL;

		if (v->alloc_stack != MTR_NONE) {
			const struct ks_mtr_stack *s = &r->stacks[v->alloc_stack];

			/* Skip malloc itself: the first frame with a line is
			 * the program's allocation site. */
			f = ks_mtr_stack_line_frame(s);
			if (!f)
				f = &s->frames[s->nframes > 1 ? 1 : 0];
		}
		if (f) {
			ks_mtr_frame_where(f, where, sizeof(where));
			snprintf(buf, size, "heap block of %" PRIu64 " bytes allocated at %s",
				 v->size, where);
		} else {
			snprintf(buf, size, "heap block of %" PRIu64 " bytes at %s", v->size, a);
		}
		break;
	}
	case MTR_V_GLOBAL:
		if (v->name)
			snprintf(buf, size, "%s (global, %" PRIu64 " bytes)", v->name, v->size);
		else
			snprintf(buf, size, "global at %s (%" PRIu64 " bytes)", a, v->size);
		break;
	case MTR_V_STACK:
		if (v->name)
			snprintf(buf, size, "%s (stack, %" PRIu64 " bytes)", v->name, v->size);
		else
			snprintf(buf, size, "stack object at %s (%" PRIu64 " bytes)", a, v->size);
		break;
	case MTR_V_UNKNOWN:
	default:
		if (v->name)
			snprintf(buf, size, "%s (%" PRIu64 " bytes)", v->name, v->size);
		else
			snprintf(buf, size, "object at %s (%" PRIu64 " bytes)", a, v->size);
		break;
	}
}

void ks_mtr_fobj_name(const struct ks_mtr_run *r, const struct ks_mtr_fobj *f, char *buf,
		      size_t size)
{
	char a[19];

	if (f->var != MTR_NONE) {
		ks_mtr_var_name(r, &r->vars[f->var], buf, size);
		return;
	}
	ks_mtr_hex(a, r->lines[f->line].addr);
	snprintf(buf, size, "unknown object on line %s", a);
}

void ks_mtr_fobj_range(const struct ks_mtr_run *r, const struct ks_mtr_fobj *f, uint64_t *addr,
		       uint64_t *size)
{
	if (f->var != MTR_NONE) {
		*addr = r->vars[f->var].addr;
		*size = r->vars[f->var].size;
	} else {
		*addr = r->lines[f->line].addr;
		*size = r->start.line_size;
	}
}

uint64_t ks_mtr_score(const struct ks_mtr_counts *c)
{
	return c->misses + c->invalidations;
}
