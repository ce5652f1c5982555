/*
 * The model (include/kscope/predict.h): tensors, splits, instructions and
 * their costs, checked as they are created.  What each instruction waits
 * for is worked out when the model is scheduled (deps.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "pred_int.h"

#define MAX_WARNINGS_BYTES (64 * 1024)
#define MAX_BYTES 9.007199254740992e15 /* 2^53: sizes stay exact */

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

int pred_fail(struct ks_pred_model *m, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->errmsg, sizeof(m->errmsg), fmt, ap);
	va_end(ap);
	return code;
}

void pred_warn(struct ks_pred_model *m, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	size_t n;
	char *w;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (m->warnings) {
		/* each warning once */
		for (const char *p = m->warnings; (p = strstr(p, line)); p++)
			if ((p == m->warnings || p[-1] == '\n') && p[n] == '\n')
				return;
	}
	if (m->warnings_len + n + 2 > MAX_WARNINGS_BYTES)
		return;
	w = realloc(m->warnings, m->warnings_len + n + 2);
	if (!w)
		return;
	memcpy(w + m->warnings_len, line, n);
	w[m->warnings_len + n] = '\n';
	w[m->warnings_len + n + 1] = '\0';
	m->warnings = w;
	m->warnings_len += n + 1;
}

const char *ks_pred_error(const struct ks_pred_model *m)
{
	return m ? m->errmsg : "";
}

const char *ks_pred_warnings(const struct ks_pred_model *m)
{
	return m && m->warnings ? m->warnings : "";
}

/* ------------------------------------------------------------------ */
/* Strings and locations                                               */
/* ------------------------------------------------------------------ */

