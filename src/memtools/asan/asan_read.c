/*
 * AddressSanitizer's and LeakSanitizer's reports read into the model of
 * Memcheck's XML (asan.h).  A log is read line by line:
 *
 *   ==PID==ERROR: AddressSanitizer: BUG ...     an error begins
 *   READ of size 4 at 0x... thread T0           its access
 *       #0 0x55d0c1b9a1d6  (/path/prog+0x11d6)  frames of the current stack
 *   0x... is located 4 bytes to the right of 16-byte region [...)
 *   allocated by thread T0 here:                a described stack
 *   SUMMARY: AddressSanitizer: BUG ...          the error ends
 *   ==PID==ERROR: LeakSanitizer: detected memory leaks
 *   Direct leak of 400 byte(s) in 1 object(s) allocated from:
 *   ==PID==ABORTING                             ASan stopped the process
 *
 * Lines it does not know (the shadow byte map, hints) are passed over.
 */
#include "asan.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwsym.h"
#include "readfile.h"

/* ------------------------------------------------------------------ */
/* Names of module offsets                                             */
/* ------------------------------------------------------------------ */

/* The modules of ASan's "module+0xoffset" frames, each at address 0. */
struct ks_asan_sym {
	struct ks_dwsym_files files;
};

struct ks_asan_sym *ks_asan_sym_new(void)
{
	return calloc(1, sizeof(struct ks_asan_sym));
}

void ks_asan_sym_free(struct ks_asan_sym *s)
{
	if (!s)
		return;
	ks_dwsym_files_free(&s->files);
	free(s);
}

/* ------------------------------------------------------------------ */
/* The pending report                                                  */
/* ------------------------------------------------------------------ */

enum aux_role { AUX_DESC, AUX_ALLOC, AUX_FREE, AUX_PREV_ALLOC, AUX_OTHER };
enum { TARGET_NONE = -2, TARGET_MAIN = -1 };

struct raw_aux {
	enum aux_role role;
	char *what;
	struct ks_mcx_stack stack;
};

struct ctx {
	struct ks_mcx_doc *d;
	struct ks_asan_info *info;
	const struct ks_asan_read_opts *o;
	int rc;
	/* The report being read. */
	bool active, leak;
	char *headline;              /* after "AddressSanitizer: " */
	char bug[64];                /* from the SUMMARY line */
	int access;                  /* 0 unknown, 1 read, 2 write */
	uint64_t size;
	bool has_size;
	long long tid;
	struct ks_mcx_stack stack;
	struct raw_aux *aux;
	size_t naux;
	/* Where frames go: TARGET_NONE, TARGET_MAIN (the report's or the
	 * leak record's stack), or an index into aux (which moves when it
	 * grows, so no pointer). */
	long target;
	/* The leak record being read (leak reports). */
	bool in_leak, direct;
	uint64_t leak_bytes, leak_blocks;
};

static void pending_clear(struct ctx *c)
{
	free(c->headline);
	c->headline = NULL;
	ks_mcx_stack_free(&c->stack);
	for (size_t i = 0; i < c->naux; i++) {
		free(c->aux[i].what);
		ks_mcx_stack_free(&c->aux[i].stack);
	}
	free(c->aux);
	c->aux = NULL;
	c->naux = 0;
	c->bug[0] = '\0';
	c->access = 0;
	c->has_size = false;
	c->size = 0;
	c->tid = 0;
	c->target = TARGET_NONE;
	c->active = false;
	c->in_leak = false;
}

static void oom(struct ctx *c)
{
	if (!c->rc)
		c->rc = -ENOMEM;
}

static struct ks_mcx_error *error_push(struct ctx *c)
{
	struct ks_mcx_doc *d = c->d;
	struct ks_mcx_error *e;

	if (d->nerrors == d->cap_errors) {
		size_t cap = d->cap_errors ? 2 * d->cap_errors : 16;
		struct ks_mcx_error *v = realloc(d->errors, cap * sizeof(*v));

		if (!v) {
			oom(c);
			return NULL;
		}
		d->errors = v;
		d->cap_errors = cap;
	}
	e = &d->errors[d->nerrors++];
	memset(e, 0, sizeof(*e));
	e->unique = d->nerrors;
	e->count = 1;
	return e;
}

