/*
 * Unit tests of the host chip of kscope predict (src/op/calib/calib_chip.c
 * and calib_chip_kernels.c): where host.json lives, a --quick measurement
 * written and read back (its JSON has what docs/predict.md asks of a chip,
 * and kscope predict's library accepts it and predicts with it), every
 * kind of damage the reader reports, another machine's chip, an unsafe
 * directory, and each kernel's results against a plain reference.  Files
 * live in a temporary directory that XDG_DATA_HOME points to.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "calib.h"
#include "calib_int.h"
#include "kscope/predict.h"
#include "test_util.h"

static char *use_tmp_data(void)
{
	char *dir = ks_test_tmpdir();

	assert_int_equal(setenv("XDG_DATA_HOME", dir, 1), 0);
	return dir;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

/* ---------------------------------------------------------------------
 * Where
 * --------------------------------------------------------------------- */

static void test_chip_path(void **state)
{
	char *dir = use_tmp_data(), *home = ks_test_tmpdir(), path[4096], want[4096];
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_chip_path(path, sizeof(path), &e), 0);
	snprintf(want, sizeof(want), "%s/kscope/chips/host.json", dir);
	assert_string_equal(path, want);
	/* A relative XDG_DATA_HOME is ignored, as is an unset one. */
	assert_int_equal(setenv("HOME", home, 1), 0);
	assert_int_equal(setenv("XDG_DATA_HOME", "relative/data", 1), 0);
	assert_int_equal(ks_calib_chip_path(path, sizeof(path), &e), 0);
	snprintf(want, sizeof(want), "%s/.local/share/kscope/chips/host.json", home);
	assert_string_equal(path, want);
	assert_int_equal(unsetenv("XDG_DATA_HOME"), 0);
	assert_int_equal(ks_calib_chip_path(path, sizeof(path), &e), 0);
	assert_string_equal(path, want);
	ks_test_rmtree(dir);
	ks_test_rmtree(home);
	free(dir);
	free(home);
}

static void test_chip_missing(void **state)
{
	char *dir = use_tmp_data();
	struct ks_calib_machine m;
	struct ks_calib_chip h;
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_machine_probe(&m, &e), 0);
	ks_err_clear(&e);
	assert_int_equal(ks_calib_chip_load(&h, &m, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "no host chip"));
	assert_non_null(strstr(e.msg, dir));
	assert_non_null(strstr(h.path, "/kscope/chips/host.json"));
	ks_test_rmtree(dir);
	free(dir);
}

/* ---------------------------------------------------------------------
 * A quick measurement, written and read back
 * --------------------------------------------------------------------- */

struct seen {
	int calls, last_step, steps;
	bool monotonic, chip_phase;
};

static void on_progress(void *arg, const char *phase, const char *what, int step,
			int steps)
{
	struct seen *s = arg;

	(void)what;
	s->calls++;
	s->chip_phase |= strcmp(phase, "chip") == 0;
	if (step < s->last_step || step > steps)
		s->monotonic = false;
	s->last_step = step;
	s->steps = steps;
}

/* A [[size, throughput], ...] table: sizes increasing, throughputs
 * positive and finite; returns its last size. */
static double check_table(json_t *t, const char *what)
{
	double prev = 0;
	size_t i;
	json_t *e;

	if (!json_is_array(t) || json_array_size(t) == 0)
		fail_msg("%s: no table", what);
	json_array_foreach(t, i, e) {
		double s = json_number_value(json_array_get(e, 0));
		double v = json_number_value(json_array_get(e, 1));

		if (json_array_size(e) != 2 || !(s > prev) || !(v > 0) || !isfinite(v))
			fail_msg("%s: entry %zu is [%g, %g] after size %g", what, i, s, v, prev);
		prev = s;
	}
	return prev;
}

static json_t *find_named(json_t *a, const char *name)
{
	size_t i;
	json_t *e;

	json_array_foreach(a, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n && strcmp(n, name) == 0)
			return e;
	}
	return NULL;
}

