/*
 * Unit tests of kscope op's deliverables (src/op/post): the --flops
 * expression (syntax, precedence, division by zero, unknown names,
 * overflow), and the deliverables written from the raw-file fixtures in
 * tests/op/post/fixtures (a launch with everything, a CUDA launch of an
 * H200 against CUDA ceilings or none, a corrupt
 * context.json, a missing kernel source, a failed replay, application and
 * range replay, an empty measure.json), checked column by column, with
 * visualize_data.bin read back through the container reader with every
 * payload checked as `kscope inspect --check` does.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
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

#include <kscope/vizbin.h>

#include "oppost.h"
#include "outdir.h"
#include "test_util.h"

#ifndef KS_FIXTURES
#error "KS_FIXTURES must name tests/op/post/fixtures"
#endif

/* ------------------------------------------------------------------ */
/* The --flops expression                                              */
/* ------------------------------------------------------------------ */

static const struct ks_expr_var mnk[] = {
	{ "M", 256 }, { "N", 256 }, { "K", 256 }, { "gx", 1024 }, { "zero", 0 },
};

static double eval_ok(const char *text)
{
	struct ks_expr *f;
	struct ks_err err;
	double v = -1;

	assert_int_equal(ks_expr_parse(text, &f, &err), 0);
	assert_string_equal(ks_expr_text(f), text);
	assert_int_equal(ks_expr_eval(f, mnk, 5, &v, &err), 0);
	ks_expr_free(f);
	return v;
}

static void test_flops_values(void **state)
{
	(void)state;
	assert_true(eval_ok("2*M*N*K") == 33554432.0);
	assert_true(eval_ok("1+2*3") == 7);
	assert_true(eval_ok("(1+2)*3") == 9);
	assert_true(eval_ok("10-4-3") == 3);     /* left-associative */
	assert_true(eval_ok("24/4/2") == 3);
	assert_true(eval_ok("-(-2)") == 2);
	assert_true(eval_ok("+5") == 5);
	assert_true(eval_ok(" 2 * gx ") == 2048);
	assert_true(eval_ok("10/4") == 2.5);
	assert_true(eval_ok("1e3*2") == 2000);
	assert_true(eval_ok("1.5E+2") == 150);
	assert_true(eval_ok(".5*M") == 128);
	assert_true(eval_ok("zero") == 0);
}

static void parse_fails(const char *text, const char *want)
{
	struct ks_expr *f = (void *)1;
	struct ks_err err;

	ks_err_clear(&err);
	assert_int_equal(ks_expr_parse(text, &f, &err), -EINVAL);
	assert_null(f);
	if (!strstr(err.msg, want))
		fail_msg("'%s': message '%s' lacks '%s'", text, err.msg, want);
}

static void test_flops_syntax(void **state)
{
	char deep[300], longer[KS_EXPR_MAX_LEN + 10];

	(void)state;
	parse_fails("", "at the end");
	parse_fails("2*", "at the end");
	parse_fails("2**3", "position 3");
	parse_fails("(1+2", "')' is missing");
	parse_fails("1+2)", "'(' is missing");
	parse_fails("M N", "operator");
	parse_fails("2$", "position 2 ('$')");
	parse_fails("1e", "exponent");
	parse_fails("1.2.3", "position 4");
	parse_fails(".", "no digits");
	parse_fails("2*\x01", "byte 0x01");
	parse_fails("1e999", "out of range");
	memset(deep, '(', 100);
	deep[100] = '1';
	memset(deep + 101, ')', 100);
	deep[201] = '\0';
	parse_fails(deep, "nests too deeply");
	memset(deep, '-', 200);
	deep[200] = '1';
	deep[201] = '\0';
	parse_fails(deep, "nests too deeply");
	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	parse_fails(longer, "characters");
}

static int eval_rc(const char *text, struct ks_err *err)
{
	struct ks_expr *f;
	double v = 0;
	int rc;

	assert_int_equal(ks_expr_parse(text, &f, err), 0);
	rc = ks_expr_eval(f, mnk, 5, &v, err);
	ks_expr_free(f);
	return rc;
}

static void test_flops_eval_errors(void **state)
{
	struct ks_err err;

	(void)state;
	assert_int_equal(eval_rc("M/(N-N)", &err), -EDOM);
	assert_non_null(strstr(err.msg, "divides by zero"));
	assert_int_equal(eval_rc("1/zero", &err), -EDOM);
	assert_int_equal(eval_rc("2*Q*M", &err), -ENOENT);
	assert_non_null(strstr(err.msg, "'Q'"));
	assert_non_null(strstr(err.msg, "names available: M, N, K, gx, zero"));
	assert_int_equal(eval_rc("1e300*1e300", &err), -ERANGE);
	assert_non_null(strstr(err.msg, "overflows"));
	assert_int_equal(eval_rc("-1e300*1e300*M", &err), -ERANGE);
	assert_int_equal(eval_rc("0-M", &err), -EDOM);
	assert_non_null(strstr(err.msg, "negative"));
	{
		struct ks_expr *f;
		double v;

		assert_int_equal(ks_expr_parse("x", &f, &err), 0);
		assert_int_equal(ks_expr_eval(f, NULL, 0, &v, &err), -ENOENT);
		assert_non_null(strstr(err.msg, "names available: none"));
		ks_expr_free(f);
	}
}

static void test_dirname(void **state)
{
	char out[400], longname[300];

	(void)state;
	ks_oppost_dirname(5, "mm_tiled", 7, out, sizeof(out));
	assert_string_equal(out, "5/mm_tiled_7");
	ks_oppost_dirname(5, "a.b-c/../d", 0, out, sizeof(out));
	assert_string_equal(out, "5/a_b_c____d_0");
	ks_oppost_dirname(12, "", 3, out, sizeof(out));
	assert_string_equal(out, "12/unnamed_3");
	memset(longname, 'k', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ks_oppost_dirname(1, longname, 9, out, sizeof(out));
	assert_int_equal(strlen(out), 2 + 200 + 2);
}

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

struct fx {
	char *tmp;
	struct ks_rundir run;
	char warnings[8192];
	size_t nwarn;
};

static void collect_warning(void *ctx, const char *msg)
{
	struct fx *f = ctx;
	size_t len = strlen(f->warnings);

	snprintf(f->warnings + len, sizeof(f->warnings) - len, "%s\n", msg);
	f->nwarn++;
}

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	f->tmp = ks_test_tmpdir();
	f->run.path = strdup(f->tmp);
	f->run.dirfd = open(f->tmp, O_RDONLY | O_DIRECTORY);
	assert_true(f->run.dirfd >= 0);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	ks_rundir_close(&f->run);
	ks_test_rmtree(f->tmp);
	free(f->tmp);
	free(f);
	return 0;
}

