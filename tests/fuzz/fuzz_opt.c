/*
 * libFuzzer target for option parsing and checking.
 *
 * The input is split at NUL bytes into arguments.  Its first byte picks
 * the table: kscope's real command tables, or a table with one
 * option of every type.  Arguments of the form "=NAME=VALUE" become
 * environment variables.  Any input must parse or be rejected with a
 * message, with no crash and no leak, and nothing may be written.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck.h"
#include "cli.h"
#include "opt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct all_opts {
	struct ks_common_opts common;
	int64_t i, z;
	double d;
	int e;
	char *name, *text, *path, *dir, *exe, *out;
	struct ks_strlist rep;
	bool flag;
};

static const char *const choices[] = { "a", "bb", "ccc", NULL };

static const struct ks_opt all_table[] = {
	{ .name = "int", .short_name = 'i', .type = KS_OPT_INT, .def = "3",
	  .env = "KSCOPE_F_INT", .help = "i",
	  .offset = offsetof(struct all_opts, i), .min = -5, .max = 100 },
	{ .name = "size", .type = KS_OPT_SIZE, .def = "64", .env = "KSCOPE_F_SIZE",
	  .help = "z", .offset = offsetof(struct all_opts, z), .min = 8, .max = 1 << 20 },
	{ .name = "num", .type = KS_OPT_DOUBLE, .env = "KSCOPE_F_NUM", .help = "d",
	  .offset = offsetof(struct all_opts, d), .dmin = -1, .dmax = 1e6 },
	{ .name = "choice", .type = KS_OPT_ENUM, .def = "a", .env = "KSCOPE_F_CHOICE",
	  .help = "e", .offset = offsetof(struct all_opts, e), .choices = choices },
	{ .name = "kernel-name", .short_name = 'k', .type = KS_OPT_NAME,
	  .env = "KSCOPE_F_KERNEL", .help = "n", .offset = offsetof(struct all_opts, name),
	  .name_extra = "_|*", .max_len = 1024 },
	{ .name = "text", .type = KS_OPT_STRING, .env = "KSCOPE_F_TEXT", .help = "t",
	  .offset = offsetof(struct all_opts, text), .max_len = 64 },
	{ .name = "file", .type = KS_OPT_PATH, .env = "KSCOPE_F_FILE", .help = "p",
	  .offset = offsetof(struct all_opts, path), .flags = KS_PATH_FILE | KS_PATH_READ },
	{ .name = "dir", .type = KS_OPT_PATH, .env = "KSCOPE_F_DIR", .help = "p",
	  .offset = offsetof(struct all_opts, dir), .flags = KS_PATH_DIR },
	{ .name = "exe", .type = KS_OPT_PATH, .env = "KSCOPE_F_EXE", .help = "x",
	  .offset = offsetof(struct all_opts, exe), .flags = KS_PATH_EXEC },
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT,
	  .env = "KSCOPE_F_OUTPUT", .help = "o", .offset = offsetof(struct all_opts, out) },
	{ .name = "rep", .type = KS_OPT_STRING, .env = "KSCOPE_F_REP", .help = "r",
	  .offset = offsetof(struct all_opts, rep), .flags = KS_OPT_REPEAT },
	{ .name = "flag", .short_name = 'f', .type = KS_OPT_FLAG, .env = "KSCOPE_F_FLAG",
	  .help = "f", .offset = offsetof(struct all_opts, flag) },
	KS_COMMON_OPTS(struct all_opts),
	KS_OPT_END
};

static const struct ks_opt all_pos = {
	.name = "ARG", .type = KS_OPT_STRING, .metavar = "ARG", .max_len = 32,
};

static const struct ks_cmd_args all_args = {
	.opts = all_table, .opts_size = sizeof(struct all_opts),
	.positional = &all_pos, .pos_min = 0, .pos_max = 3, .takes_program = true,
};

#define MAX_ARGS 64
#define MAX_ENV 8

static char argv0[] = "fuzz";
static char *env_name[MAX_ENV], *env_value[MAX_ENV];
static int nenv;

static const char *fuzz_getenv(const char *name)
{
	for (int i = 0; i < nenv; i++)
		if (strcmp(env_name[i], name) == 0)
			return env_value[i];
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct ks_cmd_args *args;
	char *copy, *argv[MAX_ARGS + 1];
	struct ks_parsed p;
	struct ks_err err;
	int argc = 0;
	size_t start;

	if (size < 1)
		return 0;
	switch (data[0] % 9) {
	case 0: args = &all_args; break;
	case 1: args = &ks_cmd_inspect.args; break;
	case 2: args = &ks_cmd_pack.args; break;
	case 3: args = &ks_cmd_sample.args; break;
	case 4: args = &ks_cmd_memcheck.args; break;
	case 5: args = &ks_cmd_falseshare.args; break;
	case 6: args = &ks_cmd_op.args; break;
	case 7: args = &ks_cmd_calibrate.args; break;
	default: args = &ks_cmd_report.args; break;
	}
	copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = '\0';
	nenv = 0;
	argv[argc++] = argv0;
	start = 0;
	for (size_t k = 0; k < size; k++) {
		if (copy[k] != '\0')
			continue;
		{
			char *a = copy + start;
			char *eq = a[0] == '=' ? strchr(a + 1, '=') : NULL;

			if (eq && nenv < MAX_ENV) {
				*eq = '\0';
				env_name[nenv] = a + 1;
				env_value[nenv++] = eq + 1;
			} else if (argc < MAX_ARGS) {
				argv[argc++] = a;
			}
		}
		start = k + 1;
	}
	argv[argc] = NULL;
	if (ks_opt_parse(args, argc, argv, fuzz_getenv, &p, &err) == 0)
		ks_opt_release(args, &p);
	else if (err.msg[0] == '\0')
		abort(); /* a rejection always says why */
	free(copy);
	return 0;
}
