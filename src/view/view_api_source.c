/*
 * view_api_source.c: the "source" module of kscope view's API -- a source
 * file's text, its per-line hot-spot columns, the instruction table, and
 * the kernel details (basic info, compute workload, memory heat map and
 * memory tables), in the response shapes of the seed's viewer
 * (docs/view.md, "Source").
 *
 * kscope's blocks use the snake_case names of docs/formats.md
 * (`op_type`, `core_memory_map`, ...); the responses use the viewer's
 * camelCase names (`opType`, `coreMemory`, ...), and, as the viewer
 * expects, most values as strings.  A field missing from a block gives an
 * empty string or array: blocks written by other tools may lack any of
 * them.  Handlers only read the imported data.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kscope/vizbin.h"
#include "view.h"

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

/* A scalar as the viewer's string: numbers in their shortest exact
 * form, "" for null, a missing field or a container. */
static json_t *str_of(const json_t *j)
{
	char buf[64];

	if (json_is_string(j))
		return json_string(json_string_value(j));
	if (json_is_integer(j)) {
		snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		return json_string(buf);
	}
	if (json_is_real(j)) {
		double d = json_real_value(j);

		for (int prec = 6; prec <= 17; prec++) {
			snprintf(buf, sizeof buf, "%.*g", prec, d);
			if (strtod(buf, NULL) == d)
				break;
		}
		return json_string(buf);
	}
	if (json_is_boolean(j))
		return json_string(json_is_true(j) ? "true" : "false");
	return json_string("");
}

static json_t *str_field(const json_t *obj, const char *key)
{
	return str_of(json_object_get(obj, key));
}

/* An array of the viewer's strings from a JSON array (or []). */
static json_t *str_array(const json_t *arr)
{
	json_t *out = json_array(), *v;
	size_t i;

	json_array_foreach(arr, i, v)
		json_array_append_new(out, str_of(v));
	return out;
}

/* A copy of an advice array (strings or objects), [] when absent. */
static json_t *advice_of(const json_t *obj)
{
	json_t *a = json_object_get(obj, "advice");

	return json_is_array(a) ? json_deep_copy(a) : json_array();
}

/* What a block of type t holds, in the words the page uses: messages
 * reach the user, who knows the tabs, not the block numbers. */
static const char *block_words(unsigned t)
{
	switch (t) {
	case KS_VB_API_FILES:
		return "per-line source data";
	case KS_VB_API_INSTR:
		return "instruction table";
	case KS_VB_BASE_INFO:
		return "basic info";
	case KS_VB_MEMORY_GRAPH:
		return "memory heat map";
	case KS_VB_MEMORY_TABLE:
		return "memory tables";
	case KS_VB_CORE_LOAD:
		return "inter-core load";
	default:
		return ks_vb_type_title(t);
	}
}

/* The block of type t of card c; -1 with a message when it has none. */
static int need_block(const struct kv_card *c, unsigned t, const json_t **out,
		      struct kv_reqerr *e)
{
	if (!c->block[t])
		return kv_fail(e, "card \"%.100s\" has no %s", c->id, block_words(t));
	*out = c->block[t];
	return 0;
}

/* The optional blockId parameter, as the string the blocks' ids compare
 * with; NULL when absent.  An integer or a string of digits. */
static int param_block_id(json_t *params, char *buf, size_t size, const char **out,
			  struct kv_reqerr *e)
{
	int64_t id = -1;

	*out = NULL;
	if (kv_param_int(params, "blockId", false, 0, INT32_MAX, &id, e) < 0)
		return -1;
	if (id >= 0) {
		snprintf(buf, size, "%" PRId64, id);
		*out = buf;
	}
	return 0;
}

/* Whether a block's id field (number or string) is id. */
static bool id_is(const json_t *obj, const char *key, const char *id)
{
	json_t *s = str_field(obj, key);
	bool same = strcmp(json_string_value(s), id) == 0;

	json_decref(s);
	return same;
}

