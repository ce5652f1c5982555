/*
 * kscope inspect: lists the blocks of a visualize_data.bin container
 * (index, offset, type, size, a one-line summary), or prints one block's
 * payload.  Every header and payload is checked on the way; a damaged
 * file's good blocks are listed, then the damage is reported with its
 * block index and offset and the exit status is 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kscope/vizbin.h>

#include "cli.h"
#include "log.h"

struct inspect_opts {
	struct ks_common_opts common;
	int64_t block;        /* -1: list all */
	int format;           /* index into format_choices */
	bool strict;          /* also the design's field lists */
};

static const char *const format_choices[] = { "text", "json", NULL };

static const struct ks_opt inspect_opts[] = {
	{ .name = "block", .short_name = 'b', .type = KS_OPT_INT, .metavar = "N",
	  .def = "-1", .env = "KSCOPE_INSPECT_BLOCK",
	  .help = "print the payload of block N (from 0) instead of the list; -1 lists",
	  .offset = offsetof(struct inspect_opts, block),
	  .min = -1, .max = UINT32_MAX - 1 },
	{ .name = "format", .type = KS_OPT_ENUM, .metavar = "FMT", .def = "text",
	  .env = "KSCOPE_INSPECT_FORMAT", .help = "how to print the block list",
	  .offset = offsetof(struct inspect_opts, format),
	  .choices = format_choices },
	{ .name = "strict", .type = KS_OPT_FLAG, .env = "KSCOPE_INSPECT_STRICT",
	  .help = "also check every JSON block against the design's field list "
		  "for its type (each field present, with the design's JSON type)",
	  .offset = offsetof(struct inspect_opts, strict) },
	KS_COMMON_OPTS(struct inspect_opts),
	KS_OPT_END
};

static const struct ks_opt inspect_file = {
	.name = "FILE", .type = KS_OPT_PATH, .metavar = "FILE",
	.flags = KS_PATH_FILE | KS_PATH_READ,
};

/* Lists the first n blocks of r (those that passed every check). */
static void list_text(const char *path, const struct ks_vb_reader *r,
		      uint32_t n, const char *const *summaries, bool damaged)
{
	printf("%s: %u %sblock%s, %" PRIu64 " bytes\n", path, n,
	       damaged ? "good " : "", n == 1 ? "" : "s", ks_vb_file_size(r));
	if (n == 0)
		return;
	printf("%5s %10s  %-33s %10s  %s\n", "index", "offset", "type", "size",
	       "summary");
	for (uint32_t i = 0; i < n; i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);
		char type[64];

		snprintf(type, sizeof(type), "0x%02x %s", b->type,
			 ks_vb_type_title(b->type));
		printf("%5u %10" PRIu64 "  %-33s %10" PRIu64 "  %s\n", b->index,
		       b->offset, type, b->payload_size, summaries[i]);
	}
}

static int list_json(const char *path, const struct ks_vb_reader *r,
		     uint32_t n, const char *const *summaries,
		     const struct ks_vb_error *damage)
{
	json_t *root = json_object(), *blocks = json_array();
	char *text;

	if (!root || !blocks)
		return -ENOMEM;
	json_object_set_new(root, "file", json_string(path));
	json_object_set_new(root, "size", json_integer((json_int_t)ks_vb_file_size(r)));
	json_object_set_new(root, "blocks", blocks);
	for (uint32_t i = 0; i < n; i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);
		json_t *o = json_pack("{s:I, s:I, s:i, s:s, s:i, s:i, s:I, s:I, s:s}",
				      "index", (json_int_t)b->index,
				      "offset", (json_int_t)b->offset,
				      "type", b->type,
				      "type_name", ks_vb_type_name(b->type),
				      "version", b->version,
				      "padding", b->padding,
				      "content_size", (json_int_t)b->content_size,
				      "payload_size", (json_int_t)b->payload_size,
				      "summary", summaries[i]);
		if (!o)
			return -ENOMEM;
		if (b->path)
			json_object_set_new(o, "path", json_string(b->path));
		json_array_append_new(blocks, o);
	}
	if (damage)
		json_object_set_new(root, "error",
				    json_pack("{s:I, s:I, s:s}",
					      "block", (json_int_t)damage->block,
					      "offset", (json_int_t)damage->offset,
					      "message", damage->msg));
	else
		json_object_set_new(root, "error", json_null());
	text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!text)
		return -ENOMEM;
	puts(text);
	free(text);
	return 0;
}

