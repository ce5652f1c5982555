/*
 * view_api_more.c: the commands of kscope view's API that are not the
 * timeline's or the source view's -- import/action (the cards), the
 * roofline charts, the sampled profile's reports, the memory findings,
 * the prediction and the causal profile's curves (docs/view.md).
 *
 * The profile reports are the ones `kscope report --format json` prints:
 * ks_report_flat/tree/threads/counters write their JSON into a memory
 * stream, which is parsed back, so the page and the command line never
 * disagree.
 * Handlers only read the imported data; what they return is a copy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kscope/vizbin.h"
#include "profile.h"
#include "store.h"
#include "view.h"

/* ------------------------------------------------------------------ */
/* import/action                                                       */
/* ------------------------------------------------------------------ */

static const char *const kind_names[] = {
	"timeline", "source", "details", "roofline", "profile", "findings", "predict",
	"causal",
};

static int import_action(const struct ks_view *v, json_t *params, json_t **body,
			 struct kv_reqerr *e)
{
	json_t *paths = json_object_get(params, "path"), *p, *cards, *sources, *cores = NULL;
	bool simulation = false, binary = false;
	size_t i;

	if (paths) {
		if (!json_is_array(paths))
			return kv_fail(e, "params.path must be an array of strings, each the "
				       "PATH kscope view was started with (\"%.200s\")", v->path);
		json_array_foreach(paths, i, p)
			if (!json_is_string(p) || strcmp(json_string_value(p), v->path) != 0)
				return kv_fail(e, "params.path[%zu] is not the PATH kscope view was "
					       "started with (\"%.200s\"); kscope view serves only "
					       "that", i, v->path);
	}
	cards = json_array();
	sources = json_array();
	for (i = 0; i < v->ncards; i++) {
		const struct kv_card *c = &v->cards[i];
		json_t *kinds = json_array(), *own = json_array();

		for (unsigned k = 0; k < sizeof kind_names / sizeof kind_names[0]; k++)
			if (c->kinds & (1u << k))
				json_array_append_new(kinds, json_string(kind_names[k]));
		for (size_t s = 0; s < c->nsources; s++)
			json_array_append_new(own, json_string(kv_source_name(&c->sources[s])));
		json_array_append_new(cards, json_pack(
			"{s:s,s:s,s:s,s:s,s:b,s:s,s:o,s:o}", "cardName", c->title, "rankId",
			c->id, "cardId", c->id, "cardPath", c->path, "result", 1, "command",
			c->command, "kinds", kinds, "sourceList", own));
		if (strcmp(c->command, "simulate") == 0)
			simulation = true;
		if (c->from_container)
			binary = true;
		for (size_t s = 0; s < c->nsources; s++) {
			const char *name = kv_source_name(&c->sources[s]);
			bool seen = false;
			size_t k;

			json_array_foreach(sources, k, p)
				if (strcmp(json_string_value(p), name) == 0)
					seen = true;
			if (!seen)
				json_array_append_new(sources, json_string(name));
		}
		if (!cores) {
			const json_t *blk = c->block[KS_VB_API_FILES] ? c->block[KS_VB_API_FILES]
				: c->block[KS_VB_API_INSTR];
			json_t *cl = json_object_get(blk, "Cores");

			if (json_is_array(cl))
				cores = json_deep_copy(cl);
		}
	}
	*body = json_pack("{s:b,s:b,s:b,s:b,s:b,s:o,s:o,s:o}", "isCluster", 0, "reset", 1,
			  "isSimulation", simulation, "isBinary", binary, "isIpynb", 0,
			  "coreList", cores ? cores : json_array(), "sourceList", sources,
			  "result", cards);
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* ------------------------------------------------------------------ */
/* Roofline                                                            */
/* ------------------------------------------------------------------ */

static int roofline_charts(const struct ks_view *v, json_t *params, json_t **body,
			   struct kv_reqerr *e)
{
	json_t *cards = json_array();