/* The ids an array of objects has under key, in order, once each. */
static void collect_ids(json_t *list, const json_t *arr, const char *key)
{
	json_t *v, *w;
	size_t i, k;

	json_array_foreach(arr, i, v) {
		json_t *s = str_field(v, key);
		bool seen = false;

		json_array_foreach(list, k, w)
			if (json_equal(w, s))
				seen = true;
		if (seen)
			json_decref(s);
		else
			json_array_append_new(list, s);
	}
}

static int unknown_block_id(struct kv_reqerr *e, const char *id, json_t *ids)
{
	char list[256] = "";
	size_t n = 0, i;
	json_t *v;

	json_array_foreach(ids, i, v) {
		int k = snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
				 json_string_value(v));
		if (k < 0 || (size_t)k >= sizeof list - n)
			break;
		n += (size_t)k;
	}
	return kv_fail(e, "params.blockId is %s; the blocks here are %s", id,
		       n ? list : "none");
}

/* unknown_block_id() with the ids the objects of arr have under key. */
static int unknown_block_in(struct kv_reqerr *e, const char *id, const json_t *arr,
			    const char *key)
{
	json_t *ids = json_array();
	int rc;

	collect_ids(ids, arr, key);
	rc = unknown_block_id(e, id, ids);
	json_decref(ids);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Source texts and the hot-spot map                                   */
/* ------------------------------------------------------------------ */

static int list_sources(const struct kv_card *c, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < c->nsources && i < 6; i++) {
		int k = snprintf(buf + n, size - n, "%s\"%.80s\"", i ? ", " : "",
				 c->sources[i].path);
		if (k < 0 || (size_t)k >= size - n)
			return 0;
		n += (size_t)k;
	}
	if (c->nsources > 6)
		snprintf(buf + n, size - n, " and %zu more", c->nsources - 6);
	return 0;
}

static int code_file(const struct ks_view *v, json_t *params, json_t **body,
		     struct kv_reqerr *e)
{
	const struct kv_card *c = NULL;
	const struct kv_source *s = NULL;
	const char *name = NULL;
	char list[400];

	if (kv_param_str(params, "sourceName", true, &name, e) < 0)
		return -1;
	if (json_object_get(params, "cardId") || json_object_get(params, "rankId")) {
		if (kv_param_card(v, params, 0, &c, e) < 0)
			return -1;
		s = kv_source_find(c, name);
	} else {
		for (size_t i = 0; i < v->ncards && !s; i++)
			if ((s = kv_source_find(&v->cards[i], name)))
				c = &v->cards[i];
	}
	for (size_t i = 0; !s && i < v->ncards; i++) {
		const char *why = kv_source_refused(c ? c : &v->cards[i], name);

		if (why)
			return kv_fail(e, "params.sourceName \"%.200s\" is not served: %s",
				       name, why);
		if (c)
			break;
	}
	if (!s) {
		if (!c)
			return kv_fail(e, "params.sourceName \"%.200s\" is not a source file of "
				       "the imported data; source/code/file serves only the "
				       "files import/action lists in sourceList", name);
		list_sources(c, list, sizeof list);
		return kv_fail(e, "params.sourceName \"%.200s\" is not a source file of card "
			       "\"%.100s\"; its sources are: %s", name, c->id,
			       list[0] ? list : "none");
	}
	*body = json_object();
	json_object_set_new(*body, "fileContent", json_stringn(s->text, s->len));
	return 0;
}

/* The index of coreName in the block's "Cores"; the first core when the
 * parameter is absent. */
static int param_core(json_t *params, const json_t *blk, size_t *idx,
		      struct kv_reqerr *e)
{
	const json_t *cores = json_object_get(blk, "Cores");
	const char *name = NULL;
	char list[256] = "";
	size_t n = 0, i;
	json_t *v;