static json_t *find_path(json_t *paths, const char *from, const char *to)
{
	size_t i;
	json_t *p;

	json_array_foreach(paths, i, p)
		if (strcmp(json_string_value(json_object_get(p, "from")), from) == 0 &&
		    strcmp(json_string_value(json_object_get(p, "to")), to) == 0)
			return p;
	return NULL;
}

static void check_chip_json(const char *path, const struct ks_calib_machine *m)
{
	static const char *const instrs[] = {
		"vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vexp", "vln", "vabs",
		"vrelu", "vconv", "vreduce_sum", "vreduce_max", "vadds", "vmuls", "mmad",
	};
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr), *v, *prov;
	json_t *paths, *instr;
	uint64_t llc = ks_calib_llc_total(m);

	if (!root)
		fail_msg("%s: %s", path, jerr.text);
	assert_int_equal(json_integer_value(json_object_get(root, "kscope_chip")), 1);
	assert_string_equal(json_string_value(json_object_get(root, "name")), "host");
	prov = json_object_get(root, "provenance");
	assert_string_equal(json_string_value(json_object_get(prov, "source")),
			    "kscope calibrate");
	assert_non_null(json_string_value(json_object_get(prov, "date")));
	assert_true(json_is_true(json_object_get(prov, "quick")));
	v = json_object_get(json_object_get(prov, "machine"), "key");
	assert_int_equal(strlen(json_string_value(v)), 16);
	assert_string_equal(json_string_value(json_object_get(json_object_get(prov,
					"machine"), "cpu")), m->cpu);
	assert_true(json_number_value(json_object_get(root, "clock_hz")) > 0);

	v = json_object_get(root, "spaces");
	assert_true(json_is_true(json_object_get(find_named(v, "GM"), "ready")));
	assert_true(json_integer_value(json_object_get(find_named(v, "UB"), "bytes")) > 0);
	v = json_object_get(root, "pipes");
	assert_int_equal(json_array_size(v), 3);

	paths = json_object_get(root, "paths");
	for (int d = 0; d < 2; d++) {
		json_t *p = find_path(paths, d ? "UB" : "GM", d ? "GM" : "UB");
		double top;

		assert_non_null(p);
		assert_string_equal(json_string_value(json_object_get(p, "pipe")), "MEM");
		assert_string_equal(json_string_value(json_object_get(p, "size")), "footprint");
		assert_string_equal(json_string_value(json_object_get(p, "above")), "last");
		top = check_table(json_object_get(p, "table"), d ? "UB->GM" : "GM->UB");
		/* From a few KiB to beyond the last-level cache (unless memory
		 * is short on this machine: then the measurement warns). */
		assert_true(json_number_value(json_array_get(json_array_get(
			json_object_get(p, "table"), 0), 0)) <= 8192);
		if (llc && sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE) >
				   16.0 * (double)llc)
			assert_true(top >= 2.0 * (double)llc);
	}

	instr = json_object_get(root, "instructions");
	for (size_t i = 0; i < sizeof(instrs) / sizeof(instrs[0]); i++) {
		json_t *in = find_named(instr, instrs[i]), *tables;
		bool is_float_only = !strcmp(instrs[i], "vexp") || !strcmp(instrs[i], "vln");
		const char *pipe;

		if (!in)
			fail_msg("the host chip lacks %s", instrs[i]);
		tables = json_object_get(in, "tables");
		check_table(json_object_get(tables, "fp32"), instrs[i]);
		check_table(json_object_get(tables, "fp64"), instrs[i]);
		if (is_float_only)
			assert_null(json_object_get(tables, "int32"));
		else
			check_table(json_object_get(tables, "int32"), instrs[i]);
		assert_null(json_object_get(tables, "fp16"));
		pipe = json_string_value(json_object_get(in, "pipe"));
		assert_string_equal(pipe, strncmp(instrs[i], "vreduce", 7) == 0 ? "SCALAR"
									 : "VECTOR");
		assert_int_equal(json_array_size(json_object_get(in, "spaces")),
				 strcmp(instrs[i], "mmad") == 0 ? 3 : 1);
	}
	v = json_object_get(root, "scalar");
	assert_string_equal(json_string_value(json_object_get(v, "pipe")), "SCALAR");
	assert_true(json_number_value(json_object_get(v, "cycles_per_op")) > 0);
	json_decref(root);
}

