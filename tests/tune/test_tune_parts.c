/*
 * Unit tests of kscope tune's pieces (src/tune, through tune_int.h): the
 * command splitter, the tunable lines and the variants' text, the space
 * parser, percentiles, the KSCOPE_TIME_NS scanner and output tail, the
 * process runner (exit, signal, timeout, process-group cleanup, a program
 * that does not exist) and the removal of variant directories that never
 * follows a symbolic link.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_util.h"
#include "tune_int.h"

/* A NULL-terminated argument vector of copies of the strings. */
static char **av(const char *first, ...)
{
	char **v = calloc(16, sizeof(*v));
	const char *s = first;
	va_list ap;
	size_t n = 0;

	assert_non_null(v);
	va_start(ap, first);
	while (s && n < 15) {
		v[n++] = strdup(s);
		s = va_arg(ap, const char *);
	}
	va_end(ap);
	return v;
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

static char **split(const char *text, const char *const *vals)
{
	struct ks_tune_cmd c;
	struct ks_err e;
	char **argv;

	ks_err_clear(&e);
	assert_int_equal(ks_tune_cmd_parse(text, "--build", &c, &e), 0);
	argv = ks_tune_cmd_expand(&c, vals);
	assert_non_null(argv);
	ks_tune_cmd_free(&c);
	return argv;
}

static const char *const VALS[KS_TUNE_PH_COUNT] = { "/v/c0/k.c", "/v/c0/k", "/v/c0",
						    "/src dir" };

static void test_cmd_words(void **state)
{
	char **a;

	(void)state;
	a = split("cc  -O2\t{src} -o {exe}", VALS);
	assert_string_equal(a[0], "cc");
	assert_string_equal(a[1], "-O2");
	assert_string_equal(a[2], "/v/c0/k.c");
	assert_string_equal(a[3], "-o");
	assert_string_equal(a[4], "/v/c0/k");
	assert_null(a[5]);
	ks_tune_argv_free(a);

	/* Quotes group; placeholders inside a word; a blank path stays one. */
	a = split("cc '-DNAME=a b' \"-I{srcdir}\" -I{srcdir}/inc x\\ y '' \"q\\\"\\\\\"", VALS);
	assert_string_equal(a[0], "cc");
	assert_string_equal(a[1], "-DNAME=a b");
	assert_string_equal(a[2], "-I/src dir");
	assert_string_equal(a[3], "-I/src dir/inc");
	assert_string_equal(a[4], "x y");
	assert_string_equal(a[5], "");
	assert_string_equal(a[6], "q\"\\");
	assert_null(a[7]);
	ks_tune_argv_free(a);

	/* Single quotes and a backslash keep a placeholder literal; other
	 * braces are text. */
	a = split("echo '{src}' \\{exe} {} {X} {dir}/{exe}", VALS);
	assert_string_equal(a[1], "{src}");
	assert_string_equal(a[2], "{exe}");
	assert_string_equal(a[3], "{}");
	assert_string_equal(a[4], "{X}");
	assert_string_equal(a[5], "/v/c0//v/c0/k");
	ks_tune_argv_free(a);
}

static void test_cmd_placeholders_seen(void **state)
{
	struct ks_tune_cmd c;
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_tune_cmd_parse("{exe} 3 '{src}'", "--run", &c, &e), 0);
	assert_true(c.has[KS_TUNE_PH_EXE]);
	assert_false(c.has[KS_TUNE_PH_SRC]);
	assert_true(ks_tune_cmd_word_has_ph(&c, 0));
	assert_false(ks_tune_cmd_word_has_ph(&c, 1));
	ks_tune_cmd_free(&c);
}

static void expect_cmd_error(const char *text, const char *needle)
{
	struct ks_tune_cmd c;
	struct ks_err e;

	ks_err_clear(&e);
	assert_int_equal(ks_tune_cmd_parse(text, "--build", &c, &e), -EINVAL);
	if (!strstr(e.msg, needle))
		fail_msg("'%s': message '%s' lacks '%s'", text, e.msg, needle);
	assert_null(c.words);
}

static void test_cmd_errors(void **state)
{
	(void)state;
	expect_cmd_error("cc '{src} -o {exe}", "unbalanced '");
	expect_cmd_error("cc \"{src} -o {exe}", "unbalanced \"");
	expect_cmd_error("cc \"a\\\" {src}", "unbalanced \"");
	expect_cmd_error("cc {src} \\", "lone backslash");
	expect_cmd_error("cc {source}", "unknown placeholder {source}");
	expect_cmd_error("cc \"{obj}\"", "unknown placeholder {obj}");
	expect_cmd_error("", "empty");
	expect_cmd_error("  \t ", "empty");
	expect_cmd_error("cc\n{src}", "control character");
}

