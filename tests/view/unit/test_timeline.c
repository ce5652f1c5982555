/*
 * Unit tests for kscope view's timeline (src/view/view_timeline.c,
 * view_trace.c, view_api_timeline.c): nesting, B/E pairs, instants,
 * flows, metadata names and order, malformed traces and their messages,
 * the traces kscope's own writers produce, the pixel aggregation and the
 * busy intervals against brute-force references on random slices, and
 * every handler's answers and bad params through ks_view_request on a
 * hand-built view.
 */
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_util.h"
#include "view.h"
#include "view_tl_int.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

static struct kv_timeline *load(const char *text)
{
	struct kv_timeline *tl = kv_tl_new();
	struct ks_err err = { 0 };

	assert_non_null(tl);
	if (kv_trace_load(tl, text, strlen(text), "t.json", &err) < 0)
		fail_msg("load failed: %s", err.msg);
	if (kv_tl_finish(tl, &err) < 0)
		fail_msg("finish failed: %s", err.msg);
	return tl;
}

/* A view of one card holding tl (owned by the view). */
struct hv {
	struct ks_view v;
	struct kv_card c;
};

static struct hv *view_of(struct kv_timeline *tl)
{
	struct hv *h = calloc(1, sizeof(*h));

	h->c.id = (char *)(uintptr_t)"t1";
	h->c.title = (char *)(uintptr_t)"t1";
	h->c.path = (char *)(uintptr_t)"t.json";
	h->c.command = (char *)(uintptr_t)"";
	h->c.kinds = KV_TIMELINE;
	h->c.tl = tl;
	h->v.cards = &h->c;
	h->v.ncards = 1;
	return h;
}

static void view_free(struct hv *h)
{
	kv_tl_free(h->c.tl);
	free(h);
}

/* The response to command with params (JSON text); checks result. */
static json_t *req(struct hv *h, const char *command, const char *params, bool ok)
{
	char text[4096];
	size_t len;
	char *out;
	json_t *r;

	snprintf(text, sizeof(text), "{\"id\":1,\"moduleName\":\"timeline\",\"type\":"
		 "\"request\",\"command\":\"%s\",\"params\":%s}", command, params);
	out = ks_view_request(&h->v, text, strlen(text), &len);
	assert_non_null(out);
	r = json_loadb(out, len, 0, NULL);
	assert_non_null(r);
	if (json_is_true(json_object_get(r, "result")) != ok)
		fail_msg("%s %s: expected result %d, got %s", command, params, ok, out);
	free(out);
	return r;
}

static json_t *body(json_t *r)
{
	return json_object_get(r, "body");
}

/* The message of a rejected request contains want. */
static void bad(struct hv *h, const char *command, const char *params, const char *want)
{
	json_t *r = req(h, command, params, false);
	const char *m = json_string_value(json_object_get(body(r), "message"));

	assert_non_null(m);
	if (!strstr(m, want))
		fail_msg("%s %s: message \"%s\" lacks \"%s\"", command, params, m, want);
	json_decref(r);
}

/* Depth d of unit/threadTraces at 1 ns per pixel, as "name@start-end ..." */
static void depth_text(struct hv *h, const char *pid, const char *tid, int64_t end,
		       unsigned d, char *buf, size_t size)
{
	char p[256];
	json_t *r, *arr, *it;
	size_t i, n = 0;

	/* a pixel far narrower than any slice: nothing merges */
	snprintf(p, sizeof(p), "{\"processId\":\"%s\",\"threadId\":\"%s\",\"startTime\":0,"
		 "\"endTime\":%" PRId64 ",\"timePerPx\":%g}", pid, tid, end,
		 (double)end / 100000.0);
	r = req(h, "unit/threadTraces", p, true);
	arr = json_array_get(json_object_get(body(r), "data"), d);
	buf[0] = '\0';
	json_array_foreach(arr, i, it) {
		n += (size_t)snprintf(buf + n, size - n, "%s%s@%" JSON_INTEGER_FORMAT "-%"
				      JSON_INTEGER_FORMAT, i ? " " : "",
				      json_string_value(json_object_get(it, "name")),
				      json_integer_value(json_object_get(it, "startTime")),
				      json_integer_value(json_object_get(it, "endTime")));
		assert_int_equal(json_integer_value(json_object_get(it, "count")), 1);
		assert_int_equal(json_integer_value(json_object_get(it, "depth")), d);
	}
	json_decref(r);
}

/* ------------------------------------------------------------------ */
/* Loading and nesting                                                 */
/* ------------------------------------------------------------------ */

