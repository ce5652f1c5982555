/*
 * Unit tests of the memory-tool reports (src/memtools/report): the
 * hand-written fixtures under data/ (one per analysis, written to
 * docs/formats.md) go through ks_mtr_write, and the tests assert on the
 * text report's lines, report.json's fields and findings.sarif (with
 * check_sarif.py; it and check_xml.py, which the end-to-end tests run on
 * Memcheck's own XML, are shown to reject broken files), the filter,
 * truncated runs, malformed lines reported with their line number, the
 * kscope command line's bytes, and the time 100k error records take.
 * No tool writes memcheck's records into findings.jsonl (kscope memcheck
 * reads Memcheck's XML into the same model, src/memtools/mcxml); the
 * memcheck fixtures are how these tests feed that model to the writers.
 */
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "mtreport.h"
#include "test_util.h"

#ifndef KS_MTR_TEST_DIR
#error "KS_MTR_TEST_DIR must name tests/memtools/report"
#endif

#define DATA KS_MTR_TEST_DIR "/data/"

/* What 100k error records may take (reading them and writing ~400 MB of
 * reports): a few seconds in an optimized build; unoptimized and
 * sanitized builds are several times slower.  A quadratic step would take
 * minutes either way. */
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
#ifdef __has_feature
#if __has_feature(address_sanitizer)
#define LARGE_SECONDS 60.0
#endif
#endif
#ifndef LARGE_SECONDS
#define LARGE_SECONDS 10.0
#endif
#else
#define LARGE_SECONDS 60.0
#endif

/* ------------------------------------------------------------------ */
/* Helpers                                                             */
/* ------------------------------------------------------------------ */

struct run {
	char *tmp;               /* owned temporary directory */
	struct ks_rundir rd;
	struct ks_mtr_summary sum;
	struct ks_err err;
	char *text;              /* what went to the FILE* */
	int rc;
};

static const struct ks_mtr_opts default_opts = {
	.filter = true, .max_stack = 12,
	.command = "kscope memcheck --xml -- ./oob 3",
};

static void run_file(struct run *r, const char *path, const struct ks_mtr_opts *o)
{
	size_t len = 0;
	FILE *text;

	memset(r, 0, sizeof(*r));
	r->tmp = ks_test_tmpdir();
	assert_int_equal(ks_rundir_create(r->tmp, "memcheck", 0, &r->rd, &r->err), 0);
	text = open_memstream(&r->text, &len);
	assert_non_null(text);
	r->rc = ks_mtr_write(path, &r->rd, o, text, &r->sum, &r->err);
	fclose(text);
}

static void run_fixture(struct run *r, const char *name, const struct ks_mtr_opts *o)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), DATA "%s", name);
	run_file(r, path, o);
	if (r->rc)
		print_error("ks_mtr_write(%s): %d %s\n", name, r->rc, r->err.msg);
	assert_int_equal(r->rc, 0);
}

static void run_done(struct run *r)
{
	ks_rundir_close(&r->rd);
	ks_test_rmtree(r->tmp);
	free(r->tmp);
	free(r->text);
}

static char *out_path(const struct run *r, const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", r->rd.path, name);
	return path;
}

static char *read_out(const struct run *r, const char *name)
{
	size_t size;
	unsigned char *s = ks_test_read_file(out_path(r, name), &size);

	if (!s)
		print_error("%s was not written\n", name);
	assert_non_null(s);
	s[size] = '\0'; /* ks_test_read_file leaves room for it */
	assert_int_equal(strlen((char *)s), size); /* no NUL inside */
	return (char *)s;
}

static bool out_exists(const struct run *r, const char *name)
{
	return access(out_path(r, name), F_OK) == 0;
}

#define assert_contains(hay, needle) assert_contains_at(hay, needle, __FILE__, __LINE__)
#define assert_lacks(hay, needle) assert_lacks_at(hay, needle, __FILE__, __LINE__)

static void assert_contains_at(const char *hay, const char *needle, const char *file, int line)
{
	if (!strstr(hay, needle)) {
		print_error("%s:%d: missing:\n%s\n--- in:\n%s\n", file, line, needle, hay);
		fail();
	}
}

static void assert_lacks_at(const char *hay, const char *needle, const char *file, int line)
{
	if (strstr(hay, needle)) {
		print_error("%s:%d: unexpected:\n%s\n", file, line, needle);
		fail();
	}
}

/* needle a comes before needle b in hay. */
static void assert_order(const char *hay, const char *a, const char *b)
{
	const char *pa = strstr(hay, a), *pb = strstr(hay, b);

	assert_non_null(pa);
	assert_non_null(pb);
	assert_true(pa < pb);
}

/* Walks "a.b.0.c" through objects and arrays; NULL if absent. */
static json_t *jpath(json_t *j, const char *path)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); j && tok; tok = strtok_r(NULL, ".", &save)) {
		if (json_is_array(j))
			j = json_array_get(j, strtoul(tok, NULL, 10));
		else
			j = json_object_get(j, tok);
	}
	if (!j)
		print_error("no %s in the JSON\n", path);
	return j;
}

static long long jint(json_t *root, const char *path)
{
	json_t *j = jpath(root, path);

	assert_true(json_is_integer(j));
	return json_integer_value(j);
}

static const char *jstr(json_t *root, const char *path)
{
	json_t *j = jpath(root, path);

	assert_true(json_is_string(j));
	return json_string_value(j);
}

static json_t *load_json(const struct run *r, const char *name)
{
	json_error_t e;
	json_t *j = json_load_file(out_path(r, name), JSON_REJECT_DUPLICATES, &e);

	if (!j)
		print_error("%s: %s (line %d)\n", name, e.text, e.line);
	assert_non_null(j);
	return j;
}

static bool have_python(void)
{
	return system("python3 -c 'import xml.etree.ElementTree, json' >/dev/null 2>&1") == 0;
}

/* Runs a checker script on a file with extra arguments; its exit status. */
static int run_checker(const char *script, const char *file, const char *args)
{
	char cmd[PATH_MAX * 2 + 1024];
	int st;

	snprintf(cmd, sizeof(cmd), "python3 '%s/%s' '%s' %s >/dev/null", KS_MTR_TEST_DIR,
		 script, file, args);
	st = system(cmd);
	return st == -1 ? -1 : WEXITSTATUS(st);
}

/* ------------------------------------------------------------------ */
/* memcheck                                                            */
/* ------------------------------------------------------------------ */

