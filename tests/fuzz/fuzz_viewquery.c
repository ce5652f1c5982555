/*
 * fuzz_viewquery.c: what the timeline fuzz targets (fuzz_viewtrace.c,
 * fuzz_viewperfetto.c) ask of a timeline that loaded, the way the page
 * asks it (fuzz_viewquery.h).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_viewquery.h"

/* Sends one request; returns its body when result is true, else NULL. */
static json_t *ask(const struct ks_view *v, const char *command, json_t *params)
{
	json_t *req = json_pack("{s:i,s:s,s:s,s:s,s:o}", "id", 1, "moduleName", "timeline",
				"type", "request", "command", command, "params", params);
	char *text = json_dumps(req, JSON_COMPACT), *resp;
	json_t *r, *body = NULL;
	size_t len;

	json_decref(req);
	if (!text)
		abort();
	resp = ks_view_request(v, text, strlen(text), &len);
	free(text);
	r = resp ? json_loadb(resp, len, 0, NULL) : NULL;
	if (!r || !json_is_object(r))
		abort(); /* every answer is one JSON object */
	if (json_is_true(json_object_get(r, "result")))
		body = json_incref(json_object_get(r, "body"));
	else if (!json_string_value(json_object_get(json_object_get(r, "body"), "message")))
		abort(); /* a refusal says why */
	json_decref(r);
	free(resp);
	return body;
}

void kv_fuzz_query(const struct ks_view *v)
{
	json_t *threads = ask(v, "unit/threads", json_pack("{s:s}", "cardId", "fuzz"));
	json_t *procs = json_object_get(threads, "processes"), *p, *t;
	json_int_t end = json_integer_value(json_object_get(threads, "endTime"));
	size_t i, k;

	if (!threads)
		return;
	if (end < 1)
		end = 1;
	json_array_foreach(procs, i, p) {
		const char *pid = json_string_value(json_object_get(p, "pid"));

		json_decref(ask(v, "unit/threadTracesSummary",
				json_pack("{s:s,s:s,s:I,s:I,s:f}", "cardId", "fuzz", "processId",
					  pid, "startTime", (json_int_t)0, "endTime", end,
					  "timePerPx", (double)end / 1000.0 + 1e-3)));
		json_array_foreach(json_object_get(p, "threads"), k, t) {
			const char *tid = json_string_value(json_object_get(t, "tid"));

			for (int fine = 0; fine < 2; fine++)
				json_decref(ask(v, "unit/threadTraces",
						json_pack("{s:s,s:s,s:s,s:I,s:I,s:f}", "cardId",
							  "fuzz", "processId", pid, "threadId", tid,
							  "startTime", (json_int_t)0, "endTime", end,
							  "timePerPx", fine ? 1.0 : (double)end / 100.0 + 1e-3)));
			for (int id = 0; id < 4; id++) {
				char sid[16];

				snprintf(sid, sizeof sid, "%d", id);
				json_decref(ask(v, "unit/threadDetail",
						json_pack("{s:s,s:s,s:s,s:s}", "cardId", "fuzz", "pid",
							  pid, "tid", tid, "id", sid)));
				json_decref(ask(v, "unit/flows",
						json_pack("{s:s,s:s,s:s,s:s}", "cardId", "fuzz", "pid",
							  pid, "tid", tid, "id", sid)));
			}
		}
	}
	json_decref(threads);
	/* the counters, coarse and at 1 ns per pixel */
	threads = ask(v, "unit/counters", json_pack("{s:s}", "cardId", "fuzz"));
	end = json_integer_value(json_object_get(threads, "endTime"));
	if (end < 1)
		end = 1;
	json_array_foreach(json_object_get(threads, "counters"), i, p)
		for (int fine = 0; fine < 2; fine++)
			json_decref(ask(v, "unit/counterValues",
					json_pack("{s:s,s:O,s:O,s:O,s:I,s:I,s:f}", "cardId", "fuzz",
						  "processId", json_object_get(p, "pid"),
						  "threadId", json_object_get(p, "tid"),
						  "name", json_object_get(p, "name"),
						  "startTime", (json_int_t)0, "endTime", end,
						  "timePerPx", fine ? (double)end / 90000.0 + 1.0
						  : (double)end / 100.0 + 1e-3)));
	json_decref(threads);
}
