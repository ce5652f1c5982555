/*
 * The reader of Memcheck's XML (mcxml.h): expat callbacks that build a
 * struct ks_mcx_doc as the elements go by.  An element is recognised by
 * its name and its parent's, so the reader never holds more than the
 * error being read; an error joins the document when its closing tag
 * arrives, which is what makes a truncated file yield every complete
 * error.  The format is Valgrind's XML output protocol 4 as Memcheck
 * writes it (docs/memtools.md, "Reading Memcheck's XML").
 *
 * Elements after </valgrindoutput> (Memcheck writes some there when it
 * aborts after its final output) are read by a second parser fed a
 * made-up root element and then the rest of the stream.  Of the
 * <clientmsg>s only the heap map's markers are kept (kscope memcheck
 * --heap-map), with the number of errors before each.  A DOCTYPE (with
 * it, entity expansion) is refused: Memcheck never writes one.
 */
#include "mcxml.h"

#include <errno.h>
#include <expat.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcheap.h"

#define MCX_DEPTH 16            /* deeper elements are skipped */
#define MCX_NAME 24             /* element names kept up to this length */
#define MCX_TEXT_MAX 65536      /* characters kept per element */
#define MCX_CHUNK 65536
#define MCX_TAIL_ROOT "<valgrindoutput>"

/* A source of bytes: a file read chunk by chunk, or a buffer. */
struct src {
	FILE *f;
	const char *data;
	size_t size, pos;
};

struct count_pair {
	uint64_t unique, count;
};

struct ctx {
	struct ks_mcx_doc *d;
	XML_Parser p;
	int depth;                        /* of the element being read; 0 outside */
	char names[MCX_DEPTH + 1][MCX_NAME];
	char *text;                       /* character data of the element */
	size_t tlen, tcap;                /* tlen: without its trailing white space */
	size_t rlen;                      /* with it (text[tlen] is then NUL) */
	char cut;                         /* the white space character text[tlen] held */
	bool root_seen, root_bad;
	bool tail;                        /* reading after </valgrindoutput> */
	bool oom, doctype;
	struct ks_mcx_error *cur;         /* the error being read */
	struct ks_mcx_stack *target;      /* where frames go */
	bool primary_done;                /* cur's primary stack was read */
	bool in_fatal;
	uint64_t pair_count, pair_unique; /* <pair> being read */
	char *pair_name;
	struct count_pair *counts;        /* <errorcounts>, all pairs read */
	size_t ncounts, cap_counts;
	long long msg_tid;                /* <clientmsg> being read: its <tid>, */
	char *msg_text;                   /* and its <text> */
};

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t c = *cap ? *cap : 8;
	void *q;

	if (need <= *cap)
		return p;
	while (c < need)
		c *= 2;
	q = realloc(p, c * elem);
	if (!q)
		return NULL;
	memset((char *)q + *cap * elem, 0, (c - *cap) * elem);
	*cap = c;
	return q;
}

static void oom(struct ctx *c)
{
	if (!c->oom) {
		c->oom = true;
		XML_StopParser(c->p, XML_FALSE);
	}
}

static char *dup_text(struct ctx *c)
{
	char *s = strdup(c->text ? c->text : "");

	if (!s)
		oom(c);
	return s;
}

/* Sets *dst to the element's text (trimmed), replacing what was there. */
static void set_text(struct ctx *c, char **dst)
{
	char *s = dup_text(c);

	if (s) {
		free(*dst);
		*dst = s;
	}
}

static uint64_t num(const struct ctx *c)
{
	const char *s = c->text ? c->text : "";

	return (uint64_t)strtoull(s, NULL, 0);
}

static long long snum(const struct ctx *c)
{
	return strtoll(c->text ? c->text : "", NULL, 10);
}

static bool is(const struct ctx *c, int depth, const char *name)
{
	return depth >= 1 && depth <= c->depth && depth <= MCX_DEPTH &&
	       !strcmp(c->names[depth], name);
}

void ks_mcx_stack_free(struct ks_mcx_stack *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->frames[i].obj);
		free(s->frames[i].fn);
		free(s->frames[i].dir);
		free(s->frames[i].file);
	}
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

