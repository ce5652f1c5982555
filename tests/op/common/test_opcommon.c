/*
 * Unit tests for kscope op's shared code: the --kernel-name grammar
 * (src/op/common/filter.c) and the channel messages (proto.c), sent over
 * a real SOCK_SEQPACKET socketpair.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "filter.h"
#include "proto.h"

static bool matches(const char *pattern, const char *name)
{
	struct ks_op_filter *f;
	char why[256];
	bool m;

	assert_int_equal(ks_op_filter_compile(pattern, &f, why, sizeof(why)), 0);
	m = ks_op_filter_match(f, name);
	ks_op_filter_free(f);
	return m;
}

static void test_filter_match(void **state)
{
	(void)state;
	/* Prefix match. */
	assert_true(matches("mm", "mm_naive"));
	assert_true(matches("mm_naive", "mm_naive"));
	assert_false(matches("mm_naive_x", "mm_naive"));
	assert_false(matches("naive", "mm_naive"));
	/* Alternatives. */
	assert_true(matches("vadd|mm_tiled", "mm_tiled"));
	assert_true(matches("vadd|mm_tiled", "vadd"));
	assert_false(matches("vadd|mm_tiled", "mm_naive"));
	/* Wildcards, with backtracking. */
	assert_true(matches("*add", "vadd"));
	assert_true(matches("*add", "add"));
	assert_false(matches("*add", "vad"));
	assert_true(matches("m*_t*d", "mm_tiled"));
	assert_true(matches("a*b*c", "axxbxxbyc"));
	assert_false(matches("a*b*c", "axxbxxby"));
	assert_true(matches("*", "anything"));
	assert_true(matches("**x", "abx"));
	/* A NULL filter matches every name. */
	assert_true(ks_op_filter_match(NULL, "x"));
}

static void expect_bad(const char *pattern, const char *needle)
{
	struct ks_op_filter *f = (struct ks_op_filter *)1;
	char why[256];

	assert_int_equal(ks_op_filter_compile(pattern, &f, why, sizeof(why)), -EINVAL);
	assert_null(f);
	if (!strstr(why, needle))
		fail_msg("'%s': '%s' lacks '%s'", pattern, why, needle);
}

static void test_filter_bad(void **state)
{
	char long_name[KS_OP_FILTER_MAX + 2];

	(void)state;
	expect_bad("", "1 to 1024");
	expect_bad("a|", "empty alternative");
	expect_bad("|a", "empty alternative");
	expect_bad("a||b", "empty alternative");
	expect_bad("a-b", "'-' at position 2");
	expect_bad("a\tb", "byte 0x09 at position 2");
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	expect_bad(long_name, "1025 characters");
	long_name[KS_OP_FILTER_MAX] = '\0';
	assert_true(matches(long_name, long_name));
}

static void test_msg_roundtrip(void **state)
{
	struct ks_op_msg *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	char v[64], type[16];
	size_t pos = 0;
	int sv[2];

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	ks_op_msg_init(a, "config");
	ks_op_msg_add(a, "mode", "kernel");
	ks_op_msg_addu(a, "passes", 10);
	ks_op_msg_add(a, "dir", "/tmp/a b\nc");	/* newline made a space */
	ks_op_msg_add(a, "k", "1");
	ks_op_msg_add(a, "k", "2");
	ks_op_msg_add(a, "empty", "");
	assert_int_equal(ks_op_send(sv[0], a), 0);
	assert_int_equal(ks_op_recv(sv[1], b), 0);
	assert_true(ks_op_msg_is(b, "config"));
	assert_false(ks_op_msg_is(b, "conf"));
	ks_op_msg_type(b, type, sizeof(type));
	assert_string_equal(type, "config");
	assert_string_equal(ks_op_msg_get(b, "mode", NULL, v, sizeof(v)), "kernel");
	assert_int_equal(ks_op_msg_getu(b, "passes", 0), 10);
	assert_int_equal(ks_op_msg_getu(b, "mode", 7), 7);	/* not a number */
	assert_int_equal(ks_op_msg_getu(b, "absent", 3), 3);
	assert_string_equal(ks_op_msg_get(b, "dir", NULL, v, sizeof(v)), "/tmp/a b c");
	assert_string_equal(ks_op_msg_get(b, "empty", NULL, v, sizeof(v)), "");
	assert_null(ks_op_msg_get(b, "mod", NULL, v, sizeof(v)));
	/* Repeated keys in order. */
	assert_string_equal(ks_op_msg_get(b, "k", &pos, v, sizeof(v)), "1");
	assert_string_equal(ks_op_msg_get(b, "k", &pos, v, sizeof(v)), "2");
	assert_null(ks_op_msg_get(b, "k", &pos, v, sizeof(v)));
	/* Truncated copy of a long value. */
	assert_string_equal(ks_op_msg_get(b, "mode", NULL, v, 4), "ker");
	/* The peer going away. */
	close(sv[0]);
	assert_int_equal(ks_op_recv(sv[1], b), -ECONNRESET);
	assert_int_equal(ks_op_send(sv[1], a), -ECONNRESET);
	close(sv[1]);
	free(a);
	free(b);
}

static void test_msg_limits(void **state)
{
	struct ks_op_msg *m = malloc(sizeof(*m));
	char *big = malloc(KS_OP_MSG_MAX);
	int sv[2];

	(void)state;
	assert_non_null(m);
	assert_non_null(big);
	memset(big, 'x', KS_OP_MSG_MAX - 1);
	big[KS_OP_MSG_MAX - 1] = '\0';
	ks_op_msg_init(m, "launch");
	ks_op_msg_add(m, "name", big);
	assert_true(m->overflow);
	assert_int_equal(ks_op_send(-1, m), -EMSGSIZE);
	/* Datagrams that are not messages are refused. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(send(sv[0], "no newline", 10, 0), 10);
	assert_int_equal(ks_op_recv(sv[1], m), -EBADMSG);
	assert_int_equal(send(sv[0], "a\0b\n", 4, 0), 4);
	assert_int_equal(ks_op_recv(sv[1], m), -EBADMSG);
	close(sv[0]);
	close(sv[1]);
	free(big);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filter_match),
		cmocka_unit_test(test_filter_bad),
		cmocka_unit_test(test_msg_roundtrip),
		cmocka_unit_test(test_msg_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
