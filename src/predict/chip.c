/*
 * Chip files (docs/predict.md, "Chip files"): finding one by name,
 * reading and checking it, and the throughput tables' interpolation.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "pred_int.h"
#include "readfile.h"
#include "sharedir.h"

#define CHIP_MAX_BYTES (16u << 20)

const char *const pred_dtype_names[DT_COUNT] = {
	"fp16", "bf16", "fp32", "fp64", "int8", "uint8", "int16", "int32", "int64",
};
const unsigned pred_dtype_bytes[DT_COUNT] = { 2, 2, 4, 8, 1, 1, 2, 4, 8 };

int pred_dtype_find(const char *name)
{
	for (int i = 0; i < DT_COUNT; i++)
		if (strcasecmp(name, pred_dtype_names[i]) == 0)
			return i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Throughput tables                                                   */
/* ------------------------------------------------------------------ */

double pred_curve_at(const struct pred_curve *c, double size)
{
	size_t lo, hi;

	if (c->n == 0)
		return c->peak;
	if (size <= c->size[0])
		return c->tput[0];
	if (size >= c->size[c->n - 1]) {
		if (size == c->size[c->n - 1])
			return c->tput[c->n - 1];
		switch (c->above) {
		case ABOVE_LAST:
			return c->tput[c->n - 1];
		case ABOVE_PEAK:
			return c->peak > 0 ? c->peak : c->largest;
		case ABOVE_LARGEST:
		default:
			return c->largest;
		}
	}
	lo = 0;
	hi = c->n - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->size[mid] <= size)
			lo = mid;
		else
			hi = mid;
	}
	return c->tput[lo] + (c->tput[hi] - c->tput[lo]) * (size - c->size[lo]) /
				     (c->size[hi] - c->size[lo]);
}

void pred_curve_free(struct pred_curve *c)
{
	free(c->size);
	free(c->tput);
	c->size = c->tput = NULL;
	c->n = 0;
}

int pred_curve_set(struct pred_curve *c, const double *size, const double *tput,
		   size_t n, const char *what, struct ks_err *err)
{
	if (n > PRED_MAX_TABLE)
		return ks_err_set(err, -EINVAL, "%s: %zu entries; at most %d are accepted",
				  what, n, PRED_MAX_TABLE);
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(size[i]) || size[i] <= 0 || size[i] > 1e18)
			return ks_err_set(err, -EINVAL, "%s: entry %zu: the size %g is not "
					  "a number from 1 to 1e18", what, i + 1, size[i]);
		if (!isfinite(tput[i]) || tput[i] <= 0 || tput[i] > 1e15)
			return ks_err_set(err, -EINVAL, "%s: entry %zu: the throughput %g "
					  "is not a positive number up to 1e15", what, i + 1,
					  tput[i]);
		if (i && size[i] <= size[i - 1])
			return ks_err_set(err, -EINVAL, "%s: entry %zu: sizes must increase "
					  "(%g after %g)", what, i + 1, size[i], size[i - 1]);
	}
	c->size = malloc((n ? n : 1) * sizeof(double));
	c->tput = malloc((n ? n : 1) * sizeof(double));
	if (!c->size || !c->tput) {
		pred_curve_free(c);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	memcpy(c->size, size, n * sizeof(double));
	memcpy(c->tput, tput, n * sizeof(double));
	c->n = n;
	c->largest = 0;
	for (size_t i = 0; i < n; i++)
		if (tput[i] > c->largest)
			c->largest = tput[i];
	return 0;
}

/* ------------------------------------------------------------------ */
/* Built-in instructions                                               */
/* ------------------------------------------------------------------ */

static const struct {
	const char *name;
	enum pred_kind kind;
} builtins[] = {
	{ "vadd", K_VBIN }, { "vsub", K_VBIN }, { "vmul", K_VBIN }, { "vdiv", K_VBIN },
	{ "vmax", K_VBIN }, { "vmin", K_VBIN }, { "vexp", K_VUN }, { "vln", K_VUN },
	{ "vabs", K_VUN }, { "vrelu", K_VUN }, { "vconv", K_VCONV },
	{ "vreduce_sum", K_VRED }, { "vreduce_max", K_VRED }, { "mmad", K_MMAD },
};