static struct ks_mcx_aux *aux_push(struct ctx *c, struct ks_mcx_error *e)
{
	struct ks_mcx_aux *a = realloc(e->aux, (e->naux + 1) * sizeof(*a));

	if (!a) {
		oom(c);
		return NULL;
	}
	e->aux = a;
	a = &a[e->naux++];
	memset(a, 0, sizeof(*a));
	return a;
}

static struct raw_aux *raw_aux_push(struct ctx *c, enum aux_role role, const char *what)
{
	struct raw_aux *a = realloc(c->aux, (c->naux + 1) * sizeof(*a));

	if (!a) {
		oom(c);
		return NULL;
	}
	c->aux = a;
	a = &a[c->naux++];
	memset(a, 0, sizeof(*a));
	a->role = role;
	if (what && !(a->what = strdup(what)))
		oom(c);
	return a;
}

/* ------------------------------------------------------------------ */
/* Kinds                                                               */
/* ------------------------------------------------------------------ */

static bool among(const char *bug, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(bug, *list))
			return true;
	return false;
}

/* Memcheck's kind for ASan's bug type, or NULL: ASan's own name. */
static const char *memcheck_kind(const struct ctx *c, const char *bug)
{
	static const char *const access[] = {
		"heap-buffer-overflow", "stack-buffer-overflow", "stack-buffer-underflow",
		"global-buffer-overflow", "dynamic-stack-buffer-overflow",
		"stack-use-after-scope", "stack-use-after-return", "use-after-poison",
		"container-overflow", "intra-object-overflow", "heap-use-after-free",
		"unknown-crash", "SEGV", "BUS", NULL
	};
	static const char *const fishy[] = {
		"negative-size-param", "calloc-overflow", "allocation-size-too-big",
		"reallocarray-overflow", "pvalloc-overflow", NULL
	};
	size_t n = strlen(bug);

	if (among(bug, access))
		return c->access == 2 ? "InvalidWrite" : "InvalidRead";
	if (!strcmp(bug, "double-free") || !strcmp(bug, "bad-free"))
		return "InvalidFree";
	if (!strcmp(bug, "alloc-dealloc-mismatch"))
		return "MismatchedFree";
	if (n > 14 && !strcmp(bug + n - 14, "-param-overlap"))
		return "Overlap";
	if (among(bug, fishy))
		return "FishyValue";
	return NULL;
}

static int deadly_signal(const char *bug)
{
	static const struct {
		const char *name;
		int signo;
	} sigs[] = { { "SEGV", SIGSEGV }, { "BUS", SIGBUS }, { "FPE", SIGFPE },
		     { "ILL", SIGILL }, { "ABRT", SIGABRT }, { "TRAP", SIGTRAP } };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcmp(bug, sigs[i].name))
			return sigs[i].signo;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Ending a report                                                     */
/* ------------------------------------------------------------------ */

static void move_stack(struct ks_mcx_stack *to, struct ks_mcx_stack *from)
{
	*to = *from;
	memset(from, 0, sizeof(*from));
}

static struct raw_aux *find_role(struct ctx *c, enum aux_role role)
{
	for (size_t i = 0; i < c->naux; i++)
		if (c->aux[i].role == role)
			return &c->aux[i];
	return NULL;
}

/* "0x602000000020 is located 0 bytes to the right of 16-byte region
 * [0x...,0x...)" (and "to the left of", "inside of", newer runtimes'
 * "after" and "before"): Memcheck's sentence for the block, in out. */