/* Copies fixture name into <run>/<rel> (rel "<pid>/<dir>"). */
static void install(struct fx *f, const char *name, const char *rel)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s' && cp '%s/%s'/* '%s/%s'/", f->tmp, rel,
		 KS_FIXTURES, name, f->tmp, rel);
	assert_int_equal(system(cmd), 0);
}

static char *path_of(struct fx *f, const char *rel, const char *file)
{
	static char p[4096];

	snprintf(p, sizeof(p), "%s/%s/%s", f->tmp, rel, file);
	return p;
}

static struct ks_calib *test_calib(void)
{
	static struct ks_calib c;

	memset(&c, 0, sizeof(c));
	c.nmem = 2;
	snprintf(c.mem[0].name, sizeof(c.mem[0].name), "L1");
	c.mem[0].per_s = 100e9;
	snprintf(c.mem[1].name, sizeof(c.mem[1].name), "DRAM");
	c.mem[1].per_s = 10e9;
	c.ncompute = 2;
	snprintf(c.compute[0].name, sizeof(c.compute[0].name), "CPU FP32 FMA");
	c.compute[0].per_s = 200e9;
	snprintf(c.compute[1].name, sizeof(c.compute[1].name), "CPU FP64 FMA");
	c.compute[1].per_s = 100e9;
	return &c;
}

/* ------------------------------------------------------------------ */
/* Reading the deliverables back                                       */
/* ------------------------------------------------------------------ */

#define MAXF 64
#define MAXR 32

struct csv {
	size_t nrows;           /* including the header */
	size_t nf[MAXR];
	char *f[MAXR][MAXF];
	char *text;
};

/* A small RFC 4180 reader for the tests' own files. */
static void csv_read(const char *path, struct csv *c)
{
	size_t size;
	char *p, *out;
	size_t r = 0, k = 0;

	memset(c, 0, sizeof(*c));
	c->text = (char *)ks_test_read_file(path, &size);
	if (!c->text)
		fail_msg("cannot read %s", path);
	c->text[size] = '\0';
	assert_true(size > 0 && c->text[size - 1] == '\n');
	p = out = c->text;
	c->f[0][0] = out;
	while (*p) {
		if (*p == '"') {
			for (p++; *p; p++) {
				if (*p == '"' && p[1] == '"') {
					*out++ = '"';
					p++;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					*out++ = *p;
				}
			}
			continue;
		}
		if (*p == ',' || *p == '\n') {
			bool nl = *p == '\n';

			*out++ = '\0';
			p++;
			k++;
			assert_true(k < MAXF);
			if (nl) {
				c->nf[r] = k;
				r++;
				k = 0;
				if (!*p)
					break;
				assert_true(r < MAXR);
			}
			c->f[r][k] = out;
			continue;
		}
		*out++ = *p++;
	}
	c->nrows = r;
	for (size_t i = 1; i < r; i++)
		assert_int_equal(c->nf[i], c->nf[0]);
}

/* The field of row r (1 = first data row) in column name. */
static const char *cell(const struct csv *c, size_t r, const char *name)
{
	assert_true(r < c->nrows);
	for (size_t k = 0; k < c->nf[0]; k++)
		if (strcmp(c->f[0][k], name) == 0)
			return c->f[r][k];
	fail_msg("no column %s", name);
	return NULL;
}

static void csv_free(struct csv *c)
{
	free(c->text);
}

static void assert_mode_440(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		fail_msg("%s is missing", path);
	assert_int_equal(st.st_mode & 0777, 0440);
}

/* Opens visualize_data.bin with every payload checked; returns the block
 * types in order as "05 08 09 0d". */
static void viz_types(const char *path, char *out, size_t size)
{
	struct ks_vb_reader *r;
	struct ks_vb_error err;
	size_t off = 0;

	if (ks_vb_open(path, KS_VB_CHECK_PAYLOADS, &r, &err) != 0)
		fail_msg("%s: %s", path, err.msg);
	out[0] = '\0';
	for (uint32_t i = 0; i < ks_vb_count(r); i++)
		off += (size_t)snprintf(out + off, size - off, "%s%02x", i ? " " : "",
					ks_vb_block_at(r, i)->type);
	ks_vb_close(r);
}

/* The payload of the first block of type in path, parsed. */
static json_t *viz_block(const char *path, unsigned type)
{
	struct ks_vb_reader *r;
	struct ks_vb_error err;
	json_t *j = NULL;

	assert_int_equal(ks_vb_open(path, KS_VB_CHECK_PAYLOADS, &r, &err), 0);
	for (uint32_t i = 0; i < ks_vb_count(r) && !j; i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);

		if (b->type == type)
			j = json_loadb((const char *)b->payload, b->payload_size, 0, NULL);
	}
	ks_vb_close(r);
	assert_non_null(j);
	return j;
}

static json_t *load(const char *path)
{
	json_error_t e;
	json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &e);

	if (!j)
		fail_msg("%s: %s", path, e.text);
	return j;
}

static int run_post(struct fx *f, const char *rel, struct ks_oppost_opts *o,
		    struct ks_oppost_result *res, struct ks_err *err)
{
	o->warn = collect_warning;
	o->warn_ctx = f;
	return ks_oppost_launch(&f->run, rel, o, res, err);
}

static void all_files(struct fx *f, const char *rel)
{
	static const char *const files[] = { "OpBasicInfo.csv", "Timing.csv", "Memory.csv",
					     "trace.json", "visualize_data.bin", NULL };

	for (int i = 0; files[i]; i++)
		assert_mode_440(path_of(f, rel, files[i]));
}