static void test_nesting(void **state)
{
	(void)state;
	/* times in us; origin is A's start (1000 us) */
	struct hv *h = view_of(load(
		"{\"traceEvents\":["
		"{\"ph\":\"X\",\"name\":\"C\",\"pid\":1,\"tid\":2,\"ts\":1020,\"dur\":10},"
		"{\"ph\":\"X\",\"name\":\"A\",\"pid\":1,\"tid\":2,\"ts\":1000,\"dur\":100},"
		"{\"ph\":\"X\",\"name\":\"B\",\"pid\":1,\"tid\":2,\"ts\":1010,\"dur\":40},"
		"{\"ph\":\"X\",\"name\":\"D\",\"pid\":1,\"tid\":2,\"ts\":1050,\"dur\":30},"
		/* starts inside A, ends after it: one level deeper */
		"{\"ph\":\"X\",\"name\":\"E\",\"pid\":1,\"tid\":2,\"ts\":1090,\"dur\":30},"
		"{\"ph\":\"X\",\"name\":\"F\",\"pid\":1,\"tid\":2,\"ts\":1100.0004,\"dur\":\"5\"},"
		"{\"ph\":\"X\",\"name\":\"G\",\"pid\":1,\"tid\":2,\"ts\":1130,\"dur\":1}"
		"],\"displayTimeUnit\":\"ns\"}"));
	char buf[512];
	json_t *r = req(h, "unit/threads", "{}", true), *th;

	assert_int_equal(json_integer_value(json_object_get(body(r), "endTime")), 131000);
	th = json_array_get(json_object_get(json_array_get(json_object_get(body(r),
							   "processes"), 0), "threads"), 0);
	assert_string_equal(json_string_value(json_object_get(th, "tid")), "2");
	assert_int_equal(json_integer_value(json_object_get(th, "maxDepth")), 2);
	assert_int_equal(json_integer_value(json_object_get(th, "slices")), 7);
	json_decref(r);
	depth_text(h, "1", "2", 200000, 0, buf, sizeof(buf));
	assert_string_equal(buf, "A@0-100000 G@130000-131000");
	depth_text(h, "1", "2", 200000, 1, buf, sizeof(buf));
	/* F starts at 100000.4 ns -> 100000 (rounded), after A ended at
	 * 100000 -- but E (depth 1) is still open: F goes under E. */
	assert_string_equal(buf, "B@10000-50000 D@50000-80000 E@90000-120000");
	depth_text(h, "1", "2", 200000, 2, buf, sizeof(buf));
	assert_string_equal(buf, "C@20000-30000 F@100000-105000");
	view_free(h);
}

static void test_begin_end_instants(void **state)
{
	(void)state;
	struct hv *h = view_of(load(
		"[{\"ph\":\"E\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":0},"   /* no B: skipped */
		"{\"ph\":\"B\",\"name\":\"outer\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":1,"
		"\"args\":{\"k\":1}},"
		"{\"ph\":\"B\",\"name\":\"inner\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":2},"
		"{\"ph\":\"B\",\"name\":\"other\",\"pid\":\"p\",\"tid\":\"u\",\"ts\":2.5},"
		"{\"ph\":\"i\",\"s\":\"t\",\"name\":\"mark\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":3},"
		"{\"ph\":\"E\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":4,\"args\":{\"e\":2}},"
		"{\"ph\":\"I\",\"name\":\"mark2\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":4.5},"
		"{\"ph\":\"E\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":5},"
		"{\"ph\":\"C\",\"name\":\"ctr\",\"pid\":\"p\",\"ts\":6,\"args\":{\"v\":1}},"
		"{\"ph\":\"B\",\"name\":\"open\",\"pid\":\"p\",\"tid\":\"t\",\"ts\":8}"
		"]"));
	char buf[512];
	json_t *r;

	depth_text(h, "p", "t", 100000, 0, buf, sizeof(buf));
	/* the origin is the first slice's start (1 us: the lone "E" is not a
	 * slice); "open" never ends: it ends with the trace (8 us, its own
	 * start) */
	assert_string_equal(buf, "outer@0-4000 open@7000-7000");
	depth_text(h, "p", "t", 100000, 1, buf, sizeof(buf));
	assert_string_equal(buf, "inner@1000-3000 mark2@3500-3500");
	depth_text(h, "p", "t", 100000, 2, buf, sizeof(buf));
	assert_string_equal(buf, "mark@2000-2000");
	/* "other" on thread u ends at the last time of the trace, 8 us */
	depth_text(h, "p", "u", 100000, 0, buf, sizeof(buf));
	assert_string_equal(buf, "other@1500-7000");
	/* args of B kept; E's args used when B has none */
	r = req(h, "unit/threadTraces", "{\"processId\":\"p\",\"threadId\":\"t\","
		"\"startTime\":0,\"endTime\":10000,\"timePerPx\":1}", true);
	{
		json_t *d1 = json_array_get(json_object_get(body(r), "data"), 1);
		const char *inner = json_string_value(json_object_get(json_array_get(d1, 0), "id"));
		const char *outer = json_string_value(json_object_get(json_array_get(
			json_array_get(json_object_get(body(r), "data"), 0), 0), "id"));
		char p[256];
		json_t *d;

		snprintf(p, sizeof(p), "{\"pid\":\"p\",\"tid\":\"t\",\"id\":\"%s\"}", inner);
		d = req(h, "unit/threadDetail", p, true);
		assert_string_equal(json_string_value(json_object_get(json_object_get(body(d),
			"data"), "args")), "{\"e\":2}");
		assert_int_equal(json_integer_value(json_object_get(json_object_get(body(d),
			"data"), "selfTime")), 2000 - 0);
		json_decref(d);
		snprintf(p, sizeof(p), "{\"pid\":\"p\",\"tid\":\"t\",\"id\":%s}", outer);
		d = req(h, "unit/threadDetail", p, true);
		json_t *data = json_object_get(body(d), "data");
		assert_string_equal(json_string_value(json_object_get(data, "title")), "outer");
		assert_string_equal(json_string_value(json_object_get(data, "args")), "{\"k\":1}");
		/* 4000 ns minus inner (2000) minus the instant (0) */
		assert_int_equal(json_integer_value(json_object_get(data, "selfTime")), 2000);
		assert_int_equal(json_integer_value(json_object_get(data, "duration")), 4000);
		assert_false(json_is_true(json_object_get(body(d), "emptyFlag")));
		json_decref(d);
	}
	json_decref(r);
	view_free(h);
}

/* kscope sample's JSON trace: names, sort indices, async lanes, marks,
 * counters (skipped). */