static bool heap_sentence(const char *s, bool freed, char *out, size_t size)
{
	static const struct {
		const char *asan, *mc;
	} rel[] = { { "to the right of", "after" }, { "after", "after" },
		    { "to the left of", "before" }, { "before", "before" },
		    { "inside of", "inside" } };
	unsigned long long addr, n, len;
	const char *p;
	char *end;

	if (!strncmp(s, "Address ", 8))
		s += 8;
	if (strncmp(s, "0x", 2))
		return false;
	addr = strtoull(s, &end, 16);
	if (strncmp(end, " is located ", 12))
		return false;
	p = end + 12;
	n = strtoull(p, &end, 10);
	if (end == p || strncmp(end, " bytes ", 7))
		return false;
	p = end + 7;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		size_t k = strlen(rel[i].asan);

		if (strncmp(p, rel[i].asan, k) || p[k] != ' ')
			continue;
		len = strtoull(p + k + 1, &end, 10);
		if (end == p + k + 1 || strncmp(end, "-byte region ", 13))
			return false;
		snprintf(out, size, "Address 0x%llx is %llu bytes %s a block of size %llu %s",
			 addr, n, rel[i].mc, len, freed ? "free'd" : "alloc'd");
		return true;
	}
	return false;
}

/* The report read so far becomes an error of the document. */
static void finish_error(struct ctx *c)
{
	const char *bug = c->bug[0] ? c->bug : "unknown-crash";
	const char *kind = memcheck_kind(c, bug);
	struct ks_mcx_error *e;
	struct raw_aux *desc = find_role(c, AUX_DESC);
	char buf[1024], sentence[256];
	bool freed = find_role(c, AUX_FREE) != NULL;
	int signo = deadly_signal(bug);

	if (signo && !c->info->signo)
		c->info->signo = signo;
	if (!(e = error_push(c)))
		return;
	e->tid = c->tid;
	e->kind = strdup(kind ? kind : bug);
	if (c->has_size)
		snprintf(buf, sizeof(buf), "%s: %s of size %" PRIu64, bug,
			 c->access == 2 ? "WRITE" : "READ", c->size);
	else if (c->headline && !strncmp(c->headline, bug, strlen(bug)))
		snprintf(buf, sizeof(buf), "%s", c->headline);
	else /* "double-free: attempting double-free on 0x..." */
		snprintf(buf, sizeof(buf), "%s: %s", bug, c->headline ? c->headline : "");
	e->what = strdup(buf);
	if (!e->kind || !e->what)
		oom(c);
	move_stack(&e->stack, &c->stack);
	/* A heap block: Memcheck's sentence and its stacks, the free
	 * stack first for a freed block, then "Block was alloc'd at". */
	if (desc && heap_sentence(desc->what, freed, sentence, sizeof(sentence))) {
		struct raw_aux *st = freed ? find_role(c, AUX_FREE) : find_role(c, AUX_ALLOC);
		struct ks_mcx_aux *a;

		if (!st)
			st = find_role(c, AUX_PREV_ALLOC);
		if (!(a = aux_push(c, e)) || !(a->what = strdup(sentence))) {
			oom(c);
			return;
		}
		if (st)
			move_stack(&a->stack, &st->stack);
		if (freed && (st = find_role(c, AUX_PREV_ALLOC))) {
			if (!(a = aux_push(c, e)) || !(a->what = strdup("Block was alloc'd at"))) {
				oom(c);
				return;
			}
			move_stack(&a->stack, &st->stack);
		}
		/* Said: the description and the block's stacks are not
		 * repeated below (their stacks were moved). */
		for (size_t i = 0; i < c->naux; i++) {
			struct raw_aux *r = &c->aux[i];

			if (r == desc || r->role == AUX_ALLOC || r->role == AUX_FREE ||
			    r->role == AUX_PREV_ALLOC) {
				free(r->what);
				r->what = NULL;
				ks_mcx_stack_free(&r->stack);
			}
		}
	}
	/* Everything else in ASan's words, in its order. */
	for (size_t i = 0; i < c->naux; i++) {
		struct raw_aux *r = &c->aux[i];
		struct ks_mcx_aux *a;

		if (!r->what)
			continue;
		if (!(a = aux_push(c, e)))
			return;
		a->what = r->what;
		r->what = NULL;
		move_stack(&a->stack, &r->stack);
	}
}

