/*
 * The calibration file: where it lives, reading and checking it, and
 * writing it.
 *
 * The file is a cache: kscope op reads it, kscope calibrate writes it, and
 * a damaged or stale file is simply measured again.  So reading is strict
 * (a damaged file is reported with what is wrong, never half used) and
 * writing replaces the old file in one step: a temporary file in the same
 * directory, flushed to disk, renamed over the old one.  Unlike a run's
 * deliverables (src/common/outdir.h), a calibration file is meant to be
 * replaced, so it does not go through ks_outfile_commit, which never
 * replaces a file.  The directory is private (0700): another user who
 * could write there could feed kscope op false ceilings.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "calib_int.h"
#include "readfile.h"

#define MAX_FILE_BYTES (1 << 20)  /* a calibration file is a few KiB */

/* ---------------------------------------------------------------------
 * Where
 * --------------------------------------------------------------------- */

/* $XDG_CACHE_HOME/kscope, else $HOME/.cache/kscope, else the passwd
 * entry's home.  A relative XDG_CACHE_HOME is ignored, as the XDG base
 * directory specification asks. */
static int cache_dir(char *dir, size_t size, struct ks_err *err)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct passwd pw, *ppw = NULL;
	char pwbuf[4096];
	int n;

	if (xdg && xdg[0] == '/') {
		n = snprintf(dir, size, "%s/kscope", xdg);
	} else {
		if (!home || home[0] != '/') {
			if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &ppw) != 0 ||
			    !ppw || !ppw->pw_dir || ppw->pw_dir[0] != '/')
				return ks_err_set(err, -ENOENT, "cannot find the cache "
						  "directory: neither XDG_CACHE_HOME "
						  "nor HOME is set to an absolute path");
			home = ppw->pw_dir;
		}
		n = snprintf(dir, size, "%s/.cache/kscope", home);
	}
	if (n < 0 || (size_t)n >= size)
		return ks_err_set(err, -ENAMETOOLONG, "the cache directory's path is "
				  "too long");
	return 0;
}

static int path_for(const char *key, char *path, size_t size, struct ks_err *err)
{
	char dir[4000];
	int rc = cache_dir(dir, sizeof(dir), err), n;

	if (rc)
		return rc;
	n = snprintf(path, size, "%s/calibration-%s.json", dir, key);
	if (n < 0 || (size_t)n >= size)
		return ks_err_set(err, -ENAMETOOLONG, "the calibration file's path "
				  "is too long");
	return 0;
}

int ks_calib_path(char *path, size_t size, struct ks_err *err)
{
	struct ks_calib_machine m;
	int rc = ks_calib_machine_probe(&m, err);

	return rc ? rc : path_for(m.key, path, size, err);
}

/* The cache directory must be the user's and written by no one else:
 * ceilings planted by another user would mislead kscope op (and a chip
 * planted there, kscope predict). */
