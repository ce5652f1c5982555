/*
 * Run directories and all-or-nothing output files (outdir.h).
 *
 * Directories are walked with openat(O_NOFOLLOW) from the first existing
 * ancestor downwards, and every file is created relative to the run
 * directory's descriptor, so a symbolic link planted after the checks
 * cannot redirect kscope's writes.
 */
#include "outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "argcheck.h"

/* ------------------------------------------------------------------ */
/* Run directories                                                     */
/* ------------------------------------------------------------------ */

/* Opens or creates each component of path below "/", refusing symbolic
 * links in the part kscope creates.  Returns an O_DIRECTORY fd or -errno. */
static int open_output(const char *path, struct ks_err *err)
{
	char buf[PATH_MAX], *save = NULL, *tok;
	int fd, next;

	if (strlen(path) >= sizeof(buf) || path[0] != '/')
		return ks_err_set(err, -EINVAL, "output '%s' is not an absolute path",
				  path);
	strcpy(buf, path);
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ks_err_set(err, -errno, "cannot open '/': %s", strerror(errno));
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		/* The checked path is already resolved, so a link here was
		 * planted since: refuse it. */
		next = openat(fd, tok, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT) {
			if (mkdirat(fd, tok, KS_DIR_MODE) != 0 && errno != EEXIST) {
				int e = errno;

				close(fd);
				return ks_err_set(err, -e, "cannot create directory '%s' in "
						  "'%s': %s", tok, path, strerror(e));
			}
			next = openat(fd, tok, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				      O_CLOEXEC);
			if (next >= 0)
				fchmod(next, KS_DIR_MODE); /* umask may have removed bits */
		}
		if (next < 0) {
			int e = errno;

			close(fd);
			return ks_err_set(err, -e, "cannot open '%s' in output '%s': %s",
					  tok, path, strerror(e == ELOOP ? ENOTDIR : e));
		}
		close(fd);
		fd = next;
	}
	return fd;
}

/* The name of attempt number `attempt` for command at tm:
 * COMMAND_YYYYmmdd_HHMMSS_PID, then .1, .2, ... */
static int rundir_name(char *full, size_t size, const char *command, const struct tm *tm,
		       int attempt)
{
	char stamp[64];

	if (strftime(stamp, sizeof(stamp), "_%Y%m%d_%H%M%S", tm) == 0)
		return -EINVAL;
	if (attempt == 0)
		snprintf(full, size, "%s%s_%ld", command, stamp, (long)getpid());
	else
		snprintf(full, size, "%s%s_%ld.%d", command, stamp, (long)getpid(), attempt);
	return 0;
}

/* Opens output and checks it as a run directory's parent; rd is reset. */
static int rundir_parent(const char *output, struct ks_rundir *rd, struct ks_err *err)
{
	char why[256];
	struct stat st;
	int outfd;

	memset(rd, 0, sizeof(*rd));
	rd->dirfd = -1;
	outfd = open_output(output, err);
	if (outfd < 0)
		return outfd;
	if (fstat(outfd, &st) != 0 || !ks_dir_is_safe(&st, geteuid(), why, sizeof(why))) {
		int rc = ks_err_set(err, -EPERM, "output '%s' %s", output,
				    fstat(outfd, &st) != 0 ? strerror(errno) : why);

		close(outfd);
		return rc;
	}
	return outfd;
}

