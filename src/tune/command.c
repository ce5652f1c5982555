/*
 * kscope tune's build and run commands: a command string split into an
 * argument vector by kscope itself, since it never goes through a shell.
 *
 * Words are separated by blanks.  '...' keeps everything up to the next
 * ' as it is; "..." does too, except that \" and \\ stand for " and \;
 * outside quotes, \ takes the next character as it is.  {src}, {exe},
 * {dir} and {srcdir} are replaced inside a word (outside single quotes
 * and unless escaped), so a path with blanks stays one argument.  A
 * placeholder is kept in the split word as the byte 0x01 and '0' + its
 * number until ks_tune_cmd_expand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck.h"
#include "tune_int.h"

#define PH_MARK '\x01'

static const char *const ph_names[KS_TUNE_PH_COUNT] = { "src", "exe", "dir", "srcdir" };

/* A growing word. */
struct word {
	char *s;
	size_t len, cap;
	bool started;   /* quotes make a word even when it stays empty */
};

static int word_put(struct word *w, char c)
{
	if (w->len + 2 > w->cap) {
		size_t ncap = w->cap ? w->cap * 2 : 64;
		char *n = realloc(w->s, ncap);

		if (!n)
			return -ENOMEM;
		w->s = n;
		w->cap = ncap;
	}
	w->s[w->len++] = c;
	w->s[w->len] = '\0';
	w->started = true;
	return 0;
}

