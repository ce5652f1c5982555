/*
 * Reading one collected launch's raw files (context.json, measure.json,
 * the kernel source; opraw.h) into struct op_launch, and deriving what
 * the deliverables show: duration statistics, bytes and bandwidth, FLOPs,
 * work-groups and the roofline placement.
 *
 * The raw files come from a program that may have died while writing, or
 * from a different version of the runtime, so nothing in them is trusted:
 * every member is type-checked, a wrong one is reported once per file (the
 * first problem and how many more) and treated as unknown.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opraw.h"
#include "oppost_int.h"
#include "readfile.h"

/* Raw files larger than this are not read (a context.json is a few KiB). */
#define RAW_MAX (64 << 20)

void ks_oppost_warnf(const struct ks_oppost_opts *o, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	if (!o || !o->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o->warn(o->warn_ctx, msg);
}

void ks_oppost_sizes(char *out, size_t size, const uint64_t *v, int n)
{
	size_t off = 0;

	if (n <= 0) {
		snprintf(out, size, "-");
		return;
	}
	out[0] = '\0';
	for (int i = 0; i < n && off < size; i++)
		off += (size_t)snprintf(out + off, size - off, "%s%llu", i ? "x" : "",
					(unsigned long long)v[i]);
}

/* ------------------------------------------------------------------ */
/* Checked access to JSON members                                      */
/* ------------------------------------------------------------------ */

/* The file being read and its problems. */
struct src {
	const struct ks_oppost_opts *o;
	const char *rel, *file;
	unsigned problems;
	char first[300];
};

static void problem(struct src *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void problem(struct src *s, const char *fmt, ...)
{
	va_list ap;

	if (s->problems++ == 0) {
		va_start(ap, fmt);
		vsnprintf(s->first, sizeof(s->first), fmt, ap);
		va_end(ap);
	}
}

static void report_problems(struct src *s)
{
	if (!s->problems)
		return;
	if (s->problems == 1)
		ks_oppost_warnf(s->o, "%s/%s: %s; it is left out of the deliverables",
				s->rel, s->file, s->first);
	else
		ks_oppost_warnf(s->o, "%s/%s: %s, and %u more problems; they are left "
				"out of the deliverables", s->rel, s->file, s->first,
				s->problems - 1);
}

/* A string member into out; absent or null leaves out empty. */
static void get_str(struct src *s, json_t *obj, const char *key, char *out, size_t size)
{
	json_t *v = json_object_get(obj, key);

	out[0] = '\0';
	if (!v || json_is_null(v))
		return;
	if (!json_is_string(v)) {
		problem(s, "\"%s\" is not a string", key);
		return;
	}
	snprintf(out, size, "%s", json_string_value(v));
	/* Control characters would break a CSV row or a terminal. */
	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/* A non-negative integer member; -1 when absent, null or wrong. */
static long long get_int(struct src *s, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return -1;
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		problem(s, "\"%s\" is not a non-negative integer", key);
		return -1;
	}
	return json_integer_value(v);
}

/* 1, 0, or -1 when absent or wrong. */
static int get_bool(struct src *s, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return -1;
	if (!json_is_boolean(v)) {
		problem(s, "\"%s\" is not true or false", key);
		return -1;
	}
	return json_is_true(v);
}

/* An array of non-negative integers into *out (malloc'd, *n entries). */
static int get_u64_array(struct src *s, json_t *obj, const char *key, uint64_t **out,
			 size_t *n)
{
	json_t *a = json_object_get(obj, key), *v;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a)) {
		problem(s, "\"%s\" is not an array", key);
		return 0;
	}
	if (json_array_size(a) == 0)
		return 0;
	*out = malloc(json_array_size(a) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			problem(s, "\"%s\"[%zu] is not a non-negative integer", key, i);
			free(*out);
			*out = NULL;
			*n = 0;
			return 0;
		}
		(*out)[(*n)++] = (uint64_t)json_integer_value(v);
	}
	return 0;
}

/* Reads a whole file of dirfd into a JSON value; NULL with a warning
 * when it is missing or damaged. */
