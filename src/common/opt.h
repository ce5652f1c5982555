/*
 * Option tables: the single source of truth for every command's options.
 *
 * Each command declares one array of struct ks_opt.  An entry names the
 * option, its type, its range or choices, its default, the KSCOPE_*
 * environment variable it maps to and a one-line description, plus where
 * its value lives in the command's `struct <cmd>_opts`.  The parser
 * (ks_opt_parse), the checker (argcheck.h), `--help` (ks_opt_print_help) and
 * the options listing all read this table and nothing else, so what help
 * says is what the parser accepts.
 *
 * Where a value comes from, highest first: the command line, the
 * environment variable, the default.  Every value, whatever its source, goes
 * through the same checker before the command runs.
 */
#ifndef KS_OPT_H
#define KS_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"

enum ks_opt_type {
	KS_OPT_FLAG,   /* no value on the command line; stored as bool */
	KS_OPT_INT,    /* decimal integer in [min, max]; int64_t */
	KS_OPT_SIZE,   /* byte count, optional k/m/g suffix (x1024), [min, max]; int64_t */
	KS_OPT_DOUBLE, /* decimal number in [dmin, dmax]; double */
	KS_OPT_ENUM,   /* one of choices; int (index into choices) */
	KS_OPT_NAME,   /* letters, digits and the characters of name_extra,
			* 1..max_len; char * */
	KS_OPT_STRING, /* printable text without control characters,
			* 1..max_len; char * */
	KS_OPT_PATH,   /* an existing path, checked per path flags; char *
			* holding the resolved absolute path */
	KS_OPT_OUTPUT, /* an output location (see argcheck.h); char * holding
			* the absolute path, which may not exist yet */
};

/* ks_opt.flags */
enum {
	KS_OPT_REPEAT    = 1u << 0, /* may be given several times; stored as
				     * struct ks_strlist (string-like types) */
	KS_PATH_FILE     = 1u << 1, /* must be a regular file */
	KS_PATH_DIR      = 1u << 2, /* must be a directory */
	KS_PATH_READ     = 1u << 3, /* must be readable */
	KS_PATH_EXEC     = 1u << 4, /* must be executable (searchable for dirs) */
	KS_OPT_HIDDEN_ENV = 1u << 5, /* the environment variable is not read
				      * (it exists only to pass the value on) */
	KS_OPT_NO_PROGRAM = 1u << 6, /* given, the command runs no program:
				      * `-- PROGRAM` is not required */
};

struct ks_opt {
	const char *name;      /* long name without "--"; NULL ends the table */
	char short_name;       /* e.g. 'o' for -o, or 0 */
	enum ks_opt_type type;
	const char *metavar;   /* what help shows for the value: "N", "FILE" */
	const char *def;       /* default as text, checked like any value; NULL: unset */
	const char *env;       /* KSCOPE_* variable it maps to */
	const char *help;      /* one line, lower case, no final period */
	size_t offset;         /* of the value in the command's opts struct */
	unsigned flags;
	int64_t min, max;      /* KS_OPT_INT, KS_OPT_SIZE */
	double dmin, dmax;     /* KS_OPT_DOUBLE */
	const char *const *choices; /* KS_OPT_ENUM, NULL-terminated */
	const char *name_extra;     /* KS_OPT_NAME: allowed besides [A-Za-z0-9] */
	size_t max_len;        /* KS_OPT_NAME, KS_OPT_STRING; 0 means 4096 */
};

#define KS_OPT_END { .name = NULL }

/* Values of a KS_OPT_REPEAT option, in command-line order. */
struct ks_strlist {
	size_t n;
	char **v;              /* owned; freed by ks_opt_release */
};

/* Options every command has; each command's opts struct starts with it. */
struct ks_common_opts {
	int log_level;         /* enum ks_log_level */
	bool help;
};

extern const char *const ks_log_level_choices[];

#define KS_COMMON_OPTS(opts_type)                                                 \
	{ .name = "log-level", .type = KS_OPT_ENUM, .metavar = "LEVEL",     \
	  .def = "info", .env = "KSCOPE_LOG_LEVEL",                         \
	  .help = "how much kscope reports on stderr",                      \
	  .offset = offsetof(opts_type, common.log_level),                       \
	  .choices = ks_log_level_choices },                                \
	{ .name = "help", .short_name = 'h', .type = KS_OPT_FLAG,           \
	  .env = "KSCOPE_HELP", .flags = KS_OPT_HIDDEN_ENV,                 \
	  .help = "show this help and exit",                                \
	  .offset = offsetof(opts_type, common.help) }

/* What a command accepts besides options. */
struct ks_cmd_args {
	const struct ks_opt *opts;   /* the option table */
	size_t opts_size;            /* sizeof the opts struct */
	const struct ks_opt *positional; /* check for positional arguments, or NULL */
	int pos_min, pos_max;        /* how many positional arguments */
	bool takes_program;          /* accepts `-- program args` */
};

/* The result of parsing one command line. */
struct ks_parsed {
	void *opts;            /* the command's opts struct (allocated) */
	bool *given;           /* per option: set on the command line or env */
	char **positional;     /* resolved per the positional check; owned */
	int npositional;
	char **program;        /* points into argv; NULL-terminated */
	int nprogram;
	char **notes;          /* things the user should hear (symlinks resolved) */
	size_t nnotes;
};

/* Parses argv (argv[0] is the command name) against args, reading the
 * environment through getenv_fn (NULL: getenv).  On success fills *out and
 * returns 0; release it with ks_opt_release.  On bad input returns
 * -EINVAL with err naming the option, the bad value and what is accepted,
 * and leaves nothing allocated.  Nothing is written anywhere. */
int ks_opt_parse(const struct ks_cmd_args *args, int argc, char **argv,
		 const char *(*getenv_fn)(const char *name),
		 struct ks_parsed *out, struct ks_err *err);

void ks_opt_release(const struct ks_cmd_args *args, struct ks_parsed *p);

/* Describes what opt accepts, e.g. "an integer from 0 to 500" or "one of
 * error, warn, info, debug".  Used by help and by error messages. */
void ks_opt_describe(const struct ks_opt *opt, char *buf, size_t size);

/* Prints the options section of a command's help from its table. */
void ks_opt_print_help(FILE *out, const struct ks_opt *opts);

/* The table entry for name (long name), or NULL. */
const struct ks_opt *ks_opt_find(const struct ks_opt *opts, const char *name);

/* The option in opts whose name is closest to name, if close enough to be
 * a useful hint, else NULL. */
const struct ks_opt *ks_opt_suggest(const struct ks_opt *opts, const char *name);

/* Levenshtein distance between a and b (small strings). */
size_t ks_edit_distance(const char *a, const char *b);

#endif