/* Opens the directory name just made in outfd as rd's, with its path. */
static int rundir_open(int outfd, const char *output, const char *name, struct ks_rundir *rd,
		       struct ks_err *err)
{
	int fd = openat(outfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 || fchmod(fd, KS_DIR_MODE) != 0) {
		int rc = ks_err_set(err, -errno, "cannot open run directory '%s/%s': %s",
				    output, name, strerror(errno));

		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (!rd->path && asprintf(&rd->path, "%s%s%s", output,
				  output[strlen(output) - 1] == '/' ? "" : "/", name) < 0) {
		rd->path = NULL;
		close(fd);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	rd->dirfd = fd;
	return 0;
}

int ks_rundir_create(const char *output, const char *command,
		     time_t time_override, struct ks_rundir *rd,
		     struct ks_err *err)
{
	char full[160];
	struct tm tm;
	time_t now = time_override ? time_override : time(NULL);
	int outfd, rc;

	outfd = rundir_parent(output, rd, err);
	if (outfd < 0)
		return outfd;
	localtime_r(&now, &tm);
	full[0] = '\0';
	for (int attempt = 0; attempt < 100; attempt++) {
		if (rundir_name(full, sizeof(full), command, &tm, attempt)) {
			rc = ks_err_set(err, -EINVAL, "cannot format the time");
			goto out;
		}
		if (mkdirat(outfd, full, KS_DIR_MODE) == 0)
			break;
		if (errno != EEXIST) {
			rc = ks_err_set(err, -errno, "cannot create run directory '%s/%s': %s",
					output, full, strerror(errno));
			goto out;
		}
		full[0] = '\0';
	}
	if (full[0] == '\0') {
		rc = ks_err_set(err, -EEXIST, "no free run directory name in '%s'", output);
		goto out;
	}
	rc = rundir_open(outfd, output, full, rd, err);
out:
	close(outfd);
	return rc;
}

int ks_rundir_reserve(const char *output, const char *command, struct ks_rundir *rd,
		      struct ks_err *err)
{
	struct stat st;
	struct tm tm;
	time_t now = time(NULL);
	int outfd, rc;

	outfd = rundir_parent(output, rd, err);
	if (outfd < 0)
		return outfd;
	localtime_r(&now, &tm);
	for (int attempt = 0; attempt < 100; attempt++) {
		if (rundir_name(rd->name, sizeof(rd->name), command, &tm, attempt)) {
			rc = ks_err_set(err, -EINVAL, "cannot format the time");
			goto fail;
		}
		if (fstatat(outfd, rd->name, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT)
			break;
		rd->name[0] = '\0';
	}
	if (rd->name[0] == '\0') {
		rc = ks_err_set(err, -EEXIST, "no free run directory name in '%s'", output);
		goto fail;
	}
	if (asprintf(&rd->path, "%s%s%s", output, output[strlen(output) - 1] == '/' ? "" : "/",
		     rd->name) < 0) {
		rd->path = NULL;
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	rd->outfd = outfd;
	rd->pending = true;
	return 0;
fail:
	close(outfd);
	return rc;
}

int ks_rundir_make(struct ks_rundir *rd, struct ks_err *err)
{
	char *output;
	int rc;

	if (!rd->pending)
		return rd->dirfd >= 0 ? 0 : ks_err_set(err, -EBADF, "no run directory");
	/* The parent as the user named it, for messages: path less "/NAME". */
	output = strndup(rd->path, strlen(rd->path) - strlen(rd->name) - 1);
	if (!output)
		return ks_err_set(err, -ENOMEM, "out of memory");
	if (mkdirat(rd->outfd, rd->name, KS_DIR_MODE) != 0)
		rc = ks_err_set(err, -errno, "cannot create run directory '%s': %s", rd->path,
				errno == EEXIST ? "another process made it since kscope "
				"started" : strerror(errno));
	else
		rc = rundir_open(rd->outfd, output, rd->name, rd, err);
	free(output);
	close(rd->outfd);
	rd->outfd = -1;
	rd->pending = false;
	return rc;
}

int ks_rundir_create_shared(const char *output, const char *name,
			    const char *sub, struct ks_rundir *rd,
			    struct ks_err *err)
{
	char shared[PATH_MAX];
	struct stat st;
	char why[256];
	int fd, rc;

	memset(rd, 0, sizeof(*rd));
	rd->dirfd = -1;
	if (strchr(name, '/') || strchr(sub, '/') || !name[0] || !sub[0] ||
	    name[0] == '.' || sub[0] == '.')
		return ks_err_set(err, -EINVAL, "bad run directory name '%s/%s'", name, sub);
	if (snprintf(shared, sizeof(shared), "%s/%s", output, name) >= (int)sizeof(shared))
		return ks_err_set(err, -ENAMETOOLONG, "output path too long");
	/* open_output creates what is missing, refusing links on the way. */
	fd = open_output(shared, err);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) != 0 || !ks_dir_is_safe(&st, geteuid(), why, sizeof(why))) {
		close(fd);
		return ks_err_set(err, -EPERM, "'%s' %s", shared, why);
	}
	if (mkdirat(fd, sub, KS_DIR_MODE) != 0) {
		rc = ks_err_set(err, -errno, "cannot create run directory '%s/%s': %s",
				shared, sub, strerror(errno));
		close(fd);
		return rc;
	}
	rd->dirfd = openat(fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(fd);
	if (rd->dirfd < 0 || fchmod(rd->dirfd, KS_DIR_MODE) != 0 ||
	    asprintf(&rd->path, "%s/%s", shared, sub) < 0) {
		rc = ks_err_set(err, -errno, "cannot open run directory '%s/%s': %s",
				shared, sub, strerror(errno));
		if (rd->dirfd >= 0)
			close(rd->dirfd);
		rd->dirfd = -1;
		rd->path = NULL;
		return rc;
	}
	return 0;
}

void ks_rundir_close(struct ks_rundir *rd)
{
	if (rd->pending)
		close(rd->outfd);
	rd->pending = false;
	if (rd->dirfd >= 0)
		close(rd->dirfd);
	free(rd->path);
	rd->path = NULL;
	rd->dirfd = -1;
}

void ks_rundir_discard(struct ks_rundir *rd)
{
	/* Only a directory this run made (not one only reserved, or taken
	 * by another process before ks_rundir_make). */
	if (rd->path && rd->dirfd >= 0 && !rd->pending)
		rmdir(rd->path); /* fails, as it should, unless empty */
	ks_rundir_close(rd);
}

/* ------------------------------------------------------------------ */
/* Output files                                                        */
/* ------------------------------------------------------------------ */

int ks_outfile_open(struct ks_rundir *rd, const char *name,
		    struct ks_outfile *of, struct ks_err *err)
{
	memset(of, 0, sizeof(*of));
	of->fd = -1;
	of->dirfd = rd->dirfd;
	if (!name[0] || strchr(name, '/') || name[0] == '.' ||
	    strlen(name) >= sizeof(of->name))
		return ks_err_set(err, -EINVAL, "bad output file name '%s'", name);
	strcpy(of->name, name);
	snprintf(of->tmpname, sizeof(of->tmpname), ".%s.part", name);
	of->fd = openat(rd->dirfd, of->tmpname,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			KS_FILE_MODE);
	if (of->fd < 0)
		return ks_err_set(err, -errno, "cannot create '%s/%s': %s", rd->path,
				  of->tmpname, strerror(errno));
	if (fchmod(of->fd, KS_FILE_MODE) != 0) {
		int e = errno;

		ks_outfile_abort(of);
		return ks_err_set(err, -e, "cannot set the mode of '%s/%s': %s",
				  rd->path, name, strerror(e));
	}
	return 0;
}

int ks_outfile_write(struct ks_outfile *of, const void *buf, size_t len)
{
	const char *p = buf;

	if (of->error)
		return of->error;
	while (len > 0) {
		ssize_t n = write(of->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			of->error = n < 0 ? -errno : -EIO;
			return of->error;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ks_outfile_printf(struct ks_outfile *of, const char *fmt, ...)
{
	char small[1024], *buf = small;
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return of->error = -EINVAL;
	if ((size_t)n >= sizeof(small)) {
		buf = malloc((size_t)n + 1);
		if (!buf)
			return of->error = -ENOMEM;
		va_start(ap, fmt);
		vsnprintf(buf, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	rc = ks_outfile_write(of, buf, (size_t)n);
	if (buf != small)
		free(buf);
	return rc;
}

int ks_rename_noreplace(int olddirfd, const char *old, int newdirfd,
			const char *new_name)
{
	if (renameat2(olddirfd, old, newdirfd, new_name, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (linkat(olddirfd, old, newdirfd, new_name, 0) != 0)
		return -errno;
	unlinkat(olddirfd, old, 0);
	return 0;
}

int ks_outfile_commit(struct ks_outfile *of, mode_t mode, struct ks_err *err)
{
	int rc = of->error;

	if (of->fd < 0)
		return ks_err_set(err, -EBADF, "'%s' is not open", of->name);
	if (!rc && fsync(of->fd) != 0 && errno != EINVAL)
		rc = -errno;
	if (!rc && fchmod(of->fd, mode) != 0)
		rc = -errno;
	if (close(of->fd) != 0 && !rc)
		rc = -errno;
	of->fd = -1;
	if (!rc)
		rc = ks_rename_noreplace(of->dirfd, of->tmpname, of->dirfd, of->name);
	/* The new name itself must reach the disk too. */
	if (!rc && fsync(of->dirfd) != 0 && errno != EINVAL)
		rc = -errno;
	if (rc) {
		unlinkat(of->dirfd, of->tmpname, 0);
		return ks_err_set(err, rc, "writing '%s' failed: %s", of->name,
				  strerror(-rc));
	}
	return 0;
}

void ks_outfile_abort(struct ks_outfile *of)
{
	if (of->fd >= 0) {
		close(of->fd);
		of->fd = -1;
		unlinkat(of->dirfd, of->tmpname, 0);
	}
}

int ks_outfile_put(struct ks_rundir *rd, const char *name, const void *buf,
		   size_t len, mode_t mode, struct ks_err *err)
{
	struct ks_outfile of;
	int rc = ks_outfile_open(rd, name, &of, err);

	if (rc)
		return rc;
	ks_outfile_write(&of, buf, len);
	return ks_outfile_commit(&of, mode, err);
}