static void test_memcheck_text(void **state)
{
	struct run r;
	char *txt;

	(void)state;
	run_fixture(&r, "memcheck.jsonl", &default_opts);
	txt = read_out(&r, "report.txt");
	assert_string_equal(txt, r.text); /* the same text to the FILE* */

	assert_contains(txt, "kscope memcheck report\nCommand: ./oob 3\n");
	assert_contains(txt, "Process 4242 exited with code 1\n");
	assert_contains(txt,
		"Invalid read of size 4\n"
		"   at 0x401156: main (oob.c:12)\n"
		"   by 0x48a1d90: __libc_start_call_main (in /usr/lib/x86_64-linux-gnu/libc.so.6)\n"
		" Address 0x4a5b0ac is 4 bytes after a block of size 40 alloc'd\n"
		"   at 0x4845828: malloc (in /usr/libexec/kscope/vgpreload_kscope.so)\n"
		"   by 0x401136: main (oob.c:10)\n\n");
	assert_contains(txt,
		"Invalid write of size 8 (3 times)\n"
		"   at 0x401170: main (oob.c:14)\n"
		" Address 0x4a5b07c is 4 bytes before a block of size 40 alloc'd\n");
	/* use-after-free: the free stack, then where it was allocated. */
	assert_contains(txt,
		"Thread 2:\n"
		"Invalid write of size 4\n"
		"   at 0x4011a4: worker (oob.c:17)\n"
		" Address 0x4a5c044 is 4 bytes inside a block of size 40 free'd\n"
		"   at 0x4848f3c: free (in /usr/libexec/kscope/vgpreload_kscope.so)\n"
		"   by 0x401190: main (oob.c:16)\n"
		" Block was alloc'd at\n"
		"   at 0x4845828: malloc (in /usr/libexec/kscope/vgpreload_kscope.so)\n"
		"   by 0x401136: main (oob.c:10)\n");
	assert_contains(txt, "Conditional jump or move depends on uninitialised value(s) (2 times)\n"
			     "   at 0x4011c0: check (uninit.c:7)\n"
			     "   by 0x401200: main (uninit.c:20)\n");
	assert_contains(txt, "Thread 1:\nUse of uninitialised value of size 8 as a memory address\n");
	assert_contains(txt, "Syscall param write(buf) points to uninitialised byte(s)\n"
			     "   at 0x4956350: write (in /usr/lib/x86_64-linux-gnu/libc.so.6)\n"
			     "   by 0x401230: main (uninit.c:25)\n"
			     " Address 0x4a5d000 is 0 bytes inside a block of size 10 alloc'd\n");
	assert_contains(txt, "Invalid free() / delete / delete[] / realloc() (double free)\n"
			     "   at 0x4848f3c: free (in /usr/libexec/kscope/vgpreload_kscope.so)\n"
			     "   by 0x401250: main (oob.c:18)\n"
			     " Address 0x4a5c040 is 0 bytes inside a block of size 40 free'd\n");
	assert_contains(txt, "Invalid free() / delete / delete[] / realloc()\n"
			     "   at 0x4848f3c: free (in /usr/libexec/kscope/vgpreload_kscope.so)\n"
			     "   by 0x401270: operator<<(a&, b) (stream.cc:31)\n"
			     " Address 0x7ffd1234 is not inside a known heap block\n");
	/* A control character in a name is shown, not sent to the terminal. */
	assert_contains(txt, "   at 0x4012b0: bad\\x1bname (oob.c:33)\n");
	assert_null(strchr(txt, '\033'));
	/* The filter dropped the context without lines in its top frames. */
	assert_lacks(txt, "memcpy");
	assert_lacks(txt, "future-record");
	assert_contains(txt, "HEAP SUMMARY:\n    in use at exit: 185 bytes in 4 blocks\n"
			     "  total heap usage: 5 allocs, 4 frees, 300 bytes allocated\n");
	assert_contains(txt, "17 bytes in 1 blocks are definitely lost in loss record 1 of 3\n"
			     "   at 0x4845828: malloc (in /usr/libexec/kscope/vgpreload_kscope.so)\n"
			     "   by 0x4012f0: make_node (list.c:5)\n"
			     "   by 0x401310: main (list.c:50)\n");
	assert_contains(txt, "128 bytes in 2 blocks are possibly lost in loss record 3 of 3\n");
	assert_order(txt, "loss record 1 of 3", "loss record 2 of 3");
	assert_order(txt, "loss record 3 of 3", "LEAK SUMMARY");
	assert_contains(txt, "LEAK SUMMARY:\n   definitely lost: 57 bytes in 2 blocks\n"
			     "     possibly lost: 128 bytes in 2 blocks\n");
	assert_contains(txt, "Not reported: 7 errors (uses of undefined bytes inside the C "
			     "library's assembly string routines)\n"
			     "ERROR SUMMARY: 15 errors from 12 contexts (filtered: 1 context "
			     "without a line number in the top three frames)\n");
	assert_lacks(txt, "ended early");

	assert_string_equal(r.sum.analysis, "memcheck");
	assert_int_equal(r.sum.errors, 12);
	assert_int_equal(r.sum.filtered, 1);
	assert_int_equal(r.sum.false_lines, 0);
	assert_false(r.sum.truncated);
	free(txt);
	run_done(&r);
}

static void test_memcheck_no_filter_short_stacks(void **state)
{
	struct ks_mtr_opts o = default_opts;
	struct run r;
	char *txt;

	(void)state;
	o.filter = false;
	o.max_stack = 1;
	run_fixture(&r, "memcheck.jsonl", &o);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "Invalid read of size 1\n"
			     "   at 0x4a00000: memcpy (in /usr/lib/x86_64-linux-gnu/libc.so.6)\n"
			     " Address 0x4a5e010 is not inside a known heap block\n");
	/* One frame per stack. */
	assert_contains(txt, "   at 0x401156: main (oob.c:12)\n Address");
	assert_lacks(txt, "__libc_start_call_main");
	assert_contains(txt, "ERROR SUMMARY: 16 errors from 13 contexts\n");
	assert_lacks(txt, "filtered");
	assert_int_equal(r.sum.errors, 13);
	assert_int_equal(r.sum.filtered, 0);
	free(txt);
	run_done(&r);
}

static void test_memcheck_json(void **state)
{
	struct run r, again;
	json_t *j;
	char *a, *b;

	(void)state;
	run_fixture(&r, "memcheck.jsonl", &default_opts);
	j = load_json(&r, "report.json");
	assert_string_equal(jstr(j, "analysis"), "memcheck");
	assert_string_equal(jstr(j, "command"), "kscope memcheck --xml -- ./oob 3");
	assert_string_equal(jstr(j, "program.exe"), "/home/u/oob");
	assert_string_equal(jstr(j, "program.argv.1"), "3");
	assert_int_equal(jint(j, "program.pid"), 4242);
	assert_string_equal(jstr(j, "exit.how"), "exit");
	assert_int_equal(jint(j, "exit.code"), 1);
	assert_true(json_is_false(jpath(j, "truncated")));
	assert_int_equal(jint(j, "summary.contexts"), 12);
	assert_int_equal(jint(j, "summary.occurrences"), 15);
	assert_int_equal(jint(j, "summary.filtered"), 1);
	assert_int_equal(jint(j, "summary.suppressed"), 7);
	assert_int_equal(jint(j, "summary.definitely_lost.bytes"), 57);
	assert_int_equal(json_array_size(jpath(j, "errors")), 9);
	assert_string_equal(jstr(j, "errors.0.kind"), "invalid-read");
	assert_string_equal(jstr(j, "errors.0.what"), "Invalid read of size 4");
	assert_string_equal(jstr(j, "errors.0.addr"), "0x4a5b0ac");
	assert_string_equal(jstr(j, "errors.0.stack.0.fn"), "main");
	assert_string_equal(jstr(j, "errors.0.stack.0.file"), "oob.c");
	assert_string_equal(jstr(j, "errors.0.stack.0.dir"), "/home/u");
	assert_int_equal(jint(j, "errors.0.stack.0.line"), 12);
	assert_null(json_object_get(jpath(j, "errors.0.stack.1"), "line"));
	assert_int_equal(jint(j, "errors.0.block.offset"), 44);
	assert_string_equal(jstr(j, "errors.0.block.alloc_stack.1.file"), "oob.c");
	assert_int_equal(jint(j, "errors.1.block.offset"), -4);
	assert_int_equal(jint(j, "errors.1.count"), 3);
	assert_string_equal(jstr(j, "errors.2.kind"), "use-after-free");
	assert_string_equal(jstr(j, "errors.2.access"), "write");
	assert_string_equal(jstr(j, "errors.2.xml_kind"), "InvalidWrite");
	assert_string_equal(jstr(j, "errors.2.block.state"), "freed");
	assert_string_equal(jstr(j, "errors.2.block.free_stack.0.fn"), "free");
	assert_string_equal(jstr(j, "errors.5.syscall"), "write");
	assert_string_equal(jstr(j, "errors.5.param"), "buf");
	assert_string_equal(jstr(j, "errors.7.stack.1.fn"), "operator<<(a&, b)");
	assert_string_equal(jstr(j, "errors.8.stack.0.fn"), "bad\033name");
	assert_int_equal(json_array_size(jpath(j, "leaks")), 3);
	assert_int_equal(jint(j, "leaks.0.bytes"), 17);
	assert_string_equal(jstr(j, "leaks.2.kind"), "leak-possible");
	assert_int_equal(jint(j, "heap.allocs"), 5);
	json_decref(j);

	/* Same findings, same bytes; a frame is one line. */
	run_fixture(&again, "memcheck.jsonl", &default_opts);
	a = read_out(&r, "report.json");
	b = read_out(&again, "report.json");
	assert_string_equal(a, b);
	assert_contains(a, "\n  \"errors\": [\n    {\n      \"kind\": \"invalid-read\",\n");
	assert_contains(a, "\n      \"stack\": [\n        {\"ip\": \"0x401156\", \"fn\": \"main\", "
			   "\"obj\": \"/home/u/oob\", \"dir\": \"/home/u\", \"file\": \"oob.c\", "
			   "\"line\": 12},\n");
	free(a);
	free(b);
	run_done(&again);
	run_done(&r);
}

