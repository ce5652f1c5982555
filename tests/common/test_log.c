/*
 * Unit tests for the log (src/common/log.c): level filtering, level
 * names, and rate limiting of a message repeated in a loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "log.h"

static size_t count_lines(const char *s, const char *needle)
{
	size_t n = 0;

	for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

static void test_levels(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	ks_log_set_stream(f);
	ks_log_set_level(KS_LOG_WARN);
	ks_error("e%d", 1);
	ks_warn("w%d", 2);
	ks_info("i%d", 3);
	ks_debug("d%d", 4);
	ks_log_set_level(KS_LOG_DEBUG);
	ks_debug("d%d", 5);
	fflush(f);
	assert_string_equal(buf, "kscope: error: e1\nkscope: warn: w2\nkscope: debug: d5\n");
	ks_log_set_stream(NULL);
	fclose(f);
	free(buf);
	assert_int_equal(ks_log_level_parse("error"), KS_LOG_ERROR);
	assert_int_equal(ks_log_level_parse("debug"), KS_LOG_DEBUG);
	assert_int_equal(ks_log_level_parse("DEBUG"), -1);
	assert_string_equal(ks_log_level_name(KS_LOG_INFO), "info");
}

static void test_ratelimit(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	ks_log_set_stream(f);
	ks_log_set_level(KS_LOG_INFO);
	for (int i = 0; i < 1000; i++)
		KS_LOG_RATELIMITED(KS_LOG_WARN, "repeated %d", i);
	ks_log_flush();
	fflush(f);
	/* The loop runs within a second or two: at most two bursts get out,
	 * and the rest is counted, not lost. */
	assert_true(count_lines(buf, "repeated") <= 2 * KS_LOG_BURST + 2);
	assert_true(count_lines(buf, "repeated") >= KS_LOG_BURST);
	assert_non_null(strstr(buf, "similar messages suppressed (\"repeated %d\")"));
	{
		unsigned long shown = count_lines(buf, "kscope: warn: repeated ");
		unsigned long dropped = 0;

		for (const char *p = buf; (p = strstr(p, "warn: ")) != NULL; p++) {
			unsigned long d;

			if (sscanf(p, "warn: %lu similar", &d) == 1)
				dropped += d;
		}
		assert_int_equal(shown + dropped, 1000);
	}
	ks_log_set_stream(NULL);
	fclose(f);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_ratelimit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