/* A leak record read so far becomes a leak of the document, if shown. */
static void finish_leak(struct ctx *c)
{
	unsigned bit = 1u << (c->direct ? MCX_LEAK_DEFINITE : MCX_LEAK_INDIRECT);
	struct ks_mcx_error *e;
	char buf[128];

	c->in_leak = false;
	c->target = TARGET_NONE;
	if (!(c->o->show_leaks & bit)) {
		ks_mcx_stack_free(&c->stack);
		return;
	}
	if (!(e = error_push(c)))
		return;
	e->kind = strdup(c->direct ? "Leak_DefinitelyLost" : "Leak_IndirectlyLost");
	snprintf(buf, sizeof(buf), "%" PRIu64 " bytes in %" PRIu64 " blocks are %s",
		 c->leak_bytes, c->leak_blocks, c->direct ? "definitely lost" : "indirectly lost");
	e->what = strdup(buf);
	e->has_leak = true;
	e->leaked_bytes = c->leak_bytes;
	e->leaked_blocks = c->leak_blocks;
	if (!e->kind || !e->what)
		oom(c);
	move_stack(&e->stack, &c->stack);
}

static void finish(struct ctx *c)
{
	if (c->in_leak)
		finish_leak(c);
	else if (c->active && !c->leak)
		finish_error(c);
	pending_clear(c);
	c->leak = false;
}

/* ------------------------------------------------------------------ */
/* Lines                                                               */
/* ------------------------------------------------------------------ */

/* "==1234==", or "==prog==1234==" (log_exe_name), at s: the pid, and
 * *rest after it; 0 if not there. */
static long long pid_prefix(const char *s, const char **rest)
{
	const char *p;

	if (strncmp(s, "==", 2))
		return 0;
	for (p = s + 2; p && p - s < 512; p = strstr(p, "==") ? strstr(p, "==") + 2 : NULL) {
		const char *q = p;
		long long pid = 0;

		for (; isdigit((unsigned char)*q) && pid < (1LL << 40); q++)
			pid = pid * 10 + (*q - '0');
		if (q != p && !strncmp(q, "==", 2)) {
			*rest = q + 2;
			return pid;
		}
	}
	return 0;
}

/* "thread T12" or "T12)" in s: Memcheck's thread number (T0 is 1). */
static long long thread_of(const char *s)
{
	const char *t = strstr(s, "thread T");

	t = t ? t + 8 : NULL;
	if (!t) {
		/* "(pc 0x... bp 0x... sp 0x... T0)" */
		const char *close = strrchr(s, ')');

		for (t = close; t && t > s && t[-1] != 'T'; t--)
			if (!isdigit((unsigned char)t[-1]))
				return 0;
		if (!t || t == s || t == close)
			return 0;
	}
	if (!isdigit((unsigned char)*t))
		return 0;
	/* ASan's thread numbers are small; a number out of range is no
	 * thread kscope can name. */
	{
		long long n = strtoll(t, NULL, 10);

		return n >= 0 && n < (1LL << 40) ? n + 1 : 0;
	}
}

/* A frame's name as reports show it: ASan's interceptors are the
 * functions the program called ("__interceptor_malloc" is malloc). */
static char *frame_name(const char *raw)
{
	char *n = ks_dwsym_name(raw);

	if (!n)
		return NULL;
	static const char *const pre[] = { "___interceptor_", "__interceptor_" };

	for (size_t i = 0; i < 2; i++) {
		size_t k = strlen(pre[i]);

		if (!strncmp(n, pre[i], k) && n[k]) {
			memmove(n, n + k, strlen(n + k) + 1);
			break;
		}
	}
	return n;
}

static struct ks_mcx_frame *frame_push(struct ctx *c, struct ks_mcx_stack *s)
{
	struct ks_mcx_frame *f = realloc(s->frames, (s->n + 1) * sizeof(*f));

	if (!f) {
		oom(c);
		return NULL;
	}
	s->frames = f;
	f = &f[s->n++];
	memset(f, 0, sizeof(*f));
	return f;
}

/* "/a/b/c.c": dir "/a/b", file "c.c", as Memcheck gives them. */
static void set_file(struct ctx *c, struct ks_mcx_frame *f, const char *path)
{
	const char *slash = strrchr(path, '/');

	if (slash && slash != path) {
		f->dir = strndup(path, (size_t)(slash - path));
		f->file = strdup(slash + 1);
		if (!f->dir)
			oom(c);
	} else {
		f->file = strdup(path);
	}
	if (!f->file)
		oom(c);
}

