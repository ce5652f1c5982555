/*
 * test_view_import.c: kscope view's import (src/view/view_import*.c) on
 * small inputs made here -- a good container, and the malformed ones a
 * user may hand it: a truncated container, a block with bad JSON, an
 * empty directory, a directory of unrelated files, a symbolic link in
 * PATH, files that are none of the accepted kinds.  Each failure is
 * checked against its exact message.  Also the source rule: only texts
 * the data names are served.  And kscope causal's causal.csv: its curves,
 * and a malformed one (another header, a cell that is not a number, a row
 * of the wrong length, too many curves or problems) still a card, with
 * messages naming the file and the line.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "test_util.h"
#include "view.h"

#define LOOKS_FOR "it looks (4 directory levels deep at most, not following symbolic " \
	"links) for visualize_data.bin, trace.json, trace.perfetto-trace, profile.db, " \
	"report.json (of kscope " \
	"memcheck, contention or falseshare), Pipe_statistic.csv with " \
	"Instruction_statistic.csv (of kscope predict), causal.csv (of kscope causal)"
#define ACCEPTS "kscope view accepts a run directory of a kscope command, a " \
	"visualize_data.bin, a Chrome trace JSON (an object with \"traceEvents\" or an " \
	"array of events), a Perfetto trace written by kscope (.perfetto-trace), a " \
	"profile.db or a memory tool's report.json"

static char *path_in(const char *dir, const char *name)
{
	char *p = malloc(strlen(dir) + strlen(name) + 2);

	assert_non_null(p);
	sprintf(p, "%s/%s", dir, name);
	return p;
}

struct blk {
	unsigned type;
	const char *path; /* 0x01 only */
	const char *data;
};

static void write_container(const char *file, const struct blk *b, size_t n)
{
	struct ks_vb_writer *w;
	struct ks_vb_error ve;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(ks_vb_writer_open(fd, &w, &ve), 0);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(ks_vb_write(w, b[i].type, KS_VB_VERSION, b[i].path, b[i].data,
					     strlen(b[i].data), &ve), 0);
	ks_vb_writer_free(w);
	close(fd);
}

/* Imports path, expecting failure with exactly msg. */
static void expect_error(const char *path, const char *msg)
{
	struct ks_view *v = (struct ks_view *)1;
	struct ks_err err = { 0 };

	assert_true(ks_view_import(path, NULL, &v, NULL, &err) < 0);
	assert_null(v);
	assert_string_equal(err.msg, msg);
}

static char *request(const struct ks_view *v, const char *text)
{
	size_t len = 0;
	char *r = ks_view_request(v, text, strlen(text), &len);

	assert_non_null(r);
	assert_int_equal(strlen(r), len);
	return r;
}

/* ------------------------------------------------------------------ */

static const char base_info[] =
	"{\"name\":\"k\",\"soc\":\"cpu\",\"op_type\":\"aiv\",\"block_dim\":2,"
	"\"duration\":1.5,\"block_detail\":[{\"block_id\":0,\"core_type\":\"aiv\","
	"\"duration\":0.75}],\"advice\":[\"a\"]}";