	if (kv_param_str(params, "coreName", false, &name, e) < 0)
		return -1;
	if (!name) {
		*idx = 0;
		return 0;
	}
	json_array_foreach(cores, i, v) {
		if (json_is_string(v) && strcmp(json_string_value(v), name) == 0) {
			*idx = i;
			return 0;
		}
		int k = snprintf(list + n, sizeof list - n, "%s\"%s\"", i ? ", " : "",
				 json_string_value(v) ? json_string_value(v) : "");
		if (k > 0 && (size_t)k < sizeof list - n)
			n += (size_t)k;
	}
	return kv_fail(e, "params.coreName \"%.100s\" is not a core of this data; the "
		       "cores are: %s", name, n ? list : "none");
}

static int api_line(const struct ks_view *v, json_t *params, json_t **body,
		    struct kv_reqerr *e)
{
	const struct kv_card *c;
	const json_t *blk = NULL, *files, *f, *file = NULL;
	const char *name = NULL;
	size_t core = 0, ncores, i;
	json_t *lines, *line;

	if (kv_param_card(v, params, KV_SOURCE, &c, e) < 0 ||
	    need_block(c, KS_VB_API_FILES, &blk, e) < 0 ||
	    kv_param_str(params, "sourceName", true, &name, e) < 0 ||
	    param_core(params, blk, &core, e) < 0)
		return -1;
	ncores = json_array_size(json_object_get(blk, "Cores"));
	files = json_object_get(blk, "Files");
	json_array_foreach(files, i, f) {
		const char *s = json_string_value(json_object_get(f, "Source"));

		if (s && strcmp(s, name) == 0) {
			file = f;
			break;
		}
	}
	if (!file)
		return kv_fail(e, "params.sourceName \"%.200s\" is not a file of card "
			       "\"%.100s\"'s hot-spot map (its \"Files\" have %zu sources)",
			       name, c->id, json_array_size(files));
	lines = json_array();
	json_array_foreach(json_object_get(file, "Lines"), i, line) {
		json_t *out = json_object(), *val;
		const char *key;

		json_object_foreach(line, key, val) {
			/* a per-core column: an array of one scalar per core
			 * (an "Address Range" holds arrays and stays whole) */
			if (json_is_array(val) && json_array_size(val) == ncores &&
			    ncores > 0 && !json_is_array(json_array_get(val, 0)))
				json_object_set_new(out, key,
						    json_deep_copy(json_array_get(val, core)));
			else
				json_object_set_new(out, key, json_deep_copy(val));
		}
		json_array_append_new(lines, out);
	}
	{
		json_t *dt = json_object_get(json_object_get(blk, "Files Dtype"), "Lines");

		*body = json_pack("{s:o,s:o,s:o}", "lines", lines, "dtype",
				  json_is_object(dt) ? json_deep_copy(dt) : json_object(),
				  "cores", json_deep_copy(json_object_get(blk, "Cores")));
	}
	return *body ? 0 : kv_fail(e, "out of memory");
}

static int api_instructions(const struct ks_view *v, json_t *params, json_t **body,
			    struct kv_reqerr *e)
{
	const struct kv_card *c;
	const json_t *blk = NULL;
	char *text;

	if (kv_param_card(v, params, KV_SOURCE, &c, e) < 0 ||
	    need_block(c, KS_VB_API_INSTR, &blk, e) < 0)
		return -1;
	text = json_dumps(blk, JSON_COMPACT);
	if (!text)
		return kv_fail(e, "out of memory");
	*body = json_object();
	json_object_set_new(*body, "instructions", json_string(text));
	free(text);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Details                                                             */
/* ------------------------------------------------------------------ */

static int base_info(const struct ks_view *v, json_t *params, json_t **body,
		     struct kv_reqerr *e)
{
	static const char *const header[] = { "Block ID", "Core Type", "Duration (\xce\xbcs)" };
	const struct kv_card *c;
	const json_t *b = NULL;
	json_t *rows, *hdr, *size, *d;
	size_t i;

	if (kv_param_card(v, params, KV_DETAILS, &c, e) < 0 ||
	    need_block(c, KS_VB_BASE_INFO, &b, e) < 0)
		return -1;
	const char *op_type = json_string_value(json_object_get(b, "op_type"));
	const json_t *detail = json_object_get(b, op_type && strcmp(op_type, "mix") == 0
					       ? "mix_block_detail" : "block_detail");

