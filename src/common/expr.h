/*
 * Arithmetic expressions over named values (src/common/expr.c): kscope
 * op's --flops (e.g. 2*M*N*K) and the cost formulas of kscope predict's
 * user-defined instructions.
 */
#ifndef KS_EXPR_H
#define KS_EXPR_H

#include <stddef.h>

#include "err.h"

#define KS_EXPR_MAX_LEN 1024  /* characters of an expression */
#define KS_EXPR_MAX_DEPTH 64  /* nesting of parentheses and signs */

struct ks_expr;

/* A name an expression may use, and its value. */
struct ks_expr_var {
	const char *name;
	double value;
};

/* Parses text: numbers, names ([A-Za-z_][A-Za-z0-9_]*), + - * /, unary
 * signs and parentheses.  -EINVAL with err saying what is wrong and where
 * (the message starts with the problem, for the caller to prefix with the
 * option), or -ENOMEM. */
int ks_expr_parse(const char *text, struct ks_expr **out, struct ks_err *err);
/* The expression as given. */
const char *ks_expr_text(const struct ks_expr *f);
/* Evaluates f with vars (nvars of them; the first of a repeated name
 * wins).  0 with *out set; -ENOENT when a name is not among vars (err names
 * it and lists the names available); -EDOM on division by zero or a
 * negative result; -ERANGE when a value overflows. */
int ks_expr_eval(const struct ks_expr *f, const struct ks_expr_var *vars,
		 size_t nvars, double *out, struct ks_err *err);
void ks_expr_free(struct ks_expr *f);

#endif