static int cmd_push(struct ks_tune_cmd *c, struct word *w)
{
	char **n;

	if (!w->s && !(w->s = strdup("")))
		return -ENOMEM;
	n = realloc(c->words, (c->nwords + 2) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	c->words = n;
	c->words[c->nwords++] = w->s;
	c->words[c->nwords] = NULL;
	memset(w, 0, sizeof(*w));
	return 0;
}

/* At text[i] == '{': the placeholder's number and its length, 0 when
 * this is not `{lowercase}`, or -EINVAL for an unknown name. */
static int placeholder(const char *text, size_t i, int *ph, size_t *len)
{
	size_t j = i + 1;

	while (text[j] >= 'a' && text[j] <= 'z')
		j++;
	if (j == i + 1 || text[j] != '}')
		return 0;
	for (int p = 0; p < KS_TUNE_PH_COUNT; p++)
		if (strlen(ph_names[p]) == j - i - 1 &&
		    memcmp(ph_names[p], text + i + 1, j - i - 1) == 0) {
			*ph = p;
			*len = j - i + 1;
			return 1;
		}
	*len = j - i + 1;
	return -EINVAL;
}

int ks_tune_cmd_parse(const char *text, const char *what, struct ks_tune_cmd *c,
		      struct ks_err *err)
{
	struct word w = { 0 };
	char q[128];
	size_t i = 0, n = strlen(text);
	int rc = 0;

	memset(c, 0, sizeof(*c));
	ks_quote(q, sizeof(q), text, n);
	if (n > KS_TUNE_MAX_COMMAND)
		return ks_err_set(err, -EINVAL, "%s: the command is longer than %d "
				  "characters", what, KS_TUNE_MAX_COMMAND);
	for (size_t k = 0; k < n; k++)
		if ((unsigned char)text[k] < 0x20 && text[k] != '\t')
			return ks_err_set(err, -EINVAL, "%s: '%s' contains a control "
					  "character; accepted: printable text", what, q);
	while (i < n) {
		char ch = text[i];

		if (ch == ' ' || ch == '\t') {
			if (w.started && (rc = cmd_push(c, &w)))
				goto nomem;
			i++;
		} else if (ch == '\'') {
			const char *close = strchr(text + i + 1, '\'');

			if (!close) {
				rc = ks_err_set(err, -EINVAL, "%s: '%s' has an unbalanced ' "
						"(opened at character %zu); accepted: a "
						"command whose quotes are closed", what, q,
						i + 1);
				goto out;
			}
			w.started = true;
			for (i++; text + i < close; i++)
				if ((rc = word_put(&w, text[i])))
					goto nomem;
			i++;
		} else if (ch == '"') {
			size_t open = i;

			w.started = true;
			for (i++; i < n && text[i] != '"'; i++) {
				int p = 0;
				size_t len = 0;

				if (text[i] == '\\' && (text[i + 1] == '"' || text[i + 1] == '\\'))
					i++;
				else if (text[i] == '{') {
					int r = placeholder(text, i, &p, &len);

					if (r < 0)
						goto unknown_ph;
					if (r > 0) {
						if ((rc = word_put(&w, PH_MARK)) ||
						    (rc = word_put(&w, (char)('0' + p))))
							goto nomem;
						c->has[p] = true;
						i += len - 1;
						continue;
					}
				}
				if ((rc = word_put(&w, text[i])))
					goto nomem;
			}
			if (i >= n) {
				rc = ks_err_set(err, -EINVAL, "%s: '%s' has an unbalanced \" "
						"(opened at character %zu); accepted: a "
						"command whose quotes are closed", what, q,
						open + 1);
				goto out;
			}
			i++;
		} else if (ch == '\\') {
			if (i + 1 >= n) {
				rc = ks_err_set(err, -EINVAL, "%s: '%s' ends with a lone "
						"backslash; accepted: \\ followed by the "
						"character it escapes", what, q);
				goto out;
			}
			if ((rc = word_put(&w, text[i + 1])))
				goto nomem;
			i += 2;
		} else if (ch == '{') {
			int p = 0;
			size_t len = 0;
			int r = placeholder(text, i, &p, &len);

			if (r < 0)
				goto unknown_ph;
			if (r > 0) {
				if ((rc = word_put(&w, PH_MARK)) ||
				    (rc = word_put(&w, (char)('0' + p))))
					goto nomem;
				c->has[p] = true;
				i += len;
			} else {
				if ((rc = word_put(&w, ch)))
					goto nomem;
				i++;
			}
		} else {
			if ((rc = word_put(&w, ch)))
				goto nomem;
			i++;
		}
		if (c->nwords >= KS_TUNE_MAX_WORDS) {
			rc = ks_err_set(err, -EINVAL, "%s: the command has more than %d "
					"words", what, KS_TUNE_MAX_WORDS);
			goto out;
		}
	}
	if (w.started && (rc = cmd_push(c, &w)))
		goto nomem;
	if (c->nwords == 0) {
		rc = ks_err_set(err, -EINVAL, "%s: the command is empty; accepted: a "
				"program and its arguments, e.g. \"cc -O2 {src} -o {exe}\"",
				what);
		goto out;
	}
	return 0;

unknown_ph:
	{
		/* The offending {name}, for the message. */
		size_t j = i + 1;
		char name[64];

		while (text[j] >= 'a' && text[j] <= 'z')
			j++;
		ks_quote(name, sizeof(name), text + i, j + 1 - i);
		rc = ks_err_set(err, -EINVAL, "%s: unknown placeholder %s in '%s'; "
				"accepted: {src}, {exe}, {dir}, {srcdir} (write \\{ for a "
				"literal brace)", what, name, q);
		goto out;
	}
nomem:
	rc = ks_err_set(err, -ENOMEM, "out of memory");
out:
	free(w.s);
	ks_tune_cmd_free(c);
	return rc;
}

bool ks_tune_cmd_word_has_ph(const struct ks_tune_cmd *c, size_t w)
{
	return strchr(c->words[w], PH_MARK) != NULL;
}

char **ks_tune_cmd_expand(const struct ks_tune_cmd *c, const char *const *vals)
{
	char **argv = calloc(c->nwords + 1, sizeof(*argv));

	if (!argv)
		return NULL;
	for (size_t w = 0; w < c->nwords; w++) {
		const char *s = c->words[w];
		size_t len = 0;
		char *o;

		for (const char *p = s; *p; p++) {
			if (*p == PH_MARK) {
				len += strlen(vals[p[1] - '0']);
				p++;
			} else {
				len++;
			}
		}
		o = argv[w] = malloc(len + 1);
		if (!o) {
			ks_tune_argv_free(argv);
			return NULL;
		}
		for (const char *p = s; *p; p++) {
			if (*p == PH_MARK) {
				size_t vl = strlen(vals[p[1] - '0']);

				memcpy(o, vals[p[1] - '0'], vl);
				o += vl;
				p++;
			} else {
				*o++ = *p;
			}
		}
		*o = '\0';
	}
	return argv;
}

void ks_tune_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **a = argv; *a; a++)
		free(*a);
	free(argv);
}

void ks_tune_cmd_free(struct ks_tune_cmd *c)
{
	if (c->words)
		for (size_t i = 0; i < c->nwords; i++)
			free(c->words[i]);
	free(c->words);
	memset(c, 0, sizeof(*c));
}