static void test_metadata_order(void **state)
{
	(void)state;
	struct hv *h = view_of(load(
		"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
		"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":20,\"args\":{\"name\":\"rank 1\"}},\n"
		"{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":20,\"args\":{\"sort_index\":1}},\n"
		"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":10,\"args\":{\"name\":\"rank 0\"}},\n"
		"{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":10,\"args\":{\"sort_index\":0}},\n"
		"{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":10,\"args\":{\"labels\":\"x\"}},\n"
		"{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":10,\"tid\":11,\"args\":{\"name\":\"worker\"}},\n"
		"{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":10,\"tid\":11,\"args\":{\"sort_index\":-1}},\n"
		"{\"ph\":\"X\",\"name\":\"main\",\"cat\":\"region\",\"pid\":10,\"tid\":10,\"ts\":1.5,\"dur\":2.25},\n"
		"{\"ph\":\"X\",\"name\":\"w\",\"cat\":\"region\",\"pid\":10,\"tid\":11,\"ts\":1.5,\"dur\":2.25},\n"
		"{\"ph\":\"i\",\"s\":\"t\",\"name\":\"mark\",\"cat\":\"mark\",\"pid\":10,\"tid\":10,\"ts\":2.000},\n"
		"{\"ph\":\"b\",\"name\":\"range\",\"cat\":\"range\",\"id\":\"10.1\",\"pid\":10,\"tid\":10,\"ts\":1.000,\"args\":{\"id\":3}},\n"
		"{\"ph\":\"e\",\"name\":\"range\",\"cat\":\"range\",\"id\":\"10.1\",\"pid\":10,\"tid\":10,\"ts\":9.000},\n"
		"{\"ph\":\"X\",\"name\":\"r1\",\"pid\":20,\"tid\":21,\"ts\":1,\"dur\":1},\n"
		"{\"ph\":\"C\",\"name\":\"CPU %\",\"pid\":10,\"ts\":1.000,\"args\":{\"value\":12.5}}\n"
		"]}\n"));
	json_t *r = req(h, "unit/threads", "{\"cardId\":\"t1\"}", true);
	json_t *ps = json_object_get(body(r), "processes"), *p0, *ths;

	assert_int_equal(json_array_size(ps), 2);
	p0 = json_array_get(ps, 0);
	assert_string_equal(json_string_value(json_object_get(p0, "pid")), "10");
	assert_string_equal(json_string_value(json_object_get(p0, "name")), "rank 0");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ps, 1), "name")),
			    "rank 1");
	ths = json_object_get(p0, "threads");
	assert_int_equal(json_array_size(ths), 3);
	/* sort_index -1 first, then first appearance; unnamed shows its id */
	assert_string_equal(json_string_value(json_object_get(json_array_get(ths, 0), "name")),
			    "worker");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ths, 1), "tid")),
			    "10");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ths, 1), "name")),
			    "10");
	assert_string_equal(json_string_value(json_object_get(json_array_get(ths, 2), "tid")),
			    "async:10.1");
	json_decref(r);
	{
		char buf[256];

		depth_text(h, "10", "async:10.1", 100000, 0, buf, sizeof(buf));
		assert_string_equal(buf, "range@0-8000");
		depth_text(h, "10", "10", 100000, 1, buf, sizeof(buf));
		assert_string_equal(buf, "mark@1000-1000");
	}
	view_free(h);
}

/* Flows: "s" .. "t" .. "f" (bp "e"), bound to enclosing slices. */
static void test_flows(void **state)
{
	(void)state;
	struct hv *h = view_of(load(
		"{\"traceEvents\":["
		"{\"ph\":\"X\",\"name\":\"produce\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10},"
		"{\"ph\":\"X\",\"name\":\"step\",\"pid\":1,\"tid\":3,\"ts\":12,\"dur\":2},"
		"{\"ph\":\"X\",\"name\":\"consume\",\"pid\":1,\"tid\":2,\"ts\":20,\"dur\":10},"
		"{\"ph\":\"X\",\"name\":\"sub\",\"pid\":1,\"tid\":2,\"ts\":21,\"dur\":3},"
		"{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"dep\",\"cat\":\"MTE2\",\"id\":7,\"pid\":1,\"tid\":2,\"ts\":22},"
		"{\"ph\":\"s\",\"name\":\"dep\",\"cat\":\"MTE2\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":5},"
		"{\"ph\":\"t\",\"name\":\"dep\",\"cat\":\"MTE2\",\"id\":7,\"pid\":1,\"tid\":3,\"ts\":13},"
		"{\"ph\":\"s\",\"name\":\"x\",\"cat\":\"other\",\"id\":\"7\",\"pid\":1,\"tid\":1,\"ts\":1},"
		"{\"ph\":\"f\",\"name\":\"x\",\"cat\":\"other\",\"id\":\"7\",\"pid\":1,\"tid\":2,\"ts\":25}"
		"]}"));
	struct kv_timeline *tl = h->c.tl;
	uint32_t t1 = kv_tl_thread_find(tl, "1", "1"), t2 = kv_tl_thread_find(tl, "1", "2");
	uint64_t produce = tl->threads[t1].first, sub = tl->threads[t2].depth_off[1];
	char p[256];
	json_t *r, *g, *f;

	assert_int_equal(tl->nflows, 3);
	snprintf(p, sizeof(p), "{\"rankId\":\"t1\",\"pid\":\"1\",\"tid\":1,\"id\":\"%" PRIu64
		 "\"}", produce);
	r = req(h, "unit/flows", p, true);
	g = json_object_get(body(r), "unitAllFlows");
	assert_int_equal(json_array_size(g), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(g, 0), "cat")),
			    "MTE2");
	f = json_array_get(json_object_get(json_array_get(g, 0), "flows"), 0);
	assert_string_equal(json_string_value(json_object_get(f, "id")), "7");
	assert_string_equal(json_string_value(json_object_get(f, "title")), "dep");
	assert_string_equal(json_string_value(json_object_get(json_object_get(f, "from"),
							      "name")), "produce");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(f, "from"),
							    "timestamp")), 5000);
	assert_string_equal(json_string_value(json_object_get(json_object_get(f, "to"),
							      "name")), "step");
	assert_string_equal(json_string_value(json_object_get(json_object_get(f, "to"),
							      "tid")), "3");
	json_decref(r);
	/* the end of the chain binds to the deepest enclosing slice, "sub" */
	snprintf(p, sizeof(p), "{\"pid\":1,\"tid\":\"2\",\"id\":%" PRIu64 "}", sub);
	r = req(h, "unit/flows", p, true);
	g = json_object_get(body(r), "unitAllFlows");
	assert_int_equal(json_array_size(g), 1);
	f = json_array_get(json_object_get(json_array_get(g, 0), "flows"), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(f, "from"),
							      "name")), "step");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(f, "to"),
							    "depth")), 1);
	json_decref(r);
	view_free(h);
}

