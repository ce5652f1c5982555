/*
 * The strict check of `kscope inspect --strict`: does a block's JSON
 * payload carry every field the MindStudio Insight design lists for its
 * type, with the design's JSON types?  ks_vb_check_payload() checks only
 * what kscope's own readers need; a stricter reader of the design's
 * format is what this stands in for.
 *
 * Each type's field list is a template written as JSON: an object's keys
 * are required (a key starting with '?' is optional), an array of one
 * element says every element must match it, and a string leaf names the
 * JSON types accepted:
 *
 *   "n" number   "s" string   "b" boolean   "a" anything
 *   "sn" string or number (the design's examples write numbers as text)
 *   "n?" number or null (kscope writes null where it does not know a
 *        value the design types as a number; docs/formats.md says where)
 *
 * Rules a template cannot say (the 0x09 tables' sizes, the Dtype columns
 * of 0x03 and 0x04, the Trace Event Format's complete events) are coded
 * below it.  Binary blocks (0x01, 0x0A, 0x0B) are checked by size in
 * vizbin_check.c; 0x0E and 0x0F are kscope's own types, whose fields
 * vizbin_check.c checks.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <kscope/vizbin.h>

/* The design's field lists (seed 003, "数据块内容"). */
static const char *template_of(unsigned type)
{
	switch (type) {
	case KS_VB_TRACE:
		return "{\"profilingType\":\"s\",\"schemaVersion\":\"n\","
		       "\"traceEvents\":[{\"ph\":\"s\"}]}";
	case KS_VB_API_FILES:
		return "{\"Cores\":[\"s\"],\"Files Dtype\":{\"Lines\":{}},"
		       "\"Files\":[{\"Source\":\"s\",\"Lines\":[{\"Line\":\"n\"}]}]}";
	case KS_VB_API_INSTR:
		return "{\"Cores\":[\"s\"],\"Instructions Dtype\":{\"Instructions\":{}},"
		       "\"Instructions\":[{\"Address\":\"s\",\"Source\":\"s\"}]}";
	case KS_VB_BASE_INFO:
		return "{\"name\":\"s\",\"soc\":\"s\",\"op_type\":\"s\","
		       "\"block_dim\":\"n?\",\"mix_block_dim\":\"n\",\"duration\":\"n?\","
		       "\"device_id\":\"n\",\"pid\":\"s\","
		       "\"block_detail\":[{\"block_id\":\"n\",\"core_type\":\"s\","
		       "\"duration\":\"n\"}],"
		       "\"mix_block_detail\":[{\"block_id\":\"n\",\"duration\":[\"n\"]}],"
		       "\"advice\":[\"s\"]}";
	case KS_VB_COMPUTE_GRAPH:
	case KS_VB_COMPUTE_TABLE:
		return "{\"subblock_detail\":[{\"block_id\":\"n\",\"block_type\":\"s\","
		       "\"name\":\"s\",\"unit\":\"s\",\"value\":\"n\","
		       "\"origin_value\":\"n\"}],\"advice\":[\"s\"]}";
	case KS_VB_MEMORY_GRAPH:
		return "{\"core_memory_map\":[{\"core_no\":\"n\",\"op_type\":\"s\","
		       "\"soc\":\"s\",\"memory_unit\":[{\"memory_path\":\"s\","
		       "\"request\":\"n\",\"request_per_byte\":\"n\",\"bandwidth\":\"n\","
		       "\"peak_ratio\":\"n\",\"display\":\"b\"}],"
		       "\"?L2cache\":{\"hit\":\"n\",\"miss\":\"n\",\"total_request\":\"n\","
		       "\"hit_ratio\":\"n\"},"
		       "\"?Cube\":{\"ratio\":\"n\",\"cycle\":\"n\",\"total_cycles\":\"n\"},"
		       "\"?Vector\":{\"ratio\":\"n\",\"cycle\":\"n\",\"total_cycles\":\"n\"},"
		       "\"?Vector1\":{\"ratio\":\"n\",\"cycle\":\"n\",\"total_cycles\":\"n\"},"
		       "\"advice\":[\"s\"]}]}";
	case KS_VB_MEMORY_TABLE:
		return "{\"table_per_block\":[{\"block_id\":\"n\",\"table_op_type\":\"s\","
		       "\"table_detail\":[{\"table_name\":\"s\",\"size\":[\"n\"],"
		       "\"header_name\":[\"s\"],\"row\":[{\"name\":\"s\",\"value\":[\"a\"]}]}],"
		       "\"advice\":[\"s\"]}],\"advice\":[\"s\"]}";
	case KS_VB_CORE_LOAD:
		return "{\"op_detail\":[{\"core_id\":\"n\",\"core_detail\":[{"
		       "\"L2cache_hit_rate\":\"sn\",\"cycles\":\"sn\",\"subcore_id\":\"sn\","
		       "\"subcore_type\":\"s\",\"throughput\":\"sn\"}]}],"
		       "\"op_type\":\"s\",\"soc\":\"s\",\"advice\":\"a\"}";
	case KS_VB_ROOFLINE:
		return "{\"multiple_rooflines\":[{\"title\":\"s\",\"rooflines\":[{"
		       "\"bw\":\"n\",\"computility\":\"n\",\"computility_name\":\"s\","
		       "\"point\":[\"n\"]}]}]}";
	}
	return NULL;
}

