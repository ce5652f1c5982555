/*
 * libFuzzer target for kscope view's reader of the Perfetto traces kscope
 * writes (kv_perfetto_load, src/view/view_perfetto.c): the input is a
 * trace file.  When it loads, its timeline is put in a one-card view and
 * queried through ks_view_request as fuzz_viewtrace.c does, and its
 * profile (the samples and their call stacks) is reported as kscope view's
 * profile commands report it.  Nothing may crash, read out of bounds or
 * leak; a trace that does not load must say why.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "profile.h"
#include "store.h"
#include "view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

static void query(const struct ks_view *v)
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
}

/* The reports kscope view's profile commands give, to /dev/null. */
static void report(const struct ks_profile *p)
{
	struct ks_report_opts o = { .json = true, .thread = KS_NONE, .min_pct = 0 };
	FILE *null = fopen("/dev/null", "w");
	struct ks_err err;

	if (!null)
		abort();
	if (ks_report_flat(null, p, &o, &err) < 0 || ks_report_tree(null, p, &o, &err) < 0 ||
	    ks_report_threads(null, p, &o, &err) < 0)
		abort(); /* the reader built a profile the reports refuse */
	fclose(null);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_timeline *tl = kv_tl_new();
	struct ks_profile p;
	struct ks_err err;
	char id[] = "fuzz", title[] = "fuzz", path[] = "fuzz.perfetto-trace", command[] = "";
	struct kv_card card = { .id = id, .title = title, .path = path, .command = command,
				.kinds = KV_TIMELINE };
	struct ks_view v = { .path = path, .cards = &card, .ncards = 1 };

	if (!tl || ks_profile_init(&p, &err) < 0)
		abort();
	ks_err_clear(&err);
	if (kv_perfetto_load(tl, &p, data, size, path, &err) < 0 ||
	    kv_tl_finish(tl, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a trace that does not load says why */
		kv_tl_free(tl);
		ks_profile_free(&p);
		return 0;
	}
	card.tl = tl;
	query(&v);
	report(&p);
	kv_tl_free(tl);
	ks_profile_free(&p);
	return 0;
}
