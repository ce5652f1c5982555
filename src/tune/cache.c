/*
 * kscope tune --cache: measured results kept between searches, one file
 * per configuration, named by a SHA-256 of what decides the result (the
 * source's bytes, the configuration's keys and values, the build, run and
 * verify commands, and the measurement settings).  A rerun that finds a
 * configuration's file reuses its runs and builds nothing; any change to
 * one of those inputs gives another name, so a stale result is never
 * found.
 *
 * SHA-256 is nettle's.  An entry is a small JSON object read with
 * jansson, like the space.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "tune_int.h"

/* ------------------------------------------------------------------ */
/* SHA-256 (nettle)                                                    */
/* ------------------------------------------------------------------ */

void ks_tune_sha256_init(struct ks_tune_sha256 *h)
{
	sha256_init(&h->ctx);
}

void ks_tune_sha256_update(struct ks_tune_sha256 *h, const void *data, size_t len)
{
	sha256_update(&h->ctx, len, data);
}

void ks_tune_sha256_hex(struct ks_tune_sha256 *h, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_digest(&h->ctx, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = '\0';
}

static void field(struct ks_tune_sha256 *h, const char *tag, const void *data,
		  size_t len)
{
	char head[64];
	int n = snprintf(head, sizeof(head), "%s %zu:", tag, len);

	ks_tune_sha256_update(h, head, (size_t)n);
	ks_tune_sha256_update(h, data, len);
}

static void field_str(struct ks_tune_sha256 *h, const char *tag, const char *s)
{
	field(h, tag, s ? s : "", s ? strlen(s) : 0);
	ks_tune_sha256_update(h, s ? "+" : "-", 1);
}

void ks_tune_cache_key(const struct ks_tune_cache_inputs *in,
		       const struct ks_tune_space *sp, size_t c, char hex[65])
{
	struct ks_tune_sha256 h;

	ks_tune_sha256_init(&h);
	field_str(&h, "kscope-tune-cache", "1");
	field(&h, "source", in->src, in->srclen);
	for (size_t k = 0; k < sp->nkeys; k++) {
		field_str(&h, "key", sp->keys[k]);
		field_str(&h, "value", sp->values[c * sp->nkeys + k]);
	}
	field_str(&h, "build", in->build);
	field_str(&h, "run", in->run);
	field_str(&h, "verify", in->verify);
	field_str(&h, "settings", in->settings);
	ks_tune_sha256_hex(&h, hex);
}

/* ------------------------------------------------------------------ */
/* Entries                                                             */
/* ------------------------------------------------------------------ */

void ks_tune_cache_entry_free(struct ks_tune_cache_entry *e)
{
	free(e->samples);
	free(e->message);
	memset(e, 0, sizeof(*e));
}

int ks_tune_cache_parse(const char *text, size_t len, const char *key,
			struct ks_tune_cache_entry *out, struct ks_err *err)
{
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	json_t *samples, *v;
	const char *status, *k, *msg;
	json_int_t timed;
	size_t i;
	int rc = -EINVAL;

	memset(out, 0, sizeof(*out));
	if (!j)
		return ks_err_set(err, -EINVAL, "not JSON (line %d: %s)", je.line, je.text);
	if (json_unpack_ex(j, &je, JSON_STRICT, "{s:i, s:s, s:s, s:o, s:I, s:s}",
			   "kscope_tune_cache", &(int){ 0 }, "key", &k, "status", &status,
			   "samples_ns", &samples, "program_timed", &timed,
			   "message", &msg) != 0) {
		ks_err_set(err, -EINVAL, "not a cache entry: %s", je.text);
		goto out;
	}
	if (key && strcmp(k, key) != 0) {
		ks_err_set(err, -EINVAL, "its key is %.64s, not its name's", k);
		goto out;
	}
	if (strcmp(status, "ok") == 0)
		out->stopped = false;
	else if (strcmp(status, "stopped early") == 0)
		out->stopped = true;
	else {
		ks_err_set(err, -EINVAL, "status '%.32s'; accepted: ok or stopped early",
			   status);
		goto out;
	}
	if (!json_is_array(samples) || json_array_size(samples) < 1 ||
	    json_array_size(samples) > 1000) {
		ks_err_set(err, -EINVAL, "samples_ns: 1 to 1000 numbers expected");
		goto out;
	}
	if (timed < 0 || (size_t)timed > json_array_size(samples)) {
		ks_err_set(err, -EINVAL, "program_timed: 0 to the number of samples "
			   "expected");
		goto out;
	}
	out->runs = json_array_size(samples);
	out->samples = calloc(out->runs, sizeof(*out->samples));
	out->message = strdup(msg);
	if (!out->samples || !out->message) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	json_array_foreach(samples, i, v) {
		double d = json_is_number(v) ? json_number_value(v) : -1;

		if (!(d >= 0 && d < 1e18)) {
			ks_err_set(err, -EINVAL, "samples_ns: a time must be a number from 0 "
				   "to 1e18 nanoseconds");
			goto out;
		}
		out->samples[i] = d;
	}
	out->program_timed = (size_t)timed;
	rc = 0;
out:
	json_decref(j);
	if (rc)
		ks_tune_cache_entry_free(out);
	return rc;
}

static int entry_path(const char *dir, const char *key, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s.json", dir, key);

	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

int ks_tune_cache_load(const char *dir, const char *key,
		       struct ks_tune_cache_entry *out, struct ks_err *err)
{
	char path[PATH_MAX], *text = NULL;
	size_t size = 0, cap = 0;
	ssize_t n;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	if ((rc = entry_path(dir, key, path, sizeof(path))))
		return ks_err_set(err, rc, "the cache's path is too long");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT
				       : ks_err_set(err, -errno, "cannot open '%s': %s",
						    path, strerror(errno));
	for (;;) {
		if (size == cap) {
			char *p;

			if (cap >= (1u << 20)) {
				rc = ks_err_set(err, -EINVAL, "'%s' is over 1 MiB", path);
				goto out;
			}
			cap = cap ? cap * 2 : 4096;
			if (!(p = realloc(text, cap))) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			text = p;
		}
		n = read(fd, text + size, cap - size);
		if (n < 0) {
			rc = ks_err_set(err, -errno, "cannot read '%s': %s", path,
					strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		size += (size_t)n;
	}
	rc = ks_tune_cache_parse(text, size, key, out, err);
	if (rc == -EINVAL) {
		char why[KS_ERR_MSG_MAX];

		snprintf(why, sizeof(why), "%s", err->msg);
		ks_err_set(err, -EINVAL, "'%s': %s", path, why);
	}
out:
	close(fd);
	free(text);
	return rc;
}

int ks_tune_cache_store(const char *dir, const char *key,
			const struct ks_tune_cache_entry *e, struct ks_err *err)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	json_t *j = NULL, *samples = json_array();
	char *text = NULL;
	int fd = -1, rc = 0;
	size_t len;

	if ((rc = entry_path(dir, key, path, sizeof(path))))
		return ks_err_set(err, rc, "the cache's path is too long");
	snprintf(tmp, sizeof(tmp), "%s/.%s.%ld.tmp", dir, key, (long)getpid());
	for (size_t i = 0; samples && i < e->runs; i++)
		if (json_array_append_new(samples, json_real(e->samples[i])))
			goto nomem;
	if (!samples)
		goto nomem;
	j = json_pack("{s:i, s:s, s:s, s:o, s:I, s:s}", "kscope_tune_cache", 1, "key",
		      key, "status", e->stopped ? "stopped early" : "ok", "samples_ns",
		      samples, "program_timed", (json_int_t)e->program_timed, "message",
		      e->message ? e->message : "");
	samples = NULL; /* j owns it now, or json_pack freed it */
	if (!j || !(text = json_dumps(j, JSON_COMPACT)))
		goto nomem;
	len = strlen(text);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
		rc = ks_err_set(err, -errno, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	if (close(fd) != 0) {
		fd = -1;
		rc = ks_err_set(err, -errno, "cannot write '%s': %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) != 0)
		rc = ks_err_set(err, -errno, "cannot rename '%s' to '%s': %s", tmp, path,
				strerror(errno));
	goto out;
nomem:
	rc = ks_err_set(err, -ENOMEM, "out of memory");
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		unlink(tmp);
	json_decref(samples);
	json_decref(j);
	free(text);
	return rc;
}

int ks_tune_cache_check_dir(const char *dir, struct ks_err *err)
{
	struct stat st;
	char *parent, *slash;
	int rc = 0;

	if (!dir[0])
		return ks_err_set(err, -EINVAL, "option --cache: an empty path; accepted: "
				  "a directory, or a new one's path in an existing "
				  "directory");
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return ks_err_set(err, -EINVAL, "option --cache: '%s' is not a "
					  "directory; accepted: a directory, or a new one's "
					  "path in an existing directory", dir);
		if (access(dir, W_OK | X_OK) != 0)
			return ks_err_set(err, -EINVAL, "option --cache: '%s' is not "
					  "writable; accepted: a directory kscope may write "
					  "to", dir);
		return 0;
	}
	if (errno != ENOENT)
		return ks_err_set(err, -EINVAL, "option --cache: '%s': %s", dir,
				  strerror(errno));
	/* A new directory: its parent must exist and be writable. */
	if (!(parent = strdup(dir)))
		return ks_err_set(err, -ENOMEM, "out of memory");
	while ((slash = strrchr(parent, '/')) && slash[1] == '\0' && slash != parent)
		*slash = '\0';
	slash = strrchr(parent, '/');
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	if (stat(parent, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    access(parent, W_OK | X_OK) != 0)
		rc = ks_err_set(err, -EINVAL, "option --cache: '%s' does not exist and "
				"its parent '%s' is not a writable directory; accepted: a "
				"directory, or a new one's path in an existing directory",
				dir, parent);
	free(parent);
	return rc;
}
