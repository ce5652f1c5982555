/*
 * Payload checks and one-line summaries for each visualize_data.bin block
 * type: JSON syntax (jansson, duplicates rejected), the top-level fields
 * the type's schema requires (docs/formats.md), and the record layout of
 * the binary types.  The summaries are what `kscope inspect` lists.
 */
#include <kscope/vizbin.h>

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "format_int.h"

/* Reports a payload problem at a payload-relative position. */
#define PFAIL(b, err, pos, ...)                                              \
	ks_vb_fail((err), -EINVAL, (b)->index, (b)->payload_offset + (pos),  \
		   __VA_ARGS__)

static int fail_schema(const struct ks_vb_block *b, struct ks_vb_error *err,
		       const char *what)
{
	return PFAIL(b, err, 0, "block %u (%s) at offset %llu: %s", b->index,
		     ks_vb_type_name(b->type), (unsigned long long)b->offset, what);
}

/* The array member key of object o, or NULL with err set. */
static json_t *need_array(const struct ks_vb_block *b, json_t *o,
			  const char *key, struct ks_vb_error *err)
{
	json_t *a = json_is_object(o) ? json_object_get(o, key) : NULL;
	char what[160];

	if (!json_is_array(a)) {
		snprintf(what, sizeof(what), "%s \"%s\" array is missing",
			 json_is_object(o) ? "the" : "not a JSON object: the", key);
		fail_schema(b, err, what);
		return NULL;
	}
	return a;
}

/* "s" unless n is 1. */
static const char *plural(size_t n)
{
	return n == 1 ? "" : "s";
}

static size_t count_lines(const unsigned char *p, uint64_t n)
{
	size_t lines = 0;

	for (uint64_t i = 0; i < n; i++)
		if (p[i] == '\n')
			lines++;
	if (n > 0 && p[n - 1] != '\n')
		lines++;
	return lines;
}

static int check_source(const struct ks_vb_block *b, char *sum, size_t size,
			struct ks_vb_error *err)
{
	const unsigned char *nul = memchr(b->payload, 0, b->payload_size);

	if (nul)
		return PFAIL(b, err, (uint64_t)(nul - b->payload),
			     "block %u (source) at offset %llu: the source text has "
			     "a NUL byte at offset %llu", b->index,
			     (unsigned long long)b->offset,
			     (unsigned long long)(b->payload_offset +
						  (uint64_t)(nul - b->payload)));
	{
		size_t lines = count_lines(b->payload, b->payload_size);

		snprintf(sum, size, "%s, %zu line%s", b->path, lines, plural(lines));
	}
	return 0;
}

static int check_binary(const struct ks_vb_block *b, char *sum, size_t size,
			struct ks_vb_error *err)
{
	if (b->type == KS_VB_CACHE_RECORDS) {
		if (b->payload_size % KS_VB_CACHE_RECORD_SIZE)
			return fail_schema(b, err, "size is not a multiple of the "
					   "32-byte cache record");
		snprintf(sum, size, "%" PRIu64 " cache record%s",
			 b->payload_size / KS_VB_CACHE_RECORD_SIZE,
			 plural((size_t)(b->payload_size / KS_VB_CACHE_RECORD_SIZE)));
		return 0;
	}
	/* 0x0A: u64 record count, the records, then the call-stack map JSON
	 * (an array; may be absent). */
	{
		uint64_t n = 0, rest;
		json_error_t jerr;
		json_t *map;

		if (b->payload_size < 8)
			return fail_schema(b, err, "shorter than its 8-byte record count");
		for (int i = 7; i >= 0; i--)
			n = (n << 8) | b->payload[i];
		if (n > (b->payload_size - 8) / KS_VB_TRACE_RECORD_SIZE)
			return fail_schema(b, err, "record count exceeds the payload");
		rest = b->payload_size - 8 - n * KS_VB_TRACE_RECORD_SIZE;
		if (rest) {
			map = json_loadb((const char *)b->payload + b->payload_size - rest,
					 rest, JSON_REJECT_DUPLICATES, &jerr);
			if (!map)
				return PFAIL(b, err, b->payload_size - rest + (uint64_t)jerr.position,
					     "block %u (memory-timing) at offset %llu: "
					     "call-stack map is not valid JSON: %s",
					     b->index, (unsigned long long)b->offset,
					     jerr.text);
			if (!json_is_array(map)) {
				json_decref(map);
				return fail_schema(b, err, "call-stack map is not an array");
			}
			json_decref(map);
		}
		snprintf(sum, size, "%" PRIu64 " memory record%s%s", n, plural((size_t)n),
			 rest ? ", call-stack map" : "");
		return 0;
	}
}