static void test_memcheck_sarif(void **state)
{
	struct run r;
	json_t *j;

	(void)state;
	run_fixture(&r, "memcheck.jsonl", &default_opts);
	j = load_json(&r, "findings.sarif");
	assert_string_equal(jstr(j, "version"), "2.1.0");
	assert_string_equal(jstr(j, "$schema"), "https://json.schemastore.org/sarif-2.1.0.json");
	assert_string_equal(jstr(j, "runs.0.tool.driver.name"), "kscope");
	assert_string_equal(jstr(j, "runs.0.tool.driver.rules.0.id"), "invalid-read");
	assert_non_null(jpath(j, "runs.0.tool.driver.rules.0.shortDescription.text"));
	assert_int_equal(json_array_size(jpath(j, "runs.0.results")), 12);
	assert_string_equal(jstr(j, "runs.0.results.0.ruleId"), "invalid-read");
	assert_string_equal(jstr(j, "runs.0.results.0.level"), "error");
	assert_string_equal(jstr(j, "runs.0.results.0.locations.0.physicalLocation."
				    "artifactLocation.uri"), "file:///home/u/oob.c");
	assert_int_equal(jint(j, "runs.0.results.0.locations.0.physicalLocation.region."
				 "startLine"), 12);
	assert_contains(jstr(j, "runs.0.results.0.message.text"),
			"Invalid read of size 4. Address 0x4a5b0ac is 4 bytes after a block "
			"of size 40 alloc'd at main (oob.c:10)");
	/* The full stacks: where, then free and allocation. */
	assert_int_equal(json_array_size(jpath(j, "runs.0.results.2.stacks")), 3);
	assert_int_equal(jint(j, "runs.0.results.2.stacks.1.frames.1.location.physicalLocation."
				 "region.startLine"), 16);
	assert_int_equal(jint(j, "runs.0.results.1.occurrenceCount"), 3);
	/* An invalid free's location skips free() (no line) for the caller. */
	assert_string_equal(jstr(j, "runs.0.results.7.locations.0.physicalLocation."
				    "artifactLocation.uri"), "file:///home/u/src%20dir/stream.cc");
	assert_string_equal(jstr(j, "runs.0.results.9.ruleId"), "leak-definite");
	assert_int_equal(jint(j, "runs.0.results.9.locations.0.physicalLocation.region."
				 "startLine"), 5);
	json_decref(j);
	if (!have_python()) {
		run_done(&r);
		skip();
	}
	assert_int_equal(run_checker("check_sarif.py", out_path(&r, "findings.sarif"),
				     "--expect-results 12 --expect-level error "
				     "--expect-rule invalid-read:oob.c:12 "
				     "--expect-rule use-after-free:oob.c:17 "
				     "--expect-rule double-free:oob.c:18 "
				     "--expect-rule invalid-free:stream.cc:31 "
				     "--expect-rule-count leak-definite:2 "
				     "--expect-rule leak-possible:list.c:5"), 0);
	assert_int_equal(run_checker("check_sarif.py", out_path(&r, "findings.sarif"),
				     "--expect-rule uninit-cond:uninit.c:8 2>/dev/null"), 1);
	run_done(&r);
}

/* The checkers reject files that break the rules they check. */
static void test_checkers_reject(void **state)
{
	static const char *const bad_sarif[] = {
		/* wrong version */
		"{\"version\":\"2.0.0\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"k\"}},"
		"\"results\":[]}]}",
		/* no driver name */
		"{\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":{}},\"results\":[]}]}",
		/* ruleId naming no rule */
		"{\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"k\",\"rules\":"
		"[{\"id\":\"a\"}]}},\"results\":[{\"ruleId\":\"b\",\"message\":{\"text\":\"m\"}}]}]}",
		/* startLine 0 */
		"{\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"k\",\"rules\":"
		"[{\"id\":\"a\"}]}},\"results\":[{\"ruleId\":\"a\",\"message\":{\"text\":\"m\"},"
		"\"locations\":[{\"physicalLocation\":{\"artifactLocation\":{\"uri\":\"a.c\"},"
		"\"region\":{\"startLine\":0}}}]}]}]}",
		/* no message text */
		"{\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"k\",\"rules\":"
		"[{\"id\":\"a\"}]}},\"results\":[{\"ruleId\":\"a\",\"message\":{}}]}]}",
		/* a level outside the enumeration */
		"{\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"k\",\"rules\":"
		"[{\"id\":\"a\"}]}},\"results\":[{\"ruleId\":\"a\",\"level\":\"fatal\","
		"\"message\":{\"text\":\"m\"}}]}]}",
		/* a uri with a space */
		"{\"version\":\"2.1.0\",\"runs\":[{\"tool\":{\"driver\":{\"name\":\"k\",\"rules\":"
		"[{\"id\":\"a\"}]}},\"results\":[{\"ruleId\":\"a\",\"message\":{\"text\":\"m\"},"
		"\"locations\":[{\"physicalLocation\":{\"artifactLocation\":{\"uri\":\"a b.c\"}}}]}]}]}",
	};
	static const char xml_head[] =
		"<?xml version=\"1.0\"?>\n<valgrindoutput>\n<protocolversion>%s</protocolversion>\n"
		"<protocoltool>memcheck</protocoltool>\n<preamble></preamble>\n<pid>1</pid>\n"
		"<ppid>0</ppid>\n<tool>memcheck</tool>\n<args><vargv><exe>k</exe></vargv>"
		"<argv><exe>p</exe></argv></args>\n<status><state>RUNNING</state></status>\n"
		"<error><unique>0x0</unique><tid>1</tid><kind>%s</kind><what>w</what>%s</error>\n"
		"<status><state>FINISHED</state></status>\n<errorcounts><pair><count>1</count>"
		"<unique>%s</unique></pair></errorcounts>\n<suppcounts></suppcounts>\n"
		"</valgrindoutput>\n";
	static const char *const xml_cases[][4] = {
		/* protocolversion, kind, stack, errorcounts unique */
		{ "4", "InvalidRead", "<stack><frame><ip>0x1</ip></frame></stack>", "0x0" }, /* good */
		{ "3", "InvalidRead", "<stack><frame><ip>0x1</ip></frame></stack>", "0x0" },
		{ "4", "Invalid", "<stack><frame><ip>0x1</ip></frame></stack>", "0x0" },
		{ "4", "InvalidRead", "", "0x0" },
		{ "4", "InvalidRead", "<stack><frame><fn>f</fn><ip>0x1</ip></frame></stack>", "0x0" },
		{ "4", "InvalidRead", "<stack><frame><ip>0x1</ip></frame></stack>", "0x7" },
	};
	char *dir, path[PATH_MAX], buf[2048];

	(void)state;
	if (!have_python())
		skip();
	dir = ks_test_tmpdir();
	snprintf(path, sizeof(path), "%s/x.sarif", dir);
	for (size_t i = 0; i < sizeof(bad_sarif) / sizeof(bad_sarif[0]); i++) {
		ks_test_write_file(path, bad_sarif[i], 0600);
		if (run_checker("check_sarif.py", path, "2>/dev/null") != 1) {
			print_error("check_sarif.py accepted case %zu\n", i);
			fail();
		}
	}
	snprintf(path, sizeof(path), "%s/x.xml", dir);
	for (size_t i = 0; i < sizeof(xml_cases) / sizeof(xml_cases[0]); i++) {
		snprintf(buf, sizeof(buf), xml_head, xml_cases[i][0], xml_cases[i][1],
			 xml_cases[i][2], xml_cases[i][3]);
		ks_test_write_file(path, buf, 0600);
		if (run_checker("check_xml.py", path, "2>/dev/null") != (i == 0 ? 0 : 1)) {
			print_error("check_xml.py case %zu\n", i);
			fail();
		}
	}
	ks_test_write_file(path, "<valgrindoutput><protocolversion>", 0600);
	assert_int_equal(run_checker("check_xml.py", path, "2>/dev/null"), 1);
	ks_test_rmtree(dir);
	free(dir);
}

/* ------------------------------------------------------------------ */
/* contention and falseshare                                           */
/* ------------------------------------------------------------------ */