	(void)params;
	for (size_t i = 0; i < v->ncards; i++) {
		const struct kv_card *c = &v->cards[i];
		json_t *charts = json_object_get(c->block[KS_VB_ROOFLINE], "multiple_rooflines");

		if (!(c->kinds & KV_ROOFLINE))
			continue;
		json_array_append_new(cards, json_pack(
			"{s:s,s:s,s:o}", "cardId", c->id, "title", c->title, "charts",
			json_is_array(charts) ? json_deep_copy(charts) : json_array()));
	}
	if (json_array_size(cards) == 0) {
		json_decref(cards);
		return kv_fail(e, "the imported data has no roofline (kscope op "
			       "draws one with --flops and a calibration)");
	}
	*body = json_pack("{s:o}", "cards", cards);
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* ------------------------------------------------------------------ */
/* Profile                                                             */
/* ------------------------------------------------------------------ */

typedef int (*report_fn)(FILE *, const struct ks_profile *, const struct ks_report_opts *,
			 struct ks_err *);

/* The levels of the call tree the Profile page gets: deeper call paths
 * are cut there (the report's max_depth; the page says so).  jansson
 * parses at most 2048 nested values, and a level of the tree is two (a
 * node and its children), so a 5,000-deep path would not load at all. */
#define KV_TREE_DEPTH 400

/* Runs a report with JSON output into memory and parses it. */
static int run_report(report_fn fn, const struct ks_profile *p,
		      const struct ks_report_opts *o, json_t **body, struct kv_reqerr *e)
{
	char *text = NULL;
	size_t len = 0;
	struct ks_err err = { 0 };
	json_error_t je;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return kv_fail(e, "out of memory");
	rc = fn(f, p, o, &err);
	if (fclose(f) != 0 && rc == 0)
		rc = -1;
	if (rc < 0) {
		free(text);
		return kv_fail(e, "the report failed: %s", err.msg[0] ? err.msg : "out of memory");
	}
	*body = json_loadb(text, len, 0, &je);
	free(text);
	if (!*body)
		return kv_fail(e, "the report is not JSON: %s", je.text);
	return 0;
}

/* params.clock: "all" (the default), "cpu" or "real", as kscope report
 * --clock takes it; a timer the card's profile has no samples of is
 * refused with what it has. */
static int param_clock(const struct kv_card *c, json_t *params, enum ks_report_clock *out,
		       struct kv_reqerr *e)
{
	const char *s = ks_report_clock_names[KS_REPORT_CLOCK_ALL];
	struct ks_err err = { 0 };
	size_t i;

	if (kv_param_str(params, "clock", false, &s, e) < 0)
		return -1;
	for (i = 0; ks_report_clock_names[i] && strcmp(s, ks_report_clock_names[i]) != 0; i++)
		;
	if (!ks_report_clock_names[i])
		return kv_fail(e, "params.clock is \"%.64s\"; \"all\", \"cpu\" or \"real\" "
			       "is expected", s);
	*out = (enum ks_report_clock)i;
	if (ks_report_check_clock(c->profile, *out, &err) != 0)
		return kv_fail(e, "params.clock is \"%s\", but %s", s, err.msg);
	return 0;
}

static int profile_opts(const struct ks_view *v, json_t *params, bool tree,
			const struct kv_card **c, struct ks_report_opts *o,
			struct kv_reqerr *e)
{
	int64_t thread = -1;