/* ---- 0x0E: the fields of its cache lines (docs/formats.md) ---- */

static bool is_count(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0;
}

/* "0x" and 1 to 16 lower-case hex digits. */
static bool is_hex_addr(const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n;

	if (!s || s[0] != '0' || s[1] != 'x')
		return false;
	n = strspn(s + 2, "0123456789abcdef");
	return n >= 1 && n <= 16 && s[2 + n] == '\0';
}

/* The counts of a line or of "other": "misses" (one per level, nlev of
 * them, each level's at most the level above's), "load_misses",
 * "store_misses" and "writebacks"; NULL or the field that is wrong. */
static const char *heat_counts(const json_t *o, size_t nlev)
{
	const json_t *m = json_object_get(o, "misses"), *v;
	size_t i;

	if (!json_is_array(m) || json_array_size(m) != nlev)
		return "\"misses\" (an array of one count per level)";
	json_array_foreach(m, i, v)
		if (!is_count(v) || (i && json_integer_value(v) >
				     json_integer_value(json_array_get(m, i - 1))))
			return "\"misses\" (counts, each at most the level above's)";
	if (!is_count(json_object_get(o, "load_misses")))
		return "\"load_misses\"";
	if (!is_count(json_object_get(o, "store_misses")))
		return "\"store_misses\"";
	if (!is_count(json_object_get(o, "writebacks")))
		return "\"writebacks\"";
	if (json_integer_value(json_array_get(m, 0)) !=
	    json_integer_value(json_object_get(o, "load_misses")) +
	    json_integer_value(json_object_get(o, "store_misses")))
		return "\"misses\" (the first level's must be load_misses + store_misses)";
	return NULL;
}

static const char *heat_line(const json_t *l, size_t nlev)
{
	const json_t *top = json_object_get(l, "top_instruction");
	const char *bad;

	if (!json_is_object(l))
		return "the line (an object)";
	if (!is_hex_addr(json_object_get(l, "address")))
		return "\"address\" (a \"0x...\" string)";
	if ((bad = heat_counts(l, nlev)))
		return bad;
	if (json_is_null(top))
		return NULL;
	if (!json_is_object(top) || !is_hex_addr(json_object_get(top, "address")) ||
	    !is_count(json_object_get(top, "misses")) ||
	    !json_is_string(json_object_get(top, "function")) ||
	    !json_is_string(json_object_get(top, "file")) ||
	    !is_count(json_object_get(top, "line")) ||
	    !json_is_string(json_object_get(top, "source")))
		return "\"top_instruction\" (null, or an object with \"address\", \"misses\", "
		       "\"function\", \"file\", \"line\" and \"source\")";
	if (json_integer_value(json_object_get(top, "misses")) >
	    json_integer_value(json_array_get(json_object_get(l, "misses"), 0)))
		return "\"top_instruction\" (more misses than its line)";
	return NULL;
}

/* The object around the cache_lines array a: each line's fields, and
 * when present "levels" (names, 1 to 4: the length of every "misses"),
 * "line_size" and "other".  Without "levels", every line has as many
 * misses as the first. */
static int check_heat(const struct ks_vb_block *b, const json_t *j, const json_t *a,
		      struct ks_vb_error *err)
{
	const json_t *lv = json_object_get(j, "levels"), *v, *o = json_object_get(j, "other");
	size_t nlev = json_array_size(lv), i;
	char what[256];
	const char *bad;

