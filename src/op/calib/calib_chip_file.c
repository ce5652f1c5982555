/*
 * The host chip's file: where host.json lives, the chip it describes (its
 * spaces, pipes, paths and instructions, in the format of docs/predict.md
 * "Chip files"), reading and checking a cached one, and writing it.
 *
 * The chip, as docs/predict.md ("The chips") explains: GM (main memory
 * seen through the caches, ready) and UB (the core's working data: its L1
 * cache and registers); pipe MEM for every transfer between them (loads
 * and stores share the caches and the memory bus), VECTOR for the vector
 * instructions and mmad (one core's arithmetic units), SCALAR for scalar
 * work and the reductions (a C reduction is one chain of dependent adds,
 * and independent work runs under it).  The figures come from
 * calib_chip.c.
 *
 * Like the calibration file (calib_file.c, whose helpers this file uses),
 * host.json is replaced in one step in a private directory, and a cached
 * one is used only when it is kscope calibrate's own, whole, and of this
 * machine; anything else is measured again.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "calib_int.h"
#include "readfile.h"

#define MAX_CHIP_FILE (4u << 20)

#define PIPE_MEM "MEM"
#define PIPE_VECTOR "VECTOR"
#define PIPE_SCALAR "SCALAR"

/* ---------------------------------------------------------------------
 * The machine's key
 * --------------------------------------------------------------------- */

void ks_calib_chip_key(const struct ks_calib_machine *m, char key[17])
{
	uint64_t h = 0xcbf29ce484222325ull;
	char buf[1024];
	int n;

	n = snprintf(buf, sizeof(buf), "cpu=%s\ncpus=%d\nmemory_gib=%" PRIu64 "\n", m->cpu,
		     m->cpus, (uint64_t)((m->memory_bytes + (512ull << 20)) >> 30));
	for (size_t i = 0; i < m->ncaches && n > 0 && (size_t)n < sizeof(buf); i++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "cache=L%d %s %" PRIu64 " %d\n",
			      m->caches[i].level, m->caches[i].type, m->caches[i].bytes,
			      m->caches[i].shared_cpus);
	/* 64-bit FNV-1a, as calib_machine.c's key */
	for (const char *s = buf; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	snprintf(key, 17, "%016" PRIx64, h);
}

/* ---------------------------------------------------------------------
 * The chip as JSON
 * --------------------------------------------------------------------- */

/* A table kscope predict accepts: sizes increasing, throughputs
 * positive and finite. */
static bool table_ok(const struct ks_calib_chip_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (!(t->tput[i] > 0) || !isfinite(t->tput[i]) ||
		    (i && t->size[i] <= t->size[i - 1]))
			return false;
	return t->n > 0;
}

static json_t *table_json(const struct ks_calib_chip_table *t)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < t->n; i++)
		if (json_array_append_new(a, json_pack("[f, f]", t->size[i], t->tput[i])) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *machine_json(const struct ks_calib_machine *m, const char *key)
{
	json_t *caches = json_array();

	for (size_t i = 0; caches && i < m->ncaches; i++)
		if (json_array_append_new(caches, json_pack("{s:i, s:s, s:I, s:i}", "level",
							    m->caches[i].level, "type",
							    m->caches[i].type, "bytes",
							    (json_int_t)m->caches[i].bytes,
							    "shared_cpus",
							    m->caches[i].shared_cpus)) != 0) {
			json_decref(caches);
			return NULL;
		}
	/* json_pack's "o" takes caches, also when it fails. */
	return json_pack("{s:s, s:s, s:i, s:o, s:I}", "key", key, "cpu", m->cpu, "cpus",
			 m->cpus, "caches", caches, "memory_bytes",
			 (json_int_t)m->memory_bytes);
}

static json_t *path_json(const char *from, const char *to,
			 const struct ks_calib_chip_table *t)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "from", from, "to", to, "pipe",
			 PIPE_MEM, "size", "footprint", "above", "last", "table",
			 table_json(t));
}