	rows = json_array();
	json_array_foreach(detail, i, d) {
		json_t *val = json_array();

		json_array_append_new(val, str_field(d, "block_id"));
		json_array_append_new(val, str_field(d, "core_type"));
		json_array_append_new(val, str_field(d, "duration"));
		json_array_append_new(rows, json_pack("{s:o}", "value", val));
	}
	hdr = json_array();
	for (i = 0; i < 3; i++)
		json_array_append_new(hdr, json_string(header[i]));
	size = json_array();
	{
		char n[32];

		snprintf(n, sizeof n, "%zu", json_array_size(rows));
		json_array_append_new(size, json_string(n));
		json_array_append_new(size, json_string("3"));
	}
	*body = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o},s:o}",
			  "name", str_field(b, "name"), "soc", str_field(b, "soc"),
			  "opType", str_field(b, "op_type"), "blockDim", str_field(b, "block_dim"),
			  "mixBlockDim", str_field(b, "mix_block_dim"),
			  "duration", str_field(b, "duration"),
			  "blockDetail", "headerName", hdr, "size", size, "row", rows,
			  "advice", advice_of(b));
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* chartData or tableData from a 0x06 or 0x07 block. */
static json_t *workload(const json_t *blk, const char *block_id)
{
	json_t *list = json_array(), *d;
	size_t i;

	json_array_foreach(json_object_get(blk, "subblock_detail"), i, d) {
		if (block_id && !id_is(d, "block_id", block_id))
			continue;
		json_array_append_new(list, json_pack(
			"{s:o,s:o,s:o,s:o,s:o,s:o}", "blockId", str_field(d, "block_id"),
			"blockType", str_field(d, "block_type"), "name", str_field(d, "name"),
			"unit", str_field(d, "unit"), "value", str_field(d, "value"),
			"originValue", str_field(d, "origin_value")));
	}
	return json_pack("{s:o,s:o}", "detailDataList", list, "advice", advice_of(blk));
}

static int compute_workload(const struct ks_view *v, json_t *params, json_t **body,
			    struct kv_reqerr *e)
{
	const struct kv_card *c;
	const json_t *graph, *table;
	const char *id;
	char idbuf[32];
	json_t *ids;

	if (kv_param_card(v, params, KV_DETAILS, &c, e) < 0 ||
	    param_block_id(params, idbuf, sizeof idbuf, &id, e) < 0)
		return -1;
	graph = c->block[KS_VB_COMPUTE_GRAPH];
	table = c->block[KS_VB_COMPUTE_TABLE];
	if (!graph && !table)
		return kv_fail(e, "card \"%.100s\" has no compute workload", c->id);
	ids = json_array();
	collect_ids(ids, json_object_get(graph, "subblock_detail"), "block_id");
	collect_ids(ids, json_object_get(table, "subblock_detail"), "block_id");
	if (id) {
		bool found = false;
		size_t i;
		json_t *w;

		json_array_foreach(ids, i, w)
			if (strcmp(json_string_value(w), id) == 0)
				found = true;
		if (!found) {
			int rc = unknown_block_id(e, id, ids);

			json_decref(ids);
			return rc;
		}
	}
	*body = json_pack("{s:o,s:o,s:o}", "blockIdList", ids, "chartData",
			  workload(graph, id), "tableData", workload(table, id));
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* showAs: "request" (default) or "bandwidth".  Both values are always in
 * the response; the parameter is checked and echoed so the page can say
 * which it draws. */
static int param_show_as(json_t *params, const char **out, struct kv_reqerr *e)
{
	const char *s = "request";

	if (kv_param_str(params, "showAs", false, &s, e) < 0)
		return -1;
	if (strcmp(s, "request") != 0 && strcmp(s, "bandwidth") != 0)
		return kv_fail(e, "params.showAs is \"%.64s\"; \"request\" or \"bandwidth\" "
			       "is expected", s);
	*out = s;
	return 0;
}

static json_t *unit_load(const json_t *u)
{
	return json_pack("{s:o,s:o,s:o}", "ratio", str_field(u, "ratio"), "cycle",
			 str_field(u, "cycle"), "totalCycles", str_field(u, "total_cycles"));
}

static int memory_graph(const struct ks_view *v, json_t *params, json_t **body,
			struct kv_reqerr *e)
{
	const struct kv_card *c;
	const json_t *blk = NULL, *core;
	const char *id, *show;
	char idbuf[32];
	json_t *out;
	size_t i;

