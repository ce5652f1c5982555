/*
 * Unit tests for the number writers of src/common/textout.c: the JSON
 * and CSV numbers of every deliverable are "%.*f" as printf writes it,
 * byte for byte, whether written by printf or by the fast path beside
 * it.  Millions of values across magnitudes and precisions, ties and
 * near-ties, negatives and the values that must go to printf.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "textout.h"

struct buf {
	char s[512];
	size_t n;
};

static int sink(void *ctx, const void *data, size_t len)
{
	struct buf *b = ctx;

	assert_true(b->n + len < sizeof(b->s));
	memcpy(b->s + b->n, data, len);
	b->n += len;
	b->s[b->n] = '\0';
	return 0;
}

/* ks_text_json_num and ks_csv_num of v against snprintf. */
static void check_one(double v, int prec)
{
	struct buf b = { .n = 0 };
	struct ks_text t;
	char want[512];

	if (v == 0)
		v = 0;
	snprintf(want, sizeof(want), "%.*f", prec, v);
	assert_int_equal(ks_text_open(&t, sink, &b), 0);
	ks_text_json_num(&t, v, prec);
	assert_int_equal(ks_text_close(&t), 0);
	if (strcmp(b.s, want) != 0)
		fail_msg("%.17g at %d: \"%s\", printf \"%s\"", v, prec, b.s, want);
	b.n = 0;
	assert_int_equal(ks_text_open(&t, sink, &b), 0);
	ks_csv_num(&t, v, prec);
	assert_int_equal(ks_text_close(&t), 0);
	assert_true(b.s[0] == ',');
	if (strcmp(b.s + 1, want) != 0)
		fail_msg("csv %.17g at %d: \"%s\", printf \"%s\"", v, prec, b.s + 1, want);
}

static void test_edges(void **state)
{
	static const double vals[] = {
		0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.125, 0.375, 1e-7, -1e-7, 0.0049999,
		0.005, 0.015, 0.025, 1.005, 2.675, 123456.5, 999999.9999995,
		1099511.627776, 1e12, 1.5e15, 1e300, -1e300, 4.9e-324, 0.1, 0.7,
		9.9999999995, 1234567.8915, 42,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		for (int p = 0; p <= 12; p++)
			check_one(vals[i], p);
}

static void test_random(void **state)
{
	uint64_t x = 0x9E3779B97F4A7C15ULL;

	(void)state;
	for (int i = 0; i < 2000000; i++) {
		double mant, v;
		int e, prec;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		mant = (double)(x >> 11) / 9007199254740992.0;
		e = (int)(x % 40) - 20;
		prec = (int)((x >> 8) % 10);
		v = ldexp(mant, e * 2) * ((x >> 5) & 1 ? -1 : 1);
		check_one(v, prec);
		/* Values on a grid of the precision, and a hair off it. */
		v = floor(mant * 1e6) / pow(10, prec) + 0.5 / pow(10, prec);
		check_one(v, prec);
		check_one(nextafter(v, 0), prec);
		check_one(nextafter(v, 1e300), prec);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edges),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