/* ------------------------------------------------------------------ */
/* Tunable lines and variants                                          */
/* ------------------------------------------------------------------ */

static const char SOURCE[] =
	"// tunable parameters follow\n"            /* a comment: not a line */
	"#define TILE 32 // tunable\n"
	"#  define  NAME \"a//b\"   //tunable: a string\n"
	"static const int UNROLL = 4; // tunable\r\n"
	"constexpr auto SHAPE = Shape<64, 64>{};\t// tunable\n"
	"using T = float; // tunable\n"
	"int x = 1; // not tunable\n"
	"#define OTHER 7 // tunable\n"
	"int main(void) { return 0; }";                /* no final newline */

static void test_source_lines(void **state)
{
	struct ks_tune_source s;
	struct ks_err e;
	char v[64];

	(void)state;
	assert_int_equal(ks_tune_source_scan(SOURCE, sizeof(SOURCE) - 1, "k.c", &s, &e), 0);
	assert_int_equal(s.nlines, 6);
	assert_string_equal(s.lines[0].key, "TILE");
	assert_int_equal(s.lines[0].lineno, 2);
	ks_tune_source_value(&s, &s.lines[0], v, sizeof(v));
	assert_string_equal(v, "32");
	assert_string_equal(s.lines[1].key, "NAME");
	ks_tune_source_value(&s, &s.lines[1], v, sizeof(v));
	assert_string_equal(v, "\"a//b\"");
	assert_string_equal(s.lines[2].key, "UNROLL");
	ks_tune_source_value(&s, &s.lines[2], v, sizeof(v));
	assert_string_equal(v, "4");
	assert_string_equal(s.lines[3].key, "SHAPE");
	ks_tune_source_value(&s, &s.lines[3], v, sizeof(v));
	assert_string_equal(v, "Shape<64, 64>{}");
	assert_string_equal(s.lines[4].key, "T");
	ks_tune_source_value(&s, &s.lines[4], v, sizeof(v));
	assert_string_equal(v, "float");
	assert_string_equal(s.lines[5].key, "OTHER");
	assert_int_equal(s.lines[5].lineno, 8);
	ks_tune_source_free(&s);
}

static void test_source_variant(void **state)
{
	char k0[] = "TILE", k1[] = "UNROLL", k2[] = "T";
	char v0[] = "128", v1[] = "1", v2[] = "MatmulShape<64, 64, 64>";
	char *keys[] = { k0, k1, k2 };
	char *values[] = { v0, v1, v2 };
	struct ks_tune_space sp = { .nkeys = 3, .nconfigs = 1, .keys = keys,
				    .values = values };
	struct ks_tune_source s;
	struct ks_err e;
	char *out;
	size_t len;
	const char *want =
		"// tunable parameters follow\n"
		"#define TILE 128 // tunable\n"
		"#  define  NAME \"a//b\"   //tunable: a string\n"
		"static const int UNROLL = 1; // tunable\r\n"
		"constexpr auto SHAPE = Shape<64, 64>{};\t// tunable\n"
		"using T = MatmulShape<64, 64, 64>; // tunable\n"
		"int x = 1; // not tunable\n"
		"#define OTHER 7 // tunable\n"
		"int main(void) { return 0; }";

	(void)state;
	assert_int_equal(ks_tune_source_scan(SOURCE, sizeof(SOURCE) - 1, "k.c", &s, &e), 0);
	s.lines[0].key_index = 0;
	s.lines[2].key_index = 1;
	s.lines[4].key_index = 2;
	assert_int_equal(ks_tune_source_variant(&s, &sp, 0, &out, &len), 0);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(out, want, len);
	free(out);
	/* No key set: the copy is byte for byte the source. */
	for (size_t i = 0; i < s.nlines; i++)
		s.lines[i].key_index = -1;
	assert_int_equal(ks_tune_source_variant(&s, &sp, 0, &out, &len), 0);
	assert_int_equal(len, sizeof(SOURCE) - 1);
	assert_memory_equal(out, SOURCE, len);
	free(out);
	ks_tune_source_free(&s);
}

static void expect_source_error(const char *text, const char *needle)
{
	struct ks_tune_source s;
	struct ks_err e;

	ks_err_clear(&e);
	assert_int_equal(ks_tune_source_scan(text, strlen(text), "k.c", &s, &e), -EINVAL);
	if (!strstr(e.msg, needle))
		fail_msg("'%s': message '%s' lacks '%s'", text, e.msg, needle);
}

