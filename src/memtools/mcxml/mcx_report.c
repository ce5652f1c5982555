/*
 * Memcheck's XML, read by mcx_read.c, turned into the report model of
 * src/memtools/report (mtreport_int.h) and written by its writers:
 * report.txt, report.json and findings.sarif come out as for any memory
 * tool run, with Memcheck's own wording, kinds and auxiliary stacks.
 *
 * This file includes the report library's private header on purpose: the
 * model is the one thing both readers (findings.jsonl, Memcheck's XML)
 * fill, and copying it behind a second API would only add a layer.
 *
 * Each document is one process (memcheck.<pid>.xml), the program first;
 * its errors and leaks carry the process's index.  Memcheck's kinds map to
 * kscope's (docs/memtools.md has the table); an invalid access or free
 * whose block Memcheck says was free'd is a use after free or a double
 * free, as kscope always named them.
 */
#include "mcxml.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mtreport_int.h"

/* ------------------------------------------------------------------ */
/* Kinds                                                               */
/* ------------------------------------------------------------------ */

static bool has(const char *s, const char *what)
{
	return s && strstr(s, what);
}

/* The first auxiliary description, or NULL. */
static const char *aux0(const struct ks_mcx_error *e)
{
	return e->naux ? e->aux[0].what : NULL;
}

static enum ks_mtr_ekind kind_of(const struct ks_mcx_error *e)
{
	static const struct {
		const char *xml;
		enum ks_mtr_ekind kind;
	} plain[] = {
		{ "MismatchedFree", MTR_E_MISMATCHED_FREE },
		{ "UninitCondition", MTR_E_UNINIT_COND },
		{ "UninitValue", MTR_E_UNINIT_VALUE },
		{ "Overlap", MTR_E_OVERLAP },
		{ "FishyValue", MTR_E_FISHY_VALUE },
		{ "ClientCheck", MTR_E_CLIENT_CHECK },
		{ "InvalidJump", MTR_E_INVALID_JUMP },
		{ "InvalidMemPool", MTR_E_INVALID_MEMPOOL },
		{ "Leak_DefinitelyLost", MTR_E_LEAK_DEFINITE },
		{ "Leak_IndirectlyLost", MTR_E_LEAK_INDIRECT },
		{ "Leak_PossiblyLost", MTR_E_LEAK_POSSIBLE },
		{ "Leak_StillReachable", MTR_E_LEAK_REACHABLE },
	};
	const char *k = e->kind ? e->kind : "";
	const char *a = aux0(e);
	size_t alen = a ? strlen(a) : 0;
	/* "... a block of size 10 free'd": a block in the free queue (not
	 * "Address 0x0 is not stack'd, malloc'd or (recently) free'd"). */
	bool freed = has(a, " a block of size ") && alen > 7 && !strcmp(a + alen - 7, " free'd");

	if (!strcmp(k, "InvalidRead"))
		return freed ? MTR_E_USE_AFTER_FREE : MTR_E_INVALID_READ;
	if (!strcmp(k, "InvalidWrite"))
		return freed ? MTR_E_USE_AFTER_FREE : MTR_E_INVALID_WRITE;
	if (!strcmp(k, "InvalidFree"))
		return freed ? MTR_E_DOUBLE_FREE : MTR_E_INVALID_FREE;
	if (!strcmp(k, "SyscallParam"))
		return has(e->what, "unaddressable") ? MTR_E_INVALID_SYSCALL
						     : MTR_E_UNINIT_SYSCALL;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (!strcmp(k, plain[i].xml))
			return plain[i].kind;
	return MTR_E_OTHER;
}

const char *ks_mcx_kind_name(const struct ks_mcx_error *e)
{
	enum ks_mtr_ekind k = kind_of(e);

	return k == MTR_E_OTHER ? NULL : ks_mtr_ekind_names[k];
}

static unsigned leak_bit(enum ks_mtr_ekind k)
{
	switch (k) {
	case MTR_E_LEAK_INDIRECT: return 1u << MCX_LEAK_INDIRECT;
	case MTR_E_LEAK_POSSIBLE: return 1u << MCX_LEAK_POSSIBLE;
	case MTR_E_LEAK_REACHABLE: return 1u << MCX_LEAK_REACHABLE;
	default: return 1u << MCX_LEAK_DEFINITE;
	}
}

/* ------------------------------------------------------------------ */
/* Memcheck's sentences                                                */
/* ------------------------------------------------------------------ */