/* ------------------------------------------------------------------ */
/* Deliverables                                                        */
/* ------------------------------------------------------------------ */

static void test_full_launch(void **state)
{
	struct fx *f = *state;
	const char *rel = "4242/mm_tiled_3";
	struct ks_expr *flops;
	struct ks_oppost_opts o = { .calib = test_calib() };
	struct ks_oppost_result res;
	struct ks_err err;
	struct csv c;
	char types[64];
	json_t *j, *ev, *e;
	size_t i, nx = 0;

	install(f, "mm", rel);
	assert_int_equal(ks_expr_parse("2*M*N*K", &flops, &err), 0);
	o.flops = flops;
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	assert_int_equal(f->nwarn, 0);
	all_files(f, rel);

	assert_string_equal(res.name, "mm_tiled");
	assert_int_equal(res.index, 3);
	assert_int_equal(res.pid, 4242);
	assert_string_equal(res.global, "256x256");
	assert_string_equal(res.mode, "kernel");
	assert_string_equal(res.status, "ok");
	assert_int_equal(res.passes, 5);
	assert_true(res.median_us == 1000 && res.min_us == 900 && res.max_us == 1200);
	assert_true(fabs(res.mean_us - 1040) < 1e-9);
	assert_true(fabs(res.spread_pct - 30) < 1e-9);
	assert_true(fabs(res.p80_p20 - 1100.0 / 900) < 1e-9);
	assert_true(fabs(res.gbps - 786432 / 1e6) < 1e-12);
	assert_true(fabs(res.gflops - 33554432 / 1e6) < 1e-12);

	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_int_equal(c.nrows, 2);
	assert_string_equal(cell(&c, 1, "name"), "mm_tiled");
	assert_string_equal(cell(&c, 1, "device"), "cpu-test-device");
	/* OpenCL gives the device's top clock, not the clocks of the run. */
	assert_string_equal(cell(&c, 1, "max_clock_mhz"), "2500");
	assert_string_equal(cell(&c, 1, "clock_mhz"), "");
	assert_string_equal(cell(&c, 1, "memory_clock_mhz"), "");
	assert_string_equal(cell(&c, 1, "gpu_time_us"), "");
	assert_string_equal(cell(&c, 1, "achieved_occupancy_pct"), "");
	assert_string_equal(cell(&c, 1, "driver"), "4.0");
	assert_string_equal(cell(&c, 1, "global_size"), "256x256");
	assert_string_equal(cell(&c, 1, "local_size"), "16x16");
	assert_string_equal(cell(&c, 1, "global_offset"), "");
	assert_string_equal(cell(&c, 1, "work_groups"), "256");
	assert_string_equal(cell(&c, 1, "source_file"), "kernel.cl");
	assert_string_equal(cell(&c, 1, "warmups"), "2");
	assert_string_equal(cell(&c, 1, "passes"), "5");
	assert_string_equal(cell(&c, 1, "cache_flush"), "on");
	assert_string_equal(cell(&c, 1, "median_us"), "1000.000");
	assert_string_equal(cell(&c, 1, "min_us"), "900.000");
	assert_string_equal(cell(&c, 1, "mean_us"), "1040.000");
	assert_string_equal(cell(&c, 1, "spread_pct"), "30.00");
	assert_string_equal(cell(&c, 1, "original_us"), "1050.000");
	assert_string_equal(cell(&c, 1, "bytes_read"), "524288");
	assert_string_equal(cell(&c, 1, "bytes_written"), "262144");
	assert_string_equal(cell(&c, 1, "bandwidth_gbps"), "0.786");
	assert_string_equal(cell(&c, 1, "flops"), "33554432");
	assert_string_equal(cell(&c, 1, "flops_expression"), "2*M*N*K");
	assert_string_equal(cell(&c, 1, "gflops"), "33.554");
	assert_string_equal(cell(&c, 1, "arithmetic_intensity"), "42.6667");
	/* 42.67 FLOP/byte x 10 GB/s is above 200 GFLOP/s: compute binds. */
	assert_string_equal(cell(&c, 1, "memory_ceiling"), "DRAM");
	assert_string_equal(cell(&c, 1, "compute_ceiling"), "CPU FP32 FMA");
	assert_string_equal(cell(&c, 1, "binding_ceiling"), "compute: CPU FP32 FMA");
	assert_string_equal(cell(&c, 1, "attainable_gflops"), "200.000");
	assert_string_equal(cell(&c, 1, "peak_bandwidth_pct"), "7.86");
	assert_string_equal(cell(&c, 1, "roofline"), "yes");
	assert_string_equal(cell(&c, 1, "counters"), "supported");
	assert_string_equal(cell(&c, 1, "status"), "ok");
	csv_free(&c);

	csv_read(path_of(f, rel, "Timing.csv"), &c);
	assert_int_equal(c.nrows, 1 + 2 + 5);
	assert_string_equal(cell(&c, 1, "kind"), "warmup");
	assert_string_equal(cell(&c, 1, "start_us"), "0.000");
	assert_string_equal(cell(&c, 2, "start_us"), "1500.000");
	assert_string_equal(cell(&c, 2, "start_basis"), "estimated");
	assert_string_equal(cell(&c, 2, "instructions"), "");
	assert_string_equal(cell(&c, 3, "kind"), "measured");
	assert_string_equal(cell(&c, 3, "pass"), "1");
	assert_string_equal(cell(&c, 3, "start_us"), "3000.000");
	assert_string_equal(cell(&c, 3, "start_basis"), "measured");
	assert_string_equal(cell(&c, 3, "duration_us"), "1000.000");
	assert_string_equal(cell(&c, 3, "instructions"), "100");
	assert_string_equal(cell(&c, 7, "cycles"), "204");
	assert_string_equal(cell(&c, 7, "duration_us"), "1200.000");
	csv_free(&c);

	csv_read(path_of(f, rel, "Memory.csv"), &c);
	assert_int_equal(c.nrows, 4);
	assert_string_equal(cell(&c, 3, "arg"), "2");
	assert_string_equal(cell(&c, 3, "name"), "C");
	assert_string_equal(cell(&c, 3, "flags"), "CL_MEM_WRITE_ONLY");
	assert_string_equal(cell(&c, 3, "backed_up"), "yes");
	assert_string_equal(cell(&c, 3, "bytes_written"), "262144");
	assert_string_equal(cell(&c, 3, "write_basis"), "bytes changed by the launch");
	assert_string_equal(cell(&c, 3, "traffic_share_pct"), "33.33");
	assert_string_equal(cell(&c, 1, "flags"), "CL_MEM_READ_ONLY|CL_MEM_COPY_HOST_PTR");
	assert_string_equal(cell(&c, 1, "bandwidth_gbps"), "0.262");
	csv_free(&c);

	j = load(path_of(f, rel, "trace.json"));
	ev = json_object_get(j, "traceEvents");
	assert_int_equal(json_array_size(ev), 2 + 7);
	json_array_foreach(ev, i, e) {
		json_t *args = json_object_get(e, "args");

		if (strcmp(json_string_value(json_object_get(e, "ph")), "X") != 0)
			continue;
		nx++;
		assert_string_equal(json_string_value(json_object_get(args, "code_location")),
				    "mm_tiled in kernel.cl");
		assert_string_equal(json_string_value(json_object_get(args, "source_file")),
				    "kernel.cl");
		assert_true(json_is_integer(json_object_get(args, "pass")));
	}
	assert_int_equal(nx, 7);
	e = json_array_get(ev, 2 + 2);  /* measured pass 1 */
	assert_string_equal(json_string_value(json_object_get(e, "name")), "mm_tiled pass 1");
	assert_true(json_number_value(json_object_get(e, "ts")) == 3000);
	assert_true(json_number_value(json_object_get(e, "dur")) == 1000);
	json_decref(j);

	viz_types(path_of(f, rel, "visualize_data.bin"), types, sizeof(types));
	assert_string_equal(types, "05 08 09 0d");
	j = viz_block(path_of(f, rel, "visualize_data.bin"), KS_VB_BASE_INFO);
	assert_string_equal(json_string_value(json_object_get(j, "soc")), "cpu-test-device");
	assert_string_equal(json_string_value(json_object_get(j, "op_type")), "opencl");
	assert_int_equal(json_integer_value(json_object_get(j, "block_dim")), 256);
	assert_true(json_number_value(json_object_get(j, "duration")) == 1000);
	assert_string_equal(json_string_value(json_object_get(j, "pid")), "4242");
	assert_true(json_array_size(json_object_get(j, "advice")) >= 2);
	json_decref(j);
	j = viz_block(path_of(f, rel, "visualize_data.bin"), KS_VB_MEMORY_GRAPH);
	e = json_object_get(json_array_get(json_object_get(j, "core_memory_map"), 0),
			    "memory_unit");
	assert_int_equal(json_array_size(e), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(e, 0),
							      "memory_path")),
			    "global memory -> kernel");
	assert_true(json_number_value(json_object_get(json_array_get(e, 0), "request")) ==
		    524288);
	assert_true(fabs(json_number_value(json_object_get(json_array_get(e, 1),
							   "peak_ratio")) - 2.62) < 1e-9);
	json_decref(j);
	j = viz_block(path_of(f, rel, "visualize_data.bin"), KS_VB_MEMORY_TABLE);
	e = json_array_get(json_object_get(json_array_get(json_object_get(j,
		"table_per_block"), 0), "table_detail"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "table_name")), "Buffers");
	assert_int_equal(json_array_size(json_object_get(e, "row")), 3);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(e, "size"), 0)), 3);
	json_decref(j);
	j = viz_block(path_of(f, rel, "visualize_data.bin"), KS_VB_ROOFLINE);
	e = json_object_get(json_array_get(json_object_get(j, "multiple_rooflines"), 0),
			    "rooflines");
	/* L1 and DRAM under FP32, and FP64 over DRAM. */
	assert_int_equal(json_array_size(e), 3);
	assert_true(json_number_value(json_object_get(json_array_get(e, 1), "bw")) == 10);
	assert_true(json_number_value(json_array_get(json_object_get(json_array_get(e, 0),
								     "point"), 1)) == 33.554);
	json_decref(j);
	ks_expr_free(flops);
}

