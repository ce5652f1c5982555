/*
 * view_api_timeline.c: the timeline module of kscope view's API --
 * unit/threads, unit/threadTracesSummary, unit/threadTraces, unit/flows,
 * unit/threadDetail, unit/counters and unit/counterValues (docs/view.md,
 * "Timeline").  Each handler checks
 * its params, asks the timeline model (view_tl_int.h) and turns the answer
 * into the body's JSON; the model does the work, so these stay thin.
 *
 * Windows are checked before any work: 0 <= startTime <= endTime and a
 * width of at most KV_TL_MAX_PX pixels at timePerPx, so that an answer is
 * bounded by pixels x depths however the request is made.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_tl_int.h"

/* The widest window a request may ask for, in pixels. */
#define KV_TL_MAX_PX 100000.0

/* A track id param (processId, threadId, pid, tid): a string, or an
 * integer taken as its decimal text. */
static int param_track(json_t *params, const char *name, char *buf, size_t size,
		       struct kv_reqerr *e)
{
	json_t *j = json_object_get(params, name);

	if (json_is_integer(j)) {
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		return 0;
	}
	if (json_is_string(j)) {
		if (json_string_length(j) >= size)
			return kv_fail(e, "params.%s is %zu bytes long; a track id of at most "
				       "%zu bytes is expected", name, json_string_length(j),
				       size - 1);
		memcpy(buf, json_string_value(j), json_string_length(j) + 1);
		return 0;
	}
	return kv_fail(e, "params.%s is %s; a %s id (a string or an integer) is expected",
		       name, j ? "not a string or an integer" : "missing",
		       strstr(name, "hread") || strcmp(name, "tid") == 0 ? "thread" : "process");
}

/* startTime, endTime and timePerPx, checked. */
static int param_window(json_t *params, int64_t *ws, int64_t *we, double *tpp,
			struct kv_reqerr *e)
{
	double px;

	if (kv_param_int(params, "startTime", true, 0, INT64_MAX, ws, e) < 0 ||
	    kv_param_int(params, "endTime", true, 0, INT64_MAX, we, e) < 0 ||
	    kv_param_num(params, "timePerPx", true, 0, 1e300, tpp, e) < 0)
		return -1;
	if (*ws > *we)
		return kv_fail(e, "params.startTime (%" PRId64 ") is after params.endTime "
			       "(%" PRId64 "); 0 <= startTime <= endTime is expected", *ws, *we);
	if (!(*tpp > 0))
		return kv_fail(e, "params.timePerPx is 0; a number of nanoseconds per pixel "
			       "above 0 is expected");
	px = (double)(*we - *ws) / *tpp;
	if (px > KV_TL_MAX_PX)
		return kv_fail(e, "the window is %.0f pixels wide ((endTime - startTime) / "
			       "timePerPx); at most %.0f are accepted, so timePerPx must be at "
			       "least %.6g here", px, KV_TL_MAX_PX,
			       (double)(*we - *ws) / KV_TL_MAX_PX);
	return 0;
}

static uint32_t find_process(const struct kv_card *c, const char *pid,
			     struct kv_reqerr *e, const char *param)
{
	uint32_t p = kv_tl_process_find(c->tl, pid);

	if (p == KV_TL_NONE)
		kv_fail(e, "params.%s \"%.100s\" is not a process of card \"%.100s\"; "
			"unit/threads lists its processes", param, pid, c->id);
	return p;
}

static uint32_t find_thread(const struct kv_card *c, const char *pid, const char *tid,
			    struct kv_reqerr *e, const char *pparam, const char *tparam)
{
	uint32_t t;

	if (find_process(c, pid, e, pparam) == KV_TL_NONE)
		return KV_TL_NONE;
	t = kv_tl_thread_find(c->tl, pid, tid);
	if (t == KV_TL_NONE)
		kv_fail(e, "params.%s \"%.100s\" is not a thread of process \"%.100s\" "
			"(params.%s) in card \"%.100s\"; unit/threads lists its threads",
			tparam, tid, pid, pparam, c->id);
	return t;
}

