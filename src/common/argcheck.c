/*
 * The checks of argcheck.h: one function per kind of input, and
 * ks_check_value, which picks the check from an option table entry and
 * builds the complete message "ORIGIN: PROBLEM; accepted: WHAT".
 */
#include "argcheck.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Quoting and character checks                                        */
/* ------------------------------------------------------------------ */

#define QUOTE_SHOWN 80 /* bytes of a bad value shown in a message */

void ks_quote(char *buf, size_t size, const char *value, size_t len)
{
	size_t o = 0;

	if (size == 0)
		return;
	for (size_t i = 0; i < len && i < QUOTE_SHOWN; i++) {
		unsigned char c = (unsigned char)value[i];
		char tmp[8];
		size_t n;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			tmp[0] = (char)c;
			n = 1;
		} else {
			n = (size_t)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		}
		if (o + n + 4 >= size)
			break;
		memcpy(buf + o, tmp, n);
		o += n;
	}
	if (len > QUOTE_SHOWN && o + 4 < size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

/* Rejects NUL and control characters (and DEL): they have no place in a
 * name, a path or an option value, and they make messages and logs lie. */
static int check_chars(const char *value, size_t len, struct ks_err *err)
{
	char q[QUOTE_SHOWN * 4 + 8];

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];

		if (c < 0x20 || c == 0x7f) {
			ks_quote(q, sizeof(q), value, len);
			return ks_err_set(err, -EINVAL,
					  "'%s' contains a %s (byte 0x%02x at position %zu)",
					  q, c == 0 ? "NUL byte" : "control character",
					  c, i + 1);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Numbers                                                             */
/* ------------------------------------------------------------------ */

/* Copies value into buf as a C string if it is short and has no NUL. */
static int number_text(const char *value, size_t len, char *buf, size_t size,
		       const char *what, struct ks_err *err)
{
	char q[QUOTE_SHOWN * 4 + 8];

	if (len == 0)
		return ks_err_set(err, -EINVAL, "the value is empty");
	if (len >= size || memchr(value, '\0', len)) {
		ks_quote(q, sizeof(q), value, len);
		return ks_err_set(err, -EINVAL, "'%s' is not %s", q, what);
	}
	memcpy(buf, value, len);
	buf[len] = '\0';
	return 0;
}

int ks_check_int(const char *value, size_t len, int64_t min, int64_t max,
		 int64_t *out, struct ks_err *err)
{
	char buf[32], q[QUOTE_SHOWN * 4 + 8], *end;
	long long v;
	int rc;

	rc = number_text(value, len, buf, sizeof(buf), "an integer", err);
	if (rc)
		return rc;
	ks_quote(q, sizeof(q), value, len);
	/* strtoll accepts leading blanks and '+'; a value from a table or the
	 * command line with those is a mistake we would rather point out. */
	if (!(isdigit((unsigned char)buf[0]) ||
	      (buf[0] == '-' && isdigit((unsigned char)buf[1]))))
		return ks_err_set(err, -EINVAL, "'%s' is not an integer", q);
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (*end != '\0')
		return ks_err_set(err, -EINVAL, "'%s' is not an integer", q);
	if (errno == ERANGE || v < min || v > max)
		return ks_err_set(err, -ERANGE, "'%s' is out of range", q);
	*out = v;
	return 0;
}

int ks_check_size(const char *value, size_t len, int64_t min, int64_t max,
		  int64_t *out, struct ks_err *err)
{
	char buf[32], q[QUOTE_SHOWN * 4 + 8], *end;
	unsigned long long v, mult = 1;
	int rc;

	rc = number_text(value, len, buf, sizeof(buf), "a size", err);
	if (rc)
		return rc;
	ks_quote(q, sizeof(q), value, len);
	if (!isdigit((unsigned char)buf[0]))
		return ks_err_set(err, -EINVAL, "'%s' is not a size", q);
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno == ERANGE)
		return ks_err_set(err, -ERANGE, "'%s' is out of range", q);
	switch (*end) {
	case '\0':
	case 'b': case 'B':
		break;
	case 'k': case 'K': mult = 1ull << 10; end++; break;
	case 'm': case 'M': mult = 1ull << 20; end++; break;
	case 'g': case 'G': mult = 1ull << 30; end++; break;
	default:
		return ks_err_set(err, -EINVAL, "'%s' is not a size", q);
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end != '\0')
		return ks_err_set(err, -EINVAL, "'%s' is not a size", q);
	if (v > (unsigned long long)INT64_MAX / mult)
		return ks_err_set(err, -ERANGE, "'%s' is out of range", q);
	v *= mult;
	if ((int64_t)v < min || (int64_t)v > max)
		return ks_err_set(err, -ERANGE, "'%s' is out of range", q);
	*out = (int64_t)v;
	return 0;
}

int ks_check_double(const char *value, size_t len, double min, double max,
		    double *out, struct ks_err *err)
{
	char buf[64], q[QUOTE_SHOWN * 4 + 8], *end;
	double v;
	int rc;

	rc = number_text(value, len, buf, sizeof(buf), "a number", err);
	if (rc)
		return rc;
	ks_quote(q, sizeof(q), value, len);
	/* Plain decimal notation only: no hex floats, inf, nan, or a leading
	 * '+' (which integers do not take either). */
	if (buf[0] == '+')
		return ks_err_set(err, -EINVAL, "'%s' is not a number", q);
	for (const char *p = buf; *p; p++)
		if (!(isdigit((unsigned char)*p) || *p == '.' || *p == '-' ||
		      *p == 'e' || *p == 'E' || *p == '+'))
			return ks_err_set(err, -EINVAL, "'%s' is not a number", q);
	errno = 0;
	v = strtod(buf, &end);
	if (end == buf || *end != '\0' || !isfinite(v))
		return ks_err_set(err, -EINVAL, "'%s' is not a number", q);
	if (errno == ERANGE || v < min || v > max)
		return ks_err_set(err, -ERANGE, "'%s' is out of range", q);
	*out = v;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Names and text                                                      */
/* ------------------------------------------------------------------ */

int ks_check_name(const char *value, size_t len, const char *extra,
		  size_t max_len, struct ks_err *err)
{
	char q[QUOTE_SHOWN * 4 + 8];

	if (len == 0)
		return ks_err_set(err, -EINVAL, "the name is empty");
	if (len > max_len) {
		ks_quote(q, sizeof(q), value, len);
		return ks_err_set(err, -EINVAL, "'%s' is %zu characters long",
				  q, len);
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)value[i];

		if (isalnum(c) && c < 0x80)
			continue;
		if (c != 0 && extra && strchr(extra, c))
			continue;
		ks_quote(q, sizeof(q), value, len);
		if (c < 0x20 || c >= 0x7f)
			return ks_err_set(err, -EINVAL,
					  "'%s' contains byte 0x%02x at position %zu",
					  q, c, i + 1);
		return ks_err_set(err, -EINVAL,
				  "'%s' contains '%c' at position %zu", q, c, i + 1);
	}
	return 0;
}

int ks_check_text(const char *value, size_t len, size_t max_len,
		  struct ks_err *err)
{
	char q[QUOTE_SHOWN * 4 + 8];

	if (len == 0)
		return ks_err_set(err, -EINVAL, "the value is empty");
	if (len > max_len) {
		ks_quote(q, sizeof(q), value, len);
		return ks_err_set(err, -EINVAL, "'%s' is %zu characters long",
				  q, len);
	}
	return check_chars(value, len, err);
}

/* ------------------------------------------------------------------ */
/* Paths                                                               */
/* ------------------------------------------------------------------ */

/* Makes value absolute and lexically normal ("." and ".." and repeated
 * slashes removed) into a malloc'd string, without touching the file
 * system.  Used to tell whether realpath() went through a symbolic link. */
static char *path_normalize(const char *value)
{
	char cwd[PATH_MAX];
	size_t cap, n = 0;
	char *full, *out, *save = NULL, *tok;

	if (value[0] == '/') {
		full = strdup(value);
	} else {
		if (!getcwd(cwd, sizeof(cwd)))
			return NULL;
		if (asprintf(&full, "%s/%s", cwd, value) < 0)
			full = NULL;
	}
	if (!full)
		return NULL;
	cap = strlen(full) + 2;
	out = malloc(cap);
	if (!out) {
		free(full);
		return NULL;
	}
	out[0] = '\0';
	for (tok = strtok_r(full, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			out[n] = '\0';
			continue;
		}
		out[n++] = '/';
		strcpy(out + n, tok);
		n += strlen(tok);
	}
	if (n == 0) {
		out[0] = '/';
		out[1] = '\0';
	}
	free(full);
	return out;
}

static void note_symlink(const char *value, const char *real, char *note,
			 size_t note_size)
{
	char *norm = path_normalize(value);

	if (norm && strcmp(norm, real) != 0)
		snprintf(note, note_size,
			 "'%s' goes through a symbolic link; using '%s'",
			 value, real);
	free(norm);
}

static int path_common(const char *value, size_t len, struct ks_err *err)
{
	char q[QUOTE_SHOWN * 4 + 8];
	int rc;

	if (len == 0)
		return ks_err_set(err, -EINVAL, "the path is empty");
	rc = check_chars(value, len, err);
	if (rc)
		return rc;
	if (len >= PATH_MAX) {
		ks_quote(q, sizeof(q), value, len);
		return ks_err_set(err, -ENAMETOOLONG,
				  "'%s' is longer than %d bytes", q, PATH_MAX - 1);
	}
	return 0;
}

int ks_check_path(const char *value, size_t len, unsigned flags,
		  char **resolved, char *note, size_t note_size,
		  struct ks_err *err)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct stat st;
	int rc;

	if (note_size)
		note[0] = '\0';
	rc = path_common(value, len, err);
	if (rc)
		return rc;
	memcpy(path, value, len);
	path[len] = '\0';

	if (lstat(path, &st) != 0 || !realpath(path, real)) {
		int e = errno;

		if (e == ENOENT && lstat(path, &st) == 0)
			return ks_err_set(err, -ENOENT,
					  "'%s' is a symbolic link to nothing", path);
		if (e == ENOENT)
			return ks_err_set(err, -ENOENT, "'%s' does not exist", path);
		if (e == ENOTDIR)
			return ks_err_set(err, -ENOTDIR,
					  "'%s': a part of the path is not a directory", path);
		return ks_err_set(err, -e, "'%s' cannot be reached: %s", path,
				  strerror(e));
	}
	if (stat(real, &st) != 0)
		return ks_err_set(err, -errno, "'%s' cannot be reached: %s",
				  path, strerror(errno));
	if ((flags & KS_PATH_FILE) && !S_ISREG(st.st_mode))
		return ks_err_set(err, -EINVAL, "'%s' is not a regular file", path);
	if ((flags & KS_PATH_DIR) && !S_ISDIR(st.st_mode))
		return ks_err_set(err, -ENOTDIR, "'%s' is not a directory", path);
	if ((flags & KS_PATH_READ) &&
	    faccessat(AT_FDCWD, real, R_OK, AT_EACCESS) != 0)
		return ks_err_set(err, -EACCES, "'%s' is not readable by you", path);
	if ((flags & KS_PATH_EXEC) &&
	    (faccessat(AT_FDCWD, real, X_OK, AT_EACCESS) != 0 ||
	     (S_ISREG(st.st_mode) && !(st.st_mode & 0111))))
		return ks_err_set(err, -EACCES, "'%s' is not executable by you",
				  path);
	if (note_size)
		note_symlink(path, real, note, note_size);
	*resolved = strdup(real);
	if (!*resolved)
		return ks_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Output locations                                                    */
/* ------------------------------------------------------------------ */

bool ks_dir_is_safe(const struct stat *st, uid_t uid, char *why, size_t size)
{
	if (st->st_uid != uid && st->st_uid != 0) {
		if (why)
			snprintf(why, size, "is owned by uid %u, not by you (uid %u) or root",
				 (unsigned)st->st_uid, (unsigned)uid);
		return false;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		if (why)
			snprintf(why, size,
				 "is writable by group or others and not sticky (mode %04o)",
				 (unsigned)(st->st_mode & 07777));
		return false;
	}
	return true;
}

/* Checks dir (an existing absolute real path): a directory, safe, and,
 * if need_write, writable and searchable by us (the directory kscope
 * creates entries in; its parent only has to be safe). */
static int check_parent_dir(const char *value, const char *role,
			    const char *dir, bool need_write, struct ks_err *err)
{
	struct stat st;
	char why[256];

	if (stat(dir, &st) != 0)
		return ks_err_set(err, -errno, "'%s': %s '%s' cannot be reached: %s",
				  value, role, dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ks_err_set(err, -ENOTDIR, "'%s': %s '%s' is not a directory",
				  value, role, dir);
	if (!ks_dir_is_safe(&st, geteuid(), why, sizeof(why)))
		return ks_err_set(err, -EPERM, "'%s': %s '%s' %s", value, role,
				  dir, why);
	if (need_write && faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
		return ks_err_set(err, -EACCES, "'%s': %s '%s' is not writable by you",
				  value, role, dir);
	return 0;
}

int ks_check_output(const char *value, size_t len, char **resolved,
		    char *note, size_t note_size, struct ks_err *err)
{
	char path[PATH_MAX], real[PATH_MAX], parent[PATH_MAX];
	char *abs = NULL, *tail, *out = NULL;
	struct stat st;
	size_t cut;
	int rc;

	if (note_size)
		note[0] = '\0';
	rc = path_common(value, len, err);
	if (rc)
		return rc;
	memcpy(path, value, len);
	path[len] = '\0';

	/* Find the longest prefix that exists; the rest will be created. */
	abs = path_normalize(path);
	if (!abs)
		return ks_err_set(err, -ENOMEM, "'%s' cannot be made absolute", path);
	if (strlen(abs) >= PATH_MAX) {
		free(abs);
		return ks_err_set(err, -ENAMETOOLONG, "'%s' is too long", path);
	}
	/* Look the typed path up first: lexical ".." removal is wrong after a
	 * symbolic link, so where the path exists the kernel decides. */
	if (stat(path, &st) == 0) {
		if (!realpath(path, real)) {
			rc = ks_err_set(err, -errno, "'%s' cannot be resolved: %s",
					path, strerror(errno));
			goto out;
		}
		cut = strlen(abs);
	} else {
		if (errno != ENOENT) {
			rc = ks_err_set(err, -errno, "'%s' cannot be reached: %s",
					path, strerror(errno));
			goto out;
		}
		cut = strlen(abs);
		for (;;) {
			while (cut > 1 && abs[cut - 1] != '/')
				cut--;
			if (cut > 1)
				cut--; /* drop the slash */
			else
				cut = 1; /* the root */
			memcpy(parent, abs, cut);
			parent[cut] = '\0';
			if (stat(parent, &st) == 0)
				break;
			if (errno != ENOENT) {
				rc = ks_err_set(err, -errno,
						"'%s': '%s' cannot be reached: %s",
						path, parent, strerror(errno));
				goto out;
			}
			if (cut == 1) {
				rc = ks_err_set(err, -ENOENT, "'%s': no part exists", path);
				goto out;
			}
		}
		if (!realpath(parent, real)) {
			rc = ks_err_set(err, -errno, "'%s' cannot be resolved: %s",
					parent, strerror(errno));
			goto out;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc = ks_err_set(err, -ENOTDIR, "'%s': '%s' is not a directory",
					path, parent);
			goto out;
		}
	}
	tail = abs + cut; /* "" or "/missing/parts" */

	if (*tail == '\0') {
		/* The location exists: it must be a safe, writable directory,
		 * and so must its parent. */
		char *slash;

		if (!S_ISDIR(st.st_mode)) {
			rc = ks_err_set(err, -ENOTDIR, "'%s' is not a directory", path);
			goto out;
		}
		rc = check_parent_dir(path, "the directory", real, true, err);
		if (rc)
			goto out;
		strcpy(parent, real);
		slash = strrchr(parent, '/');
		if (slash == parent)
			parent[1] = '\0';
		else if (slash)
			*slash = '\0';
		rc = check_parent_dir(path, "its parent directory", parent, false, err);
		if (rc)
			goto out;
		out = strdup(real);
	} else {
		rc = check_parent_dir(path, "its parent directory", real, true, err);
		if (rc)
			goto out;
		if (asprintf(&out, "%s%s", strcmp(real, "/") ? real : "", tail) < 0)
			out = NULL;
	}
	if (!out) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (strlen(out) >= PATH_MAX - 64) {
		rc = ks_err_set(err, -ENAMETOOLONG,
				"'%s' leaves no room for run directory names", path);
		free(out);
		goto out;
	}
	if (note_size && strcmp(out, abs) != 0)
		snprintf(note, note_size,
			 "'%s' goes through a symbolic link; using '%s'", path, out);
	*resolved = out;
	rc = 0;
out:
	free(abs);
	return rc;
}

/* ------------------------------------------------------------------ */
/* One option table entry                                              */
/* ------------------------------------------------------------------ */

int ks_check_value(const struct ks_opt *opt, const char *origin,
		   const char *value, size_t len, void *dst,
		   char *note, size_t note_size, struct ks_err *err)
{
	struct ks_err e;
	char accepted[512];
	size_t max_len = opt->max_len ? opt->max_len : 4096;
	char *s = NULL;
	int rc = 0;

	ks_err_clear(&e);
	if (note_size)
		note[0] = '\0';
	switch (opt->type) {
	case KS_OPT_FLAG: {
		static const char *const yes[] = { "1", "yes", "on", "true", NULL };
		static const char *const no[] = { "0", "no", "off", "false", NULL };
		char q[QUOTE_SHOWN * 4 + 8];

		for (int i = 0; yes[i]; i++)
			if (strlen(yes[i]) == len && memcmp(yes[i], value, len) == 0) {
				*(bool *)dst = true;
				return 0;
			}
		for (int i = 0; no[i]; i++)
			if (strlen(no[i]) == len && memcmp(no[i], value, len) == 0) {
				*(bool *)dst = false;
				return 0;
			}
		ks_quote(q, sizeof(q), value, len);
		rc = ks_err_set(&e, -EINVAL, "'%s' is not a yes/no value", q);
		break;
	}
	case KS_OPT_INT:
		rc = ks_check_int(value, len, opt->min, opt->max, dst, &e);
		break;
	case KS_OPT_SIZE:
		rc = ks_check_size(value, len, opt->min, opt->max, dst, &e);
		break;
	case KS_OPT_DOUBLE:
		rc = ks_check_double(value, len, opt->dmin, opt->dmax, dst, &e);
		break;
	case KS_OPT_ENUM: {
		char q[QUOTE_SHOWN * 4 + 8];

		for (int i = 0; opt->choices[i]; i++)
			if (strlen(opt->choices[i]) == len &&
			    memcmp(opt->choices[i], value, len) == 0) {
				*(int *)dst = i;
				return 0;
			}
		ks_quote(q, sizeof(q), value, len);
		if (len)
			rc = ks_err_set(&e, -EINVAL, "'%s' is not a choice", q);
		else
			rc = ks_err_set(&e, -EINVAL, "the value is empty");
		break;
	}
	case KS_OPT_NAME:
		rc = ks_check_name(value, len, opt->name_extra, max_len, &e);
		if (!rc)
			s = strndup(value, len);
		break;
	case KS_OPT_STRING:
		rc = ks_check_text(value, len, max_len, &e);
		if (!rc)
			s = strndup(value, len);
		break;
	case KS_OPT_PATH:
		rc = ks_check_path(value, len, opt->flags, &s, note, note_size, &e);
		break;
	case KS_OPT_OUTPUT:
		rc = ks_check_output(value, len, &s, note, note_size, &e);
		break;
	}
	if (rc == 0 && (opt->type == KS_OPT_NAME || opt->type == KS_OPT_STRING ||
			opt->type == KS_OPT_PATH || opt->type == KS_OPT_OUTPUT)) {
		if (!s)
			return ks_err_set(err, -ENOMEM, "%s: out of memory", origin);
		*(char **)dst = s;
	}
	if (rc == 0)
		return 0;
	ks_opt_describe(opt, accepted, sizeof(accepted));
	return ks_err_set(err, rc == -ENOMEM ? rc : -EINVAL,
			  "%s: %s; accepted: %s", origin, e.msg, accepted);
}
