/*
 * Reading Memcheck's XML output (Valgrind's XML output protocol 4) for
 * kscope memcheck, which runs Valgrind's Memcheck and writes kscope's
 * reports from what it found.
 *
 * The file is read as a stream with expat, element by element, and an
 * error is kept once its closing tag has been read.  So a file that
 * Memcheck left unfinished (the process was killed, Valgrind aborted)
 * still gives every complete error before the cut, and elements Memcheck
 * appended after </valgrindoutput> (it does when it aborts late) are read
 * too.  What is not well formed ends the reading there; the document says
 * so (damaged, with expat's message) and keeps what came before.
 *
 * ks_mcx_report (mcx_report.c) turns a document into kscope's reports:
 * report.txt, report.json and findings.sarif through the report writers
 * of src/memtools/report.  Under kscope memcheck --heap-map the document
 * also keeps the markers libkscope-mcheap.so wrote into the XML, and
 * mcx_heapmap.c answers, from the image's heap map log, which live block
 * lay nearest to each address Memcheck related to no block.
 */
#ifndef KS_MCXML_H
#define KS_MCXML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "mtreport.h"
#include "outdir.h"

struct ks_mcx_frame {
	uint64_t ip;
	char *obj, *fn, *dir, *file;  /* NULL when absent */
	unsigned long line;           /* 0 when absent */
};

struct ks_mcx_stack {
	size_t n;
	struct ks_mcx_frame *frames;  /* innermost first */
};

/* An auxiliary description of an error (<auxwhat>, <xauxwhat>, the
 * <what> of an <origin>) and the stack that follows it, if any. */
struct ks_mcx_aux {
	char *what;                   /* NULL: a stack without a description */
	bool origin;                  /* from an <origin> element */
	struct ks_mcx_stack stack;    /* n == 0: none */
};

struct ks_mcx_error {
	uint64_t unique;
	long long tid;
	char *kind;                   /* Memcheck's <kind>, e.g. "InvalidRead" */
	char *what;                   /* <what> or <xwhat><text> */
	bool has_leak;                /* leakedbytes/leakedblocks were given */
	uint64_t leaked_bytes, leaked_blocks;
	struct ks_mcx_stack stack;
	struct ks_mcx_aux *aux;
	size_t naux;
	char *suppression;            /* <suppression><rawtext>, or NULL */
	uint64_t count;               /* from <errorcounts>; 1 when not listed */
};

struct ks_mcx_supp {
	char *name;
	uint64_t count;
};

/* A marker libkscope-mcheap.so wrote into the XML under kscope memcheck
 * --heap-map (a <clientmsg> "kscope-heapmap PID SEQ PHASE" of the
 * document's pid; src/memtools/mcexec/mcheap.h says what they mean).
 * Other client messages are not read. */
struct ks_mcx_hmark {
	size_t nerrors;               /* errors of the document before it */
	uint64_t seq;
	char phase;                   /* 'b', 'd' or 'u' */
	long long tid;                /* the thread that wrote it */
};

struct ks_mcx_doc {
	int protocol;                 /* <protocolversion>; 0 when absent */
	char *tool;                   /* <protocoltool> */
	long long pid, ppid;          /* 0 when absent */
	char *exe;                    /* the program: <argv><exe> */
	char **argv;                  /* its <arg>s */
	size_t argc;
	bool running, finished;       /* the RUNNING and FINISHED statuses were read */
	bool fatal;                   /* a <fatal_signal> was read */
	int signo;
	char *signame;
	long long fatal_tid;
	struct ks_mcx_stack fatal_stack;
	struct ks_mcx_error *errors;  /* in the file's order */
	size_t nerrors;
	struct ks_mcx_supp *supps;    /* <suppcounts>, the last one read */
	size_t nsupps;
	struct ks_mcx_hmark *hmarks;  /* heap map markers, in the file's order */
	size_t nhmarks;
	bool complete;                /* </valgrindoutput> was read */
	bool execed;                  /* not read from the file: set by kscope
				       * for an image that exec'd another (its
				       * file was set aside before the exec) */
	bool trailing;                /* elements followed </valgrindoutput> */
	/* Not read from the file either: the heap map log of this image
	 * under kscope memcheck --heap-map (NULL: none), set by kscope and
	 * freed with the document. */
	struct ks_mcx_heapmap *heapmap;
	bool damaged;                 /* reading stopped at something not well formed */
	char damage[256];             /* expat's message and where, when damaged */
	/* Private to the reader. */
	size_t cap_errors, cap_supps, cap_hmarks;
};

/* Reads Memcheck's XML from path into d (zeroed first).  A truncated or
 * damaged file is not an error: d says so and holds what was complete.
 * Returns 0, or a negative errno with err set when the file cannot be
 * read, is not Memcheck's XML at all (no <valgrindoutput> of protocol 4
 * and tool memcheck), or memory runs out.  Free d with ks_mcx_free. */
int ks_mcx_read_file(struct ks_mcx_doc *d, const char *path, struct ks_err *err);
/* The same for a buffer (the fuzz target). */
int ks_mcx_read_mem(struct ks_mcx_doc *d, const char *data, size_t size,
		    struct ks_err *err);
void ks_mcx_free(struct ks_mcx_doc *d);
/* Frees a stack's frames and empties it (for readers of other formats
 * that fill the same model: src/memtools/asan). */