enum pred_kind pred_builtin_kind(const char *name)
{
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (strcmp(builtins[i].name, name) == 0)
			return builtins[i].kind;
	if (strcmp(name, "load") == 0)
		return K_LOAD;
	if (strcmp(name, "scalar") == 0)
		return K_SCALAR;
	return K_GENERIC;
}

/* ------------------------------------------------------------------ */
/* Reading a chip file                                                 */
/* ------------------------------------------------------------------ */

int pred_chip_space(const struct pred_chip *c, const char *name)
{
	for (size_t i = 0; i < c->nspaces; i++)
		if (strcasecmp(c->spaces[i].name, name) == 0)
			return (int)i;
	return -1;
}

int pred_chip_pipe(const struct pred_chip *c, const char *name)
{
	for (size_t i = 0; i < c->npipes; i++)
		if (strcasecmp(c->pipes[i], name) == 0)
			return (int)i;
	return -1;
}

int pred_chip_base_pipe(const struct pred_chip *c, const char *name)
{
	for (size_t i = 0; i < c->nbase; i++)
		if (strcasecmp(c->base[i], name) == 0)
			return (int)i;
	return -1;
}

int pred_chip_core(const struct pred_chip *c, const char *name)
{
	for (size_t i = 0; i < c->ncores; i++)
		if (strcasecmp(c->cores[i].name, name) == 0)
			return (int)i;
	return -1;
}

bool pred_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > KS_PRED_MAX_NAME)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

struct rd {
	const char *path;
	struct ks_err *err;
};

static int bad(struct rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct rd *r, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ks_err_set(r->err, -EINVAL, "chip file %s: %s", r->path, msg);
}

static int get_name(struct rd *r, json_t *o, const char *key, const char *where,
		    char *out, size_t size)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_string(v))
		return bad(r, "%s: \"%s\" must be a string", where, key);
	if (!pred_name_ok(json_string_value(v)) || strlen(json_string_value(v)) >= size)
		return bad(r, "%s: \"%s\" is \"%.80s\"; a name is 1 to %d of A-Z a-z 0-9 _ . -",
			   where, key, json_string_value(v), KS_PRED_MAX_NAME);
	snprintf(out, size, "%s", json_string_value(v));
	return 0;
}

static int get_pos(struct rd *r, json_t *o, const char *key, const char *where,
		   bool required, double *out)
{
	json_t *v = json_object_get(o, key);

	if (!v) {
		if (required)
			return bad(r, "%s: \"%s\" is missing", where, key);
		return 0;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
	    json_number_value(v) <= 0 || json_number_value(v) > 1e15)
		return bad(r, "%s: \"%s\" must be a positive number", where, key);
	*out = json_number_value(v);
	return 0;
}

/* A table: [[size, throughput], ...]. */
static int get_table(struct rd *r, json_t *v, const char *where, struct pred_curve *c)
{
	double *size, *tput;
	size_t n, i;
	json_t *e;
	struct ks_err e2;
	int rc;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return bad(r, "%s: a table is a non-empty list of [size, throughput] pairs",
			   where);
	n = json_array_size(v);
	if (n > PRED_MAX_TABLE)
		return bad(r, "%s: %zu entries; at most %d are accepted", where, n,
			   PRED_MAX_TABLE);
	size = malloc(n * sizeof(double));
	tput = malloc(n * sizeof(double));
	if (!size || !tput) {
		free(size);
		free(tput);
		return ks_err_set(r->err, -ENOMEM, "out of memory");
	}
	json_array_foreach(v, i, e) {
		if (!json_is_array(e) || json_array_size(e) != 2 ||
		    !json_is_number(json_array_get(e, 0)) ||
		    !json_is_number(json_array_get(e, 1))) {
			free(size);
			free(tput);
			return bad(r, "%s: entry %zu is not a [size, throughput] pair of numbers",
				   where, i + 1);
		}
		size[i] = json_number_value(json_array_get(e, 0));
		tput[i] = json_number_value(json_array_get(e, 1));
	}
	rc = pred_curve_set(c, size, tput, n, where, &e2);
	free(size);
	free(tput);
	if (rc)
		return rc == -EINVAL ? bad(r, "%s", e2.msg) : ks_err_set(r->err, rc, "%s", e2.msg);
	return 0;
}