/* A number Memcheck may write with thousands separators ("1,048,576");
 * *p is moved past it.  False when there is no digit. */
static bool read_num(const char **p, uint64_t *v)
{
	const char *s = *p;
	bool any = false;

	*v = 0;
	for (; (*s >= '0' && *s <= '9') || (*s == ',' && any && s[1] >= '0' && s[1] <= '9');
	     s++) {
		if (*s == ',')
			continue;
		*v = *v * 10 + (uint64_t)(*s - '0');
		any = true;
	}
	*p = s;
	return any;
}

/* "Invalid read of size 4": the size. */
static void parse_size(struct ks_mtr_error *e, const char *what)
{
	const char *p = what ? strstr(what, " of size ") : NULL;

	if (p) {
		p += 9;
		e->has_size = read_num(&p, &e->size);
	}
}

/* "Syscall param write(buf) points to ...": the call and its parameter. */
static int parse_syscall(struct ks_mtr_run *r, struct ks_mtr_error *e, const char *what)
{
	static const char prefix[] = "Syscall param ";
	const char *s, *open, *close;
	char buf[256];

	if (!what || strncmp(what, prefix, sizeof(prefix) - 1))
		return 0;
	s = what + sizeof(prefix) - 1;
	open = strchr(s, '(');
	close = open ? strchr(open, ')') : NULL;
	if (!close || (size_t)(close - s) >= sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%.*s", (int)(open - s), s);
	e->syscall = ks_mtr_arena_strdup(&r->arena, buf);
	snprintf(buf, sizeof(buf), "%.*s", (int)(close - open - 1), open + 1);
	e->param = ks_mtr_arena_strdup(&r->arena, buf);
	return e->syscall && e->param ? 0 : -ENOMEM;
}

/* "Address 0x4a43041 is 1 bytes inside a block of size 10 free'd" (and
 * "before", "after"): the address and the block. */
static void parse_address(struct ks_mtr_error *e, const char *aux)
{
	const char *p;
	uint64_t n, size;
	char *end;

	if (!aux || strncmp(aux, "Address 0x", 10))
		return;
	e->addr = strtoull(aux + 8, &end, 16);
	e->has_addr = true;
	p = end;
	if (strncmp(p, " is ", 4))
		return;
	p += 4;
	if (!read_num(&p, &n))
		return;
	if (!strncmp(p, " bytes inside a block of size ", 30)) {
		p += 30;
		e->block.offset = (long long)n;
	} else if (!strncmp(p, " bytes after a block of size ", 29)) {
		p += 29;
		e->block.offset = -1; /* set below, once the size is known */
	} else if (!strncmp(p, " bytes before a block of size ", 30)) {
		p += 30;
		e->block.offset = -(long long)n;
	} else {
		return;
	}
	if (!read_num(&p, &size))
		return;
	if (e->block.offset == -1)
		e->block.offset = (long long)(size + n);
	e->block.size = size;
	e->block.addr = e->addr - (uint64_t)e->block.offset;
	e->block.freed = !strcmp(p, " free'd");
	e->has_block = e->block.freed || !strcmp(p, " alloc'd");
}

/* ------------------------------------------------------------------ */
/* Building the model                                                  */
/* ------------------------------------------------------------------ */

static const char *sdup(struct ks_mtr_run *r, const char *s, int *rc)
{
	char *d;

	if (!s)
		return NULL;
	d = ks_mtr_arena_strdup(&r->arena, s);
	if (!d)
		*rc = -ENOMEM;
	return d;
}

/* Whether a frame is libkscope-mcheap.so's (kscope memcheck --heap-map's
 * allocation wrappers), which no report shows: with them dropped, a
 * stack reads as it would without the option. */
static bool kscope_frame(const struct ks_mcx_frame *f)
{
	static const char lib[] = "libkscope-mcheap.so";
	size_t n = f->obj ? strlen(f->obj) : 0;

	return n >= sizeof(lib) - 1 && !strcmp(f->obj + n - (sizeof(lib) - 1), lib) &&
	       (n == sizeof(lib) - 1 || f->obj[n - sizeof(lib)] == '/');
}

/* Adds a copy of s as a stack of r; *idx is its index.  An empty stack
 * gets one frame of ip 0 (the model's stacks have at least one).  Frames
 * of kscope's wrappers are left out, and then all after the first
 * o->max_frames (0: all). */
static int add_stack(struct ks_mtr_run *r, const struct ks_mcx_stack *s, uint32_t *idx,
		     const struct ks_mcx_report_opts *o)
{
	struct ks_mtr_stack *st;
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < s->n; i++)
		n += !kscope_frame(&s->frames[i]);
	if (o->max_frames && n > o->max_frames)
		n = o->max_frames;
	if (!n)
		n = 1;
	if (r->nstacks >= UINT32_MAX - 1 || n > UINT32_MAX)
		return -E2BIG;
	st = ks_mtr_vec_push(&r->stacks, &r->nstacks, &r->cap_stacks, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->id = (long long)r->nstacks - 1;
	st->nframes = (uint32_t)n;
	st->frames = ks_mtr_arena_alloc(&r->arena, n * sizeof(*st->frames));
	if (!st->frames)
		return -ENOMEM;
	memset(st->frames, 0, n * sizeof(*st->frames));
	for (size_t i = 0, j = 0; i < s->n && j < n; i++) {
		const struct ks_mcx_frame *f = &s->frames[i];
		struct ks_mtr_frame *t = &st->frames[j];

		if (kscope_frame(f))
			continue;
		j++;
		t->ip = f->ip;
		t->fn = sdup(r, f->fn, &rc);
		t->obj = sdup(r, f->obj, &rc);
		t->file = sdup(r, f->file, &rc);
		t->dir = sdup(r, f->dir, &rc);
		t->line = f->line;
	}
	*idx = (uint32_t)(r->nstacks - 1);
	return rc;
}

/* Memcheck's leak sentence without its " in loss record 1 of 2" (the
 * writers number the records they show). */
static const char *leak_what(struct ks_mtr_run *r, const char *what, int *rc)
{
	const char *cut = what ? strstr(what, " in loss record ") : NULL;
	char *d;

	if (!cut)
		return sdup(r, what, rc);
	d = ks_mtr_arena_alloc(&r->arena, (size_t)(cut - what) + 1);
	if (!d) {
		*rc = -ENOMEM;
		return NULL;
	}
	memcpy(d, what, (size_t)(cut - what));
	d[cut - what] = '\0';
	return d;
}

static int add_leak(struct ks_mtr_run *r, const struct ks_mcx_error *x,
		    enum ks_mtr_ekind k, uint32_t proc, const struct ks_mcx_report_opts *o)
{
	struct ks_mtr_leak *l = ks_mtr_vec_push(&r->leaks, &r->nleaks, &r->cap_leaks,
						sizeof(*l));
	int rc = 0;

	if (!l)
		return -ENOMEM;
	l->kind = k;
	l->proc = proc;
	l->bytes = x->leaked_bytes;
	l->blocks = x->leaked_blocks;
	l->what = leak_what(r, x->what, &rc);
	l->not_error = !(o->leak_error_kinds & leak_bit(k));
	if (rc)
		return rc;
	return add_stack(r, &x->stack, &l->stack, o);
}

/* The heap map's answer for an address Memcheck related to no block, or
 * the hint to ask it (near NULL: not asked). */
static void add_heap_map(struct ks_mtr_run *r, struct ks_mtr_error *e,
			 const struct ks_mcx_error *x, const struct ks_mcx_near *near,
			 const struct ks_mcx_report_opts *o, int *rc)
{
	static const enum ks_mtr_hm hm[] = {
		[MCX_NEAR_NOT_ASKED] = MTR_HM_NONE, [MCX_NEAR_FOUND] = MTR_HM_FOUND,
		[MCX_NEAR_NOTHING] = MTR_HM_NOTHING, [MCX_NEAR_UNKNOWN] = MTR_HM_UNKNOWN,
	};
	const struct ks_mcx_block *b[2];
	struct ks_mtr_near *t[2] = { &e->hm_below, &e->hm_above };
	uint64_t addr;

	if (!ks_mcx_error_unrelated(x, &addr))
		return;
	if (!o->heap_map) {
		e->hm = o->heap_map_hint ? MTR_HM_HINT : MTR_HM_NONE;
		return;
	}
	if (!near)
		return;
	e->hm = hm[near->status];
	if (near->status == MCX_NEAR_UNKNOWN)
		e->hm_why = sdup(r, near->why, rc);
	b[0] = &near->below;
	b[1] = &near->above;
	for (int i = 0; i < 2; i++) {
		if (!b[i]->present)
			continue;
		t[i]->present = true;
		t[i]->addr = b[i]->addr;
		t[i]->size = b[i]->size;
		t[i]->alloc_no = b[i]->alloc_no;
		t[i]->fn = ks_mcx_heapmap_fn_name(b[i]->fn);
	}
}

static int add_error(struct ks_mtr_run *r, const struct ks_mcx_error *x,
		     enum ks_mtr_ekind k, uint32_t proc, const struct ks_mcx_near *near,
		     const struct ks_mcx_report_opts *o)
{
	struct ks_mtr_error *e = ks_mtr_vec_push(&r->errors, &r->nerrors, &r->cap_errors,
						 sizeof(*e));
	int rc = 0;

	if (!e)
		return -ENOMEM;
	e->kind = k;
	e->proc = proc;
	e->tid = x->tid;
	e->count = x->count ? x->count : 1;
	e->write = !strcmp(x->kind ? x->kind : "", "InvalidWrite");
	e->what = sdup(r, x->what, &rc);
	e->xml_kind = sdup(r, x->kind ? x->kind : "Unknown", &rc);
	e->block.alloc_stack = e->block.free_stack = MTR_NONE;
	if (rc || (rc = add_stack(r, &x->stack, &e->stack, o)))
		return rc;
	parse_size(e, x->what);
	if ((rc = parse_syscall(r, e, x->what)))
		return rc;
	parse_address(e, aux0(x));
	add_heap_map(r, e, x, near, o, &rc);
	if (rc)
		return rc;
	if (x->naux) {
		e->aux = ks_mtr_arena_alloc(&r->arena, x->naux * sizeof(*e->aux));
		if (!e->aux)
			return -ENOMEM;
		e->naux = (uint32_t)x->naux;
	}
	for (size_t i = 0; i < x->naux; i++) {
		const struct ks_mcx_aux *a = &x->aux[i];

		e->aux[i].what = sdup(r, a->what, &rc);
		e->aux[i].stack = MTR_NONE;
		if (rc || (a->stack.n && (rc = add_stack(r, &a->stack, &e->aux[i].stack, o))))
			return rc;
	}
	/* The block's stacks, for the writers that show a block: the
	 * first auxiliary stack is the free stack of a freed block, the
	 * allocation stack of a live one; "Block was alloc'd at" names the
	 * allocation stack of a freed one. */
	if (e->has_block) {
		if (x->naux && e->aux[0].stack != MTR_NONE) {
			if (e->block.freed)
				e->block.free_stack = e->aux[0].stack;
			else
				e->block.alloc_stack = e->aux[0].stack;
		}
		for (size_t i = 1; e->block.freed && i < x->naux; i++)
			if (has(e->aux[i].what, "alloc'd") && e->aux[i].stack != MTR_NONE) {
				e->block.alloc_stack = e->aux[i].stack;
				break;
			}
		if (e->block.alloc_stack == MTR_NONE) {
			/* Memcheck gave no allocation stack (a block of a
			 * client request's pool): no block then, its
			 * sentence stays in aux. */
			e->has_block = false;
			e->block.free_stack = MTR_NONE;
		}
	}
	return 0;
}

/* The suppressions that matched, as the model's one reason:
 * "Valgrind's suppressions: name (3), name (1)". */
static int add_suppressed(struct ks_mtr_run *r, const struct ks_mcx_doc *d)
{
	char buf[512];
	size_t n = 0;

	for (size_t i = 0; i < d->nsupps; i++) {
		const struct ks_mcx_supp *s = &d->supps[i];

		if (!s->count)
			continue;
		if (!r->suppressed.count && !r->suppressed.reason)
			n = (size_t)snprintf(buf, sizeof(buf), "matched Valgrind's suppressions:");
		if (n < sizeof(buf))
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s %s (%" PRIu64 ")",
					      r->suppressed.count ? "," : "", s->name, s->count);
		r->suppressed.count += s->count;
	}
	if (r->suppressed.count && n && !r->suppressed.reason) {
		r->suppressed.reason = ks_mtr_arena_strdup(&r->arena, buf);
		if (!r->suppressed.reason)
			return -ENOMEM;
	}
	return 0;
}

