/*
 * Unit tests of kscope memcheck --heap-map's reader (src/memtools/mcxml/
 * mcx_heapmap.c, and the markers mcx_read.c keeps): hand-made logs in the
 * format of src/memtools/mcexec/mcheap.h and Memcheck XML documents with
 * markers, asserting which blocks each error names: the heap before the
 * marker's event, not after it; the log's end for errors after the last
 * marker; both heaps for another thread's error during a call, and "not
 * known" when they differ; nothing beyond 1 MiB; a block containing the
 * address; a realloc's two records as one event; a log cut short (LOST),
 * damaged, missing, or of a program with its own malloc, and errors
 * before it began, said as not known; the
 * chunk boundary's NEXT record; which errors ask at all; and the reports'
 * sentences (report.txt, report.json) through ks_mcx_report.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mcheap.h"
#include "mcxml.h"
#include "test_util.h"

/* ------------------------------------------------------------------ */
/* Building logs and documents                                         */
/* ------------------------------------------------------------------ */

struct log {
	struct ks_mcheap_rec *v;  /* [0] is the header */
	size_t n, cap;
};

static void log_add(struct log *l, uint64_t seq, uint16_t type, uint64_t addr, uint64_t size,
		    uint16_t fn)
{
	struct ks_mcheap_rec r = { .seq = seq, .size = size, .type = type, .fn = fn,
				   .caller = type == KS_MCHEAP_ALLOC ? 0x401000 : 0 };

	r.addr = type == KS_MCHEAP_ALLOC || type == KS_MCHEAP_FREE ? KS_MCHEAP_HIDE(addr) : addr;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	r.check = ks_mcheap_check(&r);
	l->v[l->n++] = r;
}

static struct log log_new(long long pid)
{
	struct log l = { 0 };
	struct ks_mcheap_rec h = { .type = KS_MCHEAP_HEADER, .addr = (uint64_t)pid,
				   .size = KS_MCHEAP_VERSION, .caller = KS_MCHEAP_MAGIC64 };

	log_add(&l, 0, 0, 0, 0, 0);
	h.check = ks_mcheap_check(&h);
	l.v[0] = h;
	return l;
}

static void alloc(struct log *l, uint64_t seq, uint64_t addr, uint64_t size)
{
	log_add(l, seq, KS_MCHEAP_ALLOC, addr, size, KS_MCHEAP_MALLOC);
}

static void release(struct log *l, uint64_t seq, uint64_t addr)
{
	log_add(l, seq, KS_MCHEAP_FREE, addr, 0, KS_MCHEAP_FREE_FN);
}

static struct ks_mcx_heapmap *log_open(const struct log *l)
{
	struct ks_mcx_heapmap *h;
	struct ks_err err;

	assert_int_equal(ks_mcx_heapmap_mem(&h, l->v, l->n * sizeof(*l->v), &err), 0);
	return h;
}

/* An <error> of kind at tid with Memcheck's sentence about addr. */
static void xml_error(char *buf, size_t size, const char *kind, int tid, const char *aux)
{
	size_t n = strlen(buf);

	snprintf(buf + n, size - n,
		 "<error><unique>0x%zx</unique><tid>%d</tid><kind>%s</kind>"
		 "<what>Invalid access</what><stack><frame><ip>0x401234</ip><obj>/bin/prog</obj>"
		 "<fn>main</fn><dir>/src</dir><file>p.c</file><line>%zu</line></frame>"
		 "</stack><auxwhat>%s</auxwhat></error>\n", n, tid, kind, n % 1000 + 1, aux);
}

static void xml_marker(char *buf, size_t size, int pid, int tid, uint64_t seq, char phase)
{
	size_t n = strlen(buf);

	snprintf(buf + n, size - n, "<clientmsg><tid>%d</tid><text>kscope-heapmap %d %llu %c\n"
		 "  </text></clientmsg>\n", tid, pid, (unsigned long long)seq, phase);
}

static void xml_begin(char *buf, size_t size, int pid)
{
	snprintf(buf, size, "<?xml version=\"1.0\"?>\n<valgrindoutput>\n"
		 "<protocolversion>4</protocolversion><protocoltool>memcheck</protocoltool>\n"
		 "<pid>%d</pid><ppid>1</ppid>\n<status><state>RUNNING</state></status>\n", pid);
}

