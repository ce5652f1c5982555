/*
 * kscope tune's --restrict expressions: conditions over the keys of a
 * configuration, such as 'TILE * UNROLL <= 256 && TILE % UNROLL == 0',
 * evaluated before anything is built, so that invalid points of a space
 * cost nothing.  Written by hand because the language is tiny and
 * specific (integers, the keys, + - * / % == != < <= > >= && || ! and
 * parentheses, as in C); a recursive-descent evaluator reads the text
 * again for each configuration, which for at most 100000 configurations
 * and a line of text costs milliseconds.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argcheck.h"
#include "tune_int.h"

static const char accepted[] =
	"accepted: integers, keys of the space with integer values, + - * / %, "
	"== != < <= > >=, && || !, and parentheses";

struct ev {
	const char *text, *p;
	const struct ks_tune_space *sp;
	size_t c;                  /* the configuration */
	bool divzero;              /* a division or % by zero happened */
	struct ks_err *err;
	int rc;
	unsigned depth;            /* parentheses and unary operators open */
};

/* Deeper nesting is refused: the evaluator recurses. */
#define MAX_DEPTH 64

static void skip(struct ev *e)
{
	while (*e->p == ' ' || *e->p == '\t')
		e->p++;
}

static int64_t bad(struct ev *e, const char *what)
{
	char q[200];

	if (!e->rc) {
		ks_quote(q, sizeof(q), e->text, strlen(e->text));
		e->rc = ks_err_set(e->err, -EINVAL, "option --restrict: '%s': %s at "
				   "column %zu; %s", q, what,
				   (size_t)(e->p - e->text) + 1, accepted);
	}
	return 0;
}

static bool eat(struct ev *e, const char *op)
{
	size_t n = strlen(op);

	skip(e);
	if (strncmp(e->p, op, n) != 0)
		return false;
	/* '<' must not take the first half of "<=", '!' of "!=", '=' alone
	 * is no operator. */
	if (n == 1 && strchr("<>!", op[0]) && e->p[1] == '=')
		return false;
	e->p += n;
	return true;
}

static int64_t overflow(struct ev *e)
{
	return bad(e, "the arithmetic overflows 64 bits");
}

static int64_t or_expr(struct ev *e);

static int64_t primary(struct ev *e)
{
	skip(e);
	if (e->rc)
		return 0;
	if (*e->p == '(') {
		int64_t v;

		e->p++;
		v = or_expr(e);
		if (!eat(e, ")"))
			return bad(e, "')' expected");
		return v;
	}
	if (*e->p >= '0' && *e->p <= '9') {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(e->p, &end, 10);
		if (errno)
			return bad(e, "the number is too large");
		e->p = end;
		return v;
	}
	if ((*e->p >= 'a' && *e->p <= 'z') || (*e->p >= 'A' && *e->p <= 'Z') ||
	    *e->p == '_') {
		const char *s = e->p;
		size_t n;

		while ((*e->p >= 'a' && *e->p <= 'z') || (*e->p >= 'A' && *e->p <= 'Z') ||
		       *e->p == '_' || (*e->p >= '0' && *e->p <= '9'))
			e->p++;
		n = (size_t)(e->p - s);
		for (size_t k = 0; k < e->sp->nkeys; k++) {
			const char *v;
			char *end;
			long long x;

			if (strlen(e->sp->keys[k]) != n || memcmp(e->sp->keys[k], s, n) != 0)
				continue;
			v = e->sp->values[e->c * e->sp->nkeys + k];
			errno = 0;
			x = strtoll(v, &end, 10);
			if (!ks_tune_space_is_int(e->sp, e->c, k) || errno || *end) {
				char q[200], vq[80], label[256];

				ks_quote(q, sizeof(q), e->text, strlen(e->text));
				ks_quote(vq, sizeof(vq), v, strlen(v));
				ks_tune_space_label(e->sp, e->c, label, sizeof(label));
				if (!e->rc)
					e->rc = ks_err_set(e->err, -EINVAL, "option --restrict: "
							   "'%s': %.*s is '%s' in configuration "
							   "%zu (%s), not an integer; %s", q,
							   (int)n, s, vq, e->c, label, accepted);
				return 0;
			}
			return x;
		}
		e->p = s;
		{
			char msg[128];

			snprintf(msg, sizeof(msg), "'%.*s' is not a key of the space",
				 (int)(n > 63 ? 63 : n), s);
			return bad(e, msg);
		}
	}
	return bad(e, *e->p ? "a number, a key or '(' expected" : "the expression ends "
		   "too early");
}