int ks_calib_check_dir(const char *dir, struct ks_err *err)
{
	struct stat st;

	if (stat(dir, &st) != 0)
		return ks_err_set(err, -errno, "cannot use '%s': %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return ks_err_set(err, -ENOTDIR, "'%s' is not a directory", dir);
	if (st.st_uid != getuid())
		return ks_err_set(err, -EPERM, "'%s' belongs to another user (uid %u); "
				  "kscope keeps its calibration in a directory of "
				  "your own", dir, (unsigned)st.st_uid);
	if (st.st_mode & 022)
		return ks_err_set(err, -EPERM, "'%s' is writable by other users "
				  "(mode %04o); kscope keeps its calibration in a "
				  "private directory (chmod go-w it)", dir,
				  (unsigned)(st.st_mode & 07777));
	return 0;
}

/* ---------------------------------------------------------------------
 * Reading and checking
 * --------------------------------------------------------------------- */

/* -EINVAL with "calibration file 'PATH' is damaged: ..." */
__attribute__((format(printf, 3, 4)))
static int damaged(struct ks_err *err, const char *path, const char *fmt, ...)
{
	char what[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return ks_err_set(err, -EINVAL, "calibration file '%s' is damaged: %s", path,
			  what);
}

/* A string of printable ASCII, 1 to size-1 bytes, copied into out. */
static bool get_text(json_t *o, const char *key, char *out, size_t size)
{
	json_t *v = json_object_get(o, key);
	const char *s;
	size_t n;

	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	n = json_string_length(v);
	if (n == 0 || n >= size || strlen(s) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	memcpy(out, s, n + 1);
	return true;
}

/* A positive finite number. */
static bool get_rate(json_t *o, const char *key, double *out)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		return false;
	*out = json_number_value(v);
	return isfinite(*out) && *out > 0;
}

/* One "memory" or "compute" array into ceilings. */
static int read_ceilings(json_t *root, const char *array, const char *rate,
			 const char *path, struct ks_calib_ceiling *out,
			 size_t *nout, struct ks_err *err)
{
	json_t *a = json_object_get(root, array), *e;
	size_t i;

	if (!json_is_array(a))
		return damaged(err, path, "\"%s\" is %s, not an array", array,
			       a ? "of the wrong type" : "missing");
	if (json_array_size(a) == 0)
		return damaged(err, path, "\"%s\" has no ceilings", array);
	if (json_array_size(a) > KS_CALIB_MAX)
		return damaged(err, path, "\"%s\" has %zu ceilings, at most %d are "
			       "allowed", array, json_array_size(a), KS_CALIB_MAX);
	json_array_foreach(a, i, e) {
		struct ks_calib_ceiling *ce = &out[i];
		json_t *ws;

		memset(ce, 0, sizeof(*ce));
		if (!json_is_object(e))
			return damaged(err, path, "%s[%zu] is not an object", array, i);
		if (!get_text(e, "name", ce->name, sizeof(ce->name)))
			return damaged(err, path, "%s[%zu].name is not a name of 1 to "
				       "%zu printable characters", array, i,
				       sizeof(ce->name) - 1);
		if (!get_rate(e, rate, &ce->per_s))
			return damaged(err, path, "%s[%zu].%s (%s) is not a positive "
				       "finite number", array, i, rate, ce->name);
		if (json_object_get(e, "how") &&
		    !get_text(e, "how", ce->how, sizeof(ce->how)))
			return damaged(err, path, "%s[%zu].how is not a text of 1 to "
				       "%zu printable characters", array, i,
				       sizeof(ce->how) - 1);
		ws = json_object_get(e, "working_set");
		if (ws) {
			if (!json_is_integer(ws) || json_integer_value(ws) <= 0)
				return damaged(err, path, "%s[%zu].working_set is not a "
					       "positive integer", array, i);
			ce->working_set = (uint64_t)json_integer_value(ws);
		}
	}
	*nout = json_array_size(a);
	return 0;
}

/* An optional "how" text of o into out: absent leaves out empty. */
static bool get_how(json_t *o, const char *key, char *out, size_t size)
{
	return !json_object_get(o, key) || get_text(o, key, out, size);
}

/* The "cuda" object, when it is not null. */
static int read_cuda(json_t *cu, struct ks_calib *c, struct ks_err *err)
{
	const char *path = c->path;
	struct ks_calib_cuda *d = &c->cuda;
	static const struct {
		const char *rate, *how;
		bool need;
		size_t rate_off, how_off;
	} rates[] = {
		{ "bytes_per_s", "bytes_how", true, offsetof(struct ks_calib_cuda, bytes_per_s),
		  offsetof(struct ks_calib_cuda, bytes_how) },
		{ "fp32_flops_per_s", "fp32_how", true, offsetof(struct ks_calib_cuda, fp32),
		  offsetof(struct ks_calib_cuda, fp32_how) },
		{ "fp16_flops_per_s", "fp16_how", false, offsetof(struct ks_calib_cuda, fp16),
		  offsetof(struct ks_calib_cuda, fp16_how) },
		{ "bf16_flops_per_s", "bf16_how", false, offsetof(struct ks_calib_cuda, bf16),
		  offsetof(struct ks_calib_cuda, bf16_how) },
	};
	json_t *v;

	if (!json_is_object(cu))
		return damaged(err, path, "\"cuda\" is neither null nor an object");
	if (!get_text(cu, "device", d->device, sizeof(d->device)))
		return damaged(err, path, "cuda.device is not a name of 1 to %zu printable "
			       "characters", sizeof(d->device) - 1);
	for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		double *rate = (double *)((char *)d + rates[i].rate_off);
		char *how = (char *)d + rates[i].how_off;

		if ((rates[i].need || json_object_get(cu, rates[i].rate)) &&
		    !get_rate(cu, rates[i].rate, rate))
			return damaged(err, path, "cuda.%s is not a positive finite number",
				       rates[i].rate);
		if (!get_how(cu, rates[i].how, how, sizeof(d->bytes_how)))
			return damaged(err, path, "cuda.%s is not a text of 1 to %zu "
				       "printable characters", rates[i].how,
				       sizeof(d->bytes_how) - 1);
	}
	if (!get_how(cu, "driver", d->driver, sizeof(d->driver)))
		return damaged(err, path, "cuda.driver is not a text of 1 to %zu printable "
			       "characters", sizeof(d->driver) - 1);
	if (!get_how(cu, "compute_capability", d->cc, sizeof(d->cc)))
		return damaged(err, path, "cuda.compute_capability is not a text of 1 to "
			       "%zu printable characters", sizeof(d->cc) - 1);
	v = json_object_get(cu, "sms");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 1 << 20)
			return damaged(err, path, "cuda.sms is not a positive integer");
		d->sms = (int)json_integer_value(v);
	}
	c->have_cuda = true;
	return 0;
}

