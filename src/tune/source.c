/*
 * The source's tunable lines: lines whose code is followed by a
 * `// tunable` comment, in one of the forms
 *     #define KEY VALUE          // tunable
 *     TYPE... KEY = VALUE;       // tunable   (const, constexpr, static ...)
 *     using KEY = VALUE;         // tunable
 * and the variants' text, where only the VALUE bytes of those lines
 * change.  Everything else is copied byte for byte (line endings, a
 * missing final newline, NUL bytes), so the compiler's messages about a
 * variant point at the same lines as in the source.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck.h"
#include "tune_int.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\f' || c == '\v';
}

static bool is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (c >= '0' && c <= '9');
}

/* ------------------------------------------------------------------ */
/* Finding the markers: a small C lexer                                */
/* ------------------------------------------------------------------ */

/* Where the scan is at the start of a line.  Only what decides whether a
 * `//` starts a comment matters: block comments, string and character
 * literals (C++ raw strings too) and line comments continued with a
 * backslash.  A string or character literal never goes past the end of
 * its line unless the line ends with a backslash. */
enum lex_state { LX_CODE, LX_BLOCK, LX_LINE, LX_STR, LX_CHR, LX_RAW };

struct lexer {
	enum lex_state st;
	char delim[17];            /* a raw string's delimiter */
	size_t dlen;
};

/* Whether line[at..len) is a marker's text: blanks, then the word
 * "tunable" (what follows it, after a blank or ':', is free text). */
static bool is_marker_text(const char *line, size_t at, size_t len)
{
	static const char word[] = "tunable";
	size_t j = at, wl = sizeof(word) - 1;

	while (j < len && is_blank(line[j]))
		j++;
	return len - j >= wl && memcmp(line + j, word, wl) == 0 &&
	       (j + wl == len || !is_ident_char(line[j + wl]));
}

/* The identifier characters just before offset i: their start. */
static size_t word_start(const char *line, size_t i)
{
	while (i > 0 && is_ident_char(line[i - 1]))
		i--;
	return i;
}

/* Whether line[ws..i) is a raw string prefix: R, u8R, uR, UR or LR. */
static bool raw_prefix(const char *line, size_t ws, size_t i)
{
	static const char *const prefixes[] = { "R", "u8R", "uR", "UR", "LR" };

	for (size_t p = 0; p < sizeof(prefixes) / sizeof(prefixes[0]); p++)
		if (strlen(prefixes[p]) == i - ws &&
		    memcmp(line + ws, prefixes[p], i - ws) == 0)
			return true;
	return false;
}

/* Scans one line (len bytes, without its '\n') from the state lx holds,
 * and leaves in lx the state the next line starts in.  Returns the
 * offset of the line comment that is a `// tunable` marker, or -1: a
 * `//` inside a string, a character literal or a block comment, or
 * inside a line comment that started earlier on the line, is not one. */
static long lex_line(struct lexer *lx, const char *line, size_t len)
{
	long marker = -1;
	size_t i = 0, end = len;

	while (i < len) {
		char c = line[i];

		switch (lx->st) {
		case LX_CODE:
			if (c == '/' && i + 1 < len && line[i + 1] == '/') {
				if (is_marker_text(line, i + 2, len))
					marker = (long)i;
				lx->st = LX_LINE;
				i = len;
				continue;
			}
			if (c == '/' && i + 1 < len && line[i + 1] == '*') {
				lx->st = LX_BLOCK;
				i += 2;
				continue;
			}
			if (c == '"') {
				size_t ws = word_start(line, i), d = i + 1;

				if (raw_prefix(line, ws, i)) {
					while (d < len && d - i - 1 < sizeof(lx->delim) - 1 &&
					       line[d] != '(' && line[d] != ')' &&
					       line[d] != '\\' && !is_blank(line[d]) &&
					       line[d] != '"')
						d++;
					if (d < len && line[d] == '(') {
						lx->dlen = d - i - 1;
						memcpy(lx->delim, line + i + 1, lx->dlen);
						lx->st = LX_RAW;
						i = d + 1;
						continue;
					}
				}
				lx->st = LX_STR;
			} else if (c == '\'') {
				size_t ws = word_start(line, i);

				/* 1'000'000: a C23 / C++14 digit separator. */
				if (!(ws < i && line[ws] >= '0' && line[ws] <= '9'))
					lx->st = LX_CHR;
			}
			i++;
			continue;
		case LX_BLOCK:
			if (c == '*' && i + 1 < len && line[i + 1] == '/') {
				lx->st = LX_CODE;
				i += 2;
				continue;
			}
			i++;
			continue;
		case LX_STR:
		case LX_CHR:
			if (c == '\\') {
				i += 2;
				continue;
			}
			if (c == (lx->st == LX_STR ? '"' : '\''))
				lx->st = LX_CODE;
			i++;
			continue;
		case LX_RAW:
			if (c == ')' && len - i > lx->dlen + 1 &&
			    memcmp(line + i + 1, lx->delim, lx->dlen) == 0 &&
			    line[i + 1 + lx->dlen] == '"') {
				lx->st = LX_CODE;
				i += lx->dlen + 2;
				continue;
			}
			i++;
			continue;
		case LX_LINE:
			i = len;
			continue;
		}
	}
	/* A backslash at the end of the line (before a '\r') splices the
	 * next line onto this one. */
	if (end > 0 && line[end - 1] == '\r')
		end--;
	if (end > 0 && line[end - 1] == '\\')
		return marker;
	if (lx->st == LX_LINE || lx->st == LX_STR || lx->st == LX_CHR)
		lx->st = LX_CODE;
	return marker;
}

