/*
 * Test driver of the .kpp language: builds a model file with
 * ks_pred_parse_file (or, with --max-steps, the in-memory entry of
 * src/predict/kpp.h), then with --schedule runs it and prints the
 * schedule, one instruction a line:
 *
 *     ID<TAB>NAME<TAB>PIPE<TAB>START<TAB>END<TAB>LOCATION
 *
 * times with 17 significant digits (exact for a double), then
 * "cycles<TAB>TOTAL".  A model the language refuses prints its message
 * on stderr and exits 2, as `kscope predict` does; a failed schedule
 * exits 1.
 *
 *   kpp_driver [--chip C] [-D KEY=VALUE]... [--ignore-unknown]
 *              [--max-steps N] [--schedule] MODEL.kpp
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kpp.h"
#include "readfile.h"

#define MAX_KEYS 64

static int usage(void)
{
	fprintf(stderr, "usage: kpp_driver [--chip C] [-D KEY=VALUE]... [--ignore-unknown] "
			"[--max-steps N] [--schedule] MODEL.kpp\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *keys[MAX_KEYS], *values[MAX_KEYS], *chip = NULL, *path = NULL;
	char keybuf[MAX_KEYS][KS_PRED_MAX_NAME + 2], err[4096];
	unsigned flags = 0;
	unsigned long long max_steps = 0;
	int schedule = 0, rc = 0;
	size_t n = 0;
	struct ks_pred_model *m;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--chip") == 0 && i + 1 < argc) {
			chip = argv[++i];
		} else if (strcmp(argv[i], "-D") == 0 && i + 1 < argc && n < MAX_KEYS) {
			const char *kv = argv[++i], *eq = strchr(kv, '=');

			if (!eq || (size_t)(eq - kv) > KS_PRED_MAX_NAME + 1)
				return usage();
			snprintf(keybuf[n], sizeof(keybuf[n]), "%.*s", (int)(eq - kv), kv);
			keys[n] = keybuf[n];
			values[n++] = eq + 1;
		} else if (strcmp(argv[i], "--ignore-unknown") == 0) {
			flags |= KS_PRED_PARSE_IGNORE_UNKNOWN;
		} else if (strcmp(argv[i], "--max-steps") == 0 && i + 1 < argc) {
			max_steps = strtoull(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--schedule") == 0) {
			schedule = 1;
		} else if (argv[i][0] == '-' || path) {
			return usage();
		} else {
			path = argv[i];
		}
	}
	if (!path)
		return usage();
	if (max_steps) {
		struct ks_kpp_opts o = {
			.chip = chip, .keys = keys, .values = values, .n = n, .flags = flags,
			.max_steps = max_steps,
		};
		struct ks_err e;
		char *text;
		size_t len;

		if (ks_read_file_at(AT_FDCWD, path, 0, KS_KPP_MAX_FILE, &text, &len, &e)) {
			fprintf(stderr, "%s\n", e.msg);
			return 2;
		}
		m = ks_kpp_parse(path, text, len, &o, err, sizeof(err));
		free(text);
	} else {
		m = ks_pred_parse_file(path, chip, keys, values, n, flags, err, sizeof(err));
	}
	if (!m) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	if (schedule) {
		double cycles = 0;

		if (ks_pred_run(m, &cycles)) {
			fprintf(stderr, "%s\n", ks_pred_error(m));
			rc = 1;
			goto out;
		}
		for (size_t i = 0; i < ks_pred_count(m); i++) {
			struct ks_pred_slice s;

			if (ks_pred_slice(m, (int)i, &s)) {
				fprintf(stderr, "no slice for instruction %zu\n", i);
				rc = 1;
				goto out;
			}
			printf("%zu\t%s\t%s\t%.17g\t%.17g\t%s\n", i, s.name, s.pipe, s.start, s.end,
			       s.location);
		}
		printf("cycles\t%.17g\n", cycles);
	}
out:
	ks_pred_model_free(m);
	return rc;
}
