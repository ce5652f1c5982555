/*
 * Reading a whole regular file into memory, with a size limit: the one
 * way kscope reads its inputs and its own files (pack's inputs, kscope
 * op's raw files, the calibration file).
 */
#ifndef KS_READFILE_H
#define KS_READFILE_H

#include <stddef.h>

#include "err.h"

/* Reads path (relative to dirfd, or AT_FDCWD) into *data, malloc'd, NUL
 * added after the *size bytes (the caller frees it).  The file is opened
 * with O_CLOEXEC | oflags (e.g. O_NOFOLLOW).  Errors, with err naming
 * the file: the open's -errno ("cannot open"), -EINVAL when it is not a
 * regular file, -EFBIG when it has more than max bytes, -ENOMEM, and
 * a read's -errno.  A file that shrinks while read gives what is there. */
int ks_read_file_at(int dirfd, const char *path, int oflags, size_t max, char **data,
		    size_t *size, struct ks_err *err);

#endif