static void xml_end(char *buf, size_t size)
{
	size_t n = strlen(buf);

	snprintf(buf + n, size - n, "<status><state>FINISHED</state></status>\n"
		 "</valgrindoutput>\n");
}

static char *unrelated(uint64_t addr)
{
	static char s[8][128];
	static int k;

	k = (k + 1) % 8;
	snprintf(s[k], sizeof(s[k]), "Address 0x%llx is 100 bytes inside an unallocated block of "
		 "size 4,000,000 in arena &quot;client&quot;", (unsigned long long)addr);
	return s[k];
}

static void doc_read(struct ks_mcx_doc *d, const char *xml)
{
	struct ks_err err;

	assert_int_equal(ks_mcx_read_mem(d, xml, strlen(xml), &err), 0);
}

/* The answers for d with log h. */
static struct ks_mcx_near *near_of(const struct ks_mcx_heapmap *h, const struct ks_mcx_doc *d)
{
	struct ks_mcx_near *v = calloc(d->nerrors + 1, sizeof(*v));
	struct ks_err err;

	assert_non_null(v);
	assert_int_equal(ks_mcx_heapmap_near(h, d, v, &err), 0);
	return v;
}

/* A file's text, NUL-terminated (malloc'd). */
static char *read_text(const char *path)
{
	size_t size;
	unsigned char *data = ks_test_read_file(path, &size);
	char *t;

	assert_non_null(data);
	t = realloc(data, size + 1);
	assert_non_null(t);
	t[size] = '\0';
	return t;
}

#define PID 4242
#define XML 16384

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

/* Blocks a (0x10000, 100) and b (0x20000, 64); an error at 0x11000
 * (0x1000 - 100 past a, 0xf000 before b) marked before event 3, which
 * frees a, and one after it, marked before event 5. */
static void test_before_the_event(void **state)
{
	struct log l = log_new(PID);
	char xml[XML];
	struct ks_mcx_doc d;
	struct ks_mcx_heapmap *h;
	struct ks_mcx_near *n;

	(void)state;
	alloc(&l, 1, 0x10000, 100);
	alloc(&l, 2, 0x20000, 64);
	release(&l, 3, 0x10000);
	alloc(&l, 4, 0x11000, 16); /* later, over the address */
	xml_begin(xml, sizeof(xml), PID);
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x11000));
	xml_marker(xml, sizeof(xml), PID, 1, 3, 'b');
	xml_error(xml, sizeof(xml), "InvalidRead", 1, unrelated(0x11800));
	xml_marker(xml, sizeof(xml), PID, 1, 5, 'b');
	xml_end(xml, sizeof(xml));
	doc_read(&d, xml);
	assert_int_equal(d.nhmarks, 2);
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[0].status, MCX_NEAR_FOUND);
	assert_true(n[0].below.present);
	assert_int_equal(n[0].below.addr, 0x10000);
	assert_int_equal(n[0].below.size, 100);
	assert_int_equal(n[0].below.alloc_no, 1);
	assert_int_equal(n[0].below.fn, KS_MCHEAP_MALLOC);
	assert_true(n[0].above.present);
	assert_int_equal(n[0].above.addr, 0x20000);
	/* The second, after event 4: a is gone, the block of event 4 is
	 * below. */
	assert_int_equal(n[1].status, MCX_NEAR_FOUND);
	assert_int_equal(n[1].below.addr, 0x11000);
	assert_int_equal(n[1].below.alloc_no, 3);
	assert_int_equal(n[1].above.addr, 0x20000);
	free(n);
	ks_mcx_heapmap_free(h);
	ks_mcx_free(&d);
	free(l.v);
}

/* Errors after the last marker: the heap as the whole log leaves it. */
static void test_after_the_last_marker(void **state)
{
	struct log l = log_new(PID);
	char xml[XML];
	struct ks_mcx_doc d;
	struct ks_mcx_heapmap *h;
	struct ks_mcx_near *n;

	(void)state;
	alloc(&l, 1, 0x10000, 100);
	release(&l, 2, 0x10000);
	alloc(&l, 3, 0x30000, 8);
	xml_begin(xml, sizeof(xml), PID);
	xml_marker(xml, sizeof(xml), PID, 1, 2, 'b'); /* no error before it */
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x30100));
	xml_end(xml, sizeof(xml));
	doc_read(&d, xml);
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[0].status, MCX_NEAR_FOUND);
	assert_int_equal(n[0].below.addr, 0x30000);
	assert_int_equal(n[0].below.alloc_no, 2);
	assert_false(n[0].above.present);
	free(n);
	ks_mcx_heapmap_free(h);
	ks_mcx_free(&d);
	free(l.v);
}

