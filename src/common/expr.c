/*
 * Arithmetic expressions (expr.h): a small recursive-descent
 * parser into a tree, and its evaluation over a set of named values.
 *
 *     expr    := term { ('+' | '-') term }
 *     term    := unary { ('*' | '/') unary }
 *     unary   := ('+' | '-') unary | primary
 *     primary := NUMBER | NAME | '(' expr ')'
 *
 * Written by hand because it is a few dozen lines and specific to kscope:
 * the messages point at the character that is wrong, and evaluation
 * reports division by zero, overflow and unknown names by name.  Values
 * are doubles, so 2*M*N*K stays exact up to 2^53.  Nesting is limited
 * (KS_EXPR_MAX_DEPTH) so that recursion depth is bounded.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

enum node_kind { N_NUM, N_NAME, N_NEG, N_ADD, N_SUB, N_MUL, N_DIV };

struct node {
	enum node_kind kind;
	double num;            /* N_NUM */
	char *name;            /* N_NAME; owned */
	struct node *l, *r;    /* N_NEG uses l */
};

struct ks_expr {
	char *text;
	struct node *root;
};

struct parser {
	const char *s;         /* the whole text */
	size_t pos;
	int depth;
	struct ks_err *err;
	int rc;                /* first error */
};

static void node_free(struct node *n)
{
	if (!n)
		return;
	node_free(n->l);
	node_free(n->r);
	free(n->name);
	free(n);
}

static struct node *node_new(struct parser *p, enum node_kind k)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n && !p->rc)
		p->rc = ks_err_set(p->err, -ENOMEM, "out of memory");
	if (n)
		n->kind = k;
	return n;
}

static void skip_space(struct parser *p)
{
	while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
		p->pos++;
}

/* Records the first syntax error, at the current position. */
static struct node *fail(struct parser *p, const char *what)
{
	if (!p->rc) {
		char c = p->s[p->pos];

		if (c == '\0')
			p->rc = ks_err_set(p->err, -EINVAL, "%s at the end", what);
		else if (isprint((unsigned char)c))
			p->rc = ks_err_set(p->err, -EINVAL, "%s at position %zu ('%c')",
					   what, p->pos + 1, c);
		else
			p->rc = ks_err_set(p->err, -EINVAL, "%s at position %zu (byte "
					   "0x%02x)", what, p->pos + 1, (unsigned char)c);
	}
	return NULL;
}

static struct node *parse_expr(struct parser *p);

static struct node *parse_number(struct parser *p)
{
	size_t start = p->pos, n;
	char buf[64], *end;
	struct node *node;
	double v;

	/* digits [. digits] [e [+-] digits], or . digits */
	while (isdigit((unsigned char)p->s[p->pos]))
		p->pos++;
	if (p->s[p->pos] == '.') {
		p->pos++;
		while (isdigit((unsigned char)p->s[p->pos]))
			p->pos++;
	}
	if (p->pos - start == 1 && p->s[start] == '.') {
		p->pos = start;
		return fail(p, "a number has no digits");
	}
	if (p->s[p->pos] == 'e' || p->s[p->pos] == 'E') {
		size_t e = ++p->pos;

		if (p->s[p->pos] == '+' || p->s[p->pos] == '-')
			p->pos++;
		if (!isdigit((unsigned char)p->s[p->pos])) {
			p->pos = e - 1;
			return fail(p, "an exponent needs digits");
		}
		while (isdigit((unsigned char)p->s[p->pos]))
			p->pos++;
	}
	n = p->pos - start;
	if (n >= sizeof(buf)) {
		p->pos = start;
		return fail(p, "a number is too long");
	}
	memcpy(buf, p->s + start, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (*end || !isfinite(v) || errno == ERANGE) {
		p->pos = start;
		if (!p->rc)
			p->rc = ks_err_set(p->err, -EINVAL, "the number '%s' at position %zu "
					   "is out of range", buf, start + 1);
		return NULL;
	}
	node = node_new(p, N_NUM);
	if (node)
		node->num = v;
	return node;
}

static struct node *parse_primary(struct parser *p)
{
	char c;

	skip_space(p);
	c = p->s[p->pos];
	if (isdigit((unsigned char)c) || c == '.')
		return parse_number(p);
	if (isalpha((unsigned char)c) || c == '_') {
		size_t start = p->pos;
		struct node *n;

		while (isalnum((unsigned char)p->s[p->pos]) || p->s[p->pos] == '_')
			p->pos++;
		n = node_new(p, N_NAME);
		if (!n)
			return NULL;
		n->name = strndup(p->s + start, p->pos - start);
		if (!n->name) {
			free(n);
			if (!p->rc)
				p->rc = ks_err_set(p->err, -ENOMEM, "out of memory");
			return NULL;
		}
		return n;
	}
	if (c == '(') {
		struct node *n;

		p->pos++;
		n = parse_expr(p);
		if (!n)
			return NULL;
		skip_space(p);
		if (p->s[p->pos] != ')') {
			node_free(n);
			return fail(p, "a ')' is missing");
		}
		p->pos++;
		return n;
	}
	return fail(p, "a number, a name or '(' is expected");
}

static struct node *parse_unary(struct parser *p)
{
	struct node *n, *inner;
	char c;