static void test_source_errors(void **state)
{
	(void)state;
	expect_source_error("int a;\n#define TILE(x) x // tunable\n", "k.c:2: ");
	expect_source_error("#define TILE(x) x // tunable\n", "function-like");
	expect_source_error("#define TILE // tunable\n", "no value");
	expect_source_error("#include <x.h> // tunable\n", "is not a tunable line");
	expect_source_error("int TILE = 3 // tunable\n", "does not end with ';'");
	expect_source_error("x == 3; // tunable\n", "no 'KEY = VALUE'");
	expect_source_error("x += 3; // tunable\n", "no 'KEY = VALUE'");
	expect_source_error("int TILE = ; // tunable\n", "no value");
	expect_source_error("int 3 = 4; // tunable\n", "no name");
	expect_source_error("f(); // tunable\n", "no 'KEY = VALUE'");
	/* Two names on one line: refused, naming the line (kscope would
	 * otherwise take "2, X = 3" as TILE's value and drop X). */
	expect_source_error("int a;\nint TILE = 2, X = 3; // tunable\n",
			    "k.c:2: 'int TILE = 2, X = 3;' declares more than one name");
	expect_source_error("int A, TILE = 2; // tunable\n", "more than one name");
	expect_source_error("int TILE = x < y, X = 3; // tunable\n", "more than one name");
	expect_source_error("int TILE = X = 3; // tunable\n", "more than one name");
}

/* `// tunable` that is not a trailing marker comment: ignored. */
static const char LEXED[] =
	"const char *s = \"// tunable\"; int x = 1;\n"       /* in a string */
	"puts(\"a // tunable \\\" // tunable\");\n"         /* escaped quote */
	"char c = '\"'; // tunable: a quote in a character\n"
	"/* int A = 1; // tunable\n"                           /* block comment */
	"   int B = 2; // tunable */\n"
	"int y = 1; // see // tunable\n"                       /* comment text */
	"// tunable\n"                                          /* comment only */
	"auto r = R\"x(// tunable\n"                             /* raw string */
	"int C = 3; // tunable)x\";\n"
	"int D = 1'000'000; // tunable\n"                      /* separators */
	"std::map<int, int> M = {}; // tunable\n"              /* one name */
	"constexpr auto S = Shape<64, 64>{}; // tunable\n"
	"const char *Q = \"a, b = c\"; // tunable\n";

static void test_source_lexing(void **state)
{
	struct ks_tune_source s;
	struct ks_err e;
	char v[64];

	(void)state;
	ks_err_clear(&e);
	if (ks_tune_source_scan(LEXED, sizeof(LEXED) - 1, "k.c", &s, &e) != 0)
		fail_msg("%s", e.msg);
	assert_int_equal(s.nlines, 5);
	assert_string_equal(s.lines[0].key, "c");
	assert_int_equal(s.lines[0].lineno, 3);
	ks_tune_source_value(&s, &s.lines[0], v, sizeof(v));
	assert_string_equal(v, "'\"'");
	assert_string_equal(s.lines[1].key, "D");
	assert_int_equal(s.lines[1].lineno, 10);
	ks_tune_source_value(&s, &s.lines[1], v, sizeof(v));
	assert_string_equal(v, "1'000'000");
	assert_string_equal(s.lines[2].key, "M");
	assert_string_equal(s.lines[3].key, "S");
	ks_tune_source_value(&s, &s.lines[3], v, sizeof(v));
	assert_string_equal(v, "Shape<64, 64>{}");
	assert_string_equal(s.lines[4].key, "Q");
	ks_tune_source_value(&s, &s.lines[4], v, sizeof(v));
	assert_string_equal(v, "\"a, b = c\"");
	ks_tune_source_free(&s);
}

/* ------------------------------------------------------------------ */
/* The space                                                           */
/* ------------------------------------------------------------------ */

static struct ks_tune_space *parse(const char *json)
{
	struct ks_tune_space *s = NULL;
	char err[512];

	if (ks_tune_space_parse(json, strlen(json), "s.json", &s, err, sizeof(err)) != 0)
		fail_msg("'%s': %s", json, err);
	return s;
}