static void test_contention(void **state)
{
	struct run r;
	json_t *j;
	char *txt;

	(void)state;
	run_fixture(&r, "contention.jsonl", &default_opts);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "kscope contention report\nCommand: ./counter 4\n");
	assert_contains(txt, "Contention: 12.35% of memory accesses (123456 contention accesses "
			     "/ 1000000 memory accesses)\n");
	assert_contains(txt, "Accesses: 1000000 (499600 reads, 500400 writes); cold misses 24, "
			     "misses 81050, invalidations 79020\n");
	assert_contains(txt, "         2       499000       249000       250000            8"
			     "        40000         39000\n");
	assert_contains(txt, "         81000        41000         40000       500000  "
			     "0x401210: worker (counter.c:22)\n");
	assert_order(txt, "worker (counter.c:22)", "worker (counter.c:21)");
	assert_order(txt, "worker (counter.c:21)", "reduce (in /home/u/counter)");
	assert_contains(txt, "        160000        81000         79000           10  "
			     "counts (global, 64 bytes)\n");
	assert_contains(txt, "heap block of 256 bytes allocated at make_counters (counter.c:8)\n");
	assert_order(txt, "counts (global", "heap block of 256");
	/* The lines, by misses + invalidations, with their variables. */
	assert_contains(txt, "Top cache lines by misses + invalidations:\n"
			     "    misses+inv       misses invalidations  line                "
			     "variables\n"
			     "        160000        81000         79000  0x404040            "
			     "counts (global, 64 bytes)\n"
			     "            70           50            20  0x4a5b040           heap block "
			     "of 256 bytes allocated at make_counters (counter.c:8)\n"
			     "             3            3             0  0x405000            "
			     "(no known variable)\n");
	assert_string_equal(r.sum.analysis, "contention");
	assert_int_equal(r.sum.errors, 0);
	free(txt);

	j = load_json(&r, "report.json");
	assert_string_equal(jstr(j, "analysis"), "contention");
	assert_int_equal(jint(j, "summary.contention_accesses"), 123456);
	assert_true(json_is_real(jpath(j, "summary.contention_percent")));
	assert_true(json_real_value(jpath(j, "summary.contention_percent")) > 12.345);
	assert_true(json_real_value(jpath(j, "summary.contention_percent")) < 12.346);
	assert_int_equal(json_array_size(jpath(j, "threads")), 3);
	assert_int_equal(jint(j, "sites.0.location.line"), 22);
	assert_int_equal(jint(j, "sites.0.score"), 81000);
	assert_string_equal(jstr(j, "objects.0.variable.name"), "counts");
	assert_string_equal(jstr(j, "objects.1.variable.kind"), "heap");
	assert_string_equal(jstr(j, "objects.1.variable.alloc_stack.1.fn"), "make_counters");
	assert_int_equal(json_array_size(jpath(j, "lines")), 3);
	assert_string_equal(jstr(j, "lines.0.addr"), "0x404040");
	assert_int_equal(jint(j, "lines.0.misses"), 81000);
	assert_int_equal(jint(j, "lines.0.invalidations"), 79000);
	assert_string_equal(jstr(j, "lines.0.variables.0.name"), "counts");
	assert_int_equal(jint(j, "lines.1.score"), 70);
	assert_int_equal(json_array_size(jpath(j, "lines.2.variables")), 0);
	json_decref(j);

	j = load_json(&r, "findings.sarif");
	assert_int_equal(json_array_size(jpath(j, "runs.0.results")), 3);
	assert_string_equal(jstr(j, "runs.0.results.0.ruleId"), "contention-site");
	assert_string_equal(jstr(j, "runs.0.results.0.level"), "note");
	/* The site without a line has no location. */
	assert_null(json_object_get(jpath(j, "runs.0.results.2"), "locations"));
	json_decref(j);
	if (have_python())
		assert_int_equal(run_checker("check_sarif.py", out_path(&r, "findings.sarif"),
					     "--expect-results 3 --expect-level note "
					     "--expect-rule contention-site:counter.c:22"), 0);
	run_done(&r);
}

static void test_falseshare(void **state)
{
	struct run r;
	json_t *j;
	char *txt;

	(void)state;
	run_fixture(&r, "falseshare.jsonl", &default_opts);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "Process 999 was killed by signal 11 (SIGSEGV)\n");
	assert_contains(txt, "False sharing: 4 lines (3 false, 1 mixed) in 3 objects; 1 line "
			     "with true sharing\n");
	assert_contains(txt, "Stack accesses: 400 (counted, not simulated)\n"
			     "Quiet lines: 12 shared lines left out (not two threads with 100 "
			     "accesses or more)\n");
	/* Per thread, then the two global views. */
	assert_contains(txt, "  thread 1:\n           count        reads       writes  "
			     "variable @ context\n"
			     "            1000          500          500  counters (global, 64 "
			     "bytes) @ 0x401150: worker (fs.c:20)\n"
			     "             150          100           50  heap block of 128 bytes "
			     "allocated at make (fs.c:10) @ 0x401170: reader (fs.c:30)\n");
	assert_contains(txt, "  thread 3:\n");
	assert_contains(txt, "global-all-threads-info (variable, context), by count:\n"
			     "           count        reads       writes  variable @ context\n"
			     "            1000          500          500  counters (global, 64 bytes)"
			     " @ 0x401150: worker (fs.c:20)\n"
			     "            1000            0         1000  counters (global, 64 bytes)"
			     " @ 0x401160: worker (fs.c:21)\n"
			     "             200          120           80  heap block of 128 bytes "
			     "allocated at make (fs.c:10) @ 0x401170: reader (fs.c:30)\n");
	assert_contains(txt, "global-all-threads-compact-info (per variable), by count:\n"
			     "           count  variable\n"
			     "            2000  counters (global, 64 bytes)\n"
			     "             217  heap block of 128 bytes allocated at make (fs.c:10)\n"
			     "               7  unknown object on line 0x405000\n");
	/* Each object: range, verdict, words per thread, source lines. */
	assert_contains(txt, "1. counters (global, 64 bytes) in /home/u/fs\n"
			     "   address 0x404040-0x40407f (64 bytes), verdict false\n"
			     "   potential invalidations 1998; misses 1000, invalidations 998; 2000 "
			     "accesses from 2 contexts\n");
	assert_contains(txt, "     thread 1: writes words 0 (bytes 0-7); reads words 0 (bytes "
			     "0-7); 500 reads, 500 writes\n"
			     "     thread 2: writes words 1 (bytes 8-15); 0 reads, 1000 writes\n"
			     "   source lines: fs.c:20, fs.c:21\n");
	assert_contains(txt, "2. heap block of 128 bytes allocated at make (fs.c:10)\n"
			     "   address 0x4a5b000-0x4a5b07f (128 bytes), verdict mixed\n");
	assert_contains(txt, "     thread 1: writes words 0 (bytes 0-7); reads words 0-1 "
			     "(bytes 0-15); 100 reads, 50 writes\n");
	/* The object's second line: offsets are within the object. */
	assert_contains(txt, "     thread 2: writes words 7 (bytes 120-127); 0 reads, 10 writes\n");
	assert_contains(txt, "   source lines: fs.c:30, fs.c:20\n");
	/* True sharing is apart and not counted. */
	assert_contains(txt, "True sharing (threads share the same words; not false sharing):\n"
			     "  line 0x404100 in flag (global, 8 bytes): misses 30, invalidations 20\n");
	assert_order(txt, "Falsely shared objects", "True sharing");
	assert_lacks(txt, "flag (global, 8 bytes) @");
	assert_int_equal(r.sum.false_lines, 4);
	assert_string_equal(r.sum.analysis, "falseshare");
	free(txt);

	j = load_json(&r, "report.json");
	assert_int_equal(jint(j, "false_sharing.lines"), 4);
	assert_int_equal(jint(j, "summary.quiet_lines"), 12);
	assert_int_equal(jint(j, "summary.stack_accesses"), 400);
	assert_int_equal(jint(j, "false_sharing.mixed_lines"), 1);
	assert_int_equal(jint(j, "false_sharing.global_all_threads_info.0.count"), 1000);
	assert_string_equal(jstr(j, "false_sharing.global_all_threads_info.0.context.0.file"), "fs.c");
	assert_int_equal(json_array_size(jpath(j, "false_sharing.global_all_threads_info")), 6);
	assert_int_equal(jint(j, "false_sharing.global_all_threads_compact_info.0.count"), 2000);
	assert_int_equal(jint(j, "false_sharing.global_all_threads_compact_info.1.count"), 217);
	assert_int_equal(jint(j, "false_sharing.per_thread.2.tid"), 3);
	assert_int_equal(jint(j, "false_sharing.per_thread.2.entries.0.count"), 50);
	assert_string_equal(jstr(j, "false_sharing.objects.0.variable.name"), "counters");
	assert_int_equal(jint(j, "false_sharing.objects.0.potential_invalidations"), 1998);
	assert_int_equal(jint(j, "false_sharing.objects.0.lines.0.threads.1.write_words.0"), 1);
	assert_string_equal(jstr(j, "false_sharing.objects.1.verdict"), "mixed");
	assert_int_equal(jint(j, "false_sharing.objects.1.lines.1.offset_in_object"), 64);
	assert_int_equal(jint(j, "false_sharing.objects.1.source_lines.0.line"), 30);
	assert_true(json_is_null(jpath(j, "false_sharing.objects.2.variable")));
	assert_string_equal(jstr(j, "true_sharing.0.addr"), "0x404100");
	assert_string_equal(jstr(j, "exit.how"), "signal");
	assert_int_equal(jint(j, "exit.signal"), 11);
	json_decref(j);

	j = load_json(&r, "findings.sarif");
	assert_int_equal(json_array_size(jpath(j, "runs.0.results")), 3);
	assert_string_equal(jstr(j, "runs.0.results.0.ruleId"), "false-sharing");
	assert_string_equal(jstr(j, "runs.0.results.0.level"), "warning");
	assert_contains(jstr(j, "runs.0.results.0.message.text"), "counters");
	assert_int_equal(jint(j, "runs.0.results.0.locations.0.physicalLocation.region.startLine"),
			 20);
	assert_int_equal(jint(j, "runs.0.results.0.relatedLocations.0.physicalLocation.region."
				 "startLine"), 21);
	json_decref(j);
	if (have_python())
		assert_int_equal(run_checker("check_sarif.py", out_path(&r, "findings.sarif"),
					     "--expect-results 3 --expect-level warning "
					     "--expect-rule false-sharing:fs.c:20 "
					     "--expect-rule false-sharing:fs.c:30"), 0);
	run_done(&r);
}

