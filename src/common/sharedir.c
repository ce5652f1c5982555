/*
 * sharedir.c: finding share/kscope/<what> next to the object this code is
 * linked into (sharedir.h says why it is relative to that file).
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sharedir.h"

size_t ks_share_dirs(const char *what, char dirs[][4096], size_t max)
{
	/* build/kscope and build/lib/x.so in the build tree; bin/kscope and
	 * lib/x.so installed: share is one level up at most (two are tried,
	 * for a library under lib/kscope/).  The directories are written
	 * without "..", so that a message naming them reads plainly. */
	char real[PATH_MAX], *slash;
	struct link_map *map = NULL;
	Dl_info info;
	size_t n = 0;

	if (!dladdr1((void *)ks_share_dirs, &info, (void **)&map, RTLD_DL_LINKMAP) ||
	    !map)
		return 0;
	if (!map->l_name || !map->l_name[0]) {
		/* The executable itself: dladdr names it by argv[0], which
		 * is a bare name when it was started from PATH. */
		ssize_t len = readlink("/proc/self/exe", real, sizeof(real) - 1);

		if (len <= 0)
			return 0;
		real[len] = '\0';
	} else if (!realpath(map->l_name, real)) {
		return 0;
	}
	for (size_t i = 0; i < KS_SHARE_MAX_DIRS && n < max; i++) {
		/* one directory up each time: the file's own first */
		if (!(slash = strrchr(real, '/')))
			break;
		*slash = '\0';
		if (snprintf(dirs[n], 4096, "%s/share/kscope/%s", real, what) < 4096)
			n++;
	}
	return n;
}

int ks_share_find(const char *what, const char *marker, char *buf, size_t size)
{
	char dirs[KS_SHARE_MAX_DIRS][4096];
	size_t n = ks_share_dirs(what, dirs, KS_SHARE_MAX_DIRS), off = 0;

	for (size_t i = 0; i < n; i++) {
		char path[4200], real[PATH_MAX];
		struct stat st;

		snprintf(path, sizeof path, "%s%s%s", dirs[i], marker ? "/" : "",
			 marker ? marker : "");
		if (stat(path, &st) == 0 && realpath(dirs[i], real) &&
		    strlen(real) < size) {
			snprintf(buf, size, "%s", real);
			return 0;
		}
	}
	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < n && off < size; i++) {
		int k = snprintf(buf + off, size - off, "%s%s", i ? ", " : "", dirs[i]);

		if (k < 0)
			break;
		off += (size_t)k;
	}
	return -ENOENT;
}