static int64_t unary(struct ev *e)
{
	int64_t v;

	if (e->rc)
		return 0;
	if (++e->depth > MAX_DEPTH) {
		v = bad(e, "more than 64 parentheses and unary operators nested");
	} else if (eat(e, "!")) {
		v = !unary(e);
	} else if (eat(e, "-")) {
		v = unary(e);
		if (v == INT64_MIN)
			v = overflow(e);
		else
			v = -v;
	} else if (eat(e, "+")) {
		v = unary(e);
	} else {
		v = primary(e);
	}
	e->depth--;
	return v;
}

static int64_t mul_expr(struct ev *e)
{
	int64_t v = unary(e), r;

	for (;;) {
		int op = eat(e, "*") ? '*' : eat(e, "/") ? '/' : eat(e, "%") ? '%' : 0;

		if (!op || e->rc)
			return v;
		r = unary(e);
		if (op == '*') {
			if (__builtin_mul_overflow(v, r, &v))
				return overflow(e);
		} else if (r == 0) {
			e->divzero = true;
			v = 0;
		} else if (v == INT64_MIN && r == -1) {
			return overflow(e);
		} else {
			v = op == '/' ? v / r : v % r;
		}
	}
}

static int64_t add_expr(struct ev *e)
{
	int64_t v = mul_expr(e), r;

	for (;;) {
		int op = eat(e, "+") ? '+' : eat(e, "-") ? '-' : 0;

		if (!op || e->rc)
			return v;
		r = mul_expr(e);
		if (op == '+' ? __builtin_add_overflow(v, r, &v)
			      : __builtin_sub_overflow(v, r, &v))
			return overflow(e);
	}
}

static int64_t cmp_expr(struct ev *e)
{
	int64_t v = add_expr(e), r;
	static const char *const ops[] = { "==", "!=", "<=", ">=", "<", ">" };

	for (;;) {
		size_t i;

		for (i = 0; i < 6; i++)
			if (eat(e, ops[i]))
				break;
		if (i == 6 || e->rc)
			return v;
		r = add_expr(e);
		switch (i) {
		case 0: v = v == r; break;
		case 1: v = v != r; break;
		case 2: v = v <= r; break;
		case 3: v = v >= r; break;
		case 4: v = v < r; break;
		default: v = v > r; break;
		}
	}
}

static int64_t and_expr(struct ev *e)
{
	int64_t v = cmp_expr(e);

	while (!e->rc && eat(e, "&&")) {
		int64_t r = cmp_expr(e);

		v = v && r;
	}
	return v;
}

static int64_t or_expr(struct ev *e)
{
	int64_t v = and_expr(e);

	while (!e->rc && eat(e, "||")) {
		int64_t r = and_expr(e);

		v = v || r;
	}
	return v;
}

int ks_tune_restrict_eval(const char *text, const struct ks_tune_space *sp, size_t c,
			  bool *keep, struct ks_err *err)
{
	struct ev e = { .text = text, .p = text, .sp = sp, .c = c, .err = err };
	int64_t v;

	v = or_expr(&e);
	skip(&e);
	if (!e.rc && *e.p)
		bad(&e, *e.p == '=' ? "'=' is no operator (use '==')"
				   : "an operator or the end expected");
	if (e.rc)
		return e.rc;
	*keep = v != 0 && !e.divzero;
	return 0;
}
