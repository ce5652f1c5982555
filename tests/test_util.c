/*
 * The test helpers of test_util.h.
 */
#include "test_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *ks_test_tmpdir(void)
{
	char tmpl[] = "/tmp/kscope-test.XXXXXX";

	if (!mkdtemp(tmpl))
		abort();
	return strdup(tmpl);
}

void ks_test_write_file(const char *path, const char *content, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	size_t n = strlen(content);

	if (fd < 0 || write(fd, content, n) != (ssize_t)n || fchmod(fd, mode) != 0)
		abort();
	close(fd);
}

unsigned char *ks_test_read_file(const char *path, size_t *size)
{
	struct stat st;
	unsigned char *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

static int unlock_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DNR)
		chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void ks_test_rmtree(const char *path)
{
	nftw(path, unlock_one, 16, FTW_PHYS);
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
