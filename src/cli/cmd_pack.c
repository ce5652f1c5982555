/*
 * kscope pack: builds a visualize_data.bin container from source files
 * and JSON (or record) files, one block each, in a new run directory.
 *
 * It exists so that results made by other tools, or edited by hand, can be
 * opened in kscope's viewer and checked by `kscope inspect`, and it is the
 * smallest complete path through kscope's output rules: every input is
 * read and checked before the run directory is created, the container is
 * written under a temporary name and becomes visualize_data.bin (read-only)
 * only when complete.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kscope/vizbin.h>

#include "argcheck.h"
#include "cli.h"
#include "log.h"
#include "outdir.h"
#include "readfile.h"

/* Largest input file pack reads (a block is held in memory). */
#define PACK_MAX_INPUT (1ll << 30)

struct pack_opts {
	struct ks_common_opts common;
	char *output;
	struct ks_strlist sources;
	struct ks_strlist blocks;
};

static const struct ks_opt pack_opts[] = {
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT,
	  .metavar = "DIR", .def = "kscope-out", .env = "KSCOPE_OUTPUT",
	  .help = "where the run directory is created",
	  .offset = offsetof(struct pack_opts, output) },
	{ .name = "source", .short_name = 's', .type = KS_OPT_PATH,
	  .metavar = "FILE", .env = "KSCOPE_PACK_SOURCE",
	  .help = "add a source-code block (0x01) with FILE's text",
	  .offset = offsetof(struct pack_opts, sources),
	  .flags = KS_OPT_REPEAT | KS_PATH_FILE | KS_PATH_READ },
	{ .name = "block", .short_name = 'B', .type = KS_OPT_STRING,
	  .metavar = "TYPE:FILE", .env = "KSCOPE_PACK_BLOCK",
	  .help = "add a block of TYPE (name or number, see 'kscope help pack') "
		  "from FILE",
	  .offset = offsetof(struct pack_opts, blocks),
	  .flags = KS_OPT_REPEAT, .max_len = 4200 },
	KS_COMMON_OPTS(struct pack_opts),
	KS_OPT_END
};

struct pack_item {
	unsigned type;
	char *path;           /* resolved input path */
	unsigned char *data;  /* its contents */
	size_t size;
};

/* Reads a whole regular file of at most PACK_MAX_INPUT bytes. */
static int read_file(const char *path, unsigned char **data, size_t *size,
		     struct ks_err *err)
{
	char *buf;
	int rc = ks_read_file_at(AT_FDCWD, path, 0, PACK_MAX_INPUT, &buf, size, err);

	if (rc == -EFBIG)
		ks_err_set(err, rc, "'%s' is larger than 1 GiB", path);
	*data = (unsigned char *)buf;
	return rc;
}

/* Loads and checks one input as a block of type; fills item. */
static int load_item(unsigned type, const char *origin, const char *path,
		     struct pack_item *item, struct ks_err *err)
{
	struct ks_vb_block b;
	struct ks_vb_error verr;
	struct ks_err e;
	int rc;

	memset(item, 0, sizeof(*item));
	item->type = type;
	rc = read_file(path, &item->data, &item->size, &e);
	if (rc)
		return ks_err_set(err, rc, "%s: %s", origin, e.msg);
	item->path = strdup(path);
	if (!item->path)
		return ks_err_set(err, -ENOMEM, "out of memory");
	/* Check the payload as the reader will, before anything is written. */
	memset(&b, 0, sizeof(b));
	b.type = (uint8_t)type;
	b.version = KS_VB_VERSION;
	b.path = path;
	b.payload = item->data;
	b.payload_size = item->size;
	memset(&verr, 0, sizeof(verr));
	rc = ks_vb_check_payload(&b, NULL, 0, &verr);
	if (rc) {
		/* The message's "block 0 (type) at offset 0: " prefix means
		 * nothing for an input file: drop it.  With the payload at
		 * offset 0, the "file offset" it names is the input's. */
		return ks_err_set(err, rc, "%s: '%s' is not a valid %s block: %s",
				  origin, path, ks_vb_type_name(type),
				  strchr(verr.msg, ':') ? strchr(verr.msg, ':') + 2
							: verr.msg);
	}
	return 0;
}

/* Parses "TYPE:FILE" of a --block value and loads it. */
static int load_block_arg(const char *arg, struct pack_item *item,
			  struct ks_err *err)
{
	const char *colon = strchr(arg, ':');
	char type_text[32], note[KS_NOTE_MAX], accepted[64];
	char *path = NULL;
	struct ks_err e;
	int type, rc;

