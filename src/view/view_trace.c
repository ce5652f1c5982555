/*
 * view_trace.c: kv_trace_load, the Trace Event Format reader behind
 * kscope view's timeline (trace.json files, 0x02 blocks of
 * visualize_data.bin).
 *
 * The document is an object with a "traceEvents" array (other keys are
 * skipped) or a bare array of events.  What is read:
 *   "X"           complete slices (ts, dur; a missing dur is 0)
 *   "B" / "E"     begin/end pairs, matched per thread as a stack; a "B"
 *                 left open ends at the last time of the trace, an "E"
 *                 without a "B" is skipped
 *   "b" / "e"     nestable async pairs: one extra track per id in the
 *                 process (tid "async:<id>"), matched like B/E
 *   "i" / "I"     instants: zero-length slices on their thread
 *   "M"           process_name, thread_name, process_sort_index,
 *                 thread_sort_index
 *   "s" "t" "f"   flow steps, linked per (cat, id) in time order; each
 *                 end binds to the slice enclosing its time (kv_tl_flow)
 *   "C"           counter samples: one counter track per name (and "id")
 *                 per process, or per thread when the event has a "tid",
 *                 a series per numeric member of args (kv_tl_counter)
 * and everything else ("P" samples, object and memory-dump events, ...)
 * is skipped.
 * pid and tid may be numbers or strings (both become their text); ts and
 * dur are microseconds, possibly fractional, and become integer
 * nanoseconds (rounded); "displayTimeUnit" only concerns display.  args
 * are kept as their JSON text, as written.
 *
 * Why a scanner of its own and not jansson's json_loadb on the whole
 * text: on bench/view.sh's 1,000,000-event trace (149 MB), json_loadb
 * took 12 s and 1.8 GB beyond the text (bench/view/tl_query -j), this
 * scanner plus kv_tl_finish 3 s and 120 MB.  The scanner walks the text
 * once, keeps nothing but the timeline, and uses jansson only for the
 * args of the few "M" events.  It checks the JSON
 * structure it walks (strings, brackets, separators); numbers are read
 * with strtod and must be whole tokens.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_tl_int.h"

/* |ts| and dur are limited so that start + dur never overflows: 2^62 ns
 * is 146 years. */
#define TIME_LIMIT_NS 4.6e18

/* A growing text buffer, NUL-terminated. */
struct fbuf {
	char *p;
	size_t len, cap;
};

/* One open "B" (or "b") waiting for its "E". */
struct open_slice {
	char *pid, *tid, *name, *cat, *cname, *args;
	size_t args_len;
	int64_t ts;
};

/* One flow step, linked after the whole document is read. */
struct flow_pt {
	char *key;             /* cat "\x1f" id */
	char *pid, *tid, *name, *cat, *id;
	int64_t ts;
	uint64_t seq;
	char ph;
};

struct scan {
	const char *base, *p, *end;
	const char *what;
	struct ks_err *err;
	uint64_t index;        /* the event being read */
	bool in_event;
	int rc;
	struct kv_timeline *tl;
	/* the event's fields */
	struct fbuf key, ph, name, cat, cname, pid, tid, id, bp, scope, tmp;
	bool has_ph, has_ts, has_dur, has_id, has_pid, has_tid;
	double ts, dur;
	const char *args;      /* the args value's text, or NULL */
	size_t args_len;
	struct open_slice *open;
	size_t nopen, opencap;
	struct flow_pt *flows;
	size_t nflows, flowcap;
	int64_t last_ns;       /* the latest time seen */
	bool any_time;
};

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

static int scan_fail(struct scan *sc, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int scan_fail(struct scan *sc, int code, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	if (sc->rc)
		return sc->rc;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sc->in_event)
		ks_err_set(sc->err, code, "%s: event %" PRIu64 " (byte %zu): %s", sc->what,
			   sc->index, (size_t)(sc->p - sc->base), msg);
	else
		ks_err_set(sc->err, code, "%s: byte %zu: %s", sc->what,
			   (size_t)(sc->p - sc->base), msg);
	sc->rc = code;
	return code;
}

static int syntax(struct scan *sc, const char *expected)
{
	if (sc->p >= sc->end)
		return scan_fail(sc, -EINVAL, "the text ends where %s is expected; "
				 "a complete JSON document is expected", expected);
	return scan_fail(sc, -EINVAL, "'%c' where %s is expected (not valid JSON)",
			 (unsigned char)*sc->p >= 0x20 && (unsigned char)*sc->p < 0x7f
			 ? *sc->p : '?', expected);
}

static int nomem(struct scan *sc)
{
	return scan_fail(sc, -ENOMEM, "out of memory");
}