static json_t *id_text(uint64_t id)
{
	char buf[24], *p = buf + sizeof(buf) - 1;

	/* by hand: unit/threadTraces makes thousands per answer */
	*p = '\0';
	do {
		*--p = (char)('0' + id % 10);
		id /= 10;
	} while (id);
	return json_string(p);
}

/* The JSON strings of an answer's names, shared between items (a
 * direct-mapped cache by string id; one per request, so no locks). */
struct strcache {
	uint32_t id[256];
	json_t *j[256];
};

static json_t *cached_str(struct strcache *c, const struct kv_timeline *tl, uint32_t id)
{
	unsigned k = id & 255;

	if (!c->j[k] || c->id[k] != id) {
		json_decref(c->j[k]);
		c->j[k] = json_string(kv_tl_str(tl, id));
		c->id[k] = id;
	}
	return json_incref(c->j[k]);
}

/* A slice id param: a slice of thread th. */
static int param_slice(const struct kv_card *c, json_t *params, uint32_t th,
		       uint64_t *out, struct kv_reqerr *e)
{
	int64_t id;

	if (kv_param_int(params, "id", true, 0, INT64_MAX, &id, e) < 0)
		return -1;
	if ((uint64_t)id >= c->tl->nslices || c->tl->slices[id].thread != th)
		return kv_fail(e, "params.id %" PRId64 " is not a slice of that thread; the "
			       "id of an item of unit/threadTraces is expected", id);
	*out = (uint64_t)id;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Handlers                                                            */
/* ------------------------------------------------------------------ */

static int h_threads(const struct ks_view *v, json_t *params, json_t **body,
		     struct kv_reqerr *e)
{
	const struct kv_card *c;
	const struct kv_timeline *tl;
	json_t *procs, *b;

	if (kv_param_card(v, params, KV_TIMELINE, &c, e) < 0)
		return -1;
	tl = c->tl;
	procs = json_array();
	b = json_pack("{s:I, s:I, s:o}", "startTime", (json_int_t)0, "endTime",
		      (json_int_t)tl->last_end, "processes", procs);
	if (!b)
		return kv_fail(e, "out of memory");
	for (uint32_t k = 0; k < tl->nprocesses; k++) {
		const struct kv_tl_process *p = &tl->processes[tl->proc_order[k]];
		json_t *ths = json_array();

		json_array_append_new(procs, json_pack("{s:s, s:s, s:o}",
			"pid", kv_tl_str(tl, p->pid),
			"name", kv_tl_str(tl, p->name ? p->name : p->pid),
			"threads", ths));
		for (uint32_t i = 0; i < p->nthreads; i++) {
			const struct kv_tl_thread *t = &tl->threads[p->threads[i]];

			json_array_append_new(ths, json_pack("{s:s, s:s, s:I, s:I}",
				"tid", kv_tl_str(tl, t->tid),
				"name", kv_tl_str(tl, t->name ? t->name : t->tid),
				"maxDepth", (json_int_t)(t->ndepth ? t->ndepth - 1 : 0),
				"slices", (json_int_t)t->n));
		}
	}
	*body = b;
	return 0;
}

static int h_summary(const struct ks_view *v, json_t *params, json_t **body,
		     struct kv_reqerr *e)
{
	const struct kv_card *c;
	char pid[256];
	int64_t ws, we;
	double tpp;
	uint32_t p;
	struct kv_tl_span *sp;
	size_t n;
	json_t *data;

	if (kv_param_card(v, params, KV_TIMELINE, &c, e) < 0 ||
	    param_track(params, "processId", pid, sizeof(pid), e) < 0 ||
	    param_window(params, &ws, &we, &tpp, e) < 0)
		return -1;
	if ((p = find_process(c, pid, e, "processId")) == KV_TL_NONE)
		return -1;
	if (kv_tl_busy(c->tl, p, ws, we, tpp, &sp, &n) < 0)
		return kv_fail(e, "out of memory");
	data = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(data, json_pack("{s:I, s:I}",
			"startTime", (json_int_t)sp[i].start,
			"duration", (json_int_t)(sp[i].end - sp[i].start)));
	free(sp);
	*body = json_pack("{s:o}", "data", data);
	return 0;
}

static int h_traces(const struct ks_view *v, json_t *params, json_t **body,
		    struct kv_reqerr *e)
{
	const struct kv_card *c;
	const struct kv_timeline *tl;
	char pid[256], tid[256];
	int64_t ws, we;
	double tpp;
	uint32_t t;
	struct kv_tl_item *it;
	size_t n;
	json_t *data, *tidj;
	struct strcache sc = { { 0 }, { NULL } };

	if (kv_param_card(v, params, KV_TIMELINE, &c, e) < 0 ||
	    param_track(params, "processId", pid, sizeof(pid), e) < 0 ||
	    param_track(params, "threadId", tid, sizeof(tid), e) < 0 ||
	    param_window(params, &ws, &we, &tpp, e) < 0)
		return -1;
	tl = c->tl;
	if ((t = find_thread(c, pid, tid, e, "processId", "threadId")) == KV_TL_NONE)
		return -1;
	if (kv_tl_query(tl, t, ws, we, tpp, &it, &n) < 0)
		return kv_fail(e, "out of memory");
	data = json_array();
	tidj = json_string(kv_tl_str(tl, tl->threads[t].tid));
	for (uint32_t d = 0; d < tl->threads[t].ndepth; d++)
		json_array_append_new(data, json_array());
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "id", id_text(it[i].id));
		json_object_set_new(o, "name", cached_str(&sc, tl, it[i].name));
		json_object_set_new(o, "startTime", json_integer(it[i].start));
		json_object_set_new(o, "endTime", json_integer(it[i].end));
		json_object_set_new(o, "duration", json_integer(it[i].end - it[i].start));
		json_object_set_new(o, "depth", json_integer(it[i].depth));
		json_object_set(o, "threadId", tidj);
		json_object_set_new(o, "cname", cached_str(&sc, tl, it[i].cname));
		json_object_set_new(o, "count", json_integer((json_int_t)it[i].count));
		json_array_append_new(json_array_get(data, it[i].depth), o);
	}
	json_decref(tidj);
	for (unsigned k = 0; k < 256; k++)
		json_decref(sc.j[k]);
	free(it);
	*body = json_pack("{s:o}", "data", data);
	return 0;
}

