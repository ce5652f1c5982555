/*
 * The central input checker (the seeds' ArgChecker).
 *
 * Every value that reaches kscope from outside, whether an option, an
 * environment variable or a positional argument, is checked here before
 * anything runs: integers and sizes against their ranges, names against
 * their character set and length, paths for existence, type, permissions,
 * control characters and symbolic links, and output locations for safe
 * ownership and permissions.  A failed check fills a struct ks_err whose
 * message names where the value came from, the bad value (escaped) and what
 * is accepted.  Checks never write to the file system.
 */
#ifndef KS_ARGCHECK_H
#define KS_ARGCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "err.h"
#include "opt.h"

#define KS_NOTE_MAX 1024

/* Checks value (len bytes, which need not be NUL-terminated and may contain
 * NUL, which is rejected) against opt.  origin says where it came from for
 * the message ("option --warm-up", "environment KSCOPE_WARM_UP").  On
 * success stores the converted value at dst, whose type depends on
 * opt->type (see opt.h; strings are malloc'd and owned by the caller), and
 * writes a note for the user into note (empty if none).  Returns 0 or
 * -EINVAL. */
int ks_check_value(const struct ks_opt *opt, const char *origin,
		   const char *value, size_t len, void *dst,
		   char *note, size_t note_size, struct ks_err *err);

/* The pieces, for commands with inputs that are not plain options.  Each
 * writes only the problem into err ("'x' is not an integer"); ks_check_value
 * adds the origin and what is accepted. */
int ks_check_int(const char *value, size_t len, int64_t min, int64_t max,
		 int64_t *out, struct ks_err *err);
int ks_check_size(const char *value, size_t len, int64_t min, int64_t max,
		  int64_t *out, struct ks_err *err);
int ks_check_double(const char *value, size_t len, double min, double max,
		    double *out, struct ks_err *err);
int ks_check_name(const char *value, size_t len, const char *extra,
		  size_t max_len, struct ks_err *err);
int ks_check_text(const char *value, size_t len, size_t max_len,
		  struct ks_err *err);
/* flags: KS_PATH_* of opt.h.  *resolved: malloc'd absolute real path. */
int ks_check_path(const char *value, size_t len, unsigned flags,
		  char **resolved, char *note, size_t note_size,
		  struct ks_err *err);
/* An output location: the directory that will hold run directories.  It
 * may not exist yet (it is created later, mode 0750).  Accepted when the
 * directory that will be its parent, and the location itself if it
 * exists, are owned by the user or root and not writable by group or
 * others unless sticky (like /tmp), and the user can write there.
 * *resolved: malloc'd absolute path with symbolic links resolved. */
int ks_check_output(const char *value, size_t len, char **resolved,
		    char *note, size_t note_size, struct ks_err *err);

/* True if a directory with this stat is safe to create entries in for uid:
 * owned by uid or root, and not writable by group or others unless sticky.
 * Otherwise explains why in why (if not NULL). */
bool ks_dir_is_safe(const struct stat *st, uid_t uid, char *why, size_t size);

/* Writes value into buf quoted for a message: control and non-ASCII bytes
 * as \xNN, long values cut with "...". */
void ks_quote(char *buf, size_t size, const char *value, size_t len);

#endif
