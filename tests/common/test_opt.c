/*
 * Unit tests for option tables (src/common/opt.c): where values come from
 * (command line > environment > default), every parse error, positional
 * arguments and programs, help generated from the table, and hints.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opt.h"
#include "test_util.h"

struct t_opts {
	struct ks_common_opts common;
	int64_t count;
	int64_t size;
	double delay;
	int mode;
	char *kernel;
	char *label;
	char *input;
	char *output;
	struct ks_strlist tags;
	bool kill;
};

static const char *const modes[] = { "kernel", "application", "range", NULL };

static const struct ks_opt t_table[] = {
	{ .name = "launch-count", .short_name = 'c', .type = KS_OPT_INT, .metavar = "N",
	  .def = "1", .env = "KSCOPE_LAUNCH_COUNT", .help = "kernels to collect",
	  .offset = offsetof(struct t_opts, count), .min = 1, .max = 100 },
	{ .name = "line-size", .type = KS_OPT_SIZE, .metavar = "BYTES", .def = "64",
	  .env = "KSCOPE_LINE_SIZE", .help = "cache line size",
	  .offset = offsetof(struct t_opts, size), .min = 8, .max = 4096 },
	{ .name = "delay", .type = KS_OPT_DOUBLE, .metavar = "SEC", .def = "0",
	  .env = "KSCOPE_DELAY", .help = "seconds before sampling",
	  .offset = offsetof(struct t_opts, delay), .dmin = 0, .dmax = 3600 },
	{ .name = "replay-mode", .type = KS_OPT_ENUM, .metavar = "MODE", .def = "kernel",
	  .env = "KSCOPE_REPLAY_MODE", .help = "how kernels are replayed",
	  .offset = offsetof(struct t_opts, mode), .choices = modes },
	{ .name = "kernel-name", .short_name = 'k', .type = KS_OPT_NAME, .metavar = "NAME",
	  .env = "KSCOPE_KERNEL_NAME", .help = "kernels to profile",
	  .offset = offsetof(struct t_opts, kernel), .name_extra = "_|*",
	  .max_len = 1024 },
	{ .name = "label", .type = KS_OPT_STRING, .env = "KSCOPE_LABEL",
	  .help = "free text", .offset = offsetof(struct t_opts, label), .max_len = 16 },
	{ .name = "input", .type = KS_OPT_PATH, .metavar = "FILE", .env = "KSCOPE_INPUT",
	  .help = "an input file", .offset = offsetof(struct t_opts, input),
	  .flags = KS_PATH_FILE | KS_PATH_READ },
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR",
	  .env = "KSCOPE_OUTPUT", .help = "where results go",
	  .offset = offsetof(struct t_opts, output) },
	{ .name = "tag", .type = KS_OPT_NAME, .env = "KSCOPE_TAG", .help = "a tag",
	  .offset = offsetof(struct t_opts, tags), .flags = KS_OPT_REPEAT },
	{ .name = "kill", .type = KS_OPT_FLAG, .env = "KSCOPE_KILL",
	  .help = "stop the program after collection",
	  .offset = offsetof(struct t_opts, kill) },
	KS_COMMON_OPTS(struct t_opts),
	KS_OPT_END
};

static const struct ks_opt t_positional = {
	.name = "FILE", .type = KS_OPT_PATH, .metavar = "FILE", .flags = KS_PATH_FILE,
};

static const struct ks_cmd_args args_plain = {
	.opts = t_table, .opts_size = sizeof(struct t_opts),
};
static const struct ks_cmd_args args_pos = {
	.opts = t_table, .opts_size = sizeof(struct t_opts),
	.positional = &t_positional, .pos_min = 1, .pos_max = 2,
};
static const struct ks_cmd_args args_prog = {
	.opts = t_table, .opts_size = sizeof(struct t_opts), .takes_program = true,
};

/* A fake environment for the tests. */
static const char *env_names[8];
static const char *env_values[8];