/* A realloc that moved a block: one event of two records.  An error of
 * the calling thread during it saw the heap before; another thread's
 * saw either, so it is named only where both agree. */
static void test_during_a_call(void **state)
{
	struct log l = log_new(PID);
	char xml[XML];
	struct ks_mcx_doc d;
	struct ks_mcx_heapmap *h;
	struct ks_mcx_near *n;

	(void)state;
	alloc(&l, 1, 0x10000, 100);
	alloc(&l, 2, 0x90000, 100);
	log_add(&l, 3, KS_MCHEAP_FREE, 0x10000, 0, KS_MCHEAP_REALLOC);
	log_add(&l, 3, KS_MCHEAP_ALLOC, 0x40000, 200, KS_MCHEAP_REALLOC);
	xml_begin(xml, sizeof(xml), PID);
	xml_error(xml, sizeof(xml), "InvalidFree", 2, unrelated(0x12000));  /* the caller's */
	xml_error(xml, sizeof(xml), "InvalidRead", 3, unrelated(0x12000));  /* another's */
	xml_error(xml, sizeof(xml), "InvalidRead", 3, unrelated(0x92000));  /* another's, far */
	xml_marker(xml, sizeof(xml), PID, 2, 3, 'd');
	xml_error(xml, sizeof(xml), "InvalidRead", 3, unrelated(0x12000));  /* after it */
	xml_end(xml, sizeof(xml));
	doc_read(&d, xml);
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[0].status, MCX_NEAR_FOUND);
	assert_int_equal(n[0].below.addr, 0x10000);
	assert_int_equal(n[1].status, MCX_NEAR_UNKNOWN);
	assert_non_null(strstr(n[1].why, "another thread's allocation call (event 3)"));
	/* 0x92000: the block at 0x90000 below in both heaps, and the moved
	 * block is not above it. */
	assert_int_equal(n[2].status, MCX_NEAR_FOUND);
	assert_int_equal(n[2].below.addr, 0x90000);
	/* After the call: the realloc's new block above, nothing below. */
	assert_int_equal(n[3].status, MCX_NEAR_FOUND);
	assert_false(n[3].below.present);
	assert_true(n[3].above.present);
	assert_int_equal(n[3].above.addr, 0x40000);
	assert_int_equal(n[3].above.fn, KS_MCHEAP_REALLOC);
	assert_int_equal(n[3].above.alloc_no, 3);
	free(n);
	ks_mcx_heapmap_free(h);
	ks_mcx_free(&d);
	free(l.v);
}

/* Beyond 1 MiB nothing is named; 1 MiB exactly still is.  An address in
 * a live block (Memcheck calls it unaddressable when a client request
 * made it so) names that block alone. */
static void test_distance(void **state)
{
	struct log l = log_new(PID);
	char xml[XML];
	struct ks_mcx_doc d;
	struct ks_mcx_heapmap *h;
	struct ks_mcx_near *n;

	(void)state;
	alloc(&l, 1, 0x1000000, 0x100);
	xml_begin(xml, sizeof(xml), PID);
	xml_error(xml, sizeof(xml), "InvalidWrite", 1,
		  unrelated(0x1000100 + KS_MCX_NEAR_MAX));
	xml_error(xml, sizeof(xml), "InvalidWrite", 1,
		  unrelated(0x1000100 + KS_MCX_NEAR_MAX + 1));
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x1000000 - KS_MCX_NEAR_MAX));
	xml_error(xml, sizeof(xml), "InvalidWrite", 1,
		  unrelated(0x1000000 - KS_MCX_NEAR_MAX - 1));
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x1000010));
	xml_end(xml, sizeof(xml));
	doc_read(&d, xml);
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[0].status, MCX_NEAR_FOUND);
	assert_true(n[0].below.present);
	assert_int_equal(n[1].status, MCX_NEAR_NOTHING);
	assert_int_equal(n[2].status, MCX_NEAR_FOUND);
	assert_true(n[2].above.present);
	assert_int_equal(n[3].status, MCX_NEAR_NOTHING);
	assert_int_equal(n[4].status, MCX_NEAR_FOUND);
	assert_int_equal(n[4].below.addr, 0x1000000);
	assert_false(n[4].above.present);
	free(n);
	ks_mcx_heapmap_free(h);
	ks_mcx_free(&d);
	free(l.v);
}