static json_t *instr_json(const char *name, const char *pipe, double ops,
			  const char *const *spaces, size_t nspaces,
			  const struct ks_calib_chip_table *per_dt)
{
	json_t *tables = json_object(), *sp = json_array();

	for (size_t i = 0; sp && i < nspaces; i++)
		if (json_array_append_new(sp, json_string(spaces[i])) != 0)
			goto fail;
	for (int dt = 0; tables && dt < KS_CALIB_NDT; dt++)
		if (per_dt[dt].n &&
		    json_object_set_new(tables, ks_calib_dt_names[dt],
					table_json(&per_dt[dt])) != 0)
			goto fail;
	return json_pack("{s:s, s:s, s:f, s:o, s:o}", "name", name, "pipe", pipe, "ops", ops,
			 "spaces", sp, "tables", tables);
fail:
	json_decref(tables);
	json_decref(sp);
	return NULL;
}

static json_t *instrs_json(const struct ks_calib_chip_figures *f)
{
	static const char *const ub[] = { "UB" }, *const ub3[] = { "UB", "UB", "UB" };
	json_t *a = json_array();

	for (size_t k = 0; a && ks_calib_vec_kernels[k].name; k++) {
		const struct ks_calib_vec_kernel *vk = &ks_calib_vec_kernels[k];

		if (json_array_append_new(a, instr_json(vk->name,
							vk->shape == KS_CALIB_VEC_REDUCE
								? PIPE_SCALAR : PIPE_VECTOR,
							vk->shape == KS_CALIB_VEC_CONV ? 0 : 1,
							ub, 1, f->vec[k])) != 0)
			goto fail;
	}
	if (a && json_array_append_new(a, instr_json("mmad", PIPE_VECTOR, 1, ub3, 3,
						     f->mmad)) == 0)
		return a;
fail:
	json_decref(a);
	return NULL;
}

static json_t *chip_json(const struct ks_calib_opts *o, const struct ks_calib_machine *m,
			 const char *key, const char *date,
			 const struct ks_calib_chip_figures *f)
{
	json_t *prov, *paths, *spaces, *pipes;
	char desc[256], notes[2048], lo[32], hi[32], l1[32];
	uint64_t l1_bytes = m->ncaches ? m->caches[0].bytes : 32 * 1024;

	paths = json_pack("[o, o]", path_json("GM", "UB", &f->read),
			  path_json("UB", "GM", &f->write));
	spaces = json_pack("[{s:s, s:b}, {s:s, s:I}]", "name", "GM", "ready", 1, "name", "UB",
			   "bytes", (json_int_t)l1_bytes);
	pipes = json_pack("[s, s, s]", PIPE_MEM, PIPE_VECTOR, PIPE_SCALAR);
	ks_calib_fmt_bytes((uint64_t)f->read.size[0], lo, sizeof(lo));
	ks_calib_fmt_bytes((uint64_t)f->read.size[f->read.n - 1], hi, sizeof(hi));
	ks_calib_fmt_bytes(l1_bytes, l1, sizeof(l1));
	snprintf(desc, sizeof(desc), "one core of this machine (%s), measured by kscope "
		 "calibrate", m->cpu);
	snprintf(notes, sizeof(notes),
		 "%s run on one pinned thread: every figure is the median of %d trials "
		 "taken in turn with all the others, spread over the whole measurement. "
		 "GM->UB: the %s read kernel, UB->GM: the %s store kernel, bytes per "
		 "cycle over footprints of %s to %s (the footprint decides where the data "
		 "lives; above the largest, the DRAM rate). Instructions: the plain C loop "
		 "of each (mmad: the i-p-j tile loop), compiled with -O2 -falign-loops=32 "
		 "by the compiler that built kscope (%s), operands in UB (the %s L1 data "
		 "cache; the largest sizes spill to L2), elements (mmad: multiply-adds, "
		 "by m*k*n) per cycle. Reductions are one dependent chain of adds and run "
		 "on SCALAR. scalar: a chain of dependent integer operations. Clock: %s.%s",
		 o->quick ? "A --quick" : "A full", f->rounds, f->read_isa, f->write_isa, lo,
		 hi, __VERSION__, l1, f->clock_how,
		 f->busy ? " Some figures were disturbed by other programs in every "
			   "trial and may be low." : "");
	prov = json_pack("{s:s, s:s, s:b, s:o, s:s}", "source", "kscope calibrate", "date",
			 date, "quick", o->quick, "machine", machine_json(m, key), "notes",
			 notes);
	return json_pack("{s:i, s:s, s:s, s:o, s:f, s:o, s:o, s:o, s:o, s:{s:s, s:f}}",
			 "kscope_chip", 1, "name", "host", "description", desc, "provenance",
			 prov, "clock_hz", f->clock_hz, "spaces", spaces, "pipes", pipes,
			 "paths", paths, "instructions", instrs_json(f), "scalar", "pipe",
			 PIPE_SCALAR, "cycles_per_op", f->scalar_cpo);
}

