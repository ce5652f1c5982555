/*
 * Unit tests of kscope op --simulate's deliverables (src/op/sim), written
 * from the hand-made raw files in tests/op/sim/fixtures: basic.raw (two
 * threads, two cache levels, real x86-64 bytes, one source file that can
 * be read and one that cannot), truncated.raw (no end record, a last line
 * cut short), and damaged variants of basic.raw made line by line here.
 * Every deliverable is read back and checked value by value: the CSV rows
 * whole, visualize_data.bin through the container reader with every
 * payload checked, its JSON and trace.json with jansson.
 *
 * The fixtures name their source file "@FIXTURES@/kernel.c"; the raw file
 * is written to a temporary directory with the real path in its place.
 * The clock is 1 GHz, so a cycle is 0.001 us.
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

#include "outdir.h"
#include "simpost.h"
#include "test_util.h"

#ifndef KS_FIXTURES
#error "KS_FIXTURES must name tests/op/sim/fixtures"
#endif

#define CLOCK 1e9
#define KERNEL KS_FIXTURES "/kernel.c"
/* Under the fixtures too, so that it sorts before KERNEL wherever the
 * checkout lies. */
#define MISSING KS_FIXTURES "/absent/kscope-missing.c"

/* ------------------------------------------------------------------ */
/* Fixtures                                                            */
/* ------------------------------------------------------------------ */

struct fx {
	char *tmp;
	char raw[512];
	struct ks_rundir run;
	char warnings[16384];
	size_t nwarn;
	struct ks_simpost_summary sum;
	struct ks_err err;
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
	char path[600];

	f->tmp = ks_test_tmpdir();
	snprintf(f->raw, sizeof(f->raw), "%s/hotspot.raw", f->tmp);
	snprintf(path, sizeof(path), "%s/run", f->tmp);
	assert_int_equal(mkdir(path, 0750), 0);
	f->run.path = strdup(path);
	f->run.dirfd = open(path, O_RDONLY | O_DIRECTORY);
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

/* The text of a fixture, with @FIXTURES@ replaced; malloc'd. */
static char *fixture(const char *name)
{
	char path[600], *out, *o;
	const char *p;
	size_t size;
	unsigned char *raw;

	snprintf(path, sizeof(path), "%s/%s", KS_FIXTURES, name);
	raw = ks_test_read_file(path, &size);
	assert_non_null(raw);
	out = o = malloc(2 * size + 4096);
	for (p = (const char *)raw; (size_t)(p - (const char *)raw) < size;) {
		if (size - (size_t)(p - (const char *)raw) >= 10 &&
		    memcmp(p, "@FIXTURES@", 10) == 0) {
			o += sprintf(o, "%s", KS_FIXTURES);
			p += 10;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	free(raw);
	return out;
}

/* text with line n (1-based) replaced by repl (NULL: removed); takes
 * text, returns a new malloc'd string. */
static char *replace_line(char *text, int n, const char *repl)
{
	char *out = malloc(strlen(text) + (repl ? strlen(repl) : 0) + 2), *o = out;
	const char *p = text;

	for (int i = 1; *p; i++) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);

		if (i != n) {
			memcpy(o, p, len);
			o += len;
		} else if (repl) {
			o += sprintf(o, "%s\n", repl);
		}
		p += len;
	}
	*o = '\0';
	free(text);
	return out;
}

static int run_text(struct fx *f, const char *text, const struct ks_calib *calib)
{
	struct ks_simpost_opts o = {
		.raw_path = f->raw, .clock_hz = CLOCK, .calib = calib,
		.warn = collect_warning, .warn_ctx = f,
	};

	ks_test_write_file(f->raw, text, 0600);
	ks_err_clear(&f->err);
	return ks_simpost_write(&f->run, &o, &f->sum, &f->err);
}

static int run_fixture(struct fx *f, const char *name, const struct ks_calib *calib)
{
	char *text = fixture(name);
	int rc = run_text(f, text, calib);

	free(text);
	return rc;
}

static const struct ks_calib *test_calib(void)
{
	static struct ks_calib c;

	memset(&c, 0, sizeof(c));
	c.nmem = 3;
	snprintf(c.mem[0].name, sizeof(c.mem[0].name), "L1");
	c.mem[0].per_s = 100e9;
	snprintf(c.mem[1].name, sizeof(c.mem[1].name), "L2");
	c.mem[1].per_s = 50e9;
	snprintf(c.mem[2].name, sizeof(c.mem[2].name), "DRAM");
	c.mem[2].per_s = 10e9;
	c.ncompute = 2;
	snprintf(c.compute[0].name, sizeof(c.compute[0].name), "CPU FP64 FMA");
	c.compute[0].per_s = 100e9;
	snprintf(c.compute[1].name, sizeof(c.compute[1].name), "CPU FP32 FMA");
	c.compute[1].per_s = 200e9;
	return &c;
}

/* ------------------------------------------------------------------ */
/* Reading the deliverables back                                       */
/* ------------------------------------------------------------------ */

static const char *out_path(struct fx *f, const char *name)
{
	static char p[1024];

	snprintf(p, sizeof(p), "%s/%s", f->run.path, name);
	return p;
}

/* The lines of a deliverable, which must end with a newline. */
struct lines {
	char *text;
	size_t n;
	char *l[64];
};

static void lines_read(struct fx *f, const char *name, struct lines *ls)
{
	size_t size;
	char *p;

	memset(ls, 0, sizeof(*ls));
	ls->text = (char *)ks_test_read_file(out_path(f, name), &size);
	if (!ls->text)
		fail_msg("cannot read %s", name);
	ls->text[size] = '\0';
	assert_true(size > 0 && ls->text[size - 1] == '\n');
	for (p = ls->text; *p && ls->n < 64;) {
		char *nl = strchr(p, '\n');

		*nl = '\0';
		ls->l[ls->n++] = p;
		p = nl + 1;
	}
}

static void assert_mode_440(struct fx *f, const char *name)
{
	struct stat st;

	if (stat(out_path(f, name), &st) != 0)
		fail_msg("%s is missing", name);
	assert_int_equal(st.st_mode & 0777, 0440);
}

static json_t *load(struct fx *f, const char *name)
{
	json_error_t e;
	json_t *j = json_load_file(out_path(f, name), JSON_REJECT_DUPLICATES, &e);

	if (!j)
		fail_msg("%s: %s", name, e.text);
	return j;
}

/* The blocks of visualize_data.bin, every payload checked, as
 * "02 01 03 04 0d". */
static void viz_types(struct fx *f, char *out, size_t size)
{
	struct ks_vb_reader *r;
	struct ks_vb_error err;
	size_t off = 0;

	if (ks_vb_open(out_path(f, "visualize_data.bin"), KS_VB_CHECK_PAYLOADS, &r, &err))
		fail_msg("visualize_data.bin: %s", err.msg);
	out[0] = '\0';
	for (uint32_t i = 0; i < ks_vb_count(r); i++)
		off += (size_t)snprintf(out + off, size - off, "%s%02x", i ? " " : "",
					ks_vb_block_at(r, i)->type);
	ks_vb_close(r);
}

/* The first block of type: its payload parsed (JSON types) or copied
 * (0x01, into *text), and its version and path. */
static json_t *viz_block(struct fx *f, unsigned type, unsigned *version, char **text,
			 char *path, size_t path_size)
{
	struct ks_vb_reader *r;
	struct ks_vb_error err;
	json_t *j = NULL;
	bool found = false;

	assert_int_equal(ks_vb_open(out_path(f, "visualize_data.bin"), KS_VB_CHECK_PAYLOADS,
				    &r, &err), 0);
	for (uint32_t i = 0; i < ks_vb_count(r) && !found; i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);

		if (b->type != type)
			continue;
		found = true;
		if (version)
			*version = b->version;
		if (path)
			snprintf(path, path_size, "%s", b->path ? b->path : "");
		if (text)
			*text = strndup((const char *)b->payload, b->payload_size);
		else
			j = json_loadb((const char *)b->payload, b->payload_size,
				       JSON_REJECT_DUPLICATES, NULL);
	}
	ks_vb_close(r);
	if (!found)
		fail_msg("no block of type 0x%02x", type);
	return j;
}