static int get_above(struct rd *r, json_t *o, const char *where, struct pred_curve *c)
{
	json_t *v = json_object_get(o, "above");
	const char *s;

	c->above = ABOVE_LARGEST;
	if (!v)
		return 0;
	s = json_is_string(v) ? json_string_value(v) : "";
	if (strcmp(s, "largest") == 0)
		c->above = ABOVE_LARGEST;
	else if (strcmp(s, "peak") == 0)
		c->above = ABOVE_PEAK;
	else if (strcmp(s, "last") == 0)
		c->above = ABOVE_LAST;
	else
		return bad(r, "%s: \"above\" must be one of largest, peak, last", where);
	return 0;
}

static int read_spaces(struct rd *r, json_t *root, struct pred_chip *c)
{
	json_t *a = json_object_get(root, "spaces"), *e, *v;
	size_t i;
	char where[96];
	int rc;

	if (!json_is_array(a) || json_array_size(a) == 0 ||
	    json_array_size(a) > PRED_MAX_SPACES)
		return bad(r, "\"spaces\" must be a list of 1 to %d memory spaces",
			   PRED_MAX_SPACES);
	json_array_foreach(a, i, e) {
		struct pred_space *s = &c->spaces[i];

		snprintf(where, sizeof(where), "spaces[%zu]", i);
		if (!json_is_object(e))
			return bad(r, "%s must be an object", where);
		rc = get_name(r, e, "name", where, s->name, sizeof(s->name));
		if (rc)
			return rc;
		if (pred_chip_space(c, s->name) >= 0)
			return bad(r, "%s: the space %s is listed twice", where, s->name);
		v = json_object_get(e, "ready");
		if (v && !json_is_boolean(v))
			return bad(r, "%s: \"ready\" must be true or false", where);
		s->ready = v && json_is_true(v);
		v = json_object_get(e, "bytes");
		if (v && (!json_is_integer(v) || json_integer_value(v) <= 0))
			return bad(r, "%s: \"bytes\" must be a positive integer", where);
		s->bytes = v ? (uint64_t)json_integer_value(v) : 0;
		v = json_object_get(e, "cache");
		if (v) {
			json_t *h;
			char w2[200];

			snprintf(w2, sizeof(w2), "%s (%s) cache", where, s->name);
			if (!json_is_object(v))
				return bad(r, "%s: \"cache\" must be an object: {\"speedup\": "
					   "cache bandwidth / memory bandwidth, \"hit_ratio\": the "
					   "ratio the tables describe}", where);
			if ((rc = get_pos(r, v, "speedup", w2, true, &s->cache_speedup)))
				return rc;
			h = json_object_get(v, "hit_ratio");
			if (h && (!json_is_number(h) || !(json_number_value(h) >= 0) ||
				  json_number_value(h) > 1))
				return bad(r, "%s: \"hit_ratio\" must be a number from 0 to 1",
					   w2);
			s->cache_base = h ? json_number_value(h) : 0;
		}
		v = json_object_get(e, "shared");
		if (v && !json_is_boolean(v))
			return bad(r, "%s: \"shared\" must be true or false", where);
		s->shared = v && json_is_true(v);
		c->nspaces++;
	}
	return 0;
}