	if (kv_param_card(v, params, KV_DETAILS, &c, e) < 0 ||
	    need_block(c, KS_VB_MEMORY_GRAPH, &blk, e) < 0 ||
	    param_block_id(params, idbuf, sizeof idbuf, &id, e) < 0 ||
	    param_show_as(params, &show, e) < 0)
		return -1;
	out = json_array();
	json_array_foreach(json_object_get(blk, "core_memory_map"), i, core) {
		json_t *units, *u;
		const json_t *l2 = json_object_get(core, "L2cache");
		size_t k;

		if (id && !id_is(core, "core_no", id))
			continue;
		units = json_array();
		json_array_foreach(json_object_get(core, "memory_unit"), k, u) {
			json_t *req = json_object_get(u, "request");
			json_t *disp = json_object_get(u, "display");

			json_array_append_new(units, json_pack(
				"{s:o,s:o,s:o,s:o,s:b}", "memoryPath", str_field(u, "memory_path"),
				"request", json_is_number(req) ? json_deep_copy(req) : str_of(req),
				"bandwidth", str_field(u, "bandwidth"),
				"peakRatio", str_field(u, "peak_ratio"),
				"display", disp ? json_is_true(disp) : 1));
		}
		json_array_append_new(out, json_pack(
			"{s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o,s:o},s:o,s:o,s:o,s:o}",
			"blockId", str_field(core, "core_no"), "blockType", str_field(core, "op_type"),
			"chipType", str_field(core, "soc"), "memoryUnit", units,
			"l2Cache", "hit", str_field(l2, "hit"), "miss", str_field(l2, "miss"),
			"totalRequest", str_field(l2, "total_request"),
			"hitRatio", str_field(l2, "hit_ratio"),
			"vector", unit_load(json_object_get(core, "Vector")),
			"vector1", unit_load(json_object_get(core, "Vector1")),
			"cube", unit_load(json_object_get(core, "Cube")),
			"advice", advice_of(core)));
	}
	if (id && json_array_size(out) == 0) {
		json_decref(out);
		return unknown_block_in(e, id, json_object_get(blk, "core_memory_map"),
					"core_no");
	}
	*body = json_pack("{s:o,s:s}", "coreMemory", out, "showAs", show);
	return *body ? 0 : kv_fail(e, "out of memory");
}

static int memory_table(const struct ks_view *v, json_t *params, json_t **body,
			struct kv_reqerr *e)
{
	const struct kv_card *c;
	const json_t *blk = NULL, *b;
	const char *id, *show;
	char idbuf[32];
	json_t *out;
	size_t i;