/* test_calib() with a CUDA device measured: dev's ceilings, and the
 * compute list kscope calibrate makes (a device whose name starts the
 * same way too). */
static struct ks_calib *cuda_calib(const char *dev)
{
	struct ks_calib *c = test_calib();

	c->have_cuda = true;
	snprintf(c->cuda.device, sizeof(c->cuda.device), "%s", dev);
	c->cuda.bytes_per_s = 4.5e12;
	c->cuda.fp32 = 6.5e13;
	c->cuda.fp16 = 1.3e14;
	snprintf(c->compute[2].name, sizeof(c->compute[2].name), "CUDA FP32 FMA (%s)", dev);
	c->compute[2].per_s = 6.5e13;
	snprintf(c->compute[3].name, sizeof(c->compute[3].name), "CUDA FP16 FMA (%s)", dev);
	c->compute[3].per_s = 1.3e14;
	snprintf(c->compute[4].name, sizeof(c->compute[4].name), "CUDA FP16 FMA (%s NVL)",
		 dev);
	c->compute[4].per_s = 1.2e14;
	c->ncompute = 5;
	return c;
}

/* A CUDA launch with CUPTI's counters (a real one of an H200,
 * fixtures/cuda_mm_hw: mm_naive on 512x512 matrices): the bytes are the
 * DRAM bytes CUPTI measured, not the arguments' sizes, and say so; the
 * global size has the launch's two dimensions. */