/* ------------------------------------------------------------------ */
/* Empty, truncated and malformed input                                */
/* ------------------------------------------------------------------ */

static void test_empty_results(void **state)
{
	struct run r;
	json_t *j;
	char *txt;

	(void)state;
	run_fixture(&r, "memcheck_clean.jsonl", &default_opts);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "No heap memory errors found.\nERROR SUMMARY: 0 errors from 0 "
			     "contexts\n");
	assert_int_equal(r.sum.errors, 0);
	free(txt);
	j = load_json(&r, "findings.sarif");
	assert_int_equal(json_array_size(jpath(j, "runs.0.results")), 0);
	json_decref(j);
	if (have_python())
		assert_int_equal(run_checker("check_sarif.py", out_path(&r, "findings.sarif"),
					     "--expect-results 0"), 0);
	run_done(&r);

	run_fixture(&r, "falseshare_none.jsonl", &default_opts);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "False sharing: no false sharing found; 0 lines with true sharing\n");
	assert_contains(txt, "True sharing (threads share the same words; not false sharing):\n"
			     "  (none)\n");
	assert_lacks(txt, "Falsely shared objects");
	assert_int_equal(r.sum.false_lines, 0);
	free(txt);
	j = load_json(&r, "report.json");
	assert_int_equal(jint(j, "false_sharing.lines"), 0);
	assert_int_equal(json_array_size(jpath(j, "false_sharing.objects")), 0);
	json_decref(j);
	run_done(&r);
}

static void test_truncated(void **state)
{
	struct run r;
	json_t *j;
	char *s;

	(void)state;
	run_fixture(&r, "memcheck_truncated.jsonl", &default_opts);
	assert_true(r.sum.truncated);
	assert_int_equal(r.sum.errors, 1); /* the records before the cut are used */
	s = read_out(&r, "report.txt");
	/* A memcheck run's processes come from Memcheck's XML, and the
	 * message says so. */
	assert_contains(s, "Process 555 did not finish normally: Memcheck's output of it ends "
			   "early, so these results are incomplete\n");
	assert_contains(s, "The last line of findings.jsonl was cut off and is ignored.\n");
	assert_contains(s, "Invalid read of size 4\n   at 0x401156: main (crash.c:9)\n");
	assert_contains(s, "ERROR SUMMARY: 1 error from 1 context\n\nThe run ended early");
	free(s);
	j = load_json(&r, "report.json");
	assert_true(json_is_true(jpath(j, "truncated")));
	assert_true(json_is_null(jpath(j, "exit")));
	json_decref(j);
	j = load_json(&r, "findings.sarif");
	assert_true(json_is_false(jpath(j, "runs.0.invocations.0.executionSuccessful")));
	json_decref(j);
	run_done(&r);
}

#define START_MC "{\"rec\":\"start\",\"analysis\":\"memcheck\",\"format\":1,\"pid\":1,\"exe\":\"/p\"," \
		 "\"argv\":[\"p\"],\"line_size\":64,\"word_size\":8}\n"
#define START_FS "{\"rec\":\"start\",\"analysis\":\"falseshare\",\"format\":1,\"pid\":1,\"exe\":\"/p\"," \
		 "\"argv\":[\"p\"],\"line_size\":64,\"word_size\":8}\n"
#define STACK1 "{\"rec\":\"stack\",\"id\":1,\"frames\":[{\"ip\":\"0x1\",\"fn\":\"f\",\"file\":\"a.c\",\"line\":3}]}\n"
#define ERR(fields) "{\"rec\":\"error\",\"kind\":\"invalid-read\",\"tid\":1," fields "}\n"