/* ------------------------------------------------------------------ */
/* The JSON scanner                                                    */
/* ------------------------------------------------------------------ */

static int fbuf_reserve(struct fbuf *b, size_t more)
{
	if (b->len + more + 1 <= b->cap)
		return 0;
	size_t nc = b->cap ? b->cap : 64;
	while (nc < b->len + more + 1)
		nc *= 2;
	char *q = realloc(b->p, nc);
	if (!q)
		return -ENOMEM;
	b->p = q;
	b->cap = nc;
	return 0;
}

static int fbuf_set(struct fbuf *b, const char *s, size_t len)
{
	b->len = 0;
	if (fbuf_reserve(b, len) < 0)
		return -ENOMEM;
	memcpy(b->p, s, len);
	b->len = len;
	b->p[len] = '\0';
	return 0;
}

static void skip_ws(struct scan *sc)
{
	while (sc->p < sc->end &&
	       (*sc->p == ' ' || *sc->p == '\n' || *sc->p == '\r' || *sc->p == '\t'))
		sc->p++;
}

static int hex4(const char *p, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Appends code point cp as UTF-8 ('?' for NUL and lone surrogates). */
static void put_utf8(struct fbuf *b, unsigned cp)
{
	char *o = b->p + b->len;

	if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
		*o = '?';
		b->len++;
	} else if (cp < 0x80) {
		o[0] = (char)cp;
		b->len += 1;
	} else if (cp < 0x800) {
		o[0] = (char)(0xC0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3F));
		b->len += 2;
	} else if (cp < 0x10000) {
		o[0] = (char)(0xE0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		b->len += 3;
	} else {
		o[0] = (char)(0xF0 | cp >> 18);
		o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
		o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
		o[3] = (char)(0x80 | (cp & 0x3F));
		b->len += 4;
	}
}

/* A string at sc->p (on its '"'), decoded into out (or only checked and
 * skipped when out is NULL). */
