/*
 * The Chrome Trace Event JSON writer (trace.h): the older, textual trace
 * format that chrome://tracing, Speedscope and ui.perfetto.dev all read.
 *
 *   {"displayTimeUnit":"ns","traceEvents":[
 *   {"ph":"M","name":"process_name","pid":P,"args":{"name":"..."}},
 *   {"ph":"M","name":"process_sort_index",...}   MPI ranks: sorted by rank
 *   {"ph":"M","name":"thread_name","pid":P,"tid":T,"args":{"name":"..."}},
 *   {"ph":"X","name":..,"cat":"region","pid":P,"tid":T,"ts":1.5,"dur":2.25},
 *   {"ph":"i","s":"t",...}                       marks
 *   {"ph":"b"/"e","id":"T.L",...}                slices on extra lanes
 *   {"ph":"C","name":"CPU %","pid":P,"ts":..,"args":{"value":12.5}},
 *   ...],
 *   "stackFrames":{"1":{"name":"main","category":"app"},
 *                  "2":{"name":"work","category":"app","parent":"1"},...},
 *   "samples":[{"cpu":0,"tid":T,"pid":P,"ts":1.5,"name":"cputime","sf":2,
 *               "weight":1},...]}
 *
 * One event per line.  Times are microseconds written as decimals with
 * three fractional digits, so nanoseconds survive exactly.  Slices on a
 * thread's own lane (trace_int.h) become complete ("X") events, written
 * in nesting order (start, then longer first); slices on the extra lanes,
 * which do not nest with the rest (ranges, mostly), become nestable async
 * pairs with one id per lane.  MPI slices carry args {bytes, peer},
 * ranges {id}.
 *
 * Samples use the format's global samples with the stack-frame
 * dictionary (the "StackFrames Dictionary" and "Global Samples" sections
 * of the Trace Event Format document): one stackFrames entry per
 * call-path node of the profile, its key the node id + 1, its name the
 * frame's function, its category the module's base name and its parent
 * the caller's key; one samples entry per sample, in time order per
 * thread, with "sf" its innermost node (none for a sample without a call
 * path), "name" the timer that took it (cputime or realtime) and
 * "weight" the timer periods it stands for (1 + overrun).  The CPU is
 * not recorded, so "cpu" is 0; "pid" is added, since tids repeat across
 * the machines of an MPI run.
 *
 * Output is streamed through a buffer of WBUF_SIZE bytes.  jansson (which
 * kscope uses to parse JSON) is not used to write here: it would need a
 * json_t tree per event, which costs an allocation per field on traces of
 * millions of events, and json_string() refuses text that is not valid
 * UTF-8, which names taken from a program may not be; the format is flat
 * and escaping (jw_str) is the only subtle part.
 */
#include "trace.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw.h"
#include "trace_int.h"

#define WBUF_SIZE (256 * 1024)

struct jw {
	const struct ks_profile *p;
	const struct ks_timeline *tl;
	struct ks_outfile *of;
	char *buf;             /* WBUF_SIZE bytes */
	size_t len;
	int error;             /* first write error */
	bool first;            /* no event written yet */
	uint32_t thread;       /* the thread being written */
};

/* ------------------------------------------------------------------ */
/* Buffered output                                                     */
/* ------------------------------------------------------------------ */

static void jw_flush(struct jw *w)
{
	if (w->len && !w->error)
		w->error = ks_outfile_write(w->of, w->buf, w->len);
	w->len = 0;
}

static void jw_put(struct jw *w, const char *s, size_t n)
{
	while (n > 0) {
		size_t room = WBUF_SIZE - w->len, k = n < room ? n : room;

		memcpy(w->buf + w->len, s, k);
		w->len += k;
		s += k;
		n -= k;
		if (w->len == WBUF_SIZE)
			jw_flush(w);
	}
}

static void jw_puts(struct jw *w, const char *s)
{
	jw_put(w, s, strlen(s));
}

/* Decimal integers, written by hand: with printf, formatting numbers was
 * about a tenth of this writer's time under perf. */
static void jw_u64(struct jw *w, uint64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	jw_put(w, p, (size_t)(tmp + sizeof(tmp) - p));
}

static void jw_i64(struct jw *w, int64_t v)
{
	if (v < 0) {
		jw_put(w, "-", 1);
		jw_u64(w, -(uint64_t)v);
	} else {
		jw_u64(w, (uint64_t)v);
	}
}

/* s as a JSON string: quotes, backslashes and control characters escaped,
 * valid UTF-8 passed through, and each byte that is not part of valid
 * UTF-8 written as \u00XX (the character with that value), so the output
 * is always valid JSON in UTF-8. */
