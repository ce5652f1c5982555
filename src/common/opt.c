/*
 * The option parser and help printer of opt.h.
 *
 * ks_opt_parse walks argv once, checking every value through argcheck.c
 * as it is seen, then fills unset options from the environment and the
 * table defaults through the same checks.  It works on a scratch opts
 * struct and hands it over only when everything was accepted, so a
 * rejected command line leaves nothing behind.
 */
#include "opt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck.h"

const char *const ks_log_level_choices[] = { "error", "warn", "info", "debug", NULL };

/* ------------------------------------------------------------------ */
/* Table queries                                                       */
/* ------------------------------------------------------------------ */

static size_t opt_count(const struct ks_opt *opts)
{
	size_t n = 0;

	while (opts[n].name)
		n++;
	return n;
}

const struct ks_opt *ks_opt_find(const struct ks_opt *opts, const char *name)
{
	for (const struct ks_opt *o = opts; o->name; o++)
		if (strcmp(o->name, name) == 0)
			return o;
	return NULL;
}

size_t ks_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[65];

	/* Hints are only for short words; longer ones are never "close". */
	if (la > 64 || lb > 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

const struct ks_opt *ks_opt_suggest(const struct ks_opt *opts, const char *name)
{
	const struct ks_opt *best = NULL;
	size_t best_d = SIZE_MAX;

	for (const struct ks_opt *o = opts; o->name; o++) {
		size_t d = ks_edit_distance(name, o->name);

		/* A prefix is a good hint too: "--out" for "--output". */
		if (strncmp(o->name, name, strlen(name)) == 0 && strlen(name) >= 2)
			d = 1;
		if (d < best_d) {
			best_d = d;
			best = o;
		}
	}
	if (best && best_d <= 1 + strlen(best->name) / 4)
		return best;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Descriptions (shared by help and error messages)                    */
/* ------------------------------------------------------------------ */

static void describe_size(int64_t v, char *buf, size_t size)
{
	if (v > 0 && v % (1 << 30) == 0)
		snprintf(buf, size, "%" PRId64 "G", v >> 30);
	else if (v > 0 && v % (1 << 20) == 0)
		snprintf(buf, size, "%" PRId64 "M", v >> 20);
	else if (v > 0 && v % (1 << 10) == 0)
		snprintf(buf, size, "%" PRId64 "K", v >> 10);
	else
		snprintf(buf, size, "%" PRId64, v);
}

void ks_opt_describe(const struct ks_opt *opt, char *buf, size_t size)
{
	size_t max_len = opt->max_len ? opt->max_len : 4096;

	switch (opt->type) {
	case KS_OPT_FLAG:
		snprintf(buf, size, "no value on the command line; "
			 "1/0, yes/no, on/off or true/false in the environment");
		break;
	case KS_OPT_INT:
		snprintf(buf, size, "an integer from %" PRId64 " to %" PRId64,
			 opt->min, opt->max);
		break;
	case KS_OPT_SIZE: {
		char lo[32], hi[32];

		describe_size(opt->min, lo, sizeof(lo));
		describe_size(opt->max, hi, sizeof(hi));
		snprintf(buf, size, "a size in bytes from %s to %s "
			 "(suffix K, M or G for x1024)", lo, hi);
		break;
	}
	case KS_OPT_DOUBLE:
		snprintf(buf, size, "a number from %g to %g", opt->dmin, opt->dmax);
		break;
	case KS_OPT_ENUM: {
		size_t o = (size_t)snprintf(buf, size, "one of ");

		for (int i = 0; opt->choices[i] && o < size; i++)
			o += (size_t)snprintf(buf + o, size - o, "%s%s",
					      i ? ", " : "", opt->choices[i]);
		break;
	}
	case KS_OPT_NAME: {
		const char *x = opt->name_extra ? opt->name_extra : "";

		snprintf(buf, size, "1 to %zu letters, digits%s%s", max_len,
			 *x ? " and any of " : "", x);
		break;
	}
	case KS_OPT_STRING:
		snprintf(buf, size, "text of 1 to %zu characters without control "
			 "characters", max_len);
		break;
	case KS_OPT_PATH: {
		const char *what = (opt->flags & KS_PATH_DIR) ? "directory"
				   : (opt->flags & KS_PATH_FILE) ? "regular file"
				   : "file or directory";
		const char *how = (opt->flags & KS_PATH_EXEC) ? "executable"
				  : (opt->flags & KS_PATH_READ) ? "readable" : "existing";

		snprintf(buf, size, "the path of %s %s %s",
			 how[0] == 'e' ? "an" : "a", how, what);
		break;
	}
	case KS_OPT_OUTPUT:
		snprintf(buf, size, "a directory (created if missing) whose parent "
			 "is owned by you or root and not writable by group or "
			 "others unless sticky like /tmp");
		break;
	}
}

/* ------------------------------------------------------------------ */
/* Help                                                                */
/* ------------------------------------------------------------------ */

#define HELP_INDENT 33 /* column where descriptions start */
#define HELP_WIDTH  79

/* Prints text from column `col` (already reached), wrapping at word
 * boundaries to HELP_WIDTH with continuation lines at `indent`. */
static void print_wrapped(FILE *out, const char *text, int col, int indent)
{
	const char *p = text;
	bool line_start = true; /* nothing printed on this line yet */

	while (*p) {
		size_t word = strcspn(p, " ");

		if (!line_start && col + 1 + (int)word > HELP_WIDTH) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
		} else if (!line_start) {
			fputc(' ', out);
			col++;
		}
		fwrite(p, 1, word, out);
		col += (int)word;
		line_start = false;
		p += word;
		while (*p == ' ')
			p++;
	}
	fputc('\n', out);
}

void ks_opt_print_help(FILE *out, const struct ks_opt *opts)
{
	char accepted[512];

	fprintf(out, "Options:\n");
	for (const struct ks_opt *o = opts; o->name; o++) {
		char head[128];
		int n;

		if (o->short_name)
			n = snprintf(head, sizeof(head), "  -%c, --%s", o->short_name,
				     o->name);
		else
			n = snprintf(head, sizeof(head), "      --%s", o->name);
		if (o->type != KS_OPT_FLAG && n > 0 && (size_t)n < sizeof(head))
			snprintf(head + n, sizeof(head) - (size_t)n, " %s",
				 o->metavar ? o->metavar : "VALUE");
		{
			char line[512];

			snprintf(line, sizeof(line), "%s%s", o->help,
				 (o->flags & KS_OPT_REPEAT) ? " (repeatable)" : "");
			fprintf(out, "%-*s", HELP_INDENT - 2, head);
			if ((int)strlen(head) > HELP_INDENT - 3)
				fprintf(out, "\n%*s", HELP_INDENT - 2, "");
			print_wrapped(out, line, HELP_INDENT - 2, HELP_INDENT - 2);
		}
		if (o->type != KS_OPT_FLAG) {
			char line[600];

			ks_opt_describe(o, accepted, sizeof(accepted));
			snprintf(line, sizeof(line), "accepts %s", accepted);
			fprintf(out, "%*s", HELP_INDENT, "");
			print_wrapped(out, line, HELP_INDENT, HELP_INDENT + 2);
		}
		if (o->def || !(o->flags & KS_OPT_HIDDEN_ENV)) {
			char line[300];

			snprintf(line, sizeof(line), "%s%s%s%s%s",
				 o->def ? "default " : "", o->def ? o->def : "",
				 o->def && !(o->flags & KS_OPT_HIDDEN_ENV) ? "; " : "",
				 (o->flags & KS_OPT_HIDDEN_ENV) ? "" : "env ",
				 (o->flags & KS_OPT_HIDDEN_ENV) ? "" : o->env);
			fprintf(out, "%*s", HELP_INDENT, "");
			print_wrapped(out, line, HELP_INDENT, HELP_INDENT + 2);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

static bool opt_is_stringlike(const struct ks_opt *o)
{
	return o->type == KS_OPT_NAME || o->type == KS_OPT_STRING ||
	       o->type == KS_OPT_PATH || o->type == KS_OPT_OUTPUT;
}

static void free_value(const struct ks_opt *o, void *opts)
{
	void *field = (char *)opts + o->offset;

	if (!opt_is_stringlike(o))
		return;
	if (o->flags & KS_OPT_REPEAT) {
		struct ks_strlist *l = field;

		for (size_t i = 0; i < l->n; i++)
			free(l->v[i]);
		free(l->v);
		l->v = NULL;
		l->n = 0;
	} else {
		free(*(char **)field);
		*(char **)field = NULL;
	}
}

static int add_note(struct ks_parsed *p, const char *note, struct ks_err *err)
{
	char **v;

	if (!note[0])
		return 0;
	v = realloc(p->notes, (p->nnotes + 1) * sizeof(*v));
	if (!v)
		return ks_err_set(err, -ENOMEM, "out of memory");
	p->notes = v;
	v[p->nnotes] = strdup(note);
	if (!v[p->nnotes])
		return ks_err_set(err, -ENOMEM, "out of memory");
	p->nnotes++;
	return 0;
}

/* Checks value for option o and stores it in p->opts. */
static int set_value(const struct ks_opt *o, const char *origin,
		     const char *value, size_t len, struct ks_parsed *p,
		     struct ks_err *err)
{
	void *field = (char *)p->opts + o->offset;
	char note[KS_NOTE_MAX];
	int rc;

	if (o->flags & KS_OPT_REPEAT) {
		struct ks_strlist *l = field;
		char *s = NULL, **v;

		rc = ks_check_value(o, origin, value, len, &s, note, sizeof(note), err);
		if (rc)
			return rc;
		v = realloc(l->v, (l->n + 1) * sizeof(*v));
		if (!v) {
			free(s);
			return ks_err_set(err, -ENOMEM, "out of memory");
		}
		l->v = v;
		l->v[l->n++] = s;
	} else {
		rc = ks_check_value(o, origin, value, len, field, note,
				    sizeof(note), err);
		if (rc)
			return rc;
	}
	return add_note(p, note, err);
}

static void parsed_free(const struct ks_cmd_args *args, struct ks_parsed *p)
{
	if (p->opts)
		for (const struct ks_opt *o = args->opts; o->name; o++)
			free_value(o, p->opts);
	free(p->opts);
	free(p->given);
	for (int i = 0; i < p->npositional; i++)
		free(p->positional[i]);
	free(p->positional);
	for (size_t i = 0; i < p->nnotes; i++)
		free(p->notes[i]);
	free(p->notes);
	memset(p, 0, sizeof(*p));
}

void ks_opt_release(const struct ks_cmd_args *args, struct ks_parsed *p)
{
	parsed_free(args, p);
}

static int unknown_option(const struct ks_cmd_args *args, const char *cmd,
			  const char *arg, struct ks_err *err)
{
	char q[256], name[128];
	const struct ks_opt *hint = NULL;
	size_t n = strcspn(arg, "=");

	ks_quote(q, sizeof(q), arg, strlen(arg));
	if (arg[0] == '-' && arg[1] == '-' && n - 2 < sizeof(name)) {
		memcpy(name, arg + 2, n - 2);
		name[n - 2] = '\0';
		hint = ks_opt_suggest(args->opts, name);
	}
	if (hint)
		return ks_err_set(err, -EINVAL,
				  "unknown option '%s' for 'kscope %s'; did you mean "
				  "'--%s'? (see 'kscope %s --help')",
				  q, cmd, hint->name, cmd);
	return ks_err_set(err, -EINVAL,
			  "unknown option '%s' for 'kscope %s' (see 'kscope %s --help')",
			  q, cmd, cmd);
}

static int add_positional(const struct ks_cmd_args *args, const char *cmd,
			  const char *arg, struct ks_parsed *p, struct ks_err *err)
{
	char origin[160], q[256], **v;
	char *value = NULL;

	if (!args->positional || p->npositional >= args->pos_max) {
		ks_quote(q, sizeof(q), arg, strlen(arg));
		if (args->positional)
			return ks_err_set(err, -EINVAL,
					  "unexpected argument '%s': 'kscope %s' takes "
					  "at most %d %s",
					  q, cmd, args->pos_max, args->positional->metavar);
		return ks_err_set(err, -EINVAL,
				  "unexpected argument '%s': 'kscope %s' takes no "
				  "arguments%s (see 'kscope %s --help')", q, cmd,
				  args->takes_program ? " before '--'" : "", cmd);
	}
	snprintf(origin, sizeof(origin), "argument %s", args->positional->metavar);
	/* Positional values are string-like: the check stores a char *. */
	{
		char note[KS_NOTE_MAX];
		int rc = ks_check_value(args->positional, origin, arg, strlen(arg),
					&value, note, sizeof(note), err);

		if (rc)
			return rc;
		rc = add_note(p, note, err);
		if (rc) {
			free(value);
			return rc;
		}
	}
	v = realloc(p->positional, (size_t)(p->npositional + 1) * sizeof(*v));
	if (!v) {
		free(value);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	p->positional = v;
	v[p->npositional++] = value;
	return 0;
}

/* Whether an option that makes the command run no program was given
 * (KS_OPT_NO_PROGRAM, on the command line or in the environment). */
static bool no_program_given(const struct ks_cmd_args *args, const struct ks_parsed *p)
{
	for (size_t k = 0; args->opts[k].name; k++)
		if ((args->opts[k].flags & KS_OPT_NO_PROGRAM) && p->given[k])
			return true;
	return false;
}

int ks_opt_parse(const struct ks_cmd_args *args, int argc, char **argv,
		 const char *(*getenv_fn)(const char *name),
		 struct ks_parsed *out, struct ks_err *err)
{
	const char *cmd = argv[0];
	struct ks_parsed p;
	size_t nopts = opt_count(args->opts);
	char origin[160];
	int i, rc = 0;

	memset(&p, 0, sizeof(p));
	memset(out, 0, sizeof(*out));
	p.opts = calloc(1, args->opts_size ? args->opts_size : 1);
	p.given = calloc(nopts + 1, sizeof(bool));
	if (!p.opts || !p.given) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const struct ks_opt *o = NULL;
		const char *value = NULL;
		char name[128];

		if (strcmp(arg, "--") == 0) {
			if (!args->takes_program) {
				rc = ks_err_set(err, -EINVAL,
						"'kscope %s' does not run a program, so "
						"'--' is not accepted (see 'kscope %s --help')",
						cmd, cmd);
				goto out;
			}
			i++;
			break;
		}
		if (arg[0] != '-' || arg[1] == '\0') {
			/* A plain word: a positional argument, or the program
			 * when the command runs one and has no positionals. */
			if (args->takes_program && !args->positional)
				break;
			rc = add_positional(args, cmd, arg, &p, err);
			if (rc)
				goto out;
			continue;
		}
		if (arg[1] == '-') {
			size_t n = strcspn(arg + 2, "=");

			if (n < sizeof(name)) {
				memcpy(name, arg + 2, n);
				name[n] = '\0';
				o = ks_opt_find(args->opts, name);
				if (arg[2 + n] == '=')
					value = arg + 3 + n;
			}
		} else if (arg[2] == '\0') {
			for (const struct ks_opt *s = args->opts; s->name; s++)
				if (s->short_name == arg[1])
					o = s;
		}
		if (!o) {
			rc = unknown_option(args, cmd, arg, err);
			goto out;
		}
		if (o->type == KS_OPT_FLAG) {
			if (value) {
				rc = ks_err_set(err, -EINVAL,
						"option --%s takes no value", o->name);
				goto out;
			}
			*(bool *)((char *)p.opts + o->offset) = true;
			p.given[o - args->opts] = true;
			continue;
		}
		if (!value) {
			if (i + 1 >= argc) {
				rc = ks_err_set(err, -EINVAL,
						"option --%s needs a value (%s)",
						o->name, o->metavar ? o->metavar : "VALUE");
				goto out;
			}
			value = argv[++i];
		}
		if (p.given[o - args->opts] && !(o->flags & KS_OPT_REPEAT)) {
			rc = ks_err_set(err, -EINVAL, "option --%s is given twice",
					o->name);
			goto out;
		}
		snprintf(origin, sizeof(origin), "option --%s", o->name);
		rc = set_value(o, origin, value, strlen(value), &p, err);
		if (rc)
			goto out;
		p.given[o - args->opts] = true;
	}
	if (i < argc) {
		p.program = argv + i;
		p.nprogram = argc - i;
	}

	/* --help wins over everything else that is missing. */
	for (size_t k = 0; k < nopts; k++)
		if (strcmp(args->opts[k].name, "help") == 0 && p.given[k])
			goto done;

	/* Unset options: environment first, then the table default. */
	for (size_t k = 0; k < nopts; k++) {
		const struct ks_opt *o = &args->opts[k];
		const char *env = NULL;

		if (p.given[k])
			continue;
		if (o->env && !(o->flags & KS_OPT_HIDDEN_ENV))
			env = getenv_fn ? getenv_fn(o->env) : getenv(o->env);
		if (env) {
			snprintf(origin, sizeof(origin), "environment %s (for --%s)",
				 o->env, o->name);
			rc = set_value(o, origin, env, strlen(env), &p, err);
			if (rc)
				goto out;
			p.given[k] = true;
		} else if (o->def) {
			snprintf(origin, sizeof(origin), "default of --%s", o->name);
			rc = set_value(o, origin, o->def, strlen(o->def), &p, err);
			if (rc)
				goto out;
		}
	}

	if (p.npositional < args->pos_min) {
		rc = ks_err_set(err, -EINVAL,
				"'kscope %s' needs %s%d %s argument%s (see 'kscope %s --help')",
				cmd, args->pos_min == args->pos_max ? "" : "at least ",
				args->pos_min,
				args->positional ? args->positional->metavar : "",
				args->pos_min == 1 ? "" : "s", cmd);
		goto out;
	}
	if (args->takes_program && !p.program && !no_program_given(args, &p)) {
		rc = ks_err_set(err, -EINVAL,
				"'kscope %s' needs a program to run: kscope %s [options] "
				"-- PROGRAM [ARGS...]", cmd, cmd);
		goto out;
	}
done:
	*out = p;
	return 0;
out:
	parsed_free(args, &p);
	return rc;
}
