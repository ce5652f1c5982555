/*
 * libFuzzer target for kscope tune's five parsers (src/tune): the first
 * byte of the input picks one (modulo 5), the rest is its text.
 *   0  the search space (space.c): a refused space leaves *out NULL and a
 *      one-line message; an accepted one passes ks_tune_space_check, and
 *      its labels are built for every configuration
 *   1  the source's tunable lines (source.c): a refused source gives a
 *      one-line message naming "k.c:LINE"; an accepted one has every value
 *      inside its own line, lines in order, and its variant with no key
 *      set is the input byte for byte; with the value "V" for every line,
 *      the variant is as long as predicted
 *   2  a build command (command.c): a refused one gives a one-line
 *      message; an accepted one expands to as many arguments as words,
 *      none holding the placeholder mark
 *   3  a --restrict expression (restrict.c) over each configuration of a
 *      space of an integer key, a text key and huge integers: a refused
 *      one (syntax, a text value, overflow) gives a one-line message
 *   4  a --cache entry (cache.c): a refused one gives a one-line message
 *      and leaves the entry empty; an accepted one has 1 to 1000 samples,
 *      each from 0 to 1e18, and no more program-timed runs than runs
 * Nothing may crash, read out of bounds or leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tune_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void one_line(const char *msg)
{
	if (!msg[0] || strchr(msg, '\n'))
		abort();
}

static void fuzz_space(const char *text, size_t len)
{
	struct ks_tune_space *s = NULL;
	struct ks_err e;
	char err[1024] = "", label[256];

	if (ks_tune_space_parse(text, len, "s.json", &s, err, sizeof(err)) != 0) {
		if (s)
			abort();
		one_line(err);
		return;
	}
	if (!s || ks_tune_space_check(s, &e) != 0)
		abort();
	for (size_t c = 0; c < s->nconfigs && c < 1000; c++)
		ks_tune_space_label(s, c, label, sizeof(label));
	ks_tune_space_free(s);
}

static void fuzz_source(const char *text, size_t len)
{
	char key[] = "K", val[] = "V";
	char *keys[] = { key }, *values[] = { val };
	struct ks_tune_space sp = { .nkeys = 1, .nconfigs = 1, .keys = keys,
				    .values = values };
	struct ks_tune_source s;
	struct ks_err e;
	size_t prev_end = 0, want, outlen;
	char *out;

	ks_err_clear(&e);
	if (ks_tune_source_scan(text, len, "k.c", &s, &e) != 0) {
		if (strncmp(e.msg, "k.c:", 4) != 0 && !strstr(e.msg, "out of memory"))
			abort();
		one_line(e.msg);
		return;
	}
	want = len;
	for (size_t i = 0; i < s.nlines; i++) {
		const struct ks_tune_line *l = &s.lines[i];

		if (l->vstart >= l->vend || l->vend > len || l->vstart < prev_end ||
		    memchr(text + l->vstart, '\n', l->vend - l->vstart) || !l->key[0])
			abort();
		prev_end = l->vend;
		want = want - (l->vend - l->vstart) + 1;
	}
	if (ks_tune_source_variant(&s, &sp, 0, &out, &outlen) == 0) {
		if (outlen != len || memcmp(out, text, len) != 0)
			abort();
		free(out);
	}
	for (size_t i = 0; i < s.nlines; i++)
		s.lines[i].key_index = 0;
	if (ks_tune_source_variant(&s, &sp, 0, &out, &outlen) == 0) {
		if (outlen != want)
			abort();
		free(out);
	}
	ks_tune_source_free(&s);
}

static void fuzz_command(const char *text)
{
	static const char *const vals[KS_TUNE_PH_COUNT] = { "/s", "/e", "/d", "/sd" };
	struct ks_tune_cmd c;
	struct ks_err e;
	char **argv;
	size_t n = 0;

	ks_err_clear(&e);
	if (ks_tune_cmd_parse(text, "--build", &c, &e) != 0) {
		one_line(e.msg);
		if (c.words)
			abort();
		return;
	}
	argv = ks_tune_cmd_expand(&c, vals);
	if (argv) {
		for (; argv[n]; n++)
			if (strchr(argv[n], '\x01'))
				abort();
		if (n != c.nwords)
			abort();
		ks_tune_argv_free(argv);
	}
	ks_tune_cmd_free(&c);
}

static void fuzz_restrict(const char *text)
{
	static const char space[] =
		"{\"TILE\": [0, 16, -3], \"MODE\": [\"fast\", \"x y\"], "
		"\"BIG\": [9223372036854775807, -9223372036854775807]}";
	struct ks_tune_space *s = NULL;
	char err[1024] = "";

	if (ks_tune_space_parse(space, sizeof(space) - 1, "s.json", &s, err, sizeof(err)) != 0)
		abort();
	for (size_t c = 0; c < s->nconfigs; c++) {
		struct ks_err e;
		bool keep = false;

		if (ks_tune_restrict_eval(text, s, c, &keep, &e) != 0)
			one_line(e.msg);
	}
	ks_tune_space_free(s);
}

static void fuzz_cache(const char *text, size_t len)
{
	struct ks_tune_cache_entry e;
	struct ks_err err;

	ks_err_clear(&err);
	if (ks_tune_cache_parse(text, len, len % 2 ? "k" : NULL, &e, &err) != 0) {
		one_line(err.msg);
		if (e.samples || e.message || e.runs)
			abort();
		return;
	}
	if (e.runs < 1 || e.runs > 1000 || e.program_timed > e.runs || !e.message)
		abort();
	for (size_t i = 0; i < e.runs; i++)
		if (!(e.samples[i] >= 0 && e.samples[i] < 1e18))
			abort();
	ks_tune_cache_entry_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	if (size < 1 || size > 65536)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 5) {
	case 0:
		fuzz_space(text, size - 1);
		break;
	case 1:
		fuzz_source(text, size - 1);
		break;
	case 2:
		fuzz_command(text);
		break;
	case 3:
		fuzz_restrict(text);
		break;
	default:
		fuzz_cache(text, size - 1);
		break;
	}
	free(text);
	return 0;
}