/* ------------------------------------------------------------------ */
/* Malformed traces                                                    */
/* ------------------------------------------------------------------ */

static void test_malformed(void **state)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "", "byte 0: not a Trace Event Format document" },
		{ "{", "the text ends where a string is expected" },
		{ "42", "not a Trace Event Format document" },
		{ "{\"events\":[]}", "an object without \"traceEvents\"" },
		{ "{\"traceEvents\":{}}", "\"traceEvents\" is not an array" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"dur\":1}", "the text ends where ',' or ']'" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"dur\":1}]x", "text after the end" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"dur\":1},[1]]", "event 1 (byte 27): the event is not an object" },
		{ "[{\"ts\":1}]", "event 0 (byte 9): the event has no \"ph\"" },
		{ "[{\"ph\":5,\"ts\":1}]", "event 0 (byte 7): \"ph\" is not a string" },
		{ "[{\"ph\":\"X\",\"dur\":1}]", "event 0 (byte 19): a \"X\" event without \"ts\"" },
		{ "[{\"ph\":\"X\",\"ts\":\"abc\"}]", "\"ts\" is \"abc\"; a time in microseconds" },
		{ "[{\"ph\":\"X\",\"ts\":true}]", "\"ts\" is not a number" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"dur\":-2}]", "\"dur\" is -2; a duration of 0 or more" },
		{ "[{\"ph\":\"X\",\"ts\":1e300}]", "\"ts\" is 1e+300 us; at most" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"args\":5}]", "\"args\" is not an object" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"pid\":{}}]", "\"pid\" is not a number or a string" },
		{ "[{\"ph\":\"s\",\"ts\":1}]", "a flow event (\"ph\":\"s\") without an \"id\"" },
		{ "[{\"ph\":\"b\",\"ts\":1}]", "an async event (\"ph\":\"b\") without an \"id\"" },
		{ "[{\"ph\":\"M\",\"name\":\"thread_name\"}]", "a \"thread_name\" event without args" },
		{ "[{\"ph\":\"M\",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":\"a\"}}]",
		  "args.sort_index is not an int" },
		{ "[{\"ph\":\"X\",\"name\":\"a\nb\",\"ts\":1}]", "a control character inside a string" },
		{ "[{\"ph\":\"X\",\"name\":\"a\\qb\",\"ts\":1}]", "a bad escape \\q" },
		{ "[{\"ph\":\"X\",\"name\":\"\\u12\",\"ts\":1}]", "a bad \\u escape" },
		{ "[{\"ph\":\"X\" \"ts\":1}]", "'\"' where ',' or '}' is expected" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"x\":[1,2}]", "']' is expected" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"x\":tru}]", "where a value is expected" },
		{ "[{\"ph\":\"X\",\"ts\":1,\"x\":1.2.3}]", "where a number is expected" },
		{ "[{\"ph\":\"B\",\"ts\":5,\"pid\":1,\"tid\":1},{\"ph\":\"E\",\"ts\":4,\"pid\":1,\"tid\":1}]",
		  "event 1 (byte 68): the end (4.000 us) is before its begin (5.000 us)" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kv_timeline *tl = kv_tl_new();
		struct ks_err err = { 0 };
		int rc = kv_trace_load(tl, cases[i].text, strlen(cases[i].text), "bad.json", &err);

		if (rc >= 0)
			fail_msg("case %zu loaded: %s", i, cases[i].text);
		if (strncmp(err.msg, "bad.json: ", 10) != 0 || !strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, err.msg, cases[i].msg);
		kv_tl_free(tl);
	}
}

/* Unicode escapes, invalid UTF-8 (replaced), empty documents. */
static void test_strings(void **state)
{
	(void)state;
	struct hv *h = view_of(load(
		"{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"\\u00e9\\ud83d\\ude00\\u0000\\\"\","
		"\"pid\":1,\"tid\":1,\"ts\":1,\"args\":{\"s\":\"\xff\"}}],\"x\":{\"y\":[null]}}"));
	json_t *r = req(h, "unit/threadTraces", "{\"processId\":1,\"threadId\":1,"
			"\"startTime\":0,\"endTime\":5,\"timePerPx\":1}", true);
	json_t *it = json_array_get(json_array_get(json_object_get(body(r), "data"), 0), 0);

	assert_string_equal(json_string_value(json_object_get(it, "name")),
			    "\xc3\xa9\xf0\x9f\x98\x80?\"");
	json_decref(r);
	r = req(h, "unit/threadDetail", "{\"pid\":1,\"tid\":1,\"id\":0}", true);
	assert_string_equal(json_string_value(json_object_get(json_object_get(body(r), "data"),
							      "args")), "{\"s\":\"?\"}");
	json_decref(r);
	view_free(h);

	h = view_of(load("{\"traceEvents\":[]}"));
	r = req(h, "unit/threads", "{}", true);
	assert_int_equal(json_array_size(json_object_get(body(r), "processes")), 0);
	json_decref(r);
	view_free(h);
}