static void test_malformed(void **state)
{
	static const struct {
		const char *content, *msg;
	} cases[] = {
		{ START_MC "{\"rec\":\"error\",\n", "findings.jsonl:2: not valid JSON" },
		{ START_MC "[1,2]\n", "findings.jsonl:2: not a JSON object" },
		{ START_MC "{\"kind\":\"x\"}\n", "findings.jsonl:2: no 'rec' field" },
		{ START_MC "{\"rec\":\"error\",\"rec\":\"leak\"}\n", "findings.jsonl:2: not valid JSON: duplicate" },
		{ START_MC STACK1 ERR("\"stack\":1,\"size\":4,\"addr\":\"0x10\""),
		  "findings.jsonl:3: error record: 'count' is missing" },
		{ START_MC STACK1 ERR("\"stack\":1,\"count\":\"1\",\"size\":4,\"addr\":\"0x10\""),
		  "findings.jsonl:3: error record: 'count' is not an integer" },
		{ START_MC STACK1 ERR("\"stack\":1,\"count\":0,\"size\":4,\"addr\":\"0x10\""),
		  "findings.jsonl:3: error record: 'count' is 0, less than 1" },
		{ START_MC STACK1 ERR("\"stack\":2,\"count\":1,\"size\":4,\"addr\":\"0x10\""),
		  "findings.jsonl:3: error record: 'stack' refers to stack 2, which is not defined" },
		{ START_MC STACK1 ERR("\"stack\":1,\"count\":1,\"size\":4,\"addr\":\"16\""),
		  "findings.jsonl:3: error record: 'addr' is '16', not an address" },
		{ START_MC STACK1 ERR("\"stack\":1,\"count\":1,\"size\":4,\"addr\":\"0x10\","
				      "\"block\":{\"addr\":\"0x0\",\"size\":8,\"offset\":3,"
				      "\"state\":\"alloc\",\"alloc_stack\":1}"),
		  "findings.jsonl:3: error record: block: 'offset' 3 is not addr - block addr" },
		{ START_MC STACK1 ERR("\"stack\":1,\"count\":1,\"size\":4,\"addr\":\"0x10\","
				      "\"block\":{\"addr\":\"0x0\",\"size\":8,\"offset\":16,"
				      "\"state\":\"gone\",\"alloc_stack\":1}"),
		  "findings.jsonl:3: error record: block: 'state' has an unknown value 'gone'" },
		{ START_MC STACK1 "{\"rec\":\"error\",\"kind\":\"bogus\",\"tid\":1,\"stack\":1,\"count\":1}\n",
		  "findings.jsonl:3: error record: 'kind' has an unknown value 'bogus'" },
		{ START_MC STACK1 "{\"rec\":\"error\",\"kind\":\"use-after-free\",\"tid\":1,\"stack\":1,"
				  "\"count\":1,\"size\":4,\"addr\":\"0x10\"}\n",
		  "findings.jsonl:3: error record: 'access' is missing" },
		{ START_MC STACK1 "{\"rec\":\"error\",\"kind\":\"uninit-syscall\",\"tid\":1,\"stack\":1,"
				  "\"count\":1,\"syscall\":\"write\"}\n",
		  "findings.jsonl:3: error record: 'param' is missing" },
		{ START_MC STACK1 STACK1, "findings.jsonl:3: stack record: stack 1 is defined twice" },
		{ START_MC "{\"rec\":\"stack\",\"id\":1,\"frames\":[]}\n",
		  "findings.jsonl:2: stack record: stack 1 has no frames" },
		{ START_MC "{\"rec\":\"stack\",\"id\":1,\"frames\":[{\"fn\":\"f\"}]}\n",
		  "findings.jsonl:2: stack record: frame 0: 'ip' is missing" },
		{ START_MC "{\"rec\":\"stack\",\"id\":1,\"frames\":[{\"ip\":\"0x1\",\"line\":-2}]}\n",
		  "findings.jsonl:2: stack record: frame 0: 'line' is -2, less than 0" },
		{ START_MC "{\"rec\":\"leak\",\"kind\":\"leak-indirect\",\"bytes\":1,\"blocks\":1,\"stack\":1}\n",
		  "findings.jsonl:2: leak record: 'kind' has an unknown value" },
		{ STACK1, "findings.jsonl:1: a stack record before the start record" },
		{ "", "findings.jsonl: no start record (the file is empty)" },
		{ "{\"rec\":\"start\",\"analysis\":\"memcheck\",\"format\":2}\n",
		  "findings.jsonl:1: start record: format 2 is not supported" },
		{ "{\"rec\":\"start\",\"analysis\":\"racecheck\",\"format\":1}\n",
		  "findings.jsonl:1: start record: 'analysis' has an unknown value 'racecheck'" },
		{ START_MC START_MC, "findings.jsonl:2: start record: a second start record" },
		{ START_MC "{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":0}}\n" STACK1,
		  "findings.jsonl:3: a stack record after the end record" },
		{ START_MC "{\"rec\":\"end\",\"exit\":{\"how\":\"crash\"}}\n",
		  "findings.jsonl:2: end record: exit: 'how' has an unknown value 'crash'" },
		{ START_MC "{\"rec\":\"thread\",\"tid\":1}\n",
		  "findings.jsonl:2: a thread record in a memcheck run" },
		{ START_FS "{\"rec\":\"object\",\"var\":7,\"cold_misses\":0,\"misses\":1,\"invalidations\":0}\n"
			   "{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":0}}\n",
		  "findings.jsonl:2: object record: 'var' refers to var 7, which is not defined" },
		{ START_FS "{\"rec\":\"line\",\"addr\":\"0x40\",\"verdict\":\"false\",\"word_size\":8,"
			   "\"threads\":[{\"tid\":1,\"read\":\"0x0\",\"write\":\"0x100\",\"reads\":0,"
			   "\"writes\":1}],\"misses\":0,\"invalidations\":0,\"potential_invalidations\":0}\n",
		  "findings.jsonl:2: line record: threads[0]: 'write' marks word 8 but a line has 8 words" },
		{ START_FS "{\"rec\":\"line\",\"addr\":\"0x44\",\"verdict\":\"false\",\"word_size\":8,"
			   "\"threads\":[],\"misses\":0,\"invalidations\":0,\"potential_invalidations\":0}\n",
		  "findings.jsonl:2: line record: 'addr' is not a multiple of the line size 64" },
		{ START_FS STACK1 "{\"rec\":\"access\",\"line\":\"0x80\",\"tid\":1,\"context\":1,"
				  "\"reads\":1,\"writes\":0}\n",
		  "findings.jsonl:3: access record: 'line' 0x80 has no line record" },
#define VAR_A "{\"rec\":\"var\",\"id\":1,\"kind\":\"global\",\"addr\":\"0x40\",\"size\":8}\n"
#define LINE_VARS(v) "{\"rec\":\"line\",\"addr\":\"0x40\",\"var\":1," v ",\"verdict\":" \
		     "\"false\",\"word_size\":8,\"threads\":[],\"misses\":0,\"invalidations\":0," \
		     "\"potential_invalidations\":0}\n"
		{ START_FS VAR_A LINE_VARS("\"vars\":[2,1]"),
		  "findings.jsonl:3: line record: 'vars' does not begin with 'var'" },
		{ START_FS VAR_A LINE_VARS("\"vars\":[1,1]"),
		  "findings.jsonl:3: line record: 'vars' lists var 1 twice" },
		{ START_FS VAR_A LINE_VARS("\"vars\":[]"),
		  "findings.jsonl:3: line record: 'vars' is not an array of 1 to 64 variable ids" },
		{ START_FS VAR_A LINE_VARS("\"vars\":[1,9]")
			   "{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":0}}\n",
		  "findings.jsonl:3: line record: 'vars' refers to var 9, which is not defined" },
		{ START_FS STACK1 VAR_A LINE_VARS("\"vars\":[1]")
				  "{\"rec\":\"access\",\"line\":\"0x40\",\"tid\":1,\"context\":1,"
				  "\"reads\":1,\"writes\":0,\"words\":\"x1\"}\n",
		  "findings.jsonl:5: access record: 'words' is 'x1', not" },
#undef LINE_VARS
#undef VAR_A
	};
	char *dir, path[PATH_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run r;
		struct dirent *de;
		DIR *d;

		dir = ks_test_tmpdir();
		snprintf(path, sizeof(path), "%s/findings.jsonl", dir);
		ks_test_write_file(path, cases[i].content, 0600);
		run_file(&r, path, &default_opts);
		if (r.rc != -EBADMSG || !strstr(r.err.msg, cases[i].msg)) {
			print_error("case %zu: rc %d, message '%s'; expected '%s'\n", i, r.rc,
				    r.err.msg, cases[i].msg);
			fail();
		}
		/* The message names the file as given. */
		assert_int_equal(strncmp(r.err.msg, path, strlen(path)), 0);
		/* Nothing written, not even a temporary file. */
		d = opendir(r.rd.path);
		assert_non_null(d);
		while ((de = readdir(d)))
			assert_true(de->d_name[0] == '.' && (!de->d_name[1] ||
			    (de->d_name[1] == '.' && !de->d_name[2])));
		closedir(d);
		assert_string_equal(r.text, "");
		run_done(&r);
		ks_test_rmtree(dir);
		free(dir);
	}
}

/* Fields the format lets the tool leave out. */
static void test_optional_fields(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX], *txt;
	struct run r;

	(void)state;
	snprintf(path, sizeof(path), "%s/findings.jsonl", dir);
	ks_test_write_file(path,
		START_MC STACK1
		/* a NULL dereference: the tool writes no addr for 0 */
		ERR("\"stack\":1,\"count\":1,\"size\":8")
		/* no addr, but a block: the address is the block's plus offset */
		"{\"rec\":\"error\",\"kind\":\"use-after-free\",\"access\":\"read\",\"tid\":1,"
		"\"stack\":1,\"count\":1,\"size\":1,\"block\":{\"addr\":\"0x1000\",\"size\":16,"
		"\"offset\":20,\"state\":\"freed\",\"alloc_stack\":1}}\n"
		/* a system call argument rather than a buffer */
		"{\"rec\":\"error\",\"kind\":\"uninit-syscall\",\"tid\":1,\"stack\":1,\"count\":1,"
		"\"syscall\":\"exit_group\",\"param\":\"status\"}\n"
		"{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":0}}\n", 0600);
	run_file(&r, path, &default_opts);
	assert_int_equal(r.rc, 0);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "Invalid read of size 8\n   at 0x1: f (a.c:3)\n\n");
	assert_contains(txt, "Invalid read of size 1\n   at 0x1: f (a.c:3)\n"
			     " Address 0x1014 is 4 bytes after a block of size 16 free'd\n"
			     " Block was alloc'd at\n   at 0x1: f (a.c:3)\n");
	assert_contains(txt, "Syscall param exit_group(status) contains uninitialised byte(s)\n");
	/* No heap summary without one in the end record. */
	assert_lacks(txt, "HEAP SUMMARY");
	assert_contains(txt, "ERROR SUMMARY: 3 errors from 3 contexts\n");
	free(txt);
	run_done(&r);
	ks_test_rmtree(dir);
	free(dir);
}