/* kscope predict reads the chip and predicts with it: a vector add in
 * tiles through the C API; and it refuses fp16, which the host chip does
 * not compute, naming the types it has. */
static void predict_with(const char *path)
{
	char err[1024];
	struct ks_pred_model *m = ks_pred_model_new(path, err, sizeof(err));
	int64_t shape[1] = { 65536 }, tile[1] = { 1024 };
	int x, y, z, xp[64], yp[64], zp[64], in[2], out[1], t[3];
	double cycles = 0;

	if (!m)
		fail_msg("kscope predict refused %s: %s", path, err);
	assert_string_equal(ks_pred_chip_name(m), "host");
	assert_true(ks_pred_chip_clock_hz(m) > 0);
	x = ks_pred_tensor(m, "x", "GM", "fp32", shape, 1, NULL);
	y = ks_pred_tensor(m, "y", "GM", "fp32", shape, 1, NULL);
	z = ks_pred_tensor(m, "z", "GM", "fp32", shape, 1, NULL);
	assert_true(x >= 0 && y >= 0 && z >= 0);
	assert_true(ks_pred_split(m, x, 0, 64, xp) >= 0);
	assert_true(ks_pred_split(m, y, 0, 64, yp) >= 0);
	assert_true(ks_pred_split(m, z, 0, 64, zp) >= 0);
	for (int i = 0; i < 64; i++) {
		for (int k = 0; k < 3; k++)
			t[k] = ks_pred_tensor(m, NULL, "UB", "fp32", tile, 1, NULL);
		assert_true(ks_pred_load(m, t[0], xp[i]) >= 0);
		assert_true(ks_pred_load(m, t[1], yp[i]) >= 0);
		in[0] = t[0];
		in[1] = t[1];
		out[0] = t[2];
		if (ks_pred_instr(m, "vadd", in, 2, out, 1) < 0)
			fail_msg("vadd: %s", ks_pred_error(m));
		assert_true(ks_pred_load(m, zp[i], t[2]) >= 0);
	}
	for (int k = 0; k < 3; k++)
		t[k] = ks_pred_tensor(m, NULL, "UB", "fp16", tile, 1, NULL);
	in[0] = t[0];
	in[1] = t[1];
	out[0] = t[2];
	assert_true(ks_pred_instr(m, "vadd", in, 2, out, 1) < 0);
	assert_non_null(strstr(ks_pred_error(m), "fp16"));
	assert_non_null(strstr(ks_pred_error(m), "fp32"));
	if (ks_pred_run(m, &cycles) != 0)
		fail_msg("run: %s", ks_pred_error(m));
	assert_true(cycles > 0 && isfinite(cycles));
	ks_pred_model_free(m);
}