static void jw_str(struct jw *w, const char *s)
{
	const unsigned char *u = (const unsigned char *)s, *run = u;

	jw_put(w, "\"", 1);
	while (*u) {
		size_t n = ks_utf8_len(u, SIZE_MAX);
		const char *esc = NULL;
		char hex[8];

		if (n > 1 || (n == 1 && *u >= 0x20 && *u != '"' && *u != '\\' &&
			      *u != 0x7f)) {
			u += n;
			continue;
		}
		jw_put(w, (const char *)run, (size_t)(u - run));
		switch (*u) {
		case '"':  esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default:
			snprintf(hex, sizeof(hex), "\\u%04x", *u);
			esc = hex;
		}
		jw_puts(w, esc);
		run = ++u;
	}
	jw_put(w, (const char *)run, (size_t)(u - run));
	jw_put(w, "\"", 1);
}

/* ns as microseconds with three decimals. */
static void jw_us(struct jw *w, uint64_t ns)
{
	char frac[4] = { '.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
			 (char)('0' + ns % 10) };

	jw_u64(w, ns / 1000);
	jw_put(w, frac, sizeof(frac));
}

/* A finite double, as short as it can be and still read back the same. */
static void jw_double(struct jw *w, double v)
{
	char tmp[40];

	snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		snprintf(tmp, sizeof(tmp), "%.17g", v);
	jw_puts(w, tmp);
}

/* Starts an event: the separator, then {"ph":"<ph>". */
static void event_begin(struct jw *w, const char *ph)
{
	jw_puts(w, w->first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"");
	w->first = false;
	jw_puts(w, ph);
	jw_put(w, "\"", 1);
}