static int read_doc(json_t *root, struct ks_calib *c, struct ks_err *err)
{
	const char *path = c->path;
	json_t *v, *m, *ocl;
	char key[17];
	int rc;

	if (!json_is_object(root))
		return damaged(err, path, "it is not a JSON object");
	v = json_object_get(root, "kscope_calibration");
	if (!json_is_integer(v))
		return damaged(err, path, "\"kscope_calibration\" (the format version) "
			       "is missing or not an integer");
	if (json_integer_value(v) != KS_CALIB_VERSION)
		return damaged(err, path, "format version %" JSON_INTEGER_FORMAT " is not "
			       "one this kscope reads (%d)", json_integer_value(v),
			       KS_CALIB_VERSION);
	if (!get_text(root, "created", c->created, sizeof(c->created)))
		return damaged(err, path, "\"created\" is not a date of at most %zu "
			       "characters", sizeof(c->created) - 1);
	m = json_object_get(root, "machine");
	if (!json_is_object(m))
		return damaged(err, path, "\"machine\" is missing or not an object");
	if (!get_text(m, "key", key, sizeof(key)) || strlen(key) != 16 ||
	    strspn(key, "0123456789abcdef") != 16)
		return damaged(err, path, "machine.key is not 16 hex digits");
	if (strcmp(key, c->machine.key) != 0)
		return damaged(err, path, "it was made for another machine (key %s; "
			       "this machine's is %s)", key, c->machine.key);
	snprintf(c->key, sizeof(c->key), "%s", key);

	rc = read_ceilings(root, "memory", "bytes_per_s", path, c->mem, &c->nmem, err);
	if (!rc)
		rc = read_ceilings(root, "compute", "flops_per_s", path, c->compute,
				   &c->ncompute, err);
	if (rc)
		return rc;

	ocl = json_object_get(root, "opencl");
	if (ocl && !json_is_null(ocl)) {
		if (!json_is_object(ocl))
			return damaged(err, path, "\"opencl\" is neither null nor an "
				       "object");
		if (!get_text(ocl, "device", c->opencl_device, sizeof(c->opencl_device)))
			return damaged(err, path, "opencl.device is not a name of 1 to "
				       "%zu printable characters",
				       sizeof(c->opencl_device) - 1);
		if (!get_rate(ocl, "bytes_per_s", &c->opencl_bytes_per_s))
			return damaged(err, path, "opencl.bytes_per_s is not a positive "
				       "finite number");
		if (!get_rate(ocl, "flops_per_s", &c->opencl_flops_per_s))
			return damaged(err, path, "opencl.flops_per_s is not a positive "
				       "finite number");
		if (json_object_get(ocl, "driver") &&
		    !get_text(ocl, "driver", c->opencl_driver, sizeof(c->opencl_driver)))
			return damaged(err, path, "opencl.driver is not a text of 1 to "
				       "%zu printable characters",
				       sizeof(c->opencl_driver) - 1);
		c->have_opencl = 1;
	}
	v = json_object_get(root, "cuda");
	if (v && !json_is_null(v)) {
		rc = read_cuda(v, c, err);
		if (rc)
			return rc;
	}
	v = json_object_get(root, "quick");
	if (v && !json_is_boolean(v))
		return damaged(err, path, "\"quick\" is not true or false");
	c->quick = json_is_true(v);
	v = json_object_get(root, "threads");
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 1 << 20)
			return damaged(err, path, "\"threads\" is not a positive integer");
		c->threads = (int)json_integer_value(v);
	}

	/* The struct promises fastest first, whatever the file's order. */
	for (size_t a = 1; a < c->nmem; a++)
		for (size_t b = a; b > 0 && c->mem[b].per_s > c->mem[b - 1].per_s; b--) {
			struct ks_calib_ceiling tmp = c->mem[b];

			c->mem[b] = c->mem[b - 1];
			c->mem[b - 1] = tmp;
		}
	return 0;
}

