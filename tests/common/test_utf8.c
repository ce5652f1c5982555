/*
 * Unit tests for UTF-8 validation and repair (src/common/utf8.c) and the
 * JSON string writer that rests on it (ks_text_json_str, textout.c):
 * the sequences RFC 3629 allows and those it does not, the bound on how
 * far a sequence may run, and the repair of each bad byte into the
 * character with its value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "textout.h"
#include "utf8.h"

static size_t len_of(const char *s, size_t left)
{
	return ks_utf8_len((const unsigned char *)s, left);
}

static void test_len(void **state)
{
	(void)state;
	assert_int_equal(len_of("a", SIZE_MAX), 1);
	assert_int_equal(len_of("\xc3\xa9", SIZE_MAX), 2);         /* U+00E9 */
	assert_int_equal(len_of("\xe2\x82\xac", SIZE_MAX), 3);     /* U+20AC */
	assert_int_equal(len_of("\xf0\x9f\x98\x80", SIZE_MAX), 4); /* U+1F600 */
	assert_int_equal(len_of("\xf4\x8f\xbf\xbf", SIZE_MAX), 4); /* U+10FFFF */
	assert_int_equal(len_of("\xed\x9f\xbf", SIZE_MAX), 3);     /* U+D7FF */
	/* overlong forms */
	assert_int_equal(len_of("\xc0\x80", SIZE_MAX), 0);
	assert_int_equal(len_of("\xc1\xbf", SIZE_MAX), 0);
	assert_int_equal(len_of("\xe0\x9f\xbf", SIZE_MAX), 0);
	assert_int_equal(len_of("\xf0\x8f\xbf\xbf", SIZE_MAX), 0);
	/* surrogates, and above U+10FFFF */
	assert_int_equal(len_of("\xed\xa0\x80", SIZE_MAX), 0);
	assert_int_equal(len_of("\xf4\x90\x80\x80", SIZE_MAX), 0);
	assert_int_equal(len_of("\xf5\x80\x80\x80", SIZE_MAX), 0);
	/* a lone continuation byte, a lead byte followed by ASCII or NUL */
	assert_int_equal(len_of("\x80", SIZE_MAX), 0);
	assert_int_equal(len_of("\xc3" "a", SIZE_MAX), 0);
	assert_int_equal(len_of("\xe2\x82", SIZE_MAX), 0);
	/* the bound: a sequence may not run past it */
	assert_int_equal(len_of("\xe2\x82\xac", 2), 0);
	assert_int_equal(len_of("\xe2\x82\xac", 3), 3);
	assert_int_equal(len_of("\xc3\xa9", 1), 0);
	assert_int_equal(len_of("a", 0), 0);
}

static void test_valid(void **state)
{
	(void)state;
	assert_true(ks_utf8_valid("caf\xc3\xa9", 5));
	assert_true(ks_utf8_valid("", 0));
	assert_false(ks_utf8_valid("caf\xe9", 4));
	/* cut inside the character */
	assert_false(ks_utf8_valid("caf\xc3\xa9", 4));
	/* a NUL inside the bytes is not text */
	assert_false(ks_utf8_valid("a\0b", 3));
}

static void test_fix(void **state)
{
	size_t n = 99;
	char *s;

	(void)state;
	s = ks_utf8_fix("caf\xe9", 4, &n);
	assert_string_equal(s, "caf\xc3\xa9");
	assert_int_equal(n, 5);
	free(s);
	/* valid sequences kept, each bad byte mapped on its own, NUL to '?' */
	s = ks_utf8_fix("\xe2\x82\xac\xff\xc3\0x", 7, &n);
	assert_string_equal(s, "\xe2\x82\xac\xc3\xbf\xc3\x83?x");
	assert_int_equal(n, 9);
	assert_true(ks_utf8_valid(s, n));
	free(s);
	s = ks_utf8_fix("", 0, NULL);
	assert_string_equal(s, "");
	free(s);
}

static int sink(void *ctx, const void *buf, size_t len)
{
	char **out = ctx;
	size_t have = *out ? strlen(*out) : 0;
	char *p = realloc(*out, have + len + 1);

	if (!p)
		return -1;
	memcpy(p + have, buf, len);
	p[have + len] = '\0';
	*out = p;
	return 0;
}

static void test_json_str(void **state)
{
	struct ks_text t;
	char *out = NULL;

	(void)state;
	assert_int_equal(ks_text_open(&t, sink, &out), 0);
	ks_text_json_str(&t, "caf\xc3\xa9 caf\xe9 \"q\"\n\xed\xa0\x80");
	assert_int_equal(ks_text_close(&t), 0);
	assert_string_equal(out, "\"caf\xc3\xa9 caf\\u00e9 \\\"q\\\"\\n\\u00ed\\u00a0\\u0080\"");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_len),
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_fix),
		cmocka_unit_test(test_json_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
