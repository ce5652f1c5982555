/*
 * kscope's manual pages (kscope.1 and kscope-<command>.1) and its bash
 * completion, generated from the command table (ks_commands[]) and the
 * option tables: the data the parser, --help and `kscope avail` read, so
 * none of them can say something the others do not.  The build runs the
 * kscope it has just linked in two modes of `kscope help` that --help does
 * not list (src/cli/CMakeLists.txt); packagers may run them too:
 *
 *     kscope help --man DIR          DIR/kscope.1, DIR/kscope-<command>.1
 *     kscope help --completion FILE  the bash completion script
 *
 * The pages are man(7) roff; every option is shown as --help shows it:
 * its metavar, what it accepts (ks_opt_describe), its default and its
 * environment variable.  The script needs bash 4 alone; the program's
 * command line after `--` is completed by bash-completion when it is
 * loaded, else as commands and file names.
 */
#include "gendoc.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "argcheck.h"
#include "cli.h"
#include "ks_version.h"
#include "log.h"
#include "opt.h"

/* The options every command has, from the same macro the commands use. */
struct common_only {
	struct ks_common_opts common;
};

static const struct ks_opt common_opts[] = {
	KS_COMMON_OPTS(struct common_only),
	KS_OPT_END
};

/* ------------------------------------------------------------------ */
/* roff text                                                           */
/* ------------------------------------------------------------------ */

/* Writes n bytes of s as roff text: backslashes and hyphens escaped (so
 * options read as typed: \-\-output), the quotes and accents groff would
 * turn into typographic ones given as their ASCII glyphs, and \& first
 * where the text would start a line with a control character. */
static void roff_putn(FILE *out, const char *s, size_t n)
{
	if (n && (s[0] == '.' || s[0] == '\''))
		fputs("\\&", out);
	for (size_t i = 0; i < n; i++) {
		switch (s[i]) {
		case '\\': fputs("\\e", out); break;
		case '-':  fputs("\\-", out); break;
		case '\'': fputs("\\(aq", out); break;
		case '`':  fputs("\\(ga", out); break;
		case '^':  fputs("\\(ha", out); break;
		case '~':  fputs("\\(ti", out); break;
		default:   fputc(s[i], out); break;
		}
	}
}

static void roff_puts(FILE *out, const char *s)
{
	roff_putn(out, s, strlen(s));
}

/* A command's description as roff: a blank line starts a paragraph, and
 * indented lines (tables, examples) keep their line breaks and blanks. */
static void roff_paragraphs(FILE *out, const char *text)
{
	bool nofill = false;

	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		const char *next = p[n] ? p + n + 1 : p + n;
		bool indented = p[0] == ' ' || p[0] == '\t';

		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (nofill && (n == 0 || !indented)) {
			fputs(".fi\n", out);
			nofill = false;
		}
		if (n == 0) {
			fputs(".PP\n", out);
		} else {
			if (indented && !nofill) {
				fputs(".nf\n", out);
				nofill = true;
			}
			roff_putn(out, p, n);
			fputc('\n', out);
		}
		p = next;
	}
	if (nofill)
		fputs(".fi\n", out);
}

/* "kscope-report(1)" as a reference. */
static void roff_ref(FILE *out, const char *cmd)
{
	fputs("\\fBkscope", out);
	if (cmd) {
		fputs("\\-", out);
		roff_puts(out, cmd);
	}
	fputs("\\fR(1)", out);
}

/* .TH with the page's name in capitals (no date, so that a build is
 * reproducible), then left-aligned text without hyphenation: the pages
 * are full of file and option names that must not be broken. */
static void roff_title(FILE *out, const char *cmd)
{
	fputs(".TH KSCOPE", out);
	if (cmd) {
		fputs("\\-", out);
		for (const char *c = cmd; *c; c++)
			fputc(*c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c, out);
	}
	fputs(" 1 \"\" \"kscope " KS_VERSION "\" \"kscope manual\"\n"
	      ".ad l\n"
	      ".nh\n", out);
}