static int read_pipes(struct rd *r, json_t *root, struct pred_chip *c)
{
	json_t *a = json_object_get(root, "pipes"), *e;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) == 0 ||
	    json_array_size(a) > PRED_MAX_PIPES)
		return bad(r, "\"pipes\" must be a list of 1 to %d pipe names", PRED_MAX_PIPES);
	json_array_foreach(a, i, e) {
		if (!json_is_string(e) || !pred_name_ok(json_string_value(e)))
			return bad(r, "pipes[%zu] must be a name of 1 to %d of A-Z a-z 0-9 _ . -",
				   i, KS_PRED_MAX_NAME);
		if (pred_chip_pipe(c, json_string_value(e)) >= 0)
			return bad(r, "the pipe %s is listed twice", json_string_value(e));
		snprintf(c->pipes[i], sizeof(c->pipes[i]), "%s", json_string_value(e));
		snprintf(c->base[i], sizeof(c->base[i]), "%s", json_string_value(e));
		c->npipes++;
		c->nbase++;
	}
	return 0;
}

/* "cores": [{"name": "AIV", "count": 2, "pipes": [...], "spaces": [...]}]:
 * each type gives count cores, AIV0 and AIV1, each with its own copy of
 * the type's pipes (AIV0.MTE2, ...), in the order listed. */
static int read_cores(struct rd *r, json_t *root, struct pred_chip *c)
{
	json_t *a = json_object_get(root, "cores"), *e, *v, *x, *pl;
	size_t i, j;
	char where[64], type[KS_PRED_MAX_NAME + 1];

	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) == 0)
		return bad(r, "\"cores\" must be a list of core types: {\"name\": \"AIV\", "
			   "\"count\": 2, \"pipes\": [...]}");
	json_array_foreach(a, i, e) {
		int8_t pipe[PRED_MAX_PIPES];
		uint32_t spaces = 0;
		json_int_t count;
		int rc;

		snprintf(where, sizeof(where), "cores[%zu]", i);
		if (!json_is_object(e))
			return bad(r, "%s must be an object", where);
		if ((rc = get_name(r, e, "name", where, type, sizeof(type))))
			return rc;
		if (strlen(type) > 16 || strchr(type, '.'))
			return bad(r, "%s: the core name \"%s\" must be 1 to 16 of A-Z a-z 0-9 _ -",
				   where, type);
		v = json_object_get(e, "count");
		count = json_is_integer(v) ? json_integer_value(v) : 0;
		if (count < 1 || (size_t)count > PRED_MAX_CORES - c->ncores)
			return bad(r, "%s: \"count\" must be an integer from 1, at most %d cores "
				   "in all", where, PRED_MAX_CORES);
		pl = json_object_get(e, "pipes");
		if (!json_is_array(pl) || json_array_size(pl) == 0)
			return bad(r, "%s: \"pipes\" must be a list of the chip's pipes", where);
		memset(pipe, -1, sizeof(pipe));
		json_array_foreach(pl, j, x) {
			int p = json_is_string(x) ? pred_chip_base_pipe(c, json_string_value(x)) : -1;

			if (p < 0)
				return bad(r, "%s: pipes[%zu] is not among \"pipes\"", where, j);
			if (pipe[p] >= 0)
				return bad(r, "%s: the pipe %s is listed twice", where, c->base[p]);
			pipe[p] = 0;
		}
		v = json_object_get(e, "spaces");
		if (v && !json_is_array(v))
			return bad(r, "%s: \"spaces\" must be a list of the chip's spaces", where);
		if (!v)
			spaces = UINT32_MAX;
		json_array_foreach(v, j, x) {
			int sp = json_is_string(x) ? pred_chip_space(c, json_string_value(x)) : -1;

			if (sp < 0)
				return bad(r, "%s: spaces[%zu] is not among \"spaces\"", where, j);
			spaces |= 1u << sp;
		}
		for (json_int_t k = 0; k < count; k++) {
			struct pred_core *co = &c->cores[c->ncores];

			snprintf(co->name, sizeof(co->name), "%s%lld", type, (long long)k);
			if (pred_chip_core(c, co->name) >= 0)
				return bad(r, "%s: the core %s is listed twice", where, co->name);
			co->spaces = spaces;
			memset(co->pipe, -1, sizeof(co->pipe));
			json_array_foreach(pl, j, x) {
				int p = pred_chip_base_pipe(c, json_string_value(x));

				if (c->ncpipes >= PRED_MAX_PIPES)
					return bad(r, "\"cores\": more than %d pipes in all",
						   PRED_MAX_PIPES);
				char full[2 * KS_PRED_MAX_NAME + 2];

				co->pipe[p] = (int8_t)c->ncpipes;
				/* through full: the names live in *c too */
				snprintf(full, sizeof(full), "%s.%s", co->name, c->base[p]);
				if (!pred_name_ok(full))
					return bad(r, "%s: the pipe name %s is too long", where,
						   full);
				memcpy(c->cpipes[c->ncpipes++], full, strlen(full) + 1);
			}
			c->ncores++;
		}
	}
	return 0;
}