static void error_free(struct ks_mcx_error *e)
{
	free(e->kind);
	free(e->what);
	free(e->suppression);
	ks_mcx_stack_free(&e->stack);
	for (size_t i = 0; i < e->naux; i++) {
		free(e->aux[i].what);
		ks_mcx_stack_free(&e->aux[i].stack);
	}
	free(e->aux);
	memset(e, 0, sizeof(*e));
}

/* A new auxiliary entry of cur, or NULL (out of memory). */
static struct ks_mcx_aux *aux_push(struct ctx *c)
{
	struct ks_mcx_error *e = c->cur;
	struct ks_mcx_aux *a = realloc(e->aux, (e->naux + 1) * sizeof(*a));

	if (!a) {
		oom(c);
		return NULL;
	}
	e->aux = a;
	memset(&a[e->naux], 0, sizeof(*a));
	return &a[e->naux++];
}

/* ------------------------------------------------------------------ */
/* Start and end of elements                                           */
/* ------------------------------------------------------------------ */

/* Where the frames of a <stack> opening at depth c->depth go. */
static struct ks_mcx_stack *stack_target(struct ctx *c)
{
	int d = c->depth;

	if (c->in_fatal && d == 3)
		return &c->d->fatal_stack;
	if (!c->cur)
		return NULL;
	if (d == 4 && is(c, 3, "origin"))
		return c->cur->naux ? &c->cur->aux[c->cur->naux - 1].stack : NULL;
	if (d != 3)
		return NULL;
	if (!c->primary_done) {
		c->primary_done = true;
		return &c->cur->stack;
	}
	/* An auxiliary stack belongs to the description before it. */
	if (c->cur->naux && !c->cur->aux[c->cur->naux - 1].stack.n &&
	    !c->cur->aux[c->cur->naux - 1].origin) {
		return &c->cur->aux[c->cur->naux - 1].stack;
	}
	{
		struct ks_mcx_aux *a = aux_push(c);

		return a ? &a->stack : NULL;
	}
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
	struct ctx *c = ud;
	int d = ++c->depth;

	(void)attrs;
	c->tlen = c->rlen = 0;
	if (c->text)
		c->text[0] = '\0';
	if (d > MCX_DEPTH)
		return;
	snprintf(c->names[d], MCX_NAME, "%s", name);
	if (d == 1) {
		if (!c->tail) {
			c->root_seen = true;
			c->root_bad = strcmp(name, "valgrindoutput") != 0;
		}
		return;
	}
	if (d == 2 && !strcmp(name, "error")) {
		if (c->cur)
			error_free(c->cur);
		free(c->cur);
		c->cur = calloc(1, sizeof(*c->cur));
		if (!c->cur)
			oom(c);
		c->primary_done = false;
		c->target = NULL;
	} else if (d == 2 && !strcmp(name, "fatal_signal")) {
		c->in_fatal = true;
		ks_mcx_stack_free(&c->d->fatal_stack);
	} else if (d == 2 && !strcmp(name, "suppcounts")) {
		/* Only the last one counts (Memcheck writes one). */
		for (size_t i = 0; i < c->d->nsupps; i++)
			free(c->d->supps[i].name);
		c->d->nsupps = 0;
	} else if (!strcmp(name, "stack")) {
		c->target = stack_target(c);
	} else if (!strcmp(name, "frame") && c->target && is(c, d - 1, "stack")) {
		struct ks_mcx_stack *s = c->target;
		struct ks_mcx_frame *f = realloc(s->frames, (s->n + 1) * sizeof(*f));

		if (!f) {
			oom(c);
			return;
		}
		s->frames = f;
		memset(&f[s->n++], 0, sizeof(*f));
	} else if (d == 3 && c->cur && !strcmp(name, "origin")) {
		struct ks_mcx_aux *a = aux_push(c);

		if (a)
			a->origin = true;
	} else if (d == 2 && !strcmp(name, "clientmsg")) {
		c->msg_tid = 0;
		free(c->msg_text);
		c->msg_text = NULL;
	} else if (d == 3 && !strcmp(name, "pair")) {
		c->pair_count = c->pair_unique = 0;
		free(c->pair_name);
		c->pair_name = NULL;
	}
}

static struct ks_mcx_frame *cur_frame(struct ctx *c)
{
	if (!c->target || !c->target->n || !is(c, c->depth - 1, "frame") ||
	    !is(c, c->depth - 2, "stack"))
		return NULL;
	return &c->target->frames[c->target->n - 1];
}