static void test_space_list(void **state)
{
	struct ks_tune_space *s;
	char label[64];

	(void)state;
	s = parse("[{\"TILE\": 32, \"S\": \"Shape<1, 2>\"}, {\"S\": \"x\", \"TILE\": -4}]");
	assert_int_equal(s->nkeys, 2);
	assert_int_equal(s->nconfigs, 2);
	assert_string_equal(s->keys[0], "TILE");
	assert_string_equal(s->keys[1], "S");
	assert_string_equal(s->values[0], "32");
	assert_string_equal(s->values[1], "Shape<1, 2>");
	assert_string_equal(s->values[2], "-4");
	assert_string_equal(s->values[3], "x");
	assert_true(ks_tune_space_is_int(s, 0, 0));
	assert_false(ks_tune_space_is_int(s, 0, 1));
	ks_tune_space_label(s, 1, label, sizeof(label));
	assert_string_equal(label, "TILE=-4 S=x");
	ks_tune_space_free(s);
	/* A string of digits stays a string. */
	s = parse("[{\"A\": \"7\"}]");
	assert_false(ks_tune_space_is_int(s, 0, 0));
	ks_tune_space_free(s);
}

static void test_space_product(void **state)
{
	struct ks_tune_space *s;
	static const char *const want[][2] = { { "16", "1" }, { "16", "2" },
					       { "32", "1" }, { "32", "2" },
					       { "64", "1" }, { "64", "2" } };

	(void)state;
	/* Key order as written; the first key varies slowest. */
	s = parse("{\"TILE\": [16, 32, 64], \"UNROLL\": [1, 2]}");
	assert_int_equal(s->nconfigs, 6);
	assert_string_equal(s->keys[0], "TILE");
	assert_string_equal(s->keys[1], "UNROLL");
	for (size_t c = 0; c < 6; c++) {
		assert_string_equal(s->values[c * 2], want[c][0]);
		assert_string_equal(s->values[c * 2 + 1], want[c][1]);
	}
	ks_tune_space_free(s);
	s = parse("{\"Z\": [1], \"A\": [\"a\", \"b\"]}");
	assert_string_equal(s->keys[0], "Z");
	assert_string_equal(s->values[3], "b");
	ks_tune_space_free(s);
}

static void expect_space_error(const char *json, const char *needle)
{
	struct ks_tune_space *s = (struct ks_tune_space *)1;
	char err[1024] = "";

	assert_int_equal(ks_tune_space_parse(json, strlen(json), "s.json", &s, err,
					     sizeof(err)), -EINVAL);
	assert_null(s);
	if (!strstr(err, needle))
		fail_msg("'%s': message '%s' lacks '%s'", json, err, needle);
}

static void test_space_errors(void **state)
{
	(void)state;
	expect_space_error("TILE: 3", "invalid JSON at line 1");
	expect_space_error("[]", "empty list");
	expect_space_error("{}", "empty object");
	expect_space_error("3", "'[' or '{' expected");
	expect_space_error("[{}]", "empty object");
	expect_space_error("[3]", "not an object");
	expect_space_error("[{\"A\": 1}, {\"B\": 1}]", "configuration 1 has the keys B");
	expect_space_error("[{\"A\": 1}, {\"A\": 1, \"B\": 2}]", "the same keys");
	expect_space_error("{\"A\": []}", "empty list");
	expect_space_error("{\"A\": 3}", "not a list");
	expect_space_error("{\"A\": [1.5]}", "not an integer");
	expect_space_error("{\"A\": [true]}", "a boolean");
	expect_space_error("{\"A\": [null]}", "null");
	expect_space_error("{\"A\": [[1]]}", "a list");
	expect_space_error("{\"A\": [\"\"]}", "is empty");
	expect_space_error("{\"A\": [\"a\\nb\"]}", "line break");
	expect_space_error("{\"A\": [\"a\\u0001\"]}", "control character");
	expect_space_error("{\"A\": [\"a\\u0000b\"]}", "NUL");
	expect_space_error("{\"A\": [1], \"A\": [2]}", "duplicate");
	expect_space_error("{\"1A\": [1]}", "is not a name");
	expect_space_error("{\"A-B\": [1]}", "is not a name");
	{
		/* 100 x 100 x 11 > 100000 configurations; x 10 is the limit. */
		char a[512] = "", json[2048];
		size_t o = 0;

		for (int i = 0; i < 100; i++)
			o += (size_t)snprintf(a + o, sizeof(a) - o, "%s%d", i ? "," : "", i);
		snprintf(json, sizeof(json), "{\"A\": [%s], \"B\": [%s], \"C\": [%s]}", a, a,
			 "1,2,3,4,5,6,7,8,9,10,11");
		expect_space_error(json, "more than 100000 configurations");
		snprintf(json, sizeof(json), "{\"A\": [%s], \"B\": [%s], \"C\": [%s]}", a, a,
			 "1,2,3,4,5,6,7,8,9,10");
		ks_tune_space_free(parse(json));
	}
}

