/*
 * Unit tests for the central checker (src/common/argcheck.c): every rule,
 * both sides of every range, and the messages that name origin, value and
 * what is accepted.
 *
 * Permission checks mean nothing for root, who may read and write
 * anything, so when the suite runs as root those cases run in a child
 * process that has dropped to the unprivileged user "nobody".
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "argcheck.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Numbers                                                             */
/* ------------------------------------------------------------------ */

static int int_ok(const char *s, int64_t min, int64_t max, int64_t *v)
{
	struct ks_err e;

	return ks_check_int(s, strlen(s), min, max, v, &e);
}

static void test_int_range_both_sides(void **state)
{
	int64_t v = 0;

	(void)state;
	assert_int_equal(int_ok("0", 0, 500, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(int_ok("500", 0, 500, &v), 0);
	assert_int_equal(v, 500);
	assert_int_equal(int_ok("-1", 0, 500, &v), -ERANGE);
	assert_int_equal(int_ok("501", 0, 500, &v), -ERANGE);
	assert_int_equal(int_ok("1", 1, 100, &v), 0);
	assert_int_equal(int_ok("0", 1, 100, &v), -ERANGE);
	assert_int_equal(int_ok("100", 1, 100, &v), 0);
	assert_int_equal(int_ok("101", 1, 100, &v), -ERANGE);
	assert_int_equal(int_ok("-5", -5, 5, &v), 0);
	assert_int_equal(v, -5);
	assert_int_equal(int_ok("-6", -5, 5, &v), -ERANGE);
	assert_int_equal(int_ok("9223372036854775807", 0, INT64_MAX, &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(int_ok("9223372036854775808", 0, INT64_MAX, &v), -ERANGE);
	assert_int_equal(int_ok("-9223372036854775808", INT64_MIN, 0, &v), 0);
	assert_true(v == INT64_MIN);
	assert_int_equal(int_ok("99999999999999999999999", INT64_MIN, INT64_MAX, &v),
			 -ERANGE);
	/* Longer than any int64: not read as a number at all. */
	assert_int_equal(int_ok("1234567890123456789012345678901234567890", INT64_MIN,
				INT64_MAX, &v), -EINVAL);
}

static void test_int_malformed(void **state)
{
	static const char *const bad[] = {
		"", "abc", "1.5", " 1", "1 ", "+1", "0x10", "1e3", "--1", "-",
		"1a", "٣", NULL
	};
	int64_t v = 42;

	(void)state;
	for (int i = 0; bad[i]; i++) {
		assert_int_equal(int_ok(bad[i], INT64_MIN, INT64_MAX, &v), -EINVAL);
		assert_int_equal(v, 42); /* untouched on failure */
	}
	/* An embedded NUL is not the shorter number. */
	{
		struct ks_err e;

		assert_int_equal(ks_check_int("12\0" "3", 4, 0, 1000, &v, &e), -EINVAL);
	}
}

static void test_size(void **state)
{
	struct ks_err e;
	int64_t v;

	(void)state;
#define SIZE_OK(s, min, max, want)                                              \
	do {                                                                    \
		assert_int_equal(ks_check_size(s, strlen(s), min, max, &v, &e), 0); \
		assert_true(v == (int64_t)(want));                              \
	} while (0)
#define SIZE_BAD(s, min, max, code)                                             \
	assert_int_equal(ks_check_size(s, strlen(s), min, max, &v, &e), code)
	SIZE_OK("64", 8, 4096, 64);
	SIZE_OK("8", 8, 4096, 8);
	SIZE_OK("4096", 8, 4096, 4096);
	SIZE_OK("4k", 8, 4096, 4096);
	SIZE_OK("4K", 8, 4096, 4096);
	SIZE_OK("1M", 0, INT64_MAX, 1 << 20);
	SIZE_OK("1mb", 0, INT64_MAX, 1 << 20);
	SIZE_OK("2G", 0, INT64_MAX, 2ll << 30);
	SIZE_OK("4096B", 8, 4096, 4096);
	SIZE_BAD("B", 0, INT64_MAX, -EINVAL);
	SIZE_BAD("1BB", 0, INT64_MAX, -EINVAL);
	SIZE_BAD("7", 8, 4096, -ERANGE);
	SIZE_BAD("4097", 8, 4096, -ERANGE);
	SIZE_BAD("5k", 8, 4096, -ERANGE);
	SIZE_BAD("1T", 0, INT64_MAX, -EINVAL);
	SIZE_BAD("-1", 0, INT64_MAX, -EINVAL);
	SIZE_BAD("k", 0, INT64_MAX, -EINVAL);
	SIZE_BAD("1kk", 0, INT64_MAX, -EINVAL);
	SIZE_BAD("", 0, INT64_MAX, -EINVAL);
	SIZE_BAD("9999999999G", 0, INT64_MAX, -ERANGE);
	SIZE_BAD("18446744073709551616", 0, INT64_MAX, -ERANGE);
#undef SIZE_OK
#undef SIZE_BAD
}

static void test_double(void **state)
{
	struct ks_err e;
	double v;

	(void)state;
	assert_int_equal(ks_check_double("0.5", 3, 0.5, 10.0, &v, &e), 0);
	assert_true(v == 0.5);
	assert_int_equal(ks_check_double("10", 2, 0.5, 10.0, &v, &e), 0);
	assert_int_equal(ks_check_double("0.49", 4, 0.5, 10.0, &v, &e), -ERANGE);
	assert_int_equal(ks_check_double("10.01", 5, 0.5, 10.0, &v, &e), -ERANGE);
	assert_int_equal(ks_check_double("1e1", 3, 0.5, 10.0, &v, &e), 0);
	assert_int_equal(ks_check_double("nan", 3, -1e9, 1e9, &v, &e), -EINVAL);
	assert_int_equal(ks_check_double("inf", 3, -1e9, 1e9, &v, &e), -EINVAL);
	assert_int_equal(ks_check_double("0x1p3", 5, -1e9, 1e9, &v, &e), -EINVAL);
	assert_int_equal(ks_check_double("1e400", 5, -1e300, 1e300, &v, &e), -EINVAL);
	assert_int_equal(ks_check_double("", 0, -1, 1, &v, &e), -EINVAL);
	assert_int_equal(ks_check_double("1.", 2, -1, 2, &v, &e), 0);
	assert_int_equal(ks_check_double("+1", 2, -1, 2, &v, &e), -EINVAL);
	assert_int_equal(ks_check_double("-1", 2, -1, 2, &v, &e), 0);
	assert_int_equal(ks_check_double("1e+1", 4, 0, 20, &v, &e), 0);
	assert_int_equal(ks_check_double(".", 1, -1, 2, &v, &e), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* Names and text                                                      */
/* ------------------------------------------------------------------ */

#define KERNEL_EXTRA "_|*"

static void test_kernel_name(void **state)
{
	struct ks_err e;
	char name[1026];

	(void)state;
	assert_int_equal(ks_check_name("add_kernel|mul*", 15, KERNEL_EXTRA, 1024, &e), 0);
	assert_int_equal(ks_check_name("A9", 2, KERNEL_EXTRA, 1024, &e), 0);
	memset(name, 'k', sizeof(name));
	assert_int_equal(ks_check_name(name, 1024, KERNEL_EXTRA, 1024, &e), 0);
	assert_int_equal(ks_check_name(name, 1025, KERNEL_EXTRA, 1024, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "1025 characters"));
	assert_int_equal(ks_check_name("", 0, KERNEL_EXTRA, 1024, &e), -EINVAL);
	assert_int_equal(ks_check_name("a-b", 3, KERNEL_EXTRA, 1024, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "'-' at position 2"));
	assert_int_equal(ks_check_name("a b", 3, KERNEL_EXTRA, 1024, &e), -EINVAL);
	assert_int_equal(ks_check_name("a.b", 3, KERNEL_EXTRA, 1024, &e), -EINVAL);
	assert_int_equal(ks_check_name("a/b", 3, KERNEL_EXTRA, 1024, &e), -EINVAL);
	assert_int_equal(ks_check_name("a\x01", 2, KERNEL_EXTRA, 1024, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "0x01"));
	assert_int_equal(ks_check_name("a\0b", 3, KERNEL_EXTRA, 1024, &e), -EINVAL);
	assert_int_equal(ks_check_name("\xc3\xa9", 2, KERNEL_EXTRA, 1024, &e), -EINVAL);
	/* Without extras only letters and digits pass. */
	assert_int_equal(ks_check_name("a_b", 3, NULL, 1024, &e), -EINVAL);
	assert_int_equal(ks_check_name("ab9", 3, NULL, 1024, &e), 0);
}

static void test_text(void **state)
{
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_check_text("any text: /, -, é", 18, 100, &e), 0);
	assert_int_equal(ks_check_text("", 0, 100, &e), -EINVAL);
	assert_int_equal(ks_check_text("abc", 3, 3, &e), 0);
	assert_int_equal(ks_check_text("abcd", 4, 3, &e), -EINVAL);
	assert_int_equal(ks_check_text("a\nb", 3, 100, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "control character"));
	assert_non_null(strstr(e.msg, "a\\x0ab")); /* shown escaped */
	assert_int_equal(ks_check_text("a\x7f", 2, 100, &e), -EINVAL);
	assert_int_equal(ks_check_text("a\0b", 3, 100, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "NUL byte"));
}

static void test_quote(void **state)
{
	char buf[512], big[300];

	(void)state;
	ks_quote(buf, sizeof(buf), "a\x1b[31mb\\", 8);
	assert_string_equal(buf, "a\\x1b[31mb\\x5c");
	memset(big, 'x', sizeof(big));
	ks_quote(buf, sizeof(buf), big, sizeof(big));
	assert_true(strlen(buf) == 83);
	assert_string_equal(buf + 80, "...");
	ks_quote(buf, 4, "abcdef", 6);
	assert_true(strlen(buf) < 4);
}

/* ------------------------------------------------------------------ */
/* Paths                                                               */
/* ------------------------------------------------------------------ */

static int path_check(const char *p, unsigned flags, char **res, char *note,
		      struct ks_err *e)
{
	return ks_check_path(p, strlen(p), flags, res, note, KS_NOTE_MAX, e);
}

static void test_path_basic(void **state)
{
	char *dir = ks_test_tmpdir(), file[PATH_MAX], link[PATH_MAX], dangling[PATH_MAX];
	char note[KS_NOTE_MAX], *res = NULL;
	struct ks_err e;

	(void)state;
	snprintf(file, sizeof(file), "%s/f.txt", dir);
	ks_test_write_file(file, "x", 0644);
	assert_int_equal(path_check(file, KS_PATH_FILE | KS_PATH_READ, &res, note, &e), 0);
	assert_string_equal(res, file);
	assert_string_equal(note, "");
	free(res);
	res = NULL;

	/* Wrong type both ways. */
	assert_int_equal(path_check(file, KS_PATH_DIR, &res, note, &e), -ENOTDIR);
	assert_non_null(strstr(e.msg, "is not a directory"));
	assert_int_equal(path_check(dir, KS_PATH_FILE, &res, note, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "is not a regular file"));
	assert_int_equal(path_check(dir, KS_PATH_DIR | KS_PATH_READ, &res, note, &e), 0);
	free(res);
	res = NULL;

	/* Missing, and a file used as a directory. */
	snprintf(link, sizeof(link), "%s/missing", dir);
	assert_int_equal(path_check(link, 0, &res, note, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "does not exist"));
	snprintf(link, sizeof(link), "%s/f.txt/x", dir);
	assert_int_equal(path_check(link, 0, &res, note, &e), -ENOTDIR);

	/* A symbolic link is resolved and reported. */
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(file, link), 0);
	assert_int_equal(path_check(link, KS_PATH_FILE, &res, note, &e), 0);
	assert_string_equal(res, file);
	assert_non_null(strstr(note, "symbolic link"));
	assert_non_null(strstr(note, file));
	free(res);
	res = NULL;
	snprintf(dangling, sizeof(dangling), "%s/dangling", dir);
	assert_int_equal(symlink("/nonexistent/kscope", dangling), 0);
	assert_int_equal(path_check(dangling, 0, &res, note, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "symbolic link to nothing"));

	/* Not executable: a regular file with no x bit, even for root. */
	assert_int_equal(path_check(file, KS_PATH_EXEC, &res, note, &e), -EACCES);
	chmod(file, 0755);
	assert_int_equal(path_check(file, KS_PATH_EXEC, &res, note, &e), 0);
	free(res);

	/* Bytes that have no place in a path. */
	assert_int_equal(ks_check_path("a\nb", 3, 0, &res, note, sizeof(note), &e), -EINVAL);
	assert_int_equal(ks_check_path("a\0b", 3, 0, &res, note, sizeof(note), &e), -EINVAL);
	assert_int_equal(ks_check_path("", 0, 0, &res, note, sizeof(note), &e), -EINVAL);
	{
		char *longp = malloc(PATH_MAX + 10);

		memset(longp, 'a', PATH_MAX + 9);
		longp[PATH_MAX + 9] = '\0';
		assert_int_equal(ks_check_path(longp, strlen(longp), 0, &res, note,
					       sizeof(note), &e), -ENAMETOOLONG);
		free(longp);
	}
	ks_test_rmtree(dir);
	free(dir);
}

/* ------------------------------------------------------------------ */
/* Output locations                                                    */
/* ------------------------------------------------------------------ */

static int out_check(const char *p, char **res, char *note, struct ks_err *e)
{
	return ks_check_output(p, strlen(p), res, note, KS_NOTE_MAX, e);
}

static void test_output_rules(void **state)
{
	char *dir = ks_test_tmpdir(), p[PATH_MAX], q[PATH_MAX], note[KS_NOTE_MAX];
	char *res = NULL;
	struct ks_err e;

	(void)state;
	/* A new location in a safe directory, several levels deep. */
	snprintf(p, sizeof(p), "%s/out/a/b", dir);
	assert_int_equal(out_check(p, &res, note, &e), 0);
	assert_string_equal(res, p);
	free(res);
	res = NULL;
	/* Nothing was created by the check. */
	snprintf(q, sizeof(q), "%s/out", dir);
	assert_int_equal(access(q, F_OK), -1);

	/* An existing safe directory. */
	assert_int_equal(out_check(dir, &res, note, &e), 0);
	free(res);
	res = NULL;

	/* The parent writable by group: rejected; the same made sticky: fine. */
	snprintf(q, sizeof(q), "%s/shared", dir);
	assert_int_equal(mkdir(q, 0700), 0);
	chmod(q, 0775);
	snprintf(p, sizeof(p), "%s/shared/out", dir);
	assert_int_equal(out_check(p, &res, note, &e), -EPERM);
	assert_non_null(strstr(e.msg, "writable by group or others"));
	assert_non_null(strstr(e.msg, "0775"));
	chmod(q, 0757);
	assert_int_equal(out_check(p, &res, note, &e), -EPERM);
	chmod(q, 01777);
	assert_int_equal(out_check(p, &res, note, &e), 0);
	free(res);
	res = NULL;
	/* The location itself existing and unsafe is rejected too. */
	chmod(q, 0777);
	assert_int_equal(out_check(q, &res, note, &e), -EPERM);
	chmod(q, 0755);
	assert_int_equal(out_check(q, &res, note, &e), 0);
	free(res);
	res = NULL;

	/* /tmp: sticky, owned by root. */
	assert_int_equal(out_check("/tmp", &res, note, &e), 0);
	free(res);
	res = NULL;

	/* An existing file is not a place for run directories. */
	snprintf(p, sizeof(p), "%s/file", dir);
	ks_test_write_file(p, "", 0644);
	assert_int_equal(out_check(p, &res, note, &e), -ENOTDIR);
	snprintf(p, sizeof(p), "%s/file/sub", dir);
	assert_int_equal(out_check(p, &res, note, &e), -ENOTDIR);

	/* Through a symbolic link: resolved and reported. */
	snprintf(p, sizeof(p), "%s/ln", dir);
	snprintf(q, sizeof(q), "%s/shared", dir);
	assert_int_equal(symlink(q, p), 0);
	snprintf(p, sizeof(p), "%s/ln/new", dir);
	assert_int_equal(out_check(p, &res, note, &e), 0);
	snprintf(q, sizeof(q), "%s/shared/new", dir);
	assert_string_equal(res, q);
	assert_non_null(strstr(note, "symbolic link"));
	free(res);
	res = NULL;

	/* Control characters. */
	assert_int_equal(ks_check_output("a\tb", 3, &res, note, sizeof(note), &e), -EINVAL);

	/* A directory owned by someone else (root can set this up). */
	if (geteuid() == 0) {
		snprintf(q, sizeof(q), "%s/other", dir);
		assert_int_equal(mkdir(q, 0755), 0);
		assert_int_equal(chown(q, 12345, 12345), 0);
		snprintf(p, sizeof(p), "%s/other/out", dir);
		assert_int_equal(out_check(p, &res, note, &e), -EPERM);
		assert_non_null(strstr(e.msg, "owned by uid 12345"));
	}
	ks_test_rmtree(dir);
	free(dir);
}

/* Checks that need an unprivileged user; returns 0 or the failing step. */
static int unprivileged_checks(void)
{
	char tmpl[] = "/tmp/kscope-test-nobody.XXXXXX";
	char p[PATH_MAX], note[KS_NOTE_MAX], *res = NULL, *dir;
	struct ks_err e;
	int step = 0;

	dir = mkdtemp(tmpl);
	if (!dir)
		return 100;
	snprintf(p, sizeof(p), "%s/unreadable", dir);
	ks_test_write_file(p, "x", 0200);
	step++;
	if (ks_check_path(p, strlen(p), KS_PATH_READ, &res, note, sizeof(note), &e) != -EACCES ||
	    !strstr(e.msg, "not readable"))
		goto fail;
	step++;
	if (ks_check_path(p, strlen(p), 0, &res, note, sizeof(note), &e) != 0)
		goto fail;
	free(res);
	res = NULL;
	step++;
	/* A directory we cannot write to. */
	snprintf(p, sizeof(p), "%s/ro", dir);
	mkdir(p, 0555);
	snprintf(p, sizeof(p), "%s/ro/out", dir);
	if (ks_check_output(p, strlen(p), &res, note, sizeof(note), &e) != -EACCES ||
	    !strstr(e.msg, "not writable by you"))
		goto fail;
	step++;
	/* A root-owned, safe directory we cannot write: "/" */
	if (ks_check_output("/kscope-test-out", 16, &res, note, sizeof(note), &e) != -EACCES)
		goto fail;
	step++;
	/* An existing location needs to be writable, not its parent: /tmp
	 * is fine although "/" is not writable by this user. */
	if (ks_check_output("/tmp", 4, &res, note, sizeof(note), &e) != 0)
		goto fail;
	free(res);
	res = NULL;
	step++;
	/* ... but the location itself must be writable. */
	if (ks_check_output("/", 1, &res, note, sizeof(note), &e) != -EACCES)
		goto fail;
	step++;
	/* Unreachable: a file inside a directory we cannot search. */
	snprintf(p, sizeof(p), "%s/closed", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/closed/f", dir);
	ks_test_write_file(p, "x", 0644);
	snprintf(p, sizeof(p), "%s/closed", dir);
	chmod(p, 0000);
	snprintf(p, sizeof(p), "%s/closed/f", dir);
	if (ks_check_path(p, strlen(p), 0, &res, note, sizeof(note), &e) != -EACCES ||
	    !strstr(e.msg, "cannot be reached"))
		goto fail;
	snprintf(p, sizeof(p), "%s/closed", dir);
	chmod(p, 0700);
	ks_test_rmtree(dir);
	return 0;
fail:
	fprintf(stderr, "unprivileged check step %d failed: %s\n", step, e.msg);
	snprintf(p, sizeof(p), "%s/closed", dir);
	chmod(p, 0700);
	ks_test_rmtree(dir);
	return step;
}

static void test_permissions_unprivileged(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	if (geteuid() != 0) {
		assert_int_equal(unprivileged_checks(), 0);
		return;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			_exit(99);
		_exit(unprivileged_checks());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------------ */
/* ks_check_value: messages                                            */
/* ------------------------------------------------------------------ */

struct vals {
	int64_t n;
	char *s;
	int e;
	bool f;
};

static const char *const colors[] = { "red", "green", NULL };

static void test_value_messages(void **state)
{
	struct ks_opt warm = { .name = "warm-up", .type = KS_OPT_INT, .min = 0, .max = 500 };
	struct ks_opt kern = { .name = "kernel-name", .type = KS_OPT_NAME,
			       .name_extra = KERNEL_EXTRA, .max_len = 1024 };
	struct ks_opt color = { .name = "color", .type = KS_OPT_ENUM, .choices = colors };
	struct ks_opt flag = { .name = "kill", .type = KS_OPT_FLAG };
	struct vals v = { 0 };
	char note[KS_NOTE_MAX];
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_check_value(&warm, "option --warm-up", "501", 3, &v.n,
					note, sizeof(note), &e), -EINVAL);
	assert_string_equal(e.msg, "option --warm-up: '501' is out of range; "
				   "accepted: an integer from 0 to 500");
	assert_int_equal(ks_check_value(&kern, "option --kernel-name", "a-b", 3, &v.s,
					note, sizeof(note), &e), -EINVAL);
	assert_string_equal(e.msg, "option --kernel-name: 'a-b' contains '-' at "
				   "position 2; accepted: 1 to 1024 letters, digits "
				   "and any of _|*");
	assert_int_equal(ks_check_value(&kern, "option --kernel-name", "a|b*", 4, &v.s,
					note, sizeof(note), &e), 0);
	assert_string_equal(v.s, "a|b*");
	free(v.s);
	assert_int_equal(ks_check_value(&color, "environment KSCOPE_COLOR", "blue", 4,
					&v.e, note, sizeof(note), &e), -EINVAL);
	assert_string_equal(e.msg, "environment KSCOPE_COLOR: 'blue' is not a choice; "
				   "accepted: one of red, green");
	assert_int_equal(ks_check_value(&color, "x", "green", 5, &v.e, note,
					sizeof(note), &e), 0);
	assert_int_equal(v.e, 1);
	assert_int_equal(ks_check_value(&flag, "x", "yes", 3, &v.f, note,
					sizeof(note), &e), 0);
	assert_true(v.f);
	assert_int_equal(ks_check_value(&flag, "x", "off", 3, &v.f, note,
					sizeof(note), &e), 0);
	assert_false(v.f);
	assert_int_equal(ks_check_value(&flag, "x", "maybe", 5, &v.f, note,
					sizeof(note), &e), -EINVAL);
}

static void test_dir_is_safe(void **state)
{
	struct stat st = { 0 };
	char why[256];

	(void)state;
	st.st_uid = 1000;
	st.st_mode = S_IFDIR | 0755;
	assert_true(ks_dir_is_safe(&st, 1000, why, sizeof(why)));
	st.st_uid = 0;
	assert_true(ks_dir_is_safe(&st, 1000, why, sizeof(why)));
	st.st_uid = 1001;
	assert_false(ks_dir_is_safe(&st, 1000, why, sizeof(why)));
	st.st_uid = 1000;
	st.st_mode = S_IFDIR | 0770;
	assert_false(ks_dir_is_safe(&st, 1000, why, sizeof(why)));
	st.st_mode = S_IFDIR | 0702;
	assert_false(ks_dir_is_safe(&st, 1000, why, sizeof(why)));
	st.st_mode = S_IFDIR | 01777;
	assert_true(ks_dir_is_safe(&st, 1000, why, sizeof(why)));
	st.st_uid = 0;
	assert_true(ks_dir_is_safe(&st, 1000, why, sizeof(why)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_int_range_both_sides),
		cmocka_unit_test(test_int_malformed),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_double),
		cmocka_unit_test(test_kernel_name),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_quote),
		cmocka_unit_test(test_path_basic),
		cmocka_unit_test(test_output_rules),
		cmocka_unit_test(test_permissions_unprivileged),
		cmocka_unit_test(test_value_messages),
		cmocka_unit_test(test_dir_is_safe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