	if (!lv)
		nlev = json_array_size(json_object_get(json_array_get(a, 0), "misses"));
	if (lv && (!json_is_array(lv) || nlev < 1 || nlev > 4))
		return fail_schema(b, err, "\"levels\" is not an array of 1 to 4 level names");
	json_array_foreach(lv, i, v)
		if (!json_is_string(v))
			return fail_schema(b, err, "a level name is not a string");
	if (json_object_get(j, "line_size") &&
	    (!is_count(json_object_get(j, "line_size")) ||
	     json_integer_value(json_object_get(j, "line_size")) == 0))
		return fail_schema(b, err, "\"line_size\" is not a positive integer");
	if (json_array_size(a) && (nlev < 1 || nlev > 4))
		return fail_schema(b, err, "cache line 0: bad or missing \"misses\" (an array "
				   "of one count per level, 1 to 4)");
	json_array_foreach(a, i, v)
		if ((bad = heat_line(v, nlev))) {
			snprintf(what, sizeof(what), "cache line %zu: bad or missing %s", i, bad);
			return fail_schema(b, err, what);
		}
	if (!o)
		return 0;
	if (!json_is_object(o) || !is_count(json_object_get(o, "lines")) ||
	    !is_count(json_object_get(o, "dropped_pairs")))
		return fail_schema(b, err, "\"other\" is not an object with \"lines\" and "
				   "\"dropped_pairs\" counts");
	if ((bad = heat_counts(o, nlev))) {
		snprintf(what, sizeof(what), "\"other\": bad or missing %s", bad);
		return fail_schema(b, err, what);
	}
	return 0;
}

static int summarize_json(const struct ks_vb_block *b, json_t *j, char *sum,
			  size_t size, struct ks_vb_error *err)
{
	json_t *a, *c, *v;
	size_t i, total;

	switch (b->type) {
	case KS_VB_TRACE:
		/* Trace Event Format: an object with traceEvents, or a bare array. */
		a = json_is_array(j) ? j : need_array(b, j, "traceEvents", err);
		if (!a)
			return err ? err->code : -EINVAL;
		json_array_foreach(a, i, v)
			if (!json_is_object(v)) {
				char what[96];

				snprintf(what, sizeof(what),
					 "trace event %zu is not an object", i);
				return fail_schema(b, err, what);
			}
		snprintf(sum, size, "%zu trace event%s", json_array_size(a),
			 plural(json_array_size(a)));
		return 0;
	case KS_VB_API_FILES:
		if (!(a = need_array(b, j, "Files", err)) ||
		    !(c = need_array(b, j, "Cores", err)))
			return err ? err->code : -EINVAL;
		total = 0;
		json_array_foreach(a, i, v) {
			json_t *lines = json_object_get(v, "Lines");

			if (!json_is_object(v) || !json_is_string(json_object_get(v, "Source")) ||
			    !json_is_array(lines)) {
				char what[96];

				snprintf(what, sizeof(what), "file %zu needs a \"Source\" "
					 "string and a \"Lines\" array", i);
				return fail_schema(b, err, what);
			}
			total += json_array_size(lines);
		}
		snprintf(sum, size, "%zu file%s, %zu line%s, %zu core%s",
			 json_array_size(a), plural(json_array_size(a)), total,
			 plural(total), json_array_size(c), plural(json_array_size(c)));
		return 0;
	case KS_VB_API_INSTR: {
		/* Mapped to source by location: a "Source Location" column (or,
		 * in files kscope wrote before, version 0x00). */
		json_t *dt = json_object_get(json_object_get(j, "Instructions Dtype"),
					     "Instructions");
		bool by_location = b->version == KS_VB_VERSION_BY_LOCATION ||
				   json_object_get(dt, "Source Location") != NULL;

		if (!(a = need_array(b, j, "Instructions", err)) ||
		    !(c = need_array(b, j, "Cores", err)))
			return err ? err->code : -EINVAL;
		snprintf(sum, size, "%zu instruction%s, %zu core%s%s",
			 json_array_size(a), plural(json_array_size(a)),
			 json_array_size(c), plural(json_array_size(c)),
			 by_location ? ", mapped by location" : "");
		return 0;
	}
	case KS_VB_BASE_INFO: {
		const char *name, *soc;

		if (!json_is_object(j))
			return fail_schema(b, err, "not a JSON object");
		name = json_string_value(json_object_get(j, "name"));
		soc = json_string_value(json_object_get(j, "soc"));
		v = json_object_get(j, "duration");
		if (json_is_number(v))
			snprintf(sum, size, "name %s, soc %s, duration %g",
				 name ? name : "-", soc ? soc : "-",
				 json_number_value(v));
		else
			snprintf(sum, size, "name %s, soc %s, duration -",
				 name ? name : "-", soc ? soc : "-");
		return 0;
	}
	case KS_VB_COMPUTE_GRAPH:
	case KS_VB_COMPUTE_TABLE:
		if (!(a = need_array(b, j, "subblock_detail", err)))
			return err ? err->code : -EINVAL;
		snprintf(sum, size, "%zu entr%s", json_array_size(a),
			 json_array_size(a) == 1 ? "y" : "ies");
		return 0;
	case KS_VB_MEMORY_GRAPH:
		if (!(a = need_array(b, j, "core_memory_map", err)))
			return err ? err->code : -EINVAL;
		snprintf(sum, size, "%zu core%s", json_array_size(a),
			 plural(json_array_size(a)));
		return 0;
	case KS_VB_MEMORY_TABLE:
		if (!(a = need_array(b, j, "table_per_block", err)))
			return err ? err->code : -EINVAL;
		snprintf(sum, size, "%zu block%s", json_array_size(a),
			 plural(json_array_size(a)));
		return 0;
	case KS_VB_CORE_LOAD:
		if (!(a = need_array(b, j, "op_detail", err)))
			return err ? err->code : -EINVAL;
		snprintf(sum, size, "%zu core%s", json_array_size(a),
			 plural(json_array_size(a)));
		return 0;
	case KS_VB_ROOFLINE:
		if (!(a = need_array(b, j, "multiple_rooflines", err)))
			return err ? err->code : -EINVAL;
		total = 0;
		json_array_foreach(a, i, v) {
			json_t *r = json_object_get(v, "rooflines");

			if (!json_is_array(r)) {
				char what[96];

				snprintf(what, sizeof(what),
					 "chart %zu needs a \"rooflines\" array", i);
				return fail_schema(b, err, what);
			}
			total += json_array_size(r);
		}
		snprintf(sum, size, "%zu chart%s, %zu roofline%s", json_array_size(a),
			 plural(json_array_size(a)), total, plural(total));
		return 0;
	case KS_VB_CACHELINE_HEAT:
		if (!(a = need_array(b, j, "cache_lines", err)))
			return err ? err->code : -EINVAL;
		if (check_heat(b, j, a, err))
			return err ? err->code : -EINVAL;
		snprintf(sum, size, "%zu cache line%s", json_array_size(a),
			 plural(json_array_size(a)));
		return 0;
	case KS_VB_STALL_REASONS:
		if (!(a = need_array(b, j, "stall_reasons", err)))
			return err ? err->code : -EINVAL;
		snprintf(sum, size, "%zu stall reason%s", json_array_size(a),
			 plural(json_array_size(a)));
		return 0;
	}
	return fail_schema(b, err, "not a JSON block type");
}