	if (kv_param_card(v, params, KV_DETAILS, &c, e) < 0 ||
	    need_block(c, KS_VB_MEMORY_TABLE, &blk, e) < 0 ||
	    param_block_id(params, idbuf, sizeof idbuf, &id, e) < 0 ||
	    param_show_as(params, &show, e) < 0)
		return -1;
	out = json_array();
	json_array_foreach(json_object_get(blk, "table_per_block"), i, b) {
		json_t *tables, *t;
		size_t k;

		if (id && !id_is(b, "block_id", id))
			continue;
		tables = json_array();
		json_array_foreach(json_object_get(b, "table_detail"), k, t) {
			json_t *rows = json_array(), *r;
			size_t m;

			json_array_foreach(json_object_get(t, "row"), m, r)
				json_array_append_new(rows, json_pack(
					"{s:o,s:o}", "name", str_field(r, "name"),
					"value", str_array(json_object_get(r, "value"))));
			json_array_append_new(tables, json_pack(
				"{s:o,s:o,s:o,s:o}", "tableName", str_field(t, "table_name"),
				"size", str_array(json_object_get(t, "size")),
				"headerName", str_array(json_object_get(t, "header_name")),
				"row", rows));
		}
		json_array_append_new(out, json_pack(
			"{s:o,s:o,s:o,s:o}", "blockId", str_field(b, "block_id"),
			"tableOpType", str_field(b, "table_op_type"), "tableDetail", tables,
			"advice", advice_of(b)));
	}
	if (id && json_array_size(out) == 0) {
		json_decref(out);
		return unknown_block_in(e, id, json_object_get(blk, "table_per_block"),
					"block_id");
	}
	*body = json_pack("{s:o,s:s}", "memoryTable", out, "showAs", show);
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* ------------------------------------------------------------------ */
/* Cache sets and lines (0x0B, 0x0E)                                   */
/* ------------------------------------------------------------------ */

/* source/details/coreLoad: the 0x0C block, a row per core and subcore
 * (its figures as the block writes them, text or numbers), the advice. */
static int core_load(const struct ks_view *v, json_t *params, json_t **body,
		     struct kv_reqerr *e)
{
	const struct kv_card *c;
	const json_t *blk = NULL, *core, *sub;
	const json_t *adv;
	json_t *rows;
	size_t i, k;

	if (kv_param_card(v, params, KV_DETAILS, &c, e) < 0 ||
	    need_block(c, KS_VB_CORE_LOAD, &blk, e) < 0)
		return -1;
	rows = json_array();
	json_array_foreach(json_object_get(blk, "op_detail"), i, core)
		json_array_foreach(json_object_get(core, "core_detail"), k, sub)
			json_array_append_new(rows, json_pack(
				"{s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
				"coreId", str_field(core, "core_id"),
				"subcoreId", str_field(sub, "subcore_id"),
				"subcoreType", str_field(sub, "subcore_type"),
				"thread", str_field(sub, "thread"),
				"cycles", str_field(sub, "cycles"),
				"throughput", str_field(sub, "throughput"),
				"l2HitRate", str_field(sub, "L2cache_hit_rate")));
	/* The design's example has the advice as one text, empty for none. */
	adv = json_object_get(blk, "advice");
	*body = json_pack("{s:o,s:o,s:o,s:o}", "rows", rows,
			  "advice", json_is_array(adv) ? advice_of(blk) :
			  json_string_length(adv) ? json_pack("[O]", adv) : json_array(),
			  "opType", str_field(blk, "op_type"), "soc", str_field(blk, "soc"));
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* source/details/cacheSets: the 0x0B records, one per set, with the miss
 * ratio the page colours by (null without accesses) and the totals.
 * With a 0x0E block, "level" names the level (the second, or the only
 * one, as kscope op --simulate writes them). */
static int cache_sets(const struct ks_view *v, json_t *params, json_t **body,
		      struct kv_reqerr *e)
{
	static const char *const names[8] = { "load", "store", "set", "hit", "miss",
					      "allocate", "evictAndWrite",
					      "evictWithoutWrite" };
	const struct kv_card *c;
	const json_t *recs = NULL, *r, *lv;
	json_int_t tot[8] = { 0 };
	json_t *sets, *totals;
	size_t i;