static void assert_ints(const json_t *a, long long v0, long long v1)
{
	assert_int_equal(json_array_size(a), 2);
	assert_int_equal(json_integer_value(json_array_get(a, 0)), v0);
	assert_int_equal(json_integer_value(json_array_get(a, 1)), v1);
}

static void assert_near(double got, double want)
{
	if (fabs(got - want) > 1e-6 * (fabs(want) > 1 ? fabs(want) : 1))
		fail_msg("%.9g where %.9g was expected", got, want);
}

/* ------------------------------------------------------------------ */
/* basic.raw                                                           */
/* ------------------------------------------------------------------ */

static void test_summary(void **state)
{
	struct fx *f = *state;
	const struct ks_simpost_summary *s = &f->sum;

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	/* The unreadable source file and the trace limit. */
	assert_int_equal(f->nwarn, 2);
	assert_non_null(strstr(f->warnings, MISSING));
	assert_non_null(strstr(f->warnings, "7 more were past the trace limit"));
	assert_false(s->truncated);
	assert_string_equal(s->end_how, "exit");
	assert_int_equal(s->end_code, 0);
	assert_int_equal(s->threads, 2);
	assert_int_equal(s->levels, 2);
	assert_string_equal(s->level_name[0], "L1");
	assert_string_equal(s->level_name[1], "LL");
	assert_int_equal(s->level_acc[0], 150);
	assert_int_equal(s->level_miss[0], 30);
	assert_int_equal(s->level_acc[1], 30);
	assert_int_equal(s->level_miss[1], 25);
	assert_int_equal(s->instrs, 565);
	assert_int_equal(s->cycles, 2270);
	assert_int_equal(s->flops, 150);
	assert_int_equal(s->load_bytes, 1120);
	assert_int_equal(s->store_bytes, 80);
	assert_int_equal(s->dram_bytes, 320 + 64 + 64 + 1280);
	assert_near(s->sim_seconds, 1555e-9);
	assert_int_equal(s->trace_dropped, 7);
	assert_int_equal(s->blocks, 11);
	assert_int_equal(s->sources, 1);
	assert_int_equal(s->trace_slices, 8);
	assert_true(s->roofline);
	assert_string_equal(s->roofline_source, "cost model");
	/* Lines by cycles over both threads; the "??" group (5 cycles) is
	 * sixth. */
	assert_int_equal(s->ntop, 5);
	assert_string_equal(s->top[0].file, KERNEL);
	assert_int_equal(s->top[0].line, 11);
	assert_int_equal(s->top[0].cycles, 1900);
	assert_int_equal(s->top[0].instrs, 290);
	assert_int_equal(s->top[1].line, 10);
	assert_int_equal(s->top[1].cycles, 225);
	assert_int_equal(s->top[2].line, 12);
	assert_string_equal(s->top[3].file, MISSING);
	assert_int_equal(s->top[3].cycles, 30);
	assert_int_equal(s->top[4].line, 13);
	assert_int_equal(s->top[4].cycles, 10);

	assert_mode_440(f, "thread1/instr_exe.csv");
	assert_mode_440(f, "thread1/code_exe.csv");
	assert_mode_440(f, "thread3/instr_exe.csv");
	assert_mode_440(f, "thread3/code_exe.csv");
	assert_mode_440(f, "trace.json");
	assert_mode_440(f, "visualize_data.bin");
	assert_mode_440(f, "bandwidth.csv");
	assert_mode_440(f, "bandwidth.svg");
}

#define SHARED_HEADER "Instructions Executed,Cycles,Process Bytes,Load Bytes,Store Bytes," \
	"Flops,L2Cache Hit Rate,L1 Accesses,L1 Misses,L1 Hit Rate,LL Accesses,LL Misses," \
	"LL Hit Rate,ICache Misses,Stall Cycles,GPR Count,Vector Utilization (%)"

static void test_instr_csv(void **state)
{
	struct fx *f = *state;
	struct lines ls;

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	lines_read(f, "thread1/instr_exe.csv", &ls);
	assert_int_equal(ls.n, 1 + 5);
	assert_string_equal(ls.l[0], "Address,Source,Pipe," SHARED_HEADER
			    ",Function,File,Line");
	/* Stall Cycles: the cycles beyond base cost x executions (100 x 1,
	 * 100 x 4, ...). */
	assert_string_equal(ls.l[1], "0x401000,\"add rax, rbx\",SCALAR,100,150,0,0,0,0,"
			    ",0,0,,0,0,,2,50,2,,saxpy," KERNEL ",10");
	assert_string_equal(ls.l[2], "0x401003,\"addss xmm0, xmm1\",VECTOR,100,400,0,0,0,"
			    "100,,0,0,,0,0,,1,0,0,12.50,saxpy," KERNEL ",11");
	/* L2Cache Hit Rate is the second level's: (10 - 5) / 10. */
	assert_string_equal(ls.l[3], "0x401007,\"mov rax, qword ptr [rdi]\",LOAD,100,900,"
			    "800,800,0,0,0.5000,100,10,0.9000,10,5,0.5000,0,800,2,,saxpy," KERNEL
			    ",11");
	assert_string_equal(ls.l[4], "0x40100a,ret,BRANCH,100,100,0,0,0,0,,0,0,,0,0,,0,0,1,,"
			    "saxpy," KERNEL ",12");
	assert_string_equal(ls.l[5], "0x401020,(bad),SCALAR,5,5,0,0,0,0,,0,0,,0,0,,0,0,0,,??,"
			    "??,0");
	free(ls.text);

	lines_read(f, "thread3/instr_exe.csv", &ls);
	assert_int_equal(ls.n, 1 + 5);
	assert_string_equal(ls.l[3], "0x401007,\"mov rax, qword ptr [rdi]\",LOAD,40,400,"
			    "320,320,0,0,0.0000,40,20,0.5000,20,20,0.0000,0,360,2,,saxpy," KERNEL
			    ",11");
	assert_string_equal(ls.l[4], "0x401030,\"mov qword ptr [rdi], rdx\",STORE,10,30,"
			    "80,0,80,0,,10,0,1.0000,0,0,,1,20,2,,main," MISSING ",5");
	assert_string_equal(ls.l[5], "0x401040,\"sub rax, rbx\",SCALAR,10,10,0,0,0,0,,0,0,,"
			    "0,0,,0,0,2,,saxpy," KERNEL ",13");
	free(ls.text);
}

static void test_code_csv(void **state)
{
	struct fx *f = *state;
	struct lines ls;

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	lines_read(f, "thread1/code_exe.csv", &ls);
	assert_int_equal(ls.n, 1 + 4);
	assert_string_equal(ls.l[0], "File,Line,Address Range," SHARED_HEADER);
	assert_string_equal(ls.l[1], KERNEL ",10,0x401000-0x401003,100,150,0,0,0,0,,0,0,,"
			    "0,0,,2,50,2,");
	/* Two contiguous instructions: one range, the end exclusive. */
	assert_string_equal(ls.l[2], KERNEL ",11,0x401003-0x40100a,200,1300,800,800,0,100,"
			    "0.5000,100,10,0.9000,10,5,0.5000,1,800,2,12.50");
	assert_string_equal(ls.l[3], KERNEL ",12,0x40100a-0x40100b,100,100,0,0,0,0,,0,0,,"
			    "0,0,,0,0,1,");
	assert_string_equal(ls.l[4], "??,0,0x401020-0x401022,5,5,0,0,0,0,,0,0,,0,0,,0,0,0,");
	free(ls.text);

	/* Thread 3: its own figures; files by path (the missing one sorts
	 * first). */
	lines_read(f, "thread3/code_exe.csv", &ls);
	assert_int_equal(ls.n, 1 + 4);
	assert_true(strcmp(MISSING, KERNEL) < 0);
	assert_string_equal(ls.l[1], MISSING ",5,0x401030-0x401033,10,30,80,0,80,0,,10,0,"
			    "1.0000,0,0,,1,20,2,");
	assert_string_equal(ls.l[3], KERNEL ",11,0x401003-0x40100a,90,600,320,320,0,50,"
			    "0.0000,40,20,0.5000,20,20,0.0000,0,360,2,12.50");
	assert_string_equal(ls.l[4], KERNEL ",13,0x401040-0x401043,10,10,0,0,0,0,,0,0,,"
			    "0,0,,0,0,2,");
	free(ls.text);
}