struct add_ctx {
	struct ctx *c;
	struct ks_mcx_stack *s;
	uint64_t ip;
	const char *obj;
};

static int add_sym_frame(void *ctx, const struct ks_dwsym_frame *d)
{
	struct add_ctx *a = ctx;
	struct ks_mcx_frame *f = frame_push(a->c, a->s);

	if (!f)
		return -ENOMEM;
	f->ip = a->ip;
	if (!(f->obj = strdup(a->obj)))
		oom(a->c);
	if (d->function && !(f->fn = frame_name(d->function)))
		oom(a->c);
	if (d->file && d->line > 0) {
		set_file(a->c, f, d->file);
		f->line = (unsigned long)d->line;
	}
	return a->c->rc;
}

/* "    #3 0x55d0c1b9a1d6  (/path/prog+0x11d6)", or symbolized by ASan
 * "    #3 0x... in main /path/prog.c:7:3" and "    #3 0x... in f (/lib+0x10)". */
static void frame_line(struct ctx *c, const char *s)
{
	struct ks_mcx_stack *st = c->target == TARGET_MAIN ? &c->stack
				  : c->target >= 0   ? &c->aux[c->target].stack
						     : NULL;
	unsigned long long ip;
	const char *p = s, *open, *plus;
	char *end, *in_fn = NULL;

	if (!st)
		return;
	p += strspn(p, " \t");
	if (*p != '#')
		return;
	strtoul(p + 1, &end, 10);
	p = end + strspn(end, " ");
	if (strncmp(p, "0x", 2))
		return;
	ip = strtoull(p, &end, 16);
	p = end + strspn(end, " ");
	if (!strncmp(p, "in ", 3)) {
		const char *fn = p + 3;
		const char *last = strrchr(fn, ' ');

		if (!last) {
			in_fn = strdup(fn);
			p = fn + strlen(fn);
		} else {
			in_fn = strndup(fn, (size_t)(last - fn));
			p = last + 1;
		}
		if (!in_fn) {
			oom(c);
			return;
		}
	}
	open = *p == '(' ? p : NULL;
	plus = open ? strstr(open, "+0x") : NULL;
	if (open && plus && c->o->sym && !in_fn) {
		char *obj = strndup(open + 1, (size_t)(plus - open - 1));
		unsigned long long off = strtoull(plus + 3, NULL, 16);
		struct ks_dwsym_file *m;
		struct add_ctx a = { .c = c, .s = st, .ip = ip, .obj = obj };

		if (!obj) {
			oom(c);
			return;
		}
		m = ks_dwsym_file_get(&c->o->sym->files, obj);
		if (!m)
			oom(c);
		else
			ks_dwsym_frames(&m->mod, off, add_sym_frame, &a);
		free(obj);
		return;
	}
	{
		struct ks_mcx_frame *f = frame_push(c, st);

		if (!f) {
			free(in_fn);
			return;
		}
		f->ip = ip;
		f->fn = in_fn ? frame_name(in_fn) : NULL;
		free(in_fn);
		if (open && plus) {
			f->obj = strndup(open + 1, (size_t)(plus - open - 1));
		} else if (*p && *p != '(') {
			/* "/path/prog.c:7:3" */
			char *path = strdup(p), *colon;

			if (!path) {
				oom(c);
				return;
			}
			for (int k = 0; k < 2 && (colon = strrchr(path, ':')); k++) {
				char *e2;
				unsigned long v = strtoul(colon + 1, &e2, 10);

				if (*e2 || e2 == colon + 1)
					break;
				*colon = '\0';
				f->line = v; /* the line is the first number */
			}
			if (f->line)
				set_file(c, f, path);
			free(path);
		}
	}
}

/* "0x... is located ..." or "Address 0x... is located ...". */
static bool is_description(const char *s)
{
	if (!strncmp(s, "Address ", 8))
		s += 8;
	return !strncmp(s, "0x", 2) && strstr(s, " is located ");
}

