/*
 * Names the frames of a compiled-front-end findings file (rtsym.h).  One
 * libdw session per module, loaded at address 0 (the runtime wrote each
 * frame's address in its module's file); every frame is a return address
 * (of the __tsan_* call at an access, of a call in the shadow stack, of
 * malloc's call), so the address looked up is the one before it, in the
 * call instruction.  Frames are cached by (module, address): the same
 * few come back in most stacks.  Only stack records, and var records of
 * C++ globals (whose symbols are demangled), are parsed; every other
 * line is copied byte for byte.
 */
#include "rtsym.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwsym.h"

struct syms {
	struct ks_dwsym_files files;
	json_t *cache;             /* "module:address" -> the frames */
};

static void syms_free(struct syms *s)
{
	ks_dwsym_files_free(&s->files);
	json_decref(s->cache);
}

struct expand {
	json_t *out;               /* the frames made */
	json_t *ip, *obj;          /* the frame being named */
};

static int add_frame(void *ctx, const struct ks_dwsym_frame *d)
{
	struct expand *x = ctx;
	json_t *f = json_object();

	if (!f)
		return -ENOMEM;
	json_object_set(f, "ip", x->ip);
	json_object_set(f, "obj", x->obj);
	if (d->function) {
		char *name = ks_dwsym_name(d->function);

		if (name)
			json_object_set_new(f, "fn", json_string(name));
		free(name);
	}
	if (d->file && d->line > 0) {
		const char *slash = strrchr(d->file, '/');

		if (slash && slash != d->file) {
			json_object_set_new(f, "file", json_string(slash + 1));
			json_object_set_new(f, "dir", json_stringn(d->file, (size_t)(slash - d->file)));
		} else {
			json_object_set_new(f, "file", json_string(d->file));
		}
		json_object_set_new(f, "line", json_integer(d->line));
	}
	return json_array_append_new(x->out, f) ? -ENOMEM : 0;
}

/* The frames frame f stands for: itself when it has no module address
 * or is named already; else its names, inlined calls first. */
static json_t *frame_expand(struct syms *s, json_t *f)
{
	json_t *obj = json_object_get(f, "obj"), *off = json_object_get(f, "off");
	json_t *ip = json_object_get(f, "ip"), *hit;
	unsigned long long a;
	struct expand x;
	char key[PATH_MAX + 64], *end;
	struct ks_dwsym_file *m;

	if (!json_is_string(obj) || !json_is_string(off) || !json_is_string(ip) ||
	    json_object_get(f, "file"))
		return json_pack("[O]", f);
	a = strtoull(json_string_value(off), &end, 16);
	if (*end)
		return json_pack("[O]", f);
	snprintf(key, sizeof(key), "%s:%llx:%s", json_string_value(obj), a, json_string_value(ip));
	if ((hit = json_object_get(s->cache, key)))
		return json_incref(hit);
	if (!(m = ks_dwsym_file_get(&s->files, json_string_value(obj))) ||
	    !(x.out = json_array()))
		return NULL;
	x.ip = ip;
	x.obj = obj;
	if (ks_dwsym_frames(&m->mod, a ? a - 1 : 0, add_frame, &x) != 0 ||
	    json_array_size(x.out) == 0) {
		json_decref(x.out);
		return NULL;
	}
	json_object_set(s->cache, key, x.out);
	return x.out;
}

/* A var record of a C++ global: its name as people read it (the runtime
 * wrote the symbol); malloc'd, NULL to copy the line as it is. */
static char *var_named(const char *line)
{
	json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL), *n;
	char *name = NULL, *out = NULL;

	if (!o)
		return NULL;
	n = json_object_get(o, "name");
	if (json_is_string(n) && !strncmp(json_string_value(n), "_Z", 2) &&
	    (name = ks_dwsym_name(json_string_value(n)))) {
		json_object_set_new(o, "name", json_string(name));
		out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	}
	free(name);
	json_decref(o);
	return out;
}

/* The stack record line (NUL-terminated, no newline) with its frames
 * named, malloc'd; NULL to copy the line as it is. */
static char *stack_named(struct syms *s, const char *line)
{
	json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, NULL), *frames, *nf;
	char *out = NULL;

	if (!o)
		return NULL;
	frames = json_object_get(o, "frames");
	if (!json_is_array(frames) || !(nf = json_array()))
		goto done;
	for (size_t i = 0; i < json_array_size(frames); i++) {
		json_t *e = frame_expand(s, json_array_get(frames, i));

		if (!e || json_array_extend(nf, e)) {
			json_decref(e);
			json_decref(nf);
			goto done;
		}
		json_decref(e);
	}
	json_object_set_new(o, "frames", nf);
	out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
done:
	json_decref(o);
	return out;
}

int ks_rtsym_file(const char *path, struct ks_err *err)
{
	struct syms s = { 0 };
	char tmp[PATH_MAX + 16], *buf = NULL;
	size_t cap = 0;
	ssize_t n;
	struct stat st;
	FILE *in = NULL, *out = NULL;
	int fd = -1, rc = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.sym", path) >= (int)sizeof(tmp))
		return ks_err_set(err, -ENAMETOOLONG, "%s: name too long", path);
	if (!(in = fopen(path, "re")))
		return ks_err_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fileno(in), &st) != 0 ||
	    (fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 0777)) < 0 ||
	    !(out = fdopen(fd, "w"))) {
		rc = ks_err_set(err, -errno, "cannot write '%s': %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	if (!(s.cache = json_object())) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	while ((n = getline(&buf, &cap, in)) > 0) {
		bool nl = buf[n - 1] == '\n';
		size_t len = (size_t)n - nl;
		char *named = NULL;

		if (nl)
			buf[n - 1] = '\0';
		/* A line with a NUL in it is no record of the runtime's: it
		 * goes out as it came, every byte. */
		if (strlen(buf) != len)
			;
		else if (strstr(buf, "\"rec\":\"stack\"") && strstr(buf, "\"off\":"))
			named = stack_named(&s, buf);
		else if (strstr(buf, "\"rec\":\"var\"") && strstr(buf, "\"name\":\"_Z"))
			named = var_named(buf);
		if (named)
			fputs(named, out);
		else
			fwrite(buf, 1, len, out);
		if (nl)
			fputc('\n', out);
		free(named);
	}
	if (ferror(in)) {
		rc = ks_err_set(err, -EIO, "cannot read '%s'", path);
		goto out;
	}
	if (fflush(out) != 0 || ferror(out)) {
		rc = ks_err_set(err, -EIO, "cannot write '%s'", tmp);
		goto out;
	}
	if (rename(tmp, path) != 0)
		rc = ks_err_set(err, -errno, "cannot rename '%s': %s", tmp, strerror(errno));
out:
	if (out)
		fclose(out);
	if (in)
		fclose(in);
	if (rc)
		unlink(tmp);
	free(buf);
	syms_free(&s);
	return rc;
}