static void test_visualize_data(void **state)
{
	struct fx *f = *state;
	char types[64], path[4096], *text = NULL;
	unsigned version = 0xff;
	json_t *j, *files, *file, *lines, *line, *ins, *e;
	size_t size;
	unsigned char *src;

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	viz_types(f, types, sizeof(types));
	assert_string_equal(types, "02 01 03 04 0d 05 06 07 0c 08 09");

	/* 0x01: the readable file, as it is. */
	viz_block(f, KS_VB_SOURCE, NULL, &text, path, sizeof(path));
	assert_string_equal(path, KERNEL);
	src = ks_test_read_file(KERNEL, &size);
	assert_int_equal(strlen(text), size);
	assert_memory_equal(text, src, size);
	free(src);
	free(text);

	/* 0x03: both files (the unreadable one too), per thread. */
	j = viz_block(f, KS_VB_API_FILES, &version, NULL, NULL, 0);
	assert_int_equal(version, KS_VB_VERSION);
	assert_int_equal(json_array_size(json_object_get(j, "Cores")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "Cores"), 0)),
			    "thread1");
	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "Cores"), 1)),
			    "thread3");
	e = json_object_get(json_object_get(j, "Files Dtype"), "Lines");
	assert_int_equal(json_integer_value(json_object_get(e, "Address Range")), 0);
	assert_int_equal(json_integer_value(json_object_get(e, "L2Cache Hit Rate")), 2);
	assert_int_equal(json_integer_value(json_object_get(e, "Process Bytes")), 1);
	files = json_object_get(j, "Files");
	assert_int_equal(json_array_size(files), 2);
	file = json_array_get(files, 0);
	assert_string_equal(json_string_value(json_object_get(file, "Source")), MISSING);
	line = json_array_get(json_object_get(file, "Lines"), 0);
	assert_ints(json_object_get(line, "Cycles"), 0, 30);
	assert_true(json_is_null(json_array_get(json_object_get(line, "L2Cache Hit Rate"), 0)));
	file = json_array_get(files, 1);
	assert_string_equal(json_string_value(json_object_get(file, "Source")), KERNEL);
	lines = json_object_get(file, "Lines");
	assert_int_equal(json_array_size(lines), 4);
	line = json_array_get(lines, 1);
	assert_int_equal(json_integer_value(json_object_get(line, "Line")), 11);
	e = json_object_get(line, "Address Range");
	assert_int_equal(json_array_size(e), 1);
	assert_string_equal(json_string_value(json_array_get(json_array_get(e, 0), 0)),
			    "0x401003");
	assert_string_equal(json_string_value(json_array_get(json_array_get(e, 0), 1)),
			    "0x40100a");
	assert_ints(json_object_get(line, "Cycles"), 1300, 600);
	assert_ints(json_object_get(line, "Instructions Executed"), 200, 90);
	assert_ints(json_object_get(line, "Process Bytes"), 800, 320);
	e = json_object_get(line, "L2Cache Hit Rate");
	assert_near(json_real_value(json_array_get(e, 0)), 0.5);
	assert_near(json_number_value(json_array_get(e, 1)), 0);
	/* Line 13 only ran on thread 3. */
	line = json_array_get(lines, 3);
	assert_int_equal(json_integer_value(json_object_get(line, "Line")), 13);
	assert_ints(json_object_get(line, "Instructions Executed"), 0, 10);
	json_decref(j);

	/* 0x04: by location (its "Source Location" column), one entry per
	 * instruction either thread ran; the header's last two bytes 0x5A5A,
	 * as the container's design has them. */
	j = viz_block(f, KS_VB_API_INSTR, &version, NULL, NULL, 0);
	assert_int_equal(version, KS_VB_VERSION);
	ins = json_object_get(j, "Instructions");
	assert_int_equal(json_array_size(ins), 7);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
		json_object_get(j, "Instructions Dtype"), "Instructions"), "Source Location")), 3);
	e = json_array_get(ins, 1);
	assert_string_equal(json_string_value(json_object_get(e, "Address")), "0x401003");
	assert_string_equal(json_string_value(json_object_get(e, "Source")), "addss xmm0, xmm1");
	assert_string_equal(json_string_value(json_object_get(e, "Pipe")), "VECTOR");
	assert_string_equal(json_string_value(json_object_get(e, "Source Location")),
			    KERNEL ":11");
	assert_ints(json_object_get(e, "Flops"), 100, 50);
	assert_ints(json_object_get(e, "Cycles"), 400, 200);
	assert_ints(json_object_get(e, "Stall Cycles"), 0, 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
		json_object_get(j, "Instructions Dtype"), "Instructions"), "Stall Cycles")), 1);
	e = json_array_get(ins, 2);
	assert_ints(json_object_get(e, "Process Bytes"), 800, 320);
	/* 900 - 100 and 400 - 40 cycles beyond the load's base cost. */
	assert_ints(json_object_get(e, "Stall Cycles"), 800, 360);
	/* mov rax, qword ptr [rdi]: rax and rdi. */
	assert_ints(json_object_get(e, "GPR Count"), 2, 2);
	assert_near(json_real_value(json_array_get(json_object_get(e, "L2Cache Hit Rate"), 0)),
		    0.5);
	e = json_array_get(ins, 4);
	assert_string_equal(json_string_value(json_object_get(e, "Source")), "(bad)");
	assert_string_equal(json_string_value(json_object_get(e, "Source Location")), "??:0");
	assert_ints(json_object_get(e, "Instructions Executed"), 5, 0);
	e = json_array_get(ins, 5);
	assert_string_equal(json_string_value(json_object_get(e, "Address")), "0x401030");
	assert_ints(json_object_get(e, "Instructions Executed"), 0, 10);
	json_decref(j);
}

/* The X event of track (pid, tid) starting at ts. */
static json_t *slice_at(json_t *events, long long pid, long long tid, double ts)
{
	size_t i;
	json_t *e;

	json_array_foreach(events, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")), "X") == 0 &&
		    json_integer_value(json_object_get(e, "pid")) == pid &&
		    json_integer_value(json_object_get(e, "tid")) == tid &&
		    fabs(json_number_value(json_object_get(e, "ts")) - ts) < 1e-6)
			return e;
	}
	fail_msg("no slice at pid %lld tid %lld ts %g", pid, tid, ts);
	return NULL;
}