/* The traces kscope's writers produced for the bundled samples. */
static void test_kscope_traces(void **state)
{
	static const char *const files[] = {
		"predict_vadd/trace.json", "simulate_matmul/trace.json",
		"op_vadd/*/vadd_0/trace.json",  /* the directory is op's pid */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[1024];
		size_t size;
		unsigned char *text;
		struct kv_timeline *tl = kv_tl_new();
		struct ks_err err = { 0 };

		glob_t g;

		snprintf(path, sizeof(path), "%s/%s", KS_VIEW_SAMPLES, files[i]);
		if (glob(path, 0, NULL, &g) != 0 || g.gl_pathc != 1)
			fail_msg("%s: not exactly one such sample", path);
		snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
		globfree(&g);
		text = ks_test_read_file(path, &size);
		if (!text)
			fail_msg("%s: cannot read the sample", path);
		if (kv_trace_load(tl, (const char *)text, size, path, &err) < 0 ||
		    kv_tl_finish(tl, &err) < 0)
			fail_msg("%s: %s", path, err.msg);
		assert_true(kv_tl_slices(tl) > 0);
		if (i == 0)
			assert_true(tl->nflows > 0);  /* predict's dependency arrows */
		for (uint64_t f = 0; f < tl->nflows; f++)
			assert_true(tl->flows[f].slice[0] != KV_TL_NONE &&
				    tl->flows[f].slice[1] != KV_TL_NONE);
		free(text);
		kv_tl_free(tl);
	}
}

/* ------------------------------------------------------------------ */
/* Aggregation against brute force                                     */
/* ------------------------------------------------------------------ */

static uint64_t rng = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const char *const names[] = { "a", "b", "c", "d", "e" };

/* Random nested slices under [lo, hi) at depth d on thread tid. */
static void gen(struct kv_timeline *tl, const char *tid, int64_t lo, int64_t hi, int d,
		int *budget)
{
	int64_t t = lo;

	while (*budget > 0 && t < hi) {
		int64_t gap = (int64_t)(rnd() % 50), len;

		t += gap;
		if (t >= hi)
			break;
		len = (int64_t)(rnd() % 4 == 0 ? rnd() % 2000 : rnd() % 40);
		if (t + len > hi)
			len = hi - t;
		(*budget)--;
		assert_int_equal(kv_tl_slice(tl, "1", tid, names[rnd() % 5], NULL,
					     d % 2 ? "good" : NULL, t, (uint64_t)len, NULL, 0), 0);
		if (d < 4 && len > 4)
			gen(tl, tid, t + 1, t + len - 1, d + 1, budget);
		t += len;
	}
}

static void check_query(const struct kv_timeline *tl, uint32_t th, int64_t ws, int64_t we,
			double tpp)
{
	const struct kv_tl_thread *h = &tl->threads[th];
	const struct kv_tl_slice *s = tl->slices;
	struct kv_tl_item *it;
	size_t n, k = 0;

	assert_int_equal(kv_tl_query(tl, th, ws, we, tpp, &it, &n), 0);
	for (uint32_t d = 0; d < h->ndepth; d++) {
		uint64_t lo = h->depth_off[d], hi = h->depth_off[d + 1], next = lo, covered = 0;
		size_t first = k, items;

		for (; k < n && it[k].depth == d; k++) {
			const struct kv_tl_item *x = &it[k];
			uint32_t cnt[5] = { 0 }, best = 0, bname = 0;

			/* every slice overlapping the window once, in order */
			while (next < hi && !(s[next].end >= ws && s[next].start <= we))
				next++;
			assert_int_equal(x->id, next);
			for (uint64_t j = x->id; j < x->id + x->count; j++) {
				assert_true(j < hi);
				assert_true(s[j].end >= ws && s[j].start <= we);
				assert_int_equal(s[j].depth, d);
			}
			next = x->id + x->count;
			covered += x->count;
			assert_int_equal(x->start, s[x->id].start);
			assert_int_equal(x->end, s[x->id + x->count - 1].end);
			if (x->count > 1) {
				/* merged: under a pixel, the most common name */
				assert_true((double)(x->end - x->start) < tpp);
				for (uint64_t j = x->id; j < x->id + x->count; j++) {
					uint32_t ni = (uint32_t)(kv_tl_str(tl, s[j].name)[0] - 'a');

					if (++cnt[ni] > best)
						best = cnt[ni];
				}
				for (uint64_t j = x->id; j < x->id + x->count; j++) {
					uint32_t ni = (uint32_t)(kv_tl_str(tl, s[j].name)[0] - 'a');

					if (cnt[ni] == best) {
						bname = s[j].name;
						break;
					}
				}
				assert_int_equal(x->name, bname);
			} else {
				assert_int_equal(x->name, s[x->id].name);
			}
			/* neighbours that could have merged did */
			if (k > first)
				assert_true((double)(x->end - it[k - 1].start) >= tpp);
		}
		for (; next < hi; next++)
			assert_false(s[next].end >= ws && s[next].start <= we);
		(void)covered;
		items = k - first;
		assert_true((double)items <= 2.0 * ((double)(we - ws) / tpp + 2.0));
	}
	assert_int_equal(k, n);
	free(it);
}

static int span_start_cmp(const void *pa, const void *pb)
{
	const struct kv_tl_span *a = pa, *b = pb;

	return a->start < b->start ? -1 : a->start > b->start;
}

