/*
 * kscope report: prints the reports of a `kscope sample` run from its
 * profile.db: the flat profile (the default), the call tree (--tree) or
 * the per-thread table (--threads), as text or JSON, for all samples or
 * only those of one thread (--thread TID) or inside one region
 * (--region NAME).
 *
 * It exists so that a run can be looked at again with other filters and
 * limits than the flat.txt and tree.txt written at the end of the run.
 * It only reads: the database is opened read-only and nothing is created.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "log.h"
#include "profile.h"
#include "store.h"

struct report_opts {
	struct ks_common_opts common;
	bool tree;
	bool threads;
	int64_t tid;          /* -1: every thread */
	char *region;         /* NULL: no region filter */
	int format;           /* index into format_choices */
	double min_pct;
	int64_t depth;        /* 0: no limit */
};

static const char *const format_choices[] = { "text", "json", NULL };

static const struct ks_opt report_opts[] = {
	{ .name = "tree", .type = KS_OPT_FLAG,
	  .env = "KSCOPE_REPORT_TREE",
	  .help = "print the call tree instead of the flat profile",
	  .offset = offsetof(struct report_opts, tree) },
	{ .name = "threads", .type = KS_OPT_FLAG, .env = "KSCOPE_REPORT_THREADS",
	  .help = "print one row a thread instead of the flat profile",
	  .offset = offsetof(struct report_opts, threads) },
	{ .name = "thread", .type = KS_OPT_INT, .metavar = "TID", .def = "-1",
	  .env = "KSCOPE_REPORT_THREAD",
	  .help = "count only the samples of the thread with this id; -1: all threads",
	  .offset = offsetof(struct report_opts, tid),
	  .min = -1, .max = INT32_MAX },
	{ .name = "region", .type = KS_OPT_STRING, .metavar = "NAME",
	  .env = "KSCOPE_REPORT_REGION",
	  .help = "count only the samples taken inside the user-API region NAME",
	  .offset = offsetof(struct report_opts, region), .max_len = 256 },
	{ .name = "format", .type = KS_OPT_ENUM, .metavar = "FMT", .def = "text",
	  .env = "KSCOPE_REPORT_FORMAT", .help = "how to print the report",
	  .offset = offsetof(struct report_opts, format),
	  .choices = format_choices },
	{ .name = "min-pct", .type = KS_OPT_DOUBLE, .metavar = "X", .def = "0.5",
	  .env = "KSCOPE_REPORT_MIN_PCT",
	  .help = "tree: fold the nodes below X% of the samples into one line",
	  .offset = offsetof(struct report_opts, min_pct),
	  .dmin = 0, .dmax = 100 },
	{ .name = "depth", .type = KS_OPT_INT, .metavar = "N", .def = "0",
	  .env = "KSCOPE_REPORT_DEPTH",
	  .help = "tree: show N levels from the roots; 0: all",
	  .offset = offsetof(struct report_opts, depth),
	  .min = 0, .max = 10000 },
	KS_COMMON_OPTS(struct report_opts),
	KS_OPT_END
};

static const struct ks_opt report_dir = {
	.name = "DIR", .type = KS_OPT_PATH, .metavar = "DIR",
	.flags = KS_PATH_READ,
};

/* DIR/profile.db for a run directory, or the path itself for a file;
 * malloc'd, or NULL with the reason logged. */
static char *database_path(const char *arg)
{
	struct stat st;
	char *path = NULL, *rank0 = NULL;

	if (stat(arg, &st) == 0 && !S_ISDIR(st.st_mode))
		path = strdup(arg);
	else if (asprintf(&path, "%s/profile.db", arg) < 0)
		path = NULL;
	if (!path) {
		ks_error("out of memory");
		return NULL;
	}
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
		return path;
	free(path);
	/* The per-rank directories of an MPI run, not yet merged? */
	if (asprintf(&rank0, "%s/rank0/profile.db", arg) < 0)
		rank0 = NULL;
	if (rank0 && stat(rank0, &st) == 0)
		ks_error("argument DIR: '%s' has no profile.db, but per-rank results: "
			 "combine them with 'kscope merge %s', or report one rank "
			 "('%s/rank0')", arg, arg, arg);
	else
		ks_error("argument DIR: '%s' has no profile.db; accepted: a kscope "
			 "sample run directory or its profile.db", arg);
	free(rank0);
	return NULL;
}