static int pipe_of(struct rd *r, const struct pred_chip *c, json_t *o, const char *where,
		   int *out)
{
	json_t *v = json_object_get(o, "pipe");

	if (!json_is_string(v))
		return bad(r, "%s: \"pipe\" must be a string", where);
	*out = pred_chip_base_pipe(c, json_string_value(v));
	if (*out < 0)
		return bad(r, "%s: the pipe \"%.64s\" is not among \"pipes\"", where,
			   json_string_value(v));
	return 0;
}

static int space_of(struct rd *r, const struct pred_chip *c, json_t *v, const char *where,
		    int *out)
{
	if (!json_is_string(v))
		return bad(r, "%s must be a space name", where);
	*out = pred_chip_space(c, json_string_value(v));
	if (*out < 0)
		return bad(r, "%s: the space \"%.64s\" is not among \"spaces\"", where,
			   json_string_value(v));
	return 0;
}

static int read_paths(struct rd *r, json_t *root, struct pred_chip *c)
{
	json_t *a = json_object_get(root, "paths"), *e, *v, *cv;
	size_t i;
	char where[160];
	int rc;

	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 1024)
		return bad(r, "\"paths\" must be a list of at most 1024 paths");
	c->paths = calloc(json_array_size(a) + 1, sizeof(*c->paths));
	if (!c->paths)
		return ks_err_set(r->err, -ENOMEM, "out of memory");
	json_array_foreach(a, i, e) {
		struct pred_path *p = &c->paths[i];
		const char *k;

		snprintf(where, sizeof(where), "paths[%zu]", i);
		if (!json_is_object(e))
			return bad(r, "%s must be an object", where);
		if ((rc = space_of(r, c, json_object_get(e, "from"), where, &p->from)) ||
		    (rc = space_of(r, c, json_object_get(e, "to"), where, &p->to)) ||
		    (rc = pipe_of(r, c, e, where, &p->pipe)))
			return rc;
		c->npaths++;
		snprintf(where, sizeof(where), "paths[%zu] (%s->%s)", i,
			 c->spaces[p->from].name, c->spaces[p->to].name);
		for (size_t j = 0; j + 1 < c->npaths; j++)
			if (c->paths[j].from == p->from && c->paths[j].to == p->to)
				return bad(r, "%s: the path is listed twice", where);
		if ((rc = get_pos(r, e, "peak", where, false, &p->c.peak)) ||
		    (rc = get_above(r, e, where, &p->c)))
			return rc;
		v = json_object_get(e, "table");
		if (v && (rc = get_table(r, v, where, &p->c)))
			return rc;
		if (!v && p->c.peak <= 0)
			return bad(r, "%s: a path needs a \"table\" or a \"peak\"", where);
		v = json_object_get(e, "size");
		if (v && (!json_is_string(v) || (strcmp(json_string_value(v), "transfer") &&
						 strcmp(json_string_value(v), "footprint"))))
			return bad(r, "%s: \"size\" must be transfer or footprint", where);
		p->footprint = v && strcmp(json_string_value(v), "footprint") == 0;
		v = json_object_get(e, "convert");
		if (!v)
			continue;
		if (!json_is_object(v) || json_object_size(v) > 64)
			return bad(r, "%s: \"convert\" must map \"FROM->TO\" to tables", where);
		p->conv = calloc(json_object_size(v) + 1, sizeof(*p->conv));
		if (!p->conv)
			return ks_err_set(r->err, -ENOMEM, "out of memory");
		json_object_foreach(v, k, cv) {
			struct pred_conv *cc = &p->conv[p->nconv];
			const char *arrow = strstr(k, "->");
			char w2[256];

			snprintf(w2, sizeof(w2), "%s: convert \"%.40s\"", where, k);
			if (!arrow || arrow == k || (size_t)(arrow - k) > KS_PRED_MAX_NAME ||
			    strlen(arrow + 2) == 0 || strlen(arrow + 2) > KS_PRED_MAX_NAME)
				return bad(r, "%s: the key must be FROM->TO (formats)", w2);
			memcpy(cc->from, k, (size_t)(arrow - k));
			snprintf(cc->to, sizeof(cc->to), "%s", arrow + 2);
			cc->c.above = p->c.above;
			cc->c.peak = p->c.peak;
			p->nconv++;
			if ((rc = get_table(r, cv, w2, &cc->c)))
				return rc;
		}
	}
	return 0;
}