/* One end of a flow: {pid, tid, timestamp, duration, depth, name, id}. */
static json_t *flow_end(const struct kv_timeline *tl, const struct kv_tl_flow *f, int k)
{
	const struct kv_tl_thread *t = &tl->threads[f->thread[k]];
	const struct kv_tl_process *p = &tl->processes[t->process];
	json_t *o = json_pack("{s:s, s:s, s:I}", "pid", kv_tl_str(tl, p->pid),
			      "tid", kv_tl_str(tl, t->tid), "timestamp", (json_int_t)f->ts[k]);

	if (f->slice[k] != KV_TL_NONE) {
		const struct kv_tl_slice *s = &tl->slices[f->slice[k]];

		json_object_set_new(o, "duration", json_integer(s->end - s->start));
		json_object_set_new(o, "depth", json_integer(s->depth));
		json_object_set_new(o, "name", json_string(kv_tl_str(tl, s->name)));
		json_object_set_new(o, "id", id_text(f->slice[k]));
	} else {
		json_object_set_new(o, "duration", json_integer(0));
		json_object_set_new(o, "depth", json_integer(0));
		json_object_set_new(o, "name", json_string(""));
		json_object_set_new(o, "id", json_string(""));
	}
	return o;
}

static int h_flows(const struct ks_view *v, json_t *params, json_t **body,
		   struct kv_reqerr *e)
{
	const struct kv_card *c;
	const struct kv_timeline *tl;
	char pid[256], tid[256];
	uint32_t t;
	uint64_t slice, *fl;
	size_t n;
	json_t *groups, *bycat;