static json_t *load_json(int dirfd, const char *rel, const char *file,
			 const struct ks_oppost_opts *o, bool quiet_missing)
{
	json_error_t jerr;
	struct ks_err err;
	char *buf = NULL;
	json_t *j = NULL;
	size_t got = 0;
	int rc = ks_read_file_at(dirfd, file, O_NOFOLLOW, RAW_MAX, &buf, &got, &err);

	if (rc == -EINVAL || rc == -EFBIG) {
		ks_oppost_warnf(o, "%s/%s is not a regular file of at most %d MiB", rel,
				file, RAW_MAX >> 20);
		return NULL;
	}
	if (rc) {
		if (rc != -ENOENT || !quiet_missing)
			ks_oppost_warnf(o, "%s/%s cannot be read: %s", rel, file,
					strerror(-rc));
		return NULL;
	}
	j = json_loadb(buf, got, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		ks_oppost_warnf(o, "%s/%s is damaged (invalid JSON at line %d, column %d: "
				"%s); the deliverables lack what it holds", rel, file,
				jerr.line, jerr.column, jerr.text);
	else if (!json_is_object(j)) {
		ks_oppost_warnf(o, "%s/%s is damaged (not a JSON object); the "
				"deliverables lack what it holds", rel, file);
		json_decref(j);
		j = NULL;
	}
	free(buf);
	return j;
}

/* ------------------------------------------------------------------ */
/* context.json                                                        */
/* ------------------------------------------------------------------ */

static void read_work(struct src *s, json_t *w, struct op_work *work)
{
	static const char *const keys[] = { "global", "local", "offset" };
	uint64_t *dst[] = { work->global, work->local, work->offset };
	bool *has[] = { NULL, &work->has_local, &work->has_offset };
	long long dim;

	memset(work, 0, sizeof(*work));
	if (!json_is_object(w)) {
		if (w && !json_is_null(w))
			problem(s, "\"work\" is not an object");
		return;
	}
	dim = get_int(s, w, "dim");
	if (dim < 1 || dim > 3) {
		if (dim != -1)
			problem(s, "\"work\".\"dim\" is %lld, not 1 to 3", dim);
		return;
	}
	for (int k = 0; k < 3; k++) {
		uint64_t *v;
		size_t n;

		if (get_u64_array(s, w, keys[k], &v, &n) < 0)
			return;
		if (n == 0) {
			free(v);
			continue;
		}
		if (n != (size_t)dim) {
			problem(s, "\"work\".\"%s\" has %zu sizes for %lld dimensions",
				keys[k], n, dim);
			free(v);
			if (k == 0)
				return;
			continue;
		}
		memcpy(dst[k], v, n * sizeof(*v));
		free(v);
		if (has[k])
			*has[k] = true;
	}
	work->dim = work->global[0] ? (int)dim : 0;
}

static int read_args(struct src *s, json_t *a, struct op_arg **out, size_t *n)
{
	json_t *v;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a)) {
		problem(s, "\"args\" is not an array");
		return 0;
	}
	if (json_array_size(a) == 0)
		return 0;
	*out = calloc(json_array_size(a), sizeof(**out));
	if (!*out)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		struct op_arg *g = &(*out)[*n];
		json_t *val, *buf;

		if (!json_is_object(v)) {
			problem(s, "\"args\"[%zu] is not an object", i);
			continue;
		}
		g->index = get_int(s, v, "index");
		if (g->index < 0)
			g->index = (long long)i;
		get_str(s, v, "name", g->name, sizeof(g->name));
		get_str(s, v, "type_name", g->type_name, sizeof(g->type_name));
		get_str(s, v, "address", g->address, sizeof(g->address));
		get_str(s, v, "access", g->access, sizeof(g->access));
		get_str(s, v, "kind", g->kind, sizeof(g->kind));
		g->size = get_int(s, v, "size");
		val = json_object_get(v, "value");
		if (json_is_number(val)) {
			g->has_value = true;
			g->value = json_number_value(val);
		} else if (val && !json_is_null(val)) {
			problem(s, "\"args\"[%zu].\"value\" is not a number", i);
		}
		g->buf_bytes = -1;
		buf = json_object_get(v, "buffer");
		if (json_is_object(buf)) {
			json_t *flags = json_object_get(buf, "flags"), *f, *sub;
			size_t k, off = 0;

			g->is_buffer = true;
			g->buf_bytes = get_int(s, buf, "bytes");
			if (json_is_array(flags))
				json_array_foreach(flags, k, f)
					if (json_is_string(f) && off < sizeof(g->flags))
						off += (size_t)snprintf(g->flags + off,
									sizeof(g->flags) - off,
									"%s%s", off ? "|" : "",
									json_string_value(f));
			sub = json_object_get(buf, "sub_buffer_of");
			g->sub_buffer = sub && !json_is_null(sub);
		} else if (buf && !json_is_null(buf)) {
			problem(s, "\"args\"[%zu].\"buffer\" is not an object", i);
		}
		if (!g->kind[0] && g->is_buffer)
			snprintf(g->kind, sizeof(g->kind), "buffer");
		(*n)++;
	}
	return 0;
}