static int read_instr(struct rd *r, json_t *root, struct pred_chip *c)
{
	json_t *a = json_object_get(root, "instructions"), *e, *v, *tv;
	size_t i, j;
	char where[160];
	const char *k;
	int rc;

	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 4096)
		return bad(r, "\"instructions\" must be a list of at most 4096 instructions");
	c->instr = calloc(json_array_size(a) + 1, sizeof(*c->instr));
	if (!c->instr)
		return ks_err_set(r->err, -ENOMEM, "out of memory");
	json_array_foreach(a, i, e) {
		struct pred_chip_instr *in = &c->instr[i];

		snprintf(where, sizeof(where), "instructions[%zu]", i);
		if (!json_is_object(e))
			return bad(r, "%s must be an object", where);
		if ((rc = get_name(r, e, "name", where, in->name, sizeof(in->name))))
			return rc;
		c->ninstr++;
		snprintf(where, sizeof(where), "instructions[%zu] (%s)", i, in->name);
		for (j = 0; j + 1 < c->ninstr; j++)
			if (strcmp(c->instr[j].name, in->name) == 0)
				return bad(r, "%s: listed twice", where);
		in->kind = pred_builtin_kind(in->name);
		if (in->kind == K_LOAD || in->kind == K_SCALAR)
			return bad(r, "%s: load and scalar are described by \"paths\" and "
				   "\"scalar\"", where);
		if ((rc = pipe_of(r, c, e, where, &in->pipe)))
			return rc;
		in->ops = 1;
		v = json_object_get(e, "ops");
		if (v && (!json_is_number(v) || json_number_value(v) < 0 ||
			  json_number_value(v) > 1e6))
			return bad(r, "%s: \"ops\" must be a number from 0 to 1e6", where);
		if (v)
			in->ops = json_number_value(v);
		v = json_object_get(e, "spaces");
		if (v) {
			if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > 3)
				return bad(r, "%s: \"spaces\" must list 1 to 3 spaces", where);
			json_array_foreach(v, j, tv)
				if ((rc = space_of(r, c, tv, where, &in->spaces[j])))
					return rc;
			in->nspaces = (int)json_array_size(v);
		}
		v = json_object_get(e, "tables");
		if (v && !json_is_object(v))
			return bad(r, "%s: \"tables\" must map data types to tables", where);
		if (v)
			json_object_foreach(v, k, tv) {
				int dt = pred_dtype_find(k);
				char w2[200];

				if (dt < 0)
					return bad(r, "%s: tables: \"%.32s\" is not a data type "
						   "(fp16 bf16 fp32 fp64 int8 uint8 int16 int32 "
						   "int64)", where, k);
				snprintf(w2, sizeof(w2), "%s %s", where, pred_dtype_names[dt]);
				if ((rc = get_table(r, tv, w2, &in->dt[dt])))
					return rc;
			}
		v = json_object_get(e, "peak");
		if (v && !json_is_object(v))
			return bad(r, "%s: \"peak\" must map data types to throughputs", where);
		if (v)
			json_object_foreach(v, k, tv) {
				int dt = pred_dtype_find(k);

				if (dt < 0)
					return bad(r, "%s: peak: \"%.32s\" is not a data type", where, k);
				if (!json_is_number(tv) || json_number_value(tv) <= 0 ||
				    json_number_value(tv) > 1e15)
					return bad(r, "%s: peak %s must be a positive number", where, k);
				in->dt[dt].peak = json_number_value(tv);
			}
		get_above(r, e, where, &in->dt[0]);
		for (int d = 0; d < DT_COUNT; d++)
			in->dt[d].above = in->dt[0].above;
		for (j = 0; j < DT_COUNT && !in->dt[j].n && in->dt[j].peak <= 0; j++)
			;
		if (j == DT_COUNT)
			return bad(r, "%s: no data type has a table or a peak", where);
	}
	return 0;
}

