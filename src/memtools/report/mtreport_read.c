/*
 * The findings.jsonl reader: one jansson parse per line, every field of
 * every known record checked for presence and type before it is used,
 * and every reference turned into an array index (docs/formats.md,
 * "Memory-tool run directories").  The file is the contract with the
 * Valgrind tool, which is written separately; a record that breaks it is
 * reported as "PATH:LINE: what was wrong" (-EBADMSG) rather than guessed
 * at.  Records with an unknown `rec` are skipped so that a newer tool can
 * add records, and fields nobody reads are not required (the `start`
 * record's redzone, freelist_vol and options, the `end` record's heap,
 * shadow_bytes and threads), though they are checked when present.  An
 * error's `addr` is optional too: the tool leaves out an address of 0.
 *
 * A file holds one segment per process image, each from a start record
 * to an end record: a process that execs continues its file with the new
 * image's start record.  Ids (stacks, vars, threads, line addresses) are
 * those of one segment.
 *
 * Stacks must be defined before their first use (the format says so);
 * variables and lines may be referred to before or after their record,
 * so those references are resolved once the whole file is read.
 *
 * A last line without its newline that does not parse is the tail of a
 * write the tool never finished (the run was killed): it is dropped and
 * the run is reported as truncated, like a file without an end record.
 */
#include "mtreport_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck.h"

/* The reader's state while it walks the file. */
struct rd {
	struct ks_mtr_run *r;
	struct ks_err *err;
	unsigned long lineno;
	bool seg_total;      /* the segment being read had its total record */
	uint32_t images;     /* segments this file gave so far */
	char label[96];      /* "error record", "line record: threads[2]"; "" between records */
};

static void label(struct rd *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void label(struct rd *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->label, sizeof(d->label), fmt, ap);
	va_end(ap);
}