static void test_cuda_measured_bytes(void **state)
{
	struct fx *f = *state;
	const char *rel = "1631/mm_naive_0";
	struct ks_oppost_opts o = { 0 };
	struct ks_oppost_result res;
	struct ks_expr *flops;
	struct ks_err err;
	struct csv c;

	install(f, "cuda_mm_hw", rel);
	assert_int_equal(ks_expr_parse("2*gx*gy*gx", &flops, &err), 0);
	o.flops = flops;
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	if (strstr(f->warnings, "left out") || strstr(f->warnings, "FLOPs unknown"))
		fail_msg("warnings: %s", f->warnings);
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "global_size"), "512x512");
	assert_string_equal(cell(&c, 1, "bytes_read"), "2103808");
	assert_string_equal(cell(&c, 1, "bytes_written"), "0");
	assert_string_equal(cell(&c, 1, "bytes_basis"),
			    "measured: DRAM bytes from the hardware counters (CUPTI)");
	assert_string_equal(cell(&c, 1, "flops"), "268435456");
	assert_string_equal(cell(&c, 1, "median_us"), "58.129");
	assert_true(fabs(strtod(cell(&c, 1, "arithmetic_intensity"), NULL) -
			 268435456.0 / 2103808) < 1e-3);
	assert_true(fabs(strtod(cell(&c, 1, "bandwidth_gbps"), NULL) - 2103808 / 58129.0) < 1e-3);
	/* The GPU's own duration and the achieved occupancy, from CUPTI. */
	assert_string_equal(cell(&c, 1, "gpu_time_us"), "58.720");
	assert_string_equal(cell(&c, 1, "achieved_occupancy_pct"), "75.02");
	csv_free(&c);
	assert_true(fabs(res.gpu_us - 58.72) < 1e-9);
	ks_expr_free(flops);
}

/* --backup all (fixtures/cuda_backup_all: cuda_mm_hw's launch, without
 * its counters, with one more allocation as the runtime lists it): the
 * allocation no argument reaches is a row of its own in Memory.csv, by
 * address, with the bytes it changed and its reads unknown, and the
 * totals say some counts are unknown. */
static void test_cuda_backup_all(void **state)
{
	struct fx *f = *state;
	const char *rel = "1631/mm_naive_0";
	struct ks_oppost_opts o = { 0 };
	struct ks_oppost_result res;
	struct ks_err err;
	struct csv c;

	install(f, "cuda_backup_all", rel);
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	if (strstr(f->warnings, "left out"))
		fail_msg("warnings: %s", f->warnings);
	csv_read(path_of(f, rel, "Memory.csv"), &c);
	assert_int_equal(c.nrows, 5);
	assert_string_equal(cell(&c, 4, "arg"), "");
	assert_string_equal(cell(&c, 4, "name"), "(not an argument)");
	assert_string_equal(cell(&c, 4, "address"), "0x7f59cc800000");
	assert_string_equal(cell(&c, 4, "bytes"), "4096");
	assert_string_equal(cell(&c, 4, "backed_up"), "yes");
	assert_string_equal(cell(&c, 4, "bytes_read"), "");
	assert_string_equal(cell(&c, 4, "bytes_written"), "256");
	assert_string_equal(cell(&c, 3, "arg"), "2");
	assert_string_equal(cell(&c, 3, "bytes_written"), "502340");
	csv_free(&c);
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "bytes_written"), "502596");
	assert_string_equal(cell(&c, 1, "bytes_basis"), "partial: some buffers' counts are unknown");
	csv_free(&c);
}

/* A CUDA launch (a real one of an H200, fixtures/cuda_vadd): placed
 * against the calibration's CUDA ceilings when it measured that device;
 * with no roofline, and no CPU ceiling, when it did not. */