static int read_chip(struct rd *r, json_t *root, struct pred_chip *c)
{
	json_t *v, *p;
	double d = 0;
	int rc;

	if (!json_is_object(root))
		return bad(r, "the file must hold a JSON object");
	v = json_object_get(root, "kscope_chip");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return bad(r, "\"kscope_chip\" must be 1 (the format version this kscope reads)");
	v = json_object_get(root, "name");
	if (!json_is_string(v) || !pred_name_ok(json_string_value(v)))
		return bad(r, "\"name\" must be a name of 1 to %d of A-Z a-z 0-9 _ . -",
			   KS_PRED_MAX_NAME);
	snprintf(c->name, sizeof(c->name), "%s", json_string_value(v));
	p = json_object_get(root, "provenance");
	if (!json_is_object(p) || !json_is_string(json_object_get(p, "source")) ||
	    !json_is_string(json_object_get(p, "date")))
		return bad(r, "\"provenance\" must say where the figures come from: "
			   "{\"source\": ..., \"date\": ...}");
	if ((rc = get_pos(r, root, "clock_hz", "the chip", true, &c->clock_hz)))
		return rc;
	if ((rc = read_spaces(r, root, c)) || (rc = read_pipes(r, root, c)) ||
	    (rc = read_cores(r, root, c)) || (rc = read_paths(r, root, c)) || (rc = read_instr(r, root, c)))
		return rc;
	c->scalar_pipe = -1;
	v = json_object_get(root, "scalar");
	if (v) {
		if (!json_is_object(v))
			return bad(r, "\"scalar\" must be an object");
		if ((rc = pipe_of(r, c, v, "scalar", &c->scalar_pipe)) ||
		    (rc = get_pos(r, v, "cycles_per_op", "scalar", true, &d)))
			return rc;
		c->scalar_cpo = d;
	}
	return 0;
}

void pred_chip_free(struct pred_chip *c)
{
	for (size_t i = 0; i < c->npaths; i++) {
		pred_curve_free(&c->paths[i].c);
		for (size_t j = 0; j < c->paths[i].nconv; j++)
			pred_curve_free(&c->paths[i].conv[j].c);
		free(c->paths[i].conv);
	}
	free(c->paths);
	for (size_t i = 0; i < c->ninstr; i++) {
		for (int d = 0; d < DT_COUNT; d++)
			pred_curve_free(&c->instr[i].dt[d]);
		pred_curve_free(&c->instr[i].any);
		ks_expr_free(c->instr[i].formula);
	}
	free(c->instr);
	memset(c, 0, sizeof(*c));
}