static void test_trace(void **state)
{
	struct fx *f = *state;
	json_t *j, *b, *events, *e, *args;
	size_t i, nx = 0, nmeta = 0;
	char *text, *block;
	size_t size;

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	/* trace.json and the 0x02 block are the same document. */
	text = (char *)ks_test_read_file(out_path(f, "trace.json"), &size);
	viz_block(f, KS_VB_TRACE, NULL, &block, NULL, 0);
	assert_int_equal(strlen(block), size);
	assert_memory_equal(block, text, size);
	free(text);
	free(block);

	j = load(f, "trace.json");
	assert_string_equal(json_string_value(json_object_get(j, "displayTimeUnit")), "ns");
	/* The design's marks of an operator trace; what made it is in
	 * otherData. */
	assert_string_equal(json_string_value(json_object_get(j, "profilingType")), "op");
	assert_int_equal(json_integer_value(json_object_get(j, "schemaVersion")), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "otherData"),
							      "kscope")), "op --simulate");
	events = json_object_get(j, "traceEvents");
	json_array_foreach(events, i, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));

		if (strcmp(ph, "X") == 0)
			nx++;
		else if (strcmp(ph, "M") == 0)
			nmeta++;
		if (strcmp(ph, "M") == 0 &&
		    strcmp(json_string_value(json_object_get(e, "name")), "thread_name") == 0 &&
		    json_integer_value(json_object_get(e, "tid")) == 3)
			assert_string_equal(json_string_value(json_object_get(
				json_object_get(e, "args"), "name")), "LOAD");
		if (strcmp(ph, "M") == 0 &&
		    strcmp(json_string_value(json_object_get(e, "name")), "process_name") == 0 &&
		    json_integer_value(json_object_get(e, "pid")) == 3)
			assert_string_equal(json_string_value(json_object_get(
				json_object_get(e, "args"), "name")), "thread3");
	}
	assert_int_equal(nx, 8);
	assert_int_equal(nmeta, 2 * (2 + 2 * 5));
	/* The bandwidth counters (1 GHz, 1 us buckets): thread 1 moves bytes
	 * on all three paths in bucket 0 and on "memory -> LL" in bucket 1,
	 * thread 3 on all three in bucket 0; a path that stops gets a zero. */
	{
		size_t nc = 0;
		double mem_rd = -1, mem_end = -1;

		json_array_foreach(events, i, e) {
			json_t *a = json_object_get(e, "args");
			double ts = json_number_value(json_object_get(e, "ts"));

			if (strcmp(json_string_value(json_object_get(e, "ph")), "C"))
				continue;
			nc++;
			assert_string_equal(json_string_value(json_object_get(e, "cat")),
					    "bandwidth");
			assert_non_null(json_object_get(a, "Write GB/s"));
			if (json_integer_value(json_object_get(e, "pid")) != 1 ||
			    strcmp(json_string_value(json_object_get(e, "name")), "memory -> LL"))
				continue;
			if (fabs(ts - 1) < 1e-9)
				mem_rd = json_number_value(json_object_get(a, "Read GB/s"));
			if (fabs(ts - 2) < 1e-9)
				mem_end = json_number_value(json_object_get(a, "Read GB/s"));
		}
		assert_int_equal(nc, 7 + 6);
		assert_near(mem_rd, 0.064);
		assert_near(mem_end, 0);
	}

	/* tr 1 0 4 0 100: base cycles 1, 4, 1, 1 share 100 cycles. */
	e = slice_at(events, 1, 2, 100.0 / 7 / 1000);
	assert_string_equal(json_string_value(json_object_get(e, "name")), "addss");
	assert_near(json_number_value(json_object_get(e, "dur")), 0.057143);
	args = json_object_get(e, "args");
	assert_string_equal(json_string_value(json_object_get(args, "pc_addr")), "0x401003");
	assert_string_equal(json_string_value(json_object_get(args, "code")), KERNEL ":11");
	assert_string_equal(json_string_value(json_object_get(args, "function")), "saxpy");
	assert_string_equal(json_string_value(json_object_get(args, "detail")),
			    "addss xmm0, xmm1");
	e = slice_at(events, 1, 5, 600.0 / 7 / 1000);
	assert_string_equal(json_string_value(json_object_get(e, "name")), "ret");
	assert_near(json_number_value(json_object_get(e, "dur")), 0.014286);
	/* tr 1 0 2 100 150: a side exit after two instructions. */
	e = slice_at(events, 1, 2, 0.110);
	assert_near(json_number_value(json_object_get(e, "dur")), 0.040);
	/* tr 3 2 3 200 290: sub and add (both SCALAR) are one slice. */
	e = slice_at(events, 3, 1, 0.200);
	assert_string_equal(json_string_value(json_object_get(e, "name")), "sub");
	assert_near(json_number_value(json_object_get(e, "dur")), 0.030);
	args = json_object_get(e, "args");
	assert_int_equal(json_integer_value(json_object_get(args, "instructions")), 2);
	assert_string_equal(json_string_value(json_object_get(args, "detail")),
			    "sub rax, rbx; add rax, rbx");
	assert_string_equal(json_string_value(json_object_get(args, "code")), KERNEL ":13");
	e = slice_at(events, 3, 2, 0.230);
	assert_near(json_number_value(json_object_get(e, "dur")), 0.060);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "args"),
							    "instructions")), 1);
	b = json_object_get(json_object_get(j, "otherData"), "trace_dropped");
	assert_int_equal(json_integer_value(b), 7);
	json_decref(j);
}

/* A long run: the counters of thread 1 start at the bucket of main's
 * entry (500 of 0..2499) and merge 2 buckets a step, 1000 steps, whose
 * GB/s integrate to the bytes of the buckets charted. */
static void test_trace_bw_merge(void **state)
{
	struct fx *f = *state;
	char *base = fixture("basic.raw"), *bw = strstr(base, "bw\t"), *tr = strstr(base, "tr\t");
	size_t cap = strlen(base) + 2500 * 40 + 64, len;
	char *text = malloc(cap);
	json_t *j, *e;
	size_t i, n = 0;
	double bytes = 0, prev_ts = -1, prev_v = 0, last = -1;
	uint64_t want = 0;

	assert_non_null(bw);
	assert_non_null(tr);
	assert_non_null(text);
	len = (size_t)snprintf(text, cap, "%.*s", (int)(bw - base), base);
	for (unsigned b = 0; b < 2500; b++)
		len += (size_t)snprintf(text + len, cap - len, "bw\t1\t%u\t%u\t0\t0\t0\t0\t0\n", b,
					b + 1);
	len += (size_t)snprintf(text + len, cap - len, "trace\tmain\t1\t500500\n%s", tr);
	for (unsigned b = 500; b < 2500; b++)
		want += b + 1;
	assert_int_equal(run_text(f, text, NULL), 0);
	free(text);
	free(base);
	j = load(f, "trace.json");
	json_array_foreach(json_object_get(j, "traceEvents"), i, e) {
		double ts = json_number_value(json_object_get(e, "ts"));

		if (strcmp(json_string_value(json_object_get(e, "ph")), "C") ||
		    json_integer_value(json_object_get(e, "pid")) != 1)
			continue;
		assert_string_equal(json_string_value(json_object_get(e, "name")),
				    "L1 -> registers");
		if (prev_ts < 0)
			assert_near(ts, 500);   /* main's bucket, not 0 */
		else
			bytes += prev_v * (ts - prev_ts) * 1e3;
		prev_ts = ts;
		prev_v = json_number_value(json_object_get(json_object_get(e, "args"),
							   "Read GB/s"));
		last = prev_v;
		n++;
	}
	assert_int_equal(n, 1000 + 1);
	assert_near(prev_ts, 2500);
	assert_near(last, 0);
	assert_true(fabs(bytes - (double)want) < 1e-6 * (double)want);
	json_decref(j);
}

static void test_bandwidth(void **state)
{
	struct fx *f = *state;
	struct lines ls;
	size_t size, npoly = 0;
	char *svg;

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	lines_read(f, "bandwidth.csv", &ls);
	assert_int_equal(ls.n, 1 + 3 * 3);
	assert_string_equal(ls.l[0], "Thread,Start (us),End (us),Path,Read Bytes,Write Bytes,"
			    "Read GB/s,Write GB/s");
	assert_string_equal(ls.l[1], "1,0.000000,1.000000,L1 -> registers,800,0,0.800000,"
			    "0.000000");
	assert_string_equal(ls.l[2], "1,0.000000,1.000000,LL -> L1,640,0,0.640000,0.000000");
	assert_string_equal(ls.l[3], "1,0.000000,1.000000,memory -> LL,320,64,0.320000,"
			    "0.064000");
	assert_string_equal(ls.l[6], "1,1.000000,2.000000,memory -> LL,64,0,0.064000,"
			    "0.000000");
	assert_string_equal(ls.l[7], "3,0.000000,1.000000,L1 -> registers,320,80,0.320000,"
			    "0.080000");
	free(ls.text);

	svg = (char *)ks_test_read_file(out_path(f, "bandwidth.svg"), &size);
	svg[size] = '\0';
	assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_null(strstr(svg, "<script"));
	assert_null(strstr(svg, "@font-face"));
	assert_non_null(strstr(svg, ">memory -&gt; LL</text>"));
	assert_non_null(strstr(svg, ">LL -&gt; L1</text>"));
	for (const char *p = svg; (p = strstr(p, "<polyline")) != NULL; p++)
		npoly++;
	assert_int_equal(npoly, 3);
	/* L1 -> registers over both threads: 1200 bytes in bucket 0 (1 us,
	 * 1.2 GB/s), none in bucket 1; the y axis goes to 1.05 x the
	 * highest point (LL -> L1, 1.92 GB/s), 370 pixels from y 420. */
	assert_non_null(strstr(svg, "points=\"80.0,199.8 505.0,199.8 505.0,420.0 "
			       "930.0,420.0\""));
	free(svg);
}