	memset(o, 0, sizeof *o);
	o->json = true;
	o->thread = KS_NONE;
	o->min_pct = 0.1;
	if (kv_param_card(v, params, KV_PROFILE, c, e) < 0)
		return -1;
	if (param_clock(*c, params, &o->clock, e) < 0)
		return -1;
	if ((*c)->profile->n_threads == 0 && json_object_get(params, "thread"))
		return kv_fail(e, "params.thread: card \"%.100s\" has no threads", (*c)->id);
	if (kv_param_int(params, "thread", false, 0,
			 (int64_t)(*c)->profile->n_threads - 1, &thread, e) < 0)
		return -1;
	if (thread >= 0)
		o->thread = (uint32_t)thread;
	if (tree && kv_param_num(params, "minPct", false, 0, 100, &o->min_pct, e) < 0)
		return -1;
	return 0;
}

static int profile_flat(const struct ks_view *v, json_t *params, json_t **body,
			struct kv_reqerr *e)
{
	const struct kv_card *c;
	struct ks_report_opts o;

	if (profile_opts(v, params, false, &c, &o, e) < 0)
		return -1;
	return run_report(ks_report_flat, c->profile, &o, body, e);
}

static int profile_tree(const struct ks_view *v, json_t *params, json_t **body,
			struct kv_reqerr *e)
{
	const struct kv_card *c;
	struct ks_report_opts o;

	if (profile_opts(v, params, true, &c, &o, e) < 0)
		return -1;
	o.max_depth = KV_TREE_DEPTH;
	return run_report(ks_report_tree, c->profile, &o, body, e);
}

static int profile_threads(const struct ks_view *v, json_t *params, json_t **body,
			   struct kv_reqerr *e)
{
	const struct kv_card *c;
	struct ks_report_opts o = { .json = true, .thread = KS_NONE };

	if (kv_param_card(v, params, KV_PROFILE, &c, e) < 0)
		return -1;
	if (param_clock(c, params, &o.clock, e) < 0)
		return -1;
	return run_report(ks_report_threads, c->profile, &o, body, e);
}

static int profile_counters(const struct ks_view *v, json_t *params, json_t **body,
			    struct kv_reqerr *e)
{
	const struct kv_card *c;
	struct ks_report_opts o;

	if (profile_opts(v, params, false, &c, &o, e) < 0)
		return -1;
	if (c->profile->n_counter_names == 0)
		return kv_fail(e, "card \"%.100s\" has no per-sample counters: kscope sample "
			       "--counters LIST records them", c->id);
	return run_report(ks_report_counters, c->profile, &o, body, e);
}

/* ------------------------------------------------------------------ */
/* Findings, predictions and causal profiles                           */
/* ------------------------------------------------------------------ */

static int findings_list(const struct ks_view *v, json_t *params, json_t **body,
			 struct kv_reqerr *e)
{
	const struct kv_card *c;

	if (kv_param_card(v, params, KV_FINDINGS, &c, e) < 0)
		return -1;
	*body = json_deep_copy(c->findings);
	return *body ? 0 : kv_fail(e, "out of memory");
}

static int predict_summary(const struct ks_view *v, json_t *params, json_t **body,
			   struct kv_reqerr *e)
{
	const struct kv_card *c;

	if (kv_param_card(v, params, KV_PREDICT, &c, e) < 0)
		return -1;
	*body = json_deep_copy(c->predict);
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* The curves of causal.csv as read at import, with what was wrong with
 * the file (view_import_read.c). */
static int causal_curves(const struct ks_view *v, json_t *params, json_t **body,
			 struct kv_reqerr *e)
{
	const struct kv_card *c;

	if (kv_param_card(v, params, KV_CAUSAL, &c, e) < 0)
		return -1;
	*body = json_deep_copy(c->causal);
	return *body ? 0 : kv_fail(e, "out of memory");
}

const struct kv_command kv_more_commands[] = {
	{ "timeline", "import/action", import_action },
	{ "roofline", "roofline/charts", roofline_charts },
	{ "profile", "profile/flat", profile_flat },
	{ "profile", "profile/tree", profile_tree },
	{ "profile", "profile/threads", profile_threads },
	{ "profile", "profile/counters", profile_counters },
	{ "findings", "findings/list", findings_list },
	{ "predict", "predict/summary", predict_summary },
	{ "causal", "causal/curves", causal_curves },
	{ NULL, NULL, NULL },
};