/* Fills h's summary from a chip file's JSON; false if it lacks what
 * kscope calibrate writes. */
static bool summarize(json_t *root, struct ks_calib_chip *h)
{
	json_t *paths = json_object_get(root, "paths"), *p, *instrs, *in;
	size_t i;

	h->clock_hz = json_number_value(json_object_get(root, "clock_hz"));
	if (!(h->clock_hz > 0) || !isfinite(h->clock_hz) || !json_is_array(paths))
		return false;
	h->read_small = h->read_large = h->write_small = h->write_large = 0;
	json_array_foreach(paths, i, p) {
		const char *from = json_string_value(json_object_get(p, "from"));
		const char *to = json_string_value(json_object_get(p, "to"));
		json_t *t = json_object_get(p, "table"), *first, *last;
		bool read;

		if (!from || !to || !json_is_array(t) || json_array_size(t) == 0)
			return false;
		read = strcmp(from, "GM") == 0 && strcmp(to, "UB") == 0;
		if (!read && !(strcmp(from, "UB") == 0 && strcmp(to, "GM") == 0))
			continue;
		first = json_array_get(t, 0);
		last = json_array_get(t, json_array_size(t) - 1);
		if (!json_is_number(json_array_get(first, 0)) ||
		    !json_is_number(json_array_get(first, 1)) ||
		    !json_is_number(json_array_get(last, 0)) ||
		    !json_is_number(json_array_get(last, 1)))
			return false;
		h->small_fp = (uint64_t)json_number_value(json_array_get(first, 0));
		h->large_fp = (uint64_t)json_number_value(json_array_get(last, 0));
		*(read ? &h->read_small : &h->write_small) =
			json_number_value(json_array_get(first, 1)) * h->clock_hz;
		*(read ? &h->read_large : &h->write_large) =
			json_number_value(json_array_get(last, 1)) * h->clock_hz;
	}
	instrs = json_object_get(root, "instructions");
	if (!json_is_array(instrs))
		return false;
	h->ninstr = 0;
	json_array_foreach(instrs, i, in)
		if (json_object_size(json_object_get(in, "tables")) > 0)
			h->ninstr++;
	return h->read_small > 0 && h->write_small > 0 && h->ninstr > 0;
}

int ks_calib_chip_build(const struct ks_calib_opts *o, const struct ks_calib_machine *m,
			const struct ks_calib_chip_figures *f, struct ks_calib_chip *h,
			struct ks_err *err)
{
	char date[32];
	json_t *root;
	struct tm tm;
	time_t now;