static void roofline_check(struct fx *f, const double *bw, double comp, const char *title)
{
	static const char *const names[] = { "L1 -> registers", "LL -> L1", "memory -> LL" };
	static const double bytes[] = { 1200, 1920, 1728 };
	json_t *j, *charts, *lines;
	double perf = 150 / 1555e-9 / 1e9;

	j = viz_block(f, KS_VB_ROOFLINE, NULL, NULL, NULL, 0);
	charts = json_object_get(j, "multiple_rooflines");
	assert_int_equal(json_array_size(charts), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(charts, 0),
							      "title")), title);
	lines = json_object_get(json_array_get(charts, 0), "rooflines");
	assert_int_equal(json_array_size(lines), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *r = json_array_get(lines, i), *pt = json_object_get(r, "point");

		assert_string_equal(json_string_value(json_object_get(r, "bw_name")), names[i]);
		assert_near(json_number_value(json_object_get(r, "bw")), bw[i]);
		assert_near(json_number_value(json_object_get(r, "computility")), comp);
		assert_near(json_number_value(json_array_get(pt, 0)), 150 / bytes[i]);
		assert_near(json_number_value(json_array_get(pt, 1)), perf);
	}
	json_decref(j);
}

static void test_roofline(void **state)
{
	struct fx *f = *state;
	/* Cost model: a 64-byte line per 4, 40 and 200 cycles at 1 GHz;
	 * one FLOP per cycle (addss). */
	static const double model[] = { 16, 1.6, 0.32 };
	static const double calib[] = { 100, 50, 10 };

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	roofline_check(f, model, 1, "Simulated (cost model)");
	/* Again into a new run directory, with a calibration. */
	ks_rundir_close(&f->run);
	{
		char path[600];

		snprintf(path, sizeof(path), "%s/run2", f->tmp);
		assert_int_equal(mkdir(path, 0750), 0);
		f->run.path = strdup(path);
		f->run.dirfd = open(path, O_RDONLY | O_DIRECTORY);
	}
	assert_int_equal(run_fixture(f, "basic.raw", test_calib()), 0);
	assert_string_equal(f->sum.roofline_source, "calibration");
	roofline_check(f, calib, 200, "Simulated (calibration)");
}

/* ------------------------------------------------------------------ */
/* Variants                                                            */
/* ------------------------------------------------------------------ */

static void test_truncated(void **state)
{
	struct fx *f = *state;
	struct lines ls;
	char types[64];

	assert_int_equal(run_fixture(f, "truncated.raw", NULL), 0);
	assert_true(f->sum.truncated);
	assert_string_equal(f->sum.end_how, "");
	assert_non_null(strstr(f->warnings, ":41: the last line is cut short"));
	assert_non_null(strstr(f->warnings, "has no 'end' record"));
	assert_null(strstr(f->warnings, "trace limit"));
	/* What was read is all there: two tr records, six slices. */
	assert_int_equal(f->sum.trace_slices, 6);
	assert_int_equal(f->sum.threads, 2);
	viz_types(f, types, sizeof(types));
	assert_string_equal(types, "02 01 03 04 0d 05 06 07 0c 08 09");
	lines_read(f, "thread3/instr_exe.csv", &ls);
	assert_int_equal(ls.n, 6);
	free(ls.text);
	lines_read(f, "bandwidth.csv", &ls);
	assert_int_equal(ls.n, 10);
	free(ls.text);
}

/* basic.raw with line n replaced must fail naming line n and want. */
static void damaged(struct fx *f, int n, const char *repl, const char *want)
{
	char *text = replace_line(fixture("basic.raw"), n, repl);
	char where[600];
	struct stat st;

	assert_int_equal(run_text(f, text, NULL), -EINVAL);
	free(text);
	snprintf(where, sizeof(where), "%s:%d: ", f->raw, n);
	if (!strstr(f->err.msg, where) || !strstr(f->err.msg, want))
		fail_msg("line %d: '%s' lacks '%s' or '%s'", n, f->err.msg, where, want);
	/* Nothing was written. */
	assert_int_equal(stat(out_path(f, "trace.json"), &st), -1);
}

static void test_damaged(void **state)
{
	struct fx *f = *state;

	damaged(f, 27, "x\t1\t2\t100\t900", "has 5 fields where 12 are expected");
	damaged(f, 27, "x\t1\t99\t100\t900\t800\t0\t0\t100\t10\t10\t5",
		"refers to instruction 99, which no earlier record defines");
	damaged(f, 23, "thread\t1\t4o5\t1555", "field 3 of 'thread' is not a number: '4o5'");
	damaged(f, 23, "thread\t1\t-405\t1555", "not a number");
	damaged(f, 23, "thread\t1\t99999999999999999999\t1555", "too large");
	damaged(f, 13, "ins\t0\t0x401000\t3\t4801d\t0\t10\t0\tSCALAR\t0\t1", "hex digits");
	damaged(f, 13, "ins\t0\t0x401000\t3\t4801dg\t0\t10\t0\tSCALAR\t0\t1", "not hex");
	damaged(f, 13, "ins\t0\t401000\t3\t4801d8\t0\t10\t0\tSCALAR\t0\t1", "not an address");
	damaged(f, 13, "ins\t0\t0x401000\t3\t4801d8\t7\t10\t0\tSCALAR\t0\t1",
		"refers to file 7");
	damaged(f, 13, "ins\t0\t0x401000\t3\t4801d8\t0\t10\t0\tFPU\t0\t1", "unknown pipe 'FPU'");
	damaged(f, 14, "ins\t0\t0x401003\t4\tf30f58c1\t0\t11\t0\tVECTOR\t1\t4",
		"instruction 0 is defined twice");
	damaged(f, 20, "sb\t0\t5\t0\t1\t2\t3", "COUNT is 5 but 4 instructions follow");
	damaged(f, 39, "tr\t1\t0\t5\t0\t100", "5 instructions executed of a block of 4");
	damaged(f, 39, "tr\t1\t0\t4\t100\t0", "ends (cycle 0) before it starts");
	damaged(f, 39, "tr\t2\t0\t4\t0\t100", "refers to thread 2");
	damaged(f, 36, "bw\t1\t0\t800\t0\t640\t0\t320", "has 8 fields where 9 are expected");
	damaged(f, 27, "x\t1\t2\t100\t900\t800\t0\t0\t100\t10\t10\t11", "more misses");
	damaged(f, 9, "file\t0\t/a\\qb", "bad escape");
	damaged(f, 1, "kscope-hotspot\t2", "format 2");
	damaged(f, 1, "something else", "not a raw file of kscope's Valgrind tool");
	damaged(f, 5, "cache\t2\t1048576\t16\t64\t40\tshared\tLL", "cache level 2 where level 1");
	damaged(f, 42, "end\tcrash\t0\t7", "neither 'exit' nor 'signal'");
	damaged(f, 30, "", "an empty record");
}

static void test_empty(void **state)
{
	struct fx *f = *state;

	assert_int_equal(run_text(f, "", NULL), -EINVAL);
	assert_non_null(strstr(f->err.msg, "is empty"));
	/* Only a header, cut short. */
	assert_int_equal(run_text(f, "kscope-hot", NULL), -EINVAL);
	assert_non_null(strstr(f->warnings, "cut short"));
}

