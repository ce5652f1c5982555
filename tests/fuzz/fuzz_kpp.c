/*
 * libFuzzer target for the .kpp model language (src/predict/kpp*.c): the
 * input is a model file, built on the test chip (tests/predict/lang/chips/
 * kpptest.json, which replaces any chip statement) with a small statement
 * budget so that loops stay short.  Nothing may crash, read out of bounds
 * or leak; a refused model's message must be one line that starts with
 * "fuzz.kpp:LINE:COLUMN: "; an accepted model is scheduled and its slices
 * must be in order (start <= end).  Models that declare params are built
 * a second time with values given from outside.  The same bytes are also
 * read as a --measured file (src/predict/measured.c: kscope op's
 * Timing.csv, "Pipe,Time (us)", msprof's op_summary and PipeUtilization):
 * a refusal is one line naming the file; accepted times are not negative.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kpp.h"
#include "pred_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_message(const char *err)
{
	const char *p = err;

	if (strstr(err, "out of memory"))
		return;
	if (strncmp(p, "fuzz.kpp:", 9) != 0)
		abort();
	p += 9;
	for (int field = 0; field < 2; field++) {
		if (!isdigit((unsigned char)*p))
			abort();
		while (isdigit((unsigned char)*p))
			p++;
		if (*p++ != ':')
			abort();
	}
	if (*p != ' ' || !p[1] || strchr(err, '\n'))
		abort();
}

static void build(const char *text, size_t size, const char *const *keys,
		  const char *const *values, size_t n)
{
	struct ks_kpp_opts o = {
		.chip = KS_FUZZ_KPP_CHIP, .keys = keys, .values = values, .n = n,
		.flags = KS_PRED_PARSE_IGNORE_UNKNOWN, .max_steps = 20000,
	};
	char err[1024];
	struct ks_pred_model *m = ks_kpp_parse("fuzz.kpp", text, size, &o, err, sizeof(err));
	double cycles;

	if (!m) {
		check_message(err);
		return;
	}
	if (ks_pred_run(m, &cycles) == 0) {
		for (size_t i = 0; i < ks_pred_count(m); i++) {
			struct ks_pred_slice s;

			if (ks_pred_slice(m, (int)i, &s) || !(s.start <= s.end) || s.end > cycles)
				abort();
		}
	}
	ks_pred_model_free(m);
}

static void measured(const uint8_t *data, size_t size)
{
	struct pred_measured *o = calloc(1, sizeof(*o));
	char *text = malloc(size + 1);
	struct ks_err e;

	if (!o || !text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	o->total_us = -1;
	if (pred_measured_parse("fuzz.csv", text, o, &e)) {
		if (strncmp(e.msg, "--measured fuzz.csv: ", 21) && !strstr(e.msg, "out of memory"))
			abort();
		if (strchr(e.msg, '\n'))
			abort();
	} else {
		if (o->n > PRED_MAX_PIPES)
			abort();
		for (size_t i = 0; i < o->n; i++)
			if (!(o->us[i] >= 0))
				abort();
	}
	free(text);
	free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const keys[] = { "N", "TILE", "T", "K", "M" };
	static const char *const values[] = { "3", "-2", "9223372036854775807", "x", "0" };

	if (size > 65536)
		return 0;
	build((const char *)data, size, NULL, NULL, 0);
	measured(data, size);
	if (memmem(data, size, "param", 5))
		build((const char *)data, size, keys, values, sizeof(keys) / sizeof(keys[0]));
	return 0;
}