/* ,"pid":P[,"tid":T] */
static void ids(struct jw *w, uint32_t process, const struct ks_pthread *th)
{
	jw_puts(w, ",\"pid\":");
	jw_i64(w, w->tl->pid[process]);
	if (th) {
		jw_puts(w, ",\"tid\":");
		jw_i64(w, th->tid);
	}
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

static int process_meta(struct jw *w, uint32_t i)
{
	const struct ks_pprocess *pr = &w->p->processes[i];
	char *name = ks_timeline_process_name(w->tl, i);

	if (!name)
		return -ENOMEM;
	event_begin(w, "M");
	jw_puts(w, ",\"name\":\"process_name\"");
	ids(w, i, NULL);
	jw_puts(w, ",\"args\":{\"name\":");
	jw_str(w, name);
	jw_puts(w, "}}");
	free(name);
	if (pr->rank >= 0) {
		event_begin(w, "M");
		jw_puts(w, ",\"name\":\"process_sort_index\"");
		ids(w, i, NULL);
		jw_puts(w, ",\"args\":{\"sort_index\":");
		jw_i64(w, pr->rank);
		jw_puts(w, "}}");
	}
	return 0;
}

static void thread_meta(struct jw *w, uint32_t t)
{
	const struct ks_pthread *th = &w->p->threads[t];
	const char *name = ks_profile_str(w->p, th->name);

	/* Without a name, viewers show "Thread <tid>" by themselves. */
	if (!name[0])
		return;
	event_begin(w, "M");
	jw_puts(w, ",\"name\":\"thread_name\"");
	ids(w, th->process, th);
	jw_puts(w, ",\"args\":{\"name\":");
	jw_str(w, name);
	jw_puts(w, "}}");
}

static void slice_args(struct jw *w, const struct ks_pslice *s)
{
	if (s->kind == KS_SLICE_MPI) {
		jw_puts(w, ",\"args\":{\"bytes\":");
		jw_u64(w, s->bytes);
		jw_puts(w, ",\"peer\":");
		jw_i64(w, s->peer);
		jw_put(w, "}", 1);
	} else if (s->kind == KS_SLICE_RANGE) {
		jw_puts(w, ",\"args\":{\"id\":");
		jw_u64(w, s->id);
		jw_put(w, "}", 1);
	}
}

static int slice_event(void *ctx, const struct ks_tl_event *ev)
{
	struct jw *w = ctx;
	const struct ks_pslice *s = &w->p->slices[ev->slice];
	const struct ks_pthread *th = &w->p->threads[w->thread];

	if (ev->lane == 0 && ev->type == KS_TL_END)
		return w->error;   /* the "X" event said where it ends */
	if (ev->lane == 0)
		event_begin(w, ev->type == KS_TL_INSTANT ? "i" : "X");
	else
		event_begin(w, ev->type == KS_TL_BEGIN ? "b" : "e");
	if (ev->type == KS_TL_INSTANT)
		jw_puts(w, ",\"s\":\"t\"");
	jw_puts(w, ",\"name\":");
	jw_str(w, ks_profile_str(w->p, s->name));
	jw_puts(w, ",\"cat\":\"");
	jw_puts(w, ks_timeline_kind_name(s->kind));
	jw_put(w, "\"", 1);
	if (ev->lane) {
		jw_puts(w, ",\"id\":\"");
		jw_i64(w, th->tid);
		jw_put(w, ".", 1);
		jw_u64(w, ev->lane);
		jw_put(w, "\"", 1);
	}
	ids(w, th->process, th);
	jw_puts(w, ",\"ts\":");
	jw_us(w, ev->ts);
	if (ev->lane == 0 && ev->type == KS_TL_BEGIN) {
		jw_puts(w, ",\"dur\":");
		jw_us(w, ks_timeline_slice_end(w->p, s) - s->start);
	}
	if (ev->type != KS_TL_END)
		slice_args(w, s);
	jw_put(w, "}", 1);
	return w->error;
}

static void counter_events(struct jw *w, uint32_t i)
{
	const struct ks_timeline *tl = w->tl;

	for (size_t k = tl->counter_off[i]; k < tl->counter_off[i + 1]; k++) {
		const struct ks_pcounter *c = &w->p->counters[tl->counters[k]];

		event_begin(w, "C");
		jw_puts(w, c->kind == KS_PCOUNTER_RSS ? ",\"name\":\"RSS\""
						     : ",\"name\":\"CPU %\"");
		ids(w, i, NULL);
		jw_puts(w, ",\"ts\":");
		jw_us(w, c->ts);
		jw_puts(w, ",\"args\":{\"value\":");
		jw_double(w, c->value);
		jw_puts(w, "}}");
	}
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/* ,"stackFrames":{...} with one entry per call-path node. */
static void stack_frames(struct jw *w)
{
	const struct ks_profile *p = w->p;

	jw_puts(w, ",\n\"stackFrames\":{");
	for (size_t i = 0; i < p->n_nodes; i++) {
		const struct ks_pnode *n = &p->nodes[i];
		const struct ks_pframe *f = &p->frames[n->frame];

		jw_puts(w, i ? ",\n\"" : "\n\"");
		jw_u64(w, i + 1);
		jw_puts(w, "\":{\"name\":");
		jw_str(w, ks_profile_str(p, f->function));
		jw_puts(w, ",\"category\":");
		jw_str(w, base_name(ks_profile_str(p, f->module)));
		if (n->parent != KS_NONE) {
			jw_puts(w, ",\"parent\":\"");
			jw_u64(w, (uint64_t)n->parent + 1);
			jw_put(w, "\"", 1);
		}
		jw_put(w, "}", 1);
	}
	jw_puts(w, "\n}");
}

/* ,"samples":[...] per thread, each thread's by time. */
static void samples(struct jw *w)
{
	const struct ks_profile *p = w->p;
	const struct ks_timeline *tl = w->tl;
	bool first = true;

	jw_puts(w, ",\n\"samples\":[");
	for (uint32_t t = 0; t < p->n_threads; t++) {
		const struct ks_pthread *th = &p->threads[t];

		for (size_t i = tl->sample_off[t]; i < tl->sample_off[t + 1]; i++) {
			const struct ks_psample *s = &p->samples[tl->samples[i]];

			jw_puts(w, first ? "\n{\"cpu\":0,\"tid\":" : ",\n{\"cpu\":0,\"tid\":");
			first = false;
			jw_i64(w, th->tid);
			jw_puts(w, ",\"pid\":");
			jw_i64(w, tl->pid[th->process]);
			jw_puts(w, ",\"ts\":");
			jw_us(w, s->ts);
			jw_puts(w, s->clock == KS_RAW_CLOCK_REAL ? ",\"name\":\"realtime\""
						 : ",\"name\":\"cputime\"");
			if (s->node != KS_NONE) {
				jw_puts(w, ",\"sf\":");
				jw_u64(w, (uint64_t)s->node + 1);
			}
			jw_puts(w, ",\"weight\":");
			jw_u64(w, (uint64_t)s->overrun + 1);
			jw_put(w, "}", 1);
		}
	}
	jw_puts(w, "\n]");
}

/* ------------------------------------------------------------------ */
/* The writer                                                          */
/* ------------------------------------------------------------------ */

int ks_trace_write_json(const struct ks_profile *p, struct ks_outfile *of,
			struct ks_err *err)
{
	struct ks_timeline tl;
	struct jw w = { .p = p, .tl = &tl, .of = of, .first = true };
	int rc = ks_timeline_init(&tl, p, err);

	if (rc)
		return rc;
	w.buf = malloc(WBUF_SIZE);
	if (!w.buf) {
		rc = -ENOMEM;
		goto out;
	}
	jw_puts(&w, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	for (uint32_t i = 0; !rc && i < p->n_processes; i++)
		rc = process_meta(&w, i);
	for (uint32_t t = 0; !rc && t < p->n_threads; t++)
		thread_meta(&w, t);
	for (uint32_t t = 0; !rc && t < p->n_threads; t++) {
		w.thread = t;
		rc = ks_timeline_walk(&tl, t, slice_event, &w);
	}
	for (uint32_t i = 0; !rc && i < p->n_processes; i++)
		counter_events(&w, i);
	if (!rc) {
		jw_puts(&w, "\n]");
		stack_frames(&w);
		samples(&w);
		jw_puts(&w, "}\n");
		jw_flush(&w);
		rc = w.error;
	}
out:
	if (!rc && w.error)
		rc = w.error;
	if (rc == -ENOMEM)
		ks_err_set(err, rc, "out of memory while writing '%s'", of->name);
	else if (rc)
		ks_err_set(err, rc, "cannot write '%s': %s", of->name, strerror(-rc));
	free(w.buf);
	ks_timeline_free(&tl);
	return rc;
}