static int32_t str_add(struct ks_pred_model *m, const char *s)
{
	size_t n = strlen(s) + 1;
	struct pred_strtab *t = &m->str;

	if (t->len + n > INT32_MAX)
		return -1;
	if (t->len + n > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		char *b;

		while (cap < t->len + n)
			cap *= 2;
		if (cap > INT32_MAX)
			cap = INT32_MAX;
		b = realloc(t->buf, cap);
		if (!b)
			return -1;
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	return (int32_t)(t->len - n);
}

const char *pred_str(const struct ks_pred_model *m, int32_t off)
{
	return off >= 0 ? m->str.buf + off : "";
}

/* Locations repeat (a loop's body): interned in a hash table. */
struct pred_locs {
	size_t n, cap;
	int32_t *slot;     /* string offsets, -1 empty */
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static int32_t loc_intern(struct ks_pred_model *m, const char *s)
{
	struct pred_locs *L = m->locs;
	size_t i;

	if (!L) {
		L = m->locs = calloc(1, sizeof(*L));
		if (!L)
			return -1;
	}
	if (2 * (L->n + 1) > L->cap) {
		size_t cap = L->cap ? L->cap * 2 : 256;
		int32_t *slot = malloc(cap * sizeof(*slot));

		if (!slot)
			return -1;
		for (i = 0; i < cap; i++)
			slot[i] = -1;
		for (size_t j = 0; j < L->cap; j++) {
			if (L->slot[j] < 0)
				continue;
			for (i = hash_str(pred_str(m, L->slot[j])) & (cap - 1); slot[i] >= 0;
			     i = (i + 1) & (cap - 1))
				;
			slot[i] = L->slot[j];
		}
		free(L->slot);
		L->slot = slot;
		L->cap = cap;
	}
	for (i = hash_str(s) & (L->cap - 1); L->slot[i] >= 0; i = (i + 1) & (L->cap - 1))
		if (strcmp(pred_str(m, L->slot[i]), s) == 0)
			return L->slot[i];
	L->slot[i] = str_add(m, s);
	if (L->slot[i] >= 0)
		L->n++;
	return L->slot[i];
}

/* The last locations set, by (file pointer, line, column): a loop's body
 * sets the same few again and again, and this spares their formatting. */
void ks_pred_set_location(struct ks_pred_model *m, const char *file, int line, int column)
{
	struct pred_loc_key *k;
	size_t flen;
	char buf[4200];

	if (!m)
		return;
	if (!file) {
		m->loc = -1;
		return;
	}
	k = &m->loc_cache[((uintptr_t)file * 31u + (unsigned)line * 131u + (unsigned)column) %
			  PRED_LOC_CACHE];
	/* the same pointer may hold another name by now: compare the text */
	flen = strlen(file);
	if (k->file == file && k->line == line && k->column == column &&
	    strncmp(pred_str(m, k->off), file, flen) == 0 && pred_str(m, k->off)[flen] == ':') {
		m->loc = k->off;
		return;
	}
	if (column > 0)
		snprintf(buf, sizeof(buf), "%s:%d:%d", file, line, column);
	else
		snprintf(buf, sizeof(buf), "%s:%d", file, line);
	m->loc = loc_intern(m, buf);
	if (m->loc >= 0)
		*k = (struct pred_loc_key){ file, line, column, m->loc };
}

/* ------------------------------------------------------------------ */
/* Models                                                              */
/* ------------------------------------------------------------------ */

struct ks_pred_model *ks_pred_model_new(const char *chip, char *err, size_t errsize)
{
	struct ks_pred_model *m = calloc(1, sizeof(*m));
	struct ks_err e;
	int rc;

	if (!m) {
		if (err && errsize)
			snprintf(err, errsize, "out of memory");
		return NULL;
	}
	rc = pred_chip_load(chip, &m->chip, &e);
	if (rc) {
		if (err && errsize)
			snprintf(err, errsize, "%s", e.msg);
		free(m);
		return NULL;
	}
	m->loc = -1;
	m->core = -1;
	return m;
}

void ks_pred_model_free(struct ks_pred_model *m)
{
	if (!m)
		return;
	pred_chip_free(&m->chip);
	free(m->str.buf);
	free(m->warnings);
	free(m->t);
	free(m->wid);
	free(m->wnext);
	free(m->in);
	free(m->operands);
	free(m->splits);
	free(m->dep);
	free(m->dstart);
	if (m->locs)
		free(m->locs->slot);
	free(m->locs);
	free(m);
}

const char *ks_pred_chip_name(const struct ks_pred_model *m)
{
	return m->chip.name;
}

double ks_pred_chip_clock_hz(const struct ks_pred_model *m)
{
	return m->chip.clock_hz;
}

bool pred_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 1024;
	void *q;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	q = realloc(*p, c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static int check_ready_to_add(struct ks_pred_model *m)
{
	if (m->ran)
		return pred_fail(m, -EINVAL, "the model was already scheduled: it takes "
				 "no more tensors or instructions");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Tensors                                                             */
/* ------------------------------------------------------------------ */

const char *pred_tensor_name(const struct ks_pred_model *m, int id)
{
	return pred_str(m, m->t[id].name);
}

static void shape_text(const struct pred_tensor *t, char *buf, size_t size)
{
	size_t off = 0;

	off += (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < t->ndim && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%lld", i ? ", " : "",
					(long long)t->shape[i]);
	if (off < size)
		snprintf(buf + off, size - off, "]");
}

static double tensor_bytes(const struct pred_tensor *t)
{
	return (double)t->elements * pred_dtype_bytes[t->dtype];
}

static int new_tensor(struct ks_pred_model *m, const char *name, int space, int dtype,
		      const int64_t *shape, int ndim, int32_t format, int parent)
{
	struct pred_tensor *t;
	int64_t elements = 1;

	if (m->nt >= INT32_MAX - 1)
		return pred_fail(m, -E2BIG, "too many tensors");
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 1 || shape[i] > KS_PRED_MAX_ELEMENTS)
			return pred_fail(m, -EINVAL, "tensor %s: dimension %d is %lld; a "
					 "dimension is from 1 to %lld", name, i,
					 (long long)shape[i], (long long)KS_PRED_MAX_ELEMENTS);
		if (elements > KS_PRED_MAX_ELEMENTS / shape[i])
			return pred_fail(m, -EOVERFLOW, "tensor %s: its shape has more than "
					 "%lld elements", name, (long long)KS_PRED_MAX_ELEMENTS);
		elements *= shape[i];
	}
	if (!pred_grow((void **)&m->t, &m->capt, m->nt + 1, sizeof(*m->t)))
		return pred_fail(m, -ENOMEM, "out of memory");
	t = &m->t[m->nt];
	memset(t, 0, sizeof(*t));
	t->name = str_add(m, name);
	if (t->name < 0)
		return pred_fail(m, -ENOMEM, "out of memory");
	t->space = (int16_t)space;
	t->dtype = (uint8_t)dtype;
	t->ndim = (uint8_t)ndim;
	t->format = format;
	t->parent = parent;
	t->piece_of = PRED_NONE;
	t->splits = PRED_NONE;
	t->writers = PRED_NONE;
	t->core = -1;
	memcpy(t->shape, shape, (size_t)ndim * sizeof(*shape));
	t->elements = elements;
	return (int)m->nt++;
}

int ks_pred_tensor(struct ks_pred_model *m, const char *name, const char *space,
		   const char *dtype, const int64_t *shape, int ndim, const char *format)
{
	char auto_name[32];
	int sp, dt, rc;
	int32_t fmt;

	if ((rc = check_ready_to_add(m)))
		return rc;
	if (!name) {
		snprintf(auto_name, sizeof(auto_name), "t%zu", m->nt);
		name = auto_name;
	}
	if (!pred_name_ok(name))
		return pred_fail(m, -EINVAL, "the tensor name \"%.80s\" is not valid: a name "
				 "is 1 to %d of A-Z a-z 0-9 _ . -", name, KS_PRED_MAX_NAME);
	sp = space ? pred_chip_space(&m->chip, space) : -1;
	if (sp < 0) {
		char list[1024] = "";

		for (size_t i = 0; i < m->chip.nspaces; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", m->chip.spaces[i].name);
		return pred_fail(m, -EINVAL, "tensor %s: the memory space \"%.64s\" is not "
				 "one of chip %s's: %s", name, space ? space : "(none)",
				 m->chip.name, list);
	}
	dt = dtype ? pred_dtype_find(dtype) : -1;
	if (dt < 0)
		return pred_fail(m, -EINVAL, "tensor %s: the data type \"%.64s\" is not one of "
				 "fp16, bf16, fp32, fp64, int8, uint8, int16, int32, int64",
				 name, dtype ? dtype : "(none)");
	if (!shape || ndim < 1 || ndim > KS_PRED_MAX_DIMS)
		return pred_fail(m, -EINVAL, "tensor %s: a shape has 1 to %d dimensions, "
				 "not %d", name, KS_PRED_MAX_DIMS, ndim);
	if (format && !pred_name_ok(format))
		return pred_fail(m, -EINVAL, "tensor %s: the format \"%.64s\" is not a name "
				 "(ND, NZ, ...)", name, format);
	fmt = loc_intern(m, format ? format : "ND");
	if (fmt < 0)
		return pred_fail(m, -ENOMEM, "out of memory");
	rc = new_tensor(m, name, sp, dt, shape, ndim, fmt, PRED_NONE);
	/* Made while a core is selected: a per-core buffer is that core's. */
	if (rc >= 0 && m->core >= 0 && !m->chip.spaces[sp].shared)
		m->t[rc].core = (int8_t)m->core;
	/* A buffer cannot hold more than it has: a model that says so would
	 * be timed as if it could. */
	if (rc >= 0 && m->chip.spaces[sp].bytes &&
	    tensor_bytes(&m->t[rc]) > (double)m->chip.spaces[sp].bytes)
		return pred_fail(m, -EINVAL, "tensor %s (%.0f bytes) is larger than %s "
				 "(%llu bytes on chip %s); accepted: at most the space's size",
				 name, tensor_bytes(&m->t[rc]), m->chip.spaces[sp].name,
				 (unsigned long long)m->chip.spaces[sp].bytes, m->chip.name);
	return rc;
}

static int check_tensor(struct ks_pred_model *m, int id, const char *what)
{
	if (id < 0 || (size_t)id >= m->nt)
		return pred_fail(m, -EINVAL, "%s: there is no tensor %d (the model has %zu)",
				 what, id, m->nt);
	return 0;
}

int ks_pred_split(struct ks_pred_model *m, int tensor, int axis, int parts, int *ids)
{
	struct pred_tensor p;
	int64_t extent, chunk;
	char name[KS_PRED_MAX_NAME + 24];
	int first = -1, rc;
	size_t nt0 = m->nt, ns0 = m->str.len;

	if ((rc = check_ready_to_add(m)) || (rc = check_tensor(m, tensor, "split")))
		return rc;
	p = m->t[tensor];
	if (axis < 0 || axis >= p.ndim)
		return pred_fail(m, -EINVAL, "split %s: axis %d is not one of its %d axes "
				 "(0 to %d)", pred_tensor_name(m, tensor), axis, p.ndim,
				 p.ndim - 1);
	extent = p.shape[axis];
	if (parts < 1 || parts > extent)
		return pred_fail(m, -EINVAL, "split %s: %d parts; axis %d has %lld elements, "
				 "so from 1 to %lld parts are accepted",
				 pred_tensor_name(m, tensor), parts, axis, (long long)extent,
				 (long long)extent);
	chunk = (extent + parts - 1) / parts;
	if ((parts - 1) * chunk >= extent)
		return pred_fail(m, -EINVAL, "split %s: %d parts of %lld leave the last one "
				 "empty (axis %d has %lld elements)", pred_tensor_name(m, tensor),
				 parts, (long long)chunk, axis, (long long)extent);
	if (m->nsplits >= INT32_MAX - 1 ||
	    !pred_grow((void **)&m->splits, &m->capsplits, m->nsplits + 1, sizeof(*m->splits)))
		return pred_fail(m, -ENOMEM, "out of memory");
	for (int i = 0; i < parts; i++) {
		int64_t shape[KS_PRED_MAX_DIMS];

		memcpy(shape, p.shape, sizeof(shape));
		shape[axis] = i == parts - 1 ? extent - chunk * (parts - 1) : chunk;
		snprintf(name, sizeof(name), "%s[%d]", pred_tensor_name(m, tensor), i);
		rc = new_tensor(m, name, p.space, p.dtype, shape, p.ndim, p.format, tensor);
		if (rc < 0) {
			m->nt = nt0;
			m->str.len = ns0;
			return rc;
		}
		m->t[rc].piece_of = (int32_t)m->nsplits;
		if (first < 0)
			first = rc;
		if (ids)
			ids[i] = rc;
	}
	/* Only now, so that a failed split leaves no record behind. */
	m->splits[m->nsplits] = (struct pred_split){
		.parent = tensor, .first = first, .parts = parts, .axis = axis,
		.chunk = chunk, .next = m->t[tensor].splits,
	};
	m->t[tensor].splits = (int32_t)m->nsplits++;
	return first;
}

/* ------------------------------------------------------------------ */
/* Instructions                                                        */
/* ------------------------------------------------------------------ */

const char *pred_op_name(const struct ks_pred_model *m, int32_t op)
{
	if (op == OP_LOAD)
		return "load";
	if (op == OP_SCALAR)
		return "scalar";
	if (op == OP_SET_FLAG)
		return "set_flag";
	if (op == OP_WAIT_FLAG)
		return "wait_flag";
	return m->chip.instr[op - OP_CHIP].name;
}

const char *pred_instr_desc(const struct ks_pred_model *m, int id, char *buf, size_t size)
{
	const struct pred_instr *in = &m->in[id];

	if (in->loc >= 0)
		snprintf(buf, size, "#%d %s (%s)", id, pred_op_name(m, in->op),
			 pred_str(m, in->loc));
	else
		snprintf(buf, size, "#%d %s", id, pred_op_name(m, in->op));
	return buf;
}

/* ------------------------------------------------------------------ */
/* Cores                                                               */
/* ------------------------------------------------------------------ */

static void core_pipes(const struct ks_pred_model *m, int core, char *buf, size_t size)
{
	const struct pred_chip *c = &m->chip;

	*buf = '\0';
	for (size_t p = 0; p < c->nbase; p++)
		if (c->cores[core].pipe[p] >= 0)
			snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", *buf ? ", " : "",
				 c->base[p]);
}

static int root_of(const struct ks_pred_model *m, int id)
{
	while (m->t[id].parent != PRED_NONE)
		id = m->t[id].parent;
	return id;
}

/* With cores: *pipe (one of the file's pipes) becomes the current core's
 * copy of it, and each operand in a per-core space must be the current
 * core's (a tensor no core has used yet becomes its, once the instruction
 * is accepted: a failed call changes nothing). */
static int core_checks(struct ks_pred_model *m, int32_t op, int *pipe, const int *in,
		       int nin, const int *out, int nout)
{
	const struct pred_chip *c = &m->chip;
	const struct pred_core *co;
	char list[PRED_MAX_PIPES * (KS_PRED_MAX_NAME + 2)];

	if (m->core < 0)
		return pred_fail(m, -EINVAL, "%s: the model issues its instructions to cores, "
				 "but none is selected (core NAME; chip %s has %s%s)",
				 pred_op_name(m, op), c->name, c->cores[0].name,
				 c->ncores > 1 ? " and others" : "");
	co = &c->cores[m->core];
	if (co->pipe[*pipe] < 0) {
		core_pipes(m, m->core, list, sizeof(list));
		return pred_fail(m, -EINVAL, "%s: core %s has no %s pipe; its pipes: %s",
				 pred_op_name(m, op), co->name, c->base[*pipe], list);
	}
	for (int i = 0; i < nin + nout; i++) {
		int id = i < nin ? in[i] : out[i - nin], r = root_of(m, id);
		int sp = m->t[id].space, owner = m->t[r].core;

		if (c->spaces[sp].shared)
			continue;
		if (!(co->spaces & (1u << sp)))
			return pred_fail(m, -EINVAL, "%s: %s is in %s, which core %s does not "
					 "have", pred_op_name(m, op), pred_tensor_name(m, id),
					 c->spaces[sp].name, co->name);
		if (owner >= 0 && owner != m->core)
			return pred_fail(m, -EINVAL, "%s: %s is in %s's %s, but this instruction "
					 "is issued to core %s; %s is per core: pass data between "
					 "cores through a shared space (GM)", pred_op_name(m, op),
					 pred_tensor_name(m, id), c->cores[owner].name,
					 c->spaces[sp].name, co->name, c->spaces[sp].name);
	}
	for (int i = 0; i < nin + nout; i++) {
		int id = i < nin ? in[i] : out[i - nin], r = root_of(m, id);

		if (!c->spaces[m->t[id].space].shared && m->t[r].core < 0)
			m->t[r].core = (int8_t)m->core;
	}
	*pipe = co->pipe[*pipe];
	return 0;
}

int ks_pred_set_core(struct ks_pred_model *m, const char *name)
{
	struct pred_chip *c = &m->chip;
	char list[PRED_MAX_CORES * (KS_PRED_MAX_NAME + 2)] = "";
	int k, rc;

	if ((rc = check_ready_to_add(m)))
		return rc;
	if (!name) {
		m->core = -1;
		return 0;
	}
	if (!c->ncores)
		return pred_fail(m, -EINVAL, "core %.64s: chip %s describes no cores (its file "
				 "has no \"cores\"); its pipes are those of one core", name,
				 c->name);
	k = pred_chip_core(c, name);
	if (k < 0) {
		for (size_t i = 0; i < c->ncores; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", c->cores[i].name);
		return pred_fail(m, -EINVAL, "core \"%.64s\" is not one of chip %s's: %s", name,
				 c->name, list);
	}
	if (!m->cores_on) {
		if (m->ni)
			return pred_fail(m, -EINVAL, "core %s: %zu instructions were issued "
					 "before it to the chip's pipes as one core; a model "
					 "issues all of its instructions to cores or none",
					 c->cores[k].name, m->ni);
		/* From now on the scheduler and the outputs see the cores'
		 * pipes; paths and instructions keep naming the file's. */
		memcpy(c->pipes, c->cpipes, sizeof(c->pipes));
		c->npipes = c->ncpipes;
		m->cores_on = true;
	}
	m->core = k;
	return 0;
}

/* Adds an instruction whose operands and cost are checked. */
static int add_instr(struct ks_pred_model *m, int32_t op, int pipe, const int *in, int nin,
		     const int *out, int nout, double cost, double bytes, double ops,
		     int32_t path)
{
	struct pred_instr *x;
	size_t id = m->ni;

	if (m->ni >= KS_PRED_MAX_INSTRUCTIONS)
		return pred_fail(m, -E2BIG, "the model has %d instructions, the most "
				 "accepted", KS_PRED_MAX_INSTRUCTIONS);
	if (!(cost >= 0) || !isfinite(cost))
		return pred_fail(m, -ERANGE, "%s: its cost is not a finite number of cycles",
				 pred_op_name(m, op));
	if (m->cores_on && op != OP_SET_FLAG && op != OP_WAIT_FLAG) {
		int rc = core_checks(m, op, &pipe, in, nin, out, nout);

		if (rc)
			return rc;
	}
	if (!pred_grow((void **)&m->in, &m->capi, m->ni + 1, sizeof(*m->in)))
		return pred_fail(m, -ENOMEM, "out of memory");
	if (m->nops + (size_t)(nin + nout) > m->capops) {
		size_t cap = m->capops;

		if (!pred_grow((void **)&m->operands, &cap, m->nops + (size_t)(nin + nout),
			  sizeof(*m->operands)))
			return pred_fail(m, -ENOMEM, "out of memory");
		m->capops = cap;
	}
	if (m->nw + (size_t)nout > m->capw) {
		size_t cap = m->capw;

		if (!pred_grow((void **)&m->wid, &cap, m->nw + (size_t)nout, sizeof(int32_t)) ||
		    !pred_grow((void **)&m->wnext, &m->capw, m->nw + (size_t)nout, sizeof(int32_t)))
			return pred_fail(m, -ENOMEM, "out of memory");
	}
	x = &m->in[id];
	x->op = op;
	x->pipe = (int16_t)pipe;
	x->nin = (uint8_t)nin;
	x->nout = (uint8_t)nout;
	x->operand = (uint32_t)m->nops;
	x->loc = m->loc;
	x->path = path;
	x->flag = -1;
	x->cost = cost;
	x->bytes = bytes;
	x->ops = ops;
	x->start = 0;
	x->end = -1;
	for (int i = 0; i < nin; i++)
		m->operands[m->nops++] = in[i];
	for (int i = 0; i < nout; i++) {
		struct pred_tensor *t = &m->t[out[i]];

		m->operands[m->nops++] = out[i];
		m->wid[m->nw] = (int32_t)id;
		m->wnext[m->nw] = t->writers;
		t->writers = (int32_t)m->nw++;
	}
	m->ni++;
	return (int)id;
}

static int check_operands(struct ks_pred_model *m, const char *name, const int *in, int nin,
			  const int *out, int nout)
{
	int rc;

	if (nin < 0 || nout < 0 || nin > KS_PRED_MAX_OPERANDS || nout > KS_PRED_MAX_OPERANDS)
		return pred_fail(m, -EINVAL, "%s: 0 to %d inputs and outputs are accepted, "
				 "not %d and %d", name, KS_PRED_MAX_OPERANDS, nin, nout);
	if ((nin && !in) || (nout && !out))
		return pred_fail(m, -EINVAL, "%s: an operand list is missing", name);
	for (int i = 0; i < nin; i++)
		if ((rc = check_tensor(m, in[i], name)))
			return rc;
	for (int i = 0; i < nout; i++)
		if ((rc = check_tensor(m, out[i], name)))
			return rc;
	return 0;
}

static double operand_bytes(const struct ks_pred_model *m, const int *ids, int n)
{
	double b = 0;

	for (int i = 0; i < n; i++)
		b += tensor_bytes(&m->t[ids[i]]);
	return b;
}

/* The fastest path into space to, for a missing path; -1 if none. */
static int fastest_into(const struct pred_chip *c, int to)
{
	int best = -1;
	double bt = 0;

	for (size_t i = 0; i < c->npaths; i++) {
		double t = c->paths[i].c.peak > 0 ? c->paths[i].c.peak : c->paths[i].c.largest;

		if (c->paths[i].to == to && t > bt) {
			bt = t;
			best = (int)i;
		}
	}
	return best;
}

int ks_pred_load(struct ks_pred_model *m, int dst, int src)
{
	const struct pred_chip *c = &m->chip;
	const struct pred_tensor *d, *s;
	const struct pred_path *p = NULL;
	const struct pred_curve *curve;
	double bytes, tput;
	int rc, pi = -1, conv, in[1] = { src }, out[1] = { dst };

	if ((rc = check_ready_to_add(m)) || (rc = check_operands(m, "load", in, 1, out, 1)))
		return rc;
	d = &m->t[dst];
	s = &m->t[src];
	if (d->elements != s->elements) {
		char a[128], b[128];

		shape_text(s, a, sizeof(a));
		shape_text(d, b, sizeof(b));
		return pred_fail(m, -EINVAL, "shape mismatch: load %s %s into %s %s: the two "
				 "must have as many elements", pred_tensor_name(m, src), a,
				 pred_tensor_name(m, dst), b);
	}
	if (d->dtype != s->dtype)
		return pred_fail(m, -EINVAL, "load %s (%s) into %s (%s): the data types differ; "
				 "a conversion is vconv's work", pred_tensor_name(m, src),
				 pred_dtype_names[s->dtype], pred_tensor_name(m, dst),
				 pred_dtype_names[d->dtype]);
	for (size_t i = 0; i < c->npaths; i++)
		if (c->paths[i].from == s->space && c->paths[i].to == d->space)
			pi = (int)i;
	if (pi < 0) {
		pi = fastest_into(c, d->space);
		if (pi < 0)
			return pred_fail(m, -EINVAL, "load %s into %s: chip %s has no path from "
					 "%s to %s, nor any into %s", pred_tensor_name(m, src),
					 pred_tensor_name(m, dst), c->name,
					 c->spaces[s->space].name, c->spaces[d->space].name,
					 c->spaces[d->space].name);
		p = &c->paths[pi];
		pred_warn(m, "chip %s has no path from %s to %s: such loads use %s->%s's peak "
			  "(%g bytes/cycle) on %s", c->name, c->spaces[s->space].name,
			  c->spaces[d->space].name, c->spaces[p->from].name,
			  c->spaces[p->to].name, p->c.peak > 0 ? p->c.peak : p->c.largest,
			  c->base[p->pipe]);
		bytes = tensor_bytes(s);
		tput = p->c.peak > 0 ? p->c.peak : p->c.largest;
		return add_instr(m, OP_LOAD, p->pipe, in, 1, out, 1, bytes / tput, 2 * bytes, 0,
				 -1);
	}
	p = &c->paths[pi];
	curve = &p->c;
	conv = 0;
	if (s->format != d->format) {
		const char *sf = pred_str(m, s->format), *df = pred_str(m, d->format);
		size_t j;

		for (j = 0; j < p->nconv; j++)
			if (strcasecmp(p->conv[j].from, sf) == 0 && strcasecmp(p->conv[j].to, df) == 0)
				break;
		if (j < p->nconv) {
			curve = &p->conv[j].c;
			conv = (int)j + 1;
		} else {
			pred_warn(m, "chip %s has no %s->%s conversion table on %s->%s: those "
				  "loads use the plain table", c->name, sf, df,
				  c->spaces[p->from].name, c->spaces[p->to].name);
		}
	}
	bytes = tensor_bytes(s);
	if (p->footprint) /* costed when scheduled: the footprint is known then */
		return add_instr(m, OP_LOAD, p->pipe, in, 1, out, 1, 0, 2 * bytes, 0,
				 pi * PRED_PATH_STRIDE + conv);
	tput = pred_curve_at(curve, bytes);
	return add_instr(m, OP_LOAD, p->pipe, in, 1, out, 1, bytes / tput, 2 * bytes, 0, -1);
}

static int find_instr(const struct ks_pred_model *m, const char *name)
{
	for (size_t i = 0; i < m->chip.ninstr; i++)
		if (strcmp(m->chip.instr[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void list_instr(const struct ks_pred_model *m, char *buf, size_t size)
{
	size_t off = (size_t)snprintf(buf, size, "load, scalar");

	for (size_t i = 0; i < m->chip.ninstr && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, ", %s", m->chip.instr[i].name);
}

static bool same_dtype(const struct ks_pred_model *m, const int *ids, int n, int dt)
{
	for (int i = 0; i < n; i++)
		if (m->t[ids[i]].dtype != dt)
			return false;
	return true;
}

/* Checks the operands of a built-in kind; size gets the cost's size. */
static int check_kind(struct ks_pred_model *m, const struct pred_chip_instr *ci,
		      const int *in, int nin, const int *out, int nout, double *size,
		      double *ops)
{
	const char *name = ci->name;
	const struct pred_tensor *a, *b, *c;
	char s1[128], s2[128], s3[128];
	int want_in = 0;

	switch (ci->kind) {
	case K_VBIN: want_in = 2; break;
	case K_VUN: case K_VCONV: case K_VRED: want_in = 1; break;
	case K_MMAD: want_in = 2; break;
	default: break;
	}
	if (ci->kind != K_GENERIC && (nin != want_in || nout != 1))
		return pred_fail(m, -EINVAL, "%s takes %d input%s and 1 output, not %d and %d",
				 name, want_in, want_in > 1 ? "s" : "", nin, nout);
	if (ci->kind == K_GENERIC && nin + nout == 0)
		return pred_fail(m, -EINVAL, "%s needs at least one operand", name);
	switch (ci->kind) {
	case K_VBIN:
	case K_VUN:
		a = &m->t[in[0]];
		if (!same_dtype(m, in, nin, a->dtype) || !same_dtype(m, out, 1, a->dtype))
			return pred_fail(m, -EINVAL, "%s: its operands' data types differ; "
					 "vconv converts", name);
		for (int i = 0; i < nin + 1; i++) {
			const struct pred_tensor *t = i < nin ? &m->t[in[i]] : &m->t[out[0]];

			if (t->elements != a->elements) {
				shape_text(a, s1, sizeof(s1));
				shape_text(t, s2, sizeof(s2));
				return pred_fail(m, -EINVAL, "shape mismatch: %s: %s is %s but %s "
						 "is %s", name, pred_tensor_name(m, in[0]), s1,
						 pred_tensor_name(m, i < nin ? in[i] : out[0]), s2);
			}
		}
		*size = (double)a->elements;
		*ops = *size * ci->ops;
		return 0;
	case K_VCONV:
		a = &m->t[in[0]];
		b = &m->t[out[0]];
		if (a->elements != b->elements) {
			shape_text(a, s1, sizeof(s1));
			shape_text(b, s2, sizeof(s2));
			return pred_fail(m, -EINVAL, "shape mismatch: vconv %s %s into %s %s",
					 pred_tensor_name(m, in[0]), s1,
					 pred_tensor_name(m, out[0]), s2);
		}
		*size = (double)a->elements;
		*ops = *size * ci->ops;
		return 0;
	case K_VRED:
		a = &m->t[in[0]];
		b = &m->t[out[0]];
		if (a->dtype != b->dtype)
			return pred_fail(m, -EINVAL, "%s: its operands' data types differ", name);
		if (b->elements * a->shape[a->ndim - 1] != a->elements) {
			shape_text(a, s1, sizeof(s1));
			shape_text(b, s2, sizeof(s2));
			return pred_fail(m, -EINVAL, "shape mismatch: %s reduces %s %s along its "
					 "last axis, so the output has %lld elements, but %s is "
					 "%s", name, pred_tensor_name(m, in[0]), s1,
					 (long long)(a->elements / a->shape[a->ndim - 1]),
					 pred_tensor_name(m, out[0]), s2);
		}
		*size = (double)a->elements;
		*ops = *size * ci->ops;
		return 0;
	case K_MMAD: {
		int64_t mm, kk, nn;

		a = &m->t[in[0]];
		b = &m->t[in[1]];
		c = &m->t[out[0]];
		shape_text(a, s1, sizeof(s1));
		shape_text(b, s2, sizeof(s2));
		shape_text(c, s3, sizeof(s3));
		if (a->ndim != 2 || b->ndim != 2 || c->ndim != 2)
			return pred_fail(m, -EINVAL, "mmad: a, b and c are matrices (2 "
					 "dimensions): %s %s, %s %s, %s %s",
					 pred_tensor_name(m, in[0]), s1, pred_tensor_name(m, in[1]),
					 s2, pred_tensor_name(m, out[0]), s3);
		mm = a->shape[0];
		kk = a->shape[1];
		nn = b->shape[1];
		if (b->shape[0] != kk || c->shape[0] != mm || c->shape[1] != nn)
			return pred_fail(m, -EINVAL, "shape mismatch: mmad multiplies a [m, k] by "
					 "b [k, n] into c [m, n]: %s %s, %s %s, %s %s",
					 pred_tensor_name(m, in[0]), s1, pred_tensor_name(m, in[1]),
					 s2, pred_tensor_name(m, out[0]), s3);
		if (a->dtype != b->dtype)
			return pred_fail(m, -EINVAL, "mmad: a (%s) and b (%s) differ in data type",
					 pred_dtype_names[a->dtype], pred_dtype_names[b->dtype]);
		*size = (double)mm * (double)kk * (double)nn;
		*ops = 2 * *size * ci->ops;
		return 0;
	}
	default:
		*size = (double)(nout ? m->t[out[0]].elements : m->t[in[0]].elements);
		*ops = *size * ci->ops;
		return 0;
	}
}

static int check_spaces(struct ks_pred_model *m, const struct pred_chip_instr *ci,
			const int *in, int nin, const int *out, int nout)
{
	for (int i = 0; i < nin + nout && ci->nspaces; i++) {
		int id = i < nin ? in[i] : out[i - nin];
		int want = ci->nspaces == 3 && i < 3 ? ci->spaces[i] : ci->spaces[0];
		bool ok = m->t[id].space == want;

		if (ci->nspaces != 3)
			for (int j = 0; j < ci->nspaces; j++)
				ok |= m->t[id].space == ci->spaces[j];
		if (!ok) {
			char list[256] = "";

			for (int j = 0; j < ci->nspaces; j++)
				snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
					 j ? ", " : "", m->chip.spaces[ci->spaces[j]].name);
			return pred_fail(m, -EINVAL, "%s: %s is in %s, but on chip %s its "
					 "operands are in %s", ci->name, pred_tensor_name(m, id),
					 m->chip.spaces[m->t[id].space].name, m->chip.name, list);
		}
	}
	return 0;
}

int ks_pred_instr(struct ks_pred_model *m, const char *name, const int *inputs,
		  int ninputs, const int *outputs, int noutputs)
{
	const struct pred_chip_instr *ci;
	double size = 0, ops = 0, cycles, tput;
	int idx, rc, dt;

	if ((rc = check_ready_to_add(m)))
		return rc;
	if (!name)
		return pred_fail(m, -EINVAL, "an instruction needs a name");
	if (strcmp(name, "load") == 0) {
		if (ninputs != 1 || noutputs != 1 || !inputs || !outputs)
			return pred_fail(m, -EINVAL, "load takes 1 input and 1 output, not %d "
					 "and %d", ninputs, noutputs);
		return ks_pred_load(m, outputs[0], inputs[0]);
	}
	if ((rc = check_operands(m, name, inputs, ninputs, outputs, noutputs)))
		return rc;
	idx = find_instr(m, name);
	if (idx < 0) {
		char list[2048];

		list_instr(m, list, sizeof(list));
		if (pred_builtin_kind(name) != K_GENERIC)
			return pred_fail(m, -EINVAL, "chip %s does not run %s; its "
					 "instructions: %s", m->chip.name, name, list);
		return pred_fail(m, -EINVAL, "unknown instruction \"%.64s\"; chip %s has: %s "
				 "(and those registered)", name, m->chip.name, list);
	}
	ci = &m->chip.instr[idx];
	if ((rc = check_kind(m, ci, inputs, ninputs, outputs, noutputs, &size, &ops)) ||
	    (rc = check_spaces(m, ci, inputs, ninputs, outputs, noutputs)))
		return rc;
	dt = ninputs ? m->t[inputs[0]].dtype : m->t[outputs[0]].dtype;
	if (ci->registered && ci->formula) {
		struct ks_expr_var v[12];
		char dn[KS_PRED_MAX_DIMS][4];
		const struct pred_tensor *f = &m->t[ninputs ? inputs[0] : outputs[0]];
		struct ks_err e;
		int nv = 0;

		v[nv++] = (struct ks_expr_var){ "size", size };
		v[nv++] = (struct ks_expr_var){ "bytes", operand_bytes(m, inputs, ninputs) +
						 operand_bytes(m, outputs, noutputs) };
		v[nv++] = (struct ks_expr_var){ "in_bytes", operand_bytes(m, inputs, ninputs) };
		v[nv++] = (struct ks_expr_var){ "out_bytes", operand_bytes(m, outputs, noutputs) };
		for (int d = 0; d < KS_PRED_MAX_DIMS; d++) {
			snprintf(dn[d], sizeof(dn[d]), "d%d", d);
			v[nv++] = (struct ks_expr_var){ dn[d],
				d < f->ndim ? (double)f->shape[d] : 1.0 };
		}
		rc = ks_expr_eval(ci->formula, v, (size_t)nv, &cycles, &e);
		if (rc)
			return pred_fail(m, rc == -ENOENT ? -EINVAL : rc, "%s: its formula \"%s\": "
					 "%s", name, ks_expr_text(ci->formula), e.msg);
	} else {
		const struct pred_curve *cv = ci->registered ? &ci->any : &ci->dt[dt];

		tput = pred_curve_at(cv, size);
		if (!(tput > 0)) {
			char list[256] = "";

			for (int d = 0; d < DT_COUNT; d++)
				if (ci->dt[d].n || ci->dt[d].peak > 0)
					snprintf(list + strlen(list), sizeof(list) - strlen(list),
						 "%s%s", *list ? ", " : "", pred_dtype_names[d]);
			return pred_fail(m, -EINVAL, "chip %s has no cost for %s on %s data; it "
					 "has %s", m->chip.name, name, pred_dtype_names[dt], list);
		}
		cycles = size / tput;
	}
	return add_instr(m, OP_CHIP + idx, ci->pipe, inputs, ninputs, outputs, noutputs,
			 cycles, operand_bytes(m, inputs, ninputs) +
				 operand_bytes(m, outputs, noutputs), ops, -1);
}

int ks_pred_scalar(struct ks_pred_model *m, int64_t count, const int *inputs, int ninputs,
		   const int *outputs, int noutputs)
{
	int rc;

	if ((rc = check_ready_to_add(m)) ||
	    (rc = check_operands(m, "scalar", inputs, ninputs, outputs, noutputs)))
		return rc;
	if (count < 1 || count > (INT64_C(1) << 50))
		return pred_fail(m, -EINVAL, "scalar: %lld operations; from 1 to 2^50 are "
				 "accepted", (long long)count);
	if (m->chip.scalar_pipe < 0)
		return pred_fail(m, -EINVAL, "chip %s does not describe scalar work (its file "
				 "has no \"scalar\")", m->chip.name);
	return add_instr(m, OP_SCALAR, m->chip.scalar_pipe, inputs, ninputs, outputs,
			 noutputs, (double)count * m->chip.scalar_cpo, 0, (double)count, -1);
}

/* A pipe of set_flag/wait_flag: one of the chip's (with cores, a core's,
 * "AIV0.MTE3"), or with cores a plain "MTE3" for the current core's. */
static int flag_pipe(const struct ks_pred_model *m, const char *name)
{
	int p = pred_chip_pipe(&m->chip, name), b;

	if (p >= 0 || !m->cores_on || m->core < 0)
		return p;
	b = pred_chip_base_pipe(&m->chip, name);
	return b >= 0 ? m->chip.cores[m->core].pipe[b] : -1;
}

int pred_flag(struct ks_pred_model *m, bool set, const char *src, const char *dst,
	      int64_t event)
{
	const char *what = set ? "set_flag" : "wait_flag";
	int ps, pd, rc;

	if ((rc = check_ready_to_add(m)))
		return rc;
	ps = src ? flag_pipe(m, src) : -1;
	pd = dst ? flag_pipe(m, dst) : -1;
	if (ps < 0 || pd < 0) {
		char list[PRED_MAX_PIPES * (KS_PRED_MAX_NAME + 2)] = "";

		for (size_t i = 0; i < m->chip.npipes; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", m->chip.pipes[i]);
		return pred_fail(m, -EINVAL, "%s: the pipe \"%.64s\" is not one of chip %s's: %s",
				 what, ps < 0 ? (src ? src : "(none)") : dst, m->chip.name, list);
	}
	if (event < 0 || event > PRED_MAX_EVENT)
		return pred_fail(m, -EINVAL, "%s: the event id %lld is not from 0 to %d", what,
				 (long long)event, PRED_MAX_EVENT);
	/* A set runs on the pipe that signals, a wait on the pipe that waits;
	 * neither takes time of its own. */
	rc = add_instr(m, set ? OP_SET_FLAG : OP_WAIT_FLAG, set ? ps : pd, NULL, 0, NULL, 0, 0, 0,
		       0, -1);
	if (rc >= 0)
		m->in[rc].flag = (int32_t)event * PRED_MAX_PIPES + (set ? pd : ps);
	return rc;
}

int ks_pred_set_flag(struct ks_pred_model *m, const char *src, const char *dst, int event)
{
	return pred_flag(m, true, src, dst, event);
}

int ks_pred_wait_flag(struct ks_pred_model *m, const char *src, const char *dst, int event)
{
	return pred_flag(m, false, src, dst, event);
}

int ks_pred_set_cache_hit_ratio(struct ks_pred_model *m, double ratio)
{
	const struct pred_chip *c = &m->chip;
	char list[PRED_MAX_SPACES * (KS_PRED_MAX_NAME + 2)] = "";
	int rc;

	if ((rc = check_ready_to_add(m)))
		return rc;
	if (!isfinite(ratio) || ratio < 0 || ratio > 1)
		return pred_fail(m, -EINVAL, "cache_hit_ratio: %g is not from 0 to 1 (the "
				 "fraction of reads from a cached space that hit the cache)",
				 ratio);
	for (size_t i = 0; i < c->nspaces; i++)
		if (c->spaces[i].cache_speedup > 0)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 *list ? ", " : "", c->spaces[i].name);
	if (!*list)
		return pred_fail(m, -EINVAL, "cache_hit_ratio: chip %s describes no cache (none "
				 "of its spaces has \"cache\"), so a hit ratio would change "
				 "nothing", c->name);
	m->cache_hit_ratio = ratio;
	m->cache_set = true;
	return 0;
}

int ks_pred_register(struct ks_pred_model *m, const char *name, const char *pipe,
		     const char *formula, const double *sizes, const double *throughputs,
		     size_t n, double ops_per_element)
{
	struct pred_chip *c = &m->chip;
	struct pred_chip_instr *arr, *in;
	struct ks_err e;
	int p, rc;

	if ((rc = check_ready_to_add(m)))
		return rc;
	if (!name || !pred_name_ok(name))
		return pred_fail(m, -EINVAL, "register: the name \"%.64s\" is not valid: 1 to "
				 "%d of A-Z a-z 0-9 _ . -", name ? name : "(none)",
				 KS_PRED_MAX_NAME);
	if (find_instr(m, name) >= 0 || pred_builtin_kind(name) != K_GENERIC)
		return pred_fail(m, -EEXIST, "register: the instruction %s exists already", name);
	p = pipe ? pred_chip_base_pipe(c, pipe) : -1;
	if (p < 0) {
		char list[PRED_MAX_PIPES * (KS_PRED_MAX_NAME + 2)] = "";

		for (size_t i = 0; i < c->nbase; i++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 i ? ", " : "", c->base[i]);
		return pred_fail(m, -EINVAL, "register %s: the pipe \"%.64s\" is not one of "
				 "chip %s's: %s", name, pipe ? pipe : "(none)", c->name, list);
	}
	if (!isfinite(ops_per_element) || ops_per_element < 0 || ops_per_element > 1e6)
		return pred_fail(m, -EINVAL, "register %s: ops per element must be from 0 to "
				 "1e6, not %g", name, ops_per_element);
	if (!formula == !(n && sizes && throughputs))
		return pred_fail(m, -EINVAL, "register %s: give either a formula or a table "
				 "(not both, not neither)", name);
	if (c->ninstr >= 65536)
		return pred_fail(m, -E2BIG, "register %s: too many instructions", name);
	arr = realloc(c->instr, (c->ninstr + 1) * sizeof(*arr));
	if (!arr)
		return pred_fail(m, -ENOMEM, "out of memory");
	c->instr = arr;
	in = &c->instr[c->ninstr];
	memset(in, 0, sizeof(*in));
	snprintf(in->name, sizeof(in->name), "%s", name);
	in->kind = K_GENERIC;
	in->pipe = p;
	in->ops = ops_per_element;
	in->registered = true;
	if (formula) {
		rc = ks_expr_parse(formula, &in->formula, &e);
		if (rc)
			return pred_fail(m, rc, "register %s: the formula \"%.200s\": %s", name,
					 formula, e.msg);
	} else {
		char what[128];

		snprintf(what, sizeof(what), "register %s: the table", name);
		in->any.above = ABOVE_LARGEST;
		rc = pred_curve_set(&in->any, sizes, throughputs, n, what, &e);
		if (rc)
			return pred_fail(m, rc, "%s", e.msg);
	}
	c->ninstr++;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Running and results                                                 */
/* ------------------------------------------------------------------ */

int ks_pred_run(struct ks_pred_model *m, double *cycles)
{
	int rc;

	if (m->ran)
		return pred_fail(m, -EINVAL, "the model was already scheduled");
	rc = pred_schedule(m);
	if (rc)
		return rc;
	m->ran = true;
	if (cycles)
		*cycles = m->total;
	return 0;
}

size_t ks_pred_count(const struct ks_pred_model *m)
{
	return m->ni;
}

int ks_pred_slice(const struct ks_pred_model *m, int id, struct ks_pred_slice *out)
{
	const struct pred_instr *in;

	if (!m->ran || id < 0 || (size_t)id >= m->ni)
		return -EINVAL;
	in = &m->in[id];
	out->name = pred_op_name(m, in->op);
	out->pipe = m->chip.pipes[in->pipe];
	out->start = in->start;
	out->end = in->end;
	out->bytes = in->bytes;
	out->ops = in->ops;
	out->location = pred_str(m, in->loc);
	return 0;
}

int ks_pred_set_outputs(struct ks_pred_model *m, unsigned mask)
{
	if (mask & ~(unsigned)(KS_PRED_OUT_TRACE | KS_PRED_OUT_METRICS))
		return pred_fail(m, -EINVAL, "outputs: %#x has bits other than trace (1) and "
				 "metrics (2)", mask);
	m->outputs_off = ~mask & (KS_PRED_OUT_TRACE | KS_PRED_OUT_METRICS);
	return 0;
}

int ks_pred_write(struct ks_pred_model *m, const char *dir, const char *measured)
{
	static const char *const names[] = {
		"trace.json", "Pipe_statistic.csv", "Instruction_statistic.csv",
		"instruction_time.svg", "visualize_data.bin",
	};
	struct ks_rundir rd;
	struct ks_err e;
	char path[4096];
	int rc;

	if (!m->ran)
		return pred_fail(m, -EINVAL, "schedule the model (ks_pred_run) before writing "
				 "its outputs");
	if (!dir || !*dir)
		return pred_fail(m, -EINVAL, "no output directory was given");
	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, KS_DIR_MODE) && errno != EEXIST)
			return pred_fail(m, -errno, "cannot create %s: %s", path, strerror(errno));
		*p = '/';
	}
	if (mkdir(path, KS_DIR_MODE) && errno != EEXIST)
		return pred_fail(m, -errno, "cannot create %s: %s", path, strerror(errno));
	rd.dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rd.dirfd < 0)
		return pred_fail(m, -errno, "cannot open the directory %s: %s", path,
				 strerror(errno));
	rd.path = path;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (unlinkat(rd.dirfd, names[i], 0) && errno != ENOENT) {
			rc = -errno;
			close(rd.dirfd);
			return pred_fail(m, rc, "cannot replace %s/%s: %s", path, names[i],
					 strerror(-rc));
		}
	rc = pred_write_rundir(m, &rd, measured, &e);
	close(rd.dirfd);
	if (rc)
		return pred_fail(m, rc, "%s", e.msg);
	return 0;
}
