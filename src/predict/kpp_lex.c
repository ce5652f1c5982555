/*
 * The tokenizer of the .kpp language (kpp.h): names, integers, decimal
 * numbers (tables and "ops" only), strings, punctuation and ends of line,
 * each with its line and column; comments and blanks are skipped.  It also
 * holds the two helpers every message of the language goes through: the
 * "FILE:LINE:COLUMN: " prefix and quoting of source text.
 *
 * The text need not end in NUL and may hold any byte: a byte that starts
 * no token is an error naming it (escaped), never undefined behaviour.
 * Columns count bytes from 1; a tab is one column.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kpp.h"

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

int kpp_errorf(char *err, size_t errsize, const char *file, uint32_t line, uint32_t col,
	       const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || errsize == 0)
		return -EINVAL;
	n = snprintf(err, errsize, "%s:%" PRIu32 ":%" PRIu32 ": ", file, line, col);
	if (n >= 0 && (size_t)n < errsize) {
		va_start(ap, fmt);
		vsnprintf(err + n, errsize - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

void kpp_quote(const char *text, size_t n, char *buf, size_t size)
{
	/* Room for the closing quote, "..." and the NUL. */
	size_t o = 0, limit;

	if (size < 8) {
		if (size)
			buf[0] = '\0';
		return;
	}
	limit = size - 6;
	buf[o++] = '\'';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];
		size_t need = (c < 0x20 || c >= 0x7f) ? 4 : 1;

		if (o + need > limit) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (need == 4)
			o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o++] = '\'';
	buf[o] = '\0';
}

/* ------------------------------------------------------------------ */
/* The tokenizer                                                       */
/* ------------------------------------------------------------------ */