	if (kv_param_card(v, params, KV_TIMELINE, &c, e) < 0 ||
	    param_track(params, "pid", pid, sizeof(pid), e) < 0 ||
	    param_track(params, "tid", tid, sizeof(tid), e) < 0)
		return -1;
	tl = c->tl;
	if ((t = find_thread(c, pid, tid, e, "pid", "tid")) == KV_TL_NONE ||
	    param_slice(c, params, t, &slice, e) < 0)
		return -1;
	if (kv_tl_flows_of(tl, slice, &fl, &n) < 0)
		return kv_fail(e, "out of memory");
	groups = json_array();
	bycat = json_object();  /* cat -> its flows array (borrowed) */
	for (size_t i = 0; i < n; i++) {
		const struct kv_tl_flow *f = &tl->flows[fl[i]];
		const char *cat = kv_tl_str(tl, f->cat);
		json_t *arr = json_object_get(bycat, cat);

		if (!arr) {
			arr = json_array();
			json_array_append_new(groups, json_pack("{s:s, s:o}", "cat", cat,
								"flows", arr));
			json_object_set(bycat, cat, arr);
		}
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:o, s:o}",
			"title", f->name ? kv_tl_str(tl, f->name) : "flow",
			"cat", cat, "id", kv_tl_str(tl, f->id),
			"from", flow_end(tl, f, 0), "to", flow_end(tl, f, 1)));
	}
	json_decref(bycat);
	free(fl);
	*body = json_pack("{s:o}", "unitAllFlows", groups);
	return 0;
}

static int h_detail(const struct ks_view *v, json_t *params, json_t **body,
		    struct kv_reqerr *e)
{
	const struct kv_card *c;
	const struct kv_timeline *tl;
	const struct kv_tl_slice *s;
	char pid[256], tid[256];
	uint32_t t;
	uint64_t slice;
	json_t *args;

	if (kv_param_card(v, params, KV_TIMELINE, &c, e) < 0 ||
	    param_track(params, "pid", pid, sizeof(pid), e) < 0 ||
	    param_track(params, "tid", tid, sizeof(tid), e) < 0)
		return -1;
	tl = c->tl;
	if ((t = find_thread(c, pid, tid, e, "pid", "tid")) == KV_TL_NONE ||
	    param_slice(c, params, t, &slice, e) < 0)
		return -1;
	s = &tl->slices[slice];
	args = json_stringn(s->args_len ? tl->args + s->args : "", s->args_len);
	if (!args)
		args = json_string("");
	*body = json_pack("{s:b, s:{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:o}}",
		"emptyFlag", 0, "data",
		"id", "",
		"title", kv_tl_str(tl, s->name),
		"cat", kv_tl_str(tl, s->cat),
		"cname", kv_tl_str(tl, s->cname),
		"startTime", (json_int_t)s->start,
		"endTime", (json_int_t)s->end,
		"duration", (json_int_t)(s->end - s->start),
		"selfTime", (json_int_t)kv_tl_self_time(tl, slice),
		"depth", (json_int_t)s->depth,
		"brief", s->brief,
		"args", args);
	if (*body)
		json_object_set_new(json_object_get(*body, "data"), "id", id_text(slice));
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* unit/counters: the counter tracks, in display order. */
static int h_counters(const struct ks_view *v, json_t *params, json_t **body,
		      struct kv_reqerr *e)
{
	const struct kv_card *c;
	const struct kv_timeline *tl;
	json_t *list;

	if (kv_param_card(v, params, KV_TIMELINE, &c, e) < 0)
		return -1;
	tl = c->tl;
	list = json_array();
	*body = json_pack("{s:I, s:I, s:o}", "startTime", (json_int_t)0, "endTime",
			  (json_int_t)tl->counter_end, "counters", list);
	if (!*body)
		return kv_fail(e, "out of memory");
	for (uint32_t k = 0; k < tl->ncounters; k++) {
		const struct kv_tl_counter *ct = &tl->counters[tl->counter_order[k]];
		uint32_t p = kv_tl_process_find(tl, kv_tl_str(tl, ct->pid));
		uint32_t pname = p != KV_TL_NONE && tl->processes[p].name ?
				 tl->processes[p].name : ct->pid;
		json_t *series = json_array();

		for (uint32_t i = 0; i < ct->nseries; i++)
			json_array_append_new(series, json_string(kv_tl_str(tl, ct->series[i])));
		json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:s, s:o, s:f, s:I}",
			"pid", kv_tl_str(tl, ct->pid),
			"processName", kv_tl_str(tl, pname),
			"tid", kv_tl_str(tl, ct->tid),
			"name", kv_tl_str(tl, ct->name),
			"series", series,
			"max", ct->max,
			"samples", (json_int_t)ct->n));
	}
	return 0;
}

