/*
 * The parser of the .kpp language (kpp.h): tokens from kpp_lex.c into the
 * flat syntax tree that kpp.c interprets, following the grammar of
 * docs/predict.md "The language" by recursive descent.
 *
 * Names are resolved here, once: every declaration (param, let, tensor,
 * split, loop variable) gets a slot of its own, and every use records the
 * slot it means.  A loop body is a scope; a name declared in it hides an
 * outer one from its declaration on and is gone after the body, and a
 * name cannot be declared twice in one scope.  Since the language has no
 * branches, a use resolved this way always finds its slot written when it
 * runs.  So unknown names, redeclarations and a name of the wrong kind (a
 * tensor in an expression, a value as an operand) are found before the
 * model is built, in file order.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kpp.h"

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */

/* An interned name: its string in the pool and its innermost binding. */
struct name_ent {
	uint32_t off, len; /* in the pool; 0 len: an empty bucket */
	uint32_t hash;
	int32_t top;       /* binding index, or -1 */
};

/* A name declared in a scope; bindings form a stack that a scope's end
 * pops. */
struct binding {
	uint32_t slot, depth, ent;
	int32_t prev;      /* the binding it hides, or -1 */
};

struct parser {
	struct kpp_lexer lx;
	struct kpp_token tok, ahead;
	int have_ahead;
	struct kpp_tree *t;
	uint32_t cap_stmts, cap_exprs, cap_refs, cap_list, cap_nums, cap_slots, cap_pool;
	struct name_ent *names;
	uint32_t names_size, names_used; /* size: a power of two */
	struct binding *binds;
	uint32_t nbinds, cap_binds;
	uint32_t depth;    /* loops around the statement being parsed */
	uint32_t edepth;   /* expression nesting */
	char *err;
	size_t errsize;
	int failed;
};