static size_t padded(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

static void good_container(void **state)
{
	char *dir = ks_test_tmpdir(), *run = path_in(dir, "op_1"), *file, *src;
	struct blk b[] = {
		{ KS_VB_SOURCE, NULL, "int main(void)\n{\n}\n" },
		{ KS_VB_BASE_INFO, NULL, base_info },
	};
	struct ks_view *v = NULL;
	struct ks_err err = { 0 };
	char *r;

	(void)state;
	assert_int_equal(mkdir(run, 0700), 0);
	file = path_in(run, "visualize_data.bin");
	src = path_in(dir, "k.c");
	b[0].path = src;
	write_container(file, b, 2);
	assert_int_equal(ks_view_import(dir, NULL, &v, NULL, &err), 0);
	assert_int_equal(v->ncards, 1);
	assert_string_equal(v->cards[0].id, "op");
	assert_string_equal(v->cards[0].command, "op");
	assert_string_equal(v->cards[0].title, "k");
	assert_int_equal(v->cards[0].kinds, KV_DETAILS);
	assert_int_equal(v->cards[0].nsources, 1);
	assert_string_equal(v->cards[0].sources[0].path, src);

	r = request(v, "{\"id\":1,\"type\":\"request\",\"moduleName\":\"source\","
		    "\"command\":\"source/details/baseInfo\",\"params\":{}}");
	assert_non_null(strstr(r, "\"result\":true"));
	assert_non_null(strstr(r, "\"blockDim\":\"2\""));
	assert_non_null(strstr(r, "\"duration\":\"1.5\""));
	assert_non_null(strstr(r, "\"value\":[\"0\",\"aiv\",\"0.75\"]"));
	free(r);
	/* a file on disk that the data does not name is never served */
	r = request(v, "{\"id\":2,\"type\":\"request\",\"moduleName\":\"source\","
		    "\"command\":\"source/code/file\",\"params\":{\"sourceName\":"
		    "\"/etc/passwd\"}}");
	assert_non_null(strstr(r, "\"result\":false"));
	assert_non_null(strstr(r, "is not a source file of the imported data"));
	free(r);
	ks_view_free(v);

	/* the container alone: named by its run directory, the card's path
	 * is the file */
	assert_int_equal(ks_view_import(file, NULL, &v, NULL, &err), 0);
	assert_int_equal(v->ncards, 1);
	assert_string_equal(v->cards[0].id, "op");
	assert_string_equal(v->cards[0].path, file);
	ks_view_free(v);

	ks_test_rmtree(dir);
	free(src);
	free(file);
	free(run);
	free(dir);
}

static void truncated_container(void **state)
{
	char *dir = ks_test_tmpdir(), *file = path_in(dir, "visualize_data.bin");
	struct blk b[] = { { KS_VB_BASE_INFO, NULL, base_info } };
	char msg[1024];
	struct stat st;

	(void)state;
	write_container(file, b, 1);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(truncate(file, st.st_size - 20), 0);
	/* the payload padded to a multiple of 4, 20 bytes of it cut */
	snprintf(msg, sizeof msg, "%s: block 0 at offset 0: truncated: it declares %zu "
		 "content bytes but the file has %zu left", file, padded(strlen(base_info)),
		 padded(strlen(base_info)) - 20);
	expect_error(file, msg);
	/* and through the directory walk */
	expect_error(dir, msg);
	ks_test_rmtree(dir);
	free(file);
	free(dir);
}

static void bad_json_block(void **state)
{
	char *dir = ks_test_tmpdir(), *file = path_in(dir, "visualize_data.bin");
	struct blk b[] = {
		{ KS_VB_BASE_INFO, NULL, base_info },
		{ KS_VB_ROOFLINE, NULL, "{\"multiple_rooflines\": [}" },
	};
	char msg[1024];

	(void)state;
	write_container(file, b, 2);
	/* block 1 follows block 0's header and padded payload; the '}' is
	 * its payload's 25th byte, and the reader gives the offset just past
	 * it (jansson's position) */
	size_t off = KS_VB_HEADER_SIZE + padded(strlen(base_info));

	snprintf(msg, sizeof msg, "%s: block 1 (roofline) at offset %zu: invalid JSON at "
		 "line 1, column 25 (file offset %zu): unexpected token near '}'", file, off,
		 off + KS_VB_HEADER_SIZE + 25);
	expect_error(file, msg);
	ks_test_rmtree(dir);
	free(file);
	free(dir);
}

static void empty_directory(void **state)
{
	char *dir = ks_test_tmpdir();
	char msg[1024];

	(void)state;
	snprintf(msg, sizeof msg, "%s: nothing kscope view can show here: %s", dir,
		 LOOKS_FOR);
	expect_error(dir, msg);
	ks_test_rmtree(dir);
	free(dir);
}

static void unrelated_files(void **state)
{
	char *dir = ks_test_tmpdir(), *sub = path_in(dir, "sub"), *p;
	char msg[1024];

	(void)state;
	p = path_in(dir, "notes.txt");
	ks_test_write_file(p, "hello\n", 0644);
	free(p);
	/* a report.json that no memory tool wrote */
	p = path_in(dir, "report.json");
	ks_test_write_file(p, "{\"format\": \"something else\"}\n", 0644);
	free(p);
	/* only one of kscope predict's two files */
	p = path_in(dir, "Pipe_statistic.csv");
	ks_test_write_file(p, "Pipe,Instructions\nMTE2,1\n", 0644);
	free(p);
	assert_int_equal(mkdir(sub, 0700), 0);
	p = path_in(sub, "context.json");
	ks_test_write_file(p, "{}\n", 0644);
	free(p);
	snprintf(msg, sizeof msg, "%s: nothing kscope view can show here: %s", dir,
		 LOOKS_FOR);
	expect_error(dir, msg);
	ks_test_rmtree(dir);
	free(sub);
	free(dir);
}

static void symlink_component(void **state)
{
	char *dir = ks_test_tmpdir(), *real = path_in(dir, "real"), *link = path_in(dir, "link");
	char *file = path_in(real, "visualize_data.bin"), *via = path_in(link, "visualize_data.bin");
	struct blk b[] = { { KS_VB_BASE_INFO, NULL, base_info } };
	struct ks_view *v = NULL;
	struct ks_err err = { 0 };
	char msg[1024];

	(void)state;
	assert_int_equal(mkdir(real, 0700), 0);
	write_container(file, b, 1);
	assert_int_equal(symlink(real, link), 0);
	snprintf(msg, sizeof msg, "%s: '%s' is a symbolic link; kscope view does not follow "
		 "symbolic links: give the path it points to", via, link);
	expect_error(via, msg);
	snprintf(msg, sizeof msg, "%s: '%s' is a symbolic link; kscope view does not follow "
		 "symbolic links: give the path it points to", link, link);
	expect_error(link, msg);
	/* a link inside the walked directory is skipped, not followed: only
	 * real/ gives a card */
	assert_int_equal(ks_view_import(dir, NULL, &v, NULL, &err), 0);
	assert_int_equal(v->ncards, 1);
	assert_string_equal(v->cards[0].path, real);
	ks_view_free(v);
	ks_test_rmtree(dir);
	free(via);
	free(file);
	free(link);
	free(real);
	free(dir);
}

static void other_files(void **state)
{
	char *dir = ks_test_tmpdir(), *p;
	char msg[2048];

	(void)state;
	p = path_in(dir, "a.c");
	ks_test_write_file(p, "int x;\n", 0644);
	snprintf(msg, sizeof msg, "%s: kscope view cannot show this file: it looks like a "
		 "text file; %s", p, ACCEPTS);
	expect_error(p, msg);
	free(p);

	p = path_in(dir, "empty");
	ks_test_write_file(p, "", 0644);
	snprintf(msg, sizeof msg, "%s: kscope view cannot show this file: it looks like an "
		 "empty file; %s", p, ACCEPTS);
	expect_error(p, msg);
	free(p);

	p = path_in(dir, "x.json");
	ks_test_write_file(p, "{\"a\": 1}", 0644);
	snprintf(msg, sizeof msg, "%s: kscope view cannot show this file: it looks like JSON "
		 "that is neither a Trace Event document (no \"traceEvents\" array) nor a "
		 "memory tool's report; %s", p, ACCEPTS);
	expect_error(p, msg);
	free(p);

	p = path_in(dir, "missing");
	snprintf(msg, sizeof msg, "%s: No such file or directory", p);
	expect_error(p, msg);
	free(p);
	ks_test_rmtree(dir);
	free(dir);
}

static void predict_csv(void **state)
{
	char *dir = ks_test_tmpdir(), *p;
	struct ks_view *v = NULL;
	struct ks_err err = { 0 };
	json_t *row;

	(void)state;
	p = path_in(dir, "Pipe_statistic.csv");
	ks_test_write_file(p, "Pipe,Instructions,Busy (us)\nMTE2,16,1.5\n\"a,b\",0,x\n", 0644);
	free(p);
	p = path_in(dir, "Instruction_statistic.csv");
	ks_test_write_file(p, "Instruction,Count\r\nload,3\r\n", 0644);
	free(p);
	assert_int_equal(ks_view_import(dir, NULL, &v, NULL, &err), 0);
	assert_int_equal(v->ncards, 1);
	assert_int_equal(v->cards[0].kinds, KV_PREDICT);
	assert_string_equal(v->cards[0].command, "predict");
	row = json_array_get(json_object_get(v->cards[0].predict, "pipes"), 0);
	assert_string_equal(json_string_value(json_object_get(row, "Pipe")), "MTE2");
	assert_int_equal(json_integer_value(json_object_get(row, "Instructions")), 16);
	assert_true(json_real_value(json_object_get(row, "Busy (us)")) == 1.5);
	row = json_array_get(json_object_get(v->cards[0].predict, "pipes"), 1);
	assert_string_equal(json_string_value(json_object_get(row, "Pipe")), "a,b");
	assert_string_equal(json_string_value(json_object_get(row, "Busy (us)")), "x");
	row = json_array_get(json_object_get(v->cards[0].predict, "instructions"), 0);
	assert_int_equal(json_integer_value(json_object_get(row, "Count")), 3);
	ks_view_free(v);
	ks_test_rmtree(dir);
	free(dir);
}

/* Blocks that pass the container's checks but hold odd shapes: every
 * handler answers (with empty strings and arrays where fields are
 * missing), none crashes. */
static void odd_blocks(void **state)
{
	static const char *const commands[] = {
		"source/api/line\",\"params\":{\"sourceName\":\"a\"}",
		"source/api/line\",\"params\":{\"sourceName\":\"a\",\"coreName\":\"c1\"}",
		"source/api/instructions\",\"params\":{}",
		"source/details/baseInfo\",\"params\":{}",
		"source/details/computeworkload\",\"params\":{}",
		"source/details/computeworkload\",\"params\":{\"blockId\":1}",
		"source/details/memoryGraph\",\"params\":{}",
		"source/details/memoryTable\",\"params\":{\"blockId\":0}",
	};
	char *dir = ks_test_tmpdir(), *file = path_in(dir, "visualize_data.bin");
	struct blk b[] = {
		{ KS_VB_API_FILES, NULL, "{\"Cores\":[\"c0\",\"c1\"],\"Files\":[{\"Source\":"
		  "\"a\",\"Lines\":[1,{\"Line\":\"x\",\"Cycles\":[1]},{\"Cycles\":[2,3],"
		  "\"Address Range\":[[\"0x1\",\"0x2\"],[\"0x3\",\"0x4\"]]}]}]}" },
		{ KS_VB_API_INSTR, NULL, "{\"Cores\":[],\"Instructions\":[null]}" },
		{ KS_VB_BASE_INFO, NULL, "{\"op_type\":\"mix\",\"mix_block_detail\":[3,{}],"
		  "\"duration\":[1],\"advice\":\"no\"}" },
		{ KS_VB_COMPUTE_GRAPH, NULL, "{\"subblock_detail\":[1,{\"block_id\":\"1\","
		  "\"value\":1e300}]}" },
		{ KS_VB_MEMORY_GRAPH, NULL, "{\"core_memory_map\":[1,\"x\",{\"memory_unit\":5,"
		  "\"L2cache\":[]},{\"core_no\":0,\"memory_unit\":[1,{\"request\":\"r\"}]}]}" },
		{ KS_VB_MEMORY_TABLE, NULL, "{\"table_per_block\":[{\"block_id\":0,"
		  "\"table_detail\":[7,{\"row\":[{\"value\":3}],\"size\":{}}]}]}" },
	};
	struct ks_view *v = NULL;
	struct ks_err err = { 0 };
	char req[512];

	(void)state;
	write_container(file, b, sizeof b / sizeof b[0]);
	assert_int_equal(ks_view_import(file, NULL, &v, NULL, &err), 0);
	assert_int_equal(v->cards[0].kinds, KV_SOURCE | KV_DETAILS);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		snprintf(req, sizeof req, "{\"id\":1,\"type\":\"request\",\"moduleName\":"
			 "\"source\",\"command\":\"%s}", commands[i]);
		char *r = request(v, req);

		assert_non_null(strstr(r, "\"result\":true"));
		free(r);
	}
	ks_view_free(v);
	ks_test_rmtree(dir);
	free(file);
	free(dir);
}