static int bad(struct rd *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records "PATH:LINE: LABEL: MESSAGE" in err; returns -EBADMSG. */
static int bad(struct rd *d, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (d->label[0])
		return ks_err_set(d->err, -EBADMSG, "%s:%lu: %s: %s", d->r->path,
				  d->lineno, d->label, msg);
	return ks_err_set(d->err, -EBADMSG, "%s:%lu: %s", d->r->path, d->lineno, msg);
}

static int oom(struct rd *d)
{
	return ks_err_set(d->err, -ENOMEM, "%s:%lu: out of memory", d->r->path, d->lineno);
}

/* Appends a copy of rec (elem bytes) to one of the run's record arrays:
 * 0, or the out-of-memory error. */
static int append(struct rd *d, void *vec, size_t *n, size_t *cap, const void *rec,
		  size_t elem)
{
	void *p = ks_mtr_vec_push(vec, n, cap, elem);

	if (!p)
		return oom(d);
	memcpy(p, rec, elem);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Fields                                                              */
/* ------------------------------------------------------------------ */

/* Each getter returns 0 (value stored), 1 (absent and not required) or
 * -EBADMSG with the message set. */

static int get_int(struct rd *d, json_t *o, const char *key, bool required,
		   long long min, long long *out)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return required ? bad(d, "'%s' is missing", key) : 1;
	if (!json_is_integer(v))
		return bad(d, "'%s' is not an integer", key);
	if (json_integer_value(v) < min)
		return bad(d, "'%s' is %lld, less than %lld", key,
			   (long long)json_integer_value(v), min);
	*out = json_integer_value(v);
	return 0;
}

static int get_count(struct rd *d, json_t *o, const char *key, bool required,
		     uint64_t *out)
{
	long long v;
	int rc = get_int(d, o, key, required, 0, &v);

	if (rc == 0)
		*out = (uint64_t)v;
	return rc;
}

/* An address: a string "0x" and 1 to 16 hexadecimal digits. */
static int get_addr(struct rd *d, json_t *o, const char *key, bool required,
		    uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	const char *s;
	uint64_t a = 0;
	size_t n, i;

	if (!v)
		return required ? bad(d, "'%s' is missing", key) : 1;
	if (!json_is_string(v))
		return bad(d, "'%s' is not a string \"0x...\"", key);
	s = json_string_value(v);
	n = json_string_length(v);
	if (n < 3 || n > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		goto malformed;
	for (i = 2; i < n; i++) {
		unsigned c = (unsigned char)s[i], digit;

		if (c >= '0' && c <= '9')
			digit = c - '0';
		else if (c >= 'a' && c <= 'f')
			digit = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			digit = c - 'A' + 10;
		else
			goto malformed;
		a = a << 4 | digit;
	}
	*out = a;
	return 0;
malformed: {
		char q[80];

		ks_quote(q, sizeof(q), s, n);
		return bad(d, "'%s' is '%s', not an address \"0x...\"", key, q);
	}
}

static int get_str(struct rd *d, json_t *o, const char *key, bool required,
		   const char **out)
{
	json_t *v = json_object_get(o, key);
	char *s;

	if (!v)
		return required ? bad(d, "'%s' is missing", key) : 1;
	if (!json_is_string(v))
		return bad(d, "'%s' is not a string", key);
	s = ks_mtr_arena_strdup(&d->r->arena, json_string_value(v));
	if (!s)
		return oom(d);
	*out = s;
	return 0;
}

/* One of names[0..n-1]; *out is its index. */
static int get_enum(struct rd *d, json_t *o, const char *key, bool required,
		    const char *const *names, int n, int *out)
{
	json_t *v = json_object_get(o, key);
	char q[80];

	if (!v)
		return required ? bad(d, "'%s' is missing", key) : 1;
	if (!json_is_string(v))
		return bad(d, "'%s' is not a string", key);
	for (int i = 0; i < n; i++)
		if (strcmp(json_string_value(v), names[i]) == 0) {
			*out = i;
			return 0;
		}
	ks_quote(q, sizeof(q), json_string_value(v), json_string_length(v));
	return bad(d, "'%s' has an unknown value '%s'", key, q);
}

static int get_bool(struct rd *d, json_t *o, const char *key, int *out)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 1;
	if (!json_is_boolean(v))
		return bad(d, "'%s' is not true or false", key);
	*out = json_is_true(v);
	return 0;
}

/* A reference to a stack defined on an earlier line. */
static int get_stack(struct rd *d, json_t *o, const char *key, bool required,
		     uint32_t *out)
{
	long long id;
	int rc = get_int(d, o, key, required, LLONG_MIN, &id);

	if (rc)
		return rc;
	*out = ks_mtr_map_get(&d->r->stack_ids, (uint64_t)id);
	if (*out == MTR_NONE)
		return bad(d, "'%s' refers to stack %lld, which is not defined before this "
			   "line", key, id);
	return 0;
}

static int get_counts(struct rd *d, json_t *o, struct ks_mtr_counts *c)
{
	int rc;

	if ((rc = get_count(d, o, "accesses", true, &c->accesses)) ||
	    (rc = get_count(d, o, "reads", true, &c->reads)) ||
	    (rc = get_count(d, o, "writes", true, &c->writes)) ||
	    (rc = get_count(d, o, "cold_misses", true, &c->cold_misses)) ||
	    (rc = get_count(d, o, "misses", true, &c->misses)) ||
	    (rc = get_count(d, o, "invalidations", true, &c->invalidations)))
		return rc;
	return 0;
}

/* Turns "0x..." of any length into a bit mask of nmask 64-bit words
 * holding nwords bits; a bit at or past nwords is an error. */
static int get_mask(struct rd *d, json_t *o, const char *key, unsigned nwords,
		    unsigned nmask, uint64_t **out)
{
	json_t *v = json_object_get(o, key);
	const char *s;
	size_t n;
	uint64_t *m;
	char q[80];

	if (!v)
		return bad(d, "'%s' is missing", key);
	if (!json_is_string(v))
		return bad(d, "'%s' is not a string \"0x...\"", key);
	s = json_string_value(v);
	n = json_string_length(v);
	m = ks_mtr_arena_alloc(&d->r->arena, nmask * sizeof(*m));
	if (!m)
		return oom(d);
	memset(m, 0, nmask * sizeof(*m));
	if (n < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		goto malformed;
	/* Digits from the least significant end: digit k holds bits 4k..4k+3. */
	for (size_t k = 0; k < n - 2; k++) {
		unsigned c = (unsigned char)s[n - 1 - k], digit;

		if (c >= '0' && c <= '9')
			digit = c - '0';
		else if (c >= 'a' && c <= 'f')
			digit = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			digit = c - 'A' + 10;
		else
			goto malformed;
		for (unsigned b = 0; b < 4; b++) {
			uint64_t bit;

			if (!(digit >> b & 1))
				continue;
			bit = (uint64_t)k * 4 + b;
			if (bit >= nwords)
				return bad(d, "'%s' marks word %" PRIu64 " but a line has %u "
					   "words", key, bit, nwords);
			m[bit / 64] |= 1ULL << (bit % 64);
		}
	}
	*out = m;
	return 0;
malformed:
	ks_quote(q, sizeof(q), s, n);
	return bad(d, "'%s' is '%s', not a mask \"0x...\"", key, q);
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

static int rec_start(struct rd *d, json_t *o)
{
	struct ks_mtr_start *s = &d->r->start;
	long long v;
	json_t *argv, *opts;
	int rc, a;

	if (d->r->started)
		return bad(d, "a second start record");
	if ((rc = get_enum(d, o, "analysis", true, ks_mtr_analysis_names, 3, &a)))
		return rc;
	if (d->r->nprocs && a != (int)d->r->procs[0].start.analysis)
		return bad(d, "a %s process in a %s run", ks_mtr_analysis_names[a],
			   ks_mtr_analysis_names[d->r->procs[0].start.analysis]);
	s->analysis = (enum ks_mtr_analysis)a;
	if ((rc = get_int(d, o, "format", true, LLONG_MIN, &v)))
		return rc;
	if (v != 1)
		return bad(d, "format %lld is not supported (this kscope reads format 1)", v);
	if ((rc = get_int(d, o, "pid", true, 0, &s->pid)) ||
	    (rc = get_str(d, o, "exe", true, &s->exe)))
		return rc;
	rc = get_int(d, o, "ppid", false, 0, &s->ppid);
	if (rc < 0)
		return rc;
	if (rc == 1)
		s->ppid = -1;
	argv = json_object_get(o, "argv");
	if (!json_is_array(argv))
		return bad(d, argv ? "'argv' is not an array" : "'argv' is missing");
	s->argc = json_array_size(argv);
	s->argv = ks_mtr_arena_alloc(&d->r->arena, (s->argc + 1) * sizeof(*s->argv));
	if (!s->argv)
		return oom(d);
	for (size_t i = 0; i < s->argc; i++) {
		json_t *e = json_array_get(argv, i);

		if (!json_is_string(e))
			return bad(d, "'argv' element %zu is not a string", i);
		s->argv[i] = ks_mtr_arena_strdup(&d->r->arena, json_string_value(e));
		if (!s->argv[i])
			return oom(d);
	}
	if ((rc = get_int(d, o, "line_size", true, 1, &v)))
		return rc;
	if (v < 16 || v > 4096 || (v & (v - 1)))
		return bad(d, "'line_size' %lld is not a power of two from 16 to 4096", v);
	s->line_size = (unsigned)v;
	if ((rc = get_int(d, o, "word_size", true, 1, &v)))
		return rc;
	if (v > s->line_size || (v & (v - 1)))
		return bad(d, "'word_size' %lld is not a power of two up to line_size", v);
	s->word_size = (unsigned)v;
	rc = get_count(d, o, "redzone", false, &s->redzone);
	if (rc < 0)
		return rc;
	s->has_redzone = rc == 0;
	rc = get_count(d, o, "freelist_vol", false, &s->freelist_vol);
	if (rc < 0)
		return rc;
	s->has_freelist = rc == 0;
	if ((rc = get_str(d, o, "front_end", false, &s->front_end)) < 0)
		return rc;
	if (rc == 1)
		s->front_end = "valgrind";
	else if (strcmp(s->front_end, "valgrind") && strcmp(s->front_end, "compiled"))
		return bad(d, "'front_end' is '%s', not valgrind or compiled", s->front_end);
	s->min_write = s->pad_smu = s->thread_isolation = -1;
	opts = json_object_get(o, "options");
	if (opts) {
		if (!json_is_object(opts))
			return bad(d, "'options' is not an object");
		label(d, "start record: options");
		if ((rc = get_bool(d, opts, "min_write", &s->min_write)) < 0 ||
		    (rc = get_bool(d, opts, "pad_smu", &s->pad_smu)) < 0 ||
		    (rc = get_bool(d, opts, "thread_isolation", &s->thread_isolation)) < 0)
			return rc;
	}
	d->r->started = true;
	return 0;
}

static int rec_stack(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_stack *s;
	json_t *frames;
	long long id;
	int rc;

	if ((rc = get_int(d, o, "id", true, LLONG_MIN, &id)))
		return rc;
	if (ks_mtr_map_get(&r->stack_ids, (uint64_t)id) != MTR_NONE)
		return bad(d, "stack %lld is defined twice", id);
	frames = json_object_get(o, "frames");
	if (!json_is_array(frames))
		return bad(d, frames ? "'frames' is not an array" : "'frames' is missing");
	if (json_array_size(frames) == 0)
		return bad(d, "stack %lld has no frames", id);
	if (json_array_size(frames) > UINT32_MAX / 2)
		return bad(d, "stack %lld has too many frames", id);
	if (r->nstacks >= UINT32_MAX - 1)
		return bad(d, "too many stacks");
	s = ks_mtr_vec_push(&r->stacks, &r->nstacks, &r->cap_stacks, sizeof(*s));
	if (!s)
		return oom(d);
	s->id = id;
	s->nframes = (uint32_t)json_array_size(frames);
	s->frames = ks_mtr_arena_alloc(&r->arena, s->nframes * sizeof(*s->frames));
	if (!s->frames)
		return oom(d);
	for (uint32_t i = 0; i < s->nframes; i++) {
		json_t *f = json_array_get(frames, i);
		struct ks_mtr_frame *fr = &s->frames[i];
		long long line;

		memset(fr, 0, sizeof(*fr));
		label(d, "stack record: frame %u", i);
		if (!json_is_object(f))
			return bad(d, "not an object");
		if ((rc = get_addr(d, f, "ip", true, &fr->ip)) ||
		    (rc = get_str(d, f, "fn", false, &fr->fn)) < 0 ||
		    (rc = get_str(d, f, "obj", false, &fr->obj)) < 0 ||
		    (rc = get_str(d, f, "file", false, &fr->file)) < 0 ||
		    (rc = get_str(d, f, "dir", false, &fr->dir)) < 0)
			return rc;
		/* Line 0 is DWARF's "no line"; treat it as absent. */
		rc = get_int(d, f, "line", false, 0, &line);
		if (rc < 0)
			return rc;
		if (rc == 0)
			fr->line = (unsigned long long)line > ULONG_MAX ? ULONG_MAX
								     : (unsigned long)line;
	}
	label(d, "stack record");
	if (ks_mtr_map_put(&r->stack_ids, (uint64_t)id, (uint32_t)(r->nstacks - 1)))
		return oom(d);
	return 0;
}

static int rec_var(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_var v = { .alloc_stack = MTR_NONE };
	int rc, kind;

	if ((rc = get_int(d, o, "id", true, LLONG_MIN, &v.id)))
		return rc;
	if (ks_mtr_map_get(&r->var_ids, (uint64_t)v.id) != MTR_NONE)
		return bad(d, "var %lld is defined twice", v.id);
	if ((rc = get_enum(d, o, "kind", true, ks_mtr_vkind_names, 4, &kind)) ||
	    (rc = get_addr(d, o, "addr", true, &v.addr)) ||
	    (rc = get_count(d, o, "size", true, &v.size)) ||
	    (rc = get_str(d, o, "name", false, &v.name)) < 0 ||
	    (rc = get_str(d, o, "obj", false, &v.obj)) < 0 ||
	    (rc = get_stack(d, o, "alloc_stack", false, &v.alloc_stack)) < 0)
		return rc;
	if (rc == 1)
		v.alloc_stack = MTR_NONE;
	if ((rc = get_count(d, o, "align", false, &v.align)) < 0)
		return rc;
	if (v.align & (v.align - 1))
		return bad(d, "'align' %" PRIu64 " is not a power of two", v.align);
	v.kind = (enum ks_mtr_vkind)kind;
	if (r->nvars >= UINT32_MAX - 1)
		return bad(d, "too many variables");
	if ((rc = append(d, &r->vars, &r->nvars, &r->cap_vars, &v, sizeof(v))))
		return rc;
	if (ks_mtr_map_put(&r->var_ids, (uint64_t)v.id, (uint32_t)(r->nvars - 1)))
		return oom(d);
	return 0;
}

static int rec_end(struct rd *d, json_t *o)
{
	struct ks_mtr_end *e = &d->r->end;
	json_t *x = json_object_get(o, "exit"), *h;
	int rc, how;
	/* exec: the image replaced itself; unknown: it made no exit call (a
	 * signal ended it, which the tool cannot name). */
	static const char *const hows[] = { "exit", "signal", "exec", "unknown" };

	if (!json_is_object(x))
		return bad(d, x ? "'exit' is not an object" : "'exit' is missing");
	label(d, "end record: exit");
	if ((rc = get_enum(d, x, "how", true, hows, 4, &how)))
		return rc;
	e->signaled = how == 1;
	e->exec = how == 2;
	e->unknown = how == 3;
	if (how <= 1 &&
	    (rc = get_int(d, x, e->signaled ? "signal" : "code", true, LLONG_MIN, &e->code)))
		return rc;
	label(d, "end record");
	h = json_object_get(o, "heap");
	if (h) {
		if (!json_is_object(h))
			return bad(d, "'heap' is not an object");
		label(d, "end record: heap");
		if ((rc = get_count(d, h, "allocs", true, &e->allocs)) ||
		    (rc = get_count(d, h, "frees", true, &e->frees)) ||
		    (rc = get_count(d, h, "bytes_allocated", true, &e->bytes_allocated)) ||
		    (rc = get_count(d, h, "in_use_bytes", true, &e->in_use_bytes)) ||
		    (rc = get_count(d, h, "in_use_blocks", true, &e->in_use_blocks)))
			return rc;
		e->has_heap = true;
		label(d, "end record");
	}
	rc = get_count(d, o, "shadow_bytes", false, &e->shadow_bytes);
	if (rc < 0)
		return rc;
	e->has_shadow = rc == 0;
	rc = get_count(d, o, "threads", false, &e->threads);
	if (rc < 0)
		return rc;
	e->has_threads = rc == 0;
	e->present = true;
	return 0;
}

static int rec_error(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_error e = { 0 };
	long long count;
	json_t *b;
	int rc, kind;

	/* Leak kinds have their own record. */
	if ((rc = get_enum(d, o, "kind", true, ks_mtr_ekind_names, MTR_E_LEAK_DEFINITE, &kind)))
		return rc;
	e.kind = (enum ks_mtr_ekind)kind;
	if ((rc = get_int(d, o, "tid", true, 0, &e.tid)) ||
	    (rc = get_stack(d, o, "stack", true, &e.stack)) ||
	    (rc = get_int(d, o, "count", true, 1, &count)))
		return rc;
	e.count = (uint64_t)count;
	e.proc = (uint32_t)r->nprocs;

	bool access = e.kind == MTR_E_INVALID_READ || e.kind == MTR_E_INVALID_WRITE ||
		      e.kind == MTR_E_USE_AFTER_FREE;
	bool isfree = e.kind == MTR_E_DOUBLE_FREE || e.kind == MTR_E_INVALID_FREE;

	/* size: required for accesses, meaningless for frees. */
	rc = get_count(d, o, "size", access, &e.size);
	if (rc < 0)
		return rc;
	e.has_size = rc == 0 && !isfree;
	/* addr is optional even for accesses: kscope's tool leaves it out
	 * when it is 0 (a NULL dereference), and a block gives it anyway. */
	rc = get_addr(d, o, "addr", false, &e.addr);
	if (rc < 0)
		return rc;
	e.has_addr = rc == 0;
	if (e.kind == MTR_E_USE_AFTER_FREE) {
		static const char *const rw[] = { "read", "write" };
		int w;

		if ((rc = get_enum(d, o, "access", true, rw, 2, &w)))
			return rc;
		e.write = w == 1;
	}
	if (e.kind == MTR_E_UNINIT_SYSCALL &&
	    ((rc = get_str(d, o, "syscall", true, &e.syscall)) ||
	     (rc = get_str(d, o, "param", true, &e.param))))
		return rc;

	b = json_object_get(o, "block");
	if (b && !json_is_null(b)) {
		static const char *const states[] = { "alloc", "freed" };
		int state;

		if (!json_is_object(b))
			return bad(d, "'block' is not an object");
		label(d, "error record: block");
		if ((rc = get_addr(d, b, "addr", true, &e.block.addr)) ||
		    (rc = get_count(d, b, "size", true, &e.block.size)) ||
		    (rc = get_int(d, b, "offset", true, LLONG_MIN, &e.block.offset)) ||
		    (rc = get_enum(d, b, "state", true, states, 2, &state)) ||
		    (rc = get_stack(d, b, "alloc_stack", true, &e.block.alloc_stack)) ||
		    (rc = get_stack(d, b, "free_stack", false, &e.block.free_stack)) < 0)
			return rc;
		if (rc == 1)
			e.block.free_stack = MTR_NONE;
		e.block.freed = state == 1;
		if (!e.has_addr) {
			e.addr = e.block.addr + (uint64_t)e.block.offset;
			e.has_addr = true;
		} else if (e.addr - e.block.addr != (uint64_t)e.block.offset) {
			return bad(d, "'offset' %lld is not addr - block addr", e.block.offset);
		}
		e.has_block = true;
		label(d, "error record");
	}
	if (e.kind == MTR_E_USE_AFTER_FREE && !(e.has_block && e.block.freed))
		return bad(d, "use-after-free without a freed 'block'");

	return append(d, &r->errors, &r->nerrors, &r->cap_errors, &e, sizeof(e));
}

static int rec_leak(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_leak l = { 0 };
	int rc, kind;

	if ((rc = get_enum(d, o, "kind", true, ks_mtr_ekind_names + MTR_E_LEAK_DEFINITE, 2,
			   &kind)) ||
	    (rc = get_count(d, o, "bytes", true, &l.bytes)) ||
	    (rc = get_count(d, o, "blocks", true, &l.blocks)) ||
	    (rc = get_stack(d, o, "stack", true, &l.stack)))
		return rc;
	l.kind = (enum ks_mtr_ekind)(MTR_E_LEAK_DEFINITE + kind);
	l.proc = (uint32_t)r->nprocs;

	return append(d, &r->leaks, &r->nleaks, &r->cap_leaks, &l, sizeof(l));
}

static int rec_thread(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_thread t = { 0 };
	int rc;

	if ((rc = get_int(d, o, "tid", true, 0, &t.tid)) || (rc = get_counts(d, o, &t.c)))
		return rc;
	if (ks_mtr_map_get(&r->thread_ids, (uint64_t)t.tid) != MTR_NONE)
		return bad(d, "thread %lld is reported twice", t.tid);
	t.proc = (uint32_t)r->nprocs;

	if ((rc = append(d, &r->threads, &r->nthreads, &r->cap_threads, &t, sizeof(t))))
		return rc;
	if (ks_mtr_map_put(&r->thread_ids, (uint64_t)t.tid, (uint32_t)(r->nthreads - 1)))
		return oom(d);
	return 0;
}

static int rec_site(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_site s = { .proc = (uint32_t)r->nprocs };
	int rc;

	if ((rc = get_stack(d, o, "stack", true, &s.stack)) || (rc = get_counts(d, o, &s.c)))
		return rc;

	return append(d, &r->sites, &r->nsites, &r->cap_sites, &s, sizeof(s));
}

static int rec_object(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_object ob = { .var = MTR_NONE, .lineno = d->lineno,
				    .proc = (uint32_t)r->nprocs };
	int rc;

	if ((rc = get_int(d, o, "var", true, LLONG_MIN, &ob.var_id)) ||
	    (rc = get_count(d, o, "cold_misses", true, &ob.cold_misses)) ||
	    (rc = get_count(d, o, "misses", true, &ob.misses)) ||
	    (rc = get_count(d, o, "invalidations", true, &ob.invalidations)))
		return rc;

	return append(d, &r->objects, &r->nobjects, &r->cap_objects, &ob, sizeof(ob));
}

static int rec_total(struct rd *d, json_t *o)
{
	struct ks_mtr_total *sum = &d->r->total, one = { 0 };
	int rc;

	/* One per segment; the run's is their sum. */
	if (d->seg_total)
		return bad(d, "a second total record");
	if ((rc = get_counts(d, o, &one.c)) ||
	    (rc = get_count(d, o, "contention_accesses", true, &one.contention_accesses)))
		return rc;
	rc = get_count(d, o, "stack_accesses", false, &one.stack_accesses);
	if (rc < 0)
		return rc;
	one.has_stack = rc == 0;
	rc = get_count(d, o, "quiet_lines", false, &one.quiet_lines);
	if (rc < 0)
		return rc;
	one.has_quiet = rc == 0;
	if (one.has_quiet && (rc = get_count(d, o, "min_accesses", true, &one.min_accesses)))
		return rc;
	rc = get_count(d, o, "read_mostly_lines", false, &one.read_mostly_lines);
	if (rc < 0)
		return rc;
	one.has_read_mostly = rc == 0;
	if (one.has_read_mostly &&
	    (rc = get_count(d, o, "min_writes", true, &one.min_writes)))
		return rc;
	if ((rc = get_count(d, o, "near_dropped", false, &one.near_dropped)) < 0)
		return rc;
	d->seg_total = true;
	sum->near_dropped += one.near_dropped;
	sum->c.accesses += one.c.accesses;
	sum->c.reads += one.c.reads;
	sum->c.writes += one.c.writes;
	sum->c.cold_misses += one.c.cold_misses;
	sum->c.misses += one.c.misses;
	sum->c.invalidations += one.c.invalidations;
	sum->contention_accesses += one.contention_accesses;
	sum->stack_accesses += one.stack_accesses;
	sum->has_stack |= one.has_stack;
	sum->quiet_lines += one.quiet_lines;
	if (one.has_quiet) {
		sum->has_quiet = true;
		sum->min_accesses = one.min_accesses;
	}
	sum->read_mostly_lines += one.read_mostly_lines;
	if (one.has_read_mostly) {
		sum->has_read_mostly = true;
		sum->min_writes = one.min_writes;
	}
	sum->present = true;
	return 0;
}

static int rec_suppressed(struct rd *d, json_t *o)
{
	struct ks_mtr_suppressed *s = &d->r->suppressed;
	const char *reason = NULL;
	uint64_t n;
	int rc;

	if ((rc = get_count(d, o, "count", true, &n)) ||
	    (rc = get_str(d, o, "reason", false, &reason)) < 0)
		return rc;
	s->count += n;
	if (!s->reason)
		s->reason = reason;
	return 0;
}

/* A line record's optional "vars": the ids of every variable with a
 * touched word in the line, the first being its "var". */
static int get_var_ids(struct rd *d, json_t *o, struct ks_mtr_line *l)
{
	json_t *vs = json_object_get(o, "vars");
	size_t n;

	if (!vs)
		return 0;
	if (!json_is_array(vs) || (n = json_array_size(vs)) < 1 || n > 64)
		return bad(d, "'vars' is not an array of 1 to 64 variable ids");
	if (!l->has_var)
		return bad(d, "'vars' without 'var'");
	l->var_ids = ks_mtr_arena_alloc(&d->r->arena, n * sizeof(*l->var_ids));
	if (!l->var_ids)
		return oom(d);
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_array_get(vs, i);

		if (!json_is_integer(v))
			return bad(d, "'vars'[%zu] is not an integer", i);
		l->var_ids[i] = json_integer_value(v);
		for (size_t j = 0; j < i; j++)
			if (l->var_ids[j] == l->var_ids[i])
				return bad(d, "'vars' lists var %lld twice", l->var_ids[i]);
	}
	if (l->var_ids[0] != l->var_id)
		return bad(d, "'vars' does not begin with 'var'");
	l->nvars = (uint32_t)n;
	return 0;
}

/* What line and near records have in common: addr, var, vars,
 * word_size and threads, into l; the caller labels its record. */
static int line_common(struct rd *d, json_t *o, struct ks_mtr_line *l, const char *what)
{
	struct ks_mtr_run *r = d->r;
	json_t *threads;
	long long ws;
	int rc;

	if ((rc = get_addr(d, o, "addr", true, &l->addr)))
		return rc;
	if (l->addr % r->start.line_size)
		return bad(d, "'addr' is not a multiple of the line size %u",
			   r->start.line_size);
	rc = get_int(d, o, "var", false, LLONG_MIN, &l->var_id);
	if (rc < 0)
		return rc;
	l->has_var = rc == 0;
	if ((rc = get_var_ids(d, o, l)) ||
	    (rc = get_int(d, o, "word_size", true, 1, &ws)))
		return rc;
	if (ws > r->start.line_size || (ws & (ws - 1)))
		return bad(d, "'word_size' %lld is not a power of two up to the line size", ws);
	l->word_size = (unsigned)ws;
	l->nwords = r->start.line_size / l->word_size;
	l->nmask = (l->nwords + 63) / 64;
	threads = json_object_get(o, "threads");
	if (!json_is_array(threads))
		return bad(d, threads ? "'threads' is not an array" : "'threads' is missing");
	if (json_array_size(threads) > UINT32_MAX / 2)
		return bad(d, "too many threads");
	l->nthreads = (uint32_t)json_array_size(threads);
	l->threads = ks_mtr_arena_alloc(&r->arena, (l->nthreads ? l->nthreads : 1) *
					       sizeof(*l->threads));
	if (!l->threads)
		return oom(d);
	for (uint32_t i = 0; i < l->nthreads; i++) {
		json_t *t = json_array_get(threads, i);
		struct ks_mtr_lthread *lt = &l->threads[i];
		label(d, "%s record: threads[%u]", what, i);
		if (!json_is_object(t))
			return bad(d, "not an object");
		if ((rc = get_int(d, t, "tid", true, 0, &lt->tid)) ||
		    (rc = get_mask(d, t, "read", l->nwords, l->nmask, &lt->read)) ||
		    (rc = get_mask(d, t, "write", l->nwords, l->nmask, &lt->write)) ||
		    (rc = get_count(d, t, "reads", true, &lt->reads)) ||
		    (rc = get_count(d, t, "writes", true, &lt->writes)))
			return rc;
		for (uint32_t j = 0; j < i; j++)
			if (l->threads[j].tid == lt->tid)
				return bad(d, "thread %lld is listed twice", lt->tid);
	}
	label(d, "%s record", what);
	return 0;
}

/* A line next to another thread's, not reported (the layout
 * prediction's): as a line record without verdict and counts. */
static int rec_near(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_line l = { .var = MTR_NONE, .lineno = d->lineno,
				 .proc = (uint32_t)r->nprocs };
	int rc;

	if ((rc = line_common(d, o, &l, "near")))
		return rc;
	if (r->nnears >= UINT32_MAX - 1)
		return bad(d, "too many near records");
	return append(d, &r->nears, &r->nnears, &r->cap_nears, &l, sizeof(l));
}

/* A line with many misses + invalidations (contention's lines). */
static int rec_cline(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_line l = { .var = MTR_NONE, .lineno = d->lineno,
				 .proc = (uint32_t)r->nprocs };
	int rc;

	if ((rc = get_addr(d, o, "addr", true, &l.addr)))
		return rc;
	if (l.addr % r->start.line_size)
		return bad(d, "'addr' is not a multiple of the line size %u",
			   r->start.line_size);
	rc = get_int(d, o, "var", false, LLONG_MIN, &l.var_id);
	if (rc < 0)
		return rc;
	l.has_var = rc == 0;
	if ((rc = get_var_ids(d, o, &l)) ||
	    (rc = get_count(d, o, "misses", true, &l.misses)) ||
	    (rc = get_count(d, o, "invalidations", true, &l.invalidations)))
		return rc;
	if (r->nclines >= UINT32_MAX - 1)
		return bad(d, "too many cline records");
	return append(d, &r->clines, &r->nclines, &r->cap_clines, &l, sizeof(l));
}

static int rec_line(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_line l = { .var = MTR_NONE, .lineno = d->lineno,
				 .proc = (uint32_t)r->nprocs };
	int rc, verdict;

	if ((rc = line_common(d, o, &l, "line")))
		return rc;
	if (ks_mtr_map_get(&r->line_addrs, l.addr) != MTR_NONE)
		return bad(d, "line 0x%" PRIx64 " is reported twice", l.addr);
	if ((rc = get_enum(d, o, "verdict", true, ks_mtr_verdict_names, 3, &verdict)) ||
	    (rc = get_count(d, o, "misses", true, &l.misses)) ||
	    (rc = get_count(d, o, "invalidations", true, &l.invalidations)) ||
	    (rc = get_count(d, o, "potential_invalidations", true, &l.potential)))
		return rc;
	l.verdict = (enum ks_mtr_verdict)verdict;
	if (r->nlines >= UINT32_MAX - 1)
		return bad(d, "too many lines");

	if ((rc = append(d, &r->lines, &r->nlines, &r->cap_lines, &l, sizeof(l))))
		return rc;
	if (ks_mtr_map_put(&r->line_addrs, l.addr, (uint32_t)(r->nlines - 1)))
		return oom(d);
	return 0;
}

static int rec_access(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	struct ks_mtr_access a = { .line = MTR_NONE, .var = MTR_NONE, .lineno = d->lineno,
				   .proc = (uint32_t)r->nprocs };
	int rc;

	if ((rc = get_addr(d, o, "line", true, &a.line_addr)))
		return rc;
	rc = get_int(d, o, "var", false, LLONG_MIN, &a.var_id);
	if (rc < 0)
		return rc;
	a.has_var = rc == 0;
	if ((rc = get_int(d, o, "tid", true, 0, &a.tid)) ||
	    (rc = get_stack(d, o, "context", true, &a.context)) ||
	    (rc = get_count(d, o, "reads", true, &a.reads)) ||
	    (rc = get_count(d, o, "writes", true, &a.writes)))
		return rc;
	rc = get_addr(d, o, "words", false, &a.words);
	if (rc < 0)
		return rc;
	a.has_words = rc == 0;

	return append(d, &r->accesses, &r->naccesses, &r->cap_accesses, &a, sizeof(a));
}

/* ------------------------------------------------------------------ */
/* The file                                                            */
/* ------------------------------------------------------------------ */

struct rec_kind {
	const char *name;
	int (*read)(struct rd *d, json_t *o);
	unsigned analyses;   /* bit per enum ks_mtr_analysis where it may appear */
};

#define ALL   7u
#define MC    (1u << MTR_MEMCHECK)
#define CONT  ((1u << MTR_CONTENTION) | (1u << MTR_FALSESHARE))
#define FS    (1u << MTR_FALSESHARE)

static const struct rec_kind rec_kinds[] = {
	{ "start", rec_start, ALL },   { "stack", rec_stack, ALL },
	{ "var", rec_var, ALL },       { "end", rec_end, ALL },
	{ "error", rec_error, MC },    { "leak", rec_leak, MC },
	{ "suppressed", rec_suppressed, MC },
	{ "thread", rec_thread, CONT }, { "site", rec_site, CONT },
	{ "object", rec_object, CONT }, { "total", rec_total, CONT },
	{ "line", rec_line, FS },      { "access", rec_access, FS },
	{ "near", rec_near, FS },      { "cline", rec_cline, CONT },
};

static int segment_done(struct rd *d);

static int read_record(struct rd *d, json_t *o)
{
	struct ks_mtr_run *r = d->r;
	json_t *recv = json_object_get(o, "rec");
	const char *rec;

	if (!recv)
		return bad(d, "no 'rec' field");
	if (!json_is_string(recv))
		return bad(d, "'rec' is not a string");
	rec = json_string_value(recv);
	for (size_t i = 0; i < sizeof(rec_kinds) / sizeof(rec_kinds[0]); i++) {
		const struct rec_kind *k = &rec_kinds[i];
		int rc;

		if (strcmp(rec, k->name) != 0)
			continue;
		if (!r->started && k->read != rec_start)
			return bad(d, "a %s record before the start record", rec);
		if (r->end.present && k->read == rec_start) {
			/* The process exec'd: its next image's segment. */
			if ((rc = segment_done(d)))
				return rc;
		} else if (r->end.present) {
			return bad(d, "a %s record after the end record", rec);
		}
		if (r->started && !(k->analyses & (1u << r->start.analysis)))
			return bad(d, "a %s record in a %s run", rec,
				   ks_mtr_analysis_names[r->start.analysis]);
		label(d, "%s record", k->name);
		rc = k->read(d, o);
		d->label[0] = '\0';
		return rc;
	}
	return 0; /* a record of a newer tool: not ours to judge */
}

/* Resolves the var ids of a line or near record (what). */
static int resolve_vars(struct rd *d, struct ks_mtr_line *l, const char *what)
{
	struct ks_mtr_run *r = d->r;

	if (!l->has_var)
		return 0;
	l->var = ks_mtr_map_get(&r->var_ids, (uint64_t)l->var_id);
	d->lineno = l->lineno;
	if (l->var == MTR_NONE)
		return bad(d, "%s record: 'var' refers to var %lld, which is not "
			   "defined", what, l->var_id);
	/* In the arena: the lines array moves as it grows. */
	l->vars = ks_mtr_arena_alloc(&r->arena, (l->nvars ? l->nvars : 1) *
					       sizeof(*l->vars));
	if (!l->vars)
		return oom(d);
	if (!l->nvars) {
		l->vars[0] = l->var;
		l->nvars = 1;
		return 0;
	}
	for (uint32_t j = 0; j < l->nvars; j++) {
		l->vars[j] = ks_mtr_map_get(&r->var_ids, (uint64_t)l->var_ids[j]);
		if (l->vars[j] == MTR_NONE)
			return bad(d, "%s record: 'vars' refers to var %lld, which is "
				   "not defined", what, l->var_ids[j]);
	}
	return 0;
}

/* After the last line: every reference to a var or line points at one. */
static int resolve(struct rd *d)
{
	struct ks_mtr_run *r = d->r;
	int rc;

	d->label[0] = '\0';
	for (size_t i = r->seg_objects; i < r->nobjects; i++) {
		struct ks_mtr_object *o = &r->objects[i];

		o->var = ks_mtr_map_get(&r->var_ids, (uint64_t)o->var_id);
		d->lineno = o->lineno;
		if (o->var == MTR_NONE)
			return bad(d, "object record: 'var' refers to var %lld, which is not "
				   "defined", o->var_id);
	}
	for (size_t i = r->seg_lines; i < r->nlines; i++)
		if ((rc = resolve_vars(d, &r->lines[i], "line")))
			return rc;
	for (size_t i = r->seg_nears; i < r->nnears; i++)
		if ((rc = resolve_vars(d, &r->nears[i], "near")))
			return rc;
	for (size_t i = r->seg_clines; i < r->nclines; i++)
		if ((rc = resolve_vars(d, &r->clines[i], "cline")))
			return rc;
	for (size_t i = r->seg_accesses; i < r->naccesses; i++) {
		struct ks_mtr_access *a = &r->accesses[i];

		d->lineno = a->lineno;
		a->line = ks_mtr_map_get(&r->line_addrs, a->line_addr);
		if (a->line == MTR_NONE)
			return bad(d, "access record: 'line' 0x%" PRIx64 " has no line record",
				   a->line_addr);
		if (a->has_var) {
			a->var = ks_mtr_map_get(&r->var_ids, (uint64_t)a->var_id);
			if (a->var == MTR_NONE)
				return bad(d, "access record: 'var' refers to var %lld, which is "
					   "not defined", a->var_id);
		}
	}
	return 0;
}

/* The segment read so far is complete (an end record and a new start,
 * or the end of the file): its references are resolved, it becomes a
 * process image, and the next segment starts with fresh ids. */
static int segment_done(struct rd *d)
{
	struct ks_mtr_run *r = d->r;
	unsigned long lineno = d->lineno;
	struct ks_mtr_proc *p;
	int rc = resolve(d);

	d->lineno = lineno;
	if (rc)
		return rc;
	if (r->nprocs >= UINT32_MAX - 1)
		return bad(d, "too many processes");
	p = ks_mtr_vec_push(&r->procs, &r->nprocs, &r->cap_procs, sizeof(*p));
	if (!p)
		return oom(d);
	p->start = r->start;
	p->end = r->end;
	p->truncated = !r->end.present;
	p->image = d->images++;
	p->parent = MTR_NONE;
	if (p->image && p[-1].start.pid != p->start.pid)
		return bad(d, "process %lld continues the file of process %lld",
			   p->start.pid, p[-1].start.pid);
	r->started = false;
	memset(&r->end, 0, sizeof(r->end));
	d->seg_total = false;
	ks_mtr_map_free(&r->stack_ids);
	ks_mtr_map_free(&r->var_ids);
	ks_mtr_map_free(&r->thread_ids);
	ks_mtr_map_free(&r->line_addrs);
	r->seg_objects = r->nobjects;
	r->seg_lines = r->nlines;
	r->seg_nears = r->nnears;
	r->seg_clines = r->nclines;
	r->seg_accesses = r->naccesses;
	return 0;
}

int ks_mtr_read(struct ks_mtr_run *r, const char *path, struct ks_err *err)
{
	struct rd d = { .r = r, .err = err };
	char *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int rc = 0;

	r->path = path;
	f = fopen(path, "re");
	if (!f)
		return ks_err_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	while ((n = getline(&buf, &cap, f)) > 0) {
		bool terminated = buf[n - 1] == '\n';
		json_error_t jerr;
		json_t *o;

		d.lineno++;
		d.label[0] = '\0';
		if (terminated)
			buf[--n] = '\0';
		if (n > 0 && buf[n - 1] == '\r')
			buf[--n] = '\0';
		if (strspn(buf, " \t") == (size_t)n)
			continue; /* blank line */
		o = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
		if (!o) {
			if (!terminated) {
				/* The unfinished tail of a killed run. */
				r->partial_last = true;
				break;
			}
			rc = bad(&d, "not valid JSON: %s (column %d)", jerr.text, jerr.column);
			goto out;
		}
		if (!json_is_object(o))
			rc = bad(&d, "not a JSON object");
		else
			rc = read_record(&d, o);
		json_decref(o);
		if (rc)
			goto out;
	}
	if (ferror(f)) {
		rc = ks_err_set(err, -EIO, "cannot read '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!r->started) {
		rc = ks_err_set(err, -EBADMSG, "%s: no start record (%s)", path,
				d.lineno ? "the run wrote no complete record"
					 : "the file is empty");
		goto out;
	}
	rc = segment_done(&d);
out:
	free(buf);
	fclose(f);
	return rc;
}

void ks_mtr_run_free(struct ks_mtr_run *r)
{
	free(r->procs);
	free(r->stacks);
	free(r->vars);
	free(r->errors);
	free(r->leaks);
	free(r->threads);
	free(r->sites);
	free(r->objects);
	free(r->lines);
	free(r->nears);
	free(r->clines);
	free(r->cline_order);
	free(r->accesses);
	ks_mtr_map_free(&r->stack_ids);
	ks_mtr_map_free(&r->var_ids);
	ks_mtr_map_free(&r->thread_ids);
	ks_mtr_map_free(&r->line_addrs);
	free(r->leak_order);
	free(r->layouts);
	free(r->site_order);
	free(r->object_order);
	for (size_t i = 0; i < r->nfobjs; i++) {
		free(r->fobjs[i].lines);
		free(r->fobjs[i].contexts);
		free(r->fobjs[i].srclines);
	}
	free(r->fobjs);
	free(r->global);
	free(r->per_thread);
	free(r->compact);
	free(r->true_lines);
	ks_mtr_arena_free(&r->arena);
}

/* The last image of the process pid, or MTR_NONE. */
static uint32_t last_image(const struct ks_mtr_run *r, long long pid)
{
	for (size_t i = r->nprocs; i-- > 0;)
		if (r->procs[i].start.pid == pid)
			return (uint32_t)i;
	return MTR_NONE;
}

void ks_mtr_procs_done(struct ks_mtr_run *r, const struct ks_mtr_opts *o)
{
	for (size_t i = 0; i < r->nprocs; i++) {
		struct ks_mtr_proc *p = &r->procs[i];

		if (p->image)
			p->parent = (uint32_t)i - 1; /* the image it replaced */
		else if (p->start.ppid >= 0 && p->start.ppid != p->start.pid)
			p->parent = last_image(r, p->start.ppid);
	}
	/* What kscope saw wins over the tool's view, which cannot name a
	 * signal; an image that exec'd did not end, its last image did. */
	for (size_t k = 0; k < o->nexits; k++) {
		const struct ks_mtr_exit *x = &o->exits[k];
		uint32_t i = last_image(r, x->pid);
		struct ks_mtr_end *e;

		if (i == MTR_NONE)
			continue;
		e = &r->procs[i].end;
		if (e->exec || (!x->signaled && e->present && !e->unknown))
			continue;
		e->signaled = x->signaled;
		e->code = x->code;
		e->unknown = false;
		e->present = true; /* known now; procs[i].truncated still says
				    * whether the tool finished its file */
	}
	r->root_last = r->nprocs ? last_image(r, r->procs[0].start.pid) : 0;
	if (r->nprocs) {
		r->start = r->procs[0].start;
		r->end = r->procs[r->root_last].end;
		r->truncated = r->procs[r->root_last].truncated;
	}
}