/* Brute-force busy intervals: the union of every slice, clipped, merged
 * across gaps under a pixel. */
static void check_busy(const struct kv_timeline *tl, uint32_t pr, int64_t ws, int64_t we,
		       double tpp)
{
	struct kv_tl_span *sp, *ref = malloc((tl->nslices + 1) * sizeof(*ref));
	size_t n, m = 0;
	uint64_t cnt = 0;
	struct kv_tl_span *all = malloc((tl->nslices + 1) * sizeof(*all));

	for (uint64_t i = 0; i < tl->nslices; i++)
		if (tl->threads[tl->slices[i].thread].process == pr)
			all[cnt++] = (struct kv_tl_span){ tl->slices[i].start, tl->slices[i].end };
	qsort(all, cnt, sizeof(*all), span_start_cmp);
	for (uint64_t i = 0; i < cnt; i++) {
		if (all[i].end < ws || all[i].start > we)
			continue;
		if (m && (all[i].start <= ref[m - 1].end ||
			  (double)all[i].start < (double)ref[m - 1].end + tpp)) {
			if (all[i].end > ref[m - 1].end)
				ref[m - 1].end = all[i].end;
		} else {
			ref[m++] = all[i];
		}
	}
	for (size_t i = 0; i < m; i++) {
		if (ref[i].start < ws)
			ref[i].start = ws;
		if (ref[i].end > we)
			ref[i].end = we;
	}
	assert_int_equal(kv_tl_busy(tl, pr, ws, we, tpp, &sp, &n), 0);
	assert_int_equal(n, m);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(sp[i].start, ref[i].start);
		assert_int_equal(sp[i].end, ref[i].end);
	}
	free(sp);
	free(ref);
	free(all);
}

static void test_aggregation(void **state)
{
	(void)state;
	for (int round = 0; round < 6; round++) {
		struct kv_timeline *tl = kv_tl_new();
		struct ks_err err;
		int budget = 3000;

		gen(tl, "1", 1000, 200000, 0, &budget);
		budget = 1500;
		gen(tl, "2", 5000, 150000, 0, &budget);
		/* a few bad nestings and zero-length slices */
		for (int i = 0; i < 40; i++)
			assert_int_equal(kv_tl_slice(tl, "1", "3", names[i % 5], NULL, NULL,
						     (int64_t)(rnd() % 200000),
						     rnd() % 3 ? rnd() % 3000 : 0, NULL, 0), 0);
		assert_int_equal(kv_tl_finish(tl, &err), 0);
		for (uint32_t th = 0; th < tl->nthreads; th++) {
			/* within a depth: sorted, no overlap */
			const struct kv_tl_thread *h = &tl->threads[th];

			for (uint32_t d = 0; d < h->ndepth; d++)
				for (uint64_t i = h->depth_off[d] + 1; i < h->depth_off[d + 1]; i++)
					assert_true(tl->slices[i - 1].end <= tl->slices[i].start);
			for (int q = 0; q < 30; q++) {
				int64_t a = (int64_t)(rnd() % 210000), b = (int64_t)(rnd() % 210000);
				double tpp = q % 3 == 0 ? 0.5 : (double)(1 + rnd() % 3000) / 7.0;

				if (a > b) {
					int64_t x = a;
					a = b;
					b = x;
				}
				if (q == 0) {
					a = 0;
					b = tl->last_end;
				}
				check_query(tl, th, a, b, tpp);
				check_busy(tl, 0, a, b, tpp);
			}
		}
		kv_tl_free(tl);
	}
}

/* ------------------------------------------------------------------ */
/* Handlers' bad params                                                */
/* ------------------------------------------------------------------ */