int ks_calib_load(struct ks_calib *c, struct ks_err *err)
{
	json_error_t jerr;
	json_t *root;
	char dir[4000], *buf = NULL;
	size_t got = 0;
	int rc;

	memset(c, 0, sizeof(*c));
	rc = ks_calib_machine_probe(&c->machine, err);
	if (rc)
		return rc;
	rc = path_for(c->machine.key, c->path, sizeof(c->path), err);
	if (rc)
		return rc;
	rc = cache_dir(dir, sizeof(dir), err);
	if (rc)
		return rc;
	if (access(dir, F_OK) == 0) {
		rc = ks_calib_check_dir(dir, err);
		if (rc)
			return rc;
	}
	rc = ks_read_file_at(AT_FDCWD, c->path, 0, MAX_FILE_BYTES, &buf, &got, err);
	if (rc == -ENOENT) {
		rc = ks_err_set(err, -ENOENT, "this machine has no calibration yet (no "
				"file '%s'); run 'kscope calibrate'", c->path);
		goto out;
	}
	if (rc == -EINVAL) {
		rc = damaged(err, c->path, "it is not a regular file");
		goto out;
	}
	if (rc == -EFBIG) {
		rc = damaged(err, c->path, "it is larger than %d bytes", MAX_FILE_BYTES);
		goto out;
	}
	if (rc)
		goto out; /* err names the file and what failed */
	root = json_loadb(buf, got, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		rc = damaged(err, c->path, "invalid JSON at line %d, column %d: %s",
			     jerr.line, jerr.column, jerr.text);
		goto out;
	}
	rc = read_doc(root, c, err);
	json_decref(root);
out:
	free(buf);
	if (rc) {
		/* Nothing half read: the caller gets the path and machine only. */
		struct ks_calib_machine m = c->machine;
		char path[sizeof(c->path)];

		memcpy(path, c->path, sizeof(path));
		memset(c, 0, sizeof(*c));
		c->machine = m;
		memcpy(c->path, path, sizeof(path));
	}
	return rc;
}

/* ---------------------------------------------------------------------
 * Writing
 * --------------------------------------------------------------------- */

int ks_calib_mkdir_p(const char *dir, struct ks_err *err)
{
	char p[4096];
	size_t n = strlen(dir);

	if (n >= sizeof(p))
		return ks_err_set(err, -ENAMETOOLONG, "path too long");
	memcpy(p, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return ks_err_set(err, -errno, "cannot create directory '%s': %s",
					  p, strerror(errno));
		p[i] = i < n ? '/' : '\0';
	}
	return 0;
}