struct seed_ctx {
	const struct ks_vb_block *b;
	struct ks_vb_error *err;
	char path[256];
};

__attribute__((format(printf, 2, 3)))
static int fail(struct seed_ctx *c, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (c->err) {
		c->err->code = -EINVAL;
		c->err->block = c->b->index;
		c->err->offset = c->b->offset;
		snprintf(c->err->msg, sizeof(c->err->msg),
			 "block %u (%s) at offset %llu: %.200s%s%.200s", c->b->index,
			 ks_vb_type_name(c->b->type),
			 (unsigned long long)c->b->offset,
			 c->path[0] ? c->path : "", c->path[0] ? ": " : "", what);
	}
	return -EINVAL;
}

/* Appends ".key" or "[i]" to the path; returns the old length. */
static size_t path_push(struct seed_ctx *c, const char *key, size_t index)
{
	size_t n = strlen(c->path);

	if (key)
		snprintf(c->path + n, sizeof(c->path) - n, "%s%s", n ? "." : "", key);
	else
		snprintf(c->path + n, sizeof(c->path) - n, "[%zu]", index);
	return n;
}

static const char *type_word(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER:
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

static bool leaf_ok(const char *want, json_t *v)
{
	if (strcmp(want, "a") == 0)
		return true;
	if (strcmp(want, "n") == 0)
		return json_is_number(v);
	if (strcmp(want, "n?") == 0)
		return json_is_number(v) || json_is_null(v);
	if (strcmp(want, "s") == 0)
		return json_is_string(v);
	if (strcmp(want, "sn") == 0)
		return json_is_string(v) || json_is_number(v);
	if (strcmp(want, "b") == 0)
		return json_is_boolean(v);
	return false;
}

static const char *leaf_words(const char *want)
{
	if (strcmp(want, "n") == 0)
		return "a number";
	if (strcmp(want, "n?") == 0)
		return "a number or null";
	if (strcmp(want, "s") == 0)
		return "a string";
	if (strcmp(want, "sn") == 0)
		return "a string or a number";
	if (strcmp(want, "b") == 0)
		return "a boolean";
	return "anything";
}

static int match(struct seed_ctx *c, json_t *tpl, json_t *v)
{
	if (json_is_string(tpl)) {
		if (!leaf_ok(json_string_value(tpl), v))
			return fail(c, "%s, the design wants %s", type_word(v),
				    leaf_words(json_string_value(tpl)));
		return 0;
	}
	if (json_is_array(tpl)) {
		json_t *el = json_array_get(tpl, 0), *e;
		size_t i;

		if (!json_is_array(v))
			return fail(c, "%s, the design wants an array", type_word(v));
		json_array_foreach(v, i, e) {
			size_t n = path_push(c, NULL, i);
			int rc = match(c, el, e);

			if (rc)
				return rc;
			c->path[n] = '\0';
		}
		return 0;
	}
	if (json_is_object(tpl)) {
		const char *key;
		json_t *sub;

		if (!json_is_object(v))
			return fail(c, "%s, the design wants an object", type_word(v));
		json_object_foreach(tpl, key, sub) {
			bool optional = key[0] == '?';
			const char *name = optional ? key + 1 : key;
			json_t *got = json_object_get(v, name);
			size_t n;
			int rc;

			if (!got) {
				if (optional)
					continue;
				return fail(c, "no \"%s\", which the design requires", name);
			}
			n = path_push(c, name, 0);
			rc = match(c, sub, got);
			if (rc)
				return rc;
			c->path[n] = '\0';
		}
		return 0;
	}
	return 0;
}

/* 0x03 and 0x04: the Dtype object names each row's columns and their
 * kind (0 not shown, 1 int, 2 float, 3 string); a row must have every
 * column it names, a value (or one per core) of that kind.  null stands
 * for "no value" in a number column (a hit rate without accesses). */
static int dtype_rows(struct seed_ctx *c, json_t *j, const char *dtype,
		      const char *inner, json_t *rows, const char *rows_name)
{
	json_t *cols = json_object_get(json_object_get(j, dtype), inner);
	const char *key;
	json_t *kind, *row;
	size_t i;

	json_object_foreach(cols, key, kind) {
		json_int_t k = json_integer_value(kind);

		if (!json_is_integer(kind) || k < 0 || k > 3) {
			snprintf(c->path, sizeof(c->path), "%s.%s.%s", dtype, inner, key);
			return fail(c, "the design's kinds are 0 (skip), 1 (int), "
				    "2 (float) and 3 (string)");
		}
	}
	json_array_foreach(rows, i, row) {
		json_object_foreach(cols, key, kind) {
			json_int_t k = json_integer_value(kind);
			json_t *v = json_object_get(row, key), *e;
			size_t m;

			snprintf(c->path, sizeof(c->path), "%s[%zu]", rows_name, i);
			if (!v)
				return fail(c, "no \"%s\", which %s.%s declares", key,
					    dtype, inner);
			if (k == 0)
				continue;
			snprintf(c->path, sizeof(c->path), "%s[%zu].%s", rows_name, i, key);
			if (json_is_array(v)) {
				json_array_foreach(v, m, e)
					if (k == 3 ? !json_is_string(e) :
					    !(json_is_number(e) || json_is_null(e)))
						return fail(c, "element %zu is %s, the "
							    "column's kind is %lld", m,
							    type_word(e), (long long)k);
			} else if (k == 3 ? !json_is_string(v) :
				   !(json_is_number(v) || json_is_null(v))) {
				return fail(c, "%s, the column's kind is %lld",
					    type_word(v), (long long)k);
			}
		}
	}
	c->path[0] = '\0';
	return 0;
}

static int extra_rules(struct seed_ctx *c, json_t *j)
{
	json_t *a, *e;
	size_t i;

	switch (c->b->type) {
	case KS_VB_TRACE:
		/* Complete events place a slice: name, ts, dur, pid, tid. */
		json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
			static const char *const need[] = { "name", "ts", "dur", "pid", "tid" };

			if (strcmp(json_string_value(json_object_get(e, "ph")), "X") != 0)
				continue;
			for (size_t k = 0; k < sizeof(need) / sizeof(need[0]); k++)
				if (!json_object_get(e, need[k])) {
					snprintf(c->path, sizeof(c->path), "traceEvents[%zu]", i);
					return fail(c, "a complete (\"X\") event without \"%s\"",
						    need[k]);
				}
		}
		return 0;
	case KS_VB_API_FILES: {
		json_t *f;
		/* The kinds, even with no file to check rows of. */
		int kinds = dtype_rows(c, j, "Files Dtype", "Lines", NULL, "Files");

		if (kinds)
			return kinds;

		json_array_foreach(json_object_get(j, "Files"), i, f) {
			char name[64];
			int rc;

			snprintf(name, sizeof(name), "Files[%zu].Lines", i);
			rc = dtype_rows(c, j, "Files Dtype", "Lines",
					json_object_get(f, "Lines"), name);
			if (rc)
				return rc;
		}
		return 0;
	}
	case KS_VB_API_INSTR:
		return dtype_rows(c, j, "Instructions Dtype", "Instructions",
				  json_object_get(j, "Instructions"), "Instructions");
	case KS_VB_MEMORY_TABLE:
		/* size is [rows, columns]; header_name names every column,
		 * the first being the rows' name; value holds the others. */
		json_array_foreach(json_object_get(j, "table_per_block"), i, a) {
			json_t *t;
			size_t k;

			json_array_foreach(json_object_get(a, "table_detail"), k, t) {
				json_t *size = json_object_get(t, "size"), *r;
				size_t rows = json_array_size(json_object_get(t, "row"));
				size_t cols = json_array_size(json_object_get(t, "header_name"));
				size_t m;

				snprintf(c->path, sizeof(c->path),
					 "table_per_block[%zu].table_detail[%zu]", i, k);
				if (json_array_size(size) != 2 ||
				    json_number_value(json_array_get(size, 0)) != (double)rows ||
				    json_number_value(json_array_get(size, 1)) != (double)cols)
					return fail(c, "size is not [rows, columns] = [%zu, %zu]",
						    rows, cols);
				if (cols < 1)
					return fail(c, "header_name is empty; its first entry "
						    "names the rows");
				json_array_foreach(json_object_get(t, "row"), m, r)
					if (json_array_size(json_object_get(r, "value")) != cols - 1)
						return fail(c, "row %zu has %zu values; the design "
							    "wants one per column after the name, %zu",
							    m, json_array_size(json_object_get(r, "value")),
							    cols - 1);
			}
		}
		c->path[0] = '\0';
		return 0;
	case KS_VB_ROOFLINE:
		json_array_foreach(json_object_get(j, "multiple_rooflines"), i, a) {
			json_t *r;
			size_t k;

			json_array_foreach(json_object_get(a, "rooflines"), k, r)
				if (json_array_size(json_object_get(r, "point")) != 2) {
					snprintf(c->path, sizeof(c->path),
						 "multiple_rooflines[%zu].rooflines[%zu].point",
						 i, k);
					return fail(c, "not [intensity, performance]");
				}
		}
		return 0;
	}
	return 0;
}

int ks_vb_check_seed(const struct ks_vb_block *b, struct ks_vb_error *err)
{
	struct seed_ctx c = { .b = b, .err = err };
	const char *tpl_text = template_of(b->type);
	json_t *tpl, *j;
	int rc;

	if (!tpl_text)
		return 0;
	tpl = json_loads(tpl_text, 0, NULL);
	j = json_loadb((const char *)b->payload, b->payload_size, 0, NULL);
	if (!tpl || !j) {
		json_decref(tpl);
		json_decref(j);
		return tpl ? fail(&c, "not JSON") : -ENOMEM;
	}
	rc = match(&c, tpl, j);
	if (!rc)
		rc = extra_rules(&c, j);
	json_decref(tpl);
	json_decref(j);
	return rc;
}