static int read_context(int dirfd, struct op_launch *l, const struct ks_oppost_opts *o)
{
	struct src s = { .o = o, .rel = l->rel, .file = KS_OP_CONTEXT_FILE };
	json_t *j = load_json(dirfd, l->rel, KS_OP_CONTEXT_FILE, o, false), *v;
	char name[256];
	int rc = 0;

	if (!j)
		return 0;
	l->have_context = true;
	get_str(&s, j, "kind", l->kind, sizeof(l->kind));
	get_str(&s, j, "name", name, sizeof(name));
	if (name[0])
		snprintf(l->name, sizeof(l->name), "%s", name);
	/* Known from the directory name already; kept unless stated here. */
	{
		long long index = get_int(&s, j, "index"), pid = get_int(&s, j, "pid");

		if (index >= 0)
			l->index = index;
		if (pid >= 0)
			l->pid = pid;
	}
	l->tid = get_int(&s, j, "tid");
	v = json_object_get(j, "platform");
	if (json_is_object(v)) {
		get_str(&s, v, "name", l->platform_name, sizeof(l->platform_name));
		get_str(&s, v, "version", l->platform_version, sizeof(l->platform_version));
	}
	v = json_object_get(j, "device");
	if (json_is_object(v)) {
		get_str(&s, v, "name", l->device_name, sizeof(l->device_name));
		get_str(&s, v, "vendor", l->device_vendor, sizeof(l->device_vendor));
		get_str(&s, v, "version", l->device_version, sizeof(l->device_version));
		get_str(&s, v, "driver_version", l->driver_version, sizeof(l->driver_version));
		get_str(&s, v, "type", l->device_type, sizeof(l->device_type));
		l->compute_units = get_int(&s, v, "compute_units");
		l->max_clock_mhz = get_int(&s, v, "max_clock_mhz");
		l->global_mem_bytes = get_int(&s, v, "global_mem_bytes");
		l->cache_bytes = get_int(&s, v, "global_mem_cache_bytes");
		l->local_mem_bytes = get_int(&s, v, "local_mem_bytes");
		v = json_object_get(v, "clocks");
		if (json_is_object(v)) {
			l->sm_clock_mhz = get_int(&s, v, "sm_mhz");
			l->mem_clock_mhz = get_int(&s, v, "mem_mhz");
			l->mem_max_clock_mhz = get_int(&s, v, "mem_max_mhz");
			if (get_int(&s, v, "sm_max_mhz") >= 0)
				l->max_clock_mhz = get_int(&s, v, "sm_max_mhz");
		} else if (v) {
			problem(&s, "\"clocks\" is not an object");
		}
	} else if (v) {
		problem(&s, "\"device\" is not an object");
	}
	v = json_object_get(j, "program");
	if (json_is_object(v)) {
		get_str(&s, v, "origin", l->program_origin, sizeof(l->program_origin));
		get_str(&s, v, "file", l->program_file, sizeof(l->program_file));
		l->program_bytes = get_int(&s, v, "bytes");
		get_str(&s, v, "build_options", l->build_options, sizeof(l->build_options));
		/* The file is named by the runtime; only a plain name in this
		 * directory is looked at. */
		if (l->program_file[0] && (strchr(l->program_file, '/') ||
					   l->program_file[0] == '.')) {
			problem(&s, "\"program\".\"file\" is not a file name");
			l->program_file[0] = '\0';
		}
	} else if (v) {
		problem(&s, "\"program\" is not an object");
	}
	read_work(&s, json_object_get(j, "work"), &l->work);
	rc = read_args(&s, json_object_get(j, "args"), &l->args, &l->nargs);
	v = json_object_get(j, "queue");
	if (json_is_object(v)) {
		l->out_of_order = get_bool(&s, v, "out_of_order") == 1;
		l->profiling_by_program = get_bool(&s, v, "profiling_by_program") == 1;
	}
	v = json_object_get(j, "launches");
	if (!rc && json_is_array(v) && json_array_size(v)) {
		json_t *e;
		size_t i;

		l->subs = calloc(json_array_size(v), sizeof(*l->subs));
		if (!l->subs)
			rc = -ENOMEM;
		json_array_foreach(v, i, e) {
			struct op_sublaunch *sl;

			if (rc)
				break;
			if (!json_is_object(e)) {
				problem(&s, "\"launches\"[%zu] is not an object", i);
				continue;
			}
			sl = &l->subs[l->nsubs++];
			get_str(&s, e, "name", sl->name, sizeof(sl->name));
			read_work(&s, json_object_get(e, "work"), &sl->work);
			rc = read_args(&s, json_object_get(e, "args"), &sl->args, &sl->nargs);
		}
	}
	report_problems(&s);
	json_decref(j);
	return rc;
}

/* ------------------------------------------------------------------ */
/* measure.json                                                        */
/* ------------------------------------------------------------------ */