static void error_start(struct ctx *c, const char *headline)
{
	const char *sp;
	char *h;

	finish(c);
	c->active = true;
	c->target = TARGET_MAIN;
	/* Without the registers: " at pc 0x... bp 0x... sp 0x...". */
	h = strdup(headline);
	if (!h) {
		oom(c);
		return;
	}
	if ((sp = strstr(h, " at pc 0x")))
		h[sp - h] = '\0';
	if ((sp = strstr(h, " (pc 0x")))
		h[sp - h] = '\0';
	while (*h && (h[strlen(h) - 1] == ':' || h[strlen(h) - 1] == ' '))
		h[strlen(h) - 1] = '\0';
	c->headline = h;
	c->tid = thread_of(headline);
	/* The bug type until SUMMARY says it: the first word. */
	snprintf(c->bug, sizeof(c->bug), "%.*s", (int)strcspn(headline, " :"), headline);
	if (!strcmp(c->bug, "attempting")) {
		if (strstr(headline, "double-free"))
			snprintf(c->bug, sizeof(c->bug), "double-free");
		else
			snprintf(c->bug, sizeof(c->bug), "bad-free");
	}
}

static void line(struct ctx *c, const char *s)
{
	const char *rest;
	long long pid = pid_prefix(s, &rest);
	unsigned long long a, b;
	char *end;

	if (pid) {
		if (!c->d->pid)
			c->d->pid = pid;
		if (!strncmp(rest, "ERROR: AddressSanitizer: ", 25)) {
			error_start(c, rest + 25);
		} else if (!strncmp(rest, "ERROR: LeakSanitizer: ", 22)) {
			finish(c);
			c->leak = true;
		} else if (!strncmp(rest, "ABORTING", 8)) {
			if (c->active && !c->leak && !c->info->halted)
				snprintf(c->info->first_bug, sizeof(c->info->first_bug), "%s",
					 c->bug);
			finish(c);
			c->info->halted = true;
		} else if (c->active && !strncmp(rest, "The signal is caused by a ", 26)) {
			c->access = !strncmp(rest + 26, "WRITE", 5) ? 2 : 1;
		} else if (c->active && !strncmp(rest, "Hint: ", 6)) {
			raw_aux_push(c, AUX_OTHER, rest);
		}
		return;
	}
	if (!strncmp(s, "SUMMARY: AddressSanitizer: ", 27)) {
		if (c->in_leak)
			finish_leak(c);
		if (c->active && !c->leak)
			snprintf(c->bug, sizeof(c->bug), "%.*s", (int)strcspn(s + 27, " "),
				 s + 27);
		c->target = TARGET_NONE;
		return;
	}
	if (!strncmp(s, "Shadow bytes around", 19)) {
		c->target = TARGET_NONE;
		return;
	}
	if (c->leak) {
		bool direct = !strncmp(s, "Direct leak of ", 15);

		if (direct || !strncmp(s, "Indirect leak of ", 17)) {
			const char *p = s + (direct ? 15 : 17);

			if (c->in_leak)
				finish_leak(c);
			c->in_leak = true;
			c->direct = direct;
			c->leak_bytes = strtoull(p, &end, 10);
			p = strstr(end, " in ");
			c->leak_blocks = p ? strtoull(p + 4, NULL, 10) : 0;
			c->target = TARGET_MAIN;
			return;
		}
		if (c->in_leak)
			frame_line(c, s);
		return;
	}
	if (!c->active)
		return;
	if ((!strncmp(s, "READ of size ", 13) || !strncmp(s, "WRITE of size ", 14))) {
		c->access = s[0] == 'W' ? 2 : 1;
		c->size = strtoull(s + (s[0] == 'W' ? 14 : 13), NULL, 10);
		c->has_size = true;
		if (thread_of(s))
			c->tid = thread_of(s);
		return;
	}
	if (is_description(s)) {
		struct raw_aux *r = raw_aux_push(c, AUX_DESC, NULL);

		if (!r)
			return;
		if (strncmp(s, "Address ", 8)) {
			if (asprintf(&r->what, "Address %s", s) < 0) {
				r->what = NULL;
				oom(c);
			}
		} else if (!(r->what = strdup(s))) {
			oom(c);
		}
		c->target = (long)(r - c->aux);
		return;
	}
	if (strstr(s, " by thread T") && strstr(s, " here:")) {
		enum aux_role role = !strncmp(s, "freed by", 8)		? AUX_FREE
				     : !strncmp(s, "previously allocated", 20) ? AUX_PREV_ALLOC
				     : !strncmp(s, "allocated by", 12)	? AUX_ALLOC
										: AUX_OTHER;
		struct raw_aux *r = raw_aux_push(c, role, s);

		if (r)
			c->target = (long)(r - c->aux);
		return;
	}
	if (!strncmp(s, "Thread T", 8) && strstr(s, " created by ")) {
		struct raw_aux *r = raw_aux_push(c, AUX_OTHER, s);

		if (r)
			c->target = (long)(r - c->aux);
		return;
	}
	if (strstr(s, "This frame has ")) {
		c->target = TARGET_NONE;
		return;
	}
	/* "    [32, 36) 'a' (line 4) <== Memory access at offset 36 overflows
	 * this variable": said with the stack description it belongs to. */
	if (sscanf(s, " [%llu, %llu)", &a, &b) == 2 && strstr(s, "<==")) {
		struct raw_aux *r = NULL;

		for (size_t i = c->naux; i-- > 0;)
			if (c->aux[i].role == AUX_DESC) {
				r = &c->aux[i];
				break;
			}
		if (r && r->what) {
			const char *var = strchr(s, '\'');
			const char *arrow = strstr(s, "<==");
			char *w;

			if (var && var < arrow &&
			    asprintf(&w, "%s; variable %.*s[%llu, %llu): %s", r->what,
				     (int)(arrow - var), var, a, b,
				     arrow + 3 + strspn(arrow + 3, " ")) >= 0) {
				free(r->what);
				r->what = w;
			}
		}
		return;
	}
	frame_line(c, s);
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

int ks_asan_read_mem(struct ks_mcx_doc *d, struct ks_asan_info *info, const char *data,
		     size_t size, const struct ks_asan_read_opts *o, struct ks_err *err)
{
	struct ctx c = { .d = d, .info = info, .o = o, .target = TARGET_NONE };
	const char *p = data, *end = data + size;
	char *buf = NULL;
	size_t cap = 0;

	memset(d, 0, sizeof(*d));
	memset(info, 0, sizeof(*info));
	while (p < end && !c.rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		if (n + 1 > cap) {
			char *b = realloc(buf, cap = n + 1);

			if (!b) {
				c.rc = -ENOMEM;
				break;
			}
			buf = b;
		}
		memcpy(buf, p, n);
		buf[n] = '\0';
		if (n && buf[n - 1] == '\r')
			buf[n - 1] = '\0';
		line(&c, buf);
		p = nl ? nl + 1 : end;
	}
	if (!c.rc)
		finish(&c);
	pending_clear(&c);
	free(buf);
	if (!c.rc && !(d->tool = strdup("asan")))
		c.rc = -ENOMEM;
	d->protocol = 4;
	d->finished = !info->halted;
	d->complete = true;
	if (info->signo) {
		d->fatal = true;
		d->signo = info->signo;
	}
	if (c.rc) {
		ks_mcx_free(d);
		return ks_err_set(err, c.rc, "out of memory reading AddressSanitizer's report");
	}
	return 0;
}

int ks_asan_read_file(struct ks_mcx_doc *d, struct ks_asan_info *info, const char *path,
		      const struct ks_asan_read_opts *o, struct ks_err *err)
{
	char *data = NULL;
	size_t size = 0;
	int rc = ks_read_file_at(AT_FDCWD, path, O_NOFOLLOW, (size_t)1 << 30, &data, &size, err);

	if (rc) {
		memset(d, 0, sizeof(*d));
		memset(info, 0, sizeof(*info));
		return rc;
	}
	rc = ks_asan_read_mem(d, info, data, size, o, err);
	free(data);
	return rc;
}