int ks_vb_check_payload(const struct ks_vb_block *b, char *summary,
			size_t summary_size, struct ks_vb_error *err)
{
	char local[256];
	json_error_t jerr;
	json_t *j;
	int rc;

	if (!summary || summary_size == 0) {
		summary = local;
		summary_size = sizeof(local);
	}
	summary[0] = '\0';
	if (b->type == KS_VB_SOURCE)
		return check_source(b, summary, summary_size, err);
	if (b->type == KS_VB_MEMORY_TIMING || b->type == KS_VB_CACHE_RECORDS)
		return check_binary(b, summary, summary_size, err);
	if (b->type == KS_VB_INVALID || b->type > KS_VB_TYPE_MAX)
		return fail_schema(b, err, "unknown block type");
	j = json_loadb((const char *)b->payload, b->payload_size,
		       JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		return PFAIL(b, err, (uint64_t)jerr.position,
			     "block %u (%s) at offset %llu: invalid JSON at line %d, "
			     "column %d (file offset %llu): %s", b->index,
			     ks_vb_type_name(b->type), (unsigned long long)b->offset,
			     jerr.line, jerr.column,
			     (unsigned long long)(b->payload_offset +
						  (uint64_t)jerr.position),
			     jerr.text);
	rc = summarize_json(b, j, summary, summary_size, err);
	json_decref(j);
	return rc;
}