static void test_chip_measure(void **state)
{
	char *dir = use_tmp_data(), chips[4096];
	struct ks_calib_machine m, other;
	struct ks_calib_chip h, back;
	struct ks_calib_opts o;
	struct seen seen = { 0, 0, 0, true, false };
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_machine_probe(&m, &e), 0);
	assert_int_equal(ks_calib_chip_prepare(&h, &e), 0);
	snprintf(chips, sizeof(chips), "%s/kscope/chips", dir);
	assert_int_equal(mode_of(chips), 0700);
	assert_int_equal(mode_of(dir), 0700);
	/* Nothing to save yet. */
	assert_int_equal(ks_calib_chip_save(&h, &e), -EINVAL);

	memset(&o, 0, sizeof(o));
	o.quick = true;
	o.progress = on_progress;
	o.arg = &seen;
	if (ks_calib_chip_measure(&o, &m, &h, &e) != 0)
		fail_msg("measure: %s", e.msg);
	assert_true(seen.chip_phase && seen.monotonic && seen.calls > 10);
	assert_int_equal(seen.last_step, seen.steps);
	assert_non_null(h.json);
	assert_true(h.quick);
	assert_true(h.clock_hz > 0 && h.read_small > 0 && h.read_large > 0 &&
		    h.write_small > 0 && h.write_large > 0);
	assert_int_equal(h.ninstr, 16);
	assert_true(h.small_fp < h.large_fp);
	assert_int_equal(ks_calib_chip_save(&h, &e), 0);
	assert_int_equal(mode_of(h.path), 0600);

	assert_int_equal(ks_calib_chip_load(&back, &m, &e), 0);
	assert_string_equal(back.path, h.path);
	assert_string_equal(back.key, h.key);
	assert_string_equal(back.created, h.created);
	assert_true(back.quick);
	assert_true(back.clock_hz == h.clock_hz);
	assert_int_equal(back.ninstr, h.ninstr);
	assert_null(back.json);
	check_chip_json(h.path, &m);
	predict_with(h.path);

	/* Another machine: the chip is stale. */
	other = m;
	other.cpus += 1;
	ks_err_clear(&e);
	assert_int_equal(ks_calib_chip_load(&back, &other, &e), -ESTALE);
	assert_non_null(strstr(e.msg, "another machine"));
	assert_non_null(strstr(e.msg, h.path));

	ks_calib_chip_free(&h);
	ks_calib_chip_free(&h); /* twice is harmless */
	ks_test_rmtree(dir);
	free(dir);
}

/* ---------------------------------------------------------------------
 * Damage and unsafe directories
 * --------------------------------------------------------------------- */

static void test_chip_damaged(void **state)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
		{ "{\"kscope_chip\": 1,", "invalid JSON at line" },
		{ "[1, 2]", "not a JSON object" },
		{ "{\"kscope_chip\": 2}", "\"kscope_chip\"" },
		{ "{\"kscope_chip\": 1, \"name\": \"other\"}", "\"name\" is not \"host\"" },
		{ "{\"kscope_chip\": 1, \"name\": \"host\", \"provenance\": {\"source\": "
		  "\"me\"}}", "provenance.source" },
		{ "{\"kscope_chip\": 1, \"name\": \"host\", \"provenance\": {\"source\": "
		  "\"kscope calibrate\"}}", "provenance.date" },
		{ "{\"kscope_chip\": 1, \"name\": \"host\", \"provenance\": {\"source\": "
		  "\"kscope calibrate\", \"date\": \"d\", \"quick\": 3}}", "provenance.quick" },
		{ "{\"kscope_chip\": 1, \"name\": \"host\", \"provenance\": {\"source\": "
		  "\"kscope calibrate\", \"date\": \"d\", \"machine\": {\"key\": \"xyz\"}}}",
		  "machine.key" },
		{ "{\"kscope_chip\": 1, \"name\": \"host\", \"provenance\": {\"source\": "
		  "\"kscope calibrate\", \"date\": \"d\", \"machine\": {\"key\": "
		  "\"0123456789abcdef\"}}, \"clock_hz\": 1e9, \"paths\": []}", "lacks the clock" },
	};
	char *dir = use_tmp_data(), path[4096];
	struct ks_calib_machine m;
	struct ks_calib_chip h;
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_machine_probe(&m, &e), 0);
	assert_int_equal(ks_calib_chip_prepare(&h, &e), 0);
	snprintf(path, sizeof(path), "%s", h.path);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ks_test_write_file(path, cases[i].text, 0600);
		ks_err_clear(&e);
		if (ks_calib_chip_load(&h, &m, &e) != -EINVAL ||
		    !strstr(e.msg, cases[i].why) || !strstr(e.msg, "is damaged") ||
		    !strstr(e.msg, path))
			fail_msg("case %zu: %s", i, e.msg);
	}
	/* Not a regular file. */
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	ks_err_clear(&e);
	assert_int_equal(ks_calib_chip_load(&h, &m, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a regular file"));
	ks_test_rmtree(dir);
	free(dir);
}

static void test_chip_unsafe_dir(void **state)
{
	char *dir = use_tmp_data(), chips[4096];
	struct ks_calib_machine m;
	struct ks_calib_chip h;
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_machine_probe(&m, &e), 0);
	assert_int_equal(ks_calib_chip_prepare(&h, &e), 0);
	snprintf(chips, sizeof(chips), "%s/kscope/chips", dir);
	assert_int_equal(chmod(chips, 0777), 0);
	ks_err_clear(&e);
	assert_int_equal(ks_calib_chip_load(&h, &m, &e), -EPERM);
	assert_non_null(strstr(e.msg, "writable by other users"));
	ks_err_clear(&e);
	assert_int_equal(ks_calib_chip_prepare(&h, &e), -EPERM);
	assert_int_equal(chmod(chips, 0700), 0);
	ks_test_rmtree(dir);
	free(dir);
}