/* One option, with what --help shows for it (ks_opt_print_help). */
static void man_option(FILE *out, const struct ks_opt *o)
{
	char accepted[512];

	fputs(".TP\n", out);
	if (o->short_name) {
		fputs("\\fB\\-", out);
		roff_putn(out, &o->short_name, 1);
		fputs("\\fR, ", out);
	}
	fputs("\\fB\\-\\-", out);
	roff_puts(out, o->name);
	fputs("\\fR", out);
	if (o->type != KS_OPT_FLAG) {
		fputs(" \\fI", out);
		roff_puts(out, o->metavar ? o->metavar : "VALUE");
		fputs("\\fR", out);
	}
	fputc('\n', out);
	roff_puts(out, o->help);
	if (o->flags & KS_OPT_REPEAT)
		fputs(" (repeatable)", out);
	fputc('\n', out);
	if (o->type != KS_OPT_FLAG) {
		ks_opt_describe(o, accepted, sizeof(accepted));
		fputs(".br\nAccepts: ", out);
		roff_puts(out, accepted);
		fputc('\n', out);
	}
	if (o->def) {
		fputs(".br\nDefault: ", out);
		roff_puts(out, o->def);
		fputc('\n', out);
	}
	if (o->env && !(o->flags & KS_OPT_HIDDEN_ENV)) {
		fputs(".br\nEnvironment: \\fB", out);
		roff_puts(out, o->env);
		fputs("\\fR\n", out);
	}
}

/* ------------------------------------------------------------------ */
/* kscope.1                                                            */
/* ------------------------------------------------------------------ */

/* What the statuses of cli.h mean; the values come from the enum. */
static const struct {
	int status;
	const char *what;
} exit_statuses[] = {
	{ KS_EXIT_OK, "success" },
	{ KS_EXIT_FAIL, "the run failed: kscope could not do it or write its "
			"results" },
	{ KS_EXIT_USAGE, "bad command line or input: nothing ran" },
	{ KS_EXIT_FINDINGS, "findings were reported (memcheck, falseshare; "
			    "--error-exitcode)" },
};

/* An environment variable and the option it sets, with the commands that
 * have that option. */
struct env_use {
	const char *env, *opt;
	uint64_t cmds;         /* bit i: ks_commands[i] */
};

static int env_use_cmp(const void *a, const void *b)
{
	const struct env_use *x = a, *y = b;
	int c = strcmp(x->env, y->env);

	return c ? c : strcmp(x->opt, y->opt);
}

/* Every variable the option tables read, sorted; *n gets how many.
 * Returns a malloc'd array (the caller frees it) or NULL. */
static struct env_use *env_uses(size_t ncmds, size_t *n)
{
	size_t max = 0, k = 0;
	struct env_use *u;

	for (size_t i = 0; i < ncmds; i++)
		for (const struct ks_opt *o = ks_commands[i]->args.opts; o->name; o++)
			max++;
	u = calloc(max + 1, sizeof(*u));
	if (!u)
		return NULL;
	for (size_t i = 0; i < ncmds; i++)
		for (const struct ks_opt *o = ks_commands[i]->args.opts; o->name; o++) {
			size_t j;

			if (!o->env || (o->flags & KS_OPT_HIDDEN_ENV))
				continue;
			for (j = 0; j < k; j++)
				if (strcmp(u[j].env, o->env) == 0 &&
				    strcmp(u[j].opt, o->name) == 0)
					break;
			if (j == k)
				u[k++] = (struct env_use){ o->env, o->name, 0 };
			u[j].cmds |= UINT64_C(1) << i;
		}
	qsort(u, k, sizeof(*u), env_use_cmp);
	*n = k;
	return u;
}