static void test_cuda_roofline(void **state)
{
	struct fx *f = *state;
	const char *rel = "769/vadd_0";
	struct ks_oppost_opts o = { .calib = cuda_calib("NVIDIA H200") };
	struct ks_oppost_result res;
	struct ks_expr *flops;
	struct ks_err err;
	struct csv c;
	char types[64];
	json_t *j, *e;
	/* One add per element: 1048576 FLOPs, over 12582912 bytes
	 * read and 2611894 written, in a median of 8.015 us. */
	double intensity = 1048576.0 / (12582912 + 2611894), attainable = intensity * 4500;

	install(f, "cuda_vadd", rel);
	/* The fixture is verbatim, and this context.json's "work" (three
	 * sizes for one dimension) is not read: the FLOPs are a number. */
	assert_int_equal(ks_expr_parse("1048576", &flops, &err), 0);
	o.flops = flops;
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	if (strstr(f->warnings, "FLOPs unknown") || strstr(f->warnings, "calibration"))
		fail_msg("warnings: %s", f->warnings);
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "platform"), "NVIDIA CUDA");
	assert_string_equal(cell(&c, 1, "device"), "NVIDIA H200");
	/* The clocks NVML read during the replay. */
	assert_string_equal(cell(&c, 1, "clock_mhz"), "1980");
	assert_string_equal(cell(&c, 1, "max_clock_mhz"), "1980");
	assert_string_equal(cell(&c, 1, "memory_clock_mhz"), "3201");
	assert_string_equal(cell(&c, 1, "memory_max_clock_mhz"), "3201");
	j = viz_block(path_of(f, rel, "visualize_data.bin"), KS_VB_BASE_INFO);
	assert_int_equal(json_integer_value(json_object_get(j, "clock_mhz")), 1980);
	assert_int_equal(json_integer_value(json_object_get(j, "memory_clock_mhz")), 3201);
	json_decref(j);
	assert_string_equal(cell(&c, 1, "roofline"), "yes");
	assert_string_equal(cell(&c, 1, "memory_ceiling"), "CUDA DRAM (NVIDIA H200)");
	assert_string_equal(cell(&c, 1, "memory_ceiling_gbps"), "4500.000");
	assert_string_equal(cell(&c, 1, "compute_ceiling"), "CUDA FP32 FMA (NVIDIA H200)");
	assert_string_equal(cell(&c, 1, "compute_ceiling_gflops"), "65000.000");
	assert_string_equal(cell(&c, 1, "binding_ceiling"), "memory: CUDA DRAM (NVIDIA H200)");
	assert_true(fabs(strtod(cell(&c, 1, "attainable_gflops"), NULL) - attainable) < 1e-3);
	assert_true(fabs(strtod(cell(&c, 1, "arithmetic_intensity"), NULL) - intensity) < 1e-6);
	assert_true(fabs(strtod(cell(&c, 1, "peak_bandwidth_pct"), NULL) -
			 15194806 / 8.015e3 / 4500 * 100) < 0.01);
	csv_free(&c);
	/* The chart: the GPU's DRAM under its FP32, and its FP16 over the
	 * DRAM; no CPU ceiling, no other device's. */
	viz_types(path_of(f, rel, "visualize_data.bin"), types, sizeof(types));
	assert_string_equal(types, "05 08 09 0d");
	j = viz_block(path_of(f, rel, "visualize_data.bin"), KS_VB_ROOFLINE);
	e = json_array_get(json_object_get(j, "multiple_rooflines"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "title")), "NVIDIA H200 (CUDA)");
	e = json_object_get(e, "rooflines");
	assert_int_equal(json_array_size(e), 2);
	assert_true(json_number_value(json_object_get(json_array_get(e, 0), "bw")) == 4500);
	assert_string_equal(json_string_value(json_object_get(json_array_get(e, 0), "bw_name")),
			    "CUDA DRAM (NVIDIA H200)");
	assert_string_equal(json_string_value(json_object_get(json_array_get(e, 1),
							      "computility_name")),
			    "CUDA FP16 FMA (NVIDIA H200)");
	json_decref(j);

	/* A calibration of another GPU: no roofline, and why; the CPU's
	 * DRAM is no ceiling for a GPU's kernel. */
	install(f, "cuda_vadd", "769/vadd_1");
	o.calib = cuda_calib("NVIDIA H100 80GB HBM3");
	assert_int_equal(run_post(f, "769/vadd_1", &o, &res, &err), 0);
	csv_read(path_of(f, "769/vadd_1", "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "roofline"),
			    "no: the calibration has no ceilings for the CUDA device "
			    "'NVIDIA H200' (it measured 'NVIDIA H100 80GB HBM3'); run "
			    "'kscope calibrate' on the machine with that device");
	assert_string_equal(cell(&c, 1, "memory_ceiling"), "");
	assert_string_equal(cell(&c, 1, "compute_ceiling"), "");
	assert_string_equal(cell(&c, 1, "peak_bandwidth_pct"), "");
	assert_string_equal(cell(&c, 1, "attainable_gflops"), "");
	csv_free(&c);
	viz_types(path_of(f, "769/vadd_1", "visualize_data.bin"), types, sizeof(types));
	assert_string_equal(types, "05 08 09");

	/* A calibration without CUDA at all says so. */
	install(f, "cuda_vadd", "769/vadd_2");
	o.calib = test_calib();
	assert_int_equal(run_post(f, "769/vadd_2", &o, &res, &err), 0);
	csv_read(path_of(f, "769/vadd_2", "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "roofline"),
			    "no: the calibration has no ceilings for the CUDA device "
			    "'NVIDIA H200' (it measured no CUDA device); run 'kscope "
			    "calibrate' on the machine with that device");
	assert_string_equal(cell(&c, 1, "memory_ceiling"), "");
	csv_free(&c);

	/* And a CPU (OpenCL) kernel never gets a CUDA device's ceiling,
	 * though it is the highest, nor CUDA lines on its chart. */
	install(f, "mm", "4242/mm_tiled_3");
	ks_expr_free(flops);
	assert_int_equal(ks_expr_parse("2*M*N*K", &flops, &err), 0);
	o.calib = cuda_calib("NVIDIA H200");
	o.flops = flops;
	assert_int_equal(run_post(f, "4242/mm_tiled_3", &o, &res, &err), 0);
	csv_read(path_of(f, "4242/mm_tiled_3", "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "roofline"), "yes");
	assert_string_equal(cell(&c, 1, "memory_ceiling"), "DRAM");
	assert_string_equal(cell(&c, 1, "compute_ceiling"), "CPU FP32 FMA");
	csv_free(&c);
	j = viz_block(path_of(f, "4242/mm_tiled_3", "visualize_data.bin"), KS_VB_ROOFLINE);
	e = json_array_get(json_object_get(j, "multiple_rooflines"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "title")),
			    "cpu-test-device (OpenCL)");
	assert_int_equal(json_array_size(json_object_get(e, "rooflines")), 3);
	json_decref(j);
	ks_expr_free(flops);
}

static void test_no_calibration(void **state)
{
	struct fx *f = *state;
	const char *rel = "4242/mm_tiled_3";
	struct ks_oppost_opts o = { .calib_why = "no calibration for this machine" };
	struct ks_oppost_result res;
	struct ks_expr *flops;
	struct ks_err err;
	struct csv c;
	char types[64];

	install(f, "mm", rel);
	assert_int_equal(ks_expr_parse("2*M*N*K", &flops, &err), 0);
	o.flops = flops;
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	viz_types(path_of(f, rel, "visualize_data.bin"), types, sizeof(types));
	assert_string_equal(types, "05 08 09");
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "roofline"),
			    "no: no calibration: no calibration for this machine");
	assert_string_equal(cell(&c, 1, "gflops"), "33.554");
	assert_string_equal(cell(&c, 1, "binding_ceiling"), "");
	assert_string_equal(cell(&c, 1, "peak_bandwidth_pct"), "");
	csv_free(&c);
	ks_expr_free(flops);

	/* No --flops either: the roofline says so. */
	install(f, "mm", "4242/mm_tiled_4");
	o = (struct ks_oppost_opts){ .calib = test_calib() };
	assert_int_equal(run_post(f, "4242/mm_tiled_4", &o, &res, &err), 0);
	assert_true(isnan(res.gflops));
	viz_types(path_of(f, "4242/mm_tiled_4", "visualize_data.bin"), types, sizeof(types));
	assert_string_equal(types, "05 08 09");
	csv_read(path_of(f, "4242/mm_tiled_4", "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "roofline"),
			    "no: FLOPs unknown: no --flops expression");
	assert_string_equal(cell(&c, 1, "peak_bandwidth_pct"), "7.86");
	csv_free(&c);
}

static void test_corrupt_context(void **state)
{
	struct fx *f = *state;
	const char *rel = "4242/mm_tiled_3";
	struct ks_oppost_opts o = { 0 };
	struct ks_oppost_result res;
	struct ks_expr *flops;
	struct ks_err err;
	struct csv c;
	char types[64];

	install(f, "corrupt_context", rel);
	assert_int_equal(ks_expr_parse("2*M", &flops, &err), 0);
	o.flops = flops;
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	assert_non_null(strstr(f->warnings, "4242/mm_tiled_3/context.json is damaged "
				"(invalid JSON at line 2"));
	assert_non_null(strstr(f->warnings, "FLOPs unknown"));
	all_files(f, rel);
	/* Name, index and pid come from the directory. */
	assert_string_equal(res.name, "mm_tiled");
	assert_int_equal(res.index, 3);
	assert_int_equal(res.pid, 4242);
	assert_string_equal(res.global, "-");
	assert_int_equal(res.passes, 5);
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "name"), "mm_tiled");
	assert_string_equal(cell(&c, 1, "device"), "");
	assert_string_equal(cell(&c, 1, "global_size"), "");
	assert_string_equal(cell(&c, 1, "median_us"), "1000.000");
	assert_string_equal(cell(&c, 1, "flops"), "");
	csv_free(&c);
	csv_read(path_of(f, rel, "Memory.csv"), &c);
	assert_int_equal(c.nrows, 4);
	assert_string_equal(cell(&c, 1, "name"), "");
	assert_string_equal(cell(&c, 1, "bytes_read"), "262144");
	csv_free(&c);
	viz_types(path_of(f, rel, "visualize_data.bin"), types, sizeof(types));
	assert_string_equal(types, "05 08 09");
	ks_expr_free(flops);
}