static void test_header_only(void **state)
{
	struct fx *f = *state;
	struct stat st;
	char types[64];
	struct lines ls;

	assert_int_equal(run_text(f, "kscope-hotspot\t1\nregion\tmy_kernel\n", NULL), 0);
	assert_true(f->sum.truncated);
	assert_int_equal(f->sum.threads, 0);
	assert_non_null(strstr(f->warnings, "no instruction was counted in the region "
			       "'my_kernel'"));
	assert_non_null(strstr(f->warnings, "no roofline"));
	assert_int_equal(stat(out_path(f, "trace.json"), &st), 0);
	viz_types(f, types, sizeof(types));
	assert_string_equal(types, "02 03 04 05 06 07 0c 08 09");
	lines_read(f, "bandwidth.csv", &ls);
	assert_int_equal(ls.n, 1);
	free(ls.text);
}

/* One cache level, an escaped function name, no FLOPs. */
static void test_one_level(void **state)
{
	struct fx *f = *state;
	static const char raw[] =
		"kscope-hotspot\t1\n"
		"cache\t0\t32768\t8\t64\t4\tprivate\tL1\n"
		"memory\t100\n"
		"file\t0\t/nonexistent/a\\\\b.c\n"
		"fn\t0\tf\\tg,h\n"
		"ins\t0\t0x1000\t3\t488b07\t0\t3\t0\tLOAD\t0\t1\n"
		"thread\t1\t10\t50\n"
		"x\t1\t0\t10\t50\t80\t0\t0\t10\t4\n"
		"end\tsignal\t9\t0\n";
	struct lines ls;
	char types[64];

	assert_int_equal(run_text(f, raw, NULL), 0);
	assert_false(f->sum.truncated);
	assert_string_equal(f->sum.end_how, "signal");
	assert_int_equal(f->sum.end_code, 9);
	assert_non_null(strstr(f->warnings, "no roofline: no floating-point operation"));
	viz_types(f, types, sizeof(types));
	assert_string_equal(types, "02 03 04 05 06 07 0c 08 09");
	assert_false(f->sum.roofline);
	lines_read(f, "thread1/instr_exe.csv", &ls);
	assert_string_equal(ls.l[0], "Address,Source,Pipe,Instructions Executed,Cycles,"
			    "Process Bytes,Load Bytes,Store Bytes,Flops,L2Cache Hit Rate,"
			    "L1 Accesses,L1 Misses,L1 Hit Rate,ICache Misses,Stall Cycles,GPR Count,"
			    "Vector Utilization (%),Function,File,Line");
	/* With one level, L2Cache Hit Rate shows it. */
	assert_string_equal(ls.l[1], "0x1000,\"mov rax, qword ptr [rdi]\",LOAD,10,50,80,80,"
			    "0,0,0.6000,10,4,0.6000,0,40,2,,\"f\tg,h\",/nonexistent/a\\b.c,3");
	free(ls.text);
}

/* ------------------------------------------------------------------ */
/* Vector utilisation, pipe_utilization.csv, the Details blocks        */
/* ------------------------------------------------------------------ */

/* VLANES and VELEM: a file without them reads (no utilisation); lanes
 * beyond 256 bits or of an odd size are a damaged record. */
static void test_vector_lanes(void **state)
{
	struct fx *f = *state;
	static const char head[] =
		"kscope-hotspot\t1\n"
		"cache\t0\t32768\t8\t64\t4\tprivate\tL1\n"
		"file\t0\t/nonexistent/v.c\n";
	static const char tail[] =
		"thread\t1\t30\t30\n"
		"x\t1\t0\t10\t10\t0\t0\t0\t0\t0\n"
		"x\t1\t1\t10\t10\t0\t0\t0\t0\t0\n"
		"x\t1\t2\t10\t10\t0\t0\t0\t0\t0\n"
		"end\texit\t0\t0\n";
	char raw[1024];
	struct lines ls;

	/* addss (1 of 8), mulpd (2 of 4) on one line: (10 + 20) / (80 + 40);
	 * an older record without the fields on the next. */
	snprintf(raw, sizeof(raw), "%s%s%s%s%s", head,
		 "ins\t0\t0x1000\t4\tf30f58c1\t0\t3\t-1\tVECTOR\t1\t1\t1\t32\n",
		 "ins\t1\t0x1004\t4\t660f59c1\t0\t3\t-1\tVECTOR\t2\t1\t2\t64\n",
		 "ins\t2\t0x1008\t4\tf30f58c1\t0\t4\t-1\tVECTOR\t1\t1\n", tail);
	assert_int_equal(run_text(f, raw, NULL), 0);
	lines_read(f, "thread1/code_exe.csv", &ls);
	assert_int_equal(ls.n, 3);
	assert_non_null(strstr(ls.l[1], ",3,0x1000-0x1008,"));
	assert_string_equal(strrchr(ls.l[1], ','), ",25.00");
	assert_string_equal(strrchr(ls.l[2], ','), ",");
	free(ls.text);
	lines_read(f, "thread1/instr_exe.csv", &ls);
	assert_non_null(strstr(ls.l[1], ",12.50,??,"));
	assert_non_null(strstr(ls.l[2], ",50.00,??,"));
	assert_non_null(strstr(ls.l[3], ",,??,"));
	free(ls.text);

	snprintf(raw, sizeof(raw), "%s%s%s", head,
		 "ins\t0\t0x1000\t4\tf30f58c1\t0\t3\t-1\tVECTOR\t1\t1\t9\t32\n", tail);
	assert_int_equal(run_text(f, raw, NULL), -EINVAL);
	assert_non_null(strstr(f->err.msg, ":4: instruction 0: 9 vector lanes of 32 bits"));
	snprintf(raw, sizeof(raw), "%s%s%s", head,
		 "ins\t0\t0x1000\t4\tf30f58c1\t0\t3\t-1\tVECTOR\t1\t1\t1\t24\n", tail);
	assert_int_equal(run_text(f, raw, NULL), -EINVAL);
	snprintf(raw, sizeof(raw), "%s%s%s", head,
		 "ins\t0\t0x1000\t4\tf30f58c1\t0\t3\t-1\tVECTOR\t1\t1\t1\n", tail);
	assert_int_equal(run_text(f, raw, NULL), -EINVAL);
	assert_non_null(strstr(f->err.msg, "has 12 fields where 11 are expected"));
}

static void test_pipe_csv(void **state)
{
	struct fx *f = *state;
	struct lines ls;

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	assert_mode_440(f, "pipe_utilization.csv");
	lines_read(f, "pipe_utilization.csv", &ls);
	assert_int_equal(ls.n, 1 + 3 * 5);
	assert_string_equal(ls.l[0], "Thread,Pipe,Instructions,Cycles,Cycle Share (%)");
	/* Thread 1: 1555 cycles. */
	assert_string_equal(ls.l[1], "1,SCALAR,105,155,9.9678");
	assert_string_equal(ls.l[2], "1,VECTOR,100,400,25.7235");
	assert_string_equal(ls.l[3], "1,LOAD,100,900,57.8778");
	assert_string_equal(ls.l[4], "1,STORE,0,0,0.0000");
	assert_string_equal(ls.l[5], "1,BRANCH,100,100,6.4309");
	assert_string_equal(ls.l[9], "3,STORE,10,30,4.1958");
	assert_string_equal(ls.l[12], "total,VECTOR,150,600,26.4317");
	assert_string_equal(ls.l[15], "total,BRANCH,100,100,4.4053");
	free(ls.text);
}

/* The subblock_detail entry of core c named name. */
static json_t *subblock(json_t *blk, long long c, const char *name)
{
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(blk, "subblock_detail"), i, e)
		if (json_integer_value(json_object_get(e, "block_id")) == c &&
		    strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
			return e;
	fail_msg("no entry %s of core %lld", name, c);
	return NULL;
}