/* Two variables on one line: each access goes to the variable it names. */
static void test_two_variables_on_a_line(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX], *txt;
	struct run r;
	json_t *j;

	(void)state;
	snprintf(path, sizeof(path), "%s/findings.jsonl", dir);
	ks_test_write_file(path,
		START_FS STACK1
		"{\"rec\":\"stack\",\"id\":2,\"frames\":[{\"ip\":\"0x2\",\"fn\":\"g\","
		"\"file\":\"b.c\",\"line\":7}]}\n"
		"{\"rec\":\"var\",\"id\":1,\"kind\":\"global\",\"addr\":\"0x1000\",\"size\":8,"
		"\"name\":\"a\"}\n"
		"{\"rec\":\"var\",\"id\":2,\"kind\":\"global\",\"addr\":\"0x1008\",\"size\":8,"
		"\"name\":\"b\"}\n"
		"{\"rec\":\"line\",\"addr\":\"0x1000\",\"var\":1,\"verdict\":\"false\","
		"\"word_size\":8,\"threads\":[{\"tid\":1,\"read\":\"0x0\",\"write\":\"0x1\","
		"\"reads\":0,\"writes\":5},{\"tid\":2,\"read\":\"0x0\",\"write\":\"0x2\","
		"\"reads\":0,\"writes\":9}],\"misses\":4,\"invalidations\":3,"
		"\"potential_invalidations\":13}\n"
		"{\"rec\":\"access\",\"line\":\"0x1000\",\"var\":1,\"tid\":1,\"context\":1,"
		"\"reads\":0,\"writes\":5}\n"
		"{\"rec\":\"access\",\"line\":\"0x1000\",\"var\":2,\"tid\":2,\"context\":2,"
		"\"reads\":0,\"writes\":9}\n"
		"{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":0}}\n", 0600);
	run_file(&r, path, &default_opts);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.sum.false_lines, 1);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "False sharing: 1 line (1 false, 0 mixed) in 2 objects");
	assert_contains(txt, "               9  b (global, 8 bytes)\n"
			     "               5  a (global, 8 bytes)\n");
	/* b's words are shown at its own offsets: word 1 of the line is its
	 * bytes 0-7, word 0 lies before it. */
	assert_contains(txt, "1. b (global, 8 bytes)\n   address 0x1008-0x100f (8 bytes)");
	assert_contains(txt, "     thread 2: writes words 1 (bytes 0-7); 0 reads, 9 writes\n");
	assert_contains(txt, "     thread 1: writes words 0 (bytes -8..-1); 0 reads, 5 writes\n");
	free(txt);
	j = load_json(&r, "report.json");
	assert_string_equal(jstr(j, "false_sharing.objects.0.variable.name"), "b");
	assert_int_equal(jint(j, "false_sharing.objects.0.lines.0.offset_in_object"), -8);
	assert_string_equal(jstr(j, "false_sharing.objects.1.variable.name"), "a");
	json_decref(j);
	run_done(&r);
	ks_test_rmtree(dir);
	free(dir);
}

/* A line holding three variables ("vars"), access records that say
 * which words they touched ("words"): each variable is an object of its
 * own, its line lists the parts (a, b, b+8, c) with their threads, and a
 * variable that got fewer than min_accesses accesses (c, read twice) is
 * a part of the line but not a falsely shared object. */
static void test_line_parts(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX], *txt;
	struct run r;
	json_t *j;

	(void)state;
	snprintf(path, sizeof(path), "%s/findings.jsonl", dir);
	ks_test_write_file(path,
		START_FS STACK1
		"{\"rec\":\"stack\",\"id\":2,\"frames\":[{\"ip\":\"0x2\",\"fn\":\"g\","
		"\"file\":\"b.c\",\"line\":7}]}\n"
		"{\"rec\":\"var\",\"id\":1,\"kind\":\"global\",\"addr\":\"0x1000\",\"size\":8,"
		"\"name\":\"a\"}\n"
		"{\"rec\":\"var\",\"id\":2,\"kind\":\"global\",\"addr\":\"0x1008\",\"size\":16,"
		"\"name\":\"b\"}\n"
		"{\"rec\":\"var\",\"id\":3,\"kind\":\"global\",\"addr\":\"0x1020\",\"size\":1,"
		"\"name\":\"c\"}\n"
		"{\"rec\":\"line\",\"addr\":\"0x1000\",\"var\":1,\"vars\":[1,2,3],\"verdict\":\"false\","
		"\"word_size\":8,\"threads\":[{\"tid\":1,\"read\":\"0x10\",\"write\":\"0x1\","
		"\"reads\":2,\"writes\":500},{\"tid\":2,\"read\":\"0x0\",\"write\":\"0x2\","
		"\"reads\":0,\"writes\":300},{\"tid\":3,\"read\":\"0x0\",\"write\":\"0x4\","
		"\"reads\":0,\"writes\":300}],\"misses\":4,\"invalidations\":3,"
		"\"potential_invalidations\":1100}\n"
		"{\"rec\":\"access\",\"line\":\"0x1000\",\"var\":1,\"tid\":1,\"context\":1,"
		"\"reads\":0,\"writes\":500,\"words\":\"0x1\"}\n"
		"{\"rec\":\"access\",\"line\":\"0x1000\",\"var\":1,\"tid\":1,\"context\":2,"
		"\"reads\":2,\"writes\":0,\"words\":\"0x10\"}\n"
		"{\"rec\":\"access\",\"line\":\"0x1000\",\"var\":1,\"tid\":2,\"context\":2,"
		"\"reads\":0,\"writes\":300,\"words\":\"0x2\"}\n"
		"{\"rec\":\"access\",\"line\":\"0x1000\",\"var\":1,\"tid\":3,\"context\":2,"
		"\"reads\":0,\"writes\":300,\"words\":\"0x4\"}\n"
		"{\"rec\":\"total\",\"accesses\":1102,\"reads\":2,\"writes\":1100,\"cold_misses\":3,"
		"\"misses\":4,\"invalidations\":3,\"contention_accesses\":7,\"quiet_lines\":0,"
		"\"min_accesses\":100}\n"
		"{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":0}}\n", 0600);
	run_file(&r, path, &default_opts);
	assert_int_equal(r.rc, 0);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "False sharing: 1 line (1 false, 0 mixed) in 2 objects");
	assert_contains(txt, "             600  b (global, 16 bytes)\n"
			     "             500  a (global, 8 bytes)\n");
	assert_null(strstr(txt, "c (global, 1 bytes)"));
	assert_contains(txt, "     its 4 parts:\n"
			     "       a: bytes 0-7 of the line, written by thread 1\n"
			     "       b: bytes 8-15 of the line, written by thread 2\n"
			     "       b+8: bytes 16-23 of the line, written by thread 3\n"
			     "       c: bytes 32-39 of the line, read by thread 1\n");
	free(txt);
	j = load_json(&r, "report.json");
	assert_string_equal(jstr(j, "false_sharing.objects.0.variable.name"), "b");
	assert_int_equal(jint(j, "false_sharing.objects.0.count"), 600);
	assert_string_equal(jstr(j, "false_sharing.objects.1.variable.name"), "a");
	assert_int_equal(jint(j, "false_sharing.objects.1.count"), 500);
	assert_string_equal(jstr(j, "false_sharing.objects.0.lines.0.parts.2.name"), "b+8");
	assert_int_equal(jint(j, "false_sharing.objects.0.lines.0.parts.2.variable"), 2);
	assert_int_equal(jint(j, "false_sharing.objects.0.lines.0.parts.2.offset_in_variable"), 8);
	assert_int_equal(jint(j, "false_sharing.objects.0.lines.0.parts.2.offset_in_line"), 16);
	assert_int_equal(jint(j, "false_sharing.objects.0.lines.0.parts.2.size"), 8);
	assert_int_equal(jint(j, "false_sharing.objects.0.lines.0.parts.2.threads.0.tid"), 3);
	assert_int_equal(jint(j, "false_sharing.objects.0.lines.0.parts.2.threads.0.write_words.0"),
			 2);
	assert_string_equal(jstr(j, "false_sharing.objects.0.lines.0.parts.3.name"), "c");
	json_decref(j);
	run_done(&r);
	ks_test_rmtree(dir);
	free(dir);
}