/* ---------------------------------------------------------------------
 * The kernels compute what they are named for
 * --------------------------------------------------------------------- */

#define N 37   /* odd: no vector width divides it */

static double get(int dt, const void *p, size_t i)
{
	switch (dt) {
	case KS_CALIB_FP32: return ((const float *)p)[i];
	case KS_CALIB_FP64: return ((const double *)p)[i];
	default: return ((const int32_t *)p)[i];
	}
}

static void put(int dt, void *p, size_t i, double v)
{
	switch (dt) {
	case KS_CALIB_FP32: ((float *)p)[i] = (float)v; break;
	case KS_CALIB_FP64: ((double *)p)[i] = v; break;
	default: ((int32_t *)p)[i] = (int32_t)v; break;
	}
}

/* What instruction name computes on a and b, for data type dt. */
static double reference(const char *name, int dt, double a, double b)
{
	bool in = dt == KS_CALIB_INT32;

	if (!strcmp(name, "vadd") || !strcmp(name, "vadds"))
		return a + b;
	if (!strcmp(name, "vsub"))
		return a - b;
	if (!strcmp(name, "vmul") || !strcmp(name, "vmuls"))
		return a * b;
	if (!strcmp(name, "vdiv"))
		return in ? (double)((int32_t)a / (int32_t)b) : a / b;
	if (!strcmp(name, "vmax"))
		return a > b ? a : b;
	if (!strcmp(name, "vmin"))
		return a < b ? a : b;
	if (!strcmp(name, "vexp"))
		return exp(a);
	if (!strcmp(name, "vln"))
		return log(a);
	if (!strcmp(name, "vabs"))
		return fabs(a);
	if (!strcmp(name, "vrelu"))
		return a > 0 ? a : 0;
	return a; /* vconv */
}

