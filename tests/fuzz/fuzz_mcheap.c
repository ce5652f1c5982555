/*
 * libFuzzer target for kscope memcheck --heap-map's reader
 * (src/memtools/mcxml/mcx_heapmap.c and the markers of mcx_read.c): an
 * input that starts with '<' is read as Memcheck's XML, markers and all,
 * against a small log that is right; any other input is the heap map log
 * (copied to an aligned buffer), against a document with errors after
 * markers of every phase and after the last one.  Either way the nearest
 * blocks are asked for and the reports' model is built (ks_mcx_report
 * without a run directory).  Nothing may crash, read out of bounds or
 * leak; every error asked has an answer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcheap.h"
#include "mcxml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PID 77

static const char fixed_xml[] =
	"<?xml version=\"1.0\"?>\n<valgrindoutput><protocolversion>4</protocolversion>"
	"<protocoltool>memcheck</protocoltool><pid>77</pid><ppid>1</ppid>"
	"<error><unique>0x1</unique><tid>1</tid><kind>InvalidWrite</kind>"
	"<what>Invalid write of size 1</what><stack><frame><ip>0x1</ip><fn>main</fn>"
	"<file>p.c</file><line>3</line></frame></stack>"
	"<auxwhat>Address 0x10200 is 2 bytes inside an unallocated block of size 9 in arena "
	"\"client\"</auxwhat></error>"
	"<clientmsg><tid>1</tid><text>kscope-heapmap 77 1 u</text></clientmsg>"
	"<error><unique>0x2</unique><tid>2</tid><kind>InvalidRead</kind>"
	"<what>Invalid read of size 1</what><stack><frame><ip>0x2</ip><fn>f</fn>"
	"<file>p.c</file><line>4</line></frame></stack>"
	"<auxwhat>Address 0x20000 is not stack'd, malloc'd or (recently) free'd</auxwhat></error>"
	"<clientmsg><tid>1</tid><text>kscope-heapmap 77 2 b</text></clientmsg>"
	"<error><unique>0x3</unique><tid>2</tid><kind>InvalidRead</kind>"
	"<what>Invalid read of size 1</what><stack><frame><ip>0x3</ip><fn>g</fn>"
	"<file>p.c</file><line>5</line></frame></stack>"
	"<auxwhat>Address 0x30000 is not stack'd, malloc'd or (recently) free'd</auxwhat></error>"
	"<clientmsg><tid>1</tid><text>kscope-heapmap 77 3 d</text></clientmsg>"
	"<error><unique>0x4</unique><tid>1</tid><kind>InvalidFree</kind>"
	"<what>Invalid free()</what><stack><frame><ip>0x4</ip><fn>h</fn>"
	"<file>p.c</file><line>6</line></frame></stack>"
	"<auxwhat>Address 0x40000 is not stack'd, malloc'd or (recently) free'd</auxwhat></error>"
	"<status><state>FINISHED</state></status></valgrindoutput>\n";

/* A log of 4 events: blocks at 0x10000 and 0x2f000, a realloc, a free. */
static size_t fixed_log(struct ks_mcheap_rec *v)
{
	static const struct ks_mcheap_rec r[] = {
		{ .type = KS_MCHEAP_HEADER, .addr = PID, .size = KS_MCHEAP_VERSION,
		  .caller = KS_MCHEAP_MAGIC64 },
		{ .seq = 1, .type = KS_MCHEAP_ALLOC, .addr = KS_MCHEAP_HIDE(0x10000), .size = 100 },
		{ .seq = 2, .type = KS_MCHEAP_ALLOC, .addr = KS_MCHEAP_HIDE(0x2f000), .size = 64 },
		{ .seq = 3, .type = KS_MCHEAP_FREE, .addr = KS_MCHEAP_HIDE(0x10000),
		  .fn = KS_MCHEAP_REALLOC },
		{ .seq = 3, .type = KS_MCHEAP_ALLOC, .addr = KS_MCHEAP_HIDE(0x50000), .size = 200,
		  .fn = KS_MCHEAP_REALLOC },
		{ .seq = 4, .type = KS_MCHEAP_FREE, .addr = KS_MCHEAP_HIDE(0x2f000) },
	};
	size_t n = sizeof(r) / sizeof(r[0]);

	for (size_t i = 0; i < n; i++) {
		v[i] = r[i];
		v[i].check = ks_mcheap_check(&v[i]);
	}
	return n * sizeof(*v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_mcx_doc d;
	struct ks_mcx_heapmap *h = NULL;
	struct ks_mcx_report_opts o;
	struct ks_mcx_near *near;
	struct ks_mtr_summary sum;
	struct ks_err err;
	struct ks_mcheap_rec small[8], *buf = NULL;
	int rc;

	if (size && data[0] == '<') {
		if (ks_mcx_read_mem(&d, (const char *)data, size, &err))
			return 0;
		rc = ks_mcx_heapmap_mem(&h, small, fixed_log(small), &err);
	} else {
		if (ks_mcx_read_mem(&d, fixed_xml, sizeof(fixed_xml) - 1, &err))
			abort(); /* the fixed document is Memcheck's XML */
		buf = malloc(size ? size : 1);
		if (!buf) {
			ks_mcx_free(&d);
			return 0;
		}
		memcpy(buf, data, size);
		rc = ks_mcx_heapmap_mem(&h, buf, size, &err);
	}
	if (!rc) {
		near = calloc(d.nerrors + 1, sizeof(*near));
		if (near && !ks_mcx_heapmap_near(h, &d, near, &err)) {
			for (size_t i = 0; i < d.nerrors; i++) {
				uint64_t a;

				if (ks_mcx_error_unrelated(&d.errors[i], &a) &&
				    near[i].status == MCX_NEAR_NOT_ASKED)
					abort(); /* asked and not answered */
			}
		}
		free(near);
		d.heapmap = h; /* freed with the document */
	}
	memset(&o, 0, sizeof(o));
	o.mtr.filter = true;
	o.mtr.max_stack = 12;
	o.heap_map = true;
	o.max_frames = 12;
	(void)ks_mcx_report(&d, 1, &o, NULL, NULL, &sum, &err);
	ks_mcx_free(&d);
	free(buf);
	return 0;
}