	snprintf(accepted, sizeof(accepted), "TYPE:FILE");
	if (!colon || colon == arg || (size_t)(colon - arg) >= sizeof(type_text))
		return ks_err_set(err, -EINVAL,
				  "option --block: '%s' is not TYPE:FILE; accepted: a "
				  "block type name or number, a colon and a file, "
				  "e.g. roofline:roofline.json", arg);
	memcpy(type_text, arg, (size_t)(colon - arg));
	type_text[colon - arg] = '\0';
	type = ks_vb_type_parse(type_text);
	if (type < 0 || type == KS_VB_SOURCE) {
		char list[512];
		size_t o = 0;

		for (unsigned t = 2; t <= KS_VB_TYPE_MAX; t++)
			o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
					      t > 2 ? ", " : "", ks_vb_type_name(t));
		return ks_err_set(err, -EINVAL,
				  "option --block: '%s' is not a block type%s; "
				  "accepted: %s, or a number from 0x02 to 0x0f",
				  type_text,
				  type == KS_VB_SOURCE ? " here (use --source)" : "",
				  list);
	}
	rc = ks_check_path(colon + 1, strlen(colon + 1), KS_PATH_FILE | KS_PATH_READ,
			   &path, note, sizeof(note), &e);
	if (rc)
		return ks_err_set(err, rc, "option --block: %s; accepted: the path "
				  "of a readable regular file after '%s:'", e.msg,
				  type_text);
	if (note[0])
		ks_info("%s", note);
	rc = load_item((unsigned)type, "option --block", path, item, err);
	free(path);
	return rc;
}

static void free_items(struct pack_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(items[i].path);
		free(items[i].data);
	}
	free(items);
}

static int write_container(struct ks_rundir *rd, const struct pack_item *items,
			   size_t n, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_vb_writer *w = NULL;
	struct ks_vb_error verr;
	int rc;

	rc = ks_outfile_open(rd, "visualize_data.bin", &of, err);
	if (rc)
		return rc;
	rc = ks_vb_writer_open(of.fd, &w, &verr);
	for (size_t i = 0; !rc && i < n; i++) {
		rc = ks_vb_write(w, items[i].type, KS_VB_VERSION,
				 items[i].type == KS_VB_SOURCE ? items[i].path : NULL,
				 items[i].data, items[i].size, &verr);
		if (!rc)
			ks_debug("block %zu: %s from %s, %zu bytes", i,
				 ks_vb_type_name(items[i].type), items[i].path,
				 items[i].size);
	}
	ks_vb_writer_free(w);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "writing visualize_data.bin failed: %s",
				  verr.msg);
	}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}

static int pack_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	const struct pack_opts *o = p->opts;
	size_t n = o->sources.n + o->blocks.n, k = 0;
	struct pack_item *items;
	struct ks_rundir rd;
	struct ks_err err;
	int status = KS_EXIT_OK;

	if (n == 0) {
		ks_error("'kscope pack' needs at least one --source or --block "
			 "(see 'kscope pack --help')");
		return KS_EXIT_USAGE;
	}
	items = calloc(n, sizeof(*items));
	if (!items) {
		ks_error("out of memory");
		return KS_EXIT_FAIL;
	}
	ks_err_clear(&err);
	/* Every input is read and checked before anything is created. */
	for (size_t i = 0; i < o->sources.n; i++, k++)
		if (load_item(KS_VB_SOURCE, "option --source", o->sources.v[i],
			      &items[k], &err) != 0) {
			ks_error("%s", err.msg);
			free_items(items, n);
			return err.code == -ENOMEM ? KS_EXIT_FAIL : KS_EXIT_USAGE;
		}
	for (size_t i = 0; i < o->blocks.n; i++, k++)
		if (load_block_arg(o->blocks.v[i], &items[k], &err) != 0) {
			ks_error("%s", err.msg);
			free_items(items, n);
			return err.code == -ENOMEM ? KS_EXIT_FAIL : KS_EXIT_USAGE;
		}

	if (ks_rundir_create(o->output, cmd->name, 0, &rd, &err) != 0) {
		ks_error("%s", err.msg);
		free_items(items, n);
		return KS_EXIT_FAIL;
	}
	if (write_container(&rd, items, n, &err) != 0) {
		ks_error("%s: %s", rd.path, err.msg);
		ks_rundir_discard(&rd);
		status = KS_EXIT_FAIL;
	} else {
		printf("visualize_data.bin: %zu block%s\n", n, n == 1 ? "" : "s");
		printf("results: %s\n", rd.path);
		ks_rundir_close(&rd);
	}
	free_items(items, n);
	return status;
}

const struct ks_cmd ks_cmd_pack = {
	.name = "pack",
	.summary = "build a visualize_data.bin container from source and JSON files",
	.usage = "[options] [--source FILE]... [--block TYPE:FILE]...",
	.description =
		"Writes <output>/pack_<YYYYmmdd_HHMMSS>_<pid>/visualize_data.bin with\n"
		"one block per --source (0x01, the file's text, its absolute path in\n"
		"the block) and per --block, in command-line order, sources first.\n"
		"Each input is checked as `kscope inspect` checks blocks (JSON syntax\n"
		"and required fields, record sizes) before anything is written.\n"
		"\n"
		"Block types for --block (name or number):\n"
		"  trace 0x02, api-files 0x03, api-instructions 0x04, base-info 0x05,\n"
		"  compute-graph 0x06, compute-table 0x07, memory-graph 0x08,\n"
		"  memory-table 0x09, memory-timing 0x0a, cache-records 0x0b,\n"
		"  core-load 0x0c, roofline 0x0d, cacheline-heat 0x0e, stall-reasons 0x0f\n"
		"(docs/formats.md describes each).",
	.args = {
		.opts = pack_opts,
		.opts_size = sizeof(struct pack_opts),
	},
	.run = pack_run,
};