/* What the log cannot say is not known, with the reason: a LOST record,
 * a damaged record, errors before the log began, no log at all. */
static void test_not_known(void **state)
{
	struct log l = log_new(PID);
	char xml[XML];
	struct ks_mcx_doc d;
	struct ks_mcx_heapmap *h;
	struct ks_mcx_near *n;

	(void)state;
	alloc(&l, 1, 0x10000, 100);
	alloc(&l, 2, 0x20000, 100);
	log_add(&l, 3, KS_MCHEAP_LOST, 0, 0, 0);
	xml_begin(xml, sizeof(xml), PID);
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x11000));
	xml_marker(xml, sizeof(xml), PID, 1, 1, 'u');
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x11000));
	xml_marker(xml, sizeof(xml), PID, 1, 3, 'b');
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x11000));
	xml_marker(xml, sizeof(xml), PID, 1, 4, 'b');
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x11000)); /* trailing */
	xml_end(xml, sizeof(xml));
	doc_read(&d, xml);
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[0].status, MCX_NEAR_UNKNOWN);
	assert_non_null(strstr(n[0].why, "before the heap map began"));
	assert_int_equal(n[1].status, MCX_NEAR_FOUND);      /* the heap before event 3 */
	assert_int_equal(n[1].below.addr, 0x10000);
	assert_int_equal(n[2].status, MCX_NEAR_UNKNOWN);
	assert_non_null(strstr(n[2].why, "stops at event 3"));
	assert_int_equal(n[3].status, MCX_NEAR_UNKNOWN);
	free(n);
	ks_mcx_heapmap_free(h);

	/* A record spoiled (a stray write into the log's mapping): it may
	 * have been event 2's second record, so the heap after event 2 is
	 * not known either. */
	l.n = 3;
	alloc(&l, 3, 0x30000, 8);
	l.v[3].size = 9;
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[1].status, MCX_NEAR_UNKNOWN);
	assert_non_null(strstr(n[1].why, "damaged after event 2"));
	assert_int_equal(n[2].status, MCX_NEAR_UNKNOWN);
	free(n);
	ks_mcx_heapmap_free(h);

	/* The program's own malloc: the log is not trusted from the start,
	 * not even for an error before its first event. */
	l.n = 1;
	log_add(&l, 1, KS_MCHEAP_LOST, 0, 0, KS_MCHEAP_LOST_OWN);
	h = log_open(&l);
	n = near_of(h, &d);
	for (size_t i = 1; i < d.nerrors; i++)
		assert_non_null(strstr(n[i].why, "an allocation function of its own (malloc)"));
	free(n);
	{
		struct ks_mcx_doc d1;

		xml_begin(xml, sizeof(xml), PID);
		xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x11000));
		xml_marker(xml, sizeof(xml), PID, 1, 1, 'b');
		xml_end(xml, sizeof(xml));
		doc_read(&d1, xml);
		n = near_of(h, &d1);
		assert_int_equal(n[0].status, MCX_NEAR_UNKNOWN);
		assert_non_null(strstr(n[0].why, "of its own (malloc)"));
		free(n);
		ks_mcx_free(&d1);
	}
	ks_mcx_heapmap_free(h);

	/* No log for this image. */
	n = near_of(NULL, &d);
	for (size_t i = 0; i < d.nerrors; i++) {
		assert_int_equal(n[i].status, MCX_NEAR_UNKNOWN);
		assert_non_null(n[i].why[0] ? n[i].why : NULL);
	}
	free(n);
	ks_mcx_free(&d);
	free(l.v);
}

/* A chunk's last slot holds NEXT, and the replay goes on past it; a
 * NEXT anywhere else is damage. */