static void end_error_field(struct ctx *c, const char *name)
{
	struct ks_mcx_error *e = c->cur;
	int d = c->depth;

	if (d == 3) {
		if (!strcmp(name, "unique"))
			e->unique = num(c);
		else if (!strcmp(name, "tid"))
			e->tid = snum(c);
		else if (!strcmp(name, "kind"))
			set_text(c, &e->kind);
		else if (!strcmp(name, "what") && !e->what)
			set_text(c, &e->what);
		else if (!strcmp(name, "auxwhat")) {
			struct ks_mcx_aux *a = aux_push(c);

			if (a)
				a->what = dup_text(c);
		} else if (!strcmp(name, "leakedbytes")) {
			e->has_leak = true;
			e->leaked_bytes = num(c);
		} else if (!strcmp(name, "leakedblocks")) {
			e->has_leak = true;
			e->leaked_blocks = num(c);
		}
	} else if (d == 4 && is(c, 3, "xwhat")) {
		if (!strcmp(name, "text") && !e->what)
			set_text(c, &e->what);
		else if (!strcmp(name, "leakedbytes")) {
			e->has_leak = true;
			e->leaked_bytes = num(c);
		} else if (!strcmp(name, "leakedblocks")) {
			e->has_leak = true;
			e->leaked_blocks = num(c);
		}
	} else if (d == 4 && is(c, 3, "xauxwhat") && !strcmp(name, "text")) {
		struct ks_mcx_aux *a = aux_push(c);

		if (a)
			a->what = dup_text(c);
	} else if (d == 4 && is(c, 3, "origin") && !strcmp(name, "what")) {
		if (e->naux && e->aux[e->naux - 1].origin)
			set_text(c, &e->aux[e->naux - 1].what);
	} else if (d == 4 && is(c, 3, "suppression") && !strcmp(name, "rawtext")) {
		set_text(c, &e->suppression);
	}
}

static void end_frame_field(struct ctx *c, struct ks_mcx_frame *f, const char *name)
{
	if (!strcmp(name, "ip"))
		f->ip = num(c);
	else if (!strcmp(name, "obj"))
		set_text(c, &f->obj);
	else if (!strcmp(name, "fn"))
		set_text(c, &f->fn);
	else if (!strcmp(name, "dir"))
		set_text(c, &f->dir);
	else if (!strcmp(name, "file"))
		set_text(c, &f->file);
	else if (!strcmp(name, "line"))
		f->line = (unsigned long)num(c);
}

static void push_error(struct ctx *c)
{
	struct ks_mcx_doc *d = c->d;
	struct ks_mcx_error *v = grow(d->errors, &d->cap_errors, d->nerrors + 1, sizeof(*v));

	if (!v) {
		oom(c);
		return;
	}
	d->errors = v;
	c->cur->count = 1;
	v[d->nerrors++] = *c->cur;
	free(c->cur);
	c->cur = NULL;
	c->target = NULL;
}

static void end_pair(struct ctx *c)
{
	struct ks_mcx_doc *d = c->d;

	if (is(c, 2, "errorcounts")) {
		struct count_pair *v = grow(c->counts, &c->cap_counts, c->ncounts + 1,
					    sizeof(*v));

		if (!v) {
			oom(c);
			return;
		}
		c->counts = v;
		v[c->ncounts].unique = c->pair_unique;
		v[c->ncounts++].count = c->pair_count;
	} else if (is(c, 2, "suppcounts") && c->pair_name) {
		struct ks_mcx_supp *v = grow(d->supps, &d->cap_supps, d->nsupps + 1,
					     sizeof(*v));

		if (!v) {
			oom(c);
			return;
		}
		d->supps = v;
		v[d->nsupps].name = c->pair_name;
		v[d->nsupps++].count = c->pair_count;
		c->pair_name = NULL;
	}
}

/* A <clientmsg> read: kept when it is a heap map marker of this process
 * (mcheap.h: "kscope-heapmap PID SEQ PHASE"), else left alone as
 * before (the program's own VALGRIND_PRINTFs are not reported). */