/* ------------------------------------------------------------------ */
/* causal.csv                                                          */
/* ------------------------------------------------------------------ */

#define CAUSAL_HEADER "point,file,line,line_speedup_pct,program_speedup_pct,ci_low_pct," \
	"ci_high_pct,experiments,visits,effective_s"

/* Imports a directory holding causal.csv with text; returns the view
 * (one card, KV_CAUSAL) and sets *path to the file's path. */
static struct ks_view *import_causal(const char *dir, const char *text, char **path)
{
	struct ks_view *v = NULL;
	struct ks_err err = { 0 };

	*path = path_in(dir, "causal.csv");
	ks_test_write_file(*path, text, 0644);
	assert_int_equal(ks_view_import(dir, NULL, &v, NULL, &err), 0);
	assert_int_equal(v->ncards, 1);
	assert_int_equal(v->cards[0].kinds, KV_CAUSAL);
	assert_string_equal(v->cards[0].command, "causal");
	return v;
}

static json_t *causal_curves(const struct ks_view *v)
{
	return json_object_get(v->cards[0].causal, "curves");
}

/* The card's messages: exactly want (n of them). */
static void expect_messages(const struct ks_view *v, const char *const *want, size_t n)
{
	json_t *m = json_object_get(v->cards[0].causal, "messages");

	assert_int_equal(json_array_size(m), n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(json_string_value(json_array_get(m, i)), want[i]);
}

static double point_num(json_t *curve, size_t k, const char *key)
{
	return json_number_value(json_object_get(json_array_get(json_object_get(curve, "points"),
								 k), key));
}

static void causal_csv(void **state)
{
	char *dir = ks_test_tmpdir(), *p;
	struct ks_view *v;
	json_t *c, *pt;
	char *r;

	(void)state;
	/* two curves; a quoted file name with a comma and a line break; an
	 * unknown interval; CR LF line ends; a column kscope view does not
	 * know (left alone) */
	v = import_causal(dir, CAUSAL_HEADER ",function\r\n"
			  "round,\"/src/a,\nb.c\",12,0,0.000,-1.500,2.250,10,100,1.000000,f\r\n"
			  "round,\"/src/a,\nb.c\",12,50,20.000,,30.500,4,50,0.400000,f\r\n"
			  "round,\"/src/a,\nb.c\",12,100,30.000,25.000,35.000,4,60,0.300000,f\r\n"
			  "round,/src/c.c,7,0,0.000,-1.500,2.250,10,100,1.000000,\r\n"
			  "round,/src/c.c,7,50,-0.500,-3.000,1.000,2,20,0.200000,\r\n", &p);
	expect_messages(v, NULL, 0);
	assert_int_equal(json_array_size(causal_curves(v)), 2);
	c = json_array_get(causal_curves(v), 0);
	assert_string_equal(json_string_value(json_object_get(c, "point")), "round");
	assert_string_equal(json_string_value(json_object_get(c, "file")), "/src/a,\nb.c");
	assert_int_equal(json_integer_value(json_object_get(c, "line")), 12);
	assert_true(json_real_value(json_object_get(c, "impact_pct")) == 25.0);
	assert_int_equal(json_array_size(json_object_get(c, "points")), 3);
	assert_true(point_num(c, 0, "ci_low_pct") == -1.5);
	assert_true(point_num(c, 0, "ci_high_pct") == 2.25);
	assert_true(point_num(c, 1, "line_speedup_pct") == 50);
	assert_true(point_num(c, 1, "program_speedup_pct") == 20);
	pt = json_array_get(json_object_get(c, "points"), 1);
	assert_true(json_is_null(json_object_get(pt, "ci_low_pct")));
	assert_int_equal(json_integer_value(json_object_get(pt, "experiments")), 4);
	assert_int_equal(json_integer_value(json_object_get(pt, "visits")), 50);
	assert_true(point_num(c, 2, "effective_s") == 0.3);
	c = json_array_get(causal_curves(v), 1);
	assert_string_equal(json_string_value(json_object_get(c, "file")), "/src/c.c");
	assert_true(json_real_value(json_object_get(c, "impact_pct")) == -0.5);
	r = request(v, "{\"id\":1,\"type\":\"request\",\"moduleName\":\"causal\","
		    "\"command\":\"causal/curves\",\"params\":{}}");
	assert_non_null(strstr(r, "\"result\":true"));
	assert_non_null(strstr(r, "\"impact_pct\":25.0"));
	free(r);
	r = request(v, "{\"id\":1,\"type\":\"request\",\"moduleName\":\"predict\","
		    "\"command\":\"predict/summary\",\"params\":{}}");
	assert_non_null(strstr(r, "\"the imported data has no predict data\""));
	free(r);
	ks_view_free(v);
	free(p);
	ks_test_rmtree(dir);
	free(dir);
}

static void causal_csv_malformed(void **state)
{
	char *dir = ks_test_tmpdir(), *p, want[3][1024];
	const char *w[3] = { want[0], want[1], want[2] };
	struct ks_view *v;
	char *r;

	(void)state;
	/* another header: a card without curves, and why */
	v = import_causal(dir, "point,file,line,speedup\nround,/a.c,1,0\n", &p);
	snprintf(want[0], sizeof want[0], "%s: line 1: the header is \"point,file,line,"
		 "speedup\", without line_speedup_pct, program_speedup_pct, ci_low_pct, "
		 "ci_high_pct, experiments, visits, effective_s; kscope causal's has point,file,"
		 "line,line_speedup_pct,program_speedup_pct,ci_low_pct,ci_high_pct,experiments,"
		 "visits,effective_s (no curve is read)", p);
	expect_messages(v, w, 1);
	assert_int_equal(json_array_size(causal_curves(v)), 0);
	r = request(v, "{\"id\":1,\"type\":\"request\",\"moduleName\":\"causal\","
		    "\"command\":\"causal/curves\",\"params\":{\"cardId\":\"nope\"}}");
	assert_non_null(strstr(r, "\"params.cardId \\\"nope\\\" is no card here; cards with "));
	free(r);
	ks_view_free(v);
	free(p);

	/* a cell that is not a number, a row of the wrong length, a blank
	 * line (skipped): those rows are left out, the others read */
	v = import_causal(dir, CAUSAL_HEADER "\n"
			  "round,/a.c,3,0,0.000,-1.000,1.000,10,100,1.000000\n"
			  "round,/a.c,3,50,abc,-1.000,1.000,10,100,1.000000\n"
			  "\n"
			  "round,/a.c,3,50,12.000,1.000\n"
			  "round,/a.c,3,100,40.000,30.000,50.000,3,30,0.300000\n", &p);
	snprintf(want[0], sizeof want[0], "%s: line 3: program_speedup_pct is \"abc\"; a "
		 "number is expected (the row is left out)", p);
	snprintf(want[1], sizeof want[1], "%s: line 5: 6 fields, where the header has 10 "
		 "(the row is left out)", p);
	expect_messages(v, w, 2);
	assert_int_equal(json_array_size(causal_curves(v)), 1);
	assert_int_equal(json_array_size(json_object_get(json_array_get(causal_curves(v), 0),
							 "points")), 2);
	assert_true(json_real_value(json_object_get(json_array_get(causal_curves(v), 0),
						    "impact_pct")) == 40.0);
	ks_view_free(v);
	free(p);

	/* counts and line numbers that are not whole numbers */
	v = import_causal(dir, CAUSAL_HEADER "\n"
			  "round,/a.c,0,0,0,,,1,1,1\n"
			  "round,/a.c,1,0,0,,,-1,1,1\n"
			  "round,/a.c,1,0,0,x,,1,1,1\n", &p);
	snprintf(want[0], sizeof want[0], "%s: line 2: line is \"0\"; a line number (1 or "
		 "more) is expected (the row is left out)", p);
	snprintf(want[1], sizeof want[1], "%s: line 3: experiments is \"-1\"; a whole number "
		 "(0 or more) is expected (the row is left out)", p);
	snprintf(want[2], sizeof want[2], "%s: line 4: ci_low_pct is \"x\"; a number, or "
		 "nothing (unknown) is expected (the row is left out)", p);
	expect_messages(v, w, 3);
	assert_int_equal(json_array_size(causal_curves(v)), 0);
	ks_view_free(v);
	free(p);

	/* empty; an unterminated quote takes the rest of the file */
	v = import_causal(dir, "", &p);
	snprintf(want[0], sizeof want[0], "%s: line 1: the file is empty; kscope causal "
		 "writes a header line first", p);
	expect_messages(v, w, 1);
	ks_view_free(v);
	free(p);
	v = import_causal(dir, CAUSAL_HEADER "\n\"round,/a.c,1,0,0,,,1,1,1\n", &p);
	snprintf(want[0], sizeof want[0], "%s: line 2: 1 field, where the header has 10 (the "
		 "row is left out)", p);
	expect_messages(v, w, 1);
	ks_view_free(v);
	free(p);
	ks_test_rmtree(dir);
	free(dir);
}

/* Past 500 curves and 20 problems, the rest are counted, not kept. */
static void causal_csv_caps(void **state)
{
	char *dir = ks_test_tmpdir(), *p, want[2][1024], row[128];
	const char *w[2] = { want[0], want[1] };
	size_t cap = 64 << 10, n = 0;
	char *text = malloc(cap);
	struct ks_view *v;
	json_t *m;

	(void)state;
	assert_non_null(text);
	n += (size_t)snprintf(text, cap, "%s\n", CAUSAL_HEADER);
	for (int i = 1; i <= 501; i++) {
		snprintf(row, sizeof row, "p,/a.c,%d,0,0,,,1,1,1\np,/a.c,%d,50,%d,,,1,1,1\n",
			 i, i, i);
		assert_true(n + strlen(row) < cap);
		memcpy(text + n, row, strlen(row) + 1);
		n += strlen(row);
	}
	v = import_causal(dir, text, &p);
	snprintf(want[0], sizeof want[0], "%s: 501 curves; the first 500 (the best ranked) "
		 "are shown", p);
	expect_messages(v, w, 1);
	assert_int_equal(json_array_size(causal_curves(v)), 500);
	assert_true(json_real_value(json_object_get(json_array_get(causal_curves(v), 499),
						    "impact_pct")) == 500.0);
	ks_view_free(v);
	free(p);

	n = (size_t)snprintf(text, cap, "%s\n", CAUSAL_HEADER);
	for (int i = 1; i <= 25; i++)
		n += (size_t)snprintf(text + n, cap - n, "p,/a.c,%d,0,zero,,,1,1,1\n", i);
	v = import_causal(dir, text, &p);
	m = json_object_get(v->cards[0].causal, "messages");
	assert_int_equal(json_array_size(m), 21);
	snprintf(want[0], sizeof want[0], "%s: line 21: program_speedup_pct is \"zero\"; a "
		 "number is expected (the row is left out)", p);
	assert_string_equal(json_string_value(json_array_get(m, 19)), want[0]);
	snprintf(want[1], sizeof want[1], "%s: 5 more problems not listed", p);
	assert_string_equal(json_string_value(json_array_get(m, 20)), want[1]);
	ks_view_free(v);
	free(p);
	free(text);
	ks_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_container),
		cmocka_unit_test(truncated_container),
		cmocka_unit_test(bad_json_block),
		cmocka_unit_test(empty_directory),
		cmocka_unit_test(unrelated_files),
		cmocka_unit_test(symlink_component),
		cmocka_unit_test(other_files),
		cmocka_unit_test(predict_csv),
		cmocka_unit_test(odd_blocks),
		cmocka_unit_test(causal_csv),
		cmocka_unit_test(causal_csv_malformed),
		cmocka_unit_test(causal_csv_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