/* The index of the thread with tid, or KS_NONE after logging why. */
static uint32_t thread_index(const struct ks_profile *p, int64_t tid)
{
	uint32_t found = KS_NONE, second = KS_NONE;
	char list[512];
	size_t len = 0;

	for (size_t i = 0; i < p->n_threads; i++) {
		if (p->threads[i].tid != tid)
			continue;
		if (found == KS_NONE)
			found = (uint32_t)i;
		else if (second == KS_NONE)
			second = (uint32_t)i;
	}
	if (found != KS_NONE && second == KS_NONE)
		return found;
	if (found != KS_NONE) {
		ks_error("option --thread: tid %" PRId64 " names more than one thread "
			 "(of processes %" PRId32 " and %" PRId32 ", from different "
			 "machines); 'kscope report --threads' lists them", tid,
			 p->processes[p->threads[found].process].pid,
			 p->processes[p->threads[second].process].pid);
		return KS_NONE;
	}
	list[0] = '\0';
	for (size_t i = 0; i < p->n_threads && len < sizeof(list) - 32; i++) {
		int n = snprintf(list + len, sizeof(list) - len, "%s%" PRId32,
				 i ? ", " : "", p->threads[i].tid);

		if (n < 0 || (size_t)n >= sizeof(list) - len)
			break;
		len += (size_t)n;
		if (i == 19 && p->n_threads > 20) {
			snprintf(list + len, sizeof(list) - len, ", ...");
			break;
		}
	}
	ks_error("option --thread: no thread has tid %" PRId64 "; accepted: %s%s",
		 tid, p->n_threads ? "one of " : "nothing (the profile has no threads)",
		 list);
	return KS_NONE;
}

static int report_run(const struct ks_cmd *cmd, struct ks_parsed *pp)
{
	const struct report_opts *o = pp->opts;
	struct ks_report_opts ro = {
		.json = o->format == 1, .thread = KS_NONE, .region = o->region,
		.min_pct = o->min_pct, .max_depth = (unsigned)o->depth,
	};
	struct ks_profile p;
	struct ks_err err;
	char *path;
	int rc, status = KS_EXIT_OK;

	(void)cmd;
	if (o->tree && o->threads) {
		ks_error("options --tree and --threads choose different reports; give "
			 "one of them");
		return KS_EXIT_USAGE;
	}
	path = database_path(pp->positional[0]);
	if (!path)
		return KS_EXIT_USAGE;
	ks_err_clear(&err);
	if (ks_profile_init(&p, &err) != 0) {
		ks_error("%s", err.msg);
		free(path);
		return KS_EXIT_FAIL;
	}
	if (ks_store_read(path, &p, &err) != 0) {
		ks_error("%s", err.msg);
		status = KS_EXIT_FAIL;
		goto out;
	}
	if (o->tid >= 0) {
		ro.thread = thread_index(&p, o->tid);
		if (ro.thread == KS_NONE) {
			status = KS_EXIT_USAGE;
			goto out;
		}
	}
	if (o->tree)
		rc = ks_report_tree(stdout, &p, &ro, &err);
	else if (o->threads)
		rc = ks_report_threads(stdout, &p, &ro, &err);
	else
		rc = ks_report_flat(stdout, &p, &ro, &err);
	if (rc == -ENOENT) {
		/* A region the profile does not know: nothing was printed. */
		ks_error("option --region: %s", err.msg);
		status = KS_EXIT_USAGE;
	} else if (rc) {
		ks_error("%s", err.msg);
		status = KS_EXIT_FAIL;
	}
out:
	ks_profile_free(&p);
	free(path);
	return status;
}

const struct ks_cmd ks_cmd_report = {
	.name = "report",
	.summary = "print the flat profile, call tree or threads of a sample run",
	.usage = "[options] DIR",
	.description =
		"Reads DIR/profile.db, written by 'kscope sample' or 'kscope merge'\n"
		"(DIR may also be the profile.db itself), and prints the flat\n"
		"profile: functions by their share of the samples taken in them\n"
		"(self) and below them (total).  --tree prints the call tree from\n"
		"the roots, --threads one row a thread.  --thread and --region count\n"
		"only the samples of one thread or inside one region, and shares are\n"
		"of the samples counted.  docs/profile-db.md describes the text and\n"
		"JSON formats.",
	.args = {
		.opts = report_opts,
		.opts_size = sizeof(struct report_opts),
		.positional = &report_dir,
		.pos_min = 1,
		.pos_max = 1,
	},
	.run = report_run,
};