static void test_vector_kernels(void **state)
{
	double x[N * 2], y[N * 2], z[N * 2];   /* room for N of any type */

	(void)state;
	for (size_t k = 0; ks_calib_vec_kernels[k].name; k++) {
		const struct ks_calib_vec_kernel *vk = &ks_calib_vec_kernels[k];

		for (int dt = 0; dt < KS_CALIB_NDT; dt++) {
			int out = vk->shape == KS_CALIB_VEC_CONV ? vk->conv_to[dt] : dt;
			double acc = 0, max = -1e300;

			if (!vk->fn[dt])
				continue;
			for (size_t i = 0; i < N; i++) {
				/* negative values too (vabs, vrelu), positive for vln */
				double a = strcmp(vk->name, "vln") ? (double)((int)i % 9 - 4)
								   : 1.0 + (double)i;
				put(dt, x, i, a);
				put(dt, y, i, 1.0 + (double)(i % 5));
				put(out, z, i, -7);
			}
			vk->fn[dt](z, x, y, N);
			for (size_t i = 0; i < N; i++) {
				double a = get(dt, x, i), b = get(dt, y, i);
				double want, got;

				acc += a;
				max = a > max ? a : max;
				if (vk->shape == KS_CALIB_VEC_REDUCE)
					continue;
				if (vk->shape == KS_CALIB_VEC_SCALAR)
					b = get(dt, y, 0);
				want = reference(vk->name, dt, a, b);
				got = get(out, z, i);
				if (fabs(got - want) > 1e-5 * (1 + fabs(want)))
					fail_msg("%s %s [%zu]: %g, want %g", vk->name,
						 ks_calib_dt_names[dt], i, got, want);
			}
			if (vk->shape == KS_CALIB_VEC_REDUCE) {
				double want = strcmp(vk->name, "vreduce_sum") ? max : acc;

				if (get(dt, z, 0) != want)
					fail_msg("%s %s: %g, want %g", vk->name,
						 ks_calib_dt_names[dt], get(dt, z, 0), want);
				/* only z[0] is written */
				assert_true(get(dt, z, 1) == -7);
			}
		}
	}
}

static void test_mmad_kernels(void **state)
{
	enum { M = 5, K = 7, NN = 3 };
	double a[M * K], b[K * NN], c[M * NN];

	(void)state;
	for (int dt = 0; dt < KS_CALIB_NDT; dt++) {
		for (int i = 0; i < M * K; i++)
			put(dt, a, (size_t)i, (double)(i % 4));
		for (int i = 0; i < K * NN; i++)
			put(dt, b, (size_t)i, (double)(i % 3) - 1);
		for (int i = 0; i < M * NN; i++)
			put(dt, c, (size_t)i, 10);
		ks_calib_mmad_kernels[dt](c, a, b, M, K, NN);
		for (int i = 0; i < M; i++)
			for (int j = 0; j < NN; j++) {
				double want = 10;

				for (int p = 0; p < K; p++)
					want += get(dt, a, (size_t)(i * K + p)) *
						get(dt, b, (size_t)(p * NN + j));
				if (get(dt, c, (size_t)(i * NN + j)) != want)
					fail_msg("mmad %s c[%d][%d]: %g, want %g",
						 ks_calib_dt_names[dt], i, j,
						 get(dt, c, (size_t)(i * NN + j)), want);
			}
	}
}

static void test_write_and_scalar_kernels(void **state)
{
	size_t n = 4096; /* a multiple of every granule */
	uint64_t x = 12345;
	double *p;

	(void)state;
	assert_int_equal(posix_memalign((void **)&p, 64, (n + 8) * sizeof(double)), 0);
	for (const struct ks_calib_write_kernel *k = ks_calib_write_kernels; k->isa; k++) {
		if (!k->supported())
			continue;
		assert_int_equal(n % k->granule, 0);
		for (size_t i = 0; i < n + 8; i++)
			p[i] = -1;
		k->fill(p, n, 2.5);
		for (size_t i = 0; i < n; i++)
			if (p[i] != 2.5)
				fail_msg("%s: element %zu is %g", k->isa, i, p[i]);
		assert_true(p[n] == -1); /* nothing beyond */
	}
	assert_true(ks_calib_write_kernel_best()->supported());
	free(p);
	/* The chain, against the same operations written out. */
	for (long i = 0; i < 1000; i += 4) {
		x += (uint64_t)i;
		x ^= x >> 7;
		x += 0x9e3779b97f4a7c15ull;
	}
	assert_true(ks_calib_scalar_chain(12345, 1000) == x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chip_path),
		cmocka_unit_test(test_chip_missing),
		cmocka_unit_test(test_chip_measure),
		cmocka_unit_test(test_chip_damaged),
		cmocka_unit_test(test_chip_unsafe_dir),
		cmocka_unit_test(test_vector_kernels),
		cmocka_unit_test(test_mmad_kernels),
		cmocka_unit_test(test_write_and_scalar_kernels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