static const char forms[] =
	"accepted: '#define KEY VALUE // tunable', 'TYPE KEY = VALUE; // tunable' "
	"(const, constexpr, static ... before it) or 'using KEY = VALUE; // tunable'";

/* Whether code (n bytes, without its final ';') declares more than one
 * name: a ',' outside parentheses, brackets, braces and template angle
 * brackets (`int A = 1, B = 2`, `int A, B = 2`), or a second '=' outside
 * parentheses, brackets and braces that is not part of ==, !=, <=, >=
 * (`int A = x < y, B = 2`).  String and character literals are
 * skipped.  Such a line cannot be tuned by replacing one value: kscope
 * would take everything after the first '=' as the value and drop the
 * other names. */
static bool declares_several(const char *code, size_t n)
{
	int depth = 0, angle = 0, eqs = 0;

	for (size_t i = 0; i < n; i++) {
		char c = code[i];

		if (c == '"' || c == '\'') {
			for (i++; i < n && code[i] != c; i++)
				if (code[i] == '\\')
					i++;
			continue;
		}
		if (c == '(' || c == '[' || c == '{')
			depth++;
		else if ((c == ')' || c == ']' || c == '}') && depth > 0)
			depth--;
		else if (c == '<' && depth == 0)
			angle++;
		else if (c == '>' && depth == 0 && angle > 0)
			angle--;
		else if (c == ',' && depth == 0 && angle == 0)
			return true;
		else if (c == '=' && depth == 0 &&
			 !(i + 1 < n && code[i + 1] == '=') &&
			 !(i > 0 && strchr("=!<>+-*/%&|^", code[i - 1])))
			eqs++;
	}
	return eqs > 1;
}

/* Parses the code before a marker: line[0..len), which starts at offset
 * base of the file.  Fills l or returns -EINVAL with err. */
static int parse_code(const char *line, size_t len, size_t base, const char *name,
		      size_t lineno, struct ks_tune_line *l, struct ks_err *err)
{
	size_t i = 0, end = len, ks, ke;
	char q[160];

	while (end > 0 && (is_blank(line[end - 1]) || line[end - 1] == '\r'))
		end--;
	while (i < end && is_blank(line[i]))
		i++;
	ks_quote(q, sizeof(q), line + i, end - i);
	if (i < end && line[i] == '#') {
		/* #define KEY VALUE */
		i++;
		while (i < end && is_blank(line[i]))
			i++;
		if (end - i < 7 || memcmp(line + i, "define", 6) != 0 || !is_blank(line[i + 6]))
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' is not a tunable "
					  "line; %s", name, lineno, q, forms);
		i += 6;
		while (i < end && is_blank(line[i]))
			i++;
		ks = i;
		while (i < end && is_ident_char(line[i]))
			i++;
		ke = i;
		if (ke == ks || !ks_tune_is_ident(line + ks, ke - ks))
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' defines no name; %s",
					  name, lineno, q, forms);
		if (i < end && line[i] == '(')
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' is a function-like "
					  "macro; %s", name, lineno, q, forms);
		if (i < end && !is_blank(line[i]))
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' is not a tunable "
					  "line; %s", name, lineno, q, forms);
		while (i < end && is_blank(line[i]))
			i++;
		if (i == end)
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' has no value to tune; "
					  "%s", name, lineno, q, forms);
	} else {
		/* ... KEY = VALUE; */
		const char *eq;

		if (end == i || line[end - 1] != ';')
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' is not a tunable "
					  "line (it does not end with ';'); %s", name, lineno,
					  q, forms);
		eq = memchr(line + i, '=', end - i);
		if (!eq || eq[1] == '=' ||
		    (eq > line + i && strchr("!<>=+-*/%&|^", eq[-1])))
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' has no 'KEY = VALUE'; "
					  "%s", name, lineno, q, forms);
		ke = (size_t)(eq - line);
		while (ke > i && is_blank(line[ke - 1]))
			ke--;
		ks = ke;
		while (ks > i && is_ident_char(line[ks - 1]))
			ks--;
		if (ks == ke || !ks_tune_is_ident(line + ks, ke - ks))
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' has no name before "
					  "'='; %s", name, lineno, q, forms);
		if (declares_several(line + i, end - 1 - i))
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' declares more than "
					  "one name; accepted: one name per tunable line, "
					  "e.g. 'int %.*s = VALUE; // tunable' with the other "
					  "names on lines of their own", name, lineno, q,
					  (int)(ke - ks), line + ks);
		i = (size_t)(eq - line) + 1;
		end--; /* the ';' */
		while (end > i && is_blank(line[end - 1]))
			end--;
		while (i < end && is_blank(line[i]))
			i++;
		if (i == end)
			return ks_err_set(err, -EINVAL, "%s:%zu: '%s' has no value to tune; "
					  "%s", name, lineno, q, forms);
	}
	if (ke - ks > KS_TUNE_MAX_KEY)
		return ks_err_set(err, -EINVAL, "%s:%zu: the name in '%s' is longer than "
				  "%d characters", name, lineno, q, KS_TUNE_MAX_KEY);
	memcpy(l->key, line + ks, ke - ks);
	l->key[ke - ks] = '\0';
	l->lineno = lineno;
	l->vstart = base + i;
	l->vend = base + end;
	l->key_index = -1;
	return 0;
}

