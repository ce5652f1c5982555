/*
 * The command table shared by src/cli: each kscope command is one struct
 * ks_cmd defined in its cmd_<name>.c and listed once in main.c.
 */
#ifndef KS_CLI_H
#define KS_CLI_H

#include <stdio.h>

#include "opt.h"

/* Exit statuses of every command (the table is in README.md and in
 * `kscope --help`).  Commands that run a program (sample, op, memcheck,
 * contention, falseshare) otherwise exit with the program's own status,
 * 128+N when signal N ended it (ks_exit_status).  After the program ran,
 * KS_EXIT_FAIL wins over KS_EXIT_FINDINGS, which wins over the
 * program's status. */
enum {
	KS_EXIT_OK = 0,
	KS_EXIT_FAIL = 1,  /* the run failed (a write failed, damaged input data) */
	KS_EXIT_USAGE = 2, /* bad command line or input: nothing ran */
	/* Findings were reported (memcheck's errors, falseshare's false
	 * sharing): a value no shell (126, 127), signal (128+N) or sysexits.h
	 * status (64-78) uses, so it is not taken for one of those. */
	KS_EXIT_FINDINGS = 100,
};

struct ks_cmd {
	const char *name;
	const char *summary;      /* one line for `kscope --help` */
	const char *usage;        /* what follows "kscope NAME " */
	const char *description;  /* paragraphs for `kscope help NAME` */
	struct ks_cmd_args args;
	/* Runs with checked options; returns a KS_EXIT_* status.  Inputs that
	 * need more than the option table's checks (a file's content) are
	 * checked before anything is written. */
	int (*run)(const struct ks_cmd *cmd, struct ks_parsed *p);
};

extern const struct ks_cmd ks_cmd_avail;
extern const struct ks_cmd ks_cmd_calibrate;
extern const struct ks_cmd ks_cmd_causal;
extern const struct ks_cmd ks_cmd_contention;
extern const struct ks_cmd ks_cmd_falseshare;
extern const struct ks_cmd ks_cmd_inspect;
extern const struct ks_cmd ks_cmd_instrument;
extern const struct ks_cmd ks_cmd_memcheck;
extern const struct ks_cmd ks_cmd_merge;
extern const struct ks_cmd ks_cmd_op;
extern const struct ks_cmd ks_cmd_pack;
extern const struct ks_cmd ks_cmd_predict;
extern const struct ks_cmd ks_cmd_report;
extern const struct ks_cmd ks_cmd_sample;
extern const struct ks_cmd ks_cmd_tune;
extern const struct ks_cmd ks_cmd_view;

/* The command table, NULL-terminated. */
extern const struct ks_cmd *const ks_commands[];

void ks_cmd_print_help(FILE *out, const struct ks_cmd *cmd);

#endif