int ks_calib_prepare(struct ks_calib *c, struct ks_err *err)
{
	char dir[4000];
	int rc;

	memset(c, 0, sizeof(*c));
	rc = ks_calib_machine_probe(&c->machine, err);
	if (!rc)
		rc = path_for(c->machine.key, c->path, sizeof(c->path), err);
	if (!rc)
		rc = cache_dir(dir, sizeof(dir), err);
	if (!rc)
		rc = ks_calib_mkdir_p(dir, err);
	if (rc)
		return rc;
	snprintf(c->key, sizeof(c->key), "%s", c->machine.key);
	rc = ks_calib_check_dir(dir, err);
	if (!rc && access(dir, W_OK | X_OK) != 0)
		rc = ks_err_set(err, -errno, "cannot write to '%s': %s", dir,
				strerror(errno));
	return rc;
}

/* Sets o[key] = v (taking v); a NULL v or a failure clears *ok, so that
 * one check at the end covers every allocation. */
static void put(json_t *o, const char *key, json_t *v, bool *ok)
{
	/* json_object_set_new takes v even when it fails. */
	if (!o) {
		json_decref(v);
		*ok = false;
	} else if (!v || json_object_set_new(o, key, v) != 0) {
		*ok = false;
	}
}

static void append(json_t *a, json_t *v, bool *ok)
{
	if (!a) {
		json_decref(v);
		*ok = false;
	} else if (!v || json_array_append_new(a, v) != 0) {
		*ok = false;
	}
}

static json_t *ceilings_json(const struct ks_calib_ceiling *ce, size_t n,
			     const char *rate, bool *ok)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++) {
		json_t *o = json_object();

		put(o, "name", json_string(ce[i].name), ok);
		put(o, rate, json_real(ce[i].per_s), ok);
		if (ce[i].working_set)
			put(o, "working_set", json_integer((json_int_t)ce[i].working_set),
			    ok);
		if (ce[i].how[0])
			put(o, "how", json_string(ce[i].how), ok);
		append(a, o, ok);
	}
	return a;
}