static void end_clientmsg(struct ctx *c)
{
	struct ks_mcx_doc *d = c->d;
	const char *t = c->msg_text;
	long long pid;
	unsigned long long seq;
	char phase, extra;
	struct ks_mcx_hmark *v;

	if (!t || strncmp(t, KS_MCHEAP_MAGIC " ", sizeof(KS_MCHEAP_MAGIC)) ||
	    sscanf(t + sizeof(KS_MCHEAP_MAGIC), "%lld %llu %c %c", &pid, &seq, &phase,
		   &extra) != 3 ||
	    pid != d->pid || (phase != 'b' && phase != 'd' && phase != 'u'))
		return;
	v = grow(d->hmarks, &d->cap_hmarks, d->nhmarks + 1, sizeof(*v));
	if (!v) {
		oom(c);
		return;
	}
	d->hmarks = v;
	v[d->nhmarks].nerrors = d->nerrors;
	v[d->nhmarks].seq = seq;
	v[d->nhmarks].phase = phase;
	v[d->nhmarks++].tid = c->msg_tid;
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct ctx *c = ud;
	struct ks_mcx_doc *d = c->d;
	int depth = c->depth;
	struct ks_mcx_frame *f;

	if (depth > MCX_DEPTH || c->oom)
		goto out;
	if (depth == 1) {
		if (!c->tail)
			d->complete = true;
		goto out;
	}
	if (depth == 2) {
		if (!strcmp(name, "protocolversion"))
			d->protocol = (int)snum(c);
		else if (!strcmp(name, "protocoltool"))
			set_text(c, &d->tool);
		else if (!strcmp(name, "pid"))
			d->pid = snum(c);
		else if (!strcmp(name, "ppid"))
			d->ppid = snum(c);
		else if (!strcmp(name, "error") && c->cur)
			push_error(c);
		else if (!strcmp(name, "fatal_signal")) {
			c->in_fatal = false;
			d->fatal = true;
		} else if (!strcmp(name, "clientmsg")) {
			end_clientmsg(c);
		}
		goto out;
	}
	if (depth == 3 && is(c, 2, "clientmsg")) {
		if (!strcmp(name, "tid"))
			c->msg_tid = snum(c);
		else if (!strcmp(name, "text"))
			set_text(c, &c->msg_text);
		goto out;
	}
	if (depth == 3 && is(c, 2, "status") && !strcmp(name, "state")) {
		if (c->text && !strcmp(c->text, "RUNNING"))
			d->running = true;
		else if (c->text && !strcmp(c->text, "FINISHED"))
			d->finished = true;
	} else if (depth == 4 && is(c, 2, "args") && is(c, 3, "argv")) {
		if (!strcmp(name, "exe")) {
			set_text(c, &d->exe);
		} else if (!strcmp(name, "arg")) {
			char **v = realloc(d->argv, (d->argc + 1) * sizeof(*v));

			if (!v) {
				oom(c);
				goto out;
			}
			d->argv = v;
			if ((v[d->argc] = dup_text(c)))
				d->argc++;
		}
	} else if ((f = cur_frame(c))) {
		end_frame_field(c, f, name);
	} else if (c->in_fatal && depth == 3) {
		if (!strcmp(name, "tid"))
			d->fatal_tid = snum(c);
		else if (!strcmp(name, "signo"))
			d->signo = (int)snum(c);
		else if (!strcmp(name, "signame"))
			set_text(c, &d->signame);
	} else if (c->cur && is(c, 2, "error")) {
		end_error_field(c, name);
	} else if (depth == 3 && !strcmp(name, "pair")) {
		end_pair(c);
	} else if (depth == 4 && is(c, 3, "pair")) {
		if (!strcmp(name, "count"))
			c->pair_count = num(c);
		else if (!strcmp(name, "unique"))
			c->pair_unique = num(c);
		else if (!strcmp(name, "name"))
			set_text(c, &c->pair_name);
	}
	if (!strcmp(name, "stack") && (depth == 3 || depth == 4))
		c->target = NULL;
out:
	c->depth--;
	c->tlen = c->rlen = 0;
	if (c->text)
		c->text[0] = '\0';
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
	struct ctx *c = ud;
	size_t n = (size_t)len;

	if (c->depth > MCX_DEPTH || c->rlen >= MCX_TEXT_MAX)
		return;
	if (n > MCX_TEXT_MAX - c->rlen)
		n = MCX_TEXT_MAX - c->rlen;
	if (c->rlen + n + 1 > c->tcap) {
		size_t cap = c->tcap ? c->tcap : 256;
		char *t;

		while (cap < c->rlen + n + 1)
			cap *= 2;
		if (!(t = realloc(c->text, cap))) {
			oom(c);
			return;
		}
		c->text = t;
		c->tcap = cap;
	}
	/* Leading white space is dropped as it comes, trailing at the end:
	 * expat hands the text over in pieces (one per entity reference),
	 * so white space at a piece's end is kept until more text follows
	 * ("in arena &quot;client&quot;" keeps its space). */
	while (!c->rlen && n && (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')) {
		s++;
		n--;
	}
	if (!n)
		return;
	if (c->tlen < c->rlen)
		c->text[c->tlen] = c->cut;
	memcpy(c->text + c->rlen, s, n);
	c->rlen += n;
	c->tlen = c->rlen;
	while (c->tlen && (c->text[c->tlen - 1] == ' ' || c->text[c->tlen - 1] == '\n' ||
			   c->text[c->tlen - 1] == '\t' || c->text[c->tlen - 1] == '\r'))
		c->tlen--;
	if (c->tlen < c->rlen)
		c->cut = c->text[c->tlen];
	c->text[c->tlen] = '\0';
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
			       const XML_Char *pubid, int has_internal)
{
	struct ctx *c = ud;

	(void)name, (void)sysid, (void)pubid, (void)has_internal;
	c->doctype = true;
	XML_StopParser(c->p, XML_FALSE);
}

/* ------------------------------------------------------------------ */
/* Driving expat                                                       */
/* ------------------------------------------------------------------ */

static XML_Parser parser_new(struct ctx *c)
{
	XML_Parser p = XML_ParserCreate(NULL);

	if (!p)
		return NULL;
	XML_SetUserData(p, c);
	XML_SetElementHandler(p, on_start, on_end);
	XML_SetCharacterDataHandler(p, on_text);
	XML_SetStartDoctypeDeclHandler(p, on_doctype);
	return p;
}

static size_t src_read(struct src *s, char *buf, size_t n, int *err)
{
	size_t got;

	if (s->f) {
		got = fread(buf, 1, n, s->f);
		if (got < n && ferror(s->f))
			*err = EIO;
		return got;
	}
	got = s->size - s->pos < n ? s->size - s->pos : n;
	memcpy(buf, s->data + s->pos, got);
	s->pos += got;
	return got;
}

static void damage(struct ctx *c, XML_Parser p)
{
	c->d->damaged = true;
	snprintf(c->d->damage, sizeof(c->d->damage), "%s at line %lu, column %lu",
		 c->doctype ? "a DOCTYPE (Memcheck writes none)"
			    : XML_ErrorString(XML_GetErrorCode(p)),
		 (unsigned long)XML_GetCurrentLineNumber(p),
		 (unsigned long)XML_GetCurrentColumnNumber(p) + 1);
}

/* Feeds the whole source to expat, restarting once after the root
 * element if more elements follow it. */
static int parse(struct ctx *c, struct src *s, struct ks_err *err)
{
	char *buf = malloc(MCX_CHUNK);
	XML_Index fed = 0;           /* bytes of c->p's stream (less prefix) before buf */
	XML_Index prefix = 0;        /* bytes of the made-up root in c->p's stream */
	int rc = 0, rerr = 0;

	if (!buf || !(c->p = parser_new(c))) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		size_t n = src_read(s, buf, MCX_CHUNK, &rerr);
		bool final = n < MCX_CHUNK;
		size_t off = 0;

		if (rerr) {
			rc = ks_err_set(err, -rerr, "read error");
			goto out;
		}
		while (XML_Parse(c->p, buf + off, (int)(n - off), final) == XML_STATUS_ERROR) {
			enum XML_Error code = XML_GetErrorCode(c->p);
			XML_Index at = XML_GetCurrentByteIndex(c->p) - prefix - fed;

			if (c->oom) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			if (code == XML_ERROR_JUNK_AFTER_DOC_ELEMENT && !c->tail &&
			    at >= (XML_Index)off && at <= (XML_Index)n) {
				/* More after </valgrindoutput>: read it inside a
				 * made-up root, from where the junk starts. */
				XML_ParserFree(c->p);
				c->tail = true;
				c->d->trailing = true;
				c->depth = 0;
				if (!(c->p = parser_new(c))) {
					rc = ks_err_set(err, -ENOMEM, "out of memory");
					goto out;
				}
				prefix = (XML_Index)strlen(MCX_TAIL_ROOT);
				fed = -(XML_Index)at; /* its stream starts at buf + at */
				if (XML_Parse(c->p, MCX_TAIL_ROOT, (int)prefix, 0) ==
				    XML_STATUS_ERROR) {
					damage(c, c->p);
					goto out;
				}
				off = (size_t)at;
				continue;
			}
			/* The made-up root is never closed: an end of input
			 * there is the normal end of the tail.  An end of input
			 * inside the document is a file cut short (complete
			 * stays false: it "ends early"), not damage. */
			if (!(final && c->depth >= 1 &&
			      (code == XML_ERROR_NO_ELEMENTS || code == XML_ERROR_UNCLOSED_TOKEN ||
			       code == XML_ERROR_PARTIAL_CHAR)))
				damage(c, c->p);
			goto out;
		}
		fed += (XML_Index)n;
		if (final)
			break;
	}
out:
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */
/* ------------------------------------------------------------------ */

static int read_src(struct ks_mcx_doc *d, struct src *s, const char *name,
		    struct ks_err *err)
{
	struct ctx c;
	int rc;

	memset(d, 0, sizeof(*d));
	memset(&c, 0, sizeof(c));
	c.d = d;
	rc = parse(&c, s, err);
	if (rc) {
		struct ks_err why = *err;

		ks_err_set(err, rc, "%s: %s", name, why.msg);
		goto out;
	}
	if (!c.root_seen || c.root_bad) {
		rc = ks_err_set(err, -EBADMSG, "%s: not Valgrind's XML output (%s)", name,
				d->damaged ? d->damage : "no <valgrindoutput> element");
		goto out;
	}
	if (d->protocol && d->protocol != 4) {
		rc = ks_err_set(err, -EBADMSG, "%s: XML output protocol %d; kscope reads "
				"protocol 4", name, d->protocol);
		goto out;
	}
	if (d->tool && strcmp(d->tool, "memcheck") != 0) {
		rc = ks_err_set(err, -EBADMSG, "%s: the XML of Valgrind's %s, not Memcheck's",
				name, d->tool);
		goto out;
	}
	/* Each error's count: the last <errorcounts> pair naming it. */
	for (size_t i = 0; i < c.ncounts; i++)
		for (size_t j = 0; j < d->nerrors; j++)
			if (d->errors[j].unique == c.counts[i].unique && c.counts[i].count)
				d->errors[j].count = c.counts[i].count;
out:
	if (c.p)
		XML_ParserFree(c.p);
	if (c.cur) {
		error_free(c.cur);
		free(c.cur);
	}
	free(c.text);
	free(c.pair_name);
	free(c.counts);
	free(c.msg_text);
	if (rc)
		ks_mcx_free(d);
	return rc;
}

int ks_mcx_read_file(struct ks_mcx_doc *d, const char *path, struct ks_err *err)
{
	struct src s = { 0 };
	int rc;

	memset(d, 0, sizeof(*d));
	if (!(s.f = fopen(path, "rb")))
		return ks_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	rc = read_src(d, &s, path, err);
	fclose(s.f);
	return rc;
}

int ks_mcx_read_mem(struct ks_mcx_doc *d, const char *data, size_t size,
		    struct ks_err *err)
{
	struct src s = { .data = data, .size = size };

	return read_src(d, &s, "the XML", err);
}

void ks_mcx_free(struct ks_mcx_doc *d)
{
	free(d->tool);
	free(d->exe);
	for (size_t i = 0; i < d->argc; i++)
		free(d->argv[i]);
	free(d->argv);
	free(d->signame);
	ks_mcx_stack_free(&d->fatal_stack);
	for (size_t i = 0; i < d->nerrors; i++)
		error_free(&d->errors[i]);
	free(d->errors);
	for (size_t i = 0; i < d->nsupps; i++)
		free(d->supps[i].name);
	free(d->supps);
	free(d->hmarks);
	ks_mcx_heapmap_free(d->heapmap);
	memset(d, 0, sizeof(*d));
}