/* The layout prediction from two private lines ("near" records): a
 * 128-byte block at a line start, thread 1 writing its bytes 56-63,
 * thread 2 its bytes 64-71.  Clean as laid out; from start offsets 16,
 * 32 and 48 both land in one line; with 128-byte lines, everywhere but
 * at 64 (which puts the boundary between them). */
static void test_layout_prediction(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX], *txt;
	struct run r;
	json_t *j;

	(void)state;
	snprintf(path, sizeof(path), "%s/findings.jsonl", dir);
	ks_test_write_file(path,
		"{\"rec\":\"start\",\"analysis\":\"falseshare\",\"format\":1,\"pid\":1,"
		"\"exe\":\"/p\",\"argv\":[\"p\"],\"line_size\":64,\"word_size\":1}\n"
		"{\"rec\":\"stack\",\"id\":1,\"frames\":[{\"ip\":\"0x1\",\"fn\":\"mk\","
		"\"file\":\"a.c\",\"line\":3}]}\n"
		"{\"rec\":\"var\",\"id\":1,\"kind\":\"heap\",\"addr\":\"0x1000\",\"size\":128,"
		"\"alloc_stack\":1}\n"
		"{\"rec\":\"near\",\"addr\":\"0x1000\",\"var\":1,\"word_size\":1,\"threads\":"
		"[{\"tid\":1,\"read\":\"0x0\",\"write\":\"0xff00000000000000\",\"reads\":0,"
		"\"writes\":500}]}\n"
		"{\"rec\":\"near\",\"addr\":\"0x1040\",\"var\":1,\"word_size\":1,\"threads\":"
		"[{\"tid\":2,\"read\":\"0xff\",\"write\":\"0xff\",\"reads\":500,\"writes\":500}]}\n"
		"{\"rec\":\"total\",\"accesses\":1500,\"reads\":500,\"writes\":1000,\"cold_misses\":2,"
		"\"misses\":2,\"invalidations\":0,\"contention_accesses\":2,\"quiet_lines\":0,"
		"\"min_accesses\":100,\"read_mostly_lines\":0,\"min_writes\":100}\n"
		"{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":0}}\n", 0600);
	run_file(&r, path, &default_opts);
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.sum.false_lines, 0);
	txt = read_out(&r, "report.txt");
	assert_contains(txt, "Layout prediction (1 object two threads came back to");
	assert_contains(txt, "1. heap block of 128 bytes allocated at mk (a.c:3)\n"
			     "   no false sharing as laid out: it starts at byte 0 of a 64-byte "
			     "line (aligned to 16 bytes)\n"
			     "   latent false sharing: appears if it starts at byte 16, 32 or 48 "
			     "of a 64-byte line\n"
			     "   with 128-byte lines: false sharing if it starts at byte 0, 16, 32, "
			     "48, 80, 96 or 112 of a line (it starts at byte 0)\n");
	free(txt);
	j = load_json(&r, "report.json");
	assert_int_equal(jint(j, "layout_prediction.0.align"), 16);
	assert_true(json_is_true(json_object_get(json_array_get(json_object_get(j,
		"layout_prediction"), 0), "latent")));
	assert_int_equal(jint(j, "layout_prediction.0.line_sizes.0.start_offset"), 0);
	assert_int_equal(jint(j, "layout_prediction.0.line_sizes.0.false_at.0"), 16);
	assert_int_equal(jint(j, "layout_prediction.0.line_sizes.0.false_at.2"), 48);
	assert_int_equal(jint(j, "layout_prediction.0.line_sizes.0.clean_at.0"), 0);
	assert_int_equal(jint(j, "layout_prediction.0.line_sizes.1.clean_at.0"), 64);
	json_decref(j);
	run_done(&r);
	ks_test_rmtree(dir);
	free(dir);
}

/* The kscope command line is the caller's, not checked by jansson: invalid
 * UTF-8 and control characters in it must not break the files. */
static void test_command_line_bytes(void **state)
{
	struct ks_mtr_opts o = default_opts;
	struct run r;
	json_t *j;
	char *s;

	(void)state;
	o.command = "kscope memcheck --xml -- ./a\xff\xc3 <b>&\x01";
	run_fixture(&r, "memcheck_clean.jsonl", &o);
	j = load_json(&r, "report.json"); /* jansson rejects invalid UTF-8 */
	assert_string_equal(jstr(j, "command"),
			    "kscope memcheck --xml -- ./a\xef\xbf\xbd\xef\xbf\xbd <b>&\x01");
	json_decref(j);
	j = load_json(&r, "findings.sarif");
	assert_non_null(jpath(j, "runs.0.invocations.0.commandLine"));
	json_decref(j);
	s = read_out(&r, "report.txt");
	assert_contains(s, "kscope command: kscope memcheck --xml -- ./a\xff\xc3 <b>&\\x01\n");
	free(s);
	run_done(&r);
}

/* A missing file is an error of its own, not a damaged one. */
static void test_missing_file(void **state)
{
	struct run r;

	(void)state;
	run_file(&r, "/nonexistent/findings.jsonl", &default_opts);
	assert_int_equal(r.rc, -ENOENT);
	assert_contains(r.err.msg, "cannot open '/nonexistent/findings.jsonl'");
	run_done(&r);
}

/* ------------------------------------------------------------------ */
/* Size                                                                */
/* ------------------------------------------------------------------ */

static void test_large(void **state)
{
	enum { STACKS = 1000, ERRORS = 100000 };
	char *dir = ks_test_tmpdir(), path[PATH_MAX];
	struct timespec t0, t1;
	struct run r;
	double secs;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/findings.jsonl", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(START_MC, f);
	for (int i = 1; i <= STACKS; i++)
		fprintf(f, "{\"rec\":\"stack\",\"id\":%d,\"frames\":[{\"ip\":\"0x%x\",\"fn\":\"f%d\","
			"\"obj\":\"/p\",\"file\":\"a%d.c\",\"dir\":\"/src\",\"line\":%d},{\"ip\":"
			"\"0x%x\",\"fn\":\"main\",\"obj\":\"/p\",\"file\":\"main.c\",\"line\":9},"
			"{\"ip\":\"0x4800000\",\"fn\":\"__libc_start_main\",\"obj\":\"/lib/libc.so.6\"}]}\n",
			i * 7, 0x401000 + i, i, i % 50, i, 0x402000 + i);
	for (int i = 0; i < ERRORS; i++)
		fprintf(f, "{\"rec\":\"error\",\"kind\":\"invalid-read\",\"tid\":%d,\"stack\":%d,"
			"\"count\":%d,\"size\":4,\"addr\":\"0x%x\",\"block\":{\"addr\":\"0x%x\","
			"\"size\":40,\"offset\":40,\"state\":\"alloc\",\"alloc_stack\":%d}}\n",
			1 + i % 4, (i % STACKS + 1) * 7, 1 + i % 3, 0x5000000 + i * 64 + 40,
			0x5000000 + i * 64, ((i + 1) % STACKS + 1) * 7);
	fputs("{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":0}}\n", f);
	assert_int_equal(fclose(f), 0);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	run_file(&r, path, &default_opts);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_int_equal(r.rc, 0);
	assert_int_equal(r.sum.errors, ERRORS);
	assert_true(out_exists(&r, "findings.sarif"));
	print_message("100k error records: %.2f s for all three reports\n", secs);
	if (secs >= LARGE_SECONDS)
		print_error("took %.2f s, more than %.0f\n", secs, LARGE_SECONDS);
	assert_true(secs < LARGE_SECONDS);
	run_done(&r);
	ks_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memcheck_text),
		cmocka_unit_test(test_memcheck_no_filter_short_stacks),
		cmocka_unit_test(test_memcheck_json),
		cmocka_unit_test(test_memcheck_sarif),
		cmocka_unit_test(test_checkers_reject),
		cmocka_unit_test(test_contention),
		cmocka_unit_test(test_falseshare),
		cmocka_unit_test(test_empty_results),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_optional_fields),
		cmocka_unit_test(test_two_variables_on_a_line),
		cmocka_unit_test(test_line_parts),
		cmocka_unit_test(test_layout_prediction),
		cmocka_unit_test(test_command_line_bytes),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