static void test_details(void **state)
{
	struct fx *f = *state;
	json_t *j, *e, *core, *u, *t, *row;

	assert_int_equal(run_fixture(f, "basic.raw", NULL), 0);
	/* 0x05: the program's name, both threads, 1 GHz. */
	j = viz_block(f, KS_VB_BASE_INFO, NULL, NULL, NULL, 0);
	assert_string_equal(json_string_value(json_object_get(j, "name")), "demo");
	assert_string_equal(json_string_value(json_object_get(j, "soc")),
			    "simulated x86-64 at 1 GHz: L1 32 KiB 8-way 64 B lines, "
			    "LL 1 MiB 16-way 64 B lines");
	assert_string_equal(json_string_value(json_object_get(j, "op_type")), "cpu");
	assert_int_equal(json_integer_value(json_object_get(j, "block_dim")), 2);
	assert_int_equal(json_integer_value(json_object_get(j, "mix_block_dim")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "device_id")), 0);
	assert_near(json_number_value(json_object_get(j, "duration")), 1.555);
	assert_string_equal(json_string_value(json_object_get(j, "pid")), "4242");
	e = json_array_get(json_object_get(j, "block_detail"), 1);
	assert_int_equal(json_integer_value(json_object_get(e, "block_id")), 1);
	assert_string_equal(json_string_value(json_object_get(e, "core_type")), "cpu");
	assert_near(json_number_value(json_object_get(e, "duration")), 0.715);
	assert_string_equal(json_string_value(json_object_get(e, "thread")), "thread3");
	assert_int_equal(json_array_size(json_object_get(j, "mix_block_detail")), 0);
	assert_true(json_is_array(json_object_get(j, "advice")));
	json_decref(j);

	/* 0x06: the pipes' shares per core, and addss's 1 lane of 8. */
	j = viz_block(f, KS_VB_COMPUTE_GRAPH, NULL, NULL, NULL, 0);
	e = subblock(j, 0, "VECTOR pipe");
	assert_string_equal(json_string_value(json_object_get(e, "block_type")), "cpu");
	assert_string_equal(json_string_value(json_object_get(e, "unit")), "%");
	assert_near(json_number_value(json_object_get(e, "value")), 25.72);
	assert_near(json_number_value(json_object_get(e, "origin_value")), 400);
	e = subblock(j, 1, "Vector Utilization");
	assert_near(json_number_value(json_object_get(e, "value")), 12.5);
	assert_near(json_number_value(json_object_get(e, "origin_value")), 50);
	assert_int_equal(json_array_size(json_object_get(j, "subblock_detail")), 2 * 6);
	json_decref(j);

	/* 0x0C: per core its cycles, bytes moved and LL hit rate, as text;
	 * thread1's 1555 cycles against thread3's 715 make the advice. */
	j = viz_block(f, KS_VB_CORE_LOAD, NULL, NULL, NULL, 0);
	assert_int_equal(json_array_size(json_object_get(j, "op_detail")), 2);
	core = json_array_get(json_object_get(j, "op_detail"), 0);
	assert_int_equal(json_integer_value(json_object_get(core, "core_id")), 0);
	e = json_array_get(json_object_get(core, "core_detail"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "cycles")), "1555");
	assert_string_equal(json_string_value(json_object_get(e, "throughput")), "800");
	assert_string_equal(json_string_value(json_object_get(e, "L2cache_hit_rate")),
			    "50.000000");
	assert_string_equal(json_string_value(json_object_get(e, "subcore_type")), "cpu");
	assert_string_equal(json_string_value(json_object_get(e, "thread")), "thread1");
	e = json_array_get(json_object_get(json_array_get(json_object_get(j, "op_detail"), 1),
					   "core_detail"), 0);
	assert_string_equal(json_string_value(json_object_get(e, "cycles")), "715");
	assert_string_equal(json_string_value(json_object_get(j, "advice")),
			    "1) thread1 took 2.17x the cycles of thread3, the least busy: "
			    "the work is unevenly spread.");
	json_decref(j);

	/* 0x07: time, instructions and bytes per pipe. */
	j = viz_block(f, KS_VB_COMPUTE_TABLE, NULL, NULL, NULL, 0);
	e = subblock(j, 1, "LOAD time");
	assert_string_equal(json_string_value(json_object_get(e, "unit")), "us");
	assert_near(json_number_value(json_object_get(e, "value")), 0.4);
	e = subblock(j, 1, "STORE store bytes");
	assert_string_equal(json_string_value(json_object_get(e, "unit")), "Byte");
	assert_near(json_number_value(json_object_get(e, "value")), 80);
	e = subblock(j, 0, "SCALAR instructions");
	assert_near(json_number_value(json_object_get(e, "value")), 105);
	assert_int_equal(json_array_size(json_object_get(j, "subblock_detail")), 2 * 5 * 4);
	json_decref(j);

	/* 0x08, thread 1: 800 bytes to the registers in 1.555 us; the LL
	 * served 10 accesses, 5 of them hits. */
	j = viz_block(f, KS_VB_MEMORY_GRAPH, NULL, NULL, NULL, 0);
	core = json_array_get(json_object_get(j, "core_memory_map"), 0);
	assert_int_equal(json_integer_value(json_object_get(core, "core_no")), 0);
	assert_string_equal(json_string_value(json_object_get(core, "op_type")), "cpu");
	u = json_object_get(core, "memory_unit");
	assert_int_equal(json_array_size(u), 3);
	e = json_array_get(u, 0);
	assert_string_equal(json_string_value(json_object_get(e, "memory_path")),
			    "L1 -> registers");
	assert_int_equal(json_integer_value(json_object_get(e, "request")), 100);
	assert_int_equal(json_integer_value(json_object_get(e, "request_per_byte")), 64);
	assert_near(json_number_value(json_object_get(e, "bandwidth")), 0.514469);
	assert_near(json_number_value(json_object_get(e, "peak_ratio")), -1);
	assert_true(json_is_true(json_object_get(e, "display")));
	e = json_array_get(u, 2);
	assert_string_equal(json_string_value(json_object_get(e, "memory_path")),
			    "memory -> LL");
	assert_int_equal(json_integer_value(json_object_get(e, "request")), 5);
	assert_near(json_number_value(json_object_get(e, "bandwidth")), 0.288103);
	e = json_object_get(core, "L2cache");
	assert_int_equal(json_integer_value(json_object_get(e, "hit")), 5);
	assert_int_equal(json_integer_value(json_object_get(e, "miss")), 5);
	assert_int_equal(json_integer_value(json_object_get(e, "total_request")), 10);
	assert_near(json_number_value(json_object_get(e, "hit_ratio")), 50);
	e = json_object_get(core, "Vector");
	assert_near(json_number_value(json_object_get(e, "ratio")), 25.72);
	assert_int_equal(json_integer_value(json_object_get(e, "cycle")), 400);
	assert_int_equal(json_integer_value(json_object_get(e, "total_cycles")), 1555);
	assert_true(json_is_array(json_object_get(core, "advice")));
	json_decref(j);
	/* With a calibration, into a new run directory: the share of its L1,
	 * L2 and DRAM figures. */
	ks_rundir_close(&f->run);
	{
		char path[600];

		snprintf(path, sizeof(path), "%s/run2", f->tmp);
		assert_int_equal(mkdir(path, 0750), 0);
		f->run.path = strdup(path);
		f->run.dirfd = open(path, O_RDONLY | O_DIRECTORY);
	}
	assert_int_equal(run_fixture(f, "basic.raw", test_calib()), 0);
	j = viz_block(f, KS_VB_MEMORY_GRAPH, NULL, NULL, NULL, 0);
	u = json_object_get(json_array_get(json_object_get(j, "core_memory_map"), 0),
			    "memory_unit");
	assert_near(json_number_value(json_object_get(json_array_get(u, 0), "peak_ratio")),
		    0.51);
	assert_near(json_number_value(json_object_get(json_array_get(u, 1), "peak_ratio")),
		    0.82);
	assert_near(json_number_value(json_object_get(json_array_get(u, 2), "peak_ratio")),
		    2.88);
	json_decref(j);

	/* 0x09, thread 3: the design's size and header convention. */
	j = viz_block(f, KS_VB_MEMORY_TABLE, NULL, NULL, NULL, 0);
	e = json_array_get(json_object_get(j, "table_per_block"), 1);
	assert_int_equal(json_integer_value(json_object_get(e, "block_id")), 1);
	assert_string_equal(json_string_value(json_object_get(e, "table_op_type")), "cpu");
	t = json_array_get(json_object_get(e, "table_detail"), 0);
	assert_string_equal(json_string_value(json_object_get(t, "table_name")), "Caches");
	assert_ints(json_object_get(t, "size"), 2, 7);
	assert_int_equal(json_array_size(json_object_get(t, "header_name")), 7);
	assert_string_equal(json_string_value(json_array_get(json_object_get(t, "header_name"),
							     0)), "Cache");
	row = json_array_get(json_object_get(t, "row"), 0);
	assert_string_equal(json_string_value(json_object_get(row, "name")), "L1");
	e = json_object_get(row, "value");
	assert_int_equal(json_array_size(e), 6);
	assert_int_equal(json_integer_value(json_array_get(e, 0)), 50);
	assert_int_equal(json_integer_value(json_array_get(e, 1)), 30);
	assert_int_equal(json_integer_value(json_array_get(e, 2)), 20);
	assert_near(json_number_value(json_array_get(e, 3)), 60);
	assert_int_equal(json_integer_value(json_array_get(e, 4)), 1280);
	row = json_array_get(json_object_get(t, "row"), 1);
	assert_string_equal(json_string_value(json_object_get(row, "name")), "LL");
	assert_near(json_number_value(json_array_get(json_object_get(row, "value"), 3)), 0);
	json_decref(j);
}