void ks_mcx_stack_free(struct ks_mcx_stack *s);

/* ------------------------------------------------------------------ */
/* kscope memcheck --heap-map (mcx_heapmap.c)                          */
/* ------------------------------------------------------------------ */

/* How far from an address a live block is still named: 1 MiB.  Farther
 * than that the block is no more likely the one the access meant than
 * any other. */
#define KS_MCX_NEAR_MAX ((uint64_t)1 << 20)

/* One process image's heap map log (heapmap.<pid>[.<k>].log). */
struct ks_mcx_heapmap;

/* Opens the log at path (mapped, read as needed) or, for the fuzz
 * target, in a buffer aligned for 8-byte words.  0, or a negative errno
 * with err set when it is not a heap map log of this version. */
int ks_mcx_heapmap_open(struct ks_mcx_heapmap **out, const char *path, struct ks_err *err);
int ks_mcx_heapmap_mem(struct ks_mcx_heapmap **out, const void *data, size_t size,
		       struct ks_err *err);
void ks_mcx_heapmap_free(struct ks_mcx_heapmap *h);
/* The pid its header names. */
long long ks_mcx_heapmap_pid(const struct ks_mcx_heapmap *h);
/* "malloc", "operator new[]"... of an enum ks_mcheap_fn. */
const char *ks_mcx_heapmap_fn_name(int fn);

/* Whether Memcheck related error e's address to no block ("not stack'd,
 * malloc'd or (recently) free'd", or a place in its allocator's arena):
 * an invalid read, write or free, a system call's or client request's
 * unaddressable memory.  The address goes to *addr.  Not for an invalid
 * jump, nor an address in the first 64 KiB (a null pointer). */
bool ks_mcx_error_unrelated(const struct ks_mcx_error *e, uint64_t *addr);

struct ks_mcx_block {
	bool present;
	uint64_t addr, size;
	uint64_t alloc_no;            /* the image's n-th allocation, from 1 */
	uint64_t caller;              /* the return address into its caller */
	int fn;                       /* enum ks_mcheap_fn: the function that allocated it */
};

enum ks_mcx_near_status {
	MCX_NEAR_NOT_ASKED,           /* Memcheck related the error to a block, or no address */
	MCX_NEAR_FOUND,               /* below and/or above */
	MCX_NEAR_NOTHING,             /* no live block within KS_MCX_NEAR_MAX */
	MCX_NEAR_UNKNOWN,             /* the map cannot say: why */
};

/* The live blocks nearest to an error's address when it happened: the
 * one at or below it (containing it, or the address is after it) and
 * the one above it, each within KS_MCX_NEAR_MAX. */
struct ks_mcx_near {
	enum ks_mcx_near_status status;
	struct ks_mcx_block below, above;
	char why[192];
};

/* near[i] for each error d->errors[i] (d->nerrors entries, the caller's):
 * for the errors ks_mcx_error_unrelated picks, the blocks nearest to
 * their addresses at the moment they happened, from d's markers and the
 * log h (NULL: the image has none, and each says so).  0, or -ENOMEM. */
int ks_mcx_heapmap_near(const struct ks_mcx_heapmap *h, const struct ks_mcx_doc *d,
			struct ks_mcx_near *near, struct ks_err *err);

/* kscope's names of Memcheck's findings (docs/memtools.md has the table):
 * "invalid-read", "use-after-free", "leak-indirect", ...; NULL for a kind
 * kscope does not know (reported under Memcheck's own name). */
const char *ks_mcx_kind_name(const struct ks_mcx_error *e);

struct ks_mcx_report_opts {
	/* filter, max_stack, command; exits: how processes ended as kscope
	 * saw them (the program's wait status); xml and children unused. */
	struct ks_mtr_opts mtr;
	unsigned leak_error_kinds;    /* bits 1 << MCX_LEAK_*: leaks that count as errors */
	bool has_redzone, has_freelist; /* the settings, for the reports */
	uint64_t redzone, freelist_vol;
	/* Why the results are incomplete (Memcheck aborted...), said by
	 * every report, which then counts as truncated; NULL if they are not. */
	const char *incomplete;
	/* --heap-map: errors Memcheck related to no block name the nearest
	 * live block from each document's heap map.  Without it, when
	 * heap_map_hint, they suggest the option. */
	bool heap_map, heap_map_hint;
	/* Frames kept per stack after kscope's own are dropped (0: all):
	 * under --heap-map Memcheck records one more than --num-callers,
	 * for the allocation wrapper's frame. */
	unsigned max_frames;
};

enum { MCX_LEAK_DEFINITE, MCX_LEAK_INDIRECT, MCX_LEAK_POSSIBLE, MCX_LEAK_REACHABLE };

/* Writes report.txt (also to text, may be NULL), report.json and
 * findings.sarif into rd from docs, one per process, the program's first.
 * sum->errors counts the error contexts reported (after the filter) and
 * the leaks of the kinds in leak_error_kinds.  rd NULL: only sum is
 * filled.  0 or a negative errno with err set. */
int ks_mcx_report(const struct ks_mcx_doc *docs, size_t ndocs,
		  const struct ks_mcx_report_opts *o, struct ks_rundir *rd, FILE *text,
		  struct ks_mtr_summary *sum, struct ks_err *err);

#endif