static int perr(struct parser *p, uint32_t line, uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int perr(struct parser *p, uint32_t line, uint32_t col, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	if (p->failed)
		return -EINVAL;
	p->failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kpp_errorf(p->err, p->errsize, p->t->file, line, col, "%s", msg);
}

static int oom(struct parser *p)
{
	if (!p->failed && p->err && p->errsize)
		snprintf(p->err, p->errsize, "%s: out of memory parsing the model", p->t->file);
	p->failed = 1;
	return -ENOMEM;
}

/* Makes room for one more element in *arr (n used, *cap allocated). */
static int grow(struct parser *p, void **arr, uint32_t n, uint32_t *cap, size_t elem)
{
	uint32_t ncap;
	void *q;

	if (n < *cap)
		return 0;
	if (*cap >= UINT32_MAX / 2)
		return oom(p);
	ncap = *cap ? *cap * 2 : 64;
	q = realloc(*arr, (size_t)ncap * elem);
	if (!q)
		return oom(p);
	*arr = q;
	*cap = ncap;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Strings and names                                                   */
/* ------------------------------------------------------------------ */

/* Copies s[0..n) into the pool with a NUL; *off gets its offset. */
static int pool_add(struct parser *p, const char *s, size_t n, uint32_t *off)
{
	struct kpp_tree *t = p->t;

	while ((size_t)t->pool_len + n + 1 > p->cap_pool) {
		size_t ncap = p->cap_pool ? (size_t)p->cap_pool * 2 : 4096;
		char *q;

		if (ncap > UINT32_MAX)
			return oom(p);
		q = realloc(t->pool, ncap);
		if (!q)
			return oom(p);
		t->pool = q;
		p->cap_pool = (uint32_t)ncap;
	}
	memcpy(t->pool + t->pool_len, s, n);
	t->pool[t->pool_len + n] = '\0';
	*off = t->pool_len;
	t->pool_len += (uint32_t)n + 1;
	return 0;
}

static uint32_t hash_name(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static int names_rehash(struct parser *p)
{
	uint32_t nsize = p->names_size ? p->names_size * 2 : 256;
	struct name_ent *nn = calloc(nsize, sizeof(*nn));

	if (!nn)
		return oom(p);
	for (uint32_t i = 0; i < p->names_size; i++) {
		struct name_ent *e = &p->names[i];
		uint32_t j;

		if (!e->len)
			continue;
		for (j = e->hash & (nsize - 1); nn[j].len; j = (j + 1) & (nsize - 1))
			;
		nn[j] = *e;
	}
	/* Bindings refer to entries by index: fix them up. */
	for (uint32_t b = 0; b < p->nbinds; b++) {
		struct name_ent *old = &p->names[p->binds[b].ent];
		uint32_t j;

		for (j = old->hash & (nsize - 1); nn[j].off != old->off || !nn[j].len;
		     j = (j + 1) & (nsize - 1))
			;
		p->binds[b].ent = j;
	}
	free(p->names);
	p->names = nn;
	p->names_size = nsize;
	return 0;
}

/* The entry of the name s[0..n) (n > 0), added if new when add is set;
 * *ent is UINT32_MAX when absent. */
static int name_find(struct parser *p, const char *s, size_t n, int add, uint32_t *ent)
{
	uint32_t h = hash_name(s, n), j;

	*ent = UINT32_MAX;
	if (add && (p->names_used + 1) * 2 > p->names_size && names_rehash(p))
		return -ENOMEM;
	if (!p->names_size)
		return 0;
	for (j = h & (p->names_size - 1); p->names[j].len; j = (j + 1) & (p->names_size - 1)) {
		struct name_ent *e = &p->names[j];

		if (e->hash == h && e->len == n && memcmp(p->t->pool + e->off, s, n) == 0) {
			*ent = j;
			return 0;
		}
	}
	if (!add)
		return 0;
	{
		uint32_t off;

		if (pool_add(p, s, n, &off))
			return -ENOMEM;
		p->names[j].off = off;
		p->names[j].len = (uint32_t)n;
		p->names[j].hash = h;
		p->names[j].top = -1;
		p->names_used++;
		*ent = j;
	}
	return 0;
}

/* The pool offset of the token's text, interned. */
static int tok_name(struct parser *p, const struct kpp_token *tk, uint32_t *off)
{
	uint32_t ent;

	if (name_find(p, p->t->text + tk->off, tk->len, 1, &ent))
		return -ENOMEM;
	*off = p->names[ent].off;
	return 0;
}

static int tok_is(const struct parser *p, const struct kpp_token *tk, const char *kw)
{
	size_t n = strlen(kw);

	return tk->kind == KPP_T_NAME && tk->len == n && memcmp(p->t->text + tk->off, kw, n) == 0;
}

static const char *const statement_keywords[] = {
	"chip", "param", "let", "tensor", "split", "instr", "scalar", "load", "for",
	"set_flag", "wait_flag", "cache_hit_ratio", "core",
};

static int is_statement_keyword(const struct parser *p, const struct kpp_token *tk)
{
	for (size_t i = 0; i < sizeof(statement_keywords) / sizeof(statement_keywords[0]); i++)
		if (tok_is(p, tk, statement_keywords[i]))
			return 1;
	return 0;
}

static const char *kind_name(uint8_t kind)
{
	switch (kind) {
	case KPP_VALUE: return "a value";
	case KPP_TENSOR: return "a tensor";
	default: return "a split";
	}
}

/* Declares the name of token tk in the current scope. */
static int declare(struct parser *p, const struct kpp_token *tk, uint8_t kind, uint32_t *slot)
{
	struct kpp_tree *t = p->t;
	struct name_ent *e;
	uint32_t ent;

	if (name_find(p, t->text + tk->off, tk->len, 1, &ent))
		return -ENOMEM;
	e = &p->names[ent];
	if (e->top >= 0 && p->binds[e->top].depth == p->depth) {
		const struct kpp_slot_info *old = &t->slots[p->binds[e->top].slot];

		return perr(p, tk->line, tk->col,
			    "'%s' is already declared in this scope (as %s, at line %u, column %u)",
			    t->pool + e->off, kind_name(old->kind), old->line, old->col);
	}
	if (grow(p, (void **)&t->slots, t->nslots, &p->cap_slots, sizeof(*t->slots)) ||
	    grow(p, (void **)&p->binds, p->nbinds, &p->cap_binds, sizeof(*p->binds)))
		return -ENOMEM;
	e = &p->names[ent];
	t->slots[t->nslots] = (struct kpp_slot_info){
		.kind = kind, .name = e->off, .line = tk->line, .col = tk->col,
	};
	p->binds[p->nbinds] = (struct binding){
		.slot = t->nslots, .depth = p->depth, .ent = ent, .prev = e->top,
	};
	e->top = (int32_t)p->nbinds++;
	*slot = t->nslots++;
	return 0;
}

/* Ends the innermost scope: its names are gone. */
static void scope_pop(struct parser *p)
{
	while (p->nbinds > 0 && p->binds[p->nbinds - 1].depth == p->depth) {
		struct binding *b = &p->binds[--p->nbinds];

		p->names[b->ent].top = b->prev;
	}
	p->depth--;
}

/* The slot the name of token tk means here. */
static int resolve(struct parser *p, const struct kpp_token *tk, uint32_t *slot)
{
	uint32_t ent;
	char q[80];

	if (name_find(p, p->t->text + tk->off, tk->len, 0, &ent))
		return -ENOMEM;
	if (ent == UINT32_MAX || p->names[ent].top < 0) {
		kpp_quote(p->t->text + tk->off, tk->len, q, sizeof(q));
		return perr(p, tk->line, tk->col,
			    "unknown name %s: no param, let, loop variable, tensor or split of that name is declared before this point",
			    q);
	}
	*slot = p->binds[p->names[ent].top].slot;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Tokens                                                              */
/* ------------------------------------------------------------------ */

static int advance(struct parser *p)
{
	if (p->have_ahead) {
		p->tok = p->ahead;
		p->have_ahead = 0;
		return 0;
	}
	if (kpp_lex_next(&p->lx, &p->tok)) {
		p->failed = 1;
		return -EINVAL;
	}
	return 0;
}

static int peek2(struct parser *p, const struct kpp_token **out)
{
	if (!p->have_ahead) {
		if (kpp_lex_next(&p->lx, &p->ahead)) {
			p->failed = 1;
			return -EINVAL;
		}
		p->have_ahead = 1;
	}
	*out = &p->ahead;
	return 0;
}

static int unexpected(struct parser *p, const char *what)
{
	char got[96];

	kpp_tok_describe(&p->lx, &p->tok, got, sizeof(got));
	return perr(p, p->tok.line, p->tok.col, "expected %s, got %s", what, got);
}

static int expect(struct parser *p, enum kpp_tok kind, const char *what)
{
	if (p->tok.kind != kind)
		return unexpected(p, what);
	return advance(p);
}

/* ------------------------------------------------------------------ */
/* Expressions                                                         */
/* ------------------------------------------------------------------ */

static int new_expr(struct parser *p, uint8_t op, uint32_t a, uint32_t b, int64_t value,
		    uint32_t start, uint32_t end, uint32_t at, uint32_t *out)
{
	struct kpp_tree *t = p->t;

	if (grow(p, (void **)&t->exprs, t->nexprs, &p->cap_exprs, sizeof(*t->exprs)))
		return -ENOMEM;
	t->exprs[t->nexprs] = (struct kpp_expr){
		.op = op, .a = a, .b = b, .value = value, .start = start, .end = end, .at = at,
	};
	*out = t->nexprs++;
	return 0;
}

static int parse_expr(struct parser *p, uint32_t *out);

static int deeper(struct parser *p)
{
	if (++p->edepth > KS_KPP_MAX_DEPTH)
		return perr(p, p->tok.line, p->tok.col,
			    "the expression is nested more than %d levels deep", KS_KPP_MAX_DEPTH);
	return 0;
}

static int parse_primary(struct parser *p, uint32_t *out)
{
	struct kpp_token tk = p->tok;
	const struct kpp_token *nx;

	if (tk.kind == KPP_T_INT) {
		if (advance(p))
			return -EINVAL;
		return new_expr(p, KPP_E_CONST, 0, 0, tk.ival, tk.off, tk.off + tk.len, tk.off, out);
	}
	if (tk.kind == KPP_T_NUM) {
		char q[72];

		kpp_quote(p->t->text + tk.off, tk.len, q, sizeof(q));
		return perr(p, tk.line, tk.col,
			    "expressions are integers: %s is not an integer", q);
	}
	if (tk.kind == KPP_T_LPAREN) {
		uint32_t e;

		if (deeper(p) || advance(p) || parse_expr(p, &e))
			return -EINVAL;
		if (p->tok.kind != KPP_T_RPAREN)
			return unexpected(p, "')'");
		p->t->exprs[e].start = tk.off;
		p->t->exprs[e].end = p->tok.off + 1;
		p->edepth--;
		*out = e;
		return advance(p);
	}
	if (tk.kind != KPP_T_NAME)
		return unexpected(p, "a value (an integer, a name, or '(')");
	if (peek2(p, &nx))
		return -EINVAL;
	if (nx->kind == KPP_T_LPAREN &&
	    (tok_is(p, &tk, "min") || tok_is(p, &tk, "max") || tok_is(p, &tk, "ceil_div"))) {
		uint8_t op = tok_is(p, &tk, "min") ? KPP_E_MIN :
			     tok_is(p, &tk, "max") ? KPP_E_MAX : KPP_E_CEIL_DIV;
		uint32_t a, b, end;

		if (deeper(p) || advance(p) || advance(p) || parse_expr(p, &a) ||
		    expect(p, KPP_T_COMMA, "',' between the two arguments") || parse_expr(p, &b))
			return -EINVAL;
		if (p->tok.kind != KPP_T_RPAREN)
			return unexpected(p, "')' after the two arguments");
		end = p->tok.off + 1;
		p->edepth--;
		if (advance(p))
			return -EINVAL;
		return new_expr(p, op, a, b, 0, tk.off, end, tk.off, out);
	}
	{
		uint32_t slot;
		char q[80];

		if (resolve(p, &tk, &slot))
			return -EINVAL;
		if (p->t->slots[slot].kind != KPP_VALUE) {
			kpp_quote(p->t->text + tk.off, tk.len, q, sizeof(q));
			return perr(p, tk.line, tk.col,
				    "%s is %s; an expression needs a value (a param, a let or a loop variable)",
				    q, kind_name(p->t->slots[slot].kind));
		}
		if (advance(p))
			return -EINVAL;
		return new_expr(p, KPP_E_SLOT, 0, 0, slot, tk.off, tk.off + tk.len, tk.off, out);
	}
}

static int parse_unary(struct parser *p, uint32_t *out)
{
	struct kpp_token tk = p->tok;
	uint32_t a;

	if (tk.kind != KPP_T_MINUS)
		return parse_primary(p, out);
	if (deeper(p) || advance(p) || parse_unary(p, &a))
		return -EINVAL;
	p->edepth--;
	return new_expr(p, KPP_E_NEG, a, 0, 0, tk.off, p->t->exprs[a].end, tk.off, out);
}

static int parse_term(struct parser *p, uint32_t *out)
{
	uint32_t a, b;

	if (parse_unary(p, &a))
		return -EINVAL;
	while (p->tok.kind == KPP_T_STAR || p->tok.kind == KPP_T_SLASH ||
	       p->tok.kind == KPP_T_PERCENT) {
		struct kpp_token op = p->tok;
		uint8_t kind = op.kind == KPP_T_STAR ? KPP_E_MUL :
			       op.kind == KPP_T_SLASH ? KPP_E_DIV : KPP_E_MOD;

		if (advance(p) || parse_unary(p, &b) ||
		    new_expr(p, kind, a, b, 0, p->t->exprs[a].start, p->t->exprs[b].end, op.off, &a))
			return -EINVAL;
	}
	*out = a;
	return 0;
}

static int parse_expr(struct parser *p, uint32_t *out)
{
	uint32_t a, b;

	if (parse_term(p, &a))
		return -EINVAL;
	while (p->tok.kind == KPP_T_PLUS || p->tok.kind == KPP_T_MINUS) {
		struct kpp_token op = p->tok;
		uint8_t kind = op.kind == KPP_T_PLUS ? KPP_E_ADD : KPP_E_SUB;

		if (advance(p) || parse_term(p, &b) ||
		    new_expr(p, kind, a, b, 0, p->t->exprs[a].start, p->t->exprs[b].end, op.off, &a))
			return -EINVAL;
	}
	*out = a;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

static int new_stmt(struct parser *p, uint8_t kind, const struct kpp_token *first,
		    struct kpp_stmt **out)
{
	struct kpp_tree *t = p->t;

	if (grow(p, (void **)&t->stmts, t->nstmts, &p->cap_stmts, sizeof(*t->stmts)))
		return -ENOMEM;
	t->stmts[t->nstmts] = (struct kpp_stmt){
		.kind = kind, .line = first->line, .col = first->col,
	};
	*out = &t->stmts[t->nstmts++];
	return 0;
}

/* A statement that builds the model: the chip must be chosen by then. */
static void model_stmt(struct parser *p)
{
	if (p->t->first_model_stmt < 0)
		p->t->first_model_stmt = (int32_t)p->t->nstmts;
}

/* ref := NAME [ "[" expr "]" ], appended to the refs. */
static int parse_ref(struct parser *p, const char *what)
{
	struct kpp_tree *t = p->t;
	struct kpp_token tk = p->tok;
	int32_t index = -1;
	uint32_t slot, e, off;
	uint8_t kind;
	char q[80];

	if (tk.kind != KPP_T_NAME)
		return unexpected(p, what);
	if (resolve(p, &tk, &slot) || tok_name(p, &tk, &off) || advance(p))
		return -EINVAL;
	kind = t->slots[slot].kind;
	kpp_quote(t->text + tk.off, tk.len, q, sizeof(q));
	if (p->tok.kind == KPP_T_LBRACK) {
		if (kind != KPP_SPLIT)
			return perr(p, tk.line, tk.col,
				    "%s is %s, not a split: only the pieces of a split take an index",
				    q, kind_name(kind));
		if (advance(p) || parse_expr(p, &e))
			return -EINVAL;
		if (p->tok.kind != KPP_T_RBRACK)
			return unexpected(p, "']' after the index");
		if (advance(p))
			return -EINVAL;
		index = (int32_t)e;
	} else if (kind == KPP_SPLIT) {
		return perr(p, tk.line, tk.col,
			    "%s is a split: name one of its pieces, as in %.*s[i]", q,
			    (int)tk.len, t->text + tk.off);
	} else if (kind != KPP_TENSOR) {
		return perr(p, tk.line, tk.col, "%s is a value, not a tensor", q);
	}
	if (grow(p, (void **)&t->refs, t->nrefs, &p->cap_refs, sizeof(*t->refs)))
		return -ENOMEM;
	t->refs[t->nrefs++] = (struct kpp_ref){
		.slot = slot, .index = index, .name = off, .line = tk.line, .col = tk.col,
	};
	return 0;
}

/* refs := ref { ref }: as many as follow, at most KS_PRED_MAX_OPERANDS. */
static int parse_refs(struct parser *p, const char *what, const char *role, uint32_t *n)
{
	*n = 0;
	do {
		if (*n == KS_PRED_MAX_OPERANDS)
			return perr(p, p->tok.line, p->tok.col,
				    "more than %d %s: an instruction takes at most %d",
				    KS_PRED_MAX_OPERANDS, role, KS_PRED_MAX_OPERANDS);
		if (parse_ref(p, what))
			return -EINVAL;
		(*n)++;
	} while (p->tok.kind == KPP_T_NAME);
	return 0;
}

static int parse_number(struct parser *p, const char *what, double *v)
{
	if (p->tok.kind != KPP_T_INT && p->tok.kind != KPP_T_NUM)
		return unexpected(p, what);
	*v = p->tok.dval;
	return advance(p);
}

static int parse_table(struct parser *p, struct kpp_stmt *s)
{
	struct kpp_tree *t = p->t;

	if (expect(p, KPP_T_LBRACK, "'[' to start the table"))
		return -EINVAL;
	s->first = t->nnums;
	do {
		double size = 0, thr = 0;

		if (s->nin > 0 && advance(p))
			return -EINVAL;
		if (expect(p, KPP_T_LBRACK, "'[' to start a [size, throughput] pair") ||
		    parse_number(p, "a size (elements)", &size) ||
		    expect(p, KPP_T_COMMA, "',' between the size and the throughput") ||
		    parse_number(p, "a throughput (elements per cycle)", &thr) ||
		    expect(p, KPP_T_RBRACK, "']' to end the pair"))
			return -EINVAL;
		if (grow(p, (void **)&t->nums, t->nnums + 1, &p->cap_nums, sizeof(*t->nums)))
			return -ENOMEM;
		t->nums[t->nnums++] = size;
		t->nums[t->nnums++] = thr;
		s->nin++;
	} while (p->tok.kind == KPP_T_COMMA);
	return expect(p, KPP_T_RBRACK, "',' or ']' to end the table");
}

static int parse_stmt(struct parser *p);

/* The statements of a loop body up to its '}'. */
static int parse_block(struct parser *p, const struct kpp_token *open)
{
	for (;;) {
		if (p->tok.kind == KPP_T_NL) {
			if (advance(p))
				return -EINVAL;
			continue;
		}
		if (p->tok.kind == KPP_T_EOF)
			return perr(p, open->line, open->col,
				    "missing '}': the block opened here is not closed before the end of the file");
		if (p->tok.kind == KPP_T_RBRACE)
			return advance(p);
		if (parse_stmt(p))
			return -EINVAL;
	}
}

static int parse_for(struct parser *p, const struct kpp_token *first)
{
	struct kpp_tree *t = p->t;
	struct kpp_token var, open;
	uint32_t e0, e1, slot, idx;

	if (advance(p))
		return -EINVAL;
	var = p->tok;
	if (var.kind != KPP_T_NAME)
		return unexpected(p, "the loop variable's name");
	if (advance(p))
		return -EINVAL;
	if (!tok_is(p, &p->tok, "in"))
		return unexpected(p, "'in'");
	if (advance(p) || parse_expr(p, &e0) ||
	    expect(p, KPP_T_DOTDOT, "'..' between the loop's bounds") || parse_expr(p, &e1))
		return -EINVAL;
	open = p->tok;
	if (expect(p, KPP_T_LBRACE, "'{' to open the loop's body"))
		return -EINVAL;
	if (p->tok.kind != KPP_T_NL)
		return unexpected(p, "the end of the line after '{' (the body starts on the next line)");
	if (p->depth >= KS_KPP_MAX_DEPTH)
		return perr(p, first->line, first->col, "loops are nested more than %d deep",
			    KS_KPP_MAX_DEPTH);
	{
		struct kpp_stmt *s;

		if (new_stmt(p, KPP_S_FOR, first, &s))
			return -EINVAL;
		idx = t->nstmts - 1;
	}
	p->depth++;
	if (declare(p, &var, KPP_VALUE, &slot))
		return -EINVAL;
	t->stmts[idx].slot = slot;
	t->stmts[idx].e0 = e0;
	t->stmts[idx].e1 = e1;
	if (parse_block(p, &open))
		return -EINVAL;
	scope_pop(p);
	t->stmts[idx].end = t->nstmts;
	return 0;
}

static int parse_chip(struct parser *p, const struct kpp_token *first)
{
	struct kpp_tree *t = p->t;
	struct kpp_stmt *s;
	struct kpp_token tk;
	uint32_t off;

	if (p->depth > 0)
		return perr(p, first->line, first->col,
			    "the chip statement belongs at the top level, not inside a loop");
	if (t->chip_stmt >= 0)
		return perr(p, first->line, first->col,
			    "a second chip statement: the chip is chosen at line %u already",
			    t->stmts[t->chip_stmt].line);
	if (t->first_model_stmt >= 0)
		return perr(p, first->line, first->col,
			    "the chip statement must come before the first tensor or instruction (line %u)",
			    t->stmts[t->first_model_stmt].line);
	if (advance(p))
		return -EINVAL;
	tk = p->tok;
	if (tk.kind == KPP_T_NAME) {
		if (pool_add(p, t->text + tk.off, tk.len, &off))
			return -ENOMEM;
	} else if (tk.kind == KPP_T_STRING && tk.len > 2) {
		if (pool_add(p, t->text + tk.off + 1, tk.len - 2, &off))
			return -ENOMEM;
	} else {
		return unexpected(p, "the chip's name or a quoted path");
	}
	if (advance(p) || new_stmt(p, KPP_S_CHIP, first, &s))
		return -EINVAL;
	s->name = off;
	t->chip_stmt = (int32_t)(t->nstmts - 1);
	return 0;
}

static int parse_binding(struct parser *p, const struct kpp_token *first, uint8_t kind)
{
	struct kpp_stmt *s;
	struct kpp_token name;
	uint32_t e, slot, off;

	if (advance(p))
		return -EINVAL;
	name = p->tok;
	if (name.kind != KPP_T_NAME)
		return unexpected(p, kind == KPP_S_PARAM ? "the param's name" : "the name to bind");
	if (advance(p) || expect(p, KPP_T_EQ, "'='") || parse_expr(p, &e) ||
	    declare(p, &name, KPP_VALUE, &slot) || tok_name(p, &name, &off) ||
	    new_stmt(p, kind, first, &s))
		return -EINVAL;
	s->slot = slot;
	s->e0 = e;
	s->name = off;
	return 0;
}

static int parse_tensor(struct parser *p, const struct kpp_token *first)
{
	struct kpp_tree *t = p->t;
	struct kpp_token name;
	uint32_t dims[KS_PRED_MAX_DIMS], ndim = 0, off[4] = { 0, 0, 0, 0 }, slot;
	struct kpp_stmt *s;
	static const char *const what[] = {
		"the tensor's name", "its memory space (GM, UB, ...)", "its data type (fp16, ...)",
	};

	model_stmt(p);
	if (advance(p))
		return -EINVAL;
	name = p->tok;
	for (int i = 0; i < 3; i++) {
		if (p->tok.kind != KPP_T_NAME)
			return unexpected(p, what[i]);
		if (tok_name(p, &p->tok, &off[i]) || advance(p))
			return -EINVAL;
	}
	if (expect(p, KPP_T_LBRACK, "'[' and the tensor's shape"))
		return -EINVAL;
	for (;;) {
		if (ndim == KS_PRED_MAX_DIMS)
			return perr(p, p->tok.line, p->tok.col,
				    "a tensor has at most %d dimensions", KS_PRED_MAX_DIMS);
		if (parse_expr(p, &dims[ndim++]))
			return -EINVAL;
		if (p->tok.kind == KPP_T_RBRACK)
			break;
		if (expect(p, KPP_T_COMMA, "',' or ']' in the shape"))
			return -EINVAL;
	}
	if (advance(p))
		return -EINVAL;
	if (p->tok.kind == KPP_T_NAME) {
		if (tok_name(p, &p->tok, &off[3]) || advance(p))
			return -EINVAL;
	}
	if (declare(p, &name, KPP_TENSOR, &slot))
		return -EINVAL;
	for (uint32_t i = 0; i < ndim; i++) {
		if (grow(p, (void **)&t->list, t->nlist, &p->cap_list, sizeof(*t->list)))
			return -ENOMEM;
		t->list[t->nlist++] = dims[i];
	}
	if (new_stmt(p, KPP_S_TENSOR, first, &s))
		return -EINVAL;
	s->slot = slot;
	s->name = off[0];
	s->space = off[1];
	s->dtype = off[2];
	s->format = off[3];
	s->first = t->nlist - ndim;
	s->nin = ndim;
	return 0;
}

static int parse_split(struct parser *p, const struct kpp_token *first)
{
	struct kpp_tree *t = p->t;
	struct kpp_token name;
	uint32_t ref, axis, parts, slot, off;
	struct kpp_stmt *s;

	model_stmt(p);
	if (advance(p))
		return -EINVAL;
	ref = t->nrefs;
	if (parse_ref(p, "the tensor to split") ||
	    expect(p, KPP_T_ARROW, "'->' and the name of the pieces"))
		return -EINVAL;
	name = p->tok;
	if (name.kind != KPP_T_NAME)
		return unexpected(p, "the name of the pieces");
	if (advance(p) || parse_expr(p, &axis) || parse_expr(p, &parts) ||
	    declare(p, &name, KPP_SPLIT, &slot) || tok_name(p, &name, &off) ||
	    new_stmt(p, KPP_S_SPLIT, first, &s))
		return -EINVAL;
	s->first = ref;
	s->nin = 1;
	s->e0 = axis;
	s->e1 = parts;
	s->slot = slot;
	s->name = off;
	return 0;
}

static int parse_register(struct parser *p, const struct kpp_token *first)
{
	struct kpp_tree *t = p->t;
	struct kpp_stmt *s;
	struct kpp_token name;
	uint32_t idx;
	char q[80];

	model_stmt(p);
	if (advance(p))
		return -EINVAL;
	name = p->tok;
	if (name.kind != KPP_T_NAME)
		return unexpected(p, "the new instruction's name");
	if (is_statement_keyword(p, &name)) {
		kpp_quote(t->text + name.off, name.len, q, sizeof(q));
		return perr(p, name.line, name.col,
			    "%s is a keyword of the language; name the instruction otherwise", q);
	}
	if (new_stmt(p, KPP_S_REGISTER, first, &s))
		return -EINVAL;
	idx = t->nstmts - 1;
	if (tok_name(p, &name, &t->stmts[idx].name) || advance(p))
		return -EINVAL;
	if (p->tok.kind != KPP_T_NAME)
		return unexpected(p, "the pipe it runs on");
	if (tok_name(p, &p->tok, &t->stmts[idx].pipe) || advance(p))
		return -EINVAL;
	if (tok_is(p, &p->tok, "formula")) {
		if (advance(p))
			return -EINVAL;
		if (p->tok.kind != KPP_T_STRING)
			return unexpected(p, "the formula, in double quotes");
		if (p->tok.len <= 2)
			return perr(p, p->tok.line, p->tok.col, "the formula is empty");
		if (pool_add(p, t->text + p->tok.off + 1, p->tok.len - 2, &t->stmts[idx].formula) ||
		    advance(p))
			return -EINVAL;
	} else if (tok_is(p, &p->tok, "table")) {
		if (advance(p) || parse_table(p, &t->stmts[idx]))
			return -EINVAL;
	} else {
		return unexpected(p, "'formula' or 'table' (the instruction's cost)");
	}
	if (tok_is(p, &p->tok, "ops")) {
		if (advance(p) || parse_number(p, "the operations per element", &t->stmts[idx].ops))
			return -EINVAL;
	}
	return 0;
}

static int parse_scalar(struct parser *p, const struct kpp_token *first)
{
	struct kpp_tree *t = p->t;
	uint32_t count, ref, nin = 0, nout = 0;
	struct kpp_stmt *s;

	model_stmt(p);
	if (advance(p) || parse_expr(p, &count))
		return -EINVAL;
	ref = t->nrefs;
	if (p->tok.kind == KPP_T_NAME && parse_refs(p, "an input", "inputs", &nin))
		return -EINVAL;
	if (p->tok.kind == KPP_T_ARROW) {
		if (advance(p) || parse_refs(p, "an output tensor after '->'", "outputs", &nout))
			return -EINVAL;
	}
	if (new_stmt(p, KPP_S_SCALAR, first, &s))
		return -EINVAL;
	s->e0 = count;
	s->first = ref;
	s->nin = nin;
	s->nout = nout;
	return 0;
}

static int parse_load(struct parser *p, const struct kpp_token *first)
{
	struct kpp_tree *t = p->t;
	struct kpp_stmt *s;
	uint32_t ref;

	model_stmt(p);
	if (advance(p))
		return -EINVAL;
	ref = t->nrefs;
	if (parse_ref(p, "the tensor to load from") ||
	    expect(p, KPP_T_ARROW, "'->' and the destination") ||
	    parse_ref(p, "the destination tensor after '->'") ||
	    new_stmt(p, KPP_S_LOAD, first, &s))
		return -EINVAL;
	s->first = ref;
	s->nin = 1;
	s->nout = 1;
	return 0;
}

/* set_flag SRC DST EVENT and wait_flag SRC DST EVENT: two pipe names and
 * an expression. */
static int parse_flag(struct parser *p, const struct kpp_token *first, uint8_t kind)
{
	uint32_t src, dst, event;
	struct kpp_stmt *s;

	model_stmt(p);
	if (advance(p))
		return -EINVAL;
	if (p->tok.kind != KPP_T_NAME)
		return unexpected(p, "the source pipe (the one that sets the flag)");
	if (tok_name(p, &p->tok, &src) || advance(p))
		return -EINVAL;
	if (p->tok.kind != KPP_T_NAME)
		return unexpected(p, "the destination pipe (the one that waits)");
	if (tok_name(p, &p->tok, &dst) || advance(p) || parse_expr(p, &event) ||
	    new_stmt(p, kind, first, &s))
		return -EINVAL;
	s->name = src;
	s->pipe = dst;
	s->e0 = event;
	return 0;
}

/* cache_hit_ratio NUMBER: a decimal number, which may have a sign (so
 * that a negative one gets the model's range message). */
static int parse_cache(struct parser *p, const struct kpp_token *first)
{
	struct kpp_stmt *s;
	double v = 0;
	int neg = 0;

	model_stmt(p);
	if (advance(p))
		return -EINVAL;
	if (p->tok.kind == KPP_T_MINUS) {
		neg = 1;
		if (advance(p))
			return -EINVAL;
	}
	if (parse_number(p, "the cache hit ratio (a number from 0 to 1)", &v) ||
	    new_stmt(p, KPP_S_CACHE, first, &s))
		return -EINVAL;
	s->ops = neg ? -v : v;
	return 0;
}

/* core NAME, or core NAME [ expr ] for the core NAME<expr> (AIV[i]). */
static int parse_core(struct parser *p, const struct kpp_token *first)
{
	uint32_t name, index = 0, indexed = 0;
	struct kpp_stmt *s;

	model_stmt(p);
	if (advance(p))
		return -EINVAL;
	if (p->tok.kind != KPP_T_NAME)
		return unexpected(p, "the core's name (AIC0, AIV1, ... or AIV[i])");
	if (tok_name(p, &p->tok, &name) || advance(p))
		return -EINVAL;
	if (p->tok.kind == KPP_T_LBRACK) {
		if (advance(p) || parse_expr(p, &index))
			return -EINVAL;
		if (p->tok.kind != KPP_T_RBRACK)
			return unexpected(p, "']' after the core's number");
		if (advance(p))
			return -EINVAL;
		indexed = 1;
	}
	if (new_stmt(p, KPP_S_CORE, first, &s))
		return -EINVAL;
	s->name = name;
	s->e0 = index;
	s->nin = indexed;
	return 0;
}

static int parse_instr(struct parser *p, const struct kpp_token *first)
{
	struct kpp_tree *t = p->t;
	uint32_t ref, nin = 0, nout = 0, off;
	struct kpp_stmt *s;
	char q[80], what[128];

	model_stmt(p);
	if (tok_name(p, first, &off) || advance(p))
		return -EINVAL;
	kpp_quote(t->text + first->off, first->len, q, sizeof(q));
	ref = t->nrefs;
	if (p->tok.kind == KPP_T_NAME && parse_refs(p, "an input", "inputs", &nin))
		return -EINVAL;
	if (p->tok.kind != KPP_T_ARROW) {
		snprintf(what, sizeof(what), "an input tensor or '->' and the outputs of %s", q);
		return unexpected(p, what);
	}
	if (advance(p) || parse_refs(p, "an output tensor after '->'", "outputs", &nout) ||
	    new_stmt(p, KPP_S_INSTR, first, &s))
		return -EINVAL;
	s->name = off;
	s->first = ref;
	s->nin = nin;
	s->nout = nout;
	return 0;
}

/* One statement and the end of its line. */
static int parse_stmt(struct parser *p)
{
	struct kpp_token first = p->tok;
	int rc;

	if (first.kind == KPP_T_RBRACE)
		return perr(p, first.line, first.col, "'}' without a loop to close");
	if (first.kind != KPP_T_NAME)
		return unexpected(p, "a statement (chip, param, let, tensor, split, instr, scalar, load, for, set_flag, wait_flag, cache_hit_ratio, core, or an instruction)");
	if (tok_is(p, &first, "chip"))
		rc = parse_chip(p, &first);
	else if (tok_is(p, &first, "param"))
		rc = parse_binding(p, &first, KPP_S_PARAM);
	else if (tok_is(p, &first, "let"))
		rc = parse_binding(p, &first, KPP_S_LET);
	else if (tok_is(p, &first, "tensor"))
		rc = parse_tensor(p, &first);
	else if (tok_is(p, &first, "split"))
		rc = parse_split(p, &first);
	else if (tok_is(p, &first, "instr"))
		rc = parse_register(p, &first);
	else if (tok_is(p, &first, "scalar"))
		rc = parse_scalar(p, &first);
	else if (tok_is(p, &first, "load"))
		rc = parse_load(p, &first);
	else if (tok_is(p, &first, "for"))
		rc = parse_for(p, &first);
	else if (tok_is(p, &first, "set_flag"))
		rc = parse_flag(p, &first, KPP_S_SET_FLAG);
	else if (tok_is(p, &first, "wait_flag"))
		rc = parse_flag(p, &first, KPP_S_WAIT_FLAG);
	else if (tok_is(p, &first, "cache_hit_ratio"))
		rc = parse_cache(p, &first);
	else if (tok_is(p, &first, "core"))
		rc = parse_core(p, &first);
	else
		rc = parse_instr(p, &first);
	if (rc)
		return rc;
	if (p->tok.kind == KPP_T_EOF)
		return 0;
	if (p->tok.kind != KPP_T_NL)
		return unexpected(p, "the end of the statement (one statement per line)");
	return advance(p);
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */
/* ------------------------------------------------------------------ */

int kpp_parse(const char *file, const char *text, size_t len, struct kpp_tree *tree,
	      char *err, size_t errsize)
{
	struct parser p;
	int rc = 0;

	memset(tree, 0, sizeof(*tree));
	tree->file = file;
	tree->text = text;
	tree->len = len;
	tree->chip_stmt = -1;
	tree->first_model_stmt = -1;
	memset(&p, 0, sizeof(p));
	p.t = tree;
	p.err = err;
	p.errsize = errsize;
	if (len > KS_KPP_MAX_FILE)
		return kpp_errorf(err, errsize, file, 1, 1,
				  "the model is larger than %u bytes", KS_KPP_MAX_FILE);
	kpp_lex_init(&p.lx, file, text, len, err, errsize);
	{
		uint32_t empty;

		if (pool_add(&p, "", 0, &empty)) {
			rc = -ENOMEM;
			goto out;
		}
	}
	if (advance(&p)) {
		rc = -EINVAL;
		goto out;
	}
	while (p.tok.kind != KPP_T_EOF) {
		if (p.tok.kind == KPP_T_NL) {
			if (advance(&p)) {
				rc = -EINVAL;
				goto out;
			}
			continue;
		}
		rc = parse_stmt(&p);
		if (rc)
			goto out;
	}
out:
	if (rc && !p.failed)
		rc = oom(&p);
	free(p.names);
	free(p.binds);
	return rc ? (rc == -ENOMEM ? -ENOMEM : -EINVAL) : 0;
}

void kpp_tree_free(struct kpp_tree *tree)
{
	free(tree->stmts);
	free(tree->exprs);
	free(tree->refs);
	free(tree->list);
	free(tree->nums);
	free(tree->slots);
	free(tree->pool);
	memset(tree, 0, sizeof(*tree));
}

void kpp_tree_where(const struct kpp_tree *tree, uint32_t off, uint32_t *line, uint32_t *col)
{
	uint32_t l = 1, start = 0;

	for (uint32_t i = 0; i < off && i < tree->len; i++)
		if (tree->text[i] == '\n') {
			l++;
			start = i + 1;
		}
	*line = l;
	*col = off - start + 1;
}