/* unit/counterValues: one counter's samples in a window. */
static int h_counter_values(const struct ks_view *v, json_t *params, json_t **body,
			    struct kv_reqerr *e)
{
	const struct kv_card *c;
	const struct kv_tl_counter *ct;
	char pid[256], tid[256], name[1024];
	int64_t ws, we;
	double tpp;
	uint32_t k;
	struct kv_tl_citem *it;
	size_t n;
	json_t *data, *series, *nj = json_object_get(params, "name");

	tid[0] = '\0';
	if (kv_param_card(v, params, KV_TIMELINE, &c, e) < 0 ||
	    param_track(params, "processId", pid, sizeof(pid), e) < 0 ||
	    (json_object_get(params, "threadId") &&
	     param_track(params, "threadId", tid, sizeof(tid), e) < 0) ||
	    param_window(params, &ws, &we, &tpp, e) < 0)
		return -1;
	if (!json_is_string(nj) || json_string_length(nj) >= sizeof(name))
		return kv_fail(e, "params.name is %s; a counter's name (a string of at most "
			       "%zu bytes, as unit/counters gives it) is expected",
			       !nj ? "missing" : json_is_string(nj) ? "too long" : "not a string",
			       sizeof(name) - 1);
	memcpy(name, json_string_value(nj), json_string_length(nj) + 1);
	k = kv_tl_counter_find(c->tl, pid, tid, name);
	if (k == KV_TL_NONE)
		return kv_fail(e, "card \"%.100s\" has no counter \"%.100s\" of process "
			       "\"%.100s\"%s%.100s; unit/counters lists its counters", c->id, name,
			       pid, tid[0] ? " and thread " : "", tid);
	ct = &c->tl->counters[k];
	if (kv_tl_counter_query(c->tl, k, ws, we, tpp, &it, &n) < 0)
		return kv_fail(e, "out of memory");
	series = json_array();
	for (uint32_t i = 0; i < ct->nseries; i++)
		json_array_append_new(series, json_string(kv_tl_str(c->tl, ct->series[i])));
	data = json_array();
	for (size_t i = 0; i < n; i++) {
		const double *first = ct->vals + it[i].first * ct->nseries;
		const double *last = first + (it[i].count - 1) * ct->nseries;
		json_t *vals = json_array(), *o;

		for (uint32_t s = 0; s < ct->nseries; s++) {
			double m = first[s];

			for (uint64_t j = 1; j < it[i].count; j++)
				if (first[j * ct->nseries + s] > m)
					m = first[j * ct->nseries + s];
			json_array_append_new(vals, json_real(m));
		}
		o = json_pack("{s:I, s:o, s:I}", "startTime", (json_int_t)ct->ts[it[i].first],
			      "values", vals, "count", (json_int_t)it[i].count);
		if (o && it[i].count > 1) {
			json_t *lv = json_array();

			for (uint32_t s = 0; s < ct->nseries; s++)
				json_array_append_new(lv, json_real(last[s]));
			json_object_set_new(o, "last", lv);
		}
		json_array_append_new(data, o);
	}
	free(it);
	*body = json_pack("{s:s, s:o, s:f, s:o}", "name", name, "series", series, "max",
			  ct->max, "data", data);
	return *body ? 0 : kv_fail(e, "out of memory");
}

const struct kv_command kv_timeline_commands[] = {
	{ "timeline", "unit/threads", h_threads },
	{ "timeline", "unit/threadTracesSummary", h_summary },
	{ "timeline", "unit/threadTraces", h_traces },
	{ "timeline", "unit/flows", h_flows },
	{ "timeline", "unit/threadDetail", h_detail },
	{ "timeline", "unit/counters", h_counters },
	{ "timeline", "unit/counterValues", h_counter_values },
	{ NULL, NULL, NULL },
};