int ks_tune_source_scan(const char *data, size_t size, const char *name,
			struct ks_tune_source *s, struct ks_err *err)
{
	size_t pos = 0, lineno = 0, cap = 0;
	struct lexer lx = { .st = LX_CODE };
	int rc;

	memset(s, 0, sizeof(*s));
	s->data = malloc(size + 1);
	if (!s->data)
		return ks_err_set(err, -ENOMEM, "out of memory");
	memcpy(s->data, data, size);
	s->data[size] = '\0';
	s->size = size;
	while (pos < size) {
		const char *line = s->data + pos, *nl = memchr(line, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - line) : size - pos;
		long m = lex_line(&lx, line, len);
		size_t j = 0;

		lineno++;
		if (m >= 0) {
			while (j < (size_t)m && (is_blank(line[j]) || line[j] == '\r'))
				j++;
		}
		/* A comment line mentioning `// tunable` has no code: not a
		 * tunable line.  Nor is a `// tunable` inside a string, a
		 * block comment or another comment (lex_line). */
		if (m >= 0 && j < (size_t)m) {
			if (s->nlines == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct ks_tune_line *nl2 = realloc(s->lines, ncap * sizeof(*nl2));

				if (!nl2) {
					rc = ks_err_set(err, -ENOMEM, "out of memory");
					goto fail;
				}
				s->lines = nl2;
				cap = ncap;
			}
			rc = parse_code(line, (size_t)m, pos, name, lineno,
					&s->lines[s->nlines], err);
			if (rc)
				goto fail;
			s->nlines++;
		}
		pos += len + (nl ? 1 : 0);
	}
	return 0;
fail:
	ks_tune_source_free(s);
	return rc;
}

void ks_tune_source_value(const struct ks_tune_source *s, const struct ks_tune_line *l,
			  char *buf, size_t size)
{
	ks_quote(buf, size, s->data + l->vstart, l->vend - l->vstart);
}

int ks_tune_source_variant(const struct ks_tune_source *s,
			   const struct ks_tune_space *space, size_t c, char **out,
			   size_t *outlen)
{
	size_t len = s->size, pos = 0, o = 0;
	char *buf;

	for (size_t i = 0; i < s->nlines; i++)
		if (s->lines[i].key_index >= 0)
			len = len - (s->lines[i].vend - s->lines[i].vstart) +
			      strlen(space->values[c * space->nkeys +
						   (size_t)s->lines[i].key_index]);
	buf = malloc(len + 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < s->nlines; i++) {
		const struct ks_tune_line *l = &s->lines[i];
		const char *v;
		size_t vl;

		if (l->key_index < 0)
			continue;
		v = space->values[c * space->nkeys + (size_t)l->key_index];
		vl = strlen(v);
		memcpy(buf + o, s->data + pos, l->vstart - pos);
		o += l->vstart - pos;
		memcpy(buf + o, v, vl);
		o += vl;
		pos = l->vend;
	}
	memcpy(buf + o, s->data + pos, s->size - pos);
	o += s->size - pos;
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	return 0;
}

void ks_tune_source_free(struct ks_tune_source *s)
{
	free(s->data);
	free(s->lines);
	memset(s, 0, sizeof(*s));
}