static int add_proc(struct ks_mtr_run *r, const struct ks_mcx_doc *d,
		    const struct ks_mcx_report_opts *o)
{
	struct ks_mtr_proc *p;
	struct ks_mcx_near *near = NULL;
	uint32_t idx = (uint32_t)r->nprocs;
	/* The image before, when the document before is an earlier image of
	 * the same process (one that exec'd: docs come in image order). */
	uint32_t image = idx && r->procs[idx - 1].start.pid == d->pid &&
					 r->procs[idx - 1].end.exec
				 ? r->procs[idx - 1].image + 1
				 : 0;
	int rc = 0;

	p = ks_mtr_vec_push(&r->procs, &r->nprocs, &r->cap_procs, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->image = image;
	p->start.analysis = MTR_MEMCHECK;
	p->start.pid = d->pid;
	p->start.ppid = d->ppid ? d->ppid : -1;
	p->start.exe = sdup(r, d->exe ? d->exe : "", &rc);
	p->start.argc = d->argc + 1;
	p->start.argv = ks_mtr_arena_alloc(&r->arena, p->start.argc * sizeof(char *));
	if (rc || !p->start.argv)
		return -ENOMEM;
	p->start.argv[0] = p->start.exe;
	for (size_t i = 0; i < d->argc; i++)
		p->start.argv[i + 1] = sdup(r, d->argv[i], &rc);
	p->start.min_write = p->start.pad_smu = p->start.thread_isolation = -1;
	p->parent = MTR_NONE;
	/* How it ended, as far as the XML says; what kscope saw (the
	 * program's wait status) wins. */
	if (d->execed) {
		p->end.present = true;
		p->end.exec = true;
	} else if (d->fatal) {
		p->end.present = true;
		p->end.signaled = true;
		p->end.code = d->signo;
	} else if (d->finished) {
		p->end.present = true;
		p->end.no_code = true;
	}
	for (size_t i = 0; i < o->mtr.nexits; i++) {
		const struct ks_mtr_exit *x = &o->mtr.exits[i];

		if (x->pid != d->pid)
			continue;
		p->end.present = true;
		p->end.no_code = false;
		p->end.signaled = x->signaled;
		p->end.code = x->code;
	}
	p->truncated = !d->finished && !d->execed;
	/* --heap-map: each error's nearest blocks, from the image's log. */
	if (o->heap_map && d->nerrors) {
		struct ks_err err;

		if (!(near = calloc(d->nerrors, sizeof(*near))) ||
		    ks_mcx_heapmap_near(d->heapmap, d, near, &err)) {
			free(near);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; !rc && i < d->nerrors; i++) {
		enum ks_mtr_ekind k = kind_of(&d->errors[i]);

		if (ks_mtr_is_leak(k))
			rc = add_leak(r, &d->errors[i], k, idx, o);
		else
			rc = add_error(r, &d->errors[i], k, idx, near ? &near[i] : NULL, o);
	}
	free(near);
	if (!rc)
		rc = add_suppressed(r, d);
	return rc;
}

/* The model of docs, derived views included. */
static int build(struct ks_mtr_run *r, const struct ks_mcx_doc *docs, size_t ndocs,
		 const struct ks_mcx_report_opts *o, struct ks_err *err)
{
	int rc = 0;

	for (size_t i = 0; !rc && i < ndocs; i++)
		rc = add_proc(r, &docs[i], o);
	if (rc)
		return ks_err_set(err, rc, "%s", rc == -ENOMEM ? "out of memory"
							      : "too many stacks");
	r->started = true;
	ks_mtr_procs_done(r, &o->mtr);
	/* The settings Memcheck ran with, for the reports' headers. */
	r->start.has_redzone = o->has_redzone;
	r->start.redzone = o->redzone;
	r->start.has_freelist = o->has_freelist;
	r->start.freelist_vol = o->freelist_vol;
	if (o->incomplete) {
		r->incomplete = o->incomplete;
		r->truncated = true;
	}
	return ks_mtr_views(r, &o->mtr, err);
}

int ks_mcx_report(const struct ks_mcx_doc *docs, size_t ndocs,
		  const struct ks_mcx_report_opts *o, struct ks_rundir *rd, FILE *text,
		  struct ks_mtr_summary *sum, struct ks_err *err)
{
	struct ks_mtr_run *r = calloc(1, sizeof(*r));
	int rc;

	memset(sum, 0, sizeof(*sum));
	if (!r)
		return ks_err_set(err, -ENOMEM, "out of memory");
	if (!ndocs) {
		rc = ks_err_set(err, -EINVAL, "no Memcheck output to report");
		goto out;
	}
	if ((rc = build(r, docs, ndocs, o, err)))
		goto out;
	/* rd NULL: counting only (the fuzz target) */
	rc = ks_mtr_finish(r, &o->mtr, rd, text, sum, err);
out:
	ks_mtr_run_free(r);
	free(r);
	return rc;
}