/* cache.raw: basic.raw with the cache sets and hot lines (simcache.c):
 * cache_sets.csv, 0x0B (counts saturated), cache_lines.csv, 0x0E, and
 * the reader's checks of the new records. */
static uint32_t u32le(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void cache_damaged(struct fx *f, const char *from, const char *to, const char *want)
{
	char *text = fixture("cache.raw"), *at = strstr(text, from), *t;

	assert_non_null(at);
	t = malloc(strlen(text) + strlen(to) + 1);
	sprintf(t, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	assert_int_equal(run_text(f, t, NULL), -EINVAL);
	if (!strstr(f->err.msg, want))
		fail_msg("'%s' lacks '%s'", f->err.msg, want);
	free(t);
	free(text);
}

static void test_cache_records(void **state)
{
	struct fx *f = *state;
	struct ks_vb_reader *r;
	struct ks_vb_error verr;
	struct lines ls;
	const unsigned char *rec = NULL;
	uint64_t rec_size = 0;
	json_t *j, *l, *top, *o;
	char types[64];

	assert_int_equal(run_fixture(f, "cache.raw", NULL), 0);
	viz_types(f, types, sizeof(types));
	assert_non_null(strstr(types, "0b 0e"));
	/* The sets: every one of the 1024, exact counts in the CSV. */
	lines_read(f, "cache_sets.csv", &ls);
	assert_string_equal(ls.l[0], "Level,Set,Loads,Stores,Hits,Misses,Miss Rate,Allocations,"
			    "Evictions With Write-back,Evictions Without Write-back");
	assert_string_equal(ls.l[1], "LL,0,0,0,0,0,,0,0,0");
	assert_string_equal(ls.l[4], "LL,3,100,10,90,20,0.1818,25,1,4");
	assert_string_equal(ls.l[51], "LL,50,5000000000,0,5000000000,0,0.0000,0,0,0");
	free(ls.text);
	assert_int_equal(ks_vb_open(out_path(f, "visualize_data.bin"), KS_VB_CHECK_PAYLOADS, &r,
				    &verr), 0);
	for (uint32_t i = 0; i < ks_vb_count(r); i++)
		if (ks_vb_block_at(r, i)->type == KS_VB_CACHE_RECORDS) {
			rec = ks_vb_block_at(r, i)->payload;
			rec_size = ks_vb_block_at(r, i)->payload_size;
		}
	assert_int_equal(rec_size, 1024 * KS_VB_CACHE_RECORD_SIZE);
	{
		static const uint32_t want3[8] = { 100, 10, 3, 90, 20, 25, 1, 4 };
		static const uint32_t want50[8] = { UINT32_MAX, 0, 50, UINT32_MAX, 0, 0, 0, 0 };

		for (unsigned k = 0; k < 8; k++) {
			assert_int_equal(u32le(rec + 3 * 32 + 4 * k), want3[k]);
			assert_int_equal(u32le(rec + 50 * 32 + 4 * k), want50[k]);
			assert_int_equal(u32le(rec + 7 * 32 + 4 * k), k == 2 ? 7 : 0);
		}
	}
	ks_vb_close(r);
	/* The lines, hottest first, the top instruction of each. */
	lines_read(f, "cache_lines.csv", &ls);
	assert_int_equal(ls.n, 5);
	assert_string_equal(ls.l[0], "Address,L1 Misses,LL Misses,Load Misses,Store Misses,"
			    "Write-backs,Top Instruction,Top Instruction Misses,Function,File,"
			    "Line");
	assert_string_equal(ls.l[1], "0x10040,10,5,8,2,7,0x401007,8,saxpy," KERNEL ",11");
	assert_string_equal(ls.l[2], "0x20000,5,5,5,0,0,0x401007,5,saxpy," KERNEL ",11");
	assert_string_equal(ls.l[3], "0x30000,0,0,0,0,1,,,,,");
	assert_string_equal(ls.l[4], "other,5,1,4,1,2,,,,,");
	free(ls.text);
	j = viz_block(f, KS_VB_CACHELINE_HEAT, NULL, NULL, NULL, 0);
	assert_int_equal(json_integer_value(json_object_get(j, "line_size")), 64);
	assert_int_equal(json_array_size(json_object_get(j, "cache_lines")), 3);
	l = json_array_get(json_object_get(j, "cache_lines"), 0);
	assert_string_equal(json_string_value(json_object_get(l, "address")), "0x10040");
	assert_ints(json_object_get(l, "misses"), 10, 5);
	assert_int_equal(json_integer_value(json_object_get(l, "writebacks")), 7);
	top = json_object_get(l, "top_instruction");
	assert_string_equal(json_string_value(json_object_get(top, "address")), "0x401007");
	assert_int_equal(json_integer_value(json_object_get(top, "line")), 11);
	assert_string_equal(json_string_value(json_object_get(top, "function")), "saxpy");
	assert_non_null(strstr(json_string_value(json_object_get(top, "source")), "mov"));
	assert_true(json_is_null(json_object_get(json_array_get(
		json_object_get(j, "cache_lines"), 2), "top_instruction")));
	o = json_object_get(j, "other");
	assert_int_equal(json_integer_value(json_object_get(o, "lines")), 0);
	assert_int_equal(json_integer_value(json_object_get(o, "dropped_pairs")), 3);
	assert_ints(json_object_get(o, "misses"), 5, 1);
	json_decref(j);
	/* The reader's checks. */
	cache_damaged(f, "set\t3\t100\t10\t90", "set\t3\t100\t10\t91",
		      "hits and misses do not add up");
	cache_damaged(f, "set\t3\t", "set\t1024\t", "set 1024 of 1024");
	cache_damaged(f, "sets\t1\t1024", "sets\t1\t1000", "1000 sets, but cache level 1 has 1024");
	cache_damaged(f, "sets\t1\t1024", "sets\t2\t1024", "the sets of cache level 2");
	cache_damaged(f, "sets\t1\t1024\n", "", "a 'set' record before the 'sets' record");
	cache_damaged(f, "hl\t0x10040\t2\t8\t0\t8", "hl\t0x10040\t2\t8\t0\t9",
		      "level-0 misses are not its loads and stores");
	cache_damaged(f, "hl\t0x20000\t2\t5\t0\t5\t5", "hl\t0x20000\t2\t5\t0\t5\t6",
		      "more misses of level 1 than of level 0");
	cache_damaged(f, "hl\t0x20000\t2", "hl\t0x20000\t99", "instruction 99");
	cache_damaged(f, "hlwb\t0x30000\t1", "hlwb\t0x30000", "has 2 fields where 3");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_summary, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_instr_csv, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_code_csv, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_visualize_data, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_trace, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_trace_bw_merge, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bandwidth, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_roofline, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_truncated, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_damaged, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_empty, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_header_only, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_one_level, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_vector_lanes, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_pipe_csv, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_details, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_cache_records, fx_setup, fx_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
