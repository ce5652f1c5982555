/*
 * The deliverables of a sample run, written into its run directory from
 * the profile: profile.db, the trace(s) and the flat, tree and threads
 * reports, all read-only; and the removal of the raw files after them.
 * `kscope sample` writes them when its program ends, and `kscope report`
 * when it finishes a run whose kscope was killed before it could.
 */
#include "store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace.h"

static int write_report(struct ks_rundir *rd, const char *name,
			int (*fn)(FILE *, const struct ks_profile *,
				  const struct ks_report_opts *, struct ks_err *),
			const struct ks_profile *p, const struct ks_report_opts *ro,
			struct ks_err *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int rc;

	if (!mem)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = fn(mem, p, ro, err);
	if (fclose(mem) != 0 && !rc)
		rc = ks_err_set(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = ks_outfile_put(rd, name, buf, len, KS_DELIVERABLE_MODE, err);
	free(buf);
	return rc;
}

int ks_store_write_trace(struct ks_rundir *rd, const char *name,
			 int (*fn)(const struct ks_profile *, struct ks_outfile *, struct ks_err *),
			 const struct ks_profile *p, struct ks_err *err)
{
	struct ks_outfile of;
	int rc = ks_outfile_open(rd, name, &of, err);

	if (rc)
		return rc;
	rc = fn(p, &of, err);
	if (rc) {
		ks_outfile_abort(&of);
		return rc;
	}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}

int ks_run_write_outputs(struct ks_rundir *rd, const struct ks_profile *p, bool json,
			 unsigned traces, struct ks_err *err)
{
	struct ks_report_opts ro = { .json = json, .thread = KS_NONE, .min_pct = 0.5 };
	char path[PATH_MAX];
	const char *ext = ro.json ? "json" : "txt";
	char name[32];
	int rc;

	snprintf(path, sizeof(path), "%s/profile.db", rd->path);
	rc = ks_store_write(p, path, err);
	if (!rc && chmod(path, KS_DELIVERABLE_MODE) != 0)
		rc = ks_err_set(err, -errno, "cannot set the mode of profile.db: %s",
				strerror(errno));
	if (!rc && (traces == 0 || traces == 2))
		rc = ks_store_write_trace(rd, "trace.perfetto-trace", ks_trace_write_perfetto, p, err);
	if (!rc && (traces == 1 || traces == 2))
		rc = ks_store_write_trace(rd, "trace.json", ks_trace_write_json, p, err);
	snprintf(name, sizeof(name), "flat.%s", ext);
	if (!rc)
		rc = write_report(rd, name, ks_report_flat, p, &ro, err);
	snprintf(name, sizeof(name), "tree.%s", ext);
	if (!rc)
		rc = write_report(rd, name, ks_report_tree, p, &ro, err);
	snprintf(name, sizeof(name), "threads.%s", ext);
	if (!rc)
		rc = write_report(rd, name, ks_report_threads, p, &ro, err);
	return rc;
}

void ks_run_remove_raw(struct ks_rundir *rd)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;
	int fd = openat(rd->dirfd, "raw", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			unlinkat(fd, de->d_name, 0);
	closedir(d);
	snprintf(path, sizeof(path), "%s/raw", rd->path);
	rmdir(path);
}