int pred_chip_load_file(const char *path, struct pred_chip *c, struct ks_err *err)
{
	struct rd r = { .path = path, .err = err };
	char *buf = NULL;
	size_t len = 0;
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(c, 0, sizeof(*c));
	rc = ks_read_file_at(AT_FDCWD, path, 0, CHIP_MAX_BYTES, &buf, &len, err);
	if (rc)
		return rc;
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	free(buf);
	if (!root)
		return bad(&r, "line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
	snprintf(c->path, sizeof(c->path), "%s", path);
	rc = read_chip(&r, root, c);
	json_decref(root);
	if (rc)
		pred_chip_free(c);
	return rc;
}

/* Appends the .json names in dir to list. */
static void list_chips(const char *dir, char *list, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), off = strlen(list);

		char name[300];
		bool dup = false;

		if (n <= 5 || strcmp(de->d_name + n - 5, ".json") || n - 5 >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(n - 5), de->d_name);
		/* each name once: an earlier place wins */
		for (const char *p = list; (p = strstr(p, name)); p++)
			dup |= (p == list || p[-1] == ' ') && (p[n - 5] == ',' || !p[n - 5]);
		if (!dup && off + n + 2 < size)
			snprintf(list + off, size - off, "%s%s", off ? ", " : "", name);
	}
	closedir(d);
}

#define MAX_DIRS 24

/* The directories a chip name is looked up in, in order. */
static size_t chip_dirs(char dirs[][4096], size_t *nuser)
{
	const char *env = getenv("KSCOPE_CHIP_PATH"), *xdg = getenv("XDG_DATA_HOME");
	const char *home = getenv("HOME");
	size_t n = 0;

	if (env && *env) {
		char *copy = strdup(env), *save = NULL;

		for (char *t = copy ? strtok_r(copy, ":", &save) : NULL; t && n < 16;
		     t = strtok_r(NULL, ":", &save))
			snprintf(dirs[n++], 4096, "%s", t);
		free(copy);
	}
	if (xdg && xdg[0] == '/')
		snprintf(dirs[n++], 4096, "%s/kscope/chips", xdg);
	else if (home && home[0] == '/')
		snprintf(dirs[n++], 4096, "%s/.local/share/kscope/chips", home);
	*nuser = n;
	/* Next to the executable or library this code is in (sharedir.h). */
	n += ks_share_dirs("chips", dirs + n, MAX_DIRS - n);
	return n;
}

int pred_chip_load(const char *chip, struct pred_chip *c, struct ks_err *err)
{
	static char dirs[MAX_DIRS][4096];
	char path[4200], list[1024] = "", places[2048] = "";
	size_t n, nuser = 0;

	memset(c, 0, sizeof(*c));
	if (!chip || !*chip)
		return ks_err_set(err, -EINVAL, "no chip was given: name one (e.g. "
				  "ascend910b or host) or give a chip file's path");
	if (strchr(chip, '/'))
		return pred_chip_load_file(chip, c, err);
	if (!pred_name_ok(chip))
		return ks_err_set(err, -EINVAL, "the chip name \"%.80s\" is not valid: a name "
				  "is 1 to %d of A-Z a-z 0-9 _ . -, or give a path with a '/'",
				  chip, KS_PRED_MAX_NAME);
	n = chip_dirs(dirs, &nuser);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s.json", dirs[i], chip);
		if (access(path, F_OK) == 0) {
			char real[4096];

			return pred_chip_load_file(realpath(path, real) ? real : path, c, err);
		}
	}
	for (size_t i = 0; i < n; i++) {
		char real[4096];
		size_t off = strlen(places);

		/* kscope's own places are named when they exist */
		if (!realpath(dirs[i], real)) {
			if (i >= nuser)
				continue;
			snprintf(real, sizeof(real), "%s", dirs[i]);
		}
		if (strstr(places, real))
			continue;
		if (off + strlen(real) + 3 < sizeof(places))
			snprintf(places + off, sizeof(places) - off, "%s%s", off ? ", " : "", real);
		list_chips(real, list, sizeof(list));
	}
	if (strcmp(chip, "host") == 0)
		return ks_err_set(err, -ENOENT, "there is no host chip yet: run `kscope "
				  "calibrate` to measure this machine (it writes host.json); "
				  "looked in %s", places);
	return ks_err_set(err, -ENOENT, "unknown chip \"%s\": no %s.json in %s; chips "
			  "found: %s", chip, chip, places, *list ? list : "none");
}