static void test_bad_params(void **state)
{
	(void)state;
	struct hv *h = view_of(load(
		"[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":2,\"ts\":0,\"dur\":1000}]"));
	const char *tr = "unit/threadTraces", *su = "unit/threadTracesSummary";
	json_t *r;

	bad(h, "unit/threads", "{\"cardId\":\"nope\"}", "params.cardId \"nope\" is no card here");
	bad(h, tr, "{\"threadId\":\"2\",\"startTime\":0,\"endTime\":5,\"timePerPx\":1}",
	    "params.processId is missing");
	bad(h, tr, "{\"processId\":[1],\"threadId\":\"2\",\"startTime\":0,\"endTime\":5,"
	    "\"timePerPx\":1}", "params.processId is not a string or an integer");
	bad(h, tr, "{\"processId\":\"1\",\"startTime\":0,\"endTime\":5,\"timePerPx\":1}",
	    "params.threadId is missing");
	bad(h, tr, "{\"processId\":\"9\",\"threadId\":\"2\",\"startTime\":0,\"endTime\":5,"
	    "\"timePerPx\":1}", "params.processId \"9\" is not a process");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"3\",\"startTime\":0,\"endTime\":5,"
	    "\"timePerPx\":1}", "params.threadId \"3\" is not a thread of process \"1\"");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"endTime\":5,\"timePerPx\":1}",
	    "params.startTime is missing");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"startTime\":-1,\"endTime\":5,"
	    "\"timePerPx\":1}", "params.startTime is -1");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"startTime\":\"x\",\"endTime\":5,"
	    "\"timePerPx\":1}", "params.startTime is \"x\"");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"startTime\":6,\"endTime\":5,"
	    "\"timePerPx\":1}", "params.startTime (6) is after params.endTime (5)");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"startTime\":0,\"endTime\":5}",
	    "params.timePerPx is missing");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"startTime\":0,\"endTime\":5,"
	    "\"timePerPx\":0}", "params.timePerPx is 0");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"startTime\":0,\"endTime\":5,"
	    "\"timePerPx\":-1}", "params.timePerPx is -1");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"startTime\":0,\"endTime\":5,"
	    "\"timePerPx\":\"1\"}", "params.timePerPx is a string");
	bad(h, tr, "{\"processId\":\"1\",\"threadId\":\"2\",\"startTime\":0,"
	    "\"endTime\":1000000,\"timePerPx\":1}", "the window is 1000000 pixels wide");
	bad(h, su, "{\"startTime\":0,\"endTime\":5,\"timePerPx\":1}",
	    "params.processId is missing");
	bad(h, su, "{\"processId\":\"1\",\"startTime\":0,\"endTime\":5e9,\"timePerPx\":1e-3}",
	    "pixels wide");
	bad(h, su, "{\"processId\":\"x\",\"startTime\":0,\"endTime\":5,\"timePerPx\":1}",
	    "params.processId \"x\" is not a process");
	bad(h, "unit/flows", "{\"pid\":\"1\",\"tid\":\"2\"}", "params.id is missing");
	bad(h, "unit/flows", "{\"pid\":\"1\",\"tid\":\"2\",\"id\":\"1\"}",
	    "params.id 1 is not a slice of that thread");
	bad(h, "unit/flows", "{\"pid\":\"1\",\"tid\":\"2\",\"id\":\"a\"}", "params.id is \"a\"");
	bad(h, "unit/flows", "{\"pid\":\"1\",\"id\":0}", "params.tid is missing");
	bad(h, "unit/threadDetail", "{\"tid\":\"2\",\"id\":0}", "params.pid is missing");
	bad(h, "unit/threadDetail", "{\"pid\":\"1\",\"tid\":\"2\",\"id\":-3}", "params.id is -3");
	bad(h, "unit/threadDetail", "{\"pid\":\"1\",\"tid\":\"7\",\"id\":0}",
	    "params.tid \"7\" is not a thread");
	/* and good ones */
	r = req(h, su, "{\"processId\":1,\"startTime\":500,\"endTime\":5000,\"timePerPx\":1}",
		true);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(
		body(r), "data"), 0), "duration")), 4500);
	json_decref(r);
	r = req(h, "unit/flows", "{\"pid\":\"1\",\"tid\":\"2\",\"id\":\"0\"}", true);
	assert_int_equal(json_array_size(json_object_get(body(r), "unitAllFlows")), 0);
	json_decref(r);
	view_free(h);
}

/* Item i of unit/counterValues as "start:v0,v1[/last0,last1]xcount". */
static void citem_text(json_t *data, size_t i, char *buf, size_t size)
{
	json_t *it = json_array_get(data, i), *v;
	size_t k, len;

	assert_non_null(it);
	len = (size_t)snprintf(buf, size, "%" JSON_INTEGER_FORMAT ":",
			       json_integer_value(json_object_get(it, "startTime")));
	json_array_foreach(json_object_get(it, "values"), k, v)
		len += (size_t)snprintf(buf + len, size - len, "%s%.17g", k ? "," : "",
					json_real_value(v));
	if (json_object_get(it, "last")) {
		json_array_foreach(json_object_get(it, "last"), k, v)
			len += (size_t)snprintf(buf + len, size - len, "%s%.17g",
						k ? "," : "/", json_real_value(v));
	}
	snprintf(buf + len, size - len, "x%" JSON_INTEGER_FORMAT,
		 json_integer_value(json_object_get(it, "count")));
}

/* "C" events: counter tracks per process (and thread), series, the
 * values as written, time order, the origin, merging, and that counters
 * add no track to unit/threads. */
