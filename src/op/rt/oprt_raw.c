/*
 * The raw files of one collected launch or range (opraw.h): its directory
 * under the run directory, and each file written under a temporary name
 * and renamed, so that a file kscope finds is complete.  Directories are
 * 0750 and files 0640, like every kscope output before it is committed.
 *
 * context.json is written here from its neutral members (kind, name,
 * index, pid, tid) and the backend's description of the replay; the
 * program file next to it comes from the backend too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opraw.h"
#include "oprt_int.h"

int ks_oprt_raw_mkdir(const char *rel, char *abs, size_t size, struct ks_err *err)
{
	size_t base;
	int n;

	if (!ks_oprt_rel_ok(rel))
		return ks_err_set(err, -EINVAL, "collect dir=%s is not a relative directory", rel);
	n = snprintf(abs, size, "%s/%s", ks_oprt.cfg.dir, rel);
	if (n < 0 || (size_t)n >= size)
		return ks_err_set(err, -ENAMETOOLONG, "%s/%s: path too long", ks_oprt.cfg.dir, rel);
	/* Each component of rel in turn, cut at its end for mkdir. */
	base = strlen(ks_oprt.cfg.dir) + 1;
	for (size_t i = base; i <= (size_t)n; i++) {
		char c = abs[i];
		int e = 0;

		if (c != '/' && c != '\0')
			continue;
		abs[i] = '\0';
		if (mkdir(abs, 0750) == 0)
			chmod(abs, 0750);           /* whatever the program's umask */
		else if (errno != EEXIST)
			e = errno;
		if (e)
			ks_err_set(err, -e, "cannot create %s: %s", abs, strerror(e));
		abs[i] = c;
		if (e)
			return -e;
	}
	return 0;
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ks_oprt_raw_write(const char *dir, const char *name, const void *data, size_t len,
		      struct ks_err *err)
{
	char tmp[4200], path[4200];
	int fd, rc;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.part", dir, name) >= sizeof(tmp) ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return ks_err_set(err, -ENAMETOOLONG, "%s/%s: path too long", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0) {
		rc = -errno;
		return ks_err_set(err, rc, "cannot create %s: %s", tmp, strerror(-rc));
	}
	rc = write_all(fd, data, len);
	if (rc == 0 && fchmod(fd, 0640) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return ks_err_set(err, rc, "cannot write %s: %s", path, strerror(-rc));
	}
	return 0;
}

int ks_oprt_raw_context(const char *dir, void *rep, bool range, const char *name,
			uint64_t index, uint64_t ordinal, const char *range_name,
			struct ks_err *err)
{
	const struct ks_oprt_backend *be = ks_oprt_be();
	const char *file = NULL;
	const void *data = NULL;
	size_t len = 0;
	struct ks_oprt_json j;
	int rc;

	be->rep_program(rep, &file, &data, &len);
	if (file) {
		rc = ks_oprt_raw_write(dir, file, data, len, err);
		if (rc)
			return rc;
	}
	ks_oprt_json_init(&j);
	ks_oprt_json_obj_open(&j, NULL);
	ks_oprt_json_str(&j, "kind", range ? "range" : "kernel");
	ks_oprt_json_str(&j, "name", name);
	ks_oprt_json_u64(&j, "index", index);
	ks_oprt_json_i64(&j, "pid", (int64_t)getpid());
	ks_oprt_json_i64(&j, "tid", (int64_t)gettid());
	/* Not in opraw.h: how application replay names the launch, and the
	 * user range the launch was made in (kernel replay with mstx). */
	if (!range)
		ks_oprt_json_u64(&j, "ordinal", ordinal);
	if (range_name && range_name[0])
		ks_oprt_json_str(&j, "range", range_name);
	be->rep_describe(rep, range, &j);
	ks_oprt_json_obj_close(&j);
	if (j.bad)
		rc = ks_err_set(err, -ENOMEM, "out of memory writing %s", KS_OP_CONTEXT_FILE);
	else
		rc = ks_oprt_raw_write(dir, KS_OP_CONTEXT_FILE, j.buf, j.len, err);
	ks_oprt_json_free(&j);
	return rc;
}