static int print_block(const char *path, const struct ks_vb_reader *r,
		       int64_t index)
{
	const struct ks_vb_block *b = ks_vb_block_at(r, (uint32_t)index);

	if (!b && ks_vb_count(r) == 0) {
		ks_error("option --block: %s has no blocks, so there is no block %"
			 PRId64, path, index);
		return KS_EXIT_USAGE;
	}
	if (!b) {
		ks_error("option --block: %s has no block %" PRId64 "; accepted: "
			 "0 to %u", path, index, ks_vb_count(r) - 1);
		return KS_EXIT_USAGE;
	}
	if (b->payload_size && fwrite(b->payload, 1, b->payload_size, stdout)
	    != b->payload_size) {
		ks_error("writing block %" PRId64 " to standard output failed", index);
		return KS_EXIT_FAIL;
	}
	return KS_EXIT_OK;
}

static int inspect_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	const struct inspect_opts *o = p->opts;
	const char *path = p->positional[0];
	struct ks_vb_reader *r = NULL;
	struct ks_vb_error verr, damage;
	char **summaries = NULL;
	bool damaged;
	uint32_t good;
	int rc, status = KS_EXIT_OK;

	(void)cmd;
	memset(&verr, 0, sizeof(verr));
	rc = ks_vb_open(path, KS_VB_KEEP_PARTIAL, &r, &verr);
	if (!r) {
		ks_error("%s: %s", path, verr.msg);
		return KS_EXIT_FAIL;
	}
	damaged = rc != 0;
	damage = verr;

	/* Check each payload; the first bad one ends the good part. */
	good = ks_vb_count(r);
	summaries = calloc(good + 1, sizeof(*summaries));
	if (!summaries) {
		ks_error("out of memory");
		ks_vb_close(r);
		return KS_EXIT_FAIL;
	}
	for (uint32_t i = 0; i < good; i++) {
		char sum[512];

		if (ks_vb_check_payload(ks_vb_block_at(r, i), sum, sizeof(sum),
					&verr) != 0 ||
		    (o->strict && ks_vb_check_seed(ks_vb_block_at(r, i), &verr) != 0)) {
			damaged = true;
			damage = verr;
			good = i;
			break;
		}
		summaries[i] = strdup(sum);
	}

	if (o->block >= 0) {
		if (o->block < good || !damaged) {
			status = print_block(path, r, o->block);
			if (damaged)
				ks_warn("%s: block %" PRId64 " is intact, but the file "
					"is damaged further on: %s", path, o->block,
					damage.msg);
		} else {
			ks_error("%s: block %" PRId64 " cannot be read: %s", path,
				 o->block, damage.msg);
			status = KS_EXIT_FAIL;
		}
	} else {
		/* Listing: only the blocks before the damage. */
		if (o->format == 1) {
			if (list_json(path, r, good, (const char *const *)summaries,
				      damaged ? &damage : NULL) != 0) {
				ks_error("out of memory");
				status = KS_EXIT_FAIL;
			}
		} else {
			list_text(path, r, good, (const char *const *)summaries,
				  damaged);
		}
		if (damaged) {
			ks_error("%s: %s", path, damage.msg);
			status = KS_EXIT_FAIL;
		}
	}
	for (uint32_t i = 0; i < ks_vb_count(r); i++)
		free(summaries[i]);
	free(summaries);
	ks_vb_close(r);
	return status;
}

const struct ks_cmd ks_cmd_inspect = {
	.name = "inspect",
	.summary = "list or print the blocks of a visualize_data.bin container",
	.usage = "[options] FILE",
	.description =
		"Lists the blocks of a visualize_data.bin container: index, file\n"
		"offset, type, payload size and a one-line summary.  With --block N\n"
		"prints block N's payload as stored (source text, JSON or records).\n"
		"Every header, size and JSON payload is checked; a damaged file's\n"
		"good blocks are listed, then the damage is reported with its block\n"
		"index and offset, and the exit status is 1.  With --strict, each\n"
		"JSON block must also carry every field the design lists for its\n"
		"type; the first that does not is reported the same way.",
	.args = {
		.opts = inspect_opts,
		.opts_size = sizeof(struct inspect_opts),
		.positional = &inspect_file,
		.pos_min = 1,
		.pos_max = 1,
	},
	.run = inspect_run,
};