static void test_chunks(void **state)
{
	struct log l = log_new(PID);
	char xml[XML];
	struct ks_mcx_doc d;
	struct ks_mcx_heapmap *h;
	struct ks_mcx_near *n;
	uint64_t seq = 1;

	(void)state;
	/* File records 1 .. CHUNK-2: allocations and frees far away. */
	while (l.n < KS_MCHEAP_CHUNK_RECS - 1) {
		if (seq % 2)
			alloc(&l, seq, 0x70000000 + seq * 64, 32);
		else
			release(&l, seq, 0x70000000 + (seq - 1) * 64);
		seq++;
	}
	log_add(&l, seq, KS_MCHEAP_NEXT, 0, 0, 0);
	alloc(&l, seq, 0x10000, 100);
	xml_begin(xml, sizeof(xml), PID);
	xml_marker(xml, sizeof(xml), PID, 1, 2, 'b');
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x10100));
	xml_end(xml, sizeof(xml));
	doc_read(&d, xml);
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[0].status, MCX_NEAR_FOUND);
	assert_int_equal(n[0].below.addr, 0x10000);
	assert_int_equal(n[0].below.alloc_no, seq / 2 + 1);
	free(n);
	ks_mcx_heapmap_free(h);
	/* The same NEXT one slot early. */
	l.v[KS_MCHEAP_CHUNK_RECS - 2] = l.v[KS_MCHEAP_CHUNK_RECS - 1];
	l.n = KS_MCHEAP_CHUNK_RECS - 1;
	alloc(&l, seq, 0x10000, 100);
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[0].status, MCX_NEAR_UNKNOWN);
	assert_non_null(strstr(n[0].why, "damaged"));
	free(n);
	ks_mcx_heapmap_free(h);
	ks_mcx_free(&d);
	free(l.v);
}

/* Which errors ask, and which client messages are markers. */
static void test_which_errors(void **state)
{
	struct log l = log_new(PID);
	char xml[XML];
	struct ks_mcx_doc d;
	struct ks_mcx_heapmap *h;
	struct ks_mcx_near *n;
	uint64_t a;

	(void)state;
	alloc(&l, 1, 0x10000, 100);
	xml_begin(xml, sizeof(xml), PID);
	xml_error(xml, sizeof(xml), "InvalidRead", 1,
		  "Address 0x10200 is not stack'd, malloc'd or (recently) free'd");
	xml_error(xml, sizeof(xml), "InvalidRead", 1,
		  "Address 0x10080 is 16 bytes after a block of size 100 alloc'd");
	xml_error(xml, sizeof(xml), "InvalidRead", 1,
		  "Address 0x8 is not stack'd, malloc'd or (recently) free'd");
	xml_error(xml, sizeof(xml), "InvalidJump", 1,
		  "Address 0x10200 is not stack'd, malloc'd or (recently) free'd");
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, "Address 0x1ffefff8 is on thread 1's stack");
	xml_error(xml, sizeof(xml), "InvalidFree", 1,
		  "Address 0x10200 is not stack'd, malloc'd or (recently) free'd");
	/* The program's own message, and a marker of another process. */
	{
		size_t k = strlen(xml);

		snprintf(xml + k, sizeof(xml) - k, "<clientmsg><tid>1</tid><text>kscope-heapmap "
			 "is a word\n</text></clientmsg>\n");
	}
	xml_marker(xml, sizeof(xml), PID + 1, 1, 1, 'b');
	xml_end(xml, sizeof(xml));
	doc_read(&d, xml);
	assert_int_equal(d.nhmarks, 0);
	assert_true(ks_mcx_error_unrelated(&d.errors[0], &a));
	assert_int_equal(a, 0x10200);
	assert_false(ks_mcx_error_unrelated(&d.errors[1], &a));
	assert_false(ks_mcx_error_unrelated(&d.errors[2], &a));
	assert_false(ks_mcx_error_unrelated(&d.errors[3], &a));
	assert_false(ks_mcx_error_unrelated(&d.errors[4], &a));
	assert_true(ks_mcx_error_unrelated(&d.errors[5], &a));
	h = log_open(&l);
	n = near_of(h, &d);
	assert_int_equal(n[0].status, MCX_NEAR_FOUND);
	for (int i = 1; i < 5; i++)
		assert_int_equal(n[i].status, MCX_NEAR_NOT_ASKED);
	assert_int_equal(n[5].status, MCX_NEAR_FOUND);
	free(n);
	ks_mcx_heapmap_free(h);
	ks_mcx_free(&d);
	free(l.v);
}