	if (!table_ok(&f->read) || !table_ok(&f->write) || !(f->scalar_cpo > 0) ||
	    !isfinite(f->scalar_cpo))
		return ks_err_set(err, -EIO, "the host chip's measurements are incomplete");
	for (size_t k = 0; ks_calib_vec_kernels[k].name; k++)
		for (int dt = 0; dt < KS_CALIB_NDT; dt++)
			if ((ks_calib_vec_kernels[k].fn[dt] != NULL) != table_ok(&f->vec[k][dt]))
				return ks_err_set(err, -EIO, "the host chip's %s %s table is "
						  "incomplete", ks_calib_vec_kernels[k].name,
						  ks_calib_dt_names[dt]);
	for (int dt = 0; dt < KS_CALIB_NDT; dt++)
		if (!table_ok(&f->mmad[dt]))
			return ks_err_set(err, -EIO, "the host chip's mmad %s table is "
					  "incomplete", ks_calib_dt_names[dt]);
	now = time(NULL);
	gmtime_r(&now, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	ks_calib_chip_key(m, h->key);
	root = chip_json(o, m, h->key, date, f);
	if (!root || !summarize(root, h)) {
		json_decref(root);
		return ks_err_set(err, -ENOMEM, "out of memory writing the host chip");
	}
	free(h->json);
	/* Six digits: far finer than what a measurement can tell. */
	h->json = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
	json_decref(root);
	if (!h->json)
		return ks_err_set(err, -ENOMEM, "out of memory writing the host chip");
	snprintf(h->created, sizeof(h->created), "%s", date);
	h->quick = o->quick;
	return 0;
}

/* ---------------------------------------------------------------------
 * Where, reading, writing
 * --------------------------------------------------------------------- */

/* $XDG_DATA_HOME/kscope/chips, else $HOME/.local/share/kscope/chips, else
 * the passwd entry's home.  A relative XDG_DATA_HOME is ignored, as the
 * XDG base directory specification asks. */
static int chips_dir(char *dir, size_t size, struct ks_err *err)
{
	const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
	struct passwd pw, *ppw = NULL;
	char pwbuf[4096];
	int n;

	if (xdg && xdg[0] == '/') {
		n = snprintf(dir, size, "%s/kscope/chips", xdg);
	} else {
		if (!home || home[0] != '/') {
			if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &ppw) != 0 ||
			    !ppw || !ppw->pw_dir || ppw->pw_dir[0] != '/')
				return ks_err_set(err, -ENOENT, "cannot find the data "
						  "directory: neither XDG_DATA_HOME nor "
						  "HOME is set to an absolute path");
			home = ppw->pw_dir;
		}
		n = snprintf(dir, size, "%s/.local/share/kscope/chips", home);
	}
	if (n < 0 || (size_t)n >= size - sizeof("/host.json"))
		return ks_err_set(err, -ENAMETOOLONG, "the chips directory's path is too "
				  "long");
	return 0;
}

int ks_calib_chip_path(char *path, size_t size, struct ks_err *err)
{
	char dir[4000];
	int rc = chips_dir(dir, sizeof(dir), err), n;

	if (rc)
		return rc;
	n = snprintf(path, size, "%s/host.json", dir);
	if (n < 0 || (size_t)n >= size)
		return ks_err_set(err, -ENAMETOOLONG, "the host chip's path is too long");
	return 0;
}

