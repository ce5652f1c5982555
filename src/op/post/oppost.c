/*
 * kscope op's deliverables for one collected launch (oppost.h): opens the
 * launch's directory, reads its raw files (oppost_read.c) and writes each
 * deliverable (oppost_csv.c, oppost_json.c), then hands back the figures
 * the summary shows.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oppost_int.h"

void ks_oppost_dirname(long long pid, const char *name, unsigned long long index,
		       char *out, size_t size)
{
	char clean[201];
	size_t n = 0;

	for (const char *p = name; *p && n < sizeof(clean) - 1; p++) {
		char c = *p;

		clean[n++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || c == '_' ? c : '_';
	}
	clean[n] = '\0';
	snprintf(out, size, "%lld/%s_%llu", pid, n ? clean : "unnamed", index);
}

/* rel must name a directory below the run: "<pid>/<name>_<index>". */
static bool rel_ok(const char *rel)
{
	if (!rel[0] || rel[0] == '/' || strstr(rel, "..") || strlen(rel) >= 320)
		return false;
	for (const char *p = rel; *p; p++)
		if ((unsigned char)*p < 0x20)
			return false;
	return true;
}

static void fill_result(const struct op_launch *l, struct ks_oppost_result *res)
{
	snprintf(res->dir, sizeof(res->dir), "%s", l->rel);
	snprintf(res->name, sizeof(res->name), "%s", l->name);
	res->index = l->index;
	res->pid = l->pid;
	if (l->work.dim)
		ks_oppost_sizes(res->global, sizeof(res->global), l->work.global, l->work.dim);
	else
		snprintf(res->global, sizeof(res->global), "-");
	snprintf(res->mode, sizeof(res->mode), "%s", l->mode[0] ? l->mode : "-");
	res->passes = l->nmeasured;
	res->min_us = l->min_us;
	res->median_us = l->median_us;
	res->mean_us = l->mean_us;
	res->max_us = l->max_us;
	res->spread_pct = l->spread_pct;
	res->p80_p20 = l->p80_p20;
	res->gbps = l->gbps;
	res->gflops = l->gflops;
	res->gpu_us = l->hw_time_us;
	snprintf(res->status, sizeof(res->status), "%s", l->status);
}

int ks_oppost_launch(struct ks_rundir *run, const char *rel,
		     const struct ks_oppost_opts *o, struct ks_oppost_result *res,
		     struct ks_err *err)
{
	int (*const writers[])(struct ks_rundir *, const struct op_launch *,
			       const struct ks_oppost_opts *, struct ks_err *) = {
		ks_oppost_write_basic, ks_oppost_write_timing, ks_oppost_write_memory,
		ks_oppost_write_trace, ks_oppost_write_viz,
	};
	struct ks_rundir ld = { .path = NULL, .dirfd = -1 };
	struct op_launch l;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	snprintf(res->dir, sizeof(res->dir), "%s", rel);
	snprintf(res->name, sizeof(res->name), "%s", rel);
	snprintf(res->global, sizeof(res->global), "-");
	snprintf(res->mode, sizeof(res->mode), "-");
	snprintf(res->status, sizeof(res->status), "%s", o->status ? o->status : "unknown");
	res->index = res->pid = -1;
	res->min_us = res->median_us = res->mean_us = res->max_us = NAN;
	res->spread_pct = res->p80_p20 = res->gbps = res->gflops = res->gpu_us = NAN;
	if (!rel_ok(rel))
		return ks_err_set(err, -EINVAL, "'%s' is not a launch directory", rel);
	ld.dirfd = openat(run->dirfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ld.dirfd < 0)
		return ks_err_set(err, -errno, "%s/%s: %s", run->path, rel, strerror(errno));
	if (asprintf(&ld.path, "%s/%s", run->path, rel) < 0) {
		ld.path = NULL;
		close(ld.dirfd);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	rc = ks_oppost_read(ld.dirfd, rel, o, &l, err);
	if (rc) {
		ks_rundir_close(&ld);
		return rc;
	}
	fill_result(&l, res);
	/* Every deliverable is attempted; the first failure is returned. */
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++) {
		struct ks_err e;
		int r = writers[i](&ld, &l, o, &e);

		if (r && !rc) {
			rc = r;
			ks_err_set(err, r, "%s: %s", ld.path, e.msg);
		}
	}
	ks_oppost_launch_free(&l);
	ks_rundir_close(&ld);
	return rc;
}