static int read_string(struct scan *sc, struct fbuf *out)
{
	const char *p = sc->p + 1, *start;

	if (sc->p >= sc->end || *sc->p != '"')
		return syntax(sc, "a string");
	if (out) {
		out->len = 0;
		if (fbuf_reserve(out, 0) < 0)  /* out->p is never NULL after this */
			return nomem(sc);
	}
	for (;;) {
		start = p;
		while (p < sc->end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
			p++;
		if (out && p > start) {
			if (fbuf_reserve(out, (size_t)(p - start)) < 0)
				return nomem(sc);
			memcpy(out->p + out->len, start, (size_t)(p - start));
			out->len += (size_t)(p - start);
		}
		if (p >= sc->end) {
			sc->p = p;
			return syntax(sc, "the end of a string");
		}
		if (*p == '"')
			break;
		if ((unsigned char)*p < 0x20) {
			sc->p = p;
			return scan_fail(sc, -EINVAL, "a control character inside a string "
					 "(not valid JSON)");
		}
		/* an escape */
		if (p + 1 >= sc->end) {
			sc->p = p;
			return syntax(sc, "an escape");
		}
		if (out && fbuf_reserve(out, 8) < 0)
			return nomem(sc);
		char c = p[1], e = 0;
		switch (c) {
		case '"': e = '"'; break;
		case '\\': e = '\\'; break;
		case '/': e = '/'; break;
		case 'b': e = '\b'; break;
		case 'f': e = '\f'; break;
		case 'n': e = '\n'; break;
		case 'r': e = '\r'; break;
		case 't': e = '\t'; break;
		case 'u': {
			unsigned cp, lo;

			if (sc->end - p < 6 || hex4(p + 2, &cp) < 0) {
				sc->p = p;
				return scan_fail(sc, -EINVAL, "a bad \\u escape (not valid JSON)");
			}
			p += 6;
			if (cp >= 0xD800 && cp <= 0xDBFF && sc->end - p >= 6 && p[0] == '\\' &&
			    p[1] == 'u' && hex4(p + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				p += 6;
			}
			if (out)
				put_utf8(out, cp);
			continue;
		}
		default:
			sc->p = p;
			return scan_fail(sc, -EINVAL, "a bad escape \\%c (not valid JSON)",
					 (unsigned char)c >= 0x20 && (unsigned char)c < 0x7f ? c : '?');
		}
		if (out)
			out->p[out->len++] = e;
		p += 2;
	}
	if (out)
		out->p[out->len] = '\0';
	sc->p = p + 1;
	return 0;
}

/* A number, true, false or null: the token's extent. */
static int scalar_token(struct scan *sc, const char **tok, size_t *len)
{
	const char *p = sc->p;

	while (p < sc->end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
			       *p == '-' || *p == '+' || *p == '.' || *p == 'E'))
		p++;
	if (p == sc->p)
		return syntax(sc, "a value");
	*tok = sc->p;
	*len = (size_t)(p - sc->p);
	if (!(*len == 4 && (memcmp(*tok, "true", 4) == 0 || memcmp(*tok, "null", 4) == 0)) &&
	    !(*len == 5 && memcmp(*tok, "false", 5) == 0)) {
		char buf[64];
		char *end;

		if (*len >= sizeof(buf) || !((**tok >= '0' && **tok <= '9') || **tok == '-'))
			return syntax(sc, "a value");
		memcpy(buf, *tok, *len);
		buf[*len] = '\0';
		(void)strtod(buf, &end);
		if (*end)
			return syntax(sc, "a number");
	}
	sc->p = p;
	return 0;
}

/* Skips one value of any kind, checking its structure. */
static int skip_value(struct scan *sc)
{
	char stack[256];
	int top = 0;

	for (;;) {
		skip_ws(sc);
		if (sc->p >= sc->end)
			return syntax(sc, "a value");
		if (*sc->p == '{' || *sc->p == '[') {
			if (top == (int)sizeof(stack))
				return scan_fail(sc, -EINVAL, "values nested more than %zu deep",
						 sizeof(stack));
			stack[top++] = *sc->p == '{' ? '}' : ']';
			sc->p++;
			skip_ws(sc);
			if (sc->p < sc->end && *sc->p == stack[top - 1]) {
				sc->p++;
				top--;
				goto after;
			}
			if (stack[top - 1] == '}') {
				if (read_string(sc, NULL) < 0)
					return sc->rc;
				skip_ws(sc);
				if (sc->p >= sc->end || *sc->p != ':')
					return syntax(sc, "':'");
				sc->p++;
			}
			continue;
		}
		if (*sc->p == '"') {
			if (read_string(sc, NULL) < 0)
				return sc->rc;
		} else {
			const char *t;
			size_t l;

			if (scalar_token(sc, &t, &l) < 0)
				return sc->rc;
		}
after:
		/* after a value: a separator or the end of a container */
		for (;;) {
			if (!top)
				return 0;
			skip_ws(sc);
			if (sc->p < sc->end && *sc->p == stack[top - 1]) {
				sc->p++;
				top--;
				continue;
			}
			if (sc->p < sc->end && *sc->p == ',') {
				sc->p++;
				if (stack[top - 1] == '}') {
					skip_ws(sc);
					if (read_string(sc, NULL) < 0)
						return sc->rc;
					skip_ws(sc);
					if (sc->p >= sc->end || *sc->p != ':')
						return syntax(sc, "':'");
					sc->p++;
				}
				break;
			}
			return syntax(sc, stack[top - 1] == '}' ? "',' or '}'" : "',' or ']'");
		}
	}
}

/* A value that should be an id (pid, tid, id): a string, or a number
 * kept as its text. */
static int read_idtext(struct scan *sc, struct fbuf *out, const char *field)
{
	if (*sc->p == '"')
		return read_string(sc, out);
	if ((*sc->p >= '0' && *sc->p <= '9') || *sc->p == '-') {
		const char *t;
		size_t l;

		if (scalar_token(sc, &t, &l) < 0)
			return sc->rc;
		if (fbuf_set(out, t, l) < 0)
			return nomem(sc);
		return 0;
	}
	return scan_fail(sc, -EINVAL, "\"%s\" is not a number or a string", field);
}

/* ts or dur: a number, or a string holding one. */
static int read_time(struct scan *sc, double *out, const char *field)
{
	const char *t;
	size_t l;
	char buf[64], *end;

	if (*sc->p == '"') {
		if (read_string(sc, &sc->tmp) < 0)
			return sc->rc;
		t = sc->tmp.p;
		l = sc->tmp.len;
	} else if ((*sc->p >= '0' && *sc->p <= '9') || *sc->p == '-') {
		if (scalar_token(sc, &t, &l) < 0)
			return sc->rc;
	} else {
		return scan_fail(sc, -EINVAL, "\"%s\" is not a number; a time in "
				 "microseconds is expected", field);
	}
	if (l == 0 || l >= sizeof(buf))
		goto bad;
	memcpy(buf, t, l);
	buf[l] = '\0';
	*out = strtod(buf, &end);
	if (*end || !isfinite(*out))
		goto bad;
	return 0;
bad:
	return scan_fail(sc, -EINVAL, "\"%s\" is \"%.40s\"; a time in microseconds is "
			 "expected", field, l < 64 ? buf : "(too long)");
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static int to_ns(struct scan *sc, double us, const char *field, int64_t *out)
{
	double ns = us * 1000.0;

	if (!(ns >= -TIME_LIMIT_NS && ns <= TIME_LIMIT_NS))
		return scan_fail(sc, -ERANGE, "\"%s\" is %g us; at most %g us either side "
				 "of 0 is accepted", field, us, TIME_LIMIT_NS / 1000.0);
	*out = llround(ns);
	return 0;
}

static void see_time(struct scan *sc, int64_t t)
{
	if (!sc->any_time || t > sc->last_ns)
		sc->last_ns = t;
	sc->any_time = true;
}

static const char *fb(const struct fbuf *b)
{
	return b->len ? b->p : "";
}

static int add_rc(struct scan *sc, int rc)
{
	if (rc == -ENOMEM)
		return nomem(sc);
	if (rc == -E2BIG)
		return scan_fail(sc, rc, "more than %u slices, or args of 4 GiB or more; "
				 "kscope view does not read timelines that large", UINT32_MAX - 1);
	if (rc)
		return scan_fail(sc, rc, "the slice's times are out of range");
	return 0;
}

static char *dupn(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* "M": names and sort indices, from args {"name": ...} or
 * {"sort_index": ...}. */
static int meta_event(struct scan *sc)
{
	const char *what = fb(&sc->name);
	bool proc = strcmp(what, "process_name") == 0 ||
		    strcmp(what, "process_sort_index") == 0;
	bool thr = strcmp(what, "thread_name") == 0 || strcmp(what, "thread_sort_index") == 0;
	bool sort = strstr(what, "sort_index") != NULL;
	json_t *args, *v;
	const char *name = NULL;
	int idx = 0, rc;

	if (!proc && !thr)
		return 0;  /* process_labels, process_uptime_seconds, ...: not shown */
	if (!sc->args)
		return scan_fail(sc, -EINVAL, "a \"%s\" event without args", what);
	{
		json_error_t jerr;

		args = json_loadb(sc->args, sc->args_len, 0, &jerr);
		if (!args)
			return scan_fail(sc, -EINVAL, "the args of a \"%s\" event: %s", what,
					 jerr.text);
	}
	v = json_object_get(args, sort ? "sort_index" : "name");
	if (sort && json_is_integer(v) && json_integer_value(v) >= INT_MIN &&
	    json_integer_value(v) <= INT_MAX)
		idx = (int)json_integer_value(v);
	else if (!sort && json_is_string(v))
		name = json_string_value(v);
	else {
		json_decref(args);
		return scan_fail(sc, -EINVAL, "a \"%s\" event whose args.%s is not %s", what,
				 sort ? "sort_index" : "name", sort ? "an int" : "a string");
	}
	if (proc)
		rc = kv_tl_process_name(sc->tl, fb(&sc->pid), name, idx);
	else
		rc = kv_tl_thread_name(sc->tl, fb(&sc->pid), fb(&sc->tid), name, idx);
	json_decref(args);
	return add_rc(sc, rc);
}

static int open_push(struct scan *sc, const char *tid, int64_t ts)
{
	struct open_slice *o;

	if (sc->nopen == sc->opencap) {
		size_t nc = sc->opencap ? sc->opencap * 2 : 64;
		struct open_slice *q = realloc(sc->open, nc * sizeof(*q));

		if (!q)
			return nomem(sc);
		sc->open = q;
		sc->opencap = nc;
	}
	o = &sc->open[sc->nopen];
	memset(o, 0, sizeof(*o));
	o->ts = ts;
	o->pid = dupn(fb(&sc->pid), strlen(fb(&sc->pid)));
	o->tid = dupn(tid, strlen(tid));
	o->name = dupn(fb(&sc->name), sc->name.len);
	o->cat = dupn(fb(&sc->cat), sc->cat.len);
	o->cname = dupn(fb(&sc->cname), sc->cname.len);
	if (sc->args) {
		o->args = dupn(sc->args, sc->args_len);
		o->args_len = sc->args_len;
	}
	if (!o->pid || !o->tid || !o->name || !o->cat || !o->cname ||
	    (sc->args && !o->args)) {
		free(o->pid);
		free(o->tid);
		free(o->name);
		free(o->cat);
		free(o->cname);
		free(o->args);
		return nomem(sc);
	}
	sc->nopen++;
	return 0;
}

static void open_free(struct open_slice *o)
{
	free(o->pid);
	free(o->tid);
	free(o->name);
	free(o->cat);
	free(o->cname);
	free(o->args);
}

/* Ends open slice k at ts and removes it. */
static int open_close(struct scan *sc, size_t k, int64_t ts, const char *args,
		      size_t args_len)
{
	struct open_slice *o = &sc->open[k];
	int rc;

	if (ts < o->ts)
		return scan_fail(sc, -EINVAL, "the end (%.3f us) is before its begin "
				 "(%.3f us)", (double)ts / 1000.0, (double)o->ts / 1000.0);
	if (o->args) {
		args = o->args;
		args_len = o->args_len;
	}
	rc = kv_tl_slice(sc->tl, o->pid, o->tid, o->name, o->cat[0] ? o->cat : NULL,
			 o->cname[0] ? o->cname : NULL, o->ts, (uint64_t)(ts - o->ts), args,
			 args ? args_len : 0);
	open_free(o);
	memmove(o, o + 1, (sc->nopen - k - 1) * sizeof(*o));
	sc->nopen--;
	return add_rc(sc, rc);
}

/* "E"/"e": the innermost open slice of that track.  Open slices of one
 * track close in reverse order, so the search from the top usually
 * stops at once. */
static int end_event(struct scan *sc, const char *tid, int64_t ts)
{
	const char *pid = fb(&sc->pid);

	for (size_t k = sc->nopen; k-- > 0;)
		if (strcmp(sc->open[k].tid, tid) == 0 && strcmp(sc->open[k].pid, pid) == 0)
			return open_close(sc, k, ts, sc->args, sc->args_len);
	return 0;  /* an "E" without its "B" (a trace cut at the start) */
}

static int flow_event(struct scan *sc, char ph, int64_t ts)
{
	struct flow_pt *f;
	const char *cat = fb(&sc->cat);

	if (!sc->has_id)
		return scan_fail(sc, -EINVAL, "a flow event (\"ph\":\"%c\") without an \"id\"",
				 ph);
	if (sc->nflows == sc->flowcap) {
		size_t nc = sc->flowcap ? sc->flowcap * 2 : 64;
		struct flow_pt *q = realloc(sc->flows, nc * sizeof(*q));

		if (!q)
			return nomem(sc);
		sc->flows = q;
		sc->flowcap = nc;
	}
	f = &sc->flows[sc->nflows];
	memset(f, 0, sizeof(*f));
	f->key = malloc(strlen(cat) + sc->id.len + 2);
	f->pid = dupn(fb(&sc->pid), strlen(fb(&sc->pid)));
	f->tid = dupn(fb(&sc->tid), strlen(fb(&sc->tid)));
	f->name = dupn(fb(&sc->name), sc->name.len);
	f->cat = dupn(cat, strlen(cat));
	f->id = dupn(fb(&sc->id), sc->id.len);
	if (!f->key || !f->pid || !f->tid || !f->name || !f->cat || !f->id) {
		free(f->key);
		free(f->pid);
		free(f->tid);
		free(f->name);
		free(f->cat);
		free(f->id);
		return nomem(sc);
	}
	sprintf(f->key, "%s\x1f%s", cat, fb(&sc->id));
	f->ts = ts;
	f->seq = sc->nflows;
	f->ph = ph;
	sc->nflows++;
	return 0;
}

/* "C": a sample of a counter, one series per member of args that is a
 * finite number (the others are skipped, as Chrome's viewer skips them;
 * so is an event with none, and one whose args jansson cannot read:
 * counters were once skipped altogether, and a trace that loaded then
 * still does).  With an "id" the counter is "NAME ID", as in Chrome. */
static int counter_event(struct scan *sc, int64_t ts)
{
	json_t *args, *v;
	const char *key, **names;
	double *vals;
	char *name = NULL;
	size_t n = 0, cap;
	int rc = 0;

	if (!sc->args)
		return 0;
	args = json_loadb(sc->args, sc->args_len, JSON_DECODE_INT_AS_REAL, NULL);
	if (!args)
		return 0;
	cap = json_object_size(args);
	names = malloc((cap ? cap : 1) * sizeof(*names));
	vals = malloc((cap ? cap : 1) * sizeof(*vals));
	if (sc->has_id) {
		name = malloc(sc->name.len + sc->id.len + 2);
		if (name)
			sprintf(name, "%s %s", fb(&sc->name), fb(&sc->id));
	}
	if (!names || !vals || (sc->has_id && !name)) {
		rc = -ENOMEM;
		goto out;
	}
	json_object_foreach(args, key, v) {
		if (json_is_number(v) && isfinite(json_number_value(v)) && n < cap) {
			names[n] = key;
			vals[n++] = json_number_value(v);
		}
	}
	if (n)
		rc = kv_tl_counter(sc->tl, fb(&sc->pid), sc->has_tid ? fb(&sc->tid) : "",
				   name ? name : fb(&sc->name), ts, n, names, vals);
out:
	free(names);
	free(vals);
	free(name);
	json_decref(args);
	if (rc == -E2BIG)
		return scan_fail(sc, rc, "more than %u counter tracks; kscope view does not "
				 "read timelines with that many", KV_TL_MAX_COUNTERS);
	return add_rc(sc, rc);
}

/* Acts on the event whose fields were just read. */
static int do_event(struct scan *sc)
{
	char ph;
	int64_t ts = 0, dur = 0;
	const char *tid = fb(&sc->tid);
	int rc;

	if (!sc->has_ph)
		return scan_fail(sc, -EINVAL, "the event has no \"ph\" (its phase: \"X\", "
				 "\"B\", \"E\", \"i\", \"M\", \"s\", \"f\", ...)");
	if (sc->ph.len != 1)
		return 0;  /* no phase of more than one letter is shown */
	ph = sc->ph.p[0];
	if (ph == 'M')
		return meta_event(sc);
	/* A counter without a time or out of range is skipped, as all
	 * counters once were; it does not end the slices left open
	 * (see_time): the timeline's span is its slices'. */
	if (ph == 'C')
		return sc->has_ts && fabs(sc->ts) * 1000.0 <= TIME_LIMIT_NS ?
		       counter_event(sc, llround(sc->ts * 1000.0)) : 0;
	if (!strchr("XBEbeiIstf", ph))
		return 0;  /* samples, objects, ...: not shown */
	if (!sc->has_ts)
		return scan_fail(sc, -EINVAL, "a \"%c\" event without \"ts\"", ph);
	if (to_ns(sc, sc->ts, "ts", &ts) < 0)
		return sc->rc;
	see_time(sc, ts);
	switch (ph) {
	case 'X':
		if (sc->has_dur) {
			if (sc->dur < 0)
				return scan_fail(sc, -EINVAL, "\"dur\" is %g; a duration of 0 "
						 "or more microseconds is expected", sc->dur);
			if (to_ns(sc, sc->dur, "dur", &dur) < 0)
				return sc->rc;
			/* The end is rounded as one number, not as ts and dur
			 * apart: a slice written to start where the one before
			 * it ends (ts + dur, printed rounded) must not overlap
			 * it by the two roundings and nest under it. */
			int64_t end = 0;

			if (to_ns(sc, sc->ts + sc->dur, "ts + dur", &end) < 0)
				return sc->rc;
			dur = end > ts ? end - ts : 0;
		}
		see_time(sc, ts + dur);
		rc = kv_tl_slice(sc->tl, fb(&sc->pid), tid, fb(&sc->name),
				 sc->cat.len ? sc->cat.p : NULL,
				 sc->cname.len ? sc->cname.p : NULL, ts, (uint64_t)dur,
				 sc->args, sc->args_len);
		/* A slice under 1 ns (op --simulate's instructions) rounds to
		 * no duration but is no instant: it must not nest under the
		 * slice that starts in the same nanosecond. */
		if (rc == 0 && dur == 0 && sc->has_dur && sc->dur > 0)
			kv_tl_mark_brief(sc->tl);
		return add_rc(sc, rc);
	case 'i':
	case 'I':
		return add_rc(sc, kv_tl_slice(sc->tl, fb(&sc->pid), tid, fb(&sc->name),
					      sc->cat.len ? sc->cat.p : NULL,
					      sc->cname.len ? sc->cname.p : NULL, ts, 0,
					      sc->args, sc->args_len));
	case 'B':
		return open_push(sc, tid, ts);
	case 'E':
		return end_event(sc, tid, ts);
	case 'b':
	case 'e': {
		char *lane;

		if (!sc->has_id)
			return scan_fail(sc, -EINVAL, "an async event (\"ph\":\"%c\") without "
					 "an \"id\"", ph);
		lane = malloc(sc->id.len + 7);
		if (!lane)
			return nomem(sc);
		sprintf(lane, "async:%s", fb(&sc->id));
		rc = ph == 'b' ? open_push(sc, lane, ts) : end_event(sc, lane, ts);
		free(lane);
		return rc;
	}
	default:
		return flow_event(sc, ph, ts);
	}
}

/* One event object, at sc->p on its '{'. */
static int read_event(struct scan *sc)
{
	sc->has_ph = sc->has_ts = sc->has_dur = sc->has_id = sc->has_pid = sc->has_tid = false;
	sc->name.len = sc->cat.len = sc->cname.len = sc->pid.len = sc->tid.len = 0;
	sc->id.len = sc->bp.len = sc->scope.len = sc->ph.len = 0;
	sc->args = NULL;
	sc->args_len = 0;
	if (sc->p >= sc->end || *sc->p != '{') {
		if (sc->p < sc->end && (*sc->p == '[' || *sc->p == '"' || *sc->p == '-' ||
					(*sc->p >= '0' && *sc->p <= '9') || *sc->p == 't' ||
					*sc->p == 'f' || *sc->p == 'n'))
			return scan_fail(sc, -EINVAL, "the event is not an object");
		return syntax(sc, "an event object");
	}
	sc->p++;
	skip_ws(sc);
	if (sc->p < sc->end && *sc->p == '}') {
		sc->p++;
		return do_event(sc);
	}
	for (;;) {
		const char *k;

		skip_ws(sc);
		if (read_string(sc, &sc->key) < 0)
			return sc->rc;
		skip_ws(sc);
		if (sc->p >= sc->end || *sc->p != ':')
			return syntax(sc, "':'");
		sc->p++;
		skip_ws(sc);
		if (sc->p >= sc->end)
			return syntax(sc, "a value");
		k = sc->key.p;
		if (strcmp(k, "ph") == 0) {
			if (*sc->p != '"')
				return scan_fail(sc, -EINVAL, "\"ph\" is not a string");
			if (read_string(sc, &sc->ph) < 0)
				return sc->rc;
			sc->has_ph = true;
		} else if (strcmp(k, "name") == 0 || strcmp(k, "cat") == 0 ||
			   strcmp(k, "cname") == 0 || strcmp(k, "bp") == 0 ||
			   strcmp(k, "s") == 0) {
			struct fbuf *b = k[0] == 'n' ? &sc->name : k[0] == 'b' ? &sc->bp
				       : k[0] == 's' ? &sc->scope
				       : k[1] == 'a' ? &sc->cat : &sc->cname;

			if (*sc->p == '"') {
				if (read_string(sc, b) < 0)
					return sc->rc;
			} else if (skip_value(sc) < 0) {  /* a non-string: as if absent */
				return sc->rc;
			}
		} else if (strcmp(k, "pid") == 0) {
			if (read_idtext(sc, &sc->pid, "pid") < 0)
				return sc->rc;
			sc->has_pid = true;
		} else if (strcmp(k, "tid") == 0) {
			if (read_idtext(sc, &sc->tid, "tid") < 0)
				return sc->rc;
			sc->has_tid = true;
		} else if (strcmp(k, "id") == 0) {
			if (read_idtext(sc, &sc->id, "id") < 0)
				return sc->rc;
			sc->has_id = true;
		} else if (strcmp(k, "ts") == 0) {
			if (read_time(sc, &sc->ts, "ts") < 0)
				return sc->rc;
			sc->has_ts = true;
		} else if (strcmp(k, "dur") == 0) {
			if (read_time(sc, &sc->dur, "dur") < 0)
				return sc->rc;
			sc->has_dur = true;
		} else if (strcmp(k, "args") == 0) {
			const char *a = sc->p;

			if (skip_value(sc) < 0)
				return sc->rc;
			if (*a == '{') {
				sc->args = a;
				sc->args_len = (size_t)(sc->p - a);
			} else if (!(*a == 'n' && sc->p - a == 4)) {
				return scan_fail(sc, -EINVAL, "\"args\" is not an object");
			}
		} else if (skip_value(sc) < 0) {
			return sc->rc;
		}
		skip_ws(sc);
		if (sc->p < sc->end && *sc->p == ',') {
			sc->p++;
			continue;
		}
		if (sc->p < sc->end && *sc->p == '}') {
			sc->p++;
			break;
		}
		return syntax(sc, "',' or '}'");
	}
	return do_event(sc);
}

/* The traceEvents array, at sc->p on its '['. */
static int read_events(struct scan *sc)
{
	sc->p++;
	skip_ws(sc);
	if (sc->p < sc->end && *sc->p == ']') {
		sc->p++;
		return 0;
	}
	for (;;) {
		skip_ws(sc);
		sc->in_event = true;
		if (read_event(sc) < 0)
			return sc->rc;
		sc->in_event = false;
		sc->index++;
		skip_ws(sc);
		if (sc->p < sc->end && *sc->p == ',') {
			sc->p++;
			continue;
		}
		if (sc->p < sc->end && *sc->p == ']') {
			sc->p++;
			return 0;
		}
		return syntax(sc, "',' or ']' after an event");
	}
}

static int flow_cmp(const void *pa, const void *pb)
{
	const struct flow_pt *a = pa, *b = pb;
	int c = strcmp(a->key, b->key);

	if (c)
		return c;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Links flow steps: "s" starts a chain of its (cat, id), each "t" or "f"
 * is an arrow from the step before, "f" ends it.  Steps outside a chain
 * are skipped. */
static int link_flows(struct scan *sc)
{
	const struct flow_pt *prev = NULL, *start = NULL;

	if (sc->nflows > 1)
		qsort(sc->flows, sc->nflows, sizeof(*sc->flows), flow_cmp);
	for (size_t i = 0; i < sc->nflows; i++) {
		const struct flow_pt *f = &sc->flows[i];

		if (prev && strcmp(prev->key, f->key) != 0)
			prev = start = NULL;
		if (f->ph == 's') {
			prev = start = f;
			continue;
		}
		if (!prev)
			continue;
		int rc = kv_tl_flow(sc->tl, start->id, start->cat[0] ? start->cat : NULL,
				    start->name[0] ? start->name : f->name, prev->pid,
				    prev->tid, prev->ts, f->pid, f->tid, f->ts);
		if (rc < 0)
			return add_rc(sc, rc);
		prev = f->ph == 'f' ? NULL : f;
	}
	return 0;
}

static void scan_free(struct scan *sc)
{
	struct fbuf *bufs[] = { &sc->key, &sc->ph, &sc->name, &sc->cat, &sc->cname,
				&sc->pid, &sc->tid, &sc->id, &sc->bp, &sc->scope, &sc->tmp };

	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		free(bufs[i]->p);
	for (size_t i = 0; i < sc->nopen; i++)
		open_free(&sc->open[i]);
	free(sc->open);
	for (size_t i = 0; i < sc->nflows; i++) {
		free(sc->flows[i].key);
		free(sc->flows[i].pid);
		free(sc->flows[i].tid);
		free(sc->flows[i].name);
		free(sc->flows[i].cat);
		free(sc->flows[i].id);
	}
	free(sc->flows);
}

int kv_trace_load(struct kv_timeline *tl, const char *text, size_t len,
		  const char *what, struct ks_err *err)
{
	struct scan sc = { .base = text, .p = text, .end = text + len, .what = what,
			   .err = err, .tl = tl };
	bool found = false;

	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		sc.p += 3;
	skip_ws(&sc);
	if (sc.p < sc.end && *sc.p == '[') {
		found = true;
		if (read_events(&sc) < 0)
			goto out;
	} else if (sc.p < sc.end && *sc.p == '{') {
		sc.p++;
		skip_ws(&sc);
		if (sc.p < sc.end && *sc.p == '}') {
			sc.p++;
		} else {
			for (;;) {
				skip_ws(&sc);
				if (read_string(&sc, &sc.key) < 0)
					goto out;
				skip_ws(&sc);
				if (sc.p >= sc.end || *sc.p != ':') {
					syntax(&sc, "':'");
					goto out;
				}
				sc.p++;
				skip_ws(&sc);
				if (strcmp(sc.key.p, "traceEvents") == 0 && !found) {
					if (sc.p >= sc.end || *sc.p != '[') {
						scan_fail(&sc, -EINVAL, "\"traceEvents\" is not an "
							  "array; an array of events is expected");
						goto out;
					}
					found = true;
					if (read_events(&sc) < 0)
						goto out;
				} else if (skip_value(&sc) < 0) {
					goto out;
				}
				skip_ws(&sc);
				if (sc.p < sc.end && *sc.p == ',') {
					sc.p++;
					continue;
				}
				if (sc.p < sc.end && *sc.p == '}') {
					sc.p++;
					break;
				}
				syntax(&sc, "',' or '}'");
				goto out;
			}
		}
	} else {
		scan_fail(&sc, -EINVAL, "not a Trace Event Format document; an object with "
			  "a \"traceEvents\" array, or an array of events, is expected");
		goto out;
	}
	skip_ws(&sc);
	if (sc.p < sc.end) {
		scan_fail(&sc, -EINVAL, "text after the end of the document");
		goto out;
	}
	if (!found) {
		sc.p = text;
		scan_fail(&sc, -EINVAL, "an object without \"traceEvents\"; a Trace Event "
			  "Format document (an object with a \"traceEvents\" array, or an "
			  "array of events) is expected");
		goto out;
	}
	/* Slices still open end with the trace. */
	while (sc.nopen && !sc.rc) {
		int64_t end = sc.last_ns > sc.open[sc.nopen - 1].ts ? sc.last_ns
				: sc.open[sc.nopen - 1].ts;

		open_close(&sc, sc.nopen - 1, end, NULL, 0);
	}
	if (!sc.rc)
		link_flows(&sc);
out:
	scan_free(&sc);
	return sc.rc;
}