__attribute__((format(printf, 3, 4)))
static int chip_damaged(struct ks_err *err, const char *path, const char *fmt, ...)
{
	char what[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return ks_err_set(err, -EINVAL, "host chip '%s' is damaged: %s", path, what);
}

static int check_doc(json_t *root, struct ks_calib_chip *h, const char *want_key,
		     struct ks_err *err)
{
	json_t *prov, *mach, *v;
	const char *s;

	if (!json_is_object(root))
		return chip_damaged(err, h->path, "it is not a JSON object");
	v = json_object_get(root, "kscope_chip");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return chip_damaged(err, h->path, "\"kscope_chip\" (the format version) is "
				    "not 1");
	s = json_string_value(json_object_get(root, "name"));
	if (!s || strcmp(s, "host") != 0)
		return chip_damaged(err, h->path, "its \"name\" is not \"host\"");
	prov = json_object_get(root, "provenance");
	s = json_string_value(json_object_get(prov, "source"));
	if (!s || strcmp(s, "kscope calibrate") != 0)
		return chip_damaged(err, h->path, "its provenance.source is not \"kscope "
				    "calibrate\"");
	s = json_string_value(json_object_get(prov, "date"));
	if (!s || strlen(s) == 0 || strlen(s) >= sizeof(h->created))
		return chip_damaged(err, h->path, "provenance.date is not a date");
	snprintf(h->created, sizeof(h->created), "%s", s);
	v = json_object_get(prov, "quick");
	if (v && !json_is_boolean(v))
		return chip_damaged(err, h->path, "provenance.quick is not true or false");
	h->quick = json_is_true(v);
	mach = json_object_get(prov, "machine");
	s = json_string_value(json_object_get(mach, "key"));
	if (!s || strlen(s) != 16 || strspn(s, "0123456789abcdef") != 16)
		return chip_damaged(err, h->path, "provenance.machine.key is not 16 hex "
				    "digits");
	snprintf(h->key, sizeof(h->key), "%s", s);
	if (!summarize(root, h))
		return chip_damaged(err, h->path, "it lacks the clock, the GM->UB and "
				    "UB->GM tables or the instructions kscope calibrate "
				    "writes");
	if (strcmp(h->key, want_key) != 0)
		return ks_err_set(err, -ESTALE, "host chip '%s' was measured on another "
				  "machine (key %s; this machine's is %s)", h->path, h->key,
				  want_key);
	return 0;
}

int ks_calib_chip_load(struct ks_calib_chip *h, const struct ks_calib_machine *m,
		       struct ks_err *err)
{
	char dir[4000], key[17], *buf = NULL;
	json_error_t jerr;
	json_t *root;
	size_t got = 0;
	int rc;

	memset(h, 0, sizeof(*h));
	ks_calib_chip_key(m, key);
	rc = ks_calib_chip_path(h->path, sizeof(h->path), err);
	if (!rc)
		rc = chips_dir(dir, sizeof(dir), err);
	if (rc)
		return rc;
	if (access(dir, F_OK) == 0 && (rc = ks_calib_check_dir(dir, err)) != 0)
		return rc;
	rc = ks_read_file_at(AT_FDCWD, h->path, 0, MAX_CHIP_FILE, &buf, &got, err);
	if (rc == -ENOENT)
		return ks_err_set(err, -ENOENT, "this machine has no host chip yet (no "
				  "file '%s')", h->path);
	if (rc == -EINVAL || rc == -EFBIG)
		return chip_damaged(err, h->path, "it is not a regular file of at most %u "
				    "bytes", MAX_CHIP_FILE);
	if (rc)
		return rc;
	root = json_loadb(buf, got, JSON_REJECT_DUPLICATES, &jerr);
	free(buf);
	if (!root)
		return chip_damaged(err, h->path, "invalid JSON at line %d, column %d: %s",
				    jerr.line, jerr.column, jerr.text);
	rc = check_doc(root, h, key, err);
	json_decref(root);
	return rc;
}

int ks_calib_chip_prepare(struct ks_calib_chip *h, struct ks_err *err)
{
	char dir[4000];
	int rc;

	memset(h, 0, sizeof(*h));
	rc = ks_calib_chip_path(h->path, sizeof(h->path), err);
	if (!rc)
		rc = chips_dir(dir, sizeof(dir), err);
	if (!rc)
		rc = ks_calib_mkdir_p(dir, err);
	if (!rc)
		rc = ks_calib_check_dir(dir, err);
	if (!rc && access(dir, W_OK | X_OK) != 0)
		rc = ks_err_set(err, -errno, "cannot write to '%s': %s", dir, strerror(errno));
	return rc;
}

int ks_calib_chip_save(const struct ks_calib_chip *h, struct ks_err *err)
{
	if (!h->path[0] || !h->json)
		return ks_err_set(err, -EINVAL, "the host chip to save is incomplete (no "
				  "path or measurement)");
	return ks_calib_write_atomic(h->path, h->json, err);
}

void ks_calib_chip_free(struct ks_calib_chip *h)
{
	free(h->json);
	h->json = NULL;
}