static int add_pass(struct op_launch *l, const struct op_pass *p)
{
	struct op_pass *v = realloc(l->pass, (l->npass + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->pass = v;
	l->pass[l->npass++] = *p;
	return 0;
}

/* "hardware": the platform's counters of one more run (CUDA: CUPTI). */
static void read_hardware(struct src *s, json_t *h, struct op_launch *l)
{
	json_t *m;

	l->hw_supported = -1;
	l->hw_read = l->hw_written = l->hw_occupancy_pct = l->hw_time_us = NAN;
	if (!h || json_is_null(h))
		return;
	if (!json_is_object(h)) {
		problem(s, "\"hardware\" is not an object");
		return;
	}
	l->hw_supported = get_bool(s, h, "supported");
	get_str(s, h, "source", l->hw_source, sizeof(l->hw_source));
	get_str(s, h, "reason", l->hw_reason, sizeof(l->hw_reason));
	m = json_object_get(h, "metrics");
	if (l->hw_supported != 1 || !json_is_object(m))
		return;
	if (json_is_number(json_object_get(m, "dram__bytes_read.sum")))
		l->hw_read = json_number_value(json_object_get(m, "dram__bytes_read.sum"));
	if (json_is_number(json_object_get(m, "dram__bytes_write.sum")))
		l->hw_written = json_number_value(json_object_get(m, "dram__bytes_write.sum"));
	if (json_is_number(json_object_get(m, "sm__warps_active.avg.pct_of_peak_sustained_active")))
		l->hw_occupancy_pct = json_number_value(
			json_object_get(m, "sm__warps_active.avg.pct_of_peak_sustained_active"));
	if (json_is_number(json_object_get(m, "gpu__time_duration.sum")))
		l->hw_time_us = json_number_value(json_object_get(m, "gpu__time_duration.sum")) /
				1e3;
}

static int read_counters(struct src *s, json_t *c, struct op_launch *l)
{
	json_t *per, *first, *v;
	const char *key;
	int sup;

	if (!c || json_is_null(c))
		return 0;
	if (!json_is_object(c)) {
		problem(s, "\"counters\" is not an object");
		return 0;
	}
	sup = get_bool(s, c, "supported");
	l->counters_supported = sup;
	get_str(s, c, "reason", l->counters_reason, sizeof(l->counters_reason));
	if (sup != 1)
		return 0;
	per = json_object_get(c, "per_pass");
	if (!json_is_array(per)) {
		problem(s, "\"counters\".\"per_pass\" is not an array");
		return 0;
	}
	first = json_array_get(per, 0);
	if (!json_is_object(first))
		return 0;
	json_object_foreach(first, key, v) {
		char **names;
		bool clean = key[0] != '\0';

		for (const char *p = key; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			      (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
				clean = false;
		if (!clean || !json_is_integer(v) || l->ncounter_names >= 16)
			continue;
		names = realloc(l->counter_names, (l->ncounter_names + 1) * sizeof(*names));
		if (!names)
			return -ENOMEM;
		l->counter_names = names;
		names[l->ncounter_names] = strdup(key);
		if (!names[l->ncounter_names])
			return -ENOMEM;
		l->ncounter_names++;
	}
	return 0;
}

static int read_buffers(struct src *s, json_t *a, struct op_launch *l)
{
	json_t *v;
	size_t i;

	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a)) {
		problem(s, "\"buffers\" is not an array");
		return 0;
	}
	if (!json_array_size(a))
		return 0;
	l->bufs = calloc(json_array_size(a), sizeof(*l->bufs));
	if (!l->bufs)
		return -ENOMEM;
	json_array_foreach(a, i, v) {
		struct op_buf *b = &l->bufs[l->nbufs];

		if (!json_is_object(v)) {
			problem(s, "\"buffers\"[%zu] is not an object", i);
			continue;
		}
		b->arg = get_int(s, v, "arg");
		b->bytes = get_int(s, v, "bytes");
		b->backed_up = get_bool(s, v, "backed_up");
		b->may_read = get_bool(s, v, "may_read");
		b->may_write = get_bool(s, v, "may_write");
		b->read = get_int(s, v, "bytes_read");
		b->written = get_int(s, v, "bytes_written");
		get_str(s, v, "read_basis", b->read_basis, sizeof(b->read_basis));
		get_str(s, v, "write_basis", b->write_basis, sizeof(b->write_basis));
		get_str(s, v, "base", b->base, sizeof(b->base));
		l->nbufs++;
	}
	return 0;
}

/* Warm-ups and measured passes on one timeline: measured START times when
 * the runtime gave them, otherwise laid out back to back. */
static int build_passes(struct src *s, json_t *j, struct op_launch *l)
{
	uint64_t *pass = NULL, *queued = NULL, *warm = NULL, *wqueued = NULL;
	size_t npass = 0, nqueued = 0, nwarm = 0, nwqueued = 0;
	json_t *per = json_object_get(json_object_get(j, "counters"), "per_pass");
	bool app = strcmp(l->mode, "application") == 0;
	double t = 0;
	int rc;

	if ((rc = get_u64_array(s, j, "pass_ns", &pass, &npass)) ||
	    (rc = get_u64_array(s, j, "pass_queued_ns", &queued, &nqueued)) ||
	    (rc = get_u64_array(s, j, "warmup_ns", &warm, &nwarm)) ||
	    /* Not in opraw.h: read when a runtime writes it. */
	    (rc = get_u64_array(s, j, "warmup_queued_ns", &wqueued, &nwqueued)))
		goto out;
	if (nqueued && nqueued != npass) {
		problem(s, "\"pass_queued_ns\" has %zu entries for %zu passes", nqueued, npass);
		nqueued = 0;
	}
	if (nwqueued != nwarm)
		nwqueued = 0;
	for (size_t i = 0; i < nwarm && !rc; i++) {
		struct op_pass p = { .number = (int)i + 1, .warmup = true,
				     .dur_us = (double)warm[i] / 1e3 };

		p.start_estimated = !nwqueued;
		p.start_us = nwqueued ? (double)wqueued[i] / 1e3 : t;
		t = p.start_us + p.dur_us;
		rc = add_pass(l, &p);
	}
	for (size_t i = 0; i < npass && !rc; i++) {
		struct op_pass p = { .number = (int)i + 1, .dur_us = (double)pass[i] / 1e3 };
		json_t *c = json_array_get(per, i);

		if (app) {
			p.start_us = NAN;
		} else {
			p.start_estimated = !nqueued;
			p.start_us = nqueued ? (double)queued[i] / 1e3 : t;
			t = p.start_us + p.dur_us;
		}
		p.counters = json_is_object(c) && l->counters_supported == 1 ? c : NULL;
		rc = add_pass(l, &p);
	}
out:
	free(pass);
	free(queued);
	free(warm);
	free(wqueued);
	return rc;
}

static int read_measure(int dirfd, struct op_launch *l, const struct ks_oppost_opts *o)
{
	struct src s = { .o = o, .rel = l->rel, .file = KS_OP_MEASURE_FILE };
	/* An incomplete launch is expected to lack its measurement. */
	json_t *j = load_json(dirfd, l->rel, KS_OP_MEASURE_FILE, o,
			      o->status && strcmp(o->status, "incomplete") == 0), *v;
	long long n;
	int rc;

	if (!j)
		return 0;
	l->have_measure = true;
	l->measure_json = j;
	get_str(&s, j, "mode", l->mode, sizeof(l->mode));
	get_str(&s, j, "status", l->status, sizeof(l->status));
	get_str(&s, j, "error", l->message, sizeof(l->message));
	l->warmup = get_int(&s, j, "warmup");
	l->passes_asked = get_int(&s, j, "passes");
	l->flush = get_bool(&s, j, "flush");
	l->flush_bytes = get_int(&s, j, "flush_bytes");
	n = get_int(&s, j, "original_ns");
	l->original_us = n >= 0 ? (double)n / 1e3 : NAN;
	n = get_int(&s, j, "replay_wall_ns");
	l->replay_wall_ms = n >= 0 ? (double)n / 1e6 : NAN;
	l->backup_bytes = get_int(&s, j, "backup_bytes");
	read_hardware(&s, json_object_get(j, "hardware"), l);
	v = json_object_get(j, "counters");
	if ((rc = read_counters(&s, v, l)) || (rc = read_buffers(&s, json_object_get(j, "buffers"), l)) ||
	    (rc = build_passes(&s, j, l)))
		goto out;
out:
	report_problems(&s);
	return rc;
}

/* Application replay: the passes of runs >= 1. */
static int add_app_passes(struct op_launch *l, const struct ks_oppost_opts *o)
{
	int measured = 0;

	for (size_t i = 0; i < l->npass; i++)
		measured += !l->pass[i].warmup;
	for (size_t i = 0; i < o->n_app; i++) {
		struct op_pass p = { .number = ++measured, .start_us = NAN,
				     .dur_us = (double)o->app_ns[i] / 1e3,
				     .run = o->app_run ? o->app_run[i] : (unsigned)i + 1 };
		int rc = add_pass(l, &p);

		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Derived figures                                                     */
/* ------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int derive_times(struct op_launch *l)
{
	double *v = malloc((l->npass + 1) * sizeof(*v)), sum = 0;
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < l->npass; i++)
		if (!l->pass[i].warmup && isfinite(l->pass[i].dur_us))
			v[n++] = l->pass[i].dur_us;
	l->nmeasured = n;
	l->min_us = l->median_us = l->mean_us = l->max_us = l->spread_pct = NAN;
	l->p80_p20 = NAN;
	if (n) {
		qsort(v, n, sizeof(*v), cmp_double);
		for (size_t i = 0; i < n; i++)
			sum += v[i];
		l->min_us = v[0];
		l->max_us = v[n - 1];
		l->median_us = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
		l->mean_us = sum / (double)n;
		if (l->median_us > 0)
			l->spread_pct = (l->max_us - l->min_us) / l->median_us * 100;
		/* The 80th over the 20th percentile (nearest rank): one slow or
		 * fast pass at either end does not move it. */
		if (n >= KS_OPPOST_NOISY_MIN_PASSES) {
			double p20 = v[(n * 20 + 99) / 100 - 1], p80 = v[(n * 80 + 99) / 100 - 1];

			if (p20 > 0)
				l->p80_p20 = p80 / p20;
		}
	}
	free(v);
	return 0;
}

/* The bytes a launch moves, by one definition (docs/op.md, "Traffic"):
 * the DRAM bytes the hardware counted where it did (CUDA with CUPTI);
 * else the extent, every byte of each buffer the kernel may read, and of
 * each it may write, so that identical launches give identical figures;
 * the bytes the first pass changed (a lower bound of what it wrote) are
 * kept beside them.  Raw files older than the extent (no may_write) keep
 * the changed bytes as written. */
static void derive_bytes(struct op_launch *l)
{
	bool extent = l->nbufs > 0;

	l->bytes_read = l->bytes_written = l->bytes_changed = NAN;
	l->gbps = NAN;
	l->bytes_measured = l->bytes_extent = false;
	for (size_t i = 0; i < l->nbufs; i++)
		extent &= l->bufs[i].may_write >= 0 && l->bufs[i].bytes >= 0;
	if (l->have_measure && l->nbufs) {
		l->bytes_changed = 0;
		for (size_t i = 0; i < l->nbufs && isfinite(l->bytes_changed); i++)
			l->bytes_changed = l->bufs[i].written >= 0 ?
				l->bytes_changed + (double)l->bufs[i].written : NAN;
	}
	if (l->have_measure && l->hw_supported == 1 && isfinite(l->hw_read) &&
	    isfinite(l->hw_written)) {
		/* Measured DRAM traffic beats what the arguments suggest. */
		l->bytes_read = l->hw_read;
		l->bytes_written = l->hw_written;
		l->bytes_measured = true;
		if (isfinite(l->median_us) && l->median_us > 0)
			l->gbps = (l->bytes_read + l->bytes_written) / (l->median_us * 1e3);
		return;
	}
	if (!l->have_measure || !l->nbufs)
		return;
	l->bytes_read = l->bytes_written = 0;
	l->bytes_extent = extent;
	for (size_t i = 0; i < l->nbufs; i++) {
		if (l->bufs[i].read >= 0)
			l->bytes_read += (double)l->bufs[i].read;
		else
			l->bytes_partial = true;
		if (extent)
			l->bytes_written += l->bufs[i].may_write ? (double)l->bufs[i].bytes : 0;
		else if (l->bufs[i].written >= 0)
			l->bytes_written += (double)l->bufs[i].written;
		else
			l->bytes_partial = true;
	}
	if (isfinite(l->median_us) && l->median_us > 0)
		l->gbps = (l->bytes_read + l->bytes_written) / (l->median_us * 1e3);
}

/* The names one launch's expression may use. */
static int launch_vars(const struct op_work *w, const struct op_arg *args, size_t nargs,
		       struct ks_expr_var **out, size_t *n)
{
	static const char *const gnames[] = { "gx", "gy", "gz" };
	static const char *const lnames[] = { "lx", "ly", "lz" };
	struct ks_expr_var *v = calloc(nargs + 6, sizeof(*v));

	*out = v;
	*n = 0;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < nargs; i++)
		if (args[i].name[0] && args[i].has_value)
			v[(*n)++] = (struct ks_expr_var){ args[i].name, args[i].value };
	if (w->dim)
		for (int d = 0; d < 3; d++)
			v[(*n)++] = (struct ks_expr_var){ gnames[d],
				d < w->dim ? (double)w->global[d] : 1.0 };
	if (w->dim && w->has_local)
		for (int d = 0; d < 3; d++)
			v[(*n)++] = (struct ks_expr_var){ lnames[d],
				d < w->dim ? (double)w->local[d] : 1.0 };
	return 0;
}

static int derive_flops(struct op_launch *l, const struct ks_oppost_opts *o)
{
	struct ks_expr_var *vars;
	struct ks_err e;
	size_t nvars;
	int rc;

	l->flops = l->gflops = l->intensity = NAN;
	if (!o->flops) {
		snprintf(l->flops_why, sizeof(l->flops_why), "no --flops expression");
		return 0;
	}
	if (!l->have_context) {
		snprintf(l->flops_why, sizeof(l->flops_why),
			 "--flops needs the launch's context.json");
	} else if (strcmp(l->kind, "range") == 0) {
		/* A range's FLOPs: the expression summed over its launches. */
		double sum = 0;

		for (size_t i = 0; i < l->nsubs; i++) {
			double f;

			if (launch_vars(&l->subs[i].work, l->subs[i].args, l->subs[i].nargs,
					&vars, &nvars))
				return -ENOMEM;
			rc = ks_expr_eval(o->flops, vars, nvars, &f, &e);
			free(vars);
			if (rc) {
				snprintf(l->flops_why, sizeof(l->flops_why),
					 "--flops '%.100s' for launch %zu (%.64s) of the range: %.300s",
					 ks_expr_text(o->flops), i, l->subs[i].name, e.msg);
				goto unknown;
			}
			sum += f;
		}
		if (!l->nsubs)
			snprintf(l->flops_why, sizeof(l->flops_why),
				 "the range's context.json lists no launches");
		else
			l->flops = sum;
	} else {
		if (launch_vars(&l->work, l->args, l->nargs, &vars, &nvars))
			return -ENOMEM;
		rc = ks_expr_eval(o->flops, vars, nvars, &l->flops, &e);
		free(vars);
		if (rc) {
			snprintf(l->flops_why, sizeof(l->flops_why), "--flops '%.100s': %.400s",
				 ks_expr_text(o->flops), e.msg);
			l->flops = NAN;
			goto unknown;
		}
	}
	if (!isfinite(l->flops))
		goto unknown;
	if (isfinite(l->median_us) && l->median_us > 0)
		l->gflops = l->flops / (l->median_us * 1e3);
	if (isfinite(l->bytes_read) && l->bytes_read + l->bytes_written > 0)
		l->intensity = l->flops / (l->bytes_read + l->bytes_written);
	return 0;
unknown:
	ks_oppost_warnf(o, "%s: FLOPs unknown: %s", l->rel, l->flops_why);
	return 0;
}

bool ks_oppost_is_cuda(const struct op_launch *l)
{
	return strcmp(l->platform_name, "NVIDIA CUDA") == 0;
}

/* The name kscope calibrate gives a CUDA compute ceiling. */
static bool is_cuda_ceiling(const char *name)
{
	return strncmp(name, "CUDA ", 5) == 0;
}

/* A CUDA launch's ceilings: the calibration's CUDA read bandwidth and
 * FP32 FMA peak when it measured this device.  Never the CPU's: a GPU
 * kernel against the host's DRAM would be a wrong answer, so a device the
 * calibration did not measure gets no roofline, and false with why. */
static bool pick_cuda_ceilings(struct op_launch *l, const struct ks_calib *c)
{
	const struct ks_calib_cuda *d = &c->cuda;

	if (!c->have_cuda || !l->device_name[0] || strcmp(d->device, l->device_name) != 0 ||
	    !(d->bytes_per_s > 0) || !(d->fp32 > 0)) {
		snprintf(l->roofline_why, sizeof(l->roofline_why),
			 "the calibration has no ceilings for the CUDA device '%.200s' "
			 "(%s%.200s%s); run 'kscope calibrate' on the machine with that "
			 "device", l->device_name[0] ? l->device_name : "unknown",
			 c->have_cuda ? "it measured '" : "it measured no CUDA device",
			 c->have_cuda ? d->device : "", c->have_cuda ? "'" : "");
		return false;
	}
	l->mem_ceiling_gbps = d->bytes_per_s / 1e9;
	snprintf(l->mem_ceiling_name, sizeof(l->mem_ceiling_name), "CUDA DRAM (%.80s)",
		 d->device);
	l->compute_ceiling_gflops = d->fp32 / 1e9;
	snprintf(l->compute_ceiling_name, sizeof(l->compute_ceiling_name),
		 "CUDA FP32 FMA (%.70s)", d->device);
	return true;
}

/* The ceilings for this launch's device, or false with l->roofline_why.
 * A CUDA launch: pick_cuda_ceilings.  Otherwise the CPU's DRAM, and as
 * compute ceiling the calibration's OpenCL figure when it was measured
 * on the same device, else the highest that is not a CUDA device's. */
static bool pick_ceilings(struct op_launch *l, const struct ks_calib *c)
{
	bool same = c->have_opencl && l->device_name[0] &&
		    strcmp(c->opencl_device, l->device_name) == 0 && c->opencl_flops_per_s > 0;

	size_t nmem = c->nmem < KS_CALIB_MAX ? c->nmem : KS_CALIB_MAX, dram = nmem;

	l->mem_ceiling_gbps = l->compute_ceiling_gflops = NAN;
	if (ks_oppost_is_cuda(l))
		return pick_cuda_ceilings(l, c);

	/* The kernel's buffers live in main memory: the "DRAM" ceiling, or
	 * the slowest (the last) when none is named so. */
	for (size_t i = 0; i < nmem; i++)
		if (strcmp(c->mem[i].name, "DRAM") == 0)
			dram = i;
	if (dram == nmem && nmem > 0)
		dram = nmem - 1;
	if (dram < nmem && c->mem[dram].per_s > 0) {
		l->mem_ceiling_gbps = c->mem[dram].per_s / 1e9;
		snprintf(l->mem_ceiling_name, sizeof(l->mem_ceiling_name), "%s",
			 c->mem[dram].name);
	}
	if (same) {
		l->compute_ceiling_gflops = c->opencl_flops_per_s / 1e9;
		snprintf(l->compute_ceiling_name, sizeof(l->compute_ceiling_name),
			 "OpenCL (%.80s)", c->opencl_device);
		for (size_t i = 0; i < c->ncompute && i < KS_CALIB_MAX; i++)
			if (strstr(c->compute[i].name, "OpenCL") &&
			    strstr(c->compute[i].name, c->opencl_device))
				snprintf(l->compute_ceiling_name,
					 sizeof(l->compute_ceiling_name), "%s",
					 c->compute[i].name);
		return true;
	}
	for (size_t i = 0; i < c->ncompute && i < KS_CALIB_MAX; i++)
		if (c->compute[i].per_s > 0 && !is_cuda_ceiling(c->compute[i].name) &&
		    !(c->compute[i].per_s / 1e9 <= l->compute_ceiling_gflops)) {
			l->compute_ceiling_gflops = c->compute[i].per_s / 1e9;
			snprintf(l->compute_ceiling_name, sizeof(l->compute_ceiling_name),
				 "%s", c->compute[i].name);
		}
	return true;
}

static void derive_roofline(struct op_launch *l, const struct ks_oppost_opts *o)
{
	const struct ks_calib *c = o->calib;
	double mem_bound;

	l->attainable_gflops = l->peak_ratio_pct = NAN;
	l->mem_ceiling_gbps = l->compute_ceiling_gflops = NAN;
	if (!c) {
		snprintf(l->roofline_why, sizeof(l->roofline_why), "no calibration: %s",
			 o->calib_why && o->calib_why[0] ? o->calib_why
			 : "run 'kscope calibrate'");
		return;
	}
	if (!pick_ceilings(l, c))
		return;
	if (isfinite(l->gbps) && l->mem_ceiling_gbps > 0)
		l->peak_ratio_pct = l->gbps / l->mem_ceiling_gbps * 100;
	if (!isfinite(l->flops)) {
		snprintf(l->roofline_why, sizeof(l->roofline_why), "FLOPs unknown: %s",
			 l->flops_why);
		return;
	}
	if (!l->nmeasured) {
		snprintf(l->roofline_why, sizeof(l->roofline_why), "no measured pass");
		return;
	}
	if (!isfinite(l->intensity)) {
		snprintf(l->roofline_why, sizeof(l->roofline_why),
			 "the bytes the kernel read and wrote are unknown or zero");
		return;
	}
	if (!isfinite(l->mem_ceiling_gbps) || !isfinite(l->compute_ceiling_gflops)) {
		snprintf(l->roofline_why, sizeof(l->roofline_why),
			 "the calibration has no memory or no compute ceiling");
		return;
	}
	l->roofline = true;
	mem_bound = l->intensity * l->mem_ceiling_gbps;
	if (mem_bound < l->compute_ceiling_gflops) {
		l->attainable_gflops = mem_bound;
		snprintf(l->binding, sizeof(l->binding), "memory: %s", l->mem_ceiling_name);
	} else {
		l->attainable_gflops = l->compute_ceiling_gflops;
		snprintf(l->binding, sizeof(l->binding), "compute: %s",
			 l->compute_ceiling_name);
	}
}

static void derive_groups(struct op_launch *l)
{
	long long g = 1;

	l->work_groups = -1;
	if (!l->work.dim || !l->work.has_local)
		return;
	for (int d = 0; d < l->work.dim; d++) {
		uint64_t lo = l->work.local[d], gl = l->work.global[d];
		uint64_t n = gl / (lo ? lo : 1) + (lo && gl % lo != 0);

		if (lo == 0 || n > (uint64_t)INT64_MAX ||
		    __builtin_mul_overflow(g, (long long)n, &g))
			return;
	}
	l->work_groups = g;
}

/* ------------------------------------------------------------------ */
/* The whole launch                                                    */
/* ------------------------------------------------------------------ */

/* The name and index from the directory "<pid>/<name>_<index>". */
static void names_from_rel(struct op_launch *l)
{
	const char *slash = strrchr(l->rel, '/'), *base = slash ? slash + 1 : l->rel;
	const char *us = strrchr(base, '_');
	char *end;

	l->pid = slash ? strtoll(l->rel, &end, 10) : -1;
	if (slash && end != slash)
		l->pid = -1;
	if (us && us[1]) {
		l->index = strtoll(us + 1, &end, 10);
		if (*end)
			l->index = -1;
		snprintf(l->name, sizeof(l->name), "%.*s", (int)(us - base), base);
	} else {
		l->index = -1;
		snprintf(l->name, sizeof(l->name), "%.255s", base);
	}
}

int ks_oppost_read(int dirfd, const char *rel, const struct ks_oppost_opts *o,
		   struct op_launch *l, struct ks_err *err)
{
	int rc;

	memset(l, 0, sizeof(*l));
	snprintf(l->rel, sizeof(l->rel), "%s", rel);
	names_from_rel(l);
	l->tid = l->compute_units = l->max_clock_mhz = -1;
	l->sm_clock_mhz = l->mem_clock_mhz = l->mem_max_clock_mhz = -1;
	l->global_mem_bytes = l->cache_bytes = l->local_mem_bytes = -1;
	l->program_bytes = l->warmup = l->passes_asked = -1;
	l->flush = -1;
	l->flush_bytes = l->backup_bytes = -1;
	l->original_us = l->replay_wall_ms = NAN;
	l->counters_supported = -1;
	l->hw_supported = -1;
	l->hw_read = l->hw_written = l->hw_occupancy_pct = l->hw_time_us = NAN;
	rc = read_context(dirfd, l, o);
	if (!rc)
		rc = read_measure(dirfd, l, o);
	if (!rc && o->n_app)
		rc = add_app_passes(l, o);
	if (rc)
		return ks_err_set(err, rc, "%s: out of memory", rel);
	if (l->have_context && l->program_file[0]) {
		struct stat st;

		l->have_source = fstatat(dirfd, l->program_file, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				 S_ISREG(st.st_mode);
		if (!l->have_source)
			ks_oppost_warnf(o, "%s/%s, the kernel's program, is missing; the "
					"deliverables name no source file", rel,
					l->program_file);
	}
	if (!l->have_measure)
		snprintf(l->status, sizeof(l->status), "no measurement");
	else if (!l->status[0])
		snprintf(l->status, sizeof(l->status), "unknown");
	if (o->status)
		snprintf(l->status, sizeof(l->status), "%s", o->status);
	if (o->message && o->message[0] && !l->message[0])
		snprintf(l->message, sizeof(l->message), "%s", o->message);
	for (char *p = l->message; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	/* In this order: FLOP/s and intensity need the times and bytes. */
	if (derive_times(l))
		return ks_err_set(err, -ENOMEM, "%s: out of memory", rel);
	if (strcmp(l->status, "ok") == 0 && isfinite(l->p80_p20) &&
	    l->p80_p20 > KS_OPPOST_NOISY_RATIO)
		snprintf(l->status, sizeof(l->status), "noisy");
	derive_bytes(l);
	if (derive_flops(l, o))
		return ks_err_set(err, -ENOMEM, "%s: out of memory", rel);
	derive_roofline(l, o);
	derive_groups(l);
	return 0;
}

void ks_oppost_launch_free(struct op_launch *l)
{
	free(l->args);
	for (size_t i = 0; i < l->nsubs; i++)
		free(l->subs[i].args);
	free(l->subs);
	free(l->bufs);
	for (size_t i = 0; i < l->ncounter_names; i++)
		free(l->counter_names[i]);
	free(l->counter_names);
	free(l->pass);
	json_decref(l->measure_json);
	memset(l, 0, sizeof(*l));
}
