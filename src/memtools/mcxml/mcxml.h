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
 * of src/memtools/report.
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
	bool complete;                /* </valgrindoutput> was read */
	bool execed;                  /* not read from the file: set by kscope
				       * for an image that exec'd another (its
				       * file was set aside before the exec) */
	bool trailing;                /* elements followed </valgrindoutput> */
	bool damaged;                 /* reading stopped at something not well formed */
	char damage[256];             /* expat's message and where, when damaged */
	/* Private to the reader. */
	size_t cap_errors, cap_supps;
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
