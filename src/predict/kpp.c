/*
 * The interpreter of the .kpp language (docs/predict.md "The language"):
 * ks_pred_parse_file reads the file, kpp_parse.c turns it into a syntax
 * tree with every name resolved to a slot, and this file walks the tree
 * once, evaluating expressions in checked 64-bit arithmetic and calling
 * the C API of predict.h for each statement that builds the model.
 *
 * Before each call it sets the model's location to the statement's
 * file:line:column, so the core's messages and the trace carry it; an
 * error the core reports comes back prefixed with that location (unless
 * the core already put it first).  A tensor declared in a loop body is a
 * new tensor on each pass and keeps its plain name ("xu" on every pass):
 * the name is a label in the core, not a key.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kpp.h"
#include "pred_int.h"
#include "readfile.h"

/* A slot's value: a param, let or loop variable; a tensor's id; a split's
 * first piece and number of pieces. */
struct slot {
	int64_t v;
	int64_t count;
};

struct run {
	const struct kpp_tree *t;
	const struct ks_kpp_opts *o;
	struct ks_pred_model *m;
	struct slot *slots;
	uint64_t steps, max_steps;
	int *ids;          /* a split's pieces */
	size_t ids_cap;
	char *err;
	size_t errsize;
};

static int run_error(struct run *r, uint32_t line, uint32_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int run_error(struct run *r, uint32_t line, uint32_t col, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kpp_errorf(r->err, r->errsize, r->t->file, line, col, "%s", msg);
}

/* The expression's text, quoted, for a message. */
static void expr_text(const struct run *r, uint32_t e, char *buf, size_t size)
{
	const struct kpp_expr *x = &r->t->exprs[e];

	kpp_quote(r->t->text + x->start, x->end - x->start, buf, size);
}

/* ------------------------------------------------------------------ */
/* Expressions                                                         */
/* ------------------------------------------------------------------ */

static int eval(struct run *r, uint32_t e, int64_t *out);

static int eval_fail(struct run *r, uint32_t e, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int eval_fail(struct run *r, uint32_t e, const char *fmt, ...)
{
	uint32_t line, col;
	char msg[640];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kpp_tree_where(r->t, r->t->exprs[e].at, &line, &col);
	return run_error(r, line, col, "%s", msg);
}

static int overflow(struct run *r, uint32_t e, int64_t a, const char *op, int64_t b)
{
	char q[160];

	expr_text(r, e, q, sizeof(q));
	return eval_fail(r, e,
			 "integer overflow in %s: %" PRId64 " %s %" PRId64 " does not fit in 64 bits",
			 q, a, op, b);
}

static int div_zero(struct run *r, uint32_t e)
{
	char q[160], d[120];

	expr_text(r, e, q, sizeof(q));
	expr_text(r, r->t->exprs[e].b, d, sizeof(d));
	return eval_fail(r, e, "division by zero in %s: the divisor %s is 0", q, d);
}

static int eval(struct run *r, uint32_t e, int64_t *out)
{
	const struct kpp_expr *x = &r->t->exprs[e];
	int64_t a, b;

	switch (x->op) {
	case KPP_E_CONST:
		*out = x->value;
		return 0;
	case KPP_E_SLOT:
		*out = r->slots[x->value].v;
		return 0;
	case KPP_E_NEG:
		if (eval(r, x->a, &a))
			return -EINVAL;
		if (a == INT64_MIN) {
			char q[160];

			expr_text(r, e, q, sizeof(q));
			return eval_fail(r, e,
					 "integer overflow in %s: -(%" PRId64 ") does not fit in 64 bits",
					 q, a);
		}
		*out = -a;
		return 0;
	default:
		break;
	}
	if (eval(r, x->a, &a) || eval(r, x->b, &b))
		return -EINVAL;
	switch (x->op) {
	case KPP_E_ADD:
		if (__builtin_add_overflow(a, b, out))
			return overflow(r, e, a, "+", b);
		return 0;
	case KPP_E_SUB:
		if (__builtin_sub_overflow(a, b, out))
			return overflow(r, e, a, "-", b);
		return 0;
	case KPP_E_MUL:
		if (__builtin_mul_overflow(a, b, out))
			return overflow(r, e, a, "*", b);
		return 0;
	case KPP_E_DIV:
		if (b == 0)
			return div_zero(r, e);
		if (a == INT64_MIN && b == -1)
			return overflow(r, e, a, "/", b);
		*out = a / b;
		return 0;
	case KPP_E_MOD:
		if (b == 0)
			return div_zero(r, e);
		/* INT64_MIN % -1 is 0, but undefined in C. */
		*out = b == -1 ? 0 : a % b;
		return 0;
	case KPP_E_MIN:
		*out = a < b ? a : b;
		return 0;
	case KPP_E_MAX:
		*out = a > b ? a : b;
		return 0;
	case KPP_E_CEIL_DIV: {
		int64_t q, rem;

		if (b == 0)
			return div_zero(r, e);
		if (a == INT64_MIN && b == -1)
			return overflow(r, e, a, "/", b);
		q = a / b;
		rem = b == -1 ? 0 : a % b;
		/* Truncation rounded a positive quotient down: one more. */
		if (rem != 0 && (rem > 0) == (b > 0))
			q++;
		*out = q;
		return 0;
	}
	default:
		return eval_fail(r, e, "internal error: unknown expression node %u", x->op);
	}
}

/* ------------------------------------------------------------------ */
/* Calls into the model                                                */
/* ------------------------------------------------------------------ */

static const char *pool(const struct run *r, uint32_t off)
{
	return r->t->pool + off;
}

/* The core refused the statement's call: its message, with the
 * statement's location first. */
static int api_error(struct run *r, const struct kpp_stmt *s, int rc)
{
	const char *msg = ks_pred_error(r->m);
	char prefix[320];
	int n;

	n = snprintf(prefix, sizeof(prefix), "%s:%" PRIu32 ":%" PRIu32 ": ", r->t->file,
		     s->line, s->col);
	if (!msg || !*msg)
		return run_error(r, s->line, s->col, "the model refused the statement (%s)",
				 strerror(-rc));
	if (n > 0 && (size_t)n < sizeof(prefix) && strncmp(msg, prefix, (size_t)n) == 0) {
		if (r->err && r->errsize)
			snprintf(r->err, r->errsize, "%s", msg);
		return -EINVAL;
	}
	return run_error(r, s->line, s->col, "%s", msg);
}

/* The model, created on the first statement that needs it, on the chip
 * given from outside or the file's chip. */
static int need_model(struct run *r, const struct kpp_stmt *s)
{
	const struct kpp_tree *t = r->t;
	const struct kpp_stmt *where = s;
	const char *chip = r->o->chip;
	char msg[2048];

	if (r->m)
		return 0;
	if (t->chip_stmt >= 0) {
		where = &t->stmts[t->chip_stmt];
		if (!chip)
			chip = pool(r, where->name);
	}
	if (!chip)
		return run_error(r, s->line, s->col,
				 "no chip: put `chip NAME` (or a quoted path) before the first tensor or instruction, or choose one with --chip");
	msg[0] = '\0';
	r->m = ks_pred_model_new(chip, msg, sizeof(msg));
	if (!r->m)
		return run_error(r, where->line, where->col, "%s",
				 msg[0] ? msg : "the chip cannot be loaded");
	return 0;
}

static void locate(struct run *r, const struct kpp_stmt *s)
{
	ks_pred_set_location(r->m, r->t->file, (int)s->line, (int)s->col);
}

/* The tensor id of a ref: a tensor, or the i-th piece of a split. */
static int ref_id(struct run *r, const struct kpp_ref *ref, int *id)
{
	const struct slot *sl = &r->slots[ref->slot];
	int64_t i;

	if (ref->index < 0) {
		*id = (int)sl->v;
		return 0;
	}
	if (eval(r, (uint32_t)ref->index, &i))
		return -EINVAL;
	if (i < 0 || i >= sl->count)
		return run_error(r, ref->line, ref->col,
				 "%s[%" PRId64 "]: the index is out of range: %s has %" PRId64
				 " pieces, %s[0] .. %s[%" PRId64 "]",
				 pool(r, ref->name), i, pool(r, ref->name), sl->count,
				 pool(r, ref->name), pool(r, ref->name), sl->count - 1);
	*id = (int)(sl->v + i);
	return 0;
}

static int refs_ids(struct run *r, uint32_t first, uint32_t n, int *ids)
{
	for (uint32_t k = 0; k < n; k++)
		if (ref_id(r, &r->t->refs[first + k], &ids[k]))
			return -EINVAL;
	return 0;
}

static int do_tensor(struct run *r, const struct kpp_stmt *s)
{
	const struct kpp_tree *t = r->t;
	int64_t shape[KS_PRED_MAX_DIMS];
	int id;

	for (uint32_t k = 0; k < s->nin; k++) {
		uint32_t e = t->list[s->first + k];

		if (eval(r, e, &shape[k]))
			return -EINVAL;
		if (shape[k] < 1) {
			uint32_t line, col;
			char q[120];

			expr_text(r, e, q, sizeof(q));
			kpp_tree_where(t, t->exprs[e].start, &line, &col);
			return run_error(r, line, col,
					 "tensor %s: dimension %" PRIu32 " (%s) is %" PRId64
					 "; each dimension must be at least 1",
					 pool(r, s->name), k, q, shape[k]);
		}
	}
	if (need_model(r, s))
		return -EINVAL;
	locate(r, s);
	id = ks_pred_tensor(r->m, pool(r, s->name), pool(r, s->space), pool(r, s->dtype),
			    shape, (int)s->nin, s->format ? pool(r, s->format) : NULL);
	if (id < 0)
		return api_error(r, s, id);
	r->slots[s->slot].v = id;
	return 0;
}

static int do_split(struct run *r, const struct kpp_stmt *s)
{
	const struct kpp_tree *t = r->t;
	int64_t axis, parts;
	int parent, first;
	size_t need;

	if (ref_id(r, &t->refs[s->first], &parent) || eval(r, s->e0, &axis) ||
	    eval(r, s->e1, &parts))
		return -EINVAL;
	if (axis < INT_MIN || axis > INT_MAX || parts < INT_MIN || parts > INT_MAX ||
	    (parts > 0 && (uint64_t)parts > r->max_steps - r->steps)) {
		int bad_axis = axis < INT_MIN || axis > INT_MAX;
		uint32_t line, col;

		kpp_tree_where(t, t->exprs[bad_axis ? s->e0 : s->e1].start, &line, &col);
		if (bad_axis || parts < INT_MIN)
			return run_error(r, line, col, "split %s: the %s %" PRId64 " is out of range",
					 pool(r, s->name), bad_axis ? "axis" : "number of pieces",
					 bad_axis ? axis : parts);
		return run_error(r, line, col,
				 "split %s: %" PRId64 " pieces are too many for this model (at most %" PRIu64 " statements and pieces in all)",
				 pool(r, s->name), parts, r->max_steps);
	}
	/* Fewer than one piece: the core refuses it before writing an id. */
	need = parts > 0 ? (size_t)parts : 0;
	r->steps += need;
	if (need + 1 > r->ids_cap) {
		int *q = realloc(r->ids, (need + 1) * sizeof(*q));

		if (!q)
			return run_error(r, s->line, s->col,
					 "out of memory splitting into %" PRId64 " pieces", parts);
		r->ids = q;
		r->ids_cap = need + 1;
	}
	if (need_model(r, s))
		return -EINVAL;
	locate(r, s);
	first = ks_pred_split(r->m, parent, (int)axis, (int)parts, r->ids);
	if (first < 0)
		return api_error(r, s, first);
	r->slots[s->slot].v = first;
	r->slots[s->slot].count = parts;
	return 0;
}

static int do_register(struct run *r, const struct kpp_stmt *s)
{
	const struct kpp_tree *t = r->t;
	double *sizes = NULL, *thr = NULL;
	int rc;

	if (need_model(r, s))
		return -EINVAL;
	if (!s->formula) {
		sizes = malloc(s->nin * sizeof(*sizes));
		thr = malloc(s->nin * sizeof(*thr));
		if (!sizes || !thr) {
			free(sizes);
			free(thr);
			return run_error(r, s->line, s->col, "out of memory");
		}
		for (uint32_t k = 0; k < s->nin; k++) {
			sizes[k] = t->nums[s->first + 2 * k];
			thr[k] = t->nums[s->first + 2 * k + 1];
		}
	}
	locate(r, s);
	rc = ks_pred_register(r->m, pool(r, s->name), pool(r, s->pipe),
			      s->formula ? pool(r, s->formula) : NULL, sizes, thr,
			      s->formula ? 0 : s->nin, s->ops);
	free(sizes);
	free(thr);
	if (rc < 0)
		return api_error(r, s, rc);
	return 0;
}

static int do_instr(struct run *r, const struct kpp_stmt *s)
{
	int ids[2 * KS_PRED_MAX_OPERANDS], rc;
	int64_t count = 0;

	if (s->kind == KPP_S_SCALAR && eval(r, s->e0, &count))
		return -EINVAL;
	if (refs_ids(r, s->first, s->nin + s->nout, ids) || need_model(r, s))
		return -EINVAL;
	locate(r, s);
	switch (s->kind) {
	case KPP_S_LOAD:
		rc = ks_pred_load(r->m, ids[1], ids[0]);
		break;
	case KPP_S_SCALAR:
		rc = ks_pred_scalar(r->m, count, ids, (int)s->nin, ids + s->nin, (int)s->nout);
		break;
	default:
		rc = ks_pred_instr(r->m, pool(r, s->name), ids, (int)s->nin, ids + s->nin,
				   (int)s->nout);
		break;
	}
	if (rc < 0)
		return api_error(r, s, rc);
	return 0;
}

static int do_flag(struct run *r, const struct kpp_stmt *s)
{
	int64_t event;
	int rc;

	if (eval(r, s->e0, &event) || need_model(r, s))
		return -EINVAL;
	locate(r, s);
	rc = pred_flag(r->m, s->kind == KPP_S_SET_FLAG, pool(r, s->name), pool(r, s->pipe),
		       event);
	if (rc < 0)
		return api_error(r, s, rc);
	return 0;
}

static int do_core(struct run *r, const struct kpp_stmt *s)
{
	char name[KS_PRED_MAX_NAME + 32];
	int64_t k;

	if (need_model(r, s))
		return -EINVAL;
	if (s->nin) {
		if (eval(r, s->e0, &k))
			return -EINVAL;
		snprintf(name, sizeof(name), "%s%lld", pool(r, s->name), (long long)k);
	} else {
		snprintf(name, sizeof(name), "%s", pool(r, s->name));
	}
	locate(r, s);
	if (ks_pred_set_core(r->m, name) < 0)
		return api_error(r, s, -EINVAL);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

static int step(struct run *r, const struct kpp_stmt *s)
{
	if (++r->steps > r->max_steps)
		return run_error(r, s->line, s->col,
				 "the model runs more than %" PRIu64 " statements (loop passes and split pieces count); is a loop bound wrong?",
				 r->max_steps);
	return 0;
}

/* Runs statements [begin, end). */
static int exec(struct run *r, uint32_t begin, uint32_t end)
{
	const struct kpp_tree *t = r->t;

	for (uint32_t i = begin; i < end; i++) {
		const struct kpp_stmt *s = &t->stmts[i];
		int64_t a, b;
		int rc = 0;

		if (step(r, s))
			return -EINVAL;
		switch (s->kind) {
		case KPP_S_CHIP:
			rc = need_model(r, s);
			break;
		case KPP_S_PARAM:
			if (s->has_override)
				r->slots[s->slot].v = s->value;
			else
				rc = eval(r, s->e0, &r->slots[s->slot].v);
			break;
		case KPP_S_LET:
			rc = eval(r, s->e0, &r->slots[s->slot].v);
			break;
		case KPP_S_TENSOR:
			rc = do_tensor(r, s);
			break;
		case KPP_S_SPLIT:
			rc = do_split(r, s);
			break;
		case KPP_S_REGISTER:
			rc = do_register(r, s);
			break;
		case KPP_S_SCALAR:
		case KPP_S_LOAD:
		case KPP_S_INSTR:
			rc = do_instr(r, s);
			break;
		case KPP_S_SET_FLAG:
		case KPP_S_WAIT_FLAG:
			rc = do_flag(r, s);
			break;
		case KPP_S_CORE:
			rc = do_core(r, s);
			break;
		case KPP_S_CACHE:
			if ((rc = need_model(r, s)))
				break;
			locate(r, s);
			if (ks_pred_set_cache_hit_ratio(r->m, s->ops) < 0)
				rc = api_error(r, s, -EINVAL);
			break;
		case KPP_S_FOR:
			if (eval(r, s->e0, &a) || eval(r, s->e1, &b))
				return -EINVAL;
			/* i < b <= INT64_MAX, so i + 1 cannot overflow. */
			for (int64_t v = a; v < b; v++) {
				r->slots[s->slot].v = v;
				if (v != a && step(r, s))
					return -EINVAL;
				if (exec(r, i + 1, s->end))
					return -EINVAL;
			}
			i = s->end - 1;
			break;
		default:
			rc = run_error(r, s->line, s->col, "internal error: unknown statement %u",
				       s->kind);
			break;
		}
		if (rc)
			return -EINVAL;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Values given from outside                                           */
/* ------------------------------------------------------------------ */

static int parse_int64(const char *s, int64_t *out)
{
	int neg = 0;
	uint64_t v = 0, lim;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!*s)
		return -1;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > (lim - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

/* Marks each param statement with the value given from outside for its
 * name (the last key given wins); refuses a key no param declares unless
 * told to ignore it, and a value that is not an integer. */
static int apply_overrides(struct kpp_tree *t, const struct ks_kpp_opts *o, char *err,
			   size_t errsize)
{
	for (size_t k = 0; k < o->n; k++) {
		const char *key = o->keys[k], *val = o->values[k];
		int found = 0;

		if (!key)
			key = "";
		for (uint32_t i = 0; i < t->nstmts; i++) {
			struct kpp_stmt *s = &t->stmts[i];
			int64_t v;

			if (s->kind != KPP_S_PARAM || strcmp(t->pool + s->name, key) != 0)
				continue;
			found = 1;
			if (!val || parse_int64(val, &v)) {
				char q[80];

				kpp_quote(val ? val : "", val ? strlen(val) : 0, q, sizeof(q));
				return kpp_errorf(err, errsize, t->file, s->line, s->col,
						  "param %s: the value given from outside, %s, is not a 64-bit integer",
						  key, q);
			}
			s->has_override = 1;
			s->value = v;
		}
		if (!found && !(o->flags & KS_PRED_PARSE_IGNORE_UNKNOWN)) {
			char list[512], q[80];
			size_t used = 0;

			list[0] = '\0';
			for (uint32_t i = 0; i < t->nstmts; i++) {
				const struct kpp_stmt *s = &t->stmts[i];
				int dup = 0;

				if (s->kind != KPP_S_PARAM)
					continue;
				for (uint32_t j = 0; j < i && !dup; j++)
					dup = t->stmts[j].kind == KPP_S_PARAM &&
					      t->stmts[j].name == s->name;
				if (dup || used + strlen(t->pool + s->name) + 8 >= sizeof(list))
					continue;
				used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
							 used ? ", " : "", t->pool + s->name);
			}
			kpp_quote(key, strlen(key), q, sizeof(q));
			return kpp_errorf(err, errsize, t->file, 1, 1,
					  "%s is given a value from outside, but the model declares no param of that name (%s%s)",
					  q, used ? "its params: " : "it declares no params",
					  list);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */
/* ------------------------------------------------------------------ */

struct ks_pred_model *ks_kpp_parse(const char *name, const char *text, size_t len,
				   const struct ks_kpp_opts *opts, char *err, size_t errsize)
{
	static const struct ks_kpp_opts none;
	struct kpp_tree tree;
	struct run r;
	char buf[1024];

	if (!err || errsize == 0) {
		err = buf;
		errsize = sizeof(buf);
	}
	err[0] = '\0';
	if (!opts)
		opts = &none;
	if (!name)
		name = "<model>";
	memset(&r, 0, sizeof(r));
	r.o = opts;
	r.t = &tree;
	r.err = err;
	r.errsize = errsize;
	r.max_steps = opts->max_steps ? opts->max_steps : KS_KPP_MAX_STEPS;
	if (kpp_parse(name, text ? text : "", text ? len : 0, &tree, err, errsize) ||
	    apply_overrides(&tree, opts, err, errsize))
		goto fail;
	r.slots = calloc(tree.nslots ? tree.nslots : 1, sizeof(*r.slots));
	if (!r.slots) {
		snprintf(err, errsize, "%s: out of memory", name);
		goto fail;
	}
	if (exec(&r, 0, tree.nstmts))
		goto fail;
	if (!r.m) {
		/* Nothing built the model: still, it has a chip. */
		struct kpp_stmt at = { .line = 1, .col = 1 };

		if (need_model(&r, &at))
			goto fail;
	}
	ks_pred_set_location(r.m, NULL, 0, 0);
	free(r.slots);
	free(r.ids);
	kpp_tree_free(&tree);
	return r.m;
fail:
	if (r.m)
		ks_pred_model_free(r.m);
	free(r.slots);
	free(r.ids);
	kpp_tree_free(&tree);
	return NULL;
}

struct ks_pred_model *ks_pred_parse_file(const char *path, const char *chip,
					 const char *const *keys,
					 const char *const *values, size_t n,
					 unsigned flags, char *err, size_t errsize)
{
	struct ks_kpp_opts o = {
		.chip = chip, .keys = keys, .values = values, .n = n, .flags = flags,
	};
	struct ks_pred_model *m;
	struct ks_err e;
	char *data;
	size_t size;

	if (!path) {
		if (err && errsize)
			snprintf(err, errsize, "no model file given");
		return NULL;
	}
	ks_err_clear(&e);
	if (ks_read_file_at(AT_FDCWD, path, 0, KS_KPP_MAX_FILE, &data, &size, &e)) {
		if (err && errsize)
			snprintf(err, errsize, "%s", e.msg);
		return NULL;
	}
	m = ks_kpp_parse(path, data, size, &o, err, errsize);
	free(data);
	return m;
}