static int man_main(FILE *out, size_t ncmds)
{
	uint64_t all = ncmds == 64 ? UINT64_MAX : (UINT64_C(1) << ncmds) - 1;
	struct env_use *env;
	size_t nenv;

	env = env_uses(ncmds, &nenv);
	if (!env) {
		ks_error("out of memory");
		return -ENOMEM;
	}
	roff_title(out, NULL);
	fputs(".SH NAME\n"
	      "kscope \\- performance\\-analysis toolkit\n"
	      ".SH SYNOPSIS\n"
	      "\\fBkscope\\fR \\fIcommand\\fR [\\fIoptions\\fR] "
	      "[\\fB\\-\\-\\fR \\fIprogram\\fR [\\fIargs\\fR]]\n"
	      ".br\n"
	      "\\fBkscope help\\fR \\fIcommand\\fR\n"
	      ".br\n"
	      "\\fBkscope\\fR \\fIcommand\\fR \\fB\\-\\-help\\fR\n"
	      ".br\n"
	      "\\fBkscope \\-\\-version\\fR\n"
	      ".SH DESCRIPTION\n"
	      "kscope finds where the time of performance\\-critical code goes:\n"
	      "accelerator kernels and multi\\-threaded or MPI programs.\n"
	      ".PP\n"
	      "Each command has its own page, \\fBkscope\\-\\fR\\fIcommand\\fR(1).\n"
	      "A command's whole command line is checked against its option\n"
	      "table before anything runs or is written.  An option's value\n"
	      "comes from the command line, else from its environment variable,\n"
	      "else from its default; all three are checked alike.\n"
	      "Each run that writes results writes them into a new directory\n"
	      "(see \\fBFILES\\fR).\n"
	      ".SH COMMANDS\n"
	      ".TP\n"
	      "\\fBhelp\\fR [\\fIcommand\\fR]\n"
	      "show help for kscope or one command\n", out);
	for (size_t i = 0; i < ncmds; i++) {
		const struct ks_cmd *c = ks_commands[i];

		fputs(".TP\n\\fB", out);
		roff_puts(out, c->name);
		fputs("\\fR ", out);
		roff_puts(out, c->usage);
		fputc('\n', out);
		roff_puts(out, c->summary);
		fputs("; see ", out);
		roff_ref(out, c->name);
		fputc('\n', out);
	}
	fputs(".SH OPTIONS\n"
	      "Before a command:\n"
	      ".TP\n"
	      "\\fB\\-h\\fR, \\fB\\-\\-help\\fR\n"
	      "show the commands and exit\n"
	      ".TP\n"
	      "\\fB\\-V\\fR, \\fB\\-\\-version\\fR\n"
	      "print kscope's version and exit\n"
	      ".SH COMMON OPTIONS\n"
	      "Every command takes these besides its own, which its page lists:\n", out);
	for (const struct ks_opt *o = common_opts; o->name; o++)
		man_option(out, o);
	fputs(".SH ENVIRONMENT\n"
	      "Each option has a variable; a value given on the command line\n"
	      "wins over it.\n", out);
	for (size_t j = 0; j < nenv; j++) {
		bool first = true;

		fputs(".TP\n\\fB", out);
		roff_puts(out, env[j].env);
		fputs("\\fR\n\\fB\\-\\-", out);
		roff_puts(out, env[j].opt);
		fputs("\\fR of ", out);
		if (env[j].cmds == all) {
			fputs("every command\n", out);
			continue;
		}
		for (size_t i = 0; i < ncmds; i++)
			if (env[j].cmds & (UINT64_C(1) << i)) {
				fputs(first ? "" : ", ", out);
				roff_ref(out, ks_commands[i]->name);
				first = false;
			}
		fputc('\n', out);
	}
	free(env);
	fputs(".PP\n"
	      "Besides the options' variables:\n"
	      ".TP\n"
	      "\\fBKSCOPE_CHIP_PATH\\fR\n"
	      "directories, separated by \\(lq:\\(rq, that \\fBkscope predict\\fR\n"
	      "looks in first for chip files\n"
	      ".TP\n"
	      "\\fBKSCOPE_VIEW_PAGE_DIR\\fR\n"
	      "the directory of the viewer's page for \\fBkscope view\\fR,\n"
	      "instead of the installed one (for working on the page)\n"
	      ".TP\n"
	      "\\fBXDG_CACHE_HOME\\fR, \\fBXDG_DATA_HOME\\fR\n"
	      "where \\fBkscope calibrate\\fR keeps what it measured (see \\fBFILES\\fR)\n"
	      ".SH EXIT STATUS\n", out);
	for (size_t i = 0; i < sizeof(exit_statuses) / sizeof(exit_statuses[0]); i++) {
		fprintf(out, ".TP\n\\fB%d\\fR\n", exit_statuses[i].status);
		roff_puts(out, exit_statuses[i].what);
		fputc('\n', out);
	}
	fputs(".TP\n128+\\fIN\\fR\n"
	      "signal \\fIN\\fR ended the program, or interrupted kscope\n"
	      ".TP\n\\fIN\\fR\n"
	      "the program's own exit status, which ", out);
	{
		size_t n = 0, k = 0;

		for (size_t i = 0; i < ncmds; i++)
			n += ks_commands[i]->args.takes_program;
		for (size_t i = 0; i < ncmds; i++)
			if (ks_commands[i]->args.takes_program) {
				k++;
				fputs(k == 1 ? "" : k == n ? " and " : ", ", out);
				roff_puts(out, ks_commands[i]->name);
			}
	}
	fprintf(out, " pass on\n"
		".PP\n"
		"After a run, %d wins over %d, which wins over the program's status.\n",
		KS_EXIT_FAIL, KS_EXIT_FINDINGS);
	fputs(".SH FILES\n"
	      ".TP\n"
	      "\\fIoutput\\fR/\\fIcommand\\fR_\\fIYYYYmmdd\\fR_\\fIHHMMSS\\fR_\\fIpid\\fR/\n"
	      "the new directory each run writes its results into;\n"
	      "\\fIoutput\\fR is \\fB\\-\\-output\\fR, by default\n"
	      "\\fIkscope\\-out\\fR in the current directory\n"
	      ".TP\n"
	      "\\fIprefix\\fR/lib/kscope/\n"
	      "kscope's runtime libraries and Valgrind tool, found next to the\n"
	      "executable \\fIprefix\\fR/bin/kscope\n"
	      ".TP\n"
	      "\\fIprefix\\fR/share/kscope/\n"
	      "kscope's data: chip files for \\fBkscope predict\\fR, the viewer's page\n"
	      ".TP\n"
	      "\\fI$XDG_CACHE_HOME\\fR/kscope/calibration\\-\\fIkey\\fR.json\n"
	      "the ceilings \\fBkscope calibrate\\fR measured on this machine\n"
	      "(\\fI\\(ti/.cache\\fR when XDG_CACHE_HOME is unset)\n"
	      ".TP\n"
	      "\\fI$XDG_DATA_HOME\\fR/kscope/chips/host.json\n"
	      "this machine as a chip for \\fBkscope predict \\-\\-chip host\\fR,\n"
	      "written by \\fBkscope calibrate\\fR\n"
	      "(\\fI\\(ti/.local/share\\fR when XDG_DATA_HOME is unset)\n"
	      ".SH SEE ALSO\n", out);
	for (size_t i = 0; i < ncmds; i++) {
		roff_ref(out, ks_commands[i]->name);
		fputs(i + 1 < ncmds ? ",\n" : "\n", out);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* kscope-<command>.1                                                  */
/* ------------------------------------------------------------------ */

/* Whether text names `kscope NAME` as a whole word. */
static bool mentions(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; (p = strstr(p, "kscope ")); p++) {
		const char *w = p + strlen("kscope ");

		if (strncmp(w, name, n) == 0 &&
		    !(w[n] >= 'a' && w[n] <= 'z') && w[n] != '-')
			return true;
	}
	return false;
}

static int man_command(FILE *out, const struct ks_cmd *c)
{
	const struct ks_cmd_args *a = &c->args;
	char accepted[512];

	roff_title(out, c->name);
	fputs(".SH NAME\nkscope\\-", out);
	roff_puts(out, c->name);
	fputs(" \\- ", out);
	roff_puts(out, c->summary);
	fputs("\n.SH SYNOPSIS\n\\fBkscope ", out);
	roff_puts(out, c->name);
	fputs("\\fR ", out);
	roff_puts(out, c->usage);
	fputs("\n.SH DESCRIPTION\n", out);
	roff_paragraphs(out, c->description ? c->description : c->summary);
	fputs(".SH OPTIONS\n", out);
	for (const struct ks_opt *o = a->opts; o->name; o++)
		man_option(out, o);
	if (a->positional || a->takes_program)
		fputs(".SH ARGUMENTS\n", out);
	if (a->positional) {
		fputs(".TP\n\\fI", out);
		roff_puts(out, a->positional->metavar ? a->positional->metavar
						     : a->positional->name);
		fputs("\\fR\n", out);
		ks_opt_describe(a->positional, accepted, sizeof(accepted));
		fputs("Accepts: ", out);
		roff_puts(out, accepted);
		fputc('\n', out);
	}
	/* ks_opt_parse: without positional arguments, the first word that
	 * is no option starts the program too. */
	if (a->takes_program)
		fprintf(out, ".TP\n\\fIPROGRAM\\fR [\\fIARGS\\fR...]\n"
			"the program to run and its arguments, after \\fB\\-\\-\\fR%s;\n"
			"they reach the program unchanged\n",
			a->positional ? "" : "\n(or from the first word that is not an option)");
	fputs(".SH ENVIRONMENT\n"
	      "Each option's variable is listed with it; a value given on the\n"
	      "command line wins over the variable, the variable over the\n"
	      "default.\n"
	      ".SH EXIT STATUS\n"
	      "As ", out);
	roff_ref(out, NULL);
	fputs(" says.\n.SH SEE ALSO\n", out);
	roff_ref(out, NULL);
	for (int i = 0; ks_commands[i]; i++)
		if (ks_commands[i] != c && c->description &&
		    mentions(c->description, ks_commands[i]->name)) {
			fputs(",\n", out);
			roff_ref(out, ks_commands[i]->name);
		}
	fputc('\n', out);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Bash completion                                                     */
/* ------------------------------------------------------------------ */

/* Whether s can stand unquoted in the script, in a case pattern or a
 * compgen -W list.  The tables use nothing else; a name that does not fit
 * stops the generation rather than make a script that breaks. */
static bool shell_word_ok(const char *s)
{
	if (!s || !*s)
		return false;
	for (; *s; s++)
		if (!(*s >= 'a' && *s <= 'z') && !(*s >= 'A' && *s <= 'Z') &&
		    !(*s >= '0' && *s <= '9') && !strchr("-_.+:@%/,", *s))
			return false;
	return true;
}

/* Whether one of the |-separated alternatives of metavar is word. */
static bool metavar_has(const char *metavar, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = metavar;; p++) {
		if (strncmp(p, word, n) == 0 && (p[n] == '|' || p[n] == '\0'))
			return true;
		p = strchr(p, '|');
		if (!p)
			return false;
	}
}

/* What the completion offers for an option's or argument's value.  Text
 * that names a file not checked as a path (one to be created, "NAME|FILE")
 * says so in its metavar. */
static const char *value_kind(const struct ks_opt *o)
{
	switch (o->type) {
	case KS_OPT_FLAG:
		return "none";
	case KS_OPT_ENUM:
		return "enum";
	case KS_OPT_PATH:
		return (o->flags & KS_PATH_DIR) ? "dir" : "file";
	case KS_OPT_OUTPUT:
		return "dir";
	default:
		if (o->metavar && (metavar_has(o->metavar, "FILE") ||
				   metavar_has(o->metavar, "PATH")))
			return "file";
		if (o->metavar && metavar_has(o->metavar, "DIR"))
			return "dir";
		return "word";
	}
}

static int check_table(const struct ks_cmd *c)
{
	if (!shell_word_ok(c->name)) {
		ks_error("command '%s': not a name the completion can use", c->name);
		return -EINVAL;
	}
	for (const struct ks_opt *o = c->args.opts; o->name; o++) {
		bool ok = shell_word_ok(o->name) &&
			  (!o->short_name || shell_word_ok((char[]){ o->short_name, 0 }));

		for (int k = 0; ok && o->type == KS_OPT_ENUM && o->choices[k]; k++)
			ok = shell_word_ok(o->choices[k]);
		if (!ok) {
			ks_error("kscope %s --%s: a name or choice the completion "
				 "cannot use", c->name, o->name);
			return -EINVAL;
		}
	}
	return 0;
}

/* The script's fixed part: it reads the generated __kscope_cmd and
 * __kscope_value and walks the words before the cursor as ks_opt_parse
 * does (an option's value, "--", the first plain word of a command that
 * runs a program and takes no arguments). */
static const char completion_body[] =
	"# __kscope_reply KIND CUR [CHOICES]: the values of that kind starting\n"
	"# with CUR.\n"
	"__kscope_reply()\n"
	"{\n"
	"\tcase $1 in\n"
	"\tenum) mapfile -t COMPREPLY < <(compgen -W \"$3\" -- \"$2\") ;;\n"
	"\tfile)\n"
	"\t\tcompopt -o filenames 2>/dev/null\n"
	"\t\tmapfile -t COMPREPLY < <(compgen -f -- \"$2\") ;;\n"
	"\tdir)\n"
	"\t\tcompopt -o filenames 2>/dev/null\n"
	"\t\tmapfile -t COMPREPLY < <(compgen -d -- \"$2\") ;;\n"
	"\t*) COMPREPLY=() ;;\n"
	"\tesac\n"
	"}\n"
	"\n"
	"# __kscope_program START: the program's command line starts at word\n"
	"# START; none of kscope's options or commands are offered there.\n"
	"__kscope_program()\n"
	"{\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]}\n"
	"\n"
	"\tif declare -F _command_offset >/dev/null; then\n"
	"\t\t_command_offset \"$1\" # bash-completion: the program's own\n"
	"\telif (( COMP_CWORD == $1 )); then\n"
	"\t\tcompopt -o filenames 2>/dev/null\n"
	"\t\tmapfile -t COMPREPLY < <(compgen -c -- \"$cur\"; compgen -f -- \"$cur\")\n"
	"\telse\n"
	"\t\tcompopt -o filenames 2>/dev/null\n"
	"\t\tmapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
	"\tfi\n"
	"}\n"
	"\n"
	"_kscope()\n"
	"{\n"
	"\tlocal cur=${COMP_WORDS[COMP_CWORD]} cmd w i np=0\n"
	"\tlocal opts prog npos pos kind choices\n"
	"\n"
	"\tCOMPREPLY=()\n"
	"\tif (( COMP_CWORD == 1 )); then\n"
	"\t\tif [[ $cur == -* ]]; then\n"
	"\t\t\t__kscope_reply enum \"$cur\" '--help --version -h -V'\n"
	"\t\telse\n"
	"\t\t\t__kscope_reply enum \"$cur\" \"help $__kscope_commands\"\n"
	"\t\tfi\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\tcmd=${COMP_WORDS[1]}\n"
	"\tif [[ $cmd == help ]]; then\n"
	"\t\t(( COMP_CWORD == 2 )) && __kscope_reply enum \"$cur\" \"$__kscope_commands\"\n"
	"\t\treturn 0\n"
	"\tfi\n"
	"\t__kscope_cmd \"$cmd\" || return 0\n"
	"\tfor (( i = 2; i < COMP_CWORD; i++ )); do\n"
	"\t\tw=${COMP_WORDS[i]}\n"
	"\t\tif [[ $w == -- ]]; then\n"
	"\t\t\t__kscope_program $(( i + 1 ))\n"
	"\t\t\treturn 0\n"
	"\t\telif [[ $w == -?* ]]; then\n"
	"\t\t\t__kscope_value \"$cmd\" \"${w%%=*}\"\n"
	"\t\t\tif [[ ${COMP_WORDS[i+1]-} == = ]]; then\n"
	"\t\t\t\t# --option=value, split at the '=' (COMP_WORDBREAKS)\n"
	"\t\t\t\tif (( COMP_CWORD == i + 1 )); then\n"
	"\t\t\t\t\t__kscope_reply \"$kind\" '' \"$choices\"\n"
	"\t\t\t\t\treturn 0\n"
	"\t\t\t\telif (( COMP_CWORD == i + 2 )); then\n"
	"\t\t\t\t\t__kscope_reply \"$kind\" \"$cur\" \"$choices\"\n"
	"\t\t\t\t\treturn 0\n"
	"\t\t\t\tfi\n"
	"\t\t\t\t(( i += 2 ))\n"
	"\t\t\telif [[ $w != *=* && $kind != none ]]; then\n"
	"\t\t\t\tif (( COMP_CWORD == i + 1 )); then\n"
	"\t\t\t\t\t__kscope_reply \"$kind\" \"$cur\" \"$choices\"\n"
	"\t\t\t\t\treturn 0\n"
	"\t\t\t\tfi\n"
	"\t\t\t\t(( i++ ))\n"
	"\t\t\tfi\n"
	"\t\telif (( prog && !npos )); then\n"
	"\t\t\t__kscope_program \"$i\"\n"
	"\t\t\treturn 0\n"
	"\t\telse\n"
	"\t\t\t(( np++ ))\n"
	"\t\tfi\n"
	"\tdone\n"
	"\tif [[ $cur == --*=* ]]; then\n"
	"\t\t# --option=value in one word ('=' is not a word break here)\n"
	"\t\t__kscope_value \"$cmd\" \"${cur%%=*}\"\n"
	"\t\t__kscope_reply \"$kind\" \"${cur#*=}\" \"$choices\"\n"
	"\t\t(( ${#COMPREPLY[@]} )) && COMPREPLY=(\"${COMPREPLY[@]/#/${cur%%=*}=}\")\n"
	"\telif [[ $cur == -* ]]; then\n"
	"\t\t__kscope_reply enum \"$cur\" \"$opts\"\n"
	"\telif (( prog && !npos )); then\n"
	"\t\t__kscope_program \"$COMP_CWORD\"\n"
	"\telif (( np < npos )); then\n"
	"\t\t__kscope_reply \"$pos\" \"$cur\"\n"
	"\telse\n"
	"\t\t__kscope_reply enum \"$cur\" \"$opts\"\n"
	"\tfi\n"
	"\treturn 0\n"
	"}\n"
	"\n"
	"complete -F _kscope kscope\n";

static int completion_bash(FILE *out, size_t ncmds)
{
	for (size_t i = 0; i < ncmds; i++) {
		int rc = check_table(ks_commands[i]);

		if (rc)
			return rc;
	}
	fputs("# bash completion for kscope\n"
	      "#\n"
	      "# Generated by `kscope help --completion FILE` from kscope's command\n"
	      "# and option tables (src/cli/gendoc.c): change those, not this file.\n"
	      "# Completes the commands, each command's options, the choices of\n"
	      "# options that have them, and file names where a path goes; after\n"
	      "# `--`, or the program's name, only the program's command line.\n"
	      "\n"
	      "__kscope_commands='", out);
	for (size_t i = 0; i < ncmds; i++)
		fprintf(out, "%s%s", i ? " " : "", ks_commands[i]->name);
	fputs("'\n"
	      "\n"
	      "# __kscope_cmd CMD: sets opts (CMD's options), prog (1: CMD runs a\n"
	      "# program), npos (how many arguments it takes) and pos (what they\n"
	      "# are); fails for a word that is no command.\n"
	      "__kscope_cmd()\n"
	      "{\n"
	      "\tcase $1 in\n", out);
	for (size_t i = 0; i < ncmds; i++) {
		const struct ks_cmd_args *a = &ks_commands[i]->args;

		fprintf(out, "\t%s)\n\t\topts='", ks_commands[i]->name);
		for (const struct ks_opt *o = a->opts; o->name; o++)
			fprintf(out, "%s--%s", o == a->opts ? "" : " ", o->name);
		fprintf(out, "'\n\t\tprog=%d npos=%d pos=%s ;;\n", a->takes_program ? 1 : 0,
			a->positional ? a->pos_max : 0,
			a->positional ? value_kind(a->positional) : "none");
	}
	fputs("\t*) return 1 ;;\n"
	      "\tesac\n"
	      "}\n"
	      "\n"
	      "# __kscope_value CMD OPTION: sets kind to what OPTION's value is (none:\n"
	      "# it takes none, or is no option of CMD; enum, file, dir, word) and\n"
	      "# choices to the values of an enum.\n"
	      "__kscope_value()\n"
	      "{\n"
	      "\tkind=none choices=\n"
	      "\tcase $1 in\n", out);
	for (size_t i = 0; i < ncmds; i++) {
		const struct ks_cmd_args *a = &ks_commands[i]->args;

		fprintf(out, "\t%s)\n\t\tcase $2 in\n", ks_commands[i]->name);
		for (const struct ks_opt *o = a->opts; o->name; o++) {
			if (o->type == KS_OPT_FLAG)
				continue;
			fprintf(out, "\t\t--%s", o->name);
			if (o->short_name)
				fprintf(out, "|-%c", o->short_name);
			fprintf(out, ") kind=%s", value_kind(o));
			if (o->type == KS_OPT_ENUM) {
				fputs(" choices='", out);
				for (int k = 0; o->choices[k]; k++)
					fprintf(out, "%s%s", k ? " " : "", o->choices[k]);
				fputc('\'', out);
			}
			fputs(" ;;\n", out);
		}
		fputs("\t\tesac ;;\n", out);
	}
	fputs("\tesac\n"
	      "}\n"
	      "\n", out);
	fputs(completion_body, out);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Files and the mode's command line                                   */
/* ------------------------------------------------------------------ */

struct page {
	const struct ks_cmd *cmd;  /* NULL: kscope.1 */
	size_t ncmds;
	bool completion;
};

static int generate(FILE *out, const struct page *pg)
{
	if (pg->completion)
		return completion_bash(out, pg->ncmds);
	if (pg->cmd)
		return man_command(out, pg->cmd);
	return man_main(out, pg->ncmds);
}

/* Writes path under a temporary name first, so that a failed run leaves
 * no file that looks complete.  Errors are reported here. */
static int write_file(const char *path, const struct page *pg)
{
	char tmp[4096], q[256];
	FILE *f;
	int rc;

	ks_quote(q, sizeof(q), path, strlen(path));
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		ks_error("'%s': path too long", q);
		return -ENAMETOOLONG;
	}
	f = fopen(tmp, "w");
	if (!f) {
		rc = -errno;
		ks_error("cannot create '%s.tmp': %s", q, strerror(-rc));
		return rc;
	}
	rc = generate(f, pg);
	if (rc) {
		fclose(f);
		unlink(tmp);
		return rc; /* reported by the generator */
	}
	if (ferror(f))
		rc = -EIO;
	if (fclose(f) != 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc) {
		ks_error("cannot write '%s': %s", q, strerror(-rc));
		unlink(tmp);
	}
	return rc;
}

bool ks_gendoc_is_mode(const char *arg)
{
	return strcmp(arg, "--man") == 0 || strcmp(arg, "--completion") == 0;
}

int ks_gendoc_main(int argc, char **argv)
{
	struct page pg = { .ncmds = 0 };
	char path[4096];

	if (argc != 2 || !argv[1][0]) {
		ks_error("'kscope help %s' takes one %s", argv[0],
			 strcmp(argv[0], "--man") == 0 ? "directory" : "file name");
		return KS_EXIT_USAGE;
	}
	while (ks_commands[pg.ncmds])
		pg.ncmds++;
	/* env_uses keeps a command set in 64 bits. */
	if (pg.ncmds > 64) {
		ks_error("more than 64 commands: env_uses needs a wider set");
		return KS_EXIT_FAIL;
	}
	if (strcmp(argv[0], "--completion") == 0) {
		pg.completion = true;
		return write_file(argv[1], &pg) ? KS_EXIT_FAIL : KS_EXIT_OK;
	}
	/* kscope.1 first (pg.cmd NULL), then a page per command. */
	for (size_t i = 0; i <= pg.ncmds; i++) {
		pg.cmd = i ? ks_commands[i - 1] : NULL;
		if (pg.cmd && check_table(pg.cmd))
			return KS_EXIT_FAIL;
		if ((size_t)snprintf(path, sizeof(path), "%s/kscope%s%s.1", argv[1],
				     pg.cmd ? "-" : "", pg.cmd ? pg.cmd->name : "")
		    >= sizeof(path)) {
			ks_error("'kscope help --man': directory name too long");
			return KS_EXIT_FAIL;
		}
		if (write_file(path, &pg))
			return KS_EXIT_FAIL;
	}
	return KS_EXIT_OK;
}