static int lex_error(struct kpp_lexer *lx, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int lex_error(struct kpp_lexer *lx, size_t at, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lx->failed = 1;
	return kpp_errorf(lx->err, lx->errsize, lx->file, lx->line,
			  (uint32_t)(at - lx->line_start + 1), "%s", msg);
}

/* A line longer than KS_KPP_MAX_LINE is refused when the tokenizer enters
 * it, so no token, and no column, can be larger. */
static int check_line(struct kpp_lexer *lx)
{
	const char *nl = memchr(lx->text + lx->line_start, '\n', lx->len - lx->line_start);
	size_t n = (nl ? (size_t)(nl - lx->text) : lx->len) - lx->line_start;

	if (n > KS_KPP_MAX_LINE) {
		lx->failed = 1;
		return kpp_errorf(lx->err, lx->errsize, lx->file, lx->line, KS_KPP_MAX_LINE + 1,
				  "the line is longer than %d bytes (it has %zu)",
				  KS_KPP_MAX_LINE, n);
	}
	return 0;
}

void kpp_lex_init(struct kpp_lexer *lx, const char *file, const char *text, size_t len,
		  char *err, size_t errsize)
{
	memset(lx, 0, sizeof(*lx));
	lx->file = file;
	lx->text = text;
	lx->len = len;
	lx->line = 1;
	lx->err = err;
	lx->errsize = errsize;
}

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int peek_at(const struct kpp_lexer *lx, size_t i)
{
	return i < lx->len ? (unsigned char)lx->text[i] : -1;
}

static int lex_number(struct kpp_lexer *lx, struct kpp_token *t)
{
	size_t p = lx->pos, start = lx->pos;
	int is_float = 0;
	char q[64];

	while (is_digit(peek_at(lx, p)))
		p++;
	if (peek_at(lx, p) == '.' && is_digit(peek_at(lx, p + 1))) {
		is_float = 1;
		p++;
		while (is_digit(peek_at(lx, p)))
			p++;
	}
	if ((peek_at(lx, p) == 'e' || peek_at(lx, p) == 'E') &&
	    (is_digit(peek_at(lx, p + 1)) ||
	     ((peek_at(lx, p + 1) == '+' || peek_at(lx, p + 1) == '-') &&
	      is_digit(peek_at(lx, p + 2))))) {
		is_float = 1;
		p += 2;
		while (is_digit(peek_at(lx, p)))
			p++;
	}
	if (is_alpha(peek_at(lx, p)) || is_digit(peek_at(lx, p))) {
		while (is_alpha(peek_at(lx, p)) || is_digit(peek_at(lx, p)))
			p++;
		kpp_quote(lx->text + start, p - start, q, sizeof(q));
		return lex_error(lx, start, "%s is not a number", q);
	}
	t->len = (uint32_t)(p - start);
	if (!is_float) {
		int64_t v = 0;

		for (size_t i = start; i < p; i++) {
			int d = lx->text[i] - '0';

			if (v > (INT64_MAX - d) / 10) {
				kpp_quote(lx->text + start, p - start, q, sizeof(q));
				return lex_error(lx, start,
						 "the integer %s does not fit in 64 bits (at most %" PRId64 ")",
						 q, INT64_MAX);
			}
			v = v * 10 + d;
		}
		t->kind = KPP_T_INT;
		t->ival = v;
		t->dval = (double)v;
	} else {
		char buf[80];

		if (p - start >= sizeof(buf)) {
			kpp_quote(lx->text + start, p - start, q, sizeof(q));
			return lex_error(lx, start, "the number %s is longer than %zu characters",
					 q, sizeof(buf) - 1);
		}
		memcpy(buf, lx->text + start, p - start);
		buf[p - start] = '\0';
		t->kind = KPP_T_NUM;
		t->dval = strtod(buf, NULL);
		if (!isfinite(t->dval))
			return lex_error(lx, start, "the number '%s' is out of range", buf);
	}
	lx->pos = p;
	return 0;
}

static int lex_string(struct kpp_lexer *lx, struct kpp_token *t)
{
	size_t p = lx->pos + 1;

	for (;;) {
		int c = peek_at(lx, p);

		if (c < 0 || c == '\n')
			return lex_error(lx, lx->pos,
					 "the string is not closed: a '\"' is missing before the end of the line");
		if (c == '"')
			break;
		if (c < 0x20 || c == 0x7f)
			return lex_error(lx, p, "control character \\x%02x in a string", c);
		p++;
	}
	t->kind = KPP_T_STRING;
	t->len = (uint32_t)(p + 1 - lx->pos);
	lx->pos = p + 1;
	return 0;
}

int kpp_lex_next(struct kpp_lexer *lx, struct kpp_token *t)
{
	int c;

	if (lx->failed)
		return -EINVAL;
	if (!lx->started) {
		lx->started = 1;
		if (check_line(lx))
			return -EINVAL;
	}
	for (;;) {
		c = peek_at(lx, lx->pos);
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			lx->pos++;
		} else if (c == '#') {
			const char *nl = memchr(lx->text + lx->pos, '\n', lx->len - lx->pos);

			lx->pos = nl ? (size_t)(nl - lx->text) : lx->len;
		} else {
			break;
		}
	}
	memset(t, 0, sizeof(*t));
	t->off = (uint32_t)lx->pos;
	t->line = lx->line;
	t->col = (uint32_t)(lx->pos - lx->line_start + 1);
	t->len = 1;
	if (c < 0) {
		t->kind = KPP_T_EOF;
		t->len = 0;
		return 0;
	}
	if (c == '\n') {
		t->kind = KPP_T_NL;
		lx->pos++;
		lx->line++;
		lx->line_start = lx->pos;
		return check_line(lx);
	}
	if (is_alpha(c)) {
		size_t p = lx->pos;

		while (is_alpha(peek_at(lx, p)) || is_digit(peek_at(lx, p)))
			p++;
		/* A core's pipe, AIV0.MTE3: one dot between two names (".."
		 * stays a range) */
		if (peek_at(lx, p) == '.' && is_alpha(peek_at(lx, p + 1)))
			for (p++; is_alpha(peek_at(lx, p)) || is_digit(peek_at(lx, p));)
				p++;
		if (p - lx->pos > KS_PRED_MAX_NAME) {
			char q[48];

			kpp_quote(lx->text + lx->pos, p - lx->pos, q, sizeof(q));
			return lex_error(lx, lx->pos,
					 "the name %s is longer than %d characters", q,
					 KS_PRED_MAX_NAME);
		}
		t->kind = KPP_T_NAME;
		t->len = (uint32_t)(p - lx->pos);
		lx->pos = p;
		return 0;
	}
	if (is_digit(c))
		return lex_number(lx, t);
	if (c == '"')
		return lex_string(lx, t);
	switch (c) {
	case '[': t->kind = KPP_T_LBRACK; break;
	case ']': t->kind = KPP_T_RBRACK; break;
	case '(': t->kind = KPP_T_LPAREN; break;
	case ')': t->kind = KPP_T_RPAREN; break;
	case '{': t->kind = KPP_T_LBRACE; break;
	case '}': t->kind = KPP_T_RBRACE; break;
	case ',': t->kind = KPP_T_COMMA; break;
	case '=': t->kind = KPP_T_EQ; break;
	case '+': t->kind = KPP_T_PLUS; break;
	case '*': t->kind = KPP_T_STAR; break;
	case '/': t->kind = KPP_T_SLASH; break;
	case '%': t->kind = KPP_T_PERCENT; break;
	case '-':
		if (peek_at(lx, lx->pos + 1) == '>') {
			t->kind = KPP_T_ARROW;
			t->len = 2;
		} else {
			t->kind = KPP_T_MINUS;
		}
		break;
	case '.':
		if (peek_at(lx, lx->pos + 1) == '.') {
			t->kind = KPP_T_DOTDOT;
			t->len = 2;
			break;
		}
		return lex_error(lx, lx->pos, "unexpected '.' (a range is written A .. B)");
	default:
		if (c < 0x20 || c >= 0x7f)
			return lex_error(lx, lx->pos, "unexpected character '\\x%02x'", c);
		return lex_error(lx, lx->pos, "unexpected character '%c'", c);
	}
	lx->pos += t->len;
	return 0;
}

void kpp_tok_describe(const struct kpp_lexer *lx, const struct kpp_token *t, char *buf,
		      size_t size)
{
	char q[72];

	switch (t->kind) {
	case KPP_T_EOF:
		snprintf(buf, size, "the end of the file");
		return;
	case KPP_T_NL:
		snprintf(buf, size, "the end of the line");
		return;
	case KPP_T_STRING:
		kpp_quote(lx->text + t->off, t->len, q, sizeof(q));
		snprintf(buf, size, "the string %s", q);
		return;
	case KPP_T_INT:
	case KPP_T_NUM:
		kpp_quote(lx->text + t->off, t->len, q, sizeof(q));
		snprintf(buf, size, "the number %s", q);
		return;
	case KPP_T_NAME:
		kpp_quote(lx->text + t->off, t->len, q, sizeof(q));
		snprintf(buf, size, "%s", q);
		return;
	default:
		kpp_quote(lx->text + t->off, t->len, q, sizeof(q));
		snprintf(buf, size, "%s", q);
		return;
	}
}
