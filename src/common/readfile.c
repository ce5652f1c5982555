/*
 * Reading a whole regular file into memory (readfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readfile.h"

int ks_read_file_at(int dirfd, const char *path, int oflags, size_t max, char **data,
		    size_t *size, struct ks_err *err)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, rc = 0;

	*data = NULL;
	*size = 0;
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | oflags);
	if (fd < 0)
		return ks_err_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = ks_err_set(err, -EINVAL, "'%s' is not a regular file", path);
		goto out;
	}
	if ((unsigned long long)st.st_size > max) {
		rc = ks_err_set(err, -EFBIG, "'%s' is larger than %zu bytes", path, max);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = ks_err_set(err, -ENOMEM, "out of memory reading '%s'", path);
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = ks_err_set(err, -errno, "reading '%s' failed: %s", path,
					strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*data = buf;
	*size = got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}