static void test_missing_source(void **state)
{
	struct fx *f = *state;
	const char *rel = "4242/mm_tiled_3";
	struct ks_oppost_opts o = { 0 };
	struct ks_oppost_result res;
	struct ks_err err;
	struct csv c;
	json_t *j;

	install(f, "no_source", rel);
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	assert_int_equal(f->nwarn, 1);
	assert_non_null(strstr(f->warnings, "4242/mm_tiled_3/kernel.cl, the kernel's "
				"program, is missing"));
	all_files(f, rel);
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "program"), "source");
	assert_string_equal(cell(&c, 1, "source_file"), "");
	csv_free(&c);
	j = load(path_of(f, rel, "trace.json"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(
		json_array_get(json_object_get(j, "traceEvents"), 2), "args"),
		"code_location")), "mm_tiled");
	json_decref(j);
}

static void test_failed_replay(void **state)
{
	struct fx *f = *state;
	const char *rel = "4242/vadd_0";
	struct ks_oppost_opts o = { .calib = test_calib() };
	struct ks_oppost_result res;
	struct ks_expr *flops;
	struct ks_err err;
	struct csv c;

	install(f, "failed", rel);
	assert_int_equal(ks_expr_parse("2*n", &flops, &err), 0);
	o.flops = flops;
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	assert_non_null(strstr(f->warnings, "the name 'n' is not known here; "
				"names available: gx, gy, gz"));
	assert_string_equal(res.status, "failed");
	assert_int_equal(res.passes, 0);
	assert_true(isnan(res.median_us));
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "status"), "failed");
	assert_string_equal(cell(&c, 1, "message"),
			    "clEnqueueNDRangeKernel: CL_OUT_OF_RESOURCES");
	assert_string_equal(cell(&c, 1, "median_us"), "");
	assert_string_equal(cell(&c, 1, "program"), "binary");
	assert_string_equal(cell(&c, 1, "build_options"), "-cl-fast-relaxed-math");
	assert_string_equal(cell(&c, 1, "work_groups"), "");
	assert_string_equal(cell(&c, 1, "cache_flush"), "off");
	assert_string_equal(cell(&c, 1, "counters"), "not supported: perf_event_open: "
			    "Permission denied (perf_event_paranoid 3)");
	csv_free(&c);
	csv_read(path_of(f, rel, "Timing.csv"), &c);
	assert_int_equal(c.nrows, 1);
	csv_free(&c);
	/* The buffer argument is listed from the context, counts unknown. */
	csv_read(path_of(f, rel, "Memory.csv"), &c);
	assert_int_equal(c.nrows, 2);
	assert_string_equal(cell(&c, 1, "bytes"), "4194304");
	assert_string_equal(cell(&c, 1, "bytes_read"), "");
	csv_free(&c);
	ks_expr_free(flops);
}

static void test_application(void **state)
{
	struct fx *f = *state;
	const char *rel = "77/vadd_2";
	uint64_t ns[] = { 22000, 21000 };
	unsigned runs[] = { 1, 3 };
	struct ks_oppost_opts o = { .app_ns = ns, .app_run = runs, .n_app = 2, .app_runs = 4 };
	struct ks_oppost_result res;
	struct ks_err err;
	struct csv c;
	json_t *j;

	install(f, "app", rel);
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	assert_int_equal(res.passes, 3);
	assert_true(res.median_us == 21 && res.min_us == 20 && res.max_us == 22);
	assert_string_equal(res.mode, "application");
	csv_read(path_of(f, rel, "Timing.csv"), &c);
	assert_int_equal(c.nrows, 4);
	assert_string_equal(cell(&c, 1, "run"), "0");
	assert_string_equal(cell(&c, 2, "run"), "1");
	assert_string_equal(cell(&c, 3, "run"), "3");
	assert_string_equal(cell(&c, 3, "pass"), "3");
	assert_string_equal(cell(&c, 3, "start_us"), "");
	assert_string_equal(cell(&c, 3, "duration_us"), "21.000");
	csv_free(&c);
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "bytes_basis"),
			    "partial: some buffers' counts are unknown");
	assert_string_equal(cell(&c, 1, "global_offset"), "0");
	assert_string_equal(cell(&c, 1, "work_groups"), "16");
	csv_free(&c);
	j = load(path_of(f, rel, "trace.json"));
	/* process name, threads for runs 0..3, three passes */
	assert_int_equal(json_array_size(json_object_get(j, "traceEvents")), 1 + 4 + 3);
	json_decref(j);
}