	skip_space(p);
	c = p->s[p->pos];
	if (c != '-' && c != '+')
		return parse_primary(p);
	if (++p->depth > KS_EXPR_MAX_DEPTH)
		return fail(p, "the expression nests too deeply");
	p->pos++;
	inner = parse_unary(p);
	p->depth--;
	if (!inner || c == '+')
		return inner;
	n = node_new(p, N_NEG);
	if (!n) {
		node_free(inner);
		return NULL;
	}
	n->l = inner;
	return n;
}

/* One level of left-associative binary operators. */
static struct node *parse_binary(struct parser *p, struct node *(*sub)(struct parser *),
				 char op1, enum node_kind k1, char op2, enum node_kind k2)
{
	struct node *l = sub(p);

	while (l) {
		struct node *r, *n;
		char c;

		skip_space(p);
		c = p->s[p->pos];
		if (c != op1 && c != op2)
			break;
		p->pos++;
		r = sub(p);
		if (!r) {
			node_free(l);
			return NULL;
		}
		n = node_new(p, c == op1 ? k1 : k2);
		if (!n) {
			node_free(l);
			node_free(r);
			return NULL;
		}
		n->l = l;
		n->r = r;
		l = n;
	}
	return l;
}

static struct node *parse_term(struct parser *p)
{
	return parse_binary(p, parse_unary, '*', N_MUL, '/', N_DIV);
}

static struct node *parse_expr(struct parser *p)
{
	struct node *n;

	if (++p->depth > KS_EXPR_MAX_DEPTH)
		return fail(p, "the expression nests too deeply");
	n = parse_binary(p, parse_term, '+', N_ADD, '-', N_SUB);
	p->depth--;
	return n;
}

int ks_expr_parse(const char *text, struct ks_expr **out, struct ks_err *err)
{
	struct parser p = { .s = text, .err = err };
	struct ks_expr *f;
	struct node *root;

	*out = NULL;
	if (strlen(text) > KS_EXPR_MAX_LEN)
		return ks_err_set(err, -EINVAL, "it has %zu characters, more than %d",
				  strlen(text), KS_EXPR_MAX_LEN);
	root = parse_expr(&p);
	if (root) {
		skip_space(&p);
		if (p.s[p.pos] != '\0') {
			node_free(root);
			root = NULL;
			fail(&p, p.s[p.pos] == ')' ? "a '(' is missing for the ')'"
				 : "an operator (+ - * /) is expected");
		}
	}
	if (!root)
		return p.rc ? p.rc : ks_err_set(err, -EINVAL, "it is not an expression");
	f = calloc(1, sizeof(*f));
	if (f)
		f->text = strdup(text);
	if (!f || !f->text) {
		free(f);
		node_free(root);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	f->root = root;
	*out = f;
	return 0;
}

const char *ks_expr_text(const struct ks_expr *f)
{
	return f->text;
}

void ks_expr_free(struct ks_expr *f)
{
	if (!f)
		return;
	node_free(f->root);
	free(f->text);
	free(f);
}

/* ------------------------------------------------------------------ */
/* Evaluation                                                          */
/* ------------------------------------------------------------------ */

struct evalctx {
	const struct ks_expr_var *vars;
	size_t nvars;
	struct ks_err *err;
};

static int unknown_name(const struct evalctx *c, const char *name)
{
	char avail[600];
	size_t off = 0;

	avail[0] = '\0';
	for (size_t i = 0; i < c->nvars && off < sizeof(avail); i++) {
		bool dup = false;

		for (size_t j = 0; j < i; j++)
			dup |= strcmp(c->vars[j].name, c->vars[i].name) == 0;
		if (!dup)
			off += (size_t)snprintf(avail + off, sizeof(avail) - off, "%s%s",
						off ? ", " : "", c->vars[i].name);
	}
	if (off >= sizeof(avail))
		memcpy(avail + sizeof(avail) - 4, "...", 4);
	return ks_err_set(c->err, -ENOENT, "the name '%s' is not known here; "
			  "names available: %s", name, off ? avail : "none");
}

static int eval(const struct evalctx *c, const struct node *n, double *out)
{
	double a, b;
	int rc;

	switch (n->kind) {
	case N_NUM:
		*out = n->num;
		return 0;
	case N_NAME:
		for (size_t i = 0; i < c->nvars; i++)
			if (strcmp(c->vars[i].name, n->name) == 0) {
				if (!isfinite(c->vars[i].value))
					return ks_err_set(c->err, -ERANGE, "the value of '%s' "
							  "is not a finite number", n->name);
				*out = c->vars[i].value;
				return 0;
			}
		return unknown_name(c, n->name);
	case N_NEG:
		rc = eval(c, n->l, &a);
		*out = -a;
		return rc;
	default:
		break;
	}
	if ((rc = eval(c, n->l, &a)) || (rc = eval(c, n->r, &b)))
		return rc;
	switch (n->kind) {
	case N_ADD:
		*out = a + b;
		break;
	case N_SUB:
		*out = a - b;
		break;
	case N_MUL:
		*out = a * b;
		break;
	default: /* N_DIV */
		if (b == 0)
			return ks_err_set(c->err, -EDOM, "it divides by zero");
		*out = a / b;
		break;
	}
	if (!isfinite(*out))
		return ks_err_set(c->err, -ERANGE, "its value overflows");
	return 0;
}

int ks_expr_eval(const struct ks_expr *f, const struct ks_expr_var *vars,
		     size_t nvars, double *out, struct ks_err *err)
{
	struct evalctx c = { vars, nvars, err };
	double v;
	int rc = eval(&c, f->root, &v);

	if (rc)
		return rc;
	if (v < 0)
		return ks_err_set(err, -EDOM, "its value is negative (%g)", v);
	*out = v;
	return 0;
}