	if (kv_param_card(v, params, KV_DETAILS, &c, e) < 0 ||
	    need_block(c, KS_VB_CACHE_RECORDS, &recs, e) < 0)
		return -1;
	sets = json_array();
	json_array_foreach(recs, i, r) {
		json_t *o = json_object();
		json_int_t acc = json_integer_value(json_array_get(r, 0)) +
				 json_integer_value(json_array_get(r, 1));

		for (unsigned f = 0; f < 8; f++) {
			json_int_t n = json_integer_value(json_array_get(r, f));

			json_object_set_new(o, names[f], json_integer(n));
			if (f != 2)
				tot[f] += n;
		}
		json_object_set_new(o, "missRatio", acc ? json_real(
			(double)json_integer_value(json_array_get(r, 4)) / (double)acc) :
			json_null());
		json_array_append_new(sets, o);
	}
	totals = json_object();
	for (unsigned f = 0; f < 8; f++)
		if (f != 2)
			json_object_set_new(totals, names[f], json_integer(tot[f]));
	lv = json_object_get(c->block[KS_VB_CACHELINE_HEAT], "levels");
	lv = json_array_get(lv, json_array_size(lv) >= 2 ? 1 : 0);
	*body = json_pack("{s:o,s:o,s:s}", "sets", sets, "totals", totals, "level",
			  json_is_string(lv) ? json_string_value(lv) : "");
	return *body ? 0 : kv_fail(e, "out of memory");
}

/* The counts of a 0x0E line or "other", in the page's names. */
static void heat_counts(json_t *out, const json_t *in)
{
	json_object_set_new(out, "misses", json_is_array(json_object_get(in, "misses")) ?
			    json_deep_copy(json_object_get(in, "misses")) : json_array());
	json_object_set_new(out, "loadMisses",
			    json_integer(json_integer_value(json_object_get(in, "load_misses"))));
	json_object_set_new(out, "storeMisses",
			    json_integer(json_integer_value(json_object_get(in, "store_misses"))));
	json_object_set_new(out, "writebacks",
			    json_integer(json_integer_value(json_object_get(in, "writebacks"))));
}

/* source/details/cacheLines: the 0x0E lines, hottest first, each with
 * the instruction that missed most on it; "other" sums the rest. */
static int cache_lines(const struct ks_view *v, json_t *params, json_t **body,
		       struct kv_reqerr *e)
{
	const struct kv_card *c;
	const json_t *heat = NULL, *l, *o;
	json_t *lines, *other;
	size_t i;

	if (kv_param_card(v, params, KV_DETAILS, &c, e) < 0 ||
	    need_block(c, KS_VB_CACHELINE_HEAT, &heat, e) < 0)
		return -1;
	lines = json_array();
	json_array_foreach(json_object_get(heat, "cache_lines"), i, l) {
		const json_t *t = json_object_get(l, "top_instruction");
		json_t *x = json_object(), *top = json_null();

		json_object_set_new(x, "address", str_field(l, "address"));
		heat_counts(x, l);
		if (json_is_object(t))
			top = json_pack("{s:o,s:I,s:o,s:o,s:I,s:o}", "address",
					str_field(t, "address"), "misses",
					(json_int_t)json_integer_value(json_object_get(t, "misses")),
					"function", str_field(t, "function"), "file",
					str_field(t, "file"), "line",
					(json_int_t)json_integer_value(json_object_get(t, "line")),
					"source", str_field(t, "source"));
		json_object_set_new(x, "topInstruction", top);
		json_array_append_new(lines, x);
	}
	o = json_object_get(heat, "other");
	other = json_object();
	heat_counts(other, o);
	json_object_set_new(other, "lines",
			    json_integer(json_integer_value(json_object_get(o, "lines"))));
	*body = json_pack("{s:o,s:o,s:I,s:o}", "levels",
			  str_array(json_object_get(heat, "levels")), "lines", lines,
			  "lineSize",
			  (json_int_t)json_integer_value(json_object_get(heat, "line_size")),
			  "other", other);
	return *body ? 0 : kv_fail(e, "out of memory");
}

const struct kv_command kv_source_commands[] = {
	{ "source", "source/code/file", code_file },
	{ "source", "source/api/line", api_line },
	{ "source", "source/api/instructions", api_instructions },
	{ "source", "source/details/baseInfo", base_info },
	{ "source", "source/details/computeworkload", compute_workload },
	{ "source", "source/details/memoryGraph", memory_graph },
	{ "source", "source/details/memoryTable", memory_table },
	{ "source", "source/details/coreLoad", core_load },
	{ "source", "source/details/cacheSets", cache_sets },
	{ "source", "source/details/cacheLines", cache_lines },
	{ NULL, NULL, NULL },
};