static void test_range(void **state)
{
	struct fx *f = *state;
	const char *rel = "99/step_1";
	struct ks_oppost_opts o = { .calib = test_calib() };
	struct ks_oppost_result res;
	struct ks_expr *flops;
	struct ks_err err;
	struct csv c;

	install(f, "range", rel);
	assert_int_equal(ks_expr_parse("n+gx", &flops, &err), 0);
	o.flops = flops;
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	assert_int_equal(f->nwarn, 0);
	assert_string_equal(res.name, "step");
	assert_int_equal(res.passes, 3);
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "kind"), "range");
	/* (1000 + 1000) + (2000 + 2000) */
	assert_string_equal(cell(&c, 1, "flops"), "6000");
	assert_string_equal(cell(&c, 1, "arithmetic_intensity"), "0.375");
	/* 0.375 FLOP/byte x 10 GB/s = 3.75 GFLOP/s, below 200: memory binds */
	assert_string_equal(cell(&c, 1, "binding_ceiling"), "memory: DRAM");
	assert_string_equal(cell(&c, 1, "attainable_gflops"), "3.750");
	assert_string_equal(cell(&c, 1, "global_size"), "");
	csv_free(&c);
	ks_expr_free(flops);
}

static void test_empty_measure(void **state)
{
	struct fx *f = *state;
	const char *rel = "4242/mm_tiled_3";
	struct ks_oppost_opts o = { 0 };
	struct ks_oppost_result res;
	struct ks_err err;
	struct csv c;
	char types[64];

	install(f, "empty_measure", rel);
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	assert_non_null(strstr(f->warnings, "measure.json is damaged"));
	assert_string_equal(res.status, "no measurement");
	all_files(f, rel);
	csv_read(path_of(f, rel, "Memory.csv"), &c);
	assert_int_equal(c.nrows, 4);   /* from the context */
	csv_free(&c);
	viz_types(path_of(f, rel, "visualize_data.bin"), types, sizeof(types));
	assert_string_equal(types, "05 08 09");

	/* An incomplete launch: the caller's status wins. */
	install(f, "empty_measure", "4242/mm_tiled_5");
	o.status = "incomplete";
	assert_int_equal(run_post(f, "4242/mm_tiled_5", &o, &res, &err), 0);
	assert_string_equal(res.status, "incomplete");
}

/* Passes whose 80th percentile is 2x their 20th: `noisy`, with the ratio
 * in summary.csv and the advice in visualize_data.bin's basic info. */
static void test_noisy(void **state)
{
	struct fx *f = *state;
	const char *rel = "4242/mm_tiled_3";
	struct ks_oppost_opts o = { 0 };
	struct ks_oppost_result res;
	struct ks_err err;
	struct csv c;
	json_t *j, *ns;

	install(f, "mm", rel);
	j = json_load_file(path_of(f, rel, "measure.json"), 0, NULL);
	assert_non_null(j);
	ns = json_pack("[IIIII]", (json_int_t)1000000, (json_int_t)1000000,
		       (json_int_t)2000000, (json_int_t)2000000, (json_int_t)2100000);
	assert_int_equal(json_object_set_new(j, "pass_ns", ns), 0);
	assert_int_equal(json_dump_file(j, path_of(f, rel, "measure.json"), 0), 0);
	json_decref(j);
	assert_int_equal(run_post(f, rel, &o, &res, &err), 0);
	assert_string_equal(res.status, "noisy");
	assert_true(fabs(res.p80_p20 - 2.0) < 1e-9);
	csv_read(path_of(f, rel, "OpBasicInfo.csv"), &c);
	assert_string_equal(cell(&c, 1, "status"), "noisy");
	csv_free(&c);
	assert_int_equal(ks_oppost_summary(&f->run, &res, 1, &err), 0);
	csv_read(path_of(f, ".", "summary.csv"), &c);
	assert_string_equal(cell(&c, 1, "p80_p20"), "2.000");
	assert_string_equal(cell(&c, 1, "status"), "noisy");
	csv_free(&c);
}

static void test_missing_dir_and_replace(void **state)
{
	struct fx *f = *state;
	const char *rel = "4242/mm_tiled_3";
	struct ks_oppost_opts o = { 0 };
	struct ks_oppost_result res[2];
	struct ks_err err;
	struct csv c;

	assert_int_equal(run_post(f, "4242/none_1", &o, &res[0], &err), -ENOENT);
	assert_string_equal(res[0].status, "unknown");
	assert_int_equal(run_post(f, "../x_1", &o, &res[0], &err), -EINVAL);

	install(f, "mm", rel);
	assert_int_equal(run_post(f, rel, &o, &res[0], &err), 0);
	/* Written once: a second write does not replace, unless asked. */
	assert_int_equal(run_post(f, rel, &o, &res[0], &err), -EEXIST);
	o.replace = true;
	assert_int_equal(run_post(f, rel, &o, &res[0], &err), 0);
	all_files(f, rel);

	install(f, "app", "77/vadd_2");
	assert_int_equal(run_post(f, "77/vadd_2", &o, &res[1], &err), 0);
	assert_int_equal(ks_oppost_summary(&f->run, res, 2, &err), 0);
	assert_mode_440(path_of(f, ".", "summary.csv"));
	csv_read(path_of(f, ".", "summary.csv"), &c);
	assert_int_equal(c.nrows, 3);
	assert_string_equal(cell(&c, 1, "kernel"), "mm_tiled");
	assert_string_equal(cell(&c, 1, "directory"), rel);
	assert_string_equal(cell(&c, 1, "median_us"), "1000.000");
	assert_string_equal(cell(&c, 2, "kernel"), "vadd");
	assert_string_equal(cell(&c, 2, "replay_mode"), "application");
	assert_string_equal(cell(&c, 2, "gflops"), "");
	csv_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flops_values),
		cmocka_unit_test(test_flops_syntax),
		cmocka_unit_test(test_flops_eval_errors),
		cmocka_unit_test(test_dirname),
		cmocka_unit_test_setup_teardown(test_full_launch, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_no_calibration, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_cuda_roofline, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_cuda_measured_bytes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_cuda_backup_all, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_noisy, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_context, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_missing_source, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_failed_replay, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_application, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_range, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_empty_measure, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_missing_dir_and_replace, fx_setup,
						fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