/* The file's JSON, or NULL when out of memory. */
static json_t *calib_json(const struct ks_calib *c)
{
	const struct ks_calib_machine *m = &c->machine;
	json_t *root = json_object(), *jm = json_object(), *caches = json_array(),
	       *devs = json_array(), *ocl = json_null(), *cu = json_null(), *cudevs = NULL;
	bool ok = true;

	for (size_t i = 0; i < m->ncaches; i++) {
		json_t *o = json_object();

		put(o, "level", json_integer(m->caches[i].level), &ok);
		put(o, "type", json_string(m->caches[i].type), &ok);
		put(o, "bytes", json_integer((json_int_t)m->caches[i].bytes), &ok);
		put(o, "shared_cpus", json_integer(m->caches[i].shared_cpus), &ok);
		append(caches, o, &ok);
	}
	for (size_t i = 0; i < m->ndevices; i++)
		append(devs, json_string(m->devices[i]), &ok);
	put(jm, "key", json_string(m->key), &ok);
	put(jm, "cpu", json_string(m->cpu), &ok);
	put(jm, "cpus", json_integer(m->cpus), &ok);
	put(jm, "caches", caches, &ok);
	put(jm, "memory_bytes", json_integer((json_int_t)m->memory_bytes), &ok);
	put(jm, "opencl_devices", devs, &ok);
	/* Only where the key hashes some, as the key itself. */
	if (m->ncuda > 0) {
		cudevs = json_array();
		for (size_t i = 0; i < m->ncuda; i++)
			append(cudevs, json_string(m->cuda_devices[i]), &ok);
		put(jm, "cuda_devices", cudevs, &ok);
	}
	if (c->have_opencl) {
		ocl = json_object();
		put(ocl, "device", json_string(c->opencl_device), &ok);
		if (c->opencl_driver[0])
			put(ocl, "driver", json_string(c->opencl_driver), &ok);
		put(ocl, "bytes_per_s", json_real(c->opencl_bytes_per_s), &ok);
		put(ocl, "flops_per_s", json_real(c->opencl_flops_per_s), &ok);
	}

	if (c->have_cuda) {
		const struct ks_calib_cuda *d = &c->cuda;

		cu = json_object();
		put(cu, "device", json_string(d->device), &ok);
		if (d->driver[0])
			put(cu, "driver", json_string(d->driver), &ok);
		if (d->cc[0])
			put(cu, "compute_capability", json_string(d->cc), &ok);
		if (d->sms > 0)
			put(cu, "sms", json_integer(d->sms), &ok);
		put(cu, "bytes_per_s", json_real(d->bytes_per_s), &ok);
		if (d->bytes_how[0])
			put(cu, "bytes_how", json_string(d->bytes_how), &ok);
		put(cu, "fp32_flops_per_s", json_real(d->fp32), &ok);
		if (d->fp32_how[0])
			put(cu, "fp32_how", json_string(d->fp32_how), &ok);
		if (d->fp16 > 0)
			put(cu, "fp16_flops_per_s", json_real(d->fp16), &ok);
		if (d->fp16 > 0 && d->fp16_how[0])
			put(cu, "fp16_how", json_string(d->fp16_how), &ok);
		if (d->bf16 > 0)
			put(cu, "bf16_flops_per_s", json_real(d->bf16), &ok);
		if (d->bf16 > 0 && d->bf16_how[0])
			put(cu, "bf16_how", json_string(d->bf16_how), &ok);
	}

	put(root, "kscope_calibration", json_integer(KS_CALIB_VERSION), &ok);
	put(root, "created", json_string(c->created), &ok);
	put(root, "quick", json_boolean(c->quick), &ok);
	if (c->threads > 0)
		put(root, "threads", json_integer(c->threads), &ok);
	put(root, "machine", jm, &ok);
	put(root, "memory", ceilings_json(c->mem, c->nmem, "bytes_per_s", &ok), &ok);
	put(root, "compute", ceilings_json(c->compute, c->ncompute, "flops_per_s", &ok),
	    &ok);
	put(root, "opencl", ocl, &ok);
	put(root, "cuda", cu, &ok);
	if (!ok) {
		json_decref(root);
		return NULL;
	}
	return root;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int ks_calib_write_atomic(const char *path, const char *text, struct ks_err *err)
{
	char tmp[4096 + 16], dir[4096];
	const char *slash = strrchr(path, '/');
	int fd, rc = 0, dfd;

	if (!slash || slash == path || strlen(path) >= sizeof(dir))
		return ks_err_set(err, -EINVAL, "'%s' is not in a directory", path);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, slash + 1);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return ks_err_set(err, -errno, "cannot create a file in '%s': %s", dir,
				  strerror(errno));
	rc = write_all(fd, text, strlen(text));
	if (!rc)
		rc = write_all(fd, "\n", 1);
	if (!rc && fchmod(fd, 0600) != 0)
		rc = -errno;
	if (!rc && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		return ks_err_set(err, rc, "writing '%s' failed: %s", path, strerror(-rc));
	}
	/* The rename itself reaches the disk with the directory. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		(void)fsync(dfd);
		close(dfd);
	}
	return 0;
}

int ks_calib_save(const struct ks_calib *c, struct ks_err *err)
{
	char *text = NULL;
	json_t *root;
	int rc;

	if (!c->path[0] || !c->created[0] || strlen(c->key) != 16)
		return ks_err_set(err, -EINVAL, "the calibration to save is incomplete "
				  "(no path, date or key)");
	root = calib_json(c);
	if (root)
		/* Six digits: far finer than what a measurement can tell. */
		text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	json_decref(root);
	if (!text)
		return ks_err_set(err, -ENOMEM, "out of memory writing the calibration");
	rc = ks_calib_write_atomic(c->path, text, err);
	free(text);
	return rc;
}