static const char *fake_getenv(const char *name)
{
	for (int i = 0; i < 8 && env_names[i]; i++)
		if (strcmp(env_names[i], name) == 0)
			return env_values[i];
	return NULL;
}

static void set_env(const char *name, const char *value)
{
	memset(env_names, 0, sizeof(env_names));
	env_names[0] = name;
	env_values[0] = value;
}

static int parse(const struct ks_cmd_args *a, struct ks_parsed *p,
		 struct ks_err *e, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	va_start(ap, e);
	argv[argc++] = (char *)(uintptr_t)"test";
	while ((argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	return ks_opt_parse(a, argc, argv, fake_getenv, p, e);
}

static int setup(void **state)
{
	(void)state;
	memset(env_names, 0, sizeof(env_names));
	return 0;
}

static void test_defaults(void **state)
{
	struct ks_parsed p;
	struct ks_err e;
	struct t_opts *o;

	(void)state;
	assert_int_equal(parse(&args_plain, &p, &e, NULL), 0);
	o = p.opts;
	assert_int_equal(o->count, 1);
	assert_int_equal(o->size, 64);
	assert_true(o->delay == 0.0);
	assert_int_equal(o->mode, 0);
	assert_null(o->kernel);
	assert_null(o->output);
	assert_int_equal(o->tags.n, 0);
	assert_false(o->kill);
	assert_int_equal(o->common.log_level, 2); /* info */
	ks_opt_release(&args_plain, &p);
}

static void test_precedence(void **state)
{
	struct ks_parsed p;
	struct ks_err e;

	(void)state;
	set_env("KSCOPE_LAUNCH_COUNT", "7");
	assert_int_equal(parse(&args_plain, &p, &e, NULL), 0);
	assert_int_equal(((struct t_opts *)p.opts)->count, 7);
	ks_opt_release(&args_plain, &p);
	assert_int_equal(parse(&args_plain, &p, &e, "--launch-count", "9", NULL), 0);
	assert_int_equal(((struct t_opts *)p.opts)->count, 9);
	ks_opt_release(&args_plain, &p);
	/* A bad environment value is rejected and named as such. */
	set_env("KSCOPE_LAUNCH_COUNT", "0");
	assert_int_equal(parse(&args_plain, &p, &e, NULL), -EINVAL);
	assert_string_equal(e.msg, "environment KSCOPE_LAUNCH_COUNT (for --launch-count): "
				   "'0' is out of range; accepted: an integer from 1 to 100");
	/* ... unless the command line overrides it. */
	assert_int_equal(parse(&args_plain, &p, &e, "-c", "3", NULL), 0);
	ks_opt_release(&args_plain, &p);
	set_env("KSCOPE_KILL", "yes");
	assert_int_equal(parse(&args_plain, &p, &e, NULL), 0);
	assert_true(((struct t_opts *)p.opts)->kill);
	ks_opt_release(&args_plain, &p);
	set_env("KSCOPE_HELP", "1"); /* hidden: only for passing on */
	assert_int_equal(parse(&args_plain, &p, &e, NULL), 0);
	assert_false(((struct t_opts *)p.opts)->common.help);
	ks_opt_release(&args_plain, &p);
}

static void test_forms(void **state)
{
	struct ks_parsed p;
	struct ks_err e;
	struct t_opts *o;
	char *dir = ks_test_tmpdir(), out[512];

	(void)state;
	snprintf(out, sizeof(out), "%s/res", dir);
	if (parse(&args_plain, &p, &e, "--launch-count=5", "--line-size",
		  "1k", "--delay=0.25", "--replay-mode", "range", "-k",
		  "add|mul*", "--tag", "a", "--tag=b2", "--kill", "-o", out,
		  "--log-level=debug", NULL) != 0)
		fail_msg("%s", e.msg);
	o = p.opts;
	assert_int_equal(o->count, 5);
	assert_int_equal(o->size, 1024);
	assert_true(o->delay == 0.25);
	assert_int_equal(o->mode, 2);
	assert_string_equal(o->kernel, "add|mul*");
	assert_int_equal(o->tags.n, 2);
	assert_string_equal(o->tags.v[0], "a");
	assert_string_equal(o->tags.v[1], "b2");
	assert_true(o->kill);
	assert_string_equal(o->output, out);
	assert_int_equal(o->common.log_level, 3);
	ks_opt_release(&args_plain, &p);
	/* A value that looks like an option is still the value. */
	assert_int_equal(parse(&args_plain, &p, &e, "--label", "-x", NULL), 0);
	assert_string_equal(((struct t_opts *)p.opts)->label, "-x");
	ks_opt_release(&args_plain, &p);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_errors(void **state)
{
	struct ks_parsed p;
	struct ks_err e;

	(void)state;
	assert_int_equal(parse(&args_plain, &p, &e, "--lanch-count", "3", NULL), -EINVAL);
	assert_string_equal(e.msg, "unknown option '--lanch-count' for 'kscope test'; "
				   "did you mean '--launch-count'? (see 'kscope test --help')");
	assert_int_equal(parse(&args_plain, &p, &e, "--zzzzzz", NULL), -EINVAL);
	assert_string_equal(e.msg, "unknown option '--zzzzzz' for 'kscope test' "
				   "(see 'kscope test --help')");
	assert_int_equal(parse(&args_plain, &p, &e, "-x", NULL), -EINVAL);
	assert_int_equal(parse(&args_plain, &p, &e, "-cc", "1", NULL), -EINVAL);
	assert_int_equal(parse(&args_plain, &p, &e, "--launch-count", NULL), -EINVAL);
	assert_string_equal(e.msg, "option --launch-count needs a value (N)");
	assert_int_equal(parse(&args_plain, &p, &e, "--kill=yes", NULL), -EINVAL);
	assert_string_equal(e.msg, "option --kill takes no value");
	assert_int_equal(parse(&args_plain, &p, &e, "-c", "1", "-c", "2", NULL), -EINVAL);
	assert_string_equal(e.msg, "option --launch-count is given twice");
	assert_int_equal(parse(&args_plain, &p, &e, "--launch-count", "101", NULL), -EINVAL);
	assert_string_equal(e.msg, "option --launch-count: '101' is out of range; "
				   "accepted: an integer from 1 to 100");
	assert_int_equal(parse(&args_plain, &p, &e, "--line-size", "4097", NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "accepted: a size in bytes from 8 to 4K"));
	assert_int_equal(parse(&args_plain, &p, &e, "--delay", "3600.5", NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "accepted: a number from 0 to 3600"));
	assert_int_equal(parse(&args_plain, &p, &e, "--replay-mode", "all", NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "accepted: one of kernel, application, range"));
	assert_int_equal(parse(&args_plain, &p, &e, "--label", "12345678901234567", NULL),
			 -EINVAL);
	assert_int_equal(parse(&args_plain, &p, &e, "--input", "/nonexistent", NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "does not exist"));
	assert_int_equal(parse(&args_plain, &p, &e, "stray", NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "takes no arguments"));
	assert_int_equal(parse(&args_plain, &p, &e, "--", "ls", NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "does not run a program"));
	/* A repeated option's bad second value frees the first (ASan). */
	assert_int_equal(parse(&args_plain, &p, &e, "--tag", "ok", "--tag", "no-t", NULL),
			 -EINVAL);
}

static void test_positional_and_program(void **state)
{
	struct ks_parsed p;
	struct ks_err e;
	char *dir = ks_test_tmpdir(), f[512];

	(void)state;
	snprintf(f, sizeof(f), "%s/in", dir);
	ks_test_write_file(f, "x", 0644);
	assert_int_equal(parse(&args_pos, &p, &e, NULL), -EINVAL);
	assert_string_equal(e.msg, "'kscope test' needs at least 1 FILE argument "
				   "(see 'kscope test --help')");
	assert_int_equal(parse(&args_pos, &p, &e, f, "-c", "2", f, NULL), 0);
	assert_int_equal(p.npositional, 2);
	assert_string_equal(p.positional[1], f);
	ks_opt_release(&args_pos, &p);
	assert_int_equal(parse(&args_pos, &p, &e, f, f, f, NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "takes at most 2 FILE"));
	assert_int_equal(parse(&args_pos, &p, &e, "/nonexistent", NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "argument FILE: '/nonexistent' does not exist"));

	assert_int_equal(parse(&args_prog, &p, &e, "-c", "2", NULL), -EINVAL);
	assert_non_null(strstr(e.msg, "needs a program to run"));
	assert_int_equal(parse(&args_prog, &p, &e, "-c", "2", "--", "./app", "-c", "x",
			       NULL), 0);
	assert_int_equal(p.nprogram, 3);
	assert_string_equal(p.program[0], "./app");
	assert_string_equal(p.program[1], "-c");
	assert_null(p.program[3]);
	ks_opt_release(&args_prog, &p);
	/* Without "--", the first plain word starts the program. */
	assert_int_equal(parse(&args_prog, &p, &e, "./app", "--kill", NULL), 0);
	assert_int_equal(p.nprogram, 2);
	assert_false(((struct t_opts *)p.opts)->kill);
	ks_opt_release(&args_prog, &p);
	/* --help stops the requirement checks. */
	assert_int_equal(parse(&args_prog, &p, &e, "--help", NULL), 0);
	assert_true(((struct t_opts *)p.opts)->common.help);
	ks_opt_release(&args_prog, &p);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_help_from_table(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	ks_opt_print_help(f, t_table);
	fclose(f);
	{
		size_t col = 0;

		for (size_t i = 0; buf[i]; i++) {
			col = buf[i] == '\n' ? 0 : col + 1;
			assert_true(col <= 80);
		}
	}
	/* Help wraps at 80 columns: compare with runs of blanks collapsed. */
	{
		size_t o = 0;

		for (size_t i = 0; buf[i]; i++) {
			bool blank = buf[i] == ' ' || buf[i] == '\n';

			if (blank && o > 0 && buf[o - 1] == ' ')
				continue;
			buf[o++] = blank ? ' ' : buf[i];
		}
		buf[o] = '\0';
	}

	/* Every option, with its env, default and range, comes from the table. */
	for (const struct ks_opt *o = t_table; o->name; o++) {
		char want[128];

		snprintf(want, sizeof(want), "--%s", o->name);
		assert_non_null(strstr(buf, want));
		if (!strstr(buf, o->help))
			fail_msg("help of --%s missing in: %s", o->name, buf);
		if (!(o->flags & KS_OPT_HIDDEN_ENV))
			assert_non_null(strstr(buf, o->env));
	}
	assert_non_null(strstr(buf, " -c, --launch-count N "));
	assert_non_null(strstr(buf, "accepts an integer from 1 to 100"));
	assert_non_null(strstr(buf, "default 1; env KSCOPE_LAUNCH_COUNT"));
	assert_non_null(strstr(buf, "a size in bytes from 8 to 4K"));
	assert_non_null(strstr(buf, "a tag (repeatable)"));
	assert_null(strstr(buf, "KSCOPE_HELP"));
	free(buf);
}

static void test_suggest(void **state)
{
	(void)state;
	assert_int_equal(ks_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(ks_edit_distance("", "abc"), 3);
	assert_int_equal(ks_edit_distance("same", "same"), 0);
	assert_string_equal(ks_opt_suggest(t_table, "outptu")->name, "output");
	assert_string_equal(ks_opt_suggest(t_table, "out")->name, "output");
	assert_string_equal(ks_opt_suggest(t_table, "replay")->name, "replay-mode");
	assert_null(ks_opt_suggest(t_table, "xyzzy"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_defaults, setup),
		cmocka_unit_test_setup(test_precedence, setup),
		cmocka_unit_test_setup(test_forms, setup),
		cmocka_unit_test_setup(test_errors, setup),
		cmocka_unit_test_setup(test_positional_and_program, setup),
		cmocka_unit_test_setup(test_help_from_table, setup),
		cmocka_unit_test_setup(test_suggest, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