static void test_space_check(void **state)
{
	char a[] = "A", b[] = "B", one[] = "1", two[] = "2", x[] = "x";
	char *keys[] = { a, a };
	char *values[] = { one, two };
	unsigned char is_int[] = { 1, 0 };
	struct ks_tune_space s = { .nkeys = 2, .nconfigs = 1, .keys = keys, .values = values };
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_tune_space_check(&s, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "appears twice"));
	keys[1] = b;
	assert_int_equal(ks_tune_space_check(&s, &e), 0);
	values[0] = x;
	s.is_int = is_int;
	assert_int_equal(ks_tune_space_check(&s, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "marked as an integer"));
	s.nconfigs = 0;
	assert_int_equal(ks_tune_space_check(&s, &e), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

static void test_percentiles(void **state)
{
	double one[] = { 7 }, two[] = { 4, 2 }, five[] = { 50, 10, 40, 20, 30 };

	(void)state;
	assert_true(ks_tune_percentile(one, 1, 50) == 7);
	assert_true(ks_tune_percentile(one, 1, 20) == 7);
	assert_true(ks_tune_percentile(two, 2, 50) == 3);
	assert_true(ks_tune_percentile(two, 2, 20) == 2.4);
	assert_true(ks_tune_percentile(five, 5, 50) == 30);
	assert_true(ks_tune_percentile(five, 5, 20) == 18);
	assert_true(ks_tune_percentile(five, 5, 80) == 42);
	assert_true(ks_tune_percentile(five, 5, 0) == 10);
	assert_true(ks_tune_percentile(five, 5, 100) == 50);
	assert_true(ks_tune_percentile(five, 0, 50) < 0);
	/* The input is not reordered. */
	assert_true(five[0] == 50 && five[4] == 30);
}

/* ------------------------------------------------------------------ */
/* Output scanning                                                     */
/* ------------------------------------------------------------------ */

static void feed(struct ks_tune_proc *p, const char *s)
{
	ks_tune_proc_feed(p, true, s, strlen(s));
}

static void test_time_lines(void **state)
{
	struct ks_tune_proc p;

	(void)state;
	memset(&p, 0, sizeof(p));
	p.want_time = true;
	feed(&p, "hello\nKSCOPE_TIME_NS=12");
	assert_false(p.have_time);         /* the line is not complete */
	feed(&p, "34\r\nnoise KSCOPE_TIME_NS=1\nKSCOPE_TIME_NS=99 \n");
	assert_true(p.have_time);
	assert_int_equal(p.time_ns, 99);   /* the last one wins */
	assert_false(p.bad_time);
	feed(&p, "KSCOPE_TIME_NS=5ms\n");
	assert_true(p.bad_time);
	assert_string_equal(p.bad_line, "KSCOPE_TIME_NS=5ms");
	assert_int_equal(p.time_ns, 99);

	memset(&p, 0, sizeof(p));
	p.want_time = true;
	feed(&p, "KSCOPE_TIME_NS=\n");
	assert_true(p.bad_time);
	memset(&p, 0, sizeof(p));
	p.want_time = true;
	feed(&p, "KSCOPE_TIME_NS=99999999999999999999999\n");
	assert_true(p.bad_time);
	/* A long line that does not start with the prefix is ignored. */
	memset(&p, 0, sizeof(p));
	p.want_time = true;
	for (int i = 0; i < 100; i++)
		feed(&p, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	feed(&p, "\nKSCOPE_TIME_NS=0\n");
	assert_false(p.bad_time);
	assert_true(p.have_time);
	assert_int_equal(p.time_ns, 0);
}

static void test_tail(void **state)
{
	struct ks_tune_proc p;
	char buf[256];

	(void)state;
	memset(&p, 0, sizeof(p));
	ks_tune_proc_feed(&p, false, "a\n\nb\r\nc\n  \nd\n\n", 14);
	ks_tune_proc_tail(&p, 10, buf, sizeof(buf));
	assert_string_equal(buf, "a\nb\nc\nd");
	ks_tune_proc_tail(&p, 2, buf, sizeof(buf));
	assert_string_equal(buf, "c\nd");
	/* More than the tail keeps: the last bytes remain. */
	for (int i = 0; i < 1000; i++)
		ks_tune_proc_feed(&p, false, "0123456789\n", 11);
	ks_tune_proc_feed(&p, false, "last line\n", 10);
	ks_tune_proc_tail(&p, 2, buf, sizeof(buf));
	assert_string_equal(buf, "0123456789\nlast line");
	memset(&p, 0, sizeof(p));
	ks_tune_proc_tail(&p, 10, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

/* ------------------------------------------------------------------ */
/* Processes (the tests use sh to make a process do things; kscope      */
/* itself never runs a shell)                                          */
/* ------------------------------------------------------------------ */

static void run_wait(struct ks_tune_proc *p, char *const *argv, bool merge, double timeout)
{
	struct ks_err e;
	bool stopped = false;

	ks_err_clear(&e);
	assert_int_equal(ks_tune_proc_start(p, argv, merge, timeout, &e), 0);
	if (!p->done)
		ks_tune_proc_wait((struct ks_tune_proc *[]){ p }, 1, -1, &stopped);
	assert_false(stopped);
	assert_true(p->done);
}

static void test_proc_exit(void **state)
{
	struct ks_tune_proc p;
	char **argv = av("sh", "-c",
			 "echo out; echo KSCOPE_TIME_NS=42; echo err >&2; exit 3", NULL);
	char buf[256];

	(void)state;
	run_wait(&p, argv, false, 30);
	assert_false(ks_tune_proc_ok(&p));
	ks_tune_proc_describe(&p, argv[0], 30, buf, sizeof(buf));
	assert_string_equal(buf, "exit status 3");
	assert_true(p.have_time);
	assert_int_equal(p.time_ns, 42);
	ks_tune_proc_tail(&p, 10, buf, sizeof(buf));
	assert_string_equal(buf, "err");   /* stdout is not in the tail */

	/* merge: both streams in the tail, no time scanning */
	run_wait(&p, argv, true, 30);
	ks_tune_proc_tail(&p, 10, buf, sizeof(buf));
	assert_string_equal(buf, "out\nKSCOPE_TIME_NS=42\nerr");
	assert_false(p.have_time);

	{
		char **ok = av("true", NULL);

		run_wait(&p, ok, false, 30);
		assert_true(ks_tune_proc_ok(&p));
		assert_true(p.ended >= p.started);
		ks_tune_argv_free(ok);
	}
	{
		char **in = av("sh", "-c", "read x; echo \"[$x]\" >&2", NULL);

		/* stdin is /dev/null: read gets end of file at once. */
		run_wait(&p, in, false, 30);
		ks_tune_proc_tail(&p, 10, buf, sizeof(buf));
		assert_string_equal(buf, "[]");
		ks_tune_argv_free(in);
	}
	ks_tune_argv_free(argv);
}

static void test_proc_signal_and_missing(void **state)
{
	struct ks_tune_proc p;
	char **sig = av("sh", "-c", "kill -SEGV $$", NULL);
	char **missing = av("no-such-program-for-kscope", NULL);
	char buf[256];

	(void)state;
	run_wait(&p, sig, false, 30);
	assert_false(ks_tune_proc_ok(&p));
	ks_tune_proc_describe(&p, sig[0], 30, buf, sizeof(buf));
	assert_non_null(strstr(buf, "killed by signal 11"));

	run_wait(&p, missing, false, 30);
	assert_int_equal(p.exec_errno, ENOENT);
	assert_false(ks_tune_proc_ok(&p));
	ks_tune_proc_describe(&p, missing[0], 30, buf, sizeof(buf));
	assert_non_null(strstr(buf, "cannot run 'no-such-program-for-kscope'"));
	ks_tune_argv_free(sig);
	ks_tune_argv_free(missing);
}

/* Whether pid is gone or a zombie (nobody may reap it here). */
static bool gone(pid_t pid)
{
	char path[64], stat[256];
	FILE *f;
	char *rp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	rp = fgets(stat, sizeof(stat), f);
	fclose(f);
	rp = rp ? strrchr(stat, ')') : NULL;
	return !rp || rp[2] == 'Z' || rp[2] == 'X';
}

static void test_proc_timeout_and_group(void **state)
{
	struct ks_tune_proc p;
	/* The main process ends at once; its child sleeps in the group. */
	char **bg = av("sh", "-c", "sleep 60 & echo $! >&2", NULL);
	char **hang = av("sh", "-c", "sleep 60 & sleep 60", NULL);
	char buf[256];
	pid_t child;
	double t0;

	(void)state;
	run_wait(&p, bg, false, 30);
	assert_true(ks_tune_proc_ok(&p));
	ks_tune_proc_tail(&p, 1, buf, sizeof(buf));
	child = (pid_t)atoi(buf);
	assert_true(child > 0);
	for (int i = 0; i < 200 && !gone(child); i++)
		usleep(10000);
	assert_true(gone(child));

	t0 = ks_tune_now();
	run_wait(&p, hang, false, 0.3);
	assert_true(p.timed_out);
	assert_false(ks_tune_proc_ok(&p));
	assert_true(ks_tune_now() - t0 < 20);
	ks_tune_proc_describe(&p, hang[0], 0.3, buf, sizeof(buf));
	assert_string_equal(buf, "timed out after 0.3 s");
	ks_tune_argv_free(bg);
	ks_tune_argv_free(hang);
}

static void test_proc_stop_fd(void **state)
{
	struct ks_tune_proc p;
	char **hang = av("sleep", "60", NULL);
	struct ks_err e;
	bool stopped = false;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(ks_tune_proc_start(&p, hang, false, 60, &e), 0);
	assert_int_equal(write(fds[1], "x", 1), 1);
	ks_tune_proc_wait((struct ks_tune_proc *[]){ &p }, 1, fds[0], &stopped);
	assert_true(stopped);
	assert_false(p.done);
	ks_tune_proc_kill(&p);
	assert_true(p.done);
	assert_int_equal(p.pid, 0);
	close(fds[0]);
	close(fds[1]);
	ks_tune_argv_free(hang);
}

/* ------------------------------------------------------------------ */
/* Variant directories                                                 */
/* ------------------------------------------------------------------ */

static void test_files(void **state)
{
	char *dir = ks_test_tmpdir(), *root, path[PATH_MAX], outside[PATH_MAX];
	struct ks_err e;
	struct stat st;
	int rootfd;

	(void)state;
	snprintf(outside, sizeof(outside), "%s/keep", dir);
	assert_int_equal(mkdir(outside, 0700), 0);
	snprintf(path, sizeof(path), "%s/keep/file", dir);
	ks_test_write_file(path, "precious", 0600);

	assert_int_equal(ks_tune_files_root(dir, &root, &rootfd, &e), 0);
	assert_int_equal(strncmp(root, dir, strlen(dir)), 0);
	assert_non_null(strstr(root, "/variants-"));
	assert_int_equal(ks_tune_files_variant(rootfd, "c0", "k.c", "abc", 3, &e), 0);
	/* A second variant of the same name is refused, never overwritten. */
	assert_int_equal(ks_tune_files_variant(rootfd, "c0", "k.c", "x", 1, &e), -EEXIST);
	snprintf(path, sizeof(path), "%s/c0/k.c", root);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 3);
	/* What a build might leave: a subdirectory, a link to outside. */
	snprintf(path, sizeof(path), "%s/c0/obj", root);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/c0/obj/x.o", root);
	ks_test_write_file(path, "o", 0600);
	snprintf(path, sizeof(path), "%s/c0/link", root);
	assert_int_equal(symlink(outside, path), 0);
	snprintf(path, sizeof(path), "%s/c0/obj/link2", root);
	assert_int_equal(symlink(outside, path), 0);

	assert_int_equal(ks_tune_files_remove(rootfd, "c0", &e), 0);
	snprintf(path, sizeof(path), "%s/c0", root);
	assert_int_equal(lstat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/keep/file", dir);
	assert_int_equal(stat(path, &st), 0);   /* the links were not followed */
	/* Removing what is not there is not an error. */
	assert_int_equal(ks_tune_files_remove(rootfd, "c0", &e), 0);
	close(rootfd);
	assert_int_equal(rmdir(root), 0);
	free(root);
	ks_test_rmtree(dir);
	free(dir);
}

/* SHA-256 against FIPS 180-4's examples, in pieces of every size. */
static void test_sha256(void **state)
{
	(void)state;
	static const struct { const char *in, *hex; } v[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	struct ks_tune_sha256 h;
	char hex[65];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		for (size_t step = 1; step <= 64; step *= 4) {
			size_t len = strlen(v[i].in);

			ks_tune_sha256_init(&h);
			for (size_t o = 0; o < len; o += step)
				ks_tune_sha256_update(&h, v[i].in + o,
						      len - o < step ? len - o : step);
			ks_tune_sha256_hex(&h, hex);
			assert_string_equal(hex, v[i].hex);
		}
	}
	/* A million 'a's: many blocks. */
	{
		char a[1000];

		memset(a, 'a', sizeof(a));
		ks_tune_sha256_init(&h);
		for (int i = 0; i < 1000; i++)
			ks_tune_sha256_update(&h, a, sizeof(a));
		ks_tune_sha256_hex(&h, hex);
		assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	}
}

/* The cache's key changes with each input; an entry round-trips. */
static void test_cache(void **state)
{
	(void)state;
	char k1[] = "TILE", v1[] = "32", v2[] = "64";
	char *keys[] = { k1 }, *vals[] = { v1, v2 };
	struct ks_tune_space sp = { .nkeys = 1, .nconfigs = 2, .keys = keys, .values = vals };
	struct ks_tune_cache_inputs in = { .src = "int x;", .srclen = 6, .build = "cc {src}",
					   .run = "{exe}", .verify = NULL, .settings = "s" };
	char a[65], b[65], dir[] = "/tmp/ks-tune-cache-XXXXXX";
	struct ks_tune_cache_entry e, got;
	double samples[] = { 1000, 1200 };
	char msg[] = "after 1";
	struct ks_err err;

	ks_tune_cache_key(&in, &sp, 0, a);
	ks_tune_cache_key(&in, &sp, 1, b);
	assert_string_not_equal(a, b);
	in.srclen = 5;
	ks_tune_cache_key(&in, &sp, 0, b);
	assert_string_not_equal(a, b);
	in.srclen = 6;
	in.verify = "";
	ks_tune_cache_key(&in, &sp, 0, b);
	assert_string_not_equal(a, b);  /* no verify is not an empty one */
	in.verify = NULL;
	in.run = "{exe} 1";
	ks_tune_cache_key(&in, &sp, 0, b);
	assert_string_not_equal(a, b);
	in.run = "{exe}";
	ks_tune_cache_key(&in, &sp, 0, b);
	assert_string_equal(a, b);

	assert_non_null(mkdtemp(dir));
	ks_err_clear(&err);
	assert_int_equal(ks_tune_cache_load(dir, a, &got, &err), -ENOENT);
	e = (struct ks_tune_cache_entry){ .stopped = true, .runs = 2, .samples = samples,
					  .program_timed = 1, .message = msg };
	assert_int_equal(ks_tune_cache_store(dir, a, &e, &err), 0);
	assert_int_equal(ks_tune_cache_load(dir, a, &got, &err), 0);
	assert_true(got.stopped);
	assert_int_equal(got.runs, 2);
	assert_true(got.samples[0] == 1000 && got.samples[1] == 1200);
	assert_int_equal(got.program_timed, 1);
	assert_string_equal(got.message, "after 1");
	ks_tune_cache_entry_free(&got);
	/* Another key's name: refused. */
	{
		const char *other = "{\"kscope_tune_cache\":1,\"key\":\"x\",\"status\":"
				    "\"ok\",\"samples_ns\":[1],\"program_timed\":0,"
				    "\"message\":\"\"}";

		assert_int_equal(ks_tune_cache_parse(other, strlen(other), "x", &got, &err), 0);
		ks_tune_cache_entry_free(&got);
		assert_int_equal(ks_tune_cache_parse(other, strlen(other), a, &got, &err),
				 -EINVAL);
	}
	assert_int_equal(ks_tune_cache_check_dir(dir, &err), 0);
	{
		char path[128], cmd[160];

		snprintf(path, sizeof(path), "%s/%s.json", dir, a);
		assert_int_equal(ks_tune_cache_check_dir(path, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "is not a directory"));
		snprintf(path, sizeof(path), "%s/new", dir);
		assert_int_equal(ks_tune_cache_check_dir(path, &err), 0);
		snprintf(path, sizeof(path), "%s/no/new", dir);
		assert_int_equal(ks_tune_cache_check_dir(path, &err), -EINVAL);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

static void test_spearman(void **state)
{
	(void)state;
	double x[] = { 1, 2, 3, 4, 5 }, up[] = { 10, 20, 30, 40, 50 };
	double down[] = { 5, 4, 3, 2, 1 }, ties[] = { 1, 1, 2, 2, 3 }, flat[] = { 7, 7, 7, 7, 7 };
	double rho = 0;

	assert_true(ks_tune_spearman(x, up, 5, &rho));
	assert_true(rho > 0.9999 && rho < 1.0001);
	assert_true(ks_tune_spearman(x, down, 5, &rho));
	assert_true(rho < -0.9999);
	assert_true(ks_tune_spearman(x, ties, 5, &rho));
	assert_true(rho > 0.94 && rho < 0.95); /* 0.9487: average ranks */
	assert_false(ks_tune_spearman(x, flat, 5, &rho));
	assert_false(ks_tune_spearman(x, up, 2, &rho));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmd_words),
		cmocka_unit_test(test_cmd_placeholders_seen),
		cmocka_unit_test(test_cmd_errors),
		cmocka_unit_test(test_source_lines),
		cmocka_unit_test(test_source_variant),
		cmocka_unit_test(test_source_errors),
		cmocka_unit_test(test_source_lexing),
		cmocka_unit_test(test_space_list),
		cmocka_unit_test(test_space_product),
		cmocka_unit_test(test_space_errors),
		cmocka_unit_test(test_space_check),
		cmocka_unit_test(test_percentiles),
		cmocka_unit_test(test_time_lines),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_proc_exit),
		cmocka_unit_test(test_proc_signal_and_missing),
		cmocka_unit_test(test_proc_timeout_and_group),
		cmocka_unit_test(test_proc_stop_fd),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_spearman),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
