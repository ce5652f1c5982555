/*
 * The variants' files: kscope tune writes each configuration's copy of
 * the source into a directory of its own, under one directory it creates
 * for the search (variants-XXXXXX), and removes them when done.  Only
 * directories kscope created are removed, with what the build put in
 * them; a symbolic link found there is removed itself, never followed,
 * and every step works on directory descriptors (openat, unlinkat with
 * O_NOFOLLOW), so a path swapped during the search cannot redirect a
 * removal elsewhere.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tune_int.h"

/* Deeper than any build output: a loop guard. */
#define MAX_DEPTH 32

int ks_tune_files_root(const char *dir, char **path, int *fd, struct ks_err *err)
{
	size_t n = strlen(dir) + sizeof("/variants-XXXXXX");
	char *p = malloc(n);
	struct stat st;

	*path = NULL;
	*fd = -1;
	if (!p)
		return ks_err_set(err, -ENOMEM, "out of memory");
	snprintf(p, n, "%s/variants-XXXXXX", dir);
	if (!mkdtemp(p)) {
		int e = errno;

		ks_err_set(err, -e, "cannot create a directory in '%s' for the variants: %s",
			   dir, strerror(e));
		free(p);
		return -e;
	}
	*fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 || fstat(*fd, &st) != 0 || st.st_uid != geteuid()) {
		int e = *fd < 0 ? errno : EPERM;

		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		ks_err_set(err, -e, "cannot open '%s': %s", p, strerror(e));
		free(p);
		return -e;
	}
	*path = p;
	return 0;
}

int ks_tune_files_variant(int rootfd, const char *name, const char *file,
			  const char *text, size_t len, struct ks_err *err)
{
	int dfd, fd, rc = 0;
	size_t done = 0;

	if (mkdirat(rootfd, name, 0700) != 0)
		return ks_err_set(err, -errno, "cannot create the variant directory '%s': %s",
				  name, strerror(errno));
	dfd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return ks_err_set(err, -errno, "cannot open the variant directory '%s': %s",
				  name, strerror(errno));
	fd = openat(dfd, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		rc = ks_err_set(err, -errno, "cannot create '%s/%s': %s", name, file,
				strerror(errno));
		close(dfd);
		return rc;
	}
	while (done < len) {
		ssize_t w = write(fd, text + done, len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = ks_err_set(err, w < 0 ? -errno : -EIO, "cannot write '%s/%s': %s",
					name, file, strerror(w < 0 ? errno : EIO));
			break;
		}
		done += (size_t)w;
	}
	if (close(fd) != 0 && rc == 0)
		rc = ks_err_set(err, -errno, "cannot write '%s/%s': %s", name, file,
				strerror(errno));
	close(dfd);
	return rc;
}

/* Empties the directory open at fd; the first error is kept. */
static int empty_dir(int fd, int depth, const char *name, struct ks_err *err)
{
	DIR *d;
	struct dirent *e;
	int rc = 0, dup_fd;

	if (depth > MAX_DEPTH)
		return ks_err_set(err, -ELOOP, "cannot remove '%s': nested too deep", name);
	dup_fd = dup(fd);
	if (dup_fd < 0)
		return ks_err_set(err, -errno, "cannot remove '%s': %s", name, strerror(errno));
	d = fdopendir(dup_fd);
	if (!d) {
		close(dup_fd);
		return ks_err_set(err, -errno, "cannot remove '%s': %s", name, strerror(errno));
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(fd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int r;

			if (sub < 0) {
				if (!rc)
					rc = ks_err_set(err, -errno, "cannot remove '%s/%s': %s",
							name, e->d_name, strerror(errno));
				continue;
			}
			r = empty_dir(sub, depth + 1, e->d_name, err);
			close(sub);
			if (!rc)
				rc = r;
			if (unlinkat(fd, e->d_name, AT_REMOVEDIR) != 0 && !rc)
				rc = ks_err_set(err, -errno, "cannot remove '%s/%s': %s", name,
						e->d_name, strerror(errno));
		} else if (unlinkat(fd, e->d_name, 0) != 0 && !rc) {
			rc = ks_err_set(err, -errno, "cannot remove '%s/%s': %s", name,
					e->d_name, strerror(errno));
		}
	}
	closedir(d);
	return rc;
}

int ks_tune_files_remove(int dirfd, const char *name, struct ks_err *err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return ks_err_set(err, -errno, "cannot remove '%s': %s", name, strerror(errno));
	}
	rc = empty_dir(fd, 0, name, err);
	close(fd);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && !rc)
		rc = ks_err_set(err, -errno, "cannot remove '%s': %s", name, strerror(errno));
	return rc;
}