static void test_counters(void **state)
{
	(void)state;
	struct hv *h = view_of(load(
		"{\"traceEvents\":[\n"
		"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"thread1\"}},\n"
		"{\"ph\":\"X\",\"name\":\"s\",\"pid\":1,\"tid\":1,\"ts\":10,\"dur\":5},\n"
		"{\"name\":\"L1 -> registers\",\"cat\":\"bandwidth\",\"ph\":\"C\",\"pid\":1,"
		"\"ts\":9.5,\"args\":{\"Read GB/s\":2.5,\"Write GB/s\":0.125}},\n"
		"{\"name\":\"L1 -> registers\",\"ph\":\"C\",\"pid\":1,\"ts\":11,"
		"\"args\":{\"Read GB/s\":0,\"Write GB/s\":4}},\n"
		"{\"name\":\"L1 -> registers\",\"ph\":\"C\",\"pid\":1,\"ts\":11.002,"
		"\"args\":{\"Read GB/s\":7,\"Write GB/s\":1.0000000001}},\n"
		"{\"name\":\"L1 -> registers\",\"ph\":\"C\",\"pid\":1,\"ts\":20,"
		"\"args\":{\"Read GB/s\":0,\"Write GB/s\":0}},\n"
		"{\"name\":\"ctr\",\"ph\":\"C\",\"pid\":1,\"tid\":2,\"ts\":12,"
		"\"args\":{\"v\":1,\"s\":\"x\"}},\n"
		"{\"name\":\"ctr\",\"ph\":\"C\",\"pid\":1,\"tid\":2,\"ts\":11,\"args\":{\"w\":3}},\n"
		"{\"name\":\"cpu\",\"id\":\"7\",\"ph\":\"C\",\"pid\":\"9\",\"ts\":15,"
		"\"args\":{\"value\":1e3}},\n"
		"{\"name\":\"nothing\",\"ph\":\"C\",\"pid\":1,\"ts\":15,\"args\":{\"s\":\"x\"}},\n"
		"{\"name\":\"nots\",\"ph\":\"C\",\"pid\":1,\"args\":{\"v\":1}}\n"
		"]}\n"));
	json_t *r, *cs, *c, *data;
	char buf[256];

	/* no track of their own: one process, one thread, the slice's span */
	r = req(h, "unit/threads", "{}", true);
	assert_int_equal(json_array_size(json_object_get(body(r), "processes")), 1);
	assert_int_equal(json_array_size(json_object_get(json_array_get(json_object_get(
		body(r), "processes"), 0), "threads")), 1);
	assert_int_equal(json_integer_value(json_object_get(body(r), "endTime")), 5000);
	json_decref(r);

	r = req(h, "unit/counters", "{}", true);
	/* times from the origin, the first slice (10 us) */
	assert_int_equal(json_integer_value(json_object_get(body(r), "endTime")), 10000);
	cs = json_object_get(body(r), "counters");
	assert_int_equal(json_array_size(cs), 3);
	c = json_array_get(cs, 0);
	assert_string_equal(json_string_value(json_object_get(c, "name")), "L1 -> registers");
	assert_string_equal(json_string_value(json_object_get(c, "pid")), "1");
	assert_string_equal(json_string_value(json_object_get(c, "processName")), "thread1");
	assert_string_equal(json_string_value(json_object_get(c, "tid")), "");
	assert_string_equal(json_string_value(json_array_get(json_object_get(c, "series"), 1)),
			    "Write GB/s");
	assert_true(json_real_value(json_object_get(c, "max")) == 7);
	assert_int_equal(json_integer_value(json_object_get(c, "samples")), 4);
	c = json_array_get(cs, 1);
	assert_string_equal(json_string_value(json_object_get(c, "name")), "ctr");
	assert_string_equal(json_string_value(json_object_get(c, "tid")), "2");
	assert_int_equal(json_array_size(json_object_get(c, "series")), 2);
	c = json_array_get(cs, 2);
	assert_string_equal(json_string_value(json_object_get(c, "name")), "cpu 7");
	assert_string_equal(json_string_value(json_object_get(c, "processName")), "9");
	json_decref(r);

	/* as written; the sample before the origin holds from 0 */
	r = req(h, "unit/counterValues", "{\"processId\":1,\"name\":\"L1 -> registers\","
		"\"startTime\":0,\"endTime\":20000,\"timePerPx\":0.5}", true);
	data = json_object_get(body(r), "data");
	assert_int_equal(json_array_size(data), 4);
	citem_text(data, 0, buf, sizeof(buf));
	assert_string_equal(buf, "0:2.5,0.125x1");
	citem_text(data, 1, buf, sizeof(buf));
	assert_string_equal(buf, "1000:0,4x1");
	citem_text(data, 2, buf, sizeof(buf));
	assert_string_equal(buf, "1002:7,1.0000000001x1");
	citem_text(data, 3, buf, sizeof(buf));
	assert_string_equal(buf, "10000:0,0x1");
	json_decref(r);
	/* within a pixel: the largest of each series, then the last values */
	r = req(h, "unit/counterValues", "{\"processId\":1,\"name\":\"L1 -> registers\","
		"\"startTime\":0,\"endTime\":20000,\"timePerPx\":10}", true);
	data = json_object_get(body(r), "data");
	assert_int_equal(json_array_size(data), 3);
	citem_text(data, 1, buf, sizeof(buf));
	assert_string_equal(buf, "1000:7,4/7,1.0000000001x2");
	json_decref(r);
	/* a window from 5 us: the sample in force there first */
	r = req(h, "unit/counterValues", "{\"processId\":1,\"name\":\"L1 -> registers\","
		"\"startTime\":5000,\"endTime\":6000,\"timePerPx\":1}", true);
	data = json_object_get(body(r), "data");
	assert_int_equal(json_array_size(data), 1);
	citem_text(data, 0, buf, sizeof(buf));
	assert_string_equal(buf, "1002:7,1.0000000001x1");
	json_decref(r);
	/* a thread's counter, its events out of order, a series added */
	r = req(h, "unit/counterValues", "{\"processId\":1,\"threadId\":2,\"name\":\"ctr\","
		"\"startTime\":0,\"endTime\":20000,\"timePerPx\":1}", true);
	data = json_object_get(body(r), "data");
	assert_string_equal(json_string_value(json_array_get(json_object_get(body(r), "series"),
							     0)), "v");
	citem_text(data, 0, buf, sizeof(buf));
	assert_string_equal(buf, "1000:0,3x1");
	citem_text(data, 1, buf, sizeof(buf));
	assert_string_equal(buf, "2000:1,0x1");
	json_decref(r);
	r = req(h, "unit/counterValues", "{\"processId\":\"9\",\"name\":\"cpu 7\","
		"\"startTime\":0,\"endTime\":20000,\"timePerPx\":1}", true);
	citem_text(json_object_get(body(r), "data"), 0, buf, sizeof(buf));
	assert_string_equal(buf, "5000:1000x1");
	json_decref(r);
	bad(h, "unit/counterValues", "{\"processId\":1,\"startTime\":0,\"endTime\":5,"
	    "\"timePerPx\":1}", "params.name is missing");
	bad(h, "unit/counterValues", "{\"processId\":1,\"name\":\"ctr\",\"startTime\":0,"
	    "\"endTime\":5,\"timePerPx\":1}", "has no counter \"ctr\" of process \"1\"");
	bad(h, "unit/counterValues", "{\"processId\":1,\"name\":\"nothing\",\"startTime\":0,"
	    "\"endTime\":5,\"timePerPx\":1}", "has no counter");
	view_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_begin_end_instants),
		cmocka_unit_test(test_metadata_order),
		cmocka_unit_test(test_flows),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_kscope_traces),
		cmocka_unit_test(test_aggregation),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_counters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
