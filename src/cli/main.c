/*
 * kscope's entry point: the command table and the dispatch every command
 * goes through.
 *
 *     kscope <command> [options] [-- program args]
 *
 * main() finds the command, parses and checks its whole command line
 * against the command's option table (opt.h, argcheck.h), and only then
 * runs it.  Unknown commands and options and rejected values end here with
 * a one-line message and exit status 2, before anything is written or
 * launched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck.h"
#include "cli.h"
#include "err.h"
#include "gendoc.h"
#include "ks_version.h"
#include "log.h"
#include "opt.h"

const struct ks_cmd *const ks_commands[] = {
	&ks_cmd_sample,
	&ks_cmd_instrument,
	&ks_cmd_causal,
	&ks_cmd_report,
	&ks_cmd_merge,
	&ks_cmd_memcheck,
	&ks_cmd_contention,
	&ks_cmd_falseshare,
	&ks_cmd_op,
	&ks_cmd_calibrate,
	&ks_cmd_predict,
	&ks_cmd_tune,
	&ks_cmd_avail,
	&ks_cmd_inspect,
	&ks_cmd_pack,
	&ks_cmd_view,
	NULL,
};

static void print_usage(FILE *out)
{
	fprintf(out,
		"usage: kscope <command> [options] [-- program args]\n"
		"       kscope help <command> | kscope <command> --help\n"
		"       kscope --version\n");
}

static void print_main_help(FILE *out)
{
	print_usage(out);
	fprintf(out,
		"\nkscope finds where the time of performance-critical code goes:\n"
		"accelerator kernels and multi-threaded or MPI programs.\n"
		"\nCommands:\n"
		"  %-10s %s\n", "help", "show help for kscope or one command");
	for (int i = 0; ks_commands[i]; i++)
		fprintf(out, "  %-10s %s\n", ks_commands[i]->name,
			ks_commands[i]->summary);
	fprintf(out,
		"\nOptions:\n"
		"  -h, --help     show this help and exit\n"
		"  -V, --version  print kscope's version and exit\n"
		"\nEach run writes a new directory <output>/<command>_<YYYYmmdd_HHMMSS>_<pid>/\n"
		"(output ./kscope-out unless --output says otherwise).\n"
		"\nExit status:\n"
		"  0      success\n"
		"  1      the run failed: kscope could not do it or write its results\n"
		"  2      bad command line or input: nothing ran\n"
		"  100    findings were reported (memcheck, falseshare; --error-exitcode)\n"
		"  128+N  signal N ended the program, or interrupted kscope\n"
		"  N      the program's own exit status, which sample, op, memcheck,\n"
		"         contention and falseshare pass on\n"
		"After a run, 1 wins over 100, which wins over the program's status.\n"
		"Commands that run a program print their summary on stderr: the\n"
		"program's standard output stays its own.\n");
}

void ks_cmd_print_help(FILE *out, const struct ks_cmd *cmd)
{
	fprintf(out, "usage: kscope %s %s\n\n%s\n\n", cmd->name, cmd->usage,
		cmd->description);
	ks_opt_print_help(out, cmd->args.opts);
}

static const struct ks_cmd *find_command(const char *name)
{
	for (int i = 0; ks_commands[i]; i++)
		if (strcmp(ks_commands[i]->name, name) == 0)
			return ks_commands[i];
	return NULL;
}

static int unknown_command(const char *name)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	char q[256];

	for (int i = 0; ks_commands[i]; i++) {
		size_t d = ks_edit_distance(name, ks_commands[i]->name);

		if (d < best_d) {
			best_d = d;
			best = ks_commands[i]->name;
		}
	}
	/* Quoted as the checker quotes values: no control bytes reach the
	 * terminal. */
	ks_quote(q, sizeof(q), name, strlen(name));
	if (best && best_d <= 2)
		ks_error("'%s' is not a kscope command; did you mean '%s'? "
			 "(see 'kscope --help')", q, best);
	else
		ks_error("'%s' is not a kscope command (see 'kscope --help')", q);
	return KS_EXIT_USAGE;
}

static int run_command(const struct ks_cmd *cmd, int argc, char **argv)
{
	struct ks_parsed p;
	struct ks_err err;
	const struct ks_common_opts *common;
	int rc;

	ks_err_clear(&err);
	if (ks_opt_parse(&cmd->args, argc, argv, NULL, &p, &err) != 0) {
		ks_error("%s", err.msg);
		return KS_EXIT_USAGE;
	}
	common = p.opts; /* every opts struct starts with ks_common_opts */
	if (common->help) {
		ks_cmd_print_help(stdout, cmd);
		ks_opt_release(&cmd->args, &p);
		return KS_EXIT_OK;
	}
	ks_log_set_level((enum ks_log_level)common->log_level);
	for (size_t i = 0; i < p.nnotes; i++)
		ks_info("%s", p.notes[i]);
	rc = cmd->run(cmd, &p);
	ks_opt_release(&cmd->args, &p);
	return rc;
}

int main(int argc, char **argv)
{
	const struct ks_cmd *cmd;
	int rc;

	if (argc < 2) {
		print_usage(stderr);
		return KS_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		print_main_help(stdout);
		return KS_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("kscope %s\n", KS_VERSION);
		return KS_EXIT_OK;
	}
	if (strcmp(argv[1], "help") == 0) {
		if (argc == 2) {
			print_main_help(stdout);
			return KS_EXIT_OK;
		}
		/* Not in --help: the build's (and packagers') way to the man
		 * pages and the bash completion (gendoc.c). */
		if (ks_gendoc_is_mode(argv[2]))
			return ks_gendoc_main(argc - 2, argv + 2);
		if (argc > 3) {
			ks_error("'kscope help' takes one command name");
			return KS_EXIT_USAGE;
		}
		if (strcmp(argv[2], "help") == 0) {
			print_main_help(stdout);
			return KS_EXIT_OK;
		}
		cmd = find_command(argv[2]);
		if (!cmd)
			return unknown_command(argv[2]);
		ks_cmd_print_help(stdout, cmd);
		return KS_EXIT_OK;
	}
	if (argv[1][0] == '-') {
		char q[256];

		ks_quote(q, sizeof(q), argv[1], strlen(argv[1]));
		ks_error("unknown option '%s': kscope takes --help or --version "
			 "before a command (see 'kscope --help')", q);
		return KS_EXIT_USAGE;
	}
	cmd = find_command(argv[1]);
	if (!cmd)
		return unknown_command(argv[1]);
	rc = run_command(cmd, argc - 1, argv + 1);
	ks_log_flush();
	return rc;
}