/* Not a log, or another version: refused with a message. */
static void test_bad_logs(void **state)
{
	struct log l = log_new(PID);
	struct ks_mcx_heapmap *h;
	struct ks_err err;

	(void)state;
	assert_int_equal(ks_mcx_heapmap_mem(&h, l.v, 10, &err), -EBADMSG);
	l.v[0].size = 99;
	l.v[0].check = ks_mcheap_check(&l.v[0]);
	assert_int_equal(ks_mcx_heapmap_mem(&h, l.v, sizeof(l.v[0]), &err), -EBADMSG);
	assert_non_null(strstr(err.msg, "version 99"));
	l.v[0].caller = 1;
	assert_int_equal(ks_mcx_heapmap_mem(&h, l.v, sizeof(l.v[0]), &err), -EBADMSG);
	assert_int_equal(ks_mcx_heapmap_open(&h, "/nonexistent/heapmap.1.log", &err), -ENOENT);
	free(l.v);
}

/* Through the reports: the sentence in report.txt and report.json's
 * heap_map, and the hint without the option. */
static void test_reports(void **state)
{
	struct log l = log_new(PID);
	char xml[XML], *dir, path[4096];
	struct ks_mcx_doc d;
	struct ks_mcx_report_opts o = { 0 };
	struct ks_mtr_summary sum;
	struct ks_rundir rd;
	struct ks_err err;
	char *txt, *js;

	(void)state;
	alloc(&l, 1, 0x4a47900, 50);
	xml_begin(xml, sizeof(xml), PID);
	xml_error(xml, sizeof(xml), "InvalidWrite", 1, unrelated(0x4a484ea));
	xml_marker(xml, sizeof(xml), PID, 1, 2, 'b');
	xml_end(xml, sizeof(xml));
	doc_read(&d, xml);
	d.heapmap = log_open(&l);
	o.mtr.max_stack = 12;
	o.mtr.command = "memcheck";
	o.heap_map = true;
	dir = ks_test_tmpdir();
	assert_int_equal(ks_rundir_create(dir, "memcheck", 1000, &rd, &err), 0);
	assert_int_equal(ks_mcx_report(&d, 1, &o, &rd, NULL, &sum, &err), 0);
	snprintf(path, sizeof(path), "%s/report.txt", rd.path);
	txt = read_text(path);
	assert_non_null(strstr(txt, " Heap map: address 0x4a484ea is 3,000 bytes after "
			       "the block of 50 bytes at 0x4a47900 (allocated by malloc, "
			       "allocation #1)\n"));
	snprintf(path, sizeof(path), "%s/report.json", rd.path);
	js = read_text(path);
	assert_non_null(strstr(js, "\"relation\": \"after\""));
	assert_non_null(strstr(js, "\"distance\": 3000"));
	free(txt);
	free(js);
	ks_rundir_close(&rd);

	/* Without the option: the hint. */
	o.heap_map = false;
	o.heap_map_hint = true;
	assert_int_equal(ks_rundir_create(dir, "memcheck", 2000, &rd, &err), 0);
	assert_int_equal(ks_mcx_report(&d, 1, &o, &rd, NULL, &sum, &err), 0);
	snprintf(path, sizeof(path), "%s/report.txt", rd.path);
	txt = read_text(path);
	assert_non_null(strstr(txt, " Hint: Memcheck relates 0x4a484ea to no block; run "
			       "kscope memcheck --heap-map"));
	assert_null(strstr(txt, "Heap map:"));
	free(txt);
	ks_rundir_close(&rd);
	ks_test_rmtree(dir);
	free(dir);
	ks_mcx_free(&d);
	free(l.v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_the_event),
		cmocka_unit_test(test_after_the_last_marker),
		cmocka_unit_test(test_during_a_call),
		cmocka_unit_test(test_distance),
		cmocka_unit_test(test_not_known),
		cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_which_errors),
		cmocka_unit_test(test_bad_logs),
		cmocka_unit_test(test_reports),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
