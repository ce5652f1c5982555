/*
 * Reports of kscope's memory tools: reads findings.jsonl (the raw record
 * stream the Valgrind tool writes, docs/formats.md) and writes what users
 * and other tools read: report.txt (also printed), report.json and
 * findings.sarif (SARIF 2.1.0).  kscope memcheck fills the same model
 * from Memcheck's XML (src/memtools/mcxml) and uses the same writers.
 *
 * It runs in the kscope process after the program ended, with libc and
 * jansson; the Valgrind tool itself stays small.
 */
#ifndef KS_MTREPORT_H
#define KS_MTREPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "err.h"
#include "outdir.h"

/* How a process ended as kscope saw it (the wait status of the program,
 * Valgrind's message about a fatal signal): it wins over the tool's
 * end record, which cannot see a signal's number. */
struct ks_mtr_exit {
	long long pid;
	bool signaled;
	int code;            /* exit status, or the signal number */
};

struct ks_mtr_opts {
	bool filter;         /* drop memcheck reports whose top three frames all lack a line */
	unsigned max_stack;  /* frames printed per stack in report.txt (>= 1) */
	const char *command; /* the kscope command line, for the reports' headers */
	const char *const *children; /* findings files of the program's child processes */
	size_t nchildren;
	const struct ks_mtr_exit *exits; /* by pid; may be NULL */
	size_t nexits;
	/* Name the members and elements of global variables from the
	 * DWARF of the modules the findings name (read from disk):
	 * "counters[2].v" rather than "counters+16". */
	bool field_names;
};

struct ks_mtr_summary {
	char analysis[16];          /* "memcheck", "contention", "falseshare" */
	unsigned long errors;       /* memcheck: error contexts reported (after the filter), leaks included */
	unsigned long filtered;     /* memcheck: contexts dropped by the filter */
	unsigned long false_lines;  /* falseshare: lines with verdict false or mixed */
	bool truncated;             /* findings.jsonl had no end record */
	unsigned long processes;    /* process images reported (1 without fork or exec) */
	unsigned long truncated_procs; /* of them, those without an end record */
};

/* Reads findings_path (and o->children's files), writes the reports into rd (through ks_outfile_*,
 * so nothing half-written gets a final name) and the text report to
 * text (may be NULL).  Returns 0 or a negative errno with err set; a
 * damaged findings file is -EBADMSG with the line number in the
 * message. */
int ks_mtr_write(const char *findings_path, struct ks_rundir *rd,
		 const struct ks_mtr_opts *o, FILE *text,
		 struct ks_mtr_summary *sum, struct ks_err *err);

#endif
